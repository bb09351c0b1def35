/* QDQ groups on the `cpu` backend.  A DequantizeLinear of the 8-bit
 * input, one of the int8 weights (per tensor or per output channel; or
 * uint8 ones with zero points, as QUInt8 quantization writes them), one
 * of the int32 bias and a QuantizeLinear of the output run as one
 * QLinearConv where int8 products are exact (AVX-512 VNNI or AMX), and
 * MatMuls of constant int8 weights as QLinearMatMul.  The lowered group
 * must give exactly what cpu_ref's QLinearConv or QLinearMatMul gives on
 * the same integers; forms it does not take (a bias scale that is not the
 * input's times the weight's, a Relu before a zero point above the
 * type's least, a convolution output read twice) stay as written.
 * Either way the outputs are at most one step from cpu_ref's float QDQ
 * graph (oneDNN's float convolution sums in another order too), and few
 * are.  QDQ Adds and Muls run as QLinearAdd and QLinearMul, and QDQ
 * activation functions as table lookups (below). */
#include "backend_util.h"
#include "core_builders.h"
#include "xf_runtime.h"
#include "xf_test_util.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum {
    TWIST_NONE,
    TWIST_BIAS_SCALE, /* the bias's scale 1.5 times the input's times the weight's */
    TWIST_BIAS_ZP,    /* the bias with a zero point of 7 */
    TWIST_W_AXIS1,    /* the weights' scales per input channel (as many as output channels) */
    TWIST_READ_TWICE, /* the convolution's output also a graph output */
    TWIST_RELU_ZP     /* a Relu before a zero point 60 above the type's least */
} twist;

typedef struct qdq_form {
    xf_dtype act;      /* the input's and output's type */
    bool per_channel;  /* the weights' scale one per output channel */
    bool bias, relu;   /* a bias; a Relu between the Conv and the QuantizeLinear */
    bool u8_weights;   /* uint8 weights, their zero points drawn */
    int64_t group, stride, pad;
    twist twist;       /* a form the backend leaves as written */
} qdq_form;

/* Random integers in [lo, hi] of type t. */
static xf_tensor *ints(xf_dtype t, xf_shape s, int64_t lo, int64_t hi)
{
    xf_tensor *x = xf_tensor_create(t, &s);
    ck_assert_ptr_nonnull(x);
    for (int64_t i = 0; i < xf_shape_numel(&s); i++) {
        int64_t v = xf_bt_rnd(lo, hi);
        if (t == XF_DT_INT32)
            ((int32_t *)x->data)[i] = (int32_t)v;
        else if (t == XF_DT_INT8)
            ((int8_t *)x->data)[i] = (int8_t)v;
        else
            ((uint8_t *)x->data)[i] = (uint8_t)v;
    }
    return x;
}

static xf_tensor *floats(xf_shape s, const float *v)
{
    xf_tensor *x = xf_tensor_from_data(XF_DT_FLOAT, &s, v);
    ck_assert_ptr_nonnull(x);
    return x;
}

static int add_const(xf_graph *g, xf_tensor *t)
{
    int v = xf_graph_add_initializer(g, NULL, t);
    ck_assert_int_ge(v, 0);
    return v;
}

/* add_const of a tensor made for the graph alone. */
static int own_const(xf_graph *g, xf_tensor *t)
{
    int v = add_const(g, t);
    xf_tensor_release(t);
    return v;
}

/* The tensors both graphs of a form share. */
typedef struct qdq_parts {
    xf_tensor *x, *xs, *xzp, *w, *ws, *wzp, *b, *bs, *ys, *yzp;
} qdq_parts;

static qdq_parts make_parts(const qdq_form *f, int64_t c, int64_t m)
{
    qdq_parts p;
    bool s8 = f->act == XF_DT_INT8;
    xf_dtype wt = f->u8_weights ? XF_DT_UINT8 : XF_DT_INT8;
    p.x = ints(f->act, SHAPE(1, c, 9, 11), s8 ? -128 : 0, s8 ? 127 : 255);
    p.xs = floats(SCALAR, (float[]){0.02f + (float)xf_bt_rnd(0, 100) / 4000.0f});
    p.xzp = ints(f->act, SCALAR, s8 ? -20 : 100, s8 ? 20 : 140);
    p.w = ints(wt, SHAPE(m, c / f->group, 3, 3), wt == XF_DT_INT8 ? -127 : 0, wt == XF_DT_INT8 ? 127 : 255);
    int64_t nws = f->per_channel ? m : 1;
    float ws[64], bs[64];
    for (int64_t i = 0; i < nws; i++)
        ws[i] = 0.001f + (float)xf_bt_rnd(0, 100) / 20000.0f;
    p.ws = floats(f->per_channel ? SHAPE(m) : SCALAR, ws);
    p.wzp = ints(wt, f->per_channel ? SHAPE(m) : SCALAR, f->u8_weights ? 100 : 0, f->u8_weights ? 150 : 0);
    for (int64_t i = 0; i < m; i++)
        bs[i] = ((const float *)p.xs->data)[0] * ws[f->per_channel ? i : 0] * (f->twist == TWIST_BIAS_SCALE ? 1.5f : 1);
    p.b = ints(XF_DT_INT32, SHAPE(m), -20000, 20000);
    p.bs = floats(SHAPE(m), bs);
    /* an output scale that spreads the sums over the type */
    p.ys = floats(SCALAR, (float[]){((const float *)p.xs->data)[0] * ws[0] * 600.0f});
    int64_t least = s8 ? -128 : 0, zp = f->relu && f->twist != TWIST_RELU_ZP ? least : least + 60;
    p.yzp = ints(f->act, SCALAR, zp, zp);
    return p;
}

static void free_parts(qdq_parts *p)
{
    xf_tensor *all[] = {p->x, p->xs, p->xzp, p->w, p->ws, p->wzp, p->b, p->bs, p->ys, p->yzp};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        xf_tensor_release(all[i]);
}

static void conv_attrs(xf_attrs *a, const qdq_form *f)
{
    a->group = f->group;
    a->n_spatial = 2;
    a->kernel[0] = a->kernel[1] = 3;
    a->strides[0] = a->strides[1] = f->stride;
    a->dilations[0] = a->dilations[1] = 1;
    for (int k = 0; k < 4; k++)
        a->pads[k] = f->pad;
}

static int dq(xf_graph *g, int q, int scale, int zp)
{
    int n = node(g, XF_OP_DEQUANTIZE_LINEAR, NULL, 3, (int[]){q, scale, zp}, 1);
    attrs(g, n)->axis = 0; /* the weights' and bias's output channels */
    return out0(g, n);
}

/* The QDQ graph of form f (1 when it has the extra reader of the
 * convolution's output, as a second graph output). */
