#include "cli.h"

#include "xf_proto.h"
#include "xf_runtime.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *prog_name = "xflow";
static int verbosity = 1;

static void log_to_stderr(int level, const char *msg, void *user)
{
    static const char *const kind[] = {"error", "warning", "info", "debug"};
    fprintf(stderr, "%s: %s: %s\n", prog_name, kind[level < 0 ? 0 : level > 3 ? 3 : level], msg);
}

void xf_cli_init(const char *prog, int v)
{
    prog_name = prog;
    verbosity = v;
    int level = v <= 0 ? XF_LOG_ERROR : v == 1 ? XF_LOG_WARN : XF_LOG_DEBUG;
    xf_log_set(log_to_stderr, NULL, level);
}

int xf_cli_verbosity(void) { return verbosity; }

#define XF_CLI_OMP_MARK "XF_OPENMP_POLICY_SET"

/* Iterations an idle OpenMP thread spins before it sleeps: a few tens of
 * microseconds, far less than GNU OpenMP's default 300,000, which starves
 * other processes on a shared machine (two 2-thread ResNet-18 runs on two
 * cores: 69 ms each at 30,000, 34 ms at 1,000, 33 ms passive), yet enough
 * to spare the sleep and wake-up that passive waiting puts between every
 * two nodes (a tiny BERT, 140 nodes on two threads: 3.0 ms passive, 0.18
 * ms at 1,000). */
#define XF_CLI_OMP_SPIN "1000"

void xf_cli_openmp_passive(char **argv)
{
    if (getenv("OMP_WAIT_POLICY") || getenv(XF_CLI_OMP_MARK))
        return;
    bool spin = !getenv("GOMP_SPINCOUNT");
    if (setenv("OMP_WAIT_POLICY", "passive", 1) != 0 || setenv(XF_CLI_OMP_MARK, "1", 1) != 0 ||
        (spin && setenv("GOMP_SPINCOUNT", XF_CLI_OMP_SPIN, 1) != 0))
        return;
    execv("/proc/self/exe", argv);
    /* not re-executed: this process keeps the defaults */
    unsetenv("OMP_WAIT_POLICY");
    if (spin)
        unsetenv("GOMP_SPINCOUNT");
}

const char *xf_cli_openmp_policy(void)
{
    const char *v = getenv("OMP_WAIT_POLICY");
    if (!v)
        return "unset";
    if (!getenv(XF_CLI_OMP_MARK) || strcmp(v, "passive") != 0)
        return v;
    static char buf[96];
    const char *spin = getenv("GOMP_SPINCOUNT");
    snprintf(buf, sizeof buf, "passive after GOMP_SPINCOUNT=%s spins (set by xflow)", spin ? spin : "0");
    return buf;
}

int xf_cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: error: ", prog_name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

int xf_cli_usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", prog_name);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n(run '%s --help' for usage)\n", prog_name);
    va_end(ap);
    return 2;
}

void xf_cli_info(const char *fmt, ...)
{
    if (verbosity < 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
}

double xf_cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

bool xf_cli_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

bool xf_cli_parse_int(const char *opt, const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || errno || end == s || *end || v < lo || v > hi) {
        xf_cli_usage_error("%s needs an integer from %ld to %ld, got '%s'", opt, lo, hi, s ? s : "");
        return false;
    }
    *out = v;
    return true;
}

bool xf_cli_parse_double(const char *opt, const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = s ? strtod(s, &end) : 0;
    if (!s || errno || end == s || *end || v < 0) {
        xf_cli_usage_error("%s needs a non-negative number, got '%s'", opt, s ? s : "");
        return false;
    }
    *out = v;
    return true;
}

/* The rows of the table that index value v selects from, when v (or v
 * passed through casts and reshapes) indexes a Gather or an embedding of
 * EmbedLayerNormalization whose table has a known size; else `limit`.  A
 * random index input then stays in range, so a BERT's token_type_ids
 * (two rows) runs without an input file. */
