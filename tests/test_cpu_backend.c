/* The `cpu` backend (oneDNN) against cpu_ref.
 *
 * Every op oneDNN runs is checked on random shapes (odd sizes, strides,
 * pads, groups, dilations, broadcasting), each graph in static mode (where
 * the layout plan may keep values in the native layout) and in dynamic mode (plain).
 * Chains of convolutions exercise native layouts and the reorders at their
 * edges; the bundled example and the ONNX node conformance cases check
 * whole graphs.  Elementwise ops and the activation patterns are in
 * test_cpu_activations.c.  Without oneDNN the backend is absent and the
 * suite says so and checks only that. */
#include "conformance_util.h"
#include "backend_util.h"
#include "core_builders.h"
#include "xf_proto.h"
#include "xf_runtime.h"
#include "xf_test_util.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* ---------------------------------------------------------------- random graphs */

static int add_input(xf_graph *g, xf_shape s) { return xf_bt_input(g, XF_DT_FLOAT, s); }


/* ---------------------------------------------------------------- convolution */

START_TEST(conv_random)
{
    if (!xf_bt_have_cpu())
        return;
    xf_bt_conv_random(xf_bt_check_cpu, 40, false);
}
END_TEST

/* Weights computed in the graph (not an initializer) are reordered per run. */
START_TEST(conv_runtime_weights)
{
    if (!xf_bt_have_cpu())
        return;
    xf_graph *g = xf_graph_create("conv");
    int x = add_input(g, SHAPE(1, 16, 9, 9));
    int w = add_input(g, SHAPE(32, 16, 3, 3));
    int n = xf_bt_finish_single(g, XF_OP_CONV, 2, (int[]){x, w});
    xf_bt_set_window(attrs(g, n), 2, NULL, (int64_t[]){1, 1}, (int64_t[]){1, 1}, (int64_t[]){1, 1}, (int64_t[]){1, 1});
    xf_bt_check_cpu(g, 17, 1e-4, 1e-3, "conv with weights as a graph input");
    xf_graph_free(g);
}
END_TEST

/* ---------------------------------------------------------------- pools */

START_TEST(pool_random)
{
    if (!xf_bt_have_cpu())
        return;
    xf_bt_pool_random(xf_bt_check_cpu, &(xf_bt_pool_forms){.cases = 32, .random_dilations = true});
}
END_TEST

/* MaxPool with its Indices output (which oneDNN's pooling does not give)
 * runs on cpu_ref's kernel, next to a one-output MaxPool on oneDNN, and
 * MaxUnpool of its outputs likewise: every output as cpu_ref has it. */
START_TEST(pool_indices_and_unpool)
{
    if (!xf_bt_have_cpu())
        return;
    xf_bt_pool_indices(xf_bt_check_cpu);
}
END_TEST

/* ---------------------------------------------------------------- matrix products */

START_TEST(matmul_random)
{
    if (!xf_bt_have_cpu())
        return;
    xf_bt_matmul_random(xf_bt_check_cpu, 8, 1);
}
END_TEST

START_TEST(gemm_forms)
{
    if (!xf_bt_have_cpu())
        return;
    /* alpha and beta away from 1 take the cpu_ref path: still checked */
    xf_bt_gemm_forms(xf_bt_check_cpu);
}
END_TEST

START_TEST(binary_broadcasting)
{
    if (!xf_bt_have_cpu())
        return;
    static const xf_op ops[] = {XF_OP_ADD, XF_OP_SUB, XF_OP_MUL, XF_OP_DIV, XF_OP_MAX, XF_OP_MIN};
    /* the first operand takes the small shape in the swapped forms */
    for (size_t o = 0; o < sizeof ops / sizeof *ops; o++)
        for (int f = 0; f < XF_BT_BINARY_FORMS; f++)
            for (int swap = 0; swap < 2; swap++)
                xf_bt_binary_case(xf_bt_check_cpu, ops[o], XF_DT_FLOAT, f, swap);
}
END_TEST

/* A broadcast over a middle dim (Swin's attention mask, [1, 4, 1, 7, 7] to
 * [1, 4, 3, 7, 7]), which oneDNN's binary kernels lack: alone it runs on
 * cpu_ref's kernel over the threads; with a Relu folded in, on oneDNN's
 * reference binary (the node prepared again with the post-op). */
START_TEST(binary_middle_broadcast)
{
    if (!xf_bt_have_cpu())
        return;
    for (int relu = 0; relu < 2; relu++) {
        xf_graph *g = xf_graph_create("mask");
        int x = out0(g, NODE(g, XF_OP_ABS, add_input(g, SHAPE(1, 4, 3, 7, 7))));
        int y = out0(g, NODE(g, XF_OP_ADD, x, xf_bt_random_const(g, SHAPE(1, 4, 1, 7, 7), false)));
        xf_graph_add_output(g, relu ? out0(g, NODE(g, XF_OP_RELU, y)) : y);
        xf_bt_check_cpu(g, 17, 1e-6, 1e-6, relu ? "middle broadcast, then Relu" : "middle broadcast");
        xf_graph_free(g);
    }
}
END_TEST

/* Einsums that are batched matrix products run as oneDNN's matmul (A or B
 * read transposed through strides, B constant or computed); the others
 * (an output transposed, a diagonal, a broadcast batch) on cpu_ref. */
START_TEST(einsum_products)
{
    if (!xf_bt_have_cpu())
        return;
    static const struct {
        const char *eq;
        int64_t a[4], b[4];
        int rank;
        bool b_const;
    } cases[] = {
        {"bhid,bhjd->bhij", {2, 3, 5, 4}, {2, 3, 6, 4}, 4, false}, /* MaxViT's A B^T */
        {"bhij,bhjd->bhid", {2, 3, 5, 6}, {2, 3, 6, 4}, 4, false},
        {"ik,kj->ij", {7, 9}, {9, 5}, 2, true},
        {"bki,bkj->bij", {3, 9, 7}, {3, 9, 5}, 3, true},
        {"bij,bjk->bki", {3, 7, 9}, {3, 9, 5}, 3, false},  /* output transposed */
        {"bii,bij->bj", {3, 7, 7}, {3, 7, 5}, 3, false},   /* a diagonal */
        {"bij,bjk->bik", {1, 7, 9}, {3, 9, 5}, 3, false},  /* A's batch broadcast */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        xf_graph *g = xf_graph_create("einsum");
        xf_shape sa = xf_shape_make(cases[i].rank, cases[i].a), sb = xf_shape_make(cases[i].rank, cases[i].b);
        int b = cases[i].b_const ? xf_bt_random_const(g, sb, false) : add_input(g, sb);
        int n = xf_bt_finish_single(g, XF_OP_EINSUM, 2, (int[]){add_input(g, sa), b});
        xf_tensor *eq = xf_tensor_create(XF_DT_STRING, &(xf_shape){.ndim = 0});
        ck_assert_ptr_nonnull(eq);
        eq->strings[0] = strdup(cases[i].eq);
        attrs(g, n)->value = eq;
        xf_bt_check_cpu(g, 12, 1e-5, 1e-4, cases[i].eq);
        xf_graph_free(g);
    }
}
END_TEST

