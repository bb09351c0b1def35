/* Elementwise ops oneDNN does not run here (IsNaN, Where, And, Not,
 * comparisons, Cast between types oneDNN lacks, integer arithmetic, ...)
 * on cpu_ref's kernels, over slices of the output, one per OpenMP thread
 * (the threads oneDNN runs on).  On one thread they would leave the
 * others idle long enough to go to sleep, and the next primitive would
 * pay for waking them.
 *
 * The output's leading dims are seen as rows: the longest run of leading
 * dims in which every input either has the output's dims (it is sliced
 * with the output) or only 1s (each slice reads all of it).  Each slice is
 * then a node of the same op on smaller views, whose elements are the
 * ones the whole run computes, in the same arithmetic: the results are
 * the same bytes.  Resizes oneDNN does not run are split along a dim they
 * keep, Reduce ops along a dim they keep, GridSample along its images (or
 * one image's channels), RoiAlign and MaxRoiPool along their ROIs
 * (run_in_slices). */
#include "cpu_dnnl.h"

#ifdef _OPENMP
#include <omp.h>
#endif

enum {
    SLICE_MIN = 4096,  /* the fewest output elements a thread takes */
    SLICE_MAX_IN = 16, /* inputs a sliced node may have (Sum, Max, ... take up to 64) */
};

/* Whether n is an elementwise op whose operands have whole bytes per
 * element (not strings, not the packed 4- and 2-bit types). */
static bool sliceable(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out)
{
    if (!(xf_op_get_info(n->op)->flags & XF_OPF_ELEM) || n->n_outputs != 1 || n->n_inputs > SLICE_MAX_IN ||
        xf_dtype_size(out[0].dtype) == 0)
        return false;
    for (int k = 0; k < n->n_inputs; k++)
        if (xf_rt_present(&in[k]) && xf_dtype_size(in[k].dtype) == 0)
            return false;
    return true;
}

/* The slices a run of `rows` rows (numel elements of work) takes: one per
 * thread, each of at least SLICE_MIN elements and one row. */
static int slice_parts(int64_t rows, int64_t numel)
{
    int parts = 1;
#ifdef _OPENMP
    int64_t most = numel / SLICE_MIN < rows ? numel / SLICE_MIN : rows;
    parts = most < omp_get_max_threads() ? (int)most : omp_get_max_threads();
#endif
    return parts;
}

/* Dim d of s aligned to a shape of rank r at the last dimension. */
static int64_t aligned_dim(const xf_shape *s, int r, int d)
{
    int at = d - (r - s->ndim);
    return at < 0 ? 1 : s->dims[at];
}

/* The number of the output's leading dims that can be rows; full[k] says
 * whether input k is sliced with them (else it is read whole). */
static int row_dims(const xf_node *n, const xf_tensor_view *in, const xf_shape *y, bool *full)
{
    int lead = 0;
    bool seen_full[SLICE_MAX_IN] = {false}, seen_one[SLICE_MAX_IN] = {false};
    for (int d = 0; d < y->ndim; d++) {
        bool ok = true;
        for (int k = 0; ok && k < n->n_inputs; k++) {
            if (!xf_rt_present(&in[k]) || y->dims[d] == 1)
                continue;
            int64_t dk = aligned_dim(&in[k].shape, y->ndim, d);
            if (dk == y->dims[d] && !seen_one[k])
                continue;
            ok = dk == 1 && !seen_full[k];
        }
        if (!ok)
            break;
        for (int k = 0; k < n->n_inputs; k++)
            if (xf_rt_present(&in[k]) && y->dims[d] != 1) {
                bool f = aligned_dim(&in[k].shape, y->ndim, d) == y->dims[d];
                seen_full[k] |= f;
                seen_one[k] |= !f;
            }
        lead = d + 1;
    }
    for (int k = 0; k < n->n_inputs; k++)
        full[k] = seen_full[k];
    return lead;
}

/* The views of rows [r0, r1): the row dims become one, of r1 - r0 rows
 * (or 1 for an input read whole). */
static void slice_view(const xf_tensor_view *v, const xf_shape *y, int lead, bool sliced, int64_t r0, int64_t r1,
                       xf_tensor_view *s)
{
    *s = *v;
    if (!xf_rt_present(v))
        return;
    s->shape.ndim = y->ndim - lead + 1;
    s->shape.dims[0] = sliced ? r1 - r0 : 1;
    int64_t inner = 1;
    for (int d = lead; d < y->ndim; d++)
        inner *= s->shape.dims[d - lead + 1] = aligned_dim(&v->shape, y->ndim, d);
    if (sliced)
        s->data = (char *)v->data + (size_t)(r0 * inner) * xf_dtype_size(v->dtype);
}

/* The dim a Resize or Upsample (one oneDNN does not run: cubic, corners
 * aligned, opset 9's linear) can be split along: the first one over 1,
 * all before it 1, kept with a scale of 1 (scales, or sizes of int64; not
 * with axes or a crop's roi); -1 if none. */
