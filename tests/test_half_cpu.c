/* float16 and bfloat16 graphs on the cpu backend: runs of the ops that
 * compute alike on float run as float ones (oneDNN's primitives, not
 * cpu_ref's 16-bit kernels), with Casts where they meet the rest of the
 * graph; outputs keep their 16-bit types and agree with cpu_ref's to
 * 16-bit rounding; ops whose outputs are discrete read rounded values, as
 * written; the Casts round to nearest even, as cpu_ref's. */
#include "backend_util.h"
#include "kernel_case_util.h"
#include "random_graph_util.h"
#include "xf_rt_internal.h"
#include "xf_runtime.h"
#include "xf_test_util.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A tensor of dtype t holding f(i) (rounded to t) for each element i. */
static xf_tensor *filled(xf_dtype t, int ndim, const int64_t *dims, double (*f)(int64_t))
{
    xf_shape s = xf_shape_make(ndim, dims);
    xf_tensor *x = xf_tensor_create(t, &s);
    ck_assert_ptr_nonnull(x);
    for (int64_t i = 0; i < xf_shape_numel(&s); i++)
        xf_tensor_set_f64(x, i, f(i));
    return x;
}

static double wave(int64_t i) { return sin(0.37 * (double)i) * 0.8 + 0.05 * (double)(i % 7); }
static double small_wave(int64_t i) { return cos(0.91 * (double)i) * 0.15; }
static double positive(int64_t i) { return 1.0 + 0.01 * (double)(i % 13); }

static int init(xf_graph *g, const char *name, xf_tensor *t)
{
    int v = xf_graph_add_initializer(g, name, t);
    xf_tensor_release(t);
    ck_assert_int_ge(v, 0);
    return v;
}

/* a float16 scalar constant */
static int scalar(xf_graph *g, const char *name, double v)
{
    xf_tensor *c = xf_tensor_create(XF_DT_FLOAT16, &(xf_shape){0});
    ck_assert_ptr_nonnull(c);
    xf_tensor_set_f64(c, 0, v);
    return init(g, name, c);
}

static int node(xf_graph *g, xf_op op, const char *name, int n_in, const int *in)
{
    xf_shape unknown = {.ndim = -1};
    int y = xf_graph_add_value(g, name, XF_DT_UNDEFINED, &unknown);
    ck_assert_int_ge(xf_graph_add_node(g, op, name, n_in, in, 1, &y), 0);
    return y;
}

/* x (1 x 8 x 10 x 10) -> Conv 3x3 -> BatchNormalization -> Relu = r, an
 * output; Cos (computed on 16-bit values: not an op of the float runs) ->
 * Conv 1x1 -> Add r -> GlobalAveragePool -> Flatten -> Gemm = y, the
 * other output. */
static xf_graph *conv_net(xf_dtype t)
{
    enum { C = 8 };
    xf_graph *g = xf_graph_create("half");
    xf_shape xs = xf_shape_make(4, (int64_t[]){1, C, 10, 10});
    int x = xf_graph_add_input(g, "x", t, &xs);
    int w1 = init(g, "w1", filled(t, DIMS(C, C, 3, 3), small_wave)), b1 = init(g, "b1", filled(t, DIMS(C), wave));
    int c1 = node(g, XF_OP_CONV, "conv1", 3, (int[]){x, w1, b1});
    xf_node *n = &g->nodes[g->n_nodes - 1];
    n->attrs.n_spatial = 2;
    for (int k = 0; k < 2; k++) {
        n->attrs.kernel[k] = 3;
        n->attrs.strides[k] = n->attrs.dilations[k] = 1;
        n->attrs.pads[k] = n->attrs.pads[k + 2] = 1;
    }
    int bn_in[5] = {c1, init(g, "scale", filled(t, DIMS(C), positive)), init(g, "bias", filled(t, DIMS(C), wave)),
                    init(g, "mean", filled(t, DIMS(C), small_wave)), init(g, "var", filled(t, DIMS(C), positive))};
    int bn = node(g, XF_OP_BATCH_NORM, "bn", 5, bn_in);
    int r = node(g, XF_OP_RELU, "r", 1, &bn);
    int cs = node(g, XF_OP_COS, "cos", 1, &r);
    int w2 = init(g, "w2", filled(t, DIMS(C, C, 1, 1), small_wave));
    int c2 = node(g, XF_OP_CONV, "conv2", 2, (int[]){cs, w2});
    int sum = node(g, XF_OP_ADD, "sum", 2, (int[]){c2, r});
    int gap = node(g, XF_OP_GLOBAL_AVERAGE_POOL, "gap", 1, &sum);
    int flat = node(g, XF_OP_FLATTEN, "flat", 1, &gap);
    int w3 = init(g, "w3", filled(t, DIMS(5, C), wave)), b3 = init(g, "b3", filled(t, DIMS(5), small_wave));
    int y = node(g, XF_OP_GEMM, "y", 3, (int[]){flat, w3, b3});
    g->nodes[g->n_nodes - 1].attrs.trans_b = 1;
    xf_graph_add_output(g, y);
    xf_graph_add_output(g, r);
    xf_error err = {0};
    ck_assert_msg(xf_graph_infer_shapes(g, 23, &err) == XF_OK, "%s", err.msg);
    return g;
}

/* The index of the session graph's node called name, or -1. */
static int node_named(const xf_graph *g, const char *name)
{
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].name && strcmp(g->nodes[i].name, name) == 0)
            return i;
    return -1;
}