static int64_t index_rows(const xf_graph *g, int v, int64_t limit, int depth)
{
    for (int i = 0; i < g->n_nodes && depth < 8; i++) {
        const xf_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_inputs; k++) {
            if (n->inputs[k] != v)
                continue;
            int table = -1, axis = 0;
            if (n->op == XF_OP_GATHER && k == 1) {
                table = n->inputs[0];
                axis = (int)n->attrs.axis;
            } else if (n->op == XF_OP_MS_EMBED_LAYER_NORM && k <= 1) {
                table = n->n_inputs > 2 + 2 * k ? n->inputs[2 + 2 * k] : -1; /* word or segment embedding */
            } else if (n->op == XF_OP_MS_EMBED_LAYER_NORM && k == 8) {
                table = n->inputs[3]; /* position embedding */
            } else if (k == 0 && n->n_outputs == 1 &&
                       (n->op == XF_OP_CAST || n->op == XF_OP_RESHAPE || n->op == XF_OP_SQUEEZE ||
                        n->op == XF_OP_UNSQUEEZE || n->op == XF_OP_FLATTEN || n->op == XF_OP_IDENTITY)) {
                limit = index_rows(g, n->outputs[0], limit, depth + 1);
                continue;
            }
            if (table < 0)
                continue;
            const xf_shape *ts = &g->values[table].shape;
            axis = axis < 0 ? axis + ts->ndim : axis;
            if (axis >= 0 && axis < ts->ndim && ts->dims[axis] > 0 && ts->dims[axis] < limit)
                limit = ts->dims[axis];
        }
    }
    return limit;
}

/* A name that says mask, as a transformer's attention_mask: case aside. */
static bool names_mask(const char *name)
{
    for (const char *p = name; p && *p; p++)
        if (strncasecmp(p, "mask", 4) == 0)
            return true;
    return false;
}

/* The words the model names: the strings of its nodes' string lists
 * (vocabularies, categories, keys, stopwords) and of its string
 * initializers; *n of them (NULL when none; the array to free). */
static const char **model_words(const xf_graph *g, int64_t *n)
{
    int64_t cap = 0;
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; g->nodes[i].opaque && k < g->nodes[i].opaque->n_strings; k++)
            cap += g->nodes[i].opaque->strings[k].n;
    for (int v = 0; v < g->n_values; v++)
        cap += g->values[v].init && g->values[v].init->dtype == XF_DT_STRING ? xf_tensor_numel(g->values[v].init) : 0;
    const char **w = cap ? malloc(sizeof *w * (size_t)cap) : NULL;
    *n = 0;
    for (int i = 0; w && i < g->n_nodes; i++)
        for (int k = 0; g->nodes[i].opaque && k < g->nodes[i].opaque->n_strings; k++) {
            const xf_opaque_strings *a = &g->nodes[i].opaque->strings[k];
            for (int j = 0; a->n > 1 && j < a->n; j++) /* lists: one string is a mode */
                w[(*n)++] = a->v[j];
        }
    for (int v = 0; w && v < g->n_values; v++) {
        const xf_tensor *t = g->values[v].init;
        for (int64_t j = 0; t && t->dtype == XF_DT_STRING && t->strings && j < xf_tensor_numel(t); j++)
            w[(*n)++] = t->strings[j] ? t->strings[j] : "";
    }
    if (!*n) {
        free(w);
        return NULL;
    }
    return w;
}

/* Whether value v reaches a Cast or CastLike (to numbers) through ops
 * that only move its elements. */
static bool read_as_numbers(const xf_graph *g, int v, int depth)
{
    for (int i = 0; depth < 8 && i < g->n_nodes; i++) {
        const xf_node *n = &g->nodes[i];
        bool reads = false;
        for (int k = 0; k < n->n_inputs; k++)
            reads |= n->inputs[k] == v;
        if (!reads)
            continue;
        if (n->op == XF_OP_CAST || n->op == XF_OP_CAST_LIKE)
            return true;
        if (n->op == XF_OP_OPAQUE && strcmp(n->opaque->op_type, "CastMap") == 0) {
            const xf_opaque_strings *to = xf_opaque_find_strings(n->opaque, "cast_to");
            return !to || to->n != 1 || strcmp(to->v[0], "TO_STRING") != 0;
        }
        bool moves = n->op == XF_OP_RESHAPE || n->op == XF_OP_FLATTEN || n->op == XF_OP_SQUEEZE ||
                     n->op == XF_OP_UNSQUEEZE || n->op == XF_OP_IDENTITY || n->op == XF_OP_TRANSPOSE ||
                     n->op == XF_OP_SLICE || n->op == XF_OP_GATHER || n->op == XF_OP_CONCAT;
        for (int k = 0; moves && k < n->n_outputs; k++)
            if (n->outputs[k] >= 0 && read_as_numbers(g, n->outputs[k], depth + 1))
                return true;
    }
    return false;
}

