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
 * bias.  It also takes uint8 weights with a zero point per column, which
 * the MatMulInteger kernel does not.
 *
 * QDQ models' groups run as the integer ops ONNX Runtime fuses them into
 * (cpu_dnnl_lower_qdq.c).
 *
 * Layer and RMS normalizations written out run as one node
 * (cpu_dnnl_lower_norm.c).
 *
 * The written model is not touched: this is how the backend runs it. */
#include "cpu_dnnl_lower.h"

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
int xf_dn_add_constant(xf_graph *g, const char *base, const char *suffix, xf_tensor *t)
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
    int in[6] = {m->inputs[0], xf_dn_add_constant(g, base, "_nbits", b),
                 xf_dn_add_constant(g, base, "_nbits_scales", s), xf_dn_add_constant(g, base, "_nbits_zero_points", z),
                 -1, p->bias};
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
    int in[4] = {xf_dn_add_constant(g, base, "_gbq", data), ga->inputs[1], g->nodes[p->dq].inputs[1],
                 xf_dn_add_constant(g, base, "_gbq_zero_points", z)};
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
int xf_dn_only_reader(const xf_graph *g, const int *reader, int n_values, int v)
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

int xf_dn_other_operand(const xf_graph *g, int q, xf_op op, int v)
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
    int cast = xf_dn_only_reader(g, reader, n_values, m->outputs[0]);
    if (cast < 0 || g->nodes[cast].op != XF_OP_CAST || g->nodes[cast].attrs.to != XF_DT_FLOAT ||
        g->nodes[cast].n_outputs != 1)
        return false;
    int f = g->nodes[cast].outputs[0], mul = xf_dn_only_reader(g, reader, n_values, f);
    int scale = xf_dn_other_operand(g, mul, XF_OP_MUL, f);
    const xf_shape *y = &g->values[f].shape;
    int64_t cols = b->shape.dims[1];
    if (scale < 0 || y->ndim < 1 || !(row_of(g, scale, y, 1) || row_of(g, scale, y, cols)))
        return false;
    int x = g->nodes[mul].outputs[0], add = xf_dn_only_reader(g, reader, n_values, x);
    int bias = xf_dn_other_operand(g, add, XF_OP_ADD, x);
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
    int one = xf_dn_add_constant(g, g->values[m->outputs[0]].name, "_unit_scale", t);
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

/* A float 1-D Conv of constant weights and static shapes (ONNX's Conv of
 * 3-D tensors), which runs as a 2-D one of height 1. */
static bool conv1d_of(const xf_graph *g, int i)
{
    const xf_node *n = &g->nodes[i];
    if (n->op != XF_OP_CONV || n->n_inputs < 2 || n->n_inputs > 3 || n->n_outputs != 1 || n->outputs[0] < 0 ||
        xf_dn_input(n, 0) < 0 || xf_dn_input(n, 1) < 0 || !xf_dn_is_f32(g, n->inputs[0]) ||
        !xf_dn_is_f32(g, n->outputs[0]) || n->attrs.n_spatial > 1)
        return false;
    const xf_shape *x = &g->values[n->inputs[0]].shape, *y = &g->values[n->outputs[0]].shape;
    const xf_tensor *w = xf_graph_constant(g, n->inputs[1]);
    return x->ndim == 3 && y->ndim == 3 && w && w->dtype == XF_DT_FLOAT && w->shape.ndim == 3 &&
           xf_shape_numel(x) > 0 && xf_shape_numel(y) > 0;
}

int xf_dn_value_after(xf_graph *g, int v, const char *suffix, const xf_shape *s)
{
    const char *base = g->values[v].name ? g->values[v].name : "";
    char name[512];
    snprintf(name, sizeof name, "%.400s%s", base, suffix);
    for (int i = 2; xf_graph_find_value(g, name) >= 0; i++)
        snprintf(name, sizeof name, "%.400s%s_%d", base, suffix, i);
    return xf_graph_add_value(g, name, XF_DT_FLOAT, s);
}

