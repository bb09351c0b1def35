/* The `cpu` backend's ops of quantized models against cpu_ref: the integer
 * products (oneDNN's int8 matmul), DynamicQuantizeLinear, QuantizeLinear
 * and DequantizeLinear (the backend's own loops) and Cast to float; the
 * convolutions are test_cpu_int8_conv's.
 *
 * Random MatMulInteger and QLinearMatMul cases (odd sizes, batched and
 * broadcast products, per-tensor and per-column scales, zero points
 * absent, 0, constant or computed at run time, weights constant or graph
 * inputs) run on both backends, in static and dynamic mode: the int32
 * outputs must be equal, the quantized outputs of QLinearMatMul at most 1
 * apart (oneDNN converts a sum to float, which may round differently
 * beyond 2^24; the suite counts how many are).  Each case also checks
 * that the node runs on oneDNN, or that the forms oneDNN cannot compute
 * exactly (uint8 weights computed at run time, or those of a product
 * without one zero point for all; zero points per row; scales computed at
 * run time) stay on cpu_ref; without AVX-512 VNNI every case stays there.
 * The (de)quantizing loops must give cpu_ref's bytes exactly, ties, NaNs
 * and infinities included (AVX-512, AVX2 and plain loops: the test case
 * "loops" runs again with oneDNN held at AVX2 and SSE4.1), and a block as
 * ONNX Runtime's dynamic quantization writes it (DynamicQuantizeLinear,
 * MatMulInteger, Cast, Mul) the run-time zero point inside a graph. */
#include "backend_util.h"
#include "core_builders.h"
#include "int8_util.h"
#include "xf_runtime.h"
#include "xf_test_util.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- matrix products */

/* Random operand shapes of a batched product: a (..., m, k), b (..., k, n)
 * in batch form 0..5 (none, equal, b 2-D, a's batch 1, b's batch 1, rank
 * 4); a long k (past a block of the kernels) now and then. */
static void product_shapes(int form, xf_shape *a, xf_shape *b)
{
    int64_t m = xf_bt_rnd(1, 37), k = xf_bt_rnd(1, 70), n = xf_bt_rnd(1, 41), bt = xf_bt_rnd(2, 3);
    if (xf_bt_rnd(0, 5) == 0)
        k = xf_bt_rnd(700, 800);
    switch (form % 6) {
    case 0: *a = SHAPE(m, k), *b = SHAPE(k, n); break;
    case 1: *a = SHAPE(bt, m, k), *b = SHAPE(bt, k, n); break;
    case 2: *a = SHAPE(bt, m, k), *b = SHAPE(k, n); break;
    case 3: *a = SHAPE(1, m, k), *b = SHAPE(bt, k, n); break;
    case 4: *a = SHAPE(bt, m, k), *b = SHAPE(1, k, n); break;
    default: *a = SHAPE(2, bt, m, k), *b = SHAPE(2, bt, k, n); break;
    }
}

/* MatMulInteger of a and b (b a constant when const_b) with zero points
 * of the given forms. */
static q8_case matmul_integer(xf_tensor *a, xf_tensor *b, zp_form a_zp, zp_form b_zp, bool const_b)
{
    q8_case c = {.g = xf_graph_create("mmi")};
    xf_dtype at = a->dtype, bt = b->dtype;
    int64_t n = b->shape.dims[b->shape.ndim - 1];
    int in[4] = {q8_operand(&c, a, false), q8_operand(&c, b, const_b)};
    in[2] = q8_zero_point(&c, at, a_zp, 0);
    in[3] = q8_zero_point(&c, bt, b_zp, n);
    return q8_finish(c, XF_OP_MATMUL_INTEGER, 4, in, NULL);
}

