/* The random ops on cpu_ref: RandomNormal(Like), RandomUniform(Like),
 * Bernoulli, Multinomial, and Dropout when it trains.
 *
 * The generator is xoshiro256** (Blackman and Vigna), its four words of
 * state filled by splitmix64 from a 64-bit key: the bits of the node's
 * seed attribute (as a double) when it has one, else the FNV-1a hash of
 * the node's name or, for a node without one, of its first output's name.
 * A node without a seed thus draws the same values in every session and
 * in every graph that keeps that name (xflowc keeps the names of the
 * nodes it does not rewrite, and canonicalization keeps the Identity that
 * would rename an unnamed node's output, so `xflowc --check` compares
 * like with like), and two unseeded nodes of one graph draw different
 * values.  Kernels stay pure functions of their
 * inputs: each run of a session draws the same values again.  ONNX
 * Runtime uses its own generator and continues its stream across runs,
 * so its values differ from these; only their distribution agrees.
 *
 * Elements are drawn in row-major order, each from 53-bit uniforms
 * u = (x >> 11) * 2^-53 in [0, 1), computed in double and rounded once to
 * the output type:
 *   uniform    low + (high - low) * u, drawn again in the rare case where
 *              rounding to the output type gives high (so values stay in
 *              [low, high));
 *   normal     Box-Muller: r = sqrt(-2 ln(1 - u1)), r cos(2 pi u2) and
 *              r sin(2 pi u2) for two consecutive elements, times scale
 *              plus mean;
 *   Bernoulli  1 where u < p, else 0;
 *   Dropout    kept where u >= ratio;
 *   Multinomial  per row, the softmax of the row (in double, its maximum
 *              subtracted), and for each sample the first class whose
 *              cumulative weight exceeds u times the row's total. */
#include "xf_rt_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct rng {
    uint64_t s[4];
} rng;

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t next_u64(rng *r)
{
    uint64_t *s = r->s, out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

/* [0, 1) in steps of 2^-53 */
static double next_unit(rng *r) { return (double)(next_u64(r) >> 11) * 0x1.0p-53; }

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char *p = s ? s : ""; *p; p++)
        h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
    return h;
}

uint64_t xf_ref_random_key(const xf_graph *g, const xf_node *n)
{
    if (n->name && n->name[0])
        return fnv1a(n->name);
    return fnv1a(n->n_outputs > 0 && n->outputs[0] >= 0 ? g->values[n->outputs[0]].name : NULL);
}

static void rng_seed(rng *r, const xf_attrs *a, uint64_t key)
{
    if (a->rand_has_seed) {
        double d = a->rand_seed;
        memcpy(&key, &d, sizeof key);
    }
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&key);
}

static void fill_normal(rng *r, const xf_attrs *a, const xf_tensor_view *o, int64_t count)
{
    for (int64_t i = 0; i < count; i += 2) {
        double rad = sqrt(-2.0 * log(1.0 - next_unit(r))), th = 6.283185307179586476925 * next_unit(r);
        xf_rt_store_f64(o->dtype, o->data, i, a->rand_a + a->rand_b * rad * cos(th));
        if (i + 1 < count)
            xf_rt_store_f64(o->dtype, o->data, i + 1, a->rand_a + a->rand_b * rad * sin(th));
    }
}

static void fill_uniform(rng *r, const xf_attrs *a, const xf_tensor_view *o, int64_t count)
{
    double lo = a->rand_a, hi = a->rand_b;
    for (int64_t i = 0; i < count; i++)
        for (int tries = 0; tries < 64; tries++) {
            xf_rt_store_f64(o->dtype, o->data, i, lo + (hi - lo) * next_unit(r));
            if (xf_rt_load_f64(o->dtype, o->data, i) < hi || hi <= lo)
                break;
        }
}

static xf_status multinomial(rng *r, const xf_node *n, const xf_tensor_view *x, const xf_tensor_view *o,
                             xf_error *err)
{
    int64_t batch = x->shape.dims[0], classes = x->shape.dims[1], samples = o->shape.dims[1];
    double *cdf = malloc(sizeof *cdf * (size_t)(classes > 0 ? classes : 1));
    if (!cdf)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    xf_status st = XF_OK;
    for (int64_t b = 0; b < batch && st == XF_OK; b++) {
        double mx = -INFINITY, total = 0;
        bool nan = false;
        for (int64_t j = 0; j < classes; j++) {
            double v = xf_rt_load_f64(x->dtype, x->data, b * classes + j);
            nan |= isnan(v);
            mx = fmax(mx, v);
        }
        if (nan || !isfinite(mx)) {
            st = xf_rt_bad_node(err, n, "row %lld of the input %s", (long long)b,
                                nan ? "holds NaN" : "has no finite log-probability");
            break;
        }
        for (int64_t j = 0; j < classes; j++)
            cdf[j] = (total += exp(xf_rt_load_f64(x->dtype, x->data, b * classes + j) - mx));
        for (int64_t s = 0; s < samples; s++) {
            double t = next_unit(r) * total;
            int64_t lo = 0, hi = classes - 1;
            while (lo < hi) { /* the first class whose cumulative weight exceeds t */
                int64_t mid = lo + (hi - lo) / 2;
                if (cdf[mid] > t)
                    hi = mid;
                else
                    lo = mid + 1;
            }
            xf_rt_store_i64(o->dtype, o->data, b * samples + s, lo);
        }
    }
    free(cdf);
    return st;
}