/* Runs g on backend (dynamic mode when dynamic) with input x into out[0..n);
 * on cpu, checks that the named float-run nodes compute float and do not run
 * on cpu_ref's kernels, and that the named others stay 16-bit. */
static void run_on(const xf_graph *g, const char *backend, bool dynamic, xf_tensor *x, xf_tensor **out, int n,
                   const char *const *in_float, const char *const *kept)
{
    xf_session *s;
    xf_error err = {0};
    xf_session_options opt = {.force_dynamic = dynamic};
    ck_assert_msg(xf_session_create(g, 23, backend, &opt, &s, &err) == XF_OK, "%s: %s", backend, err.msg);
    for (int k = 0; k < n; k++)
        out[k] = NULL;
    ck_assert_msg(xf_session_run(s, &x, out, &err) == XF_OK, "%s: %s", backend, err.msg);
    const xf_graph *sg = xf_session_graph(s);
    for (int k = 0; strcmp(backend, "cpu") == 0 && in_float && in_float[k]; k++) {
        int i = node_named(sg, in_float[k]);
        ck_assert_msg(i >= 0, "no node %s", in_float[k]);
        ck_assert_msg(sg->values[sg->nodes[i].outputs[0]].dtype == XF_DT_FLOAT, "%s gives %s", in_float[k],
                      xf_dtype_name(sg->values[sg->nodes[i].outputs[0]].dtype));
        char impl[256] = "";
        xf_session_node_impl(s, i, impl, sizeof impl);
        /* a dynamic session prepares its nodes as they run */
        ck_assert_msg(dynamic || strstr(impl, "cpu_ref") == NULL, "%s runs on %s", in_float[k], impl);
    }
    for (int k = 0; strcmp(backend, "cpu") == 0 && kept && kept[k]; k++) {
        int i = node_named(sg, kept[k]);
        ck_assert_msg(i >= 0, "no node %s", kept[k]);
        ck_assert_msg(sg->values[sg->nodes[i].outputs[0]].dtype == g->values[g->inputs[0]].dtype, "%s gives %s",
                      kept[k], xf_dtype_name(sg->values[sg->nodes[i].outputs[0]].dtype));
    }
    xf_session_free(s);
}

/* Outputs a and b (cpu's, cpu_ref's) agree within tol of b's largest
 * magnitude, and keep b's dtype. */
static void expect_close(xf_tensor *a, xf_tensor *b, double tol, const char *what)
{
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert_msg(a->dtype == b->dtype, "%s: %s, want %s", what, xf_dtype_name(a->dtype), xf_dtype_name(b->dtype));
    double big = 0;
    for (int64_t i = 0; i < xf_tensor_numel(b); i++)
        big = fmax(big, fabs(xf_tensor_get_f64(b, i)));
    bool ok;
    double worst;
    xf_error err = {0};
    ck_assert_int_eq(xf_tensor_compare(a, b, tol * big, tol, &worst, NULL, &ok, &err), XF_OK);
    ck_assert_msg(ok, "%s: cpu and cpu_ref differ by %g (largest %g)", what, worst, big);
}

/* Both 16-bit types, static and dynamic mode: the convolutions, the
 * normalization, the Relu and the Gemm compute float on oneDNN; Cos stays
 * 16-bit; both outputs (one from inside a float run) keep their type and
 * agree with cpu_ref's to a few units of 16-bit rounding. */
START_TEST(conv_net_runs_in_float)
{
    const xf_dtype types[2] = {XF_DT_FLOAT16, XF_DT_BFLOAT16};
    const double tol[2] = {4e-3, 3e-2};
    static const char *const in_float[] = {"conv1", "conv2", "y", NULL}, *const kept[] = {"cos", NULL};
    for (int t = 0; t < 2; t++)
        for (int dynamic = 0; dynamic < 2; dynamic++) {
            xf_graph *g = conv_net(types[t]);
            xf_tensor *x = filled(types[t], DIMS(1, 8, 10, 10), wave), *ref[2], *got[2];
            run_on(g, "cpu_ref", false, x, ref, 2, NULL, NULL);
            run_on(g, "cpu", dynamic, x, got, 2, in_float, kept);
            expect_close(got[0], ref[0], tol[t], "y");
            expect_close(got[1], ref[1], tol[t], "r");
            for (int k = 0; k < 2; k++) {
                xf_tensor_release(ref[k]);
                xf_tensor_release(got[k]);
            }
            xf_tensor_release(x);
            xf_graph_free(g);
        }
}
END_TEST

/* x * 1.0009765625 for x = 1.998046875 is 1.99999809 in float and 2 in
 * float16: Floor, whose output is discrete, reads the rounded product (2)
 * on cpu as on cpu_ref, while the Mul runs in float. */
