/* Sizes for symbolic dims (--dim NAME=N): import binds the named dim to the
 * size without fixing it, and xflowc keeps dims that the model relates
 * (a KV cache's total = past + seq) symbolic, checking them at sizes that
 * still fit together; xflow-run sizes them from the input files given. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto_util.h"
#include "xf_test_util.h"

#define NAMES(...) ((const char *[]){__VA_ARGS__, NULL})

/* y = Concat(Concat(past, new, axis 1), Unsqueeze(mask, -1), axis 2):
 * past [B, P, 4], new [B, S, 4], mask [B, T] with T = P + S. */
static Onnx__ModelProto *cache_model(void)
{
    static const int64_t minus1 = -1, one[] = {1}, d3[] = {-1, -1, 4}, d2[] = {-1, -1};
    Onnx__GraphProto *g = mk_graph("cache");
    PUSH(g->n_input, g->input, mk_vi("past", XF_DT_FLOAT, 3, d3, NAMES("B", "P", NULL)));
    PUSH(g->n_input, g->input, mk_vi("new", XF_DT_FLOAT, 3, d3, NAMES("B", "S", NULL)));
    PUSH(g->n_input, g->input, mk_vi("mask", XF_DT_FLOAT, 2, d2, NAMES("B", "T")));
    PUSH(g->n_initializer, g->initializer, mk_raw("last", XF_DT_INT64, 1, one, &minus1, 8));
    Onnx__NodeProto *cat = mk_node("Concat", "cat", NAMES("past", "new"), NAMES("kv"));
    attr_int(cat, "axis", 1);
    PUSH(g->n_node, g->node, cat);
    PUSH(g->n_node, g->node, mk_node("Unsqueeze", "unsq", NAMES("mask", "last"), NAMES("m3")));
    Onnx__NodeProto *cat2 = mk_node("Concat", "cat2", NAMES("kv", "m3"), NAMES("y"));
    attr_int(cat2, "axis", 2);
    PUSH(g->n_node, g->node, cat2);
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, -1, NULL, NULL));
    return mk_model(g, 13);
}

START_TEST(test_dim_sizes_bind_without_fixing)
{
    xf_dim_size sizes[] = {{"P", 5}, {"S", 3}, {"T", 8}};
    xf_load_options lo = {.dim_sizes = sizes, .n_dim_sizes = 3};
    xf_model *m;
    xf_error e;
    capture_start();
    ck_assert_msg(load_proto(cache_model(), &lo, &m, &e) == XF_OK, "%s", e.msg);
    /* only B, which no size names, is guessed (and warned about) */
    ck_assert_msg(strstr(captured, "dim 0 ('B')") && !strstr(captured, "'P'") && !strstr(captured, "'T'"), "%s",
                  captured);
    const xf_graph *g = m->graph;
    ck_assert_int_eq(g->values[g->inputs[0]].shape.dims[1], 5);
    ck_assert_int_eq(g->values[g->inputs[1]].shape.dims[1], 3);
    ck_assert_int_eq(g->values[g->inputs[2]].shape.dims[1], 8);
    ck_assert_int_eq(g->values[g->outputs[0]].shape.dims[1], 8);
    /* every named dim stays symbolic: B three times, P, S, T */
    ck_assert_int_eq(m->n_symbolic, 6);
    xf_model_free(m);

    /* a name no input dim has, and a size an override contradicts */
    xf_dim_size wrong[] = {{"Q", 2}};
    lo = (xf_load_options){.dim_sizes = wrong, .n_dim_sizes = 1};
    ck_assert_int_ne(load_proto(cache_model(), &lo, &m, &e), XF_OK);
    ck_assert_msg(strstr(e.msg, "--dim names 'Q', which no graph input's dims are called"), "%s", e.msg);
    xf_input_shape fix[] = {{"mask", {2, {1, 8}}}};
    xf_dim_size other[] = {{"T", 9}};
    lo = (xf_load_options){.input_shapes = fix, .n_input_shapes = 1, .dim_sizes = other, .n_dim_sizes = 1};
    ck_assert_int_ne(load_proto(cache_model(), &lo, &m, &e), XF_OK);
    ck_assert_msg(strstr(e.msg, "--dim T=9 contradicts --input-shape, which gives it 8"), "%s", e.msg);
}
END_TEST

/* Shapes of tensors to be fed size the symbolic dims of their inputs and
 * bind the names for the inputs without one; --dim and --input-shape win. */
START_TEST(test_feed_shapes_size_symbolic_dims)
{
    xf_shape fed[] = {xf_shape_make(3, (const int64_t[]){2, 5, 4})};
    xf_dim_size sizes[] = {{"S", 3}, {"T", 8}};
    xf_load_options lo = {.dim_sizes = sizes, .n_dim_sizes = 2, .feed_shapes = fed, .n_feed_shapes = 1};
    xf_model *m;
    xf_error e;
    capture_start();
    ck_assert_msg(load_proto(cache_model(), &lo, &m, &e) == XF_OK, "%s", e.msg);
    /* B and P from the tensor, S and T from --dim: nothing taken as 1 */
    ck_assert_msg(!strstr(captured, "symbolic; using 1"), "%s", captured);
    const xf_graph *g = m->graph;
    ck_assert_int_eq(g->values[g->inputs[1]].shape.dims[0], 2);
    ck_assert_int_eq(g->values[g->inputs[1]].shape.dims[1], 3);
    ck_assert_int_eq(g->values[g->inputs[2]].shape.dims[0], 2);
    ck_assert_int_eq(m->n_symbolic, 6);
    xf_model_free(m);

    /* --dim wins over the tensor (which the run then refuses), and a
     * tensor of another rank sizes nothing */
    xf_dim_size b3[] = {{"B", 3}, {"S", 3}, {"T", 8}};
    lo = (xf_load_options){.dim_sizes = b3, .n_dim_sizes = 3, .feed_shapes = fed, .n_feed_shapes = 1};
    ck_assert_msg(load_proto(cache_model(), &lo, &m, &e) == XF_OK, "%s", e.msg);
    ck_assert_int_eq(m->graph->values[m->graph->inputs[0]].shape.dims[0], 3);
    ck_assert_int_eq(m->graph->values[m->graph->inputs[0]].shape.dims[1], 5);
    xf_model_free(m);
    fed[0] = xf_shape_make(2, (const int64_t[]){2, 5});
    xf_dim_size pst[] = {{"P", 5}, {"S", 3}, {"T", 8}};
    lo = (xf_load_options){.dim_sizes = pst, .n_dim_sizes = 3, .feed_shapes = fed, .n_feed_shapes = 1};
    capture_start();
    ck_assert_msg(load_proto(cache_model(), &lo, &m, &e) == XF_OK, "%s", e.msg);
    ck_assert_int_eq(m->graph->values[m->graph->inputs[0]].shape.dims[0], 1);
    ck_assert_msg(strstr(captured, "input 'past' dim 0 ('B') is symbolic; using 1"), "%s", captured);
    xf_model_free(m);
}
END_TEST

