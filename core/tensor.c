/* Shapes, dtypes and reference-counted constant tensors. */
#include "xf_core.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t xf_dtype_size(xf_dtype t)
{
    switch (t) {
    case XF_DT_FLOAT: case XF_DT_INT32: case XF_DT_UINT32: return 4;
    case XF_DT_UINT8: case XF_DT_INT8: case XF_DT_BOOL: return 1;
    case XF_DT_FLOAT8E4M3FN: case XF_DT_FLOAT8E4M3FNUZ: case XF_DT_FLOAT8E5M2: case XF_DT_FLOAT8E5M2FNUZ:
    case XF_DT_FLOAT8E8M0: return 1;
    case XF_DT_UINT16: case XF_DT_INT16: case XF_DT_FLOAT16: case XF_DT_BFLOAT16: return 2;
    case XF_DT_INT64: case XF_DT_DOUBLE: case XF_DT_UINT64: case XF_DT_COMPLEX64: return 8;
    case XF_DT_COMPLEX128: return 16;
    default: return 0;
    }
}

int xf_dtype_bits(xf_dtype t)
{
    switch (t) {
    case XF_DT_UINT4: case XF_DT_INT4: case XF_DT_FLOAT4E2M1: return 4;
    case XF_DT_UINT2: case XF_DT_INT2: return 2;
    default: return 8 * (int)xf_dtype_size(t);
    }
}

bool xf_dtype_is_half(xf_dtype t) { return t == XF_DT_FLOAT16 || t == XF_DT_BFLOAT16; }

bool xf_dtype_is_float(xf_dtype t) { return t == XF_DT_FLOAT || t == XF_DT_DOUBLE || xf_dtype_is_half(t); }

bool xf_dtype_is_unsigned(xf_dtype t)
{
    return t == XF_DT_UINT8 || t == XF_DT_UINT16 || t == XF_DT_UINT32 || t == XF_DT_UINT64;
}

bool xf_dtype_is_signed_int(xf_dtype t)
{
    return t == XF_DT_INT8 || t == XF_DT_INT16 || t == XF_DT_INT32 || t == XF_DT_INT64;
}

size_t xf_dtype_nbytes(xf_dtype t, int64_t numel)
{
    int bits = xf_dtype_bits(t);
    return numel <= 0 ? 0 : bits % 8 ? ((size_t)numel * (size_t)bits + 7) / 8 : (size_t)numel * (size_t)(bits / 8);
}

const char *xf_dtype_name(xf_dtype t)
{
    static const char *const names[XF_DT_COUNT_] = {
        "UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32", "INT64", "STRING",
        "BOOL", "FLOAT16", "DOUBLE", "UINT32", "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16",
        "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4", "INT4", "FLOAT4E2M1",
        "FLOAT8E8M0", "UINT2", "INT2"};
    return (unsigned)t < XF_DT_COUNT_ ? names[t] : "INVALID";
}

int64_t xf_shape_numel(const xf_shape *s)
{
    if (s->ndim < 0)
        return -1;
    int64_t n = 1;
    for (int i = 0; i < s->ndim; i++) {
        if (s->dims[i] < 0)
            return -1;
        if (s->dims[i] != 0 && n > INT64_MAX / s->dims[i])
            return INT64_MAX;
        n *= s->dims[i];
    }
    return n;
}

bool xf_shape_equal(const xf_shape *a, const xf_shape *b)
{
    if (a->ndim != b->ndim)
        return false;
    for (int i = 0; i < a->ndim; i++)
        if (a->dims[i] != b->dims[i])
            return false;
    return true;
}

xf_shape xf_shape_make(int ndim, const int64_t *dims)
{
    xf_shape s = {.ndim = ndim};
    for (int i = 0; i < ndim && i < XF_MAX_DIMS; i++)
        s.dims[i] = dims[i];
    return s;
}

char *xf_shape_str(const xf_shape *s, char *buf, size_t n)
{
    if (n == 0)
        return buf;
    if (s->ndim < 0) {
        snprintf(buf, n, "?");
        return buf;
    }
    if (s->ndim == 0) {
        snprintf(buf, n, "scalar");
        return buf;
    }
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < s->ndim && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, "%s%" PRId64, i ? "x" : "", s->dims[i]);
    return buf;
}

