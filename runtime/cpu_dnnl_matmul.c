/* Matrix products on oneDNN's matmul: MatMul with batch broadcasting (A's
 * rows as one product where B is a matrix), Gemm with transposes, alpha
 * and a bias-like C, and Einsum equations that are batched matrix
 * products; one-row products of large constant weights as dnnl_sgemm. */
#include "cpu_dnnl.h"
#include "xf_op_plans.h"

#include <stdlib.h>

static const xf_shape *vshape(const xf_graph *g, int v) { return &g->values[v].shape; }

/* ---------------------------------------------------------------- MatMul */

bool xf_dn_batch_ok(const xf_shape *s, const xf_shape *y)
{
    int lead = y->ndim - s->ndim;
    bool equal = true, ones = true;
    for (int d = 0; d < y->ndim - 2; d++) {
        int64_t v = d < lead ? 1 : s->dims[d - lead];
        equal = equal && v == y->dims[d];
        ones = ones && v == 1;
    }
    return equal || ones;
}

static bool matmul_handles(const xf_graph *g, const xf_node *n)
{
    if (!xf_dn_all_f32(g, n))
        return false;
    const xf_shape *a = vshape(g, n->inputs[0]), *b = vshape(g, n->inputs[1]), *y = vshape(g, n->outputs[0]);
    return a->ndim >= 2 && b->ndim >= 2 && y->ndim <= DNNL_MAX_NDIMS && xf_dn_batch_ok(a, y) && xf_dn_batch_ok(b, y);
}

/* Sets st up for a one-row product of A (k elements) and the 2-D B when
 * nothing but a bias of n values, or a sum, is folded into it, and B is
 * computed or large.  Weights that stay in cache between runs (an RNN's
 * 1 MB matrices) run faster from the blocked copy the matmul primitive
 * reorders them into once (NasRNN 2.0 ms against 4.4 ms as sgemm), weights
 * streamed from memory faster as stored (a GPT-2 decoder step 58 ms
 * against 31 ms). */
static bool gemv_setup(xf_dn_node *st, const xf_tensor_view *a, const xf_tensor_view *b, bool b_constant,
                       bool trans_b, float alpha, const void *bias, int64_t bias_numel)
{
    st->gemv.on = false;
    if (b->shape.ndim != 2)
        return false;
    int64_t k = trans_b ? b->shape.dims[1] : b->shape.dims[0], n = trans_b ? b->shape.dims[0] : b->shape.dims[1];
    bool sum = st->n_posts == 1 && st->posts[0].sum;
    if (xf_shape_numel(&a->shape) != k || k < 1 || n < 1 || (st->n_posts && !sum) || (bias && sum) ||
        (bias && bias_numel != n) || (b_constant && k * n * (int64_t)sizeof(float) < ((int64_t)2 << 20)))
        return false;
    st->gemv.on = true;
    st->gemv.trans_b = trans_b ? 'T' : 'N';
    st->gemv.k = k;
    st->gemv.n = n;
    st->gemv.alpha = alpha;
    st->gemv.bias = bias;
    return true;
}

xf_status xf_dn_scaled_post_attr(const xf_node *n, float alpha, const xf_dn_post *posts, int n_posts,
                                 dnnl_primitive_attr_t *attr, xf_error *err)
{
    xf_status s = xf_dn_post_attr(n, posts, n_posts, attr, err);
    if (s != XF_OK || alpha == 1.0f)
        return s;
    dnnl_status_t ds = *attr ? dnnl_success : dnnl_primitive_attr_create(attr);
    if (ds == dnnl_success)
        ds = dnnl_primitive_attr_set_output_scales(*attr, 1, 0, &alpha);
    if (ds != dnnl_success) {
        dnnl_primitive_attr_destroy(*attr);
        *attr = NULL;
        return xf_dn_fail(err, n, "dnnl_primitive_attr_set_output_scales", ds);
    }
    return XF_OK;
}

/* Makes md dense row-major (same dims). */
static void dense_like(dnnl_memory_desc_t *md)
{
    xf_shape s = {.ndim = md->ndims};
    for (int d = 0; d < md->ndims; d++)
        s.dims[d] = md->dims[d];
    xf_dn_md_plain(&s, dnnl_f32, md);
}

/* The matmul's primitive descriptor for operands a and b (b_any: the
 * weights as oneDNN may want them); NULL when oneDNN has no implementation
 * for these descriptors (their strides). */
