/* The model zoo: every model builds at its benchmark size with the layer
 * structure of its published architecture, writes the same bytes every
 * time, passes onnx.checker, and runs on cpu_ref (at a reduced input size
 * for the large models, which take tens of seconds at full size there). */
#include "xf_proto.h"
#include "xf_runtime.h"
#include "xf_test_util.h"
#include "zoo.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What each model must be: the run size, the output shape at that size,
 * and counts of characteristic ops taken from the architectures' papers. */
typedef struct expected {
    const char *name;
    int run_size;        /* input size for the cpu_ref run */
    int out_ndim;
    int64_t out_dims[3]; /* batch 1, at run_size */
    int convs, matmuls, depthwise_convs, layer_norms, erfs;
} expected;

static const expected models[] = {
    {"inception-block", 28, 4, {1, 64, 28}, 8, 0, 0, 0, 0},
    /* 49 convolutions on the main path plus 4 projection shortcuts */
    {"resnet50", 32, 2, {1, 1000}, 53, 0, 0, 0, 0},
    {"resnext50", 32, 2, {1, 1000}, 53, 0, 0, 0, 0},
    /* 15 normal cells (2 squeezes + 5 separable pairs) + 3 reduction cells
     * (2 squeezes + 5 separable pairs) + the stem */
    {"nasnet-a", 32, 2, {1, 1000}, 15 * 12 + 3 * 12 + 1, 0, 15 * 5 + 3 * 5, 0, 0},
    /* 8 gates x 2 matmuls per step */
    {"nasrnn", 5, 2, {1, 512}, 0, 5 * 16, 0, 0, 0},
    /* per layer: q, k, v, output, 2 feed-forward, 2 attention products */
    {"bert", 4, 3, {1, 4, 1024}, 0, 8 * 8, 0, 8 * 2, 8},
    /* torchvision's 94 BasicConv2d layers */
    {"inception-v3", 75, 2, {1, 1000}, 94, 0, 0, 0, 0},
    /* 1 + 8 fire modules x 3 + the classifier */
    {"squeezenet", 64, 2, {1, 1000}, 26, 0, 0, 0, 0},
};
enum { N_MODELS = sizeof models / sizeof models[0] };

static const expected *find_expected(const char *name)
{
    for (int i = 0; i < N_MODELS; i++)
        if (!strcmp(models[i].name, name))
            return &models[i];
    return NULL;
}

START_TEST(test_every_zoo_model_is_covered)
{
    int n = 0;
    for (const xf_zoo_entry *e = xf_zoo_list(); e->name; e++, n++)
        ck_assert_msg(find_expected(e->name), "zoo model '%s' has no entry in test_zoo.c", e->name);
    ck_assert_int_eq(n, N_MODELS);
}
END_TEST

static int count_depthwise(const xf_graph *g)
{
    int n = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const xf_node *nd = &g->nodes[i];
        if (nd->op == XF_OP_CONV && nd->attrs.group > 1 &&
            nd->attrs.group == g->values[nd->inputs[0]].shape.dims[1])
            n++;
    }
    return n;
}

/* Full size: structure, bytes reproducible, onnx.checker. */
START_TEST(test_model_file)
{
    const expected *x = &models[_i];
    xf_error err;
    xf_model *m = NULL;
    ck_assert_msg(xf_zoo_build(x->name, 0, &m, &err) == XF_OK, "%s: %s", x->name, err.msg);
    ck_assert_int_eq(xf_graph_validate(m->graph, &err), XF_OK);
    ck_assert_int_eq(xf_model_opset(m), 17);
    int counts[XF_OP_COUNT + 1];
    xf_graph_count_ops(m->graph, counts);
    ck_assert_int_eq(counts[XF_OP_CONV], x->convs);
    ck_assert_int_eq(counts[XF_OP_MATMUL], x->matmuls);
    ck_assert_int_eq(counts[XF_OP_LAYER_NORM], x->layer_norms);
    ck_assert_int_eq(counts[XF_OP_ERF], x->erfs);
    ck_assert_int_eq(count_depthwise(m->graph), x->depthwise_convs);
    for (int k = 0; k < m->graph->n_outputs; k++)
        ck_assert_int_gt(m->graph->values[m->graph->outputs[k]].shape.ndim, 0);

    uint8_t *first = NULL, *second = NULL;
    size_t first_len = 0, second_len = 0;
    ck_assert_int_eq(xf_model_save_buffer(m, &first, &first_len, &err), XF_OK);
    xf_model_free(m);
    ck_assert_msg(xf_zoo_build(x->name, 0, &m, &err) == XF_OK, "%s: %s", x->name, err.msg);
    ck_assert_int_eq(xf_model_save_buffer(m, &second, &second_len, &err), XF_OK);
    ck_assert_msg(first_len == second_len && memcmp(first, second, first_len) == 0,
                  "%s: two builds differ", x->name);
    free(first);
    free(second);

    const char *dir = xf_test_tmpdir("zoo-file");
    ck_assert_ptr_nonnull(dir);
    char path[4200], cmd[8600], *out = NULL;
    snprintf(path, sizeof path, "%s/%s.onnx", dir, x->name);
    ck_assert_msg(xf_model_save(m, path, NULL, &err) == XF_OK, "%s", err.msg);
    xf_model_free(m);
    snprintf(cmd, sizeof cmd, XF_PYTHON " %s/tests/onnx_check.py %s", XF_SOURCE_DIR, path);
    int rc = xf_test_run(cmd, &out);
    ck_assert_msg(rc == 0 && out && strstr(out, "checked 1, failed 0"), "%s: onnx.checker: %s", x->name,
                  out ? out : "(no output)");
    free(out);
    remove(path);
}
END_TEST

