/* Differential testing of the optimizer: random valid graphs through
 * `xflowc --check` (a fixed-seed short run; scripts/difftest.sh runs long). */
#include "random_graph_util.h"
#include "xf_test_util.h"

#include <check.h>
#include <stdlib.h>

START_TEST(test_random_graphs_survive_check)
{
    const char *dir = xf_test_tmpdir("difftest");
    ck_assert_ptr_nonnull(dir);
    int bad = xf_difftest_run(xf_test_tool("xflowc"), 1, 150, 8, dir, stdout);
    ck_assert_msg(bad == 0, "%d of 150 random graphs failed xflowc --check (models kept in %s)", bad, dir);
}
END_TEST

/* The generator itself: deterministic, and every graph valid. */
START_TEST(test_random_graphs_are_valid_and_deterministic)
{
    for (uint64_t seed = 100; seed < 140; seed++) {
        xf_model *a, *b;
        xf_error err;
        ck_assert_msg(xf_random_model(seed, 10, &a, &err) == XF_OK, "seed %llu: %s", (unsigned long long)seed,
                      err.msg);
        ck_assert_msg(xf_graph_validate(a->graph, &err) == XF_OK, "%s", err.msg);
        ck_assert_int_gt(a->graph->n_nodes, 0);
        ck_assert_int_gt(a->graph->n_outputs, 0);
        ck_assert(xf_random_model(seed, 10, &b, &err) == XF_OK);
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
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