static xf_graph *qdq_graph(const qdq_form *f, const qdq_parts *p)
{
    xf_graph *g = xf_graph_create("qdq");
    int x = xf_bt_input(g, f->act, p->x->shape);
    int xd = dq(g, x, add_const(g, p->xs), add_const(g, p->xzp));
    int wd = dq(g, add_const(g, p->w), add_const(g, p->ws), add_const(g, p->wzp));
    if (f->twist == TWIST_W_AXIS1)
        attrs(g, g->values[wd].producer)->axis = 1;
    xf_tensor *bz = f->twist == TWIST_BIAS_ZP ? ints(XF_DT_INT32, p->b->shape, 7, 7) : NULL;
    int bzp = bz ? add_const(g, bz) : -1;
    xf_tensor_release(bz);
    int in[3] = {xd, wd, f->bias ? dq(g, add_const(g, p->b), add_const(g, p->bs), bzp) : -1};
    int conv = node(g, XF_OP_CONV, "conv", f->bias ? 3 : 2, in, 1);
    conv_attrs(attrs(g, conv), f);
    int y = out0(g, conv);
    if (f->relu)
        y = out0(g, node(g, XF_OP_RELU, "relu", 1, &y, 1));
    int q = node(g, XF_OP_QUANTIZE_LINEAR, "q", 3, (int[]){y, add_const(g, p->ys), add_const(g, p->yzp)}, 1);
    xf_graph_add_output(g, out0(g, q));
    if (f->twist == TWIST_READ_TWICE)
        xf_graph_add_output(g, out0(g, conv));
    infer_ok(g, 21);
    return g;
}

/* The same convolution as one QLinearConv over the same integers. */
static xf_graph *qlinear_graph(const qdq_form *f, const qdq_parts *p)
{
    xf_graph *g = xf_graph_create("qlinear");
    int x = xf_bt_input(g, f->act, p->x->shape);
    int in[9] = {x,
                 add_const(g, p->xs),
                 add_const(g, p->xzp),
                 add_const(g, p->w),
                 add_const(g, p->ws),
                 add_const(g, p->wzp),
                 add_const(g, p->ys),
                 add_const(g, p->yzp),
                 f->bias ? add_const(g, p->b) : -1};
    int conv = node(g, XF_OP_QLINEAR_CONV, "qconv", f->bias ? 9 : 8, in, 1);
    conv_attrs(attrs(g, conv), f);
    xf_graph_add_output(g, out0(g, conv));
    infer_ok(g, 21);
    return g;
}

/* Output 0 of g on backend for its inputs feeds, the session run node by
 * node when dynamic; in *counts the ops of the session's graph. */
static xf_tensor *run_mode(const xf_graph *g, const char *backend, xf_tensor *const *feeds, int *counts,
                           const char *what, bool dynamic)
{
    xf_session *s = NULL;
    xf_error err = {0};
    xf_tensor *out[2] = {NULL, NULL};
    xf_session_options opt = {.force_dynamic = dynamic};
    ck_assert_msg(xf_session_create(g, 21, backend, &opt, &s, &err) == XF_OK, "%s: %s: %s", what, backend, err.msg);
    ck_assert_msg(xf_session_run(s, feeds, out, &err) == XF_OK, "%s: %s: %s", what, backend, err.msg);
    if (counts)
        xf_graph_count_ops(xf_session_graph(s), counts);
    xf_session_free(s);
    xf_tensor_release(out[1]);
    return out[0];
}

static xf_tensor *run(const xf_graph *g, const char *backend, xf_tensor *x, int *counts, const char *what)
{
    return run_mode(g, backend, &x, counts, what, false);
}

/* The largest difference of two 8-bit tensors; in *differ how many
 * elements differ. */
static int64_t max_diff(const xf_tensor *a, const xf_tensor *b, int64_t *differ)
{
    ck_assert_int_eq(xf_tensor_numel(a), xf_tensor_numel(b));
    int64_t most = 0;
    *differ = 0;
    for (int64_t i = 0; i < xf_tensor_numel(a); i++) {
        int64_t u = a->dtype == XF_DT_INT8 ? ((const int8_t *)a->data)[i] : ((const uint8_t *)a->data)[i];
        int64_t v = b->dtype == XF_DT_INT8 ? ((const int8_t *)b->data)[i] : ((const uint8_t *)b->data)[i];
        int64_t d = u > v ? u - v : v - u;
        most = d > most ? d : most;
        *differ += d != 0;
    }
    return most;
}

/* got is within tol steps of cpu_ref's want (mode: "static", "dynamic"
 * or "" when the test runs one). */
static void expect_near_ref(const xf_tensor *got, const xf_tensor *want, int64_t tol, const char *what,
                            const char *mode)
{
    int64_t differ;
    ck_assert_msg(max_diff(got, want, &differ) <= tol, "%s%s%s: %lld outputs off cpu_ref", what, *mode ? " " : "",
                  mode, (long long)differ);
}

START_TEST(qdq_convolutions)
{
    if (!xf_bt_have_cpu())
        return;
    static const qdq_form forms[] = {
        {XF_DT_UINT8, .per_channel = true, .bias = true, .group = 1, .stride = 1, .pad = 1},
        {XF_DT_INT8, .per_channel = true, .bias = true, .relu = true, .group = 2, .stride = 2, .pad = 0},
        {XF_DT_UINT8, .relu = true, .group = 1, .stride = 1, .pad = 0},
        {XF_DT_INT8, .bias = true, .group = 4, .stride = 1, .pad = 1},
        {XF_DT_UINT8, .per_channel = true, .bias = true, .group = 1, .stride = 1, .pad = 1, .twist = TWIST_BIAS_SCALE},
        {XF_DT_UINT8, .bias = true, .u8_weights = true, .group = 1, .stride = 1, .pad = 1},
        {XF_DT_INT8, .per_channel = true, .bias = true, .u8_weights = true, .group = 2, .stride = 2, .pad = 1},
        {XF_DT_INT8, .per_channel = true, .bias = true, .group = 1, .stride = 1, .pad = 1, .twist = TWIST_BIAS_ZP},
        {XF_DT_UINT8, .per_channel = true, .group = 1, .stride = 1, .pad = 0, .twist = TWIST_W_AXIS1},
        {XF_DT_INT8, .per_channel = true, .group = 1, .stride = 1, .pad = 1, .twist = TWIST_READ_TWICE},
        {XF_DT_UINT8, .per_channel = true, .relu = true, .group = 1, .stride = 1, .pad = 1, .twist = TWIST_RELU_ZP},
    };
    xf_bt_seed(31);
    int64_t differ_all = 0, compared = 0;
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        const qdq_form *f = &forms[i];
        char what[64];
        snprintf(what, sizeof what, "QDQ convolution form %zu", i);
        qdq_parts p = make_parts(f, f->twist == TWIST_W_AXIS1 ? 16 : 8, 16);
        xf_graph *g = qdq_graph(f, &p);
        int counts[XF_OP_COUNT + 1], ref_counts[XF_OP_COUNT + 1];
        xf_tensor *got = run(g, "cpu", p.x, counts, what), *want = run(g, "cpu_ref", p.x, ref_counts, what);
        bool lowered = xf_bt_have_vnni() && f->twist == TWIST_NONE;
        ck_assert_msg(counts[XF_OP_QLINEAR_CONV] == lowered && counts[XF_OP_CONV] == !lowered, "%s: lowered %d", what,
                      counts[XF_OP_QLINEAR_CONV]);
        ck_assert_int_eq(ref_counts[XF_OP_QLINEAR_CONV], 0);
        /* every DequantizeLinear went with the group it fed */
        ck_assert_int_eq(counts[XF_OP_DEQUANTIZE_LINEAR], lowered ? 0 : ref_counts[XF_OP_DEQUANTIZE_LINEAR]);
        int64_t differ;
        ck_assert_msg(max_diff(got, want, &differ) <= 1, "%s: more than one step from the float graph", what);
        differ_all += differ;
        compared += xf_tensor_numel(got);
        if (lowered) {
            xf_graph *twin = qlinear_graph(f, &p);
            xf_tensor *exact = run(twin, "cpu_ref", p.x, NULL, what);
            ck_assert_msg(max_diff(got, exact, &differ) == 0, "%s: %lld outputs off QLinearConv", what,
                          (long long)differ);
            xf_tensor_release(exact);
            xf_graph_free(twin);
        }
        xf_tensor_release(got);
        xf_tensor_release(want);
        xf_graph_free(g);
        free_parts(&p);
    }
    printf("QDQ convolutions: %lld of %lld outputs one step off the float graph\n", (long long)differ_all,
           (long long)compared);
    /* only values near a rounding boundary may land apart */
    ck_assert_int_le(differ_all * 100, compared);
}
END_TEST

