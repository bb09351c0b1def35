/* DFT, STFT, HannWindow, HammingWindow and BlackmanWindow: cpu_ref against
 * transforms worked by hand and the windows' closed forms, the shape rules
 * and their errors, and the attributes through ONNX import and export. */
#include "kernel_case_util.h"
#include "proto_util.h"
#include "xf_test_util.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A DFT of x (opset 17, axis 1). */
static node_case dft_case(xf_tensor *x) { return make_case(XF_OP_DFT, 1, x); }

/* ------------------------------------------------------------ DFT */

/* x = [1, 2, 3, 4]: X[k] = sum x[t] (-i)^(k t), so X = 10, -2 + 2i, -2,
 * -2 - 2i; onesided keeps k <= 4 / 2. */
START_TEST(dft_real)
{
    EXPECT(run1(dft_case(F32(DIMS(1, 4, 1), 1, 2, 3, 4))), XF_DT_FLOAT, DIMS(1, 4, 2), 10, 0, -2, 2, -2, 0, -2, -2);
    node_case c = dft_case(F32(DIMS(1, 4, 1), 1, 2, 3, 4));
    c.a.dft_onesided = 1;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 3, 2), 10, 0, -2, 2, -2, 0);
    /* an odd length: x = [1, 1, 1] has all its energy in X[0]; onesided
     * keeps 3 / 2 + 1 = 2 bins */
    c = dft_case(F32(DIMS(1, 3, 1), 1, 1, 1));
    c.a.dft_onesided = 1;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 2, 2), 3, 0, 0, 0);
}
END_TEST

/* The inverse of the spectrum above gives x back (scaled by 1/4), as a
 * complex signal with zero imaginary parts. */
START_TEST(dft_inverse_round_trip)
{
    node_case c = dft_case(F32(DIMS(1, 4, 2), 10, 0, -2, 2, -2, 0, -2, -2));
    c.a.dft_inverse = 1;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 4, 2), 1, 0, 2, 0, 3, 0, 4, 0);
    /* a real input to the inverse: [4, 0, 0, 0] is the spectrum of ones */
    c = dft_case(F32(DIMS(1, 4, 1), 4, 0, 0, 0));
    c.a.dft_inverse = 1;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 4, 2), 1, 0, 1, 0, 1, 0, 1, 0);
}
END_TEST

/* x = [i, 1]: X[0] = 1 + i, X[1] = i - 1. */
/* Inverse and onesided: the inverse real transform.  [1, 2, 3, 4]'s bins
 * 10, -2 + 2i, -2 give it back at the default 2 (3 - 1) points (bin 0's
 * imaginary part, 7 here, drops out); [1, 2, 3, 4, 5]'s first three bins
 * (15, -2.5 + 3.4409548i, -2.5 + 0.81229924i) give it back at 5. */
START_TEST(dft_irfft)
{
    node_case c = dft_case(F32(DIMS(1, 3, 2), 10, 7, -2, 2, -2, 0));
    c.a.dft_inverse = c.a.dft_onesided = 1;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 4, 1), 1, 2, 3, 4);
    c = make_case(XF_OP_DFT, 2, F32(DIMS(1, 3, 2), 15, 0, -2.5, 3.4409548f, -2.5, 0.81229924f), I64(SCALAR, 5));
    c.a.dft_inverse = c.a.dft_onesided = 1;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 5, 1), 1, 2, 3, 4, 5);
}
END_TEST

START_TEST(dft_complex)
{
    EXPECT(run1(dft_case(F32(DIMS(1, 2, 2), 0, 1, 1, 0))), XF_DT_FLOAT, DIMS(1, 2, 2), 1, 1, -1, 1);
    /* in double */
    static const double x[] = {0, 1, 1, 0};
    EXPECT(run1(dft_case(mk(XF_DT_DOUBLE, DIMS(1, 2, 2), x))), XF_DT_DOUBLE, DIMS(1, 2, 2), 1, 1, -1, 1);
    /* in float16, computed in float and rounded once */
    uint16_t h[4];
    for (int i = 0; i < 4; i++)
        h[i] = xf_f32_to_f16((float)x[i]);
    EXPECT(run1(dft_case(mk(XF_DT_FLOAT16, DIMS(1, 2, 2), h))), XF_DT_FLOAT16, DIMS(1, 2, 2), 1, 1, -1, 1);
}
END_TEST

