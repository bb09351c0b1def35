/* GridSample: cpu_ref against hand-computed values and the examples of
 * ONNX's operator documentation, for every mode, padding_mode and
 * align_corners, in 1, 2 and 3 spatial dims; its shape rule and the errors
 * for operands that do not fit; the cpu backend against cpu_ref, and the
 * cuda backend's support check. */
#include "backend_util.h"
#include "kernel_case_util.h"
#include "xf_test_util.h"

#include <check.h>
#include <math.h>
#include <string.h>

#define GS XF_OP_GRID_SAMPLE

enum { LINEAR, NEAREST, CUBIC };
enum { ZEROS, BORDER, REFLECTION };

/* GridSample of x at grid (a graph input, read at run time) under opset. */
static node_case gs_case(xf_tensor *x, xf_tensor *grid, int mode, int padding, int align_corners, int64_t opset)
{
    node_case c = make_case(GS, 2, x, grid);
    c.feed = 2;
    c.opset = opset;
    c.a.grid_mode = mode;
    c.a.grid_padding = padding;
    c.a.grid_align_corners = align_corners;
    return c;
}

/* ------------------------------------------------------------ 2-D */

/* X [1, 1, 2, 3] with rows (1, 2, 4) and (8, 16, 32), sampled on row 0
 * (y = 0 exactly, where every mode's weights along y are those of row 0
 * alone) at three points along x: one left of X, one inside, one beyond
 * the right border by more than the width (reflected twice).
 *
 * align_corners 0: x = ((gx + 1) * 3 - 1) / 2, borders -0.5 and 2.5;
 * gx -1.5, 0.5, 3.5 give x -1.25, 1.75, 6.25.  align_corners 1: x = gx + 1,
 * borders 0 and 2; gx -1.75, -0.5, 3.5 give x -0.75, 0.5, 4.5.
 *
 * Border clamps x into [0, 2]; reflection maps -1.25 and 6.25 to 0.25
 * (align 0), -0.75 to 0.75 and 4.5 to 0.5 (align 1).  Nearest rounds
 * first, ties to even (0.5 -> 0, 4.5 -> 4), then pads the index (-1
 * reflects to 0 at -0.5, to 1 at 0).  Keys' weights (A = -0.75) at a
 * fraction t of 0.25: -0.10546875, 0.87890625, 0.26171875, -0.03515625
 * (reversed at 0.75); at 0.5: -0.09375, 0.59375, 0.59375, -0.09375.
 * Taps outside X read 0 (zeros), the edge (border) or their reflection.
 * For example cubic, zeros, x = 1.75: taps 0..3 read 1, 2, 4, 0:
 * -0.03515625 + 0.26171875 * 2 + 0.87890625 * 4 = 4.00390625. */
static const double row_want[2][3][3][3] = {
    /* align_corners 0: [mode][padding][point] */
    {{{0, 3.5, 0}, {1, 3.5, 4}, {1.25, 3.5, 1.25}},
     {{0, 4, 0}, {1, 4, 4}, {1, 4, 1}},
     {{-0.10546875, 4.00390625, 0}, {1, 3.58203125, 4}, {1.15625, 3.58203125, 1.15625}}},
    /* align_corners 1 */
    {{{0.25, 1.5, 0}, {1, 1.5, 4}, {1.75, 1.5, 1.5}},
     {{0, 1, 0}, {1, 1, 4}, {2, 1, 1}},
     {{0.19140625, 1.40625, 0}, {1, 1.3125, 4}, {1.52734375, 1.21875, 1.21875}}}};

