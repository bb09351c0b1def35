/* xflow core: the graph IR, the operator list, shape inference, structural
 * hashing and cloning, and the canonicalization passes.  Uses libc only. */
#ifndef XF_CORE_H
#define XF_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- status */

typedef enum xf_status {
    XF_OK = 0,
    XF_ERR_IO,          /* file cannot be read or written */
    XF_ERR_PARSE,       /* bytes are not what they claim to be */
    XF_ERR_INVALID,     /* well-formed but inconsistent (cycle, shape mismatch, ...) */
    XF_ERR_UNSUPPORTED, /* valid, but outside what this part of xflow handles */
    XF_ERR_NOMEM,
    XF_ERR_LIMIT,       /* a size beyond the configured resource limits */
    XF_ERR_DEVICE       /* a device or its library failed (a CUDA, cuDNN or cuBLAS error) */
} xf_status;

/* A recoverable error: the status and one line of explanation. */
typedef struct xf_error {
    xf_status status;
    char msg[1024];
} xf_error;

/* Sets *e (when e is not NULL) and returns status.  printf-style. */
xf_status xf_error_set(xf_error *e, xf_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Prefixes the message already in e with "prefix: " (used to add a file name). */
void xf_error_prefix(xf_error *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *xf_status_name(xf_status s);

/* Diagnostics: warnings go through one hook so tools decide where they go. */
typedef void (*xf_log_fn)(int level, const char *msg, void *user);
enum { XF_LOG_ERROR = 0, XF_LOG_WARN = 1, XF_LOG_INFO = 2, XF_LOG_DEBUG = 3 };
void xf_log_set(xf_log_fn fn, void *user, int max_level);
void xf_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Cache files (cache_files.c): the path of file `name` among those xflow
 * keeps per machine, $XDG_CACHE_HOME/xflow/NAME else ~/.cache/xflow/NAME
 * (NULL where neither variable is set; the caller frees it), and the
 * directories above a path, made where missing (-1 with errno on
 * failure). */
char *xf_cache_file_path(const char *name);
int xf_make_parent_dirs(const char *path);

/* ---------------------------------------------------------------- dtypes */

/* Values are ONNX's TensorProto.DataType numbers, so import is a cast. */
typedef enum xf_dtype {
    XF_DT_UNDEFINED = 0,
    XF_DT_FLOAT = 1,
    XF_DT_UINT8 = 2,
    XF_DT_INT8 = 3,
    XF_DT_UINT16 = 4,
    XF_DT_INT16 = 5,
    XF_DT_INT32 = 6,
    XF_DT_INT64 = 7,
    XF_DT_STRING = 8,
    XF_DT_BOOL = 9,
    XF_DT_FLOAT16 = 10,
    XF_DT_DOUBLE = 11,
    XF_DT_UINT32 = 12,
    XF_DT_UINT64 = 13,
    XF_DT_COMPLEX64 = 14,
    XF_DT_COMPLEX128 = 15,
    XF_DT_BFLOAT16 = 16,
    /* Carried only: tensors and values of these types load, travel through
     * the optimizer untouched and are written back byte for byte, but no
     * op computes on them (nodes reading them run nowhere, and no rule
     * matches them).  The 4- and 2-bit types are packed, two or four per
     * byte. */
    XF_DT_FLOAT8E4M3FN = 17,
    XF_DT_FLOAT8E4M3FNUZ = 18,
    XF_DT_FLOAT8E5M2 = 19,
    XF_DT_FLOAT8E5M2FNUZ = 20,
    XF_DT_UINT4 = 21,
    XF_DT_INT4 = 22,
    XF_DT_FLOAT4E2M1 = 23,
    XF_DT_FLOAT8E8M0 = 24,
    XF_DT_UINT2 = 25,
    XF_DT_INT2 = 26,
    XF_DT_COUNT_
} xf_dtype;

/* Bytes per element; 0 for types without a fixed size (string, undefined)
 * or smaller than a byte (the packed 4- and 2-bit types). */
size_t xf_dtype_size(xf_dtype t);
/* Bits per element (0: string, undefined), and the bytes numel elements
 * occupy (packed types rounded up to whole bytes; 0 for strings). */
int xf_dtype_bits(xf_dtype t);
/* float, double, float16 or bfloat16 (the float8 formats are not: no op
 * but quantization computes in them); float16 or bfloat16. */
bool xf_dtype_is_float(xf_dtype t);
bool xf_dtype_is_half(xf_dtype t);
/* uint8, uint16, uint32 or uint64; int8, int16, int32 or int64. */
bool xf_dtype_is_unsigned(xf_dtype t);
bool xf_dtype_is_signed_int(xf_dtype t);
size_t xf_dtype_nbytes(xf_dtype t, int64_t numel);
const char *xf_dtype_name(xf_dtype t);

/* ---------------------------------------------------------------- shapes */

#define XF_MAX_DIMS 8
#define XF_MAX_SPATIAL 3

/* A static shape.  ndim == -1 means "unknown" (only downstream of opaque
 * nodes without value_info); ndim == 0 is a scalar. */
typedef struct xf_shape {
    int ndim;
    int64_t dims[XF_MAX_DIMS];
} xf_shape;

/* Number of elements; -1 when unknown; saturates at INT64_MAX on overflow. */
int64_t xf_shape_numel(const xf_shape *s);
bool xf_shape_equal(const xf_shape *a, const xf_shape *b);
xf_shape xf_shape_make(int ndim, const int64_t *dims);
/* "1x3x224x224" ("scalar" for ndim 0, "?" for unknown). Returns buf. */
char *xf_shape_str(const xf_shape *s, char *buf, size_t n);

/* ---------------------------------------------------------------- tensors */

/* Immutable constant data, shared by reference (weights are owned once and
 * shared between every graph that uses them; nothing copies weight data). */
typedef struct xf_tensor {
    int refcount;
    xf_dtype dtype;
    xf_shape shape;
    size_t nbytes;
    void *data;     /* nbytes bytes, 64-byte aligned; NULL when nbytes == 0 */
    char **strings; /* for XF_DT_STRING only: numel strings (kept verbatim) */
    /* When not NULL, the strings are this tensor's (a reference held), not
     * the holder's own: the holder frees only its array of them. */
    struct xf_tensor *string_owner;
    /* A sequence value (ONNX's sequence type) at run time: n_items owned
     * references to tensors of element type dtype, whose shapes may differ;
     * shape is theirs when all agree, else unknown (ndim -1); no data.  A
     * sequence travels through the same xf_tensor * slots as a tensor
     * (session inputs and outputs, control flow's carried values), so that
     * every API that moves values moves sequences too; it is immutable like
     * a tensor (the sequence ops make new lists sharing the items). */
    bool is_sequence;
    int64_t n_items;
    struct xf_tensor **items;
    /* An optional value (ONNX's optional type) at run time: n_items 0
     * (empty) or 1, items[0] the tensor or sequence it holds (an owned
     * reference); optional_of_sequence says which it holds or, when empty,
     * would hold; dtype is the element type and shape the content's (ndim
     * -1 when empty); no data.  It travels like a sequence. */
    bool is_optional;
    bool optional_of_sequence;
    /* A map value (ONNX's map type) at run time, as ONNX-ML's ZipMap makes
     * them (each an entry of a sequence) and graph inputs of map type take
     * them: n_items 2, items[0] the keys (a tensor [n] of int64 or strings)
     * and items[1] the values ([n]); dtype and shape are the values'; no
     * data. */
    bool is_map;
} xf_tensor;

/* New tensor with zeroed data.  NULL when out of memory or the size overflows. */
xf_tensor *xf_tensor_create(xf_dtype dtype, const xf_shape *shape);
/* The same with data left as allocated, for a caller that writes all of it
 * next (string tensors are created empty all the same). */
xf_tensor *xf_tensor_create_unset(xf_dtype dtype, const xf_shape *shape);
/* New tensor of shape `shape` whose n strings are those at ids of owner's
 * (a tensor of strings; an id of -1 gives ""; ids NULL: owner's in
 * order), sharing them: nothing is copied but the pointers.  NULL when out
 * of memory. */
xf_tensor *xf_strings_shared(xf_tensor *owner, const xf_shape *shape, const int64_t *ids);
/* New tensor (not of strings) over data, which it then owns and frees with
 * free(): a block from malloc or aligned_alloc of at least the tensor's
 * bytes.  NULL when out of memory (data then still the caller's). */
xf_tensor *xf_tensor_adopt(xf_dtype dtype, const xf_shape *shape, void *data);
/* New tensor holding a copy of data (nbytes must match dtype and shape). */
xf_tensor *xf_tensor_from_data(xf_dtype dtype, const xf_shape *shape, const void *data);
xf_tensor *xf_tensor_retain(xf_tensor *t);
void xf_tensor_release(xf_tensor *t);
/* New sequence of n tensors (or maps) of element type dtype, taking a new
 * reference to each item (items may be NULL when n is 0).  NULL when out
 * of memory or an item is not a tensor or map of that type. */
xf_tensor *xf_sequence_create(xf_dtype dtype, int64_t n, xf_tensor *const *items);
/* New optional holding a new reference to content (a tensor or a
 * sequence), or empty when content is NULL: then of_sequence and dtype say
 * what it would hold.  NULL when out of memory or content is an optional. */
xf_tensor *xf_optional_create(xf_tensor *content, bool of_sequence, xf_dtype dtype);
/* Whether t is a sequence or an optional (a value holding references, with
 * no data of its own) rather than a tensor. */
static inline bool xf_tensor_is_container(const xf_tensor *t) { return t->is_sequence || t->is_optional || t->is_map; }
/* New map of keys (int64 or strings, [n]) to values ([n]), taking a new reference to
 * each.  NULL when out of memory or they are not such tensors. */
xf_tensor *xf_map_create(xf_tensor *keys, xf_tensor *values);
int64_t xf_tensor_numel(const xf_tensor *t);
/* Element i converted to double / int64 (for small shape-like tensors). */
double xf_tensor_get_f64(const xf_tensor *t, int64_t i);
int64_t xf_tensor_get_i64(const xf_tensor *t, int64_t i);
/* Stores v as element i of a floating tensor (float, double, float16,
 * bfloat16; rounded as the conversions below); other dtypes are left as
 * they are. */
void xf_tensor_set_f64(xf_tensor *t, int64_t i, double v);
/* IEEE binary16 (round to nearest even, subnormals, inf, NaN) and
 * bfloat16 (round to nearest even; NaN stays a quiet NaN) to and from
 * float. */
uint16_t xf_f32_to_f16(float f);
float xf_f16_to_f32(uint16_t h);
uint16_t xf_f32_to_bf16(float f);
float xf_bf16_to_f32(uint16_t h);
/* The float8 formats e4m3fn, e4m3fnuz, e5m2 and e5m2fnuz (ONNX's): decode,
 * and encode rounding to nearest even; beyond the largest finite value,
 * saturate gives it (with the sign), else infinity (e5m2) or NaN. */
bool xf_float8_known(xf_dtype t);
float xf_float8_to_f32(xf_dtype t, uint8_t code);
uint8_t xf_f32_to_float8(xf_dtype t, float v, bool saturate);
/* float4e2m1 (one element in the low 4 bits of a code): decode, and
 * encode rounding to nearest even, saturating at +-6 (infinities too) and
 * NaN to 6, as ONNX's float4 table says. */
float xf_float4_to_f32(uint8_t code);
uint8_t xf_f32_to_float4(float v);
/* float8e8m0, a power of two 2^(code - 127) (0xff: NaN): decode, and encode
 * from float's exponent as ONNX's reference does (Cast's round_mode; up
 * and nearest stop at the largest power when saturate; negative values
 * are encoded by magnitude); saturate also takes an infinity to the
 * largest power, else to NaN. */
typedef enum { XF_ROUND_UP, XF_ROUND_DOWN, XF_ROUND_NEAREST } xf_round_mode;
float xf_e8m0_to_f32(uint8_t code);
uint8_t xf_f32_to_e8m0(float v, bool saturate, xf_round_mode mode);

/* ---------------------------------------------------------------- operators */

enum { XF_OPF_GEN = 1, XF_OPF_ELEM = 2, XF_OPF_OPT_OUTS = 4, XF_OPF_NOFOLD = 8, XF_OPF_SHAPE_ONLY = 16, XF_OPF_SEQ = 32 };

typedef enum xf_op {
#define XF_OP(id, onnx, min_in, max_in, n_out, flags) XF_OP_##id,
#include "ops.def"
#undef XF_OP
    XF_OP_COUNT,
    XF_OP_OPAQUE = XF_OP_COUNT /* an op xflow does not know: carried verbatim */
} xf_op;

typedef struct xf_op_info {
    const char *onnx_name;
    int min_inputs, max_inputs;
    int num_outputs; /* -1: variable; with XF_OPF_OPT_OUTS the most */
    unsigned flags;
    const char *domain; /* "" for ONNX's default domain, else e.g. "com.microsoft" */
} xf_op_info;

const xf_op_info *xf_op_get_info(xf_op op); /* also valid for XF_OP_OPAQUE */
const char *xf_op_name(xf_op op);
/* Op kind for an ONNX op_type in the default domain; XF_OP_OPAQUE if unknown. */
xf_op xf_op_from_onnx(const char *op_type);
/* The same in a domain (NULL, "" and "ai.onnx" are the default one). */
xf_op xf_op_lookup(const char *domain, const char *op_type);
const char *xf_op_domain(xf_op op); /* "" for the default domain */
/* ReduceMean, ReduceSum and the other Reduce* ops (axes, keepdims). */
bool xf_op_is_reduce(xf_op op);

#include "xf_attrs.h" /* attributes, transposed convolution, quantization layouts */

/* ---------------------------------------------------------------- graph */

/* An opaque node: everything needed to write it back unchanged.  `proto` is
 * the node's serialized NodeProto (attributes, subgraphs, doc string), kept
 * as bytes so that core needs no protobuf; input/output names are rewritten
 * from the graph on export. */
struct xf_graph;

/* A subgraph attribute of an opaque node (If's branches, Loop's body),
 * loaded as a graph so that runtimes can execute it.  Its inputs are the
 * attribute's own formal inputs (none for If's branches; Loop's iteration
 * number, condition and loop-carried values), then one input per value of
 * enclosing scopes the node's subgraphs use, in the order of the node's
 * inputs after its first n_own_inputs: the k-th of those binds to node
 * input n_own_inputs + k. */
typedef struct xf_opaque_body {
    char *attr;             /* the attribute's name ("then_branch", "body") */
    int n_formal;           /* leading inputs declared by the subgraph itself */
    struct xf_graph *graph; /* owned */
} xf_opaque_body;

/* An integer attribute of an opaque node (one value for an INT, any number
 * for INTS), for runtimes that run the node (Scan's axes and directions). */
typedef struct xf_opaque_ints {
    char *attr;
    int n;
    int64_t *v;
    xf_dtype dtype; /* a TENSOR attribute's element type (UNDEFINED for INT and INTS) */
} xf_opaque_ints;

/* A real-valued attribute of an opaque node, for runtimes that run the
 * node: a FLOAT (one value: FlexAttention's scale), FLOATS (ONNX-ML's
 * coefficients and thresholds) or a TENSOR of floats or doubles (ONNX-ML's
 * *_as_tensor attributes), its values in order as doubles (exact for
 * each). */
typedef struct xf_opaque_reals {
    char *attr;
    int n;
    double *v;
    xf_dtype dtype; /* a TENSOR attribute's element type (UNDEFINED for FLOAT and FLOATS) */
} xf_opaque_reals;

/* A STRING or STRINGS attribute, or a TENSOR of strings, of an opaque node
 * (ONNX-ML's modes, post transforms, class labels and keys), each string
 * NUL-terminated. */
typedef struct xf_opaque_strings {
    char *attr;
    int n;
    char **v;
} xf_opaque_strings;

typedef struct xf_opaque {
    int refcount;
    char *op_type;
    char *domain;
    size_t proto_len;
    uint8_t *proto;
    /* Inputs the NodeProto lists; node inputs after these are the values
     * of enclosing scopes that its subgraphs use. */
    int n_own_inputs;
    /* Subgraph attributes loaded as graphs (none when the node has none,
     * or when one could not be loaded: the node is then only carried). */
    int n_bodies;
    xf_opaque_body *bodies;
    int n_graph_attrs; /* its subgraph attributes, loaded or not */
    /* Its INT and INTS attributes. */
    int n_ints;
    xf_opaque_ints *ints;
    /* Its real-valued attributes (FLOAT, FLOATS, TENSOR of floats). */
    int n_reals;
    xf_opaque_reals *reals;
    /* Its STRING and STRINGS attributes. */
    int n_strings;
    xf_opaque_strings *strings;
} xf_opaque;

xf_opaque *xf_opaque_create(const char *op_type, const char *domain, const void *proto, size_t len);
xf_opaque *xf_opaque_retain(xf_opaque *o);
void xf_opaque_release(xf_opaque *o);
/* Adds a loaded subgraph attribute; takes ownership of graph (freed on
 * failure).  False when out of memory. */
bool xf_opaque_add_body(xf_opaque *o, const char *attr, int n_formal, struct xf_graph *graph);
/* The loaded subgraph attribute called attr, or NULL. */
const xf_opaque_body *xf_opaque_find_body(const xf_opaque *o, const char *attr);
/* Adds integer attribute attr (n values); false when out of memory. */
bool xf_opaque_add_ints(xf_opaque *o, const char *attr, const int64_t *v, int n);
/* The integer attribute called attr, or NULL. */
const xf_opaque_ints *xf_opaque_find_ints(const xf_opaque *o, const char *attr);
/* Adds real-valued attribute attr (n values); false when out of memory. */
bool xf_opaque_add_reals(xf_opaque *o, const char *attr, const double *v, int n);
/* The real-valued attribute called attr, or NULL. */
const xf_opaque_reals *xf_opaque_find_reals(const xf_opaque *o, const char *attr);
/* Adds string attribute attr (n strings of lens[i] bytes, which hold no
 * NUL); false when out of memory. */
bool xf_opaque_add_strings(xf_opaque *o, const char *attr, const char *const *v, const size_t *lens, int n);
/* The string attribute called attr, or NULL. */
const xf_opaque_strings *xf_opaque_find_strings(const xf_opaque *o, const char *attr);

/* What a value holds.  Sequences are values of the IR like tensors (and
 * not opaque payloads): the sequence ops are known ops (ops.def, flag
 * XF_OPF_SEQ) with shape inference, so that a graph holding them loads,
 * checks and runs, and Loop/If bodies pass sequences as carried values.
 * A sequence value's dtype is its element type and its shape the shape
 * every element has (ndim -1 when entries may differ or are not known);
 * its length is known at run time only, so graphs holding sequences run in
 * dynamic mode, on the host backends (the session runs the sequence ops
 * itself, on xf_tensor sequences).  No rewrite rule matches a sequence op,
 * and canonicalization never folds one (XF_OPF_NOFOLD), so the optimizer
 * leaves them and their values as they are.
 *
 * Optionals (ONNX's optional type, opset 15) are a third kind of value,
 * in two flavours by what they hold: an optional tensor or an optional
 * sequence.  What an optional holds is part of its type (an empty one
 * still has it, and export writes it), so the kind says it, and every
 * place that passes kinds along (import, Identity, Loop/If bodies) passes
 * it with no second field to keep in step.  dtype and shape are those of
 * the content.  The optional ops (Optional, OptionalHasElement,
 * OptionalGetElement) are known ops flagged XF_OPF_SEQ: like the sequence
 * ops, the session runs them on the host, in dynamic mode (whether an
 * optional is empty is known at run time only); at run time an optional
 * is an xf_tensor with is_optional set (see xf_optional_create). */
typedef enum xf_value_kind {
    XF_VK_TENSOR = 0,
    XF_VK_SEQUENCE,
    XF_VK_OPTIONAL_TENSOR,
    XF_VK_OPTIONAL_SEQUENCE,
    /* A map (ONNX's map type, ONNX-ML's inputs: DictVectorizer's,
     * CastMap's): keys of xf_value.key_dtype (int64 or strings) to values of
     * dtype; shape unknown (its length is known at run time only).  Only
     * graph inputs have this kind; the session holds them on the host, in
     * dynamic mode, as xf_map_create values. */
    XF_VK_MAP
} xf_value_kind;

static inline bool xf_kind_is_optional(xf_value_kind k) { return k == XF_VK_OPTIONAL_TENSOR || k == XF_VK_OPTIONAL_SEQUENCE; }
/* What an optional of kind k holds (k itself for the other kinds). */
static inline xf_value_kind xf_kind_content(xf_value_kind k)
{
    return k == XF_VK_OPTIONAL_TENSOR ? XF_VK_TENSOR : k == XF_VK_OPTIONAL_SEQUENCE ? XF_VK_SEQUENCE : k;
}
/* The kind of a run-time value. */
static inline xf_value_kind xf_tensor_kind(const xf_tensor *t)
{
    return t->is_optional ? (t->optional_of_sequence ? XF_VK_OPTIONAL_SEQUENCE : XF_VK_OPTIONAL_TENSOR)
           : t->is_sequence ? XF_VK_SEQUENCE
           : t->is_map      ? XF_VK_MAP
                            : XF_VK_TENSOR;
}
/* "tensor", "sequence", "optional tensor", "optional sequence" or "map". */
const char *xf_kind_name(xf_value_kind k);

/* A value: a graph input, an initializer (constant) or a node output. */
typedef struct xf_value {
    char *name;
    xf_value_kind kind;
    /* Sequence and optional graph inputs: the element shape the file
     * declares, named dims sized as the graph's tensor inputs have them,
     * others the file leaves symbolic -1 (so not a static shape: what tools
     * make sample values of); ndim -1 when not declared. */
    xf_shape elem_decl;
    xf_dtype dtype;
    xf_dtype key_dtype; /* a map's keys (XF_VK_MAP only) */
    xf_shape shape;
    int producer;     /* node index, or -1 for graph inputs and initializers */
    int producer_out; /* output index at the producer */
    xf_tensor *init;  /* constant data (initializer), owned reference; else NULL */
    bool is_input;    /* fed at run time */
} xf_value;

typedef struct xf_node {
    xf_op op;
    char *name;
    xf_attrs attrs;
    int n_inputs;
    int *inputs;  /* value ids; -1 for an omitted optional input */
    int n_outputs;
    int *outputs; /* value ids; -1 for an omitted optional output */
    xf_opaque *opaque; /* XF_OP_OPAQUE only */
} xf_node;

/* A graph.  Invariant after import and after every pass: nodes are in
 * topological order and every value id is valid. */
typedef struct xf_graph {
    char *name;
    int n_values, cap_values;
    xf_value *values;
    int n_nodes, cap_nodes;
    xf_node *nodes;
    int n_inputs;
    int *inputs;  /* graph inputs in order (value ids) */
    int n_outputs;
    int *outputs; /* graph outputs in order (value ids) */
    int64_t name_counter; /* for generated value names */
} xf_graph;

typedef struct xf_kv {
    char *key;
    char *value;
} xf_kv;

typedef struct xf_opset {
    char *domain; /* "" for the default ONNX domain */
    int64_t version;
} xf_opset;

/* A model: the graph plus what ONNX keeps around it, carried through. */
typedef struct xf_symbolic_dim {
    char *value; /* graph input or output name */
    int dim;
    char *name;  /* the dim_param, "" when the dim was unnamed */
} xf_symbolic_dim;

typedef struct xf_model {
    xf_graph *graph;
    int64_t ir_version;
    char *producer_name, *producer_version, *domain, *doc_string;
    int64_t model_version;
    int n_opsets;
    xf_opset *opsets;
    int n_metadata;
    xf_kv *metadata;
    /* Serialized pieces of ModelProto/GraphProto that core does not model
     * (functions, training info, graph doc string, sparse initializers,
     * value_info of opaque regions) are kept as bytes by proto/. */
    size_t extra_len;
    uint8_t *extra;
    /* Dims of graph inputs (and, once xflowc has shown the graph holds for
     * other sizes, outputs) that the file declares symbolic: the graph uses
     * a concrete size for them (--input-shape's, else 1).  Export writes
     * them back as symbolic when keep_symbolic is set, and then leaves the
     * intermediate values' shapes out. */
    int n_symbolic;
    xf_symbolic_dim *symbolic;
    bool keep_symbolic;
    /* The dims of graph outputs that the file declares symbolic, as it
     * names them: xflowc writes an output's dims so where the sizes cannot
     * tell (behind an op no backend runs). */
    int n_declared_out;
    xf_symbolic_dim *declared_out;
} xf_model;

/* Adds a symbolic dim to m; false when out of memory. */
bool xf_model_add_symbolic(xf_model *m, const char *value, int dim, const char *name);
/* Adds a graph output's dim that the file declares symbolic; false when out of memory. */
bool xf_model_add_declared_output(xf_model *m, const char *value, int dim, const char *name);


xf_graph *xf_graph_create(const char *name);
void xf_graph_free(xf_graph *g);
/* Deep copy of the structure; tensors and opaque payloads are shared. */
xf_graph *xf_graph_clone(const xf_graph *g);
/* The same, with room for that many more nodes and values, so that adding
 * them does not move the arrays. */
xf_graph *xf_graph_clone_with_room(const xf_graph *g, int more_nodes, int more_values);

/* Adds a value and returns its id, or -1 when out of memory.  The name is
 * copied; pass NULL to generate a unique one ("xf_N"). */
int xf_graph_add_value(xf_graph *g, const char *name, xf_dtype dtype, const xf_shape *shape);
/* Adds an initializer (takes a new reference to t). */
int xf_graph_add_initializer(xf_graph *g, const char *name, xf_tensor *t);
/* Adds a graph input value and appends it to g->inputs. */
int xf_graph_add_input(xf_graph *g, const char *name, xf_dtype dtype, const xf_shape *shape);
void xf_graph_add_output(xf_graph *g, int value_id);
/* Appends a node with default attributes for op; sets the producers of its
 * outputs.  Returns the node index, or -1 when out of memory.  The node is
 * appended at the end: callers that insert mid-graph call xf_graph_toposort. */
int xf_graph_add_node(xf_graph *g, xf_op op, const char *name, int n_inputs, const int *inputs,
                      int n_outputs, const int *outputs);
/* Appends a copy of node n (of this or another graph: op, name,
 * attributes, opaque payload) reading inputs and writing outputs, value ids
 * of g.  Returns the node index, or -1 when out of memory. */
int xf_graph_copy_node(xf_graph *g, const xf_node *n, const int *inputs, const int *outputs);
/* Value id for name, or -1. Linear scan: for lookups in bulk build a map. */
int xf_graph_find_value(const xf_graph *g, const char *name);

/* Reorders nodes topologically. XF_ERR_INVALID (naming a value on the cycle)
 * when the graph has a cycle. */
xf_status xf_graph_toposort(xf_graph *g, xf_error *err);
/* The same, and (when old_index is not NULL) old_index[i] gets the index
 * node i had before sorting (n_nodes entries). */
xf_status xf_graph_toposort_mapped(xf_graph *g, int *old_index, xf_error *err);
/* Checks every invariant: ids in range, one producer per value, topological
 * order, arities per the op list, graph outputs produced. */
xf_status xf_graph_validate(const xf_graph *g, xf_error *err);
/* Removes nodes marked by keep[i] == false and values no longer referenced,
 * renumbering ids.  keep may be NULL (only unreferenced values go). */
void xf_graph_compact(xf_graph *g, const bool *keep);
/* The same, and where things went: node_map[old node] and value_map[old
 * value] (n_nodes and n_values entries before compacting) get the new
 * index, or -1 for what was removed.  Either may be NULL. */
void xf_graph_compact_mapped(xf_graph *g, const bool *keep, int *node_map, int *value_map);

/* Whether v is one of g's outputs. */
bool xf_graph_is_output(const xf_graph *g, int v);
/* The data of v when known at compile time (an initializer that is not
 * also a graph input: then it is only a default the caller may
 * override), else NULL; also for v -1. */
const xf_tensor *xf_graph_constant(const xf_graph *g, int v);
/* Whether Dropout node n may train: its training_mode is given and not a
 * constant false. */
bool xf_dropout_trains(const xf_graph *g, const xf_node *n);
/* Whether node n draws random values when it runs: the random ops, and a
 * Dropout that may train. */
bool xf_node_draws_random(const xf_graph *g, const xf_node *n);
/* Replaces every use of value `from` (node inputs and graph outputs) by `to`. */
void xf_graph_replace_uses(xf_graph *g, int from, int to);
/* Number of node inputs plus graph outputs that use value v. */
int xf_graph_count_uses(const xf_graph *g, int v);

/* Structural hash: op kinds, attributes, shapes, constant identity and the
 * hashes of inputs; independent of node order and of value names. */
uint64_t xf_graph_hash(const xf_graph *g);

/* The pieces xf_graph_hash is made of, for working out the hash of an
 * edited graph from those of the graph before the edit, without building
 * it (the search does, for every rewrite it considers):
 *   value hash   what computes the value (xf_hash_source for a value no
 *                node computes, xf_hash_node_output for a node's output;
 *                a graph input also folds in its position);
 *   node hash    xf_hash_node: its op and attributes (xf_hash_node_attrs)
 *                followed by its input values' hashes;
 *   graph hash   xf_hash_combine: the graph's inputs and outputs (value
 *                hashes) and the node count and sum of xf_hash_node_term
 *                over the nodes. */
typedef struct xf_graph_hashes {
    uint64_t *value;      /* per value */
    uint64_t *node_attrs; /* per node: xf_hash_node_attrs */
    uint64_t *node;       /* per node: xf_hash_node */
    uint64_t node_sum;    /* sum of xf_hash_node_term over the nodes */
    uint64_t graph;       /* xf_graph_hash(g) */
} xf_graph_hashes;

xf_status xf_graph_hashes_compute(const xf_graph *g, xf_graph_hashes *out, xf_error *err);
void xf_graph_hashes_free(xf_graph_hashes *h);
uint64_t xf_hash_node_attrs(const xf_node *n);
/* value_hash[v] for each input v of n (n_values entries). */
uint64_t xf_hash_node(uint64_t attrs_hash, const xf_node *n, const uint64_t *value_hash, int n_values);
/* Output k of a node whose hash is node_hash; v is that output. */
uint64_t xf_hash_node_output(uint64_t node_hash, int k, const xf_value *v);
/* A value no node computes: a constant, or (before xf_hash_combine folds
 * in the position) a graph input. */
uint64_t xf_hash_source(const xf_value *v);
uint64_t xf_hash_node_term(uint64_t node_hash);
/* The hash of a graph with g's inputs and outputs (their hashes taken from
 * value_hash), n_nodes nodes and the given sum of node terms. */
uint64_t xf_hash_combine(const xf_graph *g, const uint64_t *value_hash, int n_nodes, uint64_t node_sum);

/* Bytes a clone of g takes: its own structure, not the tensors and opaque
 * payloads clones share.  What a search pays per candidate graph. */
size_t xf_graph_footprint(const xf_graph *g);

/* Counts nodes per op kind (out[XF_OP_COUNT + 1], opaque last). */
void xf_graph_count_ops(const xf_graph *g, int *out);

xf_model *xf_model_create(void);
void xf_model_free(xf_model *m);
/* Default-domain opset version the model imports (0 if none). */
int64_t xf_model_opset(const xf_model *m);

/* ---------------------------------------------------------------- shape inference */

/* Infers dtype and shape of every node output from its inputs, in order.
 * opset is the model's default-domain opset (semantics differ across versions).
 * Values downstream of an opaque node keep whatever shape they already have
 * (value_info), else become unknown.  Errors name the node and the mismatch. */
xf_status xf_graph_infer_shapes(xf_graph *g, int64_t opset, xf_error *err);
/* Shape inference for one node: sets its outputs' dtype and shape.
 * Data-dependent ops (Reshape's shape, Slice's starts, Expand, Range, ...)
 * need their parameter inputs' values: input_values[i] (when input_values
 * and the entry are not NULL) gives the value of the node's i-th input,
 * else an initializer's data is used; when neither exists the output shape
 * becomes unknown (ndim -1) without error.  The runtime calls this with the
 * actual tensors to run graphs whose shapes depend on their inputs. */
xf_status xf_node_infer_shape(xf_graph *g, int node, int64_t opset,
                              const xf_tensor *const *input_values, xf_error *err);

/* ---------------------------------------------------------------- canonicalization */

typedef struct xf_canon_stats {
    int folded_constants;  /* nodes evaluated at compile time */
    int folded_batchnorms; /* BatchNormalization merged into a Conv */
    int folded_affine;     /* Mul, Div, Add or Sub by a per-channel constant merged into the Conv before it */
    int fused_activations; /* Relu, Sigmoid or Tanh merged into the Conv before it */
    int lowered_fused_convs; /* ONNX Runtime's FusedConv made a Conv with that activation */
    int removed_identity;  /* Identity, inference-mode Dropout, Casts to the type they read */
    int folded_pads;       /* Pads of zeros merged into the Conv or AveragePool reading them */
    int removed_transposes; /* Transposes cancelled once moved through the ops after them */
    int inlined_branches;  /* If nodes replaced by the branch their constant condition picks */
    int merged_constants;  /* floating-point constants equal to another, whose readers now read that one */
    int removed_dead;      /* nodes whose outputs nothing uses */
    int removed_initializers;
} xf_canon_stats;

/* Folds nodes whose inputs are all constant (including the Shape -> Gather ->
 * Unsqueeze -> Concat -> Reshape chains that PyTorch exports: Shape of a value
 * with a static shape is a constant).  `eval` evaluates one node on constant
 * inputs; it is supplied by the runtime (core does not compute). Nodes whose
 * result would exceed max_bytes, and ops marked XF_OPF_NOFOLD (QuantizeLinear,
 * DequantizeLinear: a quantized model's int8 weights stay int8), are left
 * alone. */
typedef xf_status (*xf_node_eval_fn)(const xf_graph *g, int node, xf_tensor **outputs, xf_error *err);
xf_status xf_pass_fold_constants(xf_graph *g, int64_t opset, xf_node_eval_fn eval, size_t max_bytes,
                                 xf_canon_stats *st, xf_error *err);
/* The same, folding too the nodes whose results are larger than max_bytes
 * but no larger than the constant data they read (a Slice, Concat or
 * Transpose of weights: paddle2onnx's LSTMs reorder their gates so), which
 * at most repeat data the model holds. */
xf_status xf_pass_fold_constants_bounded(xf_graph *g, int64_t opset, xf_node_eval_fn eval, size_t max_bytes,
                                         xf_canon_stats *st, xf_error *err);
/* A BatchNormalization (inference mode), or a Mul, Div, Add or Sub by a
 * floating constant of one value or one per channel, that alone reads a
 * Conv's output (no fused activation, constant weights) becomes that
 * Conv's weights and bias, as ONNX Runtime's ConvBNFusion, ConvMulFusion
 * and ConvAddFusion do. */
xf_status xf_pass_fold_batchnorm(xf_graph *g, xf_canon_stats *st, xf_error *err);
/* A Relu, Sigmoid or Tanh that alone reads a float (float32, float16 or
 * bfloat16) Conv's output becomes that Conv's fused activation (as
 * runtimes fuse them; export writes the pair back as two ONNX nodes). */
xf_status xf_pass_fuse_activations(xf_graph *g, xf_canon_stats *st, xf_error *err);
/* ONNX Runtime's FusedConv without its residual input Z and with no
 * activation, Relu, Sigmoid or Tanh is a Conv with that fused activation:
 * it becomes one, which the optimizer rewrites and export writes as
 * standard ONNX (Conv, then the activation). */
xf_status xf_pass_lower_fused_convs(xf_graph *g, xf_canon_stats *st, xf_error *err);
xf_status xf_pass_remove_identity(xf_graph *g, xf_canon_stats *st, xf_error *err);
/* A Pad of zeros over the spatial dims alone (constant mode, value 0,
 * constant pads, none negative) that only a Conv or an AveragePool reads
 * (explicit pads, no auto_pad; the pool without ceil_mode, from opset 7,
 * and then counting the padding: count_include_pad) becomes that node's
 * pads, as ONNX Runtime's PadFusion does. */
xf_status xf_pass_fold_pads(xf_graph *g, int64_t opset, xf_canon_stats *st, xf_error *err);
/* Transposes moved later through the ops that carry a layout along
 * (elementwise ops from opset 7, Concat, Pad, reductions, Softmax from
 * opset 13) and composed with the Transposes they meet, cancelling those
 * that invert each other (TensorFlow's NHWC exports wrap every Conv in a
 * Transpose to NCHW and one back), like ONNX Runtime's transpose
 * optimizer.  Kept only when the graph ends with fewer Transposes; graph
 * outputs keep their names and shapes. */
xf_status xf_pass_push_transposes(xf_graph *g, int64_t opset, xf_canon_stats *st, xf_error *err);
xf_status xf_pass_remove_dead(xf_graph *g, xf_canon_stats *st, xf_error *err);
/* Floating-point constants of at least 256 bytes that equal another (the
 * same weights folded once per step of an unrolled RNN) are read from one
 * of them; dead-node removal then drops the others. */
xf_status xf_pass_merge_constants(xf_graph *g, xf_canon_stats *st, xf_error *err);
/* What canonicalization leaves alone.  A condition folded at the size a
 * symbolic dim was given may differ at other sizes: xflowc keeps such an
 * If, and its condition is computed again at run time. */
typedef struct xf_canon_options {
    bool keep_if;                       /* every If stays */
    int n_keep_conditions;              /* an If whose condition value has one of these names stays */
    const char *const *keep_conditions;
} xf_canon_options;
/* An If whose condition is a constant becomes the nodes of the branch it
 * picks (when the subgraph loaded and its names are free in g); the If is
 * left without outputs, for dead-node removal.  opt may be NULL. */
xf_status xf_pass_inline_constant_if(xf_graph *g, const xf_canon_options *opt, xf_canon_stats *st, xf_error *err);
/* All of the above, to a fixed point. */
xf_status xf_canonicalize(xf_graph *g, int64_t opset, xf_node_eval_fn eval, xf_canon_stats *st,
                          xf_error *err);
/* The same with options (NULL: xf_canonicalize's). */
xf_status xf_canonicalize_with(xf_graph *g, int64_t opset, xf_node_eval_fn eval, const xf_canon_options *opt,
                               xf_canon_stats *st, xf_error *err);

/* ---------------------------------------------------------------- sizes */

/* Constants that depend on the sizes of symbolic dims (core/canon_sizes.c).
 * g is a graph canonicalized at the sizes it uses; at[] is the same model
 * canonicalized at other sizes (at most XF_SIZES_MAX).  A folded constant
 * whose data differ between them depends on those sizes.
 * xf_sizes_generalize rewrites, in g, the ones that can be written without
 * the sizes: a Reshape's shape entries that copy an input dim become 0 (and
 * one entry left may become -1), an Expand's entries that keep an input dim
 * become 1.  The names of the others are appended to *rest;
 * xf_sizes_recompute then replaces those still constants in g by the nodes
 * that computed them in src (the graph as loaded), which read the shapes of
 * values g must still have. */
#define XF_SIZES_MAX 4
typedef struct xf_names {
    int n;
    char **names;
} xf_names;
void xf_names_free(xf_names *l);
xf_status xf_sizes_generalize(xf_graph *g, const xf_graph *const *at, int n_at, xf_names *rest, int *n_written,
                              xf_error *err);
xf_status xf_sizes_recompute(xf_graph *g, const xf_graph *src, const xf_names *names, int *n_done, xf_error *err);

#ifdef __cplusplus
}
#endif
#endif
