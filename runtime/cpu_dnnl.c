/* The `cpu` backend: oneDNN primitives on host memory.
 *
 * Nodes oneDNN runs get one primitive each, created when the node is
 * prepared (once per session in static mode; in dynamic mode oneDNN's own
 * primitive cache makes re-creation per run cheap).  Every other node runs
 * through the cpu_ref kernels on the same buffers, so every graph cpu_ref
 * runs also runs here.  In static mode a layout plan, made once for the
 * whole graph, keeps the values inside runs of convolutions in the native layout. */
#include "cpu_dnnl.h"

#include <dnnl_debug.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

extern const xf_backend xf_backend_cpu;

xf_status xf_dn_fail(xf_error *err, const xf_node *n, const char *what, dnnl_status_t s)
{
    return xf_error_set(err, XF_ERR_UNSUPPORTED, "backend cpu: node '%s' (%s): oneDNN %s: %s",
                        n->name ? n->name : "", xf_op_name(n->op), dnnl_status2str(s), what);
}

xf_status xf_dn_pd_create(xf_dn_ctx *c, const xf_node *n, const void *d, dnnl_primitive_attr_t attr,
                          dnnl_primitive_desc_t *pd, xf_error *err)
{
    *pd = NULL;
    dnnl_status_t s = dnnl_primitive_desc_create(pd, d, attr, c->engine, NULL);
    dnnl_primitive_attr_destroy(attr);
    return s == dnnl_success ? XF_OK : xf_dn_fail(err, n, "creating the primitive", s);
}

/* The first implementation of d whose name holds neither `avoid` nor a
 * leading "ref", where one takes the problem; else the first, as
 * dnnl_primitive_desc_create picks it. */
