/* ONNX Runtime's NCHWc ops (domain com.microsoft.nchwc), which its CPU
 * provider writes into models saved at ORT_ENABLE_ALL, replaced by standard
 * ops before the graph is imported, so that such a model runs on every
 * backend, is optimized like any other and is written back as portable
 * ONNX.
 *
 * ONNX Runtime keeps a tensor in NCHWc form as [N, C', H, W] blocks of b
 * channels (C' is C rounded up to b, the padding zeros), b being 16 on a
 * CPU with AVX-512F and 8 on other x86 CPUs.  Here such a tensor becomes
 * the standard NCHW tensor of its C' channels: ReorderInput pads the
 * channels with zeros (after a Transpose from NHWC), ReorderOutput slices
 * them off (and transposes to NHWC); Conv, whose filter ONNX Runtime
 * reordered into blocks (OIHWBiBo, or OIHWBo for a depthwise convolution
 * and one reading NCHW input), is a standard Conv of the filter put back,
 * then the Add of its Sum input and its fused activation; the pools are the
 * standard ones and Upsample is a Resize.  The standard ops ONNX Runtime
 * leaves on NCHWc tensors (element-wise ones of equal shapes, Concat of
 * whole blocks on the channels) mean the same on these tensors, and its
 * Reshapes of NCHWc tensors to [N, C'/b, H, W, b] and back, around an Add
 * of tensors whose shapes it could not prove equal, become Identity nodes.
 *
 * The model does not record b.  Its padded channel counts, the channels a
 * ReorderOutput keeps, and the 5-D Reshapes' shapes often fix it; when they
 * do not, b is what ONNX Runtime would take on this CPU, as its own warning
 * on saving such a model asks, unless XF_NCHWC_BLOCK (8 or 16) says
 * otherwise.  A graph that does not keep to ONNX Runtime's forms (a filter
 * that is not an initializer, an NCHWc tensor read by another op or
 * written as a graph output, ...) is imported as it is, its NCHWc nodes
 * opaque, with a warning saying why. */
#include "proto_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NCHWC "com.microsoft.nchwc"

enum { PLAIN = 0, BLOCKED = 1, SPLIT = 2 }; /* a value's form */

typedef struct lowering {
    const Onnx__GraphProto *gp;
    const xfp_tensor_src *src;
    xfp_arena *a;
    int64_t opset;
    int block;
    xfp_name_map producer; /* value -> node index */
    xfp_name_map init;     /* initializer -> index */
    xfp_name_map form;     /* value -> PLAIN / BLOCKED / SPLIT */
    xfp_builder b;         /* the nodes of the new graph, and its new initializers */
    Onnx__TensorProto **new_init; /* per initializer: its replacement, or NULL */
    int *filter_layout;           /* per initializer: 0, or the layout it was read in */
    int *other_uses;              /* per initializer: reads other than as an NCHWc Conv's filter */
    int *order;                   /* the nodes in an order where producers come first */
    int budget;                   /* steps left to padded_channels' walk */
    char why[512];                /* why the graph stays as it is */
} lowering;

static bool is_nchwc(const Onnx__NodeProto *np) { return np->domain && !strcmp(np->domain, NCHWC); }

static bool op_is(const Onnx__NodeProto *np, const char *op) { return np->op_type && !strcmp(np->op_type, op); }

static bool has(const char *s) { return s && s[0]; }

/* A STRING attribute as a NUL-terminated copy in buf ("" when absent). */
static const char *attr_str(const Onnx__NodeProto *np, const char *name, char *buf, size_t n)
{
    const Onnx__AttributeProto *at = xfp_node_attr(np, name);
    buf[0] = 0;
    if (at && at->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING && at->s.data)
        snprintf(buf, n, "%.*s", (int)(at->s.len < n ? at->s.len : n - 1), (const char *)at->s.data);
    return buf;
}

static bool fail(lowering *l, const Onnx__NodeProto *np, const char *fmt, const char *arg)
{
    char what[256];
    snprintf(what, sizeof what, fmt, arg ? arg : "");
    snprintf(l->why, sizeof l->why, "node '%.120s' (%.40s): %s", has(np->name) ? np->name : "?",
             np->op_type ? np->op_type : "?", what);
    return false;
}

static int form_of(const lowering *l, const char *name)
{
    int f = has(name) ? xfp_map_get(&l->form, name) : -1;
    return f < 0 ? PLAIN : f;
}

