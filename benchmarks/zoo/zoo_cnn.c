/* Convolutional image classifiers: ResNet-50, ResNeXt-50, Inception-v3 and
 * SqueezeNet 1.1, at their published layer sizes. */
#include "builder.h"
#include "zoo_models.h"

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
static xf_status build_resnet(xf_model *m, int batch, int size, int group, int base_width, uint64_t seed,
                              xf_error *err)
{
    zb b;
    zb_init(&b, m->graph, seed, err);
    int64_t in_dims[4] = {batch, 3, size, size};
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

xf_status xf_zoo_build_resnet50(xf_model *m, int batch, int size, xf_error *err)
{
    return build_resnet(m, batch, size, 1, 64, 0x7e5e750ull, err);
}

xf_status xf_zoo_build_resnext50(xf_model *m, int batch, int size, xf_error *err)
{
    return build_resnet(m, batch, size, 32, 128, 0x7e5e8750ull, err);
}

/* ---------------------------------------------------------------- Inception-v3 */

/* Conv + BatchNormalization + Relu with "same" padding (per axis, so that
 * the factorized 1x7 and 7x1 kernels keep the spatial size). */
static int cbr_same(zb *b, int x, int cout, int kh, int kw)
{
    return zb_conv_bn_relu(b, x, cout, kh, kw, 1, -1, 1);
}

static int avg_pool_branch(zb *b, int x, int cout)
{
    return cbr_same(b, zb_pool(b, XF_OP_AVERAGE_POOL, x, 3, 1, 1), cout, 1, 1);
}

/* 35x35 module: 1x1, 5x5, double 3x3 and pooled branches. */
static int inception_a(zb *b, int x, int pool_features)
{
    int br[4];
    br[0] = cbr_same(b, x, 64, 1, 1);
    br[1] = cbr_same(b, cbr_same(b, x, 48, 1, 1), 64, 5, 5);
    br[2] = cbr_same(b, cbr_same(b, cbr_same(b, x, 64, 1, 1), 96, 3, 3), 96, 3, 3);
    br[3] = avg_pool_branch(b, x, pool_features);
    return zb_concat(b, 4, br, 1);
}

/* 35x35 -> 17x17 grid reduction. */
static int inception_b(zb *b, int x)
{
    int br[3];
    br[0] = zb_conv_bn_relu(b, x, 384, 3, 3, 2, 0, 1);
    int d = cbr_same(b, cbr_same(b, x, 64, 1, 1), 96, 3, 3);
    br[1] = zb_conv_bn_relu(b, d, 96, 3, 3, 2, 0, 1);
    br[2] = zb_pool(b, XF_OP_MAX_POOL, x, 3, 2, 0);
    return zb_concat(b, 3, br, 1);
}

/* 17x17 module with 7x7 convolutions factorized into 1x7 and 7x1. */
static int inception_c(zb *b, int x, int c7)
{
    int br[4];
    br[0] = cbr_same(b, x, 192, 1, 1);
    int t = cbr_same(b, cbr_same(b, x, c7, 1, 1), c7, 1, 7);
    br[1] = cbr_same(b, t, 192, 7, 1);
    t = cbr_same(b, cbr_same(b, x, c7, 1, 1), c7, 7, 1);
    t = cbr_same(b, cbr_same(b, t, c7, 1, 7), c7, 7, 1);
    br[2] = cbr_same(b, t, 192, 1, 7);
    br[3] = avg_pool_branch(b, x, 192);
    return zb_concat(b, 4, br, 1);
}

/* 17x17 -> 8x8 grid reduction. */
static int inception_d(zb *b, int x)
{
    int br[3];
    br[0] = zb_conv_bn_relu(b, cbr_same(b, x, 192, 1, 1), 320, 3, 3, 2, 0, 1);
    int t = cbr_same(b, cbr_same(b, cbr_same(b, x, 192, 1, 1), 192, 1, 7), 192, 7, 1);
    br[1] = zb_conv_bn_relu(b, t, 192, 3, 3, 2, 0, 1);
    br[2] = zb_pool(b, XF_OP_MAX_POOL, x, 3, 2, 0);
    return zb_concat(b, 3, br, 1);
}

/* A 1x3 and a 3x1 convolution of the same input, concatenated. */
static int split_1x3_3x1(zb *b, int x)
{
    int pair[2] = {cbr_same(b, x, 384, 1, 3), cbr_same(b, x, 384, 3, 1)};
    return zb_concat(b, 2, pair, 1);
}

/* 8x8 module with expanded filter banks. */
static int inception_e(zb *b, int x)
{
    int br[4];
    br[0] = cbr_same(b, x, 320, 1, 1);
    br[1] = split_1x3_3x1(b, cbr_same(b, x, 384, 1, 1));
    br[2] = split_1x3_3x1(b, cbr_same(b, cbr_same(b, x, 448, 1, 1), 384, 3, 3));
    br[3] = avg_pool_branch(b, x, 192);
    return zb_concat(b, 4, br, 1);
}

/* Inception-v3 (Szegedy et al., 2016) at 299x299, without the auxiliary
 * classifier (inference graph). */
xf_status xf_zoo_build_inception_v3(xf_model *m, int batch, int size, xf_error *err)
{
    zb b;
    zb_init(&b, m->graph, 0x1ce97103ull, err);
    int64_t in_dims[4] = {batch, 3, size, size};
    int x = zb_input(&b, "input", 4, in_dims);
    x = zb_conv_bn_relu(&b, x, 32, 3, 3, 2, 0, 1);
    x = zb_conv_bn_relu(&b, x, 32, 3, 3, 1, 0, 1);
    x = cbr_same(&b, x, 64, 3, 3);
    x = zb_pool(&b, XF_OP_MAX_POOL, x, 3, 2, 0);
    x = cbr_same(&b, x, 80, 1, 1);
    x = zb_conv_bn_relu(&b, x, 192, 3, 3, 1, 0, 1);
    x = zb_pool(&b, XF_OP_MAX_POOL, x, 3, 2, 0);
    x = inception_a(&b, x, 32);
    x = inception_a(&b, x, 64);
    x = inception_a(&b, x, 64);
    x = inception_b(&b, x);
    static const int c7[4] = {128, 160, 160, 192};
    for (int i = 0; i < 4; i++)
        x = inception_c(&b, x, c7[i]);
    x = inception_d(&b, x);
    x = inception_e(&b, x);
    x = inception_e(&b, x);
    x = zb_flatten(&b, zb_global_avg_pool(&b, x));
    zb_output(&b, zb_dense(&b, x, 1000), "logits");
    return b.failed ? err->status : XF_OK;
}

/* ---------------------------------------------------------------- SqueezeNet */

static int conv_relu(zb *b, int x, int cout, int k, int stride, int pad)
{
    return zb_relu(b, zb_conv(b, x, cout, k, k, stride, pad, 1, true));
}

/* Fire module: a 1x1 squeeze, then 1x1 and 3x3 expands side by side. */
static int fire(zb *b, int x, int squeeze, int expand)
{
    int s = conv_relu(b, x, squeeze, 1, 1, 0);
    int e[2] = {conv_relu(b, s, expand, 1, 1, 0), conv_relu(b, s, expand, 3, 1, 1)};
    return zb_concat(b, 2, e, 1);
}

/* SqueezeNet 1.1 (Iandola et al.; the 1.1 revision with 3x3 first
 * convolution and early pooling) at 224x224.  Its max pools use floor
 * rounding: at 224x224 ceil rounding gives the same shapes. */
xf_status xf_zoo_build_squeezenet(xf_model *m, int batch, int size, xf_error *err)
{
    zb b;
    zb_init(&b, m->graph, 0x5c0ee2eull, err);
    int64_t in_dims[4] = {batch, 3, size, size};
    int x = zb_input(&b, "input", 4, in_dims);
    x = conv_relu(&b, x, 64, 3, 2, 0);
    x = zb_pool(&b, XF_OP_MAX_POOL, x, 3, 2, 0);
    x = fire(&b, fire(&b, x, 16, 64), 16, 64);
    x = zb_pool(&b, XF_OP_MAX_POOL, x, 3, 2, 0);
    x = fire(&b, fire(&b, x, 32, 128), 32, 128);
    x = zb_pool(&b, XF_OP_MAX_POOL, x, 3, 2, 0);
    x = fire(&b, fire(&b, x, 48, 192), 48, 192);
    x = fire(&b, fire(&b, x, 64, 256), 64, 256);
    x = conv_relu(&b, x, 1000, 1, 1, 0);
    zb_output(&b, zb_flatten(&b, zb_global_avg_pool(&b, x)), "logits");
    return b.failed ? err->status : XF_OK;
}