/* DQ(x) x DQ(W) -> QuantizeLinear with W constant int8 [K, N], scales
 * per tensor or per column, or W a computed uint8 tensor (attention's
 * operands), against QLinearMatMul on cpu_ref; W's scales per row (axis
 * 0) stay float. */
START_TEST(qdq_matmuls)
{
    if (!xf_bt_have_cpu())
        return;
    static const struct {
        xf_dtype t;
        int w_axis;    /* the weights' scale: -1 per tensor, else per index of that dim */
        bool computed; /* W a graph input (uint8, as attention's operands) */
    } forms[] = {{XF_DT_UINT8, -1}, {XF_DT_INT8, 1}, {XF_DT_UINT8, 1}, {XF_DT_UINT8, 0}, {XF_DT_UINT8, -1, true}};
    xf_bt_seed(41);
    int64_t k = 48, n = 48; /* square: scales per row and per column have one length */
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        char what[48];
        snprintf(what, sizeof what, "QDQ MatMul form %zu", i);
        bool s8 = forms[i].t == XF_DT_INT8;
        xf_tensor *x = ints(forms[i].t, SHAPE(2, 7, k), s8 ? -128 : 0, s8 ? 127 : 255);
        xf_tensor *w = forms[i].computed ? ints(XF_DT_UINT8, SHAPE(k, n), 0, 255)
                                         : ints(XF_DT_INT8, SHAPE(k, n), -127, 127);
        float ws[48];
        for (int j = 0; j < 48; j++)
            ws[j] = 0.002f + (float)xf_bt_rnd(0, 100) / 30000.0f;
        xf_tensor *part[6] = {floats(SCALAR, (float[]){0.03f}), ints(forms[i].t, SCALAR, s8 ? -9 : 120, s8 ? 9 : 136),
                              floats(forms[i].w_axis < 0 ? SCALAR : SHAPE(n), ws),
                              ints(w->dtype, forms[i].w_axis < 0 ? SCALAR : SHAPE(n), 0, forms[i].computed ? 255 : 0),
                              floats(SCALAR, (float[]){0.03f * ws[0] * 100}), ints(forms[i].t, SCALAR, 3, 3)};
        xf_graph *g[2] = {xf_graph_create("qdq"), xf_graph_create("qlinear")};
        int y[2];
        for (int v = 0; v < 2; v++) {
            int xv = xf_bt_input(g[v], forms[i].t, x->shape), c[6];
            int wv = forms[i].computed ? xf_bt_input(g[v], XF_DT_UINT8, w->shape) : add_const(g[v], w);
            for (int j = 0; j < 6; j++)
                c[j] = add_const(g[v], part[j]);
            if (v == 0) {
                int a = dq(g[v], xv, c[0], c[1]), b = dq(g[v], wv, c[2], c[3]);
                attrs(g[v], g[v]->values[b].producer)->axis = forms[i].w_axis < 0 ? 1 : forms[i].w_axis;
                int mm = node(g[v], XF_OP_MATMUL, "mm", 2, (int[]){a, b}, 1);
                y[v] = node(g[v], XF_OP_QUANTIZE_LINEAR, "q", 3, (int[]){out0(g[v], mm), c[4], c[5]}, 1);
            } else {
                int in[8] = {xv, c[0], c[1], wv, c[2], c[3], c[4], c[5]};
                y[v] = node(g[v], XF_OP_QLINEAR_MATMUL, "qmm", 8, in, 1);
            }
            xf_graph_add_output(g[v], out0(g[v], y[v]));
            infer_ok(g[v], 21);
        }
        xf_session *s[3] = {NULL, NULL, NULL};
        xf_tensor *feeds[2] = {x, w}, *got[3] = {NULL, NULL, NULL};
        xf_error err = {0};
        const char *be[3] = {"cpu", "cpu_ref", "cpu_ref"};
        for (int r = 0; r < 3; r++) {
            ck_assert_msg(xf_session_create(g[r == 2], 21, be[r], NULL, &s[r], &err) == XF_OK, "%s: %s", what, err.msg);
            ck_assert_msg(xf_session_run(s[r], feeds, &got[r], &err) == XF_OK, "%s: %s", what, err.msg);
        }
        int counts[XF_OP_COUNT + 1];
        xf_graph_count_ops(xf_session_graph(s[0]), counts);
        bool lowered = xf_bt_have_vnni() && forms[i].w_axis != 0;
        ck_assert_msg(counts[XF_OP_QLINEAR_MATMUL] == lowered && counts[XF_OP_MATMUL] == !lowered, "%s: lowered %d",
                      what, counts[XF_OP_QLINEAR_MATMUL]);
        int64_t differ;
        ck_assert_msg(max_diff(got[0], got[1], &differ) <= 1, "%s: more than one step off the float graph", what);
        if (lowered)
            ck_assert_msg(max_diff(got[0], got[2], &differ) == 0, "%s: %lld outputs off QLinearMatMul", what,
                          (long long)differ);
        for (int r = 0; r < 3; r++) {
            xf_tensor_release(got[r]);
            xf_session_free(s[r]);
        }
        for (int j = 0; j < 6; j++)
            xf_tensor_release(part[j]);
        xf_tensor_release(x);
        xf_tensor_release(w);
        xf_graph_free(g[0]);
        xf_graph_free(g[1]);
    }
}
END_TEST