static const Onnx__TensorProto *initializer(const lowering *l, const char *name, int *index)
{
    int i = has(name) ? xfp_map_get(&l->init, name) : -1;
    if (index)
        *index = i;
    return i >= 0 ? l->gp->initializer[i] : NULL;
}

/* ------------------------------------------------------------ shapes and the block */

/* The declared channel count of a plain value (dim 1, or the last of an
 * NHWC tensor); -1 when not declared. */
static int64_t declared_channels(const lowering *l, const char *name, bool last)
{
    const Onnx__GraphProto *gp = l->gp;
    const Onnx__TensorProto *tp = initializer(l, name, NULL);
    if (tp)
        return tp->n_dims == 4 ? tp->dims[last ? 3 : 1] : -1;
    for (int pass = 0; pass < 3; pass++) {
        size_t n = pass == 0 ? gp->n_input : pass == 1 ? gp->n_value_info : gp->n_output;
        Onnx__ValueInfoProto **vis = pass == 0 ? gp->input : pass == 1 ? gp->value_info : gp->output;
        for (size_t i = 0; i < n; i++) {
            const Onnx__ValueInfoProto *vi = vis[i];
            if (!vi->name || strcmp(vi->name, name) || !vi->type || !vi->type->tensor_type ||
                !vi->type->tensor_type->shape || vi->type->tensor_type->shape->n_dim != 4)
                continue;
            const Onnx__TensorShapeProto__Dimension *d = vi->type->tensor_type->shape->dim[last ? 3 : 1];
            if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && d->dim_value > 0)
                return d->dim_value;
        }
    }
    return -1;
}

static int64_t round_up(int64_t c, int b) { return (c + b - 1) / b * b; }

/* The padded channel count of an NCHWc value, when the graph shows it:
 * a Conv's filter rows, through pools, Upsample, element-wise ops and
 * Concat.  -1 when not known. */
static int64_t padded_channels(lowering *l, const char *name, int depth)
{
    if (depth == 0)
        l->budget = 4096; /* Concats of Concats could branch without end */
    int k = has(name) && depth < 64 && l->budget-- > 0 ? xfp_map_get(&l->producer, name) : -1;
    if (k < 0)
        return -1;
    const Onnx__NodeProto *np = l->gp->node[k];
    if (is_nchwc(np) && op_is(np, "Conv")) {
        const Onnx__TensorProto *w = np->n_input > 1 ? initializer(l, np->input[1], NULL) : NULL;
        return w && w->n_dims == 4 ? w->dims[0] : -1;
    }
    if (op_is(np, "Concat")) {
        int64_t sum = 0;
        for (size_t i = 0; i < np->n_input; i++) {
            int64_t c = padded_channels(l, np->input[i], depth + 1);
            if (c < 0 || sum > INT64_MAX / 2)
                return -1;
            sum += c;
        }
        return sum;
    }
    if (is_nchwc(np) && op_is(np, "ReorderInput"))
        return -1;
    return np->n_input ? padded_channels(l, np->input[0], depth + 1) : -1;
}

static bool split_shape(const lowering *l, const Onnx__NodeProto *np, size_t n, int64_t *v)
{
    const Onnx__TensorProto *tp = np->n_input == 2 ? initializer(l, np->input[1], NULL) : NULL;
    if (!tp || tp->n_dims != 1 || tp->dims[0] != (int64_t)n || tp->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__INT64)
        return false;
    if (tp->raw_data.len == n * sizeof *v)
        memcpy(v, tp->raw_data.data, n * sizeof *v);
    else if (tp->n_int64_data == n)
        memcpy(v, tp->int64_data, n * sizeof *v);
    else
        return false;
    return v[0] == 0 && (v[1] == -1 || v[1] > 0) && v[2] == 0 && v[3] == 0; /* v[1]: -1, or the count */
}

/* Whether the graph's counts fit a block of b channels. */
static bool fits_block(lowering *l, int b)
{
    const Onnx__GraphProto *gp = l->gp;
    for (size_t k = 0; k < gp->n_node; k++) {
        const Onnx__NodeProto *np = gp->node[k];
        int64_t v[5];
        if (op_is(np, "Reshape") && !is_nchwc(np) && split_shape(l, np, 5, v) && v[4] != b)
            return false;
        if (!is_nchwc(np))
            continue;
        if (op_is(np, "Conv") && np->n_input > 1) {
            const Onnx__TensorProto *w = initializer(l, np->input[1], NULL);
            if (w && w->n_dims == 4 && w->dims[0] % b)
                return false;
        } else if (op_is(np, "ReorderOutput") && np->n_input == 1) {
            int64_t padded = padded_channels(l, np->input[0], 0), c = xfp_node_int(np, "channels", -1);
            if (padded > 0 && c > 0 && round_up(c, b) != padded)
                return false;
        }
    }
    return true;
}

