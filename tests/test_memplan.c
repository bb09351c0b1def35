/* Memory planning: values alive at the same time never share bytes
 * unless one is a view of the other (a Reshape's output is its input's
 * bytes), offsets are aligned, and reuse makes the arena smaller than the
 * sum of the values.  Graphs are built with the core API only. */
#include <check.h>

#include "xf_test_util.h"
#include <stdlib.h>
#include <string.h>

#include "xf_runtime.h"

/* Checks every invariant of plan p of g. */
static void check_plan(const xf_graph *g, const xf_memplan *p)
{
    ck_assert_int_eq(p->n_values, g->n_values);
    size_t sum = 0;
    for (int v = 0; v < g->n_values; v++) {
        bool produced = g->values[v].producer >= 0;
        ck_assert_msg(produced == (p->offset[v] >= 0), "value '%s': planned iff a node produces it",
                      g->values[v].name);
        if (!produced)
            continue;
        int64_t numel = xf_shape_numel(&g->values[v].shape);
        ck_assert_uint_ge(p->size[v], (size_t)numel * xf_dtype_size(g->values[v].dtype));
        ck_assert_int_eq(p->offset[v] % 64, 0);
        ck_assert_uint_le((size_t)p->offset[v] + p->size[v], p->arena_bytes);
        ck_assert_int_le(p->first[v], p->last[v]);
        int root = p->alias[v] >= 0 ? p->alias[v] : v;
        if (root != v) {
            /* a view or a Concat's input: within its root's bytes, whose
             * lifetime covers its making and its readers */
            ck_assert_int_lt(p->alias[root], 0);
            ck_assert_int_eq(p->offset[v], p->offset[root] + (int64_t)p->alias_offset[v]);
            ck_assert_uint_le(p->alias_offset[v] + (size_t)numel * xf_dtype_size(g->values[v].dtype), p->size[root]);
            ck_assert_int_eq(p->first[v], p->first[root]);
            ck_assert_int_eq(p->last[v], p->last[root]);
            ck_assert_int_le(p->first[root], g->values[v].producer);
            for (int i = 0; i < g->n_nodes; i++)
                for (int k = 0; k < g->nodes[i].n_inputs; k++)
                    if (g->nodes[i].inputs[k] == v)
                        ck_assert_int_ge(p->last[root], i);
            continue;
        }
        sum += p->size[v];
        for (int w = 0; w < v; w++) {
            if (p->offset[w] < 0 || p->alias[w] == v || p->first[w] > p->last[v] || p->first[v] > p->last[w])
                continue;
            bool disjoint = (size_t)p->offset[v] + p->size[v] <= (size_t)p->offset[w] ||
                            (size_t)p->offset[w] + p->size[w] <= (size_t)p->offset[v];
            ck_assert_msg(disjoint, "'%s' and '%s' are alive together and overlap", g->values[v].name,
                          g->values[w].name);
        }
    }
    ck_assert_uint_eq(p->total_bytes, sum);
    ck_assert_uint_le(p->peak_bytes, p->arena_bytes);
    ck_assert_uint_le(p->arena_bytes, p->total_bytes);
    /* graph outputs live to the end */
    for (int k = 0; k < g->n_outputs; k++)
        if (p->offset[g->outputs[k]] >= 0)
            ck_assert_int_eq(p->last[g->outputs[k]], g->n_nodes);
}

static int add_unary(xf_graph *g, xf_op op, int x, const xf_shape *s)
{
    int y = xf_graph_add_value(g, NULL, XF_DT_FLOAT, s);
    xf_graph_add_node(g, op, NULL, 1, &x, 1, &y);
    return y;
}

