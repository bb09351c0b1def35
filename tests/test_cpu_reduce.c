/* The cpu backend's own reduction loops (cpu_dnnl_reduce.c): ReduceMax,
 * ReduceMin, ReduceProd, ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum
 * and ReduceLogSumExp of floats over one run of axes, ReduceSum and
 * ReduceMean over one that is not innermost, ArgMax, ArgMin and
 * LpNormalization, each against cpu_ref: over the innermost dims (rows
 * folded in lanes), over middle and outer dims (columns folded in blocks,
 * several rows a pass, a last block partly full), over everything, through
 * dims of 1, with runs long enough for the threads; maxima, minima and
 * indices exactly (ties, NaN and infinities among the values), the sums
 * within rounding.  Axes that are not one run become one reduction per
 * run.  CumSum runs on a loop of its own. */
#include "backend_util.h"
#include "core_builders.h"
#include "xf_runtime.h"
#include "xf_test_util.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static int add_input(xf_graph *g, xf_shape s) { return xf_bt_input(g, XF_DT_FLOAT, s); }

/* op's node in a static session of g on the cpu backend runs as `want`. */
static void check_impl(const xf_graph *g, int64_t opset, xf_op op, const char *want, const char *what)
{
    char impl[128];
    xf_bt_node_impl(g, opset, op, impl, sizeof impl);
    ck_assert_msg(!strcmp(impl, want), "%s: %s runs as %s, not %s", what, xf_op_name(op), impl, want);
}

static const xf_op reduce_ops[] = {
    XF_OP_REDUCE_MAX,        XF_OP_REDUCE_MIN,     XF_OP_REDUCE_PROD,        XF_OP_REDUCE_L1,  XF_OP_REDUCE_L2,
    XF_OP_REDUCE_SUM_SQUARE, XF_OP_REDUCE_LOG_SUM, XF_OP_REDUCE_LOG_SUM_EXP, XF_OP_REDUCE_SUM, XF_OP_REDUCE_MEAN};

/* The shapes and axes the loops are checked on: rows (inner 1; of two
 * values, a spectrum's parts, in a loop of their own), columns
 * (inner > 1, 40 or 680, or 1000 and more, past a block of 2048 with
 * 4096), runs through a dim of 1, everything, nothing (a dim of 1), and
 * sizes past the threads' minimum with rows whose length is no multiple
 * of the lanes.  ReduceMax over every dim past the first two is a global
 * max pool (pool: on oneDNN); ReduceSum and ReduceMean of an innermost
 * run of more than one value are oneDNN's (dnnl_sum). */
static const struct {
    xf_shape shape;
    int n_axes;
    int64_t axes[4];
    bool pool, dnnl_sum;
} forms[] = {
    {{4, {3, 17, 1, 40}}, 1, {3}, false, true},      {{4, {3, 17, 1, 40}}, 1, {1}, false, false},
    {{4, {3, 17, 1, 40}}, 2, {1, 2}, false, false},  {{4, {3, 17, 1, 40}}, 1, {0}, false, false},
    {{4, {3, 17, 1, 40}}, 2, {-1, -3}, false, true}, {{4, {3, 17, 1, 40}}, 0, {0}, false, true},
    {{4, {3, 17, 1, 40}}, 1, {2}, false, false},     {{3, {2, 300, 37}}, 1, {1}, false, false},
    {{3, {2, 300, 37}}, 1, {2}, true, true},         {{2, {64, 1001}}, 1, {1}, false, true},
    {{2, {1001, 64}}, 1, {0}, false, false},         {{1, {5}}, 1, {0}, false, true},
    {{3, {2, 7, 4100}}, 1, {1}, false, false},      {{3, {2, 3001, 2}}, 1, {2}, true, true},
};

/* Reduce ops of random values in [-1, 1): Max and Min exactly, the others
 * within rounding; ReduceProd and ReduceLogSum of |x| + 0.5 (positive,
 * exactly as cpu_ref has it, products of a few hundred in range). */
