/* Folding nodes into the primitive of the node before them (static mode):
 * Conv -> BatchNormalization (into the weights), Conv -> Add of another
 * tensor (a sum post-op: the residual connection), unary ops after a
 * Conv, BatchNormalization or binary op (eltwise post-ops), activations
 * written out as several nodes (GELU, SiLU, QuickGELU, Mish: found by the
 * function they compute, cpu_dnnl_fold_region.c; HardSwish's forms) into
 * one eltwise primitive or post-op.
 *
 * The plan is made from the graph alone, before memory is planned, so that
 * the memory plan can treat a host and the nodes folded into it as one
 * step (xf_backend.fusion_groups): the host writes the last folded node's
 * output while it still reads its own inputs and the sum operand, so that
 * output must share bytes with none of them.  When each folded node is
 * prepared, its host is prepared again with that node's work added. */
#include "cpu_dnnl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* What the plan has folded into a host so far. */
typedef struct fold_acc {
    int n_posts;
    xf_dn_post posts[XF_DN_MAX_POSTS];
    bool bn, sum, bias;
} fold_acc;

/* Whether input k of node q is a value that a node oneDNN runs produced
 * for q alone, stored in q's output layout: q's work can then be done by
 * that node's primitive. */
static bool chainable(const xf_dn_ctx *c, const xf_graph *g, int q, int k)
{
    const xf_node *n = &g->nodes[q];
    if (n->n_outputs != 1 || n->outputs[0] < 0 || k >= n->n_inputs || n->inputs[k] < 0)
        return false;
    int v = n->inputs[k], p = g->values[v].producer;
    return p >= 0 && c->handlers[p] && g->nodes[p].n_outputs == 1 && c->readers[v] == 1 &&
           xf_dn_value_layout(c, v) == xf_dn_value_layout(c, n->outputs[0]);
}

static bool is_const(const xf_graph *g, int v) { return v >= 0 && g->values[v].init; }

/* BatchNormalization bn folds into Conv conv when its parameters and the
 * convolution's weights and bias are constants and nothing was folded in
 * before (the weights are scaled, so the Conv's raw result must be what
 * bn reads). */
static bool bn_foldable(const xf_graph *g, const xf_node *conv, const xf_node *bn, const fold_acc *acc)
{
    if (acc->n_posts || acc->bn || acc->bias || conv->attrs.activation != XF_ACT_NONE ||
        conv->attrs.ms_act != XF_MS_ACT_NONE || xf_dn_input(conv, 3) >= 0 || !is_const(g, conv->inputs[1]) ||
        (conv->n_inputs > 2 && conv->inputs[2] >= 0 && !is_const(g, conv->inputs[2])))
        return false;
    for (int k = 1; k < 5; k++)
        if (!is_const(g, bn->inputs[k]))
            return false;
    return true;
}

/* Add of a constant b (chained on input k) is a MatMul's bias when b is
 * one row of the output's columns (its other dims 1). */
static bool bias_foldable(const xf_graph *g, const xf_node *add, int k)
{
    int b = add->inputs[1 - k];
    const xf_shape *ys = &g->values[add->outputs[0]].shape;
    if (add->n_inputs != 2 || !is_const(g, b) || !xf_dn_is_f32(g, b) ||
        !xf_shape_equal(&g->values[add->inputs[k]].shape, ys))
        return false;
    /* one value per column: oneDNN's matmul kernels take no other bias
     * (a bias per row, or Swin's relative position bias per head, row and
     * column, left it its reference kernel: 700 ms for a product of 1) */
    const xf_shape *bs = &g->values[b].shape;
    if (bs->ndim > ys->ndim || bs->ndim < 1 || bs->dims[bs->ndim - 1] != ys->dims[ys->ndim - 1])
        return false;
    for (int d = 0; d < bs->ndim - 1; d++)
        if (bs->dims[d] != 1)
            return false;
    return true;
}

/* Add of a constant b (chained on input k) is Conv conv's bias when b
 * holds one value per output channel (or one value), the Conv has no
 * activation of its own and its bias, if any, is a constant: PaddleOCR's
 * convolutions export their bias as such an Add. */
