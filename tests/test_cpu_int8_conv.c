/* The `cpu` backend's integer convolutions against cpu_ref: ConvInteger
 * and QLinearConv on oneDNN's int8 convolution.  Random cases (odd sizes,
 * groups, depthwise ones, strides, pads drawn apart at both ends,
 * dilations, 1 to 3 spatial dims, per-tensor and per-channel scales, zero
 * points absent, 0, constant or computed at run time, weights constant or
 * graph inputs) run on both backends, in static and dynamic mode: the
 * int32 outputs must be equal, the quantized ones at most 1 apart (oneDNN
 * converts a sum and a bias to float apart, which may round differently
 * beyond 2^24; counted), and each case runs on oneDNN, or stays on cpu_ref
 * where it cannot be computed exactly there (without AVX-512 VNNI every
 * case does).  Weights with zero points, and uint8 ones, run with the
 * backend's correction of the sums, exactly as cpu_ref computes them.
 * Chains of QLinearConvs check the channels-last values between them. */
#include "backend_util.h"
#include "core_builders.h"
#include "int8_util.h"
#include "xf_runtime.h"
#include "xf_test_util.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- convolutions */

/* A random convolution (case t): x and w shapes and the geometry, with 1 to
 * 3 spatial dims, groups (depthwise ones among them), strides, pads drawn
 * apart at both ends and dilations. */
static conv_geom conv_shapes(int t, xf_shape *x, xf_shape *w)
{
    conv_geom geo = {.ns = t % 8 == 7 ? 1 : t % 8 == 6 ? 3 : 2, .group = 1};
    if (t % 5 == 2)
        geo.group = xf_bt_rnd(2, 3);
    int64_t cin = geo.group * xf_bt_rnd(1, t % 4 == 0 ? 40 : 6), cout = geo.group * xf_bt_rnd(1, t % 3 ? 6 : 40);
    if (t % 7 == 4)
        geo.group = cin = cout = 16; /* depthwise */
    int64_t xd[5] = {xf_bt_rnd(1, 2), cin}, wd[5] = {cout, cin / geo.group};
    for (int i = 0; i < geo.ns; i++) {
        int64_t k = xf_bt_rnd(1, geo.ns == 3 ? 2 : 3);
        geo.s[i] = xf_bt_rnd(1, 2);
        geo.d[i] = t % 6 == 5 ? 2 : 1;
        geo.pb[i] = xf_bt_rnd(0, k - 1);
        geo.pe[i] = xf_bt_rnd(0, k - 1);
        wd[2 + i] = k;
        xd[2 + i] = geo.d[i] * (k - 1) + xf_bt_rnd(1, geo.ns == 3 ? 4 : 14);
    }
    *x = xf_shape_make(2 + geo.ns, xd);
    *w = xf_shape_make(2 + geo.ns, wd);
    return geo;
}

/* ConvInteger of x and w (w a constant when const_w). */
static q8_case conv_integer(xf_tensor *x, xf_tensor *w, const conv_geom *geo, zp_form x_zp, zp_form w_zp, bool const_w)
{
    q8_case c = {.g = xf_graph_create("convi")};
    xf_dtype xt = x->dtype, wt = w->dtype;
    int64_t m = w->shape.dims[0];
    int in[4] = {q8_operand(&c, x, false), q8_operand(&c, w, const_w)};
    in[2] = q8_zero_point(&c, xt, x_zp, 0);
    in[3] = q8_zero_point(&c, wt, w_zp, m);
    return q8_finish(c, XF_OP_CONV_INTEGER, 4, in, geo);
}

START_TEST(conv_integer_random)
{
    if (!xf_bt_have_cpu())
        return;
    static const zp_form w_forms[] = {ZP_ABSENT, ZP_ZERO, ZP_ZERO_CHANNELS};
    xf_bt_seed(11);
    for (int t = 0; t < 32; t++) {
        xf_shape xs, ws;
        conv_geom geo = conv_shapes(t, &xs, &ws);
        xf_dtype xt = t % 2 ? XF_DT_INT8 : XF_DT_UINT8;
        q8_case c = conv_integer(q8_full_range(xt, xs), q8_full_range(XF_DT_INT8, ws), &geo, (zp_form)(t / 2 % ZP_FORMS),
                               w_forms[t % 3], t % 4 != 3);
        char what[64];
        snprintf(what, sizeof what, "ConvInteger case %d", t);
        q8_check_case(&c, xf_bt_have_vnni(), what);
    }
}
END_TEST

