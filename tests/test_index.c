/* The movement and indexing ops (Size, Trilu, Tile, DepthToSpace,
 * SpaceToDepth, EyeLike, ReverseSequence, OneHot, Compress, Einsum, Det,
 * Upsample, Resize, Unique, Scatter, TopK's selection):
 * cpu_ref against
 * hand-computed values, their shape rules (with the values they need
 * known or not, and for other sizes of a symbolic dim), and the errors for
 * operands and attributes that do not fit. */
#include "core_builders.h"
#include "kernel_case_util.h"
#include "xf_test_util.h"

#include <check.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


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
    release_case(&c);
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

/* ------------------------------------------------------------ Trilu */

static node_case trilu_case(xf_tensor *x, xf_tensor *k, bool lower)
{
    node_case c = make_case(XF_OP_TRILU, k ? 2 : 1, x, k);
    c.opset = 14;
    c.a.trilu_lower = lower;
    return c;
}

/* Upper keeps j - i >= k, lower j - i <= k, in every matrix of the last
 * two dims; k defaults to 0 and may be fed at run time. */
START_TEST(trilu_triangles)
{
    EXPECT(run1(trilu_case(iota_f32(DIMS(3, 4), 0), NULL, false)), XF_DT_FLOAT, DIMS(3, 4), 0, 1, 2, 3, 0, 5, 6, 7, 0,
           0, 10, 11);
    node_case c = trilu_case(iota_f32(DIMS(3, 4), 0), I64(SCALAR, -1), true);
    c.feed = 2;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(3, 4), 0, 0, 0, 0, 4, 0, 0, 0, 8, 9, 0, 0);
    EXPECT(run1(trilu_case(I64(DIMS(2, 2, 2), 1, 2, 3, 4, 5, 6, 7, 8), I64(SCALAR, 1), false)), XF_DT_INT64,
           DIMS(2, 2, 2), 0, 2, 0, 0, 0, 6, 0, 0);
    EXPECT(run1(trilu_case(I32(DIMS(2, 3), 1, 2, 3, 4, 5, 6), I64(DIMS(1), 5), false)), XF_DT_INT32, DIMS(2, 3), 0, 0,
           0, 0, 0, 0);
    EXPECT(run1(trilu_case(BOOLS(DIMS(2, 2), 1, 1, 1, 1), I64(SCALAR, INT64_MIN), true)), XF_DT_BOOL, DIMS(2, 2), 0, 0,
           0, 0);
    EXPECT(run1(trilu_case(iota_f32(DIMS(0, 3), 0), NULL, true)), XF_DT_FLOAT, DIMS(0, 3), 0);
}
END_TEST

START_TEST(trilu_errors)
{
    expect_infer_error(trilu_case(iota_f32(DIMS(4), 0), NULL, false), "input must have rank 2 or more, got 4");
    expect_infer_error(trilu_case(iota_f32(DIMS(2, 2), 0), I64(DIMS(2), 0, 1), false), "k must be a scalar");
    expect_infer_error(trilu_case(iota_f32(DIMS(2, 2), 0), I32(SCALAR, 0), false), "input 1 must be INT64");
}
END_TEST

/* ------------------------------------------------------------ Tile */

static node_case tile_case(xf_tensor *x, xf_tensor *repeats)
{
    node_case c = make_case(XF_OP_TILE, 2, x, repeats);
    c.opset = 13;
    return c;
}

/* Each dim is repeated as often as repeats says (0 empties it); repeats
 * fed at run time leave the shape to each run. */
START_TEST(tile_repeats)
{
    EXPECT(run1(tile_case(iota_f32(DIMS(2, 2), 1), I64(DIMS(2), 1, 2))), XF_DT_FLOAT, DIMS(2, 4), 1, 2, 1, 2, 3, 4, 3,
           4);
    EXPECT(run1(tile_case(I32(DIMS(2, 2), 1, 2, 3, 4), I64(DIMS(2), 2, 1))), XF_DT_INT32, DIMS(4, 2), 1, 2, 3, 4, 1, 2,
           3, 4);
    EXPECT(run1(tile_case(BOOLS(DIMS(1, 2), 1, 0), I64(DIMS(2), 2, 2))), XF_DT_BOOL, DIMS(2, 4), 1, 0, 1, 0, 1, 0, 1,
           0);
    EXPECT(run1(tile_case(iota_f32(DIMS(2, 3), 0), I64(DIMS(2), 0, 3))), XF_DT_FLOAT, DIMS(0, 9), 0);
    EXPECT(run1(tile_case(I64(SCALAR, 7), I64(DIMS(0), 0))), XF_DT_INT64, SCALAR, 7);
    /* gathering rows of nothing: an empty output (which has no buffer) */
    EXPECT(run1(make_case(XF_OP_GATHER, 2, iota_f32(DIMS(3, 0), 0), I64(DIMS(2), 0, 2))), XF_DT_FLOAT, DIMS(2, 0), 0);
    expect_inferred(tile_case(iota_f32(DIMS(2, 3, 1), 0), I64(DIMS(3), 2, 1, 4)), 0, DIMS(4, 3, 4));
    node_case c = tile_case(iota_f32(DIMS(3), 0), I64(DIMS(1), 2));
    c.feed = 2;
    expect_inferred(c, 0, UNKNOWN);
    c = tile_case(iota_f32(DIMS(3), 0), I64(DIMS(1), 2));
    c.feed = 2;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(6), 0, 1, 2, 0, 1, 2);
}
END_TEST

START_TEST(tile_errors)
{
    expect_infer_error(tile_case(iota_f32(DIMS(2, 2), 0), I64(DIMS(1), 2)),
                       "repeats must be a 1-D tensor of 2 entries (the input's rank), got shape 1");
    expect_infer_error(tile_case(iota_f32(DIMS(2, 2), 0), I64(DIMS(2), 2, -1)), "repeats [2,-1] has a negative entry");
    expect_infer_error(tile_case(iota_f32(DIMS(2), 0), I32(DIMS(1), 2)), "input 1 must be INT64");
    expect_infer_status(tile_case(iota_f32(DIMS(2), 0), I64(DIMS(1), INT64_MAX)), XF_ERR_LIMIT, "overflows");
}
END_TEST

/* ------------------------------------------------------------ DepthToSpace, SpaceToDepth */

static node_case depth_case(xf_op op, xf_tensor *x, int64_t blocksize, bool crd)
{
    node_case c = make_case(op, 1, x);
    c.opset = 13;
    c.a.block_size = blocksize;
    c.a.depth_crd = crd;
    return c;
}

/* DCR takes output channel c of block pixel (y, x) from input channel
 * (2y + x) * C' + c, CRD from 4c + 2y + x; SpaceToDepth undoes DCR. */
