/* Cost models: the estimated time of a graph as the sum of its nodes' times.
 *
 * Pricing follows how the target runtime executes a graph:
 *  - a node computing only from constants is free: canonicalization folds
 *    it before the graph runs (this is how a rewrite's new weights, e.g. a
 *    concatenation of kernels, cost nothing); but ops it never folds
 *    (QuantizeLinear, DequantizeLinear of a weight) run, and cost;
 *  - a Conv with its bias and a fused activation is one kernel (cuDNN's
 *    ConvBiasActivation, oneDNN post-ops), so fusing a Relu into the Conv
 *    saves the Relu's launch and its pass over memory;
 *  - views cost nothing: Reshape, Flatten, Squeeze, Unsqueeze, Identity,
 *    inference Dropout, and a Split whose pieces are contiguous (every dim before
 *    the axis is 1), which runtimes express as offsets into one buffer.
 * Analytic models price a kernel by a roofline, computed afresh each time
 * (a handful of multiplications, cheaper than a cache lookup); measured
 * models time each distinct (op, attributes, shapes) once on a runtime
 * backend and cache it (cost_measured.c). */
#include "cost_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* Device figures.  GPUs: vendor peak figures for dense fp32 inputs (Conv and
 * MatMul run on tensor cores in TF32 where the device has them, as cuDNN
 * and cuBLAS do by default), HBM bandwidth, and a kernel launch overhead of
 * 4 us (launch plus the framework's dispatch, a typical figure for cuDNN
 * graphs); for float16/bfloat16, the dense fp16 tensor-core peak and twice
 * the fp32 vector rate.  cpu: this 2-core x86 machine (Xeon with AVX-512,
 * 2 FMA ports, 2.3 GHz: 2 x 2.3e9 x 64 = 294 GFLOP/s peak; taken at 200
 * GFLOP/s for GEMM-like kernels and 100 GFLOP/s for elementwise code), 24
 * GB/s measured by memcpy of 128 MiB on one core, taken at 20 GB/s, and 2
 * us per op dispatch; 16-bit floats no faster. */
static const cost_device devices[] = {
    {"h100", "NVIDIA H100 SXM", 494e12, 67e12, 3.35e12, 4e-6, 989e12, 134e12},
    {"h200", "NVIDIA H200 SXM", 494e12, 67e12, 4.8e12, 4e-6, 989e12, 134e12},
    {"a100", "NVIDIA A100 SXM 80GB", 156e12, 19.5e12, 2.039e12, 4e-6, 312e12, 39e12},
    {"v100", "NVIDIA V100 SXM2", 15.7e12, 15.7e12, 0.9e12, 4e-6, 125e12, 31.4e12},
    {"cpu", "this machine's CPU (2-core x86, AVX-512)", 200e9, 100e9, 20e9, 2e-6, 0, 0},
};

const char *xf_cost_model_names(void)
{
    return "analytic:h100, analytic:h200, analytic:a100, analytic:v100, analytic:cpu, cpu, cuda, measured:BACKEND";
}

/* The default is the analytic model of this machine's CPU: deterministic,
 * instant, and with no measurement step that would make the first run on a
 * model take longer than the search itself (the measured `cpu` model is one
 * flag away and caches its measurements). */
const char *xf_cost_default_name(void) { return "analytic:cpu"; }

static size_t value_bytes(const xf_graph *g, int v)
{
    if (v < 0)
        return 0;
    int64_t n = xf_shape_numel(&g->values[v].shape);
    size_t es = xf_dtype_size(g->values[v].dtype);
    return n > 0 ? (size_t)n * (es ? es : 4) : 0;
}

static int64_t numel_of(const xf_graph *g, int v)
{
    int64_t n = v >= 0 ? xf_shape_numel(&g->values[v].shape) : 0;
    return n > 0 ? n : 0;
}

