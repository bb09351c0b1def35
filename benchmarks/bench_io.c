/* Import + export of an ONNX model: wall time of each and the process's
 * peak resident memory, against the file's size.
 *
 *   bench-io MODEL.onnx [--repeat N]
 *
 * Prints one line per phase and a final summary line. */
#include "xf_proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double peak_rss_mb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0; /* ru_maxrss is in KiB on Linux */
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        fprintf(argc < 2 ? stderr : stdout, "usage: bench-io MODEL.onnx [--repeat N]\n");
        return argc < 2 ? 2 : 0;
    }
    int repeat = argc >= 4 && !strcmp(argv[2], "--repeat") ? atoi(argv[3]) : 3;
    if (repeat < 1)
        repeat = 1;
    struct stat st;
    if (stat(argv[1], &st) != 0) {
        perror(argv[1]);
        return 1;
    }
    double file_mb = (double)st.st_size / (1024.0 * 1024.0);
    char out[4200];
    snprintf(out, sizeof out, "%s.bench-io.%d.onnx", argv[1], (int)getpid());
    double best_load = 1e30, best_save = 1e30;
    for (int r = 0; r < repeat; r++) {
        xf_error err;
        xf_model *m;
        double t0 = now();
        if (xf_model_load(argv[1], NULL, &m, &err) != XF_OK) {
            fprintf(stderr, "bench-io: %s\n", err.msg);
            return 1;
        }
        double t1 = now();
        if (xf_model_save(m, out, NULL, &err) != XF_OK) {
            fprintf(stderr, "bench-io: %s\n", err.msg);
            xf_model_free(m);
            return 1;
        }
        double t2 = now();
        xf_model_free(m);
        unlink(out);
        if (t1 - t0 < best_load)
            best_load = t1 - t0;
        if (t2 - t1 < best_save)
            best_save = t2 - t1;
    }
    double rss = peak_rss_mb();
    printf("file            %.1f MiB\n", file_mb);
    printf("import          %.3f s (best of %d)\n", best_load, repeat);
    printf("export          %.3f s (best of %d)\n", best_save, repeat);
    printf("import+export   %.3f s\n", best_load + best_save);
    printf("peak RSS        %.1f MiB = %.2f x the file\n", rss, rss / file_mb);
    return 0;
}
