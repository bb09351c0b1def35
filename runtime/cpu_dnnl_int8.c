/* The ops of quantized models.  The integer products on oneDNN's int8
 * primitives: MatMulInteger, QLinearMatMul and ONNX Runtime's QGemm (alpha
 * 1, A not transposed, its int32 C one per column) as matmul, ConvInteger
 * and QLinearConv as convolution (MatMulIntegerToFloat and
 * DynamicQuantizeMatMul, at the end, as a matmul of the int32 sums then a
 * loop of this backend's own, and so QLinearMatMul and MatMulInteger of a
 * constant matrix B whose zero points the matmul does not take: per
 * column, or uint8 without one), in the forms where oneDNN 2.6 computes
 * what ONNX (ONNX Runtime) specifies:
 *   - x (A) uint8 or int8 with one zero point, a constant or a value
 *     computed at run time (DynamicQuantizeLinear's);
 *   - w (B) int8 with zero points that are all 0 (or absent); a matrix
 *     product's B may also have one zero point of any value, and a
 *     convolution's w one or one per output channel, and be uint8
 *     constants (the convolution sums (x - x_zp) (w - d), a loop after it
 *     subtracts d times the windows' sums of x - x_zp, then requantizes
 *     QLinearConv's: xf_dn_qconv_fix_prepare);
 *   - the QLinear ops' scales constant floats, x's and y's one each, w's
 *     one or one per output channel (column of B); y's one zero point;
 *     QLinearConv's int32 bias.
 * The int32 sums are exact (wrapping aside).  The QLinear ops requantize
 * with the scale cpu_ref computes, x_scale * w_scale / y_scale in float,
 * applied to the sum converted to float as cpu_ref does.  oneDNN adds y's
 * zero point to that float before it rounds, where ONNX rounds first, so
 * a product within a float rounding of a half could round the other way
 * (6 of the 393,216 outputs of a QLinearMatMul in a model quantized by
 * ONNX Runtime were 1 off); a round-half-to-even post-op before the zero
 * point makes them cpu_ref's.  oneDNN converts the sum and QLinearConv's
 * bias to float apart and adds them, which is the same below 2^24 and a
 * float rounding apart beyond, where an output may still be 1 off
 * (test_cpu_int8 counts those in its random cases: none).  QGemm's C is
 * added to the int32 sums, as ONNX Runtime adds it, in a loop of this
 * backend's own after oneDNN's matmul (a classifier's sums pass 2^24).
 * Zero points per row of A, those per column of a B computed at run time
 * or of more than 2 dims, uint8 weights computed at run time and (but in
 * MatMulIntegerToFloat's loop) scales computed at run time stay on cpu_ref:
 * oneDNN 2.6 takes zero points per tensor only (none for a
 * convolution's weights), and its int8 convolution output scales only
 * when the primitive is created (its matmul takes them at run time only
 * in a slower gemm).
 * Without VNNI oneDNN's int8 kernels add pairs of uint8 x int8 products in
 * saturating int16 (vpmaddubsw) before they reach the int32 sum, which
 * differs from ONNX when both factors are large; with VNNI (vpdpbusd)
 * every product is summed exactly.  So these paths need AVX-512 VNNI
 * (oneDNN 2.6's AVX2 VNNI kernels are not relied on).
 * Around them, DynamicQuantizeLinear, QuantizeLinear to uint8 and
 * DequantizeLinear of 8-bit integers (one scale) run in loops of this
 * backend's own with cpu_ref's arithmetic, and a Cast of integers to float
 * as a reorder. */
#include "cpu_dnnl.h"

#include <stdlib.h>

bool xf_dn_exact_int8(void)
{
    return (dnnl_get_effective_cpu_isa() & dnnl_cpu_isa_avx512_core_vnni & ~dnnl_cpu_isa_avx512_core) != 0;
}

/* Which input of the node holds each operand (-1: the op has none); x is
 * input 0. */
typedef struct qroles {
    int x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, bias;
} qroles;

static qroles roles_of(xf_op op)
{
    switch (op) {
    case XF_OP_QLINEAR_MATMUL: return (qroles){1, 2, 3, 4, 5, 6, 7, -1};
    case XF_OP_QLINEAR_CONV: return (qroles){1, 2, 3, 4, 5, 6, 7, 8};
    case XF_OP_MS_QGEMM: return (qroles){1, 2, 3, 4, 5, 7, 8, 6};
    case XF_OP_MS_QATTENTION: return (qroles){3, 6, 1, 4, 7, -1, -1, -1};
    default: return (qroles){-1, 2, 1, -1, 3, -1, -1, -1}; /* MatMulInteger, ConvInteger */
    }
}

static dnnl_data_type_t dn_type(xf_dtype t)
{
    switch (t) {
    case XF_DT_UINT8: return dnnl_u8;
    case XF_DT_INT8: return dnnl_s8;
    case XF_DT_INT32: return dnnl_s32;
    default: return dnnl_data_type_undef;
    }
}

/* Input k of n's value, or NULL when absent. */
static const xf_value *value_at(const xf_graph *g, const xf_node *n, int k)
{
    int v = xf_dn_input(n, k);
    return v >= 0 ? &g->values[v] : NULL;
}

/* A constant whose elements are all 0. */
static bool zeros(const xf_value *v)
{
    const xf_tensor *t = v->init;
    if (!t)
        return false;
    for (int64_t i = 0; i < xf_shape_numel(&t->shape); i++)
        if (xf_rt_load_i64(t->dtype, t->data, i) != 0)
            return false;
    return true;
}

static bool single(const xf_value *v) { return !v || xf_shape_numel(&v->shape) == 1; }

/* Whether n's weights are uint8 (MatMulInteger, QLinearMatMul): oneDNN
 * reads them as int8, b - 128 (the bytes with the sign bit flipped), with
 * the zero point less 128, which leaves every b - zero point as it was. */
static bool u8_weights(const xf_graph *g, const xf_node *n)
{
    const xf_value *w = value_at(g, n, roles_of(n->op).w);
    return (n->op == XF_OP_MATMUL_INTEGER || n->op == XF_OP_QLINEAR_MATMUL) && w && w->dtype == XF_DT_UINT8;
}

/* Whether ConvInteger or QLinearConv n's weights need the correction of
 * xf_dn_qconv_fix_prepare: uint8 constants (their bytes' sign bit
 * flipped, read as int8), or a weight zero point that may not be 0, one
 * or one per output channel.  oneDNN 2.6's convolution takes no zero
 * point for its weights. */
static bool qconv_w_zp(const xf_graph *g, const xf_node *n)
{
    const xf_value *w = value_at(g, n, roles_of(n->op).w), *zp = value_at(g, n, roles_of(n->op).w_zp);
    if ((n->op != XF_OP_CONV_INTEGER && n->op != XF_OP_QLINEAR_CONV) || !w || w->shape.ndim < 1 ||
        (zp && !single(zp) && xf_shape_numel(&zp->shape) != w->shape.dims[0]))
        return false;
    return w->dtype == XF_DT_UINT8 ? w->init != NULL : zp && !zeros(zp);
}

