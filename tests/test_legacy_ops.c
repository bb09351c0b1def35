/* The experimental ops of opsets 1 to 9 that older exporters wrote and
 * ONNX Runtime still runs (Affine, Scale, ScaledTanh, ParametricSoftplus,
 * ImageScaler, Crop): cpu_ref against values worked by hand (and equal to
 * ONNX Runtime's), the shape rules and their errors naming the node, the
 * attributes through ONNX import and export (known before opset 10, opaque
 * from it, refused when written at 10), the cpu backend against cpu_ref and
 * the cuda backend's support check; the attributes of opsets 1 to 6 that
 * later opsets dropped (broadcast, is_test). */
#include "backend_util.h"
#include "kernel_case_util.h"
#include "proto_util.h"
#include "xf_test_util.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

static node_case legacy(xf_op op, xf_tensor *x, float alpha, float beta)
{
    node_case c = make_case(op, 1, x);
    c.a.alpha = alpha;
    c.a.beta = beta;
    c.opset = 9;
    return c;
}

static node_case image_scaler(xf_tensor *x, float scale, xf_tensor *bias)
{
    node_case c = legacy(XF_OP_IMAGE_SCALER, x, scale, 1);
    c.a.value = bias;
    return c;
}

/* border (left, top, right, bottom), and scale (height, width) when h >= 0 */
static node_case crop(xf_tensor *x, int64_t left, int64_t top, int64_t right, int64_t bottom, int64_t h, int64_t w)
{
    node_case c = legacy(XF_OP_CROP, x, 1, 1);
    int64_t border[4] = {left, top, right, bottom};
    memcpy(c.a.pads, border, sizeof border);
    c.a.has_pads = true;
    if (h >= 0) {
        c.a.n_spatial = 2;
        c.a.kernel[0] = h;
        c.a.kernel[1] = w;
    }
    return c;
}

START_TEST(elementwise_values)
{
    EXPECT(run1(legacy(XF_OP_AFFINE, F32(DIMS(3), -2, 0, 1.5), 2, 1)), XF_DT_FLOAT, DIMS(3), -3, 1, 4);
    EXPECT(run1(legacy(XF_OP_SCALE, F32(DIMS(2), -2, 0.5), 3, 1)), XF_DT_FLOAT, DIMS(2), -6, 1.5);
    /* 2 tanh(x / 2) and 2 ln(1 + e^(x / 2)) at x = -2, 0, 2 (ONNX Runtime
     * gives -1.5231884 and 0.62652326 at -2) */
    EXPECT(run1(legacy(XF_OP_SCALED_TANH, F32(DIMS(3), -2, 0, 2), 2, 0.5f)), XF_DT_FLOAT, DIMS(3), -1.5231884, 0,
           1.5231884);
    EXPECT(run1(legacy(XF_OP_PARAMETRIC_SOFTPLUS, F32(DIMS(3), -2, 0, 2), 2, 0.5f)), XF_DT_FLOAT, DIMS(3), 0.6265234,
           1.3862944, 2.6265234);
    /* far out on either side: x, and 0, without overflow */
    EXPECT(run1(legacy(XF_OP_PARAMETRIC_SOFTPLUS, F32(DIMS(2), 100, -800), 1, 1)), XF_DT_FLOAT, DIMS(2), 100, 0);
}
END_TEST

/* 0.5 x + bias[channel] over three channels of two pixels; without a bias,
 * only the scale. */
START_TEST(image_scaler_values)
{
    EXPECT(run1(image_scaler(F32(DIMS(1, 3, 1, 2), -2, 4, 0, 2, 6, -6), 0.5f, F32(DIMS(3), 1, 2, 3))), XF_DT_FLOAT,
           DIMS(1, 3, 1, 2), 0, 3, 2, 3, 6, 0);
    EXPECT(run1(image_scaler(F32(DIMS(2, 1, 1, 2), 1, 2, 3, 4), 2, NULL)), XF_DT_FLOAT, DIMS(2, 1, 1, 2), 2, 4, 6, 8);
}
END_TEST

