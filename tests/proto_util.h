/* Support for the proto test suites (see proto_util.c). */
#ifndef XF_PROTO_TEST_UTIL_H
#define XF_PROTO_TEST_UTIL_H

#include <check.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "onnx.pb-c.h"
#include "xf_proto.h"

#define TESTDATA XF_ONNX_TESTDATA

/* What a test builds is freed by the fixture's teardown.  Repeated fields
 * get arrays of a fixed capacity, so that they never move. */
enum { MAX_ALLOCS = 4096, MAX_ITEMS = 64 };

/* Appends p to a repeated field (count n, array items). */
#define PUSH(n, items, p)                                                                  \
    do {                                                                                   \
        if (!(items))                                                                      \
            (items) = zalloc(sizeof *(items) * MAX_ITEMS);                                 \
        ck_assert_uint_lt((n), MAX_ITEMS);                                                 \
        (items)[(n)++] = (p);                                                              \
    } while (0)

/* Warnings logged since capture_start(), one per line. */
extern char captured[8192];

void *zalloc(size_t n);
void free_allocs(void);
Onnx__NodeProto *mk_node(const char *op, const char *name, const char *const *ins, const char *const *outs);
Onnx__AttributeProto *mk_attr(Onnx__NodeProto *n, const char *name, Onnx__AttributeProto__AttributeType t);
void attr_int(Onnx__NodeProto *n, const char *name, int64_t v);
void attr_float(Onnx__NodeProto *n, const char *name, float v);
void attr_ints(Onnx__NodeProto *n, const char *name, int count, const int64_t *v);
void attr_string(Onnx__NodeProto *n, const char *name, const char *v);
void attr_floats(Onnx__NodeProto *n, const char *name, int count, const float *v);
void attr_strings(Onnx__NodeProto *n, const char *name, int count, const char *const *v);
/* A GRAPH attribute holding g. */
Onnx__AttributeProto *attr_graph(Onnx__NodeProto *n, const char *name, Onnx__GraphProto *g);
Onnx__ValueInfoProto *mk_vi(const char *name, int elem, int ndim, const int64_t *dims,
                          const char *const *params);
Onnx__TensorProto *mk_tensor(const char *name, int dtype, int ndim, const int64_t *dims);
/* An initializer of the n strings s. */
Onnx__TensorProto *mk_strings(const char *name, int ndim, const int64_t *dims, int n, const char *const *s);
Onnx__TensorProto *mk_raw(const char *name, int dtype, int ndim, const int64_t *dims, const void *data,
                           size_t nbytes);
Onnx__GraphProto *mk_graph(const char *name);
Onnx__ModelProto *mk_model(Onnx__GraphProto *g, int64_t opset);
void add_opset(Onnx__ModelProto *m, const char *domain, int64_t version);
/* An opset import of domain at version. */
Onnx__OperatorSetIdProto *mk_opset(const char *domain, int64_t version);
uint8_t *pack_model(const Onnx__ModelProto *m, size_t *len);
void write_bytes(const char *path, const void *buf, size_t len);
/* The ModelProto in file path (the test fails when it cannot be read);
 * free it with onnx__model_proto__free_unpacked. */
Onnx__ModelProto *unpack_model_file(const char *path);
/* mp's initializer called name (the test fails when there is none). */
Onnx__TensorProto *find_initializer(Onnx__ModelProto *mp, const char *name);
/* The ModelProto of fixture DIR/NAME.onnx. */
Onnx__ModelProto *unpack_fixture(const char *dir, const char *name);
/* The tensor in TensorProto file path; NULL when there is no such file. */
xf_tensor *load_tensor_file(const char *path);
/* A fixture a peer runtime wrote: DIR/NAME.onnx, its inputs NAME.in0.pb,
 * NAME.in1.pb, ... and the runtime's outputs NAME.out0.pb, ...  The inputs
 * (at most max; the count returned). */
int fixture_inputs(const char *dir, const char *name, xf_tensor **ins, int max);
/* m run on backend with ins gives the fixture's float outputs within
 * 2e-6 of the largest expected element (and outputs of other types
 * exactly). */
void check_fixture_outputs(const xf_model *m, xf_tensor *const *ins, const char *dir, const char *name,
                           const char *backend);
/* Each fixture names[i] of dir loads with a node of op, gives the
 * fixture's outputs on cpu_ref and (where the build has it) cpu, and
 * round-trips unchanged. */
void check_peer_fixtures(const char *dir, const char *const *names, int n, xf_op op);
void write_model(const Onnx__ModelProto *m, const char *path);
xf_status load_proto(const Onnx__ModelProto *mp, const xf_load_options *opt, xf_model **out, xf_error *e);
/* Loads graph g under opset (the test fails on an error) and counts its
 * nodes per op. */
xf_model *load_counting(Onnx__GraphProto *g, int64_t opset, int counts[XF_OP_COUNT + 1]);
const char *path_in(const char *dir, const char *file);
int count_files(const char *dir);
void assert_onnx_valid(const char *paths);
/* m saved as m.onnx in the test folder named dir passes onnx.checker. */
void assert_saved_valid(const xf_model *m, const char *dir);
/* Export of m is refused (XF_ERR_UNSUPPORTED) with a message holding
 * node, what and also (when not NULL). */
void expect_export_refused(const xf_model *m, const char *node, const char *what, const char *also);
void capture_start(void);
bool tensors_equal(const xf_tensor *a, const xf_tensor *b);
bool attrs_equal(const xf_attrs *a, const xf_attrs *b);
int find_node_by_output(const xf_graph *g, const char *name);
bool values_equal(const xf_value *a, const xf_value *b);
bool graphs_equal(const xf_graph *a, const xf_graph *b, char *why, size_t n);
bool models_equal(const xf_model *a, const xf_model *b, char *why, size_t n);
xf_model *roundtrip(const xf_model *m);
int find_node_op(const xf_graph *g, xf_op op);
/* The exported model of m (*buf holds its bytes; free both). */
Onnx__ModelProto *saved_proto(const xf_model *m, uint8_t **buf);
/* The exported model of m, which has one node (*buf holds its bytes). */
Onnx__ModelProto *exported(const xf_model *m, uint8_t **buf);
bool has_attr(const Onnx__NodeProto *n, const char *name);
/* t is FLOAT of dims and holds want (to 1e-6). */
void assert_values(const xf_tensor *t, int ndim, const int64_t *dims, const float *want);
/* A tensor of strings of shape s (copies of v). */
xf_tensor *string_tensor(xf_shape s, const char *const *v);
/* t is a tensor of strings of shape s holding want (what names it in messages). */
void assert_strings(const xf_tensor *t, xf_shape s, const char *const *want, const char *what);
/* Releases t[0..n). */
void release_all(xf_tensor **t, int n);
/* The backends that run graphs with run-time shapes: cpu_ref, and cpu
 * where this build has it; returns how many were written to names. */
int host_backends(const char **names);

#endif
