/* xflow-difftest: the long differential runs.
 *   xflow-difftest XFLOWC WORKDIR [COUNT] [SEED] [OPS]
 *     random graphs through `xflowc --check` (the optimizer)
 *   xflow-difftest --backend NAME WORKDIR [COUNT] [SEED] [OPS]
 *     random graphs on backend NAME against cpu_ref */
#include "random_graph_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    const char *backend = argc > 2 && !strcmp(argv[1], "--backend") ? argv[2] : NULL;
    if (backend) { /* the rest as for xflowc, the backend in its place */
        argv += 1;
        argc -= 1;
    }
    if (argc < 3) {
        fprintf(stderr, "usage: xflow-difftest XFLOWC WORKDIR [COUNT] [SEED] [OPS]\n"
                        "       xflow-difftest --backend NAME WORKDIR [COUNT] [SEED] [OPS]\n");
        return 2;
    }
    /* a folder it cannot write to would make every graph count as a mismatch */
    struct stat st;
    if (stat(argv[2], &st) != 0 || !S_ISDIR(st.st_mode) || access(argv[2], W_OK) != 0) {
        fprintf(stderr, "xflow-difftest: %s: not a folder this user can write to (create it first)\n", argv[2]);
        return 2;
    }
    int count = argc > 3 ? atoi(argv[3]) : 10000;
    uint64_t seed = argc > 4 ? strtoull(argv[4], NULL, 10) : 1;
    int ops = argc > 5 ? atoi(argv[5]) : 10;
    int bad = backend ? xf_backend_difftest_run(backend, seed, count, ops, argv[2], stdout)
                      : xf_difftest_run(argv[1], seed, count, ops, argv[2], stdout);
    printf("difftest: %d random graphs (seeds %llu..%llu, ~%d ops) %s: %d mismatches\n", count,
           (unsigned long long)seed, (unsigned long long)(seed + (uint64_t)count - 1), ops,
           backend ? (strcmp(backend, "cpu") ? "on that backend against cpu_ref" : "on cpu against cpu_ref")
                   : "through xflowc --check",
           bad);
    return bad ? 1 : 0;
}