/* QLinearConv of x and w (w a constant when const_w): scales drawn, w's
 * per output channel when per_channel, its zero point of form w_zp; an
 * int32 bias unless bias is 0 (1: a constant, 2: a graph input). */
static int add_qlinear_conv_zp(q8_case *c, int x, xf_dtype xt, xf_tensor *w, zp_form w_zp, const conv_geom *geo,
                               xf_dtype yt, bool per_channel, zp_form x_zp, zp_form y_zp, int bias, bool const_w)
{
    int64_t m = w->shape.dims[0], k = xf_shape_numel(&w->shape) / m;
    xf_dtype wt = w->dtype;
    xf_tensor *x_scale = q8_scales(SCALAR, 0.002, 0.05), *w_scale = q8_scales(per_channel ? SHAPE(m) : SCALAR, 0.002, 0.05);
    xf_tensor *y_scale = q8_y_scale_for(((float *)x_scale->data)[0], w_scale, k);
    int in[9] = {x};
    in[1] = q8_operand(c, x_scale, true);
    in[2] = q8_zero_point(c, xt, x_zp, 0);
    in[3] = q8_operand(c, w, const_w);
    in[4] = q8_operand(c, w_scale, true);
    in[5] = q8_zero_point(c, wt, w_zp, m);
    in[6] = q8_operand(c, y_scale, true);
    in[7] = q8_zero_point(c, yt, y_zp, 0);
    in[8] = bias ? q8_operand(c, q8_ints(XF_DT_INT32, SHAPE(m), -20000, 20000), bias == 1) : -1;
    int n = node(c->g, XF_OP_QLINEAR_CONV, NULL, in[8] >= 0 ? 9 : 8, in, 1);
    q8_set_geometry(c->g, n, geo);
    return n;
}

/* add_qlinear_conv_zp with w's zero point 0 (per channel when per_channel). */
static int add_qlinear_conv(q8_case *c, int x, xf_dtype xt, xf_tensor *w, const conv_geom *geo, xf_dtype yt,
                            bool per_channel, zp_form x_zp, zp_form y_zp, int bias, bool const_w)
{
    return add_qlinear_conv_zp(c, x, xt, w, per_channel ? ZP_ZERO_CHANNELS : ZP_ZERO, geo, yt, per_channel, x_zp, y_zp,
                               bias, const_w);
}

static q8_case qlinear_conv(xf_tensor *x, xf_tensor *w, const conv_geom *geo, xf_dtype yt, bool per_channel,
                          zp_form x_zp, zp_form y_zp, int bias, bool const_w)
{
    q8_case c = {.g = xf_graph_create("qconv")};
    xf_dtype xt = x->dtype;
    int xv = q8_operand(&c, x, false);
    c.node = add_qlinear_conv(&c, xv, xt, w, geo, yt, per_channel, x_zp, y_zp, bias, const_w);
    xf_graph_add_output(c.g, out0(c.g, c.node));
    infer_ok(c.g, 21);
    return c;
}

START_TEST(qlinear_conv_random)
{
    if (!xf_bt_have_cpu())
        return;
    static const zp_form forms[] = {ZP_ZERO, ZP_CONST, ZP_RUNTIME};
    xf_bt_seed(12);
    for (int t = 0; t < 36; t++) {
        xf_shape xs, ws;
        conv_geom geo = conv_shapes(t, &xs, &ws);
        xf_dtype xt = t % 2 ? XF_DT_INT8 : XF_DT_UINT8, yt = t / 2 % 2 ? XF_DT_INT8 : XF_DT_UINT8;
        q8_case c = qlinear_conv(q8_full_range(xt, xs), q8_full_range(XF_DT_INT8, ws), &geo, yt, t / 4 % 2, forms[t / 3 % 3],
                               forms[t / 5 % 3], t % 3, t % 4 != 3);
        char what[64];
        snprintf(what, sizeof what, "QLinearConv case %d", t);
        q8_check_case(&c, xf_bt_have_vnni(), what);
    }
    q8_report_off_by_one("QLinearConv");
}
END_TEST

/* Requantized sums just below a half, (2i + 1) x 0.49999905: ONNX rounds
 * them down, then adds y's zero point of 129, where adding it first makes
 * the smallest ones halves in float (129.4999990 is 129.5), which round to
 * even, up.  QLinearMatMul over a column of odd values, and QLinearConv as
 * a 1x1 convolution of them. */
