/* ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp, ReduceSumSquare,
 * ArgMax, ArgMin, Hardmax, CumSum, InstanceNormalization,
 * GroupNormalization, MeanVarianceNormalization, LRN, LpNormalization and
 * BatchNormalization in training mode:
 * cpu_ref against hand-computed values (every case in static and dynamic
 * mode), the edge cases ONNX defines (empty sets, NaN, ties, -0, integers
 * past 2^53, noop_with_empty_axes), the shape rules (negative axes,
 * keepdims, symbolic dims bound at load) and the errors for operands and
 * attributes that do not fit, naming the node.  Where the `cpu` backend
 * runs one of them on oneDNN, it is checked against cpu_ref. */
#include "backend_util.h"
#include "kernel_case_util.h"
#include "proto_util.h"
#include "xf_test_util.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define AXES(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__}
#define NO_AXES 0, NULL
#define P60 ((int64_t)1 << 60)

/* Reduce op of x under opset 13: the axes attribute (n of them; none
 * given when n is 0) and keepdims. */
static node_case reduce13(xf_op op, xf_tensor *x, int n, const int64_t *axes, int keepdims)
{
    node_case c = make_case(op, 1, x);
    c.opset = 13;
    c.a.has_axes = n > 0;
    c.a.n_axes = n;
    for (int i = 0; i < n; i++)
        c.a.axes[i] = axes[i];
    c.a.keepdims = keepdims;
    return c;
}

/* The opset 18 form: axes as input 1 (NULL: omitted), a graph input when
 * fed (so that they are only known at run time). */
static node_case reduce18(xf_op op, xf_tensor *x, xf_tensor *axes, bool fed, int keepdims, int noop)
{
    node_case c = make_case(op, axes ? 2 : 1, x, axes);
    c.opset = 18;
    c.feed = fed ? 2u : 0u;
    c.a.keepdims = keepdims;
    c.a.noop_with_empty_axes = noop;
    return c;
}

#define X23() F32(DIMS(2, 3), 1, -2, 3, -4, 5, -6)

/* ------------------------------------------------------------ BatchNormalization */

/* Training mode (opset 14+): each channel normalized by the batch's mean
 * and population variance; outputs 1 and 2 move the running mean and
 * variance given by momentum.  Channel 0 holds 0, 2, 4, 6 (mean 3,
 * variance 5: with epsilon 4, a deviation of 3), channel 1 all ones. */
START_TEST(batch_norm_training)
{
    node_case c = make_case(XF_OP_BATCH_NORM, 5, F32(DIMS(2, 2, 2), 0, 2, 1, 1, 4, 6, 1, 1), F32(DIMS(2), 3, 2),
                            F32(DIMS(2), 1, 0), F32(DIMS(2), 1, 0), F32(DIMS(2), 3, 1));
    c.opset = 15;
    c.n_out = 3;
    c.a.epsilon = 4;
    c.a.bn_training = 1;
    c.a.bn_momentum = 0.5f;
    xf_tensor *out[3];
    run_case(&c, out);
    EXPECT(out[0], XF_DT_FLOAT, DIMS(2, 2, 2), -2, 0, 0, 0, 2, 4, 0, 0);
    EXPECT(out[1], XF_DT_FLOAT, DIMS(2), 2, 0.5);
    EXPECT(out[2], XF_DT_FLOAT, DIMS(2), 4, 0.5);
    /* Y alone */
    c = make_case(XF_OP_BATCH_NORM, 5, F32(DIMS(2, 2, 2), 0, 2, 1, 1, 4, 6, 1, 1), F32(DIMS(2), 3, 2),
                  F32(DIMS(2), 1, 0), F32(DIMS(2), 1, 0), F32(DIMS(2), 3, 1));
    c.opset = 15;
    c.a.epsilon = 4;
    c.a.bn_training = 1;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(2, 2, 2), -2, 0, 0, 0, 2, 4, 0, 0);
}
END_TEST

/* ReduceMax and ReduceMin of bools (opset 20): any and all, an empty set
 * false and true; and Dropout in inference with its mask, all true. */
START_TEST(reduce_bool_and_dropout_mask)
{
    bool v[] = {false, true, false, false};
    EXPECT(run1(reduce18(XF_OP_REDUCE_MAX, mk(XF_DT_BOOL, DIMS(2, 2), v), I64(DIMS(1), 1), false, 0, 0)), XF_DT_BOOL,
           DIMS(2), 1, 0);
    EXPECT(run1(reduce18(XF_OP_REDUCE_MIN, mk(XF_DT_BOOL, DIMS(2, 2), v), I64(DIMS(1), 0), false, 0, 0)), XF_DT_BOOL,
           DIMS(2), 0, 0);
    EXPECT(run1(reduce18(XF_OP_REDUCE_MAX, mk(XF_DT_BOOL, DIMS(2, 0), NULL), I64(DIMS(1), 1), false, 0, 0)),
           XF_DT_BOOL, DIMS(2), 0, 0);
    EXPECT(run1(reduce18(XF_OP_REDUCE_MIN, mk(XF_DT_BOOL, DIMS(2, 0), NULL), I64(DIMS(1), 1), false, 0, 0)),
           XF_DT_BOOL, DIMS(2), 1, 1);
    node_case c = make_case(XF_OP_DROPOUT, 1, F32(DIMS(3), 1, -2, 3));
    c.n_out = 2;
    xf_tensor *out[2];
    run_case(&c, out);
    EXPECT(out[0], XF_DT_FLOAT, DIMS(3), 1, -2, 3);
    EXPECT(out[1], XF_DT_BOOL, DIMS(3), 1, 1, 1);
}
END_TEST

/* ------------------------------------------------------------ Reduce* */

