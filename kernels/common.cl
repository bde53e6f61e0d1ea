/*
 * common.cl — helpers shared by every clformer kernel file; prepended to each program's source
 * by the library (never pasted). Reads no tunables itself: the vector-width macros below expand
 * VW lazily, at their point of use in a kernel file that defines it.
 *
 * Contents: CLF_NEG_BIG (finite "minus infinity" for masks and running maxima: -INFINITY is
 * undefined under -cl-finite-math-only / fast-math), vector load/store/reduce helpers for width
 * VW in {1, 2, 4, 8, 16}, an iota vector, and SINCOS.
 *
 * Multiply-adds in every kernel are MAD(a, b, c). Where the device fuses them in hardware
 * (CLF_HW_FMA, which the library defines from CL_FP_FMA: PoCL on FMA CPUs, GPUs) MAD is fma():
 * PoCL unrolls and keeps in registers the packed kernels' accumulators with fma(), while with
 * a * b + c its LLVM left linear_packed's row loop rolled, the accumulators on the stack, at a
 * third of the speed. Elsewhere MAD is a * b + c, which OpenCL C may contract: rusticl reports
 * no hardware fma and emulates fma() in integer code, lane by lane, which made kernels several
 * times slower to build and to run on llvmpipe. Never mad(): PoCL computes it as a separate
 * multiply and add. Outside MAD, fma() stays only where its exact rounding is the point
 * (linear_int.cl's rounding to integers); test_host holds every kernel file to that.
 */

#define CLF_NEG_BIG (-FLT_MAX)

#ifndef CLF_HW_FMA
#define CLF_HW_FMA 0
#endif
#if CLF_HW_FMA
#define MAD(a, b, c) fma((a), (b), (c))
#else
#define MAD(a, b, c) ((a) * (b) + (c))
#endif

#define CLF_CAT_(a, b) a##b
#define CLF_CAT(a, b)  CLF_CAT_(a, b)

typedef float float1;
typedef int int1;

/* Width-1 stand-ins for vloadN/vstoreN. */
static inline float clf_vload1(size_t i, const __global float *p) {
    return p[i];
}
static inline void clf_vstore1(float v, size_t i, __global float *p) {
    p[i] = v;
}
#define clf_vload2   vload2
#define clf_vload4   vload4
#define clf_vload8   vload8
#define clf_vload16  vload16
#define clf_vstore2  vstore2
#define clf_vstore4  vstore4
#define clf_vstore8  vstore8
#define clf_vstore16 vstore16

/* Horizontal reductions. */
static inline float clf_hsum1(float v) {
    return v;
}
static inline float clf_hsum2(float2 v) {
    return v.x + v.y;
}
static inline float clf_hsum4(float4 v) {
    return clf_hsum2(v.lo + v.hi);
}
static inline float clf_hsum8(float8 v) {
    return clf_hsum4(v.lo + v.hi);
}
static inline float clf_hsum16(float16 v) {
    return clf_hsum8(v.lo + v.hi);
}
static inline float clf_hmax1(float v) {
    return v;
}
static inline float clf_hmax2(float2 v) {
    return fmax(v.x, v.y);
}
static inline float clf_hmax4(float4 v) {
    return clf_hmax2(fmax(v.lo, v.hi));
}
static inline float clf_hmax8(float8 v) {
    return clf_hmax4(fmax(v.lo, v.hi));
}
static inline float clf_hmax16(float16 v) {
    /* fmax's NaN rule (a NaN loses) as a plain select: Oclgrind 21.10's uninitialized-value
     * check wrongly flags fmax(float8, float8) on the halves of a float16 ("Controlflow depends
     * on uninitialized value"), the same code through a select it reads right. */
    const float8 a = v.lo, b = v.hi;
    return clf_hmax8((isgreater(a, b) | isnan(b)) ? a : b);
}

#define CLF_IOTA1  (0)
#define CLF_IOTA2  ((int2)(0, 1))
#define CLF_IOTA4  ((int4)(0, 1, 2, 3))
#define CLF_IOTA8  ((int8)(0, 1, 2, 3, 4, 5, 6, 7))
#define CLF_IOTA16 ((int16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15))