START_TEST(every_mode_padding_and_alignment)
{
    static const char *const modes[] = {"linear", "nearest", "cubic"};
    static const char *const pads[] = {"zeros", "border", "reflection"};
    for (int ac = 0; ac < 2; ac++)
        for (int mode = 0; mode < 3; mode++)
            for (int pad = 0; pad < 3; pad++) {
                xf_tensor *x = F32(DIMS(1, 1, 2, 3), 1, 2, 4, 8, 16, 32);
                xf_tensor *grid = ac ? F32(DIMS(1, 1, 3, 2), -1.75, -1, -0.5, -1, 3.5, -1)
                                     : F32(DIMS(1, 1, 3, 2), -1.5, -0.5, 0.5, -0.5, 3.5, -0.5);
                xf_tensor *y = run1(gs_case(x, grid, mode, pad, ac, 16));
                ck_assert_int_eq(y->dtype, XF_DT_FLOAT);
                ck_assert_int_eq(xf_tensor_numel(y), 3);
                for (int i = 0; i < 3; i++)
                    ck_assert_msg(xf_tensor_get_f64(y, i) == row_want[ac][mode][pad][i],
                                  "%s, %s, align_corners %d, point %d: %.9g, want %.9g", modes[mode], pads[pad], ac,
                                  i, xf_tensor_get_f64(y, i), row_want[ac][mode][pad][i]);
                xf_tensor_release(y);
            }
}
END_TEST

/* The examples of ONNX's GridSample documentation: X [1, 1, 3, 2] = 0..5
 * sampled at 8 points, in each mode and with align_corners; then points
 * outside X under each padding_mode. */
START_TEST(onnx_documentation_examples)
{
#define DOC_X() iota_f32(DIMS(1, 1, 3, 2), 0)
#define DOC_GRID()                                                                                                     \
    F32(DIMS(1, 2, 4, 2), -1, -1, -0.5, -0.5, -0.2, -0.2, 0, 0, 0, 0, -0.2, -0.2, 0.5, 0.5, 1, 1)
#define FAR_GRID()                                                                                                     \
    F32(DIMS(1, 2, 4, 2), -10, -10, -5, -5, -0.2, -0.2, 10, 10, 10, 10, -0.2, -0.2, 5, 5, 10, 10)
    EXPECT(run1(gs_case(DOC_X(), DOC_GRID(), LINEAR, ZEROS, 0, 16)), XF_DT_FLOAT, DIMS(1, 1, 2, 4), 0, 0.5, 1.7, 2.5,
           2.5, 1.7, 4.5, 1.25);
    EXPECT(run1(gs_case(DOC_X(), DOC_GRID(), LINEAR, ZEROS, 1, 16)), XF_DT_FLOAT, DIMS(1, 1, 2, 4), 0, 1.25, 2, 2.5,
           2.5, 2, 3.75, 5);
    EXPECT(run1(gs_case(DOC_X(), DOC_GRID(), NEAREST, ZEROS, 0, 16)), XF_DT_FLOAT, DIMS(1, 1, 2, 4), 0, 0, 2, 2, 2, 2,
           5, 0);
    /* the documentation rounds to 4 decimals; the first point, (-0.5,
     * -0.5), is -0.09375 * 0.59375 + -0.09375 * (0.59375 * 2 - 0.09375 * 3)
     * = -0.140625 exactly */
    static const double cubic[8] = {-0.1406, 0.3828, 1.7556, 2.9688, 2.9688, 1.7556, 5.1445, 1.3906};
    xf_tensor *y = run1(gs_case(DOC_X(), DOC_GRID(), CUBIC, ZEROS, 0, 16));
    ck_assert_int_eq(xf_tensor_numel(y), 8);
    ck_assert_double_eq(xf_tensor_get_f64(y, 0), -0.140625);
    for (int i = 0; i < 8; i++)
        ck_assert_double_eq_tol(xf_tensor_get_f64(y, i), cubic[i], 5e-5);
    xf_tensor_release(y);
    EXPECT(run1(gs_case(DOC_X(), FAR_GRID(), LINEAR, ZEROS, 0, 16)), XF_DT_FLOAT, DIMS(1, 1, 2, 4), 0, 0, 1.7, 0, 0,
           1.7, 0, 0);
    EXPECT(run1(gs_case(DOC_X(), FAR_GRID(), LINEAR, BORDER, 0, 16)), XF_DT_FLOAT, DIMS(1, 1, 2, 4), 0, 0, 1.7, 5, 5,
           1.7, 5, 5);
    EXPECT(run1(gs_case(DOC_X(), FAR_GRID(), LINEAR, REFLECTION, 0, 16)), XF_DT_FLOAT, DIMS(1, 1, 2, 4), 2.5, 0, 1.7,
           2.5, 2.5, 1.7, 5, 2.5);
#undef DOC_X
#undef DOC_GRID
#undef FAR_GRID
}
END_TEST

