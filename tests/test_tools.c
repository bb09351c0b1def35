/* The command-line programs end to end: the bundled example, --check, and
 * every kind of bad input (one clear error line naming the file and the
 * problem, a non-zero exit, no output file left, the input untouched). */
#include "backend_util.h"
#include "xf_runtime.h"
#include "xf_test_util.h"

#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char fixtures[4096];

static void make_fixtures(void)
{
    const char *d = xf_test_tmpdir("tools-fixtures");
    ck_assert_ptr_nonnull(d);
    snprintf(fixtures, sizeof fixtures, "%s", d);
    char cmd[8400], *out = NULL;
    snprintf(cmd, sizeof cmd, XF_PYTHON " %s/tests/make_bad_models.py %s", XF_SOURCE_DIR, fixtures);
    int rc = xf_test_run(cmd, &out);
    ck_assert_msg(rc == 0, "fixture generation failed: %s", out ? out : "");
    free(out);
}

/* Contents of a file (malloc'd) and its size; NULL if unreadable. */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* Runs xflowc on fixture `name` expecting failure with a message naming the
 * file and containing `problem`. */
static void expect_rejected(const char *name, const char *problem)
{
    char in[4300], outp[4300], cmd[9000], *out = NULL;
    snprintf(in, sizeof in, "%s/%s", fixtures, name);
    snprintf(outp, sizeof outp, "%s/%s.out.onnx", fixtures, name);
    size_t len_before = 0, len_after = 0;
    char *before = slurp(in, &len_before);
    snprintf(cmd, sizeof cmd, "%s %s -o %s -q", xf_test_tool("xflowc"), in, outp);
    int rc = xf_test_run(cmd, &out);
    ck_assert_msg(rc != 0, "%s: xflowc exited 0", name);
    ck_assert_msg(rc != 2, "%s: treated as a usage error: %s", name, out);
    ck_assert_msg(strstr(out, in) != NULL, "%s: error does not name the file: %s", name, out);
    ck_assert_msg(strstr(out, problem) != NULL, "%s: error does not say '%s': %s", name, problem, out);
    ck_assert_msg(count_lines(out) == 1, "%s: expected one error line, got: %s", name, out);
    ck_assert_msg(!xf_test_exists(outp), "%s: output file left behind", name);
    char *after = slurp(in, &len_after);
    if (before) {
        ck_assert_ptr_nonnull(after);
        ck_assert_msg(len_before == len_after && memcmp(before, after, len_before) == 0, "%s: input modified",
                      name);
    }
    free(before);
    free(after);
    free(out);
}

START_TEST(test_missing_file) { expect_rejected("does_not_exist.onnx", "No such file"); }
END_TEST
START_TEST(test_not_protobuf) { expect_rejected("not_protobuf.onnx", "not a valid ONNX"); }
END_TEST
START_TEST(test_truncated) { expect_rejected("truncated.onnx", "not a valid ONNX"); }
END_TEST
START_TEST(test_cycle) { expect_rejected("cycle.onnx", "cycle"); }
END_TEST
START_TEST(test_undefined_input) { expect_rejected("undefined_input.onnx", "nowhere"); }
END_TEST
START_TEST(test_init_size_mismatch) { expect_rejected("init_size_mismatch.onnx", "'w'"); }
END_TEST
START_TEST(test_shape_mismatch) { expect_rejected("shape_mismatch.onnx", "MatMul"); }
END_TEST

START_TEST(test_unwritable_output)
{
    char in[4300], cmd[9000], *out = NULL;
    snprintf(in, sizeof in, "%s/good.onnx", fixtures);
    const char *outp = "/proc/xflow-cannot-write-here/out.onnx";
    snprintf(cmd, sizeof cmd, "%s %s -o %s -q", xf_test_tool("xflowc"), in, outp);
    int rc = xf_test_run(cmd, &out);
    ck_assert_int_ne(rc, 0);
    ck_assert_msg(strstr(out, outp) != NULL, "error does not name the output path: %s", out);
    ck_assert_msg(count_lines(out) == 1, "expected one error line, got: %s", out);
    free(out);
}
END_TEST

