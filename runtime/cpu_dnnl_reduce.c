/* Reductions on the cpu backend.  On oneDNN: float ReduceSum and
 * ReduceMean over one run of adjacent axes that is innermost, and the
 * global pools of values stored plain.  oneDNN's reduction kernels reduce
 * the last dim of a dense tensor only (any other dim, a trailing dim of 1
 * included, and the lp norms run its reference loops, slower than
 * cpu_ref's), so the input, stored plain, is seen as (outer, reduced), read
 * in place; sums are taken in float, as the kernels do, where cpu_ref sums
 * in double.  The other reductions over one run of axes, ArgMax, ArgMin,
 * LpNormalization and CumSum run on loops of the backend's own (below). */
#include "cpu_dnnl.h"

bool xf_dn_reduce_axes(const xf_graph *g, const xf_node *n, int rank, bool *reduced)
{
    const xf_tensor *t = NULL;
    int k = xf_dn_input(n, 1);
    if (k >= 0) {
        t = g->values[k].init;
        if (!t || t->dtype != XF_DT_INT64 || (xf_tensor_numel(t) > 0 && !t->data))
            return false;
    }
    int64_t m = t ? xf_tensor_numel(t) : n->attrs.has_axes ? n->attrs.n_axes : 0;
    for (int d = 0; d < rank; d++)
        reduced[d] = m == 0; /* no axes: all of them, unless noop_with_empty_axes */
    if (m == 0)
        return !n->attrs.noop_with_empty_axes;
    for (int64_t i = 0; i < m; i++) {
        int64_t ax = t ? ((const int64_t *)t->data)[i] : n->attrs.axes[i];
        ax = ax < 0 ? ax + rank : ax;
        if (ax < 0 || ax >= rank || reduced[ax])
            return false;
        reduced[ax] = true;
    }
    return true;
}

/* x as (outer, r, inner), the reduced axes (those of more than one
 * element) one run r; false where they are not. */
static bool reduce_run(const xf_shape *x, const bool *reduced, int64_t *outer, int64_t *r, int64_t *inner)
{
    int first = -1, last = -1;
    for (int d = 0; d < x->ndim; d++)
        if (reduced[d] && x->dims[d] > 1) {
            first = first < 0 ? d : first;
            last = d;
        }
    *outer = *r = *inner = 1;
    for (int d = 0; d < x->ndim; d++) {
        if (first >= 0 && d >= first && d <= last && !reduced[d] && x->dims[d] > 1)
            return false;
        int64_t *part = first < 0 || d < first ? outer : d <= last ? r : inner;
        *part *= x->dims[d];
    }
    return true;
}

static bool reduce_handles(const xf_graph *g, const xf_node *n)
{
    if ((n->op != XF_OP_REDUCE_SUM && n->op != XF_OP_REDUCE_MEAN) || n->n_outputs != 1 || n->outputs[0] < 0 ||
        xf_dn_input(n, 0) < 0 || !xf_dn_is_f32(g, n->inputs[0]) || !xf_dn_is_f32(g, n->outputs[0]))
        return false;
    const xf_shape *x = &g->values[n->inputs[0]].shape;
    bool reduced[XF_MAX_DIMS];
    int64_t outer, r, inner;
    /* one that reduces nothing (dims of 1) is no reduction to oneDNN, nor
     * one whose run is not innermost: the reorder that makes it so took 15
     * ms for the columns of 4096 x 1000 values (the backend's own loop:
     * 0.4 ms) */
    return x->ndim >= 1 && xf_shape_numel(x) > 0 && xf_dn_reduce_axes(g, n, x->ndim, reduced) &&
           reduce_run(x, reduced, &outer, &r, &inner) && r > 1 && inner == 1;
}

static xf_status reduce_finish(xf_dn_ctx *c, const xf_node *n, xf_dn_node *st, dnnl_alg_kind_t alg,
                               const dnnl_memory_desc_t *src_have, const dnnl_memory_desc_t *src,
                               const dnnl_memory_desc_t *dst_have, const dnnl_memory_desc_t *dst, xf_error *err)
{
    dnnl_reduction_desc_t d;
    XF_DN_TRY(err, n, dnnl_reduction_desc_init(&d, alg, src, dst, 0.0f, 0.0f));
    dnnl_primitive_desc_t pd;
    xf_status s = xf_dn_pd_create(c, n, &d, NULL, &pd, err);
    if (s != XF_OK)
        return s;
    s = xf_dn_bind(c, n, st, DNNL_ARG_SRC, 0, src_have, src, err);
    if (s == XF_OK)
        s = xf_dn_bind(c, n, st, DNNL_ARG_DST, -1, dst_have, dst, err);
    return xf_dn_finish_or_free(n, st, pd, s, err);
}

