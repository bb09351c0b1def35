/* The `cuda` backend against cpu_ref.
 *
 * With a GPU: every op the device path runs is checked on random shapes
 * (odd sizes, strides, pads including asymmetric ones, groups, dilations,
 * broadcasting), then the bundled example and the zoo models at reduced
 * sizes.  Without a GPU these are skipped with a visible line, and what
 * can be checked is: an op the backend cannot run is refused by name before
 * any device is touched, a session fails with "no CUDA device: ...", and
 * xflow-run says so in one line with a non-zero exit; the backend's module
 * is loaded only when asked for.  Without the CUDA
 * toolkit the backend is absent and the suite checks only that. */
#include "backend_util.h"
#include "conformance_util.h"
#include "core_builders.h"
#include "xf_proto.h"
#include "xf_runtime.h"
#include "xf_test_util.h"
#include "zoo.h"

#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---------------------------------------------------------------- device presence */

/* 1: a GPU; 0: none (reason in why). */
static int gpu_state = -1;
static char gpu_why[1100];

static bool have_gpu(void)
{
    if (gpu_state < 0) {
        const xf_backend *be = xf_backend_find("cuda");
        xf_error err = {0};
        void *ctx = NULL;
        if (!be) {
            snprintf(gpu_why, sizeof gpu_why, "this build has no cuda backend");
            gpu_state = 0;
        } else if (be->context_create(NULL, &ctx, &err) != XF_OK) {
            snprintf(gpu_why, sizeof gpu_why, "%s", err.msg);
            gpu_state = 0;
        } else {
            be->context_free(ctx);
            gpu_state = 1;
        }
    }
    return gpu_state == 1;
}

/* Whether a GPU is usable, asked in a child process: CUDA state does not
 * survive fork(), so the parent that forks every test must not touch it. */
static bool probe_gpu(char *why, size_t n)
{
    int fd[2];
    if (pipe(fd) != 0) {
        snprintf(why, n, "pipe: %s", strerror(errno));
        return false;
    }
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        bool ok = have_gpu();
        ssize_t w = write(fd[1], gpu_why, strlen(gpu_why));
        (void)w;
        _exit(ok ? 0 : 1);
    }
    close(fd[1]);
    ssize_t got = pid > 0 ? read(fd[0], why, n - 1) : -1;
    why[got > 0 ? got : 0] = '\0';
    close(fd[0]);
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) {
        snprintf(why, n, "cannot start the probe: %s", strerror(errno));
        return false;
    }
    if (WIFSIGNALED(status))
        snprintf(why, n, "the device probe died with signal %d", WTERMSIG(status));
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* ---------------------------------------------------------------- random graphs */

static int add_input(xf_graph *g, xf_shape s) { return xf_bt_input(g, XF_DT_FLOAT, s); }

/* Runs g on cpu_ref and on cuda and compares every output. */
static void check_graph(const xf_graph *g, int64_t opset, double atol, double rtol, const char *what)
{
    xf_bt_check_graph(g, opset, "cuda", false, atol, rtol, what);
}

/* ---------------------------------------------------------------- without a device */

static xf_graph *relu_graph(void)
{
    xf_graph *g = xf_graph_create("relu");
    int x = add_input(g, SHAPE(2, 3));
    xf_bt_finish_single(g, XF_OP_RELU, 1, &x);
    return g;
}

/* The registry and the error a machine without a GPU gives. */
START_TEST(no_device_session)
{
    const xf_backend *be = xf_backend_find("cuda");
    xf_graph *g = relu_graph();
    xf_session *s = NULL;
    xf_error err = {0};
    xf_status st = xf_session_create(g, 17, "cuda", NULL, &s, &err);
    if (!be) {
        ck_assert_int_eq(st, XF_ERR_INVALID);
        ck_assert_msg(strstr(err.msg, "unknown backend 'cuda'") != NULL, "message: %s", err.msg);
    } else if (!have_gpu()) {
        ck_assert_int_eq(st, XF_ERR_UNSUPPORTED);
        ck_assert_msg(strncmp(err.msg, "no CUDA device: ", 16) == 0, "message: %s", err.msg);
        ck_assert_ptr_null(s);
    } else {
        ck_assert_msg(st == XF_OK, "%s", err.msg);
        ck_assert_ptr_nonnull(s);
        ck_assert(!xf_session_is_dynamic(s));
    }
    xf_session_free(s);
    xf_graph_free(g);
}
END_TEST

/* Every op of every zoo model is taken (on the device or through cpu_ref):
 * session creation gets past the support check, which runs before the
 * device is looked for. */
START_TEST(zoo_ops_supported)
{
    if (!xf_backend_find("cuda"))
        return;
    xf_model *m = NULL;
    xf_error err = {0};
    ck_assert_msg(xf_zoo_build_sized(xf_bt_zoo_runs[_i].name, 1, xf_bt_zoo_runs[_i].size, &m, &err) == XF_OK, "%s: %s",
                  xf_bt_zoo_runs[_i].name, err.msg);
    xf_session *s = NULL;
    xf_status st = xf_session_create(m->graph, xf_model_opset(m), "cuda", NULL, &s, &err);
    if (have_gpu())
        ck_assert_msg(st == XF_OK, "%s: %s", xf_bt_zoo_runs[_i].name, err.msg);
    else
        ck_assert_msg(st == XF_ERR_UNSUPPORTED && !strncmp(err.msg, "no CUDA device: ", 16), "%s: %s",
                      xf_bt_zoo_runs[_i].name, err.msg);
    xf_session_free(s);
    xf_model_free(m);
}
END_TEST

