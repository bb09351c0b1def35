/* Built-in rules: only what the generator cannot express.
 *
 * The generator enumerates ONNX-level graphs over its op set on small
 * tensors: 2-D convolutions of fixed kernel shapes (1x1, 3x3, 1x3, 3x1),
 * stride 1 (and 2 without bias), same padding, with or without bias and a
 * fused Relu, and 2-D MatMul over activations.  The Conv families below
 * cover what that leaves out: 1- and 3-D convolutions, every other kernel, stride, padding
 * and dilation (every Conv attribute generalized), and the Sigmoid and
 * Tanh fusions:
 *
 *  - Conv + activation -> Conv with a fused activation.  The fused
 *    activation (attrs.activation) is not an ONNX operator but a statement
 *    about how the runtime executes a Conv (cuDNN ConvBiasActivation,
 *    oneDNN post-ops): one kernel instead of two, which only the cost model
 *    can value; as functions the two forms are the same.  With and without
 *    bias, for every activation the runtime fuses.  The exporter writes a
 *    fused Conv back as Conv + activation, so written models stay standard
 *    ONNX.
 *  - Two Convs with bias reading the same input with equal attributes ->
 *    one Conv over the concatenated kernels and biases, split back into the
 *    two results (TASO's convolution merging, for the biased Convs that
 *    BatchNormalization folding leaves in nearly every CNN).  The generator
 *    finds this for its own kernel shapes, with and without bias.
 *  - Two MatMuls reading the same input x by 2-D weights, each alone or
 *    followed by the Add of a 1-D bias -> one MatMul over the concatenated
 *    weights (plus the concatenated biases), split back (TASO's matmul
 *    merging: a transformer's Q/K/V projections, an RNN's gates).  The
 *    generator's MatMul is 2-D over activations only, so it finds this
 *    just for 2-D x, in the splitting direction, without bias.
 *
 * BatchNormalization folding, the other fusion the generator cannot find
 * (it needs the BN's constants), is done by canonicalization before the
 * search. */
#include "xf_optimizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    xf_activation act;
    xf_op op;
    const char *name;
} fusable[] = {
    {XF_ACT_RELU, XF_OP_RELU, "relu"},
    {XF_ACT_SIGMOID, XF_OP_SIGMOID, "sigmoid"},
    {XF_ACT_TANH, XF_OP_TANH, "tanh"},
};
#define N_FUSABLE ((int)(sizeof fusable / sizeof fusable[0]))

static int add_input(xf_graph *g, const char *name, int rank, int64_t d0, int64_t d1, int64_t spatial_dim)
{
    xf_shape s = {.ndim = rank, .dims = {d0, d1}};
    for (int d = 2; d < rank; d++)
        s.dims[d] = spatial_dim;
    return xf_graph_add_input(g, name, XF_DT_FLOAT, &s);
}

/* A node of op with one output (shape left to inference); its index. */
static int add_op(xf_graph *g, xf_op op, int n_in, const int *in)
{
    int out = xf_graph_add_value(g, NULL, XF_DT_UNDEFINED, NULL);
    return out < 0 ? -1 : xf_graph_add_node(g, op, NULL, n_in, in, 1, &out);
}

/* A Conv of the rule's own graphs: 3-wide kernel, same padding. */
static int add_conv(xf_graph *g, int spatial, int n_in, const int *in, xf_activation act)
{
    int c = add_op(g, XF_OP_CONV, n_in, in);
    if (c < 0)
        return -1;
    xf_attrs *a = &g->nodes[c].attrs;
    a->n_spatial = spatial;
    for (int d = 0; d < spatial; d++) {
        a->kernel[d] = 3;
        a->pads[d] = a->pads[spatial + d] = 1;
    }
    a->activation = act;
    return c;
}

static int add_concat(xf_graph *g, int a, int b, int64_t axis)
{
    int n = add_op(g, XF_OP_CONCAT, 2, (int[]){a, b});
    if (n >= 0)
        g->nodes[n].attrs.axis = axis;
    return n;
}

static bool add_binding(xf_rule *r, bool replacement, int node, xf_attr_field f, int index, xf_expr e)
{
    xf_binding *b = realloc(r->bindings, sizeof *b * (size_t)(r->n_bindings + 1));
    if (!b)
        return false;
    r->bindings = b;
    b[r->n_bindings++] = (xf_binding){replacement, node, f, index, e};
    return true;
}

/* A new parameter for field f[index], bound by the pattern's Convs (the
 * first binds it, the others must agree) and given to the replacement's. */