static xf_status reduce_prepare(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                                const xf_tensor_view *out, xf_dn_node *st, xf_error *err)
{
    (void)out;
    bool reduced[XF_MAX_DIMS];
    int64_t a, r, b;
    if (!xf_dn_reduce_axes(g, n, in[0].shape.ndim, reduced) || !reduce_run(&in[0].shape, reduced, &a, &r, &b))
        return xf_rt_bad_node(err, n, "the reduced axes are not one run");
    dnnl_alg_kind_t alg = n->op == XF_OP_REDUCE_MEAN ? dnnl_reduction_mean : dnnl_reduction_sum;
    /* (a, b, r) dense, reading the plain (a, r, b) with r innermost; the
     * output (a, b, 1) is the plain (a, 1, b) */
    dnnl_memory_desc_t src_have, src, dst;
    XF_DN_TRY(err, n, dnnl_memory_desc_init_by_tag(&src, 3, (dnnl_dims_t){a, b, r}, dnnl_f32, dnnl_abc));
    XF_DN_TRY(err, n, dnnl_memory_desc_init_by_tag(&dst, 3, (dnnl_dims_t){a, b, 1}, dnnl_f32, dnnl_abc));
    XF_DN_TRY(err, n, dnnl_memory_desc_init_by_strides(&src_have, 3, (dnnl_dims_t){a, b, r}, dnnl_f32,
                                                       (dnnl_dims_t){r * b, 1, b}));
    return reduce_finish(c, n, st, alg, &src_have, &src, &dst, &dst, err);
}

const xf_dn_handler xf_dn_reduce_handler = {reduce_handles, NULL, reduce_prepare, NULL};

xf_status xf_dn_global_reduce(xf_dn_ctx *c, const xf_node *n, const xf_shape *x, const xf_shape *y, bool max,
                              xf_dn_node *st, xf_error *err)
{
    /* (N, C, 1, ..., 1, S) with S the spatial size: the same bytes */
    dnnl_dims_t dims;
    int64_t spatial = 1;
    for (int d = 0; d < x->ndim; d++) {
        spatial *= d >= 2 ? x->dims[d] : 1;
        dims[d] = d < 2 ? x->dims[d] : 1;
    }
    dims[x->ndim - 1] = spatial;
    xf_shape flat = {.ndim = x->ndim};
    for (int d = 0; d < x->ndim; d++)
        flat.dims[d] = dims[d];
    dnnl_memory_desc_t src, dst_have, dst;
    xf_dn_md_plain(&flat, dnnl_f32, &src);
    xf_dn_md_plain(y, dnnl_f32, &dst);
    xf_dn_operand_md_typed(c, n, -1, y, dnnl_f32, &dst_have);
    return reduce_finish(c, n, st, max ? dnnl_reduction_max : dnnl_reduction_mean, &src, &src, &dst_have, &dst, err);
}

/* ---------------------------------------------------------------- the backend's own loops */

/* Reduce{Max,Min,Prod,L1,L2,SumSquare,LogSum,LogSumExp} of floats over one
 * run of axes, ReduceSum and ReduceMean over one that is not innermost,
 * ArgMax, ArgMin and LpNormalization (its norms folded as ReduceL1's and
 * ReduceL2's are, then divided by), on loops of the backend's own (oneDNN
 * 2.6 reduces only the last dim with a kernel, has no arg reductions, and
 * cpu_ref walks a strided reduction with an iterator: 35 ms for a ReduceMin
 * over the channels of 8 x 256 x 64 x 64 values on one thread).  x is seen
 * as (outer, r, inner): rows of r values when inner is 1, folded in lanes
 * (short ones in order); else r rows of inner columns, folded a block of
 * columns at a time, which reads x in order.  Results are cpu_ref's:
 * maxima, minima and the indices exactly (NaN is the extreme, as in cpu_ref
 * and numpy; of equal zeros of either sign the one kept may differ), the
 * sums and products in double in another order; LogSumExp's terms e^(x -
 * max) with xf_dn_exp_neg. */