START_TEST(test_output_over_input_refused)
{
    char in[4300], cmd[9000], *out = NULL;
    snprintf(in, sizeof in, "%s/good.onnx", fixtures);
    snprintf(cmd, sizeof cmd, "%s %s -o %s", xf_test_tool("xflowc"), in, in);
    ck_assert_int_ne(xf_test_run(cmd, &out), 0);
    ck_assert_msg(strstr(out, "overwrite the input") != NULL, "%s", out);
    free(out);
}
END_TEST

START_TEST(test_usage_errors)
{
    char cmd[4400], *out = NULL;
    snprintf(cmd, sizeof cmd, "%s", xf_test_tool("xflowc"));
    ck_assert_int_eq(xf_test_run(cmd, &out), 2);
    ck_assert_msg(strstr(out, "--help") != NULL, "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "%s --help", xf_test_tool("xflowc"));
    ck_assert_int_eq(xf_test_run(cmd, &out), 0);
    ck_assert_msg(strstr(out, "--input-shape") != NULL, "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "%s a.onnx -o b.onnx --bogus", xf_test_tool("xflowc"));
    ck_assert_int_eq(xf_test_run(cmd, &out), 2);
    ck_assert_msg(strstr(out, "--bogus") != NULL, "%s", out);
    free(out);
}
END_TEST

/* The bundled example: --check passes, BatchNormalization is folded away,
 * and the result runs on xflow-run. */
START_TEST(test_example_check)
{
    const char *dir = xf_test_tmpdir("tools-example");
    char outp[4300], cmd[9000], *out = NULL;
    snprintf(outp, sizeof outp, "%s/opt.onnx", dir);
    snprintf(cmd, sizeof cmd, "%s %s/examples/inception_block.onnx -o %s --check", xf_test_tool("xflowc"),
             XF_SOURCE_DIR, outp);
    int rc = xf_test_run(cmd, &out);
    ck_assert_msg(rc == 0, "xflowc --check failed: %s", out);
    ck_assert_msg(strstr(out, "check: output") != NULL && strstr(out, "ok") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "MISMATCH") == NULL, "%s", out);
    ck_assert_msg(strstr(out, "BatchNormalization") != NULL && strstr(out, "-> 0") != NULL,
                  "BatchNormalization not folded: %s", out);
    ck_assert(xf_test_exists(outp));
    free(out);

    char outdir[4400];
    snprintf(outdir, sizeof outdir, "%s/outputs", dir);
    snprintf(cmd, sizeof cmd, "%s %s --iters 2 --output-dir %s", xf_test_tool("xflow-run"), outp, outdir);
    rc = xf_test_run(cmd, &out);
    ck_assert_msg(rc == 0, "xflow-run failed: %s", out);
    ck_assert_msg(strstr(out, "median") != NULL, "%s", out);
    free(out);
    char pb[4500];
    snprintf(pb, sizeof pb, "%s/output_0.pb", outdir);
    ck_assert(xf_test_exists(pb));

    /* The written output is a valid TensorProto: the block maps 1x64x28x28
     * to 1x64x28x28, so xflow-run takes it back as an input file. */
    snprintf(cmd, sizeof cmd, "%s %s --input %s", xf_test_tool("xflow-run"), outp, pb);
    rc = xf_test_run(cmd, &out);
    ck_assert_msg(rc == 0 && strstr(out, "output '"), "xflow-run --input failed: %s", out);
    free(out);
}
END_TEST

/* With a cost model of this CPU, xflowc times the graphs before and after
 * the search on the cpu backend and says which it writes; --no-measure
 * and other cost models skip that. */
START_TEST(test_measured_choice)
{
    const char *dir = xf_test_tmpdir("tools-measure");
    char outp[4300], cmd[9000], *out = NULL;
    snprintf(outp, sizeof outp, "%s/opt.onnx", dir);
    const char *extra[] = {"", "--no-measure", "--cost analytic:h100"};
    for (int i = 0; i < 3; i++) {
        snprintf(cmd, sizeof cmd, "%s %s/examples/inception_block.onnx -o %s %s", xf_test_tool("xflowc"),
                 XF_SOURCE_DIR, outp, extra[i]);
        ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
        bool measured = strstr(out, "measured on cpu: ") != NULL;
        if (i == 0 && xf_backend_find("cpu"))
            ck_assert_msg(measured && strstr(out, "ms before the search") && strstr(out, "ms after"), "%s", out);
        else
            ck_assert_msg(!measured, "%s", out);
        free(out);
    }
}
END_TEST

/* xflow-run --profile prints the slowest nodes and the time per op type. */
START_TEST(test_run_profile)
{
    char cmd[9000], *out = NULL;
    snprintf(cmd, sizeof cmd, "%s %s/examples/inception_block.onnx --profile 3 --warmup 1", xf_test_tool("xflow-run"),
             XF_SOURCE_DIR);
    ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
    ck_assert_msg(strstr(out, "profile on cpu_ref: 27 nodes") && strstr(out, "(medians of 10 runs)"), "%s", out);
    const char *per_op = strstr(out, "per op type:");
    ck_assert_msg(per_op && strstr(per_op, " Conv\n") && strstr(per_op, " Relu\n"), "%s", out);
    /* the header and three node lines before the per-op table */
    int lines = 0;
    for (const char *p = strstr(out, "profile on"); p && p < per_op; p++)
        lines += *p == '\n';
    ck_assert_msg(lines == 4, "%d lines: %s", lines, out);
    free(out);
    /* on cpu, each node line names how the backend runs it, none on
     * oneDNN's slow reference implementation */
    if (xf_backend_find("cpu")) {
        snprintf(cmd, sizeof cmd, "%s %s/examples/inception_block.onnx --backend cpu --profile 100 --warmup 1",
                 xf_test_tool("xflow-run"), XF_SOURCE_DIR);
        ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
        per_op = strstr(out, "per op type:");
        const char *line = strstr(out, "profile on cpu:");
        ck_assert_msg(line && per_op, "%s", out);
        int named = 0;
        for (line = strchr(line, '\n') + 1; line < per_op; line = strchr(line, '\n') + 1) {
            const char *end = strchr(line, '\n');
            ck_assert_msg(end[-1] == ']' && memchr(line, '[', (size_t)(end - line)), "%.*s", (int)(end - line), line);
            named++;
        }
        ck_assert_msg(named > 0 && !strstr(out, "[ref:") && !strstr(out, "reference implementation"), "%s", out);
        ck_assert_msg(strstr(out, "[brgconv") || strstr(out, "[jit"), "%s", out);
        free(out);
    }
    snprintf(cmd, sizeof cmd, "%s %s/examples/inception_block.onnx --profile 0", xf_test_tool("xflow-run"),
             XF_SOURCE_DIR);
    ck_assert_int_eq(xf_test_run(cmd, &out), 2);
    free(out);
}
END_TEST

/* xflow-run --max-tensor-mb stops a model whose data asks for a huge
 * tensor (inside a FlexAttention modifier), naming the value; a model
 * under the limit runs. */
START_TEST(test_run_max_tensor)
{
    char cmd[9000], *out = NULL;
    snprintf(cmd, sizeof cmd, "%s %s/tests/fuzz/regressions/run-flex-modifier-range-1700m.onnx --max-tensor-mb 64",
             xf_test_tool("xflow-run"), XF_SOURCE_DIR);
    ck_assert_int_eq(xf_test_run(cmd, &out), 1);
    ck_assert_msg(strstr(out, "'kr' needs 13907513144 bytes, over the session's limit of 67108864 per tensor"), "%s",
                  out);
    free(out);
    snprintf(cmd, sizeof cmd, "%s %s/examples/inception_block.onnx --max-tensor-mb 1 -q", xf_test_tool("xflow-run"),
             XF_SOURCE_DIR);
    ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "%s %s/examples/inception_block.onnx --max-tensor-mb 0", xf_test_tool("xflow-run"),
             XF_SOURCE_DIR);
    ck_assert_int_eq(xf_test_run(cmd, &out), 2);
    free(out);
}
END_TEST