START_TEST(reduce_values)
{
    EXPECT(run1(reduce13(XF_OP_REDUCE_L1, X23(), AXES(1), 1)), XF_DT_FLOAT, DIMS(2, 1), 6, 15);
    EXPECT(run1(reduce13(XF_OP_REDUCE_L2, X23(), AXES(0), 0)), XF_DT_FLOAT, DIMS(3), sqrt(17), sqrt(29), sqrt(45));
    EXPECT(run1(reduce13(XF_OP_REDUCE_SUM_SQUARE, X23(), NO_AXES, 1)), XF_DT_FLOAT, DIMS(1, 1), 91);
    EXPECT(run1(reduce13(XF_OP_REDUCE_SUM_SQUARE, X23(), AXES(-1), 0)), XF_DT_FLOAT, DIMS(2), 14, 77);
    EXPECT(run1(reduce13(XF_OP_REDUCE_LOG_SUM, F32(DIMS(2, 2), 1, 2, 3, 4), AXES(-2), 1)), XF_DT_FLOAT, DIMS(1, 2),
           log(4), log(6));
    /* the largest element is taken out before exp: 1000 does not overflow */
    EXPECT(run1(reduce13(XF_OP_REDUCE_LOG_SUM_EXP, F32(DIMS(2, 2), 1, 2, 1000, 1000), AXES(1), 0)), XF_DT_FLOAT,
           DIMS(2), log(exp(1) + exp(2)), 1000 + log(2));
    /* every axis listed, keepdims 0: a scalar */
    EXPECT(run1(reduce13(XF_OP_REDUCE_L1, X23(), AXES(0, 1), 0)), XF_DT_FLOAT, SCALAR, 21);
}
END_TEST

/* Opset 18 takes the axes as an input, known or fed at run time; no axes
 * reduce everything, or with noop_with_empty_axes nothing, the
 * elementwise part of the op still applying (ReduceSumSquare squares). */
START_TEST(reduce_axes_input)
{
    EXPECT(run1(reduce18(XF_OP_REDUCE_L1, X23(), I64(DIMS(1), 1), false, 1, 0)), XF_DT_FLOAT, DIMS(2, 1), 6, 15);
    EXPECT(run1(reduce18(XF_OP_REDUCE_L2, F32(DIMS(2, 2), 3, 0, 4, 1), I64(DIMS(1), -2), true, 1, 0)), XF_DT_FLOAT,
           DIMS(1, 2), 5, 1);
    EXPECT(run1(reduce18(XF_OP_REDUCE_L1, X23(), I64(DIMS(0), 0), false, 1, 0)), XF_DT_FLOAT, DIMS(1, 1), 21);
    EXPECT(run1(reduce18(XF_OP_REDUCE_SUM_SQUARE, X23(), NULL, false, 0, 0)), XF_DT_FLOAT, SCALAR, 91);
    EXPECT(run1(reduce18(XF_OP_REDUCE_L1, X23(), I64(DIMS(0), 0), false, 1, 1)), XF_DT_FLOAT, DIMS(2, 3), 1, 2, 3,
           4, 5, 6);
    EXPECT(run1(reduce18(XF_OP_REDUCE_L2, X23(), NULL, false, 1, 1)), XF_DT_FLOAT, DIMS(2, 3), 1, 2, 3, 4, 5, 6);
    EXPECT(run1(reduce18(XF_OP_REDUCE_SUM_SQUARE, X23(), I64(DIMS(0), 0), true, 0, 1)), XF_DT_FLOAT, DIMS(2, 3), 1,
           4, 9, 16, 25, 36);
    EXPECT(run1(reduce18(XF_OP_REDUCE_LOG_SUM, F32(DIMS(2), 1, 4), NULL, false, 1, 1)), XF_DT_FLOAT, DIMS(2), 0,
           log(4));
    EXPECT(run1(reduce18(XF_OP_REDUCE_LOG_SUM_EXP, F32(DIMS(3), -7, 1000, -INFINITY), NULL, false, 1, 1)),
           XF_DT_FLOAT, DIMS(3), -7, 1000, -INFINITY);
    /* the ops whose elementwise part is the identity copy, exactly */
    xf_tensor *y = run1(reduce18(XF_OP_REDUCE_SUM, I64(DIMS(2), P60 + 1, -3), NULL, false, 1, 1));
    ck_assert(((const int64_t *)y->data)[0] == P60 + 1 && ((const int64_t *)y->data)[1] == -3);
    xf_tensor_release(y);
}
END_TEST

/* An empty set sums to 0 (-inf for the logarithms); infinities and NaN in
 * ReduceLogSumExp come out as the mathematics says; integers compute in
 * double and truncate; double stays double. */
START_TEST(reduce_edges_and_dtypes)
{
    static const xf_op zero_ops[] = {XF_OP_REDUCE_L1, XF_OP_REDUCE_L2, XF_OP_REDUCE_SUM_SQUARE};
    for (int i = 0; i < 3; i++)
        EXPECT(run1(reduce13(zero_ops[i], mk(XF_DT_FLOAT, DIMS(2, 0), NULL), AXES(1), 0)), XF_DT_FLOAT, DIMS(2), 0,
               0);
    EXPECT(run1(reduce13(XF_OP_REDUCE_LOG_SUM, mk(XF_DT_FLOAT, DIMS(2, 0), NULL), AXES(1), 1)), XF_DT_FLOAT,
           DIMS(2, 1), -INFINITY, -INFINITY);
    EXPECT(run1(reduce18(XF_OP_REDUCE_LOG_SUM_EXP, mk(XF_DT_FLOAT, DIMS(0, 3), NULL), I64(DIMS(1), 0), false, 0, 0)),
           XF_DT_FLOAT, DIMS(3), -INFINITY, -INFINITY, -INFINITY);
    EXPECT(run1(reduce13(XF_OP_REDUCE_LOG_SUM_EXP, F32(DIMS(4, 2), -INFINITY, -INFINITY, INFINITY, 1, NAN, 1, 0, 0),
                         AXES(1), 0)),
           XF_DT_FLOAT, DIMS(4), -INFINITY, INFINITY, NAN, log(2));
    EXPECT(run1(reduce13(XF_OP_REDUCE_LOG_SUM, F32(DIMS(2), 1, -1), NO_AXES, 0)), XF_DT_FLOAT, SCALAR, -INFINITY);
    EXPECT(run1(reduce13(XF_OP_REDUCE_L2, I32(DIMS(2, 2), 3, 4, 1, 1), AXES(1), 0)), XF_DT_INT32, DIMS(2), 5, 1);
    EXPECT(run1(reduce13(XF_OP_REDUCE_L1, I64(DIMS(3), -3, 4, -5), NO_AXES, 1)), XF_DT_INT64, DIMS(1), 12);
    EXPECT(run1(reduce13(XF_OP_REDUCE_SUM_SQUARE, I32(DIMS(2), -3, 4), NO_AXES, 0)), XF_DT_INT32, SCALAR, 25);
    EXPECT(run1(reduce13(XF_OP_REDUCE_LOG_SUM_EXP, mk(XF_DT_DOUBLE, DIMS(2), (double[]){1e-300, 0}), NO_AXES, 0)),
           XF_DT_DOUBLE, SCALAR, log(2));
}
END_TEST

