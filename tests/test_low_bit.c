/* The 4- and 2-bit types (int4, uint4, int2, uint2, float4e2m1) and the
 * float8 formats as values that run: Cast and CastLike to and from them
 * (saturate and round_mode included), QuantizeLinear and
 * DequantizeLinear with them, the ops that only move their bytes, the
 * packing of their elements (the first in the low bits, the spare bits of
 * the last byte 0), and a weight-only int4 model on both host backends and
 * through xflowc.  Expected codes are ONNX's: its reference implementation
 * where the operator's table is silent, the table where it speaks. */
#include "kernel_case_util.h"
#include "xf_proto.h"
#include "xf_rt_internal.h"
#include "xf_runtime.h"
#include "xf_test_util.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* t's bytes are want's n bytes (its elements packed), then t released. */
static void expect_bytes(xf_tensor *t, xf_dtype dt, int64_t numel, const uint8_t *want, size_t n)
{
    ck_assert_ptr_nonnull(t);
    ck_assert_msg(t->dtype == dt, "dtype %s, want %s", xf_dtype_name(t->dtype), xf_dtype_name(dt));
    ck_assert_int_eq(xf_tensor_numel(t), numel);
    ck_assert_uint_eq(t->nbytes, n);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(((const uint8_t *)t->data)[i] == want[i], "%s byte %zu: 0x%02x, want 0x%02x",
                      xf_dtype_name(dt), i, ((const uint8_t *)t->data)[i], want[i]);
    xf_tensor_release(t);
}
#define EXPECT_BYTES(t, dt, numel, ...)                                                                            \
    expect_bytes(t, dt, numel, (const uint8_t[]){__VA_ARGS__}, sizeof((const uint8_t[]){__VA_ARGS__}))

static node_case cast_case(xf_tensor *x, xf_dtype to)
{
    node_case c = make_case(XF_OP_CAST, 1, x);
    c.a.to = to;
    c.feed = 1;
    c.opset = 25;
    return c;
}

/* Floats to the packed integers truncate toward zero; what lies outside
 * the type's range (NaN and infinities too) gives 0, as ONNX's reference
 * does.  Five elements: the last byte's high half stays 0. */
START_TEST(cast_float_to_packed_ints)
{
    EXPECT_BYTES(run1(cast_case(F32(DIMS(5), -8, 7.9f, -2.5f, 8, NAN), XF_DT_INT4)), XF_DT_INT4, 5, 0x78, 0x0e,
                 0x00);
    EXPECT_BYTES(run1(cast_case(F32(DIMS(5), 15, 1.5f, -1, 16, INFINITY), XF_DT_UINT4)), XF_DT_UINT4, 5, 0x1f,
                 0x00, 0x00);
    /* int2 -2..1, uint2 0..3: four to a byte */
    EXPECT_BYTES(run1(cast_case(F32(DIMS(5), -2, -1, 0, 1, 2), XF_DT_INT2)), XF_DT_INT2, 5, 0x4e, 0x00);
    EXPECT_BYTES(run1(cast_case(F32(DIMS(6), 3, 2, 1, 0, -1, 3.9f), XF_DT_UINT2)), XF_DT_UINT2, 6, 0x1b, 0x0c);
}
END_TEST

/* Integers to the packed integers wrap (the higher bits discarded); the
 * packed integers read back sign-extended (int4, int2) or not. */
START_TEST(cast_packed_ints_both_ways)
{
    EXPECT_BYTES(run1(cast_case(I32(DIMS(4), -9, 8, 300, -20), XF_DT_INT4)), XF_DT_INT4, 4, 0x87, 0xcc);
    EXPECT_BYTES(run1(cast_case(I32(DIMS(3), 17, -1, 16), XF_DT_UINT4)), XF_DT_UINT4, 3, 0xf1, 0x00);
    EXPECT(run1(cast_case(mk(XF_DT_INT4, DIMS(3), (uint8_t[]){0x87, 0x0f}), XF_DT_FLOAT)), XF_DT_FLOAT, DIMS(3), 7,
           -8, -1);
    EXPECT(run1(cast_case(mk(XF_DT_UINT4, DIMS(3), (uint8_t[]){0x87, 0x0f}), XF_DT_INT8)), XF_DT_INT8, DIMS(3), 7,
           8, 15);
    EXPECT(run1(cast_case(mk(XF_DT_INT2, DIMS(4), (uint8_t[]){0xe4}), XF_DT_INT64)), XF_DT_INT64, DIMS(4), 0, 1,
           -2, -1);
    EXPECT(run1(cast_case(mk(XF_DT_UINT2, DIMS(4), (uint8_t[]){0xe4}), XF_DT_FLOAT16)), XF_DT_FLOAT16, DIMS(4), 0,
           1, 2, 3);
}
END_TEST

/* float4e2m1: nearest, ties to the even code; beyond 6 (infinities too)
 * +-6; NaN 6 (ONNX's float4 table); -0 keeps its sign. */
START_TEST(cast_float4)
{
    /* 0.25->0  0.75->1  1.25->1  1.75->2  2.5->2  3.5->4  5->4  5.01->6 */
    EXPECT_BYTES(run1(cast_case(F32(DIMS(8), 0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5, 5.01f), XF_DT_FLOAT4E2M1)),
                 XF_DT_FLOAT4E2M1, 8, 0x20, 0x42, 0x64, 0x76);
    EXPECT_BYTES(run1(cast_case(F32(DIMS(5), -7, INFINITY, -INFINITY, NAN, -0.0f), XF_DT_FLOAT4E2M1)),
                 XF_DT_FLOAT4E2M1, 5, 0x7f, 0x7f, 0x08);
    EXPECT(run1(cast_case(mk(XF_DT_FLOAT4E2M1, DIMS(4), (uint8_t[]){0xa3, 0xf7}), XF_DT_FLOAT)), XF_DT_FLOAT,
           DIMS(4), 1.5f, -1, 6, -6);
}
END_TEST

