/* Kernels chosen by timing them.  Where oneDNN has more than one fast
 * kernel for a primitive (a convolution: Winograd's or the direct one in
 * the layout its values are stored in, or the direct one or Winograd's in
 * a layout oneDNN prefers, with reorders to and from it), which one is
 * fastest depends on the processor.  On the 2-core Intel Xeon with AMX
 * the layout plan was measured on, the direct kernels ran 10 to 20%
 * slower in the channel-blocked layout than in channels-last; on a 2-core
 * Intel Xeon with AVX-512 but no AMX, ResNet-50's strided 3x3
 * convolutions took 2.4 to 3.1 ms in the channel-blocked layout and 1.5
 * to 2.4 ms in channels-last with the reorders, and its 14x14 ones 1.5 to
 * 1.8 ms through Winograd's kernel and 1.4 ms directly in channels-last.  So
 * the candidates are run here on zeroed scratch memory, their reorders
 * included, in turns (time_candidates); each one's fastest run counts,
 * and a kernel must beat the earlier candidates by a margin
 * (xf_dn_fastest).  The choice is kept for this process under a key of
 * everything that determines it (the candidates' kernels, layouts,
 * geometry and post-ops, the thread count), so models that repeat a
 * convolution, and later sessions of the same graph, time it once; and in
 * a file (kernel_cache_path), so that later processes on the machine take
 * the same choices without timing them again.  Its lines are
 * "BEST<tab>NOTE<tab>KEY", appended one write at a time (whole lines
 * whatever other processes append); a key there starts with oneDNN's
 * version, the instruction set it runs and the processor's model name, so
 * that a cache shared between machines (a network home) or kept across
 * upgrades never hands one machine another's choices. */
#include "cpu_dnnl.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct timed_choice {
    char *key;
    int best;
    char note[XF_DN_TIMING_NOTE];
} timed_choice;

/* a few hundred distinct convolutions make a large model */
static timed_choice choices[4096];
static int n_choices;
/* the cache file the table was read from (NULL: none yet) */
static char *loaded_path;
static pthread_mutex_t choices_lock = PTHREAD_MUTEX_INITIALIZER;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Appends printf-formatted text to buf (len bytes, *at used), truncating. */
static void put(char *buf, size_t len, size_t *at, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void put(char *buf, size_t len, size_t *at, const char *fmt, ...)
{
    if (*at >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf + *at, len - *at, fmt, ap);
    va_end(ap);
    *at = k < 0 ? len : *at + (size_t)k;
}

/* The text of md: data type, dims and, for blocked layouts, the strides
 * and inner blocks. */
static void put_md(char *buf, size_t len, size_t *at, const dnnl_memory_desc_t *md)
{
    if (!md) {
        put(buf, len, at, "-;");
        return;
    }
    put(buf, len, at, "t%d k%d d", (int)md->data_type, (int)md->format_kind);
    for (int i = 0; i < md->ndims; i++)
        put(buf, len, at, "%lld,", (long long)md->dims[i]);
    if (md->format_kind == dnnl_blocked) {
        const dnnl_blocking_desc_t *b = &md->format_desc.blocking;
        put(buf, len, at, " s");
        for (int i = 0; i < md->ndims; i++)
            put(buf, len, at, "%lld,", (long long)b->strides[i]);
        for (int i = 0; i < b->inner_nblks; i++)
            put(buf, len, at, " b%lld@%lld", (long long)b->inner_blks[i], (long long)b->inner_idxs[i]);
    }
    put(buf, len, at, ";");
}

static const dnnl_memory_desc_t *pd_md(const_dnnl_primitive_desc_t pd, dnnl_query_t what, int index)
{
    const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, what, index);
    return md && md->ndims > 0 ? md : NULL;
}

static const char *pd_impl(const_dnnl_primitive_desc_t pd)
{
    const char *impl = NULL;
    return dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl ? impl : "oneDNN";
}

/* ------------------------------------------------------------ cache file */