/* A tensor without data of dtype and shape (NULL when the size is not one
 * or overflows, or out of memory); its element count in *numel. */
static xf_tensor *tensor_header(xf_dtype dtype, const xf_shape *shape, int64_t *numel)
{
    *numel = xf_shape_numel(shape);
    int bits = xf_dtype_bits(dtype);
    if (*numel < 0 || (dtype != XF_DT_STRING && bits == 0))
        return NULL;
    if (dtype != XF_DT_STRING && (uint64_t)*numel > SIZE_MAX / 16 / (size_t)bits)
        return NULL;
    xf_tensor *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->refcount = 1;
    t->dtype = dtype;
    t->shape = *shape;
    if (dtype != XF_DT_STRING)
        t->nbytes = xf_dtype_nbytes(dtype, *numel);
    return t;
}

static xf_tensor *tensor_new(xf_dtype dtype, const xf_shape *shape, bool zeroed)
{
    int64_t numel;
    xf_tensor *t = tensor_header(dtype, shape, &numel);
    if (!t)
        return NULL;
    if (dtype == XF_DT_STRING) {
        if (numel > 0) {
            t->strings = calloc((size_t)numel, sizeof *t->strings);
            if (!t->strings) {
                free(t);
                return NULL;
            }
        }
        return t;
    }
    if (t->nbytes > 0) {
        size_t rounded = (t->nbytes + 63) & ~(size_t)63;
        t->data = aligned_alloc(64, rounded);
        if (!t->data) {
            free(t);
            return NULL;
        }
        if (zeroed)
            memset(t->data, 0, rounded);
        else if (rounded > t->nbytes) /* the padding past the end stays defined */
            memset((char *)t->data + t->nbytes, 0, rounded - t->nbytes);
    }
    return t;
}

xf_tensor *xf_tensor_create(xf_dtype dtype, const xf_shape *shape) { return tensor_new(dtype, shape, true); }
xf_tensor *xf_tensor_create_unset(xf_dtype dtype, const xf_shape *shape) { return tensor_new(dtype, shape, false); }

xf_tensor *xf_strings_shared(xf_tensor *owner, const xf_shape *shape, const int64_t *ids)
{
    static char empty[] = "";
    xf_tensor *t = xf_tensor_create(XF_DT_STRING, shape);
    if (!t)
        return NULL;
    int64_t n = xf_shape_numel(shape);
    for (int64_t i = 0; i < n; i++) {
        int64_t at = ids ? ids[i] : i;
        t->strings[i] = at >= 0 && owner->strings && owner->strings[at] ? owner->strings[at] : empty;
    }
    t->string_owner = xf_tensor_retain(owner->string_owner ? owner->string_owner : owner);
    return t;
}

xf_tensor *xf_tensor_adopt(xf_dtype dtype, const xf_shape *shape, void *data)
{
    int64_t numel;
    xf_tensor *t = dtype != XF_DT_STRING ? tensor_header(dtype, shape, &numel) : NULL;
    if (t)
        t->data = data;
    return t;
}

xf_tensor *xf_tensor_from_data(xf_dtype dtype, const xf_shape *shape, const void *data)
{
    xf_tensor *t = xf_tensor_create_unset(dtype, shape);
    if (t && t->nbytes)
        memcpy(t->data, data, t->nbytes);
    return t;
}

xf_tensor *xf_tensor_retain(xf_tensor *t)
{
    if (t)
        t->refcount++;
    return t;
}

void xf_tensor_release(xf_tensor *t)
{
    if (!t || --t->refcount > 0)
        return;
    if (t->strings) {
        int64_t n = t->string_owner ? 0 : xf_shape_numel(&t->shape);
        for (int64_t i = 0; i < n; i++)
            free(t->strings[i]);
        free(t->strings);
    }
    xf_tensor_release(t->string_owner);
    for (int64_t i = 0; i < t->n_items; i++)
        xf_tensor_release(t->items[i]);
    free(t->items);
    free(t->data);
    free(t);
}

