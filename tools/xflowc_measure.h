/* xflowc's measured choice between the graph before the search and the
 * search's result (tools/xflowc_measure.c). */
#ifndef XFLOWC_MEASURE_H
#define XFLOWC_MEASURE_H

#include "xf_runtime.h"

#include <stdbool.h>
#include <stdint.h>

/* Whether after (the search's result) should be written rather than before:
 * both timed on the cpu backend with the inputs given as files (inputs[0..
 * n_inputs)) or seeded random ones, unless estimate (seconds a run) is over
 * 0.5; prints what it measured. */
bool xfc_faster_here(const xf_graph *before, const xf_graph *after, int64_t opset, double estimate,
                     const char *const *inputs, int n_inputs, uint64_t seed);

#endif