/* Whether the zero point in input k takes part: present, and not a
 * constant of zeros (or uint8 weights' zero point, less 128 for oneDNN);
 * a convolution's weights' never (qconv_w_zp). */
static bool zp_used(const xf_graph *g, const xf_node *n, int k)
{
    const xf_value *v = value_at(g, n, k);
    if (k == roles_of(n->op).w_zp && qconv_w_zp(g, n))
        return false;
    return v && (!zeros(v) || (k == roles_of(n->op).w_zp && u8_weights(g, n)));
}

/* A constant float scale of one element or one per output channel. */
static bool const_scales(const xf_value *v, int64_t channels)
{
    int64_t count = v ? xf_shape_numel(&v->shape) : 0;
    return v && v->init && v->dtype == XF_DT_FLOAT && (count == 1 || count == channels);
}

/* The checks both products share: the data types, the zero points (w's
 * may be a nonzero one when w_zp_ok) and the scales, of `channels` output
 * channels. */
static bool q_operands_ok(const xf_graph *g, const xf_node *n, int64_t channels, bool w_zp_ok)
{
    qroles r = roles_of(n->op);
    bool q = value_at(g, n, r.y_scale) != NULL;
    /* without y's scale: MatMulInteger's int32 sums, QGemm's scaled floats */
    xf_dtype plain = n->op == XF_OP_MS_QGEMM ? XF_DT_FLOAT : XF_DT_INT32;
    const xf_value *x = value_at(g, n, 0), *w = value_at(g, n, r.w), *w_zp = value_at(g, n, r.w_zp);
    const xf_value *y = n->n_outputs == 1 && n->outputs[0] >= 0 ? &g->values[n->outputs[0]] : NULL;
    if (!xf_dn_exact_int8() || !x || !w || !y || xf_shape_numel(&x->shape) <= 0 || xf_shape_numel(&w->shape) <= 0 ||
        xf_shape_numel(&y->shape) <= 0)
        return false;
    /* uint8 weights as int8 (u8_weights): the products' zero point must be given, one for all */
    bool u8_ok = (u8_weights(g, n) && w_zp && single(w_zp)) || qconv_w_zp(g, n);
    if ((x->dtype != XF_DT_UINT8 && x->dtype != XF_DT_INT8) || (w->dtype != XF_DT_INT8 && !u8_ok) ||
        (q ? y->dtype != XF_DT_UINT8 && y->dtype != XF_DT_INT8 : y->dtype != plain))
        return false;
    if (!single(value_at(g, n, r.x_zp)) || !single(value_at(g, n, r.y_zp)) ||
        !(!w_zp || zeros(w_zp) || (w_zp_ok && single(w_zp)) || qconv_w_zp(g, n)))
        return false;
    return r.x_scale < 0 || (const_scales(value_at(g, n, r.x_scale), 1) &&
                             (!q || const_scales(value_at(g, n, r.y_scale), 1)) &&
                             const_scales(value_at(g, n, r.w_scale), channels));
}

/* The attribute of integer product n: its zero points, read at run time,
 * and (QLinear ops, QGemm; when scaled) the output scales x_scale *
 * w_scale / y_scale (QGemm without y_scale: x_scale * w_scale), one or one
 * per index of the output's dimension channel_dim, and the rounding before
 * y's zero point.  Not scaled: x's and w's zero points only, for int32
 * sums that a loop of this backend's own then scales. */
static xf_status q_attr_of(const xf_graph *g, const xf_node *n, const xf_tensor_view *in, int channel_dim,
                           bool scaled, dnnl_primitive_attr_t *attr, xf_error *err)
{
    qroles r = roles_of(n->op);
    XF_DN_TRY(err, n, dnnl_primitive_attr_create(attr));
    const int32_t runtime = DNNL_RUNTIME_S32_VAL;
    const int zp_in[3] = {r.x_zp, r.w_zp, r.y_zp}, zp_arg[3] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST};
    dnnl_status_t s = dnnl_success;
    for (int i = 0; i < (scaled ? 3 : 2) && s == dnnl_success; i++)
        if (zp_used(g, n, zp_in[i]))
            s = dnnl_primitive_attr_set_zero_points(*attr, zp_arg[i], 1, 0, &runtime);
    bool has_y_scale = scaled && r.y_scale >= 0 && r.y_scale < n->n_inputs && xf_rt_present(&in[r.y_scale]);
    if (s == dnnl_success && scaled && r.x_scale >= 0) {
        const xf_tensor_view *ws = &in[r.w_scale];
        int64_t count = xf_rt_numel(ws);
        float *scales = malloc(sizeof *scales * (size_t)count);
        if (!scales) {
            dnnl_primitive_attr_destroy(*attr);
            return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        }
        /* the expression cpu_ref evaluates, in float */
        float x_scale = *(const float *)in[r.x_scale].data;
        for (int64_t i = 0; i < count; i++)
            scales[i] = has_y_scale ? x_scale * ((const float *)ws->data)[i] / *(const float *)in[r.y_scale].data
                                    : x_scale * ((const float *)ws->data)[i];
        s = dnnl_primitive_attr_set_output_scales(*attr, count, count > 1 ? 1 << channel_dim : 0, scales);
        free(scales);
    }
    /* rounded before y's zero point is added, as ONNX does */
    if (s == dnnl_success && has_y_scale && zp_used(g, n, r.y_zp)) {
        dnnl_post_ops_t po = NULL;
        s = dnnl_post_ops_create(&po);
        if (s == dnnl_success)
            s = dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_round, 0.0f, 0.0f);
        if (s == dnnl_success)
            s = dnnl_primitive_attr_set_post_ops(*attr, po);
        dnnl_post_ops_destroy(po);
    }
    if (s != dnnl_success) {
        dnnl_primitive_attr_destroy(*attr);
        return xf_dn_fail(err, n, "int8 attribute", s);
    }
    return XF_OK;
}

/* Binds the zero points q_attr_of declared. */
static xf_status bind_zero_points(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, xf_dn_node *st, bool scaled,
                                  xf_error *err)
{
    qroles r = roles_of(n->op);
    const int zp_in[3] = {r.x_zp, r.w_zp, r.y_zp}, zp_arg[3] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST};
    xf_status s = XF_OK;
    for (int i = 0; i < (scaled ? 3 : 2) && s == XF_OK; i++)
        if (zp_used(g, n, zp_in[i])) {
            s = xf_dn_bind_zero_point(c, n, st, zp_arg[i], zp_in[i], err);
            if (s == XF_OK && i == 1 && u8_weights(g, n))
                st->zp[st->n_zp - 1].offset = 128;
        }
    return s;
}