START_TEST(discrete_ops_read_rounded_values)
{
    xf_graph *g = xf_graph_create("floor");
    xf_shape xs = xf_shape_make(1, (int64_t[]){3});
    int x = xf_graph_add_input(g, "x", XF_DT_FLOAT16, &xs);
    int p = node(g, XF_OP_MUL, "mul", 2, (int[]){x, scalar(g, "c", 1.0009765625)});
    int q = node(g, XF_OP_RELU, "relu", 1, &p);
    int y = node(g, XF_OP_FLOOR, "floor", 1, &q);
    xf_graph_add_output(g, y);
    xf_error err = {0};
    ck_assert_msg(xf_graph_infer_shapes(g, 23, &err) == XF_OK, "%s", err.msg);
    xf_tensor *in = xf_tensor_create(XF_DT_FLOAT16, &xs);
    const double xv[3] = {1.998046875, 3.99609375, -0.5};
    for (int i = 0; i < 3; i++)
        xf_tensor_set_f64(in, i, xv[i]);
    static const char *const in_float[] = {"mul", "relu", NULL}, *const kept[] = {"floor", NULL};
    const double want[3] = {2, 4, 0};
    for (int dynamic = 0; dynamic < 2; dynamic++) {
        xf_tensor *out;
        run_on(g, "cpu", dynamic, in, &out, 1, in_float, kept);
        ck_assert_int_eq(out->dtype, XF_DT_FLOAT16);
        for (int i = 0; i < 3; i++)
            ck_assert_msg(xf_tensor_get_f64(out, i) == want[i], "element %d: %g, want %g", i,
                          xf_tensor_get_f64(out, i), want[i]);
        xf_tensor_release(out);
    }
    xf_tensor_release(in);
    xf_graph_free(g);
}
END_TEST

/* 16-bit values for the Casts: halfway cases, the largest finite values
 * and past them, subnormals, zeros, infinities and NaN, then a ramp, in
 * more elements than one chunk of a thread (tails included). */
static double cast_value(int64_t i)
{
    static const double special[] = {1.0 + 1.0 / 2048,   1.0 + 3.0 / 2048, 65504, 65519.99, 65520, -65536, 1e-7,
                                     -3e-8,              5.96e-8,          0.0,   -0.0,     INFINITY, -INFINITY,
                                     NAN,                1.0 + 1.0 / 256,  3.3895313892515355e38, 1e-40};
    int64_t n = (int64_t)(sizeof special / sizeof *special);
    return i < n ? special[i] : ldexp(sin((double)i), (int)(i % 41) - 20);
}

/* float -> 16 bits -> float on cpu, byte for byte cpu_ref's */
START_TEST(casts_match_cpu_ref)
{
    const xf_dtype types[2] = {XF_DT_FLOAT16, XF_DT_BFLOAT16};
    const int64_t sizes[2] = {37, 300007};
    for (int t = 0; t < 2; t++)
        for (int s = 0; s < 2; s++) {
            xf_graph *g = xf_graph_create("casts");
            xf_shape xs = xf_shape_make(1, (int64_t[]){sizes[s]});
            int x = xf_graph_add_input(g, "x", XF_DT_FLOAT, &xs);
            int h = node(g, XF_OP_CAST, "to_half", 1, &x);
            g->nodes[g->n_nodes - 1].attrs.to = types[t];
            int f = node(g, XF_OP_CAST, "to_float", 1, &h);
            g->nodes[g->n_nodes - 1].attrs.to = XF_DT_FLOAT;
            xf_graph_add_output(g, h);
            xf_graph_add_output(g, f);
            xf_error err = {0};
            ck_assert_msg(xf_graph_infer_shapes(g, 23, &err) == XF_OK, "%s", err.msg);
            xf_tensor *in = filled(XF_DT_FLOAT, 1, &sizes[s], cast_value), *ref[2], *got[2];
            /* NaNs whose payload lies in the low bits only, which rounding
             * alone would carry into the exponent (infinity) */
            memcpy((uint32_t *)in->data + 17, (uint32_t[]){0x7f800001u, 0xff807fffu}, 2 * sizeof(uint32_t));
            run_on(g, "cpu_ref", false, in, ref, 2, NULL, NULL);
            xf_session *ss;
            ck_assert_msg(xf_session_create(g, 23, "cpu", NULL, &ss, &err) == XF_OK, "%s", err.msg);
            char impl[256] = "";
            xf_session_node_impl(ss, node_named(xf_session_graph(ss), "to_half"), impl, sizeof impl);
            ck_assert_msg(strcmp(impl, "own loop") == 0, "Cast runs on %s", impl);
            got[0] = got[1] = NULL;
            ck_assert_msg(xf_session_run(ss, &in, got, &err) == XF_OK, "%s", err.msg);
            xf_session_free(ss);
            for (int k = 0; k < 2; k++) {
                ck_assert_int_eq(got[k]->dtype, ref[k]->dtype);
                ck_assert_uint_eq(got[k]->nbytes, ref[k]->nbytes);
                /* NaN's bits aside: a NaN in both */
                for (int64_t i = 0; i < sizes[s]; i++) {
                    double a = xf_tensor_get_f64(got[k], i), b = xf_tensor_get_f64(ref[k], i);
                    ck_assert_msg((isnan(a) && isnan(b)) || (a == b && signbit(a) == signbit(b)),
                                  "%s output %d element %lld: %.9g, want %.9g", xf_dtype_name(types[t]), k,
                                  (long long)i, a, b);
                }
                xf_tensor_release(ref[k]);
                xf_tensor_release(got[k]);
            }
            xf_tensor_release(in);
            xf_graph_free(g);
        }
}
END_TEST

/* The exact GELU of a float16 model (x / sqrt(2) rounded to 16 bits, Erf,
 * + 1, * x, * 0.5) runs as one oneDNN gelu_erf, as in float models, within
 * 16-bit rounding of cpu_ref's. */
