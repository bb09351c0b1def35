/* The backend registry: every backend of this build, found by name.
 *
 * The cuda backend is a module of its own (libxflow_cuda.so, which links
 * the CUDA runtime, cuBLAS and cuDNN), loaded the first time it is asked
 * for: cuBLAS alone takes some 150 MB of memory in a process that loads
 * it, which a process running on the CPU should not pay, and a program
 * of this build then runs where those libraries are absent.  The module
 * takes the rest of xflow (cpu_ref, for the nodes it runs on the host)
 * from the program that loads it, whose symbols the build exports.  It is
 * looked for where the build put it, or at $XFLOW_CUDA_MODULE. */
#include "xf_rt_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#ifdef XF_CUDA_MODULE
#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>
#endif

#ifdef XF_HAVE_DNNL
extern const xf_backend xf_backend_cpu; /* cpu_dnnl.c */
#endif

static const xf_backend *const builtin[] = {
    &xf_backend_cpu_ref,
#ifdef XF_HAVE_DNNL
    &xf_backend_cpu,
#endif
};
enum { N_BUILTIN = (int)(sizeof builtin / sizeof *builtin) };

#ifdef XF_CUDA_MODULE
static pthread_once_t cuda_once = PTHREAD_ONCE_INIT;
static const xf_backend *cuda_backend;
static char cuda_error[1024];

static void load_cuda(void)
{
    const char *path = getenv("XFLOW_CUDA_MODULE");
    bool given = path && *path;
    if (!given)
        path = XF_CUDA_MODULE;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        /* a module not where the build put it may have been moved */
        bool moved = !given && access(path, F_OK) != 0;
        snprintf(cuda_error, sizeof cuda_error, "its module did not load: %s%s", dlerror(),
                 moved ? " (set XFLOW_CUDA_MODULE to the path of libxflow_cuda.so)" : "");
        return;
    }
    cuda_backend = dlsym(h, "xf_backend_cuda");
    if (!cuda_backend) {
        snprintf(cuda_error, sizeof cuda_error, "%s has no xf_backend_cuda", path);
        dlclose(h);
    }
}

static const xf_backend *cuda(void)
{
    pthread_once(&cuda_once, load_cuda);
    return cuda_backend;
}
#endif

const xf_backend *xf_backend_find(const char *name)
{
    for (int i = 0; name && i < N_BUILTIN; i++)
        if (strcmp(builtin[i]->name, name) == 0)
            return builtin[i];
#ifdef XF_CUDA_MODULE
    if (name && strcmp(name, "cuda") == 0)
        return cuda();
#endif
    return NULL;
}

const char *xf_backend_unavailable(const char *name)
{
#ifdef XF_CUDA_MODULE
    if (name && strcmp(name, "cuda") == 0 && !cuda())
        return cuda_error;
#endif
    (void)name;
    return NULL;
}

int xf_backend_list(const xf_backend *const **list)
{
    static const xf_backend *all[N_BUILTIN + 1];
    int n = 0;
    for (; n < N_BUILTIN; n++)
        all[n] = builtin[n];
#ifdef XF_CUDA_MODULE
    if (cuda())
        all[n++] = cuda();
#endif
    *list = all;
    return n;
}

xf_status xf_rt_unsupported(xf_error *err, const xf_backend *be, const xf_node *n, const char *detail_fmt, ...)
{
    char detail[512] = "";
    if (detail_fmt) {
        detail[0] = ' ';
        va_list ap;
        va_start(ap, detail_fmt);
        vsnprintf(detail + 1, sizeof detail - 1, detail_fmt, ap);
        va_end(ap);
    }
    const char *op = n->op == XF_OP_OPAQUE && n->opaque ? n->opaque->op_type : xf_op_name(n->op);
    /* an op of another domain (a custom op library's, ONNX-ML's) by its domain too */
    const char *domain = n->op == XF_OP_OPAQUE && n->opaque ? n->opaque->domain : xf_op_domain(n->op);
    bool other = domain && domain[0] && strcmp(domain, "ai.onnx") != 0;
    return xf_error_set(err, XF_ERR_UNSUPPORTED, "backend %s does not support op %s%s%s%s (node '%s')", be->name,
                        other ? domain : "", other ? ":" : "", op, detail, n->name ? n->name : "");
}

void xf_runtime_set_threads(int n)
{
#ifdef _OPENMP
    if (n >= 1)
        omp_set_num_threads(n);
#else
    (void)n;
#endif
}

int xf_runtime_threads(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}
