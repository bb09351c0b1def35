/* Gradient's backward pass for windows (Conv and the pools), the ops
 * whose adjoints live with their cpu_ref kernels (ConvTranspose, Resize,
 * Einsum), TopK, normalizations, and the ops whose outputs are copies of
 * input elements (see gradient_internal.h).  In double, on the host, one
 * thread: the op differentiates small graphs. */
#include "gradient_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static xf_status nomem(xf_error *err) { return xf_error_set(err, XF_ERR_NOMEM, "out of memory"); }

static const xf_shape *shape_of(const xf_grad_pass *b, int v) { return &b->val[v]->shape; }

/* The forward run checked the node's shapes on its backend; these checks
 * keep the backward pass inside its tensors whatever that backend let by. */
static xf_status bad_shapes(const xf_node *n, xf_error *err)
{
    return xf_error_set(err, XF_ERR_INVALID, "node '%s' (Gradient): the shapes of %s node '%s' do not fit together",
                        n->name ? n->name : "", xf_op_name(n->op), n->name ? n->name : "");
}

const char *xf_grad_nn_refusal(const xf_node *n, const bool *used, const bool *varies)
{
    bool others_vary = false; /* an input after the first varies */
    for (int k = 1; k < n->n_inputs; k++)
        others_vary |= n->inputs[k] >= 0 && varies[n->inputs[k]];
    if ((n->op == XF_OP_RESIZE || n->op == XF_OP_UPSAMPLE) && others_vary)
        return "'s roi or scales";
    if (n->op == XF_OP_TOP_K && (n->n_outputs < 2 || n->outputs[1] < 0))
        return "'s Values without its Indices";
    bool later_read = false; /* an output after the first is read */
    for (int k = 1; k < n->n_outputs; k++)
        later_read |= n->outputs[k] >= 0 && used[n->outputs[k]];
    if (n->op == XF_OP_LAYER_NORM && later_read)
        return "'s Mean and InvStdDev outputs";
    if (n->op == XF_OP_BATCH_NORM && later_read)
        return "'s running mean and variance outputs";
    if ((n->op == XF_OP_SCATTER_ELEMENTS || n->op == XF_OP_SCATTER_ND) && n->attrs.reduction != XF_REDUCE_NONE)
        return " with a reduction";
    return NULL;
}

/* ------------------------------------------------------------ windows */

/* d act(v) / d v from act's output y (a Conv's fused activation). */
static double activation_slope(xf_activation act, double y)
{
    switch (act) {
    case XF_ACT_RELU: return y > 0;
    case XF_ACT_SIGMOID: return y * (1 - y);
    case XF_ACT_TANH: return 1 - y * y;
    case XF_ACT_NONE: break;
    }
    return 1;
}

/* Conv: X (N, C, spatial), W (M, C / group, kernel), B (M): each output's
 * gradient (through the fused activation) into every tap it read and its
 * weight, and into its channel's bias. */
