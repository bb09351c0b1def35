/* cpu_ref's elementwise kernels, which walk their operands in broadcast
 * runs a block at a time, against the same ops taken one element at a
 * time: each output element computed by the kernel on scalars (the
 * operands' elements found by xf_rt_iter, element by element), the
 * conversions of Cast against xf_rt_load_f64 / xf_rt_store_f64, and Where,
 * Expand and Tile against copies of single elements.  Random shapes of
 * rank 0 to 5 with odd and empty dimensions, runs longer than a block,
 * and every broadcast pattern (leading, trailing, middle, both sides);
 * results compared byte for byte, NaNs and wrapped integers included. */
#include "xf_rt_internal.h"
#include "xf_test_util.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static int64_t rnd_in(int64_t lo, int64_t hi) { return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1)); }

/* A value of dtype t: small ones (zeros and -1 for the divisions and
 * shifts), special floats, or any bits. */
static void rnd_value(xf_dtype t, void *p)
{
    static const double special[] = {0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 1e30, -7.0, 3.0, 0.5};
    int kind = (int)(rnd() % 4);
    if (t == XF_DT_BOOL) {
        *(uint8_t *)p = rnd() % 2;
    } else if (kind == 0 && !xf_rt_is_integral(t)) {
        double v = rnd() % 5 == 0 ? (rnd() % 2 ? NAN : rnd() % 2 ? INFINITY : -INFINITY) : special[rnd() % 10];
        xf_rt_store_f64(t, p, 0, v);
    } else if (kind <= 1) {
        xf_rt_store_i64(t, p, 0, rnd_in(-3, 3));
    } else if (kind == 2 && !xf_rt_is_integral(t)) {
        xf_rt_store_f64(t, p, 0, ((double)(rnd() >> 11) * 0x1p-53 - 0.5) * 200.0);
    } else {
        for (size_t b = 0; b < xf_dtype_size(t); b += 8) {
            uint64_t bits = rnd();
            size_t es = xf_dtype_size(t) - b;
            memcpy((char *)p + b, &bits, es < 8 ? es : 8);
        }
    }
}

static xf_tensor_view new_view(xf_dtype t, const xf_shape *s)
{
    xf_tensor_view v = {t, *s, NULL};
    size_t es = xf_dtype_size(t), n = (size_t)xf_shape_numel(s);
    v.data = calloc(n + 1, es);
    for (size_t i = 0; i < n; i++)
        rnd_value(t, (char *)v.data + i * es);
    return v;
}

/* A random output shape: rank 0 to 5, dims of 1 to 6, now and then an
 * empty one or one longer than a block. */
static xf_shape rnd_shape(void)
{
    xf_shape s = {(int)rnd_in(0, 5), {0}};
    for (int d = 0; d < s.ndim; d++)
        s.dims[d] = rnd() % 40 == 0 ? 0 : rnd() % 8 == 0 ? rnd_in(250, 300) : rnd_in(1, 6);
    int64_t numel = xf_shape_numel(&s);
    for (int d = 0; d < s.ndim && numel > 4000; d++, numel = xf_shape_numel(&s))
        s.dims[d] = s.dims[d] > 1 ? 1 : s.dims[d];
    return s;
}

/* An operand broadcasting to `to`: `pattern` picks which dimensions are 1
 * (bit d) and how many leading ones are dropped (bits 8+). */
static xf_shape operand_shape(const xf_shape *to, unsigned pattern)
{
    int drop = to->ndim ? (int)((pattern >> 8) % (unsigned)(to->ndim + 1)) : 0;
    xf_shape s = {to->ndim - drop, {0}};
    for (int d = 0; d < s.ndim; d++)
        s.dims[d] = pattern >> (d + drop) & 1 ? 1 : to->dims[d + drop];
    return s;
}

static xf_tensor_view scalar_at(const xf_tensor_view *v, int64_t i)
{
    xf_tensor_view s = {v->dtype, {0, {0}}, (char *)v->data + i * (int64_t)xf_dtype_size(v->dtype)};
    return s;
}

static void expect_same(const xf_tensor_view *got, const xf_tensor_view *want, const char *what)
{
    size_t bytes = xf_rt_bytes(got);
    if (bytes && memcmp(got->data, want->data, bytes) != 0) {
        char buf[64];
        ck_abort_msg("%s: output %s of %s differs", what, xf_shape_str(&got->shape, buf, sizeof buf),
                     xf_dtype_name(got->dtype));
    }
}