/* A 6x6 image of 0..35: border (1, 2, 0, 1) keeps rows 2 to 4 and columns
 * 1 to 5; with scale (2, 3), rows 2 and 3 and columns 1 to 3. */
START_TEST(crop_values)
{
    EXPECT(run1(crop(iota_f32(DIMS(1, 1, 6, 6), 0), 1, 2, 0, 1, -1, 0)), XF_DT_FLOAT, DIMS(1, 1, 3, 5), 13, 14, 15,
           16, 17, 19, 20, 21, 22, 23, 25, 26, 27, 28, 29);
    EXPECT(run1(crop(iota_f32(DIMS(2, 1, 6, 6), 0), 1, 2, 0, 1, 2, 3)), XF_DT_FLOAT, DIMS(2, 1, 2, 3), 13, 14, 15,
           19, 20, 21, 49, 50, 51, 55, 56, 57);
    EXPECT(run1(crop(iota_f32(DIMS(1, 1, 2, 2), 0), 0, 0, 0, 0, -1, 0)), XF_DT_FLOAT, DIMS(1, 1, 2, 2), 0, 1, 2, 3);
}
END_TEST

START_TEST(shape_errors)
{
    expect_infer_error(image_scaler(iota_f32(DIMS(1, 3, 2, 2), 0), 1, F32(DIMS(2), 1, 2)),
                       "bias has 2 values for 3 channels");
    expect_infer_error(image_scaler(iota_f32(DIMS(3, 2, 2), 0), 1, NULL), "input must have shape [N, C, H, W]");
    expect_infer_error(crop(iota_f32(DIMS(1, 1, 4, 4), 0), 0, 3, 0, 2, -1, 0), "does not fit in 4x4");
    expect_infer_error(crop(iota_f32(DIMS(1, 1, 4, 4), 0), -1, 0, 0, 0, -1, 0), "does not fit in 4x4");
    expect_infer_error(crop(iota_f32(DIMS(1, 1, 4, 4), 0), 1, 1, 0, 0, 2, 4), "scale 2x4 at (1, 1) does not fit");
    expect_infer_error(legacy(XF_OP_AFFINE, mk(XF_DT_INT32, DIMS(2), (int32_t[]){1, 2}), 1, 0),
                       "must be a floating-point tensor");
}
END_TEST

/* ------------------------------------------------------------ other backends */

enum { N_OP_GRAPHS = 6 };
static xf_graph *op_graph(int which)
{
    static const xf_op unary[] = {XF_OP_AFFINE, XF_OP_SCALE, XF_OP_SCALED_TANH, XF_OP_PARAMETRIC_SOFTPLUS};
    node_case c;
    if (which < 4)
        c = legacy(unary[which], iota_f32(DIMS(2, 3, 5), -3), 1.5f, -0.75f);
    else if (which == 4)
        c = image_scaler(iota_f32(DIMS(2, 3, 4, 5), 0), 0.25f, F32(DIMS(3), 1, -2, 0.5));
    else
        c = crop(iota_f32(DIMS(2, 3, 7, 6), 0), 2, 1, 1, 3, -1, 0);
    c.feed = 1;
    xf_graph *g = case_graph(&c);
    release_case(&c);
    return g;
}

/* The cpu backend runs them (through cpu_ref's kernels) as cpu_ref does;
 * the cuda backend takes each, to run through cpu_ref on host copies. */
START_TEST(backends_run_them)
{
    xf_bt_through_ref(op_graph, N_OP_GRAPHS, 9);
}
END_TEST

/* ------------------------------------------------------------ ONNX attributes */

/* One node of each op on a 1x3x6x6 image; form 1 gives Crop a border of
 * three values, which keeps it opaque. */
