/* The `cpu` backend's ops of quantized models against cpu_ref: the integer
 * products (oneDNN's int8 matmul and convolution), DynamicQuantizeLinear,
 * QuantizeLinear and DequantizeLinear (the backend's own loops) and Cast
 * to float.
 *
 * Random MatMulInteger, QLinearMatMul, ConvInteger and QLinearConv cases
 * (odd sizes, batched and broadcast products, groups, strides, pads and
 * dilations, per-tensor and per-channel scales, zero points absent, 0,
 * constant or computed at run time, weights constant or graph inputs) run
 * on both backends, in static and dynamic mode: the int32 outputs must be
 * equal, the quantized outputs of the QLinear ops at most 1 apart (oneDNN
 * converts a sum and a bias to float apart, which may round differently
 * beyond 2^24; the suite counts how many are, and sums just below a half
 * check that rounding comes before y's zero point).
 * Each case also checks that the node runs on oneDNN, or that the forms
 * oneDNN cannot compute exactly (uint8 weights computed at run time, or
 * those of a product without one zero point for all; zero points per row;
 * scales computed at run time) stay on cpu_ref, and ConvInteger's weight
 * zero points and uint8 weights run with the backend's correction; without AVX-512 VNNI every case stays there.  The
 * (de)quantizing loops must give cpu_ref's bytes exactly, ties, NaNs and
 * infinities included (AVX-512, AVX2 and plain loops: the test case
 * "loops" runs again with oneDNN held at AVX2 and SSE4.1).  Chains of
 * QLinearConvs check the nhwc values between them, and a block as ONNX
 * Runtime's dynamic quantization writes it (DynamicQuantizeLinear,
 * MatMulInteger, Cast, Mul) the run-time zero point inside a graph. */
#include "backend_util.h"
#include "core_builders.h"
#include "xf_runtime.h"
#include "xf_test_util.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- cases */

/* A graph of one integer product and the tensors its graph inputs take. */
typedef struct qcase {
    xf_graph *g;
    xf_tensor *feed[16];
    int n_feed;
    int node;
} qcase;

static int64_t type_lo(xf_dtype t) { return t == XF_DT_INT8 ? -128 : t == XF_DT_UINT8 ? 0 : INT32_MIN; }
static int64_t type_hi(xf_dtype t) { return t == XF_DT_INT8 ? 127 : t == XF_DT_UINT8 ? 255 : INT32_MAX; }

static int64_t get_int(const xf_tensor *t, int64_t i)
{
    switch (t->dtype) {
    case XF_DT_INT8: return ((const int8_t *)t->data)[i];
    case XF_DT_UINT8: return ((const uint8_t *)t->data)[i];
    default: return ((const int32_t *)t->data)[i];
    }
}

static void set_int(xf_tensor *t, int64_t i, int64_t v)
{
    switch (t->dtype) {
    case XF_DT_INT8: ((int8_t *)t->data)[i] = (int8_t)v; break;
    case XF_DT_UINT8: ((uint8_t *)t->data)[i] = (uint8_t)v; break;
    default: ((int32_t *)t->data)[i] = (int32_t)v; break;
    }
}

/* Elements drawn from [lo, hi]. */
static xf_tensor *ints(xf_dtype t, xf_shape s, int64_t lo, int64_t hi)
{
    xf_tensor *x = xf_tensor_create(t, &s);
    ck_assert_ptr_nonnull(x);
    for (int64_t i = 0; i < xf_shape_numel(&s); i++)
        set_int(x, i, xf_bt_rnd(lo, hi));
    return x;
}

/* Elements over the whole range of the type. */
static xf_tensor *full_range(xf_dtype t, xf_shape s) { return ints(t, s, type_lo(t), type_hi(t)); }

static xf_tensor *int_scalar(xf_dtype t, int64_t v) { return ints(t, SCALAR, v, v); }

/* Float elements log-uniform in [lo, hi]. */
static xf_tensor *scales(xf_shape s, double lo, double hi)
{
    xf_tensor *x = xf_tensor_create(XF_DT_FLOAT, &s);
    ck_assert_ptr_nonnull(x);
    for (int64_t i = 0; i < xf_shape_numel(&s); i++)
        ((float *)x->data)[i] = (float)(lo * pow(hi / lo, (double)xf_bt_rnd(0, 1000) / 1000.0));
    return x;
}

/* Adds t (taking it over) as an initializer, or as a graph input fed t. */
static int operand(qcase *c, xf_tensor *t, bool constant)
{
    int v;
    if (constant) {
        v = xf_graph_add_initializer(c->g, NULL, t);
        xf_tensor_release(t);
    } else {
        v = xf_bt_input(c->g, t->dtype, t->shape);
        ck_assert_int_lt(c->n_feed, 16);
        c->feed[c->n_feed++] = t;
    }
    ck_assert_int_ge(v, 0);
    return v;
}

/* How a zero point is given: absent, a constant 0, a constant of another
 * value, a graph input; or (weights) a constant of zeros per channel, one
 * of values drawn per channel. */
typedef enum { ZP_ABSENT, ZP_ZERO, ZP_CONST, ZP_RUNTIME, ZP_FORMS, ZP_ZERO_CHANNELS, ZP_CHANNELS } zp_form;

/* A zero point of type t in form f (-1 when absent); channels: the
 * length of a per-channel one. */
static int zero_point(qcase *c, xf_dtype t, zp_form f, int64_t channels)
{
    if (f == ZP_ABSENT)
        return -1;
    if (f == ZP_ZERO_CHANNELS || f == ZP_CHANNELS)
        return operand(c, f == ZP_CHANNELS ? full_range(t, SHAPE(channels)) : ints(t, SHAPE(channels), 0, 0), true);
    int64_t v = f == ZP_ZERO ? 0 : xf_bt_rnd(type_lo(t), type_hi(t));
    return operand(c, int_scalar(t, v), f != ZP_RUNTIME);
}

/* A convolution's geometry: spatial dims, groups, strides, pads, dilations. */
typedef struct conv_geom {
    int ns;
    int64_t group, s[3], pb[3], pe[3], d[3];
} conv_geom;

static void set_geometry(xf_graph *g, int n, const conv_geom *geo)
{
    xf_bt_set_window(attrs(g, n), geo->ns, NULL, geo->s, geo->pb, geo->pe, geo->d);
    attrs(g, n)->group = geo->group;
}

/* Adds node op on in[0..n_in) (-1: an omitted input) as the graph's
 * output, with geometry geo when a convolution, and infers shapes. */
static qcase finish(qcase c, xf_op op, int n_in, const int *in, const conv_geom *geo)
{
    while (n_in > 0 && in[n_in - 1] < 0)
        n_in--;
    c.node = xf_bt_finish_single(c.g, op, n_in, in);
    if (geo)
        set_geometry(c.g, c.node, geo);
    infer_ok(c.g, 21);
    return c;
}

static void qcase_free(qcase *c)
{
    for (int i = 0; i < c->n_feed; i++)
        xf_tensor_release(c->feed[i]);
    xf_graph_free(c->g);
}

/* ---------------------------------------------------------------- running */

/* Whether the cpu backend prepares the case's node on oneDNN (cpu_ref
 * nodes get no state). */
