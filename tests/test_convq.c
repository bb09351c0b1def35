/* ConvTranspose, RNN and the integer ops of quantized models
 * (DynamicQuantizeLinear, MatMulInteger, ConvInteger, QLinearMatMul,
 * QLinearConv): cpu_ref against hand-computed values, their shape and
 * dtype rules and the errors for operands and attributes that do not fit,
 * and the cpu backend's ConvTranspose (oneDNN's deconvolution) against
 * cpu_ref over strides, pads, output_padding, groups, dilations and 1 to
 * 3 spatial dimensions, and ConvTranspose's analytic cost. */
#include "backend_util.h"
#include "kernel_case_util.h"
#include "xf_optimizer.h"
#include "xf_proto.h"
#include "xf_test_util.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define CT XF_OP_CONV_TRANSPOSE


/* The case's output shapes as inference gives them (one per output). */
static void expect_inferred(node_case c, int k, int ndim, const int64_t *dims, xf_dtype dt)
{
    xf_graph *g = case_graph(&c);
    xf_error e = {0};
    ck_assert_msg(xf_graph_infer_shapes(g, c.opset, &e) == XF_OK, "%s", e.msg);
    const xf_value *v = &g->values[g->outputs[k]];
    xf_shape want = xf_shape_make(ndim, dims);
    char a[128], b[128];
    ck_assert_msg(xf_shape_equal(&v->shape, &want), "output %d: shape %s, want %s", k,
                  xf_shape_str(&v->shape, a, sizeof a), xf_shape_str(&want, b, sizeof b));
    ck_assert_msg(v->dtype == dt, "output %d: %s, want %s", k, xf_dtype_name(v->dtype), xf_dtype_name(dt));
    xf_graph_free(g);
    release_case(&c);
}

/* ------------------------------------------------------------ ConvTranspose */

/* A 1-D ConvTranspose of x = [1, 2, 3] by a kernel of three ones, stride
 * 2: every input position adds itself to three outputs, two apart, so
 * the full result is [1, 1, 1+2, 2, 2+3, 3, 3]. */
static node_case ct_1d(int64_t stride)
{
    node_case c = make_case(CT, 2, F32(DIMS(1, 1, 3), 1, 2, 3), F32(DIMS(1, 1, 3), 1, 1, 1));
    c.a.n_spatial = 1;
    c.a.strides[0] = stride;
    return c;
}

START_TEST(conv_transpose_full_result)
{
    EXPECT(run1(ct_1d(2)), XF_DT_FLOAT, DIMS(1, 1, 7), 1, 1, 3, 2, 5, 3, 3);
    EXPECT(run1(ct_1d(1)), XF_DT_FLOAT, DIMS(1, 1, 5), 1, 3, 6, 5, 3);
    /* a bias adds to every position, those no input reaches too */
    node_case c = ct_1d(3);
    c.n_in = 3;
    c.in[2] = F32(DIMS(1), 0.5);
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 1, 9), 1.5, 1.5, 1.5, 2.5, 2.5, 2.5, 3.5, 3.5, 3.5);
    /* 2-D, stride 2 and 2x2 ones: each input becomes a 2x2 block */
    c = make_case(CT, 2, F32(DIMS(1, 1, 2, 2), 1, 2, 3, 4), F32(DIMS(1, 1, 2, 2), 1, 1, 1, 1));
    c.a.n_spatial = 2;
    c.a.strides[0] = c.a.strides[1] = 2;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 1, 4, 4), 1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4);
}
END_TEST

/* Pads cut positions from the full result; output_padding adds positions
 * at the end (which only the bias reaches). */
START_TEST(conv_transpose_pads_and_output_padding)
{
    node_case c = ct_1d(2);
    c.a.pads[0] = 1;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 1, 6), 1, 3, 2, 5, 3, 3);
    c = ct_1d(2);
    c.a.pads[0] = 1;
    c.a.pads[1] = 2;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 1, 4), 1, 3, 2, 5);
    c = ct_1d(2);
    c.a.output_padding[0] = 1;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 1, 8), 1, 1, 3, 2, 5, 3, 3, 0);
    /* PyTorch's k=3, s=2, p=1, output_padding=1: twice the input */
    c = ct_1d(2);
    c.a.pads[0] = c.a.pads[1] = 1;
    c.a.output_padding[0] = 1;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 1, 6), 1, 3, 2, 5, 3, 3);
}
END_TEST

/* output_shape and auto_pad SAME decide the output length; ONNX splits the
 * cut: SAME_UPPER takes the odd position from the end, SAME_LOWER and no
 * auto_pad from the beginning.  A longer output than the full result
 * grows at the end. */
START_TEST(conv_transpose_output_shape_and_auto_pad)
{
    static const struct {
        xf_auto_pad pad;
        int64_t shape; /* 0: none */
        int n;
        double want[9];
    } cases[] = {
        {XF_AUTO_PAD_NOTSET, 6, 6, {1, 3, 2, 5, 3, 3}},
        {XF_AUTO_PAD_SAME_UPPER, 0, 6, {1, 1, 3, 2, 5, 3}},
        {XF_AUTO_PAD_SAME_LOWER, 0, 6, {1, 3, 2, 5, 3, 3}},
        {XF_AUTO_PAD_SAME_UPPER, 6, 6, {1, 1, 3, 2, 5, 3}},
        {XF_AUTO_PAD_NOTSET, 4, 4, {3, 2, 5, 3}},
        {XF_AUTO_PAD_SAME_UPPER, 4, 4, {1, 3, 2, 5}},
        {XF_AUTO_PAD_NOTSET, 9, 9, {1, 1, 3, 2, 5, 3, 3, 0, 0}},
        {XF_AUTO_PAD_VALID, 0, 7, {1, 1, 3, 2, 5, 3, 3}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        node_case c = ct_1d(2);
        c.a.auto_pad = cases[i].pad;
        c.a.pads[0] = c.a.pads[1] = 1; /* ignored: auto_pad or output_shape decide */
        c.a.has_output_shape = cases[i].shape > 0;
        c.a.output_shape[0] = cases[i].shape;
        expect(run1(c), XF_DT_FLOAT, DIMS(1, 1, cases[i].n), cases[i].want);
    }
}
END_TEST

/* Weights are (C, M / group, k): each group maps its input channels to its
 * own output channels; dilation spreads the kernel taps. */
START_TEST(conv_transpose_groups_and_dilations)
{
    xf_tensor *x = F32(DIMS(1, 2, 2), 1, 2, 3, 4), *w = F32(DIMS(2, 1, 2), 1, 10, 100, 1000);
    node_case c = make_case(CT, 2, x, w);
    c.a.group = 2;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 2, 3), 1, 12, 20, 300, 3400, 4000);
    c = make_case(CT, 2, F32(DIMS(1, 2, 2), 1, 2, 3, 4), F32(DIMS(2, 1, 2), 1, 10, 100, 1000));
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 1, 3), 301, 3412, 4020);
    /* two output channels per group: (C=2, M/group=2, k=1) */
    c = make_case(CT, 2, F32(DIMS(1, 2, 1), 1, 2), F32(DIMS(2, 2, 1), 1, 2, 3, 4));
    c.a.group = 2;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 4, 1), 1, 2, 6, 8);
    c = make_case(CT, 2, F32(DIMS(1, 1, 2), 1, 2), F32(DIMS(1, 1, 2), 1, 10));
    c.a.n_spatial = 1;
    c.a.dilations[0] = 2;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 1, 4), 1, 2, 10, 20);
    /* 3-D: a 1x1x2 input by a 2x1x1 kernel */
    c = make_case(CT, 2, F32(DIMS(1, 1, 1, 1, 2), 1, 2), F32(DIMS(1, 1, 2, 1, 1), 1, -1));
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 1, 2, 1, 2), 1, 2, -1, -2);
}
END_TEST

