#include "backend_util.h"
#include "zoo.h"

#include "core_builders.h"
#include "xf_proto.h"
#include "xf_runtime.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int xf_bt_input(xf_graph *g, xf_dtype t, xf_shape s)
{
    char name[32];
    snprintf(name, sizeof name, "in%d", g->n_inputs);
    return xf_graph_add_input(g, name, t, &s);
}

int xf_bt_random_const(xf_graph *g, xf_shape s, bool positive)
{
    xf_tensor *t = xf_tensor_random(XF_DT_FLOAT, &s, (uint64_t)g->n_values * 7919u + 17u);
    ck_assert_ptr_nonnull(t);
    if (positive)
        for (int64_t i = 0; i < xf_shape_numel(&s); i++)
            ((float *)t->data)[i] = 1.0f + 0.5f * ((float *)t->data)[i];
    int v = xf_graph_add_initializer(g, NULL, t);
    xf_tensor_release(t);
    return v;
}

int xf_bt_scalar(xf_graph *g, float value, int rank)
{
    xf_shape s = {.ndim = rank, .dims = {1}};
    xf_tensor *t = xf_tensor_create(XF_DT_FLOAT, &s);
    ck_assert_ptr_nonnull(t);
    *(float *)t->data = value;
    int v = xf_graph_add_initializer(g, NULL, t);
    xf_tensor_release(t);
    return v;
}

int xf_bt_with_scalar(xf_graph *g, xf_op op, int x, float c) { return out0(g, NODE(g, op, x, xf_bt_scalar(g, c, 0))); }

int xf_bt_conv(xf_graph *g, int x, int64_t cin, int64_t cout, int64_t k, int64_t stride, xf_activation act)
{
    int w = xf_bt_random_const(g, SHAPE(cout, cin, k, k), false);
    int b = xf_bt_random_const(g, SHAPE(cout), false);
    int n = node(g, XF_OP_CONV, NULL, 3, (int[]){x, w, b}, 1);
    int64_t p = k / 2;
    xf_bt_set_window(attrs(g, n), 2, NULL, (int64_t[]){stride, stride}, (int64_t[]){p, p}, (int64_t[]){p, p},
                     (int64_t[]){1, 1});
    attrs(g, n)->activation = act;
    return out0(g, n);
}

int xf_bt_reduce(xf_graph *g, xf_op op, int x, const int64_t *axes, int n_axes, bool as_input, bool keepdims)
{
    int n;
    if (as_input && n_axes > 0) {
        int ax = constant(g, NULL, XF_DT_INT64, xf_shape_make(1, (int64_t[]){n_axes}), axes);
        n = node(g, op, NULL, 2, (int[]){x, ax}, 1);
    } else {
        n = node(g, op, NULL, 1, (int[]){x}, 1);
        attrs(g, n)->has_axes = n_axes > 0;
        attrs(g, n)->n_axes = n_axes;
        for (int k = 0; k < n_axes; k++)
            attrs(g, n)->axes[k] = axes[k];
    }
    attrs(g, n)->keepdims = keepdims;
    return n;
}

int xf_bt_finish_single(xf_graph *g, xf_op op, int n_in, const int *ins)
{
    int n = node(g, op, "n", n_in, ins, 1);
    xf_graph_add_output(g, out0(g, n));
    return n;
}

void xf_bt_set_window(xf_attrs *a, int ns, const int64_t *k, const int64_t *s, const int64_t *p_begin,
                      const int64_t *p_end, const int64_t *d)
{
    a->n_spatial = ns;
    for (int i = 0; i < ns; i++) {
        a->kernel[i] = k ? k[i] : 0;
        a->strides[i] = s[i];
        a->dilations[i] = d[i];
        a->pads[i] = p_begin[i];
        a->pads[ns + i] = p_end[i];
    }
}

/* The largest |element| of a float tensor (1 for other dtypes). */
static double max_abs_of(const xf_tensor *t)
{
    double m = 0;
    if (t->dtype != XF_DT_FLOAT)
        return 1;
    for (int64_t i = 0; i < xf_tensor_numel(t); i++)
        m = fmax(m, fabs(((const float *)t->data)[i]));
    return m;
}