/* MaxPool with its Indices output (which cuDNN's pooling does not give)
 * and MaxUnpool run through cpu_ref on host copies: the support check
 * takes them, before any device is needed; with a GPU every output is
 * cpu_ref's. */
START_TEST(pool_indices_host_fallback)
{
    if (!xf_backend_find("cuda"))
        return;
    if (have_gpu()) {
        xf_bt_pool_indices(check_graph);
        return;
    }
    xf_graph *g = xf_bt_pool_indices_graph(0);
    xf_session *s = NULL;
    xf_error err = {0};
    ck_assert_int_eq(xf_session_create(g, 12, "cuda", NULL, &s, &err), XF_ERR_UNSUPPORTED);
    ck_assert_msg(!strncmp(err.msg, "no CUDA device: ", 16), "message: %s", err.msg);
    xf_graph_free(g);
}
END_TEST

/* xflow-run: one clear line and a non-zero exit without a GPU, the outputs
 * with one. */
START_TEST(no_device_tool)
{
    char cmd[4096], *out = NULL;
    snprintf(cmd, sizeof cmd, "%s --backend cuda %s/examples/inception_block.onnx", xf_test_tool("xflow-run"),
             XF_SOURCE_DIR);
    int rc = xf_test_run(cmd, &out);
    ck_assert_ptr_nonnull(out);
    if (!xf_backend_find("cuda")) {
        ck_assert_int_ne(rc, 0);
        ck_assert_msg(strstr(out, "unknown backend 'cuda'") != NULL, "output: %s", out);
    } else if (!have_gpu()) {
        ck_assert_msg(rc != 0, "exit 0 without a GPU: %s", out);
        ck_assert_msg(rc < 128, "xflow-run died (status %d): %s", rc, out);
        ck_assert_msg(strstr(out, "no CUDA device: ") != NULL, "output: %s", out);
        char *nl = strchr(out, '\n');
        ck_assert_msg(nl && nl[1] == '\0', "more than one line: %s", out);
    } else {
        ck_assert_msg(rc == 0, "xflow-run --backend cuda failed: %s", out);
    }
    free(out);
}
END_TEST

/* The cuda backend is a module loaded when it is first asked for: a
 * program of a build that has it loads it, with the CUDA libraries, only
 * then (a run on the CPU maps no cuBLAS); a module that does not load is
 * named in one line and a non-zero exit. */
START_TEST(module_loaded_on_demand)
{
    ck_assert_msg(!xf_backend_unavailable("cuda"), "the cuda backend did not load: %s",
                  xf_backend_unavailable("cuda"));
    if (!xf_backend_find("cuda")) {
        printf("test_cuda_backend: this build has no cuda backend\n");
        return;
    }
    const char *tool = xf_test_tool("xflow-run");
    char cmd[4096], *out = NULL;
    /* the dynamic loader names every library it opens */
    snprintf(cmd, sizeof cmd, "LD_DEBUG=files %s %s/examples/inception_block.onnx -q", tool, XF_SOURCE_DIR);
    ck_assert_int_eq(xf_test_run(cmd, &out), 0);
    ck_assert_msg(strstr(out, "calling init:") != NULL, "no LD_DEBUG output: %.300s", out);
    ck_assert_msg(strstr(out, "libcublas") == NULL && strstr(out, "libxflow_cuda") == NULL,
                  "a run on cpu_ref loaded the CUDA libraries");
    free(out);
    snprintf(cmd, sizeof cmd, "LD_DEBUG=files %s %s/examples/inception_block.onnx --backend cuda -q", tool,
             XF_SOURCE_DIR);
    xf_test_run(cmd, &out);
    ck_assert_msg(strstr(out, "libxflow_cuda") != NULL && strstr(out, "libcublas") != NULL,
                  "--backend cuda did not load the module: %.300s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "XFLOW_CUDA_MODULE=/nonexistent/libxflow_cuda.so %s %s/examples/inception_block.onnx "
             "--backend cuda", tool, XF_SOURCE_DIR);
    int rc = xf_test_run(cmd, &out);
    ck_assert_msg(rc != 0 && rc < 128, "status %d: %s", rc, out);
    ck_assert_msg(strstr(out, "backend 'cuda' is unavailable: its module did not load: /nonexistent/libxflow_cuda.so")
                  != NULL, "output: %s", out);
    char *nl = strchr(out, '\n');
    ck_assert_msg(nl && nl[1] == '\0', "more than one line: %s", out);
    free(out);
}
END_TEST

/* An op neither the device path nor cpu_ref runs is refused by name, before
 * any device is needed. */