xf_status xf_grad_conv(xf_grad_pass *b, const xf_node *n, const double *gy, xf_error *err)
{
    int ix = n->inputs[0], iw = n->inputs[1], ib = n->n_inputs > 2 ? n->inputs[2] : -1, iy = n->outputs[0];
    const xf_shape *xs = shape_of(b, ix), *ws = shape_of(b, iw);
    bool oom = false;
    const double *x = xf_grad_vals(b, ix), *wt = xf_grad_vals(b, iw), *y = xf_grad_vals(b, iy);
    double *gx = xf_grad_of(b, ix, &oom), *gw = xf_grad_of(b, iw, &oom), *gb = xf_grad_of(b, ib, &oom);
    if (!x || !wt || !y || oom)
        return nomem(err);
    int64_t group = n->attrs.group, c_in = xs->dims[1], c_out = ws->dims[0], cg = ws->dims[1];
    if (ws->ndim != xs->ndim || group < 1 || cg * group != c_in || c_out % group ||
        (ib >= 0 && xf_shape_numel(shape_of(b, ib)) != c_out))
        return bad_shapes(n, err);
    int64_t kernel[XF_MAX_SPATIAL] = {0};
    for (int i = 0; i < xs->ndim - 2 && i < XF_MAX_SPATIAL; i++)
        kernel[i] = ws->dims[2 + i];
    xf_rt_window w;
    xf_status st = xf_rt_window_setup(n, xs, shape_of(b, iy), kernel, &w, err);
    if (st != XF_OK)
        return st;
    int64_t mg = c_out / group;
    int64_t in_sp = w.in[0] * w.in[1] * w.in[2], k_sp = w.k[0] * w.k[1] * w.k[2];
    int64_t out_sp = w.out[0] * w.out[1] * w.out[2];
    for (int64_t bt = 0; bt < xs->dims[0]; bt++)
        for (int64_t m = 0; m < c_out; m++)
            for (int64_t p = 0; p < out_sp; p++) {
                int64_t oi = (bt * c_out + m) * out_sp + p, o[3] = {p / (w.out[1] * w.out[2]),
                                                                   p / w.out[2] % w.out[1], p % w.out[2]};
                double g = gy[oi] * activation_slope(n->attrs.activation, y[oi]);
                if (gb)
                    gb[m] += g;
                for (int64_t c = 0; c < cg; c++) {
                    int64_t xb = (bt * c_in + m / mg * cg + c) * in_sp, wb = (m * cg + c) * k_sp;
                    for (int64_t t = 0; t < k_sp; t++) {
                        int64_t k[3] = {t / (w.k[1] * w.k[2]), t / w.k[2] % w.k[1], t % w.k[2]}, at[3];
                        bool inside = true;
                        for (int d = 0; d < 3; d++) {
                            at[d] = o[d] * w.stride[d] + k[d] * w.dil[d] - w.pad_begin[d];
                            inside &= at[d] >= 0 && at[d] < w.in[d];
                        }
                        if (!inside)
                            continue;
                        int64_t xi = xb + (at[0] * w.in[1] + at[1]) * w.in[2] + at[2];
                        if (gx)
                            gx[xi] += g * wt[wb + t];
                        if (gw)
                            gw[wb + t] += g * x[xi];
                    }
                }
            }
    return XF_OK;
}

/* The pools' share of an output's gradient g for input element v of the
 * window whose output is y (and whose divisor is div): the first maximum
 * takes it all (*taken), an average divides it, Lp's power sum
 * (sum |x|^p)^(1/p) scales it by |v|^(p-1) sign(v) / y^(p-1). */
static double pool_share(const xf_node *n, double g, double v, double y, double div, bool *taken)
{
    switch (n->op) {
    case XF_OP_MAX_POOL: case XF_OP_GLOBAL_MAX_POOL:
        if (*taken || v != y)
            return 0;
        *taken = true;
        return g;
    case XF_OP_AVERAGE_POOL: case XF_OP_GLOBAL_AVERAGE_POOL: return g / div;
    default: {
        double p = n->attrs.lp_p, s = v > 0 ? 1 : v < 0 ? -1 : 0;
        return y == 0 ? 0 : g * s * pow(fabs(v), p - 1) / pow(y, p - 1);
    }
    }
}