START_TEST(gelu_of_half_constants_folds)
{
    xf_graph *g = xf_graph_create("gelu");
    xf_shape xs = xf_shape_make(2, (int64_t[]){4, 64});
    int x = xf_graph_add_input(g, "x", XF_DT_FLOAT16, &xs);
    int w = init(g, "w", filled(XF_DT_FLOAT16, DIMS(64, 64), small_wave));
    int m = node(g, XF_OP_MATMUL, "mm", 2, (int[]){x, w});
    int cv[3] = {scalar(g, "sqrt2", sqrt(2.0)), scalar(g, "one", 1.0), scalar(g, "half", 0.5)};
    int d = node(g, XF_OP_DIV, "div", 2, (int[]){m, cv[0]});
    int e = node(g, XF_OP_ERF, "erf", 1, &d);
    int a = node(g, XF_OP_ADD, "add", 2, (int[]){e, cv[1]});
    int p = node(g, XF_OP_MUL, "mul", 2, (int[]){m, a});
    int y = node(g, XF_OP_MUL, "y", 2, (int[]){p, cv[2]});
    xf_graph_add_output(g, y);
    xf_error err = {0};
    ck_assert_msg(xf_graph_infer_shapes(g, 23, &err) == XF_OK, "%s", err.msg);
    xf_tensor *in = filled(XF_DT_FLOAT16, DIMS(4, 64), wave), *ref, *got;
    run_on(g, "cpu_ref", false, in, &ref, 1, NULL, NULL);
    xf_session *s;
    ck_assert_msg(xf_session_create(g, 23, "cpu", NULL, &s, &err) == XF_OK, "%s", err.msg);
    const xf_graph *sg = xf_session_graph(s);
    for (int i = 0; i < sg->n_nodes; i++) {
        char impl[256] = "";
        xf_session_node_impl(s, i, impl, sizeof impl);
        ck_assert_msg(strstr(impl, "cpu_ref") == NULL, "%s (%s) runs on %s", sg->nodes[i].name,
                      xf_op_name(sg->nodes[i].op), impl);
    }
    got = NULL;
    ck_assert_msg(xf_session_run(s, &in, &got, &err) == XF_OK, "%s", err.msg);
    xf_session_free(s);
    expect_close(got, ref, 4e-3, "gelu");
    xf_tensor_release(got);
    xf_tensor_release(ref);
    xf_tensor_release(in);
    xf_graph_free(g);
}
END_TEST

/* ONNX's Attention on float16 (batch 1, 2 heads, 8 queries over 8 keys of
 * 16): computed in float on cpu, within 16-bit rounding of cpu_ref, which
 * rounds after each step. */
START_TEST(attention_runs_in_float)
{
    xf_graph *g = xf_graph_create("attention");
    xf_shape qs = xf_shape_make(4, (int64_t[]){1, 2, 8, 16});
    int q = xf_graph_add_input(g, "q", XF_DT_FLOAT16, &qs);
    int k = init(g, "k", filled(XF_DT_FLOAT16, DIMS(1, 2, 8, 16), small_wave));
    int v = init(g, "v", filled(XF_DT_FLOAT16, DIMS(1, 2, 8, 16), wave));
    int y = node(g, XF_OP_ATTENTION, "attn", 3, (int[]){q, k, v});
    xf_graph_add_output(g, y);
    xf_error err = {0};
    ck_assert_msg(xf_graph_infer_shapes(g, 23, &err) == XF_OK, "%s", err.msg);
    xf_tensor *in = filled(XF_DT_FLOAT16, DIMS(1, 2, 8, 16), wave), *ref, *got;
    static const char *const in_float[] = {"attn", NULL};
    run_on(g, "cpu_ref", false, in, &ref, 1, NULL, NULL);
    run_on(g, "cpu", false, in, &got, 1, in_float, NULL);
    expect_close(got, ref, 4e-3, "attention");
    xf_tensor_release(got);
    xf_tensor_release(ref);
    xf_tensor_release(in);
    xf_graph_free(g);
}
END_TEST

static double code_byte(int64_t i) { return (double)((i * 37 + 11) % 256); }
static double zp_byte(int64_t i) { return (double)((i * 29 + 3) % 256); }
static double scale_of(int64_t i) { return 0.01 * (double)(1 + i % 9); }

/* MatMulNBits (4 bits, K 64 in blocks of 32, N 48, uint8 zero points, a
 * bias) on A of t, 5 rows; then GatherBlockQuantized (uint4 codes in
 * bytes, blocks of 16 along 32 columns) of rows 3, 0 and -1 of a 6-row
 * table with scales of t: both outputs of t. */
static xf_graph *nbits_net(xf_dtype t)
{
    enum { M = 5, K = 64, N = 48, BLOCK = 32, V = 6, H = 32, GB = 16 };
    xf_graph *g = xf_graph_create("nbits");
    xf_shape as = xf_shape_make(2, (int64_t[]){M, K});
    int a = xf_graph_add_input(g, "a", t, &as);
    int in[6] = {a, init(g, "b", filled(XF_DT_UINT8, DIMS(N, K / BLOCK, BLOCK / 2), code_byte)),
                 init(g, "scales", filled(t, DIMS(N * K / BLOCK), scale_of)),
                 init(g, "zp", filled(XF_DT_UINT8, DIMS(N), zp_byte)), -1, init(g, "bias", filled(t, DIMS(N), wave))};
    int y = node(g, XF_OP_MS_MATMUL_NBITS, "nbits", 6, in);
    xf_attn_attrs *at = &g->nodes[g->n_nodes - 1].attrs.attn;
    at->nb_k = K;
    at->nb_n = N;
    at->nb_bits = 4;
    at->nb_block = BLOCK;
    xf_tensor *idx = xf_tensor_create(XF_DT_INT64, &(xf_shape){1, {3}});
    ck_assert_ptr_nonnull(idx);
    memcpy(idx->data, (int64_t[]){3, 0, -1}, 3 * sizeof(int64_t));
    int gin[4] = {init(g, "table", filled(XF_DT_UINT8, DIMS(V, H / 2), code_byte)), init(g, "idx", idx),
                  init(g, "gscales", filled(t, DIMS(V, H / GB), scale_of)),
                  init(g, "gzp", filled(XF_DT_UINT8, DIMS(V, 1), zp_byte))};
    int e = node(g, XF_OP_MS_GATHER_BLOCK_QUANTIZED, "gbq", 4, gin);
    xf_attrs *ga = &g->nodes[g->n_nodes - 1].attrs;
    ga->axis = 1;
    ga->attn.nb_bits = 4;
    ga->attn.nb_block = GB;
    xf_graph_add_output(g, y);
    xf_graph_add_output(g, e);
    xf_error err = {0};
    ck_assert_msg(xf_graph_infer_shapes(g, 23, &err) == XF_OK, "%s", err.msg);
    return g;
}

