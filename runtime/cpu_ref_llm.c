/* cpu_ref kernels of the com.microsoft ops of int4 LLM exports and of
 * dynamically quantized models, computed as ONNX Runtime's CPU kernels
 * compute them (float32; MatMulIntegerToFloat, DynamicQuantizeMatMul and
 * GatherBlockQuantized are described at their kernels):
 *
 * MatMulNBits: the weight dequantized -- (q - zero point) * scale per block
 * of K, zero point 2^(bits - 1) when none is given -- then A times it, plus
 * the bias.  At accuracy_level 4 (uint8 or no zero points, no g_idx) A is
 * first quantized to int8 per block as ONNX Runtime's kernel does.
 *
 * GroupQueryAttention: Q, K and V split into heads (rotated first with
 * do_rotary), K and V written into present (B, Nkv, max(T, P), H) after the
 * past rows this step keeps (zeros beyond them), then per batch b and head
 * the causal softmax(scale Q K') V over the first seqlens_k[b] + 1 rows of
 * present, each query head reading kv head h / (N / Nkv).  With
 * local_window_size w >= 0 a query attends to its last w positions only
 * (ONNX Runtime 1.32's CPU kernel; w = 0 gives zeros).  The first prompt
 * (S equal to total_sequence_length) keeps no past rows; otherwise the new
 * rows follow seqlens_k[b] + 1 - S past ones. */
#include "xf_rt_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static xf_status bad(xf_error *err, const xf_node *n, const char *what)
{
    return xf_error_set(err, XF_ERR_INVALID, "node '%s' (%s): %s", n->name ? n->name : "", xf_op_name(n->op), what);
}

static xf_status nomem(xf_error *err, const xf_node *n) { return xf_error_set(err, XF_ERR_NOMEM, "out of memory in %s", xf_op_name(n->op)); }

static bool has(const xf_node *n, const xf_tensor_view *in, int k)
{
    return k < n->n_inputs && n->inputs[k] >= 0 && xf_rt_present(&in[k]);
}

/* bits-wide value i of a packed byte row, the low bits first */
static unsigned unpack(const uint8_t *row, int64_t i, int64_t bits)
{
    int64_t bit = i * bits;
    return (unsigned)(row[bit / 8] >> (bit % 8)) & ((1u << bits) - 1u);
}

bool xf_nbits_quantizes_a(const xf_node *n, const xf_tensor_view *in)
{
    return n->attrs.attn.nb_accuracy == 4 && !has(n, in, 4) && !(has(n, in, 3) && in[3].dtype == XF_DT_FLOAT);
}

xf_status xf_nbits_dequantize_rows(const xf_node *n, const xf_tensor_view *in, int64_t r0, int64_t r1, float *w,
                                   xf_error *err)
{
    const xf_attn_attrs *t = &n->attrs.attn;
    int64_t k = t->nb_k, bits = t->nb_bits, bs = t->nb_block, blocks = (k + bs - 1) / bs;
    int64_t blob = bs * bits / 8, zp_row = (blocks * bits + 7) / 8;
    const uint8_t *b = in[1].data, *zq = NULL;
    const float *sc = in[2].data, *zf = NULL;
    const int32_t *gi = has(n, in, 4) ? in[4].data : NULL;
    if (has(n, in, 3)) {
        if (in[3].dtype == XF_DT_FLOAT)
            zf = in[3].data;
        else
            zq = in[3].data;
    }
    float mid = (float)(1 << (bits - 1)); /* the zero point when none is given */
    for (int64_t c = 0; gi && c < k; c++)
        if (gi[c] < 0 || gi[c] >= blocks)
            return bad(err, n, "g_idx names a block out of range");
    for (int64_t r = r0; r < r1; r++) {
        float *wr = w + (r - r0) * k;
        for (int64_t blk = 0; !gi && blk < blocks; blk++) {
            /* a block's values share its zero point and scale */
            const uint8_t *p = b + (r * blocks + blk) * blob;
            float z = zf ? zf[r * blocks + blk] : zq ? (float)unpack(zq + r * zp_row, blk, bits) : mid;
            float s = sc[r * blocks + blk];
            int64_t len = k - blk * bs < bs ? k - blk * bs : bs;
            float *o = wr + blk * bs;
            if (bits == 4) {
                for (int64_t j = 0; j < len / 2; j++) {
                    o[2 * j] = ((float)(p[j] & 15u) - z) * s;
                    o[2 * j + 1] = ((float)(p[j] >> 4) - z) * s;
                }
                if (len % 2)
                    o[len - 1] = ((float)(p[len / 2] & 15u) - z) * s;
            } else {
                for (int64_t j = 0; j < len; j++)
                    o[j] = ((float)unpack(p, j, bits) - z) * s;
            }
        }
        for (int64_t c = 0; gi && c < k; c++) {
            int64_t blk = gi[c];
            float q = (float)unpack(b + (r * blocks + c / bs) * blob, c % bs, bits);
            float z = zf ? zf[r * blocks + blk] : zq ? (float)unpack(zq + r * zp_row, blk, bits) : mid;
            wr[c] = (q - z) * sc[r * blocks + blk];
        }
    }
    return XF_OK;
}

