/* Pattern matching: preparing rules and finding every embedding of a rule's
 * pattern in a graph.
 *
 * Pattern nodes are matched in the pattern's topological order, so when a
 * node is tried every pattern node feeding it is already placed; its
 * candidates are then the consumers of an already placed value (a pattern
 * node's output or a bound rule input), or every node of its op when none is
 * placed yet.  Rule inputs bind to graph values of the same dtype and rank
 * (the conditions core/xf_rule.h states for a generalized rule); other
 * dims are not compared, because a generalized rule holds for every shape
 * that both sides' shape inference accepts, and rewriting re-infers. */
#include "opt_internal.h"
#include "xf_runtime.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ rule sets */

static void plan_free(rule_plan *p)
{
    for (int i = 0; i < XF_MATCH_MAX_NODES; i++) {
        free(p->in[i]);
        free(p->node_bindings[i]);
    }
}

static bool is_bare_param(const xf_expr *e) { return e->n == 1 && e->node[0].kind == XF_EX_PARAM; }

/* Fills p for rule r, or says why r cannot be matched. */
static xf_status plan_make(const xf_rule *r, rule_plan *p, xf_error *err)
{
    memset(p, 0, sizeof *p);
    p->rule = r;
    xf_status st = xf_rule_validate(r, err);
    if (st != XF_OK)
        return st;
    const xf_graph *pg = r->pattern;
    if (pg->n_nodes < 1 || pg->n_nodes > XF_MATCH_MAX_NODES || pg->n_inputs > XF_MATCH_MAX_INPUTS ||
        pg->n_outputs > XF_MATCH_MAX_INPUTS || r->n_params > XF_MATCH_MAX_PARAMS)
        return xf_error_set(err, XF_ERR_UNSUPPORTED, "rule %s: beyond the matcher's limits (%d nodes, %d inputs, "
                            "%d params)", r->name, pg->n_nodes, pg->n_inputs, r->n_params);
    for (int i = 0; i < r->replacement->n_nodes; i++)
        if (r->replacement->nodes[i].op == XF_OP_OPAQUE)
            return xf_error_set(err, XF_ERR_UNSUPPORTED, "rule %s: opaque node in the replacement", r->name);
    p->n_nodes = pg->n_nodes;
    p->n_outputs = pg->n_outputs;
    for (int i = 0; i < pg->n_nodes; i++) {
        int k = 0;
        while (k < p->n_ops && p->op[k] != pg->nodes[i].op)
            k++;
        if (k == p->n_ops) {
            p->op[p->n_ops] = pg->nodes[i].op;
            p->op_count[p->n_ops++] = 0;
        }
        p->op_count[k]++;
    }
    for (int i = 0; i < pg->n_nodes; i++) {
        const xf_node *n = &pg->nodes[i];
        if (n->op == XF_OP_OPAQUE || !(xf_op_get_info(n->op)->flags & XF_OPF_GEN))
            return xf_error_set(err, XF_ERR_UNSUPPORTED, "rule %s: pattern op %s is not rewritable", r->name,
                                xf_op_name(n->op));
        p->in[i] = calloc((size_t)(n->n_inputs > 0 ? n->n_inputs : 1), sizeof *p->in[i]);
        if (!p->in[i])
            return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        for (int k = 0; k < n->n_inputs; k++) {
            int v = n->inputs[k];
            pin_ref *ref = &p->in[i][k];
            if (v < 0) {
                ref->kind = PIN_NONE;
            } else if (pg->values[v].producer >= 0) {
                *ref = (pin_ref){PIN_NODE, pg->values[v].producer, pg->values[v].producer_out};
            } else if (opt_is_const(pg, v)) {
                *ref = (pin_ref){PIN_CONST, v, 0};
            } else {
                ref->kind = PIN_NONE;
                for (int q = 0; q < pg->n_inputs; q++)
                    if (pg->inputs[q] == v)
                        *ref = (pin_ref){PIN_RULE_INPUT, q, 0};
                if (ref->kind == PIN_NONE)
                    return xf_error_set(err, XF_ERR_INVALID, "rule %s: pattern value '%s' is neither an input, "
                                        "a constant nor a node output", r->name, pg->values[v].name);
            }
        }
    }
    for (int j = 0; j < pg->n_outputs; j++) {
        int v = pg->outputs[j];
        if (v < 0 || pg->values[v].producer < 0)
            return xf_error_set(err, XF_ERR_UNSUPPORTED, "rule %s: pattern output %d is not computed by the "
                                "pattern", r->name, j);
        p->out[j] = (pin_ref){PIN_NODE, pg->values[v].producer, pg->values[v].producer_out};
    }
    for (int b = 0; b < r->n_bindings; b++) {
        const xf_binding *bd = &r->bindings[b];
        if (!bd->replacement)
            p->generalized[bd->node] = true;
        if (bd->replacement || !is_bare_param(&bd->e))
            continue;
        int i = bd->node;
        int *grown = realloc(p->node_bindings[i], sizeof(int) * (size_t)(p->n_node_bindings[i] + 1));
        if (!grown)
            return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        p->node_bindings[i] = grown;
        grown[p->n_node_bindings[i]++] = b;
    }
    return XF_OK;
}