enum { RED_LANES = 16, RED_DLANES = 8, RED_COLS = 2048 };

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define RED_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define RED_CLONES
#endif

/* the fold of v into r that cpu_ref's reductions make; NaN wins */
#define RED_MAX(r, v) r = (v) > r || (v) != (v) ? (v) : r
#define RED_MIN(r, v) r = (v) < r || (v) != (v) ? (v) : r

/* The largest (smallest) of the len values at x, NaN when one is NaN;
 * -inf (inf) when there are none. */
RED_CLONES static float row_extreme(const float *restrict x, int64_t len, bool min)
{
    float m[RED_LANES];
    for (int l = 0; l < RED_LANES; l++)
        m[l] = min ? INFINITY : -INFINITY;
    int64_t i = 0;
    if (min)
        for (; i + RED_LANES <= len; i += RED_LANES)
            for (int l = 0; l < RED_LANES; l++)
                RED_MIN(m[l], x[i + l]);
    else
        for (; i + RED_LANES <= len; i += RED_LANES)
            for (int l = 0; l < RED_LANES; l++)
                RED_MAX(m[l], x[i + l]);
    float r = m[0];
    for (int l = 1; l < RED_LANES; l++) {
        if (min)
            RED_MIN(r, m[l]);
        else
            RED_MAX(r, m[l]);
    }
    for (; i < len; i++) {
        if (min)
            RED_MIN(r, x[i]);
        else
            RED_MAX(r, x[i]);
    }
    return r;
}

/* The sums in double: of x, |x|, x^2, e^(x - shift) (shift the largest x),
 * or the product. */
typedef enum red_sum { SUM_PLAIN, SUM_ABS, SUM_SQUARE, SUM_EXP, SUM_PROD } red_sum;

/* kind's term of the value v, and two terms (or folds) combined */
#define RED_TERM(kind, v, shift)                                                                                       \
    ((kind) == SUM_ABS      ? fabs((double)(v))                                                                        \
     : (kind) == SUM_SQUARE ? (double)(v) * (double)(v)                                                                \
     : (kind) == SUM_EXP    ? xf_dn_exp_neg((double)(v) - (shift))                                                     \
                            : (double)(v))
#define RED_COMBINE(kind, a, b) ((kind) == SUM_PROD ? (a) * (b) : (a) + (b))
#define RED_STEP(kind, r, v, shift) r = RED_COMBINE(kind, r, RED_TERM(kind, v, shift))

/* kind's fold of the len values at x, in RED_DLANES lanes (a loop for
 * each kind, in which RED_TERM's choice is made by the compiler) */
RED_CLONES static double row_sum(const float *restrict x, int64_t len, red_sum kind, double shift)
{
    double init = kind == SUM_PROD ? 1.0 : 0.0, a[RED_DLANES];
    int64_t i = 0;
    for (int l = 0; l < RED_DLANES; l++)
        a[l] = init;
    switch (kind) {
#define ROW_CASE(K)                                                                                                    \
    case K:                                                                                                            \
        for (; i + RED_DLANES <= len; i += RED_DLANES)                                                                 \
            for (int l = 0; l < RED_DLANES; l++)                                                                       \
                RED_STEP(K, a[l], x[i + l], shift);                                                                    \
        break;
        ROW_CASE(SUM_PLAIN)
        ROW_CASE(SUM_ABS)
        ROW_CASE(SUM_SQUARE)
        ROW_CASE(SUM_EXP)
        ROW_CASE(SUM_PROD)
#undef ROW_CASE
    }
    double r = a[0];
    for (int l = 1; l < RED_DLANES; l++)
        r = RED_COMBINE(kind, r, a[l]);
    for (; i < len; i++)
        RED_STEP(kind, r, x[i], shift);
    return r;
}

/* Columns [0, w) of the r rows at x, inner apart: their extremes into m.
 * The column loops fold several rows a pass, which cuts what they load
 * and store of their folds (the ReduceSum over 256 of 8 x 256 x 4096
 * values took 4 ms folding one row a pass, 1.9 four); two for the
 * extremes, whose longer chains of selects GCC does not vectorize. */