START_TEST(reduce_loops)
{
    if (!xf_bt_have_cpu())
        return;
    for (size_t o = 0; o < sizeof reduce_ops / sizeof *reduce_ops; o++)
        for (size_t f = 0; f < sizeof forms / sizeof *forms; f++) {
            xf_op op = reduce_ops[o];
            xf_graph *g = xf_graph_create("reduce");
            int x = add_input(g, forms[f].shape);
            if (op == XF_OP_REDUCE_PROD || op == XF_OP_REDUCE_LOG_SUM)
                x = xf_bt_with_scalar(g, XF_OP_ADD, out0(g, NODE(g, XF_OP_ABS, x)), 0.5f);
            /* axes from the attribute, and in every other form from the
             * constant input of opset 18 */
            bool as_input = f % 2 == 1;
            int n = xf_bt_reduce(g, op, x, forms[f].axes, forms[f].n_axes, as_input, f % 3 != 0);
            xf_graph_add_output(g, out0(g, n));
            char what[96];
            snprintf(what, sizeof what, "%s, form %zu", xf_op_name(op), f);
            bool exact = op == XF_OP_REDUCE_MAX || op == XF_OP_REDUCE_MIN;
            int64_t opset = as_input ? 18 : 17;
            xf_bt_check_cpu(g, opset, exact ? 0 : 1e-6, exact ? 0 : 1e-5, what);
            bool sum = op == XF_OP_REDUCE_SUM || op == XF_OP_REDUCE_MEAN;
            if ((op == XF_OP_REDUCE_MAX && forms[f].pool) || (sum && forms[f].dnnl_sum)) {
                char impl[128];
                xf_bt_node_impl(g, opset, op, impl, sizeof impl);
                ck_assert_msg(strstr(impl, "jit") != NULL, "%s: runs as %s", what, impl);
            } else
                check_impl(g, opset, op, "own loop", what);
            xf_graph_free(g);
        }
}
END_TEST

/* ArgMax and ArgMin along each axis, keepdims or not, the first or the
 * last of equal extremes: of Floor(3 x), values in -3..2, so that many
 * tie; exactly cpu_ref's indices. */
START_TEST(arg_reductions)
{
    if (!xf_bt_have_cpu())
        return;
    static const xf_shape shapes[] = {{4, {3, 17, 1, 40}}, {2, {64, 1001}}, {3, {700, 3, 20}}, {2, {500, 5}}};
    for (int op = 0; op < 2; op++)
        for (int s = 0; s < 4; s++)
            for (int axis = -1; axis < shapes[s].ndim; axis++)
                for (int last = 0; last < 2; last++) {
                    xf_graph *g = xf_graph_create("arg");
                    int x =
                        out0(g, NODE(g, XF_OP_FLOOR, xf_bt_with_scalar(g, XF_OP_MUL, add_input(g, shapes[s]), 3.0f)));
                    xf_op arg = op ? XF_OP_ARG_MIN : XF_OP_ARG_MAX;
                    int n = NODE(g, arg, x);
                    attrs(g, n)->axis = axis;
                    attrs(g, n)->keepdims = (axis + last) % 2;
                    attrs(g, n)->select_last_index = last;
                    xf_graph_add_output(g, out0(g, n));
                    char what[96];
                    snprintf(what, sizeof what, "%s, shape %d, axis %d, last %d", xf_op_name(arg), s, axis, last);
                    xf_bt_check_cpu(g, 13, 0, 0, what);
                    check_impl(g, 13, arg, "own loop", what);
                    xf_graph_free(g);
                }
}
END_TEST

/* x with its values above 0.5 (about a quarter of random ones) NaN when
 * nan, else those +inf and those below -0.5 -inf. */