/* QuantizeLinear(DQ(a) + DQ(b)) and of DQ(a) * DQ(b) (a residual
 * connection, a gate) run as QLinearAdd and QLinearMul: exactly cpu_ref's
 * QLinearAdd or QLinearMul of the same integers, at most one step from the
 * float graph; B whole, a row, or one per channel.  Operands of two
 * types, or a DequantizeLinear per channel, stay as written. */
START_TEST(qdq_binaries)
{
    if (!xf_bt_have_cpu())
        return;
    static const struct {
        xf_op op;
        xf_dtype a, b;
        int b_form; /* 0 whole, 1 a row of the last dim, 2 one per channel; 3 whole, its DQ per channel */
        bool swap;  /* b the op's first operand */
        bool big;   /* over 8192 outputs: parts on threads, their bounds inside a span */
    } forms[] = {{XF_OP_ADD, XF_DT_UINT8, XF_DT_UINT8, 0}, {XF_OP_ADD, XF_DT_INT8, XF_DT_INT8, 1},
                 {XF_OP_MUL, XF_DT_UINT8, XF_DT_UINT8, 2}, {XF_OP_MUL, XF_DT_INT8, XF_DT_INT8, 0},
                 {XF_OP_ADD, XF_DT_UINT8, XF_DT_INT8, 0},  {XF_OP_ADD, XF_DT_UINT8, XF_DT_UINT8, 3},
                 {XF_OP_ADD, XF_DT_INT8, XF_DT_INT8, 2, true}, {XF_OP_MUL, XF_DT_INT8, XF_DT_INT8, 2, true},
                 {XF_OP_ADD, XF_DT_UINT8, XF_DT_UINT8, 1, true},
                 {XF_OP_MUL, XF_DT_UINT8, XF_DT_UINT8, 2, false, true},
                 {XF_OP_ADD, XF_DT_INT8, XF_DT_INT8, 1, true, true},
                 {XF_OP_ADD, XF_DT_UINT8, XF_DT_UINT8, 0, false, true},
                 {XF_OP_MUL, XF_DT_INT8, XF_DT_INT8, 1, false, true}};
    xf_bt_seed(47);
    int64_t differ_all = 0, compared = 0;
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        char what[48];
        snprintf(what, sizeof what, "QDQ %s form %zu", xf_op_name(forms[i].op), i);
        xf_shape as = forms[i].big ? SHAPE(1, 6, 50, 97) : SHAPE(1, 6, 5, 19);
        xf_shape bs = forms[i].b_form == 1 ? SHAPE(as.dims[3]) : forms[i].b_form == 2 ? SHAPE(1, 6, 1, 1) : as;
        bool sa = forms[i].a == XF_DT_INT8, sb = forms[i].b == XF_DT_INT8, mul = forms[i].op == XF_OP_MUL;
        xf_tensor *a = ints(forms[i].a, as, sa ? -128 : 0, sa ? 127 : 255);
        xf_tensor *b = ints(forms[i].b, bs, sb ? -128 : 0, sb ? 127 : 255);
        float bsc[6] = {0.02f, 0.03f, 0.015f, 0.04f, 0.025f, 0.05f};
        xf_tensor *part[6] = {floats(SCALAR, (float[]){0.031f}), ints(forms[i].a, SCALAR, sa ? -5 : 120, sa ? 5 : 136),
                              floats(forms[i].b_form == 3 ? SHAPE(6) : SCALAR, bsc),
                              ints(forms[i].b, forms[i].b_form == 3 ? SHAPE(6) : SCALAR, sb ? -5 : 120, sb ? 5 : 136),
                              floats(SCALAR, (float[]){mul ? 0.01f : 0.05f}),
                              ints(forms[i].a, SCALAR, sa ? 2 : 130, sa ? 2 : 130)};
        /* the twin QLinearAdd or QLinearMul where its operands' types allow one */
        bool twin = forms[i].a == forms[i].b && forms[i].b_form != 3;
        xf_graph *g[2] = {xf_graph_create("qdq"), twin ? xf_graph_create("qlinear") : NULL};
        for (int v = 0; v < 1 + twin; v++) {
            int av = xf_bt_input(g[v], forms[i].a, as), bv = add_const(g[v], b), c[6];
            for (int j = 0; j < 6; j++)
                c[j] = add_const(g[v], part[j]);
            int y;
            if (v == 0) {
                int da = dq(g[v], av, c[0], c[1]), db = dq(g[v], bv, c[2], c[3]);
                attrs(g[v], g[v]->values[db].producer)->axis = 1;
                int op = node(g[v], forms[i].op, "op", 2, forms[i].swap ? (int[]){db, da} : (int[]){da, db}, 1);
                y = node(g[v], XF_OP_QUANTIZE_LINEAR, "q", 3, (int[]){out0(g[v], op), c[4], c[5]}, 1);
            } else {
                int in[8] = {av, c[0], c[1], bv, c[2], c[3], c[4], c[5]};
                if (forms[i].swap)
                    memcpy(in, (int[]){bv, c[2], c[3], av, c[0], c[1]}, 6 * sizeof(int));
                y = node(g[v], mul ? XF_OP_MS_QLINEAR_MUL : XF_OP_MS_QLINEAR_ADD, "qop", 8, in, 1);
            }
            xf_graph_add_output(g[v], out0(g[v], y));
            infer_ok(g[v], 21);
        }
        bool lowered = twin && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
        int counts[XF_OP_COUNT + 1];
        xf_tensor *got = run(g[0], "cpu", a, counts, what), *want = run(g[0], "cpu_ref", a, NULL, what);
        xf_op qop = mul ? XF_OP_MS_QLINEAR_MUL : XF_OP_MS_QLINEAR_ADD;
        ck_assert_msg(counts[qop] == lowered && counts[forms[i].op] == !lowered, "%s: lowered %d", what, counts[qop]);
        int64_t differ;
        ck_assert_msg(max_diff(got, want, &differ) <= 1, "%s: more than one step off the float graph", what);
        differ_all += differ;
        compared += xf_tensor_numel(got);
        if (lowered) {
            xf_tensor *exact = run(g[1], "cpu_ref", a, NULL, what);
            ck_assert_msg(max_diff(got, exact, &differ) == 0, "%s: %lld outputs off cpu_ref's %s", what,
                          (long long)differ, xf_op_name(qop));
            xf_tensor_release(exact);
        }
        xf_tensor *all[] = {a, b, got, want, part[0], part[1], part[2], part[3], part[4], part[5]};
        for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
            xf_tensor_release(all[k]);
        xf_graph_free(g[0]);
        xf_graph_free(g[1]);
    }
    printf("QDQ Add and Mul: %lld of %lld outputs one step off the float graph\n", (long long)differ_all,
           (long long)compared);
    ck_assert_int_le(differ_all * 100, compared);
}
END_TEST