/* XF_KERNEL_CACHE where set (empty: no file), else cpu-kernels.txt among
 * xflow's cache files; NULL for none.  The caller frees it. */
static char *kernel_cache_path(void)
{
    const char *env = getenv("XF_KERNEL_CACHE");
    if (env)
        return env[0] ? strdup(env) : NULL;
    return xf_cache_file_path("cpu-kernels.txt");
}

/* What a key starts with on this machine: oneDNN's version, the
 * instruction set it runs, the processor's model name. */
static char machine[320];
static pthread_once_t machine_once = PTHREAD_ONCE_INIT;

static void machine_fill(void)
{
    const dnnl_version_t *v = dnnl_version();
    char model[200] = "unknown";
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
            const char *m = strchr(line, ':') + 1;
            m += strspn(m, " \t");
            snprintf(model, sizeof model, "%.*s", (int)strcspn(m, "\n"), m);
            break;
        }
    if (f)
        fclose(f);
    for (char *p = model; *p; p++)
        *p = *p == '\t' || *p == '|' ? ' ' : *p;
    snprintf(machine, sizeof machine, "onednn %d.%d.%d isa %d cpu %s", v->major, v->minor, v->patch,
             (int)dnnl_get_effective_cpu_isa(), model);
}

/* Adds an entry (the lock held); false when the table is full. */
static bool remember(const char *key, int best, const char *note)
{
    if (n_choices >= (int)(sizeof choices / sizeof *choices))
        return false;
    char *k = strdup(key);
    if (!k)
        return false;
    timed_choice *t = &choices[n_choices++];
    t->key = k;
    t->best = best;
    snprintf(t->note, sizeof t->note, "%s", note);
    return true;
}

static timed_choice *find(const char *key)
{
    for (int i = 0; i < n_choices; i++)
        if (strcmp(choices[i].key, key) == 0)
            return &choices[i];
    return NULL;
}

/* Reads the cache file at path into the table (the lock held), skipping
 * lines that do not parse (a line cut short by a full disk, an edit). */
static void load_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[8192];
    int bad = 0;
    while (fgets(line, sizeof line, f)) {
        size_t len = strlen(line);
        if (len == 0 || line[len - 1] != '\n') { /* too long, or cut short */
            bad++;
            int ch;
            while (len == sizeof line - 1 && (ch = fgetc(f)) != EOF && ch != '\n')
                ;
            continue;
        }
        line[len - 1] = '\0';
        char *note = strchr(line, '\t'), *key = note ? strchr(note + 1, '\t') : NULL, *end;
        long best = strtol(line, &end, 10);
        if (!key || end != note || best < 0 || best >= XF_DN_MAX_CANDIDATES || key - note - 1 >= XF_DN_TIMING_NOTE ||
            strncmp(note + 1, "; timed:", 8) != 0) {
            bad++;
            continue;
        }
        *key++ = '\0';
        if (!find(key) && !remember(key, (int)best, note + 1))
            break;
    }
    fclose(f);
    if (bad)
        xf_log(XF_LOG_WARN, "%s: %d lines that are no timed kernel choices ignored (remove the file to start anew)",
               path, bad);
}

/* Appends one entry to the file at path in a single write. */
static void append_file(const char *path, const char *key, int best, const char *note)
{
    size_t len = strlen(key) + strlen(note) + 32;
    char *line = malloc(len);
    if (!line)
        return;
    int k = snprintf(line, len, "%d\t%s\t%s\n", best, note, key);
    int fd = xf_make_parent_dirs(path) == 0 ? open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644) : -1;
    if (fd < 0 || write(fd, line, (size_t)k) != k) {
        static bool warned;
        if (!warned)
            xf_log(XF_LOG_WARN, "%s: cannot keep the kernels timed: %s", path, strerror(errno));
        warned = true;
    }
    if (fd >= 0)
        close(fd);
    free(line);
}

