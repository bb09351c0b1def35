/* The ONNX backend test data, for the conformance suites: listing cases
 * and running one case on a backend against its expected outputs. */
#include "conformance_util.h"

#include "xf_proto.h"
#include "xf_runtime.h"
#include "xf_test_util.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int xf_conformance_list(const char *dir, char ***out)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0, cap = 64;
    char **names = malloc(sizeof *names * (size_t)cap);
    struct dirent *e;
    while (names && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            char **nn = realloc(names, sizeof *names * (size_t)(cap *= 2));
            if (!nn)
                break;
            names = nn;
        }
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    *out = names;
    return n;
}

void xf_conformance_free_list(char **names, int n)
{
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* The model of case_dir loaded for the inputs in[] of one data set: their
 * shapes size the symbolic dims the graph inputs declare (as xflow-run's
 * --input files do), so that no dim is guessed as 1 and then fed another
 * size. */
static xf_status load_for_inputs(const char *case_dir, const xf_graph *g, xf_tensor *const *in, xf_model **out,
                                 xf_error *err)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/model.onnx", case_dir);
    xf_shape *fed = calloc((size_t)g->n_inputs + 1, sizeof *fed);
    if (!fed)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    for (int i = 0; i < g->n_inputs; i++)
        fed[i] = xf_tensor_is_container(in[i]) ? (xf_shape){.ndim = -1} : in[i]->shape;
    xf_load_options opt = {.feed_shapes = fed, .n_feed_shapes = g->n_inputs};
    xf_status st = xf_model_load(path, &opt, out, err);
    free(fed);
    return st;
}

/* Whether g holds a random op: its values come from xflow's generator,
 * not the one that made the expected outputs (numpy's), so only their
 * types and shapes can be compared. */
static bool draws_random(const xf_graph *g)
{
    for (int i = 0; i < g->n_nodes; i++)
        if (xf_node_draws_random(g, &g->nodes[i]))
            return true;
    return false;
}

/* Runs data set dir: inputs read as m's graph inputs are typed, the model
 * loaded again sized by them; NULL on success, else why. */
static const char *run_set(const char *case_dir, int set, const xf_model *m, const char *backend, char *why,
                           size_t why_len)
{
    xf_error err;
    char dir[4400];
    snprintf(dir, sizeof dir, "%s/test_data_set_%d", case_dir, set);
    const xf_graph *g = m->graph;
    const char *result = NULL;
    xf_model *sized = NULL;
    xf_session *s = NULL;
    xf_tensor **in = calloc((size_t)g->n_inputs + 1, sizeof *in);
    xf_tensor **out = calloc((size_t)g->n_outputs + 1, sizeof *out);
    for (int i = 0; i < g->n_inputs && !result; i++) {
        char path[4600];
        snprintf(path, sizeof path, "%s/input_%d.pb", dir, i);
        if (xf_value_load_pb(path, g->values[g->inputs[i]].kind, &in[i], NULL, &err) != XF_OK) {
            snprintf(why, why_len, "input %d: %s", i, err.msg);
            result = why;
        }
    }
    if (!result && load_for_inputs(case_dir, g, in, &sized, &err) != XF_OK) {
        snprintf(why, why_len, "load: %s", err.msg);
        result = why;
    }
    if (!result && xf_session_create(sized->graph, xf_model_opset(sized), backend, NULL, &s, &err) != XF_OK) {
        snprintf(why, why_len, "session: %s", err.msg);
        result = why;
    }
    if (!result && xf_session_run(s, in, out, &err) != XF_OK) {
        snprintf(why, why_len, "run: %s", err.msg);
        result = why;
    }
    for (int k = 0; k < g->n_outputs && !result; k++) {
        char path[4600];
        xf_tensor *expect = NULL;
        snprintf(path, sizeof path, "%s/output_%d.pb", dir, k);
        if (xf_value_load_pb(path, xf_tensor_kind(out[k]), &expect, NULL, &err) != XF_OK) {
            snprintf(why, why_len, "expected output %d: %s", k, err.msg);
            result = why;
            break;
        }
        double max_abs = 0, max_rel = 0;
        bool ok = false;
        if (draws_random(g) && (out[k]->dtype != expect->dtype || !xf_shape_equal(&out[k]->shape, &expect->shape))) {
            snprintf(why, why_len, "output %d: got %s, expected %s (a random draw: types and shapes compared)", k,
                     xf_dtype_name(out[k]->dtype), xf_dtype_name(expect->dtype));
            result = why;
        } else if (draws_random(g)) {
            ok = true;
        } else if (xf_tensor_compare(out[k], expect, 1e-5, 1e-3, &max_abs, &max_rel, &ok, &err) != XF_OK) {
            char sa[128], sb[128];
            snprintf(why, why_len, "output %d: got %s %s, expected %s %s (%s)", k, xf_dtype_name(out[k]->dtype),
                     xf_shape_str(&out[k]->shape, sa, sizeof sa), xf_dtype_name(expect->dtype),
                     xf_shape_str(&expect->shape, sb, sizeof sb), err.msg);
            result = why;
        } else if (!ok) {
            snprintf(why, why_len, "output %d of data set %d differs: max abs %.3g, max rel %.3g", k, set, max_abs, max_rel);
            result = why;
        }
        xf_tensor_release(expect);
    }
    for (int i = 0; i < g->n_inputs; i++)
        xf_tensor_release(in[i]);
    for (int k = 0; k < g->n_outputs; k++)
        xf_tensor_release(out[k]);
    free(in);
    free(out);
    xf_session_free(s);
    xf_model_free(sized);
    return result;
}

