/* xflow proto: ONNX import (ModelProto -> xf_model) and export (xf_model ->
 * ModelProto), plus single TensorProto files (the backend test data).
 *
 * What import keeps, and where:
 *  - known ops (default domain, listed in core/ops.def) become nodes with an
 *    xf_attrs block; a known op whose attributes that block cannot hold
 *    exactly is kept as an opaque node instead, as are ops of other domains;
 *    opaque nodes carry their original NodeProto bytes and are written back
 *    unchanged except for their input/output names;
 *  - values that subgraphs (If/Loop/Scan bodies) use from the enclosing graph
 *    by name become extra inputs of their opaque node, after the node's own
 *    (the stored NodeProto says how many are its own), so that they stay
 *    produced; export writes value names unchanged, and where a rewrite has
 *    replaced such a value, an Identity gives the new one the old name;
 *  - Constant nodes become initializers; initializers that old exporters also
 *    list as graph inputs are constants, not run-time inputs;
 *  - symbolic or missing dims of graph inputs come from xf_load_options or
 *    become 1 with a warning naming them;
 *  - what the IR does not model (functions, training info, the graph's doc
 *    string and quantization annotations, value_info of unknown values, types
 *    xflow cannot represent, model and graph fields of newer ONNX versions)
 *    travels in xf_model.extra and is merged back on export;
 *  - sparse initializers become dense ones; doc strings of known nodes,
 *    initializers and value_info entries are not kept.
 *
 * Every error is one line in xf_error; errors of xf_model_load start with the
 * file's path.  No input, however malformed, crashes or makes xflow allocate
 * more than the sizes it has checked. */
#ifndef XF_PROTO_H
#define XF_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xf_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The ONNX IR version and default-domain opset that ONNX 1.12 (the version
 * whose onnx.proto xflow is built against) defines; export uses them for
 * models built in memory that do not say which they follow. */
#define XF_ONNX_IR_VERSION 8
#define XF_ONNX_OPSET 17

/* Largest tensor import accepts unless xf_load_options says otherwise. */
#define XF_DEFAULT_MAX_TENSOR_BYTES ((size_t)4 << 30)

/* A static shape for one graph input, as given by --input-shape name=1x3x224x224. */
typedef struct xf_input_shape {
    const char *name;
    xf_shape shape;
} xf_input_shape;

/* The size a named symbolic dim (dim_param) stands for, as given by
 * --dim name=8: graph inputs use it instead of 1, and the dim stays
 * symbolic (recorded in xf_model.symbolic) rather than fixed. */
typedef struct xf_dim_size {
    const char *name;
    int64_t size;
} xf_dim_size;

typedef struct xf_load_options {
    const xf_input_shape *input_shapes; /* overrides for graph inputs */
    int n_input_shapes;
    const xf_dim_size *dim_sizes; /* sizes for symbolic dims that no override fixes */
    int n_dim_sizes;
    size_t max_tensor_bytes; /* larger tensors are refused before allocation; 0 = 4 GiB */
    /* Shapes of the tensors that will be fed to the first n_feed_shapes
     * graph inputs (initializers aside; xflow-run's --input files): an
     * input without an override takes their sizes in the dims the file
     * declares symbolic, named dims bound for every input as --dim binds
     * them (after --dim and --input-shape, which win).  Fixed dims stay as
     * the file declares them, so a tensor that contradicts one is refused
     * when fed. */
    const xf_shape *feed_shapes;
    int n_feed_shapes;
    /* The size a symbolic dim that nothing above sizes takes, past each
     * input's first dim (which, like a name first seen there, takes 1: a
     * batch); 0 or 1: 1 everywhere.  xflowc tries larger ones where 1 does
     * not fit (a detector that downsamples by 32). */
    int64_t guess_size;
    /* Where not NULL, set to whether any dim took guess_size (or the 1 in
     * its place): whether a larger guess_size would size the model
     * otherwise. */
    bool *guessed;
} xf_load_options;

/* Loads an ONNX model file.  opt may be NULL.  External data is looked up
 * relative to the model's directory. */
