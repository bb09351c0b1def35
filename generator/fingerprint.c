/* Exact evaluation for fingerprints: every op on tensors of residues modulo
 * p = 2^61 - 1.  Polynomial ops are computed exactly, so two graphs that
 * compute the same polynomial always agree, and different polynomials agree
 * on random inputs with probability at most degree/p (Schwartz-Zippel).
 *
 * What each op's fingerprint semantics preserves and loses:
 *
 *   op            semantics mod p                     preserves / loses
 *   ------------  ----------------------------------  -------------------------------------------
 *   MatMul        exact product                       all of linear algebra (associativity,
 *   Add, Mul      exact elementwise                     distributivity, linearity in each argument)
 *   Mul (scalar)  exact broadcast product             scalar laws
 *   Conv          exact correlation, zero padding,    linearity in input and weight, concat of
 *                   stride 1 or 2                       weights/inputs, identity kernels
 *   AveragePool   window sum times the inverse of     pooling as a conv with a constant kernel;
 *                   the window size (count_include_     needs count_include_pad=1 (a fixed divisor)
 *                   pad=1 only)
 *   Relu          max(v, floor) under a random total  elementwise laws, idempotence, fusion,
 *                   order of residues; floor is a       commuting with max pooling and data movement;
 *                   random residue standing for 0       loses relu(0) = 0 (no constants are enumerated),
 *                                                       loses relu(s*x) = s*relu(x) for s > 0 and
 *                                                       everything tied to the order of the reals
 *   MaxPool       max under the same random order      commuting with Relu, concat, split;
 *                   over the window inside the image    loses laws that need the real order
 *                                                       (e.g. maxpool(x + c) = maxpool(x) + c)
 *   Sigmoid,Tanh  random functions                    elementwise laws only (commuting with data
 *                                                       movement); loses monotonicity and odd symmetry
 *   Conv + Relu   Conv, then Relu as above            the fusion law conv-then-relu
 *   Conv + bias   Conv, plus the bias of each output    bias laws: concatenated biases of merged
 *                   channel (before a fused Relu)       convolutions, sums and scalings of biases
 *   Pad           exact zero padding (constant mode,  kernel enlargement: a zero-padded kernel
 *                   value 0, pads in attribute form)    convolves as the smaller one with less padding
 *   Concat,Split, exact data movement                 all data-movement laws
 *   Transpose
 *   constants     identity kernels and matrix: exact  the laws of identities and of pooling as a
 *                   0/1; pooling kernel: the inverse    convolution with the pooling kernel, exactly
 *                   of the window size on its diagonal  (they only enter MatMul, Add, Conv, Concat)
 *
 * The random order, floor and functions are drawn anew for each of the
 * GEN_TRIALS evaluations (see `model`).
 *
 * Every candidate pair is then evaluated anew in further rounds, each of
 * GEN_TRIALS trials under fresh models and inputs (gen_fingerprint_graph
 * with a later first model; see gen_exact_recheck in checks.c): accidents
 * of the model that grouping could not afford to rule out for billions of
 * graphs (Relu outputs of a few elements all below the floor in every
 * trial) are ruled out for the few pairs it makes.  Whatever still looks
 * equal but is not a law of the reals would be caught by the numerical
 * check on cpu_ref; whatever the model loses is simply not found. */
#include "gen_internal.h"

#include <stdlib.h>
#include <string.h>

/* Each trial is an independent random model: its own order, Relu floor and
 * Sigmoid and Tanh functions, not only its own inputs.  Then an accident of
 * one model (a constant such as sigmoid(sigmoid(floor)) that happens to sit
 * at the top of the order, so that every pooling window picks it) must
 * repeat in every trial to make a false law look true. */
typedef struct model {
    uint64_t order_salt, floor, floor_key, sigmoid_salt, tanh_salt;
} model;

static model model_for_trial(int t)
{
    /* Where the floor sits in the order, per trial: see relu_residue. */
    static const uint64_t floor_keys[] = {UINT64_C(0x8000000000000000), UINT64_C(0xC000000000000000),
                                          UINT64_C(0xF000000000000000)};
    uint64_t base = 0x6a09e667f3bcc908ull + 0x9e3779b97f4a7c15ull * (uint64_t)t;
    return (model){gen_mix64(base), gen_mix64(base + 1) % GEN_P,
                   floor_keys[t % (int)(sizeof floor_keys / sizeof floor_keys[0])], gen_mix64(base + 2),
                   gen_mix64(base + 3)};
}

uint64_t gen_mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

