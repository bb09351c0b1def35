/* Control flow: If and Loop nodes stay opaque (carried byte for byte) and
 * their subgraphs load as graphs, which sessions run on the host backends:
 * the branch a run-time condition picks, a loop's body per iteration with
 * its carried values and scan outputs, values of enclosing scopes bound
 * through nesting; and the errors for what cannot run. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto_util.h"
#include "xf_rt_internal.h"
#include "xf_runtime.h"
#include "xf_test_util.h"

#define NAMES(...) ((const char *[]){__VA_ARGS__, NULL})

static const int64_t d4[] = {4};
static const xf_shape v4 = {1, {4}};

/* y = If(sum(x) > 0, then: Relu(x) * w, else: Concat(x, x)) + 1, with w an
 * initializer of the outer graph that only the then-branch uses; the
 * branches' outputs differ in shape. */
static Onnx__ModelProto *if_model(void)
{
    static const float w[] = {1, 2, 3, 4}, zero = 0, one = 1;
    Onnx__GraphProto *g = mk_graph("if_model");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 1, d4, NULL));
    PUSH(g->n_initializer, g->initializer, mk_raw("w", XF_DT_FLOAT, 1, d4, w, sizeof w));
    PUSH(g->n_initializer, g->initializer, mk_raw("zero", XF_DT_FLOAT, 0, NULL, &zero, sizeof zero));
    PUSH(g->n_initializer, g->initializer, mk_raw("one", XF_DT_FLOAT, 0, NULL, &one, sizeof one));
    Onnx__NodeProto *sum = mk_node("ReduceSum", "sum", NAMES("x"), NAMES("s"));
    attr_int(sum, "keepdims", 0);
    PUSH(g->n_node, g->node, sum);
    PUSH(g->n_node, g->node, mk_node("Greater", "gt", NAMES("s", "zero"), NAMES("c")));

    Onnx__GraphProto *then_g = mk_graph("then");
    PUSH(then_g->n_node, then_g->node, mk_node("Relu", "t_relu", NAMES("x"), NAMES("r")));
    PUSH(then_g->n_node, then_g->node, mk_node("Mul", "t_mul", NAMES("r", "w"), NAMES("t_out")));
    PUSH(then_g->n_output, then_g->output, mk_vi("t_out", XF_DT_FLOAT, -1, NULL, NULL));
    Onnx__GraphProto *else_g = mk_graph("else");
    Onnx__NodeProto *cat = mk_node("Concat", "e_cat", NAMES("x", "x"), NAMES("e_out"));
    attr_int(cat, "axis", 0);
    PUSH(else_g->n_node, else_g->node, cat);
    PUSH(else_g->n_output, else_g->output, mk_vi("e_out", XF_DT_FLOAT, -1, NULL, NULL));

    Onnx__NodeProto *iff = mk_node("If", "branch", NAMES("c"), NAMES("b"));
    attr_graph(iff, "then_branch", then_g);
    attr_graph(iff, "else_branch", else_g);
    PUSH(g->n_node, g->node, iff);
    PUSH(g->n_node, g->node, mk_node("Add", "plus1", NAMES("b", "one"), NAMES("y")));
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, -1, NULL, NULL));
    return mk_model(g, 13);
}

/* Runs m (one float input, one float output) on backend with input x of
 * shape xs and checks that the output is want, of shape dims. */
static void assert_run(const xf_model *m, const char *backend, xf_shape xs, const float *x, int ndim,
                       const int64_t *dims, const float *want)
{
    xf_session *s;
    xf_error e;
    ck_assert_msg(xf_session_create(m->graph, xf_model_opset(m), backend, NULL, &s, &e) == XF_OK, "%s", e.msg);
    ck_assert(xf_session_is_dynamic(s));
    xf_tensor *in = xf_tensor_from_data(XF_DT_FLOAT, &xs, x), *out = NULL;
    ck_assert_msg(xf_session_run(s, &in, &out, &e) == XF_OK, "%s", e.msg);
    assert_values(out, ndim, dims, want);
    xf_tensor_release(out);
    xf_tensor_release(in);
    xf_session_free(s);
}

