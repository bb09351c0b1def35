/* Graph-building helpers shared by the core Check suites (test_core.c,
 * test_canon.c): small graphs in a line or two each. */
#ifndef XF_CORE_BUILDERS_H
#define XF_CORE_BUILDERS_H

#include "xf_core.h"

#include <check.h>
#include <stdint.h>
#include <string.h>

#define COUNT_OF(type, ...) ((int)(sizeof((type[]){__VA_ARGS__}) / sizeof(type)))
#define SHAPE(...) xf_shape_make(COUNT_OF(int64_t, __VA_ARGS__), (int64_t[]){__VA_ARGS__})
static const xf_shape SCALAR = {.ndim = 0};

static inline int input(xf_graph *g, const char *name, xf_dtype dt, xf_shape s)
{
    return xf_graph_add_input(g, name, dt, &s);
}

static inline int constant(xf_graph *g, const char *name, xf_dtype dt, xf_shape s, const void *data)
{
    xf_tensor *t = xf_tensor_from_data(dt, &s, data);
    ck_assert_ptr_nonnull(t);
    int id = xf_graph_add_initializer(g, name, t);
    xf_tensor_release(t);
    return id;
}

/* A 1-D int64 initializer: CONST_I64(g, 1, -1). */
#define CONST_I64(g, ...)                                                                          \
    constant(g, NULL, XF_DT_INT64, xf_shape_make(1, (int64_t[]){COUNT_OF(int64_t, __VA_ARGS__)}), \
             (int64_t[]){__VA_ARGS__})

static inline int scalar_i64(xf_graph *g, int64_t v) { return constant(g, NULL, XF_DT_INT64, SCALAR, &v); }

/* A node of op with n_out fresh outputs; returns the node index. */
static inline int node(xf_graph *g, xf_op op, const char *name, int n_in, const int *in, int n_out)
{
    int out[8];
    for (int k = 0; k < n_out; k++)
        out[k] = xf_graph_add_value(g, NULL, XF_DT_UNDEFINED, NULL);
    int i = xf_graph_add_node(g, op, name, n_in, in, n_out, out);
    ck_assert_int_ge(i, 0);
    return i;
}
#define NODE(g, op, ...) node(g, op, NULL, COUNT_OF(int, __VA_ARGS__), (int[]){__VA_ARGS__}, 1)

static inline int out0(const xf_graph *g, int n) { return g->nodes[n].outputs[0]; }
static inline xf_attrs *attrs(xf_graph *g, int n) { return &g->nodes[n].attrs; }

static inline void expect_shape(const xf_graph *g, int v, xf_shape want)
{
    char a[160], b[160];
    ck_assert_msg(xf_shape_equal(&g->values[v].shape, &want), "value '%s' has shape %s, expected %s",
                  g->values[v].name, xf_shape_str(&g->values[v].shape, a, sizeof a),
                  xf_shape_str(&want, b, sizeof b));
}

static inline void infer_ok(xf_graph *g, int64_t opset)
{
    xf_error e = {0};
    xf_status st = xf_graph_infer_shapes(g, opset, &e);
    ck_assert_msg(st == XF_OK, "inference failed: %s", e.msg);
}

static inline void validate_ok(const xf_graph *g)
{
    xf_error e = {0};
    ck_assert_msg(xf_graph_validate(g, &e) == XF_OK, "invalid: %s", e.msg);
}

#endif
