/* com.microsoft Attention and MultiHeadAttention against the same
 * computation written in standard ONNX ops (MatMul, Split, Reshape,
 * Transpose, Concat, Where, Softmax, ...) in one graph, on every host
 * backend, static and dynamic, with batch and sequence dims symbolic: each
 * mask form (1-D end positions, end and start positions, 2-D and 3-D 0/1
 * masks), unidirectional masking with and without past state, the
 * present outputs, attention_bias, qkv_hidden_sizes, scale and
 * mask_filter_value, and MultiHeadAttention's operand forms. */
#include "graph_build_util.h"
#include "kernel_case_util.h"
#include "xf_rt_internal.h"
#include "xf_test_util.h"

#include <check.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MS "com.microsoft"

static const char *const BS[] = {"batch", "seq", NULL, NULL, NULL};
static const char *const BT[] = {"batch", "total", NULL};
static const char *const BST[] = {"batch", "seq", "total"};

enum mask_kind { NO_MASK, END, END_START, RAW2, RAW3 };

typedef struct attn_case {
    int64_t b, s, din, n, h, hv; /* hv: V's head size (qkv_hidden_sizes when it differs from h) */
    enum mask_kind mask;
    int uni;
    int64_t past;
    int bias_form; /* attention_bias: 0 none, 1 (B, N, S, T), 2 (1, 1, S, T) */
    float scale, filter;
    int no_bias;
} attn_case;

/* (B, S, N * h) -> (B, N, S, h) */
static const char *heads(gbuild *b, const char *x, int64_t n, int64_t h)
{
    const char *r = GB(b, "Reshape", x, gb_ints(b, 4, (int64_t[]){0, 0, n, h}));
    Onnx__NodeProto *t = gb_node(b, "Transpose", NULL, (const char *const[]){r, NULL}, 1, &r);
    gb_attr_ints(t, "perm", 4, (int64_t[]){0, 2, 1, 3});
    return r;
}

static const char *transposed(gbuild *b, const char *x, const int64_t *perm)
{
    const char *r;
    gb_attr_ints(gb_node(b, "Transpose", NULL, (const char *const[]){x, NULL}, 1, &r), "perm", 4, perm);
    return r;
}

static const char *axis_node(gbuild *b, const char *op, const char *const *ins, int64_t axis)
{
    const char *r;
    attr_int(gb_node(b, op, NULL, ins, 1, &r), "axis", axis);
    return r;
}

/* The additive mask of ONNX Runtime's kernels, broadcastable to (B, 1, S,
 * T): where the 0/1 mask or the positions say so, filter; where causal
 * masking hides the future, the lowest float instead. */
static const char *additive_mask(gbuild *b, const char *mask, enum mask_kind kind, int64_t nb, int64_t s,
                                 int64_t past, int uni, float filter)
{
    int64_t t = past + s;
    const char *valid = NULL, *zero = gb_float(b, 0.0f), *add = NULL;
    if (kind == END || kind == END_START) {
        int32_t *pos = malloc(sizeof *pos * (size_t)t);
        for (int64_t j = 0; j < t; j++)
            pos[j] = (int32_t)j;
        const char *p = gb_const(b, mk(XF_DT_INT32, 2, (int64_t[]){1, t}, pos));
        free(pos);
        const char *ends = kind == END ? mask : GB(b, "Slice", mask, gb_ints(b, 1, (int64_t[]){0}),
                                                   gb_ints(b, 1, (int64_t[]){nb}));
        valid = GB(b, "Less", p, GB(b, "Unsqueeze", ends, gb_ints(b, 1, (int64_t[]){1})));
        if (kind == END_START) {
            const char *starts = GB(b, "Slice", mask, gb_ints(b, 1, (int64_t[]){nb}), gb_ints(b, 1, (int64_t[]){2 * nb}));
            const char *before = GB(b, "Less", p, GB(b, "Unsqueeze", starts, gb_ints(b, 1, (int64_t[]){1})));
            valid = GB(b, "And", valid, GB(b, "Not", before));
        }
    } else if (kind == RAW2 || kind == RAW3) {
        int32_t z = 0;
        valid = GB(b, "Greater", mask, gb_const(b, mk(XF_DT_INT32, 0, NULL, &z)));
    }
    if (valid) {
        add = GB(b, "Where", valid, zero, gb_float(b, filter));
        add = kind == RAW3 ? GB(b, "Unsqueeze", add, gb_ints(b, 1, (int64_t[]){1}))
                           : GB(b, "Reshape", add, gb_ints(b, 4, (int64_t[]){0, 1, 1, -1}));
    }
    if (uni && s > 1) {
        uint8_t *tril = malloc((size_t)(s * t));
        for (int64_t i = 0; i < s; i++)
            for (int64_t j = 0; j < t; j++)
                tril[i * t + j] = j <= past + i;
        const char *keep = gb_const(b, mk(XF_DT_BOOL, 2, (int64_t[]){s, t}, tril));
        free(tril);
        add = GB(b, "Where", keep, add ? add : zero, gb_float(b, -FLT_MAX));
    }
    return add;
}

