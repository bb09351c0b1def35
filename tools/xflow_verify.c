/* xflow-verify: re-proves every rule of a substitution library with Z3
 * (optionally also checking it numerically on cpu_ref), or validates the
 * verifier's own axioms on small concrete shapes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "xf_verify.h"

static void usage(void)
{
    printf("usage: xflow-verify [options] LIBRARY\n"
           "       xflow-verify --axioms [options]\n"
           "\n"
           "Proves every rule of LIBRARY (a substitution library file) against the\n"
           "operator specifications with Z3 and prints the rules that are not proved,\n"
           "with why, and a summary.  Exits non-zero when any rule is not proved.\n"
           "\n"
           "  --axioms          validate every axiom on concrete shapes (dims 1-3,\n"
           "                    kernels 1 and 3) instead; prints each result and time\n"
           "  --timeout-ms N    per solver query (default 2000; --axioms: 60000)\n"
           "  --threads N       provers working in parallel (default: every core)\n"
           "  --numeric         also run each rule on cpu_ref with random inputs over\n"
           "                    several shapes and compare both sides\n"
           "  --shapes N        shapes per rule for --numeric (default 4)\n"
           "  -q                only errors and rejected rules\n"
           "  -v                one line per rule (per axiom: its meaning too)\n"
           "  -h, --help        this help\n");
}

typedef struct axiom_run {
    int failed;
    double total;
} axiom_run;

static void axiom_progress(const xf_axiom_result *r, void *user)
{
    axiom_run *run = user;
    run->total += r->seconds;
    bool ok = r->result == XF_PROOF_PROVED;
    if (!ok)
        run->failed++;
    if (!ok || xf_cli_verbosity() >= 1)
        printf("%-8s %-26s %2d instances %7.2f s%s%s\n", ok ? "valid" : xf_proof_name(r->result),
               xf_axiom_name(r->axiom), r->n_instances, r->seconds, r->detail[0] ? "  " : "", r->detail);
    if (xf_cli_verbosity() >= 2)
        printf("         %s\n", xf_axiom_doc(r->axiom));
    fflush(stdout);
}

static int check_axioms(unsigned timeout_ms)
{
    int n = xf_axiom_count();
    xf_axiom_result *res = calloc((size_t)n, sizeof *res);
    if (!res)
        return xf_cli_error("out of memory");
    axiom_run run = {0};
    xf_error err;
    double t0 = xf_cli_now();
    xf_status st = xf_verifier_check_axioms(0, n, 0, timeout_ms, res, axiom_progress, &run, &err);
    free(res);
    if (st != XF_OK)
        return xf_cli_error("%s", err.msg);
    printf("axioms: %d valid, %d not validated, %.1f s\n", n - run.failed, run.failed, xf_cli_now() - t0);
    return run.failed ? 1 : 0;
}

static void prove_progress(int done, int total, void *user)
{
    (void)user;
    fprintf(stderr, "\r%d/%d rules proved", done, total);
}

static int verify_library(const char *path, unsigned timeout_ms, int threads, bool numeric, int shapes)
{
    xf_library *lib;
    xf_error err;
    if (xf_library_load(path, &lib, &err) != XF_OK)
        return xf_cli_error("%s", err.msg);
    xf_verify_options opt = {.timeout_ms = timeout_ms};
    int count[XF_PROOF_UNSUPPORTED + 1] = {0};
    double secs[XF_PROOF_UNSUPPORTED + 1] = {0}, slowest = 0, max_diff = 0;
    int n_numeric = 0, numeric_failed = 0;
    const char *slowest_name = "";
    bool tty = isatty(STDERR_FILENO) && xf_cli_verbosity() >= 1;
    double t0 = xf_cli_now();
    xf_proof_result *res = calloc((size_t)(lib->n_rules ? lib->n_rules : 1), sizeof *res);
    if (!res) {
        xf_library_free(lib);
        return xf_cli_error("out of memory");
    }
    if (xf_verify_rules(&opt, lib->rules, lib->n_rules, threads, res, tty ? prove_progress : NULL, NULL, &err) !=
        XF_OK) {
        free(res);
        xf_library_free(lib);
        return xf_cli_error("%s", err.msg);
    }
    for (int i = 0; i < lib->n_rules; i++) {
        const xf_rule *r = lib->rules[i];
        char why[512];
        xf_proof p = res[i].proof;
        double dt = res[i].seconds;
        count[p]++;
        secs[p] += dt;
        if (dt > slowest) {
            slowest = dt;
            slowest_name = r->name;
        }
        if (tty && numeric)
            fprintf(stderr, "\r%d/%d rules checked numerically", i + 1, lib->n_rules);
        if (p != XF_PROOF_PROVED)
            printf("%s%s %s: %s\n", tty ? "\r" : "", r->name, xf_proof_name(p), res[i].why);
        else if (xf_cli_verbosity() >= 2)
            printf("%s%s proved in %.3f s\n", tty ? "\r" : "", r->name, dt);
        if (numeric) {
            double diff = 0;
            xf_status st = xf_verify_numeric(r, shapes, 1 + (uint64_t)i, &diff, why, sizeof why);
            if (diff > max_diff)
                max_diff = diff;
            if (st == XF_OK) {
                n_numeric++;
            } else {
                numeric_failed += st != XF_ERR_UNSUPPORTED;
                printf("%s%s numeric %s: %s\n", tty ? "\r" : "", r->name,
                       st == XF_ERR_UNSUPPORTED ? "not run" : "mismatch", why);
            }
        }
    }
    if (tty)
        fprintf(stderr, "\r%*s\r", 40, "");
    double total = xf_cli_now() - t0;
    if (xf_cli_verbosity() >= 1) {
        printf("%s: %d rules, %s\n", path, lib->n_rules, lib->generator ? lib->generator : "unknown generator");
        printf("  %-12s %6s %9s\n", "result", "rules", "seconds");
        for (int p = 0; p <= XF_PROOF_UNSUPPORTED; p++)
            printf("  %-12s %6d %9.2f\n", xf_proof_name((xf_proof)p), count[p], secs[p]);
        printf("  %-12s %6d %9.2f\n", "total", lib->n_rules, total);
        if (lib->n_rules)
            printf("  slowest rule %s: %.3f s\n", slowest_name, slowest);
        if (numeric)
            printf("  numeric: %d rules matched, %d mismatched, max |diff| %.3g\n", n_numeric, numeric_failed,
                   max_diff);
    }
    printf("proved %d refuted %d unknown %d unsupported %d\n", count[XF_PROOF_PROVED], count[XF_PROOF_REFUTED],
           count[XF_PROOF_UNKNOWN], count[XF_PROOF_UNSUPPORTED]);
    int failed = lib->n_rules - count[XF_PROOF_PROVED] + numeric_failed;
    free(res);
    xf_library_free(lib);
    return failed ? 1 : 0;
}

int main(int argc, char **argv)
{
    xf_cli_init("xflow-verify", 1); /* usage errors name the program */
    int verbosity = 1;
    bool axioms = false, numeric = false;
    long timeout_ms = 0, shapes = 4, threads = 0;
    const char *path = NULL;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "-q") == 0)
            verbosity = 0;
        else if (strcmp(argv[i], "-v") == 0)
            verbosity = 2;
    xf_cli_init("xflow-verify", verbosity);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage();
            return 0;
        } else if (strcmp(a, "-q") == 0 || strcmp(a, "-v") == 0) {
            continue;
        } else if (strcmp(a, "--axioms") == 0) {
            axioms = true;
        } else if (strcmp(a, "--numeric") == 0) {
            numeric = true;
        } else if (strcmp(a, "--timeout-ms") == 0 || strcmp(a, "--shapes") == 0 || strcmp(a, "--threads") == 0) {
            if (i + 1 >= argc)
                return xf_cli_usage_error("%s needs a value", a);
            long *dst = strcmp(a, "--shapes") == 0 ? &shapes : strcmp(a, "--threads") == 0 ? &threads : &timeout_ms;
            if (!xf_cli_parse_int(a, argv[++i], 1, strcmp(a, "--threads") == 0 ? 256 : 100000000, dst))
                return 2;
        } else if (a[0] == '-' && a[1]) {
            return xf_cli_usage_error("unknown option '%s'", a);
        } else if (path) {
            return xf_cli_usage_error("more than one library given ('%s', '%s')", path, a);
        } else {
            path = a;
        }
    }
    if (axioms) {
        if (path)
            return xf_cli_usage_error("--axioms takes no library");
        return check_axioms((unsigned)timeout_ms);
    }
    if (!path)
        return xf_cli_usage_error("no library given");
    return verify_library(path, (unsigned)timeout_ms, (int)threads, numeric, (int)shapes);
}
