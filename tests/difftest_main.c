/* xflow-difftest: the long differential run of the optimizer.
 *   xflow-difftest XFLOWC WORKDIR [COUNT] [SEED] [OPS] */
#include "random_graph_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: xflow-difftest XFLOWC WORKDIR [COUNT] [SEED] [OPS]\n");
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
    int bad = xf_difftest_run(argv[1], seed, count, ops, argv[2], stdout);
    printf("difftest: %d random graphs (seeds %llu..%llu, ~%d ops) through xflowc --check: %d mismatches\n", count,
           (unsigned long long)seed, (unsigned long long)(seed + (uint64_t)count - 1), ops, bad);
    return bad ? 1 : 0;
}