/* float16 and double run too (float16 through float, double in double). */
START_TEST(conv_transpose_dtypes)
{
    static const double xd[] = {1, 2, 3}, wd[] = {1, 1, 1}, bd[] = {0.25};
    node_case c = make_case(CT, 3, mk(XF_DT_DOUBLE, DIMS(1, 1, 3), xd), mk(XF_DT_DOUBLE, DIMS(1, 1, 3), wd),
                            mk(XF_DT_DOUBLE, DIMS(1), bd));
    c.a.strides[0] = 2;
    EXPECT(run1(c), XF_DT_DOUBLE, DIMS(1, 1, 7), 1.25, 1.25, 3.25, 2.25, 5.25, 3.25, 3.25);
    static const uint16_t xh[] = {0x3c00, 0x4000, 0x4200}, wh[] = {0x3c00, 0x3c00, 0x3c00}; /* 1, 2, 3; ones */
    c = make_case(CT, 2, mk(XF_DT_FLOAT16, DIMS(1, 1, 3), xh), mk(XF_DT_FLOAT16, DIMS(1, 1, 3), wh));
    c.a.strides[0] = 2;
    EXPECT(run1(c), XF_DT_FLOAT16, DIMS(1, 1, 7), 1, 1, 3, 2, 5, 3, 3);
}
END_TEST

START_TEST(conv_transpose_shapes)
{
    /* (1, 4, 3, 5) by (4, 3, 3, 2), group 2: 6 channels; rows 2 * 2 + 1 + 3
     * - 1 = 7, columns 3 * 4 + 2 + 3 - 1 = 16 */
    node_case c = make_case(CT, 2, iota_f32(DIMS(2, 4, 3, 5), 0), iota_f32(DIMS(4, 3, 3, 2), 0));
    c.a.n_spatial = 2;
    c.a.group = 2;
    c.a.strides[0] = 2;
    c.a.strides[1] = 3;
    c.a.dilations[1] = 2;
    c.a.pads[0] = c.a.pads[3] = 1;
    c.a.output_padding[0] = 1;
    c.a.output_padding[1] = 2;
    expect_inferred(c, 0, DIMS(2, 6, 7, 16), XF_DT_FLOAT);
    c = make_case(CT, 2, iota_f32(DIMS(1, 1, 3, 3, 3), 0), iota_f32(DIMS(1, 2, 2, 2, 2), 0));
    c.a.auto_pad = XF_AUTO_PAD_SAME_LOWER;
    c.a.strides[0] = c.a.strides[1] = c.a.strides[2] = 2;
    expect_inferred(c, 0, DIMS(1, 2, 6, 6, 6), XF_DT_FLOAT);
}
END_TEST

START_TEST(conv_transpose_errors)
{
    expect_infer_error(make_case(CT, 2, iota_f32(DIMS(1, 3, 4), 0), iota_f32(DIMS(2, 1, 3), 0)),
                       "input channels 3 must equal the weight's first dimension");
    node_case c = make_case(CT, 2, iota_f32(DIMS(1, 3, 4), 0), iota_f32(DIMS(3, 1, 3), 0));
    c.a.group = 2;
    expect_infer_error(c, "divide by group 2");
    expect_infer_error(make_case(CT, 3, iota_f32(DIMS(1, 2, 4), 0), iota_f32(DIMS(2, 3, 3), 0), F32(DIMS(2), 0, 0)),
                       "bias shape 2 does not match 3 output channels");
    c = make_case(CT, 2, iota_f32(DIMS(1, 2, 4), 0), iota_f32(DIMS(2, 3, 3), 0));
    c.a.n_spatial = 1;
    c.a.kernel[0] = 2;
    expect_infer_error(c, "kernel_shape 2 on spatial axis 0 does not match weight shape 2x3x3");
    c = make_case(CT, 2, iota_f32(DIMS(1, 2, 4), 0), iota_f32(DIMS(2, 3, 3), 0));
    c.a.output_padding[0] = -1;
    expect_infer_error(c, "output_padding -1 not negative");
    c = make_case(CT, 2, iota_f32(DIMS(1, 2, 4), 0), iota_f32(DIMS(2, 3, 3), 0));
    c.a.pads[0] = 3;
    c.a.pads[1] = 3;
    expect_infer_error(c, "pads 3 and 3 leave nothing of the 6 positions");
    c = make_case(CT, 2, iota_f32(DIMS(1, 2, 4), 0), iota_f32(DIMS(2, 3, 3), 0));
    c.a.has_output_shape = true;
    c.a.output_shape[0] = -2;
    expect_infer_error(c, "output_shape -2 is out of range");
    c = make_case(CT, 2, iota_f32(DIMS(1, 2, 4), 0), iota_f32(DIMS(2, 3, 3), 0));
    c.a.strides[0] = 0;
    expect_infer_error(c, "must be positive");
    expect_infer_error(make_case(CT, 2, iota_f32(DIMS(1, 2, 4), 0), iota_f32(DIMS(2, 3, 3, 3), 0)),
                       "weight shape 2x3x3x3 does not fit input shape 1x2x4");
}
END_TEST

