/* What some ops work out from their operands, shared by their shape
 * inference and their cpu_ref kernels: NonMaxSuppression's selection,
 * Unique's grouping, Einsum's equation, Col2Im's blocks and Resize's plan. */
#ifndef XF_OP_PLANS_H
#define XF_OP_PLANS_H

#include "xf_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- detection */

/* NonMaxSuppression's selection, as ONNX's reference computes it (in
 * float): for each batch and class, the boxes whose score exceeds
 * score_threshold (when given) from the highest score down (equal scores:
 * the lower box index first; NaN below every number), each selected unless
 * its IoU with a box already selected for that class exceeds iou_threshold,
 * until max_per_class are.  Core's one copy of it: shape inference counts
 * the selection, cpu_ref writes it (core/nms.c). */
typedef struct xf_nms_problem {
    const float *boxes;  /* [batches][n_boxes][4] */
    const float *scores; /* [batches][classes][n_boxes] */
    int64_t batches, classes, n_boxes;
    int64_t max_per_class; /* max_output_boxes_per_class, 0 when omitted or negative */
    float iou_threshold;   /* 0 when omitted */
    bool has_score_threshold;
    float score_threshold;
    bool center_point_box; /* boxes are [x_center, y_center, width, height], else two corners [y1, x1, y2, x2] */
} xf_nms_problem;

/* Checks NonMaxSuppression's operand shapes (NULL for an omitted input;
 * boxes, scores, max_output_boxes_per_class, iou_threshold,
 * score_threshold) and center_point_box; false with the reason in why. */
bool xf_nms_check(const xf_shape *const shapes[5], int center_point_box, char *why, size_t why_len);
/* The problem the operands' values pose (NULL or empty for an omitted
 * input): xf_nms_check, then their dtypes (float, int64 for
 * max_output_boxes_per_class) and data; false with the reason in why. */
bool xf_nms_problem_init(xf_nms_problem *p, const xf_tensor *const in[5], int center_point_box, char *why,
                         size_t why_len);
/* Runs the selection: the k-th selected box's [batch, class, box] goes to
 * selected[3k..3k+2] while k < cap (selected may be NULL when cap is 0).
 * Returns how many boxes are selected, or -1 when out of memory. */
int64_t xf_nms_select(const xf_nms_problem *p, int64_t *selected, int64_t cap);

/* ---------------------------------------------------------------- unique */

/* Unique's grouping of x (a tensor of a numeric or bool type): its slices
 * along axis (axis < 0: its elements, flattened) grouped by equal values
 * (NaN equals NaN, -0 equals 0), the groups in ascending order (sorted:
 * slices compare element by element, NaN above every number) or in the
 * order of their first occurrence.  Where the arrays are not NULL,
 * first[u] gets the index of the u-th group's first slice, counts[u] its
 * size, inverse[s] the group of slice s.  Returns the number of groups,
 * -1 when out of memory.  Shape inference counts them, cpu_ref writes them. */
int64_t xf_unique(const xf_tensor *x, int axis, bool sorted, int64_t *first, int64_t *inverse, int64_t *counts);

/* ---------------------------------------------------------------- einsum */

/* Einsum's equation worked out for its operands' shapes, by numpy's rules
 * (which ONNX's reference runs): the indices of the sum are the dims the
 * ellipses stand for (broadcast as numpy does, aligned at the last dim),
 * then each letter in order of first appearance; a letter repeated in one
 * operand walks its diagonal; a dim of extent 1 broadcasts against the
 * same letter's extent elsewhere; the output is the term after "->", or
 * without one the ellipsis dims then the letters used once, in ASCII order
 * (upper case first); indices not in the output are summed over.  Spaces
 * are ignored.  Shape inference and cpu_ref's kernel both use it. */
#define XF_EINSUM_MAX_OPERANDS 64
#define XF_EINSUM_MAX_INDICES (XF_MAX_DIMS + 52) /* the ellipsis dims, then one per letter */
typedef struct xf_einsum {
    int n_indices;
    int64_t extent[XF_EINSUM_MAX_INDICES];
    unsigned char index[XF_EINSUM_MAX_OPERANDS][XF_MAX_DIMS]; /* the index each operand dim walks */
    xf_shape out;
    unsigned char out_index[XF_MAX_DIMS];
} xf_einsum;

/* The equation of an Einsum node (its attrs.value, a string scalar), or NULL. */
const char *xf_einsum_equation(const xf_attrs *a);
/* Works out equation for n operands of these shapes; false with the reason
 * in why. */
bool xf_einsum_plan(const char *equation, int n, const xf_shape *const *shapes, xf_einsum *e, char *why,
                    size_t why_len);

/* ---------------------------------------------------------------- Col2Im */

/* The count of blocks along each of the r spatial dims of Col2Im's image
 * (extents image) cut into blocks (extents block) under a's strides, pads
 * and dilations (1, 0 and 1 where the node gives none) into blocks[];
 * false with the reason in why when they do not fit (shape_infer_image.c). */
bool xf_col2im_blocks(const xf_attrs *a, int r, const int64_t *image, const int64_t *block, int64_t *blocks,
                      char *why, size_t why_len);

/* ---------------------------------------------------------------- resize */

/* Resize's output extents and per-dim scales for an input of shape in,
 * from its scales (n_scales of them) or its sizes (n_sizes; sizes win
 * when both are given, as ONNX says), listed for attrs' axes (opset 18)
 * or for every dim: a dim not listed keeps its extent at scale 1.  From
 * scales, out = floor(extent * scale); from sizes, scale = size / extent
 * (1 for an empty dim) unless keep_aspect_ratio_policy takes the smallest
 * (not_larger) or largest (not_smaller) of those over the listed dims for
 * all of them, each extent then rounded half up.  axes_at[i] gets the dim
 * of the i-th listed value.  False with the reason in why.  Shape
 * inference and cpu_ref's kernel both use it. */
bool xf_resize_plan(const xf_attrs *a, const xf_shape *in, const double *scales, int n_scales,
                    const int64_t *sizes, int n_sizes, double *scale, int64_t *out, int *axes_at, char *why,
                    size_t why_len);

#ifdef __cplusplus
}
#endif
#endif