START_TEST(matmul_integer_random)
{
    if (!xf_bt_have_cpu())
        return;
    static const zp_form b_forms[] = {ZP_ABSENT, ZP_ZERO_CHANNELS, ZP_ZERO, ZP_CONST, ZP_RUNTIME};
    xf_bt_seed(7);
    for (int t = 0; t < 40; t++) {
        xf_shape as, bs;
        product_shapes(t, &as, &bs);
        xf_dtype at = t % 2 ? XF_DT_INT8 : XF_DT_UINT8;
        q8_case c = matmul_integer(q8_full_range(at, as), q8_full_range(XF_DT_INT8, bs), (zp_form)(t / 2 % ZP_FORMS),
                                   b_forms[t / 3 % 5], t % 4 != 3);
        char what[64];
        snprintf(what, sizeof what, "MatMulInteger case %d", t);
        q8_check_case(&c, xf_bt_have_vnni(), what);
    }
}
END_TEST

/* Products of at most 4 rows (the source's dims but the last) take a
 * kernel other than oneDNN's AMX ones, whose tile setup cost more than
 * the work there; more rows take oneDNN's first choice.  Values as
 * cpu_ref's either way. */
START_TEST(few_rows_products)
{
    if (!xf_bt_have_cpu() || !xf_bt_have_vnni())
        return;
    /* batches, rows, k and whether b is batched too; the first case tells
     * whether oneDNN takes AMX kernels here at all */
    static const int64_t shapes[][4] = {{1, 64, 300, 0}, {1, 1, 300, 0}, {1, 3, 300, 0}, {1, 4, 64, 0},
                                        {2, 2, 300, 1},  {1, 5, 300, 0}, {2, 3, 300, 1}, {2, 8, 300, 0}};
    bool amx = false;
    xf_bt_seed(11);
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        int64_t rows = shapes[i][0] * shapes[i][1], k = shapes[i][2];
        xf_shape as = shapes[i][0] > 1 ? SHAPE(shapes[i][0], shapes[i][1], k) : SHAPE(shapes[i][1], k);
        xf_shape bs = shapes[i][3] ? SHAPE(shapes[i][0], k, 200) : SHAPE(k, 200);
        q8_case c =
            matmul_integer(q8_full_range(XF_DT_UINT8, as), q8_full_range(XF_DT_INT8, bs), ZP_CONST, ZP_ABSENT, true);
        char impl[128], what[200];
        xf_bt_node_impl(c.g, 21, XF_OP_MATMUL_INTEGER, impl, sizeof impl);
        amx = amx || (i == 0 && strstr(impl, "amx"));
        ck_assert_msg(rows > 4 ? !amx || strstr(impl, "amx") : !strstr(impl, "amx"), "%lld rows: %s", (long long)rows,
                      impl);
        snprintf(what, sizeof what, "MatMulInteger of %lld rows (%s)", (long long)rows, impl);
        q8_check_case(&c, true, what);
    }
    if (!amx)
        printf("few_rows_products: oneDNN takes no AMX kernel here, so that choice was not checked\n");
}
END_TEST

/* Sums past 2^24 (where a float would round them) stay exact. */
START_TEST(matmul_integer_extremes)
{
    if (!xf_bt_have_cpu())
        return;
    xf_bt_seed(8);
    q8_case c = matmul_integer(q8_ints(XF_DT_UINT8, SHAPE(3, 1100), 255, 255),
                               q8_ints(XF_DT_INT8, SHAPE(1100, 17), -128, -128), ZP_ABSENT, ZP_ABSENT, true);
    q8_check_case(&c, xf_bt_have_vnni(), "MatMulInteger of 255 x -128, k 1100");
    c = matmul_integer(q8_ints(XF_DT_INT8, SHAPE(2, 5, 1030), -128, -128),
                       q8_ints(XF_DT_INT8, SHAPE(1030, 9), -128, -128), ZP_RUNTIME, ZP_ABSENT, false);
    q8_check_case(&c, xf_bt_have_vnni(), "MatMulInteger of -128 x -128, k 1030");
}
END_TEST

/* uint8 weights (quantize_dynamic's QUInt8, attention's products of two
 * uint8 activations) run on oneDNN as int8 with the zero point less 128:
 * constant or computed, the zero point constant (0 too), or computed;
 * then a QLinearMatMul of two uint8 tensors; sums past 2^24 exact.
 * Without a zero point, or with one per column, they stay on cpu_ref. */
