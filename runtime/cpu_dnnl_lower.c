/* Rewrites the cpu backend makes on a session's graph before running it:
 * forms it runs faster, computing the same values.
 *
 * A weight-only 4-bit model in QDQ form (ONNX Runtime's
 * MatMulNBitsQuantizer with quant_format QDQ, ModelOpt's INT4 exports)
 * holds its weights as int4 or uint4 constants that a DequantizeLinear
 * expands, in blocks along the input dim, for a MatMul.  Run as written,
 * every run would dequantize every weight again.  Such a pair runs as one
 * MatMulNBits over the same codes, scales and zero points, repacked once
 * (a Gemm of transB 1 reading N x K weights blocked along K takes them as
 * they are, and its bias C as MatMulNBits' bias; scales per output
 * channel are blocks of all of K)
 * into its layout (column by column, the codes of a block two to a byte;
 * int4 codes and zero points moved up by 8 into uint4, which leaves every
 * difference code - zero point as it was), at accuracy level 0: the
 * weights it dequantizes are the DequantizeLinear's, and the products are
 * in float as MatMul's.
 *
 * A Gather along axis 0 of such a DequantizeLinear of a V x H table
 * blocked along H (a quantized embedding) would dequantize the whole table
 * at every run for the few rows it reads: it runs as one
 * GatherBlockQuantized over the same codes, which dequantizes only the
 * rows gathered (the same values: (q - zero point) * scale in float), and
 * which, made here, refuses an index out of range as Gather does.  The
 * DequantizeLinear goes when nothing else reads it (a tied output
 * projection still does).
 *
 * ONNX Runtime's quantize_dynamic writes every MatMul as a
 * MatMulInteger of constant 8-bit weights whose int32 product a Cast
 * makes float, a Mul scales (by A's scale times B's, one or one per
 * column) and an Add of a constant row biases.  Run as written, each of
 * these is a pass over the product; with int8 products exact on this CPU
 * the chain runs as one MatMulIntegerToFloat, whose scaling and bias are
 * one pass after oneDNN's product and give the same values: the int32
 * sums made float, times the Mul's operand (the other scale 1), plus the
 * bias.  It also takes uint8 weights with zero points, which the
 * MatMulInteger kernel does not.
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
 * one-input elementwise op on floats) and a QuantizeLinear.  Such a chain
 * maps each of the 256 codes to one output code, so it runs as a Gather
 * from a table of 256 codes (the input cast to int32: int8 codes index
 * the table's upper half as negative indices), which cpu_ref fills by
 * running the chain once on every code: the float graph's values
 * exactly.
 *
 * The written model is not touched: this is how the backend runs it. */
#include "cpu_dnnl.h"
#include "xf_runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What a DequantizeLinear + MatMul (or Gemm) pair takes to run as
 * MatMulNBits. */
typedef struct nbits_pair {
    int dq, mm;           /* the nodes */
    const xf_tensor *w;   /* K x N codes, int4 or uint4 (N x K when by_row) */
    const xf_tensor *scale, *zero_point; /* (K / block) x N, or N x (K / block); zero_point NULL when absent */
    int64_t k, n, block;
    bool by_row;          /* a Gemm's transposed B: each row of w is a column of the product */
    int bias;             /* a Gemm's C (1-D, N), else -1 */
} nbits_pair;