xf_status xf_rule_set_create(const xf_rule *const *rules, int n_rules, xf_rule_set **out, xf_error *err)
{
    *out = NULL;
    xf_rule_set *rs = calloc(1, sizeof *rs);
    if (!rs || !(rs->plans = calloc((size_t)(n_rules > 0 ? n_rules : 1), sizeof *rs->plans)) ||
        !(rs->consts = calloc(1, sizeof *rs->consts))) {
        if (rs)
            free(rs->plans);
        free(rs);
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    }
    bool first_reason = true;
    for (int i = 0; i < n_rules; i++) {
        xf_error why = {0};
        xf_status st = plan_make(rules[i], &rs->plans[rs->n], &why);
        if (st == XF_OK) {
            rs->n++;
            continue;
        }
        plan_free(&rs->plans[rs->n]);
        if (st == XF_ERR_NOMEM) {
            xf_rule_set_free(rs);
            return xf_error_set(err, st, "%s", why.msg);
        }
        if (first_reason && err) {
            *err = why;
            first_reason = false;
        }
        rs->skipped++;
    }
    *out = rs;
    return XF_OK;
}

void xf_rule_set_free(xf_rule_set *rs)
{
    if (!rs)
        return;
    for (int i = 0; i < rs->n; i++)
        plan_free(&rs->plans[i]);
    for (int i = 0; rs->consts && i < rs->consts->n; i++)
        xf_tensor_release(rs->consts->t[i]);
    if (rs->consts) {
        free(rs->consts->t);
        free(rs->consts->kind);
    }
    free(rs->consts);
    free(rs->plans);
    free(rs);
}

bool opt_dtype_fits(xf_dtype rule, xf_dtype have)
{
    if (rule == have)
        return true;
    return rule == XF_DT_FLOAT && xf_dtype_is_float(have);
}

xf_tensor *opt_rule_const_tensor(const xf_rule_set *rs, xf_const_kind k, const xf_shape *s, xf_dtype dt)
{
    struct opt_const_cache *cc = rs->consts;
    for (int i = 0; i < cc->n; i++)
        if (cc->kind[i] == k && cc->t[i]->dtype == dt && xf_shape_equal(&cc->t[i]->shape, s))
            return cc->t[i];
    xf_tensor **grown = realloc(cc->t, ((size_t)cc->n + 1) * sizeof *grown);
    if (grown)
        cc->t = grown;
    xf_const_kind *kinds = grown ? realloc(cc->kind, ((size_t)cc->n + 1) * sizeof *kinds) : NULL;
    if (!kinds)
        return NULL;
    cc->kind = kinds;
    xf_tensor *t = xf_const_make(k, s);
    if (t && t->dtype != dt) {
        xf_tensor *f = xf_tensor_as_float(t, dt);
        xf_tensor_release(t);
        t = f;
    }
    if (t) {
        cc->t[cc->n] = t;
        cc->kind[cc->n++] = k;
    }
    return t;
}