/* Width-VW forms, for kernel files that define VW. */
#define floatV          CLF_CAT(float, VW)
#define intV            CLF_CAT(int, VW)
#define VLOAD(i, p)     CLF_CAT(clf_vload, VW)((i), (p))
#define VSTORE(v, i, p) CLF_CAT(clf_vstore, VW)((v), (i), (p))
#define HSUM(v)         CLF_CAT(clf_hsum, VW)(v)
#define HMAX(v)         CLF_CAT(clf_hmax, VW)(v)
#define IOTA            CLF_CAT(CLF_IOTA, VW)
/* Through names of our own: CLF_CAT expands its arguments first, and PoCL defines convert_float
 * as an object-like macro (it would paste into _cl_convert_float1, which does not exist). */
#define convert_floatV         CLF_CAT(clf_convert_float, VW)
#define clf_convert_float1(x)  ((float)(x))
#define clf_convert_float2(x)  convert_float2(x)
#define clf_convert_float4(x)  convert_float4(x)
#define clf_convert_float8(x)  convert_float8(x)
#define clf_convert_float16(x) convert_float16(x)
/* fp16 storage (core OpenCL: vload_half/vstore_half need no cl_khr_fp16), width VW: VW halfs from
 * p + i * VW as a floatV. */
#define VLOAD_HALF(i, p)      CLF_CAT(clf_vload_half, VW)((i), (p))
#define clf_vload_half1(i, p) vload_half((i), (p))
#define clf_vload_half2       vload_half2
#define clf_vload_half4       vload_half4
/* Where the kernel compiler targets x86's F16C (PoCL on CPUs since Haswell), 8 and 16 halfs are
 * one vcvtph2ps: PoCL's vload_half8/16 convert element by element in integer code (about 17
 * instructions each). The values are the same (every half is a float). */
#if defined(__clang__) && defined(__F16C__)
static inline float8 clf_vload_half8(size_t i, const __global half *p) {
    return __builtin_ia32_vcvtph2ps256(as_short8(vload8(i, (const __global ushort *)p)));
}
#else
#define clf_vload_half8 vload_half8
#endif
#if defined(__clang__) && defined(__AVX512F__)
static inline float16 clf_vload_half16(size_t i, const __global half *p) {
    return __builtin_ia32_vcvtph2ps512_mask(as_short16(vload16(i, (const __global ushort *)p)),
                                            (float16)(0.0f), (ushort)0xffff, 4);
}
#else
#define clf_vload_half16 vload_half16
#endif
/* A whole private float[VW] as one vector (vloadN/vstoreN on private memory; width 1: the element).
 */
#define PRIV_VLOAD(a)           CLF_CAT(clf_priv_vload, VW)(a)
#define PRIV_VSTORE(v, a)       CLF_CAT(clf_priv_vstore, VW)((v), (a))
#define clf_priv_vload1(a)      ((a)[0])
#define clf_priv_vstore1(v, a)  ((a)[0] = (v))
#define clf_priv_vload2(a)      vload2(0, (a))
#define clf_priv_vload4(a)      vload4(0, (a))
#define clf_priv_vload8(a)      vload8(0, (a))
#define clf_priv_vload16(a)     vload16(0, (a))
#define clf_priv_vstore2(v, a)  vstore2((v), 0, (a))
#define clf_priv_vstore4(v, a)  vstore4((v), 0, (a))
#define clf_priv_vstore8(v, a)  vstore8((v), 0, (a))
#define clf_priv_vstore16(v, a) vstore16((v), 0, (a))

/*
 * SINCOS(x, &c): sin x, and cos x into *c, elementwise on a floatV, for |x| < 2^24 (width N:
 * clf_sincosN). One range reduction serves both: x = k pi/2 + r, |r| <= pi/4, against pi/2 split
 * in 12-bit pieces (Cody-Waite) with k split in 12-bit halves, so every product that matters is
 * exact without fma; the small terms add up before r rounds once, and a second k2 fixes k where
 * x * 2/pi rounded to the wrong integer. Taylor polynomials of degree 9 and 10 on r (truncation
 * below 2e-9), then the quadrant k mod 4 picks and signs them. Error below 9e-8 absolute over
 * the whole range with or without contraction to fused multiply-adds (60 M points against
 * double sin/cos, on both sides of multiples of pi/2).
 * Not libclc's sin, cos or sincos: they use fma(), which rusticl emulates (above), and a vector
 * of them took minutes to build on llvmpipe at VW 16.
 */