START_TEST(chain_alternates_two_buffers)
{
    /* x -> relu -> sigmoid -> tanh -> relu -> y: each 1 KiB value dies
     * when the next is made, so two buffers suffice */
    xf_graph *g = xf_graph_create("chain");
    xf_shape s = xf_shape_make(2, (int64_t[]){1, 256});
    int v = xf_graph_add_input(g, "x", XF_DT_FLOAT, &s);
    xf_op ops[] = {XF_OP_RELU, XF_OP_SIGMOID, XF_OP_TANH, XF_OP_RELU};
    for (int i = 0; i < 4; i++)
        v = add_unary(g, ops[i], v, &s);
    xf_graph_add_output(g, v);
    xf_memplan p;
    xf_error err = {0};
    ck_assert_msg(xf_memplan_compute(g, &p, &err) == XF_OK, "%s", err.msg);
    check_plan(g, &p);
    ck_assert_uint_eq(p.total_bytes, 4 * 1024);
    ck_assert_uint_eq(p.peak_bytes, 2 * 1024);
    ck_assert_uint_eq(p.arena_bytes, 2 * 1024);
    xf_memplan_free(&p);
    xf_graph_free(g);
}
END_TEST

START_TEST(diamond_keeps_both_branches)
{
    /* a = relu(x); b = sigmoid(a); c = tanh(a); d = b + c; y = relu(d):
     * a, b and c are alive together at the second branch; d may reuse a */
    xf_graph *g = xf_graph_create("diamond");
    xf_shape s = xf_shape_make(2, (int64_t[]){4, 100});
    int x = xf_graph_add_input(g, "x", XF_DT_FLOAT, &s);
    int a = add_unary(g, XF_OP_RELU, x, &s);
    int b = add_unary(g, XF_OP_SIGMOID, a, &s);
    int c = add_unary(g, XF_OP_TANH, a, &s);
    int d = xf_graph_add_value(g, "d", XF_DT_FLOAT, &s);
    xf_graph_add_node(g, XF_OP_ADD, "add", 2, (int[]){b, c}, 1, &d);
    int y = add_unary(g, XF_OP_RELU, d, &s);
    xf_graph_add_output(g, y);
    xf_memplan p;
    xf_error err = {0};
    ck_assert_msg(xf_memplan_compute(g, &p, &err) == XF_OK, "%s", err.msg);
    check_plan(g, &p);
    ck_assert_int_eq(p.first[a], 0);
    ck_assert_int_eq(p.last[a], 2);
    ck_assert_int_eq(p.last[b], 3);
    ck_assert_uint_eq(p.peak_bytes, 3 * 1600);
    ck_assert_uint_lt(p.arena_bytes, p.total_bytes);
    ck_assert_uint_eq(p.arena_bytes, p.peak_bytes);
    xf_memplan_free(&p);
    xf_graph_free(g);
}
END_TEST

START_TEST(mixed_sizes_and_unused_outputs)
{
    /* values of different sizes, one output nothing reads (still needs
     * room while its node runs), and an initializer (never planned) */
    xf_graph *g = xf_graph_create("mixed");
    xf_shape big = xf_shape_make(1, (int64_t[]){1000}), small = xf_shape_make(1, (int64_t[]){3});
    int x = xf_graph_add_input(g, "x", XF_DT_FLOAT, &big);
    xf_tensor *w = xf_tensor_create(XF_DT_FLOAT, &small);
    int wv = xf_graph_add_initializer(g, "w", w);
    xf_tensor_release(w);
    int a = add_unary(g, XF_OP_EXP, x, &big);
    add_unary(g, XF_OP_NEG, a, &big); /* dead */
    int r = xf_graph_add_value(g, "r", XF_DT_FLOAT, &(xf_shape){.ndim = 0});
    xf_graph_add_node(g, XF_OP_REDUCE_SUM, "sum", 1, &a, 1, &r);
    int t = add_unary(g, XF_OP_TANH, wv, &small);
    int y = xf_graph_add_value(g, "y", XF_DT_FLOAT, &small);
    xf_graph_add_node(g, XF_OP_MUL, "mul", 2, (int[]){t, r}, 1, &y);
    xf_graph_add_output(g, y);
    xf_graph_add_output(g, a);
    xf_memplan p;
    xf_error err = {0};
    ck_assert_msg(xf_memplan_compute(g, &p, &err) == XF_OK, "%s", err.msg);
    check_plan(g, &p);
    ck_assert_int_eq(p.offset[wv], -1);
    ck_assert_int_eq(p.offset[x], -1);
    ck_assert_uint_lt(p.arena_bytes, p.total_bytes);
    xf_memplan_free(&p);
    xf_graph_free(g);
}
END_TEST

