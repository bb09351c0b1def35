/* Resize and Upsample: cpu_ref's plane-by-plane loop for float tensors
 * gives the bytes of its general loop (the same graph in double, cast
 * back), over every mode, coordinate mode and rounding; the cpu backend
 * runs the forms oneDNN's resampling computes there (nearest by whole
 * factors, linear on half-pixel coordinates, also after a convolution, in
 * its native layout) and the rest on cpu_ref (split over the threads
 * along a dim they keep), every form matching cpu_ref. */
#include "backend_util.h"
#include "core_builders.h"
#include "xf_runtime.h"
#include "xf_test_util.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct resize_case {
    xf_op op;              /* Resize or Upsample */
    int64_t opset;
    int rank;
    int64_t in[5];
    double scale[5];       /* scales (by_sizes 0) */
    int64_t size[5];       /* sizes (by_sizes 1) */
    int by_sizes;
    int mode, coord, nearest, antialias, exclude;
} resize_case;

/* Resize or Upsample of x as c says: scales or sizes as constants (a
 * float roi of the whole tensor for tf_crop_and_resize); its output. */
static int add_resize(xf_graph *g, int x, const resize_case *c)
{
    float sc[5], roi[10];
    for (int d = 0; d < c->rank; d++) {
        sc[d] = (float)c->scale[d];
        roi[d] = 0.0f;
        roi[c->rank + d] = 1.0f;
    }
    xf_shape vec = xf_shape_make(1, (int64_t[]){c->rank});
    int n;
    if (c->op == XF_OP_UPSAMPLE) {
        n = NODE(g, XF_OP_UPSAMPLE, x, constant(g, NULL, XF_DT_FLOAT, vec, sc));
    } else {
        int r = c->coord == 4 ? constant(g, NULL, XF_DT_FLOAT, xf_shape_make(1, (int64_t[]){2 * c->rank}), roi) : -1;
        int s = c->by_sizes ? -1 : constant(g, NULL, XF_DT_FLOAT, vec, sc);
        if (c->by_sizes)
            n = NODE(g, XF_OP_RESIZE, x, r, s, constant(g, NULL, XF_DT_INT64, vec, c->size));
        else
            n = NODE(g, XF_OP_RESIZE, x, r, s);
    }
    xf_attrs *a = attrs(g, n);
    xf_attrs_default(c->op, a);
    a->resize_mode = c->mode;
    a->resize_coord = c->coord;
    a->resize_nearest = c->nearest;
    a->resize_antialias = c->antialias;
    a->resize_exclude = c->exclude;
    return out0(g, n);
}

static int cast(xf_graph *g, int x, xf_dtype to)
{
    int n = NODE(g, XF_OP_CAST, x);
    attrs(g, n)->to = to;
    return out0(g, n);
}

static void describe(const resize_case *c, char *buf, size_t len)
{
    int k = snprintf(buf, len, "%s mode %d coord %d nearest %d aa %d excl %d, in",
                     c->op == XF_OP_RESIZE ? "Resize" : "Upsample", c->mode, c->coord, c->nearest, c->antialias,
                     c->exclude);
    for (int d = 0; d < c->rank && k > 0 && (size_t)k < len; d++)
        k += c->by_sizes ? snprintf(buf + k, len - (size_t)k, " %lld->%lld", (long long)c->in[d], (long long)c->size[d])
                         : snprintf(buf + k, len - (size_t)k, " %lld*%g", (long long)c->in[d], c->scale[d]);
}

/* A random case: rank 3 to 5, batch and channels kept, each other dim
 * scaled by one of a few factors (up, down, whole, fractional) or sized. */
