/*
 * softmax.cl — numerically stable softmax over the last dimension, with masks.
 *
 * Each row of n floats is handled by WG work-items (RPG rows per work-group). Pass 1 takes the
 * max of the visible prefix; pass 2 writes e = exp(x - max) to y and sums it; pass 3 scales y by
 * 1/sum and zeroes masked positions. Passes 2 and 3 touch the row in cache, so memory traffic is
 * one read and one write. Measured on PoCL (4096 x 1024, clformer-bench): the one-pass online
 * (running max, running sum) form took 5.6-6.3 ms, since its rescaling chains each vector to
 * the previous one; max then sum with exp twice took 3.1 ms. A row with no visible position
 * is all zeros. y may alias x (in place): every element is read and written by the same
 * work-item, and pass 2 starts after the group's reduction.
 *
 * Visible keys of row r: lo .. lim - 1, common.cl's clf_visible_keys and clf_first_key for query
 * q = r % nq of batch b = r / rows_per_batch (lo is 0 without a window).
 *
 * Tunables: VW (floats per vector load), WG (work-items per row, power of two), RPG (rows per
 * work-group).
 */
#ifndef VW
#define VW 16 /* floats per vector load: 16 for AVX-512 CPUs, 4 for GPUs */
#endif
#ifndef WG
#define WG 1 /* work-items per row; > 1 reduces through local memory (GPUs) */
#endif
#ifndef RPG
#define RPG 4 /* rows per work-group */
#endif

#if WG > 1
CLF_DEFINE_ROW_REDUCE(row_max, fmax)
CLF_DEFINE_ROW_REDUCE(row_sum, CLF_ADD)
#endif

__kernel __attribute__((reqd_work_group_size(WG, RPG, 1))) void
softmax_rows(const __global float *x,   /* (rows, n) */
             __global float *y,         /* (rows, n); may be x */
             const long rows,           /* number of rows */
             const int n,               /* row length */
             const __global int *lens,  /* (B) or (B, nq) valid lengths; unused if lens_mode 0 */
             const int lens_mode,       /* 0 none, 1 per batch, 2 per (batch, query) */
             const long rows_per_batch, /* rows / B */
             const int nq,              /* queries per matrix: the second-to-last dim */
             const int causal,          /* 1: query q sees keys 0 .. q + causal_offset */
             const long causal_offset,
             const int window) { /* > 0: only the last `window` visible keys */
    const int t = get_local_id(0);
    const int lr = get_local_id(1);
    const long row = get_global_id(1);
    const bool active = row < rows;

    int lim = 0;
    if (active) {
        lim = clf_visible_keys(n, (int)(row % nq), row / rows_per_batch, nq, lens, lens_mode,
                               causal, causal_offset);
    }
    const int lo = clf_first_key(lim, window); /* lanes below lo are masked like those past lim */
    const __global float *xr = x + (active ? row : 0) * (long)n;
    __global float *yr = y + (active ? row : 0) * (long)n;

    /* Vectors below c_full hold a lane below lo (masked, the window's start), vectors from
     * nv_lim on one past lim; the rest, c_full .. nv_lim - 1, are read without selects. Work-item
     * t takes the vectors c = t (mod WG) of each range, from first_from(start). */
    const int nv_lim = lim / VW, c_full = min((lo + VW - 1) / VW, nv_lim);
#define first_from(start) (t < (start) ? t + ((start)-t + WG - 1) / WG * WG : t)

    /* Pass 1: max over the visible prefix, in VW lanes and four independent chains: one fmax
     * chain waits ~6 cycles per vector on Zen 4 (compare, mask, blend) and was a third of the
     * kernel's time. Inactive rows (lim 0) still take part in the group's barriers. */
    floatV mv = (floatV)(CLF_NEG_BIG), mv1 = mv, mv2 = mv, mv3 = mv;
    for (int c = t; c < c_full; c += WG)
        mv = fmax(mv, select((floatV)(CLF_NEG_BIG), VLOAD(c, xr), (IOTA + c * VW) >= lo));
    int c = first_from(c_full);
    for (; c + 3 * WG < nv_lim; c += 4 * WG) {
        mv = fmax(mv, VLOAD(c, xr));
        mv1 = fmax(mv1, VLOAD(c + WG, xr));
        mv2 = fmax(mv2, VLOAD(c + 2 * WG, xr));
        mv3 = fmax(mv3, VLOAD(c + 3 * WG, xr));
    }
    for (; c < nv_lim; c += WG)
        mv = fmax(mv, VLOAD(c, xr));
    float m = HMAX(fmax(fmax(mv, mv1), fmax(mv2, mv3)));
    for (int i = nv_lim * VW + t; i < lim; i += WG)
        if (i >= lo) m = fmax(m, xr[i]);
#if WG > 1
    __local float red[RPG][WG];
    m = row_max(red, lr, t, m);
#endif

    /* Pass 2: e = exp(x - max) into y and the sum of e; each exp is computed once and the row
     * stays in cache for pass 3. In place is safe: each element is read, then written, by the
     * same work-item, after every work-item finished pass 1. */
    floatV sv = (floatV)(0.0f), sv1 = sv;
    for (c = t; c < c_full; c += WG) {
        floatV e = select((floatV)(0.0f), exp(VLOAD(c, xr) - m), (IOTA + c * VW) >= lo);
        sv += e;
        VSTORE(e, c, yr);
    }
    for (c = first_from(c_full); c + WG < nv_lim; c += 2 * WG) {
        const floatV e = exp(VLOAD(c, xr) - m), e1 = exp(VLOAD(c + WG, xr) - m);
        sv += e;
        sv1 += e1;
        VSTORE(e, c, yr);
        VSTORE(e1, c + WG, yr);
    }
    for (; c < nv_lim; c += WG) {
        const floatV e = exp(VLOAD(c, xr) - m);
        sv += e;
        VSTORE(e, c, yr);
    }
    sv += sv1;
    float s = HSUM(sv);
    for (int i = nv_lim * VW + t; i < lim; i += WG) {
        float e = i >= lo ? exp(xr[i] - m) : 0.0f;
        s += e;
        yr[i] = e;
    }
#if WG > 1
    s = row_sum(red, lr, t, s);
    barrier(CLK_GLOBAL_MEM_FENCE); /* pass 3 reads tail elements other work-items wrote */
#endif
    if (!active) return;

    /* Pass 3: scale y in place; masked positions get 0 (lanes at or past lim are never used). */
    const float inv = lim > 0 ? 1.0f / s : 0.0f;
    const int nv = n / VW;
    for (c = t; c < nv; c += WG) {
        if (c >= c_full && c < nv_lim) { /* every lane visible */
            VSTORE(VLOAD(c, yr) * inv, c, yr);
            continue;
        }
        intV visible = (IOTA + c * VW) < lim && (IOTA + c * VW) >= lo;
        floatV e = c * VW < lim ? VLOAD(c, yr) : (floatV)(0.0f);
        VSTORE(select((floatV)(0.0f), e * inv, visible), c, yr);
    }
    for (int i = nv * VW + t; i < n; i += WG)
        yr[i] = i < lim && i >= lo ? yr[i] * inv : 0.0f;
}
#undef first_from
