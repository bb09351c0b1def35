/* xflow-gen: regenerate the substitution library (enumerate, fingerprint,
 * prune, check numerically, prove with the verifier, write). */
#include "cli.h"
#include "xf_generator.h"
#include "xf_verify.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "usage: xflow-gen [-o FILE] [--max-ops N] [--seed S] [--threads N] [--no-verify]\n"
    "                 [--timeout-ms MS] [--dropped FILE] [--check] [-q|-v]\n"
    "\n"
    "Enumerates every graph of up to N ops (default 3) over the generator's op set,\n"
    "groups them by exact fingerprint, prunes and checks the candidates, proves\n"
    "each with the verifier and writes the proved rules to FILE (default: the\n"
    "library in the source tree, " XF_DEFAULT_RULES ").\n"
    "\n"
    "  --no-verify   keep unproved candidates (written as 'proved no'; xflowc\n"
    "                only applies proved rules)\n"
    "  --check       write nothing; exit 0 when FILE equals what would be\n"
    "                generated, 1 when it is stale\n"
    "  --threads N   worker threads for every stage: enumeration, rules, proofs\n"
    "                (default: every core); the output is the same for any N\n"
    "  --dropped FILE  also write the candidates that were dropped after grouping,\n"
    "                as rules for inspection: sides that differ in further exact\n"
    "                trials or on floats (f0000...) and candidates the verifier\n"
    "                did not prove (u0000...), each with why in its provenance\n";

static void progress(const char *stage, double fraction, void *user)
{
    (void)user;
    if (xf_cli_verbosity() >= 1 && isatty(2))
        fprintf(stderr, "\r%-10s %5.1f%%", stage, 100.0 * fraction);
}

static void end_progress(void)
{
    if (xf_cli_verbosity() >= 1 && isatty(2))
        fprintf(stderr, "\r%30s\r", "");
}

static void verify_progress(int done, int total, void *user)
{
    progress("verify", total ? (double)done / total : 1.0, user);
}

/* Moves an unproved rule into dropped (when not NULL) with why; frees it
 * otherwise. */
static void drop_unproved(xf_library *dropped, xf_rule *r, xf_proof p, const char *why)
{
    if (!dropped) {
        xf_rule_free(r);
        return;
    }
    char reason[640];
    snprintf(reason, sizeof reason, "not proved (%s: %s)", xf_proof_name(p), why);
    xf_error err;
    if (xf_library_add_left_out(dropped, r, 'u', reason, &err) != XF_OK)
        xf_cli_error("%s", err.msg);
}

/* Proves every rule; keeps the proved ones, renamed r0000... in order; the
 * others go to dropped when it is not NULL. */
static int verify_library(xf_library *lib, xf_library *dropped, long timeout_ms, int threads, int *n_refuted,
                          int *n_unknown, double *seconds)
{
    xf_verify_options vo = {.timeout_ms = (unsigned)timeout_ms};
    xf_error err;
    double t0 = xf_cli_now();
    xf_proof_result *res = calloc((size_t)(lib->n_rules ? lib->n_rules : 1), sizeof *res);
    if (!res)
        return xf_cli_error("out of memory");
    if (xf_verify_rules(&vo, lib->rules, lib->n_rules, threads, res, verify_progress, NULL, &err) != XF_OK) {
        free(res);
        end_progress();
        return xf_cli_error("%s", err.msg);
    }
    end_progress();
    int kept = 0;
    for (int i = 0; i < lib->n_rules; i++) {
        xf_rule *r = lib->rules[i];
        xf_proof p = res[i].proof;
        if (p == XF_PROOF_PROVED) {
            char name[32];
            snprintf(name, sizeof name, "r%04d", kept);
            char *renamed = strdup(name);
            if (renamed) {
                free(r->name);
                r->name = renamed;
            }
            r->proved = true;
            lib->rules[kept++] = r;
            continue;
        }
        if (p == XF_PROOF_REFUTED)
            (*n_refuted)++;
        else
            (*n_unknown)++;
        if (xf_cli_verbosity() >= 2)
            fprintf(stderr, "xflow-gen: %s not proved (%s): %s\n", r->name, xf_proof_name(p), res[i].why);
        drop_unproved(dropped, r, p, res[i].why);
    }
    lib->n_rules = kept;
    free(res);
    *seconds = xf_cli_now() - t0;
    return 0;
}

static int check_file(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return xf_cli_error("%s: cannot open: the library is missing; run xflow-gen to create it", path);
    bool same = true;
    size_t pos = 0;
    char buf[65536];
    size_t got;
    while (same && (got = fread(buf, 1, sizeof buf, f)) > 0) {
        same = pos + got <= len && memcmp(buf, text + pos, got) == 0;
        pos += got;
    }
    fclose(f);
    if (!same || pos != len) {
        xf_cli_error("%s is stale: it differs from what xflow-gen generates now; run xflow-gen to update it", path);
        return 1;
    }
    xf_cli_info("%s is current\n", path);
    return 0;
}