START_TEST(uint8_weights)
{
    if (!xf_bt_have_cpu())
        return;
    static const zp_form b_forms[] = {ZP_CONST, ZP_ZERO, ZP_RUNTIME, ZP_ABSENT, ZP_ZERO_CHANNELS};
    xf_bt_seed(9);
    for (int t = 0; t < 20; t++) {
        xf_shape as, bs;
        product_shapes(t, &as, &bs);
        xf_dtype at = t % 2 ? XF_DT_INT8 : XF_DT_UINT8;
        zp_form bz = b_forms[t % 5];
        q8_case c = matmul_integer(q8_full_range(at, as), q8_full_range(XF_DT_UINT8, bs), (zp_form)(t / 2 % ZP_FORMS),
                                   bz, t % 4 != 3);
        char what[64];
        snprintf(what, sizeof what, "MatMulInteger of uint8 b, case %d", t);
        /* no zero point for all: through MatMulIntegerToFloat's loop (constant 2-D weights) */
        q8_check_case(
            &c, xf_bt_have_vnni() && ((bz != ZP_ABSENT && bz != ZP_ZERO_CHANNELS) || (t % 4 != 3 && bs.ndim == 2)),
            what);
    }
    q8_case c = matmul_integer(q8_ints(XF_DT_UINT8, SHAPE(3, 1100), 255, 255),
                               q8_ints(XF_DT_UINT8, SHAPE(1100, 17), 0, 0), ZP_ZERO, ZP_ZERO, false);
    q8_check_case(&c, xf_bt_have_vnni(), "MatMulInteger of 255 x uint8 0 less zero point 0, k 1100");
    for (int t = 0; t < 8; t++) {
        c = (q8_case){.g = xf_graph_create("qmm")};
        xf_shape as, bs;
        product_shapes(t, &as, &bs);
        int64_t k = as.dims[as.ndim - 1];
        xf_tensor *a_scale = q8_scales(SCALAR, 0.01, 0.05), *b_scale = q8_scales(SCALAR, 0.01, 0.05);
        xf_tensor *y_scale = q8_y_scale_for(((float *)a_scale->data)[0], b_scale, k);
        int in[8] = {q8_operand(&c, q8_full_range(XF_DT_UINT8, as), false),
                     q8_operand(&c, a_scale, true),
                     q8_zero_point(&c, XF_DT_UINT8, ZP_CONST, 0),
                     q8_operand(&c, q8_full_range(XF_DT_UINT8, bs), t % 2),
                     q8_operand(&c, b_scale, true),
                     q8_zero_point(&c, XF_DT_UINT8, t % 3 ? ZP_CONST : ZP_RUNTIME, 0),
                     q8_operand(&c, y_scale, true),
                     q8_zero_point(&c, XF_DT_UINT8, ZP_CONST, 0)};
        c = q8_finish(c, XF_OP_QLINEAR_MATMUL, 8, in, NULL);
        char what[64];
        snprintf(what, sizeof what, "QLinearMatMul of two uint8 tensors, case %d", t);
        q8_check_case(&c, xf_bt_have_vnni(), what);
    }
    /* zero points per column, as quantize_static writes QUInt8 weights per
     * channel: through MatMulIntegerToFloat's columns' loop, exactly */
    int64_t off_before = q8_off_by_one;
    for (int t = 0; t < 6; t++) {
        c = (q8_case){.g = xf_graph_create("qmm")};
        int64_t k = t % 2 ? 300 : 37, n = t % 3 ? 21 : 64;
        xf_dtype bt = t < 3 ? XF_DT_UINT8 : XF_DT_INT8, yt = t % 2 ? XF_DT_INT8 : XF_DT_UINT8;
        xf_tensor *a_scale = q8_scales(SCALAR, 0.01, 0.05), *b_scale = q8_scales(SHAPE(n), 0.01, 0.05);
        xf_tensor *y_scale = q8_y_scale_for(((float *)a_scale->data)[0], b_scale, k);
        int in[8] = {q8_operand(&c, q8_full_range(XF_DT_UINT8, SHAPE(2, 5, k)), false),
                     q8_operand(&c, a_scale, true),
                     q8_zero_point(&c, XF_DT_UINT8, ZP_CONST, 0),
                     q8_operand(&c, q8_full_range(bt, SHAPE(k, n)), true),
                     q8_operand(&c, b_scale, true),
                     q8_zero_point(&c, bt, ZP_CHANNELS, n),
                     q8_operand(&c, y_scale, true),
                     q8_zero_point(&c, yt, ZP_CONST, 0)};
        c = q8_finish(c, XF_OP_QLINEAR_MATMUL, 8, in, NULL);
        char what[80];
        snprintf(what, sizeof what, "QLinearMatMul, b's zero points per column, case %d", t);
        q8_check_case(&c, xf_bt_have_vnni(), what);
    }
    ck_assert_int_eq(q8_off_by_one, off_before);
    q8_report_off_by_one("QLinearMatMul of uint8 b");
}
END_TEST