/* MaxPool (output 0), AveragePool, LpPool and their global forms. */
xf_status xf_grad_pool(xf_grad_pass *b, const xf_node *n, const double *gy, xf_error *err)
{
    int ix = n->inputs[0], iy = n->outputs[0];
    bool oom = false;
    const double *x = xf_grad_vals(b, ix), *y = xf_grad_vals(b, iy);
    double *gx = xf_grad_of(b, ix, &oom);
    if (!x || !y || oom)
        return nomem(err);
    if (!gx)
        return XF_OK;
    const xf_shape *xs = shape_of(b, ix);
    if (xs->ndim < 2)
        return bad_shapes(n, err);
    int64_t planes = xs->dims[0] * xs->dims[1];
    if (n->op == XF_OP_GLOBAL_AVERAGE_POOL || n->op == XF_OP_GLOBAL_MAX_POOL || n->op == XF_OP_GLOBAL_LP_POOL) {
        int64_t sp = planes ? xf_shape_numel(xs) / planes : 0;
        for (int64_t p = 0; p < planes; p++) {
            bool taken = false;
            for (int64_t i = 0; i < sp; i++)
                gx[p * sp + i] += pool_share(n, gy[p], x[p * sp + i], y[p], (double)sp, &taken);
        }
        return XF_OK;
    }
    xf_rt_window w;
    xf_status st = xf_rt_window_setup(n, xs, shape_of(b, iy), n->attrs.kernel, &w, err);
    if (st != XF_OK)
        return st;
    int64_t in_sp = w.in[0] * w.in[1] * w.in[2], out_sp = w.out[0] * w.out[1] * w.out[2];
    for (int64_t p = 0; p < planes; p++)
        for (int64_t q = 0; q < out_sp; q++) {
            int64_t oi = p * out_sp + q, o[3] = {q / (w.out[1] * w.out[2]), q / w.out[2] % w.out[1], q % w.out[2]};
            int64_t lo[3], hi[3], inside, padded;
            xf_rt_window_taps(&w, o, lo, hi, &inside, &padded);
            double div = (double)(n->attrs.count_include_pad ? padded : inside);
            bool taken = false;
            for (int64_t k0 = lo[0]; k0 < hi[0]; k0++)
                for (int64_t k1 = lo[1]; k1 < hi[1]; k1++)
                    for (int64_t k2 = lo[2]; k2 < hi[2]; k2++) {
                        int64_t at = p * in_sp +
                                     ((o[0] * w.stride[0] - w.pad_begin[0] + k0 * w.dil[0]) * w.in[1] +
                                      o[1] * w.stride[1] - w.pad_begin[1] + k1 * w.dil[1]) * w.in[2] +
                                     o[2] * w.stride[2] - w.pad_begin[2] + k2 * w.dil[2];
                        gx[at] += pool_share(n, gy[oi], x[at], y[oi], div, &taken);
                    }
        }
    return XF_OK;
}

/* Views of n's inputs (absent ones empty). */
static void views_of(const xf_grad_pass *b, const xf_node *n, xf_tensor_view *in)
{
    for (int k = 0; k < n->n_inputs; k++) {
        const xf_tensor *t = n->inputs[k] >= 0 ? b->val[n->inputs[k]] : NULL;
        in[k] = t ? (xf_tensor_view){t->dtype, t->shape, t->data} : (xf_tensor_view){0};
    }
}

/* ConvTranspose and Resize (Upsample): their adjoints live with their
 * cpu_ref kernels, which share the forward pass's taps. */
xf_status xf_grad_adjoint(xf_grad_pass *b, const xf_node *n, const double *gy, xf_error *err)
{
    bool oom = false;
    int ib = n->op == XF_OP_CONV_TRANSPOSE && n->n_inputs > 2 ? n->inputs[2] : -1;
    const double *x = xf_grad_vals(b, n->inputs[0]);
    const double *wt = n->op == XF_OP_CONV_TRANSPOSE ? xf_grad_vals(b, n->inputs[1]) : x;
    double *gx = xf_grad_of(b, n->inputs[0], &oom);
    double *gw = n->op == XF_OP_CONV_TRANSPOSE ? xf_grad_of(b, n->inputs[1], &oom) : NULL;
    double *gb = xf_grad_of(b, ib, &oom);
    xf_tensor_view *in = calloc((size_t)n->n_inputs + 1, sizeof *in);
    if (!x || !wt || !in || oom) {
        free(in);
        return nomem(err);
    }
    views_of(b, n, in);
    const xf_shape *ys = shape_of(b, n->outputs[0]);
    xf_status st = n->op == XF_OP_CONV_TRANSPOSE
                       ? xf_ref_conv_transpose_backward(n, in, ys, x, wt, gy, gx, gw, gb, err)
                       : gx ? xf_ref_resize_backward(n, in, ys, gy, gx, err) : XF_OK;
    free(in);
    return st;
}

/* Einsum: each product's gradient into every operand that varies, times
 * the other operands' factors (over the walk the forward sum takes). */
