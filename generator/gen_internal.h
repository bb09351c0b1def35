/* Shared between the generator's parts: exact values, the op variants it
 * enumerates, the input pool, graph records and the candidate stage. */
#ifndef XF_GEN_INTERNAL_H
#define XF_GEN_INTERNAL_H

#include "xf_generator.h"

/* ------------------------------------------------------------ exact values */

/* The prime 2^61 - 1: residues fit in 64 bits, products in 128. */
#define GEN_P ((uint64_t)0x1FFFFFFFFFFFFFFFull)

/* Most elements one value may have (larger results are not enumerated). */
#define GEN_MAX_ELEMS 2048

/* Every fingerprint evaluates a graph on this many independent random
 * inputs at once: the polynomial ops need one, but the random-function
 * model of Relu and MaxPool can let a false law pass on one input with a
 * probability that is small, not negligible (see fingerprint.c). */
#define GEN_TRIALS 3
/* Residues one value buffer holds: every trial's copy. */
#define GEN_VAL_STRIDE (GEN_TRIALS * GEN_MAX_ELEMS)

/* A tensor of residues: v holds GEN_TRIALS copies of numel(shape) values
 * one after another, one per trial. */
typedef struct gen_val {
    xf_shape shape;
    uint64_t *v;
} gen_val;

uint64_t gen_mix64(uint64_t x);
/* Residue for element i of the random tensor numbered `stream`. */
uint64_t gen_random_residue(uint64_t seed, uint64_t stream, int64_t i);
/* Hash of shape and residues: the fingerprint of one tensor. */
uint64_t gen_val_hash(const gen_val *t);
/* gen_val_hash of t[0..n) into out[0..n), faster than one at a time. */
void gen_val_hashes(const gen_val *t, int n, uint64_t *out);

/* Evaluates op with attributes a on in[0..n_in), every trial: out[0..n_out)
 * must point to buffers of GEN_TRIALS * cap elements; cap bounds one trial.  False when the op, its attributes or the
 * shapes are outside the generator's semantics (see fingerprint.c). */
bool gen_eval(xf_op op, const xf_attrs *a, int n_in, const gen_val *in, int n_out, gen_val *out, int64_t cap);
/* gen_eval under the models of trials first_model .. first_model +
 * GEN_TRIALS - 1 (gen_eval uses 0..): other random orders, Relu floors and
 * Sigmoid and Tanh functions, for checking agreements anew. */
bool gen_eval_models(int first_model, xf_op op, const xf_attrs *a, int n_in, const gen_val *in, int n_out,
                     gen_val *out, int64_t cap);

/* xf_gen_fingerprint_graph under the models from first_model on. */
xf_status gen_fingerprint_graph(const xf_graph *g, uint64_t seed, int first_model, uint64_t *fps, xf_error *err);

/* Convolutions seen recently, before bias and activation: the enumerator
 * applies one Conv(x, w) under every bias and activation variant and below
 * many different graphs (at three ops, about 35 times each).  A
 * direct-mapped cache keyed by the fingerprints of x and w (which also fix
 * the kernel and padding: the enumerator's convolutions are same-padded)
 * and the stride holds the correlation; bias and activation are applied to
 * it per use. */
typedef struct gen_conv_memo gen_conv_memo;
gen_conv_memo *gen_conv_memo_create(void);
void gen_conv_memo_free(gen_conv_memo *m);
/* gen_eval of Conv(x, w[, bias]) with attributes a, through the cache. */
bool gen_eval_conv_memo(gen_conv_memo *m, const xf_attrs *a, const gen_val *x, uint64_t x_fp, const gen_val *w,
                        uint64_t w_fp, const gen_val *bias, gen_val *out);

/* ------------------------------------------------------------ op variants */

/* What the enumerator may apply.  Variant 0 is unused so that a packed op
 * code of zero means "no op". */
typedef enum gen_variant {
    GV_NONE = 0,
    GV_MATMUL,
    GV_ADD,
    GV_MUL,
    GV_SCALE,       /* Mul by the scalar rule input */
    GV_CONV,
    GV_CONV_RELU,   /* Conv with fused Relu (attrs.activation) */
    GV_RELU,
    GV_SIGMOID,
    GV_TANH,
    GV_MAX_POOL,
    GV_AVG_POOL,
    GV_CONCAT0,
    GV_CONCAT1,
    GV_SPLIT0,
    GV_SPLIT1,
    GV_TRANSPOSE,
    GV_CONV_BIAS,      /* Conv(x, w, b) */
    GV_CONV_BIAS_RELU, /* Conv(x, w, b) with fused Relu */
    GV_ENLARGE,        /* a 1x1, 1x3 or 3x1 kernel zero-padded (centred) to 3x3 */
    GV_CONV_S2,        /* Conv with stride 2 */
    GV_CONV_S2_RELU,   /* Conv with stride 2 and fused Relu */
    GV_COUNT
} gen_variant;