/* Cast's saturate 0 to float8 (opset 19): beyond the largest finite value,
 * NaN for e4m3fn, infinity for e5m2; the default saturates.  From float8
 * back to float, the codes' values. */
START_TEST(cast_float8_saturate)
{
    node_case c = cast_case(F32(DIMS(3), 1e6f, -1e6f, 1.0f), XF_DT_FLOAT8E4M3FN);
    EXPECT_BYTES(run1(c), XF_DT_FLOAT8E4M3FN, 3, 0x7e, 0xfe, 0x38);
    c = cast_case(F32(DIMS(3), 1e6f, -1e6f, 1.0f), XF_DT_FLOAT8E4M3FN);
    c.a.no_saturate = 1;
    EXPECT_BYTES(run1(c), XF_DT_FLOAT8E4M3FN, 3, 0x7f, 0xff, 0x38);
    /* the midpoint past the largest value (448, an even code) rounds to it;
     * e5m2's largest (57344) is odd, so its midpoint goes on to infinity */
    c = cast_case(F32(DIMS(3), 464, 464.01f, -464), XF_DT_FLOAT8E4M3FN);
    c.a.no_saturate = 1;
    EXPECT_BYTES(run1(c), XF_DT_FLOAT8E4M3FN, 3, 0x7e, 0x7f, 0xfe);
    c = cast_case(F32(DIMS(2), 61440, 61439), XF_DT_FLOAT8E5M2);
    c.a.no_saturate = 1;
    EXPECT_BYTES(run1(c), XF_DT_FLOAT8E5M2, 2, 0x7c, 0x7b);
    /* NaN keeps its sign where the format has one (e5m2's as ml_dtypes writes it) */
    EXPECT_BYTES(run1(cast_case(F32(DIMS(2), NAN, -NAN), XF_DT_FLOAT8E4M3FN)), XF_DT_FLOAT8E4M3FN, 2, 0x7f, 0xff);
    EXPECT_BYTES(run1(cast_case(F32(DIMS(2), NAN, -NAN), XF_DT_FLOAT8E5M2)), XF_DT_FLOAT8E5M2, 2, 0x7e, 0xfe);
    EXPECT_BYTES(run1(cast_case(F32(DIMS(2), NAN, -NAN), XF_DT_FLOAT8E5M2FNUZ)), XF_DT_FLOAT8E5M2FNUZ, 2, 0x80, 0x80);
    c = cast_case(F32(DIMS(2), 1e6f, -INFINITY), XF_DT_FLOAT8E5M2);
    c.a.no_saturate = 1;
    EXPECT_BYTES(run1(c), XF_DT_FLOAT8E5M2, 2, 0x7c, 0xfc);
    EXPECT(run1(cast_case(mk(XF_DT_FLOAT8E5M2FNUZ, DIMS(3), (uint8_t[]){0x40, 0x80, 0xc2}), XF_DT_FLOAT)),
           XF_DT_FLOAT, DIMS(3), 1, NAN, -1.5);
}
END_TEST

/* float8e8m0, a power of two: round_mode up (the default), down or
 * nearest on float's exponent as ONNX's reference rounds; saturate stops
 * at the largest power (0xfe) and takes infinities there, saturate 0 goes
 * on to NaN (0xff). */
START_TEST(cast_e8m0)
{
    static const float x[] = {1.0f, 1.5f, 3.0f, 0.1f, 0.0f, 0x1.8p127f, INFINITY};
    static const uint8_t want[3][2][7] = {
        {{127, 128, 129, 124, 0, 254, 254}, {127, 128, 129, 124, 0, 255, 255}},
        {{127, 127, 128, 123, 0, 254, 254}, {127, 127, 128, 123, 0, 254, 255}},
        {{127, 128, 129, 124, 0, 254, 254}, {127, 128, 129, 124, 0, 255, 255}},
    };
    for (int mode = 0; mode < 3; mode++)
        for (int sat = 0; sat < 2; sat++) {
            node_case c = cast_case(mk(XF_DT_FLOAT, DIMS(7), x), XF_DT_FLOAT8E8M0);
            c.a.round_mode = mode;
            c.a.no_saturate = sat;
            expect_bytes(run1(c), XF_DT_FLOAT8E8M0, 7, want[mode][sat], 7);
        }
    EXPECT(run1(cast_case(mk(XF_DT_FLOAT8E8M0, DIMS(3), (uint8_t[]){127, 130, 255}), XF_DT_FLOAT)), XF_DT_FLOAT,
           DIMS(3), 1, 8, NAN);
}
END_TEST

/* The seeded random inputs xflow-run and xflowc --check make: the float8
 * and float4 formats as floats in [-1, 1) rounded to them, the packed
 * integers as small integers wrapped to them. */
