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

/* A random model for differential testing of a backend against cpu_ref,
 * as xf_random_model's (a 4-D convolutional graph or a 2-D matrix one)
 * with more ops (the `cpu` backend's own loops, activations written out,
 * PRelu, Clip, Resize, depthwise convolutions, means, normalizations,
 * Softmax), channel counts in whole
 * blocks of oneDNN's layouts or not, larger products, several graph
 * outputs. */
xf_status xf_random_backend_model(uint64_t seed, int n_ops, xf_model **out, xf_error *err);

/* Runs `count` models of xf_random_backend_model (seeds seed, seed+1,
 * ...) on `backend` in static mode and in dynamic mode and on cpu_ref,
 * comparing every output (within 1e-4 of its largest value, or of 0.1
 * where that is smaller, or 1e-3 relative); returns the number that
 * failed, each reported on log, its model and inputs kept in workdir. */
int xf_backend_difftest_run(const char *backend, uint64_t seed, int count, int n_ops, const char *workdir, FILE *log);

/* Writes `count` random models (seeds seed, seed+1, ...) of about n_ops
 * operators into workdir and runs `xflowc --check` on each; returns the
 * number that failed, each reported on log with its kept model. */
int xf_difftest_run(const char *xflowc, uint64_t seed, int count, int n_ops, const char *workdir, FILE *log);

#endif
