/* Internals of the `cpu` backend (oneDNN), shared by cpu_dnnl.c (context,
 * layout plan, operand binding, execution), cpu_dnnl_conv.c (window ops)
 * and cpu_dnnl_ops.c (everything else oneDNN runs; ONNX Runtime's contrib ops in
 * cpu_dnnl_contrib.c, folds in cpu_dnnl_fold.c, quantized ops in cpu_dnnl_int8.c).
 *
 * Every value is stored either plain (dense row-major, what the rest of
 * xflow reads) or native: the 4-D activation layout oneDNN's convolutions
 * choose on this CPU for this graph (nhwc for its AVX-512 kernels, nChw16c
 * or nChw8c for others), and nhwc for 8-bit integers between QLinearConvs.
 * Only float values whose channel count fills whole blocks and 8-bit
 * values are ever native, so a native value occupies exactly the bytes
 * the memory plan reserved for it.  A node
 * computes in the layout its primitive wants; operands stored otherwise
 * are reordered through scratch memory on the way in or out, which happens
 * only at the edges of runs of native-capable nodes. */
#ifndef XF_CPU_DNNL_H
#define XF_CPU_DNNL_H

#include "xf_rt_internal.h"
#include "cpu_dnnl_acts.h"

#include <dnnl.h>
#include <stdlib.h>
#include <string.h>

typedef enum xf_dn_layout { XF_DN_PLAIN = 0, XF_DN_NATIVE } xf_dn_layout;

typedef struct xf_dn_ctx {
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    /* xf_session_options.direct_convolutions: no Winograd kernels */
    bool direct_conv;
    /* not xf_session_options.fixed_kernels: where oneDNN has other fast
     * kernels than the layout plan's for a convolution, they are timed
     * (cpu_dnnl_timing.c) */
    bool time_kernels;
    /* static mode: the native layout is the one Winograd's kernel reads,
     * chosen for the convolutions it takes, which then run it
     * (xf_dn_choose_native) */
    bool native_winograd;
    /* the native 4-D layout and the channel multiple it needs to add no
     * padding; native_block == 0: none (everything stays plain) */
    dnnl_format_tag_t native_tag;
    int64_t native_block;
    /* per value of the session's graph; NULL in dynamic mode, where every
     * value is plain because shapes are only known one node at a time */
    xf_dn_layout *layout;
    int n_values;
    /* static mode: each node's prepared state (NULL for cpu_ref nodes), so
     * that a node can be folded into the node producing its input */
    struct xf_dn_node **states;
    int n_nodes;
    int *readers; /* per value: reading nodes plus graph output slots */
    /* static mode, per node: how oneDNN runs it (NULL: cpu_ref), and how
     * it is folded into another node's primitive (see xf_dn_node) */
    const struct xf_dn_handler **handlers;
    struct xf_dn_fold_at *folds;
    /* static mode: constants (initializers) in the layouts primitives
     * wanted them, shared by the nodes that read one initializer the same
     * way (an RNN's weights at every step), which then stay in cache */
    struct xf_dn_const *consts;
    int n_consts, cap_consts;
    /* MatMulNBits' weights repacked for a path of this backend, kept by
     * the weight's bytes: a node of a dynamic session prepared again for
     * other shapes (each prompt's length, then the first token step) finds
     * them repacked */
    struct xf_dn_packed *packed;
    int n_packed, cap_packed;
} xf_dn_ctx;

typedef struct xf_dn_packed {
    const void *weight, *scales, *zero_points; /* the node's inputs 1 to 3 */
    int kind;                                  /* which path's layout */
    void *buf;                                 /* owned here */
} xf_dn_packed;

typedef struct xf_dn_const {
    const void *data;
    dnnl_memory_desc_t have, want;
    dnnl_memory_t mem; /* owned here */
} xf_dn_const;

/* One primitive argument bound to a node operand. */
typedef struct xf_dn_arg {
    bool shared;              /* work is one of the context's shared constants */
    int operand;              /* input index k >= 0, or -(output index) - 1 */
    dnnl_memory_t user;       /* on the operand's buffer (handle set per run); NULL when constant */
    dnnl_memory_t work;       /* what the primitive reads or writes */
    dnnl_primitive_t reorder; /* user <-> work, NULL when they are the same memory */
    dnnl_memory_t view;       /* an output's work bytes as that reorder reads them (NULL: work) */
    bool work_on_input;       /* work is a part of input 0's buffer (handle set per run): a Split's output */
} xf_dn_arg;

/* What a primitive does to its result before it is stored: an elementwise
 * op, or (sum) adding what the destination holds. */
typedef struct xf_dn_post {
    bool sum;
    dnnl_alg_kind_t alg; /* eltwise; dnnl_alg_kind_undef: none */
    float alpha, beta;
} xf_dn_post;

#define XF_DN_MAX_POSTS 4

/* A zero point an integer product reads at run time: input `operand`'s
 * single element, copied into `value` (which the primitive's zero-point
 * argument is bound to) before each run. */
typedef struct xf_dn_zero_point {
    int operand;
    int32_t offset; /* subtracted from the operand's element (uint8 weights read as int8: 128) */
    int32_t value;
} xf_dn_zero_point;

#define XF_DN_MAX_ZP 3

/* kernels timed against each other for one node, and the bytes of the
 * note saying how they did (xf_dn_fastest) */
#define XF_DN_MAX_CANDIDATES 4
#define XF_DN_TIMING_NOTE 224