START_TEST(qlinear_near_ties)
{
    if (!xf_bt_have_cpu())
        return;
    const float below_half = 0.49999905f, one = 1.0f;
    for (int conv = 0; conv < 2; conv++) {
        q8_case c = {.g = xf_graph_create("ties")};
        xf_shape xs = conv ? SHAPE(1, 1, 8, 8) : SHAPE(64, 1), ws = conv ? SHAPE(1, 1, 1, 1) : SHAPE(1, 1);
        xf_tensor *x = xf_tensor_create(XF_DT_UINT8, &xs);
        ck_assert_ptr_nonnull(x);
        for (int64_t i = 0; i < 64; i++)
            ((uint8_t *)x->data)[i] = (uint8_t)(2 * i + 1);
        int in[8] = {q8_operand(&c, x, false), constant(c.g, NULL, XF_DT_FLOAT, SCALAR, &below_half),
                     q8_zero_point(&c, XF_DT_UINT8, ZP_ZERO, 0), q8_operand(&c, q8_ints(XF_DT_INT8, ws, 1, 1), true),
                     constant(c.g, NULL, XF_DT_FLOAT, SCALAR, &one), q8_zero_point(&c, XF_DT_INT8, ZP_ZERO, 0),
                     constant(c.g, NULL, XF_DT_FLOAT, SCALAR, &one), q8_operand(&c, q8_int_scalar(XF_DT_UINT8, 129), true)};
        conv_geom geo = {.ns = 2, .group = 1, .s = {1, 1}, .d = {1, 1}};
        c = q8_finish(c, conv ? XF_OP_QLINEAR_CONV : XF_OP_QLINEAR_MATMUL, 8, in, conv ? &geo : NULL);
        q8_check_case(&c, xf_bt_have_vnni(), conv ? "QLinearConv near ties" : "QLinearMatMul near ties");
    }
    ck_assert_int_eq(q8_off_by_one, 0);
    q8_off_by_one = q8_compared = 0;
}
END_TEST

/* QLinearConvs in a row keep the values between them nhwc in static mode;
 * one also read as a graph output stays plain.  y's zero points are 0, so
 * that every output is exact and no difference carries on.  Again with
 * the second's weights uint8 of zero points per channel (corrected after
 * oneDNN's sums: read and written channels-last). */
START_TEST(qlinear_conv_chains)
{
    if (!xf_bt_have_cpu())
        return;
    xf_bt_seed(16);
    static const int64_t channels[] = {16, 32, 32, 24, 40};
    for (int form = 0; form < 4; form++) {
        q8_case c = {.g = xf_graph_create("chain")};
        xf_dtype t = form % 2 ? XF_DT_INT8 : XF_DT_UINT8;
        bool u8w = form >= 2;
        int v = q8_operand(&c, q8_full_range(t, SHAPE(1, 16, 13, 11)), false);
        for (int i = 0; i < 4; i++) {
            int64_t s = i == 1 ? 2 : 1, k = i == 2 ? 1 : 3;
            conv_geom geo = {.ns = 2, .group = 1, .s = {s, s}, .pb = {k / 2, k / 2}, .pe = {k / 2, k / 2}, .d = {1, 1}};
            bool corrected = u8w && i == 1;
            xf_tensor *w = q8_full_range(corrected ? XF_DT_UINT8 : XF_DT_INT8, SHAPE(channels[i + 1], channels[i], k, k));
            int n = add_qlinear_conv_zp(&c, v, t, w, corrected ? ZP_CHANNELS : i % 2 ? ZP_ZERO_CHANNELS : ZP_ZERO, &geo,
                                        t, i % 2, i == 0 ? ZP_CONST : ZP_ZERO, ZP_ZERO, 1, true);
            if (i == (u8w ? 1 : 0))
                c.node = n;
            v = out0(c.g, n);
            if (i == 2)
                xf_graph_add_output(c.g, v);
        }
        xf_graph_add_output(c.g, v);
        infer_ok(c.g, 21);
        char what[80];
        snprintf(what, sizeof what, "a chain of %s QLinearConvs%s", form % 2 ? "int8" : "uint8",
                 u8w ? ", one of uint8 weights" : "");
        q8_check_case(&c, xf_bt_have_vnni(), what);
    }
    ck_assert_int_eq(q8_off_by_one, 0);
    q8_off_by_one = q8_compared = 0;
}
END_TEST

/* Weights oneDNN's convolution reads less a zero point, which a loop of
 * the backend's own then corrects: uint8 constants (zero point absent, 0,
 * one or one per channel), int8 weights with a nonzero zero point (one,
 * per channel, computed at run time), in every geometry of conv_shapes.
 * uint8 weights computed at run time stay on cpu_ref.  The extremes (x
 * and w at 0 or 255, zero points at the other end: every product 65,025)
 * check the correction at its largest; after a QLinearConv, x is read
 * channels-last. */
