/* com.microsoft MatMulNBits and GroupQueryAttention against the same
 * computation in standard ONNX ops, on every host backend, static and
 * dynamic: MatMulNBits against its weight dequantized by Sub and Mul from
 * the codes the test packed by hand, then MatMul (at accuracy_level 4 with
 * A quantized per block by ReduceMax, Round and Mul first);
 * GroupQueryAttention against Reshape/Transpose/MatMul/Where/Softmax with
 * the kv heads repeated by Expand, past and new rows joined by Concat and
 * RotaryEmbedding's rotation written in Slice, Mul and Concat;
 * MatMulIntegerToFloat and DynamicQuantizeMatMul against MatMulInteger
 * (after DynamicQuantizeLinear), Cast, Mul and Add; GatherBlockQuantized
 * against Gather of a table dequantized in standard ops. */
#include "graph_build_util.h"
#include "kernel_case_util.h"
#include "xf_test_util.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MS "com.microsoft"
#define FLOAT ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT

static unsigned next(gbuild *b, unsigned below)
{
    b->seed = b->seed * 1103515245u + 12345u;
    return (b->seed >> 16) % below;
}

static const char *ints_shape(gbuild *b, int n, const int64_t *v) { return gb_ints(b, n, v); }

static const char *axis_node(gbuild *b, const char *op, const char *const *ins, int64_t axis)
{
    const char *r;
    attr_int(gb_node(b, op, NULL, ins, 1, &r), "axis", axis);
    return r;
}

static const char *slice_last(gbuild *b, const char *x, int64_t from, int64_t to)
{
    return GB(b, "Slice", x, gb_ints(b, 1, (int64_t[]){from}), gb_ints(b, 1, (int64_t[]){to}),
              gb_ints(b, 1, (int64_t[]){-1}));
}

/* ------------------------------------------------------------ MatMulNBits */

typedef struct nb_case {
    int64_t m, k, n, block, bits;
    int zp;   /* 0 none, 1 packed uint8, 2 float */
    int bias, accuracy;
} nb_case;

/* values of `bits` bits packed low bits first, rows of `per` values padded to whole bytes */
static uint8_t *pack(const unsigned *v, int64_t rows, int64_t per, int64_t bits, int64_t *row_bytes)
{
    *row_bytes = (per * bits + 7) / 8;
    uint8_t *p = calloc((size_t)(rows * *row_bytes + 1), 1);
    ck_assert_ptr_nonnull(p);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t i = 0; i < per; i++)
            p[r * *row_bytes + i * bits / 8] |= (uint8_t)(v[r * per + i] << (i * bits % 8));
    return p;
}

/* A (per block of `block`, padded with zeros to kb * block) quantized to
 * int8 as ONNX Runtime's accuracy_level 4: scale max |a| / 127, a * (127 /
 * max) rounded to nearest even, times the scale. */
static const char *quantized_a(gbuild *b, const char *a, int64_t k, int64_t block)
{
    int64_t kb = (k + block - 1) / block;
    const char *pad = GB(b, "Pad", a, gb_ints(b, 6, (int64_t[]){0, 0, 0, 0, 0, kb * block - k}));
    const char *x = GB(b, "Reshape", pad, ints_shape(b, 4, (int64_t[]){0, 0, kb, block}));
    const char *amax;
    Onnx__NodeProto *r = gb_node(b, "ReduceMax", NULL, (const char *const[]){GB(b, "Abs", x), NULL}, 1, &amax);
    gb_attr_ints(r, "axes", 1, (int64_t[]){-1});
    const char *q = GB(b, "Round", GB(b, "Mul", x, GB(b, "Div", gb_float(b, 127.0f), amax)));
    const char *y = GB(b, "Mul", q, GB(b, "Div", amax, gb_float(b, 127.0f)));
    return slice_last(b, GB(b, "Reshape", y, ints_shape(b, 3, (int64_t[]){0, 0, kb * block})), 0, k);
}