static bool is_pow2(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

/* A Gemm that is A times B transposed plus an optional constant 1-D C
 * of n. */
static bool gemm_takes_nbits(const xf_graph *g, const xf_node *m)
{
    const xf_attrs *a = &m->attrs;
    if (a->trans_a || !a->trans_b || a->alpha != 1.0f || g->values[m->inputs[0]].shape.ndim != 2)
        return false;
    if (m->n_inputs < 3 || m->inputs[2] < 0)
        return true;
    const xf_value *c = &g->values[m->inputs[2]];
    const xf_value *b = &g->values[m->inputs[1]];
    return a->beta == 1.0f && xf_graph_constant(g, m->inputs[2]) && c->dtype == XF_DT_FLOAT && c->shape.ndim == 1 &&
           b->shape.ndim == 2 && c->shape.dims[0] == b->shape.dims[0];
}

/* Whether d is a DequantizeLinear of constant 2-D int4 or uint4 codes w
 * with constant float scales and, when given, constant zero points zp
 * (else NULL). */
static bool dq_of_codes(const xf_graph *g, const xf_node *d, const xf_tensor **w, const xf_tensor **scale,
                        const xf_tensor **zp)
{
    if (d->op != XF_OP_DEQUANTIZE_LINEAR || d->n_inputs < 2 || d->n_outputs != 1)
        return false;
    bool has_zp = d->n_inputs > 2 && d->inputs[2] >= 0;
    *w = xf_graph_constant(g, d->inputs[0]);
    *scale = xf_graph_constant(g, d->inputs[1]);
    *zp = has_zp ? xf_graph_constant(g, d->inputs[2]) : NULL;
    if (!*w || !*scale || (has_zp && !*zp))
        return false;
    return ((*w)->dtype == XF_DT_INT4 || (*w)->dtype == XF_DT_UINT4) && (*w)->shape.ndim == 2 &&
           (*scale)->dtype == XF_DT_FLOAT;
}

/* Whether MatMul node mm (or a Gemm A B^T + C) reads, as its B, a
 * DequantizeLinear of constant 4-bit codes blocked along the input dim
 * that nothing else reads. */
static bool nbits_pair_of(const xf_graph *g, int mm, nbits_pair *p)
{
    const xf_node *m = &g->nodes[mm];
    bool gemm = m->op == XF_OP_GEMM;
    if ((m->op != XF_OP_MATMUL || m->n_inputs != 2) && !gemm)
        return false;
    if (m->inputs[0] < 0 || m->inputs[1] < 0 || m->outputs[0] < 0 || (gemm && !gemm_takes_nbits(g, m)))
        return false;
    int b = m->inputs[1], dq = g->values[b].producer;
    if (dq < 0 || g->values[m->inputs[0]].dtype != XF_DT_FLOAT || g->values[b].dtype != XF_DT_FLOAT ||
        xf_graph_count_uses(g, b) != 1 || xf_graph_is_output(g, b))
        return false;
    const xf_node *d = &g->nodes[dq];
    const xf_tensor *w, *scale, *zp;
    if (!dq_of_codes(g, d, &w, &scale, &zp))
        return false;
    int64_t k = w->shape.dims[gemm], n = w->shape.dims[!gemm], block = d->attrs.block_size;
    int64_t axis = d->attrs.axis < 0 ? d->attrs.axis + 2 : d->attrs.axis;
    /* per output channel (one scale per column of the product) is one
     * block of k */
    bool per_channel = block == 0 && axis == !gemm && scale->shape.ndim == 1;
    if (per_channel)
        block = k;
    else if (axis != gemm)
        return false;
    if (!is_pow2(block) || block < 16 || k % block || n < 1)
        return false;
    xf_shape blocks = per_channel ? xf_shape_make(1, (int64_t[]){n})
                      : gemm      ? xf_shape_make(2, (int64_t[]){n, k / block})
                                  : xf_shape_make(2, (int64_t[]){k / block, n});
    if (!xf_shape_equal(&scale->shape, &blocks) ||
        (zp && (zp->dtype != w->dtype || !xf_shape_equal(&zp->shape, &blocks))))
        return false;
    *p = (nbits_pair){dq, mm, w, scale, zp, k, n, block, gemm, gemm && m->n_inputs > 2 ? m->inputs[2] : -1};
    return true;
}

/* Element i of 4-bit codes t as uint4: int4 moved up by 8. */
static unsigned code_of(const xf_tensor *t, int64_t i)
{
    unsigned c = xf_rt_packed_code(t->dtype, t->data, i);
    return t->dtype == XF_DT_INT4 ? (c ^ 8u) : c;
}

/* A new initializer of g named after base, holding t (released). */
static int add_constant(xf_graph *g, const char *base, const char *suffix, xf_tensor *t)
{
    /* base cut short, so that the numbers that tell names apart fit */
    char name[512];
    snprintf(name, sizeof name, "%.400s%s", base, suffix);
    for (int i = 2; xf_graph_find_value(g, name) >= 0; i++)
        snprintf(name, sizeof name, "%.400s%s_%d", base, suffix, i);
    int v = t ? xf_graph_add_initializer(g, name, t) : -1;
    xf_tensor_release(t);
    return v;
}

/* Appends the MatMulNBits that computes p's MatMul output; its node index
 * or -1 when out of memory. */
static int add_nbits(xf_graph *g, const nbits_pair *p)
{
    int64_t blocks = p->k / p->block, blob = p->block / 2, zrow = (blocks + 1) / 2;
    xf_shape bs = xf_shape_make(3, (int64_t[]){p->n, blocks, blob}), ss = xf_shape_make(1, (int64_t[]){p->n * blocks}),
             zs = xf_shape_make(1, (int64_t[]){p->n * zrow});
    xf_tensor *b = xf_tensor_create(XF_DT_UINT8, &bs), *s = xf_tensor_create(XF_DT_FLOAT, &ss),
              *z = xf_tensor_create(XF_DT_UINT8, &zs);
    int64_t count = p->k * p->n; /* even: k is whole blocks of 16 or more */
    uint8_t *codes = p->by_row ? NULL : malloc((size_t)count);
    if (!b || !s || !z || (!p->by_row && !codes)) {
        xf_tensor_release(b);
        xf_tensor_release(s);
        xf_tensor_release(z);
        free(codes);
        return -1;
    }
    uint8_t *bd = b->data, *zd = z->data;
    float *sd = s->data;
    const float *scale = p->scale->data;
    /* column c's codes in order, two to a byte: a Gemm's N x K codes as
     * they are; a MatMul's K x N ones unpacked, then read down columns */
    const uint8_t *src = p->w->data;
    uint8_t flip = p->w->dtype == XF_DT_INT4 ? 0x88 : 0;
    if (p->by_row) {
        for (int64_t i = 0; i < count / 2; i++)
            bd[i] = src[i] ^ flip;
    } else {
        for (int64_t i = 0; i < count; i++)
            codes[i] = (uint8_t)((src[i / 2] ^ flip) >> (i % 2 * 4) & 15);
        /* in squares of 64 x 64 codes, which stay in cache */
        for (int64_t r0 = 0; r0 < p->k; r0 += 64)
            for (int64_t c0 = 0; c0 < p->n; c0 += 64)
                for (int64_t c = c0; c < c0 + 64 && c < p->n; c++)
                    for (int64_t r = r0; r < r0 + 64 && r < p->k; r++) {
                        int64_t at = c * p->k + r;
                        bd[at / 2] = (uint8_t)(bd[at / 2] | codes[r * p->n + c] << (at % 2 * 4));
                    }
        free(codes);
    }
    for (int64_t c = 0; c < p->n; c++)
        for (int64_t q = 0; q < blocks; q++) {
            int64_t at = p->by_row ? c * blocks + q : q * p->n + c;
            sd[c * blocks + q] = scale[at];
            /* an absent zero point is 0: code 8 for int4, 0 for uint4 */
            unsigned zc = p->zero_point ? code_of(p->zero_point, at) : p->w->dtype == XF_DT_INT4 ? 8u : 0u;
            zd[c * zrow + q / 2] = (uint8_t)(zd[c * zrow + q / 2] | zc << (q % 2 * 4));
        }
    const xf_node *m = &g->nodes[p->mm];
    const char *base = g->values[g->nodes[p->dq].inputs[0]].name;
    int in[6] = {m->inputs[0], add_constant(g, base, "_nbits", b), add_constant(g, base, "_nbits_scales", s),
                 add_constant(g, base, "_nbits_zero_points", z), -1, p->bias};
    if (in[1] < 0 || in[2] < 0 || in[3] < 0)
        return -1;
    int y = g->nodes[p->mm].outputs[0];
    char name[512];
    snprintf(name, sizeof name, "%s", g->nodes[p->mm].name ? g->nodes[p->mm].name : "");
    int i = xf_graph_add_node(g, XF_OP_MS_MATMUL_NBITS, name, p->bias >= 0 ? 6 : 4, in, 1, &y);
    if (i < 0)
        return -1;
    xf_attn_attrs *t = &g->nodes[i].attrs.attn;
    t->nb_k = p->k;
    t->nb_n = p->n;
    t->nb_bits = 4;
    t->nb_block = p->block;
    t->nb_accuracy = 0;
    return i;
}

/* A Gather along axis 0 of a DequantizeLinear of constant V x H 4-bit
 * codes blocked along H (an embedding table): it runs as one
 * GatherBlockQuantized that dequantizes the rows gathered, not the
 * table. */
typedef struct gather_pair {
    int dq, gather;
    const xf_tensor *w, *scale, *zero_point; /* V x H codes; V x ceil(H / block); NULL when absent */
    int64_t rows, cols, block;
} gather_pair;

static bool gather_pair_of(const xf_graph *g, int gi, gather_pair *p)
{
    const xf_node *ga = &g->nodes[gi];
    if (ga->op != XF_OP_GATHER || ga->n_inputs != 2 || ga->inputs[0] < 0 || ga->inputs[1] < 0 ||
        ga->outputs[0] < 0 || (ga->attrs.axis != 0 && ga->attrs.axis != -2))
        return false;
    int t = ga->inputs[0], dq = g->values[t].producer;
    xf_dtype it = g->values[ga->inputs[1]].dtype;
    if (dq < 0 || g->values[t].dtype != XF_DT_FLOAT || (it != XF_DT_INT32 && it != XF_DT_INT64))
        return false;
    const xf_node *d = &g->nodes[dq];
    const xf_tensor *w, *scale, *zp;
    if (!dq_of_codes(g, d, &w, &scale, &zp))
        return false;
    int64_t rows = w->shape.dims[0], cols = w->shape.dims[1], block = d->attrs.block_size;
    if ((d->attrs.axis != 1 && d->attrs.axis != -1) || !is_pow2(block) || block < 16 || cols % 2 || rows < 1)
        return false;
    xf_shape blocks = xf_shape_make(2, (int64_t[]){rows, (cols + block - 1) / block});
    if (!xf_shape_equal(&scale->shape, &blocks) ||
        (zp && (zp->dtype != w->dtype || !xf_shape_equal(&zp->shape, &blocks))))
        return false;
    *p = (gather_pair){dq, gi, w, scale, zp, rows, cols, block};
    return true;
}

/* Appends the GatherBlockQuantized that computes p's Gather output: the
 * codes as uint4 two to a byte (int4 moved up by 8), the zero points
 * likewise (an absent one 0); its node index or -1 when out of memory. */
static int add_gather(xf_graph *g, const gather_pair *p)
{
    int64_t blocks = (p->cols + p->block - 1) / p->block, zrow = (blocks + 1) / 2;
    xf_shape ds = xf_shape_make(2, (int64_t[]){p->rows, p->cols / 2});
    xf_shape zs = xf_shape_make(2, (int64_t[]){p->rows, zrow});
    xf_tensor *data = xf_tensor_create(XF_DT_UINT8, &ds), *z = xf_tensor_create(XF_DT_UINT8, &zs);
    if (!data || !z) {
        xf_tensor_release(data);
        xf_tensor_release(z);
        return -1;
    }
    /* ONNX's 4-bit codes are packed two to a byte, the first in the low
     * nibble, as GatherBlockQuantized's: an even row starts a byte */
    const uint8_t *src = p->w->data;
    uint8_t *dd = data->data, *zd = z->data, flip = p->w->dtype == XF_DT_INT4 ? 0x88 : 0;
    for (int64_t i = 0; i < p->rows * p->cols / 2; i++)
        dd[i] = src[i] ^ flip;
    for (int64_t r = 0; r < p->rows; r++)
        for (int64_t q = 0; q < blocks; q++) {
            unsigned zc = p->zero_point ? code_of(p->zero_point, r * blocks + q) : p->w->dtype == XF_DT_INT4 ? 8u : 0u;
            zd[r * zrow + q / 2] = (uint8_t)(zd[r * zrow + q / 2] | zc << (q % 2 * 4));
        }
    const xf_node *ga = &g->nodes[p->gather];
    const char *base = g->values[g->nodes[p->dq].inputs[0]].name;
    int in[4] = {add_constant(g, base, "_gbq", data), ga->inputs[1], g->nodes[p->dq].inputs[1],
                 add_constant(g, base, "_gbq_zero_points", z)};
    if (in[0] < 0 || in[3] < 0)
        return -1;
    int y = g->nodes[p->gather].outputs[0];
    char name[512];
    snprintf(name, sizeof name, "%s", g->nodes[p->gather].name ? g->nodes[p->gather].name : "");
    int i = xf_graph_add_node(g, XF_OP_MS_GATHER_BLOCK_QUANTIZED, name, 4, in, 1, &y);
    if (i < 0)
        return -1;
    xf_attrs *a = &g->nodes[i].attrs;
    a->axis = 1;
    a->attn.nb_bits = 4;
    a->attn.nb_block = p->block;
    a->attn.gbq_checked = 1;
    return i;
}

/* A MatMulInteger -> Cast -> Mul [-> Add] chain of int_float_of. */
typedef struct int_float_chain {
    int mi, cast, mul, add; /* the nodes; add -1 when absent */
    int scale, bias;        /* the Mul's other operand; the Add's constant, else -1 */
    bool per_column;        /* the scale holds one value per column of the product, else one */
} int_float_chain;

/* The node that alone reads value v of the original graph (not a graph
 * output), else -1; reader[v]: the last node reading v. */
static int only_reader(const xf_graph *g, const int *reader, int n_values, int v)
{
    return v >= 0 && v < n_values && xf_graph_count_uses(g, v) == 1 && !xf_graph_is_output(g, v) ? reader[v] : -1;
}

/* Whether value v holds `count` floats along the last dim of a tensor of
 * shape y (one, or its last dim's). */
static bool row_of(const xf_graph *g, int v, const xf_shape *y, int64_t count)
{
    const xf_shape *s = &g->values[v].shape;
    return g->values[v].dtype == XF_DT_FLOAT && xf_shape_numel(s) == count &&
           (count == 1 || (s->ndim > 0 && s->dims[s->ndim - 1] == y->dims[y->ndim - 1]));
}

/* The binary node q of value v (which it reads once) and another operand
 * (either side), its output of v's shape: that operand, else -1. */
static int other_operand(const xf_graph *g, int q, xf_op op, int v)
{
    const xf_node *n = q >= 0 ? &g->nodes[q] : NULL;
    if (!n || n->op != op || n->n_inputs != 2 || n->n_outputs != 1 || n->outputs[0] < 0 ||
        !xf_shape_equal(&g->values[n->outputs[0]].shape, &g->values[v].shape))
        return -1;
    return n->inputs[n->inputs[0] == v ? 1 : 0];
}

static bool int_float_of(const xf_graph *g, const int *reader, int n_values, int mi, int_float_chain *p)
{
    const xf_node *m = &g->nodes[mi];
    if (m->op != XF_OP_MATMUL_INTEGER || m->n_outputs != 1 || m->inputs[0] < 0 || m->inputs[1] < 0)
        return false;
    const xf_tensor *b = xf_graph_constant(g, m->inputs[1]);
    const xf_value *a = &g->values[m->inputs[0]];
    int a_zp = m->n_inputs > 2 ? m->inputs[2] : -1, b_zp = m->n_inputs > 3 ? m->inputs[3] : -1;
    if (!b || b->shape.ndim != 2 || a->shape.ndim < 1 || a->shape.dims[a->shape.ndim - 1] != b->shape.dims[0] ||
        (a_zp >= 0 && xf_shape_numel(&g->values[a_zp].shape) != 1) ||
        (b_zp >= 0 && xf_shape_numel(&g->values[b_zp].shape) != 1 &&
         xf_shape_numel(&g->values[b_zp].shape) != b->shape.dims[1]))
        return false;
    int cast = only_reader(g, reader, n_values, m->outputs[0]);
    if (cast < 0 || g->nodes[cast].op != XF_OP_CAST || g->nodes[cast].attrs.to != XF_DT_FLOAT ||
        g->nodes[cast].n_outputs != 1)
        return false;
    int f = g->nodes[cast].outputs[0], mul = only_reader(g, reader, n_values, f);
    int scale = other_operand(g, mul, XF_OP_MUL, f);
    const xf_shape *y = &g->values[f].shape;
    int64_t cols = b->shape.dims[1];
    if (scale < 0 || y->ndim < 1 || !(row_of(g, scale, y, 1) || row_of(g, scale, y, cols)))
        return false;
    int x = g->nodes[mul].outputs[0], add = only_reader(g, reader, n_values, x);
    int bias = other_operand(g, add, XF_OP_ADD, x);
    if (bias < 0 || !xf_graph_constant(g, bias) || !row_of(g, bias, y, cols))
        add = bias = -1;
    *p = (int_float_chain){mi, cast, mul, add, scale, bias, xf_shape_numel(&g->values[scale].shape) != 1};
    return true;
}

/* Appends the MatMulIntegerToFloat that computes p's last output; its
 * node index or -1 when out of memory. */
static int add_int_float(xf_graph *g, const int_float_chain *p)
{
    xf_shape one_shape = xf_shape_make(0, NULL);
    xf_tensor *t = xf_tensor_create(XF_DT_FLOAT, &one_shape);
    if (t)
        *(float *)t->data = 1.0f;
    const xf_node *m = &g->nodes[p->mi];
    int one = add_constant(g, g->values[m->outputs[0]].name, "_unit_scale", t);
    if (one < 0)
        return -1;
    m = &g->nodes[p->mi];
    int in[7] = {m->inputs[0], m->inputs[1], p->per_column ? one : p->scale, p->per_column ? p->scale : one,
                 m->n_inputs > 2 ? m->inputs[2] : -1, m->n_inputs > 3 ? m->inputs[3] : -1, p->bias};
    int y = g->nodes[p->add >= 0 ? p->add : p->mul].outputs[0];
    char name[512];
    snprintf(name, sizeof name, "%s", m->name ? m->name : "");
    return xf_graph_add_node(g, XF_OP_MS_MATMUL_INTEGER_TO_FLOAT, name, 7, in, 1, &y);
}

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
        return !z || (z->dtype == t && xf_shape_numel(&z->shape) == 1) ? d : -1;
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
    int qi = only_reader(g, reader, n_values, c->outputs[0]);
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
    p->dq[1] = dq_of(g, c->inputs[1], XF_DT_INT8, m, axis, true);
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
    return (conv ? &xf_dn_qconv_handler : &xf_dn_qmatmul_handler)->handles(g, &qc);
}

