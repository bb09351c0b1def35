/* xflowc: optimize an ONNX model.
 *
 *   xflowc model.onnx -o opt.onnx [--input-shape name=1x3x224x224] [--check]
 *
 * Loads the model, canonicalizes it (constant folding, BatchNormalization
 * folding, Identity/Dropout and dead-node removal), searches for the
 * cheapest equivalent graph with the substitution library and the built-in
 * rules, folds the constants the rewrites introduced, checks the result
 * when asked, and writes it atomically. */
#include "cli.h"
#include "xflowc_compare.h"
#include "xflowc_dims.h"
#include "xflowc_measure.h"
#include "xf_optimizer.h"
#include "xf_proto.h"
#include "xf_runtime.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "usage: xflowc MODEL.onnx -o OUT.onnx [options]\n"
    "\n"
    "Optimizes an ONNX model and writes a model that computes the same function.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE        where to write the optimized model (required)\n"
    "  --input-shape NAME=DIMS  static shape for an input with symbolic dims, e.g.\n"
    "                           --input-shape input=1x3x224x224 (repeatable)\n"
    "  --dim NAME=N             the size the symbolic dim NAME stands for while\n"
    "                           optimizing and checking (default 1, or where\n"
    "                           1 does not fit, 64, then 512, past each\n"
    "                           input's first dim); it stays\n"
    "                           symbolic in the written model, e.g. --dim past=5\n"
    "                           --dim seq=3 --dim total=8 (repeatable)\n"
    "  --check                  run the original and the optimized model on cpu_ref\n"
    "                           with seeded random inputs and compare every output;\n"
    "                           exit non-zero (and write nothing) above tolerance\n"
    "  --input FILE.pb          an ONNX TensorProto file for the next model input, for\n"
    "                           --check (repeatable, in input order); inputs not\n"
    "                           given are random as xflow-run makes them: give the\n"
    "                           ones that hold shapes, axes or indices not read by a\n"
    "                           Gather; a file's size sizes the input's\n"
    "                           symbolic dims as --dim would (they stay symbolic)\n"
    "  --seed N                 seed for --check inputs (default 1)\n"
    "  --atol X, --rtol X       --check tolerance: |a-b| <= atol + rtol*|b|\n"
    "                           (default atol 1e-4, rtol 1e-3; atol is scaled by\n"
    "                           the largest |b| of an output where that is below 1;\n"
    "                           float16/bfloat16 outputs: 1e-2/5e-2 of the largest\n"
    "                           |b|, absolute and relative)\n"
    "  --external-data          store large weights in OUT.onnx.data beside the model\n"
    "\n"
    "search:\n"
    "  --rules FILE             substitution library (default: the library built\n"
    "                           with xflow, " XF_DEFAULT_RULES ",\n"
    "                           else " XF_INSTALLED_RULES ")\n"
    "  --cost NAME              cost model: analytic:h100, analytic:h200, analytic:a100,\n"
    "                           analytic:v100, analytic:cpu (roofline of a device),\n"
    "                           cpu (measured on the fastest CPU backend, cached),\n"
    "                           cuda (measured on the GPU), measured:BACKEND (e.g.\n"
    "                           measured:cpu_ref); default analytic:cpu\n"
    "  --cost-cache FILE        cache file of measured op costs\n"
    "                           (default ~/.cache/xflow/cost-BACKEND.txt)\n"
    "  --alpha X                relaxation: explore graphs up to X times the best\n"
    "                           cost (default 1.05)\n"
    "  --budget N               expand at most N graphs (default 1000)\n"
    "  --time-limit S           stop searching after S seconds (default 10; 0: none)\n"
    "  --max-memory MB          memory for the search's candidate graphs, beyond the\n"
    "                           model itself (default 1024); fewer candidates are\n"
    "                           kept when a graph is large\n"
    "  --no-search              canonicalize only\n"
    "  --no-measure             keep the search's result even where it runs slower\n"
    "                           on this CPU (by default, when the cost model is\n"
    "                           analytic:cpu, cpu or measured:cpu, the graphs before\n"
    "                           and after the search are timed on the cpu backend\n"
    "                           and the faster one is written)\n"
    "  --threads N              threads for the runs that time or --check the graphs\n"
    "                           (default: OMP_NUM_THREADS, else one per core)\n"
    "  --trace                  print every rewrite on the way to the result\n"
    "  -q, --quiet              print errors only\n"
    "  -v, --verbose            print more detail\n"
    "  -h, --help               this help\n"
    "  --version                print the version\n";