START_TEST(depth_to_space_modes)
{
    EXPECT(run1(depth_case(XF_OP_DEPTH_TO_SPACE, iota_f32(DIMS(1, 8, 1, 1), 0), 2, false)), XF_DT_FLOAT,
           DIMS(1, 2, 2, 2), 0, 2, 4, 6, 1, 3, 5, 7);
    EXPECT(run1(depth_case(XF_OP_DEPTH_TO_SPACE, iota_f32(DIMS(1, 8, 1, 1), 0), 2, true)), XF_DT_FLOAT,
           DIMS(1, 2, 2, 2), 0, 1, 2, 3, 4, 5, 6, 7);
    /* channel c, pixel w holds 2c + w: each input pixel becomes a 2x2 block */
    EXPECT(run1(depth_case(XF_OP_DEPTH_TO_SPACE, iota_f32(DIMS(1, 4, 1, 2), 0), 2, false)), XF_DT_FLOAT,
           DIMS(1, 1, 2, 4), 0, 2, 1, 3, 4, 6, 5, 7);
    EXPECT(run1(depth_case(XF_OP_SPACE_TO_DEPTH, F32(DIMS(1, 1, 2, 4), 0, 2, 1, 3, 4, 6, 5, 7), 2, false)), XF_DT_FLOAT,
           DIMS(1, 4, 1, 2), 0, 1, 2, 3, 4, 5, 6, 7);
    /* two images, two channels, int64 */
    EXPECT(run1(depth_case(XF_OP_SPACE_TO_DEPTH,
                           I64(DIMS(2, 2, 2, 2), 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), 2, false)),
           XF_DT_INT64, DIMS(2, 8, 1, 1), 0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15);
    expect_inferred(depth_case(XF_OP_DEPTH_TO_SPACE, iota_f32(DIMS(2, 18, 2, 5), 0), 3, true), 0, DIMS(2, 2, 6, 15));
}
END_TEST

START_TEST(depth_space_errors)
{
    expect_infer_error(depth_case(XF_OP_DEPTH_TO_SPACE, iota_f32(DIMS(1, 4, 1, 1), 0), 0, false),
                       "blocksize 0 is not a positive block size");
    expect_infer_error(depth_case(XF_OP_DEPTH_TO_SPACE, iota_f32(DIMS(4, 1, 1), 0), 2, false),
                       "input must have shape [N, C, H, W], got 4x1x1");
    expect_infer_error(depth_case(XF_OP_DEPTH_TO_SPACE, iota_f32(DIMS(1, 6, 1, 1), 0), 2, false),
                       "6 channels are not a multiple of blocksize^2 = 4");
    expect_infer_error(depth_case(XF_OP_SPACE_TO_DEPTH, iota_f32(DIMS(1, 1, 3, 4), 0), 2, false),
                       "height 3 and width 4 must be multiples of blocksize 2");
}
END_TEST

/* ------------------------------------------------------------ EyeLike */

static node_case eye_case(xf_tensor *x, int64_t k, xf_dtype dtype)
{
    node_case c = make_case(XF_OP_EYE_LIKE, 1, x);
    c.opset = 9;
    c.a.eye_k = k;
    c.a.to = dtype;
    return c;
}

/* Ones on diagonal k, of dtype or the input's type; the input's values
 * do not matter. */
START_TEST(eye_like_diagonals)
{
    EXPECT(run1(eye_case(I32(DIMS(3, 4), 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5), 0, 0)), XF_DT_INT32, DIMS(3, 4), 1, 0, 0,
           0, 0, 1, 0, 0, 0, 0, 1, 0);
    EXPECT(run1(eye_case(iota_f32(DIMS(3, 4), 0), 1, XF_DT_DOUBLE)), XF_DT_DOUBLE, DIMS(3, 4), 0, 1, 0, 0, 0, 0, 1, 0,
           0, 0, 0, 1);
    EXPECT(run1(eye_case(iota_f32(DIMS(3, 2), 0), -2, XF_DT_BOOL)), XF_DT_BOOL, DIMS(3, 2), 0, 0, 0, 0, 1, 0);
    EXPECT(run1(eye_case(iota_f32(DIMS(2, 2), 0), INT64_MAX, 0)), XF_DT_FLOAT, DIMS(2, 2), 0, 0, 0, 0);
    expect_infer_error(eye_case(iota_f32(DIMS(2, 2, 2), 0), 0, 0), "input must be 2-D, got 2x2x2");
    expect_infer_error(eye_case(iota_f32(DIMS(2, 2), 0), 0, XF_DT_STRING), "dtype 8 is not a type EyeLike makes");
}
END_TEST

/* ------------------------------------------------------------ ReverseSequence */

static node_case reverse_case(xf_tensor *x, xf_tensor *lens, int64_t batch_axis, int64_t time_axis)
{
    node_case c = make_case(XF_OP_REVERSE_SEQUENCE, 2, x, lens);
    c.opset = 10;
    c.a.axes[0] = batch_axis;
    c.a.axes[1] = time_axis;
    return c;
}

/* ONNX's two examples, and a rank-3 input whose inner dim moves along. */
START_TEST(reverse_sequence_lengths)
{
    EXPECT(run1(reverse_case(F32(DIMS(4, 4), 0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15),
                             I64(DIMS(4), 4, 3, 2, 1), 1, 0)),
           XF_DT_FLOAT, DIMS(4, 4), 3, 6, 9, 12, 2, 5, 8, 13, 1, 4, 10, 14, 0, 7, 11, 15);
    node_case c = reverse_case(iota_f32(DIMS(4, 4), 0), I64(DIMS(4), 1, 2, 3, 4), 0, 1);
    c.feed = 2;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(4, 4), 0, 1, 2, 3, 5, 4, 6, 7, 10, 9, 8, 11, 15, 14, 13, 12);
    EXPECT(run1(reverse_case(I32(DIMS(2, 2, 2), 0, 1, 2, 3, 4, 5, 6, 7), I64(DIMS(2), 2, 0), 1, 0)), XF_DT_INT32,
           DIMS(2, 2, 2), 4, 5, 2, 3, 0, 1, 6, 7);
}
END_TEST

START_TEST(reverse_sequence_errors)
{
    expect_infer_error(reverse_case(iota_f32(DIMS(2, 2), 0), I64(DIMS(2), 1, 1), 1, 1),
                       "batch_axis 1 and time_axis 1 must be 0 and 1 in some order");
    expect_infer_error(reverse_case(iota_f32(DIMS(2, 3), 0), I64(DIMS(2), 1, 1), 1, 0),
                       "sequence_lens must have shape [3] (one per batch entry), got 2");
    expect_infer_error(reverse_case(iota_f32(DIMS(2, 2), 0), I32(DIMS(2), 1, 1), 1, 0), "input 1 must be INT64");
    node_case c = reverse_case(iota_f32(DIMS(4, 2), 0), I64(DIMS(2), 5, 1), 1, 0);
    c.feed = 2;
    expect_run_error(c, "sequence length 5 of batch entry 0 is not in [0, 4]");
}
END_TEST

/* ------------------------------------------------------------ OneHot */

static node_case one_hot_case(xf_tensor *indices, xf_tensor *depth, xf_tensor *values, int64_t axis)
{
    node_case c = make_case(XF_OP_ONE_HOT, 3, indices, depth, values);
    c.opset = 11;
    c.a.axis = axis;
    return c;
}

/* on_value at each index's class along axis, off_value elsewhere, of
 * values' type; negative indices count from the end, indices beyond
 * [-depth, depth) (and before opset 11 negative ones) name no class;
 * non-integer indices and depth are truncated. */
