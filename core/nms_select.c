/* NonMaxSuppression's selection (xf_op_plans.h), which shape inference runs
 * to count the boxes it selects when the inputs' values are known, and
 * cpu_ref to write them.  It computes in float, step by step as ONNX's
 * reference implementation and ONNX Runtime do, so that an IoU on the
 * threshold decides the same way; max and min are Python's (the first
 * operand unless the second is strictly beyond it).
 *
 * Greedy selection keeps a candidate when no box kept before it overlaps
 * it by more than the threshold.  Only a kept box that overlaps the
 * candidate at all can, so kept boxes are filed in a grid of cells the
 * size of a large box (a hash table of the cells that hold any), each
 * box in every cell its extent touches, and a candidate is compared with
 * the kept boxes of its own cells (and those too wide or not finite to
 * file, which it always is): the same boxes kept as comparing it with
 * every kept box, without the quadratic cost of a batched NMS
 * (torchvision's and Ultralytics': every class's boxes moved apart,
 * thousands of them, most kept). */
#include "xf_op_plans.h"

#include <math.h>
#include <stdint.h>
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
/* Cell coordinates are clamped to [0, NMS_MAX_COORD] (which keeps the map
 * from coordinates to cells monotonic, all a conservative filing needs). */
#define NMS_MAX_COORD ((int64_t)1 << 30)
/* Boxes sampled for the cell size. */
#define NMS_SAMPLE 255

/* One batch's boxes: their extents and the cells they touch. */
typedef struct nms_batch {
    float (*ext)[4];
    int32_t (*cells)[4]; /* cx0, cx1, cy0, cy1; cx0 < 0: not filed (too wide, not finite) */
} nms_batch;

/* The kept boxes of one class: per cell (a hash table of the cells that
 * hold any) a list of them (head, next), and those not filed. */
typedef struct nms_kept {
    uint64_t *key;       /* per slot: the cell, UINT64_MAX when free */
    int64_t *head;       /* per slot: the cell's first entry */
    int64_t *used;       /* the slots taken, to free them for the next class */
    int64_t n_used, cap_slots; /* cap_slots: a power of two */
    int64_t *next, *box; /* per entry */
    int64_t n_entries, cap_entries;
    int64_t *wide;       /* kept boxes not filed */
    int64_t n_wide;
} nms_kept;

static int32_t cell_of(float v, float lo, float size)
{
    float f = (v - lo) / size;
    return f >= (float)NMS_MAX_COORD ? (int32_t)NMS_MAX_COORD : f > 0 ? (int32_t)f : 0;
}

static int cmp_float(const void *pa, const void *pb)
{
    float a = *(const float *)pa, b = *(const float *)pb;
    return (a > b) - (a < b);
}

/* The extent along axis a that 97% of up to NMS_SAMPLE finite boxes
 * spread over the n stay within, 0 when none: cells that size keep most
 * boxes in 2 x 2 of them, and few too wide to file (torchvision's
 * proposals range from a few pixels to the whole image). */
static float typical_extent(const float (*ext)[4], int64_t n, int a)
{
    float sample[NMS_SAMPLE];
    int m = 0;
    int64_t step = n / NMS_SAMPLE + 1;
    for (int64_t i = 0; i < n && m < NMS_SAMPLE; i += step) {
        float w = ext[i][2 * a + 1] - ext[i][2 * a];
        if (isfinite(w) && w > 0)
            sample[m++] = w;
    }
    if (m == 0)
        return 0;
    qsort(sample, (size_t)m, sizeof *sample, cmp_float);
    return sample[m * 97 / 100];
}

/* Extents and cells of a batch's n boxes: cells the size of a large box
 * (so that one touches a few), from the lowest finite coordinate on. */
static bool batch_init(nms_batch *b, const float *boxes, int64_t n, bool center)
{
    size_t m = (size_t)(n > 0 ? n : 1);
    b->ext = malloc(sizeof *b->ext * m);
    b->cells = malloc(sizeof *b->cells * m);
    if (!b->ext || !b->cells)
        return false;
    float lo[2] = {INFINITY, INFINITY}, size[2];
    for (int64_t i = 0; i < n; i++) {
        float *e = b->ext[i];
        extent(boxes + 4 * i, center, e);
        for (int a = 0; a < 2; a++)
            if (isfinite(e[2 * a]) && isfinite(e[2 * a + 1]) && e[2 * a] < lo[a])
                lo[a] = e[2 * a];
    }
    for (int a = 0; a < 2; a++) {
        size[a] = typical_extent((const float (*)[4])b->ext, n, a);
        if (!(size[a] > 0) || !isfinite(size[a]))
            size[a] = 1;
    }
    for (int64_t i = 0; i < n; i++) {
        const float *e = b->ext[i];
        int32_t *c = b->cells[i];
        bool finite = isfinite(e[0]) && isfinite(e[1]) && isfinite(e[2]) && isfinite(e[3]);
        for (int a = 0; a < 2 && finite; a++) {
            c[2 * a] = cell_of(e[2 * a], lo[a], size[a]);
            c[2 * a + 1] = cell_of(e[2 * a + 1], lo[a], size[a]);
        }
        if (!finite || ((int64_t)c[1] - c[0] + 1) * ((int64_t)c[3] - c[2] + 1) > NMS_MAX_CELLS)
            c[0] = -1;
    }
    return true;
}