START_TEST(refused_by_name)
{
    if (!xf_backend_find("cuda")) {
        printf("test_cuda_backend: this build has no cuda backend\n");
        return;
    }
    xf_graph *g = xf_graph_create("custom");
    int x = add_input(g, SHAPE(2, 3));
    int y = xf_graph_add_value(g, "y", XF_DT_FLOAT, &(xf_shape){.ndim = 2, .dims = {2, 3}});
    int n = xf_graph_add_node(g, XF_OP_OPAQUE, "custom", 1, &x, 1, &y);
    g->nodes[n].opaque = xf_opaque_create("FooBar", "com.example", NULL, 0);
    xf_graph_add_output(g, y);
    xf_session *s = NULL;
    xf_error err = {0};
    ck_assert_int_eq(xf_session_create(g, 17, "cuda", NULL, &s, &err), XF_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(err.msg, "backend cuda does not support op com.example:FooBar (node 'custom')") != NULL,
                  "message: %s", err.msg);
    xf_graph_free(g);

    /* Conv on int64: no device path and no cpu_ref kernel */
    g = xf_graph_create("int conv");
    x = xf_bt_input(g, XF_DT_INT64, SHAPE(1, 2, 5, 5));
    int w = xf_bt_input(g, XF_DT_INT64, SHAPE(3, 2, 3, 3));
    n = xf_bt_finish_single(g, XF_OP_CONV, 2, (int[]){x, w});
    xf_bt_set_window(attrs(g, n), 2, NULL, (int64_t[]){1, 1}, (int64_t[]){0, 0}, (int64_t[]){0, 0}, (int64_t[]){1, 1});
    ck_assert_int_eq(xf_session_create(g, 17, "cuda", NULL, &s, &err), XF_ERR_UNSUPPORTED);
    char want[96];
    snprintf(want, sizeof want, "backend cuda does not support op Conv on %s", xf_dtype_name(XF_DT_INT64));
    ck_assert_msg(strstr(err.msg, want) != NULL, "message: %s", err.msg);
    xf_graph_free(g);
}
END_TEST

/* ---------------------------------------------------------------- convolution, pools */

START_TEST(conv_random)
{
    ck_assert_msg(have_gpu(), "the GPU found at start-up is not usable in this test: %s", gpu_why);
    /* one case in three with asymmetric pads */
    xf_bt_conv_random(check_graph, 40, true);
}
END_TEST

/* Weights computed in the graph (a graph input here), bias + Relu fused. */
START_TEST(conv_runtime_weights)
{
    ck_assert_msg(have_gpu(), "the GPU found at start-up is not usable in this test: %s", gpu_why);
    xf_graph *g = xf_graph_create("conv");
    int x = add_input(g, SHAPE(1, 16, 9, 9));
    int w = add_input(g, SHAPE(32, 16, 3, 3));
    int b = add_input(g, SHAPE(32));
    int n = xf_bt_finish_single(g, XF_OP_CONV, 3, (int[]){x, w, b});
    xf_bt_set_window(attrs(g, n), 2, NULL, (int64_t[]){1, 1}, (int64_t[]){1, 1}, (int64_t[]){1, 1}, (int64_t[]){1, 1});
    attrs(g, n)->activation = XF_ACT_RELU;
    check_graph(g, 17, 1e-4, 1e-3, "conv with weights as graph inputs");
    xf_graph_free(g);
}
END_TEST

START_TEST(pool_random)
{
    ck_assert_msg(have_gpu(), "the GPU found at start-up is not usable in this test: %s", gpu_why);
    xf_bt_pool_random(check_graph, &(xf_bt_pool_forms){.cases = 40, .count_pad_with_ceil = true});
}
END_TEST

/* ---------------------------------------------------------------- matrix products */

START_TEST(matmul_random)
{
    ck_assert_msg(have_gpu(), "the GPU found at start-up is not usable in this test: %s", gpu_why);
    xf_bt_matmul_random(check_graph, 10, 2);
}
END_TEST

START_TEST(gemm_forms)
{
    ck_assert_msg(have_gpu(), "the GPU found at start-up is not usable in this test: %s", gpu_why);
    xf_bt_gemm_forms(check_graph);
}
END_TEST

/* ---------------------------------------------------------------- elementwise */

START_TEST(unary_all)
{
    ck_assert_msg(have_gpu(), "the GPU found at start-up is not usable in this test: %s", gpu_why);
    static const xf_op ops[] = {XF_OP_RELU, XF_OP_LEAKY_RELU, XF_OP_SIGMOID, XF_OP_TANH, XF_OP_ABS, XF_OP_NEG,
                                XF_OP_EXP, XF_OP_LOG, XF_OP_SQRT, XF_OP_ELU, XF_OP_SOFTPLUS, XF_OP_RECIPROCAL,
                                XF_OP_FLOOR, XF_OP_CEIL, XF_OP_ERF, XF_OP_SIN, XF_OP_COS, XF_OP_HARD_SIGMOID,
                                XF_OP_HARD_SWISH, XF_OP_SIGN, XF_OP_ROUND, XF_OP_TAN, XF_OP_ATAN, XF_OP_ASIN,
                                XF_OP_ACOS, XF_OP_SINH, XF_OP_COSH, XF_OP_ASINH, XF_OP_ACOSH, XF_OP_ATANH,
                                XF_OP_SOFTSIGN, XF_OP_THRESHOLDED_RELU, XF_OP_SELU, XF_OP_CELU, XF_OP_SHRINK,
                                XF_OP_MISH, XF_OP_GELU};
    xf_bt_unary_ops(check_graph, ops, (int)(sizeof ops / sizeof *ops));
}
END_TEST