/* dft_length pads with zeros or cuts: [1, 2] over 4 points is 1 + 2
 * (-i)^k = 3, 1 - 2i, -1, 1 + 2i; [1, 2, 3, 4] over 2 points is 3, -1. */
START_TEST(dft_length)
{
    node_case c = make_case(XF_OP_DFT, 2, F32(DIMS(1, 2, 1), 1, 2), I64(SCALAR, 4));
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 4, 2), 3, 0, 1, -2, -1, 0, 1, 2);
    c = make_case(XF_OP_DFT, 2, F32(DIMS(1, 4, 1), 1, 2, 3, 4), I32(SCALAR, 2));
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 2, 2), 3, 0, -1, 0);
    /* a length only known at run time */
    c = make_case(XF_OP_DFT, 2, F32(DIMS(1, 2, 1), 1, 2), I64(SCALAR, 4));
    c.feed = 2;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 4, 2), 3, 0, 1, -2, -1, 0, 1, 2);
}
END_TEST

/* x = [[1, 2], [3, 4]]: along axis 0 each column gives (sum, difference),
 * along axis 1 (or -2) each row does. */
START_TEST(dft_axes)
{
    node_case c = dft_case(F32(DIMS(2, 2, 1), 1, 2, 3, 4));
    c.a.axis = 0;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(2, 2, 2), 4, 0, 6, 0, -2, 0, -2, 0);
    c = dft_case(F32(DIMS(2, 2, 1), 1, 2, 3, 4));
    c.a.axis = -2;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(2, 2, 2), 3, 0, -1, 0, 7, 0, -1, 0);
    /* opset 20: the axis input, whatever the attribute's default says */
    c = make_case(XF_OP_DFT, 3, F32(DIMS(2, 2, 1), 1, 2, 3, 4), NULL, I64(SCALAR, 0));
    c.opset = 20;
    c.a.axis = -2;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(2, 2, 2), 4, 0, 6, 0, -2, 0, -2, 0);
    c = make_case(XF_OP_DFT, 3, F32(DIMS(2, 2, 1), 1, 2, 3, 4), I64(SCALAR, 1), I64(SCALAR, -3));
    c.opset = 20;
    c.feed = 4; /* one point along axis -3 (0), the axis known at run time: the first row */
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 2, 2), 1, 0, 2, 0);
}
END_TEST

/* ------------------------------------------------------------ STFT */

/* [1, 2, 3, 4] in frames of 2 every 2 samples: [1, 2] gives 3, -1 and
 * [3, 4] gives 7, -1 (onesided, the default, keeps 2 / 2 + 1 bins). */
START_TEST(stft_frames)
{
    node_case c = make_case(XF_OP_STFT, 4, F32(DIMS(1, 4, 1), 1, 2, 3, 4), I64(SCALAR, 2), NULL, I64(SCALAR, 2));
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 2, 2, 2), 3, 0, -1, 0, 7, 0, -1, 0);
    /* the window [0.5, 1] weighs each frame: [0.5, 2] and [1.5, 4] */
    c = make_case(XF_OP_STFT, 3, F32(DIMS(1, 4, 1), 1, 2, 3, 4), I64(SCALAR, 2), F32(DIMS(2), 0.5, 1));
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 2, 2, 2), 2.5, 0, -1.5, 0, 5.5, 0, -2.5, 0);
    /* a signal [batch, length] is real, as ONNX Runtime reads it */
    c = make_case(XF_OP_STFT, 3, F32(DIMS(1, 4), 1, 2, 3, 4), I64(SCALAR, 2), F32(DIMS(2), 0.5, 1));
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 2, 2, 2), 2.5, 0, -1.5, 0, 5.5, 0, -2.5, 0);
    c = make_case(XF_OP_STFT, 4, F32(DIMS(2, 3), 1, 2, 3, 4, 5, 6), I64(SCALAR, 1), NULL, I64(SCALAR, 2));
    c.a.dft_onesided = 0;
    c.feed = 2;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(2, 2, 2, 2), 3, 0, -1, 0, 5, 0, -1, 0, 9, 0, -1, 0, 11, 0, -1, 0);
    /* every bin (onesided 0) of frames of 4 every 2 samples over [1 .. 7]:
     * [1, 2, 3, 4] and [3, 4, 5, 6]; the last sample, which starts no
     * whole frame, is left out */
    c = make_case(XF_OP_STFT, 4, F32(DIMS(1, 7, 1), 1, 2, 3, 4, 5, 6, 7), I64(SCALAR, 2), NULL, I64(SCALAR, 4));
    c.a.dft_onesided = 0;
    c.feed = 2;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 2, 4, 2), 10, 0, -2, 2, -2, 0, -2, -2, 18, 0, -2, 2, -2, 0, -2, -2);
}
END_TEST