/* MatMulNBits and GatherBlockQuantized take float16 and bfloat16 A,
 * scales and bias (as ONNX Runtime's do) and give their type: on cpu_ref,
 * computed in float and rounded once, so that with 16-bit operands their
 * outputs are the float model's rounded to 16 bits, element for element;
 * on cpu the nodes compute float, within 16-bit rounding of cpu_ref's
 * (the quantized embedding exactly). */
START_TEST(nbits_ops_take_half_types)
{
    const xf_dtype types[2] = {XF_DT_FLOAT16, XF_DT_BFLOAT16};
    const double tol[2] = {4e-3, 3e-2};
    static const char *const in_float[] = {"nbits", NULL}; /* GatherBlockQuantized: cpu_ref's kernel */
    for (int t = 0; t < 2; t++) {
        xf_graph *g = nbits_net(types[t]), *gf = nbits_net(XF_DT_FLOAT);
        ck_assert_int_eq(g->values[g->outputs[0]].dtype, types[t]);
        ck_assert_int_eq(g->values[g->outputs[1]].dtype, types[t]);
        /* the float model's operands hold the 16-bit values */
        for (int v = 0; v < gf->n_values; v++) {
            xf_tensor *c = gf->values[v].init;
            for (int64_t i = 0; c && c->dtype == XF_DT_FLOAT && i < xf_tensor_numel(c); i++)
                ((float *)c->data)[i] = (float)xf_tensor_get_f64(g->values[v].init, i);
        }
        xf_tensor *x = filled(types[t], DIMS(5, 64), wave), *xf = xf_tensor_create(XF_DT_FLOAT, &x->shape);
        for (int64_t i = 0; i < xf_tensor_numel(x); i++)
            ((float *)xf->data)[i] = (float)xf_tensor_get_f64(x, i);
        xf_tensor *ref[2], *flt[2], *got[2];
        run_on(g, "cpu_ref", false, x, ref, 2, NULL, NULL);
        run_on(gf, "cpu_ref", false, xf, flt, 2, NULL, NULL);
        for (int k = 0; k < 2; k++)
            for (int64_t i = 0; i < xf_tensor_numel(flt[k]); i++) {
                xf_tensor *one = xf_tensor_create(types[t], &(xf_shape){0});
                xf_tensor_set_f64(one, 0, xf_tensor_get_f64(flt[k], i));
                ck_assert_msg(xf_tensor_get_f64(ref[k], i) == xf_tensor_get_f64(one, 0),
                              "output %d element %lld: %g, want %g", k, (long long)i, xf_tensor_get_f64(ref[k], i),
                              xf_tensor_get_f64(one, 0));
                xf_tensor_release(one);
            }
        for (int dynamic = 0; dynamic < 2; dynamic++) {
            run_on(g, "cpu", dynamic, x, got, 2, in_float, NULL);
            expect_close(got[0], ref[0], tol[t], "MatMulNBits");
            expect_close(got[1], ref[1], 0, "GatherBlockQuantized");
            xf_tensor_release(got[0]);
            xf_tensor_release(got[1]);
        }
        for (int k = 0; k < 2; k++) {
            xf_tensor_release(ref[k]);
            xf_tensor_release(flt[k]);
        }
        xf_tensor_release(x);
        xf_tensor_release(xf);
        xf_graph_free(g);
        xf_graph_free(gf);
    }
}
END_TEST

/* The outputs of g (inputs in) on backend, in static or dynamic mode,
 * into out. */
static void run_mode(const xf_graph *g, int64_t opset, const char *backend, xf_tensor **in, xf_tensor **out,
                     bool dynamic)
{
    xf_session *s;
    xf_error err = {0};
    xf_session_options opt = {.force_dynamic = dynamic};
    ck_assert_msg(xf_session_create(g, opset, backend, &opt, &s, &err) == XF_OK, "%s", err.msg);
    ck_assert_msg(xf_session_run(s, in, out, &err) == XF_OK, "%s", err.msg);
    xf_session_free(s);
}

/* gh, made float16 by xf_bt_through_float16, gives on backend the outputs
 * of gf (the same graph, its constants rounded likewise) on the same
 * inputs, rounded to float16, element for element, in static mode and
 * (modes 2) in dynamic mode too (whose primitives may sum in another order
 * than static mode's). */