START_TEST(binary_broadcasting)
{
    ck_assert_msg(have_gpu(), "the GPU found at start-up is not usable in this test: %s", gpu_why);
    static const xf_op ops[] = {XF_OP_ADD, XF_OP_SUB, XF_OP_MUL, XF_OP_DIV, XF_OP_POW, XF_OP_MAX,
                                XF_OP_MIN, XF_OP_SUM, XF_OP_EQUAL, XF_OP_GREATER, XF_OP_LESS,
                                XF_OP_GREATER_OR_EQUAL, XF_OP_LESS_OR_EQUAL};
    static const xf_dtype types[] = {XF_DT_FLOAT, XF_DT_INT64, XF_DT_INT32};
    /* the small operand first in the odd forms */
    for (size_t o = 0; o < sizeof ops / sizeof *ops; o++)
        for (int f = 0; f < XF_BT_BINARY_FORMS; f++)
            for (int tt = 0; tt < 3; tt++) {
                if (ops[o] == XF_OP_POW && types[tt] == XF_DT_FLOAT && f % 2)
                    continue; /* random negative bases with fractional exponents: NaN on both sides, tested once */
                xf_bt_binary_case(check_graph, ops[o], types[tt], f, f % 2);
            }
    /* Sum of three, and Max of one */
    xf_graph *g = xf_graph_create("variadic");
    int a = add_input(g, SHAPE(4, 1, 6)), b = add_input(g, SHAPE(5, 1)), c = add_input(g, SHAPE(4, 5, 6));
    xf_bt_finish_single(g, XF_OP_SUM, 3, (int[]){a, b, c});
    check_graph(g, 17, 1e-5, 1e-4, "Sum of three");
    xf_graph_free(g);
    g = xf_graph_create("variadic1");
    a = add_input(g, SHAPE(3, 4));
    xf_bt_finish_single(g, XF_OP_MAX, 1, &a);
    check_graph(g, 17, 0, 0, "Max of one");
    xf_graph_free(g);
}
END_TEST

START_TEST(where_clip_cast)
{
    ck_assert_msg(have_gpu(), "the GPU found at start-up is not usable in this test: %s", gpu_why);
    xf_graph *g = xf_graph_create("where");
    int x = add_input(g, SHAPE(3, 1, 5)), y = add_input(g, SHAPE(4, 1));
    int cond = out0(g, NODE(g, XF_OP_GREATER, x, y));
    int w = NODE(g, XF_OP_WHERE, cond, x, xf_bt_random_const(g, SHAPE(5), false));
    xf_graph_add_output(g, out0(g, w));
    check_graph(g, 17, 0, 0, "Greater -> Where");
    xf_graph_free(g);

    for (int form = 0; form < 3; form++) {
        g = xf_graph_create("clip");
        x = add_input(g, SHAPE(6, 7));
        float lo = -0.3f, hi = 0.4f;
        int ins[3] = {x, constant(g, NULL, XF_DT_FLOAT, SCALAR, &lo), form == 1 ? -1 : constant(g, NULL, XF_DT_FLOAT, SCALAR, &hi)};
        int n = xf_bt_finish_single(g, XF_OP_CLIP, form == 2 ? 1 : 3, ins);
        if (form == 2) {
            attrs(g, n)->has_clip_attrs = true;
            attrs(g, n)->clip_min = -0.1f;
            attrs(g, n)->clip_max = 0.2f;
        }
        check_graph(g, form == 2 ? 6 : 17, 0, 0, "Clip");
        xf_graph_free(g);
    }

    static const xf_dtype chain[] = {XF_DT_FLOAT, XF_DT_INT32, XF_DT_DOUBLE, XF_DT_INT8, XF_DT_FLOAT16,
                                     XF_DT_INT64, XF_DT_BOOL, XF_DT_UINT8, XF_DT_FLOAT};
    g = xf_graph_create("casts");
    x = add_input(g, SHAPE(4, 9));
    int v = out0(g, NODE(g, XF_OP_MUL, x, xf_bt_random_const(g, SHAPE(1), false)));
    for (size_t i = 1; i < sizeof chain / sizeof *chain; i++) {
        int n = NODE(g, XF_OP_CAST, v);
        attrs(g, n)->to = chain[i];
        v = out0(g, n);
        xf_graph_add_output(g, v);
    }
    check_graph(g, 17, 1e-3, 1e-3, "Cast chain");
    xf_graph_free(g);
}
END_TEST

/* ---------------------------------------------------------------- data movement */

START_TEST(concat_split_transpose)
{
    ck_assert_msg(have_gpu(), "the GPU found at start-up is not usable in this test: %s", gpu_why);
    for (int axis = -4; axis < 4; axis++) {
        xf_graph *g = xf_graph_create("concat");
        int n = xf_bt_concat3(g, axis);
        int sp_out[3];
        for (int k = 0; k < 3; k++)
            sp_out[k] = xf_graph_add_value(g, NULL, XF_DT_UNDEFINED, NULL);
        int sp = xf_graph_add_node(g, XF_OP_SPLIT, "split", 1, (int[]){out0(g, n)}, 3, sp_out);
        attrs(g, sp)->axis = axis;
        attrs(g, sp)->n_split = 3;
        attrs(g, sp)->split[0] = 3;
        attrs(g, sp)->split[1] = 1;
        attrs(g, sp)->split[2] = 2;
        for (int k = 0; k < 3; k++)
            xf_graph_add_output(g, sp_out[k]);
        int t = NODE(g, XF_OP_TRANSPOSE, out0(g, n));
        attrs(g, t)->n_perm = 4;
        memcpy(attrs(g, t)->perm, (int64_t[]){2, 0, 3, 1}, sizeof(int64_t) * 4);
        xf_graph_add_output(g, out0(g, t));
        char what[48];
        snprintf(what, sizeof what, "Concat/Split/Transpose axis %d", axis);
        check_graph(g, 11, 0, 0, what);
        xf_graph_free(g);
    }
}
END_TEST