typedef struct options {
    const char *in, *out;
    const char *inputs[256];
    int n_inputs;
    xf_input_shape shapes[64];
    char *shape_names[64];
    int n_shapes;
    xf_dim_size dims[64];
    int n_dims;
    bool check, external, trace, no_search, no_measure;
    long seed, budget, max_memory_mb, threads;
    double atol, rtol, alpha, time_limit;
    const char *rules, *cost, *cost_cache;
    int verbosity;
} options;

static void options_free(options *o)
{
    for (int i = 0; i < o->n_shapes; i++)
        free(o->shape_names[i]);
    xf_cli_free_dims(o->dims, o->n_dims);
}

static int parse_args(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    o->seed = 1;
    o->atol = -1; /* not given: see xfc_output_tolerance */
    o->rtol = -1;
    o->verbosity = 1;
    o->alpha = 1.05;
    o->budget = 1000;
    o->max_memory_mb = 1024;
    o->time_limit = 10;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage, stdout);
            exit(0);
        } else if (!strcmp(a, "--version")) {
            printf("xflowc 0.1.0\n");
            exit(0);
        } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            o->verbosity = 0;
        } else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
            o->verbosity = 2;
        } else if (!strcmp(a, "--check")) {
            o->check = true;
        } else if (!strcmp(a, "--trace")) {
            o->trace = true;
        } else if (!strcmp(a, "--no-search")) {
            o->no_search = true;
        } else if (!strcmp(a, "--no-measure")) {
            o->no_measure = true;
        } else if (!strcmp(a, "--rules") || !strcmp(a, "--cost") || !strcmp(a, "--cost-cache")) {
            if (!next)
                return xf_cli_usage_error("%s needs a value", a);
            *(!strcmp(a, "--rules") ? &o->rules : !strcmp(a, "--cost") ? &o->cost : &o->cost_cache) = argv[++i];
        } else if (!strcmp(a, "--max-memory") || !strcmp(a, "--threads")) {
            bool mem = !strcmp(a, "--max-memory");
            if (!xf_cli_parse_int(a, next, 1, mem ? 1L << 30 : 1024, mem ? &o->max_memory_mb : &o->threads))
                return 2;
            i++;
        } else if (!strcmp(a, "--budget")) {
            if (!xf_cli_parse_int(a, next, 0, 0x7fffffffL, &o->budget))
                return 2;
            i++;
        } else if (!strcmp(a, "--alpha") || !strcmp(a, "--time-limit")) {
            double *dst = !strcmp(a, "--alpha") ? &o->alpha : &o->time_limit;
            if (!xf_cli_parse_double(a, next, dst))
                return 2;
            if (*dst < (dst == &o->alpha ? 1.0 : 0.0))
                return xf_cli_usage_error("%s must be at least %s", a, dst == &o->alpha ? "1" : "0");
            i++;
        } else if (!strcmp(a, "--external-data")) {
            o->external = true;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (!next)
                return xf_cli_usage_error("%s needs a file name", a);
            o->out = argv[++i];
        } else if (!strcmp(a, "--input-shape")) {
            if (!next)
                return xf_cli_usage_error("--input-shape needs NAME=DIMS, e.g. input=1x3x224x224");
            if (o->n_shapes == 64)
                return xf_cli_usage_error("too many --input-shape options (64 at most)");
            xf_error err;
            if (xf_parse_shape_arg(next, &o->shapes[o->n_shapes], &o->shape_names[o->n_shapes], &err) !=
                XF_OK)
                return xf_cli_usage_error("%s", err.msg);
            o->n_shapes++;
            i++;
        } else if (!strcmp(a, "--dim")) {
            int rc = xf_cli_parse_dim(next, o->dims, &o->n_dims, 64);
            if (rc)
                return rc;
            i++;
        } else if (!strcmp(a, "--input")) {
            if (!next)
                return xf_cli_usage_error("--input needs a TensorProto file");
            if (o->n_inputs == 256)
                return xf_cli_usage_error("too many --input files (256 at most)");
            o->inputs[o->n_inputs++] = next;
            i++;
        } else if (!strcmp(a, "--seed")) {
            if (!xf_cli_parse_int(a, next, 0, 0x7fffffffL, &o->seed))
                return 2;
            i++;
        } else if (!strcmp(a, "--atol") || !strcmp(a, "--rtol")) {
            if (!xf_cli_parse_double(a, next, !strcmp(a, "--atol") ? &o->atol : &o->rtol))
                return 2;
            i++;
        } else if (a[0] == '-' && a[1]) {
            return xf_cli_usage_error("unknown option '%s'", a);
        } else if (!o->in) {
            o->in = a;
        } else {
            return xf_cli_usage_error("more than one input model ('%s' and '%s')", o->in, a);
        }
    }
    if (!o->in)
        return xf_cli_usage_error("no input model given");
    if (!o->out)
        return xf_cli_usage_error("no output file given (-o OUT.onnx)");
    return 0;
}