static inline uint64_t mod_add(uint64_t a, uint64_t b)
{
    uint64_t r = a + b;
    return r >= GEN_P ? r - GEN_P : r;
}

static inline uint64_t mod_mul(uint64_t a, uint64_t b)
{
    unsigned __int128 z = (unsigned __int128)a * b;
    uint64_t r = (uint64_t)(z & GEN_P) + (uint64_t)(z >> 61);
    return r >= GEN_P ? r - GEN_P : r;
}

/* Reduces a sum of up to 2^6 products of residues (each below 2^122). */
static inline uint64_t mod_reduce128(unsigned __int128 z)
{
    uint64_t lo = (uint64_t)(z & GEN_P), mid = (uint64_t)((z >> 61) & GEN_P), hi = (uint64_t)(z >> 122);
    return mod_add(mod_add(lo, mid), hi);
}

static uint64_t mod_pow(uint64_t b, uint64_t e)
{
    uint64_t r = 1;
    for (; e; e >>= 1, b = mod_mul(b, b))
        if (e & 1)
            r = mod_mul(r, b);
    return r;
}

/* Relu is max(v, floor) in a random order of the residues, where floor is
 * a random residue that plays the part of 0 (both fixed per trial).  Every
 * law of the op set that involves Relu survives (idempotence, fusion into Conv,
 * commuting with max pooling and data movement): none needs relu(v) to be
 * the residue 0: the constants the pool holds (identities, the pooling
 * kernel) enter only products, sums, convolutions and concatenations,
 * never a Relu's operand or a comparison with its output.  A literal
 * 0 would be worse: products and 1x1 convolutions of Relu outputs become
 * exactly 0 for whole windows, and then different graphs agree by
 * accident (seen at four ops: maxpool(relu(y)) = maxpool(y) when y has
 * zeros in every window).
 *
 * Where the floor sits in the order trades two kinds of accidental
 * agreement.  maxpool(relu(x)) = maxpool(x) looks true unless some pooling
 * window is all below the floor, likely only when the floor sits high (on
 * 4x4 images, maxpool(maxpool(relu(y))) = maxpool(maxpool(y)) needs a
 * whole 3x3 corner below it); relu(a) = relu(b) looks true when both are
 * all below it, likely only when it sits low.  So the trials put it at
 * different heights, the median, the 3/4 and the 15/16 point: a false law
 * must survive a trial that is bad for it.  (A 16-element matrix is all
 * below the median with probability 1.5e-5; that none of sixteen 3x3
 * corners falls wholly below the 15/16 point has probability 2e-6.) */
static inline uint64_t order_key(const model *m, uint64_t v)
{
    return v == m->floor ? m->floor_key : gen_mix64(v ^ m->order_salt);
}

static inline uint64_t relu_residue(const model *m, uint64_t v)
{
    return order_key(m, v) > order_key(m, m->floor) ? v : m->floor;
}

uint64_t gen_random_residue(uint64_t seed, uint64_t stream, int64_t i)
{
    uint64_t h = gen_mix64(seed ^ gen_mix64(stream * 0x9e3779b97f4a7c15ull + (uint64_t)i));
    return h % GEN_P;
}

static uint64_t hash_start(const gen_val *t)
{
    uint64_t h = gen_mix64(0x51ed270b27a4b1f3ull + (uint64_t)t->shape.ndim);
    for (int d = 0; d < t->shape.ndim; d++)
        h = gen_mix64(h ^ (uint64_t)t->shape.dims[d]);
    return h;
}

/* Each hash is one long chain of dependent multiplications: four chains
 * advance together so that the processor overlaps them. */
void gen_val_hashes(const gen_val *t, int n, uint64_t *out)
{
    enum { LANES = 4 };
    for (int base = 0; base < n; base += LANES) {
        int m = n - base < LANES ? n - base : LANES;
        uint64_t h[LANES];
        int64_t len[LANES], common = INT64_MAX;
        const uint64_t *v[LANES];
        for (int l = 0; l < LANES; l++) {
            const gen_val *x = &t[base + (l < m ? l : 0)];
            h[l] = hash_start(x);
            len[l] = GEN_TRIALS * xf_shape_numel(&x->shape);
            v[l] = x->v;
            common = len[l] < common ? len[l] : common;
        }
        for (int64_t i = 0; i < common; i++) {
            h[0] = gen_mix64(h[0] ^ v[0][i]) + (uint64_t)i;
            h[1] = gen_mix64(h[1] ^ v[1][i]) + (uint64_t)i;
            h[2] = gen_mix64(h[2] ^ v[2][i]) + (uint64_t)i;
            h[3] = gen_mix64(h[3] ^ v[3][i]) + (uint64_t)i;
        }
        for (int l = 0; l < m; l++) {
            for (int64_t i = common; i < len[l]; i++)
                h[l] = gen_mix64(h[l] ^ v[l][i]) + (uint64_t)i;
            out[base + l] = h[l];
        }
    }
}

