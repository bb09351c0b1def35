/* The image ops: Col2Im, CenterCropPad, AffineGrid, DeformConv and
 * MaxRoiPool on cpu_ref against values worked by hand (said where) or
 * computed by ONNX's reference implementation (onnx 1.23's
 * onnx.reference, rounded to float; MaxRoiPool's by hand, as onnx 1.23
 * has no reference for it); their shape rules and the errors for operands
 * that do not fit, naming the node; their attributes through import and
 * export, and the values xflow does not model staying opaque; the cpu
 * backend against cpu_ref, and the cuda backend's support check. */
#include "backend_util.h"
#include "kernel_case_util.h"
#include "proto_util.h"
#include "xf_test_util.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ Col2Im */

/* Col2Im of x into image_shape by block_shape (initializers, or graph
 * inputs when feed: then the shape is known only per run). */
static node_case col2im_case(xf_tensor *x, xf_tensor *image, xf_tensor *block, bool feed)
{
    node_case c = make_case(XF_OP_COL2IM, 3, x, image, block);
    c.feed = feed ? 7 : 1;
    c.opset = 18;
    return c;
}

static void set_window(xf_attrs *a, int n, const int64_t *strides, const int64_t *dilations, const int64_t *pads)
{
    a->n_spatial = n;
    for (int i = 0; i < n; i++) {
        a->strides[i] = strides[i];
        a->dilations[i] = dilations[i];
        a->pads[i] = pads[i];
        a->pads[n + i] = pads[n + i];
    }
}

/* ONNX's documented example: [1, 5, 5] holding 1..25, blocks of 1 x 5 of a
 * 5 x 5 image: column k of block l is pixel (l, k), so the image is the
 * input transposed.  In 1-D, blocks of 2 of a 4-long image overlap and add:
 * columns (1, 2, 3) and (10, 20, 30) give 1, 2 + 10, 3 + 20, 30. */
START_TEST(col2im_by_hand)
{
    for (int feed = 0; feed < 2; feed++) {
        double want[25];
        for (int i = 0; i < 25; i++)
            want[i] = 1 + 5 * (i % 5) + i / 5;
        expect(run1(col2im_case(iota_f32(DIMS(1, 5, 5), 1), I64(DIMS(2), 5, 5), I64(DIMS(2), 1, 5), feed)),
               XF_DT_FLOAT, DIMS(1, 1, 5, 5), want);
        EXPECT(run1(col2im_case(F32(DIMS(1, 2, 3), 1, 2, 3, 10, 20, 30), I64(DIMS(1), 4), I64(DIMS(1), 2), feed)),
               XF_DT_FLOAT, DIMS(1, 1, 4), 1, 12, 23, 30);
    }
}
END_TEST

/* Strides (1, 2), dilations (2, 1), pads (1, 0, 0, 1): blocks of 2 x 2 of
 * a 3 x 4 image fall on a 2 x 2 grid; input [1, 8, 4] holding 1..32, two
 * channels; the reference's values. */
START_TEST(col2im_window_attributes)
{
    static const double want[24] = {3,  7,  4,  8,  9,  13, 10, 14, 11, 15, 12, 16,
                                    19, 23, 20, 24, 25, 29, 26, 30, 27, 31, 28, 32};
    for (int dt = 0; dt < 2; dt++) {
        xf_tensor *x = iota_f32(DIMS(1, 8, 4), 1);
        if (dt) {
            double v[32];
            for (int i = 0; i < 32; i++)
                v[i] = 1 + i;
            xf_tensor_release(x);
            x = mk(XF_DT_DOUBLE, DIMS(1, 8, 4), v);
        }
        node_case c = col2im_case(x, I64(DIMS(2), 3, 4), I64(DIMS(2), 2, 2), dt);
        set_window(&c.a, 2, (int64_t[]){1, 2}, (int64_t[]){2, 1}, (int64_t[]){1, 0, 0, 1});
        expect(run1(c), dt ? XF_DT_DOUBLE : XF_DT_FLOAT, DIMS(1, 2, 3, 4), want);
    }
}
END_TEST

START_TEST(col2im_shape_errors)
{
    expect_infer_error(col2im_case(iota_f32(DIMS(1, 5, 4), 0), I64(DIMS(2), 5, 5), I64(DIMS(2), 1, 5), false),
                       "input's dim 2 (4) is not the 5 blocks image_shape [5,5] holds");
    expect_infer_error(col2im_case(iota_f32(DIMS(1, 4, 5), 0), I64(DIMS(2), 5, 5), I64(DIMS(2), 1, 5), false),
                       "input's dim 1 (4) is not a multiple of the block's 5 elements");
    expect_infer_error(col2im_case(iota_f32(DIMS(1, 5, 5), 0), I64(DIMS(2), 5, 5), I64(DIMS(1), 5), false),
                       "must have one entry per spatial dim");
    expect_infer_error(col2im_case(iota_f32(DIMS(1, 5, 5), 0), I64(DIMS(2), 5, 2), I64(DIMS(2), 1, 5), false),
                       "spatial dim 1: a block spans 5 but the padded image only 2");
    expect_infer_error(col2im_case(iota_f32(DIMS(1, 5, 5), 0), I64(DIMS(2), 5, 5), I64(DIMS(2), (int64_t)1 << 62, 5),
                                   false),
                       "spatial dim 0: image extent 5, block extent 4611686018427387904, stride 1 and dilation 1 must "
                       "be positive (and below 2^31)");
    expect_infer_error(col2im_case(iota_f32(DIMS(5, 5), 0), I64(DIMS(2), 5, 5), I64(DIMS(2), 1, 5), false),
                       "input must have shape [N, C * prod(block_shape), L], got 5x5");
    node_case c = col2im_case(iota_f32(DIMS(1, 5, 5), 0), I64(DIMS(2), 5, 5), I64(DIMS(2), 1, 5), false);
    set_window(&c.a, 1, (int64_t[]){1}, (int64_t[]){1}, (int64_t[]){0, 0});
    expect_infer_error(c, "strides, pads and dilations have 1 entries for 2 spatial dims");
    expect_infer_error(col2im_case(iota_f32(DIMS(1, 5, 5), 0), I32(DIMS(2), 5, 5), I64(DIMS(2), 1, 5), false),
                       "input 1 must be INT64, got INT32");
}
END_TEST