/* Batches sample their own images with their own grids; every channel is
 * sampled alike.  X [2, 2, 2, 2] = 0..15; image 0 at its centre (the mean
 * of each map), image 1 at its top-left pixel (align_corners 1). */
START_TEST(batches_and_channels)
{
    EXPECT(run1(gs_case(iota_f32(DIMS(2, 2, 2, 2), 0), F32(DIMS(2, 1, 1, 2), 0, 0, -1, -1), LINEAR, ZEROS, 1, 16)),
           XF_DT_FLOAT, DIMS(2, 2, 1, 1), 1.5, 5.5, 8, 12);
}
END_TEST

/* ------------------------------------------------------------ opset 20: other ranks */

/* X [1, 1, 2, 2, 2] with X[z, y, x] = 1 + x + 2y + 4z, which trilinear
 * sampling reproduces inside X; grid holds (x, y, z).  align_corners 0
 * puts x at gx + 0.5 (likewise y, z). */
START_TEST(volumetric)
{
#define RAMP3() F32(DIMS(1, 1, 2, 2, 2), 1, 2, 3, 4, 5, 6, 7, 8)
    /* (0.5, 0.5, 0.5) -> 4.5; (0.75, 0, 0.5) -> 3.75; (1.25, 0.5, 0.5):
     * the tap at x = 2 is outside, 0.75 * X(1, 0.5, 0.5) = 0.75 * 5 */
    xf_tensor *g = F32(DIMS(1, 1, 1, 3, 3), 0, 0, 0, 0.25, -0.5, 0, 0.75, 0, 0);
    EXPECT(run1(gs_case(RAMP3(), g, LINEAR, ZEROS, 0, 20)), XF_DT_FLOAT, DIMS(1, 1, 1, 1, 3), 4.5, 3.75, 3.75);
    /* border reads X(1, 0.5, 0.5) for the outside tap */
    g = F32(DIMS(1, 1, 1, 3, 3), 0, 0, 0, 0.25, -0.5, 0, 0.75, 0, 0);
    EXPECT(run1(gs_case(RAMP3(), g, LINEAR, BORDER, 0, 20)), XF_DT_FLOAT, DIMS(1, 1, 1, 1, 3), 4.5, 3.75, 5);
    /* align_corners 1: x = (gx + 1) / 2: (0, 0, 0) -> the centre, 4.5;
     * (1, -1, 0.5) -> (1, 0, 0.75): 1 + 1 + 3 */
    g = F32(DIMS(1, 2, 1, 1, 3), 0, 0, 0, 1, -1, 0.5);
    EXPECT(run1(gs_case(RAMP3(), g, LINEAR, ZEROS, 1, 20)), XF_DT_FLOAT, DIMS(1, 1, 2, 1, 1), 4.5, 5);
    /* nearest rounds ties to even in 3-D too: (0.75, 0, 0.5) -> (1, 0, 0) */
    g = F32(DIMS(1, 1, 1, 1, 3), 0.25, -0.5, 0);
    EXPECT(run1(gs_case(RAMP3(), g, NEAREST, ZEROS, 0, 20)), XF_DT_FLOAT, DIMS(1, 1, 1, 1, 1), 2);
#undef RAMP3
}
END_TEST

/* One spatial dim: X [1, 1, 3] = (1, 2, 4), align_corners 1 (x = gx + 1):
 * x 0.5 and 1.25 give 1.5 and 2.5 linearly; cubically 1.40625 at 0.5
 * (as in the 2-D table, row 0). */