void xf_nbits_quantize_a(const float *a, float *out, int64_t m, int64_t k, int64_t block)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t c0 = 0; c0 < k; c0 += block) {
            int64_t c1 = c0 + block < k ? c0 + block : k;
            float amax = 0.0f;
            for (int64_t c = c0; c < c1; c++)
                amax = fabsf(a[i * k + c]) > amax ? fabsf(a[i * k + c]) : amax;
            float scale = amax / 127.0f, inv = amax != 0.0f ? 127.0f / amax : 0.0f;
            for (int64_t c = c0; c < c1; c++)
                out[i * k + c] = nearbyintf(a[i * k + c] * inv) * scale;
        }
}

xf_status xf_ref_ms_matmul_nbits(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                                 xf_error *err)
{
    const xf_attn_attrs *t = &n->attrs.attn;
    int64_t k = t->nb_k, nn = t->nb_n, m = xf_rt_numel(&in[0]) / k;
    float *w = malloc(sizeof *w * (size_t)(nn * k)), *aq = NULL;
    if (w && xf_nbits_quantizes_a(n, in) && m > 0)
        aq = malloc(sizeof *aq * (size_t)(m * k));
    if (!w || (xf_nbits_quantizes_a(n, in) && m > 0 && !aq)) {
        free(w);
        return nomem(err, n);
    }
    xf_status st = xf_nbits_dequantize_rows(n, in, 0, nn, w, err);
    const float *a = in[0].data, *bias = has(n, in, 5) ? in[5].data : NULL;
    if (aq) {
        xf_nbits_quantize_a(a, aq, m, k, t->nb_block);
        a = aq;
    }
    float *y = out[0].data;
    for (int64_t i = 0; i < m && st == XF_OK; i++)
        for (int64_t j = 0; j < nn; j++) {
            float acc = 0.0f;
            for (int64_t c = 0; c < k; c++)
                acc += a[i * k + c] * w[j * k + c];
            y[i * nn + j] = acc + (bias ? bias[j] : 0.0f);
        }
    free(aq);
    free(w);
    return st;
}

/* ------------------------------------------------------------------ GQA */

typedef struct gqa_dims {
    int64_t b, s, n, nk, h, p, l, rot;
    bool first;
} gqa_dims;

/* Splits (B, S, heads * H) rows (stride `row`, starting at column `col`)
 * into dst (B, heads, S, H), rotating each head vector at its position. */
static void split_heads(const float *src, int64_t row, int64_t col, int64_t heads, const gqa_dims *d,
                        const int64_t *pos, const xf_tensor_view *cosc, const xf_tensor_view *sinc, bool rotate,
                        bool interleaved, float *dst)
{
    int64_t half = d->rot / 2;
    for (int64_t b = 0; b < d->b; b++)
        for (int64_t s = 0; s < d->s; s++)
            for (int64_t h = 0; h < heads; h++) {
                const float *x = src + (b * d->s + s) * row + col + h * d->h;
                float *y = dst + ((b * heads + h) * d->s + s) * d->h;
                if (rotate) {
                    int64_t p = pos[b * d->s + s];
                    xf_rotary_row(x, y, (const float *)cosc->data + p * half, (const float *)sinc->data + p * half,
                                  d->rot, d->h, interleaved);
                } else {
                    memcpy(y, x, sizeof *y * (size_t)d->h);
                }
            }
}