/* Runs both graphs on cpu_ref with the same random inputs and compares each
 * output.  Returns 0 when all agree within tolerance. */
static int check_models(const options *o, const xf_graph *before, const xf_graph *after, int64_t opset)
{
    xf_error err;
    xfc_run_pair r;
    int n_out = before->n_outputs, rc = 1;
    xf_cli_info("check: running the original and the optimized model on cpu_ref...\n");
    double t0 = xf_cli_now();
    if (xfc_run_both(before, after, opset, "cpu_ref", o->inputs, o->n_inputs, (uint64_t)o->seed, &r, &err) != XF_OK) {
        /* Random values are not valid for an input that holds a shape, an
         * index or an axis; say how to give real ones. */
        rc = xf_cli_error("--check: %s%s", err.msg,
                          r.ran && o->n_inputs < before->n_inputs
                              ? " (inputs without --input FILE.pb were random; give the ones that hold shapes, "
                                "indices or axes)"
                              : "");
        xfc_run_pair_free(&r);
        return rc;
    }
    int bad = 0;
    for (int k = 0; k < n_out; k++) {
        double max_abs = 0, max_rel = 0;
        bool ok = false;
        char shape[128];
        const xf_value *v = &before->values[before->outputs[k]];
        xfc_tolerance tol = xfc_output_tolerance(r.a[k], o->atol, o->rtol);
        if (xf_tensor_compare(r.b[k], r.a[k], tol.atol, tol.rtol, &max_abs, &max_rel, &ok, &err) != XF_OK) {
            char sa[128], sb[128];
            xf_cli_error("--check: output '%s': optimized gives %s %s, original %s %s", v->name,
                         xf_dtype_name(r.b[k]->dtype), xf_shape_str(&r.b[k]->shape, sa, sizeof sa),
                         xf_dtype_name(r.a[k]->dtype), xf_shape_str(&r.a[k]->shape, sb, sizeof sb));
            bad++;
            continue;
        }
        char scaled[128] = "";
        if (tol.adapted && r.a[k]->dtype != XF_DT_STRING) /* strings are equal or not */
            snprintf(scaled, sizeof scaled, " (atol %.3g, rtol %.3g: %s outputs are at most %.3g)", tol.atol,
                     tol.rtol, xf_dtype_name(r.a[k]->dtype), xf_tensor_max_abs(r.a[k]));
        xf_cli_info("check: output '%s' %s: max abs error %.3g, max rel error %.3g%s  %s\n", v->name,
                    xf_shape_str(&r.a[k]->shape, shape, sizeof shape), max_abs, max_rel, scaled,
                    ok ? "ok" : "MISMATCH");
        bad += !ok;
    }
    xf_cli_info("check: both models ran in %.1f s\n", xf_cli_now() - t0);
    if (bad)
        rc = xf_cli_error("--check: %d of %d outputs differ beyond tolerance (see the lines above; --atol and "
                          "--rtol set it); nothing written", bad, n_out);
    else
        rc = 0;
    xfc_run_pair_free(&r);
    return rc;
}

