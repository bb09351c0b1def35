/* One-node graphs run on cpu_ref, for the suites that check kernels
 * against hand-computed values.  The names are short because those suites
 * read as tables of cases. */
#ifndef XF_KERNEL_CASE_UTIL_H
#define XF_KERNEL_CASE_UTIL_H

#include "xf_runtime.h"

#define DIMS(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__}
#define SCALAR 0, NULL

/* A tensor of dtype t holding a copy of data (the test fails when it cannot be made). */
xf_tensor *mk(xf_dtype t, int ndim, const int64_t *dims, const void *data);
#define F32(dims, ...) mk(XF_DT_FLOAT, dims, (float[]){__VA_ARGS__})
#define I64(dims, ...) mk(XF_DT_INT64, dims, (int64_t[]){__VA_ARGS__})
#define I32(dims, ...) mk(XF_DT_INT32, dims, (int32_t[]){__VA_ARGS__})
#define BOOLS(dims, ...) mk(XF_DT_BOOL, dims, (uint8_t[]){__VA_ARGS__})
/* A float tensor counting up from start. */
xf_tensor *iota_f32(int ndim, const int64_t *dims, float start);

/* Checks dtype, shape and values (to 1e-5, NaN equal to NaN), then
 * releases t. */
void expect(xf_tensor *t, xf_dtype dt, int ndim, const int64_t *dims, const double *want);
#define EXPECT(t, dt, dims, ...) expect(t, dt, dims, (double[]){__VA_ARGS__})

/* The most inputs a case has (QLinearConv's nine). */
#define XF_CASE_MAX_IN 9

/* A one-node graph: its op, attributes, inputs (NULL = omitted), which of
 * them are graph inputs (bit i set) rather than initializers, how many
 * outputs it has and which of them are omitted (bit k set). */
typedef struct node_case {
    xf_op op;
    xf_attrs a;
    int n_in;
    xf_tensor *in[XF_CASE_MAX_IN];
    unsigned feed;
    int n_out;
    unsigned omit_out;
    int64_t opset;
} node_case;

/* A case of op on n_in inputs (xf_tensor *, NULL for an omitted one), the
 * op's default attributes, one output, opset 17. */
node_case make_case(xf_op op, int n_in, ...);
xf_graph *case_graph(const node_case *c);
/* Releases the case's inputs and its attribute tensor (a.value). */
void release_case(node_case *c);
/* Runs the case in a session (static and forced dynamic mode, which must
 * agree exactly) and stores its outputs (those not omitted, in order);
 * releases the case's inputs. */
void run_case(node_case *c, xf_tensor **outs);
/* run_case for a case with one output: that output. */
xf_tensor *run1(node_case c);
/* Shape inference rejects the case with status st and a message naming
 * the node and holding msg; releases the case's inputs. */
void expect_infer_status(node_case c, xf_status st, const char *msg);
/* expect_infer_status with XF_ERR_INVALID. */
void expect_infer_error(node_case c, const char *msg);
/* The case's session is made on cpu_ref but its run fails with a message
 * naming the node and holding msg; releases the case's inputs. */
void expect_run_error(node_case c, const char *msg);

#endif