static void run_nbits(const nb_case *c, unsigned seed)
{
    gbuild gb, *b = &gb;
    gb_init(b, seed);
    int64_t kb = (c->k + c->block - 1) / c->block, nk = c->n * kb, full = kb * c->block, zrow;
    unsigned *codes = malloc(sizeof *codes * (size_t)(c->n * full)), *zc = malloc(sizeof *zc * (size_t)nk);
    float *codes_f = malloc(sizeof *codes_f * (size_t)(c->n * full)), *zf = malloc(sizeof *zf * (size_t)nk);
    float *scale = malloc(sizeof *scale * (size_t)nk);
    ck_assert(codes && zc && codes_f && zf && scale);
    for (int64_t i = 0; i < c->n * full; i++)
        codes_f[i] = (float)(codes[i] = next(b, 1u << c->bits));
    for (int64_t i = 0; i < nk; i++) {
        zc[i] = next(b, 1u << c->bits);
        zf[i] = c->zp == 2 ? (float)next(b, 1000) / 64.0f : c->zp == 1 ? (float)zc[i] : (float)(1 << (c->bits - 1));
        scale[i] = 0.01f + (float)next(b, 1000) / 10000.0f;
    }
    const char *a = gb_input(b, "a", gb_rand(b, DIMS(2, c->m, c->k)), (const char *const[]){"batch", "seq", NULL});
    uint8_t *packed = pack(codes, c->n * kb, c->block, c->bits, &zrow);
    const char *bw = gb_const(b, mk(XF_DT_UINT8, DIMS(c->n, kb, zrow), packed));
    const char *sc = gb_const(b, mk(XF_DT_FLOAT, DIMS(nk), scale)), *zp = "", *bias = "";
    if (c->zp == 1) {
        uint8_t *zpk = pack(zc, c->n, kb, c->bits, &zrow);
        zp = gb_const(b, mk(XF_DT_UINT8, DIMS(c->n * zrow), zpk));
        free(zpk);
    } else if (c->zp == 2) {
        zp = gb_const(b, mk(XF_DT_FLOAT, DIMS(nk), zf));
    }
    xf_tensor *bt = c->bias ? gb_rand(b, DIMS(c->n)) : NULL;
    if (bt) {
        xf_tensor_retain(bt);
        bias = gb_const(b, bt);
    }
    const char *y = gb_matmul_nbits(b, (const char *const[]){a, bw, sc, zp, "", bias}, c->k, c->n, c->bits, c->block,
                                    c->accuracy);
    /* the weight dequantized in standard ops: (codes - zero point) * scale, (K, N) */
    const char *q = gb_const(b, mk(XF_DT_FLOAT, DIMS(c->n, kb, c->block), codes_f));
    const char *z = gb_const(b, mk(XF_DT_FLOAT, DIMS(c->n, kb, 1), zf));
    const char *s = gb_const(b, mk(XF_DT_FLOAT, DIMS(c->n, kb, 1), scale));
    const char *w = GB(b, "Reshape", GB(b, "Mul", GB(b, "Sub", q, z), s), ints_shape(b, 2, (int64_t[]){c->n, full}));
    const char *wt;
    gb_attr_ints(gb_node(b, "Transpose", NULL, (const char *const[]){slice_last(b, w, 0, c->k), NULL}, 1, &wt),
                 "perm", 2, (int64_t[]){1, 0});
    const char *ref = GB(b, "MatMul", c->accuracy == 4 && c->zp != 2 ? quantized_a(b, a, c->k, c->block) : a, wt);
    if (bt)
        ref = GB(b, "Add", ref, gb_const(b, bt));
    gb_pair(b, y, ref, FLOAT);
    char what[128];
    snprintf(what, sizeof what, "MatMulNBits M%lld K%lld N%lld block %lld bits %lld zp %d bias %d accuracy %d",
             (long long)c->m, (long long)c->k, (long long)c->n, (long long)c->block, (long long)c->bits, c->zp,
             c->bias, c->accuracy);
    gb_check(b, 2e-5, what);
    free(packed);
    free(codes);
    free(zc);
    free(codes_f);
    free(zf);
    free(scale);
}

/* Block sizes 16, 32 and 128; no, packed and float zero points; a bias;
 * odd N, K not a multiple of the block; 8 bits; accuracy_level 4; products
 * of many rows and of few. */
