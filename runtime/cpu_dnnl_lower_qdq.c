/* The cpu backend's rewrites of QDQ models (part of xf_dn_lower_graph,
 * cpu_dnnl_lower.c): the groups of DequantizeLinear, an op and
 * QuantizeLinear run as the integer ops ONNX Runtime fuses them into, or
 * as lookups.
 *
 * A QDQ model (ONNX Runtime's quantize_static, TensorRT's and PyTorch's
 * QDQ exports) computes each convolution in float between a
 * DequantizeLinear of its 8-bit input, one of its int8 weights (per
 * tensor or per output channel), one of its int32 bias and a
 * QuantizeLinear of its output, and each MatMul likewise (weights per
 * tensor or per column, no bias).  Where int8 products are exact the
 * group runs as one QLinearConv or QLinearMatMul over the same integers,
 * as ONNX Runtime runs them: the sums exact in int32, the bias added there (its scale must be
 * the input's times the weight's, as the quantizers write it), then
 * scaled and rounded once.  The float graph rounds every product and sum
 * of the dequantized values instead, so an output may land one step
 * apart where its value sits near a rounding boundary.  A Relu between
 * the convolution and the QuantizeLinear is the saturation at the zero
 * point when that is the type's least value, and is then left out;
 * otherwise the four stay as written.  An Add or Mul of two
 * DequantizeLinears whose output a QuantizeLinear takes (a residual
 * connection) runs as ONNX Runtime's QLinearAdd or QLinearMul, on the
 * backend's AVX2 loops, likewise as ONNX Runtime computes it.
 *
 * The same models wrap every activation function in QDQ too: a
 * DequantizeLinear of 8-bit codes, the function (Erf, Sigmoid, Tanh, any
 * one-input elementwise op on floats, or one of two inputs whose other is
 * a constant of one element, such as GELU's Mul by 1/sqrt(2)) and a
 * QuantizeLinear.  Such a step maps each of the 256 codes to one output
 * code, so it runs as a Gather from a table of 256 codes (the input cast
 * to int32: int8 codes index the table's upper half as negative indices),
 * which cpu_ref fills by running the step once on every code: the float
 * graph's values exactly.  QOperator nodes of the kind (QLinearAdd or
 * QLinearMul of a constant of one element, QLinearSigmoid,
 * QLinearLeakyRelu) are such steps too, their tables filled by cpu_ref's
 * own kernels.  Steps in a row, each output read by the next step alone
 * (through its DequantizeLinear, or as its codes), compose into one
 * table.  The backend runs
 * the Cast and the Gather as one lookup of the codes
 * (xf_dn_code_table_handler).
 *
 * An op that only moves or selects values (MaxPool, Concat, Reshape,
 * Transpose, Slice, Gather and the like) between DequantizeLinears and a QuantizeLinear
 * runs on the output's codes: an input whose codes quantizing its
 * dequantized codes would change (another scale, zero point or type: the
 * two branches of SqueezeNet's Concats) is looked up in the table of that
 * first (cpu_ref fills it), the others are taken as they are.  The op
 * commutes with such a map of each element, and a MaxPool with it when
 * every scale is positive (the map keeps the codes' order), so the values
 * are the float graph's exactly.  ONNX Runtime's QLinearConcat (the
 * QOperator form of such a Concat) runs likewise, through cpu_ref's own
 * tables: the same bytes.
 *
 * The written model is not touched: this is how the backend runs it. */
#include "cpu_dnnl_lower.h"
#include "xf_runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A DequantizeLinear -> Conv or MatMul -> QuantizeLinear group of
 * qdq_product_of. */
typedef struct qdq_product {
    int product, q;     /* the nodes the QLinearConv or QLinearMatMul replaces */
    int dq[3];          /* the DequantizeLinear of x, w and the bias (-1: no bias) */
    xf_op op;           /* QLinearConv or QLinearMatMul */
    int n_inputs;       /* 9 or 8 */
    int inputs[9];      /* its inputs */
} qdq_product;

/* Whether value v is a constant of one element (absent: when may_lack). */
static bool single_const(const xf_graph *g, int v, bool may_lack)
{
    const xf_tensor *t = xf_graph_constant(g, v);
    return v < 0 ? may_lack : t && xf_shape_numel(&t->shape) == 1;
}

/* The DequantizeLinear producing value v when it dequantizes constant
 * codes of type `codes` (any 8-bit type for XF_DT_UNDEFINED; then they may
 * be computed) with a constant float scale of 1 or `per` elements along
 * dim `axis` (per 0: one) and a constant zero point of zeros or none
 * (zero_free), or of one element; else -1. */
