/* Files of values (the inputs and outputs of xflow-run and of ONNX's test
 * data): TensorProto files, and onnx-data.proto's SequenceProto,
 * OptionalProto and MapProto, which the generated code lacks, read from
 * and written to the wire here; a TensorProto inside one is read and
 * written by tensor_pb.c. */
#include "proto_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static xf_status load_container(const uint8_t *p, size_t len, const char *base_dir, bool optional, bool maps,
                                xf_tensor **out, xf_error *err);
static xf_status load_map(const uint8_t *p, size_t len, const char *base_dir, xf_tensor **out, xf_error *err);

/* Reads the file at path and parses it as a TensorProto, SequenceProto or
 * OptionalProto as kind says; errors name the file.  A TensorProto file
 * given for an optional tensor (as ONNX's own test data has them) is read
 * as an optional holding that tensor. */
static xf_status load_pb_file(const char *path, xf_value_kind kind, xf_tensor **out, char **name, xf_error *err)
{
    *out = NULL;
    if (name)
        *name = NULL;
    uint8_t *buf;
    size_t len;
    xf_status s = xfp_read_file(path, &buf, &len, err);
    if (s != XF_OK)
        return s;
    char *dir = xfp_dirname(path);
    if (!dir)
        s = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    else if (kind == XF_VK_MAP)
        s = load_map(buf, len, dir, out, err);
    else if (kind != XF_VK_TENSOR)
        s = load_container(buf, len, dir, xf_kind_is_optional(kind), !xf_kind_is_optional(kind), out, err);
    else
        s = xf_tensor_load_pb_buffer(buf, len, dir, out, name, err);
    if (s == XF_ERR_PARSE && kind == XF_VK_OPTIONAL_TENSOR) {
        xf_error tensor_err;
        xf_tensor *t = NULL;
        if (xf_tensor_load_pb_buffer(buf, len, dir, &t, name, &tensor_err) == XF_OK) {
            *out = xf_optional_create(t, false, t->dtype);
            s = *out ? XF_OK : xf_error_set(err, XF_ERR_NOMEM, "out of memory");
            xf_tensor_release(t);
        }
    }
    free(buf);
    free(dir);
    if (s != XF_OK) {
        xf_error_prefix(err, "%s", path);
        xfp_error_one_line(err);
    }
    return s;
}

xf_status xf_tensor_load_pb(const char *path, xf_tensor **out, char **name, xf_error *err)
{
    return load_pb_file(path, XF_VK_TENSOR, out, name, err);
}

xf_status xf_tensor_save_pb(const xf_tensor *t, const char *name, const char *path, xf_error *err)
{
    if (xf_tensor_is_container(t))
        return xf_error_set(err, XF_ERR_INVALID, "'%s': a %s is not a tensor", path, xf_kind_name(xf_tensor_kind(t)));
    return xf_value_save_pb(t, name, path, err);
}

/* ------------------------------------------------------------ sequences */

/* A varint at *p (before end); false when malformed. */
static bool read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; shift < 64 && *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return true;
    }
    return false;
}

/* ONNX's SequenceProto and OptionalProto (onnx-data.proto, which the
 * generated code lacks), read from the wire: elem_type (2), a sequence's
 * tensor_values (3) or, where maps is set (a file's sequence), map_values
 * (6), an optional's tensor_value (3) or sequence_value (5).  The name is
 * skipped; sparse tensors and other nesting are refused.  An
 * empty one's element type is left undefined (the file does not say it;
 * a session gives it the graph input's). */
enum { PB_TENSOR = 1, PB_SEQUENCE = 3, PB_MAP = 4 }; /* OptionalProto.DataType, SequenceProto.DataType */