START_TEST(unknown_shape_is_reported)
{
    xf_graph *g = xf_graph_create("unknown");
    xf_shape s = xf_shape_make(1, (int64_t[]){4});
    int x = xf_graph_add_input(g, "x", XF_DT_FLOAT, &s);
    int y = xf_graph_add_value(g, "later", XF_DT_FLOAT, NULL);
    xf_graph_add_node(g, XF_OP_RELU, "relu", 1, &x, 1, &y);
    xf_graph_add_output(g, y);
    xf_memplan p;
    xf_error err = {0};
    ck_assert_int_eq(xf_memplan_compute(g, &p, &err), XF_ERR_UNSUPPORTED);
    ck_assert_ptr_null(p.offset);
    xf_graph_free(g);
}
END_TEST

START_TEST(session_uses_the_plan)
{
    /* the diamond in a session: static mode, planned, same numbers as
     * dynamic mode (which allocates per node) */
    xf_graph *g = xf_graph_create("diamond");
    xf_shape s = xf_shape_make(2, (int64_t[]){8, 8});
    int x = xf_graph_add_input(g, "x", XF_DT_FLOAT, &s);
    int a = add_unary(g, XF_OP_RELU, x, &s);
    int b = add_unary(g, XF_OP_SIGMOID, a, &s);
    int c = add_unary(g, XF_OP_TANH, a, &s);
    int d = xf_graph_add_value(g, "d", XF_DT_FLOAT, &s);
    xf_graph_add_node(g, XF_OP_ADD, "add", 2, (int[]){b, c}, 1, &d);
    xf_graph_add_output(g, add_unary(g, XF_OP_EXP, d, &s));
    xf_graph_add_output(g, b);
    xf_tensor *in = xf_tensor_random(XF_DT_FLOAT, &s, 7);
    xf_tensor *out[2][2];
    for (int mode = 0; mode < 2; mode++) {
        xf_session_options opt = {.force_dynamic = mode == 1};
        xf_session *sess;
        xf_error err = {0};
        ck_assert_msg(xf_session_create(g, 17, "cpu_ref", &opt, &sess, &err) == XF_OK, "%s", err.msg);
        const xf_memplan *p = xf_session_memplan(sess);
        if (mode == 0) {
            ck_assert_ptr_nonnull(p);
            check_plan(xf_session_graph(sess), p);
            ck_assert_uint_lt(p->arena_bytes, p->total_bytes);
        } else {
            ck_assert_ptr_null(p);
        }
        /* twice: the second run reuses the arena it overwrote */
        for (int r = 0; r < 2; r++) {
            ck_assert_msg(xf_session_run(sess, &in, out[mode], &err) == XF_OK, "%s", err.msg);
            if (r == 0)
                for (int k = 0; k < 2; k++)
                    xf_tensor_release(out[mode][k]);
        }
        xf_session_free(sess);
    }
    for (int k = 0; k < 2; k++) {
        bool ok;
        ck_assert_int_eq(xf_tensor_compare(out[0][k], out[1][k], 0, 0, NULL, NULL, &ok, NULL), XF_OK);
        ck_assert(ok);
        xf_tensor_release(out[0][k]);
        xf_tensor_release(out[1][k]);
    }
    xf_tensor_release(in);
    xf_graph_free(g);
}
END_TEST

/* Runs g in a static session (its plan checked; twice, the second run
 * reusing the arena) and in a dynamic one, which copies every value, on
 * the same seeded random inputs: every output is the same. */