static bool pick_block(lowering *l)
{
    bool fit8 = fits_block(l, 8), fit16 = fits_block(l, 16);
    const char *env = getenv("XF_NCHWC_BLOCK");
    if (env && env[0]) {
        int b = atoi(env);
        if ((b != 8 && b != 16) || !(b == 8 ? fit8 : fit16)) {
            snprintf(l->why, sizeof l->why, "XF_NCHWC_BLOCK=%.20s %s", env,
                     b == 8 || b == 16 ? "does not fit the model's channel counts" : "is neither 8 nor 16");
            return false;
        }
        l->block = b;
        return true;
    }
    if (!fit8 && !fit16) {
        snprintf(l->why, sizeof l->why, "its channel counts fit neither a block of 8 nor one of 16 channels");
        return false;
    }
    bool wide = false;
#if defined(__x86_64__) || defined(__i386__)
    wide = __builtin_cpu_supports("avx512f");
#endif
    l->block = fit8 && fit16 ? (wide ? 16 : 8) : fit16 ? 16 : 8;
    if (fit8 && fit16)
        xf_log(XF_LOG_WARN,
               "com.microsoft.nchwc: the model does not show its block of channels; taking %d, as ONNX Runtime "
               "on this CPU would (set XF_NCHWC_BLOCK=%d if the model was saved on a CPU %s AVX-512F)",
               l->block, l->block == 16 ? 8 : 16, l->block == 16 ? "without" : "with");
    return true;
}

/* ------------------------------------------------------------ the nodes */

/* The filter of Conv np put back into OIHW order, replacing its initializer. */
static bool unreorder_filter(lowering *l, const Onnx__NodeProto *np, bool blocked_input, int64_t group)
{
    int index;
    const Onnx__TensorProto *tp = initializer(l, np->input[1], &index);
    if (!tp)
        return fail(l, np, "its filter '%.100s' is not an initializer", np->input[1]);
    if (l->other_uses[index])
        return fail(l, np, "its filter '%.100s' is read by other nodes too", np->input[1]);
    xf_tensor *t = NULL;
    xf_error e = {0};
    if (xfp_tensor_decode(tp, "filter", l->src, &t, &e) != XF_OK)
        return fail(l, np, "its filter: %.200s", e.msg);
    const int64_t *d = t->shape.dims;
    int b = l->block;
    bool ok = t->dtype == XF_DT_FLOAT && t->shape.ndim == 4 && d[0] > 0 && d[1] > 0 && d[0] % b == 0;
    /* OIHWBo for a depthwise convolution and for NCHW input, else OIHWBiBo */
    int layout = !blocked_input || (group > 1 && d[1] == 1) ? 1 : 2;
    ok = ok && (layout == 1 || d[1] % b == 0);
    int64_t numel = ok ? xf_tensor_numel(t) : -1;
    if (!ok || numel <= 0 || (l->filter_layout[index] && l->filter_layout[index] != layout)) {
        xf_tensor_release(t);
        return fail(l, np, "its filter '%.100s' is not one in ONNX Runtime's blocked layouts", np->input[1]);
    }
    if (l->filter_layout[index]) {
        xf_tensor_release(t);
        return true;
    }
    float *dst = xfp_alloc(l->a, sizeof *dst * (size_t)numel);
    Onnx__TensorProto *out = xfp_alloc(l->a, sizeof *out);
    if (!dst || !out) {
        xf_tensor_release(t);
        return fail(l, np, "out of memory", NULL);
    }
    const float *s = t->data;
    int64_t o_n = d[0], i_n = d[1], k_n = d[2] * d[3];
    for (int64_t ob = 0; ob < o_n; ob += b)
        for (int64_t i = 0; i < i_n; i += layout == 1 ? 1 : b)
            for (int64_t k = 0; k < k_n; k++)
                for (int64_t bi = 0; bi < (layout == 1 ? 1 : b); bi++)
                    for (int64_t bo = 0; bo < b; bo++)
                        dst[((ob + bo) * i_n + i + bi) * k_n + k] = *s++;
    *out = *tp;
    out->raw_data.data = NULL;
    out->raw_data.len = 0;
    out->has_raw_data = false;
    out->n_float_data = (size_t)numel;
    out->float_data = dst;
    out->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__DEFAULT;
    out->has_data_location = false;
    out->n_external_data = 0;
    out->external_data = NULL;
    l->new_init[index] = out;
    l->filter_layout[index] = layout;
    xf_tensor_release(t);
    return true;
}