int xf_dn_reshaped(xf_graph *g, int v, const xf_shape *to, int y, const char *suffix)
{
    xf_shape one = xf_shape_make(1, (int64_t[]){to->ndim});
    xf_tensor *t = xf_tensor_create(XF_DT_INT64, &one);
    for (int d = 0; t && d < to->ndim; d++)
        ((int64_t *)t->data)[d] = to->dims[d];
    int shape = xf_dn_add_constant(g, g->values[v].name ? g->values[v].name : "", "_shape", t);
    if (shape >= 0 && y < 0)
        y = xf_dn_value_after(g, v, suffix, to);
    if (shape < 0 || y < 0 || xf_graph_add_node(g, XF_OP_RESHAPE, NULL, 2, (int[]){v, shape}, 1, &y) < 0)
        return -1;
    return y;
}

/* Appends the Reshape to [N, C, 1, W], the 2-D Conv (kernel 1 x k,
 * weights [M, C/G, 1, k], nothing along H) and the Reshape back that
 * compute 1-D Conv i's output; -1 when out of memory. */
static int add_conv2d(xf_graph *g, int i)
{
    xf_node n = g->nodes[i];
    xf_attrs a = n.attrs;
    const xf_shape xs = g->values[n.inputs[0]].shape, ys = g->values[n.outputs[0]].shape;
    const xf_tensor *w = xf_graph_constant(g, n.inputs[1]);
    xf_shape w4 = xf_shape_make(4, (int64_t[]){w->shape.dims[0], w->shape.dims[1], 1, w->shape.dims[2]});
    xf_tensor *t = xf_tensor_create(XF_DT_FLOAT, &w4);
    if (t)
        memcpy(t->data, w->data, sizeof(float) * (size_t)xf_tensor_numel(t));
    int wv = xf_dn_add_constant(g, g->values[n.inputs[1]].name ? g->values[n.inputs[1]].name : "", "_2d", t);
    xf_shape x4 = xf_shape_make(4, (int64_t[]){xs.dims[0], xs.dims[1], 1, xs.dims[2]});
    xf_shape y4 = xf_shape_make(4, (int64_t[]){ys.dims[0], ys.dims[1], 1, ys.dims[2]});
    int xv = wv < 0 ? -1 : xf_dn_reshaped(g, n.inputs[0], &x4, -1, "_2d");
    int yv = xv < 0 ? -1 : xf_dn_value_after(g, n.outputs[0], "_2d", &y4);
    /* nothing along H: kernel 1 (0: the weights'), stride 1, dilation 1,
     * no pads (ONNX's order: the begins, then the ends) */
    a.kernel[1] = a.kernel[0], a.strides[1] = a.strides[0], a.dilations[1] = a.dilations[0];
    a.kernel[0] = a.kernel[1] > 0 ? 1 : 0, a.strides[0] = 1, a.dilations[0] = 1;
    int64_t begin = a.pads[0], end = a.pads[1];
    a.pads[0] = 0, a.pads[1] = begin, a.pads[2] = 0, a.pads[3] = end;
    a.n_spatial = a.n_spatial ? 2 : 0;
    int in[3] = {xv, wv, n.n_inputs > 2 ? n.inputs[2] : -1};
    int c = yv < 0 ? -1 : xf_graph_add_node(g, XF_OP_CONV, n.name, n.n_inputs, in, 1, &yv);
    if (c < 0)
        return -1;
    g->nodes[c].attrs = a;
    return xf_dn_reshaped(g, yv, &ys, n.outputs[0], "_1d") < 0 ? -1 : c;
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
        xf_dn_lowering low = {reader, v0, keep, absorbed, exact_int8};
        if (!keep[i]) /* a later step of a chain replaced before */
            continue;
        if (xf_dn_lower_qdq(g, &low, i, &nomem)) {
            if (nomem)
                break;
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
        } else if (conv1d_of(g, i)) {
            nomem = add_conv2d(g, i) < 0;
            keep[i] = false;
        } else if (xf_dn_lower_norm(g, &low, i, &nomem) || xf_dn_lower_reduce(g, &low, i, &nomem)) {
            if (nomem)
                break;
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