/* Float sets of consecutive elements take a kernel of their own (four
 * sets at a time); double ones the general iterator.  Both sum in double,
 * so the float result is the double one rounded: on random values with
 * NaN and -0 among them, 11 sets of 13 (the last three after the groups
 * of four) and one set of 143, every op of that kernel. */
START_TEST(reduce_float_runs_match_double)
{
    static const xf_op ops[] = {XF_OP_REDUCE_SUM, XF_OP_REDUCE_MEAN, XF_OP_REDUCE_MAX, XF_OP_REDUCE_MIN,
                                XF_OP_REDUCE_L1,  XF_OP_REDUCE_L2,   XF_OP_REDUCE_SUM_SQUARE};
    enum { SETS = 11, LEN = 13 };
    float xf[SETS * LEN];
    double xd[SETS * LEN];
    uint64_t r = 7;
    for (int i = 0; i < SETS * LEN; i++) {
        r = r * 6364136223846793005u + 1442695040888963407u;
        xf[i] = i == 40 ? NAN : i % 17 == 3 ? -0.0f : (float)((double)(r >> 11) / 9007199254740992.0 * 8 - 4);
        xd[i] = xf[i];
    }
    for (size_t k = 0; k < 2 * sizeof ops / sizeof *ops; k++) {
        bool whole = k % 2; /* one set of all 143 */
        xf_op op = ops[k / 2];
        static const int64_t axes[2] = {0, 1};
        int n_axes = whole ? 2 : 1;
        const int64_t *from = whole ? axes : axes + 1;
        xf_tensor *yf = run1(reduce13(op, mk(XF_DT_FLOAT, DIMS(SETS, LEN), xf), n_axes, from, 0));
        xf_tensor *yd = run1(reduce13(op, mk(XF_DT_DOUBLE, DIMS(SETS, LEN), xd), n_axes, from, 0));
        ck_assert_int_eq(xf_tensor_numel(yf), whole ? 1 : SETS);
        for (int64_t i = 0; i < xf_tensor_numel(yf); i++) {
            float got = ((const float *)yf->data)[i], want = (float)((const double *)yd->data)[i];
            ck_assert_msg(memcmp(&got, &want, sizeof got) == 0, "%s, set %lld: %.9g, not %.9g", xf_op_name(op),
                          (long long)i, got, want);
        }
        xf_tensor_release(yf);
        xf_tensor_release(yd);
    }
}
END_TEST

/* ------------------------------------------------------------ ArgMax, ArgMin */

static node_case arg_case(xf_op op, xf_tensor *x, int64_t axis, int keepdims, int last)
{
    node_case c = make_case(op, 1, x);
    c.a.axis = axis;
    c.a.keepdims = keepdims;
    c.a.select_last_index = last;
    return c;
}

#define A23() F32(DIMS(2, 3), 1, 5, 5, 7, 2, 7)

/* int64 indices, the first of equal extremes or with select_last_index
 * the last; NaN is the extreme (numpy's argmax and argmin, which ONNX's
 * reference uses); integers compare exactly past 2^53. */
START_TEST(arg_reduce_values)
{
    EXPECT(run1(arg_case(XF_OP_ARG_MAX, A23(), 1, 1, 0)), XF_DT_INT64, DIMS(2, 1), 1, 0);
    EXPECT(run1(arg_case(XF_OP_ARG_MAX, A23(), -1, 1, 1)), XF_DT_INT64, DIMS(2, 1), 2, 2);
    EXPECT(run1(arg_case(XF_OP_ARG_MIN, A23(), 0, 0, 0)), XF_DT_INT64, DIMS(3), 0, 1, 0);
    EXPECT(run1(arg_case(XF_OP_ARG_MIN, A23(), -1, 0, 1)), XF_DT_INT64, DIMS(2), 0, 1);
    EXPECT(run1(arg_case(XF_OP_ARG_MAX, F32(DIMS(4), 1, NAN, 3, NAN), 0, 0, 0)), XF_DT_INT64, SCALAR, 1);
    EXPECT(run1(arg_case(XF_OP_ARG_MAX, F32(DIMS(4), 1, NAN, 3, NAN), 0, 1, 1)), XF_DT_INT64, DIMS(1), 3);
    EXPECT(run1(arg_case(XF_OP_ARG_MIN, F32(DIMS(3), 1, NAN, -3), 0, 0, 0)), XF_DT_INT64, SCALAR, 1);
    EXPECT(run1(arg_case(XF_OP_ARG_MAX, I64(DIMS(3), (int64_t)1 << 53, ((int64_t)1 << 53) + 1, 0), 0, 0, 0)),
           XF_DT_INT64, SCALAR, 1);
    EXPECT(run1(arg_case(XF_OP_ARG_MIN, I32(DIMS(2, 2), 4, -4, -4, 4), 1, 0, 1)), XF_DT_INT64, DIMS(2), 1, 0);
    uint64_t big[] = {UINT64_MAX, 1};
    EXPECT(run1(arg_case(XF_OP_ARG_MIN, mk(XF_DT_UINT64, DIMS(2), big), 0, 0, 0)), XF_DT_INT64, SCALAR, 1);
}
END_TEST

/* ------------------------------------------------------------ Hardmax */

static node_case hardmax_case(xf_tensor *x, int64_t axis, int64_t opset)
{
    node_case c = make_case(XF_OP_HARDMAX, 1, x);
    c.a.axis = axis;
    c.a.softmax_legacy = opset < 13;
    c.opset = opset;
    return c;
}

#define H222() F32(DIMS(2, 2, 2), 1, 3, 2, 2, 5, 4, 0, 9)

/* Opset 13 marks the first maximum along axis; before, the input is seen
 * as 2-D at axis and each row marks one. */
