/* TensorProto <-> xf_tensor: raw, typed-field and external data on import,
 * raw or external data on export; sparse tensors are made dense; a
 * TensorProto in memory is read as a tensor (files of values, of tensors
 * among them: value_pb.c). */
#include "proto_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ONNX stores tensor data little-endian; xflow keeps it in memory as is. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "xflow's ONNX import assumes a little-endian host"
#endif

/* Offsets of external tensors are multiples of this, so that they can be mapped. */
enum { EXTERNAL_ALIGN = 4096 };

static const char *human_size(double bytes, char *buf, size_t n)
{
    static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int u = 0;
    while (bytes >= 1024 && u < 6) {
        bytes /= 1024;
        u++;
    }
    snprintf(buf, n, u ? "%.1f %s" : "%.0f %s", bytes, units[u]);
    return buf;
}

static const char *dims_str(size_t n, const int64_t *dims, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    if (n == 0)
        snprintf(buf, cap, "scalar");
    for (size_t i = 0; i < n && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%" PRId64, i ? "x" : "", dims[i]);
    return buf;
}

/* Checks dtype and dims and computes the size, refusing what the limits do
 * not allow before anything is allocated. */
static xf_status check_layout(int32_t data_type, size_t n_dims, const int64_t *dims, const char *what,
                              size_t max_bytes, xf_shape *shape, int64_t *numel, xf_error *err)
{
    if (data_type <= XF_DT_UNDEFINED || data_type >= XF_DT_COUNT_)
        return xf_error_set(err, XF_ERR_UNSUPPORTED, "%s has data type %" PRId32 ", which xflow does not know",
                            what, data_type);
    if (n_dims > XF_MAX_DIMS)
        return xf_error_set(err, XF_ERR_UNSUPPORTED, "%s has %zu dims; xflow supports at most %d", what, n_dims,
                            XF_MAX_DIMS);
    char dbuf[256], sbuf[64], lbuf[64];
    int64_t n = 1;
    bool overflow = false;
    for (size_t i = 0; i < n_dims; i++) {
        if (dims[i] < 0)
            return xf_error_set(err, XF_ERR_INVALID, "%s has a negative dim (%s)", what,
                                dims_str(n_dims, dims, dbuf, sizeof dbuf));
        if (dims[i] != 0 && n > INT64_MAX / dims[i])
            overflow = true;
        else
            n *= dims[i];
    }
    double esize = data_type == XF_DT_STRING ? (double)sizeof(char *) : xf_dtype_bits((xf_dtype)data_type) / 8.0;
    double bytes = overflow ? 1e30 : (double)n * esize;
    if (overflow || bytes > (double)max_bytes)
        return xf_error_set(err, XF_ERR_LIMIT, "%s has dims %s of %s (%s), more than the limit of %s", what,
                            dims_str(n_dims, dims, dbuf, sizeof dbuf), xf_dtype_name((xf_dtype)data_type),
                            human_size(bytes, sbuf, sizeof sbuf), human_size((double)max_bytes, lbuf, sizeof lbuf));
    *shape = xf_shape_make((int)n_dims, dims);
    *numel = overflow ? INT64_MAX : n;
    return XF_OK;
}

static xf_status size_mismatch(const char *what, const char *field, size_t have, size_t need, bool bytes,
                               const xf_shape *shape, xf_dtype dt, xf_error *err)
{
    char sbuf[256];
    xf_shape_str(shape, sbuf, sizeof sbuf);
    if (have == 0)
        return xf_error_set(err, XF_ERR_INVALID, "%s has no data but dims %s of %s need %zu %s", what, sbuf,
                            xf_dtype_name(dt), need, bytes ? "bytes" : "values");
    if (bytes)
        return xf_error_set(err, XF_ERR_INVALID, "%s has %zu bytes of %s but dims %s of %s need %zu", what, have,
                            field, sbuf, xf_dtype_name(dt), need);
    return xf_error_set(err, XF_ERR_INVALID, "%s has %zu values in %s but dims %s of %s need %zu", what, have,
                        field, sbuf, xf_dtype_name(dt), need);
}

/* ------------------------------------------------------------ external data */

typedef struct external_ref {
    const char *location;
    uint64_t offset, length;
    bool has_length;
} external_ref;

static bool parse_u64(const char *s, uint64_t *out)
{
    if (!s || !*s)
        return false;
    uint64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > (UINT64_MAX - 9) / 10)
            return false;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *out = v;
    return true;
}

