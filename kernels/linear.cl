/*
 * linear.cl — y = act(x W^T + bias), nn.Linear with its epilogue, in clformer's own kernels:
 *   linear_rows: for a few rows of x (decoding): each weight is read once per SK_ROWS rows, where
 *             a GEMM would pad the rows to a whole tile.
 *   pack_panels / linear_packed: W packed once into panels of PK_NV * VW output columns, each
 *             panel (in, PK_NV * VW) contiguous: a work-item keeps PK_R rows x PK_NV vectors of
 *             outputs in registers and, per k, broadcasts PK_R scalars of x against PK_NV vectors
 *             of the panel (CPUs). With strides, a batch and alpha/beta they are also clf_matmul's
 *             GEMM on CPUs (src/ops/gemm.c packs op(B) per call).
 * Activations: activation.cl (prepended). Larger products on other devices go through CLBlast
 * (src/ops/linear.c).
 *
 * Weights are any storage type of dtypes.cl (DT, per call; the math is fp32): linear_rows and
 * linear_tiled (linear_tiled.cl, prepended) take them as bytes with a row stride (w_rs) and read
 * them through dt_load<N>, so a
 * block type (Q8_0, Q4_0, Q4_K, Q6_K) streams its blocks as stored. The packed kernels' panels
 * hold plain types as values (pack_panels) and, at VW 8 and 16 (CPUs), block types as their
 * blocks transposed (pack_blocks: byte p of the blocks of the panel's VW PK_NV rows side by side,
 * so one vector load gives a byte of VW columns, and per scale group the kernel dequantizes PK_NV
 * vectors of weights once for its PK_R rows; dtypes.cl, "panels"). At one or two rows (decoding)
 * they run in integers instead (linear_int.cl, pairs_group: x quantized to int16 per 32, pairs
 * of quants multiplied and added in 32-bit lanes, the scales once per group), or with QX 0 in
 * floats (the same sums as the float path of more rows, slower); linear_packed_xq runs many rows
 * in those integers against x quantized once per call (quantize_x, linear.QROWS).
 *
 * Tunables: VW, ERF_POLY, SK_ROWS, SK_OPI, SK_LW, SK_GM, PK_R, PK_NV, PK_GM, QX, VNNI (VW, PK_R,
 * PK_NV and QX defaulted in linear_int.cl, prepended); DT per call.
 */
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
#ifndef PK_GM
#define PK_GM 4 /* row blocks walked together by linear_packed (cache reuse) */
#endif

/* y[r, o] = act(sum_i x[r, i] w[o, i] + bias[o]), y[r, o] at y[y_off + r y_rs + o] (a part of a
 * stack writes its own columns of the stack's output). Work-group (g0, g1) computes output columns
 * g0 SK_OPI .. + SK_OPI - 1 of rows g1 SK_ROWS .. + SK_ROWS - 1 (dot products along i, both
 * operands contiguous); its SK_LW work-items split the length of a row of w (coalesced on GPUs)
 * and meet in a local-memory tree. */