/* Reduced size, batch 1: runs on cpu_ref with finite, varied outputs. */
START_TEST(test_model_runs)
{
    const expected *x = &models[_i];
    xf_error err;
    xf_model *m = NULL;
    ck_assert_msg(xf_zoo_build_sized(x->name, 1, x->run_size, &m, &err) == XF_OK, "%s: %s", x->name,
                  err.msg);
    const xf_graph *g = m->graph;
    xf_session *s = NULL;
    ck_assert_msg(xf_session_create(g, xf_model_opset(m), "cpu_ref", NULL, &s, &err) == XF_OK, "%s: %s",
                  x->name, err.msg);
    xf_tensor **in = calloc((size_t)g->n_inputs, sizeof *in);
    ck_assert_ptr_nonnull(in);
    for (int i = 0; i < g->n_inputs; i++) {
        const xf_value *v = &g->values[g->inputs[i]];
        in[i] = xf_tensor_random(v->dtype, &v->shape, 100 + (uint64_t)i);
        ck_assert_ptr_nonnull(in[i]);
    }
    ck_assert_int_eq(g->n_outputs, 1);
    xf_tensor *out = NULL;
    ck_assert_msg(xf_session_run(s, in, &out, &err) == XF_OK, "%s: %s", x->name, err.msg);

    ck_assert_int_eq(out->dtype, XF_DT_FLOAT);
    ck_assert_int_eq(out->shape.ndim, x->out_ndim);
    for (int d = 0; d < x->out_ndim && d < 3; d++)
        ck_assert_int_eq(out->shape.dims[d], x->out_dims[d]);
    const float *p = out->data;
    int64_t n = xf_tensor_numel(out);
    int distinct = 0;
    for (int64_t i = 0; i < n; i++) {
        ck_assert_msg(isfinite(p[i]), "%s: output element %lld is %g", x->name, (long long)i, p[i]);
        distinct += i > 0 && p[i] != p[0];
    }
    ck_assert_msg(distinct > n / 10, "%s: output is nearly constant (%d of %lld differ from the first)",
                  x->name, distinct, (long long)n);

    xf_tensor_release(out);
    for (int i = 0; i < g->n_inputs; i++)
        xf_tensor_release(in[i]);
    free(in);
    xf_session_free(s);
    xf_model_free(m);
}
END_TEST

START_TEST(test_sizes_and_errors)
{
    xf_error err;
    xf_model *m = NULL;
    ck_assert_int_eq(xf_zoo_build("no-such-model", 1, &m, &err), XF_ERR_INVALID);
    ck_assert_ptr_null(m);
    ck_assert_ptr_nonnull(strstr(err.msg, "no-such-model"));
    /* The default batch is the benchmark's: BERT runs 16 sequences of 64. */
    ck_assert_int_eq(xf_zoo_build("bert", 0, &m, &err), XF_OK);
    const xf_shape *s = &m->graph->values[m->graph->inputs[0]].shape;
    ck_assert_int_eq(s->dims[0], 16);
    ck_assert_int_eq(s->dims[1], 64);
    ck_assert_int_eq(s->dims[2], 1024);
    xf_model_free(m);
    /* NasRNN takes one input per step after the initial state. */
    ck_assert_int_eq(xf_zoo_build_sized("nasrnn", 2, 3, &m, &err), XF_OK);
    ck_assert_int_eq(m->graph->n_inputs, 4);
    ck_assert_int_eq(m->graph->values[m->graph->inputs[3]].shape.dims[0], 2);
    xf_model_free(m);
    /* An image too small for the network's reductions is refused, not built. */
    ck_assert_int_ne(xf_zoo_build_sized("inception-v3", 1, 32, &m, &err), XF_OK);
    ck_assert_ptr_null(m);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("zoo");
    TCase *tc = tcase_create("registry");
    tcase_add_test(tc, test_every_zoo_model_is_covered);
    tcase_add_test(tc, test_sizes_and_errors);
    suite_add_tcase(s, tc);
    TCase *files = tcase_create("files");
    tcase_set_timeout(files, 600);
    tcase_add_loop_test(files, test_model_file, 0, N_MODELS);
    suite_add_tcase(s, files);
    TCase *runs = tcase_create("runs");
    tcase_set_timeout(runs, 600);
    tcase_add_loop_test(runs, test_model_runs, 0, N_MODELS);
    suite_add_tcase(s, runs);
    return xf_test_run_suite(s);
}