uint64_t gen_val_hash(const gen_val *t)
{
    uint64_t h;
    gen_val_hashes(t, 1, &h);
    return h;
}

/* ------------------------------------------------------------ per op */

static bool eval_matmul(const gen_val *a, const gen_val *b, gen_val *o, int64_t cap)
{
    if (a->shape.ndim != 2 || b->shape.ndim != 2 || a->shape.dims[1] != b->shape.dims[0])
        return false;
    int64_t m = a->shape.dims[0], k = a->shape.dims[1], n = b->shape.dims[1];
    if (m * n > cap)
        return false;
    o->shape = xf_shape_make(2, (int64_t[]){m, n});
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            uint64_t acc = 0;
            for (int64_t t = 0; t < k; t++)
                acc = mod_add(acc, mod_mul(a->v[i * k + t], b->v[t * n + j]));
            o->v[i * n + j] = acc;
        }
    return true;
}

static bool eval_binary(xf_op op, const gen_val *a, const gen_val *b, gen_val *o, int64_t cap)
{
    const gen_val *big = a->shape.ndim >= b->shape.ndim ? a : b;
    bool a_scalar = a->shape.ndim == 0, b_scalar = b->shape.ndim == 0;
    if (!a_scalar && !b_scalar && !xf_shape_equal(&a->shape, &b->shape))
        return false;
    int64_t n = xf_shape_numel(&big->shape);
    if (n > cap)
        return false;
    o->shape = big->shape;
    for (int64_t i = 0; i < n; i++) {
        uint64_t x = a->v[a_scalar ? 0 : i], y = b->v[b_scalar ? 0 : i];
        o->v[i] = op == XF_OP_ADD ? mod_add(x, y) : mod_mul(x, y);
    }
    return true;
}

static bool eval_unary(const model *m, xf_op op, const gen_val *a, gen_val *o, int64_t cap)
{
    int64_t n = xf_shape_numel(&a->shape);
    if (n > cap)
        return false;
    o->shape = a->shape;
    for (int64_t i = 0; i < n; i++) {
        uint64_t v = a->v[i];
        o->v[i] = op == XF_OP_RELU      ? relu_residue(m, v)
                  : op == XF_OP_SIGMOID ? gen_mix64(v ^ m->sigmoid_salt) % GEN_P
                                        : gen_mix64(v ^ m->tanh_salt) % GEN_P;
    }
    return true;
}

/* Spatial attributes the generator handles: 2-D, strides up to max_stride,
 * dilation 1, explicit pads; kernel (kh, kw) when the attributes give one. */
static bool plain_spatial(const xf_attrs *a, int64_t max_stride, int64_t *kh, int64_t *kw)
{
    if (a->auto_pad != XF_AUTO_PAD_NOTSET || a->ceil_mode || a->group != 1)
        return false;
    if (a->n_spatial != 0 && a->n_spatial != 2)
        return false;
    for (int i = 0; i < a->n_spatial; i++)
        if (a->strides[i] < 1 || a->strides[i] > max_stride || a->dilations[i] != 1 || a->pads[i] < 0 ||
            a->pads[2 + i] < 0)
            return false;
    *kh = a->n_spatial ? a->kernel[0] : 0;
    *kw = a->n_spatial ? a->kernel[1] : 0;
    return true;
}