/* What a folded node adds to the primitive of its host. */
typedef enum xf_dn_fold_kind {
    XF_DN_FOLD_STEP,   /* nothing: a step of a pattern the host runs whole */
    XF_DN_FOLD_POST,   /* an elementwise post-op */
    XF_DN_FOLD_SUM,    /* Add of another tensor: a sum post-op */
    XF_DN_FOLD_BIAS,   /* Add of a constant: the MatMul's bias */
    XF_DN_FOLD_BN,     /* BatchNormalization: the Conv's weights and bias */
    XF_DN_FOLD_TABLE,  /* Gather from a table of 256 codes: the Cast's lookup */
    XF_DN_FOLD_LINEAR, /* a scale or shift after one: merged into the host's last post-op */
} xf_dn_fold_kind;

typedef struct xf_dn_fold_at {
    int host; /* -1: not folded */
    int last; /* of a host: the last node folded into it (-1: none) */
    xf_dn_fold_kind kind;
    xf_dn_post post; /* XF_DN_FOLD_POST; LINEAR: the step merged (alpha x + beta) */
    int operand;     /* SUM, BIAS: the Add's input holding the other tensor */
} xf_dn_fold_at;

/* A prepared node: one primitive and its arguments.  In static mode the
 * next node may be folded in when it is the only reader of this node's
 * output (the plan in xf_dn_ctx.folds): a unary op becomes a post-op, an
 * Add of another tensor after a Conv or MatMul a sum post-op (that tensor,
 * `sum_src`, is copied into the destination first), an Add of a constant
 * after a MatMul its bias, a BatchNormalization after a Conv is folded into
 * the weights and bias (`folded_w`, `folded_b`); the primitive
 * then writes the folded node's output buffer `dst` (same layout) instead
 * of its own, and the folded node's state is marked `folded`, names its
 * `host` and does nothing. */
typedef struct xf_dn_node {
    dnnl_primitive_t prim;
    int n_args, cap_args;
    xf_dn_arg *args;
    dnnl_exec_arg_t *exec; /* n_args entries, pointing at the work memories */
    const struct xf_dn_handler *handler;
    xf_tensor_view *views; /* the input views then the output views prepare saw */
    xf_dn_post posts[XF_DN_MAX_POSTS];
    int n_posts;
    const void *sum_src;
    int sum_input; /* or the input (> 0) whose bytes the sum adds: FusedConv's Z */
    size_t sum_bytes;
    const void *bias_data; /* MatMul: a folded Add's constant, as bias */
    xf_shape bias_shape;
    float *folded_w, *folded_b;
    bool cached_w; /* folded_w is the context's (xf_dn_packed), not the node's */
    /* a one-row product (a decoder's token, an RNN step) run as
     * dnnl_sgemm on the operands as stored: oneDNN's matmul primitive
     * reads the weights at about half the rate there */
    struct {
        bool on;
        char trans_b;
        int64_t k, n;
        float alpha;
        const void *bias; /* copied into the output first (n floats), then added to */
    } gemv;
    xf_dn_zero_point zp[XF_DN_MAX_ZP];
    int n_zp;
    /* a loop of this backend's own, run instead of a primitive */
    xf_ref_kernel kernel;
    /* the same, for loops that read this state (MatMulNBits' dequantized
     * weight in folded_w) */
    xf_status (*own_run)(struct xf_dn_node *st, const xf_node *n, const xf_tensor_view *in,
                         const xf_tensor_view *out, xf_error *err);
    /* what such a loop keeps (primitives, memories), freed by own_free
     * when the node is cleared */
    void *own;
    void (*own_free)(void *own);
    /* the name profiles give such a loop (NULL: "own loop") */
    const char *own_name;
    /* a loop of this backend's own run before the primitive, preparing
     * what it reads (the sum of a SkipLayerNormalization's inputs, into
     * `scratch` or an output of the node) */
    void (*pre)(const xf_node *n, const struct xf_dn_node *st, const xf_tensor_view *in, const xf_tensor_view *out);
    /* and one run after it, finishing the output from what the primitive
     * wrote (MatMulIntegerToFloat's int32 sums in `scratch`) */
    xf_status (*post)(const xf_node *n, const struct xf_dn_node *st, const xf_tensor_view *in,
                      const xf_tensor_view *out, xf_error *err);
    float *scratch; /* owned here */
    void *dst;
    bool folded;
    /* run on cpu_ref's kernel (xf_dn_run_sliced) after all: oneDNN had
     * only its reference implementation, and the operands are plain */
    bool on_ref;
    int host;
    const uint8_t *table; /* a folded Gather's 256 codes (XF_DN_FOLD_TABLE) */
    /* where the kernel was chosen by timing, the note profiles add to its
     * name ("; timed: K1 T1 ms, K2 with reorders T2 ms") */
    char timing[XF_DN_TIMING_NOTE];
    int folded_in; /* of a host: 1 + the node last folded into it so far (0: none) */
} xf_dn_node;

/* How one kind of node is run on oneDNN.  `handles` decides from the graph
 * alone (op, attributes, static dtypes and shapes) whether this handler
 * takes the node; the layout plan relies on that answer, so prepare must
 * not refuse a node handles() accepted.  `native_input` says whether input
 * k may be stored native (NULL: none may). */
typedef struct xf_dn_handler {
    bool (*handles)(const xf_graph *g, const xf_node *n);
    bool (*native_input)(const xf_graph *g, const xf_node *n, int k);
    xf_status (*prepare)(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                         const xf_tensor_view *out, xf_dn_node *st, xf_error *err);
    /* whether the node can append this elementwise op to the n_posts
     * post-ops folded into it so far (NULL: never) */
    bool (*takes_post)(const xf_node *n, int n_posts, const xf_dn_post *post);
} xf_dn_handler;