START_TEST(one_hot_classes)
{
    EXPECT(run1(one_hot_case(I64(DIMS(3), 0, 2, -1), I64(SCALAR, 3), F32(DIMS(2), 0, 1), -1)), XF_DT_FLOAT, DIMS(3, 3),
           1, 0, 0, 0, 0, 1, 0, 0, 1);
    EXPECT(run1(one_hot_case(I64(DIMS(3), 0, 2, -1), I64(SCALAR, 3), F32(DIMS(2), 0, 1), 0)), XF_DT_FLOAT, DIMS(3, 3),
           1, 0, 0, 0, 0, 0, 0, 1, 1);
    EXPECT(run1(one_hot_case(I32(DIMS(3), 3, -4, 1), I64(DIMS(1), 3), I32(DIMS(2), 5, 9), -1)), XF_DT_INT32, DIMS(3, 3),
           5, 5, 5, 5, 5, 5, 5, 9, 5);
    node_case c = one_hot_case(I64(DIMS(2), -1, 1), I64(SCALAR, 3), I64(DIMS(2), 0, 1), -1);
    c.a.onehot_legacy = 1;
    EXPECT(run1(c), XF_DT_INT64, DIMS(2, 3), 0, 0, 0, 0, 1, 0);
    EXPECT(run1(one_hot_case(F32(DIMS(3), 1.7, NAN, -0.5), F32(SCALAR, 2.9), BOOLS(DIMS(2), 0, 1), 1)), XF_DT_BOOL,
           DIMS(3, 2), 0, 1, 0, 0, 1, 0);
    /* a 2-D index tensor, the class dim in the middle */
    EXPECT(run1(one_hot_case(I64(DIMS(2, 2), 0, 1, 1, 0), I64(SCALAR, 2), F32(DIMS(2), -1, 1), -2)), XF_DT_FLOAT,
           DIMS(2, 2, 2), 1, -1, -1, 1, -1, 1, 1, -1);
    c = one_hot_case(I64(DIMS(2), 1, 0), I64(SCALAR, 2), F32(DIMS(2), 0, 1), -1);
    c.feed = 2;
    expect_inferred(c, 0, UNKNOWN);
    c = one_hot_case(I64(DIMS(2), 1, 0), I64(SCALAR, 2), F32(DIMS(2), 0, 1), -1);
    c.feed = 2;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(2, 2), 0, 1, 1, 0);
}
END_TEST

START_TEST(one_hot_errors)
{
    expect_infer_error(one_hot_case(I64(DIMS(1), 0), I64(DIMS(2), 2, 2), F32(DIMS(2), 0, 1), -1),
                       "depth must be a scalar, got shape 2");
    expect_infer_error(one_hot_case(I64(DIMS(1), 0), I64(SCALAR, 2), F32(DIMS(3), 0, 1, 2), -1),
                       "values must be [off_value, on_value] (shape 2), got shape 3");
    expect_infer_error(one_hot_case(I64(DIMS(1), 0), I64(SCALAR, 2), F32(DIMS(2), 0, 1), 2),
                       "axis 2 is out of range for rank 2");
    expect_infer_error(one_hot_case(I64(DIMS(1), 0), I64(SCALAR, -1), F32(DIMS(2), 0, 1), -1),
                       "depth -1 is not a count of classes");
}
END_TEST

/* ------------------------------------------------------------ Compress */

static node_case compress_case(xf_tensor *x, xf_tensor *condition, bool has_axis, int64_t axis)
{
    node_case c = make_case(XF_OP_COMPRESS, 2, x, condition);
    c.opset = 11;
    c.a.has_axis = has_axis;
    c.a.axis = axis;
    return c;
}

/* The slices whose condition is true; without an axis, elements of the
 * flattened input.  A shorter condition leaves the rest out, a longer one
 * may be false beyond the input; a condition fed at run time leaves the
 * shape to each run. */
START_TEST(compress_selects)
{
    EXPECT(run1(compress_case(iota_f32(DIMS(3, 2), 0), BOOLS(DIMS(3), 0, 1, 1), true, 0)), XF_DT_FLOAT, DIMS(2, 2), 2,
           3, 4, 5);
    EXPECT(run1(compress_case(iota_f32(DIMS(3, 2), 0), BOOLS(DIMS(2), 0, 1), true, -1)), XF_DT_FLOAT, DIMS(3, 1), 1, 3,
           5);
    EXPECT(run1(compress_case(I64(DIMS(3, 2), 0, 1, 2, 3, 4, 5), BOOLS(DIMS(5), 0, 1, 0, 0, 1), false, 0)), XF_DT_INT64,
           DIMS(2), 1, 4);
    EXPECT(run1(compress_case(iota_f32(DIMS(3, 2), 0), BOOLS(DIMS(1), 1), true, 0)), XF_DT_FLOAT, DIMS(1, 2), 0, 1);
    EXPECT(run1(compress_case(iota_f32(DIMS(3, 2), 0), BOOLS(DIMS(4), 0, 0, 1, 0), true, 0)), XF_DT_FLOAT, DIMS(1, 2),
           4, 5);
    EXPECT(run1(compress_case(iota_f32(DIMS(2, 2), 0), BOOLS(DIMS(0), 0), true, 1)), XF_DT_FLOAT, DIMS(2, 0), 0);
    node_case c = compress_case(iota_f32(DIMS(2, 3), 0), BOOLS(DIMS(3), 1, 0, 1), true, 1);
    c.feed = 2;
    expect_inferred(c, 0, UNKNOWN);
    c = compress_case(iota_f32(DIMS(2, 3), 0), BOOLS(DIMS(3), 1, 0, 1), true, 1);
    c.feed = 2;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(2, 2), 0, 2, 3, 5);
}
END_TEST

START_TEST(compress_errors)
{
    expect_infer_error(compress_case(iota_f32(DIMS(3, 2), 0), BOOLS(DIMS(4), 0, 0, 0, 1), true, 0),
                       "condition selects entry 3, beyond the 3 the input has along the axis");
    expect_infer_error(compress_case(iota_f32(DIMS(3, 2), 0), BOOLS(DIMS(1, 2), 0, 1), true, 0),
                       "condition must be 1-D, got shape 1x2");
    expect_infer_error(compress_case(iota_f32(DIMS(3, 2), 0), I64(DIMS(2), 0, 1), true, 0), "input 1 must be BOOL");
    expect_infer_error(compress_case(iota_f32(DIMS(3, 2), 0), BOOLS(DIMS(2), 0, 1), true, 2),
                       "axis 2 is out of range for rank 2");
    node_case c = compress_case(iota_f32(DIMS(2), 0), BOOLS(DIMS(3), 0, 0, 1), false, 0);
    c.feed = 2;
    expect_run_error(c, "condition selects entry 2, beyond the 2");
}
END_TEST

/* ------------------------------------------------------------ Einsum */

/* Einsum of equation over n operands (xf_tensor *). */
static node_case einsum_case(const char *equation, int n, ...)
{
    node_case c = make_case(XF_OP_EINSUM, 0);
    c.opset = 12;
    c.n_in = n;
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        c.in[i] = va_arg(ap, xf_tensor *);
    va_end(ap);
    if (equation) {
        const xf_shape scalar = {.ndim = 0};
        c.a.value = xf_tensor_create(XF_DT_STRING, &scalar);
        ck_assert_ptr_nonnull(c.a.value);
        c.a.value->strings[0] = strdup(equation);
    }
    return c;
}