#define CLF_SINCOS_DEF(N)                                                                          \
    static inline float##N clf_sincos##N(const float##N x, float##N *c) {                          \
        const float two_pi = 0.63661977236758134f; /* 2 / pi */                                    \
        const float p1 = 0x1.922p+0f, p2 = -0x1.2aep-18f, p3 = -0x1.deap-31f, p4 = 0x1.184p-44f;   \
        float##N k = rint(x * two_pi);                                                             \
        const float##N kh = trunc(k * 0x1p-12f) * 0x1p12f, kl = k - kh;                            \
        float##N a = x - kh * p1;                                                                  \
        a = a - kl * p1;                                                                           \
        a = a - kh * p2;                                                                           \
        float##N sm = kl * p2 + (kh * p3 + (kl * p3 + k * p4));                                    \
        const float##N k2 = rint((a - sm) * two_pi);                                               \
        a = a - k2 * p1;                                                                           \
        sm = sm + (k2 * p2 + k2 * p3);                                                             \
        const float##N r = a - sm, r2 = r * r;                                                     \
        k = k + k2;                                                                                \
        const float##N s =                                                                         \
            r + r * r2 *                                                                           \
                    (-1.6666667e-1f +                                                              \
                     r2 * (8.3333333e-3f + r2 * (-1.9841270e-4f + r2 * 2.7557319e-6f)));           \
        const float##N co =                                                                        \
            1.0f + r2 * (-0.5f + r2 * (4.1666667e-2f +                                             \
                                       r2 * (-1.3888889e-3f +                                      \
                                             r2 * (2.4801587e-5f + r2 * -2.7557319e-7f))));        \
        const float##N q = k - 4.0f * floor(k * 0.25f); /* quadrant 0..3 */                        \
        const int##N odd = (q == 1.0f) | (q == 3.0f);   /* 1 and 3 swap sin and cos */             \
        const float##N u = select(s, co, odd), v = select(co, s, odd);                             \
        *c = select(v, -v, fabs(q - 1.5f) < 1.0f); /* cos < 0 in quadrants 1 and 2 */              \
        return select(u, -u, q >= 2.0f);           /* sin < 0 in quadrants 2 and 3 */              \
    }
CLF_SINCOS_DEF(1)
CLF_SINCOS_DEF(2)
CLF_SINCOS_DEF(4)
CLF_SINCOS_DEF(8)
CLF_SINCOS_DEF(16)
#define SINCOS(x, c) CLF_CAT(clf_sincos, VW)((x), (c))

/*
 * CLF_DEFINE_ROW_REDUCE(NAME, OP): defines float NAME(red, lr, t, v), the OP-reduction of v over
 * the WG work-items t of row lr of a work-group of RPG rows, by a tree in local memory
 * red[RPG][WG]. Every work-item of the group must call it (it has barriers); red may be reused by
 * the next call. For kernel files with WG > 1 (a power of two).
 */
#define CLF_ADD(a, b) ((a) + (b))
#define CLF_DEFINE_ROW_REDUCE(NAME, OP)                                                            \
    static inline float NAME(__local float(*red)[WG], int lr, int t, float v) {                    \
        red[lr][t] = v;                                                                            \
        barrier(CLK_LOCAL_MEM_FENCE);                                                              \
        for (int w = WG / 2; w > 0; w >>= 1) {                                                     \
            if (t < w) red[lr][t] = OP(red[lr][t], red[lr][t + w]);                                \
            barrier(CLK_LOCAL_MEM_FENCE);                                                          \
        }                                                                                          \
        float r = red[lr][0];                                                                      \
        barrier(CLK_LOCAL_MEM_FENCE);                                                              \
        return r;                                                                                  \
    }

/*
 * The visible-keys rule of every masked kernel (softmax_rows, the attention kernels), written once:
 * query q of batch b sees keys 0 .. clf_visible_keys(...) - 1 of n, limited by its valid length
 * (lens_mode 1: lens[b] per batch; 2: lens[b * nq + q] per query; 0: none) and, when causal, by
 * q + causal_offset + 1 (query q sits at position q + causal_offset of the key sequence).
 */
static inline int clf_visible_keys(long n, int q, long b, int nq, const __global int *lens,
                                   int lens_mode, int causal, long causal_offset) {
    long lim = n;
    if (lens_mode == 1) lim = min(lim, (long)lens[b]);
    if (lens_mode == 2) lim = min(lim, (long)lens[b * nq + q]);
    if (causal) lim = min(lim, (long)q + causal_offset + 1);
    return (int)max(lim, 0L);
}

/* The first key a query sees when a sliding window keeps only the last `window` of its visible
 * keys 0 .. lim - 1 (window 0: no window, key 0). */
static inline int clf_first_key(int lim, int window) {
    return window > 0 && lim > window ? lim - window : 0;
}
