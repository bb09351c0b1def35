/* Declarations shared by the files of proto/; not part of the public API. */
#ifndef XF_PROTO_INTERNAL_H
#define XF_PROTO_INTERNAL_H

#include "onnx.pb-c.h"
#include <string.h>
#include "xf_core.h"
#include "xf_proto.h"

/* ---------------------------------------------------------------- util.c */

/* A bump allocator: export builds a whole ModelProto out of small pieces and
 * frees them in one go. */
typedef struct xfp_arena {
    struct xfp_chunk *head;
} xfp_arena;

void *xfp_alloc(xfp_arena *a, size_t n); /* zeroed; NULL when out of memory */
char *xfp_strdup(xfp_arena *a, const char *s);
void xfp_arena_free(xfp_arena *a);

/* A string -> int map for name lookups in bulk (keys are not copied). */
typedef struct xfp_name_map {
    size_t cap, count;
    const char **keys;
    int *vals;
} xfp_name_map;

bool xfp_map_put(xfp_name_map *m, const char *key, int val); /* false when out of memory */
int xfp_map_get(const xfp_name_map *m, const char *key);      /* -1 when absent */
void xfp_map_free(xfp_name_map *m);

/* Growable array of pointers. */
typedef struct xfp_ptr_list {
    size_t n, cap;
    void **items;
} xfp_ptr_list;

bool xfp_list_push(xfp_ptr_list *l, void *p);
void xfp_list_free(xfp_ptr_list *l);

/* Whether domains a and b are the same (NULL, "" and "ai.onnx" name ONNX's
 * default domain), and the version mp imports domain at (0 when it gives
 * none; -1 when it does not import it). */
bool xfp_same_domain(const char *a, const char *b);
int64_t xfp_model_opset(const Onnx__ModelProto *mp, const char *domain);

/* Keeps a message one line when it quotes names taken from a file, which may
 * hold any byte: control characters become '?'. */
void xfp_error_one_line(xf_error *err);

/* ---------------------------------------------------------------- file_io.c */

/* Refuses protobuf bytes whose messages (of type desc) nest deeper than
 * max_depth, before protobuf-c's recursive unpacking sees them. */
#define XFP_MAX_MESSAGE_DEPTH 256
/* Limits on a graph's size, far above any real model, so that absurd
 * claims are refused with a clear error rather than processed. */
#define XFP_MAX_NODES (1 << 22)
#define XFP_MAX_NODE_ARITY (1 << 16)
xf_status xfp_check_depth(const void *bytes, size_t len, const ProtobufCMessageDescriptor *desc, int max_depth,
                          xf_error *err);
xf_status xfp_read_file(const char *path, uint8_t **buf, size_t *len, xf_error *err);
/* Directory part of path ("." when there is none); malloc'd, NULL when out of memory. */
char *xfp_dirname(const char *path);

/* A file written under a temporary name next to its destination and renamed
 * into place only when everything has been written and synced. */
typedef struct xfp_atomic_file {
    int fd;
    char *path;
    char *tmp_path;
} xfp_atomic_file;

xf_status xfp_atomic_open(xfp_atomic_file *f, const char *path, xf_error *err);
xf_status xfp_atomic_write(xfp_atomic_file *f, const void *buf, size_t len, xf_error *err);
/* fsync and close; the file still has its temporary name. */
xf_status xfp_atomic_finish(xfp_atomic_file *f, xf_error *err);
/* Renames a finished file into place. */
xf_status xfp_atomic_commit(xfp_atomic_file *f, xf_error *err);
/* Releases f; removes the temporary file unless it was committed.  Safe in
 * any state. */
void xfp_atomic_release(xfp_atomic_file *f);
/* open + write + finish + commit. */
xf_status xfp_write_file_atomic(const char *path, const void *buf, size_t len, xf_error *err);

/* ---------------------------------------------------------------- tensor_pb.c */

/* Where tensor data may come from and how much of it is acceptable. */
typedef struct xfp_tensor_src {
    const char *base_dir; /* directory for external data; NULL refuses it */
    size_t max_bytes;
} xfp_tensor_src;

/* TensorProto -> new tensor.  `what` names the tensor in errors
 * ("initializer 'w'"). */