static int resize_split_dim(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out)
{
    const xf_shape *x = &in[0].shape, *y = &out[0].shape;
    bool resize = n->op == XF_OP_RESIZE;
    if ((!resize && n->op != XF_OP_UPSAMPLE) || n->n_outputs != 1 || x->ndim != y->ndim || x->ndim < 3 ||
        n->n_inputs > SLICE_MAX_IN || (resize && (n->attrs.has_axes || n->attrs.resize_coord == 4)))
        return -1;
    int d = 0;
    for (; d < y->ndim && y->dims[d] == 1; d++)
        if (x->dims[d] != 1)
            return -1;
    if (d >= y->ndim - 2 || x->dims[d] != y->dims[d])
        return -1;
    if (resize && n->n_inputs > 3 && xf_rt_present(&in[3]) && xf_rt_numel(&in[3]) > 0)
        return in[3].dtype == XF_DT_INT64 && xf_rt_numel(&in[3]) == y->ndim ? d : -1;
    const xf_tensor *t = resize ? NULL : n->attrs.value;
    int k = resize ? 2 : 1;
    xf_tensor_view sv = t ? (xf_tensor_view){t->dtype, t->shape, t->data}
                          : n->n_inputs > k ? in[k] : (xf_tensor_view){XF_DT_UNDEFINED};
    bool ok = xf_rt_present(&sv) && xf_dtype_is_float(sv.dtype) && xf_rt_numel(&sv) == y->ndim;
    return ok && xf_rt_load_f64(sv.dtype, sv.data, d) == 1.0 ? d : -1;
}

/* The dim a Reduce op can be split along: X's first dim over 1, kept, as
 * every dim before it (all 1); the output has it at the same place.  -1
 * if none (every axis reduced, or no axes and noop_with_empty_axes). */
static int reduce_split_dim(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out)
{
    const xf_shape *x = &in[0].shape;
    if (!xf_op_is_reduce(n->op) || n->n_outputs != 1 || n->n_inputs > SLICE_MAX_IN || xf_dtype_size(in[0].dtype) == 0)
        return -1;
    int d = 0;
    while (d < x->ndim && x->dims[d] == 1)
        d++;
    const xf_attrs *a = &n->attrs;
    int64_t n_axes = a->has_axes ? a->n_axes : n->n_inputs > 1 && xf_rt_present(&in[1]) ? xf_rt_numel(&in[1]) : 0;
    if (d >= x->ndim || n_axes == 0 || (!a->has_axes && in[1].dtype != XF_DT_INT64))
        return -1;
    for (int64_t i = 0; i < n_axes; i++) {
        int ax = xf_rt_axis(a->has_axes ? a->axes[i] : ((const int64_t *)in[1].data)[i], x->ndim);
        if (ax < 0 || ax <= d)
            return -1;
    }
    return out[0].shape.ndim > d && out[0].shape.dims[d] == x->dims[d] ? d : -1;
}

/* How a node's operands are cut into the slice of rows [r0, r1). */
typedef enum cut_kind {
    CUT_ROWS,  /* elementwise: the output's leading `lead` dims are the rows (slice_view) */
    CUT_DIM,   /* a Resize, a Reduce, GridSample of one image: dim d of input 0 and the output (a Resize's
                * sizes made the slice's) */
    CUT_ROIS,  /* RoiAlign, MaxRoiPool: dim 0 of the output and of every input but the maps */
    CUT_IMAGES /* GridSample: dim 0 of every operand */
} cut_kind;

typedef struct slicing {
    cut_kind kind;
    int64_t rows;
    int64_t work;             /* elements computed or read, whichever are more */
    int lead;                 /* CUT_ROWS */
    bool full[SLICE_MAX_IN];  /* CUT_ROWS: input k sliced with the rows (else read whole) */
    int d;                    /* CUT_DIM */
    bool sized;               /* CUT_DIM: the Resize takes sizes (input 3) */
} slicing;

/* The views of rows [r0, r1) of v along dim d (rows in all). */
static xf_tensor_view rows_of(const xf_tensor_view *v, int d, int64_t rows, int64_t r0, int64_t r1)
{
    xf_tensor_view s = *v;
    size_t row = xf_rt_bytes(v) / (size_t)rows;
    s.shape.dims[d] = r1 - r0;
    s.data = (char *)v->data + (size_t)r0 * row;
    return s;
}