/* The correlation of a Conv, before its bias and activation (conv_finish). */
static bool eval_conv(const xf_attrs *a, const gen_val *x, const gen_val *w, gen_val *o, int64_t cap)
{
    int64_t kh, kw;
    if (!plain_spatial(a, 2, &kh, &kw) || x->shape.ndim != 4 || w->shape.ndim != 4)
        return false;
    int64_t n = x->shape.dims[0], c = x->shape.dims[1], h = x->shape.dims[2], wd = x->shape.dims[3];
    int64_t k = w->shape.dims[0];
    if (w->shape.dims[1] != c || (kh && kh != w->shape.dims[2]) || (kw && kw != w->shape.dims[3]))
        return false;
    kh = w->shape.dims[2];
    kw = w->shape.dims[3];
    int64_t pt = a->n_spatial ? a->pads[0] : 0, pl = a->n_spatial ? a->pads[1] : 0;
    int64_t pb = a->n_spatial ? a->pads[2] : 0, pr = a->n_spatial ? a->pads[3] : 0;
    int64_t sh = a->n_spatial ? a->strides[0] : 1, sw = a->n_spatial ? a->strides[1] : 1;
    if (h + pt + pb < kh || wd + pl + pr < kw)
        return false;
    int64_t oh = (h + pt + pb - kh) / sh + 1, ow = (wd + pl + pr - kw) / sw + 1;
    if (n * k * oh * ow > cap)
        return false;
    o->shape = xf_shape_make(4, (int64_t[]){n, k, oh, ow});
    /* Products of residues are below 2^122, so a 128-bit accumulator holds
     * 64 of them; it is reduced when one more channel could overflow it. */
    const int64_t taps = kh * kw;
    for (int64_t b = 0; b < n; b++)
        for (int64_t f = 0; f < k; f++)
            for (int64_t oy = 0; oy < oh; oy++) {
                /* Window origin y (x) in padded coordinates. */
                int64_t y = oy * sh;
                int64_t i_lo = pt - y > 0 ? pt - y : 0, i_hi = h + pt - y < kh ? h + pt - y : kh;
                for (int64_t ox = 0; ox < ow; ox++) {
                    int64_t xx = ox * sw;
                    int64_t j_lo = pl - xx > 0 ? pl - xx : 0, j_hi = wd + pl - xx < kw ? wd + pl - xx : kw;
                    unsigned __int128 acc = 0;
                    int64_t terms = 0;
                    uint64_t sum = 0;
                    for (int64_t ch = 0; ch < c; ch++) {
                        /* Offsets of tap (0, 0) in image and kernel (the
                         * image's may be negative: that tap is padding). */
                        int64_t xo = ((b * c + ch) * h + y - pt) * wd + xx - pl, wo = (f * c + ch) * taps;
                        if (terms + taps > 64) {
                            sum = mod_add(sum, mod_reduce128(acc));
                            acc = 0;
                            terms = 0;
                        }
                        for (int64_t i = i_lo; i < i_hi; i++)
                            for (int64_t j = j_lo; j < j_hi; j++)
                                acc += (unsigned __int128)x->v[xo + i * wd + j] * w->v[wo + i * kw + j];
                        terms += taps;
                    }
                    o->v[((b * k + f) * oh + oy) * ow + ox] = mod_add(sum, mod_reduce128(acc));
                }
            }
    return true;
}

/* A Conv's bias (one per output channel; may be NULL) and fused activation
 * on its correlation pre, into o (which may be pre). */
static bool conv_finish(const model *m, const xf_attrs *a, const gen_val *pre, const gen_val *bias, gen_val *o)
{
    if (a->activation != XF_ACT_NONE && a->activation != XF_ACT_RELU)
        return false;
    int64_t n = pre->shape.dims[0], k = pre->shape.dims[1], plane = pre->shape.dims[2] * pre->shape.dims[3];
    if (bias && (bias->shape.ndim != 1 || bias->shape.dims[0] != k))
        return false;
    o->shape = pre->shape;
    for (int64_t b = 0; b < n; b++)
        for (int64_t f = 0; f < k; f++) {
            int64_t at = (b * k + f) * plane;
            for (int64_t i = at; i < at + plane; i++) {
                uint64_t r = bias ? mod_add(pre->v[i], bias->v[f]) : pre->v[i];
                o->v[i] = a->activation == XF_ACT_RELU ? relu_residue(m, r) : r;
            }
        }
    return true;
}

