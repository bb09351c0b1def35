/* 1-D convolutions (Conv of 3-D tensors) run on the cpu backend as 2-D
 * ones of height 1 between two Reshapes (cpu_dnnl_lower.c): oneDNN's
 * depthwise kernels want the blocked or channels-last layouts the layout
 * plan gives 4-D values only, and ran 1-D ones on its gemm kernel.  Dense,
 * depthwise and grouped ones, with pads, strides, dilations, SAME padding,
 * a bias, kernel_shape absent, a Relu folded in and a residual Add after
 * them: within rounding of cpu_ref, and the dense and depthwise ones on
 * oneDNN's direct kernels. */
#include "backend_util.h"
#include "core_builders.h"
#include "xf_runtime.h"
#include "xf_test_util.h"

#include <check.h>
#include <stdio.h>
#include <string.h>

typedef struct conv1d_form {
    int64_t cin, cout, group, k, stride, dilation, pad_begin, pad_end, width;
    xf_auto_pad auto_pad;
    bool bias, no_kernel_attr, relu, residual;
} conv1d_form;

START_TEST(conv1d_as_2d)
{
    if (!xf_bt_have_cpu())
        return;
    static const conv1d_form forms[] = {
        {.cin = 16, .cout = 32, .group = 1, .k = 3, .stride = 1, .dilation = 1, .pad_begin = 1, .pad_end = 1,
         .width = 50, .bias = true},
        {.cin = 128, .cout = 128, .group = 128, .k = 9, .stride = 1, .dilation = 1, .pad_begin = 4, .pad_end = 4,
         .width = 80, .relu = true, .residual = true},
        {.cin = 32, .cout = 32, .group = 1, .k = 3, .stride = 1, .dilation = 16, .width = 100, .bias = true},
        {.cin = 24, .cout = 48, .group = 4, .k = 5, .stride = 2, .dilation = 1, .pad_begin = 2, .pad_end = 1,
         .width = 37, .no_kernel_attr = true},
        {.cin = 8, .cout = 8, .group = 8, .k = 4, .stride = 1, .dilation = 2, .width = 33,
         .auto_pad = XF_AUTO_PAD_SAME_UPPER, .bias = true},
    };
    for (int i = 0; i < (int)(sizeof forms / sizeof *forms); i++) {
        const conv1d_form *f = &forms[i];
        xf_graph *g = xf_graph_create("conv1d");
        int x = xf_bt_input(g, XF_DT_FLOAT, SHAPE(2, f->cin, f->width));
        int w = xf_bt_random_const(g, SHAPE(f->cout, f->cin / f->group, f->k), false);
        int in[3] = {x, w, f->bias ? xf_bt_random_const(g, SHAPE(f->cout), false) : -1};
        int c = node(g, XF_OP_CONV, NULL, f->bias ? 3 : 2, in, 1);
        xf_attrs *a = attrs(g, c);
        a->group = f->group;
        a->n_spatial = 1;
        a->kernel[0] = f->no_kernel_attr ? 0 : f->k;
        a->strides[0] = f->stride;
        a->dilations[0] = f->dilation;
        a->pads[0] = f->pad_begin;
        a->pads[1] = f->pad_end;
        a->auto_pad = f->auto_pad;
        int y = out0(g, c);
        if (f->relu)
            y = out0(g, NODE(g, XF_OP_RELU, y));
        if (f->residual)
            y = out0(g, NODE(g, XF_OP_ADD, y, x));
        xf_graph_add_output(g, y);
        char what[64], impl[128];
        snprintf(what, sizeof what, "1-D convolution, form %d", i);
        xf_bt_check_cpu(g, 17, 1e-5, 1e-4, what);
        xf_bt_node_impl(g, 17, XF_OP_CONV, impl, sizeof impl);
        /* grouped ones of a few channels a group stay on oneDNN's gemm kernel, as 2-D ones do */
        bool dense_or_depthwise = f->group == 1 || f->group == f->cin;
        ck_assert_msg(!strstr(impl, "cpu_ref") && strncmp(impl, "ref", 3) != 0 &&
                          !(dense_or_depthwise && strstr(impl, "gemm")),
                      "%s runs as %s", what, impl);
        xf_graph_free(g);
    }
}
END_TEST

/* Convolutions of one input channel run as products on sgemm
 * (cpu_dnnl_conv_gemm.c): rows of taps in blocks (several per image, the
 * last partial), pads, dilations, SAME padding, the bias, a folded ReLU in
 * the loop, other post-ops (a LeakyReLU then a Sigmoid, a fused Tanh) as a
 * primitive after, a folded BatchNormalization, a batch of short images
 * taken together, weights given at run
 * time; 1-D convolutions and ones written as 2-D and 3-D (a
 * resampler's, ones over several rows with rows of padding around them,
 * and
 * those the fold plan folds into: 1-D ones run between Reshapes): within
 * rounding of cpu_ref, on that path.  A sum post-op (an Add of another
 * convolution's output) leaves the second to oneDNN, and so do too few
 * positions (sgemm's columns) past 64 taps and a stride of 1 past them. */