int xf_rule_set_count(const xf_rule_set *rs) { return rs->n; }
int xf_rule_set_skipped(const xf_rule_set *rs) { return rs->skipped; }
const xf_rule *xf_rule_set_rule(const xf_rule_set *rs, int i) { return rs->plans[i].rule; }

/* ------------------------------------------------------------ graph index */

xf_status opt_index_build(const xf_graph *g, graph_index *gi, xf_error *err)
{
    memset(gi, 0, sizeof *gi);
    int nv = g->n_values, uses = 0;
    for (int i = 0; i < g->n_nodes; i++)
        uses += g->nodes[i].n_inputs;
    gi->use_start = calloc((size_t)nv + 2, sizeof *gi->use_start);
    gi->use_node = malloc(sizeof(int) * (size_t)(uses + 1));
    gi->op_start = calloc(XF_OP_COUNT + 3, sizeof *gi->op_start);
    gi->op_node = malloc(sizeof(int) * (size_t)(g->n_nodes + 1));
    gi->is_output = calloc((size_t)nv + 1, sizeof *gi->is_output);
    if (!gi->use_start || !gi->use_node || !gi->op_start || !gi->op_node || !gi->is_output) {
        opt_index_free(gi);
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory indexing %d nodes", g->n_nodes);
    }
    /* Counting sort into CSR arrays: consumers in node order, so matches
     * come out in a deterministic order. */
    for (int i = 0; i < g->n_nodes; i++) {
        for (int k = 0; k < g->nodes[i].n_inputs; k++)
            if (g->nodes[i].inputs[k] >= 0)
                gi->use_start[g->nodes[i].inputs[k] + 2]++;
        gi->op_start[g->nodes[i].op + 2]++;
    }
    for (int v = 0; v < nv; v++)
        gi->use_start[v + 2] += gi->use_start[v + 1];
    for (int op = 0; op <= XF_OP_COUNT; op++)
        gi->op_start[op + 2] += gi->op_start[op + 1];
    for (int i = 0; i < g->n_nodes; i++) {
        const xf_node *n = &g->nodes[i];
        /* A node reading one value twice is listed twice, next to itself. */
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] >= 0)
                gi->use_node[gi->use_start[n->inputs[k] + 1]++] = i;
        gi->op_node[gi->op_start[n->op + 1]++] = i;
    }
    for (int k = 0; k < g->n_outputs; k++)
        if (g->outputs[k] >= 0)
            gi->is_output[g->outputs[k]] = true;
    return XF_OK;
}

void opt_index_free(graph_index *gi)
{
    free(gi->use_start);
    free(gi->use_node);
    free(gi->op_start);
    free(gi->op_node);
    free(gi->is_output);
    memset(gi, 0, sizeof *gi);
}
/* ------------------------------------------------------------ attributes */

static bool ints_equal(const int64_t *a, const int64_t *b, int n)
{
    for (int i = 0; i < n; i++)
        if (a[i] != b[i])
            return false;
    return true;
}

/* Equality of two attribute blocks of one op.  Unused fields hold their
 * defaults, so comparing every field compares what the op uses.  A kernel
 * of 0 means "the weight's shape": it equals any kernel, since shape
 * inference ties the kernel to the weight either way; likewise a block
 * that gives no spatial count takes it from the tensors. */
