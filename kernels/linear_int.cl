/*
 * linear_int.cl — block-type weights against x in integers, for linear.cl's packed kernels (the
 * CPU style: panels of PK_NV vectors of VW columns, dtypes.cl "panels"). Prepended to linear.cl.
 *
 * Per group of 32 elements of a row of x (a Q8_0/Q4_0 block, a Q4_K sub-block, two Q6_K scale
 * groups of 16) x is quantized to integers xi with one scale dx = max |x| / XQMAX (xi = x / dx
 * rounded to nearest even): int16 (XQMAX 32767), or with QX 2 int8 (127) for the types of at most
 * 6 bits (Q4_0, Q4_K, Q6_K; Q8_0 keeps int16). With w = s q - m per scale group (s, m:
 * dt_panel_sm), sum w x = s dx sum q xi - m dx sum xi: the sums over q xi are exact integers
 * (dtypes.cl: clf_dp_pairs for int16 pairs, clf_dp_quads for int8 quads), only the final scaling
 * rounds. Each element of x moves by at most dx / 2, so an output moves by at most
 * sum |w| max |x_32| / (2 XQMAX) against the float sums (test_dtypes holds every path to it).
 *   pairs_group: one or two rows (decoding), x quantized by the work-item itself.
 *   quantize_x / xq_group___global: many rows (linear.QROWS), x quantized once per call by
 *             quantize_x into the context's scratch, then read by every panel's work-items.
 *   xq_put___local / xq_group___local: one or two rows (linear.LQ_WG), x quantized once per
 *             work-group of LQ_WG panels into local memory (linear.cl, linear_packed_lq).
 * x is contiguous (block types come from clf_linear only; the host checks).
 *
 * Tunables (also read by linear.cl): VW, PK_R, PK_NV, QX, QR, VNNI; DT per call.
 */
#ifndef VW
#define VW 16 /* floats per work-item */
#endif
#ifndef PK_R
#define PK_R 8 /* rows of x per work-item of linear_packed */
#endif
#ifndef PK_NV
#define PK_NV 2 /* vectors of VW output columns per work-item (the panel width / VW) */
#endif
#ifndef QX
#define QX 1 /* block types at 1-2 rows: in integers (pairs_group); 0: floats; 2: int8 x */
#endif
#ifndef QR
#define QR 4 /* rows of x per work-item of linear_packed_xq */
#endif
#ifndef VNNI
#define VNNI 0 /* 1: dtypes.cl's integer sums through AVX512-VNNI (the host checks the CPU) */
#endif

/* rows of a work-item in any packed kernel: max(PK_R, QR, 4) */
#define XR_MAX (PK_R > QR ? (PK_R > 4 ? PK_R : 4) : (QR > 4 ? QR : 4))

#if DT_BLOCK > 1 && (VW == 8 || VW == 16)
/* The functions below are inlined always: each is called with R a constant, so that its loops
 * over rows unroll and its arrays stay in registers (group_dots is too large for LLVM's own
 * threshold: a call with R an argument kept them on the stack at 0.6x the speed). */
#define CLF_ALWAYS_INLINE static inline __attribute__((always_inline))
/* NX: groups of 32 of x per call (Q4_K: sub-blocks g and g + 1, the two nibbles of one byte of
 * the words); NH: scale groups per call (Q6_K: two of 16 in the 32; Q4_K: one per sub-block).
 * XQ_STEP (linear.cl): a call every XQ_STEP scale groups. */
#if DT == CLF_DT_Q4_K
#define NX 2
#define NH 2
#elif DT == CLF_DT_Q6_K
#define NX 1
#define NH 2
#else
#define NX 1
#define NH 1
#endif
#define XQ_STEP (DT == CLF_DT_Q4_K || DT == CLF_DT_Q6_K ? 2 : 1)
#if QX == 2 && DT != CLF_DT_Q8_0
#define XQ8   1
#define XQMAX 127.0f
#else
#define XQ8   0
#define XQMAX 32767.0f
#endif

