/* Random valid models over the optimizer's op set, for differential testing
 * of the optimizer: every one must survive `xflowc --check`. */
#ifndef XF_RANDOM_GRAPH_UTIL_H
#define XF_RANDOM_GRAPH_UTIL_H

#include "xf_core.h"

#include <stdio.h>

/* A random model of about n_ops operators (opset 17): a 4-D convolutional
 * graph or a 2-D matrix graph, chosen by the seed; random shapes and
 * attributes; values shared between consumers; several graph outputs. */
xf_status xf_random_model(uint64_t seed, int n_ops, xf_model **out, xf_error *err);

/* Writes `count` random models (seeds seed, seed+1, ...) of about n_ops
 * operators into workdir and runs `xflowc --check` on each; returns the
 * number that failed, each reported on log with its kept model. */
int xf_difftest_run(const char *xflowc, uint64_t seed, int count, int n_ops, const char *workdir, FILE *log);

#endif
