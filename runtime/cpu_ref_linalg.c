/* cpu_ref matrix products: MatMul (numpy matmul: batched, broadcasting,
 * 1-D operands) and Gemm, float32 and double accumulated in double; Einsum
 * over every numeric type; Det. */
#include "xf_op_plans.h"
#include "xf_rt_internal.h"

#include <math.h>
#include <stdlib.h>

/* With GCC on x86-64 the row kernel also has an AVX2 copy, chosen when the
 * program loads on a CPU that has it: four doubles per instruction instead
 * of two, and no FMA (AVX2 alone does not enable it; the products and sums
 * round one at a time as in the plain copy, so both give the same bits). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define XF_REF_AVX2_CLONE __attribute__((target_clones("avx2", "default")))
#else
#define XF_REF_AVX2_CLONE
#endif

/* rows (1 or 2) rows of c += those rows of a (t columns) times b (t x p),
 * four values of t at a time; the two rows share their loads of b. */
XF_REF_AVX2_CLONE static void rows_in_order(int rows, int64_t t, int64_t p, const double *restrict a, int64_t lda,
                                            const double *restrict b, int64_t ldb, double *restrict c, int64_t ldc)
{
    double *c0 = c, *c1 = rows == 2 ? c + ldc : c;
    const double *x0 = a, *x1 = rows == 2 ? a + lda : a;
    int64_t s = 0;
    for (; s + 4 <= t; s += 4) {
        const double *b0 = b + s * ldb, *b1 = b0 + ldb, *b2 = b1 + ldb, *b3 = b2 + ldb;
        double p0 = x0[s], p1 = x0[s + 1], p2 = x0[s + 2], p3 = x0[s + 3];
        if (rows == 2) {
            double q0 = x1[s], q1 = x1[s + 1], q2 = x1[s + 2], q3 = x1[s + 3];
            for (int64_t j = 0; j < p; j++) {
                double v0 = b0[j], v1 = b1[j], v2 = b2[j], v3 = b3[j];
                c0[j] = (((c0[j] + p0 * v0) + p1 * v1) + p2 * v2) + p3 * v3;
                c1[j] = (((c1[j] + q0 * v0) + q1 * v1) + q2 * v2) + q3 * v3;
            }
        } else {
            for (int64_t j = 0; j < p; j++)
                c0[j] = (((c0[j] + p0 * b0[j]) + p1 * b1[j]) + p2 * b2[j]) + p3 * b3[j];
        }
    }
    for (; s < t; s++) {
        const double *b0 = b + s * ldb;
        for (int r = 0; r < rows; r++) {
            double *cr = r ? c1 : c0, v = r ? x1[s] : x0[s];
            for (int64_t j = 0; j < p; j++)
                cr[j] += v * b0[j];
        }
    }
}

/* c (m x p, rows ldc apart) += a (m x t, rows lda apart) times b (t x p,
 * rows ldb apart), every element's products added in order of t, as a
 * loop per element would.  Tiles of b stay in cache while every row of a
 * passes over them, and four products go into an element per load and
 * store of it. */
void xf_rt_gemm_in_order(int64_t m, int64_t t, int64_t p, const double *a, int64_t lda, const double *b, int64_t ldb,
                         double *restrict c, int64_t ldc)
{
    enum { P_TILE = 256, T_TILE = 64 };
    for (int64_t p0 = 0; p0 < p; p0 += P_TILE) {
        int64_t pn = p - p0 < P_TILE ? p - p0 : P_TILE;
        for (int64_t t0 = 0; t0 < t; t0 += T_TILE) {
            int64_t tn = t - t0 < T_TILE ? t - t0 : T_TILE;
            int64_t i = 0;
            for (; i + 2 <= m; i += 2)
                rows_in_order(2, tn, pn, a + i * lda + t0, lda, b + t0 * ldb + p0, ldb, c + i * ldc + p0, ldc);
            if (i < m)
                rows_in_order(1, tn, pn, a + i * lda + t0, lda, b + t0 * ldb + p0, ldb, c + i * ldc + p0, ldc);
        }
    }
}