/* An unnamed symbolic dim is the fed input's own: sized, kept symbolic. */
START_TEST(test_feed_shapes_unnamed_dims)
{
    static const int64_t d[] = {-1, 4};
    Onnx__GraphProto *gp = mk_graph("g");
    PUSH(gp->n_input, gp->input, mk_vi("x", XF_DT_FLOAT, 2, d, NULL));
    PUSH(gp->n_input, gp->input, mk_vi("z", XF_DT_FLOAT, 2, d, NULL));
    PUSH(gp->n_node, gp->node, mk_node("Relu", "r", NAMES("x"), NAMES("y")));
    PUSH(gp->n_output, gp->output, mk_vi("y", XF_DT_FLOAT, -1, NULL, NULL));
    PUSH(gp->n_output, gp->output, mk_vi("z", XF_DT_FLOAT, -1, NULL, NULL));
    xf_shape fed[] = {xf_shape_make(2, (const int64_t[]){7, 4})};
    xf_load_options lo = {.feed_shapes = fed, .n_feed_shapes = 1};
    xf_model *m;
    xf_error e;
    capture_start();
    ck_assert_msg(load_proto(mk_model(gp, 13), &lo, &m, &e) == XF_OK, "%s", e.msg);
    ck_assert_msg(!strstr(captured, "input 'x'") && strstr(captured, "input 'z' dim 0 (unnamed)"), "%s", captured);
    ck_assert_int_eq(m->graph->values[m->graph->inputs[0]].shape.dims[0], 7);
    ck_assert_int_eq(m->graph->values[m->graph->inputs[1]].shape.dims[0], 1);
    ck_assert_int_eq(m->n_symbolic, 2);
    xf_model_free(m);
}
END_TEST

static int xflowc(const char *args, char **out)
{
    char cmd[8800];
    snprintf(cmd, sizeof cmd, "%s %s", xf_test_tool("xflowc"), args);
    return xf_test_run(cmd, out);
}

/* The model at path passes onnx.checker and declares, input dims then
 * output dims, want (Python's list of dim_param or dim_value). */
static void assert_written_dims(const char *path, const char *want)
{
    char cmd[8800], *out = NULL;
    snprintf(cmd, sizeof cmd,
             XF_PYTHON " -c \"import onnx, sys; m = onnx.load(sys.argv[1]); onnx.checker.check_model(m); "
             "print([d.dim_param or d.dim_value for v in list(m.graph.input) + list(m.graph.output) "
             "for d in v.type.tensor_type.shape.dim])\" %s",
             path);
    ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
    ck_assert_msg(strstr(out, want), "%s", out);
    free(out);
}

START_TEST(test_xflowc_keeps_related_dims)
{
    const char *dir = xf_test_tmpdir("dims_xflowc");
    write_model(cache_model(), path_in(dir, "in.onnx"));
    char args[8600], *out = NULL;
    /* all taken as 1, P + S is not T: the error says what to do */
    snprintf(args, sizeof args, "%s -o %s", path_in(dir, "in.onnx"), path_in(dir, "out.onnx"));
    ck_assert_int_ne(xflowc(args, &out), 0);
    ck_assert_msg(strstr(out, "the symbolic dims were sized B=1, P=1, S=1, T=1") && strstr(out, "--dim NAME=N"),
                  "%s", out);
    free(out);
    ck_assert(!xf_test_exists(path_in(dir, "out.onnx")));

    snprintf(args, sizeof args, "%s -o %s --check --dim P=5 --dim S=3 --dim T=8", path_in(dir, "in.onnx"),
             path_in(dir, "out.onnx"));
    ck_assert_msg(xflowc(args, &out) == 0, "%s", out);
    ck_assert_msg(strstr(out, "checked at B 4 and 5, P 20 and 25, S 12 and 15, T 32 and 40"), "%s", out);
    free(out);
    /* written with every dim symbolic, the output's named after T */
    assert_written_dims(path_in(dir, "out.onnx"), "['B', 'P', 4, 'B', 'S', 4, 'B', 'T', 'B', 'T', 5]");

    snprintf(args, sizeof args, "%s -o %s --dim P=5 --dim P=6", path_in(dir, "in.onnx"), path_in(dir, "o2.onnx"));
    ck_assert_int_eq(xflowc(args, &out), 2);
    ck_assert_msg(strstr(out, "--dim gives 'P' twice"), "%s", out);
    free(out);
    snprintf(args, sizeof args, "%s -o %s --dim P=0", path_in(dir, "in.onnx"), path_in(dir, "o2.onnx"));
    ck_assert_int_eq(xflowc(args, &out), 2);
    ck_assert_msg(strstr(out, "--dim needs NAME=N with N a positive size"), "%s", out);
    free(out);
}
END_TEST

static int xflow_run(const char *args, char **out)
{
    char cmd[8800];
    snprintf(cmd, sizeof cmd, "%s %s", xf_test_tool("xflow-run"), args);
    return xf_test_run(cmd, out);
}

/* xflow-run on model with the input file given prints want. */
static void assert_runs(const char *model, const char *file, const char *want)
{
    char args[8600], *out = NULL;
    snprintf(args, sizeof args, "%s --input %s", model, file);
    ck_assert_msg(xflow_run(args, &out) == 0, "%s", out);
    ck_assert_msg(strstr(out, want), "%s", out);
    free(out);
}

