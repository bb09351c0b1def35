/* Where xflow keeps what it measured on a machine (the optimizer's
 * measured op costs, the cpu backend's timed kernel choices): files under
 * $XDG_CACHE_HOME/xflow, else ~/.cache/xflow. */
#include "xf_core.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

char *xf_cache_file_path(const char *name)
{
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    char buf[4096];
    if (xdg && xdg[0])
        snprintf(buf, sizeof buf, "%s/xflow/%s", xdg, name);
    else if (home && home[0])
        snprintf(buf, sizeof buf, "%s/.cache/xflow/%s", home, name);
    else
        return NULL;
    return strdup(buf);
}

int xf_make_parent_dirs(const char *path)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return 0;
}