static dnnl_primitive_desc_t matmul_pd(xf_dn_ctx *c, const dnnl_memory_desc_t *a, const dnnl_memory_desc_t *b_any,
                                       const dnnl_memory_desc_t *bias, const dnnl_memory_desc_t *y,
                                       const_dnnl_primitive_attr_t attr)
{
    dnnl_matmul_desc_t d;
    dnnl_primitive_desc_t pd = NULL;
    if (dnnl_matmul_desc_init(&d, a, b_any, bias, y) != dnnl_success ||
        dnnl_primitive_desc_create(&pd, &d, attr, c->engine, NULL) != dnnl_success)
        return NULL;
    return pd;
}

xf_status xf_dn_matmul_build(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                             const xf_tensor_view *out, xf_dn_node *st, const dnnl_memory_desc_t *a_have,
                             const dnnl_memory_desc_t *b_have, float alpha, bool gemv_ok, bool gemv_trans_b,
                             xf_error *err)
{
    int r = out[0].shape.ndim;
    if (gemv_ok && gemv_setup(st, &in[0], &in[1], g->values[n->inputs[1]].init != NULL, gemv_trans_b, alpha,
                              st->bias_data, xf_shape_numel(&st->bias_shape)))
        return XF_OK;
    dnnl_memory_desc_t a = *a_have, b = *b_have, b_any, bias, y;
    xf_dn_md(c, &out[0].shape, XF_DN_PLAIN, &y);
    if (st->bias_data)
        xf_dn_md_rank(&st->bias_shape, r, dnnl_f32, &bias);
    /* constant weights are reordered once into the layout oneDNN prefers */
    bool const_b = g->values[n->inputs[1]].init && in[1].data;
    dnnl_memory_desc_init_by_tag(&b_any, r, b.dims, dnnl_f32, dnnl_format_tag_any);
    dnnl_primitive_attr_t attr;
    xf_status s = xf_dn_scaled_post_attr(n, alpha, st->posts, st->n_posts, &attr, err);
    if (s != XF_OK)
        return s;
    const dnnl_memory_desc_t *bias_md = st->bias_data ? &bias : NULL;
    dnnl_primitive_desc_t pd = matmul_pd(c, &a, const_b ? &b_any : &b, bias_md, &y, attr);
    if (!pd) {
        /* strides oneDNN does not read: dense copies of the operands */
        dense_like(&a);
        dense_like(&b);
        pd = matmul_pd(c, &a, const_b ? &b_any : &b, bias_md, &y, attr);
    }
    dnnl_primitive_attr_destroy(attr);
    if (!pd)
        return xf_rt_bad_node(err, n, "oneDNN has no matmul for these operands");
    if (const_b)
        s = xf_dn_bind_const(c, n, st, DNNL_ARG_WEIGHTS, in[1].data, b_have,
                             dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), err);
    if (s == XF_OK && st->bias_data)
        s = xf_dn_bind_const(c, n, st, DNNL_ARG_BIAS, st->bias_data, &bias, &bias, err);
    if (s == XF_OK)
        s = xf_dn_bind(c, n, st, DNNL_ARG_SRC, 0, a_have, &a, err);
    if (s == XF_OK && !const_b)
        s = xf_dn_bind(c, n, st, DNNL_ARG_WEIGHTS, 1, b_have, &b, err);
    if (s == XF_OK)
        s = xf_dn_bind(c, n, st, DNNL_ARG_DST, -1, &y, &y, err);
    return xf_dn_finish_or_free(n, st, pd, s, err);
}

bool xf_dn_matmul_as_rows(const xf_tensor_view *in, int n_in, int w, const xf_tensor_view *out, int64_t bias_numel,
                          xf_tensor_view *in2, xf_tensor_view *out2)
{
    int r = out[0].shape.ndim;
    int64_t k = in[0].shape.dims[in[0].shape.ndim - 1], n = out[0].shape.dims[r - 1];
    if (r < 3 || in[w].shape.ndim != 2 || in[0].shape.ndim != r || k < 1 || (bias_numel >= 0 && bias_numel != n))
        return false;
    int64_t rows = xf_shape_numel(&in[0].shape) / k;
    for (int i = 0; i < n_in; i++)
        in2[i] = in[i];
    in2[0].shape = (xf_shape){.ndim = 2, .dims = {rows, k}};
    out2[0] = out[0];
    out2[0].shape = (xf_shape){.ndim = 2, .dims = {rows, n}};
    return true;
}