/* ------------------------------------------------------------ CenterCropPad */

static node_case ccp_case(xf_tensor *x, xf_tensor *shape, int n_axes, const int64_t *axes, bool feed)
{
    node_case c = make_case(XF_OP_CENTER_CROP_PAD, 2, x, shape);
    c.feed = feed ? 3 : 1;
    c.opset = 18;
    c.a.has_axes = axes != NULL;
    c.a.n_axes = n_axes;
    for (int i = 0; i < n_axes; i++)
        c.a.axes[i] = axes[i];
    return c;
}

/* An odd difference puts its extra element at the end: 1..5 cropped to 2
 * starts at 1 (drops 1 before, 2 after); padded from 2 to 5 it gets 1 zero
 * before and 2 after.  In 2-D with axes [-1]: only the last dim changes;
 * with no axes every dim does (rows cropped from 4 to 2 keep rows 1 and 2,
 * columns padded from 3 to 4 get one zero at the end). */
START_TEST(ccp_by_hand)
{
    for (int feed = 0; feed < 2; feed++) {
        EXPECT(run1(ccp_case(iota_f32(DIMS(5), 1), I64(DIMS(1), 2), 0, NULL, feed)), XF_DT_FLOAT, DIMS(2), 2, 3);
        EXPECT(run1(ccp_case(F32(DIMS(2), 7, 8), I32(DIMS(1), 5), 0, NULL, feed)), XF_DT_FLOAT, DIMS(5), 0, 7, 8, 0,
               0);
        EXPECT(run1(ccp_case(iota_f32(DIMS(2, 3), 1), I64(DIMS(1), 1), 1, (int64_t[]){-1}, feed)), XF_DT_FLOAT,
               DIMS(2, 1), 2, 5);
        EXPECT(run1(ccp_case(iota_f32(DIMS(4, 3), 1), I64(DIMS(2), 2, 4), 0, NULL, feed)), XF_DT_FLOAT, DIMS(2, 4), 4,
               5, 6, 0, 7, 8, 9, 0);
    }
    /* any type, and an unchanged extent */
    xf_tensor *y = run1(ccp_case(I64(DIMS(2, 2), 1, 2, 3, 4), I64(DIMS(2), 2, 3), 2, (int64_t[]){1, 0}, false));
    ck_assert_int_eq(y->dtype, XF_DT_INT64);
    ck_assert_int_eq(y->shape.dims[0], 3);
    static const int64_t want[6] = {1, 2, 3, 4, 0, 0};
    for (int i = 0; i < 6; i++)
        ck_assert_int_eq(((const int64_t *)y->data)[i], want[i]);
    xf_tensor_release(y);
}
END_TEST

START_TEST(ccp_shape_errors)
{
    expect_infer_error(ccp_case(iota_f32(DIMS(2, 3), 1), I64(DIMS(1), 1), 0, NULL, false),
                       "shape [1] has 1 entries for the input's rank 2");
    expect_infer_error(ccp_case(iota_f32(DIMS(2, 3), 1), I64(DIMS(2), 1, 1), 2, (int64_t[]){1, -1}, false),
                       "axes [1,-1] repeat axis 1");
    expect_infer_error(ccp_case(iota_f32(DIMS(2, 3), 1), I64(DIMS(1), 1), 1, (int64_t[]){2}, false), "axis");
    expect_infer_error(ccp_case(iota_f32(DIMS(2, 3), 1), I64(DIMS(2), 1, -1), 0, NULL, false),
                       "has a negative extent");
    expect_infer_error(ccp_case(iota_f32(DIMS(2, 3), 1), F32(DIMS(2), 1, 1), 0, NULL, false),
                       "shape must be int32 or int64, got FLOAT");
}
END_TEST

/* ------------------------------------------------------------ AffineGrid */

static node_case affine_case(xf_tensor *theta, xf_tensor *size, int align_corners, bool feed)
{
    node_case c = make_case(XF_OP_AFFINE_GRID, 2, theta, size);
    c.feed = feed ? 3 : 1;
    c.opset = 20;
    c.a.grid_align_corners = align_corners;
    return c;
}

/* The identity on a 2 x 3 grid: the pixel centres (x -2/3, 0, 2/3; y
 * -1/2, 1/2), or with align_corners the corners (x -1, 0, 1; y -1, 1); theta
 * (1 2 3; 4 5 6) maps (x, y) to (x + 2y + 3, 4x + 5y + 6).  A dim of one
 * pixel sits at 0, or at -1 with align_corners (as the reference's
 * arange does). */
