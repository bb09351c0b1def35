/* One-node graphs run on cpu_ref (kernel_case_util.h). */
#include "kernel_case_util.h"

#include <check.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

xf_tensor *mk(xf_dtype t, int ndim, const int64_t *dims, const void *data)
{
    xf_shape s = xf_shape_make(ndim, dims);
    xf_tensor *x = xf_tensor_from_data(t, &s, data);
    ck_assert_ptr_nonnull(x);
    return x;
}

void expect(xf_tensor *t, xf_dtype dt, int ndim, const int64_t *dims, const double *want)
{
    ck_assert_ptr_nonnull(t);
    ck_assert_msg(t->dtype == dt, "dtype %s, want %s", xf_dtype_name(t->dtype), xf_dtype_name(dt));
    xf_shape s = xf_shape_make(ndim, dims);
    char a[128], b[128];
    ck_assert_msg(xf_shape_equal(&t->shape, &s), "shape %s, want %s", xf_shape_str(&t->shape, a, sizeof a),
                  xf_shape_str(&s, b, sizeof b));
    for (int64_t i = 0; i < xf_tensor_numel(t); i++) {
        double got = xf_tensor_get_f64(t, i);
        ck_assert_msg(got == want[i] || fabs(got - want[i]) <= 1e-5 + 1e-5 * fabs(want[i]) ||
                          (isnan(got) && isnan(want[i])),
                      "element %lld: %.7g, want %.7g", (long long)i, got, want[i]);
    }
    xf_tensor_release(t);
}

node_case make_case(xf_op op, int n_in, ...)
{
    node_case c = {.op = op, .n_in = n_in, .n_out = 1, .opset = 17};
    xf_attrs_default(op, &c.a);
    va_list ap;
    va_start(ap, n_in);
    for (int i = 0; i < n_in; i++)
        c.in[i] = va_arg(ap, xf_tensor *);
    va_end(ap);
    return c;
}

xf_graph *case_graph(const node_case *c)
{
    xf_graph *g = xf_graph_create("case");
    int ins[XF_CASE_MAX_IN], outs[8];
    char name[32];
    for (int i = 0; i < c->n_in; i++) {
        snprintf(name, sizeof name, "in%d", i);
        if (!c->in[i])
            ins[i] = -1;
        else if (c->feed & (1u << i))
            ins[i] = xf_graph_add_input(g, name, c->in[i]->dtype, &c->in[i]->shape);
        else
            ins[i] = xf_graph_add_initializer(g, name, c->in[i]);
    }
    for (int k = 0; k < c->n_out; k++) {
        snprintf(name, sizeof name, "out%d", k);
        outs[k] = c->omit_out & (1u << k) ? -1 : xf_graph_add_value(g, name, XF_DT_UNDEFINED, NULL);
    }
    int node = xf_graph_add_node(g, c->op, "n0", c->n_in, ins, c->n_out, outs);
    ck_assert_int_ge(node, 0);
    g->nodes[node].attrs = c->a;
    xf_tensor_retain(c->a.value); /* the graph owns one reference */
    for (int k = 0; k < c->n_out; k++)
        if (outs[k] >= 0)
            xf_graph_add_output(g, outs[k]);
    return g;
}

/* The case's graph inputs, in order. */
static void case_feeds(const node_case *c, xf_tensor **feeds)
{
    int n = 0;
    for (int i = 0; i < c->n_in; i++)
        if (c->in[i] && (c->feed & (1u << i)))
            feeds[n++] = c->in[i];
}

void release_case(node_case *c)
{
    for (int k = 0; k < c->n_in; k++)
        xf_tensor_release(c->in[k]);
    xf_tensor_release(c->a.value);
}

void run_case(node_case *c, xf_tensor **outs)
{
    xf_graph *g = case_graph(c);
    xf_tensor *feeds[XF_CASE_MAX_IN];
    case_feeds(c, feeds);
    xf_tensor *dyn[8];
    for (int mode = 0; mode < 2; mode++) {
        xf_session_options opt = {.force_dynamic = mode == 1};
        xf_session *s;
        xf_error err = {0};
        xf_status st = xf_session_create(g, c->opset, "cpu_ref", &opt, &s, &err);
        ck_assert_msg(st == XF_OK, "create: %s", err.msg);
        st = xf_session_run(s, feeds, mode ? dyn : outs, &err);
        ck_assert_msg(st == XF_OK, "run: %s", err.msg);
        xf_session_free(s);
    }
    for (int k = 0; k < g->n_outputs; k++) {
        bool ok;
        ck_assert_int_eq(xf_tensor_compare(dyn[k], outs[k], 0, 0, NULL, NULL, &ok, NULL), XF_OK);
        ck_assert_msg(ok, "static and dynamic mode differ on output %d", k);
        xf_tensor_release(dyn[k]);
    }
    xf_graph_free(g);
    release_case(c);
}

xf_tensor *run1(node_case c)
{
    xf_tensor *out;
    run_case(&c, &out);
    return out;
}

void expect_infer_status(node_case c, xf_status st, const char *msg)
{
    xf_graph *g = case_graph(&c);
    xf_error e = {0};
    ck_assert_msg(xf_graph_infer_shapes(g, c.opset, &e) == st, "status %s (%s); want %s for '%s'",
                  xf_status_name(e.status), e.msg, xf_status_name(st), msg);
    ck_assert_msg(strstr(e.msg, "node 'n0' (") && strstr(e.msg, msg), "'%s' lacks '%s'", e.msg, msg);
    xf_graph_free(g);
    release_case(&c);
}

void expect_infer_error(node_case c, const char *msg) { expect_infer_status(c, XF_ERR_INVALID, msg); }

void expect_run_error(node_case c, const char *msg)
{
    xf_graph *g = case_graph(&c);
    xf_tensor *feeds[XF_CASE_MAX_IN];
    case_feeds(&c, feeds);
    xf_session *s;
    xf_error e = {0};
    ck_assert_msg(xf_session_create(g, c.opset, "cpu_ref", NULL, &s, &e) == XF_OK, "%s", e.msg);
    xf_tensor *out[8] = {NULL};
    ck_assert_msg(xf_session_run(s, feeds, out, &e) != XF_OK, "ran; want '%s'", msg);
    ck_assert_msg(strstr(e.msg, "node 'n0' (") && strstr(e.msg, msg), "'%s' lacks '%s'", e.msg, msg);
    xf_session_free(s);
    xf_graph_free(g);
    release_case(&c);
}

xf_tensor *iota_f32(int ndim, const int64_t *dims, float start)
{
    xf_shape s = xf_shape_make(ndim, dims);
    xf_tensor *t = xf_tensor_create(XF_DT_FLOAT, &s);
    for (int64_t i = 0; i < xf_tensor_numel(t); i++)
        ((float *)t->data)[i] = start + (float)i;
    return t;
}