/* A handler's prepare, fn, for nodes run by a loop of this backend's own,
 * run, in every form the handler takes. */
#define XF_DN_KERNEL_PREPARE(fn, run)                                                                                  \
    static xf_status fn(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,                 \
                        const xf_tensor_view *out, xf_dn_node *st, xf_error *err)                                      \
    {                                                                                                                  \
        (void)c, (void)g, (void)n, (void)in, (void)out, (void)err;                                                     \
        st->kernel = run;                                                                                              \
        return XF_OK;                                                                                                  \
    }

/* The attention kernels' (and DynamicQuantizeLSTM's) products on oneDNN's
 * sgemm, as xf_attn_gemm (cpu_dnnl_attn.c). */
bool xf_dn_sgemm(bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                 const float *b, int64_t ldb, float beta, float *c, int64_t ldc);
extern const xf_dn_handler xf_dn_qlstm_handler;
/* QAttention's projection of constant int8 weights with no zero points
 * as oneDNN's int8 matmul (exact with VNNI): whether n takes it, and the
 * primitive writing the int32 sums into st->scratch (cpu_dnnl_int8.c). */
bool xf_dn_qattention_sums_ok(const xf_graph *g, const xf_node *n);
xf_status xf_dn_qattention_sums(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                                xf_dn_node *st, xf_error *err);

/* The backend's rewrites of a session's graph (cpu_dnnl_lower.c). */
xf_status xf_dn_lower_graph(xf_graph *g, xf_error *err);
/* Casts between float16 or bfloat16 and float (cpu_dnnl_half.c). */
extern const xf_dn_handler xf_dn_half_cast_handler;
/* The fold plan (cpu_dnnl_fold.c): sets c->folds from the graph, the
 * layouts and c->handlers, which it may change for the first node of a
 * pattern it runs as one primitive (GELU written out). */
xf_status xf_dn_plan_folds(xf_dn_ctx *c, const xf_graph *g, xf_error *err);
/* Elementwise nodes computing one of oneDNN's eltwise functions of one
 * value x (cpu_dnnl_fold_region.c): nodes ascending, the first reading
 * x and scalar constants only; x_reads: the reads of x among them. */
#define XF_DN_REGION_MAX 24
typedef struct xf_dn_region {
    int nodes[XF_DN_REGION_MAX], count, x, x_reads;
    xf_dn_post post;
} xf_dn_region;
/* Whether a region starts at node q (not yet planned; nodes after it
 * already folded are not taken), the largest one when several do. */
bool xf_dn_find_region(const xf_dn_ctx *c, const xf_graph *g, int q, xf_dn_region *r);
/* The post-op the fold plan would likely fold into the producer of value
 * x: the eltwise of x's one reader, or of a gate reading it with a Mul of
 * both (SiLU, HardSwish); undef for none.  For choices made before the
 * plan, which layouts decide (xf_dn_choose_native). */
xf_dn_post xf_dn_expected_post(const xf_graph *g, int x);
/* Prepares node q, which the plan folds into another node, by preparing its
 * host again with q's work added; qst is marked folded.  Fails when q's
 * output overlaps what the group reads (a memory plan made without the
 * backend's fusion groups). */
xf_status xf_dn_fold(xf_dn_ctx *c, const xf_graph *g, int q, const xf_tensor_view *in, const xf_tensor_view *out,
                     xf_dn_node *qst, xf_error *err);
/* Whether node `node` (state st) is being prepared for the last time: no
 * node still to be prepared is folded into it.  Work that only pays once
 * (timing kernels) waits for that build. */
bool xf_dn_last_build(const xf_dn_ctx *c, int node, const xf_dn_node *st);
/* xf_backend.accumulates_into: the last node folded into a host whose
 * group has a sum post-op (a residual Add) may write the Add's other
 * operand's bytes, which the sum then adds to in place. */
bool xf_dn_accumulates_into(const xf_dn_ctx *c, const xf_graph *g, int q, int *reader, int *input);
/* Drops a node's primitive and arguments (before it is prepared again). */
void xf_dn_node_clear(xf_dn_node *st);

/* Sets c's native layout to the one oneDNN picks for most of g's 2-D
 * convolutions (none when g has none). */
void xf_dn_choose_native(xf_dn_ctx *c, const xf_graph *g);

/* Runs node on cpu_ref's kernel: an elementwise op over slices of its
 * output, one per OpenMP thread, when it is large enough
 * (cpu_dnnl_slices.c); the bytes are the ones one run writes. */
xf_status xf_dn_run_sliced(const xf_graph *g, int node, const xf_tensor_view *in, const xf_tensor_view *out,
                           xf_error *err);

extern const xf_dn_handler xf_dn_conv_handler, xf_dn_deconv_handler, xf_dn_pool_handler, xf_dn_resample_handler;
/* Comparisons of numbers into bool, on a loop of the backend's own
 * (cpu_dnnl_loops.c) */
extern const xf_dn_handler xf_dn_compare_handler;
/* Where of any type of 1, 2, 4 or 8 bytes, on a loop of the backend's own
 * (cpu_dnnl_loops.c) */
extern const xf_dn_handler xf_dn_where_handler;
/* Add, Sub, Mul and Div of floats whose operands both broadcast, on a loop
 * of the backend's own (cpu_dnnl_loops.c). */
extern const xf_dn_handler xf_dn_bcast_binary_handler;
/* Float ReduceSum and ReduceMean over one run of axes (cpu_dnnl_reduce.c) */
extern const xf_dn_handler xf_dn_reduce_handler;
/* The other float reductions over one run of axes (ReduceSum and
 * ReduceMean over one that is not innermost), ArgMax, ArgMin and
 * LpNormalization, on loops of the backend's own (cpu_dnnl_reduce.c) */
