/* The non-window ops oneDNN runs (matrix products are in
 * cpu_dnnl_matmul.c): eltwise, binary ops with broadcasting, softmax, batch normalization, layer
 * normalization, LRN, transpose, concat and split (instance and group
 * normalization: cpu_dnnl_gnorm.c).
 * Eltwise, batch norm, LRN, concat along channels and binary ops on equal
 * shapes compute in the layout their first input is stored in, so they can
 * sit inside native runs; the rest compute on plain tensors. */
#include "cpu_dnnl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const xf_shape *vshape(const xf_graph *g, int v) { return &g->values[v].shape; }

/* Binds input 0 and output 0, both computed in `work`. */
static xf_status bind_in0_out0(xf_dn_ctx *c, const xf_node *n, xf_dn_node *st, const xf_tensor_view *in,
                               const xf_tensor_view *out, xf_dn_layout work, xf_error *err)
{
    dnnl_memory_desc_t have, want;
    xf_dn_operand_md(c, n, 0, &in[0].shape, &have);
    xf_dn_md(c, &in[0].shape, work, &want);
    xf_status s = xf_dn_bind(c, n, st, DNNL_ARG_SRC, 0, &have, &want, err);
    if (s != XF_OK)
        return s;
    xf_dn_operand_md(c, n, -1, &out[0].shape, &have);
    xf_dn_md(c, &out[0].shape, work, &want);
    return xf_dn_bind(c, n, st, DNNL_ARG_DST, -1, &have, &want, err);
}

xf_status xf_dn_bind_and_finish(xf_dn_ctx *c, const xf_node *n, xf_dn_node *st, dnnl_primitive_desc_t pd, int count,
                                const xf_dn_bind_spec *b, xf_error *err)
{
    xf_status s = XF_OK;
    for (int i = 0; i < count && s == XF_OK; i++)
        if (b[i].md)
            s = xf_dn_bind(c, n, st, b[i].arg, b[i].operand, b[i].md, b[i].md, err);
    return xf_dn_finish_or_free(n, st, pd, s, err);
}

/* ---------------------------------------------------------------- eltwise */

/* Clip's bounds, when each is absent or a constant float (opset 11 on:
 * inputs 1 and 2; before: attributes) and they are in order (oneDNN's clip
 * would not give max for min > max).  A NaN comes out as the lower bound,
 * as from ONNX Runtime's Clip, where cpu_ref keeps it NaN. */
static bool clip_bounds(const xf_graph *g, const xf_node *n, float *lo, float *hi)
{
    *lo = n->attrs.has_clip_attrs ? n->attrs.clip_min : -INFINITY;
    *hi = n->attrs.has_clip_attrs ? n->attrs.clip_max : INFINITY;
    for (int k = 1; k < n->n_inputs && k < 3; k++) {
        int v = n->inputs[k];
        const xf_tensor *t = v >= 0 ? g->values[v].init : NULL;
        if (v >= 0 && (!t || t->dtype != XF_DT_FLOAT || xf_tensor_numel(t) != 1))
            return false;
        if (t)
            *(k == 1 ? lo : hi) = ((const float *)t->data)[0];
    }
    return n->n_inputs <= 3 && *lo <= *hi;
}

/* Whether Pad node n pads nothing (PyTorch's opset 9 export puts one
 * before each AveragePool): pads (attribute, or constant input) all 0. */
static bool pad_is_none(const xf_graph *g, const xf_node *n)
{
    if (n->attrs.has_pads) {
        for (int i = 0; i < n->attrs.n_pads; i++)
            if (n->attrs.pad_pads[i] != 0)
                return false;
        return true;
    }
    const xf_tensor *t = n->n_inputs > 1 && n->inputs[1] >= 0 ? g->values[n->inputs[1]].init : NULL;
    if (!t || t->dtype != XF_DT_INT64)
        return false;
    for (int64_t i = 0; i < xf_tensor_numel(t); i++)
        if (((const int64_t *)t->data)[i] != 0)
            return false;
    return true;
}

/* oneDNN's algorithm and (alpha, beta) for a unary op. */
static dnnl_alg_kind_t eltwise_alg(const xf_graph *g, const xf_node *n, float *alpha, float *beta)
{
    *alpha = *beta = 0.0f;
    switch (n->op) {
    /* a Pad of nothing: a copy (or, folded, nothing) */
    case XF_OP_PAD: *alpha = 1.0f; return pad_is_none(g, n) ? dnnl_eltwise_linear : dnnl_alg_kind_undef;
    case XF_OP_CLIP: return clip_bounds(g, n, alpha, beta) ? dnnl_eltwise_clip : dnnl_alg_kind_undef;
    case XF_OP_RELU: return dnnl_eltwise_relu;
    case XF_OP_LEAKY_RELU: *alpha = n->attrs.alpha; return dnnl_eltwise_relu;
    case XF_OP_SIGMOID: return dnnl_eltwise_logistic;
    case XF_OP_TANH: return dnnl_eltwise_tanh;
    case XF_OP_ABS: return dnnl_eltwise_abs;
    case XF_OP_NEG: *alpha = -1.0f; return dnnl_eltwise_linear;
    case XF_OP_EXP: return dnnl_eltwise_exp;
    case XF_OP_SQRT: return dnnl_eltwise_sqrt;
    case XF_OP_ELU: *alpha = n->attrs.alpha; return dnnl_eltwise_elu;
    case XF_OP_RECIPROCAL: *alpha = 1.0f; *beta = -1.0f; return dnnl_eltwise_pow;
    case XF_OP_GELU: return n->attrs.gelu_tanh ? dnnl_eltwise_gelu_tanh : dnnl_eltwise_gelu_erf;
    case XF_OP_MS_GELU: return dnnl_eltwise_gelu_erf;
    /* the same tanh formula as ONNX Runtime's FastGelu (without a bias) */
    case XF_OP_MS_FAST_GELU: return dnnl_eltwise_gelu_tanh;
    case XF_OP_MS_QUICK_GELU: *alpha = n->attrs.alpha; return dnnl_eltwise_swish; /* x sigmoid(alpha x) */
    case XF_OP_MISH: return dnnl_eltwise_mish;
    case XF_OP_HARD_SWISH: return dnnl_eltwise_hardswish;
    /* a loop of the backend's own (xf_dn_hard_sigmoid_run): oneDNN 2.6 has no
     * such alg, and runs a linear one with a clip post-op in its reference
     * kernel only; linear is what it would be as a post-op, which it is not
     * (xf_dn_unary_post) */
    case XF_OP_HARD_SIGMOID: *alpha = n->attrs.alpha; *beta = n->attrs.beta; return dnnl_eltwise_linear;
    /* a loop of the backend's own (xf_dn_erf_run): oneDNN has no erf (only
     * inside its gelu_erf); the alg is a placeholder, never a post-op */
    case XF_OP_ERF:
        return dnnl_eltwise_linear;
    /* a loop of the backend's own (xf_dn_log_run) in double: oneDNN's log is
     * a few ulp off, which flips the integer a Cast takes from a log that
     * should be whole (MPNet's relative position buckets: log(16 / 8) /
     * log(16) * 8 = 2); a placeholder alg, never a post-op */
    case XF_OP_LOG: return dnnl_eltwise_linear;
    /* nearest, halves to even (the default rounding mode oneDNN rounds in) */
    case XF_OP_ROUND: return dnnl_eltwise_round;
    default: return dnnl_alg_kind_undef;
    }
}