static bool attrs_equal(const xf_attrs *a, const xf_attrs *b)
{
    if (a->n_spatial && b->n_spatial && a->n_spatial != b->n_spatial)
        return false;
    for (int i = 0; i < XF_MAX_SPATIAL; i++)
        if (a->kernel[i] && b->kernel[i] && a->kernel[i] != b->kernel[i])
            return false;
    if (!ints_equal(a->strides, b->strides, XF_MAX_SPATIAL) || !ints_equal(a->pads, b->pads, 2 * XF_MAX_SPATIAL) ||
        !ints_equal(a->dilations, b->dilations, XF_MAX_SPATIAL))
        return false;
    if (!ints_equal(a->output_padding, b->output_padding, XF_MAX_SPATIAL) ||
        !ints_equal(a->output_shape, b->output_shape, XF_MAX_SPATIAL) || a->has_output_shape != b->has_output_shape)
        return false;
    if (a->group != b->group || a->offset_group != b->offset_group || a->auto_pad != b->auto_pad ||
        a->ceil_mode != b->ceil_mode || a->count_include_pad != b->count_include_pad ||
        a->storage_order != b->storage_order || a->activation != b->activation || a->axis != b->axis)
        return false;
    if (a->n_axes != b->n_axes || a->has_axes != b->has_axes || !ints_equal(a->axes, b->axes, a->n_axes))
        return false;
    if (a->n_perm != b->n_perm || !ints_equal(a->perm, b->perm, a->n_perm))
        return false;
    if (a->keepdims != b->keepdims || a->noop_with_empty_axes != b->noop_with_empty_axes ||
        a->num_outputs != b->num_outputs || a->n_split != b->n_split || !ints_equal(a->split, b->split, a->n_split))
        return false;
    if (a->allowzero != b->allowzero || a->fmod != b->fmod || a->batch_dims != b->batch_dims ||
        a->topk_smallest != b->topk_smallest || a->topk_unsorted != b->topk_unsorted || a->reduction != b->reduction ||
        a->block_size != b->block_size || a->output_dtype != b->output_dtype || a->no_saturate != b->no_saturate ||
        a->round_mode != b->round_mode ||
        a->roi_max != b->roi_max || a->roi_output_h != b->roi_output_h || a->roi_output_w != b->roi_output_w ||
        a->roi_sampling_ratio != b->roi_sampling_ratio || a->roi_spatial_scale != b->roi_spatial_scale ||
        a->roi_output_half_pixel != b->roi_output_half_pixel || a->center_point_box != b->center_point_box ||
        a->grid_mode != b->grid_mode || a->grid_padding != b->grid_padding ||
        a->grid_align_corners != b->grid_align_corners ||
        a->dft_inverse != b->dft_inverse || a->dft_onesided != b->dft_onesided ||
        a->window_symmetric != b->window_symmetric ||
        a->isinf_no_neg != b->isinf_no_neg || a->isinf_no_pos != b->isinf_no_pos || a->gelu_tanh != b->gelu_tanh ||
        a->shift_right != b->shift_right || a->prelu_channels != b->prelu_channels ||
        a->select_last_index != b->select_last_index || a->cumsum_exclusive != b->cumsum_exclusive ||
        a->cumsum_reverse != b->cumsum_reverse || a->lrn_size != b->lrn_size || a->lrn_bias != b->lrn_bias ||
        a->lp_p != b->lp_p ||
        a->trilu_lower != b->trilu_lower || a->depth_crd != b->depth_crd || a->eye_k != b->eye_k ||
        a->onehot_legacy != b->onehot_legacy || a->has_axis != b->has_axis ||
        !xf_rnn_attrs_equal(&a->rnn, &b->rnn) || !xf_attn_attrs_equal(&a->attn, &b->attn) || a->resize_mode != b->resize_mode ||
        a->resize_coord != b->resize_coord || a->resize_nearest != b->resize_nearest ||
        a->resize_exclude != b->resize_exclude || a->resize_antialias != b->resize_antialias ||
        a->resize_keep != b->resize_keep || a->bn_training != b->bn_training ||
        (a->bn_training && a->bn_momentum != b->bn_momentum) || a->softmax_legacy != b->softmax_legacy || a->alpha != b->alpha ||
        a->beta != b->beta || a->epsilon != b->epsilon || a->trans_a != b->trans_a || a->trans_b != b->trans_b)
        return false;
    if (a->ms_act != b->ms_act || a->ms_act_params[0] != b->ms_act_params[0] ||
        a->ms_act_params[1] != b->ms_act_params[1] || a->trans_batch_a != b->trans_batch_a ||
        a->trans_batch_b != b->trans_batch_b)
        return false;
    return a->value == b->value;
}

/* ------------------------------------------------------------ matching */

typedef struct matcher {
    const rule_plan *p;
    const xf_graph *g;  /* the graph searched */
    const graph_index *gi;
    xf_match m;
    bool bound[XF_MATCH_MAX_PARAMS];
    xf_match_fn fn;
    void *user;
    bool stop;
    bool bound_some; /* node_fits bound a rule input or parameter */
} matcher;