/* Ops that only move or select values between DequantizeLinears and a
 * QuantizeLinear (MaxPool, Concat, Transpose, Reshape, Slice, Gather) run on the codes:
 * exactly cpu_ref's float graph.  Where an input's codes are not the
 * output's (another scale or zero point, another type, a scale so large
 * that the dequantized codes overflow) they go through a table into the
 * output's codes first, which a MaxPool takes only when every scale is
 * positive (the table then keeps the codes' order); a negative scale
 * keeps MaxPool as written. */
START_TEST(qdq_transparent_ops)
{
    if (!xf_bt_have_cpu())
        return;
    static const struct {
        xf_op op;
        xf_dtype t;
        float scale, y_scale;
        bool lowered;
        int tables;        /* lookups into the output's codes */
        float other_scale; /* a Concat's second input's, when not `scale` */
        xf_dtype y_t;      /* the output's type, when not t */
    } forms[] = {{XF_OP_MAX_POOL, XF_DT_UINT8, 0.05f, 0.05f, true},
                 {XF_OP_CONCAT, XF_DT_INT8, 0.02f, 0.02f, true},
                 {XF_OP_TRANSPOSE, XF_DT_UINT8, 0.3f, 0.3f, true},
                 {XF_OP_RESHAPE, XF_DT_INT8, 0.01f, 0.01f, true},
                 {XF_OP_MAX_POOL, XF_DT_UINT8, 0.05f, 0.06f, true, 1},
                 {XF_OP_CONCAT, XF_DT_UINT8, 1e38f, 1e38f, true, 2},
                 {XF_OP_MAX_POOL, XF_DT_INT8, -0.05f, -0.05f, false},
                 {XF_OP_CONCAT, XF_DT_UINT8, 0.05f, 0.05f, true, 1, 0.07f},
                 {XF_OP_TRANSPOSE, XF_DT_INT8, -0.3f, -0.3f, true},
                 {XF_OP_RESHAPE, XF_DT_INT8, 0.01f, 0.01f, true, 1, 0, XF_DT_UINT8},
                 {XF_OP_MAX_POOL, XF_DT_UINT8, 0.05f, -0.05f, false},
                 {XF_OP_MAX_POOL, XF_DT_UINT8, -0.05f, 0.05f, false},
                 {XF_OP_SLICE, XF_DT_UINT8, 0.05f, 0.04f, true, 1},
                 {XF_OP_GATHER, XF_DT_INT8, 0.02f, 0.02f, true}};
    xf_bt_seed(53);
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        char what[48];
        snprintf(what, sizeof what, "QDQ %s form %zu", xf_op_name(forms[i].op), i);
        bool s8 = forms[i].t == XF_DT_INT8;
        xf_dtype yt = forms[i].y_t ? forms[i].y_t : forms[i].t;
        xf_shape xs = SHAPE(1, 6, 9, 11);
        xf_tensor *x = ints(forms[i].t, xs, s8 ? -128 : 0, s8 ? 127 : 255);
        xf_tensor *other = ints(forms[i].t, xs, s8 ? -128 : 0, s8 ? 127 : 255);
        float other_scale = forms[i].other_scale ? forms[i].other_scale : forms[i].scale;
        xf_tensor *part[5] = {floats(SCALAR, &forms[i].scale), ints(forms[i].t, SCALAR, s8 ? 3 : 125, s8 ? 3 : 125),
                              floats(SCALAR, &forms[i].y_scale), floats(SCALAR, &other_scale), NULL};
        part[4] = yt == forms[i].t ? xf_tensor_retain(part[1]) : ints(yt, SCALAR, 131, 131);
        xf_graph *g = xf_graph_create("qdq");
        int xv = xf_bt_input(g, forms[i].t, xs), sc = add_const(g, part[0]), zp = add_const(g, part[1]);
        int d = dq(g, xv, sc, zp), op;
        switch (forms[i].op) {
        case XF_OP_MAX_POOL:
            op = node(g, XF_OP_MAX_POOL, "op", 1, &d, 1);
            attrs(g, op)->n_spatial = 2;
            attrs(g, op)->kernel[0] = attrs(g, op)->kernel[1] = 3;
            attrs(g, op)->strides[0] = attrs(g, op)->strides[1] = 2;
            break;
        case XF_OP_CONCAT:
            op = node(g, XF_OP_CONCAT, "op", 2, (int[]){d, dq(g, add_const(g, other), add_const(g, part[3]), zp)}, 1);
            attrs(g, op)->axis = 1;
            break;
        case XF_OP_TRANSPOSE:
            op = node(g, XF_OP_TRANSPOSE, "op", 1, &d, 1);
            attrs(g, op)->n_perm = 4;
            memcpy(attrs(g, op)->perm, (int64_t[]){0, 2, 3, 1}, 4 * sizeof(int64_t));
            break;
        case XF_OP_SLICE: /* columns 1 to 4 */
            op = node(g, XF_OP_SLICE, "op", 4, (int[]){d, CONST_I64(g, 1), CONST_I64(g, 5), CONST_I64(g, 3)}, 1);
            break;
        case XF_OP_GATHER: /* rows 2, 8 (-1) and 0 of each map */
            op = node(g, XF_OP_GATHER, "op", 2, (int[]){d, CONST_I64(g, 2, -1, 0)}, 1);
            attrs(g, op)->axis = 2;
            break;
        default:
            op = node(g, XF_OP_RESHAPE, "op", 2, (int[]){d, CONST_I64(g, 6, 99)}, 1);
            break;
        }
        int q = node(g, XF_OP_QUANTIZE_LINEAR, "q", 3,
                     (int[]){out0(g, op), add_const(g, part[2]), add_const(g, part[4])}, 1);
        xf_graph_add_output(g, out0(g, q));
        infer_ok(g, 21);
        int counts[XF_OP_COUNT + 1];
        xf_tensor *got = run(g, "cpu", x, counts, what), *want = run(g, "cpu_ref", x, NULL, what);
        int dqs = forms[i].lowered ? 0 : forms[i].op == XF_OP_CONCAT ? 2 : 1;
        ck_assert_msg(counts[XF_OP_QUANTIZE_LINEAR] == !forms[i].lowered && counts[XF_OP_DEQUANTIZE_LINEAR] == dqs &&
                          counts[XF_OP_GATHER] == forms[i].tables + (forms[i].op == XF_OP_GATHER),
                      "%s: %d QuantizeLinears, %d Gathers", what, counts[XF_OP_QUANTIZE_LINEAR], counts[XF_OP_GATHER]);
        expect_near_ref(got, want, 0, what, "");
        xf_tensor *all[] = {x, other, part[0], part[1], part[2], part[3], part[4], got, want};
        for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
            xf_tensor_release(all[k]);
        xf_graph_free(g);
    }
}
END_TEST

/* DequantizeLinear -> f -> QuantizeLinear of one-input elementwise
 * functions runs as a Gather from a table of 256 codes that cpu_ref
 * fills: exactly the float graph's values, for uint8 and int8 codes (the
 * negative ones index the table from its end).  A chain whose function's
 * output is read twice, or whose DequantizeLinear is per channel, stays
 * as written (at most one step from cpu_ref's float graph there). */