/* A location may only name a file inside the model's directory. */
static bool location_is_contained(const char *loc)
{
    if (!loc[0] || loc[0] == '/')
        return false;
    for (const char *p = loc; *p;) {
        const char *end = strchr(p, '/');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return false;
        p += n;
        while (*p == '/')
            p++;
    }
    return true;
}

static xf_status parse_external(const Onnx__TensorProto *tp, const char *what, external_ref *ref, xf_error *err)
{
    memset(ref, 0, sizeof *ref);
    for (size_t i = 0; i < tp->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = tp->external_data[i];
        const char *key = e->key ? e->key : "", *val = e->value ? e->value : "";
        if (strcmp(key, "location") == 0) {
            ref->location = val;
        } else if (strcmp(key, "offset") == 0) {
            if (!parse_u64(val, &ref->offset))
                return xf_error_set(err, XF_ERR_INVALID, "%s has external data offset '%s', not a number", what,
                                    val);
        } else if (strcmp(key, "length") == 0) {
            if (!parse_u64(val, &ref->length))
                return xf_error_set(err, XF_ERR_INVALID, "%s has external data length '%s', not a number", what,
                                    val);
            ref->has_length = true;
        }
    }
    if (!ref->location)
        return xf_error_set(err, XF_ERR_INVALID, "%s has external data without a location", what);
    if (!location_is_contained(ref->location))
        return xf_error_set(err, XF_ERR_INVALID,
                            "%s has external data at '%s', outside the model's directory (absolute paths and "
                            "'..' are refused)",
                            what, ref->location);
    return XF_OK;
}

/* Reads an external tensor of dtype dt and the given shape (nbytes bytes)
 * into a new *out; the file's size is checked before anything is allocated. */
static xf_status read_external(const Onnx__TensorProto *tp, const char *what, const xfp_tensor_src *src, xf_dtype dt,
                               const xf_shape *shape, size_t nbytes, xf_tensor **out, xf_error *err)
{
    xf_tensor *t = NULL;
    external_ref ref;
    xf_status s = parse_external(tp, what, &ref, err);
    if (s != XF_OK)
        return s;
    if (!src->base_dir)
        return xf_error_set(err, XF_ERR_UNSUPPORTED,
                            "%s has external data ('%s') but the model was not loaded from a file", what,
                            ref.location);
    size_t plen = strlen(src->base_dir) + strlen(ref.location) + 2;
    char *path = malloc(plen);
    if (!path)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    snprintf(path, plen, "%s/%s", src->base_dir, ref.location);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        s = xf_error_set(err, XF_ERR_IO, "%s: cannot open external data file '%s': %s", what, ref.location,
                         strerror(errno));
        goto done;
    }
    uint64_t size = (uint64_t)st.st_size;
    uint64_t length = ref.has_length ? ref.length : (ref.offset <= size ? size - ref.offset : 0);
    if (ref.offset > size || length > size - ref.offset) {
        s = xf_error_set(err, XF_ERR_INVALID,
                         "%s: external data file '%s' has %" PRIu64 " bytes; the tensor claims bytes %" PRIu64
                         "..%" PRIu64,
                         what, ref.location, size, ref.offset, ref.offset + length);
        goto done;
    }
    if (length != nbytes) {
        s = size_mismatch(what, "external data", (size_t)length, nbytes, true, shape, dt, err);
        goto done;
    }
    if (!(t = xf_tensor_create(dt, shape))) {
        s = xf_error_set(err, XF_ERR_NOMEM, "out of memory reading %s", what);
        goto done;
    }
    size_t got = 0;
    while (got < t->nbytes) {
        ssize_t r = pread(fd, (uint8_t *)t->data + got, t->nbytes - got, (off_t)(ref.offset + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            s = xf_error_set(err, XF_ERR_IO, "%s: cannot read external data file '%s': %s", what, ref.location,
                             r < 0 ? strerror(errno) : "file shrank while reading");
            goto done;
        }
        got += (size_t)r;
    }
done:
    if (fd >= 0)
        close(fd);
    free(path);
    if (s == XF_OK)
        *out = t;
    else
        xf_tensor_release(t);
    return s;
}

/* ------------------------------------------------------------ decoding */