static int special(xf_graph *g, int x, bool nan)
{
    int above = out0(g, NODE(g, XF_OP_GREATER, x, xf_bt_scalar(g, 0.5f, 0)));
    int y = out0(g, NODE(g, XF_OP_WHERE, above, xf_bt_scalar(g, nan ? NAN : INFINITY, 0), x));
    if (nan)
        return y;
    int below = out0(g, NODE(g, XF_OP_LESS, x, xf_bt_scalar(g, -0.5f, 0)));
    return out0(g, NODE(g, XF_OP_WHERE, below, xf_bt_scalar(g, -INFINITY, 0), y));
}

/* NaN is every reduction's result where it is among the values (the
 * arg reductions' extreme, the first or last NaN), infinities what cpu_ref
 * makes of them: rows of 3 (some all -inf: LogSumExp's -inf) and columns,
 * and rows of 1001 where some lanes hold a NaN and others not. */
START_TEST(special_values)
{
    if (!xf_bt_have_cpu())
        return;
    static const struct {
        xf_shape shape;
        int64_t axis;
    } cases[] = {{{2, {200, 3}}, 1}, {{2, {3, 200}}, 0}, {{2, {8, 1001}}, 1}, {{3, {4, 50, 300}}, 1}};
    static const xf_op ops[] = {XF_OP_REDUCE_MAX,  XF_OP_REDUCE_MIN,        XF_OP_REDUCE_L1,
                                XF_OP_REDUCE_L2,   XF_OP_REDUCE_SUM_SQUARE, XF_OP_REDUCE_LOG_SUM_EXP,
                                XF_OP_REDUCE_PROD, XF_OP_ARG_MAX,           XF_OP_ARG_MIN};
    for (int form = 0; form < 4; form++)
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
            for (size_t o = 0; o < sizeof ops / sizeof *ops; o++) {
                /* forms 2 and 3: the arg reductions' last extremes */
                bool nan = form % 2, arg = ops[o] == XF_OP_ARG_MAX || ops[o] == XF_OP_ARG_MIN;
                if (form >= 2 && !arg)
                    continue;
                xf_graph *g = xf_graph_create("special");
                int x = special(g, add_input(g, cases[c].shape), nan);
                int n;
                if (arg) {
                    n = NODE(g, ops[o], x);
                    attrs(g, n)->axis = cases[c].axis;
                    attrs(g, n)->select_last_index = form >= 2;
                } else
                    n = xf_bt_reduce(g, ops[o], x, &cases[c].axis, 1, false, true);
                xf_graph_add_output(g, out0(g, n));
                char what[96];
                snprintf(what, sizeof what, "%s of %s, case %zu", xf_op_name(ops[o]), nan ? "NaN" : "infinities", c);
                bool exact = arg || ops[o] == XF_OP_REDUCE_MAX || ops[o] == XF_OP_REDUCE_MIN;
                xf_bt_check_cpu(g, 13, exact ? 0 : 1e-6, exact ? 0 : 1e-5, what);
                check_impl(g, 13, ops[o], "own loop", what);
                xf_graph_free(g);
            }
}
END_TEST

/* Reductions of empty sets (a run through a dim of 0: [3, 0, 4] over all
 * three axes) give cpu_ref's values: its kernel runs them, the input
 * having no buffer for the loops to point into (fuzz_run on the cpu
 * backend found a ReduceProd offsetting it). */
START_TEST(empty_runs)
{
    if (!xf_bt_have_cpu())
        return;
    for (size_t o = 0; o < sizeof reduce_ops / sizeof *reduce_ops; o++) {
        xf_graph *g = xf_graph_create("empty");
        int n = xf_bt_reduce(g, reduce_ops[o], add_input(g, SHAPE(3, 0, 4)), (int64_t[]){0, 1, 2}, 3, false, true);
        xf_graph_add_output(g, out0(g, n));
        char what[96];
        snprintf(what, sizeof what, "%s of an empty set", xf_op_name(reduce_ops[o]));
        xf_bt_check_cpu(g, 17, 0, 0, what);
        xf_graph_free(g);
    }
}
END_TEST

