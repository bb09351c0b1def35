/* STFT and DFT of floats on the cpu backend: the frames (a DFT's lines)
 * times the transform's matrix on oneDNN's sgemm (cpu_dnnl_signal.c; real
 * frames in halves, of even and odd lengths, down to 1 and 2 samples),
 * against cpu_ref's direct sums in double, within float's rounding of
 * the largest output.  STFTs of real signals ([batch, length, 1] and
 * [batch, length]) and complex ones, with a window, a frame_length, all
 * bins, more frames than one block holds; DFTs forward, inverse, and the
 * inverse of a onesided spectrum (even and odd lengths), zero-padded and
 * cut by dft_length, along an axis given as an input (opset 20); and the
 * forms that stay on cpu_ref's kernel: an axis before the last signal
 * axis, a transform whose matrix would pass the limit. */
#include "backend_util.h"
#include "core_builders.h"
#include "xf_runtime.h"
#include "xf_test_util.h"

#include <check.h>
#include <stdio.h>
#include <string.h>

/* How the cpu backend ran g's one node in its first run. */
static void impl_after_run(const xf_graph *g, int64_t opset, char *impl, size_t size)
{
    xf_session *s = NULL;
    xf_error e = {0};
    ck_assert_msg(xf_session_create(g, opset, "cpu", NULL, &s, &e) == XF_OK, "%s", e.msg);
    const xf_value *v = &g->values[g->inputs[0]];
    xf_tensor *x = xf_tensor_random(v->dtype, &v->shape, 5), *y = NULL;
    ck_assert_msg(xf_session_run(s, &x, &y, &e) == XF_OK, "%s", e.msg);
    ck_assert_int_eq(xf_session_graph(s)->n_nodes, 1);
    xf_session_node_impl(s, 0, impl, size);
    xf_tensor_release(x);
    xf_tensor_release(y);
    xf_session_free(s);
}

typedef struct stft_form {
    int64_t batch, length, comps; /* comps 0: a signal [batch, length] */
    int64_t step, frame;
    bool window, frame_input, all_bins;
} stft_form;

START_TEST(stft_forms)
{
    if (!xf_bt_have_cpu())
        return;
    static const stft_form forms[] = {
        {.batch = 2, .length = 1000, .comps = 1, .step = 160, .frame = 400, .window = true},
        {.batch = 1, .length = 48000, .comps = 0, .step = 64, .frame = 256, .window = true}, /* 747 frames */
        {.batch = 2, .length = 300, .comps = 2, .step = 50, .frame = 64, .window = true, .frame_input = true,
         .all_bins = true},
        {.batch = 3, .length = 257, .comps = 1, .step = 7, .frame = 31, .window = true, .frame_input = true},
        {.batch = 1, .length = 100, .comps = 0, .step = 1, .frame = 100},
        {.batch = 2, .length = 9, .comps = 1, .step = 1, .frame = 2, .window = true}, /* no sines */
        {.batch = 1, .length = 5, .comps = 0, .step = 2, .frame = 1, .all_bins = true},
    };
    for (int i = 0; i < (int)(sizeof forms / sizeof *forms); i++) {
        const stft_form *f = &forms[i];
        xf_graph *g = xf_graph_create("stft");
        int x = f->comps ? xf_bt_input(g, XF_DT_FLOAT, SHAPE(f->batch, f->length, f->comps))
                         : xf_bt_input(g, XF_DT_FLOAT, SHAPE(f->batch, f->length));
        int in[4] = {x, scalar_i64(g, f->step), f->window ? xf_bt_random_const(g, SHAPE(f->frame), true) : -1,
                     f->frame_input ? scalar_i64(g, f->frame) : -1};
        int s = node(g, XF_OP_STFT, NULL, f->frame_input ? 4 : 3, in, 1);
        attrs(g, s)->dft_onesided = !f->all_bins;
        xf_graph_add_output(g, out0(g, s));
        char what[64], impl[128];
        snprintf(what, sizeof what, "STFT, form %d", i);
        xf_bt_check_cpu(g, 17, -2e-6, 1e-4, what);
        impl_after_run(g, 17, impl, sizeof impl);
        ck_assert_msg(strstr(impl, "transform's matrix") != NULL, "%s runs as %s", what, impl);
        xf_graph_free(g);
    }
}
END_TEST

typedef struct dft_form {
    int rank;
    int64_t dims[4];
    int64_t axis, length; /* length 0: none given */
    bool inverse, onesided, axis_input, on_ref;
} dft_form;

START_TEST(dft_forms)
{
    if (!xf_bt_have_cpu())
        return;
    static const dft_form forms[] = {
        {3, {3, 100, 1}, 1, 0, false, true, false},          /* real, onesided */
        {4, {2, 5, 64, 2}, 2, 0, false, false, false},       /* complex, every bin */
        {3, {4, 50, 2}, -2, 0, true, false, false},          /* inverse */
        {3, {3, 33, 2}, 1, 0, true, true, false},            /* inverse of a onesided spectrum: 64 samples */
        {3, {3, 33, 2}, 1, 63, true, true, false},           /* the same, 63 */
        {3, {2, 100, 1}, 1, 128, false, true, false},        /* zero-padded */
        {3, {2, 100, 2}, 1, 60, false, false, false},        /* cut */
        {3, {2, 64, 1}, 1, 0, false, true, true},            /* the axis an input (opset 20) */
        {4, {2, 16, 8, 1}, 1, 0, false, false, false, true}, /* an earlier axis: cpu_ref's kernel */
        {3, {1, 3000, 1}, 1, 0, false, true, false, true},   /* 3000 x 3002 entries: cpu_ref's kernel */
        {3, {1, 1400, 1}, 1, 0, false, true, false},         /* 1400 x 1402: the matrix */
    };
    for (int i = 0; i < (int)(sizeof forms / sizeof *forms); i++) {
        const dft_form *f = &forms[i];
        xf_graph *g = xf_graph_create("dft");
        int64_t opset = f->axis_input ? 20 : 17;
        xf_shape xs = xf_shape_make(f->rank, f->dims);
        int in[3] = {xf_bt_input(g, XF_DT_FLOAT, xs), f->length ? scalar_i64(g, f->length) : -1,
                     f->axis_input ? scalar_i64(g, f->axis) : -1};
        int d = node(g, XF_OP_DFT, NULL, f->axis_input ? 3 : 2, in, 1);
        xf_attrs *a = attrs(g, d);
        a->axis = f->axis_input ? -2 : f->axis;
        a->dft_inverse = f->inverse;
        a->dft_onesided = f->onesided;
        xf_graph_add_output(g, out0(g, d));
        char what[64], impl[128];
        snprintf(what, sizeof what, "DFT, form %d", i);
        xf_bt_check_cpu(g, opset, -2e-6, 1e-4, what);
        impl_after_run(g, opset, impl, sizeof impl);
        ck_assert_msg(strstr(impl, f->on_ref ? "cpu_ref's kernel" : "transform's matrix") != NULL, "%s runs as %s",
                      what, impl);
        xf_graph_free(g);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cpu_signal");
    TCase *tc = tcase_create("signal");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, stft_forms);
    tcase_add_test(tc, dft_forms);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
