/* ONNX's standard ops on tensors of strings, which the host backends run
 * where the session holds the strings (beside ONNX-ML's and the string
 * ops).  The ops that only move, select or compare elements (Reshape,
 * Gather, Concat, Where, Equal, Unique, Pad, ...) run on numbers: the
 * strings of all string inputs, and "" as 0, are numbered (by position, or
 * for Equal and Unique in their byte order, equal strings alike), the
 * node runs on cpu_ref over the numbers, and its string outputs are read
 * back by number (so equal strings compare equal, Unique sorts as ONNX
 * Runtime does, and Pad's default value is ""); outputs of one input's
 * strings share them (xf_strings_shared) rather than copy them.  Cast and CastLike
 * parse strings into numbers and write numbers as ONNX Runtime does (the
 * shortest "%g" that reads back the same; NaN, INF and -INF). */
#include "xf_rt_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

bool xf_rt_string_tensor_op(const xf_node *n)
{
    switch (n->op) {
    case XF_OP_IDENTITY: case XF_OP_RESHAPE: case XF_OP_FLATTEN: case XF_OP_SQUEEZE: case XF_OP_UNSQUEEZE:
    case XF_OP_TRANSPOSE: case XF_OP_SLICE: case XF_OP_GATHER: case XF_OP_GATHER_ELEMENTS: case XF_OP_GATHER_ND:
    case XF_OP_CONCAT: case XF_OP_SPLIT: case XF_OP_EXPAND: case XF_OP_TILE: case XF_OP_WHERE: case XF_OP_COMPRESS:
    case XF_OP_REVERSE_SEQUENCE: case XF_OP_DEPTH_TO_SPACE: case XF_OP_SPACE_TO_DEPTH: case XF_OP_PAD:
    case XF_OP_UNIQUE: case XF_OP_EQUAL: case XF_OP_SHAPE: case XF_OP_SIZE: case XF_OP_CAST: case XF_OP_CAST_LIKE:
        return true;
    case XF_OP_SCATTER: case XF_OP_SCATTER_ND: case XF_OP_SCATTER_ELEMENTS:
        return n->attrs.reduction == XF_REDUCE_NONE; /* no arithmetic on strings */
    default:
        return false;
    }
}

bool xf_rt_touches_strings(const xf_graph *g, int i)
{
    const xf_node *n = &g->nodes[i];
    if (n->op == XF_OP_OPAQUE || xf_rt_seq_node(n))
        return false;
    for (int k = 0; k < n->n_inputs + n->n_outputs; k++) {
        int v = k < n->n_inputs ? n->inputs[k] : n->outputs[k - n->n_inputs];
        if (v >= 0 && g->values[v].kind == XF_VK_TENSOR && g->values[v].dtype == XF_DT_STRING)
            return true;
    }
    return false;
}

/* Whether output k of n holds the numbers of strings (the data outputs;
 * not Unique's indices and counts, Equal's, Shape's or Size's). */
static bool numbered_output(const xf_node *n, int k)
{
    if (n->op == XF_OP_EQUAL || n->op == XF_OP_SHAPE || n->op == XF_OP_SIZE)
        return false;
    return n->op != XF_OP_UNIQUE || k == 0;
}



/* Whether input k of n is a data input (of the output's type): the others
 * (indices, pads, shapes, axes, conditions) take numbers. */
static bool data_input(const xf_node *n, int k)
{
    switch (n->op) {
    case XF_OP_CONCAT:
    case XF_OP_EQUAL: return true;
    case XF_OP_WHERE: return k >= 1;
    case XF_OP_PAD:
    case XF_OP_SCATTER:
    case XF_OP_SCATTER_ND:
    case XF_OP_SCATTER_ELEMENTS: return k == 0 || k == 2;
    default: return k == 0;
    }
}