__kernel __attribute__((reqd_work_group_size(SK_LW, 1, 1))) void
linear_rows(const __global float *x,                              /* (total_rows, in) */
            const int total_rows, const __global uchar *w,        /* (out, in) rows of DT */
            const long w_rs,                                      /* bytes per row of w */
            const __global float *bias,                           /* (out); unused if !has_bias */
            const int has_bias, const int act, __global float *y, /* (total_rows, y_rs) */
            const long y_off, const long y_rs, /* y's first output, its row stride */
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
    y += y_off + row0 * y_rs;
    floatV acc[SK_OPI][SK_ROWS];
#pragma unroll
    for (int j = 0; j < SK_OPI; j++)
#pragma unroll
        for (int r = 0; r < SK_ROWS; r++)
            acc[j][r] = (floatV)(0.0f);
    const int nv = in / VW;
#if DT_BLOCK > 1 && VW == 16
    /* Block types: a chunk of 32 weights converted once per output (dt_chunk32), its scale
     * applied once per row, not per weight; Q4_K's min term through the chunk's sum of x. */
    float accm[SK_OPI][SK_ROWS];
#pragma unroll
    for (int j = 0; j < SK_OPI; j++)
#pragma unroll
        for (int r = 0; r < SK_ROWS; r++)
            accm[j][r] = 0.0f;
    for (int c = l; c < in / 32; c += SK_LW) {
        float16 x0[SK_ROWS], x1[SK_ROWS];
        float sx[SK_ROWS];
#pragma unroll
        for (int r = 0; r < SK_ROWS; r++) {
            x0[r] = r < rows ? vload16(0, x + r * (long)in + 32 * c) : (float16)(0.0f);
            x1[r] = r < rows ? vload16(0, x + r * (long)in + 32 * c + 16) : (float16)(0.0f);
            sx[r] = DT == CLF_DT_Q4_K ? clf_hsum16(x0[r] + x1[r]) : 0.0f;
        }
#pragma unroll
        for (int j = 0; j < SK_OPI; j++) {
            if (o0 + j >= out) break;
            float16 w0, w1;
            float m;
            const float sc = dt_chunk32(w + (long)(o0 + j) * w_rs, c, &w0, &w1, &m);
#pragma unroll
            for (int r = 0; r < SK_ROWS; r++) {
                acc[j][r] = MAD((float16)(sc), MAD(w0, x0[r], w1 * x1[r]), acc[j][r]);
                if (DT == CLF_DT_Q4_K) accm[j][r] = MAD(m, sx[r], accm[j][r]);
            }
        }
    }
#else
    for (int c = l; c < nv; c += SK_LW) {
        floatV xv[SK_ROWS];
#pragma unroll
        for (int r = 0; r < SK_ROWS; r++)
            xv[r] = r < rows ? VLOAD(c, x + r * (long)in) : (floatV)(0.0f);
#pragma unroll
        for (int j = 0; j < SK_OPI; j++) {
            if (o0 + j >= out) break;
            const floatV wv = dt_loadv(w + (long)(o0 + j) * w_rs, c * VW);
#pragma unroll
            for (int r = 0; r < SK_ROWS; r++)
                acc[j][r] = MAD(xv[r], wv, acc[j][r]);
        }
    }
#endif
    float s[SK_OPI][SK_ROWS];
#pragma unroll
    for (int j = 0; j < SK_OPI; j++)
#pragma unroll
        for (int r = 0; r < SK_ROWS; r++)
#if DT_BLOCK > 1 && VW == 16
            s[j][r] = HSUM(acc[j][r]) - accm[j][r];
#else
            s[j][r] = HSUM(acc[j][r]);
#endif
    for (int i = nv * VW + l; i < in; i += SK_LW) /* plain types only: blocks are whole vectors */
        for (int j = 0; j < SK_OPI && o0 + j < out; j++)
            for (int r = 0; r < rows; r++)
                s[j][r] = MAD(x[r * (long)in + i], dt_load1(w + (long)(o0 + j) * w_rs, i), s[j][r]);
#if SK_LW > 1
    __local float red[SK_LW];
#pragma unroll
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
            y[r * y_rs + o0 + j] = act_s(s[j][r] + b, act);
    }
}

/* The row of W that column c of panel b holds: b PW + c; with gated panels (a GLU's gate | up
 * weights, (2F, in), F = out / 2) the gate's row b PW / 2 + c in the panel's first half and the
 * up's row F + b PW / 2 + c - PW / 2 in its second, so that a panel's vector j < PK_NV / 2 and
 * vector j + PK_NV / 2 hold the gate and up of the same columns (packed_rows multiplies them).
 * -1 past the end. */
static inline int panel_row(const int b, const int c, const int pw, const int out,
                            const int gated) {
    if (!gated) return b * pw + c < out ? b * pw + c : -1;
    const int h = pw / 2, f = out / 2, i = b * h + (c < h ? c : c - h);
    return i < f ? (c < h ? i : f + i) : -1;
}

/* wp[t][b][k][c] = W_t[panel_row(b, c)][k] (0 past the last row of W), PW = PK_NV * VW, where
 * W_t[o][k] = w[w_off + t * w_bs + o * w_os + k * w_ks]: (out, in) weights (w_os = in, w_ks = 1),
 * or clf_matmul's op(B) as W^T in either layout, for each of the batch's matrices t. One item per
 * element of the packed panels. */