typedef struct einsum_back {
    int n_ops;
    const double **x;
    double **g;
    const double *gy;
} einsum_back;

static void einsum_back_product(void *c, const int64_t *off)
{
    einsum_back *e = c;
    double dy = e->gy[off[e->n_ops]];
    for (int k = 0; dy != 0 && k < e->n_ops; k++) {
        if (!e->g[k])
            continue;
        double v = dy;
        for (int j = 0; j < e->n_ops; j++)
            v *= j == k ? 1 : e->x[j][off[j]];
        e->g[k][off[k]] += v;
    }
}

xf_status xf_grad_einsum(xf_grad_pass *b, const xf_node *n, const double *gy, xf_error *err)
{
    bool oom = false;
    einsum_back e = {n->n_inputs, calloc((size_t)n->n_inputs + 1, sizeof *e.x),
                     calloc((size_t)n->n_inputs + 1, sizeof *e.g), gy};
    xf_tensor_view *in = calloc((size_t)n->n_inputs + 1, sizeof *in);
    oom |= !e.x || !e.g || !in;
    for (int k = 0; !oom && k < n->n_inputs; k++) {
        e.x[k] = xf_grad_vals(b, n->inputs[k]);
        e.g[k] = xf_grad_of(b, n->inputs[k], &oom);
        oom |= !e.x[k];
    }
    xf_status st = oom ? nomem(err) : XF_OK;
    if (st == XF_OK) {
        views_of(b, n, in);
        st = xf_ref_einsum_walk(n, in, shape_of(b, n->outputs[0]), einsum_back_product, &e, err);
    }
    free(e.x);
    free(e.g);
    free(in);
    return st;
}

/* TopK: each value's gradient into the element its index names. */
xf_status xf_grad_top_k(xf_grad_pass *b, const xf_node *n, const double *gy, xf_error *err)
{
    bool oom = false;
    double *gx = xf_grad_of(b, n->inputs[0], &oom);
    const xf_tensor *idx = b->val[n->outputs[1]];
    if (oom)
        return nomem(err);
    const xf_shape *xs = shape_of(b, n->inputs[0]);
    int axis = xf_rt_axis(n->attrs.axis, xs->ndim);
    if (!gx || axis < 0)
        return XF_OK;
    int64_t outer = xf_rt_dims_product(xs, 0, axis), inner = xf_rt_dims_product(xs, axis + 1, xs->ndim);
    int64_t len = xs->dims[axis], k = idx->shape.ndim == xs->ndim ? idx->shape.dims[axis] : 0;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < k; j++)
            for (int64_t e = 0; e < inner; e++) {
                int64_t at = (o * k + j) * inner + e, i = xf_rt_load_i64(idx->dtype, idx->data, at);
                if (i >= 0 && i < len)
                    gx[(o * len + i) * inner + e] += gy[at];
            }
    return XF_OK;
}

/* ------------------------------------------------------------ normalizations */

/* Per element of x: its statistics group, and the elements of scale and
 * bias it reads. */
typedef struct norm_map {
    int64_t count, groups;
    int64_t *group, *scale, *bias;
} norm_map;

/* The map of LayerNormalization (groups: the rows over the dims from
 * axis on; scale and bias broadcast to those dims), InstanceNormalization
 * and GroupNormalization (groups of channels per image; parameters per
 * channel, or per group), and BatchNormalization (a group per channel, over
 * the batch). */