START_TEST(random_inputs)
{
    xf_shape s = xf_shape_make(1, (int64_t[]){7});
    const xf_dtype types[] = {XF_DT_FLOAT4E2M1, XF_DT_FLOAT8E8M0, XF_DT_FLOAT8E4M3FN, XF_DT_INT4, XF_DT_UINT2};
    for (size_t k = 0; k < sizeof types / sizeof *types; k++) {
        xf_tensor *t = xf_tensor_random(types[k], &s, 3);
        ck_assert_msg(t != NULL, "%s", xf_dtype_name(types[k]));
        ck_assert_uint_eq(t->nbytes, xf_dtype_nbytes(types[k], 7));
        bool varies = false;
        for (int64_t i = 0; i < 7; i++) {
            double v = xf_rt_load_f64(t->dtype, t->data, i);
            bool ok = types[k] == XF_DT_INT4 ? v >= -8 && v <= 7 : types[k] == XF_DT_UINT2 ? v >= 0 && v <= 3
                                                                                         : fabs(v) <= 1;
            ck_assert_msg(ok, "%s element %lld: %g", xf_dtype_name(types[k]), (long long)i, v);
            varies |= v != xf_rt_load_f64(t->dtype, t->data, 0);
        }
        ck_assert_msg(varies, "%s: all equal", xf_dtype_name(types[k]));
        xf_tensor_release(t);
    }
}
END_TEST

/* A model of opset 25 holding graph g (taken over). */
static xf_model *model_of(xf_graph *g)
{
    xf_model *m = xf_model_create();
    ck_assert_ptr_nonnull(m);
    xf_graph_free(m->graph);
    m->graph = g;
    m->ir_version = 11;
    m->n_opsets = 1;
    m->opsets = calloc(1, sizeof *m->opsets);
    m->opsets[0] = (xf_opset){strdup(""), 25};
    return m;
}

/* Cast's saturate and round_mode are written out and read back. */
START_TEST(cast_attributes_round_trip)
{
    node_case c = cast_case(F32(DIMS(2), 1, 2), XF_DT_FLOAT8E8M0);
    c.a.no_saturate = 1;
    c.a.round_mode = XF_ROUND_DOWN;
    xf_model *m = model_of(case_graph(&c)), *back;
    release_case(&c);
    uint8_t *buf;
    size_t len;
    xf_error err = {0};
    ck_assert_msg(xf_model_save_buffer(m, &buf, &len, &err) == XF_OK, "%s", err.msg);
    ck_assert_msg(xf_model_load_buffer(buf, len, NULL, NULL, &back, &err) == XF_OK, "%s", err.msg);
    free(buf);
    const xf_node *n = &back->graph->nodes[0];
    ck_assert_int_eq(n->op, XF_OP_CAST);
    ck_assert(n->attrs.to == XF_DT_FLOAT8E8M0 && n->attrs.no_saturate && n->attrs.round_mode == XF_ROUND_DOWN);
    xf_model_free(back);
    xf_model_free(m);
}
END_TEST

static node_case q_case(xf_op op, int64_t axis, int64_t block, xf_tensor *x, xf_tensor *scale, xf_tensor *zp)
{
    node_case c = make_case(op, 3, x, scale, zp);
    c.a.axis = axis;
    c.a.block_size = block;
    c.feed = 1;
    c.opset = 25;
    return c;
}

/* QuantizeLinear to the packed integers saturates to their ranges, rounds
 * half to even; to float4e2m1 it rounds to the format's nearest value.
 * DequantizeLinear reads them back, blocked scales and zero points
 * included. */
START_TEST(quantize_packed)
{
    /* x / 2 = 0, 1.25, 2.5, -9, 8 ; + zero point 1 */
    EXPECT_BYTES(run1(q_case(XF_OP_QUANTIZE_LINEAR, 0, 0, F32(DIMS(5), 0, 2.5f, 5, -18, 16), F32(SCALAR, 2),
                             mk(XF_DT_INT4, SCALAR, (uint8_t[]){0x01}))),
                 XF_DT_INT4, 5, 0x21, 0x83, 0x07);
    EXPECT_BYTES(run1(q_case(XF_OP_QUANTIZE_LINEAR, 0, 0, F32(DIMS(4), -1, 1, 2.6f, 9), F32(SCALAR, 1),
                             mk(XF_DT_UINT2, SCALAR, (uint8_t[]){0x00}))),
                 XF_DT_UINT2, 4, 0xf4);
    EXPECT_BYTES(run1(q_case(XF_OP_QUANTIZE_LINEAR, 0, 0, F32(DIMS(3), 2.5f, -30, 1), F32(SCALAR, 0.5f),
                             mk(XF_DT_FLOAT4E2M1, SCALAR, (uint8_t[]){0x00}))),
                 XF_DT_FLOAT4E2M1, 3, 0xf6, 0x04);
    /* blocks of 2 along axis 1 of a 2x4 uint4 weight, a zero point per block */
    EXPECT(run1(q_case(XF_OP_DEQUANTIZE_LINEAR, 1, 2, mk(XF_DT_UINT4, DIMS(2, 4), (uint8_t[]){0x10, 0xf8, 0x32, 0x54}),
                       F32(DIMS(2, 2), 1, 2, 0.5f, 4), mk(XF_DT_UINT4, DIMS(2, 2), (uint8_t[]){0x88, 0x02}))),
           XF_DT_FLOAT, DIMS(2, 4), -8, -7, 0, 14, 0, 0.5f, 16, 20);
    /* int2 codes 0, 1, -2, -1 and int4 -8, 7 less their zero points, per axis 1 of 2 x 3 */
    EXPECT(run1(q_case(XF_OP_DEQUANTIZE_LINEAR, 0, 0, mk(XF_DT_INT2, DIMS(4), (uint8_t[]){0xe4}), F32(SCALAR, 1.5f),
                       mk(XF_DT_INT2, SCALAR, (uint8_t[]){0x03}))),
           XF_DT_FLOAT, DIMS(4), 1.5f, 3, -1.5f, 0);
    EXPECT(run1(q_case(XF_OP_DEQUANTIZE_LINEAR, 1, 0, mk(XF_DT_INT4, DIMS(2, 3), (uint8_t[]){0x78, 0x10, 0xf2}),
                       F32(DIMS(3), 1, 2, 4), mk(XF_DT_INT4, DIMS(3), (uint8_t[]){0x1f, 0x00}))),
           XF_DT_FLOAT, DIMS(2, 3), -7, 12, 0, 2, 2, -4);
    EXPECT(run1(q_case(XF_OP_DEQUANTIZE_LINEAR, 0, 0, mk(XF_DT_FLOAT4E2M1, DIMS(3), (uint8_t[]){0x9f, 0x02}),
                       F32(SCALAR, 2), mk(XF_DT_FLOAT4E2M1, SCALAR, (uint8_t[]){0x00}))),
           XF_DT_FLOAT, DIMS(3), -12, -1, 2);
}
END_TEST

