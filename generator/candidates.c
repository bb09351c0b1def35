/* From graph records to rules: group by fingerprint, pair, prune, build the
 * two sides as xf_graphs, generalize split sizes and constants over input dimensions,
 * check on cpu_ref with floats, and dedupe up to renaming.
 *
 * Pairing: within a group of equal fingerprints every graph is paired with
 * the group's smallest graph, pattern = the larger.  Any other pair of the
 * group follows from two of these, so the rest are implied rules.  Size
 * counts first the ops that compute on activations: an op on weights and
 * biases alone (a concatenated or enlarged kernel) is folded into a
 * constant before the graph runs.  Where two graphs have as many
 * activation ops and the larger one is larger only by such weight ops,
 * neither is clearly cheaper, so the rule is written in both directions
 * (the cost model decides): this is how convolutions that share an input
 * merge into one, and how a kernel is enlarged so that it can merge.
 *
 * Constants (identity kernels and matrix, the pooling kernel): a graph
 * reading one is never a pattern (it would match only models holding that
 * constant).  The smallest such graph of a group is a second
 * representative: it replaces the graphs with more ops on activations
 * (x + conv(x, w) -> conv(x, w + I)), and is written from the first
 * representative where the two tie and it concatenates weights with the
 * constant (a pooling or identity branch merged into a convolution).  Its
 * constants become rule constants whose dims are expressions over the rule
 * inputs, read off the node that uses each. */
#include "gen_internal.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------ pruning */

/* Identity of an op across two graphs: variant and input fingerprints. */
static uint64_t op_identity(const gen_graph *g, int k)
{
    uint64_t h = gen_mix64((uint64_t)g->variant[k] * 0x9e3779b97f4a7c15ull);
    for (int j = 0; j < GEN_MAX_IN; j++)
        if (g->in[k][j] >= 0)
            h = gen_mix64(h ^ g->val_fp[g->in[k][j]]);
    return h;
}

/* The op of g producing value v, or -1 for a pool tensor. */
static int producer(const gen_graph *g, int v)
{
    for (int k = 0; k < g->n_ops; k++)
        if (v >= g->out_base[k] && v < g->out_base[k] + gen_variants[g->variant[k]].n_out)
            return k;
    return -1;
}

/* A pair whose corresponding outputs come from the same op (same output
 * index) applied to equal values, e.g. (a*b)*s + c = (a*s)*b + c: the
 * rule on those inputs is smaller and implies it (a common supergraph). */
static bool shares_common_supergraph(const gen_graph *p, const gen_graph *q)
{
    for (int o = 0; o < p->n_outputs; o++) {
        int kp = producer(p, p->outputs[o]), kq = producer(q, q->outputs[o]);
        if (kp < 0 || kq < 0 || p->variant[kp] != q->variant[kq] ||
            p->outputs[o] - p->out_base[kp] != q->outputs[o] - q->out_base[kq])
            return false;
        for (int j = 0; j < gen_variants[p->variant[kp]].n_in; j++)
            if (p->val_fp[p->in[kp][j]] != q->val_fp[q->in[kq][j]])
                return false;
    }
    return p->n_outputs > 0;
}

/* A pair sharing an op on the same values (a common subgraph) where that op
 * reads only rule inputs: replacing its result by a fresh input gives a
 * smaller, more general rule, found on its own. */
static bool shares_common_subgraph(const gen_graph *p, const gen_graph *q)
{
    for (int i = 0; i < p->n_ops; i++) {
        bool from_inputs = true;
        for (int j = 0; j < GEN_MAX_IN; j++)
            from_inputs &= p->in[i][j] < gen_pool_size;
        if (!from_inputs)
            continue;
        uint64_t id = op_identity(p, i);
        for (int j = 0; j < q->n_ops; j++)
            if (op_identity(q, j) == id)
                return true;
    }
    return false;
}

static int code_ops(gen_code code)
{
    if (gen_code_variant(code, 0) == GEN_INPUTS_GRAPH)
        return 0;
    int n = 0;
    while (n < GEN_MAX_SLOTS && gen_code_variant(code, n) != GV_NONE)
        n++;
    return n;
}

/* Fewest ops of a recorded graph with fingerprint fp; INT32_MAX if none. */
static int fewest_ops(const gen_record *records, int64_t n_records, uint64_t fp)
{
    int64_t lo = 0, hi = n_records;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (records[mid].fp < fp)
            lo = mid + 1;
        else
            hi = mid;
    }
    int best = INT32_MAX;
    for (int64_t i = lo; i < n_records && records[i].fp == fp; i++) {
        int n = code_ops(gen_record_code(&records[i]));
        best = n < best ? n : best;
    }
    return best;
}