/* The forms oneDNN cannot compute exactly stay on cpu_ref. */
START_TEST(matmul_integer_on_cpu_ref)
{
    if (!xf_bt_have_cpu())
        return;
    xf_bt_seed(9);
    q8_case c;
    /* per row of a, per column of b */
    for (int per = 0; per < 2; per++) {
        c = (q8_case){.g = xf_graph_create("mmi")};
        int a = q8_operand(&c, q8_full_range(XF_DT_UINT8, SHAPE(5, 7)), false);
        int b = q8_operand(&c, q8_full_range(XF_DT_INT8, SHAPE(7, 3)), true);
        int az = q8_operand(&c, q8_full_range(XF_DT_UINT8, per ? SCALAR : SHAPE(5)), true);
        int bz = q8_operand(&c, q8_ints(XF_DT_INT8, per ? SHAPE(3) : SCALAR, per ? 1 : 0, 5), true);
        c = q8_finish(c, XF_OP_MATMUL_INTEGER, 4, (int[]){a, b, az, bz}, NULL);
        /* b's per column through MatMulIntegerToFloat's columns' loop */
        q8_check_case(&c, per && xf_bt_have_vnni(),
                      per ? "MatMulInteger, b's zero points per column" : "MatMulInteger, a's per row");
    }
}
END_TEST

/* QLinearMatMul of a and b (b a constant when const_b): scales drawn,
 * b's per column when per_column, y of type yt. */
static q8_case qlinear_matmul(xf_tensor *a, xf_tensor *b, xf_dtype yt, bool per_column, zp_form a_zp, zp_form y_zp,
                              bool const_b, bool const_scales)
{
    q8_case c = {.g = xf_graph_create("qmm")};
    int64_t k = a->shape.dims[a->shape.ndim - 1], n = b->shape.dims[b->shape.ndim - 1];
    xf_tensor *a_scale = q8_scales(SCALAR, 0.002, 0.05),
              *b_scale = q8_scales(per_column ? SHAPE(n) : SCALAR, 0.002, 0.05);
    xf_tensor *y_scale = q8_y_scale_for(((float *)a_scale->data)[0], b_scale, k);
    xf_dtype at = a->dtype;
    int in[8];
    in[0] = q8_operand(&c, a, false);
    in[1] = q8_operand(&c, a_scale, const_scales);
    in[2] = q8_zero_point(&c, at, a_zp, 0);
    in[3] = q8_operand(&c, b, const_b);
    in[4] = q8_operand(&c, b_scale, true);
    in[5] = q8_zero_point(&c, XF_DT_INT8, per_column ? ZP_ZERO_CHANNELS : ZP_ZERO, n);
    in[6] = q8_operand(&c, y_scale, true);
    in[7] = q8_zero_point(&c, yt, y_zp, 0);
    return q8_finish(c, XF_OP_QLINEAR_MATMUL, 8, in, NULL);
}