/* The typed field that holds data_type's values, and how many per element. */
static const char *typed_field(const Onnx__TensorProto *tp, xf_dtype dt, size_t *count, int *per_elem)
{
    *per_elem = 1;
    switch (dt) {
    case XF_DT_COMPLEX64: *per_elem = 2; /* fallthrough */
    case XF_DT_FLOAT: *count = tp->n_float_data; return "float_data";
    case XF_DT_COMPLEX128: *per_elem = 2; /* fallthrough */
    case XF_DT_DOUBLE: *count = tp->n_double_data; return "double_data";
    case XF_DT_INT64: *count = tp->n_int64_data; return "int64_data";
    case XF_DT_UINT32:
    case XF_DT_UINT64: *count = tp->n_uint64_data; return "uint64_data";
    case XF_DT_STRING: *count = tp->n_string_data; return "string_data";
    default: *count = tp->n_int32_data; return "int32_data";
    }
}

static void copy_typed(const Onnx__TensorProto *tp, xf_tensor *t, size_t n)
{
    if (n == 0)
        return; /* data pointers may be NULL */
    switch (t->dtype) {
    case XF_DT_FLOAT:
    case XF_DT_COMPLEX64: memcpy(t->data, tp->float_data, n * sizeof(float)); break;
    case XF_DT_DOUBLE:
    case XF_DT_COMPLEX128: memcpy(t->data, tp->double_data, n * sizeof(double)); break;
    case XF_DT_INT64: memcpy(t->data, tp->int64_data, n * sizeof(int64_t)); break;
    case XF_DT_UINT64: memcpy(t->data, tp->uint64_data, n * sizeof(uint64_t)); break;
    case XF_DT_UINT32:
        for (size_t i = 0; i < n; i++)
            ((uint32_t *)t->data)[i] = (uint32_t)tp->uint64_data[i];
        break;
    case XF_DT_INT32: memcpy(t->data, tp->int32_data, n * sizeof(int32_t)); break;
    case XF_DT_BOOL:
        for (size_t i = 0; i < n; i++)
            ((uint8_t *)t->data)[i] = tp->int32_data[i] != 0;
        break;
    default: /* 8- and 16-bit types (and packed bytes): the low bytes of each int32 */
        if (xf_dtype_size(t->dtype) <= 1)
            for (size_t i = 0; i < n; i++)
                ((uint8_t *)t->data)[i] = (uint8_t)tp->int32_data[i];
        else
            for (size_t i = 0; i < n; i++)
                ((uint16_t *)t->data)[i] = (uint16_t)tp->int32_data[i];
        break;
    }
}

static xf_status copy_strings(const Onnx__TensorProto *tp, const char *what, xf_tensor *t, xf_error *err)
{
    for (size_t i = 0; i < tp->n_string_data; i++) {
        const ProtobufCBinaryData *b = &tp->string_data[i];
        if (b->len && memchr(b->data, 0, b->len))
            return xf_error_set(err, XF_ERR_UNSUPPORTED,
                                "%s: string element %zu contains a NUL byte, which xflow cannot hold", what, i);
        t->strings[i] = malloc(b->len + 1);
        if (!t->strings[i])
            return xf_error_set(err, XF_ERR_NOMEM, "out of memory reading %s", what);
        if (b->len)
            memcpy(t->strings[i], b->data, b->len);
        t->strings[i][b->len] = '\0';
    }
    return XF_OK;
}

xf_status xfp_tensor_decode(const Onnx__TensorProto *tp, const char *what, const xfp_tensor_src *src,
                            xf_tensor **out, xf_error *err)
{
    *out = NULL;
    if (!tp->has_data_type)
        return xf_error_set(err, XF_ERR_INVALID, "%s has no data type", what);
    xf_shape shape;
    int64_t numel;
    xf_status s = check_layout(tp->data_type, tp->n_dims, tp->dims, what, src->max_bytes, &shape, &numel, err);
    if (s != XF_OK)
        return s;
    if (tp->segment)
        return xf_error_set(err, XF_ERR_UNSUPPORTED, "%s is a segment of a larger tensor, which xflow does not handle",
                            what);
    xf_dtype dt = (xf_dtype)tp->data_type;
    bool external = tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    bool raw = !external && tp->has_raw_data && tp->raw_data.len > 0;
    size_t nbytes = xf_dtype_nbytes(dt, numel);
    if (dt == XF_DT_STRING && (external || raw))
        return xf_error_set(err, XF_ERR_INVALID, "%s is a STRING tensor with %s data (only string_data is allowed)",
                            what, external ? "external" : "raw");
    /* Sizes are checked against the data actually present before the
     * tensor is allocated. */
    size_t count = 0;
    int per_elem = 1;
    const char *field = NULL;
    if (raw) {
        if (tp->raw_data.len != nbytes)
            return size_mismatch(what, "data", tp->raw_data.len, nbytes, true, &shape, dt, err);
    } else if (!external) {
        field = typed_field(tp, dt, &count, &per_elem);
        /* the packed types hold one packed byte per int32 */
        size_t need = xf_dtype_bits(dt) % 8 ? nbytes : (size_t)numel * (size_t)per_elem;
        if (count != need)
            return size_mismatch(what, field, count, need, false, &shape, dt, err);
    }
    if (external)
        return read_external(tp, what, src, dt, &shape, nbytes, out, err);
    xf_tensor *t = xf_tensor_create(dt, &shape);
    if (!t)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory reading %s", what);
    if (raw)
        memcpy(t->data, tp->raw_data.data, nbytes);
    else if (dt == XF_DT_STRING)
        s = copy_strings(tp, what, t, err);
    else
        copy_typed(tp, t, count);
    if (s != XF_OK) {
        xf_tensor_release(t);
        return s;
    }
    *out = t;
    return XF_OK;
}