static int dq_of(const xf_graph *g, int v, xf_dtype codes, int64_t per, int axis, bool zero_free)
{
    int d = v >= 0 ? g->values[v].producer : -1;
    if (d < 0 || g->nodes[d].op != XF_OP_DEQUANTIZE_LINEAR || g->nodes[d].n_outputs != 1 || g->nodes[d].n_inputs < 2 ||
        g->nodes[d].attrs.block_size != 0)
        return -1;
    const xf_node *n = &g->nodes[d];
    int q = n->inputs[0], zp = n->n_inputs > 2 ? n->inputs[2] : -1;
    xf_dtype t = q >= 0 ? g->values[q].dtype : XF_DT_UNDEFINED;
    const xf_tensor *scale = xf_graph_constant(g, n->inputs[1]), *z = xf_graph_constant(g, zp);
    int64_t count = scale ? xf_shape_numel(&scale->shape) : 0;
    if (!scale || scale->dtype != XF_DT_FLOAT || (count != 1 && (per == 0 || count != per)) || (zp >= 0 && !z))
        return -1;
    if (codes == XF_DT_UNDEFINED ? t != XF_DT_UINT8 && t != XF_DT_INT8 : t != codes || !xf_graph_constant(g, q))
        return -1;
    if (count > 1 && n->attrs.axis != axis && n->attrs.axis != axis - g->values[q].shape.ndim)
        return -1;
    if (!zero_free)
        return !z || (z->dtype == t && (xf_shape_numel(&z->shape) == 1 || xf_shape_numel(&z->shape) == per)) ? d : -1;
    for (int64_t i = 0; z && i < xf_shape_numel(&z->shape); i++)
        if (xf_rt_load_i64(z->dtype, z->data, i) != 0)
            return -1;
    return d;
}

/* Element i of a scale of one or more floats. */
static float scale_at(const xf_tensor *t, int64_t i)
{
    return ((const float *)t->data)[xf_shape_numel(&t->shape) == 1 ? 0 : i];
}

/* The QuantizeLinear that alone reads product node pi's output, to 8 bits
 * with constant parameters of one element: its index, else -1.  A Relu
 * fused into the product is the saturation only at the type's least zero
 * point. */
static int qdq_output(const xf_graph *g, const int *reader, int n_values, int pi)
{
    const xf_node *c = &g->nodes[pi];
    int qi = xf_dn_only_reader(g, reader, n_values, c->outputs[0]);
    const xf_node *q = qi >= 0 ? &g->nodes[qi] : NULL;
    int y = q ? q->outputs[0] : -1, y_zp = q && q->n_inputs > 2 ? q->inputs[2] : -1;
    if (!q || q->op != XF_OP_QUANTIZE_LINEAR || q->n_inputs < 2 || q->inputs[0] != c->outputs[0] ||
        q->n_outputs != 1 || y < 0 || (g->values[y].dtype != XF_DT_UINT8 && g->values[y].dtype != XF_DT_INT8) ||
        !single_const(g, q->inputs[1], false) || g->values[q->inputs[1]].dtype != XF_DT_FLOAT ||
        !single_const(g, y_zp, true) || q->attrs.block_size != 0)
        return -1;
    if (c->attrs.activation == XF_ACT_RELU) {
        const xf_tensor *z = xf_graph_constant(g, y_zp);
        int64_t least = g->values[y].dtype == XF_DT_UINT8 ? 0 : -128;
        if ((z ? xf_rt_load_i64(z->dtype, z->data, 0) : 0) != least)
            return -1;
    }
    return qi;
}