/* --max-memory bounds the search's candidate graphs, and the result still
 * passes --check. */
START_TEST(test_max_memory_bounds_search)
{
    const char *dir = xf_test_tmpdir("tools-max-memory");
    char outp[4300], cmd[9000], *out = NULL;
    snprintf(outp, sizeof outp, "%s/opt.onnx", dir);
    snprintf(cmd, sizeof cmd, "%s %s/examples/inception_block.onnx -o %s --check --max-memory 1",
             xf_test_tool("xflowc"), XF_SOURCE_DIR, outp);
    int rc = xf_test_run(cmd, &out);
    ck_assert_msg(rc == 0, "%s", out);
    const char *line = strstr(out, "--max-memory 1 MB keeps at most ");
    ck_assert_msg(line != NULL, "no queue bound reported: %s", out);
    long kept = atol(line + strlen("--max-memory 1 MB keeps at most "));
    ck_assert_msg(kept >= 4 && kept < 512, "%s", line);
    ck_assert_msg(strstr(out, "MISMATCH") == NULL, "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "%s %s/examples/inception_block.onnx -o %s --max-memory 0", xf_test_tool("xflowc"),
             XF_SOURCE_DIR, outp);
    ck_assert_int_eq(xf_test_run(cmd, &out), 2);
    ck_assert_msg(strstr(out, "--max-memory") != NULL, "%s", out);
    free(out);
}
END_TEST