/* The opset the chain's table is computed at: the nodes carry their
 * semantics in their attributes, which every opset since 21 reads alike. */
#define XF_LUT_OPSET 21

/* A DequantizeLinear -> f -> QuantizeLinear chain of lut_chain_of. */
typedef struct lut_chain {
    int dq, f, q;
} lut_chain;

static bool lut_chain_of(const xf_graph *g, const int *reader, int n_values, int fi, lut_chain *p)
{
    const xf_node *f = &g->nodes[fi];
    const xf_op_info *info = xf_op_get_info(f->op);
    if (!(info->flags & XF_OPF_ELEM) || info->max_inputs != 1 || f->n_inputs != 1 || f->n_outputs != 1 ||
        f->inputs[0] < 0 || f->outputs[0] < 0 || xf_node_draws_random(g, f) || f->attrs.activation != XF_ACT_NONE ||
        g->values[f->inputs[0]].dtype != XF_DT_FLOAT || g->values[f->outputs[0]].dtype != XF_DT_FLOAT)
        return false;
    *p = (lut_chain){dq_of(g, f->inputs[0], XF_DT_UNDEFINED, 0, 0, false), fi, qdq_output(g, reader, n_values, fi)};
    return p->dq >= 0 && p->q >= 0;
}

/* Value v of g (a constant, or -1) in graph t. */
static int const_in(xf_graph *t, const xf_graph *g, int v)
{
    return v < 0 ? -1 : xf_graph_add_initializer(t, NULL, g->values[v].init);
}