/* ---------------------------------------------------------------- normalization, concat */

START_TEST(softmax_axes)
{
    if (!xf_bt_have_cpu())
        return;
    xf_bt_softmax_axes(xf_bt_check_cpu);
}
END_TEST

START_TEST(batch_norm_ranks)
{
    if (!xf_bt_have_cpu())
        return;
    static const int64_t shapes[][5] = {{2, 7, 5}, {1, 16, 9, 11}, {2, 3, 4, 5, 6}};
    for (int r = 0; r < 3; r++)
        xf_bt_batch_norm_case(xf_bt_check_cpu, 3 + r, shapes[r], 1e-3f);
}
END_TEST

START_TEST(concat_axes)
{
    if (!xf_bt_have_cpu())
        return;
    for (int axis = -4; axis < 4; axis++) {
        xf_graph *g = xf_graph_create("concat");
        xf_bt_concat3(g, axis);
        char what[32];
        snprintf(what, sizeof what, "Concat axis %d", axis);
        xf_bt_check_cpu(g, 17, 0, 0, what);
        xf_graph_free(g);
    }
    /* convolutions of 16 and 32 channels concatenated on the channels and
     * read by a convolution: with one image the convolutions write into
     * the Concat's output in the native layout and the Concat does not
     * run; with two it copies */
    for (int64_t batch = 1; batch <= 2; batch++) {
        xf_graph *g = xf_graph_create("concat_convs");
        int x = add_input(g, SHAPE(batch, 8, 10, 10));
        int c1 = node(g, XF_OP_CONV, "c1", 2, (int[]){x, xf_bt_random_const(g, SHAPE(16, 8, 3, 3), false)}, 1);
        xf_bt_set_window(attrs(g, c1), 2, NULL, (int64_t[]){1, 1}, (int64_t[]){1, 1}, (int64_t[]){1, 1},
                         (int64_t[]){1, 1});
        int c2 = node(g, XF_OP_CONV, "c2", 2, (int[]){x, xf_bt_random_const(g, SHAPE(32, 8, 1, 1), false)}, 1);
        xf_bt_set_window(attrs(g, c2), 2, NULL, (int64_t[]){1, 1}, (int64_t[]){0, 0}, (int64_t[]){0, 0},
                         (int64_t[]){1, 1});
        int cat = node(g, XF_OP_CONCAT, "cat", 2, (int[]){out0(g, c1), out0(g, c2)}, 1);
        attrs(g, cat)->axis = 1;
        int w3 = xf_bt_random_const(g, SHAPE(8, 48, 1, 1), false);
        int c3 = xf_bt_finish_single(g, XF_OP_CONV, 2, (int[]){out0(g, cat), w3});
        xf_bt_set_window(attrs(g, c3), 2, NULL, (int64_t[]){1, 1}, (int64_t[]){0, 0}, (int64_t[]){0, 0},
                         (int64_t[]){1, 1});
        xf_bt_check_cpu(g, 17, 1e-4, 1e-3,
                        batch == 1 ? "convolutions into a Concat, one image" : "the same, two images");
        xf_graph_free(g);
    }
}
END_TEST

START_TEST(layer_norm_axes)
{
    if (!xf_bt_have_cpu())
        return;
    xf_bt_seed(21);
    for (int t = 0; t < 12; t++) {
        int rank = (int)xf_bt_rnd(1, 4);
        int64_t d[4];
        for (int i = 0; i < rank; i++)
            d[i] = xf_bt_rnd(1, 13);
        int axis = (int)xf_bt_rnd(-rank, rank - 1), a = axis < 0 ? axis + rank : axis;
        xf_graph *g = xf_graph_create("layer_norm");
        int x = add_input(g, xf_shape_make(rank, d));
        /* scale (a constant or computed) and bias of the normalized shape */
        xf_shape ps = xf_shape_make(rank - a, d + a);
        int scale = t % 3 == 2 ? add_input(g, ps) : xf_bt_random_const(g, ps, false);
        int bias = t % 4 == 3 ? -1 : xf_bt_random_const(g, ps, false);
        int n = xf_bt_finish_single(g, XF_OP_LAYER_NORM, bias >= 0 ? 3 : 2, (int[]){x, scale, bias});
        attrs(g, n)->axis = axis;
        attrs(g, n)->epsilon = t % 2 ? 1e-5f : 1e-12f;
        char what[64];
        snprintf(what, sizeof what, "LayerNormalization case %d (rank %d, axis %d)", t, rank, axis);
        xf_bt_check_cpu(g, 17, 1e-4, 1e-3, what);
        xf_graph_free(g);
    }
}
END_TEST

/* Mean and InvStdDev: oneDNN's inference primitive has neither, so such
 * nodes run on cpu_ref; checked against cpu_ref and a direct computation. */
START_TEST(layer_norm_stats)
{
    if (!xf_bt_have_cpu())
        return;
    xf_bt_layer_norm_stats(xf_bt_check_cpu, "cpu");
}
END_TEST

START_TEST(transpose_perms)
{
    if (!xf_bt_have_cpu())
        return;
    xf_bt_seed(31);
    for (int t = 0; t < 16; t++) {
        int rank = (int)xf_bt_rnd(1, 6);
        int64_t d[6], perm[6];
        for (int i = 0; i < rank; i++) {
            d[i] = xf_bt_rnd(1, 7);
            perm[i] = i;
        }
        for (int i = rank - 1; i > 0; i--) {
            int j = (int)xf_bt_rnd(0, i);
            int64_t tmp = perm[i];
            perm[i] = perm[j];
            perm[j] = tmp;
        }
        xf_graph *g = xf_graph_create("transpose");
        int x = add_input(g, xf_shape_make(rank, d));
        int n = xf_bt_finish_single(g, XF_OP_TRANSPOSE, 1, &x);
        /* every fourth case leaves perm out: the dims reversed */
        attrs(g, n)->n_perm = t % 4 == 3 ? 0 : rank;
        memcpy(attrs(g, n)->perm, perm, sizeof perm);
        char what[48];
        snprintf(what, sizeof what, "Transpose case %d (rank %d)", t, rank);
        xf_bt_check_cpu(g, 17, 0, 0, what);
        xf_graph_free(g);
    }
}
END_TEST