xf_status xfp_tensor_decode(const Onnx__TensorProto *tp, const char *what, const xfp_tensor_src *src,
                            xf_tensor **out, xf_error *err);
/* SparseTensorProto -> new dense tensor. */
xf_status xfp_sparse_decode(const Onnx__SparseTensorProto *sp, const char *what, const xfp_tensor_src *src,
                            xf_tensor **out, xf_error *err);

/* Receives the data of tensors that go to an external data file. */
typedef struct xfp_external_sink {
    xfp_atomic_file *file;
    const char *location; /* as written into the model: relative to its directory */
    size_t threshold;
    uint64_t offset;      /* bytes written so far */
} xfp_external_sink;

/* tensor -> TensorProto whose pieces live in the arena and whose data points
 * into t (no copy).  With a sink, data of at least its threshold is written
 * to the sink's file instead. */
xf_status xfp_tensor_encode(const xf_tensor *t, const char *name, xfp_arena *a, xfp_external_sink *sink,
                            Onnx__TensorProto *tp, xf_error *err);

/* ---------------------------------------------------------------- value_types.c */

/* Whether a declared dim is a size: a dim_value of 0 or more.  A negative
 * one (-1, which some exporters write for a dynamic dim and ONNX Runtime
 * takes as unknown) is taken as an unnamed symbolic dim. */
static inline bool xfp_dim_is_size(const Onnx__TensorShapeProto__Dimension *d)
{
    return d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && d->dim_value >= 0;
}

/* A declared dim's symbol: its dim_param, "" where it has none or "?",
 * which paddle2onnx writes for each unknown dim (two of them in one input,
 * height and width, are not tied to one size: ONNX Runtime takes any). */
static inline const char *xfp_dim_name(const Onnx__TensorShapeProto__Dimension *d)
{
    return d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && strcmp(d->dim_param, "?") != 0
               ? d->dim_param
               : "";
}

/* Resolution of symbolic dims (dim_param) to numbers: bound by --input-shape
 * overrides, or to 1 for graph inputs without one. */
typedef struct xfp_symbol {
    const char *name; /* the dim_param (not copied) */
    int64_t value;
    bool guessed; /* not fixed by an override: the dim stays symbolic */
    bool sized;   /* its value given by a --dim size rather than taken as 1 */
} xfp_symbol;

typedef struct xfp_symbols {
    xfp_name_map index; /* symbol -> slot */
    xfp_symbol *slots;
    size_t cap;
    int64_t guess; /* xf_load_options.guess_size */
    bool guessed;  /* a dim took it (or 1 in its place) */
} xfp_symbols;

void xfp_symbols_free(xfp_symbols *s);

/* The declared type of a graph input, resolved to a static shape (symbols
 * bound as described in xf_proto.h; warnings for guessed dims).  `override`
 * may be NULL; so may `feed`, the shape of the tensor to be fed, which
 * sizes unnamed symbolic dims when its rank matches.  A type xflow cannot
 * represent (sequence, map, no shape) gives XF_DT_UNDEFINED or ndim -1. */
xf_status xfp_resolve_input_type(const Onnx__ValueInfoProto *vi, const xf_shape *override, const xf_shape *feed,
                                 xfp_symbols *syms, xf_dtype *dtype, xf_shape *shape, bool *guessed, xf_error *err);
/* Binds a named dim to the size of a tensor to be fed, unless something
 * bound it already. */
xf_status xfp_bind_feed_size(xfp_symbols *syms, const char *name, int64_t size, xf_error *err);
/* Binds symbol name to a --dim size (it stays symbolic); an error when an
 * override already fixed it to another size. */
xf_status xfp_bind_dim_size(xfp_symbols *syms, const char *name, int64_t size, xf_error *err);
/* Binds the symbols in vi's dims to the values of an --input-shape override. */
xf_status xfp_bind_override(const Onnx__ValueInfoProto *vi, const xf_shape *override, xfp_symbols *syms,
                            xf_error *err);
/* The declared type of any other value (output, value_info): *dtype is
 * XF_DT_UNDEFINED and shape->ndim -1 for what is not known (symbols already
 * bound count as known).  True when both are known. */
