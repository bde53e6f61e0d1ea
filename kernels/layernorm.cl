/*
 * layernorm.cl — the norms over the last dimension, optionally of (x + residual):
 *   layernorm_rows: z = x + res (or x);  y = (z - mean(z)) / sqrt(var(z) + eps) * gamma + beta
 *     with the biased variance, as PyTorch. This is the seeds' AddNorm at inference.
 *   rmsnorm_rows:   z = x + res (or x);  y = z / sqrt(mean(z^2) + eps) * gamma, and optionally
 *     sum = z: a pre-norm block (Llama, Qwen2, Mistral) updates its residual stream and
 *     normalizes it in one pass.
 *
 * Three passes over the row (the second and third read it from cache): mean, sum of squared
 * deviations, output. Values are taken relative to the row's first element (exact for values of
 * the row's own magnitude), so rows whose mean dwarfs their spread (mean 1e4, std 1) keep full
 * accuracy.
 * WG work-items per row (local-memory tree when > 1), RPG rows per work-group. y may alias x or
 * res: each element is read and written by the same work-item, except the row's first element
 * (the shift), read by all of them before a global barrier and written after it.
 *
 * Tunables: VW, WG, RPG (as softmax.cl).
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
CLF_DEFINE_ROW_REDUCE(row_sum, CLF_ADD)
#endif

__kernel __attribute__((reqd_work_group_size(WG, RPG, 1))) void
layernorm_rows(const __global float *x,     /* (rows, n) */
               const __global float *res,   /* (rows, n) residual; unused if has_res == 0 */
               const int has_res,           /* 1: normalize x + res */
               const __global float *gamma, /* (n) */
               const __global float *beta,  /* (n) */
               __global float *y,           /* (rows, n); may be x or res */
               const long rows, const int n, const float eps) {
    const int t = get_local_id(0);
    const int lr = get_local_id(1);
    const long row = get_global_id(1);
    const bool active = row < rows;
    const long off = (active ? row : 0) * (long)n;
    const __global float *xr = x + off;
    const __global float *rr = res + (has_res ? off : 0);
    __global float *yr = y + off;
    const int len = active ? n : 0;

    const float shift = active ? (has_res ? xr[0] + rr[0] : xr[0]) : 0.0f;
    const int nv_len = len / VW;

    /* Pass 1: mean of z - shift. */
    float s1 = 0.0f;
    for (int c = t; c < nv_len; c += WG) {
        floatV z = VLOAD(c, xr);
        if (has_res) z += VLOAD(c, rr);
        s1 += HSUM(z - shift);
    }
    for (int i = nv_len * VW + t; i < len; i += WG)
        s1 += (has_res ? xr[i] + rr[i] : xr[i]) - shift;
#if WG > 1
    __local float red[RPG][WG];
    s1 = row_sum(red, lr, t, s1);
#endif
    const float mean = s1 / (float)n; /* mean(z) - shift */

    /* Pass 2: sum of squared deviations (two passes: no cancellation whatever the mean). */
    float s2 = 0.0f;
    for (int c = t; c < nv_len; c += WG) {
        floatV z = VLOAD(c, xr);
        if (has_res) z += VLOAD(c, rr);
        floatV d = (z - shift) - mean;
        s2 += HSUM(d * d);
    }
    for (int i = nv_len * VW + t; i < len; i += WG) {
        float d = ((has_res ? xr[i] + rr[i] : xr[i]) - shift) - mean;
        s2 += d * d;
    }
#if WG > 1
    s2 = row_sum(red, lr, t, s2);
    /* In place, pass 3 overwrites x[0] (and res[0]), which every work-item of the row read as
     * its shift: the reduction's local fences do not order global memory, so a global fence
     * first (Oclgrind found the read-write race). */
    barrier(CLK_GLOBAL_MEM_FENCE);
#endif
    if (!active) return;

    /* Pass 3: normalize, scale, shift. */
    const float rstd = rsqrt(s2 / (float)n + eps);
    const int nv = n / VW;
    for (int c = t; c < nv; c += WG) {
        floatV z = VLOAD(c, xr);
        if (has_res) z += VLOAD(c, rr);
        z = ((z - shift) - mean) * rstd;
        VSTORE(z * VLOAD(c, gamma) + VLOAD(c, beta), c, yr);
    }
    for (int i = nv * VW + t; i < n; i += WG) {
        float z = has_res ? xr[i] + rr[i] : xr[i];
        yr[i] = ((z - shift) - mean) * rstd * gamma[i] + beta[i];
    }
}

/* RMSNorm as Hugging Face's LlamaRMSNorm (fp32): one pass for the sum of squares, one for the
 * output (and the residual stream z when has_sum). Work-item t reads and writes the same elements
 * in both passes, so sum and y may be x or res. */
__kernel __attribute__((reqd_work_group_size(WG, RPG, 1))) void
rmsnorm_rows(const __global float *x,     /* (rows, n) */
             const __global float *res,   /* (rows, n) residual; unused if has_res == 0 */
             const int has_res,           /* 1: normalize x + res */
             const __global float *gamma, /* (n) */
             __global float *sum,         /* (rows, n): z = x + res; unused if has_sum == 0 */
             const int has_sum, __global float *y, /* (rows, n) */
             const long rows, const int n, const float eps) {
    const int t = get_local_id(0);
    const int lr = get_local_id(1);
    const long row = get_global_id(1);
    const bool active = row < rows;
    const long off = (active ? row : 0) * (long)n;
    const __global float *xr = x + off;
    const __global float *rr = res + (has_res ? off : 0);
    __global float *sr = sum + (has_sum ? off : 0);
    __global float *yr = y + off;
    const int len = active ? n : 0;
    const int nv_len = len / VW;

    float s2 = 0.0f;
    for (int c = t; c < nv_len; c += WG) {
        floatV z = VLOAD(c, xr);
        if (has_res) z += VLOAD(c, rr);
        s2 += HSUM(z * z);
    }
    for (int i = nv_len * VW + t; i < len; i += WG) {
        const float z = has_res ? xr[i] + rr[i] : xr[i];
        s2 += z * z;
    }
#if WG > 1
    __local float red[RPG][WG];
    s2 = row_sum(red, lr, t, s2);
#endif
    if (!active) return;

    const float rstd = rsqrt(s2 / (float)n + eps);
    const int nv = n / VW;
    for (int c = t; c < nv; c += WG) {
        floatV z = VLOAD(c, xr);
        if (has_res) z += VLOAD(c, rr);
        if (has_sum) VSTORE(z, c, sr);
        VSTORE(z * rstd * VLOAD(c, gamma), c, yr);
    }
    for (int i = nv * VW + t; i < n; i += WG) {
        const float z = has_res ? xr[i] + rr[i] : xr[i];
        if (has_sum) sr[i] = z;
        yr[i] = z * rstd * gamma[i];
    }
}