#if DT_BLOCK == 1
/* A weight's bits, for copies. */
#if DT == CLF_DT_F32
#define WBITS float
#else
#define WBITS ushort
#endif
__kernel void pack_panels(const __global WBITS *w, /* halfs as their bits */
                          const long w_off, const long w_os, const long w_ks, const long w_bs,
                          __global WBITS *wp, /* (batch, ceil(out / PW), in, PW) */
                          const int in, const int out, const int gated) {
    const int pw = PK_NV * VW;
    const int nb = (out + pw - 1) / pw;
    const int c = (int)get_global_id(0), k = (int)get_global_id(1), g = (int)get_global_id(2);
    const int t = g / nb, b = g - t * nb;
    const int o = panel_row(b, c, pw, out, gated);
    wp[((long)g * in + k) * pw + c] =
        o >= 0 ? w[w_off + t * w_bs + o * w_os + k * w_ks] : (WBITS)0; /* +0 either way */
}

#else
/* Block types: the blocks of each panel's PW rows transposed (dtypes.cl, "panels"): byte p of
 * block j of row panel_row(b, c) at wp[b][j] + DT_PANEL_AT(p, c, PW) (0 past the last row: a
 * zero scale). One item per block of a row. */
__kernel void pack_blocks(const __global uchar *w, const long w_rs, /* (out, in) rows of DT */
                          __global uchar *wp, const int in, const int out, const int gated) {
    const int pw = PK_NV * VW, nblk = in / DT_BLOCK;
    const int c = (int)get_global_id(0), j = (int)get_global_id(1), b = (int)get_global_id(2);
    const int o = panel_row(b, c, pw, out, gated);
    __global uchar *dst = wp + ((long)b * nblk + j) * DT_BYTES * pw;
    const __global uchar *src = w + max(o, 0) * w_rs + (long)j * DT_BYTES;
    for (int p = 0; p < DT_BYTES; p++)
        dst[DT_PANEL_AT(p, c, pw)] = o >= 0 ? src[p] : 0;
}
#endif /* DT_BLOCK == 1 */

#if DT_BLOCK == 1 || VW == 8 || VW == 16
/* The operands of the packed kernels: x (rows, in) with row stride x_rs and column stride x_ks
 * (clf_matmul's op(A): a transposed A swaps them), y (rows, out) with row stride y_rs, each of
 * the batch's matrices t at x_off + t * x_bs, t * wp_bs, y_off + t * y_bs (get_group_id(2)). */
typedef struct packed_args {
    const __global float *x;
    long x_rs, x_ks;
    int rows;
#if DT_BLOCK == 1
    const __global stype *wp;
#else
    const __global uchar *wp;
#endif
    const __global float *bias;
    int has_bias, act;
    __global float *y;
    long y_rs;
    float alpha, beta;
    int in, out;
#if DT_BLOCK > 1
    const __global int *xq; /* linear_packed_xq: x from quantize_x (linear_int.cl), else NULL */
    const __global float *xm;
    const __local int *lq; /* linear_packed_lq: x quantized by the work-group, else NULL */
    const __local float *lm;
#endif
} packed_args;

/* y[r, o] = alpha act(sum_k x[r, k] w[o, k] + bias[o]) + beta y[r, o] (y is not read when beta
 * is 0) from the packed panels of w. Work-group (one item) (g0, g1) in grouped order (see
 * linear_rows) computes rows R g .. + R - 1 of panel b; the bias and activation run on whole
 * vectors. R is PK_R in linear_packed; linear_packed_1, _2 and _4 are the same code at fewer
 * rows (a decode step: one token would otherwise also multiply PK_R - 1 rows of zeros),
 * specialized by inlining with R a constant. x: X_ROWS, x's rows as floats; X_Q (linear_packed_xq),
 * quantize_x's integers at a.xq; X_L (linear_packed_lq1, _2), the work-group's at a.lq. A
 * constant too, so that each kernel holds its own path only (rusticl's compiler took minutes
 * over a kernel holding all three).
 * Every loop over rows and vectors is unrolled by pragma: without it PoCL 3.1 (LLVM 15) kept the
 * R x PK_NV accumulators in a stack array, each FMA a load and a store (perf annotate on Zen 4),
 * and the kernel reached 29% of the native FMA rate at Transformer shapes; unrolled they live in
 * registers: 83-95%. */

