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

/* Evaluates op with attributes a on in[0..n_in), every trial: out[0..n_out)
 * must point to buffers of GEN_TRIALS * cap elements; cap bounds one trial.  False when the op, its attributes or the
 * shapes are outside the generator's semantics (see fingerprint.c). */
bool gen_eval(xf_op op, const xf_attrs *a, int n_in, const gen_val *in, int n_out, gen_val *out, int64_t cap);

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
    GV_COUNT
} gen_variant;

/* Tensor kinds: weights only meet weights, activations only activations,
 * except as the second input of Conv. */
enum { GK_ACT = 0, GK_WEIGHT = 1, GK_SCALAR = 2 };

typedef struct gen_variant_info {
    xf_op op;
    int n_in, n_out;
} gen_variant_info;

extern const gen_variant_info gen_variants[GV_COUNT];

/* Node attributes for variant v given its input shapes (kernel and same
 * padding follow the weight; split halves the axis). */
void gen_variant_attrs(gen_variant v, const xf_shape *in, xf_attrs *a);

/* ------------------------------------------------------------ input pool */

#define GEN_MAX_POOL 16

typedef struct gen_pool_entry {
    const char *name;
    int kind;
    xf_shape shape;
} gen_pool_entry;

extern const gen_pool_entry gen_pool[];
extern const int gen_pool_size;

/* The pool's random values for one seed, and their fingerprints. */
typedef struct gen_pool_values {
    gen_val val[GEN_MAX_POOL];
    uint64_t fp[GEN_MAX_POOL];
} gen_pool_values;

/* Fills pv; storage holds gen_pool_size * GEN_VAL_STRIDE residues. */
void gen_pool_fill(uint64_t seed, gen_pool_values *pv, uint64_t *storage);

/* ------------------------------------------------------------ graph records */

/* Up to 4 ops packed 16 bits each: variant (5 bits), input 0 and input 1
 * (5 bits each: pool tensors 0..n_pool-1, then op outputs in order).
 * GEN_INPUTS_GRAPH as the first op's variant marks a graph of no ops whose
 * outputs are the pool tensors named by its inputs (31 = none). */
#define GEN_MAX_OPS 4
#define GEN_INPUTS_GRAPH 31
#define GEN_NO_INPUT 31

typedef struct gen_record {
    uint64_t fp;
    uint64_t code;
} gen_record;

static inline int gen_code_variant(uint64_t code, int k) { return (int)((code >> (16 * k + 10)) & 31); }
static inline int gen_code_in(uint64_t code, int k, int j) { return (int)((code >> (16 * k + 5 * j)) & 31); }
static inline uint64_t gen_code_op(int variant, int in0, int in1)
{
    return (uint64_t)variant << 10 | (uint64_t)in1 << 5 | (uint64_t)in0;
}

/* A decoded graph: its values (pool tensors first), ops and outputs. */
typedef struct gen_graph {
    int n_ops;
    int variant[GEN_MAX_OPS];
    int in[GEN_MAX_OPS][2];
    int n_values;              /* gen_pool_size + op outputs */
    int out_base[GEN_MAX_OPS]; /* value id of op k's first output */
    int n_outputs;
    int outputs[2 * GEN_MAX_OPS]; /* value ids, sorted by fingerprint */
    uint64_t out_fp[2 * GEN_MAX_OPS];
    uint64_t val_fp[GEN_MAX_POOL + 2 * GEN_MAX_OPS];
    uint64_t code;
} gen_graph;

/* Combined fingerprint of a graph's output fingerprints (sorted in place);
 * 0 when two outputs are equal (a graph computing a value twice). */
uint64_t gen_combine_fps(uint64_t *fps, int n);

/* Enumerates graphs of up to max_ops ops with `threads` workers; *records
 * (sorted by fingerprint, then code) receives every recorded graph. */
xf_status gen_enumerate(int max_ops, uint64_t seed, int threads, gen_record **records, int64_t *n_records,
                        const xf_gen_options *opt, xf_error *err);

/* Re-evaluates a code over the pool's values: fills g with its ops, outputs
 * and value fingerprints.  scratch holds 2 * GEN_MAX_OPS * GEN_VAL_STRIDE
 * residues.  False when the code is invalid. */
bool gen_decode(uint64_t code, const gen_pool_values *pool, gen_graph *g, uint64_t *scratch);

/* Turns records into the library's rules (grouping, pruning, generalizing,
 * the numerical check). */
xf_status gen_build_rules(const gen_record *records, int64_t n_records, uint64_t seed, xf_library *lib,
                          xf_gen_stats *st, const xf_gen_options *opt, xf_error *err);

#endif