/* A complex signal [i, 1] in one frame, two signals in a batch. */
START_TEST(stft_complex_batch)
{
    node_case c = make_case(XF_OP_STFT, 2, F32(DIMS(2, 2, 2), 0, 1, 1, 0, 1, 0, 1, 0), I64(SCALAR, 1));
    c.a.dft_onesided = 0;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(2, 1, 2, 2), 1, 1, -1, 1, 2, 0, 0, 0);
}
END_TEST

/* ------------------------------------------------------------ windows */

/* A window of op over size samples, symmetric or periodic, made in dtype
 * (0: float); size from an initializer or a graph input (feed). */
static xf_tensor *window(xf_op op, int64_t size, bool symmetric, xf_dtype dtype, bool feed)
{
    node_case c = make_case(op, 1, I64(SCALAR, size));
    c.a.window_symmetric = symmetric;
    c.a.output_dtype = dtype;
    c.feed = feed;
    return run1(c);
}

/* Size 4: the periodic window's period is 4 (cos(2 pi n / 4) = 1, 0, -1,
 * 0), the symmetric one's 3 (cos(2 pi n / 3) = 1, -1/2, -1/2, 1). */
START_TEST(window_closed_forms)
{
    for (int feed = 0; feed < 2; feed++) {
        /* sin^2(pi n / N) */
        EXPECT(window(XF_OP_HANN_WINDOW, 4, false, 0, feed), XF_DT_FLOAT, DIMS(4), 0, 0.5, 1, 0.5);
        EXPECT(window(XF_OP_HANN_WINDOW, 4, true, 0, feed), XF_DT_FLOAT, DIMS(4), 0, 0.75, 0.75, 0);
        /* 25/46 - 21/46 cos(2 pi n / N) */
        EXPECT(window(XF_OP_HAMMING_WINDOW, 4, false, 0, feed), XF_DT_FLOAT, DIMS(4), 4.0 / 46, 25.0 / 46, 1,
               25.0 / 46);
        EXPECT(window(XF_OP_HAMMING_WINDOW, 4, true, 0, feed), XF_DT_FLOAT, DIMS(4), 4.0 / 46, 35.5 / 46,
               35.5 / 46, 4.0 / 46);
        /* 0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N) */
        EXPECT(window(XF_OP_BLACKMAN_WINDOW, 4, false, 0, feed), XF_DT_FLOAT, DIMS(4), 0, 0.34, 1, 0.34);
        EXPECT(window(XF_OP_BLACKMAN_WINDOW, 4, true, 0, feed), XF_DT_FLOAT, DIMS(4), 0, 0.63, 0.63, 0);
    }
}
END_TEST

/* output_datatype: double; integers truncate (Hann's 0.5 becomes 0); an
 * int32 size; no samples; one symmetric sample has no period (0 / 0, NaN
 * as in ONNX's reference). */
START_TEST(window_types_and_sizes)
{
    EXPECT(window(XF_OP_HANN_WINDOW, 4, false, XF_DT_DOUBLE, false), XF_DT_DOUBLE, DIMS(4), 0, 0.5, 1, 0.5);
    EXPECT(window(XF_OP_HANN_WINDOW, 4, false, XF_DT_INT32, false), XF_DT_INT32, DIMS(4), 0, 0, 1, 0);
    node_case c = make_case(XF_OP_HAMMING_WINDOW, 1, I32(SCALAR, 2));
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(2), 4.0 / 46, 1);
    xf_tensor *none = window(XF_OP_BLACKMAN_WINDOW, 0, false, 0, true);
    ck_assert_int_eq(none->shape.ndim, 1);
    ck_assert_int_eq(none->shape.dims[0], 0);
    xf_tensor_release(none);
    EXPECT(window(XF_OP_HANN_WINDOW, 1, true, 0, false), XF_DT_FLOAT, DIMS(1), NAN);
    EXPECT(window(XF_OP_HANN_WINDOW, 1, false, 0, false), XF_DT_FLOAT, DIMS(1), 0);
}
END_TEST

