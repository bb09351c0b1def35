/* com.microsoft EmbedLayerNormalization and RotaryEmbedding against the
 * same computation in standard ONNX ops (Gather, Add,
 * LayerNormalization, ReduceSum; Slice, Mul, Concat), on every host
 * backend, static and dynamic, with symbolic batch and sequence dims. */
#include "graph_build_util.h"
#include "kernel_case_util.h"
#include "xf_test_util.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#define MS "com.microsoft"
#define FLOAT ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT

static const char *const BS[] = {"batch", "seq", NULL, NULL, NULL};

static xf_tensor *ids(gbuild *b, xf_dtype t, int64_t nb, int64_t s, int64_t below)
{
    xf_tensor *x = xf_tensor_create(t, &(xf_shape){.ndim = 2, .dims = {nb, s}});
    ck_assert_ptr_nonnull(x);
    for (int64_t i = 0; i < nb * s; i++) {
        b->seed = b->seed * 1103515245u + 12345u;
        int64_t v = (int64_t)((b->seed >> 16) % (unsigned)below);
        if (t == XF_DT_INT32)
            ((int32_t *)x->data)[i] = (int32_t)v;
        else
            ((int64_t *)x->data)[i] = v;
    }
    return x;
}

static const char *axis_op(gbuild *b, const char *op, const char *const *ins, int64_t axis)
{
    const char *r;
    attr_int(gb_node(b, op, NULL, ins, 1, &r), "axis", axis);
    return r;
}

typedef struct eln_case {
    int64_t b, s, h;
    int segments, mask, positions, sum_out; /* positions: 0 none, 1 (B, S), 2 (1, S) */
    float epsilon;
} eln_case;

static void run_eln(const eln_case *c, unsigned seed)
{
    gbuild gb, *b = &gb;
    gb_init(b, seed);
    int64_t vocab = 30, npos = 12, nseg = 3;
    const char *in = gb_input(b, "ids", ids(b, XF_DT_INT32, c->b, c->s, vocab), BS);
    const char *seg = c->segments ? gb_input(b, "seg", ids(b, XF_DT_INT32, c->b, c->s, nseg), BS) : "";
    const char *word = gb_const(b, gb_rand(b, DIMS(vocab, c->h))), *pe = gb_const(b, gb_rand(b, DIMS(npos, c->h)));
    const char *se = c->segments ? gb_const(b, gb_rand(b, DIMS(nseg, c->h))) : "";
    const char *gamma = gb_const(b, gb_rand(b, DIMS(c->h))), *beta = gb_const(b, gb_rand(b, DIMS(c->h)));
    const char *mask = c->mask ? gb_input(b, "mask", ids(b, XF_DT_INT32, c->b, c->s, 2), BS) : "";
    const char *pos = c->positions ? gb_input(b, "pos", ids(b, XF_DT_INT32, c->positions == 1 ? c->b : 1, c->s, npos),
                                              (const char *const[]){c->positions == 1 ? "batch" : NULL, "seq"})
                                   : "";
    const char *outs[3];
    Onnx__NodeProto *n = gb_node(b, "EmbedLayerNormalization", MS,
                                 (const char *const[]){in, seg, word, pe, se, gamma, beta, mask, pos, NULL},
                                 c->sum_out ? 3 : 2, outs);
    if (c->epsilon != 0.0f)
        attr_float(n, "epsilon", c->epsilon);
    /* the same in standard ops */
    if (!c->positions) {
        int32_t *ar = malloc(sizeof *ar * (size_t)c->s);
        for (int64_t i = 0; i < c->s; i++)
            ar[i] = (int32_t)i;
        pos = gb_const(b, mk(XF_DT_INT32, 1, (int64_t[]){c->s}, ar));
        free(ar);
    }
    const char *sum = GB(b, "Add", GB(b, "Gather", word, in), GB(b, "Gather", pe, pos));
    if (c->segments)
        sum = GB(b, "Add", sum, GB(b, "Gather", se, seg));
    const char *ln;
    Onnx__NodeProto *lnn = gb_node(b, "LayerNormalization", NULL, (const char *const[]){sum, gamma, beta, NULL}, 1, &ln);
    attr_float(lnn, "epsilon", c->epsilon != 0.0f ? c->epsilon : 1e-12f);
    gb_pair(b, outs[0], ln, FLOAT);
    const char *counted = in; /* no mask: zeros */
    if (c->mask) {
        int32_t one = 1;
        const char *eq = GB(b, "Equal", mask, gb_const(b, mk(XF_DT_INT32, 0, NULL, &one)));
        Onnx__NodeProto *cast = gb_node(b, "Cast", NULL, (const char *const[]){eq, NULL}, 1, &counted);
        attr_int(cast, "to", ONNX__TENSOR_PROTO__DATA_TYPE__INT32);
    }
    const char *mi;
    Onnx__NodeProto *red = gb_node(b, "ReduceSum", NULL, (const char *const[]){counted, gb_ints(b, 1, (int64_t[]){1}), NULL},
                                   1, &mi);
    attr_int(red, "keepdims", 0);
    if (!c->mask)
        mi = GB(b, "Sub", mi, mi);
    gb_pair(b, outs[1], mi, ONNX__TENSOR_PROTO__DATA_TYPE__INT32);
    if (c->sum_out)
        gb_pair(b, outs[2], sum, FLOAT);
    char what[128];
    snprintf(what, sizeof what, "EmbedLayerNormalization B%lld S%lld H%lld seg %d mask %d pos %d", (long long)c->b,
             (long long)c->s, (long long)c->h, c->segments, c->mask, c->positions);
    gb_check(b, 1e-5, what);
}