START_TEST(hardmax_values)
{
    EXPECT(run1(hardmax_case(H222(), -1, 13)), XF_DT_FLOAT, DIMS(2, 2, 2), 0, 1, 1, 0, 1, 0, 0, 1);
    EXPECT(run1(hardmax_case(H222(), 1, 13)), XF_DT_FLOAT, DIMS(2, 2, 2), 0, 1, 1, 0, 1, 0, 0, 1);
    EXPECT(run1(hardmax_case(H222(), 0, 13)), XF_DT_FLOAT, DIMS(2, 2, 2), 0, 0, 1, 0, 1, 1, 0, 1);
    EXPECT(run1(hardmax_case(H222(), 1, 11)), XF_DT_FLOAT, DIMS(2, 2, 2), 0, 1, 0, 0, 0, 0, 0, 1);
    EXPECT(run1(hardmax_case(H222(), 0, 11)), XF_DT_FLOAT, DIMS(2, 2, 2), 0, 0, 0, 0, 0, 0, 0, 1);
    EXPECT(run1(hardmax_case(F32(DIMS(4), 1, NAN, 3, NAN), -1, 13)), XF_DT_FLOAT, DIMS(4), 0, 1, 0, 0);
    EXPECT(run1(hardmax_case(mk(XF_DT_DOUBLE, DIMS(3), (double[]){-1, -0.5, -0.5}), 0, 13)), XF_DT_DOUBLE, DIMS(3),
           0, 1, 0);
}
END_TEST

/* ------------------------------------------------------------ CumSum */

static node_case cumsum_case(xf_tensor *x, xf_tensor *axis, int exclusive, int reverse)
{
    node_case c = make_case(XF_OP_CUM_SUM, 2, x, axis);
    c.a.cumsum_exclusive = exclusive;
    c.a.cumsum_reverse = reverse;
    return c;
}

#define C23() F32(DIMS(2, 3), 1, 2, 3, 4, 5, 6)

/* The axis is a scalar input (int32 or int64, negative counting from the
 * end, possibly fed at run time); exclusive leaves the element itself
 * out, reverse sums from the end.  Integers add exactly. */
START_TEST(cumsum_values)
{
    EXPECT(run1(cumsum_case(C23(), I32(SCALAR, 1), 0, 0)), XF_DT_FLOAT, DIMS(2, 3), 1, 3, 6, 4, 9, 15);
    EXPECT(run1(cumsum_case(C23(), I64(SCALAR, -2), 0, 0)), XF_DT_FLOAT, DIMS(2, 3), 1, 2, 3, 5, 7, 9);
    EXPECT(run1(cumsum_case(C23(), I64(DIMS(1), 1), 1, 0)), XF_DT_FLOAT, DIMS(2, 3), 0, 1, 3, 0, 4, 9);
    EXPECT(run1(cumsum_case(C23(), I32(SCALAR, -1), 0, 1)), XF_DT_FLOAT, DIMS(2, 3), 6, 5, 3, 15, 11, 6);
    node_case c = cumsum_case(C23(), I64(SCALAR, 1), 1, 1);
    c.feed = 2;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(2, 3), 5, 3, 0, 11, 6, 0);
    EXPECT(run1(cumsum_case(I64(DIMS(3), P60, 1, -3), I64(SCALAR, 0), 1, 1)), XF_DT_INT64, DIMS(3), -2, -3, 0);
    xf_tensor *y = run1(cumsum_case(I64(DIMS(3), P60, 1, -3), I32(SCALAR, 0), 0, 0));
    const int64_t *v = y->data;
    ck_assert(v[0] == P60 && v[1] == P60 + 1 && v[2] == P60 - 2);
    xf_tensor_release(y);
    EXPECT(run1(cumsum_case(I32(DIMS(2, 2), 7, -1, 2, 2), I32(SCALAR, 0), 0, 0)), XF_DT_INT32, DIMS(2, 2), 7, -1, 9,
           1);
    /* the first sum is the element itself: -0 stays -0 */
    y = run1(cumsum_case(F32(DIMS(2), -0.0f, 1), I32(SCALAR, 0), 0, 0));
    ck_assert(signbit(((const float *)y->data)[0]) && ((const float *)y->data)[1] == 1);
    xf_tensor_release(y);
    EXPECT(run1(cumsum_case(mk(XF_DT_DOUBLE, DIMS(3), (double[]){0.1, 0.2, 1e16}), I32(SCALAR, 0), 0, 1)),
           XF_DT_DOUBLE, DIMS(3), 1e16 + 0.2 + 0.1, 1e16 + 0.2, 1e16);
}
END_TEST

/* ------------------------------------------------------------ normalizations */

static node_case norm3(xf_op op, xf_tensor *x, xf_tensor *scale, xf_tensor *bias, float epsilon)
{
    node_case c = make_case(op, 3, x, scale, bias);
    c.a.epsilon = epsilon;
    return c;
}

/* Per channel (dim 1) over the rest: y = scale * (x - mean) / sqrt(var +
 * epsilon) + B, var being the mean squared deviation; a 2-D input has one
 * element per channel, which normalizes to 0. */
START_TEST(instance_norm_values)
{
    xf_tensor *x = F32(DIMS(1, 2, 2), 1, 3, 0, 4);
    EXPECT(run1(norm3(XF_OP_INSTANCE_NORM, x, F32(DIMS(2), 2, 1), F32(DIMS(2), 0, 1), 0.5f)), XF_DT_FLOAT,
           DIMS(1, 2, 2), -2 / sqrt(1.5), 2 / sqrt(1.5), 1 - 2 / sqrt(4.5), 1 + 2 / sqrt(4.5));
    EXPECT(run1(norm3(XF_OP_INSTANCE_NORM, F32(DIMS(2, 2), 5, 6, 7, 8), F32(DIMS(2), 3, 3), F32(DIMS(2), 0, 1),
                      1e-5f)),
           XF_DT_FLOAT, DIMS(2, 2), 0, 1, 0, 1);
    /* two images, each channel on its own */
    EXPECT(run1(norm3(XF_OP_INSTANCE_NORM, F32(DIMS(2, 1, 2), 0, 2, 10, 30), F32(DIMS(1), 1), F32(DIMS(1), 0), 0)),
           XF_DT_FLOAT, DIMS(2, 1, 2), -1, 1, -1, 1);
    double xd[] = {1, 2, 3, 4}, one[] = {1}, zero[] = {0};
    EXPECT(run1(norm3(XF_OP_INSTANCE_NORM, mk(XF_DT_DOUBLE, DIMS(1, 1, 4), xd), mk(XF_DT_DOUBLE, DIMS(1), one),
                      mk(XF_DT_DOUBLE, DIMS(1), zero), 0)),
           XF_DT_DOUBLE, DIMS(1, 1, 4), -1.5 / sqrt(1.25), -0.5 / sqrt(1.25), 0.5 / sqrt(1.25), 1.5 / sqrt(1.25));
}
END_TEST

