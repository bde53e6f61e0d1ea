/*
 * elementwise.cl — memory-bound elementwise ops.
 *   bias_act: y[r, :] = act(x[r, :] + bias)   (bias optional; act: identity, ReLU, GELU (erf),
 *             GELU (tanh)); in place allowed.
 *   add:      y = a + b over n elements (residual add); in place allowed.
 *   gated_act: y[r, :] = act(g[r, :]) * u[r, :] (SwiGLU's middle, gate and up of f columns, each
 *             row of g and u at its own stride: apart, or the two halves of one (rows, 2f)).
 *   argmax_rows: index of each row's largest element (greedy decoding).
 * Each work-item handles VW consecutive floats; a row's last partial vector goes element-wise.
 * bias_act and gated_act run on (vectors per row rounded up to the group, rows): the 64-bit
 * division that found a 1-D work-item's row cost more than the add of a vector.
 *
 * The activations (ACT_*, act_s, act_v, the GELU error bound) come from activation.cl, which the
 * library prepends after common.cl.
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

__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
bias_act(const __global float *x,               /* (rows, n) */
         const __global float *bias,            /* (n); unused if !has_bias */
         const int has_bias, __global float *y, /* (rows, n); may be x */
         const long rows, const int n, const int act) {
    const int c = (int)get_global_id(0); /* a vector of row get_global_id(1) */
    const long row = (long)get_global_id(1);
    if (c * VW >= n || row >= rows) return;
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

__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
gated_act(const __global float *g, /* gate: row r at g + r * g_rstride, f floats */
          const __global float *u, /* up: row r at u + u_off + r * u_rstride */
          const long u_off, const long g_rstride, const long u_rstride,
          __global float *y, /* (rows, f); may be g or u when their strides are f */
          const long rows, const int f, const int act) {
    const int c = (int)get_global_id(0); /* a vector of row get_global_id(1) */
    const long row = (long)get_global_id(1);
    if (c * VW >= f || row >= rows) return;
    const __global float *gr = g + row * g_rstride;
    const __global float *ur = u + u_off + row * u_rstride;
    __global float *yr = y + row * (long)f;
    if ((c + 1) * VW <= f) {
        VSTORE(act_v(VLOAD(c, gr), act) * VLOAD(c, ur), c, yr);
        return;
    }
    for (int i = c * VW; i < f; i++)
        yr[i] = act_s(gr[i], act) * ur[i];
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

/* Rows of floats stored as halfs (an F16 KV cache's writes): element c of row r of batch b, from
 * src + s_off + b s_batch + r s_row + c to the same place in dst, rounded to nearest even
 * (vstore_half_rte: core OpenCL, no cl_khr_fp16). Global size (width, rows, batches). */
__kernel void rows_to_half(const __global float *src, const long s_off, const long s_row,
                           const long s_batch, __global half *dst, const long d_off,
                           const long d_row, const long d_batch, const int width) {
    const int c = (int)get_global_id(0);
    if (c >= width) return;
    const long r = (long)get_global_id(1), b = (long)get_global_id(2);
    vstore_half_rte(src[s_off + b * s_batch + r * s_row + c], d_off + b * d_batch + r * d_row + c,
                    dst);
}