START_TEST(one_spatial_dim)
{
    EXPECT(run1(gs_case(F32(DIMS(1, 1, 3), 1, 2, 4), F32(DIMS(1, 2, 1), -0.5, 0.25), LINEAR, ZEROS, 1, 20)),
           XF_DT_FLOAT, DIMS(1, 1, 2), 1.5, 2.5);
    EXPECT(run1(gs_case(F32(DIMS(1, 1, 3), 1, 2, 4), F32(DIMS(1, 1, 1), -0.5), CUBIC, ZEROS, 1, 20)), XF_DT_FLOAT,
           DIMS(1, 1, 1), 1.40625);
}
END_TEST

/* ------------------------------------------------------------ values and types */

/* A NaN coordinate gives NaN; an infinite one is clamped by border padding
 * and gives NaN otherwise. */
START_TEST(non_finite_grid)
{
    for (int pad = 0; pad < 3; pad++) {
        xf_tensor *y = run1(gs_case(iota_f32(DIMS(1, 1, 2, 2), 1), F32(DIMS(1, 1, 2, 2), NAN, 0, INFINITY, -1),
                                    LINEAR, pad, 1, 16));
        ck_assert(isnan(xf_tensor_get_f64(y, 0)));
        if (pad == BORDER)
            ck_assert_double_eq(xf_tensor_get_f64(y, 1), 2); /* (1, 0): X[0, 1] */
        else
            ck_assert(isnan(xf_tensor_get_f64(y, 1)));
        xf_tensor_release(y);
    }
}
END_TEST

/* double computes in double (0.1 is not rounded to float); float16 in
 * float, rounded once; the grid may be of another float type than X. */
START_TEST(other_precisions)
{
    static const double xd[4] = {0, 1, 2, 3}, gd[2] = {-0.8, -1};
    /* align_corners 1: x = 0.1, y = 0 */
    xf_tensor *y = run1(gs_case(mk(XF_DT_DOUBLE, DIMS(1, 1, 2, 2), xd), mk(XF_DT_DOUBLE, DIMS(1, 1, 1, 2), gd), LINEAR,
                                ZEROS, 1, 16));
    ck_assert_int_eq(y->dtype, XF_DT_DOUBLE);
    ck_assert_double_eq_tol(((const double *)y->data)[0], (1 - 0.8) / 2, 1e-15);
    xf_tensor_release(y);
    uint16_t xh[4], gh[2];
    for (int i = 0; i < 4; i++)
        xh[i] = xf_f32_to_f16((float)i);
    gh[0] = xf_f32_to_f16(0);
    gh[1] = xf_f32_to_f16(0);
    EXPECT(run1(gs_case(mk(XF_DT_FLOAT16, DIMS(1, 1, 2, 2), xh), mk(XF_DT_FLOAT16, DIMS(1, 1, 1, 2), gh), LINEAR, ZEROS,
                        1, 16)),
           XF_DT_FLOAT16, DIMS(1, 1, 1, 1), 1.5);
    EXPECT(run1(gs_case(iota_f32(DIMS(1, 1, 2, 2), 0), mk(XF_DT_DOUBLE, DIMS(1, 1, 1, 2), gd), LINEAR, ZEROS, 1, 16)),
           XF_DT_FLOAT, DIMS(1, 1, 1, 1), 0.1);
}
END_TEST

/* Float maps with 2 spatial dims take a kernel of their own (bilinear
 * points with every tap inside X without the taps' tests); a volume of
 * depth 1 sampled at z = 0 (weight 1 on its one plane, in every mode and
 * alignment) takes the general one.  On random maps, with a block of -0
 * in each, and grids reaching past the borders: the same bytes, in linear and
 * nearest mode (cubic has no 3-D form), every padding and alignment. */