static node_case group_case(xf_tensor *x, int64_t groups, xf_tensor *scale, xf_tensor *bias, int64_t opset)
{
    node_case c = norm3(XF_OP_GROUP_NORM, x, scale, bias, 0);
    c.a.group = groups;
    c.opset = opset;
    return c;
}

#define G41() F32(DIMS(1, 4, 1), 1, 3, 10, 20)

/* Groups of consecutive channels normalize together; scale and bias are
 * per channel from opset 21, per group in opset 18. */
START_TEST(group_norm_values)
{
    /* groups [1, 3] and [10, 20] both normalize to [-1, 1] */
    EXPECT(run1(group_case(G41(), 2, F32(DIMS(4), 1, 2, 3, 4), F32(DIMS(4), 0, 0, 0, 1), 21)), XF_DT_FLOAT,
           DIMS(1, 4, 1), -1, 2, -3, 5);
    EXPECT(run1(group_case(G41(), 2, F32(DIMS(2), 2, 3), F32(DIMS(2), 1, 0), 18)), XF_DT_FLOAT, DIMS(1, 4, 1), -1, 3,
           -3, 3);
    /* one group per image; a constant image normalizes to 0 with epsilon */
    node_case c = group_case(F32(DIMS(2, 2, 2), 1, 2, 3, 4, 5, 5, 5, 5), 1, F32(DIMS(2), 1, 1), F32(DIMS(2), 0, 0), 21);
    c.a.epsilon = 1e-5f;
    double sd = sqrt(1.25 + (double)1e-5f);
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(2, 2, 2), -1.5 / sd, -0.5 / sd, 0.5 / sd, 1.5 / sd, 0, 0, 0, 0);
    /* as many groups as channels: instance normalization, here of one
     * element per channel, which gives the bias */
    c = group_case(G41(), 4, F32(DIMS(4), 1, 1, 1, 1), F32(DIMS(4), 1, 2, 3, 4), 21);
    c.a.epsilon = 1e-5f;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 4, 1), 1, 2, 3, 4);
}
END_TEST

static node_case mvn_case(xf_tensor *x, int n, const int64_t *axes)
{
    node_case c = make_case(XF_OP_MEAN_VARIANCE_NORM, 1, x);
    c.opset = 13;
    if (n > 0) {
        c.a.n_axes = n;
        memcpy(c.a.axes, axes, sizeof *axes * (size_t)n);
    }
    return c;
}

/* (x - mean) / (sqrt(var) + 1e-9) over the axes, [0, 2, 3] by default; a
 * constant set gives 0. */
START_TEST(mvn_values)
{
    double sd = sqrt(8.75) + 1e-9;
    EXPECT(run1(mvn_case(F32(DIMS(1, 1, 2, 2), 1, 3, 5, 9), NO_AXES)), XF_DT_FLOAT, DIMS(1, 1, 2, 2), -3.5 / sd,
           -1.5 / sd, 0.5 / sd, 4.5 / sd);
    /* each channel over both images: 1 and 3 in channel 0, 4 and 8 in channel 1 */
    EXPECT(run1(mvn_case(F32(DIMS(2, 2, 1, 1), 1, 4, 3, 8), NO_AXES)), XF_DT_FLOAT, DIMS(2, 2, 1, 1), -1, -1, 1, 1);
    EXPECT(run1(mvn_case(F32(DIMS(2, 2), 1, 3, 2, 2), AXES(-1))), XF_DT_FLOAT, DIMS(2, 2), -1, 1, 0, 0);
    EXPECT(run1(mvn_case(F32(DIMS(2, 2), 1, 3, 2, 2), AXES(0, 1))), XF_DT_FLOAT, DIMS(2, 2), -1 / sqrt(0.5),
           1 / sqrt(0.5), 0, 0);
}
END_TEST

static node_case lrn_case(xf_tensor *x, int64_t size, float alpha, float beta, float bias)
{
    node_case c = make_case(XF_OP_LRN, 1, x);
    c.a.lrn_size = size;
    c.a.alpha = alpha;
    c.a.beta = beta;
    c.a.lrn_bias = bias;
    return c;
}

#define L3() F32(DIMS(1, 3, 1, 1), 1, 2, 3)

/* y = x / (bias + alpha / size * s)^beta, s the squares summed over
 * channels c - floor((size - 1) / 2) .. c + ceil((size - 1) / 2): an even
 * size reaches one channel further up than down. */
START_TEST(lrn_values)
{
    EXPECT(run1(lrn_case(L3(), 3, 3, 1, 1)), XF_DT_FLOAT, DIMS(1, 3, 1, 1), 1.0 / 6, 2.0 / 15, 3.0 / 14);
    EXPECT(run1(lrn_case(L3(), 2, 3, 1, 1)), XF_DT_FLOAT, DIMS(1, 3, 1, 1), 1 / 8.5, 2 / 20.5, 3 / 14.5);
    EXPECT(run1(lrn_case(L3(), 4, 4, 0.5f, 2)), XF_DT_FLOAT, DIMS(1, 3, 1, 1), 1 / sqrt(16), 2 / sqrt(16),
           3 / sqrt(15));
    /* ONNX's defaults: alpha 1e-4, beta 0.75, bias 1; any rank from 2 */
    node_case c = make_case(XF_OP_LRN, 1, F32(DIMS(1, 2, 2), 2, 0, 0, 100));
    c.a.lrn_size = 1;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 2, 2), 2 / pow(1.0004, 0.75), 0, 0, 100 / pow(2.0, 0.75));
}
END_TEST

static node_case lp_case(xf_tensor *x, int64_t axis, int p)
{
    node_case c = make_case(XF_OP_LP_NORM, 1, x);
    c.a.axis = axis;
    c.a.lp_p = p;
    return c;
}

#define LP() F32(DIMS(2, 2), 3, -4, 0, 0)