bool xfp_declared_type(const Onnx__TypeProto *type, const xfp_symbols *syms, xf_dtype *dtype, xf_shape *shape);
/* The element type of a tensor type when it is one xflow does not know
 * (float8, 4-bit, ...), else 0. */
int32_t xfp_foreign_elem_type(const Onnx__TypeProto *type);
/* ONNX's name of such a type ("float8e4m3fn"), NULL for one it lacks. */
const char *xfp_foreign_type_name(int32_t t);
/* TypeProto for a tensor of dtype and shape (no shape field when ndim < 0). */
Onnx__TypeProto *xfp_type_encode(xf_dtype dtype, const xf_shape *shape, xfp_arena *a);
/* A sequence of tensors, an optional tensor or an optional sequence of
 * tensors (see xf_value_kind): true when type is one, with its kind and
 * element type and shape (as xfp_declared_type gives them, symbols left
 * unknown); and the TypeProto of a value of a kind (a tensor's too). */
bool xfp_container_type(const Onnx__TypeProto *type, xf_value_kind *kind, xf_dtype *dtype, xf_shape *shape);
/* A map from int64 or string keys to tensors of a type xflow knows (graph
 * inputs of kind XF_VK_MAP): true when type is one, with the key and value
 * element types. */
bool xfp_map_type(const Onnx__TypeProto *type, xf_dtype *key, xf_dtype *value);
/* The element shape such a type declares (xf_value's elem_decl): named
 * dims syms binds take its size, other symbolic dims -1; ndim -1 when it
 * declares none. */
void xfp_element_decl(const Onnx__TypeProto *type, const xfp_symbols *syms, xf_shape *shape);
Onnx__TypeProto *xfp_container_type_encode(xf_value_kind kind, xf_dtype dtype, const xf_shape *shape,
                                           xfp_arena *a);

/* ---------------------------------------------------------------- subgraph.c */

/* The names that the subgraph attributes of np (at any depth) use but do not
 * define themselves, and those a Gradient's xs, zs and y name: values of
 * the enclosing graph.  In order of first use, each once.  *names is one
 * malloc'd block that holds the names too (free it alone). */
xf_status xfp_outer_names(const Onnx__NodeProto *np, const char ***names, size_t *n, xf_error *err);
/* Whether np is ai.onnx.preview.training's Gradient. */
bool xfp_is_gradient(const Onnx__NodeProto *np);

/* ---------------------------------------------------------------- model_functions.c */

/* mp's graph with the calls of its model-local functions replaced by their
 * bodies where that keeps their meaning (*graph is mp->graph when there is
 * nothing to inline); the new pieces live in arena, the rest is mp's.
 * *inlined receives the number of calls inlined. */
xf_status xfp_inline_functions(const Onnx__ModelProto *mp, xfp_arena *arena, const Onnx__GraphProto **graph,
                               int *inlined, xf_error *err);

/* ---------------------------------------------------------------- node_build.c */

/* Nodes and initializers made by the rewrites the import makes before it
 * reads a graph (model_nchwc.c, model_nhwc.c): their pieces live in the
 * arena, their names are new to the graph. */
typedef struct xfp_builder {
    xfp_arena *a;
    xfp_name_map names; /* every name the graph and the builder use */
    xfp_ptr_list nodes; /* the graph's nodes, as the rewrite lists them */
    xfp_ptr_list inits; /* initializers made */
} xfp_builder;

/* np's attribute called name, or NULL; its INT attribute, or dflt. */
const Onnx__AttributeProto *xfp_node_attr(const Onnx__NodeProto *np, const char *name);
int64_t xfp_node_int(const Onnx__NodeProto *np, const char *name, int64_t dflt);
/* False when out of memory. */
bool xfp_builder_init(xfp_builder *b, xfp_arena *a, const Onnx__GraphProto *gp);
void xfp_builder_free(xfp_builder *b);
/* base + suffix, made unique; NULL when out of memory. */
char *xfp_fresh_name(xfp_builder *b, const char *base, const char *suffix);
Onnx__AttributeProto *xfp_new_attr_string(xfp_builder *b, const char *name, const char *v);
Onnx__AttributeProto *xfp_new_attr_float(xfp_builder *b, const char *name, float v);
Onnx__AttributeProto *xfp_new_attr_ints(xfp_builder *b, const char *name, const int64_t *v, size_t n);
/* Lists a node of the default domain, op(ins) -> out; NULL when out of
 * memory (a NULL name, input, output or attribute counts as that). */