static bool qdq_product_of(const xf_graph *g, const int *reader, int n_values, int ci, qdq_product *p)
{
    const xf_node *c = &g->nodes[ci];
    bool conv = c->op == XF_OP_CONV;
    xf_activation act = c->attrs.activation;
    if ((!conv && (c->op != XF_OP_MATMUL || c->n_inputs != 2)) || c->n_inputs < 2 || c->n_outputs != 1 ||
        c->attrs.ms_act != XF_MS_ACT_NONE || (act != XF_ACT_NONE && act != XF_ACT_RELU) || c->inputs[1] < 0 ||
        g->values[c->inputs[1]].shape.ndim < 2)
        return false;
    /* one scale per output channel (Conv, dim 0) or per column (MatMul's 2-D weights, dim 1) */
    const xf_shape *ws_dims = &g->values[c->inputs[1]].shape;
    int axis = conv ? 0 : 1;
    int64_t m = conv ? ws_dims->dims[0] : ws_dims->ndim == 2 ? ws_dims->dims[1] : 0;
    int b = c->n_inputs > 2 ? c->inputs[2] : -1;
    *p = (qdq_product){.product = ci, .op = conv ? XF_OP_QLINEAR_CONV : XF_OP_QLINEAR_MATMUL, .n_inputs = conv ? 9 : 8};
    p->dq[0] = dq_of(g, c->inputs[0], XF_DT_UNDEFINED, 0, 0, false);
    /* the weights may be uint8 and have zero points (corrected after
     * oneDNN's sums: xf_dn_qconv_fix_prepare, MatMulIntegerToFloat's loop) */
    p->dq[1] = dq_of(g, c->inputs[1], XF_DT_UNDEFINED, m, axis, false);
    p->dq[2] = b >= 0 ? dq_of(g, b, XF_DT_INT32, m, 0, true) : -1;
    p->q = qdq_output(g, reader, n_values, ci);
    if (p->dq[0] < 0 || p->dq[1] < 0 || (b >= 0 && p->dq[2] < 0) || p->q < 0)
        return false;
    const xf_node *q = &g->nodes[p->q], *dx = &g->nodes[p->dq[0]], *dw = &g->nodes[p->dq[1]];
    /* the bias in the sums: its scale is the input's times the weight's */
    if (b >= 0) {
        const xf_tensor *xs = xf_graph_constant(g, dx->inputs[1]), *ws = xf_graph_constant(g, dw->inputs[1]);
        const xf_tensor *bs = xf_graph_constant(g, g->nodes[p->dq[2]].inputs[1]);
        for (int64_t i = 0; i < m; i++)
            if (scale_at(bs, i) != scale_at(xs, 0) * scale_at(ws, i))
                return false;
    }
    const int *xi = dx->inputs, *wi = dw->inputs;
    int y = q->outputs[0], in[9] = {xi[0], xi[1], dx->n_inputs > 2 ? xi[2] : -1, wi[0], wi[1],
                                    dw->n_inputs > 2 ? wi[2] : -1, q->inputs[1], q->n_inputs > 2 ? q->inputs[2] : -1,
                                    b >= 0 ? g->nodes[p->dq[2]].inputs[0] : -1};
    memcpy(p->inputs, in, sizeof in);
    /* what the backend's QLinearConv or QLinearMatMul takes, else the float graph runs */
    xf_node qc = {.op = p->op, .attrs = c->attrs, .n_inputs = p->n_inputs, .inputs = p->inputs, .n_outputs = 1,
                  .outputs = &y};
    qc.attrs.activation = XF_ACT_NONE;
    return conv ? xf_dn_qconv_handler.handles(g, &qc)
                : xf_dn_qmatmul_handler.handles(g, &qc) || xf_dn_int_matmul_float_handler.handles(g, &qc);
}

/* The opset the chain's table is computed at: the nodes carry their
 * semantics in their attributes, which every opset since 21 reads alike. */
#define XF_LUT_OPSET 21

/* One DequantizeLinear -> f -> QuantizeLinear step of a chain of
 * lut_chain_of: f reads the codes' values as its input k, and a constant
 * of one element (`other`, dequantized by node other_dq when that is not
 * -1) as its other input, if it has two. */
typedef struct lut_step {
    int dq, f, q, k, other, other_dq;
} lut_step;
/* A step of QOperator form (dq and q -1): f maps the codes of its input k
 * to its output's, its other inputs constants of one element (QLinearAdd
 * or QLinearMul of a constant, QLinearLeakyRelu, QLinearSigmoid). */

/* The most inputs a QOperator step has (QLinearAdd's 8). */
enum { XF_QDQ_MAX_INPUTS = 8 };

/* At most this many steps run as one table. */
#define XF_LUT_MAX_STEPS 8

typedef struct lut_chain {
    int n;
    lut_step s[XF_LUT_MAX_STEPS];
} lut_chain;

/* The constant of one element that value v is, of no more than `rank`
 * dims (so that f's output has the shape of its other input): a float
 * initializer (*dq -1) or a DequantizeLinear of constant 8-bit codes (*dq
 * that node); false otherwise. */
static bool single_operand(const xf_graph *g, int v, int rank, int *dq)
{
    const xf_value *x = v >= 0 ? &g->values[v] : NULL;
    if (!x || x->shape.ndim < 0 || x->shape.ndim > rank || xf_shape_numel(&x->shape) != 1)
        return false;
    *dq = x->init ? -1 : dq_of(g, v, XF_DT_UNDEFINED, 0, 0, false);
    if (x->init)
        return x->init->dtype == XF_DT_FLOAT;
    return *dq >= 0 && g->values[g->nodes[*dq].inputs[0]].init && single_const(g, g->nodes[*dq].inputs[1], false);
}

/* Whether node fi, not yet replaced, is one step (an elementwise op on
 * floats of one input, or of two whose other is a constant of one
 * element) between a DequantizeLinear of 8-bit codes and a QuantizeLinear
 * that alone reads it. */
/* Whether x is a tensor of 8-bit codes. */
static bool codes(const xf_value *x) { return x->dtype == XF_DT_UINT8 || x->dtype == XF_DT_INT8; }