enum { X_ROWS, X_Q, X_L };
static inline __attribute__((always_inline)) void packed_rows(const packed_args a, const int R,
                                                              const int xs) {
    const int pw = PK_NV * VW;
    const int rows = a.rows, in = a.in, out = a.out;
    const int n0 = (int)get_num_groups(0), n1 = (int)get_num_groups(1);
    const int pid = (int)get_group_id(0) + (int)get_group_id(1) * n0;
    const int first = pid / (PK_GM * n0) * PK_GM;
    const int gm = min(n1 - first, PK_GM);
    const int within = pid % (PK_GM * n0);
#if DT_BLOCK > 1
    /* linear_packed_lq: a panel per work-item, the last group's items past the last panel idle */
    const int b = xs == X_L ? (int)get_global_id(0) : within / gm;
#else
    const int b = within / gm;
#endif
    const int r0 = (first + within % gm) * R;
    const int nr = min(R, rows - r0);
    if (nr <= 0 || b * pw >= out) return; /* no barriers below */
    floatV acc[XR_MAX][PK_NV];            /* R <= that in every kernel below */
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int j = 0; j < PK_NV; j++)
            acc[r][j] = (floatV)(0.0f);
    /* Rows past the last (a partial block) read the last row again: their sums are never
     * stored, and the loop stays free of selects. */
    const __global float *xr[XR_MAX];
#pragma unroll
    for (int r = 0; r < R; r++)
        xr[r] = a.x + (long)(r0 + min(r, nr - 1)) * a.x_rs;
    const long xk = a.x_ks;
    /* acc += x[:, k] wv: the rows' k-th elements against the PK_NV weight vectors */
#define PACKED_RANK1(k)                                                                            \
    _Pragma("unroll") for (int r = 0; r < R; r++) {                                                \
        const floatV xs = (floatV)(xr[r][(k)*xk]);                                                 \
        _Pragma("unroll") for (int j = 0; j < PK_NV; j++) acc[r][j] = MAD(xs, wv[j], acc[r][j]);   \
    }