/* The 32 floats at x (g not NULL: x rs g, RMSNorm's output with rs its 1 / rms and g its
 * gamma at the same 32) as integers: int16 pairs pa[t] = (xi[4t], xi[4t + 2]) and pb[t] = (xi[4t +
 * 1], xi[4t + 3]), t < 8, each the 16-bit halves of a word (XQ8: pa[t] the bytes xi[4t .. 4t + 3],
 * pb unused), their scale *dx and dx times the sums of xi: ds[0] over elements 0 .. 15, ds[1]
 * over 16 .. 31, ds[2] over all 32. */
CLF_ALWAYS_INLINE void xq_quantize(const __global float *x, const __global float *g, const float rs,
                                   int *pa, int *pb, float *dx, float *ds) {
    float16 x0 = vload16(0, x), x1 = vload16(1, x);
    if (g) { /* RMSNorm's output, as layernorm.cl's rmsnorm_rows computes it: x rs gamma */
        x0 = x0 * rs * vload16(0, g);
        x1 = x1 * rs * vload16(1, g);
    }
    /* max |x| as integers (the order of non-negative floats); xi rounded to nearest even by
     * adding 1.5 2^23 in the FMA (|x / dx| <= XQMAX: the sum's low mantissa bits are xi): a few
     * instructions, where fmax, rint and convert_int_rte compile to NaN and rounding fix-ups in
     * PoCL */
    const int16 a = max(as_int16(fabs(x0)), as_int16(fabs(x1)));
    const int8 a8 = max(a.lo, a.hi);
    const int4 a4 = max(a8.lo, a8.hi);
    const int2 a2 = max(a4.lo, a4.hi);
    const float amax = as_float(max(a2.x, a2.y));
    const float d = amax * (1.0f / XQMAX);
    /* a group below 2^-100 counts as zero: XQMAX / amax must not overflow */
    const float id = amax > 0x1p-100f ? XQMAX / amax : 0.0f;
    const int16 i0 = as_int16(fma(x0, (float16)(id), 12582912.0f)) - 0x4b400000,
                i1 = as_int16(fma(x1, (float16)(id), 12582912.0f)) - 0x4b400000;
    const int8 s0 = i0.lo + i0.hi, s1 = i1.lo + i1.hi;
    const int4 s04 = s0.lo + s0.hi, s14 = s1.lo + s1.hi;
    const int sa = s04.x + s04.y + s04.z + s04.w, sb = s14.x + s14.y + s14.z + s14.w;
    *dx = d;
    ds[0] = d * (float)sa;
    ds[1] = d * (float)sb;
    ds[2] = d * (float)(sa + sb);
#if XQ8
    vstore4(as_int4(convert_char16(i0)), 0, pa);
    vstore4(as_int4(convert_char16(i1)), 1, pa);
    (void)pb;
#else
    vstore4((i0.s048c & 0xffff) | (i0.s26ae << 16), 0, pa);
    vstore4((i1.s048c & 0xffff) | (i1.s26ae << 16), 1, pa);
    vstore4((i0.s159d & 0xffff) | (i0.s37bf << 16), 0, pb);
    vstore4((i1.s159d & 0xffff) | (i1.s37bf << 16), 1, pb);
#endif
}

/* ai[r][.][j] += a word of nibbles (VW columns) against x: the low nibbles (bytes u: elements
 * 4t + u) against x word t into chain 0, the high ones against x word h + t into chain c1. */
CLF_ALWAYS_INLINE void nibble_dots(const uintV w, const int t, const int h, const int c1,
                                   const int j, const int R, int (*pa)[16], int (*pbb)[16],
                                   intV (*ai)[2][PK_NV]) {
#if XQ8
    const uintV lo = w & 0x0f0f0f0fu, hi = (w >> 4) & 0x0f0f0f0fu;
#pragma unroll
    for (int r = 0; r < R; r++) {
        ai[r][0][j] = clf_dp_quads(ai[r][0][j], lo, &pa[r][t]);
        ai[r][c1][j] = clf_dp_quads(ai[r][c1][j], hi, &pa[r][h + t]);
    }
#else
    const uintV m0 = w & 0x000f000fu, m1 = (w >> 8) & 0x000f000fu, m2 = (w >> 4) & 0x000f000fu,
                m3 = (w >> 12) & 0x000f000fu;
#pragma unroll
    for (int r = 0; r < R; r++) {
        ai[r][0][j] = clf_dp_pairs(clf_dp_pairs(ai[r][0][j], m0, &pa[r][t]), m1, &pbb[r][t]);
        ai[r][c1][j] =
            clf_dp_pairs(clf_dp_pairs(ai[r][c1][j], m2, &pa[r][h + t]), m3, &pbb[r][h + t]);
    }
#endif
}