/* Element i of a float (or, with dt double, a double) operand. */
static inline double operand(xf_dtype dt, const void *p, int64_t i)
{
    return dt == XF_DT_DOUBLE ? ((const double *)p)[i] : ((const float *)p)[i];
}

/* One (m x k) by (k x n) product into acc; element (i, j) of an operand is
 * at i * row + j * col, so transposed operands are just other strides.
 * Each sum runs over t in order: the operands go to doubles a band of 64
 * values of t at a time (whole operands as doubles could be twice a large
 * weight) and each band's products are added in turn. */
xf_status xf_rt_matmul_block(xf_dtype dt, const void *a, int64_t a_row, int64_t a_col, const void *b, int64_t b_row,
                             int64_t b_col, int64_t m, int64_t k, int64_t n, double *acc)
{
    enum { BAND = 64 };
    for (int64_t i = 0; i < m * n; i++)
        acc[i] = 0.0;
    double *ad = malloc(sizeof *ad * (size_t)(m * BAND > 0 ? m * BAND : 1));
    double *bd = malloc(sizeof *bd * (size_t)(n * BAND > 0 ? n * BAND : 1));
    for (int64_t t0 = 0; ad && bd && t0 < k; t0 += BAND) {
        int64_t tn = k - t0 < BAND ? k - t0 : BAND;
        for (int64_t i = 0; i < m; i++)
            for (int64_t t = 0; t < tn; t++)
                ad[i * tn + t] = operand(dt, a, i * a_row + (t0 + t) * a_col);
        for (int64_t t = 0; t < tn; t++)
            for (int64_t j = 0; j < n; j++)
                bd[t * n + j] = operand(dt, b, (t0 + t) * b_row + j * b_col);
        xf_rt_gemm_in_order(m, tn, n, ad, tn, bd, n, acc, n);
    }
    xf_status st = ad && bd ? XF_OK : XF_ERR_NOMEM;
    free(ad);
    free(bd);
    return st;
}

xf_status xf_rt_matmul_geometry(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                                xf_rt_matmul *mm, xf_error *err)
{
    /* A 1-D A is a row (1, K), a 1-D B a column (K, 1); the output simply
     * lacks that dimension, which does not change the element order. */
    xf_shape as = in[0].shape, bs = in[1].shape;
    if (as.ndim < 1 || bs.ndim < 1)
        return xf_rt_bad_node(err, n, "operands must have at least one dimension");
    if (as.ndim == 1)
        as = xf_shape_make(2, (int64_t[]){1, as.dims[0]});
    if (bs.ndim == 1)
        bs = xf_shape_make(2, (int64_t[]){bs.dims[0], 1});
    int64_t m = as.dims[as.ndim - 2], k = as.dims[as.ndim - 1], nn = bs.dims[bs.ndim - 1];
    if (bs.dims[bs.ndim - 2] != k)
        return xf_rt_bad_node(err, n, "inner dimensions differ (%lld vs %lld)", (long long)k,
                              (long long)bs.dims[bs.ndim - 2]);
    xf_shape a_batch = xf_shape_make(as.ndim - 2, as.dims), b_batch = xf_shape_make(bs.ndim - 2, bs.dims);
    xf_shape batch = {.ndim = a_batch.ndim > b_batch.ndim ? a_batch.ndim : b_batch.ndim};
    for (int d = 0; d < batch.ndim; d++) {
        int da = d - (batch.ndim - a_batch.ndim), db = d - (batch.ndim - b_batch.ndim);
        int64_t ea = da < 0 ? 1 : a_batch.dims[da], eb = db < 0 ? 1 : b_batch.dims[db];
        if (ea != eb && ea != 1 && eb != 1)
            return xf_rt_bad_node(err, n, "batch dimensions do not broadcast");
        batch.dims[d] = ea == 1 ? eb : ea;
    }
    int64_t n_batch = xf_shape_numel(&batch);
    if (xf_rt_numel(&out[0]) != n_batch * m * nn)
        return xf_rt_bad_node(err, n, "output size does not match the operands");
    *mm = (xf_rt_matmul){.m = m, .k = k, .n = nn, .n_batch = n_batch, .batch = batch};
    xf_rt_broadcast_strides(&a_batch, &batch, mm->a_stride);
    xf_rt_broadcast_strides(&b_batch, &batch, mm->b_stride);
    for (int d = 0; d < batch.ndim; d++) {
        mm->a_stride[d] *= m * k;
        mm->b_stride[d] *= k * nn;
    }
    return XF_OK;
}

