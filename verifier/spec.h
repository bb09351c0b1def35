/* The operator specification language shared by the symbolic prover and the
 * concrete axiom validator.  Axioms are written once, as s-expressions, and
 * each side interprets them: the prover as quantified formulas over
 * uninterpreted functions, the validator as element-wise computations. */
#ifndef XF_VERIFY_SPEC_H
#define XF_VERIFY_SPEC_H

#include <stdbool.h>
#include <stdint.h>

#include <z3.h>

/* Functions of the specification.  Integer parameters come first, tensor
 * arguments last (see vf_fn_info). */
typedef enum vf_fn {
    /* tensor-valued */
    VF_EWADD = 0,   /* x + y, equal shapes */
    VF_EWMUL,       /* x * y, equal shapes */
    VF_SMUL,        /* x * s, s a scalar tensor */
    VF_MATMUL,      /* 2-D product */
    VF_TRANSPOSE,   /* 2-D transpose */
    VF_ACT,         /* (act c x): activation c (0 none, 1 relu, 2 sigmoid, 3 tanh) */
    VF_CONV,        /* (conv sh sw ph pw c x w): NCHW conv, symmetric pads, activation c */
    VF_BIAS,        /* (bias y b): y (NCHW) plus b[c] on every element of channel c */
    VF_POOL_AVG,    /* (pool_avg kh kw sh sw ph pw x): padding counts as zeros */
    VF_POOL_MAX,    /* (pool_max kh kw sh sw ph pw x): padding ignored */
    VF_CONCAT,      /* (concat a x y) */
    VF_SPLIT0,      /* (split0 a n x): the first n slices of x along a */
    VF_SPLIT1,      /* (split1 a n x): the rest */
    VF_ENLARGE,     /* (enlarge kh kw w): kernel zero-padded (centred) to kh x kw */
    VF_CONST_IMM,   /* (const_imm n): n x n identity matrix */
    VF_CONST_ICONV, /* (const_iconv n kh kw): n x n x kh x kw identity kernel (centre 1) */
    VF_CONST_POOL,  /* (const_pool n kh kw): n x n x kh x kw, 1/(kh*kw) on the channel diagonal */
    VF_SAMPLE,      /* (sample sh sw x): NCHW x at rows 0, sh, 2sh... and columns 0, sw, 2sw...
                       (what a stride does to a window op's stride-1 output) */
    /* integer-valued */
    VF_DIM,         /* (dim x i): size of dimension i of x */
    VF_ADD, VF_SUB, VF_MUL, VF_DIV, VF_MOD,
    /* boolean */
    VF_EQ, VF_NE, VF_LT, VF_LE, VF_AND, VF_OR,
    VF_FN_COUNT
} vf_fn;

typedef enum vf_sort { VF_S_TENSOR = 0, VF_S_INT, VF_S_BOOL } vf_sort;

typedef struct vf_fn_info {
    const char *name;
    int n_int;    /* leading integer arguments (-1: variadic, for and/or) */
    int n_tensor; /* trailing tensor arguments */
    vf_sort result;
} vf_fn_info;

extern const vf_fn_info vf_fn_infos[VF_FN_COUNT];

#define VF_MAX_ARGS 9
#define VF_MAX_VARS 12

typedef enum vf_term_kind { VF_T_NUM = 0, VF_T_VAR, VF_T_APP } vf_term_kind;

typedef struct vf_term {
    vf_term_kind kind;
    int64_t num;  /* VF_T_NUM */
    int var;      /* VF_T_VAR */
    vf_fn fn;     /* VF_T_APP */
    int n_args;
    struct vf_term *args[VF_MAX_ARGS];
} vf_term;

/* Domains of integer variables in concrete validation. */
typedef enum vf_domain {
    VF_D_TENSOR = 0, /* not an integer: a tensor of rank `rank` */
    VF_D_AXIS,       /* 0..1 */
    VF_D_STRIDE,     /* 1..2 */
    VF_D_PAD,        /* 0..1 */
    VF_D_ACT,        /* 0..3 */
    VF_D_KERNEL,     /* 1 or 3 */
    VF_D_SIZE,       /* 1..3 */
    VF_D_INDEX       /* 0..3 (a dimension index) */
} vf_domain;

typedef struct vf_var {
    char name[8];
    vf_domain domain;
    int rank; /* tensors only */
} vf_var;

/* A parsed axiom: for all vars, guard implies lhs = rhs. */
typedef struct vf_axiom {
    int n_vars;
    vf_var vars[VF_MAX_VARS];
    vf_term *guard; /* NULL: true */
    vf_term *lhs, *rhs;
    vf_term *pool;  /* owns every term (one allocation) */
} vf_axiom;

/* The axiom table: name, plain-words comment, and the text. */
typedef struct vf_axiom_text {
    const char *name;
    const char *doc;
    const char *vars;
    const char *guard;
    const char *lhs, *rhs;
} vf_axiom_text;

extern const vf_axiom_text vf_axioms[];
extern const int vf_n_axioms;

/* Parses one axiom; false with msg set on a syntax or sort error. */
bool vf_axiom_parse(const char *vars, const char *guard, const char *lhs, const char *rhs, vf_axiom *out,
                    char *msg, size_t msg_len);
void vf_axiom_release(vf_axiom *a);

/* The Z3 side of the specification. */
typedef struct vf_z3 {
    Z3_context ctx;
    Z3_sort tensor, integer;
    Z3_func_decl fn[VF_FN_COUNT]; /* uninterpreted functions (tensor-valued ones and dim) */
} vf_z3;

/* Creates a context with the error handler installed and every function
 * declared.  False when Z3 cannot be set up. */
bool vf_z3_init(vf_z3 *z, char *msg, size_t msg_len);
void vf_z3_fini(vf_z3 *z);
/* The error handler records the last Z3 error here (cleared by reading). */
bool vf_z3_take_error(char *msg, size_t msg_len);

/* Builds "for all vars: guard => lhs = rhs" with patterns for E-matching.
 * NULL (msg set) when no side can serve as a pattern. */
Z3_ast vf_axiom_to_z3(vf_z3 *z, const vf_axiom *a, char *msg, size_t msg_len);
/* Applies fn to already-built arguments (integer arithmetic interpreted,
 * tensor functions uninterpreted). */
Z3_ast vf_z3_apply(vf_z3 *z, vf_fn fn, int n_args, Z3_ast *args);

#endif