xf_tensor *xf_map_create(xf_tensor *keys, xf_tensor *values)
{
    if (!keys || !values || xf_tensor_is_container(keys) || xf_tensor_is_container(values) ||
        (keys->dtype != XF_DT_INT64 && keys->dtype != XF_DT_STRING) || keys->shape.ndim != 1 ||
        values->shape.ndim != 1 || keys->shape.dims[0] != values->shape.dims[0])
        return NULL;
    xf_tensor *t = calloc(1, sizeof *t);
    if (!t || !(t->items = malloc(sizeof *t->items * 2))) {
        free(t);
        return NULL;
    }
    t->refcount = 1;
    t->dtype = values->dtype;
    t->shape = values->shape;
    t->is_map = true;
    t->n_items = 2;
    t->items[0] = xf_tensor_retain(keys);
    t->items[1] = xf_tensor_retain(values);
    return t;
}

xf_tensor *xf_sequence_create(xf_dtype dtype, int64_t n, xf_tensor *const *items)
{
    for (int64_t i = 0; i < n; i++)
        if (!items[i] || (xf_tensor_is_container(items[i]) && !items[i]->is_map) || items[i]->dtype != dtype)
            return NULL;
    xf_tensor *t = calloc(1, sizeof *t);
    if (!t || !(t->items = malloc(sizeof *t->items * (size_t)(n > 0 ? n : 1)))) {
        free(t);
        return NULL;
    }
    t->refcount = 1;
    t->dtype = dtype;
    t->is_sequence = true;
    t->n_items = n;
    t->shape = n > 0 ? items[0]->shape : (xf_shape){.ndim = -1};
    for (int64_t i = 0; i < n; i++) {
        t->items[i] = xf_tensor_retain(items[i]);
        if (!xf_shape_equal(&items[i]->shape, &items[0]->shape))
            t->shape.ndim = -1;
    }
    return t;
}

xf_tensor *xf_optional_create(xf_tensor *content, bool of_sequence, xf_dtype dtype)
{
    if (content && content->is_optional)
        return NULL;
    xf_tensor *t = calloc(1, sizeof *t);
    if (!t || !(t->items = malloc(sizeof *t->items))) {
        free(t);
        return NULL;
    }
    t->refcount = 1;
    t->is_optional = true;
    t->optional_of_sequence = content ? content->is_sequence : of_sequence;
    t->dtype = content ? content->dtype : dtype;
    t->shape = content ? content->shape : (xf_shape){.ndim = -1};
    t->n_items = content != NULL;
    if (content)
        t->items[0] = xf_tensor_retain(content);
    return t;
}

const char *xf_kind_name(xf_value_kind k)
{
    static const char *const names[] = {"tensor", "sequence", "optional tensor", "optional sequence", "map"};
    return (unsigned)k < sizeof names / sizeof *names ? names[k] : "value";
}

int64_t xf_tensor_numel(const xf_tensor *t) { return xf_shape_numel(&t->shape); }

/* IEEE binary16 with round-to-nearest-even, subnormals, inf and NaN. */
uint16_t xf_f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t exp = (x >> 23) & 0xffu;
    uint32_t man = x & 0x7fffffu;
    if (exp == 0xff)
        return (uint16_t)(sign | 0x7c00u | (man ? 0x200u | (man >> 13) : 0));
    int e = (int)exp - 127 + 15;
    if (e >= 31)
        return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) {
        if (e < -10)
            return (uint16_t)sign;
        man |= 0x800000u;
        int shift = 14 - e;
        uint32_t half = man >> shift;
        uint32_t rem = man & ((1u << shift) - 1);
        uint32_t mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1)))
            half++;
        return (uint16_t)(sign | half);
    }
    uint32_t h = sign | ((uint32_t)e << 10) | (man >> 13);
    uint32_t rem = man & 0x1fffu;
    /* a carry out of the mantissa correctly bumps the exponent (up to inf) */
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
        h++;
    return (uint16_t)h;
}

float xf_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    uint32_t x;
    if (exp == 0) {
        float f = ldexpf((float)man, -24);
        return sign ? -f : f;
    }
    if (exp == 31)
        x = sign | 0x7f800000u | (man << 13);
    else
        x = sign | ((exp - 15 + 127) << 23) | (man << 13);
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