extern const xf_dn_handler xf_dn_reduce_loop_handler;
/* The axes reduction n (a Reduce* op of an input of rank `rank`) reduces,
 * from its attribute or its constant axes input, as reduced[d]; false where
 * they are not known before the run, repeat one or are none with
 * noop_with_empty_axes. */
bool xf_dn_reduce_axes(const xf_graph *g, const xf_node *n, int rank, bool *reduced);
/* Global pool n (max or average) of x, stored plain, into y as stored, on
 * oneDNN's reduction. */
xf_status xf_dn_global_reduce(xf_dn_ctx *c, const xf_node *n, const xf_shape *x, const xf_shape *y, bool max,
                              xf_dn_node *st, xf_error *err);
/* The shape checks every window op shares: 1 to 3 spatial dims, one output
 * of the input's rank and batch (cpu_dnnl_conv.c); the float ones'. */
bool xf_dn_window_ranks_ok(const xf_graph *g, const xf_node *n);
bool xf_dn_window_shapes_ok(const xf_graph *g, const xf_node *n);
/* xf_dn_handler.native_ok of the ops that read only input 0 natively */
bool xf_dn_input0_native_ok(const xf_graph *g, const xf_node *n, int k);
/* Einsum equations that are batched matrix products (cpu_dnnl_matmul.c) */
extern const xf_dn_handler xf_dn_einsum_handler;
/* LSTM, GRU and RNN on oneDNN's RNN primitives (cpu_dnnl_rnn.c) */
extern const xf_dn_handler xf_dn_rnn_handler;
/* Recurrences as oneDNN's matmul and eltwise primitives step by step
 * (cpu_dnnl_rnn_steps.c): whether an LSTM or RNN in oneDNN's forms, of
 * few batch entries, or a DynamicQuantizeLSTM runs so with the operands
 * in, and the prepare of those and of the forms oneDNN's RNN primitives do
 * not take (act: an RNN's activation). */
bool xf_dn_rnn_steps_ok(const xf_graph *g, const xf_node *n, const xf_tensor_view *in);
/* Whether an LSTM, GRU, RNN or DynamicQuantizeLSTM in a form oneDNN's
 * primitives do not take (clip, input_forget, peepholes, other
 * activations, batch-first) can run so: each activation is one ONNX
 * names (a chain of oneDNN's eltwise ops, or a loop of the cells'). */
bool xf_dn_rnn_steps_takes(const xf_node *n);
xf_status xf_dn_rnn_steps_prepare(xf_dn_ctx *c, const xf_node *n, const xf_tensor_view *in, dnnl_alg_kind_t act,
                                  xf_dn_node *st, xf_error *err);
/* The ops of quantized models (cpu_dnnl_int8.c): MatMulInteger and
 * QLinearMatMul, ConvInteger and QLinearConv, DynamicQuantizeLinear,
 * QuantizeLinear to uint8, DequantizeLinear of 8-bit integers, and Cast of
 * integers to float. */
extern const xf_dn_handler xf_dn_qmatmul_handler, xf_dn_qconv_handler, xf_dn_dynamic_quantize_handler,
    xf_dn_quantize_handler, xf_dn_dequantize_handler, xf_dn_int_to_float_handler;
/* Whether oneDNN runs AVX-512 VNNI kernels here (DNNL_MAX_CPU_ISA may
 * hold it back): their int8 products sum every uint8 x int8 product exactly
 * in int32, which the int8 paths rely on. */
bool xf_dn_exact_int8(void);

/* Which vector loops this backend's own loops run: 512 (AVX-512F), 256
 * (AVX2) or 0 (plain C), as the CPU has them and oneDNN may use them
 * (DNNL_MAX_CPU_ISA, which tests set to reach the narrower loops). */
int xf_dn_vector_width(void);
/* BatchNormalization of plain tensors without post-ops as a loop of this
 * backend's own with cpu_ref's arithmetic (cpu_dnnl_bnorm.c): whether
 * node n's state st now runs it. */
bool xf_dn_bnorm_plain(xf_dn_ctx *c, const xf_node *n, xf_dn_node *st);
/* The 8-bit loops (cpu_dnnl_qloops.c), with cpu_ref's arithmetic, over
 * OpenMP's threads: the smallest and largest of x and 0, NaNs skipped;
 * x / scale rounded half to even plus zp, saturated to uint8 (NaN to 0);
 * ((x ^ flip) - offset) * scale (int8 read as uint8 with flip 0x80 and
 * offset zp + 128). */
void xf_dn_range_of(const float *x, int64_t count, float *lo, float *hi);
void xf_dn_quantize_all(const float *x, uint8_t *y, int64_t count, float scale, float zp);
void xf_dn_dequantize_all(const uint8_t *x, float *y, int64_t count, uint8_t flip, int32_t offset, float scale);
/* The same per index c of a dim (outer x dim x inner elements): offset[c]
 * and scale[c] (DequantizeLinear per axis). */
void xf_dn_dequantize_axis(const uint8_t *x, float *y, int64_t outer, int64_t dim, int64_t inner, uint8_t flip,
                           const int32_t *offset, const float *scale);
/* com.microsoft MatMulIntegerToFloat and DynamicQuantizeMatMul (cpu_dnnl_int8.c) */
extern const xf_dn_handler xf_dn_int_matmul_float_handler;
extern const xf_dn_handler xf_dn_matmul_handler, xf_dn_gemm_handler, xf_dn_eltwise_handler,
    xf_dn_binary_handler, xf_dn_softmax_handler, xf_dn_batch_norm_handler, xf_dn_concat_handler,
    xf_dn_split_handler, xf_dn_layer_norm_handler, xf_dn_transpose_handler, xf_dn_lrn_handler,
    xf_dn_group_norm_handler, xf_dn_prelu_handler, xf_dn_pow_handler;