START_TEST(conv_integer_weight_zero_points)
{
    if (!xf_bt_have_cpu())
        return;
    static const zp_form u8_forms[] = {ZP_CONST, ZP_ABSENT, ZP_CHANNELS, ZP_ZERO, ZP_ZERO_CHANNELS};
    static const zp_form s8_forms[] = {ZP_CONST, ZP_CHANNELS, ZP_RUNTIME};
    xf_bt_seed(23);
    for (int t = 0; t < 40; t++) {
        xf_shape xs, ws;
        conv_geom geo = conv_shapes(t, &xs, &ws);
        xf_dtype xt = t % 3 ? XF_DT_UINT8 : XF_DT_INT8, wt = t % 4 == 1 ? XF_DT_INT8 : XF_DT_UINT8;
        zp_form wz = wt == XF_DT_UINT8 ? u8_forms[t % 5] : s8_forms[t / 4 % 3];
        q8_case c = conv_integer(q8_full_range(xt, xs), q8_full_range(wt, ws), &geo, (zp_form)(t / 3 % ZP_FORMS), wz, true);
        char what[96];
        snprintf(what, sizeof what, "ConvInteger case %d (%s weights)", t, wt == XF_DT_UINT8 ? "uint8" : "int8");
        q8_check_case(&c, xf_bt_have_vnni(), what);
    }
    xf_shape xs, ws;
    conv_geom geo = conv_shapes(2, &xs, &ws);
    for (int k = 0; k < 2; k++) {
        xf_tensor *x = q8_ints(XF_DT_UINT8, xs, 255 * k, 255 * k), *w = q8_ints(XF_DT_UINT8, ws, 255 * k, 255 * k);
        q8_case c = {.g = xf_graph_create("convi")};
        int in[4] = {q8_operand(&c, x, false), q8_operand(&c, w, true), q8_operand(&c, q8_int_scalar(XF_DT_UINT8, 255 * !k), true),
                     q8_operand(&c, q8_int_scalar(XF_DT_UINT8, 255 * !k), true)};
        c = q8_finish(c, XF_OP_CONV_INTEGER, 4, in, &geo);
        q8_check_case(&c, xf_bt_have_vnni(),
                   k ? "ConvInteger at 255, zero points 0" : "ConvInteger at 0, zero points 255");
    }
    q8_case c = conv_integer(q8_full_range(XF_DT_UINT8, xs), q8_full_range(XF_DT_UINT8, ws), &geo, ZP_CONST, ZP_CONST, false);
    q8_check_case(&c, false, "ConvInteger of uint8 weights computed at run time");
    /* dilated along every axis of three (conv_shapes dilates 1 and 2) */
    geo = (conv_geom){.ns = 3, .group = 1, .s = {1, 2, 1}, .pb = {1, 0, 1}, .pe = {0, 1, 1}, .d = {2, 2, 2}};
    c = conv_integer(q8_full_range(XF_DT_UINT8, SHAPE(2, 4, 5, 6, 7)), q8_full_range(XF_DT_UINT8, SHAPE(3, 4, 2, 2, 2)), &geo,
                     ZP_CONST, ZP_CHANNELS, true);
    q8_check_case(&c, xf_bt_have_vnni(), "ConvInteger dilated along three axes");
    /* strides of 2 over pads of 1: the first tap lands inside from the second output on */
    geo = (conv_geom){.ns = 2, .group = 1, .s = {2, 2}, .pb = {1, 1}, .pe = {1, 0}, .d = {1, 1}};
    c = conv_integer(q8_full_range(XF_DT_UINT8, SHAPE(1, 5, 7, 9)), q8_full_range(XF_DT_UINT8, SHAPE(4, 5, 3, 3)), &geo,
                     ZP_CONST, ZP_CONST, true);
    q8_check_case(&c, xf_bt_have_vnni(), "ConvInteger of strides 2 over pads 1");
    /* after a QLinearConv, which would store its output nhwc for a reader
     * taking that: the correction reads x plain */
    c = (q8_case){.g = xf_graph_create("chain")};
    geo = (conv_geom){.ns = 2, .group = 1, .s = {1, 1}, .pb = {1, 1}, .pe = {1, 1}, .d = {1, 1}};
    int x = q8_operand(&c, q8_full_range(XF_DT_UINT8, SHAPE(1, 16, 9, 7)), false);
    int q = add_qlinear_conv(&c, x, XF_DT_UINT8, q8_full_range(XF_DT_INT8, SHAPE(16, 16, 3, 3)), &geo, XF_DT_UINT8, false,
                             ZP_CONST, ZP_CONST, 1, true);
    int in[4] = {out0(c.g, q), q8_operand(&c, q8_full_range(XF_DT_UINT8, SHAPE(8, 16, 3, 3)), true),
                 q8_operand(&c, q8_int_scalar(XF_DT_UINT8, 7), true), q8_operand(&c, q8_int_scalar(XF_DT_UINT8, 130), true)};
    c = q8_finish(c, XF_OP_CONV_INTEGER, 4, in, &geo);
    q8_check_case(&c, xf_bt_have_vnni(), "ConvInteger of uint8 weights after a QLinearConv");
}
END_TEST

