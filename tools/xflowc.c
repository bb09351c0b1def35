/* xflowc: optimize an ONNX model.
 *
 *   xflowc model.onnx -o opt.onnx [--input-shape name=1x3x224x224] [--check]
 *
 * Loads the model, canonicalizes it (constant folding, BatchNormalization
 * folding, Identity/Dropout and dead-node removal), checks it when asked,
 * and writes the result atomically. */
#include "cli.h"
#include "xf_proto.h"
#include "xf_runtime.h"

#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: xflowc MODEL.onnx -o OUT.onnx [options]\n"
    "\n"
    "Optimizes an ONNX model and writes a model that computes the same function.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE        where to write the optimized model (required)\n"
    "  --input-shape NAME=DIMS  static shape for an input with symbolic dims, e.g.\n"
    "                           --input-shape input=1x3x224x224 (repeatable)\n"
    "  --check                  run the original and the optimized model on cpu_ref\n"
    "                           with seeded random inputs and compare every output;\n"
    "                           exit non-zero (and write nothing) above tolerance\n"
    "  --seed N                 seed for --check inputs (default 1)\n"
    "  --atol X, --rtol X       --check tolerance: |a-b| <= atol + rtol*|b|\n"
    "                           (default atol 1e-4, rtol 1e-3)\n"
    "  --external-data          store large weights in OUT.onnx.data beside the model\n"
    "  -q, --quiet              print errors only\n"
    "  -v, --verbose            print more detail\n"
    "  -h, --help               this help\n"
    "  --version                print the version\n";

typedef struct options {
    const char *in, *out;
    xf_input_shape shapes[64];
    char *shape_names[64];
    int n_shapes;
    bool check, external;
    long seed;
    double atol, rtol;
    int verbosity;
} options;

static int parse_args(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    o->seed = 1;
    o->atol = 1e-4;
    o->rtol = 1e-3;
    o->verbosity = 1;
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
                return xf_cli_usage_error("--input-shape %s: %s", next, err.msg);
            o->n_shapes++;
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
    xf_session *s_before = NULL, *s_after = NULL;
    xf_tensor **inputs = NULL, **out_before = NULL, **out_after = NULL;
    int n_out = before->n_outputs, rc = 1;
    if (xf_session_create(before, opset, "cpu_ref", NULL, &s_before, &err) != XF_OK ||
        xf_session_create(after, opset, "cpu_ref", NULL, &s_after, &err) != XF_OK) {
        rc = xf_cli_error("--check: %s", err.msg);
        goto done;
    }
    if (xf_cli_random_inputs(before, (uint64_t)o->seed, &inputs, &err) != XF_OK) {
        rc = xf_cli_error("--check: %s", err.msg);
        goto done;
    }
    out_before = calloc((size_t)n_out + 1, sizeof *out_before);
    out_after = calloc((size_t)n_out + 1, sizeof *out_after);
    if (!out_before || !out_after) {
        rc = xf_cli_error("--check: out of memory");
        goto done;
    }
    if (xf_session_run(s_before, inputs, out_before, &err) != XF_OK ||
        xf_session_run(s_after, inputs, out_after, &err) != XF_OK) {
        rc = xf_cli_error("--check: %s", err.msg);
        goto done;
    }
    int bad = 0;
    for (int k = 0; k < n_out; k++) {
        double max_abs = 0, max_rel = 0;
        bool ok = false;
        char shape[128];
        const xf_value *v = &before->values[before->outputs[k]];
        if (xf_tensor_compare(out_after[k], out_before[k], o->atol, o->rtol, &max_abs, &max_rel, &ok, &err) !=
            XF_OK) {
            char sa[128], sb[128];
            xf_cli_error("--check: output '%s': optimized gives %s %s, original %s %s", v->name,
                         xf_dtype_name(out_after[k]->dtype), xf_shape_str(&out_after[k]->shape, sa, sizeof sa),
                         xf_dtype_name(out_before[k]->dtype), xf_shape_str(&out_before[k]->shape, sb, sizeof sb));
            bad++;
            continue;
        }
        xf_cli_info("check: output '%s' %s: max abs error %.3g, max rel error %.3g  %s\n", v->name,
                    xf_shape_str(&out_before[k]->shape, shape, sizeof shape), max_abs, max_rel,
                    ok ? "ok" : "MISMATCH");
        bad += !ok;
    }
    if (bad)
        rc = xf_cli_error("--check: %d of %d outputs differ beyond atol %g + rtol %g; nothing written",
                          bad, n_out, o->atol, o->rtol);
    else
        rc = 0;
done:
    xf_cli_free_tensors(inputs, before->n_inputs);
    xf_cli_free_tensors(out_before, n_out);
    xf_cli_free_tensors(out_after, n_out);
    xf_session_free(s_before);
    xf_session_free(s_after);
    return rc;
}

int main(int argc, char **argv)
{
    options o;
    int rc = parse_args(argc, argv, &o);
    if (rc)
        return rc;
    xf_cli_init("xflowc", o.verbosity);
    if (xf_cli_same_file(o.in, o.out))
        return xf_cli_error("%s: the output would overwrite the input model; choose another -o", o.out);

    double t0 = xf_cli_now();
    xf_error err;
    xf_model *m = NULL;
    xf_load_options lo = {.input_shapes = o.shapes, .n_input_shapes = o.n_shapes};
    if (xf_model_load(o.in, &lo, &m, &err) != XF_OK)
        return xf_cli_error("%s", err.msg);
    int64_t opset = xf_model_opset(m);
    xf_graph *original = xf_graph_clone(m->graph);
    if (!original) {
        xf_model_free(m);
        return xf_cli_error("out of memory");
    }
    double t_load = xf_cli_now();

    xf_canon_stats st = {0};
    if (xf_canonicalize(m->graph, opset, xf_runtime_eval_node, &st, &err) != XF_OK ||
        xf_graph_validate(m->graph, &err) != XF_OK) {
        rc = xf_cli_error("%s: while optimizing: %s", o.in, err.msg);
        goto done;
    }
    double t_opt = xf_cli_now();

    xf_cli_info("xflowc: %s: %d nodes -> %d nodes (%.3f s load, %.3f s optimize)\n", o.in,
                original->n_nodes, m->graph->n_nodes, t_load - t0, t_opt - t_load);
    xf_cli_info("canonicalize: %d constants folded, %d BatchNormalization folded into Conv, "
                "%d Identity/Dropout removed, %d dead nodes and %d unused initializers removed\n",
                st.folded_constants, st.folded_batchnorms, st.removed_identity, st.removed_dead,
                st.removed_initializers);
    if (xf_cli_verbosity() >= 1)
        xf_cli_print_op_changes(stdout, original, m->graph);

    if (o.check && (rc = check_models(&o, original, m->graph, opset)) != 0)
        goto done;

    xf_save_options so = {.external_data = o.external, .external_threshold = 1024};
    if (xf_model_save(m, o.out, &so, &err) != XF_OK) {
        rc = xf_cli_error("%s", err.msg);
        goto done;
    }
    xf_cli_info("wrote %s (%.3f s total)\n", o.out, xf_cli_now() - t0);
    rc = 0;
done:
    xf_graph_free(original);
    xf_model_free(m);
    for (int i = 0; i < o.n_shapes; i++)
        free(o.shape_names[i]);
    return rc;
}