/* np's attributes but those named in skip (NULL-terminated), then extra. */
static bool copy_attrs(lowering *l, const Onnx__NodeProto *np, const char *const *skip, Onnx__AttributeProto **out,
                       size_t *n)
{
    *n = 0;
    for (size_t i = 0; i < np->n_attribute; i++) {
        bool keep = np->attribute[i]->name != NULL;
        for (int k = 0; keep && skip[k]; k++)
            keep = strcmp(np->attribute[i]->name, skip[k]) != 0;
        if (keep)
            out[(*n)++] = np->attribute[i];
    }
    return true;
}

static bool lower_activation(lowering *l, const Onnx__NodeProto *np, const char *in, const char *out)
{
    char act[32];
    attr_str(np, "activation", act, sizeof act);
    const Onnx__AttributeProto *pa = xfp_node_attr(np, "activation_params");
    size_t n_p = pa && pa->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS ? pa->n_floats : 0;
    const float *p = n_p ? pa->floats : NULL;
    const char *name = xfp_fresh_name(&l->b, out, "/activation");
    if (!name)
        return false;
    if (!strcmp(act, "Relu") || !strcmp(act, "Sigmoid") || !strcmp(act, "Tanh"))
        return xfp_emit(&l->b,
                        !strcmp(act, "Relu")      ? "Relu"
                        : !strcmp(act, "Sigmoid") ? "Sigmoid"
                                                  : "Tanh",
                        name, (const char *[]){in}, 1, out, NULL, 0);
    if (!strcmp(act, "LeakyRelu") && n_p == 1)
        return xfp_emit(&l->b, "LeakyRelu", name, (const char *[]){in}, 1, out,
                        (Onnx__AttributeProto *[]){xfp_new_attr_float(&l->b, "alpha", p[0])}, 1);
    if (!strcmp(act, "HardSigmoid") && n_p == 2)
        return xfp_emit(&l->b, "HardSigmoid", name, (const char *[]){in}, 1, out,
                        (Onnx__AttributeProto *[]){xfp_new_attr_float(&l->b, "alpha", p[0]),
                                                   xfp_new_attr_float(&l->b, "beta", p[1])},
                        2);
    if (!strcmp(act, "Clip") && n_p == 2) {
        const char *lo = xfp_floats_constant(&l->b, out, "/min", p, 1, 0),
                   *hi = xfp_floats_constant(&l->b, out, "/max", p + 1, 1, 0);
        return lo && hi && xfp_emit(&l->b, "Clip", name, (const char *[]){in, lo, hi}, 3, out, NULL, 0);
    }
    return fail(l, np, "activation '%.30s' (or its parameters) unknown", act);
}

static bool lower_conv(lowering *l, const Onnx__NodeProto *np)
{
    static const char *const skip[] = {"activation", "activation_params", NULL};
    if (np->n_input < 2 || np->n_input > 4 || np->n_output != 1 || !has(np->input[0]) || !has(np->output[0]))
        return fail(l, np, "not a Conv of ONNX Runtime's form", NULL);
    int in_form = form_of(l, np->input[0]);
    if (in_form == SPLIT)
        return fail(l, np, "it reads a 5-D block '%.100s'", np->input[0]);
    int64_t group = xfp_node_int(np, "group", 1);
    if (group < 1 || !unreorder_filter(l, np, in_form == BLOCKED, group))
        return l->why[0] ? false : fail(l, np, "group below 1", NULL);
    bool sum = np->n_input == 4 && has(np->input[3]);
    if (sum && form_of(l, np->input[3]) != BLOCKED)
        return fail(l, np, "its Sum input '%.100s' is not an NCHWc tensor", np->input[3]);
    char act[32];
    bool activation = attr_str(np, "activation", act, sizeof act)[0] != 0;
    const char *y = np->output[0];
    const char *conv_out = sum || activation ? xfp_fresh_name(&l->b, y, "/conv") : y;
    const char *sum_out = !sum ? conv_out : activation ? xfp_fresh_name(&l->b, y, "/sum") : y;
    Onnx__AttributeProto **ats = xfp_alloc(l->a, sizeof *ats * (np->n_attribute + 1));
    size_t n_at = 0;
    if (!conv_out || !sum_out || !ats || !copy_attrs(l, np, skip, ats, &n_at))
        return fail(l, np, "out of memory", NULL);
    size_t n_in = np->n_input > 2 && has(np->input[2]) ? 3 : 2;
    if (!xfp_emit(&l->b, "Conv", has(np->name) ? np->name : xfp_fresh_name(&l->b, y, "/node"),
                  (const char *const *)np->input, n_in, conv_out, ats, n_at))
        return fail(l, np, "out of memory", NULL);
    if (sum && !xfp_emit(&l->b, "Add", xfp_fresh_name(&l->b, y, "/add"), (const char *[]){conv_out, np->input[3]}, 2,
                         sum_out, NULL, 0))
        return fail(l, np, "out of memory", NULL);
    return !activation || lower_activation(l, np, sum_out, y);
}