/* ---------------------------------------------------------------- MatMulInteger, QLinearMatMul */

static bool qmatmul_handles(const xf_graph *g, const xf_node *n)
{
    qroles r = roles_of(n->op);
    if (n->n_outputs != 1 || n->outputs[0] < 0 || !value_at(g, n, 0) || !value_at(g, n, r.w))
        return false;
    const xf_shape *a = &value_at(g, n, 0)->shape, *b = &value_at(g, n, r.w)->shape;
    const xf_shape *y = &g->values[n->outputs[0]].shape;
    if (a->ndim < 2 || b->ndim < 2 || y->ndim > DNNL_MAX_NDIMS || !xf_dn_batch_ok(a, y) || !xf_dn_batch_ok(b, y) ||
        !q_operands_ok(g, n, y->dims[y->ndim - 1], true))
        return false;
    /* one scale per column of B, and B's batch dims 1 (numel N) */
    xf_qparam_form form;
    char why[256];
    const xf_value *ws = value_at(g, n, r.w_scale);
    return !ws || xf_qmatmul_param(b, &ws->shape, true, &form, why, sizeof why);
}

/* The int8 matmul of n from the descriptions of A (input 0), B (input
 * r.w), the int32 bias (input bias_in, -1: none) and Y: constant weights
 * are reordered once into the layout oneDNN prefers.  With sums, Y is
 * the int32 sums (zero points applied, not scaled) written there. */
void xf_dn_flip_bytes(const uint8_t *restrict b, int8_t *restrict to, int64_t count)
{
    for (int64_t i = 0; i < count; i++)
        to[i] = (int8_t)(b[i] ^ 0x80u);
}

/* Before each run: computed uint8 weights into the node's int8 copy. */
static void flip_weights(const xf_node *n, const xf_dn_node *st, const xf_tensor_view *in, const xf_tensor_view *out)
{
    (void)out;
    const xf_tensor_view *w = &in[roles_of(n->op).w];
    xf_dn_flip_bytes(w->data, (int8_t *)st->scratch, xf_rt_numel(w));
}

/* Binds n's weights: constant ones reordered once into the layout oneDNN
 * prefers (want), computed ones as stored; uint8 ones through the node's
 * int8 copy (u8_weights). */
static xf_status bind_weights(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                              const dnnl_memory_desc_t *b, const dnnl_memory_desc_t *want, xf_dn_node *st,
                              xf_error *err)
{
    const xf_tensor_view *w = &in[roles_of(n->op).w];
    bool const_b = g->values[n->inputs[roles_of(n->op).w]].init && w->data;
    if (!u8_weights(g, n))
        return const_b ? xf_dn_bind_const(c, n, st, DNNL_ARG_WEIGHTS, w->data, b, want, err)
                       : xf_dn_bind(c, n, st, DNNL_ARG_WEIGHTS, roles_of(n->op).w, b, b, err);
    int64_t count = xf_rt_numel(w);
    int8_t *flipped = malloc((size_t)(count > 0 ? count : 1));
    if (!flipped)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in %s", xf_op_name(n->op));
    if (!const_b) {
        free(st->scratch);
        st->scratch = (float *)(void *)flipped;
        st->pre = flip_weights;
        return xf_dn_bind_scratch(c, n, st, DNNL_ARG_WEIGHTS, b, flipped, err);
    }
    xf_dn_flip_bytes(w->data, flipped, count);
    /* the node's own copy, never shared with another node's constants */
    free(st->folded_b);
    st->folded_b = (float *)(void *)flipped;
    xf_status s = xf_dn_bind_const(c, n, st, DNNL_ARG_WEIGHTS, flipped, b, want, err);
    st->folded_b = NULL;
    free(flipped);
    return s;
}

static xf_status qmatmul_build(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                               const dnnl_memory_desc_t *a, const dnnl_memory_desc_t *b, int bias_in,
                               const dnnl_memory_desc_t *bias, const dnnl_memory_desc_t *y, int32_t *sums,
                               xf_dn_node *st, xf_error *err)
{
    qroles r = roles_of(n->op);
    bool const_b = g->values[n->inputs[r.w]].init && in[r.w].data;
    dnnl_memory_desc_t b_any = *b;
    if (const_b)
        dnnl_memory_desc_init_by_tag(&b_any, b->ndims, b->dims, dnnl_s8, dnnl_format_tag_any);
    dnnl_matmul_desc_t d;
    XF_DN_TRY(err, n, dnnl_matmul_desc_init(&d, a, &b_any, bias_in >= 0 ? bias : NULL, y));
    dnnl_primitive_attr_t attr;
    xf_status s = q_attr_of(g, n, in, y->ndims - 1, !sums, &attr, err);
    if (s != XF_OK)
        return s;
    dnnl_primitive_desc_t pd;
    int64_t rows = 1; /* the source's rows: its dims but the last */
    for (int k = 0; k + 1 < a->ndims; k++)
        rows = a->dims[k] < 0 ? 0 : rows * a->dims[k];
    s = xf_dn_pd_create_int8(c, n, &d, attr, rows, &pd, err);
    if (s != XF_OK)
        return s;
    s = bind_weights(c, g, n, in, b, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), st, err);
    if (s == XF_OK)
        s = xf_dn_bind(c, n, st, DNNL_ARG_SRC, 0, a, a, err);
    if (s == XF_OK && bias_in >= 0)
        s = xf_dn_bind(c, n, st, DNNL_ARG_BIAS, bias_in, bias, bias, err);
    if (s == XF_OK)
        s = sums ? xf_dn_bind_scratch(c, n, st, DNNL_ARG_DST, y, sums, err)
                 : xf_dn_bind(c, n, st, DNNL_ARG_DST, -1, y, y, err);
    if (s != XF_OK) {
        dnnl_primitive_desc_destroy(pd);
        return s;
    }
    s = xf_dn_finish(n, st, pd, err);
    return s == XF_OK ? bind_zero_points(c, g, n, st, !sums, err) : s;
}

static xf_status qmatmul_prepare(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                                 const xf_tensor_view *out, xf_dn_node *st, xf_error *err)
{
    qroles r = roles_of(n->op);
    xf_tensor_view in2[8], out2[1];
    if (n->n_inputs <= 8 && xf_dn_matmul_as_rows(in, n->n_inputs, r.w, out, -1, in2, out2)) {
        in = in2;
        out = out2;
    }
    int rank = out[0].shape.ndim;
    dnnl_memory_desc_t a, b, y;
    xf_dn_md_rank(&in[0].shape, rank, dn_type(in[0].dtype), &a);
    xf_dn_md_rank(&in[r.w].shape, rank, dnnl_s8, &b);
    xf_dn_md_plain(&out[0].shape, dn_type(out[0].dtype), &y);
    return qmatmul_build(c, g, n, in, &a, &b, -1, NULL, &y, NULL, st, err);
}