START_TEST(qdq_activation_tables)
{
    if (!xf_bt_have_cpu())
        return;
    static const struct {
        xf_op op;
        xf_dtype t;
        bool read_twice, per_channel;
    } forms[] = {
        {XF_OP_ERF, XF_DT_UINT8},   {XF_OP_ERF, XF_DT_INT8},          {XF_OP_SIGMOID, XF_DT_INT8},
        {XF_OP_TANH, XF_DT_UINT8},  {XF_OP_LEAKY_RELU, XF_DT_INT8},   {XF_OP_HARD_SIGMOID, XF_DT_UINT8},
        {XF_OP_EXP, XF_DT_UINT8},   {XF_OP_TANH, XF_DT_INT8, .read_twice = true},
        {XF_OP_SIGMOID, XF_DT_UINT8, .per_channel = true},
    };
    xf_bt_seed(37);
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        char what[64];
        snprintf(what, sizeof what, "QDQ %s form %zu", xf_op_name(forms[i].op), i);
        bool s8 = forms[i].t == XF_DT_INT8;
        xf_tensor *x = ints(forms[i].t, SHAPE(3, 5, 37), s8 ? -128 : 0, s8 ? 127 : 255);
        xf_graph *g = xf_graph_create("act");
        int xv = xf_bt_input(g, forms[i].t, x->shape);
        float xs[5] = {0.031f, 0.02f, 0.05f, 0.011f, 0.07f};
        xf_tensor *scale = floats(forms[i].per_channel ? SHAPE(5) : SCALAR, xs);
        xf_tensor *zp = ints(forms[i].t, forms[i].per_channel ? SHAPE(5) : SCALAR, s8 ? -3 : 125, s8 ? 3 : 131);
        int64_t y_zp = s8 ? -100 : 20;
        xf_tensor *ys = floats(SCALAR, (float[]){0.0079f}), *yzp = ints(forms[i].t, SCALAR, y_zp, y_zp);
        int d = node(g, XF_OP_DEQUANTIZE_LINEAR, "dq", 3, (int[]){xv, add_const(g, scale), add_const(g, zp)}, 1);
        attrs(g, d)->axis = 1;
        int f = node(g, forms[i].op, "f", 1, (int[]){out0(g, d)}, 1);
        if (forms[i].op == XF_OP_LEAKY_RELU)
            attrs(g, f)->alpha = 0.3f;
        int q = node(g, XF_OP_QUANTIZE_LINEAR, "q", 3, (int[]){out0(g, f), add_const(g, ys), add_const(g, yzp)}, 1);
        xf_graph_add_output(g, out0(g, q));
        if (forms[i].read_twice)
            xf_graph_add_output(g, out0(g, f));
        infer_ok(g, 21);
        int counts[XF_OP_COUNT + 1];
        xf_tensor *got = run(g, "cpu", x, counts, what), *want = run(g, "cpu_ref", x, NULL, what);
        bool table = !forms[i].read_twice && !forms[i].per_channel;
        ck_assert_msg(counts[XF_OP_GATHER] == table && counts[forms[i].op] == !table &&
                          counts[XF_OP_DEQUANTIZE_LINEAR] == !table && counts[XF_OP_QUANTIZE_LINEAR] == !table,
                      "%s: %d Gathers", what, counts[XF_OP_GATHER]);
        expect_near_ref(got, want, table ? 0 : 1, what, "");
        xf_tensor *all[] = {x, scale, zp, ys, yzp, got, want};
        for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
            xf_tensor_release(all[k]);
        xf_graph_free(g);
    }
}
END_TEST

/* The parts both table-chain tests share: codes x of type t (the input
 * of g), their scale and zero point, an output scale and zero point of t,
 * and the other 8-bit type. */
typedef struct chain_case {
    xf_dtype t, mid;
    xf_tensor *x;
    xf_graph *g;
    int xv, sc, zp, ysc, yzp;
} chain_case;

static chain_case chain_case_make(bool s8)
{
    chain_case k = {.t = s8 ? XF_DT_INT8 : XF_DT_UINT8, .mid = s8 ? XF_DT_UINT8 : XF_DT_INT8};
    xf_shape xs = SHAPE(3, 5, 37);
    k.x = ints(k.t, xs, s8 ? -128 : 0, s8 ? 127 : 255);
    k.g = xf_graph_create("chain");
    k.xv = xf_bt_input(k.g, k.t, xs);
    k.sc = own_const(k.g, floats(SCALAR, (float[]){0.023f}));
    k.zp = own_const(k.g, ints(k.t, SCALAR, 3, 3));
    k.ysc = own_const(k.g, floats(SCALAR, (float[]){0.0093f}));
    k.yzp = own_const(k.g, ints(k.t, SCALAR, -7, -7));
    return k;
}

/* Steps whose function takes a constant of one element as its other
 * input (GELU's Mul by 1/sqrt(2), Add of 1 and Mul by 0.5; attention's
 * scaling) are functions of the codes too, and a chain of steps, each
 * QuantizeLinear read by the next DequantizeLinear alone, is one table:
 * the steps' tables composed, so the float graph's values exactly.  The
 * backend runs the Cast and the Gather as one lookup of the codes (a
 * session run node by node, as a Cast and cpu_ref's Gather).  A chain
 * whose middle codes are also a graph output splits there; a constant of
 * more elements, or of more dims than the codes (which would broadcast
 * them), keeps the step as written. */
