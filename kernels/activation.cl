/*
 * activation.cl — the activations of bias_act and the linear kernels, prepended (after
 * common.cl) to the programs that use them (elementwise, linear): ACT_* codes as in
 * clf_activation, act_s(v, act) for a float and act_v(v, act) for a floatV of VW lanes.
 *
 * GELU (erf) with ERF_POLY uses Abramowitz & Stegun 7.1.26, |erf error| <= 1.5e-7 absolute, so
 * the GELU error is <= 0.5 |x| 1.5e-7 plus rounding, the size of rounding x itself: PoCL 3.1's
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
#define ERF_POLY 1 /* 1: erf by polynomial + exp (vectorizes); 0: the builtin erf */
#endif

#define ACT_IDENTITY  0
#define ACT_RELU      1
#define ACT_GELU_ERF  2
#define ACT_GELU_TANH 3
#define ACT_SILU      4

/* erf(x) for width N (F float type): Abramowitz & Stegun 7.1.26. */
#define DEFINE_ERF(F, NAME)                                                                        \
    inline F NAME(F x) {                                                                           \
        F ax = fabs(x);                                                                            \
        F t = 1.0f / fma(ax, (F)(0.3275911f), (F)(1.0f));                                          \
        F p = fma(t, (F)(1.061405429f), (F)(-1.453152027f));                                       \
        p = fma(p, t, (F)(1.421413741f));                                                          \
        p = fma(p, t, (F)(-0.284496736f));                                                         \
        p = fma(p, t, (F)(0.254829592f));                                                          \
        return copysign(1.0f - p * t * exp(-ax * ax), x);                                          \
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

inline float act_s(float v, int act) {
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
inline floatV act_v(floatV v, int act) {
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
