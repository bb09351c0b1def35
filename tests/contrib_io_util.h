/* Models of single contrib ops for the import/export suites: nodes of the
 * com.microsoft domain, declared inputs and outputs, whether a node stays
 * opaque, and checks of what loaded. */
#ifndef XF_CONTRIB_IO_UTIL_H
#define XF_CONTRIB_IO_UTIL_H

#include "proto_util.h"

/* A com.microsoft node. */
Onnx__NodeProto *ms_node(const char *op, const char *const *ins, const char *const *outs);
/* A graph input of ONNX type elem (ndim -1: no shape; params: symbolic dim names). */
void io_input(Onnx__GraphProto *g, const char *name, int elem, int ndim, const int64_t *dims,
              const char *const *params);
/* A graph output of ONNX type elem, shape left to inference. */
void io_output(Onnx__GraphProto *g, const char *name, int elem);
/* Loads one com.microsoft node of op (opset 17) over inputs named in ins
 * ("" omitted; declared float unless the name starts with i_ int32, l_
 * int64, u_ uint8) with n_out float outputs and attributes set by `set`;
 * checks the model round-trips unchanged; returns how many nodes stayed
 * opaque. */
int load_one(const char *op, const char *const *ins, int n_out, void (*set)(Onnx__NodeProto *));
/* A form of a node and whether it must stay opaque; check_forms loads
 * each with load_one. */
typedef struct opaque_form {
    const char *op;
    const char *const *ins;
    int n_out;
    void (*set)(Onnx__NodeProto *);
    int opaque;
} opaque_form;
void check_forms(const opaque_form *forms, size_t n);
/* The first node of m doing op (the test fails when there is none). */
const xf_node *node_of(const xf_model *m, xf_op op);
/* Checks that value's shape is dims. */
void shape_is(const xf_model *m, const char *value, int ndim, const int64_t *dims);

#endif
