/* Layer and RMS normalizations written out run on the cpu backend as one
 * LayerNormalization or RMSNormalization (cpu_dnnl_lower_norm.c), within
 * rounding of cpu_ref, which runs the ops as written.
 *
 * Layer norms as exporters before opset 17 write them (ReduceMean over the
 * last dims, Sub, Pow 2 or a Mul by itself, ReduceMean, Add of epsilon,
 * Sqrt, Div, an optional Mul by a scale and Add of a bias): in the operand
 * orders exporters use, with and without the scale and bias, over one or
 * two last dims, with axes as attribute or input, and large enough for the
 * threads, with a residual Add after it kept.  Forms that are not one (the
 * difference read elsewhere, means over dims that are not the last ones or
 * not the same, a cube, a computed epsilon) keep their first mean; where
 * the rest is an RMS normalization of the difference, it runs as one.
 *
 * RMS norms as T5 and LLaMA are exported (Pow 2 or a Mul by itself,
 * ReduceMean, Add of epsilon, Sqrt, then a Div of x, or a Reciprocal or a
 * Div of 1 and a Mul by x, an optional Mul by a scale): likewise, an
 * exponent 2 of int64 among them; forms that are not one (the root read
 * elsewhere, a mean not over the last dims, a cube, a computed epsilon,
 * the root dividing another tensor, a Div of 2, a mean of x times another
 * tensor) keep their ops. */
#include "backend_util.h"
#include "core_builders.h"
#include "xf_runtime.h"
#include "xf_test_util.h"

#include <check.h>
#include <stdio.h>
#include <string.h>

/* How the chain is written. */
typedef struct ln_form {
    xf_shape x;
    int n_axes; /* the last n_axes dims */
    bool axes_input, mul_square, swapped, scale, bias;
    bool residual; /* an Add of x after the bias: not a bias, it stays */
    /* forms that must not fuse: */
    bool d_output, middle_axis, cube, eps_computed, var_axes_differ;
} ln_form;

static int scalar(xf_graph *g, float v) { return xf_bt_scalar(g, v, 0); }

/* y op p, a random constant of shape norm (positive for a Mul), p first
 * when swapped. */
static int by_param(xf_graph *g, xf_op op, int y, xf_shape norm, bool swapped)
{
    int p = xf_bt_random_const(g, norm, op == XF_OP_MUL);
    return out0(g, swapped ? NODE(g, op, p, y) : NODE(g, op, y, p));
}

/* The chain of form f on a fresh input; its output is the graph's. */
static void build(xf_graph *g, const ln_form *f)
{
    int x = xf_bt_input(g, XF_DT_FLOAT, f->x);
    /* a middle form: the last dim and the first, no run */
    int64_t axes[2] = {-1, f->middle_axis ? 0 : -2};
    int mean = xf_bt_reduce(g, XF_OP_REDUCE_MEAN, x, axes, f->n_axes, f->axes_input, true);
    int d = out0(g, NODE(g, XF_OP_SUB, x, out0(g, mean)));
    int sq = f->mul_square ? NODE(g, XF_OP_MUL, d, d) : NODE(g, XF_OP_POW, d, scalar(g, f->cube ? 3.0f : 2.0f));
    int var = xf_bt_reduce(g, XF_OP_REDUCE_MEAN, out0(g, sq), axes, f->n_axes + (f->var_axes_differ ? 1 : 0),
                           f->axes_input, true);
    /* a computed epsilon: read from an input (a constant's Abs would be
     * folded when the session is made) */
    int eps = f->eps_computed ? out0(g, NODE(g, XF_OP_ABS, xf_bt_input(g, XF_DT_FLOAT, SHAPE(1)))) : scalar(g, 1e-5f);
    int ve = out0(g, f->swapped ? NODE(g, XF_OP_ADD, eps, out0(g, var)) : NODE(g, XF_OP_ADD, out0(g, var), eps));
    int y = out0(g, NODE(g, XF_OP_DIV, d, out0(g, NODE(g, XF_OP_SQRT, ve))));
    xf_shape norm = xf_shape_make(f->n_axes, f->x.dims + f->x.ndim - f->n_axes);
    if (f->scale)
        y = by_param(g, XF_OP_MUL, y, norm, f->swapped);
    if (f->bias)
        y = by_param(g, XF_OP_ADD, y, norm, f->swapped);
    if (f->residual)
        y = out0(g, NODE(g, XF_OP_ADD, y, x));
    xf_graph_add_output(g, y);
    if (f->d_output)
        xf_graph_add_output(g, d);
}