static void runs_as_copying(const xf_graph *g)
{
    xf_error err = {0};
    int ni = g->n_inputs, no = g->n_outputs;
    xf_tensor **in = calloc((size_t)ni + 1, sizeof *in), **out[2];
    out[0] = calloc((size_t)no + 1, sizeof **out);
    out[1] = calloc((size_t)no + 1, sizeof **out);
    ck_assert(in && out[0] && out[1]);
    for (int i = 0; i < ni; i++) {
        const xf_value *v = &g->values[g->inputs[i]];
        ck_assert_ptr_nonnull(in[i] = xf_tensor_random(v->dtype, &v->shape, 3 + (uint64_t)i));
    }
    for (int mode = 0; mode < 2; mode++) {
        xf_session_options opt = {.force_dynamic = mode == 1};
        xf_session *sess;
        ck_assert_msg(xf_session_create(g, 17, "cpu_ref", &opt, &sess, &err) == XF_OK, "%s", err.msg);
        if (mode == 0)
            check_plan(xf_session_graph(sess), xf_session_memplan(sess));
        for (int r = 0; r < 2; r++) {
            ck_assert_msg(xf_session_run(sess, in, out[mode], &err) == XF_OK, "%s", err.msg);
            for (int k = 0; r == 0 && k < no; k++)
                xf_tensor_release(out[mode][k]);
        }
        xf_session_free(sess);
    }
    for (int k = 0; k < no; k++) {
        bool ok;
        ck_assert(xf_shape_equal(&out[0][k]->shape, &out[1][k]->shape));
        ck_assert_int_eq(xf_tensor_compare(out[0][k], out[1][k], 0, 0, NULL, NULL, &ok, NULL), XF_OK);
        ck_assert_msg(ok, "output %d differs from the copying session's", k);
        xf_tensor_release(out[0][k]);
        xf_tensor_release(out[1][k]);
    }
    for (int i = 0; i < ni; i++)
        xf_tensor_release(in[i]);
    free(in);
    free(out[0]);
    free(out[1]);
}

/* A view op of x to shape s: Reshape reads s as its second input,
 * Unsqueeze axis 0. */
static int add_view(xf_graph *g, xf_op op, int x, const xf_shape *s)
{
    int y = xf_graph_add_value(g, NULL, XF_DT_FLOAT, s);
    int in[2] = {x, -1};
    if (op == XF_OP_RESHAPE || op == XF_OP_UNSQUEEZE) {
        int64_t zero = 0;
        xf_shape one = xf_shape_make(1, (int64_t[]){op == XF_OP_RESHAPE ? s->ndim : 1});
        xf_tensor *t = xf_tensor_from_data(XF_DT_INT64, &one, op == XF_OP_RESHAPE ? s->dims : &zero);
        ck_assert_ptr_nonnull(t);
        in[1] = xf_graph_add_initializer(g, NULL, t);
        xf_tensor_release(t);
    }
    xf_graph_add_node(g, op, NULL, in[1] >= 0 ? 2 : 1, in, 1, &y);
    return y;
}

/* Reshape, Unsqueeze and Identity of a computed value share its bytes,
 * which then live until the views' last reader; views of a graph input
 * (bound per run) are copies.  In a session the view nodes do not run,
 * and the outputs are those of a session that copies (dynamic mode). */
START_TEST(views_share_bytes)
{
    xf_graph *g = xf_graph_create("views");
    xf_shape s = xf_shape_make(2, (int64_t[]){4, 6}), flat = xf_shape_make(1, (int64_t[]){24});
    xf_shape s3 = xf_shape_make(3, (int64_t[]){1, 4, 6});
    int x = xf_graph_add_input(g, "x", XF_DT_FLOAT, &s);
    int xi = add_view(g, XF_OP_IDENTITY, x, &s); /* of a graph input: a copy */
    int a = add_unary(g, XF_OP_RELU, xi, &s);
    int b = add_view(g, XF_OP_RESHAPE, a, &flat);
    int c = add_unary(g, XF_OP_EXP, x, &s); /* made while a is held by its views */
    int d = add_view(g, XF_OP_IDENTITY, b, &flat);
    int e = add_unary(g, XF_OP_NEG, c, &s);
    int f = add_view(g, XF_OP_UNSQUEEZE, e, &s3);
    int y = add_unary(g, XF_OP_SIGMOID, d, &flat);
    xf_graph_add_output(g, y);
    xf_graph_add_output(g, f); /* a view as a graph output */
    xf_memplan p;
    xf_error err = {0};
    ck_assert_msg(xf_memplan_compute(g, &p, &err) == XF_OK, "%s", err.msg);
    check_plan(g, &p);
    ck_assert_int_eq(p.alias[xi], -1);
    ck_assert_int_eq(p.alias[b], a);
    ck_assert_int_eq(p.alias[d], a);
    ck_assert_int_eq(p.alias[f], e);
    ck_assert_int_eq(p.last[a], g->values[y].producer); /* held for d's reader */
    ck_assert_int_eq(p.last[e], g->n_nodes);            /* f is a graph output */
    ck_assert(!xf_memplan_skips(&p, 0));
    ck_assert(xf_memplan_skips(&p, g->values[b].producer));
    xf_memplan_free(&p);

    runs_as_copying(g);
    xf_graph_free(g);
}
END_TEST