/* ------------------------------------------------------------ shape rules */

/* Output shapes where the lengths are known, unknown where they are not. */
START_TEST(shapes)
{
    node_case c = make_case(XF_OP_STFT, 3, iota_f32(DIMS(2, 128, 1), 0), I64(SCALAR, 8), iota_f32(DIMS(16), 0));
    xf_graph *g = case_graph(&c);
    xf_error e = {0};
    ck_assert_msg(xf_graph_infer_shapes(g, 17, &e) == XF_OK, "%s", e.msg);
    const xf_shape *s = &g->values[g->outputs[0]].shape;
    ck_assert_int_eq(s->ndim, 4);
    ck_assert(s->dims[0] == 2 && s->dims[1] == 15 && s->dims[2] == 9 && s->dims[3] == 2);
    xf_graph_free(g);
    release_case(&c);
    c = make_case(XF_OP_HANN_WINDOW, 1, I64(SCALAR, 5));
    c.feed = 1;
    g = case_graph(&c);
    ck_assert_msg(xf_graph_infer_shapes(g, 17, &e) == XF_OK, "%s", e.msg);
    ck_assert_int_eq(g->values[g->outputs[0]].shape.ndim, -1);
    ck_assert_int_eq(g->values[g->outputs[0]].dtype, XF_DT_FLOAT);
    xf_graph_free(g);
    release_case(&c);
}
END_TEST

/* Operands and attributes that do not fit fail inference, naming the node. */
START_TEST(shape_errors)
{
    expect_infer_error(dft_case(iota_f32(DIMS(1, 2, 3), 0)), "[..., 2] (complex)");
    node_case c = dft_case(iota_f32(DIMS(1, 4, 1), 0));
    c.a.axis = 2;
    expect_infer_error(c, "axis 2 is out of range for rank 3");
    c = dft_case(iota_f32(DIMS(1, 4, 1), 0));
    c.a.axis = -1;
    expect_infer_error(c, "axis -1 is out of range");
    expect_infer_error(make_case(XF_OP_DFT, 2, iota_f32(DIMS(1, 4, 1), 0), I64(SCALAR, 0)),
                       "dft_length 0 is not positive");
    expect_infer_error(make_case(XF_OP_DFT, 2, iota_f32(DIMS(1, 4, 1), 0), I64(DIMS(2), 4, 4)),
                       "dft_length must be a scalar");
    expect_infer_error(make_case(XF_OP_DFT, 3, iota_f32(DIMS(1, 4, 1), 0), NULL, I64(SCALAR, 1)),
                       "axis is an input from opset 20 only");
    expect_infer_error(make_case(XF_OP_DFT, 1, I64(DIMS(1, 4, 1), 0, 0, 0, 0)), "must be a floating-point tensor");
    expect_infer_error(make_case(XF_OP_DFT, 2, iota_f32(DIMS(1, 4, 1), 0), F32(SCALAR, 4)),
                       "input 1 must be int32 or int64");
    expect_infer_error(make_case(XF_OP_STFT, 2, iota_f32(DIMS(4), 0), I64(SCALAR, 1)), "[batch, length, 1 or 2]");
    expect_infer_error(make_case(XF_OP_STFT, 2, iota_f32(DIMS(1, 4, 3), 0), I64(SCALAR, 1)),
                       "or [batch, length], got 1x4x3");
    expect_infer_error(make_case(XF_OP_STFT, 2, iota_f32(DIMS(1, 4, 1), 0), I64(SCALAR, 0)),
                       "frame_step 0 is not positive");
    expect_infer_error(make_case(XF_OP_STFT, 4, iota_f32(DIMS(1, 4, 1), 0), I64(SCALAR, 1), iota_f32(DIMS(2), 0),
                                 I64(SCALAR, 3)),
                       "the window has 2 samples but frame_length is 3");
    expect_infer_error(make_case(XF_OP_STFT, 4, iota_f32(DIMS(1, 4, 1), 0), I64(SCALAR, 1), NULL, I64(SCALAR, 5)),
                       "frame_length 5 must be 1 to the signal's length 4");
    expect_infer_error(make_case(XF_OP_STFT, 3, iota_f32(DIMS(1, 4, 1), 0), I64(SCALAR, 1), iota_f32(DIMS(2, 2), 0)),
                       "window must be 1-D");
    expect_infer_error(make_case(XF_OP_STFT, 3, iota_f32(DIMS(1, 4, 1), 0), I64(SCALAR, 1), mk(XF_DT_DOUBLE, DIMS(2),
                       (double[]){1, 1})), "the window is DOUBLE but the signal is FLOAT");
    expect_infer_error(make_case(XF_OP_HANN_WINDOW, 1, I64(SCALAR, -1)), "size -1 is negative");
    expect_infer_error(make_case(XF_OP_BLACKMAN_WINDOW, 1, F32(SCALAR, 4)), "size must be int32 or int64");
}
END_TEST