static dnnl_status_t pd_create_avoiding(dnnl_primitive_desc_t *pd, const void *d, const_dnnl_primitive_attr_t attr,
                                        dnnl_engine_t engine, const char *avoid)
{
    dnnl_primitive_desc_iterator_t it;
    dnnl_status_t s = dnnl_primitive_desc_iterator_create(&it, d, attr, engine, NULL);
    if (s != dnnl_success)
        return s;
    dnnl_primitive_desc_t first = dnnl_primitive_desc_iterator_fetch(it), p = first;
    while (p) {
        const char *impl = NULL;
        if (dnnl_primitive_desc_query(p, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl &&
            !strstr(impl, avoid) && strncmp(impl, "ref", 3) != 0)
            break;
        if (p != first)
            dnnl_primitive_desc_destroy(p);
        p = dnnl_primitive_desc_iterator_next(it) == dnnl_success ? dnnl_primitive_desc_iterator_fetch(it) : NULL;
    }
    if (p && p != first)
        dnnl_primitive_desc_destroy(first);
    dnnl_primitive_desc_iterator_destroy(it);
    *pd = p ? p : first;
    return *pd ? dnnl_success : dnnl_runtime_error;
}

xf_status xf_dn_pd_create_int8(xf_dn_ctx *c, const xf_node *n, const void *d, dnnl_primitive_attr_t attr, int64_t rows,
                               dnnl_primitive_desc_t *pd, xf_error *err)
{
    if (rows <= 0 || rows > XF_DN_FEW_ROWS)
        return xf_dn_pd_create(c, n, d, attr, pd, err);
    *pd = NULL;
    dnnl_status_t s = pd_create_avoiding(pd, d, attr, c->engine, "amx");
    dnnl_primitive_attr_destroy(attr);
    return s == dnnl_success ? XF_OK : xf_dn_fail(err, n, "creating the primitive", s);
}

/* ---------------------------------------------------------------- values and descriptors */

bool xf_dn_is_f32(const xf_graph *g, int value)
{
    if (value < 0)
        return false;
    const xf_value *v = &g->values[value];
    return v->dtype == XF_DT_FLOAT && xf_shape_numel(&v->shape) > 0;
}

bool xf_dn_all_f32(const xf_graph *g, const xf_node *n)
{
    for (int k = 0; k < n->n_inputs; k++)
        if (n->inputs[k] >= 0 && !xf_dn_is_f32(g, n->inputs[k]))
            return false;
    for (int k = 0; k < n->n_outputs; k++)
        if (n->outputs[k] >= 0 && !xf_dn_is_f32(g, n->outputs[k]))
            return false;
    return true;
}

xf_dn_layout xf_dn_value_layout(const xf_dn_ctx *c, int value)
{
    return c->layout && value >= 0 && value < c->n_values ? c->layout[value] : XF_DN_PLAIN;
}

void xf_dn_md(const xf_dn_ctx *c, const xf_shape *s, xf_dn_layout l, dnnl_memory_desc_t *md)
{
    xf_dn_md_typed(c, s, l, dnnl_f32, md);
}

void xf_dn_md_typed(const xf_dn_ctx *c, const xf_shape *s, xf_dn_layout l, dnnl_data_type_t t,
                    dnnl_memory_desc_t *md)
{
    if (l == XF_DN_NATIVE) {
        dnnl_dims_t dims;
        for (int d = 0; d < 4; d++)
            dims[d] = s->dims[d];
        dnnl_memory_desc_init_by_tag(md, 4, dims, t, t == dnnl_f32 ? c->native_tag : dnnl_acdb);
        return;
    }
    xf_dn_md_plain(s, t, md);
}

void xf_dn_md_plain(const xf_shape *s, dnnl_data_type_t t, dnnl_memory_desc_t *md)
{
    dnnl_dims_t dims, strides;
    int rank = s->ndim > 0 ? s->ndim : 1;
    for (int d = 0; d < rank; d++)
        dims[d] = s->ndim > 0 ? s->dims[d] : 1;
    strides[rank - 1] = 1;
    for (int d = rank - 2; d >= 0; d--)
        strides[d] = strides[d + 1] * dims[d + 1];
    dnnl_memory_desc_init_by_strides(md, rank, dims, t, strides);
}

void xf_dn_md_rank(const xf_shape *s, int rank, dnnl_data_type_t t, dnnl_memory_desc_t *md)
{
    xf_shape r = {.ndim = rank};
    int lead = rank - s->ndim;
    for (int d = 0; d < rank; d++)
        r.dims[d] = d < lead ? 1 : s->dims[d - lead];
    xf_dn_md_plain(&r, t, md);
}

void xf_dn_operand_md(const xf_dn_ctx *c, const xf_node *n, int operand, const xf_shape *shape,
                      dnnl_memory_desc_t *md)
{
    xf_dn_operand_md_typed(c, n, operand, shape, dnnl_f32, md);
}

void xf_dn_operand_md_typed(const xf_dn_ctx *c, const xf_node *n, int operand, const xf_shape *shape,
                            dnnl_data_type_t t, dnnl_memory_desc_t *md)
{
    int v = operand >= 0 ? n->inputs[operand] : n->outputs[-operand - 1];
    xf_dn_md_typed(c, shape, xf_dn_value_layout(c, v), t, md);
}

void xf_dn_window_pads(const xf_attrs *a, int ns, int i, int64_t in, int64_t out, int64_t k, int64_t stride,
                       int64_t dil, int64_t *pad_l, int64_t *pad_r)
{
    int64_t extent = (k - 1) * dil + 1;
    int64_t total = (out - 1) * stride + extent - in;
    if (total < 0)
        total = 0;
    switch (a->auto_pad) {
    case XF_AUTO_PAD_NOTSET:
        *pad_l = a->n_spatial ? a->pads[i] : 0;
        *pad_r = a->n_spatial ? a->pads[ns + i] : 0;
        break;
    case XF_AUTO_PAD_VALID:
        *pad_l = *pad_r = 0;
        break;
    case XF_AUTO_PAD_SAME_UPPER:
    case XF_AUTO_PAD_SAME_LOWER:
        *pad_l = a->auto_pad == XF_AUTO_PAD_SAME_UPPER ? total / 2 : total - total / 2;
        *pad_r = total - *pad_l;
        break;
    }
    /* ceil_mode: the last window starts inside the input but runs past the
     * end padding; oneDNN wants that overhang counted as padding */
    while ((in + *pad_l + *pad_r - extent) / stride + 1 < out)
        (*pad_r)++;
}

/* ---------------------------------------------------------------- binding */

static xf_dn_arg *add_arg(xf_dn_node *st, int arg)
{
    if (st->n_args == st->cap_args) {
        int cap = st->cap_args ? 2 * st->cap_args : 8;
        xf_dn_arg *a = realloc(st->args, sizeof *a * (size_t)cap);
        if (!a)
            return NULL;
        st->args = a;
        dnnl_exec_arg_t *e = realloc(st->exec, sizeof *e * (size_t)cap);
        if (!e)
            return NULL;
        st->exec = e;
        st->cap_args = cap;
    }
    xf_dn_arg *a = &st->args[st->n_args];
    *a = (xf_dn_arg){0};
    st->exec[st->n_args] = (dnnl_exec_arg_t){.arg = arg};
    st->n_args++;
    return a;
}

/* A reorder primitive copying memory described by `from` into `to`. */
static xf_status make_reorder(xf_dn_ctx *c, const xf_node *n, const dnnl_memory_desc_t *from,
                              const dnnl_memory_desc_t *to, dnnl_primitive_t *reorder, xf_error *err)
{
    dnnl_primitive_desc_t pd;
    XF_DN_TRY(err, n, dnnl_reorder_primitive_desc_create(&pd, from, c->engine, to, c->engine, NULL));
    dnnl_status_t s = dnnl_primitive_create(reorder, pd);
    dnnl_primitive_desc_destroy(pd);
    XF_DN_TRY(err, n, s);
    return XF_OK;
}

xf_status xf_dn_bind(xf_dn_ctx *c, const xf_node *n, xf_dn_node *st, int arg, int operand,
                     const dnnl_memory_desc_t *have, const dnnl_memory_desc_t *want, xf_error *err)
{
    xf_dn_arg *a = add_arg(st, arg);
    if (!a)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    a->operand = operand;
    XF_DN_TRY(err, n, dnnl_memory_create(&a->user, have, c->engine, DNNL_MEMORY_NONE));
    a->work = a->user;
    if (!dnnl_memory_desc_equal(have, want)) {
        XF_DN_TRY(err, n, dnnl_memory_create(&a->work, want, c->engine, DNNL_MEMORY_ALLOCATE));
        bool in = operand >= 0;
        xf_status s = make_reorder(c, n, in ? have : want, in ? want : have, &a->reorder, err);
        if (s != XF_OK)
            return s;
    }
    st->exec[st->n_args - 1].memory = a->work;
    return XF_OK;
}

xf_status xf_dn_bind_dst_view(xf_dn_ctx *c, const xf_node *n, xf_dn_node *st, const dnnl_memory_desc_t *want,
                              const dnnl_memory_desc_t *work_view, const dnnl_memory_desc_t *out_view,
                              xf_error *err)
{
    xf_dn_arg *a = add_arg(st, DNNL_ARG_DST);
    if (!a)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    a->operand = -1;
    XF_DN_TRY(err, n, dnnl_memory_create(&a->user, out_view, c->engine, DNNL_MEMORY_NONE));
    XF_DN_TRY(err, n, dnnl_memory_create(&a->work, want, c->engine, DNNL_MEMORY_ALLOCATE));
    st->exec[st->n_args - 1].memory = a->work;
    void *bytes;
    XF_DN_TRY(err, n, dnnl_memory_get_data_handle(a->work, &bytes));
    XF_DN_TRY(err, n, dnnl_memory_create(&a->view, work_view, c->engine, bytes));
    return make_reorder(c, n, work_view, out_view, &a->reorder, err);
}

xf_status xf_dn_bind_scratch(xf_dn_ctx *c, const xf_node *n, xf_dn_node *st, int arg, const dnnl_memory_desc_t *md,
                             void *data, xf_error *err)
{
    xf_dn_arg *a = add_arg(st, arg);
    if (!a)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    a->operand = 0;
    XF_DN_TRY(err, n, dnnl_memory_create(&a->work, md, c->engine, data));
    st->exec[st->n_args - 1].memory = a->work;
    return XF_OK;
}

xf_status xf_dn_bind_part(xf_dn_ctx *c, const xf_node *n, xf_dn_node *st, int k, const dnnl_memory_desc_t *part,
                          const dnnl_memory_desc_t *dst, xf_error *err)
{
    xf_dn_arg *a = add_arg(st, DNNL_ARG_TO);
    if (!a)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    a->operand = -k - 1;
    a->work_on_input = true;
    XF_DN_TRY(err, n, dnnl_memory_create(&a->user, dst, c->engine, DNNL_MEMORY_NONE));
    XF_DN_TRY(err, n, dnnl_memory_create(&a->work, part, c->engine, DNNL_MEMORY_NONE));
    st->exec[st->n_args - 1].memory = a->user;
    return make_reorder(c, n, part, dst, &a->reorder, err);
}

xf_status xf_dn_bind_zero_point(xf_dn_ctx *c, const xf_node *n, xf_dn_node *st, int arg, int operand, xf_error *err)
{
    if (st->n_zp == XF_DN_MAX_ZP)
        return xf_rt_bad_node(err, n, "more than %d zero points", XF_DN_MAX_ZP);
    xf_dn_arg *a = add_arg(st, DNNL_ARG_ATTR_ZERO_POINTS | arg);
    if (!a)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    a->operand = operand;
    dnnl_memory_desc_t md;
    dnnl_memory_desc_init_by_tag(&md, 1, (dnnl_dims_t){1}, dnnl_s32, dnnl_a);
    st->zp[st->n_zp] = (xf_dn_zero_point){.operand = operand};
    XF_DN_TRY(err, n, dnnl_memory_create(&a->work, &md, c->engine, &st->zp[st->n_zp].value));
    st->n_zp++;
    st->exec[st->n_args - 1].memory = a->work;
    return XF_OK;
}

/* The shared copy of constant data read as have and wanted as want, or
 * NULL.  Only in static mode, and only for the session's initializers
 * (not a node's own folded weights), whose buffers live as long as it. */
static xf_dn_const *find_const(const xf_dn_ctx *c, const void *data, const dnnl_memory_desc_t *have,
                               const dnnl_memory_desc_t *want)
{
    for (int i = 0; i < c->n_consts; i++) {
        xf_dn_const *k = &c->consts[i];
        if (k->data == data && dnnl_memory_desc_equal(&k->have, have) && dnnl_memory_desc_equal(&k->want, want))
            return k;
    }
    return NULL;
}

static bool shareable(const xf_dn_ctx *c, const xf_dn_node *st, const void *data)
{
    return c->states && data != st->folded_w && data != st->folded_b;
}

xf_status xf_dn_bind_const(xf_dn_ctx *c, const xf_node *n, xf_dn_node *st, int arg, const void *data,
                           const dnnl_memory_desc_t *have, const dnnl_memory_desc_t *want, xf_error *err)
{
    xf_dn_arg *a = add_arg(st, arg);
    if (!a)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    a->operand = 0;
    const xf_dn_const *known = shareable(c, st, data) ? find_const(c, data, have, want) : NULL;
    if (known) {
        a->work = known->mem;
        a->shared = true;
        st->exec[st->n_args - 1].memory = a->work;
        return XF_OK;
    }
    XF_DN_TRY(err, n, dnnl_memory_create(&a->work, want, c->engine, DNNL_MEMORY_ALLOCATE));
    st->exec[st->n_args - 1].memory = a->work;
    if (shareable(c, st, data)) {
        if (c->n_consts == c->cap_consts) {
            int cap = c->cap_consts ? 2 * c->cap_consts : 16;
            xf_dn_const *grown = realloc(c->consts, sizeof *grown * (size_t)cap);
            if (!grown)
                return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
            c->consts = grown;
            c->cap_consts = cap;
        }
        c->consts[c->n_consts++] = (xf_dn_const){data, *have, *want, a->work};
        a->shared = true;
    }
    dnnl_memory_t src;
    XF_DN_TRY(err, n, dnnl_memory_create(&src, have, c->engine, (void *)data));
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t reorder = NULL;
    dnnl_status_t s = dnnl_reorder_primitive_desc_create(&pd, have, c->engine, want, c->engine, NULL);
    if (s == dnnl_success)
        s = dnnl_primitive_create(&reorder, pd);
    if (s == dnnl_success) {
        dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, a->work}};
        s = dnnl_primitive_execute(reorder, c->stream, 2, args);
    }
    if (s == dnnl_success)
        s = dnnl_stream_wait(c->stream);
    dnnl_primitive_destroy(reorder);
    dnnl_primitive_desc_destroy(pd);
    dnnl_memory_destroy(src);
    XF_DN_TRY(err, n, s);
    return XF_OK;
}

