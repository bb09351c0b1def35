/* See graph_build_util.h. */
#include "graph_build_util.h"

#include "kernel_case_util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void gb_init(gbuild *b, unsigned seed)
{
    memset(b, 0, sizeof *b);
    b->g = mk_graph("g");
    b->seed = seed ? seed : 1;
}

xf_tensor *gb_rand(gbuild *b, int ndim, const int64_t *dims)
{
    xf_shape s = xf_shape_make(ndim, dims);
    xf_tensor *t = xf_tensor_create(XF_DT_FLOAT, &s);
    ck_assert_ptr_nonnull(t);
    float *p = t->data;
    for (int64_t i = 0; i < xf_shape_numel(&s); i++) {
        b->seed = b->seed * 1103515245u + 12345u;
        p[i] = (float)((b->seed >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
    return t;
}

static const char *fresh(gbuild *b)
{
    char *name = zalloc(16);
    snprintf(name, 16, "t%d", b->next++);
    return name;
}

const char *gb_input(gbuild *b, const char *name, xf_tensor *t, const char *const *params)
{
    ck_assert_int_lt(b->n_feeds, GB_MAX_FEEDS);
    int k = b->n_feeds++;
    b->feeds[k] = t;
    int64_t dims[XF_MAX_DIMS];
    for (int i = 0; i < t->shape.ndim; i++) {
        bool sym = params && params[i];
        b->params[k][i] = sym ? params[i] : NULL;
        dims[i] = sym ? -1 : t->shape.dims[i];
    }
    PUSH(b->g->n_input, b->g->input, mk_vi(name, t->dtype, t->shape.ndim, dims, b->params[k]));
    return name;
}

const char *gb_const(gbuild *b, xf_tensor *t)
{
    const char *name = fresh(b);
    int64_t *dims = zalloc(sizeof *dims * XF_MAX_DIMS); /* the proto points at them */
    memcpy(dims, t->shape.dims, sizeof *dims * (size_t)t->shape.ndim);
    void *data = zalloc(t->nbytes + 1);
    memcpy(data, t->data, t->nbytes);
    PUSH(b->g->n_initializer, b->g->initializer, mk_raw(name, t->dtype, t->shape.ndim, dims, data, t->nbytes));
    xf_tensor_release(t);
    return name;
}

const char *gb_ints(gbuild *b, int n, const int64_t *v) { return gb_const(b, mk(XF_DT_INT64, 1, (int64_t[]){n}, v)); }

const char *gb_float(gbuild *b, float v) { return gb_const(b, mk(XF_DT_FLOAT, 0, NULL, &v)); }

Onnx__NodeProto *gb_node(gbuild *b, const char *op, const char *domain, const char *const *ins, int n_out,
                         const char **outs)
{
    const char *names[GB_MAX_OUTS + 1] = {NULL};
    ck_assert_int_le(n_out, GB_MAX_OUTS);
    for (int k = 0; k < n_out; k++) {
        names[k] = fresh(b);
        if (outs)
            outs[k] = names[k];
    }
    Onnx__NodeProto *n = mk_node(op, NULL, ins, names);
    n->domain = (char *)domain;
    PUSH(b->g->n_node, b->g->node, n);
    return n;
}

const char *gb_matmul_nbits(gbuild *b, const char *const *ins, int64_t k, int64_t n, int64_t bits, int64_t block,
                            int64_t accuracy)
{
    const char *y;
    const char *six[7] = {ins[0], ins[1], ins[2], ins[3], ins[4], ins[5], NULL};
    Onnx__NodeProto *nd = gb_node(b, "MatMulNBits", "com.microsoft", six, 1, &y);
    attr_int(nd, "K", k);
    attr_int(nd, "N", n);
    attr_int(nd, "bits", bits);
    attr_int(nd, "block_size", block);
    attr_int(nd, "accuracy_level", accuracy);
    return y;
}

void gb_attr_ints(Onnx__NodeProto *n, const char *name, int count, const int64_t *v)
{
    int64_t *copy = zalloc(sizeof *copy * (size_t)(count > 0 ? count : 1));
    memcpy(copy, v, sizeof *copy * (size_t)count);
    attr_ints(n, name, count, copy);
}

const char *gb_op(gbuild *b, const char *op, const char *const *ins)
{
    const char *out;
    gb_node(b, op, NULL, ins, 1, &out);
    return out;
}

void gb_pair(gbuild *b, const char *mine, const char *ref, int elem)
{
    PUSH(b->g->n_output, b->g->output, mk_vi(mine, elem, -1, NULL, NULL));
    PUSH(b->g->n_output, b->g->output, mk_vi(ref, elem, -1, NULL, NULL));
    b->n_pairs++;
}

static void compare(const xf_tensor *got, const xf_tensor *want, double tol, const char *what)
{
    ck_assert_msg(got->dtype == want->dtype && xf_shape_equal(&got->shape, &want->shape), "%s: shape or type differs",
                  what);
    double worst = 0, big = 1e-6;
    for (int64_t i = 0; i < xf_shape_numel(&want->shape); i++) {
        double g = got->dtype == XF_DT_INT32 ? ((const int32_t *)got->data)[i] : ((const float *)got->data)[i];
        double w = want->dtype == XF_DT_INT32 ? ((const int32_t *)want->data)[i] : ((const float *)want->data)[i];
        ck_assert_msg(isfinite(g), "%s: element %lld is %g", what, (long long)i, g);
        worst = fabs(g - w) > worst ? fabs(g - w) : worst;
        big = fabs(w) > big ? fabs(w) : big;
    }
    ck_assert_msg(worst <= tol * big, "%s: differs by %g (largest %g)", what, worst, big);
}

void gb_check(gbuild *b, double tol, const char *what)
{
    Onnx__ModelProto *mp = mk_model(b->g, 17);
    add_opset(mp, "com.microsoft", 1);
    xf_shape shapes[GB_MAX_FEEDS];
    for (int i = 0; i < b->n_feeds; i++)
        shapes[i] = b->feeds[i]->shape;
    xf_load_options opt = {.feed_shapes = shapes, .n_feed_shapes = b->n_feeds};
    xf_model *m;
    xf_error e;
    ck_assert_msg(load_proto(mp, &opt, &m, &e) == XF_OK, "%s: %s", what, e.msg);
    int counts[XF_OP_COUNT + 1];
    xf_graph_count_ops(m->graph, counts);
    ck_assert_msg(counts[XF_OP_OPAQUE] == 0, "%s: a node stayed opaque", what);
    const char *backends[4];
    int nb = host_backends(backends);
    for (int be = 0; be < nb; be++)
        for (int dyn = 0; dyn < 2; dyn++) {
            xf_session_options so = {.force_dynamic = dyn};
            xf_session *s;
            ck_assert_msg(xf_session_create(m->graph, 17, backends[be], &so, &s, &e) == XF_OK, "%s on %s: %s", what,
                          backends[be], e.msg);
            xf_tensor *outs[2 * GB_MAX_OUTS] = {NULL};
            ck_assert_msg(xf_session_run(s, b->feeds, outs, &e) == XF_OK, "%s on %s: %s", what, backends[be], e.msg);
            for (int k = 0; k < b->n_pairs; k++) {
                char label[160];
                snprintf(label, sizeof label, "%s on %s%s, output %d", what, backends[be], dyn ? " (dynamic)" : "", k);
                compare(outs[2 * k], outs[2 * k + 1], tol, label);
            }
            for (int k = 0; k < 2 * b->n_pairs; k++)
                xf_tensor_release(outs[k]);
            xf_session_free(s);
        }
    xf_model_free(m);
    for (int i = 0; i < b->n_feeds; i++)
        xf_tensor_release(b->feeds[i]);
    b->n_feeds = 0;
}