static void expect_float_rounded(const xf_graph *gf, const xf_graph *gh, int64_t opset, const char *backend,
                                 int modes, const char *what)
{
    xf_tensor *inh[16], *inf[16], *want[16] = {0}, *got[16] = {0};
    ck_assert_int_le(gh->n_inputs, 16);
    ck_assert_int_le(gh->n_outputs, 16);
    for (int k = 0; k < gh->n_inputs; k++) {
        const xf_shape *sh = &gh->values[gh->inputs[k]].shape;
        inh[k] = filled(XF_DT_FLOAT16, sh->ndim, sh->dims, k % 2 ? wave : small_wave);
        inf[k] = xf_tensor_create(XF_DT_FLOAT, sh);
        for (int64_t i = 0; i < xf_tensor_numel(inh[k]); i++)
            ((float *)inf[k]->data)[i] = (float)xf_tensor_get_f64(inh[k], i);
    }
    for (int dynamic = 0; dynamic < modes; dynamic++) {
        run_mode(gf, opset, backend, inf, want, dynamic);
        run_mode(gh, opset, backend, inh, got, dynamic);
        for (int k = 0; k < gh->n_outputs; k++) {
            ck_assert_int_eq(got[k]->dtype, XF_DT_FLOAT16);
            for (int64_t i = 0; i < xf_tensor_numel(got[k]); i++) {
                xf_tensor *one = xf_tensor_create(XF_DT_FLOAT16, &(xf_shape){0});
                xf_tensor_set_f64(one, 0, xf_tensor_get_f64(want[k], i));
                double a = xf_tensor_get_f64(got[k], i), b = xf_tensor_get_f64(one, 0);
                ck_assert_msg(a == b || (isnan(a) && isnan(b)), "%s on %s, output %d element %lld: %.9g, want %.9g",
                              what, backend, k, (long long)i, a, b);
                xf_tensor_release(one);
            }
            xf_tensor_release(got[k]);
            xf_tensor_release(want[k]);
            got[k] = want[k] = NULL;
        }
    }
    for (int k = 0; k < gh->n_inputs; k++) {
        xf_tensor_release(inh[k]);
        xf_tensor_release(inf[k]);
    }
}

/* The differential test's random graphs (convolutions, products, pools,
 * pointwise ops, Concats and Splits, values shared, several outputs), made
 * float16: every op of theirs computes alike on float, so on cpu each
 * graph is one float run, and its outputs are the float graph's rounded
 * once. */
START_TEST(random_graphs_in_float16)
{
    for (uint64_t seed = 1; seed <= 100; seed++) {
        xf_model *mh, *mf;
        xf_error err = {0};
        ck_assert_msg(xf_random_model(seed, 10, &mh, &err) == XF_OK && xf_random_model(seed, 10, &mf, &err) == XF_OK,
                      "seed %llu: %s", (unsigned long long)seed, err.msg);
        xf_bt_through_float16(mh->graph, true, 17);
        xf_bt_through_float16(mf->graph, false, 17);
        char what[64];
        snprintf(what, sizeof what, "seed %llu", (unsigned long long)seed);
        expect_float_rounded(mf->graph, mh->graph, 17, "cpu", 2, what);
        xf_model_free(mh);
        xf_model_free(mf);
    }
}
END_TEST

/* Node op (attributes set by the caller) reading in, giving n_out fresh
 * values; the node's index. */
static int node_outs(xf_graph *g, xf_op op, const char *name, int n_in, const int *in, int n_out, int *out)
{
    xf_shape unknown = {.ndim = -1};
    char vname[64];
    for (int k = 0; k < n_out; k++) {
        snprintf(vname, sizeof vname, "%s_%d", name, k);
        out[k] = xf_graph_add_value(g, vname, XF_DT_UNDEFINED, &unknown);
    }
    int i = xf_graph_add_node(g, op, name, n_in, in, n_out, out);
    ck_assert_int_ge(i, 0);
    return i;
}

/* an int32 or int64 tensor of v */
static xf_tensor *ints(xf_dtype t, int ndim, const int64_t *dims, const int64_t *v)
{
    xf_shape s = xf_shape_make(ndim, dims);
    xf_tensor *x = xf_tensor_create(t, &s);
    ck_assert_ptr_nonnull(x);
    for (int64_t i = 0; i < xf_shape_numel(&s); i++)
        if (t == XF_DT_INT32)
            ((int32_t *)x->data)[i] = (int32_t)v[i];
        else
            ((int64_t *)x->data)[i] = v[i];
    return x;
}

/* ONNX Runtime's attention family on float: op 0 GroupQueryAttention (4
 * heads over 2 key/value heads of 8, 5 tokens; output and present key and
 * value), 1 MultiHeadAttention (2 heads of 8, 3 queries over 5 keys), 2
 * RotaryEmbedding (2 heads of 8, positions 2, 0, 4), each reading a graph
 * input x. */