void xf_bt_check_graph(const xf_graph *g, int64_t opset, const char *backend, bool dynamic_too, double atol,
                       double rtol, const char *what)
{
    xf_error err = {0};
    /* two sets of inputs: a session's second run gets other values than
     * its first, so that nothing prepare or the first run kept from the
     * values stands in for them */
    xf_tensor **in[2], **want[2];
    xf_tensor **got = calloc((size_t)g->n_outputs + 1, sizeof *got);
    ck_assert(got);
    /* the graph as given, so that the session's own rewrites are checked too */
    xf_session *ref = NULL;
    xf_session_options given = {.as_given = true};
    ck_assert_msg(xf_session_create(g, opset, "cpu_ref", &given, &ref, &err) == XF_OK, "%s: cpu_ref: %s", what,
                  err.msg);
    for (int set = 0; set < 2; set++) {
        in[set] = calloc((size_t)g->n_inputs + 1, sizeof *in[set]);
        want[set] = calloc((size_t)g->n_outputs + 1, sizeof *want[set]);
        ck_assert(in[set] && want[set]);
        for (int i = 0; i < g->n_inputs; i++) {
            const xf_value *v = &g->values[g->inputs[i]];
            in[set][i] = xf_tensor_random(v->dtype, &v->shape, 1000u + 7919u * (uint64_t)set + (uint64_t)i);
            ck_assert_ptr_nonnull(in[set][i]);
        }
        ck_assert_msg(xf_session_run(ref, in[set], want[set], &err) == XF_OK, "%s: cpu_ref run: %s", what, err.msg);
    }
    for (int dynamic = 0; dynamic < (dynamic_too ? 2 : 1); dynamic++) {
        const char *mode = dynamic ? "dynamic" : "static";
        xf_session_options opt = {.force_dynamic = dynamic};
        xf_session *s = NULL;
        ck_assert_msg(xf_session_create(g, opset, backend, &opt, &s, &err) == XF_OK, "%s: %s: %s", what, backend,
                      err.msg);
        for (int run = 0; run < 2; run++) {
            ck_assert_msg(xf_session_run(s, in[run], got, &err) == XF_OK, "%s: %s run: %s", what, backend, err.msg);
            for (int k = 0; k < g->n_outputs; k++) {
                double max_abs = 0, max_rel = 0;
                bool ok = false;
                double tol = atol >= 0 ? atol : -atol * max_abs_of(want[run][k]);
                ck_assert_msg(xf_tensor_compare(got[k], want[run][k], tol, rtol, &max_abs, &max_rel, &ok, &err) ==
                                  XF_OK,
                              "%s: %s", what, err.msg);
                ck_assert_msg(ok, "%s (%s on %s, run %d): output %d differs from cpu_ref: max abs %.3g, max rel %.3g",
                              what, mode, backend, run + 1, k, max_abs, max_rel);
                xf_tensor_release(got[k]);
                got[k] = NULL;
            }
        }
        xf_session_free(s);
    }
    xf_session_free(ref);
    for (int set = 0; set < 2; set++) {
        for (int i = 0; i < g->n_inputs; i++)
            xf_tensor_release(in[set][i]);
        for (int k = 0; k < g->n_outputs; k++)
            xf_tensor_release(want[set][k]);
        free(in[set]);
        free(want[set]);
    }
    free(got);
}

bool xf_bt_have_cpu(void)
{
    if (xf_backend_find("cpu"))
        return true;
    printf("skipped: this build has no oneDNN, so no cpu backend\n");
    return false;
}

bool xf_bt_have_vnni(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return __builtin_cpu_supports("avx512vnni");
#else
    return false;
#endif
}

bool xf_bt_avx512_kernels(void)
{
    const char *isa = getenv("DNNL_MAX_CPU_ISA");
    if (isa && strncasecmp(isa, "AVX512", 6) != 0 && strcasecmp(isa, "ALL") != 0)
        return false;
#if defined(__x86_64__)
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
#else
    return false;
#endif
}

/* The implementation of the nth node (from 0) of op in g's static cpu
 * session; how many such nodes it has. */