/* LpNormalization (p 1 and 2) along each form's axis on the same loops:
 * rows, columns, a dim of 1, rows of 3 and columns of 3 of Relu(x), of
 * which an eighth are all 0 (the output 0 there). */
START_TEST(lp_norms)
{
    if (!xf_bt_have_cpu())
        return;
    static const struct {
        xf_shape shape;
        int64_t axis;
        bool relu;
    } cases[] = {
        {{4, {3, 17, 1, 40}}, 3, false}, {{4, {3, 17, 1, 40}}, 1, false}, {{4, {3, 17, 1, 40}}, 0, false},
        {{4, {3, 17, 1, 40}}, 2, false}, {{2, {64, 1001}}, -1, false},    {{2, {1001, 64}}, 0, false},
        {{3, {2, 7, 4100}}, 1, false},   {{2, {200, 3}}, 1, true},        {{2, {3, 200}}, 0, true},
    };
    for (int p = 1; p <= 2; p++)
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
            xf_graph *g = xf_graph_create("lp");
            int x = add_input(g, cases[c].shape);
            if (cases[c].relu)
                x = out0(g, NODE(g, XF_OP_RELU, x));
            int n = NODE(g, XF_OP_LP_NORM, x);
            attrs(g, n)->axis = cases[c].axis;
            attrs(g, n)->lp_p = p;
            xf_graph_add_output(g, out0(g, n));
            char what[96];
            snprintf(what, sizeof what, "LpNormalization p %d, case %zu", p, c);
            xf_bt_check_cpu(g, 13, 1e-6, 1e-5, what);
            check_impl(g, 13, XF_OP_LP_NORM, "own loop", what);
            xf_graph_free(g);
        }
}
END_TEST

/* Axes that are not one run become one reduction per run, the innermost
 * first (cpu_dnnl_lower_reduce.c): every reduce op over two and three
 * runs, dims kept or not, axes from the attribute or the input, a dim of 1
 * between reduced ones bridged (one run: not split); Max and Min exactly
 * cpu_ref's, the others within rounding, no part on cpu_ref's kernel. */
START_TEST(split_runs)
{
    if (!xf_bt_have_cpu())
        return;
    static const struct {
        xf_shape shape;
        int n_axes;
        int64_t axes[3];
        int parts;
    } splits[] = {
        {{4, {3, 17, 5, 40}}, 2, {0, 2}, 2},
        {{4, {8, 64, 32, 64}}, 2, {1, 3}, 2},
        {{5, {2, 3, 4, 5, 6}}, 3, {0, 2, -1}, 3},
        {{5, {4, 1, 6, 1, 10}}, 3, {0, 2, 4}, 1},
    };
    for (size_t o = 0; o < sizeof reduce_ops / sizeof *reduce_ops; o++)
        for (size_t f = 0; f < sizeof splits / sizeof *splits; f++)
            for (int keep = 0; keep < 2; keep++) {
                xf_op op = reduce_ops[o];
                xf_graph *g = xf_graph_create("split");
                int x = add_input(g, splits[f].shape);
                if (op == XF_OP_REDUCE_PROD || op == XF_OP_REDUCE_LOG_SUM)
                    x = xf_bt_with_scalar(g, XF_OP_ADD, out0(g, NODE(g, XF_OP_ABS, x)), 0.5f);
                bool as_input = (f + (size_t)keep) % 2 == 1;
                int n = xf_bt_reduce(g, op, x, splits[f].axes, splits[f].n_axes, as_input, keep);
                xf_graph_add_output(g, out0(g, n));
                char what[96], impl[128];
                snprintf(what, sizeof what, "%s, split %zu, keepdims %d", xf_op_name(op), f, keep);
                bool exact = op == XF_OP_REDUCE_MAX || op == XF_OP_REDUCE_MIN;
                int64_t opset = as_input ? 18 : 17;
                xf_bt_check_cpu(g, opset, exact ? 0 : 1e-6, exact ? 0 : 1e-5, what);
                /* SumSquare sums its parts; LogSum logs their sums */
                xf_op last = splits[f].parts > 1 && op == XF_OP_REDUCE_SUM_SQUARE ? XF_OP_REDUCE_SUM : op;
                xf_op first = splits[f].parts > 1 && op == XF_OP_REDUCE_LOG_SUM ? XF_OP_REDUCE_SUM : op;
                xf_bt_nth_node_impl(g, opset, first, 0, impl, sizeof impl);
                ck_assert_msg(strcmp(impl, "cpu_ref kernel") != 0, "%s: the first part runs as %s", what, impl);
                xf_bt_nth_node_impl(g, opset, last, first == last ? splits[f].parts - 1 : 0, impl, sizeof impl);
                ck_assert_msg(strcmp(impl, "cpu_ref kernel") != 0, "%s: the last part runs as %s", what, impl);
                xf_graph_free(g);
            }
}
END_TEST