/* Concat node of a and b along axis into *y, of shape ys. */
static int add_concat(xf_graph *g, int a, int b, const xf_shape *ys, int64_t axis, int *y)
{
    *y = xf_graph_add_value(g, NULL, XF_DT_FLOAT, ys);
    int n = xf_graph_add_node(g, XF_OP_CONCAT, NULL, 2, (int[]){a, b}, 1, y);
    g->nodes[n].attrs.axis = axis;
    return n;
}

/* A Concat along its first dim of size over 1 (those before it 1) gets
 * its inputs in its output's bytes, each at its place, and does not run,
 * also when that output is an input of another such Concat; one whose
 * earlier dims are not 1, one of a graph input and one whose second input
 * would start off a 64-byte boundary are run. */
START_TEST(concat_in_place)
{
    xf_graph *g = xf_graph_create("concat");
    xf_shape s = xf_shape_make(3, (int64_t[]){1, 4, 8}), two = xf_shape_make(3, (int64_t[]){2, 4, 8});
    xf_shape odd = xf_shape_make(2, (int64_t[]){1, 3});
    int x = xf_graph_add_input(g, "x", XF_DT_FLOAT, &s), x2 = xf_graph_add_input(g, "x2", XF_DT_FLOAT, &two);
    int xo = xf_graph_add_input(g, "xo", XF_DT_FLOAT, &odd);
    int a = add_unary(g, XF_OP_RELU, x, &s), b = add_unary(g, XF_OP_EXP, x, &s);
    xf_shape cs = xf_shape_make(3, (int64_t[]){1, 8, 8});
    int c, cat = add_concat(g, a, b, &cs, 1, &c);
    int d = add_unary(g, XF_OP_SIGMOID, c, &cs);
    int e = add_unary(g, XF_OP_NEG, a, &s); /* a read after the Concat */
    /* dims before the axis not 1: a copy */
    int a2 = add_unary(g, XF_OP_RELU, x2, &two), b2 = add_unary(g, XF_OP_TANH, x2, &two);
    xf_shape c2s = xf_shape_make(3, (int64_t[]){2, 8, 8});
    int c2, cat2 = add_concat(g, a2, b2, &c2s, 1, &c2);
    /* a graph input among the inputs, and 12-byte inputs: copies */
    int c3, cat3 = add_concat(g, x, add_unary(g, XF_OP_ABS, x, &s), &cs, 1, &c3);
    int ao = add_unary(g, XF_OP_RELU, xo, &odd), bo = add_unary(g, XF_OP_EXP, xo, &odd);
    xf_shape c4s = xf_shape_make(2, (int64_t[]){1, 6});
    int c4, cat4 = add_concat(g, ao, bo, &c4s, -1, &c4);
    /* the Concat's output in another Concat: its inputs move with it */
    int h = add_unary(g, XF_OP_TANH, x, &s);
    xf_shape fs = xf_shape_make(3, (int64_t[]){1, 12, 8});
    int f, cat5 = add_concat(g, c, h, &fs, 1, &f);
    int outs[] = {d, e, c2, c3, c4, f};
    for (int k = 0; k < 6; k++)
        xf_graph_add_output(g, outs[k]);
    xf_memplan p;
    xf_error err = {0};
    ck_assert_msg(xf_memplan_compute(g, &p, &err) == XF_OK, "%s", err.msg);
    check_plan(g, &p);
    ck_assert_int_eq(p.alias[c], f);
    ck_assert_int_eq(p.alias[a], f);
    ck_assert_int_eq(p.alias[b], f);
    ck_assert_int_eq(p.alias[h], f);
    ck_assert_uint_eq(p.alias_offset[a], 0);
    ck_assert_uint_eq(p.alias_offset[b], 4 * 8 * sizeof(float));
    ck_assert_uint_eq(p.alias_offset[h], 8 * 8 * sizeof(float));
    ck_assert(p.skip[cat] && p.skip[cat5] && !p.skip[cat2] && !p.skip[cat3] && !p.skip[cat4]);
    ck_assert_int_eq(p.alias[a2], -1);
    ck_assert_int_eq(p.alias[ao], -1);
    ck_assert_int_eq(p.first[f], g->values[a].producer); /* from its first input on */
    xf_memplan_free(&p);

    runs_as_copying(g);
    xf_graph_free(g);
}
END_TEST