/* x over its L1 or L2 norm along axis; a zero norm gives 0. */
START_TEST(lp_norm_values)
{
    EXPECT(run1(lp_case(LP(), -1, 2)), XF_DT_FLOAT, DIMS(2, 2), 0.6, -0.8, 0, 0);
    EXPECT(run1(lp_case(LP(), 1, 1)), XF_DT_FLOAT, DIMS(2, 2), 3.0 / 7, -4.0 / 7, 0, 0);
    EXPECT(run1(lp_case(LP(), 0, 2)), XF_DT_FLOAT, DIMS(2, 2), 1, -1, 0, 0);
    EXPECT(run1(lp_case(mk(XF_DT_DOUBLE, DIMS(3), (double[]){1, 2, 2}), 0, 2)), XF_DT_DOUBLE, DIMS(3), 1.0 / 3,
           2.0 / 3, 2.0 / 3);
}
END_TEST

/* ------------------------------------------------------------ shapes */

/* A model whose input x [N, 3, 4] has a symbolic batch dim, bound at load
 * (--dim N=5), through every op of the group: the shape rules work on the
 * sizes the dims are given. */
START_TEST(symbolic_dims)
{
    static const int64_t d[] = {-1, 3, 4}, one[] = {1}, ax = 1;
    static const char *const dn[] = {"N", NULL, NULL};
    Onnx__GraphProto *g = mk_graph("g");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 3, d, dn));
    PUSH(g->n_initializer, g->initializer, mk_raw("one", XF_DT_INT64, 1, one, &ax, sizeof ax));
    PUSH(g->n_initializer, g->initializer, mk_raw("ax", XF_DT_INT64, 0, NULL, &ax, sizeof ax));
    struct {
        const char *op, *in2, *out;
    } nodes[] = {{"ReduceLogSumExp", "one", "r"}, {"ArgMin", NULL, "a"}, {"CumSum", "ax", "c"},
                 {"Hardmax", NULL, "h"},          {"LRN", NULL, "l"},    {"LpNormalization", NULL, "p"}};
    for (size_t i = 0; i < sizeof nodes / sizeof nodes[0]; i++) {
        Onnx__NodeProto *n = mk_node(nodes[i].op, nodes[i].out, (const char *[]){"x", nodes[i].in2, NULL},
                                     (const char *[]){nodes[i].out, NULL});
        if (i == 0)
            attr_int(n, "keepdims", 0);
        if (i == 1) {
            attr_int(n, "axis", -1);
            attr_int(n, "keepdims", 0);
        }
        if (i == 4)
            attr_int(n, "size", 3);
        PUSH(g->n_node, g->node, n);
        PUSH(g->n_output, g->output, mk_vi(nodes[i].out, i == 1 ? XF_DT_INT64 : XF_DT_FLOAT, -1, NULL, NULL));
    }
    xf_dim_size sizes[] = {{"N", 5}};
    xf_load_options lo = {.dim_sizes = sizes, .n_dim_sizes = 1};
    xf_model *m;
    xf_error e;
    ck_assert_msg(load_proto(mk_model(g, 18), &lo, &m, &e) == XF_OK, "%s", e.msg);
    const xf_graph *gr = m->graph;
    static const xf_shape want[] = {{2, {5, 4}}, {2, {5, 3}}, {3, {5, 3, 4}},
                                    {3, {5, 3, 4}}, {3, {5, 3, 4}}, {3, {5, 3, 4}}};
    for (int k = 0; k < gr->n_outputs; k++) {
        const xf_value *v = &gr->values[gr->outputs[k]];
        char got[64];
        ck_assert_msg(xf_shape_equal(&v->shape, &want[k]), "%s: %s", v->name, xf_shape_str(&v->shape, got, sizeof got));
        ck_assert_int_eq(v->dtype, k == 1 ? XF_DT_INT64 : XF_DT_FLOAT);
    }
    ck_assert_int_eq(m->n_symbolic, 1);
    xf_model_free(m);
}
END_TEST

/* Operands and attributes that do not fit fail shape inference, naming
 * the node. */
START_TEST(shape_errors)
{
    expect_infer_error(reduce13(XF_OP_REDUCE_L1, X23(), AXES(2), 1), "axis 2 is out of range for rank 2");
    expect_infer_error(reduce18(XF_OP_REDUCE_LOG_SUM, X23(), F32(DIMS(1), 0), false, 1, 0),
                       "axes must be int64 (or int32), got FLOAT");
    expect_infer_error(arg_case(XF_OP_ARG_MAX, X23(), -3, 1, 0), "axis -3 is out of range for rank 2");
    expect_infer_error(arg_case(XF_OP_ARG_MIN, F32(SCALAR, 1), 0, 1, 0), "axis 0 is out of range for rank 0");
    expect_infer_error(hardmax_case(X23(), 2, 13), "axis 2 is out of range for rank 2");
    expect_infer_error(cumsum_case(C23(), I64(DIMS(2), 0, 1), 0, 0), "axis must be a scalar, got shape 2");
    expect_infer_error(cumsum_case(C23(), F32(SCALAR, 0), 0, 0), "axis must be int32 or int64, got FLOAT");
    expect_infer_error(cumsum_case(C23(), I64(SCALAR, 2), 0, 0), "axis 2 is out of range for rank 2");
    expect_infer_error(cumsum_case(F32(SCALAR, 1), I64(SCALAR, 0), 0, 0), "x must have rank 1 or more");
    expect_infer_error(norm3(XF_OP_INSTANCE_NORM, X23(), F32(DIMS(2), 1, 1), F32(DIMS(3), 0, 0, 0), 0),
                       "scale must have shape [3] (one per channel), got 2");
    expect_infer_error(norm3(XF_OP_INSTANCE_NORM, F32(DIMS(2), 1, 2), F32(DIMS(2), 1, 1), F32(DIMS(2), 0, 0), 0),
                       "input must have shape [N, C, ...], got 2");
    expect_infer_error(group_case(G41(), 3, F32(DIMS(4), 1, 1, 1, 1), F32(DIMS(4), 0, 0, 0, 0), 21),
                       "num_groups 3 does not divide the 4 channels");
    expect_infer_error(group_case(G41(), 0, F32(DIMS(4), 1, 1, 1, 1), F32(DIMS(4), 0, 0, 0, 0), 21),
                       "num_groups 0 does not divide the 4 channels");
    expect_infer_error(group_case(G41(), 2, F32(DIMS(4), 1, 1, 1, 1), F32(DIMS(4), 0, 0, 0, 0), 18),
                       "scale must have shape [2] (one per group before opset 21), got 4");
    expect_infer_error(group_case(G41(), 2, F32(DIMS(4), 1, 1, 1, 1), F32(DIMS(2), 0, 0), 21),
                       "B must have shape [4] (one per channel from opset 21), got 2");
    expect_infer_error(mvn_case(X23(), NO_AXES), "axis 2 is out of range for rank 2");
    expect_infer_error(mvn_case(X23(), AXES(1, -1)), "axes [1,-1] repeat axis 1");
    expect_infer_error(lrn_case(L3(), 0, 1, 1, 1), "size 0 must be positive");
    expect_infer_error(lrn_case(F32(DIMS(3), 1, 2, 3), 3, 1, 1, 1), "input must have shape [N, C, ...], got 3");
    expect_infer_error(lp_case(LP(), 0, 3), "p 3 must be 1 or 2");
    expect_infer_error(lp_case(LP(), 2, 2), "axis 2 is out of range for rank 2");
}
END_TEST