/* Det of a batch of square matrices (a zero first pivot needs a row
 * swap; a singular matrix gives 0); matrices that are not square fail
 * inference naming the node. */
START_TEST(det_values)
{
    EXPECT(run1(make_case(XF_OP_DET, 1, F32(DIMS(2, 2), 1, 2, 3, 4))), XF_DT_FLOAT, SCALAR, -2);
    EXPECT(run1(make_case(XF_OP_DET, 1, F32(DIMS(2, 3, 3), 0, 1, 2, 1, 0, 3, 4, -3, 8, 2, 0, 0, 0, 3, 0, 0, 0, 0.5f))),
           XF_DT_FLOAT, DIMS(2), -2, 3);
    double d[] = {1, 2, 2, 4, 5, 0, 0, 7};
    EXPECT(run1(make_case(XF_OP_DET, 1, mk(XF_DT_DOUBLE, DIMS(2, 1, 2, 2), d))), XF_DT_DOUBLE, DIMS(2, 1), 0, 35);
    expect_infer_error(make_case(XF_OP_DET, 1, iota_f32(DIMS(2, 3), 0)), "is not square matrices");
    expect_infer_error(make_case(XF_OP_DET, 1, iota_f32(DIMS(3), 0)), "is not square matrices");
}
END_TEST
/* Transposes, products, sums and traces in explicit and implicit form. */
START_TEST(einsum_explicit_and_implicit)
{
    EXPECT(run1(einsum_case("ij->ji", 1, iota_f32(DIMS(2, 3), 0))), XF_DT_FLOAT, DIMS(3, 2), 0, 3, 1, 4, 2, 5);
    EXPECT(run1(einsum_case("ij,jk->ik", 2, F32(DIMS(2, 2), 1, 2, 3, 4), F32(DIMS(2, 2), 5, 6, 7, 8))), XF_DT_FLOAT,
           DIMS(2, 2), 19, 22, 43, 50);
    EXPECT(run1(einsum_case("i,i", 2, F32(DIMS(3), 1, 2, 3), F32(DIMS(3), 4, 5, 6))), XF_DT_FLOAT, SCALAR, 32);
    EXPECT(run1(einsum_case("ij->i", 1, iota_f32(DIMS(2, 3), 0))), XF_DT_FLOAT, DIMS(2), 3, 12);
    EXPECT(run1(einsum_case("ij->", 1, iota_f32(DIMS(2, 3), 0))), XF_DT_FLOAT, SCALAR, 15);
    /* implicit: the letters used once in ASCII order, upper case first */
    EXPECT(run1(einsum_case("ba", 1, iota_f32(DIMS(2, 3), 0))), XF_DT_FLOAT, DIMS(3, 2), 0, 3, 1, 4, 2, 5);
    EXPECT(run1(einsum_case("Ba", 1, iota_f32(DIMS(2, 3), 0))), XF_DT_FLOAT, DIMS(2, 3), 0, 1, 2, 3, 4, 5);
    EXPECT(run1(einsum_case("ij,jk", 2, F32(DIMS(1, 2), 1, 2), F32(DIMS(2, 1), 3, 4))), XF_DT_FLOAT, DIMS(1, 1), 11);
    /* spaces, three operands, integers, double */
    EXPECT(run1(einsum_case(" i , i , i -> ", 3, I64(DIMS(2), 1, 2), I64(DIMS(2), 3, 4), I64(DIMS(2), 5, 6))),
           XF_DT_INT64, SCALAR, 63);
    EXPECT(run1(einsum_case("i,j->ij", 2, I32(DIMS(2), 1, 2), I32(DIMS(3), 1, 10, 100))), XF_DT_INT32, DIMS(2, 3), 1,
           10, 100, 2, 20, 200);
    double a[4] = {1, 2, 3, 4};
    EXPECT(run1(einsum_case("ij->j", 1, mk(XF_DT_DOUBLE, DIMS(2, 2), a))), XF_DT_DOUBLE, DIMS(2), 4, 6);
    /* an empty sum is 0 */
    EXPECT(run1(einsum_case("ij->i", 1, iota_f32(DIMS(3, 0), 0))), XF_DT_FLOAT, DIMS(3), 0, 0, 0);
}
END_TEST

/* A letter repeated in one operand walks the diagonal; ellipses and dims
 * of extent 1 broadcast as numpy's do. */
START_TEST(einsum_diagonals_and_broadcasting)
{
    EXPECT(run1(einsum_case("ii->i", 1, iota_f32(DIMS(3, 3), 0))), XF_DT_FLOAT, DIMS(3), 0, 4, 8);
    EXPECT(run1(einsum_case("ii", 1, iota_f32(DIMS(3, 3), 0))), XF_DT_FLOAT, SCALAR, 12);
    EXPECT(run1(einsum_case("...ii ->...i", 1, iota_f32(DIMS(2, 2, 2), 0))), XF_DT_FLOAT, DIMS(2, 2), 0, 3, 4, 7);
    EXPECT(run1(einsum_case("i...i", 1, iota_f32(DIMS(2, 3, 2), 0))), XF_DT_FLOAT, DIMS(3), 7, 11, 15);
    EXPECT(run1(einsum_case("bij, bjk -> bik", 2, iota_f32(DIMS(2, 1, 2), 1), F32(DIMS(2, 2, 1), 1, 1, 2, 3))),
           XF_DT_FLOAT, DIMS(2, 1, 1), 3, 18);
    EXPECT(run1(einsum_case("ij,ij->ij", 2, F32(DIMS(1, 3), 1, 2, 3), iota_f32(DIMS(2, 3), 0))), XF_DT_FLOAT,
           DIMS(2, 3), 0, 2, 6, 3, 8, 15);
    EXPECT(run1(einsum_case("...i,...i", 2, iota_f32(DIMS(2, 1, 2), 0), F32(DIMS(3, 2), 1, 0, 0, 1, 1, 1))),
           XF_DT_FLOAT, DIMS(2, 3), 0, 1, 1, 2, 3, 5);
    EXPECT(run1(einsum_case("...j->j...", 1, iota_f32(DIMS(2, 3), 0))), XF_DT_FLOAT, DIMS(3, 2), 0, 3, 1, 4, 2, 5);
    expect_inferred(einsum_case("abc,cd->dba", 2, iota_f32(DIMS(2, 3, 4), 0), iota_f32(DIMS(4, 5), 0)), 0,
                    DIMS(5, 3, 2));
}
END_TEST