static xf_status load_container(const uint8_t *p, size_t len, const char *base_dir, bool optional, bool maps,
                                xf_tensor **out, xf_error *err)
{
    const char *what = optional ? "an OptionalProto" : "a SequenceProto";
    const uint8_t *end = p + len;
    xf_tensor **items = NULL, *content = NULL;
    int64_t n = 0, cap = 0;
    uint64_t elem = 0;
    xf_status s = XF_OK;
    *out = NULL;
    while (p < end && s == XF_OK) {
        uint64_t key, v;
        if (!read_varint(&p, end, &key)) {
            s = xf_error_set(err, XF_ERR_PARSE, "not %s (bad field key)", what);
            break;
        }
        int field = (int)(key >> 3), wire = (int)(key & 7);
        if (wire == 0 && read_varint(&p, end, &v)) {
            if (field == 2)
                elem = v;
            continue;
        }
        if (wire != 2 || !read_varint(&p, end, &v) || v > (uint64_t)(end - p)) {
            s = xf_error_set(err, XF_ERR_PARSE, "not %s (field %d)", what, field);
            break;
        }
        xf_tensor *t = NULL;
        if (field == 3 || (optional && field == 5)) {
            s = field == 3 ? xf_tensor_load_pb_buffer(p, (size_t)v, base_dir, &t, NULL, err)
                           : load_container(p, (size_t)v, base_dir, false, false, &t, err);
        } else if (field == 6 && maps && !optional) {
            s = load_map(p, (size_t)v, base_dir, &t, err);
        } else if (field > 7) {
            s = xf_error_set(err, XF_ERR_PARSE, "not %s (it has field %d; a TensorProto file?)", what, field);
        } else if (field > 3) {
            s = xf_error_set(err, XF_ERR_UNSUPPORTED, "%s holding %s is not supported", what,
                             field == 4 ? "sparse tensors" : field == 6 ? "maps" : "sequences or optionals");
        }
        if (t && optional) {
            xf_tensor_release(content);
            content = t;
        } else if (t && n == cap) {
            xf_tensor **grown = realloc(items, sizeof *grown * (size_t)(cap = cap ? 2 * cap : 8));
            if (grown)
                items = grown;
            else
                s = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        }
        if (t && !optional && s == XF_OK)
            items[n++] = t;
        else if (t && !optional)
            xf_tensor_release(t);
        p += v;
    }
    if (s == XF_OK && optional && !(*out = xf_optional_create(content, elem == PB_SEQUENCE, XF_DT_UNDEFINED)))
        s = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    if (s == XF_OK && !optional && !(*out = xf_sequence_create(n > 0 ? items[0]->dtype : XF_DT_UNDEFINED, n, items)))
        s = xf_error_set(err, XF_ERR_INVALID, "a SequenceProto whose tensors differ in type");
    for (int64_t i = 0; i < n; i++)
        xf_tensor_release(items[i]);
    free(items);
    xf_tensor_release(content);
    return s;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Whether a map's n keys (int64 or strings) are all different. */
static xf_status keys_distinct(const xf_tensor *keys, xf_error *err)
{
    int64_t n = xf_tensor_numel(keys);
    if (n < 2)
        return XF_OK;
    bool str = keys->dtype == XF_DT_STRING;
    size_t es = str ? sizeof(char *) : sizeof(int64_t);
    void *sorted = malloc(es * (size_t)n);
    if (!sorted)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    memcpy(sorted, str ? (const void *)keys->strings : keys->data, es * (size_t)n);
    qsort(sorted, (size_t)n, es, str ? cmp_str : cmp_i64);
    xf_status s = XF_OK;
    for (int64_t i = 1; i < n && s == XF_OK; i++) {
        if (str && strcmp(((char **)sorted)[i - 1], ((char **)sorted)[i]) == 0)
            s = xf_error_set(err, XF_ERR_INVALID, "a MapProto with the key '%s' twice", ((char **)sorted)[i]);
        else if (!str && ((int64_t *)sorted)[i - 1] == ((int64_t *)sorted)[i])
            s = xf_error_set(err, XF_ERR_INVALID, "a MapProto with the key %lld twice",
                             (long long)((int64_t *)sorted)[i]);
    }
    free(sorted);
    return s;
}

/* The n values of a map, read as a SequenceProto of one-element tensors
 * (onnx.numpy_helper.from_dict writes scalars), as one tensor [n]. */
static xf_status map_values(const uint8_t *p, size_t len, const char *base_dir, int64_t n, xf_tensor **out,
                            xf_error *err)
{
    xf_tensor *seq = NULL;
    xf_status s = load_container(p, len, base_dir, false, false, &seq, err);
    if (s != XF_OK)
        return s;
    *out = NULL;
    for (int64_t i = 0; i < seq->n_items && s == XF_OK; i++)
        if (xf_tensor_is_container(seq->items[i]) || xf_tensor_numel(seq->items[i]) != 1)
            s = xf_error_set(err, XF_ERR_INVALID, "a MapProto whose value %lld is not one element", (long long)i);
    if (s == XF_OK && seq->n_items != n)
        s = xf_error_set(err, XF_ERR_INVALID, "a MapProto with %lld keys and %lld values", (long long)n,
                         (long long)seq->n_items);
    if (s == XF_OK && n > 0 && xf_dtype_size(seq->dtype) == 0 && seq->dtype != XF_DT_STRING)
        s = xf_error_set(err, XF_ERR_UNSUPPORTED, "a MapProto whose values are %s", xf_dtype_name(seq->dtype));
    xf_dtype dt = n > 0 ? seq->dtype : XF_DT_FLOAT;
    xf_tensor *v = s == XF_OK ? xf_tensor_create(dt, &(xf_shape){1, {n}}) : NULL;
    if (s == XF_OK && !v)
        s = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    size_t es = xf_dtype_size(dt);
    for (int64_t i = 0; i < n && s == XF_OK; i++) {
        const xf_tensor *item = seq->items[i];
        if (dt != XF_DT_STRING)
            memcpy((char *)v->data + (size_t)i * es, item->data, es);
        else if (!(v->strings[i] = strdup(item->strings[0] ? item->strings[0] : "")))
            s = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    }
    xf_tensor_release(seq);
    if (s == XF_OK)
        *out = v;
    else
        xf_tensor_release(v);
    return s;
}

/* ONNX's MapProto (onnx-data.proto): key_type (2), keys (3, packed or not)
 * or string_keys (4), values (5) as above; the name is skipped.  Keys of
 * int64 or strings, each once; an empty map's values are float. */
static xf_status load_map(const uint8_t *p, size_t len, const char *base_dir, xf_tensor **out, xf_error *err)
{
    const uint8_t *end = p + len, *values = NULL;
    size_t values_len = 0;
    uint64_t key_type = 0;
    int64_t *ints = NULL, n_ints = 0, cap_ints = 0;
    const uint8_t **strs = NULL;
    size_t *str_lens = NULL;
    int64_t n_strs = 0, cap_strs = 0;
    xf_status s = XF_OK;
    *out = NULL;
    while (p < end && s == XF_OK) {
        uint64_t key, v = 0;
        if (!read_varint(&p, end, &key)) {
            s = xf_error_set(err, XF_ERR_PARSE, "not a MapProto (bad field key)");
            break;
        }
        int field = (int)(key >> 3), wire = (int)(key & 7);
        const uint8_t *body = NULL;
        if (wire == 0) {
            if (!read_varint(&p, end, &v))
                s = xf_error_set(err, XF_ERR_PARSE, "not a MapProto (field %d)", field);
        } else if (wire != 2 || !read_varint(&p, end, &v) || v > (uint64_t)(end - p)) {
            s = xf_error_set(err, XF_ERR_PARSE, "not a MapProto (field %d)", field);
        } else {
            body = p;
            p += v;
        }
        if (s != XF_OK)
            break;
        if (field == 2 && !body) {
            key_type = v;
        } else if (field == 3) { /* one key, or a packed run of them */
            const uint8_t *q = body ? body : NULL, *qe = body ? body + v : NULL;
            for (bool more = true; more && s == XF_OK;) {
                uint64_t k = v;
                if (q && !read_varint(&q, qe, &k))
                    s = xf_error_set(err, XF_ERR_PARSE, "not a MapProto (bad packed keys)");
                if (s == XF_OK && n_ints == cap_ints) {
                    int64_t *grown = realloc(ints, sizeof *ints * (size_t)(cap_ints = cap_ints ? 2 * cap_ints : 16));
                    s = grown ? XF_OK : xf_error_set(err, XF_ERR_NOMEM, "out of memory");
                    ints = grown ? grown : ints;
                }
                if (s == XF_OK)
                    ints[n_ints++] = (int64_t)k;
                more = q && q < qe;
            }
        } else if (field == 4 && body) {
            if (n_strs == cap_strs) {
                cap_strs = cap_strs ? 2 * cap_strs : 16;
                const uint8_t **g1 = realloc(strs, sizeof *strs * (size_t)cap_strs);
                strs = g1 ? g1 : strs;
                size_t *g2 = g1 ? realloc(str_lens, sizeof *str_lens * (size_t)cap_strs) : NULL;
                str_lens = g2 ? g2 : str_lens;
                if (!g1 || !g2)
                    s = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
            }
            if (s == XF_OK && memchr(body, 0, (size_t)v))
                s = xf_error_set(err, XF_ERR_UNSUPPORTED, "a MapProto key contains a NUL byte");
            if (s == XF_OK) {
                strs[n_strs] = body;
                str_lens[n_strs++] = (size_t)v;
            }
        } else if (field == 5 && body) {
            values = body;
            values_len = (size_t)v;
        } else if (field > 5) {
            s = xf_error_set(err, XF_ERR_PARSE, "not a MapProto (it has field %d)", field);
        }
    }
    bool str = key_type == XF_DT_STRING;
    if (s == XF_OK && key_type != XF_DT_INT64 && !str)
        s = xf_error_set(err, XF_ERR_UNSUPPORTED,
                         "a MapProto with keys of type %lld; xflow reads int64 and string keys", (long long)key_type);
    if (s == XF_OK && (str ? n_ints : n_strs) > 0)
        s = xf_error_set(err, XF_ERR_INVALID, "a MapProto of %s keys that has %s keys", str ? "string" : "int64",
                         str ? "integer" : "string");
    int64_t n = str ? n_strs : n_ints;
    xf_tensor *vals = NULL;
    xf_tensor *keys = s == XF_OK ? xf_tensor_create(str ? XF_DT_STRING : XF_DT_INT64, &(xf_shape){1, {n}}) : NULL;
    if (s == XF_OK && !keys)
        s = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < n && s == XF_OK; i++) {
        if (!str)
            ((int64_t *)keys->data)[i] = ints[i];
        else if (!(keys->strings[i] = strndup((const char *)strs[i], str_lens[i])))
            s = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    }
    if (s == XF_OK)
        s = keys_distinct(keys, err);
    if (s == XF_OK && values)
        s = map_values(values, values_len, base_dir, n, &vals, err);
    else if (s == XF_OK && n > 0)
        s = xf_error_set(err, XF_ERR_INVALID, "a MapProto with %lld keys and no values", (long long)n);
    else if (s == XF_OK && !(vals = xf_tensor_create(XF_DT_FLOAT, &(xf_shape){1, {0}})))
        s = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    if (s == XF_OK && !(*out = xf_map_create(keys, vals)))
        s = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    xf_tensor_release(keys);
    xf_tensor_release(vals);
    free(ints);
    free(strs);
    free(str_lens);
    return s;
}