START_TEST(qlinear_matmul_random)
{
    if (!xf_bt_have_cpu())
        return;
    static const zp_form forms[] = {ZP_ZERO, ZP_CONST, ZP_RUNTIME};
    xf_bt_seed(10);
    for (int t = 0; t < 36; t++) {
        xf_shape as, bs;
        product_shapes(t, &as, &bs);
        xf_dtype at = t % 2 ? XF_DT_INT8 : XF_DT_UINT8, yt = t / 2 % 2 ? XF_DT_INT8 : XF_DT_UINT8;
        q8_case c = qlinear_matmul(q8_full_range(at, as), q8_full_range(XF_DT_INT8, bs), yt, t / 4 % 2,
                                   forms[t / 3 % 3], forms[t / 5 % 3], t % 4 != 3, true);
        char what[64];
        snprintf(what, sizeof what, "QLinearMatMul case %d", t);
        q8_check_case(&c, xf_bt_have_vnni(), what);
    }
    q8_report_off_by_one("QLinearMatMul");
    /* a scale computed at run time: read per run by the columns' loop of
     * MatMulIntegerToFloat (constant 2-D weights), else on cpu_ref */
    for (int b2 = 0; b2 < 2; b2++) {
        q8_case c = qlinear_matmul(q8_full_range(XF_DT_UINT8, SHAPE(4, 9)),
                                   q8_full_range(XF_DT_INT8, b2 ? SHAPE(9, 6) : SHAPE(1, 9, 6)), XF_DT_UINT8, false,
                                   ZP_CONST, ZP_CONST, true, false);
        q8_check_case(&c, b2 && xf_bt_have_vnni(), "QLinearMatMul with a_scale a graph input");
    }
    q8_off_by_one = q8_compared = 0;
}
END_TEST

/* ---------------------------------------------------------------- dynamic quantization */

/* A DynamicQuantizeLinear of x (taken over), all three outputs; or, when
 * scale > 0, a QuantizeLinear of x to uint8 by scale and zero point zp. */
static q8_case quantize(xf_tensor *x, float scale, int64_t zp)
{
    q8_case c = {.g = xf_graph_create("q")};
    int in[3] = {q8_operand(&c, x, false)};
    if (scale > 0) {
        in[1] = constant(c.g, NULL, XF_DT_FLOAT, SCALAR, &scale);
        in[2] = q8_operand(&c, q8_int_scalar(XF_DT_UINT8, zp), true);
        c.node = xf_bt_finish_single(c.g, XF_OP_QUANTIZE_LINEAR, 3, in);
    } else {
        c.node = node(c.g, XF_OP_DYNAMIC_QUANTIZE_LINEAR, "dq", 1, in, 3);
        for (int k = 0; k < 3; k++)
            xf_graph_add_output(c.g, c.g->nodes[c.node].outputs[k]);
    }
    infer_ok(c.g, 21);
    return c;
}

/* The cpu backend's own DynamicQuantizeLinear and QuantizeLinear loop
 * gives what cpu_ref does: sizes off its 16-element blocks, ties (x /
 * scale exactly half-way: the range [-127.5, 127.5] makes DQL's scale 1),
 * NaNs (skipped in the range, written as 0), infinities (an infinite
 * scale), all zeros (scale 1), ranges without 0, values far beyond the
 * saturation bounds, tensors the loop splits in chunks over the threads
 * (a NaN in the first chunk, infinities in the last), and NaNs after the
 * range's ends in the same vector lanes. */