/* present (B, Nkv, L, H): past's first keep[b] rows, the S new rows after
 * them, zeros elsewhere. */
static void fill_present(const float *past, const float *fresh, const gqa_dims *d, const int64_t *keep, float *pres)
{
    memset(pres, 0, sizeof *pres * (size_t)(d->b * d->nk * d->l * d->h));
    for (int64_t b = 0; b < d->b; b++)
        for (int64_t h = 0; h < d->nk; h++) {
            float *o = pres + (b * d->nk + h) * d->l * d->h;
            if (past && keep[b] > 0)
                memcpy(o, past + (b * d->nk + h) * d->p * d->h, sizeof *o * (size_t)(keep[b] * d->h));
            memcpy(o + keep[b] * d->h, fresh + (b * d->nk + h) * d->s * d->h, sizeof *o * (size_t)(d->s * d->h));
        }
}

/* softcap, then the (smooth) softmax over [lo, hi) of a score row of tb
 * columns; the rest is zero */
static void gqa_row(float *row, int64_t lo, int64_t hi, int64_t tb, const xf_attn_attrs *t)
{
    if (t->softcap > 0.0f)
        for (int64_t j = lo; j < hi; j++)
            row[j] = t->softcap * tanhf(row[j] / t->softcap);
    if (t->smooth_softmax) {
        float mx = 0.0f, sum = 0.0f; /* the extra logit 0 */
        for (int64_t j = lo; j < hi; j++)
            mx = row[j] > mx ? row[j] : mx;
        for (int64_t j = lo; j < hi; j++)
            sum += row[j] = expf(row[j] - mx);
        sum += expf(-mx);
        for (int64_t j = lo; j < hi; j++)
            row[j] /= sum;
    } else if (hi > lo) {
        xf_attn_softmax_row(row + lo, hi - lo);
    }
    for (int64_t j = 0; j < lo; j++)
        row[j] = 0.0f;
    for (int64_t j = hi; j < tb; j++)
        row[j] = 0.0f;
}

static xf_status gqa_dims_of(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, gqa_dims *d,
                             xf_error *err)
{
    const xf_attn_attrs *t = &n->attrs.attn;
    bool packed = !has(n, in, 1);
    int64_t heads = packed ? t->num_heads + 2 * t->kv_num_heads : t->num_heads;
    *d = (gqa_dims){.b = in[0].shape.dims[0], .s = in[0].shape.dims[1], .n = t->num_heads, .nk = t->kv_num_heads};
    d->h = in[0].shape.dims[2] / heads;
    d->p = has(n, in, 3) ? in[3].shape.dims[2] : 0;
    int64_t total = ((const int32_t *)in[6].data)[0];
    d->l = total > d->p ? total : d->p;
    if (out[0].shape.ndim != 3 || (n->n_outputs > 1 && xf_rt_present(&out[1]) && out[1].shape.dims[2] != d->l))
        return bad(err, n, "present's length is not max(total_sequence_length, past length)");
    bool subsequent = d->s > 1 && d->s != total;
    if (subsequent && d->b != 1)
        return bad(err, n, "a prompt after past context needs batch size 1");
    d->first = !subsequent && d->s == total;
    if (!d->first && !subsequent && d->s != 1)
        return bad(err, n, "sequence length must be 1 after the first prompt");
    d->rot = has(n, in, 7) && n->n_inputs > 8 && has(n, in, 8) ? in[7].shape.dims[1] * 2 : 0;
    if (t->do_rotary && d->rot < 2)
        return bad(err, n, "do_rotary without cos_cache and sin_cache");
    return XF_OK;
}