/* The rules the search uses: the proved rules of the library, then the
 * built-in ones.  The default library may be absent (a build without the
 * generated file): a warning, and the built-in rules alone.  A library
 * named with --rules must load. */
typedef struct rule_source {
    xf_library *lib;
    xf_rule **builtin;
    int n_builtin, n_unproved;
    const xf_rule **all;
    xf_rule_set *set;
} rule_source;

static void rule_source_free(rule_source *r)
{
    xf_rule_set_free(r->set);
    free(r->all);
    for (int i = 0; i < r->n_builtin; i++)
        xf_rule_free(r->builtin[i]);
    free(r->builtin);
    xf_library_free(r->lib);
}

static int load_rules(const options *o, rule_source *r)
{
    xf_error err;
    const char *path = o->rules;
    if (!path)
        path = access(XF_DEFAULT_RULES, R_OK) == 0 ? XF_DEFAULT_RULES
               : access(XF_INSTALLED_RULES, R_OK) == 0 ? XF_INSTALLED_RULES : NULL;
    if (path && xf_library_load(path, &r->lib, &err) != XF_OK)
        return xf_cli_error("%s", err.msg);
    if (xf_builtin_rules(&r->builtin, &r->n_builtin, &err) != XF_OK)
        return xf_cli_error("built-in rules: %s", err.msg);
    if (!path)
        xf_log(XF_LOG_WARN, "no rule library (%s or %s); searching with the %d built-in rules only",
               XF_DEFAULT_RULES, XF_INSTALLED_RULES, r->n_builtin);
    int n_lib = r->lib ? r->lib->n_rules : 0, n = 0;
    r->all = calloc((size_t)(n_lib + r->n_builtin + 1), sizeof *r->all);
    if (!r->all)
        return xf_cli_error("out of memory");
    for (int i = 0; i < n_lib; i++) {
        /* Only proved rules are sound to apply. */
        if (r->lib->rules[i]->proved)
            r->all[n++] = r->lib->rules[i];
        else
            r->n_unproved++;
    }
    for (int i = 0; i < r->n_builtin; i++)
        r->all[n++] = r->builtin[i];
    err.msg[0] = 0;
    if (xf_rule_set_create(r->all, n, &r->set, &err) != XF_OK)
        return xf_cli_error("rules: %s", err.msg);
    xf_cli_info("rules: %d from %s", n_lib - r->n_unproved, path ? path : "(no library)");
    if (r->n_unproved)
        xf_cli_info(" (%d unproved ignored)", r->n_unproved);
    xf_cli_info(", %d built-in", r->n_builtin);
    if (xf_rule_set_skipped(r->set))
        xf_cli_info("; %d skipped (first: %s)", xf_rule_set_skipped(r->set), err.msg);
    xf_cli_info("\n");
    return 0;
}

/* Prints the rules the result applied, most used first, with counts. */
static void print_rules_applied(const xf_rule_set *rs, const xf_search_result *res)
{
    int n = xf_rule_set_count(rs);
    int *count = calloc((size_t)n + 1, sizeof *count);
    if (!count)
        return;
    for (int i = 0; i < res->n_steps; i++)
        count[res->steps[i].rule]++;
    xf_cli_info("rules applied: %d rewrite%s", res->n_steps, res->n_steps == 1 ? "" : "s");
    for (int shown = 0; shown < res->n_steps;) {
        int top = 0;
        for (int i = 1; i < n; i++)
            if (count[i] > count[top])
                top = i;
        xf_cli_info("%s %s x%d", shown ? "," : ":", xf_rule_set_rule(rs, top)->name, count[top]);
        shown += count[top];
        count[top] = 0;
    }
    xf_cli_info("\n");
    free(count);
}