RED_CLONES static void cols_extreme(const float *restrict x, int64_t r, int64_t inner, int64_t w, bool min,
                                    float *restrict m)
{
    for (int64_t j = 0; j < w; j++)
        m[j] = min ? INFINITY : -INFINITY;
    int64_t k = 0;
    for (; k + 2 <= r; k += 2) {
        const float *r0 = x + k * inner;
        if (min)
            for (int64_t j = 0; j < w; j++) {
                float a = r0[j], b = r0[inner + j];
                RED_MIN(a, b);
                RED_MIN(m[j], a);
            }
        else
            for (int64_t j = 0; j < w; j++) {
                float a = r0[j], b = r0[inner + j];
                RED_MAX(a, b);
                RED_MAX(m[j], a);
            }
    }
    for (; k < r; k++) {
        const float *row = x + k * inner;
        if (min)
            for (int64_t j = 0; j < w; j++)
                RED_MIN(m[j], row[j]);
        else
            for (int64_t j = 0; j < w; j++)
                RED_MAX(m[j], row[j]);
    }
}

/* The same columns' kind folds into a; shift: each column's (SUM_EXP). */
RED_CLONES static void cols_sum(const float *restrict x, int64_t r, int64_t inner, int64_t w, red_sum kind,
                                const float *restrict shift, double *restrict a)
{
    for (int64_t j = 0; j < w; j++)
        a[j] = kind == SUM_PROD ? 1.0 : 0.0;
    int64_t k = 0;
    switch (kind) {
#define COLS_CASE(K)                                                                                                   \
    case K:                                                                                                            \
        for (; k + 4 <= r; k += 4) {                                                                                   \
            const float *r0 = x + k * inner, *r1 = r0 + inner, *r2 = r1 + inner, *r3 = r2 + inner;                     \
            for (int64_t j = 0; j < w; j++) {                                                                          \
                double h = RED_COMBINE(K, RED_TERM(K, r0[j], shift[j]), RED_TERM(K, r1[j], shift[j]));                 \
                double l = RED_COMBINE(K, RED_TERM(K, r2[j], shift[j]), RED_TERM(K, r3[j], shift[j]));                 \
                a[j] = RED_COMBINE(K, a[j], RED_COMBINE(K, h, l));                                                     \
            }                                                                                                          \
        }                                                                                                              \
        for (; k < r; k++)                                                                                             \
            for (int64_t j = 0; j < w; j++)                                                                            \
                RED_STEP(K, a[j], x[k * inner + j], shift[j]);                                                         \
        break;
        COLS_CASE(SUM_PLAIN)
        COLS_CASE(SUM_ABS)
        COLS_CASE(SUM_SQUARE)
        COLS_CASE(SUM_EXP)
        COLS_CASE(SUM_PROD)
#undef COLS_CASE
    }
}

/* The index along the len values at x, inner apart, of the first (last)
 * of the extremes, m being that extreme: NaN, when it is, counts as equal
 * to NaN.  In blocks of RED_LANES where the values are consecutive, each
 * searched only when it holds one. */
RED_CLONES static int64_t row_index_of(const float *restrict x, int64_t len, float m, bool last)
{
    bool nan = m != m;
#define RED_HIT(v) (nan ? (v) != (v) : (v) == m)
    if (!last) {
        int64_t i = 0;
        for (; i + RED_LANES <= len; i += RED_LANES) {
            int hit = 0;
            for (int l = 0; l < RED_LANES; l++)
                hit |= RED_HIT(x[i + l]);
            if (hit)
                break;
        }
        for (; i < len; i++)
            if (RED_HIT(x[i]))
                return i;
    } else {
        int64_t i = len;
        for (; i - RED_LANES >= 0; i -= RED_LANES) {
            int hit = 0;
            for (int l = 0; l < RED_LANES; l++)
                hit |= RED_HIT(x[i - RED_LANES + l]);
            if (hit)
                break;
        }
        for (i = i - 1; i >= 0; i--)
            if (RED_HIT(x[i]))
                return i;
    }
#undef RED_HIT
    return 0; /* not reached: m is one of the values */
}

/* ArgMax (ArgMin) of columns [0, w) of the r >= 1 rows at x, inner apart,
 * into idx, best holding each column's extreme so far: as cpu_ref's
 * extreme_index takes an element, rows in order. */