static bool conv_bias_foldable(const xf_graph *g, const xf_node *conv, const xf_node *add, int k)
{
    int b = add->inputs[1 - k];
    const xf_shape *ys = &g->values[add->outputs[0]].shape, *bs = &g->values[b].shape;
    if (add->n_inputs != 2 || conv->op != XF_OP_CONV || conv->attrs.activation != XF_ACT_NONE || !is_const(g, b) ||
        !xf_dn_is_f32(g, b) || !xf_shape_equal(&g->values[add->inputs[k]].shape, ys) || ys->ndim < 3 ||
        bs->ndim > ys->ndim || (xf_dn_input(conv, 2) >= 0 && !is_const(g, conv->inputs[2])))
        return false;
    for (int d = 0; d < bs->ndim; d++) {
        int yd = d + ys->ndim - bs->ndim;
        if (bs->dims[d] != 1 && !(yd == 1 && bs->dims[d] == ys->dims[1]))
            return false;
    }
    return true;
}

/* The other operand r of Add (chained on input k) can be added by host hn's
 * sum post-op when nothing broadcasts, r is stored in the output's layout
 * and r's bytes are there before the host runs: produced before it, and
 * not a graph input (whose buffer is only bound per run). */
static bool sum_foldable(const xf_dn_ctx *c, const xf_graph *g, const xf_node *add, int k, int hn)
{
    int r = add->inputs[1 - k], y = add->outputs[0];
    if (add->n_inputs != 2 || r < 0)
        return false;
    const xf_value *rv = &g->values[r];
    const xf_shape *ys = &g->values[y].shape;
    return !rv->is_input && rv->producer < hn && xf_dn_is_f32(g, r) && xf_shape_equal(&rv->shape, ys) &&
           xf_shape_equal(&g->values[add->inputs[k]].shape, ys) &&
           xf_dn_value_layout(c, r) == xf_dn_value_layout(c, y);
}

/* A binary op of its chained input k and a one-element float constant c
 * as an elementwise post-op (alpha * x + beta): Mul, Div and Sub by c, Add
 * of c; alg undef for anything else. */
static xf_dn_post scalar_post(const xf_graph *g, const xf_node *n, int k)
{
    xf_dn_post p = {.alg = dnnl_alg_kind_undef};
    int cv = n->n_inputs == 2 ? n->inputs[1 - k] : -1;
    const xf_tensor *t = is_const(g, cv) ? g->values[cv].init : NULL;
    if (!t || t->dtype != XF_DT_FLOAT || xf_shape_numel(&t->shape) != 1 || t->shape.ndim > g->values[n->outputs[0]].shape.ndim ||
        !xf_shape_equal(&g->values[n->inputs[k]].shape, &g->values[n->outputs[0]].shape))
        return p;
    float c = *(const float *)t->data;
    switch (n->op) {
    case XF_OP_MUL: p = (xf_dn_post){.alg = dnnl_eltwise_linear, .alpha = c}; break;
    case XF_OP_DIV:
        if (k == 0 && c != 0.0f)
            p = (xf_dn_post){.alg = dnnl_eltwise_linear, .alpha = 1.0f / c};
        break;
    case XF_OP_ADD: p = (xf_dn_post){.alg = dnnl_eltwise_linear, .alpha = 1.0f, .beta = c}; break;
    case XF_OP_SUB:
        p = (xf_dn_post){.alg = dnnl_eltwise_linear, .alpha = k == 0 ? 1.0f : -1.0f, .beta = k == 0 ? -c : c};
        break;
    default: break;
    }
    return p;
}

/* The node whose primitive does the work of node p's output: p, or what
 * p was folded into. */
static int host_of(const xf_dn_ctx *c, int p) { return c->folds[p].host >= 0 ? c->folds[p].host : p; }

/* Whether two eltwise post-ops of one primitive may share an algorithm:
 * oneDNN 2.6's jit kernels run every eltwise post-op of one algorithm with
 * the parameters of the first (a binary op followed by Mul 0.5 and Mul 1.5
 * scaled by 0.25), so the same algorithm twice must have the same alpha
 * and beta. */