bool xf_dn_pd_is_ref(const_dnnl_primitive_desc_t pd)
{
    const char *impl = NULL;
    return dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl &&
           strncmp(impl, "ref", 3) == 0;
}

bool xf_dn_pd_same(const_dnnl_primitive_desc_t a, const_dnnl_primitive_desc_t b)
{
    const char *ia = NULL, *ib = NULL;
    if (dnnl_primitive_desc_query(a, dnnl_query_impl_info_str, 0, &ia) != dnnl_success ||
        dnnl_primitive_desc_query(b, dnnl_query_impl_info_str, 0, &ib) != dnnl_success || !ia || !ib ||
        strcmp(ia, ib) != 0)
        return false;
    const dnnl_query_t what[] = {dnnl_query_src_md, dnnl_query_weights_md, dnnl_query_dst_md};
    for (int i = 0; i < 3; i++)
        if (!dnnl_memory_desc_equal(dnnl_primitive_desc_query_md(a, what[i], 0),
                                    dnnl_primitive_desc_query_md(b, what[i], 0)))
            return false;
    return true;
}

xf_status xf_dn_finish(const xf_node *n, xf_dn_node *st, dnnl_primitive_desc_t pd, xf_error *err)
{
    dnnl_status_t s = dnnl_primitive_create(&st->prim, pd);
    dnnl_primitive_desc_destroy(pd);
    XF_DN_TRY(err, n, s);
    return XF_OK;
}