/* Whether the search's result should be written: with a cost model of
 * this CPU, as timed by xfc_faster_here; otherwise always. */
static bool faster_here(const options *o, const xf_graph *before, const xf_graph *after, int64_t opset,
                        double estimate)
{
    const char *c = o->cost ? o->cost : "analytic:cpu";
    bool this_cpu = !strcmp(c, "analytic:cpu") || !strcmp(c, "cpu") || !strcmp(c, "measured:cpu");
    if (o->no_measure || !this_cpu || !xf_backend_find("cpu"))
        return true;
    return xfc_faster_here(before, after, opset, estimate, o->inputs, o->n_inputs, (uint64_t)o->seed);
}

static int optimize(const options *o, xf_graph **g, int64_t opset)
{
    rule_source rules = {0};
    xf_cost_model *cost = NULL;
    xf_search_result res = {0};
    xf_error err;
    int rc = load_rules(o, &rules);
    if (rc)
        goto done;
    xf_cost_options co = {.cache_path = o->cost_cache};
    if (xf_cost_model_create(o->cost, &co, &cost, &err) != XF_OK) {
        rc = xf_cli_error("--cost: %s", err.msg);
        goto done;
    }
    xf_cli_info("cost model: %s (%s)\n", xf_cost_model_name(cost), xf_cost_model_describe(cost));
    xf_search_options so;
    xf_search_options_default(&so);
    so.opset = opset;
    so.alpha = o->alpha;
    so.budget = o->budget;
    so.time_limit = o->time_limit;
    /* Candidates share the model's tensors; what each costs is its own
     * structure, so the queue is sized to fit --max-memory. */
    size_t per_graph = xf_graph_footprint(*g) + 1;
    long fit = (long)((size_t)o->max_memory_mb * 1024 * 1024 / per_graph);
    if (fit < so.queue_limit) {
        so.queue_limit = fit > 4 ? fit : 4;
        xf_cli_info("search: --max-memory %ld MB keeps at most %ld candidate graphs (%zu KB each)\n",
                    o->max_memory_mb, so.queue_limit, per_graph / 1024);
    }
    so.progress = xf_cli_verbosity() >= 1 ? stderr : NULL;
    if (xf_search(*g, rules.set, cost, &so, &res, &err) != XF_OK) {
        rc = xf_cli_error("search: %s", err.msg);
        goto done;
    }
    xf_canon_stats st = {0};
    if (xf_rewrite_finalize(res.best, opset, &st, &err) != XF_OK ||
        xf_graph_validate(res.best, &err) != XF_OK) {
        rc = xf_cli_error("after search: %s", err.msg);
        goto done;
    }
    long measured, cached;
    xf_cost_model_stats(cost, &measured, &cached);
    xf_cli_info("search: %.3f s, %ld graphs expanded, %ld candidates, %ld rewrites dropped (shapes), stopped by %s",
                res.seconds, res.expanded, res.generated, res.dropped,
                res.stopped_budget ? "budget" : res.stopped_time ? "time limit" : "exhausting the space");
    if (measured)
        xf_cli_info(", %ld ops measured", measured);
    xf_cli_info("\n");
    xf_cli_info("estimated cost (%s): %.4g ms -> %.4g ms (%.1f%% lower)\n", xf_cost_model_name(cost),
                res.cost_before * 1e3, res.cost_after * 1e3,
                res.cost_before > 0 ? 100.0 * (1 - res.cost_after / res.cost_before) : 0.0);
    print_rules_applied(rules.set, &res);
    if (o->trace)
        for (int i = 0; i < res.n_steps; i++)
            printf("  %3d. %-32s at %s -> %.4g ms\n", i + 1, xf_rule_set_rule(rules.set, res.steps[i].rule)->name,
                   res.steps[i].where, res.steps[i].cost * 1e3);
    if (res.n_steps > 0 && !faster_here(o, *g, res.best, opset, res.cost_before))
        goto done;
    xf_graph_free(*g);
    *g = res.best;
    res.best = NULL;
done:
    xf_search_result_free(&res);
    xf_cost_model_free(cost);
    rule_source_free(&rules);
    return rc;
}