START_TEST(slice_pad_expand_gather)
{
    ck_assert_msg(have_gpu(), "the GPU found at start-up is not usable in this test: %s", gpu_why);
    /* Slice with negative and reversed steps */
    xf_graph *g = xf_graph_create("slice");
    int x = add_input(g, SHAPE(5, 8, 7));
    int n = xf_bt_finish_single(g, XF_OP_SLICE, 5,
                          (int[]){x, CONST_I64(g, 1, -1, 6), CONST_I64(g, 4, 0, -100), CONST_I64(g, 0, 1, 2),
                                  CONST_I64(g, 2, -1, -2)});
    (void)n;
    check_graph(g, 17, 0, 0, "Slice");
    xf_graph_free(g);

    /* Pad in every mode, with cropping in constant mode */
    for (int mode = 0; mode < 3; mode++) {
        g = xf_graph_create("pad");
        x = add_input(g, SHAPE(3, 4, 5));
        float value = 0.75f;
        int pads = mode == 0 ? CONST_I64(g, 1, 0, -1, 2, 3, 1) : CONST_I64(g, 1, 0, 2, 2, 3, 1);
        n = xf_bt_finish_single(g, XF_OP_PAD, 3, (int[]){x, pads, constant(g, NULL, XF_DT_FLOAT, SCALAR, &value)});
        attrs(g, n)->pad_mode = (xf_pad_mode)mode;
        char what[32];
        snprintf(what, sizeof what, "Pad mode %d", mode);
        check_graph(g, 17, 0, 0, what);
        xf_graph_free(g);
    }

    g = xf_graph_create("expand");
    x = add_input(g, SHAPE(3, 1, 5));
    xf_bt_finish_single(g, XF_OP_EXPAND, 2, (int[]){x, CONST_I64(g, 2, 3, 4, 5)});
    check_graph(g, 17, 0, 0, "Expand");
    xf_graph_free(g);

    for (int axis = 0; axis < 3; axis++) {
        g = xf_graph_create("gather");
        x = add_input(g, SHAPE(4, 6, 5));
        int64_t idx[] = {3, -1, 0, 2, 2, 1};
        int iv = constant(g, NULL, XF_DT_INT64, SHAPE(2, 3), idx);
        n = xf_bt_finish_single(g, XF_OP_GATHER, 2, (int[]){x, iv});
        attrs(g, n)->axis = axis;
        char what[32];
        snprintf(what, sizeof what, "Gather axis %d", axis);
        check_graph(g, 17, 0, 0, what);
        xf_graph_free(g);
    }

    /* Reshape, Flatten, Squeeze, Unsqueeze, Identity */
    g = xf_graph_create("reshapes");
    x = add_input(g, SHAPE(2, 1, 6));
    int r = out0(g, NODE(g, XF_OP_RESHAPE, x, CONST_I64(g, 3, -1)));
    int u = out0(g, NODE(g, XF_OP_UNSQUEEZE, r, CONST_I64(g, 0)));
    int s = out0(g, NODE(g, XF_OP_SQUEEZE, u, CONST_I64(g, 0)));
    int f = NODE(g, XF_OP_FLATTEN, s);
    attrs(g, f)->axis = 0;
    int id = NODE(g, XF_OP_IDENTITY, out0(g, f));
    xf_graph_add_output(g, out0(g, id));
    check_graph(g, 17, 0, 0, "reshapes");
    xf_graph_free(g);
}
END_TEST

/* A Gather index out of range fails the run on cuda as on cpu_ref, naming
 * the node (the kernel raises a flag on the device, read once the run's
 * outputs are copied out, or after the node when profiling), with a Relu
 * after it so that the error is not the last node's; a later run with
 * good indices succeeds and matches cpu_ref. */
START_TEST(gather_out_of_range)
{
    ck_assert_msg(have_gpu(), "the GPU found at start-up is not usable in this test: %s", gpu_why);
    xf_graph *g = xf_graph_create("gather");
    int x = add_input(g, SHAPE(4, 6));
    int idx = xf_bt_input(g, XF_DT_INT64, SHAPE(3));
    int n = node(g, XF_OP_GATHER, "pick", 2, (int[]){x, idx}, 1);
    attrs(g, n)->axis = 1;
    xf_graph_add_output(g, out0(g, NODE(g, XF_OP_RELU, out0(g, n))));
    xf_shape xs = SHAPE(4, 6), is = SHAPE(3);
    xf_tensor *in[2] = {xf_tensor_random(XF_DT_FLOAT, &xs, 3), NULL};
    xf_tensor *bad = xf_tensor_from_data(XF_DT_INT64, &is, (int64_t[]){0, 6, -1});
    xf_tensor *good = xf_tensor_from_data(XF_DT_INT64, &is, (int64_t[]){5, -6, 2});
    ck_assert(in[0] && bad && good);
    static const char *const backends[] = {"cpu_ref", "cuda"};
    xf_tensor *result[2] = {NULL, NULL};
    double t[2];
    for (int b = 0; b < 2; b++) {
        xf_session *s = NULL;
        xf_error err = {0};
        ck_assert_msg(xf_session_create(g, 17, backends[b], NULL, &s, &err) == XF_OK, "%s: %s", backends[b],
                      err.msg);
        for (int profile = 0; profile < 2; profile++) {
            xf_tensor *out = NULL;
            in[1] = bad;
            err.msg[0] = '\0';
            xf_status st = profile ? xf_session_profile(s, in, 1, 2, t, &err) : xf_session_run(s, in, &out, &err);
            ck_assert_msg(st == XF_ERR_INVALID, "%s%s: status %d with index 6 of 6: %s", backends[b],
                          profile ? " (profiling)" : "", (int)st, err.msg);
            ck_assert_ptr_null(out);
            ck_assert_msg(strstr(err.msg, "node 'pick' (Gather)") && strstr(err.msg, "out of range for axis of size 6"),
                          "%s: message: %s", backends[b], err.msg);
            in[1] = good;
            ck_assert_msg(xf_session_run(s, in, &result[b], &err) == XF_OK, "%s after the error: %s", backends[b],
                          err.msg);
            if (!profile) {
                xf_tensor_release(result[b]);
                result[b] = NULL;
            }
        }
        xf_session_free(s);
    }
    double max_abs = 0, max_rel = 0;
    bool ok = false;
    xf_error err = {0};
    ck_assert(xf_tensor_compare(result[1], result[0], 0, 0, &max_abs, &max_rel, &ok, &err) == XF_OK);
    ck_assert_msg(ok, "Gather after an error differs from cpu_ref: max abs %g", max_abs);
    for (int k = 0; k < 2; k++)
        xf_tensor_release(result[k]);
    xf_tensor_release(in[0]);
    xf_tensor_release(bad);
    xf_tensor_release(good);
    xf_graph_free(g);
}
END_TEST