static bool on_onednn(const qcase *c)
{
    const xf_backend *b = xf_backend_find("cpu");
    const xf_node *n = &c->g->nodes[c->node];
    xf_tensor_view in[9] = {{0}}, out[3] = {{0}};
    xf_tensor *outs[3] = {0};
    for (int k = 0; k < n->n_inputs; k++) {
        int v = n->inputs[k];
        if (v < 0)
            continue;
        const xf_value *val = &c->g->values[v];
        in[k] = (xf_tensor_view){val->dtype, val->shape, NULL};
        if (val->init)
            in[k].data = val->init->data;
        for (int i = 0; i < c->g->n_inputs; i++)
            if (c->g->inputs[i] == v)
                in[k].data = c->feed[i]->data;
    }
    for (int k = 0; k < n->n_outputs; k++) {
        const xf_value *y = &c->g->values[n->outputs[k]];
        outs[k] = xf_tensor_create(y->dtype, &y->shape);
        ck_assert_ptr_nonnull(outs[k]);
        out[k] = (xf_tensor_view){y->dtype, y->shape, outs[k]->data};
    }
    void *ctx = NULL, *state = NULL;
    xf_error err = {0};
    ck_assert_msg(b->context_create(NULL, &ctx, &err) == XF_OK, "%s", err.msg);
    ck_assert_msg(b->prepare(ctx, c->g, c->node, in, out, &state, &err) == XF_OK, "prepare: %s", err.msg);
    bool yes = state != NULL;
    if (state)
        b->release(ctx, state);
    b->context_free(ctx);
    for (int k = 0; k < n->n_outputs; k++)
        xf_tensor_release(outs[k]);
    return yes;
}

/* Outputs of the QLinear ops 1 off cpu_ref, and all of them compared. */
static int64_t off_by_one, compared;

/* Whether output `got` of the cpu backend matches cpu_ref's `want`: equal
 * (float and int32 outputs) or at most 1 apart (quantized outputs, counted
 * when count). */
static void compare_output(const xf_tensor *got, const xf_tensor *want, bool count, const char *what)
{
    ck_assert_int_eq(got->dtype, want->dtype);
    ck_assert(xf_shape_equal(&got->shape, &want->shape));
    if (want->dtype == XF_DT_FLOAT) {
        xf_error err = {0};
        bool ok = false;
        ck_assert(xf_tensor_compare(got, want, 0, 0, NULL, NULL, &ok, &err) == XF_OK);
        ck_assert_msg(ok, "%s: a float output differs from cpu_ref", what);
        return;
    }
    bool exact = want->dtype == XF_DT_INT32;
    for (int64_t i = 0; i < xf_tensor_numel(want); i++) {
        int64_t d = llabs(get_int(got, i) - get_int(want, i));
        ck_assert_msg(d <= (exact ? 0 : 1), "%s: element %lld is %lld, cpu_ref %lld", what, (long long)i,
                      (long long)get_int(got, i), (long long)get_int(want, i));
        if (count) {
            off_by_one += d;
            compared++;
        }
    }
}

/* Runs the case on cpu_ref and on cpu (static and dynamic mode, twice
 * each) and compares the outputs (compare_output; counted once per case).
 * want_onednn: whether the backend must run it itself.  Frees the case. */
static void check_case(qcase *c, bool want_onednn, const char *what)
{
    xf_error err = {0};
    bool onednn = on_onednn(c);
    ck_assert_msg(onednn == want_onednn, "%s: %s on oneDNN", what,
                  onednn ? "runs" : "does not run");
    int n_out = c->g->n_outputs;
    xf_session *ref = NULL;
    xf_tensor *want[3] = {0}, *got[3] = {0};
    ck_assert_int_le(n_out, 3);
    ck_assert_msg(xf_session_create(c->g, 21, "cpu_ref", NULL, &ref, &err) == XF_OK, "%s: %s", what, err.msg);
    ck_assert_msg(xf_session_run(ref, c->feed, want, &err) == XF_OK, "%s: cpu_ref: %s", what, err.msg);
    for (int dynamic = 0; dynamic < 2; dynamic++) {
        xf_session_options opt = {.force_dynamic = dynamic};
        xf_session *s = NULL;
        ck_assert_msg(xf_session_create(c->g, 21, "cpu", &opt, &s, &err) == XF_OK, "%s: %s", what, err.msg);
        for (int run = 0; run < 2; run++) {
            ck_assert_msg(xf_session_run(s, c->feed, got, &err) == XF_OK, "%s: cpu: %s", what, err.msg);
            char where[160];
            snprintf(where, sizeof where, "%s (%s)", what, dynamic ? "dynamic" : "static");
            for (int k = 0; k < n_out; k++) {
                compare_output(got[k], want[k], !dynamic && run == 0, where);
                xf_tensor_release(got[k]);
            }
        }
        xf_session_free(s);
    }
    for (int k = 0; k < n_out; k++)
        xf_tensor_release(want[k]);
    xf_session_free(ref);
    qcase_free(c);
}

/* Prints how many QLinear outputs were 1 off and bounds it: only sums
 * beyond 2^24 may round apart, so they are rare. */
static void report_off_by_one(const char *op)
{
    printf("%s: %lld of %lld outputs 1 off cpu_ref\n", op, (long long)off_by_one, (long long)compared);
    ck_assert_msg(off_by_one * 1000 <= compared, "%s: %lld of %lld outputs 1 off", op, (long long)off_by_one,
                  (long long)compared);
    off_by_one = compared = 0;
}

/* A y_scale that spreads the requantized sums of k products of centered
 * 8-bit values (about 74 x 74 x sqrt(k) apart) over about +-50, times a
 * random factor in [1/2, 2] (some saturate). */
static xf_tensor *y_scale_for(float x_scale, const xf_tensor *w_scale, int64_t k)
{
    double mean = 0;
    for (int64_t i = 0; i < xf_tensor_numel(w_scale); i++)
        mean += ((const float *)w_scale->data)[i] / (double)xf_tensor_numel(w_scale);
    xf_tensor *t = scales(SCALAR, 0.5, 2.0);
    ((float *)t->data)[0] *= (float)(x_scale * mean * 74 * 74 * sqrt((double)k) / 50);
    return t;
}

/* ---------------------------------------------------------------- matrix products */

/* Random operand shapes of a batched product: a (..., m, k), b (..., k, n)
 * in batch form 0..5 (none, equal, b 2-D, a's batch 1, b's batch 1, rank
 * 4); a long k (past a block of the kernels) now and then. */
static void product_shapes(int form, xf_shape *a, xf_shape *b)
{
    int64_t m = xf_bt_rnd(1, 37), k = xf_bt_rnd(1, 70), n = xf_bt_rnd(1, 41), bt = xf_bt_rnd(2, 3);
    if (xf_bt_rnd(0, 5) == 0)
        k = xf_bt_rnd(700, 800);
    switch (form % 6) {
    case 0: *a = SHAPE(m, k), *b = SHAPE(k, n); break;
    case 1: *a = SHAPE(bt, m, k), *b = SHAPE(bt, k, n); break;
    case 2: *a = SHAPE(bt, m, k), *b = SHAPE(k, n); break;
    case 3: *a = SHAPE(1, m, k), *b = SHAPE(bt, k, n); break;
    case 4: *a = SHAPE(bt, m, k), *b = SHAPE(1, k, n); break;
    default: *a = SHAPE(2, bt, m, k), *b = SHAPE(2, bt, k, n); break;
    }
}