static resize_case random_case(void)
{
    static const double factors[] = {0.5, 0.6, 1.0, 1.5, 2.0, 3.0, 4.0};
    resize_case c = {.op = XF_OP_RESIZE, .opset = 19, .rank = (int)xf_bt_rnd(3, 5)};
    c.by_sizes = (int)xf_bt_rnd(0, 2) == 0;
    for (int d = 0; d < c.rank; d++) {
        c.in[d] = d == 0 ? xf_bt_rnd(1, 2) : d == 1 ? xf_bt_rnd(1, 5) : xf_bt_rnd(1, c.rank == 5 ? 5 : 9);
        c.scale[d] = d < 2 ? 1.0 : factors[xf_bt_rnd(0, 6)];
        c.size[d] = d < 2 ? c.in[d] : xf_bt_rnd(1, 3 * c.in[d] + 1);
    }
    c.mode = (int)xf_bt_rnd(0, 2);
    c.coord = (int)xf_bt_rnd(0, 5);
    c.nearest = (int)xf_bt_rnd(0, 3);
    c.antialias = c.mode > 0 && xf_bt_rnd(0, 2) == 0;
    c.exclude = c.mode == 2 && xf_bt_rnd(0, 1);
    return c;
}

/* cpu_ref on float (the plane loop where it applies) against the same
 * Resize on double cast back to float (the general loop): equal bytes. */
START_TEST(cpu_ref_planes_exact)
{
    xf_bt_seed(77);
    for (int t = 0; t < 150; t++) {
        resize_case c = random_case();
        xf_graph *g = xf_graph_create("resize_exact");
        int x = xf_bt_input(g, XF_DT_FLOAT, xf_shape_make(c.rank, c.in));
        xf_graph_add_output(g, add_resize(g, x, &c));
        xf_graph_add_output(g, cast(g, add_resize(g, cast(g, x, XF_DT_DOUBLE), &c), XF_DT_FLOAT));
        xf_tensor *in = xf_tensor_random(XF_DT_FLOAT, &g->values[x].shape, 5u + (uint64_t)t), *out[2] = {NULL};
        xf_session *s = NULL;
        xf_error err = {0};
        char what[200];
        describe(&c, what, sizeof what);
        ck_assert_msg(xf_session_create(g, c.opset, "cpu_ref", NULL, &s, &err) == XF_OK, "%s: %s", what, err.msg);
        ck_assert_msg(xf_session_run(s, &in, out, &err) == XF_OK, "%s: %s", what, err.msg);
        ck_assert_msg(xf_shape_equal(&out[0]->shape, &out[1]->shape), "%s: shapes differ", what);
        size_t bytes = sizeof(float) * (size_t)xf_tensor_numel(out[0]); /* 0: no buffers (a dim scaled to 0) */
        ck_assert_msg(bytes == 0 || memcmp(out[0]->data, out[1]->data, bytes) == 0, "%s: float and double runs differ",
                      what);
        for (int k = 0; k < 2; k++)
            xf_tensor_release(out[k]);
        xf_tensor_release(in);
        xf_session_free(s);
        xf_graph_free(g);
    }
}
END_TEST

static void check_cpu(const resize_case *c, bool after_conv)
{
    xf_graph *g = xf_graph_create("resize_cpu");
    int x = xf_bt_input(g, XF_DT_FLOAT, xf_shape_make(c->rank, c->in));
    resize_case r = *c;
    if (after_conv) { /* 16 channels: stored native between the convolutions */
        x = xf_bt_conv(g, x, c->in[1], 16, 3, 1, XF_ACT_RELU);
        r.size[1] = 16;
    }
    int y = add_resize(g, x, &r);
    xf_graph_add_output(g, after_conv ? xf_bt_conv(g, y, 16, 8, 1, 1, XF_ACT_NONE) : y);
    char what[200];
    describe(c, what, sizeof what);
    xf_bt_check_cpu(g, c->opset, 1e-5, 1e-4, what);
    xf_graph_free(g);
}

/* The forms oneDNN takes and their neighbours that it does not, then
 * random cases. */
