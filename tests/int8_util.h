/* Helpers of the cpu backend's integer suites (test_cpu_int8.c,
 * test_cpu_int8_conv.c): graphs of one integer product or convolution
 * with random operands, and the check that runs one on cpu_ref and on
 * cpu, in static and dynamic mode, and compares the outputs. */
#ifndef XF_INT8_UTIL_H
#define XF_INT8_UTIL_H

#include "xf_core.h"

#include <stdbool.h>
#include <stdint.h>

/* A graph of one integer product and the tensors its graph inputs take. */
typedef struct q8_case {
    xf_graph *g;
    xf_tensor *feed[16];
    int n_feed;
    int node;
} q8_case;

/* How a zero point is given: absent, a constant 0, a constant of another
 * value, a graph input; or (weights) a constant of zeros per channel, one
 * of values drawn per channel. */
typedef enum { ZP_ABSENT, ZP_ZERO, ZP_CONST, ZP_RUNTIME, ZP_FORMS, ZP_ZERO_CHANNELS, ZP_CHANNELS } zp_form;

/* A convolution's geometry: spatial dims, groups, strides, pads, dilations. */
typedef struct conv_geom {
    int ns;
    int64_t group, s[3], pb[3], pe[3], d[3];
} conv_geom;

/* Outputs of the QLinear ops 1 off cpu_ref, and all of them compared
 * (q8_compare_output counts them). */
extern int64_t q8_off_by_one, q8_compared;

/* The least and largest value of type t (int8, uint8; int32's for any
 * other); element i of an integer tensor of those types, and setting it. */
int64_t q8_type_lo(xf_dtype t);
int64_t q8_type_hi(xf_dtype t);
int64_t q8_get_int(const xf_tensor *t, int64_t i);
void q8_set_int(xf_tensor *t, int64_t i, int64_t v);
/* Elements drawn from [lo, hi]; over the whole range of the type; one of
 * value v (rank 0). */
xf_tensor *q8_ints(xf_dtype t, xf_shape s, int64_t lo, int64_t hi);
xf_tensor *q8_full_range(xf_dtype t, xf_shape s);
xf_tensor *q8_int_scalar(xf_dtype t, int64_t v);
/* Float elements log-uniform in [lo, hi]. */
xf_tensor *q8_scales(xf_shape s, double lo, double hi);
/* Adds t (taking it over) as an initializer, or as a graph input fed t. */
int q8_operand(q8_case *c, xf_tensor *t, bool constant);
/* A zero point of type t in form f (-1 when absent); channels: the
 * length of a per-channel one. */
int q8_zero_point(q8_case *c, xf_dtype t, zp_form f, int64_t channels);
/* Node n's window and groups as geo gives them. */
void q8_set_geometry(xf_graph *g, int n, const conv_geom *geo);
/* Adds node op on in[0..n_in) (-1: an omitted input) as the graph's
 * output, with geometry geo when a convolution, and infers shapes. */
q8_case q8_finish(q8_case c, xf_op op, int n_in, const int *in, const conv_geom *geo);
void q8_case_free(q8_case *c);
/* Whether the cpu backend prepares the case's node on oneDNN (cpu_ref
 * nodes get no state). */
bool q8_on_onednn(const q8_case *c);
/* Whether output `got` of the cpu backend matches cpu_ref's `want`: equal
 * (float and int32 outputs) or at most 1 apart (quantized outputs, counted
 * when count). */
void q8_compare_output(const xf_tensor *got, const xf_tensor *want, bool count, const char *what);
/* Runs the case on cpu_ref and on cpu (static and dynamic mode, twice
 * each) and compares the outputs (q8_compare_output; counted once per
 * case).  want_onednn: whether the backend must run it itself.  Frees the
 * case. */
void q8_check_case(q8_case *c, bool want_onednn, const char *what);
/* Prints how many QLinear outputs were 1 off and bounds it: only sums
 * beyond 2^24 may round apart, so they are rare. */
void q8_report_off_by_one(const char *op);
/* A y_scale that spreads the requantized sums of k products of centered
 * 8-bit values (about 74 x 74 x sqrt(k) apart) over about +-50, times a
 * random factor in [1/2, 2] (some saturate). */
xf_tensor *q8_y_scale_for(float x_scale, const xf_tensor *w_scale, int64_t k);

#endif