/* Random strings that reach the model's vocabularies: each one of its
 * words, or two to four of them joined by spaces (a text); NULL when the
 * model names none. */
static xf_tensor *random_words(const xf_graph *g, const xf_shape *shape, uint64_t seed)
{
    int64_t n_words, numel = xf_shape_numel(shape);
    const char **words = model_words(g, &n_words);
    if (!words)
        return NULL;
    xf_tensor *pick = xf_tensor_random_ints(XF_DT_INT64, &(xf_shape){2, {numel, 5}}, seed, 0, n_words * 4);
    xf_tensor *t = pick ? xf_tensor_create(XF_DT_STRING, shape) : NULL;
    for (int64_t i = 0; t && i < numel; i++) {
        const int64_t *r = (const int64_t *)pick->data + i * 5;
        int count = r[0] % 4 == 0 ? 1 : 2 + (int)(r[0] % 3);
        size_t len = 1;
        for (int k = 1; k <= count; k++)
            len += strlen(words[r[k] % n_words]) + 1;
        if (!(t->strings[i] = calloc(1, len))) {
            xf_tensor_release(t);
            t = NULL;
            break;
        }
        for (int k = 1; k <= count; k++) {
            if (k > 1)
                strcat(t->strings[i], " ");
            strcat(t->strings[i], words[r[k] % n_words]);
        }
    }
    xf_tensor_release(pick);
    free(words);
    return t;
}

/* Whether value v is the encoded bytes an ImageDecoder reads. */
static bool read_as_image(const xf_graph *g, int v)
{
    for (int i = 0; i < g->n_nodes; i++) {
        const xf_node *n = &g->nodes[i];
        if (n->op == XF_OP_OPAQUE && n->n_inputs >= 1 && n->inputs[0] == v &&
            strcmp(n->opaque->op_type, "ImageDecoder") == 0 &&
            (!n->opaque->domain[0] || strcmp(n->opaque->domain, "ai.onnx") == 0))
            return true;
    }
    return false;
}

enum { IMAGE_SIDE = 64 };

/* The bytes of a binary PPM of side x side pixels. */
static int64_t ppm_bytes(int side) { return (int64_t)snprintf(NULL, 0, "P6\n%d %d\n255\n", side, side) + 3 * side * side; }

/* A seeded random image as ImageDecoder's bytes, the [n] uint8 of input
 * v: a binary PPM of random pixels, the largest square up to
 * IMAGE_SIDE pixels a side that n bytes hold, zeros after it (which the
 * decoder leaves); NULL (after a warning) when n bytes hold none. */
static xf_tensor *random_image(const xf_value *v, int64_t n, uint64_t seed)
{
    int side = IMAGE_SIDE;
    while (side > 0 && ppm_bytes(side) > n)
        side--;
    if (side == 0) {
        xf_log(XF_LOG_WARN,
               "input '%s' is the encoded image an ImageDecoder reads, and %lld bytes hold none: random bytes, "
               "which decode to empty images (give --input-shape %s=%lld for a random %dx%d image, or --input "
               "FILE.pb with an encoded image)",
               v->name, (long long)n, v->name, (long long)ppm_bytes(IMAGE_SIDE), IMAGE_SIDE, IMAGE_SIDE);
        return NULL;
    }
    xf_tensor *t = xf_tensor_random_ints(XF_DT_UINT8, &(xf_shape){1, {n}}, seed, 0, 256);
    if (!t)
        return NULL;
    char head[32];
    int len = snprintf(head, sizeof head, "P6\n%d %d\n255\n", side, side);
    memcpy(t->data, head, (size_t)len);
    memset((uint8_t *)t->data + ppm_bytes(side), 0, (size_t)(n - ppm_bytes(side)));
    return t;
}

/* A seeded random tensor of dtype and shape for input v: floats in
 * [-1, 1), integers in [0, 10) or below the rows of a table they index,
 * and an integer or bool input named as a mask all ones (every position
 * attended: a random mask would give an LLM's sequence lengths that its
 * KV cache does not hold); strings made of the words the model names
 * (random_words), else (or where they are cast to numbers) the decimal
 * forms of integers; an ImageDecoder's bytes an encoded image
 * (random_image). */
