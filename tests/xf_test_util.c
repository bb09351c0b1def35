#include "xf_test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

const char *xf_test_tmpdir(const char *test_name)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s/test-tmp/%s", XF_BINARY_DIR, test_name);
    char cmd[8300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", path, path);
    if (system(cmd) != 0)
        return NULL;
    return path;
}

int xf_test_run(const char *cmd, char **out)
{
    char full[8192];
    snprintf(full, sizeof full, "(%s) 2>&1", cmd);
    FILE *p = popen(full, "r");
    if (!p)
        return -1;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    size_t r;
    while (buf && (r = fread(buf + len, 1, cap - len - 1, p)) > 0) {
        len += r;
        if (cap - len < 1024) {
            char *nb = realloc(buf, cap * 2);
            if (!nb)
                break;
            buf = nb;
            cap *= 2;
        }
    }
    if (buf)
        buf[len] = '\0';
    int status = pclose(p);
    if (out)
        *out = buf;
    else
        free(buf);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int xf_test_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

const char *xf_test_tool(const char *name)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s/tools/%s", XF_BINARY_DIR, name);
    return path;
}

int xf_test_run_suite(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

xf_library *xf_test_library(const char *text)
{
    xf_library *lib = NULL;
    xf_error e = {0};
    ck_assert_msg(xf_library_parse(text, strlen(text), "fixture", &lib, &e) == XF_OK, "%s", e.msg);
    return lib;
}