/* Whether some intermediate value of p is computed with more ops than a
 * recorded graph needs for it.  Then the rule is implied: the smaller rule
 * rewrites that part, and the result, having fewer ops, pairs with the same
 * representative on its own. */
static bool has_reducible_part(const gen_graph *p, const gen_record *records, int64_t n_records)
{
    unsigned cone[GEN_MAX_SLOTS];
    for (int k = 0; k < p->n_ops; k++) {
        cone[k] = 1u << k;
        for (int j = 0; j < GEN_MAX_IN; j++)
            for (int q = 0; q < k; q++) {
                int in = p->in[k][j], n_out = gen_variants[p->variant[q]].n_out;
                if (in >= p->out_base[q] && in < p->out_base[q] + n_out)
                    cone[k] |= cone[q];
            }
    }
    for (int k = 0; k < p->n_ops; k++) {
        int n_out = gen_variants[p->variant[k]].n_out;
        for (int j = 0; j < n_out; j++) {
            int v = p->out_base[k] + j;
            bool is_output = false;
            for (int o = 0; o < p->n_outputs; o++)
                is_output |= p->outputs[o] == v;
            if (is_output)
                continue;
            uint64_t fp = p->val_fp[v];
            if (fewest_ops(records, n_records, gen_combine_fps(&fp, 1)) < __builtin_popcount(cone[k]))
                return true;
        }
    }
    return false;
}

/* ------------------------------------------------------------ building sides */

typedef struct side_map {
    int value_of[GEN_MAX_VALUES]; /* gen value -> xf value id */
} side_map;

/* Rule inputs: pool tensors in order of first use over both sides. */
static int rule_inputs(const gen_graph *p, const gen_graph *q, int *inputs)
{
    int n = 0;
    bool seen[GEN_MAX_POOL] = {0};
    const gen_graph *sides[2] = {p, q};
    for (int s = 0; s < 2; s++) {
        const gen_graph *g = sides[s];
        for (int k = 0; k < g->n_ops; k++)
            for (int j = 0; j < GEN_MAX_IN; j++) {
                int v = g->in[k][j];
                if (v >= 0 && v < gen_pool_size && !seen[v] && gen_pool[v].konst == XF_CONST_NONE) {
                    seen[v] = true;
                    inputs[n++] = v;
                }
            }
        for (int o = 0; o < g->n_outputs; o++) {
            int v = g->outputs[o];
            if (v < gen_pool_size && !seen[v]) {
                seen[v] = true;
                inputs[n++] = v;
            }
        }
    }
    return n;
}

static xf_graph *build_side(const gen_graph *g, const char *name, const int *inputs, int n_inputs, const int *order)
{
    xf_graph *x = xf_graph_create(name);
    if (!x)
        return NULL;
    side_map m;
    for (int v = 0; v < GEN_MAX_VALUES; v++)
        m.value_of[v] = -1;
    for (int k = 0; k < n_inputs; k++) {
        const gen_pool_entry *e = &gen_pool[inputs[k]];
        m.value_of[inputs[k]] = xf_graph_add_input(x, e->name, XF_DT_FLOAT, &e->shape);
    }
    for (int k = 0; k < g->n_ops; k++) {
        const gen_variant_info *vi = &gen_variants[g->variant[k]];
        int in[GEN_MAX_IN], out[2];
        xf_shape shapes[GEN_MAX_IN];
        for (int j = 0; j < vi->n_in; j++) {
            int gv = g->in[k][j];
            if (m.value_of[gv] < 0 && gv < gen_pool_size && gen_pool[gv].konst != XF_CONST_NONE) {
                /* A constant: an initializer named as the pool names it. */
                xf_tensor *t = xf_const_make(gen_pool[gv].konst, &gen_pool[gv].shape);
                m.value_of[gv] = t ? xf_graph_add_initializer(x, gen_pool[gv].name, t) : -1;
                xf_tensor_release(t);
                if (m.value_of[gv] < 0) {
                    xf_graph_free(x);
                    return NULL;
                }
            }
            in[j] = m.value_of[gv];
            shapes[j] = x->values[in[j]].shape;
        }
        for (int j = 0; j < vi->n_out; j++)
            m.value_of[g->out_base[k] + j] = out[j] = xf_graph_add_value(x, NULL, XF_DT_FLOAT, NULL);
        int node = xf_graph_add_node(x, vi->op, NULL, vi->n_in, in, vi->n_out, out);
        if (node < 0) {
            xf_graph_free(x);
            return NULL;
        }
        gen_variant_attrs((gen_variant)g->variant[k], shapes, &x->nodes[node].attrs);
        xf_error e = {0};
        if (xf_node_infer_shape(x, node, XF_GENERATOR_OPSET, NULL, &e) != XF_OK) {
            xf_graph_free(x);
            return NULL;
        }
    }
    for (int o = 0; o < g->n_outputs; o++)
        xf_graph_add_output(x, m.value_of[g->outputs[order[o]]]);
    return x;
}