/* xflowc with args succeeds, saying each of wants (NULL-terminated). */
static void assert_optimized(const char *args, const char *const *wants)
{
    char *out = NULL;
    ck_assert_msg(xflowc(args, &out) == 0, "%s", out);
    for (int i = 0; wants[i]; i++)
        ck_assert_msg(strstr(out, wants[i]), "no '%s' in: %s", wants[i], out);
    free(out);
}

/* An initializer `name` of 1x1x8 convolution weights, 0.125 to 1. */
static void add_window8(Onnx__GraphProto *g, const char *name)
{
    static const int64_t wd[] = {1, 1, 8};
    static float w8[8];
    for (int i = 0; i < 8; i++)
        w8[i] = 0.125f * (float)(i + 1);
    PUSH(g->n_initializer, g->initializer, mk_raw(name, XF_DT_FLOAT, 3, wd, w8, sizeof w8));
}

/* xflowc with args fails, saying each of wants (NULL-terminated), and
 * writes nothing to path. */
static void assert_refused(const char *args, const char *path, const char *const *wants)
{
    char *out = NULL;
    ck_assert_int_ne(xflowc(args, &out), 0);
    for (int i = 0; wants[i]; i++)
        ck_assert_msg(strstr(out, wants[i]), "no '%s' in: %s", wants[i], out);
    free(out);
    ck_assert(!xf_test_exists(path));
}

/* A zero-filled FLOAT tensor of dims d written to dir/name.pb; its path. */
static const char *tensor_file(const char *dir, const char *name, int ndim, const int64_t *d)
{
    xf_shape shape = xf_shape_make(ndim, d);
    xf_tensor *t = xf_tensor_create(XF_DT_FLOAT, &shape);
    char file[64];
    snprintf(file, sizeof file, "%s.pb", name);
    const char *path = path_in(dir, file);
    xf_error e;
    ck_assert_msg(xf_tensor_save_pb(t, name, path, &e) == XF_OK, "%s", e.msg);
    xf_tensor_release(t);
    return path;
}

/* xflow-run sizes symbolic dims from the input files given, and binds their
 * names, so inputs without a file follow. */
START_TEST(test_xflow_run_sizes_from_inputs)
{
    const char *dir = xf_test_tmpdir("dims_run");
    write_model(cache_model(), path_in(dir, "in.onnx"));
    const char *past = tensor_file(dir, "past", 3, (const int64_t[]){2, 5, 4});
    const char *fresh = tensor_file(dir, "new", 3, (const int64_t[]){2, 3, 4});
    const char *mask = tensor_file(dir, "mask", 2, (const int64_t[]){2, 8});
    char args[8600], *out = NULL;
    snprintf(args, sizeof args, "%s --input %s --input %s --input %s", path_in(dir, "in.onnx"), past, fresh, mask);
    ck_assert_msg(xflow_run(args, &out) == 0, "%s", out);
    ck_assert_msg(strstr(out, "output 'y' FLOAT 2x8x5") && !strstr(out, "symbolic; using 1"), "%s", out);
    free(out);
    /* mask from B (bound by the files) and --dim T */
    snprintf(args, sizeof args, "%s --input %s --input %s --dim T=8", path_in(dir, "in.onnx"), past, fresh);
    ck_assert_msg(xflow_run(args, &out) == 0, "%s", out);
    ck_assert_msg(strstr(out, "output 'y' FLOAT 2x8x5") && !strstr(out, "symbolic; using 1"), "%s", out);
    free(out);
    /* a file that contradicts a fixed dim still fails, naming the input */
    const char *wide = tensor_file(dir, "wide", 3, (const int64_t[]){2, 5, 6});
    snprintf(args, sizeof args, "%s --input %s --dim P=5 --dim S=3 --dim T=8", path_in(dir, "in.onnx"), wide);
    ck_assert_int_ne(xflow_run(args, &out), 0);
    ck_assert_msg(strstr(out, "input 'past' has shape 2x5x6, the graph expects 1x5x4"), "%s", out);
    free(out);
}
END_TEST

/* y = Reshape(Reshape(x, [-1]), Concat(Shape(x)[1], Shape(x)[0])): x
 * [h, w] comes out as w x h, whatever the sizes. */
static Onnx__ModelProto *transpose_model(void)
{
    static const int64_t minus1 = -1, zero = 0, first = 1, one[] = {1}, d2[] = {-1, -1};
    Onnx__GraphProto *g = mk_graph("transpose");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 2, d2, NAMES("h", "w")));
    PUSH(g->n_initializer, g->initializer, mk_raw("flat", XF_DT_INT64, 1, one, &minus1, 8));
    PUSH(g->n_initializer, g->initializer, mk_raw("i0", XF_DT_INT64, 1, one, &zero, 8));
    PUSH(g->n_initializer, g->initializer, mk_raw("i1", XF_DT_INT64, 1, one, &first, 8));
    PUSH(g->n_node, g->node, mk_node("Shape", "s", NAMES("x"), NAMES("shape")));
    PUSH(g->n_node, g->node, mk_node("Gather", "g0", NAMES("shape", "i0"), NAMES("h")));
    PUSH(g->n_node, g->node, mk_node("Gather", "g1", NAMES("shape", "i1"), NAMES("w")));
    Onnx__NodeProto *cat = mk_node("Concat", "c", NAMES("w", "h"), NAMES("wh"));
    attr_int(cat, "axis", 0);
    PUSH(g->n_node, g->node, cat);
    PUSH(g->n_node, g->node, mk_node("Reshape", "f", NAMES("x", "flat"), NAMES("xf")));
    PUSH(g->n_node, g->node, mk_node("Reshape", "r", NAMES("xf", "wh"), NAMES("y")));
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, -1, NULL, NULL));
    return mk_model(g, 13);
}

/* Dims given equal sizes (a square image's height and width) are tried at
 * sizes that tell them apart, so the written model names each output dim
 * after the input dim it follows; dims that only equal sizes fit. */