/* The unary ops run by a loop of the backend's own. */
static bool own_loop(const xf_node *n)
{
    return n->op == XF_OP_HARD_SIGMOID || n->op == XF_OP_ERF || n->op == XF_OP_LOG;
}

xf_dn_post xf_dn_unary_post(const xf_graph *g, const xf_node *n)
{
    xf_dn_post p = {.sum = false};
    /* HardSigmoid takes two: the linear step and the clip; Erf and Log none */
    p.alg = own_loop(n) ? dnnl_alg_kind_undef : eltwise_alg(g, n, &p.alpha, &p.beta);
    return p;
}

static bool eltwise_handles(const xf_graph *g, const xf_node *n)
{
    float alpha, beta;
    /* FastGelu's absent bias: its input 1 named ""; Clip's bounds and
     * Pad's pads are constants (eltwise_alg) */
    bool operands = n->op == XF_OP_CLIP || n->op == XF_OP_PAD;
    return xf_dn_is_f32(g, n->inputs[0]) && xf_dn_is_f32(g, n->outputs[0]) &&
           (n->n_inputs == 1 || xf_dn_input(n, 1) < 0 || operands) && (operands || xf_dn_all_f32(g, n)) &&
           eltwise_alg(g, n, &alpha, &beta) != dnnl_alg_kind_undef &&
           vshape(g, n->inputs[0])->ndim <= DNNL_MAX_NDIMS;
}

/* One eltwise primitive of alg on input 0 into output 0. */
static xf_status eltwise_build(xf_dn_ctx *c, const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                               xf_dn_node *st, dnnl_alg_kind_t alg, float alpha, float beta, xf_error *err)
{
    xf_dn_layout work = xf_dn_value_layout(c, n->inputs[0]);
    dnnl_memory_desc_t data;
    xf_dn_md(c, &in[0].shape, work, &data);
    dnnl_eltwise_desc_t d;
    XF_DN_TRY(err, n, dnnl_eltwise_forward_desc_init(&d, dnnl_forward_inference, alg, &data, alpha, beta));
    dnnl_primitive_desc_t pd;
    xf_status s = xf_dn_pd_create(c, n, &d, NULL, &pd, err);
    if (s != XF_OK)
        return s;
    return xf_dn_finish_or_free(n, st, pd, bind_in0_out0(c, n, st, in, out, work, err), err);
}

static xf_status eltwise_prepare(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                                 const xf_tensor_view *out, xf_dn_node *st, xf_error *err)
{
    if (own_loop(n))
        return xf_dn_unary_loop_prepare(c, n, in, st, err);
    float alpha, beta;
    dnnl_alg_kind_t alg = eltwise_alg(g, n, &alpha, &beta);
    return eltwise_build(c, n, in, out, st, alg, alpha, beta, err);
}

const xf_dn_handler xf_dn_eltwise_handler = {eltwise_handles, xf_dn_input0_native_ok, eltwise_prepare, NULL};

/* Pow by a constant float exponent of one element (x^3 in the tanh form
 * of GELU): squares and cubes in a loop of this backend's own, other
 * exponents as oneDNN's eltwise pow, alpha x^beta with alpha 1. */
static bool pow_exponent(const xf_graph *g, const xf_node *n, float *beta)
{
    if (n->op != XF_OP_POW || n->n_inputs != 2 || n->inputs[1] < 0 || n->n_outputs != 1 || n->outputs[0] < 0)
        return false;
    const xf_tensor *e = g->values[n->inputs[1]].init;
    if (!e || e->dtype != XF_DT_FLOAT || xf_tensor_numel(e) != 1)
        return false;
    *beta = ((const float *)e->data)[0];
    return true;
}

static bool pow_handles(const xf_graph *g, const xf_node *n)
{
    float beta;
    return pow_exponent(g, n, &beta) && xf_dn_all_f32(g, n) &&
           xf_shape_equal(vshape(g, n->inputs[0]), vshape(g, n->outputs[0])) &&
           vshape(g, n->inputs[0])->ndim <= DNNL_MAX_NDIMS;
}

static xf_status pow_prepare(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                             const xf_tensor_view *out, xf_dn_node *st, xf_error *err)
{
    float beta = 1.0f;
    pow_exponent(g, n, &beta);
    if (beta == 2.0f || beta == 3.0f)
        return xf_dn_unary_loop_prepare(c, n, in, st, err);
    return eltwise_build(c, n, in, out, st, dnnl_eltwise_pow, 1.0f, beta, err);
}

const xf_dn_handler xf_dn_pow_handler = {pow_handles, xf_dn_input0_native_ok, pow_prepare, NULL};

static bool never(const xf_graph *g, const xf_node *n) { return false; }

/* The eltwise the fold plan chose for the pattern node n starts (its
 * post), over the pattern's input x (input 0 of n, or input 1 when input 0
 * is the constant of a Mul or an Add), into the pattern's last output
 * (same shape and layout as x). */