START_TEST(einsum_errors)
{
    static const struct {
        const char *equation, *msg;
        int rank;
    } bad[] = {
        {"i,j", "more terms than the 1 operands", 1},
        {"ij->k", "the output's 'k' is in no operand", 2},
        {"ij->ii", "the output repeats 'i'", 2},
        {"ij", "operand 0 has rank 3, but the equation gives it 2 letters", 3},
        {"ii->i", "operand 0 repeats 'i' over dims of extents 2 and 3", 2},
        {"...i->i", "the output leaves out the 1 dims the operands' ellipses stand for", 2},
        {"i.j", "a '.' that is not part of a term's one ellipsis", 2},
        {"i-j", "'-' and '>' only as one '->'", 2},
        {"ij->j->i", "'-' and '>' only as one '->'", 2},
        {"i1", "the character '1'", 2},
        {"abcdefghi", "a term of more than 8 letters", 2},
        {NULL, "the node has no equation", 2},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        xf_tensor *x = bad[i].rank == 3 ? iota_f32(DIMS(2, 3, 4), 0) : iota_f32(DIMS(2, 3), 0);
        expect_infer_error(einsum_case(bad[i].equation, 1, x), bad[i].msg);
    }
    expect_infer_error(einsum_case("ij,jk", 2, iota_f32(DIMS(2, 3), 0), iota_f32(DIMS(4, 5), 0)),
                       "equation 'ij,jk': 'j' stands for extents 3 and 4");
    expect_infer_error(einsum_case("i,i", 2, iota_f32(DIMS(2), 0), I64(DIMS(2), 0, 1)),
                       "input 0 is FLOAT but input 1 is INT64");
    expect_infer_error(einsum_case("...i,...i", 2, iota_f32(DIMS(2, 3), 0), iota_f32(DIMS(4, 3), 0)),
                       "the ellipsis dims of operand 1 (4x3) do not broadcast");
}
END_TEST

/* ------------------------------------------------------------ Upsample */

/* Upsample of x by scales, given as the input of opset 9 (scales NULL
 * then: attr is opset 7's attribute), nearest or linear. */
static node_case upsample_case(xf_tensor *x, xf_tensor *scales, xf_tensor *attr, bool linear)
{
    node_case c = make_case(XF_OP_UPSAMPLE, scales ? 2 : 1, x, scales);
    c.opset = scales ? 9 : 7;
    c.a.resize_mode = linear;
    c.a.value = attr;
    return c;
}

/* Resize by scales: nearest (asymmetric, floor) and linear (half_pixel,
 * edges clamped), 1x1x1x2 -> 1x1x1x4. */
START_TEST(resize_forms)
{
    node_case c = make_case(XF_OP_RESIZE, 3, F32(DIMS(1, 1, 1, 2), 1, 3), NULL, F32(DIMS(4), 1, 1, 1, 2));
    c.a.resize_coord = 1;
    c.a.resize_nearest = 2;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 1, 1, 4), 1, 1, 3, 3);
    c = make_case(XF_OP_RESIZE, 3, F32(DIMS(1, 1, 1, 2), 1, 3), NULL, F32(DIMS(4), 1, 1, 1, 2));
    c.a.resize_mode = 1;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 1, 1, 4), 1, 1.5, 2.5, 3);
    /* cubic (A = -0.75, edges repeated; A = -0.5 with the taps outside
     * dropped and the rest renormalized) and half_pixel_symmetric, by 1.5
     * and 0.6: the values of ONNX's reference implementation */
    c = make_case(XF_OP_RESIZE, 3, F32(DIMS(1, 1, 1, 4), 1, 2, 4, 8), NULL, F32(DIMS(4), 1, 1, 1, 1.5));
    c.a.resize_mode = 2;
    c.a.alpha = -0.75f;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 1, 1, 6), 0.9131948351860046, 1.3125, 2.3044016361236572,
           3.3831019401550293, 6.1875, 8.347225189208984);
    c = make_case(XF_OP_RESIZE, 3, F32(DIMS(1, 1, 1, 4), 1, 2, 4, 8), NULL, F32(DIMS(4), 1, 1, 1, 1.5));
    c.a.resize_mode = 2;
    c.a.alpha = -0.5f;
    c.a.resize_exclude = 1;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 1, 1, 6), 0.9342107772827148, 1.3529411554336548, 2.2523133754730225,
           3.539353370666504, 6.235294342041016, 8.26315689086914);
    c = make_case(XF_OP_RESIZE, 3, F32(DIMS(1, 1, 1, 4), 1, 2, 4, 8), NULL, F32(DIMS(4), 1, 1, 1, 0.6f));
    c.a.resize_mode = 1;
    c.a.resize_coord = 5;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 1, 1, 2), 1.6666667461395264, 5.3333330154418945);
}
END_TEST

#define X8() F32(DIMS(1, 1, 1, 8), 1, 2, 4, 8, 16, 3, 5, 7)

/* Opset 18's antialias (the linear or cubic filter stretched where a dim
 * shrinks), axes (the dims the scales or sizes list) and
 * keep_aspect_ratio_policy, and opset 10's nearest rounding: the values of
 * ONNX's reference implementation, and by hand for opset 10. */
START_TEST(resize_antialias_axes_keep)
{
    /* linear by 0.5: output 0 reads 1, 1, 2, 4 (the first repeated) at
     * 1/8, 3/8, 3/8, 1/8 */
    node_case c = make_case(XF_OP_RESIZE, 3, X8(), NULL, F32(DIMS(4), 1, 1, 1, 0.5));
    c.a.resize_mode = 1;
    c.a.resize_antialias = 1;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 1, 1, 4), 1.75, 6.75, 8.75, 5.75);
    c = make_case(XF_OP_RESIZE, 3, X8(), NULL, F32(DIMS(1), 0.5));
    c.a.resize_mode = 1;
    c.a.resize_antialias = 1;
    c.a.has_axes = true;
    c.a.n_axes = 1;
    c.a.axes[0] = -1;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 1, 1, 4), 1.75, 6.75, 8.75, 5.75);
    c = make_case(XF_OP_RESIZE, 4, X8(), NULL, NULL, I64(DIMS(4), 1, 1, 1, 3));
    c.a.resize_mode = 2;
    c.a.alpha = -0.75f;
    c.a.resize_antialias = 1;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 1, 1, 3), 2.0282421112060547, 9.373137474060059, 5.932241916656494);
    c = make_case(XF_OP_RESIZE, 3, X8(), NULL, F32(DIMS(4), 1, 1, 1, 0.4f));
    c.a.resize_mode = 2;
    c.a.alpha = -0.75f;
    c.a.resize_antialias = 1;
    c.a.resize_exclude = 1;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 1, 1, 3), 1.699357271194458, 9.236882209777832, 6.185595989227295);
    /* not_larger: 2x4 to at most 3x8 keeps the aspect at 1.5 (3x6) */
    c = make_case(XF_OP_RESIZE, 4, iota_f32(DIMS(1, 1, 2, 4), 1), NULL, NULL, I64(DIMS(2), 3, 8));
    c.a.resize_mode = 1;
    c.a.resize_keep = 1;
    c.a.has_axes = true;
    c.a.n_axes = 2;
    c.a.axes[0] = 2;
    c.a.axes[1] = 3;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 1, 3, 6), 1.0, 1.5, 2.1666667461395264, 2.8333332538604736, 3.5, 4.0, 3.0,
           3.5, 4.166666507720947, 4.833333492279053, 5.5, 6.0, 5.0, 5.5, 6.166666507720947, 6.833333492279053, 7.5,
           8.0);
    /* not_smaller: at least 1x1 is 0.5 (1x2) */
    xf_attrs keep = c.a;
    c = make_case(XF_OP_RESIZE, 4, iota_f32(DIMS(1, 1, 2, 4), 1), NULL, NULL, I64(DIMS(2), 1, 1));
    c.a = keep;
    c.a.resize_keep = 2;
    c.a.resize_mode = 0;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 1, 1, 2), 1, 3);
    /* opset 10: asymmetric, ceil where a dim shrinks (0, 5/3, 10/3 read
     * 0, 2, 4), floor where it grows */
    c = make_case(XF_OP_RESIZE, 3, iota_f32(DIMS(1, 5), 1), NULL, F32(DIMS(2), 2, 0.6f));
    c.opset = 10;
    c.a.resize_coord = 1;
    c.a.resize_nearest = 4;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(2, 3), 1, 3, 5, 1, 3, 5);
    keep = c.a;
    c = make_case(XF_OP_RESIZE, 3, iota_f32(DIMS(1, 5), 1), NULL, F32(DIMS(2), 1, 1.5f));
    c.opset = 10;
    c.a = keep;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 7), 1, 1, 2, 3, 3, 4, 5);
    /* an empty output builds no taps for its other dims (168 million rows
     * of them here: 5 x 33619968, the float scale; 6.7 GB before) */
    c = make_case(XF_OP_RESIZE, 3, iota_f32(DIMS(1, 5, 3), 0), NULL, F32(DIMS(3), 1, 3.361997e7f, 5.877517e-39f));
    xf_tensor *empty = run1(c);
    ck_assert(empty->shape.ndim == 3 && empty->shape.dims[1] == 168099840 && empty->shape.dims[2] == 0);
    xf_tensor_release(empty);
    /* errors: scales not one per listed axis, a repeated axis */
    c = make_case(XF_OP_RESIZE, 3, X8(), NULL, F32(DIMS(2), 1, 0.5));
    c.a.has_axes = true;
    c.a.n_axes = 1;
    c.a.axes[0] = 3;
    expect_infer_error(c, "scales has 2 values for 1 dims");
    c = make_case(XF_OP_RESIZE, 3, X8(), NULL, F32(DIMS(2), 1, 0.5));
    c.a.has_axes = true;
    c.a.n_axes = 2;
    c.a.axes[0] = 3;
    c.a.axes[1] = -1;
    expect_infer_error(c, "axis -1 is out of range for rank 4 or repeated");
}
END_TEST

