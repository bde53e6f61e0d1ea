/*
 * attention_local.cl — attention for devices with dedicated local memory (GPUs), in the style of
 * FlashAttention-2 without sub-groups or the fp16 extension: fp32 throughout, core OpenCL 1.2.
 * The same attention as attention.cl (layout, masks, grouped-query heads, log2-unit scores, the
 * finite sentinel and lazy rescaling are described there) with K and V staged through __local.
 * No work-item keeps a whole head of anything: a private array of DH floats per work-item is a
 * stack array on GPUs (ptxas: 512 bytes at DH 64) or hundreds of spilled registers (gfx90a at
 * DH 128), so the head dimension is split across work-items and the rows live in local memory.
 *
 * attention_flash (prefill): a work-group of (TPQ, BQ) work-items owns BQ consecutive queries of
 * one (batch, head); the TPQ work-items of a query share its head dimension, work-item c owning
 * the output vectors c, c + TPQ, ... (NA of them, in registers). The scaled queries sit in local
 * memory. The group walks the union of its queries' visible keys in tiles of BK:
 *   1. all work-items copy the tile's K and V rows into local memory (consecutive work-items
 *      read consecutive vectors of a row: coalesced);
 *   2. work-item c scores its query against keys c, c + TPQ, ... of the tile (whole dot products
 *      from local memory) into the score tile ss[BQ][BK];
 *   3. every work-item of a query reads its query's row of scores, takes the row's max (the
 *      same in all TPQ work-items, so their running max m and sum l agree), and accumulates
 *      exp2(s - m) V into its own output vectors.
 * Queries past nq still load tiles and meet every barrier; they store nothing.
 *
 * attention_flash_split (decoding, flash-decoding): a work-group of WG work-items owns one query
 * of one (batch, head) and one split of its keys. Per tile of WG keys, work-item t scores key
 * t (the query is in local memory, the key row read with vector loads); the tile's max is reduced
 * through a local-memory tree, so the running max m is the same in every work-item; the weights
 * go to local memory and work-item t accumulates output dimensions t, t + WG, ... over the tile's
 * keys, reading V rows coalesced. The sum of weights is reduced at the end. With splits > 1 each
 * group writes its partial (m, l, acc) and attention.cl's attention_combine merges them.
 *
 * K and V are floats or halfs (DT, an F16 KV cache), as in attention.cl.
 *
 * Tunables (per call, from the host): DH (head dim), VW (floats per vector, dividing DH), BK
 * (keys per local tile, from the device's local memory), TPQ and BQ (attention_flash's group:
 * work-items per query and queries) and WG (work-items per query of attention_flash_split, a
 * power of two), all fitted to the kernel's work-group limit.
 */
#ifndef VW
#define VW 4
#endif
#ifndef DH
#define DH 64
#endif
#ifndef BQ
#define BQ 16
#endif
#ifndef TPQ
#define TPQ 4
#endif
#ifndef BK
#define BK 16
#endif
#ifndef WG
#define WG 64
#endif
#ifndef RESCALE
#define RESCALE 8.0f /* lazy rescaling threshold (log2 units), as in attention.cl */
#endif

#define NV (DH / VW)
#define NA ((NV + TPQ - 1) / TPQ) /* output vectors per work-item of attention_flash */
#define ND ((DH + WG - 1) / WG)   /* output dimensions per work-item of attention_flash_split */

