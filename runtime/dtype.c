/* Element access for every fixed-size dtype, so that kernels which are
 * generic over dtypes are written once. */
#include "xf_rt_internal.h"

#include <math.h>
#include <string.h>

bool xf_rt_is_integral(xf_dtype t)
{
    return (unsigned)t < 32 && ((XF_DTM_INTS | XF_DTM_PACKED_INTS | XF_DTM(XF_DT_BOOL)) & XF_DTM(t)) != 0;
}

/* Stores the code of packed element i. */
static void packed_set(xf_dtype t, void *p, int64_t i, unsigned code)
{
    int bits = xf_dtype_bits(t), per = 8 / bits, shift = (int)(i % per) * bits;
    uint8_t *b = (uint8_t *)p + i / per, mask = (uint8_t)(((1u << bits) - 1) << shift);
    *b = (uint8_t)((*b & ~mask) | ((code << shift) & mask));
}

/* A packed integer's value: INT4 and INT2 sign-extended. */
static int64_t packed_int(xf_dtype t, const void *p, int64_t i)
{
    unsigned c = xf_rt_packed_code(t, p, i);
    int bits = xf_dtype_bits(t);
    bool is_signed = t == XF_DT_INT4 || t == XF_DT_INT2;
    return is_signed && c >> (bits - 1) ? (int64_t)c - (1 << bits) : (int64_t)c;
}

/* A float stored as a packed integer: truncated toward zero; NaN and
 * values outside the type's range give 0, as ONNX's reference
 * implementation gives them (ONNX leaves them undefined). */
static unsigned packed_from_f64(xf_dtype t, double v)
{
    int bits = xf_dtype_bits(t);
    bool is_signed = t == XF_DT_INT4 || t == XF_DT_INT2;
    double lo = is_signed ? -(double)(1 << (bits - 1)) : 0, hi = is_signed ? (1 << (bits - 1)) - 1 : (1 << bits) - 1;
    double r = trunc(v);
    return r >= lo && r <= hi ? (unsigned)(int64_t)r & ((1u << bits) - 1) : 0;
}

int64_t xf_rt_load_i64(xf_dtype t, const void *p, int64_t i)
{
    switch (t) {
    case XF_DT_INT8: return ((const int8_t *)p)[i];
    case XF_DT_UINT8: return ((const uint8_t *)p)[i];
    case XF_DT_INT16: return ((const int16_t *)p)[i];
    case XF_DT_UINT16: return ((const uint16_t *)p)[i];
    case XF_DT_INT32: return ((const int32_t *)p)[i];
    case XF_DT_UINT32: return ((const uint32_t *)p)[i];
    case XF_DT_INT64: return ((const int64_t *)p)[i];
    case XF_DT_UINT64: return (int64_t)((const uint64_t *)p)[i];
    case XF_DT_BOOL: return ((const uint8_t *)p)[i] != 0;
    case XF_DT_INT4:
    case XF_DT_UINT4:
    case XF_DT_INT2:
    case XF_DT_UINT2: return packed_int(t, p, i);
    default: return xf_rt_f64_to_i64(xf_rt_load_f64(t, p, i));
    }
}

double xf_rt_load_f64(xf_dtype t, const void *p, int64_t i)
{
    switch (t) {
    case XF_DT_FLOAT: return ((const float *)p)[i];
    case XF_DT_DOUBLE: return ((const double *)p)[i];
    case XF_DT_FLOAT16: return xf_f16_to_f32(((const uint16_t *)p)[i]);
    case XF_DT_BFLOAT16: return xf_bf16_to_f32(((const uint16_t *)p)[i]);
    case XF_DT_UINT64: return (double)((const uint64_t *)p)[i];
    case XF_DT_FLOAT4E2M1: return xf_float4_to_f32((uint8_t)xf_rt_packed_code(t, p, i));
    case XF_DT_FLOAT8E8M0: return xf_e8m0_to_f32(((const uint8_t *)p)[i]);
    default:
        if (xf_float8_known(t))
            return xf_float8_to_f32(t, ((const uint8_t *)p)[i]);
        /* types only carried (no arithmetic) read as 0 */
        return xf_rt_is_integral(t) ? (double)xf_rt_load_i64(t, p, i) : 0.0;
    }
}

void xf_rt_store_i64(xf_dtype t, void *p, int64_t i, int64_t v)
{
    switch (t) {
    case XF_DT_INT8: ((int8_t *)p)[i] = (int8_t)v; break;
    case XF_DT_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case XF_DT_INT16: ((int16_t *)p)[i] = (int16_t)v; break;
    case XF_DT_UINT16: ((uint16_t *)p)[i] = (uint16_t)v; break;
    case XF_DT_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
    case XF_DT_UINT32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    case XF_DT_INT64: ((int64_t *)p)[i] = v; break;
    case XF_DT_UINT64: ((uint64_t *)p)[i] = (uint64_t)v; break;
    case XF_DT_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    case XF_DT_FLOAT: ((float *)p)[i] = (float)v; break;
    case XF_DT_DOUBLE: ((double *)p)[i] = (double)v; break;
    case XF_DT_FLOAT16: ((uint16_t *)p)[i] = xf_f32_to_f16((float)v); break;
    case XF_DT_BFLOAT16: ((uint16_t *)p)[i] = xf_f32_to_bf16((float)v); break;
    case XF_DT_INT4:
    case XF_DT_UINT4:
    case XF_DT_INT2:
    case XF_DT_UINT2: packed_set(t, p, i, (unsigned)v); break; /* wraps, as narrowing integers do */
    case XF_DT_FLOAT8E4M3FN:
    case XF_DT_FLOAT8E4M3FNUZ:
    case XF_DT_FLOAT8E5M2:
    case XF_DT_FLOAT8E5M2FNUZ:
    case XF_DT_FLOAT8E8M0:
    case XF_DT_FLOAT4E2M1: xf_rt_store_f64(t, p, i, (double)v); break;
    default: break;
    }
}

void xf_rt_store_f64(xf_dtype t, void *p, int64_t i, double v)
{
    switch (t) {
    case XF_DT_FLOAT: ((float *)p)[i] = (float)v; break;
    case XF_DT_DOUBLE: ((double *)p)[i] = v; break;
    case XF_DT_FLOAT16: ((uint16_t *)p)[i] = xf_f32_to_f16((float)v); break;
    case XF_DT_BFLOAT16: ((uint16_t *)p)[i] = xf_f32_to_bf16((float)v); break;
    case XF_DT_FLOAT8E4M3FN:
    case XF_DT_FLOAT8E4M3FNUZ:
    case XF_DT_FLOAT8E5M2:
    case XF_DT_FLOAT8E5M2FNUZ: ((uint8_t *)p)[i] = xf_f32_to_float8(t, (float)v, true); break; /* Cast's default */
    case XF_DT_FLOAT8E8M0: ((uint8_t *)p)[i] = xf_f32_to_e8m0((float)v, true, XF_ROUND_UP); break;
    case XF_DT_FLOAT4E2M1: packed_set(t, p, i, xf_f32_to_float4((float)v)); break;
    case XF_DT_INT4:
    case XF_DT_UINT4:
    case XF_DT_INT2:
    case XF_DT_UINT2: packed_set(t, p, i, packed_from_f64(t, v)); break;
    case XF_DT_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    case XF_DT_UINT64:
        /* the upper half of uint64 is beyond int64; NaN and negatives give 0 */
        ((uint64_t *)p)[i] = !(v > 0) ? 0 : v >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)v;
        break;
    default: xf_rt_store_i64(t, p, i, xf_rt_f64_to_i64(v)); break;
    }
}
