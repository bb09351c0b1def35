/* Substitution rules: the type shared by the generator (which finds them),
 * the verifier (which proves them) and the optimizer (which applies them),
 * and the plain-text library file that holds them.
 *
 * A rule is a pair of small graphs over the same rule inputs.  Both sides are
 * ordinary xf_graphs: the pattern's graph inputs and the replacement's graph
 * inputs are the same rule inputs in the same order (inputs[k] of each side
 * is rule input k), and outputs[j] of the pattern is replaced by outputs[j]
 * of the replacement.  Using xf_graph for both sides means every rule can be
 * shape-inferred, hashed and executed on cpu_ref like any model.
 *
 * The concrete shapes and attribute values a rule was found on are kept in
 * its graphs (so it can be run and checked), but a rule is *generalized*:
 *  - its rule inputs match tensors of any shape for which both sides'
 *    shape inference succeeds (the optimizer re-infers after rewriting),
 *    with two limits that keep generalization sound: a rule input matches
 *    only tensors of its own rank (a scalar input only scalars: a law of a
 *    scalar factor, (a.b)*s = (a*s).b, is false for a full tensor s), and
 *    a matched elementwise op broadcasts only where the rule's concrete
 *    graph does (equal input shapes stay equal), and
 *  - attribute fields listed in `bindings` are not the concrete values but
 *    expressions over rule parameters and input dimensions.  A parameter is
 *    bound when the pattern is matched (at its first occurrence in a pattern
 *    binding); replacement bindings are evaluated from the bound values;
 *    `constraints` must hold for the rule to apply.  A pattern binding whose
 *    expression is not a lone parameter is a condition: the matched node's
 *    field must equal its value (the generator writes Split sizes this way,
 *    e.g. "bind pattern 1 split[0] = a[0]": the split must cut the
 *    concatenation where input a ends).  xf_rule_validate treats a lone
 *    parameter in a pattern binding as its binding occurrence.
 * The text format is described at the top of core/rule_format.c.
 * Attribute fields not listed in bindings must equal the concrete value. */
#ifndef XF_RULE_H
#define XF_RULE_H

#include "xf_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Attribute fields a rule may generalize.  Index selects the element of an
 * array field (kernel[i], strides[i], pads[i], split[i], perm[i]). */
typedef enum xf_attr_field {
    XF_AF_KERNEL = 0,  /* kernel[index] */
    XF_AF_STRIDE,      /* strides[index] */
    XF_AF_PAD,         /* pads[index] (begins then ends) */
    XF_AF_DILATION,    /* dilations[index] */
    XF_AF_GROUP,
    XF_AF_AXIS,
    XF_AF_ACTIVATION,  /* xf_activation value */
    XF_AF_SPLIT,       /* split[index]; n_split follows the largest index bound */
    XF_AF_PERM,        /* perm[index] */
    XF_AF_COUNT_
} xf_attr_field;

const char *xf_attr_field_name(xf_attr_field f); /* "kernel", "stride", ... */
/* Reads / writes field f[index] of a; false when index is out of range. */
bool xf_attr_field_get(const xf_attrs *a, xf_attr_field f, int index, int64_t *out);
bool xf_attr_field_set(xf_attrs *a, xf_attr_field f, int index, int64_t v);

/* Integer expressions over rule parameters and rule-input dimensions. */
typedef enum xf_expr_kind {
    XF_EX_CONST = 0, /* value */
    XF_EX_PARAM,     /* parameter a */
    XF_EX_DIM,       /* dimension b of rule input a (negative b counts from the end) */
    XF_EX_ADD,       /* lhs + rhs */
    XF_EX_SUB,
    XF_EX_MUL,
    XF_EX_DIV        /* exact division: fails (rule does not apply) when not exact */
} xf_expr_kind;

#define XF_EXPR_MAX_NODES 16

/* A small expression tree stored as an array; node 0 is the root. */
typedef struct xf_expr {
    int n;
    struct {
        xf_expr_kind kind;
        int64_t value; /* XF_EX_CONST */
        int a, b;      /* XF_EX_PARAM: a = param; XF_EX_DIM: a = input, b = dim */
        int lhs, rhs;  /* indices of operand nodes for ADD..DIV */
    } node[XF_EXPR_MAX_NODES];
} xf_expr;

xf_expr xf_expr_const(int64_t v);
xf_expr xf_expr_param(int p);
xf_expr xf_expr_dim(int input, int dim);
/* lhs op rhs (both copied into one tree); n == 0 when too large. */
xf_expr xf_expr_binary(xf_expr_kind op, const xf_expr *lhs, const xf_expr *rhs);
/* Evaluates e. params[i] valid where bound[i]; input_shapes[k] for rule
 * input k.  False when a parameter is unbound, a dim is out of range, or a
 * division is not exact. */
bool xf_expr_eval(const xf_expr *e, const int64_t *params, const bool *bound, const xf_shape *input_shapes,
                  int n_inputs, int64_t *out);

/* A generalized attribute: field[index] of node `node` on one side is e. */
typedef struct xf_binding {
    bool replacement; /* false: pattern side */
    int node;
    xf_attr_field field;
    int index;
    xf_expr e;
} xf_binding;

typedef enum xf_cmp { XF_CMP_EQ = 0, XF_CMP_NE, XF_CMP_LT, XF_CMP_LE, XF_CMP_ODD } xf_cmp;

