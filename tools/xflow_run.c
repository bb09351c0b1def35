/* xflow-run: execute an ONNX model on one of xflow's backends.
 *
 *   xflow-run model.onnx [--backend cpu_ref] [--input in0.pb ...]
 *             [--output-dir DIR] [--iters N] [--profile N] */
#include "cli.h"
#include "xf_proto.h"
#include "xf_runtime.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char usage[] =
    "usage: xflow-run MODEL.onnx [options]\n"
    "\n"
    "Runs an ONNX model on an xflow backend and prints its outputs.\n"
    "\n"
    "options:\n"
    "  --backend NAME           backend to run on (default cpu_ref; --list-backends)\n"
    "  --input FILE.pb          an ONNX TensorProto file for the next graph input, in\n"
    "                           input order (repeatable); its size sizes the input's\n"
    "                           symbolic dims (named ones for every input); inputs\n"
    "                           not given are seeded random tensors (floats in\n"
    "                           [-1, 1), integers in [0, 10) and below the rows of a\n"
    "                           table they index, all ones for one named as a mask,\n"
    "                           a random PPM image for an ImageDecoder's bytes);\n"
    "                           a sequence or optional input takes a SequenceProto\n"
    "                           or OptionalProto\n"
    "  --seed N                 seed for random inputs (default 1)\n"
    "  --input-shape NAME=DIMS  static shape for an input with symbolic dims\n"
    "  --dim NAME=N             the size of the symbolic dim NAME wherever an input\n"
    "                           has it (repeatable; e.g. --dim past=32 --dim seq=1\n"
    "                           --dim total=33 for a decoder with a KV cache);\n"
    "                           symbolic dims nothing sizes are 1, or, where the\n"
    "                           model does not load, prepare or run at 1, 64 and\n"
    "                           then 512 past each input's first dim\n"
    "  --output-dir DIR         write output_N.pb files (ONNX test-data layout:\n"
    "                           SequenceProto or OptionalProto for such outputs)\n"
    "  --iters N                run N timed iterations after warm-up and print\n"
    "                           median/min/max latency\n"
    "  --warmup N               untimed runs before timing (default 3)\n"
    "  --profile N              time every node (median of --iters runs, at least\n"
    "                           10) and print the N slowest nodes and the time per\n"
    "                           op type\n"
    "  --max-tensor-mb N        fail the run (naming the value) rather than make a\n"
    "                           tensor of more than N MiB, also inside If, Loop and\n"
    "                           Scan bodies: for models whose sizes come from their\n"
    "                           data (default: no limit)\n"
    "  --threads N              run on at most N threads (default: OMP_NUM_THREADS,\n"
    "                           else one per core)\n"
    "  --direct-conv            sum every convolution directly, as cpu_ref does\n"
    "                           (default: 3x3 ones may run through Winograd's\n"
    "                           transform, faster, rounded in another order)\n"
    "  --fixed-kernels          run each node on the kernel the backend's plan gives\n"
    "                           (default: the cpu backend times oneDNN's other\n"
    "                           kernels for a convolution and runs the fastest,\n"
    "                           which --profile shows; choices are kept in\n"
    "                           ~/.cache/xflow/cpu-kernels.txt, or the file\n"
    "                           XF_KERNEL_CACHE names, none if it is empty)\n"
    "  --list-backends          print the backends this build has\n"
    "  -q, --quiet, -v, --verbose, -h, --help\n"
    "  --version                the version, the backends and the image formats\n"
    "                           this build has\n";

typedef struct options {
    const char *model, *backend, *output_dir;
    const char *inputs[256];
    int n_inputs;
    xf_input_shape shapes[64];
    char *shape_names[64];
    int n_shapes;
    xf_dim_size dims[64];
    int n_dims;
    long iters, warmup, seed, profile, max_tensor_mb, threads;
    int verbosity;
    bool direct_conv, fixed_kernels;
} options;

typedef struct node_time {
    int node;
    double seconds;
} node_time;

static int slower_first(const void *pa, const void *pb)
{
    const node_time *a = pa, *b = pb;
    return (a->seconds < b->seconds) - (a->seconds > b->seconds);
}

static const char *op_label(const xf_node *n)
{
    return n->op == XF_OP_OPAQUE && n->opaque ? n->opaque->op_type : xf_op_name(n->op);
}

