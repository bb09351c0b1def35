/* Helpers shared by the Check suites. */
#ifndef XF_TEST_UTIL_H
#define XF_TEST_UTIL_H

#include "xf_rule.h"

#include <check.h>
#include <stddef.h>

/* A fresh empty directory under the build tree for one test; returns a
 * static path valid until the next call. */
const char *xf_test_tmpdir(const char *test_name);
/* Runs a shell command, capturing stdout+stderr into *out (malloc'd) and
 * returning the exit status (or -1). */
int xf_test_run(const char *cmd, char **out);
/* True when path exists. */
int xf_test_exists(const char *path);
/* Path of a built tool (e.g. "xflowc") in the build tree; static buffer. */
const char *xf_test_tool(const char *name);

/* The library in text (a test fixture), parsed; the test fails on a parse
 * error, naming it. */
xf_library *xf_test_library(const char *text);

/* Runs every test of s (Check's normal output) and returns the exit status
 * for main: EXIT_SUCCESS when none failed. */
int xf_test_run_suite(Suite *s);

#endif