/* Split node of x along axis 1 into two halves of shape hs. */
static int add_split(xf_graph *g, int x, const xf_shape *hs, int *y)
{
    int64_t sizes[2] = {hs->dims[1], hs->dims[1]};
    xf_shape two = xf_shape_make(1, (int64_t[]){2});
    xf_tensor *t = xf_tensor_from_data(XF_DT_INT64, &two, sizes);
    ck_assert_ptr_nonnull(t);
    int in[2] = {x, xf_graph_add_initializer(g, NULL, t)};
    xf_tensor_release(t);
    y[0] = xf_graph_add_value(g, NULL, XF_DT_FLOAT, hs);
    y[1] = xf_graph_add_value(g, NULL, XF_DT_FLOAT, hs);
    int n = xf_graph_add_node(g, XF_OP_SPLIT, NULL, 2, in, 2, y);
    g->nodes[n].attrs.axis = 1;
    return n;
}

/* A Split along its first dim of size over 1 makes views of its input's
 * bytes and does not run, also of a Concat's output written in place; one
 * whose earlier dims are not 1 is run, and so is one with an output that
 * a Concat reads (which then takes it in place). */
START_TEST(split_views)
{
    xf_graph *g = xf_graph_create("split");
    xf_shape s = xf_shape_make(3, (int64_t[]){1, 8, 8}), h = xf_shape_make(3, (int64_t[]){1, 4, 8});
    xf_shape two = xf_shape_make(3, (int64_t[]){2, 8, 8}), h2 = xf_shape_make(3, (int64_t[]){2, 4, 8});
    int x = xf_graph_add_input(g, "x", XF_DT_FLOAT, &s), x2 = xf_graph_add_input(g, "x2", XF_DT_FLOAT, &two);
    int a = add_unary(g, XF_OP_RELU, x, &s), y[2], y2[2], z[2];
    int sp = add_split(g, a, &h, y);
    int e = add_unary(g, XF_OP_EXP, y[1], &h);
    /* Concat of two halves, split again: views of the Concat's bytes */
    int c, cat = add_concat(g, add_unary(g, XF_OP_NEG, y[0], &h), e, &s, 1, &c);
    int sp3 = add_split(g, c, &h, z);
    int sp2 = add_split(g, add_unary(g, XF_OP_TANH, x2, &two), &h2, y2);
    /* an output read by a Concat: the Split copies, the Concat is in place */
    int w[2], sp4 = add_split(g, add_unary(g, XF_OP_ABS, x, &s), &h, w);
    int c5, cat5 = add_concat(g, w[0], add_unary(g, XF_OP_SIGMOID, w[1], &h), &s, 1, &c5);
    int outs[] = {add_unary(g, XF_OP_SIGMOID, z[0], &h), z[1], y2[0], y2[1], a, c5};
    for (int k = 0; k < 6; k++)
        xf_graph_add_output(g, outs[k]);
    xf_memplan p;
    xf_error err = {0};
    ck_assert_msg(xf_memplan_compute(g, &p, &err) == XF_OK, "%s", err.msg);
    check_plan(g, &p);
    ck_assert(p.skip[sp] && p.skip[sp3] && p.skip[cat] && !p.skip[sp2] && !p.skip[sp4] && p.skip[cat5]);
    ck_assert_int_eq(p.alias[y[0]], a);
    ck_assert_uint_eq(p.alias_offset[y[1]], 4 * 8 * sizeof(float));
    ck_assert_int_eq(p.alias[z[0]], c);
    ck_assert_int_eq(p.alias[z[1]], c);
    ck_assert_int_eq(p.offset[z[1]], p.offset[e]);
    ck_assert_int_eq(p.alias[y2[0]], -1);
    xf_memplan_free(&p);

    runs_as_copying(g);
    xf_graph_free(g);
}
END_TEST