static xf_status pattern_prepare(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                                 const xf_tensor_view *out, xf_dn_node *st, xf_error *err)
{
    (void)out;
    const xf_dn_post *post = &c->folds[n - g->nodes].post;
    int k = g->values[n->inputs[0]].init ? 1 : 0;
    dnnl_memory_desc_t data;
    xf_dn_operand_md(c, n, k, &in[k].shape, &data);
    dnnl_eltwise_desc_t d;
    XF_DN_TRY(err, n,
              dnnl_eltwise_forward_desc_init(&d, dnnl_forward_inference, post->alg, &data, post->alpha, post->beta));
    dnnl_primitive_desc_t pd;
    xf_status s = xf_dn_pd_create(c, n, &d, NULL, &pd, err);
    if (s != XF_OK)
        return s;
    return xf_dn_bind_and_finish(c, n, st, pd, 2,
                                 (xf_dn_bind_spec[]){{DNNL_ARG_SRC, k, &data}, {DNNL_ARG_DST, -1, &data}}, err);
}

const xf_dn_handler xf_dn_pattern_handler = {never, NULL, pattern_prepare, NULL};

/* ---------------------------------------------------------------- binary */

static dnnl_alg_kind_t binary_alg(xf_op op)
{
    switch (op) {
    case XF_OP_ADD: return dnnl_binary_add;
    case XF_OP_SUB: return dnnl_binary_sub;
    case XF_OP_MUL: return dnnl_binary_mul;
    case XF_OP_DIV: return dnnl_binary_div;
    case XF_OP_MAX: return dnnl_binary_max;
    case XF_OP_MIN: return dnnl_binary_min;
    default: return dnnl_alg_kind_undef;
    }
}

static bool commutative(xf_op op) { return op != XF_OP_SUB && op != XF_OP_DIV; }

/* oneDNN broadcasts only its second source, so the full-size operand goes
 * first: returns which input that is, or -1 when neither is full-size (or
 * the op cannot be swapped). */
static int full_input(const xf_graph *g, const xf_node *n)
{
    const xf_shape *y = vshape(g, n->outputs[0]);
    if (xf_shape_equal(vshape(g, n->inputs[0]), y))
        return 0;
    if (commutative(n->op) && xf_shape_equal(vshape(g, n->inputs[1]), y))
        return 1;
    return -1;
}

static bool binary_handles(const xf_graph *g, const xf_node *n)
{
    return n->n_inputs == 2 && xf_dn_all_f32(g, n) && vshape(g, n->outputs[0])->ndim <= DNNL_MAX_NDIMS &&
           full_input(g, n) >= 0;
}

/* Whether o broadcasts to the 4-D y one value per channel (or one). */
static bool per_channel(const xf_shape *o, const xf_shape *y)
{
    if (y->ndim != 4 || o->ndim > 4)
        return false;
    for (int d = 0; d < 4; d++) {
        int64_t od = d < 4 - o->ndim ? 1 : o->dims[d - (4 - o->ndim)];
        if (od != 1 && !(d == 1 && od == y->dims[1]))
            return false;
    }
    return true;
}

/* Native operands when nothing broadcasts, or the full operand when the
 * other holds one value per channel (a squeeze-and-excitation scale: it is
 * read as stored, plain). */
static bool binary_native_ok(const xf_graph *g, const xf_node *n, int k)
{
    const xf_shape *y = vshape(g, n->outputs[0]), *other = vshape(g, n->inputs[1 - k]);
    return xf_shape_equal(vshape(g, n->inputs[k]), y) &&
           (xf_shape_equal(other, y) || (k == full_input(g, n) && per_channel(other, y)));
}

/* How a binary op's operands are described: the full one first (oneDNN
 * broadcasts only its second source), each as the primitive reads it and
 * as it is stored (*_have). */
typedef struct binary_mds {
    int first, second;
    xf_dn_layout work; /* the layout the op computes in */
    dnnl_memory_desc_t src0, src0_have, src1, src1_have, dst, dst_have;
} binary_mds;

/* y and the operand o that broadcasts to it, both plain, seen with fewer
 * dims (the same bytes): y's dims of 1 left out, and neighbours merged
 * where o is whole along both or 1 along both, into yc and oc.  oneDNN's
 * kernels broadcast along some dims only ([1, 12, 384, 1] to [1, 12, 384,
 * 384], a softmax's sums, ran on its reference kernel; as [4608, 1] to
 * [4608, 384] on its vector one). */
static void binary_collapse(const xf_shape *o, const xf_shape *y, xf_shape *yc, xf_shape *oc)
{
    int r = 0, prev = -1, lead = y->ndim - o->ndim;
    for (int d = 0; d < y->ndim; d++) {
        int64_t od = d < lead ? 1 : o->dims[d - lead];
        if (y->dims[d] == 1)
            continue;
        int whole = od == y->dims[d];
        if (whole == prev) {
            yc->dims[r - 1] *= y->dims[d];
            oc->dims[r - 1] *= od;
            continue;
        }
        yc->dims[r] = y->dims[d];
        oc->dims[r++] = od;
        prev = whole;
    }
    if (r == 0)
        yc->dims[r] = oc->dims[r] = 1, r++;
    yc->ndim = oc->ndim = r;
}