/* CumSum of floats on the backend's loop: along the last axis (lines),
 * the first and a middle one (columns, 300 of them: a full block and a
 * part), forward and reverse, inclusive and exclusive, the axis int64 or
 * int32; exactly cpu_ref's sums in double rounded to float. */
START_TEST(cumsum_loop)
{
    if (!xf_bt_have_cpu())
        return;
    static const struct {
        xf_shape shape;
        int64_t axis;
    } forms[] = {{{2, {64, 1000}}, 1}, {{2, {1000, 300}}, 0}, {{3, {3, 5, 517}}, -2}, {{1, {4000}}, 0}};
    for (size_t f = 0; f < sizeof forms / sizeof *forms; f++)
        for (int mode = 0; mode < 4; mode++) {
            xf_graph *g = xf_graph_create("cumsum");
            int x = add_input(g, forms[f].shape);
            int32_t a32 = (int32_t)forms[f].axis;
            int axis = mode == 3 ? constant(g, "axis", XF_DT_INT32, SCALAR, &a32) : scalar_i64(g, forms[f].axis);
            int n = NODE(g, XF_OP_CUM_SUM, x, axis);
            attrs(g, n)->cumsum_reverse = mode & 1;
            attrs(g, n)->cumsum_exclusive = mode >= 2;
            xf_graph_add_output(g, out0(g, n));
            char what[64];
            snprintf(what, sizeof what, "CumSum, form %zu, mode %d", f, mode);
            xf_bt_check_cpu(g, 14, 0, 0, what);
            check_impl(g, 14, XF_OP_CUM_SUM, "own loop", what);
            xf_graph_free(g);
        }
}
END_TEST

/* ReduceMax over the spatial dims (a global pool) is not the loops'. */
START_TEST(other_forms)
{
    if (!xf_bt_have_cpu())
        return;
    xf_graph *g = xf_graph_create("pool");
    int n = xf_bt_reduce(g, XF_OP_REDUCE_MAX, add_input(g, SHAPE(2, 24, 33, 7)), (int64_t[]){2, 3}, 2, false, true);
    xf_graph_add_output(g, out0(g, n));
    xf_bt_check_cpu(g, 13, 0, 0, "ReduceMax over H and W");
    char impl[128];
    xf_bt_node_impl(g, 13, XF_OP_REDUCE_MAX, impl, sizeof impl);
    ck_assert_msg(strstr(impl, "jit") != NULL, "ReduceMax over H and W runs as %s", impl);
    xf_graph_free(g);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cpu_reduce");
    TCase *tc = tcase_create("reduce");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, reduce_loops);
    tcase_add_test(tc, arg_reductions);
    tcase_add_test(tc, special_values);
    tcase_add_test(tc, lp_norms);
    tcase_add_test(tc, empty_runs);
    tcase_add_test(tc, other_forms);
    tcase_add_test(tc, split_runs);
    tcase_add_test(tc, cumsum_loop);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