/* MatMulInteger of a and b (b a constant when const_b) with zero points
 * of the given forms. */
static qcase matmul_integer(xf_tensor *a, xf_tensor *b, zp_form a_zp, zp_form b_zp, bool const_b)
{
    qcase c = {.g = xf_graph_create("mmi")};
    xf_dtype at = a->dtype, bt = b->dtype;
    int64_t n = b->shape.dims[b->shape.ndim - 1];
    int in[4] = {operand(&c, a, false), operand(&c, b, const_b)};
    in[2] = zero_point(&c, at, a_zp, 0);
    in[3] = zero_point(&c, bt, b_zp, n);
    return finish(c, XF_OP_MATMUL_INTEGER, 4, in, NULL);
}

START_TEST(matmul_integer_random)
{
    if (!xf_bt_have_cpu())
        return;
    static const zp_form b_forms[] = {ZP_ABSENT, ZP_ZERO_CHANNELS, ZP_ZERO, ZP_CONST, ZP_RUNTIME};
    xf_bt_seed(7);
    for (int t = 0; t < 40; t++) {
        xf_shape as, bs;
        product_shapes(t, &as, &bs);
        xf_dtype at = t % 2 ? XF_DT_INT8 : XF_DT_UINT8;
        qcase c = matmul_integer(full_range(at, as), full_range(XF_DT_INT8, bs), (zp_form)(t / 2 % ZP_FORMS),
                                 b_forms[t / 3 % 5], t % 4 != 3);
        char what[64];
        snprintf(what, sizeof what, "MatMulInteger case %d", t);
        check_case(&c, xf_bt_have_vnni(), what);
    }
}
END_TEST

/* Products of at most 4 rows (the source's dims but the last) take a
 * kernel other than oneDNN's AMX ones, whose tile setup cost more than
 * the work there; more rows take oneDNN's first choice.  Values as
 * cpu_ref's either way. */
START_TEST(few_rows_products)
{
    if (!xf_bt_have_cpu() || !xf_bt_have_vnni())
        return;
    /* batches, rows, k and whether b is batched too; the first case tells
     * whether oneDNN takes AMX kernels here at all */
    static const int64_t shapes[][4] = {{1, 64, 300, 0}, {1, 1, 300, 0}, {1, 3, 300, 0}, {1, 4, 64, 0},
                                        {2, 2, 300, 1},  {1, 5, 300, 0}, {2, 3, 300, 1}, {2, 8, 300, 0}};
    bool amx = false;
    xf_bt_seed(11);
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        int64_t rows = shapes[i][0] * shapes[i][1], k = shapes[i][2];
        xf_shape as = shapes[i][0] > 1 ? SHAPE(shapes[i][0], shapes[i][1], k) : SHAPE(shapes[i][1], k);
        xf_shape bs = shapes[i][3] ? SHAPE(shapes[i][0], k, 200) : SHAPE(k, 200);
        qcase c = matmul_integer(full_range(XF_DT_UINT8, as), full_range(XF_DT_INT8, bs), ZP_CONST, ZP_ABSENT, true);
        char impl[128], what[200];
        xf_bt_node_impl(c.g, 21, XF_OP_MATMUL_INTEGER, impl, sizeof impl);
        amx = amx || (i == 0 && strstr(impl, "amx"));
        ck_assert_msg(rows > 4 ? !amx || strstr(impl, "amx") : !strstr(impl, "amx"), "%lld rows: %s", (long long)rows,
                      impl);
        snprintf(what, sizeof what, "MatMulInteger of %lld rows (%s)", (long long)rows, impl);
        check_case(&c, true, what);
    }
    if (!amx)
        printf("few_rows_products: oneDNN takes no AMX kernel here, so that choice was not checked\n");
}
END_TEST

/* Sums past 2^24 (where a float would round them) stay exact. */
START_TEST(matmul_integer_extremes)
{
    if (!xf_bt_have_cpu())
        return;
    xf_bt_seed(8);
    qcase c = matmul_integer(ints(XF_DT_UINT8, SHAPE(3, 1100), 255, 255), ints(XF_DT_INT8, SHAPE(1100, 17), -128, -128),
                             ZP_ABSENT, ZP_ABSENT, true);
    check_case(&c, xf_bt_have_vnni(), "MatMulInteger of 255 x -128, k 1100");
    c = matmul_integer(ints(XF_DT_INT8, SHAPE(2, 5, 1030), -128, -128), ints(XF_DT_INT8, SHAPE(1030, 9), -128, -128),
                       ZP_RUNTIME, ZP_ABSENT, false);
    check_case(&c, xf_bt_have_vnni(), "MatMulInteger of -128 x -128, k 1030");
}
END_TEST

/* uint8 weights (quantize_dynamic's QUInt8, attention's products of two
 * uint8 activations) run on oneDNN as int8 with the zero point less 128:
 * constant or computed, the zero point constant (0 too), or computed;
 * then a QLinearMatMul of two uint8 tensors; sums past 2^24 exact.
 * Without a zero point, or with one per column, they stay on cpu_ref. */
START_TEST(uint8_weights)
{
    if (!xf_bt_have_cpu())
        return;
    static const zp_form b_forms[] = {ZP_CONST, ZP_ZERO, ZP_RUNTIME, ZP_ABSENT, ZP_ZERO_CHANNELS};
    xf_bt_seed(9);
    for (int t = 0; t < 20; t++) {
        xf_shape as, bs;
        product_shapes(t, &as, &bs);
        xf_dtype at = t % 2 ? XF_DT_INT8 : XF_DT_UINT8;
        zp_form bz = b_forms[t % 5];
        qcase c = matmul_integer(full_range(at, as), full_range(XF_DT_UINT8, bs), (zp_form)(t / 2 % ZP_FORMS), bz,
                                 t % 4 != 3);
        char what[64];
        snprintf(what, sizeof what, "MatMulInteger of uint8 b, case %d", t);
        check_case(&c, xf_bt_have_vnni() && bz != ZP_ABSENT && bz != ZP_ZERO_CHANNELS, what);
    }
    qcase c = matmul_integer(ints(XF_DT_UINT8, SHAPE(3, 1100), 255, 255), ints(XF_DT_UINT8, SHAPE(1100, 17), 0, 0),
                             ZP_ZERO, ZP_ZERO, false);
    check_case(&c, xf_bt_have_vnni(), "MatMulInteger of 255 x uint8 0 less zero point 0, k 1100");
    for (int t = 0; t < 8; t++) {
        c = (qcase){.g = xf_graph_create("qmm")};
        xf_shape as, bs;
        product_shapes(t, &as, &bs);
        int64_t k = as.dims[as.ndim - 1];
        xf_tensor *a_scale = scales(SCALAR, 0.01, 0.05), *b_scale = scales(SCALAR, 0.01, 0.05);
        xf_tensor *y_scale = y_scale_for(((float *)a_scale->data)[0], b_scale, k);
        int in[8] = {operand(&c, full_range(XF_DT_UINT8, as), false), operand(&c, a_scale, true),
                     zero_point(&c, XF_DT_UINT8, ZP_CONST, 0), operand(&c, full_range(XF_DT_UINT8, bs), t % 2),
                     operand(&c, b_scale, true), zero_point(&c, XF_DT_UINT8, t % 3 ? ZP_CONST : ZP_RUNTIME, 0),
                     operand(&c, y_scale, true), zero_point(&c, XF_DT_UINT8, ZP_CONST, 0)};
        c = finish(c, XF_OP_QLINEAR_MATMUL, 8, in, NULL);
        char what[64];
        snprintf(what, sizeof what, "QLinearMatMul of two uint8 tensors, case %d", t);
        check_case(&c, xf_bt_have_vnni(), what);
    }
    report_off_by_one("QLinearMatMul of uint8 b");
}
END_TEST

