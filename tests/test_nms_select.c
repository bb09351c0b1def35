/* NonMaxSuppression's selection (core/nms_select.c), which compares each
 * candidate only with the kept boxes filed in the grid cells it touches,
 * against the plain greedy selection that compares it with every kept box
 * (the float steps of ONNX's reference implementation, written out here):
 * the same boxes in the same order on random problems of every form —
 * clusters, boxes moved apart per class as torchvision's batched NMS does,
 * boxes of no area, boxes spanning everything, NaN and infinite
 * coordinates, tied and NaN scores, both box forms, thresholds of 0, below
 * 0 and above 1, score thresholds and max_output_boxes_per_class. */
#include "xf_core.h"
#include "xf_op_plans.h"
#include "xf_test_util.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state;

static double uniform(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}

static int64_t pick(int64_t lo, int64_t hi) { return lo + (int64_t)(uniform() * (double)(hi - lo + 1)); }

/* ---------------------------------------------------------------- the plain selection */

static float py_max(float a, float b) { return b > a ? b : a; }
static float py_min(float a, float b) { return b < a ? b : a; }

static void span(float u, float v, float *lo, float *hi)
{
    *lo = u >= v ? v : u;
    *hi = u >= v ? u : v;
}

static bool plain_suppresses(const float *a, const float *b, bool center, float thr)
{
    float ax0, ax1, bx0, bx1, ay0, ay1, by0, by1;
    if (center) {
        float aw = a[2] / 2, ah = a[3] / 2, bw = b[2] / 2, bh = b[3] / 2;
        ax0 = a[0] - aw, ax1 = a[0] + aw, bx0 = b[0] - bw, bx1 = b[0] + bw;
        ay0 = a[1] - ah, ay1 = a[1] + ah, by0 = b[1] - bh, by1 = b[1] + bh;
    } else {
        span(a[1], a[3], &ax0, &ax1);
        span(b[1], b[3], &bx0, &bx1);
        span(a[0], a[2], &ay0, &ay1);
        span(b[0], b[2], &by0, &by1);
    }
    float ix0 = py_max(ax0, bx0), ix1 = py_min(ax1, bx1);
    if (ix1 <= ix0)
        return false;
    float iy0 = py_max(ay0, by0), iy1 = py_min(ay1, by1);
    if (iy1 <= iy0)
        return false;
    float inter = (ix1 - ix0) * (iy1 - iy0);
    if (inter <= 0)
        return false;
    float area_a = (ax1 - ax0) * (ay1 - ay0), area_b = (bx1 - bx0) * (by1 - by0);
    float uni = area_a + area_b - inter;
    if (area_a <= 0 || area_b <= 0 || uni <= 0)
        return false;
    return inter / uni > thr;
}

/* Whether box i goes before box j: higher score, NaN last, ties by index. */
static bool before(float si, int64_t i, float sj, int64_t j)
{
    if (isnan(si) != isnan(sj))
        return !isnan(si);
    if (!isnan(si) && si != sj)
        return si > sj;
    return i < j;
}

static int64_t plain_select(const xf_nms_problem *p, int64_t *out)
{
    int64_t count = 0, *order = malloc(sizeof *order * (size_t)(p->n_boxes + 1));
    int64_t *kept = malloc(sizeof *kept * (size_t)(p->n_boxes + 1));
    for (int64_t b = 0; b < p->batches; b++)
        for (int64_t c = 0; c < p->classes; c++) {
            const float *boxes = p->boxes + b * p->n_boxes * 4, *s = p->scores + (b * p->classes + c) * p->n_boxes;
            int64_t n = 0, n_kept = 0;
            for (int64_t i = 0; i < p->n_boxes; i++) /* insertion into order */
                if (!p->has_score_threshold || s[i] > p->score_threshold) {
                    int64_t at = n++;
                    while (at > 0 && before(s[i], i, s[order[at - 1]], order[at - 1])) {
                        order[at] = order[at - 1];
                        at--;
                    }
                    order[at] = i;
                }
            for (int64_t k = 0; k < n && n_kept < p->max_per_class; k++) {
                bool keep = true;
                for (int64_t j = 0; j < n_kept && keep; j++)
                    keep = !plain_suppresses(boxes + 4 * order[k], boxes + 4 * kept[j], p->center_point_box,
                                             p->iou_threshold);
                if (!keep)
                    continue;
                kept[n_kept++] = order[k];
                out[3 * count] = b, out[3 * count + 1] = c, out[3 * count + 2] = order[k];
                count++;
            }
        }
    free(order);
    free(kept);
    return count;
}

/* ---------------------------------------------------------------- random problems */

enum { LAYOUT_CLUSTERS, LAYOUT_BATCHED, LAYOUT_SPREAD, LAYOUT_ODD, LAYOUT_COUNT };

/* A box near (cx, cy) of about size w x h in the problem's form, with
 * flipped corners now and then. */
static void make_box(float *b, bool center, double cx, double cy, double w, double h)
{
    if (center) {
        b[0] = (float)cx, b[1] = (float)cy, b[2] = (float)w, b[3] = (float)h;
        return;
    }
    bool flip = uniform() < 0.1;
    b[0] = (float)(flip ? cy + h / 2 : cy - h / 2), b[1] = (float)(cx - w / 2);
    b[2] = (float)(flip ? cy - h / 2 : cy + h / 2), b[3] = (float)(cx + w / 2);
}