/* Values only known at run time fail the run, naming the node. */
START_TEST(run_errors)
{
    node_case c = cumsum_case(C23(), I64(SCALAR, 2), 0, 0);
    c.feed = 2;
    expect_run_error(c, "axis 2 out of range for rank 2");
    c = reduce18(XF_OP_REDUCE_SUM_SQUARE, X23(), I64(DIMS(1), -3), true, 1, 0);
    expect_run_error(c, "axis -3 is out of range for rank 2");
    expect_run_error(arg_case(XF_OP_ARG_MAX, mk(XF_DT_FLOAT, DIMS(2, 0), NULL), 1, 1, 0),
                     "axis 1 is empty: there is no maximum");
}
END_TEST

/* ------------------------------------------------------------ the cpu backend */

static void check_cpu(const xf_graph *g, int64_t opset, double atol, double rtol, const char *what)
{
    xf_bt_check_graph(g, opset, "cpu", true, atol, rtol, what);
}

/* One node of op on a random input of shape x and, for the
 * normalizations with parameters, random constants of n_par elements. */
static void check_norm_on_cpu(xf_op op, xf_shape x, int64_t n_par, const xf_attrs *a, int64_t opset,
                              const char *what)
{
    xf_graph *g = xf_graph_create(what);
    int ins[3] = {xf_bt_input(g, XF_DT_FLOAT, x)};
    int n_in = n_par ? 3 : 1;
    for (int k = 1; k < n_in; k++)
        ins[k] = xf_bt_random_const(g, (xf_shape){.ndim = 1, .dims = {n_par}}, k == 1);
    int node = xf_bt_finish_single(g, op, n_in, ins);
    g->nodes[node].attrs = *a;
    check_cpu(g, opset, 1e-4, 1e-4, what);
    xf_graph_free(g);
}

/* Node op on ins, its attributes a (NULL: the defaults); returns its output. */
static int add_node(xf_graph *g, xf_op op, int n_in, const int *ins, const xf_attrs *a)
{
    int out = xf_graph_add_value(g, NULL, XF_DT_UNDEFINED, NULL);
    int node = xf_graph_add_node(g, op, NULL, n_in, ins, 1, &out);
    ck_assert_int_ge(node, 0);
    if (a)
        g->nodes[node].attrs = *a;
    return out;
}

/* A 3x3 convolution of x (ch channels in and out, padded to keep the size). */
static int conv3x3(xf_graph *g, int x, int64_t ch)
{
    xf_attrs a;
    xf_attrs_default(XF_OP_CONV, &a);
    xf_bt_set_window(&a, 2, NULL, (int64_t[]){1, 1}, (int64_t[]){1, 1}, (int64_t[]){1, 1}, (int64_t[]){1, 1});
    a.activation = XF_ACT_RELU;
    return add_node(g, XF_OP_CONV, 2, (int[]){x, xf_bt_random_const(g, (xf_shape){4, {ch, ch, 3, 3}}, false)}, &a);
}

/* Every form of LRN across channels (on oneDNN), InstanceNormalization
 * and GroupNormalization (on the backend's own loop: one image or several,
 * parameters per group or per channel, constant or computed) and
 * MeanVarianceNormalization (on that loop where its axes are the trailing
 * dims but dims of 1, else on cpu_ref's) agrees with cpu_ref, in static
 * and dynamic mode. */
