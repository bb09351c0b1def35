/* What the cpu backend's MatMulNBits paths share (cpu_dnnl_llm.c: the
 * paths that repack the weight or read it as stored, and the choice
 * between them; cpu_dnnl_nbits_tiled.c: products on tiles of the weight
 * dequantized at each run). */
#ifndef XF_CPU_DNNL_NBITS_H
#define XF_CPU_DNNL_NBITS_H

#include "cpu_dnnl.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define NB_X86 1
#else
#define NB_X86 0
#endif

static inline bool has_input(const xf_node *n, int k) { return k < n->n_inputs && n->inputs[k] >= 0; }

/* A 4- or 8-bit weight: N x blocks blobs of bs x bits / 8 bytes, its
 * scales and uint8 zero points (packed as the codes; NULL: 2^(bits - 1)). */
typedef struct nb_geom {
    int64_t k, n, bs, blocks, blob, zrow, bits;
    const uint8_t *b, *zp;
    const float *scale;
} nb_geom;

/* a node's geometry */
static inline nb_geom geom_of(const xf_node *n, const xf_tensor_view *in)
{
    const xf_attn_attrs *t = &n->attrs.attn;
    nb_geom g = {.k = t->nb_k, .n = t->nb_n, .bs = t->nb_block, .bits = t->nb_bits, .b = in[1].data,
                 .scale = in[2].data};
    g.blocks = (g.k + g.bs - 1) / g.bs;
    g.blob = g.bs * g.bits / 8;
    g.zrow = g.bits == 8 ? g.blocks : (g.blocks + 1) / 2;
    g.zp = has_input(n, 3) ? in[3].data : NULL;
    return g;
}

static inline unsigned zero_point(const nb_geom *g, int64_t r, int64_t blk)
{
    if (g->bits == 8)
        return g->zp ? g->zp[r * g->zrow + blk] : 128u;
    return g->zp ? (unsigned)(g->zp[r * g->zrow + blk / 2] >> (blk % 2 * 4)) & 15u : 8u;
}

/* Whether float loops may use AVX-512: the CPU has it, and oneDNN may
 * (DNNL_MAX_CPU_ISA). */
static inline bool float512(void)
{
#if NB_X86
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           (dnnl_get_effective_cpu_isa() & dnnl_cpu_isa_avx512_core & ~dnnl_cpu_isa_avx2) != 0;
#else
    return false;
#endif
}

/* Row a (k values) into out with each 32 values even ones first, then
 * odd ones, as a 16-byte group of 4-bit codes holds them in its low and
 * high nibbles (the AVX-512 loops read the codes so, without shuffles). */
static inline void even_odd(const float *a, int64_t k, float *out)
{
    for (int64_t c = 0; c < k; c++)
        out[c / 32 * 32 + c % 2 * 16 + c % 32 / 2] = a[c];
}

/* The run of a node whose weight is dequantized a tile of columns at a
 * time, each tile one sgemm (cpu_dnnl_nbits_tiled.c). */
xf_status xf_dn_nbits_tiled_run(xf_dn_node *st, const xf_node *n, const xf_tensor_view *in,
                                const xf_tensor_view *out, xf_error *err);

#endif