static bool lower_reorder_input(lowering *l, const Onnx__NodeProto *np)
{
    if (np->n_input != 1 || np->n_output != 1 || !has(np->input[0]) || !has(np->output[0]))
        return fail(l, np, "not a ReorderInput of ONNX Runtime's form", NULL);
    bool last = xfp_node_int(np, "channels_last", 0) != 0;
    int64_t c = declared_channels(l, np->input[0], last);
    if (c < 0)
        return fail(l, np, "the channel count of its input '%.100s' is not declared", np->input[0]);
    const char *x = np->input[0], *y = np->output[0];
    bool pad = round_up(c, l->block) != c;
    if (last) {
        const char *t = pad ? xfp_fresh_name(&l->b, y, "/nchw") : y;
        if (!t || !xfp_emit(&l->b, "Transpose", xfp_fresh_name(&l->b, y, "/transpose"), &x, 1, t,
                        (Onnx__AttributeProto *[]){xfp_new_attr_ints(&l->b, "perm", (int64_t[]){0, 3, 1, 2}, 4)}, 1))
            return fail(l, np, "out of memory", NULL);
        x = t;
    }
    if (pad) {
        int64_t pads[8] = {0, 0, 0, 0, 0, round_up(c, l->block) - c, 0, 0};
        const char *p = xfp_ints_constant(&l->b, y, "/pads", pads, 8);
        if (!p || !xfp_emit(&l->b, "Pad", xfp_fresh_name(&l->b, y, "/pad"), (const char *[]){x, p}, 2, y, NULL, 0))
            return fail(l, np, "out of memory", NULL);
    } else if (!last && !xfp_emit(&l->b, "Identity", xfp_fresh_name(&l->b, y, "/identity"), &x, 1, y, NULL, 0)) {
        return fail(l, np, "out of memory", NULL);
    }
    return true;
}

static bool lower_reorder_output(lowering *l, const Onnx__NodeProto *np)
{
    int64_t c = xfp_node_int(np, "channels", -1);
    if (np->n_input != 1 || np->n_output != 1 || !has(np->input[0]) || !has(np->output[0]) || c < 1)
        return fail(l, np, "not a ReorderOutput of ONNX Runtime's form", NULL);
    if (form_of(l, np->input[0]) != BLOCKED)
        return fail(l, np, "its input '%.100s' is not an NCHWc tensor", np->input[0]);
    bool last = xfp_node_int(np, "channels_last", 0) != 0;
    const char *x = np->input[0], *y = np->output[0];
    const char *t = last ? xfp_fresh_name(&l->b, y, "/nchw") : y;
    if (padded_channels(l, x, 0) == c) { /* no padding to slice off */
        if (!t ||
            !xfp_emit(&l->b, last ? "Transpose" : "Identity",
                      xfp_fresh_name(&l->b, y, last ? "/transpose" : "/identity"), &x, 1, y,
                      (Onnx__AttributeProto *[]){xfp_new_attr_ints(&l->b, "perm", (int64_t[]){0, 2, 3, 1}, 4)}, last))
            return fail(l, np, "out of memory", NULL);
        return true;
    }
    const char *st = xfp_ints_constant(&l->b, y, "/starts", (int64_t[]){0}, 1);
    const char *en = xfp_ints_constant(&l->b, y, "/ends", &c, 1);
    const char *ax = xfp_ints_constant(&l->b, y, "/axes", (int64_t[]){1}, 1);
    if (!t || !st || !en || !ax ||
        !xfp_emit(&l->b, "Slice", xfp_fresh_name(&l->b, y, "/slice"), (const char *[]){x, st, en, ax}, 4, t, NULL, 0))
        return fail(l, np, "out of memory", NULL);
    if (last && !xfp_emit(&l->b, "Transpose", xfp_fresh_name(&l->b, y, "/transpose"), &t, 1, y,
                      (Onnx__AttributeProto *[]){xfp_new_attr_ints(&l->b, "perm", (int64_t[]){0, 2, 3, 1}, 4)}, 1))
        return fail(l, np, "out of memory", NULL);
    return true;
}