/* ---------------------------------------------------------------- normalization, reductions */

START_TEST(softmax_axes)
{
    ck_assert_msg(have_gpu(), "the GPU found at start-up is not usable in this test: %s", gpu_why);
    xf_bt_softmax_axes(check_graph);
}
END_TEST

START_TEST(batch_norm_layer_norm)
{
    ck_assert_msg(have_gpu(), "the GPU found at start-up is not usable in this test: %s", gpu_why);
    static const int64_t shapes[][5] = {{2, 7}, {2, 7, 5}, {1, 16, 9, 11}, {2, 3, 4, 5, 6}};
    for (int r = 0; r < 4; r++)
        xf_bt_batch_norm_case(check_graph, 2 + r, shapes[r], r == 1 ? 1e-5f : 1e-3f);
    for (int axis = -1; axis >= -3; axis--) {
        xf_graph *g = xf_graph_create("ln");
        int x = add_input(g, SHAPE(3, 4, 300));
        int64_t norm_dims[3] = {3, 4, 300};
        xf_shape ns = xf_shape_make(-axis, norm_dims + 3 + axis);
        int scale = xf_bt_random_const(g, ns, true);
        int bias = axis == -2 ? -1 : xf_bt_random_const(g, SHAPE(300), false);
        int n = xf_bt_finish_single(g, XF_OP_LAYER_NORM, bias >= 0 ? 3 : 2, (int[]){x, scale, bias});
        attrs(g, n)->axis = axis;
        char what[48];
        snprintf(what, sizeof what, "LayerNormalization axis %d", axis);
        check_graph(g, 17, 1e-4, 1e-3, what);
        xf_graph_free(g);
    }
}
END_TEST

/* Mean and InvStdDev from the device kernel. */
START_TEST(layer_norm_stats)
{
    ck_assert_msg(have_gpu(), "the GPU found at start-up is not usable in this test: %s", gpu_why);
    xf_bt_layer_norm_stats(check_graph, "cuda");
}
END_TEST

START_TEST(reductions)
{
    ck_assert_msg(have_gpu(), "the GPU found at start-up is not usable in this test: %s", gpu_why);
    static const xf_op ops[] = {XF_OP_REDUCE_MEAN, XF_OP_REDUCE_SUM, XF_OP_REDUCE_MAX, XF_OP_REDUCE_MIN,
                                XF_OP_REDUCE_PROD};
    /* axes forms: one inner, one outer, two, all (none given), a long axis */
    for (size_t o = 0; o < sizeof ops / sizeof *ops; o++)
        for (int form = 0; form < 5; form++) {
            xf_graph *g = xf_graph_create("reduce");
            int x = add_input(g, form == 4 ? SHAPE(3, 1000) : SHAPE(3, 5, 7, 2));
            int n = xf_bt_finish_single(g, ops[o], 1, &x);
            xf_attrs *a = attrs(g, n);
            a->keepdims = form % 2;
            static const int64_t axes[][2] = {{-1, 0}, {0, 0}, {1, 3}, {0, 0}, {1, 0}};
            static const int n_axes[] = {1, 1, 2, 0, 1};
            a->has_axes = n_axes[form] > 0;
            a->n_axes = n_axes[form];
            memcpy(a->axes, axes[form], sizeof axes[form]);
            char what[64];
            snprintf(what, sizeof what, "%s form %d", xf_op_name(ops[o]), form);
            check_graph(g, 11, 1e-4, 1e-3, what);
            xf_graph_free(g);
        }
}
END_TEST

/* Ops with no device path run through cpu_ref on host copies, between
 * device ops. */
START_TEST(host_fallback)
{
    ck_assert_msg(have_gpu(), "the GPU found at start-up is not usable in this test: %s", gpu_why);
    xf_graph *g = xf_graph_create("shape");
    int x = add_input(g, SHAPE(2, 3, 4));
    int sh = out0(g, NODE(g, XF_OP_SHAPE, x));
    int cs = out0(g, NODE(g, XF_OP_CONSTANT_OF_SHAPE, sh));
    int sum = out0(g, NODE(g, XF_OP_ADD, x, cs));
    int neg = out0(g, NODE(g, XF_OP_NEG, sum));
    xf_graph_add_output(g, neg);
    xf_graph_add_output(g, sh);
    check_graph(g, 17, 0, 0, "Shape -> ConstantOfShape -> Add");
    xf_graph_free(g);
}
END_TEST