static void fill_boxes(float *boxes, int64_t n, int layout, bool center)
{
    int clusters = (int)pick(1, 6);
    for (int64_t i = 0; i < n; i++) {
        float *b = boxes + 4 * i;
        double cx, cy, w = 2 + 30 * uniform(), h = 2 + 30 * uniform();
        if (layout == LAYOUT_BATCHED) { /* torchvision: class k's boxes moved by k * (largest coordinate + 1) */
            double off = (double)pick(0, 40) * 321.0;
            cx = off + 320 * uniform(), cy = off + 320 * uniform();
        } else if (layout == LAYOUT_CLUSTERS) {
            int k = (int)pick(0, clusters - 1);
            cx = 50.0 * k + 10 * uniform(), cy = 30.0 * k + 10 * uniform();
        } else {
            cx = 1000 * uniform(), cy = 1000 * uniform();
        }
        make_box(b, center, cx, cy, w, h);
        if (layout != LAYOUT_ODD)
            continue;
        double r = uniform();
        if (r < 0.05) /* spanning everything */
            make_box(b, center, 500, 500, 1200, 1100);
        else if (r < 0.1) /* no area */
            b[center ? 2 : 3] = center ? 0 : b[1];
        else if (r < 0.13)
            b[pick(0, 3)] = NAN;
        else if (r < 0.16)
            b[pick(0, 3)] = uniform() < 0.5 ? INFINITY : -INFINITY;
        else if (r < 0.2) /* a copy of an earlier box */
            memcpy(b, boxes + 4 * pick(0, i), sizeof *b * 4);
    }
}

static void fill_scores(float *s, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        double r = uniform();
        s[i] = r < 0.03 ? NAN : r < 0.3 ? (float)pick(0, 4) / 4 : (float)uniform();
    }
}

START_TEST(grid_selects_as_every_pair_does)
{
    rng_state = 12345;
    const int64_t sizes[] = {0, 1, 2, 7, 40, 300, 2500};
    int cases = 0;
    for (int layout = 0; layout < LAYOUT_COUNT; layout++)
        for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
            for (int rep = 0; rep < 6; rep++) {
                int64_t n = sizes[si], batches = pick(1, 2), classes = n > 1000 ? 1 : pick(1, 3);
                bool center = rep % 2;
                float *boxes = malloc(sizeof *boxes * (size_t)(batches * n * 4 + 1));
                float *scores = malloc(sizeof *scores * (size_t)(batches * classes * n + 1));
                for (int64_t b = 0; b < batches; b++)
                    fill_boxes(boxes + b * n * 4, n, layout, center);
                fill_scores(scores, batches * classes * n);
                const float thresholds[] = {0.5f, 0.0f, -0.5f, 1.5f, 0.3f, 0.7f};
                xf_nms_problem p = {.boxes = boxes, .scores = scores, .batches = batches, .classes = classes,
                                    .n_boxes = n, .center_point_box = center, .iou_threshold = thresholds[rep],
                                    .max_per_class = rep == 4 ? pick(0, 20) : n,
                                    .has_score_threshold = rep == 5, .score_threshold = 0.25f};
                size_t cap = (size_t)(batches * classes * n + 1);
                int64_t *want = malloc(sizeof *want * 3 * cap), *got = malloc(sizeof *got * 3 * cap);
                int64_t nw = plain_select(&p, want), ng = xf_nms_select(&p, got, (int64_t)cap);
                ck_assert_msg(ng == nw, "layout %d, %lld boxes, case %d: %lld selected, %lld expected", layout,
                              (long long)n, rep, (long long)ng, (long long)nw);
                ck_assert_msg(!memcmp(got, want, sizeof *got * 3 * (size_t)nw),
                              "layout %d, %lld boxes, case %d: other boxes selected", layout, (long long)n, rep);
                /* counting alone (as shape inference does) gives the same number */
                ck_assert_int_eq(xf_nms_select(&p, NULL, 0), nw);
                cases += nw > 0;
                free(boxes);
                free(scores);
                free(want);
                free(got);
            }
    ck_assert_int_gt(cases, 100);
}
END_TEST

/* A batched NMS as torchvision's detectors run it: 40 classes of 300
 * boxes moved apart, most kept; against every pair once. */
START_TEST(batched_classes)
{
    rng_state = 777;
    int64_t n = 12000;
    float *boxes = malloc(sizeof *boxes * (size_t)n * 4), *scores = malloc(sizeof *scores * (size_t)n);
    for (int64_t i = 0; i < n; i++) {
        double off = (double)(i % 40) * 321.0;
        make_box(boxes + 4 * i, false, off + 320 * uniform(), off + 320 * uniform(), 5 + 60 * uniform(),
                 5 + 60 * uniform());
        scores[i] = (float)uniform();
    }
    xf_nms_problem p = {.boxes = boxes, .scores = scores, .batches = 1, .classes = 1, .n_boxes = n,
                        .iou_threshold = 0.5f, .max_per_class = n};
    int64_t *want = malloc(sizeof *want * 3 * (size_t)n), *got = malloc(sizeof *got * 3 * (size_t)n);
    int64_t nw = plain_select(&p, want), ng = xf_nms_select(&p, got, n);
    ck_assert_int_eq(ng, nw);
    ck_assert_int_gt(nw, n / 10);
    ck_assert(!memcmp(got, want, sizeof *got * 3 * (size_t)nw));
    free(boxes);
    free(scores);
    free(want);
    free(got);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("nms_select");
    TCase *tc = tcase_create("nms_select");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, grid_selects_as_every_pair_does);
    tcase_add_test(tc, batched_classes);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
