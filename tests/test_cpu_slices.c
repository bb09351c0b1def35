/* The cpu backend's elementwise ops that run on cpu_ref's kernels over
 * slices of the output, one per thread (cpu_dnnl_slices.c), against one
 * cpu_ref run: the same bytes, for outputs large enough to be split, with
 * inputs that are sliced with the output, read whole (broadcast on the
 * row dims), or broadcast so that only some leading dims can be rows;
 * RoiAlign and MaxRoiPool over slices of their ROIs, Reduce ops over a
 * dim they keep and GridSample over images or channels.
 * ctest runs the suite on three threads (OMP_NUM_THREADS=3), so that the
 * slices are uneven; run by hand, it takes OpenMP's default. */
#include "backend_util.h"
#include "core_builders.h"
#include "xf_runtime.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check(xf_graph *g, const char *what)
{
    xf_graph_add_output(g, out0(g, g->n_nodes - 1));
    xf_bt_check_graph(g, 18, "cpu", true, 0, 0, what);
    xf_graph_free(g);
}

static int in(xf_graph *g, xf_dtype t, xf_shape s) { return xf_bt_input(g, t, s); }

/* x < 0 (about half true for random floats) */
static int negative(xf_graph *g, xf_shape s)
{
    float zero = 0;
    return out0(g, NODE(g, XF_OP_LESS, in(g, XF_DT_FLOAT, s), constant(g, NULL, XF_DT_FLOAT, SCALAR, &zero)));
}

START_TEST(unary_and_cast)
{
    if (!xf_bt_have_cpu())
        return;
    xf_graph *g = xf_graph_create("isnan");
    /* Log of the negative half is NaN */
    NODE(g, XF_OP_IS_NAN, out0(g, NODE(g, XF_OP_LOG, in(g, XF_DT_FLOAT, SHAPE(2, 3, 64, 65)))));
    check(g, "IsNaN of Log");

    g = xf_graph_create("not");
    NODE(g, XF_OP_NOT, negative(g, SHAPE(3, 17, 401)));
    check(g, "Not");

    static const xf_dtype to[] = {XF_DT_INT32, XF_DT_FLOAT16, XF_DT_BOOL, XF_DT_DOUBLE, XF_DT_UINT8};
    for (size_t i = 0; i < sizeof to / sizeof *to; i++) {
        g = xf_graph_create("cast");
        int n = NODE(g, XF_OP_CAST, in(g, XF_DT_FLOAT, SHAPE(9, 7, 11, 31)));
        attrs(g, n)->to = to[i];
        check(g, "Cast of float");
    }
    g = xf_graph_create("cast_i64");
    attrs(g, NODE(g, XF_OP_CAST, in(g, XF_DT_INT64, SHAPE(1, 50000))))->to = XF_DT_FLOAT;
    check(g, "Cast of int64 to float");
}
END_TEST