static bool eval_pool(const model *m, xf_op op, const xf_attrs *a, const gen_val *x, gen_val *o, int64_t cap)
{
    int64_t kh, kw;
    if (!plain_spatial(a, 1, &kh, &kw) || a->n_spatial != 2 || x->shape.ndim != 4 || kh <= 0 || kw <= 0)
        return false;
    if (op == XF_OP_AVERAGE_POOL && !a->count_include_pad)
        return false;
    int64_t nc = x->shape.dims[0] * x->shape.dims[1], h = x->shape.dims[2], w = x->shape.dims[3];
    int64_t pt = a->pads[0], pl = a->pads[1];
    int64_t oh = h + pt + a->pads[2] - kh + 1, ow = w + pl + a->pads[3] - kw + 1;
    if (oh <= 0 || ow <= 0 || nc * oh * ow > cap)
        return false;
    o->shape = xf_shape_make(4, (int64_t[]){x->shape.dims[0], x->shape.dims[1], oh, ow});
    uint64_t inv = mod_pow((uint64_t)(kh * kw), GEN_P - 2);
    /* Each element's place in the order, computed once, not once per window. */
    uint64_t keys[GEN_MAX_ELEMS];
    int64_t in_n = nc * h * w;
    if (op == XF_OP_MAX_POOL) {
        if (in_n > GEN_MAX_ELEMS)
            return false;
        for (int64_t i = 0; i < in_n; i++)
            keys[i] = order_key(m, x->v[i]);
    }
    for (int64_t p = 0; p < nc; p++)
        for (int64_t y = 0; y < oh; y++)
            for (int64_t xx = 0; xx < ow; xx++) {
                uint64_t sum = 0, best = 0, best_key = 0;
                bool any = false;
                for (int64_t i = 0; i < kh; i++)
                    for (int64_t j = 0; j < kw; j++) {
                        int64_t iy = y + i - pt, ix = xx + j - pl;
                        if (iy < 0 || iy >= h || ix < 0 || ix >= w)
                            continue;
                        int64_t at = (p * h + iy) * w + ix;
                        uint64_t v = x->v[at];
                        if (op == XF_OP_AVERAGE_POOL) {
                            sum = mod_add(sum, v);
                            continue;
                        }
                        uint64_t key = keys[at];
                        if (!any || key > best_key) {
                            best = v;
                            best_key = key;
                            any = true;
                        }
                    }
                o->v[(p * oh + y) * ow + xx] = op == XF_OP_AVERAGE_POOL ? mod_mul(sum, inv) : best;
            }
    return true;
}

/* Outer/inner extents around axis: numel = outer * dims[axis] * inner. */
static void axis_extents(const xf_shape *s, int axis, int64_t *outer, int64_t *inner)
{
    *outer = 1;
    *inner = 1;
    for (int d = 0; d < axis; d++)
        *outer *= s->dims[d];
    for (int d = axis + 1; d < s->ndim; d++)
        *inner *= s->dims[d];
}

static bool eval_concat(const xf_attrs *a, int n_in, const gen_val *in, gen_val *o, int64_t cap)
{
    int nd = in[0].shape.ndim;
    int axis = (int)(a->axis < 0 ? a->axis + nd : a->axis);
    if (nd < 1 || axis < 0 || axis >= nd)
        return false;
    xf_shape s = in[0].shape;
    s.dims[axis] = 0;
    for (int k = 0; k < n_in; k++) {
        if (in[k].shape.ndim != nd)
            return false;
        for (int d = 0; d < nd; d++)
            if (d != axis && in[k].shape.dims[d] != s.dims[d])
                return false;
        s.dims[axis] += in[k].shape.dims[axis];
    }
    if (xf_shape_numel(&s) > cap)
        return false;
    o->shape = s;
    int64_t outer, inner;
    axis_extents(&s, axis, &outer, &inner);
    int64_t pos = 0;
    for (int64_t r = 0; r < outer; r++)
        for (int k = 0; k < n_in; k++) {
            int64_t len = in[k].shape.dims[axis] * inner;
            memcpy(o->v + pos, in[k].v + r * len, (size_t)len * sizeof *o->v);
            pos += len;
        }
    return true;
}

static bool eval_split(const xf_attrs *a, const gen_val *x, int n_out, gen_val *out, int64_t cap)
{
    int nd = x->shape.ndim;
    int axis = (int)(a->axis < 0 ? a->axis + nd : a->axis);
    if (nd < 1 || axis < 0 || axis >= nd || n_out < 1)
        return false;
    int64_t total = x->shape.dims[axis], sizes[2 * GEN_MAX_SLOTS], sum = 0;
    if (n_out > 2 * GEN_MAX_SLOTS || (a->n_split && a->n_split != n_out))
        return false;
    for (int k = 0; k < n_out; k++) {
        sizes[k] = a->n_split ? a->split[k] : total / n_out;
        if (sizes[k] <= 0)
            return false;
        sum += sizes[k];
    }
    if (sum != total || xf_shape_numel(&x->shape) > cap)
        return false;
    int64_t outer, inner;
    axis_extents(&x->shape, axis, &outer, &inner);
    int64_t offset = 0;
    for (int k = 0; k < n_out; k++) {
        out[k].shape = x->shape;
        out[k].shape.dims[axis] = sizes[k];
        int64_t len = sizes[k] * inner;
        for (int64_t r = 0; r < outer; r++)
            memcpy(out[k].v + r * len, x->v + r * total * inner + offset, (size_t)len * sizeof *x->v);
        offset += len;
    }
    return true;
}