START_TEST(test_matmul_nbits)
{
    static const nb_case cases[] = {
        {3, 64, 8, 16, 4, 0, 0, 0},    {3, 100, 37, 16, 4, 1, 0, 0},  {1, 70, 9, 32, 4, 1, 1, 0},
        {4, 200, 13, 128, 4, 0, 1, 0}, {2, 96, 11, 32, 4, 2, 1, 0},   {2, 50, 7, 16, 8, 1, 0, 0},
        {3, 130, 5, 64, 8, 0, 1, 0},   {3, 100, 37, 32, 4, 1, 1, 4},  {1, 256, 16, 128, 4, 0, 0, 4},
        {2, 40, 6, 16, 8, 1, 0, 4},    {2, 96, 11, 32, 4, 2, 0, 4}, /* float zero points: A stays float */
        /* at most 4 rows (A is 2 x M x K): the cpu backend's packed path */
        {1, 100, 37, 32, 4, 1, 1, 4},  {2, 130, 9, 64, 4, 1, 0, 0},   {1, 256, 19, 128, 4, 0, 1, 0},
    };
    GB_RUN_CASES(cases, run_nbits, 31);
}
END_TEST

/* ---------------------------------------------------- GroupQueryAttention */

typedef struct gqa_case {
    int64_t b, s, n, nk, h;
    int64_t past;   /* past rows kept (-1: no past inputs) */
    int64_t buffer; /* first prompt in a past buffer of this many rows (0: none) */
    int rotary, packed;
    int64_t window;
    float softcap, scale;
    int smooth;
} gqa_case;

static xf_tensor *int32s(int64_t n, int32_t v)
{
    xf_tensor *t = xf_tensor_create(XF_DT_INT32, &(xf_shape){.ndim = 1, .dims = {n}});
    ck_assert_ptr_nonnull(t);
    for (int64_t i = 0; i < n; i++)
        ((int32_t *)t->data)[i] = v;
    return t;
}

static const char *perm(gbuild *b, const char *x, const int64_t *p)
{
    const char *r;
    gb_attr_ints(gb_node(b, "Transpose", NULL, (const char *const[]){x, NULL}, 1, &r), "perm", 4, p);
    return r;
}

/* (B, S, heads * H) -> (B, heads, S, H) */
static const char *heads_of(gbuild *b, const char *x, int64_t heads, int64_t h)
{
    return perm(b, GB(b, "Reshape", x, ints_shape(b, 4, (int64_t[]){0, 0, heads, h})), (int64_t[]){0, 2, 1, 3});
}

/* RotaryEmbedding's halves form with the rows of cos/sin at the positions */
static const char *rotate(gbuild *b, const char *x, const char *cosr, const char *sinr, int64_t h)
{
    const char *x1 = slice_last(b, x, 0, h / 2), *x2 = slice_last(b, x, h / 2, h);
    const char *half = axis_node(b, "Concat", (const char *const[]){GB(b, "Neg", x2), x1, NULL}, -1);
    return GB(b, "Add", GB(b, "Mul", x, cosr), GB(b, "Mul", half, sinr));
}