START_TEST(affine_grid_by_hand)
{
    for (int feed = 0; feed < 2; feed++) {
        const double t = 2.0 / 3;
        EXPECT(run1(affine_case(F32(DIMS(1, 2, 3), 1, 0, 0, 0, 1, 0), I64(DIMS(4), 1, 5, 2, 3), 0, feed)),
               XF_DT_FLOAT, DIMS(1, 2, 3, 2), -t, -0.5, 0, -0.5, t, -0.5, -t, 0.5, 0, 0.5, t, 0.5);
        EXPECT(run1(affine_case(F32(DIMS(1, 2, 3), 1, 0, 0, 0, 1, 0), I64(DIMS(4), 1, 1, 2, 3), 1, feed)),
               XF_DT_FLOAT, DIMS(1, 2, 3, 2), -1, -1, 0, -1, 1, -1, -1, 1, 0, 1, 1, 1);
        EXPECT(run1(affine_case(F32(DIMS(1, 2, 3), 1, 2, 3, 4, 5, 6), I64(DIMS(4), 1, 1, 2, 2), 1, feed)),
               XF_DT_FLOAT, DIMS(1, 2, 2, 2), 0, -3, 2, 5, 4, 7, 6, 15);
    }
    EXPECT(run1(affine_case(F32(DIMS(1, 2, 3), 1, 0, 0, 0, 1, 0), I64(DIMS(4), 1, 1, 1, 1), 0, false)), XF_DT_FLOAT,
           DIMS(1, 1, 1, 2), 0, 0);
    EXPECT(run1(affine_case(F32(DIMS(1, 2, 3), 1, 0, 0, 0, 1, 0), I64(DIMS(4), 1, 1, 1, 1), 1, false)), XF_DT_FLOAT,
           DIMS(1, 1, 1, 2), -1, -1);
}
END_TEST

/* 3-D: theta (1 .5 0 .25; 0 1 -1 0; 2 0 1 -.5) on a 2 x 2 x 3 grid (D, H,
 * W); the reference's values. */
START_TEST(affine_grid_volumetric)
{
    static const double want[2][36] = {
        {-0.6666667, 0, -2.3333333, 0, 0, -1, 0.6666667, 0, 0.3333333, -0.1666667, 1, -2.3333333,
         0.5, 1, -1, 1.1666666, 1, 0.3333333, -0.6666667, -1, -1.3333334, 0, -1, 0,
         0.6666667, -1, 1.3333334, -0.1666667, 0, -1.3333334, 0.5, 0, 0, 1.1666666, 0, 1.3333334},
        {-1.25, 0, -3.5, -0.25, 0, -1.5, 0.75, 0, 0.5, -0.25, 2, -3.5, 0.75, 2, -1.5, 1.75, 2, 0.5,
         -1.25, -2, -1.5, -0.25, -2, 0.5, 0.75, -2, 2.5, -0.25, 0, -1.5, 0.75, 0, 0.5, 1.75, 0, 2.5}};
    for (int ac = 0; ac < 2; ac++)
        expect(run1(affine_case(F32(DIMS(1, 3, 4), 1, 0.5, 0, 0.25, 0, 1, -1, 0, 2, 0, 1, -0.5),
                                I64(DIMS(5), 1, 1, 2, 2, 3), ac, false)),
               XF_DT_FLOAT, DIMS(1, 2, 2, 3, 3), want[ac]);
}
END_TEST

START_TEST(affine_grid_shape_errors)
{
    expect_infer_error(affine_case(iota_f32(DIMS(1, 2, 4), 0), I64(DIMS(4), 1, 1, 2, 2), 0, false),
                       "theta must have shape [N, 2, 3] or [N, 3, 4], got 1x2x4");
    expect_infer_error(affine_case(iota_f32(DIMS(1, 2, 3), 0), I64(DIMS(5), 1, 1, 2, 2, 2), 0, false),
                       "size must hold 4 values (N, C and 2 spatial extents)");
    expect_infer_error(affine_case(iota_f32(DIMS(1, 2, 3), 0), I64(DIMS(4), 2, 1, 2, 2), 0, false),
                       "size's batch 2 differs from theta's 1");
    expect_infer_error(affine_case(iota_f32(DIMS(1, 2, 3), 0), I64(DIMS(4), 1, 1, 0, 2), 0, false),
                       "has a spatial extent below 1");
    expect_infer_error(affine_case(I64(DIMS(1, 2, 3), 0, 0, 0, 0, 0, 0), I64(DIMS(4), 1, 1, 2, 2), 0, false),
                       "theta must be a floating-point tensor, got INT64");
}
END_TEST

/* ------------------------------------------------------------ DeformConv */

static node_case deform_case(xf_tensor *x, xf_tensor *w, xf_tensor *offset, xf_tensor *b, xf_tensor *mask)
{
    node_case c = make_case(XF_OP_DEFORM_CONV, 5, x, w, offset, b, mask);
    c.feed = 1;
    c.opset = 19;
    return c;
}

/* X [1, 1, 3, 3] = 1..9 is the plane 1 + x + 3y, which bilinear sampling
 * reproduces inside X.  Zero offsets give Conv: a 2 x 2 kernel of ones sums
 * the windows (12, 16, 24, 28).  A 1 x 1 kernel moved by (0, 0.5) reads
 * 1 + x + 0.5 + 3y, but in the last column, whose right tap is outside
 * (zero), half of 3 + 3y; a mask of 0.5 halves everything. */