static bool lower_upsample(lowering *l, const Onnx__NodeProto *np)
{
    const Onnx__AttributeProto *sc = xfp_node_attr(np, "scales");
    if (np->n_input != 1 || np->n_output != 1 || !has(np->output[0]) || !sc || sc->n_ints != 4)
        return fail(l, np, "not an Upsample of ONNX Runtime's form", NULL);
    float scales[4];
    for (int i = 0; i < 4; i++) {
        if (sc->ints[i] < 1 || sc->ints[i] > (1 << 20))
            return fail(l, np, "a scale out of range", NULL);
        scales[i] = (float)sc->ints[i];
    }
    char mode[32], ctm[32];
    attr_str(np, "mode", mode, sizeof mode);
    attr_str(np, "coordinate_transformation_mode", ctm, sizeof ctm);
    bool linear = !strcmp(mode, "linear");
    if (!linear && mode[0] && strcmp(mode, "nearest"))
        return fail(l, np, "mode '%.30s' unknown", mode);
    if (!ctm[0] || !linear)
        strcpy(ctm, "asymmetric");
    if (strcmp(ctm, "asymmetric") && strcmp(ctm, "align_corners") && strcmp(ctm, "half_pixel"))
        return fail(l, np, "coordinate_transformation_mode '%.30s' unknown", ctm);
    const char *y = np->output[0];
    const char *s = xfp_floats_constant(&l->b, y, "/scales", scales, 4, 1);
    const char *roi = l->opset >= 13 ? "" : xfp_floats_constant(&l->b, y, "/roi", scales, 0, 1);
    char *ctm_copy = xfp_strdup(l->a, ctm);
    if (!s || !roi || !ctm_copy)
        return fail(l, np, "out of memory", NULL);
    Onnx__AttributeProto *ats[3] = {xfp_new_attr_string(&l->b, "mode", linear ? "linear" : "nearest"),
                                    xfp_new_attr_string(&l->b, "coordinate_transformation_mode", ctm_copy),
                                    xfp_new_attr_string(&l->b, "nearest_mode", "floor")};
    if (!xfp_emit(&l->b, "Resize", has(np->name) ? np->name : xfp_fresh_name(&l->b, y, "/node"),
                  (const char *[]){np->input[0], roi, s}, 3, y, ats, linear ? 2 : 3))
        return fail(l, np, "out of memory", NULL);
    return true;
}

/* A standard node: kept, unless it is one of ONNX Runtime's 5-D Reshapes;
 * the form of its output follows from its inputs'. */
static bool keep_node(lowering *l, Onnx__NodeProto *np, int *out_form)
{
    int forms[3] = {0};
    bool reshape = op_is(np, "Reshape"); /* its shape is a plain initializer */
    for (size_t i = 0; i < (reshape && np->n_input ? 1 : np->n_input); i++)
        forms[form_of(l, np->input[i])]++;
    *out_form = PLAIN;
    if (!forms[BLOCKED] && !forms[SPLIT])
        return xfp_list_push(&l->b.nodes, np) || fail(l, np, "out of memory", NULL);
    int64_t v[5];
    bool unary = op_is(np, "Relu") || op_is(np, "Sigmoid") || op_is(np, "Tanh") || op_is(np, "Identity");
    bool binary = op_is(np, "Add") || op_is(np, "Sum") || op_is(np, "Mul");
    int only = forms[BLOCKED] ? BLOCKED : SPLIT;
    bool uniform = forms[PLAIN] == 0 && (forms[BLOCKED] == 0 || forms[SPLIT] == 0) && np->n_output == 1;
    if (reshape && uniform && split_shape(l, np, only == BLOCKED ? 5 : 4, v)) { /* v[4] is the block (fits_block) */
        *out_form = only == BLOCKED ? SPLIT : BLOCKED;
        return xfp_emit(&l->b, "Identity", has(np->name) ? np->name : xfp_fresh_name(&l->b, np->output[0], "/node"),
                    (const char *const *)np->input, 1, np->output[0], NULL, 0) ||
               fail(l, np, "out of memory", NULL);
    }
    bool concat = op_is(np, "Concat") && only == BLOCKED && xfp_node_int(np, "axis", 0) == 1;
    if (!uniform || !(unary || binary || concat) || (unary && np->n_input != 1))
        return fail(l, np, "it reads '%.100s', an NCHWc tensor, as no standard op may", np->input[0]);
    *out_form = only;
    return xfp_list_push(&l->b.nodes, np) || fail(l, np, "out of memory", NULL);
}

