/* libFuzzer harness: a model that loads runs on cpu_ref (or the backend
 * XF_FUZZ_BACKEND names: `cpu` reaches its own kernels and the rewrites it
 * makes to a session's graph) with seeded random inputs without crashing,
 * whatever its attributes and shapes: errors are fine, memory errors and
 * undefined behaviour are findings.  Models whose
 * run would be large (a value over 2^16 elements, a node over 2^26
 * operand-element products, where shapes are known before the run) are
 * skipped, to keep every execution short; random integer inputs are at
 * most 9, so the shapes that depend on them stay small, and the session's
 * limit of 1 MiB per tensor stops those that depend on a mutated constant
 * (a Range inside a Loop body or a FlexAttention modifier).  A map input
 * gets three keys. */
#include "xf_proto.h"
#include "xf_runtime.h"

#include <stdlib.h>
#include <string.h>

static void quiet(int level, const char *msg, void *user)
{
    (void)level;
    (void)msg;
    (void)user;
}

static bool small_enough(const xf_graph *g)
{
    for (int v = 0; v < g->n_values; v++) {
        int64_t n = xf_shape_numel(&g->values[v].shape);
        if (n > (1 << 16))
            return false;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const xf_node *nd = &g->nodes[i];
        int64_t in = 0, out = 0;
        for (int k = 0; k < nd->n_inputs; k++)
            in += nd->inputs[k] >= 0 && xf_shape_numel(&g->values[nd->inputs[k]].shape) > 0
                      ? xf_shape_numel(&g->values[nd->inputs[k]].shape)
                      : 0;
        for (int k = 0; k < nd->n_outputs; k++)
            out += nd->outputs[k] >= 0 && xf_shape_numel(&g->values[nd->outputs[k]].shape) > 0
                       ? xf_shape_numel(&g->values[nd->outputs[k]].shape)
                       : 0;
        if (in * out > ((int64_t)1 << 26))
            return false;
    }
    return true;
}

/* A map input: keys "a" "b" "c" or 0 1 2 to random values. */
static xf_tensor *random_map(const xf_value *v, uint64_t seed)
{
    xf_shape three = {1, {3}};
    xf_tensor *keys = v->key_dtype == XF_DT_STRING ? xf_tensor_create(XF_DT_STRING, &three)
                                                   : xf_tensor_random_ints(XF_DT_INT64, &three, 0, 0, 1);
    for (int64_t i = 0; keys && i < 3; i++) {
        if (keys->dtype == XF_DT_STRING)
            keys->strings[i] = strdup((const char *[]){"a", "b", "c"}[i]);
        else
            ((int64_t *)keys->data)[i] = i;
    }
    xf_tensor *values = keys ? xf_tensor_random(v->dtype, &three, seed) : NULL;
    xf_tensor *m = values ? xf_map_create(keys, values) : NULL;
    xf_tensor_release(keys);
    xf_tensor_release(values);
    return m;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    xf_log_set(quiet, NULL, XF_LOG_WARN);
    xf_load_options opt = {.max_tensor_bytes = 1 << 18};
    xf_error err;
    xf_model *m = NULL;
    if (xf_model_load_buffer(data, size, NULL, &opt, &m, &err) != XF_OK)
        return 0;
    xf_session *s = NULL;
    xf_session_options sopt = {.max_tensor_bytes = 1 << 20};
    const char *backend = getenv("XF_FUZZ_BACKEND");
    if (small_enough(m->graph) &&
        xf_session_create(m->graph, xf_model_opset(m), backend ? backend : "cpu_ref", &sopt, &s, &err) == XF_OK) {
        const xf_graph *g = xf_session_graph(s);
        xf_tensor **in = calloc((size_t)g->n_inputs + 1, sizeof *in);
        xf_tensor **out = calloc((size_t)g->n_outputs + 1, sizeof *out);
        bool ok = in && out;
        for (int i = 0; ok && i < g->n_inputs; i++) {
            const xf_value *v = &g->values[g->inputs[i]];
            in[i] = v->kind == XF_VK_MAP ? random_map(v, (uint64_t)i + 1)
                                         : xf_tensor_random(v->dtype, &v->shape, (uint64_t)i + 1);
            ok = in[i] != NULL;
        }
        if (ok && xf_session_run(s, in, out, &err) == XF_OK)
            for (int k = 0; k < g->n_outputs; k++)
                xf_tensor_release(out[k]);
        for (int i = 0; in && i < g->n_inputs; i++)
            xf_tensor_release(in[i]);
        free(in);
        free(out);
    }
    xf_session_free(s);
    xf_model_free(m);
    return 0;
}