START_TEST(cpu_backend_agrees)
{
    if (!xf_backend_find("cpu")) {
        printf("skipped: this build has no oneDNN, so no cpu backend\n");
        return;
    }
    xf_bt_seed(7);
    char what[96];
    for (int t = 0; t < 12; t++) {
        int64_t n = t % 3 == 2 ? 2 : 1, c = xf_bt_rnd(1, 17), h = xf_bt_rnd(1, 9), w = xf_bt_rnd(1, 9);
        xf_shape x = {.ndim = 4, .dims = {n, c, h, w}};
        xf_attrs a;
        xf_attrs_default(XF_OP_LRN, &a);
        a.lrn_size = xf_bt_rnd(1, 6);
        a.alpha = 0.05f * (float)xf_bt_rnd(1, 20);
        a.beta = 0.25f * (float)xf_bt_rnd(1, 4);
        a.lrn_bias = 0.5f * (float)xf_bt_rnd(1, 4);
        snprintf(what, sizeof what, "LRN case %d (%lldx%lldx%lldx%lld, size %lld)", t, (long long)n, (long long)c,
                 (long long)h, (long long)w, (long long)a.lrn_size);
        check_norm_on_cpu(XF_OP_LRN, x, 0, &a, 13, what);
        xf_attrs_default(XF_OP_INSTANCE_NORM, &a);
        a.epsilon = t % 2 ? 1e-5f : 0.1f;
        x.ndim = 3 + t % 3;
        x.dims[4] = 3;
        snprintf(what, sizeof what, "InstanceNormalization case %d (rank %d, batch %lld)", t, x.ndim, (long long)n);
        check_norm_on_cpu(XF_OP_INSTANCE_NORM, x, c, &a, 6, what);
        /* one group, two, or one per channel; parameters per group (opset
         * 18) in odd cases, per channel (21) in even ones */
        xf_attrs_default(XF_OP_GROUP_NORM, &a);
        a.group = t % 3 == 0 ? 1 : c % 2 == 0 ? 2 : c;
        snprintf(what, sizeof what, "GroupNormalization case %d (%lld groups of %lld channels)", t,
                 (long long)a.group, (long long)(c / a.group));
        check_norm_on_cpu(XF_OP_GROUP_NORM, x, t % 2 ? a.group : c, &a, t % 2 ? 18 : 21, what);
    }
    /* LRN between convolutions, where values may stay in oneDNN's native
     * layout, then an instance normalization of the result */
    xf_graph *g = xf_graph_create("lrn_net");
    int v = conv3x3(g, xf_bt_input(g, XF_DT_FLOAT, (xf_shape){4, {1, 32, 9, 7}}), 32);
    xf_attrs a;
    xf_attrs_default(XF_OP_LRN, &a);
    a.lrn_size = 5;
    a.alpha = 0.5f;
    v = conv3x3(g, add_node(g, XF_OP_LRN, 1, &v, &a), 32);
    xf_shape chans = {.ndim = 1, .dims = {32}};
    v = add_node(g, XF_OP_INSTANCE_NORM, 3,
                 (int[]){v, xf_bt_random_const(g, chans, true), xf_bt_random_const(g, chans, false)}, NULL);
    xf_graph_add_output(g, v);
    check_cpu(g, 6, 1e-4, 1e-3, "Conv -> LRN -> Conv -> InstanceNormalization");
    xf_graph_free(g);
    /* blocks long enough for the loops' lanes, over the threads: two
     * images, GroupNormalization's parameters per channel computed by a
     * node (Abs of an input), InstanceNormalization's after a Conv */
    for (int form = 0; form < 2; form++) {
        g = xf_graph_create("large");
        xf_shape x = {.ndim = 4, .dims = {2, 64, 40, 33}};
        int in = xf_bt_input(g, XF_DT_FLOAT, x);
        xf_op op = form ? XF_OP_GROUP_NORM : XF_OP_INSTANCE_NORM;
        xf_attrs_default(op, &a);
        a.group = 32;
        int scale = form ? add_node(g, XF_OP_ABS, 1, (int[]){xf_bt_input(g, XF_DT_FLOAT, (xf_shape){1, {64}})}, NULL)
                         : xf_bt_random_const(g, (xf_shape){1, {64}}, true);
        int bias = xf_bt_random_const(g, (xf_shape){1, {64}}, false);
        v = add_node(g, op, 3, (int[]){form ? in : conv3x3(g, in, 64), scale, bias}, &a);
        xf_graph_add_output(g, v);
        int64_t opset = form ? 21 : 6;
        check_cpu(g, opset, 1e-4, 1e-4,
                  form ? "GroupNormalization of 2 x 64 x 40 x 33" : "Conv -> InstanceNormalization");
        char impl[128];
        xf_bt_node_impl(g, opset, op, impl, sizeof impl);
        ck_assert_msg(!strcmp(impl, "own loop"), "%s runs as %s", xf_op_name(op), impl);
        xf_graph_free(g);
    }
    /* MeanVarianceNormalization: the default axes (0, 2, 3) of one image
     * and of two (blocks apart), (2, 3) of two, the last of a 3-D input,
     * (1), (1, 3) past a dim of 1, (0, 3) past a dim of 1,
     * everything, (1, 3) after a dim of 1, and (0, 2) with a kept dim
     * before a reduced one (on cpu_ref) */
    static const struct {
        xf_shape x;
        int n_axes;
        int64_t axes[3];
        bool own;
    } mvn[] = {
        {{4, {1, 24, 37, 29}}, 3, {0, 2, 3}, true}, {{4, {2, 24, 37, 29}}, 3, {0, 2, 3}, true},
        {{4, {2, 24, 37, 29}}, 2, {-2, -1}, true},  {{3, {40, 1, 700}}, 1, {-1}, true},
        {{4, {2, 24, 37, 29}}, 1, {1}, false},      {{4, {2, 24, 1, 29}}, 2, {1, 3}, true},
        {{4, {3, 1, 24, 29}}, 2, {0, 3}, true},     {{3, {3, 5, 7}}, 3, {0, 1, 2}, true},
        {{4, {2, 24, 37, 29}}, 2, {0, 2}, false},   {{4, {1, 3, 5, 7}}, 2, {1, 3}, true},
    };
    for (int i = 0; i < (int)(sizeof mvn / sizeof *mvn); i++) {
        g = xf_graph_create("mvn");
        xf_attrs_default(XF_OP_MEAN_VARIANCE_NORM, &a);
        a.n_axes = mvn[i].n_axes;
        for (int k = 0; k < a.n_axes; k++)
            a.axes[k] = mvn[i].axes[k];
        int in = xf_bt_input(g, XF_DT_FLOAT, mvn[i].x);
        xf_graph_add_output(g, add_node(g, XF_OP_MEAN_VARIANCE_NORM, 1, &in, &a));
        snprintf(what, sizeof what, "MeanVarianceNormalization case %d", i);
        check_cpu(g, 13, 1e-5, 1e-5, what);
        char impl[128];
        xf_bt_node_impl(g, 13, XF_OP_MEAN_VARIANCE_NORM, impl, sizeof impl);
        ck_assert_msg(!strcmp(impl, mvn[i].own ? "own loop" : "cpu_ref kernel"), "%s runs as %s", what, impl);
        xf_graph_free(g);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("reduce_norm");
    TCase *tc = tcase_create("reductions");
    tcase_add_test(tc, reduce_values);
    tcase_add_test(tc, batch_norm_training);
    tcase_add_test(tc, reduce_bool_and_dropout_mask);
    tcase_add_test(tc, reduce_axes_input);
    tcase_add_test(tc, reduce_edges_and_dtypes);
    tcase_add_test(tc, reduce_float_runs_match_double);
    tcase_add_test(tc, arg_reduce_values);
    tcase_add_test(tc, hardmax_values);
    tcase_add_test(tc, cumsum_values);
    suite_add_tcase(s, tc);
    tc = tcase_create("normalizations");
    tcase_add_test(tc, instance_norm_values);
    tcase_add_test(tc, group_norm_values);
    tcase_add_test(tc, mvn_values);
    tcase_add_test(tc, lrn_values);
    tcase_add_test(tc, lp_norm_values);
    suite_add_tcase(s, tc);
    tc = tcase_create("shapes_and_errors");
    tcase_add_checked_fixture(tc, NULL, free_allocs);
    tcase_add_test(tc, symbolic_dims);
    tcase_add_test(tc, shape_errors);
    tcase_add_test(tc, run_errors);
    suite_add_tcase(s, tc);
    tc = tcase_create("cpu_backend");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, cpu_backend_agrees);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