static void run_gqa(const gqa_case *c, unsigned seed)
{
    gbuild gb, *b = &gb;
    gb_init(b, seed);
    int64_t p = c->past > 0 ? c->past : 0, total = p + c->s, hd = c->h, g = c->n / c->nk;
    int64_t rows = c->buffer ? c->buffer : p; /* past inputs' length */
    const char *q, *k, *v, *pk = "", *pv = "";
    if (c->packed) {
        const char *qkv = gb_input(b, "qkv", gb_rand(b, DIMS(c->b, c->s, (c->n + 2 * c->nk) * hd)), NULL);
        const char *parts[3];
        Onnx__NodeProto *sp = gb_node(b, "Split", NULL,
                                      (const char *const[]){qkv, gb_ints(b, 3, (int64_t[]){c->n * hd, c->nk * hd,
                                                                                             c->nk * hd}),
                                                            NULL},
                                      3, parts);
        attr_int(sp, "axis", 2);
        q = qkv;
        k = parts[1];
        v = parts[2];
    } else {
        q = gb_input(b, "q", gb_rand(b, DIMS(c->b, c->s, c->n * hd)), NULL);
        k = gb_input(b, "k", gb_rand(b, DIMS(c->b, c->s, c->nk * hd)), NULL);
        v = gb_input(b, "v", gb_rand(b, DIMS(c->b, c->s, c->nk * hd)), NULL);
    }
    if (c->past >= 0) {
        pk = gb_input(b, "past_key", gb_rand(b, DIMS(c->b, c->nk, rows, hd)), NULL);
        pv = gb_input(b, "past_value", gb_rand(b, DIMS(c->b, c->nk, rows, hd)), NULL);
    }
    const char *seqlens = gb_input(b, "seqlens_k", int32s(c->b, (int32_t)(total - 1)), NULL);
    const char *tot = gb_const(b, int32s(1, (int32_t)total));
    const char *cosc = "", *sinc = "";
    int64_t m = total + 4;
    if (c->rotary) {
        cosc = gb_const(b, gb_rand(b, DIMS(m, hd / 2)));
        sinc = gb_const(b, gb_rand(b, DIMS(m, hd / 2)));
    }
    const char *outs[3];
    Onnx__NodeProto *nd = gb_node(b, "GroupQueryAttention", MS,
                                  (const char *const[]){q, c->packed ? "" : k, c->packed ? "" : v, pk, pv, seqlens,
                                                        tot, cosc, sinc, NULL},
                                  3, outs);
    attr_int(nd, "num_heads", c->n);
    attr_int(nd, "kv_num_heads", c->nk);
    if (c->rotary)
        attr_int(nd, "do_rotary", 1);
    if (c->window)
        attr_int(nd, "local_window_size", c->window);
    if (c->softcap > 0.0f)
        attr_float(nd, "softcap", c->softcap);
    if (c->scale != 0.0f)
        attr_float(nd, "scale", c->scale);
    if (c->smooth)
        attr_int(nd, "smooth_softmax", 1);
    /* the same in standard ops */
    if (c->packed)
        q = GB(b, "Slice", q, gb_ints(b, 1, (int64_t[]){0}), gb_ints(b, 1, (int64_t[]){c->n * hd}),
               gb_ints(b, 1, (int64_t[]){2}));
    const char *qh = heads_of(b, q, c->n, hd), *kh = heads_of(b, k, c->nk, hd), *vh = heads_of(b, v, c->nk, hd);
    if (c->rotary) {
        int64_t pos[64];
        for (int64_t i = 0; i < c->s; i++)
            pos[i] = p + i;
        const char *at = gb_ints(b, c->s, pos);
        const char *cr = GB(b, "Gather", cosc, at), *sr = GB(b, "Gather", sinc, at);
        cr = axis_node(b, "Concat", (const char *const[]){cr, cr, NULL}, -1);
        sr = axis_node(b, "Concat", (const char *const[]){sr, sr, NULL}, -1);
        qh = rotate(b, qh, cr, sr, hd);
        kh = rotate(b, kh, cr, sr, hd);
    }
    const char *kall = kh, *vall = vh;
    if (c->past > 0) {
        kall = axis_node(b, "Concat", (const char *const[]){pk, kh, NULL}, 2);
        vall = axis_node(b, "Concat", (const char *const[]){pv, vh, NULL}, 2);
    }
    const char *kpres = kall, *vpres = vall;
    if (c->buffer > total) { /* the rest of the buffer is zeros */
        const char *zeros = gb_const(b, xf_tensor_create(XF_DT_FLOAT, &(xf_shape){4, {c->b, c->nk, c->buffer - total, hd}}));
        kpres = axis_node(b, "Concat", (const char *const[]){kall, zeros, NULL}, 2);
        vpres = axis_node(b, "Concat", (const char *const[]){vall, zeros, NULL}, 2);
    }
    const int64_t rep[5] = {c->b, c->nk, g, total, hd}, merged[4] = {c->b, c->n, total, hd};
    const char *krep = GB(b, "Reshape",
                          GB(b, "Expand", GB(b, "Unsqueeze", kall, gb_ints(b, 1, (int64_t[]){2})), gb_ints(b, 5, rep)),
                          ints_shape(b, 4, merged));
    const char *vrep = GB(b, "Reshape",
                          GB(b, "Expand", GB(b, "Unsqueeze", vall, gb_ints(b, 1, (int64_t[]){2})), gb_ints(b, 5, rep)),
                          ints_shape(b, 4, merged));
    float scale = c->scale != 0.0f ? c->scale : 1.0f / sqrtf((float)hd);
    const char *sc = GB(b, "Mul", GB(b, "MatMul", qh, perm(b, krep, (int64_t[]){0, 1, 3, 2})), gb_float(b, scale));
    if (c->softcap > 0.0f)
        sc = GB(b, "Mul", GB(b, "Tanh", GB(b, "Div", sc, gb_float(b, c->softcap))), gb_float(b, c->softcap));
    uint8_t allow[64 * 64];
    for (int64_t i = 0; i < c->s; i++)
        for (int64_t j = 0; j < total; j++)
            allow[i * total + j] = j <= p + i && (c->window <= 0 || j >= p + i + 1 - c->window);
    const char *mask = gb_const(b, mk(XF_DT_BOOL, DIMS(c->s, total), allow));
    sc = GB(b, "Where", mask, sc, gb_float(b, -INFINITY));
    const char *prob;
    if (c->smooth) { /* an extra logit 0 in every row */
        const char *zero = gb_const(b, xf_tensor_create(XF_DT_FLOAT, &(xf_shape){4, {c->b, c->n, c->s, 1}}));
        prob = slice_last(b, axis_node(b, "Softmax", (const char *const[]){axis_node(b, "Concat", (const char *const[]){sc, zero, NULL}, -1), NULL}, -1), 0, total);
    } else {
        prob = axis_node(b, "Softmax", (const char *const[]){sc, NULL}, -1);
    }
    const char *ctx = perm(b, GB(b, "MatMul", prob, vrep), (int64_t[]){0, 2, 1, 3});
    gb_pair(b, outs[0], GB(b, "Reshape", ctx, ints_shape(b, 3, (int64_t[]){0, 0, c->n * hd})), FLOAT);
    gb_pair(b, outs[1], kpres, FLOAT);
    gb_pair(b, outs[2], vpres, FLOAT);
    char what[160];
    snprintf(what, sizeof what, "GroupQueryAttention B%lld S%lld N%lld/%lld H%lld past %lld buffer %lld rotary %d "
             "packed %d window %lld softcap %g scale %g smooth %d", (long long)c->b, (long long)c->s, (long long)c->n,
             (long long)c->nk, (long long)hd, (long long)c->past, (long long)c->buffer, c->rotary, c->packed,
             (long long)c->window, c->softcap, c->scale, c->smooth);
    gb_check(b, 1e-5, what);
}

