/* Structural graph hashing, for the search's set of seen graphs.
 *
 * Every value gets a hash from what computes it, never from its name:
 *   graph input   its position in g->inputs, dtype and shape (and, in
 *                 IR < 4 models, the default an initializer gives it);
 *   initializer   dtype, shape and the tensor: its bytes when it holds at
 *                 most HASH_CONTENT_BYTES (shape vectors, scalars, small
 *                 biases: the constants folding and rewrites create anew,
 *                 so equal ones must hash equal), else its identity.
 *                 Weights are shared by reference between all the graphs a
 *                 search creates, so the same weight is the same tensor;
 *                 hashing megabytes per candidate graph would dominate the
 *                 search.  Two distinct large tensors with equal bytes hash
 *                 differently: a missed deduplication, never a wrong one;
 *   node output   the node's hash (op, every attribute field, or an opaque
 *                 node's op_type, domain and serialized NodeProto; the
 *                 hashes of its inputs in order), the output index, dtype
 *                 and shape.
 * The graph's hash covers its inputs and outputs in order and the multiset
 * of node hashes (an order-independent sum), so node order and names do
 * not matter and dead nodes still count. */
#include "xf_core.h"

#include <stdlib.h>
#include <string.h>

#define HASH_CONTENT_BYTES 1024
#define HASH_CONTENT_STRINGS 64

/* Distinct starting points, so that e.g. a graph input and a constant with
 * equal dtype and shape do not collide by construction. */
enum { SEED_INPUT = 1, SEED_CONST, SEED_ORPHAN, SEED_NODE, SEED_OUTPUT, SEED_GRAPH, SEED_ABSENT };

/* splitmix64's finalizer: a bijective mix with full avalanche. */
static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* Appends v to the running hash h (order-sensitive). */
static void put(uint64_t *h, uint64_t v) { *h = mix64(*h ^ v) + 0x9e3779b97f4a7c15ULL; }

static void put_float(uint64_t *h, float f)
{
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    put(h, bits);
}

static void put_bytes(uint64_t *h, const void *p, size_t n)
{
    const unsigned char *b = p;
    put(h, n);
    for (; n >= 8; n -= 8, b += 8) {
        uint64_t w;
        memcpy(&w, b, 8);
        put(h, w);
    }
    uint64_t tail = 0;
    if (n)
        memcpy(&tail, b, n);
    put(h, tail);
}

static void put_str(uint64_t *h, const char *s)
{
    if (s)
        put_bytes(h, s, strlen(s));
    else
        put(h, SEED_ABSENT);
}

static void put_ints(uint64_t *h, const int64_t *v, int n, int cap)
{
    n = n < 0 ? 0 : n > cap ? cap : n;
    put(h, (uint64_t)n);
    for (int i = 0; i < n; i++)
        put(h, (uint64_t)v[i]);
}

static void put_shape(uint64_t *h, const xf_shape *s)
{
    put_ints(h, s->dims, s->ndim, XF_MAX_DIMS);
    put(h, (uint64_t)(int64_t)s->ndim); /* unknown (-1) differs from scalar (0) */
}

static void put_tensor(uint64_t *h, const xf_tensor *t)
{
    if (!t) {
        put(h, SEED_ABSENT);
        return;
    }
    put(h, (uint64_t)t->dtype);
    put_shape(h, &t->shape);
    int64_t numel = xf_tensor_numel(t);
    if (t->dtype == XF_DT_STRING && t->strings && numel <= HASH_CONTENT_STRINGS) {
        for (int64_t i = 0; i < numel; i++)
            put_str(h, t->strings[i]);
    } else if (t->dtype != XF_DT_STRING && t->nbytes <= HASH_CONTENT_BYTES) {
        put_bytes(h, t->data, t->data ? t->nbytes : 0);
    } else {
        put(h, (uint64_t)(uintptr_t)t);
    }
}

/* LSTM and GRU attributes; nothing when none is set, so that the hashes
 * of every other op stay as they were. */