static bool norm_shapes_ok(const xf_grad_pass *b, const xf_node *n)
{
    const xf_shape *xs = shape_of(b, n->inputs[0]);
    int ib = n->n_inputs > 2 ? n->inputs[2] : -1;
    if (n->op == XF_OP_LAYER_NORM) {
        int axis = xf_rt_axis(n->attrs.axis, xs->ndim);
        if (axis < 0)
            return false;
        xf_shape norm = xf_shape_make(xs->ndim - axis, xs->dims + axis);
        return xf_rt_broadcastable(shape_of(b, n->inputs[1]), &norm) &&
               (ib < 0 || xf_rt_broadcastable(shape_of(b, ib), &norm));
    }
    if (xs->ndim < 2 || ib < 0)
        return false;
    int64_t chans = xs->dims[1], groups = n->op == XF_OP_GROUP_NORM ? n->attrs.group : chans;
    int64_t n_par = xf_shape_numel(shape_of(b, n->inputs[1]));
    if (groups < 1 || chans % groups || (n_par != chans && n_par != groups) ||
        xf_shape_numel(shape_of(b, ib)) != n_par)
        return false;
    for (int k = 3; n->op == XF_OP_BATCH_NORM && k < 5; k++)
        if (n->n_inputs <= k || n->inputs[k] < 0 || xf_shape_numel(shape_of(b, n->inputs[k])) != chans)
            return false;
    return n->op != XF_OP_BATCH_NORM || n_par == chans;
}

static bool norm_map_make(const xf_grad_pass *b, const xf_node *n, norm_map *m)
{
    const xf_shape *xs = shape_of(b, n->inputs[0]);
    int64_t count = xf_shape_numel(xs);
    m->count = count;
    m->group = malloc(sizeof(int64_t) * (size_t)(count + 1));
    m->scale = malloc(sizeof(int64_t) * (size_t)(count + 1));
    m->bias = malloc(sizeof(int64_t) * (size_t)(count + 1));
    if (!m->group || !m->scale || !m->bias)
        return false;
    if (n->op == XF_OP_LAYER_NORM) {
        int axis = xf_rt_axis(n->attrs.axis, xs->ndim);
        xf_shape norm = xf_shape_make(xs->ndim - axis, xs->dims + axis);
        int64_t inner = xf_shape_numel(&norm), s[XF_MAX_DIMS], t[XF_MAX_DIMS] = {0};
        int ib = n->n_inputs > 2 ? n->inputs[2] : -1;
        xf_rt_broadcast_strides(shape_of(b, n->inputs[1]), &norm, s);
        if (ib >= 0)
            xf_rt_broadcast_strides(shape_of(b, ib), &norm, t);
        xf_rt_iter it;
        xf_rt_iter_init(&it, xs);
        int64_t ss[XF_MAX_DIMS], tt[XF_MAX_DIMS];
        for (int d = 0; d < xs->ndim; d++)
            ss[d] = d < axis ? 0 : s[d - axis], tt[d] = d < axis ? 0 : t[d - axis];
        xf_rt_iter_add(&it, ss, 0);
        xf_rt_iter_add(&it, tt, 0);
        m->groups = inner ? count / inner : 0;
        for (int64_t i = 0; i < count; i++, xf_rt_iter_next(&it))
            m->group[i] = i / inner, m->scale[i] = it.off[0], m->bias[i] = it.off[1];
        return true;
    }
    int64_t chans = xs->dims[1], inner = xf_rt_dims_product(xs, 2, xs->ndim);
    int64_t n_groups = n->op == XF_OP_GROUP_NORM ? n->attrs.group : chans;
    int64_t per = chans / n_groups, n_par = xf_tensor_numel(b->val[n->inputs[1]]);
    m->groups = n->op == XF_OP_BATCH_NORM ? chans : xs->dims[0] * n_groups;
    for (int64_t i = 0; i < count; i++) {
        int64_t c = i / inner % chans;
        m->group[i] = n->op == XF_OP_BATCH_NORM ? c : i / (per * inner);
        m->scale[i] = m->bias[i] = n_par == chans ? c : c / per;
    }
    return true;
}

static void norm_map_free(norm_map *m)
{
    free(m->group);
    free(m->scale);
    free(m->bias);
}

/* BatchNormalization at inference: y = (x - mean) / sqrt(var + eps) *
 * scale + B with mean and var its inputs 3 and 4, all per channel. */