const xf_dn_handler xf_dn_qmatmul_handler = {qmatmul_handles, NULL, qmatmul_prepare, NULL};

/* ---------------------------------------------------------------- QGemm */

/* ONNX Runtime's QGemm as a matmul: alpha 1, A not transposed, C (int32
 * sums, added before the scale as ONNX Runtime adds them) one per column;
 * the operands as q_operands_ok takes them. */
static bool qgemm_handles(const xf_graph *g, const xf_node *n)
{
    const xf_value *a = value_at(g, n, 0), *b = value_at(g, n, 3), *c = value_at(g, n, 6);
    if (n->attrs.alpha != 1.0f || n->attrs.trans_a || !a || !b || n->n_outputs != 1 || n->outputs[0] < 0 ||
        (value_at(g, n, 7) != NULL) != (value_at(g, n, 8) != NULL))
        return false;
    const xf_shape *y = &g->values[n->outputs[0]].shape;
    if (a->shape.ndim != 2 || b->shape.ndim != 2 || y->ndim != 2)
        return false;
    if (c && (c->dtype != XF_DT_INT32 || xf_shape_numel(&c->shape) != y->dims[1] ||
              !(c->shape.ndim == 1 || (c->shape.ndim == 2 && c->shape.dims[0] == 1))))
        return false;
    return q_operands_ok(g, n, y->dims[1], true);
}

/* C added to the int32 sums oneDNN wrote into scratch, then scaled (the
 * scales per column in folded_w) and rounded as cpu_ref does: ONNX
 * Runtime adds C before it scales, where oneDNN would add it in float, a
 * rounding apart once a sum passes 2^24. */
static xf_status qgemm_post(const xf_node *n, const xf_dn_node *st, const xf_tensor_view *in,
                            const xf_tensor_view *out, xf_error *err)
{
    (void)err;
    int64_t m = out[0].shape.dims[0], cols = out[0].shape.dims[1];
    const int32_t *p = (const int32_t *)st->scratch, *cv = in[6].data;
    const float *scale = st->folded_w;
    xf_dtype t = out[0].dtype;
    float zp = t != XF_DT_FLOAT && n->n_inputs > 8 && xf_rt_present(&in[8])
                   ? (float)xf_rt_load_i64(in[8].dtype, in[8].data, 0)
                   : 0.0f;
    XF_OMP_FOR(m * cols >= 1 << 16)
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < cols; j++) {
            float v = (float)(int32_t)((uint32_t)p[i * cols + j] + (uint32_t)cv[j]) * scale[j];
            if (t == XF_DT_FLOAT)
                ((float *)out[0].data)[i * cols + j] = v;
            else if (t == XF_DT_UINT8)
                ((uint8_t *)out[0].data)[i * cols + j] = v == v ? (uint8_t)xf_rt_quantize_round(v, zp, t) : 0;
            else
                ((int8_t *)out[0].data)[i * cols + j] = v == v ? (int8_t)xf_rt_quantize_round(v, zp, t) : 0;
        }
    return XF_OK;
}

static xf_status qgemm_prepare(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                               const xf_tensor_view *out, xf_dn_node *st, xf_error *err)
{
    int64_t k = in[0].shape.dims[1], rows = out[0].shape.dims[0], cols = out[0].shape.dims[1];
    bool tb = n->attrs.trans_b != 0, has_c = n->n_inputs > 6 && xf_rt_present(&in[6]);
    dnnl_memory_desc_t a, b, y;
    xf_dn_md_plain(&in[0].shape, dn_type(in[0].dtype), &a);
    dnnl_dims_t bd = {k, cols}, bs = {tb ? 1 : cols, tb ? k : 1};
    dnnl_memory_desc_init_by_strides(&b, 2, bd, dnnl_s8, bs);
    if (!has_c) {
        xf_dn_md_plain(&out[0].shape, out[0].dtype == XF_DT_FLOAT ? dnnl_f32 : dn_type(out[0].dtype), &y);
        return qmatmul_build(c, g, n, in, &a, &b, -1, NULL, &y, NULL, st, err);
    }
    free(st->folded_w);
    free(st->scratch);
    st->folded_w = malloc(sizeof(float) * (size_t)cols);
    st->scratch = malloc(sizeof(int32_t) * (size_t)(rows * cols));
    if (!st->folded_w || !st->scratch)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in %s", xf_op_name(n->op));
    /* the scales cpu_ref computes, in float */
    bool y_scale = n->n_inputs > 7 && xf_rt_present(&in[7]);
    int64_t ns = xf_rt_numel(&in[4]);
    for (int64_t j = 0; j < cols; j++) {
        float v = *(const float *)in[1].data * ((const float *)in[4].data)[ns > 1 ? j : 0];
        st->folded_w[j] = y_scale ? v / *(const float *)in[7].data : v;
    }
    dnnl_memory_desc_init_by_tag(&y, 2, (dnnl_dims_t){rows, cols}, dnnl_s32, dnnl_ab);
    st->post = qgemm_post;
    return qmatmul_build(c, g, n, in, &a, &b, -1, NULL, &y, (int32_t *)st->scratch, st, err);
}

const xf_dn_handler xf_dn_ms_qgemm_handler = {qgemm_handles, NULL, qgemm_prepare, NULL};

/* ---------------------------------------------------------------- QAttention's projection */

bool xf_dn_qattention_sums_ok(const xf_graph *g, const xf_node *n)
{
    const xf_value *x = value_at(g, n, 0), *w = value_at(g, n, 1);
    return xf_dn_exact_int8() && x && w && w->init && w->dtype == XF_DT_INT8 && x->shape.ndim == 3 &&
           w->shape.ndim == 2 && single(value_at(g, n, 6)) && (!value_at(g, n, 7) || zeros(value_at(g, n, 7)));
}

xf_status xf_dn_qattention_sums(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                                xf_dn_node *st, xf_error *err)
{
    int64_t din = in[1].shape.dims[0], cols = in[1].shape.dims[1], rows = xf_rt_numel(&in[0]) / din;
    free(st->scratch);
    st->scratch = malloc(sizeof(int32_t) * (size_t)(rows * cols + 1));
    if (!st->scratch)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in %s", xf_op_name(n->op));
    dnnl_memory_desc_t a, b, y;
    dnnl_memory_desc_init_by_tag(&a, 2, (dnnl_dims_t){rows, din}, dn_type(in[0].dtype), dnnl_ab);
    dnnl_memory_desc_init_by_tag(&b, 2, (dnnl_dims_t){din, cols}, dnnl_s8, dnnl_ab);
    dnnl_memory_desc_init_by_tag(&y, 2, (dnnl_dims_t){rows, cols}, dnnl_s32, dnnl_ab);
    (void)g;
    return qmatmul_build(c, g, n, in, &a, &b, -1, NULL, &y, (int32_t *)st->scratch, st, err);
}