/* The first prompt (no past inputs, or an empty buffer of max length),
 * token generation and a later prompt after past rows; with and without
 * rotary, packed QKV, a local window, softcap with scale, smooth softmax. */
START_TEST(test_gqa)
{
    static const gqa_case cases[] = {
        {2, 5, 4, 2, 8, -1, 0, 0, 0, 0, 0, 0, 0},   {2, 4, 2, 1, 8, -1, 0, 1, 0, 0, 0, 0, 0},
        {2, 3, 4, 2, 8, 0, 8, 1, 0, 0, 0, 0, 0},    {2, 1, 4, 2, 8, 6, 0, 0, 0, 0, 0, 0, 0},
        {2, 1, 4, 2, 8, 6, 0, 1, 0, 0, 0, 0, 0},    {2, 1, 4, 2, 8, 6, 0, 1, 1, 0, 0, 0, 0},
        {1, 3, 4, 2, 8, 4, 0, 1, 0, 0, 0, 0, 0},    {1, 6, 2, 1, 8, -1, 0, 0, 0, 2, 0, 0, 0},
        {1, 1, 2, 1, 8, 7, 0, 1, 0, 3, 0, 0, 0},    {2, 1, 4, 2, 8, 5, 0, 0, 0, 0, 2.0f, 0.3f, 0},
        {2, 4, 2, 2, 8, -1, 0, 0, 1, 0, 0, 0, 1},   {1, 2, 6, 3, 16, 3, 0, 1, 0, 0, 1.5f, 0, 1},
    };
    GB_RUN_CASES(cases, run_gqa, 51);
}
END_TEST