static xf_status matmul_prepare(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                                const xf_tensor_view *out, xf_dn_node *st, xf_error *err)
{
    xf_tensor_view in2[2], out2[1];
    if (xf_dn_matmul_as_rows(in, 2, 1, out, st->bias_data ? xf_shape_numel(&st->bias_shape) : -1, in2, out2)) {
        in = in2;
        out = out2;
    }
    int r = out[0].shape.ndim;
    dnnl_memory_desc_t a, b;
    xf_dn_md_rank(&in[0].shape, r, dnnl_f32, &a);
    xf_dn_md_rank(&in[1].shape, r, dnnl_f32, &b);
    return xf_dn_matmul_build(c, g, n, in, out, st, &a, &b, 1.0f, true, false, err);
}

/* Any elementwise op, and the sum of a residual connection. */
static bool matmul_takes_post(const xf_node *n, int n_posts, const xf_dn_post *post) { return true; }

const xf_dn_handler xf_dn_matmul_handler = {matmul_handles, NULL, matmul_prepare, matmul_takes_post};

/* ---------------------------------------------------------------- Gemm */

/* C contributes when present and beta != 0; oneDNN adds it as a bias, which
 * matches ONNX only for beta == 1 and, since the output scale would apply
 * to it too, alpha == 1. */
static bool gemm_has_c(const xf_node *n) { return n->n_inputs > 2 && n->inputs[2] >= 0 && n->attrs.beta != 0.0f; }

static bool gemm_handles(const xf_graph *g, const xf_node *n)
{
    if (!xf_dn_all_f32(g, n) || vshape(g, n->inputs[0])->ndim != 2 || vshape(g, n->inputs[1])->ndim != 2)
        return false;
    if (!gemm_has_c(n))
        return true;
    return n->attrs.beta == 1.0f && n->attrs.alpha == 1.0f && vshape(g, n->inputs[2])->ndim <= 2;
}

static xf_status gemm_prepare(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                              const xf_tensor_view *out, xf_dn_node *st, xf_error *err)
{
    const xf_attrs *at = &n->attrs;
    bool has_c = gemm_has_c(n);
    /* FusedGemm's activation, after alpha A B + C */
    xf_dn_post posts[2];
    int n_posts = n->op == XF_OP_MS_FUSED_GEMM ? xf_dn_ms_act_posts(n, posts) : 0;
    if (!at->trans_a && !n_posts &&
        gemv_setup(st, &in[0], &in[1], g->values[n->inputs[1]].init != NULL, at->trans_b, at->alpha,
                   has_c ? in[2].data : NULL, has_c ? xf_shape_numel(&in[2].shape) : 0))
        return XF_OK;
    int64_t m = out[0].shape.dims[0], nn = out[0].shape.dims[1];
    int64_t k = at->trans_a ? in[0].shape.dims[0] : in[0].shape.dims[1];
    /* a transposed operand is the same bytes read with swapped strides */
    dnnl_dims_t adims = {m, k}, bdims = {k, nn};
    dnnl_dims_t astr = {at->trans_a ? 1 : k, at->trans_a ? m : 1};
    dnnl_dims_t bstr = {at->trans_b ? 1 : nn, at->trans_b ? k : 1};
    dnnl_memory_desc_t a, b, bias, y;
    dnnl_memory_desc_init_by_strides(&a, 2, adims, dnnl_f32, astr);
    dnnl_memory_desc_init_by_strides(&b, 2, bdims, dnnl_f32, bstr);
    xf_dn_md(c, &out[0].shape, XF_DN_PLAIN, &y);
    if (has_c)
        xf_dn_md_rank(&in[2].shape, 2, dnnl_f32, &bias);
    dnnl_matmul_desc_t d;
    XF_DN_TRY(err, n, dnnl_matmul_desc_init(&d, &a, &b, has_c ? &bias : NULL, &y));
    dnnl_primitive_attr_t attr;
    xf_status s = xf_dn_scaled_post_attr(n, at->alpha, posts, n_posts, &attr, err);
    if (s != XF_OK)
        return s;
    dnnl_primitive_desc_t pd = NULL;
    s = xf_dn_pd_create(c, n, &d, attr, &pd, err); /* destroys attr */
    if (s != XF_OK)
        return s;
    return xf_dn_bind_and_finish(c, n, st, pd, 4,
                                 (xf_dn_bind_spec[]){{DNNL_ARG_SRC, 0, &a},
                                                     {DNNL_ARG_WEIGHTS, 1, &b},
                                                     {DNNL_ARG_BIAS, 2, has_c ? &bias : NULL},
                                                     {DNNL_ARG_DST, -1, &y}},
                                 err);
}