/* --check with input files: a model whose second input is a shape fails
 * with random inputs (and says what to do) and passes with the real ones. */
START_TEST(test_check_with_input_files)
{
    const char *d = XF_ONNX_TESTDATA "/node/test_reshape_negative_dim";
    const char *dir = xf_test_tmpdir("tools-check-inputs");
    char outp[4300], cmd[9000], *out = NULL;
    snprintf(outp, sizeof outp, "%s/opt.onnx", dir);
    snprintf(cmd, sizeof cmd, "%s %s/model.onnx -o %s --check -q", xf_test_tool("xflowc"), d, outp);
    ck_assert_int_ne(xf_test_run(cmd, &out), 0);
    ck_assert_msg(strstr(out, "--input FILE.pb") != NULL, "%s", out);
    ck_assert(!xf_test_exists(outp));
    free(out);
    snprintf(cmd, sizeof cmd, "%s %s/model.onnx -o %s --check --input %s/test_data_set_0/input_0.pb --input "
             "%s/test_data_set_0/input_1.pb", xf_test_tool("xflowc"), d, outp, d, d);
    ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
    ck_assert_msg(strstr(out, "check: output 'reshaped' 2x6x2") && strstr(out, "ok"), "%s", out);
    ck_assert(xf_test_exists(outp));
    free(out);
}
END_TEST

/* The committed example is exactly what its builder writes. */
START_TEST(test_example_is_reproducible)
{
    const char *dir = xf_test_tmpdir("tools-zoo");
    char outp[4300], cmd[9000], *out = NULL, committed[4300];
    snprintf(outp, sizeof outp, "%s/inception_block.onnx", dir);
    snprintf(committed, sizeof committed, "%s/examples/inception_block.onnx", XF_SOURCE_DIR);
    snprintf(cmd, sizeof cmd, "%s inception-block -o %s -q", xf_test_tool("xflow-zoo"), outp);
    ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
    free(out);
    size_t la = 0, lb = 0;
    char *a = slurp(outp, &la), *b = slurp(committed, &lb);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert_msg(la == lb && memcmp(a, b, la) == 0,
                  "examples/inception_block.onnx differs from what xflow-zoo writes; regenerate it");
    ck_assert_msg(la < 2 * 1024 * 1024, "example is %zu bytes (must stay under 2 MB)", la);
    free(a);
    free(b);
}
END_TEST

