/* xflow runtime: executes core graphs on a backend.
 *
 * A session binds a graph to a backend.  When every value's shape is known
 * statically the session plans memory once (xf_memplan: one arena, buffers
 * reused between values whose lifetimes do not overlap) and prepares every
 * node once; otherwise it runs in dynamic mode, inferring each node's output
 * shapes from the actual tensors as it goes.  Backends plug in behind one
 * vtable; `cpu_ref` (plain loops, the numerical oracle for every test) is
 * always present. */
#ifndef XF_RUNTIME_H
#define XF_RUNTIME_H

#include "xf_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- backends */

/* A tensor in backend memory, as kernels see it.  An omitted optional input
 * or output has dtype XF_DT_UNDEFINED; a present tensor with no elements may
 * have data == NULL. */
typedef struct xf_tensor_view {
    xf_dtype dtype;
    xf_shape shape;
    void *data; /* backend memory: host memory for CPU backends, device memory for GPUs */
} xf_tensor_view;

/* The operations a backend provides.  Hooks marked optional may be NULL.
 * `ctx` is the per-session context made by context_create (NULL when the
 * backend has none); per-node state made by prepare is passed back to
 * run_node and release.  In static mode prepare runs once per node with the
 * views run_node will see, so a backend may choose algorithms by running
 * them there (cudnnFind); only graph inputs on host-memory backends are
 * bound later, per run (their data is NULL then).  In dynamic mode prepare,
 * run_node and release follow each other for every node of every run. */
typedef struct xf_session_options xf_session_options; /* below */

