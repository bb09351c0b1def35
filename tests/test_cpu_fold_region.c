/* The `cpu` backend's activations written out as elementwise nodes,
 * recognized by the function they compute (runtime/cpu_dnnl_fold_region.c):
 * GELU's tanh form as HF's NewGELU, torch.onnx and BLOOM write it, the
 * exact GELU with the 0.5 first, QuickGELU, Mish and the logistic written
 * out, each on the output of a Conv, of a MatMul with a bias, or of a
 * scaling of a graph input.  Each must run as one primitive (the region a
 * post-op, nothing else running), and match cpu_ref.  Near misses must
 * run node by node, as written: another constant, an intermediate the
 * graph also returns, and a term too small to see from -8 to 8. */
#include "backend_util.h"
#include "core_builders.h"
#include "xf_runtime.h"
#include "xf_test_util.h"

#include <check.h>
#include <stdio.h>
#include <string.h>

/* op of a and the scalar c, c first when `first` */
static int sc(xf_graph *g, xf_op op, int a, float c, bool first)
{
    int k = xf_bt_scalar(g, c, 0);
    return out0(g, first ? NODE(g, op, k, a) : NODE(g, op, a, k));
}

static int bin(xf_graph *g, xf_op op, int a, int b) { return out0(g, NODE(g, op, a, b)); }
static int un(xf_graph *g, xf_op op, int a) { return out0(g, NODE(g, op, a)); }

enum {
    NEW_GELU,     /* HF's NewGELU: 0.5 x first, Pow(x, 3) */
    TORCH_TANH,   /* torch.onnx's tanh GELU: x * x * x, the 0.5 last */
    BLOOM,        /* x 0.5 (1 + tanh(0.79788456 x (1 + 0.044715 x x))) */
    QUICK_GELU,   /* x sigmoid(1.702 x) */
    MISH,         /* x tanh(softplus(x)) */
    LOGISTIC,     /* 1 / (exp(-x) + 1) */
    ERF_HALF,     /* (0.5 x) (1 + erf(x / sqrt(2))) */
    N_FORMS,
    OTHER_KAPPA = N_FORMS, /* NewGELU with 0.0447 */
    TANH_RETURNED,         /* NewGELU whose Tanh output is a graph output too */
    TINY_TERM,             /* NewGELU + 1e-9 x^3 */
    N_CASES
};

static const char *const names[] = {"NewGELU",      "torch tanh GELU", "BLOOM GELU",    "QuickGELU",
                                    "Mish",         "logistic",        "0.5 x erf GELU", "kappa 0.0447",
                                    "Tanh returned", "tiny x^3 term"};

/* Form f on x; its output.  *also: a value the graph returns besides. */
static int form(xf_graph *g, int f, int x, int *also)
{
    switch (f) {
    case NEW_GELU:
    case OTHER_KAPPA:
    case TANH_RETURNED:
    case TINY_TERM: {
        int a = sc(g, XF_OP_MUL, x, 0.5f, true);
        int p = sc(g, XF_OP_POW, x, 3.0f, false);
        int q = sc(g, XF_OP_MUL, p, f == OTHER_KAPPA ? 0.0447f : 0.044715f, true);
        int t = un(g, XF_OP_TANH, sc(g, XF_OP_MUL, bin(g, XF_OP_ADD, x, q), 0.7978846f, true));
        int y = bin(g, XF_OP_MUL, a, sc(g, XF_OP_ADD, t, 1.0f, true));
        if (f == TANH_RETURNED)
            *also = t;
        if (f == TINY_TERM)
            y = bin(g, XF_OP_ADD, y, sc(g, XF_OP_MUL, sc(g, XF_OP_POW, x, 3.0f, false), 1e-9f, false));
        return y;
    }
    case TORCH_TANH: {
        int cube = bin(g, XF_OP_MUL, x, bin(g, XF_OP_MUL, x, x));
        int inner = sc(g, XF_OP_MUL, bin(g, XF_OP_ADD, x, sc(g, XF_OP_MUL, cube, 0.044715f, true)), 0.7978846f, true);
        int u = sc(g, XF_OP_ADD, un(g, XF_OP_TANH, inner), 1.0f, true);
        return sc(g, XF_OP_MUL, bin(g, XF_OP_MUL, x, u), 0.5f, true);
    }
    case BLOOM: {
        int half = sc(g, XF_OP_MUL, x, 0.5f, false), a = sc(g, XF_OP_MUL, x, 0.79788456f, true);
        int d = sc(g, XF_OP_ADD, bin(g, XF_OP_MUL, sc(g, XF_OP_MUL, x, 0.044715f, true), x), 1.0f, true);
        int u = sc(g, XF_OP_ADD, un(g, XF_OP_TANH, bin(g, XF_OP_MUL, a, d)), 1.0f, true);
        return bin(g, XF_OP_MUL, half, u);
    }
    case QUICK_GELU: return bin(g, XF_OP_MUL, x, un(g, XF_OP_SIGMOID, sc(g, XF_OP_MUL, x, 1.702f, false)));
    case MISH: return bin(g, XF_OP_MUL, x, un(g, XF_OP_TANH, un(g, XF_OP_SOFTPLUS, x)));
    case LOGISTIC: return un(g, XF_OP_RECIPROCAL, sc(g, XF_OP_ADD, un(g, XF_OP_EXP, un(g, XF_OP_NEG, x)), 1.0f, false));
    default: { /* ERF_HALF */
        int e = un(g, XF_OP_ERF, sc(g, XF_OP_DIV, x, 1.41421356f, false));
        return bin(g, XF_OP_MUL, sc(g, XF_OP_MUL, x, 0.5f, false), sc(g, XF_OP_ADD, e, 1.0f, false));
    }
    }
}