#define ARG_TAKE(v, k)                                                                                                 \
    do {                                                                                                               \
        bool take_ = b != b ? last && (v) != (v) : (v) != (v) || (min ? (v) < b : (v) > b) || (last && (v) == b);      \
        best[j] = take_ ? (v) : b;                                                                                     \
        idx[j] = take_ ? (k) : idx[j];                                                                                 \
    } while (0)
RED_CLONES static void cols_arg(const float *restrict x, int64_t r, int64_t inner, int64_t w, bool min, bool last,
                                float *restrict best, int64_t *restrict idx)
{
    for (int64_t j = 0; j < w; j++) {
        best[j] = x[j];
        idx[j] = 0;
    }
    for (int64_t k = 1; k < r; k++) {
        const float *row = x + k * inner;
        for (int64_t j = 0; j < w; j++) {
            float v = row[j], b = best[j];
            ARG_TAKE(v, k);
        }
    }
}
#undef ARG_TAKE

/* x as (outer, r, inner) around the axes n reduces, read from its
 * attributes or its axes input as cpu_ref reads them; false where they are
 * not one run (or none with noop_with_empty_axes), which cpu_ref then
 * runs. */
static bool loop_geometry(const xf_node *n, const xf_tensor_view *in, int64_t *outer, int64_t *r, int64_t *inner)
{
    const xf_shape *x = &in[0].shape;
    int rank = x->ndim;
    bool reduced[XF_MAX_DIMS] = {false};
    if (n->op == XF_OP_ARG_MAX || n->op == XF_OP_ARG_MIN || n->op == XF_OP_LP_NORM) {
        int axis = xf_rt_axis(n->attrs.axis, rank);
        if (axis < 0)
            return false;
        reduced[axis] = true;
    } else {
        int64_t m = n->attrs.has_axes                          ? n->attrs.n_axes
                    : n->n_inputs > 1 && xf_rt_present(&in[1]) ? xf_rt_numel(&in[1])
                                                               : 0;
        for (int64_t i = 0; i < m; i++) {
            int64_t v = n->attrs.has_axes ? n->attrs.axes[i] : xf_rt_load_i64(in[1].dtype, in[1].data, i);
            int ax = xf_rt_axis(v, rank);
            if (ax < 0)
                return false;
            reduced[ax] = true;
        }
        if (m == 0 && n->attrs.noop_with_empty_axes)
            return false;
        for (int d = 0; m == 0 && d < rank; d++)
            reduced[d] = true;
    }
    return reduce_run(x, reduced, outer, r, inner);
}

/* one output element of Reduce`op` from its fold (and, for LogSumExp, the
 * values' largest, m) */
static inline float reduce_final(xf_op op, double a, float m, int64_t r)
{
    switch (op) {
    case XF_OP_REDUCE_MEAN: return (float)(a / (double)r);
    case XF_OP_REDUCE_L2: return (float)sqrt(a);
    case XF_OP_REDUCE_LOG_SUM: return (float)log(a);
    /* a non-finite largest value is the result: +-inf or NaN */
    case XF_OP_REDUCE_LOG_SUM_EXP: return isfinite(m) ? (float)(log(a) + m) : m;
    default: return (float)a;
    }
}

static red_sum sum_kind(const xf_node *n)
{
    switch (n->op) {
    case XF_OP_LP_NORM: return n->attrs.lp_p == 1 ? SUM_ABS : SUM_SQUARE;
    case XF_OP_REDUCE_L1: return SUM_ABS;
    case XF_OP_REDUCE_L2:
    case XF_OP_REDUCE_SUM_SQUARE: return SUM_SQUARE;
    case XF_OP_REDUCE_LOG_SUM_EXP: return SUM_EXP;
    case XF_OP_REDUCE_PROD: return SUM_PROD;
    default: return SUM_PLAIN;
    }
}

/* LpNormalization's values over their norm (0 where it is 0), in double,
 * rounded once, as cpu_ref's: count values at x into y */
RED_CLONES static void row_divide(const float *restrict x, float *restrict y, int64_t count, double norm)
{
    for (int64_t i = 0; i < count; i++)
        y[i] = norm == 0.0 ? 0.0f : (float)((double)x[i] / norm);
}

/* and the r rows of columns [0, w), inner apart, by each column's norm */
RED_CLONES static void cols_divide(const float *restrict x, float *restrict y, int64_t r, int64_t inner, int64_t w,
                                   const double *restrict norm)
{
    for (int64_t k = 0; k < r; k++)
        for (int64_t j = 0; j < w; j++)
            y[k * inner + j] = norm[j] == 0.0 ? 0.0f : (float)((double)x[k * inner + j] / norm[j]);
}