START_TEST(test_if_runs_the_chosen_branch)
{
    xf_model *m;
    xf_error e;
    ck_assert_msg(load_proto(if_model(), NULL, &m, &e) == XF_OK, "%s", e.msg);
    const xf_graph *g = m->graph;
    int n = find_node_op(g, XF_OP_OPAQUE);
    ck_assert_int_ge(n, 0);
    const xf_opaque *o = g->nodes[n].opaque;
    /* the node's own input, then the outer values its branches use */
    ck_assert_int_eq(o->n_own_inputs, 1);
    ck_assert_int_eq(g->nodes[n].n_inputs, 3);
    ck_assert_int_eq(o->n_bodies, 2);
    const xf_opaque_body *then_b = xf_opaque_find_body(o, "then_branch");
    ck_assert_ptr_nonnull(then_b);
    ck_assert_int_eq(then_b->n_formal, 0);
    ck_assert_int_eq(then_b->graph->n_inputs, 2);
    for (int k = 0; k < 2; k++)
        ck_assert_str_eq(then_b->graph->values[then_b->graph->inputs[k]].name,
                         g->values[g->nodes[n].inputs[1 + k]].name);

    static const float pos[] = {1, -2, 3, 4}, neg[] = {-1, -2, 3, -4};
    static const float want_then[] = {2, 1, 10, 17}, want_else[] = {0, -1, 4, -3, 0, -1, 4, -3};
    static const int64_t d8[] = {8};
    const char *backends[2];
    int nb = host_backends(backends);
    for (int b = 0; b < nb; b++) {
        assert_run(m, backends[b], v4, pos, 1, d4, want_then);
        assert_run(m, backends[b], v4, neg, 1, d8, want_else);
    }

    /* written back unchanged, and the reloaded model runs the same */
    xf_model *back = roundtrip(m);
    assert_run(back, "cpu_ref", v4, neg, 1, d8, want_else);
    xf_model_free(back);
    xf_model_free(m);
}
END_TEST

/* Loop(M, cond, acc0) with body (i, c, acc) -> (sum(acc + x*i) < limit,
 * acc + x*i, acc + x*i): x comes from the outer graph, the scan output
 * stacks each iteration's acc. */
static Onnx__ModelProto *loop_model(float limit)
{
    static const int64_t d3[] = {3};
    static const float acc0[] = {0, 0, 0};
    static const uint8_t yes = 1;
    Onnx__GraphProto *g = mk_graph("loop_model");
    PUSH(g->n_input, g->input, mk_vi("M", XF_DT_INT64, 0, NULL, NULL));
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 1, d3, NULL));
    PUSH(g->n_initializer, g->initializer, mk_raw("cond0", XF_DT_BOOL, 0, NULL, &yes, 1));
    PUSH(g->n_initializer, g->initializer, mk_raw("acc0", XF_DT_FLOAT, 1, d3, acc0, sizeof acc0));

    Onnx__GraphProto *body = mk_graph("body");
    PUSH(body->n_input, body->input, mk_vi("i", XF_DT_INT64, 0, NULL, NULL));
    PUSH(body->n_input, body->input, mk_vi("c_in", XF_DT_BOOL, 0, NULL, NULL));
    PUSH(body->n_input, body->input, mk_vi("acc_in", XF_DT_FLOAT, -1, NULL, NULL));
    PUSH(body->n_initializer, body->initializer, mk_raw("limit", XF_DT_FLOAT, 0, NULL, &limit, sizeof limit));
    Onnx__NodeProto *cast = mk_node("Cast", "b_cast", NAMES("i"), NAMES("fi"));
    attr_int(cast, "to", XF_DT_FLOAT);
    PUSH(body->n_node, body->node, cast);
    PUSH(body->n_node, body->node, mk_node("Mul", "b_mul", NAMES("x", "fi"), NAMES("xi")));
    PUSH(body->n_node, body->node, mk_node("Add", "b_add", NAMES("acc_in", "xi"), NAMES("acc_out")));
    Onnx__NodeProto *sum = mk_node("ReduceSum", "b_sum", NAMES("acc_out"), NAMES("tot"));
    attr_int(sum, "keepdims", 0);
    PUSH(body->n_node, body->node, sum);
    PUSH(body->n_node, body->node, mk_node("Less", "b_less", NAMES("tot", "limit"), NAMES("c_out")));
    PUSH(body->n_node, body->node, mk_node("Identity", "b_id", NAMES("acc_out"), NAMES("scan_out")));
    PUSH(body->n_output, body->output, mk_vi("c_out", XF_DT_BOOL, 0, NULL, NULL));
    PUSH(body->n_output, body->output, mk_vi("acc_out", XF_DT_FLOAT, -1, NULL, NULL));
    PUSH(body->n_output, body->output, mk_vi("scan_out", XF_DT_FLOAT, -1, NULL, NULL));

    Onnx__NodeProto *loop = mk_node("Loop", "loop", NAMES("M", "cond0", "acc0"), NAMES("acc", "scans"));
    attr_graph(loop, "body", body);
    PUSH(g->n_node, g->node, loop);
    PUSH(g->n_output, g->output, mk_vi("acc", XF_DT_FLOAT, -1, NULL, NULL));
    PUSH(g->n_output, g->output, mk_vi("scans", XF_DT_FLOAT, -1, NULL, NULL));
    return mk_model(g, 13);
}