static int add_sum(xf_graph *g, int a, int b, const xf_shape *s, int *node)
{
    int y = xf_graph_add_value(g, NULL, XF_DT_FLOAT, s);
    *node = xf_graph_add_node(g, XF_OP_ADD, NULL, 2, (int[]){a, b}, 1, &y);
    return y;
}

/* A node whose group adds its work to one input's bytes (a residual Add
 * folded into a convolution as a sum post-op: xf_backend.accumulates_into)
 * has its output take those bytes: also where they already hold an
 * earlier such output (a chain of residual Adds); not where a later node
 * reads them, where they are a graph output's, where another node of the
 * group reads them (the host convolution reading its residual), nor where
 * the output's own bytes are held by another value already (a view). */
START_TEST(accumulate_in_place)
{
    xf_graph *g = xf_graph_create("accumulate");
    xf_shape s = xf_shape_make(2, (int64_t[]){4, 16});
    int x = xf_graph_add_input(g, "x", XF_DT_FLOAT, &s), add[7];
    int a = add_unary(g, XF_OP_RELU, x, &s);
    int y = add_sum(g, add_unary(g, XF_OP_NEG, x, &s), a, &s, &add[0]);
    int z = add_sum(g, add_unary(g, XF_OP_EXP, x, &s), y, &s, &add[1]);
    /* read after its Add: keeps its bytes */
    int c = add_unary(g, XF_OP_TANH, x, &s);
    int d = add_sum(g, add_unary(g, XF_OP_ABS, x, &s), c, &s, &add[2]);
    int late = add_unary(g, XF_OP_SIGMOID, c, &s);
    /* a graph output */
    int f = add_unary(g, XF_OP_SOFTSIGN, x, &s);
    int e = add_sum(g, add_unary(g, XF_OP_NEG, z, &s), f, &s, &add[3]);
    /* the group's first node reads it too: its host is node h */
    int m = add_unary(g, XF_OP_RELU, e, &s), h = g->n_nodes;
    int hm = add_unary(g, XF_OP_EXP, m, &s);
    int k = add_sum(g, hm, m, &s, &add[4]);
    /* the same shape in a group whose host does not read it */
    int m2 = add_unary(g, XF_OP_RELU, k, &s), h2 = g->n_nodes;
    int k2 = add_sum(g, add_unary(g, XF_OP_EXP, x, &s), m2, &s, &add[5]);
    /* an output whose bytes a view holds already */
    int k3 = add_sum(g, add_unary(g, XF_OP_NEG, x, &s), add_unary(g, XF_OP_RELU, x, &s), &s, &add[6]);
    int view = add_unary(g, XF_OP_SIGMOID, add_view(g, XF_OP_IDENTITY, k3, &s), &s);
    int outs[] = {z, d, late, f, k2, view};
    for (int o = 0; o < 6; o++)
        xf_graph_add_output(g, outs[o]);
    int *group = malloc(sizeof *group * (size_t)g->n_nodes);
    xf_accumulate *acc = malloc(sizeof *acc * (size_t)g->n_nodes);
    for (int i = 0; i < g->n_nodes; i++) {
        group[i] = i;
        acc[i] = (xf_accumulate){-1, -1};
    }
    group[add[4]] = h;
    group[add[5]] = h2;
    for (int i = 0; i < 7; i++)
        acc[add[i]] = (xf_accumulate){add[i], 1};
    xf_memplan p;
    xf_error err = {0};
    ck_assert_msg(xf_memplan_compute_grouped(g, group, NULL, acc, &p, &err) == XF_OK, "%s", err.msg);
    check_plan(g, &p);
    ck_assert_int_eq(p.alias[y], a);
    ck_assert_int_eq(p.alias[z], a);
    ck_assert_int_eq(p.alias[d], -1);
    ck_assert_int_eq(p.alias[e], -1);
    ck_assert_int_eq(p.alias[k], -1);
    ck_assert_int_eq(p.alias[k2], m2);
    ck_assert_int_eq(p.alias[k3], -1);
    ck_assert_int_eq(p.offset[z], p.offset[a]);
    xf_memplan_free(&p);
    /* without the backend's word, nothing is taken */
    ck_assert_msg(xf_memplan_compute_grouped(g, group, NULL, NULL, &p, &err) == XF_OK, "%s", err.msg);
    ck_assert_int_eq(p.alias[y], -1);
    xf_memplan_free(&p);
    free(group);
    free(acc);
    xf_graph_free(g);
}
END_TEST