/* The key of a choice among cand[0..n): everything that decides it. */
static char *choice_key(dnnl_primitive_desc_t const *cand, int n, const dnnl_memory_desc_t *src_have,
                        const dnnl_memory_desc_t *dst_have)
{
    size_t len = 4096, at = 0;
    char *key = malloc(len);
    if (!key)
        return NULL;
    pthread_once(&machine_once, machine_fill);
    put(key, len, &at, "%s|threads %d|", machine, xf_runtime_threads());
    put_md(key, len, &at, src_have);
    put_md(key, len, &at, dst_have);
    const dnnl_convolution_desc_t *cd = NULL;
    if (dnnl_primitive_desc_query(cand[0], dnnl_query_convolution_d, 0, &cd) == dnnl_success && cd) {
        int ns = cd->src_desc.ndims - 2;
        put(key, len, &at, "|conv");
        for (int i = 0; i < ns; i++)
            put(key, len, &at, " %lld/%lld/%lld/%lld", (long long)cd->strides[i], (long long)cd->dilates[i],
                (long long)cd->padding[0][i], (long long)cd->padding[1][i]);
    }
    const_dnnl_primitive_attr_t attr = NULL;
    const_dnnl_post_ops_t po = NULL;
    if (dnnl_primitive_desc_get_attr(cand[0], &attr) == dnnl_success && attr &&
        dnnl_primitive_attr_get_post_ops(attr, &po) == dnnl_success && po)
        for (int i = 0; i < dnnl_post_ops_len(po); i++) {
            dnnl_primitive_kind_t kind = dnnl_post_ops_get_kind(po, i);
            put(key, len, &at, "|post %d", (int)kind);
            float scale, alpha, beta;
            dnnl_alg_kind_t alg;
            if (kind == dnnl_eltwise &&
                dnnl_post_ops_get_params_eltwise(po, i, &scale, &alg, &alpha, &beta) == dnnl_success)
                put(key, len, &at, " %d %a %a %a", (int)alg, scale, alpha, beta);
        }
    for (int i = 0; i < n; i++) {
        put(key, len, &at, "|%s ", pd_impl(cand[i]));
        put_md(key, len, &at, pd_md(cand[i], dnnl_query_src_md, 0));
        put_md(key, len, &at, pd_md(cand[i], dnnl_query_weights_md, 0));
        put_md(key, len, &at, pd_md(cand[i], dnnl_query_weights_md, 1));
        put_md(key, len, &at, pd_md(cand[i], dnnl_query_dst_md, 0));
    }
    if (at >= len) { /* too long to be told apart safely: not kept */
        free(key);
        return NULL;
    }
    return key;
}

/* Memory of md from oneDNN, zeroed (no denormals, no NaNs to slow a run). */
static dnnl_memory_t zeroed(xf_dn_ctx *c, const dnnl_memory_desc_t *md)
{
    dnnl_memory_t m = NULL;
    void *data = NULL;
    if (dnnl_memory_create(&m, md, c->engine, DNNL_MEMORY_ALLOCATE) != dnnl_success)
        return NULL;
    if (dnnl_memory_get_data_handle(m, &data) == dnnl_success && data)
        memset(data, 0, dnnl_memory_desc_get_size(md));
    return m;
}

static dnnl_primitive_t reorder(xf_dn_ctx *c, const dnnl_memory_desc_t *from, const dnnl_memory_desc_t *to)
{
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t r = NULL;
    if (dnnl_reorder_primitive_desc_create(&pd, from, c->engine, to, c->engine, NULL) != dnnl_success)
        return NULL;
    if (dnnl_primitive_create(&r, pd) != dnnl_success)
        r = NULL;
    dnnl_primitive_desc_destroy(pd);
    return r;
}

/* One candidate set up to run: its primitive, reorders and memories. */
typedef struct trial {
    dnnl_primitive_t prim, r_in, r_out;
    dnnl_memory_t mem[6]; /* src, weights, dst, bias, src as stored, dst as stored */
    int n_args;
    double best; /* seconds of its fastest run so far; -1: none, or it cannot run */
    bool ok;
} trial;

