/* ONNX Runtime's contrib ops on oneDNN (the rest of them, FusedConv and
 * FusedGemm, go through the Conv and Gemm handlers):
 *   FusedMatMul   the MatMul path: alpha as the output scale, trans and
 *                 transBatch as strided descriptors of the operands as
 *                 stored (transposed into dense copies where oneDNN has no
 *                 matmul for those strides)
 *   SkipLayerNormalization  input + skip + bias summed by a loop of this
 *                 backend's own (into the input_skip_bias_sum output when
 *                 requested, else scratch memory), then oneDNN's layer
 *                 normalization; with the mean or inv_std_var outputs, and
 *                 the simplified (RMS) forms, which oneDNN 2.6 lacks, a
 *                 vectorized loop of its own (statistics in double, as
 *                 cpu_ref)
 *   BiasGelu, FastGelu with a bias   a binary add of the bias with the
 *                 GELU as an eltwise post-op
 *   BiasAdd       a binary add of the bias with a sum post-op adding skip */
#include "cpu_dnnl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const xf_shape *vshape(const xf_graph *g, int v) { return &g->values[v].shape; }

int xf_dn_ms_act_posts(const xf_node *n, xf_dn_post *p)
{
    const float *a = n->attrs.ms_act_params;
    switch (n->attrs.ms_act) {
    case XF_MS_ACT_RELU: p[0] = (xf_dn_post){.alg = dnnl_eltwise_relu}; return 1;
    case XF_MS_ACT_TANH: p[0] = (xf_dn_post){.alg = dnnl_eltwise_tanh}; return 1;
    case XF_MS_ACT_SIGMOID: p[0] = (xf_dn_post){.alg = dnnl_eltwise_logistic}; return 1;
    case XF_MS_ACT_LEAKY_RELU: p[0] = (xf_dn_post){.alg = dnnl_eltwise_relu, .alpha = a[0]}; return 1;
    case XF_MS_ACT_CLIP: p[0] = (xf_dn_post){.alg = dnnl_eltwise_clip, .alpha = a[0], .beta = a[1]}; return 1;
    case XF_MS_ACT_HARD_SIGMOID: /* clamp(alpha x + beta, 0, 1) */
        p[0] = (xf_dn_post){.alg = dnnl_eltwise_linear, .alpha = a[0], .beta = a[1]};
        p[1] = (xf_dn_post){.alg = dnnl_eltwise_clip, .alpha = 0.0f, .beta = 1.0f};
        return 2;
    default: return 0;
    }
}

/* The views of n's operands as the graph knows them (no data): absent
 * ones undefined. */
static void graph_views(const xf_graph *g, const xf_node *n, xf_tensor_view *in, xf_tensor_view *out)
{
    for (int k = 0; k < n->n_inputs + n->n_outputs; k++) {
        int v = k < n->n_inputs ? n->inputs[k] : n->outputs[k - n->n_inputs];
        xf_tensor_view *t = k < n->n_inputs ? &in[k] : &out[k - n->n_inputs];
        *t = (xf_tensor_view){.dtype = v >= 0 ? g->values[v].dtype : XF_DT_UNDEFINED};
        if (v >= 0)
            t->shape = g->values[v].shape;
    }
}

/* ---------------------------------------------------------------- FusedMatMul */

/* Operand k of FusedMatMul as stored, described with the output's rank r
 * (leading dims of 1); *view gets its matrices' dims. */
static void fused_operand_md(const xf_node *n, const xf_shape *s, int k, int r, xf_shape *view,
                             dnnl_memory_desc_t *md)
{
    const xf_attrs *at = &n->attrs;
    int64_t strides[XF_MAX_DIMS];
    xf_rt_fused_matmul_view(s, k == 1, k ? at->trans_b : at->trans_a, k ? at->trans_batch_b : at->trans_batch_a,
                            view, strides);
    dnnl_dims_t dims, str;
    int lead = r - view->ndim;
    for (int d = 0; d < r; d++) {
        dims[d] = d < lead ? 1 : view->dims[d - lead];
        str[d] = d < lead ? xf_shape_numel(s) : strides[d - lead];
    }
    dnnl_memory_desc_init_by_strides(md, r, dims, dnnl_f32, str);
}