/* softmax(scale * Q K' + attention_bias + mask) V as (B, S, N * Hv). */
static const char *attend(gbuild *b, const char *q, const char *k, const char *v, const char *add, const char *ab,
                          float scale)
{
    const char *sc = GB(b, "Mul", GB(b, "MatMul", q, transposed(b, k, (int64_t[]){0, 1, 3, 2})), gb_float(b, scale));
    if (ab)
        sc = GB(b, "Add", sc, ab);
    if (add)
        sc = GB(b, "Add", sc, add);
    const char *p = axis_node(b, "Softmax", (const char *const[]){sc, NULL}, -1);
    const char *o = transposed(b, GB(b, "MatMul", p, v), (int64_t[]){0, 2, 1, 3});
    return GB(b, "Reshape", o, gb_ints(b, 3, (int64_t[]){0, 0, -1}));
}

static xf_tensor *mask_tensor(gbuild *b, enum mask_kind kind, int64_t nb, int64_t s, int64_t t)
{
    int64_t count = kind == END ? nb : kind == END_START ? 2 * nb : kind == RAW2 ? nb * t : nb * s * t;
    int32_t *v = malloc(sizeof *v * (size_t)count);
    for (int64_t i = 0; i < count; i++) {
        b->seed = b->seed * 1103515245u + 12345u;
        unsigned r = b->seed >> 16;
        if (kind == END || (kind == END_START && i < nb))
            v[i] = (int32_t)(1 + r % (unsigned)t);
        else if (kind == END_START)
            v[i] = (int32_t)(r % 3);
        else
            v[i] = r % 4 != 0 || i % t == 0; /* the first key stays visible in each row */
    }
    xf_tensor *m = kind == END || kind == END_START ? mk(XF_DT_INT32, 1, (int64_t[]){count}, v)
                   : kind == RAW2                   ? mk(XF_DT_INT32, 2, (int64_t[]){nb, t}, v)
                                                    : mk(XF_DT_INT32, 3, (int64_t[]){nb, s, t}, v);
    free(v);
    return m;
}