/* Round to nearest, ties to even, as ONNX's reference (ml_dtypes), ONNX
 * Runtime, PyTorch, oneDNN and CUDA's __float2bfloat16 do (ONNX 1.12's
 * Cast test data was made by truncation, which is biased toward zero);
 * finite values past bfloat16's largest round to infinity, and NaN stays a
 * quiet NaN rather than possibly becoming infinity. */
uint16_t xf_f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

float xf_bf16_to_f32(uint16_t h)
{
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

/* ------------------------------------------------------------ float8 */

typedef struct f8_format {
    int mbits, bias;
    bool uz;         /* the "fnuz" variants: no negative zero, 0x80 is NaN, no infinity */
    bool inf;        /* e5m2: exponent all ones is infinity (mantissa 0) or NaN */
    uint8_t max;     /* the largest finite positive code */
} f8_format;

static const f8_format *f8_format_of(xf_dtype t)
{
    static const f8_format e4m3fn = {3, 7, false, false, 0x7e}, e4m3fnuz = {3, 8, true, false, 0x7f},
                           e5m2 = {2, 15, false, true, 0x7b}, e5m2fnuz = {2, 16, true, false, 0x7f};
    switch (t) {
    case XF_DT_FLOAT8E4M3FN: return &e4m3fn;
    case XF_DT_FLOAT8E4M3FNUZ: return &e4m3fnuz;
    case XF_DT_FLOAT8E5M2: return &e5m2;
    case XF_DT_FLOAT8E5M2FNUZ: return &e5m2fnuz;
    default: return NULL;
    }
}

bool xf_float8_known(xf_dtype t) { return f8_format_of(t) != NULL; }

float xf_float8_to_f32(xf_dtype t, uint8_t code)
{
    const f8_format *f = f8_format_of(t);
    if (!f)
        return NAN;
    int mag = code & 0x7f, e = mag >> f->mbits, m = mag & ((1 << f->mbits) - 1);
    if (f->uz ? code == 0x80 : !f->inf ? mag == 0x7f : e == (1 << (7 - f->mbits)) - 1 && m)
        return NAN;
    if (f->inf && e == (1 << (7 - f->mbits)) - 1)
        return code & 0x80 ? -INFINITY : INFINITY;
    float v = e == 0 ? ldexpf((float)m, 1 - f->bias - f->mbits)
                     : ldexpf(1.0f + (float)m / (float)(1 << f->mbits), e - f->bias);
    return code & 0x80 ? -v : v;
}

uint8_t xf_f32_to_float8(xf_dtype t, float v, bool saturate)
{
    const f8_format *f = f8_format_of(t);
    uint8_t nan = f && f->uz ? 0x80 : 0x7f;
    if (!f)
        return nan;
    if (isnan(v)) /* keeps its sign where the format has one; e5m2's quiet NaN as ml_dtypes writes it */
        return f->uz ? nan : (uint8_t)((signbit(v) ? 0x80 : 0) | (f->inf ? 0x7e : 0x7f));
    uint8_t sign = signbit(v) ? 0x80 : 0;
    float a = fabsf(v), max = xf_float8_to_f32(t, f->max);
    float over = max + (max - xf_float8_to_f32(t, (uint8_t)(f->max - 1))) / 2;
    /* beyond rounding to the largest finite value: past the midpoint to the
     * next code, or on it when the largest code is odd (ties to even) */
    if (a > over || (a == over && (f->max & 1)))
        return saturate ? (uint8_t)(sign | f->max) : f->inf ? (uint8_t)(sign | 0x7c) : f->uz ? nan : (uint8_t)(sign | nan);
    /* the largest code not above a, then the nearer of it and the next
     * (ties to the even code) */
    int lo = 0, hi = f->max;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (xf_float8_to_f32(t, (uint8_t)mid) <= a)
            lo = mid;
        else
            hi = mid - 1;
    }
    int code = lo;
    if (lo < f->max) {
        float below = a - xf_float8_to_f32(t, (uint8_t)lo), above = xf_float8_to_f32(t, (uint8_t)(lo + 1)) - a;
        if (above < below || (above == below && (lo & 1)))
            code = lo + 1;
    }
    return code == 0 && f->uz ? 0 : (uint8_t)(sign | code);
}