/* The forms oneDNN cannot compute exactly stay on cpu_ref. */
START_TEST(matmul_integer_on_cpu_ref)
{
    if (!xf_bt_have_cpu())
        return;
    xf_bt_seed(9);
    qcase c;
    /* per row of a, per column of b */
    for (int per = 0; per < 2; per++) {
        c = (qcase){.g = xf_graph_create("mmi")};
        int a = operand(&c, full_range(XF_DT_UINT8, SHAPE(5, 7)), false);
        int b = operand(&c, full_range(XF_DT_INT8, SHAPE(7, 3)), true);
        int az = operand(&c, full_range(XF_DT_UINT8, per ? SCALAR : SHAPE(5)), true);
        int bz = operand(&c, ints(XF_DT_INT8, per ? SHAPE(3) : SCALAR, per ? 1 : 0, 5), true);
        c = finish(c, XF_OP_MATMUL_INTEGER, 4, (int[]){a, b, az, bz}, NULL);
        check_case(&c, false, per ? "MatMulInteger, b's zero points per column" : "MatMulInteger, a's per row");
    }
}
END_TEST

/* QLinearMatMul of a and b (b a constant when const_b): scales drawn,
 * b's per column when per_column, y of type yt. */
static qcase qlinear_matmul(xf_tensor *a, xf_tensor *b, xf_dtype yt, bool per_column, zp_form a_zp, zp_form y_zp,
                            bool const_b, bool const_scales)
{
    qcase c = {.g = xf_graph_create("qmm")};
    int64_t k = a->shape.dims[a->shape.ndim - 1], n = b->shape.dims[b->shape.ndim - 1];
    xf_tensor *a_scale = scales(SCALAR, 0.002, 0.05), *b_scale = scales(per_column ? SHAPE(n) : SCALAR, 0.002, 0.05);
    xf_tensor *y_scale = y_scale_for(((float *)a_scale->data)[0], b_scale, k);
    xf_dtype at = a->dtype;
    int in[8];
    in[0] = operand(&c, a, false);
    in[1] = operand(&c, a_scale, const_scales);
    in[2] = zero_point(&c, at, a_zp, 0);
    in[3] = operand(&c, b, const_b);
    in[4] = operand(&c, b_scale, true);
    in[5] = zero_point(&c, XF_DT_INT8, per_column ? ZP_ZERO_CHANNELS : ZP_ZERO, n);
    in[6] = operand(&c, y_scale, true);
    in[7] = zero_point(&c, yt, y_zp, 0);
    return finish(c, XF_OP_QLINEAR_MATMUL, 8, in, NULL);
}

START_TEST(qlinear_matmul_random)
{
    if (!xf_bt_have_cpu())
        return;
    static const zp_form forms[] = {ZP_ZERO, ZP_CONST, ZP_RUNTIME};
    xf_bt_seed(10);
    for (int t = 0; t < 36; t++) {
        xf_shape as, bs;
        product_shapes(t, &as, &bs);
        xf_dtype at = t % 2 ? XF_DT_INT8 : XF_DT_UINT8, yt = t / 2 % 2 ? XF_DT_INT8 : XF_DT_UINT8;
        qcase c = qlinear_matmul(full_range(at, as), full_range(XF_DT_INT8, bs), yt, t / 4 % 2, forms[t / 3 % 3],
                                 forms[t / 5 % 3], t % 4 != 3, true);
        char what[64];
        snprintf(what, sizeof what, "QLinearMatMul case %d", t);
        check_case(&c, xf_bt_have_vnni(), what);
    }
    report_off_by_one("QLinearMatMul");
    /* a scale computed at run time stays on cpu_ref */
    qcase c = qlinear_matmul(full_range(XF_DT_UINT8, SHAPE(4, 9)), full_range(XF_DT_INT8, SHAPE(9, 6)), XF_DT_UINT8,
                             false, ZP_CONST, ZP_CONST, true, false);
    check_case(&c, false, "QLinearMatMul with a_scale a graph input");
    off_by_one = compared = 0;
}
END_TEST

/* ---------------------------------------------------------------- convolutions */

/* A random convolution (case t): x and w shapes and the geometry, with 1 to
 * 3 spatial dims, groups (depthwise ones among them), strides, pads drawn
 * apart at both ends and dilations. */
static conv_geom conv_shapes(int t, xf_shape *x, xf_shape *w)
{
    conv_geom geo = {.ns = t % 8 == 7 ? 1 : t % 8 == 6 ? 3 : 2, .group = 1};
    if (t % 5 == 2)
        geo.group = xf_bt_rnd(2, 3);
    int64_t cin = geo.group * xf_bt_rnd(1, t % 4 == 0 ? 40 : 6), cout = geo.group * xf_bt_rnd(1, t % 3 ? 6 : 40);
    if (t % 7 == 4)
        geo.group = cin = cout = 16; /* depthwise */
    int64_t xd[5] = {xf_bt_rnd(1, 2), cin}, wd[5] = {cout, cin / geo.group};
    for (int i = 0; i < geo.ns; i++) {
        int64_t k = xf_bt_rnd(1, geo.ns == 3 ? 2 : 3);
        geo.s[i] = xf_bt_rnd(1, 2);
        geo.d[i] = t % 6 == 5 ? 2 : 1;
        geo.pb[i] = xf_bt_rnd(0, k - 1);
        geo.pe[i] = xf_bt_rnd(0, k - 1);
        wd[2 + i] = k;
        xd[2 + i] = geo.d[i] * (k - 1) + xf_bt_rnd(1, geo.ns == 3 ? 4 : 14);
    }
    *x = xf_shape_make(2 + geo.ns, xd);
    *w = xf_shape_make(2 + geo.ns, wd);
    return geo;
}

/* ConvInteger of x and w (w a constant when const_w). */
static qcase conv_integer(xf_tensor *x, xf_tensor *w, const conv_geom *geo, zp_form x_zp, zp_form w_zp, bool const_w)
{
    qcase c = {.g = xf_graph_create("convi")};
    xf_dtype xt = x->dtype, wt = w->dtype;
    int64_t m = w->shape.dims[0];
    int in[4] = {operand(&c, x, false), operand(&c, w, const_w)};
    in[2] = zero_point(&c, xt, x_zp, 0);
    in[3] = zero_point(&c, wt, w_zp, m);
    return finish(c, XF_OP_CONV_INTEGER, 4, in, geo);
}