typedef struct one_channel_form {
    int64_t cout, k, stride, dilation, pad_begin, pad_end, width;
    int64_t cin;                /* 0: 1 */
    int ns;                     /* spatial dims (0: 1), the kernel 1 along all but the last */
    int64_t batch;              /* 0: 3 */
    bool on_onednn;             /* too few positions for the products to pay: oneDNN's kernel */
    int64_t depth, height, pad; /* ns 3, ns 2 and 3 (0: 1); pad: along those */
    xf_auto_pad auto_pad;
    bool bias, relu, leaky_sigmoid, bn, weights_input, summed;
    xf_activation fused;
} one_channel_form;

static int one_channel_conv(xf_graph *g, int x, const one_channel_form *f)
{
    int ns = f->ns ? f->ns : 1, last = ns - 1;
    xf_shape ws = {.ndim = 2 + ns, .dims = {f->cout, f->cin ? f->cin : 1, 1, 1, 1}};
    ws.dims[2 + last] = f->k;
    int w = f->weights_input ? xf_bt_input(g, XF_DT_FLOAT, ws) : xf_bt_random_const(g, ws, false);
    int in[3] = {x, w, f->bias ? xf_bt_random_const(g, SHAPE(f->cout), false) : -1};
    int c = node(g, XF_OP_CONV, "conv", f->bias ? 3 : 2, in, 1);
    xf_attrs *a = attrs(g, c);
    a->group = 1;
    a->n_spatial = ns;
    for (int i = 0; i < last; i++) {
        a->kernel[i] = a->strides[i] = a->dilations[i] = 1;
        a->pads[i] = a->pads[ns + i] = f->pad;
    }
    a->kernel[last] = f->k;
    a->strides[last] = f->stride;
    a->dilations[last] = f->dilation;
    a->pads[last] = f->pad_begin;
    a->pads[ns + last] = f->pad_end;
    a->auto_pad = f->auto_pad;
    a->activation = f->fused;
    return out0(g, c);
}

static void check_form(const one_channel_form *f, const char *what, const char *path)
{
    xf_graph *g = xf_graph_create("conv1d_gemm");
    int64_t d = f->depth ? f->depth : 1, h = f->height ? f->height : 1;
    int64_t n = f->batch ? f->batch : 3, ch = f->cin ? f->cin : 1;
    int x = xf_bt_input(g, XF_DT_FLOAT,
                        f->ns == 3   ? SHAPE(n, ch, d, h, f->width)
                        : f->ns == 2 ? SHAPE(n, ch, h, f->width)
                                     : SHAPE(n, ch, f->width));
    int y = one_channel_conv(g, x, f);
    if (f->bn) {
        int bn_in[5] = {y, xf_bt_random_const(g, SHAPE(f->cout), true),
                        xf_bt_random_const(g, SHAPE(f->cout), false),
                        xf_bt_random_const(g, SHAPE(f->cout), false), xf_bt_random_const(g, SHAPE(f->cout), true)};
        int bn = node(g, XF_OP_BATCH_NORM, "bn", 5, bn_in, 1);
        xf_attrs_default(XF_OP_BATCH_NORM, attrs(g, bn));
        y = out0(g, bn);
    }
    if (f->relu)
        y = out0(g, NODE(g, XF_OP_RELU, y));
    if (f->leaky_sigmoid) {
        int lr = NODE(g, XF_OP_LEAKY_RELU, y);
        attrs(g, lr)->alpha = 0.1f;
        y = out0(g, NODE(g, XF_OP_SIGMOID, out0(g, lr)));
    }
    if (f->summed)
        y = out0(g, NODE(g, XF_OP_ADD, y, one_channel_conv(g, x, f)));
    xf_graph_add_output(g, y);
    char impl[128];
    xf_bt_check_cpu(g, 17, 1e-4, 1e-4, what);
    for (int c = 0; c <= f->summed; c++) {
        xf_bt_nth_node_impl(g, 17, XF_OP_CONV, c, impl, sizeof impl);
        bool rows = !strcmp(impl, path);
        ck_assert_msg(rows == (c == 0 && !f->on_onednn), "%s, convolution %d runs as %s", what, c, impl);
    }
    /* (a ReLU after the convolution becomes its fused activation) */
    const xf_op folded[] = {XF_OP_BATCH_NORM, XF_OP_LEAKY_RELU, XF_OP_SIGMOID};
    for (int k = 0; k < 3; k++)
        if ((k == 0 && f->bn) || (k >= 1 && f->leaky_sigmoid)) {
            xf_bt_node_impl(g, 17, folded[k], impl, sizeof impl);
            ck_assert_msg(!strncmp(impl, "folded into 'conv'", 18), "%s: %s runs as %s", what,
                          xf_op_name(folded[k]), impl);
        }
    xf_graph_free(g);
}