/* Zero padding in the attribute form, constant mode. */
static bool eval_pad(const xf_attrs *a, const gen_val *x, gen_val *o, int64_t cap)
{
    int nd = x->shape.ndim;
    if (!a->has_pads || a->pad_mode != XF_PAD_CONSTANT || a->pad_value != 0.0f || a->n_pads != 2 * nd)
        return false;
    xf_shape s = x->shape;
    for (int d = 0; d < nd; d++) {
        if (a->pad_pads[d] < 0 || a->pad_pads[nd + d] < 0)
            return false;
        s.dims[d] += a->pad_pads[d] + a->pad_pads[nd + d];
    }
    int64_t n = xf_shape_numel(&s);
    if (n > cap)
        return false;
    o->shape = s;
    memset(o->v, 0, (size_t)n * sizeof *o->v);
    int64_t in_n = xf_shape_numel(&x->shape);
    for (int64_t i = 0; i < in_n; i++) {
        int64_t rest = i, off = 0, stride = 1;
        for (int d = nd - 1; d >= 0; d--) {
            int64_t coord = rest % x->shape.dims[d] + a->pad_pads[d];
            rest /= x->shape.dims[d];
            off += coord * stride;
            stride *= s.dims[d];
        }
        o->v[off] = x->v[i];
    }
    return true;
}

static bool eval_transpose(const xf_attrs *a, const gen_val *x, gen_val *o, int64_t cap)
{
    if (x->shape.ndim != 2 || (a->n_perm && (a->n_perm != 2 || a->perm[0] != 1 || a->perm[1] != 0)))
        return false;
    int64_t m = x->shape.dims[0], n = x->shape.dims[1];
    if (m * n > cap)
        return false;
    o->shape = xf_shape_make(2, (int64_t[]){n, m});
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++)
            o->v[j * m + i] = x->v[i * n + j];
    return true;
}

static bool eval_once(const model *m, xf_op op, const xf_attrs *a, int n_in, const gen_val *in, int n_out,
                      gen_val *out, int64_t cap)
{
    switch (op) {
    case XF_OP_MATMUL:
        return n_in == 2 && n_out == 1 && eval_matmul(&in[0], &in[1], out, cap);
    case XF_OP_ADD:
    case XF_OP_MUL:
        return n_in == 2 && n_out == 1 && eval_binary(op, &in[0], &in[1], out, cap);
    case XF_OP_RELU:
    case XF_OP_SIGMOID:
    case XF_OP_TANH:
        return n_in == 1 && n_out == 1 && eval_unary(m, op, &in[0], out, cap);
    case XF_OP_CONV:
        return (n_in == 2 || n_in == 3) && n_out == 1 && eval_conv(a, &in[0], &in[1], out, cap) &&
               conv_finish(m, a, out, n_in == 3 ? &in[2] : NULL, out);
    case XF_OP_PAD:
        return n_in == 1 && n_out == 1 && eval_pad(a, &in[0], out, cap);
    case XF_OP_MAX_POOL:
    case XF_OP_AVERAGE_POOL:
        return n_in == 1 && n_out == 1 && eval_pool(m, op, a, &in[0], out, cap);
    case XF_OP_CONCAT:
        return n_in >= 1 && n_out == 1 && eval_concat(a, n_in, in, out, cap);
    case XF_OP_SPLIT:
        return n_in == 1 && eval_split(a, &in[0], n_out, out, cap);
    case XF_OP_TRANSPOSE:
        return n_in == 1 && n_out == 1 && eval_transpose(a, &in[0], out, cap);
    default:
        return false;
    }
}

bool gen_eval(xf_op op, const xf_attrs *a, int n_in, const gen_val *in, int n_out, gen_val *out, int64_t cap)
{
    return gen_eval_models(0, op, a, n_in, in, n_out, out, cap);
}

bool gen_eval_models(int first_model, xf_op op, const xf_attrs *a, int n_in, const gen_val *in, int n_out,
                     gen_val *out, int64_t cap)
{
    enum { MAX_ARGS = 8 };
    if (n_in > MAX_ARGS || n_out > MAX_ARGS)
        return false;
    gen_val tin[MAX_ARGS], tout[MAX_ARGS];
    for (int t = 0; t < GEN_TRIALS; t++) {
        for (int k = 0; k < n_in; k++)
            tin[k] = (gen_val){in[k].shape, in[k].v + t * xf_shape_numel(&in[k].shape)};
        for (int k = 0; k < n_out; k++)
            tout[k].v = out[k].v + (t ? t * xf_shape_numel(&out[k].shape) : 0);
        model m = model_for_trial(first_model + t);
        if (!eval_once(&m, op, a, n_in, tin, n_out, tout, cap))
            return false;
        if (t == 0)
            for (int k = 0; k < n_out; k++)
                out[k].shape = tout[k].shape;
    }
    return true;
}