/* ---------------------------------------------------------------- ConvInteger, QLinearConv */

static bool qconv_handles(const xf_graph *g, const xf_node *n)
{
    qroles r = roles_of(n->op);
    xf_dn_conv_io io = {.w = r.w, .bias = r.bias};
    if (!xf_dn_conv_geometry_ok(g, n, &io))
        return false;
    const xf_value *bias = value_at(g, n, r.bias);
    return q_operands_ok(g, n, value_at(g, n, r.w)->shape.dims[0], false) && (!bias || bias->dtype == XF_DT_INT32);
}

static xf_status qconv_prepare(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                               const xf_tensor_view *out, xf_dn_node *st, xf_error *err)
{
    qroles r = roles_of(n->op);
    xf_dn_conv_io io = {r.w, r.bias, dn_type(in[0].dtype), dnnl_s8, dnnl_s32, dn_type(out[0].dtype), NULL};
    dnnl_primitive_attr_t attr;
    /* corrected: the int32 sums, scaled after (QLinearConv) */
    bool fix = qconv_w_zp(g, n);
    xf_status s = q_attr_of(g, n, in, 1, !fix, &attr, err);
    if (s != XF_OK)
        return s;
    if (fix)
        s = xf_dn_qconv_fix_prepare(c, n, in, out, st, &io, err);
    if (s == XF_OK)
        s = xf_dn_conv_build(c, g, n, in, out, st, &io, attr, err);
    dnnl_primitive_attr_destroy(attr);
    return s == XF_OK ? bind_zero_points(c, g, n, st, !fix, err) : s;
}

/* x may be stored nhwc, as the convolution before it wrote it. */
static bool qconv_native_input(const xf_graph *g, const xf_node *n, int k) { return k == 0; }

const xf_dn_handler xf_dn_qconv_handler = {qconv_handles, qconv_native_input, qconv_prepare, NULL};

/* ---------------------------------------------------------------- quantizing and dequantizing loops */

enum { LANES = 16 }; /* the elements of a block the compiler vectorizes */

static bool dynamic_quantize_handles(const xf_graph *g, const xf_node *n)
{
    return xf_dn_is_f32(g, n->inputs[0]) && n->n_outputs >= 1 && n->outputs[0] >= 0 &&
           g->values[n->outputs[0]].dtype == XF_DT_UINT8;
}

/* cpu_ref's DynamicQuantizeLinear (xf_ref_dynamic_quantize: the same range
 * with NaNs skipped, scale, zero point and rounding) in loops over blocks
 * of 16 elements, which the compiler vectorizes. */
static xf_status dynamic_quantize_run(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                                      xf_error *err)
{
    float lo, hi, scale, zp;
    xf_dn_range_of(in[0].data, xf_rt_numel(&in[0]), &lo, &hi);
    xf_rt_dynamic_qparams(n, out, lo, hi, &scale, &zp);
    xf_dn_quantize_all(in[0].data, out[0].data, xf_rt_numel(&in[0]), scale, zp);
    return XF_OK;
}

static xf_status dynamic_quantize_prepare(xf_dn_ctx *c, const xf_graph *g, const xf_node *n,
                                          const xf_tensor_view *in, const xf_tensor_view *out, xf_dn_node *st,
                                          xf_error *err)
{
    st->kernel = dynamic_quantize_run;
    return XF_OK;
}

const xf_dn_handler xf_dn_dynamic_quantize_handler = {dynamic_quantize_handles, NULL, dynamic_quantize_prepare,
                                                       NULL};

/* QuantizeLinear of float to uint8 with one scale and zero point (what
 * quantized models feed their first integer op with), as cpu_ref computes
 * it, in the same loop. */
static bool quantize_handles(const xf_graph *g, const xf_node *n)
{
    const xf_value *scale = value_at(g, n, 1);
    return xf_dn_is_f32(g, n->inputs[0]) && scale && scale->dtype == XF_DT_FLOAT &&
           xf_shape_numel(&scale->shape) == 1 && single(value_at(g, n, 2)) && n->n_outputs == 1 &&
           n->outputs[0] >= 0 && g->values[n->outputs[0]].dtype == XF_DT_UINT8;
}

static xf_status quantize_run(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    bool has_zp = n->n_inputs > 2 && xf_rt_present(&in[2]);
    float zp = has_zp ? (float)xf_rt_load_i64(in[2].dtype, in[2].data, 0) : 0.0f;
    xf_dn_quantize_all(in[0].data, out[0].data, xf_rt_numel(&in[0]), *(const float *)in[1].data, zp);
    return XF_OK;
}

static xf_status quantize_prepare(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                                  const xf_tensor_view *out, xf_dn_node *st, xf_error *err)
{
    st->kernel = quantize_run;
    return XF_OK;
}

const xf_dn_handler xf_dn_quantize_handler = {quantize_handles, NULL, quantize_prepare, NULL};

/* DequantizeLinear of uint8 or int8 with one scale and zero point, (x -
 * zp) * scale in float as cpu_ref computes it; int8 is read as uint8 with
 * its sign bit flipped, less 128, so that one loop serves both. */
static bool dequantize_handles(const xf_graph *g, const xf_node *n)
{
    const xf_value *x = value_at(g, n, 0), *scale = value_at(g, n, 1), *zp = value_at(g, n, 2);
    if (!x || (x->dtype != XF_DT_UINT8 && x->dtype != XF_DT_INT8) || xf_shape_numel(&x->shape) <= 0 || !scale ||
        scale->dtype != XF_DT_FLOAT || n->n_outputs != 1 || !xf_dn_is_f32(g, n->outputs[0]) ||
        n->attrs.block_size != 0)
        return false;
    if (xf_shape_numel(&scale->shape) == 1 && single(zp))
        return true;
    /* per axis: one scale (and zero point) per index of the axis */
    xf_quant_layout l;
    char why[160];
    return scale->shape.ndim == 1 && (!zp || zp->dtype == x->dtype) &&
           xf_quant_layout_make(&x->shape, &scale->shape, zp ? &zp->shape : NULL, n->attrs.axis, 0, &l, why,
                                sizeof why);
}