/* ------------------------------------------------------------ GatherBlockQuantized */

typedef struct gbq_case {
    int64_t g, rows, q, block, bits;
    int zp, i64;
    xf_dtype dt; /* int4 or uint4 elements; else (XF_DT_UNDEFINED) uint8 bytes packing bits-wide codes */
} gbq_case;

/* Data (G, rows, Q values) against Gather of the table dequantized in
 * standard ops (Sub, Mul per block, Reshape, Slice); indices include
 * negative ones.  uint8 data's default zero point is 2^(bits - 1), int4
 * and uint4 data's 0, and their rows need not start a byte. */
static void run_gbq(const gbq_case *c, unsigned seed)
{
    gbuild gb, *b = &gb;
    gb_init(b, seed);
    int64_t kb = (c->q + c->block - 1) / c->block, full = kb * c->block, lines = c->g * c->rows;
    int64_t row_bytes, zrow;
    unsigned *codes = calloc((size_t)(lines * full), sizeof *codes), *zc = malloc(sizeof *zc * (size_t)(lines * kb));
    float *codes_f = malloc(sizeof *codes_f * (size_t)(lines * full)), *zf = malloc(sizeof *zf * (size_t)(lines * kb));
    ck_assert(codes && zc && codes_f && zf);
    /* codes as stored (int4: two's complement nibbles), values in float */
    bool elems = c->dt != XF_DT_UNDEFINED;
    int sub = c->dt == XF_DT_INT4 ? 8 : 0;
    unsigned mask = (1u << c->bits) - 1u;
    for (int64_t l = 0; l < lines; l++)
        for (int64_t i = 0; i < full; i++) {
            int v = i < c->q ? (int)next(b, 1u << c->bits) - sub : 0;
            codes[l * full + i] = (unsigned)v & mask;
            codes_f[l * full + i] = (float)v;
        }
    for (int64_t i = 0; i < lines * kb; i++) {
        int v = c->zp ? (int)next(b, 1u << c->bits) - sub : elems ? 0 : 1 << (c->bits - 1);
        zc[i] = (unsigned)v & mask;
        zf[i] = (float)v;
    }
    unsigned *dense = malloc(sizeof *dense * (size_t)(lines * c->q));
    ck_assert_ptr_nonnull(dense);
    for (int64_t l = 0; l < lines; l++)
        memcpy(dense + l * c->q, codes + l * full, sizeof *dense * (size_t)c->q);
    /* int4 and uint4 elements packed one after another, rows included */
    uint8_t *packed = pack(dense, elems ? 1 : lines, elems ? lines * c->q : c->q, c->bits, &row_bytes);
    const char *data = elems ? gb_const(b, mk(c->dt, DIMS(c->g, c->rows, c->q), packed))
                             : gb_const(b, mk(XF_DT_UINT8, DIMS(c->g, c->rows, row_bytes), packed));
    xf_tensor *scales = gb_rand(b, DIMS(c->g, c->rows, kb));
    xf_tensor_retain(scales);
    const char *sc = gb_const(b, scales), *zp = "";
    if (c->zp) {
        uint8_t *zpk = pack(zc, elems ? 1 : lines, elems ? lines * kb : kb, c->bits, &zrow);
        zp = elems ? gb_const(b, mk(c->dt, DIMS(c->g, c->rows, kb), zpk))
                   : gb_const(b, mk(XF_DT_UINT8, DIMS(c->g, c->rows, zrow), zpk));
        free(zpk);
    }
    int64_t idx[6];
    for (int i = 0; i < 6; i++)
        idx[i] = (int64_t)next(b, (unsigned)(2 * c->g)) - c->g;
    xf_tensor *it = mk(XF_DT_INT64, DIMS(2, 3), idx);
    if (!c->i64) {
        int32_t i32[6];
        for (int i = 0; i < 6; i++)
            i32[i] = (int32_t)idx[i];
        xf_tensor_release(it);
        it = mk(XF_DT_INT32, DIMS(2, 3), i32);
    }
    const char *ids = gb_input(b, "ids", it, NULL), *y;
    Onnx__NodeProto *nd = gb_node(b, "GatherBlockQuantized", MS, (const char *const[]){data, ids, sc, zp, NULL}, 1, &y);
    attr_int(nd, "quantize_axis", 2);
    attr_int(nd, "block_size", c->block);
    attr_int(nd, "bits", c->bits);
    /* the table in standard ops, then Gather */
    const char *qf = gb_const(b, mk(XF_DT_FLOAT, DIMS(c->g, c->rows, kb, c->block), codes_f));
    const char *z = gb_const(b, mk(XF_DT_FLOAT, DIMS(c->g, c->rows, kb, 1), zf));
    const char *s = GB(b, "Reshape", gb_const(b, scales), gb_ints(b, 4, (int64_t[]){c->g, c->rows, kb, 1}));
    const char *table = GB(b, "Reshape", GB(b, "Mul", GB(b, "Sub", qf, z), s), gb_ints(b, 3, (int64_t[]){c->g, c->rows, full}));
    gb_pair(b, y, GB(b, "Gather", slice_last(b, table, 0, c->q), ids), FLOAT);
    char what[128];
    snprintf(what, sizeof what, "GatherBlockQuantized G%lld rows %lld Q%lld block %lld bits %lld zp %d data %s",
             (long long)c->g, (long long)c->rows, (long long)c->q, (long long)c->block, (long long)c->bits, c->zp,
             elems ? xf_dtype_name(c->dt) : "uint8");
    gb_check(b, 1e-6, what);
    free(packed);
    free(dense);
    free(codes);
    free(zc);
    free(codes_f);
    free(zf);
}