static xf_status random_tensor(const xf_graph *g, const xf_value *v, const xf_shape *shape, uint64_t seed,
                               xf_tensor **out, xf_error *err)
{
    char buf[128];
    if (v->dtype == XF_DT_STRING && !read_as_numbers(g, (int)(v - g->values), 0) &&
        (*out = random_words(g, shape, seed)) != NULL)
        return XF_OK;
    if (v->dtype == XF_DT_UINT8 && shape->ndim == 1 && read_as_image(g, (int)(v - g->values)) &&
        (*out = random_image(v, shape->dims[0], seed)) != NULL)
        return XF_OK;
    bool floating = xf_dtype_is_float(v->dtype), mask = !floating && names_mask(v->name);
    int64_t rows = floating || mask ? 10 : index_rows(g, (int)(v - g->values), 10, 0);
    *out = xf_tensor_random_ints(v->dtype, shape, seed, mask ? 1 : 0, mask ? 2 : rows);
    if (!*out)
        return xf_error_set(err, XF_ERR_UNSUPPORTED, "cannot make a random %s tensor of shape %s for input '%s'",
                            xf_dtype_name(v->dtype), xf_shape_str(shape, buf, sizeof buf), v->name);
    return XF_OK;
}

enum { SAMPLE_ENTRIES = 3, SAMPLE_DIM = 2 };

/* A seeded random sequence or optional for input v: SAMPLE_ENTRIES entries
 * (an optional: one tensor or such a sequence) of its element shape, dims
 * the file leaves symbolic of size SAMPLE_DIM. */
static xf_status random_container(const xf_graph *g, const xf_value *v, uint64_t seed, xf_tensor **out,
                                  xf_error *err)
{
    xf_shape shape = v->shape.ndim >= 0 ? v->shape : v->elem_decl;
    if (shape.ndim < 0)
        return xf_error_set(err, XF_ERR_INVALID,
                            "input '%s' is a%s %s whose element shape the model does not declare; give it with "
                            "--input FILE.pb",
                            v->name, xf_kind_is_optional(v->kind) ? "n" : "", xf_kind_name(v->kind));
    for (int d = 0; d < shape.ndim; d++)
        shape.dims[d] = shape.dims[d] < 0 ? SAMPLE_DIM : shape.dims[d];
    bool seq = xf_kind_content(v->kind) == XF_VK_SEQUENCE;
    xf_tensor *items[SAMPLE_ENTRIES] = {0}, *content = NULL;
    xf_status st = XF_OK;
    for (int i = 0; i < (seq ? SAMPLE_ENTRIES : 1) && st == XF_OK; i++)
        st = random_tensor(g, v, &shape, seed + 104729u * (uint64_t)i, &items[i], err);
    if (st == XF_OK)
        content = seq ? xf_sequence_create(v->dtype, SAMPLE_ENTRIES, items) : xf_tensor_retain(items[0]);
    *out = !content || !xf_kind_is_optional(v->kind) ? content : xf_optional_create(content, seq, v->dtype);
    if (content && *out != content)
        xf_tensor_release(content);
    for (int i = 0; i < SAMPLE_ENTRIES; i++)
        xf_tensor_release(items[i]);
    if (st == XF_OK && !*out)
        st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    return st;
}