static xf_status batch_norm_fixed(xf_grad_pass *b, const xf_node *n, const double *gy, const norm_map *m,
                                  xf_error *err)
{
    bool oom = false;
    const double *x = xf_grad_vals(b, n->inputs[0]), *s = xf_grad_vals(b, n->inputs[1]);
    const double *mean = xf_grad_vals(b, n->inputs[3]), *var = xf_grad_vals(b, n->inputs[4]);
    double *g[5];
    for (int k = 0; k < 5; k++)
        g[k] = xf_grad_of(b, n->inputs[k], &oom);
    if (!x || !s || !mean || !var || oom)
        return nomem(err);
    for (int64_t i = 0; i < m->count; i++) {
        int64_t c = m->group[i];
        double inv = 1 / sqrt(var[c] + (double)n->attrs.epsilon), d = x[i] - mean[c], gs = gy[i] * s[c];
        double part[5] = {gs * inv, gy[i] * d * inv, gy[i], -gs * inv, -0.5 * gs * d * inv * inv * inv};
        for (int k = 0; k < 5; k++)
            if (g[k])
                g[k][k == 0 ? i : c] += part[k];
    }
    return XF_OK;
}

/* The normalizations whose statistics come from x: with xh = (x - mean)
 * inv per group and h = gy scale, dx = inv (h - mean(h) - xh mean(h xh)). */
xf_status xf_grad_normalize(xf_grad_pass *b, const xf_node *n, const double *gy, xf_error *err)
{
    norm_map m = {0};
    if (!norm_shapes_ok(b, n))
        return bad_shapes(n, err);
    xf_status st = norm_map_make(b, n, &m) ? XF_OK : nomem(err);
    if (st == XF_OK && n->op == XF_OP_BATCH_NORM && !n->attrs.bn_training) {
        st = batch_norm_fixed(b, n, gy, &m, err);
        norm_map_free(&m);
        return st;
    }
    bool oom = false;
    int ib = n->n_inputs > 2 ? n->inputs[2] : -1;
    const double *x = xf_grad_vals(b, n->inputs[0]), *s = xf_grad_vals(b, n->inputs[1]);
    double *gx = xf_grad_of(b, n->inputs[0], &oom), *gs = xf_grad_of(b, n->inputs[1], &oom);
    double *gb = xf_grad_of(b, ib, &oom);
    double *acc = calloc((size_t)(4 * m.groups + 1), sizeof *acc); /* per group: mean, var, mean(h), mean(h xh) */
    int64_t *size = calloc((size_t)(m.groups + 1), sizeof *size);
    if (st == XF_OK && (!x || !s || !acc || !size || oom))
        st = nomem(err);
    for (int64_t i = 0; st == XF_OK && i < m.count; i++)
        acc[4 * m.group[i]] += x[i], size[m.group[i]]++;
    for (int64_t k = 0; st == XF_OK && k < m.groups; k++)
        acc[4 * k] /= size[k] ? (double)size[k] : 1;
    for (int64_t i = 0; st == XF_OK && i < m.count; i++) {
        double d = x[i] - acc[4 * m.group[i]];
        acc[4 * m.group[i] + 1] += d * d;
    }
    for (int64_t k = 0; st == XF_OK && k < m.groups; k++) /* var -> inv */
        acc[4 * k + 1] = 1 / sqrt(acc[4 * k + 1] / (size[k] ? (double)size[k] : 1) + (double)n->attrs.epsilon);
    for (int64_t i = 0; st == XF_OK && i < m.count; i++) {
        double *a = acc + 4 * m.group[i], xh = (x[i] - a[0]) * a[1], h = gy[i] * s[m.scale[i]];
        a[2] += h / (double)size[m.group[i]];
        a[3] += h * xh / (double)size[m.group[i]];
        if (gs)
            gs[m.scale[i]] += gy[i] * xh;
        if (gb)
            gb[m.bias[i]] += gy[i];
    }
    for (int64_t i = 0; st == XF_OK && gx && i < m.count; i++) {
        const double *a = acc + 4 * m.group[i];
        double xh = (x[i] - a[0]) * a[1];
        gx[i] += a[1] * (gy[i] * s[m.scale[i]] - a[2] - xh * a[3]);
    }
    free(acc);
    free(size);
    norm_map_free(&m);
    return st;
}