Onnx__NodeProto *xfp_emit(xfp_builder *b, const char *op, const char *name, const char *const *ins, size_t n_in,
                          const char *out, Onnx__AttributeProto *const *ats, size_t n_at);
/* New 1-D initializers (ndim 0: a scalar) of copies of v; their names. */
const char *xfp_ints_constant(xfp_builder *b, const char *base, const char *suffix, const int64_t *v, size_t n);
const char *xfp_floats_constant(xfp_builder *b, const char *base, const char *suffix, const float *v, size_t n,
                                size_t ndim);
/* gp with the builder's nodes, and its initializers (replaced[i] for the
 * i-th where not NULL; replaced may be NULL) then the builder's. */
const Onnx__GraphProto *xfp_builder_graph(xfp_builder *b, const Onnx__GraphProto *gp,
                                          Onnx__TensorProto *const *replaced);

/* ---------------------------------------------------------------- model_nchwc.c */

/* *graph with ONNX Runtime's com.microsoft.nchwc nodes replaced by standard
 * ops (see model_nchwc.c); *graph is left as it is, with a warning, when
 * the graph does not keep to ONNX Runtime's forms.  The new pieces live in
 * arena; *lowered receives the number of nodes replaced. */
xf_status xfp_lower_nchwc(const Onnx__ModelProto *mp, const xfp_tensor_src *src, xfp_arena *arena,
                          const Onnx__GraphProto **graph, int *lowered, xf_error *err);

/* ---------------------------------------------------------------- model_nhwc.c */

/* *graph with ONNX Runtime's channels-last quantized nodes (com.microsoft
 * QLinearConv, NhwcMaxPool, QLinearAveragePool with channels_last) made
 * standard ops between Transposes (see model_nhwc.c); *lowered receives
 * how many. */
xf_status xfp_lower_nhwc(const Onnx__ModelProto *mp, xfp_arena *arena, const Onnx__GraphProto **graph, int *lowered,
                         xf_error *err);

/* ---------------------------------------------------------------- attrs_import.c / attrs_export.c */

typedef struct xfp_attr_ctx {
    int64_t opset;                 /* default-domain opset of the model */
    const xfp_tensor_src *tensors; /* for tensor-valued attributes */
    int in_ranks[2];               /* of the node's first two inputs, -1 where not known yet */
} xfp_attr_ctx;

/* Fills *a (starting from xf_attrs_default) from np's attributes; n_outputs
 * is the node's output count without trailing omitted ones.  Sets *known =
 * false, with the reason in why, when the block cannot represent them exactly
 * (the node then stays opaque); errors only for bad data. */
xf_status xfp_attrs_import(xf_op op, const Onnx__NodeProto *np, int n_outputs, const xfp_attr_ctx *ctx,
                           xf_attrs *a, bool *known, char *why, size_t why_len, xf_error *err);
/* attrs_read.c: one attribute read, or why not written to why (false). */
bool xfp_attr_refuse(char *why, size_t why_len, const char *fmt, const char *name);
bool xfp_attr_int(const Onnx__AttributeProto *at, int64_t lo, int64_t hi, int64_t *v, char *why, size_t why_len);
bool xfp_attr_int32(const Onnx__AttributeProto *at, int lo, int hi, int *v, char *why, size_t why_len);
bool xfp_attr_float(const Onnx__AttributeProto *at, float *v, char *why, size_t why_len);
/* A tensor element type xflow knows (an int naming an xf_dtype). */
bool xfp_attr_dtype(const Onnx__AttributeProto *at, xf_dtype *v, char *why, size_t why_len);
/* A string attribute equal to one of `names`; *index receives which. */
bool xfp_attr_enum(const Onnx__AttributeProto *at, const char *const *names, int count, int *index, char *why,
                   size_t why_len);
/* A list attribute of type t (ints or floats: count items of size bytes)
 * copied to out, which holds max; *n receives the count. */
bool xfp_attr_list(const Onnx__AttributeProto *at, Onnx__AttributeProto__AttributeType t, size_t count,
                   const void *items, size_t size, void *out, size_t max, int *n, char *why, size_t why_len);