/* ---------------------------------------------------------------- whole models */

START_TEST(inception_example)
{
    ck_assert_msg(have_gpu(), "the GPU found at start-up is not usable in this test: %s", gpu_why);
    xf_bt_inception_example(check_graph);
}
END_TEST

START_TEST(zoo_models)
{
    ck_assert_msg(have_gpu(), "the GPU found at start-up is not usable in this test: %s", gpu_why);
    xf_model *m = NULL;
    xf_error err = {0};
    ck_assert_msg(xf_zoo_build_sized(xf_bt_zoo_runs[_i].name, 1, xf_bt_zoo_runs[_i].size, &m, &err) == XF_OK, "%s: %s",
                  xf_bt_zoo_runs[_i].name, err.msg);
    check_graph(m->graph, xf_model_opset(m), -1e-3, 1e-3, xf_bt_zoo_runs[_i].name);
    xf_model_free(m);
}
END_TEST

/* The zoo's models made float16 run on the device as float runs between
 * Casts (half_runs.c): their outputs are the float models' on the same
 * weights and inputs (on cpu_ref), to float16 rounding. */
START_TEST(zoo_models_float16)
{
    ck_assert_msg(have_gpu(), "the GPU found at start-up is not usable in this test: %s", gpu_why);
    xf_model *mh = NULL, *mf = NULL;
    xf_error err = {0};
    const char *name = xf_bt_zoo_runs[_i].name;
    xf_bt_zoo_half_pair(&xf_bt_zoo_runs[_i], &mh, &mf);
    int64_t opset = xf_model_opset(mf);
    const xf_graph *gh = mh->graph, *gf = mf->graph;
    ck_assert(gh->n_inputs <= 8 && gh->n_outputs <= 8);
    xf_tensor *inh[8], *inf[8], *want[8] = {0}, *got[8] = {0};
    for (int k = 0; k < gh->n_inputs; k++) {
        inh[k] = xf_tensor_random(XF_DT_FLOAT16, &gh->values[gh->inputs[k]].shape, 77u + (uint64_t)k);
        inf[k] = xf_tensor_create(XF_DT_FLOAT, &inh[k]->shape);
        ck_assert(inh[k] && inf[k]);
        for (int64_t i = 0; i < xf_tensor_numel(inh[k]); i++)
            ((float *)inf[k]->data)[i] = (float)xf_tensor_get_f64(inh[k], i);
    }
    xf_session *s = NULL;
    ck_assert_msg(xf_session_create(gf, opset, "cpu_ref", NULL, &s, &err) == XF_OK, "%s", err.msg);
    ck_assert_msg(xf_session_run(s, inf, want, &err) == XF_OK, "%s", err.msg);
    xf_session_free(s);
    ck_assert_msg(xf_session_create(gh, opset, "cuda", NULL, &s, &err) == XF_OK, "%s", err.msg);
    ck_assert_msg(xf_session_run(s, inh, got, &err) == XF_OK, "%s", err.msg);
    xf_session_free(s);
    for (int k = 0; k < gh->n_outputs; k++) {
        ck_assert_int_eq(got[k]->dtype, XF_DT_FLOAT16);
        double big = 0, worst = 0;
        for (int64_t i = 0; i < xf_tensor_numel(want[k]); i++)
            big = fmax(big, fabs(xf_tensor_get_f64(want[k], i)));
        for (int64_t i = 0; i < xf_tensor_numel(want[k]); i++)
            worst = fmax(worst, fabs(xf_tensor_get_f64(got[k], i) - xf_tensor_get_f64(want[k], i)));
        ck_assert_msg(worst <= 1e-2 * big, "%s output %d: off by %g (largest %g)", name, k, worst, big);
        xf_tensor_release(got[k]);
        xf_tensor_release(want[k]);
    }
    for (int k = 0; k < gh->n_inputs; k++) {
        xf_tensor_release(inh[k]);
        xf_tensor_release(inf[k]);
    }
    xf_model_free(mh);
    xf_model_free(mf);
}
END_TEST

/* Per-node profiling times every node on the device's clock (CUDA events):
 * each time positive, convolutions (the bulk of the work) above zero. */
START_TEST(profile_nodes)
{
    ck_assert_msg(have_gpu(), "the GPU found at start-up is not usable in this test: %s", gpu_why);
    xf_model *m = NULL;
    xf_error err = {0};
    ck_assert_msg(xf_model_load(XF_SOURCE_DIR "/examples/inception_block.onnx", NULL, &m, &err) == XF_OK, "%s",
                  err.msg);
    xf_session *s = NULL;
    ck_assert_msg(xf_session_create(m->graph, xf_model_opset(m), "cuda", NULL, &s, &err) == XF_OK, "%s", err.msg);
    const xf_graph *g = xf_session_graph(s);
    xf_tensor *in = xf_tensor_random(g->values[g->inputs[0]].dtype, &g->values[g->inputs[0]].shape, 5);
    ck_assert_ptr_nonnull(in);
    double *t = calloc((size_t)g->n_nodes, sizeof *t);
    ck_assert_msg(xf_session_profile(s, &in, 2, 5, t, &err) == XF_OK, "%s", err.msg);
    double total = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        ck_assert_msg(t[i] >= 0 && t[i] < 1.0, "node %d: %g s", i, t[i]);
        total += t[i];
    }
    ck_assert_msg(total > 0, "no node took any time");
    free(t);
    xf_tensor_release(in);
    xf_session_free(s);
    xf_model_free(m);
}
END_TEST