/* ai[r][n][j] += the integer sums of group g (32 elements; Q6_K: groups g and g + 1, n the
 * group) of the PK_NV vectors of columns of block pb against row r's pa[r], pb[r]; where NH is 1
 * and R at most 2, n = 0 and 1 take alternate words (two dependency chains through VNNI's
 * accumulating instructions; more rows have chains enough and no registers to spare), summed by
 * group_scale. */
#define CH(t) (R > 2 ? 0 : (t)&1)
/* Step jt of the words loop: word t (of T) of vector j. At one or two rows (decoding, reading
 * from DRAM) word by word across the vectors, so that the loads walk the panel in order (Q8_0's
 * gemv at 11008 x 4096 ran 0.76x the other way); at more rows one vector after the other (the
 * weights of one in registers at a time: the other order spilled accumulators at 4 rows). */
#define JT(T) const int j = R > 2 ? jt / (T) : jt % PK_NV, t = R > 2 ? jt % (T) : jt / PK_NV
CLF_ALWAYS_INLINE void group_dots(const __global uchar *pb, const int pw, const int g, const int R,
                                  int (*pa)[16], int (*pbb)[16], intV (*ai)[2][PK_NV]) {
#if DT == CLF_DT_Q8_0
    /* word t < 8: bytes elements 4t + u */
#pragma unroll
    for (int jt = 0; jt < PK_NV * 8; jt++) {
        JT(8);
        uintV m0, m1;
        clf_i8_pairs(clf_panel_words(pb, pw, t, j * VW), &m0, &m1);
#pragma unroll
        for (int r = 0; r < R; r++)
            ai[r][CH(t)][j] =
                clf_dp_pairs(clf_dp_pairs(ai[r][CH(t)][j], m0, &pa[r][t]), m1, &pbb[r][t]);
    }
#elif DT == CLF_DT_Q4_0
    /* word t < 4: low nibbles elements 4t + u, high nibbles 16 + 4t + u */
#pragma unroll
    for (int jt = 0; jt < PK_NV * 4; jt++) {
        JT(4);
        nibble_dots(clf_panel_words(pb, pw, t, j * VW), t, 4, CH(1), j, R, pa, pbb, ai);
    }
#elif DT == CLF_DT_Q4_K
    /* sub-blocks g and g + 1 (g even): words 8 (g / 2) .. + 7, word t holding elements 4t + u of
     * g in its low nibbles and of g + 1 in its high ones (x: pa[r][t], pa[r][8 + t]) */
#pragma unroll
    for (int jt = 0; jt < PK_NV * 8; jt++) {
        JT(8);
        nibble_dots(clf_panel_words(pb, pw, 8 * (g >> 1) + t, j * VW), t, 8, 1, j, R, pa, pbb, ai);
    }
#elif DT == CLF_DT_Q6_K
    /* Q6_K, elements 128 h + 32 q + l (c = g / 2 = 4 h + q): the low nibble (q >= 2: high) of
     * ql word 16 h + 8 (q % 2) + l / 4 and bits 2q, 2q + 1 of qh word 32 + 8 h + l / 4, byte
     * l % 4; l < 16 in group g, l >= 16 in g + 1 */
    const int h = g >> 3, q = (g >> 1) & 3;
    const uint shl = (uint)((q >> 1) * 4), shh = (uint)(2 * q);
#pragma unroll
    for (int jt = 0; jt < PK_NV * 8; jt++) {
        JT(8);
        const uintV wl = clf_panel_words(pb, pw, 16 * h + 8 * (q & 1) + t, j * VW) >> shl;
        const uintV wh = clf_panel_words(pb, pw, 32 + 8 * h + t, j * VW) >> shh;
#if XQ8
        const uintV q6 = (wl & 0x0f0f0f0fu) | ((wh & 0x03030303u) << 4);
#pragma unroll
        for (int r = 0; r < R; r++)
            ai[r][t >> 2][j] = clf_dp_quads(ai[r][t >> 2][j], q6, &pa[r][t]);
#else
        const uintV m0 = (wl & 0x000f000fu) | ((wh & 0x00030003u) << 4),
                    m1 = ((wl >> 8) & 0x000f000fu) | (((wh >> 8) & 0x00030003u) << 4);
#pragma unroll
        for (int r = 0; r < R; r++)
            ai[r][t >> 2][j] =
                clf_dp_pairs(clf_dp_pairs(ai[r][t >> 2][j], m0, &pa[r][t]), m1, &pbb[r][t]);
#endif
    }
#endif
}

