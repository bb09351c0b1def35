/* Add, Sub, Mul and Div of floats whose operands both broadcast (neither
 * has the output's shape, which oneDNN's binary primitive needs of its
 * first source) run on the cpu backend's own loop over cpu_ref's runs
 * (cpu_dnnl_loops.c): additive attention's [B, T, 1, H] + [B, 1, T, H], a
 * row by a column, a constant minus a tensor, over the threads when large.
 * Each element is the float op, so the outputs equal cpu_ref's exactly.
 * Runs shorter than 16 elements stay on cpu_ref's kernel. */
#include "backend_util.h"
#include "core_builders.h"
#include "xf_runtime.h"
#include "xf_test_util.h"

#include <check.h>
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

int main(void)
{
    Suite *s = suite_create("cpu_broadcast");
    TCase *tc = tcase_create("binary");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, both_operands_broadcast);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
