/* Helpers shared by the backend suites (test_cpu_backend.c,
 * test_cuda_backend.c): random test graphs, and one check that runs a
 * graph on a backend and on cpu_ref with the same inputs. */
#ifndef XF_BACKEND_UTIL_H
#define XF_BACKEND_UTIL_H

#include "xf_core.h"

#include <stdbool.h>
#include <stdint.h>

/* A graph input "inN" of dtype t. */
int xf_bt_input(xf_graph *g, xf_dtype t, xf_shape s);
/* A random float initializer; `positive` maps it into [0.5, 1.5]. */
int xf_bt_random_const(xf_graph *g, xf_shape s, bool positive);
/* Adds node op on ins; its output becomes the graph output. */
int xf_bt_finish_single(xf_graph *g, xf_op op, int n_in, const int *ins);
/* Sets a window op's kernel (NULL: none), strides, pads and dilations. */
void xf_bt_set_window(xf_attrs *a, int ns, const int64_t *k, const int64_t *s, const int64_t *p_begin,
                      const int64_t *p_end, const int64_t *d);
/* Runs g on cpu_ref and on `backend` (static mode, and dynamic mode too
 * when dynamic_too) with the same seeded random inputs, twice per session
 * (the second run reuses what prepare made), and compares every output.  A
 * negative atol is relative to the largest expected element (deep
 * networks, where elements near zero carry the rounding of large sums). */
void xf_bt_check_graph(const xf_graph *g, int64_t opset, const char *backend, bool dynamic_too, double atol,
                       double rtol, const char *what);

#endif