/* ------------------------------------------------------------ generalization */

/* Symbolic dims of every value of a side, as expressions over rule-input
 * dims: what the shape of each tensor is for inputs of any shape. */
typedef struct sym_shape {
    int ndim;
    xf_expr d[XF_MAX_DIMS];
} sym_shape;

static bool expr_value(const xf_expr *e, const xf_graph *g, int64_t *out)
{
    xf_shape shapes[GEN_MAX_POOL];
    for (int k = 0; k < g->n_inputs && k < GEN_MAX_POOL; k++)
        shapes[k] = g->values[g->inputs[k]].shape;
    return xf_expr_eval(e, NULL, NULL, shapes, g->n_inputs, out);
}

/* The operand of e occupying nodes [first, end): xf_expr_binary lays out a
 * tree as root, whole left operand, whole right operand. */
static xf_expr expr_subtree(const xf_expr *e, int first, int end)
{
    xf_expr sub = {0};
    sub.n = end - first;
    for (int t = 0; t < sub.n; t++) {
        sub.node[t] = e->node[first + t];
        if (sub.node[t].kind >= XF_EX_ADD) {
            sub.node[t].lhs -= first;
            sub.node[t].rhs -= first;
        }
    }
    return sub;
}

/* Symbolic dims of constant value cv read as input j of node n, from the
 * node's other operands: the same shape as the tensor it is added to or
 * multiplied with (a kernel's spatial dims as numbers); a kernel convolved
 * with x is square in x's channels; a matrix multiplied is square in the
 * inner dimension; concatenated, it shares the other operand's dims off
 * the axis and is square across the first two.  False where the node says nothing of it. */
static bool const_dims(const xf_graph *g, const xf_node *n, int j, const sym_shape *sym, sym_shape *out)
{
    const xf_shape *cs = &g->values[n->inputs[j]].shape;
    const sym_shape *o = n->n_inputs == 2 ? &sym[n->inputs[1 - j]] : NULL;
    out->ndim = cs->ndim;
    switch (n->op) {
    case XF_OP_ADD:
    case XF_OP_MUL:
        if (!o || o->ndim != cs->ndim)
            return false;
        *out = *o;
        if (cs->ndim == 4) {
            /* A kernel: its spatial dims are those of the other kernel,
             * which a Conv's kernel attribute fixes (kernel sizes are never
             * generalized), so they are written as numbers. */
            out->d[2] = xf_expr_const(cs->dims[2]);
            out->d[3] = xf_expr_const(cs->dims[3]);
        }
        return true;
    case XF_OP_CONV:
        if (j != 1 || cs->ndim != 4)
            return false;
        out->d[0] = out->d[1] = sym[n->inputs[0]].d[1];
        out->d[2] = xf_expr_const(cs->dims[2]);
        out->d[3] = xf_expr_const(cs->dims[3]);
        return true;
    case XF_OP_MATMUL:
        if (!o || cs->ndim != 2)
            return false;
        out->d[0] = out->d[1] = o->d[j == 1 ? 1 : 0];
        return true;
    case XF_OP_CONCAT: {
        int ax = (int)n->attrs.axis;
        if (!o || o->ndim != cs->ndim || ax < 0 || ax > 1)
            return false;
        *out = *o;
        out->d[ax] = o->d[1 - ax];
        return true;
    }
    default:
        return false;
    }
}

/* Whether every dim of s evaluates to the concrete shape want on g's inputs. */
static bool sym_matches(const sym_shape *s, const xf_graph *g, const xf_shape *want)
{
    if (s->ndim != want->ndim)
        return false;
    for (int d = 0; d < s->ndim; d++) {
        int64_t v;
        if (s->d[d].n == 0 || !expr_value(&s->d[d], g, &v) || v != want->dims[d])
            return false;
    }
    return true;
}

/* Generalizes side g: every constant becomes a rule constant whose dims are
 * expressions over the rule inputs (taken from the first node reading it,
 * or from the rule constant the other side declared), and every Split gets
 * bindings split[i] = expression.  Returns the number of bindings added, or
 * -1 when a split size or a constant's dims have no expression (the rule is
 * then dropped: concrete sizes would make it apply to nothing else). */