static bool node_in_match(const matcher *mt, int depth, int gn)
{
    for (int i = 0; i < depth; i++)
        if (mt->m.node[i] == gn)
            return true;
    return false;
}

static bool const_equal(const xf_graph *pg, int pv, const xf_graph *g, int gv)
{
    if (!opt_is_const(g, gv))
        return false;
    const xf_tensor *a = pg->values[pv].init, *b = g->values[gv].init;
    if (a == b)
        return true;
    return a->dtype == b->dtype && xf_shape_equal(&a->shape, &b->shape) && a->nbytes == b->nbytes &&
           a->dtype != XF_DT_STRING && (a->nbytes == 0 || memcmp(a->data, b->data, a->nbytes) == 0);
}

/* Tries pattern node `depth` on graph node gn: op, inputs and attributes.
 * Binds rule inputs and parameters in mt (the caller restores them). */
static bool node_fits(matcher *mt, int depth, int gn)
{
    const xf_graph *pg = mt->p->rule->pattern, *g = mt->g;
    const xf_node *pn = &pg->nodes[depth], *n = &g->nodes[gn];
    if (n->op != pn->op || n->n_inputs != pn->n_inputs || n->n_outputs != pn->n_outputs ||
        node_in_match(mt, depth, gn))
        return false;
    for (int k = 0; k < pn->n_inputs; k++) {
        const pin_ref *ref = &mt->p->in[depth][k];
        int v = n->inputs[k];
        switch (ref->kind) {
        case PIN_NONE:
            if (v >= 0)
                return false;
            break;
        case PIN_NODE:
            if (v != g->nodes[mt->m.node[ref->idx]].outputs[ref->out])
                return false;
            break;
        case PIN_CONST: {
            /* A rule constant matches any constant of its kind (its shape
             * is checked once the inputs are bound); any other constant
             * only an equal one. */
            const xf_rule_const *rc = xf_rule_const_of(mt->p->rule, pg, pn->inputs[k]);
            if (rc ? !opt_is_const(g, v) || xf_const_kind_of(g->values[v].init) != rc->kind
                   : !const_equal(pg, pn->inputs[k], g, v))
                return false;
            break;
        }
        case PIN_RULE_INPUT:
            if (v < 0)
                return false;
            if (mt->m.input[ref->idx] >= 0) {
                if (mt->m.input[ref->idx] != v)
                    return false;
            } else {
                /* Rules are proved for inputs of their own rank: a law of a
                 * scalar need not hold for a full tensor in its place. */
                const xf_value *rv = &pg->values[pg->inputs[ref->idx]];
                if (!opt_dtype_fits(rv->dtype, g->values[v].dtype) || g->values[v].shape.ndim != rv->shape.ndim)
                    return false;
                mt->m.input[ref->idx] = v;
                mt->bound_some = true;
            }
            break;
        }
    }
    /* An elementwise op broadcasts an input only where the rule's own graph
     * does: the proof covers that broadcast and no other. */
    if ((xf_op_get_info(pn->op)->flags & XF_OPF_ELEM) && pn->n_inputs > 1 && pn->n_outputs == 1) {
        const xf_shape *pout = &pg->values[pn->outputs[0]].shape, *gout = &g->values[n->outputs[0]].shape;
        for (int k = 0; k < pn->n_inputs; k++) {
            if (pn->inputs[k] < 0 || n->inputs[k] < 0)
                continue;
            bool p_full = xf_shape_equal(&pg->values[pn->inputs[k]].shape, pout);
            bool g_full = xf_shape_equal(&g->values[n->inputs[k]].shape, gout);
            if (p_full != g_full)
                return false;
        }
    }
    if (!mt->p->generalized[depth])
        return attrs_equal(&n->attrs, &pn->attrs);
    /* Generalized fields: bind bare parameters, and blank every generalized
     * field (to the pattern's value) so the block comparison skips it; the
     * other expressions are checked once the whole match is known. */
    xf_attrs a = n->attrs;
    const xf_rule *r = mt->p->rule;
    for (int i = 0; i < mt->p->n_node_bindings[depth]; i++) {
        const xf_binding *b = &r->bindings[mt->p->node_bindings[depth][i]];
        int64_t have;
        if (!xf_attr_field_get(&n->attrs, b->field, b->index, &have))
            return false;
        int param = b->e.node[0].a;
        if (mt->bound[param] && mt->m.param[param] != have)
            return false;
        mt->m.param[param] = have;
        mt->bound[param] = true;
        mt->bound_some = true;
    }
    for (int i = 0; i < r->n_bindings; i++) {
        const xf_binding *b = &r->bindings[i];
        int64_t want;
        if (b->replacement || b->node != depth)
            continue;
        if (!xf_attr_field_get(&pn->attrs, b->field, b->index, &want) || !xf_attr_field_set(&a, b->field, b->index, want))
            return false;
    }
    /* Setting a field grows its array's count; the node's own counts are
     * what must equal the pattern's. */
    a.n_spatial = n->attrs.n_spatial;
    a.n_split = n->attrs.n_split;
    a.n_perm = n->attrs.n_perm;
    return attrs_equal(&a, &pn->attrs);
}