/* Nearest takes input floor(i / scale), linear interpolates at i / scale
 * (asymmetric, clamped to the last input element), whole or fractional
 * scales, from the attribute (opset 7) or the input (opset 9). */
START_TEST(upsample_nearest_and_linear)
{
    EXPECT(run1(upsample_case(F32(DIMS(1, 1, 2, 2), 1, 2, 3, 4), F32(DIMS(4), 1, 1, 2, 2), NULL, false)), XF_DT_FLOAT,
           DIMS(1, 1, 4, 4), 1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4);
    EXPECT(run1(upsample_case(F32(DIMS(3), 1, 2, 3), NULL, F32(DIMS(1), 2.5), false)), XF_DT_FLOAT, DIMS(7), 1, 1, 1, 2,
           2, 3, 3);
    EXPECT(run1(upsample_case(F32(DIMS(2), 1, 3), F32(DIMS(1), 2), NULL, true)), XF_DT_FLOAT, DIMS(4), 1, 2, 3, 3);
    EXPECT(run1(upsample_case(F32(DIMS(2, 2), 1, 2, 3, 4), NULL, F32(DIMS(2), 2, 2), true)), XF_DT_FLOAT, DIMS(4, 4), 1,
           1.5, 2, 2, 2, 2.5, 3, 3, 3, 3.5, 4, 4, 3, 3.5, 4, 4);
    double xd[2] = {0, 1};
    EXPECT(run1(upsample_case(mk(XF_DT_DOUBLE, DIMS(1, 2), xd), F32(DIMS(2), 1, 3), NULL, true)), XF_DT_DOUBLE,
           DIMS(1, 6), 0, 1.0 / 3, 2.0 / 3, 1, 1, 1);
    node_case c = upsample_case(iota_f32(DIMS(2, 2), 0), F32(DIMS(2), 1, 2), NULL, false);
    c.feed = 2;
    expect_inferred(c, 0, UNKNOWN);
    c = upsample_case(iota_f32(DIMS(2, 2), 0), F32(DIMS(2), 1, 2), NULL, false);
    c.feed = 2;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(2, 4), 0, 0, 1, 1, 2, 2, 3, 3);
}
END_TEST

START_TEST(upsample_errors)
{
    expect_infer_error(upsample_case(iota_f32(DIMS(2), 0), F32(DIMS(1), 0.5), NULL, false),
                       "scale 0.5 of dim 0 is not at least 1");
    expect_infer_error(upsample_case(iota_f32(DIMS(2, 2), 0), F32(DIMS(1), 2), NULL, false), "scales must be 2 floats");
    expect_infer_error(upsample_case(iota_f32(DIMS(2), 0), F32(DIMS(1), 2), F32(DIMS(1), 2), false),
                       "has both a scales attribute (before opset 9) and a scales input");
    expect_infer_error(upsample_case(iota_f32(DIMS(2), 0), NULL, NULL, false), "has no scales");
    expect_infer_error(upsample_case(iota_f32(DIMS(2), 0), I64(DIMS(1), 2), NULL, false), "input 1 must be FLOAT");
}
END_TEST

/* ------------------------------------------------------------ Unique */

static node_case unique_case(xf_tensor *x, bool has_axis, int64_t axis, bool sorted)
{
    node_case c = make_case(XF_OP_UNIQUE, 1, x);
    c.opset = 11;
    c.n_out = 4;
    c.a.has_axis = has_axis;
    c.a.axis = axis;
    c.a.topk_unsorted = !sorted;
    return c;
}

/* Checks Unique's four outputs: Y (of dtype dt and shape y_dims) and the
 * int64 lists indices, inverse_indices and counts. */
static void expect_unique(node_case c, xf_dtype dt, int ndim, const int64_t *y_dims, const double *y,
                          const double *indices, const double *inverse, int64_t n_inverse, const double *counts)
{
    xf_tensor *out[4];
    run_case(&c, out);
    int64_t n = ndim > 0 ? out[0]->shape.dims[ndim == 1 ? 0 : c.a.axis < 0 ? c.a.axis + ndim : c.a.axis] : 0;
    expect(out[0], dt, ndim, y_dims, y);
    expect(out[1], XF_DT_INT64, 1, (int64_t[]){n}, indices);
    expect(out[2], XF_DT_INT64, 1, (int64_t[]){n_inverse}, inverse);
    expect(out[3], XF_DT_INT64, 1, (int64_t[]){n}, counts);
}
#define D(...)                                                                                                         \
    (double[]) { __VA_ARGS__ }

/* ONNX's examples: sorted or in order of first occurrence, flattened or
 * along an axis (negative too), slices compared element by element. */