static int generalize_side(xf_rule *r, const xf_graph *g, bool replacement)
{
    sym_shape *sym = calloc((size_t)g->n_values, sizeof *sym);
    bool *known = calloc((size_t)g->n_values, sizeof *known);
    if (!sym || !known) {
        free(sym);
        free(known);
        return -1;
    }
    for (int k = 0; k < g->n_inputs; k++) {
        sym_shape *s = &sym[g->inputs[k]];
        s->ndim = g->values[g->inputs[k]].shape.ndim;
        for (int d = 0; d < s->ndim; d++)
            s->d[d] = xf_expr_dim(k, d);
        known[g->inputs[k]] = true;
    }
    for (int c = 0; c < r->n_consts; c++) {
        int v = xf_graph_find_value(g, r->consts[c].name);
        if (v < 0)
            continue;
        sym[v].ndim = r->consts[c].ndim;
        for (int d = 0; d < sym[v].ndim; d++)
            sym[v].d[d] = r->consts[c].dims[d];
        known[v] = true;
    }
    int added = 0;
    for (int i = 0; i < g->n_nodes && added >= 0; i++) {
        const xf_node *n = &g->nodes[i];
        for (int j = 0; j < n->n_inputs && added >= 0; j++) {
            int v = n->inputs[j];
            if (v < 0 || known[v] || !g->values[v].init)
                continue;
            const xf_shape *cs = &g->values[v].shape;
            xf_const_kind kind = xf_const_kind_of(g->values[v].init);
            if (kind == XF_CONST_NONE || !const_dims(g, n, j, sym, &sym[v]) || !sym_matches(&sym[v], g, cs) ||
                !xf_rule_add_const(r, g->values[v].name, kind, cs->ndim, sym[v].d))
                added = -1;
            known[v] = true;
        }
        if (added < 0)
            break;
        const sym_shape *a = &sym[n->inputs[0]], *b = n->n_inputs > 1 ? &sym[n->inputs[1]] : NULL;
        sym_shape o = *a;
        switch (n->op) {
        case XF_OP_MATMUL:
            o.d[1] = b->d[1];
            break;
        case XF_OP_MUL:
        case XF_OP_ADD:
            if (a->ndim == 0)
                o = *b;
            break;
        case XF_OP_CONV:
            o.d[1] = b->d[0];
            break;
        case XF_OP_PAD:
            for (int d = 0; d < o.ndim && d < n->attrs.n_pads / 2; d++) {
                xf_expr grow = xf_expr_const(n->attrs.pad_pads[d] + n->attrs.pad_pads[o.ndim + d]);
                if (grow.node[0].value != 0)
                    o.d[d] = xf_expr_binary(XF_EX_ADD, &a->d[d], &grow);
            }
            break;
        case XF_OP_TRANSPOSE:
            o.d[0] = a->d[1];
            o.d[1] = a->d[0];
            break;
        case XF_OP_CONCAT: {
            int ax = (int)n->attrs.axis;
            o.d[ax] = xf_expr_binary(XF_EX_ADD, &a->d[ax], &b->d[ax]);
            if (o.d[ax].n == 0)
                added = -1;
            break;
        }
        case XF_OP_SPLIT: {
            int ax = (int)n->attrs.axis;
            const xf_expr *whole = &a->d[ax];
            xf_expr parts[2];
            int64_t lv;
            if (whole->node[0].kind == XF_EX_ADD) {
                /* Split of a concatenation: the parts are its operands. */
                parts[0] = expr_subtree(whole, whole->node[0].lhs, whole->node[0].rhs);
                parts[1] = expr_subtree(whole, whole->node[0].rhs, whole->n);
            } else {
                xf_expr two = xf_expr_const(2);
                parts[0] = parts[1] = xf_expr_binary(XF_EX_DIV, whole, &two);
            }
            for (int j = 0; j < 2 && added >= 0; j++) {
                if (parts[j].n == 0 || !expr_value(&parts[j], g, &lv) || lv != n->attrs.split[j]) {
                    added = -1;
                    break;
                }
                xf_binding *nb = realloc(r->bindings, ((size_t)r->n_bindings + 1) * sizeof *nb);
                if (!nb) {
                    added = -1;
                    break;
                }
                r->bindings = nb;
                r->bindings[r->n_bindings++] =
                    (xf_binding){.replacement = replacement, .node = i, .field = XF_AF_SPLIT, .index = j, .e = parts[j]};
                added++;
            }
            for (int j = 0; j < n->n_outputs && added >= 0; j++) {
                sym_shape *so = &sym[n->outputs[j]];
                *so = *a;
                so->d[ax] = parts[j];
            }
            continue;
        }
        default:
            break;
        }
        sym[n->outputs[0]] = o;
    }
    free(sym);
    free(known);
    return added;
}

/* ------------------------------------------------------------ the stage */

typedef struct key_set {
    uint64_t *keys;
    int64_t n, cap;
} key_set;

