/* ONNX Runtime's com.microsoft.nchwc ops, replaced by standard ops at
 * import (proto/model_nchwc.c).  The fixtures in tests/nchwc/ are models
 * ONNX Runtime saved at ORT_ENABLE_ALL on a CPU with AVX-512F (blocks of
 * 16 channels), each with an input and ONNX Runtime's output
 * (make_nchwc.py): every NCHWc op and activation, ReorderInput padding 24
 * channels to 32 and reading NHWC, ReorderOutput slicing 32 channels to
 * 20 and writing NHWC, depthwise and grouped convolutions, one reading
 * NCHW input, Sum inputs, both Upsample modes, and the 5-D Reshapes of a
 * graph with symbolic dims.  The same graph reblocked to 8 channels runs
 * too; graphs that leave ONNX Runtime's forms are imported as written,
 * with a warning saying why. */
#include "backend_util.h"
#include "proto_util.h"
#include "xf_runtime.h"
#include "xf_test_util.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIXTURES XF_SOURCE_DIR "/tests/nchwc"

static Onnx__ModelProto *read_fixture(const char *name) { return unpack_fixture(FIXTURES, name); }

static int count_nchwc(const xf_model *m)
{
    int n = 0;
    for (int i = 0; i < m->graph->n_nodes; i++) {
        const xf_node *nd = &m->graph->nodes[i];
        n += nd->op == XF_OP_OPAQUE && nd->opaque->domain && !strcmp(nd->opaque->domain, "com.microsoft.nchwc");
    }
    return n;
}

/* Loads mp (feeding the inputs of fixture name), expecting every NCHWc node
 * replaced, and checks ONNX Runtime's outputs on both host backends. */
static void check_fixture(Onnx__ModelProto *mp, const char *name)
{
    xf_tensor *ins[8];
    xf_shape feeds[8];
    int n_in = fixture_inputs(FIXTURES, name, ins, 8);
    for (int i = 0; i < n_in; i++)
        feeds[i] = ins[i]->shape;
    xf_load_options opt = {.feed_shapes = feeds, .n_feed_shapes = n_in};
    xf_model *m = NULL;
    xf_error e;
    ck_assert_msg(load_proto(mp, &opt, &m, &e) == XF_OK, "%s", e.msg);
    ck_assert_int_eq(count_nchwc(m), 0);
    check_fixture_outputs(m, ins, FIXTURES, name, "cpu_ref");
    if (xf_bt_have_cpu())
        check_fixture_outputs(m, ins, FIXTURES, name, "cpu");
    for (int i = 0; i < n_in; i++)
        xf_tensor_release(ins[i]);
    xf_model_free(m);
}

START_TEST(test_nets)
{
    Onnx__ModelProto *mp = read_fixture("nets");
    check_fixture(mp, "nets");
    onnx__model_proto__free_unpacked(mp, NULL);
}
END_TEST

START_TEST(test_dynamic_dims)
{
    Onnx__ModelProto *mp = read_fixture("dyn");
    check_fixture(mp, "dyn");
    /* and with its nodes in reverse order, which ONNX allows */
    Onnx__GraphProto *g = mp->graph;
    for (size_t k = 0; k < g->n_node / 2; k++) {
        Onnx__NodeProto *t = g->node[k];
        g->node[k] = g->node[g->n_node - 1 - k];
        g->node[g->n_node - 1 - k] = t;
    }
    check_fixture(mp, "dyn");
    onnx__model_proto__free_unpacked(mp, NULL);
}
END_TEST

/* ---------------------------------------------------------------- blocks of 8 */

static bool in_domain(const Onnx__NodeProto *np, const char *domain)
{
    return !strcmp(np->domain ? np->domain : "", domain);
}

/* Replaces a string of an unpacked message (freed with it). */
static void set_str(char **field, const char *v)
{
    free(*field);
    *field = strdup(v);
}

/* The element of an OIHW filter (o_n x i_n x k_n) at position p of its
 * OIHWBiBo form in blocks of b. */
static int64_t oihw_index(int64_t p, int64_t i_n, int64_t k_n, int b)
{
    int64_t bo = p % b, bi = (p / b) % b, k = (p / b / b) % k_n, ib = p / b / b / k_n % (i_n / b);
    int64_t ob = p / b / b / k_n / (i_n / b);
    return ((ob * b + bo) * i_n + ib * b + bi) * k_n + k;
}

/* An OIHWBiBo filter in blocks of 16 rewritten in blocks of 8, as ONNX
 * Runtime writes it on a CPU without AVX-512F. */