/* The analytic cost model counts a ConvTranspose's multiply-adds (each
 * input element meets M/group x kernel weights) at the matrix rate: 2 x
 * 64 x 32 x 32 x 64 x 4 x 4 flops at 200 GFLOP/s on analytic:cpu. */
START_TEST(conv_transpose_cost)
{
    xf_tensor *x = xf_tensor_create(XF_DT_FLOAT, &(xf_shape){4, {1, 64, 32, 32}});
    xf_tensor *w = xf_tensor_create(XF_DT_FLOAT, &(xf_shape){4, {64, 64, 4, 4}});
    node_case c = make_case(CT, 2, x, w);
    c.feed = 1; /* a constant input would make the node a constant, which costs nothing */
    c.a.n_spatial = 2;
    c.a.strides[0] = c.a.strides[1] = 2;
    c.a.pads[0] = c.a.pads[1] = c.a.pads[2] = c.a.pads[3] = 1;
    xf_graph *g = case_graph(&c);
    xf_error e = {0};
    ck_assert_msg(xf_graph_infer_shapes(g, 17, &e) == XF_OK, "%s", e.msg);
    xf_cost_model *m;
    ck_assert_msg(xf_cost_model_create("analytic:cpu", NULL, &m, &e) == XF_OK, "%s", e.msg);
    double seconds, flops = 2.0 * 64 * 32 * 32 * 64 * 4 * 4;
    ck_assert_msg(xf_cost_graph(m, g, 17, &seconds, &e) == XF_OK, "%s", e.msg);
    ck_assert_msg(seconds >= flops / 200e9 && seconds < 1.2 * flops / 200e9, "%g s", seconds);
    xf_cost_model_free(m);
    xf_graph_free(g);
    release_case(&c);
}
END_TEST

/* ------------------------------------------------------------ ConvTranspose on cpu */

static void check_cpu(const xf_graph *g, int64_t opset, double atol, double rtol, const char *what)
{
    xf_bt_check_graph(g, opset, "cpu", true, atol, rtol, what);
}

static xf_attrs *node_attrs(xf_graph *g, int n) { return &g->nodes[n].attrs; }

/* Random transposed convolutions on cpu against cpu_ref: 1-D, 2-D and 3-D,
 * groups (depthwise among them), strides, dilations, pads, output_padding
 * (some beyond the end pad, which oneDNN cannot take), output_shape and
 * auto_pad, bias or none, weights constant or computed. */
START_TEST(conv_transpose_cpu_random)
{
    if (!xf_backend_find("cpu")) {
        printf("skipped: this build has no oneDNN, so no cpu backend\n");
        return;
    }
    xf_bt_seed(2024);
    for (int t = 0; t < 48; t++) {
        int ns = t % 10 == 9 ? 1 : t % 10 == 8 ? 3 : 2;
        int64_t group = t % 7 == 3 ? 4 : xf_bt_rnd(0, 2) == 0 ? xf_bt_rnd(2, 3) : 1;
        int64_t cg = t % 7 == 3 ? 1 : xf_bt_rnd(1, t % 5 == 0 ? 12 : 4), mg = t % 7 == 3 ? 1 : xf_bt_rnd(1, 5);
        int64_t x_dims[5] = {xf_bt_rnd(1, 2), group * cg}, w_dims[5] = {group * cg, mg};
        int64_t k[3], s[3], pb[3], pe[3], d[3], op[3], full[3];
        for (int i = 0; i < ns; i++) {
            k[i] = xf_bt_rnd(1, ns == 3 ? 3 : 5);
            s[i] = xf_bt_rnd(1, 3);
            d[i] = xf_bt_rnd(1, 2);
            x_dims[2 + i] = xf_bt_rnd(1, ns == 3 ? 4 : 9);
            w_dims[2 + i] = k[i];
            op[i] = xf_bt_rnd(0, (s[i] > d[i] ? s[i] : d[i]) - 1);
            /* the pads leave at least one position */
            pb[i] = xf_bt_rnd(0, (k[i] - 1) * d[i]);
            pe[i] = t % 4 == 1 ? 0 : xf_bt_rnd(0, (k[i] - 1) * d[i] - pb[i]);
            full[i] = s[i] * (x_dims[2 + i] - 1) + op[i] + (k[i] - 1) * d[i] + 1;
        }
        xf_graph *g = xf_graph_create("conv_transpose");
        int x = xf_bt_input(g, XF_DT_FLOAT, xf_shape_make(2 + ns, x_dims));
        xf_shape ws = xf_shape_make(2 + ns, w_dims);
        int w = t % 5 == 2 ? xf_bt_input(g, XF_DT_FLOAT, ws) : xf_bt_random_const(g, ws, false);
        int b = xf_bt_rnd(0, 1) ? xf_bt_random_const(g, xf_shape_make(1, (int64_t[]){group * mg}), false) : -1;
        int n = xf_bt_finish_single(g, CT, b >= 0 ? 3 : 2, (int[]){x, w, b});
        xf_attrs *a = node_attrs(g, n);
        xf_bt_set_window(a, ns, NULL, s, pb, pe, d);
        a->group = group;
        for (int i = 0; i < ns; i++)
            a->output_padding[i] = op[i];
        if (t % 6 == 5)
            a->auto_pad = xf_bt_rnd(0, 1) ? XF_AUTO_PAD_SAME_UPPER : XF_AUTO_PAD_SAME_LOWER;
        if (t % 6 == 4) {
            a->has_output_shape = true;
            for (int i = 0; i < ns; i++) {
                a->output_shape[i] = full[i] - xf_bt_rnd(-1, 2);
                if (a->output_shape[i] < 1)
                    a->output_shape[i] = full[i] + 1;
            }
        }
        char what[96];
        snprintf(what, sizeof what, "conv_transpose case %d (%dD, group %lld)", t, ns, (long long)group);
        check_cpu(g, 17, 1e-4, 1e-3, what);
        xf_graph_free(g);
    }
}
END_TEST

/* A decoder's steps: Conv -> ConvTranspose (k 4, s 2, p 1) -> Relu ->
 * ConvTranspose (k 3, s 2, p 1, output_padding 1) -> Tanh, channels in
 * whole blocks so that values may stay in oneDNN's native layout and the
 * activations fold into the deconvolutions. */