#if DT_BLOCK > 1
    /* Block types: per scale group the PK_NV vectors of scales and min terms, then per element
     * the weights as floats once (s q - m, exact), reused by every row. Unrolled over the
     * group: the nibbles' shifts become constants, and the two elements of a byte (Q4_0: e and
     * e + 16) one load. */
    const int nblk = in / DT_BLOCK;
    const __global uchar *panel = a.wp + (long)b * nblk * DT_BYTES * pw;
    for (int j0 = 0; j0 < nblk; j0++) {
        const __global uchar *pb = panel + (long)j0 * DT_BYTES * pw;
        for (int g = 0; g < DT_BLOCK / DT_SUB; g++) {
            floatV s[PK_NV], m[PK_NV];
#pragma unroll
            for (int j = 0; j < PK_NV; j++)
                s[j] = dt_panel_sm(pb, pw, g, j * VW, &m[j]);
            if (xs == X_Q) {
                /* Many rows in integers, x quantized by quantize_x (Q4_K, Q6_K: groups g and g + 1
                 * at even g) */
                if (XQ_STEP == 1 || !(g & 1))
                    xq_group___global(
                        pb, pw, a.xq + (long)r0 * (in / 32) * 16, a.xm + (long)r0 * (in / 32) * 4,
                        (j0 * DT_BLOCK + g * DT_SUB) / 32, in / 32, nr, g, R, s, m, acc);
                continue;
            }
            if (xs == X_L) {
                /* Few rows in integers, x quantized by the work-group (r0 is 0) */
                if (XQ_STEP == 1 || !(g & 1))
                    xq_group___local(pb, pw, a.lq, a.lm, (j0 * DT_BLOCK + g * DT_SUB) / 32, in / 32,
                                     nr, g, R, s, m, acc);
                continue;
            }
            if (R <= 2 && QX) {
                /* Few rows (decoding): in integers, 32 elements at a time (Q4_K: 64; Q4_K, Q6_K:
                 * groups g and g + 1 at even g) */
                if (XQ_STEP == 1 || !(g & 1))
                    pairs_group(pb, pw, xr, j0 * DT_BLOCK + g * DT_SUB, g, R, s, m, acc);
                continue;
            }
            if (R <= 2) {
                /* Few rows in floats (QX 0): the quants against x, the scale and min term once
                 * per group (sum x (s q - m) = s sum x q - m sum x) */
                floatV t[2][PK_NV];
                float xs[2] = {0.0f, 0.0f};
#pragma unroll
                for (int r = 0; r < R; r++)
#pragma unroll
                    for (int j = 0; j < PK_NV; j++)
                        t[r][j] = (floatV)(0.0f);
#pragma unroll
                for (int i = 0; i < DT_SUB; i++) {
                    const int e = g * DT_SUB + i, k = j0 * DT_BLOCK + e;
                    floatV q[PK_NV];
#pragma unroll
                    for (int j = 0; j < PK_NV; j++)
                        q[j] = dt_panel_q(pb, pw, e, j * VW);
#pragma unroll
                    for (int r = 0; r < R; r++) {
                        const float xv = xr[r][k];
                        xs[r] += xv;
#pragma unroll
                        for (int j = 0; j < PK_NV; j++)
                            t[r][j] = MAD((floatV)(xv), q[j], t[r][j]);
                    }
                }
#pragma unroll
                for (int r = 0; r < R; r++)
#pragma unroll
                    for (int j = 0; j < PK_NV; j++)
                        acc[r][j] = MAD(s[j], t[r][j], MAD(-m[j], (floatV)(xs[r]), acc[r][j]));
                continue;
            }
#pragma unroll
            for (int i = 0; i < DT_SUB; i++) {
                const int e = g * DT_SUB + i, k = j0 * DT_BLOCK + e;
                floatV wv[PK_NV];
#pragma unroll
                for (int j = 0; j < PK_NV; j++)
                    wv[j] = MAD(s[j], dt_panel_q(pb, pw, e, j * VW), -m[j]);
                PACKED_RANK1(k);
            }
        }
    }
#else
    const __global stype *panel = a.wp + (long)b * in * pw;
    for (int k = 0; k < in; k++) {
        floatV wv[PK_NV];
#pragma unroll
        for (int j = 0; j < PK_NV; j++)
            wv[j] = SLOAD(0, panel + (long)k * pw + j * VW);
        PACKED_RANK1(k);
    }
#endif
    const float alpha = a.alpha, beta = a.beta;
    /* a.act: the activation in its low 8 bits, above them the host's gate: 1, gated panels
     * (panel_row), each column stored at its row of W; 2, gated panels and the GLU: y (rows,
     * out / 2) = act(gate + its bias) (up + its bias), alpha and beta as for any y (gated_act's
     * product, fused) */
    const int act = a.act & 0xff, gated = (a.act >> 8) != 0, glu = (a.act >> 8) == 2;
    const int f = out / 2, hv = PK_NV / 2;
    /* Constant trip counts with guards (a loop with a break does not unroll), so acc is indexed
     * by constants only and stays in registers. */