/* MeanVarianceNormalization over trailing dims (cpu_dnnl_gnorm.c) */
extern const xf_dn_handler xf_dn_mvn_handler;
/* com.microsoft Attention and MultiHeadAttention (cpu_dnnl_attn.c) */
extern const xf_dn_handler xf_dn_attention_handler;
/* STFT and DFT of floats as products with the transform's matrix
 * (cpu_dnnl_signal.c) */
extern const xf_dn_handler xf_dn_signal_handler;

/* Convolutions of one input channel as products on sgemm
 * (cpu_dnnl_conv_gemm.c): which convolutions may run so (the layout plan
 * keeps their operands plain), whether this one, with these post-ops
 * (none a sum) and its operands' layouts, does, and its preparation. */
bool xf_dn_conv_gemm_ok(const xf_graph *g, const xf_node *n);
bool xf_dn_conv_gemm_takes(const xf_dn_ctx *c, const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                           const xf_dn_post *posts, int n_posts);
xf_status xf_dn_conv_gemm_prepare(xf_dn_ctx *c, const xf_node *n, const xf_tensor_view *in,
                                  const xf_tensor_view *out, bool const_weights, xf_dn_node *st,
                                  const xf_dn_post *posts, int n_posts, xf_error *err);
/* CumSum of floats on a loop of the backend's own (cpu_dnnl_reduce.c) */
extern const xf_dn_handler xf_dn_cumsum_handler;
/* ONNX Runtime's contrib ops (cpu_dnnl_contrib.c): FusedMatMul (through
 * xf_dn_matmul_build), SkipLayerNormalization, SkipSimplifiedLayerNormalization
 * and SimplifiedLayerNormalization, and BiasGelu, FastGelu with a bias and
 * BiasAdd (a binary add with a post-op). */
extern const xf_dn_handler xf_dn_fused_matmul_handler, xf_dn_skip_norm_handler, xf_dn_bias_act_handler;
/* The activation of FusedConv or FusedGemm as post-ops into p (room for
 * 2); returns how many. */
int xf_dn_ms_act_posts(const xf_node *n, xf_dn_post *p);
/* Creates matrix product n's primitive: A and B as stored (a_have,
 * b_have: rank of the output, strided when transposed) times alpha, plus
 * what is folded into st.  Operands oneDNN cannot read with their strides
 * are transposed (reordered) into dense copies on the way in.  gemv_ok:
 * a one-row product may run as dnnl_sgemm (B 2-D, as stored, transposed
 * when gemv_trans_b). */
xf_status xf_dn_matmul_build(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                             const xf_tensor_view *out, xf_dn_node *st, const dnnl_memory_desc_t *a_have,
                             const dnnl_memory_desc_t *b_have, float alpha, bool gemv_ok, bool gemv_trans_b,
                             xf_error *err);
/* A's rows times a matrix, as one product of all of them: A (in[0], of
 * batch dims) and the output seen as 2-D when the weights in[w] have rank
 * 2, since oneDNN's batched matmul would read B once per batch (ViT's
 * [197, 1, 768] x [768, 2304] as 197 one-row products; a quantized BERT's
 * [1, 64, 1024] x [1024, 1024] at half speed).  A folded bias
 * (bias_numel >= 0) must be one row then.  Copies the n_in views into in2
 * and out[0] into out2, reshaped; false (nothing written) otherwise. */
bool xf_dn_matmul_as_rows(const xf_tensor_view *in, int n_in, int w, const xf_tensor_view *out, int64_t bias_numel,
                          xf_tensor_view *in2, xf_tensor_view *out2);
/* xf_dn_post_attr with alpha as the output scale (when not 1). */
xf_status xf_dn_scaled_post_attr(const xf_node *n, float alpha, const xf_dn_post *posts, int n_posts,
                                 dnnl_primitive_attr_t *attr, xf_error *err);
/* A pattern of nodes computing one eltwise of oneDNN's over x (GELU,
 * SiLU, HardSwish as exported before their ops existed), run by the
 * pattern's first node, which names x as its input 0 or, after a constant,
 * 1; the alg is the first node's post in the fold plan, which alone
 * chooses this handler. */
extern const xf_dn_handler xf_dn_pattern_handler;

/* Bilinear GridSample of float maps with 2 spatial dims, a loop of the
 * backend's own (cpu_dnnl_sample.c) */
extern const xf_dn_handler xf_dn_grid_sample_handler;
/* Loops of the backend's own (cpu_dnnl_loops.c): Pow of a float tensor by
 * a constant 2 or 3 (input 1), and HardSigmoid; in any layout that stores
 * input and output alike, with no padding. */