/* The ops that only move bytes carry packed values: Reshape, and BitCast
 * between types of one width; Transpose moves their elements, on both host
 * backends. */
START_TEST(packed_views)
{
    /* int4 2x3 [1 2 3; 4 5 6] transposed: [1 4; 2 5; 3 6] */
    for (int b = 0; b < 2; b++) {
        node_case t = make_case(XF_OP_TRANSPOSE, 1, mk(XF_DT_INT4, DIMS(2, 3), (uint8_t[]){0x21, 0x43, 0x65}));
        t.feed = 1;
        xf_graph *g = case_graph(&t);
        xf_session *s;
        xf_error err = {0};
        xf_tensor *y = NULL;
        ck_assert_msg(xf_session_create(g, 25, b ? "cpu" : "cpu_ref", NULL, &s, &err) == XF_OK, "%s", err.msg);
        ck_assert_msg(xf_session_run(s, t.in, &y, &err) == XF_OK, "%s", err.msg);
        EXPECT_BYTES(y, XF_DT_INT4, 6, 0x41, 0x52, 0x63);
        xf_session_free(s);
        xf_graph_free(g);
        release_case(&t);
    }
    /* uint2 of 5 elements, 1x5 to 5x1, and float4 3x2 to 2x3 */
    node_case t = make_case(XF_OP_TRANSPOSE, 1, mk(XF_DT_UINT2, DIMS(1, 5), (uint8_t[]){0xe4, 0x03}));
    t.feed = 1;
    EXPECT_BYTES(run1(t), XF_DT_UINT2, 5, 0xe4, 0x03);
    t = make_case(XF_OP_TRANSPOSE, 1, mk(XF_DT_FLOAT4E2M1, DIMS(3, 2), (uint8_t[]){0x21, 0x43, 0x65}));
    t.feed = 1;
    EXPECT_BYTES(run1(t), XF_DT_FLOAT4E2M1, 6, 0x31, 0x25, 0x64);
    node_case c = make_case(XF_OP_RESHAPE, 2, mk(XF_DT_INT4, DIMS(2, 3), (uint8_t[]){0x21, 0x43, 0x65}),
                            I64(DIMS(1), 6));
    c.feed = 1;
    EXPECT_BYTES(run1(c), XF_DT_INT4, 6, 0x21, 0x43, 0x65);
    c = make_case(XF_OP_BIT_CAST, 1, mk(XF_DT_INT4, DIMS(3), (uint8_t[]){0xf8, 0x07}));
    c.a.to = XF_DT_UINT4;
    c.feed = 1;
    c.opset = 26;
    EXPECT_BYTES(run1(c), XF_DT_UINT4, 3, 0xf8, 0x07);
}
END_TEST

/* A weight-only 4-bit model as quantization tools write it: x (rows x k,
 * or 2 x rows x k) times a k x n weight of codes of type wt (bytes
 * w) dequantized in blocks of `block` along k with scales and, when zp is
 * not NULL, zero points (bytes zp), then, when twice, MatMul again reading
 * the dequantized weight too.  As a Gemm (transB 1, with a bias when
 * `bias`), the weight is n x k, blocked along its rows.  A block of 0
 * gives a scale (and zero point) per output channel instead. */
typedef struct int4_model {
    xf_dtype wt;
    int64_t rows, k, n, block;
    bool batched, twice, gemm, bias, plain_b; /* plain_b: a Gemm of transB 0 (n == k) */
    bool k_axis; /* block 0: the scales along k, one per input channel (n == k) */
} int4_model;