START_TEST(deform_conv_by_hand)
{
    float zero[32] = {0};
    EXPECT(run1(deform_case(iota_f32(DIMS(1, 1, 3, 3), 1), F32(DIMS(1, 1, 2, 2), 1, 1, 1, 1),
                            mk(XF_DT_FLOAT, DIMS(1, 8, 2, 2), zero), NULL, NULL)),
           XF_DT_FLOAT, DIMS(1, 1, 2, 2), 12, 16, 24, 28);
    float off[18] = {0};
    for (int i = 9; i < 18; i++)
        off[i] = 0.5f;
    xf_tensor *o = mk(XF_DT_FLOAT, DIMS(1, 2, 3, 3), off);
    EXPECT(run1(deform_case(iota_f32(DIMS(1, 1, 3, 3), 1), F32(DIMS(1, 1, 1, 1), 1), o, NULL, NULL)), XF_DT_FLOAT,
           DIMS(1, 1, 3, 3), 1.5, 2.5, 1.5, 4.5, 5.5, 3, 7.5, 8.5, 4.5);
    float half[9] = {0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f};
    o = mk(XF_DT_FLOAT, DIMS(1, 2, 3, 3), off);
    EXPECT(run1(deform_case(iota_f32(DIMS(1, 1, 3, 3), 1), F32(DIMS(1, 1, 1, 1), 2), o, F32(DIMS(1), 1),
                            mk(XF_DT_FLOAT, DIMS(1, 1, 3, 3), half))),
           XF_DT_FLOAT, DIMS(1, 1, 3, 3), 2.5, 3.5, 2.5, 5.5, 6.5, 4, 8.5, 9.5, 5.5);
}
END_TEST

/* group 2 and offset_group 2 with a bias and a mask (X = i / 4, offsets
 * (i % 7 - 3) / 4, mask (i % 5) / 4 for element i), and strides 2, pads 1
 * and dilations 2 with offsets (0.25, -0.5) on every tap of X = 1..25;
 * the reference's values. */
START_TEST(deform_conv_attributes)
{
    float x[18], off[64], mask[32];
    for (int i = 0; i < 18; i++)
        x[i] = (float)i / 4;
    for (int i = 0; i < 64; i++)
        off[i] = (float)(i % 7 - 3) / 4;
    for (int i = 0; i < 32; i++)
        mask[i] = (float)(i % 5) / 4;
    node_case c = deform_case(mk(XF_DT_FLOAT, DIMS(1, 2, 3, 3), x),
                              F32(DIMS(2, 1, 2, 2), 1, -1, 2, 0.5, 0.25, 1, -2, 1),
                              mk(XF_DT_FLOAT, DIMS(1, 16, 2, 2), off), F32(DIMS(2), 0.5, -1),
                              mk(XF_DT_FLOAT, DIMS(1, 8, 2, 2), mask));
    c.a.group = 2;
    c.a.offset_group = 2;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 2, 2, 2), 1.640625, 2.6640625, 1.09375, 0.875, -5.986328125, 1.7421875,
           -0.70703125, -2.125);
    float off2[72];
    for (int i = 0; i < 72; i++)
        off2[i] = i / 9 % 2 ? -0.5f : 0.25f;
    c = deform_case(iota_f32(DIMS(1, 1, 5, 5), 1), F32(DIMS(1, 1, 2, 2), 1, 2, 3, 4),
                    mk(XF_DT_FLOAT, DIMS(1, 8, 3, 3), off2), NULL, NULL);
    c.a.n_spatial = 2;
    for (int i = 0; i < 2; i++) {
        c.a.strides[i] = c.a.dilations[i] = 2;
        c.a.pads[i] = c.a.pads[2 + i] = 1;
    }
    c.a.kernel[0] = c.a.kernel[1] = 2;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 1, 3, 3), 31.75, 64.375, 53.875, 86.5, 159.5, 122.75, 35.5, 57.25, 41);
}
END_TEST

START_TEST(deform_conv_shape_errors)
{
#define X33() iota_f32(DIMS(1, 1, 3, 3), 0)
#define W22() iota_f32(DIMS(1, 1, 2, 2), 0)
    expect_infer_error(deform_case(X33(), W22(), iota_f32(DIMS(1, 4, 2, 2), 0), NULL, NULL),
                       "offset must have shape 1x8x2x2, got 1x4x2x2");
    expect_infer_error(deform_case(X33(), W22(), iota_f32(DIMS(1, 8, 2, 2), 0), NULL, iota_f32(DIMS(1, 8, 2, 2), 0)),
                       "mask must have shape 1x4x2x2, got 1x8x2x2");
    expect_infer_error(deform_case(X33(), W22(), iota_f32(DIMS(1, 8, 2, 2), 0), iota_f32(DIMS(2), 0), NULL),
                       "B must have shape [1], got 2");
    expect_infer_error(deform_case(X33(), iota_f32(DIMS(1, 2, 2, 2), 0), iota_f32(DIMS(1, 8, 2, 2), 0), NULL, NULL),
                       "X's 1 channels, W 1x2x2x2, group 1 and offset_group 1 do not agree");
    expect_infer_error(deform_case(X33(), iota_f32(DIMS(1, 1, 4, 2), 0), iota_f32(DIMS(1, 16, 1, 2), 0), NULL, NULL),
                       "spatial dim 0: kernel 4 (dilation 1) does not fit the padded extent 3");
    node_case c = deform_case(X33(), W22(), iota_f32(DIMS(1, 8, 2, 2), 0), NULL, NULL);
    c.a.n_spatial = 2;
    c.a.kernel[0] = c.a.kernel[1] = 3;
    expect_infer_error(c, "kernel_shape [3,3] differs from W's 1x1x2x2");
    expect_infer_error(deform_case(X33(), W22(), mk(XF_DT_INT32, DIMS(1, 8, 2, 2), (int32_t[32]){0}), NULL, NULL),
                       "input 0 is FLOAT but input 2 is INT32");
#undef X33
#undef W22
    /* 3 spatial dims: shapes infer, cpu_ref refuses by name */
    node_case v = deform_case(iota_f32(DIMS(1, 1, 2, 2, 2), 0), iota_f32(DIMS(1, 1, 1, 1, 1), 0),
                              iota_f32(DIMS(1, 3, 2, 2, 2), 0), NULL, NULL);
    xf_graph *g = case_graph(&v);
    xf_session *s = NULL;
    xf_error e = {0};
    ck_assert_int_eq(xf_session_create(g, 19, "cpu_ref", NULL, &s, &e), XF_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(e.msg, "DeformConv on 3 spatial dims (2 only, as ONNX's reference) (node 'n0')"), "%s",
                  e.msg);
    xf_graph_free(g);
    release_case(&v);
}
END_TEST