xf_status xf_dn_finish_or_free(const xf_node *n, xf_dn_node *st, dnnl_primitive_desc_t pd, xf_status s,
                               xf_error *err)
{
    if (s != XF_OK) {
        dnnl_primitive_desc_destroy(pd);
        return s;
    }
    return xf_dn_finish(n, st, pd, err);
}

xf_status xf_dn_post_attr(const xf_node *n, const xf_dn_post *posts, int n_posts, dnnl_primitive_attr_t *attr,
                          xf_error *err)
{
    *attr = NULL;
    if (n_posts == 0)
        return XF_OK;
    dnnl_post_ops_t po = NULL;
    dnnl_status_t s = dnnl_primitive_attr_create(attr);
    if (s == dnnl_success)
        s = dnnl_post_ops_create(&po);
    for (int i = 0; i < n_posts && s == dnnl_success; i++)
        s = posts[i].sum ? dnnl_post_ops_append_sum(po, 1.0f)
                         : dnnl_post_ops_append_eltwise(po, 1.0f, posts[i].alg, posts[i].alpha, posts[i].beta);
    if (s == dnnl_success)
        s = dnnl_primitive_attr_set_post_ops(*attr, po);
    dnnl_post_ops_destroy(po);
    if (s != dnnl_success) {
        dnnl_primitive_attr_destroy(*attr);
        *attr = NULL;
        return xf_dn_fail(err, n, "post-op attribute", s);
    }
    return XF_OK;
}

void xf_dn_node_clear(xf_dn_node *st)
{
    for (int i = 0; i < st->n_args; i++) {
        xf_dn_arg *a = &st->args[i];
        dnnl_primitive_destroy(a->reorder);
        dnnl_memory_destroy(a->view);
        if (a->work != a->user && !a->shared)
            dnnl_memory_destroy(a->work);
        dnnl_memory_destroy(a->user);
    }
    st->n_args = 0;
    st->n_zp = 0;
    dnnl_primitive_destroy(st->prim);
    st->prim = NULL;
    if (st->own_free)
        st->own_free(st->own);
    st->own = NULL;
    st->own_free = NULL;
    st->own_run = NULL; /* prepared again when something folds in */
    st->own_name = NULL;
    st->timing[0] = '\0';
}

static void node_free(xf_dn_node *st)
{
    xf_dn_node_clear(st);
    free(st->args);
    free(st->exec);
    free(st->views);
    if (!st->cached_w)
        free(st->folded_w);
    free(st->folded_b);
    free(st->scratch);
    free(st);
}

/* ---------------------------------------------------------------- handlers and the layout plan */