static xf_status dequantize_run(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                                xf_error *err)
{
    bool has_zp = n->n_inputs > 2 && xf_rt_present(&in[2]), s8 = in[0].dtype == XF_DT_INT8;
    int64_t count = xf_rt_numel(&in[1]);
    if (count == 1) {
        int32_t zp = has_zp ? (int32_t)xf_rt_load_i64(in[2].dtype, in[2].data, 0) : 0;
        xf_dn_dequantize_all(in[0].data, out[0].data, xf_rt_numel(&in[0]), s8 ? 0x80 : 0, zp + (s8 ? 128 : 0),
                             *(const float *)in[1].data);
        return XF_OK;
    }
    xf_quant_layout l;
    char why[160];
    if (!xf_quant_layout_make(&in[0].shape, &in[1].shape, has_zp ? &in[2].shape : NULL, n->attrs.axis, 0, &l, why,
                              sizeof why))
        return xf_rt_bad_node(err, n, "%s", why);
    int32_t *offset = malloc(sizeof *offset * (size_t)count);
    if (!offset)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    for (int64_t c = 0; c < count; c++)
        offset[c] = (has_zp ? (int32_t)xf_rt_load_i64(in[2].dtype, in[2].data, c) : 0) + (s8 ? 128 : 0);
    xf_dn_dequantize_axis(in[0].data, out[0].data, l.outer, l.dim, l.inner, s8 ? 0x80 : 0, offset, in[1].data);
    free(offset);
    return XF_OK;
}

static xf_status dequantize_prepare(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                                    const xf_tensor_view *out, xf_dn_node *st, xf_error *err)
{
    st->kernel = dequantize_run;
    return XF_OK;
}

const xf_dn_handler xf_dn_dequantize_handler = {dequantize_handles, NULL, dequantize_prepare, NULL};

/* ---------------------------------------------------------------- Cast of integers to float */

/* A MatMulInteger's int32 sums (or 8-bit integers) to float, as a reorder:
 * oneDNN converts int32 to the nearest float, ties to even, as C does. */
/* bool's bytes, 0 and 1, are u8's */
static dnnl_data_type_t from_type(xf_dtype t) { return t == XF_DT_BOOL ? dnnl_u8 : dn_type(t); }

static bool int_to_float_handles(const xf_graph *g, const xf_node *n)
{
    const xf_value *x = value_at(g, n, 0);
    return x && from_type(x->dtype) != dnnl_data_type_undef && xf_shape_numel(&x->shape) > 0 &&
           x->shape.ndim <= DNNL_MAX_NDIMS && n->n_outputs == 1 && xf_dn_is_f32(g, n->outputs[0]);
}

static xf_status int_to_float_prepare(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                                      const xf_tensor_view *out, xf_dn_node *st, xf_error *err)
{
    dnnl_memory_desc_t src, dst;
    xf_dn_md_plain(&in[0].shape, from_type(in[0].dtype), &src);
    xf_dn_operand_md(c, n, -1, &out[0].shape, &dst);
    dnnl_primitive_desc_t pd;
    XF_DN_TRY(err, n, dnnl_reorder_primitive_desc_create(&pd, &src, c->engine, &dst, c->engine, NULL));
    xf_status s = xf_dn_bind(c, n, st, DNNL_ARG_FROM, 0, &src, &src, err);
    if (s == XF_OK)
        s = xf_dn_bind(c, n, st, DNNL_ARG_TO, -1, &dst, &dst, err);
    if (s != XF_OK) {
        dnnl_primitive_desc_destroy(pd);
        return s;
    }
    return xf_dn_finish(n, st, pd, err);
}

const xf_dn_handler xf_dn_int_to_float_handler = {int_to_float_handles, NULL, int_to_float_prepare, NULL};

/* ---------------------------------------------------------------- MatMulIntegerToFloat, DynamicQuantizeMatMul */

/* com.microsoft MatMulIntegerToFloat (A uint8 or int8 with its scale and
 * zero point, read at run time: a DynamicQuantizeLinear's outputs) and
 * DynamicQuantizeMatMul (A float, quantized here to uint8 as
 * DynamicQuantizeLinear does), B a constant (K, N) of uint8 or int8 with
 * zero points per tensor or per column.  oneDNN computes P = A B' in int32
 * with no zero points, B' = B (int8) or B - 128 (uint8, as int8) reordered
 * once; then, per element, as uint32 (wrapping as cpu_ref's truncation):
 *   sum_k (a - za)(b - zb_j) = P - za colsum(B')_j + c_j (rowsum(A) - K za)
 * with c_j = 128 - zb_j (uint8 B) or -zb_j, which is cpu_ref's int32 sum
 * exactly, scaled and biased with cpu_ref's float expression.  Needs VNNI
 * (xf_dn_exact_int8), as the other int8 products. */

/* What the scratch block holds after P (M x N int32): A's row sums (M
 * int32), A's scale and zero point, then (DynamicQuantizeMatMul) A as
 * uint8 (M x K). */
typedef struct imf_geom {
    int64_t m, k, n;
    int32_t *p, *rowsum;
    float *sa;
    int32_t *za;
    uint8_t *qa;
} imf_geom;

/* The input of n holding MatMulIntegerToFloat's input mif_index (A, B,
 * a_scale, b_scale, a_zero_point, b_zero_point, bias; -1: none). */
static int imf_input(const xf_node *n, int mif_index)
{
    /* DynamicQuantizeMatMul lacks a_scale and a_zero_point (2, 4);
     * QLinearMatMul and MatMulInteger have no bias, the latter no scales */
    static const int dqm[7] = {0, 1, -1, 2, -1, 3, 4}, qmm[7] = {0, 3, 1, 4, 2, 5, -1},
                     mmi[7] = {0, 1, -1, -1, 2, 3, -1};
    switch (n->op) {
    case XF_OP_MS_DYNAMIC_QUANTIZE_MATMUL: return dqm[mif_index];
    case XF_OP_QLINEAR_MATMUL: return qmm[mif_index];
    case XF_OP_MATMUL_INTEGER: return mmi[mif_index];
    default: return mif_index;
    }
}

static imf_geom imf_geom_of(const xf_node *n, const xf_dn_node *st, const xf_tensor_view *in)
{
    const xf_tensor_view *b = &in[imf_input(n, 1)];
    imf_geom g = {.k = b->shape.dims[0], .n = b->shape.dims[1]};
    g.m = xf_rt_numel(&in[0]) / g.k;
    g.p = (int32_t *)st->scratch;
    g.rowsum = g.p + g.m * g.n;
    g.sa = (float *)(g.rowsum + g.m);
    g.za = (int32_t *)(g.sa + 1);
    g.qa = (uint8_t *)(g.za + 1);
    return g;
}

/* The kinds of output: MatMulIntegerToFloat's and DynamicQuantizeMatMul's
 * floats, QLinearMatMul's 8-bit codes, MatMulInteger's int32 sums. */
static bool imf_output_ok(const xf_graph *g, const xf_node *n)
{
    const xf_value *y = &g->values[n->outputs[0]], *ys = value_at(g, n, 6), *yz = value_at(g, n, 7);
    if (n->op == XF_OP_MATMUL_INTEGER)
        return y->dtype == XF_DT_INT32;
    if (n->op != XF_OP_QLINEAR_MATMUL)
        return xf_dn_is_f32(g, n->outputs[0]);
    return (y->dtype == XF_DT_UINT8 || y->dtype == XF_DT_INT8) && ys && ys->dtype == XF_DT_FLOAT && single(ys) &&
           single(yz) && (!yz || yz->dtype == y->dtype);
}