/* ------------------------------------------------------------ MaxRoiPool */

static node_case mrp_case(xf_tensor *x, xf_tensor *rois, int64_t ph, int64_t pw, float scale)
{
    node_case c = make_case(XF_OP_MAX_ROI_POOL, 2, x, rois);
    c.feed = 3;
    c.a.roi_output_h = ph;
    c.a.roi_output_w = pw;
    c.a.roi_spatial_scale = scale;
    return c;
}

/* X [2, 1, 4, 4], X[b, 0, y, x] = 16b + 4y + x.  ROI (0, 0, 3, 3) in 2 x 2
 * bins of 2 pixels: 5, 7, 13, 15.  (1, 1, 5, 5) at scale 0.5 is (0.5, 0.5,
 * 2.5, 2.5), rounded half away from zero to (1, 1, 3, 3): 3 pixels, bins
 * of 1.5 over rows and columns [1, 3) and [2, 4): 10, 11, 14, 15 (image
 * 1, batch index 1.75 truncated: +16).  A ROI past X covers no pixel: 0.
 * A malformed ROI (x2 < x1) is one pixel wide. */
START_TEST(max_roi_pool_by_hand)
{
#define X2() iota_f32(DIMS(2, 1, 4, 4), 0)
    EXPECT(run1(mrp_case(X2(), F32(DIMS(1, 5), 0, 0, 0, 3, 3), 2, 2, 1)), XF_DT_FLOAT, DIMS(1, 1, 2, 2), 5, 7, 13,
           15);
    EXPECT(run1(mrp_case(X2(), F32(DIMS(2, 5), 0, 1, 1, 5, 5, 1.75, 1, 1, 5, 5), 2, 2, 0.5)), XF_DT_FLOAT,
           DIMS(2, 1, 2, 2), 10, 11, 14, 15, 26, 27, 30, 31);
    EXPECT(run1(mrp_case(X2(), F32(DIMS(1, 5), 0, 9, 9, 12, 12), 1, 2, 1)), XF_DT_FLOAT, DIMS(1, 1, 1, 2), 0, 0);
    EXPECT(run1(mrp_case(X2(), F32(DIMS(1, 5), 0, 2, 0, 0, 1), 1, 1, 1)), XF_DT_FLOAT, DIMS(1, 1, 1, 1), 6);
    /* -0.5 rounds to -1 (not 0): the ROI (-1, -1, 0, 0) of 2 pixels in 2
     * bins, the first outside X */
    EXPECT(run1(mrp_case(X2(), F32(DIMS(1, 5), 0, -0.5, -0.5, 0, 0), 2, 2, 1)), XF_DT_FLOAT, DIMS(1, 1, 2, 2), 0, 0,
           0, 0);
    xf_tensor *neg = iota_f32(DIMS(1, 1, 2, 2), -9);
    EXPECT(run1(mrp_case(neg, F32(DIMS(1, 5), 0, -0.5, -0.5, 0, 0), 2, 2, 1)), XF_DT_FLOAT, DIMS(1, 1, 2, 2), 0, 0, 0,
           -9);
    double xd[4] = {0.1, 0.2, 0.3, 0.4}, rd[5] = {0, 0, 0, 1, 1};
    EXPECT(run1(mrp_case(mk(XF_DT_DOUBLE, DIMS(1, 1, 2, 2), xd), mk(XF_DT_DOUBLE, DIMS(1, 5), rd), 1, 1, 1)),
           XF_DT_DOUBLE, DIMS(1, 1, 1, 1), 0.4);
#undef X2
}
END_TEST

START_TEST(max_roi_pool_errors)
{
    expect_infer_error(mrp_case(iota_f32(DIMS(1, 1, 4, 4), 0), F32(DIMS(1, 4), 0, 0, 1, 1), 1, 1, 1),
                       "rois must have shape [num_rois, 5] (batch index, x1, y1, x2, y2), got 1x4");
    expect_infer_error(mrp_case(iota_f32(DIMS(1, 4, 4), 0), F32(DIMS(1, 5), 0, 0, 0, 1, 1), 1, 1, 1),
                       "X must have shape [N, C, H, W], got 1x4x4");
    expect_infer_error(mrp_case(iota_f32(DIMS(1, 1, 4, 4), 0), F32(DIMS(1, 5), 0, 0, 0, 1, 1), 0, 1, 1),
                       "pooled_shape [0, 1] must be at least 1 each");
    expect_run_error(mrp_case(iota_f32(DIMS(1, 1, 4, 4), 0), F32(DIMS(1, 5), 1, 0, 0, 1, 1), 1, 1, 1),
                     "batch index 1 of ROI 0 is out of range for 1 images");
    expect_run_error(mrp_case(iota_f32(DIMS(1, 1, 4, 4), 0), F32(DIMS(1, 5), 0, NAN, 0, 1, 1), 1, 1, 1),
                     "ROI 0 has a value that is not finite");
}
END_TEST

/* ------------------------------------------------------------ float16 */