xf_status xf_attn_gqa(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_attn_gemm gemm,
                      xf_error *err)
{
    const xf_attn_attrs *t = &n->attrs.attn;
    gqa_dims d;
    xf_status st = gqa_dims_of(n, in, out, &d, err);
    if (st != XF_OK)
        return st;
    bool packed = !has(n, in, 1);
    const int32_t *seqlens = in[5].data;
    int64_t qn = d.b * d.n * d.s * d.h, kn = d.b * d.nk * d.s * d.h, pn = d.b * d.nk * d.l * d.h;
    int64_t per = d.s * d.l + 1;
    int threads = xf_attn_threads(gemm, d.b * d.n);
    int64_t *keep = malloc(sizeof *keep * (size_t)(d.b * (d.s + 1)));
    float *buf = malloc(sizeof *buf * (size_t)(qn + 2 * kn + 2 * pn + per * threads));
    if (!keep || !buf) {
        free(keep);
        free(buf);
        return nomem(err, n);
    }
    int64_t *pos = keep + d.b;
    for (int64_t b = 0; b < d.b && st == XF_OK; b++) {
        int64_t tb = (int64_t)seqlens[b] + 1;
        keep[b] = d.first ? 0 : tb - d.s;
        if (tb < 1 || tb > d.l || keep[b] < 0 || keep[b] > d.p)
            st = bad(err, n, "seqlens_k out of range of the past and present buffers");
        for (int64_t s = 0; s < d.s; s++) {
            pos[b * d.s + s] = keep[b] + s;
            if (d.rot && pos[b * d.s + s] >= in[7].shape.dims[0])
                st = bad(err, n, "position out of the cos/sin cache's range");
        }
    }
    float *q = buf, *kf = q + qn, *vf = kf + kn, *pk = vf + kn, *pv = pk + pn, *sc = pv + pn;
    if (st == XF_OK) {
        int64_t qrow = packed ? (d.n + 2 * d.nk) * d.h : d.n * d.h, kvrow = packed ? qrow : d.nk * d.h;
        const float *ks = packed ? in[0].data : in[1].data, *vs = packed ? in[0].data : in[2].data;
        bool rot = t->do_rotary;
        split_heads(in[0].data, qrow, 0, d.n, &d, pos, &in[7], &in[8], rot, t->interleaved, q);
        split_heads(ks, kvrow, packed ? d.n * d.h : 0, d.nk, &d, pos, &in[7], &in[8], rot, t->interleaved, kf);
        split_heads(vs, kvrow, packed ? (d.n + d.nk) * d.h : 0, d.nk, &d, pos, NULL, NULL, false, false, vf);
        fill_present(has(n, in, 3) ? in[3].data : NULL, kf, &d, keep, pk);
        fill_present(has(n, in, 4) ? in[4].data : NULL, vf, &d, keep, pv);
    }
    float scale = t->scale != 0.0f ? t->scale : 1.0f / sqrtf((float)d.h);
    int failed = 0;
    int64_t heads = st == XF_OK ? d.b * d.n : 0;
    XF_ATTN_HEADS_FOR(threads, failed)
    for (int64_t bh = 0; bh < heads; bh++) {
        int64_t b = bh / d.n, h = bh % d.n, tb = (int64_t)seqlens[b] + 1, kvh = b * d.nk + h / (d.n / d.nk);
        const float *qh = q + (b * d.n + h) * d.s * d.h;
        float *hsc = sc + xf_attn_thread_num() * per;
        if (!gemm(true, d.s, tb, d.h, scale, qh, d.h, pk + kvh * d.l * d.h, d.h, 0.0f, hsc, tb)) {
            failed = 1;
            continue;
        }
        for (int64_t s = 0; s < d.s; s++) {
            int64_t hi = keep[b] + s + 1 < tb ? keep[b] + s + 1 : tb, lo = 0;
            if (t->local_window_size >= 0 && hi > t->local_window_size)
                lo = hi - t->local_window_size;
            gqa_row(hsc + s * tb, lo, hi, tb, t);
        }
        float *o = (float *)out[0].data + b * d.s * d.n * d.h + h * d.h;
        failed |= !gemm(false, d.s, d.h, tb, 1.0f, hsc, tb, pv + kvh * d.l * d.h, d.h, 0.0f, o, d.n * d.h);
    }
    if (st == XF_OK && failed)
        st = bad(err, n, "the matrix product failed");
    for (int k = 1; k <= 2 && st == XF_OK; k++)
        if (k < n->n_outputs && n->outputs[k] >= 0 && xf_rt_present(&out[k]) && out[k].data)
            memcpy(out[k].data, k == 1 ? pk : pv, sizeof *pk * (size_t)pn);
    free(keep);
    free(buf);
    return st;
}