/* ------------------------------------------------------------ conv cache */

#define CONV_MEMO_SLOTS 4096
/* Correlations larger than this (per trial) are not cached. */
#define CONV_MEMO_ELEMS 256

typedef struct memo_slot {
    uint64_t fp_x, fp_w;
    int64_t stride;
    bool valid;
    gen_val pre;
} memo_slot;

struct gen_conv_memo {
    memo_slot slot[CONV_MEMO_SLOTS];
    uint64_t *storage; /* CONV_MEMO_SLOTS * GEN_TRIALS * CONV_MEMO_ELEMS residues */
};

gen_conv_memo *gen_conv_memo_create(void)
{
    gen_conv_memo *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->storage = malloc((size_t)CONV_MEMO_SLOTS * GEN_TRIALS * CONV_MEMO_ELEMS * sizeof *m->storage);
    if (!m->storage) {
        free(m);
        return NULL;
    }
    for (int i = 0; i < CONV_MEMO_SLOTS; i++)
        m->slot[i].pre.v = m->storage + (size_t)i * GEN_TRIALS * CONV_MEMO_ELEMS;
    return m;
}

void gen_conv_memo_free(gen_conv_memo *m)
{
    if (m)
        free(m->storage);
    free(m);
}

bool gen_eval_conv_memo(gen_conv_memo *m, const xf_attrs *a, const gen_val *x, uint64_t x_fp, const gen_val *w,
                        uint64_t w_fp, const gen_val *bias, gen_val *out)
{
    int64_t stride = a->n_spatial ? a->strides[0] : 1;
    memo_slot *s = &m->slot[gen_mix64(x_fp ^ gen_mix64(w_fp) ^ (uint64_t)stride) & (CONV_MEMO_SLOTS - 1)];
    if (!s->valid || s->fp_x != x_fp || s->fp_w != w_fp || s->stride != stride) {
        xf_attrs plain = *a;
        plain.activation = XF_ACT_NONE;
        s->valid = gen_eval(XF_OP_CONV, &plain, 2, (const gen_val[]){*x, *w}, 1, &s->pre, CONV_MEMO_ELEMS);
        s->fp_x = x_fp;
        s->fp_w = w_fp;
        s->stride = stride;
    }
    if (!s->valid) {
        /* Too large to cache (or not a conv the generator handles). */
        gen_val in[3] = {*x, *w, bias ? *bias : *x};
        return gen_eval(XF_OP_CONV, a, bias ? 3 : 2, in, 1, out, GEN_MAX_ELEMS);
    }
    int64_t n = xf_shape_numel(&s->pre.shape), nb = bias ? xf_shape_numel(&bias->shape) : 0;
    for (int t = 0; t < GEN_TRIALS; t++) {
        gen_val tpre = {s->pre.shape, s->pre.v + t * n}, tout = {s->pre.shape, out->v + t * n};
        gen_val tbias = bias ? (gen_val){bias->shape, bias->v + t * nb} : (gen_val){{0}, NULL};
        model md = model_for_trial(t);
        if (!conv_finish(&md, a, &tpre, bias ? &tbias : NULL, &tout))
            return false;
    }
    out->shape = s->pre.shape;
    return true;
}

/* ------------------------------------------------------------ whole graphs */

xf_status xf_gen_fingerprint_graph(const xf_graph *g, uint64_t seed, uint64_t *fps, xf_error *err)
{
    return gen_fingerprint_graph(g, seed, 0, fps, err);
}