/* The 256 output codes of p's chain, code k's at k (int8 codes as their
 * bytes), run on cpu_ref; NULL when that fails. */
static xf_tensor *lut_of(const xf_graph *g, const lut_chain *p)
{
    const xf_node *d = &g->nodes[p->dq], *f = &g->nodes[p->f], *q = &g->nodes[p->q];
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
    int fv = xf_graph_add_value(t, NULL, XF_DT_FLOAT, &s);
    int yv = xf_graph_add_value(t, NULL, g->values[q->outputs[0]].dtype, &s);
    int din[3] = {x, const_in(t, g, d->inputs[1]), d->n_inputs > 2 ? const_in(t, g, d->inputs[2]) : -1};
    int qin[3] = {fv, const_in(t, g, q->inputs[1]), q->n_inputs > 2 ? const_in(t, g, q->inputs[2]) : -1};
    xf_session *run = NULL;
    xf_error err = {0};
    if (xf_graph_copy_node(t, d, din, &dv) >= 0 && xf_graph_copy_node(t, f, &dv, &fv) >= 0 &&
        xf_graph_copy_node(t, q, qin, &yv) >= 0) {
        xf_graph_add_output(t, yv);
        if (xf_session_create(t, XF_LUT_OPSET, "cpu_ref", NULL, &run, &err) != XF_OK ||
            xf_session_run(run, &codes, &table, &err) != XF_OK) {
            xf_tensor_release(table);
            table = NULL;
        }
    }
    xf_session_free(run);
    xf_graph_free(t);
    xf_tensor_release(codes);
    return table;
}