static bool coded_step_of(const xf_graph *g, int fi, lut_step *p)
{
    const xf_node *f = &g->nodes[fi];
    if ((f->op != XF_OP_MS_QLINEAR_ADD && f->op != XF_OP_MS_QLINEAR_MUL && f->op != XF_OP_MS_QLINEAR_LEAKY_RELU &&
         f->op != XF_OP_MS_QLINEAR_SIGMOID) ||
        f->n_outputs != 1 || f->outputs[0] < 0 || !codes(&g->values[f->outputs[0]]))
        return false;
    *p = (lut_step){.dq = -1, .f = fi, .q = -1, .k = -1, .other = -1, .other_dq = -1};
    for (int k = 0; k < f->n_inputs; k++) {
        int v = f->inputs[k];
        if (v >= 0 && !g->values[v].init && (p->k >= 0 || !codes(&g->values[v])))
            return false; /* a second input computed, or one that is not codes */
        if (v >= 0 && !g->values[v].init)
            p->k = k;
    }
    if (p->k < 0)
        return false;
    int rank = g->values[f->inputs[p->k]].shape.ndim;
    for (int k = 0; k < f->n_inputs; k++) {
        const xf_value *c = f->inputs[k] >= 0 && k != p->k ? &g->values[f->inputs[k]] : NULL;
        if (c && (xf_shape_numel(&c->shape) != 1 || c->shape.ndim > rank))
            return false;
    }
    return rank >= 0;
}

static bool lut_step_of(const xf_graph *g, const xf_dn_lowering *low, int fi, lut_step *p)
{
    const xf_node *f = &g->nodes[fi];
    if (low->keep[fi] && coded_step_of(g, fi, p))
        return true;
    const xf_op_info *info = xf_op_get_info(f->op);
    if (!low->keep[fi] || !(info->flags & XF_OPF_ELEM) || f->n_inputs < 1 || f->n_inputs > 2 ||
        f->n_inputs > info->max_inputs || f->n_outputs != 1 || f->outputs[0] < 0 || xf_node_draws_random(g, f) ||
        f->attrs.activation != XF_ACT_NONE || g->values[f->outputs[0]].dtype != XF_DT_FLOAT)
        return false;
    *p = (lut_step){.dq = -1, .f = fi, .other = -1, .other_dq = -1};
    for (int k = 0; k < f->n_inputs && p->dq < 0; k++) {
        int v = f->inputs[k], d = dq_of(g, v, XF_DT_UNDEFINED, 0, 0, false);
        int other = f->n_inputs == 2 ? f->inputs[1 - k] : -1;
        if (d < 0 || g->values[v].dtype != XF_DT_FLOAT ||
            (other >= 0 && !single_operand(g, other, g->values[v].shape.ndim, &p->other_dq)))
            continue;
        p->dq = d;
        p->k = k;
        p->other = other;
    }
    p->q = p->dq >= 0 ? qdq_output(g, low->reader, low->n_values, fi) : -1;
    return p->q >= 0;
}

/* The codes step p reads, and those it writes. */
static int lut_step_in(const xf_graph *g, const lut_step *p)
{
    return p->dq >= 0 ? g->nodes[p->dq].inputs[0] : g->nodes[p->f].inputs[p->k];
}

static int lut_step_out(const xf_graph *g, const lut_step *p)
{
    return g->nodes[p->q >= 0 ? p->q : p->f].outputs[0];
}

/* The chain of steps that starts at node fi, each step's QuantizeLinear
 * read by the next one's DequantizeLinear alone (GELU's Mul, Erf and Add
 * in a QDQ model): the codes of its first input map to those of its last
 * output through one table. */
static bool lut_chain_of(const xf_graph *g, const xf_dn_lowering *low, int fi, lut_chain *c)
{
    c->n = 0;
    if (!lut_step_of(g, low, fi, &c->s[0]))
        return false;
    for (c->n = 1; c->n < XF_LUT_MAX_STEPS; c->n++) {
        int y = lut_step_out(g, &c->s[c->n - 1]);
        int r = xf_dn_only_reader(g, low->reader, low->n_values, y);
        if (r < 0)
            break;
        /* the next step reads y, through its DequantizeLinear or as its codes */
        bool dq = g->nodes[r].op == XF_OP_DEQUANTIZE_LINEAR;
        int f = dq ? xf_dn_only_reader(g, low->reader, low->n_values, g->nodes[r].outputs[0]) : r;
        lut_step *next = &c->s[c->n];
        if (f < 0 || !lut_step_of(g, low, f, next) ||
            (dq ? next->dq != r : (next->dq >= 0 || lut_step_in(g, next) != y)))
            break;
    }
    return true;
}

/* Value v of g (a constant, or -1) in graph t. */
static int const_in(xf_graph *t, const xf_graph *g, int v)
{
    return v < 0 ? -1 : xf_graph_add_initializer(t, NULL, g->values[v].init);
}