static bool post_conflicts(const xf_dn_post *a, const xf_dn_post *b)
{
    return !a->sum && !b->sum && a->alg == b->alg && (a->alpha != b->alpha || a->beta != b->beta);
}

/* Whether host hn can append post to what is folded into it so far;
 * counts it when so. */
static bool take_post(xf_dn_ctx *c, const xf_graph *g, fold_acc *acc, int hn, const xf_dn_post *post)
{
    fold_acc *a = &acc[hn];
    const xf_dn_handler *hh = c->handlers[hn];
    if (a->n_posts >= XF_DN_MAX_POSTS || (post->sum && a->sum) || !hh->takes_post ||
        !hh->takes_post(&g->nodes[hn], a->n_posts, post))
        return false;
    /* a Conv's fused Relu is a post-op before these */
    xf_dn_post relu = {.alg = dnnl_eltwise_relu};
    if (hh == &xf_dn_conv_handler && g->nodes[hn].attrs.activation == XF_ACT_RELU && post_conflicts(&relu, post))
        return false;
    for (int i = 0; i < a->n_posts; i++)
        if (post_conflicts(&a->posts[i], post))
            return false;
    const xf_node *h = &g->nodes[hn];
    if (hh == &xf_dn_binary_handler && !xf_dn_binary_takes_posts(c, g, h))
        return false;
    if (post->sum && hh == &xf_dn_conv_handler &&
        !xf_dn_conv_posts_fast(c, g, h, a->bn || a->bias || xf_dn_input(h, 2) >= 0, a->posts, a->n_posts, post))
        return false;
    a->posts[a->n_posts++] = *post;
    a->sum = a->sum || post->sum;
    return true;
}

/* A linear step (a scale or a shift by a constant) after the linear post-op
 * host hn ends with so far, as that one post-op: a2 (a1 x + b1) + b2 is
 * (a2 a1) x + (a2 b1 + b2).  PaddleOCR's learnable affine blocks, a Mul
 * then an Add after each activation, fold so; as two post-ops of one
 * algorithm, oneDNN would run the second with the first's parameters. */
static bool merge_linear(xf_dn_ctx *c, const xf_graph *g, fold_acc *acc, int hn, const xf_dn_post *post)
{
    fold_acc *a = &acc[hn];
    xf_dn_post *last = a->n_posts ? &a->posts[a->n_posts - 1] : NULL;
    if (!last || last->sum || last->alg != dnnl_eltwise_linear || post->sum || post->alg != dnnl_eltwise_linear)
        return false;
    xf_dn_post merged = *last;
    merged.alpha = post->alpha * last->alpha;
    merged.beta = post->alpha * last->beta + post->beta;
    /* as take_post would check it in last's place */
    a->n_posts--;
    bool ok = take_post(c, g, acc, hn, &merged);
    if (!ok)
        a->posts[a->n_posts++] = *last;
    return ok;
}

/* Whether node q, chained on input k, can be folded into the node that
 * computes that input (or into what that node was folded into); records
 * the fold in c->folds and acc. */
