/*
 * elementwise.cl — memory-bound elementwise ops.
 *   bias_act: y[r, :] = act(x[r, :] + bias)   (bias optional; act: identity, ReLU, GELU (erf),
 *             GELU (tanh)); in place allowed.
 *   add:      y = a + b over n elements (residual add); in place allowed.
 *   argmax_rows: index of each row's largest element (greedy decoding).
 *   pack_panels / linear_packed: y = act(x W^T + bias) with W packed once into panels of
 *             PK_NV * VW output columns, each panel (in, PK_NV * VW) contiguous: a work-item
 *             keeps PK_R rows x PK_NV vectors of outputs in registers and, per k, broadcasts
 *             PK_R scalars of x against PK_NV vectors of the panel (CPUs).
 *   linear_rows: y = act(x W^T + bias) for a few rows of x (decoding): each weight is read once
 *             per SK_ROWS rows, where a GEMM would pad the rows to a whole tile.
 * Each work-item handles VW consecutive floats; a row's last partial vector goes element-wise.
 *
 * GELU (erf) with ERF_POLY uses Abramowitz & Stegun 7.1.26, |erf error| <= 1.5e-7 absolute, so
 * the GELU error is <= 0.5 |x| 1.5e-7 plus rounding, the size of rounding x itself: PoCL 3.1's
 * erf(float16) does not vectorize (9.7 ms vs 2.0 ms for 4096 x 1024 on 2 cores). GELU (tanh) is
 * computed as x / (1 + e^(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3), which equals
 * 0.5 x (1 + tanh(u)) and needs one exp instead of tanh (4.0 ms with the builtin tanh).
 *
 * Tunables: VW (floats per work-item), WG (work-group size, chosen by the host), ERF_POLY.
 */
#ifndef VW
#define VW 16 /* floats per work-item */
#endif
#ifndef WG
#define WG 64 /* work-group size (PoCL: >= 64 is 5x faster than 8 for elementwise) */
#endif
#ifndef ARGMAX_WG
#define ARGMAX_WG 1 /* work-items per row of argmax_rows (power of two) */
#endif
#ifndef SK_ROWS
#define SK_ROWS 4 /* rows of x per launch of linear_rows */
#endif
#ifndef SK_OPI
#define SK_OPI 4 /* output columns per work-group of linear_rows */
#endif
#ifndef SK_LW
#define SK_LW 1 /* work-items sharing a row of w in linear_rows (power of two) */
#endif
#ifndef SK_GM
#define SK_GM 8 /* row blocks walked together by linear_rows (cache reuse) */
#endif
#ifndef PK_R
#define PK_R 8 /* rows of x per work-item of linear_packed */
#endif
#ifndef PK_NV
#define PK_NV 2 /* vectors of VW output columns per work-item (the panel width / VW) */
#endif
#ifndef PK_GM
#define PK_GM 4 /* row blocks walked together by linear_packed (cache reuse) */
#endif
#ifndef ERF_POLY
#define ERF_POLY 1 /* 1: erf by polynomial + exp (vectorizes); 0: the builtin erf */
#endif