int main(int argc, char **argv)
{
    const char *out = XF_DEFAULT_RULES, *dropped_path = NULL;
    long max_ops = 3, threads = 0, timeout_ms = 0;
    uint64_t seed = 1;
    bool verify = true, check = false;
    int verbosity = 1;
    xf_cli_init("xflow-gen", verbosity); /* usage errors name the program */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage, stdout);
            return 0;
        } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            verbosity = 0;
        } else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
            verbosity = 2;
        } else if (!strcmp(a, "--no-verify")) {
            verify = false;
        } else if (!strcmp(a, "--check")) {
            check = true;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (i + 1 >= argc)
                return xf_cli_usage_error("%s needs a file name", a);
            out = argv[++i];
        } else if (!strcmp(a, "--max-ops")) {
            if (!xf_cli_parse_int(a, i + 1 < argc ? argv[i + 1] : NULL, 1, 4, &max_ops))
                return 2;
            i++;
        } else if (!strcmp(a, "--threads")) {
            if (!xf_cli_parse_int(a, i + 1 < argc ? argv[i + 1] : NULL, 1, 256, &threads))
                return 2;
            i++;
        } else if (!strcmp(a, "--timeout-ms")) {
            if (!xf_cli_parse_int(a, i + 1 < argc ? argv[i + 1] : NULL, 1, 600000, &timeout_ms))
                return 2;
            i++;
        } else if (!strcmp(a, "--dropped")) {
            if (i + 1 >= argc)
                return xf_cli_usage_error("--dropped needs a file name");
            dropped_path = argv[++i];
        } else if (!strcmp(a, "--seed")) {
            char *end;
            const char *s = i + 1 < argc ? argv[i + 1] : "";
            unsigned long long v = strtoull(s, &end, 10);
            if (!*s || *end || s[0] == '-')
                return xf_cli_usage_error("--seed needs a non-negative integer, not '%s'", s);
            seed = v;
            i++;
        } else {
            return xf_cli_usage_error("unknown argument '%s'", a);
        }
    }
    xf_cli_init("xflow-gen", verbosity);

    xf_library *dropped = NULL;
    if (dropped_path && !(dropped = xf_library_create()))
        return xf_cli_error("out of memory");
    xf_gen_options opt = {
        .max_ops = (int)max_ops, .seed = seed, .threads = (int)threads, .progress = progress, .dropped = dropped};
    xf_gen_stats st;
    xf_library *lib = NULL;
    xf_error err;
    if (xf_generate(&opt, &lib, &st, &err) != XF_OK) {
        end_progress();
        xf_library_free(dropped);
        return xf_cli_error("%s", err.msg);
    }
    end_progress();
    int n_candidates = lib->n_rules, refuted = 0, unknown = 0;
    double verify_s = 0;
    if (verify) {
        int rc = verify_library(lib, dropped, timeout_ms, (int)threads, &refuted, &unknown, &verify_s);
        if (rc) {
            xf_library_free(lib);
            xf_library_free(dropped);
            return rc;
        }
    }
    xf_cli_info("graphs enumerated    %lld (max ops %d, seed %llu)\n", (long long)st.graphs, (int)max_ops,
                (unsigned long long)seed);
    xf_cli_info("  with renamings     %lld (graphs equal up to renaming inputs counted apart)\n",
                (long long)st.graphs_renamed);
    xf_cli_info("distinct fingerprints %lld\n", (long long)st.fingerprints);
    xf_cli_info("shared fingerprints  %lld groups\n", (long long)st.groups);
    xf_cli_info("candidate pairs      %lld\n", (long long)st.candidates);
    xf_cli_info("  common subgraph    -%lld\n", (long long)st.pruned_common);
    xf_cli_info("  implied by smaller -%lld\n", (long long)st.pruned_implied);
    xf_cli_info("  constant misplaced -%lld\n", (long long)st.pruned_constant);
    xf_cli_info("  same up to renaming -%lld\n", (long long)st.pruned_renaming);
    xf_cli_info("  not generalizable  -%lld\n", (long long)st.unexpressible);
    xf_cli_info("  exact recheck      -%lld (fingerprint collisions: sides differ in further exact trials)\n",
                (long long)st.collisions);
    xf_cli_info("  float mismatch     -%lld (fingerprint false positives)\n", (long long)st.false_positives);
    xf_cli_info("candidate rules      %d (%lld with generalized split sizes, %lld also written from the "
                "smaller side)\n",
                n_candidates, (long long)st.generalized, (long long)st.reversed);
    if (verify)
        xf_cli_info("proved rules         %d (refuted %d, unknown or unsupported %d)\n", lib->n_rules, refuted,
                    unknown);
    else
        xf_cli_info("proved rules         not verified (--no-verify): written as 'proved no'\n");
    xf_cli_info("time                 enumerate %.2f s, rules %.2f s, verify %.2f s, total %.2f s\n",
                st.seconds_enumerate, st.seconds_rules, verify_s, st.seconds_total + verify_s);
    xf_cli_info("graph records        %.1f MiB\n", (double)st.peak_records_bytes / (1024.0 * 1024.0));

    int rc = 0;
    if (check) {
        char *text = NULL;
        size_t len = 0;
        if (xf_library_format(lib, &text, &len, &err) != XF_OK)
            rc = xf_cli_error("%s", err.msg);
        else
            rc = check_file(out, text, len);
        free(text);
    } else if (xf_library_save(lib, out, &err) != XF_OK) {
        rc = xf_cli_error("%s", err.msg);
    } else {
        xf_cli_info("wrote %d rules to %s\n", lib->n_rules, out);
    }
    if (dropped && rc == 0) {
        dropped->generator = lib->generator ? strdup(lib->generator) : NULL;
        dropped->op_set = lib->op_set ? strdup(lib->op_set) : NULL;
        dropped->max_ops = lib->max_ops;
        dropped->seed = lib->seed;
        dropped->opset = lib->opset;
        if (xf_library_save(dropped, dropped_path, &err) != XF_OK)
            rc = xf_cli_error("%s", err.msg);
        else
            xf_cli_info("wrote %d dropped candidates to %s\n", dropped->n_rules, dropped_path);
    }
    xf_library_free(dropped);
    xf_library_free(lib);
    return rc;
}