static bool imf_handles(const xf_graph *g, const xf_node *n)
{
    bool dyn = n->op == XF_OP_MS_DYNAMIC_QUANTIZE_MATMUL, sums = n->op == XF_OP_MATMUL_INTEGER;
    const xf_value *a = value_at(g, n, 0), *b = value_at(g, n, imf_input(n, 1)), *bs = value_at(g, n, imf_input(n, 3));
    const xf_value *bz = value_at(g, n, imf_input(n, 5)), *bias = value_at(g, n, imf_input(n, 6));
    if (!xf_dn_exact_int8() || !a || !b || (!bs && !sums) || !b->init || b->shape.ndim != 2 || n->n_outputs != 1 ||
        n->outputs[0] < 0 || !imf_output_ok(g, n) || xf_shape_numel(&a->shape) <= 0 ||
        (b->dtype != XF_DT_UINT8 && b->dtype != XF_DT_INT8))
        return false;
    int64_t k = b->shape.dims[0], cols = b->shape.dims[1], nz = bz ? xf_shape_numel(&bz->shape) : 1;
    int64_t ns = bs ? xf_shape_numel(&bs->shape) : 1;
    if (k <= 0 || cols <= 0 || a->shape.dims[a->shape.ndim - 1] != k || (bz && bz->dtype != b->dtype) ||
        (nz != 1 && nz != cols) || (bs && bs->dtype != XF_DT_FLOAT) || (ns != 1 && ns != cols) ||
        (bias && (bias->dtype != XF_DT_FLOAT || xf_shape_numel(&bias->shape) != cols)))
        return false;
    if (dyn)
        return xf_dn_is_f32(g, n->inputs[0]);
    const xf_value *as = value_at(g, n, imf_input(n, 2));
    return (a->dtype == XF_DT_UINT8 || a->dtype == XF_DT_INT8) && (sums || (as && as->dtype == XF_DT_FLOAT)) &&
           single(as) && single(value_at(g, n, imf_input(n, 4)));
}

/* The sum of count bytes, in blocks of LANES (exact: K < 2^23). */
#define XF_SUM_BYTES(name, type)                                                                                       \
    static int32_t name(const type *restrict x, int64_t count)                                                        \
    {                                                                                                                  \
        int32_t lane[LANES] = {0}, sum = 0;                                                                           \
        int64_t i = 0;                                                                                                 \
        for (; i + LANES <= count; i += LANES)                                                                         \
            for (int l = 0; l < LANES; l++)                                                                            \
                lane[l] += x[i + l];                                                                                   \
        for (int l = 0; l < LANES; l++)                                                                                \
            sum += lane[l];                                                                                            \
        for (; i < count; i++)                                                                                         \
            sum += x[i];                                                                                               \
        return sum;                                                                                                    \
    }
XF_SUM_BYTES(sum_u8, uint8_t)
XF_SUM_BYTES(sum_s8, int8_t)

/* A's scale and zero point (DynamicQuantizeMatMul: A quantized into the
 * scratch block first) and row sums. */
static void imf_pre(const xf_node *n, const xf_dn_node *st, const xf_tensor_view *in, const xf_tensor_view *out)
{
    imf_geom g = imf_geom_of(n, st, in);
    const uint8_t *a = in[0].data;
    bool s8 = in[0].dtype == XF_DT_INT8;
    if (n->op == XF_OP_MS_DYNAMIC_QUANTIZE_MATMUL) {
        float lo, hi, zp;
        xf_dn_range_of(in[0].data, g.m * g.k, &lo, &hi);
        xf_rt_dynamic_qparams(n, NULL, lo, hi, g.sa, &zp);
        xf_dn_quantize_all(in[0].data, g.qa, g.m * g.k, *g.sa, zp);
        *g.za = (int32_t)zp;
        a = g.qa;
    } else {
        int si = imf_input(n, 2), zi = imf_input(n, 4);
        *g.sa = xf_dn_input(n, si) >= 0 ? (float)xf_rt_load_f64(in[si].dtype, in[si].data, 0) : 1.0f;
        *g.za = xf_dn_input(n, zi) >= 0 && xf_rt_present(&in[zi])
                    ? (int32_t)xf_rt_load_i64(in[zi].dtype, in[zi].data, 0)
                    : 0;
    }
    XF_OMP_FOR(g.m * g.k >= 1 << 16)
    for (int64_t i = 0; i < g.m; i++)
        g.rowsum[i] = s8 ? sum_s8((const int8_t *)a + i * g.k, g.k) : sum_u8(a + i * g.k, g.k);
}

/* One row of the output from its row of P (n columns; ra: the row's sum
 * of A less K za), in blocks of LANES, which the compiler vectorizes. */
static void imf_row(int64_t n, const int32_t *restrict p, uint32_t ra, uint32_t za, const int32_t *restrict colsum,
                    const int32_t *restrict c, const float *restrict scale, const float *restrict bias,
                    float *restrict y)
{
    int64_t j = 0;
    for (; j + LANES <= n; j += LANES)
        for (int l = 0; l < LANES; l++) {
            uint32_t acc = (uint32_t)p[j + l] - za * (uint32_t)colsum[j + l] + (uint32_t)c[j + l] * ra;
            y[j + l] = (float)(int32_t)acc * scale[j + l];
        }
    for (; j < n; j++) {
        uint32_t acc = (uint32_t)p[j] - za * (uint32_t)colsum[j] + (uint32_t)c[j] * ra;
        y[j] = (float)(int32_t)acc * scale[j];
    }
    if (!bias)
        return;
    for (j = 0; j + LANES <= n; j += LANES)
        for (int l = 0; l < LANES; l++)
            y[j + l] += bias[j + l];
    for (; j < n; j++)
        y[j] += bias[j];
}

/* The same for QLinearMatMul (scale: a_scale b_scale / y_scale; codes of
 * type t, xf_dn_requantize's) and MatMulInteger (the int32 sums
 * themselves, as int32 y). */
static void imf_row_ints(int64_t n, const int32_t *restrict p, uint32_t ra, uint32_t za, const int32_t *restrict colsum,
                         const int32_t *restrict c, const float *restrict scale, xf_dtype t, float zp, void *restrict y)
{
    float lo = t == XF_DT_UINT8 ? 0.0f : -128.0f, hi = t == XF_DT_UINT8 ? 255.0f : 127.0f;
    for (int64_t j = 0; j < n; j++) {
        uint32_t acc = (uint32_t)p[j] - za * (uint32_t)colsum[j] + (uint32_t)c[j] * ra;
        if (t == XF_DT_INT32) {
            ((int32_t *)y)[j] = (int32_t)acc;
            continue;
        }
        float r = xf_dn_requantize((float)(int32_t)acc * scale[j], zp, lo, hi);
        if (t == XF_DT_UINT8)
            ((uint8_t *)y)[j] = (uint8_t)r;
        else
            ((int8_t *)y)[j] = (int8_t)r;
    }
}