START_TEST(quantize_linear_edges)
{
    if (!xf_bt_have_cpu())
        return;
    xf_bt_seed(14);
    for (int t = 0; t < 9; t++) {
        /* cases 5 to 7: loops split in chunks over the threads */
        int64_t count = t == 0 ? 1 : t == 1 ? 15 : t == 2 ? 16 : t < 5 || t == 8 ? 1000 + t : 40000 + 7 * t;
        xf_shape shape = SHAPE(count);
        xf_tensor *x = xf_tensor_create(XF_DT_FLOAT, &shape);
        ck_assert_ptr_nonnull(x);
        float *v = x->data;
        for (int64_t i = 0; i < count; i++) {
            switch (t) {
            case 3: v[i] = (float)xf_bt_rnd(-127, 127) + 0.5f; break;
            case 4: v[i] = 0.0f; break;
            case 5: v[i] = (float)xf_bt_rnd(100, 2000) / 7.0f; break; /* all positive */
            case 7: v[i] = (float)xf_bt_rnd(-3, 3) * 1e9f; break;
            default: v[i] = (float)xf_bt_rnd(-100000, 100000) / 3000.0f; break;
            }
        }
        if (t == 3)
            v[0] = -127.5f, v[count - 1] = 127.5f;
        if (t == 6)
            v[3] = NAN, v[count - 2] = INFINITY, v[count - 1] = -INFINITY;
        /* the range's ends before NaNs in the same vector lanes */
        if (t == 8)
            v[0] = -50.0f, v[1] = 60.0f, v[16] = v[17] = NAN;
        xf_tensor *copy = xf_tensor_from_data(XF_DT_FLOAT, &shape, v);
        ck_assert_ptr_nonnull(copy);
        char what[64];
        q8_case c = quantize(x, 0, 0);
        snprintf(what, sizeof what, "DynamicQuantizeLinear case %d", t);
        q8_check_case(&c, true, what);
        /* scale 1 keeps case 3's ties */
        c = quantize(copy, t == 3 ? 1.0f : 0.037f, xf_bt_rnd(0, 255));
        snprintf(what, sizeof what, "QuantizeLinear case %d", t);
        q8_check_case(&c, true, what);
    }
    /* one infinity: DQL's scale is infinite, every element but it 0 */
    xf_shape shape = SHAPE(40);
    xf_tensor *x = xf_tensor_create(XF_DT_FLOAT, &shape);
    ((float *)x->data)[5] = INFINITY;
    ((float *)x->data)[7] = -1.0f;
    q8_case c = quantize(x, 0, 0);
    q8_check_case(&c, true, "DynamicQuantizeLinear with an infinity");
}
END_TEST

/* The backend's DequantizeLinear loop gives cpu_ref's floats for uint8 and
 * int8, with and without a zero point, on sizes off its blocks, per tensor
 * and per axis. */
START_TEST(dequantize_linear_8bit)
{
    if (!xf_bt_have_cpu())
        return;
    xf_bt_seed(17);
    for (int t = 0; t < 8; t++) {
        xf_dtype xt = t % 2 ? XF_DT_INT8 : XF_DT_UINT8;
        int64_t count = t / 2 == 0 ? 15 : t / 2 == 1 ? 16 : t / 2 == 2 ? 1000 + t : 40000 + 7 * t;
        q8_case c = {.g = xf_graph_create("dq")};
        float scale = (float)xf_bt_rnd(1, 1000) / 3000.0f;
        int in[3] = {q8_operand(&c, q8_full_range(xt, SHAPE(count)), false),
                     constant(c.g, NULL, XF_DT_FLOAT, SCALAR, &scale),
                     q8_zero_point(&c, xt, t / 2 == 3 ? ZP_ABSENT : ZP_CONST, 0)};
        c = q8_finish(c, XF_OP_DEQUANTIZE_LINEAR, 3, in, NULL);
        char what[64];
        snprintf(what, sizeof what, "DequantizeLinear case %d", t);
        q8_check_case(&c, true, what);
    }
    /* per axis: a scale (and a zero point, or none) per index of axis 0, 1
     * or the last, slabs of many elements and of one */
    for (int t = 0; t < 6; t++) {
        xf_dtype xt = t % 2 ? XF_DT_INT8 : XF_DT_UINT8;
        int axis = t / 2 == 2 ? -1 : t / 2;
        xf_shape xs = SHAPE(3, 5, 37);
        int64_t dim = xs.dims[axis < 0 ? 2 : axis];
        q8_case c = {.g = xf_graph_create("dq")};
        int in[3] = {q8_operand(&c, q8_full_range(xt, xs), false),
                     q8_operand(&c, q8_scales(SHAPE(dim), 0.001, 0.5), true),
                     t == 4 ? -1 : q8_operand(&c, q8_full_range(xt, SHAPE(dim)), true)};
        c.node = xf_bt_finish_single(c.g, XF_OP_DEQUANTIZE_LINEAR, in[2] < 0 ? 2 : 3, in);
        c.g->nodes[c.node].attrs.axis = axis;
        infer_ok(c.g, 21);
        char what[64];
        snprintf(what, sizeof what, "DequantizeLinear per axis %d, case %d", axis, t);
        q8_check_case(&c, true, what);
    }
}
END_TEST

/* Cast of integers to float runs as a reorder, rounding int32 beyond 2^24
 * as cpu_ref does; other casts stay on cpu_ref. */
