/* The cpu backend's own paths for com.microsoft MatMulNBits,
 * MatMulIntegerToFloat and DynamicQuantizeMatMul against cpu_ref, static and
 * dynamic, on random shapes: MatMulNBits of 1 to 4 rows (the packed-weight
 * path) and of more (the int8 path at accuracy_level 4, sgemms on tiles of
 * the dequantized weight otherwise, several tiles too), K not a multiple of
 * the block, blocks of 16 to 128, uint8 or float zero points or none, a
 * g_idx (a bad one refused), a bias or none, 8 bits too (token steps on
 * VNNI); the int8
 * products of MatMulIntegerToFloat and DynamicQuantizeMatMul with uint8 and
 * int8 operands, B's scale and zero point per tensor or per column, A's
 * constant or fed at run time, which must match cpu_ref exactly.  ctest
 * runs the suite again under DNNL_MAX_CPU_ISA=AVX2, where MatMulNBits takes
 * the AVX2 kernels. */
#include "backend_util.h"
#include "graph_build_util.h"
#include "kernel_case_util.h"
#include "xf_test_util.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MS "com.microsoft"

/* Random bytes of type t (uint8 or int8) in a tensor of the given dims. */
static xf_tensor *random_bytes(xf_dtype t, int ndim, const int64_t *dims)
{
    xf_shape s = xf_shape_make(ndim, dims);
    xf_tensor *x = xf_tensor_create(t, &s);
    ck_assert_ptr_nonnull(x);
    for (int64_t i = 0; i < xf_shape_numel(&s); i++)
        ((uint8_t *)x->data)[i] = (uint8_t)xf_bt_rnd(0, 255);
    return x;
}

/* Small positive scales, n of them (one: a scalar). */
static xf_tensor *scales(int64_t n)
{
    xf_shape s = xf_shape_make(n == 1 ? 0 : 1, (int64_t[]){n});
    xf_tensor *x = xf_tensor_create(XF_DT_FLOAT, &s);
    ck_assert_ptr_nonnull(x);
    for (int64_t i = 0; i < n; i++)
        ((float *)x->data)[i] = 0.001f + (float)xf_bt_rnd(0, 1000) / 50000.0f;
    return x;
}

/* Loads the graph built in b (its outputs `outs`) and checks it on cpu
 * against cpu_ref, static and dynamic, with xf_bt_check_graph's random
 * inputs (b's feeds only give the inputs' shapes); atol < 0 is relative
 * to the largest expected element. */
static void check_on_cpu(gbuild *b, int n_outs, const char *const *outs, double atol, const char *what)
{
    for (int k = 0; k < n_outs; k++)
        PUSH(b->g->n_output, b->g->output, mk_vi(outs[k], ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, -1, NULL, NULL));
    Onnx__ModelProto *mp = mk_model(b->g, 17);
    add_opset(mp, MS, 1);
    xf_model *m;
    xf_error e;
    ck_assert_msg(load_proto(mp, NULL, &m, &e) == XF_OK, "%s: %s", what, e.msg);
    xf_bt_check_graph(m->graph, 17, "cpu", true, atol, 0.0, what);
    xf_model_free(m);
    for (int i = 0; i < b->n_feeds; i++)
        xf_tensor_release(b->feeds[i]);
}

/* ------------------------------------------------------------ MatMulNBits */

/* the zero points' and g_idx's forms beyond uint8 ones */
enum { NB_PLAIN, NB_FLOAT_ZP, NB_GIDX, NB_BAD_GIDX };

typedef struct nb_form {
    int64_t m, k, n, block, bits;
    bool zp, bias;
    int accuracy, extra;
} nb_form;

/* Float zero points (n * blocks values in [0, 16)), or a g_idx of K
 * blocks in [0, blocks) (one past the last at K - 1 when bad). */
static xf_tensor *nb_extra(const nb_form *f, int64_t blocks)
{
    bool fzp = f->extra == NB_FLOAT_ZP;
    xf_shape s = xf_shape_make(1, (int64_t[]){fzp ? f->n * blocks : f->k});
    xf_tensor *x = xf_tensor_create(fzp ? XF_DT_FLOAT : XF_DT_INT32, &s);
    ck_assert_ptr_nonnull(x);
    for (int64_t i = 0; i < xf_shape_numel(&s); i++) {
        if (fzp)
            ((float *)x->data)[i] = (float)xf_bt_rnd(0, 150) / 10.0f;
        else
            ((int32_t *)x->data)[i] = (int32_t)xf_bt_rnd(0, blocks - 1);
    }
    if (f->extra == NB_BAD_GIDX)
        ((int32_t *)x->data)[f->k - 1] = (int32_t)blocks;
    return x;
}