static void put_rnn(uint64_t *h, const xf_rnn_attrs *r)
{
    static const xf_rnn_attrs none;
    if (xf_rnn_attrs_equal(r, &none))
        return;
    put(h, (uint64_t)r->hidden_size);
    put(h, (uint64_t)(r->direction | r->layout << 4 | r->linear_before_reset << 8 | r->input_forget << 12 |
                      r->has_clip << 16) << 16 | 0x2e);
    if (r->has_clip)
        put_float(h, r->clip);
    put(h, (uint64_t)r->n_acts);
    for (int i = 0; i < r->n_acts && i < XF_RNN_MAX_ACTS; i++) {
        put(h, r->acts[i]);
        put_float(h, r->act_alpha[i]);
        put_float(h, r->act_beta[i]);
    }
}

/* The attention family's attributes; nothing when none is set. */
static void put_attn(uint64_t *h, const xf_attn_attrs *t)
{
    static const xf_attn_attrs none;
    if (xf_attn_attrs_equal(t, &none))
        return;
    put(h, (uint64_t)t->num_heads << 16 | 0xa7);
    put(h, (uint64_t)(t->unidirectional | t->interleaved << 1 | t->mask_index_type << 2));
    put_ints(h, t->qkv_sizes, t->n_qkv_sizes, 3);
    put_float(h, t->mask_filter_value);
    put_float(h, t->scale);
    put(h, (uint64_t)t->rotary_dim);
    put(h, (uint64_t)t->kv_num_heads << 8 | (uint64_t)(t->do_rotary | t->smooth_softmax << 1));
    put(h, (uint64_t)t->local_window_size);
    put_float(h, t->softcap);
    int64_t nb[5] = {t->nb_k, t->nb_n, t->nb_bits, t->nb_block, t->nb_accuracy};
    put_ints(h, nb, 5, 5);
    put(h, (uint64_t)t->qk_mode << 8 | (uint64_t)t->softmax_precision);
    put(h, (uint64_t)t->left_window);
    put(h, (uint64_t)t->right_window);
    put(h, (uint64_t)(t->linear_rule | t->conv_silu << 4) << 16 | 0x1a7);
    put(h, (uint64_t)t->chunk_size);
}

/* Every field of the block.  Fields an op does not use hold their defaults
 * (xf_attrs contract), so hashing them all cannot separate equal nodes of
 * one op, and cannot miss a field that matters.  Count-limited arrays are
 * hashed up to their counts only. */