/* The kernel k on n_in inputs of shapes broadcast to `shape`, against k on
 * each output element's scalars. */
static void check_elementwise(const xf_node *n, xf_ref_kernel k, int n_in, const xf_dtype *types, xf_dtype out_t,
                              const xf_shape *shape, const unsigned *patterns)
{
    xf_tensor_view in[3], out = new_view(out_t, shape), want = new_view(out_t, shape);
    for (int j = 0; j < n_in; j++) {
        xf_shape s = operand_shape(shape, patterns[j]);
        in[j] = new_view(types[j], &s);
    }
    xf_error err = {0};
    xf_status st = k(n, in, &out, &err);
    xf_rt_iter it;
    xf_rt_iter_init(&it, shape);
    for (int j = 0; j < n_in; j++)
        xf_rt_iter_add_broadcast(&it, &in[j].shape);
    int64_t numel = xf_shape_numel(shape);
    for (int64_t i = 0; i < numel && st == XF_OK; i++, xf_rt_iter_next(&it)) {
        xf_tensor_view el[3], o = scalar_at(&want, i);
        for (int j = 0; j < n_in; j++)
            el[j] = scalar_at(&in[j], it.off[j]);
        ck_assert_int_eq(k(n, el, &o, &err), XF_OK);
    }
    if (st == XF_OK)
        expect_same(&out, &want, xf_op_name(n->op));
    else /* a form the op lacks, for every shape */
        ck_assert_msg(st != XF_ERR_INVALID, "%s: %s", xf_op_name(n->op), err.msg);
    for (int j = 0; j < n_in; j++)
        free(in[j].data);
    free(out.data);
    free(want.data);
}

/* unary kernels (one input) take no broadcasting */
static void check_random(const xf_node *n, xf_ref_kernel k, int n_in, const xf_dtype *types, xf_dtype out_t)
{
    for (int round = 0; round < 25; round++) {
        xf_shape s = rnd_shape();
        unsigned patterns[3] = {0};
        for (int j = 0; j < n_in && n_in > 1; j++)
            patterns[j] = (unsigned)rnd();
        check_elementwise(n, k, n_in, types, out_t, &s, patterns);
    }
    if (n_in == 1)
        return;
    /* the named patterns on a 3x5x7 space: leading, trailing, middle,
     * both sides, and scalars */
    xf_shape s = {3, {3, 5, 7}};
    static const unsigned named[][2] = {{0, 0x100}, {0, 0x200}, {0, 0x4}, {0, 0x2}, {0x1, 0x6}, {0x5, 0x2},
                                        {0, 0x300}, {0x300, 0}, {0x7, 0x300}, {0x1, 0x4}};
    for (size_t p = 0; p < sizeof named / sizeof named[0]; p++) {
        unsigned patterns[3] = {named[p][0], named[p][1], named[p][0] ^ named[p][1]};
        check_elementwise(n, k, n_in, types, out_t, &s, patterns);
    }
}

static const xf_dtype numeric[] = {XF_DT_FLOAT,  XF_DT_DOUBLE, XF_DT_FLOAT16, XF_DT_INT64, XF_DT_INT32,
                                   XF_DT_UINT8,  XF_DT_INT8,   XF_DT_UINT64,  XF_DT_BFLOAT16};
#define N_NUMERIC (sizeof numeric / sizeof numeric[0])

START_TEST(binary_ops)
{
    static const xf_op arith[] = {XF_OP_ADD, XF_OP_SUB, XF_OP_MUL, XF_OP_DIV, XF_OP_POW, XF_OP_MAX, XF_OP_MIN,
                                  XF_OP_MOD};
    static const xf_op compare[] = {XF_OP_EQUAL, XF_OP_GREATER, XF_OP_LESS, XF_OP_GREATER_OR_EQUAL,
                                    XF_OP_LESS_OR_EQUAL};
    xf_node n = {0};
    for (size_t t = 0; t < N_NUMERIC; t++) {
        xf_dtype types[2] = {numeric[t], numeric[t]};
        for (size_t o = 0; o < sizeof arith / sizeof arith[0]; o++) {
            n.op = arith[o];
            n.attrs.fmod = 0;
            check_random(&n, xf_ref_binary, 2, types, numeric[t]);
            if (n.op == XF_OP_MOD) {
                n.attrs.fmod = 1;
                check_random(&n, xf_ref_binary, 2, types, numeric[t]);
            }
        }
        for (size_t o = 0; o < sizeof compare / sizeof compare[0]; o++) {
            n.op = compare[o];
            check_random(&n, xf_ref_binary, 2, types, XF_DT_BOOL);
        }
    }
    /* an integer raised to a float power */
    n.op = XF_OP_POW;
    check_random(&n, xf_ref_binary, 2, (xf_dtype[]){XF_DT_INT32, XF_DT_FLOAT}, XF_DT_INT32);
}
END_TEST