/* The device is named, as measured costs are kept per device. */
START_TEST(device_named)
{
    ck_assert_msg(have_gpu(), "the GPU found at start-up is not usable in this test: %s", gpu_why);
    const xf_backend *be = xf_backend_find("cuda");
    ck_assert_ptr_nonnull(be->device_name);
    void *ctx = NULL;
    xf_error err = {0};
    ck_assert_msg(be->context_create(NULL, &ctx, &err) == XF_OK, "%s", err.msg);
    char name[200] = "";
    be->device_name(ctx, name, sizeof name);
    be->context_free(ctx);
    printf("cuda device: %s\n", name);
    ck_assert_msg(strstr(name, " sm_") != NULL && strlen(name) > 4, "device name '%s'", name);
}
END_TEST

/* ---------------------------------------------------------------- ONNX node cases */

/* Every ONNX node case that passes on cpu_ref and that the backend takes
 * passes on cuda too (the cases' own tolerances: rtol 1e-3, atol 1e-5).
 * Within a time budget: the line printed says how many cases it reached. */
START_TEST(conformance_node_cases)
{
    ck_assert_msg(have_gpu(), "the GPU found at start-up is not usable in this test: %s", gpu_why);
    xf_log_set(NULL, NULL, XF_LOG_ERROR);
    xf_conformance_tally t;
    xf_conformance_against_ref("cuda", 90, &t);
    ck_assert_msg(t.listed > 0, "no ONNX test data in %s/node", XF_ONNX_TESTDATA);
    printf("cuda conformance (node): %d of %d cases run, %d pass on cpu_ref, of those %d refused by cuda, "
           "%d pass on cuda\n%s", t.cases, t.listed, t.ref_pass, t.refused, t.pass, t.failures);
    ck_assert_int_gt(t.ref_pass, 0);
    ck_assert_msg(t.pass == t.ref_pass - t.refused, "cases passing on cpu_ref but not on cuda:\n%s", t.failures);
}
END_TEST

/* Without arguments: the checks that need no GPU.  With --gpu (its own
 * ctest entry): the op and model checks, or exit status 77, which ctest
 * reports as skipped, with a line saying why. */
int main(int argc, char **argv)
{
    Suite *s = suite_create("cuda_backend");
    if (argc < 2 || strcmp(argv[1], "--gpu") != 0) {
        TCase *basic = tcase_create("no device");
        tcase_add_test(basic, no_device_session);
        tcase_add_test(basic, no_device_tool);
        tcase_add_test(basic, module_loaded_on_demand);
        tcase_add_test(basic, refused_by_name);
        tcase_add_test(basic, pool_indices_host_fallback);
        tcase_add_loop_test(basic, zoo_ops_supported, 0, (int)(sizeof xf_bt_zoo_runs / sizeof *xf_bt_zoo_runs));
        suite_add_tcase(s, basic);
        return xf_test_run_suite(s);
    }
    char why[sizeof gpu_why];
    bool usable = probe_gpu(why, sizeof why);
    if (!usable && strncmp(why, "no CUDA device", 14) != 0 && strncmp(why, "this build has no", 17) != 0) {
        /* a device is there, but the backend cannot start on it */
        printf("test_cuda_backend: FAILED: the cuda backend cannot start: %s\n", why);
        srunner_free(srunner_create(s));
        return 1;
    }
    if (!usable) {
        printf("test_cuda_backend: skipped: no GPU (%s): the op and model checks against cpu_ref did not run\n",
               why);
        srunner_free(srunner_create(s)); /* frees the suite */
        return 77;
    }
    TCase *ops = tcase_create("ops");
    tcase_set_timeout(ops, 300);
    tcase_add_test(ops, conv_random);
    tcase_add_test(ops, conv_runtime_weights);
    tcase_add_test(ops, pool_random);
    tcase_add_test(ops, matmul_random);
    tcase_add_test(ops, gemm_forms);
    tcase_add_test(ops, unary_all);
    tcase_add_test(ops, binary_broadcasting);
    tcase_add_test(ops, where_clip_cast);
    tcase_add_test(ops, concat_split_transpose);
    tcase_add_test(ops, slice_pad_expand_gather);
    tcase_add_test(ops, gather_out_of_range);
    tcase_add_test(ops, softmax_axes);
    tcase_add_test(ops, batch_norm_layer_norm);
    tcase_add_test(ops, layer_norm_stats);
    tcase_add_test(ops, reductions);
    tcase_add_test(ops, host_fallback);
    suite_add_tcase(s, ops);
    TCase *models = tcase_create("models");
    tcase_set_timeout(models, 600);
    tcase_add_test(models, inception_example);
    tcase_add_test(models, profile_nodes);
    tcase_add_test(models, device_named);
    tcase_add_loop_test(models, zoo_models, 0, (int)(sizeof xf_bt_zoo_runs / sizeof *xf_bt_zoo_runs));
    tcase_add_loop_test(models, zoo_models_float16, 0, (int)(sizeof xf_bt_zoo_runs / sizeof *xf_bt_zoo_runs));
    suite_add_tcase(s, models);
    TCase *onnx = tcase_create("onnx node cases");
    tcase_set_timeout(onnx, 300);
    tcase_add_test(onnx, conformance_node_cases);
    suite_add_tcase(s, onnx);
    return xf_test_run_suite(s);
}