static int nth_impl(const xf_graph *g, int64_t opset, xf_op op, int nth, char *impl, size_t size)
{
    xf_session *s = NULL;
    xf_error err = {0};
    ck_assert_msg(xf_session_create(g, opset, "cpu", NULL, &s, &err) == XF_OK, "%s", err.msg);
    ck_assert(!xf_session_is_dynamic(s));
    const xf_graph *sg = xf_session_graph(s);
    int found = 0;
    impl[0] = '\0';
    for (int i = 0; i < sg->n_nodes; i++)
        if (sg->nodes[i].op == op && found++ == nth)
            xf_session_node_impl(s, i, impl, size);
    xf_session_free(s);
    return found;
}

void xf_bt_node_impl(const xf_graph *g, int64_t opset, xf_op op, char *impl, size_t size)
{
    ck_assert_int_eq(nth_impl(g, opset, op, 0, impl, size), 1);
}

void xf_bt_nth_node_impl(const xf_graph *g, int64_t opset, xf_op op, int nth, char *impl, size_t size)
{
    ck_assert_msg(nth_impl(g, opset, op, nth, impl, size) > nth, "no %s node %d", xf_op_name(op), nth);
}

void xf_bt_check_cpu(const xf_graph *g, int64_t opset, double atol, double rtol, const char *what)
{
    xf_bt_check_graph(g, opset, "cpu", true, atol, rtol, what);
}

void xf_bt_cuda_takes(const xf_graph *g, int64_t opset, const char *what)
{
    xf_session *s = NULL;
    xf_error e = {0};
    xf_status st = xf_session_create(g, opset, "cuda", NULL, &s, &e);
    ck_assert_msg(st == XF_OK || (st == XF_ERR_UNSUPPORTED && !strncmp(e.msg, "no CUDA device: ", 16)), "%s: %s",
                  what, e.msg);
    xf_session_free(s);
    if (st == XF_OK)
        xf_bt_check_graph(g, opset, "cuda", false, 0, 0, what);
}

void xf_bt_through_ref(xf_graph *(*make)(int which), int n, int64_t opset)
{
    const xf_backend *ref = xf_backend_find("cpu_ref");
    for (int which = 0; which < n; which++) {
        xf_graph *g = make(which);
        const char *what = xf_op_name(g->nodes[0].op);
        xf_error e = {0};
        ck_assert_msg(ref->supports(g, 0, &e) == XF_OK, "%s: %s", what, e.msg);
        xf_bt_check_graph(g, opset, "cpu", true, 0, 0, what);
        if (xf_backend_find("cuda"))
            xf_bt_cuda_takes(g, opset, what);
        xf_graph_free(g);
    }
}

/* ---------------------------------------------------------------- op cases both suites run */

static uint64_t rng_state;

void xf_bt_seed(uint64_t seed) { rng_state = seed; }

int64_t xf_bt_rnd(int64_t lo, int64_t hi)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (int64_t)((rng_state >> 33) % (uint64_t)(hi - lo + 1));
}

static int add_input(xf_graph *g, xf_shape s) { return xf_bt_input(g, XF_DT_FLOAT, s); }