START_TEST(logical_and_bit_ops)
{
    static const xf_op logic[] = {XF_OP_AND, XF_OP_OR, XF_OP_XOR};
    xf_node n = {0};
    for (size_t o = 0; o < sizeof logic / sizeof logic[0]; o++) {
        n.op = logic[o];
        check_random(&n, xf_ref_binary, 2, (xf_dtype[]){XF_DT_BOOL, XF_DT_BOOL}, XF_DT_BOOL);
    }
    n.op = XF_OP_BIT_SHIFT;
    static const xf_dtype uns[] = {XF_DT_UINT8, XF_DT_UINT16, XF_DT_UINT32, XF_DT_UINT64};
    for (size_t t = 0; t < sizeof uns / sizeof uns[0]; t++)
        for (int right = 0; right < 2; right++) {
            n.attrs.shift_right = right;
            check_random(&n, xf_ref_binary, 2, (xf_dtype[]){uns[t], uns[t]}, uns[t]);
        }
}
END_TEST

/* Sum, Max and Mean of three inputs: folds into the output, in place. */
START_TEST(variadic_ops)
{
    static const xf_op ops[] = {XF_OP_SUM, XF_OP_MAX, XF_OP_MEAN};
    xf_node n = {0};
    n.n_inputs = 3;
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
        for (size_t t = 0; t < 5; t++) {
            n.op = ops[o];
            xf_dtype types[3] = {numeric[t], numeric[t], numeric[t]};
            /* the first input has the output's shape (the fold starts
             * from it), the others broadcast */
            for (int round = 0; round < 20; round++) {
                xf_shape s = rnd_shape();
                unsigned patterns[3] = {0, (unsigned)rnd(), (unsigned)rnd()};
                check_elementwise(&n, o == 2 ? xf_ref_mean : xf_ref_variadic, 3, types, numeric[t], &s, patterns);
            }
        }
}
END_TEST

START_TEST(unary_ops)
{
    static const xf_op ops[] = {XF_OP_IS_NAN, XF_OP_NOT,  XF_OP_NEG,  XF_OP_ABS,    XF_OP_RELU,  XF_OP_SQRT,
                                XF_OP_SIGN,   XF_OP_FLOOR, XF_OP_EXP, XF_OP_IS_INF, XF_OP_SHRINK, XF_OP_ROUND};
    xf_node n = {0};
    n.attrs.alpha = 0.5;
    n.attrs.beta = 0.25;
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
        n.op = ops[o];
        bool to_bool = n.op == XF_OP_IS_NAN || n.op == XF_OP_IS_INF;
        for (size_t t = 0; t < N_NUMERIC; t++)
            check_random(&n, xf_ref_unary, 1, &numeric[t], to_bool ? XF_DT_BOOL : numeric[t]);
        check_random(&n, xf_ref_unary, 1, (xf_dtype[]){XF_DT_BOOL}, XF_DT_BOOL);
    }
    /* Clip by scalar bounds */
    n.op = XF_OP_CLIP;
    n.n_inputs = 1;
    n.attrs.has_clip_attrs = 1;
    n.attrs.clip_min = -2.0;
    n.attrs.clip_max = 3.0;
    for (size_t t = 0; t < N_NUMERIC; t++)
        check_random(&n, xf_ref_clip, 1, &numeric[t], numeric[t]);
}
END_TEST