START_TEST(written_out_layer_norms)
{
    if (!xf_bt_have_cpu())
        return;
    static const ln_form forms[] = {
        {.x = {3, {2, 5, 64}}, .n_axes = 1, .scale = true, .bias = true},
        {.x = {3, {2, 5, 64}}, .n_axes = 1, .mul_square = true, .swapped = true, .scale = true},
        {.x = {3, {2, 5, 64}}, .n_axes = 1},
        {.x = {4, {3, 4, 6, 8}}, .n_axes = 2, .axes_input = true, .scale = true, .bias = true},
        {.x = {3, {16, 128, 768}}, .n_axes = 1, .scale = true, .bias = true},
        {.x = {3, {2, 5, 64}}, .n_axes = 1, .scale = true, .bias = true, .d_output = true},
        {.x = {3, {2, 5, 64}}, .n_axes = 1, .cube = true},
        {.x = {3, {2, 5, 64}}, .n_axes = 1, .eps_computed = true},
        {.x = {3, {2, 5, 64}}, .n_axes = 2, .middle_axis = true},
        {.x = {3, {2, 5, 64}}, .n_axes = 1, .var_axes_differ = true},
        {.x = {3, {2, 5, 64}}, .n_axes = 1, .scale = true, .residual = true},
    };
    for (int i = 0; i < (int)(sizeof forms / sizeof *forms); i++) {
        const ln_form *f = &forms[i];
        int64_t opset = f->axes_input ? 18 : 13;
        xf_graph *g = xf_graph_create("layer_norm");
        build(g, f);
        char what[64], impl[128];
        snprintf(what, sizeof what, "written-out layer norm, form %d", i);
        xf_bt_check_cpu(g, opset, 1e-5, 1e-4, what);
        if (f->d_output || f->var_axes_differ) { /* the first mean stays; the rest is an RMS norm of d */
            xf_bt_node_impl(g, opset, XF_OP_REDUCE_MEAN, impl, sizeof impl);
            xf_bt_node_impl(g, opset, XF_OP_RMS_NORM, impl, sizeof impl);
            ck_assert_msg(!strcmp(impl, "own loop"), "%s runs as %s", what, impl);
        } else if (f->middle_axis || f->cube || f->eps_computed)
            xf_bt_nth_node_impl(g, opset, XF_OP_REDUCE_MEAN, 1, impl, sizeof impl); /* both means stay */
        else {
            xf_bt_node_impl(g, opset, XF_OP_LAYER_NORM, impl, sizeof impl);
            ck_assert_msg(strstr(impl, "layer_normalization") != NULL, "%s runs as %s", what, impl);
        }
        xf_graph_free(g);
    }
}
END_TEST

/* How an RMS norm is written. */
typedef struct rms_form {
    xf_shape x;
    int n_axes; /* the last n_axes dims */
    bool axes_input, mul_square, int_exponent, swapped, scale, residual;
    int inverse; /* 0: Div(x, root); 1: Reciprocal, Mul; 2: Div(1, root), Mul */
    /* forms that must not fuse: */
    bool root_output, middle_axis, cube, eps_computed, other_dividend, div_by_two, product;
} rms_form;