void xf_bt_conv_random(xf_bt_check_fn check, int cases, bool mostly_symmetric)
{
    xf_bt_seed(42);
    for (int t = 0; t < cases; t++) {
        int ns = t % 10 == 9 ? 1 : t % 10 == 8 ? 3 : 2;
        int64_t group = xf_bt_rnd(0, 2) == 0 ? xf_bt_rnd(1, 3) : 1;
        if (t % 7 == 3)
            group = 8; /* depthwise */
        int64_t cin = group * xf_bt_rnd(1, t % 5 == 0 ? 16 : 5), cout = group * xf_bt_rnd(1, 6);
        if (t % 7 == 3)
            cin = cout = 8;
        int64_t x_dims[5] = {xf_bt_rnd(1, 2), cin}, w_dims[5] = {cout, cin / group};
        int64_t k[3], s[3], pb[3], pe[3], d[3];
        for (int i = 0; i < ns; i++) {
            k[i] = xf_bt_rnd(1, ns == 3 ? 3 : 5);
            s[i] = xf_bt_rnd(1, 3);
            d[i] = xf_bt_rnd(1, 2);
            pb[i] = xf_bt_rnd(0, 2);
            pe[i] = mostly_symmetric && t % 3 ? pb[i] : xf_bt_rnd(0, 2);
            int64_t extent = (k[i] - 1) * d[i] + 1;
            x_dims[2 + i] = extent + xf_bt_rnd(0, ns == 3 ? 4 : 12);
            w_dims[2 + i] = k[i];
        }
        xf_graph *g = xf_graph_create("conv");
        int x = add_input(g, xf_shape_make(2 + ns, x_dims));
        int w = xf_bt_random_const(g, xf_shape_make(2 + ns, w_dims), false);
        int b = xf_bt_rnd(0, 1) ? xf_bt_random_const(g, SHAPE(cout), false) : -1;
        int n = xf_bt_finish_single(g, XF_OP_CONV, b >= 0 ? 3 : 2, (int[]){x, w, b});
        xf_attrs *a = attrs(g, n);
        xf_bt_set_window(a, ns, NULL, s, pb, pe, d);
        a->group = group;
        a->activation = (xf_activation)xf_bt_rnd(0, 3);
        if (t % 6 == 5)
            a->auto_pad = xf_bt_rnd(0, 1) ? XF_AUTO_PAD_SAME_UPPER : XF_AUTO_PAD_SAME_LOWER;
        char what[96];
        snprintf(what, sizeof what, "conv case %d (%dD, group %lld)", t, ns, (long long)group);
        check(g, 17, 1e-4, 1e-3, what);
        xf_graph_free(g);
    }
}

void xf_bt_pool_random(xf_bt_check_fn check, const xf_bt_pool_forms *forms)
{
    static const xf_op ops[] = {XF_OP_MAX_POOL, XF_OP_AVERAGE_POOL, XF_OP_GLOBAL_AVERAGE_POOL,
                                XF_OP_GLOBAL_MAX_POOL};
    xf_bt_seed(7);
    for (int t = 0; t < forms->cases; t++) {
        xf_op op = ops[t % 4];
        int ns = t % 8 == 7 ? 1 : 2;
        int64_t x_dims[4] = {xf_bt_rnd(1, 2), xf_bt_rnd(1, 20)}, k[2], s[2], pb[2], pe[2], d[2];
        for (int i = 0; i < ns; i++) {
            k[i] = xf_bt_rnd(1, 4);
            s[i] = xf_bt_rnd(1, 3);
            if (op != XF_OP_MAX_POOL)
                d[i] = 1;
            else
                d[i] = forms->random_dilations ? xf_bt_rnd(1, 2) : t % 5 == 0 ? 2 : 1;
            pb[i] = xf_bt_rnd(0, k[i] - 1);
            pe[i] = xf_bt_rnd(0, k[i] - 1);
            x_dims[2 + i] = (k[i] - 1) * d[i] + 1 + xf_bt_rnd(0, 11);
        }
        xf_graph *g = xf_graph_create("pool");
        int x = add_input(g, xf_shape_make(2 + ns, x_dims));
        int n = xf_bt_finish_single(g, op, 1, &x);
        xf_attrs *a = attrs(g, n);
        if (op == XF_OP_MAX_POOL || op == XF_OP_AVERAGE_POOL) {
            xf_bt_set_window(a, ns, k, s, pb, pe, d);
            a->ceil_mode = (int)xf_bt_rnd(0, 1);
            bool draw = op == XF_OP_AVERAGE_POOL && (forms->count_pad_with_ceil || !a->ceil_mode);
            a->count_include_pad = draw ? (int)xf_bt_rnd(0, 1) : 0;
        }
        char what[96];
        snprintf(what, sizeof what, "%s case %d", xf_op_name(op), t);
        check(g, 17, 1e-5, 1e-4, what);
        xf_graph_free(g);
    }
}

xf_graph *xf_bt_pool_indices_graph(int storage_order)
{
    xf_graph *g = xf_graph_create("unpool");
    int x = add_input(g, SHAPE(2, 16, 9, 7));
    int with = node(g, XF_OP_MAX_POOL, "with_indices", 1, &x, 2);
    int plain = node(g, XF_OP_MAX_POOL, "plain", 1, &x, 1);
    int u = NODE(g, XF_OP_MAX_UNPOOL, out0(g, with), g->nodes[with].outputs[1], CONST_I64(g, 2, 16, 9, 7));
    for (int n = with; n <= u; n++)
        xf_bt_set_window(attrs(g, n), 2, (int64_t[]){3, 3}, (int64_t[]){2, 2}, (int64_t[]){1, 0}, (int64_t[]){1, 1},
                         (int64_t[]){1, 1});
    attrs(g, with)->storage_order = storage_order;
    xf_graph_add_output(g, out0(g, with));
    xf_graph_add_output(g, g->nodes[with].outputs[1]);
    xf_graph_add_output(g, out0(g, plain));
    xf_graph_add_output(g, out0(g, u));
    return g;
}

