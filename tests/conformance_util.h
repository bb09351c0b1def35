/* The ONNX backend test data, for the conformance suites. */
#ifndef XF_CONFORMANCE_UTIL_H
#define XF_CONFORMANCE_UTIL_H

#include "xf_core.h"

/* XF_ONNX_TESTDATA, the folder of the ONNX backend test data, comes from
 * the build (tests/CMakeLists.txt). */

/* Sorted subdirectory names of dir (so runs are in a stable order); -1 when
 * dir cannot be read.  Free with xf_conformance_free_list. */
int xf_conformance_list(const char *dir, char ***out);
void xf_conformance_free_list(char **names, int n);
/* Runs every test_data_set_N of the case in case_dir (model m) on backend
 * and compares each output with the expected one (rtol 1e-3, atol 1e-5, as
 * ONNX's own backend tests).  Each data set runs on the model loaded again
 * with its inputs' shapes as the feed shapes (xf_load_options), so that
 * symbolic dims take the sizes fed.  NULL on success, else why (static
 * buffer). */
const char *xf_conformance_run_case(const char *case_dir, const xf_model *m, const char *backend);

/* The node cases of the test data, run on cpu_ref and, where they pass
 * there, on backend.  A case whose session backend refuses is counted as
 * refused; with a time budget (seconds > 0) the run stops after it, and
 * says how far it came. */
typedef struct xf_conformance_tally {
    int listed;      /* node cases in the test data */
    int cases;       /* of those, run (model loads; within the budget) */
    int ref_pass;    /* pass on cpu_ref */
    int refused;     /* of ref_pass, refused by backend at session creation */
    int pass;        /* of ref_pass, pass on backend */
    char failures[4096]; /* "  case: why" lines, the first ones */
} xf_conformance_tally;
void xf_conformance_against_ref(const char *backend, double budget_s, xf_conformance_tally *t);

#endif