/* acc[r][j] += s dx ai - m dx sum xi for group g (and g + 1 where NH is 2), s and m its scales
 * and min terms (dt_panel_sm), dx[r][n] and ds[r][n] (xq_quantize) row r's for x group n. */
CLF_ALWAYS_INLINE void group_scale(const __global uchar *pb, const int pw, const int g, const int R,
                                   const floatV *s, const floatV *m, intV (*ai)[2][PK_NV],
                                   float (*dx)[NX], float (*ds)[NX][3], floatV (*acc)[PK_NV]) {
    floatV s1[PK_NV], m1v[PK_NV]; /* group g + 1's scale and min term */
#pragma unroll
    for (int j = 0; j < PK_NV; j++) {
        s1[j] = s[j];
        m1v[j] = m[j];
        if (NH == 2) s1[j] = dt_panel_sm(pb, pw, g + 1, j * VW, &m1v[j]);
    }
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int n = 0; n < NH; n++)
#pragma unroll
            for (int j = 0; j < PK_NV; j++) {
                const floatV sn = n ? s1[j] : s[j], mn = n ? m1v[j] : m[j];
                const intV an = NH == 2 ? ai[r][n][j]
                                : R > 2 ? ai[r][0][j]
                                        : ai[r][0][j] + ai[r][1][j];
                /* x group and sum: Q4_K's n-th group, Q6_K's n-th half, else all 32 */
                const int xn = NX == 2 ? n : 0;
                const float dsn = NX == 2 ? ds[r][n][2] : NH == 2 ? ds[r][0][n] : ds[r][0][2];
                acc[r][j] =
                    MAD(sn * dx[r][xn], convert_floatV(an), MAD(-mn, (floatV)(dsn), acc[r][j]));
            }
}

/* acc += one call's (XQ_STEP scale groups') sums of R rows of quantized x (pa, pbb, dx, ds). */
CLF_ALWAYS_INLINE void group_sum(const __global uchar *pb, const int pw, const int g, const int R,
                                 int (*pa)[16], int (*pbb)[16], float (*dx)[NX], float (*ds)[NX][3],
                                 const floatV *s, const floatV *m, floatV (*acc)[PK_NV]) {
    intV ai[XR_MAX][2][PK_NV];
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int n = 0; n < 2; n++)
#pragma unroll
            for (int j = 0; j < PK_NV; j++)
                ai[r][n][j] = (intV)(0);
    group_dots(pb, pw, g, R, pa, pbb, ai);
    group_scale(pb, pw, g, R, s, m, ai, dx, ds, acc);
}

/* One call (XQ_STEP scale groups) of a few rows (decoding): x's 32 NX elements from k0 of each
 * row quantized here. */