static bool lower_node(lowering *l, Onnx__NodeProto *np)
{
    int out_form = BLOCKED;
    bool ok;
    if (!is_nchwc(np)) {
        ok = keep_node(l, np, &out_form);
    } else if (op_is(np, "Conv")) {
        ok = lower_conv(l, np);
    } else if (op_is(np, "ReorderInput")) {
        ok = lower_reorder_input(l, np);
    } else if (op_is(np, "ReorderOutput")) {
        ok = lower_reorder_output(l, np);
        out_form = PLAIN;
    } else if (op_is(np, "Upsample")) {
        ok = form_of(l, np->n_input ? np->input[0] : NULL) == BLOCKED ? lower_upsample(l, np)
                                                                      : fail(l, np, "its input is not NCHWc", NULL);
    } else if (op_is(np, "MaxPool") || op_is(np, "AveragePool") || op_is(np, "GlobalMaxPool") ||
               op_is(np, "GlobalAveragePool")) {
        Onnx__NodeProto *c = xfp_alloc(l->a, sizeof *c);
        if (!c || np->n_input != 1 || np->n_output != 1 || form_of(l, np->input[0]) != BLOCKED)
            return fail(l, np, c ? "not a pool of ONNX Runtime's form" : "out of memory", NULL);
        *c = *np;
        c->domain = (char *)"";
        ok = xfp_list_push(&l->b.nodes, c) || fail(l, np, "out of memory", NULL);
    } else {
        return fail(l, np, "an NCHWc op xflow does not know", NULL);
    }
    for (size_t i = 0; ok && i < np->n_output; i++)
        if (has(np->output[i]) && !xfp_map_put(&l->form, np->output[i], out_form))
            return fail(l, np, "out of memory", NULL);
    return ok;
}

/* ------------------------------------------------------------ the graph */

/* l->order: the nodes with every producer before its readers (a graph's
 * nodes may come in any order).  False when out of memory or on a cycle. */
static bool sort_nodes(lowering *l)
{
    const Onnx__GraphProto *gp = l->gp;
    size_t n = gp->n_node, n_edges = 0;
    for (size_t k = 0; k < n; k++)
        n_edges += gp->node[k]->n_input;
    int *pending = xfp_alloc(l->a, sizeof(int) * (n + 1)), *first = xfp_alloc(l->a, sizeof(int) * (n + 2));
    int *fill = xfp_alloc(l->a, sizeof(int) * (n + 2)), *readers = xfp_alloc(l->a, sizeof(int) * (n_edges + 1));
    l->order = xfp_alloc(l->a, sizeof(int) * (n + 1));
    if (!pending || !first || !fill || !readers || !l->order) {
        snprintf(l->why, sizeof l->why, "out of memory");
        return false;
    }
    for (int pass = 0; pass < 2; pass++) { /* count each producer's readers, then list them */
        for (size_t k = 0; k < n; k++)
            for (size_t i = 0; i < gp->node[k]->n_input; i++) {
                int p = has(gp->node[k]->input[i]) ? xfp_map_get(&l->producer, gp->node[k]->input[i]) : -1;
                if (p < 0 || p == (int)k)
                    continue;
                if (pass == 0) {
                    first[p + 1]++;
                    pending[k]++;
                } else {
                    readers[fill[p]++] = (int)k;
                }
            }
        for (size_t k = 0; pass == 0 && k < n; k++)
            first[k + 1] += first[k];
        memcpy(fill, first, sizeof(int) * (n + 1));
    }
    size_t done = 0, queued = 0;
    for (size_t k = 0; k < n; k++)
        if (!pending[k])
            l->order[queued++] = (int)k;
    for (; done < queued; done++) {
        int k = l->order[done];
        for (int r = first[k]; r < first[k + 1]; r++)
            if (--pending[readers[r]] == 0)
                l->order[queued++] = readers[r];
    }
    if (queued < n)
        snprintf(l->why, sizeof l->why, "its nodes form a cycle");
    return queued == n;
}