/* Tensor kinds: weights only meet weights, biases only biases, activations
 * only activations, except as the second and third inputs of Conv. */
enum { GK_ACT = 0, GK_WEIGHT = 1, GK_SCALAR = 2, GK_BIAS = 3 };

typedef struct gen_variant_info {
    xf_op op;
    int n_in, n_out;
} gen_variant_info;

/* Ops the enumerator does not count against max ops (see GEN_FREE_OPS). */
static inline bool gen_kind_free(int kind) { return kind == GK_BIAS; }

extern const gen_variant_info gen_variants[GV_COUNT];

/* Node attributes for variant v given its input shapes (kernel and same
 * padding follow the weight; split halves the axis). */
void gen_variant_attrs(gen_variant v, const xf_shape *in, xf_attrs *a);

/* ------------------------------------------------------------ input pool */

#define GEN_MAX_POOL 20

/* A pool tensor: random values, or (konst != XF_CONST_NONE) a rule constant
 * with fixed values, which the rule writes as a constant sized by the match
 * (xf_rule_const), never as a rule input. */
typedef struct gen_pool_entry {
    const char *name;
    int kind;
    xf_shape shape;
    xf_const_kind konst;
} gen_pool_entry;

extern const gen_pool_entry gen_pool[];
extern const int gen_pool_size;

/* The pool's random values for one seed, and their fingerprints. */
typedef struct gen_pool_values {
    gen_val val[GEN_MAX_POOL];
    uint64_t fp[GEN_MAX_POOL];
} gen_pool_values;

/* Residues of constant k at shape s into v (every trial alike): 1 for the
 * identities' ones, the inverse of the window size for the pooling kernel. */
bool gen_const_residues(xf_const_kind k, gen_val *v);

/* ------------------------------------------------------------ candidate checks (checks.c) */

/* Whether both sides of r agree, output for output, in further rounds of
 * exact evaluation under fresh models and inputs. */
bool gen_exact_recheck(const xf_rule *r, uint64_t seed);
/* Runs both sides of r on cpu_ref with the same random floats: 1 when every
 * output agrees within float rounding, 0 when one differs (max_diff says
 * by how much), -1 (why says how) when a side cannot run. */
int gen_sides_agree(const xf_rule *r, uint64_t seed, double *max_diff, char *why, size_t why_len);

/* Fills pv; storage holds gen_pool_size * GEN_VAL_STRIDE residues. */
void gen_pool_fill(uint64_t seed, gen_pool_values *pv, uint64_t *storage);

/* ------------------------------------------------------------ graph records */

/* A graph has up to GEN_MAX_OPS ops plus GEN_FREE_OPS bias ops: an op
 * computing a bias from biases (concatenating, adding or scaling them) is
 * folded into a constant when the final graph is written, so it is not
 * counted against max ops.  Without it, merging two biased convolutions
 * (concatenate kernels, concatenate biases, convolve, split) would need
 * four ops. */
#define GEN_MAX_OPS 4
#define GEN_FREE_OPS 1
#define GEN_MAX_SLOTS (GEN_MAX_OPS + GEN_FREE_OPS)
#define GEN_MAX_IN 3
/* Values of a graph: pool tensors, then op outputs (at most two each). */
#define GEN_MAX_VALUES (GEN_MAX_POOL + 2 * GEN_MAX_SLOTS)

/* Up to GEN_MAX_SLOTS ops packed 20 bits each: inputs 0, 1 and 2 (5 bits
 * each: pool tensors 0..n_pool-1, then op outputs in order) and the variant
 * (5 bits).  GEN_INPUTS_GRAPH as the first op's variant marks a graph of no
 * ops whose outputs are the pool tensors named by its inputs (31 = none). */
typedef unsigned __int128 gen_code;
#define GEN_INPUTS_GRAPH 31
#define GEN_NO_INPUT 31
#define GEN_OP_BITS 20

/* A recorded graph in 24 bytes (at four ops the records are most of the
 * generator's memory): the code's GEN_MAX_SLOTS * GEN_OP_BITS = 100 bits
 * in 64 + 32 + 8. */