START_TEST(unique_groups)
{
    expect_unique(unique_case(F32(DIMS(6), 2, 1, 1, 3, 4, 3), false, 0, true), XF_DT_FLOAT, DIMS(4), D(1, 2, 3, 4),
                  D(1, 0, 3, 4), D(1, 0, 0, 2, 3, 2), 6, D(2, 1, 2, 1));
    expect_unique(unique_case(F32(DIMS(6), 2, 1, 1, 3, 4, 3), false, 0, false), XF_DT_FLOAT, DIMS(4), D(2, 1, 3, 4),
                  D(0, 1, 3, 4), D(0, 1, 1, 2, 3, 2), 6, D(1, 2, 2, 1));
    expect_unique(unique_case(I64(DIMS(3, 3), 1, 0, 0, 1, 0, 0, 2, 3, 4), true, 0, true), XF_DT_INT64, DIMS(2, 3),
                  D(1, 0, 0, 2, 3, 4), D(0, 2), D(0, 0, 1), 3, D(2, 1));
    expect_unique(unique_case(F32(DIMS(2, 4, 2), 1, 1, 0, 1, 2, 1, 0, 1, 1, 1, 0, 1, 2, 1, 0, 1), true, -2, true),
                  XF_DT_FLOAT, DIMS(2, 3, 2), D(0, 1, 1, 1, 2, 1, 0, 1, 1, 1, 2, 1), D(1, 0, 2), D(1, 0, 2, 0), 4,
                  D(2, 1, 1));
    /* columns of [[2, 1, 2], [0, 5, 0]] in order of first occurrence */
    expect_unique(unique_case(I32(DIMS(2, 3), 2, 1, 2, 0, 5, 0), true, 1, false), XF_DT_INT32, DIMS(2, 2),
                  D(2, 1, 0, 5), D(0, 1), D(0, 1, 0), 3, D(2, 1));
}
END_TEST

/* NaN equals NaN and sorts last, -0 equals 0 and keeps its first
 * occurrence; outputs may be left out; an input fed at run time leaves
 * the count to each run (inverse_indices' shape is known all the same). */
START_TEST(unique_values_and_shapes)
{
    expect_unique(unique_case(F32(DIMS(5), NAN, 1, NAN, -0.0, 0), false, 0, true), XF_DT_FLOAT, DIMS(3),
                  D(-0.0, 1, NAN), D(3, 1, 0), D(2, 1, 2, 0, 0), 5, D(2, 1, 2));
    expect_unique(unique_case(BOOLS(DIMS(4), 1, 1, 0, 1), false, 0, true), XF_DT_BOOL, DIMS(2), D(0, 1), D(2, 0),
                  D(1, 1, 0, 1), 4, D(1, 3));
    node_case c = unique_case(I64(DIMS(4), 7, 5, 7, 7), false, 0, false);
    c.omit_out = 1u << 1 | 1u << 2;
    xf_tensor *out[2];
    run_case(&c, out);
    EXPECT(out[0], XF_DT_INT64, DIMS(2), 7, 5);
    EXPECT(out[1], XF_DT_INT64, DIMS(2), 3, 1);
    expect_inferred(unique_case(I64(DIMS(4), 7, 5, 7, 7), false, 0, true), 0, DIMS(2));
    c = unique_case(iota_f32(DIMS(2, 3), 0), true, 0, true);
    c.feed = 1;
    expect_inferred(c, 0, UNKNOWN);
    c = unique_case(iota_f32(DIMS(2, 3), 0), true, 0, true);
    c.feed = 1;
    expect_inferred(c, 2, DIMS(2));
    c = unique_case(F32(DIMS(3, 2), 1, 2, 1, 2, 0, 0), true, 0, true);
    c.feed = 1;
    expect_unique(c, XF_DT_FLOAT, DIMS(2, 2), D(0, 0, 1, 2), D(2, 0), D(1, 1, 0), 3, D(1, 2));
    expect_unique(unique_case(iota_f32(DIMS(0), 0), false, 0, true), XF_DT_FLOAT, DIMS(0), D(0), D(0), D(0), 0, D(0));
    expect_infer_error(unique_case(iota_f32(DIMS(2, 2), 0), true, 2, true), "axis 2 is out of range for rank 2");
}
END_TEST

/* ------------------------------------------------------------ Scatter */

static node_case scatter_case(xf_tensor *data, xf_tensor *indices, xf_tensor *updates, int64_t axis)
{
    node_case c = make_case(XF_OP_SCATTER, 3, data, indices, updates);
    c.opset = 10;
    c.a.axis = axis;
    return c;
}

/* Scatter is ScatterElements without a reduction: ONNX's examples, and a
 * negative index counted from the end. */
START_TEST(scatter_elements_alias)
{
    EXPECT(run1(scatter_case(F32(DIMS(3, 3), 0, 0, 0, 0, 0, 0, 0, 0, 0), I64(DIMS(2, 3), 1, 0, 2, 0, 2, 1),
                             F32(DIMS(2, 3), 1, 1.1, 1.2, 2, 2.1, 2.2), 0)),
           XF_DT_FLOAT, DIMS(3, 3), 2, 1.1, 0, 1, 0, 2.2, 0, 2.1, 1.2);
    EXPECT(run1(scatter_case(F32(DIMS(1, 5), 1, 2, 3, 4, 5), I32(DIMS(1, 2), 1, 3), F32(DIMS(1, 2), 1.1, 2.1), 1)),
           XF_DT_FLOAT, DIMS(1, 5), 1, 1.1, 3, 2.1, 5);
    EXPECT(run1(scatter_case(I64(DIMS(1, 5), 1, 2, 3, 4, 5), I64(DIMS(1, 2), 1, -3), I64(DIMS(1, 2), 9, 8), -1)),
           XF_DT_INT64, DIMS(1, 5), 1, 9, 8, 4, 5);
    expect_infer_error(scatter_case(iota_f32(DIMS(2, 2), 0), I64(DIMS(1, 2), 0, 1), iota_f32(DIMS(2, 2), 0), 0),
                       "indices 1x2 and updates 2x2 do not fit data 2x2");
    expect_infer_error(scatter_case(iota_f32(DIMS(2), 0), I64(DIMS(1), 0), I64(DIMS(1), 0), 0),
                       "updates must be FLOAT, got INT64");
    node_case c = scatter_case(iota_f32(DIMS(2), 0), I64(DIMS(1), 2), F32(DIMS(1), 5), 0);
    c.feed = 2;
    expect_run_error(c, "index 2 out of range for axis of size 2");
}
END_TEST

/* ------------------------------------------------------------ TopK */

/* -1 when element i comes before element j among TopK's results: the
 * larger (smaller) first, NaN above every number, ties by index. */
static int topk_before(const float *v, int64_t i, int64_t j, bool smallest)
{
    bool ni = isnan(v[i]), nj = isnan(v[j]);
    int o = ni != nj ? (ni ? 1 : -1) : ni || v[i] == v[j] ? 0 : v[i] < v[j] ? -1 : 1;
    o = smallest ? o : -o;
    return o ? o : i < j ? -1 : 1;
}

/* A few of many (kept in a heap as the rest go by) or many (all sorted):
 * rows of 2000 whole numbers in [-20, 20] (ties everywhere) with NaNs,
 * the largest and the smallest, against a selection made here one element
 * at a time. */