void xf_bt_pool_indices(xf_bt_check_fn check)
{
    for (int order = 0; order < 2; order++) {
        xf_graph *g = xf_bt_pool_indices_graph(order);
        check(g, 12, 0, 0, order ? "MaxPool with column-major Indices, MaxUnpool" : "MaxPool with Indices, MaxUnpool");
        xf_graph_free(g);
    }
}

void xf_bt_matmul_random(xf_bt_check_fn check, int n_forms, int64_t min_batch)
{
    /* (a rank, b rank, a batch broadcast, b batch broadcast); form 8 mixes
     * broadcasting across two batch dimensions */
    static const int forms[][4] = {{2, 2, 0, 0}, {3, 3, 0, 0}, {3, 2, 0, 0}, {2, 3, 0, 0}, {4, 4, 1, 0},
                                   {4, 4, 0, 1}, {4, 2, 0, 0}, {1, 2, 0, 0}, {4, 4, 2, 3}, {2, 1, 0, 0}};
    ck_assert_int_le(n_forms, (int)(sizeof forms / sizeof *forms));
    xf_bt_seed(99);
    for (int t = 0; t < 2 * n_forms; t++) {
        const int *f = forms[t % n_forms];
        int64_t m = xf_bt_rnd(1, 33), kk = xf_bt_rnd(1, 40), nn = xf_bt_rnd(1, 29), b0 = xf_bt_rnd(2, 3), b1 = xf_bt_rnd(min_batch, 4);
        int ra = f[0], rb = f[1];
        int64_t ad[4], bd[4], batch[2] = {b0, b1};
        for (int i = 0; i < ra - 2; i++)
            ad[i] = f[2] == 1 ? 1 : f[2] == 2 ? (i == 0 ? 1 : batch[i]) : batch[2 - (ra - 2) + i];
        for (int i = 0; i < rb - 2; i++)
            bd[i] = f[3] == 1 ? 1 : f[3] == 3 ? (i == 1 ? 1 : batch[i]) : batch[2 - (rb - 2) + i];
        if (ra == 1) {
            ad[0] = kk;
        } else {
            ad[ra - 2] = m;
            ad[ra - 1] = kk;
        }
        if (rb == 1) {
            bd[0] = kk;
        } else {
            bd[rb - 2] = kk;
            bd[rb - 1] = nn;
        }
        xf_graph *g = xf_graph_create("matmul");
        int a = add_input(g, xf_shape_make(ra, ad));
        int b = t % 2 ? xf_bt_random_const(g, xf_shape_make(rb, bd), false) : add_input(g, xf_shape_make(rb, bd));
        xf_bt_finish_single(g, XF_OP_MATMUL, 2, (int[]){a, b});
        char what[64];
        snprintf(what, sizeof what, "MatMul case %d", t);
        check(g, 17, 1e-4, 1e-3, what);
        xf_graph_free(g);
    }
}

void xf_bt_gemm_forms(xf_bt_check_fn check)
{
    xf_bt_seed(5);
    for (int t = 0; t < 16; t++) {
        int64_t m = xf_bt_rnd(1, 20), kk = xf_bt_rnd(1, 30), nn = xf_bt_rnd(1, 25);
        int ta = t & 1, tb = (t >> 1) & 1, c_form = (t >> 2) & 3;
        xf_graph *g = xf_graph_create("gemm");
        int a = add_input(g, ta ? SHAPE(kk, m) : SHAPE(m, kk));
        int b = xf_bt_random_const(g, tb ? SHAPE(nn, kk) : SHAPE(kk, nn), false);
        int c = c_form == 0 ? -1
                            : xf_bt_random_const(g, c_form == 1 ? SHAPE(nn) : c_form == 2 ? SHAPE(m, nn) : SHAPE(m, 1),
                                                 false);
        int n = xf_bt_finish_single(g, XF_OP_GEMM, c >= 0 ? 3 : 2, (int[]){a, b, c});
        xf_attrs *at = attrs(g, n);
        at->trans_a = ta;
        at->trans_b = tb;
        at->alpha = t % 5 == 4 ? 0.5f : 1.0f;
        at->beta = t % 7 == 6 ? 2.0f : 1.0f;
        char what[64];
        snprintf(what, sizeof what, "Gemm case %d", t);
        check(g, 17, 1e-4, 1e-3, what);
        xf_graph_free(g);
    }
}

