/* NasNet-A as the reference system benchmarks it: a 7x7 stem, then three
 * stages of five normal cells and one reduction cell (128, 256, 512 filters;
 * the reductions double them), ending at 7x7x5120. */
#include "builder.h"
#include "zoo_models.h"

static int channels(zb *b, int x) { return (int)b->g->values[x].shape.dims[1]; }

static int conv_relu(zb *b, int x, int cout, int k, int stride)
{
    return zb_relu(b, zb_conv(b, x, cout, k, k, stride, -1, 1, false));
}

/* A separable convolution: depthwise (one filter per channel) then a 1x1
 * pointwise convolution, no activation in between. */
static int sep_conv(zb *b, int x, int cout, int k, int stride)
{
    int dw = zb_conv(b, x, channels(b, x), k, k, stride, -1, channels(b, x), false);
    return zb_conv(b, dw, cout, 1, 1, 1, 0, 1, false);
}

/* Both cell inputs are first squeezed to the cell's filter count by a 1x1
 * convolution.  (The two inputs of a cell always have the same spatial size
 * here: each stage starts with both set to the stage input.) */
static int squeeze(zb *b, int x, int filters) { return conv_relu(b, x, filters, 1, 1); }

static int avg3(zb *b, int x, int stride) { return zb_pool(b, XF_OP_AVERAGE_POOL, x, 3, stride, 1); }
static int max3(zb *b, int x, int stride) { return zb_pool(b, XF_OP_MAX_POOL, x, 3, stride, 1); }

/* Five pairwise sums of separable convolutions, poolings and identities of
 * the two cell inputs, concatenated: 5 * filters channels. */
static int normal_cell(zb *b, int prev, int cur, int filters)
{
    cur = squeeze(b, cur, filters);
    prev = squeeze(b, prev, filters);
    int sums[5] = {
        zb_add(b, sep_conv(b, cur, filters, 3, 1), cur),
        zb_add(b, sep_conv(b, prev, filters, 3, 1), sep_conv(b, cur, filters, 3, 1)),
        zb_add(b, avg3(b, cur, 1), prev),
        zb_add(b, avg3(b, prev, 1), avg3(b, prev, 1)),
        zb_add(b, sep_conv(b, prev, filters, 3, 1), sep_conv(b, prev, filters, 3, 1)),
    };
    return zb_concat(b, 5, sums, 1);
}

/* Halves the spatial size; 5 * filters channels. */
static int reduction_cell(zb *b, int prev, int cur, int filters)
{
    cur = squeeze(b, cur, filters);
    prev = squeeze(b, prev, filters);
    int s0 = zb_add(b, sep_conv(b, prev, filters, 7, 2), sep_conv(b, cur, filters, 5, 2));
    int s1 = zb_add(b, max3(b, cur, 2), sep_conv(b, prev, filters, 7, 2));
    int s2 = zb_add(b, avg3(b, cur, 2), sep_conv(b, prev, filters, 5, 2));
    int s3 = zb_add(b, max3(b, cur, 2), sep_conv(b, s0, filters, 3, 1));
    int s4 = zb_add(b, avg3(b, s0, 1), s1);
    int sums[5] = {s0, s1, s2, s3, s4};
    return zb_concat(b, 5, sums, 1);
}

xf_status xf_zoo_build_nasnet_a(xf_model *m, int batch, int size, xf_error *err)
{
    zb b;
    zb_init(&b, m->graph, 0x9a5e7aull, err);
    int64_t in_dims[4] = {batch, 3, size, size};
    int x = zb_input(&b, "input", 4, in_dims);
    x = conv_relu(&b, x, 64, 7, 2);
    x = max3(&b, x, 2);
    int filters = 128;
    for (int stage = 0; stage < 3; stage++) {
        int prev = x, cur = x;
        for (int i = 0; i < 5; i++) {
            int next = normal_cell(&b, prev, cur, filters);
            prev = cur;
            cur = next;
        }
        filters *= 2;
        x = reduction_cell(&b, prev, cur, filters);
    }
    x = zb_flatten(&b, zb_global_avg_pool(&b, x));
    zb_output(&b, zb_dense(&b, x, 1000), "logits");
    return b.failed ? err->status : XF_OK;
}