/* Inserts k; false when it was already there. */
static bool key_set_insert(key_set *s, uint64_t k, bool *nomem)
{
    if (2 * (s->n + 1) > s->cap) {
        int64_t cap = s->cap ? 2 * s->cap : 1024;
        uint64_t *keys = calloc((size_t)cap, sizeof *keys);
        if (!keys) {
            *nomem = true;
            return false;
        }
        for (int64_t i = 0; i < s->cap; i++)
            if (s->keys[i]) {
                int64_t h = (int64_t)(s->keys[i] & (uint64_t)(cap - 1));
                while (keys[h])
                    h = (h + 1) & (cap - 1);
                keys[h] = s->keys[i];
            }
        free(s->keys);
        s->keys = keys;
        s->cap = cap;
    }
    k = k ? k : 1;
    int64_t h = (int64_t)(k & (uint64_t)(s->cap - 1));
    while (s->keys[h]) {
        if (s->keys[h] == k)
            return false;
        h = (h + 1) & (s->cap - 1);
    }
    s->keys[h] = k;
    s->n++;
    return true;
}

/* Library order: smaller patterns first, then by structure.  Neither depends
 * on the seed, so libraries made with different seeds differ only where
 * they find different rules, which keeps regenerated files diffable. */
typedef struct rule_key {
    int pattern_nodes, replacement_nodes;
    uint64_t pattern_hash, replacement_hash;
    xf_rule *rule;
} rule_key;

static int cmp_rule_key(const void *a, const void *b)
{
    const rule_key *x = a, *y = b;
    if (x->pattern_nodes != y->pattern_nodes)
        return x->pattern_nodes - y->pattern_nodes;
    if (x->replacement_nodes != y->replacement_nodes)
        return x->replacement_nodes - y->replacement_nodes;
    if (x->pattern_hash != y->pattern_hash)
        return x->pattern_hash < y->pattern_hash ? -1 : 1;
    if (x->replacement_hash != y->replacement_hash)
        return x->replacement_hash < y->replacement_hash ? -1 : 1;
    return 0;
}

static xf_status order_rules(xf_library *lib, xf_error *err)
{
    rule_key *keys = malloc(((size_t)lib->n_rules + 1) * sizeof *keys);
    if (!keys)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    for (int i = 0; i < lib->n_rules; i++) {
        xf_rule *r = lib->rules[i];
        keys[i] = (rule_key){r->pattern->n_nodes, r->replacement->n_nodes, xf_graph_hash(r->pattern),
                             xf_graph_hash(r->replacement), r};
    }
    qsort(keys, (size_t)lib->n_rules, sizeof *keys, cmp_rule_key);
    xf_status st = XF_OK;
    for (int i = 0; i < lib->n_rules; i++) {
        char name[32];
        snprintf(name, sizeof name, "r%04d", i);
        char *renamed = strdup(name);
        if (renamed) {
            free(keys[i].rule->name);
            keys[i].rule->name = renamed;
        } else {
            st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        }
        lib->rules[i] = keys[i].rule;
    }
    free(keys);
    return st;
}

/* Builds the rule for pattern graph p and replacement q, or NULL when it is
 * not expressible (shape inference or generalization fails). */
static xf_rule *build_rule(const gen_graph *p, const gen_graph *q, uint64_t fp)
{
    int inputs[GEN_MAX_POOL];
    int n_inputs = rule_inputs(p, q, inputs);
    xf_rule *r = xf_rule_create("candidate");
    if (!r)
        return NULL;
    /* Outputs in the pattern's value order (the records list them by
     * fingerprint), the replacement's in the matching order. */
    int order[2 * GEN_MAX_SLOTS];
    for (int o = 0; o < p->n_outputs; o++) {
        int j = o;
        for (; j > 0 && p->outputs[order[j - 1]] > p->outputs[o]; j--)
            order[j] = order[j - 1];
        order[j] = o;
    }
    r->pattern = build_side(p, "pattern", inputs, n_inputs, order);
    r->replacement = build_side(q, "replacement", inputs, n_inputs, order);
    if (!r->pattern || !r->replacement) {
        xf_rule_free(r);
        return NULL;
    }
    int gp = generalize_side(r, r->pattern, false);
    int gq = gp < 0 ? -1 : generalize_side(r, r->replacement, true);
    if (gp < 0 || gq < 0) {
        xf_rule_free(r);
        return NULL;
    }
    char prov[256];
    int len = snprintf(prov, sizeof prov, "fingerprint %016" PRIx64 ", found on", fp);
    for (int k = 0; k < n_inputs && len < (int)sizeof prov - 40; k++) {
        char s[64];
        len += snprintf(prov + len, sizeof prov - (size_t)len, "%s %s", k ? "," : "",
                        xf_shape_str(&gen_pool[inputs[k]].shape, s, sizeof s));
    }
    r->provenance = strdup(prov);
    return r;
}

/* Whether g can be a pattern: the matcher rewrites only the optimizer's
 * op set, and every pattern output must be computed by the pattern. */