/* lhs cmp rhs (rhs unused for XF_CMP_ODD). */
typedef struct xf_constraint {
    xf_cmp cmp;
    xf_expr lhs, rhs;
} xf_constraint;

/* Constants a rule may use, sized by the match: the identity matrix (n x n),
 * the identity convolution kernel (n x n x kh x kw, 1 at the centre of each
 * diagonal channel pair; kh and kw odd) and the average-pooling kernel
 * (n x n x kh x kw, 1/(kh*kw) on each diagonal channel pair: a stride-s
 * same-padded convolution with it is AveragePool counting the padding). */
typedef enum xf_const_kind {
    XF_CONST_NONE = 0,
    XF_CONST_IDENTITY_MATRIX,
    XF_CONST_IDENTITY_KERNEL,
    XF_CONST_POOL_KERNEL,
    XF_CONST_KIND_COUNT_
} xf_const_kind;

const char *xf_const_kind_name(xf_const_kind k); /* "identity_matrix", ... */
xf_const_kind xf_const_kind_from_name(const char *name); /* XF_CONST_NONE when unknown */
/* Whether shape s fits kind k (square in the first two dims; odd kernels). */
bool xf_const_shape_fits(xf_const_kind k, const xf_shape *s);
/* A new FLOAT tensor of kind k and shape s; NULL when s does not fit or
 * memory runs out. */
xf_tensor *xf_const_make(xf_const_kind k, const xf_shape *s);
/* The kind whose values t holds exactly (the pooling kernel within float
 * rounding of 1/(kh*kw)), XF_CONST_NONE for any other tensor. */
xf_const_kind xf_const_kind_of(const xf_tensor *t);

/* A rule constant: the value named `name` on either side (an initializer
 * of the side's graph holding the constant at the shape the rule was found
 * on) stands for the constant of its kind whose dims are dims[] evaluated
 * on the matched inputs. */
typedef struct xf_rule_const {
    char *name;
    xf_const_kind kind;
    int ndim;
    xf_expr dims[XF_MAX_DIMS];
} xf_rule_const;

typedef struct xf_rule {
    char *name;          /* unique within a library, e.g. "r0042" */
    xf_graph *pattern;   /* owns */
    xf_graph *replacement;
    int n_params;
    char **param_names;  /* for printing; may be NULL entries */
    int n_bindings;
    xf_binding *bindings;
    int n_constraints;
    xf_constraint *constraints;
    int n_consts;
    xf_rule_const *consts;
    /* Filled by the verifier: proved rules only enter a library. */
    bool proved;
    char *provenance;    /* free text, e.g. "fingerprint 3f2a..., found on 2x4x5x5" */
} xf_rule;

xf_rule *xf_rule_create(const char *name);
void xf_rule_free(xf_rule *r);
xf_rule *xf_rule_clone(const xf_rule *r);
/* The rule constant value v of side g stands for, or NULL. */
const xf_rule_const *xf_rule_const_of(const xf_rule *r, const xf_graph *g, int v);
/* Shape of constant c for rule inputs of the given shapes; false when a dim
 * cannot be evaluated or the shape does not fit c's kind. */
bool xf_rule_const_shape(const xf_rule_const *c, const xf_shape *input_shapes, int n_inputs, xf_shape *out);
/* Appends a constant (name copied); false when out of memory. */
bool xf_rule_add_const(xf_rule *r, const char *name, xf_const_kind kind, int ndim, const xf_expr *dims);

/* Checks both sides: same rule inputs (count, dtypes), same output count,
 * bindings refer to existing nodes/fields, expressions to existing params and
 * inputs, every replacement-side parameter is bound on the pattern side. */
xf_status xf_rule_validate(const xf_rule *r, xf_error *err);

/* A library: rules plus the header that says what produced them. */
typedef struct xf_library {
    int version;          /* library format version (XF_LIBRARY_VERSION) */
    char *generator;      /* e.g. "xflow-gen 0.1.0" */
    char *op_set;         /* comma-separated op names the generator enumerated */
    int max_ops;
    uint64_t seed;
    int64_t opset;        /* ONNX opset the rules are written for */
    int n_rules, cap_rules;
    xf_rule **rules;
} xf_library;

#define XF_LIBRARY_VERSION 1

xf_library *xf_library_create(void);
void xf_library_free(xf_library *lib);
/* Takes ownership of r. */
xf_status xf_library_add(xf_library *lib, xf_rule *r, xf_error *err);
/* Adds r (taken) as a rule left out of a library: named prefix0000,
 * prefix0001... in order, its provenance led by why (one line). */
xf_status xf_library_add_left_out(xf_library *lib, xf_rule *r, char prefix, const char *why, xf_error *err);

/* The text format (plain, one rule per block, diffable).  Parse errors name
 * the line: "rules.txt:42: unknown op 'Cnv'". `name` is used in messages. */
xf_status xf_library_parse(const char *text, size_t len, const char *name, xf_library **out, xf_error *err);
xf_status xf_library_load(const char *path, xf_library **out, xf_error *err);
/* Writes text (malloc'd, NUL-terminated); byte-identical for equal libraries. */
xf_status xf_library_format(const xf_library *lib, char **text, size_t *len, xf_error *err);
/* Atomic (temporary file + rename). */
xf_status xf_library_save(const xf_library *lib, const char *path, xf_error *err);

#ifdef __cplusplus
}
#endif
#endif