START_TEST(qdq_table_chains)
{
    if (!xf_bt_have_cpu())
        return;
    enum { MUL_C, C_DIV, ADD_DQ_C, POW_C, GELU, GELU_SPLIT, MUL_ROW, MUL_RANK4, N_FORMS };
    xf_bt_seed(59);
    for (int form = 0; form < 2 * N_FORMS; form++) {
        int f = form % N_FORMS;
        chain_case k = chain_case_make(form >= N_FORMS);
        xf_dtype t = k.t, mid = k.mid;
        xf_graph *g = k.g;
        xf_tensor *x = k.x;
        int xv = k.xv, sc = k.sc, zp = k.zp, ysc = k.ysc, yzp = k.yzp;
        char what[48];
        snprintf(what, sizeof what, "QDQ table chain form %d", form);
        int mzp = own_const(g, ints(mid, SCALAR, 5, 5)), v = dq(g, xv, sc, zp), op = -1;
        int c = own_const(g, floats(f == C_DIV ? SHAPE(1, 1, 1) : f == MUL_ROW ? SHAPE(37) : f == MUL_RANK4
                                                                                    ? SHAPE(1, 1, 1, 1)
                                                                                    : SCALAR,
                                    (float[]){0.7071f, 1.5f, 0.25f, 2.0f, 3.0f, 0.5f, 0.125f, 1.0f, 0.75f, 1.25f,
                                              0.6f, 0.9f, 1.1f, 0.3f, 0.2f, 1.9f, 0.1f, 0.4f, 0.8f, 1.2f, 1.3f,
                                              1.4f, 1.6f, 1.7f, 1.8f, 2.1f, 2.2f, 2.3f, 2.4f, 2.5f, 2.6f, 2.7f,
                                              2.8f, 2.9f, 3.1f, 3.2f, 3.3f}));
        int n_steps = 1, n_tables = 1;
        switch (f) {
        case MUL_C:
        case MUL_ROW:
        case MUL_RANK4: op = node(g, XF_OP_MUL, "mul", 2, (int[]){v, c}, 1); break;
        case C_DIV: op = node(g, XF_OP_DIV, "div", 2, (int[]){c, v}, 1); break;
        case POW_C: op = node(g, XF_OP_POW, "pow", 2, (int[]){v, c}, 1); break;
        case ADD_DQ_C: {
            int one = dq(g, own_const(g, ints(t, SCALAR, 40, 40)), sc, zp);
            op = node(g, XF_OP_ADD, "add", 2, (int[]){one, v}, 1);
            break;
        }
        default: { /* Mul by 1/sqrt(2), Erf into the other 8-bit type, Add 1 there */
            int q1 = node(g, XF_OP_QUANTIZE_LINEAR, "q1", 3,
                          (int[]){out0(g, node(g, XF_OP_MUL, "mul", 2, (int[]){v, c}, 1)), ysc, yzp}, 1);
            int e = node(g, XF_OP_ERF, "erf", 1, (int[]){dq(g, out0(g, q1), ysc, yzp)}, 1);
            int q2 = node(g, XF_OP_QUANTIZE_LINEAR, "q2", 3, (int[]){out0(g, e), ysc, mzp}, 1);
            /* 1 dequantized, as quantize_static writes it: a QLinearAdd's form too */
            int one = dq(g, own_const(g, ints(mid, SCALAR, 105, 105)), ysc, mzp);
            op = node(g, XF_OP_ADD, "add", 2, (int[]){dq(g, out0(g, q2), ysc, mzp), one}, 1);
            if (f == GELU_SPLIT)
                xf_graph_add_output(g, out0(g, q1));
            n_steps = 3;
            n_tables = f == GELU_SPLIT ? 2 : 1;
            break;
        }
        }
        int q = node(g, XF_OP_QUANTIZE_LINEAR, "q", 3, (int[]){out0(g, op), ysc, n_steps == 3 ? mzp : yzp}, 1);
        xf_graph_add_output(g, out0(g, q));
        infer_ok(g, 21);
        bool table = f != MUL_ROW && f != MUL_RANK4;
        int counts[XF_OP_COUNT + 1];
        xf_tensor *want = run(g, "cpu_ref", x, NULL, what);
        for (int dynamic = 0; dynamic < 2; dynamic++) {
            xf_tensor *got = run_mode(g, "cpu", &x, counts, what, dynamic);
            int gathers = table ? n_tables : 0, qs = table ? 0 : n_steps;
            ck_assert_msg(counts[XF_OP_GATHER] == gathers && counts[XF_OP_CAST] == gathers &&
                              counts[XF_OP_QUANTIZE_LINEAR] == qs && counts[XF_OP_DEQUANTIZE_LINEAR] == !table &&
                              counts[XF_OP_ERF] == 0,
                          "%s: %d Gathers, %d QuantizeLinears", what, counts[XF_OP_GATHER],
                          counts[XF_OP_QUANTIZE_LINEAR]);
            expect_near_ref(got, want, table ? 0 : 1, what, dynamic ? "(dynamic)" : "(static)");
            xf_tensor_release(got);
        }
        xf_tensor_release(x);
        xf_tensor_release(want);
        xf_graph_free(g);
    }
}
END_TEST

/* QOperator steps are functions of the codes too: QLinearMul or
 * QLinearAdd of a constant of one element, QLinearSigmoid and
 * QLinearLeakyRelu become tables (cpu_ref's own kernels fill them, so the
 * values are cpu_ref's), and compose with QDQ steps: QLinearMul by
 * 1/sqrt(2), then DequantizeLinear, Erf and QuantizeLinear, then
 * QLinearAdd of 1 is one table.  A QLinearAdd of a row keeps its loop. */
START_TEST(qoperator_table_chains)
{
    if (!xf_bt_have_cpu())
        return;
    enum { QMUL_C, QSIGMOID, QLEAKY, QGELU, QADD_ROW, N_FORMS };
    xf_bt_seed(61);
    for (int form = 0; form < 2 * N_FORMS; form++) {
        int f = form % N_FORMS;
        chain_case k = chain_case_make(form >= N_FORMS);
        xf_dtype t = k.t, mid = k.mid;
        xf_graph *g = k.g;
        xf_tensor *x = k.x;
        int xv = k.xv, sc = k.sc, zp = k.zp, ysc = k.ysc, yzp = k.yzp;
        char what[48];
        snprintf(what, sizeof what, "QOperator table chain form %d", form);
        int mzp = own_const(g, ints(mid, SCALAR, 5, 5)), c = own_const(g, ints(t, SCALAR, 30, 30));
        int y = -1;
        switch (f) {
        case QMUL_C:
            y = node(g, XF_OP_MS_QLINEAR_MUL, "qmul", 8, (int[]){c, sc, zp, xv, sc, zp, ysc, yzp}, 1);
            break;
        case QSIGMOID: y = node(g, XF_OP_MS_QLINEAR_SIGMOID, "qsig", 5, (int[]){xv, sc, zp, ysc, yzp}, 1); break;
        case QLEAKY:
            y = node(g, XF_OP_MS_QLINEAR_LEAKY_RELU, "qleaky", 5, (int[]){xv, sc, zp, ysc, yzp}, 1);
            attrs(g, y)->alpha = 0.2f;
            break;
        case QGELU: {
            int m = node(g, XF_OP_MS_QLINEAR_MUL, "qmul", 8, (int[]){xv, sc, zp, c, sc, zp, ysc, yzp}, 1);
            int e = node(g, XF_OP_ERF, "erf", 1, (int[]){dq(g, out0(g, m), ysc, yzp)}, 1);
            int q = node(g, XF_OP_QUANTIZE_LINEAR, "q", 3, (int[]){out0(g, e), ysc, mzp}, 1);
            int one = own_const(g, ints(mid, SCALAR, 105, 105));
            y = node(g, XF_OP_MS_QLINEAR_ADD, "qadd", 8, (int[]){out0(g, q), ysc, mzp, one, ysc, mzp, sc, mzp}, 1);
            break;
        }
        default: {
            int row = own_const(g, ints(t, SHAPE(37), t == XF_DT_INT8 ? -128 : 0, t == XF_DT_INT8 ? 127 : 255));
            y = node(g, XF_OP_MS_QLINEAR_ADD, "qadd", 8, (int[]){xv, sc, zp, row, sc, zp, ysc, yzp}, 1);
            break;
        }
        }
        xf_graph_add_output(g, out0(g, y));
        infer_ok(g, 21);
        bool table = f != QADD_ROW;
        int counts[XF_OP_COUNT + 1];
        xf_tensor *want = run(g, "cpu_ref", x, NULL, what);
        for (int dynamic = 0; dynamic < 2; dynamic++) {
            xf_tensor *got = run_mode(g, "cpu", &x, counts, what, dynamic);
            int qops = counts[XF_OP_MS_QLINEAR_MUL] + counts[XF_OP_MS_QLINEAR_ADD] +
                       counts[XF_OP_MS_QLINEAR_SIGMOID] + counts[XF_OP_MS_QLINEAR_LEAKY_RELU];
            ck_assert_msg(counts[XF_OP_GATHER] == table && qops == !table && counts[XF_OP_ERF] == 0 &&
                              counts[XF_OP_QUANTIZE_LINEAR] == 0 && counts[XF_OP_DEQUANTIZE_LINEAR] == 0,
                          "%s: %d Gathers, %d QOperator nodes", what, counts[XF_OP_GATHER], qops);
            expect_near_ref(got, want, 0, what, dynamic ? "(dynamic)" : "(static)");
            xf_tensor_release(got);
        }
        xf_tensor_release(x);
        xf_tensor_release(want);
        xf_graph_free(g);
    }
}
END_TEST