static bool can_be_pattern(const gen_graph *g)
{
    if (g->n_ops == 0)
        return false;
    for (int k = 0; k < g->n_ops; k++)
        if (!(xf_op_get_info(gen_variants[g->variant[k]].op)->flags & XF_OPF_GEN))
            return false;
    for (int o = 0; o < g->n_outputs; o++)
        if (g->outputs[o] < gen_pool_size)
            return false;
    return true;
}

/* Whether an op of g (a Concat, with in_concat: weights merged with the
 * constant) reads a pool constant. */
static bool reads_constant(const gen_graph *g, bool in_concat)
{
    for (int k = 0; k < g->n_ops; k++)
        for (int j = 0; j < GEN_MAX_IN; j++)
            if ((!in_concat || gen_variants[g->variant[k]].op == XF_OP_CONCAT) && g->in[k][j] >= 0 &&
                g->in[k][j] < gen_pool_size && gen_pool[g->in[k][j]].konst != XF_CONST_NONE)
                return true;
    return false;
}

/* Ops that compute on activations: the size that decides a rule's direction. */
static int act_ops(const gen_graph *g) { return g->n_ops - g->n_weight_ops; }

/* Whether graph a is smaller than b: fewer activation ops, then fewer ops. */
static bool smaller(const gen_graph *a, const gen_graph *b)
{
    return act_ops(a) != act_ops(b) ? act_ops(a) < act_ops(b) : a->n_ops < b->n_ops;
}

/* A candidate rule built and checked by a worker; whether it enters the
 * library is decided in group order (prepared_commit), so that the library
 * does not depend on which worker handled which group. */
typedef struct prepared {
    xf_rule *r;    /* NULL: no sound general form */
    uint64_t key;  /* identity up to renaming */
    bool exact;    /* gen_exact_recheck */
    int agree;     /* gen_sides_agree */
    double diff;
    char *why;     /* when agree < 0 */
    bool reversed; /* written from the smaller side */
} prepared;

/* A range of records (whole groups) and what its groups gave. */
typedef struct chunk {
    int64_t begin, end;
    prepared *items;
    int n_items, cap_items;
    int64_t fingerprints, groups, candidates, pruned_common, pruned_implied, pruned_constant;
    bool nomem;
    atomic_bool done;
} chunk;

typedef struct rule_work {
    const gen_record *records;
    int64_t n_records;
    uint64_t seed;
    chunk *chunks;
    int n_chunks;
    atomic_int next;
} rule_work;

static void prepare(chunk *c, const gen_graph *pg, const gen_graph *qg, uint64_t fp, uint64_t seed, bool reversed)
{
    if (c->n_items == c->cap_items) {
        int cap = c->cap_items ? 2 * c->cap_items : 16;
        prepared *items = realloc(c->items, (size_t)cap * sizeof *items);
        if (!items) {
            c->nomem = true;
            return;
        }
        c->items = items;
        c->cap_items = cap;
    }
    prepared *it = &c->items[c->n_items++];
    memset(it, 0, sizeof *it);
    it->reversed = reversed;
    it->r = build_rule(pg, qg, fp);
    if (!it->r)
        return;
    it->key = gen_mix64(xf_graph_hash(it->r->pattern)) ^ xf_graph_hash(it->r->replacement);
    char why[1024] = "";
    it->exact = gen_exact_recheck(it->r, seed);
    it->agree = it->exact ? gen_sides_agree(it->r, seed, &it->diff, why, sizeof why) : 0;
    if (it->agree < 0 && !(it->why = strdup(why)))
        c->nomem = true;
}

/* Prunes the pair (pg, qg) and prepares its rule pg -> qg (forward) and
 * qg -> pg (backward), as asked. */
static void try_pair(const rule_work *rw, chunk *c, const gen_graph *pg, const gen_graph *qg, uint64_t fp,
                     bool forward, bool backward)
{
    if (shares_common_subgraph(pg, qg) || shares_common_supergraph(pg, qg)) {
        c->pruned_common++;
        return;
    }
    if (has_reducible_part(pg, rw->records, rw->n_records)) {
        c->pruned_implied++;
        return;
    }
    if (forward)
        prepare(c, pg, qg, fp, rw->seed, false);
    if (backward)
        prepare(c, qg, pg, fp, rw->seed, true);
}