/* Dropout: without training_mode true or with a ratio of 0, x and an
 * all-true mask; else each element kept where u >= ratio, times
 * 1 / (1 - ratio) (in double, rounded once), its mask true. */
static xf_status dropout(rng *r, const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                         xf_error *err)
{
    for (int k = 1; k < n->n_inputs && k < 3; k++)
        if (xf_rt_present(&in[k]) && xf_rt_numel(&in[k]) != 1)
            return xf_rt_bad_node(err, n, "%s must hold one value, not %lld", k == 1 ? "ratio" : "training_mode",
                                  (long long)xf_rt_numel(&in[k]));
    bool training = n->n_inputs > 2 && xf_rt_present(&in[2]) && xf_rt_load_i64(in[2].dtype, in[2].data, 0);
    double ratio = n->n_inputs > 1 && xf_rt_present(&in[1]) ? xf_rt_load_f64(in[1].dtype, in[1].data, 0) : 0.5;
    if (!training || ratio == 0.0)
        return xf_ref_dropout(n, in, out, err);
    if (!(ratio > 0.0 && ratio < 1.0))
        return xf_rt_bad_node(err, n, "ratio %g is outside [0, 1)", ratio);
    const xf_tensor_view *x = &in[0], *y = &out[0];
    const xf_tensor_view *mask = n->n_outputs > 1 && xf_rt_present(&out[1]) ? &out[1] : NULL;
    int64_t count = xf_rt_numel(x);
    if (xf_rt_numel(y) != count || (mask && xf_rt_numel(mask) != count))
        return xf_rt_bad_node(err, n, "input, output and mask differ in size");
    double scale = 1.0 / (1.0 - ratio);
    for (int64_t i = 0; i < count; i++) {
        bool keep = next_unit(r) >= ratio;
        xf_rt_store_f64(y->dtype, y->data, i, keep ? xf_rt_load_f64(x->dtype, x->data, i) * scale : 0.0);
        if (mask)
            xf_rt_store_i64(mask->dtype, mask->data, i, keep);
    }
    return XF_OK;
}

xf_status xf_ref_random(const xf_node *n, uint64_t key, const xf_tensor_view *in, const xf_tensor_view *out,
                        xf_error *err)
{
    const xf_tensor_view *o = &out[0];
    int64_t count = xf_shape_numel(&o->shape);
    if (count < 0)
        return xf_rt_bad_node(err, n, "output shape is not known");
    rng r;
    rng_seed(&r, &n->attrs, key);
    switch (n->op) {
    case XF_OP_RANDOM_NORMAL: case XF_OP_RANDOM_NORMAL_LIKE:
        fill_normal(&r, &n->attrs, o, count);
        return XF_OK;
    case XF_OP_RANDOM_UNIFORM: case XF_OP_RANDOM_UNIFORM_LIKE:
        fill_uniform(&r, &n->attrs, o, count);
        return XF_OK;
    case XF_OP_DROPOUT:
        return dropout(&r, n, in, out, err);
    case XF_OP_BERNOULLI:
        if (!xf_shape_equal(&in[0].shape, &o->shape))
            return xf_rt_bad_node(err, n, "input and output differ in shape");
        for (int64_t i = 0; i < count; i++)
            xf_rt_store_f64(o->dtype, o->data, i, next_unit(&r) < xf_rt_load_f64(in[0].dtype, in[0].data, i));
        return XF_OK;
    default:
        if (in[0].shape.ndim != 2 || o->shape.ndim != 2 || o->shape.dims[0] != in[0].shape.dims[0])
            return xf_rt_bad_node(err, n, "input and output shapes do not fit Multinomial");
        return multinomial(&r, n, &in[0], o, err);
    }
}

xf_status xf_ref_random_unnamed(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    return xf_ref_random(n, fnv1a(NULL), in, out, err);
}
