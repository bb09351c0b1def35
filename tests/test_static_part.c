/* The static part of a dynamic session (runtime/session_part.c): in a
 * graph whose shapes depend on run-time values (a NonZero), the nodes
 * whose shapes are all known before a run, and which read only such
 * nodes, constants and inputs of static shape, run as a static session of
 * their own.  The session gives what a fully dynamic one gives, run after
 * run with other inputs, profiles the part's nodes, and leaves out of the
 * part a node of static shape that reads a value of the dynamic rest. */
#include "backend_util.h"
#include "core_builders.h"
#include "xf_runtime.h"
#include "xf_test_util.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* Inputs d [n] (symbolic) and x [1, 8, 6, 5]; the part: c = Conv(x),
 * m = c * 0.5, gt = m > 0.1 (three nodes); the rest: NonZero(gt),
 * GatherND of m at those places, and m + ReduceSum(d) (a static shape,
 * but after a node of the rest).  Outputs m, the gathered values, the
 * sum. */
static xf_graph *part_graph(void)
{
    xf_graph *g = xf_graph_create("static_part");
    xf_shape ds = {.ndim = 1, .dims = {-1}};
    int d = input(g, "d", XF_DT_FLOAT, ds);
    int x = input(g, "x", XF_DT_FLOAT, SHAPE(1, 8, 6, 5));
    int c = xf_bt_conv(g, x, 8, 16, 3, 1, XF_ACT_NONE);
    int m = xf_bt_with_scalar(g, XF_OP_MUL, c, 0.5f);
    int gt = xf_bt_with_scalar(g, XF_OP_GREATER, m, 0.1f);
    int nz = out0(g, NODE(g, XF_OP_NON_ZERO, gt));
    int idx = out0(g, NODE(g, XF_OP_TRANSPOSE, nz));
    int picked = out0(g, NODE(g, XF_OP_GATHER_ND, m, idx));
    int rs = NODE(g, XF_OP_REDUCE_SUM, d);
    attrs(g, rs)->keepdims = 0;
    int sum = out0(g, NODE(g, XF_OP_ADD, m, out0(g, rs)));
    xf_graph_add_output(g, m);
    xf_graph_add_output(g, picked);
    xf_graph_add_output(g, sum);
    return g;
}

static xf_session *make(const xf_graph *g, const char *backend, bool force_dynamic)
{
    xf_session *s = NULL;
    xf_error e = {0};
    xf_session_options opt = {.force_dynamic = force_dynamic};
    ck_assert_msg(xf_session_create(g, 18, backend, &opt, &s, &e) == XF_OK, "%s: %s", backend, e.msg);
    return s;
}

/* Runs s and the fully dynamic cpu_ref session `ref` on the same inputs
 * (d of n elements, x from seed) and compares every output. */
static void same_as_dynamic(xf_session *s, xf_session *ref, int64_t n, uint64_t seed, double tol, const char *what)
{
    xf_shape ds = SHAPE(n), xs = SHAPE(1, 8, 6, 5);
    xf_tensor *in[2] = {xf_tensor_random(XF_DT_FLOAT, &ds, seed), xf_tensor_random(XF_DT_FLOAT, &xs, seed + 1)};
    xf_tensor *got[3] = {NULL}, *want[3] = {NULL};
    xf_error e = {0};
    ck_assert_msg(xf_session_run(s, in, got, &e) == XF_OK, "%s: %s", what, e.msg);
    ck_assert_msg(xf_session_run(ref, in, want, &e) == XF_OK, "%s: %s", what, e.msg);
    for (int k = 0; k < 3; k++) {
        double max_abs = 0, max_rel = 0;
        bool ok = false;
        ck_assert_msg(xf_shape_equal(&got[k]->shape, &want[k]->shape), "%s: output %d's shape", what, k);
        ck_assert(xf_tensor_compare(got[k], want[k], tol, tol, &max_abs, &max_rel, &ok, &e) == XF_OK);
        ck_assert_msg(ok, "%s (n %lld, seed %llu): output %d differs by %g", what, (long long)n,
                      (unsigned long long)seed, k, max_abs);
    }
    /* some of m's 480 elements above 0.1, not all: the NonZero's count depends on x */
    ck_assert_int_gt(got[1]->shape.dims[0], 0);
    ck_assert_int_lt(got[1]->shape.dims[0], 480);
    for (int k = 0; k < 3; k++) {
        xf_tensor_release(got[k]);
        xf_tensor_release(want[k]);
    }
    xf_tensor_release(in[0]);
    xf_tensor_release(in[1]);
}