static xf_model *int4_model_make(const int4_model *d, const uint8_t *w, const float *scale, const uint8_t *zp)
{
    xf_model *model = model_of(xf_graph_create("int4"));
    xf_graph *g = model->graph;
    xf_shape xshape = d->batched ? xf_shape_make(3, (int64_t[]){2, d->rows, d->k})
                                 : xf_shape_make(2, (int64_t[]){d->rows, d->k});
    int x = xf_graph_add_input(g, "x", XF_DT_FLOAT, &xshape);
    /* block 0: a scale per output channel, along the other axis */
    int64_t nb = d->block ? d->k / d->block : 1, r0 = d->gemm ? d->n : d->k, c0 = d->gemm ? d->k : d->n;
    int64_t r1 = d->gemm ? d->n : nb, c1 = d->gemm ? nb : d->n;
    xf_shape ss = d->block ? xf_shape_make(2, (int64_t[]){r1, c1}) : xf_shape_make(1, (int64_t[]){d->n});
    /* n == k where k_axis, so the scales' shape is the same */
    xf_tensor *wt = mk(d->wt, DIMS(r0, c0), w), *st = mk(XF_DT_FLOAT, ss.ndim, ss.dims, scale),
              *zt = zp ? mk(d->wt, ss.ndim, ss.dims, zp) : NULL;
    int in[3] = {xf_graph_add_initializer(g, "w", wt), xf_graph_add_initializer(g, "scale", st),
                 zt ? xf_graph_add_initializer(g, "zp", zt) : -1};
    xf_tensor_release(wt);
    xf_tensor_release(st);
    xf_tensor_release(zt);
    xf_shape unknown = {.ndim = -1};
    int dqv = xf_graph_add_value(g, "w_dq", XF_DT_UNDEFINED, &unknown);
    int yv = xf_graph_add_value(g, "y", XF_DT_UNDEFINED, &unknown);
    int dq = xf_graph_add_node(g, XF_OP_DEQUANTIZE_LINEAR, "dq", zp ? 3 : 2, in, 1, &dqv);
    g->nodes[dq].attrs.axis = d->block || d->k_axis ? d->gemm : !d->gemm;
    g->nodes[dq].attrs.block_size = d->block;
    if (d->gemm) {
        float bias[128];
        for (int64_t i = 0; i < d->n && i < 128; i++)
            bias[i] = 0.5f - 0.125f * (float)i;
        xf_tensor *bt = mk(XF_DT_FLOAT, DIMS(d->n), bias);
        int c = d->bias ? xf_graph_add_initializer(g, "bias", bt) : -1;
        xf_tensor_release(bt);
        int mm = xf_graph_add_node(g, XF_OP_GEMM, "gemm", d->bias ? 3 : 2, (int[]){x, dqv, c}, 1, &yv);
        ck_assert_int_ge(mm, 0);
        g->nodes[mm].attrs.trans_b = !d->plain_b;
    } else {
        ck_assert_int_ge(xf_graph_add_node(g, XF_OP_MATMUL, "mm", 2, (int[]){x, dqv}, 1, &yv), 0);
    }
    xf_graph_add_output(g, yv);
    if (d->twice) {
        int y2 = xf_graph_add_value(g, "y2", XF_DT_UNDEFINED, &unknown);
        ck_assert_int_ge(xf_graph_add_node(g, XF_OP_MATMUL, "mm2", 2, (int[]){x, dqv}, 1, &y2), 0);
        xf_graph_add_output(g, y2);
    }
    xf_error err = {0};
    ck_assert_msg(xf_graph_infer_shapes(g, 25, &err) == XF_OK, "%s", err.msg);
    return model;
}

/* Runs m on backend with input x (in dynamic mode when dynamic); its first
 * output, and in *lowered whether the session ran the pair as MatMulNBits. */
static xf_tensor *int4_run_mode(const xf_model *m, const char *backend, xf_tensor *x, bool dynamic, bool *lowered)
{
    xf_session *s;
    xf_error err = {0};
    xf_tensor *out[2] = {NULL, NULL};
    xf_session_options opt = {.force_dynamic = dynamic};
    ck_assert_msg(xf_session_create(m->graph, 25, backend, &opt, &s, &err) == XF_OK, "%s: %s", backend, err.msg);
    ck_assert_msg(xf_session_run(s, &x, out, &err) == XF_OK, "%s: %s", backend, err.msg);
    int counts[XF_OP_COUNT + 1];
    xf_graph_count_ops(xf_session_graph(s), counts);
    *lowered = counts[XF_OP_MS_MATMUL_NBITS] > 0;
    ck_assert_int_eq(counts[XF_OP_DEQUANTIZE_LINEAR], !*lowered);
    xf_session_free(s);
    xf_tensor_release(out[1]);
    return out[0];
}

static xf_tensor *int4_run(const xf_model *m, const char *backend, xf_tensor *x, bool *lowered)
{
    return int4_run_mode(m, backend, x, false, lowered);
}

/* A small int4 model (blocks of 4, which MatMulNBits does not take): both
 * host backends give the hand-computed value, and xflowc writes the
 * weight back byte for byte, its check passing. */
START_TEST(int4_weight_model)
{
    enum { K = 8, N = 6, BLOCK = 4 };
    uint8_t w[K * N / 2], zp[(K / BLOCK) * N / 2];
    float scale[(K / BLOCK) * N];
    for (int i = 0; i < K * N / 2; i++)
        w[i] = (uint8_t)(i * 37 + 11);
    for (int i = 0; i < (K / BLOCK) * N / 2; i++)
        zp[i] = (uint8_t)(i * 29 + 3);
    for (int i = 0; i < (K / BLOCK) * N; i++)
        scale[i] = 0.01f * (float)(i + 1);
    xf_model *model = int4_model_make(&(int4_model){XF_DT_INT4, 3, K, N, BLOCK, false, false}, w, scale, zp);
    float xs[3 * K];
    for (int i = 0; i < 3 * K; i++)
        xs[i] = (float)((i * 7) % 11) - 5.0f;
    xf_tensor *in = mk(XF_DT_FLOAT, DIMS(3, K), xs), *out[2];
    const char *backends[2] = {"cpu_ref", "cpu"};
    for (int b = 0; b < 2; b++) {
        bool lowered;
        out[b] = int4_run(model, backends[b], in, &lowered);
        ck_assert(!lowered);
    }
    /* element (0, 0) by hand: w's column 0 is codes of bytes 0, 3, 6, ... */
    double want = 0;
    for (int k = 0; k < K; k++) {
        int e = k * N, code = (w[e / 2] >> (e % 2 * 4)) & 15, z = k / BLOCK * N;
        int zc = (zp[z / 2] >> (z % 2 * 4)) & 15;
        want += xs[k] * (double)(float)((float)((code ^ 8) - 8 - ((zc ^ 8) - 8)) * scale[k / BLOCK * N]);
    }
    ck_assert_msg(fabs(xf_tensor_get_f64(out[0], 0) - want) < 1e-5, "%g, want %g", xf_tensor_get_f64(out[0], 0),
                  want);
    bool ok;
    double worst;
    xf_error err = {0};
    ck_assert_int_eq(xf_tensor_compare(out[1], out[0], 1e-6, 1e-5, &worst, NULL, &ok, &err), XF_OK);
    ck_assert_msg(ok, "cpu and cpu_ref differ by %g", worst);
    xf_tensor_release(out[0]);
    xf_tensor_release(out[1]);
    xf_tensor_release(in);

    char src[4300], dst[4300], cmd[9000], *log = NULL;
    const char *dir = xf_test_tmpdir("low-bit");
    snprintf(src, sizeof src, "%s/int4.onnx", dir);
    snprintf(dst, sizeof dst, "%s/int4-opt.onnx", dir);
    ck_assert_msg(xf_model_save(model, src, NULL, &err) == XF_OK, "%s", err.msg);
    snprintf(cmd, sizeof cmd, "%s %s -o %s --check", xf_test_tool("xflowc"), src, dst);
    int rc = xf_test_run(cmd, &log);
    ck_assert_msg(rc == 0 && strstr(log, "check"), "xflowc: %s", log);
    free(log);
    xf_model *m;
    ck_assert_msg(xf_model_load(dst, NULL, &m, &err) == XF_OK, "%s", err.msg);
    int wa = xf_graph_find_value(m->graph, "w");
    ck_assert_int_ge(wa, 0);
    const xf_tensor *t = m->graph->values[wa].init;
    ck_assert(t && t->dtype == XF_DT_INT4 && t->nbytes == sizeof w && memcmp(t->data, w, sizeof w) == 0);
    xf_model_free(m);
    xf_model_free(model);
}
END_TEST