static xf_graph *attention_family(int op)
{
    xf_graph *g = xf_graph_create("ms_attention");
    int64_t rows = op == 1 ? 3 : 5, width = op == 0 ? 32 : 16;
    xf_shape xs = xf_shape_make(3, (int64_t[]){1, rows, width});
    int x = xf_graph_add_input(g, "x", XF_DT_FLOAT, &xs), out[3], n_out = op == 0 ? 3 : 1, i;
    if (op == 0) {
        int in[7] = {x, init(g, "k", filled(XF_DT_FLOAT, DIMS(1, 5, 16), wave)),
                     init(g, "v", filled(XF_DT_FLOAT, DIMS(1, 5, 16), small_wave)), -1, -1,
                     init(g, "seqlens", ints(XF_DT_INT32, DIMS(1), (int64_t[]){4})),
                     init(g, "total", ints(XF_DT_INT32, 0, NULL, (int64_t[]){5}))};
        i = node_outs(g, XF_OP_MS_GQA, "gqa", 7, in, 3, out);
        g->nodes[i].attrs.attn.num_heads = 4;
        g->nodes[i].attrs.attn.kv_num_heads = 2;
        g->nodes[i].attrs.attn.local_window_size = -1;
    } else if (op == 1) {
        int in[3] = {x, init(g, "k", filled(XF_DT_FLOAT, DIMS(1, 5, 16), wave)),
                     init(g, "v", filled(XF_DT_FLOAT, DIMS(1, 5, 16), small_wave))};
        i = node_outs(g, XF_OP_MS_MHA, "mha", 3, in, 1, out);
        g->nodes[i].attrs.attn.num_heads = 2;
        g->nodes[i].attrs.attn.mask_filter_value = -10000.0f;
    } else {
        int in[4] = {x, init(g, "pos", ints(XF_DT_INT64, DIMS(1, 5), (int64_t[]){2, 0, 4, 1, 3})),
                     init(g, "cos", filled(XF_DT_FLOAT, DIMS(6, 4), wave)),
                     init(g, "sin", filled(XF_DT_FLOAT, DIMS(6, 4), small_wave))};
        i = node_outs(g, XF_OP_MS_ROTARY_EMB, "rotary", 4, in, 1, out);
        g->nodes[i].attrs.attn.num_heads = 2;
        g->nodes[i].attrs.attn.scale = 1.0f;
    }
    for (int k = 0; k < n_out; k++)
        xf_graph_add_output(g, out[k]);
    xf_error err = {0};
    ck_assert_msg(xf_graph_infer_shapes(g, 17, &err) == XF_OK, "%s", err.msg);
    return g;
}

/* GroupQueryAttention, MultiHeadAttention and RotaryEmbedding take
 * float16, as ONNX Runtime's do: on cpu_ref computed in float and rounded
 * once, on cpu in the float runs, so that both give the float graph's
 * outputs rounded to float16. */
START_TEST(ms_attention_family_takes_float16)
{
    static const char *const names[3] = {"GroupQueryAttention", "MultiHeadAttention", "RotaryEmbedding"};
    static const char *const nodes[3] = {"gqa", "mha", "rotary"};
    for (int op = 0; op < 3; op++) {
        xf_graph *gh = attention_family(op), *gf = attention_family(op);
        xf_bt_through_float16(gh, true, 17);
        xf_bt_through_float16(gf, false, 17);
        ck_assert_int_eq(gh->values[gh->outputs[0]].dtype, XF_DT_FLOAT16);
        expect_float_rounded(gf, gh, 17, "cpu_ref", 2, names[op]);
        expect_float_rounded(gf, gh, 17, "cpu", 2, names[op]);
        xf_session *s;
        xf_error err = {0};
        ck_assert_msg(xf_session_create(gh, 17, "cpu", NULL, &s, &err) == XF_OK, "%s", err.msg);
        const xf_graph *sg = xf_session_graph(s);
        int i = node_named(sg, nodes[op]);
        ck_assert_msg(i >= 0 && sg->values[sg->nodes[i].outputs[0]].dtype == XF_DT_FLOAT, "%s does not compute float",
                      names[op]);
        xf_session_free(s);
        xf_graph_free(gh);
        xf_graph_free(gf);
    }
}
END_TEST

/* The zoo's models at reduced sizes (as test_zoo runs them), made
 * float16: every node of theirs but the Casts at their input and output
 * computes float (one float run), and on cpu their outputs are those of
 * the float models on the same weights and inputs, rounded once (static
 * mode: the random graphs above run in both). */
START_TEST(zoo_models_in_float16)
{
    xf_model *mh = NULL, *mf = NULL;
    xf_error err = {0};
    const char *name = xf_bt_zoo_runs[_i].name;
    xf_bt_zoo_half_pair(&xf_bt_zoo_runs[_i], &mh, &mf);
    int64_t opset = xf_model_opset(mf);
    xf_graph *g = xf_graph_clone(mh->graph);
    ck_assert_ptr_nonnull(g);
    ck_assert_msg(xf_rt_lower_half(g, &err) == XF_OK, "%s: %s", name, err.msg);
    int casts = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const xf_node *n = &g->nodes[i];
        casts += n->op == XF_OP_CAST;
        for (int k = 0; n->op != XF_OP_CAST && k < n->n_inputs + n->n_outputs; k++) {
            int v = k < n->n_inputs ? n->inputs[k] : n->outputs[k - n->n_inputs];
            ck_assert_msg(v < 0 || !xf_dtype_is_half(g->values[v].dtype), "%s: %s (%s) touches %s", name, n->name,
                          xf_op_name(n->op), g->values[v].name);
        }
    }
    ck_assert_int_eq(casts, g->n_inputs + g->n_outputs);
    xf_graph_free(g);
    expect_float_rounded(mf->graph, mh->graph, opset, "cpu", 1, name);
    xf_model_free(mh);
    xf_model_free(mf);
}
END_TEST

/* A float16 weight-only int4 model in QDQ form (a DequantizeLinear of
 * int4 codes blocked along K with float16 scales, and the MatMul reading
 * it): the float run makes it a float pair, which the cpu backend then
 * runs as one MatMulNBits, as for float models; within float16 rounding
 * of cpu_ref, which dequantizes the weight at every run. */