/* Per-node medians: the `top` slowest nodes, then the time per op type. */
static int print_profile(xf_session *s, xf_tensor *const *inputs, const options *o)
{
    const xf_graph *g = xf_session_graph(s);
    int n = g->n_nodes, repeats = o->iters > 10 ? (int)o->iters : 10;
    double *sec = calloc((size_t)n + 1, sizeof *sec);
    node_time *nt = calloc((size_t)n + 1, sizeof *nt), *per_op = calloc((size_t)XF_OP_COUNT + 2, sizeof *per_op);
    xf_error err;
    if (!sec || !nt || !per_op) {
        free(sec), free(nt), free(per_op);
        return xf_cli_error("out of memory");
    }
    if (xf_session_profile(s, inputs, (int)o->warmup, repeats, sec, &err) != XF_OK) {
        free(sec), free(nt), free(per_op);
        return xf_cli_error("%s: %s", o->model, err.msg);
    }
    double total = 0;
    for (int i = 0; i < n; i++) {
        nt[i] = (node_time){i, sec[i]};
        total += sec[i];
        /* opaque nodes (If, Loop) share the last slot under their own names */
        int k = g->nodes[i].op == XF_OP_OPAQUE ? XF_OP_COUNT : (int)g->nodes[i].op;
        per_op[k].node = i;
        per_op[k].seconds += sec[i];
    }
    qsort(nt, (size_t)n, sizeof *nt, slower_first);
    printf("profile on %s: %d nodes, %.3f ms in all (medians of %d runs)\n", o->backend, n, 1e3 * total, repeats);
    if (xf_session_is_dynamic(s))
        printf("dynamic mode (shapes known only at run time): %d of the nodes planned and prepared once\n",
               xf_session_static_nodes(s));
    char impl[384];
    for (int i = 0; i < n && i < o->profile; i++) {
        const xf_node *nd = &g->nodes[nt[i].node];
        xf_session_node_impl(s, nt[i].node, impl, sizeof impl);
        printf("  %9.3f ms %5.1f%%  %-20s %s%s%s%s\n", 1e3 * nt[i].seconds,
               total > 0 ? 100 * nt[i].seconds / total : 0, op_label(nd),
               nd->name && nd->name[0] ? nd->name : "(unnamed)", impl[0] ? "  [" : "", impl, impl[0] ? "]" : "");
    }
    /* oneDNN's reference implementations are its slow fallbacks: worth a
     * line of their own wherever they are in the list */
    int slow = 0;
    for (int i = 0; i < n; i++) {
        xf_session_node_impl(s, i, impl, sizeof impl);
        slow += strncmp(impl, "ref:", 4) == 0;
    }
    if (slow)
        printf("note: %d node%s run on oneDNN's reference implementation (its slow fallback for forms its kernels "
               "lack), shown as [ref:...]\n", slow, slow == 1 ? "" : "s");
    qsort(per_op, (size_t)XF_OP_COUNT + 1, sizeof *per_op, slower_first);
    printf("per op type:\n");
    for (int k = 0; k <= XF_OP_COUNT && per_op[k].seconds > 0; k++)
        printf("  %9.3f ms %5.1f%%  %s\n", 1e3 * per_op[k].seconds, total > 0 ? 100 * per_op[k].seconds / total : 0,
               g->nodes[per_op[k].node].op == XF_OP_OPAQUE ? "(opaque)" : op_label(&g->nodes[per_op[k].node]));
    free(sec);
    free(nt);
    free(per_op);
    return 0;
}

static void options_free(options *o)
{
    for (int i = 0; i < o->n_shapes; i++)
        free(o->shape_names[i]);
    xf_cli_free_dims(o->dims, o->n_dims);
}

static int list_backends(void)
{
    const xf_backend *const *list;
    int n = xf_backend_list(&list);
    for (int i = 0; i < n; i++)
        printf("%s\n", list[i]->name);
    if (xf_backend_unavailable("cuda"))
        printf("cuda (unavailable: %s)\n", xf_backend_unavailable("cuda"));
    return 0;
}