const char *xf_conformance_run_case(const char *case_dir, const xf_model *m, const char *backend)
{
    static char why[1400];
    const char *result = NULL;
    for (int set = 0; !result; set++) {
        char dir[4400];
        snprintf(dir, sizeof dir, "%s/test_data_set_%d", case_dir, set);
        if (!xf_test_exists(dir))
            break;
        result = run_set(case_dir, set, m, backend, why, sizeof why);
    }
    return result;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void tally_note(xf_conformance_tally *t, const char *name, const char *why)
{
    size_t len = strlen(t->failures);
    if (len < sizeof t->failures - 300)
        snprintf(t->failures + len, sizeof t->failures - len, "  %s: %s\n", name, why);
}

void xf_conformance_against_ref(const char *backend, double budget_s, xf_conformance_tally *t)
{
    memset(t, 0, sizeof *t);
    const char *node_dir = XF_ONNX_TESTDATA "/node";
    char **names;
    int n = xf_conformance_list(node_dir, &names);
    if (n <= 0)
        return;
    t->listed = n;
    double t0 = now_s();
    for (int i = 0; i < n && !(budget_s > 0 && now_s() - t0 > budget_s); i++) {
        char dir[4200], model[4300];
        snprintf(dir, sizeof dir, "%s/%s", node_dir, names[i]);
        snprintf(model, sizeof model, "%s/model.onnx", dir);
        xf_model *m = NULL;
        xf_error err;
        if (!xf_test_exists(model) || xf_model_load(model, NULL, &m, &err) != XF_OK)
            continue;
        t->cases++;
        if (!xf_conformance_run_case(dir, m, "cpu_ref")) {
            t->ref_pass++;
            xf_session *probe = NULL;
            if (xf_session_create(m->graph, xf_model_opset(m), backend, NULL, &probe, &err) != XF_OK) {
                t->refused++;
            } else {
                xf_session_free(probe);
                const char *why = xf_conformance_run_case(dir, m, backend);
                if (!why)
                    t->pass++;
                else
                    tally_note(t, names[i], why);
            }
        }
        xf_model_free(m);
    }
    xf_conformance_free_list(names, n);
}
