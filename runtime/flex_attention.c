/* FlexAttention (domain ai.onnx.preview, version 1): scaled dot-product
 * attention whose scores and probabilities pass through subgraphs of the
 * node.  Import keeps the node opaque and loads score_mod and prob_mod as
 * graphs; control_flow.c makes their sessions and calls this on host
 * tensors.  Following ONNX's definition (its function body):
 *
 *   scores = scale Q K'          (B, Hq, L, S); scale 1/sqrt(E) by default
 *   scores = score_mod(scores)   when given
 *   probs  = softmax(scores)     along S
 *   probs  = prob_mod(probs)     when given
 *   Y      = probs V             (B, Hq, L, Ev)
 *
 * Q (B, Hq, L, E), K (B, Hkv, S, E), V (B, Hkv, S, Ev) share one float
 * type T, which Y has; query head h reads key/value head h / (Hq / Hkv).
 * Scores and probabilities are tensors of softmax_precision (float for T
 * other than double, else double; float16 and bfloat16 may be asked for),
 * rounded there as ONNX's body rounds them; the products and the softmax
 * are computed in double. */
#include "xf_rt_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool flex_dtype(xf_dtype t)
{
    return t == XF_DT_FLOAT || t == XF_DT_DOUBLE || t == XF_DT_FLOAT16 || t == XF_DT_BFLOAT16;
}

xf_dtype xf_rt_flex_precision(const xf_node *n, xf_dtype t)
{
    const xf_opaque_ints *p = xf_opaque_find_ints(n->opaque, "softmax_precision");
    if (p && p->n == 1)
        return p->v[0] > 0 && p->v[0] < 64 && flex_dtype((xf_dtype)p->v[0]) ? (xf_dtype)p->v[0] : XF_DT_UNDEFINED;
    return t == XF_DT_DOUBLE ? XF_DT_DOUBLE : XF_DT_FLOAT;
}

static xf_status fail(const xf_node *n, xf_error *err, xf_status st, const char *what)
{
    return xf_error_set(err, st, "node '%s' (FlexAttention): %s", n->name ? n->name : "", what);
}

/* Runs modifier s (NULL: none) on *t, which it replaces by the result:
 * a tensor of t's type and shape. */
static xf_status modify(const xf_node *n, xf_session *s, const char *attr, xf_tensor *const *outer, int n_outer,
                        xf_tensor **t, xf_error *err)
{
    if (!s)
        return XF_OK;
    xf_tensor **in = calloc((size_t)n_outer + 1, sizeof *in);
    if (!in)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    in[0] = *t;
    for (int k = 0; k < n_outer; k++)
        in[1 + k] = outer[k];
    xf_tensor *got = NULL;
    xf_status st = xf_session_run(s, in, &got, err);
    free(in);
    if (st != XF_OK)
        return st;
    if (xf_tensor_is_container(got) || got->dtype != (*t)->dtype || !xf_shape_equal(&got->shape, &(*t)->shape)) {
        xf_tensor_release(got);
        return xf_error_set(err, XF_ERR_INVALID,
                            "node '%s' (FlexAttention): %s gives a value of another type or shape than it takes",
                            n->name ? n->name : "", attr);
    }
    xf_tensor_release(*t);
    *t = got;
    return XF_OK;
}