xf_status xf_ref_matmul(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                        xf_error *err)
{
    xf_rt_matmul mm;
    xf_status st = xf_rt_matmul_geometry(n, in, out, &mm, err);
    if (st != XF_OK)
        return st;
    int64_t m = mm.m, k = mm.k, nn = mm.n;
    /* an empty output has nothing to compute (and an empty operand no
     * bytes to point into) */
    if (xf_rt_numel(&out[0]) == 0)
        return XF_OK;
    xf_rt_iter it;
    xf_rt_iter_init(&it, &mm.batch);
    xf_rt_iter_add(&it, mm.a_stride, 0);
    xf_rt_iter_add(&it, mm.b_stride, 0);
    double *acc = calloc((size_t)(m * nn), sizeof *acc);
    if (!acc)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in MatMul");
    xf_dtype dt = in[0].dtype;
    size_t es = xf_dtype_size(dt);
    for (int64_t bi = 0; bi < mm.n_batch; bi++, xf_rt_iter_next(&it)) {
        /* k == 0: the sums of nothing, 0 (the operands hold no bytes) */
        if (k > 0 && xf_rt_matmul_block(dt, (const char *)in[0].data + it.off[0] * (int64_t)es, k, 1,
                               (const char *)in[1].data + it.off[1] * (int64_t)es, nn, 1, m, k, nn, acc) != XF_OK) {
            free(acc);
            return xf_error_set(err, XF_ERR_NOMEM, "out of memory in MatMul");
        }
        xf_rt_store_f64_run(out[0].dtype, out[0].data, bi * m * nn, m * nn, acc);
    }
    free(acc);
    return XF_OK;
}

/* Y = alpha * op(A) op(B) + beta * C, C broadcast to (M, N) and optional. */
xf_status xf_ref_gemm(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                      xf_error *err)
{
    const xf_attrs *at = &n->attrs;
    const xf_shape *as = &in[0].shape, *bs = &in[1].shape, *ys = &out[0].shape;
    if (as->ndim != 2 || bs->ndim != 2 || ys->ndim != 2)
        return xf_rt_bad_node(err, n, "A, B and Y must be matrices");
    int64_t m = at->trans_a ? as->dims[1] : as->dims[0], k = at->trans_a ? as->dims[0] : as->dims[1];
    int64_t kb = at->trans_b ? bs->dims[1] : bs->dims[0], nn = at->trans_b ? bs->dims[0] : bs->dims[1];
    if (k != kb || ys->dims[0] != m || ys->dims[1] != nn)
        return xf_rt_bad_node(err, n, "shapes do not match (A %lldx%lld, B %lldx%lld)", (long long)as->dims[0],
                              (long long)as->dims[1], (long long)bs->dims[0], (long long)bs->dims[1]);
    const xf_tensor_view *c = n->n_inputs > 2 && xf_rt_present(&in[2]) ? &in[2] : NULL;
    if (c && !xf_rt_broadcastable(&c->shape, ys))
        return xf_rt_bad_node(err, n, "C does not broadcast to the output");
    double *acc = malloc(sizeof *acc * (size_t)(m * nn > 0 ? m * nn : 1));
    if (!acc)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in Gemm");
    /* A stored (M, K) has element (i, t) at i*K + t; stored (K, M) at t*M + i */
    if (xf_rt_matmul_block(in[0].dtype, in[0].data, at->trans_a ? 1 : k, at->trans_a ? m : 1, in[1].data,
                           at->trans_b ? 1 : nn, at->trans_b ? k : 1, m, k, nn, acc) != XF_OK) {
        free(acc);
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in Gemm");
    }
    xf_rt_iter it;
    xf_rt_iter_init(&it, ys);
    if (c)
        xf_rt_iter_add_broadcast(&it, &c->shape);
    for (int64_t i = 0; i < m * nn; i++, xf_rt_iter_next(&it))
        acc[i] = at->alpha * acc[i] + (c ? at->beta * xf_rt_load_f64(c->dtype, c->data, it.off[0]) : 0.0);
    xf_rt_store_f64_run(out[0].dtype, out[0].data, 0, m * nn, acc);
    free(acc);
    return XF_OK;
}