static bool compare(xf_cmp cmp, int64_t l, int64_t r)
{
    switch (cmp) {
    case XF_CMP_EQ:
        return l == r;
    case XF_CMP_NE:
        return l != r;
    case XF_CMP_LT:
        return l < r;
    case XF_CMP_LE:
        return l <= r;
    case XF_CMP_ODD:
        return l % 2 != 0;
    }
    return false;
}

/* The checks that need the whole match: non-trivial binding expressions,
 * constraints, and the external-use rule. */
static bool match_complete(const matcher *mt)
{
    const xf_rule *r = mt->p->rule;
    const xf_graph *g = mt->g;
    xf_shape shapes[XF_MATCH_MAX_INPUTS];
    for (int k = 0; k < mt->m.n_inputs; k++)
        shapes[k] = g->values[mt->m.input[k]].shape;
    for (int i = 0; i < r->n_bindings; i++) {
        const xf_binding *b = &r->bindings[i];
        int64_t want, have;
        if (b->replacement || is_bare_param(&b->e))
            continue;
        if (!xf_expr_eval(&b->e, mt->m.param, mt->bound, shapes, mt->m.n_inputs, &want) ||
            !xf_attr_field_get(&g->nodes[mt->m.node[b->node]].attrs, b->field, b->index, &have) || want != have)
            return false;
    }
    for (int i = 0; i < r->n_constraints; i++) {
        const xf_constraint *c = &r->constraints[i];
        int64_t l, rv = 0;
        if (!xf_expr_eval(&c->lhs, mt->m.param, mt->bound, shapes, mt->m.n_inputs, &l) ||
            (c->cmp != XF_CMP_ODD && !xf_expr_eval(&c->rhs, mt->m.param, mt->bound, shapes, mt->m.n_inputs, &rv)) ||
            !compare(c->cmp, l, rv))
            return false;
    }
    for (int i = 0; i < mt->p->n_nodes; i++) {
        const xf_node *pn = &r->pattern->nodes[i];
        for (int k = 0; k < pn->n_inputs; k++) {
            const xf_rule_const *rc = xf_rule_const_of(r, r->pattern, pn->inputs[k]);
            xf_shape want;
            if (rc && (!xf_rule_const_shape(rc, shapes, mt->m.n_inputs, &want) ||
                       !xf_shape_equal(&want, &g->values[g->nodes[mt->m.node[i]].inputs[k]].shape)))
                return false;
        }
    }
    /* A value the match computes and something outside it reads must be a
     * rule output (else removing the pattern would lose it); and no rule
     * input may be computed inside the match (the replacement would read a
     * value that the rewrite removes). */
    for (int i = 0; i < mt->p->n_nodes; i++) {
        const xf_node *n = &g->nodes[mt->m.node[i]];
        for (int o = 0; o < n->n_outputs; o++) {
            int v = n->outputs[o];
            if (v < 0)
                continue;
            for (int k = 0; k < mt->m.n_inputs; k++)
                if (mt->m.input[k] == v)
                    return false;
            bool external = mt->gi->is_output[v];
            for (int u = mt->gi->use_start[v]; !external && u < mt->gi->use_start[v + 1]; u++)
                external = !node_in_match(mt, mt->p->n_nodes, mt->gi->use_node[u]);
            if (!external)
                continue;
            bool is_rule_output = false;
            for (int j = 0; j < mt->p->n_outputs; j++)
                is_rule_output |= mt->p->out[j].idx == i && mt->p->out[j].out == o;
            if (!is_rule_output)
                return false;
        }
    }
    return true;
}