START_TEST(conv_integer_random)
{
    if (!xf_bt_have_cpu())
        return;
    static const zp_form w_forms[] = {ZP_ABSENT, ZP_ZERO, ZP_ZERO_CHANNELS};
    xf_bt_seed(11);
    for (int t = 0; t < 32; t++) {
        xf_shape xs, ws;
        conv_geom geo = conv_shapes(t, &xs, &ws);
        xf_dtype xt = t % 2 ? XF_DT_INT8 : XF_DT_UINT8;
        qcase c = conv_integer(full_range(xt, xs), full_range(XF_DT_INT8, ws), &geo, (zp_form)(t / 2 % ZP_FORMS),
                               w_forms[t % 3], t % 4 != 3);
        char what[64];
        snprintf(what, sizeof what, "ConvInteger case %d", t);
        check_case(&c, xf_bt_have_vnni(), what);
    }
}
END_TEST

/* QLinearConv of x and w (w a constant when const_w): scales drawn, w's
 * per output channel when per_channel; an int32 bias unless bias is 0
 * (1: a constant, 2: a graph input). */
static int add_qlinear_conv(qcase *c, int x, xf_dtype xt, xf_tensor *w, const conv_geom *geo, xf_dtype yt,
                            bool per_channel, zp_form x_zp, zp_form y_zp, int bias, bool const_w)
{
    int64_t m = w->shape.dims[0], k = xf_shape_numel(&w->shape) / m;
    xf_tensor *x_scale = scales(SCALAR, 0.002, 0.05), *w_scale = scales(per_channel ? SHAPE(m) : SCALAR, 0.002, 0.05);
    xf_tensor *y_scale = y_scale_for(((float *)x_scale->data)[0], w_scale, k);
    int in[9] = {x};
    in[1] = operand(c, x_scale, true);
    in[2] = zero_point(c, xt, x_zp, 0);
    in[3] = operand(c, w, const_w);
    in[4] = operand(c, w_scale, true);
    in[5] = zero_point(c, XF_DT_INT8, per_channel ? ZP_ZERO_CHANNELS : ZP_ZERO, m);
    in[6] = operand(c, y_scale, true);
    in[7] = zero_point(c, yt, y_zp, 0);
    in[8] = bias ? operand(c, ints(XF_DT_INT32, SHAPE(m), -20000, 20000), bias == 1) : -1;
    int n = node(c->g, XF_OP_QLINEAR_CONV, NULL, in[8] >= 0 ? 9 : 8, in, 1);
    set_geometry(c->g, n, geo);
    return n;
}

static qcase qlinear_conv(xf_tensor *x, xf_tensor *w, const conv_geom *geo, xf_dtype yt, bool per_channel,
                          zp_form x_zp, zp_form y_zp, int bias, bool const_w)
{
    qcase c = {.g = xf_graph_create("qconv")};
    xf_dtype xt = x->dtype;
    int xv = operand(&c, x, false);
    c.node = add_qlinear_conv(&c, xv, xt, w, geo, yt, per_channel, x_zp, y_zp, bias, const_w);
    xf_graph_add_output(c.g, out0(c.g, c.node));
    infer_ok(c.g, 21);
    return c;
}

START_TEST(qlinear_conv_random)
{
    if (!xf_bt_have_cpu())
        return;
    static const zp_form forms[] = {ZP_ZERO, ZP_CONST, ZP_RUNTIME};
    xf_bt_seed(12);
    for (int t = 0; t < 36; t++) {
        xf_shape xs, ws;
        conv_geom geo = conv_shapes(t, &xs, &ws);
        xf_dtype xt = t % 2 ? XF_DT_INT8 : XF_DT_UINT8, yt = t / 2 % 2 ? XF_DT_INT8 : XF_DT_UINT8;
        qcase c = qlinear_conv(full_range(xt, xs), full_range(XF_DT_INT8, ws), &geo, yt, t / 4 % 2, forms[t / 3 % 3],
                               forms[t / 5 % 3], t % 3, t % 4 != 3);
        char what[64];
        snprintf(what, sizeof what, "QLinearConv case %d", t);
        check_case(&c, xf_bt_have_vnni(), what);
    }
    report_off_by_one("QLinearConv");
}
END_TEST

/* Requantized sums just below a half, (2i + 1) x 0.49999905: ONNX rounds
 * them down, then adds y's zero point of 129, where adding it first makes
 * the smallest ones halves in float (129.4999990 is 129.5), which round to
 * even, up.  QLinearMatMul over a column of odd values, and QLinearConv as
 * a 1x1 convolution of them. */
START_TEST(qlinear_near_ties)
{
    if (!xf_bt_have_cpu())
        return;
    const float below_half = 0.49999905f, one = 1.0f;
    for (int conv = 0; conv < 2; conv++) {
        qcase c = {.g = xf_graph_create("ties")};
        xf_shape xs = conv ? SHAPE(1, 1, 8, 8) : SHAPE(64, 1), ws = conv ? SHAPE(1, 1, 1, 1) : SHAPE(1, 1);
        xf_tensor *x = xf_tensor_create(XF_DT_UINT8, &xs);
        ck_assert_ptr_nonnull(x);
        for (int64_t i = 0; i < 64; i++)
            ((uint8_t *)x->data)[i] = (uint8_t)(2 * i + 1);
        int in[8] = {operand(&c, x, false), constant(c.g, NULL, XF_DT_FLOAT, SCALAR, &below_half),
                     zero_point(&c, XF_DT_UINT8, ZP_ZERO, 0), operand(&c, ints(XF_DT_INT8, ws, 1, 1), true),
                     constant(c.g, NULL, XF_DT_FLOAT, SCALAR, &one), zero_point(&c, XF_DT_INT8, ZP_ZERO, 0),
                     constant(c.g, NULL, XF_DT_FLOAT, SCALAR, &one), operand(&c, int_scalar(XF_DT_UINT8, 129), true)};
        conv_geom geo = {.ns = 2, .group = 1, .s = {1, 1}, .d = {1, 1}};
        c = finish(c, conv ? XF_OP_QLINEAR_CONV : XF_OP_QLINEAR_MATMUL, 8, in, conv ? &geo : NULL);
        check_case(&c, xf_bt_have_vnni(), conv ? "QLinearConv near ties" : "QLinearMatMul near ties");
    }
    ck_assert_int_eq(off_by_one, 0);
    off_by_one = compared = 0;
}
END_TEST

/* QLinearConvs in a row keep the values between them nhwc in static mode;
 * one also read as a graph output stays plain.  y's zero points are 0, so
 * that every output is exact and no difference carries on. */
