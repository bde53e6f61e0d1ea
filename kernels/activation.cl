/*
 * activation.cl — the activations of bias_act and the linear kernels, prepended (after
 * common.cl) to the programs that use them (elementwise, linear): ACT_* codes as in
 * clf_activation, act_s(v, act) for a float and act_v(v, act) for a floatV of VW lanes.
 *
 * GELU (erf) with ERF_POLY uses a rational erf (below), |erf error| <= 3.4e-7 absolute in fp32,
 * so the GELU error is <= 0.5 |x| 3.4e-7 plus rounding, a few roundings of x itself: PoCL 3.1's
 * erf(float16) does not vectorize (9.7 ms vs 2.0 ms for 4096 x 1024 on 2 cores). GELU (tanh) is
 * computed as x / (1 + e^(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3), which equals
 * 0.5 x (1 + tanh(u)) and needs one exp instead of tanh (4.0 ms with the builtin tanh).
 * SiLU is x / (1 + e^(-x)): for x < -88, e^(-x) overflows to inf and the result is -0, the
 * limit (the true value is below 1e-36 in magnitude).
 *
 * Tunables (of the program it is prepended to): VW, ERF_POLY.
 */
#ifndef VW
#define VW 16 /* floats per work-item */
#endif
#ifndef ERF_POLY
#define ERF_POLY 1 /* 1: erf by a rational function (vectorizes); 0: the builtin erf */
#endif

#define ACT_IDENTITY  0
#define ACT_RELU      1
#define ACT_GELU_ERF  2
#define ACT_GELU_TANH 3
#define ACT_SILU      4

/* erf(x) for width N (F float type): a rational x P(x^2) / Q(x^2) (degrees 5 and 5 in x^2) on
 * |x| <= 3.9, fitted for this file by a weighted least-squares (Lawson) iteration in double
 * (tools/fit_erf.py): |error| <= 1.5e-8 in exact arithmetic, plus 3.5e-8 for erf(3.9) < 1 past
 * the clamp; in fp32 with FMA <= 3.4e-7 (measured by emulating this code's roundings over 2e6
 * points of [-6, 6]), the result clamped to [-1, 1]. No exp: 12 FMAs, a division and clamps,
 * against A & S 7.1.26's division, exp and 5 FMAs (bias_gelu at cache-resident sizes was
 * compute-bound on PoCL, 2.7 G elements/s on 2 Zen 4 cores). */
#define DEFINE_ERF(F, NAME)                                                                        \
    static inline F NAME(F x) {                                                                    \
        const F a = fmin(fabs(x), (F)(3.9f)), t = a * a;                                           \
        F p = MAD(t, (F)(2.050330522e-06f), (F)(2.874518395e-04f));                                \
        p = MAD(p, t, (F)(3.836835036e-03f));                                                      \
        p = MAD(p, t, (F)(5.296677351e-02f));                                                      \
        p = MAD(p, t, (F)(1.919406652e-01f));                                                      \
        p = MAD(p, t, (F)(1.128378987e+00f));                                                      \
        F q = MAD(t, (F)(3.822987128e-05f), (F)(1.181716099e-03f));                                \
        q = MAD(q, t, (F)(1.510912366e-02f));                                                      \
        q = MAD(q, t, (F)(1.147579625e-01f));                                                      \
        q = MAD(q, t, (F)(5.034347773e-01f));                                                      \
        q = MAD(q, t, (F)(1.0f));                                                                  \
        return copysign(fmin(a * p / q, (F)(1.0f)), x);                                            \
    }
DEFINE_ERF(float, erf_poly1)
#if VW > 1
DEFINE_ERF(floatV, erf_polyV)
#endif

#if ERF_POLY
#define ERF_S(v) erf_poly1(v)
#define ERF_V(v) erf_polyV(v)
#else
#define ERF_S(v) erf(v)
#define ERF_V(v) erf(v)
#endif
#define SQRT_HALF 0.70710678118654752f
#define GELU_C    0.79788456080286536f /* sqrt(2 / pi) */

static inline float act_s(float v, int act) {
    switch (act) {
    case ACT_RELU:
        return fmax(v, 0.0f);
    case ACT_GELU_ERF:
        return 0.5f * v * (1.0f + ERF_S(v * SQRT_HALF));
    case ACT_GELU_TANH:
        return v / (1.0f + exp(-2.0f * GELU_C * (v + 0.044715f * v * v * v)));
    case ACT_SILU:
        return v / (1.0f + exp(-v));
    default:
        return v;
    }
}

#if VW > 1
static inline floatV act_v(floatV v, int act) {
    switch (act) {
    case ACT_RELU:
        return fmax(v, (floatV)(0.0f));
    case ACT_GELU_ERF:
        return 0.5f * v * (1.0f + ERF_V(v * SQRT_HALF));
    case ACT_GELU_TANH:
        return v / (1.0f + exp(-2.0f * GELU_C * (v + 0.044715f * v * v * v)));
    case ACT_SILU:
        return v / (1.0f + exp(-v));
    default:
        return v;
    }
}
#else
#define act_v act_s
#endif