static const xf_dn_handler *handler_for(const xf_graph *g, const xf_node *n)
{
    const xf_dn_handler *h = NULL;
    switch (n->op) {
    case XF_OP_CONV:
    case XF_OP_MS_FUSED_CONV: h = &xf_dn_conv_handler; break;
    case XF_OP_CONV_TRANSPOSE: h = &xf_dn_deconv_handler; break;
    case XF_OP_GRID_SAMPLE: h = &xf_dn_grid_sample_handler; break;
    case XF_OP_MAX_POOL:
    case XF_OP_AVERAGE_POOL:
    case XF_OP_GLOBAL_AVERAGE_POOL:
    case XF_OP_GLOBAL_MAX_POOL: h = &xf_dn_pool_handler; break;
    /* over the spatial dims a global pool, else a reduction */
    case XF_OP_REDUCE_MAX:
        h = xf_dn_pool_handler.handles(g, n) ? &xf_dn_pool_handler : &xf_dn_reduce_loop_handler;
        break;
    case XF_OP_REDUCE_MEAN:
        h = xf_dn_pool_handler.handles(g, n)     ? &xf_dn_pool_handler
            : xf_dn_reduce_handler.handles(g, n) ? &xf_dn_reduce_handler
                                                 : &xf_dn_reduce_loop_handler;
        break;
    case XF_OP_REDUCE_SUM:
        h = xf_dn_reduce_handler.handles(g, n) ? &xf_dn_reduce_handler : &xf_dn_reduce_loop_handler;
        break;
    case XF_OP_REDUCE_MIN:
    case XF_OP_REDUCE_PROD:
    case XF_OP_REDUCE_L1:
    case XF_OP_REDUCE_L2:
    case XF_OP_REDUCE_SUM_SQUARE:
    case XF_OP_REDUCE_LOG_SUM:
    case XF_OP_REDUCE_LOG_SUM_EXP:
    case XF_OP_ARG_MAX:
    case XF_OP_ARG_MIN:
    case XF_OP_LP_NORM: h = &xf_dn_reduce_loop_handler; break;
    case XF_OP_EQUAL:
    case XF_OP_GREATER:
    case XF_OP_LESS:
    case XF_OP_GREATER_OR_EQUAL:
    case XF_OP_LESS_OR_EQUAL: h = &xf_dn_compare_handler; break;
    case XF_OP_WHERE: h = &xf_dn_where_handler; break;
    case XF_OP_RESIZE:
    case XF_OP_UPSAMPLE: h = &xf_dn_resample_handler; break;
    case XF_OP_LSTM:
    case XF_OP_GRU:
    case XF_OP_RNN: h = &xf_dn_rnn_handler; break;
    case XF_OP_MATMUL: h = &xf_dn_matmul_handler; break;
    case XF_OP_EINSUM: h = &xf_dn_einsum_handler; break;
    case XF_OP_GEMM: h = &xf_dn_gemm_handler; break;
    /* zero points per column of B: the columns' correction of MatMulIntegerToFloat's loop */
    case XF_OP_MATMUL_INTEGER:
    case XF_OP_QLINEAR_MATMUL:
        h = xf_dn_qmatmul_handler.handles(g, n) ? &xf_dn_qmatmul_handler : &xf_dn_int_matmul_float_handler;
        break;
    case XF_OP_CONV_INTEGER:
    case XF_OP_QLINEAR_CONV: h = &xf_dn_qconv_handler; break;
    case XF_OP_DYNAMIC_QUANTIZE_LINEAR: h = &xf_dn_dynamic_quantize_handler; break;
    case XF_OP_QUANTIZE_LINEAR: h = &xf_dn_quantize_handler; break;
    case XF_OP_DEQUANTIZE_LINEAR: h = &xf_dn_dequantize_handler; break;
    case XF_OP_CAST:
        h = xf_dn_half_cast_handler.handles(g, n)   ? &xf_dn_half_cast_handler
            : xf_dn_code_table_handler.handles(g, n) ? &xf_dn_code_table_handler
                                                     : &xf_dn_int_to_float_handler;
        break;
    case XF_OP_RELU:
    case XF_OP_LEAKY_RELU:
    case XF_OP_SIGMOID:
    case XF_OP_TANH:
    case XF_OP_ABS:
    case XF_OP_NEG:
    case XF_OP_EXP:
    case XF_OP_LOG: /* on a loop of the backend's own, in double */
    /* not Softplus: oneDNN's soft_relu is negative for inputs below about
     * -5 (-1.9e-6 at -17.7, where log1p(exp(x)) is 2.1e-8), which a Log
     * or Sqrt after it (a distribution's scale) turns into NaN */
    case XF_OP_SQRT:
    case XF_OP_ELU:
    case XF_OP_RECIPROCAL:
    case XF_OP_GELU:
    case XF_OP_MS_GELU:
    case XF_OP_MS_QUICK_GELU:
    case XF_OP_MISH:
    case XF_OP_HARD_SIGMOID:
    case XF_OP_ERF:
    case XF_OP_CLIP:
    case XF_OP_PAD:
    case XF_OP_HARD_SWISH:
    case XF_OP_ROUND: h = &xf_dn_eltwise_handler; break;
    case XF_OP_ADD:
    case XF_OP_SUB:
    case XF_OP_MUL:
    case XF_OP_DIV:
        h = xf_dn_binary_handler.handles(g, n) ? &xf_dn_binary_handler : &xf_dn_bcast_binary_handler;
        break;
    case XF_OP_MAX:
    case XF_OP_MIN: h = &xf_dn_binary_handler; break;
    case XF_OP_POW: h = &xf_dn_pow_handler; break;
    case XF_OP_SOFTMAX:
    case XF_OP_LOG_SOFTMAX: h = &xf_dn_softmax_handler; break;
    case XF_OP_BATCH_NORM: h = &xf_dn_batch_norm_handler; break;
    case XF_OP_CONCAT: h = &xf_dn_concat_handler; break;
    case XF_OP_SPLIT: h = &xf_dn_split_handler; break;
    case XF_OP_LAYER_NORM: h = &xf_dn_layer_norm_handler; break;
    case XF_OP_TRANSPOSE: h = &xf_dn_transpose_handler; break;
    case XF_OP_PRELU: h = &xf_dn_prelu_handler; break;
    case XF_OP_LRN: h = &xf_dn_lrn_handler; break;
    case XF_OP_INSTANCE_NORM:
    case XF_OP_GROUP_NORM: h = &xf_dn_group_norm_handler; break;
    case XF_OP_MEAN_VARIANCE_NORM: h = &xf_dn_mvn_handler; break;
    case XF_OP_MS_ATTENTION:
    case XF_OP_MS_QATTENTION:
    case XF_OP_MS_MHA: h = &xf_dn_attention_handler; break;
    case XF_OP_MS_QLINEAR_ADD:
    case XF_OP_MS_QLINEAR_MUL: h = &xf_dn_ms_qbinary_handler; break;
    case XF_OP_MS_QLINEAR_SOFTMAX: h = &xf_dn_ms_qsoftmax_handler; break;
    case XF_OP_MS_QLINEAR_AVERAGE_POOL: h = &xf_dn_ms_qavgpool_handler; break;
    case XF_OP_MS_QGEMM: h = &xf_dn_ms_qgemm_handler; break;
    case XF_OP_MS_DYNAMIC_QUANTIZE_LSTM: h = &xf_dn_qlstm_handler; break;
    case XF_OP_MS_FUSED_GEMM: h = &xf_dn_gemm_handler; break;
    case XF_OP_MS_FUSED_MATMUL: h = &xf_dn_fused_matmul_handler; break;
    case XF_OP_MS_FAST_GELU: h = xf_dn_input(n, 1) >= 0 ? &xf_dn_bias_act_handler : &xf_dn_eltwise_handler; break;
    case XF_OP_MS_BIAS_GELU:
    case XF_OP_MS_BIAS_ADD: h = &xf_dn_bias_act_handler; break;
    case XF_OP_MS_SKIP_LAYER_NORM:
    case XF_OP_MS_SKIP_SIMPLIFIED_LAYER_NORM:
    case XF_OP_SIMPLIFIED_LAYER_NORM:
    case XF_OP_RMS_NORM: h = &xf_dn_skip_norm_handler; break;
    case XF_OP_MS_MATMUL_NBITS: h = &xf_dn_nbits_handler; break;
    case XF_OP_MS_MATMUL_INTEGER_TO_FLOAT:
    case XF_OP_MS_DYNAMIC_QUANTIZE_MATMUL: h = &xf_dn_int_matmul_float_handler; break;
    case XF_OP_MS_GQA:
    case XF_OP_ATTENTION: h = &xf_dn_attention_handler; break;
    case XF_OP_STFT:
    case XF_OP_DFT: h = &xf_dn_signal_handler; break;
    case XF_OP_CUM_SUM: h = &xf_dn_cumsum_handler; break;
    default: return NULL;
    }
    return h->handles(g, n) ? h : NULL;
}