static int parse_args(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    o->backend = "cpu_ref";
    o->warmup = 3;
    o->seed = 1;
    o->verbosity = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        bool takes_value = !strcmp(a, "--backend") || !strcmp(a, "--input") || !strcmp(a, "--output-dir") ||
                           !strcmp(a, "--iters") || !strcmp(a, "--warmup") || !strcmp(a, "--seed") ||
                           !strcmp(a, "--input-shape") || !strcmp(a, "--profile") || !strcmp(a, "--dim") ||
                           !strcmp(a, "--max-tensor-mb") || !strcmp(a, "--threads");
        if (takes_value && !next)
            return xf_cli_usage_error("%s needs a value", a);
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage, stdout);
            exit(0);
        } else if (!strcmp(a, "--version")) {
            const char *formats = xf_runtime_image_formats();
            printf("xflow-run 0.1.0\nbackends:");
            const xf_backend *const *list;
            for (int i = 0, n = xf_backend_list(&list); i < n; i++)
                printf(" %s", list[i]->name);
            if (xf_backend_unavailable("cuda"))
                printf(" (cuda unavailable: %s)", xf_backend_unavailable("cuda"));
            printf("\nImageDecoder formats:%s\n", formats[0] ? formats : " none");
            exit(0);
        } else if (!strcmp(a, "--list-backends")) {
            exit(list_backends());
        } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            o->verbosity = 0;
        } else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
            o->verbosity = 2;
        } else if (!strcmp(a, "--direct-conv")) {
            o->direct_conv = true;
        } else if (!strcmp(a, "--fixed-kernels")) {
            o->fixed_kernels = true;
        } else if (!strcmp(a, "--backend")) {
            o->backend = argv[++i];
        } else if (!strcmp(a, "--input")) {
            if (o->n_inputs == 256)
                return xf_cli_usage_error("too many --input files (256 at most)");
            o->inputs[o->n_inputs++] = argv[++i];
        } else if (!strcmp(a, "--output-dir")) {
            o->output_dir = argv[++i];
        } else if (!strcmp(a, "--iters")) {
            if (!xf_cli_parse_int(a, argv[++i], 0, 1000000, &o->iters))
                return 2;
        } else if (!strcmp(a, "--dim")) {
            int rc = xf_cli_parse_dim(argv[++i], o->dims, &o->n_dims, 64);
            if (rc)
                return rc;
        } else if (!strcmp(a, "--profile")) {
            if (!xf_cli_parse_int(a, argv[++i], 1, 1000000, &o->profile))
                return 2;
        } else if (!strcmp(a, "--max-tensor-mb")) {
            if (!xf_cli_parse_int(a, argv[++i], 1, 1L << 30, &o->max_tensor_mb))
                return 2;
        } else if (!strcmp(a, "--threads")) {
            if (!xf_cli_parse_int(a, argv[++i], 1, 1024, &o->threads))
                return 2;
        } else if (!strcmp(a, "--warmup")) {
            if (!xf_cli_parse_int(a, argv[++i], 0, 1000000, &o->warmup))
                return 2;
        } else if (!strcmp(a, "--seed")) {
            if (!xf_cli_parse_int(a, argv[++i], 0, 0x7fffffffL, &o->seed))
                return 2;
        } else if (!strcmp(a, "--input-shape")) {
            if (o->n_shapes == 64)
                return xf_cli_usage_error("too many --input-shape options (64 at most)");
            xf_error err;
            if (xf_parse_shape_arg(argv[++i], &o->shapes[o->n_shapes], &o->shape_names[o->n_shapes],
                                   &err) != XF_OK)
                return xf_cli_usage_error("%s", err.msg);
            o->n_shapes++;
        } else if (a[0] == '-' && a[1]) {
            return xf_cli_usage_error("unknown option '%s'", a);
        } else if (!o->model) {
            o->model = a;
        } else {
            return xf_cli_usage_error("more than one model ('%s' and '%s')", o->model, a);
        }
    }
    if (!o->model)
        return xf_cli_usage_error("no model given");
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void print_output(const char *name, const xf_tensor *t)
{
    char shape[128];
    if (t->is_map) {
        const xf_tensor *k = t->items[0], *v = t->items[1];
        int64_t n = xf_tensor_numel(k);
        xf_cli_info("output '%s' map %s -> %s, %lld entr%s:", name, xf_dtype_name(k->dtype), xf_dtype_name(v->dtype),
                    (long long)n, n == 1 ? "y" : "ies");
        for (int64_t i = 0; i < n && i < 8; i++) {
            if (k->dtype == XF_DT_STRING)
                xf_cli_info(" \"%s\"", k->strings && k->strings[i] ? k->strings[i] : "");
            else
                xf_cli_info(" %lld", (long long)xf_tensor_get_i64(k, i));
            xf_cli_info(": %.6g%s", xf_tensor_get_f64(v, i), i + 1 < n ? "," : "");
        }
        xf_cli_info("%s\n", n > 8 ? " ..." : "");
        return;
    }
    if (xf_tensor_is_container(t)) {
        xf_cli_info("output '%s' %s of %s, %lld entr%s\n", name, xf_kind_name(xf_tensor_kind(t)),
                    xf_dtype_name(t->dtype), (long long)t->n_items, t->n_items == 1 ? "y" : "ies");
        for (int64_t i = 0; i < t->n_items && i < 8; i++) {
            char entry[64];
            snprintf(entry, sizeof entry, "%s[%lld]", name, (long long)i);
            print_output(entry, t->items[i]);
        }
        return;
    }
    xf_cli_info("output '%s' %s %s:", name, xf_dtype_name(t->dtype), xf_shape_str(&t->shape, shape, sizeof shape));
    int64_t n = xf_tensor_numel(t);
    bool numeric = t->dtype != XF_DT_STRING && xf_dtype_size(t->dtype) > 0 && t->dtype != XF_DT_FLOAT16 &&
                   t->dtype != XF_DT_BFLOAT16 && t->dtype != XF_DT_COMPLEX64 && t->dtype != XF_DT_COMPLEX128;
    for (int64_t i = 0; numeric && i < n && i < 8; i++)
        xf_cli_info(" %.6g", xf_tensor_get_f64(t, i));
    for (int64_t i = 0; t->dtype == XF_DT_STRING && i < n && i < 8; i++)
        xf_cli_info(" \"%s\"", t->strings && t->strings[i] ? t->strings[i] : "");
    xf_cli_info("%s\n", n > 8 ? " ..." : "");
}