static void reblock(Onnx__TensorProto *tp)
{
    ck_assert_int_eq(tp->n_dims, 4);
    int64_t i_n = tp->dims[1], k_n = tp->dims[2] * tp->dims[3], n = tp->dims[0] * i_n * k_n;
    ck_assert_uint_eq(tp->raw_data.len, sizeof(float) * (size_t)n);
    float *from16 = malloc(sizeof(float) * (size_t)n), *oihw = malloc(sizeof(float) * (size_t)n);
    memcpy(from16, tp->raw_data.data, tp->raw_data.len);
    for (int64_t p = 0; p < n; p++)
        oihw[oihw_index(p, i_n, k_n, 16)] = from16[p];
    float *to8 = (float *)tp->raw_data.data;
    for (int64_t p = 0; p < n; p++)
        to8[p] = oihw[oihw_index(p, i_n, k_n, 8)];
    free(from16);
    free(oihw);
}

START_TEST(test_blocks_of_8)
{
    Onnx__ModelProto *mp = read_fixture("dyn");
    for (size_t k = 0; k < mp->graph->n_node; k++) {
        Onnx__NodeProto *np = mp->graph->node[k];
        if (in_domain(np, "com.microsoft.nchwc") && !strcmp(np->op_type, "Conv"))
            reblock(find_initializer(mp, np->input[1]));
    }
    /* the Reshape to 16 channels' blocks: [0, 1, 0, 0, 16] -> [0, 2, 0, 0, 8] */
    int64_t *split = (int64_t *)find_initializer(mp, "Reshape")->raw_data.data;
    ck_assert(split[1] == 1 && split[4] == 16);
    split[1] = 2;
    split[4] = 8;
    check_fixture(mp, "dyn");
    onnx__model_proto__free_unpacked(mp, NULL);
}
END_TEST

/* ---------------------------------------------------------------- the block */

static int nchwc_after_load(const Onnx__ModelProto *mp)
{
    xf_model *m = NULL;
    xf_error e;
    capture_start();
    ck_assert_msg(load_proto(mp, NULL, &m, &e) == XF_OK, "%s", e.msg);
    int n = count_nchwc(m);
    xf_model_free(m);
    return n;
}

START_TEST(test_block_override)
{
    Onnx__ModelProto *mp = read_fixture("nets");
    setenv("XF_NCHWC_BLOCK", "8", 1); /* 24 channels padded to 32: not blocks of 8 */
    ck_assert_int_eq(nchwc_after_load(mp), 21);
    ck_assert_msg(strstr(captured, "XF_NCHWC_BLOCK=8 does not fit the model's channel counts"), "%s", captured);
    setenv("XF_NCHWC_BLOCK", "12", 1);
    ck_assert_int_eq(nchwc_after_load(mp), 21);
    ck_assert_msg(strstr(captured, "is neither 8 nor 16"), "%s", captured);
    setenv("XF_NCHWC_BLOCK", "16", 1);
    ck_assert_int_eq(nchwc_after_load(mp), 0);
    unsetenv("XF_NCHWC_BLOCK");
    onnx__model_proto__free_unpacked(mp, NULL);

    /* dims that fit both blocks, and no 5-D Reshape: the block is this
     * CPU's, with a warning naming the setting */
    mp = read_fixture("dyn");
    for (size_t k = 0; k < mp->graph->n_node; k++)
        if (!strcmp(mp->graph->node[k]->op_type, "Reshape")) {
            set_str(&mp->graph->node[k]->op_type, "Identity");
            free(mp->graph->node[k]->input[1]);
            mp->graph->node[k]->n_input = 1;
        }
    ck_assert_int_eq(nchwc_after_load(mp), 0);
    ck_assert_msg(strstr(captured, "does not show its block of channels") && strstr(captured, "XF_NCHWC_BLOCK="), "%s",
                  captured);
    setenv("XF_NCHWC_BLOCK", "8", 1);
    capture_start();
    ck_assert_int_eq(nchwc_after_load(mp), 0);
    ck_assert_ptr_null(strstr(captured, "does not show"));
    unsetenv("XF_NCHWC_BLOCK");
    onnx__model_proto__free_unpacked(mp, NULL);
}
END_TEST

/* ---------------------------------------------------------------- other forms */

/* fixture name changed by `change`, loaded: its NCHWc nodes stay as written,
 * with a warning holding why, and are written back. */
