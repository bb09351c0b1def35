/* xflowc's symbolic dims: see xflowc_dims.h. */
#include "xflowc_dims.h"

#include "cli.h"
#include "xflowc_compare.h"
#include "xf_runtime.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The sizes the graph is tried at for its symbolic dims: rounds 0 and 1
 * tell which folded constants depend on them, rounds 2 and 3 check the
 * result.  With distinct, each dim name (and each unnamed dim) has sizes
 * of its own, so that a shape entry that copies the sequence length is not
 * taken for one that copies the batch size.  Rounds from SYM_LARGE on are
 * large sizes, tried on shapes only (SYM_LARGE with rounds 0 and 1,
 * SYM_LARGE + 1 with 2 and 3): a network that downsamples by 8 or 32 maps
 * the small sizes of rounds 0 to 3, and 1, to one length, so a constant
 * that follows the length (the steps of an OCR model's recurrence) would
 * look fixed. */
#define SYM_LARGE 4
/* The size symbolic dim i has in the graph as loaded: its --dim size, else 1. */
static int64_t sym_base(const xf_model *m, int i)
{
    int v = xf_graph_find_value(m->graph, m->symbolic[i].value);
    const xf_shape *s = v >= 0 ? &m->graph->values[v].shape : NULL;
    return s && m->symbolic[i].dim < s->ndim && s->dims[m->symbolic[i].dim] > 0 ? s->dims[m->symbolic[i].dim] : 1;
}

/* Entries i and j of list stand for the same unknown: the same name (an
 * unnamed dim is one of its own). */
static bool same_unknown(const xf_symbolic_dim *list, int i, int j)
{
    return i == j || (list[i].name[0] && !strcmp(list[i].name, list[j].name));
}

static bool sym_same(const xf_model *m, int i, int j) { return same_unknown(m->symbolic, i, j); }

/* Whether symbolic dim i is the first of its unknown. */
static bool sym_first(const xf_model *m, int i)
{
    for (int j = 0; j < i; j++)
        if (sym_same(m, j, i))
            return false;
    return true;
}

/* m's symbolic dims while the unknown of entry `drop` is tried fixed at
 * its size: m->symbolic holds the others (copies of their entries), all
 * the whole list as it was, for unknowns_restore or unknowns_fix. */
typedef struct sym_list {
    xf_symbolic_dim *all;
    int n_all, n_kept, drop;
} sym_list;

static bool unknowns_drop(xf_model *m, int drop, sym_list *l)
{
    xf_symbolic_dim *kept = malloc(sizeof *kept * (size_t)m->n_symbolic);
    if (!kept)
        return false;
    *l = (sym_list){.all = m->symbolic, .n_all = m->n_symbolic, .drop = drop};
    for (int i = 0; i < m->n_symbolic; i++)
        if (!sym_same(m, i, drop))
            kept[l->n_kept++] = m->symbolic[i];
    m->symbolic = kept;
    m->n_symbolic = l->n_kept;
    return true;
}

/* m's symbolic dims as before unknowns_drop (entries added since freed). */
static void unknowns_restore(xf_model *m, const sym_list *l)
{
    for (int i = l->n_kept; i < m->n_symbolic; i++) {
        free(m->symbolic[i].value);
        free(m->symbolic[i].name);
    }
    free(m->symbolic);
    m->symbolic = l->all;
    m->n_symbolic = l->n_all;
}

/* The dropped unknown stays fixed at its size: its entries go. */
static void unknowns_fix(const sym_list *l)
{
    /* entry drop's name, which the others are compared with, goes last */
    for (int i = 0; i < l->n_all; i++)
        if (i != l->drop && same_unknown(l->all, i, l->drop)) {
            free(l->all[i].value);
            free(l->all[i].name);
        }
    free(l->all[l->drop].value);
    free(l->all[l->drop].name);
    free(l->all);
}

/* Appends to out the dims of the unknown of entry u, the size they stay
 * fixed at, and why the graph did not hold with them symbolic too. */
static void note_fixed(const xf_model *m, int u, const char *why, char *out, size_t n)
{
    size_t len = strlen(out);
    for (int i = 0; i < m->n_symbolic && len + 80 < n; i++)
        if (sym_same(m, i, u))
            len += (size_t)snprintf(out + len, n - len, "%s'%s' dim %d%s%s%s", len ? ", " : "", m->symbolic[i].value,
                                    m->symbolic[i].dim, m->symbolic[i].name[0] ? " ('" : "", m->symbolic[i].name,
                                    m->symbolic[i].name[0] ? "')" : "");
    if (len + 40 < n)
        len += (size_t)snprintf(out + len, n - len, ", %" PRId64, sym_base(m, u));
    if (len + 40 < n)
        snprintf(out + len, n - len, " (with it symbolic too, %s)", why);
}

/* How many unknowns before i's first dim, counting only those whose sizes
 * as loaded are size (any size when size < 0). */
static int sym_rank(const xf_model *m, int i, int64_t size)
{
    int first = 0;
    while (!sym_same(m, first, i))
        first++;
    int rank = 0;
    for (int j = 0; j < first; j++) {
        bool new_name = true;
        for (int k = 0; k < j && new_name; k++)
            new_name = !sym_same(m, k, j);
        rank += new_name && (size < 0 || sym_base(m, j) == size);
    }
    return rank;
}

/* With --dim sizes the rounds scale them (x2, x3, ...), which keeps the
 * sums the model may need (total = past + seq); with distinct, unknowns
 * given equal sizes (height and width, say) are told apart by scaling all
 * but the first of them once, twice, ... more (which keeps what the sizes
 * divide by).  Without --dim sizes each unknown gets small sizes of its own
 * (with distinct; else all share them). */
static int64_t sym_size(const xf_model *m, int i, int round, bool distinct)
{
    bool scaled = false;
    for (int j = 0; j < m->n_symbolic && !scaled; j++)
        scaled = xf_graph_find_value(m->graph, m->symbolic[j].value) >= 0 &&
                 m->graph->values[xf_graph_find_value(m->graph, m->symbolic[j].value)].is_input && sym_base(m, j) != 1;
    if (scaled)
        return sym_base(m, i) * (round + 2 + (distinct ? sym_rank(m, i, sym_base(m, i)) : 0));
    int key = distinct ? sym_rank(m, i, -1) : 0;
    int64_t small = 2 + (round >= SYM_LARGE ? round - SYM_LARGE : round) + 5 * (key < 7 ? key : 7);
    return round >= SYM_LARGE ? 33 * small : small;
}

/* A copy of g with every symbolic input dim of m set to its size in round
 * and the computed values' shapes unknown. */
static xf_graph *with_sizes(const xf_model *m, const xf_graph *g, int round, bool distinct)
{
    xf_graph *r = xf_graph_clone(g);
    for (int i = 0; r && i < m->n_symbolic; i++) {
        int v = xf_graph_find_value(r, m->symbolic[i].value);
        if (v >= 0 && m->symbolic[i].dim < r->values[v].shape.ndim)
            r->values[v].shape.dims[m->symbolic[i].dim] = sym_size(m, i, round, distinct);
    }
    for (int v = 0; r && v < r->n_values; v++)
        if (r->values[v].producer >= 0)
            r->values[v].shape.ndim = -1;
    return r;
}

/* While symbolic dims are worked out, an If whose condition folds stays:
 * the condition may depend on the sizes. */
const xf_canon_options xfc_keep_every_if = {.keep_if = true};

/* Whether an opaque node (an If, say) is among the producers of value v:
 * its shape may then depend on run-time values. */
static bool after_opaque(const xf_graph *g, int v)
{
    bool *seen = calloc((size_t)g->n_values + 1, sizeof *seen);
    int *stack = malloc(sizeof *stack * ((size_t)g->n_values + 1));
    bool found = false;
    int top = 0;
    if (seen && stack) {
        stack[top++] = v;
        seen[v] = true;
    }
    while (top > 0 && !found) {
        int p = g->values[stack[--top]].producer;
        if (p < 0)
            continue;
        found = g->nodes[p].op == XF_OP_OPAQUE;
        for (int k = 0; k < g->nodes[p].n_inputs; k++) {
            int u = g->nodes[p].inputs[k];
            if (u >= 0 && !seen[u]) {
                seen[u] = true;
                stack[top++] = u;
            }
        }
    }
    free(seen);
    free(stack);
    return found;
}

/* with_sizes, with the shapes inferred anew and canonicalized (shape
 * computations then fold at those sizes); NULL, with why, when that fails
 * or an output's shape is not known then, unless it is not known in m's
 * graph either or follows an opaque node (it depends on run-time values:
 * an If's, a NonZero's). */
static xf_graph *resized(const xf_model *m, const xf_graph *g, int round, bool distinct, int64_t opset, char *why,
                         size_t n)
{
    xf_error err = {0};
    xf_graph *r = with_sizes(m, g, round, distinct);
    if (!r) {
        snprintf(why, n, "out of memory");
        return NULL;
    }
    if (xf_graph_infer_shapes(r, opset, &err) != XF_OK ||
        xf_canonicalize_with(r, opset, xf_runtime_eval_node, &xfc_keep_every_if, NULL, &err) != XF_OK) {
        snprintf(why, n, "%s", err.msg);
        xf_graph_free(r);
        return NULL;
    }
    for (int k = 0; k < r->n_outputs; k++)
        if (r->values[r->outputs[k]].shape.ndim < 0 &&
            (k >= m->graph->n_outputs || m->graph->values[m->graph->outputs[k]].shape.ndim >= 0) &&
            !after_opaque(r, r->outputs[k])) {
            snprintf(why, n, "the shape of output '%s' is not known at other sizes", r->values[r->outputs[k]].name);
            xf_graph_free(r);
            return NULL;
        }
    return r;
}

/* xfc_prepare_symbolic for m's symbolic dims as they are. */
static void plan_sizes(xf_model *m, const xf_graph *original, int64_t opset, xfc_sym_plan *p)
{
    xf_graph *at[3] = {NULL, NULL, NULL};
    for (int d = 1; d >= 0 && !at[1]; d--) {
        xf_graph_free(at[0]);
        p->distinct = d;
        at[0] = resized(m, original, 0, p->distinct, opset, p->why, sizeof p->why);
        at[1] = at[0] ? resized(m, original, 1, p->distinct, opset, p->why, sizeof p->why) : NULL;
    }
    /* at large sizes too, where the model takes them (it may not) */
    char ignored[sizeof p->why];
    at[2] = at[1] ? resized(m, original, SYM_LARGE, p->distinct, opset, ignored, sizeof ignored) : NULL;
    xf_error err = {0};
    int written = 0;
    if (at[1] && xf_sizes_generalize(m->graph, (const xf_graph *const *)at, at[2] ? 3 : 2, &p->recompute, &written,
                                     &err) != XF_OK)
        snprintf(p->why, sizeof p->why, "%s", err.msg);
    else if (at[1])
        p->why[0] = '\0';
    /* tried at shared sizes, a shape entry that copies one unknown cannot
     * be told from one that copies another; unless no shape entry depends
     * on the sizes (scikit-learn's inputs, whose batch dims a Concat of the
     * columns ties), and an output dim that follows them is named after
     * none of them unless the file names it after one (xfc_keep_symbolic) */
    bool constant_free = written == 0 && p->recompute.n == 0;
    for (int i = 0; at[1] && !p->distinct && !p->why[0] && i < m->n_symbolic; i++)
        for (int j = i + 1; j < m->n_symbolic && !p->why[0]; j++)
            if (!sym_same(m, i, j) && !constant_free &&
                sym_size(m, i, 0, false) == sym_size(m, j, 0, false) &&
                sym_size(m, i, 1, false) == sym_size(m, j, 1, false))
                snprintf(p->why, sizeof p->why,
                         "'%s' dim %d and '%s' dim %d could only be tried at equal sizes, which cannot tell a shape "
                         "that follows one from one that follows the other; give them sizes that fit with --dim "
                         "NAME=N",
                         m->symbolic[i].value, m->symbolic[i].dim, m->symbolic[j].value, m->symbolic[j].dim);
    if (at[1] && (written || p->recompute.n))
        xf_cli_info("symbolic dims: %d shape constant%s written without the size, %d constant%s to compute at run "
                    "time\n", written, written == 1 ? "" : "s", p->recompute.n, p->recompute.n == 1 ? "" : "s");
    xf_graph_free(at[0]);
    xf_graph_free(at[1]);
    xf_graph_free(at[2]);
}

/* The number of distinct unknowns among m's symbolic dims. */
static int unknowns(const xf_model *m)
{
    int n = 0;
    for (int i = 0; i < m->n_symbolic; i++)
        n += sym_first(m, i);
    return n;
}

void xfc_prepare_symbolic(xf_model *m, const xf_graph *original, int64_t opset, xfc_sym_plan *p)
{
    plan_sizes(m, original, opset, p);
    if (!p->why[0] || unknowns(m) < 2)
        return;
    /* one unknown the model cannot take at other sizes (an audio model's
     * frame length, say) need not fix the others (its batch): each is
     * tried fixed at its size in turn, the first that lets the others
     * through stays fixed */
    char why[sizeof p->why];
    snprintf(why, sizeof why, "%s", p->why);
    for (int u = 0; u < m->n_symbolic; u++) {
        sym_list l;
        if (!sym_first(m, u))
            continue;
        char fixed[sizeof p->fixed] = "";
        note_fixed(m, u, why, fixed, sizeof fixed);
        int64_t size = sym_base(m, u);
        if (!unknowns_drop(m, u, &l))
            break;
        xf_names_free(&p->recompute);
        plan_sizes(m, original, opset, p);
        if (!p->why[0]) {
            p->fixed_guess = p->guess > 1 && size == p->guess;
            unknowns_fix(&l);
            snprintf(p->fixed, sizeof p->fixed, "%s", fixed);
            return;
        }
        unknowns_restore(m, &l);
    }
    snprintf(p->why, sizeof p->why, "%s", why);
}

/* Whether g, the graph to write, holds for other sizes: canonicalized at
 * rounds r0 and r0 + 1, its outputs' shapes are the original's, and at
 * round r0 (as written) it computes the original's outputs on the fastest
 * CPU backend.  r0 is 2 (sizes not used before) unless the original itself
 * fails there (a sequence past the model's position table, say); then 0,
 * the sizes that xfc_prepare_symbolic used.  At round SYM_LARGE + 1, where
 * the original takes it, g's output shapes must be the original's too.
 * opt[0..2] receive the canonicalized graphs (opt[2] NULL where the
 * original does not take the large sizes), *round0 the r0 used.  Where the
 * original cannot run on any CPU backend (an op none of them runs: a custom
 * op, ONNX-ML's), the shapes are all that is compared, and unchecked (size
 * un) says why. */
static bool holds_at_other_sizes(const xf_model *m, const xf_graph *original, const xf_graph *g, int64_t opset,
                                 uint64_t seed, const xfc_sym_plan *p, xf_graph **opt, int *round0, char *why, size_t n,
                                 char *unchecked, size_t un)
{
    bool ok = true, original_fails = false;
    for (int r0 = 2; r0 >= 0; r0 -= 2) {
        ok = true;
        original_fails = false;
        *round0 = r0;
        for (int r = 0; r < 2 && ok; r++) {
            xf_graph_free(opt[r]);
            opt[r] = NULL;
            xf_graph *orig = resized(m, original, r0 + r, p->distinct, opset, why, n);
            original_fails = !orig;
            opt[r] = orig ? resized(m, g, r0 + r, p->distinct, opset, why, n) : NULL;
            ok = orig && opt[r];
            for (int k = 0; ok && k < orig->n_outputs; k++)
                if (!xf_shape_equal(&orig->values[orig->outputs[k]].shape, &opt[r]->values[opt[r]->outputs[k]].shape)) {
                    snprintf(why, n, "output '%s' gets another shape", orig->values[orig->outputs[k]].name);
                    ok = false;
                }
            xf_graph *as_written = ok && r == 0 ? with_sizes(m, g, r0, p->distinct) : NULL;
            int same = ok && r == 0 && as_written ? xfc_same_outputs(orig, as_written, opset, seed, unchecked, un) : 1;
            if (ok && r == 0)
                ok = as_written && same != 0;
            if (same == 0)
                snprintf(why, n, "%s", unchecked);
            if (r == 0 && same >= 0)
                unchecked[0] = '\0';
            xf_graph_free(as_written);
            xf_graph_free(orig);
        }
        if (ok || !original_fails)
            break;
    }
    /* at large sizes, on shapes (opt[2]): where the original takes them,
     * g must, and give its output shapes */
    char ignored[1200];
    xf_graph *orig = ok ? resized(m, original, SYM_LARGE + 1, p->distinct, opset, ignored, sizeof ignored) : NULL;
    xf_graph_free(opt[2]);
    opt[2] = orig ? resized(m, g, SYM_LARGE + 1, p->distinct, opset, why, n) : NULL;
    ok = ok && (!orig || opt[2]);
    for (int k = 0; opt[2] && ok && k < orig->n_outputs; k++)
        if (!xf_shape_equal(&orig->values[orig->outputs[k]].shape, &opt[2]->values[opt[2]->outputs[k]].shape)) {
            snprintf(why, n, "output '%s' gets another shape at larger sizes", orig->values[orig->outputs[k]].name);
            ok = false;
        }
    xf_graph_free(orig);
    return ok;
}

/* Whether the file declares a dim of graph output name symbolic (its
 * other dims it then declares static). */
static bool declares_symbolic(const xf_model *m, const char *name)
{
    for (int i = 0; i < m->n_declared_out; i++)
        if (!strcmp(m->declared_out[i].value, name))
            return true;
    return false;
}

/* One try at keeping m's symbolic dims: on success *out is the graph to
 * write (the constants that depend on the sizes computed again) and the
 * output dims that follow the sizes are added to m; else why says what
 * failed.  *r0 is the round of sizes the graph was checked at. */
static bool try_keep(xf_model *m, const xf_graph *original, int64_t opset, uint64_t seed, const xfc_sym_plan *p,
                     xf_graph **out, int *r0, bool *large, int *recomputed, char *why, size_t why_n, char *unchecked,
                     size_t un)
{
    xf_graph *opt[3] = {NULL, NULL, NULL};
    xf_graph *g = xf_graph_clone(m->graph);
    xf_error err = {0};
    *recomputed = 0;
    bool ok = g && xf_sizes_recompute(g, original, &p->recompute, recomputed, &err) == XF_OK;
    if (!ok)
        snprintf(why, why_n, "%s", g ? err.msg : "out of memory");
    *r0 = 2;
    unchecked[0] = '\0';
    ok = ok && holds_at_other_sizes(m, original, g, opset, seed, p, opt, r0, why, why_n, unchecked, un);
    int n_inputs = m->n_symbolic;
    for (int k = 0; ok && k < g->n_outputs; k++) {
        const xf_shape *s = &g->values[g->outputs[k]].shape;
        const xf_shape *sa = &opt[0]->values[opt[0]->outputs[k]].shape, *sb = &opt[1]->values[opt[1]->outputs[k]].shape;
        const xf_shape *sc = opt[2] ? &opt[2]->values[opt[2]->outputs[k]].shape : s;
        for (int d = 0; ok && d < s->ndim; d++) {
            /* a shape known only at run time: every dim symbolic, unnamed */
            int64_t a = sa->ndim == s->ndim ? sa->dims[d] : -1, b = sb->ndim == s->ndim ? sb->dims[d] : -1;
            int64_t c = sc->ndim == s->ndim ? sc->dims[d] : -1;
            if (a == s->dims[d] && b == s->dims[d] && c == s->dims[d])
                continue;
            /* behind an op no backend runs, the sizes cannot tell: the
             * file's declaration says (a dim it declares static stays) */
            const xf_symbolic_dim *declared = NULL;
            for (int i = 0; i < m->n_declared_out && !declared; i++)
                if (m->declared_out[i].dim == d && !strcmp(m->declared_out[i].value, g->values[g->outputs[k]].name))
                    declared = &m->declared_out[i];
            bool unknown = sa->ndim < 0 || sb->ndim < 0;
            if (unknown && !declared && declares_symbolic(m, g->values[g->outputs[k]].name))
                continue;
            /* named after the input dim whose sizes it follows; of input
             * dims of other names tried at equal sizes, after the one the
             * file names there, else after none */
            const char *name = unknown && declared ? declared->name : NULL;
            bool ambiguous = false, file_names_one = false;
            for (int i = 0; i < n_inputs && !(unknown && declared); i++)
                if (s->dims[d] == sym_base(m, i) && a == sym_size(m, i, *r0, p->distinct) &&
                    b == sym_size(m, i, *r0 + 1, p->distinct) &&
                    (!opt[2] || c == sym_size(m, i, SYM_LARGE + 1, p->distinct))) {
                    ambiguous |= name && strcmp(name, m->symbolic[i].name) != 0;
                    file_names_one |= declared && !strcmp(declared->name, m->symbolic[i].name);
                    name = name ? name : m->symbolic[i].name;
                }
            name = !name ? "" : !ambiguous ? name : file_names_one ? declared->name : "";
            if (!xf_model_add_symbolic(m, g->values[g->outputs[k]].name, d, name)) {
                snprintf(why, why_n, "out of memory");
                ok = false;
            }
        }
    }
    *large = opt[2] != NULL;
    xf_graph_free(opt[0]);
    xf_graph_free(opt[1]);
    xf_graph_free(opt[2]);
    if (!ok) {
        xf_graph_free(g);
        g = NULL;
    }
    *out = g;
    return ok;
}

/* Whether the original runs at the sizes its symbolic dims were given, on
 * the fastest CPU backend with seeded random inputs; why says how it fails
 * (an op no backend runs counts as running: it cannot tell). */
static bool runs_as_sized(const xf_graph *original, int64_t opset, uint64_t seed, char *why, size_t n)
{
    const char *backend = xf_backend_find("cpu") ? "cpu" : "cpu_ref";
    xf_error err = {0};
    xf_session *s = NULL;
    xf_tensor **in = NULL, **out = calloc((size_t)original->n_outputs + 1, sizeof *out);
    xf_session_options given = {.as_given = true};
    xf_status st = out ? xf_session_create(original, opset, backend, &given, &s, &err) : XF_ERR_NOMEM;
    bool runs = st == XF_ERR_UNSUPPORTED || st == XF_ERR_NOMEM;
    if (st == XF_OK && xf_cli_load_inputs(original, NULL, 0, seed, &in, &err) == XF_OK)
        runs = xf_session_run(s, in, out, &err) == XF_OK;
    if (!runs)
        snprintf(why, n, "%s", err.msg);
    xf_session_free(s);
    xf_cli_free_tensors(in, original->n_inputs);
    xf_cli_free_tensors(out, original->n_outputs);
    return runs;
}

bool xfc_keep_symbolic(xf_model *m, const xf_graph *original, int64_t opset, uint64_t seed, xfc_sym_plan *p,
                       bool inputs_given, char *error, size_t error_n)
{
    char why[1200], unchecked[1200] = "";
    snprintf(why, sizeof why, "%s", p->why);
    xf_graph *g = NULL;
    int r0 = 2, recomputed = 0, n_inputs = m->n_symbolic;
    bool large = false;
    bool ok = !why[0] && try_keep(m, original, opset, seed, p, &g, &r0, &large, &recomputed, why, sizeof why, unchecked,
                                  sizeof unchecked);
    /* the others without one unknown the graph does not hold for, as
     * xfc_prepare_symbolic tries them */
    for (int u = 0; !ok && !p->why[0] && unknowns(m) >= 2 && u < m->n_symbolic; u++) {
        sym_list l;
        char fixed[sizeof p->fixed] = "", why_u[sizeof why];
        if (!sym_first(m, u))
            continue;
        note_fixed(m, u, why, fixed, sizeof fixed);
        int64_t size = sym_base(m, u);
        if (!unknowns_drop(m, u, &l))
            break;
        n_inputs = m->n_symbolic;
        ok = try_keep(m, original, opset, seed, p, &g, &r0, &large, &recomputed, why_u, sizeof why_u, unchecked,
                      sizeof unchecked);
        if (ok) {
            size_t len = strlen(p->fixed);
            snprintf(p->fixed + len, sizeof p->fixed - len, "%s%s", len ? "; " : "", fixed);
            p->fixed_guess |= p->guess > 1 && size == p->guess;
            /* the output dims try_keep added stay with the inputs kept */
            unknowns_fix(&l);
        } else {
            unknowns_restore(m, &l);
            n_inputs = m->n_symbolic;
        }
    }
    char list[400] = "", sizes[200] = "", large_sizes[200] = "";
    for (int i = 0; i < n_inputs && strlen(list) < sizeof list - 80; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s'%s' dim %d%s%s%s", i ? ", " : "",
                 m->symbolic[i].value, m->symbolic[i].dim, m->symbolic[i].name[0] ? " ('" : "", m->symbolic[i].name,
                 m->symbolic[i].name[0] ? "')" : "");
    for (int i = 0; i < n_inputs && strlen(sizes) < sizeof sizes - 40; i++) {
        bool first = true;
        for (int j = 0; j < i && first; j++)
            first = !sym_same(m, j, i);
        if (first)
            snprintf(sizes + strlen(sizes), sizeof sizes - strlen(sizes), "%s%s %" PRId64 " and %" PRId64,
                     sizes[0] ? ", " : "", m->symbolic[i].name[0] ? m->symbolic[i].name : "?",
                     sym_size(m, i, r0, p->distinct), sym_size(m, i, r0 + 1, p->distinct));
        if (first && large)
            snprintf(large_sizes + strlen(large_sizes), sizeof large_sizes - strlen(large_sizes), "%s%s %" PRId64,
                     large_sizes[0] ? ", " : "", m->symbolic[i].name[0] ? m->symbolic[i].name : "?",
                     sym_size(m, i, SYM_LARGE + 1, p->distinct));
    }
    /* sizes nobody gave (the larger ones tried where 1 does not fit) are
     * guesses: a model fixed at one would refuse the inputs it is meant
     * for (PaddleOCR's recognizer, 48 high, fixed at 64).  A batch stays 1
     * with the guesses, as without them: a model whose state holds one
     * sequence (AECMOS's GRU) is written at batch 1, as it would be if the
     * others fitted at 1. */
    if (p->guess > 1 && (!ok || p->fixed_guess)) {
        xf_graph_free(g);
        if (ok)
            snprintf(error, error_n,
                     "the written model would be fixed at the size used for %s, a size guessed, not "
                     "given; give the sizes the model takes with --input-shape NAME=DIMS, --input FILE.pb or "
                     "--dim NAME=N",
                     p->fixed);
        else
            snprintf(error, error_n,
                     "the symbolic dims %s could not stay symbolic (%s), and the size used for those no "
                     "size was given for, %" PRId64 ", was guessed; give the sizes the model takes with "
                     "--input-shape NAME=DIMS, --input FILE.pb or --dim NAME=N",
                     list, why, p->guess);
        return false;
    }
    if (ok) {
        xf_graph_free(m->graph);
        m->graph = g;
        g = NULL;
        m->keep_symbolic = true;
        xf_cli_info("symbolic dims kept: %s (checked at %s", list, sizes);
        if (recomputed)
            xf_cli_info("; %d constant%s computed at run time", recomputed, recomputed == 1 ? "" : "s");
        xf_cli_info(")");
        if (large)
            xf_cli_info(", output shapes also at %s", large_sizes);
        xf_cli_info("\n");
        if (unchecked[0])
            xf_log(XF_LOG_WARN, "the symbolic dims were checked on shapes only: the original model does not run "
                   "here (%s)", unchecked);
        if (p->fixed[0])
            xf_log(XF_LOG_WARN, "the written model is fixed at the size used for %s; the other symbolic dims stay",
                   p->fixed);
        return true;
    }
    /* fixed at sizes where the model does not run (1, where none was
     * given), the file would take no input: nothing is written.  With
     * input files given, their sizes are the user's, and random inputs
     * could fail where theirs do not. */
    char fails[1200], sized[200] = "";
    if (!inputs_given && !runs_as_sized(original, opset, seed, fails, sizeof fails)) {
        for (int i = 0; i < n_inputs && strlen(sized) < sizeof sized - 60; i++) {
            size_t len = strlen(sized);
            if (!sym_first(m, i))
                continue;
            if (m->symbolic[i].name[0])
                snprintf(sized + len, sizeof sized - len, "%s%s=%" PRId64, len ? ", " : "", m->symbolic[i].name,
                         sym_base(m, i));
            else
                snprintf(sized + len, sizeof sized - len, "%s'%s' dim %d=%" PRId64, len ? ", " : "",
                         m->symbolic[i].value, m->symbolic[i].dim, sym_base(m, i));
        }
        snprintf(error, error_n,
                 "the symbolic dims %s could not stay symbolic (%s), and at the sizes used for them "
                 "(%s) the model does not run (%s); give sizes that fit with --dim NAME=N, --input FILE.pb or "
                 "--input-shape NAME=DIMS",
                 list, why, sized, fails);
        return false;
    }
    xf_log(XF_LOG_WARN,
           "the written model is fixed at the size used for %s: it does not hold for other sizes "
           "(%s); set them with --input-shape",
           list, why);
    return true;
}

const char *xfc_sizes_hint(const xf_model *m)
{
    static char hint[600];
    hint[0] = '\0';
    size_t used = 0;
    bool unnamed = false;
    for (int i = 0; i < m->n_symbolic && used < sizeof hint - 200; i++) {
        const char *name = m->symbolic[i].name;
        if (!sym_first(m, i))
            continue;
        unnamed |= !name[0];
        if (name[0])
            used += (size_t)snprintf(hint + used, sizeof hint - used, "%s%s=%" PRId64, used ? ", " : "", name,
                                     sym_base(m, i));
        else
            used += (size_t)snprintf(hint + used, sizeof hint - used, "%s'%s' dim %d=%" PRId64, used ? ", " : "",
                                     m->symbolic[i].value, m->symbolic[i].dim, sym_base(m, i));
    }
    if (!used)
        return "";
    static char out[800];
    snprintf(out, sizeof out,
             " (the symbolic dims were sized %s; if the model relates them, give sizes that fit "
             "with --dim NAME=N%s, or fix them with --input-shape)",
             hint, unnamed ? " (unnamed ones: --input FILE.pb, whose size sizes them)" : "");
    return out;
}
