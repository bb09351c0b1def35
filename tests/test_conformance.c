/* ONNX conformance: every case of the ONNX backend test data.
 *
 * Every case must import, export and re-import to the same graph, and its
 * exported file must pass onnx.checker.  Every case whose ops the runtime
 * supports (no opaque node, and cpu_ref accepts every node and dtype) must
 * match the expected outputs (rtol 1e-3, atol 1e-5).  Counts are printed;
 * each failure is listed with its reason in conformance-failures.txt in the
 * build directory, each unsupported case with the runtime's refusal in
 * conformance-unsupported.txt. */
#include "conformance_util.h"
#include "xf_proto.h"
#include "xf_runtime.h"
#include "xf_test_util.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const suites[] = {"node", "simple", "pytorch-converted", "pytorch-operator"};

typedef struct counts {
    int cases, roundtrip_ok, supported, passed;
} counts;

static bool graphs_same(const xf_graph *a, xf_graph *b)
{
    if (a->n_nodes != b->n_nodes || a->n_inputs != b->n_inputs || a->n_outputs != b->n_outputs)
        return false;
    for (int i = 0; i < a->n_nodes; i++)
        if (a->nodes[i].op != b->nodes[i].op)
            return false;
    for (int v = 0; v < b->n_values; v++) {
        xf_tensor *tb = b->values[v].init;
        int u = tb ? xf_graph_find_value(a, b->values[v].name) : -1;
        xf_tensor *ta = u >= 0 ? a->values[u].init : NULL;
        if (!ta || ta->dtype != tb->dtype || !xf_shape_equal(&ta->shape, &tb->shape) ||
            ta->nbytes != tb->nbytes || (ta->nbytes && memcmp(ta->data, tb->data, ta->nbytes) != 0))
            continue;
        b->values[v].init = xf_tensor_retain(ta);
        xf_tensor_release(tb);
    }
    return xf_graph_hash(a) == xf_graph_hash(b);
}

START_TEST(test_conformance)
{
    const char *tmp = xf_test_tmpdir("conformance");
    ck_assert_ptr_nonnull(tmp);
    char tmpdir[4096], list_path[4200], fail_path[4200], unsup_path[4200];
    snprintf(tmpdir, sizeof tmpdir, "%s", tmp);
    snprintf(list_path, sizeof list_path, "%s/exported.txt", tmpdir);
    snprintf(fail_path, sizeof fail_path, "%s/conformance-failures.txt", XF_BINARY_DIR);
    FILE *list = fopen(list_path, "w");
    FILE *fails = fopen(fail_path, "w");
    snprintf(unsup_path, sizeof unsup_path, "%s/conformance-unsupported.txt", XF_BINARY_DIR);
    FILE *unsup = fopen(unsup_path, "w");
    ck_assert_ptr_nonnull(unsup);
    ck_assert_ptr_nonnull(list);
    ck_assert_ptr_nonnull(fails);
    xf_log_set(NULL, NULL, XF_LOG_ERROR); /* symbolic-dim warnings are expected here */

    counts total = {0};
    for (size_t s = 0; s < sizeof suites / sizeof *suites; s++) {
        char suite_dir[4096];
        snprintf(suite_dir, sizeof suite_dir, "%s/%s", XF_ONNX_TESTDATA, suites[s]);
        char **names;
        int n = xf_conformance_list(suite_dir, &names);
        ck_assert_msg(n > 0, "no ONNX test data in %s (scripts/setup.sh installs libonnx-testdata)", suite_dir);
        counts c = {0};
        for (int i = 0; i < n; i++) {
            char case_dir[4200], model_path[4300];
            snprintf(case_dir, sizeof case_dir, "%s/%s", suite_dir, names[i]);
            snprintf(model_path, sizeof model_path, "%s/model.onnx", case_dir);
            if (!xf_test_exists(model_path))
                continue;
            c.cases++;
            xf_error err;
            xf_model *m = NULL, *back = NULL;
            if (xf_model_load(model_path, NULL, &m, &err) != XF_OK) {
                fprintf(fails, "%s/%s: import: %s\n", suites[s], names[i], err.msg);
                continue;
            }
            char out_path[4300];
            snprintf(out_path, sizeof out_path, "%s/%s__%s.onnx", tmpdir, suites[s], names[i]);
            if (xf_model_save(m, out_path, NULL, &err) != XF_OK) {
                fprintf(fails, "%s/%s: export: %s\n", suites[s], names[i], err.msg);
            } else if (xf_model_load(out_path, NULL, &back, &err) != XF_OK) {
                fprintf(fails, "%s/%s: re-import: %s\n", suites[s], names[i], err.msg);
            } else if (!graphs_same(m->graph, back->graph)) {
                fprintf(fails, "%s/%s: round trip changed the graph\n", suites[s], names[i]);
            } else {
                c.roundtrip_ok++;
                fprintf(list, "%s\n", out_path);
            }
            xf_model_free(back);
            /* supported: a session can be made (opaque nodes other than If
             * and Loop with their subgraphs refuse one) */
            xf_session *probe = NULL;
            if (xf_session_create(m->graph, xf_model_opset(m), "cpu_ref", NULL, &probe, &err) == XF_OK) {
                xf_session_free(probe);
                c.supported++;
                const char *why = xf_conformance_run_case(case_dir, m, "cpu_ref");
                if (why)
                    fprintf(fails, "%s/%s: %s\n", suites[s], names[i], why);
                else
                    c.passed++;
            } else {
                fprintf(unsup, "%s/%s: %s\n", suites[s], names[i], err.msg);
            }
            xf_model_free(m);
        }
        xf_conformance_free_list(names, n);
        printf("conformance %-18s cases %4d  round-trip %4d  supported %4d  passed %4d\n", suites[s], c.cases,
               c.roundtrip_ok, c.supported, c.passed);
        total.cases += c.cases;
        total.roundtrip_ok += c.roundtrip_ok;
        total.supported += c.supported;
        total.passed += c.passed;
    }
    fclose(list);
    fclose(fails);
    fclose(unsup);
    printf("conformance %-18s cases %4d  round-trip %4d  supported %4d  passed %4d (%.1f%%)\n", "total",
           total.cases, total.roundtrip_ok, total.supported, total.passed,
           total.supported ? 100.0 * total.passed / total.supported : 0.0);
    printf("conformance failures are listed in %s, unsupported cases in %s\n", fail_path, unsup_path);

    char cmd[8800], *out = NULL;
    snprintf(cmd, sizeof cmd, XF_PYTHON " %s/tests/onnx_check.py --list %s", XF_SOURCE_DIR, list_path);
    int rc = xf_test_run(cmd, &out);
    printf("onnx.checker on exported models: %s", out ? out : "(no output)\n");
    ck_assert_msg(rc == 0, "onnx.checker rejected exported models:\n%s", out ? out : "");
    free(out);

    ck_assert_int_eq(total.roundtrip_ok, total.cases);
    ck_assert_msg(total.supported > 0, "no case is supported by cpu_ref");
    ck_assert_msg(total.passed * 100 >= total.supported * 95, "only %d of %d supported cases pass (< 95%%)",
                  total.passed, total.supported);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("conformance");
    TCase *tc = tcase_create("onnx-backend-data");
    tcase_set_timeout(tc, 1200);
    tcase_add_test(tc, test_conformance);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