static void binary_layouts(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_shape *other,
                           const xf_shape *y, binary_mds *m)
{
    int first = full_input(g, n);
    int second = 1 - first;
    xf_dn_layout work = xf_dn_value_layout(c, n->inputs[first]);
    dnnl_memory_desc_t src0, src0_have, src1, src1_have, dst, dst_have;
    /* a native tensor of dims (1, C, 1, 1) (a pooled map) holds the bytes
     * of the plain one when no channel block is padded: it is computed as
     * plain, where oneDNN's AVX2 kernels also broadcast a single value */
    bool flat = work == XF_DN_NATIVE && y->ndim == 4 && y->dims[0] == 1 && y->dims[2] == 1 && y->dims[3] == 1;
    if (flat) {
        xf_dn_md(c, y, XF_DN_NATIVE, &src0);
        xf_dn_md(c, y, XF_DN_PLAIN, &dst);
        flat = dnnl_memory_desc_get_size(&src0) == dnnl_memory_desc_get_size(&dst);
        work = flat ? XF_DN_PLAIN : work;
    }
    xf_dn_md(c, y, work, &src0);
    xf_dn_operand_md(c, n, first, y, &src0_have);
    if (xf_shape_equal(other, y)) {
        xf_dn_md(c, y, work, &src1);
        xf_dn_operand_md(c, n, second, y, &src1_have);
    } else {
        xf_dn_md_rank(other, y->ndim, dnnl_f32, &src1);
        src1_have = src1;
        /* one value per channel of all the channels, with a native full
         * operand: described in the native layout, whose bytes are the
         * same for dims (1, C, 1, 1), oneDNN's kernels take the broadcast
         * (its AVX2 and blocked ones do not with the plain form: 2 ms for
         * a squeeze-and-excitation Mul of 240 x 8 x 8) */
        dnnl_memory_desc_t native;
        bool scalar = xf_shape_numel(other) == 1;
        if (work == XF_DN_NATIVE && src1.ndims == 4 && (src1.dims[1] == y->dims[1] || scalar)) {
            xf_dn_md(c, &(xf_shape){.ndim = 4, .dims = {src1.dims[0], src1.dims[1], src1.dims[2], src1.dims[3]}},
                     XF_DN_NATIVE, &native);
            if (dnnl_memory_desc_get_size(&native) == dnnl_memory_desc_get_size(&src1))
                src1 = src1_have = native;
            /* one value: its channel block padded (a reorder when bound),
             * which the AVX2 kernels take and the plain form they do not
             * (PaddleOCR's scale by one value: 0.3 ms on the reference
             * kernel for 32 x 12 x 20) */
            else if (scalar)
                src1 = native;
        }
    }
    xf_dn_md(c, y, work, &dst);
    xf_dn_operand_md(c, n, -1, y, &dst_have);
    if (flat) { /* as stored, native or plain: the same bytes */
        src0_have = dst_have = src0;
        if (xf_shape_equal(other, y))
            src1_have = src1;
    }
    if (work == XF_DN_PLAIN && !xf_shape_equal(other, y) && xf_shape_numel(y) > 0 &&
        dnnl_memory_desc_equal(&src0_have, &src0) && dnnl_memory_desc_equal(&dst_have, &dst)) {
        xf_shape yc, oc;
        binary_collapse(other, y, &yc, &oc);
        xf_dn_md_plain(&yc, dnnl_f32, &src0);
        xf_dn_md_plain(&oc, dnnl_f32, &src1);
        src0_have = dst = dst_have = src0;
        src1_have = src1;
    }
    *m = (binary_mds){first, second, work, src0, src0_have, src1, src1_have, dst, dst_have};
}

/* Whether md is channel-blocked by 8 (nChw8c) over channels that are not
 * a multiple of 16, on a CPU where oneDNN runs its AVX-512 kernels: there
 * oneDNN 2.6.3's binary kernel (jit:uni) with eltwise post-ops leaves
 * elements unwritten and writes past the tensor (an Add of two [4, 8, 7,
 * 9] with a Tanh after it; nChw8c is the native layout where the plan's
 * convolutions chose AVX2 kernels); without post-ops, or over 16 or 32
 * channels, it computes them all. */
static bool blocked8_posts_broken(const dnnl_memory_desc_t *md)
{
    const dnnl_blocking_desc_t *b = &md->format_desc.blocking;
    return md->format_kind == dnnl_blocked && md->ndims >= 2 && md->dims[1] % 16 != 0 && b->inner_nblks == 1 &&
           b->inner_idxs[0] == 1 && b->inner_blks[0] == 8 &&
           (dnnl_get_effective_cpu_isa() & dnnl_cpu_isa_avx512_core & ~dnnl_cpu_isa_avx2) != 0;
}

bool xf_dn_binary_takes_posts(xf_dn_ctx *c, const xf_graph *g, const xf_node *n)
{
    binary_mds m;
    binary_layouts(c, g, n, vshape(g, n->inputs[1 - full_input(g, n)]), vshape(g, n->outputs[0]), &m);
    if (blocked8_posts_broken(&m.src0) || blocked8_posts_broken(&m.dst))
        return false;
    dnnl_binary_desc_t d;
    dnnl_primitive_desc_t pd = NULL;
    bool kernel = dnnl_binary_desc_init(&d, binary_alg(n->op), &m.src0, &m.src1, &m.dst) == dnnl_success &&
                  dnnl_primitive_desc_create(&pd, &d, NULL, c->engine, NULL) == dnnl_success &&
                  !xf_dn_pd_is_ref(pd);
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    return kernel;
}

static xf_status binary_prepare(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                                const xf_tensor_view *out, xf_dn_node *st, xf_error *err)
{
    binary_mds m;
    binary_layouts(c, g, n, &in[1 - full_input(g, n)].shape, &out[0].shape, &m);
    dnnl_binary_desc_t d;
    XF_DN_TRY(err, n, dnnl_binary_desc_init(&d, binary_alg(n->op), &m.src0, &m.src1, &m.dst));
    dnnl_primitive_attr_t attr;
    xf_status s = xf_dn_post_attr(n, st->posts, st->n_posts, &attr, err);
    if (s != XF_OK)
        return s;
    dnnl_primitive_desc_t pd;
    s = xf_dn_pd_create(c, n, &d, attr, &pd, err); /* destroys attr */
    if (s != XF_OK)
        return s;
    /* a broadcast oneDNN's kernels lack (Swin's attention mask, [1, 64, 1,
     * 49, 49] to [1, 64, 3, 49, 49]: 41 ms on its reference one) runs on
     * cpu_ref's kernel over the threads, where it can: nothing folded in,
     * every operand plain */
    bool plain = m.work == XF_DN_PLAIN && xf_dn_value_layout(c, n->inputs[m.second]) == XF_DN_PLAIN &&
                 xf_dn_value_layout(c, n->outputs[0]) == XF_DN_PLAIN;
    st->on_ref = false; /* prepared again with a node folded in: on oneDNN */
    if (plain && !st->n_posts && xf_dn_pd_is_ref(pd)) {
        dnnl_primitive_desc_destroy(pd);
        st->on_ref = true;
        return XF_OK;
    }
    s = xf_dn_bind(c, n, st, DNNL_ARG_SRC_0, m.first, &m.src0_have, &m.src0, err);
    if (s == XF_OK)
        s = xf_dn_bind(c, n, st, DNNL_ARG_SRC_1, m.second, &m.src1_have, &m.src1, err);
    if (s == XF_OK)
        s = xf_dn_bind(c, n, st, DNNL_ARG_DST, -1, &m.dst_have, &m.dst, err);
    return xf_dn_finish_or_free(n, st, pd, s, err);
}

static bool binary_takes_post(const xf_node *n, int n_posts, const xf_dn_post *post) { return !post->sum; }

const xf_dn_handler xf_dn_binary_handler = {binary_handles, binary_native_ok, binary_prepare, binary_takes_post};

/* ---------------------------------------------------------------- PRelu */

/* A slope that broadcasts to X as numpy does (opset 7 on); opset 6's
 * slope per channel stays on cpu_ref. */