/* A value may be native when it is an intermediate 4-D tensor: of float
 * with channels that fill whole blocks (so the layout adds no padding), or
 * of 8-bit integers (nhwc). */
static bool nativable(const xf_dn_ctx *c, const xf_graph *g, int v)
{
    const xf_value *val = &g->values[v];
    bool int8 = val->dtype == XF_DT_UINT8 || val->dtype == XF_DT_INT8;
    if (val->init || val->is_input || val->shape.ndim != 4 || xf_shape_numel(&val->shape) <= 0 ||
        !(int8 || (c->native_block && xf_dn_is_f32(g, v) && val->shape.dims[1] % c->native_block == 0)))
        return false;
    for (int k = 0; k < g->n_outputs; k++)
        if (g->outputs[k] == v)
            return false;
    return true;
}

/* Whether node n reads a native value on an input it takes native while
 * its other inputs are constants: a scale written first, Mul(a, x), as
 * PaddleOCR's learnable affine blocks are, spreads the layout as Mul(x, a)
 * does (and then folds into the convolution making x). */
static bool native_beside_constants(const xf_dn_ctx *c, const xf_graph *g, const xf_dn_handler *h, const xf_node *n)
{
    int native = -1;
    for (int k = 0; k < n->n_inputs; k++) {
        int v = n->inputs[k];
        if (v >= 0 && c->layout[v] == XF_DN_NATIVE && native < 0)
            native = k;
        else if (v >= 0 && !g->values[v].init)
            return false;
    }
    return native >= 0 && h->native_input(g, n, native);
}

/* Native values start at convolution outputs and spread forward through
 * nodes that can compute on native data, as long as every reader of the
 * value can read it native. */
static xf_status plan_layouts(void *ctx, const xf_graph *g, xf_error *err)
{
    xf_dn_ctx *c = ctx;
    size_t nv = (size_t)(g->n_values > 0 ? g->n_values : 1), nn = (size_t)(g->n_nodes > 0 ? g->n_nodes : 1);
    c->n_values = g->n_values;
    c->n_nodes = g->n_nodes;
    c->layout = calloc(nv, sizeof *c->layout);
    c->readers = calloc(nv, sizeof *c->readers);
    c->states = calloc(nn, sizeof *c->states);
    bool *readers_ok = malloc(sizeof *readers_ok * nv);
    const xf_dn_handler **h = c->handlers = malloc(sizeof *h * nn);
    if (!c->layout || !c->readers || !c->states || !readers_ok || !h) {
        free(readers_ok);
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    }
    xf_dn_choose_native(c, g);
    for (int v = 0; v < g->n_values; v++)
        readers_ok[v] = true;
    for (int i = 0; i < g->n_nodes; i++) {
        const xf_node *n = &g->nodes[i];
        h[i] = handler_for(g, n);
        for (int k = 0; k < n->n_inputs; k++) {
            if (n->inputs[k] < 0)
                continue;
            c->readers[n->inputs[k]]++;
            if (!(h[i] && h[i]->native_input && h[i]->native_input(g, n, k)))
                readers_ok[n->inputs[k]] = false;
        }
    }
    for (int k = 0; k < g->n_outputs; k++)
        c->readers[g->outputs[k]]++;
    for (int i = 0; i < g->n_nodes; i++) {
        const xf_node *n = &g->nodes[i];
        /* one output, or a Split's parts */
        if (!h[i] || !h[i]->native_input || (n->n_outputs != 1 && n->op != XF_OP_SPLIT))
            continue;
        bool conv = (n->op == XF_OP_CONV || n->op == XF_OP_MS_FUSED_CONV) && !xf_dn_conv_gemm_ok(g, n);
        bool fed_native = conv || n->op == XF_OP_CONV_TRANSPOSE ||
                          n->op == XF_OP_QLINEAR_CONV ||
                          (n->inputs[0] >= 0 && c->layout[n->inputs[0]] == XF_DN_NATIVE) ||
                          native_beside_constants(c, g, h[i], n);
        for (int k = 0; k < n->n_outputs; k++) {
            int v = n->outputs[k];
            if (v >= 0 && fed_native && readers_ok[v] && nativable(c, g, v))
                c->layout[v] = XF_DN_NATIVE;
        }
    }
    free(readers_ok);
    xf_dn_conv_z_layouts(c, g);
    return xf_dn_plan_folds(c, g, err);
}

static void dn_fusion_groups(void *ctx, const xf_graph *g, int *group)
{
    const xf_dn_ctx *c = ctx;
    for (int i = 0; i < g->n_nodes && c->folds; i++)
        if (c->folds[i].host >= 0)
            group[i] = c->folds[i].host;
}