/* attrs_sample.c: Resize's attributes and the names of its modes,
 * coordinate modes, nearest modes and aspect policies (by the resize_*
 * values); GridSample's attributes under opset, and the names of its
 * modes (by grid_mode) under opset and of its padding modes. */
bool xfp_resize_attr_import(const Onnx__AttributeProto *at, xf_attrs *a, char *why, size_t why_len);
extern const char *const xfp_resize_modes[3];
extern const char *const xfp_resize_coords[6];
extern const char *const xfp_resize_nearest[4];
extern const char *const xfp_resize_keep[3];
bool xfp_grid_sample_attr_import(const Onnx__AttributeProto *at, int64_t opset, xf_attrs *a, char *why,
                                 size_t why_len);
const char *const *xfp_grid_modes(int64_t opset);
extern const char *const xfp_grid_paddings[3];
/* attrs_seq.c: the sequence ops' and Optional's attributes (*has_axis set
 * when an axis is given). */
bool xfp_seq_attr_import(xf_op op, const Onnx__AttributeProto *at, xf_attrs *a, bool *has_axis, char *why,
                         size_t why_len);
/* attrs_contrib.c: ONNX Runtime's contrib ops.  What one node's attributes
 * gave so far, and where a refusal's reason goes. */
typedef struct xfp_contrib_seen {
    int n_params;  /* FusedConv: activation_params' length */
    bool given[2]; /* FusedGemm: activation_alpha, activation_beta */
    bool has_axis, has_opset; /* QLinearConcat, QLinearSoftmax */
    char *why;
    size_t why_len;
} xfp_contrib_seen;
/* Takes attribute at of contrib op `op`: 1 taken, 0 refused (reason in
 * s->why), -1 not one of the op's own (FusedConv's window attributes,
 * FusedGemm's Gemm ones: the caller's). */
int xfp_contrib_attr(xf_op op, const Onnx__AttributeProto *at, xf_attrs *a, xfp_contrib_seen *s);
/* Cross-attribute rules and defaults once all are read; false (reason in
 * s->why) refuses. */
bool xfp_contrib_finish(xf_op op, xf_attrs *a, xfp_contrib_seen *s);

/* ONNX Runtime's attention family (attrs_attn.c): one attribute of a node
 * of op, and the checks once all are read; false, with the reason in why,
 * for what the block cannot hold. */
bool xfp_attn_attr_import(xf_op op, const Onnx__AttributeProto *at, xf_attrs *a, char *why, size_t why_len);
bool xfp_attn_attrs_finish(xf_op op, const xf_attrs *a, char *why, size_t why_len);
/* ONNX's Attention, RMSNormalization and RotaryEmbedding (attrs_attn.c). */
bool xfp_opset23_attr_import(xf_op op, const Onnx__AttributeProto *at, int64_t opset, xf_attrs *a, char *why,
                             size_t why_len);
/* MatMulNBits and GroupQueryAttention (attrs_attn.c) */
bool xfp_llm_attr_import(xf_op op, const Onnx__AttributeProto *at, xf_attrs *a, char *why, size_t why_len);
bool xfp_llm_attrs_finish(xf_op op, const xf_attrs *a, char *why, size_t why_len);
/* DFT, STFT and the windows (attrs_signal.c): one attribute of a node of
 * op in a model of the given opset (false, with the reason in why, for
 * what the block cannot hold), and the defaults that depend on the opset
 * once all are read. */
bool xfp_signal_attr_import(xf_op op, int64_t opset, const Onnx__AttributeProto *at, xf_attrs *a, char *why,
                            size_t why_len);
void xfp_signal_attrs_finish(xf_op op, int64_t opset, xf_attrs *a);
/* LpPool, GlobalLpPool, CumProd and TensorScatter (attrs_small.c): one attribute
 * of a node of op in a model of the given opset: 1 read, 0 not (the reason
 * in why), -1 one of LpPool's window attributes, for attrs_import.c. */
int xfp_small_attr_import(xf_op op, int64_t opset, const Onnx__AttributeProto *at, xf_attrs *a, char *why,
                          size_t why_len);