/* 4 and 8 bits, with and without zero points, Q not a multiple of the
 * block, int32 and int64 indices; int4 and uint4 data (as ONNX Runtime's
 * quantizer writes it), rows of an odd Q too. */
START_TEST(test_gather_block_quantized)
{
    static const gbq_case cases[] = {
        {7, 1, 64, 32, 4, 1, 1},  {5, 2, 70, 16, 4, 0, 0},  {6, 1, 96, 32, 8, 1, 1},
        {4, 3, 130, 128, 4, 1, 0}, {6, 1, 64, 32, 4, 1, 1, XF_DT_UINT4}, {5, 2, 45, 16, 4, 0, 0, XF_DT_INT4},
        {4, 1, 96, 32, 4, 1, 0, XF_DT_INT4}, {3, 3, 33, 16, 4, 0, 1, XF_DT_UINT4},
    };
    GB_RUN_CASES(cases, run_gbq, 91);
}
END_TEST

/* ------------------------------- MatMulIntegerToFloat, DynamicQuantizeMatMul */

typedef struct imf_case {
    int dynamic;       /* DynamicQuantizeMatMul (A float) */
    xf_dtype a, b;     /* 8-bit types (a: MatMulIntegerToFloat only) */
    int per_column;    /* b's scale and zero point per column */
    int a_zp, b_zp, bias;
    int64_t m, k, n;
} imf_case;

static xf_tensor *bytes_of(gbuild *b, xf_dtype t, int ndim, const int64_t *dims)
{
    xf_shape s = xf_shape_make(ndim, dims);
    xf_tensor *x = xf_tensor_create(t, &s);
    ck_assert_ptr_nonnull(x);
    for (int64_t i = 0; i < xf_shape_numel(&s); i++)
        ((uint8_t *)x->data)[i] = (uint8_t)next(b, 256);
    return x;
}

static const char *positive(gbuild *b, int64_t n)
{
    xf_tensor *t = gb_rand(b, DIMS(n));
    for (int64_t i = 0; i < n; i++)
        ((float *)t->data)[i] = 0.01f + 0.005f * (((float *)t->data)[i] + 1.0f);
    if (n == 1)
        t->shape.ndim = 0; /* one value: a scalar */
    return gb_const(b, t);
}