/* The 256 output codes of coded step p, run on cpu_ref; NULL when that fails. */
static xf_tensor *coded_lut_of(const xf_graph *g, const lut_step *p)
{
    const xf_node *f = &g->nodes[p->f];
    xf_shape s = xf_shape_make(1, (int64_t[]){256});
    xf_graph *t = xf_graph_create("table");
    xf_tensor *codes = xf_tensor_create(g->values[f->inputs[p->k]].dtype, &s), *table = NULL;
    int in[XF_QDQ_MAX_INPUTS];
    bool ok = t && codes && f->n_inputs <= XF_QDQ_MAX_INPUTS;
    for (int k = 0; ok && k < 256; k++)
        ((uint8_t *)codes->data)[k] = (uint8_t)k;
    for (int k = 0; ok && k < f->n_inputs; k++)
        in[k] = k == p->k ? xf_graph_add_input(t, "x", codes->dtype, &s) : const_in(t, g, f->inputs[k]);
    int y = ok ? xf_graph_add_value(t, NULL, g->values[f->outputs[0]].dtype, NULL) : -1;
    xf_session *run = NULL;
    xf_error err = {0};
    if (y >= 0 && xf_graph_copy_node(t, f, in, &y) >= 0) {
        xf_graph_add_output(t, y);
        if (xf_session_create(t, XF_LUT_OPSET, "cpu_ref", NULL, &run, &err) != XF_OK ||
            xf_session_run(run, &codes, &table, &err) != XF_OK || xf_tensor_numel(table) != 256) {
            xf_tensor_release(table);
            table = NULL;
        }
    }
    if (table)
        table->shape = s;
    xf_session_free(run);
    xf_graph_free(t);
    xf_tensor_release(codes);
    return table;
}

/* The 256 output codes of step p, code k's at k (int8 codes as their
 * bytes), run on cpu_ref (f -1: the DequantizeLinear and QuantizeLinear
 * alone); NULL when that fails. */
static xf_tensor *lut_of(const xf_graph *g, const lut_step *p)
{
    if (p->dq < 0)
        return coded_lut_of(g, p);
    const xf_node *d = &g->nodes[p->dq], *f = p->f >= 0 ? &g->nodes[p->f] : NULL, *q = &g->nodes[p->q];
    xf_shape s = xf_shape_make(1, (int64_t[]){256});
    xf_graph *t = xf_graph_create("table");
    xf_tensor *codes = xf_tensor_create(g->values[d->inputs[0]].dtype, &s), *table = NULL;
    if (!t || !codes) {
        xf_graph_free(t);
        xf_tensor_release(codes);
        return NULL;
    }
    for (int k = 0; k < 256; k++)
        ((uint8_t *)codes->data)[k] = (uint8_t)k;
    int x = xf_graph_add_input(t, "x", codes->dtype, &s), dv = xf_graph_add_value(t, NULL, XF_DT_FLOAT, &s);
    int fv = xf_graph_add_value(t, NULL, XF_DT_FLOAT, NULL);
    int yv = xf_graph_add_value(t, NULL, g->values[q->outputs[0]].dtype, NULL);
    int din[3] = {x, const_in(t, g, d->inputs[1]), d->n_inputs > 2 ? const_in(t, g, d->inputs[2]) : -1};
    int qin[3] = {fv, const_in(t, g, q->inputs[1]), q->n_inputs > 2 ? const_in(t, g, q->inputs[2]) : -1};
    int fin[2] = {dv, dv}, other = p->other >= 0 ? xf_graph_add_value(t, NULL, XF_DT_FLOAT, NULL) : -1;
    bool ok = true;
    if (p->other_dq >= 0) { /* the constant's DequantizeLinear too */
        const xf_node *od = &g->nodes[p->other_dq];
        int oin[3] = {const_in(t, g, od->inputs[0]), const_in(t, g, od->inputs[1]),
                      od->n_inputs > 2 ? const_in(t, g, od->inputs[2]) : -1};
        ok = other >= 0 && xf_graph_copy_node(t, od, oin, &other) >= 0;
    } else if (p->other >= 0) {
        other = const_in(t, g, p->other);
    }
    if (p->other >= 0)
        fin[1 - p->k] = other;
    xf_session *run = NULL;
    xf_error err = {0};
    if (!f)
        qin[0] = dv;
    if (ok && xf_graph_copy_node(t, d, din, &dv) >= 0 && (!f || xf_graph_copy_node(t, f, fin, &fv) >= 0) &&
        xf_graph_copy_node(t, q, qin, &yv) >= 0) {
        xf_graph_add_output(t, yv);
        if (xf_session_create(t, XF_LUT_OPSET, "cpu_ref", NULL, &run, &err) != XF_OK ||
            xf_session_run(run, &codes, &table, &err) != XF_OK || xf_tensor_numel(table) != 256) {
            xf_tensor_release(table);
            table = NULL;
        }
    }
    if (table) /* [256] whatever rank the constant gave it */
        table->shape = s;
    xf_session_free(run);
    xf_graph_free(t);
    xf_tensor_release(codes);
    return table;
}

/* Appends the lookup of codes x in table (256 codes, released) as a Cast
 * of x to int32 and a Gather writing value y, named `name`; the Gather's
 * index, or -1 when out of memory. */
