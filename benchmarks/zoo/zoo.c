/* The zoo's models. */
#include "zoo.h"

#include "builder.h"

#include <stdlib.h>
#include <string.h>

/* An Inception-style block (the bundled example): four branches read the
 * same input — three of them start with a 1x1 convolution, the kind of
 * sibling convolutions a graph optimizer merges — then a concatenation and
 * a residual 1x1 projection. */
static xf_status build_inception_block(xf_model *m, int batch, xf_error *err)
{
    zb b;
    zb_init(&b, m->graph, 0x1ce9710ull, err);
    int64_t in_dims[4] = {batch, 64, 28, 28};
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

static int bottleneck(zb *b, int x, int width, int stride, int group, int expansion)
{
    int cin = (int)b->g->values[x].shape.dims[1];
    int cout = width * expansion;
    int y = zb_conv_bn_relu(b, x, width, 1, 1, 1, 0, 1);
    y = zb_conv_bn_relu(b, y, width, 3, 3, stride, 1, group);
    y = zb_bn(b, zb_conv(b, y, cout, 1, 1, 1, 0, 1, false));
    int shortcut = x;
    if (stride != 1 || cin != cout)
        shortcut = zb_bn(b, zb_conv(b, x, cout, 1, 1, stride, 0, 1, false));
    return zb_relu(b, zb_add(b, y, shortcut));
}

/* ResNet-50 (He et al.) and ResNeXt-50 32x4d share the stage layout. */
static xf_status build_resnet(xf_model *m, int batch, int group, int base_width, uint64_t seed,
                              xf_error *err)
{
    zb b;
    zb_init(&b, m->graph, seed, err);
    int64_t in_dims[4] = {batch, 3, 224, 224};
    int x = zb_input(&b, "input", 4, in_dims);
    x = zb_conv_bn_relu(&b, x, 64, 7, 7, 2, 3, 1);
    x = zb_pool(&b, XF_OP_MAX_POOL, x, 3, 2, 1);
    static const int blocks[4] = {3, 4, 6, 3};
    int expansion = group > 1 ? 2 : 4;
    for (int s = 0; s < 4; s++) {
        int width = base_width << s;
        for (int i = 0; i < blocks[s]; i++)
            x = bottleneck(&b, x, width, (i == 0 && s > 0) ? 2 : 1, group, expansion);
    }
    x = zb_flatten(&b, zb_global_avg_pool(&b, x));
    zb_output(&b, zb_dense(&b, x, 1000), "logits");
    return b.failed ? err->status : XF_OK;
}

static xf_status build_resnet50(xf_model *m, int batch, xf_error *err)
{
    return build_resnet(m, batch, 1, 64, 0x7e5e750ull, err);
}

static xf_status build_resnext50(xf_model *m, int batch, xf_error *err)
{
    return build_resnet(m, batch, 32, 128, 0x7e5e8750ull, err);
}

static const xf_zoo_entry zoo[] = {
    {"inception-block", "Inception-style block, 64x28x28, branches sharing the input (bundled example)",
     build_inception_block, 1},
    {"resnet50", "ResNet-50, 224x224, 25.6M parameters", build_resnet50, 1},
    {"resnext50", "ResNeXt-50 32x4d, 224x224, grouped convolutions", build_resnext50, 1},
    {NULL, NULL, NULL, 0},
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
    xf_status st = e->build(m, batch > 0 ? batch : e->default_batch, err);
    if (st != XF_OK) {
        xf_model_free(m);
        return st;
    }
    *out = m;
    return XF_OK;
}
