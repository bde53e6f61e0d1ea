/*
 * softmax.cl — numerically stable softmax over the last dimension, with masks.
 *
 * Each row of n floats is handled by WG work-items (RPG rows per work-group). Pass 1 streams the
 * visible prefix of the row with an online (running max, running sum) reduction; pass 2 writes
 * exp(x - max) / sum for visible positions and 0 for masked ones. A row with no visible position
 * is all zeros. y may alias x (in place): every element is read and written by the same
 * work-item, and pass 2 starts after the group's reduction.
 *
 * Visible prefix of row r (query q = r % nq, batch b = r / rows_per_batch):
 *   lim = n; lens_mode 1: min(lim, lens[b]); lens_mode 2: min(lim, lens[b * nq + q]);
 *   causal: min(lim, q + causal_offset + 1).
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

/* Merges (vm, vs) into the running (m, s): s is a sum of exp(x - m). */
inline void softmax_merge(float *m, float *s, float vm, float vs) {
    float mn = fmax(*m, vm);
    *s = *s * exp(*m - mn) + vs * exp(vm - mn);
    *m = mn;
}

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
             const long causal_offset) {
    const int t = get_local_id(0);
    const int lr = get_local_id(1);
    const long row = get_global_id(1);
    const bool active = row < rows;

    int lim = 0;
    if (active) {
        const int q = (int)(row % nq);
        const long b = row / rows_per_batch;
        long l = n;
        if (lens_mode == 1) l = min(l, (long)lens[b]);
        if (lens_mode == 2) l = min(l, (long)lens[b * nq + q]);
        if (causal) l = min(l, (long)q + causal_offset + 1);
        lim = (int)max(l, 0L);
    }
    const __global float *xr = x + (active ? row : 0) * (long)n;
    __global float *yr = y + (active ? row : 0) * (long)n;

    /* Pass 1: running max and sum over the visible prefix. */
    float m = CLF_NEG_BIG, s = 0.0f;
    const int nv_lim = lim / VW;
    for (int c = t; c < nv_lim; c += WG) {
        floatV v = VLOAD(c, xr);
        float vm = HMAX(v);
        float mn = fmax(m, vm);
        s = s * exp(m - mn) + HSUM(exp(v - mn));
        m = mn;
    }
    for (int i = nv_lim * VW + t; i < lim; i += WG) softmax_merge(&m, &s, xr[i], 1.0f);

#if WG > 1
    __local float lm[RPG][WG], ls[RPG][WG];
    lm[lr][t] = m;
    ls[lr][t] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int w = WG / 2; w > 0; w >>= 1) {
        if (t < w) {
            float mm = lm[lr][t], ss = ls[lr][t];
            softmax_merge(&mm, &ss, lm[lr][t + w], ls[lr][t + w]);
            lm[lr][t] = mm;
            ls[lr][t] = ss;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    m = lm[lr][0];
    s = ls[lr][0];
#endif
    if (!active) return;

    /* Pass 2: normalize; masked positions get 0. */
    const float inv = lim > 0 ? 1.0f / s : 0.0f;
    const int nv = n / VW;
    for (int c = t; c < nv; c += WG) {
        floatV v = VLOAD(c, xr);
        intV visible = (IOTA + c * VW) < lim;
        VSTORE(select((floatV)(0.0f), exp(v - m) * inv, visible), c, yr);
    }
    for (int i = nv * VW + t; i < n; i += WG) yr[i] = i < lim ? exp(xr[i] - m) * inv : 0.0f;
}