static bool plan_fold(xf_dn_ctx *c, const xf_graph *g, fold_acc *acc, int q, int k)
{
    if (!chainable(c, g, q, k))
        return false;
    const xf_node *n = &g->nodes[q];
    int hn = host_of(c, g->values[n->inputs[k]].producer);
    fold_acc *a = &acc[hn];
    const xf_dn_handler *hh = c->handlers[hn];
    bool conv = hh == &xf_dn_conv_handler, ok;
    bool matmul = hh == &xf_dn_matmul_handler || hh == &xf_dn_fused_matmul_handler;
    xf_dn_fold_at f = {.host = hn, .operand = 1 - k};
    if (n->op == XF_OP_BATCH_NORM) {
        f.kind = XF_DN_FOLD_BN;
        ok = conv && c->handlers[q] == &xf_dn_batch_norm_handler && bn_foldable(g, &g->nodes[hn], n, a);
        a->bn = a->bn || ok;
    } else if (n->op == XF_OP_ADD && matmul && !a->bias && !a->n_posts && bias_foldable(g, n, k) &&
               (g->nodes[hn].op != XF_OP_MS_FUSED_MATMUL || g->nodes[hn].attrs.alpha == 1.0f)) {
        /* the bias comes before every post-op (and would be scaled by
         * FusedMatMul's alpha, the output scale) */
        f.kind = XF_DN_FOLD_BIAS;
        ok = a->bias = true;
    } else if (n->op == XF_OP_ADD && conv && !a->bias && !a->bn && !a->n_posts &&
               conv_bias_foldable(g, &g->nodes[hn], n, k)) {
        f.kind = XF_DN_FOLD_BIAS;
        ok = a->bias = true;
    } else if ((f.post = scalar_post(g, n, k)).alg != dnnl_alg_kind_undef) {
        f.kind = merge_linear(c, g, acc, hn, &f.post) ? XF_DN_FOLD_LINEAR : XF_DN_FOLD_POST;
        ok = f.kind == XF_DN_FOLD_LINEAR || take_post(c, g, acc, hn, &f.post);
    } else if (n->op == XF_OP_ADD) {
        f.kind = XF_DN_FOLD_SUM;
        f.post = (xf_dn_post){.sum = true, .alg = dnnl_alg_kind_undef};
        ok = (conv || matmul) && sum_foldable(c, g, n, k, hn) && take_post(c, g, acc, hn, &f.post);
    } else {
        f.kind = XF_DN_FOLD_POST;
        f.post = xf_dn_unary_post(g, n);
        ok = f.post.alg != dnnl_alg_kind_undef && take_post(c, g, acc, hn, &f.post);
    }
    if (ok)
        c->folds[q] = f;
    return ok;
}

/* Whether v is a float constant holding one value, want (to float precision). */
static bool scalar_is(const xf_graph *g, int v, double want)
{
    const xf_tensor *t = v >= 0 ? g->values[v].init : NULL;
    return t && t->dtype == XF_DT_FLOAT && xf_shape_numel(&t->shape) == 1 &&
           fabs(((const float *)t->data)[0] - want) <= 1e-6 * fabs(want);
}

/* The input of binary node n other than input k (-1 when n is not binary). */
static int other_input(const xf_node *n, int k) { return n->n_inputs == 2 ? n->inputs[1 - k] : -1; }

/* The one node reading value v (a graph output counts as a reader), or -1. */
static int sole_reader(const xf_dn_ctx *c, const int *reader, int v)
{
    return v >= 0 && c->readers[v] == 1 ? reader[v] : -1;
}

/* Node q's output when q is `op` with input k as `in` and (binary ops) the
 * other input a constant equal to `scalar` (or exactly value `other` when
 * other >= 0), stored like `in`, of its shape; -1 otherwise. */
static int pattern_step(const xf_dn_ctx *c, const xf_graph *g, int q, xf_op op, int in, double scalar, int other)
{
    if (q < 0 || g->nodes[q].op != op || g->nodes[q].n_outputs != 1)
        return -1;
    const xf_node *n = &g->nodes[q];
    int k = n->inputs[0] == in ? 0 : n->n_inputs > 1 && n->inputs[1] == in ? 1 : -1;
    if (k < 0 || (n->n_inputs == 2 && (other >= 0 ? other_input(n, k) != other : !scalar_is(g, other_input(n, k), scalar))))
        return -1;
    int y = n->outputs[0];
    bool same = y >= 0 && xf_dn_is_f32(g, y) && xf_shape_equal(&g->values[y].shape, &g->values[in].shape) &&
                xf_dn_value_layout(c, y) == xf_dn_value_layout(c, in);
    return same ? y : -1;
}

/* The pattern nodes[0..count) on x, computed as the eltwise `post`:
 * folded into x's producer when x is read by the pattern alone (x_reads
 * times) and the producer takes the post-op, else run by nodes[0] with
 * xf_dn_pattern_handler; the other nodes are steps of the host. */