START_TEST(conv_transpose_cpu_decoder)
{
    if (!xf_backend_find("cpu")) {
        printf("skipped: this build has no oneDNN, so no cpu backend\n");
        return;
    }
    xf_graph *g = xf_graph_create("decoder");
    int x = xf_bt_input(g, XF_DT_FLOAT, xf_shape_make(4, (int64_t[]){1, 16, 6, 5}));
    int w1 = xf_bt_random_const(g, xf_shape_make(4, (int64_t[]){32, 16, 3, 3}), false);
    int w2 = xf_bt_random_const(g, xf_shape_make(4, (int64_t[]){32, 16, 4, 4}), false);
    int b2 = xf_bt_random_const(g, xf_shape_make(1, (int64_t[]){16}), false);
    int w3 = xf_bt_random_const(g, xf_shape_make(4, (int64_t[]){16, 3, 3, 3}), false);
    int v[6] = {x};
    static const xf_op ops[] = {XF_OP_CONV, CT, XF_OP_RELU, CT, XF_OP_TANH};
    for (int i = 0; i < 5; i++) {
        int ins[3] = {v[i], i == 0 ? w1 : i == 1 ? w2 : w3, b2}, outs[1];
        int n_in = ops[i] == XF_OP_RELU || ops[i] == XF_OP_TANH ? 1 : i == 1 ? 3 : 2;
        outs[0] = v[i + 1] = xf_graph_add_value(g, NULL, XF_DT_UNDEFINED, NULL);
        int n = xf_graph_add_node(g, ops[i], NULL, n_in, ins, 1, outs);
        ck_assert_int_ge(n, 0);
        if (n_in == 1)
            continue;
        xf_attrs *a = node_attrs(g, n);
        a->n_spatial = 2;
        for (int d = 0; d < 2; d++) {
            a->pads[d] = a->pads[2 + d] = 1;
            a->strides[d] = i == 0 ? 1 : 2;
            a->output_padding[d] = i == 3;
        }
    }
    xf_graph_add_output(g, v[5]);
    check_cpu(g, 17, 1e-4, 1e-3, "decoder");
    xf_graph_free(g);
}
END_TEST

/* One ConvTranspose whose kernel equals its stride, as the cpu backend
 * runs it: a 1x1 convolution and a reorder into the output (kernel
 * positions interleaved with the pixels).  Optionally a 3x3 Conv before
 * it and after it (values stored in oneDNN's native layout) and a Relu
 * folded into it; near misses (pads, groups, dilations, computed weights)
 * take oneDNN's deconvolution. */
typedef struct shuffle_case {
    int ns;
    int64_t n, c, m, k[3], x[3];
    bool bias, conv_before, relu, conv_after, computed_w;
    int64_t pad, group, dil;
} shuffle_case;

static void check_shuffle(const shuffle_case *sc, const char *what)
{
    xf_graph *g = xf_graph_create("kernel_is_stride");
    int64_t x_dims[5] = {sc->n, sc->c}, w_dims[5] = {sc->c, sc->m / sc->group};
    for (int i = 0; i < sc->ns; i++) {
        x_dims[2 + i] = sc->x[i];
        w_dims[2 + i] = sc->k[i];
    }
    int x = xf_bt_input(g, XF_DT_FLOAT, xf_shape_make(2 + sc->ns, x_dims));
    if (sc->conv_before)
        x = xf_bt_conv(g, x, sc->c, sc->c, 3, 1, XF_ACT_RELU);
    xf_shape ws = xf_shape_make(2 + sc->ns, w_dims);
    int w = sc->computed_w ? xf_bt_input(g, XF_DT_FLOAT, ws) : xf_bt_random_const(g, ws, false);
    int b = sc->bias ? xf_bt_random_const(g, xf_shape_make(1, (int64_t[]){sc->m}), false) : -1;
    int y = xf_graph_add_value(g, NULL, XF_DT_UNDEFINED, NULL);
    int n = xf_graph_add_node(g, CT, NULL, b >= 0 ? 3 : 2, (int[]){x, w, b}, 1, &y);
    ck_assert_int_ge(n, 0);
    int64_t p[3] = {sc->pad, sc->pad, sc->pad}, d[3] = {sc->dil, sc->dil, sc->dil};
    xf_bt_set_window(node_attrs(g, n), sc->ns, NULL, sc->k, p, p, d);
    node_attrs(g, n)->group = sc->group;
    if (sc->relu) {
        int r = xf_graph_add_value(g, NULL, XF_DT_UNDEFINED, NULL);
        ck_assert_int_ge(xf_graph_add_node(g, XF_OP_RELU, NULL, 1, &y, 1, &r), 0);
        y = r;
    }
    if (sc->conv_after)
        y = xf_bt_conv(g, y, sc->m, 16, 3, 1, XF_ACT_NONE);
    xf_graph_add_output(g, y);
    check_cpu(g, 17, 1e-4, 1e-3, what);
    xf_graph_free(g);
}

START_TEST(conv_transpose_cpu_kernel_is_stride)
{
    if (!xf_backend_find("cpu")) {
        printf("skipped: this build has no oneDNN, so no cpu backend\n");
        return;
    }
    xf_bt_seed(77);
    static const shuffle_case cases[] = {
        /* YOLO's mask head: native in and out, bias, a Relu folded in */
        {2, 1, 32, 32, {2, 2}, {7, 5}, true, true, true, true, false, 0, 1, 1},
        /* plain in and out, a kernel of 2 x 3, no bias, batch 2 */
        {2, 2, 3, 5, {2, 3}, {4, 3}, false, false, false, false, false, 0, 1, 1},
        {1, 1, 16, 48, {4}, {9}, true, false, false, false, false, 0, 1, 1},
        {3, 1, 5, 3, {2, 1, 3}, {3, 4, 2}, true, false, true, false, false, 0, 1, 1},
        /* a kernel of one: a 1x1 convolution */
        {2, 1, 16, 16, {1, 1}, {6, 6}, true, true, false, true, false, 0, 1, 1},
        /* near misses */
        {2, 1, 16, 32, {2, 2}, {6, 6}, true, true, false, true, false, 1, 1, 1},
        {2, 1, 16, 32, {2, 2}, {6, 6}, true, true, false, false, false, 0, 2, 1},
        {2, 1, 16, 32, {2, 2}, {6, 6}, true, true, false, false, false, 0, 1, 2},
        {2, 1, 16, 32, {2, 2}, {6, 6}, true, false, false, false, true, 0, 1, 1},
    };
    for (int i = 0; i < (int)(sizeof cases / sizeof *cases); i++) {
        char what[64];
        snprintf(what, sizeof what, "kernel-is-stride case %d", i);
        check_shuffle(&cases[i], what);
    }
}
END_TEST