/* Where the symbolic dims nothing sized took `taken` and do not fit (err,
 * found once the model loaded: when its shapes fold in the session, or
 * when it runs), the larger size to load it again with, saying so; 0
 * where there is none.  `tried` keeps why the sizes before did not do. */
static int64_t larger_guess(const char *model, int64_t taken, const xf_error *err, char *tried, size_t n)
{
    int64_t next = xf_cli_next_guess(taken);
    if (next) {
        xf_log(XF_LOG_WARN,
               "%s: its symbolic dims do not fit at the sizes taken (%s); trying %" PRId64
               " past each input's first dim",
               model, err->msg, next);
        snprintf(tried, n, "%s: %s", model, err->msg);
    }
    return next;
}

int main(int argc, char **argv)
{
    xf_cli_openmp_passive(argv);
    xf_cli_init("xflow-run", 1); /* usage errors name the program */
    options o;
    int rc = parse_args(argc, argv, &o);
    if (rc) {
        options_free(&o);
        return rc;
    }
    xf_cli_init("xflow-run", o.verbosity);
    if (o.threads)
        xf_runtime_set_threads((int)o.threads);
    if (xf_cli_verbosity() >= 2)
        fprintf(stderr, "xflow-run: OpenMP wait policy: %s; at most %d thread%s\n", xf_cli_openmp_policy(),
                xf_runtime_threads(), xf_runtime_threads() == 1 ? "" : "s");

    xf_error err;
    xf_model *m = NULL;
    xf_session *s = NULL;
    xf_tensor **inputs = NULL, **outputs = NULL;
    double *times = NULL;
    int64_t guess = 0, taken = 0;
    char tried[3200] = ""; /* why the sizes before did not do, said where larger ones do not load */
retry:
    taken = guess;
    if (xf_cli_load_model(o.model, o.shapes, o.n_shapes, o.dims, o.n_dims, o.inputs, o.n_inputs, &taken, &m, &err) !=
        XF_OK) {
        options_free(&o);
        return tried[0] ? xf_cli_error("%s", tried) : xf_cli_error("%s", err.msg);
    }
    const xf_graph *g = m->graph;
    rc = 1;
    if (o.n_inputs > g->n_inputs) {
        rc = xf_cli_error("%d --input files given but %s has %d inputs", o.n_inputs, o.model, g->n_inputs);
        goto done;
    }
    xf_session_options sopt = {.max_tensor_bytes = (size_t)o.max_tensor_mb << 20,
                               .direct_convolutions = o.direct_conv,
                               .fixed_kernels = o.fixed_kernels};
    if (xf_session_create(g, xf_model_opset(m), o.backend, &sopt, &s, &err) != XF_OK) {
        if ((guess = larger_guess(o.model, taken, &err, tried, sizeof tried)) != 0)
            goto again;
        rc = xf_cli_error("%s: %s", o.model, err.msg);
        goto done;
    }
    if (xf_session_is_dynamic(s))
        xf_log(XF_LOG_INFO, "%s: dynamic mode (shapes known only at run time); %d of %d nodes planned and prepared once",
               o.model, xf_session_static_nodes(s), xf_session_graph(s)->n_nodes);
    if (xf_cli_load_inputs(g, o.inputs, o.n_inputs, (uint64_t)o.seed, &inputs, &err) != XF_OK) {
        rc = xf_cli_error("%s: %s", o.model, err.msg);
        goto done;
    }
    outputs = calloc((size_t)g->n_outputs + 1, sizeof *outputs);
    times = calloc((size_t)o.iters + 1, sizeof *times);
    if (!outputs || !times) {
        rc = xf_cli_error("out of memory");
        goto done;
    }
    long warm = o.iters > 0 ? o.warmup : 0;
    for (long it = 0; it < warm + (o.iters > 0 ? o.iters : 1); it++) {
        for (int k = 0; k < g->n_outputs; k++) {
            xf_tensor_release(outputs[k]);
            outputs[k] = NULL;
        }
        double t0 = xf_cli_now();
        if (xf_session_run(s, inputs, outputs, &err) != XF_OK) {
            if (it == 0 && (guess = larger_guess(o.model, taken, &err, tried, sizeof tried)) != 0)
                goto again;
            rc = xf_cli_error("%s: %s", o.model, err.msg);
            goto done;
        }
        if (it >= warm && o.iters > 0)
            times[it - warm] = xf_cli_now() - t0;
    }
    for (int k = 0; k < g->n_outputs; k++)
        print_output(g->values[g->outputs[k]].name, outputs[k]);
    if (o.iters > 0) {
        qsort(times, (size_t)o.iters, sizeof *times, cmp_double);
        printf("latency on %s over %ld runs (after %ld warm-up): median %.3f ms, min %.3f ms, max %.3f ms\n",
               o.backend, o.iters, warm, 1e3 * times[o.iters / 2], 1e3 * times[0], 1e3 * times[o.iters - 1]);
    }
    if (o.profile > 0 && (rc = print_profile(s, inputs, &o)) != 0)
        goto done;
    rc = 1;
    if (o.output_dir) {
        if (mkdir(o.output_dir, 0777) != 0 && errno != EEXIST) {
            rc = xf_cli_error("%s: cannot create directory: %s", o.output_dir, strerror(errno));
            goto done;
        }
        for (int k = 0; k < g->n_outputs; k++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/output_%d.pb", o.output_dir, k);
            if (xf_value_save_pb(outputs[k], g->values[g->outputs[k]].name, path, &err) != XF_OK) {
                rc = xf_cli_error("%s", err.msg);
                goto done;
            }
        }
        xf_cli_info("wrote %d outputs to %s\n", g->n_outputs, o.output_dir);
    }
    rc = 0;
done:
    if (m) {
        xf_cli_free_tensors(inputs, g->n_inputs);
        xf_cli_free_tensors(outputs, g->n_outputs);
    }
    free(times);
    xf_session_free(s);
    xf_model_free(m);
    options_free(&o);
    return rc;
again: /* loaded again at a larger size */
    xf_cli_free_tensors(inputs, g->n_inputs);
    xf_cli_free_tensors(outputs, g->n_outputs);
    free(times);
    xf_session_free(s);
    xf_model_free(m);
    inputs = outputs = NULL;
    times = NULL;
    s = NULL;
    m = NULL;
    goto retry;
}