static void fold_pattern(xf_dn_ctx *c, const xf_graph *g, fold_acc *acc, int x, xf_dn_post post, const int *nodes,
                         int count, int x_reads)
{
    int p = g->values[x].producer, q = nodes[0];
    xf_dn_fold_at first = {.host = -1, .kind = XF_DN_FOLD_POST, .post = post};
    if (p >= 0 && c->handlers[p] && g->nodes[p].n_outputs == 1 && c->readers[x] == x_reads &&
        take_post(c, g, acc, host_of(c, p), &first.post))
        first.host = host_of(c, p);
    else
        c->handlers[q] = &xf_dn_pattern_handler;
    c->folds[q] = first;
    int hn = first.host >= 0 ? first.host : q;
    for (int i = 1; i < count; i++)
        c->folds[nodes[i]] = (xf_dn_fold_at){.host = hn, .kind = XF_DN_FOLD_STEP};
}

/* When a region of elementwise nodes starts at node q (GELU, SiLU and
 * the rest of xf_dn_find_region's), folds it as its eltwise, as
 * fold_pattern does. */
static bool plan_region(xf_dn_ctx *c, const xf_graph *g, fold_acc *acc, int q)
{
    xf_dn_region r;
    if (!xf_dn_find_region(c, g, q, &r))
        return false;
    fold_pattern(c, g, acc, r.x, r.post, r.nodes, r.count, r.x_reads);
    return true;
}

/* The oneDNN eltwise that x * f(x) is when f is node n (Sigmoid: SiLU;
 * HardSigmoid with alpha 1/6 and beta 1/2: HardSwish), as a post. */
static xf_dn_post gated_post(const xf_node *n)
{
    if (n->op == XF_OP_SIGMOID)
        return (xf_dn_post){.alg = dnnl_eltwise_swish, .alpha = 1.0f};
    if (n->op == XF_OP_HARD_SIGMOID && fabs(n->attrs.alpha - 1.0 / 6) <= 1e-6 && n->attrs.beta == 0.5f)
        return (xf_dn_post){.alg = dnnl_eltwise_hardswish};
    return (xf_dn_post){.alg = dnnl_alg_kind_undef};
}

xf_dn_post xf_dn_expected_post(const xf_graph *g, int x)
{
    int reader[2], count = 0;
    for (int k = 0; k < g->n_outputs; k++)
        if (g->outputs[k] == x)
            return (xf_dn_post){.alg = dnnl_alg_kind_undef};
    for (int q = 0; q < g->n_nodes && count <= 2; q++)
        for (int k = 0; k < g->nodes[q].n_inputs; k++)
            if (g->nodes[q].inputs[k] == x) {
                if (count < 2)
                    reader[count] = q;
                count++;
                break;
            }
    if (count == 1 && g->nodes[reader[0]].n_inputs == 1)
        return xf_dn_unary_post(g, &g->nodes[reader[0]]);
    for (int i = 0; i < 2 && count == 2; i++) {
        const xf_node *gate = &g->nodes[reader[i]], *mul = &g->nodes[reader[1 - i]];
        if (gate->n_inputs == 1 && gate->n_outputs == 1 && mul->op == XF_OP_MUL && mul->n_inputs == 2 &&
            (mul->inputs[0] == gate->outputs[0] || mul->inputs[1] == gate->outputs[0]))
            return gated_post(gate);
    }
    return (xf_dn_post){.alg = dnnl_alg_kind_undef};
}

/* When node q starts x * f(x) with f a gate of gated_post (HardSwish as
 * PyTorch exports it before opset 14: the gate, then Mul by x, the gate
 * read by the Mul alone), folds it into x's producer as that post-op when
 * nothing else reads x and the producer takes it, else makes q the host of
 * the one eltwise.  HardSigmoid is piecewise, no region's op; SiLU's
 * Sigmoid gate is found as a region before this is tried. */