/* A row of fewer than RED_LANES values, in order: its extreme, or with
 * idx its index as cpu_ref's extreme_index takes it (calls of the cloned
 * row loops, through the clones' dispatch, took twice cpu_ref's time on
 * rows of 2 and 3). */
static inline float short_extreme(const float *x, int64_t len, bool min, bool last, int64_t *idx)
{
    float b = len ? x[0] : min ? INFINITY : -INFINITY;
    int64_t at = 0;
    for (int64_t i = 1; i < len; i++) {
        float v = x[i];
        bool take = b != b ? last && v != v : v != v || (min ? v < b : v > b) || (last && v == b);
        b = take ? v : b;
        at = take ? i : at;
    }
    if (idx)
        *idx = at;
    return b;
}

/* Rows [0, rows) (inner == 1): each the reduction of its r values at x. */
/* Rows of two values (a spectrum's real and imaginary parts: |X|^2 or |X|
 * after an STFT) for SumSquare, L1 and L2, in one loop the compiler
 * vectorizes: a row at a time took 4.4 ns (Whisper's 1.2 M
 * power spectrum values, 5.3 ms).  Exactly the row loop's sums. */
RED_CLONES static void pair_sums(const float *restrict x, int64_t rows, red_sum kind, bool root, float *restrict y)
{
    for (int64_t t = 0; t < rows; t++) {
        double a = RED_TERM(kind, x[2 * t], 0.0) + RED_TERM(kind, x[2 * t + 1], 0.0);
        y[t] = (float)(root ? sqrt(a) : a);
    }
}

static void reduce_rows(const xf_node *n, const float *x, int64_t rows, int64_t r, float *y, int64_t *idx)
{
    xf_op op = n->op;
    bool min = op == XF_OP_REDUCE_MIN || op == XF_OP_ARG_MIN, last = n->attrs.select_last_index != 0;
    bool arg = op == XF_OP_ARG_MAX || op == XF_OP_ARG_MIN, extreme = op == XF_OP_REDUCE_MAX || op == XF_OP_REDUCE_MIN;
    red_sum kind = sum_kind(n);
    /* (ReduceSum and ReduceMean of innermost runs are oneDNN's) */
    if (r == 2 && (op == XF_OP_REDUCE_SUM_SQUARE || op == XF_OP_REDUCE_L1 || op == XF_OP_REDUCE_L2)) {
        pair_sums(x, rows, kind, op == XF_OP_REDUCE_L2, y);
        return;
    }
    for (int64_t t = 0; t < rows; t++, x += r) {
        if (r < RED_LANES && (arg || extreme)) {
            float m = short_extreme(x, r, min, last, arg ? &idx[t] : NULL);
            if (!arg)
                y[t] = m;
        } else if (extreme)
            y[t] = row_extreme(x, r, min);
        else if (arg)
            idx[t] = row_index_of(x, r, row_extreme(x, r, min), last);
        else {
            float m = op == XF_OP_REDUCE_LOG_SUM_EXP ? row_extreme(x, r, false) : 0.0f;
            double a = kind == SUM_PROD ? 1.0 : 0.0;
            if (r < RED_LANES)
                for (int64_t i = 0; i < r; i++)
                    RED_STEP(kind, a, x[i], m);
            else
                a = row_sum(x, r, kind, m);
            if (op == XF_OP_LP_NORM)
                row_divide(x, y + t * r, r, kind == SUM_SQUARE ? sqrt(a) : a);
            else
                y[t] = reduce_final(op, a, m, r);
        }
    }
}