static bool add_param(xf_rule *r, xf_attr_field f, int index, const int *pattern_convs, int n_pattern,
                      int replacement_conv)
{
    char name[32];
    snprintf(name, sizeof name, "%s%d", xf_attr_field_name(f), index);
    int p = r->n_params;
    char **names = realloc(r->param_names, sizeof *names * (size_t)(p + 1));
    if (!names)
        return false;
    r->param_names = names;
    if (!(names[p] = strdup(name)))
        return false;
    r->n_params = p + 1;
    for (int i = 0; i < n_pattern; i++)
        if (!add_binding(r, false, pattern_convs[i], f, index, xf_expr_param(p)))
            return false;
    return add_binding(r, true, replacement_conv, f, index, xf_expr_param(p));
}

/* Generalizes the Conv attributes: kernel, stride, dilation and pads per
 * spatial dim, group when with_group (else the pattern's group of 1 must
 * match), and (when with_activation) the fused activation. */
static bool generalize_conv(xf_rule *r, int spatial, const int *pattern_convs, int n_pattern, int replacement_conv,
                            bool with_group, bool with_activation)
{
    bool ok = true;
    for (int d = 0; ok && d < spatial; d++)
        ok = add_param(r, XF_AF_KERNEL, d, pattern_convs, n_pattern, replacement_conv) &&
             add_param(r, XF_AF_STRIDE, d, pattern_convs, n_pattern, replacement_conv) &&
             add_param(r, XF_AF_DILATION, d, pattern_convs, n_pattern, replacement_conv) &&
             add_param(r, XF_AF_PAD, d, pattern_convs, n_pattern, replacement_conv) &&
             add_param(r, XF_AF_PAD, spatial + d, pattern_convs, n_pattern, replacement_conv);
    if (ok && with_group)
        ok = add_param(r, XF_AF_GROUP, 0, pattern_convs, n_pattern, replacement_conv);
    if (ok && with_activation)
        ok = add_param(r, XF_AF_ACTIVATION, 0, pattern_convs, n_pattern, replacement_conv);
    return ok;
}

/* A rule with its two (empty) sides; finish() checks they were made. */
static xf_rule *rule_start(const char *name)
{
    xf_rule *r = xf_rule_create(name);
    if (r) {
        r->pattern = xf_graph_create("pattern");
        r->replacement = xf_graph_create("replacement");
    }
    return r;
}

/* Infers both sides' shapes, marks the rule built-in and validates it;
 * frees it on failure. */
static xf_rule *finish(xf_rule *r, bool ok, const char *why, xf_error *err)
{
    ok = ok && r->pattern && r->replacement && xf_graph_infer_shapes(r->pattern, 17, err) == XF_OK &&
         xf_graph_infer_shapes(r->replacement, 17, err) == XF_OK;
    r->proved = ok;
    r->provenance = ok ? strdup(why) : NULL;
    if (!ok || !r->provenance || xf_rule_validate(r, err) != XF_OK) {
        if (err && err->msg[0] == 0)
            xf_error_set(err, XF_ERR_NOMEM, "out of memory building rule %s", r->name);
        xf_rule_free(r);
        return NULL;
    }
    return r;
}

/* x, w[, b] -> Conv -> activation  =>  Conv with the activation fused */
static xf_rule *conv_act_rule(int spatial, bool bias, int which, xf_error *err)
{
    char name[64];
    snprintf(name, sizeof name, "builtin_conv%dd%s_%s", spatial, bias ? "_bias" : "", fusable[which].name);
    xf_rule *r = rule_start(name);
    if (!r)
        return NULL;
    bool ok = r->pattern && r->replacement;
    for (int side = 0; ok && side < 2; side++) {
        xf_graph *g = side ? r->replacement : r->pattern;
        int in[3] = {add_input(g, "x", 2 + spatial, 1, 4, 5), add_input(g, "w", 2 + spatial, 4, 4, 3),
                     bias ? add_input(g, "b", 1, 4, 0, 0) : -1};
        int c = add_conv(g, spatial, bias ? 3 : 2, in, side ? fusable[which].act : XF_ACT_NONE);
        ok = c >= 0;
        int out = ok ? g->nodes[c].outputs[0] : -1;
        if (ok && !side) {
            int y = xf_graph_add_value(g, NULL, XF_DT_UNDEFINED, NULL);
            ok = xf_graph_add_node(g, fusable[which].op, NULL, 1, &out, 1, &y) >= 0;
            out = y;
        }
        if (ok)
            xf_graph_add_output(g, out);
    }
    ok = ok && generalize_conv(r, spatial, (int[]){0}, 1, 0, true, false);
    return finish(r, ok, "built-in: activation fused into the Conv by the runtime", err);
}

/* Ends the replacement: Split(v) along axis into the two merged results,
 * which become the rule's outputs, each as wide as its part of the
 * concatenation (dimension `dim` of rule inputs part_a and part_b). */
