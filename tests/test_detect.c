/* RoiAlign and NonMaxSuppression: cpu_ref against hand-computed values
 * and values of ONNX's reference implementation (bit for bit on float),
 * their shape rules (NonMaxSuppression's output shape is known where its
 * inputs' values are, else sessions infer it per run) and the errors for
 * operands and attributes that do not fit. */
#include "kernel_case_util.h"
#include "xf_test_util.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define RA XF_OP_ROI_ALIGN
#define NMS XF_OP_NON_MAX_SUPPRESSION

/* RoiAlign of x by rois (a graph input, so that the ROIs are read at run
 * time) of the images idx, output oh x ow, sampling_ratio sr, spatial
 * scale 1, output_half_pixel (as torchvision's aligned=False exports). */
static node_case roi_case(xf_tensor *x, xf_tensor *rois, xf_tensor *idx, int64_t oh, int64_t ow, int64_t sr)
{
    node_case c = make_case(RA, 3, x, rois, idx);
    c.feed = 2;
    c.opset = 16;
    c.a.roi_output_h = oh;
    c.a.roi_output_w = ow;
    c.a.roi_sampling_ratio = sr;
    c.a.roi_output_half_pixel = 1;
    return c;
}

/* A 4x4 map whose value at (y, x) is 4y + x, which bilinear sampling
 * reproduces exactly inside the map: an average of samples is the value
 * at their mean position. */
#define RAMP() iota_f32(DIMS(1, 1, 4, 4), 0)

/* ------------------------------------------------------------ RoiAlign */

/* ROI (0,0)-(2,2) in 2x2 bins of 2x2 samples: the bins' centres. */
START_TEST(roi_align_average)
{
    EXPECT(run1(roi_case(RAMP(), F32(DIMS(1, 4), 0, 0, 2, 2), I64(DIMS(1), 0), 2, 2, 2)), XF_DT_FLOAT,
           DIMS(1, 1, 2, 2), 2.5, 3.5, 6.5, 7.5);
    /* half_pixel shifts the ROI by half a pixel: one sample at (0.5, 0.5) */
    node_case c = roi_case(RAMP(), F32(DIMS(1, 4), 0, 0, 2, 2), I64(DIMS(1), 0), 1, 1, 1);
    c.a.roi_output_half_pixel = 0;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 1, 1, 1), 2.5);
    /* an adaptive grid: (0,0)-(3,3) in one bin takes ceil(3) x 3 samples,
     * centred on (1.5, 1.5) */
    EXPECT(run1(roi_case(RAMP(), F32(DIMS(1, 4), 0, 0, 3, 3), I64(DIMS(1), 0), 1, 1, 0)), XF_DT_FLOAT,
           DIMS(1, 1, 1, 1), 7.5);
}
END_TEST

/* Samples past the last row or column take it; more than a pixel beyond
 * the map they weigh nothing but still count in the mean. */
START_TEST(roi_align_borders)
{
    /* (2,2)-(5,5): samples at 2.5, 3.5 and 4.5 along each axis; 3.5
     * clamps to 3, 4.5 is outside: (12.5 + 13 + 14.5 + 15) / 9.  A ROI
     * entirely beyond the map gives 0; a malformed one (x2 < x1) becomes
     * 1x1 at (x1, y1): one sample at (2.5, 2.5). */
    EXPECT(run1(roi_case(RAMP(), F32(DIMS(3, 4), 2, 2, 5, 5, 5.5, 5.5, 6.5, 6.5, 2, 2, 1, 1), I64(DIMS(3), 0, 0, 0),
                         1, 1, 0)),
           XF_DT_FLOAT, DIMS(3, 1, 1, 1), 55.0 / 9, 0, 12.5);
    /* with half_pixel a malformed ROI has no samples: 0 */
    node_case c = roi_case(RAMP(), F32(DIMS(1, 4), 2, 2, 1, 1), I64(DIMS(1), 0), 1, 1, 0);
    c.a.roi_output_half_pixel = 0;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 1, 1, 1), 0);
}
END_TEST

/* Max mode takes, as ONNX's reference and ONNX Runtime do, the largest of
 * the weighted neighbours w_k * x_k of each sample (not the interpolated
 * value): at (0.75, 0.75) the largest is 0.5625 * 5 = 2.8125. */
START_TEST(roi_align_max)
{
    node_case c = roi_case(RAMP(), F32(DIMS(1, 4), 0, 0, 2, 2), I64(DIMS(1), 0), 2, 2, 2);
    c.a.roi_max = 1;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 1, 2, 2), 2.8125, 3.375, 5.0625, 5.625);
}
END_TEST