static bool fused_matmul_handles(const xf_graph *g, const xf_node *n)
{
    if (!xf_dn_all_f32(g, n))
        return false;
    const xf_shape *a = vshape(g, n->inputs[0]), *b = vshape(g, n->inputs[1]), *y = vshape(g, n->outputs[0]);
    int r = a->ndim > b->ndim ? a->ndim : b->ndim;
    if (a->ndim < 2 || b->ndim < 2 || y->ndim != r || r > DNNL_MAX_NDIMS)
        return false;
    xf_shape av, bv;
    dnnl_memory_desc_t md;
    fused_operand_md(n, a, 0, r, &av, &md);
    fused_operand_md(n, b, 1, r, &bv, &md);
    return av.dims[av.ndim - 1] == bv.dims[bv.ndim - 2] && xf_dn_batch_ok(&av, y) && xf_dn_batch_ok(&bv, y);
}

static xf_status fused_matmul_prepare(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                                      const xf_tensor_view *out, xf_dn_node *st, xf_error *err)
{
    const xf_attrs *at = &n->attrs;
    int r = out[0].shape.ndim;
    xf_shape view;
    dnnl_memory_desc_t a, b;
    fused_operand_md(n, &in[0].shape, 0, r, &view, &a);
    fused_operand_md(n, &in[1].shape, 1, r, &view, &b);
    bool gemv_ok = !at->trans_a && !at->trans_batch_a && !at->trans_batch_b;
    return xf_dn_matmul_build(c, g, n, in, out, st, &a, &b, at->alpha, gemv_ok, at->trans_b, err);
}

/* Any elementwise op, and the sum of a residual connection (after alpha). */
static bool fused_matmul_takes_post(const xf_node *n, int n_posts, const xf_dn_post *post) { return true; }

const xf_dn_handler xf_dn_fused_matmul_handler = {fused_matmul_handles, NULL, fused_matmul_prepare,
                                                  fused_matmul_takes_post};

/* ---------------------------------------------------------------- the normalizations */

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define NORM_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define NORM_CLONES
#endif

enum { NORM_LANES = 8 };

/* v = x + skip + bias over n values (bias may be NULL). */
NORM_CLONES static void add_row(float *v, const float *x, const float *skip, const float *bias, int64_t n)
{
    if (bias)
        for (int64_t i = 0; i < n; i++)
            v[i] = x[i] + skip[i] + bias[i];
    else
        for (int64_t i = 0; i < n; i++)
            v[i] = x[i] + skip[i];
}

/* Row r of x + skip + bias into v (hidden values), for the skip forms. */
static void add_skip_row(const xf_rt_skip_norm *a, int64_t r, float *v)
{
    int64_t base = r * a->hidden;
    add_row(v, (const float *)a->x->data + base, (const float *)a->skip->data + base % a->skip_size,
            a->bias ? a->bias->data : NULL, a->hidden);
}

/* The sum and the sum of squares of n values, in double, in NORM_LANES
 * lanes. */
NORM_CLONES static void row_moments(const float *restrict v, int64_t n, double *sum, double *square)
{
    double s[NORM_LANES] = {0}, q[NORM_LANES] = {0};
    int64_t i = 0;
    for (; i + NORM_LANES <= n; i += NORM_LANES)
        for (int l = 0; l < NORM_LANES; l++) {
            double d = (double)v[i + l];
            s[l] += d;
            q[l] += d * d;
        }
    double ts = 0.0, tq = 0.0;
    for (int l = 0; l < NORM_LANES; l++) {
        ts += s[l];
        tq += q[l];
    }
    for (; i < n; i++) {
        ts += v[i];
        tq += (double)v[i] * v[i];
    }
    *sum = ts;
    *square = tq;
}

/* y = (v - mean) * inv * gamma + beta over n values (beta may be NULL; y
 * may be v). */
NORM_CLONES static void scale_row(float *y, const float *v, float mean, float inv, const float *restrict gamma,
                                  const float *restrict beta, int64_t n)
{
    if (beta)
        for (int64_t i = 0; i < n; i++)
            y[i] = (v[i] - mean) * inv * gamma[i] + beta[i];
    else
        for (int64_t i = 0; i < n; i++)
            y[i] = (v[i] - mean) * inv * gamma[i];
}