/* The opset that brought op, for TensorScatter, BitCast and SwiGLU (0 for
 * the other ops): import keeps them opaque in a model of an earlier opset,
 * export refuses to write them there (attrs_small.c). */
int xfp_op_since(xf_op op);
/* The experimental ops of opsets 1 to 9 (attrs_legacy.c): the opset that
 * removed op (INT_MAX for every other op); one attribute, and the checks
 * once all are read. */
int xfp_op_removed(xf_op op);
bool xfp_legacy_attr_import(xf_op op, const Onnx__AttributeProto *at, xf_attrs *a, char *why, size_t why_len);
bool xfp_legacy_attrs_finish(xf_op op, const xf_attrs *a, char *why, size_t why_len);
/* Whether op had opset 1-6's `broadcast` attribute (the binary ops, Gemm). */
bool xfp_broadcast_flag_op(xf_op op);
/* Reads an attribute of a model before opset 7 that later opsets dropped
 * (broadcast; axis where it puts B's dims at the end of A's, as the
 * ranks in ctx show; is_test): 1 taken, 0 refused (why set), -1 not one
 * of them. */
int xfp_before7_attr_import(xf_op op, const Onnx__AttributeProto *at, const xfp_attr_ctx *ctx, char *why,
                            size_t why_len);
/* The random ops' attributes (attrs_random.c): dtype, mean/scale,
 * low/high, seed, shape, sample_size; false with why set for anything
 * else, which keeps the node opaque. */
bool xfp_random_attr_import(xf_op op, const Onnx__AttributeProto *at, xf_attrs *a, char *why, size_t why_len);
/* Col2Im, CenterCropPad, AffineGrid, DeformConv and MaxRoiPool
 * (attrs_image.c): one attribute, and the checks once all are read (the
 * model's opset has the op, MaxRoiPool's pooled_shape is given); false,
 * with the reason in why, for what the block cannot hold. */
bool xfp_image_attr_import(xf_op op, const Onnx__AttributeProto *at, xf_attrs *a, char *why, size_t why_len);
bool xfp_image_attrs_finish(xf_op op, int64_t opset, const xf_attrs *a, char *why, size_t why_len);
/* attrs_rnn.c: RNN's, LSTM's and GRU's attributes; activation_alpha and
 * activation_beta are kept in *seen until xfp_rnn_attrs_finish gives them
 * to the activations, once every attribute is read. */
typedef struct xfp_rnn_seen {
    float act_alpha[XF_RNN_MAX_ACTS], act_beta[XF_RNN_MAX_ACTS];
    int n_act_alpha, n_act_beta;
} xfp_rnn_seen;
bool xfp_rnn_attr_import(xf_op op, const Onnx__AttributeProto *at, xf_rnn_attrs *rnn, xfp_rnn_seen *seen,
                         char *why, size_t why_len);
bool xfp_rnn_attrs_finish(xf_rnn_attrs *rnn, const xfp_rnn_seen *seen, char *why, size_t why_len);
/* CausalConvWithState and LinearAttention (attrs_state.c): one attribute,
 * and the checks once all are read. */
bool xfp_state_attr_import(xf_op op, const Onnx__AttributeProto *at, xf_attrs *a, char *why, size_t why_len);
bool xfp_state_attrs_finish(xf_op op, int64_t opset, const xf_attrs *a, char *why, size_t why_len);
/* Writes n's attributes to np (pieces in the arena).  in_rank is the rank of
 * the node's first input (-1 when unknown), needed to decide whether a
 * Softmax can be written for the model's opset. */
xf_status xfp_attrs_export(const xf_node *n, int in_rank, int64_t opset, xfp_arena *a, Onnx__NodeProto *np,
                           xf_error *err);

/* ---------------------------------------------------------------- xf_model.extra */

/* xf_model.extra is a serialized ModelProto holding only what the IR does not
 * model: functions, training_info, fields unknown to this onnx.proto (at
 * model and graph level), and a graph with doc_string,
 * quantization_annotation, value_info entries of names that are not values of
 * the graph (written back verbatim), and - in graph.input - the declared
 * types of values whose type import could not determine (outputs of opaque
 * nodes that are sequences or maps, or have unresolved symbolic dims), used
 * on export where xflow's own type of that value is still unknown. */

#endif