/* Columns [j, j + w) of output row o (inner > 1) */
static void reduce_cols(const xf_node *n, const float *x, int64_t r, int64_t inner, int64_t w, float *y, int64_t *idx)
{
    xf_op op = n->op;
    bool min = op == XF_OP_REDUCE_MIN || op == XF_OP_ARG_MIN;
    float m[RED_COLS];
    double a[RED_COLS];
    if (op == XF_OP_REDUCE_MAX || op == XF_OP_REDUCE_MIN) {
        cols_extreme(x, r, inner, w, min, y);
        return;
    }
    if (op == XF_OP_ARG_MAX || op == XF_OP_ARG_MIN) {
        cols_arg(x, r, inner, w, min, n->attrs.select_last_index != 0, m, idx);
        return;
    }
    /* LogSumExp's shifts (where one is not finite, the terms are not used) */
    bool lse = op == XF_OP_REDUCE_LOG_SUM_EXP;
    if (lse)
        cols_extreme(x, r, inner, w, false, m);
    cols_sum(x, r, inner, w, sum_kind(n), m, a);
    if (op == XF_OP_LP_NORM) {
        for (int64_t j = 0; j < w && n->attrs.lp_p == 2; j++)
            a[j] = sqrt(a[j]);
        cols_divide(x, y, r, inner, w, a);
        return;
    }
    for (int64_t j = 0; j < w; j++)
        y[j] = reduce_final(op, a[j], lse ? m[j] : 0.0f, r);
}

static xf_status reduce_loop_run(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    bool arg = n->op == XF_OP_ARG_MAX || n->op == XF_OP_ARG_MIN, lp = n->op == XF_OP_LP_NORM;
    int64_t outer, r, inner;
    /* what cpu_ref refuses, or gives as its own (reductions of empty sets,
     * whose input has no buffer to point into), it runs */
    if (!loop_geometry(n, in, &outer, &r, &inner) || xf_rt_numel(&out[0]) != outer * inner * (lp ? r : 1) ||
        r == 0 || (lp && n->attrs.lp_p != 1 && n->attrs.lp_p != 2))
        return arg  ? xf_ref_arg_reduce(n, in, out, err)
               : lp ? xf_ref_lp_norm(n, in, out, err)
                    : xf_ref_reduce(n, in, out, err);
    const float *x = in[0].data;
    float *y = arg ? NULL : out[0].data;
    int64_t *idx = arg ? out[0].data : NULL;
    /* rows in parts of some XF_DN_CHUNK_MIN values, columns a block each */
    int64_t part = r > 0 && r < XF_DN_CHUNK_MIN ? XF_DN_CHUNK_MIN / r : 1;
    int64_t blocks = (inner + RED_COLS - 1) / RED_COLS, tasks = inner == 1 ? (outer + part - 1) / part : outer * blocks;
    XF_OMP_FOR(tasks > 1 && xf_rt_numel(&in[0]) >= XF_DN_CHUNK_MIN)
    for (int64_t t = 0; t < tasks; t++) {
        if (inner == 1) {
            int64_t first = t * part, rows = outer - first < part ? outer - first : part;
            reduce_rows(n, x + first * r, rows, r, y ? y + first * (lp ? r : 1) : NULL, idx ? idx + first : NULL);
            continue;
        }
        /* LpNormalization's output has the input's offsets */
        int64_t o = t / blocks, j = t % blocks * RED_COLS, w = inner - j < RED_COLS ? inner - j : RED_COLS;
        reduce_cols(n, x + o * r * inner + j, r, inner, w, y ? y + o * inner * (lp ? r : 1) + j : NULL,
                    idx ? idx + o * inner + j : NULL);
    }
    return XF_OK;
}

/* handler_for sends it the Reduce ops, ArgMax, ArgMin and LpNormalization
 * only */
static bool reduce_loop_handles(const xf_graph *g, const xf_node *n)
{
    bool arg = n->op == XF_OP_ARG_MAX || n->op == XF_OP_ARG_MIN;
    if (n->op == XF_OP_LP_NORM)
        return n->n_inputs == 1 && xf_dn_all_f32(g, n) && (n->attrs.lp_p == 1 || n->attrs.lp_p == 2) &&
               xf_rt_axis(n->attrs.axis, g->values[n->inputs[0]].shape.ndim) >= 0;
    if (n->n_outputs != 1 || n->outputs[0] < 0 || xf_dn_input(n, 0) < 0 ||
        g->values[n->inputs[0]].dtype != XF_DT_FLOAT ||
        g->values[n->outputs[0]].dtype != (arg ? XF_DT_INT64 : XF_DT_FLOAT))
        return false;
    const xf_shape *x = &g->values[n->inputs[0]].shape;
    if (x->ndim < 1)
        return false;
    if (arg)
        return xf_rt_axis(n->attrs.axis, x->ndim) >= 0;
    bool reduced[XF_MAX_DIMS];
    int64_t outer, r, inner;
    return xf_dn_reduce_axes(g, n, x->ndim, reduced) && reduce_run(x, reduced, &outer, &r, &inner);
}

