/* Index iteration and small shape helpers shared by the kernels. */
#include "xf_rt_internal.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int xf_rt_axis(int64_t axis, int rank)
{
    if (axis < 0)
        axis += rank;
    return axis < 0 || axis >= rank ? -1 : (int)axis;
}

int64_t xf_rt_dims_product(const xf_shape *s, int from, int to)
{
    int64_t p = 1;
    for (int d = from; d < to; d++)
        p *= s->dims[d];
    return p;
}

void xf_rt_dense_strides(const xf_shape *s, int64_t *strides)
{
    int64_t acc = 1;
    for (int d = s->ndim - 1; d >= 0; d--) {
        strides[d] = acc;
        acc *= s->dims[d];
    }
}

bool xf_rt_same_but_axis(const xf_shape *a, const xf_shape *b, int axis)
{
    if (a->ndim != b->ndim)
        return false;
    for (int d = 0; d < a->ndim; d++)
        if (d != axis && a->dims[d] != b->dims[d])
            return false;
    return true;
}

bool xf_rt_broadcastable(const xf_shape *s, const xf_shape *to)
{
    int lead = to->ndim - s->ndim;
    if (lead < 0)
        return false;
    for (int d = 0; d < s->ndim; d++)
        if (s->dims[d] != 1 && s->dims[d] != to->dims[d + lead])
            return false;
    return true;
}

void xf_rt_iter_init(xf_rt_iter *it, const xf_shape *space)
{
    memset(it, 0, sizeof *it);
    it->ndim = space->ndim;
    for (int d = 0; d < space->ndim; d++)
        it->dims[d] = space->dims[d];
}

int xf_rt_iter_add(xf_rt_iter *it, const int64_t *strides, int64_t base)
{
    assert(it->n_ops < XF_RT_MAX_OPERANDS);
    int k = it->n_ops++;
    for (int d = 0; d < it->ndim; d++)
        it->stride[k][d] = strides[d];
    it->off[k] = base;
    return k;
}

void xf_rt_broadcast_strides(const xf_shape *s, const xf_shape *to, int64_t *strides)
{
    int64_t dense[XF_MAX_DIMS];
    xf_rt_dense_strides(s, dense);
    int lead = to->ndim - s->ndim;
    for (int d = 0; d < to->ndim; d++) {
        int sd = d - lead;
        strides[d] = sd < 0 || s->dims[sd] == 1 ? 0 : dense[sd];
    }
}

int xf_rt_iter_add_broadcast(xf_rt_iter *it, const xf_shape *s)
{
    xf_shape space = xf_shape_make(it->ndim, it->dims);
    int64_t strides[XF_MAX_DIMS];
    xf_rt_broadcast_strides(s, &space, strides);
    return xf_rt_iter_add(it, strides, 0);
}

void xf_rt_iter_next(xf_rt_iter *it)
{
    for (int d = it->ndim - 1; d >= 0; d--) {
        it->coord[d]++;
        for (int k = 0; k < it->n_ops; k++)
            it->off[k] += it->stride[k][d];
        if (it->coord[d] < it->dims[d])
            return;
        for (int k = 0; k < it->n_ops; k++)
            it->off[k] -= it->stride[k][d] * it->dims[d];
        it->coord[d] = 0;
    }
}

xf_status xf_rt_bad_node(xf_error *err, const xf_node *n, const char *fmt, ...)
{
    char what[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return xf_error_set(err, XF_ERR_INVALID, "node '%s' (%s): %s", n->name ? n->name : "",
                        xf_op_name(n->op), what);
}

void xf_rt_iter_seek(xf_rt_iter *it, int64_t run)
{
    for (int d = it->ndim - 1; d >= 0; d--) {
        int64_t c = run % it->dims[d];
        run /= it->dims[d];
        for (int k = 0; k < it->n_ops; k++)
            it->off[k] += (c - it->coord[d]) * it->stride[k][d];
        it->coord[d] = c;
    }
}

int64_t xf_rt_iter_runs(xf_rt_iter *it, int64_t *step)
{
    int nd = 0;
    for (int d = 0; d < it->ndim; d++) {
        if (it->dims[d] == 0)
            return 0;
        if (it->dims[d] == 1)
            continue;
        bool merge = nd > 0;
        for (int k = 0; k < it->n_ops && merge; k++)
            merge = it->stride[k][nd - 1] == it->stride[k][d] * it->dims[d];
        if (merge) {
            it->dims[nd - 1] *= it->dims[d];
        } else {
            it->dims[nd] = it->dims[d];
            nd++;
        }
        for (int k = 0; k < it->n_ops; k++)
            it->stride[k][nd - 1] = it->stride[k][d];
    }
    memset(it->coord, 0, sizeof it->coord);
    if (nd == 0) {
        it->ndim = 0;
        for (int k = 0; k < it->n_ops; k++)
            step[k] = 0;
        return 1;
    }
    it->ndim = nd - 1;
    for (int k = 0; k < it->n_ops; k++)
        step[k] = it->stride[k][nd - 1];
    return it->dims[nd - 1];
}
