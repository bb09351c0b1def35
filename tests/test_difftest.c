/* Differential testing of the optimizer: random valid graphs through
 * `xflowc --check`; and of the `cpu` backend: random convolutional graphs
 * on it and on cpu_ref (fixed-seed short runs; scripts/difftest.sh runs
 * long). */
#include "random_graph_util.h"
#include "xf_runtime.h"
#include "xf_test_util.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

START_TEST(test_random_graphs_survive_check)
{
    const char *dir = xf_test_tmpdir("difftest");
    ck_assert_ptr_nonnull(dir);
    int bad = xf_difftest_run(xf_test_tool("xflowc"), 1, 150, 8, dir, stdout);
    ck_assert_msg(bad == 0, "%d of 150 random graphs failed xflowc --check (models kept in %s)", bad, dir);
}
END_TEST

/* Random graphs on the cpu backend (channel counts in whole blocks of
 * oneDNN's layouts or not, its own loops, activations written out) give
 * cpu_ref's outputs. */
START_TEST(test_random_graphs_on_cpu)
{
    if (!xf_backend_find("cpu")) {
        printf("skipped: this build has no oneDNN, so no cpu backend\n");
        return;
    }
    const char *dir = xf_test_tmpdir("difftest_cpu");
    ck_assert_ptr_nonnull(dir);
    int bad = xf_backend_difftest_run("cpu", 1, 400, 12, dir, stdout);
    ck_assert_msg(bad == 0, "%d of 400 random graphs differ on cpu from cpu_ref (models kept in %s)", bad, dir);
}
END_TEST

/* Whether a and b are the same graph: xf_graph_hash takes large
 * initializers by identity, so those are compared byte by byte. */
static bool same_graph(const xf_graph *a, const xf_graph *b)
{
    if (a->n_values != b->n_values || a->n_nodes != b->n_nodes)
        return false;
    for (int v = 0; v < a->n_values; v++) {
        const xf_tensor *x = a->values[v].init, *y = b->values[v].init;
        if (!xf_shape_equal(&a->values[v].shape, &b->values[v].shape) || !x != !y ||
            (x && (x->nbytes != y->nbytes || memcmp(x->data, y->data, x->nbytes) != 0)))
            return false;
    }
    for (int i = 0; i < a->n_nodes; i++)
        if (xf_hash_node_attrs(&a->nodes[i]) != xf_hash_node_attrs(&b->nodes[i]) ||
            a->nodes[i].n_inputs != b->nodes[i].n_inputs ||
            memcmp(a->nodes[i].inputs, b->nodes[i].inputs, sizeof(int) * (size_t)a->nodes[i].n_inputs) != 0)
            return false;
    return true;
}

/* The generators themselves: deterministic, and every graph valid. */
START_TEST(test_random_graphs_are_valid_and_deterministic)
{
    for (int backend = 0; backend < 2; backend++)
        for (uint64_t seed = 100; seed < 140; seed++) {
            xf_status (*make)(uint64_t, int, xf_model **, xf_error *) =
                backend ? xf_random_backend_model : xf_random_model;
            xf_model *a, *b;
            xf_error err;
            ck_assert_msg(make(seed, 10, &a, &err) == XF_OK, "seed %llu: %s", (unsigned long long)seed, err.msg);
            ck_assert_msg(xf_graph_validate(a->graph, &err) == XF_OK, "%s", err.msg);
            ck_assert_int_gt(a->graph->n_nodes, 0);
            ck_assert_int_gt(a->graph->n_outputs, 0);
            ck_assert(make(seed, 10, &b, &err) == XF_OK);
            ck_assert_msg(same_graph(a->graph, b->graph), "seed %llu: two graphs", (unsigned long long)seed);
            if (!backend) /* small initializers only: hashed by content */
                ck_assert_uint_eq(xf_graph_hash(a->graph), xf_graph_hash(b->graph));
            xf_model_free(a);
            xf_model_free(b);
        }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("difftest");
    TCase *tc = tcase_create("random-graphs");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_random_graphs_are_valid_and_deterministic);
    tcase_add_test(tc, test_random_graphs_survive_check);
    tcase_add_test(tc, test_random_graphs_on_cpu);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
