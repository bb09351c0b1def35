/* xflowc's comparison of two graphs (tools/xflowc_compare.c): both run on
 * one backend with the same inputs, and the tolerance their outputs are
 * held to (--check, and the check of symbolic dims at other sizes). */
#ifndef XFLOWC_COMPARE_H
#define XFLOWC_COMPARE_H

#include "xf_runtime.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The outputs of two graphs run on one backend with the same inputs (the
 * files given, seeded random values for the rest). */
typedef struct xfc_run_pair {
    xf_tensor **in, **a, **b;
    int n_in, n_out;
    bool ran; /* the failing graph's session was made and the inputs loaded: a failure came from running */
} xfc_run_pair;

void xfc_run_pair_free(xfc_run_pair *r);
/* Runs a (as given: the sessions' own rewrites are checked too), then b,
 * on backend, with the files given for the first n_files inputs and
 * seeded random values for the rest. */
xf_status xfc_run_both(const xf_graph *a, const xf_graph *b, int64_t opset, const char *backend,
                       const char *const *files, int n_files, uint64_t seed, xfc_run_pair *r, xf_error *err);

typedef struct xfc_tolerance {
    double atol, rtol;
    bool adapted; /* not the values given or the defaults */
} xfc_tolerance;

/* The tolerance for an expected output: atol and rtol (negative: not given,
 * 1e-4 and 1e-3), atol shrinking with outputs far below 1 (random weights
 * can make them 1e-14, and they would pass any absolute tolerance).  A
 * float16 or bfloat16 output rounds every op to 11 or 8 significant bits,
 * compounded through the graph: unless a tolerance is given, 1e-2 or 5e-2
 * of its largest |element|, absolute and relative. */
xfc_tolerance xfc_output_tolerance(const xf_tensor *want, double atol, double rtol);

/* Runs a and b on the fastest CPU backend with the same seeded random
 * inputs: 1 when every output agrees (as --check, default tolerances), 0
 * when one does not or b fails, -1 when a itself cannot run there (an op
 * no backend runs, an input of a type sessions do not take); why says so. */
int xfc_same_outputs(const xf_graph *a, const xf_graph *b, int64_t opset, uint64_t seed, char *why, size_t n);

#endif