START_TEST(planar_kernel_matches_volume_of_depth_one)
{
    enum { N = 2, C = 3, H = 9, W = 11, OH = 7, OW = 8 };
    static float x[N * C * H * W], g2[N * OH * OW * 2], g3[N * OH * OW * 3];
    uint64_t r = 12345;
    for (int i = 0; i < N * C * H * W; i++) {
        r = r * 6364136223846793005u + 1442695040888963407u;
        int row = i / W % H, col = i % W; /* a block of -0 in every map, where whole sums are -0 */
        x[i] = row >= 2 && row < 6 && col >= 3 && col < 7 ? -0.0f
                                                          : (float)((double)(r >> 11) / 9007199254740992.0 * 4 - 2);
    }
    for (int p = 0; p < N * OH * OW; p++)
        for (int k = 0; k < 2; k++) {
            r = r * 6364136223846793005u + 1442695040888963407u;
            g2[2 * p + k] = g3[3 * p + k] = (float)((double)(r >> 11) / 9007199254740992.0 * 2.6 - 1.3);
            g3[3 * p + 2] = 0;
        }
    for (int form = 0; form < 12; form++) {
        int mode = form / 6 ? NEAREST : LINEAR, padding = form % 3, align = form / 3 % 2;
        xf_tensor *y2 = run1(gs_case(mk(XF_DT_FLOAT, DIMS(N, C, H, W), x), mk(XF_DT_FLOAT, DIMS(N, OH, OW, 2), g2),
                                     mode, padding, align, 20));
        xf_tensor *y3 = run1(gs_case(mk(XF_DT_FLOAT, DIMS(N, C, 1, H, W), x),
                                     mk(XF_DT_FLOAT, DIMS(N, 1, OH, OW, 3), g3), mode, padding, align, 20));
        ck_assert_int_eq(xf_tensor_numel(y2), N * C * OH * OW);
        ck_assert_int_eq(xf_tensor_numel(y3), N * C * OH * OW);
        ck_assert_msg(memcmp(y2->data, y3->data, sizeof(float) * N * C * OH * OW) == 0,
                      "mode %d, padding %d, align_corners %d: the planar kernel differs", mode, padding, align);
        xf_tensor_release(y2);
        xf_tensor_release(y3);
    }
}
END_TEST

/* ------------------------------------------------------------ other backends */

/* A GridSample of graph inputs X [2, 3, 5, 4] (or [2, 3, 2, 5, 4]) and a
 * grid of 3 x 6 points per image. */
static xf_graph *gs_graph(int rank, int mode, int padding, int align_corners)
{
    xf_graph *g = xf_graph_create("gs");
    int ins[2] = {xf_bt_input(g, XF_DT_FLOAT, rank == 4 ? xf_shape_make(DIMS(2, 3, 5, 4))
                                                       : xf_shape_make(DIMS(2, 3, 2, 5, 4))),
                  xf_bt_input(g, XF_DT_FLOAT, rank == 4 ? xf_shape_make(DIMS(2, 3, 6, 2))
                                                       : xf_shape_make(DIMS(2, 1, 3, 6, 3)))};
    int node = xf_bt_finish_single(g, GS, 2, ins);
    g->nodes[node].attrs.grid_mode = mode;
    g->nodes[node].attrs.grid_padding = padding;
    g->nodes[node].attrs.grid_align_corners = align_corners;
    return g;
}

/* The cpu backend runs GridSample as cpu_ref does, on random X and grids,
 * in every mode and padding_mode: through cpu_ref's kernel exactly, but
 * bilinear sampling of 2 spatial dims, whose points with every tap inside
 * X it computes in float (within a few ulp). */
START_TEST(cpu_backend_matches)
{
    for (int form = 0; form < 9; form++) {
        xf_graph *g = gs_graph(4, form / 3, form % 3, form % 2);
        double tol = form / 3 == LINEAR ? 1e-6 : 0;
        xf_bt_check_graph(g, 16, "cpu", true, tol, tol, "GridSample");
        xf_graph_free(g);
    }
    xf_graph *g = gs_graph(5, LINEAR, REFLECTION, 0);
    xf_bt_check_graph(g, 20, "cpu", true, 0, 0, "GridSample, 3 spatial dims");
    xf_graph_free(g);
}
END_TEST

/* The cpu backend's own bilinear kernel (float maps, 2 spatial dims):
 * points inside X in its loop, the rest (past a border, NaN or infinite
 * coordinates) through cpu_ref's kernel, one image and many, every
 * padding and alignment, maps of one row or column (no point inside);
 * the node's implementation is that loop. */
