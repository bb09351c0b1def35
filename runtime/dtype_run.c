/* Runs of elements converted to and from double and int64 a block at a
 * time: the per-dtype dispatch of dtype.c done once per run, with loops
 * the compiler vectorizes for the common types.  Every conversion is the
 * one xf_rt_load_* and xf_rt_store_* make element by element. */
#include "xf_rt_internal.h"

#define AS_IS(x) (x)
#define NONZERO(x) ((x) != 0)
#define F16_F32(x) xf_f16_to_f32(x)
#define F64_F16(x) xf_f32_to_f16((float)(x))
#define F64_I64(x) xf_rt_f64_to_i64(x)

/* buf[k] = CONV(element i + k * s) as V, for buffers of type T */
#define LOAD_RUN(T, V, CONV)                                                                                       \
    do {                                                                                                           \
        const T *p = (const T *)base + i;                                                                          \
        if (s == 1) {                                                                                              \
            for (int64_t k = 0; k < n; k++)                                                                        \
                buf[k] = (V)CONV(p[k]);                                                                            \
        } else if (s == 0) {                                                                                       \
            V v0 = (V)CONV(p[0]);                                                                                  \
            for (int64_t k = 0; k < n; k++)                                                                        \
                buf[k] = v0;                                                                                       \
        } else {                                                                                                   \
            for (int64_t k = 0; k < n; k++)                                                                        \
                buf[k] = (V)CONV(p[k * s]);                                                                        \
        }                                                                                                          \
        return buf;                                                                                                \
    } while (0)

const double *xf_rt_load_f64_run(xf_dtype t, const void *base, int64_t i, int64_t s, int64_t n, double *buf)
{
    if (n <= 0)
        return buf;
    switch (t) {
    case XF_DT_DOUBLE:
        if (s == 1)
            return (const double *)base + i;
        LOAD_RUN(double, double, AS_IS);
    case XF_DT_FLOAT: LOAD_RUN(float, double, AS_IS);
    case XF_DT_FLOAT16: LOAD_RUN(uint16_t, double, F16_F32);
    case XF_DT_INT64: LOAD_RUN(int64_t, double, AS_IS);
    case XF_DT_INT32: LOAD_RUN(int32_t, double, AS_IS);
    case XF_DT_INT8: LOAD_RUN(int8_t, double, AS_IS);
    case XF_DT_UINT8: LOAD_RUN(uint8_t, double, AS_IS);
    case XF_DT_BOOL: LOAD_RUN(uint8_t, double, NONZERO);
    default:
        for (int64_t k = 0; k < n; k++)
            buf[k] = xf_rt_load_f64(t, base, i + k * s);
        return buf;
    }
}

const int64_t *xf_rt_load_i64_run(xf_dtype t, const void *base, int64_t i, int64_t s, int64_t n, int64_t *buf)
{
    if (n <= 0)
        return buf;
    switch (t) {
    case XF_DT_INT64:
        if (s == 1)
            return (const int64_t *)base + i;
        LOAD_RUN(int64_t, int64_t, AS_IS);
    case XF_DT_UINT64: LOAD_RUN(uint64_t, int64_t, AS_IS);
    case XF_DT_INT32: LOAD_RUN(int32_t, int64_t, AS_IS);
    case XF_DT_UINT32: LOAD_RUN(uint32_t, int64_t, AS_IS);
    case XF_DT_INT16: LOAD_RUN(int16_t, int64_t, AS_IS);
    case XF_DT_UINT16: LOAD_RUN(uint16_t, int64_t, AS_IS);
    case XF_DT_INT8: LOAD_RUN(int8_t, int64_t, AS_IS);
    case XF_DT_UINT8: LOAD_RUN(uint8_t, int64_t, AS_IS);
    case XF_DT_BOOL: LOAD_RUN(uint8_t, int64_t, NONZERO);
    default:
        for (int64_t k = 0; k < n; k++)
            buf[k] = xf_rt_load_i64(t, base, i + k * s);
        return buf;
    }
}

/* element i + k = CONV(v[k]) as T */
#define STORE_RUN(T, CONV)                                                                                         \
    do {                                                                                                           \
        T *p = (T *)base + i;                                                                                      \
        for (int64_t k = 0; k < n; k++)                                                                            \
            p[k] = (T)CONV(v[k]);                                                                                  \
        return;                                                                                                    \
    } while (0)

void xf_rt_store_f64_run(xf_dtype t, void *base, int64_t i, int64_t n, const double *v)
{
    if (n <= 0) /* an empty output may have no buffer */
        return;
    switch (t) {
    case XF_DT_DOUBLE:
        if ((const double *)base + i == v)
            return;
        STORE_RUN(double, AS_IS);
    case XF_DT_FLOAT: STORE_RUN(float, AS_IS);
    case XF_DT_FLOAT16: STORE_RUN(uint16_t, F64_F16);
    case XF_DT_BOOL: STORE_RUN(uint8_t, NONZERO);
    case XF_DT_INT64: STORE_RUN(int64_t, F64_I64);
    case XF_DT_INT32: STORE_RUN(int32_t, F64_I64);
    case XF_DT_INT8: STORE_RUN(int8_t, F64_I64);
    case XF_DT_UINT8: STORE_RUN(uint8_t, F64_I64);
    default:
        for (int64_t k = 0; k < n; k++)
            xf_rt_store_f64(t, base, i + k, v[k]);
        return;
    }
}

void xf_rt_store_i64_run(xf_dtype t, void *base, int64_t i, int64_t n, const int64_t *v)
{
    if (n <= 0)
        return;
    switch (t) {
    case XF_DT_INT64:
        if ((const int64_t *)base + i == v)
            return;
        STORE_RUN(int64_t, AS_IS);
    case XF_DT_UINT64: STORE_RUN(uint64_t, AS_IS);
    case XF_DT_INT32: STORE_RUN(int32_t, AS_IS);
    case XF_DT_UINT32: STORE_RUN(uint32_t, AS_IS);
    case XF_DT_INT16: STORE_RUN(int16_t, AS_IS);
    case XF_DT_UINT16: STORE_RUN(uint16_t, AS_IS);
    case XF_DT_INT8: STORE_RUN(int8_t, AS_IS);
    case XF_DT_UINT8: STORE_RUN(uint8_t, AS_IS);
    case XF_DT_BOOL: STORE_RUN(uint8_t, NONZERO);
    case XF_DT_FLOAT: STORE_RUN(float, AS_IS);
    case XF_DT_DOUBLE: STORE_RUN(double, AS_IS);
    default:
        for (int64_t k = 0; k < n; k++)
            xf_rt_store_i64(t, base, i + k, v[k]);
        return;
    }
}
