/* xflow-bench end to end on the smallest zoo model with tiny iteration
 * counts: a well-formed JSON report and markdown table, peers that are
 * absent listed as absent with what would enable them, and a summary parser
 * that tolerates figures xflowc does not print. */
#include "xf_test_util.h"
#include "zoo.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Value of "key value" line `key` in out, or NULL (a pointer into out). */
static const char *field(const char *out, const char *key)
{
    size_t n = strlen(key);
    for (const char *p = out; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (!strncmp(p, key, n) && p[n] == ' ')
            return p + n + 1;
    return NULL;
}

static double field_num(const char *out, const char *key)
{
    const char *v = field(out, key);
    ck_assert_msg(v, "no '%s' in the report summary:\n%s", key, out);
    return strtod(v, NULL);
}

/* Prints the report's facts as "key value" lines; fails on a malformed
 * report (missing keys, wrong types, NaN, which json.load would also refuse
 * when strict). */
static const char summarize_py[] =
    "import json, sys\n"
    "def strict(c): raise ValueError('non-finite number ' + c)\n"
    "r = json.load(open(sys.argv[1]), parse_constant=strict)\n"
    "for k in ('date', 'machine', 'versions', 'method', 'backends', 'models', 'plot'):\n"
    "    assert k in r, k\n"
    "assert r['machine']['cores'] >= 1 and r['versions']['xflowc'].startswith('xflowc')\n"
    "for b in r['backends']:\n"
    "    print('backend', b['name'].replace(' ', '_'), int(b['present']), b['detail'].replace(' ', '_'))\n"
    "m = r['models'][0]\n"
    "print('models', len(r['models']))\n"
    "print('threads', r['method']['threads'])\n"
    "print('model', m['name'])\n"
    "print('nodes_before', m['optimizer']['nodes_before'])\n"
    "ref = m['results']['xflow cpu_ref']\n"
    "for k in ('original_ms', 'optimized_ms', 'speedup', 'max_abs_err', 'iters'):\n"
    "    print(k, ref[k])\n"
    "rounds = ref['round_ms']\n"
    "ratios = sorted(o / x for o, x in zip(rounds['original'], rounds['optimized']))\n"
    "n = len(ratios)\n"
    "print('median_of_rounds', ratios[n // 2] if n % 2 else (ratios[n // 2 - 1] + ratios[n // 2]) / 2)\n"
    "print('plot', r['plot'].replace(' ', '_'))\n";

START_TEST(test_bench_smallest_model)
{
    char dir[4200], sdir[4200];
    ck_assert_ptr_nonnull(xf_test_tmpdir("bench"));
    snprintf(dir, sizeof dir, "%s", xf_test_tmpdir("bench"));
    ck_assert_ptr_nonnull(xf_test_tmpdir("bench-summary"));
    snprintf(sdir, sizeof sdir, "%s", xf_test_tmpdir("bench-summary"));
    char cmd[16384], path[4300], *out = NULL, *summary = NULL;
    /* A python without onnxruntime stands in for a machine without the peer. */
    snprintf(cmd, sizeof cmd,
             "%s --models inception-block --iters 2 --threads 1 --backends cpu_ref,cuda,ort,trt "
             "--ort-python /nonexistent/python --out %s",
             xf_test_tool("xflow-bench"), dir);
    int rc = xf_test_run(cmd, &out);
    ck_assert_msg(rc == 0, "xflow-bench failed (%d):\n%s", rc, out ? out : "");
    /* progress per model, then the tables */
    ck_assert_ptr_nonnull(strstr(out, "[1/1] inception-block"));
    ck_assert_ptr_nonnull(strstr(out, "| model | backend | original ms | optimized ms | speedup |"));
    ck_assert_ptr_nonnull(strstr(out, "| inception-block | xflow cpu_ref | "));
    ck_assert_ptr_nonnull(
        strstr(out, "| onnxruntime | no | onnxruntime not importable: run benchmarks/setup-peers.sh |"));
    ck_assert_ptr_nonnull(strstr(out, "| tensorrt | no |"));

    snprintf(path, sizeof path, "%s/bench.md", dir);
    ck_assert(xf_test_exists(path));
    char script[4300];
    snprintf(script, sizeof script, "%s/summarize.py", sdir);
    FILE *f = fopen(script, "w");
    ck_assert_ptr_nonnull(f);
    fputs(summarize_py, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, XF_PYTHON " %s %s/bench.json", script, dir);
    rc = xf_test_run(cmd, &summary);
    ck_assert_msg(rc == 0, "bench.json is malformed:\n%s", summary ? summary : "");

    ck_assert_int_eq((int)field_num(summary, "models"), 1);
    ck_assert_int_eq((int)field_num(summary, "threads"), 1);
    const char *name = field(summary, "model");
    ck_assert_msg(name && !strncmp(name, "inception-block\n", 16), "%s", summary);
    xf_error err;
    xf_model *m = NULL;
    ck_assert_int_eq(xf_zoo_build("inception-block", 0, &m, &err), XF_OK);
    ck_assert_int_eq((int)field_num(summary, "nodes_before"), m->graph->n_nodes);
    xf_model_free(m);
    double orig = field_num(summary, "original_ms"), opt = field_num(summary, "optimized_ms");
    ck_assert(orig > 0 && opt > 0);
    double speedup = field_num(summary, "speedup");
    ck_assert(speedup > 0);
    /* the speedup is the median of the per-round ratios the report lists */
    double of_rounds = field_num(summary, "median_of_rounds");
    ck_assert_msg(fabs(speedup - of_rounds) <= 1e-9 * of_rounds, "speedup %g, median of the rounds %g", speedup,
                  of_rounds);
    ck_assert(field_num(summary, "max_abs_err") < 1e-3);
    ck_assert(field_num(summary, "iters") >= 2);

    const char *ort = strstr(summary, "backend onnxruntime ");
    ck_assert_ptr_nonnull(ort);
    ck_assert(!strncmp(ort, "backend onnxruntime 0 ", 22));
    const char *trt = strstr(summary, "backend tensorrt ");
    ck_assert_ptr_nonnull(trt);
    const char *cpu = strstr(summary, "backend xflow_cpu ");
    ck_assert_msg(cpu && !strncmp(cpu, "backend xflow_cpu 0 ", 20), "xflow cpu was not selected:\n%s", summary);

    /* the chart exists when gnuplot does, else the report says why not */
    const char *plot = field(summary, "plot");
    ck_assert_ptr_nonnull(plot);
    snprintf(path, sizeof path, "%s/speedup.png", dir);
    if (!strncmp(plot, "speedup.png", 11)) {
        f = fopen(path, "rb");
        ck_assert_ptr_nonnull(f);
        unsigned char sig[8] = {0};
        ck_assert_int_eq(fread(sig, 1, 8, f), 8);
        fclose(f);
        ck_assert(!memcmp(sig, "\x89PNG\r\n\x1a\n", 8));
    } else {
        ck_assert_ptr_nonnull(strstr(plot, "gnuplot"));
    }
    free(out);
    free(summary);
}
END_TEST

START_TEST(test_bench_usage_errors)
{
    char cmd[8192], *out = NULL;
    snprintf(cmd, sizeof cmd, "%s --models no-such-model --out %s", xf_test_tool("xflow-bench"),
             xf_test_tmpdir("bench-usage"));
    ck_assert_int_ne(xf_test_run(cmd, &out), 0);
    ck_assert_ptr_nonnull(strstr(out, "no zoo model named 'no-such-model'"));
    free(out);
    snprintf(cmd, sizeof cmd, "%s --iters 0", xf_test_tool("xflow-bench"));
    ck_assert_int_ne(xf_test_run(cmd, &out), 0);
    ck_assert_ptr_nonnull(strstr(out, "--iters"));
    free(out);
    snprintf(cmd, sizeof cmd, "%s --backends cpu_ref,gpu", xf_test_tool("xflow-bench"));
    ck_assert_int_ne(xf_test_run(cmd, &out), 0);
    ck_assert_ptr_nonnull(strstr(out, "unknown backend 'gpu'"));
    free(out);
}
END_TEST

/* xflowc's summary as it may read: the parser takes what is there and
 * leaves the rest None ('n/a' in the table). */
START_TEST(test_bench_parses_xflowc_summaries)
{
    char cmd[8192], *out = NULL;
    snprintf(cmd, sizeof cmd,
             "cd %s/benchmarks && " XF_PYTHON " -c \"import bench\n"
             "full = bench.parse_xflowc('xflowc: m.onnx: 27 nodes -> 12 nodes (0.1 s load, 0.25 s optimize)\\n"
             "estimated cost: 0.7143 ms -> 0.62 ms\\ncanonicalize: 3 constants folded\\n')\n"
             "bare = bench.parse_xflowc('wrote x.onnx')\n"
             "slow = bench.parse_xflowc('measured on cpu: 7.747 ms before the search, 12.31 ms after: the rewrites "
             "run slower on this CPU, so ...\\n')\n"
             "print(full['nodes_before'], full['nodes_after'], full['search_s'], full['cost_before'], "
             "full['cost_after'], full['canonicalize'])\n"
             "print(slow['measured_before_ms'], slow['measured_after_ms'], slow['search_result_written'])\n"
             "print(sorted(set(bare.values()), key=str))\"",
             XF_SOURCE_DIR);
    int rc = xf_test_run(cmd, &out);
    ck_assert_msg(rc == 0, "%s", out ? out : "");
    ck_assert_ptr_nonnull(strstr(out, "27 12 0.25 0.7143 0.62 3 constants folded\n"));
    ck_assert_ptr_nonnull(strstr(out, "[None]\n"));
    ck_assert_ptr_nonnull(strstr(out, "7.747 12.31 False\n"));
    free(out);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("bench");
    TCase *tc = tcase_create("xflow-bench");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_bench_parses_xflowc_summaries);
    tcase_add_test(tc, test_bench_usage_errors);
    tcase_add_test(tc, test_bench_smallest_model);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
