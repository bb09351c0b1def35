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

int main(void)
{
    Suite *s = suite_create("cpu_conv1d");
    TCase *tc = tcase_create("conv1d");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, conv1d_as_2d);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
