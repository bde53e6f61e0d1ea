/*
 * linear_tiled.cl — the linear program's kernels for GPUs and for any stored type read as bytes
 * with a row stride (prepended to linear.cl; the CPU panels live there):
 *   linear_tiled: y = act(x W^T + bias) as a local-memory tiled GEMM (F16 weights at many rows,
 *             which CLBlast has no kernel for, and block types);
 *   get_rows: the embedding gather of a table of any stored type.
 * Activations: activation.cl; storage types: dtypes.cl (both prepended before this file).
 *
 * Tunables: LT_WX, LT_WY, LT_RM, LT_RN, LT_TK; DT per call.
 */
/* y[r, o] = act(sum_k x[r, k] w[o, k] + bias[o]) (y[r, o] at y[y_off + r y_rs + o], as for
 * linear_rows) as a local-memory tiled GEMM (GPUs; the path of
 * F16 weights at many rows, which CLBlast has no kernel for). A work-group of LT_WX x LT_WY
 * work-items owns a tile of TM = LT_WY LT_RM rows by TN = LT_WX LT_RN outputs; per step of LT_TK
 * along k its work-items stage the x and w tiles into local memory together (consecutive
 * work-items read consecutive k of a row: coalesced; zeros past the edges), then each
 * accumulates LT_RM x LT_RN outputs in registers: rows ty + i LT_WY and outputs tx + j LT_WX (so
 * that neighbouring work-items read neighbouring local words). */
#ifndef LT_WX
#define LT_WX 16
#endif
#ifndef LT_WY
#define LT_WY 16
#endif
#ifndef LT_RM
#define LT_RM 4
#endif
#ifndef LT_RN
#define LT_RN 4
#endif
#ifndef LT_TK
#define LT_TK 16
#endif
#define LT_TM (LT_WY * LT_RM)
#define LT_TN (LT_WX * LT_RN)

__kernel __attribute__((reqd_work_group_size(LT_WX, LT_WY, 1))) void
linear_tiled(const __global float *x,                              /* (rows, in) */
             const int rows, const __global uchar *w,              /* (out, in) rows of DT */
             const long w_rs,                                      /* bytes per row of w */
             const __global float *bias,                           /* (out); unused if !has_bias */
             const int has_bias, const int act, __global float *y, /* (rows, y_rs) */
             const long y_off, const long y_rs, /* y's first output, its row stride */
             const int in, const int out) {
    __local float xs[LT_TK][LT_TM], ws[LT_TK][LT_TN];
    const int tx = (int)get_local_id(0), ty = (int)get_local_id(1);
    const int tid = ty * LT_WX + tx;
    const int o0 = (int)get_group_id(0) * LT_TN, r0 = (int)get_group_id(1) * LT_TM;
    float acc[LT_RM][LT_RN];
#pragma unroll
    for (int i = 0; i < LT_RM; i++)
#pragma unroll
        for (int j = 0; j < LT_RN; j++)
            acc[i][j] = 0.0f;
    for (int k0 = 0; k0 < in; k0 += LT_TK) {
        for (int e = tid; e < LT_TM * LT_TK; e += LT_WX * LT_WY) {
            const int m = e / LT_TK, k = e - m * LT_TK;
            const bool ok = r0 + m < rows && k0 + k < in;
            xs[k][m] = ok ? x[(long)(r0 + m) * in + k0 + k] : 0.0f;
        }
        for (int e = tid; e < LT_TN * LT_TK; e += LT_WX * LT_WY) {
            const int n = e / LT_TK, k = e - n * LT_TK;
            const bool ok = o0 + n < out && k0 + k < in;
            ws[k][n] = ok ? dt_load1(w + (long)(o0 + n) * w_rs, k0 + k) : 0.0f;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < LT_TK; k++) {
            float a[LT_RM], b[LT_RN];
#pragma unroll
            for (int i = 0; i < LT_RM; i++)
                a[i] = xs[k][ty + i * LT_WY];
#pragma unroll
            for (int j = 0; j < LT_RN; j++)
                b[j] = ws[k][tx + j * LT_WX];
#pragma unroll
            for (int i = 0; i < LT_RM; i++)
#pragma unroll
                for (int j = 0; j < LT_RN; j++)
                    acc[i][j] = MAD(a[i], b[j], acc[i][j]);
        }
        barrier(CLK_LOCAL_MEM_FENCE); /* the tiles are read by all before the next overwrites */
    }
#pragma unroll
    for (int i = 0; i < LT_RM; i++) {
        const int r = r0 + ty + i * LT_WY;
        if (r >= rows) break;
#pragma unroll
        for (int j = 0; j < LT_RN; j++) {
            const int o = o0 + tx + j * LT_WX;
            if (o < out)
                y[y_off + r * y_rs + o] = act_s(acc[i][j] + (has_bias ? bias[o] : 0.0f), act);
        }
    }
}

/* The embedding gather of a stored table of type DT (token_embd of a quantized model): y[r, :] =
 * table[ids[r], :] * scale, rows of t_rs bytes. Work-item (c, r) converts elements 16 c .. 16 c +
 * 15 of row r (16 divides every block), the tail of a row (d not a multiple of 16: plain types
 * only) one by one. The host has checked every id. */
__kernel void get_rows(const __global uchar *table, const long t_rs, const __global int *ids,
                       __global float *y, const int d, const float scale) {
    const int j = (int)get_global_id(0) * 16;
    const long r = get_global_id(1);
    if (j >= d) return;
    const __global uchar *row = table + (long)ids[r] * t_rs;
    __global float *yr = y + r * (long)d;
    if (j + 16 <= d) {
        vstore16(dt_load16(row, j) * scale, 0, yr + j);
        return;
    }
    for (int i = j; i < d; i++)
        yr[i] = dt_load1(row, i) * scale;
}