static void run_loop(const xf_model *m, int64_t trips, int64_t want_iters)
{
    static const float x[] = {1, 2, 3};
    xf_session *s;
    xf_error e;
    ck_assert_msg(xf_session_create(m->graph, xf_model_opset(m), "cpu_ref", NULL, &s, &e) == XF_OK, "%s", e.msg);
    xf_tensor *in[2] = {xf_tensor_from_data(XF_DT_INT64, &(xf_shape){0}, &trips),
                        xf_tensor_from_data(XF_DT_FLOAT, &(xf_shape){1, {3}}, x)};
    xf_tensor *out[2];
    ck_assert_msg(xf_session_run(s, in, out, &e) == XF_OK, "%s", e.msg);
    /* after iteration k (from 0) acc = x * k(k+1)/2 */
    int64_t last = want_iters - 1;
    float tri = (float)(last * (last + 1) / 2);
    const float want_acc[] = {x[0] * tri, x[1] * tri, x[2] * tri};
    assert_values(out[0], 1, (const int64_t[]){3}, want_acc);
    ck_assert_int_eq(out[1]->shape.ndim, want_iters ? 2 : 1);
    ck_assert_int_eq(out[1]->shape.dims[0], want_iters);
    for (int64_t k = 0; k < want_iters; k++)
        for (int j = 0; j < 3; j++)
            ck_assert_float_eq(((const float *)out[1]->data)[k * 3 + j], x[j] * (float)(k * (k + 1) / 2));
    for (int k = 0; k < 2; k++) {
        xf_tensor_release(out[k]);
        xf_tensor_release(in[k]);
    }
    xf_session_free(s);
}

START_TEST(test_loop_carries_values_and_stacks_scans)
{
    xf_model *m;
    xf_error e;
    /* the condition stops it: sums 0, 6, 18, 36, 60, 90, 126 -> 7 iterations */
    ck_assert_msg(load_proto(loop_model(100), NULL, &m, &e) == XF_OK, "%s", e.msg);
    const xf_node *n = &m->graph->nodes[find_node_op(m->graph, XF_OP_OPAQUE)];
    ck_assert_int_eq(n->opaque->n_own_inputs, 3);
    ck_assert_int_eq(n->n_inputs, 4); /* + x */
    ck_assert_int_eq(xf_opaque_find_body(n->opaque, "body")->n_formal, 3);
    run_loop(m, 100, 7);
    run_loop(m, 3, 3); /* the trip count stops it */
    run_loop(m, 0, 0); /* no iteration: the initial values, an empty scan */
    xf_model_free(m);
}
END_TEST

/* An If inside a Loop's body whose branches use a value of the outermost
 * graph: the name passes through each level's inputs. */
START_TEST(test_nested_subgraphs_bind_outer_values)
{
    static const float w[] = {10, 20, 30, 40};
    static const int64_t three = 3;
    static const uint8_t yes = 1;
    Onnx__GraphProto *g = mk_graph("nested");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 1, d4, NULL));
    PUSH(g->n_initializer, g->initializer, mk_raw("w", XF_DT_FLOAT, 1, d4, w, sizeof w));
    PUSH(g->n_initializer, g->initializer, mk_raw("M", XF_DT_INT64, 0, NULL, &three, sizeof three));
    PUSH(g->n_initializer, g->initializer, mk_raw("yes", XF_DT_BOOL, 0, NULL, &yes, 1));

    Onnx__GraphProto *then_g = mk_graph("then"), *else_g = mk_graph("else");
    PUSH(then_g->n_node, then_g->node, mk_node("Add", "t", NAMES("v_in", "w"), NAMES("t_out")));
    PUSH(then_g->n_output, then_g->output, mk_vi("t_out", XF_DT_FLOAT, -1, NULL, NULL));
    PUSH(else_g->n_node, else_g->node, mk_node("Sub", "e", NAMES("v_in", "x"), NAMES("e_out")));
    PUSH(else_g->n_output, else_g->output, mk_vi("e_out", XF_DT_FLOAT, -1, NULL, NULL));

    /* body(i, c, v): v + w when i is even, else v - x */
    static const int64_t two = 2, zero = 0;
    Onnx__GraphProto *body = mk_graph("body");
    PUSH(body->n_input, body->input, mk_vi("i", XF_DT_INT64, 0, NULL, NULL));
    PUSH(body->n_input, body->input, mk_vi("c", XF_DT_BOOL, 0, NULL, NULL));
    PUSH(body->n_input, body->input, mk_vi("v_in", XF_DT_FLOAT, -1, NULL, NULL));
    PUSH(body->n_initializer, body->initializer, mk_raw("two", XF_DT_INT64, 0, NULL, &two, sizeof two));
    PUSH(body->n_initializer, body->initializer, mk_raw("zero", XF_DT_INT64, 0, NULL, &zero, sizeof zero));
    PUSH(body->n_node, body->node, mk_node("Mod", "mod", NAMES("i", "two"), NAMES("r")));
    PUSH(body->n_node, body->node, mk_node("Equal", "even", NAMES("r", "zero"), NAMES("is_even")));
    Onnx__NodeProto *iff = mk_node("If", "inner_if", NAMES("is_even"), NAMES("v_out"));
    attr_graph(iff, "then_branch", then_g);
    attr_graph(iff, "else_branch", else_g);
    PUSH(body->n_node, body->node, iff);
    PUSH(body->n_node, body->node, mk_node("Identity", "c_id", NAMES("c"), NAMES("c_out")));
    PUSH(body->n_output, body->output, mk_vi("c_out", XF_DT_BOOL, 0, NULL, NULL));
    PUSH(body->n_output, body->output, mk_vi("v_out", XF_DT_FLOAT, -1, NULL, NULL));

    Onnx__NodeProto *loop = mk_node("Loop", "outer_loop", NAMES("M", "yes", "x"), NAMES("y"));
    attr_graph(loop, "body", body);
    PUSH(g->n_node, g->node, loop);
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, -1, NULL, NULL));
    xf_model *m;
    xf_error e;
    ck_assert_msg(load_proto(mk_model(g, 13), NULL, &m, &e) == XF_OK, "%s", e.msg);
    /* the loop sees w and x (x is also its initial value) */
    const xf_node *n = &m->graph->nodes[find_node_op(m->graph, XF_OP_OPAQUE)];
    ck_assert_int_eq(n->n_inputs, 5);

    static const float x[] = {1, 2, 3, 4};
    /* x + w - x + w = 2w + ... : i=0 +w, i=1 -x, i=2 +w */
    float want[4];
    for (int k = 0; k < 4; k++)
        want[k] = x[k] + w[k] - x[k] + w[k];
    assert_run(m, "cpu_ref", v4, x, 1, d4, want);
    xf_model_free(m);
}
END_TEST