static int find_op(const xf_graph *g, xf_op op)
{
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].op == op)
            return i;
    ck_abort_msg("no %s node", xf_op_name(op));
    return -1;
}

static void check_backend(const char *backend, double tol)
{
    xf_graph *g = part_graph();
    xf_session *s = make(g, backend, false), *all = make(g, backend, true), *ref = make(g, "cpu_ref", true);
    ck_assert(xf_session_is_dynamic(s));
    ck_assert_int_eq(xf_session_graph(s)->n_nodes, 8);
    ck_assert_int_eq(xf_session_static_nodes(s), 3);
    ck_assert_int_eq(xf_session_static_nodes(all), 0);
    /* other sizes of d and other x, each run after the last */
    const int64_t sizes[] = {7, 1, 40, 7};
    for (int r = 0; r < 4; r++) {
        same_as_dynamic(s, ref, sizes[r], 100 + 10 * (uint64_t)r, tol, backend);
        same_as_dynamic(all, ref, sizes[r], 100 + 10 * (uint64_t)r, tol, backend);
    }
    /* the part's nodes are timed where the session's graph has them */
    const xf_graph *sg = xf_session_graph(s);
    double sec[8] = {0};
    xf_shape ds = SHAPE(5), xs = SHAPE(1, 8, 6, 5);
    xf_tensor *in[2] = {xf_tensor_random(XF_DT_FLOAT, &ds, 1), xf_tensor_random(XF_DT_FLOAT, &xs, 2)};
    xf_error e = {0};
    ck_assert_msg(xf_session_profile(s, in, 1, 3, sec, &e) == XF_OK, "%s", e.msg);
    ck_assert_msg(sec[find_op(sg, XF_OP_CONV)] > 0, "the Conv's time");
    ck_assert_msg(sec[find_op(sg, XF_OP_NON_ZERO)] > 0, "the NonZero's time");
    char impl[128];
    xf_session_node_impl(s, find_op(sg, XF_OP_CONV), impl, sizeof impl);
    if (!strcmp(backend, "cpu")) /* oneDNN's kernel, from the part's session */
        ck_assert_msg(impl[0] && strncmp(impl, "cpu_ref", 7), "the part's Conv runs on '%s'", impl);
    xf_tensor_release(in[0]);
    xf_tensor_release(in[1]);
    xf_session_free(s);
    xf_session_free(all);
    xf_session_free(ref);
    xf_graph_free(g);
}

START_TEST(part_runs_as_dynamic_mode_does)
{
    check_backend("cpu_ref", 0);
    if (xf_backend_find("cpu"))
        check_backend("cpu", 1e-5);
    else
        printf("skipped: this build has no oneDNN, so no cpu backend (cpu_ref checked)\n");
}
END_TEST

/* A graph whose every shape is static runs in static mode; one whose
 * inputs all have unknown shapes has no part. */
START_TEST(whole_graph_or_none)
{
    xf_graph *g = xf_graph_create("no_part");
    xf_shape ds = {.ndim = 1, .dims = {-1}};
    int d = input(g, "d", XF_DT_FLOAT, ds);
    xf_graph_add_output(g, xf_bt_with_scalar(g, XF_OP_MUL, xf_bt_with_scalar(g, XF_OP_ADD, d, 1.0f), 2.0f));
    xf_session *s = make(g, "cpu_ref", false);
    ck_assert(xf_session_is_dynamic(s));
    ck_assert_int_eq(xf_session_static_nodes(s), 0);
    xf_session_free(s);
    xf_graph_free(g);
    g = xf_graph_create("static");
    int x = input(g, "x", XF_DT_FLOAT, SHAPE(3, 4));
    xf_graph_add_output(g, xf_bt_with_scalar(g, XF_OP_MUL, xf_bt_with_scalar(g, XF_OP_ADD, x, 1.0f), 2.0f));
    s = make(g, "cpu_ref", false);
    ck_assert(!xf_session_is_dynamic(s));
    ck_assert_int_eq(xf_session_static_nodes(s), 2);
    xf_session_free(s);
    xf_graph_free(g);
}
END_TEST

