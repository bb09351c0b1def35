/* The cpu backend's own elementwise loops, where oneDNN 2.6 has no fast
 * kernel: x^2 and x^3 (its pow takes exp and log), HardSigmoid (it has
 * no such alg and runs a linear one with a clip post-op in its reference
 * kernel only), Erf (it has none), Log (its own is a few ulp off), PRelu
 * by channel in the blocked layouts (its own is slow there), the
 * comparisons of numbers, Where, and
 * Add, Sub, Mul and Div of floats where neither operand has the output's
 * shape (oneDNN broadcasts its second source only).
 * Each computes as cpu_ref does, in blocks the compiler vectorizes and
 * (but the comparisons) in chunks over OpenMP's threads. */
#include "cpu_dnnl.h"

#include <math.h>
#include <string.h>

/* A loop over count elements of input 0 (x) into output 0 (y) at the same
 * offsets; n and in give its parameters. */
typedef void (*chunk_fn)(const xf_node *n, const xf_tensor_view *in, const float *x, float *y, int64_t count);

/* Runs `of` over output 0 in chunks, over OpenMP's threads when there are
 * several. */
static xf_status in_chunks(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, chunk_fn of)
{
    const float *x = in[0].data;
    float *y = out[0].data;
    int64_t count = xf_rt_numel(&out[0]), size, chunks = xf_dn_chunks(count, &size);
    XF_OMP_FOR(chunks > 1)
    for (int64_t c = 0; c < chunks; c++) {
        int64_t i = c * size;
        of(n, in, x + i, y + i, count - i < size ? count - i : size);
    }
    return XF_OK;
}

/* x^2 and x^3 (oneDNN's pow takes exp and log: 10 ns an element): x x
 * (x) in double, where x x is exact, rounded once to float as cpu_ref's
 * pow is; in blocks of 16 elements, which the compiler vectorizes, and in
 * chunks over the threads. */
enum { POW_LANES = 16 };

static inline float pow_square(float x) { return (float)((double)x * x); }
static inline float pow_cube(float x) { return (float)((double)x * x * x); }

static void pow_small_of(const float *restrict x, float *restrict y, int64_t count, bool cube)
{
    int64_t i = 0;
    if (cube)
        for (; i + POW_LANES <= count; i += POW_LANES)
            for (int l = 0; l < POW_LANES; l++)
                y[i + l] = pow_cube(x[i + l]);
    else
        for (; i + POW_LANES <= count; i += POW_LANES)
            for (int l = 0; l < POW_LANES; l++)
                y[i + l] = pow_square(x[i + l]);
    for (; i < count; i++)
        y[i] = cube ? pow_cube(x[i]) : pow_square(x[i]);
}

static void pow_chunk(const xf_node *n, const xf_tensor_view *in, const float *x, float *y, int64_t count)
{
    (void)n;
    pow_small_of(x, y, count, ((const float *)in[1].data)[0] == 3.0f);
}

xf_status xf_dn_pow_small_run(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    (void)err;
    return in_chunks(n, in, out, pow_chunk);
}

/* HardSigmoid, max(0, min(1, alpha x + beta)) in double as cpu_ref
 * computes it, rounded once: in blocks of 16 elements, which the compiler
 * vectorizes, and chunks over the threads; the layout does not matter
 * (input and output are stored alike, with no padding). */
enum { HS_LANES = 16 };