/* What cannot run says so before anything runs, naming the node and the
 * subgraph; the model still loads and is written back. */
START_TEST(test_control_flow_errors)
{
    xf_error e;
    xf_model *m;
    xf_session *s;
    /* an op the backend lacks, inside a branch */
    Onnx__ModelProto *mp = if_model();
    Onnx__GraphProto *then_g = mp->graph->node[2]->attribute[0]->g;
    then_g->node[0]->op_type = "Frobnicate";
    then_g->node[0]->domain = "com.example";
    add_opset(mp, "com.example", 1);
    ck_assert_msg(load_proto(mp, NULL, &m, &e) == XF_OK, "%s", e.msg);
    ck_assert_int_ne(xf_session_create(m->graph, xf_model_opset(m), "cpu_ref", NULL, &s, &e), XF_OK);
    ck_assert_msg(strstr(e.msg, "node 'branch' (If), subgraph 'then_branch'") && strstr(e.msg, "Frobnicate"), "%s",
                  e.msg);
    xf_model_free(m);

    /* a branch that does not load (an initializer whose data does not
     * match its shape) */
    mp = if_model();
    Onnx__GraphProto *else_g = mp->graph->node[2]->attribute[1]->g;
    static const float three[] = {1, 2, 3};
    PUSH(else_g->n_initializer, else_g->initializer, mk_raw("bad", XF_DT_FLOAT, 1, d4, three, sizeof three));
    ck_assert_msg(load_proto(mp, NULL, &m, &e) == XF_OK, "%s", e.msg);
    ck_assert_int_eq(m->graph->nodes[find_node_op(m->graph, XF_OP_OPAQUE)].opaque->n_bodies, 0);
    ck_assert_int_ne(xf_session_create(m->graph, xf_model_opset(m), "cpu_ref", NULL, &s, &e), XF_OK);
    ck_assert_msg(strstr(e.msg, "did not load"), "%s", e.msg);
    xf_model_free(roundtrip(m));
    xf_model_free(m);

    /* a condition of more than one element: x > 0 instead of sum(x) > 0 */
    mp = if_model();
    mp->graph->node[1]->input[0] = "x";
    ck_assert_msg(load_proto(mp, NULL, &m, &e) == XF_OK, "%s", e.msg);
    ck_assert_msg(xf_session_create(m->graph, xf_model_opset(m), "cpu_ref", NULL, &s, &e) == XF_OK, "%s", e.msg);
    static const float pos[] = {1, -2, 3, 4};
    xf_tensor *x = xf_tensor_from_data(XF_DT_FLOAT, &(xf_shape){1, {4}}, pos), *y = NULL;
    ck_assert_int_ne(xf_session_run(s, &x, &y, &e), XF_OK);
    ck_assert_msg(strstr(e.msg, "node 'branch' (If): the condition must be one boolean"), "%s", e.msg);
    xf_tensor_release(x);
    xf_session_free(s);
    xf_model_free(m);
}
END_TEST