START_TEST(qlinear_conv_chains)
{
    if (!xf_bt_have_cpu())
        return;
    xf_bt_seed(16);
    static const int64_t channels[] = {16, 32, 32, 24, 40};
    for (int xi = 0; xi < 2; xi++) {
        qcase c = {.g = xf_graph_create("chain")};
        xf_dtype t = xi ? XF_DT_INT8 : XF_DT_UINT8;
        int v = operand(&c, full_range(t, SHAPE(1, 16, 13, 11)), false);
        for (int i = 0; i < 4; i++) {
            int64_t s = i == 1 ? 2 : 1, k = i == 2 ? 1 : 3;
            conv_geom geo = {.ns = 2, .group = 1, .s = {s, s}, .pb = {k / 2, k / 2}, .pe = {k / 2, k / 2}, .d = {1, 1}};
            int n = add_qlinear_conv(&c, v, t, full_range(XF_DT_INT8, SHAPE(channels[i + 1], channels[i], k, k)), &geo,
                                     t, i % 2, i == 0 ? ZP_CONST : ZP_ZERO, ZP_ZERO, 1, true);
            if (i == 0)
                c.node = n;
            v = out0(c.g, n);
            if (i == 2)
                xf_graph_add_output(c.g, v);
        }
        xf_graph_add_output(c.g, v);
        infer_ok(c.g, 21);
        check_case(&c, xf_bt_have_vnni(), xi ? "a chain of int8 QLinearConvs" : "a chain of uint8 QLinearConvs");
    }
    ck_assert_int_eq(off_by_one, 0);
    off_by_one = compared = 0;
}
END_TEST

/* Weights oneDNN's convolution reads less a zero point, which a loop of
 * the backend's own then corrects: uint8 constants (zero point absent, 0,
 * one or one per channel), int8 weights with a nonzero zero point (one,
 * per channel, computed at run time), in every geometry of conv_shapes.
 * uint8 weights computed at run time stay on cpu_ref.  The extremes (x
 * and w at 0 or 255, zero points at the other end: every product 65,025)
 * check the correction at its largest; a chain checks x read plain. */
START_TEST(conv_integer_weight_zero_points)
{
    if (!xf_bt_have_cpu())
        return;
    static const zp_form u8_forms[] = {ZP_CONST, ZP_ABSENT, ZP_CHANNELS, ZP_ZERO, ZP_ZERO_CHANNELS};
    static const zp_form s8_forms[] = {ZP_CONST, ZP_CHANNELS, ZP_RUNTIME};
    xf_bt_seed(23);
    for (int t = 0; t < 40; t++) {
        xf_shape xs, ws;
        conv_geom geo = conv_shapes(t, &xs, &ws);
        xf_dtype xt = t % 3 ? XF_DT_UINT8 : XF_DT_INT8, wt = t % 4 == 1 ? XF_DT_INT8 : XF_DT_UINT8;
        zp_form wz = wt == XF_DT_UINT8 ? u8_forms[t % 5] : s8_forms[t / 4 % 3];
        qcase c = conv_integer(full_range(xt, xs), full_range(wt, ws), &geo, (zp_form)(t / 3 % ZP_FORMS), wz, true);
        char what[96];
        snprintf(what, sizeof what, "ConvInteger case %d (%s weights)", t, wt == XF_DT_UINT8 ? "uint8" : "int8");
        check_case(&c, xf_bt_have_vnni(), what);
    }
    xf_shape xs, ws;
    conv_geom geo = conv_shapes(2, &xs, &ws);
    for (int k = 0; k < 2; k++) {
        xf_tensor *x = ints(XF_DT_UINT8, xs, 255 * k, 255 * k), *w = ints(XF_DT_UINT8, ws, 255 * k, 255 * k);
        qcase c = {.g = xf_graph_create("convi")};
        int in[4] = {operand(&c, x, false), operand(&c, w, true), operand(&c, int_scalar(XF_DT_UINT8, 255 * !k), true),
                     operand(&c, int_scalar(XF_DT_UINT8, 255 * !k), true)};
        c = finish(c, XF_OP_CONV_INTEGER, 4, in, &geo);
        check_case(&c, xf_bt_have_vnni(),
                   k ? "ConvInteger at 255, zero points 0" : "ConvInteger at 0, zero points 255");
    }
    qcase c = conv_integer(full_range(XF_DT_UINT8, xs), full_range(XF_DT_UINT8, ws), &geo, ZP_CONST, ZP_CONST, false);
    check_case(&c, false, "ConvInteger of uint8 weights computed at run time");
    /* dilated along every axis of three (conv_shapes dilates 1 and 2) */
    geo = (conv_geom){.ns = 3, .group = 1, .s = {1, 2, 1}, .pb = {1, 0, 1}, .pe = {0, 1, 1}, .d = {2, 2, 2}};
    c = conv_integer(full_range(XF_DT_UINT8, SHAPE(2, 4, 5, 6, 7)), full_range(XF_DT_UINT8, SHAPE(3, 4, 2, 2, 2)), &geo,
                     ZP_CONST, ZP_CHANNELS, true);
    check_case(&c, xf_bt_have_vnni(), "ConvInteger dilated along three axes");
    /* strides of 2 over pads of 1: the first tap lands inside from the second output on */
    geo = (conv_geom){.ns = 2, .group = 1, .s = {2, 2}, .pb = {1, 1}, .pe = {1, 0}, .d = {1, 1}};
    c = conv_integer(full_range(XF_DT_UINT8, SHAPE(1, 5, 7, 9)), full_range(XF_DT_UINT8, SHAPE(4, 5, 3, 3)), &geo,
                     ZP_CONST, ZP_CONST, true);
    check_case(&c, xf_bt_have_vnni(), "ConvInteger of strides 2 over pads 1");
    /* after a QLinearConv, which would store its output nhwc for a reader
     * taking that: the correction reads x plain */
    c = (qcase){.g = xf_graph_create("chain")};
    geo = (conv_geom){.ns = 2, .group = 1, .s = {1, 1}, .pb = {1, 1}, .pe = {1, 1}, .d = {1, 1}};
    int x = operand(&c, full_range(XF_DT_UINT8, SHAPE(1, 16, 9, 7)), false);
    int q = add_qlinear_conv(&c, x, XF_DT_UINT8, full_range(XF_DT_INT8, SHAPE(16, 16, 3, 3)), &geo, XF_DT_UINT8, false,
                             ZP_CONST, ZP_CONST, 1, true);
    int in[4] = {out0(c.g, q), operand(&c, full_range(XF_DT_UINT8, SHAPE(8, 16, 3, 3)), true),
                 operand(&c, int_scalar(XF_DT_UINT8, 7), true), operand(&c, int_scalar(XF_DT_UINT8, 130), true)};
    c = finish(c, XF_OP_CONV_INTEGER, 4, in, &geo);
    check_case(&c, xf_bt_have_vnni(), "ConvInteger of uint8 weights after a QLinearConv");
}
END_TEST

/* ---------------------------------------------------------------- dynamic quantization */

/* A DynamicQuantizeLinear of x (taken over), all three outputs; or, when
 * scale > 0, a QuantizeLinear of x to uint8 by scale and zero point zp. */
static qcase quantize(xf_tensor *x, float scale, int64_t zp)
{
    qcase c = {.g = xf_graph_create("q")};
    int in[3] = {operand(&c, x, false)};
    if (scale > 0) {
        in[1] = constant(c.g, NULL, XF_DT_FLOAT, SCALAR, &scale);
        in[2] = operand(&c, int_scalar(XF_DT_UINT8, zp), true);
        c.node = xf_bt_finish_single(c.g, XF_OP_QUANTIZE_LINEAR, 3, in);
    } else {
        c.node = node(c.g, XF_OP_DYNAMIC_QUANTIZE_LINEAR, "dq", 1, in, 3);
        for (int k = 0; k < 3; k++)
            xf_graph_add_output(c.g, c.g->nodes[c.node].outputs[k]);
    }
    infer_ok(c.g, 21);
    return c;
}