void xf_bt_unary_ops(xf_bt_check_fn check, const xf_op *ops, int n_ops)
{
    xf_bt_seed(3);
    for (int i = 0; i < n_ops; i++) {
        xf_graph *g = xf_graph_create("unary");
        int x = add_input(g, SHAPE(xf_bt_rnd(1, 3), xf_bt_rnd(1, 17), xf_bt_rnd(1, 9)));
        int n = xf_bt_finish_single(g, ops[i], 1, &x);
        xf_attrs_default(ops[i], attrs(g, n));
        if (ops[i] == XF_OP_LEAKY_RELU)
            attrs(g, n)->alpha = 0.2f;
        check(g, 17, 1e-5, 1e-4, xf_op_name(ops[i]));
        xf_graph_free(g);
    }
}

void xf_bt_binary_case(xf_bt_check_fn check, xf_op op, xf_dtype t, int form, bool swap)
{
    static const int64_t small[XF_BT_BINARY_FORMS][4] = {{2, 5, 7, 3}, {1, 5, 1, 1}, {7, 3},
                                                         {3},          {1, 1, 1, 1}, {2, 1, 7, 1}};
    static const int small_rank[XF_BT_BINARY_FORMS] = {4, 4, 2, 1, 4, 4};
    ck_assert(form >= 0 && form < XF_BT_BINARY_FORMS);
    xf_graph *g = xf_graph_create("binary");
    int big = xf_bt_input(g, t, SHAPE(2, 5, 7, 3));
    int sm = xf_bt_input(g, t, xf_shape_make(small_rank[form], small[form]));
    xf_bt_finish_single(g, op, 2, swap ? (int[]){sm, big} : (int[]){big, sm});
    char what[96];
    snprintf(what, sizeof what, "%s form %d%s on %s", xf_op_name(op), form, swap ? " swapped" : "",
             xf_dtype_name(t));
    /* Div by values near 0 is large: the relative tolerance carries it */
    check(g, 17, 1e-5, 1e-4, what);
    xf_graph_free(g);
}

void xf_bt_softmax_axes(xf_bt_check_fn check)
{
    for (int legacy = 0; legacy < 2; legacy++)
        for (int axis = -3; axis < 3; axis++)
            for (int log = 0; log < 2; log++) {
                xf_op op = log ? XF_OP_LOG_SOFTMAX : XF_OP_SOFTMAX;
                xf_graph *g = xf_graph_create("softmax");
                int x = add_input(g, SHAPE(3, 11, 6));
                int n = xf_bt_finish_single(g, op, 1, &x);
                attrs(g, n)->axis = axis;
                attrs(g, n)->softmax_legacy = legacy;
                char what[80];
                snprintf(what, sizeof what, "%s axis %d%s", xf_op_name(op), axis, legacy ? " (legacy)" : "");
                check(g, legacy ? 11 : 13, 1e-5, 1e-4, what);
                xf_graph_free(g);
            }
}

void xf_bt_batch_norm_case(xf_bt_check_fn check, int rank, const int64_t *dims, float epsilon)
{
    xf_graph *g = xf_graph_create("bn");
    int64_t c = dims[1];
    int x = add_input(g, xf_shape_make(rank, dims));
    int ins[5] = {x, xf_bt_random_const(g, SHAPE(c), false), xf_bt_random_const(g, SHAPE(c), false),
                  xf_bt_random_const(g, SHAPE(c), false), xf_bt_random_const(g, SHAPE(c), true)};
    int n = xf_bt_finish_single(g, XF_OP_BATCH_NORM, 5, ins);
    attrs(g, n)->epsilon = epsilon;
    check(g, 17, 1e-5, 1e-4, "BatchNormalization");
    xf_graph_free(g);
}