typedef struct xf_backend {
    const char *name;
    const char *description;
    /* Memory from alloc is ordinary host memory (from aligned_alloc, which
     * free() takes back): the session then lets kernels read initializers
     * and caller inputs in place instead of copying them in, and a dynamic
     * run hands its outputs' blocks to the tensors it returns.  Dynamic
     * mode (run-time shapes) needs this, because shape inference reads
     * parameter tensors (a Reshape's shape) on the host. */
    bool host_memory;

    /* optional: per-session context (library handles, streams) for a
     * session made with opt (NULL: defaults); fails with a clear message
     * when the device is absent ("no CUDA device"). */
    xf_status (*context_create)(const xf_session_options *opt, void **ctx, xf_error *err);
    void (*context_free)(void *ctx);

    /* Whether node `node` of g can run here, judging by op kind, attributes
     * and dtypes.  Fails with "backend NAME does not support op X (node 'n')"
     * or "... op X on DTYPE (node 'n')".  Dtypes still unknown pass; dynamic
     * mode asks again once they are known. */
    xf_status (*supports)(const xf_graph *g, int node, xf_error *err);

    /* optional: rewrites the session's graph, after the generic rewrites
     * and before its nodes are checked, into forms this backend runs
     * faster that compute the same values (the cpu backend: a
     * DequantizeLinear of constant 4-bit weights and the MatMul reading
     * them as one MatMulNBits). */
    xf_status (*lower_graph)(xf_graph *g, xf_error *err);
    /* Whether the session computes this backend's float16 and bfloat16
     * nodes as float ones, between Casts (half_runs.c): for backends whose
     * kernels are float ones. */
    bool half_as_float;

    /* optional, static mode only: called once with the whole graph before
     * its nodes are prepared (in node order), for choices that span nodes
     * (the layout a value is stored in between the nodes that write and
     * read it). */
    xf_status (*prepare_graph)(void *ctx, const xf_graph *g, xf_error *err);
    /* optional, static mode only, called after prepare_graph and before
     * memory is planned: sets group[i] = j for each node i whose work node
     * j < i does (group[i] stays i otherwise; group[j] must be j).  The
     * plan then keeps a group's inputs alive, and its outputs reserved,
     * from its first node to its last, so that the first node may write
     * what the later ones would. */
    void (*fusion_groups)(void *ctx, const xf_graph *g, int *group);
    /* optional, static mode only, called after prepare_graph: whether the
     * parts of Concat or Split node `node` (a Concat's inputs, a Split's
     * outputs) may be ranges of the whole's bytes (the memory plan then
     * does the node's work when the geometry allows: every dim before the
     * axis 1), given the layouts the backend stores them in.  NULL: they
     * may. */
    bool (*in_place)(void *ctx, const xf_graph *g, int node);
    /* optional, static mode only, called after prepare_graph and
     * fusion_groups: whether the output of node `node`, the last of its
     * group, may take the bytes of input *input of node *reader (a node of
     * the same group), because the group adds its work to what that input
     * holds (the cpu backend: a residual Add folded into a Conv or MatMul
     * as a sum post-op, which then needs no copy of the input first).
     * The plan gives them where no other node of the group and no later
     * node reads those bytes, and they are no graph output's. */
    bool (*accumulates_into)(void *ctx, const xf_graph *g, int node, int *reader, int *input);
    /* optional: per-node state (primitive/algorithm caches) for these shapes. */
    xf_status (*prepare)(void *ctx, const xf_graph *g, int node, const xf_tensor_view *in,
                         const xf_tensor_view *out, void **state, xf_error *err);
    /* Computes the node: in[] has g->nodes[node].n_inputs views, out[] has
     * n_outputs views with their buffers already allocated. */
    xf_status (*run_node)(void *ctx, const xf_graph *g, int node, void *state,
                          const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
    /* optional: frees what prepare made. */
    void (*release)(void *ctx, void *state);

    /* Backend memory: 64-byte aligned; alloc(ctx, 0) may return NULL. */
    void *(*alloc)(void *ctx, size_t bytes);
    void (*free)(void *ctx, void *ptr);
    /* Host -> backend and backend -> host copies; both return once the
     * bytes are in place (copy_out waits for the work that produced them). */
    xf_status (*copy_in)(void *ctx, void *dst, const void *host_src, size_t bytes, xf_error *err);
    xf_status (*copy_out)(void *ctx, void *host_dst, const void *src, size_t bytes, xf_error *err);
    /* optional: waits for queued work (asynchronous backends), so that
     * per-node timings measure the node and not its launch. */
    xf_status (*synchronize)(void *ctx, xf_error *err);
    /* optional, both or neither: times one node on the device's own clock
     * (CUDA events on the backend's stream) instead of the host's:
     * timer_start before run_node, timer_stop after it waits for the node
     * and returns its seconds. */
    xf_status (*timer_start)(void *ctx, xf_error *err);
    xf_status (*timer_stop)(void *ctx, double *seconds, xf_error *err);
    /* optional: the device a context runs on (e.g. "NVIDIA H200 sm_90"),
     * so that what is measured on it is kept apart from other devices'. */
    void (*device_name)(void *ctx, char *buf, size_t n);
    /* optional: how the backend runs prepared node `node` (state from
     * prepare, NULL when it made none), in its library's words: oneDNN's
     * implementation ("brgconv:avx512_core", "ref:any" for its slow
     * reference loops), a node folded into another, a loop of its own. */
    void (*node_impl)(void *ctx, const xf_graph *g, int node, void *state, char *buf, size_t n);
} xf_backend;

/* The backend called name, or NULL.  The cuda backend is loaded (its
 * module, with the CUDA libraries) the first time it is asked for. */
const xf_backend *xf_backend_find(const char *name);
/* Why a backend this build has cannot be had ("its module did not load:
 * libcudnn.so.9: cannot open shared object file ..."); NULL for one that
 * can, and for a name this build does not have. */
const char *xf_backend_unavailable(const char *name);
/* All backends of this build that can be had; returns how many and sets
 * *list. */
int xf_backend_list(const xf_backend *const **list);
/* The most threads the host backends' runs use from now on, for sessions
 * made and run by the calling thread (OpenMP's omp_set_num_threads: the
 * cpu backend's oneDNN primitives and loops, the attention heads); n >= 1.
 * Without it, OpenMP's default: OMP_NUM_THREADS, else one per core.
 * xf_runtime_threads gives the number in force (1 in a build without
 * OpenMP, where everything runs on the calling thread). */
void xf_runtime_set_threads(int n);
int xf_runtime_threads(void);
/* The image formats ImageDecoder decodes in this build (each found
 * library's), each after a space: " jpeg png tiff webp jpeg2000 pnm bmp"
 * where every one was found; "" where none was. */
const char *xf_runtime_image_formats(void);

/* ---------------------------------------------------------------- memory plan */

/* Where every non-constant value lives in one arena.  Values are node
 * outputs (graph inputs are bound to the caller's tensors, initializers to
 * their data).  A value lives from the node that produces it to its last
 * consumer, graph outputs to the end; two values share bytes only when
 * their lifetimes are disjoint, or when one holds the other's bytes
 * (`alias`): the output of a Reshape, Flatten, Squeeze, Unsqueeze or
 * Identity of a planned tensor is its input's bytes, and where the dims
 * before the axis are 1 the inputs of a Concat are its output's bytes and
 * the outputs of a Split its input's, each at its place (a 64-byte
 * aligned one); those bytes then live from the first of them made to the
 * last read, and the session does not run such nodes (`skip`).  Offsets
 * are 64-byte aligned. */
typedef struct xf_memplan {
    int n_values;         /* == the graph's n_values; arrays below are per value id */
    int64_t *offset;      /* byte offset in the arena; -1 for values outside the plan */
    size_t *size;         /* bytes reserved (rounded up to 64); 0 outside the plan */
    int *first;           /* lifetime: first and last node index (n_nodes = end of run) */
    int *last;
    int *alias;           /* the value whose bytes this one is part of (its lifetime
                           * is that value's); -1 for every other value */
    size_t *alias_offset; /* where in them it starts (0 for views) */
    int n_nodes;
    bool *skip;           /* per node: its work is done by the plan (a view, a Concat) */
    size_t arena_bytes;   /* the arena this plan needs */
    size_t peak_bytes;    /* most bytes live at one step: no plan can need less */
    size_t total_bytes;   /* sum of all sizes: what a plan without reuse would need */
} xf_memplan;

/* Plans g, whose value shapes must all be known: XF_ERR_UNSUPPORTED naming
 * the first value whose shape is not (the session then runs dynamically). */
xf_status xf_memplan_compute(const xf_graph *g, xf_memplan *out, xf_error *err);
/* The same for a backend that runs groups of nodes as one (see
 * fusion_groups); group may be NULL (no groups).  Lifetimes are then in
 * group steps: a value lives from its producer's group's first node to its
 * last reader's group's last node.  in_place[i] says whether Concat or
 * Split node i may have its parts in the whole's bytes (NULL: every one
 * may; see xf_backend.in_place).  accumulate[i], where its reader is not
 * negative, names the input whose bytes node i's output may take (NULL:
 * none; see xf_backend.accumulates_into). */
typedef struct xf_accumulate {
    int reader, input;
} xf_accumulate;
xf_status xf_memplan_compute_grouped(const xf_graph *g, const int *group, const bool *in_place,
                                     const xf_accumulate *accumulate, xf_memplan *out, xf_error *err);
void xf_memplan_free(xf_memplan *p);
/* Whether plan p does node i's work (p->skip): the session neither
 * prepares nor runs it. */
bool xf_memplan_skips(const xf_memplan *p, int i);

/* ---------------------------------------------------------------- sessions */

/* A session runs one call at a time (it keeps per-run scratch). */
typedef struct xf_session xf_session;

struct xf_session_options {
    /* Run every node in dynamic mode, even when every shape is static
     * (tests, and graphs whose static shapes are not trusted).  Without it
     * a graph with shapes known only at run time still runs the nodes
     * whose shapes are all known before (and all they read) as a static
     * session. */
    bool force_dynamic;
    /* The most bytes one tensor may take (0: no limit): a value whose size
     * is known at creation and over it fails the creation, one whose size
     * comes from the data (a Range's limit, a Loop's trip count) the run,
     * naming it; the sessions of If, Loop and Scan bodies and of
     * FlexAttention's modifiers have the same limit.  For running models
     * from untrusted sources without exhausting memory. */
    size_t max_tensor_bytes;
    /* Run the graph as given, without the session's own rewrites (what an
     * Identity passes on read where it comes from, Transposes moved and
     * cancelled, Pads folded into their readers, activations fused into
     * Convs): the reference run that checks those rewrites too. */
    bool as_given;
    /* Sum every convolution directly, as cpu_ref does.  Without it the
     * backends may compute one through a transform that rounds
     * differently: the cpu backend (static mode) runs float 3x3
     * convolutions of stride 1 and 64 or more output channels through
     * Winograd's F(2x2, 3x3) or F(4x4, 3x3) where oneDNN has the kernel
     * (AVX-512) and they hold most of the graph's convolution work (alone,
     * up to 2 times faster than the direct kernels; the largest difference
     * from the exact sums up to about 3 times theirs), and the cuda backend
     * takes whichever algorithm cuDNN times fastest, Winograd and FFT among
     * them.
     * Sessions made inside this one (subgraphs, Gradient) inherit it. */
    bool direct_convolutions;
    /* Run each node on the kernel the backend's plan gives, without timing
     * others.  Without it the cpu backend (static mode) times oneDNN's
     * other fast kernels for a float convolution whose layouts the plan
     * fixes (the direct one beside Winograd's, the direct one in the layout
     * oneDNN prefers, Winograd's where the plan stores values in another
     * layout, with reorders) and runs the fastest: which one that
     * is depends on the processor.  The choice is kept for the process and
     * in a file ($XDG_CACHE_HOME/xflow/cpu-kernels.txt, else
     * ~/.cache/xflow/cpu-kernels.txt; the environment variable
     * XF_KERNEL_CACHE names another, or none if empty) that later
     * processes take it from; without the file, two processes may choose
     * differently where timings are close or the machine busy, and the
     * kernels round sums in different orders.  Sessions made inside this
     * one inherit it. */
    bool fixed_kernels;
};

/* Binds g to the backend (NULL: "cpu_ref").  The session keeps its own
 * clone of g (tensors are shared, not copied) with shapes inferred for
 * opset, so g may change or be freed afterwards.  Fails, before anything
 * runs, naming the node when an op or dtype is not supported or a node is
 * opaque.  opt may be NULL. */
xf_status xf_session_create(const xf_graph *g, int64_t opset, const char *backend_name,
                            const xf_session_options *opt, xf_session **out, xf_error *err);
/* Runs once.  inputs[i] feeds g->inputs[i] and must match its dtype and
 * shape (an input whose shape the graph leaves unknown takes any shape);
 * outputs[i] receives a new reference for g->outputs[i]. */
xf_status xf_session_run(xf_session *s, xf_tensor *const *inputs, xf_tensor **outputs,
                         xf_error *err);
/* Times every node: `warmup` untimed runs, then `repeats` timed runs;
 * node_seconds[i] (n_nodes entries) receives node i's median time. */
xf_status xf_session_profile(xf_session *s, xf_tensor *const *inputs, int warmup, int repeats,
                             double *node_seconds, xf_error *err);
void xf_session_free(xf_session *s);
/* How the backend runs node `node` (xf_backend.node_impl) as last
 * prepared; empty where the backend says nothing. */
void xf_session_node_impl(const xf_session *s, int node, char *buf, size_t n);

/* The session's graph: the graph it was created from with shapes
 * inferred and the session's rewrites applied (see as_given); its inputs
 * and outputs are the same values in the same order. */
const xf_graph *xf_session_graph(const xf_session *s);
/* True when shapes are resolved per run. */
bool xf_session_is_dynamic(const xf_session *s);
/* How many nodes run with memory planned and state prepared once, at
 * creation: all in static mode, those of the static part in dynamic mode
 * (see force_dynamic). */
int xf_session_static_nodes(const xf_session *s);
/* The memory plan of a static session; NULL in dynamic mode. */
const xf_memplan *xf_session_memplan(const xf_session *s);

/* ---------------------------------------------------------------- constant folding */

/* Evaluates node on cpu_ref.  Its inputs must be initializers (Shape only
 * needs its input's static shape); its output shapes are taken from g when
 * known, else inferred.  outputs[k] receives a new reference (NULL for an
 * omitted optional output).  Matches core's xf_node_eval_fn. */
xf_status xf_runtime_eval_node(const xf_graph *g, int node, xf_tensor **outputs, xf_error *err);

/* ---------------------------------------------------------------- tensor helpers */

/* Deterministic pseudo-random tensor: floating types uniform in [-1, 1],
 * integer types in [0, 9], bool 0/1.  NULL for unsupported dtypes or no memory. */
xf_tensor *xf_tensor_random(xf_dtype dtype, const xf_shape *shape, uint64_t seed);
/* The same with integer types in [lo, hi - 1] (hi > lo; bool 0/1 unless
 * the range says one value). */
xf_tensor *xf_tensor_random_ints(xf_dtype dtype, const xf_shape *shape, uint64_t seed, int64_t lo, int64_t hi);
/* The largest |element| of a numeric tensor (0 when it is empty; NaN
 * elements are skipped). */
double xf_tensor_max_abs(const xf_tensor *t);
/* A new tensor holding t's elements as floating dtype `to` (rounded to
 * nearest); NULL when t or `to` is not a floating dtype, or no memory. */
xf_tensor *xf_tensor_as_float(const xf_tensor *t, xf_dtype to);
/* Elementwise |a - b| <= atol + rtol * |b|, b being the expected tensor
 * (NaN matches NaN, equal infinities match).  Reports the largest absolute
 * and relative differences (either pointer may be NULL).  Returns
 * XF_ERR_INVALID, with *ok false and err saying how, when dtypes or shapes
 * differ or the dtype is not numeric (float8 included) or bool.  Two
 * sequences compare entry by entry (their lengths must agree). */
xf_status xf_tensor_compare(const xf_tensor *a, const xf_tensor *b, double atol, double rtol,
                            double *max_abs, double *max_rel, bool *ok, xf_error *err);

#ifdef __cplusplus
}
#endif
#endif
