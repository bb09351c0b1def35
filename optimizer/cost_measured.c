/* Measured cost models: each distinct (op, attributes, input and output
 * shapes, which inputs are constants) is timed once on a runtime backend,
 * as a one-node graph on random data (the fastest of repeated runs after
 * warm-up), and kept in memory and in a cache file per backend, so that a
 * model is measured once per machine, not once per search.
 *
 * The cache file is plain text, one "KEY SECONDS" line per op, KEY being
 * the 64-bit hash of the op's description in hex (the op by its domain and
 * name, so that a key outlives the order of core/ops.def).  Ops the backend cannot
 * run (opaque nodes, ops it lacks) are priced by the analytic model of the
 * same kind of device and not written to the file. */
#include "cost_internal.h"
#include "xf_runtime.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MEASURE_MAX_RUNS 50
#define MEASURE_SECONDS 0.02

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static void put(uint64_t *h, uint64_t v) { *h = mix64(*h ^ v) + 0x9e3779b97f4a7c15ULL; }

static void put_ints(uint64_t *h, const int64_t *v, int n)
{
    put(h, (uint64_t)n);
    for (int i = 0; i < n; i++)
        put(h, (uint64_t)v[i]);
}

/* A string's bytes and its end: op names, which keep a key when ops are
 * added to the list and ids move. */
static void put_str(uint64_t *h, const char *s)
{
    for (; *s; s++)
        put(h, (unsigned char)*s);
    put(h, 0x5a);
}

static void put_value(uint64_t *h, const xf_graph *g, int v, const bool *konst)
{
    if (v < 0) {
        put(h, 0xab5e47);
        return;
    }
    put(h, (uint64_t)g->values[v].dtype);
    put(h, (uint64_t)(int64_t)g->values[v].shape.ndim);
    put_ints(h, g->values[v].shape.dims, g->values[v].shape.ndim > 0 ? g->values[v].shape.ndim : 0);
    put(h, konst[v]);
}

/* The key of node i: everything its run time depends on. */
static uint64_t node_key(const xf_graph *g, int i, const bool *konst)
{
    const xf_node *n = &g->nodes[i];
    const xf_attrs *a = &n->attrs;
    uint64_t h = 0x5eed;
    put_str(&h, xf_op_domain(n->op));
    put_str(&h, xf_op_name(n->op));
    put(&h, (uint64_t)a->n_spatial);
    put_ints(&h, a->kernel, XF_MAX_SPATIAL);
    put_ints(&h, a->strides, XF_MAX_SPATIAL);
    put_ints(&h, a->pads, 2 * XF_MAX_SPATIAL);
    put_ints(&h, a->dilations, XF_MAX_SPATIAL);
    put(&h, (uint64_t)a->group);
    put(&h, (uint64_t)a->auto_pad);
    put(&h, (uint64_t)a->activation);
    put(&h, (uint64_t)a->axis);
    put_ints(&h, a->perm, a->n_perm);
    put_ints(&h, a->axes, a->n_axes);
    put_ints(&h, a->split, a->n_split);
    put(&h, (uint64_t)(a->trans_a * 2 + a->trans_b));
    put(&h, (uint64_t)(a->ceil_mode * 2 + a->count_include_pad));
    put(&h, (uint64_t)a->keepdims);
    for (int k = 0; k < n->n_inputs; k++)
        put_value(&h, g, n->inputs[k], konst);
    for (int k = 0; k < n->n_outputs; k++)
        put_value(&h, g, n->outputs[k], konst);
    return h ? h : 1; /* 0 marks an empty slot */
}

/* ------------------------------------------------------------ table */

static cost_entry *slot_of(const xf_cost_model *m, uint64_t key)
{
    size_t i = (size_t)(key & (m->cap - 1));
    while (m->table[i].key && m->table[i].key != key)
        i = (i + 1) & (m->cap - 1);
    return &m->table[i];
}

static bool table_put(xf_cost_model *m, uint64_t key, double seconds)
{
    if (2 * (m->count + 1) > m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 1024;
        cost_entry *old = m->table;
        size_t old_cap = m->cap;
        m->table = calloc(cap, sizeof *m->table);
        if (!m->table) {
            m->table = old;
            return false;
        }
        m->cap = cap;
        for (size_t i = 0; i < old_cap; i++)
            if (old[i].key)
                *slot_of(m, old[i].key) = old[i];
        free(old);
    }
    cost_entry *e = slot_of(m, key);
    m->count += e->key == 0;
    *e = (cost_entry){key, seconds};
    return true;
}

/* ------------------------------------------------------------ cache file */

/* cost-BACKEND.txt, or cost-BACKEND-DEVICE.txt where the backend names its
 * device (DEVICE with '_' for what a file name should not hold). */