/* A DFT whose length arrives at run time and does not fit fails the run,
 * naming the node. */
START_TEST(run_errors)
{
    node_case c = make_case(XF_OP_DFT, 2, iota_f32(DIMS(1, 4, 1), 0), I64(SCALAR, -2));
    c.feed = 2;
    expect_run_error(c, "dft_length -2 is not positive");
}
END_TEST

/* ------------------------------------------------------------ ONNX attributes */

/* A graph of a DFT (inverse, axis, or onesided), an STFT (onesided 0) and
 * the three windows (symmetric, made in double) under opset; form 1
 * gives values xflow does not model (DFT inverse 2, a window made in
 * bool), which keep those nodes opaque. */
static Onnx__GraphProto *signal_graph(int64_t opset, int form)
{
    static const int64_t d[] = {1, 8, 1}, s[] = {1, 8, 2}, none[1] = {0};
    Onnx__GraphProto *g = mk_graph("g");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 3, d, NULL));
    PUSH(g->n_input, g->input, mk_vi("xc", XF_DT_FLOAT, 3, s, NULL));
    static const int64_t one = 1, four = 4; /* mk_raw keeps the pointer */
    PUSH(g->n_initializer, g->initializer, mk_raw("step", XF_DT_INT64, 0, none, &four, sizeof four));
    PUSH(g->n_initializer, g->initializer, mk_raw("size", XF_DT_INT64, 0, none, &four, sizeof four));
    PUSH(g->n_initializer, g->initializer, mk_raw("ax", XF_DT_INT64, 0, none, &one, sizeof one));
    const char *inv_in[] = {"xc", opset >= 20 ? "" : NULL, opset >= 20 ? "ax" : NULL, NULL};
    Onnx__NodeProto *n = mk_node("DFT", "inv", inv_in, (const char *[]){"y0", NULL});
    attr_int(n, "inverse", form == 1 ? 2 : 1);
    if (opset < 20)
        attr_int(n, "axis", -2);
    PUSH(g->n_node, g->node, n);
    PUSH(g->n_node, g->node, n = mk_node("DFT", "one", (const char *[]){"x", NULL}, (const char *[]){"y1", NULL}));
    attr_int(n, "onesided", 1);
    n = mk_node("STFT", "st", (const char *[]){"x", "step", NULL}, (const char *[]){"y2", NULL});
    PUSH(g->n_node, g->node, n);
    attr_int(n, "onesided", 0);
    static const char *const windows[] = {"HannWindow", "HammingWindow", "BlackmanWindow"};
    static const char *const outs[] = {"w0", "w1", "w2"};
    for (int k = 0; k < 3; k++) {
        n = mk_node(windows[k], outs[k], (const char *[]){"size", NULL}, (const char *[]){outs[k], NULL});
        PUSH(g->n_node, g->node, n);
        attr_int(n, "periodic", 0);
        attr_int(n, "output_datatype", form == 1 && k == 2 ? XF_DT_BOOL : XF_DT_DOUBLE);
    }
    static const char *const ys[] = {"y0", "y1", "y2", "w0", "w1", "w2"};
    for (int k = 0; k < 6; k++)
        PUSH(g->n_output, g->output, mk_vi(ys[k], k < 3 ? XF_DT_FLOAT : XF_DT_DOUBLE, -1, NULL, NULL));
    return g;
}