#pragma unroll
    for (int j = 0; j < PK_NV; j++) {
        const int up = gated && j >= hv, ju = (j + hv) % PK_NV; /* up: an up vector */
        if (glu && up) continue;                                /* taken with its gate vector */
        /* the vector's first column within its half (gated) or y, the columns there, and its
         * column of W (of bias, and of y but for the GLU's) */
        const int cb = gated ? b * (pw / 2) + (j - up * hv) * VW : b * pw + j * VW;
        const int lim = gated ? f : out, c0 = cb + (up ? f : 0), yc = glu ? cb : c0;
        const bool full = cb + VW <= lim;
        floatV bv = (floatV)(0.0f), bu = (floatV)(0.0f);
        if (a.has_bias && full) bv = VLOAD(0, a.bias + c0);
        if (a.has_bias && full && glu) bu = VLOAD(0, a.bias + f + cb);
#pragma unroll
        for (int r = 0; r < R; r++) {
            __global float *yr = a.y + (long)(r0 + r) * a.y_rs;
            if (r < nr && full) {
                floatV v = act_v(acc[r][j] + bv, act);
                if (glu) v *= acc[r][ju] + bu;
                v *= alpha;
                if (beta != 0.0f) v = MAD((floatV)(beta), VLOAD(0, yr + yc), v);
                VSTORE(v, 0, yr + yc);
            } else if (r < nr && cb < lim) {
                float t[VW], tu[VW];
#if VW == 1
                t[0] = acc[r][j];
                tu[0] = acc[r][ju];
#else
                CLF_CAT(vstore, VW)(acc[r][j], 0, t);
                CLF_CAT(vstore, VW)(acc[r][ju], 0, tu);
#endif
                for (int c = 0; c < lim - cb; c++) {
                    float v = act_s(t[c] + (a.has_bias ? a.bias[c0 + c] : 0.0f), act);
                    if (glu) v *= tu[c] + (a.has_bias ? a.bias[f + cb + c] : 0.0f);
                    v *= alpha;
                    if (beta != 0.0f) v = MAD(beta, yr[yc + c], v);
                    yr[yc + c] = v;
                }
            }
        }
    }
}

#if DT_BLOCK > 1
/* wf[b][k][c] = the weight of row b PW + c, column k, as a float (0 past the last row: its zero
 * scale), from the block panels of pack_blocks: the F32 panels of pack_panels, so that many rows
 * run linear_packed of the F32 program, each weight dequantized once per call rather than once
 * per PK_R rows (linear.DQ_ROWS). The values are those packed_rows computes (s q - m, one MAD).
 * One item per vector of PK_NV, block and panel. */
__kernel void unpack_blocks(const __global uchar *wp, __global float *wf, const int in) {
    const int pw = PK_NV * VW, nblk = in / DT_BLOCK;
    const int j = (int)get_global_id(0), j0 = (int)get_global_id(1), b = (int)get_global_id(2);
    const __global uchar *pb = wp + ((long)b * nblk + j0) * DT_BYTES * pw;
    __global float *dst = wf + ((long)b * in + (long)j0 * DT_BLOCK) * pw + j * VW;
    for (int g = 0; g < DT_BLOCK / DT_SUB; g++) {
        floatV m;
        const floatV s = dt_panel_sm(pb, pw, g, j * VW, &m);
#pragma unroll
        for (int i = 0; i < DT_SUB; i++) {
            const int e = g * DT_SUB + i;
            VSTORE(MAD(s, dt_panel_q(pb, pw, e, j * VW), -m), 0, dst + (long)e * pw);
        }
    }
}
#endif

/* A packed kernel's arguments (linear_packed's) as packed_args for batch matrix t, x's rows from
 * xt, then the members past out (block types: the quantized x's sources). */
#define PACKED_ARGS(xt, t, ...)                                                                    \
    {                                                                                              \
        (xt), x_rs, x_ks, rows, wp + (t)*wp_bs, bias, has_bias, act, y + y_off + (t)*y_bs, y_rs,   \
            alpha, beta, in, out, __VA_ARGS__                                                      \
    }
#define LINEAR_PACKED(name, R)                                                                     \
    __kernel __attribute__((reqd_work_group_size(1, 1, 1))) void name(                             \
        const __global float *x, const long x_off, const long x_rs, const long x_ks,               \
        const long x_bs, const int rows, const __global PANEL_T *wp, const long wp_bs,             \
        const __global float *bias, const int has_bias, const int act, __global float *y,          \
        const long y_off, const long y_rs, const long y_bs, const float alpha, const float beta,   \
        const int in, const int out) {                                                             \
        const long t = get_group_id(2);                                                            \
        const packed_args a = PACKED_ARGS(x + x_off + t * x_bs, t, PACKED_XQ_NONE);                \
        packed_rows(a, (R), X_ROWS);                                                               \
    }
#if DT_BLOCK == 1
#define PANEL_T        stype
#define PACKED_XQ_NONE /* no members */
#else
#define PANEL_T        uchar
#define PACKED_XQ_NONE NULL, NULL, NULL, NULL
#endif
LINEAR_PACKED(linear_packed, PK_R)
LINEAR_PACKED(linear_packed_1, 1)
LINEAR_PACKED(linear_packed_2, 2)
LINEAR_PACKED(linear_packed_4, 4)
#if DT_BLOCK > 1
/* Many rows of a block type in integers: x (rows, in) quantized by quantize_x into xq and xm =
 * xq + xm_off (linear_int.cl), QR rows a work-item; batch 1, alpha 1, beta 0. */