static void build_rms(xf_graph *g, const rms_form *f)
{
    int x = xf_bt_input(g, XF_DT_FLOAT, f->x);
    int64_t axes[2] = {-1, f->middle_axis ? 0 : -2};
    int two = scalar(g, f->cube ? 3.0f : 2.0f);
    if (f->int_exponent) {
        xf_shape s = {0};
        xf_tensor *t = xf_tensor_create(XF_DT_INT64, &s);
        ck_assert_ptr_nonnull(t);
        *(int64_t *)t->data = 2;
        two = xf_graph_add_initializer(g, NULL, t);
        xf_tensor_release(t);
    }
    int sq = f->product      ? NODE(g, XF_OP_MUL, x, xf_bt_with_scalar(g, XF_OP_ADD, x, 1.0f))
             : f->mul_square ? NODE(g, XF_OP_MUL, x, x)
                             : NODE(g, XF_OP_POW, x, two);
    int ms = xf_bt_reduce(g, XF_OP_REDUCE_MEAN, out0(g, sq), axes, f->n_axes, f->axes_input, true);
    int eps = f->eps_computed ? out0(g, NODE(g, XF_OP_ABS, xf_bt_input(g, XF_DT_FLOAT, SHAPE(1)))) : scalar(g, 1e-6f);
    int ve = out0(g, f->swapped ? NODE(g, XF_OP_ADD, eps, out0(g, ms)) : NODE(g, XF_OP_ADD, out0(g, ms), eps));
    int root = out0(g, NODE(g, XF_OP_SQRT, ve));
    int dividend = f->other_dividend ? xf_bt_with_scalar(g, XF_OP_ADD, x, 1.0f) : x, y;
    if (f->inverse == 0)
        y = out0(g, NODE(g, XF_OP_DIV, dividend, root));
    else {
        int r = f->inverse == 1 ? out0(g, NODE(g, XF_OP_RECIPROCAL, root))
                                : out0(g, NODE(g, XF_OP_DIV, scalar(g, f->div_by_two ? 2.0f : 1.0f), root));
        y = out0(g, f->swapped ? NODE(g, XF_OP_MUL, r, dividend) : NODE(g, XF_OP_MUL, dividend, r));
    }
    if (f->scale)
        y = by_param(g, XF_OP_MUL, y, xf_shape_make(f->n_axes, f->x.dims + f->x.ndim - f->n_axes), f->swapped);
    if (f->residual)
        y = out0(g, NODE(g, XF_OP_ADD, y, x));
    xf_graph_add_output(g, y);
    if (f->root_output)
        xf_graph_add_output(g, root);
}

START_TEST(written_out_rms_norms)
{
    if (!xf_bt_have_cpu())
        return;
    static const rms_form forms[] = {
        {.x = {3, {2, 5, 64}}, .n_axes = 1, .scale = true},
        {.x = {3, {2, 5, 64}}, .n_axes = 1, .mul_square = true, .inverse = 1, .swapped = true, .scale = true},
        {.x = {3, {2, 5, 63}}, .n_axes = 1, .inverse = 2},
        {.x = {3, {2, 5, 64}}, .n_axes = 1, .int_exponent = true, .inverse = 2, .swapped = true, .scale = true},
        {.x = {4, {3, 4, 6, 8}}, .n_axes = 2, .axes_input = true, .inverse = 1, .scale = true},
        {.x = {3, {16, 128, 768}}, .n_axes = 1, .inverse = 1, .scale = true},
        {.x = {3, {2, 5, 64}}, .n_axes = 1, .scale = true, .residual = true},
        {.x = {3, {2, 5, 64}}, .n_axes = 1, .scale = true, .root_output = true},
        {.x = {3, {2, 5, 64}}, .n_axes = 2, .middle_axis = true, .inverse = 1},
        {.x = {3, {2, 5, 64}}, .n_axes = 1, .cube = true},
        {.x = {3, {2, 5, 64}}, .n_axes = 1, .eps_computed = true, .inverse = 1},
        {.x = {3, {2, 5, 64}}, .n_axes = 1, .other_dividend = true},
        {.x = {3, {2, 5, 64}}, .n_axes = 1, .other_dividend = true, .inverse = 1},
        {.x = {3, {2, 5, 64}}, .n_axes = 1, .div_by_two = true, .inverse = 2},
        {.x = {3, {2, 5, 64}}, .n_axes = 1, .product = true, .inverse = 1},
    };
    for (int i = 0; i < (int)(sizeof forms / sizeof *forms); i++) {
        const rms_form *f = &forms[i];
        int64_t opset = f->axes_input ? 18 : 13;
        xf_graph *g = xf_graph_create("rms_norm");
        build_rms(g, f);
        char what[64], impl[128];
        snprintf(what, sizeof what, "written-out RMS norm, form %d", i);
        xf_bt_check_cpu(g, opset, 1e-5, 1e-4, what);
        if (f->root_output || f->middle_axis || f->cube || f->eps_computed || f->other_dividend || f->div_by_two ||
            f->product)
            /* the mean stays (over axes apart, reduced a run at a time) */
            xf_bt_nth_node_impl(g, opset, XF_OP_REDUCE_MEAN, 0, impl, sizeof impl);
        else {
            xf_bt_node_impl(g, opset, XF_OP_RMS_NORM, impl, sizeof impl);
            ck_assert_msg(!strcmp(impl, "own loop"), "%s runs as %s", what, impl);
        }
        xf_graph_free(g);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cpu_layer_norm");
    TCase *tc = tcase_create("fusion");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, written_out_layer_norms);
    tcase_add_test(tc, written_out_rms_norms);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