/* Cast between every pair, against xf_rt_load_* and xf_rt_store_*. */
START_TEST(cast_pairs)
{
    static const xf_dtype types[] = {XF_DT_FLOAT, XF_DT_DOUBLE, XF_DT_FLOAT16, XF_DT_BFLOAT16, XF_DT_INT64,
                                     XF_DT_INT32, XF_DT_INT16,  XF_DT_UINT16,  XF_DT_UINT32,   XF_DT_UINT8,
                                     XF_DT_INT8,  XF_DT_UINT64, XF_DT_BOOL,    XF_DT_FLOAT8E4M3FN};
    xf_node n = {0};
    n.op = XF_OP_CAST;
    for (size_t a = 0; a < sizeof types / sizeof types[0]; a++)
        for (size_t b = 0; b < sizeof types / sizeof types[0]; b++)
            for (int round = 0; round < 6; round++) {
                xf_shape s = rnd_shape();
                xf_tensor_view x = new_view(types[a], &s), y = new_view(types[b], &s), want = new_view(types[b], &s);
                xf_error err = {0};
                ck_assert_int_eq(xf_ref_cast(&n, &x, &y, &err), XF_OK);
                bool ints = xf_rt_is_integral(types[a]) && xf_rt_is_integral(types[b]);
                for (int64_t i = 0; i < xf_shape_numel(&s); i++)
                    if (ints)
                        xf_rt_store_i64(types[b], want.data, i, xf_rt_load_i64(types[a], x.data, i));
                    else
                        xf_rt_store_f64(types[b], want.data, i, xf_rt_load_f64(types[a], x.data, i));
                expect_same(&y, &want, "Cast");
                free(x.data);
                free(y.data);
                free(want.data);
            }
}
END_TEST

START_TEST(where_ops)
{
    static const xf_dtype types[] = {XF_DT_FLOAT, XF_DT_DOUBLE, XF_DT_FLOAT16, XF_DT_BOOL, XF_DT_INT64,
                                     XF_DT_INT32, XF_DT_COMPLEX128};
    xf_node n = {0};
    n.op = XF_OP_WHERE;
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
        check_random(&n, xf_ref_where, 3, (xf_dtype[]){XF_DT_BOOL, types[t], types[t]}, types[t]);
}
END_TEST

/* Expand and Tile against the element they copy, found by coordinates. */
START_TEST(expand_and_tile)
{
    for (int round = 0; round < 200; round++) {
        xf_shape s = rnd_shape();
        xf_dtype t = round % 3 == 0 ? XF_DT_UINT8 : round % 3 == 1 ? XF_DT_FLOAT : XF_DT_COMPLEX128;
        size_t es = xf_dtype_size(t);
        bool tile = round % 2;
        xf_shape xs = operand_shape(&s, (unsigned)rnd() & (tile ? 0xff : ~0u));
        if (tile) /* whole copies: the input a divisor of the output along each dim */
            for (int d = 0; d < s.ndim; d++)
                xs.dims[d] = s.dims[d] % 2 == 0 && rnd() % 2 ? s.dims[d] / 2 : xs.dims[d];
        xf_tensor_view x = new_view(t, &xs), y = new_view(t, &s), want = new_view(t, &s);
        xf_node n = {0};
        n.op = tile ? XF_OP_TILE : XF_OP_EXPAND;
        xf_error err = {0};
        ck_assert_int_eq((tile ? xf_ref_tile : xf_ref_expand)(&n, &x, &y, &err), XF_OK);
        int64_t coord[XF_MAX_DIMS] = {0}, stride[XF_MAX_DIMS];
        xf_rt_dense_strides(&xs, stride);
        int lead = s.ndim - xs.ndim;
        for (int64_t i = 0; i < xf_shape_numel(&s); i++) {
            int64_t from = 0;
            for (int d = 0; d < xs.ndim; d++)
                from += coord[d + lead] % xs.dims[d] * stride[d];
            memcpy((char *)want.data + i * (int64_t)es, (char *)x.data + from * (int64_t)es, es);
            for (int d = s.ndim - 1; d >= 0 && ++coord[d] == s.dims[d]; d--)
                coord[d] = 0;
        }
        expect_same(&y, &want, tile ? "Tile" : "Expand");
        free(x.data);
        free(y.data);
        free(want.data);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("elementwise_runs");
    TCase *tc = tcase_create("against single elements");
    tcase_add_test(tc, binary_ops);
    tcase_add_test(tc, logical_and_bit_ops);
    tcase_add_test(tc, variadic_ops);
    tcase_add_test(tc, unary_ops);
    tcase_add_test(tc, cast_pairs);
    tcase_add_test(tc, where_ops);
    tcase_add_test(tc, expand_and_tile);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