static int add_lookup(xf_graph *g, int x, xf_tensor *table, int y, const char *name)
{
    char nm[512];
    snprintf(nm, sizeof nm, "%s", name ? name : "");
    int tv = xf_dn_add_constant(g, g->values[y].name, "_table", table);
    int iv = tv < 0 ? -1 : xf_graph_add_value(g, NULL, XF_DT_INT32, &g->values[x].shape);
    int cast = iv < 0 ? -1 : xf_graph_add_node(g, XF_OP_CAST, nm, 1, &x, 1, &iv);
    int gather = cast < 0 ? -1 : xf_graph_add_node(g, XF_OP_GATHER, nm, 2, (int[]){tv, iv}, 1, &y);
    if (gather < 0)
        return -1;
    g->nodes[cast].attrs.to = XF_DT_INT32;
    g->nodes[gather].attrs.axis = 0;
    return gather;
}

/* Replaces chain p by a Cast of its first codes to int32 and a Gather
 * from the chain's table (the steps' tables composed), which the backend
 * runs as one lookup of the codes (xf_dn_code_table_handler); false when
 * out of memory or cpu_ref could not run a step (which then stays). */
static bool add_lut(xf_graph *g, const lut_chain *p, bool *nomem)
{
    xf_tensor *table = lut_of(g, &p->s[0]);
    for (int j = 1; table && j < p->n; j++) {
        xf_tensor *next = lut_of(g, &p->s[j]);
        uint8_t *t = table->data;
        for (int k = 0; next && k < 256; k++)
            t[k] = ((const uint8_t *)next->data)[t[k]];
        if (next)
            table->dtype = next->dtype;
        else {
            xf_tensor_release(table);
            table = NULL;
        }
        xf_tensor_release(next);
    }
    if (!table)
        return false;
    int x = lut_step_in(g, &p->s[0]), y = lut_step_out(g, &p->s[p->n - 1]);
    *nomem = add_lookup(g, x, table, y, g->nodes[p->s[0].f].name) < 0;
    return !*nomem;
}

/* An Add or Mul of two DequantizeLinears of the output's 8-bit type
 * that a QuantizeLinear alone reads, as the backend's QLinearAdd or
 * QLinearMul takes it (the same group record as the products: x and w
 * are A and B, no bias). */
static bool qdq_binary_of(const xf_graph *g, const int *reader, int n_values, int bi, qdq_product *p)
{
    const xf_node *b = &g->nodes[bi];
    if ((b->op != XF_OP_ADD && b->op != XF_OP_MUL) || b->n_inputs != 2 || b->n_outputs != 1 ||
        b->attrs.activation != XF_ACT_NONE)
        return false;
    *p = (qdq_product){.product = bi, .op = b->op == XF_OP_ADD ? XF_OP_MS_QLINEAR_ADD : XF_OP_MS_QLINEAR_MUL,
                       .n_inputs = 8, .dq = {-1, -1, -1}};
    p->dq[0] = dq_of(g, b->inputs[0], XF_DT_UNDEFINED, 0, 0, false);
    p->dq[1] = dq_of(g, b->inputs[1], XF_DT_UNDEFINED, 0, 0, false);
    p->q = qdq_output(g, reader, n_values, bi);
    if (p->dq[0] < 0 || p->dq[1] < 0 || p->q < 0)
        return false;
    const xf_node *q = &g->nodes[p->q], *da = &g->nodes[p->dq[0]], *db = &g->nodes[p->dq[1]];
    int y = q->outputs[0], in[8] = {da->inputs[0], da->inputs[1], da->n_inputs > 2 ? da->inputs[2] : -1,
                                    db->inputs[0], db->inputs[1], db->n_inputs > 2 ? db->inputs[2] : -1,
                                    q->inputs[1], q->n_inputs > 2 ? q->inputs[2] : -1};
    memcpy(p->inputs, in, sizeof in);
    xf_node qb = {.op = p->op, .n_inputs = 8, .inputs = p->inputs, .n_outputs = 1, .outputs = &y};
    return xf_dn_ms_qbinary_handler.handles(g, &qb);
}

/* A DequantizeLinear -> op -> QuantizeLinear group of qdq_transparent_of:
 * the op's data inputs (all of a Concat's, else its first) each a
 * DequantizeLinear in dq[], and the table (256 output codes) that takes
 * input k's codes to the output's where they differ (else NULL). */
enum { XF_QDQ_MAX_DATA = 16 };
typedef struct qdq_transparent {
    int op, q, n_dq;
    int dq[XF_QDQ_MAX_DATA];
    xf_tensor *table[XF_QDQ_MAX_DATA];
} qdq_transparent;

/* Whether n selects the largest of its input's values (which commutes
 * with a map that keeps their order). */
static bool takes_max(const xf_node *n) { return n->op == XF_OP_MAX_POOL || n->op == XF_OP_GLOBAL_MAX_POOL; }

