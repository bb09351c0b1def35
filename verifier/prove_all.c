/* Proving many rules at once: rules handed out in fixed blocks of
 * PROVE_BLOCK, each block proved in order by a fresh verifier (Z3 context
 * and solver).  Z3's search depends on what its context has seen, so a
 * rule's result depends on the rules before it in its block and on nothing
 * else: the same for any thread count.  Blocks are small so that a slow
 * proof does not hold up a whole share. */
#include "xf_verify.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

typedef struct prove_job {
    const xf_verify_options *opt;
    xf_rule *const *rules;
    int n;
    xf_proof_result *results;
    atomic_int next, done;
    atomic_bool failed;
    xf_error err; /* the first verifier that could not be created */
    pthread_mutex_t err_lock;
} prove_job;

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#define PROVE_BLOCK 32

static void *prove_worker(void *arg)
{
    prove_job *job = arg;
    int n_blocks = (job->n + PROVE_BLOCK - 1) / PROVE_BLOCK;
    for (int b; !atomic_load(&job->failed) && (b = atomic_fetch_add(&job->next, 1)) < n_blocks;) {
        xf_verifier *v = NULL;
        xf_error err = {0};
        if (xf_verifier_create(job->opt, &v, &err) != XF_OK) {
            pthread_mutex_lock(&job->err_lock);
            if (!atomic_load(&job->failed))
                job->err = err;
            atomic_store(&job->failed, true);
            pthread_mutex_unlock(&job->err_lock);
            return NULL;
        }
        int end = (b + 1) * PROVE_BLOCK < job->n ? (b + 1) * PROVE_BLOCK : job->n;
        for (int i = b * PROVE_BLOCK; i < end && !atomic_load(&job->failed); i++) {
            xf_proof_result *r = &job->results[i];
            double t0 = seconds_now();
            r->why[0] = '\0';
            r->proof = xf_verifier_prove(v, job->rules[i], r->why, sizeof r->why);
            r->seconds = seconds_now() - t0;
            atomic_fetch_add(&job->done, 1);
        }
        xf_verifier_free(v);
    }
    return NULL;
}

xf_status xf_verify_rules(const xf_verify_options *opt, xf_rule *const *rules, int n, int threads,
                          xf_proof_result *results, xf_verify_progress_fn progress, void *user, xf_error *err)
{
    if (threads <= 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        threads = cores > 0 ? (int)cores : 1;
    }
    int n_blocks = (n + PROVE_BLOCK - 1) / PROVE_BLOCK;
    if (threads > n_blocks)
        threads = n_blocks > 0 ? n_blocks : 1;
    prove_job job = {.opt = opt, .rules = rules, .n = n, .results = results};
    atomic_init(&job.next, 0);
    atomic_init(&job.done, 0);
    atomic_init(&job.failed, false);
    pthread_mutex_init(&job.err_lock, NULL);
    pthread_t *tids = calloc((size_t)threads, sizeof *tids);
    if (!tids) {
        pthread_mutex_destroy(&job.err_lock);
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    }
    int started = 0;
    xf_status st = XF_OK;
    for (; started < threads; started++)
        if (pthread_create(&tids[started], NULL, prove_worker, &job) != 0) {
            st = xf_error_set(err, XF_ERR_NOMEM, "cannot start prover thread %d", started);
            atomic_store(&job.failed, true);
            break;
        }
    /* Progress from this thread while the workers run. */
    while (progress && st == XF_OK && !atomic_load(&job.failed) && atomic_load(&job.done) < n) {
        progress(atomic_load(&job.done), n, user);
        nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
    }
    for (int t = 0; t < started; t++)
        pthread_join(tids[t], NULL);
    if (st == XF_OK && atomic_load(&job.failed)) {
        st = job.err.status != XF_OK ? job.err.status : XF_ERR_INVALID;
        xf_error_set(err, st, "%s", job.err.msg);
    }
    if (st == XF_OK && progress)
        progress(n, n, user);
    free(tids);
    pthread_mutex_destroy(&job.err_lock);
    return st;
}