static void put_attrs(uint64_t *h, const xf_attrs *a)
{
    put(h, (uint64_t)a->n_spatial);
    put_ints(h, a->kernel, XF_MAX_SPATIAL, XF_MAX_SPATIAL);
    put_ints(h, a->strides, XF_MAX_SPATIAL, XF_MAX_SPATIAL);
    put_ints(h, a->pads, 2 * XF_MAX_SPATIAL, 2 * XF_MAX_SPATIAL);
    put_ints(h, a->dilations, XF_MAX_SPATIAL, XF_MAX_SPATIAL);
    put(h, (uint64_t)a->group);
    put(h, (uint64_t)a->auto_pad);
    put(h, (uint64_t)a->ceil_mode);
    put(h, (uint64_t)a->count_include_pad);
    if (a->storage_order) /* MaxPool's (0 for other ops) */
        put(h, (uint64_t)a->storage_order << 16 | 0x50);
    if (a->offset_group) /* DeformConv's (0 for other ops) */
        put(h, (uint64_t)a->offset_group << 16 | 0xdc);
    put(h, (uint64_t)a->activation);
    for (int i = 0; i < XF_MAX_SPATIAL; i++)
        if (a->output_padding[i] || a->has_output_shape) { /* ConvTranspose's (0 for other ops) */
            put(h, (uint64_t)a->has_output_shape << 16 | 0x0c7);
            put_ints(h, a->output_padding, XF_MAX_SPATIAL, XF_MAX_SPATIAL);
            put_ints(h, a->output_shape, XF_MAX_SPATIAL, XF_MAX_SPATIAL);
            break;
        }

    put(h, (uint64_t)a->axis);
    put_ints(h, a->axes, a->n_axes, XF_MAX_DIMS);
    put(h, a->has_axes);
    put_ints(h, a->perm, a->n_perm, XF_MAX_DIMS);
    put(h, (uint64_t)a->keepdims);
    put(h, (uint64_t)a->noop_with_empty_axes);
    put(h, (uint64_t)a->num_outputs);
    put_ints(h, a->split, a->n_split, (int)(sizeof a->split / sizeof a->split[0]));
    put(h, (uint64_t)a->allowzero);
    if (a->fmod)
        put(h, 0xf30d);
    if (a->batch_dims)
        put(h, (uint64_t)a->batch_dims << 16 | 0xbd);
    if (a->topk_smallest || a->topk_unsorted)
        put(h, (uint64_t)(a->topk_smallest | a->topk_unsorted << 1) << 16 | 0x7c);
    if (a->reduction)
        put(h, (uint64_t)a->reduction << 16 | 0x5c);
    put_rnn(h, &a->rnn);
    if (a->block_size)
        put(h, (uint64_t)a->block_size << 8 | 0xb5);
    if (a->output_dtype || a->no_saturate || a->round_mode)
        put(h, (uint64_t)(a->output_dtype | a->no_saturate << 8 | a->round_mode << 9) << 16 | 0x9d);
    if (a->roi_output_h || a->roi_output_w || a->roi_sampling_ratio || a->roi_spatial_scale != 0 || a->roi_max ||
        a->roi_output_half_pixel) { /* RoiAlign's (all 0 for other ops) */
        put(h, (uint64_t)(a->roi_max | a->roi_output_half_pixel << 1) << 16 | 0x7a);
        put(h, (uint64_t)a->roi_output_h);
        put(h, (uint64_t)a->roi_output_w);
        put(h, (uint64_t)a->roi_sampling_ratio);
        put_float(h, a->roi_spatial_scale);
    }
    if (a->grid_mode || a->grid_padding || a->grid_align_corners) /* GridSample's (all 0 for other ops) */
        put(h, (uint64_t)(a->grid_mode | a->grid_padding << 4 | a->grid_align_corners << 8) << 16 | 0x65);
    if (a->dft_inverse || a->dft_onesided || a->window_symmetric) /* the signal ops' (0 for other ops) */
        put(h, (uint64_t)(a->dft_inverse | a->dft_onesided << 1 | a->window_symmetric << 2) << 16 | 0xdf);
    if (a->center_point_box)
        put(h, (uint64_t)a->center_point_box << 16 | 0xcb);
    /* IsInf's, Gelu's, BitShift's and PRelu's flags (all 0 for other ops) */
    int elem = a->isinf_no_neg | a->isinf_no_pos << 1 | a->gelu_tanh << 2 | a->shift_right << 3 |
               a->prelu_channels << 4;
    if (elem)
        put(h, (uint64_t)elem << 16 | 0xe1);
    if (a->select_last_index || a->cumsum_exclusive || a->cumsum_reverse || a->lp_p)
        put(h, (uint64_t)(a->select_last_index | a->cumsum_exclusive << 1 | a->cumsum_reverse << 2 | a->lp_p << 3)
                       << 16 |
                   0xa6);
    if (a->lrn_size || a->lrn_bias != 0) { /* LRN's (both 0 for other ops) */
        put(h, (uint64_t)a->lrn_size);
        put_float(h, a->lrn_bias);
    }
    if (a->trilu_lower || a->depth_crd)
        put(h, (uint64_t)(a->trilu_lower | a->depth_crd << 1) << 16 | 0x71);
    put_attn(h, &a->attn);
    if (a->onehot_legacy || a->has_axis)
        put(h, (uint64_t)(a->onehot_legacy | a->has_axis << 1) << 16 | 0x1a);
    if (a->bn_training) {
        put(h, 0xb7);
        put_float(h, a->bn_momentum);
    }
    if (a->eye_k) {
        put(h, 0xe7e);
        put(h, (uint64_t)a->eye_k);
    }
    if (a->resize_mode || a->resize_coord || a->resize_nearest || a->resize_exclude || a->resize_antialias ||
        a->resize_keep)
        put(h, (uint64_t)(a->resize_mode | a->resize_coord << 4 | a->resize_nearest << 8 | a->resize_exclude << 12 |
                          a->resize_antialias << 13 | a->resize_keep << 14)
                       << 16 |
                   0x5e);
    put(h, a->softmax_legacy);
    if (a->ms_act || a->trans_batch_a || a->trans_batch_b) { /* contrib ops' (all 0 for other ops) */
        put(h, (uint64_t)(a->ms_act | a->trans_batch_a << 8 | a->trans_batch_b << 9) << 16 | 0x3c);
        put_float(h, a->ms_act_params[0]);
        put_float(h, a->ms_act_params[1]);
    }

    put_float(h, a->alpha);
    put_float(h, a->beta);
    put_float(h, a->epsilon);
    put(h, (uint64_t)a->trans_a);
    put(h, (uint64_t)a->trans_b);
    put(h, (uint64_t)a->to);
    put(h, (uint64_t)a->start);
    put(h, (uint64_t)a->end);
    put(h, a->has_end);

    put(h, (uint64_t)a->pad_mode);
    put_float(h, a->pad_value);
    put_ints(h, a->pad_pads, a->n_pads, 2 * XF_MAX_DIMS);
    put(h, a->has_pads);

    put_float(h, a->clip_min);
    put_float(h, a->clip_max);
    put(h, a->has_clip_attrs);

    put_ints(h, a->slice_starts, a->n_slice, XF_MAX_DIMS);
    put_ints(h, a->slice_ends, a->n_slice, XF_MAX_DIMS);
    put_ints(h, a->slice_axes, a->n_slice, XF_MAX_DIMS);
    put(h, a->has_slice_attrs);
    put(h, a->has_slice_axes);

    put_tensor(h, a->value);
    /* nothing for the defaults, so that adding these fields changed no
     * other node's hash (the generator's choices depend on hashes) */
    if (a->new_axis || a->opt_type) {
        put(h, (uint64_t)(a->new_axis | a->opt_type << 1) << 16 | 0x5c);
        put_shape(h, &a->opt_shape);
    }
    if (a->rand_a != 0 || a->rand_b != 0 || a->rand_has_seed || a->rand_has_shape || a->sample_size) {
        put(h, (uint64_t)(a->rand_has_seed | a->rand_has_shape << 1) << 16 | 0x4a);
        put_float(h, a->rand_a);
        put_float(h, a->rand_b);
        put_float(h, a->rand_seed);
        put(h, (uint64_t)a->sample_size);
        put_shape(h, &a->rand_shape);
    }
}