/* Strings only at data inputs, and at all of them or none. */
static xf_status check_string_inputs(const xf_node *n, xf_tensor *const *in, xf_error *err)
{
    int strings = -1, numbers = -1;
    for (int k = 0; k < n->n_inputs; k++) {
        if (!in[k])
            continue;
        if (in[k]->dtype == XF_DT_STRING && !data_input(n, k))
            return xf_rt_bad_node(err, n, "input %d is strings; it takes numbers there", k);
        if (data_input(n, k))
            *(in[k]->dtype == XF_DT_STRING ? &strings : &numbers) = k;
    }
    if (strings >= 0 && numbers >= 0)
        return xf_rt_bad_node(err, n, "input %d is strings and input %d %s; they must be of one type", strings, numbers,
                              xf_dtype_name(in[numbers]->dtype));
    return XF_OK;
}

static xf_status oom(xf_error *err) { return xf_error_set(err, XF_ERR_NOMEM, "out of memory"); }

/* A tensor of strings copied from table by the int64 numbers of ids. */
static xf_tensor *strings_of(const xf_tensor *ids, char *const *table)
{
    xf_tensor *t = xf_tensor_create(XF_DT_STRING, &ids->shape);
    int64_t n = xf_tensor_numel(ids);
    const int64_t *id = ids->data;
    for (int64_t i = 0; t && i < n; i++)
        if (!(t->strings[i] = strdup(table[id[i]]))) {
            xf_tensor_release(t);
            t = NULL;
        }
    return t;
}

/* Runs n on cpu_ref over inputs in (NULL: omitted), outputs to out; or,
 * with view (not NULL), only infers its output's shape into *view, input
 * 0 (strings) standing as numbers of its shape. */
static xf_status run_on_numbers(const xf_node *n, xf_tensor *const *in, xf_tensor **out, xf_shape *view,
                                xf_error *err)
{
    xf_graph *g = xf_graph_create("strings");
    int *ids = malloc(sizeof *ids * (size_t)(n->n_inputs + n->n_outputs + 1));
    xf_status st = g && ids ? XF_OK : oom(err);
    int *outs = ids ? ids + n->n_inputs : NULL;
    const xf_shape unknown = {.ndim = -1};
    for (int k = 0; k < n->n_inputs && st == XF_OK; k++) {
        char name[32];
        snprintf(name, sizeof name, "in%d", k);
        ids[k] = !in[k]             ? -1
                 : view && k == 0 ? xf_graph_add_value(g, name, XF_DT_INT64, &in[k]->shape)
                                  : xf_graph_add_initializer(g, name, in[k]);
        if (in[k] && ids[k] < 0)
            st = oom(err);
    }
    for (int k = 0; k < n->n_outputs && st == XF_OK; k++) {
        char name[32];
        snprintf(name, sizeof name, "out%d", k);
        outs[k] = n->outputs[k] >= 0 ? xf_graph_add_value(g, name, XF_DT_UNDEFINED, &unknown) : -1;
        if (n->outputs[k] >= 0 && outs[k] < 0)
            st = oom(err);
    }
    if (st == XF_OK && xf_graph_copy_node(g, n, ids, outs) < 0)
        st = oom(err);
    if (st == XF_OK && view) {
        st = xf_node_infer_shape(g, 0, 0, NULL, err);
        *view = st == XF_OK ? g->values[outs[0]].shape : (xf_shape){.ndim = -1};
        if (st == XF_OK && xf_shape_numel(view) != xf_tensor_numel(in[0]))
            st = xf_rt_bad_node(err, n, "the shape of its output is not known");
    } else if (st == XF_OK) {
        st = xf_runtime_eval_node(g, 0, out, err);
    }
    free(ids);
    xf_graph_free(g);
    return st;
}