XF_DN_KERNEL_PREPARE(reduce_loop_prepare, reduce_loop_run)

/* ---------------------------------------------------------------- CumSum */

/* CumSum of floats: cpu_ref's sums in double (the first the element
 * itself, -0 kept; exclusive: the sum before it, from 0), each rounded to
 * float, along lines of the axis (reverse: from their ends); with dims
 * after the axis, CUMSUM_COLS columns at once, which the compiler
 * vectorizes; the lines or blocks of columns over the threads.
 * cpu_ref's loads and stores of any type took 80 times ONNX Runtime's
 * time along the first of 1000 x 1024 floats. */
enum { CUMSUM_COLS = 256 };

static void cumsum_line(const float *x, float *y, int64_t len, int64_t step, bool rev, bool excl)
{
    double acc = 0.0;
    for (int64_t k = 0; k < len; k++) {
        int64_t at = (rev ? len - 1 - k : k) * step;
        double v = x[at], before = acc;
        acc = k == 0 ? v : acc + v;
        y[at] = (float)(excl ? before : acc);
    }
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static void
cumsum_cols(const float *restrict x, float *restrict y, int64_t len, int64_t inner, int64_t cols, bool rev,
            bool excl)
{
    double acc[CUMSUM_COLS];
    for (int64_t k = 0; k < len; k++) {
        int64_t at = (rev ? len - 1 - k : k) * inner;
        const float *xr = x + at;
        float *yr = y + at;
        if (k == 0)
            for (int64_t j = 0; j < cols; j++) {
                acc[j] = xr[j];
                yr[j] = excl ? 0.0f : xr[j];
            }
        else if (excl)
            for (int64_t j = 0; j < cols; j++) {
                yr[j] = (float)acc[j];
                acc[j] += xr[j];
            }
        else
            for (int64_t j = 0; j < cols; j++) {
                acc[j] += xr[j];
                yr[j] = (float)acc[j];
            }
    }
}

static xf_status cumsum_run(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_shape *xs = &in[0].shape;
    int axis = xf_rt_numel(&in[1]) == 1 ? xf_rt_axis(xf_rt_load_i64(in[1].dtype, in[1].data, 0), xs->ndim) : -1;
    if (axis < 0 || xf_rt_numel(&in[0]) == 0)
        return xf_ref_cumsum(n, in, out, err);
    int64_t outer = xf_rt_dims_product(xs, 0, axis), len = xs->dims[axis];
    int64_t inner = xf_rt_dims_product(xs, axis + 1, xs->ndim);
    bool rev = n->attrs.cumsum_reverse, excl = n->attrs.cumsum_exclusive;
    const float *x = in[0].data;
    float *y = out[0].data;
    int64_t blocks = (inner + CUMSUM_COLS - 1) / CUMSUM_COLS, parts = outer * blocks;
    XF_OMP_FOR(parts > 1 && outer * len * inner >= 2 * XF_DN_CHUNK_MIN)
    for (int64_t p = 0; p < parts; p++) {
        int64_t o = p / blocks, j0 = (p % blocks) * CUMSUM_COLS, off = o * len * inner + j0;
        if (inner == 1)
            cumsum_line(x + off, y + off, len, 1, rev, excl);
        else
            cumsum_cols(x + off, y + off, len, inner, inner - j0 < CUMSUM_COLS ? inner - j0 : CUMSUM_COLS, rev, excl);
    }
    return XF_OK;
}

static bool cumsum_handles(const xf_graph *g, const xf_node *n)
{
    return n->n_inputs == 2 && n->n_outputs == 1 && xf_dn_input(n, 0) >= 0 && xf_dn_input(n, 1) >= 0 &&
           g->values[n->inputs[0]].dtype == XF_DT_FLOAT && g->values[n->outputs[0]].dtype == XF_DT_FLOAT;
}

XF_DN_KERNEL_PREPARE(cumsum_prepare, cumsum_run)

const xf_dn_handler xf_dn_cumsum_handler = {cumsum_handles, NULL, cumsum_prepare, NULL};

const xf_dn_handler xf_dn_reduce_loop_handler = {reduce_loop_handles, NULL, reduce_loop_prepare, NULL};