START_TEST(int_to_float_casts)
{
    if (!xf_bt_have_cpu())
        return;
    xf_bt_seed(15);
    static const xf_dtype from[] = {XF_DT_INT32, XF_DT_INT8, XF_DT_UINT8, XF_DT_FLOAT};
    for (int t = 0; t < 4; t++) {
        q8_case c = {.g = xf_graph_create("cast")};
        xf_tensor *x = from[t] == XF_DT_FLOAT ? q8_scales(SHAPE(3, 50), 1, 1e6) : q8_full_range(from[t], SHAPE(3, 50));
        int in = q8_operand(&c, x, false);
        c.node = xf_bt_finish_single(c.g, XF_OP_CAST, 1, &in);
        attrs(c.g, c.node)->to = from[t] == XF_DT_FLOAT ? XF_DT_INT32 : XF_DT_FLOAT;
        infer_ok(c.g, 21);
        char what[64];
        snprintf(what, sizeof what, "Cast from %s", xf_dtype_name(from[t]));
        q8_check_case(&c, from[t] != XF_DT_FLOAT, what);
    }
}
END_TEST

/* How dynamic_quantization_block varies the block. */
typedef struct dq_form {
    xf_dtype w;           /* the weights' type (uint8 with a nonzero zero point per column) */
    bool per_column;      /* w_scale one per column */
    bool scale_first;     /* Mul(scale, product) */
    int bias;             /* 0 none, 1 a constant [40], 2 a constant [1, 1, 40], 3 a graph input */
    bool cast_read_twice; /* the Cast's output also a graph output */
    bool product_out;     /* the int32 product also a graph output */
    bool per_row;         /* the scale one per row ([40, 1], 40 rows and columns): not MatMulIntegerToFloat's */
    bool lowered;         /* the cpu backend runs the chain as MatMulIntegerToFloat (with VNNI) */
    bool one_row;         /* x of one row and 512 columns, whose product takes no AMX kernel (few_rows_products) */
} dq_form;

/* y = Cast(MatMulInteger(DynamicQuantizeLinear(x), W)) * (x_scale *
 * w_scale) [+ bias], as onnxruntime.quantization.quantize_dynamic writes a
 * MatMul: the zero point oneDNN reads is computed per run.  Where int8
 * products are exact the chain runs as one MatMulIntegerToFloat, Add
 * included when its bias is a constant row, with cpu_ref's values; forms
 * it does not take stay as written. */