const xf_dn_handler xf_dn_gemm_handler = {gemm_handles, NULL, gemm_prepare, NULL};


/* ---------------------------------------------------------------- Einsum */

/* The batched matrix product an Einsum of two operands is, when it is one:
 * the output's indices are batch dims at the same places in both operands
 * (of the output's extents), then i and j; A's last two are i and a
 * summed index k in either order, B's k and j in either order, each index
 * once per operand (MaxViT's "BGHID,BGHJD->BGHIJ" is A B^T).  a and b
 * describe the operands as stored, read as [batch, M, K] and [batch, K,
 * N] (a transposed one with swapped strides). */
static bool einsum_product(const xf_node *n, const xf_shape *sa, const xf_shape *sb, const xf_shape *sy,
                           dnnl_memory_desc_t *a, dnnl_memory_desc_t *b)
{
    const char *eq = xf_einsum_equation(&n->attrs);
    int r = sy->ndim;
    xf_einsum e;
    char why[128];
    if (!eq || n->n_inputs != 2 || sa->ndim != r || sb->ndim != r || r < 2 || r > DNNL_MAX_NDIMS ||
        !xf_einsum_plan(eq, 2, (const xf_shape *[]){sa, sb}, &e, why, sizeof why) || !xf_shape_equal(&e.out, sy))
        return false;
    const unsigned char *ia = e.index[0], *ib = e.index[1], *io = e.out_index;
    for (int d = 0; d < r - 2; d++)
        if (ia[d] != io[d] || ib[d] != io[d] || sa->dims[d] != sy->dims[d] || sb->dims[d] != sy->dims[d])
            return false;
    int i = io[r - 2], j = io[r - 1];
    bool a_t = ia[r - 2] != i, b_t = ib[r - 1] != j; /* A stored [k, i], B [j, k] */
    int k = a_t ? ia[r - 2] : ia[r - 1];
    if ((a_t ? ia[r - 1] : ia[r - 2]) != i || (b_t ? ib[r - 1] : ib[r - 2]) != k ||
        (b_t ? ib[r - 2] : ib[r - 1]) != j || i == j || k == i || k == j)
        return false;
    int64_t m = e.extent[i], kk = e.extent[k], nn = e.extent[j];
    dnnl_dims_t ad, as, bd, bs;
    int64_t sa_b = m * kk, sb_b = kk * nn; /* the batch strides, dense */
    for (int d = r - 3; d >= 0; d--) {
        ad[d] = bd[d] = sy->dims[d];
        as[d] = sa_b;
        bs[d] = sb_b;
        sa_b *= sy->dims[d];
        sb_b *= sy->dims[d];
    }
    ad[r - 2] = m;
    ad[r - 1] = kk;
    as[r - 2] = a_t ? 1 : kk;
    as[r - 1] = a_t ? m : 1;
    bd[r - 2] = kk;
    bd[r - 1] = nn;
    bs[r - 2] = b_t ? 1 : nn;
    bs[r - 1] = b_t ? kk : 1;
    dnnl_memory_desc_init_by_strides(a, r, ad, dnnl_f32, as);
    dnnl_memory_desc_init_by_strides(b, r, bd, dnnl_f32, bs);
    return true;
}

static bool einsum_handles(const xf_graph *g, const xf_node *n)
{
    dnnl_memory_desc_t a, b;
    return xf_dn_all_f32(g, n) && n->n_outputs == 1 &&
           einsum_product(n, vshape(g, n->inputs[0]), vshape(g, n->inputs[1]), vshape(g, n->outputs[0]), &a, &b);
}

static xf_status einsum_prepare(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                                const xf_tensor_view *out, xf_dn_node *st, xf_error *err)
{
    dnnl_memory_desc_t a, b;
    if (!einsum_product(n, &in[0].shape, &in[1].shape, &out[0].shape, &a, &b))
        return xf_rt_bad_node(err, n, "is not a matrix product for these shapes");
    return xf_dn_matmul_build(c, g, n, in, out, st, &a, &b, 1.0f, false, false, err);
}

const xf_dn_handler xf_dn_einsum_handler = {einsum_handles, NULL, einsum_prepare, NULL};