/* On the cpu backend a DequantizeLinear of 4-bit constants blocked along
 * k (blocks of 16 or more) and the MatMul reading it run as one
 * MatMulNBits, whatever the codes' type and the zero points; the outputs
 * are cpu_ref's, which runs the pair as written; so do a Gemm of transB 1
 * over N x K weights blocked along K, with or without its bias.  A
 * dequantized weight that two MatMuls read stays as it is. */
START_TEST(int4_pairs_lowered_on_cpu)
{
    enum { K = 64, N = 24, BLOCK = 16, NB = K / BLOCK };
    /* room for the K x K weight of the Gemm of transB 0 */
    uint8_t w[K * K / 2], zp[NB * K / 2];
    float scale[NB * K], xs[2 * 5 * K];
    for (int i = 0; i < K * K / 2; i++)
        w[i] = (uint8_t)(i * 53 + 7);
    for (int i = 0; i < NB * K / 2; i++)
        zp[i] = (uint8_t)(i * 29 + 3);
    for (int i = 0; i < NB * K; i++)
        scale[i] = 0.002f * (float)(i % 13 + 1);
    for (int i = 0; i < 2 * 5 * K; i++)
        xs[i] = (float)((i * 7) % 23) * 0.25f - 2.5f;
    const struct {
        int4_model d;
        bool zero_points, lowered;
    } forms[] = {
        {{XF_DT_INT4, 5, K, N, BLOCK, false, false}, true, true},
        {{XF_DT_UINT4, 5, K, N, BLOCK, false, false}, false, true},
        {{XF_DT_INT4, 1, K, N, BLOCK, true, false}, false, true},
        {{XF_DT_UINT4, 3, K, N, 2 * BLOCK, false, false}, true, true},
        {{XF_DT_UINT4, 5, K, N, BLOCK, false, true}, true, false},
        {{XF_DT_INT4, 4, K, N, BLOCK, false, false, true, true}, true, true},
        {{XF_DT_UINT4, 2, K, N, 2 * BLOCK, false, false, true, false}, false, true},
        /* a Gemm of transB 0: its K x K weight blocked along its columns is
         * not the N x K form MatMulNBits takes */
        {{XF_DT_INT4, 3, K, K, BLOCK, false, false, true, false, true}, true, false},
        /* scales per output channel (block 0): one block of K */
        {{XF_DT_INT4, 3, K, N, 0, false, false}, true, true},
        {{XF_DT_UINT4, 2, K, N, 0, false, false, true, true}, true, true},
        /* scales per input channel are no blocks of k */
        {{XF_DT_INT4, 3, K, K, 0, false, false, false, false, false, true}, true, false},
    };
    for (size_t f = 0; f < sizeof forms / sizeof *forms; f++) {
        const int4_model *d = &forms[f].d;
        xf_model *m = int4_model_make(d, w, scale, forms[f].zero_points ? zp : NULL);
        xf_tensor *x = d->batched ? mk(XF_DT_FLOAT, DIMS(2, d->rows, K), xs) : mk(XF_DT_FLOAT, DIMS(d->rows, K), xs);
        bool ref_lowered, cpu_lowered, ok;
        xf_tensor *ref = int4_run(m, "cpu_ref", x, &ref_lowered), *cpu = int4_run(m, "cpu", x, &cpu_lowered);
        ck_assert(!ref_lowered);
        ck_assert_msg(cpu_lowered == forms[f].lowered, "form %zu: lowered %d", f, cpu_lowered);
        double worst;
        xf_error err = {0};
        ck_assert_int_eq(xf_tensor_compare(cpu, ref, 1e-5, 1e-5, &worst, NULL, &ok, &err), XF_OK);
        ck_assert_msg(ok, "form %zu: cpu and cpu_ref differ by %g", f, worst);
        /* the same in dynamic mode, the codes packed when the session is made */
        xf_tensor *dyn = int4_run_mode(m, "cpu", x, true, &cpu_lowered);
        ck_assert(cpu_lowered == forms[f].lowered);
        ck_assert_int_eq(xf_tensor_compare(dyn, cpu, 0, 0, &worst, NULL, &ok, &err), XF_OK);
        ck_assert_msg(ok, "form %zu: dynamic and static mode differ by %g", f, worst);
        xf_tensor_release(dyn);
        xf_tensor_release(ref);
        xf_tensor_release(cpu);
        xf_tensor_release(x);
        xf_model_free(m);
    }
}
END_TEST