/* ---------------------------------------------------------------- native layouts */

/* A grouped convolution of 8 channels per group between two others (a
 * RegNet block): where the layout the others store it in leaves oneDNN
 * its reference kernel only, the convolution gets the layouts it prefers,
 * with reorders around it; the values are cpu_ref's. */
START_TEST(grouped_conv_between_convs)
{
    if (!xf_bt_have_cpu())
        return;
    for (int64_t stride = 1; stride <= 2; stride++) {
        xf_graph *g = xf_graph_create("regnet_block");
        int x = xf_bt_conv(g, add_input(g, SHAPE(1, 16, 20, 20)), 16, 48, 1, 1, XF_ACT_RELU);
        int w = xf_bt_random_const(g, SHAPE(48, 8, 3, 3), false);
        int n = node(g, XF_OP_CONV, "grouped", 2, (int[]){x, w}, 1);
        xf_bt_set_window(attrs(g, n), 2, NULL, (int64_t[]){stride, stride}, (int64_t[]){1, 1}, (int64_t[]){1, 1},
                         (int64_t[]){1, 1});
        attrs(g, n)->group = 6;
        attrs(g, n)->activation = XF_ACT_RELU;
        xf_graph_add_output(g, xf_bt_conv(g, out0(g, n), 48, 32, 1, 1, XF_ACT_NONE));
        xf_bt_check_cpu(g, 17, 1e-4, 1e-4, stride == 1 ? "grouped convolution" : "grouped convolution, stride 2");
        xf_graph_free(g);
    }
}
END_TEST

/* A squeeze-and-excitation block (EfficientNet's, MobileNetV3's): the
 * convolution's output stays in the native layout through the Mul by one
 * value per channel (computed, a constant of rank 3, or one value). */
START_TEST(squeeze_excitation)
{
    if (!xf_bt_have_cpu())
        return;
    for (int t = 0; t < 3; t++) {
        xf_graph *g = xf_graph_create("se");
        int y = xf_bt_conv(g, add_input(g, SHAPE(1, 16, 12, 12)), 16, 32, 3, 1, XF_ACT_RELU), s;
        if (t == 0) {
            int pool = out0(g, NODE(g, XF_OP_GLOBAL_AVERAGE_POOL, y));
            s = out0(g, NODE(g, XF_OP_SIGMOID, xf_bt_conv(g, pool, 32, 32, 1, 1, XF_ACT_NONE)));
        } else {
            s = xf_bt_random_const(g, t == 1 ? SHAPE(32, 1, 1) : SHAPE(1), false);
        }
        int z = out0(g, NODE(g, XF_OP_MUL, y, s));
        xf_graph_add_output(g, xf_bt_conv(g, z, 32, 8, 3, 1, XF_ACT_NONE));
        xf_bt_check_cpu(g, 17, 1e-4, 1e-4, t == 0 ? "SE scale computed" : t == 1 ? "SE scale [32,1,1]" : "scale [1]");
        xf_graph_free(g);
    }
}
END_TEST

/* ReduceMean and ReduceMax over the spatial dims, dims kept (the pool of a
 * squeeze-and-excitation block as PyTorch's dynamo exports it) run as
 * global pools on the convolution's native output: axes as an attribute
 * (opset 13) or an input (18), negative or not; over the channels too, or
 * without keepdims, they stay on cpu_ref. */