static char *default_cache_path(const char *backend, const char *device)
{
    char name[300];
    int len = snprintf(name, sizeof name, "cost-%s%s", backend, device[0] ? "-" : "");
    if (len < 0 || len >= (int)sizeof name - 5)
        return NULL;
    for (const char *p = device; *p && len < (int)sizeof name - 5; p++)
        name[len++] = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                              *p == '.' || *p == '-' ? *p : '_';
    snprintf(name + len, sizeof name - (size_t)len, ".txt");
    return xf_cache_file_path(name);
}

static void cache_load(xf_cost_model *m)
{
    FILE *f = fopen(m->cache_path, "r");
    if (!f)
        return;
    char line[256];
    int lineno = 0, bad = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        uint64_t key;
        double s;
        if (line[0] == '#' || line[0] == '\n')
            continue;
        if (sscanf(line, "%" SCNx64 " %lf", &key, &s) != 2 || !key || !(s >= 0)) {
            bad++;
            continue;
        }
        table_put(m, key, s);
    }
    fclose(f);
    if (bad)
        xf_log(XF_LOG_WARN, "%s: %d malformed lines ignored", m->cache_path, bad);
}

/* Writes every measured entry, atomically (temporary file + rename). */
static void cache_save(const xf_cost_model *m)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp%ld", m->cache_path, (long)getpid());
    FILE *f = xf_make_parent_dirs(m->cache_path) == 0 ? fopen(tmp, "w") : NULL;
    if (!f) {
        xf_log(XF_LOG_WARN, "%s: cannot write the cost cache: %s", m->cache_path, strerror(errno));
        return;
    }
    fprintf(f, "# xflow measured op costs on backend %s: key seconds\n", m->backend);
    for (size_t i = 0; i < m->cap; i++)
        if (m->table[i].key && m->table[i].seconds >= 0)
            fprintf(f, "%016" PRIx64 " %.17g\n", m->table[i].key, m->table[i].seconds);
    if (fclose(f) != 0 || rename(tmp, m->cache_path) != 0) {
        xf_log(XF_LOG_WARN, "%s: cannot write the cost cache: %s", m->cache_path, strerror(errno));
        remove(tmp);
    }
}

/* ------------------------------------------------------------ model */

xf_status cost_measured_init(xf_cost_model *m, const char *name, const xf_cost_options *opt, xf_error *err)
{
    const char *backend;
    if (!strcmp(name, "cpu"))
        backend = xf_backend_find("cpu") ? "cpu" : "cpu_ref"; /* the fastest CPU backend present */
    else if (!strcmp(name, "cuda"))
        backend = "cuda";
    else if (!strncmp(name, "measured:", 9))
        backend = name + 9;
    else
        return xf_error_set(err, XF_ERR_INVALID, "unknown cost model '%s' (known: %s)", name, xf_cost_model_names());
    const xf_backend *b = xf_backend_find(backend);
    if (!b && !strcmp(backend, "cuda"))
        return xf_error_set(err, XF_ERR_UNSUPPORTED, "cost model '%s': this build has no CUDA backend "
                            "(use --cost analytic:h100 or another analytic model)", name);
    if (!b)
        return xf_error_set(err, XF_ERR_INVALID, "cost model '%s': this build has no backend '%s'", name, backend);
    /* A backend whose device is absent says so now, not at the first op. */
    void *ctx = NULL;
    if (b->context_create && b->context_create(NULL, &ctx, err) != XF_OK) {
        xf_error_prefix(err, "cost model '%s'", name);
        return err ? err->status : XF_ERR_UNSUPPORTED;
    }
    char device[200] = "";
    if (b->device_name && ctx)
        b->device_name(ctx, device, sizeof device);
    if (b->context_free)
        b->context_free(ctx);
    m->backend = b->name;
    m->fallback = cost_device_find(b->host_memory ? "cpu" : "h100");
    m->warmup = opt && opt->warmup > 0 ? opt->warmup : 1;
    m->repeats = opt && opt->repeats > 0 ? opt->repeats : 5;
    if (opt && opt->cache_path)
        m->cache_path = opt->cache_path[0] ? strdup(opt->cache_path) : NULL;
    else
        m->cache_path = default_cache_path(m->backend, device);
    if (m->cache_path)
        cache_load(m);
    snprintf(m->describe, sizeof m->describe, "measured on backend %s%s%s%s (fastest of at least %d runs after %d "
             "warm-up), cache %s", m->backend, device[0] ? " (" : "", device, device[0] ? ")" : "", m->repeats,
             m->warmup, m->cache_path ? m->cache_path : "none");
    return XF_OK;
}

void cost_measured_fini(xf_cost_model *m)
{
    if (m->cache_path && m->dirty)
        cache_save(m);
    free(m->cache_path);
    free(m->table);
}

/* Times node i alone: constants become random initializers, other inputs
 * random graph inputs. */