START_TEST(conv1d_one_channel)
{
    if (!xf_bt_have_cpu())
        return;
    static const one_channel_form forms[] = {
        {.cout = 64, .k = 10, .stride = 5, .dilation = 1, .width = 600, .bias = true},
        {.cout = 32, .k = 16, .stride = 1, .dilation = 1, .pad_begin = 3, .pad_end = 12, .width = 3000,
         .relu = true, .bias = true},
        {.cout = 40, .k = 400, .stride = 160, .dilation = 1, .width = 20000, .relu = true},
        {.cout = 24, .k = 5, .stride = 2, .dilation = 3, .width = 301, .auto_pad = XF_AUTO_PAD_SAME_LOWER,
         .leaky_sigmoid = true, .ns = 2},
        {.cout = 16, .k = 7, .stride = 3, .dilation = 2, .pad_begin = 9, .pad_end = 20, .width = 40,
         .fused = XF_ACT_TANH, .bias = true},
        {.cout = 48, .k = 9, .stride = 4, .dilation = 1, .pad_begin = 4, .pad_end = 4, .width = 2050, .bn = true,
         .relu = true, .ns = 2},
        {.cout = 20, .k = 33, .stride = 7, .dilation = 1, .width = 800, .weights_input = true, .bias = true},
        {.cout = 160, .k = 475, .stride = 441, .dilation = 1, .pad_begin = 17, .pad_end = 458, .width = 4410,
         .ns = 2},
        {.cout = 32, .k = 12, .stride = 6, .dilation = 1, .width = 700, .summed = true, .ns = 2},
        {.cout = 8, .k = 6, .stride = 2, .dilation = 1, .pad_begin = 2, .pad_end = 2, .width = 90, .height = 5,
         .pad = 1, .ns = 2, .bias = true},
        {.cout = 12, .k = 300, .stride = 20, .dilation = 1, .width = 2000, .depth = 3, .height = 2, .pad = 1, .ns = 3},
        {.cout = 10, .k = 256, .stride = 128, .dilation = 1, .width = 640, .batch = 300, .bias = true},
        {.cout = 40, .k = 400, .stride = 160, .dilation = 1, .width = 16000, .batch = 1, .on_onednn = true},
        {.cout = 16, .k = 251, .stride = 1, .dilation = 1, .width = 1000, .on_onednn = true},
        {.cout = 8, .k = 16, .stride = 1, .dilation = 1, .width = 400},
    };
    for (int i = 0; i < (int)(sizeof forms / sizeof *forms); i++) {
        char what[64];
        snprintf(what, sizeof what, "one input channel, form %d", i);
        check_form(&forms[i], what, "sgemm on rows of taps");
    }
}
END_TEST

/* Convolutions of several input channels, 1-D, stride 1, run as products
 * per tap on the input rows shifted (cpu_dnnl_conv_gemm.c): dilations,
 * SAME-like pads whose taps fall outside the row at the ends, blocks of
 * positions (the last partial), over the threads or one at a time, the
 * bias, a folded ReLU and BatchNormalization, a fused Tanh, weights given
 * at run time, 1x1 ones: within rounding of cpu_ref, on that path.  Too
 * few positions or channels, a stride of 2 and a sum post-op leave them
 * to oneDNN. */
START_TEST(conv1d_shifted)
{
    if (!xf_bt_have_cpu())
        return;
    static const one_channel_form forms[] = {
        {.cin = 128, .cout = 128, .k = 3, .stride = 1, .dilation = 64, .width = 1628, .batch = 2, .bias = true},
        {.cin = 128, .cout = 160, .k = 3, .stride = 1, .dilation = 5, .pad_begin = 5, .pad_end = 5, .width = 1200,
         .relu = true, .bias = true},
        {.cin = 130, .cout = 128, .k = 5, .stride = 1, .dilation = 1, .pad_begin = 2, .pad_end = 2, .width = 2100,
         .weights_input = true, .fused = XF_ACT_TANH},
        {.cin = 128, .cout = 128, .k = 3, .stride = 1, .dilation = 2, .pad_begin = 3, .pad_end = 1, .width = 1100,
         .batch = 1, .bn = true, .relu = true, .ns = 2},
        {.cin = 128, .cout = 128, .k = 3, .stride = 1, .dilation = 1, .width = 500, .on_onednn = true},
        {.cin = 128, .cout = 128, .k = 3, .stride = 2, .dilation = 1, .width = 4000, .on_onednn = true},
        {.cin = 128, .cout = 128, .k = 3, .stride = 1, .dilation = 1, .width = 1100, .summed = true, .ns = 2},
        {.cin = 96, .cout = 64, .k = 1, .stride = 1, .dilation = 1, .width = 1500, .relu = true, .bias = true},
        {.cin = 48, .cout = 128, .k = 3, .stride = 1, .dilation = 1, .width = 2000, .on_onednn = true},
    };
    for (int i = 0; i < (int)(sizeof forms / sizeof *forms); i++) {
        char what[64];
        snprintf(what, sizeof what, "shifted products, form %d", i);
        check_form(&forms[i], what, "sgemm per tap on shifted rows");
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cpu_conv1d");
    TCase *tc = tcase_create("conv1d");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, conv1d_as_2d);
    tcase_add_test(tc, conv1d_one_channel);
    tcase_add_test(tc, conv1d_shifted);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