START_TEST(reduce_as_global_pool)
{
    if (!xf_bt_have_cpu())
        return;
    static const struct {
        xf_op op;
        int64_t opset, axes[3];
        int n_axes, keepdims;
    } cases[] = {{XF_OP_REDUCE_MEAN, 13, {2, 3}, 2, 1}, {XF_OP_REDUCE_MEAN, 18, {-1, -2}, 2, 1},
                 {XF_OP_REDUCE_MAX, 18, {3, 2}, 2, 1},  {XF_OP_REDUCE_MEAN, 18, {1, 2, 3}, 3, 1},
                 {XF_OP_REDUCE_MEAN, 13, {2, 3}, 2, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        xf_graph *g = xf_graph_create("se_pool");
        int y = xf_bt_conv(g, add_input(g, SHAPE(1, 16, 9, 11)), 16, 32, 3, 1, XF_ACT_RELU), n;
        if (cases[i].opset >= 18) {
            n = NODE(g, cases[i].op, y,
                     constant(g, NULL, XF_DT_INT64, xf_shape_make(1, (int64_t[]){cases[i].n_axes}), cases[i].axes));
        } else {
            n = NODE(g, cases[i].op, y);
            attrs(g, n)->has_axes = true;
            attrs(g, n)->n_axes = cases[i].n_axes;
            memcpy(attrs(g, n)->axes, cases[i].axes, sizeof cases[i].axes);
        }
        attrs(g, n)->keepdims = cases[i].keepdims;
        xf_graph_add_output(g, out0(g, n));
        char what[64];
        snprintf(what, sizeof what, "%s case %zu", xf_op_name(cases[i].op), i);
        xf_bt_check_cpu(g, cases[i].opset, 1e-5, 1e-4, what);
        xf_graph_free(g);
    }
}
END_TEST

static int bn_node(xf_graph *g, int x, int64_t c)
{
    int ins[5] = {x, xf_bt_random_const(g, SHAPE(c), false), xf_bt_random_const(g, SHAPE(c), false), xf_bt_random_const(g, SHAPE(c), false),
                  xf_bt_random_const(g, SHAPE(c), true)};
    int n = node(g, XF_OP_BATCH_NORM, NULL, 5, ins, 1);
    attrs(g, n)->epsilon = 1e-5f;
    return out0(g, n);
}

/* A residual block with a side branch, concat along channels, pooling and
 * a classifier: values between the convolutions may be native, the input
 * (3 channels), the flattened features and the outputs must stay plain,
 * and an intermediate is also a graph output.  BatchNorm -> Relu, Add ->
 * Relu and Conv -> Tanh may be folded into one primitive in static mode. */
START_TEST(native_runs)
{
    if (!xf_bt_have_cpu())
        return;
    xf_graph *g = xf_graph_create("net");
    int x = add_input(g, SHAPE(2, 3, 19, 17));
    int y = xf_bt_conv(g, x, 3, 32, 3, 2, XF_ACT_RELU);
    int z = xf_bt_conv(g, y, 32, 32, 3, 1, XF_ACT_NONE);
    z = bn_node(g, z, 32);
    z = out0(g, NODE(g, XF_OP_RELU, z));
    z = xf_bt_conv(g, z, 32, 32, 1, 1, XF_ACT_NONE);
    int sum = out0(g, NODE(g, XF_OP_ADD, z, y));
    sum = out0(g, NODE(g, XF_OP_RELU, sum));
    int side = xf_bt_conv(g, sum, 32, 16, 1, 1, XF_ACT_SIGMOID);
    int cat = out0(g, NODE(g, XF_OP_CONCAT, sum, side));
    attrs(g, g->n_nodes - 1)->axis = 1;
    int mp = NODE(g, XF_OP_MAX_POOL, cat);
    xf_bt_set_window(attrs(g, mp), 2, (int64_t[]){3, 3}, (int64_t[]){2, 2}, (int64_t[]){1, 1}, (int64_t[]){1, 1},
               (int64_t[]){1, 1});
    int deep = xf_bt_conv(g, out0(g, mp), 48, 64, 3, 1, XF_ACT_NONE);
    deep = out0(g, NODE(g, XF_OP_TANH, deep));
    int gap = out0(g, NODE(g, XF_OP_GLOBAL_AVERAGE_POOL, deep));
    int flat = NODE(g, XF_OP_FLATTEN, gap);
    attrs(g, flat)->axis = 1;
    int fc = NODE(g, XF_OP_GEMM, out0(g, flat), xf_bt_random_const(g, SHAPE(10, 64), false), xf_bt_random_const(g, SHAPE(10), false));
    attrs(g, fc)->trans_b = 1;
    int sm = NODE(g, XF_OP_SOFTMAX, out0(g, fc));
    attrs(g, sm)->axis = 1;
    xf_graph_add_output(g, out0(g, sm));
    xf_graph_add_output(g, side);
    xf_bt_check_cpu(g, 17, 1e-4, 1e-3, "conv net with native runs");
    xf_graph_free(g);
}
END_TEST

/* Split on every axis of a 4-D tensor, and a convolution's channels split
 * into parts that fill whole blocks (read native, each part written
 * native for the convolution after it) or not (plain parts); of one
 * image, the parts are views of the convolution's output where the layout
 * allows. */
START_TEST(split_parts)
{
    if (!xf_bt_have_cpu())
        return;
    xf_bt_seed(23);
    for (int t = 0; t < 8; t++) {
        xf_graph *g = xf_graph_create("split");
        int x = add_input(g, SHAPE(t >= 6 ? 1 : 2, 8, 7, 5));
        bool channels = t >= 4;
        int64_t parts[2] = {t % 2 == 0 && channels ? 16 : 7, t % 2 == 0 && channels ? 32 : 13};
        int src = channels ? xf_bt_conv(g, x, 8, parts[0] + parts[1], 1, 1, XF_ACT_NONE) : x;
        int axis = channels ? 1 : t - 1; /* -1, 0, 1, 2 */
        int64_t len = g->values[src].shape.dims[axis < 0 ? 3 : axis];
        if (!channels) {
            parts[0] = len / 2;
            parts[1] = len - parts[0];
        }
        int n = node(g, XF_OP_SPLIT, NULL, 2, (int[]){src, CONST_I64(g, parts[0], parts[1])}, 2);
        attrs(g, n)->axis = axis;
        for (int k = 0; k < 2; k++) {
            int part = g->nodes[n].outputs[k];
            xf_graph_add_output(g, channels ? xf_bt_conv(g, part, parts[k], 4, 3, 1, XF_ACT_RELU) : part);
        }
        char what[48];
        snprintf(what, sizeof what, "Split case %d (axis %d)", t, axis);
        xf_bt_check_cpu(g, 17, 1e-4, 1e-3, what);
        xf_graph_free(g);
    }
}
END_TEST

/* Chains the backend folds into one primitive in static mode: Conv ->
 * BatchNormalization -> Relu (weights folded, then a post-op), Conv ->
 * Sigmoid, and Add -> Relu over either input; convolutions read graph
 * inputs so that no buffer of the plan can stand in the way. */
START_TEST(folded_chains)
{
    if (!xf_bt_have_cpu())
        return;
    for (int64_t c = 5; c <= 32; c += 27) {
        xf_graph *g = xf_graph_create("folds");
        int x = add_input(g, SHAPE(2, 4, 11, 9));
        int x2 = add_input(g, SHAPE(2, 4, 11, 9));
        int a = xf_bt_conv(g, x, 4, c, 3, 1, XF_ACT_NONE);
        a = bn_node(g, a, c);
        a = out0(g, NODE(g, XF_OP_RELU, a));
        int b = xf_bt_conv(g, x2, 4, c, 1, 1, XF_ACT_NONE);
        b = out0(g, NODE(g, XF_OP_SIGMOID, b));
        int s1 = out0(g, NODE(g, XF_OP_ADD, a, b));
        s1 = out0(g, NODE(g, XF_OP_RELU, s1));
        int s2 = out0(g, NODE(g, XF_OP_ADD, b, s1));
        s2 = out0(g, NODE(g, XF_OP_RELU, s2));
        xf_graph_add_output(g, s2);
        xf_graph_add_output(g, a);
        char what[48];
        snprintf(what, sizeof what, "folded chains, %lld channels", (long long)c);
        xf_bt_check_cpu(g, 17, 1e-4, 1e-3, what);
        xf_graph_free(g);
    }
}
END_TEST

/* Post-ops of one algorithm with different parameters on one primitive
 * (oneDNN 2.6 would run the second with the first's): Add -> Mul -> Mul,
 * the tanh GELU's Add -> Mul -> Tanh -> Add 1, Conv with a fused Relu ->
 * LeakyRelu, MatMul -> Div -> Sub. */
START_TEST(repeated_post_algorithms)
{
    if (!xf_bt_have_cpu())
        return;
    xf_graph *g = xf_graph_create("posts");
    int x = add_input(g, SHAPE(4, 9, 12)), x2 = add_input(g, SHAPE(4, 9, 12));
    int a = out0(g, NODE(g, XF_OP_ADD, x, x2));
    a = out0(g, NODE(g, XF_OP_MUL, a, xf_bt_scalar(g, 0.5f, 0)));
    a = out0(g, NODE(g, XF_OP_MUL, a, xf_bt_scalar(g, 1.5f, 0)));
    int t = out0(g, NODE(g, XF_OP_ADD, x2, x));
    t = out0(g, NODE(g, XF_OP_MUL, t, xf_bt_scalar(g, 0.7978846f, 0)));
    t = out0(g, NODE(g, XF_OP_TANH, t));
    t = out0(g, NODE(g, XF_OP_ADD, t, xf_bt_scalar(g, 1.0f, 0)));
    int img = add_input(g, SHAPE(2, 4, 7, 5));
    int cv = out0(g, NODE(g, XF_OP_LEAKY_RELU, xf_bt_conv(g, img, 4, 6, 3, 1, XF_ACT_RELU)));
    attrs(g, g->values[cv].producer)->alpha = 0.1f;
    int m = out0(g, NODE(g, XF_OP_MATMUL, x, xf_bt_random_const(g, SHAPE(12, 5), false)));
    m = out0(g, NODE(g, XF_OP_DIV, m, xf_bt_scalar(g, 4.0f, 0)));
    m = out0(g, NODE(g, XF_OP_SUB, m, xf_bt_scalar(g, 0.25f, 1)));
    xf_graph_add_output(g, a);
    xf_graph_add_output(g, t);
    xf_graph_add_output(g, cv);
    xf_graph_add_output(g, m);
    xf_bt_check_cpu(g, 17, 1e-4, 1e-3, "repeated post-op algorithms");
    xf_graph_free(g);
}
END_TEST

/* The activations oneDNN has as algorithms of their own, folded as post-ops:
 * Conv -> Mish, Conv -> Gelu, MatMul -> Gelu with the tanh approximation
 * (each a single node here, not the pattern gelu_patterns folds). */
START_TEST(activation_posts)
{
    if (!xf_bt_have_cpu())
        return;
    xf_graph *g = xf_graph_create("activation posts");
    int img = add_input(g, SHAPE(2, 4, 7, 5)), x = add_input(g, SHAPE(4, 9, 12));
    int mish = out0(g, NODE(g, XF_OP_MISH, xf_bt_conv(g, img, 4, 6, 3, 1, XF_ACT_NONE)));
    int gelu = out0(g, NODE(g, XF_OP_GELU, xf_bt_conv(g, img, 4, 8, 1, 1, XF_ACT_NONE)));
    int m = out0(g, NODE(g, XF_OP_MATMUL, x, xf_bt_random_const(g, SHAPE(12, 5), false)));
    m = out0(g, NODE(g, XF_OP_GELU, m));
    attrs(g, g->values[m].producer)->gelu_tanh = 1;
    xf_graph_add_output(g, mish);
    xf_graph_add_output(g, gelu);
    xf_graph_add_output(g, m);
    xf_bt_check_cpu(g, 17, 1e-4, 1e-3, "activation post-ops");
    xf_graph_free(g);
}
END_TEST

/* Residual blocks on random shapes: Conv [-> BatchNormalization] [->
 * activation] -> Add of a shortcut [-> Relu], which static mode runs as one
 * convolution with a sum post-op.  The shortcut is a convolution computed
 * before or after the main branch (so the sum may land on either side of
 * the Add), the block's input itself, a value computed after the main
 * branch or a graph input (neither can be the sum: not there yet, or bound
 * only per run); the block's output is a graph output (stored
 * plain) or feeds another convolution (native when the channels allow);
 * the shortcut is sometimes also read by a later node. */
START_TEST(residual_sums)
{
    if (!xf_bt_have_cpu())
        return;
    xf_bt_seed(11);
    for (int t = 0; t < 24; t++) {
        int64_t c = t % 3 == 0 ? 16 * xf_bt_rnd(1, 2) : xf_bt_rnd(1, 21), n = xf_bt_rnd(1, 2),
                h = xf_bt_rnd(3, 13), w = xf_bt_rnd(3, 12);
        int64_t stride = t % 4 == 1 ? 2 : 1;
        int shortcut = t % 4, shortcut_last = (t / 4) % 2, use_bn = xf_bt_rnd(0, 1), swap = xf_bt_rnd(0, 1);
        if (shortcut != 0)
            stride = 1;
        xf_graph *g = xf_graph_create("residual");
        int x = add_input(g, SHAPE(n, c, h, w));
        int x_relu = out0(g, NODE(g, XF_OP_RELU, x));
        int extra = shortcut == 3 ? add_input(g, SHAPE(n, c, h, w)) : -1;
        int r = shortcut == 1 ? x_relu : extra;
        if (shortcut == 0 && !shortcut_last)
            r = bn_node(g, xf_bt_conv(g, x_relu, c, c, 1, stride, XF_ACT_NONE), c);
        int branch = xf_bt_conv(g, x_relu, c, c, 3, stride, t % 5 == 2 ? XF_ACT_RELU : XF_ACT_NONE);
        if (use_bn)
            branch = bn_node(g, branch, c);
        if (t % 6 == 3)
            branch = out0(g, NODE(g, XF_OP_SIGMOID, branch));
        if (shortcut == 0 && shortcut_last)
            r = bn_node(g, xf_bt_conv(g, x_relu, c, c, 1, stride, XF_ACT_NONE), c);
        if (shortcut == 2)
            r = out0(g, NODE(g, XF_OP_ABS, x));
        int sum = out0(g, swap ? NODE(g, XF_OP_ADD, r, branch) : NODE(g, XF_OP_ADD, branch, r));
        if (xf_bt_rnd(0, 2))
            sum = out0(g, NODE(g, XF_OP_RELU, sum));
        if (t % 2) {
            int after = xf_bt_conv(g, sum, c, c, 1, 1, XF_ACT_NONE);
            xf_graph_add_output(g, t % 8 == 1 ? out0(g, NODE(g, XF_OP_ADD, after, r)) : after);
        } else {
            xf_graph_add_output(g, sum);
        }
        char what[96];
        snprintf(what, sizeof what, "residual case %d (%lld channels, shortcut %d%s)", t, (long long)c, shortcut,
                 shortcut_last ? ", last" : "");
        xf_bt_check_cpu(g, 17, 1e-4, 1e-3, what);
        xf_graph_free(g);
    }
}
END_TEST

/* Transformer-style chains: MatMul (of a matrix: all of A's rows as one
 * product) -> Add of a constant (the MatMul's bias when it broadcasts with
 * dims of 1) -> exact GELU or Relu -> Mul, Div or
 * Sub by a constant (post-ops of the MatMul) -> MatMul -> bias -> Add of
 * the block's input (a sum post-op) -> LayerNormalization.  Biases computed in the graph, x read by a third
 * node, and inputs the sum cannot take (graph inputs) keep nodes apart. */
START_TEST(matmul_chains)
{
    if (!xf_bt_have_cpu())
        return;
    xf_bt_seed(51);
    for (int t = 0; t < 16; t++) {
        int64_t b = xf_bt_rnd(1, 2), m = xf_bt_rnd(1, 17), k = xf_bt_rnd(1, 33), hidden = xf_bt_rnd(1, 40);
        xf_graph *g = xf_graph_create("mlp");
        int in = add_input(g, SHAPE(b, m, k));
        /* the block's input as a node output (the sum can take it) or the graph input */
        int x = t % 4 == 3 ? in : out0(g, NODE(g, XF_OP_ABS, in));
        int h = out0(g, NODE(g, XF_OP_MATMUL, x, xf_bt_random_const(g, SHAPE(k, hidden), false)));
        int bias = t % 5 == 4 ? add_input(g, SHAPE(hidden))
                   : t % 3 == 1 ? xf_bt_random_const(g, SHAPE(m, 1), false)
                   : t % 7 == 5 ? xf_bt_random_const(g, SHAPE(1, 1, hidden), false)
                                : xf_bt_random_const(g, SHAPE(hidden), false);
        h = out0(g, t % 2 ? NODE(g, XF_OP_ADD, bias, h) : NODE(g, XF_OP_ADD, h, bias));
        if (t % 3 == 0) {
            int s = out0(g, NODE(g, XF_OP_DIV, h, xf_bt_scalar(g, 1.41421356f, 0)));
            s = out0(g, NODE(g, XF_OP_ERF, s));
            s = out0(g, NODE(g, XF_OP_ADD, s, xf_bt_scalar(g, 1.0f, 0)));
            s = out0(g, NODE(g, XF_OP_MUL, h, s));
            int gelu = out0(g, NODE(g, XF_OP_MUL, s, xf_bt_scalar(g, 0.5f, 0)));
            /* a third reader of x keeps the GELU out of the MatMul */
            h = t == 6 ? out0(g, NODE(g, XF_OP_ADD, gelu, h)) : gelu;
        } else if (t % 3 == 1) {
            h = out0(g, NODE(g, XF_OP_RELU, h));
        }
        /* a scale by a constant: Mul, Div or Sub, constant first or second */
        int scale = xf_bt_scalar(g, 0.125f * (float)xf_bt_rnd(1, 16), (int)xf_bt_rnd(0, 1));
        if (t % 4 == 1)
            h = out0(g, t % 8 == 1 ? NODE(g, XF_OP_MUL, scale, h) : NODE(g, XF_OP_DIV, h, scale));
        else if (t % 4 == 2)
            h = out0(g, t % 8 == 2 ? NODE(g, XF_OP_SUB, scale, h) : NODE(g, XF_OP_SUB, h, scale));
        int y = out0(g, NODE(g, XF_OP_MATMUL, h, xf_bt_random_const(g, SHAPE(hidden, k), false)));
        y = out0(g, NODE(g, XF_OP_ADD, y, xf_bt_random_const(g, SHAPE(k), false)));
        y = out0(g, t % 2 ? NODE(g, XF_OP_ADD, x, y) : NODE(g, XF_OP_ADD, y, x));
        int ln = NODE(g, XF_OP_LAYER_NORM, y, xf_bt_random_const(g, SHAPE(k), false), xf_bt_random_const(g, SHAPE(k), false));
        attrs(g, ln)->axis = -1;
        attrs(g, ln)->epsilon = 1e-5f;
        xf_graph_add_output(g, out0(g, ln));
        char what[48];
        snprintf(what, sizeof what, "MatMul chain case %d", t);
        xf_bt_check_cpu(g, 17, 1e-4, 1e-3, what);
        xf_graph_free(g);
    }
}
END_TEST

/* One-row products (a decoder's token): MatMul of [1, k] or [1, 1, k] by
 * constant or computed [k, n], with a folded bias, a folded residual sum
 * or a folded activation (which keeps oneDNN's matmul), and Gemm with
 * transB, alpha and a bias row; weights small (kept in oneDNN's blocked
 * copy) and over 2 MB (run as sgemm on the weights as stored). */
START_TEST(single_row_products)
{
    if (!xf_bt_have_cpu())
        return;
    xf_bt_seed(71);
    for (int t = 0; t < 12; t++) {
        int64_t k = t % 2 ? xf_bt_rnd(1, 300) : xf_bt_rnd(730, 900), n = t % 2 ? xf_bt_rnd(1, 300) : xf_bt_rnd(730, 900);
        xf_graph *g = xf_graph_create("row");
        int x = add_input(g, t % 3 == 2 ? SHAPE(1, 1, k) : SHAPE(1, k));
        int w = t % 4 == 3 ? out0(g, NODE(g, XF_OP_ABS, add_input(g, SHAPE(k, n))))
                           : xf_bt_random_const(g, SHAPE(k, n), false);
        int y = out0(g, NODE(g, XF_OP_MATMUL, out0(g, NODE(g, XF_OP_ABS, x)), w));
        if (t % 3 == 0)
            y = out0(g, NODE(g, XF_OP_ADD, y, xf_bt_random_const(g, SHAPE(n), false)));
        else if (t % 3 == 1)
            y = out0(g, NODE(g, XF_OP_ADD, y, t % 2 ? out0(g, NODE(g, XF_OP_SIGMOID, y)) : add_input(g, SHAPE(1, n))));
        if (t % 5 == 4)
            y = out0(g, NODE(g, XF_OP_TANH, y));
        xf_graph_add_output(g, y);
        if (t % 3 != 2) { /* Gemm takes 2-D operands */
            int wt = xf_bt_random_const(g, SHAPE(n, k), false);
            int gm = t % 2 ? NODE(g, XF_OP_GEMM, x, wt, xf_bt_random_const(g, SHAPE(n), false))
                           : NODE(g, XF_OP_GEMM, x, wt);
            attrs(g, gm)->trans_b = true;
            attrs(g, gm)->alpha = t % 2 ? 1.0f : 0.5f;
            attrs(g, gm)->beta = 1.0f;
            xf_graph_add_output(g, out0(g, gm));
        }
        char what[48];
        snprintf(what, sizeof what, "single-row case %d", t);
        xf_bt_check_cpu(g, 17, 1e-4, 1e-3, what);
        xf_graph_free(g);
    }
}
END_TEST

/* Nodes that read one initializer share its copy in the layout they want
 * (an RNN's weights at every step): steps of h = tanh(h W + x U + b) with
 * W, U and b shared, a Gemm reading W transposed (another layout, its own
 * copy), and two convolutions sharing a kernel, one of them with a
 * BatchNormalization folded in (weights of its own). */
START_TEST(shared_weights)
{
    if (!xf_bt_have_cpu())
        return;
    xf_bt_seed(61);
    for (int t = 0; t < 4; t++) {
        int64_t k = xf_bt_rnd(3, 40), steps = xf_bt_rnd(2, 5);
        xf_graph *g = xf_graph_create("rnn");
        int x = add_input(g, SHAPE(1, k));
        int w = xf_bt_random_const(g, SHAPE(k, k), false), u = xf_bt_random_const(g, SHAPE(k, k), false);
        int b = xf_bt_random_const(g, SHAPE(k), false);
        int h = out0(g, NODE(g, XF_OP_ABS, x));
        for (int i = 0; i < steps; i++) {
            int hw = out0(g, NODE(g, XF_OP_MATMUL, h, w));
            int xu = out0(g, NODE(g, XF_OP_MATMUL, x, u));
            int z = out0(g, NODE(g, XF_OP_ADD, hw, xu));
            h = out0(g, NODE(g, XF_OP_TANH, out0(g, NODE(g, XF_OP_ADD, z, b))));
        }
        int gm = NODE(g, XF_OP_GEMM, h, w);
        attrs(g, gm)->trans_b = true;
        xf_graph_add_output(g, out0(g, gm));
        int img = add_input(g, SHAPE(1, 4, 6, 6));
        int kernel = xf_bt_random_const(g, SHAPE(4, 4, 3, 3), false);
        int c1 = NODE(g, XF_OP_CONV, img, kernel);
        xf_bt_set_window(attrs(g, c1), 2, NULL, (int64_t[]){1, 1}, (int64_t[]){1, 1}, (int64_t[]){1, 1},
                         (int64_t[]){1, 1});
        int c2 = NODE(g, XF_OP_CONV, out0(g, c1), kernel);
        xf_bt_set_window(attrs(g, c2), 2, NULL, (int64_t[]){1, 1}, (int64_t[]){1, 1}, (int64_t[]){1, 1},
                         (int64_t[]){1, 1});
        int y = t % 2 ? out0(g, NODE(g, XF_OP_RELU, out0(g, c2))) : out0(g, c2);
        xf_graph_add_output(g, bn_node(g, y, 4));
        char what[48];
        snprintf(what, sizeof what, "shared weights case %d", t);
        xf_bt_check_cpu(g, 17, 1e-4, 1e-3, what);
        xf_graph_free(g);
    }
}
END_TEST

/* ---------------------------------------------------------------- whole models */

/* Sessions read what an Identity passes on where it comes from: the
 * running mean and variance PyTorch shares with other initializers
 * through Identity nodes are constants again, and the BatchNormalization
 * folds into the convolution; an Identity of a computed value that is a
 * graph output hands its name to the producer.  No Identity is left. */
START_TEST(identity_of_constants)
{
    if (!xf_bt_have_cpu())
        return;
    xf_graph *g = xf_graph_create("identity");
    int x = xf_bt_conv(g, add_input(g, SHAPE(1, 16, 8, 8)), 16, 16, 3, 1, XF_ACT_NONE);
    int mean = out0(g, NODE(g, XF_OP_IDENTITY, xf_bt_random_const(g, SHAPE(16), false)));
    int var = out0(g, NODE(g, XF_OP_IDENTITY, xf_bt_random_const(g, SHAPE(16), true)));
    int scale = xf_bt_random_const(g, SHAPE(16), false), shift = xf_bt_random_const(g, SHAPE(16), false);
    int bn = node(g, XF_OP_BATCH_NORM, NULL, 5, (int[]){x, scale, shift, mean, var}, 1);
    attrs(g, bn)->epsilon = 1e-5f;
    xf_graph_add_output(g, out0(g, NODE(g, XF_OP_IDENTITY, out0(g, NODE(g, XF_OP_RELU, out0(g, bn))))));
    xf_session *s = NULL;
    xf_error err = {0};
    ck_assert_msg(xf_session_create(g, 17, "cpu", NULL, &s, &err) == XF_OK, "%s", err.msg);
    const xf_graph *sg = xf_session_graph(s);
    for (int i = 0; i < sg->n_nodes; i++) {
        ck_assert_int_ne(sg->nodes[i].op, XF_OP_IDENTITY);
        if (sg->nodes[i].op == XF_OP_BATCH_NORM)
            for (int k = 1; k < 5; k++)
                ck_assert_ptr_nonnull(sg->values[sg->nodes[i].inputs[k]].init);
    }
    ck_assert_str_eq(sg->values[sg->outputs[0]].name, g->values[g->outputs[0]].name);
    xf_session_free(s);
    xf_bt_check_cpu(g, 17, 1e-4, 1e-4, "BatchNormalization statistics through Identity");
    xf_graph_free(g);
}
END_TEST

/* A dynamic session keeps each node's prepared state while its operands
 * keep their shapes, and prepares it again when they change; and the
 * blocks of large values go to the next values of up to twice their size:
 * runs at four input shapes, back and forth, each against cpu_ref. */
START_TEST(dynamic_states_follow_shapes)
{
    if (!xf_bt_have_cpu())
        return;
    xf_graph *g = xf_graph_create("dynamic");
    int x = add_input(g, (xf_shape){.ndim = -1}); /* any shape: the session runs dynamically */
    int c = xf_bt_conv(g, x, 3, 8, 3, 1, XF_ACT_RELU);
    int p = out0(g, NODE(g, XF_OP_GLOBAL_AVERAGE_POOL, c));
    int f = out0(g, NODE(g, XF_OP_FLATTEN, p));
    xf_graph_add_output(g, out0(g, NODE(g, XF_OP_MATMUL, f, xf_bt_random_const(g, SHAPE(8, 5), false))));
    xf_graph_add_output(g, c);
    xf_session *s = NULL, *ref = NULL;
    xf_error err = {0};
    ck_assert_msg(xf_session_create(g, 17, "cpu", NULL, &s, &err) == XF_OK, "%s", err.msg);
    ck_assert_msg(xf_session_create(g, 17, "cpu_ref", NULL, &ref, &err) == XF_OK, "%s", err.msg);
    ck_assert(xf_session_is_dynamic(s));
    /* Convolution outputs of 128, 132, 128 and 84 KiB */
    const xf_shape shapes[] = {SHAPE(1, 3, 64, 64), SHAPE(2, 3, 45, 47), SHAPE(2, 3, 45, 47), SHAPE(1, 3, 64, 64),
                               SHAPE(3, 3, 30, 30)};
    for (int r = 0; r < 5; r++) {
        xf_tensor *in = xf_tensor_random(XF_DT_FLOAT, &shapes[r], 100u + (uint64_t)r);
        xf_tensor *got[2] = {NULL}, *want[2] = {NULL};
        ck_assert_msg(xf_session_run(s, &in, got, &err) == XF_OK, "run %d: %s", r, err.msg);
        ck_assert_msg(xf_session_run(ref, &in, want, &err) == XF_OK, "run %d: %s", r, err.msg);
        for (int k = 0; k < 2; k++) {
            double max_abs = 0, max_rel = 0;
            bool ok = false;
            ck_assert(xf_shape_equal(&got[k]->shape, &want[k]->shape));
            ck_assert(xf_tensor_compare(got[k], want[k], 1e-5, 1e-4, &max_abs, &max_rel, &ok, &err) == XF_OK);
            ck_assert_msg(ok, "run %d, output %d: differs from cpu_ref by %g", r, k, max_abs);
            xf_tensor_release(got[k]);
            xf_tensor_release(want[k]);
        }
        xf_tensor_release(in);
    }
    xf_session_free(s);
    xf_session_free(ref);
    xf_graph_free(g);
}
END_TEST

START_TEST(inception_example)
{
    if (!xf_bt_have_cpu())
        return;
    xf_bt_inception_example(xf_bt_check_cpu);
}
END_TEST

/* Every node case that passes on cpu_ref must pass on cpu. */
START_TEST(conformance_node_cases)
{
    if (!xf_bt_have_cpu())
        return;
    xf_log_set(NULL, NULL, XF_LOG_ERROR);
    xf_conformance_tally t;
    xf_conformance_against_ref("cpu", 0, &t);
    ck_assert_msg(t.listed > 0, "no ONNX test data in %s/node", XF_ONNX_TESTDATA);
    printf("cpu conformance (node): %d cases, %d pass on cpu_ref, %d of those pass on cpu (%d refused)\n%s", t.cases,
           t.ref_pass, t.pass, t.refused, t.failures);
    ck_assert_int_gt(t.ref_pass, 0);
    ck_assert_msg(t.pass == t.ref_pass, "cases passing on cpu_ref but not on cpu:\n%s", t.failures);
}
END_TEST

/* ---------------------------------------------------------------- registry */

START_TEST(registry_and_errors)
{
    const xf_backend *const *list;
    int n = xf_backend_list(&list);
    bool found = false;
    for (int i = 0; i < n; i++)
        found = found || strcmp(list[i]->name, "cpu") == 0;
    ck_assert(found == (xf_backend_find("cpu") != NULL));
    if (!xf_bt_have_cpu())
        return;
    /* an op neither oneDNN nor cpu_ref runs is reported under this backend's name */
    xf_graph *g = xf_graph_create("bad");
    int x = xf_graph_add_input(g, "x", XF_DT_BOOL, &(xf_shape){.ndim = 1, .dims = {4}});
    xf_bt_finish_single(g, XF_OP_RELU, 1, &x);
    xf_session *s = NULL;
    xf_error err = {0};
    ck_assert_int_eq(xf_session_create(g, 17, "cpu", NULL, &s, &err), XF_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(err.msg, "backend cpu ") != NULL, "message: %s", err.msg);
    xf_graph_free(g);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cpu_backend");
    TCase *ops = tcase_create("ops");
    tcase_set_timeout(ops, 300);
    tcase_add_test(ops, conv_random);
    tcase_add_test(ops, conv_runtime_weights);
    tcase_add_test(ops, pool_random);
    tcase_add_test(ops, pool_indices_and_unpool);
    tcase_add_test(ops, matmul_random);
    tcase_add_test(ops, gemm_forms);
    tcase_add_test(ops, binary_broadcasting);
    tcase_add_test(ops, binary_middle_broadcast);
    tcase_add_test(ops, einsum_products);
    tcase_add_test(ops, softmax_axes);
    tcase_add_test(ops, batch_norm_ranks);
    tcase_add_test(ops, concat_axes);
    tcase_add_test(ops, layer_norm_axes);
    tcase_add_test(ops, layer_norm_stats);
    tcase_add_test(ops, transpose_perms);
    suite_add_tcase(s, ops);
    TCase *graphs = tcase_create("graphs");
    tcase_set_timeout(graphs, 300);
    tcase_add_test(graphs, native_runs);
    tcase_add_test(graphs, folded_chains);
    tcase_add_test(graphs, repeated_post_algorithms);
    tcase_add_test(graphs, activation_posts);
    tcase_add_test(graphs, split_parts);
    tcase_add_test(graphs, grouped_conv_between_convs);
    tcase_add_test(graphs, squeeze_excitation);
    tcase_add_test(graphs, reduce_as_global_pool);
    tcase_add_test(graphs, residual_sums);
    tcase_add_test(graphs, matmul_chains);
    tcase_add_test(graphs, shared_weights);
    tcase_add_test(graphs, single_row_products);
    tcase_add_test(graphs, identity_of_constants);
    tcase_add_test(graphs, dynamic_states_follow_shapes);
    tcase_add_test(graphs, inception_example);
    tcase_add_test(graphs, conformance_node_cases);
    tcase_add_test(graphs, registry_and_errors);
    suite_add_tcase(s, graphs);
    return xf_test_run_suite(s);
}