/* A weight past one 64 x 64 square of the lowering's repacking (160 x
 * 72, a partial square each way), as a MatMul and as a Gemm: cpu gives
 * cpu_ref's outputs. */
START_TEST(int4_pairs_lowered_large)
{
    enum { K = 160, N = 72, BLOCK = 32, NB = K / BLOCK, ROWS = 3 };
    static uint8_t w[K * N / 2], zp[NB * N / 2];
    static float scale[NB * N], xs[ROWS * K];
    for (int i = 0; i < K * N / 2; i++)
        w[i] = (uint8_t)(i * 97 + 13);
    for (int i = 0; i < NB * N / 2; i++)
        zp[i] = (uint8_t)(i * 31 + 7);
    for (int i = 0; i < NB * N; i++)
        scale[i] = 0.001f * (float)(i % 11 + 1);
    for (int i = 0; i < ROWS * K; i++)
        xs[i] = (float)((i * 5) % 19) * 0.125f - 1.0f;
    for (int gemm = 0; gemm < 2; gemm++) {
        int4_model d = {XF_DT_INT4, ROWS, K, N, BLOCK, false, false, gemm, gemm};
        xf_model *m = int4_model_make(&d, w, scale, zp);
        xf_tensor *x = mk(XF_DT_FLOAT, DIMS(ROWS, K), xs);
        bool lowered, ok;
        xf_tensor *ref = int4_run(m, "cpu_ref", x, &lowered), *cpu = int4_run(m, "cpu", x, &lowered);
        ck_assert(lowered);
        double worst;
        xf_error err = {0};
        ck_assert_int_eq(xf_tensor_compare(cpu, ref, 1e-5, 1e-5, &worst, NULL, &ok, &err), XF_OK);
        ck_assert_msg(ok, "gemm %d: cpu and cpu_ref differ by %g", gemm, worst);
        xf_tensor_release(ref);
        xf_tensor_release(cpu);
        xf_tensor_release(x);
        xf_model_free(m);
    }
}
END_TEST

/* A 4-bit embedding table: a Gather along axis 0 of a DequantizeLinear of
 * v x h codes blocked along h (scales, and zero points when zp, v x
 * ceil(h / block)), by int64 indices of the given dims; when tied, the
 * dequantized table is a graph output too (as a tied output projection
 * reads it). */
typedef struct emb_model {
    xf_dtype wt;
    int64_t v, h, block;
    bool zp, tied;
    int ids_ndim;
    int64_t ids_dims[2];
} emb_model;

static xf_model *emb_model_make(const emb_model *d)
{
    xf_model *model = model_of(xf_graph_create("emb"));
    xf_graph *g = model->graph;
    int64_t nb = (d->h + d->block - 1) / d->block;
    uint8_t w[64 * 64 / 2], zp[64 * 4 / 2];
    float scale[64 * 4];
    for (int i = 0; i < (int)sizeof w; i++)
        w[i] = (uint8_t)(i * 41 + 5);
    for (int i = 0; i < (int)sizeof zp; i++)
        zp[i] = (uint8_t)(i * 23 + 9);
    for (int i = 0; i < 64 * 4; i++)
        scale[i] = 0.01f * (float)(i % 17 + 1);
    xf_shape ids = xf_shape_make(d->ids_ndim, d->ids_dims);
    int x = xf_graph_add_input(g, "ids", XF_DT_INT64, &ids);
    xf_tensor *wt = mk(d->wt, DIMS(d->v, d->h), w), *st = mk(XF_DT_FLOAT, DIMS(d->v, nb), scale),
              *zt = d->zp ? mk(d->wt, DIMS(d->v, nb), zp) : NULL;
    int in[3] = {xf_graph_add_initializer(g, "table", wt), xf_graph_add_initializer(g, "scale", st),
                 zt ? xf_graph_add_initializer(g, "zp", zt) : -1};
    xf_tensor_release(wt);
    xf_tensor_release(st);
    xf_tensor_release(zt);
    xf_shape unknown = {.ndim = -1};
    int dqv = xf_graph_add_value(g, "table_dq", XF_DT_UNDEFINED, &unknown);
    int yv = xf_graph_add_value(g, "y", XF_DT_UNDEFINED, &unknown);
    int dq = xf_graph_add_node(g, XF_OP_DEQUANTIZE_LINEAR, "dq", d->zp ? 3 : 2, in, 1, &dqv);
    g->nodes[dq].attrs.axis = 1;
    g->nodes[dq].attrs.block_size = d->block;
    ck_assert_int_ge(xf_graph_add_node(g, XF_OP_GATHER, "embed", 2, (int[]){dqv, x}, 1, &yv), 0);
    xf_graph_add_output(g, yv);
    if (d->tied)
        xf_graph_add_output(g, dqv);
    xf_error err = {0};
    ck_assert_msg(xf_graph_infer_shapes(g, 25, &err) == XF_OK, "%s", err.msg);
    return model;
}

/* Runs m on backend with indices ids; its first output (NULL, with the
 * message in *err, where the run fails), and the session's op counts. */