#define ACT_IDENTITY  0
#define ACT_RELU      1
#define ACT_GELU_ERF  2
#define ACT_GELU_TANH 3

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
    default:
        return v;
    }
}
#else
#define act_v act_s
#endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
bias_act(const __global float *x,               /* (rows, n) */
         const __global float *bias,            /* (n); unused if !has_bias */
         const int has_bias, __global float *y, /* (rows, n); may be x */
         const long rows, const int n, const int act) {
    const int cpr = (n + VW - 1) / VW;
    const long gid = get_global_id(0);
    const long row = gid / cpr;
    if (row >= rows) return;
    const int c = (int)(gid - row * cpr);
    const __global float *xr = x + row * (long)n;
    __global float *yr = y + row * (long)n;
    if ((c + 1) * VW <= n) {
        floatV v = VLOAD(c, xr);
        if (has_bias) v += VLOAD(c, bias);
        VSTORE(act_v(v, act), c, yr);
        return;
    }
    for (int i = c * VW; i < n; i++)
        yr[i] = act_s(has_bias ? xr[i] + bias[i] : xr[i], act);
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
add(const __global float *a, /* (n) */
    const __global float *b, /* (n) */
    __global float *y,       /* (n); may be a or b */
    const long n) {
    const long c = get_global_id(0);
    if ((c + 1) * VW <= n) {
        VSTORE(VLOAD(c, a) + VLOAD(c, b), c, y);
        return;
    }
    for (long i = c * VW; i < n; i++)
        y[i] = a[i] + b[i];
}

/* out[row] = index of the largest x[row, :] (the first on ties): one work-group per row, a
 * strided scan per work-item, then a tree over the group (ARGMAX_WG is a power of two). */
__kernel __attribute__((reqd_work_group_size(ARGMAX_WG, 1, 1))) void
argmax_rows(const __global float *x, /* (rows, n) */
            __global int *out,       /* (rows) */
            const int n) {
    __local float lv[ARGMAX_WG];
    __local int li[ARGMAX_WG];
    const long row = get_group_id(0);
    const int l = (int)get_local_id(0);
    const __global float *xr = x + row * (long)n;
    float best = -INFINITY;
    int bi = n;
    for (int i = l; i < n; i += ARGMAX_WG) {
        const float v = xr[i];
        if (v > best || (bi == n && !isnan(v))) {
            best = v;
            bi = i;
        }
    }
    lv[l] = best;
    li[l] = bi;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = ARGMAX_WG / 2; s > 0; s >>= 1) {
        if (l < s) {
            const float v = lv[l + s];
            const int j = li[l + s];
            if (j < n && (li[l] == n || v > lv[l] || (v == lv[l] && j < li[l]))) {
                lv[l] = v;
                li[l] = j;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0) out[row] = li[0] == n ? 0 : li[0];
}

/* y[r, o] = act(sum_i x[r, i] w[o, i] + bias[o]). Work-group (g0, g1) computes output columns
 * g0 SK_OPI .. + SK_OPI - 1 of rows g1 SK_ROWS .. + SK_ROWS - 1 (dot products along i, both
 * operands contiguous); its SK_LW work-items split the length of a row of w (coalesced on GPUs)
 * and meet in a local-memory tree. */
__kernel __attribute__((reqd_work_group_size(SK_LW, 1, 1))) void
linear_rows(const __global float *x,                              /* (total_rows, in) */
            const int total_rows, const __global float *w,        /* (out, in) */
            const __global float *bias,                           /* (out); unused if !has_bias */
            const int has_bias, const int act, __global float *y, /* (total_rows, out) */
            const int in, const int out) {
    const int l = (int)get_local_id(0);
    /* Grouped order: consecutive work-groups walk SK_GM row blocks of one column block, then
     * the next column block, so the rows stay in cache while each row of w is reused SK_GM
     * times (the launch is (column blocks, row blocks); its linear order is remapped). */
    const int n0 = (int)get_num_groups(0), n1 = (int)get_num_groups(1);
    const int pid = (int)get_group_id(0) + (int)get_group_id(1) * n0;
    const int first = pid / (SK_GM * n0) * SK_GM;
    const int gm = min(n1 - first, SK_GM);
    const int within = pid % (SK_GM * n0);
    const int o0 = within / gm * SK_OPI;
    const long row0 = (long)(first + within % gm) * SK_ROWS;
    const int rows = min(SK_ROWS, (int)(total_rows - row0));
    x += row0 * (long)in;
    y += row0 * (long)out;
    floatV acc[SK_OPI][SK_ROWS];
    for (int j = 0; j < SK_OPI; j++)
        for (int r = 0; r < SK_ROWS; r++)
            acc[j][r] = (floatV)(0.0f);
    const int nv = in / VW;
    for (int c = l; c < nv; c += SK_LW) {
        floatV xv[SK_ROWS];
        for (int r = 0; r < SK_ROWS; r++)
            xv[r] = r < rows ? VLOAD(c, x + r * (long)in) : (floatV)(0.0f);
        for (int j = 0; j < SK_OPI; j++) {
            if (o0 + j >= out) break;
            const floatV wv = VLOAD(c, w + (long)(o0 + j) * in);
            for (int r = 0; r < SK_ROWS; r++)
                acc[j][r] = fma(xv[r], wv, acc[j][r]);
        }
    }
    float s[SK_OPI][SK_ROWS];
    for (int j = 0; j < SK_OPI; j++)
        for (int r = 0; r < SK_ROWS; r++)
            s[j][r] = HSUM(acc[j][r]);
    for (int i = nv * VW + l; i < in; i += SK_LW)
        for (int j = 0; j < SK_OPI && o0 + j < out; j++)
            for (int r = 0; r < rows; r++)
                s[j][r] = fma(x[r * (long)in + i], w[(long)(o0 + j) * in + i], s[j][r]);
#if SK_LW > 1
    __local float red[SK_LW];
    for (int j = 0; j < SK_OPI; j++)
        for (int r = 0; r < SK_ROWS; r++) {
            red[l] = s[j][r];
            barrier(CLK_LOCAL_MEM_FENCE);
            for (int h = SK_LW / 2; h > 0; h >>= 1) {
                if (l < h) red[l] += red[l + h];
                barrier(CLK_LOCAL_MEM_FENCE);
            }
            s[j][r] = red[0];
            barrier(CLK_LOCAL_MEM_FENCE);
        }
#endif
    if (l != 0) return;
    for (int j = 0; j < SK_OPI && o0 + j < out; j++) {
        const float b = has_bias ? bias[o0 + j] : 0.0f;
        for (int r = 0; r < rows; r++)
            y[r * (long)out + o0 + j] = act_s(s[j][r] + b, act);
    }
}

/* wp[b][k][c] = w[b * PW + c][k] (0 past the last row of w), PW = PK_NV * VW: one item per
 * element of the packed panels. */
__kernel void pack_panels(const __global float *w, /* (out, in) */
                          __global float *wp,      /* (ceil(out / PW), in, PW) */
                          const int in, const int out) {
    const int pw = PK_NV * VW;
    const int c = (int)get_global_id(0), k = (int)get_global_id(1), b = (int)get_global_id(2);
    const int o = b * pw + c;
    wp[((long)b * in + k) * pw + c] = o < out ? w[(long)o * in + k] : 0.0f;
}

/* y[r, o] = act(sum_k x[r, k] w[o, k] + bias[o]) from the packed panels of w. Work-group (one
 * item) (g0, g1) in grouped order (see linear_rows) computes rows PK_R g .. + PK_R - 1 of panel
 * b; the bias and activation run on whole vectors. */
__kernel __attribute__((reqd_work_group_size(1, 1, 1))) void
linear_packed(const __global float *x,                              /* (rows, in) */
              const int rows, const __global float *wp,             /* packed panels */
              const __global float *bias,                           /* (out); unused if !has_bias */
              const int has_bias, const int act, __global float *y, /* (rows, out) */
              const int in, const int out) {
    const int pw = PK_NV * VW;
    const int n0 = (int)get_num_groups(0), n1 = (int)get_num_groups(1);
    const int pid = (int)get_group_id(0) + (int)get_group_id(1) * n0;
    const int first = pid / (PK_GM * n0) * PK_GM;
    const int gm = min(n1 - first, PK_GM);
    const int within = pid % (PK_GM * n0);
    const int b = within / gm;
    const int r0 = (first + within % gm) * PK_R;
    const int nr = min(PK_R, rows - r0);
    floatV acc[PK_R][PK_NV];
    for (int r = 0; r < PK_R; r++)
        for (int j = 0; j < PK_NV; j++)
            acc[r][j] = (floatV)(0.0f);
    const __global float *panel = wp + (long)b * in * pw;
    const __global float *xr = x + (long)r0 * in;
    if (nr == PK_R) {
        for (int k = 0; k < in; k++) {
            floatV wv[PK_NV];
            for (int j = 0; j < PK_NV; j++)
                wv[j] = VLOAD(0, panel + (long)k * pw + j * VW);
            for (int r = 0; r < PK_R; r++) {
                const floatV xs = (floatV)(xr[(long)r * in + k]);
                for (int j = 0; j < PK_NV; j++)
                    acc[r][j] = fma(xs, wv[j], acc[r][j]);
            }
        }
    } else { /* the last, partial block of rows */
        for (int k = 0; k < in; k++) {
            floatV wv[PK_NV];
            for (int j = 0; j < PK_NV; j++)
                wv[j] = VLOAD(0, panel + (long)k * pw + j * VW);
            for (int r = 0; r < PK_R; r++) {
                const floatV xs = (floatV)(r < nr ? xr[(long)r * in + k] : 0.0f);
                for (int j = 0; j < PK_NV; j++)
                    acc[r][j] = fma(xs, wv[j], acc[r][j]);
            }
        }
    }
    const int o0 = b * pw;
    for (int j = 0; j < PK_NV; j++) {
        const int c0 = o0 + j * VW;
        if (c0 >= out) break;
        const bool full = c0 + VW <= out;
        floatV bv = (floatV)(0.0f);
        if (has_bias && full) bv = VLOAD(0, bias + c0);
        for (int r = 0; r < nr; r++) {
            __global float *yr = y + (long)(r0 + r) * out;
            if (full) {
                VSTORE(act_v(acc[r][j] + bv, act), 0, yr + c0);
            } else {
                float t[VW];
#if VW == 1
                t[0] = acc[r][j];
#else
                CLF_CAT(vstore, VW)(acc[r][j], 0, t);
#endif
                for (int c = 0; c < out - c0; c++)
                    yr[c0 + c] = act_s(t[c] + (has_bias ? bias[c0 + c] : 0.0f), act);
            }
        }
    }
}