int xf_bt_concat3(xf_graph *g, int axis)
{
    int ins[3];
    for (int k = 0; k < 3; k++) {
        int64_t d[4] = {2, 3, 4, 5};
        d[(axis + 4) % 4] = k + 1;
        ins[k] = add_input(g, xf_shape_make(4, d));
    }
    int n = xf_bt_finish_single(g, XF_OP_CONCAT, 3, ins);
    attrs(g, n)->axis = axis;
    return n;
}

/* Compares a run's Mean (k = 1) or InvStdDev (k = 2) with the statistics
 * of each row of x (the dims from axis on). */
static void expect_layer_norm_stat(const xf_tensor *x, int axis, float eps, const xf_tensor *got, int k,
                                   const char *what)
{
    xf_shape want = x->shape;
    for (int d = axis; d < want.ndim; d++)
        want.dims[d] = 1;
    char a[160], b[160];
    ck_assert_msg(got->dtype == XF_DT_FLOAT && xf_shape_equal(&got->shape, &want), "%s: output %d is %s %s, not %s %s",
                  what, k, xf_dtype_name(got->dtype), xf_shape_str(&got->shape, a, sizeof a),
                  xf_dtype_name(XF_DT_FLOAT), xf_shape_str(&want, b, sizeof b));
    int64_t rows = xf_tensor_numel(got), inner = rows ? xf_tensor_numel(x) / rows : 0;
    const float *xs = x->data, *gs = got->data;
    for (int64_t r = 0; r < rows; r++) {
        double mean = 0, var = 0;
        for (int64_t i = 0; i < inner; i++)
            mean += xs[r * inner + i];
        mean /= (double)inner;
        for (int64_t i = 0; i < inner; i++)
            var += (xs[r * inner + i] - mean) * (xs[r * inner + i] - mean);
        double expect = k == 1 ? mean : 1.0 / sqrt(var / (double)inner + eps);
        ck_assert_msg(fabs(gs[r] - expect) <= 1e-5 + 1e-4 * fabs(expect), "%s: output %d row %lld: %.7g, expected %.7g",
                      what, k, (long long)r, gs[r], expect);
    }
}

void xf_bt_layer_norm_stats(xf_bt_check_fn check, const char *backend)
{
    static const struct {
        int rank;
        int64_t dims[4];
        int axis;
        bool mean;
    } cases[] = {{2, {7, 33}, -1, true}, {3, {2, 5, 64}, -1, true}, {3, {3, 4, 5}, 1, true},
                 {4, {2, 3, 4, 5}, -2, false}, {2, {4, 9}, 0, true}};
    for (size_t t = 0; t < sizeof cases / sizeof *cases; t++) {
        int rank = cases[t].rank, axis = cases[t].axis < 0 ? cases[t].axis + rank : cases[t].axis;
        xf_graph *g = xf_graph_create("layer_norm_stats");
        int x = add_input(g, xf_shape_make(rank, cases[t].dims));
        xf_shape ps = xf_shape_make(rank - axis, cases[t].dims + axis);
        int scale = xf_bt_random_const(g, ps, true), bias = xf_bt_random_const(g, ps, false);
        int outs[3] = {xf_graph_add_value(g, "y", XF_DT_UNDEFINED, NULL),
                       cases[t].mean ? xf_graph_add_value(g, "mean", XF_DT_UNDEFINED, NULL) : -1,
                       xf_graph_add_value(g, "inv_std_dev", XF_DT_UNDEFINED, NULL)};
        int n = xf_graph_add_node(g, XF_OP_LAYER_NORM, "ln", 3, (int[]){x, scale, bias}, 3, outs);
        ck_assert_int_ge(n, 0);
        attrs(g, n)->axis = cases[t].axis;
        attrs(g, n)->epsilon = 1e-5f;
        for (int k = 0; k < 3; k++)
            if (outs[k] >= 0)
                xf_graph_add_output(g, outs[k]);
        char what[96];
        snprintf(what, sizeof what, "LayerNormalization with statistics, case %zu (rank %d, axis %d)", t, rank,
                 cases[t].axis);
        check(g, 17, 1e-4, 1e-3, what);

        xf_error err = {0};
        xf_session *s = NULL;
        ck_assert_msg(xf_session_create(g, 17, backend, NULL, &s, &err) == XF_OK, "%s: %s", what, err.msg);
        xf_tensor *in = xf_tensor_random(XF_DT_FLOAT, &g->values[x].shape, 77u + t), *got[3] = {NULL};
        ck_assert_ptr_nonnull(in);
        ck_assert_msg(xf_session_run(s, &in, got, &err) == XF_OK, "%s: %s", what, err.msg);
        int o = 1;
        for (int k = 1; k < 3; k++)
            if (outs[k] >= 0)
                expect_layer_norm_stat(in, axis, 1e-5f, got[o++], k, what);
        for (int k = 0; k < g->n_outputs; k++)
            xf_tensor_release(got[k]);
        xf_tensor_release(in);
        xf_session_free(s);
        xf_graph_free(g);
    }
}