START_TEST(top_k_selects_in_order)
{
    enum { ROWS = 2, LEN = 2000 };
    static float v[ROWS * LEN];
    uint64_t r = 99;
    for (int i = 0; i < ROWS * LEN; i++) {
        r = r * 6364136223846793005u + 1442695040888963407u;
        v[i] = i % 331 == 7 ? NAN : (float)((int)(r >> 33) % 41 - 20);
    }
    static const int64_t ks[] = {1, 37, 499, 500, 1999, 2000};
    for (size_t t = 0; t < 2 * sizeof ks / sizeof *ks; t++) {
        int64_t k = ks[t / 2];
        bool smallest = t % 2;
        xf_tensor *outs[2];
        node_case c = make_case(XF_OP_TOP_K, 2, mk(XF_DT_FLOAT, DIMS(ROWS, LEN), v), I64(DIMS(1), k));
        c.n_out = 2;
        c.a.topk_smallest = smallest;
        run_case(&c, outs);
        ck_assert_int_eq(xf_tensor_numel(outs[1]), ROWS * k);
        static bool taken[LEN];
        for (int row = 0; row < ROWS; row++) {
            const float *x = v + row * LEN;
            memset(taken, 0, sizeof taken);
            for (int64_t j = 0; j < k; j++) {
                int64_t best = -1;
                for (int64_t i = 0; i < LEN; i++)
                    if (!taken[i] && (best < 0 || topk_before(x, i, best, smallest) < 0))
                        best = i;
                taken[best] = true;
                int64_t at = row * k + j, got = xf_tensor_get_i64(outs[1], at);
                ck_assert_msg(got == best, "k %lld, %s, row %d, place %lld: index %lld, not %lld", (long long)k,
                              smallest ? "smallest" : "largest", row, (long long)j, (long long)got, (long long)best);
                float gv = ((const float *)outs[0]->data)[at];
                ck_assert(memcmp(&gv, &x[best], sizeof gv) == 0);
            }
        }
        xf_tensor_release(outs[0]);
        xf_tensor_release(outs[1]);
    }
    /* along axis 0 of the transposed rows (strided): the same selections */
    static float vt[LEN * ROWS];
    for (int row = 0; row < ROWS; row++)
        for (int i = 0; i < LEN; i++)
            vt[i * ROWS + row] = v[row * LEN + i];
    for (size_t t = 0; t < 4; t++) {
        int64_t k = t < 2 ? 37 : 1999;
        xf_tensor *rows[2], *cols[2];
        node_case c = make_case(XF_OP_TOP_K, 2, mk(XF_DT_FLOAT, DIMS(ROWS, LEN), v), I64(DIMS(1), k));
        node_case ct = make_case(XF_OP_TOP_K, 2, mk(XF_DT_FLOAT, DIMS(LEN, ROWS), vt), I64(DIMS(1), k));
        c.n_out = ct.n_out = 2;
        c.a.topk_smallest = ct.a.topk_smallest = t % 2;
        ct.a.axis = 0;
        run_case(&c, rows);
        run_case(&ct, cols);
        for (int row = 0; row < ROWS; row++)
            for (int64_t j = 0; j < k; j++)
                ck_assert_msg(xf_tensor_get_i64(rows[1], row * k + j) == xf_tensor_get_i64(cols[1], j * ROWS + row),
                              "axis 0, k %lld, row %d, place %lld", (long long)k, row, (long long)j);
        for (int m = 0; m < 2; m++) {
            xf_tensor_release(rows[m]);
            xf_tensor_release(cols[m]);
        }
    }
}
END_TEST

/* NonZero's scans by element type (carrying coordinates across outer
 * dims; NaN is nonzero; a double takes the general loop) and GatherND of
 * the single elements it finds, with a bad index refused, and of slices
 * of no elements. */
START_TEST(non_zero_and_gather_nd_by_type)
{
    xf_tensor *x = I64(DIMS(2, 2, 2), 0, 5, 0, 0, 7, 0, 0, 9);
    EXPECT(run1(make_case(XF_OP_NON_ZERO, 1, x)), XF_DT_INT64, DIMS(3, 3), 0, 1, 1, 0, 0, 1, 1, 0, 1);
    EXPECT(run1(make_case(XF_OP_NON_ZERO, 1, F32(DIMS(1, 3), 0, NAN, -0.0))), XF_DT_INT64, DIMS(2, 1), 0, 1);
    xf_tensor *d = mk(XF_DT_DOUBLE, DIMS(2, 2), (double[]){0, 2, 3, 0});
    EXPECT(run1(make_case(XF_OP_NON_ZERO, 1, d)), XF_DT_INT64, DIMS(2, 2), 0, 1, 1, 0);
    xf_tensor *data = F32(DIMS(2, 3), 1, 2, 3, 4, 5, 6);
    EXPECT(run1(make_case(XF_OP_GATHER_ND, 2, data, I64(DIMS(3, 2), 1, 2, 0, 0, -1, -3))), XF_DT_FLOAT, DIMS(3), 6, 1,
           4);
    expect_run_error(make_case(XF_OP_GATHER_ND, 2, I64(DIMS(2, 3), 1, 2, 3, 4, 5, 6), I64(DIMS(1, 2), 0, 3)),
                     "index 3 out of range for axis of size 3");
    /* slices of no elements (the run fuzzer's find: an empty output's
     * buffer advanced from a null pointer) */
    int32_t none[1] = {0};
    xf_tensor *y = run1(make_case(XF_OP_GATHER_ND, 2, mk(XF_DT_INT32, DIMS(4, 0), none),
                                  I64(DIMS(3, 1), 0, 3, -1)));
    ck_assert_int_eq(y->shape.ndim, 2);
    ck_assert_int_eq(y->shape.dims[0], 3);
    ck_assert_int_eq(xf_tensor_numel(y), 0);
    xf_tensor_release(y);
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
    tc = tcase_create("movement");
    tcase_add_test(tc, trilu_triangles);
    tcase_add_test(tc, trilu_errors);
    tcase_add_test(tc, tile_repeats);
    tcase_add_test(tc, tile_errors);
    tcase_add_test(tc, depth_to_space_modes);
    tcase_add_test(tc, depth_space_errors);
    tcase_add_test(tc, eye_like_diagonals);
    tcase_add_test(tc, reverse_sequence_lengths);
    tcase_add_test(tc, reverse_sequence_errors);
    suite_add_tcase(s, tc);
    tc = tcase_create("indexing");
    tcase_add_test(tc, one_hot_classes);
    tcase_add_test(tc, one_hot_errors);
    tcase_add_test(tc, compress_selects);
    tcase_add_test(tc, compress_errors);
    suite_add_tcase(s, tc);
    tc = tcase_create("einsum_det");
    tcase_add_test(tc, det_values);
    tcase_add_test(tc, einsum_explicit_and_implicit);
    tcase_add_test(tc, einsum_diagonals_and_broadcasting);
    tcase_add_test(tc, einsum_errors);
    suite_add_tcase(s, tc);
    tc = tcase_create("upsample");
    tcase_add_test(tc, upsample_nearest_and_linear);
    tcase_add_test(tc, upsample_errors);
    tcase_add_test(tc, resize_forms);
    tcase_add_test(tc, resize_antialias_axes_keep);
    suite_add_tcase(s, tc);
    tc = tcase_create("unique_scatter");
    tcase_add_test(tc, unique_groups);
    tcase_add_test(tc, unique_values_and_shapes);
    tcase_add_test(tc, scatter_elements_alias);
    tcase_add_test(tc, top_k_selects_in_order);
    tcase_add_test(tc, non_zero_and_gather_nd_by_type);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