static void run_nbits(const nb_form *f)
{
    gbuild gb, *b = &gb;
    gb_init(b, 1);
    int64_t blocks = (f->k + f->block - 1) / f->block, blob = f->block * f->bits / 8;
    int64_t zrow = (blocks * f->bits + 7) / 8;
    const char *a = gb_input(b, "a", gb_rand(b, DIMS(1, f->m, f->k)), NULL);
    const char *w = gb_const(b, random_bytes(XF_DT_UINT8, DIMS(f->n, blocks, blob)));
    const char *sc = gb_const(b, scales(f->n * blocks));
    const char *zp = f->extra == NB_FLOAT_ZP ? gb_const(b, nb_extra(f, blocks))
                     : f->zp                 ? gb_const(b, random_bytes(XF_DT_UINT8, DIMS(f->n * zrow)))
                                             : "";
    const char *gidx = f->extra >= NB_GIDX ? gb_const(b, nb_extra(f, blocks)) : "";
    const char *bias = f->bias ? gb_const(b, gb_rand(b, DIMS(f->n))) : "";
    const char *y = gb_matmul_nbits(b, (const char *const[]){a, w, sc, zp, gidx, bias}, f->k, f->n, f->bits,
                                    f->block, f->accuracy);
    char what[192];
    snprintf(what, sizeof what, "MatMulNBits M%lld K%lld N%lld block %lld bits %lld zp %d bias %d accuracy %d form %d",
             (long long)f->m, (long long)f->k, (long long)f->n, (long long)f->block, (long long)f->bits, f->zp,
             f->bias, f->accuracy, f->extra);
    if (f->extra != NB_BAD_GIDX) {
        /* int32 block sums against cpu_ref's float sum of the same products */
        check_on_cpu(b, 1, &y, -2e-5, what);
        return;
    }
    /* a g_idx naming a block past the last: refused when the static
     * session prepares the node, before anything runs */
    PUSH(b->g->n_output, b->g->output, mk_vi(y, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, -1, NULL, NULL));
    Onnx__ModelProto *mp = mk_model(b->g, 17);
    add_opset(mp, MS, 1);
    xf_model *m;
    xf_session *sess = NULL;
    xf_error e;
    ck_assert_msg(load_proto(mp, NULL, &m, &e) == XF_OK, "%s: %s", what, e.msg);
    ck_assert_int_ne(xf_session_create(m->graph, 17, "cpu", NULL, &sess, &e), XF_OK);
    ck_assert_ptr_null(sess);
    ck_assert_msg(strstr(e.msg, "g_idx names a block out of range"), "%s: %s", what, e.msg);
    xf_model_free(m);
    for (int i = 0; i < b->n_feeds; i++)
        xf_tensor_release(b->feeds[i]);
}

/* 48 random forms: every block size, rows 1..4 and more, K off the block. */
START_TEST(test_nbits_random)
{
    static const int64_t blocks[4] = {16, 32, 64, 128};
    xf_bt_seed(7);
    for (int i = 0; i < 48; i++) {
        nb_form f = {.block = blocks[i % 4], .bits = i % 12 == 11 ? 8 : 4, .zp = i / 4 % 2, .bias = i / 8 % 2,
                     .accuracy = i / 3 % 2 ? 4 : 0};
        f.m = i % 3 == 0 ? xf_bt_rnd(1, 4) : xf_bt_rnd(5, 40);
        f.k = f.block * xf_bt_rnd(1, 6) - (i % 2 ? xf_bt_rnd(1, f.block - 1) : 0);
        f.n = xf_bt_rnd(1, 80);
        run_nbits(&f);
    }
}
END_TEST

/* Shapes of an LLM's layers: whole blocks, N past several tiles; token
 * steps with odd block counts. */