/* The nodes of g a static session on `cpu` runs (not folded into another). */
static int running_nodes(const xf_graph *g)
{
    xf_session *s = NULL;
    xf_error err = {0};
    ck_assert_msg(xf_session_create(g, 17, "cpu", NULL, &s, &err) == XF_OK, "%s", err.msg);
    ck_assert(!xf_session_is_dynamic(s));
    const xf_graph *sg = xf_session_graph(s);
    int running = 0;
    for (int i = 0; i < sg->n_nodes; i++) {
        char impl[160];
        xf_session_node_impl(s, i, impl, sizeof impl);
        running += strncmp(impl, "folded into ", 12) != 0;
    }
    xf_session_free(s);
    return running;
}

/* Where x comes from: a Conv (its post-op; a 1x1 Conv after, so that the
 * region's values keep oneDNN's layout), a MatMul whose bias Add folds (its
 * post-op after the bias), a graph input scaled by 6 (the scaling's
 * primitive, or the region's own eltwise after it), the same with a Neg
 * of x returned too, before the region (the region's own eltwise), and a
 * Conv whose region is returned, stored plain (a region only where x is
 * plain too, as where a node of the form reads plain values only). */
enum { FROM_CONV, FROM_MATMUL, FROM_SCALED, FROM_SHARED, FROM_CONV_OUT, N_SOURCES };
static const char *const sources[] = {"on a Conv", "on a MatMul + bias", "on a scaled input",
                                      "on a scaled input also negated", "on a Conv, returned"};

static int source(xf_graph *g, int s)
{
    if (s == FROM_SHARED) {
        int x = source(g, FROM_SCALED);
        xf_graph_add_output(g, un(g, XF_OP_NEG, x));
        return x;
    }
    if (s == FROM_CONV_OUT)
        return source(g, FROM_CONV);
    if (s == FROM_CONV)
        return xf_bt_conv(g, xf_bt_input(g, XF_DT_FLOAT, SHAPE(1, 16, 9, 9)), 16, 16, 3, 1, XF_ACT_NONE);
    if (s == FROM_MATMUL) {
        int a = xf_bt_input(g, XF_DT_FLOAT, SHAPE(2, 7, 24));
        int m = bin(g, XF_OP_MATMUL, a, xf_bt_random_const(g, SHAPE(24, 40), false));
        return bin(g, XF_OP_ADD, m, xf_bt_random_const(g, SHAPE(40), false));
    }
    return sc(g, XF_OP_MUL, xf_bt_input(g, XF_DT_FLOAT, SHAPE(3, 50)), 6.0f, false);
}

START_TEST(written_out_activations)
{
    if (!xf_bt_have_cpu())
        return;
    xf_bt_seed(7);
    for (int f = 0; f < N_CASES; f++)
        for (int s = 0; s < N_SOURCES; s++) {
            xf_graph *g = xf_graph_create("region");
            int also = -1, y = form(g, f, source(g, s), &also);
            xf_graph_add_output(g, s == FROM_CONV ? xf_bt_conv(g, y, 16, 8, 1, 1, XF_ACT_NONE) : y);
            if (also >= 0)
                xf_graph_add_output(g, also);
            char what[96];
            snprintf(what, sizeof what, "%s %s", names[f], sources[s]);
            int running = running_nodes(g);
            /* one primitive: the source's, or the scaling's and the region's */
            int one = s == FROM_CONV ? 2 : s == FROM_SHARED ? 3 : 1;
            /* on a Conv, returned: folded or not as the layouts have it, the values checked */
            if (s != FROM_CONV_OUT && f < N_FORMS)
                ck_assert_msg(running == one || (s == FROM_SCALED && running == 2), "%s: %d nodes run", what,
                              running);
            /* the region's nodes run, at least the Tanh, the Add 1 and the last Mul besides the source */
            if (s != FROM_CONV_OUT && f >= N_FORMS)
                ck_assert_msg(running >= one + 3, "%s: %d nodes run, folded as an activation", what, running);
            xf_bt_check_cpu(g, 17, 1e-5, 1e-4, what);
            xf_graph_free(g);
        }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cpu_fold_region");
    TCase *tc = tcase_create("regions");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, written_out_activations);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