START_TEST(dynamic_quantization_block)
{
    if (!xf_bt_have_cpu())
        return;
    static const dq_form forms[] = {
        {XF_DT_INT8, .lowered = true},
        {XF_DT_UINT8, .scale_first = true, .bias = 1, .lowered = true},
        {XF_DT_INT8, .per_column = true, .bias = 2, .lowered = true},
        {XF_DT_UINT8, .per_column = true, .bias = 3, .lowered = true},
        {XF_DT_INT8, .bias = 1, .cast_read_twice = true},
        {XF_DT_INT8, .product_out = true},
        {XF_DT_INT8, .per_row = true},
        {XF_DT_INT8, .bias = 1, .lowered = true, .one_row = true},
    };
    xf_bt_seed(13);
    for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
        const dq_form *d = &forms[f];
        int64_t cols = d->one_row ? 512 : 40; /* 512: oneDNN's first choice for one row an AMX kernel */
        xf_graph *g = xf_graph_create("dq");
        int x = xf_bt_input(g, XF_DT_FLOAT, SHAPE(1, d->per_row ? 40 : d->one_row ? 1 : 13, 96));
        xf_tensor *wt = q8_full_range(d->w, SHAPE(96, cols));
        xf_shape ss = d->per_row ? SHAPE(40, 1) : d->per_column ? SHAPE(cols) : SCALAR;
        xf_tensor *ws = q8_scales(ss, 0.001, 0.01);
        int w = xf_graph_add_initializer(g, NULL, wt), w_scale = xf_graph_add_initializer(g, NULL, ws);
        xf_tensor_release(wt);
        xf_tensor_release(ws);
        xf_tensor *zt = d->w == XF_DT_UINT8 ? q8_full_range(XF_DT_UINT8, SHAPE(cols)) : q8_int_scalar(XF_DT_INT8, 0);
        int w_zp = xf_graph_add_initializer(g, NULL, zt);
        xf_tensor_release(zt);
        int dq = node(g, XF_OP_DYNAMIC_QUANTIZE_LINEAR, "dq", 1, (int[]){x}, 3);
        const int *q = g->nodes[dq].outputs;
        int mm = NODE(g, XF_OP_MATMUL_INTEGER, q[0], w, q[2], w_zp);
        int cast = NODE(g, XF_OP_CAST, out0(g, mm));
        attrs(g, cast)->to = XF_DT_FLOAT;
        int scale = NODE(g, XF_OP_MUL, q[1], w_scale);
        int y = d->scale_first ? NODE(g, XF_OP_MUL, out0(g, scale), out0(g, cast))
                               : NODE(g, XF_OP_MUL, out0(g, cast), out0(g, scale));
        if (d->bias) {
            xf_shape bs = d->bias == 2 ? SHAPE(1, 1, cols) : SHAPE(cols);
            xf_tensor *bt = d->bias == 3 ? NULL : q8_scales(bs, -1, 1);
            int bias = bt ? xf_graph_add_initializer(g, NULL, bt) : xf_bt_input(g, XF_DT_FLOAT, bs);
            xf_tensor_release(bt);
            y = NODE(g, XF_OP_ADD, out0(g, y), bias);
        }
        xf_graph_add_output(g, out0(g, y));
        xf_graph_add_output(g, q[0]);
        if (d->cast_read_twice)
            xf_graph_add_output(g, out0(g, cast));
        if (d->product_out)
            xf_graph_add_output(g, out0(g, mm));
        infer_ok(g, 21);
        char what[80];
        snprintf(what, sizeof what, "a dynamically quantized MatMul, form %zu", f);
        xf_bt_check_graph(g, 21, "cpu", true, 0, 0, what);
        xf_session *s = NULL;
        xf_error err = {0};
        ck_assert_msg(xf_session_create(g, 21, "cpu", NULL, &s, &err) == XF_OK, "%s: %s", what, err.msg);
        int counts[XF_OP_COUNT + 1];
        xf_graph_count_ops(xf_session_graph(s), counts);
        bool lowered = d->lowered && xf_bt_have_vnni();
        ck_assert_msg(counts[XF_OP_MS_MATMUL_INTEGER_TO_FLOAT] == lowered && counts[XF_OP_MATMUL_INTEGER] == !lowered,
                      "%s: lowered %d", what, counts[XF_OP_MS_MATMUL_INTEGER_TO_FLOAT]);
        ck_assert_int_eq(counts[XF_OP_ADD], d->bias && !(lowered && d->bias != 3));
        const xf_graph *sg = xf_session_graph(s);
        for (int i = 0; i < sg->n_nodes; i++) {
            char impl[128];
            xf_session_node_impl(s, i, impl, sizeof impl);
            ck_assert_msg(!d->one_row || sg->nodes[i].op != XF_OP_MS_MATMUL_INTEGER_TO_FLOAT || !strstr(impl, "amx"),
                          "%s: %s", what, impl);
        }
        xf_session_free(s);
        xf_graph_free(g);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cpu_int8");
    TCase *tc = tcase_create("int8");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, matmul_integer_random);
    tcase_add_test(tc, matmul_integer_extremes);
    tcase_add_test(tc, few_rows_products);
    tcase_add_test(tc, uint8_weights);
    tcase_add_test(tc, matmul_integer_on_cpu_ref);
    tcase_add_test(tc, qlinear_matmul_random);
    tcase_add_test(tc, int_to_float_casts);
    tcase_add_test(tc, dynamic_quantization_block);
    suite_add_tcase(s, tc);
    /* the quantizing loops (AVX-512, AVX2 or plain as oneDNN's ISA is
     * held: ctest runs this case at each) */
    TCase *loops = tcase_create("loops");
    tcase_add_test(loops, quantize_linear_edges);
    tcase_add_test(loops, dequantize_linear_8bit);
    suite_add_tcase(s, loops);
    return xf_test_run_suite(s);
}