/* y = If(Shape(x)[0] > 1, then: Relu(x), else: x * 2) with x [N, 4] */
static Onnx__ModelProto *size_if_model(void)
{
    static const int64_t zero = 0, one = 1;
    static const float two = 2;
    Onnx__GraphProto *g = mk_graph("size_if");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 2, (const int64_t[]){-1, 4}, NAMES("N", NULL)));
    PUSH(g->n_initializer, g->initializer, mk_raw("i0", XF_DT_INT64, 0, NULL, &zero, sizeof zero));
    PUSH(g->n_initializer, g->initializer, mk_raw("one", XF_DT_INT64, 0, NULL, &one, sizeof one));
    PUSH(g->n_node, g->node, mk_node("Shape", "shape", NAMES("x"), NAMES("s")));
    Onnx__NodeProto *gather = mk_node("Gather", "first", NAMES("s", "i0"), NAMES("n"));
    attr_int(gather, "axis", 0);
    PUSH(g->n_node, g->node, gather);
    PUSH(g->n_node, g->node, mk_node("Greater", "gt", NAMES("n", "one"), NAMES("c")));
    Onnx__GraphProto *then_g = mk_graph("then"), *else_g = mk_graph("else");
    PUSH(then_g->n_node, then_g->node, mk_node("Relu", "t_relu", NAMES("x"), NAMES("t_out")));
    PUSH(then_g->n_output, then_g->output, mk_vi("t_out", XF_DT_FLOAT, -1, NULL, NULL));
    PUSH(else_g->n_initializer, else_g->initializer, mk_raw("two", XF_DT_FLOAT, 0, NULL, &two, sizeof two));
    PUSH(else_g->n_node, else_g->node, mk_node("Mul", "e_mul", NAMES("x", "two"), NAMES("e_out")));
    PUSH(else_g->n_output, else_g->output, mk_vi("e_out", XF_DT_FLOAT, -1, NULL, NULL));
    Onnx__NodeProto *iff = mk_node("If", "by_size", NAMES("c"), NAMES("y"));
    attr_graph(iff, "then_branch", then_g);
    attr_graph(iff, "else_branch", else_g);
    PUSH(g->n_node, g->node, iff);
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, 2, (const int64_t[]){-1, 4}, NAMES("N", NULL)));
    return mk_model(g, 13);
}

/* Canonicalization replaces an If whose condition folds by its branch
 * (which writes the graph output, under its name), and keeps it when told. */
START_TEST(test_constant_if_is_inlined)
{
    for (int n = 1; n <= 3; n += 2) {
        xf_load_options lo = {.n_input_shapes = 1,
                              .input_shapes = (xf_input_shape[]){{"x", {2, {n, 4}}}}};
        xf_model *m;
        xf_error e;
        ck_assert_msg(load_proto(size_if_model(), &lo, &m, &e) == XF_OK, "%s", e.msg);
        xf_graph *kept = xf_graph_clone(m->graph);
        xf_canon_stats st = {0};
        ck_assert_msg(xf_canonicalize(m->graph, xf_model_opset(m), xf_runtime_eval_node, &st, &e) == XF_OK, "%s",
                      e.msg);
        ck_assert_int_eq(st.inlined_branches, 1);
        const xf_graph *g = m->graph;
        ck_assert_int_eq(g->n_nodes, 1);
        ck_assert_int_eq(g->nodes[0].op, n > 1 ? XF_OP_RELU : XF_OP_MUL);
        ck_assert_int_eq(g->nodes[0].outputs[0], g->outputs[0]);
        ck_assert_str_eq(g->values[g->outputs[0]].name, "y");
        ck_assert_msg(xf_graph_validate(g, &e) == XF_OK, "%s", e.msg);

        xf_canon_options keep = {.n_keep_conditions = 1, .keep_conditions = NAMES("c")};
        xf_canon_stats st2 = {0};
        ck_assert_msg(xf_canonicalize_with(kept, xf_model_opset(m), xf_runtime_eval_node, &keep, &st2, &e) == XF_OK,
                      "%s", e.msg);
        ck_assert_int_eq(st2.inlined_branches, 0);
        ck_assert_int_ge(find_node_op(kept, XF_OP_OPAQUE), 0);
        xf_graph_free(kept);
        xf_model_free(m);
    }
}
END_TEST

/* xflowc keeps an If whose condition depends on a symbolic dim, with the
 * condition computed at run time, so that the written model keeps the dim;
 * at a size given with --input-shape the branch replaces it. */