static bool index_graph(lowering *l)
{
    const Onnx__GraphProto *gp = l->gp;
    bool ok = xfp_builder_init(&l->b, l->a, gp);
    for (size_t i = 0; ok && i < gp->n_initializer; i++)
        ok = !has(gp->initializer[i]->name) || xfp_map_put(&l->init, gp->initializer[i]->name, (int)i);
    for (size_t k = 0; ok && k < gp->n_node; k++)
        for (size_t i = 0; ok && i < gp->node[k]->n_output; i++)
            ok = !has(gp->node[k]->output[i]) || xfp_map_put(&l->producer, gp->node[k]->output[i], (int)k);
    l->new_init = xfp_alloc(l->a, sizeof *l->new_init * (gp->n_initializer + 1));
    l->filter_layout = xfp_alloc(l->a, sizeof *l->filter_layout * (gp->n_initializer + 1));
    l->other_uses = xfp_alloc(l->a, sizeof *l->other_uses * (gp->n_initializer + 1));
    ok = ok && l->new_init && l->filter_layout && l->other_uses;
    for (size_t k = 0; ok && k < gp->n_node; k++) {
        const Onnx__NodeProto *np = gp->node[k];
        for (size_t i = 0; i < np->n_input; i++) {
            int index = has(np->input[i]) ? xfp_map_get(&l->init, np->input[i]) : -1;
            if (index >= 0 && !(i == 1 && is_nchwc(np) && op_is(np, "Conv")))
                l->other_uses[index]++;
        }
    }
    if (!ok) {
        snprintf(l->why, sizeof l->why, "out of memory");
        return false;
    }
    return sort_nodes(l);
}

/* The lowered graph; false with l->why set when it cannot be made. */
static bool lower_graph(lowering *l, const Onnx__GraphProto **out)
{
    const Onnx__GraphProto *gp = l->gp;
    if (l->opset < 11) {
        snprintf(l->why, sizeof l->why, "the model imports ONNX's default domain at opset %lld, below 11",
                 (long long)l->opset);
        return false;
    }
    if (!index_graph(l) || !pick_block(l))
        return false;
    for (size_t k = 0; k < gp->n_node; k++)
        if (!lower_node(l, gp->node[l->order[k]]))
            return false;
    for (size_t i = 0; i < gp->n_output; i++)
        if (has(gp->output[i]->name) && form_of(l, gp->output[i]->name) != PLAIN) {
            snprintf(l->why, sizeof l->why, "graph output '%.100s' is an NCHWc tensor", gp->output[i]->name);
            return false;
        }
    const Onnx__GraphProto *g = xfp_builder_graph(&l->b, gp, l->new_init);
    if (!g) {
        snprintf(l->why, sizeof l->why, "out of memory");
        return false;
    }
    *out = g;
    return true;
}

xf_status xfp_lower_nchwc(const Onnx__ModelProto *mp, const xfp_tensor_src *src, xfp_arena *arena,
                          const Onnx__GraphProto **graph, int *lowered, xf_error *err)
{
    const Onnx__GraphProto *gp = *graph;
    *lowered = 0;
    int n = 0;
    for (size_t k = 0; k < gp->n_node; k++)
        n += is_nchwc(gp->node[k]);
    if (!n)
        return XF_OK;
    int64_t opset = xfp_model_opset(mp, "");
    lowering l = {.gp = gp, .src = src, .a = arena, .opset = opset > 1 ? opset : 1};
    const Onnx__GraphProto *out = NULL;
    bool ok = lower_graph(&l, &out);
    xfp_map_free(&l.producer);
    xfp_map_free(&l.init);
    xfp_map_free(&l.form);
    xfp_builder_free(&l.b);
    if (!ok && !strcmp(l.why, "out of memory"))
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    if (!ok) {
        xf_log(XF_LOG_WARN, "com.microsoft.nchwc: %d node%s kept as written (ONNX Runtime's CPU layout, which "
               "xflow's runtimes do not run): %s", n, n == 1 ? "" : "s", l.why);
        return XF_OK;
    }
    *graph = out;
    *lowered = n;
    xf_log(XF_LOG_INFO, "%d com.microsoft.nchwc node%s replaced by standard ops (blocks of %d channels)", n,
           n == 1 ? "" : "s", l.block);
    return XF_OK;
}