START_TEST(attributes_round_trip)
{
    for (int64_t opset = 17; opset <= 20; opset += 3) {
        int counts[XF_OP_COUNT + 1];
        xf_model *m = load_counting(signal_graph(opset, 0), opset, counts);
        const xf_graph *g = m->graph;
        ck_assert_int_eq(counts[XF_OP_OPAQUE], 0);
        ck_assert_int_eq(counts[XF_OP_DFT], 2);
        const xf_attrs *inv = &g->nodes[find_node_by_output(g, "y0")].attrs;
        const xf_attrs *one = &g->nodes[find_node_by_output(g, "y1")].attrs;
        ck_assert(inv->dft_inverse && !inv->dft_onesided && inv->axis == -2);
        ck_assert(one->dft_onesided && !one->dft_inverse && one->axis == (opset >= 20 ? -2 : 1));
        ck_assert(!g->nodes[find_node_op(g, XF_OP_STFT)].attrs.dft_onesided);
        for (xf_op op = XF_OP_HANN_WINDOW; op <= XF_OP_BLACKMAN_WINDOW; op++) {
            const xf_node *w = &g->nodes[find_node_op(g, op)];
            ck_assert(w->attrs.window_symmetric && w->attrs.output_dtype == XF_DT_DOUBLE);
            ck_assert_int_eq(g->values[w->outputs[0]].dtype, XF_DT_DOUBLE);
        }
        xf_model_free(roundtrip(m));
        if (opset < 20) /* the checker of the onnx this platform has knows DFT up to opset 17 */
            assert_saved_valid(m, "signal17");
        if (opset >= 20) { /* an axis that opset 20 holds only as an input */
            m->graph->nodes[find_node_by_output(m->graph, "y1")].attrs.axis = 1;
            expect_export_refused(m, "node 'one' (DFT)", "cannot express", NULL);
        }
        xf_model_free(m);
    }
}
END_TEST

/* Values xflow does not model keep their nodes opaque, and so does an
 * axis attribute on an opset 20 DFT. */
START_TEST(attributes_opaque)
{
    int counts[XF_OP_COUNT + 1];
    xf_model *m = load_counting(signal_graph(17, 1), 17, counts);
    ck_assert_int_eq(counts[XF_OP_OPAQUE], 2);
    ck_assert_int_eq(counts[XF_OP_DFT], 1);
    ck_assert_int_eq(counts[XF_OP_BLACKMAN_WINDOW], 0);
    ck_assert_int_eq(counts[XF_OP_HANN_WINDOW], 1);
    xf_model_free(roundtrip(m));
    xf_model_free(m);
    static const int64_t d[] = {1, 8, 1};
    Onnx__GraphProto *g = mk_graph("g");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 3, d, NULL));
    Onnx__NodeProto *n = mk_node("DFT", "d", (const char *[]){"x", NULL}, (const char *[]){"y", NULL});
    attr_int(n, "axis", 1);
    PUSH(g->n_node, g->node, n);
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, -1, NULL, NULL));
    m = load_counting(g, 20, counts);
    ck_assert_int_eq(counts[XF_OP_OPAQUE], 1);
    xf_model_free(m);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("signal");
    TCase *tc = tcase_create("dft");
    tcase_add_test(tc, dft_real);
    tcase_add_test(tc, dft_inverse_round_trip);
    tcase_add_test(tc, dft_complex);
    tcase_add_test(tc, dft_irfft);
    tcase_add_test(tc, dft_length);
    tcase_add_test(tc, dft_axes);
    suite_add_tcase(s, tc);
    tc = tcase_create("stft");
    tcase_add_test(tc, stft_frames);
    tcase_add_test(tc, stft_complex_batch);
    suite_add_tcase(s, tc);
    tc = tcase_create("windows");
    tcase_add_test(tc, window_closed_forms);
    tcase_add_test(tc, window_types_and_sizes);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, shapes);
    tcase_add_test(tc, shape_errors);
    tcase_add_test(tc, run_errors);
    suite_add_tcase(s, tc);
    tc = tcase_create("attributes");
    tcase_add_checked_fixture(tc, NULL, free_allocs);
    tcase_add_test(tc, attributes_round_trip);
    tcase_add_test(tc, attributes_opaque);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