static Onnx__GraphProto *legacy_graph(int form)
{
    static const int64_t x4[] = {1, 3, 6, 6};
    static const char *const ops[] = {"Affine", "Scale", "ScaledTanh", "ParametricSoftplus", "ImageScaler", "Crop"};
    Onnx__GraphProto *g = mk_graph("g");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 4, x4, NULL));
    static const char *const ys[] = {"y0", "y1", "y2", "y3", "y4", "y5"};
    static const float bias[] = {1, 2, 3}; /* the attributes keep pointers to them */
    static const int64_t border[] = {1, 2, 0, 1}, scale[] = {2, 3};
    for (int i = 0; i < 6; i++) {
        Onnx__NodeProto *n = mk_node(ops[i], ops[i], (const char *[]){"x", NULL}, (const char *[]){ys[i], NULL});
        if (i == 0 || i == 2 || i == 3) {
            attr_float(n, "alpha", 0.5f);
            attr_float(n, "beta", 2);
        }
        if (i == 1 || i == 4)
            attr_float(n, "scale", 3);
        if (i == 4)
            attr_floats(n, "bias", 3, bias);
        if (i == 5) {
            attr_ints(n, "border", form == 1 ? 3 : 4, border);
            attr_ints(n, "scale", 2, scale);
        }
        PUSH(g->n_node, g->node, n);
        PUSH(g->n_output, g->output, mk_vi(ys[i], XF_DT_FLOAT, -1, NULL, NULL));
    }
    return g;
}

START_TEST(attributes_round_trip)
{
    int counts[XF_OP_COUNT + 1];
    xf_model *m = load_counting(legacy_graph(0), 9, counts);
    const xf_graph *g = m->graph;
    ck_assert_int_eq(counts[XF_OP_OPAQUE], 0);
    const xf_attrs *st = &g->nodes[find_node_op(g, XF_OP_SCALED_TANH)].attrs;
    ck_assert(st->alpha == 0.5f && st->beta == 2);
    ck_assert(g->nodes[find_node_op(g, XF_OP_SCALE)].attrs.alpha == 3);
    const xf_node *is = &g->nodes[find_node_op(g, XF_OP_IMAGE_SCALER)];
    ck_assert(is->attrs.alpha == 3 && is->attrs.value && xf_tensor_numel(is->attrs.value) == 3);
    ck_assert(((const float *)is->attrs.value->data)[2] == 3);
    const xf_node *cr = &g->nodes[find_node_op(g, XF_OP_CROP)];
    ck_assert(cr->attrs.pads[1] == 2 && cr->attrs.n_spatial == 2 && cr->attrs.kernel[1] == 3);
    ck_assert_int_eq(g->values[cr->outputs[0]].shape.dims[2], 2);
    ck_assert_int_eq(g->values[cr->outputs[0]].shape.dims[3], 3);
    xf_model *back = roundtrip(m); /* equal to m, attributes and all */
    xf_model_free(back);
    /* written at opset 10, which removed them: refused by name */
    m->opsets[0].version = 10;
    expect_export_refused(m, "node 'Affine' (Affine)", "was removed in opset 10; the model is written at 10", NULL);
    xf_model_free(m);
}
END_TEST

/* A border that is not four values keeps Crop opaque; from opset 10 the
 * names are not these ops, and every node stays opaque. */
START_TEST(attributes_opaque)
{
    int counts[XF_OP_COUNT + 1];
    xf_model *m = load_counting(legacy_graph(1), 9, counts);
    ck_assert_int_eq(counts[XF_OP_OPAQUE], 1);
    ck_assert_int_eq(counts[XF_OP_IMAGE_SCALER], 1);
    xf_model *back = roundtrip(m);
    xf_model_free(back);
    xf_model_free(m);
    static const int64_t opsets[] = {7, 8, 10, 13};
    for (int i = 0; i < 4; i++) {
        m = load_counting(legacy_graph(0), opsets[i], counts);
        ck_assert_int_eq(counts[XF_OP_OPAQUE], opsets[i] >= 10 ? 6 : 0);
        back = roundtrip(m);
        xf_model_free(back);
        xf_model_free(m);
    }
}
END_TEST