bool cost_node_is_view(const xf_graph *g, int i)
{
    const xf_node *n = &g->nodes[i];
    switch (n->op) {
    case XF_OP_RESHAPE:
    case XF_OP_FLATTEN:
    case XF_OP_SQUEEZE:
    case XF_OP_UNSQUEEZE:
    case XF_OP_IDENTITY:
        return true;
    case XF_OP_DROPOUT: /* one that trains draws and scales */
        return !xf_dropout_trains(g, n);
    case XF_OP_SPLIT: {
        const xf_shape *s = &g->values[n->inputs[0]].shape;
        if (s->ndim < 1)
            return false;
        int64_t axis = n->attrs.axis < 0 ? n->attrs.axis + s->ndim : n->attrs.axis;
        for (int d = 0; d < axis && d < s->ndim; d++)
            if (s->dims[d] != 1)
                return false;
        return true;
    }
    default:
        return false;
    }
}

/* Floating-point operations of node i (multiply-add = 2). */
static double node_flops(const xf_graph *g, int i)
{
    const xf_node *n = &g->nodes[i];
    int64_t out = n->n_outputs > 0 ? numel_of(g, n->outputs[0]) : 0;
    int64_t in = n->n_inputs > 0 ? numel_of(g, n->inputs[0]) : 0;
    switch (n->op) {
    case XF_OP_CONV:
    case XF_OP_CONV_INTEGER:
    case XF_OP_QLINEAR_CONV: {
        const xf_shape *w = &g->values[n->inputs[n->op == XF_OP_QLINEAR_CONV ? 3 : 1]].shape;
        double per_out = 1;
        for (int d = 1; d < w->ndim; d++)
            per_out *= (double)w->dims[d];
        return 2.0 * (double)out * per_out + (double)out; /* + bias/activation */
    }
    case XF_OP_CONV_TRANSPOSE: { /* each input element meets M/group x kernel weights */
        const xf_shape *w = &g->values[n->inputs[1]].shape;
        double per_in = 1;
        for (int d = 1; d < w->ndim; d++)
            per_in *= (double)w->dims[d];
        return 2.0 * (double)in * per_in + (double)out;
    }
    case XF_OP_MATMUL:
    case XF_OP_MATMUL_INTEGER:
    case XF_OP_QLINEAR_MATMUL: {
        const xf_shape *a = &g->values[n->inputs[0]].shape;
        return 2.0 * (double)out * (double)(a->ndim > 0 ? a->dims[a->ndim - 1] : 1);
    }
    case XF_OP_GEMM: {
        const xf_shape *a = &g->values[n->inputs[0]].shape;
        int64_t k = a->ndim == 2 ? a->dims[n->attrs.trans_a ? 0 : 1] : 1;
        return 2.0 * (double)out * (double)k + (double)out;
    }
    case XF_OP_MAX_POOL:
    case XF_OP_AVERAGE_POOL: {
        double k = 1;
        for (int d = 0; d < n->attrs.n_spatial; d++)
            k *= (double)(n->attrs.kernel[d] > 0 ? n->attrs.kernel[d] : 1);
        return (double)out * k;
    }
    case XF_OP_ATTENTION: { /* Q K' and P V over the T keys of each query row, and the softmax */
        const xf_shape *q = &g->values[n->inputs[0]].shape, *k = &g->values[n->inputs[1]].shape;
        if (q->ndim < 3 || k->ndim != q->ndim)
            return (double)out;
        double rows = (double)q->dims[0] * (double)q->dims[1] *
                      (double)(q->ndim == 4 ? q->dims[2] : n->attrs.attn.num_heads);
        double t = (double)k->dims[k->ndim - 2];
        if (n->n_inputs > 4 && n->inputs[4] >= 0 && g->values[n->inputs[4]].shape.ndim == 4)
            t += (double)g->values[n->inputs[4]].shape.dims[2];
        return 2.0 * (double)(in + out) * t + 5.0 * rows * t;
    }
    case XF_OP_CAUSAL_CONV_WITH_STATE: { /* k multiply-adds per output, the bias, the SiLU's sigmoid */
        const xf_shape *w = &g->values[n->inputs[1]].shape;
        double k = w->ndim == 3 ? (double)w->dims[2] : 1;
        return (2.0 * k + 1.0 + (n->attrs.attn.conv_silu ? 5.0 : 0.0)) * (double)out;
    }
    case XF_OP_LINEAR_ATTENTION: { /* per token, each key/value head's d_k x d_v state: the update k v'
                                    * (2), the decay (1) and the delta's S' k (2); each query head's S' q (2) */
        const xf_shape *q = &g->values[n->inputs[0]].shape, *v = &g->values[n->inputs[2]].shape;
        const xf_attn_attrs *t = &n->attrs.attn;
        if (q->ndim != 3 || v->ndim != 3 || t->num_heads < 1 || t->kv_num_heads < 1)
            return (double)out;
        double tokens = (double)q->dims[0] * (double)q->dims[1];
        double cells = (double)(q->dims[2] / t->num_heads) * (double)(v->dims[2] / t->kv_num_heads);
        double per_kv = 2.0 + (t->linear_rule & XF_LINEAR_GATED ? 1.0 : 0.0) +
                        (t->linear_rule & XF_LINEAR_DELTA ? 2.0 : 0.0);
        return tokens * cells * (per_kv * (double)t->kv_num_heads + 2.0 * (double)t->num_heads);
    }
    case XF_OP_QUANTIZE_LINEAR: /* a division, a rounding, an addition and a clamp per element */
        return 4.0 * (double)out;
    case XF_OP_DEQUANTIZE_LINEAR: /* a subtraction and a multiplication */
        return 2.0 * (double)out;
    case XF_OP_SIGMOID:
    case XF_OP_TANH:
    case XF_OP_EXP:
    case XF_OP_LOG:
    case XF_OP_ERF:
    case XF_OP_SOFTMAX:
    case XF_OP_LOG_SOFTMAX:
    case XF_OP_LAYER_NORM:
    case XF_OP_RMS_NORM:
        return 5.0 * (double)(out > in ? out : in);
    default:
        return (double)(out > in ? out : in);
    }
}