/* A float16 tensor of floats that float16 holds exactly. */
static xf_tensor *f16(int ndim, const int64_t *dims, const float *v)
{
    uint16_t h[64];
    xf_shape s = xf_shape_make(ndim, dims);
    for (int64_t i = 0; i < xf_shape_numel(&s); i++)
        h[i] = xf_f32_to_f16(v[i]);
    return mk(XF_DT_FLOAT16, ndim, dims, h);
}

/* float16 runs in float and rounds once: Col2Im's 1-D overlap, the
 * identity grid with align_corners, Conv by zero offsets, the ROI of all
 * of X (the cases above). */
START_TEST(half_precision)
{
    EXPECT(run1(col2im_case(f16(DIMS(1, 2, 3), (float[]){1, 2, 3, 10, 20, 30}), I64(DIMS(1), 4), I64(DIMS(1), 2),
                            false)),
           XF_DT_FLOAT16, DIMS(1, 1, 4), 1, 12, 23, 30);
    EXPECT(run1(affine_case(f16(DIMS(1, 2, 3), (float[]){1, 0, 0, 0, 1, 0}), I64(DIMS(4), 1, 1, 2, 2), 1, false)),
           XF_DT_FLOAT16, DIMS(1, 2, 2, 2), -1, -1, 1, -1, -1, 1, 1, 1);
    float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, zero[32] = {0};
    EXPECT(run1(deform_case(f16(DIMS(1, 1, 3, 3), x), f16(DIMS(1, 1, 2, 2), (float[]){1, 1, 1, 1}),
                            f16(DIMS(1, 8, 2, 2), zero), NULL, NULL)),
           XF_DT_FLOAT16, DIMS(1, 1, 2, 2), 12, 16, 24, 28);
    EXPECT(run1(mrp_case(f16(DIMS(1, 1, 3, 3), x), f16(DIMS(1, 5), (float[]){0, 0, 0, 2, 2}), 1, 1, 1)),
           XF_DT_FLOAT16, DIMS(1, 1, 1, 1), 9);
}
END_TEST

/* ------------------------------------------------------------ other backends */

static int add_const(xf_graph *g, const char *name, xf_tensor *t)
{
    int v = xf_graph_add_initializer(g, name, t);
    xf_tensor_release(t);
    return v;
}

/* Op k of the five on graph inputs (Col2Im's image and block shapes,
 * CenterCropPad's shape, AffineGrid's size and MaxRoiPool's ROIs
 * initializers). */
static xf_graph *image_graph(int k)
{
    xf_graph *g = xf_graph_create("image");
    int ins[5] = {-1, -1, -1, -1, -1}, n_in = 2, node;
    xf_op op = XF_OP_COL2IM;
    switch (k) {
    case 0: {
        ins[0] = xf_bt_input(g, XF_DT_FLOAT, xf_shape_make(DIMS(2, 12, 9)));
        ins[1] = add_const(g, "image", I64(DIMS(2), 4, 5));
        ins[2] = add_const(g, "block", I64(DIMS(2), 2, 3));
        n_in = 3;
        break;
    }
    case 1:
        op = XF_OP_CENTER_CROP_PAD;
        ins[0] = xf_bt_input(g, XF_DT_FLOAT, xf_shape_make(DIMS(3, 4, 5)));
        ins[1] = add_const(g, "shape", I64(DIMS(3), 2, 7, 5));
        break;
    case 2:
        op = XF_OP_AFFINE_GRID;
        ins[0] = xf_bt_input(g, XF_DT_FLOAT, xf_shape_make(DIMS(2, 2, 3)));
        ins[1] = add_const(g, "size", I64(DIMS(4), 2, 3, 4, 5));
        break;
    case 3:
        op = XF_OP_DEFORM_CONV;
        ins[0] = xf_bt_input(g, XF_DT_FLOAT, xf_shape_make(DIMS(2, 4, 5, 6)));
        ins[1] = xf_bt_input(g, XF_DT_FLOAT, xf_shape_make(DIMS(4, 2, 2, 3)));
        ins[2] = xf_bt_input(g, XF_DT_FLOAT, xf_shape_make(DIMS(2, 24, 5, 5)));
        ins[3] = xf_bt_input(g, XF_DT_FLOAT, xf_shape_make(DIMS(4)));
        ins[4] = xf_bt_input(g, XF_DT_FLOAT, xf_shape_make(DIMS(2, 12, 5, 5)));
        n_in = 5;
        break;
    default:
        op = XF_OP_MAX_ROI_POOL;
        ins[0] = xf_bt_input(g, XF_DT_FLOAT, xf_shape_make(DIMS(2, 3, 6, 7)));
        ins[1] = add_const(g, "rois", F32(DIMS(2, 5), 0, 0.5, 1, 4, 5, 1, 2, 0, 7, 3));
        break;
    }
    node = xf_bt_finish_single(g, op, n_in, ins);
    xf_attrs *a = &g->nodes[node].attrs;
    if (k == 2)
        a->grid_align_corners = 1;
    if (k == 3) {
        a->group = 2;
        a->offset_group = 2;
        a->n_spatial = 2;
        a->pads[0] = a->pads[3] = 1;
    }
    if (k == 4) {
        a->roi_output_h = 2;
        a->roi_output_w = 3;
        a->roi_spatial_scale = 0.5f;
    }
    return g;
}

/* The cpu backend runs them (through cpu_ref's kernels) as cpu_ref does. */
START_TEST(cpu_backend_matches)
{
    static const int64_t opsets[5] = {18, 18, 20, 19, 17};
    for (int k = 0; k < 5; k++) {
        xf_graph *g = image_graph(k);
        xf_bt_check_graph(g, opsets[k], "cpu", true, 0, 0, xf_op_name(g->nodes[0].op));
        xf_graph_free(g);
    }
}
END_TEST

