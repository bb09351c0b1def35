/* Element types of the outputs of If, Loop, Scan and SequenceMap, read from
 * their loaded subgraphs where value_info does not give them (ONNX's function
 * expansions, AffineGrid's among them, declare none for If's outputs).  The
 * nodes stay opaque: shapes are left to the run. */
#include "shape_infer_impl.h"

#include <string.h>

typedef enum flow_op { FLOW_OTHER, FLOW_IF, FLOW_LOOP, FLOW_SCAN, FLOW_SEQUENCE_MAP } flow_op;

static flow_op flow_of(const xf_opaque *o)
{
    if (o->domain && o->domain[0] && strcmp(o->domain, "ai.onnx") != 0)
        return FLOW_OTHER;
    static const struct {
        const char *name;
        flow_op op;
    } ops[] = {{"If", FLOW_IF}, {"Loop", FLOW_LOOP}, {"Scan", FLOW_SCAN}, {"SequenceMap", FLOW_SEQUENCE_MAP}};
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        if (strcmp(o->op_type, ops[i].name) == 0)
            return ops[i].op;
    return FLOW_OTHER;
}

/* The node input formal input i of the body binds to, or -1 (Loop's
 * iteration number and condition, which have fixed types). */
static int formal_source(const xf_infer_ctx *c, flow_op op, int i)
{
    const xf_node *n = c->node;
    int k = op == FLOW_LOOP ? i : op == FLOW_SCAN && c->opset < 9 ? i + 1 : i;
    if (op == FLOW_LOOP && i < 2)
        return -1;
    return k < n->opaque->n_own_inputs && k < n->n_inputs ? n->inputs[k] : -1;
}

/* Types the inputs of a copy of body b as the node binds them, infers what
 * it can (a node that fails leaves its outputs unknown) and gives the
 * node's untyped outputs the types of the body outputs they come from. */
static void type_from_body(xf_infer_ctx *c, flow_op op, const xf_opaque_body *b)
{
    const xf_node *n = c->node;
    xf_graph *body = xf_graph_clone(b->graph);
    if (!body)
        return;
    int n_own = n->opaque->n_own_inputs;
    for (int i = 0; i < body->n_inputs; i++) {
        xf_value *v = &body->values[body->inputs[i]];
        int src = i >= b->n_formal ? (n_own + i - b->n_formal < n->n_inputs ? n->inputs[n_own + i - b->n_formal] : -1)
                                   : formal_source(c, op, i);
        if (op == FLOW_LOOP && i < 2 && v->dtype == XF_DT_UNDEFINED)
            v->dtype = i == 0 ? XF_DT_INT64 : XF_DT_BOOL;
        if (src < 0)
            continue;
        const xf_value *bound = &c->g->values[src];
        if (bound->dtype != XF_DT_UNDEFINED && (i >= b->n_formal || v->dtype == XF_DT_UNDEFINED))
            v->dtype = bound->dtype;
        /* SequenceMap's body takes a sequence's entries; Scan's, slices */
        if (i >= b->n_formal || (op != FLOW_SEQUENCE_MAP && op != FLOW_SCAN))
            v->kind = bound->kind;
    }
    xf_error ignored = {0};
    for (int i = 0; i < body->n_nodes; i++)
        (void)xf_node_infer_shape(body, i, c->opset, NULL, &ignored);
    int first = op == FLOW_LOOP ? 1 : 0;
    for (int k = 0; k < n->n_outputs; k++) {
        int v = n->outputs[k], from = first + k;
        if (v < 0 || c->g->values[v].dtype != XF_DT_UNDEFINED || from >= body->n_outputs)
            continue;
        const xf_value *bv = &body->values[body->outputs[from]];
        c->g->values[v].dtype = bv->dtype;
        if (op == FLOW_SEQUENCE_MAP)
            c->g->values[v].kind = XF_VK_SEQUENCE;
        else if (op == FLOW_IF || (op == FLOW_LOOP && k < n->opaque->n_own_inputs - 2))
            c->g->values[v].kind = bv->kind;
    }
    xf_graph_free(body);
}

void xf_infer_flow_dtypes(xf_infer_ctx *c)
{
    const xf_node *n = c->node;
    if (!n->opaque || !n->opaque->n_bodies)
        return;
    flow_op op = flow_of(n->opaque);
    if (op == FLOW_OTHER)
        return;
    bool untyped = false;
    for (int k = 0; k < n->n_outputs; k++)
        untyped |= n->outputs[k] >= 0 && c->g->values[n->outputs[k]].dtype == XF_DT_UNDEFINED;
    if (!untyped)
        return;
    /* If: the then branch, then the else branch for what it left unknown */
    static const char *const attrs[] = {"then_branch", "else_branch", "body"};
    for (int a = op == FLOW_IF ? 0 : 2; a < (op == FLOW_IF ? 2 : 3); a++) {
        const xf_opaque_body *b = xf_opaque_find_body(n->opaque, attrs[a]);
        if (b)
            type_from_body(c, op, b);
    }
}