START_TEST(broadcasting)
{
    if (!xf_bt_have_cpu())
        return;
    /* (Where runs on a loop of the backend's own now, cpu_dnnl_loops.c:
     * these two check it on three threads) the condition read whole on the
     * first dim, sliced on none after it */
    xf_graph *g = xf_graph_create("where");
    int c = negative(g, SHAPE(2, 1, 1, 65));
    NODE(g, XF_OP_WHERE, c, in(g, XF_DT_FLOAT, SHAPE(2, 3, 64, 65)), in(g, XF_DT_FLOAT, SHAPE(65)));
    check(g, "Where, condition [2,1,1,65]");

    /* an attention mask's form: the condition whole, both values scalars */
    g = xf_graph_create("where_mask");
    float lo = -3.4e38f, zero = 0;
    NODE(g, XF_OP_WHERE, negative(g, SHAPE(1, 2, 128, 128)), constant(g, NULL, XF_DT_FLOAT, SCALAR, &lo),
         constant(g, NULL, XF_DT_FLOAT, SCALAR, &zero));
    check(g, "Where, scalar values");

    /* only the first dim can be rows */
    g = xf_graph_create("and");
    NODE(g, XF_OP_AND, negative(g, SHAPE(48, 1, 90)), negative(g, SHAPE(48, 100, 1)));
    check(g, "And, [48,1,90] and [48,100,1]");

    /* three inputs: rows over the first two dims of the output */
    g = xf_graph_create("sum");
    NODE(g, XF_OP_SUM, in(g, XF_DT_FLOAT, SHAPE(1, 1, 40, 300)), in(g, XF_DT_FLOAT, SHAPE(7, 1, 300)),
         in(g, XF_DT_FLOAT, SHAPE(7, 40, 1)));
    check(g, "Sum of three");

    /* integer arithmetic, which no primitive runs */
    g = xf_graph_create("add_i64");
    NODE(g, XF_OP_ADD, in(g, XF_DT_INT64, SHAPE(33, 1, 500)), in(g, XF_DT_INT64, SHAPE(500)));
    check(g, "Add of int64");

    g = xf_graph_create("mod");
    NODE(g, XF_OP_MOD, in(g, XF_DT_INT32, SHAPE(20, 30, 40)), in(g, XF_DT_INT32, SHAPE(30, 1)));
    check(g, "Mod of int32");

    g = xf_graph_create("shift");
    int n = NODE(g, XF_OP_BIT_SHIFT, in(g, XF_DT_UINT8, SHAPE(40, 400)), in(g, XF_DT_UINT8, SHAPE(400)));
    attrs(g, n)->shift_right = 1;
    check(g, "BitShift of uint8");

    /* absent and scalar inputs */
    g = xf_graph_create("clip");
    int32_t bounds[2] = {2, 7};
    NODE(g, XF_OP_CLIP, in(g, XF_DT_INT32, SHAPE(6, 5, 4, 3, 200)), constant(g, NULL, XF_DT_INT32, SCALAR, &bounds[0]),
         constant(g, NULL, XF_DT_INT32, SCALAR, &bounds[1]));
    check(g, "Clip of int32");
    g = xf_graph_create("clip_max");
    NODE(g, XF_OP_CLIP, in(g, XF_DT_INT32, SHAPE(6, 5, 4, 3, 200)), -1,
         constant(g, NULL, XF_DT_INT32, SCALAR, &bounds[1]));
    check(g, "Clip of int32, max only");
}
END_TEST

/* RoiAlign (both modes) and MaxRoiPool split over their ROIs: nine ROIs,
 * inside the maps, across their borders and beyond them, of both images;
 * 17,280 output elements. */
START_TEST(rois)
{
    if (!xf_bt_have_cpu())
        return;
    static const float boxes[9][4] = {{0, 0, 23, 19},   {2.5f, 3, 9, 7},   {-4, -3, 6, 5},   {20, 15, 30, 28},
                                      {5, 5, 5.5f, 5.5f}, {1, 10, 22, 12}, {30, 30, 40, 40}, {0, 0, 1, 1},
                                      {7, 2, 16, 18}};
    static const int64_t images[9] = {0, 1, 1, 0, 1, 0, 1, 0, 1};
    float pool_rois[9][5];
    for (int r = 0; r < 9; r++) {
        pool_rois[r][0] = (float)images[r];
        for (int k = 0; k < 4; k++)
            pool_rois[r][1 + k] = boxes[r][k];
    }
    for (int form = 0; form < 3; form++) {
        xf_graph *g = xf_graph_create("rois");
        int x = in(g, XF_DT_FLOAT, SHAPE(2, 64, 20, 24));
        int y = form < 2 ? NODE(g, XF_OP_ROI_ALIGN, x, constant(g, NULL, XF_DT_FLOAT, SHAPE(9, 4), boxes),
                                constant(g, NULL, XF_DT_INT64, SHAPE(9), images))
                         : NODE(g, XF_OP_MAX_ROI_POOL, x, constant(g, NULL, XF_DT_FLOAT, SHAPE(9, 5), pool_rois));
        xf_attrs *a = attrs(g, y);
        a->roi_output_h = 5;
        a->roi_output_w = 6;
        a->roi_sampling_ratio = 2;
        a->roi_spatial_scale = 1.0f;
        a->roi_max = form == 1;
        check(g, form == 0 ? "RoiAlign, avg" : form == 1 ? "RoiAlign, max" : "MaxRoiPool");
    }
}
END_TEST

/* Reduce ops split along the first dim over 1 when it is kept: a sum of
 * doubles over two axes apart (axes as an input; floats are reduced a run
 * at a time, test_cpu_reduce, and over one run, as RT-DETR's sum of 12
 * samples per query, on oneDNN), the largest of 80 class
 * scores, reductions over inner dims and over a middle one after a batch
 * of 5, and one whose first dim over 1 is reduced (one run). */
