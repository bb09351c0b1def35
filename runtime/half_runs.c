/* float16 and bfloat16 nodes computed in float, for the backends whose
 * kernels are float ones (xf_backend.half_as_float: cpu, cuda).
 *
 * oneDNN 2.6 runs convolutions, products, normalizations and most other
 * primitives on float16 and bfloat16 only on CPUs with the matching
 * instructions (AVX512-FP16, AMX), and not every primitive then; the cuda
 * backend's kernels are float ones.  Such nodes ran on cpu_ref's kernels,
 * which compute each node in float, element by element, and round its
 * output: a float16 model made by onnxconverter-common ran some 20 times
 * slower than its float32 original on cpu.
 *
 * Here the nodes whose 16-bit floating values may be float ones (the ops
 * in computes_alike below: the same op on float computes the same values
 * but for the 16-bit rounding of its outputs) become the float op: their
 * 16-bit weights are made float once, a Cast to float goes before the
 * 16-bit values they read from the rest of the graph (graph inputs,
 * other nodes), and a Cast back after the values they give to the rest
 * (graph outputs, other nodes).  Between two such nodes the value stays
 * float: a run of them is computed in float and rounded where it ends, as
 * ONNX Runtime does on x86 CPUs (where its float16 nodes run as float
 * ones between Casts, and Casts in pairs are removed).  The results are
 * those of the float model on the 16-bit weights, within 16-bit rounding
 * of cpu_ref's, which rounds every node's output.
 *
 * Ops whose outputs are discrete (comparisons, ArgMax, Floor, a MaxPool's
 * indices) are left out: a value not rounded could decide otherwise than
 * the rounded one, so they read rounded values as written.
 *
 * The session makes the runs before the backend's own rewrites
 * (xf_backend.lower_graph), which then see float graphs: the cpu
 * backend's MatMulNBits of a DequantizeLinear of int4 weights and its
 * MatMul takes float16 models' pairs too.
 *
 * The written model is not touched: this is how the backend runs it. */
#include "xf_rt_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether op computes on float what it computes on 16-bit floats, but for
 * the rounding of its outputs: ops whose outputs are continuous in their
 * inputs, and those that only move values. */
static bool computes_alike(const xf_node *n)
{
    switch (n->op) {
    case XF_OP_CONV:
    case XF_OP_MS_FUSED_CONV:
    case XF_OP_CONV_TRANSPOSE:
    case XF_OP_MATMUL:
    case XF_OP_GEMM:
    case XF_OP_MS_FUSED_GEMM:
    case XF_OP_MS_FUSED_MATMUL:
    case XF_OP_ADD:
    case XF_OP_SUB:
    case XF_OP_MUL:
    case XF_OP_DIV:
    case XF_OP_POW:
    case XF_OP_MAX:
    case XF_OP_MIN:
    case XF_OP_SUM:
    case XF_OP_MEAN:
    case XF_OP_RELU:
    case XF_OP_LEAKY_RELU:
    case XF_OP_PRELU:
    case XF_OP_SIGMOID:
    case XF_OP_TANH:
    case XF_OP_ABS:
    case XF_OP_NEG:
    case XF_OP_EXP:
    case XF_OP_LOG:
    case XF_OP_SQRT:
    case XF_OP_RECIPROCAL:
    case XF_OP_ERF:
    case XF_OP_SOFTPLUS:
    case XF_OP_ELU:
    case XF_OP_SELU:
    case XF_OP_CELU:
    case XF_OP_HARD_SIGMOID:
    case XF_OP_HARD_SWISH:
    case XF_OP_MISH:
    case XF_OP_GELU:
    case XF_OP_MS_GELU:
    case XF_OP_MS_FAST_GELU:
    case XF_OP_MS_BIAS_GELU:
    case XF_OP_MS_QUICK_GELU:
    case XF_OP_MS_BIAS_ADD:
    case XF_OP_CLIP:
    case XF_OP_SOFTMAX:
    case XF_OP_LOG_SOFTMAX:
    case XF_OP_LAYER_NORM:
    case XF_OP_MS_SKIP_LAYER_NORM:
    case XF_OP_MS_SKIP_SIMPLIFIED_LAYER_NORM:
    case XF_OP_SIMPLIFIED_LAYER_NORM:
    case XF_OP_RMS_NORM:
    case XF_OP_ATTENTION:
    case XF_OP_MS_ATTENTION:
    case XF_OP_MS_MHA:
    case XF_OP_MS_GQA:
    case XF_OP_ROTARY_EMB:
    case XF_OP_MS_ROTARY_EMB:
    case XF_OP_MS_EMBED_LAYER_NORM:
    case XF_OP_MS_MATMUL_NBITS:
    case XF_OP_MS_GATHER_BLOCK_QUANTIZED:
    case XF_OP_INSTANCE_NORM:
    case XF_OP_GROUP_NORM:
    case XF_OP_LRN:
    case XF_OP_AVERAGE_POOL:
    case XF_OP_GLOBAL_AVERAGE_POOL:
    case XF_OP_GLOBAL_MAX_POOL:
    case XF_OP_REDUCE_MEAN:
    case XF_OP_REDUCE_SUM:
    case XF_OP_REDUCE_MAX:
    case XF_OP_REDUCE_MIN:
    case XF_OP_RESIZE:
    case XF_OP_PAD:
    /* values moved, not computed */
    case XF_OP_CONCAT:
    case XF_OP_SPLIT:
    case XF_OP_TRANSPOSE:
    case XF_OP_RESHAPE:
    case XF_OP_FLATTEN:
    case XF_OP_SQUEEZE:
    case XF_OP_UNSQUEEZE:
    case XF_OP_GATHER:
    case XF_OP_SLICE:
    case XF_OP_EXPAND:
    case XF_OP_TILE:
    case XF_OP_IDENTITY:
    case XF_OP_WHERE:
    case XF_OP_DEPTH_TO_SPACE:
    case XF_OP_SPACE_TO_DEPTH:
    case XF_OP_SHAPE:
    case XF_OP_SIZE: return true;
    /* inference only: training mode's running statistics are outputs */
    case XF_OP_BATCH_NORM: return n->n_outputs == 1;
    /* its output of the scale's type, not one output_dtype names */
    case XF_OP_DEQUANTIZE_LINEAR: return n->attrs.output_dtype == XF_DT_UNDEFINED;
    /* not its indices */
    case XF_OP_MAX_POOL: return n->n_outputs == 1 || n->outputs[1] < 0;
    default: return false;
    }
}