/* A value id as the hash of that value; ids out of range (an invalid
 * graph) hash as absent rather than read out of bounds. */
static uint64_t value_ref(const uint64_t *vh, int n_values, int v)
{
    return v >= 0 && v < n_values ? vh[v] : SEED_ABSENT;
}

uint64_t xf_hash_node_attrs(const xf_node *n)
{
    uint64_t h = SEED_NODE;
    put(&h, (uint64_t)n->op);
    if (n->op == XF_OP_OPAQUE && n->opaque) {
        put_str(&h, n->opaque->op_type);
        put_str(&h, n->opaque->domain);
        put_bytes(&h, n->opaque->proto, n->opaque->proto ? n->opaque->proto_len : 0);
    } else {
        put_attrs(&h, &n->attrs);
    }
    return h;
}

/* The node's hash continues the running hash of its op and attributes. */
uint64_t xf_hash_node(uint64_t attrs_hash, const xf_node *n, const uint64_t *value_hash, int n_values)
{
    uint64_t h = attrs_hash;
    put(&h, (uint64_t)n->n_inputs);
    for (int k = 0; k < n->n_inputs; k++)
        put(&h, value_ref(value_hash, n_values, n->inputs[k]));
    put(&h, (uint64_t)n->n_outputs);
    return h;
}