/* QLinearConcat runs as a Concat of codes, each input whose scale or zero
 * point differs from the output's looked up first in cpu_ref's table:
 * the same bytes.  A scale computed at run time keeps it as written. */
START_TEST(qlinear_concat_codes)
{
    if (!xf_bt_have_cpu())
        return;
    xf_bt_seed(67);
    for (int form = 0; form < 3; form++) {
        bool s8 = form == 1, fed_scale = form == 2;
        xf_dtype t = s8 ? XF_DT_INT8 : XF_DT_UINT8;
        char what[48];
        snprintf(what, sizeof what, "QLinearConcat form %d", form);
        xf_tensor *x = ints(t, SHAPE(2, 3, 40), s8 ? -128 : 0, s8 ? 127 : 255);
        xf_graph *g = xf_graph_create("qconcat");
        int xv = xf_bt_input(g, t, x->shape);
        int ys = fed_scale ? xf_bt_input(g, XF_DT_FLOAT, SCALAR) : own_const(g, floats(SCALAR, (float[]){0.05f}));
        int yz = own_const(g, ints(t, SCALAR, 9, 9));
        /* x as the output's codes, a constant of other codes, x again in a third scale */
        int in[11] = {ys, yz, xv, own_const(g, floats(SCALAR, (float[]){0.05f})), yz,
                      own_const(g, ints(t, SHAPE(2, 5, 40), s8 ? -128 : 0, s8 ? 127 : 255)),
                      own_const(g, floats(SCALAR, (float[]){0.031f})), own_const(g, ints(t, SCALAR, -3, -3)), xv,
                      own_const(g, floats(SCALAR, (float[]){0.2f})), yz};
        int cat = node(g, XF_OP_MS_QLINEAR_CONCAT, "qcat", 11, in, 1);
        attrs(g, cat)->axis = 1;
        xf_graph_add_output(g, out0(g, cat));
        infer_ok(g, 21);
        xf_tensor *feeds[2] = {x, floats(SCALAR, (float[]){0.05f})};
        int counts[XF_OP_COUNT + 1];
        xf_tensor *got = run_mode(g, "cpu", feeds, counts, what, false);
        xf_tensor *want = run_mode(g, "cpu_ref", feeds, NULL, what, false);
        bool lowered = !fed_scale;
        ck_assert_msg(counts[XF_OP_MS_QLINEAR_CONCAT] == !lowered && counts[XF_OP_CONCAT] == lowered &&
                          counts[XF_OP_GATHER] == 2 * lowered,
                      "%s: %d Concats, %d Gathers", what, counts[XF_OP_CONCAT], counts[XF_OP_GATHER]);
        expect_near_ref(got, want, 0, what, "");
        xf_tensor *all[] = {x, feeds[1], got, want};
        for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
            xf_tensor_release(all[k]);
        xf_graph_free(g);
    }
}
END_TEST

/* cpu_ref's Gather of bytes by int32 indices (the tables' lookups):
 * negative indices from the end, one out of range refused by name. */
START_TEST(byte_gather)
{
    for (int bad = 0; bad < 2; bad++) {
        xf_graph *g = xf_graph_create("gather");
        xf_tensor *data = ints(XF_DT_UINT8, SHAPE(2, 4), 7, 7);
        for (int k = 0; k < 8; k++)
            ((uint8_t *)data->data)[k] = (uint8_t)(10 * k);
        int32_t ix[3] = {1, -1, bad ? 4 : 0};
        xf_tensor *idx = xf_tensor_from_data(XF_DT_INT32, &(xf_shape){.ndim = 1, .dims = {3}}, ix);
        int iv = xf_bt_input(g, XF_DT_INT32, idx->shape);
        int n = node(g, XF_OP_GATHER, "gather", 2, (int[]){add_const(g, data), iv}, 1);
        attrs(g, n)->axis = 1;
        xf_graph_add_output(g, out0(g, n));
        infer_ok(g, 21);
        xf_session *s = NULL;
        xf_error err = {0};
        xf_tensor *y = NULL;
        ck_assert(xf_session_create(g, 21, "cpu_ref", NULL, &s, &err) == XF_OK);
        xf_status st = xf_session_run(s, &idx, &y, &err);
        if (bad) {
            ck_assert_int_ne(st, XF_OK);
            ck_assert_msg(strstr(err.msg, "index 4 out of range") != NULL, "%s", err.msg);
        } else {
            ck_assert_int_eq(st, XF_OK);
            const uint8_t want[6] = {10, 30, 0, 50, 70, 40};
            ck_assert_mem_eq(y->data, want, 6);
        }
        xf_tensor_release(y);
        xf_tensor_release(data);
        xf_tensor_release(idx);
        xf_session_free(s);
        xf_graph_free(g);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cpu_qdq");
    TCase *tc = tcase_create("qdq");
    tcase_add_test(tc, qdq_convolutions);
    tcase_add_test(tc, qdq_matmuls);
    tcase_add_test(tc, qdq_transparent_ops);
    tcase_add_test(tc, qdq_activation_tables);
    tcase_add_test(tc, byte_gather);
    suite_add_tcase(s, tc);
    /* again with oneDNN held at AVX2 (test_cpu_qdq_loops_avx2): the AVX2
     * QLinearAdd and QLinearMul loops, the plain lookup loop */
    TCase *loops = tcase_create("loops");
    tcase_add_test(loops, qdq_binaries);
    tcase_add_test(loops, qdq_table_chains);
    tcase_add_test(loops, qoperator_table_chains);
    tcase_add_test(loops, qlinear_concat_codes);
    suite_add_tcase(s, loops);
    return xf_test_run_suite(s);
}