/* xflow-run runs with OpenMP's passive wait after a short spin unless the
 * user chose a policy (or a spin count). */
START_TEST(test_openmp_wait_policy)
{
    char cmd[9000], *out = NULL;
    snprintf(cmd, sizeof cmd,
             "env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT %s -v --backend cpu_ref %s/examples/inception_block.onnx",
             xf_test_tool("xflow-run"), XF_SOURCE_DIR);
    ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
    ck_assert_msg(strstr(out, "OpenMP wait policy: passive after GOMP_SPINCOUNT=1000 spins (set by xflow)"), "%s",
                  out);
    free(out);
    snprintf(cmd, sizeof cmd,
             "env -u OMP_WAIT_POLICY GOMP_SPINCOUNT=50 %s -v --backend cpu_ref %s/examples/inception_block.onnx",
             xf_test_tool("xflow-run"), XF_SOURCE_DIR);
    ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
    ck_assert_msg(strstr(out, "OpenMP wait policy: passive after GOMP_SPINCOUNT=50 spins"), "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "env OMP_WAIT_POLICY=active %s -v --backend cpu_ref %s/examples/inception_block.onnx",
             xf_test_tool("xflow-run"), XF_SOURCE_DIR);
    ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
    ck_assert_msg(strstr(out, "OpenMP wait policy: active") != NULL, "%s", out);
    free(out);
}
END_TEST

/* --threads N bounds the threads of the runs (OMP_NUM_THREADS set
 * otherwise, which it overrides); 0 and non-numbers are usage errors, on
 * xflowc too. */
START_TEST(test_threads_option)
{
    char cmd[9000], *out = NULL;
    for (int t = 1; t <= 3; t++) {
        snprintf(cmd, sizeof cmd, "env OMP_NUM_THREADS=2 %s -v --threads %d %s/examples/inception_block.onnx",
                 xf_test_tool("xflow-run"), t, XF_SOURCE_DIR);
        ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
        char want[64];
        snprintf(want, sizeof want, "at most %d thread%s\n", t, t == 1 ? "" : "s");
        ck_assert_msg(strstr(out, want) != NULL, "--threads %d: %s", t, out);
        free(out);
    }
    snprintf(cmd, sizeof cmd, "env OMP_NUM_THREADS=2 %s -v %s/examples/inception_block.onnx", xf_test_tool("xflow-run"),
             XF_SOURCE_DIR);
    ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
    ck_assert_msg(strstr(out, "at most 2 threads\n") != NULL, "%s", out);
    free(out);
    static const char *const bad[] = {"0", "-1", "two", "1025"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(cmd, sizeof cmd, "%s %s/examples/inception_block.onnx --threads %s", xf_test_tool("xflow-run"),
                 XF_SOURCE_DIR, bad[i]);
        ck_assert_int_eq(xf_test_run(cmd, &out), 2);
        ck_assert_msg(strstr(out, "--threads needs an integer from 1 to 1024") != NULL, "%s", out);
        free(out);
        snprintf(cmd, sizeof cmd, "%s %s/examples/inception_block.onnx -o /dev/null --threads %s",
                 xf_test_tool("xflowc"), XF_SOURCE_DIR, bad[i]);
        ck_assert_int_eq(xf_test_run(cmd, &out), 2);
        ck_assert_msg(strstr(out, "--threads needs an integer from 1 to 1024") != NULL, "%s", out);
        free(out);
    }
}
END_TEST