static bool is_matrix_op(xf_op op)
{
    return op == XF_OP_CONV || op == XF_OP_MATMUL || op == XF_OP_GEMM || op == XF_OP_CONV_TRANSPOSE ||
           op == XF_OP_CONV_INTEGER || op == XF_OP_QLINEAR_CONV || op == XF_OP_MATMUL_INTEGER ||
           op == XF_OP_QLINEAR_MATMUL || op == XF_OP_ATTENTION;
}

double cost_analytic_node(const cost_device *d, const xf_graph *g, int i)
{
    const xf_node *n = &g->nodes[i];
    if (n->op != XF_OP_OPAQUE && cost_node_is_view(g, i))
        return 0;
    double bytes = 0;
    for (int k = 0; k < n->n_inputs; k++)
        bytes += (double)value_bytes(g, n->inputs[k]);
    for (int k = 0; k < n->n_outputs; k++)
        bytes += (double)value_bytes(g, n->outputs[k]);
    xf_dtype out = n->n_outputs > 0 && n->outputs[0] >= 0 ? g->values[n->outputs[0]].dtype : XF_DT_UNDEFINED;
    bool half = xf_dtype_is_half(out) && d->half_matrix_flops > 0;
    double rate = is_matrix_op(n->op) ? (half ? d->half_matrix_flops : d->matrix_flops)
                                      : (half ? d->half_vector_flops : d->vector_flops);
    double compute = n->op == XF_OP_OPAQUE ? 0 : node_flops(g, i) / rate;
    double memory = bytes / d->bandwidth;
    return d->launch + (compute > memory ? compute : memory);
}

/* ------------------------------------------------------------ models */

static bool name_is(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
            return false;
    return !*a && !*b;
}

const cost_device *cost_device_find(const char *name)
{
    for (size_t i = 0; i < sizeof devices / sizeof devices[0]; i++)
        if (name_is(name, devices[i].name))
            return &devices[i];
    return NULL;
}