xf_status xfp_sparse_decode(const Onnx__SparseTensorProto *sp, const char *what, const xfp_tensor_src *src,
                            xf_tensor **out, xf_error *err)
{
    *out = NULL;
    if (!sp->values || !sp->indices)
        return xf_error_set(err, XF_ERR_INVALID, "%s is a sparse tensor without values or indices", what);
    xf_shape shape;
    int64_t numel;
    xf_status s = check_layout(sp->values->data_type, sp->n_dims, sp->dims, what, src->max_bytes, &shape,
                               &numel, err);
    if (s != XF_OK)
        return s;
    if (sp->values->data_type == XF_DT_STRING || xf_dtype_bits((xf_dtype)sp->values->data_type) % 8)
        return xf_error_set(err, XF_ERR_UNSUPPORTED, "%s is a sparse %s tensor, which xflow does not handle", what,
                            xf_dtype_name((xf_dtype)sp->values->data_type));
    xf_tensor *vals = NULL, *idx = NULL, *dense = NULL;
    char sub[600];
    snprintf(sub, sizeof sub, "%s (values)", what);
    if ((s = xfp_tensor_decode(sp->values, sub, src, &vals, err)) != XF_OK)
        goto done;
    snprintf(sub, sizeof sub, "%s (indices)", what);
    if ((s = xfp_tensor_decode(sp->indices, sub, src, &idx, err)) != XF_OK)
        goto done;
    int64_t nnz = vals->shape.ndim == 1 ? vals->shape.dims[0] : -1;
    /* Indices are either linear [nnz] or coordinates [nnz, rank]. */
    bool linear = idx->shape.ndim == 1 && idx->shape.dims[0] == nnz;
    bool coords = idx->shape.ndim == 2 && idx->shape.dims[0] == nnz && idx->shape.dims[1] == shape.ndim;
    if (nnz < 0 || idx->dtype != XF_DT_INT64 || !(linear || coords)) {
        s = xf_error_set(err, XF_ERR_INVALID, "%s has sparse values/indices of inconsistent shapes", what);
        goto done;
    }
    dense = xf_tensor_create(vals->dtype, &shape);
    if (!dense) {
        s = xf_error_set(err, XF_ERR_NOMEM, "out of memory reading %s", what);
        goto done;
    }
    size_t esize = xf_dtype_size(vals->dtype);
    const int64_t *ix = idx->data;
    for (int64_t k = 0; k < nnz; k++) {
        int64_t pos = 0;
        bool ok = true;
        if (linear) {
            pos = ix[k];
            ok = pos >= 0 && pos < numel;
        } else {
            for (int d = 0; d < shape.ndim && ok; d++) {
                int64_t c = ix[k * shape.ndim + d];
                ok = c >= 0 && c < shape.dims[d];
                pos = pos * shape.dims[d] + c;
            }
        }
        if (!ok) {
            s = xf_error_set(err, XF_ERR_INVALID, "%s has sparse index %" PRId64 " out of range", what, k);
            goto done;
        }
        memcpy((uint8_t *)dense->data + (size_t)pos * esize, (const uint8_t *)vals->data + (size_t)k * esize, esize);
    }
    *out = dense;
    dense = NULL;
done:
    xf_tensor_release(vals);
    xf_tensor_release(idx);
    xf_tensor_release(dense);
    return s;
}