static bool moves_values(const xf_node *n)
{
    switch (n->op) {
    case XF_OP_MAX_POOL: return n->n_outputs == 1; /* no Indices */
    /* input 0 the data, the others indices or sizes */
    case XF_OP_SLICE:
    case XF_OP_GATHER:
    case XF_OP_EXPAND:
    case XF_OP_TILE:
    case XF_OP_DEPTH_TO_SPACE:
    case XF_OP_SPACE_TO_DEPTH:
    case XF_OP_CONCAT:
    case XF_OP_RESHAPE:
    case XF_OP_FLATTEN:
    case XF_OP_TRANSPOSE:
    case XF_OP_SQUEEZE:
    case XF_OP_UNSQUEEZE:
    case XF_OP_IDENTITY:
    case XF_OP_GLOBAL_MAX_POOL: return true;
    default: return false;
    }
}

static void release_tables(qdq_transparent *p)
{
    for (int k = 0; k < p->n_dq; k++) {
        xf_tensor_release(p->table[k]);
        p->table[k] = NULL;
    }
}

/* Whether the scale of DequantizeLinear or QuantizeLinear node i is positive. */
static bool positive_scale(const xf_graph *g, int i)
{
    const xf_tensor *t = xf_graph_constant(g, g->nodes[i].inputs[1]);
    return t && t->dtype == XF_DT_FLOAT && *(const float *)t->data > 0.0f;
}

static bool qdq_transparent_of(const xf_graph *g, const xf_dn_lowering *low, int oi, qdq_transparent *p)
{
    const xf_node *n = &g->nodes[oi];
    if (!moves_values(n) || n->n_outputs != 1 || n->n_inputs < 1 ||
        (n->op == XF_OP_CONCAT && n->n_inputs > XF_QDQ_MAX_DATA))
        return false;
    p->op = oi;
    p->q = qdq_output(g, low->reader, low->n_values, oi);
    p->n_dq = n->op == XF_OP_CONCAT ? n->n_inputs : 1;
    if (p->q < 0 || (takes_max(n) && !positive_scale(g, p->q)))
        return false;
    memset(p->table, 0, sizeof p->table);
    xf_dtype yt = g->values[g->nodes[p->q].outputs[0]].dtype;
    for (int k = 0; k < p->n_dq; k++) {
        int d = p->dq[k] = dq_of(g, n->inputs[k], XF_DT_UNDEFINED, 0, 0, false);
        /* the op on the output's codes: each input's own through its table */
        xf_tensor *t = d < 0 || (takes_max(n) && !positive_scale(g, d)) ? NULL :
                       lut_of(g, &(lut_step){.dq = d, .f = -1, .q = p->q, .other = -1, .other_dq = -1});
        if (!t) {
            release_tables(p);
            return false;
        }
        bool same = g->values[g->nodes[d].inputs[0]].dtype == yt;
        for (int c = 0; same && c < 256; c++)
            same = ((const uint8_t *)t->data)[c] == c;
        if (same)
            xf_tensor_release(t);
        else
            p->table[k] = t;
    }
    return true;
}

/* Appends op p->op on the codes, writing the QuantizeLinear's output; its
 * node index or -1 when out of memory. */
static int add_transparent(xf_graph *g, qdq_transparent *p)
{
    int in[XF_QDQ_MAX_DATA], y = g->nodes[p->q].outputs[0];
    xf_dtype yt = g->values[y].dtype;
    for (int k = 0; k < g->nodes[p->op].n_inputs && k < XF_QDQ_MAX_DATA; k++) {
        const xf_node *n = &g->nodes[p->op];
        in[k] = k < p->n_dq ? g->nodes[p->dq[k]].inputs[0] : n->inputs[k];
        if (k >= p->n_dq || !p->table[k])
            continue;
        int x = in[k], v = in[k] = xf_graph_add_value(g, NULL, yt, &g->values[x].shape);
        xf_tensor *t = p->table[k];
        p->table[k] = NULL;
        if (v < 0 || add_lookup(g, x, t, v, g->nodes[p->op].name) < 0) {
            if (v < 0)
                xf_tensor_release(t);
            release_tables(p);
            return -1;
        }
    }
    return xf_graph_copy_node(g, &g->nodes[p->op], in, &y);
}

/* Appends the QLinearConv, QLinearMatMul, QLinearAdd or QLinearMul of p;
 * its node index or -1 when out of memory. */
static int add_qdq_product(xf_graph *g, const qdq_product *p)
{
    char name[512];
    snprintf(name, sizeof name, "%s", g->nodes[p->product].name ? g->nodes[p->product].name : "");
    int y = g->nodes[p->q].outputs[0];
    int i = xf_graph_add_node(g, p->op, name, p->n_inputs, p->inputs, 1, &y);
    if (i < 0)
        return -1;
    if (p->op == XF_OP_QLINEAR_CONV || p->op == XF_OP_QLINEAR_MATMUL) { /* the geometry */
        xf_tensor *kept = g->nodes[i].attrs.value;
        g->nodes[i].attrs = g->nodes[p->product].attrs;
        g->nodes[i].attrs.value = kept;
        g->nodes[i].attrs.activation = XF_ACT_NONE;
    }
    return i;
}