/* Groups the records of c, pairs and prunes them, and prepares the rules. */
static void chunk_run(const rule_work *rw, chunk *c, const gen_pool_values *pool, uint64_t *scratch,
                      gen_conv_memo *memo, gen_graph **group, int64_t *cap_group)
{
    const gen_record *records = rw->records;
    for (int64_t i = c->begin; i < c->end && !c->nomem;) {
        int64_t j = i + 1;
        while (j < c->end && records[j].fp == records[i].fp)
            j++;
        c->fingerprints++;
        int64_t distinct = 1;
        for (int64_t k = i + 1; k < j; k++)
            distinct += gen_record_code(&records[k]) != gen_record_code(&records[k - 1]);
        if (distinct < 2) {
            i = j;
            continue;
        }
        c->groups++;
        if (distinct > *cap_group) {
            gen_graph *ng = realloc(*group, (size_t)distinct * sizeof *ng);
            if (!ng) {
                c->nomem = true;
                break;
            }
            *group = ng;
            *cap_group = distinct;
        }
        gen_graph *g = *group;
        /* Decode each distinct graph.  The smallest graph free of
         * constants is the representative: every other graph pairs with it.
         * The smallest graph reading a constant is a second one, paired
         * with the graphs it computes with fewer ops on activations. */
        int n = 0, rep = -1, rep_k = -1;
        for (int64_t k = i; k < j; k++) {
            if (k > i && gen_record_code(&records[k]) == gen_record_code(&records[k - 1]))
                continue;
            if (!gen_decode(gen_record_code(&records[k]), pool, &g[n], scratch, memo))
                continue;
            int *r = reads_constant(&g[n], false) ? &rep_k : &rep;
            if (*r < 0 || smaller(&g[n], &g[*r]))
                *r = n;
            n++;
        }
        for (int a = 0; a < n; a++) {
            if (a == rep || a == rep_k)
                continue;
            c->candidates++;
            const gen_graph *pg = &g[a];
            bool pk = reads_constant(pg, false);
            /* Constants enter rewrites on the replacement side only (a
             * pattern reading one would match only models holding that
             * constant), and only where they pay: the replacement computes
             * fewer ops on activations, or as many with weights merged. */
            const gen_graph *qg = rep >= 0 ? &g[rep] : NULL;
            bool tie = qg && act_ops(pg) == act_ops(qg);
            bool forward = qg && !pk && can_be_pattern(pg);
            bool backward = tie && act_ops(qg) > 0 && pg->n_weight_ops > 0 && can_be_pattern(qg) &&
                            (!pk || reads_constant(pg, true));
            const gen_graph *kg = rep_k >= 0 ? &g[rep_k] : NULL;
            bool to_const = kg && !pk && can_be_pattern(pg) && act_ops(kg) < act_ops(pg) &&
                            (!qg || act_ops(kg) < act_ops(qg));
            if (!forward && !backward && !to_const) {
                c->pruned_constant += pk || kg;
                continue;
            }
            if (forward || backward)
                try_pair(rw, c, pg, qg, records[i].fp, forward, backward);
            if (to_const)
                try_pair(rw, c, pg, kg, records[i].fp, true, false);
        }
        if (rep_k >= 0 && rep >= 0) {
            /* The two representatives: the constant one replaces the other
             * as above. */
            const gen_graph *pg = &g[rep], *kg = &g[rep_k];
            c->candidates++;
            if (can_be_pattern(pg) && act_ops(kg) < act_ops(pg))
                try_pair(rw, c, pg, kg, records[i].fp, true, false);
            else if (can_be_pattern(pg) && act_ops(kg) == act_ops(pg) && act_ops(pg) > 0 && kg->n_weight_ops > 0 &&
                     reads_constant(kg, true))
                try_pair(rw, c, kg, pg, records[i].fp, false, true);
            else
                c->pruned_constant++;
        }
        i = j;
    }
}

static void *rule_worker(void *arg)
{
    rule_work *rw = arg;
    uint64_t *storage = calloc((size_t)GEN_MAX_VALUES * GEN_VAL_STRIDE, sizeof *storage);
    gen_conv_memo *memo = gen_conv_memo_create();
    gen_graph *group = NULL;
    int64_t cap_group = 0;
    gen_pool_values pool;
    if (storage)
        gen_pool_fill(rw->seed, &pool, storage);
    for (int c; (c = atomic_fetch_add(&rw->next, 1)) < rw->n_chunks;) {
        chunk *ch = &rw->chunks[c];
        if (!storage || !memo)
            ch->nomem = true;
        else
            chunk_run(rw, ch, &pool, storage + (size_t)GEN_MAX_POOL * GEN_VAL_STRIDE, memo, &group, &cap_group);
        atomic_store(&ch->done, true);
    }
    free(group);
    free(storage);
    gen_conv_memo_free(memo);
    return NULL;
}

typedef struct rule_stage {
    xf_library *lib;
    xf_library *dropped; /* may be NULL */
    xf_gen_stats *st;
    key_set seen;
} rule_stage;

/* Dedupes a prepared candidate up to renaming and adds it to the library
 * when both sides agree on cpu_ref; takes it. */
