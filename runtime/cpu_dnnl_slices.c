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
 * keep (run_resize_sliced), RoiAlign and MaxRoiPool along their ROIs
 * (run_rois_sliced). */
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

/* The slices a run of `rows` rows (numel output elements) takes: one per
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

/* Such a Resize on cpu_ref's kernel over slices of dim d, one per thread,
 * each resizing its planes (sizes made the slice's): the bytes are the
 * ones one run writes. */
static xf_status run_resize_sliced(const xf_graph *g, int node, const xf_tensor_view *in, const xf_tensor_view *out,
                                   int d, xf_error *err)
{
    const xf_backend *ref = &xf_backend_cpu_ref;
    const xf_node *n = &g->nodes[node];
    int64_t rows = out[0].shape.dims[d], numel = xf_rt_numel(&out[0]);
    int parts = slice_parts(rows, numel);
    if (parts < 2)
        return ref->run_node(NULL, g, node, NULL, in, out, err);
    size_t in_row = xf_rt_bytes(&in[0]) / (size_t)rows, out_row = xf_rt_bytes(&out[0]) / (size_t)rows;
    bool sized = n->op == XF_OP_RESIZE && n->n_inputs > 3 && xf_rt_present(&in[3]) && xf_rt_numel(&in[3]) > 0;
    int failed = 0;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(parts) reduction(+ : failed)
#endif
    for (int p = 0; p < parts; p++) {
        int64_t r0 = rows * p / parts, r1 = rows * (p + 1) / parts, sizes[XF_MAX_DIMS];
        xf_tensor_view sin[SLICE_MAX_IN], sout = out[0];
        for (int k = 0; k < n->n_inputs; k++)
            sin[k] = in[k];
        sin[0].shape.dims[d] = sout.shape.dims[d] = r1 - r0;
        sin[0].data = (char *)in[0].data + (size_t)r0 * in_row;
        sout.data = (char *)out[0].data + (size_t)r0 * out_row;
        if (sized) {
            for (int i = 0; i < sout.shape.ndim; i++)
                sizes[i] = sout.shape.dims[i];
            sin[3].data = sizes;
        }
        xf_error e = {0};
        failed += ref->run_node(NULL, g, node, NULL, sin, &sout, &e) != XF_OK;
    }
    return failed ? ref->run_node(NULL, g, node, NULL, in, out, err) : XF_OK;
}

/* RoiAlign and MaxRoiPool on cpu_ref's kernel over slices of their ROIs,
 * one per thread (the ROIs and batch indices sliced with the output, the
 * maps read whole): each ROI's bins are computed alone, so the bytes are
 * the ones one run writes.  False when the node is not one of those. */
static bool run_rois_sliced(const xf_graph *g, int node, const xf_tensor_view *in, const xf_tensor_view *out,
                            xf_status *st, xf_error *err)
{
    const xf_backend *ref = &xf_backend_cpu_ref;
    const xf_node *n = &g->nodes[node];
    int n_in = n->op == XF_OP_ROI_ALIGN ? 3 : n->op == XF_OP_MAX_ROI_POOL ? 2 : 0;
    if (!n_in || n->n_inputs != n_in || n->n_outputs != 1 || out[0].shape.ndim < 1)
        return false;
    int64_t rows = out[0].shape.dims[0], numel = xf_rt_numel(&out[0]);
    for (int k = 1; k < n_in; k++)
        if (in[k].shape.ndim < 1 || in[k].shape.dims[0] != rows || xf_dtype_size(in[k].dtype) == 0)
            return false;
    int parts = slice_parts(rows, numel);
    if (parts < 2) {
        *st = ref->run_node(NULL, g, node, NULL, in, out, err);
        return true;
    }
    int failed = 0;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(parts) reduction(+ : failed)
#endif
    for (int p = 0; p < parts; p++) {
        int64_t r0 = rows * p / parts, r1 = rows * (p + 1) / parts;
        xf_tensor_view sin[3], sout = out[0];
        for (int k = 0; k < n_in; k++) {
            sin[k] = in[k];
            if (k == 0)
                continue;
            sin[k].shape.dims[0] = r1 - r0;
            sin[k].data = (char *)in[k].data + (size_t)r0 * (xf_rt_bytes(&in[k]) / (size_t)rows);
        }
        sout.shape.dims[0] = r1 - r0;
        sout.data = (char *)out[0].data + (size_t)r0 * (xf_rt_bytes(&out[0]) / (size_t)rows);
        xf_error e = {0};
        failed += ref->run_node(NULL, g, node, NULL, sin, &sout, &e) != XF_OK;
    }
    /* a slice refused (a ROI out of range): the whole run names it */
    *st = failed ? ref->run_node(NULL, g, node, NULL, in, out, err) : XF_OK;
    return true;
}

xf_status xf_dn_run_sliced(const xf_graph *g, int node, const xf_tensor_view *in, const xf_tensor_view *out,
                           xf_error *err)
{
    const xf_backend *ref = &xf_backend_cpu_ref;
    const xf_node *n = &g->nodes[node];
    int split = resize_split_dim(n, in, out);
    if (split >= 0)
        return run_resize_sliced(g, node, in, out, split, err);
    xf_status st;
    if (run_rois_sliced(g, node, in, out, &st, err))
        return st;
    if (!sliceable(n, in, out))
        return ref->run_node(NULL, g, node, NULL, in, out, err);
    const xf_shape *y = &out[0].shape;
    bool full[SLICE_MAX_IN];
    int lead = row_dims(n, in, y, full);
    int64_t rows = 1, numel = xf_shape_numel(y);
    for (int d = 0; d < lead; d++)
        rows *= y->dims[d];
    int parts = slice_parts(rows, numel);
    if (parts < 2 || y->ndim - lead + 1 > XF_MAX_DIMS)
        return ref->run_node(NULL, g, node, NULL, in, out, err);
    int failed = 0;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(parts) reduction(+ : failed)
#endif
    for (int p = 0; p < parts; p++) {
        int64_t r0 = rows * p / parts, r1 = rows * (p + 1) / parts;
        xf_tensor_view sin[SLICE_MAX_IN], sout;
        for (int k = 0; k < n->n_inputs; k++)
            slice_view(&in[k], y, lead, full[k], r0, r1, &sin[k]);
        slice_view(&out[0], y, lead, true, r0, r1, &sout);
        xf_error e = {0};
        failed += ref->run_node(NULL, g, node, NULL, sin, &sout, &e) != XF_OK;
    }
    /* a kernel that refuses a slice refuses the whole: its message then
     * names the node's own shapes */
    return failed ? ref->run_node(NULL, g, node, NULL, in, out, err) : XF_OK;
}