xf_status xf_cost_model_create(const char *name, const xf_cost_options *opt, xf_cost_model **out, xf_error *err)
{
    *out = NULL;
    if (!name || !strcmp(name, "default"))
        name = xf_cost_default_name();
    xf_cost_model *m = calloc(1, sizeof *m);
    if (!m)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    snprintf(m->name, sizeof m->name, "%s", name);
    if (!strncmp(name, "analytic:", 9)) {
        m->device = cost_device_find(name + 9);
        if (!m->device) {
            free(m);
            return xf_error_set(err, XF_ERR_INVALID, "unknown cost model '%s' (known: %s)", name,
                                xf_cost_model_names());
        }
        for (char *c = m->name + 9; *c; c++)
            *c = (char)tolower((unsigned char)*c);
        snprintf(m->describe, sizeof m->describe,
                 "analytic roofline of %s: %.4g TFLOP/s matrix, %.4g TFLOP/s vector, %.4g GB/s, %.3g us per kernel",
                 m->device->title, m->device->matrix_flops / 1e12, m->device->vector_flops / 1e12,
                 m->device->bandwidth / 1e9, m->device->launch * 1e6);
        *out = m;
        return XF_OK;
    }
    xf_status st = cost_measured_init(m, name, opt, err);
    if (st != XF_OK) {
        free(m);
        return st;
    }
    *out = m;
    return XF_OK;
}

void xf_cost_model_free(xf_cost_model *m)
{
    if (!m)
        return;
    cost_measured_fini(m);
    free(m);
}

const char *xf_cost_model_name(const xf_cost_model *m) { return m->name; }
const char *xf_cost_model_describe(const xf_cost_model *m) { return m->describe; }

void xf_cost_model_stats(const xf_cost_model *m, long *measured, long *cached)
{
    *measured = m->measured;
    *cached = m->cache_hits;
}

bool opt_node_is_folded(const xf_graph *g, int i, const bool *konst)
{
    const xf_node *n = &g->nodes[i];
    bool all = n->op != XF_OP_OPAQUE && !(xf_op_get_info(n->op)->flags & XF_OPF_NOFOLD) && n->n_inputs > 0;
    for (int k = 0; k < n->n_inputs && all; k++)
        all = n->inputs[k] < 0 || konst[n->inputs[k]];
    return all;
}

void opt_compile_time_propagate(const xf_graph *g, bool *konst)
{
    for (int i = 0; i < g->n_nodes; i++) {
        const xf_node *n = &g->nodes[i];
        if (!opt_node_is_folded(g, i, konst))
            continue;
        for (int k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] >= 0)
                konst[n->outputs[k]] = true;
    }
}

void opt_compile_time_values(const xf_graph *g, bool *konst)
{
    for (int v = 0; v < g->n_values; v++)
        konst[v] = opt_is_const(g, v);
    opt_compile_time_propagate(g, konst);
}

xf_status opt_cost_node(xf_cost_model *m, const xf_graph *g, int i, const bool *konst, int64_t opset,
                        double *seconds, xf_error *err)
{
    *seconds = 0;
    if (opt_node_is_folded(g, i, konst))
        return XF_OK;
    if (m->device) {
        *seconds = cost_analytic_node(m->device, g, i);
        return XF_OK;
    }
    return cost_measured_node(m, g, i, konst, opset, seconds, err);
}

xf_status xf_cost_graph(xf_cost_model *m, const xf_graph *g, int64_t opset, double *seconds, xf_error *err)
{
    *seconds = 0;
    bool *konst = malloc(sizeof *konst * ((size_t)g->n_values + 1));
    if (!konst)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    opt_compile_time_values(g, konst);
    double total = 0;
    xf_status st = XF_OK;
    for (int i = 0; i < g->n_nodes && st == XF_OK; i++) {
        double t = 0;
        st = opt_cost_node(m, g, i, konst, opset, &t, err);
        total += t;
    }
    free(konst);
    *seconds = total;
    return st;
}