xf_status gen_fingerprint_graph(const xf_graph *g, uint64_t seed, int first_model, uint64_t *fps, xf_error *err)
{
    gen_val *vals = calloc((size_t)g->n_values, sizeof *vals);
    uint64_t *storage = calloc((size_t)g->n_values * GEN_VAL_STRIDE, sizeof *storage);
    bool *ready = calloc((size_t)g->n_values, sizeof *ready);
    xf_status st = XF_OK;
    if (!vals || !storage || !ready) {
        st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (int v = 0; v < g->n_values; v++)
        vals[v].v = storage + (size_t)v * GEN_VAL_STRIDE;
    /* The constants the generator knows (identities, the pooling kernel)
     * take its residues; others with integer values (all-ones) are exact
     * residues; the rest have no exact meaning here. */
    for (int v = 0; v < g->n_values; v++) {
        const xf_tensor *c = g->values[v].init;
        if (!c)
            continue;
        int64_t n = xf_tensor_numel(c);
        if (n < 0 || n > GEN_MAX_ELEMS) {
            st = xf_error_set(err, XF_ERR_UNSUPPORTED, "constant '%s' is too large", g->values[v].name);
            goto done;
        }
        vals[v].shape = c->shape;
        xf_const_kind kind = xf_const_kind_of(c);
        if (kind != XF_CONST_NONE && gen_const_residues(kind, &vals[v])) {
            ready[v] = true;
            continue;
        }
        for (int64_t i = 0; i < n; i++) {
            double x = xf_tensor_get_f64(c, i);
            if (x != (double)(int64_t)x || x > 1e15 || x < -1e15) {
                st = xf_error_set(err, XF_ERR_UNSUPPORTED, "constant '%s' is not integer-valued", g->values[v].name);
                goto done;
            }
            int64_t iv = (int64_t)x;
            uint64_t r = iv >= 0 ? (uint64_t)iv % GEN_P : GEN_P - (uint64_t)(-iv) % GEN_P;
            for (int t = 0; t < GEN_TRIALS; t++)
                vals[v].v[t * n + i] = r;
        }
        ready[v] = true;
    }
    for (int k = 0; k < g->n_inputs; k++) {
        gen_val *t = &vals[g->inputs[k]];
        t->shape = g->values[g->inputs[k]].shape;
        int64_t n = xf_shape_numel(&t->shape);
        if (n < 0 || n > GEN_MAX_ELEMS) {
            st = xf_error_set(err, XF_ERR_UNSUPPORTED, "input %d is too large to fingerprint", k);
            goto done;
        }
        uint64_t stream = gen_mix64((uint64_t)k + 1);
        for (int d = 0; d < t->shape.ndim; d++)
            stream = gen_mix64(stream ^ (uint64_t)t->shape.dims[d]);
        for (int64_t i = 0; i < GEN_TRIALS * n; i++)
            t->v[i] = gen_random_residue(seed, stream, i);
        ready[g->inputs[k]] = true;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const xf_node *n = &g->nodes[i];
        gen_val in[8], out[8];
        if (n->n_inputs > 8 || n->n_outputs > 8) {
            st = xf_error_set(err, XF_ERR_UNSUPPORTED, "node %d has too many inputs or outputs", i);
            goto done;
        }
        for (int k = 0; k < n->n_inputs; k++) {
            if (n->inputs[k] < 0 || !ready[n->inputs[k]]) {
                st = xf_error_set(err, XF_ERR_UNSUPPORTED, "node %d (%s): input %d is not a computed tensor", i,
                                  xf_op_name(n->op), k);
                goto done;
            }
            in[k] = vals[n->inputs[k]];
        }
        for (int k = 0; k < n->n_outputs; k++)
            out[k] = vals[n->outputs[k]];
        if (!gen_eval_models(first_model, n->op, &n->attrs, n->n_inputs, in, n->n_outputs, out, GEN_MAX_ELEMS)) {
            st = xf_error_set(err, XF_ERR_UNSUPPORTED, "node %d (%s) is outside the generator's semantics", i,
                              xf_op_name(n->op));
            goto done;
        }
        for (int k = 0; k < n->n_outputs; k++) {
            vals[n->outputs[k]] = out[k];
            ready[n->outputs[k]] = true;
        }
    }
    for (int j = 0; j < g->n_outputs; j++)
        fps[j] = gen_val_hash(&vals[g->outputs[j]]);
done:
    free(vals);
    free(storage);
    free(ready);
    return st;
}

bool gen_const_residues(xf_const_kind k, gen_val *v)
{
    xf_tensor *t = xf_const_make(k, &v->shape);
    if (!t)
        return false;
    const float *d = t->data;
    int64_t n = xf_shape_numel(&v->shape);
    uint64_t one = 1;
    if (k == XF_CONST_POOL_KERNEL)
        one = mod_pow((uint64_t)(v->shape.dims[2] * v->shape.dims[3]), GEN_P - 2);
    for (int trial = 0; trial < GEN_TRIALS; trial++)
        for (int64_t i = 0; i < n; i++)
            v->v[trial * n + i] = d[i] != 0.0f ? one : 0;
    xf_tensor_release(t);
    return true;
}
