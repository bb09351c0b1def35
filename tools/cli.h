/* What the command-line programs share: diagnostics, verbosity, timing and
 * random inputs. */
#ifndef XF_CLI_H
#define XF_CLI_H

#include "xf_core.h"
#include "xf_proto.h"

#include <stdbool.h>
#include <stdio.h>

/* Verbosity: 0 = -q (errors only), 1 = default, 2 = -v. */
void xf_cli_init(const char *prog, int verbosity);
/* Call first in main() of tools that run the oneDNN backend: when
 * OMP_WAIT_POLICY is unset, sets it to passive, with a short spin
 * (GOMP_SPINCOUNT, unless set) before a thread sleeps, and re-executes the
 * program once, because GNU OpenMP reads them only when it loads: its
 * default (active waiting) makes idle oneDNN threads spin and starve each
 * other on a shared machine, and passive waiting without a spin puts a
 * sleep and a wake-up between every two nodes.  A value the user set is
 * kept.  Returns on failure to re-execute (the run goes on with the
 * defaults). */
void xf_cli_openmp_passive(char **argv);
/* "passive after GOMP_SPINCOUNT=N spins (set by xflow)", the user's
 * value, or "unset". */
const char *xf_cli_openmp_policy(void);
int xf_cli_verbosity(void);
/* "PROG: error: ..." on stderr; returns 1 (the exit status for failures). */
int xf_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A usage error: the message, a hint to run --help; returns 2. */
int xf_cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Informational output on stdout, shown unless -q. */
void xf_cli_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
double xf_cli_now(void);
/* True when both paths name the same existing file. */
bool xf_cli_same_file(const char *a, const char *b);
/* Parses a positive integer option value; false (with an error printed) if bad. */
bool xf_cli_parse_int(const char *opt, const char *s, long lo, long hi, long *out);
bool xf_cli_parse_double(const char *opt, const char *s, double *out);
/* Parses a --dim NAME=N value into dims[*n] (the name malloc'd), refusing
 * a name already among the *n given; returns 0, or the exit status of the
 * usage error it printed. */
int xf_cli_parse_dim(const char *arg, xf_dim_size *dims, int *n, int max);
/* Frees the names xf_cli_parse_dim allocated. */
void xf_cli_free_dims(xf_dim_size *dims, int n);

void xf_cli_free_tensors(xf_tensor **t, int n);
/* Inputs for g: files[i] (an ONNX TensorProto, SequenceProto or
 * OptionalProto file, as input i is a tensor, a sequence or an optional)
 * feeds input i, the inputs after them are seeded random values (a
 * sequence: 3 entries of its element shape, symbolic dims of size 2).
 * *out has g->n_inputs entries. */
xf_status xf_cli_load_inputs(const xf_graph *g, const char *const *files, int n_files, uint64_t seed,
                             xf_tensor ***out, xf_error *err);
/* Loads the model at path with the --input-shape overrides, the --dim
 * sizes and the shapes of the --input files (which size symbolic dims).
 * Symbolic dims nothing sizes take *guess past each input's first dim
 * (xf_load_options.guess_size); with *guess 0 or 1, 1, and where the model
 * does not load at 1 and has such dims, 64 and then 512 are tried (the
 * first error is the one reported).  On return *guess is the size they
 * took, 0 where there were none. */
xf_status xf_cli_load_model(const char *path, const xf_input_shape *shapes, int n_shapes, const xf_dim_size *dims,
                            int n_dims, const char *const *inputs, int n_inputs, int64_t *guess, xf_model **out,
                            xf_error *err);
/* The sizes xf_cli_load_model tries past 1 (XF_CLI_GUESSES of them). */
#define XF_CLI_GUESSES 2
extern const int64_t xf_cli_guesses[XF_CLI_GUESSES];
/* The first of them larger than `taken` (the size xf_cli_load_model's
 * *guess came back with), to load again with where the model does not fit
 * once loaded; 0 where there is none (no dims took a guess, or the largest
 * was tried). */
int64_t xf_cli_next_guess(int64_t taken);

/* Nodes of g as an ONNX file holds them: a Conv's fused activation is a node of its own there. */
int xf_cli_written_nodes(const xf_graph *g);
/* Prints "  OpType   before -> after" for every op whose count differs, and totals. */
void xf_cli_print_op_changes(FILE *f, const xf_graph *before, const xf_graph *after);

#endif