/* A Concat's inputs may be its output's bytes, and a Split's outputs its
 * input's, when all are stored alike: plain, or in a channel-blocked
 * native layout (nChw16c, nChw8c) along the channels with whole blocks in
 * each part, where one image's channel blocks follow each other as in the
 * plain layout. */
static bool dn_accumulates_into(void *ctx, const xf_graph *g, int node, int *reader, int *input)
{
    return xf_dn_accumulates_into(ctx, g, node, reader, input);
}

static bool dn_in_place(void *ctx, const xf_graph *g, int node)
{
    const xf_dn_ctx *c = ctx;
    const xf_node *n = &g->nodes[node];
    bool split = n->op == XF_OP_SPLIT;
    int whole = split ? xf_dn_input(n, 0) : n->n_outputs == 1 ? n->outputs[0] : -1;
    if (whole < 0)
        return false;
    xf_dn_layout l = xf_dn_value_layout(c, whole);
    const xf_value *w = &g->values[whole];
    bool blocked = c->native_tag == dnnl_nChw16c || c->native_tag == dnnl_nChw8c;
    if (l == XF_DN_NATIVE && !(blocked && w->dtype == XF_DT_FLOAT && w->shape.ndim == 4 &&
                               (n->attrs.axis == 1 || n->attrs.axis == -3)))
        return false;
    int parts = split ? n->n_outputs : n->n_inputs;
    for (int k = 0; k < parts; k++) {
        int x = split ? n->outputs[k] : n->inputs[k];
        if (x < 0 || xf_dn_value_layout(c, x) != l ||
            (l == XF_DN_NATIVE && g->values[x].shape.dims[1] % c->native_block != 0))
            return false;
    }
    return true;
}

/* ---------------------------------------------------------------- the vtable */

static xf_status dn_context_create(const xf_session_options *opt, void **ctx, xf_error *err)
{
    xf_dn_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    c->direct_conv = opt && opt->direct_convolutions;
    c->time_kernels = !(opt && opt->fixed_kernels);
    dnnl_status_t s = dnnl_engine_create(&c->engine, dnnl_cpu, 0);
    if (s == dnnl_success)
        s = dnnl_stream_create(&c->stream, c->engine, dnnl_stream_default_flags);
    if (s != dnnl_success) {
        if (c->engine)
            dnnl_engine_destroy(c->engine);
        free(c);
        return xf_error_set(err, XF_ERR_UNSUPPORTED, "backend cpu: cannot start oneDNN: %s", dnnl_status2str(s));
    }
    *ctx = c;
    return XF_OK;
}

static void dn_context_free(void *ctx)
{
    xf_dn_ctx *c = ctx;
    for (int i = 0; i < c->n_consts; i++)
        dnnl_memory_destroy(c->consts[i].mem);
    free(c->consts);
    for (int i = 0; i < c->n_packed; i++)
        free(c->packed[i].buf);
    free(c->packed);
    dnnl_stream_destroy(c->stream);
    dnnl_engine_destroy(c->engine);
    free(c->layout);
    free(c->readers);
    free(c->states);
    free(c->folds);
    free(c->handlers);
    free(c);
}

/* Everything cpu_ref runs runs here too; the message names this backend. */
static xf_status dn_supports(const xf_graph *g, int node, xf_error *err)
{
    xf_status st = xf_backend_cpu_ref.supports(g, node, err);
    static const char ref_prefix[] = "backend cpu_ref ";
    if (st != XF_OK && err && strncmp(err->msg, ref_prefix, sizeof ref_prefix - 1) == 0) {
        /* "backend cpu_ref X" -> "backend cpu X" */
        size_t drop = strlen("_ref");
        char *tail = err->msg + strlen("backend cpu");
        memmove(tail, tail + drop, strlen(tail + drop) + 1);
    }
    return st;
}

/* Nodes oneDNN does not run get no state and go to cpu_ref's kernels
 * (xf_dn_run_sliced). */
static xf_status dn_prepare(void *ctx, const xf_graph *g, int node, const xf_tensor_view *in,
                            const xf_tensor_view *out, void **state, xf_error *err)
{
    xf_dn_ctx *c = ctx;
    const xf_node *n = &g->nodes[node];
    bool static_mode = c->states && node < c->n_nodes;
    const xf_dn_handler *h = static_mode ? c->handlers[node] : handler_for(g, n);
    bool fold = static_mode && c->folds[node].host >= 0;
    *state = NULL;
    if (!h && !fold)
        return XF_OK;
    xf_dn_node *st = calloc(1, sizeof *st);
    int n_views = n->n_inputs + n->n_outputs;
    if (st)
        st->views = malloc(sizeof *st->views * (size_t)(n_views > 0 ? n_views : 1));
    if (!st || !st->views) {
        free(st);
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    }
    memcpy(st->views, in, sizeof *in * (size_t)n->n_inputs);
    memcpy(st->views + n->n_inputs, out, sizeof *out * (size_t)n->n_outputs);
    st->handler = h;
    xf_status s = XF_OK;
    if (fold)
        s = xf_dn_fold(c, g, node, in, out, st, err);
    if (s == XF_OK && !st->folded)
        s = h->prepare(ctx, g, n, in, out, st, err);
    if (s != XF_OK) {
        node_free(st);
        return s;
    }
    if (static_mode)
        c->states[node] = st;
    *state = st;
    return XF_OK;
}