static int cmp_words(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int cmp_ints(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The int64 keys the ops reading map v look up (DictVectorizer's
 * int64_vocabulary, CastMap's places below max_map, up to 64 of them),
 * else 0 to 4: *n of them (the array to free; NULL when out of memory). */
static int64_t *map_int_keys(const xf_graph *g, int v, int64_t *n)
{
    int64_t cap = 5;
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; g->nodes[i].opaque && k < g->nodes[i].n_inputs; k++) {
            const xf_opaque_ints *voc = g->nodes[i].inputs[k] == v ? xf_opaque_find_ints(g->nodes[i].opaque,
                                                                                         "int64_vocabulary") : NULL;
            cap += voc ? voc->n : g->nodes[i].inputs[k] == v ? 64 : 0;
        }
    int64_t *keys = malloc(sizeof *keys * (size_t)cap);
    *n = 0;
    for (int i = 0; keys && i < g->n_nodes; i++)
        for (int k = 0; g->nodes[i].opaque && k < g->nodes[i].n_inputs; k++) {
            if (g->nodes[i].inputs[k] != v)
                continue;
            const xf_opaque_ints *voc = xf_opaque_find_ints(g->nodes[i].opaque, "int64_vocabulary");
            const xf_opaque_ints *mm = xf_opaque_find_ints(g->nodes[i].opaque, "max_map");
            for (int64_t j = 0; voc && j < voc->n; j++)
                keys[(*n)++] = voc->v[j];
            for (int64_t j = 0; !voc && mm && mm->n == 1 && j < mm->v[0] && j < 64; j++)
                keys[(*n)++] = j;
        }
    for (int64_t j = 0; keys && !*n && j < 5; j++)
        keys[(*n)++] = j;
    return keys;
}

/* A seeded random map for input v: about three in four of the keys the
 * model names (string keys: its words, random_words's; int64 keys:
 * map_int_keys's), each once, to values as random_tensor makes them. */
static xf_status random_map(const xf_graph *g, const xf_value *v, uint64_t seed, xf_tensor **out, xf_error *err)
{
    bool str = v->key_dtype == XF_DT_STRING;
    int64_t n = 0;
    static const char *const fallback[] = {"a", "b", "c", "d"};
    const char **words = str ? model_words(g, &n) : NULL;
    int64_t *ints = str ? NULL : map_int_keys(g, (int)(v - g->values), &n);
    const char *const *cands = words ? words : fallback;
    n = str && !words ? 4 : n;
    if (words)
        qsort(words, (size_t)n, sizeof *words, cmp_words);
    if (ints)
        qsort(ints, (size_t)n, sizeof *ints, cmp_ints);
    xf_tensor *pick = xf_tensor_random_ints(XF_DT_INT64, &(xf_shape){1, {n}}, seed, 0, 4);
    int64_t *take = pick ? (int64_t *)pick->data : NULL, m = 0; /* 0: left out */
    for (int64_t i = 0; take && i < n; i++) {
        bool again = i > 0 && (str ? strcmp(cands[i], cands[i - 1]) == 0 : ints[i] == ints[i - 1]);
        take[i] = again ? 0 : take[i];
        m += take[i] != 0;
    }
    xf_tensor *keys = take && (ints || str) ? xf_tensor_create(v->key_dtype, &(xf_shape){1, {m}}) : NULL;
    bool oom = false;
    for (int64_t i = 0, j = 0; keys && i < n && !oom; i++) {
        if (take[i] && !str)
            ((int64_t *)keys->data)[j++] = ints[i];
        else if (take[i])
            oom = !(keys->strings[j++] = strdup(cands[i]));
    }
    if (oom) {
        xf_tensor_release(keys);
        keys = NULL;
    }
    xf_status st = XF_OK;
    xf_tensor *vals = NULL;
    if (keys)
        st = random_tensor(g, v, &(xf_shape){1, {m}}, seed + 31u, &vals, err);
    if (st == XF_OK && !(*out = keys && vals ? xf_map_create(keys, vals) : NULL))
        st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    xf_tensor_release(pick);
    xf_tensor_release(keys);
    xf_tensor_release(vals);
    free(words);
    free(ints);
    return st;
}

/* A seeded random value for graph input i. */
static xf_status random_input(const xf_graph *g, int i, uint64_t seed, xf_tensor **out, xf_error *err)
{
    const xf_value *v = &g->values[g->inputs[i]];
    seed += (uint64_t)i * 7919u;
    if (v->kind == XF_VK_MAP)
        return random_map(g, v, seed, out, err);
    if (v->kind != XF_VK_TENSOR)
        return random_container(g, v, seed, out, err);
    if (v->shape.ndim < 0 || xf_shape_numel(&v->shape) < 0)
        return xf_error_set(err, XF_ERR_INVALID,
                            "input '%s' has no static shape; give one with --input-shape %s=... or an input file",
                            v->name, v->name);
    return random_tensor(g, v, &v->shape, seed, out, err);
}

xf_status xf_cli_load_inputs(const xf_graph *g, const char *const *files, int n_files, uint64_t seed,
                             xf_tensor ***out, xf_error *err)
{
    if (n_files > g->n_inputs)
        return xf_error_set(err, XF_ERR_INVALID, "%d input files given but the model has %d inputs", n_files,
                            g->n_inputs);
    xf_tensor **t = calloc((size_t)(g->n_inputs > 0 ? g->n_inputs : 1), sizeof *t);
    if (!t)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    xf_status st = XF_OK;
    for (int i = 0; st == XF_OK && i < g->n_inputs; i++)
        st = i < n_files ? xf_value_load_pb(files[i], g->values[g->inputs[i]].kind, &t[i], NULL, err)
                         : random_input(g, i, seed, &t[i], err);
    if (st != XF_OK) {
        xf_cli_free_tensors(t, g->n_inputs);
        return st;
    }
    *out = t;
    return XF_OK;
}

const int64_t xf_cli_guesses[XF_CLI_GUESSES] = {64, 512};

int64_t xf_cli_next_guess(int64_t taken)
{
    for (int i = 0; taken > 0 && i < XF_CLI_GUESSES; i++)
        if (xf_cli_guesses[i] > taken)
            return xf_cli_guesses[i];
    return 0;
}

xf_status xf_cli_load_model(const char *path, const xf_input_shape *shapes, int n_shapes, const xf_dim_size *dims,
                            int n_dims, const char *const *inputs, int n_inputs, int64_t *guess, xf_model **out,
                            xf_error *err)
{
    xf_shape *fed = n_inputs > 0 ? calloc((size_t)n_inputs, sizeof *fed) : NULL;
    if (n_inputs > 0 && !fed)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n_inputs; i++) {
        /* a SequenceProto, OptionalProto or MapProto file (for a sequence,
         * optional or map input) sizes no dim; a file that is none of the three is refused,
         * naming it, with why it is not a TensorProto */
        xf_tensor *t;
        xf_error ignored;
        xf_status st = xf_tensor_load_pb(inputs[i], &t, NULL, err);
        if (st != XF_OK && (xf_value_load_pb(inputs[i], XF_VK_OPTIONAL_TENSOR, &t, NULL, &ignored) == XF_OK ||
                            xf_value_load_pb(inputs[i], XF_VK_SEQUENCE, &t, NULL, &ignored) == XF_OK ||
                            xf_value_load_pb(inputs[i], XF_VK_MAP, &t, NULL, &ignored) == XF_OK))
            st = XF_OK;
        if (st != XF_OK) {
            free(fed);
            return st;
        }
        fed[i] = xf_tensor_is_container(t) ? (xf_shape){.ndim = -1} : t->shape;
        xf_tensor_release(t);
    }
    bool guessed = false;
    xf_load_options lo = {.input_shapes = shapes,
                          .n_input_shapes = n_shapes,
                          .dim_sizes = dims,
                          .n_dim_sizes = n_dims,
                          .feed_shapes = fed,
                          .n_feed_shapes = n_inputs,
                          .guess_size = *guess > 1 ? *guess : 1,
                          .guessed = &guessed};
    xf_status st = xf_model_load(path, &lo, out, err);
    free(fed);
    lo.feed_shapes = NULL;
    /* symbolic dims that nothing sized, taken as 1, may not fit (a
     * detector downsampling by 32, an STFT's window): larger sizes past
     * each input's first dim (a batch stays 1), the first error kept,
     * and the last one beside it where it differs: a recognizer's height
     * that must pool to 1 shows there (PP-OCRv2's, 32) */
    xf_error first = *err;
    bool given = n_shapes || n_dims || n_inputs;
    for (int i = 0; st != XF_OK && *guess <= 1 && guessed && strstr(first.msg, "(the symbolic dims were sized") &&
                    i < XF_CLI_GUESSES;
         i++) {
        lo.guess_size = xf_cli_guesses[i];
        xf_log(XF_LOG_WARN,
               "%s: its symbolic dims do not fit at size 1; trying %" PRId64 " past each input's first dim%s", path,
               xf_cli_guesses[i], given ? " where no size was given" : "");
        st = xf_model_load(path, &lo, out, err);
    }
    if (st != XF_OK && strcmp(err->msg, first.msg) != 0) {
        char *hint = strstr(err->msg, " (the symbolic dims were sized");
        if (hint)
            *hint = '\0';
        const char *last = err->msg; /* without the file's name, said already */
        size_t len = strlen(first.msg), named = strlen(path);
        if (strncmp(last, path, named) == 0 && strncmp(last + named, ": ", 2) == 0)
            last += named + 2;
        snprintf(first.msg + len, sizeof first.msg - len, "; at %" PRId64 " past each input's first dim: %.480s",
                 lo.guess_size, last);
        *err = first;
    }
    *guess = guessed ? lo.guess_size : 0;
    return st;
}

int xf_cli_parse_dim(const char *arg, xf_dim_size *dims, int *n, int max)
{
    const char *eq = arg ? strchr(arg, '=') : NULL;
    char *end = NULL;
    long long size = eq ? strtoll(eq + 1, &end, 10) : 0;
    if (!eq || eq == arg || !end || *end || end == eq + 1 || size < 1 || size > (1LL << 40))
        return xf_cli_usage_error("--dim needs NAME=N with N a positive size, e.g. seq=8");
    size_t len = (size_t)(eq - arg);
    if (*n == max)
        return xf_cli_usage_error("too many --dim options (%d at most)", max);
    for (int k = 0; k < *n; k++)
        if (strlen(dims[k].name) == len && !strncmp(dims[k].name, arg, len))
            return xf_cli_usage_error("--dim gives '%s' twice", dims[k].name);
    char *name = strndup(arg, len);
    if (!name)
        return xf_cli_error("out of memory");
    dims[(*n)++] = (xf_dim_size){name, (int64_t)size};
    return 0;
}

void xf_cli_free_dims(xf_dim_size *dims, int n)
{
    for (int i = 0; i < n; i++)
        free((char *)dims[i].name);
}

void xf_cli_free_tensors(xf_tensor **t, int n)
{
    if (!t)
        return;
    for (int i = 0; i < n; i++)
        xf_tensor_release(t[i]);
    free(t);
}

int xf_cli_written_nodes(const xf_graph *g)
{
    int n = g->n_nodes;
    for (int i = 0; i < g->n_nodes; i++)
        n += g->nodes[i].op == XF_OP_CONV && g->nodes[i].attrs.activation != XF_ACT_NONE;
    return n;
}

/* Nodes as ONNX files hold them: opaque nodes under their own op_type, and
 * a Conv's fused activation as the node it is written as. */
typedef struct op_count {
    const char *name;
    int before, after;
} op_count;

static void tally_name(op_count *rows, int *n_rows, const char *name, bool after)
{
    int r = 0;
    while (r < *n_rows && strcmp(rows[r].name, name) != 0)
        r++;
    if (r == *n_rows) {
        rows[r] = (op_count){name, 0, 0};
        (*n_rows)++;
    }
    if (after)
        rows[r].after++;
    else
        rows[r].before++;
}

static void tally(op_count *rows, int *n_rows, const xf_graph *g, bool after)
{
    static const xf_op act_op[] = {[XF_ACT_RELU] = XF_OP_RELU, [XF_ACT_SIGMOID] = XF_OP_SIGMOID,
                                   [XF_ACT_TANH] = XF_OP_TANH};
    for (int i = 0; i < g->n_nodes; i++) {
        const xf_node *nd = &g->nodes[i];
        tally_name(rows, n_rows, nd->op == XF_OP_OPAQUE && nd->opaque ? nd->opaque->op_type : xf_op_name(nd->op),
                   after);
        if (nd->op == XF_OP_CONV && nd->attrs.activation > XF_ACT_NONE && nd->attrs.activation <= XF_ACT_TANH)
            tally_name(rows, n_rows, xf_op_name(act_op[nd->attrs.activation]), after);
    }
}

void xf_cli_print_op_changes(FILE *f, const xf_graph *before, const xf_graph *after)
{
    int cap = 2 * (before->n_nodes + after->n_nodes) + 1;
    op_count *rows = calloc((size_t)cap, sizeof *rows);
    if (!rows)
        return;
    int n = 0;
    tally(rows, &n, before, false);
    tally(rows, &n, after, true);
    fprintf(f, "  %-24s %7s    %s\n", "op", "before", "after");
    for (int r = 0; r < n; r++)
        fprintf(f, "  %-24s %7d -> %d%s\n", rows[r].name, rows[r].before, rows[r].after,
                rows[r].before != rows[r].after ? "" : "  (unchanged)");
    fprintf(f, "  %-24s %7d -> %d\n", "total", xf_cli_written_nodes(before), xf_cli_written_nodes(after));
    free(rows);
}