static bool prelu_handles(const xf_graph *g, const xf_node *n)
{
    const xf_shape *x = vshape(g, n->inputs[0]), *slope = vshape(g, n->inputs[1]);
    return !n->attrs.prelu_channels && xf_dn_all_f32(g, n) && x->ndim >= 1 && x->ndim <= DNNL_MAX_NDIMS &&
           slope->ndim <= x->ndim;
}

/* A PRelu of a 4-D x by a slope per channel ([C, 1, 1] or [1, C, 1, 1])
 * or one for all, stored channel-blocked or channels-last, in and out
 * alike: the loop of the backend's own (xf_dn_prelu_channels) runs it. */
typedef struct prelu_loop {
    int block; /* 16, 8; 0: channels last */
} prelu_loop;

static xf_status prelu_loop_run(xf_dn_node *st, const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                                xf_error *err)
{
    (void)n, (void)err;
    const prelu_loop *p = st->own;
    const xf_shape *x = &in[0].shape;
    xf_dn_prelu_channels(in[0].data, out[0].data, in[1].data, xf_rt_numel(&in[1]), x->dims[0], x->dims[1],
                         x->dims[2] * x->dims[3], p->block);
    return XF_OK;
}

static bool prelu_by_channel(const xf_shape *x, const xf_shape *slope)
{
    int64_t count = xf_shape_numel(slope);
    if (x->ndim != 4 || slope->ndim > 4 || (count != 1 && count != x->dims[1]))
        return false;
    for (int d = 0; d < slope->ndim; d++) /* right-aligned: its one dim of more than 1 is x's dim 1 */
        if (slope->dims[d] != 1 && d - slope->ndim + 4 != 1)
            return false;
    return true;
}

/* In the layout its input is stored in (a convolution's blocked one), the
 * slope as the primitive wants it (reordered once where constant): a
 * plain PRelu between a Conv and a MaxPool (MTCNN's) made the pool read
 * plain NCHW, on oneDNN's simple_nchw kernel, 50 times slower. */
static xf_status prelu_prepare(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                               const xf_tensor_view *out, xf_dn_node *st, xf_error *err)
{
    xf_dn_layout work = xf_dn_value_layout(c, n->inputs[0]);
    dnnl_format_tag_t tag = c->native_tag;
    int block = tag == dnnl_nChw16c ? 16 : tag == dnnl_nChw8c ? 8 : tag == dnnl_nhwc ? 0 : -1;
    if (work == XF_DN_NATIVE && xf_dn_value_layout(c, n->outputs[0]) == XF_DN_NATIVE && block >= 0 &&
        prelu_by_channel(&in[0].shape, &in[1].shape)) {
        prelu_loop *p = malloc(sizeof *p);
        if (!p)
            return xf_error_set(err, XF_ERR_NOMEM, "out of memory in %s", xf_op_name(n->op));
        p->block = block;
        st->own = p;
        st->own_free = free;
        st->own_run = prelu_loop_run;
        return XF_OK;
    }
    dnnl_memory_desc_t data, slope, slope_any;
    xf_dn_md(c, &out[0].shape, work, &data);
    xf_dn_md_rank(&in[1].shape, out[0].shape.ndim, dnnl_f32, &slope);
    /* plain data: the slope as stored; native: as the primitive wants it */
    slope_any = slope;
    if (work != XF_DN_PLAIN)
        dnnl_memory_desc_init_by_tag(&slope_any, slope.ndims, slope.dims, dnnl_f32, dnnl_format_tag_any);
    dnnl_prelu_desc_t d;
    XF_DN_TRY(err, n, dnnl_prelu_forward_desc_init(&d, dnnl_forward_inference, &data, &slope_any));
    dnnl_primitive_desc_t pd;
    xf_status s = xf_dn_pd_create(c, n, &d, NULL, &pd, err);
    if (s != XF_OK)
        return s;
    const dnnl_memory_desc_t *want = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    s = bind_in0_out0(c, n, st, in, out, work, err);
    if (s == XF_OK && g->values[n->inputs[1]].init && in[1].data)
        s = xf_dn_bind_const(c, n, st, DNNL_ARG_WEIGHTS, in[1].data, &slope, want, err);
    else if (s == XF_OK)
        s = xf_dn_bind(c, n, st, DNNL_ARG_WEIGHTS, 1, &slope, want, err);
    return xf_dn_finish_or_free(n, st, pd, s, err);
}

const xf_dn_handler xf_dn_prelu_handler = {prelu_handles, xf_dn_input0_native_ok, prelu_prepare, NULL};

/* ---------------------------------------------------------------- Softmax, LogSoftmax */

static bool softmax_handles(const xf_graph *g, const xf_node *n)
{
    if (!xf_dn_all_f32(g, n))
        return false;
    int rank = vshape(g, n->inputs[0])->ndim;
    return rank >= 1 && xf_rt_axis(n->attrs.axis, rank) >= 0;
}

static int64_t prod_dims(const xf_shape *s, int from, int to)
{
    int64_t p = 1;
    for (int d = from; d < to; d++)
        p *= s->dims[d];
    return p;
}

/* Both forms are a softmax along the middle of (outer, len, inner): the
 * legacy one flattens everything from axis on into len. */