/* batch_indices pick the image; spatial_scale maps ROIs onto the map;
 * every channel is pooled alike. */
START_TEST(roi_align_images_and_scale)
{
    xf_tensor *x = iota_f32(DIMS(2, 2, 4, 4), 0); /* image 1 channel 0 is the ramp + 32 */
    node_case c = roi_case(x, F32(DIMS(2, 4), 0, 0, 4, 4, 2, 2, 4, 4), I64(DIMS(2), 1, 0), 1, 1, 1);
    c.a.roi_spatial_scale = 0.5f;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(2, 2, 1, 1), 37, 53, 7.5, 23.5);
}
END_TEST

/* Float arithmetic rounds at every step as the reference's does: these are
 * ONNX's reference outputs (onnx 1.23) bit for bit, for ROIs that do not
 * fall on the grid, spatial_scale 0.7 and the default adaptive grid. */
START_TEST(roi_align_matches_reference_bits)
{
    static const float x[] = {
        0.00123015337f, 0.298745543f, -0.274137855f, -0.89059186f, -0.454670787f, -0.991646528f, 0.0601436011f,
        1.34021521f, -0.492206514f, -0.620474875f, 0.489842057f, 0.356887013f, 0.105414249f, -0.930468023f,
        -0.0292518232f, 0.695303202f, -1.34421456f, -0.457615763f, -1.90122271f, -1.28953779f, -1.84173501f,
        -0.235091135f, -1.26744652f, 0.271264344f, 0.156751081f, -0.18693094f, -2.51675963f, -0.538692892f,
        -0.0485009439f, 0.113308989f};
    static const float want[2][24] = {
        {-0.0217801183f, 0.25015223f, -0.0356867686f, -0.825250983f, -0.0284267254f, 0.917054713f, 0.348867804f,
         -1.09559238f, -0.742787242f, -1.6209631f, -0.471276313f, -0.958635092f, 0.213457808f, -0.0449845865f,
         -0.574145615f, 0.178208724f, 0.0226861387f, -0.494895607f, -0.759552836f, -0.812255144f, -1.16017151f,
         -0.7546013f, -0.815529525f, -1.11045027f},
        {0.0299542174f, 0.252738714f, 0.0861184001f, 0.0175036713f, 0.0519640744f, 0.892047167f, 0.583869278f,
         0.0653585121f, -0.00432567764f, -0.00667965878f, -0.000747723156f, -0.0149397338f, 0.213105157f,
         0.119498171f, 0, 0.19658953f, 0.110237077f, 0.0533181541f, 0.199320227f, -0.0f, -0.0f, 0.183872923f,
         -0.00728781521f, 0.010231182f}};
    for (int max = 0; max < 2; max++) {
        node_case c = make_case(RA, 3, mk(XF_DT_FLOAT, DIMS(1, 2, 3, 5), x),
                                F32(DIMS(2, 4), 0.3, 0.1, 3.7, 2.9, 1.1, -0.6, 4.9, 1.3), I64(DIMS(2), 0, 0));
        c.a.roi_output_h = 2;
        c.a.roi_output_w = 3;
        c.a.roi_spatial_scale = 0.7f;
        c.a.roi_max = max;
        xf_tensor *y = run1(c);
        ck_assert_int_eq(xf_tensor_numel(y), 24);
        for (int i = 0; i < 24; i++) {
            float got = ((const float *)y->data)[i];
            ck_assert_msg(memcmp(&got, &want[max][i], sizeof got) == 0, "%s element %d: %.9g, want %.9g",
                          max ? "max" : "avg", i, (double)got, (double)want[max][i]);
        }
        xf_tensor_release(y);
    }
}
END_TEST