START_TEST(test_nbits_layers)
{
    static const nb_form forms[] = {
        {32, 768, 256, 32, 4, false, false, 4}, {32, 512, 200, 128, 4, true, true, 4},
        {7, 256, 129, 16, 4, true, false, 4},   {1, 768, 300, 32, 4, true, false, 4},
        {4, 640, 96, 64, 4, false, true, 4},    {12, 384, 100, 32, 4, true, true, 0},
        {1, 200, 45, 32, 4, true, true, 4},     {3, 90, 33, 32, 4, false, false, 4}, /* odd block counts */
        {2, 1000, 70, 128, 4, true, false, 4},  {1, 2048, 64, 32, 4, true, false, 4},
        /* the float products, dequantized a tile at a time: tiles of 64
         * columns at K 4091 (a partial last one), of 48 at K 5000 */
        {9, 4091, 150, 32, 4, true, true, 0},   {3, 4096, 70, 16, 4, false, false, 0},
        {6, 5000, 70, 64, 8, true, false, 0},   {5, 300, 40, 32, 4, false, true, 0, NB_FLOAT_ZP},
        {17, 200, 33, 16, 4, true, false, 0, NB_GIDX}, {2, 100, 20, 32, 8, false, true, 4, NB_GIDX},
        {8, 4096, 90, 32, 4, true, true, 0, NB_GIDX},  {5, 64, 8, 16, 4, false, false, 0, NB_BAD_GIDX},
        /* token steps of 8-bit weights at accuracy_level 4 (VNNI: the
         * codes as they are), K off the block, N past a pair of tiles */
        {1, 512, 100, 32, 8, true, true, 4},   {3, 300, 40, 64, 8, false, false, 4},
        {4, 250, 33, 16, 8, true, false, 4},   {2, 1000, 70, 128, 8, false, true, 4},
        /* and at accuracy_level 0 (AVX-512: the packed loop over the codes) */
        {2, 512, 70, 32, 8, true, true, 0},    {2, 300, 40, 64, 8, false, false, 0},
        {1, 96, 20, 32, 8, true, false, 0},
    };
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++)
        run_nbits(&forms[i]);
}
END_TEST

/* A dynamic session whose MatMulNBits nodes are prepared again as the
 * rows change (prompts of several lengths, token steps, a prompt again):
 * each run's outputs are cpu_ref's.  Two nodes read one weight (its
 * repacked forms kept once by the session), at accuracy_level 4 (the
 * int8 prompt path, the 4-bit token path) and at 0. */
START_TEST(test_nbits_dynamic_rows)
{
    enum { K = 256, N = 48, BLOCK = 32, BLOCKS = K / BLOCK };
    for (int accuracy = 0; accuracy <= 4; accuracy += 4) {
        gbuild gb, *b = &gb;
        gb_init(b, 5);
        const char *a = gb_input(b, "a", gb_rand(b, DIMS(3, K)), NULL);
        const char *w = gb_const(b, random_bytes(XF_DT_UINT8, DIMS(N, BLOCKS, BLOCK / 2)));
        const char *sc = gb_const(b, scales(N * BLOCKS));
        const char *zp = gb_const(b, random_bytes(XF_DT_UINT8, DIMS(N * BLOCKS / 2)));
        const char *y1 = gb_matmul_nbits(b, (const char *const[]){a, w, sc, zp, "", ""}, K, N, 4, BLOCK, accuracy);
        const char *y2 = gb_matmul_nbits(b, (const char *const[]){a, w, sc, zp, "", ""}, K, N, 4, BLOCK, accuracy);
        const char *outs[2] = {y1, y2};
        for (int k = 0; k < 2; k++)
            PUSH(b->g->n_output, b->g->output, mk_vi(outs[k], ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, -1, NULL, NULL));
        Onnx__ModelProto *mp = mk_model(b->g, 17);
        add_opset(mp, MS, 1);
        xf_model *m;
        xf_error e;
        ck_assert_msg(load_proto(mp, NULL, &m, &e) == XF_OK, "%s", e.msg);
        /* the rows known only at run time */
        xf_graph *g = m->graph;
        g->values[g->inputs[0]].shape.dims[0] = -1;
        for (int k = 0; k < g->n_outputs; k++)
            g->values[g->outputs[k]].shape.ndim = -1;
        xf_session *cpu, *ref;
        xf_session_options dyn = {.force_dynamic = true};
        ck_assert_msg(xf_session_create(m->graph, 17, "cpu", &dyn, &cpu, &e) == XF_OK, "%s", e.msg);
        ck_assert_msg(xf_session_create(m->graph, 17, "cpu_ref", &dyn, &ref, &e) == XF_OK, "%s", e.msg);
        static const int64_t rows[] = {9, 17, 1, 1, 3, 9, 2, 30};
        for (size_t r = 0; r < sizeof rows / sizeof *rows; r++) {
            xf_shape shape = xf_shape_make(2, (int64_t[]){rows[r], K});
            xf_tensor *x = xf_tensor_random(XF_DT_FLOAT, &shape, 40 + r), *got[2] = {0}, *want[2] = {0};
            ck_assert_msg(xf_session_run(cpu, &x, got, &e) == XF_OK, "%s", e.msg);
            ck_assert_msg(xf_session_run(ref, &x, want, &e) == XF_OK, "%s", e.msg);
            for (int k = 0; k < 2; k++) {
                bool ok;
                double worst;
                ck_assert_int_eq(xf_tensor_compare(got[k], want[k], 1e-4, 1e-4, &worst, NULL, &ok, &e), XF_OK);
                ck_assert_msg(ok, "accuracy %d, %lld rows, output %d: off by %g", accuracy, (long long)rows[r], k,
                              worst);
                xf_tensor_release(got[k]);
                xf_tensor_release(want[k]);
            }
            xf_tensor_release(x);
        }
        xf_session_free(cpu);
        xf_session_free(ref);
        xf_model_free(m);
        for (int i = 0; i < b->n_feeds; i++)
            xf_tensor_release(b->feeds[i]);
    }
}
END_TEST