START_TEST(cpu_bilinear_kernel)
{
    if (!xf_bt_have_cpu())
        return;
    static const int64_t forms[][6] = {/* N, C, H, W, grid H, grid W */
                                       {8, 16, 20, 17, 30, 4}, {1, 5, 9, 11, 7, 13}, {3, 2, 1, 6, 5, 5},
                                       {2, 3, 7, 1, 4, 4}};
    static float grid[8 * 30 * 4 * 2];
    for (int f = 0; f < 4; f++)
        for (int pad = 0; pad < 3; pad++) {
            const int64_t *d = forms[f];
            uint64_t r = 77u + (uint64_t)f;
            for (int64_t i = 0; i < d[0] * d[4] * d[5] * 2; i++) {
                r = r * 6364136223846793005u + 1442695040888963407u;
                grid[i] = (float)((double)(r >> 11) / 9007199254740992.0 * 2.5 - 1.25); /* some past the borders */
            }
            grid[0] = NAN;
            grid[3] = INFINITY;
            grid[4] = -INFINITY;
            xf_graph *g = xf_graph_create("gs");
            xf_shape gshape = xf_shape_make(DIMS(d[0], d[4], d[5], 2));
            xf_tensor *gt = xf_tensor_from_data(XF_DT_FLOAT, &gshape, grid);
            ck_assert_ptr_nonnull(gt);
            int ins[2] = {xf_bt_input(g, XF_DT_FLOAT, xf_shape_make(DIMS(d[0], d[1], d[2], d[3]))),
                          xf_graph_add_initializer(g, NULL, gt)};
            xf_tensor_release(gt);
            int node = xf_bt_finish_single(g, GS, 2, ins);
            g->nodes[node].attrs.grid_padding = pad;
            g->nodes[node].attrs.grid_align_corners = (f + pad) % 2;
            xf_bt_check_graph(g, 16, "cpu", true, 1e-6, 1e-6, "GridSample, bilinear");
            xf_session *s = NULL;
            xf_error e = {0};
            ck_assert_msg(xf_session_create(g, 16, "cpu", NULL, &s, &e) == XF_OK, "%s", e.msg);
            char impl[64];
            xf_session_node_impl(s, 0, impl, sizeof impl);
            ck_assert_str_eq(impl, "own loop");
            xf_session_free(s);
            xf_graph_free(g);
        }
}
END_TEST

/* The cuda backend has no device path for GridSample: it takes the node
 * (to run through cpu_ref on host copies), which gets session creation
 * past the support check to the device (absent here, or the GPU, which
 * then gives cpu_ref's values); cubic sampling in 3 dims it refuses by
 * name, as cpu_ref does. */
START_TEST(cuda_backend_takes_it)
{
    if (!xf_backend_find("cuda"))
        return;
    xf_graph *g = gs_graph(4, CUBIC, BORDER, 1);
    xf_session *s = NULL;
    xf_error e = {0};
    xf_status st = xf_session_create(g, 16, "cuda", NULL, &s, &e);
    ck_assert_msg(st == XF_OK || (st == XF_ERR_UNSUPPORTED && !strncmp(e.msg, "no CUDA device: ", 16)), "%s", e.msg);
    xf_session_free(s);
    if (st == XF_OK)
        xf_bt_check_graph(g, 16, "cuda", false, 0, 0, "GridSample on cuda");
    xf_graph_free(g);
    g = gs_graph(5, CUBIC, ZEROS, 0);
    ck_assert_int_eq(xf_session_create(g, 20, "cuda", NULL, &s, &e), XF_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(e.msg, "backend cuda does not support op GridSample (node "), "%s", e.msg);
    xf_graph_free(g);
}
END_TEST

/* ------------------------------------------------------------ errors */

