/* Add, Sub, Mul and Div of floats whose operands both broadcast (neither
 * has the output's shape, which oneDNN's binary primitive needs of its
 * first source) run on the cpu backend's own loop over cpu_ref's runs
 * (cpu_dnnl_loops.c): additive attention's [B, T, 1, H] + [B, 1, T, H], a
 * row by a column, a constant minus a tensor, over the threads when large.
 * Each element is the float op, so the outputs equal cpu_ref's exactly.
 * Runs shorter than 16 elements stay on cpu_ref's kernel.  Add, Sub and
 * Mul of int32 and int64 run on it too. */
#include "backend_util.h"
#include "core_builders.h"
#include "xf_runtime.h"
#include "xf_test_util.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef struct bcast_case {
    xf_op op;
    xf_shape a, b;
    bool a_const; /* a is a constant (Sub(1, x)) */
    bool own;     /* runs on the own loop, else cpu_ref's kernel */
} bcast_case;

START_TEST(both_operands_broadcast)
{
    if (!xf_bt_have_cpu())
        return;
    static const bcast_case cases[] = {
        {XF_OP_ADD, {4, {2, 7, 1, 32}}, {4, {2, 1, 7, 32}}, false, true},
        {XF_OP_SUB, {4, {2, 7, 1, 32}}, {4, {2, 1, 7, 32}}, false, true},
        {XF_OP_MUL, {3, {3, 1, 40}}, {3, {1, 5, 40}}, false, true},
        {XF_OP_DIV, {3, {3, 1, 40}}, {3, {1, 5, 40}}, false, true},
        {XF_OP_SUB, {1, {1}}, {2, {4, 64}}, true, true},
        {XF_OP_DIV, {0, {0}}, {2, {4, 64}}, true, true},
        {XF_OP_ADD, {2, {33, 1}}, {1, {17}}, false, true},       /* a column and a row: runs of 17 */
        {XF_OP_ADD, {4, {8, 64, 1, 128}}, {4, {8, 1, 64, 128}}, false, true}, /* 4 M values, over the threads */
        {XF_OP_MUL, {3, {2, 30, 1}}, {3, {2, 1, 5}}, false, false}, /* runs of 5 */
    };
    for (int i = 0; i < (int)(sizeof cases / sizeof *cases); i++) {
        const bcast_case *c = &cases[i];
        xf_graph *g = xf_graph_create("broadcast");
        int a = c->a_const ? xf_bt_random_const(g, c->a, true) : xf_bt_input(g, XF_DT_FLOAT, c->a);
        int b = xf_bt_input(g, XF_DT_FLOAT, c->b);
        xf_graph_add_output(g, out0(g, NODE(g, c->op, a, b)));
        char what[64], impl[128];
        snprintf(what, sizeof what, "broadcast case %d (%s)", i, xf_op_name(c->op));
        xf_bt_check_cpu(g, 17, 0.0, 0.0, what);
        xf_bt_node_impl(g, 17, c->op, impl, sizeof impl);
        ck_assert_msg(!strcmp(impl, c->own ? "own loop" : "cpu_ref kernel"), "%s runs as %s", what, impl);
        xf_graph_free(g);
    }
}
END_TEST

/* Add, Sub and Mul of int32 and int64 on the same loop (an int32 bias per
 * channel added to ConvInteger's sums, as ONNX Runtime's older quantized
 * models do), wrapping where they overflow as cpu_ref's int64 arithmetic
 * does once stored: exactly cpu_ref's values; integer Div stays on
 * cpu_ref's kernel. */
START_TEST(integer_operands)
{
    if (!xf_bt_have_cpu())
        return;
    static int32_t bias32[192];
    static int64_t big64[32];
    for (int i = 0; i < 192; i++)
        bias32[i] = INT32_MAX - 4 - i * 1000003; /* near the top: adding 0..9 wraps some */
    for (int i = 0; i < 32; i++)
        big64[i] = INT64_MAX / 3 + (int64_t)i * 977; /* times 0..9 wraps */
    static const struct {
        xf_op op;
        xf_dtype t;
        xf_shape a, b;
        bool b_const, own;
    } cases[] = {
        {XF_OP_ADD, XF_DT_INT32, {4, {1, 192, 16, 40}}, {3, {192, 1, 1}}, true, true},
        {XF_OP_SUB, XF_DT_INT32, {4, {2, 7, 1, 32}}, {4, {2, 1, 7, 32}}, false, true},
        {XF_OP_MUL, XF_DT_INT32, {4, {1, 192, 16, 40}}, {3, {192, 1, 1}}, true, true},
        {XF_OP_MUL, XF_DT_INT64, {3, {3, 5, 32}}, {1, {32}}, true, true},
        {XF_OP_ADD, XF_DT_INT64, {3, {3, 5, 32}}, {1, {32}}, true, true},
        {XF_OP_SUB, XF_DT_INT64, {2, {40, 1}}, {1, {32}}, true, true},
        {XF_OP_DIV, XF_DT_INT32, {4, {2, 7, 1, 32}}, {4, {2, 1, 7, 32}}, false, false},
        {XF_OP_DIV, XF_DT_INT64, {3, {3, 5, 32}}, {1, {32}}, true, false},
    };
    for (int i = 0; i < (int)(sizeof cases / sizeof *cases); i++) {
        xf_graph *g = xf_graph_create("integers");
        int a = xf_bt_input(g, cases[i].t, cases[i].a);
        int b = !cases[i].b_const            ? xf_bt_input(g, cases[i].t, cases[i].b)
                : cases[i].t == XF_DT_INT32 ? constant(g, "b", XF_DT_INT32, cases[i].b, bias32)
                                            : constant(g, "b", XF_DT_INT64, cases[i].b, big64);
        xf_graph_add_output(g, out0(g, NODE(g, cases[i].op, a, b)));
        char what[64], impl[128];
        snprintf(what, sizeof what, "integer case %d (%s)", i, xf_op_name(cases[i].op));
        xf_bt_check_cpu(g, 17, 0.0, 0.0, what);
        xf_bt_node_impl(g, 17, cases[i].op, impl, sizeof impl);
        ck_assert_msg(!strcmp(impl, cases[i].own ? "own loop" : "cpu_ref kernel"), "%s runs as %s", what, impl);
        xf_graph_free(g);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cpu_broadcast");
    TCase *tc = tcase_create("binary");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, both_operands_broadcast);
    tcase_add_test(tc, integer_operands);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