/* Dynamic runs: a Reshape (or a Split into one part) that is the last
 * reader of its input takes the input's block over; one that is not
 * copies it, so that the block stays
 * its input's while it is read (here after the Reshape's output is gone
 * and a block of that size is drawn again). */
START_TEST(reshape_hands_on_its_last_read)
{
    xf_graph *g = xf_graph_create("hand_on");
    xf_shape ds = {.ndim = 1, .dims = {-1}};
    int d = input(g, "d", XF_DT_FLOAT, ds);
    int a = xf_bt_with_scalar(g, XF_OP_MUL, d, 2.0f);
    int r = out0(g, NODE(g, XF_OP_RESHAPE, a, CONST_I64(g, -1, 2)));
    int sum = out0(g, NODE(g, XF_OP_REDUCE_SUM, r)); /* r's last reader */
    int t = xf_bt_with_scalar(g, XF_OP_ADD, d, 3.0f);
    int late = out0(g, NODE(g, XF_OP_ADD, a, t)); /* a read after r is gone */
    int flat = out0(g, NODE(g, XF_OP_FLATTEN, xf_bt_with_scalar(g, XF_OP_MUL, late, 1.0f))); /* hands on */
    int last = out0(g, NODE(g, XF_OP_SPLIT, flat)); /* one part: hands on too */
    xf_graph_add_output(g, sum);
    xf_graph_add_output(g, last);
    const char *backends[] = {"cpu_ref", "cpu"};
    for (int b = 0; b < 2; b++) {
        if (!xf_backend_find(backends[b]))
            continue;
        xf_session *s = make(g, backends[b], false);
        for (int64_t n = 20000; n <= 40000; n += 20000) { /* blocks the session pools */
            xf_shape shape = SHAPE(n);
            xf_tensor *in = xf_tensor_random(XF_DT_FLOAT, &shape, (uint64_t)n), *out[2] = {NULL};
            xf_error e = {0};
            ck_assert_msg(xf_session_run(s, &in, out, &e) == XF_OK, "%s", e.msg);
            const float *x = in->data, *y = out[1]->data;
            double want = 0;
            for (int64_t i = 0; i < n; i++) {
                want += 2.0 * x[i];
                ck_assert_msg(y[i] == 2 * x[i] + (x[i] + 3), "%s: element %lld", backends[b], (long long)i);
            }
            ck_assert_int_eq(out[1]->shape.ndim, 2);
            ck_assert_msg(fabs(((const float *)out[0]->data)[0] - want) < 1e-2, "%s: the sum", backends[b]);
            xf_tensor_release(in);
            xf_tensor_release(out[0]);
            xf_tensor_release(out[1]);
        }
        xf_session_free(s);
    }
    xf_graph_free(g);
}
END_TEST

/* Dynamic runs: a ScatterElements that is its data's last reader writes
 * over the data's block; one whose data is read later, or which reads the
 * same value as updates, writes a copy. */