static void run_attention(const attn_case *c, unsigned seed)
{
    gbuild gb, *b = &gb;
    gb_init(b, seed);
    int64_t d = c->n * c->h, dv = c->n * (c->hv ? c->hv : c->h), hv = dv / c->n, t = c->past + c->s, cols = 2 * d + dv;
    float scale = c->scale != 0.0f ? c->scale : 1.0f / sqrtf((float)c->h);
    float filter = c->filter != 0.0f ? c->filter : -10000.0f;
    const char *x = gb_input(b, "x", gb_rand(b, DIMS(c->b, c->s, c->din)), BS);
    const char *w = gb_const(b, gb_rand(b, DIMS(c->din, cols)));
    const char *bias = c->no_bias ? "" : gb_const(b, gb_rand(b, DIMS(cols)));
    const char *mask = c->mask ? gb_input(b, "mask", mask_tensor(b, c->mask, c->b, c->s, t),
                                          c->mask == RAW2 ? BT : c->mask == RAW3 ? BST : NULL)
                               : "";
    const char *past = c->past ? gb_input(b, "past", gb_rand(b, DIMS(2, c->b, c->n, c->past, c->h)),
                                          (const char *const[]){NULL, "batch", NULL, "past", NULL})
                               : "";
    const char *ab = c->bias_form ? gb_input(b, "ab", gb_rand(b, DIMS(c->bias_form == 1 ? c->b : 1,
                                                                       c->bias_form == 1 ? c->n : 1, c->s, t)), NULL)
                                  : "";
    const char *outs[2];
    Onnx__NodeProto *node = gb_node(b, "Attention", MS, (const char *const[]){x, w, bias, mask, past, ab, NULL},
                                    c->past || !c->hv ? 2 : 1, outs);
    attr_int(node, "num_heads", c->n);
    if (c->uni)
        attr_int(node, "unidirectional", 1);
    if (c->hv)
        gb_attr_ints(node, "qkv_hidden_sizes", 3, (int64_t[]){d, d, dv});
    if (c->scale != 0.0f)
        attr_float(node, "scale", c->scale);
    if (c->filter != 0.0f)
        attr_float(node, "mask_filter_value", c->filter);
    /* the same in standard ops */
    const char *proj = GB(b, "MatMul", x, w), *qkv[3];
    if (!c->no_bias)
        proj = GB(b, "Add", proj, bias);
    attr_int(gb_node(b, "Split", NULL, (const char *const[]){proj, gb_ints(b, 3, (int64_t[]){d, d, dv}), NULL}, 3, qkv),
             "axis", 2);
    const char *q = heads(b, qkv[0], c->n, c->h), *k = heads(b, qkv[1], c->n, c->h), *v = heads(b, qkv[2], c->n, hv);
    if (c->past) {
        int64_t zero = 0, one = 1;
        const char *pk = axis_node(b, "Gather", (const char *const[]){past, gb_const(b, mk(XF_DT_INT64, 0, NULL, &zero)), NULL}, 0);
        const char *pv = axis_node(b, "Gather", (const char *const[]){past, gb_const(b, mk(XF_DT_INT64, 0, NULL, &one)), NULL}, 0);
        k = axis_node(b, "Concat", (const char *const[]){pk, k, NULL}, 2);
        v = axis_node(b, "Concat", (const char *const[]){pv, v, NULL}, 2);
    }
    const char *add = additive_mask(b, mask, c->mask, c->b, c->s, c->past, c->uni, filter);
    gb_pair(b, outs[0], attend(b, q, k, v, add, c->bias_form ? ab : NULL, scale), ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
    if (c->past || !c->hv) {
        const char *zero = gb_ints(b, 1, (int64_t[]){0});
        const char *present = axis_node(
            b, "Concat", (const char *const[]){GB(b, "Unsqueeze", k, zero), GB(b, "Unsqueeze", v, zero), NULL}, 0);
        gb_pair(b, outs[1], present, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
    }
    char what[160];
    snprintf(what, sizeof what, "Attention B%lld S%lld N%lld H%lld mask %d uni %d past %lld", (long long)c->b,
             (long long)c->s, (long long)c->n, (long long)c->h, c->mask, c->uni, (long long)c->past);
    gb_check(b, 2e-5, what);
}

/* Each mask form; scale and mask_filter_value; no bias.  Causal masking,
 * alone and with a padding mask; GPT-2's decoding with past state and the
 * present output (one and several new positions).  attention_bias per
 * batch and head, and broadcast; V of another head size. */
START_TEST(test_attention)
{
    static const attn_case cases[] = {
        {2, 5, 16, 2, 8, 0, NO_MASK, 0, 0, 0, 0, 0, 0},
        {2, 5, 16, 4, 4, 0, END, 0, 0, 0, 0, 0, 0},
        {3, 4, 8, 2, 4, 0, END_START, 0, 0, 0, 0, 0, 0},
        {2, 5, 16, 2, 8, 0, RAW2, 0, 0, 0, 0, 0, 0},
        {2, 5, 16, 2, 8, 0, RAW3, 0, 0, 0, 0, 0, 0},
        {1, 6, 12, 3, 4, 0, RAW2, 0, 0, 0, 0.25f, -50.0f, 0},
        {2, 4, 8, 1, 8, 0, NO_MASK, 0, 0, 0, 0, 0, 1},
        /* causal, past */
        {2, 5, 16, 2, 8, 0, NO_MASK, 1, 0, 0, 0, 0, 0},
        {2, 5, 16, 2, 8, 0, RAW2, 1, 0, 0, 0, 0, 0},
        {2, 3, 16, 2, 8, 0, RAW2, 1, 4, 0, 0, 0, 0},
        {1, 1, 16, 4, 4, 0, RAW2, 1, 6, 0, 0, 0, 0},
        {2, 3, 8, 2, 4, 0, NO_MASK, 1, 2, 0, 0, 0, 0},
        {2, 4, 12, 3, 4, 0, END, 1, 0, 0, 0, 0, 0},
        /* attention_bias, qkv_hidden_sizes */
        {2, 4, 12, 3, 4, 0, NO_MASK, 0, 0, 1, 0, 0, 0},
        {2, 4, 12, 3, 4, 0, RAW2, 1, 0, 2, 0, 0, 0},
        {2, 4, 12, 2, 4, 6, RAW2, 0, 0, 1, 0, 0, 0},
        {2, 3, 10, 2, 3, 5, END, 0, 0, 0, 0, 0, 0},
    };
    GB_RUN_CASES(cases, run_attention, 7);
}
END_TEST

enum mha_form { SEPARATE, PACKED_KV, PACKED_QKV, KV_BNSH };

typedef struct mha_case {
    enum mha_form form;
    int64_t b, s, l, n, h, hv;
    int bias;
    enum mask_kind mask;
    int uni;
    int64_t past;
    int bias_form;
} mha_case;

/* Part `part` of packed (B, R, N, parts, H) data as (B, N, R, H), plus
 * bias slice bias_at (NULL: none) reshaped to (N, H). */
static const char *unpack(gbuild *b, const char *x, int64_t part, const char *bias, int64_t at, int64_t n, int64_t h)
{
    const char *idx = gb_const(b, mk(XF_DT_INT64, 0, NULL, &part));
    const char *p = axis_node(b, "Gather", (const char *const[]){x, idx, NULL}, 3);
    if (bias) {
        const char *sl = GB(b, "Slice", bias, gb_ints(b, 1, (int64_t[]){at}), gb_ints(b, 1, (int64_t[]){at + n * h}));
        p = GB(b, "Add", p, GB(b, "Reshape", sl, gb_ints(b, 2, (int64_t[]){n, h})));
    }
    return transposed(b, p, (int64_t[]){0, 2, 1, 3});
}

/* (B, R, N * h) plus bias slice at, as (B, N, R, h). */
static const char *biased_heads(gbuild *b, const char *x, const char *bias, int64_t at, int64_t n, int64_t h)
{
    if (bias)
        x = GB(b, "Add", x, GB(b, "Slice", bias, gb_ints(b, 1, (int64_t[]){at}), gb_ints(b, 1, (int64_t[]){at + n * h})));
    return heads(b, x, n, h);
}

static void run_mha(const mha_case *c, unsigned seed)
{
    gbuild gb, *b = &gb;
    gb_init(b, seed);
    int64_t n = c->n, h = c->h, hv = c->hv, d = n * h, dv = n * hv, t = c->past + c->l;
    static const char *const BL[] = {"batch", "kv", NULL, NULL, NULL};
    const char *q = "", *k = "", *v = "";
    if (c->form == PACKED_QKV) {
        q = gb_input(b, "q", gb_rand(b, DIMS(c->b, c->s, n, 3, h)), BS);
    } else {
        q = gb_input(b, "q", gb_rand(b, DIMS(c->b, c->s, d)), BS);
        if (c->form == PACKED_KV)
            k = gb_input(b, "k", gb_rand(b, DIMS(c->b, c->l, n, 2, h)), BL);
        else if (c->form == KV_BNSH)
            k = gb_input(b, "k", gb_rand(b, DIMS(c->b, n, c->l, h)), NULL);
        else
            k = gb_input(b, "k", gb_rand(b, DIMS(c->b, c->l, d)), BL);
        if (c->form == KV_BNSH)
            v = gb_input(b, "v", gb_rand(b, DIMS(c->b, n, c->l, hv)), NULL);
        else if (c->form == SEPARATE)
            v = gb_input(b, "v", gb_rand(b, DIMS(c->b, c->l, dv)), BL);
    }
    const char *bias = c->bias ? gb_const(b, gb_rand(b, DIMS(2 * d + dv))) : "";
    const char *mask = c->mask ? gb_input(b, "mask", mask_tensor(b, c->mask, c->b, c->s, t), NULL) : "";
    const char *ab = c->bias_form ? gb_input(b, "ab", gb_rand(b, DIMS(c->bias_form == 1 ? c->b : 1,
                                                                       c->bias_form == 1 ? n : 1, c->s, t)), NULL)
                                  : "";
    const char *pk = c->past ? gb_input(b, "pk", gb_rand(b, DIMS(c->b, n, c->past, h)), NULL) : "";
    const char *pv = c->past ? gb_input(b, "pv", gb_rand(b, DIMS(c->b, n, c->past, hv)), NULL) : "";
    const char *outs[3];
    Onnx__NodeProto *node = gb_node(b, "MultiHeadAttention", MS,
                                    (const char *const[]){q, k, v, bias, mask, ab, pk, pv, NULL}, c->past ? 3 : 1, outs);
    attr_int(node, "num_heads", n);
    if (c->uni)
        attr_int(node, "unidirectional", 1);
    const char *bq = c->bias ? bias : NULL, *qh, *kh, *vh;
    if (c->form == PACKED_QKV) {
        qh = unpack(b, q, 0, bq, 0, n, h);
        kh = unpack(b, q, 1, bq, d, n, h);
        vh = unpack(b, q, 2, bq, 2 * d, n, h);
    } else {
        qh = biased_heads(b, q, bq, 0, n, h);
        if (c->form == PACKED_KV) {
            kh = unpack(b, k, 0, bq, d, n, h);
            vh = unpack(b, k, 1, bq, 2 * d, n, h);
        } else if (c->form == KV_BNSH) {
            kh = k;
            vh = v;
        } else {
            kh = biased_heads(b, k, bq, d, n, h);
            vh = biased_heads(b, v, bq, 2 * d, n, hv);
        }
    }
    if (c->past) {
        kh = axis_node(b, "Concat", (const char *const[]){pk, kh, NULL}, 2);
        vh = axis_node(b, "Concat", (const char *const[]){pv, vh, NULL}, 2);
    }
    const char *add = additive_mask(b, mask, c->mask, c->b, c->s, c->past, c->uni, -10000.0f);
    gb_pair(b, outs[0], attend(b, qh, kh, vh, add, c->bias_form ? ab : NULL, 1.0f / sqrtf((float)h)),
            ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
    if (c->past) {
        gb_pair(b, outs[1], kh, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
        gb_pair(b, outs[2], vh, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
    }
    char what[160];
    snprintf(what, sizeof what, "MultiHeadAttention form %d B%lld S%lld L%lld mask %d uni %d past %lld", c->form,
             (long long)c->b, (long long)c->s, (long long)c->l, c->mask, c->uni, (long long)c->past);
    gb_check(b, 2e-5, what);
}

/* Separate Q, K and V (cross attention: L != S; V of another head size),
 * packed K and V, packed Q, K and V, K and V already in heads; bias,
 * key_padding_mask forms, attention_bias, causal masking; decoding with
 * past_key and past_value (several and one new positions) to present_key
 * and present_value. */
START_TEST(test_mha)
{
    static const mha_case cases[] = {
        {SEPARATE, 2, 4, 6, 2, 4, 4, 1, NO_MASK, 0, 0, 0},
        {SEPARATE, 2, 4, 6, 2, 4, 6, 1, RAW2, 0, 0, 0},
        {SEPARATE, 2, 4, 4, 2, 4, 4, 0, END, 0, 0, 0},
        {SEPARATE, 2, 3, 3, 2, 4, 4, 1, RAW3, 0, 0, 1},
        {SEPARATE, 2, 4, 4, 2, 4, 4, 1, NO_MASK, 1, 0, 2},
        {PACKED_KV, 2, 4, 5, 2, 4, 4, 1, RAW2, 0, 0, 0},
        {PACKED_QKV, 2, 5, 5, 3, 4, 4, 1, NO_MASK, 0, 0, 1},
        {PACKED_QKV, 2, 5, 5, 3, 4, 4, 0, RAW2, 1, 0, 0},
        {KV_BNSH, 2, 4, 6, 2, 4, 4, 0, RAW2, 0, 0, 0},
        /* past */
        {SEPARATE, 2, 3, 3, 2, 4, 4, 1, RAW2, 1, 5, 0},
        {SEPARATE, 1, 1, 1, 4, 8, 8, 1, NO_MASK, 1, 7, 0},
        {SEPARATE, 2, 2, 2, 2, 4, 6, 0, END, 0, 3, 0},
    };
    GB_RUN_CASES(cases, run_mha, 91);
}
END_TEST

/* The attention softmax of one row, which works the row's leading multiple
 * of 16 16 at a time where the CPU has AVX-512 and the rest 4 at a time,
 * the last block padded with -inf: a row of 16 k elements ending in -inf
 * gives, bit for bit, what the row without that element gives (16 k - 1
 * elements, 16 fewer of them taken 16 at a time, summed in the same
 * order); every length from 1 to 70 agrees with softmax in double to
 * 2e-6; a NaN anywhere makes every output NaN. */
START_TEST(test_softmax_row)
{
    float a[80], b[80];
    uint32_t seed = 12345;
    for (int64_t n = 1; n <= 70; n++) {
        double mx = -INFINITY, sum = 0.0;
        for (int64_t i = 0; i < n; i++) {
            seed = seed * 1664525u + 1013904223u;
            a[i] = (float)((seed >> 8) * (16.0 / 16777216.0) - 8.0);
            mx = a[i] > mx ? a[i] : mx;
        }
        memcpy(b, a, sizeof *a * (size_t)n);
        for (int64_t i = 0; i < n; i++)
            sum += exp((double)a[i] - mx);
        xf_attn_softmax_row(a, n);
        for (int64_t i = 0; i < n; i++)
            ck_assert_msg(fabs(a[i] - exp((double)b[i] - mx) / sum) <= 2e-6, "length %lld, element %lld: %g",
                          (long long)n, (long long)i, (double)a[i]);
        if (n % 16 == 0) {
            b[n - 1] = -INFINITY;
            memcpy(a, b, sizeof *a * (size_t)n);
            xf_attn_softmax_row(a, n);
            xf_attn_softmax_row(b, n - 1);
            ck_assert_float_eq(a[n - 1], 0.0f);
            ck_assert_msg(memcmp(a, b, sizeof *a * (size_t)(n - 1)) == 0, "length %lld", (long long)n);
        }
    }
    for (int64_t at = 0; at < 37; at += 12) {
        for (int64_t i = 0; i < 37; i++)
            a[i] = (float)i * 0.25f;
        a[at] = NAN;
        xf_attn_softmax_row(a, 37);
        for (int64_t i = 0; i < 37; i++)
            ck_assert_msg(isnan(a[i]), "NaN at %lld, element %lld: %g", (long long)at, (long long)i, (double)a[i]);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("contrib_attn");
    TCase *tc = tcase_create("attention");
    tcase_add_checked_fixture(tc, NULL, free_allocs);
    tcase_add_test(tc, test_attention);
    tcase_add_test(tc, test_mha);
    tcase_add_test(tc, test_softmax_row);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