static uint64_t cell_key(int32_t x, int32_t y) { return (uint64_t)(uint32_t)x << 32 | (uint32_t)y; }

static int64_t slot_of(const nms_kept *k, uint64_t key)
{
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    int64_t mask = k->cap_slots - 1, at = (int64_t)(h >> 20) & mask;
    while (k->key[at] != key && k->key[at] != UINT64_MAX)
        at = (at + 1) & mask;
    return at;
}

/* Room for `more` cells in the table (kept at most half full); false when
 * out of memory. */
static bool table_room(nms_kept *k, int64_t more)
{
    if (2 * (k->n_used + more) <= k->cap_slots)
        return true;
    nms_kept old = *k;
    int64_t cap = k->cap_slots ? 2 * k->cap_slots : 1024;
    while (2 * (k->n_used + more) > cap)
        cap *= 2;
    k->key = malloc(sizeof *k->key * (size_t)cap);
    k->head = malloc(sizeof *k->head * (size_t)cap);
    k->used = malloc(sizeof *k->used * (size_t)cap);
    if (!k->key || !k->head || !k->used) {
        free(k->key), free(k->head), free(k->used);
        *k = old;
        return false;
    }
    memset(k->key, 0xff, sizeof *k->key * (size_t)cap);
    k->cap_slots = cap;
    for (int64_t u = 0; u < old.n_used; u++) { /* the cells again, in their new slots */
        int64_t at = slot_of(k, old.key[old.used[u]]);
        k->key[at] = old.key[old.used[u]];
        k->head[at] = old.head[old.used[u]];
        k->used[u] = at;
    }
    free(old.key), free(old.head), free(old.used);
    return true;
}

/* Empties the table for the next class. */
static void table_clear(nms_kept *k)
{
    for (int64_t u = 0; u < k->n_used; u++)
        k->key[k->used[u]] = UINT64_MAX;
    k->n_used = 0;
    k->n_entries = 0;
    k->n_wide = 0;
}

/* Files kept box `box`; false when out of memory. */
static bool file_box(nms_kept *k, const nms_batch *b, int64_t box)
{
    const int32_t *c = b->cells[box];
    if (c[0] < 0) {
        k->wide[k->n_wide++] = box;
        return true;
    }
    int64_t cells = ((int64_t)c[1] - c[0] + 1) * ((int64_t)c[3] - c[2] + 1), need = k->n_entries + cells;
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
    if (!table_room(k, cells))
        return false;
    for (int32_t y = c[2]; y <= c[3]; y++)
        for (int32_t x = c[0]; x <= c[1]; x++) {
            uint64_t key = cell_key(x, y);
            int64_t at = slot_of(k, key);
            if (k->key[at] == UINT64_MAX) {
                k->key[at] = key;
                k->head[at] = -1;
                k->used[k->n_used++] = at;
            }
            k->box[k->n_entries] = box;
            k->next[k->n_entries] = k->head[at];
            k->head[at] = k->n_entries++;
        }
    return true;
}

/* Whether a kept box suppresses candidate `box`: those in its cells and
 * the wide ones, or every kept box (kept[0 .. n_kept)) when it is wide. */
static bool suppressed(const nms_kept *k, const nms_batch *b, int64_t box, const int64_t *kept, int64_t n_kept,
                       float thr)
{
    const float *e = b->ext[box];
    const int32_t *c = b->cells[box];
    if (c[0] < 0) {
        for (int64_t j = 0; j < n_kept; j++)
            if (suppresses(e, b->ext[kept[j]], thr))
                return true;
        return false;
    }
    for (int64_t j = 0; j < k->n_wide; j++)
        if (suppresses(e, b->ext[k->wide[j]], thr))
            return true;
    if (!k->n_used)
        return false;
    for (int32_t y = c[2]; y <= c[3]; y++)
        for (int32_t x = c[0]; x <= c[1]; x++) {
            int64_t at = slot_of(k, cell_key(x, y));
            if (k->key[at] == UINT64_MAX)
                continue;
            for (int64_t en = k->head[at]; en >= 0; en = k->next[en])
                if (suppresses(e, b->ext[k->box[en]], thr))
                    return true;
        }
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
        if (!batch_init(&b, boxes, p->n_boxes, p->center_point_box)) {
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
            table_clear(&k);
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
    free(k.key);
    free(k.head);
    free(k.used);
    free(k.next);
    free(k.box);
    free(k.wide);
    free(cands);
    free(kept);
    return count;
}