void xf_bt_inception_example(xf_bt_check_fn check)
{
    xf_model *m = NULL;
    xf_error err = {0};
    ck_assert_msg(xf_model_load(XF_SOURCE_DIR "/examples/inception_block.onnx", NULL, &m, &err) == XF_OK, "%s",
                  err.msg);
    check(m->graph, xf_model_opset(m), 1e-4, 1e-3, "examples/inception_block.onnx");
    xf_model_free(m);
}

void xf_bt_through_float16(xf_graph *g, bool half, int64_t opset)
{
    /* as the float runs take a scalar that is sqrt(2) or sqrt(1/2) rounded
     * to 16 bits (half_runs.c): the exact GELU's */
    static const float gelu[2] = {1.41421356237309505f, 0.707106781186547524f};
    for (int v = 0; v < g->n_values; v++) {
        xf_value *x = &g->values[v];
        if (x->dtype != XF_DT_FLOAT)
            continue;
        if (half)
            x->dtype = XF_DT_FLOAT16;
        if (!x->init)
            continue;
        /* a new tensor: the old one may be another graph's too */
        xf_tensor *t = xf_tensor_create(half ? XF_DT_FLOAT16 : XF_DT_FLOAT, &x->init->shape);
        ck_assert_ptr_nonnull(t);
        int64_t count = xf_tensor_numel(t);
        const float *f = x->init->data;
        for (int64_t i = 0; i < count; i++) {
            uint16_t h = xf_f32_to_f16(f[i]);
            if (half)
                ((uint16_t *)t->data)[i] = h;
            else
                ((float *)t->data)[i] = xf_f16_to_f32(h);
        }
        for (int k = 0; !half && count == 1 && k < 2; k++)
            if (((float *)t->data)[0] == xf_f16_to_f32(xf_f32_to_f16(gelu[k])))
                ((float *)t->data)[0] = gelu[k];
        xf_tensor_release(x->init);
        x->init = t;
    }
    xf_error err = {0};
    ck_assert_msg(xf_graph_infer_shapes(g, opset, &err) == XF_OK, "%s", err.msg);
}

const xf_bt_zoo_run xf_bt_zoo_runs[8] = {{"inception-block", 28}, {"resnet50", 32}, {"resnext50", 32},
                                         {"nasnet-a", 32},        {"nasrnn", 5},     {"bert", 4},
                                         {"inception-v3", 75},    {"squeezenet", 64}};

void xf_bt_zoo_half_pair(const xf_bt_zoo_run *run, xf_model **half, xf_model **flt)
{
    xf_error err = {0};
    ck_assert_msg(xf_zoo_build_sized(run->name, 1, run->size, flt, &err) == XF_OK, "%s: %s", run->name, err.msg);
    /* the same weights, in a model of their own */
    *half = xf_model_create();
    ck_assert_ptr_nonnull(*half);
    xf_graph_free((*half)->graph);
    (*half)->graph = xf_graph_clone((*flt)->graph);
    ck_assert_ptr_nonnull((*half)->graph);
    xf_bt_through_float16((*half)->graph, true, xf_model_opset(*flt));
    xf_bt_through_float16((*flt)->graph, false, xf_model_opset(*flt));
}
