/* The zoo's models. */
#include "zoo.h"

#include "builder.h"
#include "zoo_models.h"

#include <stdlib.h>
#include <string.h>

/* An Inception-style block (the bundled example): four branches read the
 * same input — three of them start with a 1x1 convolution, the kind of
 * sibling convolutions a graph optimizer merges — then a concatenation and
 * a residual 1x1 projection. */
static xf_status build_inception_block(xf_model *m, int batch, int size, xf_error *err)
{
    zb b;
    zb_init(&b, m->graph, 0x1ce9710ull, err);
    int64_t in_dims[4] = {batch, 64, size, size};
    int x = zb_input(&b, "input", 4, in_dims);
    int b1 = zb_conv_bn_relu(&b, x, 32, 1, 1, 1, 0, 1);
    int b2 = zb_conv_bn_relu(&b, x, 48, 1, 1, 1, 0, 1);
    b2 = zb_conv_bn_relu(&b, b2, 64, 3, 3, 1, 1, 1);
    int b3 = zb_conv_bn_relu(&b, x, 16, 1, 1, 1, 0, 1);
    b3 = zb_conv_bn_relu(&b, b3, 32, 3, 3, 1, 1, 1);
    b3 = zb_conv_bn_relu(&b, b3, 32, 3, 3, 1, 1, 1);
    int b4 = zb_pool(&b, XF_OP_MAX_POOL, x, 3, 1, 1);
    b4 = zb_conv_bn_relu(&b, b4, 32, 1, 1, 1, 0, 1);
    int branches[4] = {b1, b2, b3, b4};
    int cat = zb_concat(&b, 4, branches, 1);
    int proj = zb_bn(&b, zb_conv(&b, cat, 64, 1, 1, 1, 0, 1, false));
    int y = zb_relu(&b, zb_add(&b, proj, x));
    zb_output(&b, y, "output");
    return b.failed ? err->status : XF_OK;
}

static const xf_zoo_entry zoo[] = {
    {"inception-block", "Inception-style block, 64x28x28, branches sharing the input (bundled example)",
     build_inception_block, 1, 28, "image side"},
    {"resnet50", "ResNet-50, 224x224, 25.6M parameters", xf_zoo_build_resnet50, 1, 224, "image side"},
    {"resnext50", "ResNeXt-50 32x4d, 224x224, grouped convolutions", xf_zoo_build_resnext50, 1, 224,
     "image side"},
    {"nasnet-a", "NasNet-A, 224x224, 3 stages of 5 normal + 1 reduction cell, separable convolutions",
     xf_zoo_build_nasnet_a, 1, 224, "image side"},
    {"nasrnn", "NasRNN cell unrolled 5 steps, hidden 512", xf_zoo_build_nasrnn, 1, 5, "steps"},
    {"bert", "BERT encoder, 8 layers, hidden 1024, 16 heads, sequence 64 (batch 16)", xf_zoo_build_bert, 16,
     64, "sequence length"},
    {"inception-v3", "Inception-v3, 299x299", xf_zoo_build_inception_v3, 1, 299, "image side"},
    {"squeezenet", "SqueezeNet 1.1, 224x224, fire modules", xf_zoo_build_squeezenet, 1, 224, "image side"},
    {NULL, NULL, NULL, 0, 0, NULL},
};

const xf_zoo_entry *xf_zoo_list(void) { return zoo; }

const xf_zoo_entry *xf_zoo_find(const char *name)
{
    for (const xf_zoo_entry *e = zoo; e->name; e++)
        if (strcmp(e->name, name) == 0)
            return e;
    return NULL;
}

static char *dup(const char *s) { return strdup(s); }

xf_status xf_zoo_build(const char *name, int batch, xf_model **out, xf_error *err)
{
    return xf_zoo_build_sized(name, batch, 0, out, err);
}

xf_status xf_zoo_build_sized(const char *name, int batch, int size, xf_model **out, xf_error *err)
{
    *out = NULL;
    const xf_zoo_entry *e = xf_zoo_find(name);
    if (!e)
        return xf_error_set(err, XF_ERR_INVALID, "no zoo model named '%s' (xflow-zoo --list names them)",
                            name);
    xf_model *m = xf_model_create();
    if (!m)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    m->ir_version = 8;
    m->producer_name = dup("xflow-zoo");
    m->producer_version = dup("0.1.0");
    m->n_opsets = 1;
    m->opsets = calloc(1, sizeof *m->opsets);
    if (m->opsets)
        m->opsets[0] = (xf_opset){dup(""), ZB_OPSET};
    free(m->graph->name);
    m->graph->name = dup(name);
    if (!m->producer_name || !m->producer_version || !m->opsets || !m->opsets[0].domain ||
        !m->graph->name) {
        xf_model_free(m);
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    }
    xf_status st = e->build(m, batch > 0 ? batch : e->default_batch, size > 0 ? size : e->default_size, err);
    if (st != XF_OK) {
        xf_model_free(m);
        return st;
    }
    *out = m;
    return XF_OK;
}