START_TEST(test_equal_sizes_told_apart)
{
    const char *dir = xf_test_tmpdir("dims_equal");
    write_model(transpose_model(), path_in(dir, "in.onnx"));
    char args[8600], *out = NULL;
    snprintf(args, sizeof args, "%s -o %s --check --dim h=4 --dim w=4", path_in(dir, "in.onnx"),
             path_in(dir, "out.onnx"));
    ck_assert_msg(xflowc(args, &out) == 0, "%s", out);
    ck_assert_msg(strstr(out, "checked at h 16 and 20, w 20 and 24"), "%s", out);
    free(out);
    /* the output is declared w x h (tried at equal sizes, it was h x h) */
    assert_written_dims(path_in(dir, "out.onnx"), "['h', 'w', 'w', 'h']");
    /* a model that holds only where h = w can only be tried at equal
     * sizes: with no shape constant to depend on them its dims stay
     * symbolic, the output's named after neither (both fit) unless the
     * file names them; with one, it is written at the sizes given, saying
     * why */
    for (int form = 0; form < 3; form++) {
        Onnx__GraphProto *g = mk_graph("square");
        PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 2, (const int64_t[]){-1, -1}, NAMES("h", "w")));
        PUSH(g->n_node, g->node, mk_node("Transpose", "t", NAMES("x"), NAMES("xt")));
        PUSH(g->n_node, g->node, mk_node("Add", "a", NAMES("x", "xt"), NAMES("y")));
        if (form == 2) { /* y + Reshape(x, Shape(x)): a shape constant */
            PUSH(g->n_node, g->node, mk_node("Shape", "s", NAMES("x"), NAMES("xs")));
            PUSH(g->n_node, g->node, mk_node("Reshape", "r", NAMES("x", "xs"), NAMES("xr")));
            PUSH(g->n_node, g->node, mk_node("Add", "a2", NAMES("y", "xr"), NAMES("y2")));
        }
        PUSH(g->n_output, g->output,
             form == 1 ? mk_vi("y", XF_DT_FLOAT, 2, (const int64_t[]){-1, -1}, NAMES("w", "h"))
                       : mk_vi(form == 2 ? "y2" : "y", XF_DT_FLOAT, -1, NULL, NULL));
        write_model(mk_model(g, 13), path_in(dir, "square.onnx"));
        snprintf(args, sizeof args, "%s -o %s --dim h=4 --dim w=4", path_in(dir, "square.onnx"),
                 path_in(dir, "square_out.onnx"));
        ck_assert_msg(xflowc(args, &out) == 0, "%s", out);
        ck_assert_msg(form == 2 ? strstr(out, "could only be tried at equal sizes") != NULL
                                : strstr(out, "symbolic dims kept: 'x' dim 0 ('h'), 'x' dim 1 ('w')") != NULL,
                      "%s", out);
        free(out);
        assert_written_dims(path_in(dir, "square_out.onnx"), form == 0   ? "['h', 'w', 0, 0]"
                                                             : form == 1 ? "['h', 'w', 'w', 'h']"
                                                                         : "[4, 4, 4, 4]");
    }
    const char *x = tensor_file(dir, "x", 2, (const int64_t[]){2, 3});
    assert_runs(path_in(dir, "out.onnx"), x, "output 'y' FLOAT 3x2");
}
END_TEST

/* Dims declared -1 (which some exporters write for a dynamic dim) or "?"
 * (paddle2onnx's unknown dim) are unnamed symbolic dims: the file loads,
 * and two "?" of one input are not tied to one size. */
START_TEST(test_negative_and_question_mark_dims)
{
    Onnx__GraphProto *gp = mk_graph("g");
    Onnx__ValueInfoProto *x = mk_vi("x", XF_DT_FLOAT, 4, (const int64_t[]){-1, 3, -1, -1}, NAMES(NULL, NULL, "?", "?"));
    x->type->tensor_type->shape->dim[0]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    x->type->tensor_type->shape->dim[0]->dim_value = -1;
    PUSH(gp->n_input, gp->input, x);
    PUSH(gp->n_node, gp->node, mk_node("Relu", "r", NAMES("x"), NAMES("y")));
    Onnx__ValueInfoProto *y = mk_vi("y", XF_DT_FLOAT, 4, (const int64_t[]){-1, 3, -1, -1}, NAMES(NULL, NULL, "?", "?"));
    y->type->tensor_type->shape->dim[0]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    y->type->tensor_type->shape->dim[0]->dim_value = -1;
    PUSH(gp->n_output, gp->output, y);
    xf_shape fed[] = {xf_shape_make(4, (const int64_t[]){2, 3, 4, 6})};
    xf_load_options lo = {.feed_shapes = fed, .n_feed_shapes = 1};
    xf_model *m;
    xf_error e;
    ck_assert_msg(load_proto(mk_model(gp, 13), &lo, &m, &e) == XF_OK, "%s", e.msg);
    const xf_shape *s = &m->graph->values[m->graph->inputs[0]].shape;
    ck_assert_msg(s->ndim == 4 && s->dims[0] == 2 && s->dims[2] == 4 && s->dims[3] == 6, "%d", s->ndim);
    ck_assert_int_eq(m->n_symbolic, 3);
    for (int i = 0; i < 3; i++)
        ck_assert_msg(!strcmp(m->symbolic[i].name, ""), "%s", m->symbolic[i].name);
    /* the output's declared dims are symbolic and unnamed too */
    ck_assert_int_eq(m->n_declared_out, 3);
    xf_model_free(m);

    /* through the tools: the run sizes each dim from the file, and xflowc
     * keeps all three symbolic */
    const char *dir = xf_test_tmpdir("dims_unknown");
    char in[4200], file[4200], args[8600], *out = NULL;
    snprintf(in, sizeof in, "%s", path_in(dir, "in.onnx"));
    write_model(mk_model(gp, 13), in);
    snprintf(file, sizeof file, "%s", tensor_file(dir, "x", 4, (const int64_t[]){2, 3, 4, 6}));
    assert_runs(in, file, "output 'y' FLOAT 2x3x4x6");
    snprintf(args, sizeof args, "%s -o %s --input %s --check", in, path_in(dir, "out.onnx"), file);
    ck_assert_msg(xflowc(args, &out) == 0, "%s", out);
    ck_assert_msg(strstr(out, "symbolic dims kept: 'x' dim 0, 'x' dim 2, 'x' dim 3"), "%s", out);
    free(out);
    assert_written_dims(path_in(dir, "out.onnx"), "[0, 3, 0, 0, 0, 3, 0, 0]");

    /* a 2x2 pool does not fit the 1x1 the load takes them at: the error
     * names the sizes and how to give unnamed dims theirs */
    Onnx__NodeProto *pool = mk_node("MaxPool", "p", NAMES("x"), NAMES("y"));
    attr_ints(pool, "kernel_shape", 2, (const int64_t[]){2, 2});
    gp->node[0] = pool;
    ck_assert_int_ne(load_proto(mk_model(gp, 13), NULL, &m, &e), XF_OK);
    ck_assert_msg(strstr(e.msg, "(the symbolic dims were sized 'x' dim 0=1, 'x' dim 2=1, 'x' dim 3=1; ") &&
                      strstr(e.msg, "(unnamed ones: --input FILE.pb, whose size sizes them)"),
                  "%s", e.msg);
}
END_TEST

