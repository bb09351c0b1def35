/* Numerical check of a rule: both sides run on cpu_ref with the same random
 * float inputs, first on the shapes the rule was found on, then on random
 * re-dimensionings that keep its constraints and both sides' shape
 * inference satisfied. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xf_runtime.h"
#include "xf_verify.h"

/* Rules are written for this default-domain opset (Split sizes as an
 * attribute or input are both accepted there). */
#define RULE_OPSET 17
#define MAX_PARAMS 64

static uint64_t next_rand(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

/* Replaces every input dimension equal to some value v by the same new
 * value, so that equalities between dimensions survive. */
static void redimension(const xf_rule *r, uint64_t *s, xf_shape *shapes)
{
    int64_t from[64], to[64];
    int n_map = 0;
    for (int k = 0; k < r->pattern->n_inputs; k++) {
        xf_shape *sh = &shapes[k];
        for (int d = 0; d < sh->ndim; d++) {
            int m;
            for (m = 0; m < n_map && from[m] != sh->dims[d]; m++)
                ;
            if (m == n_map && n_map < 64) {
                from[n_map] = sh->dims[d];
                to[n_map++] = 1 + (int64_t)(next_rand(s) % (uint64_t)(sh->dims[d] + 2));
            }
            if (m < n_map)
                sh->dims[d] = to[m];
        }
    }
}

static bool apply_bindings(const xf_rule *r, xf_graph *pat, xf_graph *rep, const xf_shape *shapes)
{
    int64_t params[MAX_PARAMS] = {0};
    bool bound[MAX_PARAMS] = {0};
    if (r->n_params > MAX_PARAMS)
        return false;
    /* Parameters take the values the pattern was found with. */
    for (int b = 0; b < r->n_bindings; b++) {
        const xf_binding *bd = &r->bindings[b];
        if (bd->replacement || bd->e.n != 1 || bd->e.node[0].kind != XF_EX_PARAM || bound[bd->e.node[0].a])
            continue;
        int64_t v;
        if (xf_attr_field_get(&r->pattern->nodes[bd->node].attrs, bd->field, bd->index, &v)) {
            params[bd->e.node[0].a] = v;
            bound[bd->e.node[0].a] = true;
        }
    }
    int n_in = r->pattern->n_inputs;
    for (int b = 0; b < r->n_bindings; b++) {
        const xf_binding *bd = &r->bindings[b];
        int64_t v;
        xf_graph *g = bd->replacement ? rep : pat;
        if (!xf_expr_eval(&bd->e, params, bound, shapes, n_in, &v) ||
            !xf_attr_field_set(&g->nodes[bd->node].attrs, bd->field, bd->index, v))
            return false;
    }
    for (int i = 0; i < r->n_constraints; i++) {
        const xf_constraint *c = &r->constraints[i];
        int64_t a, b = 0;
        if (!xf_expr_eval(&c->lhs, params, bound, shapes, n_in, &a) ||
            (c->cmp != XF_CMP_ODD && !xf_expr_eval(&c->rhs, params, bound, shapes, n_in, &b)))
            return false;
        bool ok = c->cmp == XF_CMP_EQ ? a == b : c->cmp == XF_CMP_NE ? a != b : c->cmp == XF_CMP_LT ? a < b
                                                : c->cmp == XF_CMP_LE ? a <= b : (a % 2 + 2) % 2 == 1;
        if (!ok)
            return false;
    }
    return true;
}

/* Rule constants of side g (a copy of r's) made at the shape the inputs give them. */
static bool size_consts(const xf_rule *r, xf_graph *g, const xf_shape *shapes)
{
    for (int v = 0; v < g->n_values; v++) {
        const xf_rule_const *c = xf_rule_const_of(r, g, v);
        xf_shape s;
        xf_tensor *t;
        if (!c)
            continue;
        if (!xf_rule_const_shape(c, shapes, r->pattern->n_inputs, &s) || !(t = xf_const_make(c->kind, &s)))
            return false;
        xf_tensor_release(g->values[v].init);
        g->values[v].init = t;
        g->values[v].shape = s;
    }
    return true;
}

static xf_status run_side(const xf_graph *g, xf_tensor **inputs, xf_tensor **outputs, xf_error *err)
{
    xf_session *s;
    xf_status st = xf_session_create(g, RULE_OPSET, "cpu_ref", NULL, &s, err);
    if (st != XF_OK)
        return st;
    st = xf_session_run(s, inputs, outputs, err);
    xf_session_free(s);
    return st;
}

/* Runs one shape.  XF_ERR_UNSUPPORTED when the shape does not fit the rule. */
static xf_status try_shape(const xf_rule *r, const xf_shape *shapes, uint64_t seed, double *max_err, char *why,
                           size_t why_len)
{
    xf_graph *pat = xf_graph_clone(r->pattern), *rep = xf_graph_clone(r->replacement);
    int n_in = r->pattern->n_inputs, n_out = r->pattern->n_outputs;
    xf_tensor **in = calloc((size_t)n_in + 1, sizeof *in);
    xf_tensor **out = calloc(2 * (size_t)n_out + 1, sizeof *out);
    xf_status st = XF_ERR_NOMEM;
    xf_error err;
    if (!pat || !rep || !in || !out)
        goto done;
    st = XF_ERR_UNSUPPORTED;
    for (int k = 0; k < n_in; k++) {
        pat->values[pat->inputs[k]].shape = shapes[k];
        rep->values[rep->inputs[k]].shape = shapes[k];
    }
    if (!apply_bindings(r, pat, rep, shapes) || !size_consts(r, pat, shapes) || !size_consts(r, rep, shapes) ||
        xf_graph_infer_shapes(pat, RULE_OPSET, &err) != XF_OK ||
        xf_graph_infer_shapes(rep, RULE_OPSET, &err) != XF_OK)
        goto done;
    for (int j = 0; j < n_out; j++)
        if (!xf_shape_equal(&pat->values[pat->outputs[j]].shape, &rep->values[rep->outputs[j]].shape))
            goto done;
    st = XF_ERR_NOMEM;
    for (int k = 0; k < n_in; k++)
        if (!(in[k] = xf_tensor_random(pat->values[pat->inputs[k]].dtype, &shapes[k], seed + (uint64_t)k)))
            goto done;
    if ((st = run_side(pat, in, out, &err)) != XF_OK || (st = run_side(rep, in, out + n_out, &err)) != XF_OK) {
        snprintf(why, why_len, "cannot run: %s", err.msg);
        goto done;
    }
    for (int j = 0; j < n_out; j++) {
        double abs_err = 0;
        bool ok = false;
        st = xf_tensor_compare(out[n_out + j], out[j], 1e-4, 1e-3, &abs_err, NULL, &ok, &err);
        if (abs_err > *max_err || isnan(abs_err))
            *max_err = abs_err;
        if (st != XF_OK || !ok) {
            char sb[64];
            snprintf(why, why_len, "output %d differs on input 0 of shape %s: max |diff| %.3g", j,
                     xf_shape_str(&shapes[0], sb, sizeof sb), abs_err);
            st = XF_ERR_INVALID;
            goto done;
        }
    }
    st = XF_OK;
done:
    for (int k = 0; in && k < n_in; k++)
        xf_tensor_release(in[k]);
    for (int j = 0; out && j < 2 * n_out; j++)
        xf_tensor_release(out[j]);
    free(in);
    free(out);
    xf_graph_free(pat);
    xf_graph_free(rep);
    return st;
}

xf_status xf_verify_numeric(const xf_rule *r, int n_shapes, uint64_t seed, double *max_err, char *why,
                            size_t why_len)
{
    *max_err = 0;
    if (why_len)
        why[0] = 0;
    int n_in = r->pattern->n_inputs;
    xf_shape *shapes = calloc((size_t)n_in + 1, sizeof *shapes);
    if (!shapes)
        return XF_ERR_NOMEM;
    uint64_t s = seed;
    int ran = 0;
    xf_status st = XF_OK;
    for (int attempt = 0; attempt < 20 * n_shapes && ran < n_shapes; attempt++) {
        for (int k = 0; k < n_in; k++)
            shapes[k] = r->pattern->values[r->pattern->inputs[k]].shape;
        if (attempt > 0)
            redimension(r, &s, shapes);
        st = try_shape(r, shapes, seed + 1000u * (uint64_t)attempt, max_err, why, why_len);
        if (st == XF_OK)
            ran++;
        else if (st != XF_ERR_UNSUPPORTED)
            break;
    }
    free(shapes);
    if (st != XF_OK && st != XF_ERR_UNSUPPORTED)
        return st;
    if (ran == 0) {
        if (why_len && !why[0])
            snprintf(why, why_len, "no shape satisfies the rule's constraints");
        return XF_ERR_UNSUPPORTED;
    }
    return XF_OK;
}