xf_status xf_sequence_load_pb_buffer(const void *buf, size_t len, const char *base_dir, xf_tensor **out,
                                     xf_error *err)
{
    return load_container(buf, len, base_dir, false, true, out, err);
}

xf_status xf_optional_load_pb_buffer(const void *buf, size_t len, const char *base_dir, xf_tensor **out,
                                     xf_error *err)
{
    return load_container(buf, len, base_dir, true, false, out, err);
}

xf_status xf_map_load_pb_buffer(const void *buf, size_t len, const char *base_dir, xf_tensor **out, xf_error *err)
{
    return load_map(buf, len, base_dir, out, err);
}

xf_status xf_sequence_load_pb(const char *path, xf_tensor **out, xf_error *err)
{
    return load_pb_file(path, XF_VK_SEQUENCE, out, NULL, err);
}

xf_status xf_value_load_pb(const char *path, xf_value_kind kind, xf_tensor **out, char **name, xf_error *err)
{
    return load_pb_file(path, kind, out, name, err);
}

/* ------------------------------------------------------------ writing values */

typedef struct wire {
    uint8_t *p;
    size_t n, cap;
    bool oom;
} wire;

static void put_bytes(wire *w, const void *src, size_t len)
{
    if (w->n + len > w->cap) {
        size_t cap = w->cap ? w->cap : 256;
        while (cap < w->n + len)
            cap *= 2;
        uint8_t *grown = w->oom ? NULL : realloc(w->p, cap);
        if (!grown) {
            w->oom = true;
            return;
        }
        w->p = grown;
        w->cap = cap;
    }
    if (len)
        memcpy(w->p + w->n, src, len);
    w->n += len;
}