/* A shape that follows a dim through a downsampling: the small sizes the
 * dims are tried at (1 to 5) all pool to one step, so only the large ones
 * show that the Reshape's shape follows the width: y = Reshape(p, [T, 1])
 * with p = MaxPool(x [1, 1, W], 1, stride 8) and T = p's steps. */
START_TEST(test_large_sizes_show_pooled_dims)
{
    static const int64_t zero = 0, one[] = {1}, two = 2, d3[] = {1, 1, -1};
    Onnx__GraphProto *g = mk_graph("pooled");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 3, d3, NAMES(NULL, NULL, "W")));
    PUSH(g->n_initializer, g->initializer, mk_raw("i2", XF_DT_INT64, 1, one, &two, 8));
    PUSH(g->n_initializer, g->initializer, mk_raw("i0", XF_DT_INT64, 1, one, &zero, 8));
    static const int64_t unit = 1;
    PUSH(g->n_initializer, g->initializer, mk_raw("unit", XF_DT_INT64, 1, one, &unit, 8));
    Onnx__NodeProto *pool = mk_node("MaxPool", "pool", NAMES("x"), NAMES("p"));
    attr_ints(pool, "kernel_shape", 1, (const int64_t[]){1});
    attr_ints(pool, "strides", 1, (const int64_t[]){8});
    PUSH(g->n_node, g->node, pool);
    PUSH(g->n_node, g->node, mk_node("Shape", "s", NAMES("p"), NAMES("ps")));
    PUSH(g->n_node, g->node, mk_node("Gather", "t", NAMES("ps", "i2"), NAMES("steps")));
    Onnx__NodeProto *cat = mk_node("Concat", "c", NAMES("steps", "unit"), NAMES("shape"));
    attr_int(cat, "axis", 0);
    PUSH(g->n_node, g->node, cat);
    PUSH(g->n_node, g->node, mk_node("Reshape", "r", NAMES("p", "shape"), NAMES("y")));
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, -1, NULL, NULL));
    /* z = x[..., :8]: its last dim is W's up to 5, not at 99 */
    static const int64_t eight = 8;
    PUSH(g->n_initializer, g->initializer, mk_raw("eight", XF_DT_INT64, 1, one, &eight, 8));
    PUSH(g->n_node, g->node, mk_node("Slice", "z", NAMES("x", "i0", "eight", "i2"), NAMES("z")));
    PUSH(g->n_output, g->output, mk_vi("z", XF_DT_FLOAT, -1, NULL, NULL));
    const char *dir = xf_test_tmpdir("dims_pooled");
    char in[4200], file[4200], args[8600], *out = NULL;
    snprintf(in, sizeof in, "%s", path_in(dir, "in.onnx"));
    write_model(mk_model(g, 13), in);
    snprintf(args, sizeof args, "%s -o %s", in, path_in(dir, "out.onnx"));
    ck_assert_msg(xflowc(args, &out) == 0, "%s", out);
    ck_assert_msg(strstr(out, "symbolic dims kept: 'x' dim 2 ('W') (checked at W 4 and 5), output shapes also at W 99"),
                  "%s", out);
    free(out);
    /* the outputs' steps and z's last dim are symbolic, unnamed (they
     * follow W, but are not W) */
    assert_written_dims(path_in(dir, "out.onnx"), "[1, 1, 'W', 0, 1, 1, 1, 0]");
    snprintf(file, sizeof file, "%s", tensor_file(dir, "x", 3, (const int64_t[]){1, 1, 66}));
    assert_runs(path_in(dir, "out.onnx"), file, "output 'y' FLOAT 9x1");

    /* a window of 8 does not fit a width of 1: the load takes 64 */
    pool->attribute[0]->ints[0] = 8; /* kernel_shape */
    write_model(mk_model(g, 13), in);
    snprintf(args, sizeof args, "%s -o %s --check", in, path_in(dir, "out8.onnx"));
    ck_assert_msg(xflowc(args, &out) == 0, "%s", out);
    ck_assert_msg(strstr(out, "its symbolic dims do not fit at size 1; trying 64 past each input's first dim") &&
                      strstr(out, "using the sizes shown (set it with --input-shape x=1x1x64)") &&
                      strstr(out, "symbolic dims kept: 'x' dim 2 ('W')"),
                  "%s", out);
    free(out);
    /* z's last dim is 8 at every size tried now: written so */
    assert_written_dims(path_in(dir, "out8.onnx"), "[1, 1, 'W', 0, 1, 1, 1, 8]");
    assert_runs(path_in(dir, "out8.onnx"), file, "output 'y' FLOAT 8x1");
}
END_TEST

/* A window that fits only once the shapes fold: Pad's pads are a Concat
 * of constants, so the load cannot size what the convolution reads, and
 * at length 1 canonicalization finds 1 + 4 below its extent of 8.  With no
 * size given, xflowc loads it again at 64 and goes on. */
