/* The backend registry: every backend compiled in, found by name. */
#include "xf_rt_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#ifdef XF_HAVE_DNNL
extern const xf_backend xf_backend_cpu; /* cpu_dnnl.c */
#endif
#ifdef XF_HAVE_CUDA_BACKEND
extern const xf_backend xf_backend_cuda; /* cuda_backend.c */
#endif

static const xf_backend *const backends[] = {
    &xf_backend_cpu_ref,
#ifdef XF_HAVE_DNNL
    &xf_backend_cpu,
#endif
#ifdef XF_HAVE_CUDA_BACKEND
    &xf_backend_cuda,
#endif
};

const xf_backend *xf_backend_find(const char *name)
{
    for (size_t i = 0; i < sizeof backends / sizeof *backends; i++)
        if (name && strcmp(backends[i]->name, name) == 0)
            return backends[i];
    return NULL;
}

int xf_backend_list(const xf_backend *const **list)
{
    *list = backends;
    return (int)(sizeof backends / sizeof *backends);
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
