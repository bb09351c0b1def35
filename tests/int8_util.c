/* Helpers of the cpu backend's integer suites (int8_util.h). */
#include "int8_util.h"
#include "backend_util.h"
#include "core_builders.h"
#include "xf_runtime.h"
#include "xf_test_util.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


int64_t q8_type_lo(xf_dtype t) { return t == XF_DT_INT8 ? -128 : t == XF_DT_UINT8 ? 0 : INT32_MIN; }
int64_t q8_type_hi(xf_dtype t) { return t == XF_DT_INT8 ? 127 : t == XF_DT_UINT8 ? 255 : INT32_MAX; }

int64_t q8_get_int(const xf_tensor *t, int64_t i)
{
    switch (t->dtype) {
    case XF_DT_INT8: return ((const int8_t *)t->data)[i];
    case XF_DT_UINT8: return ((const uint8_t *)t->data)[i];
    default: return ((const int32_t *)t->data)[i];
    }
}

void q8_set_int(xf_tensor *t, int64_t i, int64_t v)
{
    switch (t->dtype) {
    case XF_DT_INT8: ((int8_t *)t->data)[i] = (int8_t)v; break;
    case XF_DT_UINT8: ((uint8_t *)t->data)[i] = (uint8_t)v; break;
    default: ((int32_t *)t->data)[i] = (int32_t)v; break;
    }
}

/* Elements drawn from [lo, hi]. */
xf_tensor *q8_ints(xf_dtype t, xf_shape s, int64_t lo, int64_t hi)
{
    xf_tensor *x = xf_tensor_create(t, &s);
    ck_assert_ptr_nonnull(x);
    for (int64_t i = 0; i < xf_shape_numel(&s); i++)
        q8_set_int(x, i, xf_bt_rnd(lo, hi));
    return x;
}

/* Elements over the whole range of the type. */
xf_tensor *q8_full_range(xf_dtype t, xf_shape s) { return q8_ints(t, s, q8_type_lo(t), q8_type_hi(t)); }

xf_tensor *q8_int_scalar(xf_dtype t, int64_t v) { return q8_ints(t, SCALAR, v, v); }

/* Float elements log-uniform in [lo, hi]. */
xf_tensor *q8_scales(xf_shape s, double lo, double hi)
{
    xf_tensor *x = xf_tensor_create(XF_DT_FLOAT, &s);
    ck_assert_ptr_nonnull(x);
    for (int64_t i = 0; i < xf_shape_numel(&s); i++)
        ((float *)x->data)[i] = (float)(lo * pow(hi / lo, (double)xf_bt_rnd(0, 1000) / 1000.0));
    return x;
}

/* Adds t (taking it over) as an initializer, or as a graph input fed t. */
int q8_operand(q8_case *c, xf_tensor *t, bool constant)
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


/* A zero point of type t in form f (-1 when absent); channels: the
 * length of a per-channel one. */
int q8_zero_point(q8_case *c, xf_dtype t, zp_form f, int64_t channels)
{
    if (f == ZP_ABSENT)
        return -1;
    if (f == ZP_ZERO_CHANNELS || f == ZP_CHANNELS)
        return q8_operand(c, f == ZP_CHANNELS ? q8_full_range(t, SHAPE(channels)) : q8_ints(t, SHAPE(channels), 0, 0), true);
    int64_t v = f == ZP_ZERO ? 0 : xf_bt_rnd(q8_type_lo(t), q8_type_hi(t));
    return q8_operand(c, q8_int_scalar(t, v), f != ZP_RUNTIME);
}


void q8_set_geometry(xf_graph *g, int n, const conv_geom *geo)
{
    xf_bt_set_window(attrs(g, n), geo->ns, NULL, geo->s, geo->pb, geo->pe, geo->d);
    attrs(g, n)->group = geo->group;
}

/* Adds node op on in[0..n_in) (-1: an omitted input) as the graph's
 * output, with geometry geo when a convolution, and infers shapes. */
q8_case q8_finish(q8_case c, xf_op op, int n_in, const int *in, const conv_geom *geo)
{
    while (n_in > 0 && in[n_in - 1] < 0)
        n_in--;
    c.node = xf_bt_finish_single(c.g, op, n_in, in);
    if (geo)
        q8_set_geometry(c.g, c.node, geo);
    infer_ok(c.g, 21);
    return c;
}

void q8_case_free(q8_case *c)
{
    for (int i = 0; i < c->n_feed; i++)
        xf_tensor_release(c->feed[i]);
    xf_graph_free(c->g);
}

/* ---------------------------------------------------------------- running */

/* Whether the cpu backend prepares the case's node on oneDNN (cpu_ref
 * nodes get no state). */
bool q8_on_onednn(const q8_case *c)
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

int64_t q8_off_by_one, q8_compared;

/* Whether output `got` of the cpu backend matches cpu_ref's `want`: equal
 * (float and int32 outputs) or at most 1 apart (quantized outputs, counted
 * when count). */
void q8_compare_output(const xf_tensor *got, const xf_tensor *want, bool count, const char *what)
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
        int64_t d = llabs(q8_get_int(got, i) - q8_get_int(want, i));
        ck_assert_msg(d <= (exact ? 0 : 1), "%s: element %lld is %lld, cpu_ref %lld", what, (long long)i,
                      (long long)q8_get_int(got, i), (long long)q8_get_int(want, i));
        if (count) {
            q8_off_by_one += d;
            q8_compared++;
        }
    }
}

/* Runs the case on cpu_ref and on cpu (static and dynamic mode, twice
 * each) and compares the outputs (q8_compare_output; counted once per case).
 * want_onednn: whether the backend must run it itself.  Frees the case. */
void q8_check_case(q8_case *c, bool want_onednn, const char *what)
{
    xf_error err = {0};
    bool onednn = q8_on_onednn(c);
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
                q8_compare_output(got[k], want[k], !dynamic && run == 0, where);
                xf_tensor_release(got[k]);
            }
        }
        xf_session_free(s);
    }
    for (int k = 0; k < n_out; k++)
        xf_tensor_release(want[k]);
    xf_session_free(ref);
    q8_case_free(c);
}

/* Prints how many QLinear outputs were 1 off and bounds it: only sums
 * beyond 2^24 may round apart, so they are rare. */
void q8_report_off_by_one(const char *op)
{
    printf("%s: %lld of %lld outputs 1 off cpu_ref\n", op, (long long)q8_off_by_one, (long long)q8_compared);
    ck_assert_msg(q8_off_by_one * 1000 <= q8_compared, "%s: %lld of %lld outputs 1 off", op, (long long)q8_off_by_one,
                  (long long)q8_compared);
    q8_off_by_one = q8_compared = 0;
}

/* A y_scale that spreads the requantized sums of k products of centered
 * 8-bit values (about 74 x 74 x sqrt(k) apart) over about +-50, times a
 * random factor in [1/2, 2] (some saturate). */
xf_tensor *q8_y_scale_for(float x_scale, const xf_tensor *w_scale, int64_t k)
{
    double mean = 0;
    for (int64_t i = 0; i < xf_tensor_numel(w_scale); i++)
        mean += ((const float *)w_scale->data)[i] / (double)xf_tensor_numel(w_scale);
    xf_tensor *t = q8_scales(SCALAR, 0.5, 2.0);
    ((float *)t->data)[0] *= (float)(x_scale * mean * 74 * 74 * sqrt((double)k) / 50);
    return t;
}