START_TEST(window_fits_after_folding)
{
    static const int64_t two[] = {0, 0, 2}, one[] = {3};
    Onnx__GraphProto *g = mk_graph("padded");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 3, (const int64_t[]){1, 1, -1}, NAMES(NULL, NULL, "L")));
    PUSH(g->n_initializer, g->initializer, mk_raw("lo", XF_DT_INT64, 1, one, two, sizeof two));
    PUSH(g->n_initializer, g->initializer, mk_raw("hi", XF_DT_INT64, 1, one, two, sizeof two));
    add_window8(g, "w");
    Onnx__NodeProto *cat = mk_node("Concat", "pads", NAMES("lo", "hi"), NAMES("pads"));
    attr_int(cat, "axis", 0);
    PUSH(g->n_node, g->node, cat);
    PUSH(g->n_node, g->node, mk_node("Pad", "pad", NAMES("x", "pads"), NAMES("xp")));
    PUSH(g->n_node, g->node, mk_node("Conv", "conv", NAMES("xp", "w"), NAMES("y")));
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, -1, NULL, NULL));
    const char *dir = xf_test_tmpdir("dims_padded");
    char in[4200], args[8600], *out = NULL;
    snprintf(in, sizeof in, "%s", path_in(dir, "in.onnx"));
    write_model(mk_model(g, 13), in);
    snprintf(args, sizeof args, "%s -o %s --check", in, path_in(dir, "out.onnx"));
    assert_optimized(args, (const char *[]){"its symbolic dims do not fit at the sizes taken (node 'conv' (Conv)",
                                            "trying 64 past each input's first dim",
                                            "symbolic dims kept: 'x' dim 2 ('L')", NULL});
    assert_written_dims(path_in(dir, "out.onnx"), "[1, 1, 'L', 1, 1, 0]");
    /* xflow-run too: its session folds the pads and finds 1 too short */
    for (int cpu = 0; cpu < 2; cpu++) {
        snprintf(args, sizeof args, "%s%s", in, cpu ? " --backend cpu" : "");
        ck_assert_msg(xflow_run(args, &out) == 0, "%s", out);
        ck_assert_msg(strstr(out, "its symbolic dims do not fit at the sizes taken (node 'conv' (Conv)") &&
                          strstr(out, "trying 64 past each input's first dim") &&
                          strstr(out, "output 'y' FLOAT 1x1x61"),
                      "%s", out);
        free(out);
    }
}
END_TEST

/* A state of one sequence (AECMOS's GRU state [.., 1, ..]) ties the batch
 * to 1, and a window of 8 does not fit at length 1: with no size given,
 * the length is guessed larger and stays symbolic, the batch is written at
 * 1 (as it would be without the guess), not refused as a guess:
 * y = Concat(h, ReduceMax(Conv(x, w), axis 2), axis 2). */
START_TEST(test_batch_of_one_kept_with_guesses)
{
    static const int64_t hd[] = {1, 1, 2};
    static float h2[2] = {0.5f, -0.5f};
    Onnx__GraphProto *g = mk_graph("state");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 3, (const int64_t[]){-1, 1, -1}, NAMES("B", NULL, "L")));
    add_window8(g, "w");
    PUSH(g->n_initializer, g->initializer, mk_raw("h", XF_DT_FLOAT, 3, hd, h2, sizeof h2));
    PUSH(g->n_node, g->node, mk_node("Conv", "conv", NAMES("x", "w"), NAMES("c")));
    Onnx__NodeProto *max = mk_node("ReduceMax", "max", NAMES("c"), NAMES("m"));
    attr_ints(max, "axes", 1, (const int64_t[]){2});
    PUSH(g->n_node, g->node, max);
    Onnx__NodeProto *cat = mk_node("Concat", "cat", NAMES("h", "m"), NAMES("y"));
    attr_int(cat, "axis", 2);
    PUSH(g->n_node, g->node, cat);
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, -1, NULL, NULL));
    const char *dir = xf_test_tmpdir("dims_state");
    char in[4200], x[4200], args[8600], *out = NULL;
    snprintf(in, sizeof in, "%s", path_in(dir, "in.onnx"));
    snprintf(x, sizeof x, "%s", tensor_file(dir, "x", 3, (const int64_t[]){1, 1, 20}));
    write_model(mk_model(g, 13), in);
    snprintf(args, sizeof args, "%s -o %s --check", in, path_in(dir, "out.onnx"));
    assert_optimized(args,
                     (const char *[]){"trying 64 past each input's first dim", "symbolic dims kept: 'x' dim 2 ('L')",
                                      "the written model is fixed at the size used for 'x' dim 0 ('B'), 1 "
                                      "(with it symbolic too, node 'cat' (Concat)",
                                      NULL});
    assert_written_dims(path_in(dir, "out.onnx"), "[1, 1, 'L', 1, 1, 3]");
    snprintf(args, sizeof args, "%s --input %s", path_in(dir, "out.onnx"), x);
    ck_assert_msg(xflow_run(args, &out) == 0, "%s", out);
    ck_assert_msg(strstr(out, "output 'y' FLOAT 1x1x3"), "%s", out);
    free(out);
    /* with the batch given, the length nobody sized is guessed as well */
    snprintf(args, sizeof args, "%s -o %s --dim B=1", in, path_in(dir, "given.onnx"));
    assert_optimized(args, (const char *[]){"its symbolic dims do not fit at size 1; trying 64 past each input's "
                                            "first dim where no size was given",
                                            "symbolic dims kept: 'x' dim 2 ('L')", NULL});
    assert_written_dims(path_in(dir, "given.onnx"), "[1, 1, 'L', 1, 1, 3]");
    snprintf(args, sizeof args, "%s --dim B=1", in);
    ck_assert_msg(xflow_run(args, &out) == 0, "%s", out);
    ck_assert_msg(strstr(out, "output 'y' FLOAT 1x1x3"), "%s", out);
    free(out);
    /* every size given: nothing to guess, the error at those sizes */
    snprintf(args, sizeof args, "%s --dim B=1 --dim L=4", in);
    ck_assert_int_ne(xflow_run(args, &out), 0);
    ck_assert_msg(strstr(out, "node 'conv' (Conv)") && !strstr(out, "trying 64"), "%s", out);
    free(out);
    /* a length of 32 only: Reshape(Conv(x, w of 8), [1, 25]) fits neither
     * 1 (the window) nor the sizes guessed; the error names the first
     * size's node, and the last size's beside it */
    static const int64_t two[] = {2}, to25[] = {1, 25};
    Onnx__GraphProto *l = mk_graph("length");
    PUSH(l->n_input, l->input, mk_vi("x", XF_DT_FLOAT, 3, (const int64_t[]){1, 1, -1}, NAMES(NULL, NULL, "L")));
    add_window8(l, "w");
    PUSH(l->n_initializer, l->initializer, mk_raw("to", XF_DT_INT64, 1, two, to25, sizeof to25));
    PUSH(l->n_node, l->node, mk_node("Conv", "conv", NAMES("x", "w"), NAMES("c")));
    PUSH(l->n_node, l->node, mk_node("Reshape", "r", NAMES("c", "to"), NAMES("y")));
    PUSH(l->n_output, l->output, mk_vi("y", XF_DT_FLOAT, -1, NULL, NULL));
    write_model(mk_model(l, 13), in);
    ck_assert_int_ne(xflow_run(in, &out), 0);
    ck_assert_msg(strstr(out, "error: ") && strstr(out, "node 'conv' (Conv)") &&
                      strstr(out, "kernel's extent 8 (the symbolic dims were sized L=1") &&
                      strstr(out, "; at 512 past each input's first dim: node 'r' (Reshape)"),
                  "%s", out);
    free(out);
    /* nor where the only symbolic dim is a batch, which guesses leave at
     * 1: Reshape(x [N, 4], [2, -1, 4]) needs an even N */
    static const int64_t three[] = {3}, to[] = {2, -1, 4};
    Onnx__GraphProto *b = mk_graph("batch");
    PUSH(b->n_input, b->input, mk_vi("x", XF_DT_FLOAT, 2, (const int64_t[]){-1, 4}, NAMES("N", NULL)));
    PUSH(b->n_initializer, b->initializer, mk_raw("to", XF_DT_INT64, 1, three, to, sizeof to));
    PUSH(b->n_node, b->node, mk_node("Reshape", "r", NAMES("x", "to"), NAMES("y")));
    PUSH(b->n_output, b->output, mk_vi("y", XF_DT_FLOAT, -1, NULL, NULL));
    write_model(mk_model(b, 13), in);
    ck_assert_int_ne(xflow_run(in, &out), 0);
    ck_assert_msg(strstr(out, "node 'r' (Reshape)") && !strstr(out, "trying 64"), "%s", out);
    free(out);
}
END_TEST