START_TEST(reductions)
{
    if (!xf_bt_have_cpu())
        return;
    static const struct {
        xf_op op;
        xf_shape shape;
        int n_axes;
        int64_t axes[2];
        int keepdims;
        bool as_input, doubles;
    } forms[] = {
        {XF_OP_REDUCE_SUM, {4, {8, 32, 300, 12}}, 2, {1, -1}, 0, true, true},
        {XF_OP_REDUCE_MAX, {3, {1, 8400, 80}}, 1, {-1}, 0, false},
        {XF_OP_REDUCE_LOG_SUM_EXP, {4, {2, 3, 50, 60}}, 2, {2, 3}, 1, false},
        {XF_OP_REDUCE_L2, {4, {1, 1, 700, 30}}, 1, {3}, 1, true},
        {XF_OP_REDUCE_MIN, {3, {5, 700, 3}}, 1, {1}, 0, false},
        {XF_OP_REDUCE_SUM_SQUARE, {3, {1, 700, 30}}, 1, {1}, 1, false},
        /* axes that are not one run, of doubles (floats': test_cpu_reduce) */
        {XF_OP_REDUCE_MAX, {4, {6, 40, 5, 30}}, 2, {1, 3}, 1, false, true},
        {XF_OP_REDUCE_LOG_SUM_EXP, {4, {6, 40, 5, 30}}, 2, {0, 2}, 0, false, true},
    };
    for (size_t f = 0; f < sizeof forms / sizeof *forms; f++) {
        xf_graph *g = xf_graph_create("reduce");
        xf_bt_reduce(g, forms[f].op, in(g, forms[f].doubles ? XF_DT_DOUBLE : XF_DT_FLOAT, forms[f].shape),
                     forms[f].axes, forms[f].n_axes, forms[f].as_input, forms[f].keepdims);
        char what[64];
        snprintf(what, sizeof what, "%s, form %zu", xf_op_name(forms[f].op), f);
        check(g, what);
    }
}
END_TEST

/* GridSample split over its images, and one image's over its channels:
 * in the modes cpu_ref's kernel runs for the cpu backend (nearest and
 * cubic; bilinear has a loop of the backend's own), grids reaching past
 * X's borders. */
START_TEST(grid_samples)
{
    if (!xf_bt_have_cpu())
        return;
    for (int form = 0; form < 6; form++) {
        if (form % 3 == 0)
            continue; /* bilinear */
        int64_t images = form < 3 ? 8 : 1, channels = form < 3 ? 8 : 24;
        xf_graph *g = xf_graph_create("grid_sample");
        int x = in(g, XF_DT_FLOAT, SHAPE(images, channels, 20, 17));
        int grid = out0(g, NODE(g, XF_OP_MUL, in(g, XF_DT_FLOAT, SHAPE(images, 30, 40, 2)),
                                xf_bt_scalar(g, 1.25f, 0)));
        xf_attrs *a = attrs(g, NODE(g, XF_OP_GRID_SAMPLE, x, grid));
        a->grid_mode = form % 3;
        a->grid_padding = form / 2 % 3;
        a->grid_align_corners = form % 2;
        check(g, form < 3 ? "GridSample of 8 images" : "GridSample of one image");
    }
}
END_TEST

/* Below a few thousand elements per thread: one run. */
START_TEST(small)
{
    if (!xf_bt_have_cpu())
        return;
    xf_graph *g = xf_graph_create("small");
    NODE(g, XF_OP_IS_NAN, out0(g, NODE(g, XF_OP_LOG, in(g, XF_DT_FLOAT, SHAPE(3, 1000)))));
    check(g, "IsNaN, 3000 elements");
    g = xf_graph_create("scalar");
    NODE(g, XF_OP_EQUAL, in(g, XF_DT_INT64, SCALAR), in(g, XF_DT_INT64, SCALAR));
    check(g, "Equal of scalars");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cpu_slices");
    TCase *tc = tcase_create("slices");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, unary_and_cast);
    tcase_add_test(tc, broadcasting);
    tcase_add_test(tc, rois);
    tcase_add_test(tc, reductions);
    tcase_add_test(tc, grid_samples);
    tcase_add_test(tc, small);
    suite_add_tcase(s, tc);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