/* The cuda backend has no device path for them: it takes each node (to
 * run through cpu_ref on host copies), which gets session creation past
 * the support check to the device (absent here, or the GPU, which then
 * gives cpu_ref's values). */
START_TEST(cuda_backend_takes_them)
{
    if (!xf_backend_find("cuda"))
        return;
    static const int64_t opsets[5] = {18, 18, 20, 19, 17};
    for (int k = 0; k < 5; k++) {
        xf_graph *g = image_graph(k);
        xf_session *s = NULL;
        xf_error e = {0};
        xf_status st = xf_session_create(g, opsets[k], "cuda", NULL, &s, &e);
        ck_assert_msg(st == XF_OK || (st == XF_ERR_UNSUPPORTED && !strncmp(e.msg, "no CUDA device: ", 16)), "%s",
                      e.msg);
        xf_session_free(s);
        if (st == XF_OK)
            xf_bt_check_graph(g, opsets[k], "cuda", false, 0, 0, xf_op_name(g->nodes[0].op));
        xf_graph_free(g);
    }
}
END_TEST

/* ------------------------------------------------------------ import and export */

/* A graph of one node of op on inputs named a, b, c, ... of the given
 * ranks and dims, float but for those whose bit is set in ints (int64,
 * their values unknown); *node receives the node for its attributes. */
static Onnx__GraphProto *one_node(const char *op, int n_in, const int *ranks, const int64_t *const *dims,
                                  unsigned ints, Onnx__NodeProto **node)
{
    static const char *const names[5] = {"a", "b", "c", "d", "e"};
    Onnx__GraphProto *g = mk_graph("g");
    for (int i = 0; i < n_in; i++)
        PUSH(g->n_input, g->input,
             mk_vi(names[i], ints & (1u << i) ? XF_DT_INT64 : XF_DT_FLOAT, ranks[i], dims[i], NULL));
    const char *ins[6] = {NULL};
    for (int i = 0; i < n_in; i++)
        ins[i] = names[i];
    *node = mk_node(op, "n", ins, (const char *[]){"y", NULL});
    PUSH(g->n_node, g->node, *node);
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, -1, NULL, NULL));
    return g;
}

/* A known node of op: what import kept survives export and import. */
static const xf_attrs *load_known(Onnx__GraphProto *g, int64_t opset, xf_op op, xf_model **m)
{
    int counts[XF_OP_COUNT + 1];
    *m = load_counting(g, opset, counts);
    ck_assert_msg(counts[op] == 1 && counts[XF_OP_OPAQUE] == 0, "%s not known", xf_op_name(op));
    xf_model_free(roundtrip(*m));
    return &(*m)->graph->nodes[find_node_op((*m)->graph, op)].attrs;
}

static void expect_opaque(Onnx__GraphProto *g, int64_t opset)
{
    int counts[XF_OP_COUNT + 1];
    xf_model *m = load_counting(g, opset, counts);
    ck_assert_int_eq(counts[XF_OP_OPAQUE], 1);
    xf_model_free(roundtrip(m));
    xf_model_free(m);
}

static const int64_t x3[] = {1, 4, 6}, v2[] = {2}, v4[] = {4}, x4[] = {1, 4, 5, 6}, w4[] = {4, 2, 2, 3},
                     off4[] = {1, 24, 5, 5}, mask4[] = {1, 12, 5, 5}, theta[] = {1, 2, 3}, rois[] = {3, 5};

START_TEST(attributes_round_trip)
{
    Onnx__NodeProto *n;
    xf_model *m;
    /* Col2Im: dilations, pads, strides */
    Onnx__GraphProto *g = one_node("Col2Im", 3, (int[]){3, 1, 1}, (const int64_t *const[]){x3, v2, v2}, 6, &n);
    attr_ints(n, "dilations", 2, (int64_t[]){2, 1});
    attr_ints(n, "pads", 4, (int64_t[]){1, 0, 0, 1});
    attr_ints(n, "strides", 2, (int64_t[]){1, 2});
    const xf_attrs *a = load_known(g, 18, XF_OP_COL2IM, &m);
    ck_assert(a->n_spatial == 2 && a->dilations[0] == 2 && a->pads[3] == 1 && a->strides[1] == 2 && !a->kernel[0]);
    xf_model_free(m);
    /* CenterCropPad: axes */
    g = one_node("CenterCropPad", 2, (int[]){4, 1}, (const int64_t *const[]){x4, v2}, 2, &n);
    attr_ints(n, "axes", 2, (int64_t[]){-1, 1});
    a = load_known(g, 18, XF_OP_CENTER_CROP_PAD, &m);
    ck_assert(a->has_axes && a->n_axes == 2 && a->axes[0] == -1 && a->axes[1] == 1);
    xf_model_free(m);
    /* AffineGrid: align_corners */
    g = one_node("AffineGrid", 2, (int[]){3, 1}, (const int64_t *const[]){theta, v4}, 2, &n);
    attr_int(n, "align_corners", 1);
    a = load_known(g, 20, XF_OP_AFFINE_GRID, &m);
    ck_assert_int_eq(a->grid_align_corners, 1);
    xf_model_free(m);
    /* DeformConv: every attribute */
    g = one_node("DeformConv", 5, (int[]){4, 4, 4, 1, 4}, (const int64_t *const[]){x4, w4, off4, w4, mask4}, 0, &n);
    attr_ints(n, "kernel_shape", 2, (int64_t[]){2, 3});
    attr_ints(n, "pads", 4, (int64_t[]){1, 0, 0, 1});
    attr_ints(n, "strides", 2, (int64_t[]){1, 1});
    attr_ints(n, "dilations", 2, (int64_t[]){1, 1});
    attr_int(n, "group", 2);
    attr_int(n, "offset_group", 2);
    a = load_known(g, 19, XF_OP_DEFORM_CONV, &m);
    ck_assert(a->group == 2 && a->offset_group == 2 && a->kernel[1] == 3 && a->pads[0] == 1 && a->n_spatial == 2);
    const xf_shape *y = &m->graph->values[m->graph->nodes[0].outputs[0]].shape;
    ck_assert(y->ndim == 4 && y->dims[1] == 4 && y->dims[2] == 5 && y->dims[3] == 5);
    xf_model_free(m);
    /* MaxRoiPool: pooled_shape, spatial_scale; opset 1's op checks valid */
    g = one_node("MaxRoiPool", 2, (int[]){4, 2}, (const int64_t *const[]){x4, rois}, 0, &n);
    attr_ints(n, "pooled_shape", 2, (int64_t[]){2, 3});
    attr_float(n, "spatial_scale", 0.0625f);
    a = load_known(g, 17, XF_OP_MAX_ROI_POOL, &m);
    ck_assert(a->roi_output_h == 2 && a->roi_output_w == 3 && a->roi_spatial_scale == 0.0625f);
    uint8_t *buf;
    Onnx__ModelProto *mp = exported(m, &buf);
    ck_assert(has_attr(mp->graph->node[0], "pooled_shape") && has_attr(mp->graph->node[0], "spatial_scale"));
    onnx__model_proto__free_unpacked(mp, NULL);
    free(buf);
    assert_saved_valid(m, "max_roi_pool");
    xf_model_free(m);
}
END_TEST