/* A QLinearConcat (ONNX Runtime's QOperator form of a Concat between QDQ
 * pairs: Y_scale, Y_zero_point, then X, X_scale, X_zero_point per input)
 * of constant parameters of one element as a Concat of codes, each input
 * whose table into the output's codes (cpu_ref's: xf_rt_qlinear_table) is
 * not the identity looked up in it first: the same bytes.  False when n
 * is not such a node; *nomem when memory ran out. */
static bool add_qconcat(xf_graph *g, int i, bool *nomem)
{
    const xf_node *n = &g->nodes[i];
    int y = n->n_outputs == 1 ? n->outputs[0] : -1, parts = (n->n_inputs - 2) / 3;
    if (n->op != XF_OP_MS_QLINEAR_CONCAT || y < 0 || parts < 1 || (n->n_inputs - 2) % 3 ||
        parts > XF_QDQ_MAX_DATA || !codes(&g->values[y]))
        return false;
    for (int k = 0; k < n->n_inputs; k++) {
        int v = n->inputs[k];
        bool data = k >= 2 && (k - 2) % 3 == 0, scale = k == 0 || (k >= 2 && (k - 2) % 3 == 1);
        if (v < 0 || (data ? g->values[v].dtype != g->values[y].dtype
                           : !g->values[v].init || xf_shape_numel(&g->values[v].shape) != 1 ||
                                 (scale && g->values[v].dtype != XF_DT_FLOAT)))
            return false;
    }
    const xf_tensor *ys = g->values[n->inputs[0]].init, *yz = g->values[n->inputs[1]].init;
    int in[XF_QDQ_MAX_DATA];
    xf_dtype t = g->values[y].dtype;
    char name[512];
    snprintf(name, sizeof name, "%s", n->name ? n->name : "");
    int64_t axis = n->attrs.axis;
    for (int p = 0; p < parts; p++) {
        const xf_node *c = &g->nodes[i];
        const xf_tensor *xs = g->values[c->inputs[3 + 3 * p]].init, *xz = g->values[c->inputs[4 + 3 * p]].init;
        in[p] = c->inputs[2 + 3 * p];
        xf_shape s = xf_shape_make(1, (int64_t[]){256});
        xf_tensor *table = xf_tensor_create(t, &s);
        if (!table) {
            *nomem = true;
            return true;
        }
        xf_rt_qlinear_table(t, *(const float *)xs->data, (int32_t)xf_rt_load_i64(xz->dtype, xz->data, 0),
                            *(const float *)ys->data, (int32_t)xf_rt_load_i64(yz->dtype, yz->data, 0), 0, 0.0f,
                            table->data);
        bool same = true;
        for (int k = 0; same && k < 256; k++)
            same = ((const uint8_t *)table->data)[k] == k;
        if (same) {
            xf_tensor_release(table);
            continue;
        }
        int x = in[p], v = in[p] = xf_graph_add_value(g, NULL, t, &g->values[x].shape);
        if (v < 0 || add_lookup(g, x, table, v, name) < 0) {
            if (v < 0)
                xf_tensor_release(table);
            *nomem = true;
            return true;
        }
    }
    int cat = xf_graph_add_node(g, XF_OP_CONCAT, name, parts, in, 1, &y);
    if (cat < 0)
        *nomem = true;
    else
        g->nodes[cat].attrs.axis = axis;
    return true;
}

bool xf_dn_lower_qdq(xf_graph *g, const xf_dn_lowering *low, int i, bool *nomem)
{
    qdq_product qc;
    lut_chain lc;
    qdq_transparent tc;
    if (add_qconcat(g, i, nomem)) {
        low->keep[i] = false;
        return true;
    }
    if (lut_chain_of(g, low, i, &lc)) {
        if (!add_lut(g, &lc, nomem))
            return *nomem;
        for (int j = 0; j < lc.n; j++) {
            const lut_step *st = &lc.s[j];
            low->keep[st->f] = false;
            if (st->q >= 0)
                low->keep[st->q] = false;
            if (st->dq >= 0)
                low->absorbed[st->dq]++;
            if (st->other_dq >= 0)
                low->absorbed[st->other_dq]++;
        }
        return true;
    }
    if ((low->exact_int8 && qdq_product_of(g, low->reader, low->n_values, i, &qc)) ||
        qdq_binary_of(g, low->reader, low->n_values, i, &qc)) {
        *nomem = add_qdq_product(g, &qc) < 0;
        low->keep[qc.product] = low->keep[qc.q] = false;
        for (int k = 0; k < 3; k++)
            if (qc.dq[k] >= 0)
                low->absorbed[qc.dq[k]]++;
        return true;
    }
    if (qdq_transparent_of(g, low, i, &tc)) {
        *nomem = add_transparent(g, &tc) < 0;
        low->keep[tc.op] = low->keep[tc.q] = false;
        for (int k = 0; k < tc.n_dq; k++)
            low->absorbed[tc.dq[k]]++;
        return true;
    }
    return false;
}