START_TEST(int4_qdq_pair_lowered)
{
    enum { M = 3, K = 64, N = 32, BLOCK = 16 };
    xf_graph *g = xf_graph_create("int4");
    xf_shape xs = xf_shape_make(2, (int64_t[]){M, K});
    int x = xf_graph_add_input(g, "x", XF_DT_FLOAT16, &xs);
    xf_shape ws = xf_shape_make(2, (int64_t[]){K, N});
    xf_tensor *w = xf_tensor_create(XF_DT_INT4, &ws);
    ck_assert_ptr_nonnull(w);
    for (size_t i = 0; i < w->nbytes; i++)
        ((uint8_t *)w->data)[i] = (uint8_t)(i * 37 + 11);
    int in[2] = {init(g, "w", w), init(g, "scale", filled(XF_DT_FLOAT16, DIMS(K / BLOCK, N), scale_of))};
    int dq = node(g, XF_OP_DEQUANTIZE_LINEAR, "dq", 2, in);
    g->nodes[g->n_nodes - 1].attrs.axis = 0;
    g->nodes[g->n_nodes - 1].attrs.block_size = BLOCK;
    int y = node(g, XF_OP_MATMUL, "mm", 2, (int[]){x, dq});
    xf_graph_add_output(g, y);
    xf_error err = {0};
    ck_assert_msg(xf_graph_infer_shapes(g, 23, &err) == XF_OK, "%s", err.msg);
    xf_tensor *a = filled(XF_DT_FLOAT16, DIMS(M, K), wave), *ref = NULL, *got = NULL;
    run_on(g, "cpu_ref", false, a, &ref, 1, NULL, NULL);
    xf_session *s;
    ck_assert_msg(xf_session_create(g, 23, "cpu", NULL, &s, &err) == XF_OK, "%s", err.msg);
    int counts[XF_OP_COUNT + 1];
    xf_graph_count_ops(xf_session_graph(s), counts);
    ck_assert_int_eq(counts[XF_OP_MS_MATMUL_NBITS], 1);
    ck_assert_int_eq(counts[XF_OP_DEQUANTIZE_LINEAR], 0);
    ck_assert_msg(xf_session_run(s, &a, &got, &err) == XF_OK, "%s", err.msg);
    xf_session_free(s);
    expect_close(got, ref, 4e-3, "int4 pair");
    xf_tensor_release(got);
    xf_tensor_release(ref);
    xf_tensor_release(a);
    xf_graph_free(g);
}
END_TEST

/* Two float16 inputs whose names (600 characters) share their first 511,
 * added on cpu: the Casts' values get names of their own (a name cut to
 * the buffer's size was found again and again, forever). */
START_TEST(long_names_get_casts)
{
    char a[601], b[601];
    memset(a, 'v', 600);
    a[600] = 0;
    memcpy(b, a, sizeof b);
    b[599] = 'w';
    xf_graph *g = xf_graph_create("long");
    xf_shape xs = xf_shape_make(1, (int64_t[]){4});
    int x = xf_graph_add_input(g, a, XF_DT_FLOAT16, &xs), y = xf_graph_add_input(g, b, XF_DT_FLOAT16, &xs);
    int sum = node(g, XF_OP_ADD, "sum", 2, (int[]){x, y});
    xf_graph_add_output(g, sum);
    xf_error err = {0};
    ck_assert_msg(xf_graph_infer_shapes(g, 23, &err) == XF_OK, "%s", err.msg);
    xf_tensor *in[2] = {filled(XF_DT_FLOAT16, DIMS(4), wave), filled(XF_DT_FLOAT16, DIMS(4), small_wave)}, *out = NULL;
    xf_session *s;
    ck_assert_msg(xf_session_create(g, 23, "cpu", NULL, &s, &err) == XF_OK, "%s", err.msg);
    ck_assert_msg(xf_session_run(s, in, &out, &err) == XF_OK, "%s", err.msg);
    for (int i = 0; i < 4; i++)
        ck_assert(fabs(xf_tensor_get_f64(out, i) - (xf_tensor_get_f64(in[0], i) + xf_tensor_get_f64(in[1], i))) < 2e-3);
    xf_session_free(s);
    xf_tensor_release(out);
    xf_tensor_release(in[0]);
    xf_tensor_release(in[1]);
    xf_graph_free(g);
}
END_TEST

static Suite *half_suite(void)
{
    Suite *s = suite_create("half_cpu");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, conv_net_runs_in_float);
    tcase_add_test(tc, discrete_ops_read_rounded_values);
    tcase_add_test(tc, casts_match_cpu_ref);
    tcase_add_test(tc, gelu_of_half_constants_folds);
    tcase_add_test(tc, attention_runs_in_float);
    tcase_add_test(tc, nbits_ops_take_half_types);
    tcase_add_test(tc, random_graphs_in_float16);
    tcase_add_test(tc, ms_attention_family_takes_float16);
    tcase_add_test(tc, long_names_get_casts);
    tcase_add_test(tc, int4_qdq_pair_lowered);
    suite_add_tcase(s, tc);
    /* a case of its own, which the AVX2 run leaves out (CK_RUN_CASE) */
    TCase *zoo = tcase_create("zoo");
    tcase_add_loop_test(zoo, zoo_models_in_float16, 0, 8);
    suite_add_tcase(s, zoo);
    return s;
}

int main(void) { return xf_test_run_suite(half_suite()); }