/* The cpu backend's own DynamicQuantizeLinear and QuantizeLinear loop
 * gives what cpu_ref does: sizes off its 16-element blocks, ties (x /
 * scale exactly half-way: the range [-127.5, 127.5] makes DQL's scale 1),
 * NaNs (skipped in the range, written as 0), infinities (an infinite
 * scale), all zeros (scale 1), ranges without 0, values far beyond the
 * saturation bounds, tensors the loop splits in chunks over the threads
 * (a NaN in the first chunk, infinities in the last), and NaNs after the
 * range's ends in the same vector lanes. */
START_TEST(quantize_linear_edges)
{
    if (!xf_bt_have_cpu())
        return;
    xf_bt_seed(14);
    for (int t = 0; t < 9; t++) {
        /* cases 5 to 7: loops split in chunks over the threads */
        int64_t count = t == 0 ? 1 : t == 1 ? 15 : t == 2 ? 16 : t < 5 || t == 8 ? 1000 + t : 40000 + 7 * t;
        xf_shape shape = SHAPE(count);
        xf_tensor *x = xf_tensor_create(XF_DT_FLOAT, &shape);
        ck_assert_ptr_nonnull(x);
        float *v = x->data;
        for (int64_t i = 0; i < count; i++) {
            switch (t) {
            case 3: v[i] = (float)xf_bt_rnd(-127, 127) + 0.5f; break;
            case 4: v[i] = 0.0f; break;
            case 5: v[i] = (float)xf_bt_rnd(100, 2000) / 7.0f; break; /* all positive */
            case 7: v[i] = (float)xf_bt_rnd(-3, 3) * 1e9f; break;
            default: v[i] = (float)xf_bt_rnd(-100000, 100000) / 3000.0f; break;
            }
        }
        if (t == 3)
            v[0] = -127.5f, v[count - 1] = 127.5f;
        if (t == 6)
            v[3] = NAN, v[count - 2] = INFINITY, v[count - 1] = -INFINITY;
        /* the range's ends before NaNs in the same vector lanes */
        if (t == 8)
            v[0] = -50.0f, v[1] = 60.0f, v[16] = v[17] = NAN;
        xf_tensor *copy = xf_tensor_from_data(XF_DT_FLOAT, &shape, v);
        ck_assert_ptr_nonnull(copy);
        char what[64];
        qcase c = quantize(x, 0, 0);
        snprintf(what, sizeof what, "DynamicQuantizeLinear case %d", t);
        check_case(&c, true, what);
        /* scale 1 keeps case 3's ties */
        c = quantize(copy, t == 3 ? 1.0f : 0.037f, xf_bt_rnd(0, 255));
        snprintf(what, sizeof what, "QuantizeLinear case %d", t);
        check_case(&c, true, what);
    }
    /* one infinity: DQL's scale is infinite, every element but it 0 */
    xf_shape shape = SHAPE(40);
    xf_tensor *x = xf_tensor_create(XF_DT_FLOAT, &shape);
    ((float *)x->data)[5] = INFINITY;
    ((float *)x->data)[7] = -1.0f;
    qcase c = quantize(x, 0, 0);
    check_case(&c, true, "DynamicQuantizeLinear with an infinity");
}
END_TEST

/* The backend's DequantizeLinear loop gives cpu_ref's floats for uint8 and
 * int8, with and without a zero point, on sizes off its blocks, per tensor
 * and per axis. */
START_TEST(dequantize_linear_8bit)
{
    if (!xf_bt_have_cpu())
        return;
    xf_bt_seed(17);
    for (int t = 0; t < 8; t++) {
        xf_dtype xt = t % 2 ? XF_DT_INT8 : XF_DT_UINT8;
        int64_t count = t / 2 == 0 ? 15 : t / 2 == 1 ? 16 : t / 2 == 2 ? 1000 + t : 40000 + 7 * t;
        qcase c = {.g = xf_graph_create("dq")};
        float scale = (float)xf_bt_rnd(1, 1000) / 3000.0f;
        int in[3] = {operand(&c, full_range(xt, SHAPE(count)), false), constant(c.g, NULL, XF_DT_FLOAT, SCALAR, &scale),
                     zero_point(&c, xt, t / 2 == 3 ? ZP_ABSENT : ZP_CONST, 0)};
        c = finish(c, XF_OP_DEQUANTIZE_LINEAR, 3, in, NULL);
        char what[64];
        snprintf(what, sizeof what, "DequantizeLinear case %d", t);
        check_case(&c, true, what);
    }
    /* per axis: a scale (and a zero point, or none) per index of axis 0, 1
     * or the last, slabs of many elements and of one */
    for (int t = 0; t < 6; t++) {
        xf_dtype xt = t % 2 ? XF_DT_INT8 : XF_DT_UINT8;
        int axis = t / 2 == 2 ? -1 : t / 2;
        xf_shape xs = SHAPE(3, 5, 37);
        int64_t dim = xs.dims[axis < 0 ? 2 : axis];
        qcase c = {.g = xf_graph_create("dq")};
        int in[3] = {operand(&c, full_range(xt, xs), false), operand(&c, scales(SHAPE(dim), 0.001, 0.5), true),
                     t == 4 ? -1 : operand(&c, full_range(xt, SHAPE(dim)), true)};
        c.node = xf_bt_finish_single(c.g, XF_OP_DEQUANTIZE_LINEAR, in[2] < 0 ? 2 : 3, in);
        c.g->nodes[c.node].attrs.axis = axis;
        infer_ok(c.g, 21);
        char what[64];
        snprintf(what, sizeof what, "DequantizeLinear per axis %d, case %d", axis, t);
        check_case(&c, true, what);
    }
}
END_TEST

/* Cast of integers to float runs as a reorder, rounding int32 beyond 2^24
 * as cpu_ref does; other casts stay on cpu_ref. */
START_TEST(int_to_float_casts)
{
    if (!xf_bt_have_cpu())
        return;
    xf_bt_seed(15);
    static const xf_dtype from[] = {XF_DT_INT32, XF_DT_INT8, XF_DT_UINT8, XF_DT_FLOAT};
    for (int t = 0; t < 4; t++) {
        qcase c = {.g = xf_graph_create("cast")};
        xf_tensor *x = from[t] == XF_DT_FLOAT ? scales(SHAPE(3, 50), 1, 1e6) : full_range(from[t], SHAPE(3, 50));
        int in = operand(&c, x, false);
        c.node = xf_bt_finish_single(c.g, XF_OP_CAST, 1, &in);
        attrs(c.g, c.node)->to = from[t] == XF_DT_FLOAT ? XF_DT_INT32 : XF_DT_FLOAT;
        infer_ok(c.g, 21);
        char what[64];
        snprintf(what, sizeof what, "Cast from %s", xf_dtype_name(from[t]));
        check_case(&c, from[t] != XF_DT_FLOAT, what);
    }
}
END_TEST