/* The int32 sums from P, scaled and biased (requantized) as cpu_ref does. */
static xf_status imf_post(const xf_node *n, const xf_dn_node *st, const xf_tensor_view *in, const xf_tensor_view *out,
                          xf_error *err)
{
    (void)err;
    imf_geom g = imf_geom_of(n, st, in);
    const xf_tensor_view *bs = &in[imf_input(n, 3)];
    int zin = imf_input(n, 5), bin = imf_input(n, 6);
    const xf_tensor_view *bz = xf_dn_input(n, zin) >= 0 && xf_rt_present(&in[zin]) ? &in[zin] : NULL;
    const float *bias = xf_dn_input(n, bin) >= 0 && xf_rt_present(&in[bin]) ? in[bin].data : NULL;
    const int32_t *colsum = (const int32_t *)st->folded_w;
    int32_t *c = (int32_t *)st->folded_w + g.n;
    float *scale = (float *)(c + g.n);
    bool q = n->op == XF_OP_QLINEAR_MATMUL, sums = n->op == XF_OP_MATMUL_INTEGER;
    int64_t nz = bz ? xf_rt_numel(bz) : 0, ns = sums ? 0 : xf_rt_numel(bs);
    uint32_t za = (uint32_t)*g.za, off = in[imf_input(n, 1)].dtype == XF_DT_UINT8 ? 128u : 0u;
    for (int64_t j = 0; j < g.n; j++) {
        c[j] = (int32_t)(off - (uint32_t)(nz ? xf_rt_load_i64(bz->dtype, bz->data, nz > 1 ? j : 0) : 0));
        scale[j] = sums ? 0.0f : *g.sa * ((const float *)bs->data)[ns > 1 ? j : 0];
        if (q)
            scale[j] = scale[j] / *(const float *)in[6].data;
    }
    float zp = q && n->n_inputs > 7 && xf_rt_present(&in[7]) ? (float)xf_rt_load_i64(in[7].dtype, in[7].data, 0) : 0;
    size_t width = xf_dtype_size(out[0].dtype);
    XF_OMP_FOR(g.m * g.n >= 1 << 16)
    for (int64_t i = 0; i < g.m; i++) {
        uint32_t ra = (uint32_t)g.rowsum[i] - (uint32_t)g.k * za;
        if (q || sums)
            imf_row_ints(g.n, g.p + i * g.n, ra, za, colsum, c, scale, out[0].dtype, zp,
                         (char *)out[0].data + (size_t)(i * g.n) * width);
        else
            imf_row(g.n, g.p + i * g.n, ra, za, colsum, c, scale, bias, (float *)out[0].data + i * g.n);
    }
    return XF_OK;
}

static xf_status imf_prepare(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                             const xf_tensor_view *out, xf_dn_node *st, xf_error *err)
{
    const xf_tensor_view *bv = &in[imf_input(n, 1)];
    bool dyn = n->op == XF_OP_MS_DYNAMIC_QUANTIZE_MATMUL, u8 = bv->dtype == XF_DT_UINT8;
    int64_t k = bv->shape.dims[0], cols = bv->shape.dims[1], m = xf_rt_numel(&in[0]) / k;
    const int8_t *b = bv->data;
    /* colsum(B'), then room for c and the scales of each run */
    free(st->folded_w);
    free(st->scratch);
    st->folded_w = malloc(sizeof(int32_t) * (size_t)(3 * cols));
    st->scratch = malloc(sizeof(int32_t) * (size_t)(m * cols + m + 2) + (size_t)(dyn ? m * k : 0));
    int8_t *shifted = u8 ? malloc((size_t)(k * cols)) : NULL;
    if (!st->folded_w || !st->scratch || (u8 && !shifted)) {
        free(shifted);
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in %s", xf_op_name(n->op));
    }
    if (u8)
        xf_dn_flip_bytes(bv->data, shifted, k * cols); /* b - 128 */
    int32_t *colsum = (int32_t *)st->folded_w;
    for (int64_t j = 0; j < cols; j++)
        colsum[j] = 0;
    for (int64_t t = 0; t < k; t++)
        for (int64_t j = 0; j < cols; j++)
            colsum[j] += u8 ? shifted[t * cols + j] : b[t * cols + j];
    imf_geom geo = imf_geom_of(n, st, in);
    dnnl_memory_desc_t a, w, w_any, y;
    dnnl_memory_desc_init_by_tag(&a, 2, (dnnl_dims_t){m, k}, dyn ? dnnl_u8 : dn_type(in[0].dtype), dnnl_ab);
    dnnl_memory_desc_init_by_tag(&w, 2, (dnnl_dims_t){k, cols}, dnnl_s8, dnnl_ab);
    dnnl_memory_desc_init_by_tag(&w_any, 2, (dnnl_dims_t){k, cols}, dnnl_s8, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&y, 2, (dnnl_dims_t){m, cols}, dnnl_s32, dnnl_ab);
    dnnl_matmul_desc_t d;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t ds = dnnl_matmul_desc_init(&d, &a, &w_any, NULL, &y);
    xf_status s = ds == dnnl_success ? xf_dn_pd_create_int8(c, n, &d, NULL, m, &pd, err)
                                     : xf_dn_fail(err, n, "int8 matmul", ds);
    /* B' of uint8 is the node's own copy: in folded_b, which is never shared */
    st->folded_b = (float *)shifted;
    if (s == XF_OK)
        s = xf_dn_bind_const(c, n, st, DNNL_ARG_WEIGHTS, u8 ? (const void *)shifted : b, &w,
                             dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), err);
    free(shifted);
    st->folded_b = NULL;
    if (s == XF_OK)
        s = dyn ? xf_dn_bind_scratch(c, n, st, DNNL_ARG_SRC, &a, geo.qa, err)
                : xf_dn_bind(c, n, st, DNNL_ARG_SRC, 0, &a, &a, err);
    if (s == XF_OK)
        s = xf_dn_bind_scratch(c, n, st, DNNL_ARG_DST, &y, geo.p, err);
    if (s != XF_OK) {
        dnnl_primitive_desc_destroy(pd);
        return s;
    }
    st->pre = imf_pre;
    st->post = imf_post;
    return xf_dn_finish(n, st, pd, err);
}

const xf_dn_handler xf_dn_int_matmul_float_handler = {imf_handles, NULL, imf_prepare, NULL};