/* ------------------------------------------------------------ RNN */

/* One hidden unit over one input feature: W 0.5, R 0.25, biases 0.1 and
 * 0.2 (per direction when two). */
static node_case rnn_case(xf_tensor *x, int dirs, int direction)
{
    node_case c = make_case(XF_OP_RNN, 4, x, dirs == 2 ? F32(DIMS(2, 1, 1), 0.5, 0.5) : F32(DIMS(1, 1, 1), 0.5),
                            dirs == 2 ? F32(DIMS(2, 1, 1), 0.25, 0.25) : F32(DIMS(1, 1, 1), 0.25),
                            dirs == 2 ? F32(DIMS(2, 2), 0.1, 0.2, 0.1, 0.2) : F32(DIMS(1, 2), 0.1, 0.2));
    c.opset = 14;
    c.n_out = 2;
    c.a.rnn.direction = direction;
    return c;
}

/* h1 = tanh(0.5 * 1 + 0.3), h2 = tanh(0.5 * 2 + 0.25 h1 + 0.3): forward;
 * reverse runs from the last step; bidirectional gives both. */
START_TEST(rnn_directions)
{
    double h1 = tanh(0.8), h2 = tanh(1.3 + 0.25 * h1);
    double r2 = tanh(1.3), r1 = tanh(0.8 + 0.25 * r2);
    xf_tensor *out[2];
    node_case c = rnn_case(F32(DIMS(2, 1, 1), 1, 2), 1, 0);
    run_case(&c, out);
    EXPECT(out[0], XF_DT_FLOAT, DIMS(2, 1, 1, 1), h1, h2);
    EXPECT(out[1], XF_DT_FLOAT, DIMS(1, 1, 1), h2);
    c = rnn_case(F32(DIMS(2, 1, 1), 1, 2), 1, 1);
    run_case(&c, out);
    EXPECT(out[0], XF_DT_FLOAT, DIMS(2, 1, 1, 1), r1, r2);
    EXPECT(out[1], XF_DT_FLOAT, DIMS(1, 1, 1), r1);
    c = rnn_case(F32(DIMS(2, 1, 1), 1, 2), 2, 2);
    run_case(&c, out);
    EXPECT(out[0], XF_DT_FLOAT, DIMS(2, 2, 1, 1), h1, r1, h2, r2);
    EXPECT(out[1], XF_DT_FLOAT, DIMS(2, 1, 1), h2, r1);
}
END_TEST

/* Batch entries run over their own lengths from their own initial states:
 * Y is 0 past a sequence's end and Y_h is its last step (batch first with
 * layout 1). */
START_TEST(rnn_lengths_initial_state_layout)
{
    for (int layout = 0; layout < 2; layout++) {
        /* x[t][b]: batch 0 [1, 2], batch 1 [3, (unused) 9] */
        xf_tensor *x = layout ? F32(DIMS(2, 2, 1), 1, 2, 3, 9) : F32(DIMS(2, 2, 1), 1, 3, 2, 9);
        node_case c = rnn_case(x, 1, 0);
        c.n_in = 6;
        c.in[4] = I32(DIMS(2), 2, 1);
        c.in[5] = layout ? F32(DIMS(2, 1, 1), 1, -1) : F32(DIMS(1, 2, 1), 1, -1);
        c.a.rnn.layout = layout;
        double a1 = tanh(0.8 + 0.25), a2 = tanh(1.3 + 0.25 * a1), b1 = tanh(1.8 - 0.25);
        xf_tensor *out[2];
        run_case(&c, out);
        if (layout) {
            EXPECT(out[0], XF_DT_FLOAT, DIMS(2, 2, 1, 1), a1, a2, b1, 0);
            EXPECT(out[1], XF_DT_FLOAT, DIMS(2, 1, 1), a2, b1);
        } else {
            EXPECT(out[0], XF_DT_FLOAT, DIMS(2, 1, 2, 1), a1, b1, a2, 0);
            EXPECT(out[1], XF_DT_FLOAT, DIMS(1, 2, 1), a2, b1);
        }
    }
}
END_TEST

/* Activations other than Tanh, with their parameters, one per direction;
 * clip bounds the gate input first. */
START_TEST(rnn_activations_and_clip)
{
    node_case c =
        make_case(XF_OP_RNN, 3, F32(DIMS(2, 1, 1), 3, -1), F32(DIMS(2, 1, 1), 2, 2), F32(DIMS(2, 1, 1), 0, 0));
    c.opset = 14;
    c.a.rnn.direction = 2;
    c.a.rnn.has_clip = true;
    c.a.rnn.clip = 1.5f;
    c.a.rnn.n_acts = 2;
    c.a.rnn.acts[0] = XF_RNN_RELU;
    c.a.rnn.acts[1] = XF_RNN_LEAKY_RELU;
    c.a.rnn.act_alpha[1] = 0.1f;
    /* forward: relu(clip(6)) = 1.5, relu(clip(-2)) = 0; reverse: leaky(clip(-2)) = -0.15, leaky(clip(6)) = 1.5 */
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(2, 2, 1, 1), 1.5, 1.5, 0, -0.15);
    static const double x[] = {0.5, -2}, w[] = {1}, r[] = {1};
    c = make_case(XF_OP_RNN, 3, mk(XF_DT_DOUBLE, DIMS(2, 1, 1), x), mk(XF_DT_DOUBLE, DIMS(1, 1, 1), w),
                  mk(XF_DT_DOUBLE, DIMS(1, 1, 1), r));
    c.a.rnn.n_acts = 1;
    c.a.rnn.acts[0] = XF_RNN_SOFTSIGN;
    /* double: softsign(0.5) = 1/3, softsign(-2 + 1/3) = -5/8 */
    EXPECT(run1(c), XF_DT_DOUBLE, DIMS(2, 1, 1, 1), 1.0 / 3, -0.625);
}
END_TEST