/* Replaces p's f and QuantizeLinear by a Cast of the codes to int32 and a
 * Gather from their table; false when out of memory or cpu_ref could not
 * run the chain (which then stays). */
static bool add_lut(xf_graph *g, const lut_chain *p, bool *nomem)
{
    xf_tensor *table = lut_of(g, p);
    if (!table)
        return false;
    int x = g->nodes[p->dq].inputs[0], y = g->nodes[p->q].outputs[0];
    char name[512];
    snprintf(name, sizeof name, "%s", g->nodes[p->f].name ? g->nodes[p->f].name : "");
    int tv = add_constant(g, g->values[y].name, "_table", table);
    int iv = tv < 0 ? -1 : xf_graph_add_value(g, NULL, XF_DT_INT32, &g->values[x].shape);
    int cast = iv < 0 ? -1 : xf_graph_add_node(g, XF_OP_CAST, name, 1, &x, 1, &iv);
    int gather = cast < 0 ? -1 : xf_graph_add_node(g, XF_OP_GATHER, name, 2, (int[]){tv, iv}, 1, &y);
    if (gather < 0) {
        *nomem = true;
        return false;
    }
    g->nodes[cast].attrs.to = XF_DT_INT32;
    g->nodes[gather].attrs.axis = 0;
    return true;
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

xf_status xf_dn_lower_graph(xf_graph *g, xf_error *err)
{
    int n0 = g->n_nodes, found = 0;
    bool *keep = malloc(sizeof *keep * (size_t)(n0 > 0 ? n0 : 1));
    /* per DequantizeLinear: the uses of its output that lowered nodes took over */
    int *absorbed = calloc((size_t)(n0 > 0 ? n0 : 1), sizeof *absorbed);
    int v0 = g->n_values, *reader = malloc(sizeof *reader * (size_t)(v0 > 0 ? v0 : 1));
    bool nomem = !keep || !absorbed || !reader, exact_int8 = xf_dn_exact_int8();
    for (int v = 0; !nomem && v < v0; v++)
        reader[v] = -1;
    for (int i = 0; !nomem && i < n0; i++) {
        keep[i] = true;
        for (int k = 0; k < g->nodes[i].n_inputs; k++)
            if (g->nodes[i].inputs[k] >= 0)
                reader[g->nodes[i].inputs[k]] = i;
    }
    for (int i = 0; !nomem && i < n0; i++) {
        nbits_pair p;
        gather_pair q;
        int_float_chain r;
        qdq_product qc;
        lut_chain lc;
        if (lut_chain_of(g, reader, v0, i, &lc)) {
            if (!add_lut(g, &lc, &nomem))
                continue;
            keep[lc.f] = keep[lc.q] = false;
            absorbed[lc.dq]++;
        } else if ((exact_int8 && qdq_product_of(g, reader, v0, i, &qc)) || qdq_binary_of(g, reader, v0, i, &qc)) {
            nomem = add_qdq_product(g, &qc) < 0;
            keep[qc.product] = keep[qc.q] = false;
            for (int k = 0; k < 3; k++)
                if (qc.dq[k] >= 0)
                    absorbed[qc.dq[k]]++;
        } else if (exact_int8 && int_float_of(g, reader, v0, i, &r)) {
            nomem = add_int_float(g, &r) < 0;
            keep[r.mi] = keep[r.cast] = keep[r.mul] = false;
            if (r.add >= 0)
                keep[r.add] = false;
        } else if (nbits_pair_of(g, i, &p)) {
            nomem = add_nbits(g, &p) < 0;
            keep[p.mm] = keep[p.dq] = false;
        } else if (gather_pair_of(g, i, &q)) {
            nomem = add_gather(g, &q) < 0;
            keep[q.gather] = false;
            absorbed[q.dq]++;
        } else {
            continue;
        }
        found++;
    }
    /* a DequantizeLinear whose every reader was lowered goes too */
    for (int i = 0; !nomem && found && i < n0; i++) {
        int v = g->nodes[i].n_outputs > 0 ? g->nodes[i].outputs[0] : -1;
        if (absorbed[i] && xf_graph_count_uses(g, v) == absorbed[i]) /* graph outputs count */
            keep[i] = false;
    }
    free(absorbed);
    free(reader);
    bool *all = nomem || !found ? NULL : realloc(keep, sizeof *all * (size_t)g->n_nodes);
    if (!all) {
        free(keep);
        return nomem || found ? xf_error_set(err, XF_ERR_NOMEM, "out of memory") : XF_OK;
    }
    for (int i = n0; i < g->n_nodes; i++)
        all[i] = true;
    xf_graph_compact(g, all);
    free(all);
    return xf_graph_toposort(g, err);
}