/* ------------------------------- MatMulIntegerToFloat, DynamicQuantizeMatMul */

typedef struct imf_form {
    bool dynamic, a_fed; /* DynamicQuantizeMatMul; A's scale and zero point graph inputs */
    xf_dtype a, b;
    bool per_column, a_zp, b_zp, bias;
    int64_t m, k, n;
} imf_form;

static void run_imf(const imf_form *f)
{
    gbuild gb, *b = &gb;
    gb_init(b, 1);
    xf_tensor *at = f->dynamic ? gb_rand(b, DIMS(2, f->m, f->k)) : random_bytes(f->a, DIMS(2, f->m, f->k));
    const char *a = gb_input(b, "a", at, NULL), *a_sc = "", *a_zp = "";
    if (!f->dynamic && f->a_fed) {
        a_sc = gb_input(b, "a_scale", scales(1), NULL);
        a_zp = f->a_zp ? gb_input(b, "a_zp", random_bytes(f->a, 0, NULL), NULL) : "";
    } else if (!f->dynamic) {
        a_sc = gb_const(b, scales(1));
        a_zp = f->a_zp ? gb_const(b, random_bytes(f->a, 0, NULL)) : "";
    }
    int64_t cols = f->per_column ? f->n : 1;
    const char *w = gb_const(b, random_bytes(f->b, DIMS(f->k, f->n))), *b_sc = gb_const(b, scales(cols));
    const char *b_zp = !f->b_zp ? "" : gb_const(b, f->per_column ? random_bytes(f->b, DIMS(f->n)) : random_bytes(f->b, 0, NULL));
    const char *bias = f->bias ? gb_const(b, gb_rand(b, DIMS(f->n))) : "";
    const char *y;
    if (f->dynamic)
        gb_node(b, "DynamicQuantizeMatMul", MS, (const char *const[]){a, w, b_sc, b_zp, bias, NULL}, 1, &y);
    else
        gb_node(b, "MatMulIntegerToFloat", MS, (const char *const[]){a, w, a_sc, b_sc, a_zp, b_zp, bias, NULL}, 1,
                &y);
    char what[192];
    snprintf(what, sizeof what, "%s a %s%s b %s per column %d zp %d/%d bias %d M%lld K%lld N%lld",
             f->dynamic ? "DynamicQuantizeMatMul" : "MatMulIntegerToFloat", xf_dtype_name(f->a),
             f->a_fed ? " (fed scale)" : "", xf_dtype_name(f->b), f->per_column, f->a_zp, f->b_zp, f->bias,
             (long long)f->m, (long long)f->k, (long long)f->n);
    /* the same int32 sums, scaled by the same float expression */
    check_on_cpu(b, 1, &y, 0.0, what);
}

/* 40 random forms over both ops, both 8-bit types of A and B, per-tensor
 * and per-column B, zero points, bias, A's parameters constant or fed. */
START_TEST(test_int_matmul_float_random)
{
    xf_bt_seed(11);
    for (int i = 0; i < 40; i++) {
        imf_form f = {.dynamic = i % 4 == 3, .a_fed = i % 4 == 1, .a = i % 8 < 4 ? XF_DT_UINT8 : XF_DT_INT8,
                      .b = i % 16 < 8 ? XF_DT_INT8 : XF_DT_UINT8, .per_column = i % 3 == 0, .a_zp = i % 5 != 0,
                      .b_zp = i % 7 != 0, .bias = i % 2 == 0};
        if (f.dynamic)
            f.a = XF_DT_UINT8;
        f.m = xf_bt_rnd(1, 40);
        f.k = xf_bt_rnd(1, 300);
        f.n = xf_bt_rnd(1, 70);
        run_imf(&f);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("contrib_llm_cpu");
    TCase *tc = tcase_create("cpu");
    tcase_add_checked_fixture(tc, NULL, free_allocs);
    tcase_add_test(tc, test_nbits_random);
    tcase_add_test(tc, test_nbits_layers);
    tcase_add_test(tc, test_nbits_dynamic_rows);
    tcase_add_test(tc, test_int_matmul_float_random);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