static bool plan_gated(xf_dn_ctx *c, const xf_graph *g, fold_acc *acc, const int *reader, int q)
{
    const xf_node *n = &g->nodes[q];
    xf_dn_post post = gated_post(n);
    if (post.alg == dnnl_alg_kind_undef || n->n_inputs != 1 || n->inputs[0] < 0 || !xf_dn_is_f32(g, n->inputs[0]))
        return false;
    int x = n->inputs[0], nodes[2] = {q};
    int v = pattern_step(c, g, q, n->op, x, 0, -1);
    v = pattern_step(c, g, nodes[1] = sole_reader(c, reader, v), XF_OP_MUL, v, 0, x);
    if (v < 0)
        return false;
    fold_pattern(c, g, acc, x, post, nodes, 2, 2);
    return true;
}

/* Node q's output when q scales v by 1/6 (Mul by 1/6 or Div by 6), else -1. */
static int sixth_step(const xf_dn_ctx *c, const xf_graph *g, int q, int v)
{
    int y = pattern_step(c, g, q, XF_OP_MUL, v, 1.0 / 6, -1);
    return y >= 0 ? y : q >= 0 && g->nodes[q].inputs[0] == v ? pattern_step(c, g, q, XF_OP_DIV, v, 6.0, -1) : -1;
}

/* When node q starts x * Clip(x + 3, 0, 6) / 6 (TensorFlow's hard_swish,
 * written as Add 3, Clip to [0, 6], the scaling by 1/6 and Mul by x, or
 * the Mul by x before the scaling; each intermediate read by the next
 * node alone), folds the pattern as oneDNN's hardswish, as plan_region
 * does. */
static bool plan_hard_swish(xf_dn_ctx *c, const xf_graph *g, fold_acc *acc, const int *reader, int q)
{
    const xf_node *n = &g->nodes[q];
    if (n->op != XF_OP_ADD || n->n_inputs != 2 || n->inputs[0] < 0 || n->inputs[1] < 0)
        return false;
    int x = n->inputs[g->values[n->inputs[0]].init ? 1 : 0];
    if (!xf_dn_is_f32(g, x))
        return false;
    int nodes[4] = {q};
    int v = pattern_step(c, g, q, XF_OP_ADD, x, 3.0, -1);
    int clip = nodes[1] = sole_reader(c, reader, v);
    xf_dn_post bounds = clip >= 0 && g->nodes[clip].op == XF_OP_CLIP ? xf_dn_unary_post(g, &g->nodes[clip])
                                                                      : (xf_dn_post){.alg = dnnl_alg_kind_undef};
    if (bounds.alg != dnnl_eltwise_clip || bounds.alpha != 0 || bounds.beta != 6)
        return false;
    v = pattern_step(c, g, clip, XF_OP_CLIP, v, 0, -1);
    int r = nodes[2] = sole_reader(c, reader, v), s = sixth_step(c, g, r, v);
    if (s >= 0) {
        v = pattern_step(c, g, nodes[3] = sole_reader(c, reader, s), XF_OP_MUL, s, 0, x);
    } else {
        v = pattern_step(c, g, r, XF_OP_MUL, v, 0, x);
        v = sixth_step(c, g, nodes[3] = sole_reader(c, reader, v), v);
    }
    if (v < 0)
        return false;
    fold_pattern(c, g, acc, x, (xf_dn_post){.alg = dnnl_eltwise_hardswish}, nodes, 4, 2);
    return true;
}

/* When node q is a Cast of 8-bit codes to int32 that a Gather from a
 * table of 256 codes alone reads (a lookup of the QDQ rewrites), folds
 * the Gather in: q looks each code up. */
static bool plan_table(xf_dn_ctx *c, const xf_graph *g, const int *reader, int q)
{
    if (c->handlers[q] != &xf_dn_code_table_handler)
        return false;
    int gather = sole_reader(c, reader, g->nodes[q].outputs[0]);
    if (gather < 0 || c->folds[gather].host >= 0 || !xf_dn_code_table_of(g, &g->nodes[gather]) ||
        g->nodes[gather].inputs[1] != g->nodes[q].outputs[0])
        return false;
    c->folds[gather] = (xf_dn_fold_at){.host = q, .kind = XF_DN_FOLD_TABLE};
    return true;
}