/* Einsum sums at most this many products (more would run for hours). */
#define EINSUM_MAX_PRODUCTS ((int64_t)1 << 40)

/* Einsum: each output element is the sum, over the indices the output
 * lacks, of the product of the operand elements its indices name, as core
 * works them out from the equation (xf_einsum_plan).  Floats accumulate
 * in double, integers in int64 (wrapping as the output type then does). */
xf_status xf_ref_einsum_walk(const xf_node *n, const xf_tensor_view *in, const xf_shape *ys,
                             void (*visit)(void *ctx, const int64_t *off), void *ctx, xf_error *err)
{
    int n_ops = n->n_inputs;
    const xf_shape *shapes[XF_EINSUM_MAX_OPERANDS];
    for (int k = 0; k < n_ops && k < XF_EINSUM_MAX_OPERANDS; k++)
        shapes[k] = &in[k].shape;
    xf_einsum e;
    char why[300];
    if (!xf_einsum_plan(xf_einsum_equation(&n->attrs), n_ops, shapes, &e, why, sizeof why))
        return xf_rt_bad_node(err, n, "equation: %s", why);
    if (!xf_shape_equal(&e.out, ys))
        return xf_rt_bad_node(err, n, "the output's shape is not the equation's");
    int64_t products = 1;
    for (int i = 0; i < e.n_indices; i++)
        if (e.extent[i] == 0 || __builtin_mul_overflow(products, e.extent[i], &products) ||
            products > EINSUM_MAX_PRODUCTS)
            products = e.extent[i] == 0 ? 0 : EINSUM_MAX_PRODUCTS + 1;
    if (products > EINSUM_MAX_PRODUCTS)
        return xf_rt_bad_node(err, n, "the equation sums more than 2^40 products");
    /* stride[k][i]: how far operand k (the output for k = n_ops) moves along index i */
    int64_t (*stride)[XF_EINSUM_MAX_INDICES] = calloc((size_t)n_ops + 1, sizeof *stride), dense[XF_MAX_DIMS];
    if (!stride)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in Einsum");
    for (int k = 0; k <= n_ops; k++) {
        const xf_shape *s = k < n_ops ? &in[k].shape : ys;
        xf_rt_dense_strides(s, dense);
        for (int j = 0; j < s->ndim; j++)
            if (s->dims[j] != 1) /* a dim of extent 1 stays put: broadcast */
                stride[k][k < n_ops ? e.index[k][j] : e.out_index[j]] += dense[j];
    }
    int64_t coord[XF_EINSUM_MAX_INDICES] = {0}, off[XF_EINSUM_MAX_OPERANDS + 1] = {0};
    for (int64_t p = 0; p < products; p++) {
        visit(ctx, off);
        for (int i = e.n_indices - 1; i >= 0; i--) {
            for (int k = 0; k <= n_ops; k++)
                off[k] += stride[k][i];
            if (++coord[i] < e.extent[i])
                break;
            for (int k = 0; k <= n_ops; k++)
                off[k] -= stride[k][i] * e.extent[i];
            coord[i] = 0;
        }
    }
    free(stride);
    return XF_OK;
}