/* Whether n runs in float here: an op of computes_alike reading or giving
 * a 16-bit float tensor. */
static bool runs_in_float(const xf_graph *g, const xf_node *n)
{
    if (!computes_alike(n))
        return false;
    bool half = false;
    for (int k = 0; k < n->n_inputs + n->n_outputs; k++) {
        int v = k < n->n_inputs ? n->inputs[k] : n->outputs[k - n->n_inputs];
        if (v < 0)
            continue;
        if (g->values[v].kind != XF_VK_TENSOR)
            return false;
        half = half || xf_dtype_is_half(g->values[v].dtype);
    }
    return half;
}

static float half_to_float(xf_dtype t, uint16_t h) { return t == XF_DT_FLOAT16 ? xf_f16_to_f32(h) : xf_bf16_to_f32(h); }

static float half_rounded(xf_dtype t, float v)
{
    return half_to_float(t, t == XF_DT_FLOAT16 ? xf_f32_to_f16(v) : xf_f32_to_bf16(v));
}

/* A float tensor holding 16-bit float constant t's values (exactly); but
 * a scalar that is sqrt(2) or sqrt(1/2) rounded to 16 bits is made the
 * float nearest them: the value of the exact GELU's x / sqrt(2) (or x *
 * sqrt(1/2)), which the cpu backend then runs as one oneDNN gelu_erf
 * (cpu_dnnl_fold.c), as in float models, rather than as an Erf on
 * cpu_ref.  The two differ by a quarter of a unit in the 16-bit value's
 * last place. */
static xf_tensor *widened(const xf_tensor *t)
{
    xf_tensor *f = xf_tensor_create(XF_DT_FLOAT, &t->shape);
    if (!f)
        return NULL;
    int64_t count = xf_shape_numel(&t->shape);
    const uint16_t *h = t->data;
    float *o = f->data;
    for (int64_t i = 0; i < count; i++)
        o[i] = half_to_float(t->dtype, h[i]);
    static const float gelu[2] = {1.41421356237309505f, 0.707106781186547524f};
    for (int k = 0; count == 1 && k < 2; k++)
        if (o[0] == half_rounded(t->dtype, gelu[k]))
            o[0] = gelu[k];
    return f;
}

