/* Helpers shared by the backend suites (test_cpu_backend.c,
 * test_cuda_backend.c): random test graphs, one check that runs a graph on
 * a backend and on cpu_ref with the same inputs, and the op cases both
 * suites run, each handed the suite's own check. */
#ifndef XF_BACKEND_UTIL_H
#define XF_BACKEND_UTIL_H

#include "xf_core.h"

#include <stdbool.h>
#include <stdint.h>

/* A graph input "inN" of dtype t. */
int xf_bt_input(xf_graph *g, xf_dtype t, xf_shape s);
/* A random float initializer; `positive` maps it into [0.5, 1.5]. */
int xf_bt_random_const(xf_graph *g, xf_shape s, bool positive);
/* A float constant of one element (rank 0 or 1). */
int xf_bt_scalar(xf_graph *g, float value, int rank);
/* x op c, for a float scalar c (rank 0); returns the node's output. */
int xf_bt_with_scalar(xf_graph *g, xf_op op, int x, float c);
/* A 2-D Conv of x (cin channels) to cout channels, k x k kernel, "same"
 * pads, random weights and bias, the fused activation act; its output. */
int xf_bt_conv(xf_graph *g, int x, int64_t cin, int64_t cout, int64_t k, int64_t stride, xf_activation act);
/* A Reduce* node of op on x over n_axes axes (0: none given), from its
 * attribute or (as_input) a constant input, dims kept or not; its index. */
int xf_bt_reduce(xf_graph *g, xf_op op, int x, const int64_t *axes, int n_axes, bool as_input, bool keepdims);
/* Adds node op on ins; its output becomes the graph output. */
int xf_bt_finish_single(xf_graph *g, xf_op op, int n_in, const int *ins);
/* Sets a window op's kernel (NULL: none), strides, pads and dilations. */
void xf_bt_set_window(xf_attrs *a, int ns, const int64_t *k, const int64_t *s, const int64_t *p_begin,
                      const int64_t *p_end, const int64_t *d);
/* Runs g on cpu_ref as given (xf_session_options.as_given) and on
 * `backend` (static mode, and dynamic mode too when dynamic_too) with
 * seeded random inputs, twice per session, the second run with other
 * values (it reuses what prepare made, and must not reuse what the first
 * run's values gave), and compares every output.  A
 * negative atol is relative to the largest expected element (deep
 * networks, where elements near zero carry the rounding of large sums). */
void xf_bt_check_graph(const xf_graph *g, int64_t opset, const char *backend, bool dynamic_too, double atol,
                       double rtol, const char *what);

/* Whether this build has the cpu backend (oneDNN); if not, says that the
 * check is skipped and why. */
bool xf_bt_have_cpu(void);
/* Whether the CPU has AVX-512 VNNI, which the cpu backend's int8 paths
 * need (see cpu_dnnl_int8.c). */
bool xf_bt_have_vnni(void);
/* Whether oneDNN may run its AVX-512 kernels (Winograd's convolution among
 * them) here: the CPU has AVX-512 F, BW, VL and DQ, and DNNL_MAX_CPU_ISA,
 * where set, allows them. */
bool xf_bt_avx512_kernels(void);
/* How a static session on the cpu backend runs g's one node of op `op`
 * (xf_session_node_impl), into impl. */
void xf_bt_node_impl(const xf_graph *g, int64_t opset, xf_op op, char *impl, size_t size);
/* The same for the nth (from 0) of several nodes of op. */
void xf_bt_nth_node_impl(const xf_graph *g, int64_t opset, xf_op op, int nth, char *impl, size_t size);
/* xf_bt_check_graph on the cpu backend, static and dynamic mode. */
void xf_bt_check_cpu(const xf_graph *g, int64_t opset, double atol, double rtol, const char *what);

/* The cuda backend takes every node of g (on the device or through
 * cpu_ref on host copies): session creation gets past the support check to
 * the device, absent here ("no CUDA device"), or present and then giving
 * cpu_ref's values exactly.  Only where the build has the cuda backend. */
void xf_bt_cuda_takes(const xf_graph *g, int64_t opset, const char *what);

/* The backend checks of ops that cpu and cuda run through cpu_ref, on the
 * one-node graphs make(0) .. make(n - 1): cpu_ref supports the node, the
 * cpu backend gives cpu_ref's values exactly (static and dynamic mode),
 * and the cuda backend takes it (xf_bt_cuda_takes) where the build has
 * one. */
void xf_bt_through_ref(xf_graph *(*make)(int which), int n, int64_t opset);

/* A suite's check of one graph against cpu_ref (xf_bt_check_graph on the
 * suite's backend and modes). */