/* Every form with every optional output: each row's sum goes into the
 * input_skip_bias_sum output when requested, else into the output, which
 * is then normalized in place; without skip or bias, the rows are read
 * where they are.  Rows go over the threads. */
static xf_status skip_norm_kernel(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                                  xf_error *err)
{
    xf_rt_skip_norm a;
    xf_status s = xf_rt_skip_norm_init(n, in, out, &a, err);
    if (s != XF_OK)
        return s;
    int64_t h = a.hidden;
    XF_OMP_FOR(a.rows > 1 && a.rows * h >= XF_DN_CHUNK_MIN)
    for (int64_t r = 0; r < a.rows; r++) {
        float *y = (float *)out[0].data + r * h, *v = a.sum ? (float *)a.sum->data + r * h : y;
        if (a.skip)
            add_skip_row(&a, r, v);
        else
            v = (float *)a.x->data + r * h; /* read in place */
        double sum, square;
        row_moments(v, h, &sum, &square);
        double mean = sum / (double)h;
        double inv = 1.0 / sqrt(square / (double)h - (a.simplified ? 0.0 : mean * mean) + (double)n->attrs.epsilon);
        scale_row(y, v, a.simplified ? 0.0f : (float)mean, (float)inv, a.gamma->data, a.beta ? a.beta->data : NULL,
                  h);
        if (a.mean)
            ((float *)a.mean->data)[r] = (float)mean;
        if (a.inv)
            ((float *)a.inv->data)[r] = (float)inv;
    }
    return XF_OK;
}

/* The sum SkipLayerNormalization's layer normalization reads: into the
 * input_skip_bias_sum output when requested, else the scratch memory. */
static void skip_sum_pre(const xf_node *n, const xf_dn_node *st, const xf_tensor_view *in, const xf_tensor_view *out)
{
    xf_rt_skip_norm a;
    if (xf_rt_skip_norm_init(n, in, out, &a, NULL) != XF_OK)
        return; /* handles() checked the shapes */
    float *dst = a.sum ? a.sum->data : st->scratch;
    for (int64_t r = 0; r < a.rows; r++)
        add_skip_row(&a, r, dst + r * a.hidden);
}

static bool skip_norm_handles(const xf_graph *g, const xf_node *n)
{
    /* at most 5 inputs and 4 outputs */
    if (!xf_dn_all_f32(g, n) || n->n_inputs > 5 || n->n_outputs > 4)
        return false;
    xf_tensor_view in[5], out[4];
    graph_views(g, n, in, out);
    xf_rt_skip_norm a;
    return xf_rt_skip_norm_init(n, in, out, &a, NULL) == XF_OK && a.gamma_size == a.hidden;
}

static xf_status skip_norm_prepare(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                                   const xf_tensor_view *out, xf_dn_node *st, xf_error *err)
{
    xf_rt_skip_norm a;
    xf_status s = xf_rt_skip_norm_init(n, in, out, &a, err);
    if (s != XF_OK)
        return s;
    if (a.simplified || a.mean || a.inv || a.rows < 1 || a.hidden < 1) {
        st->kernel = skip_norm_kernel;
        return XF_OK;
    }
    xf_shape s2 = {.ndim = 2, .dims = {a.rows, a.hidden}}, chan_shape = {.ndim = 1, .dims = {a.hidden}};
    dnnl_memory_desc_t data, chan;
    xf_dn_md_plain(&s2, dnnl_f32, &data);
    xf_dn_md_plain(&chan_shape, dnnl_f32, &chan);
    dnnl_layer_normalization_desc_t d;
    XF_DN_TRY(err, n, dnnl_layer_normalization_forward_desc_init(&d, dnnl_forward_inference, &data, NULL,
                                                                 n->attrs.epsilon,
                                                                 dnnl_use_scale | (a.beta ? dnnl_use_shift : 0u)));
    dnnl_primitive_desc_t pd;
    XF_DN_TRY(err, n, dnnl_primitive_desc_create(&pd, &d, NULL, c->engine, NULL));
    st->pre = skip_sum_pre;
    if (a.sum) {
        s = xf_dn_bind(c, n, st, DNNL_ARG_SRC, -4, &data, &data, err);
    } else {
        free(st->scratch);
        st->scratch = malloc(sizeof(float) * (size_t)(a.rows * a.hidden));
        s = st->scratch ? xf_dn_bind_scratch(c, n, st, DNNL_ARG_SRC, &data, st->scratch, err)
                        : xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    }
    if (s == XF_OK)
        s = xf_dn_bind(c, n, st, DNNL_ARG_SCALE, 2, &chan, &chan, err);
    if (s == XF_OK && a.beta)
        s = xf_dn_bind(c, n, st, DNNL_ARG_SHIFT, 3, &chan, &chan, err);
    if (s == XF_OK)
        s = xf_dn_bind(c, n, st, DNNL_ARG_DST, -1, &data, &data, err);
    return xf_dn_finish_or_free(n, st, pd, s, err);
}