START_TEST(test_xflowc_keeps_size_dependent_if)
{
    const char *dir = xf_test_tmpdir("control_flow_xflowc");
    write_model(size_if_model(), path_in(dir, "in.onnx"));
    char cmd[8600], *out = NULL;
    snprintf(cmd, sizeof cmd, "%s %s -o %s --check", xf_test_tool("xflowc"), path_in(dir, "in.onnx"),
             path_in(dir, "sym.onnx"));
    ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
    ck_assert_msg(strstr(out, "symbolic dims kept: 'x' dim 0 ('N')") && strstr(out, "1 constant computed at run time"),
                  "%s", out);
    free(out);
    xf_model *m;
    xf_error e;
    static const float x[] = {1, -2, 3, -4};
    static const float relu[] = {1, 0, 3, 0};
    /* at N = 1 the written model takes the else branch; at 2, the then branch */
    xf_load_options lo = {.n_input_shapes = 1, .input_shapes = (xf_input_shape[]){{"x", {2, {1, 4}}}}};
    ck_assert_msg(xf_model_load(path_in(dir, "sym.onnx"), &lo, &m, &e) == XF_OK, "%s", e.msg);
    ck_assert_int_ge(find_node_op(m->graph, XF_OP_OPAQUE), 0);
    assert_run(m, "cpu_ref", (xf_shape){2, {1, 4}}, x, 2, (const int64_t[]){1, 4}, (const float[]){2, -4, 6, -8});
    xf_model_free(m);
    static const float x2[] = {1, -2, 3, -4, 1, -2, 3, -4};
    lo.input_shapes = (xf_input_shape[]){{"x", {2, {2, 4}}}};
    ck_assert_msg(xf_model_load(path_in(dir, "sym.onnx"), &lo, &m, &e) == XF_OK, "%s", e.msg);
    xf_session *s;
    ck_assert_msg(xf_session_create(m->graph, xf_model_opset(m), "cpu_ref", NULL, &s, &e) == XF_OK, "%s", e.msg);
    xf_tensor *in = xf_tensor_from_data(XF_DT_FLOAT, &(xf_shape){2, {2, 4}}, x2), *y = NULL;
    ck_assert_msg(xf_session_run(s, &in, &y, &e) == XF_OK, "%s", e.msg);
    for (int i = 0; i < 8; i++)
        ck_assert_float_eq(((const float *)y->data)[i], relu[i % 4]);
    xf_tensor_release(y);
    xf_tensor_release(in);
    xf_session_free(s);
    xf_model_free(m);

    snprintf(cmd, sizeof cmd, "%s %s -o %s --check --input-shape x=2x4", xf_test_tool("xflowc"),
             path_in(dir, "in.onnx"), path_in(dir, "fixed.onnx"));
    ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
    ck_assert_msg(strstr(out, "1 If replaced by its constant branch"), "%s", out);
    free(out);
    ck_assert_msg(xf_model_load(path_in(dir, "fixed.onnx"), NULL, &m, &e) == XF_OK, "%s", e.msg);
    ck_assert_int_lt(find_node_op(m->graph, XF_OP_OPAQUE), 0);
    ck_assert_int_ge(find_node_op(m->graph, XF_OP_RELU), 0);
    xf_model_free(m);
}
END_TEST

/* Loop(M, true, s0) with body (i, c, s) -> (c, s + sum(Expand(x, [256, 3]))):
 * a body tensor of 3072 bytes, outer values of a few. */
static Onnx__ModelProto *expand_loop_model(void)
{
    static const int64_t d3[] = {3}, big[] = {256, 3}, d2[] = {2};
    static const float s0 = 0;
    static const uint8_t yes = 1;
    Onnx__GraphProto *g = mk_graph("expand_loop");
    PUSH(g->n_input, g->input, mk_vi("M", XF_DT_INT64, 0, NULL, NULL));
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 1, d3, NULL));
    PUSH(g->n_initializer, g->initializer, mk_raw("cond0", XF_DT_BOOL, 0, NULL, &yes, 1));
    PUSH(g->n_initializer, g->initializer, mk_raw("s0", XF_DT_FLOAT, 0, NULL, &s0, sizeof s0));
    Onnx__GraphProto *body = mk_graph("body");
    PUSH(body->n_input, body->input, mk_vi("i", XF_DT_INT64, 0, NULL, NULL));
    PUSH(body->n_input, body->input, mk_vi("c_in", XF_DT_BOOL, 0, NULL, NULL));
    PUSH(body->n_input, body->input, mk_vi("s_in", XF_DT_FLOAT, 0, NULL, NULL));
    PUSH(body->n_initializer, body->initializer, mk_raw("shape", XF_DT_INT64, 1, d2, big, sizeof big));
    PUSH(body->n_node, body->node, mk_node("Expand", "b_expand", NAMES("x", "shape"), NAMES("big")));
    Onnx__NodeProto *sum = mk_node("ReduceSum", "b_sum", NAMES("big"), NAMES("t"));
    attr_int(sum, "keepdims", 0);
    PUSH(body->n_node, body->node, sum);
    PUSH(body->n_node, body->node, mk_node("Add", "b_add", NAMES("s_in", "t"), NAMES("s_out")));
    PUSH(body->n_node, body->node, mk_node("Identity", "b_id", NAMES("c_in"), NAMES("c_out")));
    PUSH(body->n_output, body->output, mk_vi("c_out", XF_DT_BOOL, 0, NULL, NULL));
    PUSH(body->n_output, body->output, mk_vi("s_out", XF_DT_FLOAT, 0, NULL, NULL));
    Onnx__NodeProto *loop = mk_node("Loop", "loop", NAMES("M", "cond0", "s0"), NAMES("s"));
    attr_graph(loop, "body", body);
    PUSH(g->n_node, g->node, loop);
    PUSH(g->n_output, g->output, mk_vi("s", XF_DT_FLOAT, 0, NULL, NULL));
    return mk_model(g, 13);
}

/* A session's limit on one tensor's bytes holds inside a Loop's body: the
 * run that would make a larger tensor there fails naming it. */