/* With and without segments, mask, position_ids (per batch and shared),
 * the embedding_sum output and epsilon. */
START_TEST(test_embed_layer_norm)
{
    static const eln_case cases[] = {
        {2, 5, 8, 1, 1, 0, 0, 0},      {3, 4, 16, 0, 0, 0, 1, 1e-5f}, {2, 5, 8, 1, 1, 1, 1, 0},
        {2, 5, 8, 0, 1, 2, 0, 0},      {1, 9, 32, 1, 0, 0, 1, 1e-3f},
    };
    GB_RUN_CASES(cases, run_eln, 17);
}
END_TEST

typedef struct rot_case {
    int bnsh;
    int64_t n, h, rot;
    int interleaved, start; /* start: position_ids is one start position */
    int with_heads_attr;
} rot_case;

static const char *slice3(gbuild *b, const char *x, int64_t from, int64_t to, int64_t axis)
{
    return GB(b, "Slice", x, gb_ints(b, 1, &from), gb_ints(b, 1, &to), gb_ints(b, 1, &axis));
}

static void run_rotary(const rot_case *c, unsigned seed)
{
    gbuild gb, *b = &gb;
    gb_init(b, seed);
    int64_t nb = 2, s = 5, m = 16, rot = c->rot ? c->rot : c->h, half = rot / 2;
    const char *x = c->bnsh ? gb_input(b, "x", gb_rand(b, DIMS(nb, c->n, s, c->h)), (const char *const[]){"batch", NULL, "seq", NULL})
                            : gb_input(b, "x", gb_rand(b, DIMS(nb, s, c->n * c->h)), BS);
    xf_tensor *p = c->start ? mk(XF_DT_INT64, 1, (int64_t[]){1}, (int64_t[]){4}) : ids(b, XF_DT_INT64, nb, s, m);
    const char *pos = gb_input(b, "pos", p, c->start ? NULL : BS);
    const char *cosc = gb_const(b, gb_rand(b, DIMS(m, half))), *sinc = gb_const(b, gb_rand(b, DIMS(m, half)));
    const char *y;
    Onnx__NodeProto *n = gb_node(b, "RotaryEmbedding", MS, (const char *const[]){x, pos, cosc, sinc, NULL}, 1, &y);
    if (c->interleaved)
        attr_int(n, "interleaved", 1);
    if (c->rot)
        attr_int(n, "rotary_embedding_dim", c->rot);
    if (c->rot || c->with_heads_attr)
        attr_int(n, "num_heads", c->n);
    /* the same in standard ops, on (B, S, N, H) */
    const char *x4 = c->bnsh ? NULL : GB(b, "Reshape", x, gb_ints(b, 4, (int64_t[]){0, 0, c->n, c->h}));
    if (c->bnsh)
        gb_attr_ints(gb_node(b, "Transpose", NULL, (const char *const[]){x, NULL}, 1, &x4), "perm", 4,
                     (int64_t[]){0, 2, 1, 3});
    if (c->start) {
        int64_t *ar = malloc(sizeof *ar * (size_t)s);
        for (int64_t i = 0; i < s; i++)
            ar[i] = i;
        pos = GB(b, "Add", pos, gb_const(b, mk(XF_DT_INT64, 1, (int64_t[]){s}, ar)));
        free(ar);
    }
    const char *minus2 = gb_ints(b, 1, (int64_t[]){-2});
    const char *cs = GB(b, "Unsqueeze", GB(b, "Gather", cosc, pos), minus2);
    const char *sn = GB(b, "Unsqueeze", GB(b, "Gather", sinc, pos), minus2);
    const char *r;
    if (!c->interleaved) {
        const char *x1 = slice3(b, x4, 0, half, 3), *x2 = slice3(b, x4, half, rot, 3);
        const char *y1 = GB(b, "Sub", GB(b, "Mul", x1, cs), GB(b, "Mul", x2, sn));
        const char *y2 = GB(b, "Add", GB(b, "Mul", x2, cs), GB(b, "Mul", x1, sn));
        r = axis_op(b, "Concat", (const char *const[]){y1, y2, NULL}, 3);
    } else {
        const char *pairs = GB(b, "Reshape", slice3(b, x4, 0, rot, 3), gb_ints(b, 5, (int64_t[]){0, 0, 0, half, 2}));
        const char *e = GB(b, "Squeeze", slice3(b, pairs, 0, 1, 4), gb_ints(b, 1, (int64_t[]){4}));
        const char *o = GB(b, "Squeeze", slice3(b, pairs, 1, 2, 4), gb_ints(b, 1, (int64_t[]){4}));
        const char *ye = GB(b, "Sub", GB(b, "Mul", e, cs), GB(b, "Mul", o, sn));
        const char *yo = GB(b, "Add", GB(b, "Mul", o, cs), GB(b, "Mul", e, sn));
        const char *four = gb_ints(b, 1, (int64_t[]){4});
        r = axis_op(b, "Concat", (const char *const[]){GB(b, "Unsqueeze", ye, four), GB(b, "Unsqueeze", yo, four), NULL}, 4);
        r = GB(b, "Reshape", r, gb_ints(b, 4, (int64_t[]){0, 0, 0, rot}));
    }
    if (rot < c->h)
        r = axis_op(b, "Concat", (const char *const[]){r, slice3(b, x4, rot, c->h, 3), NULL}, 3);
    if (c->bnsh)
        gb_attr_ints(gb_node(b, "Transpose", NULL, (const char *const[]){r, NULL}, 1, &r), "perm", 4,
                     (int64_t[]){0, 2, 1, 3});
    else
        r = GB(b, "Reshape", r, gb_ints(b, 3, (int64_t[]){0, 0, -1}));
    gb_pair(b, y, r, FLOAT);
    char what[128];
    snprintf(what, sizeof what, "RotaryEmbedding bnsh %d N%lld H%lld rot %lld interleaved %d start %d", c->bnsh,
             (long long)c->n, (long long)c->h, (long long)c->rot, c->interleaved, c->start);
    gb_check(b, 1e-5, what);
}

/* Halves and interleaved pairs, (B, S, D) and (B, N, S, H) inputs, per
 * token positions and one start position, part of each head rotated. */
START_TEST(test_rotary)
{
    static const rot_case cases[] = {
        {0, 2, 8, 0, 0, 0, 0}, {0, 2, 8, 0, 1, 0, 1}, {0, 2, 8, 0, 0, 1, 0}, {1, 3, 8, 0, 0, 0, 0},
        {1, 3, 8, 0, 1, 1, 0}, {0, 2, 8, 4, 0, 0, 0}, {0, 2, 8, 4, 1, 0, 0}, {1, 2, 6, 2, 1, 0, 0},
    };
    GB_RUN_CASES(cases, run_rotary, 41);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("contrib_embed");
    TCase *tc = tcase_create("embed");
    tcase_add_checked_fixture(tc, NULL, free_allocs);
    tcase_add_test(tc, test_embed_layer_norm);
    tcase_add_test(tc, test_rotary);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
