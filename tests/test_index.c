/* The movement and indexing ops (Size, ...): cpu_ref against
 * hand-computed values, their shape rules (with the values they need
 * known or not, and for other sizes of a symbolic dim), and the errors for
 * operands and attributes that do not fit. */
#include "core_builders.h"
#include "kernel_case_util.h"
#include "xf_test_util.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static void release_inputs(node_case *c)
{
    for (int k = 0; k < c->n_in; k++)
        xf_tensor_release(c->in[k]);
    xf_tensor_release(c->a.value);
}

/* Shape inference of the case (every input an initializer unless fed)
 * gives output k this shape; ndim -1: not known. */
static void expect_inferred(node_case c, int k, int ndim, const int64_t *dims)
{
    xf_graph *g = case_graph(&c);
    xf_error e = {0};
    ck_assert_msg(xf_graph_infer_shapes(g, c.opset, &e) == XF_OK, "%s", e.msg);
    const xf_shape *got = &g->values[g->nodes[0].outputs[k]].shape;
    xf_shape want = ndim < 0 ? (xf_shape){.ndim = -1} : xf_shape_make(ndim, dims);
    char a[128], b[128];
    ck_assert_msg(xf_shape_equal(got, &want), "output %d has shape %s, want %s", k, xf_shape_str(got, a, sizeof a),
                  xf_shape_str(&want, b, sizeof b));
    xf_graph_free(g);
    release_inputs(&c);
}
#define UNKNOWN -1, NULL

static void canonicalize_ok(xf_graph *g, int64_t opset)
{
    xf_error e = {0};
    ck_assert_msg(xf_canonicalize(g, opset, xf_runtime_eval_node, NULL, &e) == XF_OK, "%s", e.msg);
}

/* ------------------------------------------------------------ Size */

/* The element count of any tensor, as an int64 scalar; the data is never
 * read (a fed input's too). */
START_TEST(size_counts_elements)
{
    EXPECT(run1(make_case(XF_OP_SIZE, 1, iota_f32(DIMS(2, 3, 4), 0))), XF_DT_INT64, SCALAR, 24);
    EXPECT(run1(make_case(XF_OP_SIZE, 1, BOOLS(DIMS(5), 1, 0, 1, 0, 1))), XF_DT_INT64, SCALAR, 5);
    EXPECT(run1(make_case(XF_OP_SIZE, 1, I64(SCALAR, 7))), XF_DT_INT64, SCALAR, 1);
    node_case c = make_case(XF_OP_SIZE, 1, iota_f32(DIMS(0, 3), 0));
    c.feed = 1;
    EXPECT(run1(c), XF_DT_INT64, SCALAR, 0);
    expect_inferred(make_case(XF_OP_SIZE, 1, iota_f32(DIMS(2, 3), 0)), 0, SCALAR);
}
END_TEST

/* x[n, 6] -> z = x + Reshape(Cast(Range(0, Size(x), 1)), Shape(x)): x
 * plus the element numbers. */
static xf_graph *numbered_graph(int64_t n)
{
    xf_graph *g = xf_graph_create("g");
    int x = input(g, "x", XF_DT_FLOAT, SHAPE(n, 6));
    int size = NODE(g, XF_OP_SIZE, x);
    int range = NODE(g, XF_OP_RANGE, scalar_i64(g, 0), out0(g, size), scalar_i64(g, 1));
    int cast = NODE(g, XF_OP_CAST, out0(g, range));
    attrs(g, cast)->to = XF_DT_FLOAT;
    int numbers = NODE(g, XF_OP_RESHAPE, out0(g, cast), out0(g, NODE(g, XF_OP_SHAPE, x)));
    int z = NODE(g, XF_OP_ADD, x, out0(g, numbers));
    xf_graph_add_output(g, out0(g, z));
    infer_ok(g, 13);
    return g;
}

/* Size of a static shape folds to a constant, as Shape does; where the
 * size is a symbolic dim's, what it feeds is computed again from the
 * graph as loaded, the Size reading the graph input by name, so that the
 * graph holds at other sizes. */
