/* cpu_ref kernels of opset 27's recurrent ops, in float (the backend
 * widens 16-bit floats), accumulating in double, following ONNX's
 * reference implementation.
 *
 * CausalConvWithState: each channel's row is its past_state (zeros when
 * absent) followed by the input, P of k - 1 + L positions; output t is
 * bias + sum_j weight[j] P[t + j] (times its sigmoid with activation
 * silu), present_state the last k - 1 positions of P.
 *
 * LinearAttention: per batch entry and key/value head, a state S (d_k x
 * d_v, past_state or zeros) runs over the sequence: gated rules first
 * scale row i of S by exp(decay) (one decay per head, or one per key
 * dim); delta rules then replace v by beta (v - S' k); every rule adds
 * k v' (outer product).  Query head h reads the state of key/value head
 * h / (Hq / Hkv): o = scale S' q, scale 1/sqrt(d_k) when the attribute is
 * 0. */
#include "xf_rt_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool given(const xf_node *n, const xf_tensor_view *in, int k)
{
    return k < n->n_inputs && n->inputs[k] >= 0 && xf_rt_present(&in[k]);
}

static bool wanted(const xf_node *n, const xf_tensor_view *out, int k)
{
    return k < n->n_outputs && n->outputs[k] >= 0 && xf_rt_present(&out[k]) && out[k].data;
}

xf_status xf_ref_causal_conv(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    (void)err;
    const float *x = in[0].data, *w = in[1].data;
    const float *bias = given(n, in, 2) ? in[2].data : NULL, *past = given(n, in, 3) ? in[3].data : NULL;
    int64_t b = in[0].shape.dims[0], ch = in[0].shape.dims[1], l = in[0].shape.dims[2], k = in[1].shape.dims[2];
    int64_t keep = k - 1;
    float *y = wanted(n, out, 0) ? out[0].data : NULL, *present = wanted(n, out, 1) ? out[1].data : NULL;
    bool silu = n->attrs.attn.conv_silu;
    for (int64_t r = 0; r < b * ch; r++) {
        /* an empty sequence (l 0) has no data to point into */
        const float *xr = x ? x + r * l : NULL, *pr = past ? past + r * keep : NULL, *wr = w + (r % ch) * k;
        /* position i of the padded row */
#define PADDED(i) ((i) < keep ? (pr ? (double)pr[i] : 0.0) : (double)xr[(i) - keep])
        for (int64_t t = 0; y && t < l; t++) {
            double acc = bias ? bias[r % ch] : 0.0;
            for (int64_t j = 0; j < k; j++)
                acc += (double)wr[j] * PADDED(t + j);
            y[r * l + t] = (float)(silu ? acc / (1.0 + exp(-acc)) : acc);
        }
        for (int64_t i = 0; present && i < keep; i++)
            present[r * keep + i] = (float)PADDED(l + i);
#undef PADDED
    }
    return XF_OK;
}

typedef struct linear_dims {
    int64_t b, t, nq, nkv, dk, dv;
    int64_t decay_last, beta_last; /* 0: no such input */
} linear_dims;

/* One batch entry's key/value head: runs its state over the sequence and
 * writes the outputs of the query heads that read it. */
static void linear_head(const xf_node *n, const linear_dims *d, const xf_tensor_view *in, int64_t bi, int64_t h,
                        double *s, double *vt, float *y)
{
    const float *q = in[0].data, *k = in[1].data, *v = in[2].data;
    const float *decay = d->decay_last ? in[4].data : NULL, *beta = d->beta_last ? in[5].data : NULL;
    int64_t dk = d->dk, dv = d->dv, group = d->nq / d->nkv;
    double scale = n->attrs.attn.scale != 0.0f ? (double)n->attrs.attn.scale : 1.0 / sqrt((double)dk);
    for (int64_t t = 0; t < d->t; t++) {
        int64_t row = bi * d->t + t;
        const float *kt = k + (row * d->nkv + h) * dk, *vrow = v + (row * d->nkv + h) * dv;
        if (decay) {
            const float *g = decay + row * d->decay_last + (d->decay_last == d->nkv ? h : h * dk);
            for (int64_t i = 0; i < dk; i++) {
                double f = exp((double)g[d->decay_last == d->nkv ? 0 : i]);
                for (int64_t j = 0; j < dv; j++)
                    s[i * dv + j] *= f;
            }
        }
        for (int64_t j = 0; j < dv; j++)
            vt[j] = vrow[j];
        if (beta) {
            double bt = beta[row * d->beta_last + (d->beta_last == 1 ? 0 : h)];
            for (int64_t j = 0; j < dv; j++) {
                double got = 0;
                for (int64_t i = 0; i < dk; i++)
                    got += s[i * dv + j] * kt[i];
                vt[j] = bt * (vt[j] - got);
            }
        }
        for (int64_t i = 0; i < dk; i++)
            for (int64_t j = 0; j < dv; j++)
                s[i * dv + j] += (double)kt[i] * vt[j];
        for (int64_t g = 0; y && g < group; g++) {
            int64_t hq = h * group + g;
            const float *qt = q + (row * d->nq + hq) * dk;
            float *yt = y + (row * d->nq + hq) * dv;
            for (int64_t j = 0; j < dv; j++) {
                double acc = 0;
                for (int64_t i = 0; i < dk; i++)
                    acc += (double)qt[i] * s[i * dv + j];
                yt[j] = (float)(scale * acc);
            }
        }
    }
}

xf_status xf_ref_linear_attention(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                                  xf_error *err)
{
    linear_dims d = {.b = in[0].shape.dims[0], .t = in[0].shape.dims[1], .nq = n->attrs.attn.num_heads,
                     .nkv = n->attrs.attn.kv_num_heads};
    d.dk = in[0].shape.dims[2] / d.nq;
    d.dv = in[2].shape.dims[2] / d.nkv;
    d.decay_last = given(n, in, 4) ? in[4].shape.dims[2] : 0;
    d.beta_last = given(n, in, 5) ? in[5].shape.dims[2] : 0;
    const float *past = given(n, in, 3) ? in[3].data : NULL;
    float *y = wanted(n, out, 0) ? out[0].data : NULL, *present = wanted(n, out, 1) ? out[1].data : NULL;
    size_t cells = (size_t)(d.dk * d.dv);
    double *s = malloc(sizeof *s * (cells ? cells : 1)), *vt = malloc(sizeof *vt * (size_t)(d.dv ? d.dv : 1));
    if (!s || !vt) {
        free(s);
        free(vt);
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    }
    for (int64_t bi = 0; bi < d.b; bi++)
        for (int64_t h = 0; h < d.nkv; h++) {
            const float *ps = past ? past + (bi * d.nkv + h) * (int64_t)cells : NULL;
            for (size_t c = 0; c < cells; c++)
                s[c] = ps ? ps[c] : 0.0;
            linear_head(n, &d, in, bi, h, s, vt, y);
            for (size_t c = 0; present && c < cells; c++)
                present[(bi * d.nkv + h) * (int64_t)cells + (int64_t)c] = (float)s[c];
        }
    free(s);
    free(vt);
    return XF_OK;
}