/* Operands that do not fit fail inference, naming the node. */
START_TEST(shape_errors)
{
    expect_infer_error(gs_case(iota_f32(DIMS(1, 1, 3, 2), 0), iota_f32(DIMS(1, 2, 4, 3), 0), LINEAR, ZEROS, 0, 16),
                       "grid's last dim must be 2 (one coordinate per spatial dim of X), got 1x2x4x3");
    expect_infer_error(gs_case(iota_f32(DIMS(1, 1, 3, 2), 0), iota_f32(DIMS(1, 8, 2), 0), LINEAR, ZEROS, 0, 16),
                       "grid must have rank 4 (X's) for 2 spatial dims, got 1x8x2");
    expect_infer_error(gs_case(iota_f32(DIMS(1, 1, 2, 2, 2), 0), F32(DIMS(1, 1, 1, 1, 2), 0, 0), LINEAR, ZEROS, 0, 20),
                       "grid's last dim must be 3");
    expect_infer_error(gs_case(iota_f32(DIMS(2, 1, 3, 2), 0), F32(DIMS(1, 1, 1, 2), 0, 0), LINEAR, ZEROS, 0, 16),
                       "grid's batch 1 differs from X's 2");
    expect_infer_error(gs_case(iota_f32(DIMS(1, 1, 2, 2, 2), 0), F32(DIMS(1, 1, 1, 1, 3), 0, 0, 0), LINEAR, ZEROS, 0,
                               16),
                       "X must have shape [N, C, H, W] before opset 20, got 1x1x2x2x2");
    expect_infer_error(gs_case(iota_f32(DIMS(1, 4), 0), F32(DIMS(1, 1), 0), LINEAR, ZEROS, 0, 20),
                       "X must have shape [N, C, D1, ...] (rank 3 or more), got 1x4");
    expect_infer_error(gs_case(iota_f32(DIMS(1, 1, 3, 2), 0), I32(DIMS(1, 1, 1, 2), 0, 0), LINEAR, ZEROS, 0, 16),
                       "grid must be a floating-point tensor, got INT32");
    node_case c = gs_case(iota_f32(DIMS(1, 1, 3, 2), 0), F32(DIMS(1, 1, 1, 2), 0, 0), LINEAR, ZEROS, 0, 16);
    c.a.grid_padding = 3;
    expect_infer_error(c, "padding_mode 3");
}
END_TEST

/* Cubic sampling in 3 spatial dims is refused by name when the session is
 * made; an empty X has nothing to sample. */
START_TEST(refusals)
{
    node_case c = gs_case(iota_f32(DIMS(1, 1, 2, 2, 2), 0), F32(DIMS(1, 1, 1, 1, 3), 0, 0, 0), CUBIC, ZEROS, 0, 20);
    c.feed = 3;
    xf_graph *g = case_graph(&c);
    xf_session *s = NULL;
    xf_error e = {0};
    ck_assert_int_eq(xf_session_create(g, 20, "cpu_ref", NULL, &s, &e), XF_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(e.msg, "GridSample in mode cubic on 3 spatial dims (1 or 2 only) (node 'n0')"), "%s", e.msg);
    xf_graph_free(g);
    release_case(&c);
    expect_run_error(gs_case(iota_f32(DIMS(1, 1, 0, 2), 0), F32(DIMS(1, 1, 1, 2), 0, 0), LINEAR, ZEROS, 0, 16),
                     "X's spatial dims are empty");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sample");
    TCase *tc = tcase_create("grid_sample");
    tcase_add_test(tc, every_mode_padding_and_alignment);
    tcase_add_test(tc, onnx_documentation_examples);
    tcase_add_test(tc, batches_and_channels);
    tcase_add_test(tc, volumetric);
    tcase_add_test(tc, one_spatial_dim);
    tcase_add_test(tc, non_finite_grid);
    tcase_add_test(tc, other_precisions);
    tcase_add_test(tc, planar_kernel_matches_volume_of_depth_one);
    tcase_add_test(tc, cpu_backend_matches);
    tcase_add_test(tc, cpu_bilinear_kernel);
    tcase_add_test(tc, cuda_backend_takes_it);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, shape_errors);
    tcase_add_test(tc, refusals);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