typedef void (*xf_bt_check_fn)(const xf_graph *g, int64_t opset, double atol, double rtol, const char *what);

/* The random stream the case builders draw from: reseeded by each builder
 * (and by suites drawing their own cases); draws are uniform in [lo, hi]. */
void xf_bt_seed(uint64_t seed);
int64_t xf_bt_rnd(int64_t lo, int64_t hi);

/* `cases` random convolutions: 1-D, 2-D and 3-D, groups (depthwise ones
 * among them), strides, dilations, pads (end pads drawn apart from the
 * begin pads in every case, or in one case in three when mostly_symmetric,
 * the others symmetric), auto_pad, bias or none, every fused activation. */
void xf_bt_conv_random(xf_bt_check_fn check, int cases, bool mostly_symmetric);

/* The random pools: how many cases (MaxPool, AveragePool,
 * GlobalAveragePool, GlobalMaxPool in turn) and which attribute forms. */
typedef struct {
    int cases;
    /* MaxPool dilations drawn from 1..2 per axis; else 2 on every fifth
     * case and 1 elsewhere */
    bool random_dilations;
    /* count_include_pad drawn also when ceil_mode is set */
    bool count_pad_with_ceil;
} xf_bt_pool_forms;
void xf_bt_pool_random(xf_bt_check_fn check, const xf_bt_pool_forms *forms);

/* MaxPool with its Indices output (storage_order as given) and a
 * one-output MaxPool of one input, and MaxUnpool of the first one's
 * outputs (output_shape the input's); all four results are graph outputs. */
xf_graph *xf_bt_pool_indices_graph(int storage_order);
/* That graph in both storage orders, exactly as cpu_ref computes it. */
void xf_bt_pool_indices(xf_bt_check_fn check);

/* Two random MatMul cases for each of the first n_forms operand forms (at
 * most 10): ranks 1 to 4, batch dimensions (2..3, then min_batch..4)
 * broadcast against 1s, b a constant or a graph input. */
void xf_bt_matmul_random(xf_bt_check_fn check, int n_forms, int64_t min_batch);
/* Gemm in all 16 forms of trans_a, trans_b and C (none, a row, a matrix, a
 * column), some with alpha or beta away from 1. */
void xf_bt_gemm_forms(xf_bt_check_fn check);
/* Each unary op of ops (default attributes, LeakyRelu alpha 0.2) on a
 * random 3-D shape. */
void xf_bt_unary_ops(xf_bt_check_fn check, const xf_op *ops, int n_ops);
/* Binary op on dtype t: a (2, 5, 7, 3) operand against the small operand
 * of form 0..XF_BT_BINARY_FORMS-1 (the same shape, broadcast dims of 1,
 * lower rank), the small one first when swap. */
#define XF_BT_BINARY_FORMS 6
void xf_bt_binary_case(xf_bt_check_fn check, xf_op op, xf_dtype t, int form, bool swap);
/* Softmax and LogSoftmax over every axis of a 3-D input, opset 13 and the
 * legacy (opset 11) semantics. */
void xf_bt_softmax_axes(xf_bt_check_fn check);
/* BatchNormalization of an input of the given dims (channels dims[1]). */
void xf_bt_batch_norm_case(xf_bt_check_fn check, int rank, const int64_t *dims, float epsilon);
/* Concat of three fresh (2, 3, 4, 5)-like inputs along axis (1, 2 and 3
 * long there); its output is a graph output.  Returns the node. */
int xf_bt_concat3(xf_graph *g, int axis);
/* LayerNormalization with its Mean and InvStdDev outputs (one case with
 * Mean omitted) on a few ranks and axes: checked against cpu_ref, and the
 * two statistics as `backend` computes them against a direct computation
 * from the input (shape: X's dims before axis, 1 from axis on; float). */
void xf_bt_layer_norm_stats(xf_bt_check_fn check, const char *backend);
/* The bundled examples/inception_block.onnx, whole. */
void xf_bt_inception_example(xf_bt_check_fn check);

/* g with its float constants rounded to float16, and with its float
 * values and constants made float16 too when half; its dtypes inferred
 * again at opset. */
void xf_bt_through_float16(xf_graph *g, bool half, int64_t opset);

/* The zoo's models at the reduced sizes test_zoo runs them at. */
typedef struct xf_bt_zoo_run {
    const char *name;
    int size;
} xf_bt_zoo_run;
extern const xf_bt_zoo_run xf_bt_zoo_runs[8];
/* Zoo model run (batch 1) through xf_bt_through_float16: *flt with its
 * constants rounded to float16, *half (its graph only: take the opset from
 * *flt) made float16. */
void xf_bt_zoo_half_pair(const xf_bt_zoo_run *run, xf_model **half, xf_model **flt);

#endif