static inline float hard_sigmoid(float x, double alpha, double beta)
{
    double v = alpha * x + beta;
    v = v > 0.0 ? v : 0.0;
    return (float)(v < 1.0 ? v : 1.0);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
static void hard_sigmoid_of(const float *restrict x, float *restrict y, int64_t count, double alpha, double beta)
{
    int64_t i = 0;
    for (; i + HS_LANES <= count; i += HS_LANES)
        for (int l = 0; l < HS_LANES; l++)
            y[i + l] = hard_sigmoid(x[i + l], alpha, beta);
    for (; i < count; i++)
        y[i] = hard_sigmoid(x[i], alpha, beta);
}

/* Erf, in double and rounded once to float, as cpu_ref's erf() is, to
 * within about 1e-11 of erf (so a result differs from cpu_ref's only where
 * erf lies that close to the midpoint of two floats):
 *   |x| < 1      x P(x^2), P erf(x)/x's Taylor series to x^24 (the next
 *                term is below 7e-12);
 *   1 <= |x| < 4 1 - e^(-x^2) erfcx(|x|), erfcx(a) = e^(a^2) erfc(a) as a
 *                polynomial of degree 16 in (a - 2.5) / 1.5 fitted to it at
 *                400 Chebyshev nodes (relative error below 7.1e-12 on
 *                [1, 4]);
 *   |x| >= 4     +-1 (erf(3.92) rounds to 1 already); NaN stays NaN.
 * No branch and no library call: blocks of 16 elements vectorize. */
enum { ERF_LANES = 16 };

static const double erf_small[] = {9.4227590646504113e-11,  -1.2290555301717926e-09, 1.4807192815879218e-08,
                                   -1.6365844691234924e-07, 1.6462114365889246e-06,  -1.492565035840625e-05,
                                   0.00012055332981789664,  -0.00085483270234508522, 0.0052239776254421879,
                                   -0.026866170645131252,   0.11283791670955126,     -0.37612638903183754,
                                   1.1283791670955126};
static const double erfcx_fit[] = {2.1959056090583407e-07,  -6.370012361834661e-07, 9.3465044879351842e-07,
                                   -2.6694246535813358e-06, 8.9008833068743599e-06, -2.4072772843373475e-05,
                                   6.2464623504616661e-05,  -0.0001617603365724513, 0.00040912528205292245,
                                   -0.0010059081909861095,  0.0024036397208482907,  -0.0055706938158677447,
                                   0.012489374662808419,    -0.027005297556065136,  0.056110493415382434,
                                   -0.1115210201659823,     0.21080636406132749};

static inline float erf_one(float xf)
{
    double x = xf, a = fabs(x), s = a * a;
    double small = erf_small[0];
#pragma GCC unroll 12
    for (int i = 1; i < 13; i++)
        small = small * s + erf_small[i];
    small *= a;
    double u = (a - 2.5) * (2.0 / 3.0), g = erfcx_fit[0];
#pragma GCC unroll 16
    for (int i = 1; i < 17; i++)
        g = g * u + erfcx_fit[i];
    /* past 4 (and for NaN) e^(-16) keeps the exponent in range */
    double big = 1.0 - xf_dn_exp_neg(-(a < 4.0 ? s : 16.0)) * g;
    double v = a < 1.0 ? small : a < 4.0 ? big : a >= 4.0 ? 1.0 : a;
    return (float)copysign(v, x);
}

/* A unary loop over one_fn's elements in blocks of `lanes`, which the
 * compiler vectorizes (for the CPU found at run time), in chunks over the
 * threads, as xf_dn_<name>_run. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define UNARY_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define UNARY_CLONES
#endif
#define UNARY_LOOP(name, one_fn, lanes)                                                                                \
    UNARY_CLONES static void name##_of(const float *restrict x, float *restrict y, int64_t count)                      \
    {                                                                                                                  \
        int64_t i = 0;                                                                                                 \
        for (; i + (lanes) <= count; i += (lanes))                                                                     \
            for (int l = 0; l < (lanes); l++)                                                                          \
                y[i + l] = one_fn(x[i + l]);                                                                           \
        for (; i < count; i++)                                                                                         \
            y[i] = one_fn(x[i]);                                                                                       \
    }                                                                                                                  \
    static void name##_chunk(const xf_node *n, const xf_tensor_view *in, const float *x, float *y, int64_t count)      \
    {                                                                                                                  \
        (void)n, (void)in;                                                                                             \
        name##_of(x, y, count);                                                                                        \
    }                                                                                                                  \
    xf_status xf_dn_##name##_run(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err) \
    {                                                                                                                  \
        (void)err;                                                                                                     \
        return in_chunks(n, in, out, name##_chunk);                                                                    \
    }

UNARY_LOOP(erf, erf_one, ERF_LANES)

/* Log, in double and rounded once to float, as cpu_ref's log() is, to
 * within 3.4e-14 of ln x (relative; over every 37th float none rounded
 * otherwise than log() did), where oneDNN's float log is a few ulp off,
 * which flips the integer a Cast takes from a log that should be whole:
 * x = 2^e
 * m with m in [sqrt(1/2), sqrt(2)) from the float's bits (subnormals
 * scaled by 2^24 first), ln m = 2 atanh(s) with s = (m - 1) / (m + 1),
 * |s| < 0.172, its series to s^15 (the next term below 2e-14 of it).
 * ln 0 is -inf, a negative number's or NaN's log NaN, ln inf inf.  No
 * branch and no library call: blocks of 16 elements vectorize. */
enum { LOG_LANES = 16 };

static inline float log_one(float x)
{
    float scaled = x < 1.17549435e-38f ? x * 16777216.0f : x; /* below FLT_MIN: times 2^24 */
    int32_t bits;
    memcpy(&bits, &scaled, sizeof bits);
    int32_t e = ((bits >> 23) & 0xff) - 127 - (x < 1.17549435e-38f ? 24 : 0);
    int32_t mbits = (bits & 0x7fffff) | 0x3f800000;
    float mf;
    memcpy(&mf, &mbits, sizeof mf);
    bool high = mf > 1.41421356f;
    double m = high ? 0.5 * (double)mf : (double)mf, f = m - 1.0;
    double sv = f / (2.0 + f), z = sv * sv, p = 1.0 / 15;
    static const double odd[] = {1.0 / 13, 1.0 / 11, 1.0 / 9, 1.0 / 7, 1.0 / 5, 1.0 / 3, 1.0};
#pragma GCC unroll 7
    for (int i = 0; i < 7; i++)
        p = p * z + odd[i];
    double r = (double)(e + (high ? 1 : 0)) * 0.69314718055994531 + 2.0 * sv * p;
    float v = x == INFINITY ? x : (float)r;
    return x > 0.0f ? v : x == 0.0f ? -INFINITY : NAN;
}

UNARY_LOOP(log, log_one, LOG_LANES)

static void hard_sigmoid_chunk(const xf_node *n, const xf_tensor_view *in, const float *x, float *y, int64_t count)
{
    (void)in;
    hard_sigmoid_of(x, y, count, n->attrs.alpha, n->attrs.beta);
}

xf_status xf_dn_hard_sigmoid_run(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                                  xf_error *err)
{
    (void)err;
    return in_chunks(n, in, out, hard_sigmoid_chunk);
}

/* The loop for node n (Erf, Log, HardSigmoid, Pow by 2 or 3). */
static xf_ref_kernel unary_loop_kernel(const xf_node *n)
{
    switch (n->op) {
    case XF_OP_ERF: return xf_dn_erf_run;
    case XF_OP_LOG: return xf_dn_log_run;
    case XF_OP_POW: return xf_dn_pow_small_run;
    default: return xf_dn_hard_sigmoid_run;
    }
}

/* The loop on input 0 as reordered into the output's layout (the
 * binding's work memory), from there into the output. */
static xf_status unary_loop_reordered(const xf_node *n, const xf_dn_node *st, const xf_tensor_view *in,
                                    const xf_tensor_view *out, xf_error *err)
{
    xf_tensor_view x[2] = {in[0], n->n_inputs > 1 ? in[1] : in[0]};
    XF_DN_TRY(err, n, dnnl_memory_get_data_handle(st->args[0].work, &x[0].data));
    return unary_loop_kernel(n)(n, x, out, err);
}

xf_status xf_dn_unary_loop_prepare(xf_dn_ctx *c, const xf_node *n, const xf_tensor_view *in, xf_dn_node *st,
                                   xf_error *err)
{
    xf_dn_layout from = xf_dn_value_layout(c, n->inputs[0]), to = xf_dn_value_layout(c, n->outputs[0]);
    if (from == to) {
        st->kernel = unary_loop_kernel(n);
        return XF_OK;
    }
    dnnl_memory_desc_t have, want;
    xf_dn_md(c, &in[0].shape, from, &have);
    xf_dn_md(c, &in[0].shape, to, &want);
    st->post = unary_loop_reordered;
    st->own_name = "own loop after a reorder";
    return xf_dn_bind(c, n, st, DNNL_ARG_SRC, 0, &have, &want, err);
}

/* PRelu by a slope per channel (or one for all, n_slope 1) of a 4-D x
 * stored channel-blocked (nChw16c, nChw8c: block 16 or 8, its padded
 * lanes 0, which stay 0) or channels-last (block 0): x where positive,
 * else x times the channel's slope, as cpu_ref's max(x, 0) + slope
 * min(x, 0) gives it.  oneDNN's prelu took 4 times its plain layout's
 * time in the blocked ones. */
static inline float prelu_one(float x, float s) { return x > 0.0f ? x : x * s; }

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static void
prelu_block(const float *restrict x, float *restrict y, const float *restrict sv, int64_t hw, int block)
{
    if (block == 16) {
        for (int64_t i = 0; i < hw; i++)
            for (int l = 0; l < 16; l++)
                y[i * 16 + l] = prelu_one(x[i * 16 + l], sv[l]);
    } else {
        for (int64_t i = 0; i < hw * block; i++)
            y[i] = prelu_one(x[i], sv[i % block]);
    }
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static void
prelu_rows(const float *restrict x, float *restrict y, const float *restrict slope, int64_t rows, int64_t ch)
{
    for (int64_t r = 0; r < rows; r++)
        for (int64_t k = 0; k < ch; k++)
            y[r * ch + k] = prelu_one(x[r * ch + k], slope[k]);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static void
prelu_flat(const float *restrict x, float *restrict y, float s, int64_t count)
{
    for (int64_t i = 0; i < count; i++)
        y[i] = prelu_one(x[i], s);
}

void xf_dn_prelu_channels(const float *x, float *y, const float *slope, int64_t n_slope, int64_t batch, int64_t ch,
                          int64_t hw, int block)
{
    int64_t blocks = block ? (ch + block - 1) / block : 0, size;
    if (n_slope == 1) { /* every element stored alike (padded lanes: 0 stays 0) */
        int64_t stored = block ? batch * blocks * block * hw : batch * hw * ch, chunks = xf_dn_chunks(stored, &size);
        XF_OMP_FOR(chunks > 1)
        for (int64_t c = 0; c < chunks; c++) {
            int64_t i = c * size;
            prelu_flat(x + i, y + i, slope[0], stored - i < size ? stored - i : size);
        }
        return;
    }
    if (block == 0) { /* channels last: rows of ch */
        int64_t rows = batch * hw, chunks = xf_dn_chunks(rows * ch, &size), per = (size + ch - 1) / ch;
        XF_OMP_FOR(chunks > 1)
        for (int64_t c = 0; c < chunks; c++) {
            int64_t r0 = c * per, count = r0 >= rows ? 0 : rows - r0 < per ? rows - r0 : per;
            prelu_rows(x + r0 * ch, y + r0 * ch, slope, count, ch);
        }
        return;
    }
    XF_OMP_FOR(batch * blocks * hw * block >= 2 * XF_DN_CHUNK_MIN)
    for (int64_t nb = 0; nb < batch * blocks; nb++) {
        float sv[16];
        int64_t c0 = (nb % blocks) * block;
        for (int l = 0; l < block; l++)
            sv[l] = c0 + l >= ch ? 0.0f : slope[c0 + l];
        prelu_block(x + nb * hw * block, y + nb * hw * block, sv, hw, block);
    }
}

/* Equal, Greater, Less, GreaterOrEqual and LessOrEqual of two tensors of
 * one type (float, int32 or int64), broadcast, into bool: compared as they
 * are, which is what cpu_ref's compare in double or int64 gives (NaN
 * unequal and unordered), along the runs of xf_rt_iter.  cpu_ref's blocks,
 * widened and narrowed again, took 1.9 ns an element (Magika's one-hot
 * Equal, 2048 bytes against 257 codes, 1.0 ms on one thread). */
/* one binary op along a run, E(x, y) each element: each side read in
 * place, or one element for all (broadcast), so that the common forms
 * vectorize */
#define BINARY_RUN(T, E)                                                                                               \
    do {                                                                                                               \
        if (sa == 1 && sb == 1)                                                                                        \
            for (int64_t k = 0; k < n; k++)                                                                            \
                o[k] = E(a[k], b[k]);                                                                                  \
        else if (sa == 0 && sb == 1) {                                                                                 \
            T av = a[0];                                                                                               \
            for (int64_t k = 0; k < n; k++)                                                                            \
                o[k] = E(av, b[k]);                                                                                    \
        } else if (sa == 1 && sb == 0) {                                                                               \
            T bv = b[0];                                                                                               \
            for (int64_t k = 0; k < n; k++)                                                                            \
                o[k] = E(a[k], bv);                                                                                    \
        } else                                                                                                         \
            for (int64_t k = 0; k < n; k++)                                                                            \
                o[k] = E(a[k * sa], b[k * sb]);                                                                        \
    } while (0)
#define OP_EQ(x, y) ((x) == (y))
#define OP_GT(x, y) ((x) > (y))
#define OP_LT(x, y) ((x) < (y))
#define OP_GE(x, y) ((x) >= (y))
#define OP_LE(x, y) ((x) <= (y))
#define COMPARE_RUNS(T)                                                                                                \
    static void compare_##T(xf_op op, const T *a, int64_t sa, const T *b, int64_t sb, uint8_t *o, int64_t n)           \
    {                                                                                                                  \
        switch (op) {                                                                                                  \
        case XF_OP_EQUAL:                                                                                              \
            BINARY_RUN(T, OP_EQ);                                                                                      \
            break;                                                                                                     \
        case XF_OP_GREATER:                                                                                            \
            BINARY_RUN(T, OP_GT);                                                                                      \
            break;                                                                                                     \
        case XF_OP_LESS:                                                                                               \
            BINARY_RUN(T, OP_LT);                                                                                      \
            break;                                                                                                     \
        case XF_OP_GREATER_OR_EQUAL:                                                                                   \
            BINARY_RUN(T, OP_GE);                                                                                      \
            break;                                                                                                     \
        default:                                                                                                       \
            BINARY_RUN(T, OP_LE);                                                                                      \
            break;                                                                                                     \
        }                                                                                                              \
    }
COMPARE_RUNS(float)
COMPARE_RUNS(int32_t)
COMPARE_RUNS(int64_t)

/* The walk over y of a's and b's elements broadcast, as runs: their
 * length, *step each operand's step along them (y's, a's, b's). */
static int64_t bcast_walk(const xf_shape *y, const xf_shape *a, const xf_shape *b, xf_rt_iter *it, int64_t *step)
{
    int64_t dense[XF_MAX_DIMS];
    xf_rt_iter_init(it, y);
    xf_rt_dense_strides(y, dense);
    xf_rt_iter_add(it, dense, 0);
    xf_rt_iter_add_broadcast(it, a);
    xf_rt_iter_add_broadcast(it, b);
    return xf_rt_iter_runs(it, step);
}

static xf_status compare_run(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    (void)err;
    xf_rt_iter it;
    int64_t step[XF_RT_MAX_OPERANDS];
    int64_t len = bcast_walk(&out[0].shape, &in[0].shape, &in[1].shape, &it, step);
    int64_t runs = len ? xf_rt_numel(&out[0]) / len : 0;
    uint8_t *o = out[0].data;
    for (int64_t r = 0; r < runs; r++, xf_rt_iter_next(&it)) {
        int64_t oa = it.off[1], ob = it.off[2];
        switch (in[0].dtype) {
        case XF_DT_FLOAT:
            compare_float(n->op, (const float *)in[0].data + oa, step[1], (const float *)in[1].data + ob, step[2],
                          o + it.off[0], len);
            break;
        case XF_DT_INT32:
            compare_int32_t(n->op, (const int32_t *)in[0].data + oa, step[1], (const int32_t *)in[1].data + ob, step[2],
                            o + it.off[0], len);
            break;
        default:
            compare_int64_t(n->op, (const int64_t *)in[0].data + oa, step[1], (const int64_t *)in[1].data + ob, step[2],
                            o + it.off[0], len);
            break;
        }
    }
    return XF_OK;
}

static bool compare_handles(const xf_graph *g, const xf_node *n)
{
    if ((n->op != XF_OP_EQUAL && n->op != XF_OP_GREATER && n->op != XF_OP_LESS && n->op != XF_OP_GREATER_OR_EQUAL &&
         n->op != XF_OP_LESS_OR_EQUAL) ||
        n->n_inputs != 2 || n->inputs[0] < 0 || n->inputs[1] < 0 || n->n_outputs != 1 || n->outputs[0] < 0)
        return false;
    const xf_value *a = &g->values[n->inputs[0]], *b = &g->values[n->inputs[1]], *y = &g->values[n->outputs[0]];
    return a->dtype == b->dtype && (a->dtype == XF_DT_FLOAT || a->dtype == XF_DT_INT32 || a->dtype == XF_DT_INT64) &&
           y->dtype == XF_DT_BOOL && a->shape.ndim >= 0 && b->shape.ndim >= 0 && y->shape.ndim >= 0;
}

static xf_status compare_prepare(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                                 const xf_tensor_view *out, xf_dn_node *st, xf_error *err)
{
    (void)c, (void)g, (void)n, (void)in, (void)out, (void)err;
    st->kernel = compare_run;
    return XF_OK;
}

const xf_dn_handler xf_dn_compare_handler = {compare_handles, NULL, compare_prepare, NULL};

/* Where(c, a, b) of a type of 1, 2, 4 or 8 bytes, broadcast: each element
 * copied as its bytes (NaN payloads and -0 kept) along the runs of
 * xf_rt_iter, c read as nonzero or not, as cpu_ref's; long runs in chunks
 * over the threads.  cpu_ref's walk took 4.2 ns an element (a Where of 64
 * x 256 x 256 floats against a scalar, 17.8 ms on one thread), and
 * transformers' exports run one on every head's attention scores (the
 * causal mask). */
/* each a mask of the condition's: branches would be mispredicted on
 * random conditions (15 ms for the Where above), selects of loads GCC does
 * not vectorize */
#define WHERE_PICK(T, ck, av, bv) (T)(((av) & (T)(0 - (T)((ck) != 0))) | ((bv) & (T) ~(T)(0 - (T)((ck) != 0))))
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define WHERE_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define WHERE_CLONES
#endif
#define WHERE_RUNS(T)                                                                                                  \
    WHERE_CLONES static void where_##T(const uint8_t *restrict c, int64_t sc, const T *restrict a, int64_t sa,      \
                                       const T *restrict b, int64_t sb, T *restrict o, int64_t n)                      \
    {                                                                                                                  \
        if (sc == 1 && sa == 1 && sb == 1)                                                                             \
            for (int64_t k = 0; k < n; k++)                                                                            \
                o[k] = WHERE_PICK(T, c[k], a[k], b[k]);                                                                \
        else if (sc == 1 && sa == 1 && sb == 0) {                                                                      \
            T bv = b[0];                                                                                               \
            for (int64_t k = 0; k < n; k++)                                                                            \
                o[k] = WHERE_PICK(T, c[k], a[k], bv);                                                                  \
        } else if (sc == 1 && sa == 0 && sb == 1) {                                                                    \
            T av = a[0];                                                                                               \
            for (int64_t k = 0; k < n; k++)                                                                            \
                o[k] = WHERE_PICK(T, c[k], av, b[k]);                                                                  \
        } else if (sc == 0) {                                                                                          \
            const T *from = c[0] ? a : b;                                                                              \
            int64_t sf = c[0] ? sa : sb;                                                                               \
            for (int64_t k = 0; k < n; k++)                                                                            \
                o[k] = from[k * sf];                                                                                   \
        } else                                                                                                         \
            for (int64_t k = 0; k < n; k++)                                                                            \
                o[k] = WHERE_PICK(T, c[k * sc], a[k * sa], b[k * sb]);                                                 \
    }
WHERE_RUNS(uint8_t)
WHERE_RUNS(uint16_t)
WHERE_RUNS(uint32_t)
WHERE_RUNS(uint64_t)

/* n elements of a run of elements of es bytes, from the offsets given
 * (in elements) */
static void where_of(size_t es, const uint8_t *c, int64_t sc, const void *a, int64_t sa, const void *b, int64_t sb,
                     void *o, int64_t n)
{
    switch (es) {
    case 1: where_uint8_t(c, sc, a, sa, b, sb, o, n); break;
    case 2: where_uint16_t(c, sc, a, sa, b, sb, o, n); break;
    case 4: where_uint32_t(c, sc, a, sa, b, sb, o, n); break;
    default: where_uint64_t(c, sc, a, sa, b, sb, o, n); break;
    }
}

static xf_status where_run(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    (void)n, (void)err;
    xf_rt_iter it;
    int64_t dense[XF_MAX_DIMS], step[XF_RT_MAX_OPERANDS];
    xf_rt_iter_init(&it, &out[0].shape);
    xf_rt_dense_strides(&out[0].shape, dense);
    xf_rt_iter_add(&it, dense, 0);
    for (int k = 0; k < 3; k++)
        xf_rt_iter_add_broadcast(&it, &in[k].shape);
    int64_t len = xf_rt_iter_runs(&it, step), runs = len ? xf_rt_numel(&out[0]) / len : 0;
    size_t es = xf_dtype_size(out[0].dtype);
    const uint8_t *c = in[0].data;
    const char *a = in[1].data, *b = in[2].data;
    char *o = out[0].data;
    int64_t size, chunks = xf_dn_chunks(len, &size);
    for (int64_t r = 0; r < runs; r++, xf_rt_iter_next(&it)) {
        if (chunks == 1) {
            where_of(es, c + it.off[1], step[1], a + it.off[2] * (int64_t)es, step[2], b + it.off[3] * (int64_t)es,
                     step[3], o + it.off[0] * (int64_t)es, len);
            continue;
        }
        XF_OMP_FOR(true)
        for (int64_t ch = 0; ch < chunks; ch++) {
            int64_t i = ch * size, m = len - i < size ? len - i : size;
            where_of(es, c + it.off[1] + i * step[1], step[1], a + (it.off[2] + i * step[2]) * (int64_t)es, step[2],
                     b + (it.off[3] + i * step[3]) * (int64_t)es, step[3], o + (it.off[0] + i) * (int64_t)es, m);
        }
    }
    return XF_OK;
}

static bool where_handles(const xf_graph *g, const xf_node *n)
{
    if (n->op != XF_OP_WHERE || n->n_inputs != 3 || n->n_outputs != 1 || n->outputs[0] < 0)
        return false;
    for (int k = 0; k < 3; k++)
        if (n->inputs[k] < 0 || g->values[n->inputs[k]].shape.ndim < 0)
            return false;
    const xf_value *c = &g->values[n->inputs[0]], *a = &g->values[n->inputs[1]], *b = &g->values[n->inputs[2]];
    const xf_value *y = &g->values[n->outputs[0]];
    size_t es = xf_dtype_size(y->dtype);
    return c->dtype == XF_DT_BOOL && a->dtype == y->dtype && b->dtype == y->dtype && y->shape.ndim >= 0 &&
           (es == 1 || es == 2 || es == 4 || es == 8) && y->dtype != XF_DT_STRING &&
           !(XF_DTM_PACKED & XF_DTM(y->dtype));
}

XF_DN_KERNEL_PREPARE(where_prepare, where_run)

const xf_dn_handler xf_dn_where_handler = {where_handles, NULL, where_prepare, NULL};

/* ---------------------------------------------------------------- Add, Sub, Mul, Div: both operands broadcast */

/* Additive attention's [B, T, 1, H] + [B, 1, T, H], a constant minus a
 * tensor (Sub(1, x)): cpu_ref's kernel walked every element (1.3 ms for
 * 2 x 37 x 37 x 512 on one thread).  Here the output goes as cpu_ref's
 * runs (xf_rt_iter_runs), each a loop the compiler vectorizes, the runs in
 * parts over the threads; each element is the float op, as cpu_ref's
 * (whose double result rounds to the same float).  Add, Sub and Mul of
 * int32 and int64 too (ONNX Runtime's older quantized models add an int32
 * bias per channel to ConvInteger's sums: 1 ns an element on cpu_ref),
 * wrapping as cpu_ref's int64 arithmetic does once stored. */
enum { BCAST_MIN_RUN = 16 };

#define OP_ADD(x, y) ((x) + (y))
#define OP_SUB(x, y) ((x) - (y))
#define OP_MUL(x, y) ((x) * (y))
#define OP_DIV(x, y) ((x) / (y))
#define OP_ADD_I32(x, y) ((int32_t)((uint32_t)(x) + (uint32_t)(y)))
#define OP_SUB_I32(x, y) ((int32_t)((uint32_t)(x) - (uint32_t)(y)))
#define OP_MUL_I32(x, y) ((int32_t)((uint32_t)(x) * (uint32_t)(y)))
#define OP_ADD_I64(x, y) ((int64_t)((uint64_t)(x) + (uint64_t)(y)))
#define OP_SUB_I64(x, y) ((int64_t)((uint64_t)(x) - (uint64_t)(y)))
#define OP_MUL_I64(x, y) ((int64_t)((uint64_t)(x) * (uint64_t)(y)))

#define BCAST_RUNS(name, T, E)                                                                                         \
    WHERE_CLONES static void name(const void *av, int64_t sa, const void *bv, int64_t sb, void *ov, int64_t n)         \
    {                                                                                                                  \
        const T *a = av, *b = bv;                                                                                      \
        T *o = ov;                                                                                                     \
        BINARY_RUN(T, E);                                                                                              \
    }
BCAST_RUNS(bcast_add, float, OP_ADD)
BCAST_RUNS(bcast_sub, float, OP_SUB)
BCAST_RUNS(bcast_mul, float, OP_MUL)
BCAST_RUNS(bcast_div, float, OP_DIV)
BCAST_RUNS(bcast_add_i32, int32_t, OP_ADD_I32)
BCAST_RUNS(bcast_sub_i32, int32_t, OP_SUB_I32)
BCAST_RUNS(bcast_mul_i32, int32_t, OP_MUL_I32)
BCAST_RUNS(bcast_add_i64, int64_t, OP_ADD_I64)
BCAST_RUNS(bcast_sub_i64, int64_t, OP_SUB_I64)
BCAST_RUNS(bcast_mul_i64, int64_t, OP_MUL_I64)

typedef void (*bcast_fn)(const void *a, int64_t sa, const void *b, int64_t sb, void *o, int64_t n);

/* The loop of op over type t; NULL where there is none (integer Div). */
static bcast_fn bcast_loop(xf_op op, xf_dtype t)
{
    int k = op == XF_OP_ADD ? 0 : op == XF_OP_SUB ? 1 : op == XF_OP_MUL ? 2 : op == XF_OP_DIV ? 3 : -1;
    static const bcast_fn floats[] = {bcast_add, bcast_sub, bcast_mul, bcast_div};
    static const bcast_fn i32[] = {bcast_add_i32, bcast_sub_i32, bcast_mul_i32, NULL};
    static const bcast_fn i64[] = {bcast_add_i64, bcast_sub_i64, bcast_mul_i64, NULL};
    if (k < 0)
        return NULL;
    return t == XF_DT_FLOAT ? floats[k] : t == XF_DT_INT32 ? i32[k] : t == XF_DT_INT64 ? i64[k] : NULL;
}

static xf_status bcast_run(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    (void)err;
    bcast_fn f = bcast_loop(n->op, out[0].dtype);
    size_t es = xf_dtype_size(out[0].dtype);
    xf_rt_iter it;
    int64_t step[XF_RT_MAX_OPERANDS], size;
    int64_t len = bcast_walk(&out[0].shape, &in[0].shape, &in[1].shape, &it, step);
    int64_t runs = len ? xf_rt_numel(&out[0]) / len : 0, parts = runs > 1 ? xf_dn_chunks(runs * len, &size) : 1;
    parts = parts < runs ? parts : runs;
    const char *a = in[0].data, *b = in[1].data;
    char *o = out[0].data;
    XF_OMP_FOR(parts > 1)
    for (int64_t p = 0; p < parts; p++) {
        xf_rt_iter at = it;
        int64_t first = p * runs / parts, last = (p + 1) * runs / parts;
        xf_rt_iter_seek(&at, first);
        for (int64_t r = first; r < last; r++, xf_rt_iter_next(&at))
            f(a + at.off[1] * (int64_t)es, step[1], b + at.off[2] * (int64_t)es, step[2], o + at.off[0] * (int64_t)es,
              len);
    }
    return XF_OK;
}

/* Add, Sub, Mul and Div of floats, Add, Sub and Mul of int32 or int64,
 * whose runs (as the shapes known when the session is made give them) are
 * long enough to pay for a call each. */
static bool bcast_handles(const xf_graph *g, const xf_node *n)
{
    if (n->n_inputs != 2 || n->n_outputs != 1 || n->inputs[0] < 0 || n->inputs[1] < 0 || n->outputs[0] < 0)
        return false;
    xf_dtype t = g->values[n->outputs[0]].dtype;
    if (!bcast_loop(n->op, t) || g->values[n->inputs[0]].dtype != t || g->values[n->inputs[1]].dtype != t)
        return false;
    const xf_shape *y = &g->values[n->outputs[0]].shape;
    if (y->ndim < 0 || xf_shape_numel(y) <= 0 || g->values[n->inputs[0]].shape.ndim < 0 ||
        g->values[n->inputs[1]].shape.ndim < 0)
        return false;
    xf_rt_iter it;
    int64_t step[XF_RT_MAX_OPERANDS];
    return bcast_walk(y, &g->values[n->inputs[0]].shape, &g->values[n->inputs[1]].shape, &it, step) >= BCAST_MIN_RUN;
}

XF_DN_KERNEL_PREPARE(bcast_prepare, bcast_run)

const xf_dn_handler xf_dn_bcast_binary_handler = {bcast_handles, NULL, bcast_prepare, NULL};
