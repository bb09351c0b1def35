/* xflow generator: enumerates every small graph over a fixed pool of input
 * tensors and a fixed operator set, fingerprints each exactly (integers
 * modulo the prime 2^61-1 on seeded random inputs), groups graphs with equal
 * fingerprints into candidate rules, prunes them, generalizes them, checks
 * them numerically on cpu_ref, and returns them as an xf_library.
 *
 * Proving the candidates is the verifier's job (verifier/xf_verify.h); the
 * rules returned here have proved == false. */
#ifndef XF_GENERATOR_H
#define XF_GENERATOR_H

#include "xf_core.h"
#include "xf_rule.h"

#ifdef __cplusplus
extern "C" {
#endif

#define XF_GENERATOR_VERSION "xflow-gen 0.1.0"
/* The ONNX opset the generated rules are written for. */
#define XF_GENERATOR_OPSET 17

typedef struct xf_gen_options {
    int max_ops;   /* graphs of up to this many ops (1..4); 0 = 3 */
    uint64_t seed; /* fingerprint inputs; the same seed gives the same library */
    int threads;   /* worker threads; 0 = one per online core */
    /* Called now and then from the calling thread (may be NULL). */
    void (*progress)(const char *stage, double fraction, void *user);
    void *user;
    /* When not NULL, receives the candidates dropped because their sides
     * differ (in further exact trials, or on cpu_ref with floats) as
     * unproved rules named f0000..., each provenance saying why. */
    xf_library *dropped;
} xf_gen_options;

/* Counts at every stage, and where the time went. */
typedef struct xf_gen_stats {
    int64_t graphs;           /* graphs enumerated (each recorded once) */
    int64_t graphs_renamed;   /* the same, counting graphs equal up to renaming inputs of
                                 one class (kind and shape) once per renaming */
    int64_t fingerprints;     /* distinct fingerprints among them */
    int64_t groups;           /* fingerprints shared by two or more graphs */
    int64_t candidates;       /* graph pairs from those groups */
    int64_t pruned_renaming;  /* pairs equal to an earlier one up to renaming inputs */
    int64_t pruned_common;    /* pairs sharing a subgraph the rule does not need */
    int64_t pruned_implied;   /* pairs whose pattern holds a part a smaller rule rewrites */
    int64_t pruned_constant;  /* pairs with a constant in the pattern, or in a replacement
                                 that neither removes an op on activations nor merges
                                 weights (see candidates.c) */
    int64_t unexpressible;    /* pairs without a sound general form (split sizes) or
                                 that cannot run on cpu_ref */
    int64_t collisions;       /* pairs whose fingerprints agree but whose sides differ in
                                 further exact trials (fresh inputs and models) */
    int64_t false_positives;  /* pairs that pass both and whose sides differ on cpu_ref
                                 with floats */
    int64_t generalized;      /* rules with attribute bindings over input dims */
    int64_t reversed;         /* rules also written from the smaller side (neither side
                                 computes fewer ops on activations, see candidates.c) */
    int64_t rules;            /* rules in the returned library */
    double seconds_enumerate, seconds_rules, seconds_total;
    size_t peak_records_bytes; /* memory held by the graph records */
} xf_gen_stats;

/* Runs the whole pipeline; *out receives a library with header fields set
 * (generator, op set, max ops, seed, opset) and rules named r0000, r0001...
 * ordered by size and structure (an order that does not depend on the seed
 * or the thread count).  stats may be NULL. */
xf_status xf_generate(const xf_gen_options *opt, xf_library **out, xf_gen_stats *stats, xf_error *err);

/* Comma-separated names of the ops the generator enumerates. */
const char *xf_gen_op_set(void);

/* The fingerprint of each output of g (fps[g->n_outputs]) under the same
 * exact semantics the enumerator uses, with input k of g filled with seeded
 * random residues that depend only on (seed, k, shape), and integer-valued
 * constants (identity kernels, all-ones) taken exactly.  Two graphs over the
 * same inputs whose fingerprints agree compute the same function with high
 * probability.  XF_ERR_UNSUPPORTED names a node outside the generator's
 * semantics (op, attributes, or shapes). */
xf_status xf_gen_fingerprint_graph(const xf_graph *g, uint64_t seed, uint64_t *fps, xf_error *err);

#ifdef __cplusplus
}
#endif
#endif