/* QLinearConv with uint8 weights or nonzero weight zero points (one or
 * per channel, int8 ones also computed at run time), as ONNX Runtime's
 * quantizers write them with QUInt8 weights: on oneDNN's int8
 * convolution, its sums corrected and requantized by the backend's loop
 * with cpu_ref's arithmetic, so no output is 1 off (chains of them:
 * qlinear_conv_chains). */
START_TEST(qlinear_conv_weight_zero_points)
{
    if (!xf_bt_have_cpu())
        return;
    static const zp_form forms[] = {ZP_CONST, ZP_CHANNELS, ZP_ZERO, ZP_RUNTIME},
                         x_forms[] = {ZP_ZERO, ZP_CONST, ZP_RUNTIME};
    xf_bt_seed(29);
    for (int t = 0; t < 32; t++) {
        xf_shape xs, ws;
        conv_geom geo = conv_shapes(t, &xs, &ws);
        xf_dtype xt = t % 2 ? XF_DT_INT8 : XF_DT_UINT8, yt = t / 2 % 2 ? XF_DT_INT8 : XF_DT_UINT8;
        zp_form wz = forms[t % 4];
        xf_dtype wt = wz == ZP_RUNTIME || t % 5 == 4 ? XF_DT_INT8 : XF_DT_UINT8;
        q8_case c = {.g = xf_graph_create("qconv")};
        int x = q8_operand(&c, q8_full_range(xt, xs), false);
        c.node = add_qlinear_conv_zp(&c, x, xt, q8_full_range(wt, ws), wz == ZP_ZERO && wt == XF_DT_INT8 ? ZP_CONST : wz,
                                     &geo, yt, t / 3 % 2, x_forms[t / 4 % 3], ZP_CONST, t % 3, true);
        xf_graph_add_output(c.g, out0(c.g, c.node));
        infer_ok(c.g, 21);
        char what[96];
        snprintf(what, sizeof what, "QLinearConv case %d (%s weights)", t, wt == XF_DT_UINT8 ? "uint8" : "int8");
        q8_check_case(&c, xf_bt_have_vnni(), what);
    }
    /* two images of 40 x 40 pixels of 32 channels: the requantizing loop's
     * pixels in parts (over threads) */
    q8_case c = {.g = xf_graph_create("qconv")};
    conv_geom geo = {.ns = 2, .group = 1, .s = {1, 1}, .pb = {1, 1}, .pe = {1, 1}, .d = {1, 1}};
    int x = q8_operand(&c, q8_full_range(XF_DT_UINT8, SHAPE(2, 16, 40, 40)), false);
    c.node = add_qlinear_conv_zp(&c, x, XF_DT_UINT8, q8_full_range(XF_DT_UINT8, SHAPE(32, 16, 3, 3)), ZP_CHANNELS, &geo,
                                 XF_DT_UINT8, true, ZP_CONST, ZP_CONST, 1, true);
    xf_graph_add_output(c.g, out0(c.g, c.node));
    infer_ok(c.g, 21);
    q8_check_case(&c, xf_bt_have_vnni(), "QLinearConv of 2 x 40 x 40 pixels");
    ck_assert_int_eq(q8_off_by_one, 0);
    q8_off_by_one = q8_compared = 0;
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cpu_int8_conv");
    TCase *tc = tcase_create("conv");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, conv_integer_random);
    tcase_add_test(tc, conv_integer_weight_zero_points);
    tcase_add_test(tc, qlinear_conv_weight_zero_points);
    tcase_add_test(tc, qlinear_conv_random);
    tcase_add_test(tc, qlinear_conv_chains);
    tcase_add_test(tc, qlinear_near_ties);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
