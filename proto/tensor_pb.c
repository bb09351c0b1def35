/* TensorProto <-> xf_tensor: raw, typed-field and external data on import,
 * raw or external data on export; sparse tensors are made dense; single
 * TensorProto files (the backend test data) are read and written. */
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