/* --direct-conv: the bundled example's 3x3 convolutions run through
 * Winograd's kernel on the cpu backend where oneDNN has it (AVX-512), and
 * directly with the option, as --profile names them. */
START_TEST(test_direct_conv_option)
{
    if (!xf_bt_have_cpu())
        return;
    char cmd[9000], *out = NULL;
    for (int direct = 0; direct < 2; direct++) {
        snprintf(cmd, sizeof cmd, "%s %s/examples/inception_block.onnx --backend cpu --profile 40 --iters 1 -q%s",
                 xf_test_tool("xflow-run"), XF_SOURCE_DIR, direct ? " --direct-conv" : "");
        ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
        ck_assert_msg(strstr(out, "Conv_6  [") != NULL, "%s", out);
        bool wino = strstr(out, "wino") != NULL;
        ck_assert_msg(wino == (!direct && xf_bt_avx512_kernels()), "direct %d: %s", direct, out);
        free(out);
    }
    if (!xf_bt_avx512_kernels())
        printf("test_direct_conv_option: no AVX-512 kernels here, so both runs were direct\n");
}
END_TEST

/* Runs the Python script made from fmt (with onnx and numpy: it writes a
 * test's model and inputs), which must succeed. */
static void python_fixture(const char *fmt, ...)
{
    char script[6000], cmd[6200], *out = NULL;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(script, sizeof script, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "%s -c \"%s\"", XF_PYTHON, script);
    ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
    free(out);
}

/* Random integer inputs that index a table (through a Cast here) stay
 * below its rows: a two-row table, as a BERT's token types, runs without
 * input files, where indices up to 9 would be out of range. */
START_TEST(test_random_indices_fit_table)
{
    const char *dir = xf_test_tmpdir("tools-random-indices");
    char model[4300], cmd[9000], *out = NULL;
    snprintf(model, sizeof model, "%s/gather2.onnx", dir);
    python_fixture("import onnx, onnx.helper as h, onnx.numpy_helper as nh, numpy as np\n"
                   "g = h.make_graph([h.make_node('Cast', ['ids'], ['i32'], to=6), h.make_node('Gather', ['t', 'i32'], "
                   "['y'])], 'g', [h.make_tensor_value_info('ids', 7, [1, 64])], [h.make_tensor_value_info('y', 1, "
                   "[1, 64, 3])], [nh.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), 't')])\n"
                   "onnx.save(h.make_model(g, opset_imports=[h.make_opsetid('', 17)]), '%s')",
                   model);
    for (int seed = 1; seed <= 3; seed++) {
        snprintf(cmd, sizeof cmd, "%s %s --seed %d", xf_test_tool("xflow-run"), model, seed);
        ck_assert_msg(xf_test_run(cmd, &out) == 0, "seed %d: %s", seed, out);
        ck_assert_msg(strstr(out, "output 'y' FLOAT 1x64x3") != NULL, "%s", out);
        free(out);
    }
    /* an integer input named as a mask is all ones: its sum is its size */
    snprintf(model, sizeof model, "%s/mask.onnx", dir);
    python_fixture("import onnx, onnx.helper as h\n"
                   "g = h.make_graph([h.make_node('ReduceSum', ['attention_mask'], ['s'], keepdims=0)], 'g', "
                   "[h.make_tensor_value_info('attention_mask', 7, [1, 7])], [h.make_tensor_value_info('s', 7, [])])\n"
                   "onnx.save(h.make_model(g, opset_imports=[h.make_opsetid('', 17)]), '%s')",
                   model);
    snprintf(cmd, sizeof cmd, "%s %s", xf_test_tool("xflow-run"), model);
    ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
    ck_assert_msg(strstr(out, "output 's' INT64 scalar: 7\n") != NULL, "%s", out);
    free(out);
}
END_TEST

/* A symbolic dim checked at sizes the model can take: a sequence given as
 * 7 is tried at 28 and 35 first, past a 32-row position table, and then at
 * 14 and 21, and stays symbolic. */
