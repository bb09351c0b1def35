/* The cpu backend's exponentials and activations without a branch or a
 * library call, so that loops of them vectorize (in files compiled with
 * -fno-trapping-math, where GCC computes both sides of a select): e^y in
 * double (Erf's loop, ReduceLogSumExp) and in float, and the logistic
 * function and tanh in float (the quantized LSTM's cell,
 * cpu_dnnl_rnn_steps.c), which test_cpu_rnn measures against the values
 * in double. */
#ifndef XF_CPU_DNNL_ACTS_H
#define XF_CPU_DNNL_ACTS_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* e^y for y in [-87, 0] (what lies below, and NaN, taken as -87: e^-87 =
 * 1.6e-38, nothing beside a 1 in a sum): y = k ln 2 + r with |r| <= ln 2 /
 * 2 (k rounded by adding and taking away 1.5 * 2^52), e^r by its Taylor
 * series to r^12 (error below 2e-16), 2^k from a float's exponent bits.
 * No branch and no library call: loops of it vectorize. */
static inline double xf_dn_exp_neg(double y)
{
    const double shifter = 6755399441055744.0;
    y = y > -87.0 ? y : -87.0;
    double kd = (y * 1.4426950408889634 + shifter) - shifter;
    double r = y - kd * 0.69314718055994529 - kd * 2.3190468138462996e-17;
    double p = 1.0 / 479001600;
    static const double inv_fact[] = {1.0 / 39916800, 1.0 / 3628800, 1.0 / 362880, 1.0 / 40320, 1.0 / 5040, 1.0 / 720,
                                      1.0 / 120,      1.0 / 24,      1.0 / 6,      0.5,         1.0,        1.0};
#pragma GCC unroll 12
    for (int i = 0; i < 12; i++)
        p = p * r + inv_fact[i];
    int32_t bits = ((int32_t)kd + 127) * (1 << 23);
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

/* e^y for y <= 0 in float (y below -87, or NaN, taken as -87, where the
 * result would leave float's normal numbers): 2^k times a polynomial of degree 7
 * of the rest r (|r| <= ln 2 / 2, its error below 6e-9 relative). */
static inline float xf_float_exp_neg(float y)
{
    const float shifter = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
    y = y > -87.0f ? y : -87.0f;
    float kf = (y * 1.44269504f + shifter) - shifter;
    float r = y - kf * 0.693145752f - kf * 1.42860677e-6f; /* ln 2 in two parts, the first exact times k */
    float p = 1.0f / 5040;
    static const float inv_fact[] = {1.0f / 720, 1.0f / 120, 1.0f / 24, 1.0f / 6, 0.5f, 1.0f, 1.0f};
#pragma GCC unroll 7
    for (int i = 0; i < 7; i++)
        p = p * r + inv_fact[i];
    int32_t bits = ((int32_t)kf + 127) * (1 << 23);
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

/* The logistic function and tanh of x in float by e^-|x|, within a few
 * ulp (tanh of |x| below 1/4 by its series, where 1 - e^-2|x| would
 * cancel), as ONNX Runtime's are float approximations; NaN stays NaN. */
static inline float xf_float_logistic(float x)
{
    float t = xf_float_exp_neg(-fabsf(x)), s = 1.0f / (1.0f + t);
    return x >= 0.0f ? s : x < 0.0f ? t * s : x;
}

static inline float xf_float_tanh(float x)
{
    float a = fabsf(x), t = xf_float_exp_neg(-2.0f * a), a2 = a * a;
    float series = a * (1.0f + a2 * (-1.0f / 3 + a2 * (2.0f / 15 + a2 * (-17.0f / 315 + a2 * (62.0f / 2835)))));
    float r = a < 0.25f ? series : (1.0f - t) / (1.0f + t);
    return x >= 0.0f ? r : x < 0.0f ? -r : x;
}

#endif