/* How dynamic_quantization_block varies the block. */
typedef struct dq_form {
    xf_dtype w;           /* the weights' type (uint8 with a nonzero zero point per column) */
    bool per_column;      /* w_scale one per column */
    bool scale_first;     /* Mul(scale, product) */
    int bias;             /* 0 none, 1 a constant [40], 2 a constant [1, 1, 40], 3 a graph input */
    bool cast_read_twice; /* the Cast's output also a graph output */
    bool product_out;     /* the int32 product also a graph output */
    bool per_row;         /* the scale one per row ([40, 1], 40 rows and columns): not MatMulIntegerToFloat's */
    bool lowered;         /* the cpu backend runs the chain as MatMulIntegerToFloat (with VNNI) */
    bool one_row;         /* x of one row and 512 columns, whose product takes no AMX kernel (few_rows_products) */
} dq_form;

/* y = Cast(MatMulInteger(DynamicQuantizeLinear(x), W)) * (x_scale *
 * w_scale) [+ bias], as onnxruntime.quantization.quantize_dynamic writes a
 * MatMul: the zero point oneDNN reads is computed per run.  Where int8
 * products are exact the chain runs as one MatMulIntegerToFloat, Add
 * included when its bias is a constant row, with cpu_ref's values; forms
 * it does not take stay as written. */
START_TEST(dynamic_quantization_block)
{
    if (!xf_bt_have_cpu())
        return;
    static const dq_form forms[] = {
        {XF_DT_INT8, .lowered = true},
        {XF_DT_UINT8, .scale_first = true, .bias = 1, .lowered = true},
        {XF_DT_INT8, .per_column = true, .bias = 2, .lowered = true},
        {XF_DT_UINT8, .per_column = true, .bias = 3, .lowered = true},
        {XF_DT_INT8, .bias = 1, .cast_read_twice = true},
        {XF_DT_INT8, .product_out = true},
        {XF_DT_INT8, .per_row = true},
        {XF_DT_INT8, .bias = 1, .lowered = true, .one_row = true},
    };
    xf_bt_seed(13);
    for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
        const dq_form *d = &forms[f];
        int64_t cols = d->one_row ? 512 : 40; /* 512: oneDNN's first choice for one row an AMX kernel */
        xf_graph *g = xf_graph_create("dq");
        int x = xf_bt_input(g, XF_DT_FLOAT, SHAPE(1, d->per_row ? 40 : d->one_row ? 1 : 13, 96));
        xf_tensor *wt = full_range(d->w, SHAPE(96, cols));
        xf_shape ss = d->per_row ? SHAPE(40, 1) : d->per_column ? SHAPE(cols) : SCALAR;
        xf_tensor *ws = scales(ss, 0.001, 0.01);
        int w = xf_graph_add_initializer(g, NULL, wt), w_scale = xf_graph_add_initializer(g, NULL, ws);
        xf_tensor_release(wt);
        xf_tensor_release(ws);
        xf_tensor *zt = d->w == XF_DT_UINT8 ? full_range(XF_DT_UINT8, SHAPE(cols)) : int_scalar(XF_DT_INT8, 0);
        int w_zp = xf_graph_add_initializer(g, NULL, zt);
        xf_tensor_release(zt);
        int dq = node(g, XF_OP_DYNAMIC_QUANTIZE_LINEAR, "dq", 1, (int[]){x}, 3);
        const int *q = g->nodes[dq].outputs;
        int mm = NODE(g, XF_OP_MATMUL_INTEGER, q[0], w, q[2], w_zp);
        int cast = NODE(g, XF_OP_CAST, out0(g, mm));
        attrs(g, cast)->to = XF_DT_FLOAT;
        int scale = NODE(g, XF_OP_MUL, q[1], w_scale);
        int y = d->scale_first ? NODE(g, XF_OP_MUL, out0(g, scale), out0(g, cast))
                               : NODE(g, XF_OP_MUL, out0(g, cast), out0(g, scale));
        if (d->bias) {
            xf_shape bs = d->bias == 2 ? SHAPE(1, 1, cols) : SHAPE(cols);
            xf_tensor *bt = d->bias == 3 ? NULL : scales(bs, -1, 1);
            int bias = bt ? xf_graph_add_initializer(g, NULL, bt) : xf_bt_input(g, XF_DT_FLOAT, bs);
            xf_tensor_release(bt);
            y = NODE(g, XF_OP_ADD, out0(g, y), bias);
        }
        xf_graph_add_output(g, out0(g, y));
        xf_graph_add_output(g, q[0]);
        if (d->cast_read_twice)
            xf_graph_add_output(g, out0(g, cast));
        if (d->product_out)
            xf_graph_add_output(g, out0(g, mm));
        infer_ok(g, 21);
        char what[80];
        snprintf(what, sizeof what, "a dynamically quantized MatMul, form %zu", f);
        xf_bt_check_graph(g, 21, "cpu", true, 0, 0, what);
        xf_session *s = NULL;
        xf_error err = {0};
        ck_assert_msg(xf_session_create(g, 21, "cpu", NULL, &s, &err) == XF_OK, "%s: %s", what, err.msg);
        int counts[XF_OP_COUNT + 1];
        xf_graph_count_ops(xf_session_graph(s), counts);
        bool lowered = d->lowered && xf_bt_have_vnni();
        ck_assert_msg(counts[XF_OP_MS_MATMUL_INTEGER_TO_FLOAT] == lowered && counts[XF_OP_MATMUL_INTEGER] == !lowered,
                      "%s: lowered %d", what, counts[XF_OP_MS_MATMUL_INTEGER_TO_FLOAT]);
        ck_assert_int_eq(counts[XF_OP_ADD], d->bias && !(lowered && d->bias != 3));
        const xf_graph *sg = xf_session_graph(s);
        for (int i = 0; i < sg->n_nodes; i++) {
            char impl[128];
            xf_session_node_impl(s, i, impl, sizeof impl);
            ck_assert_msg(!d->one_row || sg->nodes[i].op != XF_OP_MS_MATMUL_INTEGER_TO_FLOAT || !strstr(impl, "amx"),
                          "%s: %s", what, impl);
        }
        xf_session_free(s);
        xf_graph_free(g);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cpu_int8");
    TCase *tc = tcase_create("int8");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, matmul_integer_random);
    tcase_add_test(tc, matmul_integer_extremes);
    tcase_add_test(tc, few_rows_products);
    tcase_add_test(tc, uint8_weights);
    tcase_add_test(tc, matmul_integer_on_cpu_ref);
    tcase_add_test(tc, qlinear_matmul_random);
    tcase_add_test(tc, conv_integer_random);
    tcase_add_test(tc, conv_integer_weight_zero_points);
    tcase_add_test(tc, qlinear_conv_random);
    tcase_add_test(tc, qlinear_conv_chains);
    tcase_add_test(tc, qlinear_near_ties);
    tcase_add_test(tc, int_to_float_casts);
    tcase_add_test(tc, dynamic_quantization_block);
    suite_add_tcase(s, tc);
    /* the quantizing loops (AVX-512, AVX2 or plain as oneDNN's ISA is
     * held: ctest runs this case at each) */
    TCase *loops = tcase_create("loops");
    tcase_add_test(loops, quantize_linear_edges);
    tcase_add_test(loops, dequantize_linear_8bit);
    suite_add_tcase(s, loops);
    return xf_test_run_suite(s);
}