static xf_status dn_run_node(void *ctx, const xf_graph *g, int node, void *state, const xf_tensor_view *in,
                             const xf_tensor_view *out, xf_error *err)
{
    xf_dn_ctx *c = ctx;
    xf_dn_node *st = state;
    const xf_node *n = &g->nodes[node];
    if (!st || st->on_ref)
        return xf_dn_run_sliced(g, node, in, out, err);
    if (st->folded)
        return XF_OK;
    if (st->kernel)
        return st->kernel(n, in, out, err);
    if (st->own_run)
        return st->own_run(st, n, in, out, err);
    /* the sum post-op adds to what the destination holds */
    const void *sum = st->sum_input ? in[st->sum_input].data : st->sum_src;
    void *dst0 = st->dst ? st->dst : out[0].data;
    if (sum && sum != dst0)
        memcpy(dst0, sum, st->sum_bytes);
    if (st->gemv.on) {
        float *y = dst0;
        if (st->gemv.bias)
            memcpy(y, st->gemv.bias, sizeof(float) * (size_t)st->gemv.n);
        float beta = st->gemv.bias || sum ? 1.0f : 0.0f;
        dnnl_dim_t k = st->gemv.k, nn = st->gemv.n;
        XF_DN_TRY(err, n, dnnl_sgemm('N', st->gemv.trans_b, 1, nn, k, st->gemv.alpha, in[0].data, k, in[1].data,
                                     st->gemv.trans_b == 'T' ? k : nn, beta, y, nn));
        return XF_OK;
    }
    for (int i = 0; i < st->n_zp; i++)
        st->zp[i].value =
            (int32_t)xf_rt_load_i64(in[st->zp[i].operand].dtype, in[st->zp[i].operand].data, 0) - st->zp[i].offset;
    for (int i = 0; i < st->n_args; i++) {
        xf_dn_arg *a = &st->args[i];
        if (!a->user)
            continue;
        void *data = a->operand >= 0 ? in[a->operand].data : st->dst ? st->dst : out[-a->operand - 1].data;
        XF_DN_TRY(err, n, dnnl_memory_set_data_handle(a->user, data));
        if (a->work_on_input)
            XF_DN_TRY(err, n, dnnl_memory_set_data_handle(a->work, in[0].data));
        if (a->reorder && a->operand >= 0) {
            dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, a->user}, {DNNL_ARG_TO, a->work}};
            XF_DN_TRY(err, n, dnnl_primitive_execute(a->reorder, c->stream, 2, args));
        }
    }
    if (st->pre)
        st->pre(n, st, in, out);
    if (st->prim) /* a Split has only its parts' reorders */
        XF_DN_TRY(err, n, dnnl_primitive_execute(st->prim, c->stream, st->n_args, st->exec));
    for (int i = 0; i < st->n_args; i++) {
        xf_dn_arg *a = &st->args[i];
        if (a->reorder && a->operand < 0) {
            dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, a->view ? a->view : a->work}, {DNNL_ARG_TO, a->user}};
            XF_DN_TRY(err, n, dnnl_primitive_execute(a->reorder, c->stream, 2, args));
        }
    }
    XF_DN_TRY(err, n, dnnl_stream_wait(c->stream));
    return st->post ? st->post(n, st, in, out, err) : XF_OK;
}

static void dn_release(void *ctx, void *state) { node_free(state); }

static void dn_node_impl(void *ctx, const xf_graph *g, int node, void *state, char *buf, size_t n)
{
    const xf_dn_node *st = state;
    const char *impl = NULL;
    if (!st || st->on_ref)
        impl = "cpu_ref kernel";
    else if (st->folded)
        snprintf(buf, n, "folded into '%s'", g->nodes[st->host].name ? g->nodes[st->host].name : "");
    else if (st->kernel || st->own_run || (st->own_name && !st->prim))
        impl = st->own_name ? st->own_name : "own loop";
    else if (st->gemv.on)
        impl = "sgemm";
    else if (!st->prim)
        impl = "reorders";
    else {
        const_dnnl_primitive_desc_t pd = NULL;
        if (dnnl_primitive_get_primitive_desc(st->prim, &pd) != dnnl_success ||
            dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success || !impl)
            impl = "oneDNN";
    }
    if (impl)
        snprintf(buf, n, "%s%s", impl, st && st->prim && !st->folded ? st->timing : "");
}

/* 64-byte alignment suits oneDNN's vector loads on every buffer it binds. */
static void *dn_alloc(void *ctx, size_t bytes)
{
    return bytes ? aligned_alloc(64, (bytes + 63) & ~(size_t)63) : NULL;
}

static void dn_free(void *ctx, void *ptr) { free(ptr); }

static xf_status dn_copy(void *ctx, void *dst, const void *src, size_t bytes, xf_error *err)
{
    if (bytes)
        memcpy(dst, src, bytes);
    return XF_OK;
}

static xf_status dn_synchronize(void *ctx, xf_error *err)
{
    xf_dn_ctx *c = ctx;
    dnnl_status_t s = dnnl_stream_wait(c->stream);
    if (s != dnnl_success)
        return xf_error_set(err, XF_ERR_UNSUPPORTED, "backend cpu: oneDNN stream wait: %s", dnnl_status2str(s));
    return XF_OK;
}

const xf_backend xf_backend_cpu = {
    .name = "cpu",
    .description = "oneDNN primitives on the CPU (native layouts inside runs of convolutions)",
    .host_memory = true,
    .context_create = dn_context_create,
    .context_free = dn_context_free,
    .supports = dn_supports,
    .lower_graph = xf_dn_lower_graph,
    .half_as_float = true,
    .prepare_graph = plan_layouts,
    .fusion_groups = dn_fusion_groups,
    .in_place = dn_in_place,
    .accumulates_into = dn_accumulates_into,
    .prepare = dn_prepare,
    .run_node = dn_run_node,
    .release = dn_release,
    .node_impl = dn_node_impl,
    .alloc = dn_alloc,
    .free = dn_free,
    .copy_in = dn_copy,
    .copy_out = dn_copy,
    .synchronize = dn_synchronize,
};