xf_status xf_dn_plan_folds(xf_dn_ctx *c, const xf_graph *g, xf_error *err)
{
    size_t nn = (size_t)(g->n_nodes > 0 ? g->n_nodes : 1), nv = (size_t)(g->n_values > 0 ? g->n_values : 1);
    c->folds = malloc(sizeof *c->folds * nn);
    fold_acc *acc = calloc(nn, sizeof *acc);
    int *reader = malloc(sizeof *reader * nv);
    if (!c->folds || !acc || !reader) {
        free(acc);
        free(reader);
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    }
    for (int v = 0; v < g->n_values; v++)
        reader[v] = -1;
    for (int q = 0; q < g->n_nodes; q++) {
        c->folds[q].host = -1;
        c->folds[q].last = -1;
        for (int k = 0; k < g->nodes[q].n_inputs; k++)
            if (g->nodes[q].inputs[k] >= 0)
                reader[g->nodes[q].inputs[k]] = q;
    }
    for (int q = 0; q < g->n_nodes; q++) {
        if (c->folds[q].host >= 0 || plan_region(c, g, acc, q) || plan_gated(c, g, acc, reader, q) ||
            plan_hard_swish(c, g, acc, reader, q) || plan_table(c, g, reader, q) ||
            !c->handlers[q])
            continue;
        /* a binary op may chain on either input */
        if (!plan_fold(c, g, acc, q, 0) && g->nodes[q].n_inputs == 2)
            plan_fold(c, g, acc, q, 1);
    }
    for (int q = 0; q < g->n_nodes; q++)
        if (c->folds[q].host >= 0)
            c->folds[c->folds[q].host].last = q;
    free(acc);
    free(reader);
    return XF_OK;
}

static bool bytes_overlap(const void *a, size_t na, const void *b, size_t nb)
{
    const char *pa = a, *pb = b;
    return pa && pb && na && nb && pa < pb + nb && pb < pa + na;
}

/* conv's weights and bias with bn applied: per output channel m,
 * w' = w * s and b' = (b - mean) * s + shift, s = scale / sqrt(var + eps). */
static xf_status fold_bn(const xf_graph *g, const xf_node *conv, const xf_node *bn, xf_dn_node *cst, xf_error *err)
{
    const xf_tensor *w = g->values[conv->inputs[1]].init;
    const float *bias = conv->n_inputs > 2 && conv->inputs[2] >= 0 ? g->values[conv->inputs[2]].init->data : NULL;
    const float *p[4];
    for (int k = 0; k < 4; k++)
        p[k] = g->values[bn->inputs[1 + k]].init->data;
    int64_t m_count = w->shape.dims[0], per = xf_shape_numel(&w->shape) / m_count;
    cst->folded_w = malloc(w->nbytes);
    cst->folded_b = malloc(sizeof *cst->folded_b * (size_t)m_count);
    if (!cst->folded_w || !cst->folded_b)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    const float *wd = w->data;
    for (int64_t m = 0; m < m_count; m++) {
        float s = p[0][m] / sqrtf(p[3][m] + bn->attrs.epsilon);
        for (int64_t i = 0; i < per; i++)
            cst->folded_w[m * per + i] = wd[m * per + i] * s;
        cst->folded_b[m] = ((bias ? bias[m] : 0.0f) - p[2][m]) * s + p[1][m];
    }
    return XF_OK;
}

/* conv's bias with the constant b (one value per output channel, or one)
 * added: into cst->folded_b, which the Conv binds as its bias. */
static xf_status fold_conv_bias(const xf_graph *g, const xf_node *conv, const xf_tensor_view *b, xf_dn_node *cst,
                                xf_error *err)
{
    int64_t chans = g->values[conv->outputs[0]].shape.dims[1], nb = xf_rt_numel(b);
    const xf_tensor *own = xf_dn_input(conv, 2) >= 0 ? g->values[conv->inputs[2]].init : NULL;
    if (!cst->folded_b)
        cst->folded_b = malloc(sizeof(float) * (size_t)(chans > 0 ? chans : 1));
    if (!cst->folded_b)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    const float *add = b->data, *base = own ? (const float *)own->data : NULL;
    for (int64_t m = 0; m < chans; m++)
        cst->folded_b[m] = (base ? base[m] : 0.0f) + add[nb == 1 ? 0 : m];
    return XF_OK;
}