/* Opsets 1-6's broadcast flag of the binary ops and Gemm, an axis that
 * puts B at A's end, and BatchNormalization's is_test 1 are modelled (an
 * axis elsewhere and is_test 0 keep their nodes opaque); such a model runs
 * and is written back with broadcast and is_test. */
static Onnx__GraphProto *before7_graph(bool opaque_ones)
{
    static const int64_t d23[] = {2, 3}, d3[] = {3}, d2[] = {2}, d33[] = {3, 3}, x4[] = {1, 3, 1, 2};
    static const float w[9] = {1, 0, 0, 0, 2, 0, 0, 0, 3}, c[3] = {10, 20, 30}, ones[3] = {1, 1, 1},
                       zeros[3] = {0, 0, 0}, d[2] = {1, 2};
    Onnx__GraphProto *g = mk_graph("before7");
    PUSH(g->n_input, g->input, mk_vi("A", XF_DT_FLOAT, 2, d23, NULL));
    PUSH(g->n_input, g->input, mk_vi("B", XF_DT_FLOAT, 1, d3, NULL));
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 4, x4, NULL));
    PUSH(g->n_initializer, g->initializer, mk_raw("W", XF_DT_FLOAT, 2, d33, w, sizeof w));
    PUSH(g->n_initializer, g->initializer, mk_raw("C", XF_DT_FLOAT, 1, d3, c, sizeof c));
    PUSH(g->n_initializer, g->initializer, mk_raw("ones", XF_DT_FLOAT, 1, d3, ones, sizeof ones));
    PUSH(g->n_initializer, g->initializer, mk_raw("zeros", XF_DT_FLOAT, 1, d3, zeros, sizeof zeros));
    PUSH(g->n_initializer, g->initializer, mk_raw("D", XF_DT_FLOAT, 1, d2, d, sizeof d));
    Onnx__NodeProto *add = mk_node("Add", "add", (const char *[]){"A", "B", NULL}, (const char *[]){"y0", NULL});
    attr_int(add, "broadcast", 1);
    attr_int(add, "axis", 1);
    Onnx__NodeProto *mul = mk_node("Mul", "mul", (const char *[]){"A", "B", NULL}, (const char *[]){"y1", NULL});
    attr_int(mul, "broadcast", 1);
    Onnx__NodeProto *gemm =
        mk_node("Gemm", "gemm", (const char *[]){"A", "W", "C", NULL}, (const char *[]){"y2", NULL});
    attr_int(gemm, "broadcast", 1);
    attr_int(gemm, "transB", 1);
    Onnx__NodeProto *bn = mk_node("BatchNormalization", "bn", (const char *[]){"x", "ones", "C", "zeros", "ones", NULL},
                                  (const char *[]){"y3", NULL});
    attr_int(bn, "is_test", 1);
    attr_float(bn, "epsilon", 0);
    Onnx__NodeProto *nodes[] = {add, mul, gemm, bn};
    for (int i = 0; i < 4; i++) {
        PUSH(g->n_node, g->node, nodes[i]);
        PUSH(g->n_output, g->output, mk_vi(nodes[i]->output[0], XF_DT_FLOAT, -1, NULL, NULL));
    }
    if (opaque_ones) { /* D [2] along A's first axis; a BatchNormalization in training */
        Onnx__NodeProto *front =
            mk_node("Add", "front", (const char *[]){"A", "D", NULL}, (const char *[]){"y4", NULL});
        attr_int(front, "broadcast", 1);
        attr_int(front, "axis", 0);
        Onnx__NodeProto *train = mk_node("BatchNormalization", "train",
                                         (const char *[]){"x", "ones", "C", "zeros", "ones", NULL},
                                         (const char *[]){"y5", NULL});
        attr_int(train, "is_test", 0);
        PUSH(g->n_node, g->node, front);
        PUSH(g->n_node, g->node, train);
    }
    return g;
}