/* Node n's operands cut to rows [r0, r1) (sizes: room for a Resize's). */
static void cut(const xf_node *n, const slicing *sl, const xf_tensor_view *in, const xf_tensor_view *out,
                int64_t r0, int64_t r1, xf_tensor_view *sin, xf_tensor_view *sout, int64_t *sizes)
{
    for (int k = 0; k < n->n_inputs; k++) {
        if (sl->kind == CUT_ROWS)
            slice_view(&in[k], &out[0].shape, sl->lead, sl->full[k], r0, r1, &sin[k]);
        else if ((sl->kind == CUT_DIM && k == 0) || (sl->kind == CUT_ROIS && k > 0) || sl->kind == CUT_IMAGES)
            sin[k] = rows_of(&in[k], sl->kind == CUT_DIM ? sl->d : 0, sl->rows, r0, r1);
        else
            sin[k] = in[k];
    }
    if (sl->kind == CUT_ROWS)
        slice_view(&out[0], &out[0].shape, sl->lead, true, r0, r1, sout);
    else
        *sout = rows_of(&out[0], sl->kind == CUT_DIM ? sl->d : 0, sl->rows, r0, r1);
    if (sl->kind == CUT_DIM && sl->sized) {
        for (int i = 0; i < sout->shape.ndim; i++)
            sizes[i] = sout->shape.dims[i];
        sin[3].data = sizes;
    }
}

/* Node n on cpu_ref's kernel over slices of its rows, one per thread; one
 * run when the rows are too few or too small to share.  Each slice
 * computes its elements as the whole run does, so the bytes are the same;
 * a kernel that refuses a slice refuses the whole, whose message then
 * names the node's own shapes. */
static xf_status run_in_slices(const xf_graph *g, int node, const xf_tensor_view *in, const xf_tensor_view *out,
                               const slicing *sl, xf_error *err)
{
    const xf_backend *ref = &xf_backend_cpu_ref;
    const xf_node *n = &g->nodes[node];
    int64_t rows = sl->rows;
    int parts = slice_parts(rows, sl->work);
    if (parts < 2)
        return ref->run_node(NULL, g, node, NULL, in, out, err);
    int failed = 0;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(parts) reduction(+ : failed)
#endif
    for (int p = 0; p < parts; p++) {
        int64_t sizes[XF_MAX_DIMS];
        xf_tensor_view sin[SLICE_MAX_IN], sout;
        cut(n, sl, in, out, rows * p / parts, rows * (p + 1) / parts, sin, &sout, sizes);
        xf_error e = {0};
        failed += ref->run_node(NULL, g, node, NULL, sin, &sout, &e) != XF_OK;
    }
    return failed ? ref->run_node(NULL, g, node, NULL, in, out, err) : XF_OK;
}

/* Whether n is RoiAlign or MaxRoiPool with its ROIs (and batch indices)
 * as many as the output's rows: each ROI's bins are computed alone, so
 * they can be split over the threads, the maps read whole. */
static bool rois_sliceable(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out)
{
    int n_in = n->op == XF_OP_ROI_ALIGN ? 3 : n->op == XF_OP_MAX_ROI_POOL ? 2 : 0;
    if (!n_in || n->n_inputs != n_in || n->n_outputs != 1 || out[0].shape.ndim < 1)
        return false;
    for (int k = 1; k < n_in; k++)
        if (in[k].shape.ndim < 1 || in[k].shape.dims[0] != out[0].shape.dims[0] || xf_dtype_size(in[k].dtype) == 0)
            return false;
    return true;
}

xf_status xf_dn_run_sliced(const xf_graph *g, int node, const xf_tensor_view *in, const xf_tensor_view *out,
                           xf_error *err)
{
    const xf_node *n = &g->nodes[node];
    const xf_shape *y = &out[0].shape;
    slicing sl = {.kind = CUT_ROWS, .rows = 1, .work = xf_rt_numel(&out[0])};
    if ((sl.d = resize_split_dim(n, in, out)) >= 0) {
        sl.kind = CUT_DIM;
        sl.rows = y->dims[sl.d];
        sl.sized = n->op == XF_OP_RESIZE && n->n_inputs > 3 && xf_rt_present(&in[3]) && xf_rt_numel(&in[3]) > 0;
    } else if ((sl.d = reduce_split_dim(n, in, out)) >= 0) {
        sl.kind = CUT_DIM;
        sl.rows = y->dims[sl.d];
        sl.work = xf_rt_numel(&in[0]);
    } else if (n->op == XF_OP_GRID_SAMPLE && n->n_inputs == 2 && n->n_outputs == 1 && y->ndim >= 3 &&
               in[0].shape.ndim == y->ndim && in[1].shape.ndim == y->ndim && in[1].shape.dims[0] == y->dims[0] &&
               in[0].shape.dims[0] == y->dims[0] && in[0].shape.dims[1] == y->dims[1]) {
        /* the images apart; one image's channels apart (each samples its own map at the same points) */
        sl.kind = y->dims[0] > 1 ? CUT_IMAGES : CUT_DIM;
        sl.d = 1;
        sl.rows = y->dims[0] > 1 ? y->dims[0] : y->dims[1];
    } else if (rois_sliceable(n, in, out)) {
        sl.kind = CUT_ROIS;
        sl.rows = y->dims[0];
    } else if (sliceable(n, in, out)) {
        sl.lead = row_dims(n, in, y, sl.full);
        for (int d = 0; d < sl.lead; d++)
            sl.rows *= y->dims[d];
        if (y->ndim - sl.lead + 1 > XF_MAX_DIMS)
            sl.rows = 1;
    }
    return run_in_slices(g, node, in, out, &sl, err);
}