__kernel __attribute__((reqd_work_group_size(1, 1, 1))) void
linear_packed_xq(const __global int *xq, const long xm_off, const int rows,
                 const __global uchar *wp, const __global float *bias, const int has_bias,
                 const int act, __global float *y, const long y_off, const long y_rs, const int in,
                 const int out) {
    const __global float *xm = (const __global float *)(xq + xm_off);
    const packed_args a = {NULL, 0,    0,    rows, wp,  bias, has_bias, act,  y + y_off,
                           y_rs, 1.0f, 0.0f, in,   out, xq,   xm,       NULL, NULL};
    packed_rows(a, QR, X_Q);
}

/* Decoding (R = 1 or 2 rows, all of x's rows) of a block type in integers, a panel per work-item
 * (the host's work-group: linear.LQ_WG): the group's work-items quantize x's groups of 32 in turn
 * into lq (local memory, the layout of quantize_x: R in / 32 groups of 16 words, then as many of 4
 * floats), then each multiplies its panel against them. linear_packed_1 and _2 quantize x in every
 * work-item instead: a third of their instructions at Q4_0 (linear.LQ_WG). With has_norm, x is
 * RMSNorm's input and the product takes its output, x rs ng (rs = 1 / sqrt(mean(x^2) + eps), the
 * sum as rmsnorm_rows takes it, by every work-item): the norm's launch fused. Arguments as
 * linear_packed's, then those and lq. */
#define LINEAR_PACKED_LQ(name, R)                                                                  \
    __kernel void name(const __global float *x, const long x_off, const long x_rs,                 \
                       const long x_ks, const long x_bs, const int rows, const __global uchar *wp, \
                       const long wp_bs, const __global float *bias, const int has_bias,           \
                       const int act, __global float *y, const long y_off, const long y_rs,        \
                       const long y_bs, const float alpha, const float beta, const int in,         \
                       const int out, const __global float *ng, const int has_norm,                \
                       const float eps, __local int *lq) {                                         \
        const long t = get_group_id(2);                                                            \
        const int groups = in / 32;                                                                \
        __local float *lm = (__local float *)(lq + (R)*groups * 16);                               \
        const __global float *xt = x + x_off + t * x_bs;                                           \
        float rs[R];                                                                               \
        _Pragma("unroll") for (int r = 0; r < (R); r++) {                                          \
            rs[r] = 1.0f;                                                                          \
            if (has_norm) {                                                                        \
                const __global float *xr = xt + min(r, rows - 1) * x_rs;                           \
                float s2 = 0.0f;                                                                   \
                for (int c = 0; c < in / VW; c++) {                                                \
                    const floatV z = VLOAD(c, xr);                                                 \
                    s2 += HSUM(z * z);                                                             \
                }                                                                                  \
                rs[r] = rsqrt(s2 / (float)in + eps);                                               \
            }                                                                                      \
        }                                                                                          \
        for (int i = (int)get_local_id(0); i < (R)*groups; i += (int)get_local_size(0)) {          \
            const int r = min(i / groups, rows - 1), c = i % groups;                               \
            xq_put___local(xt + r * x_rs + 32 * c, has_norm ? ng + 32 * c : NULL,                  \
                           (R) == 1 || r == 0 ? rs[0] : rs[(R)-1], lq + 16 * i, lm + 4 * i);       \
        }                                                                                          \
        barrier(CLK_LOCAL_MEM_FENCE);                                                              \
        const packed_args a = PACKED_ARGS(xt, t, NULL, NULL, lq, lm);                              \
        packed_rows(a, (R), X_L);                                                                  \
    }
LINEAR_PACKED_LQ(linear_packed_lq1, 1)
LINEAR_PACKED_LQ(linear_packed_lq2, 2)
#endif
#endif /* DT_BLOCK == 1 || VW == 8 || VW == 16 */