static xf_status time_node(const xf_cost_model *m, const xf_graph *g, int i, const bool *konst, int64_t opset,
                           double *seconds, xf_error *err)
{
    const xf_node *n = &g->nodes[i];
    xf_graph *h = xf_graph_create("cost");
    xf_tensor **inputs = calloc((size_t)n->n_inputs + 1, sizeof *inputs);
    int *in = malloc(sizeof(int) * (size_t)(n->n_inputs + 1)), *out = malloc(sizeof(int) * (size_t)(n->n_outputs + 1));
    xf_session *s = NULL;
    int n_fed = 0;
    xf_status st = XF_OK;
    if (!h || !inputs || !in || !out) {
        st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (int k = 0; k < n->n_inputs && st == XF_OK; k++) {
        int v = n->inputs[k];
        in[k] = -1;
        if (v < 0)
            continue;
        const xf_value *val = &g->values[v];
        xf_tensor *t = xf_tensor_random(val->dtype, &val->shape, 1000u + (unsigned)k);
        if (!t) {
            st = xf_error_set(err, XF_ERR_UNSUPPORTED, "cannot make a %s input", xf_dtype_name(val->dtype));
            break;
        }
        if (konst[v]) {
            in[k] = xf_graph_add_initializer(h, NULL, t);
            xf_tensor_release(t);
        } else {
            in[k] = xf_graph_add_input(h, NULL, val->dtype, &val->shape);
            inputs[n_fed++] = t;
        }
    }
    for (int k = 0; k < n->n_outputs && st == XF_OK; k++)
        out[k] = n->outputs[k] < 0 ? -1 : xf_graph_add_value(h, NULL, XF_DT_UNDEFINED, NULL);
    if (st != XF_OK)
        goto done;
    int ni = xf_graph_add_node(h, n->op, n->name, n->n_inputs, in, n->n_outputs, out);
    if (ni < 0) {
        st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        goto done;
    }
    xf_tensor_release(h->nodes[ni].attrs.value);
    h->nodes[ni].attrs = n->attrs;
    xf_tensor_retain(n->attrs.value);
    for (int k = 0; k < n->n_outputs; k++)
        if (out[k] >= 0)
            xf_graph_add_output(h, out[k]);
    /* The fastest of the timed runs: other processes only ever add time,
     * so the minimum is the estimate least disturbed by them.  Short ops
     * get more runs (up to MEASURE_MAX_RUNS within MEASURE_SECONDS), since
     * one preempted thread of a parallel kernel can cost a whole
     * scheduler time slice. */
    double t = 0, best = 0, spent = 0;
    if ((st = xf_session_create(h, opset, m->backend, NULL, &s, err)) == XF_OK)
        st = xf_session_profile(s, inputs, m->warmup, 1, &best, err);
    spent = best;
    for (int r = 1; st == XF_OK && r < MEASURE_MAX_RUNS && (r < m->repeats || spent < MEASURE_SECONDS); r++) {
        if ((st = xf_session_profile(s, inputs, 0, 1, &t, err)) == XF_OK && t < best)
            best = t;
        spent += t;
    }
    if (st == XF_OK)
        *seconds = best;
done:
    xf_session_free(s);
    for (int k = 0; k < n_fed; k++)
        xf_tensor_release(inputs[k]);
    free(inputs);
    free(in);
    free(out);
    xf_graph_free(h);
    return st;
}

xf_status cost_measured_node(xf_cost_model *m, const xf_graph *g, int i, const bool *konst, int64_t opset,
                             double *seconds, xf_error *err)
{
    if (g->nodes[i].op == XF_OP_OPAQUE) {
        *seconds = cost_analytic_node(m->fallback, g, i);
        return XF_OK;
    }
    if (cost_node_is_view(g, i)) {
        *seconds = 0;
        return XF_OK;
    }
    uint64_t key = node_key(g, i, konst);
    if (m->cap) {
        cost_entry *e = slot_of(m, key);
        if (e->key == key) {
            m->cache_hits++;
            *seconds = e->seconds < 0 ? -e->seconds : e->seconds;
            return XF_OK;
        }
    }
    double t = 0;
    xf_error why = {0};
    xf_status st = time_node(m, g, i, konst, opset, &t, &why);
    /* out of memory, or the device failed: no later figure could be trusted */
    if (st == XF_ERR_NOMEM || st == XF_ERR_DEVICE)
        return xf_error_set(err, st, "%s", why.msg);
    m->measured++;
    xf_log(XF_LOG_DEBUG, "cost %s: %s '%s': %s %.4g ms", m->name, xf_op_name(g->nodes[i].op), g->nodes[i].name,
           st == XF_OK ? "measured" : why.msg, t * 1e3);
    if (st != XF_OK) {
        /* Not runnable here: priced analytically, remembered (negated, so
         * the cache file leaves it out) so that it is not retried. */
        t = cost_analytic_node(m->fallback, g, i);
        if (!table_put(m, key, t > 0 ? -t : -1e-12))
            return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    } else {
        if (!table_put(m, key, t))
            return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        m->dirty = true;
    }
    *seconds = t;
    return XF_OK;
}