START_TEST(test_symbolic_checked_within_table)
{
    const char *dir = xf_test_tmpdir("tools-symbolic-table");
    char model[1024], input[1024], outp[1024], cmd[9000], *out = NULL;
    snprintf(model, sizeof model, "%s/pos.onnx", dir);
    snprintf(input, sizeof input, "%s/x.pb", dir);
    snprintf(outp, sizeof outp, "%s/opt.onnx", dir);
    python_fixture("import onnx, numpy as np, onnx.helper as h, onnx.numpy_helper as nh\n"
                   "c = lambda n, v: h.make_node('Constant', [], [n], value=nh.from_array(np.array(v, dtype=np.int64)))\n"
                   "nodes = [h.make_node('Shape', ['x'], ['s']), c('one', 1), c('zero', 0),\n"
                   "         h.make_node('Gather', ['s', 'one'], ['len']), h.make_node('Range', ['zero', 'len', 'one'], ['pos']),\n"
                   "         h.make_node('Gather', ['t', 'pos'], ['e']), h.make_node('Unsqueeze', ['x', 'one'], ['x3']),\n"
                   "         h.make_node('Transpose', ['x3'], ['xt'], perm=[0, 2, 1]), h.make_node('Mul', ['e', 'xt'], ['y'])]\n"
                   "t = nh.from_array(np.arange(128, dtype=np.float32).reshape(32, 4), 't')\n"
                   "g = h.make_graph(nodes, 'g', [h.make_tensor_value_info('x', 1, [1, 'seq'])],\n"
                   "                 [h.make_tensor_value_info('y', 1, None)], [t])\n"
                   "onnx.save(h.make_model(g, opset_imports=[h.make_opsetid('', 17)]), '%s')\n"
                   "open('%s', 'wb').write(nh.from_array(np.ones((1, 7), np.float32), 'x').SerializeToString())",
                   model, input);
    snprintf(cmd, sizeof cmd, "%s %s -o %s --input %s --check", xf_test_tool("xflowc"), model, outp, input);
    ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
    ck_assert_msg(strstr(out, "symbolic dims kept: 'x' dim 1 ('seq') (checked at seq 14 and 21") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "fixed at the size") == NULL, "%s", out);
    free(out);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("tools");
    TCase *bad = tcase_create("bad-input");
    tcase_add_unchecked_fixture(bad, make_fixtures, NULL);
    tcase_add_test(bad, test_missing_file);
    tcase_add_test(bad, test_random_indices_fit_table);
    tcase_add_test(bad, test_symbolic_checked_within_table);
    tcase_add_test(bad, test_not_protobuf);
    tcase_add_test(bad, test_truncated);
    tcase_add_test(bad, test_cycle);
    tcase_add_test(bad, test_undefined_input);
    tcase_add_test(bad, test_init_size_mismatch);
    tcase_add_test(bad, test_shape_mismatch);
    tcase_add_test(bad, test_unwritable_output);
    tcase_add_test(bad, test_output_over_input_refused);
    tcase_add_test(bad, test_usage_errors);
    suite_add_tcase(s, bad);
    TCase *ex = tcase_create("example");
    tcase_set_timeout(ex, 300);
    tcase_add_test(ex, test_example_check);
    tcase_add_test(ex, test_measured_choice);
    tcase_add_test(ex, test_run_profile);
    tcase_add_test(ex, test_run_max_tensor);
    tcase_add_test(ex, test_example_is_reproducible);
    tcase_add_test(ex, test_max_memory_bounds_search);
    tcase_add_test(ex, test_check_with_input_files);
    tcase_add_test(ex, test_openmp_wait_policy);
    tcase_add_test(ex, test_threads_option);
    tcase_add_test(ex, test_direct_conv_option);
    suite_add_tcase(s, ex);
    return xf_test_run_suite(s);
}