/* double computes in double; float16 in float, rounded once. */
START_TEST(roi_align_other_precisions)
{
    static const double xd[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
                        rd[4] = {0.1, 0.1, 2.2, 2.2};
    /* one sample at (1.15, 1.15): 4 * 1.15 + 1.15 */
    xf_tensor *y = run1(roi_case(mk(XF_DT_DOUBLE, DIMS(1, 1, 4, 4), xd), mk(XF_DT_DOUBLE, DIMS(1, 4), rd),
                                 I64(DIMS(1), 0), 1, 1, 1));
    ck_assert_int_eq(y->dtype, XF_DT_DOUBLE);
    ck_assert_double_eq_tol(((const double *)y->data)[0], 5.75, 1e-12);
    xf_tensor_release(y);
    uint16_t xh[16], rh[4];
    for (int i = 0; i < 16; i++)
        xh[i] = xf_f32_to_f16((float)i);
    for (int i = 0; i < 4; i++)
        rh[i] = xf_f32_to_f16(i < 2 ? 0.0f : 2.0f);
    EXPECT(run1(roi_case(mk(XF_DT_FLOAT16, DIMS(1, 1, 4, 4), xh), mk(XF_DT_FLOAT16, DIMS(1, 4), rh), I64(DIMS(1), 0),
                         2, 2, 2)),
           XF_DT_FLOAT16, DIMS(1, 1, 2, 2), 2.5, 3.5, 6.5, 7.5);
}
END_TEST

/* ------------------------------------------------------------ NonMaxSuppression */

/* NonMaxSuppression of boxes and scores (graph inputs) with
 * max_output_boxes_per_class max, iou_threshold iou and, when given
 * (score >= 0), score_threshold. */
static node_case nms_case(xf_tensor *boxes, xf_tensor *scores, int64_t max, float iou, float score)
{
    node_case c = make_case(NMS, score >= 0 ? 5 : 4, boxes, scores, I64(DIMS(1), max), F32(DIMS(1), iou),
                            score >= 0 ? F32(DIMS(1), score) : NULL);
    c.feed = 3;
    c.opset = 11;
    return c;
}

/* ONNX's example: boxes overlapping box 3 or box 0 by more than half are
 * suppressed, at most 3 per class. */
START_TEST(nms_suppress_by_iou)
{
    EXPECT(run1(nms_case(F32(DIMS(1, 6, 4), 0, 0, 1, 1, 0, 0.1, 1, 1.1, 0, -0.1, 1, 0.9, 0, 10, 1, 11, 0, 10.1, 1,
                             11.1, 0, 100, 1, 101),
                         F32(DIMS(1, 1, 6), 0.9, 0.75, 0.6, 0.95, 0.5, 0.3), 3, 0.5f, 0)),
           XF_DT_INT64, DIMS(3, 3), 0, 0, 3, 0, 0, 0, 0, 0, 5);
}
END_TEST

/* IoU 2/4 exactly: suppressed above a threshold below 0.5 only; corners
 * in either order and the centre form give the same boxes. */
START_TEST(nms_threshold_and_box_forms)
{
    for (int form = 0; form < 3; form++)
        for (int t = 0; t < 2; t++) {
            static const float boxes[3][8] = {
                {0, 0, 2, 2, 0, 0, 2, 1}, {2, 2, 0, 0, 2, 1, 0, 0}, {1, 1, 2, 2, 0.5f, 1, 1, 2}};
            node_case c = nms_case(mk(XF_DT_FLOAT, DIMS(1, 2, 4), boxes[form]), F32(DIMS(1, 1, 2), 0.9, 0.8), 2,
                                   t ? 0.4f : 0.5f, -1);
            c.a.center_point_box = form == 2;
            xf_tensor *y = run1(c);
            if (t)
                EXPECT(y, XF_DT_INT64, DIMS(1, 3), 0, 0, 0);
            else
                EXPECT(y, XF_DT_INT64, DIMS(2, 3), 0, 0, 0, 0, 0, 1);
        }
}
END_TEST

/* Output order: batch, then class, then score; equal scores by box
 * index; score_threshold is strict and holds for every class. */
START_TEST(nms_order_ties_and_scores)
{
    xf_tensor *boxes = F32(DIMS(2, 4, 4), 0, 0, 1, 1, 0, 2, 1, 3, 0, 4, 1, 5, 0, 6, 1, 7, 0, 0, 1, 1, 0, 2, 1, 3, 0, 4,
                           1, 5, 0, 6, 1, 7);
    xf_tensor *scores = F32(DIMS(2, 2, 4), 0.5, 0.7, 0.5, 0.7, 0.1, 0.2, 0.3, 0.4, 0.1, 0.5, 0.6, 0.2, 0.9, 0.9, 0.9,
                            0.9);
    EXPECT(run1(nms_case(boxes, scores, 3, 0.5f, 0.2f)), XF_DT_INT64, DIMS(10, 3), 0, 0, 1, 0, 0, 3, 0, 0, 0, 0, 1, 3,
           0, 1, 2, 1, 0, 2, 1, 0, 1, 1, 1, 0, 1, 1, 1, 1, 1, 2);
    /* NaN scores come last */
    EXPECT(run1(nms_case(F32(DIMS(1, 2, 4), 0, 0, 1, 1, 0, 2, 1, 3), F32(DIMS(1, 1, 2), NAN, 0.5), 2, 0.5f, -1)),
           XF_DT_INT64, DIMS(2, 3), 0, 0, 1, 0, 0, 0);
}
END_TEST

/* Boxes of no area suppress nothing; identical boxes suppress each other
 * at IoU threshold 0; no selection at all where max_output_boxes_per_class
 * is 0, negative or omitted. */
START_TEST(nms_degenerate)
{
    EXPECT(run1(nms_case(F32(DIMS(1, 2, 4), 0, 0, 0, 0, 0, 0, 0, 0), F32(DIMS(1, 1, 2), 0.9, 0.8), 2, 0, -1)),
           XF_DT_INT64, DIMS(2, 3), 0, 0, 0, 0, 0, 1);
    EXPECT(run1(nms_case(F32(DIMS(1, 2, 4), 0, 0, 1, 1, 0, 0, 1, 1), F32(DIMS(1, 1, 2), 0.9, 0.8), 2, 0, -1)),
           XF_DT_INT64, DIMS(1, 3), 0, 0, 0);
    for (int64_t max = -1; max <= 0; max++)
        EXPECT(run1(nms_case(F32(DIMS(1, 1, 4), 0, 0, 1, 1), F32(DIMS(1, 1, 1), 0.9), max, 0.5f, -1)), XF_DT_INT64,
               DIMS(0, 3), 0);
    node_case c = make_case(NMS, 2, F32(DIMS(1, 1, 4), 0, 0, 1, 1), F32(DIMS(1, 1, 1), 0.9));
    c.feed = 3;
    EXPECT(run1(c), XF_DT_INT64, DIMS(0, 3), 0);
}
END_TEST

/* The output shape is inferred where every input's value is known (here
 * all constants); with boxes fed at run time it is not, and the session
 * infers it on each run. */
START_TEST(nms_shape_from_values)
{
    node_case c = nms_case(F32(DIMS(1, 3, 4), 0, 0, 1, 1, 0, 0, 1, 1, 5, 5, 6, 6), F32(DIMS(1, 1, 3), 0.1, 0.2, 0.3),
                           3, 0.5f, -1);
    c.feed = 0;
    xf_graph *g = case_graph(&c);
    xf_error e = {0};
    ck_assert_msg(xf_graph_infer_shapes(g, 11, &e) == XF_OK, "%s", e.msg);
    const xf_value *out = &g->values[g->outputs[0]];
    ck_assert(out->dtype == XF_DT_INT64 && out->shape.ndim == 2 && out->shape.dims[0] == 2 && out->shape.dims[1] == 3);
    xf_session *s;
    ck_assert_msg(xf_session_create(g, 11, "cpu_ref", NULL, &s, &e) == XF_OK, "%s", e.msg);
    ck_assert(!xf_session_is_dynamic(s));
    xf_session_free(s);
    xf_graph_free(g);
    c.feed = 1;
    g = case_graph(&c);
    ck_assert_msg(xf_graph_infer_shapes(g, 11, &e) == XF_OK, "%s", e.msg);
    ck_assert_int_eq(g->values[g->outputs[0]].shape.ndim, -1);
    ck_assert_msg(xf_session_create(g, 11, "cpu_ref", NULL, &s, &e) == XF_OK, "%s", e.msg);
    ck_assert(xf_session_is_dynamic(s));
    xf_session_free(s);
    xf_graph_free(g);
    EXPECT(run1(c), XF_DT_INT64, DIMS(2, 3), 0, 0, 2, 0, 0, 1);
}
END_TEST

/* ------------------------------------------------------------ errors */

/* Operands and attributes that do not fit fail inference, naming the node. */
START_TEST(shape_errors)
{
    xf_tensor *r1 = F32(DIMS(1, 4), 0, 0, 1, 1);
    node_case c = roi_case(RAMP(), r1, I64(DIMS(1), 0), 0, 1, 0);
    expect_infer_error(c, "output_height 0 and output_width 1 must be at least 1");
    c = roi_case(RAMP(), F32(DIMS(1, 4), 0, 0, 1, 1), I64(DIMS(1), 0), 1, 1, -1);
    expect_infer_error(c, "sampling_ratio -1 is negative");
    c = roi_case(RAMP(), F32(DIMS(1, 4), 0, 0, 1, 1), I64(DIMS(1), 0), 1, 1, 0);
    c.a.roi_spatial_scale = INFINITY;
    expect_infer_error(c, "spatial_scale inf is not finite");
    expect_infer_error(roi_case(iota_f32(DIMS(4, 4), 0), F32(DIMS(1, 4), 0, 0, 1, 1), I64(DIMS(1), 0), 1, 1, 0),
                       "X must have shape [N, C, H, W], got 4x4");
    expect_infer_error(roi_case(RAMP(), F32(DIMS(1, 3), 0, 0, 1), I64(DIMS(1), 0), 1, 1, 0),
                       "rois must have shape [num_rois, 4], got 1x3");
    expect_infer_error(roi_case(RAMP(), F32(DIMS(1, 4), 0, 0, 1, 1), I64(DIMS(2), 0, 0), 1, 1, 0),
                       "batch_indices must have shape [1] (one per ROI), got 2");
    expect_infer_error(roi_case(RAMP(), F32(DIMS(1, 4), 0, 0, 1, 1), I32(DIMS(1), 0), 1, 1, 0),
                       "input 2 must be INT64");
    expect_infer_error(roi_case(I32(DIMS(1, 1, 1, 1), 0), I32(DIMS(1, 4), 0, 0, 1, 1), I64(DIMS(1), 0), 1, 1, 0),
                       "X must be a floating-point tensor");
    expect_infer_error(nms_case(F32(DIMS(1, 1, 3), 0, 0, 1), F32(DIMS(1, 1, 1), 1), 1, 0, -1),
                       "boxes must have shape [batches, boxes, 4], got 1x1x3");
    expect_infer_error(nms_case(F32(DIMS(1, 1, 4), 0, 0, 1, 1), F32(DIMS(1, 1, 2), 1, 1), 1, 0, -1),
                       "scores must have shape [1, classes, 1] for boxes of shape 1x1x4, got 1x1x2");
    c = nms_case(F32(DIMS(1, 1, 4), 0, 0, 1, 1), F32(DIMS(1, 1, 1), 1), 1, 0, -1);
    c.a.center_point_box = 2;
    expect_infer_error(c, "center_point_box is 2, not 0 or 1");
    c = nms_case(F32(DIMS(1, 1, 4), 0, 0, 1, 1), F32(DIMS(1, 1, 1), 1), 1, 0, -1);
    xf_tensor_release(c.in[3]);
    c.in[3] = F32(DIMS(2), 0.5, 0.5);
    expect_infer_error(c, "iou_threshold must be a scalar, got shape 2");
    c = nms_case(F32(DIMS(1, 1, 4), 0, 0, 1, 1), F32(DIMS(1, 1, 1), 1), 1, 0, -1);
    xf_tensor_release(c.in[2]);
    c.in[2] = I32(DIMS(1), 1);
    expect_infer_error(c, "input 2 must be INT64");
}
END_TEST

START_TEST(run_errors)
{
    expect_run_error(roi_case(RAMP(), F32(DIMS(1, 4), 0, 0, 1, 1), I64(DIMS(1), 1), 1, 1, 0),
                     "batch index 1 of ROI 0 is out of range for 1 images");
    expect_run_error(roi_case(RAMP(), F32(DIMS(1, 4), 0, NAN, 1, 1), I64(DIMS(1), 0), 1, 1, 0),
                     "ROI 0 has a coordinate that is not finite");
    expect_run_error(roi_case(RAMP(), F32(DIMS(1, 4), 0, 0, 1e30, 1e30), I64(DIMS(1), 0), 1, 1, 0),
                     "samples per output bin");
    expect_run_error(roi_case(iota_f32(DIMS(1, 1, 0, 4), 0), F32(DIMS(1, 4), 0, 0, 1, 1), I64(DIMS(1), 0), 1, 1, 0),
                     "X's feature maps are empty");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("detect");
    TCase *tc = tcase_create("roi_align");
    tcase_add_test(tc, roi_align_average);
    tcase_add_test(tc, roi_align_borders);
    tcase_add_test(tc, roi_align_max);
    tcase_add_test(tc, roi_align_images_and_scale);
    tcase_add_test(tc, roi_align_matches_reference_bits);
    tcase_add_test(tc, roi_align_other_precisions);
    suite_add_tcase(s, tc);
    tc = tcase_create("nms");
    tcase_add_test(tc, nms_suppress_by_iou);
    tcase_add_test(tc, nms_threshold_and_box_forms);
    tcase_add_test(tc, nms_order_ties_and_scores);
    tcase_add_test(tc, nms_degenerate);
    tcase_add_test(tc, nms_shape_from_values);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, shape_errors);
    tcase_add_test(tc, run_errors);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
