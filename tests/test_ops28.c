/* SwiGLU (opset 28), TensorScatter (24), BitCast (26), SpaceToDepth's mode
 * (28) and MatMul and Gemm on double: cpu_ref against ONNX's reference
 * values and values worked by hand, the shape rules and their errors
 * naming the node, the attributes through ONNX import and export at the
 * ops' opsets and before them (forms not modelled stay opaque), the cpu
 * backend against cpu_ref and the cuda backend's support check. */
#include "backend_util.h"
#include "kernel_case_util.h"
#include "proto_util.h"
#include "xf_test_util.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define F64(dims, ...) mk(XF_DT_DOUBLE, dims, (double[]){__VA_ARGS__})

static node_case case28(node_case c)
{
    c.opset = 28;
    return c;
}

/* ------------------------------------------------------------ SwiGLU */

static node_case swiglu(xf_tensor *a, xf_tensor *b, float alpha)
{
    node_case c = case28(make_case(XF_OP_SWIGLU, 2, a, b));
    c.a.alpha = alpha;
    return c;
}

/* a * sigmoid(alpha * a) * b, the values ONNX's reference gives: in float,
 * in double with alpha 2, and in float16 with alpha 1.5 (rounded once; the
 * reference, which rounds after each step, gives the same halves here). */
START_TEST(swiglu_values)
{
    EXPECT(run1(swiglu(F32(DIMS(4), 0, 1, -1, 2), F32(DIMS(4), 1, 2, 3, -1), 1)), XF_DT_FLOAT, DIMS(4), 0,
           1.4621172, -0.8068242, -1.761594);
    node_case c = swiglu(F64(DIMS(2, 2), 0.5, -2, 3, -0.25), F64(DIMS(2, 2), 4, 0.25, -1, 2), 2);
    c.feed = 3;
    EXPECT(run1(c), XF_DT_DOUBLE, DIMS(2, 2), 1.4621171573, -0.008993105, -2.9925821305, -0.1887703344);
    /* 0.5, -2, 3, -0.25, 1.5, -3 and 4, 0.25, -1, 2, 0.5, 1 in float16 */
    static const uint16_t a16[] = {0x3800, 0xc000, 0x4200, 0xb400, 0x3e00, 0xc200},
                          b16[] = {0x4400, 0x3400, 0xbc00, 0x4000, 0x3800, 0x3c00};
    c = swiglu(mk(XF_DT_FLOAT16, DIMS(2, 3), a16), mk(XF_DT_FLOAT16, DIMS(2, 3), b16), 1.5f);
    c.feed = 1;
    EXPECT(run1(c), XF_DT_FLOAT16, DIMS(2, 3), 1.3583984375, -0.0237121582, -2.966796875, -0.2036132812,
           0.6787109375, -0.0329589844);
    /* bfloat16: the same values rounded to nearest even at its 8 bits of
     * mantissa, as ONNX's reference rounds them */
    static const uint16_t abf[] = {0x3f00, 0xc000, 0x4040, 0xbe80, 0x3fc0, 0xc040},
                          bbf[] = {0x4080, 0x3e80, 0xbf80, 0x4000, 0x3f00, 0x3f80};
    EXPECT(run1(swiglu(mk(XF_DT_BFLOAT16, DIMS(6), abf), mk(XF_DT_BFLOAT16, DIMS(6), bbf), 1.5f)), XF_DT_BFLOAT16,
           DIMS(6), 1.359375, -0.023681640625, -2.96875, -0.2041015625, 0.6796875, -0.032958984375);
    /* large gates: Swish(a) is a for large a and 0 for very negative a */
    EXPECT(run1(swiglu(F32(DIMS(3), 100, -800, 0), F32(DIMS(3), 2, 5, 7), 1)), XF_DT_FLOAT, DIMS(3), 200, 0, 0);
    EXPECT(run1(swiglu(F32(DIMS(0), 0), F32(DIMS(0), 0), 1)), XF_DT_FLOAT, DIMS(0), 0);
}
END_TEST

/* ------------------------------------------------------------ TensorScatter */

static node_case scatter(xf_tensor *past, xf_tensor *update, xf_tensor *write, int64_t axis, bool circular)
{
    node_case c = case28(make_case(XF_OP_TENSOR_SCATTER, 3, past, update, write));
    c.a.axis = axis;
    c.a.pad_mode = circular ? XF_PAD_WRAP : XF_PAD_CONSTANT;
    return c;
}