static xf_status softmax_prepare(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                                 const xf_tensor_view *out, xf_dn_node *st, xf_error *err)
{
    const xf_shape *x = &in[0].shape;
    int rank = x->ndim, axis = xf_rt_axis(n->attrs.axis, rank);
    bool legacy = n->attrs.softmax_legacy;
    xf_shape s3 = {.ndim = 3,
                   .dims = {prod_dims(x, 0, axis), legacy ? prod_dims(x, axis, rank) : x->dims[axis],
                            legacy ? 1 : prod_dims(x, axis + 1, rank)}};
    dnnl_memory_desc_t data;
    xf_dn_md(c, &s3, XF_DN_PLAIN, &data);
    dnnl_softmax_v2_desc_t d;
    dnnl_alg_kind_t alg = n->op == XF_OP_LOG_SOFTMAX ? dnnl_softmax_log : dnnl_softmax_accurate;
    XF_DN_TRY(err, n, dnnl_softmax_v2_forward_desc_init(&d, dnnl_forward_inference, alg, &data, &data, 1));
    dnnl_primitive_desc_t pd;
    xf_status s = xf_dn_pd_create(c, n, &d, NULL, &pd, err);
    if (s != XF_OK)
        return s;
    /* oneDNN's kernels want the axis innermost in memory; over a strided
     * axis (YOLO's DFL Softmax: 16 bins over 8400 anchors) it runs its
     * reference loops, some 50x slower than reordering in and out. */
    dnnl_memory_desc_t work = data;
    if (s3.dims[2] > 1 && xf_dn_pd_is_ref(pd)) {
        dnnl_primitive_desc_t inner_pd = NULL;
        dnnl_memory_desc_init_by_tag(&work, 3, (dnnl_dims_t){s3.dims[0], s3.dims[1], s3.dims[2]}, dnnl_f32,
                                     dnnl_acb);
        if (dnnl_softmax_v2_forward_desc_init(&d, dnnl_forward_inference, alg, &work, &work, 1) == dnnl_success &&
            dnnl_primitive_desc_create(&inner_pd, &d, NULL, c->engine, NULL) == dnnl_success &&
            !xf_dn_pd_is_ref(inner_pd)) {
            dnnl_primitive_desc_destroy(pd);
            pd = inner_pd;
        } else {
            if (inner_pd)
                dnnl_primitive_desc_destroy(inner_pd);
            work = data;
        }
    }
    xf_status bs = xf_dn_bind(c, n, st, DNNL_ARG_SRC, 0, &data, &work, err);
    if (bs == XF_OK)
        bs = xf_dn_bind(c, n, st, DNNL_ARG_DST, -1, &data, &work, err);
    return xf_dn_finish_or_free(n, st, pd, bs, err);
}

const xf_dn_handler xf_dn_softmax_handler = {softmax_handles, NULL, softmax_prepare, NULL};

/* ---------------------------------------------------------------- BatchNormalization */

static bool batch_norm_handles(const xf_graph *g, const xf_node *n)
{
    if (!xf_dn_all_f32(g, n) || n->n_inputs != 5 || n->n_outputs != 1 || n->attrs.bn_training)
        return false;
    const xf_shape *x = vshape(g, n->inputs[0]);
    if (x->ndim < 3 || x->ndim > 5)
        return false;
    for (int k = 1; k < 5; k++)
        if (n->inputs[k] < 0 || xf_shape_numel(vshape(g, n->inputs[k])) != x->dims[1])
            return false;
    return true;
}

static xf_status batch_norm_prepare(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                                    const xf_tensor_view *out, xf_dn_node *st, xf_error *err)
{
    if (xf_dn_bnorm_plain(c, n, st))
        return XF_OK;
    xf_dn_layout work = xf_dn_value_layout(c, n->inputs[0]);
    dnnl_memory_desc_t data, chan;
    xf_dn_md(c, &in[0].shape, work, &data);
    xf_shape cs = {.ndim = 1, .dims = {in[0].shape.dims[1]}};
    xf_dn_md(c, &cs, XF_DN_PLAIN, &chan);
    dnnl_batch_normalization_desc_t d;
    XF_DN_TRY(err, n, dnnl_batch_normalization_forward_desc_init(&d, dnnl_forward_inference, &data,
                                                                 n->attrs.epsilon,
                                                                 dnnl_use_global_stats | dnnl_use_scale |
                                                                     dnnl_use_shift |
                                                                     (st->n_posts
                                                                          ? dnnl_fuse_norm_relu
                                                                          : 0u)));
    dnnl_primitive_desc_t pd;
    xf_status s = xf_dn_pd_create(c, n, &d, NULL, &pd, err);
    if (s != XF_OK)
        return s;
    static const int args[4] = {DNNL_ARG_SCALE, DNNL_ARG_SHIFT, DNNL_ARG_MEAN, DNNL_ARG_VARIANCE};
    s = bind_in0_out0(c, n, st, in, out, work, err);
    for (int k = 1; k < 5 && s == XF_OK; k++)
        s = xf_dn_bind(c, n, st, args[k - 1], k, &chan, &chan, err);
    return xf_dn_finish_or_free(n, st, pd, s, err);
}

/* oneDNN fuses only a plain Relu into batch normalization. */
static bool batch_norm_takes_post(const xf_node *n, int n_posts, const xf_dn_post *post)
{
    return n_posts == 0 && !post->sum && post->alg == dnnl_eltwise_relu && post->alpha == 0.0f;
}

const xf_dn_handler xf_dn_batch_norm_handler = {batch_norm_handles, xf_dn_input0_native_ok, batch_norm_prepare,
                                                batch_norm_takes_post};

/* ---------------------------------------------------------------- LayerNormalization */

/* oneDNN normalizes over the last dimension: ONNX's normalized dims (axis
 * on) are read as one, the rest as one outer dimension.  Only the
 * normalized output (no Mean / InvStdDev), with scale and bias of the
 * normalized shape. */
static bool layer_norm_handles(const xf_graph *g, const xf_node *n)
{
    if (!xf_dn_all_f32(g, n) || n->n_inputs < 2 || n->inputs[1] < 0)
        return false;
    for (int k = 1; k < n->n_outputs; k++)
        if (n->outputs[k] >= 0)
            return false;
    const xf_shape *x = vshape(g, n->inputs[0]);
    int axis = xf_rt_axis(n->attrs.axis, x->ndim);
    if (axis < 0)
        return false;
    xf_shape norm = xf_shape_make(x->ndim - axis, x->dims + axis);
    for (int k = 1; k < n->n_inputs; k++) {
        const xf_shape *p = n->inputs[k] >= 0 ? vshape(g, n->inputs[k]) : NULL;
        if (p && (xf_shape_numel(p) != xf_shape_numel(&norm) || !xf_rt_broadcastable(p, &norm)))
            return false;
    }
    return true;
}