START_TEST(test_tensor_limit_reaches_bodies)
{
    xf_model *m;
    xf_error e;
    ck_assert_msg(load_proto(expand_loop_model(), NULL, &m, &e) == XF_OK, "%s", e.msg);
    static const float x[] = {1, 2, 3};
    int64_t trips = 2;
    xf_tensor *in[2] = {xf_tensor_from_data(XF_DT_INT64, &(xf_shape){0}, &trips),
                        xf_tensor_from_data(XF_DT_FLOAT, &(xf_shape){1, {3}}, x)};
    for (int limited = 0; limited < 2; limited++) {
        xf_session_options opt = {.max_tensor_bytes = limited ? 2048 : 4096};
        xf_session *s;
        ck_assert_msg(xf_session_create(m->graph, xf_model_opset(m), "cpu_ref", &opt, &s, &e) == XF_OK, "%s",
                      e.msg);
        xf_tensor *out = NULL;
        xf_status st = xf_session_run(s, in, &out, &e);
        if (limited) {
            ck_assert_int_eq(st, XF_ERR_LIMIT);
            ck_assert_msg(strstr(e.msg, "'big' needs 3072 bytes, over the session's limit of 2048"), "%s", e.msg);
        } else {
            ck_assert_msg(st == XF_OK, "%s", e.msg);
            ck_assert_float_eq(*(const float *)out->data, 2 * 256 * 6.0f);
            xf_tensor_release(out);
        }
        xf_session_free(s);
    }
    xf_tensor_release(in[0]);
    xf_tensor_release(in[1]);
    xf_model_free(m);
}
END_TEST

/* A subgraph output declared without a type (as ONNX's function expansions
 * write them). */
static Onnx__ValueInfoProto *untyped(const char *name)
{
    Onnx__ValueInfoProto *vi = zalloc(sizeof *vi);
    onnx__value_info_proto__init(vi);
    vi->name = (char *)name;
    return vi;
}

/* If and Loop outputs that no value_info types take their subgraphs'
 * types, so that later subgraphs can use them:
 * (a, q) = If(sum(x) > 0, then: (Shape(x), x), else: (Shape(x ++ x), -x));
 * y = Loop(2, q, acc -> acc + acc); z = If(same, then: y + Cast(a), else: y). */