/* The forward sums, of integers wrapping as the type does, or in double. */
typedef struct einsum_sum {
    const xf_tensor_view *in;
    int n_ops;
    bool integral;
    double *acc;
    uint64_t *iacc;
} einsum_sum;

static void einsum_product(void *c, const int64_t *off)
{
    einsum_sum *e = c;
    if (e->integral) {
        uint64_t v = 1;
        for (int k = 0; k < e->n_ops; k++)
            v *= (uint64_t)xf_rt_load_i64(e->in[k].dtype, e->in[k].data, off[k]);
        e->iacc[off[e->n_ops]] += v;
    } else {
        double v = 1;
        for (int k = 0; k < e->n_ops; k++)
            v *= xf_rt_load_f64(e->in[k].dtype, e->in[k].data, off[k]);
        e->acc[off[e->n_ops]] += v;
    }
}

xf_status xf_ref_einsum(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    int64_t numel = xf_rt_numel(&out[0]);
    bool integral = xf_rt_is_integral(out[0].dtype);
    size_t count = (size_t)(numel > 0 ? numel : 1);
    einsum_sum e = {in, n->n_inputs, integral, integral ? NULL : calloc(count, sizeof(double)),
                    integral ? calloc(count, sizeof(uint64_t)) : NULL};
    xf_status st = e.acc || e.iacc ? xf_ref_einsum_walk(n, in, &out[0].shape, einsum_product, &e, err)
                                   : xf_error_set(err, XF_ERR_NOMEM, "out of memory in Einsum");
    for (int64_t i = 0; st == XF_OK && i < numel; i++)
        if (integral)
            xf_rt_store_i64(out[0].dtype, out[0].data, i, (int64_t)e.iacc[i]);
        else
            xf_rt_store_f64(out[0].dtype, out[0].data, i, e.acc[i]);
    free(e.acc);
    free(e.iacc);
    return st;
}

/* Det: each matrix's LU factorization with partial pivoting, in double;
 * the determinant is the product of the pivots, negated per row swap. */
xf_status xf_ref_det(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_tensor_view *x = &in[0];
    int rank = x->shape.ndim;
    if (rank < 2 || x->shape.dims[rank - 1] != x->shape.dims[rank - 2])
        return xf_rt_bad_node(err, n, "input is not square matrices");
    int64_t m = x->shape.dims[rank - 1], count = xf_rt_numel(&out[0]);
    double *a = malloc(sizeof *a * (size_t)(m * m > 0 ? m * m : 1));
    if (!a)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    for (int64_t b = 0; b < count; b++) {
        for (int64_t i = 0; i < m * m; i++)
            a[i] = xf_rt_load_f64(x->dtype, x->data, b * m * m + i);
        double det = 1;
        for (int64_t k = 0; k < m && det != 0; k++) {
            int64_t p = k;
            for (int64_t i = k + 1; i < m; i++)
                if (fabs(a[i * m + k]) > fabs(a[p * m + k]))
                    p = i;
            if (a[p * m + k] == 0) {
                det = 0;
                break;
            }
            if (p != k) {
                for (int64_t j = 0; j < m; j++) {
                    double t = a[k * m + j];
                    a[k * m + j] = a[p * m + j];
                    a[p * m + j] = t;
                }
                det = -det;
            }
            det *= a[k * m + k];
            for (int64_t i = k + 1; i < m; i++) {
                double f = a[i * m + k] / a[k * m + k];
                for (int64_t j = k + 1; j < m; j++)
                    a[i * m + j] -= f * a[k * m + j];
            }
        }
        xf_rt_store_f64(out[0].dtype, out[0].data, b, det);
    }
    free(a);
    return XF_OK;
}