static xf_status layer_norm_prepare(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                                    const xf_tensor_view *out, xf_dn_node *st, xf_error *err)
{
    const xf_shape *x = &in[0].shape;
    int axis = xf_rt_axis(n->attrs.axis, x->ndim);
    xf_shape s2 = {.ndim = 2, .dims = {prod_dims(x, 0, axis), prod_dims(x, axis, x->ndim)}};
    xf_shape chan_shape = {.ndim = 1, .dims = {s2.dims[1]}};
    dnnl_memory_desc_t data, chan;
    xf_dn_md(c, &s2, XF_DN_PLAIN, &data);
    xf_dn_md(c, &chan_shape, XF_DN_PLAIN, &chan);
    bool has_bias = n->n_inputs > 2 && xf_rt_present(&in[2]);
    dnnl_layer_normalization_desc_t d;
    XF_DN_TRY(err, n, dnnl_layer_normalization_forward_desc_init(&d, dnnl_forward_inference, &data, NULL,
                                                                 n->attrs.epsilon,
                                                                 dnnl_use_scale | (has_bias ? dnnl_use_shift : 0u)));
    dnnl_primitive_desc_t pd;
    xf_status s = xf_dn_pd_create(c, n, &d, NULL, &pd, err);
    if (s != XF_OK)
        return s;
    return xf_dn_bind_and_finish(c, n, st, pd, 4,
                                 (xf_dn_bind_spec[]){{DNNL_ARG_SRC, 0, &data},
                                                     {DNNL_ARG_SCALE, 1, &chan},
                                                     {DNNL_ARG_SHIFT, 2, has_bias ? &chan : NULL},
                                                     {DNNL_ARG_DST, -1, &data}},
                                 err);
}

const xf_dn_handler xf_dn_layer_norm_handler = {layer_norm_handles, NULL, layer_norm_prepare, NULL};

/* ---------------------------------------------------------------- LRN */

/* Across channels, on 4-D inputs, with an odd size: oneDNN sums the
 * (size - 1) / 2 channels on either side and divides alpha by size, as
 * ONNX does (an even size reaches one channel further up in ONNX, and
 * stays on cpu_ref).  Computes in the layout its input is stored in. */
static bool lrn_handles(const xf_graph *g, const xf_node *n)
{
    return xf_dn_all_f32(g, n) && vshape(g, n->inputs[0])->ndim == 4 && n->attrs.lrn_size % 2 == 1;
}

static xf_status lrn_prepare(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                             const xf_tensor_view *out, xf_dn_node *st, xf_error *err)
{
    xf_dn_layout work = xf_dn_value_layout(c, n->inputs[0]);
    dnnl_memory_desc_t data;
    xf_dn_md(c, &in[0].shape, work, &data);
    dnnl_lrn_desc_t d;
    XF_DN_TRY(err, n, dnnl_lrn_forward_desc_init(&d, dnnl_forward_inference, dnnl_lrn_across_channels, &data,
                                                 n->attrs.lrn_size, n->attrs.alpha, n->attrs.beta,
                                                 n->attrs.lrn_bias));
    dnnl_primitive_desc_t pd;
    xf_status s = xf_dn_pd_create(c, n, &d, NULL, &pd, err);
    if (s != XF_OK)
        return s;
    s = bind_in0_out0(c, n, st, in, out, work, err);
    return xf_dn_finish_or_free(n, st, pd, s, err);
}

const xf_dn_handler xf_dn_lrn_handler = {lrn_handles, xf_dn_input0_native_ok, lrn_prepare, NULL};

/* ---------------------------------------------------------------- Transpose */

static bool transpose_handles(const xf_graph *g, const xf_node *n)
{
    int rank = vshape(g, n->inputs[0])->ndim;
    return xf_dn_all_f32(g, n) && rank >= 1 && rank <= DNNL_MAX_NDIMS &&
           (n->attrs.n_perm == 0 || n->attrs.n_perm == rank);
}

/* A reorder from the input read with permuted strides (output dimension i
 * is input dimension perm[i]) to the dense output. */
static xf_status transpose_prepare(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                                   const xf_tensor_view *out, xf_dn_node *st, xf_error *err)
{
    const xf_shape *x = &in[0].shape;
    int rank = x->ndim;
    int64_t xs[XF_MAX_DIMS];
    xf_rt_dense_strides(x, xs);
    dnnl_dims_t dims, strides;
    for (int i = 0; i < rank; i++) {
        int from = n->attrs.n_perm ? (int)n->attrs.perm[i] : rank - 1 - i;
        dims[i] = x->dims[from];
        strides[i] = xs[from];
    }
    dnnl_memory_desc_t src, dst;
    dnnl_memory_desc_init_by_strides(&src, rank, dims, dnnl_f32, strides);
    xf_dn_md(c, &out[0].shape, XF_DN_PLAIN, &dst);
    dnnl_primitive_desc_t pd;
    XF_DN_TRY(err, n, dnnl_reorder_primitive_desc_create(&pd, &src, c->engine, &dst, c->engine, NULL));
    return xf_dn_bind_and_finish(c, n, st, pd, 2,
                                 (xf_dn_bind_spec[]){{DNNL_ARG_FROM, 0, &src}, {DNNL_ARG_TO, -1, &dst}}, err);
}

const xf_dn_handler xf_dn_transpose_handler = {transpose_handles, NULL, transpose_prepare, NULL};

/* ---------------------------------------------------------------- Concat */

static bool concat_handles(const xf_graph *g, const xf_node *n)
{
    int rank = vshape(g, n->outputs[0])->ndim;
    for (int k = 0; k < n->n_inputs; k++)
        if (n->inputs[k] < 0)
            return false;
    return xf_dn_all_f32(g, n) && rank >= 1 && rank <= DNNL_MAX_NDIMS && xf_rt_axis(n->attrs.axis, rank) >= 0;
}

/* Joining channels keeps whole blocks together. */
static bool concat_native_ok(const xf_graph *g, const xf_node *n, int k)
{
    int rank = vshape(g, n->outputs[0])->ndim;
    return rank == 4 && xf_rt_axis(n->attrs.axis, rank) == 1;
}

/* A Concat of plain tensors with many rows before its axis, copied row by
 * row over the threads: oneDNN's simple concat takes several times as long
 * where the pieces are small (RT-DETR's decoder joins three [8, 32, 300, 4]
 * samplings along the last dim, 16-byte pieces: 4.3 ms on one thread
 * against 0.9 for ONNX Runtime). */
enum { CONCAT_ROWS_MIN = 64 };

static int64_t concat_rows(const xf_shape *y, int axis)
{
    int64_t rows = 1;
    for (int d = 0; d < axis; d++)
        rows *= y->dims[d];
    return rows;
}