static void run_imf(const imf_case *c, unsigned seed)
{
    gbuild gb, *b = &gb;
    gb_init(b, seed);
    int64_t cols = c->per_column ? c->n : 1;
    const char *a = c->dynamic ? gb_input(b, "a", gb_rand(b, DIMS(2, c->m, c->k)), (const char *const[]){"batch", "seq", NULL})
                               : gb_input(b, "a", bytes_of(b, c->a, DIMS(2, c->m, c->k)), (const char *const[]){"batch", "seq", NULL});
    const char *w = gb_const(b, bytes_of(b, c->b, DIMS(c->k, c->n)));
    const char *a_sc = c->dynamic ? "" : positive(b, 1), *b_sc = positive(b, cols);
    const char *a_zp = c->a_zp ? gb_const(b, bytes_of(b, c->a, SCALAR)) : "";
    const char *b_zp = c->b_zp ? gb_const(b, c->per_column ? bytes_of(b, c->b, DIMS(c->n)) : bytes_of(b, c->b, SCALAR)) : "";
    const char *bias = c->bias ? gb_const(b, gb_rand(b, DIMS(c->n))) : "";
    const char *y;
    if (c->dynamic)
        gb_node(b, "DynamicQuantizeMatMul", MS, (const char *const[]){a, w, b_sc, b_zp, bias, NULL}, 1, &y);
    else
        gb_node(b, "MatMulIntegerToFloat", MS, (const char *const[]){a, w, a_sc, b_sc, a_zp, b_zp, bias, NULL}, 1, &y);
    /* the same in standard ops: the int32 product, cast, times a_scale * b_scale, plus the bias */
    if (c->dynamic) {
        const char *q[3];
        gb_node(b, "DynamicQuantizeLinear", NULL, (const char *const[]){a, NULL}, 3, q);
        a = q[0];
        a_sc = q[1];
        a_zp = q[2];
    }
    const char *sum = GB(b, "MatMulInteger", a, w, a_zp, b_zp), *f;
    attr_int(gb_node(b, "Cast", NULL, (const char *const[]){sum, NULL}, 1, &f), "to", FLOAT);
    const char *ref = GB(b, "Mul", f, GB(b, "Mul", a_sc, b_sc));
    if (c->bias)
        ref = GB(b, "Add", ref, bias);
    gb_pair(b, y, ref, FLOAT);
    char what[128];
    snprintf(what, sizeof what, "%s a %s b %s per column %d zp %d/%d bias %d", c->dynamic ? "DynamicQuantizeMatMul"
             : "MatMulIntegerToFloat", xf_dtype_name(c->a), xf_dtype_name(c->b), c->per_column, c->a_zp, c->b_zp,
             c->bias);
    gb_check(b, 1e-6, what);
}

/* uint8 and int8 operands; zero points and scales per tensor and per
 * column; with and without a bias. */
START_TEST(test_int_matmul_float)
{
    static const imf_case cases[] = {
        {0, XF_DT_UINT8, XF_DT_INT8, 0, 1, 0, 1, 3, 17, 5},  {0, XF_DT_UINT8, XF_DT_UINT8, 1, 1, 1, 0, 2, 32, 7},
        {0, XF_DT_INT8, XF_DT_INT8, 1, 0, 1, 1, 1, 9, 4},    {1, XF_DT_UINT8, XF_DT_INT8, 0, 0, 0, 1, 3, 24, 6},
        {1, XF_DT_UINT8, XF_DT_INT8, 1, 0, 1, 0, 2, 16, 5},  {1, XF_DT_UINT8, XF_DT_UINT8, 1, 0, 1, 1, 4, 40, 3},
    };
    GB_RUN_CASES(cases, run_imf, 71);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("contrib_llm");
    TCase *tc = tcase_create("llm");
    tcase_add_checked_fixture(tc, NULL, free_allocs);
    tcase_add_test(tc, test_matmul_nbits);
    tcase_add_test(tc, test_gqa);
    tcase_add_test(tc, test_int_matmul_float);
    tcase_add_test(tc, test_gather_block_quantized);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