static void put_varint(wire *w, uint64_t v)
{
    uint8_t b[10];
    size_t k = 0;
    do {
        b[k++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    put_bytes(w, b, k);
}

static void put_field(wire *w, int field, const void *src, size_t len)
{
    put_varint(w, (uint64_t)field << 3 | 2);
    put_varint(w, len);
    put_bytes(w, src, len);
}

static xf_status put_value(wire *w, int field, const xf_tensor *t, const char *name, xf_error *err);

/* A map as ONNX's MapProto: key_type, the keys (packed integers, or
 * strings), and the values as a SequenceProto of scalar tensors. */
static xf_status put_map(wire *inner, const xf_tensor *t, xf_error *err)
{
    const xf_tensor *keys = t->items[0], *values = t->items[1];
    int64_t n = xf_tensor_numel(keys);
    put_varint(inner, 2 << 3);
    put_varint(inner, (uint64_t)keys->dtype);
    wire packed = {0}, seq = {0};
    for (int64_t i = 0; i < n && keys->dtype != XF_DT_STRING; i++)
        put_varint(&packed, (uint64_t)xf_tensor_get_i64(keys, i));
    if (keys->dtype != XF_DT_STRING)
        put_field(inner, 3, packed.p, packed.n);
    for (int64_t i = 0; i < n && keys->dtype == XF_DT_STRING; i++) {
        const char *k = keys->strings && keys->strings[i] ? keys->strings[i] : "";
        put_field(inner, 4, k, strlen(k));
    }
    put_varint(&seq, 2 << 3);
    put_varint(&seq, PB_TENSOR);
    xf_status s = XF_OK;
    size_t es = xf_dtype_size(values->dtype);
    xf_shape scalar = {.ndim = 0};
    for (int64_t i = 0; i < n && s == XF_OK; i++) {
        xf_tensor *v = xf_tensor_from_data(values->dtype, &scalar, (const char *)values->data + (size_t)i * es);
        s = v ? put_value(&seq, 3, v, NULL, err) : xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        xf_tensor_release(v);
    }
    if (s == XF_OK)
        put_field(inner, 5, seq.p, seq.n);
    inner->oom |= packed.oom || seq.oom;
    free(packed.p);
    free(seq.p);
    return s;
}

/* Appends t as the message a TensorProto, SequenceProto or OptionalProto
 * file holds (as field `field` of the enclosing one when field > 0). */
static xf_status put_value(wire *w, int field, const xf_tensor *t, const char *name, xf_error *err)
{
    wire inner = {0};
    xf_status s = XF_OK;
    if (t->is_map) {
        s = put_map(&inner, t, err);
    } else if (!xf_tensor_is_container(t)) {
        xfp_arena a = {0};
        Onnx__TensorProto tp;
        s = xfp_tensor_encode(t, name, &a, NULL, &tp, err);
        size_t len = s == XF_OK ? onnx__tensor_proto__get_packed_size(&tp) : 0;
        uint8_t *buf = s == XF_OK ? malloc(len ? len : 1) : NULL;
        if (buf)
            put_bytes(&inner, buf, onnx__tensor_proto__pack(&tp, buf));
        else if (s == XF_OK)
            inner.oom = true;
        free(buf);
        xfp_arena_free(&a);
    } else {
        if (name && name[0])
            put_field(&inner, 1, name, strlen(name));
        bool maps = t->is_sequence && t->n_items > 0 && t->items[0]->is_map;
        put_varint(&inner, 2 << 3);
        put_varint(&inner, maps ? PB_MAP : t->is_sequence || !t->optional_of_sequence ? PB_TENSOR : PB_SEQUENCE);
        for (int64_t i = 0; i < t->n_items && s == XF_OK; i++)
            s = put_value(&inner, maps ? 6 : t->is_sequence || !t->items[i]->is_sequence ? 3 : 5, t->items[i], NULL,
                          err);
    }
    if (inner.oom && s == XF_OK)
        s = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    if (s == XF_OK && field > 0)
        put_field(w, field, inner.p, inner.n);
    else if (s == XF_OK)
        put_bytes(w, inner.p, inner.n);
    free(inner.p);
    return s;
}

xf_status xf_value_save_pb(const xf_tensor *t, const char *name, const char *path, xf_error *err)
{
    wire w = {0};
    xf_status s = put_value(&w, 0, t, name, err);
    if (s == XF_OK && w.oom)
        s = xf_error_set(err, XF_ERR_NOMEM, "out of memory writing '%s'", path);
    if (s == XF_OK)
        s = xfp_write_file_atomic(path, w.p, w.n, err);
    free(w.p);
    return s;
}