/* x [B, L] (plus w [L]) read as B frames of side x side, a model that
 * holds for one frame length only (as an audio model's chunk does) and
 * any batch: y = Reshape(x + w, [0, side, side]), directly or, gated, in
 * either branch of an If on a graph input, where only running it shows
 * the lengths that do not fit. */
static Onnx__ModelProto *frames_model(bool gated, int64_t side)
{
    static int64_t frame[3];
    static const int64_t three[] = {3}, d2[] = {-1, -1};
    frame[0] = 0;
    frame[1] = frame[2] = side;
    Onnx__GraphProto *g = mk_graph("frames");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 2, d2, NAMES("B", "L")));
    PUSH(g->n_input, g->input, mk_vi("w", XF_DT_FLOAT, 1, d2, NAMES("L")));
    PUSH(g->n_node, g->node, mk_node("Add", "add", NAMES("x", "w"), NAMES("xw")));
    PUSH(g->n_initializer, g->initializer, mk_raw("frame", XF_DT_INT64, 1, three, frame, sizeof frame));
    if (!gated) {
        PUSH(g->n_node, g->node, mk_node("Reshape", "r", NAMES("xw", "frame"), NAMES("y")));
    } else {
        PUSH(g->n_input, g->input, mk_vi("flag", XF_DT_BOOL, 0, NULL, NULL));
        Onnx__GraphProto *then_g = mk_graph("then"), *else_g = mk_graph("else");
        PUSH(then_g->n_node, then_g->node, mk_node("Reshape", "t_r", NAMES("xw", "frame"), NAMES("t_out")));
        PUSH(then_g->n_output, then_g->output, mk_vi("t_out", XF_DT_FLOAT, -1, NULL, NULL));
        PUSH(else_g->n_node, else_g->node, mk_node("Reshape", "e_r", NAMES("xw", "frame"), NAMES("e_r_out")));
        PUSH(else_g->n_node, else_g->node, mk_node("Neg", "e_neg", NAMES("e_r_out"), NAMES("e_out")));
        PUSH(else_g->n_output, else_g->output, mk_vi("e_out", XF_DT_FLOAT, -1, NULL, NULL));
        Onnx__NodeProto *iff = mk_node("If", "gate", NAMES("flag"), NAMES("y"));
        attr_graph(iff, "then_branch", then_g);
        attr_graph(iff, "else_branch", else_g);
        PUSH(g->n_node, g->node, iff);
    }
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, 3, (const int64_t[]){-1, side, side}, NAMES("B", NULL, NULL)));
    return mk_model(g, 13);
}

/* A dim the model does not hold for at other sizes stays fixed at its
 * size and the others stay symbolic: found before the search (the plain
 * model fails at other lengths when canonicalized) or after it (behind
 * the If only runs tell).  Where the sizes used were guessed and the model
 * does not run at them, nothing is written. */