static void match_from(matcher *mt, int depth)
{
    if (mt->stop)
        return;
    if (depth == mt->p->n_nodes) {
        if (match_complete(mt) && !mt->fn(&mt->m, mt->user))
            mt->stop = true;
        return;
    }
    const xf_graph *g = mt->g;
    const xf_node *pn = &mt->p->rule->pattern->nodes[depth];
    /* Candidates: consumers of a placed value feeding this node, else every
     * node of the op. */
    const int *cand = mt->gi->op_node + mt->gi->op_start[pn->op];
    int n_cand = mt->gi->op_start[pn->op + 1] - mt->gi->op_start[pn->op];
    for (int k = 0; k < pn->n_inputs; k++) {
        const pin_ref *ref = &mt->p->in[depth][k];
        int v = -1;
        if (ref->kind == PIN_NODE)
            v = g->nodes[mt->m.node[ref->idx]].outputs[ref->out];
        else if (ref->kind == PIN_RULE_INPUT)
            v = mt->m.input[ref->idx];
        if (v >= 0) {
            cand = mt->gi->use_node + mt->gi->use_start[v];
            n_cand = mt->gi->use_start[v + 1] - mt->gi->use_start[v];
            break;
        }
    }
    int saved_inputs[XF_MATCH_MAX_INPUTS];
    int64_t saved_params[XF_MATCH_MAX_PARAMS];
    bool saved_bound[XF_MATCH_MAX_PARAMS];
    memcpy(saved_inputs, mt->m.input, sizeof saved_inputs);
    memcpy(saved_params, mt->m.param, sizeof saved_params);
    memcpy(saved_bound, mt->bound, sizeof saved_bound);
    for (int c = 0; c < n_cand && !mt->stop; c++) {
        if (c > 0 && cand[c] == cand[c - 1])
            continue;
        mt->bound_some = false;
        bool fits = node_fits(mt, depth, cand[c]);
        if (fits) {
            mt->m.node[depth] = cand[c];
            match_from(mt, depth + 1);
        }
        if (fits || mt->bound_some) {
            memcpy(mt->m.input, saved_inputs, sizeof saved_inputs);
            memcpy(mt->m.param, saved_params, sizeof saved_params);
            memcpy(mt->bound, saved_bound, sizeof saved_bound);
        }
    }
}

/* Whether g has at least as many nodes of each op as the pattern needs. */
static bool ops_present(const rule_plan *p, const graph_index *gi)
{
    for (int k = 0; k < p->n_ops; k++)
        if (p->op_count[k] > gi->op_start[p->op[k] + 1] - gi->op_start[p->op[k]])
            return false;
    return true;
}

xf_status xf_match_each(const xf_rule_set *rs, int rule, const xf_graph *g, xf_match_fn fn, void *user,
                        xf_error *err)
{
    graph_index gi;
    xf_status st = opt_index_build(g, &gi, err);
    if (st != XF_OK)
        return st;
    int first = rule < 0 ? 0 : rule, last = rule < 0 ? rs->n : rule + 1;
    bool stop = false;
    for (int ri = first; ri < last && !stop; ri++) {
        const rule_plan *p = &rs->plans[ri];
        if (!ops_present(p, &gi))
            continue;
        matcher mt = {.p = p, .g = g, .gi = &gi, .fn = fn, .user = user};
        mt.m.rule = ri;
        mt.m.n_nodes = p->n_nodes;
        mt.m.n_inputs = p->rule->pattern->n_inputs;
        mt.m.n_params = p->rule->n_params;
        for (int k = 0; k < XF_MATCH_MAX_INPUTS; k++)
            mt.m.input[k] = -1;
        match_from(&mt, 0);
        stop = mt.stop;
    }
    opt_index_free(&gi);
    return XF_OK;
}