xf_status xf_ref_ms_gqa(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    return xf_attn_gqa(n, in, out, xf_attn_gemm_ref, err);
}

/* ---------------------------------------------- MatMulIntegerToFloat, DynamicQuantizeMatMul */

/* The elements of an 8-bit tensor less their zero point (per tensor, or per
 * column of `cols` columns), as int32. */
static int32_t *less_zero(const void *data, xf_dtype t, int64_t count, int64_t cols, const xf_tensor_view *zp,
                          bool per_column)
{
    int32_t *c = malloc(sizeof *c * (size_t)(count > 0 ? count : 1));
    int64_t nz = zp ? xf_rt_numel(zp) : 0;
    for (int64_t i = 0; c && i < count; i++) {
        int64_t z = nz ? xf_rt_load_i64(zp->dtype, zp->data, per_column && nz > 1 ? i % cols : 0) : 0;
        c[i] = (int32_t)(xf_rt_load_i64(t, data, i) - z);
    }
    return c;
}

/* MatMulIntegerToFloat (A, B, a_scale, b_scale, a_zero_point, b_zero_point,
 * bias) and DynamicQuantizeMatMul (A float, B, b_scale, b_zero_point,
 * bias; A quantized to uint8 as DynamicQuantizeLinear does): A (..., K)
 * times B (K, N) in int32, each sum times a_scale * b_scale (per tensor or
 * per column) plus the bias, as ONNX Runtime's kernels scale their int32
 * products. */
xf_status xf_ref_ms_int_matmul_float(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                                     xf_error *err)
{
    bool dyn = n->op == XF_OP_MS_DYNAMIC_QUANTIZE_MATMUL;
    const xf_tensor_view *b = &in[1], *a_zp = NULL, *b_zp, *bias, *b_sc = &in[dyn ? 2 : 3];
    b_zp = has(n, in, dyn ? 3 : 5) ? &in[dyn ? 3 : 5] : NULL;
    bias = has(n, in, dyn ? 4 : 6) ? &in[dyn ? 4 : 6] : NULL;
    if (!dyn && has(n, in, 4))
        a_zp = &in[4];
    int64_t k = b->shape.dims[0], nn = b->shape.dims[1], m = xf_rt_numel(&in[0]) / (k > 0 ? k : 1);
    float sa, zq = 0.0f;
    int32_t *a = NULL, *bc = less_zero(b->data, b->dtype, k * nn, nn, b_zp, true);
    if (dyn) {
        const float *x = in[0].data;
        float lo = 0.0f, hi = 0.0f;
        for (int64_t i = 0; i < m * k; i++) {
            lo = x[i] < lo ? x[i] : lo;
            hi = x[i] > hi ? x[i] : hi;
        }
        xf_rt_dynamic_qparams(n, NULL, lo, hi, &sa, &zq);
        a = malloc(sizeof *a * (size_t)(m * k > 0 ? m * k : 1));
        for (int64_t i = 0; a && i < m * k; i++)
            a[i] = (int32_t)(xf_rt_quantize_round(x[i] / sa, zq, XF_DT_UINT8) - zq);
    } else {
        sa = (float)xf_rt_load_f64(in[2].dtype, in[2].data, 0);
        a = less_zero(in[0].data, in[0].dtype, m * k, k, a_zp, false);
    }
    if (!a || !bc) {
        free(a);
        free(bc);
        return nomem(err, n);
    }
    int64_t nsc = xf_rt_numel(b_sc);
    float *y = out[0].data;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < nn; j++) {
            int64_t acc = 0;
            for (int64_t t = 0; t < k; t++)
                acc += (int64_t)a[i * k + t] * bc[t * nn + j];
            float scale = sa * (float)xf_rt_load_f64(b_sc->dtype, b_sc->data, nsc > 1 ? j : 0);
            y[i * nn + j] = (float)(int32_t)(uint32_t)(uint64_t)acc * scale +
                            (bias ? (float)xf_rt_load_f64(bias->dtype, bias->data, j) : 0.0f);
        }
    free(a);
    free(bc);
    return XF_OK;
}

