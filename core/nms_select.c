/* NonMaxSuppression's selection (xf_op_plans.h), which shape inference runs
 * to count the boxes it selects when the inputs' values are known, and
 * cpu_ref to write them.  It computes in float, step by step as ONNX's
 * reference implementation and ONNX Runtime do, so that an IoU on the
 * threshold decides the same way; max and min are Python's (the first
 * operand unless the second is strictly beyond it).
 *
 * Greedy selection keeps a candidate when no box kept before it overlaps
 * it by more than the threshold.  Only a kept box that overlaps the
 * candidate at all can, so kept boxes are filed in a grid of cells over
 * the boxes' extent, each box in every cell its extent touches, and a
 * candidate is compared with the kept boxes of its own cells (and those
 * too wide or not finite to file, which it always is): the same boxes
 * kept as comparing it with every kept box, without the quadratic cost
 * of a batched NMS (torchvision's: every class's boxes moved apart, tens
 * of thousands of them, most kept). */
#include "xf_op_plans.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static float py_max(float a, float b) { return b > a ? b : a; }
static float py_min(float a, float b) { return b < a ? b : a; }

/* A box's extent along one axis from its two corner coordinates (either order). */
static void span(float u, float v, float *lo, float *hi)
{
    *lo = u >= v ? v : u;
    *hi = u >= v ? u : v;
}

/* Box a's extent: x0, x1, y0, y1. */
static void extent(const float *a, bool center, float e[4])
{
    if (center) {
        float aw = a[2] / 2, ah = a[3] / 2;
        e[0] = a[0] - aw, e[1] = a[0] + aw, e[2] = a[1] - ah, e[3] = a[1] + ah;
    } else {
        span(a[1], a[3], &e[0], &e[1]);
        span(a[0], a[2], &e[2], &e[3]);
    }
}

/* Whether the candidate of extent a overlaps the selected box of extent b
 * by an IoU above the threshold (boxes of no area overlap nothing). */
static bool suppresses(const float *a, const float *b, float iou_threshold)
{
    float ix0 = py_max(a[0], b[0]), ix1 = py_min(a[1], b[1]);
    if (ix1 <= ix0)
        return false;
    float iy0 = py_max(a[2], b[2]), iy1 = py_min(a[3], b[3]);
    if (iy1 <= iy0)
        return false;
    float inter = (ix1 - ix0) * (iy1 - iy0);
    if (inter <= 0)
        return false;
    float area_a = (a[1] - a[0]) * (a[3] - a[2]), area_b = (b[1] - b[0]) * (b[3] - b[2]);
    float uni = area_a + area_b - inter;
    if (area_a <= 0 || area_b <= 0 || uni <= 0)
        return false;
    float iou = inter / uni;
    return iou > iou_threshold;
}

typedef struct candidate {
    float score;
    int64_t box;
} candidate;

/* Highest score first, NaN last; equal scores by box index. */
static int by_score(const void *pa, const void *pb)
{
    const candidate *a = pa, *b = pb;
    bool na = isnan(a->score), nb = isnan(b->score);
    if (na != nb)
        return na ? 1 : -1;
    if (!na && a->score != b->score)
        return a->score > b->score ? -1 : 1;
    return (a->box > b->box) - (a->box < b->box);
}

/* A box filed in more cells than this is compared with every candidate. */
#define NMS_MAX_CELLS 64
/* The grid has at most this many cells along each axis. */
#define NMS_MAX_SIDE 512

/* One batch's boxes: their extents and the cells they touch. */
typedef struct nms_batch {
    float (*ext)[4];
    int (*cells)[4]; /* cx0, cx1, cy0, cy1; cx0 < 0: not filed (too wide, not finite) */
    int side[2];     /* cells along x and y */
} nms_batch;

/* The kept boxes of one class: per cell a list of them (head, next), and
 * those not filed. */
typedef struct nms_kept {
    int64_t *head;       /* per cell: first entry, -1 */
    int64_t *next, *box; /* per entry */
    int64_t n_entries, cap_entries;
    int64_t *wide;    /* kept boxes not filed */
    int64_t n_wide;
} nms_kept;

static int cell_of(float v, float lo, float size, int side)
{
    float f = size > 0 ? (v - lo) / size : 0;
    int c = f >= (float)side ? side - 1 : f > 0 ? (int)f : 0;
    return c;
}

/* Extents and cells of a batch's n boxes. */
static bool batch_init(nms_batch *b, const float *boxes, int64_t n, bool center)
{
    size_t m = (size_t)(n > 0 ? n : 1);
    b->ext = malloc(sizeof *b->ext * m);
    b->cells = malloc(sizeof *b->cells * m);
    if (!b->ext || !b->cells)
        return false;
    float lo[2] = {INFINITY, INFINITY}, hi[2] = {-INFINITY, -INFINITY};
    for (int64_t i = 0; i < n; i++) {
        float *e = b->ext[i];
        extent(boxes + 4 * i, center, e);
        for (int a = 0; a < 2; a++)
            if (isfinite(e[2 * a]) && isfinite(e[2 * a + 1])) {
                lo[a] = e[2 * a] < lo[a] ? e[2 * a] : lo[a];
                hi[a] = e[2 * a + 1] > hi[a] ? e[2 * a + 1] : hi[a];
            }
    }
    int side = (int)sqrt((double)n);
    side = side < 1 ? 1 : side > NMS_MAX_SIDE ? NMS_MAX_SIDE : side;
    float size[2];
    for (int a = 0; a < 2; a++) {
        size[a] = hi[a] > lo[a] ? (hi[a] - lo[a]) / (float)side : 0;
        b->side[a] = size[a] > 0 && isfinite(size[a]) ? side : 1;
    }
    for (int64_t i = 0; i < n; i++) {
        const float *e = b->ext[i];
        int *c = b->cells[i];
        bool finite = isfinite(e[0]) && isfinite(e[1]) && isfinite(e[2]) && isfinite(e[3]);
        for (int a = 0; a < 2 && finite; a++) {
            c[2 * a] = cell_of(e[2 * a], lo[a], size[a], b->side[a]);
            c[2 * a + 1] = cell_of(e[2 * a + 1], lo[a], size[a], b->side[a]);
        }
        if (!finite || (int64_t)(c[1] - c[0] + 1) * (c[3] - c[2] + 1) > NMS_MAX_CELLS)
            c[0] = -1;
    }
    return true;
}