START_TEST(size_folds_and_follows_symbolic_dims)
{
    xf_graph *g = numbered_graph(1), *src = xf_graph_clone(g);
    xf_graph *at[2] = {numbered_graph(2), numbered_graph(3)};
    canonicalize_ok(g, 13);
    canonicalize_ok(at[0], 13);
    canonicalize_ok(at[1], 13);
    ck_assert_int_eq(g->n_nodes, 1); /* x + a constant */
    ck_assert_int_eq(g->nodes[0].op, XF_OP_ADD);
    const xf_tensor *numbers = g->values[g->nodes[0].inputs[1]].init;
    ck_assert_ptr_nonnull(numbers);
    ck_assert_int_eq(xf_tensor_numel(numbers), 6);
    ck_assert_double_eq(xf_tensor_get_f64(numbers, 5), 5);

    xf_names rest = {0};
    xf_error e = {0};
    int written = -1, done = -1;
    ck_assert_msg(xf_sizes_generalize(g, (const xf_graph *const *)at, 2, &rest, &written, &e) == XF_OK, "%s", e.msg);
    ck_assert_int_eq(rest.n, 1);
    ck_assert_msg(xf_sizes_recompute(g, src, &rest, &done, &e) == XF_OK, "%s", e.msg);
    ck_assert_int_eq(done, 1);
    validate_ok(g);
    int sizes = 0;
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].op == XF_OP_SIZE) {
            sizes++;
            ck_assert_int_eq(g->nodes[i].inputs[0], xf_graph_find_value(g, "x"));
        }
    ck_assert_int_eq(sizes, 1);

    /* at n = 4: 24 numbers */
    g->values[xf_graph_find_value(g, "x")].shape.dims[0] = 4;
    for (int v = 0; v < g->n_values; v++)
        if (g->values[v].producer >= 0)
            g->values[v].shape.ndim = -1;
    infer_ok(g, 13);
    canonicalize_ok(g, 13);
    expect_shape(g, g->outputs[0], SHAPE(4, 6));
    const xf_node *add = &g->nodes[g->values[g->outputs[0]].producer];
    numbers = g->values[add->inputs[1]].init;
    ck_assert_ptr_nonnull(numbers);
    ck_assert_int_eq(xf_tensor_numel(numbers), 24);
    for (int i = 0; i < 24; i++)
        ck_assert_double_eq(xf_tensor_get_f64(numbers, i), i);

    xf_names_free(&rest);
    for (int i = 0; i < 2; i++)
        xf_graph_free(at[i]);
    xf_graph_free(g);
    xf_graph_free(src);
}
END_TEST

/* A session evaluates a Size of a static shape when it is made, so that
 * shapes computed from it are known and the graph runs in static mode. */
START_TEST(size_makes_shapes_static)
{
    xf_graph *g = xf_graph_create("g");
    int x = input(g, "x", XF_DT_FLOAT, SHAPE(2, 3));
    int size = NODE(g, XF_OP_SIZE, x);
    int shape = NODE(g, XF_OP_UNSQUEEZE, out0(g, size), CONST_I64(g, 0));
    int y = NODE(g, XF_OP_RESHAPE, x, out0(g, shape));
    xf_graph_add_output(g, out0(g, y));
    xf_session *s;
    xf_error e = {0};
    ck_assert_msg(xf_session_create(g, 13, "cpu_ref", NULL, &s, &e) == XF_OK, "%s", e.msg);
    ck_assert(!xf_session_is_dynamic(s));
    xf_tensor *in = iota_f32(DIMS(2, 3), 1), *out = NULL;
    ck_assert_msg(xf_session_run(s, &in, &out, &e) == XF_OK, "%s", e.msg);
    EXPECT(out, XF_DT_FLOAT, DIMS(6), 1, 2, 3, 4, 5, 6);
    xf_tensor_release(in);
    xf_session_free(s);
    xf_graph_free(g);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("index");
    TCase *tc = tcase_create("size");
    tcase_add_test(tc, size_counts_elements);
    tcase_add_test(tc, size_folds_and_follows_symbolic_dims);
    tcase_add_test(tc, size_makes_shapes_static);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
