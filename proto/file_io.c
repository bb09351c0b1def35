/* Whole-file reads and atomic writes (temporary file, fsync, rename). */
#include "proto_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

xf_status xfp_read_file(const char *path, uint8_t **buf, size_t *len, xf_error *err)
{
    *buf = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return xf_error_set(err, XF_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        xf_status s = xf_error_set(err, XF_ERR_IO, "cannot read '%s': %s", path, strerror(errno));
        close(fd);
        return s;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return xf_error_set(err, XF_ERR_IO, "cannot read '%s': not a regular file", path);
    }
    size_t size = (size_t)st.st_size;
    uint8_t *data = malloc(size ? size : 1);
    if (!data) {
        close(fd);
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory reading '%s' (%zu bytes)", path, size);
    }
    size_t got = 0;
    while (got < size) {
        ssize_t r = read(fd, data + got, size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            xf_status s = xf_error_set(err, XF_ERR_IO, "cannot read '%s': %s", path,
                                       r < 0 ? strerror(errno) : "file shrank while reading");
            free(data);
            close(fd);
            return s;
        }
        got += (size_t)r;
    }
    close(fd);
    *buf = data;
    *len = size;
    return XF_OK;
}

char *xfp_dirname(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return strdup(".");
    if (slash == path)
        return strdup("/");
    size_t n = (size_t)(slash - path);
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, path, n);
        d[n] = '\0';
    }
    return d;
}

xf_status xfp_atomic_open(xfp_atomic_file *f, const char *path, xf_error *err)
{
    f->fd = -1;
    f->tmp_path = NULL;
    f->path = strdup(path);
    size_t n = strlen(path) + 64;
    f->tmp_path = malloc(n);
    if (!f->path || !f->tmp_path) {
        xfp_atomic_release(f);
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory writing '%s'", path);
    }
    /* A name of our own (pid + counter) opened with O_EXCL, rather than
     * mkstemp, so that the file gets the usual umask-based permissions. */
    static unsigned counter;
    for (int attempt = 0; attempt < 100; attempt++) {
        snprintf(f->tmp_path, n, "%s.tmp-%ld-%u", path, (long)getpid(), counter++);
        f->fd = open(f->tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (f->fd >= 0 || errno != EEXIST)
            break;
    }
    if (f->fd < 0) {
        xf_status s = xf_error_set(err, XF_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
        free(f->tmp_path);
        f->tmp_path = NULL;
        xfp_atomic_release(f);
        return s;
    }
    return XF_OK;
}

xf_status xfp_atomic_write(xfp_atomic_file *f, const void *buf, size_t len, xf_error *err)
{
    const uint8_t *p = buf;
    while (len > 0) {
        ssize_t w = write(f->fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return xf_error_set(err, XF_ERR_IO, "cannot write '%s': %s", f->path, strerror(errno));
        p += w;
        len -= (size_t)w;
    }
    return XF_OK;
}

xf_status xfp_atomic_finish(xfp_atomic_file *f, xf_error *err)
{
    int rc = fsync(f->fd);
    int saved = errno;
    if (close(f->fd) != 0 && rc == 0) {
        rc = -1;
        saved = errno;
    }
    f->fd = -1;
    if (rc != 0)
        return xf_error_set(err, XF_ERR_IO, "cannot write '%s': %s", f->path, strerror(saved));
    return XF_OK;
}

xf_status xfp_atomic_commit(xfp_atomic_file *f, xf_error *err)
{
    if (rename(f->tmp_path, f->path) != 0)
        return xf_error_set(err, XF_ERR_IO, "cannot write '%s': %s", f->path, strerror(errno));
    free(f->tmp_path);
    f->tmp_path = NULL;
    /* The rename is durable once the directory itself is synced. */
    char *dir = xfp_dirname(f->path);
    int dfd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    free(dir);
    return XF_OK;
}

void xfp_atomic_release(xfp_atomic_file *f)
{
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
    if (f->tmp_path)
        unlink(f->tmp_path);
    free(f->tmp_path);
    free(f->path);
    f->tmp_path = NULL;
    f->path = NULL;
}

xf_status xfp_write_file_atomic(const char *path, const void *buf, size_t len, xf_error *err)
{
    xfp_atomic_file f;
    xf_status s = xfp_atomic_open(&f, path, err);
    if (s != XF_OK)
        return s;
    if ((s = xfp_atomic_write(&f, buf, len, err)) == XF_OK && (s = xfp_atomic_finish(&f, err)) == XF_OK)
        s = xfp_atomic_commit(&f, err);
    xfp_atomic_release(&f);
    return s;
}