static xf_status prepared_commit(rule_stage *rs, prepared *it, xf_error *err)
{
    xf_gen_stats *st = rs->st;
    xf_rule *r = it->r;
    xf_status s = XF_OK;
    bool nomem = false;
    if (!r) {
        st->unexpressible++;
    } else if (!key_set_insert(&rs->seen, it->key, &nomem)) {
        if (nomem)
            s = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        else
            st->pruned_renaming++;
    } else if (!it->exact) {
        st->collisions++;
        if (rs->dropped) {
            s = xf_library_add_left_out(rs->dropped, r, 'f', "differ on further exact trials", err);
            r = NULL;
        }
    } else if (it->agree == 0) {
        xf_log(XF_LOG_WARN, "fingerprint false positive dropped: %s (%d -> %d ops), max diff %g", r->provenance,
               r->pattern->n_nodes, r->replacement->n_nodes, it->diff);
        st->false_positives++;
        if (rs->dropped) {
            char why[64];
            snprintf(why, sizeof why, "float mismatch, max diff %g", it->diff);
            s = xf_library_add_left_out(rs->dropped, r, 'f', why, err);
            r = NULL;
        }
    } else if (it->agree < 0) {
        xf_log(XF_LOG_WARN, "candidate dropped, it does not run on cpu_ref: %s: %s", r->provenance, it->why);
        st->unexpressible++;
    } else {
        char name[32];
        snprintf(name, sizeof name, "c%06d", rs->lib->n_rules);
        char *renamed = strdup(name);
        if (!renamed)
            s = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        else {
            free(r->name);
            r->name = renamed;
            bool generalized = r->n_bindings > 0;
            s = xf_library_add(rs->lib, r, err);
            r = NULL; /* the library owns it, or freed it on failure */
            if (s == XF_OK) {
                st->generalized += generalized;
                st->reversed += it->reversed;
            }
        }
    }
    xf_rule_free(r);
    free(it->why);
    it->r = NULL;
    it->why = NULL;
    return s;
}

xf_status gen_build_rules(const gen_record *records, int64_t n_records, uint64_t seed, xf_library *lib,
                          xf_gen_stats *st, const xf_gen_options *opt, xf_error *err)
{
    int threads = opt && opt->threads > 0 ? opt->threads : 1;
    /* Chunks of whole groups, many per worker so that the work spreads
     * evenly and the prepared rules waiting for their turn stay few. */
    int n_chunks = threads * 64;
    rule_work rw = {.records = records, .n_records = n_records, .seed = seed};
    atomic_init(&rw.next, 0);
    rw.chunks = calloc((size_t)n_chunks, sizeof *rw.chunks);
    pthread_t *tids = calloc((size_t)threads, sizeof *tids);
    rule_stage rs = {.lib = lib, .dropped = opt ? opt->dropped : NULL, .st = st};
    xf_status status = XF_OK;
    if (!rw.chunks || !tids) {
        free(rw.chunks);
        free(tids);
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    }
    int64_t at = 0;
    for (int c = 0; c < n_chunks; c++) {
        int64_t end = c == n_chunks - 1 ? n_records : n_records / n_chunks * (c + 1);
        end = end < at ? at : end;
        while (end > at && end < n_records && records[end].fp == records[end - 1].fp)
            end++;
        rw.chunks[c].begin = at;
        rw.chunks[c].end = at = end;
        atomic_init(&rw.chunks[c].done, false);
    }
    rw.n_chunks = n_chunks;
    int started = 0;
    for (; started < threads; started++)
        if (pthread_create(&tids[started], NULL, rule_worker, &rw) != 0)
            break;
    if (started == 0)
        rule_worker(&rw);
    /* Commit in chunk order as the workers finish them. */
    for (int c = 0; c < n_chunks; c++) {
        chunk *ch = &rw.chunks[c];
        while (!atomic_load(&ch->done))
            nanosleep(&(struct timespec){0, 1000 * 1000}, NULL);
        if (status == XF_OK && ch->nomem)
            status = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        st->fingerprints += ch->fingerprints;
        st->groups += ch->groups;
        st->candidates += ch->candidates;
        st->pruned_common += ch->pruned_common;
        st->pruned_implied += ch->pruned_implied;
        st->pruned_constant += ch->pruned_constant;
        for (int k = 0; k < ch->n_items; k++) {
            if (status == XF_OK)
                status = prepared_commit(&rs, &ch->items[k], err);
            xf_rule_free(ch->items[k].r);
            free(ch->items[k].why);
        }
        free(ch->items);
        if (opt && opt->progress)
            opt->progress("rules", (double)(c + 1) / n_chunks, opt->user);
    }
    for (int t = 0; t < started; t++)
        pthread_join(tids[t], NULL);
    free(tids);
    free(rw.chunks);
    free(rs.seen.keys);
    if (status == XF_OK)
        status = order_rules(lib, err);
    st->rules = lib->n_rules;
    return status;
}
