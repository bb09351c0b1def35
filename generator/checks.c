/* The checks a candidate rule passes after grouping, before the verifier:
 * its sides evaluated again exactly under fresh models and inputs, then on
 * cpu_ref with random floats. */
#include "gen_internal.h"
#include "xf_runtime.h"

#include <stdio.h>

/* ------------------------------------------------------------ exact recheck */

/* Rounds of further exact evaluation of a candidate's sides, each of
 * GEN_TRIALS trials with fresh inputs and fresh models (random orders, Relu
 * floors, Sigmoid and Tanh functions). */
#define RECHECK_ROUNDS 4

/* Whether both sides of r still agree, output for output, in every
 * recheck round.  Grouping uses a fingerprint of GEN_TRIALS trials, which
 * billions of graphs must each pay for; the few candidates it pairs are
 * worth RECHECK_ROUNDS times more.  It matters where the model's
 * accidents are likely: Relu outputs of 16 elements (a stride-2
 * convolution's 2x2 images) that fall all below the floor in every trial,
 * or max pooling windows all below it that the outputs read, hide a
 * difference with a probability small for one graph but not for hundreds
 * of millions.  A rule that cannot be evaluated here is left to the float
 * check. */
bool gen_exact_recheck(const xf_rule *r, uint64_t seed)
{
    uint64_t fp[2 * GEN_MAX_SLOTS], fq[2 * GEN_MAX_SLOTS];
    int n = r->pattern->n_outputs;
    if (n > 2 * GEN_MAX_SLOTS || r->replacement->n_outputs != n)
        return true;
    for (int round = 1; round <= RECHECK_ROUNDS; round++) {
        uint64_t s = gen_mix64(seed ^ (0x5851f42d4c957f2dull * (uint64_t)round));
        xf_error e;
        if (gen_fingerprint_graph(r->pattern, s, GEN_TRIALS * round, fp, &e) != XF_OK ||
            gen_fingerprint_graph(r->replacement, s, GEN_TRIALS * round, fq, &e) != XF_OK)
            return true;
        for (int j = 0; j < n; j++)
            if (fp[j] != fq[j])
                return false;
    }
    return true;
}

/* ------------------------------------------------------------ numerical check */

/* Runs both sides on cpu_ref with the same random floats: 1 when every
 * output agrees within float rounding, 0 when one differs, -1 (why says
 * how) when a side cannot run. */
int gen_sides_agree(const xf_rule *r, uint64_t seed, double *max_diff, char *why, size_t why_len)
{
    const xf_graph *p = r->pattern;
    int n = p->n_inputs;
    xf_tensor *in[GEN_MAX_POOL] = {0};
    xf_tensor *out_p[2 * GEN_MAX_SLOTS] = {0}, *out_q[2 * GEN_MAX_SLOTS] = {0};
    xf_session *sp = NULL, *sq = NULL;
    xf_error e = {.msg = "out of memory"};
    int ok = -1;
    for (int k = 0; k < n; k++)
        if (!(in[k] = xf_tensor_random(XF_DT_FLOAT, &p->values[p->inputs[k]].shape, seed + 7919 * (uint64_t)k)))
            goto done;
    if (xf_session_create(r->pattern, XF_GENERATOR_OPSET, "cpu_ref", NULL, &sp, &e) != XF_OK ||
        xf_session_create(r->replacement, XF_GENERATOR_OPSET, "cpu_ref", NULL, &sq, &e) != XF_OK ||
        xf_session_run(sp, in, out_p, &e) != XF_OK || xf_session_run(sq, in, out_q, &e) != XF_OK)
        goto done;
    ok = 1;
    *max_diff = 0;
    for (int j = 0; j < p->n_outputs && ok; j++) {
        double diff = 0;
        bool same = false;
        if (xf_tensor_compare(out_p[j], out_q[j], 1e-4, 1e-3, &diff, NULL, &same, &e) != XF_OK || !same)
            ok = 0;
        if (diff > *max_diff)
            *max_diff = diff;
    }
done:
    if (ok < 0)
        snprintf(why, why_len, "%s", e.msg);
    for (int k = 0; k < n; k++)
        xf_tensor_release(in[k]);
    for (int j = 0; j < 2 * GEN_MAX_SLOTS; j++) {
        xf_tensor_release(out_p[j]);
        xf_tensor_release(out_q[j]);
    }
    xf_session_free(sp);
    xf_session_free(sq);
    return ok;
}