static xf_tensor *iota_past(void) { return iota_f32(DIMS(2, 4, 2), 0); }
static xf_tensor *minus_update(void) { return F32(DIMS(2, 2, 2), -1, -2, -3, -4, -5, -6, -7, -8); }

/* past 0..15 as (2, 4, 2), update -1..-8 as (2, 2, 2) along axis -2 (the
 * default): no write_indices writes rows 0 and 1; [2, 1] rows 2-3 and
 * 1-2; circular [3, -1] rows 3, 0 and 3, 0 (ONNX's reference values). */
START_TEST(tensor_scatter_values)
{
    EXPECT(run1(scatter(iota_past(), minus_update(), NULL, -2, false)), XF_DT_FLOAT, DIMS(2, 4, 2), -1, -2, -3, -4,
           4, 5, 6, 7, -5, -6, -7, -8, 12, 13, 14, 15);
    EXPECT(run1(scatter(iota_past(), minus_update(), I64(DIMS(2), 2, 1), -2, false)), XF_DT_FLOAT, DIMS(2, 4, 2), 0,
           1, 2, 3, -1, -2, -3, -4, 8, 9, -5, -6, -7, -8, 14, 15);
    node_case c = scatter(iota_past(), minus_update(), I64(DIMS(2), 3, -1), -2, true);
    c.feed = 7; /* every operand known at run time only */
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(2, 4, 2), -3, -4, 2, 3, 4, 5, -1, -2, -7, -8, 10, 11, 12, 13, -5, -6);
    /* int64 (2, 2, 3, 2) along axis 2, circular from 2 and 5: every index
     * before the axis takes its batch entry's start */
    int64_t past[24], update[16];
    for (int i = 0; i < 24; i++)
        past[i] = i;
    for (int i = 0; i < 16; i++)
        update[i] = 100 + i;
    EXPECT(run1(scatter(mk(XF_DT_INT64, DIMS(2, 2, 3, 2), past), mk(XF_DT_INT64, DIMS(2, 2, 2, 2), update),
                        I64(DIMS(2), 2, 5), 2, true)),
           XF_DT_INT64, DIMS(2, 2, 3, 2), 102, 103, 2, 3, 100, 101, 106, 107, 8, 9, 104, 105, 110, 111, 14, 15, 108,
           109, 114, 115, 20, 21, 112, 113);
    /* uint8 along axis 1 of (2, 3, 2) */
    static const uint8_t p8[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, u8[] = {200, 201, 202, 203};
    EXPECT(run1(scatter(mk(XF_DT_UINT8, DIMS(2, 3, 2), p8), mk(XF_DT_UINT8, DIMS(2, 1, 2), u8), I64(DIMS(2), 2, 0),
                        1, false)),
           XF_DT_UINT8, DIMS(2, 3, 2), 0, 1, 2, 3, 200, 201, 202, 203, 8, 9, 10, 11);
    /* the last axis, circular from 2 and 1 */
    EXPECT(run1(scatter(F32(DIMS(2, 2, 3), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
                        F32(DIMS(2, 2, 2), 1, 2, 3, 4, 5, 6, 7, 8), I64(DIMS(2), 2, 1), -1, true)),
           XF_DT_FLOAT, DIMS(2, 2, 3), 2, 0, 1, 4, 0, 3, 0, 5, 6, 0, 7, 8);
    /* circular from INT64_MIN: (INT64_MIN + s) mod 3 is 1 + s, no overflow */
    EXPECT(run1(scatter(F32(DIMS(1, 3, 1), 0, 0, 0), F32(DIMS(1, 2, 1), 1, 2), I64(DIMS(1), INT64_MIN), 1, true)),
           XF_DT_FLOAT, DIMS(1, 3, 1), 0, 1, 2);
    /* an empty update, and an update that fills the whole axis */
    EXPECT(run1(scatter(F32(DIMS(1, 2), 1, 2), F32(DIMS(1, 0), 0), I64(DIMS(1), 2), 1, false)), XF_DT_FLOAT,
           DIMS(1, 2), 1, 2);
    EXPECT(run1(scatter(F32(DIMS(1, 2), 1, 2), F32(DIMS(1, 2), 5, 6), I64(DIMS(1), 1), 1, true)), XF_DT_FLOAT,
           DIMS(1, 2), 6, 5);
    /* write indices known at run time only that leave the axis (linear) */
    c = scatter(iota_past(), minus_update(), I64(DIMS(2), 0, 3), -2, false);
    c.feed = 4;
    expect_run_error(c, "write index 3 of batch entry 1 puts 2 rows outside the 4 of axis 1");
    c = scatter(iota_past(), minus_update(), I64(DIMS(2), -1, 0), -2, false);
    c.feed = 4;
    expect_run_error(c, "write index -1 of batch entry 0");
}
END_TEST

/* ------------------------------------------------------------ BitCast */

static node_case bitcast(xf_tensor *x, xf_dtype to)
{
    node_case c = case28(make_case(XF_OP_BIT_CAST, 1, x));
    c.a.to = to;
    c.feed = 1;
    return c;
}

/* The bytes unchanged, read as another type of the same width (little
 * endian, as ONNX says). */
START_TEST(bitcast_values)
{
    EXPECT(run1(bitcast(F32(DIMS(4), 1, -2, 0.5, -0.0), XF_DT_INT32)), XF_DT_INT32, DIMS(4), 1065353216,
           -1073741824, 1056964608, -2147483648.0);
    EXPECT(run1(bitcast(I32(DIMS(2), 1065353216, -1073741824), XF_DT_FLOAT)), XF_DT_FLOAT, DIMS(2), 1, -2);
    static const int8_t i8[] = {-1, 127, -128};
    EXPECT(run1(bitcast(mk(XF_DT_INT8, DIMS(3), i8), XF_DT_UINT8)), XF_DT_UINT8, DIMS(3), 255, 127, 128);
    static const uint16_t h[] = {0x3c00, 0xc100};
    EXPECT(run1(bitcast(mk(XF_DT_FLOAT16, DIMS(2), h), XF_DT_INT16)), XF_DT_INT16, DIMS(2), 15360, -16128);
    static const uint16_t bf[] = {0x3f80, 0xc020};
    EXPECT(run1(bitcast(mk(XF_DT_UINT16, DIMS(2), bf), XF_DT_BFLOAT16)), XF_DT_BFLOAT16, DIMS(2), 1, -2.5);
    EXPECT(run1(bitcast(BOOLS(DIMS(2, 2), 1, 0, 1, 1), XF_DT_UINT8)), XF_DT_UINT8, DIMS(2, 2), 1, 0, 1, 1);
    xf_tensor *t = run1(bitcast(F64(DIMS(2), 1.0, -0.0), XF_DT_INT64));
    ck_assert(t->dtype == XF_DT_INT64 && ((int64_t *)t->data)[0] == INT64_C(4607182418800017408) &&
              ((int64_t *)t->data)[1] == INT64_MIN);
    xf_tensor_release(t);
    EXPECT(run1(bitcast(F32(SCALAR, 1), XF_DT_UINT32)), XF_DT_UINT32, SCALAR, 1065353216);
    /* float8: its bytes, either way */
    static const uint8_t f8[] = {0x38, 0xb8, 0x7e};
    EXPECT(run1(bitcast(mk(XF_DT_FLOAT8E4M3FN, DIMS(3), f8), XF_DT_INT8)), XF_DT_INT8, DIMS(3), 0x38, -72, 0x7e);
    t = run1(bitcast(mk(XF_DT_UINT8, DIMS(3), f8), XF_DT_FLOAT8E5M2));
    ck_assert(t->dtype == XF_DT_FLOAT8E5M2 && t->nbytes == 3 && memcmp(t->data, f8, 3) == 0);
    xf_tensor_release(t);
    /* the packed 4-bit types: their bytes, the elements packed two to a byte */
    static const uint8_t u4[] = {0x21, 0xf3};
    t = run1(bitcast(mk(XF_DT_UINT4, DIMS(4), u4), XF_DT_INT4));
    ck_assert(t->dtype == XF_DT_INT4 && t->nbytes == 2 && memcmp(t->data, u4, 2) == 0);
    xf_tensor_release(t);
}
END_TEST

/* ------------------------------------------------------------ SpaceToDepth */

static node_case space_to_depth(xf_tensor *x, bool crd)
{
    node_case c = case28(make_case(XF_OP_SPACE_TO_DEPTH, 1, x));
    c.a.block_size = 2;
    c.a.depth_crd = crd;
    return c;
}

/* 0..31 as (1, 2, 4, 4): ONNX's reference in both modes.  CRD keeps a
 * channel's four phases together; DCR groups the channels by phase. */
START_TEST(space_to_depth_modes)
{
    int32_t x[32];
    for (int i = 0; i < 32; i++)
        x[i] = i;
    EXPECT(run1(space_to_depth(mk(XF_DT_INT32, DIMS(1, 2, 4, 4), x), true)), XF_DT_INT32, DIMS(1, 8, 2, 2), 0, 2, 8,
           10, 1, 3, 9, 11, 4, 6, 12, 14, 5, 7, 13, 15, 16, 18, 24, 26, 17, 19, 25, 27, 20, 22, 28, 30, 21, 23, 29, 31);
    EXPECT(run1(space_to_depth(mk(XF_DT_INT32, DIMS(1, 2, 4, 4), x), false)), XF_DT_INT32, DIMS(1, 8, 2, 2), 0, 2, 8,
           10, 16, 18, 24, 26, 1, 3, 9, 11, 17, 19, 25, 27, 4, 6, 12, 14, 20, 22, 28, 30, 5, 7, 13, 15, 21, 23, 29,
           31);
    EXPECT(run1(space_to_depth(iota_f32(DIMS(1, 2, 2, 2), 0), true)), XF_DT_FLOAT, DIMS(1, 8, 1, 1), 0, 1, 2, 3, 4, 5,
           6, 7);
}
END_TEST

/* ------------------------------------------------------------ MatMul and Gemm on double */

/* Products summed in double from double operands: 1 + 2^-40 survives,
 * which a float operand could not hold. */
START_TEST(matmul_double)
{
    EXPECT(run1(make_case(XF_OP_MATMUL, 2, F64(DIMS(2, 3), 1, 2, 3, 4, 5, 6), F64(DIMS(3, 2), 7, 8, 9, 10, 11, 12))),
           XF_DT_DOUBLE, DIMS(2, 2), 58, 64, 139, 154);
    /* a batch of two against one broadcast B; a 1-D A */
    EXPECT(run1(make_case(XF_OP_MATMUL, 2, F64(DIMS(2, 1, 2), 1, 2, 3, 4), F64(DIMS(2, 1), 5, 6))), XF_DT_DOUBLE,
           DIMS(2, 1, 1), 17, 39);
    EXPECT(run1(make_case(XF_OP_MATMUL, 2, F64(DIMS(2), 1, 2), F64(DIMS(2, 2), 1, 2, 3, 4))), XF_DT_DOUBLE, DIMS(2),
           7, 10);
    double fine = 1 + ldexp(1, -40);
    xf_tensor *t = run1(make_case(XF_OP_MATMUL, 2, F64(DIMS(1, 2), fine, 1), F64(DIMS(2, 1), 1, ldexp(1, -41))));
    ck_assert(t->dtype == XF_DT_DOUBLE && ((double *)t->data)[0] == fine + ldexp(1, -41));
    xf_tensor_release(t);
    /* Gemm: alpha A^T B^T + beta C, C a row broadcast down the rows */
    node_case c = make_case(XF_OP_GEMM, 3, F64(DIMS(2, 2), 1, 2, 3, 4), F64(DIMS(2, 2), 5, 6, 7, 8), F64(DIMS(2), 1, -1));
    c.a.trans_a = c.a.trans_b = 1;
    c.a.alpha = 0.5f;
    c.a.beta = 2;
    c.feed = 1;
    EXPECT(run1(c), XF_DT_DOUBLE, DIMS(2, 2), 0.5 * 23 + 2, 0.5 * 31 - 2, 0.5 * 34 + 2, 0.5 * 46 - 2);
    c = make_case(XF_OP_GEMM, 2, F64(DIMS(1, 1), fine), F64(DIMS(1, 1), 1));
    t = run1(c);
    ck_assert(t->dtype == XF_DT_DOUBLE && ((double *)t->data)[0] == fine);
    xf_tensor_release(t);
}
END_TEST

/* ------------------------------------------------------------ shape rules */

START_TEST(shapes)
{
    xf_error e = {0};
    node_case c = scatter(iota_f32(DIMS(3, 2, 8, 4), 0), iota_f32(DIMS(3, 2, 1, 4), 0), NULL, -2, false);
    c.feed = 3;
    xf_graph *g = case_graph(&c);
    ck_assert_msg(xf_graph_infer_shapes(g, 28, &e) == XF_OK, "%s", e.msg);
    const xf_value *y = &g->values[g->outputs[0]];
    ck_assert(y->dtype == XF_DT_FLOAT && y->shape.ndim == 4 && y->shape.dims[2] == 8 && y->shape.dims[3] == 4);
    xf_graph_free(g);
    release_case(&c);
    c = bitcast(F64(DIMS(3, 1), 1, 2, 3), XF_DT_UINT64);
    g = case_graph(&c);
    ck_assert_msg(xf_graph_infer_shapes(g, 28, &e) == XF_OK, "%s", e.msg);
    y = &g->values[g->outputs[0]];
    ck_assert(y->dtype == XF_DT_UINT64 && y->shape.ndim == 2 && y->shape.dims[0] == 3);
    xf_graph_free(g);
    release_case(&c);
    c = swiglu(iota_f32(DIMS(2, 5), 0), iota_f32(DIMS(2, 5), 0), 1);
    g = case_graph(&c);
    ck_assert_msg(xf_graph_infer_shapes(g, 28, &e) == XF_OK, "%s", e.msg);
    xf_shape want = xf_shape_make(2, (int64_t[]){2, 5});
    ck_assert(xf_shape_equal(&g->values[g->outputs[0]].shape, &want));
    xf_graph_free(g);
    release_case(&c);
}
END_TEST

/* Operands and attributes that do not fit fail inference, naming the node. */
START_TEST(shape_errors)
{
    expect_infer_error(swiglu(iota_f32(DIMS(2, 3), 0), iota_f32(DIMS(1, 3), 0), 1),
                       "A 2x3 and B 1x3 differ in shape (SwiGLU does not broadcast)");
    expect_infer_error(swiglu(I64(DIMS(1), 1), I64(DIMS(1), 1), 1), "A and B must be floating-point tensors, got INT64");
    expect_infer_error(swiglu(F32(DIMS(1), 1), F64(DIMS(1), 1), 1), "input 0 is FLOAT but input 1 is DOUBLE");
    /* TensorScatter */
    expect_infer_error(scatter(iota_past(), minus_update(), NULL, 0, false), "axis 0 is the batch dimension");
    expect_infer_error(scatter(iota_past(), minus_update(), NULL, 3, false), "axis 3 is out of range for rank 3");
    expect_infer_error(scatter(iota_past(), minus_update(), NULL, INT64_MIN, false), "is out of range for rank 3");
    expect_infer_error(scatter(F32(DIMS(2), 1, 2), F32(DIMS(2), 1, 2), NULL, -1, false), "axis -1 is the batch");
    expect_infer_error(scatter(iota_past(), iota_f32(DIMS(2, 5, 2), 0), NULL, 1, false),
                       "update 2x5x2 must be past_cache 2x4x2 but for at most as many rows on axis 1");
    expect_infer_error(scatter(iota_past(), iota_f32(DIMS(2, 2, 3), 0), NULL, 1, false), "update 2x2x3 must be");
    expect_infer_error(scatter(iota_past(), iota_f32(DIMS(2, 2), 0), NULL, 1, false), "update 2x2 must be");
    expect_infer_error(scatter(iota_past(), iota_f32(DIMS(1, 2, 2), 0), NULL, 1, false), "update 1x2x2 must be");
    expect_infer_error(scatter(iota_past(), minus_update(), I64(DIMS(3), 0, 0, 0), 1, false),
                       "write_indices 3 must be (2), one per batch entry");
    expect_infer_error(scatter(iota_past(), minus_update(), I64(DIMS(1, 2), 0, 0), 1, false), "write_indices 1x2");
    expect_infer_error(scatter(iota_past(), minus_update(), I32(DIMS(2), 0, 0), 1, false),
                       "write_indices must be int64, got INT32");
    expect_infer_error(scatter(iota_past(), I64(DIMS(2, 2, 2), 0, 0, 0, 0, 0, 0, 0, 0), NULL, 1, false),
                       "input 0 is FLOAT but input 1 is INT64");
    expect_infer_error(scatter(iota_past(), minus_update(), I64(DIMS(2), 0, 3), 1, false),
                       "write index 3 of batch entry 1 puts 2 rows outside the 4 of axis 1 (mode linear)");
    expect_infer_error(scatter(iota_past(), minus_update(), I64(DIMS(2), INT64_MIN, 0), 1, false), "write index -");
    expect_infer_error(scatter(iota_past(), minus_update(), I64(DIMS(2), 0, INT64_MAX), 1, false), "write index 9");
    /* BitCast */
    expect_infer_error(bitcast(F32(DIMS(1), 1), XF_DT_INT16), "FLOAT has 32 bits but INT16 has 16");
    expect_infer_error(bitcast(F32(DIMS(1), 1), XF_DT_DOUBLE), "FLOAT has 32 bits but DOUBLE has 64");
    expect_infer_error(bitcast(BOOLS(DIMS(1), 1), XF_DT_UINT4), "BOOL has 8 bits but UINT4 has 4");
    expect_infer_error(bitcast(F32(DIMS(1), 1), XF_DT_STRING), "target type 8 is not a non-string tensor type");
    expect_infer_error(bitcast(F32(DIMS(1), 1), XF_DT_UNDEFINED), "target type 0");
    expect_infer_error(bitcast(F32(DIMS(1), 1), (xf_dtype)99), "target type 99");
    /* SpaceToDepth in either mode keeps its rule */
    expect_infer_error(space_to_depth(iota_f32(DIMS(1, 1, 3, 4), 0), true), "height 3 and width 4 must be multiples");
}
END_TEST

/* ------------------------------------------------------------ other backends */

/* Each op once, on graph inputs where they are data (random values;
 * TensorScatter's write indices from an initializer). */
enum { N_OP_GRAPHS = 8 };
static xf_graph *op_graph(int which)
{
    node_case c;
    switch (which) {
    case 0: c = swiglu(iota_f32(DIMS(3, 4, 5), 0), iota_f32(DIMS(3, 4, 5), 0), 1.25f); break;
    case 1: c = scatter(iota_f32(DIMS(2, 3, 6, 4), 0), iota_f32(DIMS(2, 3, 2, 4), 0), I64(DIMS(2), 4, 1), 2, false);
        break;
    case 2: c = scatter(iota_f32(DIMS(2, 5, 3), 0), iota_f32(DIMS(2, 4, 3), 0), I64(DIMS(2), 3, -7), 1, true); break;
    case 3: c = bitcast(iota_f32(DIMS(4, 3), 0), XF_DT_INT32); break;
    case 4: c = space_to_depth(iota_f32(DIMS(2, 3, 4, 6), 0), true); break;
    case 5: c = make_case(XF_OP_MATMUL, 2, F64(DIMS(2, 3), 0, 0, 0, 0, 0, 0), F64(DIMS(3, 2), 0, 0, 0, 0, 0, 0));
        break;
    case 6: c = make_case(XF_OP_GEMM, 3, F64(DIMS(3, 2), 0, 0, 0, 0, 0, 0), F64(DIMS(4, 3), 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                                                             0, 0, 0),
                          F64(DIMS(4), 1, 2, 3, 4));
        c.a.trans_a = c.a.trans_b = 1;
        break;
    default: c = swiglu(F64(DIMS(2, 2), 0, 0, 0, 0), F64(DIMS(2, 2), 0, 0, 0, 0), 1); break;
    }
    c.feed = which == 3 ? 1u : 3u;
    xf_graph *g = case_graph(&c);
    release_case(&c);
    return g;
}

/* The cpu backend runs them (through cpu_ref's kernels) as cpu_ref does;
 * the cuda backend has no device path for them: it takes each node that
 * cpu_ref supports, to run through cpu_ref on host copies. */
START_TEST(backends_run_them)
{
    xf_bt_through_ref(op_graph, N_OP_GRAPHS, 28);
}
END_TEST

/* ------------------------------------------------------------ ONNX attributes */

/* SwiGLU, TensorScatter, BitCast and SpaceToDepth under opset; form 1
 * gives values xflow does not model (an integer alpha, mode "ring", no
 * `to`, SpaceToDepth's mode "XYZ"), which keep those nodes opaque. */
static Onnx__GraphProto *ops28_graph(int form)
{
    static const int64_t x3[] = {2, 4, 2}, u3[] = {2, 1, 2}, two[] = {2}, x4[] = {1, 2, 4, 4};
    static const int64_t writes[] = {3, 1}; /* the tensor keeps a pointer to them */
    Onnx__GraphProto *g = mk_graph("g");
    PUSH(g->n_input, g->input, mk_vi("past", XF_DT_FLOAT, 3, x3, NULL));
    PUSH(g->n_input, g->input, mk_vi("upd", XF_DT_FLOAT, 3, u3, NULL));
    PUSH(g->n_input, g->input, mk_vi("img", XF_DT_FLOAT, 4, x4, NULL));
    PUSH(g->n_initializer, g->initializer, mk_raw("wi", XF_DT_INT64, 1, two, writes, sizeof writes));
    Onnx__NodeProto *n = mk_node("SwiGLU", "glu", (const char *[]){"past", "past", NULL}, (const char *[]){"y0", NULL});
    if (form == 1)
        attr_int(n, "alpha", 2);
    else
        attr_float(n, "alpha", 0.5f);
    PUSH(g->n_node, g->node, n);
    PUSH(g->n_node, g->node, n = mk_node("TensorScatter", "kv", (const char *[]){"past", "upd", "wi", NULL},
                                         (const char *[]){"y1", NULL}));
    attr_int(n, "axis", 1);
    attr_string(n, "mode", form == 1 ? "ring" : "circular");
    PUSH(g->n_node, g->node, n = mk_node("TensorScatter", "kv2", (const char *[]){"past", "upd", NULL},
                                         (const char *[]){"y2", NULL}));
    PUSH(g->n_node, g->node, n = mk_node("BitCast", "bc", (const char *[]){"past", NULL}, (const char *[]){"y3", NULL}));
    if (form != 1)
        attr_int(n, "to", XF_DT_UINT32);
    PUSH(g->n_node, g->node, n = mk_node("SpaceToDepth", "s2d", (const char *[]){"img", NULL},
                                         (const char *[]){"y4", NULL}));
    attr_int(n, "blocksize", 2);
    attr_string(n, "mode", form == 1 ? "XYZ" : "CRD");
    static const char *const ys[] = {"y0", "y1", "y2", "y3", "y4"};
    for (int i = 0; i < 5; i++)
        PUSH(g->n_output, g->output, mk_vi(ys[i], i == 3 ? XF_DT_UINT32 : XF_DT_FLOAT, -1, NULL, NULL));
    return g;
}

START_TEST(attributes_round_trip)
{
    int counts[XF_OP_COUNT + 1];
    xf_model *m = load_counting(ops28_graph(0), 28, counts);
    const xf_graph *g = m->graph;
    ck_assert_int_eq(counts[XF_OP_OPAQUE], 0);
    ck_assert(g->nodes[find_node_op(g, XF_OP_SWIGLU)].attrs.alpha == 0.5f);
    const xf_attrs *kv = &g->nodes[find_node_by_output(g, "y1")].attrs;
    ck_assert(kv->axis == 1 && kv->pad_mode == XF_PAD_WRAP);
    kv = &g->nodes[find_node_by_output(g, "y2")].attrs;
    ck_assert(kv->axis == -2 && kv->pad_mode == XF_PAD_CONSTANT);
    const xf_node *bc = &g->nodes[find_node_op(g, XF_OP_BIT_CAST)];
    ck_assert(bc->attrs.to == XF_DT_UINT32 && g->values[bc->outputs[0]].dtype == XF_DT_UINT32);
    const xf_node *s2d = &g->nodes[find_node_op(g, XF_OP_SPACE_TO_DEPTH)];
    ck_assert(s2d->attrs.depth_crd == 1 && s2d->attrs.block_size == 2);
    ck_assert_int_eq(g->values[s2d->outputs[0]].shape.dims[1], 8);
    xf_model *back = roundtrip(m);
    /* the written nodes: alpha, axis and mode where they differ from the defaults */
    uint8_t *buf = NULL;
    Onnx__ModelProto *mp = saved_proto(back, &buf);
    int seen = 0;
    for (size_t i = 0; i < mp->graph->n_node; i++) {
        const Onnx__NodeProto *np = mp->graph->node[i];
        if (!strcmp(np->op_type, "TensorScatter")) {
            bool circular = !strcmp(np->output[0], "y1");
            ck_assert(has_attr(np, "axis") == circular && has_attr(np, "mode") == circular);
            seen++;
        }
        if (!strcmp(np->op_type, "SpaceToDepth") || !strcmp(np->op_type, "SwiGLU") || !strcmp(np->op_type, "BitCast"))
            seen += has_attr(np, !strcmp(np->op_type, "SwiGLU") ? "alpha" : !strcmp(np->op_type, "BitCast") ? "to"
                                                                                                              : "mode");
    }
    ck_assert_int_eq(seen, 5);
    onnx__model_proto__free_unpacked(mp, NULL);
    free(buf);
    xf_model_free(back);
    /* the same model written at an earlier opset: the ops are refused by
     * name, and SpaceToDepth's mode CRD before opset 28 */
    m->opsets[0].version = 27;
    expect_export_refused(m, "node 'glu' (SwiGLU)", "needs opset 28; the model is written at 27", NULL);
    xf_node *glu = &m->graph->nodes[find_node_op(m->graph, XF_OP_SWIGLU)];
    glu->op = XF_OP_RELU; /* out of the way */
    glu->n_inputs = 1;
    xf_attrs_default(XF_OP_RELU, &glu->attrs);
    expect_export_refused(m, "node 's2d' (SpaceToDepth)", "uses mode CRD", "before opset 28");
    m->opsets[0].version = 23;
    expect_export_refused(m, "(TensorScatter)", "needs opset 24", NULL);
    xf_model_free(m);
}
END_TEST

/* Values xflow does not model keep their nodes opaque, and so do the ops
 * in a model of an opset before theirs (SpaceToDepth keeps DCR-only
 * nodes known before opset 28, but not one with a mode). */
START_TEST(attributes_opaque)
{
    int counts[XF_OP_COUNT + 1];
    xf_model *m = load_counting(ops28_graph(1), 28, counts);
    ck_assert_int_eq(counts[XF_OP_OPAQUE], 4);
    ck_assert_int_eq(counts[XF_OP_TENSOR_SCATTER], 1);
    xf_model *back = roundtrip(m);
    xf_model_free(back);
    xf_model_free(m);
    static const struct {
        int64_t opset;
        int opaque, swiglu, scatter, bitcast, s2d;
    } want[] = {{23, 5, 0, 0, 0, 0}, {24, 3, 0, 2, 0, 0}, {26, 2, 0, 2, 1, 0}, {27, 2, 0, 2, 1, 0}, {28, 0, 1, 2, 1, 1}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        m = load_counting(ops28_graph(0), want[i].opset, counts);
        ck_assert_msg(counts[XF_OP_OPAQUE] == want[i].opaque && counts[XF_OP_SWIGLU] == want[i].swiglu &&
                          counts[XF_OP_TENSOR_SCATTER] == want[i].scatter && counts[XF_OP_BIT_CAST] == want[i].bitcast &&
                          counts[XF_OP_SPACE_TO_DEPTH] == want[i].s2d,
                      "opset %lld: %d opaque", (long long)want[i].opset, counts[XF_OP_OPAQUE]);
        back = roundtrip(m);
        xf_model_free(back);
        xf_model_free(m);
    }
    /* a SpaceToDepth of opset 13 without mode is known */
    Onnx__GraphProto *g = mk_graph("g");
    static const int64_t x4[] = {1, 1, 2, 2};
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 4, x4, NULL));
    Onnx__NodeProto *n = mk_node("SpaceToDepth", "s", (const char *[]){"x", NULL}, (const char *[]){"y", NULL});
    attr_int(n, "blocksize", 2);
    PUSH(g->n_node, g->node, n);
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, -1, NULL, NULL));
    m = load_counting(g, 13, counts);
    ck_assert(counts[XF_OP_SPACE_TO_DEPTH] == 1 && counts[XF_OP_OPAQUE] == 0);
    xf_model_free(m);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ops28");
    TCase *tc = tcase_create("kernels");
    tcase_add_test(tc, swiglu_values);
    tcase_add_test(tc, tensor_scatter_values);
    tcase_add_test(tc, bitcast_values);
    tcase_add_test(tc, space_to_depth_modes);
    tcase_add_test(tc, matmul_double);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, shapes);
    tcase_add_test(tc, shape_errors);
    suite_add_tcase(s, tc);
    tc = tcase_create("backends");
    tcase_add_test(tc, backends_run_them);
    suite_add_tcase(s, tc);
    tc = tcase_create("attributes");
    tcase_add_checked_fixture(tc, NULL, free_allocs);
    tcase_add_test(tc, attributes_round_trip);
    tcase_add_test(tc, attributes_opaque);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