/* float4e2m1: sign, 2 exponent bits (bias 1), 1 mantissa bit; magnitudes
 * 0, 0.5, 1, 1.5, 2, 3, 4 and 6, no infinity or NaN. */
static const float e2m1_values[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};

float xf_float4_to_f32(uint8_t code)
{
    float v = e2m1_values[code & 7];
    return code & 8 ? -v : v;
}

uint8_t xf_f32_to_float4(float v)
{
    if (isnan(v)) /* ONNX's table: NaN gives 6, as satfinite hardware does */
        return 7;
    uint8_t sign = signbit(v) ? 8 : 0;
    float a = fabsf(v);
    int code = 0;
    while (code < 7 && e2m1_values[code + 1] <= a)
        code++;
    if (code < 7) { /* the nearer of code and code + 1, ties to the even code */
        float below = a - e2m1_values[code], above = e2m1_values[code + 1] - a;
        if (above < below || (above == below && (code & 1)))
            code++;
    }
    return (uint8_t)(sign | code);
}

float xf_e8m0_to_f32(uint8_t code) { return code == 0xff ? NAN : ldexpf(1.0f, code - 127); }

uint8_t xf_f32_to_e8m0(float v, bool saturate, xf_round_mode mode)
{
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    uint32_t e = bits >> 23 & 0xff, frac = bits & 0x7fffff;
    if (e == 0xff) /* NaN; an infinity saturates to the largest power */
        return frac || !saturate ? 0xff : 0xfe;
    bool up = mode == XF_ROUND_UP ? frac != 0
              : mode == XF_ROUND_NEAREST
                  ? (bits & 0x400000) && ((bits & 0x200000) || (bits & 0x1fffff) || e > 0)
                  : false;
    if (up && saturate && e == 0xfe)
        up = false;
    return (uint8_t)(e + up);
}

double xf_tensor_get_f64(const xf_tensor *t, int64_t i)
{
    const void *p = t->data;
    switch (t->dtype) {
    case XF_DT_FLOAT: return ((const float *)p)[i];
    case XF_DT_FLOAT16: return xf_f16_to_f32(((const uint16_t *)p)[i]);
    case XF_DT_BFLOAT16: return xf_bf16_to_f32(((const uint16_t *)p)[i]);
    case XF_DT_DOUBLE: return ((const double *)p)[i];
    case XF_DT_INT64: return (double)((const int64_t *)p)[i];
    case XF_DT_INT32: return ((const int32_t *)p)[i];
    case XF_DT_UINT32: return ((const uint32_t *)p)[i];
    case XF_DT_INT16: return ((const int16_t *)p)[i];
    case XF_DT_UINT16: return ((const uint16_t *)p)[i];
    case XF_DT_INT8: return ((const int8_t *)p)[i];
    case XF_DT_UINT8: return ((const uint8_t *)p)[i];
    case XF_DT_BOOL: return ((const uint8_t *)p)[i] != 0;
    case XF_DT_UINT64: return (double)((const uint64_t *)p)[i];
    default: return 0.0;
    }
}

void xf_tensor_set_f64(xf_tensor *t, int64_t i, double v)
{
    switch (t->dtype) {
    case XF_DT_FLOAT: ((float *)t->data)[i] = (float)v; break;
    case XF_DT_DOUBLE: ((double *)t->data)[i] = v; break;
    case XF_DT_FLOAT16: ((uint16_t *)t->data)[i] = xf_f32_to_f16((float)v); break;
    case XF_DT_BFLOAT16: ((uint16_t *)t->data)[i] = xf_f32_to_bf16((float)v); break;
    default: break;
    }
}

int64_t xf_tensor_get_i64(const xf_tensor *t, int64_t i)
{
    switch (t->dtype) {
    case XF_DT_INT64: return ((const int64_t *)t->data)[i];
    case XF_DT_UINT64: return (int64_t)((const uint64_t *)t->data)[i];
    case XF_DT_FLOAT:
    case XF_DT_DOUBLE: {
        double v = xf_tensor_get_f64(t, i);
        if (v >= 9.2e18)
            return INT64_MAX;
        if (v <= -9.2e18)
            return INT64_MIN;
        return (int64_t)v;
    }
    default: return (int64_t)xf_tensor_get_f64(t, i);
    }
}