const xf_dn_handler xf_dn_skip_norm_handler = {skip_norm_handles, NULL, skip_norm_prepare, NULL};

/* ---------------------------------------------------------------- BiasGelu, FastGelu, BiasAdd */

static bool bias_act_handles(const xf_graph *g, const xf_node *n)
{
    if (!xf_dn_all_f32(g, n) || xf_dn_input(n, 1) < 0)
        return false;
    const xf_shape *x = vshape(g, n->inputs[0]);
    if (x->ndim < 1 || x->ndim > DNNL_MAX_NDIMS || !xf_shape_equal(x, vshape(g, n->outputs[0])) ||
        xf_shape_numel(vshape(g, n->inputs[1])) != x->dims[x->ndim - 1])
        return false;
    return n->op != XF_OP_MS_BIAS_ADD ||
           (xf_dn_input(n, 2) >= 0 && xf_shape_numel(vshape(g, n->inputs[2])) == xf_shape_numel(x));
}

static xf_status bias_act_prepare(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                                  const xf_tensor_view *out, xf_dn_node *st, xf_error *err)
{
    const xf_shape *x = &in[0].shape;
    xf_shape bs = {.ndim = x->ndim};
    for (int d = 0; d < x->ndim; d++)
        bs.dims[d] = d == x->ndim - 1 ? x->dims[d] : 1;
    dnnl_memory_desc_t data, bias;
    xf_dn_md_plain(x, dnnl_f32, &data);
    xf_dn_md_plain(&bs, dnnl_f32, &bias);
    xf_dn_post post = {.alg = n->op == XF_OP_MS_BIAS_GELU   ? dnnl_eltwise_gelu_erf
                              : n->op == XF_OP_MS_FAST_GELU ? dnnl_eltwise_gelu_tanh
                                                            : dnnl_alg_kind_undef};
    if (n->op == XF_OP_MS_BIAS_ADD) {
        /* skip is copied into the destination, which the sum adds */
        post = (xf_dn_post){.sum = true, .alg = dnnl_alg_kind_undef};
        st->sum_input = 2;
        st->sum_bytes = xf_rt_bytes(&in[2]);
    }
    dnnl_binary_desc_t d;
    XF_DN_TRY(err, n, dnnl_binary_desc_init(&d, dnnl_binary_add, &data, &bias, &data));
    dnnl_primitive_attr_t attr;
    xf_status s = xf_dn_post_attr(n, &post, 1, &attr, err);
    if (s != XF_OK)
        return s;
    dnnl_primitive_desc_t pd;
    s = xf_dn_pd_create(c, n, &d, attr, &pd, err);
    if (s != XF_OK)
        return s;
    s = xf_dn_bind(c, n, st, DNNL_ARG_SRC_0, 0, &data, &data, err);
    if (s == XF_OK)
        s = xf_dn_bind(c, n, st, DNNL_ARG_SRC_1, 1, &bias, &bias, err);
    if (s == XF_OK)
        s = xf_dn_bind(c, n, st, DNNL_ARG_DST, -1, &data, &data, err);
    return xf_dn_finish_or_free(n, st, pd, s, err);
}

const xf_dn_handler xf_dn_bias_act_handler = {bias_act_handles, NULL, bias_act_prepare, NULL};