static xf_status concat_plain(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_shape *y = &out[0].shape;
    int axis = xf_rt_axis(n->attrs.axis, y->ndim);
    int64_t rows = concat_rows(y, axis), row = rows ? (int64_t)xf_rt_bytes(&out[0]) / rows : 0;
    size_t few[16], *piece = n->n_inputs <= 16 ? few : malloc(sizeof *piece * (size_t)n->n_inputs);
    if (!piece)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    for (int k = 0; k < n->n_inputs && rows; k++)
        piece[k] = xf_rt_bytes(&in[k]) / (size_t)rows;
    XF_OMP_FOR(rows * row >= (int64_t)XF_DN_CHUNK_MIN * 4)
    for (int64_t r = 0; r < rows; r++) {
        char *dst = (char *)out[0].data + r * row;
        for (int k = 0; k < n->n_inputs; k++) {
            const char *src = (const char *)in[k].data + (size_t)r * piece[k];
            switch (piece[k]) { /* small pieces of known size copied inline */
            case 4: memcpy(dst, src, 4); break;
            case 8: memcpy(dst, src, 8); break;
            case 16: memcpy(dst, src, 16); break;
            case 32: memcpy(dst, src, 32); break;
            case 64: memcpy(dst, src, 64); break;
            default: memcpy(dst, src, piece[k]); break;
            }
            dst += piece[k];
        }
    }
    if (piece != few)
        free(piece);
    return XF_OK;
}

/* Each source is read in the layout it is stored in, unless oneDNN then
 * has only its reference concat (sources stored in other layouts than
 * the destination: a plain one beside convolution outputs): they are
 * then reordered into the destination's layout first. */
static xf_status concat_prepare(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                                const xf_tensor_view *out, xf_dn_node *st, xf_error *err)
{
    int axis = xf_rt_axis(n->attrs.axis, out[0].shape.ndim);
    bool plain = xf_dn_value_layout(c, n->outputs[0]) == XF_DN_PLAIN;
    for (int k = 0; k < n->n_inputs; k++)
        plain = plain && xf_dn_value_layout(c, n->inputs[k]) == XF_DN_PLAIN;
    if (plain && concat_rows(&out[0].shape, axis) >= CONCAT_ROWS_MIN) {
        st->kernel = concat_plain;
        return XF_OK;
    }
    dnnl_memory_desc_t dst, *src = malloc(sizeof *src * (size_t)n->n_inputs * 2);
    if (!src)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    dnnl_memory_desc_t *want = src + n->n_inputs;
    for (int k = 0; k < n->n_inputs; k++) {
        xf_dn_operand_md(c, n, k, &in[k].shape, &src[k]);
        want[k] = src[k];
    }
    xf_dn_operand_md(c, n, -1, &out[0].shape, &dst);
    dnnl_primitive_desc_t pd = NULL, like_dst = NULL;
    dnnl_status_t ds = dnnl_concat_primitive_desc_create(&pd, &dst, n->n_inputs, axis, src, NULL, c->engine);
    xf_status s = ds == dnnl_success ? XF_OK : xf_dn_fail(err, n, "dnnl_concat_primitive_desc_create", ds);
    if (s == XF_OK && xf_dn_pd_is_ref(pd)) {
        for (int k = 0; k < n->n_inputs; k++)
            xf_dn_md(c, &in[k].shape, xf_dn_value_layout(c, n->outputs[0]), &want[k]);
        if (dnnl_concat_primitive_desc_create(&like_dst, &dst, n->n_inputs, axis, want, NULL, c->engine) ==
                dnnl_success &&
            !xf_dn_pd_is_ref(like_dst)) {
            dnnl_primitive_desc_destroy(pd);
            pd = like_dst;
        } else {
            if (like_dst)
                dnnl_primitive_desc_destroy(like_dst);
            for (int k = 0; k < n->n_inputs; k++)
                want[k] = src[k];
        }
    }
    for (int k = 0; k < n->n_inputs && s == XF_OK; k++)
        s = xf_dn_bind(c, n, st, DNNL_ARG_MULTIPLE_SRC + k, k, &src[k], &want[k], err);
    free(src);
    if (s == XF_OK)
        s = xf_dn_bind(c, n, st, DNNL_ARG_DST, -1, &dst, &dst, err);
    return pd ? xf_dn_finish_or_free(n, st, pd, s, err) : s;
}

const xf_dn_handler xf_dn_concat_handler = {concat_handles, concat_native_ok, concat_prepare, NULL};

/* ---------------------------------------------------------------- Split */

static bool split_handles(const xf_graph *g, const xf_node *n)
{
    const xf_shape *x = vshape(g, n->inputs[0]);
    if (!xf_dn_is_f32(g, n->inputs[0]) || x->ndim < 1 || x->ndim > DNNL_MAX_NDIMS ||
        xf_rt_axis(n->attrs.axis, x->ndim) < 0)
        return false;
    for (int k = 0; k < n->n_outputs; k++)
        if (n->outputs[k] < 0 || !xf_dn_is_f32(g, n->outputs[k]) || xf_shape_numel(vshape(g, n->outputs[k])) <= 0)
            return false;
    return true;
}

/* Splitting channels into parts of whole blocks (16 covers every native
 * layout) keeps each part's blocks whole. */
static bool split_native_ok(const xf_graph *g, const xf_node *n, int k)
{
    const xf_shape *x = vshape(g, n->inputs[0]);
    if (k != 0 || x->ndim != 4 || xf_rt_axis(n->attrs.axis, 4) != 1)
        return false;
    for (int j = 0; j < n->n_outputs; j++)
        if (vshape(g, n->outputs[j])->dims[1] % 16)
            return false;
    return true;
}

/* Each part is one reorder from a sub-memory of the input, as stored, into
 * the part's own layout. */
static xf_status split_prepare(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                               const xf_tensor_view *out, xf_dn_node *st, xf_error *err)
{
    int rank = in[0].shape.ndim, axis = xf_rt_axis(n->attrs.axis, rank);
    dnnl_memory_desc_t whole;
    xf_dn_operand_md(c, n, 0, &in[0].shape, &whole);
    dnnl_dims_t offsets = {0};
    xf_status s = XF_OK;
    for (int k = 0; k < n->n_outputs && s == XF_OK; k++) {
        dnnl_memory_desc_t part, dst;
        dnnl_dims_t dims;
        for (int d = 0; d < rank; d++)
            dims[d] = out[k].shape.dims[d];
        XF_DN_TRY(err, n, dnnl_memory_desc_init_submemory(&part, &whole, dims, offsets));
        xf_dn_operand_md(c, n, -k - 1, &out[k].shape, &dst);
        s = xf_dn_bind_part(c, n, st, k, &part, &dst, err);
        offsets[axis] += dims[axis];
    }
    return s;
}

const xf_dn_handler xf_dn_split_handler = {split_handles, split_native_ok, split_prepare, NULL};