uint64_t xf_hash_node_output(uint64_t node_hash, int k, const xf_value *v)
{
    uint64_t h = SEED_OUTPUT;
    put(&h, node_hash);
    put(&h, (uint64_t)k);
    put(&h, (uint64_t)v->dtype);
    put_shape(&h, &v->shape);
    return h;
}

uint64_t xf_hash_source(const xf_value *v)
{
    uint64_t h = v->init ? SEED_CONST : SEED_ORPHAN;
    put(&h, (uint64_t)v->dtype);
    put_shape(&h, &v->shape);
    if (v->init)
        put_tensor(&h, v->init);
    return h;
}

uint64_t xf_hash_node_term(uint64_t node_hash) { return mix64(node_hash); }

uint64_t xf_hash_combine(const xf_graph *g, const uint64_t *value_hash, int n_nodes, uint64_t node_sum)
{
    uint64_t h = SEED_GRAPH;
    put(&h, (uint64_t)g->n_inputs);
    for (int k = 0; k < g->n_inputs; k++)
        put(&h, value_ref(value_hash, g->n_values, g->inputs[k]));
    put(&h, (uint64_t)n_nodes);
    put(&h, node_sum);
    put(&h, (uint64_t)g->n_outputs);
    for (int k = 0; k < g->n_outputs; k++)
        put(&h, value_ref(value_hash, g->n_values, g->outputs[k]));
    return h;
}

/* Fills vh (n_values), and when not NULL attrs and nh (n_nodes); returns
 * the graph's hash. */
static uint64_t hash_into(const xf_graph *g, uint64_t *vh, uint64_t *attrs, uint64_t *nh, uint64_t *sum)
{
    for (int v = 0; v < g->n_values; v++)
        vh[v] = xf_hash_source(&g->values[v]);
    for (int k = 0; k < g->n_inputs; k++) {
        int v = g->inputs[k];
        if (v < 0 || v >= g->n_values)
            continue;
        uint64_t h = SEED_INPUT;
        put(&h, (uint64_t)k);
        put(&h, vh[v]);
        vh[v] = h;
    }
    /* Nodes are in topological order, so inputs are hashed before use. */
    uint64_t node_sum = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const xf_node *n = &g->nodes[i];
        uint64_t ah = xf_hash_node_attrs(n);
        uint64_t h = xf_hash_node(ah, n, vh, g->n_values);
        if (attrs) {
            attrs[i] = ah;
            nh[i] = h;
        }
        node_sum += xf_hash_node_term(h);
        for (int k = 0; k < n->n_outputs; k++) {
            int v = n->outputs[k];
            if (v >= 0 && v < g->n_values)
                vh[v] = xf_hash_node_output(h, k, &g->values[v]);
        }
    }
    if (sum)
        *sum = node_sum;
    return xf_hash_combine(g, vh, g->n_nodes, node_sum);
}

uint64_t xf_graph_hash(const xf_graph *g)
{
    uint64_t *vh = calloc((size_t)(g->n_values > 0 ? g->n_values : 1), sizeof *vh);
    if (!vh)
        return 0;
    uint64_t h = hash_into(g, vh, NULL, NULL, NULL);
    free(vh);
    return h;
}

xf_status xf_graph_hashes_compute(const xf_graph *g, xf_graph_hashes *out, xf_error *err)
{
    memset(out, 0, sizeof *out);
    out->value = malloc(sizeof *out->value * (size_t)(g->n_values + 1));
    out->node_attrs = malloc(sizeof *out->node_attrs * (size_t)(g->n_nodes + 1));
    out->node = malloc(sizeof *out->node * (size_t)(g->n_nodes + 1));
    if (!out->value || !out->node_attrs || !out->node) {
        xf_graph_hashes_free(out);
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory hashing %d nodes", g->n_nodes);
    }
    out->graph = hash_into(g, out->value, out->node_attrs, out->node, &out->node_sum);
    return XF_OK;
}

void xf_graph_hashes_free(xf_graph_hashes *h)
{
    free(h->value);
    free(h->node_attrs);
    free(h->node);
    memset(h, 0, sizeof *h);
}
