/* The ONNX backend test data, for the conformance suites. */
#ifndef XF_CONFORMANCE_UTIL_H
#define XF_CONFORMANCE_UTIL_H

#include "xf_core.h"

#define XF_ONNX_TESTDATA "/usr/share/libonnx-testdata/data"

/* Sorted subdirectory names of dir (so runs are in a stable order); -1 when
 * dir cannot be read.  Free with xf_conformance_free_list. */
int xf_conformance_list(const char *dir, char ***out);
void xf_conformance_free_list(char **names, int n);
/* Runs every test_data_set_N of the case in case_dir (model m) on backend
 * and compares each output with the expected one (rtol 1e-3, atol 1e-5, as
 * ONNX's own backend tests).  NULL on success, else why (static buffer). */
const char *xf_conformance_run_case(const char *case_dir, const xf_model *m, const char *backend);

#endif