START_TEST(cpu_backend_matches)
{
    if (!xf_bt_have_cpu())
        return;
    /* mode, coord, nearest, scale of the last two dims, antialias */
    static const struct {
        int mode, coord, nearest;
        double sh, sw;
        int aa;
    } forms[] = {
        {1, 0, 0, 2, 2},   /* bilinear, half_pixel (PyTorch align_corners=False) */
        {1, 3, 0, 2, 0.5}, /* pytorch_half_pixel, up and down */
        {1, 5, 0, 3, 1.5}, /* half_pixel_symmetric */
        {1, 0, 0, 2, 0.5, 1}, /* antialias where a dim shrinks: cpu_ref */
        {1, 2, 0, 2, 2},   /* align_corners: cpu_ref */
        {1, 1, 0, 2, 2},   /* asymmetric: cpu_ref */
        {0, 1, 2, 2, 3},   /* nearest, asymmetric, floor (PyTorch's nearest) */
        {0, 1, 0, 2, 2},   /* asymmetric, round_prefer_floor by 2 */
        {0, 1, 0, 3, 3},   /* ... by 3: cpu_ref */
        {0, 0, 1, 3, 4},   /* half_pixel, round_prefer_ceil */
        {0, 0, 2, 3, 3},   /* half_pixel, floor: cpu_ref */
        {0, 1, 2, 0.5, 1}, /* nearest down: cpu_ref */
        {2, 0, 0, 2, 2},   /* cubic: cpu_ref */
    };
    for (size_t f = 0; f < sizeof forms / sizeof *forms; f++)
        for (int conv = 0; conv < 2; conv++) {
            resize_case c = {.op = XF_OP_RESIZE, .opset = 19, .rank = 4, .in = {1, 3, 6, 10}};
            c.mode = forms[f].mode;
            c.coord = forms[f].coord;
            c.nearest = forms[f].nearest;
            c.antialias = forms[f].aa;
            c.scale[0] = c.scale[1] = 1;
            c.scale[2] = forms[f].sh;
            c.scale[3] = forms[f].sw;
            check_cpu(&c, conv);
        }
    /* sizes 7x10 from 6x10 (a ratio no float scale holds); Upsample by
     * 2 (opset 9's input, opset 7's attribute) */
    resize_case c = {.op = XF_OP_RESIZE, .opset = 19, .rank = 4, .in = {1, 3, 6, 10}, .size = {1, 3, 7, 10},
                     .by_sizes = 1, .mode = 1};
    check_cpu(&c, true);
    /* pytorch_half_pixel to a dim of 1: its coordinate 0 (cpu_ref) */
    c = (resize_case){.op = XF_OP_RESIZE, .opset = 19, .rank = 4, .in = {1, 3, 6, 10}, .size = {1, 3, 3, 1},
                      .by_sizes = 1, .mode = 1, .coord = 3};
    check_cpu(&c, false);
    c = (resize_case){.op = XF_OP_UPSAMPLE, .opset = 9, .rank = 4, .in = {2, 3, 5, 4}, .scale = {1, 1, 2, 2},
                      .coord = 1, .nearest = 2};
    check_cpu(&c, false);
    xf_bt_seed(78);
    for (int t = 0; t < 60; t++) {
        c = random_case();
        check_cpu(&c, false);
    }
    /* forms on cpu_ref large enough to be split over the threads (along
     * the channels, or the batch), by scales or sizes: cpu_ref's bytes */
    static const resize_case split[] = {
        {XF_OP_UPSAMPLE, 9, 4, {1, 8, 40, 40}, {1, 1, 2, 2}, {0}, 0, 1, 1, 2, 0, 0},
        {XF_OP_RESIZE, 19, 4, {1, 8, 40, 40}, {0}, {1, 8, 67, 90}, 1, 1, 2, 0, 0, 0},
        {XF_OP_RESIZE, 19, 4, {3, 4, 30, 30}, {1, 1, 1.5, 1.5}, {0}, 0, 2, 0, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof split / sizeof *split; i++) {
        xf_graph *g = xf_graph_create("resize_split");
        int x = xf_bt_input(g, XF_DT_FLOAT, xf_shape_make(split[i].rank, split[i].in));
        xf_graph_add_output(g, add_resize(g, x, &split[i]));
        char what[200];
        describe(&split[i], what, sizeof what);
        xf_bt_check_cpu(g, split[i].opset, 0, 0, what);
        xf_graph_free(g);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("resize");
    TCase *tc = tcase_create("resize");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, cpu_ref_planes_exact);
    tcase_add_test(tc, cpu_backend_matches);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