/* Sets t up for pd with its source and destination stored as src_have and
 * dst_have (reordered where pd wants other layouts); t->ok says whether
 * it can run. */
static void trial_setup(xf_dn_ctx *c, const_dnnl_primitive_desc_t pd, const dnnl_memory_desc_t *src_have,
                        const dnnl_memory_desc_t *dst_have, trial *t)
{
    memset(t, 0, sizeof *t);
    t->best = -1;
    const dnnl_memory_desc_t *src = pd_md(pd, dnnl_query_src_md, 0), *dst = pd_md(pd, dnnl_query_dst_md, 0);
    const dnnl_memory_desc_t *wei = pd_md(pd, dnnl_query_weights_md, 0), *bias = pd_md(pd, dnnl_query_weights_md, 1);
    if (!src || !dst || !wei)
        return;
    bool in = !dnnl_memory_desc_equal(src, src_have), out = !dnnl_memory_desc_equal(dst, dst_have);
    const dnnl_memory_desc_t *mds[6] = {src, wei, dst, bias, in ? src_have : NULL, out ? dst_have : NULL};
    t->ok = dnnl_primitive_create(&t->prim, pd) == dnnl_success;
    if (!t->ok)
        t->prim = NULL;
    for (int k = 0; k < 6; k++)
        if (mds[k]) {
            t->mem[k] = zeroed(c, mds[k]);
            t->ok = t->ok && t->mem[k];
        }
    t->r_in = in ? reorder(c, src_have, src) : NULL;
    t->r_out = out ? reorder(c, dst, dst_have) : NULL;
    t->ok = t->ok && (!in || t->r_in) && (!out || t->r_out);
    t->n_args = bias ? 4 : 3;
}

/* One run of t (its reorders included): seconds, or -1 on failure. */
static double trial_run(xf_dn_ctx *c, const trial *t)
{
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, t->mem[0]},
                               {DNNL_ARG_WEIGHTS, t->mem[1]},
                               {DNNL_ARG_DST, t->mem[2]},
                               {DNNL_ARG_BIAS, t->mem[3]}};
    dnnl_exec_arg_t to_src[2] = {{DNNL_ARG_FROM, t->mem[4]}, {DNNL_ARG_TO, t->mem[0]}};
    dnnl_exec_arg_t from_dst[2] = {{DNNL_ARG_FROM, t->mem[2]}, {DNNL_ARG_TO, t->mem[5]}};
    double t0 = now();
    dnnl_status_t s = t->r_in ? dnnl_primitive_execute(t->r_in, c->stream, 2, to_src) : dnnl_success;
    if (s == dnnl_success)
        s = dnnl_primitive_execute(t->prim, c->stream, t->n_args, args);
    if (s == dnnl_success && t->r_out)
        s = dnnl_primitive_execute(t->r_out, c->stream, 2, from_dst);
    if (s == dnnl_success)
        s = dnnl_stream_wait(c->stream);
    return s == dnnl_success ? now() - t0 : -1;
}

static void trial_free(trial *t)
{
    dnnl_primitive_t prims[] = {t->prim, t->r_in, t->r_out};
    for (int i = 0; i < 3; i++)
        if (prims[i])
            dnnl_primitive_destroy(prims[i]);
    for (int k = 0; k < 6; k++)
        if (t->mem[k])
            dnnl_memory_destroy(t->mem[k]);
}

/* Times cand[0..n) in turns, so that a busy spell of the machine falls on
 * all of them: a warm-up run each, then rounds of one run each, at least
 * 3 and until 3 ms per candidate have passed (10 at most).  secs[i]
 * receives candidate i's fastest run, -1 where it cannot run. */