/* Files kept box k (of cells c). */
static bool file_box(nms_kept *k, const nms_batch *b, int64_t box)
{
    const int *c = b->cells[box];
    if (c[0] < 0) {
        k->wide[k->n_wide++] = box;
        return true;
    }
    int64_t need = k->n_entries + (int64_t)(c[1] - c[0] + 1) * (c[3] - c[2] + 1);
    if (need > k->cap_entries) {
        int64_t cap = 2 * need;
        int64_t *next = realloc(k->next, sizeof *next * (size_t)cap);
        if (next)
            k->next = next;
        int64_t *bx = next ? realloc(k->box, sizeof *bx * (size_t)cap) : NULL;
        if (!bx)
            return false;
        k->box = bx;
        k->cap_entries = cap;
    }
    for (int y = c[2]; y <= c[3]; y++)
        for (int x = c[0]; x <= c[1]; x++) {
            int cell = y * b->side[0] + x;
            k->box[k->n_entries] = box;
            k->next[k->n_entries] = k->head[cell];
            k->head[cell] = k->n_entries++;
        }
    return true;
}

/* Whether a kept box suppresses candidate `box`: those in its cells and
 * the wide ones, or every kept box (kept[0 .. n_kept)) when it is wide. */
static bool suppressed(const nms_kept *k, const nms_batch *b, int64_t box, const int64_t *kept, int64_t n_kept,
                       float thr)
{
    const float *e = b->ext[box];
    const int *c = b->cells[box];
    if (c[0] < 0) {
        for (int64_t j = 0; j < n_kept; j++)
            if (suppresses(e, b->ext[kept[j]], thr))
                return true;
        return false;
    }
    for (int64_t j = 0; j < k->n_wide; j++)
        if (suppresses(e, b->ext[k->wide[j]], thr))
            return true;
    for (int y = c[2]; y <= c[3]; y++)
        for (int x = c[0]; x <= c[1]; x++)
            for (int64_t at = k->head[y * b->side[0] + x]; at >= 0; at = k->next[at])
                if (suppresses(e, b->ext[k->box[at]], thr))
                    return true;
    return false;
}

int64_t xf_nms_select(const xf_nms_problem *p, int64_t *selected, int64_t cap)
{
    size_t n = (size_t)(p->n_boxes > 0 ? p->n_boxes : 1);
    candidate *cands = malloc(sizeof *cands * n);
    int64_t *kept = malloc(sizeof *kept * n);
    nms_batch b = {0};
    nms_kept k = {.wide = malloc(sizeof *k.wide * n)};
    int64_t count = cands && kept && k.wide ? 0 : -1;
    for (int64_t bi = 0; bi < p->batches && count >= 0; bi++) {
        const float *boxes = p->boxes + bi * p->n_boxes * 4;
        free(b.ext);
        free(b.cells);
        free(k.head);
        k.head = batch_init(&b, boxes, p->n_boxes, p->center_point_box)
                     ? malloc(sizeof *k.head * (size_t)b.side[0] * (size_t)b.side[1])
                     : NULL;
        if (!k.head) {
            count = -1;
            break;
        }
        for (int64_t c = 0; c < p->classes && count >= 0; c++) {
            const float *scores = p->scores + (bi * p->classes + c) * p->n_boxes;
            int64_t n_cands = 0, n_kept = 0;
            for (int64_t i = 0; i < p->n_boxes; i++)
                if (!p->has_score_threshold || scores[i] > p->score_threshold)
                    cands[n_cands++] = (candidate){scores[i], i};
            qsort(cands, (size_t)n_cands, sizeof *cands, by_score);
            memset(k.head, 0xff, sizeof *k.head * (size_t)b.side[0] * (size_t)b.side[1]);
            k.n_entries = 0;
            k.n_wide = 0;
            for (int64_t j = 0; j < n_cands && n_kept < p->max_per_class; j++) {
                int64_t box = cands[j].box;
                if (suppressed(&k, &b, box, kept, n_kept, p->iou_threshold))
                    continue;
                kept[n_kept++] = box;
                if (!file_box(&k, &b, box)) {
                    count = -1;
                    break;
                }
                if (count < cap) {
                    selected[3 * count] = bi;
                    selected[3 * count + 1] = c;
                    selected[3 * count + 2] = box;
                }
                count++;
            }
        }
    }
    free(b.ext);
    free(b.cells);
    free(k.head);
    free(k.next);
    free(k.box);
    free(k.wide);
    free(cands);
    free(kept);
    return count;
}