static xf_status run_numbered(const xf_node *n, xf_tensor *const *in, xf_tensor **out, xf_error *err)
{
    int64_t total = 1;
    for (int k = 0; k < n->n_inputs; k++)
        if (in[k] && in[k]->dtype == XF_DT_STRING)
            total += xf_tensor_numel(in[k]);
    char **table = malloc(sizeof *table * (size_t)total);
    xf_tensor **numbered = calloc((size_t)n->n_inputs + 1, sizeof *numbered);
    xf_tensor **res = calloc((size_t)n->n_outputs + 1, sizeof *res);
    xf_status st = table && numbered && res ? XF_OK : oom(err);
    /* Equal and Unique read the strings: numbers in byte order, equal
     * strings one number; the rest only move them: numbers by position */
    bool by_content = n->op == XF_OP_EQUAL || n->op == XF_OP_UNIQUE;
    int64_t m = 0;
    if (st == XF_OK) {
        table[m++] = "";
        for (int k = 0; k < n->n_inputs; k++)
            for (int64_t i = 0; in[k] && in[k]->dtype == XF_DT_STRING && i < xf_tensor_numel(in[k]); i++)
                table[m++] = (char *)xf_rt_str_at(in[k], i);
    }
    if (st == XF_OK && by_content) {
        qsort(table, (size_t)m, sizeof *table, xf_rt_cmp_strings);
        int64_t u = 0;
        for (int64_t i = 0; i < m; i++)
            if (u == 0 || strcmp(table[u - 1], table[i]) != 0)
                table[u++] = table[i];
        m = u;
    }
    int64_t at = 1; /* by position: the next input string's number */
    for (int k = 0; k < n->n_inputs && st == XF_OK; k++) {
        if (!in[k] || in[k]->dtype != XF_DT_STRING) {
            numbered[k] = xf_tensor_retain(in[k]);
            continue;
        }
        if (!(numbered[k] = xf_tensor_create_unset(XF_DT_INT64, &in[k]->shape))) {
            st = oom(err);
            break;
        }
        int64_t *id = numbered[k]->data;
        for (int64_t i = 0; i < xf_tensor_numel(in[k]); i++) {
            const char *key = xf_rt_str_at(in[k], i);
            char **hit = by_content ? bsearch(&key, table, (size_t)m, sizeof *table, xf_rt_cmp_strings) : NULL;
            id[i] = by_content ? hit - table : at++;
        }
    }
    if (st == XF_OK)
        st = run_on_numbers(n, numbered, res, NULL, err);
    /* numbers by position of one input's strings: the output shares them */
    int only = -1, count = 0;
    for (int k = 0; k < n->n_inputs; k++)
        if (in[k] && in[k]->dtype == XF_DT_STRING)
            only = k, count++;
    for (int k = 0; k < n->n_outputs; k++) {
        if (st == XF_OK && res[k] && numbered_output(n, k) && !by_content && count == 1) {
            int64_t *id = res[k]->data;
            for (int64_t i = 0; i < xf_tensor_numel(res[k]); i++)
                id[i]--; /* "" is -1, the input's strings from 0 */
            if (!(out[k] = xf_strings_shared(in[only], &res[k]->shape, id)))
                st = oom(err);
            xf_tensor_release(res[k]);
        } else if (st == XF_OK && res[k] && numbered_output(n, k)) {
            out[k] = strings_of(res[k], table);
            if (!out[k])
                st = oom(err);
            xf_tensor_release(res[k]);
        } else if (st == XF_OK) {
            out[k] = res[k];
        } else {
            xf_tensor_release(res[k]);
        }
    }
    for (int k = 0; numbered && k < n->n_inputs; k++)
        xf_tensor_release(numbered[k]);
    free(numbered);
    free(res);
    free(table);
    return st;
}

/* Writes element i of x (a number or bool) as ONNX Runtime does. */
static int format_number(const xf_tensor *x, int64_t i, char *buf, size_t len)
{
    if (xf_dtype_is_float(x->dtype)) {
        double v = xf_rt_load_f64(x->dtype, x->data, i);
        if (isnan(v))
            return snprintf(buf, len, "NaN");
        if (isinf(v))
            return snprintf(buf, len, v < 0 ? "-INF" : "INF");
        /* the fewest digits that read back as the same value */
        bool dbl = x->dtype == XF_DT_DOUBLE;
        int n = 0;
        for (int p = 1; p <= (dbl ? 17 : 9); p++) {
            n = snprintf(buf, len, "%.*g", p, v);
            if (dbl ? strtod(buf, NULL) == v : strtof(buf, NULL) == (float)v)
                break;
        }
        return n;
    }
    if (x->dtype == XF_DT_UINT64)
        return snprintf(buf, len, "%" PRIu64, ((const uint64_t *)x->data)[i]);
    return snprintf(buf, len, "%" PRId64, xf_rt_load_i64(x->dtype, x->data, i));
}