START_TEST(test_one_dim_fixed_others_kept)
{
    const char *dir = xf_test_tmpdir("dims_fixed");
    char x[4200], w[4200], args[8600], *out = NULL;
    snprintf(x, sizeof x, "%s", tensor_file(dir, "x", 2, (const int64_t[]){2, 16}));
    snprintf(w, sizeof w, "%s", tensor_file(dir, "w", 1, (const int64_t[]){16}));
    for (int gated = 0; gated < 2; gated++) {
        write_model(frames_model(gated, 4), path_in(dir, "in.onnx"));
        snprintf(args, sizeof args, "%s -o %s --check --dim L=16", path_in(dir, "in.onnx"), path_in(dir, "out.onnx"));
        ck_assert_msg(xflowc(args, &out) == 0, "%s", out);
        ck_assert_msg(strstr(out, "symbolic dims kept: 'x' dim 0 ('B') (checked at B 4 and 5)") &&
                          strstr(out,
                                 "the written model is fixed at the size used for 'x' dim 1 ('L'), 'w' dim 0 ('L'), 16 "
                                 "(with it "
                                 "symbolic too, ") &&
                          strstr(out, "the other symbolic dims stay"),
                      "%s", out);
        free(out);
        assert_written_dims(path_in(dir, "out.onnx"), "['B', 16, 16, 'B', 4, 4]");
        snprintf(args, sizeof args, "%s --input %s --input %s", path_in(dir, "out.onnx"), x, w);
        ck_assert_msg(xflow_run(args, &out) == 0, "%s", out);
        ck_assert_msg(strstr(out, "output 'y' FLOAT 2x4x4"), "%s", out);
        free(out);
    }
    /* the gated model at length 1 does not run, and a file fixed there
     * would take no input */
    static const char *const all_dims = "the symbolic dims 'x' dim 0 ('B'), 'x' dim 1 ('L'), 'w' dim 0 ('L') could "
                                        "not stay symbolic (";
    char guessed[4200];
    snprintf(guessed, sizeof guessed, "%s", path_in(dir, "guessed.onnx"));
    snprintf(args, sizeof args, "%s -o %s --dim B=1 --dim L=1", path_in(dir, "in.onnx"), guessed);
    assert_refused(args, guessed,
                   (const char *[]){all_dims, "and at the sizes used for them (B=1, L=1) the model does not run (",
                                    "give sizes that fit with --dim NAME=N", NULL});
    /* no size at all: larger lengths past the batch are tried (64, 512:
     * none is 16), and then nothing is written */
    snprintf(args, sizeof args, "%s -o %s", path_in(dir, "in.onnx"), guessed);
    assert_refused(args, guessed,
                   (const char *[]){"do not all hold at the sizes taken; trying 64 past each input's first dim",
                                    "do not all hold at the sizes taken; trying 512 past each input's first dim",
                                    all_dims,
                                    "and the size used for those no size was given for, 512, was guessed; give the "
                                    "sizes the model takes with --input-shape NAME=DIMS",
                                    NULL});
    /* xflow-run tries the larger lengths when the first run fails, and
     * gives the last error */
    snprintf(args, sizeof args, "%s", path_in(dir, "in.onnx"));
    ck_assert_int_ne(xflow_run(args, &out), 0);
    ck_assert_msg(strstr(out, "trying 64 past each input's first dim") &&
                      strstr(out, "trying 512 past each input's first dim") && strstr(out, "error: ") &&
                      strstr(out, "cannot reshape 1x512") != NULL,
                  "%s", out);
    free(out);
    /* only the batch given: the length is guessed as above */
    snprintf(args, sizeof args, "%s -o %s --dim B=1", path_in(dir, "in.onnx"), guessed);
    assert_refused(args, guessed,
                   (const char *[]){"input 'x' dim 1 ('L') is symbolic; using the sizes shown (set it with "
                                    "--input-shape x=1x64)",
                                    "trying 512 past each input's first dim where no size was given",
                                    "and the size used for those no size was given for, 512, was guessed", NULL});
    /* frames of 8x8 hold at the guessed length of 64 alone: the batch
     * would stay symbolic, but a length nobody gave is not written (found
     * before the search, or behind the If after it) */
    for (int gated = 0; gated < 2; gated++) {
        write_model(frames_model(gated, 8), path_in(dir, "in.onnx"));
        snprintf(args, sizeof args, "%s -o %s", path_in(dir, "in.onnx"), path_in(dir, "guessed.onnx"));
        ck_assert_int_ne(xflowc(args, &out), 0);
        /* behind the If, 512 is tried next and does not fit the frames */
        ck_assert_msg(gated ? strstr(out, "the written model would be fixed at the size used for 'x' dim 1 ('L'), "
                                          "'w' dim 0 ('L'), 64 (") == NULL &&
                                  strstr(out, "trying 512 past each input's first dim") &&
                                  strstr(out, "was guessed; give the sizes")
                            : strstr(out, "the written model would be fixed at the size used for 'x' dim 1 ('L'), "
                                          "'w' dim 0 ('L'), 64 (") &&
                                  strstr(out, "a size guessed, not given"),
                      "%s", out);
        free(out);
        ck_assert(!xf_test_exists(path_in(dir, "guessed.onnx")));
    }
    /* sizes that fit: both kept */
    write_model(frames_model(false, 4), path_in(dir, "in.onnx"));
    snprintf(args, sizeof args, "%s -o %s --input-shape x=2x16 --input-shape w=16", path_in(dir, "in.onnx"),
             path_in(dir, "fixed.onnx"));
    ck_assert_msg(xflowc(args, &out) == 0, "%s", out);
    free(out);
    assert_written_dims(path_in(dir, "fixed.onnx"), "[2, 16, 16, 2, 4, 4]");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("dims");
    TCase *tc = tcase_create("dim_sizes");
    tcase_add_checked_fixture(tc, NULL, free_allocs);
    tcase_add_test(tc, test_dim_sizes_bind_without_fixing);
    tcase_add_test(tc, test_xflowc_keeps_related_dims);
    tcase_add_test(tc, test_xflow_run_sizes_from_inputs);
    tcase_add_test(tc, test_feed_shapes_size_symbolic_dims);
    tcase_add_test(tc, test_feed_shapes_unnamed_dims);
    tcase_add_test(tc, test_equal_sizes_told_apart);
    tcase_add_test(tc, test_one_dim_fixed_others_kept);
    tcase_add_test(tc, test_negative_and_question_mark_dims);
    tcase_add_test(tc, test_large_sizes_show_pooled_dims);
    tcase_add_test(tc, window_fits_after_folding);
    tcase_add_test(tc, test_batch_of_one_kept_with_guesses);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