CLF_ALWAYS_INLINE void pairs_group(const __global uchar *pb, const int pw,
                                   const __global float *const *xr, const int k0, const int g,
                                   const int R, const floatV *s, const floatV *m,
                                   floatV (*acc)[PK_NV]) {
    int pa[2][16], pbb[2][16];
    float dx[2][NX], ds[2][NX][3];
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int n = 0; n < NX; n++)
            xq_quantize(xr[r] + k0 + 32 * n, NULL, 1.0f, &pa[r][8 * n], &pbb[r][8 * n], &dx[r][n],
                        ds[r][n]);
    group_sum(pb, pw, g, R, pa, pbb, dx, ds, s, m, acc);
}

/* x's 32 floats at x (g, rs: xq_quantize) quantized and stored for xq_group: 16 words at q (pa,
 * then pb; int8: pa only) and dx, ds[0..2] as floats at m, in address space AS (__global:
 * quantize_x; __local: linear_packed_lq). */
#define XQ_PUT(AS)                                                                                 \
    CLF_ALWAYS_INLINE void xq_put_##AS(const __global float *x, const __global float *g,           \
                                       const float rs, AS int *q, AS float *m) {                   \
        int pa[8], pbb[8];                                                                         \
        float dx, ds[3];                                                                           \
        xq_quantize(x, g, rs, pa, pbb, &dx, ds);                                                   \
        vstore8(vload8(0, pa), 0, q);                                                              \
        if (!XQ8) vstore8(vload8(0, pbb), 1, q);                                                   \
        vstore4((float4)(dx, ds[0], ds[1], ds[2]), 0, m);                                          \
    }
XQ_PUT(__global)
XQ_PUT(__local)
#undef XQ_PUT

/* Many rows: x (rows, in), row stride x_rs, quantized once: group c of row r as 16 words at
 * xq[(r in / 32 + c) 16] (pa, then pb) and dx, ds[0..2] as floats at xm[(r in / 32 + c) 4],
 * xm = xq + xm_off (one buffer). One item per group. */
__kernel void quantize_x(const __global float *x, const long x_off, const long x_rs, const int in,
                         __global int *xq, const long xm_off) {
    __global float *xm = (__global float *)(xq + xm_off);
    const int c = (int)get_global_id(0);
    const long r = get_global_id(1), i = r * (in / 32) + c;
    xq_put___global(x + x_off + r * x_rs + 32 * c, NULL, 1.0f, xq + 16 * i, xm + 4 * i);
}

/* One call (XQ_STEP scale groups) of R rows from xq_put's output in address space AS: x groups
 * c .. c + NX - 1 of the work-item's first row at xq, xm, rows rs groups apart (rows past the
 * last read the last: nr rows are real). */
#define XQ_GROUP(AS)                                                                               \
    CLF_ALWAYS_INLINE void xq_group_##AS(const __global uchar *pb, const int pw, const AS int *xq, \
                                         const AS float *xm, const int c, const int rs,            \
                                         const int nr, const int g, const int R, const floatV *s,  \
                                         const floatV *m, floatV(*acc)[PK_NV]) {                   \
        int pa[XR_MAX][16], pbb[XR_MAX][16];                                                       \
        float dx[XR_MAX][NX], ds[XR_MAX][NX][3];                                                   \
        _Pragma("unroll") for (int r = 0; r < R; r++)                                              \
            _Pragma("unroll") for (int n = 0; n < NX; n++) {                                       \
            const long i = (long)min(r, nr - 1) * rs + c + n;                                      \
            vstore8(vload8(0, xq + 16 * i), 0, &pa[r][8 * n]);                                     \
            if (!XQ8) vstore8(vload8(1, xq + 16 * i), 0, &pbb[r][8 * n]);                          \
            const float4 v = vload4(i, xm);                                                        \
            dx[r][n] = v.x;                                                                        \
            ds[r][n][0] = v.y;                                                                     \
            ds[r][n][1] = v.z;                                                                     \
            ds[r][n][2] = v.w;                                                                     \
        }                                                                                          \
        group_sum(pb, pw, g, R, pa, pbb, dx, ds, s, m, acc);                                       \
    }
XQ_GROUP(__global)
XQ_GROUP(__local)
#undef XQ_GROUP
#undef CLF_ALWAYS_INLINE
#undef CH
#undef JT
#undef NH
#undef NX
#undef XQ8
#undef XQMAX
#endif