/* ------------------------------------------------------------ ops that move elements */

static xf_ref_kernel traced_kernel(xf_op op)
{
    switch (op) {
    case XF_OP_PAD: return xf_ref_pad;
    case XF_OP_TILE: return xf_ref_tile;
    case XF_OP_DEPTH_TO_SPACE: case XF_OP_SPACE_TO_DEPTH: return xf_ref_depth_space;
    case XF_OP_GATHER_ELEMENTS: return xf_ref_gather_elements;
    case XF_OP_GATHER_ND: return xf_ref_gather_nd;
    case XF_OP_TRILU: return xf_ref_trilu;
    case XF_OP_REVERSE_SEQUENCE: return xf_ref_reverse_sequence;
    case XF_OP_COMPRESS: return xf_ref_compress;
    case XF_OP_CENTER_CROP_PAD: return xf_ref_center_crop_pad;
    case XF_OP_SCATTER_ELEMENTS: case XF_OP_SCATTER: return xf_ref_scatter_elements;
    case XF_OP_SCATTER_ND: return xf_ref_scatter_nd;
    default: return NULL;
    }
}

bool xf_grad_is_traced(xf_op op) { return traced_kernel(op) != NULL; }

/* The kernel runs with each moved input (data; Pad's constant and the
 * Scatters' updates too) replaced by int64 positions: element e of the
 * first at 1 + e, of the second after those; 0 stands for no input
 * element (Pad's constant given as an attribute, Trilu's zeros). */
xf_status xf_grad_traced(xf_grad_pass *b, const xf_node *n, const double *gy, xf_error *err)
{
    bool second = n->op == XF_OP_PAD || n->op == XF_OP_SCATTER_ELEMENTS || n->op == XF_OP_SCATTER ||
                  n->op == XF_OP_SCATTER_ND;
    int moved[2] = {n->inputs[0], second && n->n_inputs > 2 ? n->inputs[2] : -1}, iy = n->outputs[0];
    xf_tensor_view *in = calloc((size_t)n->n_inputs + 1, sizeof *in);
    int64_t *pos[2] = {NULL, NULL}, first = xf_tensor_numel(b->val[moved[0]]), total = first;
    int64_t count = xf_tensor_numel(b->val[iy]);
    int64_t *from = malloc(sizeof *from * (size_t)(count + 1));
    xf_status st = in && from ? XF_OK : nomem(err);
    if (st == XF_OK)
        views_of(b, n, in);
    for (int k = 0; st == XF_OK && k < n->n_inputs; k++) {
        int v = n->inputs[k];
        int which = v < 0 ? -1 : k == 0 ? 0 : k == 2 && v == moved[1] ? 1 : -1;
        if (which < 0)
            continue;
        int64_t len = xf_tensor_numel(b->val[v]), start = which ? first : 0;
        if (!(pos[which] = malloc(sizeof(int64_t) * (size_t)(len + 1)))) {
            st = nomem(err);
            break;
        }
        for (int64_t e = 0; e < len; e++)
            pos[which][e] = 1 + start + e;
        total = which ? first + len : total;
        in[k].dtype = XF_DT_INT64;
        in[k].data = pos[which];
    }
    xf_node copy = *n;
    copy.attrs.pad_value = 0;
    xf_tensor_view out = {XF_DT_INT64, b->val[iy]->shape, from};
    if (st == XF_OK)
        st = traced_kernel(n->op)(&copy, in, &out, err);
    bool oom = false;
    double *g0 = xf_grad_of(b, moved[0], &oom), *g1 = xf_grad_of(b, moved[1], &oom);
    if (st == XF_OK && oom)
        st = nomem(err);
    for (int64_t i = 0; st == XF_OK && i < count; i++) {
        int64_t at = from[i] - 1;
        if (at >= 0 && at < first && g0)
            g0[at] += gy[i];
        else if (at >= first && at < total && g1)
            g1[at - first] += gy[i];
    }
    free(pos[0]);
    free(pos[1]);
    free(from);
    free(in);
    return st;
}