static void time_candidates(xf_dn_ctx *c, dnnl_primitive_desc_t const *cand, int n, const dnnl_memory_desc_t *src_have,
                            const dnnl_memory_desc_t *dst_have, double *secs)
{
    trial t[XF_DN_MAX_CANDIDATES];
    double spent = 0;
    for (int i = 0; i < n; i++)
        trial_setup(c, cand[i], src_have, dst_have, &t[i]);
    for (int round = 0; round <= 10 && (round <= 3 || spent < 3e-3 * n); round++)
        for (int i = 0; i < n; i++) {
            if (!t[i].ok)
                continue;
            double s = trial_run(c, &t[i]);
            if (s < 0) {
                t[i].ok = false;
                t[i].best = -1;
            } else if (round > 0) { /* round 0 warms up */
                spent += s;
                t[i].best = t[i].best < 0 || s < t[i].best ? s : t[i].best;
            }
        }
    for (int i = 0; i < n; i++) {
        secs[i] = t[i].ok ? t[i].best : -1;
        trial_free(&t[i]);
    }
}

int xf_dn_fastest(xf_dn_ctx *c, dnnl_primitive_desc_t const *cand, int n, const dnnl_memory_desc_t *src_have,
                  const dnnl_memory_desc_t *dst_have, char *note)
{
    char *key = choice_key(cand, n, src_have, dst_have);
    char *path = key ? kernel_cache_path() : NULL;
    if (key) {
        pthread_mutex_lock(&choices_lock);
        /* a process follows its file: another file (XF_KERNEL_CACHE
         * changed) replaces what the table held */
        if (path && (!loaded_path || strcmp(path, loaded_path) != 0)) {
            for (int i = 0; i < n_choices; i++)
                free(choices[i].key);
            n_choices = 0;
            load_file(path);
            free(loaded_path);
            loaded_path = strdup(path);
        }
        const timed_choice *known = find(key);
        if (known && known->best < n) {
            int best = known->best;
            memcpy(note, known->note, XF_DN_TIMING_NOTE);
            pthread_mutex_unlock(&choices_lock);
            free(key);
            free(path);
            return best;
        }
        pthread_mutex_unlock(&choices_lock);
    }
    double secs[XF_DN_MAX_CANDIDATES];
    bool moved[XF_DN_MAX_CANDIDATES];
    int best = 0;
    n = n < XF_DN_MAX_CANDIDATES ? n : XF_DN_MAX_CANDIDATES;
    time_candidates(c, cand, n, src_have, dst_have, secs);
    for (int i = 0; i < n; i++) {
        moved[i] = !dnnl_memory_desc_equal(pd_md(cand[i], dnnl_query_src_md, 0), src_have) ||
                   !dnnl_memory_desc_equal(pd_md(cand[i], dnnl_query_dst_md, 0), dst_have);
        /* a later candidate must be 3% faster, so that near ties keep the
         * earlier (the layout plan's own), and 10% where it adds reorders
         * the first does not have: alone, their data stays in cache from
         * one run to the next; in the graph it may not (SqueezeNet's 1x1
         * convolutions of 13x13 maps timed 15% faster with reorders and
         * ran 20% slower) */
        double margin = moved[i] && !moved[best] ? 0.90 : 0.97;
        if (secs[i] >= 0 && (secs[best] < 0 || secs[i] < margin * secs[best]))
            best = i;
    }
    /* each kernel by its name less the instruction set the chosen one's
     * name gives */
    size_t at = 0;
    put(note, XF_DN_TIMING_NOTE, &at, "; timed:");
    for (int i = 0; i < n; i++) {
        const char *impl = pd_impl(cand[i]);
        put(note, XF_DN_TIMING_NOTE, &at, "%s %.*s%s ", i ? "," : "", (int)strcspn(impl, ":"), impl,
            moved[i] ? " with reorders" : "");
        if (secs[i] < 0)
            put(note, XF_DN_TIMING_NOTE, &at, "failed");
        else
            put(note, XF_DN_TIMING_NOTE, &at, "%.3f ms", 1e3 * secs[i]);
    }
    if (key) {
        pthread_mutex_lock(&choices_lock);
        if (!find(key) && remember(key, best, note) && path)
            append_file(path, key, best, note);
        pthread_mutex_unlock(&choices_lock);
    }
    free(key);
    free(path);
    return best;
}