START_TEST(rnn_shapes_and_errors)
{
    node_case c =
        make_case(XF_OP_RNN, 3, iota_f32(DIMS(5, 3, 2), 0), iota_f32(DIMS(2, 4, 2), 0), iota_f32(DIMS(2, 4, 4), 0));
    c.n_out = 2;
    c.a.rnn.direction = 2;
    expect_inferred(c, 0, DIMS(5, 2, 3, 4), XF_DT_FLOAT);
    c = make_case(XF_OP_RNN, 3, iota_f32(DIMS(5, 3, 2), 0), iota_f32(DIMS(2, 4, 2), 0), iota_f32(DIMS(2, 4, 4), 0));
    c.n_out = 2;
    c.a.rnn.direction = 2;
    c.a.rnn.layout = 1;
    expect_inferred(c, 1, DIMS(5, 2, 4), XF_DT_FLOAT);
    expect_infer_error(
        make_case(XF_OP_RNN, 3, iota_f32(DIMS(5, 3, 2), 0), iota_f32(DIMS(1, 8, 2), 0), iota_f32(DIMS(1, 4, 4), 0)),
        "W has shape 1x8x2; X 5x3x2 with hidden size 4 and 1 direction(s) asks for 1x4x2");
    c = make_case(XF_OP_RNN, 3, iota_f32(DIMS(5, 3, 2), 0), iota_f32(DIMS(1, 4, 2), 0), iota_f32(DIMS(1, 4, 4), 0));
    c.a.rnn.n_acts = 2;
    c.a.rnn.acts[0] = c.a.rnn.acts[1] = XF_RNN_TANH;
    expect_infer_error(c, "has 2 activation functions; RNN takes 1 per direction, 1 direction(s) here");
    c = make_case(XF_OP_RNN, 5, iota_f32(DIMS(5, 3, 2), 0), iota_f32(DIMS(1, 4, 2), 0), iota_f32(DIMS(1, 4, 4), 0),
                  NULL, I64(DIMS(3), 1, 1, 1));
    expect_infer_error(c, "input 4 must be INT32");
}
END_TEST

/* ------------------------------------------------------------ DynamicQuantizeLinear */

#define U8(dims, ...) mk(XF_DT_UINT8, dims, (uint8_t[]){__VA_ARGS__})
#define S8(dims, ...) mk(XF_DT_INT8, dims, (int8_t[]){__VA_ARGS__})

static void dynamic_quantize(xf_tensor *x, int n, const double *y, double scale, double zp)
{
    node_case c = make_case(XF_OP_DYNAMIC_QUANTIZE_LINEAR, 1, x);
    c.n_out = 3;
    int64_t dims[1] = {n};
    xf_tensor *out[3];
    run_case(&c, out);
    expect(out[0], XF_DT_UINT8, 1, dims, y);
    EXPECT(out[1], XF_DT_FLOAT, SCALAR, scale);
    EXPECT(out[2], XF_DT_UINT8, SCALAR, zp);
}

/* scale = (max - min) / 255 over the range widened to hold 0, zero point
 * round(-min / scale); values round half to even and saturate. */
START_TEST(dynamic_quantize_linear)
{
    dynamic_quantize(F32(DIMS(4), -1, 0, 1, 2), 4, (double[]){0, 85, 170, 255}, 3.0f / 255.0f, 85);
    /* scale 1: halves go to the even neighbour */
    dynamic_quantize(F32(DIMS(5), 0, 0.5, 1.5, 2.5, 255), 5, (double[]){0, 0, 2, 2, 255}, 1, 0);
    /* all negative: the range ends at 0, whose zero point is 255 */
    dynamic_quantize(F32(DIMS(2), -255, -1.5), 2, (double[]){0, 253}, 1, 255);
    /* all zeros: an empty range takes scale 1 (as ONNX Runtime) */
    dynamic_quantize(F32(DIMS(2), 0, 0), 2, (double[]){0, 0}, 1, 0);
    /* NaN takes no part in the range and quantizes to 0; scale 2 puts the
     * zero point at 127.5 -> 128, and 255 / 2 + 128 saturates */
    dynamic_quantize(F32(DIMS(3), NAN, 255, -255), 3, (double[]){0, 255, 0}, 2, 128);
}
END_TEST

/* ------------------------------------------------------------ MatMulInteger, QLinearMatMul */

/* A (uint8 2x3) times B (int8 3x2), with and without zero points: per
 * tensor, per row of A and per column of B, and per matrix row/column in
 * the batched form. */
START_TEST(matmul_integer)
{
    EXPECT(
        run1(make_case(XF_OP_MATMUL_INTEGER, 2, U8(DIMS(2, 3), 1, 2, 3, 4, 5, 6), S8(DIMS(3, 2), 1, -1, 2, 0, -3, 1))),
        XF_DT_INT32, DIMS(2, 2), -4, 2, -4, 2);
    /* A - [1, 4] per row = [[0,1,2],[0,1,2]]; B - [1, -1] per column = [[0,0],[1,1],[-4,2]] */
    EXPECT(run1(make_case(XF_OP_MATMUL_INTEGER, 4, U8(DIMS(2, 3), 1, 2, 3, 4, 5, 6), S8(DIMS(3, 2), 1, -1, 2, 0, -3, 1),
                          U8(DIMS(2), 1, 4), S8(DIMS(2), 1, -1))),
           XF_DT_INT32, DIMS(2, 2), -7, 5, -7, 5);
    EXPECT(run1(make_case(XF_OP_MATMUL_INTEGER, 4, U8(DIMS(1, 2), 200, 255), U8(DIMS(2, 1), 255, 128), U8(SCALAR, 128),
                          U8(SCALAR, 0))),
           XF_DT_INT32, DIMS(1, 1), 72 * 255 + 127 * 128);
    /* batched (2, 1, 2) by (2, 1): a zero point per matrix row, (2, 1, 1) */
    EXPECT(run1(make_case(XF_OP_MATMUL_INTEGER, 3, S8(DIMS(2, 1, 2), 1, 2, 3, 4), S8(DIMS(2, 1), 1, 1),
                          S8(DIMS(2, 1, 1), 1, 3))),
           XF_DT_INT32, DIMS(2, 1, 1), 1, 1);
}
END_TEST

/* QLinearMatMul: the int32 product requantized with a_scale * b_scale /
 * y_scale, rounded half to even and saturated. */
static node_case qmm_case(xf_tensor *a, xf_tensor *b, xf_tensor *b_scale, xf_tensor *y_zp)
{
    return make_case(XF_OP_QLINEAR_MATMUL, 8, a, F32(SCALAR, 1), a->dtype == XF_DT_INT8 ? S8(SCALAR, 0) : U8(SCALAR, 0),
                     b, b_scale, U8(SCALAR, 0), F32(SCALAR, 1), y_zp);
}