xf_status xf_rt_flex_run(const xf_node *n, xf_tensor *const *in, xf_tensor *const *outer, int n_outer,
                         xf_session *score_mod, xf_session *prob_mod, xf_tensor **out, xf_error *err)
{
    const xf_tensor *q = in[0], *k = in[1], *v = in[2];
    for (int i = 0; i < 3; i++)
        if (!in[i] || xf_tensor_is_container(in[i]) || in[i]->shape.ndim != 4)
            return fail(n, err, XF_ERR_INVALID, "Q, K and V must be 4-D tensors");
    xf_dtype t = q->dtype, sp = xf_rt_flex_precision(n, t);
    if (!flex_dtype(t) || k->dtype != t || v->dtype != t)
        return fail(n, err, XF_ERR_INVALID, "Q, K and V must be of one float type");
    if (sp == XF_DT_UNDEFINED)
        return fail(n, err, XF_ERR_UNSUPPORTED, "softmax_precision is not float, float16, bfloat16 or double");
    const int64_t *qd = q->shape.dims, *kd = k->shape.dims, *vd = v->shape.dims;
    int64_t b = qd[0], nq = qd[1], l = qd[2], e = qd[3], nkv = kd[1], s = kd[2], ev = vd[3];
    if (kd[0] != b || vd[0] != b || kd[3] != e || vd[1] != nkv || vd[2] != s || nkv < 1 || nq % nkv)
        return fail(n, err, XF_ERR_INVALID, "Q, K and V are not (B, Hq, L, E), (B, Hkv, S, E), (B, Hkv, S, Ev) "
                                            "with Hq a multiple of Hkv");
    const xf_opaque_reals *given = xf_opaque_find_reals(n->opaque, "scale");
    double scale = given && given->n == 1 ? (double)(float)given->v[0] : 1.0 / sqrt((double)e);
    xf_shape grid = xf_shape_make(4, (const int64_t[]){b, nq, l, s});
    xf_tensor *scores = xf_tensor_create(sp, &grid);
    *out = xf_tensor_create(t, &(xf_shape){.ndim = 4, .dims = {b, nq, l, ev}});
    double *row = malloc(sizeof *row * (size_t)(s > 0 ? s : 1));
    xf_status st = scores && *out && row ? XF_OK : xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    int64_t group = nkv > 0 ? nq / nkv : 1;
    for (int64_t bh = 0; st == XF_OK && bh < b * nq; bh++) {
        int64_t kv = (bh / nq) * nkv + (bh % nq) / group;
        for (int64_t i = 0; i < l; i++)
            for (int64_t j = 0; j < s; j++) {
                double acc = 0;
                for (int64_t c = 0; c < e; c++)
                    acc += xf_rt_load_f64(t, q->data, (bh * l + i) * e + c) *
                           xf_rt_load_f64(t, k->data, (kv * s + j) * e + c);
                xf_rt_store_f64(sp, scores->data, (bh * l + i) * s + j, scale * acc);
            }
    }
    if (st == XF_OK)
        st = modify(n, score_mod, "score_mod", outer, n_outer, &scores, err);
    for (int64_t r = 0; st == XF_OK && r < b * nq * l; r++) {
        double top = -INFINITY, sum = 0;
        for (int64_t j = 0; j < s; j++) {
            row[j] = xf_rt_load_f64(sp, scores->data, r * s + j);
            top = row[j] > top ? row[j] : top;
        }
        for (int64_t j = 0; j < s; j++)
            sum += row[j] = exp(row[j] - top);
        for (int64_t j = 0; j < s; j++)
            xf_rt_store_f64(sp, scores->data, r * s + j, row[j] / sum);
    }
    if (st == XF_OK)
        st = modify(n, prob_mod, "prob_mod", outer, n_outer, &scores, err);
    for (int64_t bh = 0; st == XF_OK && bh < b * nq; bh++) {
        int64_t kv = (bh / nq) * nkv + (bh % nq) / group;
        for (int64_t i = 0; i < l; i++)
            for (int64_t c = 0; c < ev; c++) {
                double acc = 0;
                for (int64_t j = 0; j < s; j++)
                    acc += xf_rt_load_f64(sp, scores->data, (bh * l + i) * s + j) *
                           xf_rt_load_f64(t, v->data, (kv * s + j) * ev + c);
                xf_rt_store_f64(t, (*out)->data, (bh * l + i) * ev + c, acc);
            }
    }
    free(row);
    xf_tensor_release(scores);
    if (st != XF_OK) {
        xf_tensor_release(*out);
        *out = NULL;
    }
    return st;
}