static void expect_kept(const char *name, void (*change)(Onnx__ModelProto *), const char *why)
{
    Onnx__ModelProto *mp = read_fixture(name);
    int n = 0;
    for (size_t k = 0; k < mp->graph->n_node; k++)
        n += in_domain(mp->graph->node[k], "com.microsoft.nchwc");
    change(mp);
    xf_model *m = NULL;
    xf_error e;
    capture_start();
    ck_assert_msg(load_proto(mp, NULL, &m, &e) == XF_OK, "%s", e.msg);
    ck_assert_int_eq(count_nchwc(m), n);
    ck_assert_msg(strstr(captured, "kept as written") && strstr(captured, why), "wanted '%s' in: %s", why, captured);
    uint8_t *buf;
    Onnx__ModelProto *saved = saved_proto(m, &buf);
    int written = 0;
    for (size_t k = 0; k < saved->graph->n_node; k++)
        written += in_domain(saved->graph->node[k], "com.microsoft.nchwc");
    ck_assert_int_eq(written, n);
    onnx__model_proto__free_unpacked(saved, NULL);
    free(buf);
    xf_model_free(m);
    onnx__model_proto__free_unpacked(mp, NULL);
}

static void filter_as_input(Onnx__ModelProto *mp)
{
    for (size_t k = 0; k < mp->graph->n_node; k++)
        if (!strcmp(mp->graph->node[k]->input[0], "reorder_token_7")) /* a Conv reading z's blocks */
            set_str(&mp->graph->node[k]->input[1], "x");
}

static void flatten_of_blocks(Onnx__ModelProto *mp)
{
    for (size_t k = 0; k < mp->graph->n_node; k++)
        if (!strcmp(mp->graph->node[k]->op_type, "Flatten"))
            set_str(&mp->graph->node[k]->input[0], "reorder_token_20"); /* GlobalAveragePool's NCHWc output */
}

static void filter_read_elsewhere(Onnx__ModelProto *mp)
{
    for (size_t k = 0; k < mp->graph->n_node; k++)
        if (!strcmp(mp->graph->node[k]->op_type, "Mul"))
            set_str(&mp->graph->node[k]->input[1], "reorder_token_26"); /* a Conv's filter */
}

static void blocks_as_output(Onnx__ModelProto *mp) { set_str(&mp->graph->output[0]->name, "reorder_token_24"); }

static void opset_10(Onnx__ModelProto *mp)
{
    for (size_t i = 0; i < mp->n_opset_import; i++)
        if (!mp->opset_import[i]->domain || !mp->opset_import[i]->domain[0])
            mp->opset_import[i]->version = 10;
}

static void unknown_activation(Onnx__ModelProto *mp)
{
    for (size_t k = 0; k < mp->graph->n_node; k++)
        for (size_t j = 0; j < mp->graph->node[k]->n_attribute; j++) {
            Onnx__AttributeProto *a = mp->graph->node[k]->attribute[j];
            if (!strcmp(a->name, "activation") && a->s.len == 4 && !memcmp(a->s.data, "Relu", 4))
                memcpy(a->s.data, "Selu", 4);
        }
}

START_TEST(test_kept_as_written)
{
    expect_kept("dyn", filter_as_input, "its filter 'x' is not an initializer");
    expect_kept("nets", flatten_of_blocks, "reads 'reorder_token_20', an NCHWc tensor, as no standard op may");
    expect_kept("nets", filter_read_elsewhere, "its filter 'reorder_token_26' is read by other nodes too");
    expect_kept("dyn", blocks_as_output, "graph output 'reorder_token_24' is an NCHWc tensor");
    expect_kept("nets", opset_10, "at opset 10, below 11");
    expect_kept("nets", unknown_activation, "activation 'Selu' (or its parameters) unknown");
}
END_TEST

/* The lowered model is written as standard ONNX that onnx.checker accepts. */
START_TEST(test_written_standard)
{
    Onnx__ModelProto *mp = read_fixture("nets");
    xf_model *m = NULL;
    xf_error e;
    ck_assert_msg(load_proto(mp, NULL, &m, &e) == XF_OK, "%s", e.msg);
    uint8_t *buf;
    Onnx__ModelProto *saved = saved_proto(m, &buf);
    for (size_t k = 0; k < saved->graph->n_node; k++)
        ck_assert_msg(!saved->graph->node[k]->domain || !saved->graph->node[k]->domain[0], "%s",
                      saved->graph->node[k]->domain);
    onnx__model_proto__free_unpacked(saved, NULL);
    free(buf);
    assert_saved_valid(m, "nchwc");
    xf_model_free(m);
    onnx__model_proto__free_unpacked(mp, NULL);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("nchwc");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_nets);
    tcase_add_test(tc, test_dynamic_dims);
    tcase_add_test(tc, test_blocks_of_8);
    tcase_add_test(tc, test_block_override);
    tcase_add_test(tc, test_kept_as_written);
    tcase_add_test(tc, test_written_standard);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