START_TEST(qlinear_matmul)
{
    /* 5 * 0.5 = 2.5 -> 2, 7 * 0.5 = 3.5 -> 4, 255 * 2 saturates at 255 */
    EXPECT(run1(qmm_case(U8(DIMS(1, 1), 1), U8(DIMS(1, 3), 5, 7, 255), F32(DIMS(3), 0.5, 0.5, 2), U8(SCALAR, 0))),
           XF_DT_UINT8, DIMS(1, 3), 2, 4, 255);
    /* int8 output with a zero point: -100 * 3 = -300 saturates at -128; 1 * 3 + 10 = 13 */
    EXPECT(run1(qmm_case(S8(DIMS(2, 1), -100, 1), U8(DIMS(1, 1), 3), F32(SCALAR, 1), S8(SCALAR, 10))), XF_DT_INT8,
           DIMS(2, 1), -128, 13);
    /* per tensor everywhere: ONNX's test, (a - 113) (b - 114) 0.0066 * 0.00705 / 0.0107 + 118 */
    node_case c =
        make_case(XF_OP_QLINEAR_MATMUL, 8, U8(DIMS(2, 4), 208, 236, 0, 238, 3, 214, 255, 29), F32(SCALAR, 0.0066),
                  U8(SCALAR, 113), U8(DIMS(4, 3), 152, 51, 244, 60, 26, 255, 0, 127, 246, 127, 254, 247),
                  F32(SCALAR, 0.00705), U8(SCALAR, 114), F32(SCALAR, 0.0107), U8(SCALAR, 118));
    EXPECT(run1(c), XF_DT_UINT8, DIMS(2, 3), 168, 115, 255, 1, 66, 151);
}
END_TEST

/* ------------------------------------------------------------ ConvInteger, QLinearConv */

/* x (1..9 as 3x3) less zero point 1, by two 2x2 kernels of ones less the
 * per-channel zero points 0 and 1: sums of the windows of [0..8], and 0. */
START_TEST(conv_integer)
{
    node_case c = make_case(XF_OP_CONV_INTEGER, 4, U8(DIMS(1, 1, 3, 3), 1, 2, 3, 4, 5, 6, 7, 8, 9),
                            U8(DIMS(2, 1, 2, 2), 1, 1, 1, 1, 1, 1, 1, 1), U8(SCALAR, 1), U8(DIMS(2), 0, 1));
    EXPECT(run1(c), XF_DT_INT32, DIMS(1, 2, 2, 2), 8, 12, 20, 24, 0, 0, 0, 0);
    /* padding is the zero point: pads add nothing */
    c = make_case(XF_OP_CONV_INTEGER, 3, U8(DIMS(1, 1, 2, 2), 11, 12, 13, 14), S8(DIMS(1, 1, 1, 2), 1, -1),
                  U8(SCALAR, 10));
    c.a.n_spatial = 2;
    c.a.pads[1] = c.a.pads[3] = 1;
    EXPECT(run1(c), XF_DT_INT32, DIMS(1, 1, 2, 3), -1, -1, 2, -3, -1, 4);
}
END_TEST

/* ConvInteger with no output channels (a kernel of shape 0x1x2x2: the
 * run fuzzer's find, kept as a seed) gives an empty output on both host
 * backends; it divided by the channel count. */
START_TEST(conv_integer_no_channels)
{
    xf_model *m;
    xf_error e;
    ck_assert_msg(xf_model_load(XF_SOURCE_DIR "/tests/fuzz/corpus/onnx/convinteger_no_channels.onnx", NULL, &m, &e) ==
                      XF_OK,
                  "%s", e.msg);
    static const char *const backends[] = {"cpu_ref", "cpu"};
    for (int b = 0; b < 2; b++) {
        if (!xf_backend_find(backends[b]))
            continue;
        xf_session *s;
        ck_assert_msg(xf_session_create(m->graph, xf_model_opset(m), backends[b], NULL, &s, &e) == XF_OK, "%s",
                      e.msg);
        xf_tensor *in[3] = {xf_tensor_create(XF_DT_UINT8, &(xf_shape){4, {1, 1, 3, 91}}),
                            xf_tensor_create(XF_DT_UINT8, &(xf_shape){4, {0, 1, 2, 2}}),
                            xf_tensor_create(XF_DT_UINT8, &(xf_shape){0, {0}})};
        xf_tensor *out[1] = {NULL};
        ck_assert_msg(xf_session_run(s, in, out, &e) == XF_OK, "%s: %s", backends[b], e.msg);
        ck_assert_int_eq(out[0]->shape.ndim, 4);
        ck_assert_int_eq(out[0]->shape.dims[1], 0);
        ck_assert_int_eq(xf_tensor_numel(out[0]), 0);
        for (int k = 0; k < 3; k++)
            xf_tensor_release(in[k]);
        xf_tensor_release(out[0]);
        xf_session_free(s);
    }
    xf_model_free(m);
}
END_TEST

/* QLinearConv with per-channel weight scales and an int32 bias: channel 0
 * (scale 0.5) sums 1 + 2 + 3 + 4 = 10, plus bias 1 -> 5.5 -> 6; channel 1
 * (scale 0.25) sums 2 * 10 + bias -8 = 12 -> 3, plus y_zero_point 100. */
START_TEST(qlinear_conv)
{
    node_case c = make_case(XF_OP_QLINEAR_CONV, 9, U8(DIMS(1, 1, 2, 2), 1, 2, 3, 4), F32(SCALAR, 1), U8(SCALAR, 0),
                            S8(DIMS(2, 1, 2, 2), 1, 1, 1, 1, 2, 2, 2, 2), F32(DIMS(2), 0.5, 0.25), S8(DIMS(2), 0, 0),
                            F32(SCALAR, 1), U8(SCALAR, 100), I32(DIMS(2), 1, -8));
    EXPECT(run1(c), XF_DT_UINT8, DIMS(1, 2, 1, 1), 106, 103);
    /* group 2, stride 2, int8 output saturating both ways */
    c = make_case(XF_OP_QLINEAR_CONV, 8, S8(DIMS(1, 2, 1, 3), 100, 0, 100, -100, 0, -100), F32(SCALAR, 1),
                  S8(SCALAR, 0), S8(DIMS(2, 1, 1, 1), 2, 1), F32(SCALAR, 1), S8(SCALAR, 0), F32(SCALAR, 1),
                  S8(SCALAR, 0));
    c.a.group = 2;
    c.a.n_spatial = 2;
    c.a.strides[0] = c.a.strides[1] = 2;
    EXPECT(run1(c), XF_DT_INT8, DIMS(1, 2, 1, 2), 127, 127, -100, -100);
}
END_TEST