xf_status xf_model_load(const char *path, const xf_load_options *opt, xf_model **out, xf_error *err);
/* Loads a serialized ModelProto.  base_dir is where external data lives
 * (NULL: a model with external data is refused). */
xf_status xf_model_load_buffer(const void *buf, size_t len, const char *base_dir,
                               const xf_load_options *opt, xf_model **out, xf_error *err);

typedef struct xf_save_options {
    bool external_data;        /* put large initializers into a separate file */
    size_t external_threshold; /* bytes; tensors of at least this size go there */
} xf_save_options;

/* Writes m to path atomically (temporary file in the same directory, fsync,
 * rename): on failure nothing is left behind and an existing file at path is
 * untouched.  With external data, the tensors go to path + ".data" (referred
 * to by its base name, relative to the model), written the same way.  opt may
 * be NULL (everything inline). */
xf_status xf_model_save(const xf_model *m, const char *path, const xf_save_options *opt, xf_error *err);
/* Serializes m (everything inline) into a malloc'd buffer. */
xf_status xf_model_save_buffer(const xf_model *m, uint8_t **buf, size_t *len, xf_error *err);

/* Reads one TensorProto file (e.g. test_data_set_0/input_0.pb).  *name
 * (when name is not NULL) receives the tensor's name, malloc'd, or NULL. */
xf_status xf_tensor_load_pb(const char *path, xf_tensor **out, char **name, xf_error *err);
/* The same from bytes in memory; external data is looked up in base_dir
 * (NULL: external data is refused). */
xf_status xf_tensor_load_pb_buffer(const void *buf, size_t len, const char *base_dir, xf_tensor **out, char **name,
                                   xf_error *err);
/* Reads one SequenceProto file of tensors (a sequence input or output of
 * ONNX's test data) as a sequence (xf_sequence_create). */
xf_status xf_sequence_load_pb(const char *path, xf_tensor **out, xf_error *err);
xf_status xf_sequence_load_pb_buffer(const void *buf, size_t len, const char *base_dir, xf_tensor **out,
                                     xf_error *err);
/* Reads one OptionalProto file (of a tensor or a sequence of tensors) as
 * an optional (xf_optional_create); an empty one may not say what it would
 * hold (dtype undefined: a session gives it its input's type). */
xf_status xf_optional_load_pb_buffer(const void *buf, size_t len, const char *base_dir, xf_tensor **out,
                                     xf_error *err);
/* Reads one MapProto (int64 or string keys, each once; values a
 * SequenceProto of one-element tensors, as onnx.numpy_helper.from_dict
 * writes them) as a map (xf_map_create); an empty one's values are float
 * (a session gives it its input's type). */
xf_status xf_map_load_pb_buffer(const void *buf, size_t len, const char *base_dir, xf_tensor **out, xf_error *err);
/* Reads a TensorProto, SequenceProto (of tensors or maps), OptionalProto
 * or MapProto file, as a value of kind `kind` (a graph input's) is stored; *name (when name is not
 * NULL) receives a tensor's name as xf_tensor_load_pb gives it.  A
 * TensorProto file read as an optional tensor gives an optional holding
 * it.  Errors name the file. */
xf_status xf_value_load_pb(const char *path, xf_value_kind kind, xf_tensor **out, char **name, xf_error *err);
/* Writes t as a TensorProto file, atomically.  name may be NULL. */
xf_status xf_tensor_save_pb(const xf_tensor *t, const char *name, const char *path, xf_error *err);
/* Writes t as a TensorProto, SequenceProto or OptionalProto file (as it
 * is a tensor, a sequence (of tensors or maps) or an optional),
 * atomically.  name may be NULL. */
xf_status xf_value_save_pb(const xf_tensor *t, const char *name, const char *path, xf_error *err);

/* Parses "name=1x3x224x224" ("name=scalar" for rank 0).  out->name points to
 * *name_owned, which the caller frees. */
xf_status xf_parse_shape_arg(const char *arg, xf_input_shape *out, char **name_owned, xf_error *err);

#ifdef __cplusplus
}
#endif
#endif