static bool add_split_outputs(xf_rule *r, int v, int64_t axis, int part_a, int part_b, int dim)
{
    xf_graph *g = r->replacement;
    int outs[2] = {xf_graph_add_value(g, NULL, XF_DT_UNDEFINED, NULL),
                   xf_graph_add_value(g, NULL, XF_DT_UNDEFINED, NULL)};
    int split = outs[0] < 0 || outs[1] < 0 ? -1 : xf_graph_add_node(g, XF_OP_SPLIT, NULL, 1, &v, 2, outs);
    if (split < 0)
        return false;
    xf_attrs *a = &g->nodes[split].attrs;
    a->axis = axis;
    a->n_split = 2;
    a->split[0] = g->values[g->inputs[part_a]].shape.dims[dim];
    a->split[1] = g->values[g->inputs[part_b]].shape.dims[dim];
    xf_graph_add_output(g, outs[0]);
    xf_graph_add_output(g, outs[1]);
    return add_binding(r, true, split, XF_AF_SPLIT, 0, xf_expr_dim(part_a, dim)) &&
           add_binding(r, true, split, XF_AF_SPLIT, 1, xf_expr_dim(part_b, dim));
}

/* Conv(x, w1, b1), Conv(x, w2, b2)  =>  Split(Conv(x, [w1; w2], [b1; b2])) */
static xf_rule *merge_convs_rule(int spatial, xf_error *err)
{
    char name[64];
    snprintf(name, sizeof name, "builtin_merge_conv%dd_bias", spatial);
    xf_rule *r = rule_start(name);
    if (!r)
        return NULL;
    bool ok = r->pattern && r->replacement;
    for (int side = 0; ok && side < 2; side++) {
        xf_graph *g = side ? r->replacement : r->pattern;
        int x = add_input(g, "x", 2 + spatial, 1, 4, 5);
        int w1 = add_input(g, "w1", 2 + spatial, 3, 4, 3), b1 = add_input(g, "b1", 1, 3, 0, 0);
        int w2 = add_input(g, "w2", 2 + spatial, 2, 4, 3), b2 = add_input(g, "b2", 1, 2, 0, 0);
        if (!side) {
            int c1 = add_conv(g, spatial, 3, (int[]){x, w1, b1}, XF_ACT_NONE);
            int c2 = add_conv(g, spatial, 3, (int[]){x, w2, b2}, XF_ACT_NONE);
            ok = c1 >= 0 && c2 >= 0;
            if (ok) {
                xf_graph_add_output(g, g->nodes[c1].outputs[0]);
                xf_graph_add_output(g, g->nodes[c2].outputs[0]);
            }
            continue;
        }
        int cw = add_concat(g, w1, w2, 0), cb = add_concat(g, b1, b2, 0);
        int c = cw < 0 || cb < 0 ? -1
                                 : add_conv(g, spatial, 3, (int[]){x, g->nodes[cw].outputs[0], g->nodes[cb].outputs[0]},
                                            XF_ACT_NONE);
        /* The split sizes are the kernels' output channels (dimension 0 of
         * rule inputs 1 and 3). */
        ok = c >= 0 && add_split_outputs(r, g->nodes[c].outputs[0], 1, 1, 3, 0);
    }
    /* Node 2 of the replacement is the merged Conv.  Grouped Convs do not
     * merge this way: with g groups the concatenated kernel's groups would
     * mix the two Convs' channels (each group's outputs come from one
     * slice of the input), so the rule holds for a group of 1 only. */
    ok = ok && generalize_conv(r, spatial, (int[]){0, 1}, 2, 2, false, true);
    return finish(r, ok, "built-in: convolutions with bias sharing their input merged", err);
}

static bool add_equal_dims(xf_rule *r, int in_a, int dim_a, int in_b, int dim_b)
{
    xf_constraint *c = realloc(r->constraints, sizeof *c * (size_t)(r->n_constraints + 1));
    if (!c)
        return false;
    r->constraints = c;
    c[r->n_constraints++] = (xf_constraint){XF_CMP_EQ, xf_expr_dim(in_a, dim_a), xf_expr_dim(in_b, dim_b)};
    return true;
}

/* Where a MatMul's bias Add puts the bias: Add(y, b) or Add(b, y). */
typedef enum { MM_NO_BIAS, MM_BIAS_SECOND, MM_BIAS_FIRST } mm_bias;

/* y = MatMul(x, w), then Add of the bias b when there is one; its index. */
static int add_linear(xf_graph *g, int x, int w, int b, mm_bias bias)
{
    int m = add_op(g, XF_OP_MATMUL, 2, (int[]){x, w});
    if (m < 0 || bias == MM_NO_BIAS)
        return m;
    int y = g->nodes[m].outputs[0];
    return add_op(g, XF_OP_ADD, 2, bias == MM_BIAS_FIRST ? (int[]){b, y} : (int[]){y, b});
}