/* What the block cannot hold, or an op before its opset, stays opaque. */
START_TEST(attributes_opaque)
{
    Onnx__NodeProto *n;
    expect_opaque(one_node("Col2Im", 3, (int[]){3, 1, 1}, (const int64_t *const[]){x3, v2, v2}, 6, &n), 17);
    Onnx__GraphProto *g = one_node("Col2Im", 3, (int[]){3, 1, 1}, (const int64_t *const[]){x3, v2, v2}, 6, &n);
    attr_ints(n, "strides", 2, (int64_t[]){1, 1});
    attr_ints(n, "pads", 2, (int64_t[]){0, 0});
    expect_opaque(g, 18);
    g = one_node("Col2Im", 3, (int[]){3, 1, 1}, (const int64_t *const[]){x3, v2, v2}, 6, &n);
    attr_ints(n, "dilations", 4, (int64_t[]){1, 1, 1, 1});
    expect_opaque(g, 18);
    g = one_node("Col2Im", 3, (int[]){3, 1, 1}, (const int64_t *const[]){x3, v2, v2}, 6, &n);
    attr_ints(n, "kernel_shape", 2, (int64_t[]){1, 1});
    expect_opaque(g, 18);
    g = one_node("AffineGrid", 2, (int[]){3, 1}, (const int64_t *const[]){theta, v4}, 2, &n);
    attr_int(n, "align_corners", 2);
    expect_opaque(g, 20);
    expect_opaque(one_node("AffineGrid", 2, (int[]){3, 1}, (const int64_t *const[]){theta, v4}, 2, &n), 19);
    g = one_node("DeformConv", 3, (int[]){4, 4, 4}, (const int64_t *const[]){x4, w4, off4}, 0, &n);
    attr_string(n, "auto_pad", "SAME_UPPER");
    expect_opaque(g, 19);
    expect_opaque(one_node("DeformConv", 3, (int[]){4, 4, 4}, (const int64_t *const[]){x4, w4, off4}, 0, &n), 18);
    expect_opaque(one_node("MaxRoiPool", 2, (int[]){4, 2}, (const int64_t *const[]){x4, rois}, 0, &n), 17);
    g = one_node("MaxRoiPool", 2, (int[]){4, 2}, (const int64_t *const[]){x4, rois}, 0, &n);
    attr_ints(n, "pooled_shape", 3, (int64_t[]){1, 1, 1});
    expect_opaque(g, 17);
    expect_opaque(one_node("CenterCropPad", 2, (int[]){4, 1}, (const int64_t *const[]){x4, v2}, 2, &n), 17);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("image");
    TCase *tc = tcase_create("kernels");
    tcase_add_test(tc, col2im_by_hand);
    tcase_add_test(tc, col2im_window_attributes);
    tcase_add_test(tc, ccp_by_hand);
    tcase_add_test(tc, affine_grid_by_hand);
    tcase_add_test(tc, affine_grid_volumetric);
    tcase_add_test(tc, deform_conv_by_hand);
    tcase_add_test(tc, deform_conv_attributes);
    tcase_add_test(tc, max_roi_pool_by_hand);
    tcase_add_test(tc, half_precision);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, col2im_shape_errors);
    tcase_add_test(tc, ccp_shape_errors);
    tcase_add_test(tc, affine_grid_shape_errors);
    tcase_add_test(tc, deform_conv_shape_errors);
    tcase_add_test(tc, max_roi_pool_errors);
    suite_add_tcase(s, tc);
    tc = tcase_create("backends");
    tcase_add_test(tc, cpu_backend_matches);
    tcase_add_test(tc, cuda_backend_takes_them);
    suite_add_tcase(s, tc);
    tc = tcase_create("proto");
    tcase_add_test(tc, attributes_round_trip);
    tcase_add_test(tc, attributes_opaque);
    tcase_add_checked_fixture(tc, NULL, free_allocs);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