xf_status xf_dn_pow_small_run(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_dn_erf_run(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_dn_log_run(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
/* PRelu of a 4-D x stored channel-blocked (block 16 or 8) or channels-last
 * (block 0) by a slope per channel, or one for all (n_slope 1)
 * (cpu_dnnl_loops.c). */
void xf_dn_prelu_channels(const float *x, float *y, const float *slope, int64_t n_slope, int64_t batch, int64_t ch,
                          int64_t hw, int block);
xf_status xf_dn_hard_sigmoid_run(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                                 xf_error *err);
/* Node n (Erf, Log, HardSigmoid, Pow by 2 or 3) on its loop above, which
 * goes element by element: input and output stored alike, else the input
 * reordered into the output's layout first (a native input, a plain
 * output that a graph output or a reader of plain values needs). */
xf_status xf_dn_unary_loop_prepare(xf_dn_ctx *c, const xf_node *n, const xf_tensor_view *in, xf_dn_node *st,
                                   xf_error *err);
/* A Cast of 8-bit codes to int32 (cpu_dnnl_qloops.c); with the Gather
 * that alone reads it folded in (XF_DN_FOLD_TABLE: a lookup of the QDQ
 * rewrites, cpu_dnnl_lower_qdq.c), one lookup of each code in the
 * Gather's table, written as the Gather's output. */
extern const xf_dn_handler xf_dn_code_table_handler;
/* Whether n gathers single bytes from a constant table of 256 along axis 0
 * by the int32 indices a Cast of 8-bit codes made. */
bool xf_dn_code_table_of(const xf_graph *g, const xf_node *n);
/* ONNX Runtime's quantized contrib ops (cpu_dnnl_qcontrib.c; QGemm in cpu_dnnl_int8.c) */
extern const xf_dn_handler xf_dn_ms_qbinary_handler, xf_dn_ms_qgemm_handler, xf_dn_ms_qsoftmax_handler,
    xf_dn_ms_qavgpool_handler;
/* MatMulNBits with constant weights (cpu_dnnl_llm.c); GroupQueryAttention
 * runs on xf_dn_attention_handler */
extern const xf_dn_handler xf_dn_nbits_handler;

/* The elementwise op of a unary node as a post-op; alg undef when oneDNN
 * has none for it. */
xf_dn_post xf_dn_unary_post(const xf_graph *g, const xf_node *n);
/* Attribute carrying the n posts (NULL when n is 0); *attr must be
 * destroyed by the caller when set. */
xf_status xf_dn_post_attr(const xf_node *n, const xf_dn_post *posts, int n_posts, dnnl_primitive_attr_t *attr,
                          xf_error *err);

/* Turns a oneDNN status into an xflow error naming the node and the call. */
xf_status xf_dn_fail(xf_error *err, const xf_node *n, const char *what, dnnl_status_t s);
/* The primitive descriptor of op descriptor d with attr (which it
 * destroys), or an error naming the node. */
xf_status xf_dn_pd_create(xf_dn_ctx *c, const xf_node *n, const void *d, dnnl_primitive_attr_t attr,
                          dnnl_primitive_desc_t *pd, xf_error *err);
/* xf_dn_pd_create for an int8 product of `rows` rows (of the source; 0 or
 * less: not known).  Up to XF_DN_FEW_ROWS rows it takes oneDNN's first
 * implementation that is not an AMX one where one takes the problem: the
 * AMX kernels' tile setup cost more than the work there (4 x 128 by 128 x
 * 512 took 3.6 us on AMX and 2.4 on the AVX-512 VNNI kernel, 1 x 512 by
 * 512 x 2048 27.5 and 19.6 us, 1 x 1024 by 1024 x 4096 0.23 and 0.18 ms),
 * while from 8 rows the AMX ones were faster. */
enum { XF_DN_FEW_ROWS = 4 };
xf_status xf_dn_pd_create_int8(xf_dn_ctx *c, const xf_node *n, const void *d, dnnl_primitive_attr_t attr, int64_t rows,
                               dnnl_primitive_desc_t *pd, xf_error *err);
#define XF_DN_TRY(err, n, call)                                                                    \
    do {                                                                                           \
        dnnl_status_t xf_dn_s_ = (call);                                                           \
        if (xf_dn_s_ != dnnl_success)                                                              \
            return xf_dn_fail(err, n, #call, xf_dn_s_);                                            \
    } while (0)

/* The value of n's input k, or -1 when absent. */
/* `for` loops of this backend's own split over OpenMP's threads (the ones
 * oneDNN runs on) when cond holds; plain loops without OpenMP. */
#define XF_DN_PRAGMA(x) _Pragma(#x)
#ifdef _OPENMP
#define XF_OMP_FOR(cond) XF_DN_PRAGMA(omp parallel for schedule(static) if (cond))
#else
#define XF_OMP_FOR(cond)
#endif

/* A scratch buffer of a loop's state at least need floats long: *buf
 * (*cap floats) kept where long enough, else freed and allocated anew
 * (contents not kept); false, with *buf NULL, where memory runs out. */
static inline bool xf_dn_floats_reserve(float **buf, size_t *cap, size_t need)
{
    if (*cap >= need && *buf)
        return true;
    free(*buf);
    *buf = malloc(sizeof(float) * (need ? need : 1));
    *cap = *buf ? need : 0;
    return *buf != NULL;
}

/* Loops of this backend's own over a whole tensor of count elements go in
 * at most XF_DN_CHUNKS parts of at least XF_DN_CHUNK_MIN elements, over
 * OpenMP's threads (XF_OMP_FOR(chunks > 1)); returns the number of parts,
 * *size the elements of each but the last. */
enum { XF_DN_CHUNKS = 64, XF_DN_CHUNK_MIN = 8192 };
static inline int64_t xf_dn_chunks(int64_t count, int64_t *size)
{
    int64_t s = (count + XF_DN_CHUNKS - 1) / XF_DN_CHUNKS;
    *size = s > XF_DN_CHUNK_MIN ? s : XF_DN_CHUNK_MIN;
    return (count + *size - 1) / *size;
}

static inline int xf_dn_input(const xf_node *n, int k) { return k >= 0 && k < n->n_inputs ? n->inputs[k] : -1; }

/* v rounded half to even, plus zp, saturated to [lo, hi] (an 8-bit
 * type's), NaN to 0: as xf_rt_quantize_round and the store after it give
 * it, rounding by adding and subtracting 1.5 x 2^23, which vectorizes and
 * leaves values past 2^22 beyond the bounds, on their side of 0. */
static inline float xf_dn_requantize(float v, float zp, float lo, float hi)
{
    const float shift = 0x1.8p23f;
    float r = v + shift - shift + zp;
    r = r > lo ? r : lo;
    r = r < hi ? r : hi;
    return v == v ? r : 0.0f;
}

/* Whether a value may be a float tensor oneDNN computes on. */
bool xf_dn_is_f32(const xf_graph *g, int value);
/* Whether every present input and output of n is f32 with a known,
 * non-empty shape. */
bool xf_dn_all_f32(const xf_graph *g, const xf_node *n);

/* The layout value v is stored in (plain when there is no plan). */
xf_dn_layout xf_dn_value_layout(const xf_dn_ctx *c, int value);
/* A descriptor of dims stored in layout l (dense row-major when plain, c
 * may then be NULL); a rank-0 shape is described as one element. */
void xf_dn_md(const xf_dn_ctx *c, const xf_shape *s, xf_dn_layout l, dnnl_memory_desc_t *md);
/* xf_dn_md for data type t: a native value of another type than float is
 * nhwc. */
void xf_dn_md_typed(const xf_dn_ctx *c, const xf_shape *s, xf_dn_layout l, dnnl_data_type_t t,
                    dnnl_memory_desc_t *md);
/* Dense row-major of data type t (xf_dn_md's plain layout for float). */
void xf_dn_md_plain(const xf_shape *s, dnnl_data_type_t t, dnnl_memory_desc_t *md);
/* Dense row-major with the shape right-aligned into `rank` dims (leading 1s). */
void xf_dn_md_rank(const xf_shape *s, int rank, dnnl_data_type_t t, dnnl_memory_desc_t *md);
/* Operand k of n as stored: input k (k >= 0) or output -k-1. */
void xf_dn_operand_md(const xf_dn_ctx *c, const xf_node *n, int operand, const xf_shape *shape,
                      dnnl_memory_desc_t *md);
/* The same, of data type t. */
void xf_dn_operand_md_typed(const xf_dn_ctx *c, const xf_node *n, int operand, const xf_shape *shape,
                            dnnl_data_type_t t, dnnl_memory_desc_t *md);

/* Binds primitive argument `arg` to an operand whose buffer is described by
 * `have`, the primitive wanting `want`: the same memory when they are equal,
 * else a reorder through scratch memory. */
xf_status xf_dn_bind(xf_dn_ctx *c, const xf_node *n, xf_dn_node *st, int arg, int operand,
                     const dnnl_memory_desc_t *have, const dnnl_memory_desc_t *want, xf_error *err);
/* Binds `arg` to memory of the node's own (data, described by md), which
 * stays where it is between runs (user NULL: no operand's buffer). */
xf_status xf_dn_bind_scratch(xf_dn_ctx *c, const xf_node *n, xf_dn_node *st, int arg, const dnnl_memory_desc_t *md,
                             void *data, xf_error *err);
/* Binds the primitive's destination to memory of the node's own, laid out
 * as `want`, and the output to a reorder of its bytes run per run: it
 * reads them as `work_view` describes and writes the output (stored as
 * `out_view` describes: the same dims as work_view, other than want's), so
 * a permutation the primitive's layouts cannot state is one reorder. */
xf_status xf_dn_bind_dst_view(xf_dn_ctx *c, const xf_node *n, xf_dn_node *st, const dnnl_memory_desc_t *want,
                              const dnnl_memory_desc_t *work_view, const dnnl_memory_desc_t *out_view,
                              xf_error *err);
/* Binds output k to a copy of `part` (a sub-memory descriptor of input 0
 * as stored), written as `dst` describes: a reorder run per run, the node
 * having no primitive of its own. */
xf_status xf_dn_bind_part(xf_dn_ctx *c, const xf_node *n, xf_dn_node *st, int k, const dnnl_memory_desc_t *part,
                          const dnnl_memory_desc_t *dst, xf_error *err);
/* Binds `arg` to constant data (an initializer) reordered once, now, into `want`. */
xf_status xf_dn_bind_const(xf_dn_ctx *c, const xf_node *n, xf_dn_node *st, int arg, const void *data,
                           const dnnl_memory_desc_t *have, const dnnl_memory_desc_t *want, xf_error *err);
/* Binds the zero point of primitive argument `arg` (DNNL_ARG_SRC, ...),
 * declared DNNL_RUNTIME_S32_VAL in the primitive's attribute, to input
 * `operand`'s single element, read as int32 at each run. */
xf_status xf_dn_bind_zero_point(xf_dn_ctx *c, const xf_node *n, xf_dn_node *st, int arg, int operand,
                                xf_error *err);
/* Whether oneDNN picked its reference implementation for pd (the slow one,
 * for forms its kernels lack). */
bool xf_dn_pd_is_ref(const_dnnl_primitive_desc_t pd);
/* Whether a and b are the same kernel on the same layouts. */
bool xf_dn_pd_same(const_dnnl_primitive_desc_t a, const_dnnl_primitive_desc_t b);

/* ---------------------------------------------------------------- kernels chosen by timing */

/* The index of the fastest of cand[0..n) (n <= XF_DN_MAX_CANDIDATES),
 * primitive descriptors of one op in other kernels or layouts, run with
 * their source and destination stored as src_have and dst_have: each is
 * timed with its reorders, or the choice made earlier in this process for
 * the same candidates is taken (cpu_dnnl_timing.c).  note
 * (XF_DN_TIMING_NOTE bytes) receives what was measured, for profiles. */
int xf_dn_fastest(xf_dn_ctx *c, dnnl_primitive_desc_t const *cand, int n, const dnnl_memory_desc_t *src_have,
                  const dnnl_memory_desc_t *dst_have, char *note);

/* One argument bound to an operand stored as the primitive reads it. */
typedef struct xf_dn_bind_spec {
    int arg, operand;
    const dnnl_memory_desc_t *md; /* NULL: an absent optional operand, skipped */
} xf_dn_bind_spec;
/* Binds each argument in turn, then creates the primitive (or frees pd). */
xf_status xf_dn_bind_and_finish(xf_dn_ctx *c, const xf_node *n, xf_dn_node *st, dnnl_primitive_desc_t pd, int count,
                                const xf_dn_bind_spec *b, xf_error *err);
/* Creates the node's primitive from pd (taking ownership of pd). */
xf_status xf_dn_finish(const xf_node *n, xf_dn_node *st, dnnl_primitive_desc_t pd, xf_error *err);
/* xf_dn_finish when s is XF_OK (binding went well), else frees pd and
 * returns s. */
xf_status xf_dn_finish_or_free(const xf_node *n, xf_dn_node *st, dnnl_primitive_desc_t pd, xf_status s,
                               xf_error *err);

/* Whether a matrix product's operand s broadcasts to output y as oneDNN's
 * matmul allows: its batch dims equal y's or are all 1. */
bool xf_dn_batch_ok(const xf_shape *s, const xf_shape *y);

/* Where a convolution node keeps its weights and bias (input indices;
 * bias -1: none) and the data types oneDNN computes it in: Conv's floats,
 * or the integer forms'. */
typedef struct xf_dn_conv_io {
    int w, bias;
    dnnl_data_type_t src, wei, bias_type, dst;
    /* where the convolution writes its int32 sums, channels-last, for a
     * loop after it to finish the output (NULL: to the output) */
    int32_t *dst_sums;
} xf_dn_conv_io;
/* Whether n's input, weights (input io->w) and output have the geometry of
 * a convolution oneDNN runs: 1 to 3 spatial dims, groups that divide the
 * channels, one output channel per filter, a bias of one per filter. */
bool xf_dn_conv_geometry_ok(const xf_graph *g, const xf_node *n, const xf_dn_conv_io *io);
/* Creates convolution n's primitive with attribute attr (NULL: none; the
 * caller keeps it) and binds its source, weights (reordered once when
 * constant), bias and destination. */
xf_status xf_dn_conv_build(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                           const xf_tensor_view *out, xf_dn_node *st, const xf_dn_conv_io *io,
                           const_dnnl_primitive_attr_t attr, xf_error *err);
/* uint8 weights read as int8 by oneDNN's int8 kernels, b - 128: the
 * bytes with the sign bit flipped (cpu_dnnl_int8.c). */
void xf_dn_flip_bytes(const uint8_t *restrict b, int8_t *restrict to, int64_t count);
/* ConvInteger and QLinearConv whose weights oneDNN reads less a zero
 * point d, per tensor or per output channel: d = w_zero_point - 128 for
 * uint8 constants read as int8 (their bytes' sign bit flipped into
 * st->folded_w), w_zero_point for int8 ones (cpu_dnnl_qconv.c).  From
 * the int32 sums of (x - x_zero_point) (w - d) the convolution writes, a
 * loop after it subtracts d times each window's sum of x - x_zero_point,
 * in the int32 ring (cpu_ref wraps to 32 bits the same): into
 * ConvInteger's output, or, for QLinearConv, from the sums io->dst_sums
 * receives (io->dst int32, io->bias none: its bias is added there), then
 * scaled and requantized as cpu_ref does.  x is read plain. */
xf_status xf_dn_qconv_fix_prepare(xf_dn_ctx *c, const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                                  xf_dn_node *st, xf_dn_conv_io *io, xf_error *err);

/* Whether Conv n (with a bias or not), its own post-ops, then posts and
 * next, gets one of oneDNN's kernels with the layouts the plan stores its
 * input and output in, rather than its reference convolution (oneDNN
 * 2.6's kernels for AVX2, and for blocked layouts, take a sum only as the
 * first post-op: YOLO's residual Add after a SiLU ran 3000x slower). */
bool xf_dn_conv_posts_fast(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, bool bias, const xf_dn_post *posts,
                           int n_posts, const xf_dn_post *next);

/* Whether binary node n (Add, Mul, ...) takes post-ops: where it gets no
 * kernel of oneDNN's with the layouts the plan stores its operands in, it
 * runs on cpu_ref's kernel, and takes none (RT-DETR's offset * scale *
 * 0.5, a broadcast over two middle dims, ran on oneDNN's reference kernel
 * with the 0.5 folded in: 5 ms for 58k elements); nor where oneDNN's
 * kernel runs post-ops wrongly (channels blocked by 8 on AVX-512, see
 * cpu_dnnl_ops.c). */
bool xf_dn_binary_takes_posts(xf_dn_ctx *c, const xf_graph *g, const xf_node *n);

/* Stores FusedConv's Z and output plain unless both are native. */
void xf_dn_conv_z_layouts(xf_dn_ctx *c, const xf_graph *g);

/* Padding of a window op along spatial axis i: begin from the attributes
 * (or auto_pad), end chosen so that oneDNN's output size formula gives the
 * output extent the graph has (covers ceil_mode and SAME padding). */
void xf_dn_window_pads(const xf_attrs *a, int ns, int i, int64_t in, int64_t out, int64_t k, int64_t stride,
                       int64_t dil, int64_t *pad_l, int64_t *pad_r);

#endif