/* Reads s as a number of type `to` into element i of y, as ONNX Runtime
 * does (its leading number, in strtod's or strtoll's forms, NaN and INF in
 * any case); false when it does not start with one, or overflows an
 * integer. */
static bool parse_number(const char *s, xf_dtype to, xf_tensor *y, int64_t i)
{
    char *end;
    errno = 0;
    if (xf_dtype_is_float(to)) {
        double v = strtod(s, &end);
        if (end == s)
            return false;
        xf_rt_store_f64(to, y->data, i, v);
        return true;
    }
    if (to == XF_DT_BOOL) {
        double v = strtod(s, &end);
        if (end == s)
            return false;
        ((uint8_t *)y->data)[i] = v != 0;
        return true;
    }
    if (to == XF_DT_UINT64) {
        unsigned long long v = strtoull(s, &end, 10);
        if (end == s || errno)
            return false;
        ((uint64_t *)y->data)[i] = v;
        return true;
    }
    long long v = strtoll(s, &end, 10);
    if (end == s || errno)
        return false;
    xf_rt_store_i64(to, y->data, i, v);
    return true;
}

static xf_status run_cast(const xf_node *n, const xf_tensor *x, xf_dtype to, xf_tensor **out, xf_error *err)
{
    int64_t numel = xf_tensor_numel(x);
    if (x->dtype == XF_DT_STRING && to == XF_DT_STRING) {
        out[0] = xf_tensor_retain((xf_tensor *)x);
        return XF_OK;
    }
    bool known = to == XF_DT_STRING ? xf_dtype_is_float(x->dtype) || xf_rt_is_integral(x->dtype) ||
                                          x->dtype == XF_DT_BOOL
                                    : xf_dtype_is_float(to) || xf_rt_is_integral(to) || to == XF_DT_BOOL;
    if (!known || (to != XF_DT_STRING && x->dtype != XF_DT_STRING))
        return xf_rt_bad_node(err, n, "casts %s to %s; between strings xflow casts floating-point, integer and "
                              "bool tensors", xf_dtype_name(x->dtype), xf_dtype_name(to));
    xf_tensor *y = xf_tensor_create(to, &x->shape);
    if (!y)
        return oom(err);
    for (int64_t i = 0; i < numel; i++) {
        if (to != XF_DT_STRING) {
            if (parse_number(xf_rt_str_at(x, i), to, y, i))
                continue;
            xf_tensor_release(y);
            return xf_rt_bad_node(err, n, "element %" PRId64 " (\"%.40s\") does not start with a %s number", i,
                                  xf_rt_str_at(x, i), xf_dtype_name(to));
        }
        char buf[64];
        format_number(x, i, buf, sizeof buf);
        if (!(y->strings[i] = strdup(buf))) {
            xf_tensor_release(y);
            return oom(err);
        }
    }
    out[0] = y;
    return XF_OK;
}

xf_status xf_rt_string_tensor_run(const xf_node *n, xf_tensor *const *in, xf_tensor **out, xf_error *err)
{
    for (int k = 0; k < n->n_outputs; k++)
        out[k] = NULL;
    if (!xf_rt_string_tensor_op(n))
        return xf_rt_bad_node(err, n, "reads or writes strings; of the standard ops xflow runs on strings only "
                              "those that move, select or compare elements, and Cast");
    for (int k = 0; k < n->n_inputs; k++)
        if (in[k] && xf_tensor_is_container(in[k]))
            return xf_rt_bad_node(err, n, "input %d is a %s, not a tensor", k, xf_kind_name(xf_tensor_kind(in[k])));
    if (n->op == XF_OP_CAST || n->op == XF_OP_CAST_LIKE)
        return run_cast(n, in[0], n->op == XF_OP_CAST ? n->attrs.to : in[1]->dtype, out, err);
    xf_status st = check_string_inputs(n, in, err);
    if (st != XF_OK)
        return st;
    if (xf_rt_view_op(n) && in[0]->dtype == XF_DT_STRING) { /* the same strings in another shape */
        xf_shape shape;
        st = run_on_numbers(n, in, out, &shape, err);
        if (st == XF_OK && !(out[0] = xf_strings_shared(in[0], &shape, NULL)))
            st = oom(err);
        return st;
    }
    return run_numbered(n, in, out, err);
}