START_TEST(scatter_writes_over_its_last_read)
{
    xf_graph *g = xf_graph_create("scatter_over");
    xf_shape ds = {.ndim = 1, .dims = {-1}};
    int d = input(g, "d", XF_DT_FLOAT, ds), rev = input(g, "rev", XF_DT_INT64, ds);
    int a = xf_bt_with_scalar(g, XF_OP_MUL, d, 2.0f), b = xf_bt_with_scalar(g, XF_OP_MUL, d, 3.0f);
    int c = xf_bt_with_scalar(g, XF_OP_MUL, d, 4.0f);
    int kept = out0(g, NODE(g, XF_OP_SCATTER_ELEMENTS, a, rev, d));  /* a read again below */
    int over = out0(g, NODE(g, XF_OP_SCATTER_ELEMENTS, b, rev, d));  /* b's last reader */
    int self = out0(g, NODE(g, XF_OP_SCATTER_ELEMENTS, c, rev, c));  /* c as data and updates */
    int later = xf_bt_with_scalar(g, XF_OP_ADD, a, 1.0f);
    int outs[] = {kept, over, self, later};
    for (int k = 0; k < 4; k++)
        xf_graph_add_output(g, outs[k]);
    const char *backends[] = {"cpu_ref", "cpu"};
    for (int be = 0; be < 2; be++) {
        if (!xf_backend_find(backends[be]))
            continue;
        xf_session *s = make(g, backends[be], false);
        int64_t n = 30000; /* blocks the session pools */
        xf_shape shape = SHAPE(n);
        xf_tensor *in[2] = {xf_tensor_random(XF_DT_FLOAT, &shape, 9), xf_tensor_create(XF_DT_INT64, &shape)};
        for (int64_t i = 0; i < n; i++)
            ((int64_t *)in[1]->data)[i] = n - 1 - i;
        for (int run = 0; run < 2; run++) {
            xf_tensor *out[4] = {NULL};
            xf_error e = {0};
            ck_assert_msg(xf_session_run(s, in, out, &e) == XF_OK, "%s", e.msg);
            const float *x = in[0]->data;
            for (int64_t i = 0; i < n; i++) {
                float r = x[n - 1 - i]; /* the updates reversed */
                ck_assert_msg(((const float *)out[0]->data)[i] == r && ((const float *)out[1]->data)[i] == r &&
                                  ((const float *)out[2]->data)[i] == 4 * r &&
                                  ((const float *)out[3]->data)[i] == 2 * x[i] + 1,
                              "%s, run %d: element %lld", backends[be], run, (long long)i);
            }
            for (int k = 0; k < 4; k++)
                xf_tensor_release(out[k]);
        }
        xf_tensor_release(in[0]);
        xf_tensor_release(in[1]);
        xf_session_free(s);
    }
    xf_graph_free(g);
}
END_TEST

/* Dynamic runs hand their outputs' blocks to the tensors they return: a
 * tensor of one run keeps its values through the next run (whose blocks
 * the session draws again), also where the graph gives one value twice. */
START_TEST(outputs_outlive_the_next_run)
{
    xf_graph *g = xf_graph_create("outputs");
    xf_shape ds = {.ndim = 1, .dims = {-1}};
    int d = input(g, "d", XF_DT_FLOAT, ds);
    int a = xf_bt_with_scalar(g, XF_OP_MUL, d, 2.0f), b = xf_bt_with_scalar(g, XF_OP_ADD, a, 1.0f);
    xf_graph_add_output(g, a);
    xf_graph_add_output(g, b);
    xf_graph_add_output(g, a);
    xf_session *s = make(g, "cpu_ref", false);
    xf_shape shape = SHAPE(40000); /* blocks the session pools */
    xf_tensor *in1 = xf_tensor_random(XF_DT_FLOAT, &shape, 1), *in2 = xf_tensor_random(XF_DT_FLOAT, &shape, 2);
    xf_tensor *out1[3] = {NULL}, *out2[3] = {NULL};
    xf_error e = {0};
    ck_assert_msg(xf_session_run(s, &in1, out1, &e) == XF_OK, "%s", e.msg);
    ck_assert_msg(xf_session_run(s, &in2, out2, &e) == XF_OK, "%s", e.msg);
    for (int r = 0; r < 2; r++) {
        const float *x = (r ? in2 : in1)->data;
        xf_tensor **o = r ? out2 : out1;
        ck_assert_ptr_ne(o[0]->data, o[2]->data);
        for (int64_t i = 0; i < 40000; i++)
            ck_assert_msg(((float *)o[0]->data)[i] == 2 * x[i] && ((float *)o[1]->data)[i] == 2 * x[i] + 1 &&
                              ((float *)o[2]->data)[i] == 2 * x[i],
                          "run %d, element %lld", r, (long long)i);
    }
    for (int k = 0; k < 3; k++) {
        xf_tensor_release(out1[k]);
        xf_tensor_release(out2[k]);
    }
    xf_tensor_release(in1);
    xf_tensor_release(in2);
    xf_session_free(s);
    xf_graph_free(g);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("static_part");
    TCase *tc = tcase_create("static_part");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, part_runs_as_dynamic_mode_does);
    tcase_add_test(tc, whole_graph_or_none);
    tcase_add_test(tc, reshape_hands_on_its_last_read);
    tcase_add_test(tc, scatter_writes_over_its_last_read);
    tcase_add_test(tc, outputs_outlive_the_next_run);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