/* ------------------------------------------------------------ encoding */

static xf_status write_external(const xf_tensor *t, xfp_arena *a, xfp_external_sink *sink, Onnx__TensorProto *tp,
                                xf_error *err)
{
    static const uint8_t zeros[EXTERNAL_ALIGN];
    uint64_t pad = (EXTERNAL_ALIGN - sink->offset % EXTERNAL_ALIGN) % EXTERNAL_ALIGN;
    xf_status s = xfp_atomic_write(sink->file, zeros, (size_t)pad, err);
    if (s == XF_OK)
        s = xfp_atomic_write(sink->file, t->data, t->nbytes, err);
    if (s != XF_OK)
        return s;
    uint64_t offset = sink->offset + pad;
    sink->offset = offset + t->nbytes;

    Onnx__StringStringEntryProto **kv = xfp_alloc(a, 3 * sizeof *kv);
    if (!kv)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    char num[2][32];
    snprintf(num[0], sizeof num[0], "%" PRIu64, offset);
    snprintf(num[1], sizeof num[1], "%zu", t->nbytes);
    const char *keys[3] = {"location", "offset", "length"};
    const char *vals[3] = {sink->location, num[0], num[1]};
    for (int i = 0; i < 3; i++) {
        kv[i] = xfp_alloc(a, sizeof **kv);
        if (!kv[i])
            return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        onnx__string_string_entry_proto__init(kv[i]);
        kv[i]->key = (char *)keys[i];
        kv[i]->value = xfp_strdup(a, vals[i]);
        if (!kv[i]->value)
            return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    }
    tp->n_external_data = 3;
    tp->external_data = kv;
    tp->has_data_location = 1;
    tp->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    return XF_OK;
}

xf_status xfp_tensor_encode(const xf_tensor *t, const char *name, xfp_arena *a, xfp_external_sink *sink,
                            Onnx__TensorProto *tp, xf_error *err)
{
    onnx__tensor_proto__init(tp);
    tp->name = name ? (char *)name : NULL;
    tp->has_data_type = 1;
    tp->data_type = (int32_t)t->dtype;
    tp->n_dims = (size_t)(t->shape.ndim > 0 ? t->shape.ndim : 0);
    tp->dims = xfp_alloc(a, sizeof(int64_t) * (tp->n_dims ? tp->n_dims : 1));
    if (!tp->dims)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    memcpy(tp->dims, t->shape.dims, sizeof(int64_t) * tp->n_dims);
    if (t->dtype == XF_DT_STRING) {
        int64_t n = xf_tensor_numel(t);
        tp->string_data = xfp_alloc(a, sizeof *tp->string_data * (size_t)(n > 0 ? n : 1));
        if (!tp->string_data)
            return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        for (int64_t i = 0; i < n; i++) {
            const char *str = t->strings && t->strings[i] ? t->strings[i] : "";
            tp->string_data[i].data = (uint8_t *)str;
            tp->string_data[i].len = strlen(str);
        }
        tp->n_string_data = (size_t)n;
        return XF_OK;
    }
    if (sink && t->nbytes > 0 && t->nbytes >= sink->threshold)
        return write_external(t, a, sink, tp, err);
    tp->has_raw_data = 1;
    tp->raw_data.len = t->nbytes;
    tp->raw_data.data = t->data;
    return XF_OK;
}

/* ------------------------------------------------------------ TensorProto files */

xf_status xf_tensor_load_pb_buffer(const void *buf, size_t len, const char *base_dir, xf_tensor **out, char **name,
                                   xf_error *err)
{
    *out = NULL;
    if (name)
        *name = NULL;
    Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, len, buf);
    if (!tp)
        return xf_error_set(err, XF_ERR_PARSE, "not a TensorProto file (protobuf parse failed)");
    xfp_tensor_src src = {base_dir, XF_DEFAULT_MAX_TENSOR_BYTES};
    char what[600];
    snprintf(what, sizeof what, "tensor '%s'", tp->name ? tp->name : "");
    xf_status s = xfp_tensor_decode(tp, what, &src, out, err);
    if (s == XF_OK && name && tp->name && tp->name[0] && !(*name = strdup(tp->name))) {
        xf_tensor_release(*out);
        *out = NULL;
        s = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    }
    onnx__tensor_proto__free_unpacked(tp, NULL);
    if (s != XF_OK)
        xfp_error_one_line(err);
    return s;
}