/* Zero points and scales of shapes the ops do not define, and mismatched
 * types, fail inference naming the node. */
START_TEST(quantized_errors)
{
    expect_infer_error(make_case(XF_OP_DYNAMIC_QUANTIZE_LINEAR, 1, mk(XF_DT_DOUBLE, DIMS(1), (double[]){1})),
                       "x must be float, got DOUBLE");
    expect_infer_error(make_case(XF_OP_MATMUL_INTEGER, 3, U8(DIMS(2, 3), 0, 0, 0, 0, 0, 0), U8(DIMS(3, 1), 0, 0, 0),
                                 U8(DIMS(3), 0, 0, 0)),
                       "a parameter of shape 3 does not fit operand a 2x3");
    expect_infer_error(
        make_case(XF_OP_MATMUL_INTEGER, 4, U8(DIMS(1, 2), 0, 0), U8(DIMS(2, 1), 0, 0), NULL, S8(SCALAR, 0)),
        "input 1's zero point is INT8 but its operand is UINT8");
    expect_infer_error(make_case(XF_OP_MATMUL_INTEGER, 2, F32(DIMS(1, 2), 0, 0), U8(DIMS(2, 1), 0, 0)),
                       "input 0 must be int8 or uint8, got FLOAT");
    node_case c = qmm_case(U8(DIMS(2, 1), 1, 2), U8(DIMS(1, 1), 3), F32(SCALAR, 1), U8(SCALAR, 0));
    xf_tensor_release(c.in[6]);
    c.in[6] = F32(DIMS(2), 1, 1);
    expect_infer_error(c, "y_scale must be a scalar (per tensor), got shape 2");
    c = make_case(XF_OP_CONV_INTEGER, 3, U8(DIMS(1, 1, 2, 2), 0, 0, 0, 0), U8(DIMS(1, 1, 1, 1), 0), U8(DIMS(2), 0, 0));
    expect_infer_error(c, "x_zero_point must be a scalar (per tensor), got shape 2");
    c = make_case(XF_OP_QLINEAR_CONV, 8, U8(DIMS(1, 1, 2, 2), 0, 0, 0, 0), F32(SCALAR, 1), U8(SCALAR, 0),
                  S8(DIMS(2, 1, 1, 1), 1, 1), F32(DIMS(3), 1, 1, 1), S8(SCALAR, 0), F32(SCALAR, 1), U8(SCALAR, 0));
    expect_infer_error(c, "the weight's scale must be a scalar or have one entry per output channel (2), got shape 3");
    c = make_case(XF_OP_QLINEAR_CONV, 9, U8(DIMS(1, 1, 2, 2), 0, 0, 0, 0), F32(SCALAR, 1), U8(SCALAR, 0),
                  S8(DIMS(2, 1, 1, 1), 1, 1), F32(SCALAR, 1), S8(SCALAR, 0), F32(SCALAR, 1), U8(SCALAR, 0),
                  I64(DIMS(2), 0, 0));
    expect_infer_error(c, "the bias must be int32, got INT64");
    c = make_case(XF_OP_QLINEAR_CONV, 9, U8(DIMS(1, 1, 2, 2), 0, 0, 0, 0), F32(SCALAR, 1), U8(SCALAR, 0),
                  S8(DIMS(2, 1, 1, 1), 1, 1), F32(SCALAR, 1), S8(SCALAR, 0), F32(SCALAR, 1), U8(SCALAR, 0),
                  I32(DIMS(3), 0, 0, 0));
    expect_infer_error(c, "bias shape 3 does not match 2 output channels");
}
END_TEST

/* The products' output shapes: numpy's matmul (batch broadcast) and
 * Conv's. */
START_TEST(quantized_shapes)
{
    node_case c = make_case(XF_OP_MATMUL_INTEGER, 2, U8(DIMS(2, 1, 1, 3), 0, 0, 0, 0, 0, 0),
                            S8(DIMS(3, 3, 2), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0));
    expect_inferred(c, 0, DIMS(2, 3, 1, 2), XF_DT_INT32);
    c = qmm_case(S8(DIMS(3), 0, 0, 0), U8(DIMS(3), 0, 0, 0), F32(SCALAR, 1), S8(SCALAR, 0));
    expect_inferred(c, 0, SCALAR, XF_DT_INT8);
    c = make_case(XF_OP_CONV_INTEGER, 2, U8(DIMS(1, 2, 5), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
                  U8(DIMS(3, 2, 2), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0));
    c.a.strides[0] = 2;
    expect_inferred(c, 0, DIMS(1, 3, 2), XF_DT_INT32);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("convq");
    TCase *ct = tcase_create("conv_transpose");
    tcase_add_test(ct, conv_transpose_full_result);
    tcase_add_test(ct, conv_integer_no_channels);
    tcase_add_test(ct, conv_transpose_pads_and_output_padding);
    tcase_add_test(ct, conv_transpose_output_shape_and_auto_pad);
    tcase_add_test(ct, conv_transpose_groups_and_dilations);
    tcase_add_test(ct, conv_transpose_dtypes);
    tcase_add_test(ct, conv_transpose_shapes);
    tcase_add_test(ct, conv_transpose_errors);
    tcase_add_test(ct, conv_transpose_cost);
    tcase_add_test(ct, conv_transpose_cpu_random);
    tcase_add_test(ct, conv_transpose_cpu_decoder);
    tcase_add_test(ct, conv_transpose_cpu_kernel_is_stride);
    suite_add_tcase(s, ct);
    TCase *rnn = tcase_create("rnn");
    tcase_add_test(rnn, rnn_directions);
    tcase_add_test(rnn, rnn_lengths_initial_state_layout);
    tcase_add_test(rnn, rnn_activations_and_clip);
    tcase_add_test(rnn, rnn_shapes_and_errors);
    suite_add_tcase(s, rnn);
    TCase *q = tcase_create("quantized");
    tcase_add_test(q, dynamic_quantize_linear);
    tcase_add_test(q, matmul_integer);
    tcase_add_test(q, qlinear_matmul);
    tcase_add_test(q, conv_integer);
    tcase_add_test(q, qlinear_conv);
    tcase_add_test(q, quantized_errors);
    tcase_add_test(q, quantized_shapes);
    suite_add_tcase(s, q);
    return xf_test_run_suite(s);
}