/* MatMul(x, w1) [+ b1], MatMul(x, w2) [+ b2]
 *   =>  Split(MatMul(x, [w1 w2]) [+ [b1 b2]]) along the last axis.
 * The generator's MatMul is 2-D and multiplies activations by activations,
 * so concatenating two weights is an activation op to it: the merged side
 * is the larger one and the library has this law only in the splitting
 * direction, without biases, and for 2-D inputs.  Here x has `rank` dims
 * (the [batch, seq, hidden] of a transformer's projections), w1 and w2 are
 * 2-D (a rule input matches only tensors of its rank, so a batched weight
 * is never taken for one), and the biases are 1-D, one entry per column. */
static xf_rule *merge_matmuls_rule(int rank, mm_bias bias, xf_error *err)
{
    static const char *suffix[] = {"", "_bias", "_bias_first"};
    char name[64];
    snprintf(name, sizeof name, "builtin_merge_matmul%dd%s", rank, suffix[bias]);
    xf_rule *r = rule_start(name);
    if (!r)
        return NULL;
    bool ok = r->pattern && r->replacement;
    bool biased = bias != MM_NO_BIAS;
    /* Rule inputs: x, w1, [b1,] w2[, b2]. */
    int in_w1 = 1, in_b1 = 2, in_w2 = biased ? 3 : 2, in_b2 = 4;
    for (int side = 0; ok && side < 2; side++) {
        xf_graph *g = side ? r->replacement : r->pattern;
        int x = rank == 2 ? add_input(g, "x", 2, 3, 4, 0) : add_input(g, "x", 3, 2, 3, 4);
        int w1 = add_input(g, "w1", 2, 4, 3, 0), b1 = biased ? add_input(g, "b1", 1, 3, 0, 0) : -1;
        int w2 = add_input(g, "w2", 2, 4, 2, 0), b2 = biased ? add_input(g, "b2", 1, 2, 0, 0) : -1;
        if (!side) {
            int y1 = add_linear(g, x, w1, b1, bias), y2 = add_linear(g, x, w2, b2, bias);
            ok = y1 >= 0 && y2 >= 0;
            if (ok) {
                xf_graph_add_output(g, g->nodes[y1].outputs[0]);
                xf_graph_add_output(g, g->nodes[y2].outputs[0]);
            }
            continue;
        }
        int cw = add_concat(g, w1, w2, 1), cb = biased ? add_concat(g, b1, b2, 0) : -1;
        int y = cw < 0 || (biased && cb < 0)
                    ? -1
                    : add_linear(g, x, g->nodes[cw].outputs[0], biased ? g->nodes[cb].outputs[0] : -1, bias);
        ok = y >= 0 && add_split_outputs(r, g->nodes[y].outputs[0], rank - 1, in_w1, in_w2, 1);
    }
    /* One bias entry per weight column: a one-entry bias broadcast over
     * several columns no longer lines up once concatenated (shape
     * inference rejects that too; the constraint says it). */
    if (biased)
        ok = ok && add_equal_dims(r, in_b1, 0, in_w1, 1) && add_equal_dims(r, in_b2, 0, in_w2, 1);
    return finish(r, ok, "built-in: matrix multiplications sharing their input merged", err);
}

xf_status xf_builtin_rules(xf_rule ***rules, int *n_rules, xf_error *err)
{
    int n = 3 * 2 * N_FUSABLE + 3 + 2 * 3;
    xf_rule **list = calloc((size_t)n, sizeof *list);
    *rules = NULL;
    *n_rules = 0;
    if (!list)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    int k = 0;
    for (int spatial = 1; spatial <= 3; spatial++) {
        for (int which = 0; which < N_FUSABLE; which++)
            for (int bias = 0; bias < 2; bias++) {
                if (err)
                    err->msg[0] = 0;
                if (!(list[k] = conv_act_rule(spatial, bias, which, err)))
                    goto fail;
                k++;
            }
        if (err)
            err->msg[0] = 0;
        if (!(list[k] = merge_convs_rule(spatial, err)))
            goto fail;
        k++;
    }
    for (int rank = 2; rank <= 3; rank++)
        for (int bias = MM_NO_BIAS; bias <= MM_BIAS_FIRST; bias++) {
            if (err)
                err->msg[0] = 0;
            if (!(list[k] = merge_matmuls_rule(rank, (mm_bias)bias, err)))
                goto fail;
            k++;
        }
    *rules = list;
    *n_rules = k;
    return XF_OK;
fail:
    for (int i = 0; i < k; i++)
        xf_rule_free(list[i]);
    free(list);
    return err ? err->status : XF_ERR_NOMEM;
}