int main(int argc, char **argv)
{
    xf_cli_openmp_passive(argv);
    xf_cli_init("xflowc", 1); /* usage errors name the program */
    options o;
    int rc = parse_args(argc, argv, &o);
    if (rc) {
        options_free(&o);
        return rc;
    }
    xf_cli_init("xflowc", o.verbosity);
    if (o.threads)
        xf_runtime_set_threads((int)o.threads);
    if (xf_cli_same_file(o.in, o.out)) {
        options_free(&o);
        return xf_cli_error("%s: the output would overwrite the input model; choose another -o", o.out);
    }

    double t0 = xf_cli_now(), t_load = t0;
    xf_error err;
    xf_model *m = NULL;
    xf_graph *original = NULL;
    xf_canon_stats st = {0};
    xfc_sym_plan sym = {0};
    int64_t opset = 0;
    /* where the symbolic dims nothing sized, taken as 1 (or the larger
     * sizes the load tried), do not fit once shapes fold (Silero VAD's
     * STFT window past its Pad), the larger sizes the load tries */
    int64_t guess = 0;
    const char *given = o.n_shapes || o.n_dims || o.n_inputs ? " where no size was given" : "";
    /* why the sizes tried before did not do: said where larger ones do
     * not load either */
    char tried[3200] = "";
    int64_t taken = 0; /* the size those dims took when loaded (0: there are none) */
retry:
    for (;;) {
        xf_model_free(m);
        xf_graph_free(original);
        xf_names_free(&sym.recompute);
        m = NULL;
        original = NULL;
        sym = (xfc_sym_plan){0};
        st = (xf_canon_stats){0};
        taken = guess;
        if (xf_cli_load_model(o.in, o.shapes, o.n_shapes, o.dims, o.n_dims, o.inputs, o.n_inputs, &taken, &m, &err) !=
            XF_OK) {
            options_free(&o);
            return tried[0] ? xf_cli_error("%s", tried) : xf_cli_error("%s", err.msg);
        }
        opset = xf_model_opset(m);
        sym.guess = taken;
        original = xf_graph_clone(m->graph);
        if (!original) {
            xf_model_free(m);
            options_free(&o);
            return xf_cli_error("out of memory");
        }
        t_load = xf_cli_now();
        xf_status cs = xf_canonicalize_with(m->graph, opset, xf_runtime_eval_node,
                                            m->n_symbolic ? &xfc_keep_every_if : NULL, &st, &err);
        if (cs == XF_OK && m->n_symbolic > 0) {
            /* then the Ifs whose conditions do not depend on the sizes go */
            xfc_prepare_symbolic(m, original, opset, &sym);
            xf_canon_options keep = {.n_keep_conditions = sym.recompute.n,
                                     .keep_conditions = (const char *const *)sym.recompute.names};
            cs = xf_canonicalize_with(m->graph, opset, xf_runtime_eval_node, &keep, &st, &err);
        }
        if (cs == XF_OK && xf_graph_validate(m->graph, &err) == XF_OK)
            break;
        int64_t next = xf_cli_next_guess(taken);
        if (m->n_symbolic == 0 || !next) {
            rc = xf_cli_error("%s: while optimizing: %s%s", o.in, err.msg, xfc_sizes_hint(m));
            goto done;
        }
        xf_log(XF_LOG_WARN,
               "%s: its symbolic dims do not fit at the sizes taken (%s); trying %" PRId64
               " past each input's first dim%s",
               o.in, err.msg, next, given);
        snprintf(tried, sizeof tried, "%s: while optimizing: %s%s", o.in, err.msg, xfc_sizes_hint(m));
        guess = next;
    }
    double t_canon = xf_cli_now();
    char branches[320] = "";
    if (st.inlined_branches)
        snprintf(branches, sizeof branches, ", %d If replaced by its constant branch", st.inlined_branches);
    if (st.lowered_fused_convs)
        snprintf(branches + strlen(branches), sizeof branches - strlen(branches), ", %d FusedConv made Conv",
                 st.lowered_fused_convs);
    if (st.merged_constants)
        snprintf(branches + strlen(branches), sizeof branches - strlen(branches), ", %d duplicate weights merged",
                 st.merged_constants);
    if (st.folded_pads)
        snprintf(branches + strlen(branches), sizeof branches - strlen(branches), ", %d Pad folded into its reader",
                 st.folded_pads);
    if (st.folded_affine)
        snprintf(branches + strlen(branches), sizeof branches - strlen(branches),
                 ", %d per-channel Mul/Add folded into Conv", st.folded_affine);
    if (st.removed_transposes)
        snprintf(branches + strlen(branches), sizeof branches - strlen(branches), ", %d Transpose cancelled",
                 st.removed_transposes);
    xf_cli_info("canonicalize: %d constants folded, %d BatchNormalization folded into Conv, %d activations fused "
                "into Conv, %d Identity/Dropout/Cast removed%s, %d dead nodes and %d unused initializers removed "
                "(%.3f s)\n",
                st.folded_constants, st.folded_batchnorms, st.fused_activations, st.removed_identity, branches,
                st.removed_dead, st.removed_initializers, t_canon - t_load);
    if (!o.no_search && (rc = optimize(&o, &m->graph, opset)) != 0)
        goto done;
    double t_opt = xf_cli_now();

    xf_cli_info("xflowc: %s: %d nodes -> %d nodes as written (%.3f s load, %.3f s optimize)\n", o.in,
                xf_cli_written_nodes(original), xf_cli_written_nodes(m->graph), t_load - t0, t_opt - t_load);
    if (xf_cli_verbosity() >= 1)
        xf_cli_print_op_changes(stdout, original, m->graph);

    if (o.check && (rc = check_models(&o, original, m->graph, opset)) != 0)
        goto done;
    char why_fixed[3000];
    if (m->n_symbolic > 0 &&
        !xfc_keep_symbolic(m, original, opset, (uint64_t)o.seed, &sym, o.n_inputs > 0, why_fixed, sizeof why_fixed)) {
        /* the model does not run, or its dims do not all hold, at the
         * sizes taken: larger ones for the dims nothing sized, from the
         * load on */
        int64_t next = xf_cli_next_guess(taken);
        if (next) {
            xf_log(XF_LOG_WARN,
                   "%s: its symbolic dims do not all hold at the sizes taken; trying %" PRId64
                   " past each input's first dim%s",
                   o.in, next, given);
            snprintf(tried, sizeof tried, "%s: %s", o.in, why_fixed);
            guess = next;
            goto retry;
        }
        rc = xf_cli_error("%s: %s", o.in, why_fixed);
        goto done;
    }

    xf_save_options so = {.external_data = o.external, .external_threshold = 1024};
    xf_status saved = xf_model_save(m, o.out, &so, &err);
    if (saved == XF_ERR_LIMIT && !o.external) {
        /* over protobuf's 2 GiB: the weights go beside the model, as
         * --external-data puts them (the failed attempt wrote nothing) */
        xf_log(XF_LOG_WARN, "%s is over protobuf's 2 GiB limit as one file; its weights go to %s.data (as "
               "--external-data)", o.out, o.out);
        so.external_data = true;
        saved = xf_model_save(m, o.out, &so, &err);
    }
    if (saved != XF_OK) {
        rc = xf_cli_error("%s", err.msg);
        goto done;
    }
    xf_cli_info("wrote %s (%.3f s total)\n", o.out, xf_cli_now() - t0);
    rc = 0;
done:
    xf_names_free(&sym.recompute);
    xf_graph_free(original);
    xf_model_free(m);
    options_free(&o);
    return rc;
}