START_TEST(before_opset7_attributes)
{
    int counts[XF_OP_COUNT + 1];
    xf_model *m = load_counting(before7_graph(true), 6, counts);
    ck_assert_int_eq(counts[XF_OP_OPAQUE], 2);
    xf_model_free(m);
    m = load_counting(before7_graph(false), 6, counts);
    ck_assert(counts[XF_OP_OPAQUE] == 0 && counts[XF_OP_ADD] == 1 && counts[XF_OP_MUL] == 1 &&
              counts[XF_OP_GEMM] == 1 && counts[XF_OP_BATCH_NORM] == 1);
    static const float a[] = {1, 2, 3, 4, 5, 6}, b[] = {1, 10, 100}, x[] = {1, 2, 3, 4, 5, 6};
    xf_tensor *in[3] = {xf_tensor_from_data(XF_DT_FLOAT, &(xf_shape){2, {2, 3}}, a),
                        xf_tensor_from_data(XF_DT_FLOAT, &(xf_shape){1, {3}}, b),
                        xf_tensor_from_data(XF_DT_FLOAT, &(xf_shape){4, {1, 3, 1, 2}}, x)};
    xf_tensor *out[4] = {0};
    xf_session *s;
    xf_error e;
    ck_assert_msg(xf_session_create(m->graph, xf_model_opset(m), "cpu_ref", NULL, &s, &e) == XF_OK, "%s", e.msg);
    ck_assert_msg(xf_session_run(s, in, out, &e) == XF_OK, "%s", e.msg);
    static const int64_t d23[] = {2, 3}, x4[] = {1, 3, 1, 2};
    assert_values(out[0], 2, d23, (const float[]){2, 12, 103, 5, 15, 106});
    assert_values(out[1], 2, d23, (const float[]){1, 20, 300, 4, 50, 600});
    assert_values(out[2], 2, d23, (const float[]){11, 24, 39, 14, 30, 48});
    assert_values(out[3], 4, x4, (const float[]){11, 12, 23, 24, 35, 36});
    for (int k = 0; k < 4; k++)
        xf_tensor_release(out[k]);
    for (int k = 0; k < 3; k++)
        xf_tensor_release(in[k]);
    xf_session_free(s);
    /* written with broadcast (the axis dropped: numpy's rule needs none) and is_test */
    uint8_t *buf;
    Onnx__ModelProto *mp = saved_proto(m, &buf);
    for (size_t i = 0; i < mp->graph->n_node; i++) {
        const Onnx__NodeProto *n = mp->graph->node[i];
        bool bcast = false, axis = false, is_test = false;
        for (size_t k = 0; k < n->n_attribute; k++) {
            bcast |= strcmp(n->attribute[k]->name, "broadcast") == 0 && n->attribute[k]->i == 1;
            axis |= strcmp(n->attribute[k]->name, "axis") == 0;
            is_test |= strcmp(n->attribute[k]->name, "is_test") == 0 && n->attribute[k]->i == 1;
        }
        bool bn = strcmp(n->op_type, "BatchNormalization") == 0;
        ck_assert_msg(!axis && (bn ? is_test : bcast), "%s", n->op_type);
    }
    onnx__model_proto__free_unpacked(mp, NULL);
    free(buf);
    xf_model *back = roundtrip(m);
    xf_model_free(back);
    xf_model_free(m);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("legacy_ops");
    TCase *tc = tcase_create("kernels");
    tcase_add_test(tc, elementwise_values);
    tcase_add_test(tc, image_scaler_values);
    tcase_add_test(tc, crop_values);
    tcase_add_test(tc, shape_errors);
    suite_add_tcase(s, tc);
    tc = tcase_create("backends");
    tcase_add_test(tc, backends_run_them);
    suite_add_tcase(s, tc);
    tc = tcase_create("attributes");
    tcase_add_checked_fixture(tc, NULL, free_allocs);
    tcase_add_test(tc, attributes_round_trip);
    tcase_add_test(tc, attributes_opaque);
    tcase_add_test(tc, before_opset7_attributes);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