/* A new value named after v's, of float, v's shape; -1 when out of
 * memory. */
static int float_twin(xf_graph *g, int v, const char *suffix)
{
    /* v's name cut short, so that the numbers that tell names apart fit */
    char name[512];
    snprintf(name, sizeof name, "%.400s%s", g->values[v].name, suffix);
    for (int i = 2; xf_graph_find_value(g, name) >= 0; i++)
        snprintf(name, sizeof name, "%.400s%s_%d", g->values[v].name, suffix, i);
    xf_shape shape = g->values[v].shape;
    return xf_graph_add_value(g, name, XF_DT_FLOAT, &shape);
}

/* A Cast of value from to dtype to, giving value into; false when out of
 * memory. */
static bool add_cast(xf_graph *g, int from, int into, xf_dtype to)
{
    char name[512];
    snprintf(name, sizeof name, "%.400s_cast", g->values[into].name);
    int i = xf_graph_add_node(g, XF_OP_CAST, name, 1, &from, 1, &into);
    if (i < 0)
        return false;
    g->nodes[i].attrs.to = to;
    return true;
}

/* Makes value v float where the float nodes touch it: its producer
 * among them (made) gives float, and those of its readers read float;
 * others (nodes not among them, graph outputs) still read it as it is.
 * twin[v] is then the float value they read (v itself when only they
 * touch it). */
static bool widen_value(xf_graph *g, int v, bool made, bool others, int *twin)
{
    const xf_tensor *c = xf_graph_constant(g, v);
    xf_dtype half = g->values[v].dtype;
    if ((made || c) && !others) { /* only float nodes touch it: it is float */
        if (c) {
            xf_tensor *f = widened(c);
            if (!f)
                return false;
            xf_tensor_release(g->values[v].init);
            g->values[v].init = f;
        }
        g->values[v].dtype = XF_DT_FLOAT;
        twin[v] = v;
        return true;
    }
    int w = twin[v] = float_twin(g, v, made ? "_float" : "_as_float");
    if (w < 0)
        return false;
    if (made) { /* the float node gives w; a Cast rounds it into v */
        int p = g->values[v].producer, k = g->values[v].producer_out;
        g->nodes[p].outputs[k] = w;
        g->values[w].producer = p;
        g->values[w].producer_out = k;
        return add_cast(g, w, v, half);
    }
    if (c) {
        xf_tensor *f = widened(c);
        if (!f)
            return false;
        g->values[w].init = f;
        return true;
    }
    return add_cast(g, v, w, XF_DT_FLOAT); /* read by float nodes, not made by one */
}

xf_status xf_rt_lower_half(xf_graph *g, xf_error *err)
{
    int n0 = g->n_nodes, nv0 = g->n_values, found = 0;
    size_t nn = (size_t)(n0 > 0 ? n0 : 1), nv = (size_t)(nv0 > 0 ? nv0 : 1);
    bool *in_float = malloc(sizeof *in_float * nn);
    /* per value: read by a float node (1), by another node (2) */
    unsigned char *read = calloc(nv, 1);
    int *twin = malloc(sizeof *twin * nv);
    bool ok = in_float && read && twin;
    for (int i = 0; ok && i < n0; i++) {
        const xf_node *n = &g->nodes[i];
        found += in_float[i] = runs_in_float(g, n);
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] >= 0)
                read[n->inputs[k]] |= in_float[i] ? 1 : 2;
    }
    for (int v = 0; ok && found && v < nv0; v++) {
        twin[v] = -1;
        const xf_value *x = &g->values[v];
        bool made = x->producer >= 0 && in_float[x->producer];
        if (x->kind == XF_VK_TENSOR && xf_dtype_is_half(x->dtype) && (made || (read[v] & 1)))
            ok = widen_value(g, v, made, (read[v] & 2) || xf_graph_is_output(g, v), twin);
    }
    /* the float nodes read the float twins */
    for (int i = 0; ok && found && i < n0; i++)
        for (int k = 0; in_float[i] && k < g->nodes[i].n_inputs; k++) {
            int v = g->nodes[i].inputs[k];
            if (v >= 0 && v < nv0 && twin[v] >= 0)
                g->nodes[i].inputs[k] = twin[v];
        }
    free(in_float);
    free(read);
    free(twin);
    if (!ok)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    return found ? xf_graph_toposort(g, err) : XF_OK;
}