/* ------------------------------------------------------------ GatherBlockQuantized */

/* Code i of GatherBlockQuantized's data or zero points: of uint8 bytes
 * packing bits-wide codes (rows of `row` bytes), or of int4 (signed) or
 * uint4 elements. */
static int gbq_code(xf_dtype t, const uint8_t *p, int64_t row, int64_t i, int64_t bits, int64_t row_bytes)
{
    if (t == XF_DT_UINT8)
        return (int)unpack(p + row * row_bytes, i, bits);
    unsigned c = xf_rt_packed_code(t, p, row + i);
    return t == XF_DT_INT4 ? (int)(c ^ 8u) - 8 : (int)c;
}

/* Data (G, ..., Q) gathered along axis 0, each value (q - zero point) *
 * scale of its block along the last axis.  uint8 data packs bits-wide
 * codes, the zero point 2^(bits - 1) when none is given; int4 and uint4
 * data hold one code an element, the zero point 0 when none is given (as
 * ONNX Runtime's kernel).  Indices out of [-G, G) give zeros, as in ONNX
 * Runtime (an error where the cpu backend made the node of a Gather). */
xf_status xf_ref_ms_gather_block_quantized(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                                           xf_error *err)
{
    const xf_shape *d = &in[0].shape;
    xf_dtype dt = in[0].dtype;
    bool u8 = dt == XF_DT_UINT8;
    int64_t bits = u8 ? n->attrs.attn.nb_bits : 4, per = u8 ? 8 / bits : 1, bs = n->attrs.attn.nb_block;
    int64_t g = d->dims[0], q = d->dims[d->ndim - 1] * per;
    int64_t rows = xf_rt_numel(&in[0]) / (g > 0 ? g : 1) / d->dims[d->ndim - 1];
    int64_t blocks = (q + bs - 1) / bs, zrow = (blocks + per - 1) / per, count = xf_rt_numel(&in[1]);
    const uint8_t *data = in[0].data, *zp = has(n, in, 3) ? in[3].data : NULL;
    const float *sc = in[2].data;
    float *y = out[0].data, mid = u8 ? (float)(1 << (bits - 1)) : 0.0f;
    for (int64_t i = 0; i < count; i++) {
        int64_t k = xf_rt_load_i64(in[1].dtype, in[1].data, i), at = k + (k < 0 ? g : 0);
        bool in_range = at >= 0 && at < g;
        if (!in_range && n->attrs.attn.gbq_checked)
            return xf_rt_bad_node(err, n, "index %lld out of range for axis of size %lld (a Gather of a "
                                  "DequantizeLinear, which this backend runs as one)", (long long)k, (long long)g);
        for (int64_t r = 0; r < rows; r++) {
            float *o = y + (i * rows + r) * q;
            if (!in_range) {
                memset(o, 0, sizeof *o * (size_t)q);
                continue;
            }
            int64_t row = at * rows + r, drow = u8 ? row : row * q, zr = u8 ? row : row * blocks;
            /* a block's values share its zero point and scale */
            for (int64_t blk = 0; blk < blocks; blk++) {
                float z = zp ? (float)gbq_code(dt, zp, zr, blk, bits, zrow) : mid, s = sc[row * blocks + blk];
                for (int64_t c = blk * bs; c < q && c < (blk + 1) * bs; c++)
                    o[c] = ((float)gbq_code(dt, data, drow, c, bits, q / per) - z) * s;
            }
        }
    }
    return XF_OK;
}