typedef struct gen_record {
    uint64_t fp;
    uint64_t code_lo;
    uint32_t code_mid;
    uint8_t code_hi;
} gen_record;

_Static_assert(GEN_MAX_SLOTS * GEN_OP_BITS <= 104, "a record holds 104 bits of code");

static inline gen_code gen_record_code(const gen_record *r)
{
    return (gen_code)r->code_hi << 96 | (gen_code)r->code_mid << 64 | r->code_lo;
}
static inline gen_record gen_record_make(uint64_t fp, gen_code code)
{
    return (gen_record){fp, (uint64_t)code, (uint32_t)(code >> 64), (uint8_t)(code >> 96)};
}

static inline int gen_code_variant(gen_code code, int k) { return (int)((code >> (GEN_OP_BITS * k + 15)) & 31); }
static inline int gen_code_in(gen_code code, int k, int j) { return (int)((code >> (GEN_OP_BITS * k + 5 * j)) & 31); }
static inline gen_code gen_code_op(int variant, int in0, int in1, int in2)
{
    return (gen_code)((uint64_t)variant << 15 | (uint64_t)in2 << 10 | (uint64_t)in1 << 5 | (uint64_t)in0);
}

/* Records of one enumeration worker, by fingerprint range (records.c). */
#define GEN_RECORD_BUCKET_BITS 8
#define GEN_RECORD_BUCKETS (1 << GEN_RECORD_BUCKET_BITS)

typedef struct gen_record_block gen_record_block;

typedef struct gen_record_store {
    gen_record_block *head[GEN_RECORD_BUCKETS];
    int64_t count[GEN_RECORD_BUCKETS];
    int64_t total;
    bool nomem; /* a record was lost */
} gen_record_store;

void gen_store_push(gen_record_store *s, uint64_t fp, gen_code code);
void gen_store_free(gen_record_store *s);
/* Every record of stores[0..n_stores), sorted by fingerprint then code,
 * into *out (malloc'd); empties the stores as it goes.  `threads` workers. */
xf_status gen_store_assemble(gen_record_store *stores, int n_stores, int threads, gen_record **out, int64_t *n_out,
                             xf_error *err);

/* A decoded graph: its values (pool tensors first), ops and outputs. */
typedef struct gen_graph {
    int n_ops;
    int n_weight_ops;            /* ops computing only from weights, biases and scalars */
    int variant[GEN_MAX_SLOTS];
    int in[GEN_MAX_SLOTS][GEN_MAX_IN]; /* -1 where the op has fewer inputs */
    int n_values;                /* gen_pool_size + op outputs */
    int out_base[GEN_MAX_SLOTS]; /* value id of op k's first output */
    int n_outputs;
    int outputs[2 * GEN_MAX_SLOTS]; /* value ids, sorted by fingerprint */
    uint64_t out_fp[2 * GEN_MAX_SLOTS];
    uint64_t val_fp[GEN_MAX_VALUES];
    gen_code code;
} gen_graph;

/* Combined fingerprint of a graph's output fingerprints (sorted in place);
 * 0 when two outputs are equal (a graph computing a value twice). */
uint64_t gen_combine_fps(uint64_t *fps, int n);

/* Enumerates graphs of up to max_ops ops with `threads` workers; *records
 * (sorted by fingerprint, then code) receives every recorded graph, and
 * *n_renamed (when not NULL) how many graphs they stand for when graphs
 * equal up to renaming inputs of one class count separately. */
xf_status gen_enumerate(int max_ops, uint64_t seed, int threads, gen_record **records, int64_t *n_records,
                        int64_t *n_renamed, const xf_gen_options *opt, xf_error *err);

/* Re-evaluates a code over the pool's values: fills g with its ops, outputs
 * and value fingerprints.  scratch holds 2 * GEN_MAX_SLOTS * GEN_VAL_STRIDE
 * residues; convolutions go through memo when it is not NULL.  False when
 * the code is invalid. */
bool gen_decode(gen_code code, const gen_pool_values *pool, gen_graph *g, uint64_t *scratch, gen_conv_memo *memo);

/* Turns records into the library's rules (grouping, pruning, generalizing,
 * the numerical check). */
xf_status gen_build_rules(const gen_record *records, int64_t n_records, uint64_t seed, xf_library *lib,
                          xf_gen_stats *st, const xf_gen_options *opt, xf_error *err);

#endif