__kernel __attribute__((reqd_work_group_size(TPQ, BQ, 1))) void
attention_flash(const __global float *q, /* (B, *, q_rstride) */
                const __global stype *k, /* (B, >= nk, k_rstride); halfs with DT F16 */
                const __global stype *v, /* (B, >= nk, v_rstride) */
                __global float *out,     /* (B, nq, o_rstride) */
                const int nq, const int nk, const int heads, const long q_bstride,
                const int q_rstride, const int q_col, const long k_bstride, const int k_rstride,
                const int k_col, const long v_bstride, const int v_rstride, const int v_col,
                const int o_rstride, const float scale,
                const __global int *lens, /* (B) or (B, nq) valid lengths; unused if mode 0 */
                const int lens_mode, const int causal, const long causal_offset, const int kv_group,
                const int window) {
    __local floatV qs[BQ][NV];             /* the group's scaled queries */
    __local floatV ks[BK][NV], vs[BK][NV]; /* a tile of K and V rows */
    __local float ss[BQ][BK];              /* the tile's scores, a row per query */
    __local int lims[BQ], los[BQ];
    const int c = get_local_id(0), r = get_local_id(1);
    const int t = r * TPQ + c; /* flat index in the group */
    const int i = get_global_id(1);
    const bool active = i < nq;
    const int bh = get_global_id(2);
    const int b = bh / heads, h = bh - b * heads;
    const int kvo = h / kv_group * DH; /* column of the K/V head (grouped-query) */
    const int ic = min(i, nq - 1);
    const int lim =
        active ? clf_visible_keys(nk, ic, b, nq, lens, lens_mode, causal, causal_offset) : 0;
    const int lo = clf_first_key(lim, window);
    const __global float *qr = q + b * q_bstride + (long)ic * q_rstride + q_col + h * DH;
    for (int d = c; d < NV; d += TPQ)
        qs[r][d] = VLOAD(d, qr) * (scale * M_LOG2E_F);
    /* The group's key range: the union of its queries' ranges (every work-item the same). */
    if (c == 0) {
        lims[r] = lim;
        los[r] = active ? lo : INT_MAX;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    int g_lim = 0, g_lo = INT_MAX;
    for (int u = 0; u < BQ; u++) {
        g_lim = max(g_lim, lims[u]);
        g_lo = min(g_lo, los[u]);
    }

    const __global stype *kb = k + b * k_bstride + k_col + kvo;
    const __global stype *vb = v + b * v_bstride + v_col + kvo;
    floatV acc[NA];
#pragma unroll
    for (int e = 0; e < NA; e++)
        acc[e] = (floatV)(0.0f);
    float m = CLF_NEG_BIG, l = 0.0f;
    for (int j0 = g_lo; j0 < g_lim; j0 += BK) {
        const int jn = min(BK, g_lim - j0);
        /* 1. Stage the tile: vector x of the tile is row x / NV, vector x % NV (coalesced). Rows
         * past the group's range are not read. */
        for (int x = t; x < jn * NV; x += TPQ * BQ) {
            const int jj = x / NV, d = x - jj * NV;
            ks[jj][d] = SLOAD(d, kb + (long)(j0 + jj) * k_rstride);
            vs[jj][d] = SLOAD(d, vb + (long)(j0 + jj) * v_rstride);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        const int a = max(lo - j0, 0), e = min(lim - j0, jn); /* this query's keys of the tile */
        /* 2. Scores of this query against keys c, c + TPQ, ... of the tile. */
        for (int jj = c; jj < jn; jj += TPQ) {
            if (jj < a || jj >= e) continue; /* masked for this query: never read */
            floatV dot = qs[r][0] * ks[jj][0];
            for (int d = 1; d < NV; d++)
                dot = MAD(qs[r][d], ks[jj][d], dot);
            ss[r][jj] = HSUM(dot);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        /* 3. The row's max over this query's keys, then its weights into this work-item's
         * output vectors. */
        float tm = CLF_NEG_BIG;
        for (int jj = a; jj < e; jj++)
            tm = fmax(tm, ss[r][jj]);
        if (tm > m + RESCALE) { /* lazy rescale; also the first key (m is the sentinel) */
            const float corr = exp2(m - tm);
            l *= corr;
#pragma unroll
            for (int u = 0; u < NA; u++)
                acc[u] *= corr;
            m = tm;
        }
        for (int jj = a; jj < e; jj++) {
            const float p = exp2(ss[r][jj] - m);
            l += p;
#pragma unroll
            for (int u = 0; u < NA; u++) {
                const int d = c + u * TPQ;
                if (d < NV) acc[u] = MAD((floatV)(p), vs[jj][d], acc[u]);
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE); /* the tile is read by all before the next overwrites it */
    }
    if (!active) return;
    __global float *orow = out + ((long)b * nq + i) * o_rstride + h * DH;
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
#pragma unroll
    for (int u = 0; u < NA; u++) {
        const int d = c + u * TPQ;
        if (d < NV) VSTORE(acc[u] * inv, d, orow);
    }
}

CLF_DEFINE_ROW_REDUCE(flash_max, fmax)
CLF_DEFINE_ROW_REDUCE(flash_sum, CLF_ADD)

__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
attention_flash_split(const __global float *q, const __global stype *k, const __global stype *v,
                      __global float *out,  /* (B, nq, o_rstride) when splits == 1 */
                      __global float *part, /* (B * H * nq, splits, DH + 2) when splits > 1 */
                      const int nq, const int nk, const int heads, const long q_bstride,
                      const int q_rstride, const int q_col, const long k_bstride,
                      const int k_rstride, const int k_col, const long v_bstride,
                      const int v_rstride, const int v_col, const int o_rstride, const float scale,
                      const __global int *lens, const int lens_mode, const int causal,
                      const long causal_offset, const int splits, const int split_keys,
                      const int kv_group, const int window) {
    __local floatV qs[NV];
    __local float red[1][WG], ps[WG];
    const int t = get_local_id(0);
    const int i = get_group_id(0); /* one query per group: every work-item has the same bounds */
    const int bh = get_global_id(1);
    const int sp = get_global_id(2);
    const int b = bh / heads, h = bh - b * heads;
    const int kvo = h / kv_group * DH;
    const int lim = clf_visible_keys(nk, i, b, nq, lens, lens_mode, causal, causal_offset);
    const int j_begin = max(sp * split_keys, clf_first_key(lim, window));
    const int j_end = splits > 1 ? min(lim, (sp + 1) * split_keys) : lim;

    const __global float *qr = q + b * q_bstride + (long)i * q_rstride + q_col + h * DH;
    const __global stype *kb = k + b * k_bstride + k_col + kvo;
    const __global stype *vb = v + b * v_bstride + v_col + kvo;
    for (int d = t; d < NV; d += WG)
        qs[d] = VLOAD(d, qr) * (scale * M_LOG2E_F);
    barrier(CLK_LOCAL_MEM_FENCE);
    float acc[ND];
    for (int e = 0; e < ND; e++)
        acc[e] = 0.0f;
    float m = CLF_NEG_BIG, l = 0.0f; /* m: the same in every work-item; l: this one's keys */
    for (int j0 = j_begin; j0 < j_end; j0 += WG) {
        const int j = j0 + t;
        float s = CLF_NEG_BIG;
        if (j < j_end) {
            const __global stype *kr = kb + (long)j * k_rstride;
            floatV dot = qs[0] * SLOAD(0, kr);
            for (int d = 1; d < NV; d++)
                dot = MAD(qs[d], SLOAD(d, kr), dot);
            s = HSUM(dot);
        }
        const float bm = flash_max(red, 0, t, s); /* its barriers also end the last tile's reads */
        if (bm > m + RESCALE) {
            const float corr = exp2(m - bm);
            l *= corr;
            for (int e = 0; e < ND; e++)
                acc[e] *= corr;
            m = bm;
        }
        const float p = j < j_end ? exp2(s - m) : 0.0f;
        l += p;
        ps[t] = p;
        barrier(CLK_LOCAL_MEM_FENCE);
        const int jn = min(WG, j_end - j0);
        for (int jj = 0; jj < jn; jj++) {
            const float pj = ps[jj];
            const __global stype *vr = vb + (long)(j0 + jj) * v_rstride;
            for (int e = 0; e < ND; e++) {
                const int d = t + e * WG;
                if (d < DH) acc[e] = MAD(pj, SLOAD1(d, vr), acc[e]);
            }
        }
    }
    l = flash_sum(red, 0, t, l);
    if (splits > 1) {
        __global float *pr = part + (((long)bh * nq + i) * splits + sp) * (DH + 2);
        if (t == 0) {
            pr[0] = m;
            pr[1] = l;
        }
        for (int e = 0; e < ND; e++)
            if (t + e * WG < DH) pr[2 + t + e * WG] = acc[e];
    } else {
        __global float *orow = out + ((long)b * nq + i) * o_rstride + h * DH;
        const float inv = l > 0.0f ? 1.0f / l : 0.0f;
        for (int e = 0; e < ND; e++)
            if (t + e * WG < DH) orow[t + e * WG] = acc[e] * inv;
    }
}