static xf_tensor *emb_run(const xf_model *m, const char *backend, xf_tensor *ids, bool dynamic, int *counts,
                          xf_error *err)
{
    xf_session *s;
    xf_tensor *out[2] = {NULL, NULL};
    xf_session_options opt = {.force_dynamic = dynamic};
    ck_assert_msg(xf_session_create(m->graph, 25, backend, &opt, &s, err) == XF_OK, "%s: %s", backend, err->msg);
    xf_graph_count_ops(xf_session_graph(s), counts);
    xf_status st = xf_session_run(s, &ids, out, err);
    xf_session_free(s);
    xf_tensor_release(out[1]);
    ck_assert(st == XF_OK || !out[0]);
    return out[0];
}

/* On the cpu backend a Gather along axis 0 of a DequantizeLinear of a 4-bit
 * table blocked along its rows (blocks of 16 or more, a partial last one
 * too) runs as one GatherBlockQuantized over the rows gathered, with the
 * bytes cpu_ref gives running the pair as written, negative indices
 * included; the DequantizeLinear stays where something else reads it,
 * other forms are not lowered, and an index out of range is an error on
 * both backends. */
START_TEST(int4_embeddings_lowered_on_cpu)
{
    const struct {
        emb_model d;
        bool lowered;
    } forms[] = {
        {{XF_DT_INT4, 50, 64, 16, true, false, 1, {3}}, true},
        {{XF_DT_UINT4, 20, 40, 16, false, false, 2, {2, 2}}, true},
        {{XF_DT_INT4, 30, 64, 32, false, true, 1, {4}}, true},
        {{XF_DT_UINT4, 40, 48, 16, true, true, 2, {1, 3}}, true},
        /* blocks of 8: not GatherBlockQuantized's; rows of an odd number of
         * codes do not start a byte */
        {{XF_DT_INT4, 10, 32, 8, true, false, 1, {2}}, false},
        {{XF_DT_UINT4, 10, 33, 16, true, false, 1, {2}}, false},
    };
    const int64_t idx[4] = {0, 9, -1, 4};
    for (size_t f = 0; f < sizeof forms / sizeof *forms; f++) {
        const emb_model *d = &forms[f].d;
        xf_model *m = emb_model_make(d);
        xf_tensor *ids = mk(XF_DT_INT64, d->ids_ndim, d->ids_dims, idx);
        int rc[XF_OP_COUNT + 1], cc[XF_OP_COUNT + 1], dc[XF_OP_COUNT + 1];
        bool ok;
        double worst;
        xf_error err = {0};
        xf_tensor *ref = emb_run(m, "cpu_ref", ids, false, rc, &err), *cpu = emb_run(m, "cpu", ids, false, cc, &err);
        xf_tensor *dyn = emb_run(m, "cpu", ids, true, dc, &err);
        ck_assert_int_eq(rc[XF_OP_MS_GATHER_BLOCK_QUANTIZED], 0);
        for (int mode = 0; mode < 2; mode++) {
            const int *c = mode ? dc : cc;
            ck_assert_msg(c[XF_OP_MS_GATHER_BLOCK_QUANTIZED] == forms[f].lowered, "form %zu", f);
            ck_assert_int_eq(c[XF_OP_GATHER], !forms[f].lowered);
            ck_assert_int_eq(c[XF_OP_DEQUANTIZE_LINEAR], !forms[f].lowered || d->tied);
        }
        ck_assert_msg(ref && cpu && dyn, "form %zu: %s", f, err.msg);
        ck_assert_int_eq(xf_tensor_compare(cpu, ref, 0, 0, &worst, NULL, &ok, &err), XF_OK);
        ck_assert_msg(ok, "form %zu: cpu and cpu_ref differ by %g", f, worst);
        ck_assert_int_eq(xf_tensor_compare(dyn, ref, 0, 0, &worst, NULL, &ok, &err), XF_OK);
        ck_assert_msg(ok, "form %zu: dynamic cpu and cpu_ref differ by %g", f, worst);
        xf_tensor_release(ref);
        xf_tensor_release(cpu);
        xf_tensor_release(dyn);
        xf_tensor_release(ids);
        /* the last index one past the table */
        ids = mk(XF_DT_INT64, d->ids_ndim, d->ids_dims, idx);
        int64_t last = xf_tensor_numel(ids) - 1;
        ((int64_t *)ids->data)[last] = d->v;
        char want[64];
        snprintf(want, sizeof want, "index %lld out of range for axis of size %lld", (long long)d->v,
                 (long long)d->v);
        for (int b = 0; b < 2; b++) {
            ck_assert_ptr_null(emb_run(m, b ? "cpu" : "cpu_ref", ids, false, cc, &err));
            ck_assert_msg(strstr(err.msg, want), "form %zu: %s", f, err.msg);
        }
        xf_tensor_release(ids);
        xf_model_free(m);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("low_bit");
    TCase *tc = tcase_create("casts");
    tcase_add_test(tc, cast_float_to_packed_ints);
    tcase_add_test(tc, cast_packed_ints_both_ways);
    tcase_add_test(tc, cast_float4);
    tcase_add_test(tc, cast_float8_saturate);
    tcase_add_test(tc, cast_e8m0);
    tcase_add_test(tc, cast_attributes_round_trip);
    tcase_add_test(tc, random_inputs);
    suite_add_tcase(s, tc);
    tc = tcase_create("quantization");
    tcase_add_test(tc, quantize_packed);
    tcase_add_test(tc, packed_views);
    tcase_add_test(tc, int4_weight_model);
    tcase_add_test(tc, int4_pairs_lowered_on_cpu);
    tcase_add_test(tc, int4_pairs_lowered_large);
    tcase_add_test(tc, int4_embeddings_lowered_on_cpu);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