/* A session's limit on one tensor's bytes: a static value over it fails
 * the creation, a Range whose length comes from its input the run; both
 * name the value. */
START_TEST(tensor_limit)
{
    xf_error err = {0};
    xf_session *sess = NULL;
    xf_session_options opt = {.max_tensor_bytes = 1024};
    xf_graph *g = xf_graph_create("static");
    xf_shape big = xf_shape_make(1, (int64_t[]){300});
    int x = xf_graph_add_input(g, "x", XF_DT_FLOAT, &big), wide = xf_graph_add_value(g, "wide", XF_DT_FLOAT, &big);
    xf_graph_add_node(g, XF_OP_RELU, "relu", 1, &x, 1, &wide);
    xf_graph_add_output(g, wide);
    ck_assert_int_eq(xf_session_create(g, 17, "cpu_ref", &opt, &sess, &err), XF_ERR_LIMIT);
    ck_assert_msg(strstr(err.msg, "'wide' needs 1200 bytes, over the session's limit of 1024"), "%s", err.msg);
    xf_graph_free(g);

    g = xf_graph_create("range");
    xf_shape scalar = {.ndim = 0};
    int64_t zero = 0, one = 1;
    xf_tensor *t0 = xf_tensor_from_data(XF_DT_INT64, &scalar, &zero);
    xf_tensor *t1 = xf_tensor_from_data(XF_DT_INT64, &scalar, &one);
    int n = xf_graph_add_input(g, "n", XF_DT_INT64, &scalar);
    int r = xf_graph_add_value(g, "r", XF_DT_INT64, NULL);
    xf_graph_add_node(g, XF_OP_RANGE, "range", 3,
                      (int[]){xf_graph_add_initializer(g, "start", t0), n, xf_graph_add_initializer(g, "delta", t1)}, 1,
                      &r);
    xf_graph_add_output(g, r);
    xf_tensor_release(t0);
    xf_tensor_release(t1);
    ck_assert_msg(xf_session_create(g, 17, "cpu_ref", &opt, &sess, &err) == XF_OK, "%s", err.msg);
    for (int64_t len = 100; len <= 200; len += 100) {
        xf_tensor *in = xf_tensor_from_data(XF_DT_INT64, &scalar, &len), *out = NULL;
        xf_status st = xf_session_run(sess, &in, &out, &err);
        if (len == 100) {
            ck_assert_msg(st == XF_OK, "%s", err.msg);
            ck_assert_int_eq(out->shape.dims[0], 100);
            xf_tensor_release(out);
        } else {
            ck_assert_int_eq(st, XF_ERR_LIMIT);
            ck_assert_msg(strstr(err.msg, "'r' needs 1600 bytes"), "%s", err.msg);
        }
        xf_tensor_release(in);
    }
    xf_session_free(sess);
    xf_graph_free(g);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("memplan");
    TCase *tc = tcase_create("memplan");
    tcase_add_test(tc, chain_alternates_two_buffers);
    tcase_add_test(tc, diamond_keeps_both_branches);
    tcase_add_test(tc, mixed_sizes_and_unused_outputs);
    tcase_add_test(tc, unknown_shape_is_reported);
    tcase_add_test(tc, session_uses_the_plan);
    tcase_add_test(tc, views_share_bytes);
    tcase_add_test(tc, tensor_limit);
    tcase_add_test(tc, accumulate_in_place);
    tcase_add_test(tc, concat_in_place);
    tcase_add_test(tc, split_views);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