START_TEST(test_untyped_outputs_take_their_bodies_types)
{
    static const float zero = 0;
    static const int64_t two = 2;
    static const uint8_t yes = 1;
    Onnx__GraphProto *g = mk_graph("untyped");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 1, d4, NULL));
    PUSH(g->n_initializer, g->initializer, mk_raw("zero", XF_DT_FLOAT, 0, NULL, &zero, sizeof zero));
    PUSH(g->n_initializer, g->initializer, mk_raw("M", XF_DT_INT64, 0, NULL, &two, sizeof two));
    PUSH(g->n_initializer, g->initializer, mk_raw("yes", XF_DT_BOOL, 0, NULL, &yes, 1));
    Onnx__NodeProto *sum = mk_node("ReduceSum", "sum", NAMES("x"), NAMES("s"));
    attr_int(sum, "keepdims", 0);
    PUSH(g->n_node, g->node, sum);
    PUSH(g->n_node, g->node, mk_node("Greater", "gt", NAMES("s", "zero"), NAMES("c")));

    Onnx__GraphProto *t1 = mk_graph("then1"), *e1 = mk_graph("else1");
    PUSH(t1->n_node, t1->node, mk_node("Shape", "t_shape", NAMES("x"), NAMES("ta")));
    PUSH(t1->n_node, t1->node, mk_node("Identity", "t_id", NAMES("x"), NAMES("tq")));
    PUSH(t1->n_output, t1->output, untyped("ta"));
    PUSH(t1->n_output, t1->output, untyped("tq"));
    Onnx__NodeProto *cat = mk_node("Concat", "e_cat", NAMES("x", "x"), NAMES("xx"));
    attr_int(cat, "axis", 0);
    PUSH(e1->n_node, e1->node, cat);
    PUSH(e1->n_node, e1->node, mk_node("Shape", "e_shape", NAMES("xx"), NAMES("ea")));
    PUSH(e1->n_node, e1->node, mk_node("Neg", "e_neg", NAMES("x"), NAMES("eq")));
    PUSH(e1->n_output, e1->output, untyped("ea"));
    PUSH(e1->n_output, e1->output, untyped("eq"));
    Onnx__NodeProto *if1 = mk_node("If", "if1", NAMES("c"), NAMES("a", "q"));
    attr_graph(if1, "then_branch", t1);
    attr_graph(if1, "else_branch", e1);
    PUSH(g->n_node, g->node, if1);

    Onnx__GraphProto *body = mk_graph("body");
    PUSH(body->n_input, body->input, mk_vi("i", XF_DT_INT64, 0, NULL, NULL));
    PUSH(body->n_input, body->input, mk_vi("cond", XF_DT_BOOL, 0, NULL, NULL));
    PUSH(body->n_input, body->input, untyped("acc"));
    PUSH(body->n_node, body->node, mk_node("Identity", "b_cond", NAMES("cond"), NAMES("cond_out")));
    PUSH(body->n_node, body->node, mk_node("Add", "b_add", NAMES("acc", "acc"), NAMES("acc_out")));
    PUSH(body->n_output, body->output, untyped("cond_out"));
    PUSH(body->n_output, body->output, untyped("acc_out"));
    Onnx__NodeProto *loop = mk_node("Loop", "loop", NAMES("M", "yes", "q"), NAMES("y"));
    attr_graph(loop, "body", body);
    PUSH(g->n_node, g->node, loop);

    Onnx__GraphProto *t2 = mk_graph("then2"), *e2 = mk_graph("else2");
    Onnx__NodeProto *cast = mk_node("Cast", "t_cast", NAMES("a"), NAMES("af"));
    attr_int(cast, "to", XF_DT_FLOAT);
    PUSH(t2->n_node, t2->node, cast);
    PUSH(t2->n_node, t2->node, mk_node("Add", "t_add", NAMES("y", "af"), NAMES("tz")));
    PUSH(t2->n_output, t2->output, untyped("tz"));
    PUSH(e2->n_node, e2->node, mk_node("Identity", "e_id", NAMES("y"), NAMES("ez")));
    PUSH(e2->n_output, e2->output, untyped("ez"));
    Onnx__NodeProto *if2 = mk_node("If", "if2", NAMES("c"), NAMES("z"));
    attr_graph(if2, "then_branch", t2);
    attr_graph(if2, "else_branch", e2);
    PUSH(g->n_node, g->node, if2);
    PUSH(g->n_output, g->output, mk_vi("z", XF_DT_FLOAT, -1, NULL, NULL));

    xf_model *m;
    xf_error e;
    ck_assert_msg(load_proto(mk_model(g, 13), NULL, &m, &e) == XF_OK, "%s", e.msg);
    const char *names[] = {"a", "q", "y"};
    const xf_dtype want_dt[] = {XF_DT_INT64, XF_DT_FLOAT, XF_DT_FLOAT};
    for (int k = 0; k < 3; k++) {
        int v = xf_graph_find_value(m->graph, names[k]);
        ck_assert_int_ge(v, 0);
        ck_assert_msg(m->graph->values[v].dtype == want_dt[k], "'%s' is %s", names[k],
                      xf_dtype_name(m->graph->values[v].dtype));
    }
    static const float pos[] = {1, -2, 3, 4}, neg[] = {-1, -2, 3, -4};
    float want_pos[4], want_neg[4];
    for (int k = 0; k < 4; k++)
        want_pos[k] = 4 * pos[k] + 4, want_neg[k] = -4 * neg[k];
    const char *backends[2];
    int nb = host_backends(backends);
    for (int b = 0; b < nb; b++) {
        assert_run(m, backends[b], v4, pos, 1, d4, want_pos);
        assert_run(m, backends[b], v4, neg, 1, d4, want_neg);
    }
    xf_model_free(m);
}
END_TEST

/* Sessions made inside a session (subgraphs, Gradient's part) are dynamic
 * and keep its limit on a tensor's bytes, its direct_convolutions and its
 * fixed_kernels (the
 * limit's effect: test_tensor_limit_reaches_bodies; the cpu backend runs
 * no Winograd kernel in dynamic mode, so that choice shows on cuda's
 * algorithms only). */
START_TEST(test_inherited_options)
{
    xf_session_options outer = {
        .max_tensor_bytes = 4096, .direct_convolutions = true, .as_given = true, .fixed_kernels = true};
    xf_session_options in = xf_rt_inherited_options(&outer);
    ck_assert(in.force_dynamic && !in.as_given && in.direct_convolutions && in.fixed_kernels);
    ck_assert_uint_eq(in.max_tensor_bytes, 4096);
    outer.direct_convolutions = false;
    ck_assert(!xf_rt_inherited_options(&outer).direct_convolutions);
    outer.fixed_kernels = false;
    ck_assert(!xf_rt_inherited_options(&outer).fixed_kernels);
    in = xf_rt_inherited_options(NULL);
    ck_assert(in.force_dynamic && !in.as_given && !in.direct_convolutions && !in.fixed_kernels &&
              in.max_tensor_bytes == 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("control_flow");
    TCase *tc = tcase_create("if_loop");
    tcase_add_checked_fixture(tc, NULL, free_allocs);
    tcase_add_test(tc, test_if_runs_the_chosen_branch);
    tcase_add_test(tc, test_loop_carries_values_and_stacks_scans);
    tcase_add_test(tc, test_nested_subgraphs_bind_outer_values);
    tcase_add_test(tc, test_control_flow_errors);
    tcase_add_test(tc, test_constant_if_is_inlined);
    tcase_add_test(tc, test_xflowc_keeps_size_dependent_if);
    tcase_add_test(tc, test_tensor_limit_reaches_bodies);
    tcase_add_test(tc, test_inherited_options);
    tcase_add_test(tc, test_untyped_outputs_take_their_bodies_types);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