xf_status xf_dn_fold(xf_dn_ctx *c, const xf_graph *g, int q, const xf_tensor_view *in, const xf_tensor_view *out,
                     xf_dn_node *qst, xf_error *err)
{
    const xf_dn_fold_at *f = &c->folds[q];
    int hn = f->host;
    xf_dn_node *hst = c->states[hn];
    const xf_node *hnode = &g->nodes[hn];
    const xf_tensor_view *r = f->kind == XF_DN_FOLD_SUM ? &in[f->operand] : NULL;
    size_t out_bytes = xf_rt_bytes(&out[0]);
    /* the sum operand's own bytes the group may write (accumulates_into) */
    bool clear =
        hst && !(hst->sum_src != out[0].data && bytes_overlap(out[0].data, out_bytes, hst->sum_src, hst->sum_bytes)) &&
        !(r && r->data != out[0].data && bytes_overlap(out[0].data, out_bytes, r->data, xf_rt_bytes(r)));
    for (int j = 0; clear && j < hnode->n_inputs; j++) {
        const xf_tensor_view *w = &hst->views[j];
        clear = !(xf_rt_present(w) && bytes_overlap(out[0].data, out_bytes, w->data, xf_rt_bytes(w)));
    }
    /* the memory plan keeps them apart (fusion_groups); a plan made
     * without the groups would let the host clobber what it reads */
    if (!clear)
        return xf_error_set(err, XF_ERR_INVALID,
                            "backend cpu: node '%s' (%s) is folded into node '%s', but the memory plan gives its "
                            "output bytes the folded group still reads",
                            g->nodes[q].name ? g->nodes[q].name : "", xf_op_name(g->nodes[q].op),
                            hnode->name ? hnode->name : "");
    xf_dn_node_clear(hst);
    xf_status s = XF_OK;
    switch (f->kind) {
    case XF_DN_FOLD_STEP: break;
    case XF_DN_FOLD_POST: hst->posts[hst->n_posts++] = f->post; break;
    case XF_DN_FOLD_LINEAR: {
        xf_dn_post *last = &hst->posts[hst->n_posts - 1];
        last->beta = f->post.alpha * last->beta + f->post.beta;
        last->alpha *= f->post.alpha;
        break;
    }
    case XF_DN_FOLD_SUM:
        hst->posts[hst->n_posts++] = f->post;
        hst->sum_src = r->data;
        hst->sum_bytes = xf_rt_bytes(r);
        break;
    case XF_DN_FOLD_BIAS:
        if (hnode->op == XF_OP_CONV) {
            s = fold_conv_bias(g, hnode, &in[f->operand], hst, err);
            break;
        }
        hst->bias_data = in[f->operand].data;
        hst->bias_shape = in[f->operand].shape;
        break;
    case XF_DN_FOLD_BN: s = fold_bn(g, hnode, &g->nodes[q], hst, err); break;
    case XF_DN_FOLD_TABLE: hst->table = in[0].data; break;
    }
    hst->dst = out[0].data;
    hst->folded_in = q + 1;
    qst->folded = true;
    qst->host = hn;
    return s == XF_OK ? hst->handler->prepare(c, g, hnode, hst->views, hst->views + hnode->n_inputs, hst, err) : s;
}

bool xf_dn_last_build(const xf_dn_ctx *c, int node, const xf_dn_node *st)
{
    if (!c->folds || node >= c->n_nodes) /* dynamic mode folds nothing */
        return true;
    int last = c->folds[node].last;
    return last < 0 || st->folded_in == last + 1;
}

bool xf_dn_accumulates_into(const xf_dn_ctx *c, const xf_graph *g, int q, int *reader, int *input)
{
    int h = c->folds && q < c->n_nodes ? c->folds[q].host : -1;
    if (h < 0 || c->folds[h].last != q)
        return false;
    for (int j = h + 1; j <= q; j++)
        if (c->folds[j].host == h && c->folds[j].kind == XF_DN_FOLD_SUM) {
            *reader = j;
            *input = c->folds[j].operand;
            return true;
        }
    return false;
}
