/*
 * attention.cl — scaled dot-product attention for many heads in one launch, flash style: one
 * pass over the keys in tiles with an online softmax (running max m, running sum l), the
 * output rescaled once at the end; no Nq x Nk matrix anywhere, so memory stays O(N * DH).
 *
 * Layout: the seeds' rearrange('b n (h d) -> b h n d') folded into indexing. Row r of batch b of
 * Q starts at q + b * q_bstride + r * q_rstride; head h's block is DH floats from column
 * q_col + h * DH (likewise K, V). Out is (B, Nq, o_rstride) with head h at column h * DH. So Q,
 * K and V can be three slices of one fused QKV projection (B, N, 3 H DH), and K/V a KV cache
 * longer than the nk keys in use. Grouped-query (and multi-query) attention: K and V have
 * H / kv_group heads, and query head h reads K/V head h / kv_group (kv_group 1: one each).
 *
 * Masks: query i of batch b sees keys lo .. lim - 1, lim = clf_visible_keys(nk, i, b, ...) and
 * lo = clf_first_key(lim, window) (the rules in common.cl, shared with softmax.cl; lo is 0 without
 * a sliding window). A query that sees no key gets zeros. Masked keys are
 * skipped, never scored; the running max starts at -FLT_MAX (a finite sentinel: -INFINITY is
 * undefined under fast-math).
 *
 * Each work-item owns one query: its scaled q and its accumulator live in private memory as DH/VW
 * vectors; K and V rows are read straight from global memory (on CPUs a local copy only adds
 * work; on GPUs the BQ work-items of a group read the same rows at the same time). Keys go in
 * tiles of VW, whose softmax weights come from one vector exp.
 *
 * Scores are kept in log2 units (q is scaled by scale * log2(e)), so weights are exp2(s - m).
 * Lazy rescaling (as in FlashAttention-4): the running max m moves only when a tile's max exceeds
 * it by more than RESCALE, so the common tile costs no scalar exp2 and no pass over the
 * accumulator. Weights stay <= 2^RESCALE, the sum <= Nk 2^RESCALE: far from float overflow, and
 * the result (acc / l, both under the same m) is unchanged.
 * Split-K (flash-decoding): with splits > 1 the keys are cut into chunks of split_keys, one per
 * get_global_id(2); each writes its partial (m, l, acc) and attention_combine merges them.
 *
 * attention_tiled_t below does the same on keys transposed once per call (the default for more
 * than attention.SPLIT_NQ queries); attention_tiled remains for decoding steps (few queries, keys
 * split or not), where transposing would add a pass over K per step.
 *
 * K and V are floats or halfs (an F16 KV cache): DT (per call) selects their section of
 * dtypes.cl (stype, SLOAD):
 * the scores and sums stay fp32.
 *
 * Tunables: VW (floats per vector, must divide DH), DH (head dim, per call), HG (heads per
 * work-item of attention_tiled, dividing H, per call: whole rows of K and V), BQ (work-items
 * per work-group), QB (queries per work-item, attention_tiled_t), KC (keys per chunk between
 * barriers, attention_tiled_t; a power of two >= 16, so a multiple of VW), PVN (attention_tiled_t,
 * per call: the V rows of a tile are accumulated in passes of PVN vectors of the output row, so
 * a pass keeps QB x PVN accumulators in registers while it walks the tile's VW rows).
 */
#ifndef VW
#define VW 16 /* floats per vector load; the host picks one that divides DH */
#endif
#ifndef DH
#define DH 64 /* head dimension (set per call) */
#endif
#ifndef BQ
#define BQ 8 /* queries (work-items) per work-group */
#endif
#ifndef QB
#define QB 4 /* queries per work-item in attention_tiled_t (register blocking) */
#endif
#ifndef HG
#define HG 1 /* consecutive heads per work-item in attention_tiled (set per call) */
#endif
#ifndef KC
#define KC 256 /* keys per chunk between barriers in attention_tiled_t */
#endif
#ifndef RESCALE
#define RESCALE 8.0f /* lazy rescaling threshold (log2 units), see below */
#endif
#ifndef UNROLL
#define UNROLL 0 /* unroll loops over register arrays of <= this many vectors; -1: keep rolled */
#endif

#define NV (DH / VW)
#ifndef PVN
#define PVN NV /* vectors of each output row per pass over a tile's V rows (divides NV) */
#endif

/* Loops over the private arrays (accumulators, scores) unrolled by pragma, so the arrays live
 * in registers: PoCL 3.1 (LLVM 15) leaves them rolled and keeps the arrays on the stack, a load
 * and a store around every multiply-add (perf annotate). Only where the arrays fit about the
 * register file (UNROLL, per device: the ISA's vector registers): beyond it the unrolled code
 * spills anyway, and compiles several times slower (every head size is a program). In
 * attention_tiled_t, UNROLL_Q: loops over the QB queries (score vectors, running sums);
 * UNROLL_T: loops over the NV vectors of the QB x NV accumulators. UNROLL_V: attention_tiled's
 * loops over one head's NV vectors. */
#if UNROLL < 0 /* all rolled: llvmpipe's LLVM unrolls them itself and JITs for seconds */
#define UNROLL_T _Pragma("unroll 1")
#define UNROLL_Q _Pragma("unroll 1")
#define UNROLL_V _Pragma("unroll 1")
#else
#if QB * NV <= UNROLL
#define UNROLL_T _Pragma("unroll")
#else
#define UNROLL_T
#endif
#if QB <= UNROLL
#define UNROLL_Q _Pragma("unroll")
#else
#define UNROLL_Q
#endif
#if NV <= UNROLL
#define UNROLL_V _Pragma("unroll")
#else
#define UNROLL_V
#endif
#endif

__kernel __attribute__((reqd_work_group_size(BQ, 1, 1))) void
attention_tiled(const __global float *q, /* (B, *, q_rstride) */
                const __global stype *k, /* (B, >= nk, k_rstride) */
                const __global stype *v, /* (B, >= nk, v_rstride) */
                __global float *out,     /* (B, nq, o_rstride) */
                __global float *part,    /* (B * H * nq, splits, DH + 2) when splits > 1 */
                const int nq, const int nk, const int heads, const long q_bstride,
                const int q_rstride, const int q_col, const long k_bstride, const int k_rstride,
                const int k_col, const long v_bstride, const int v_rstride, const int v_col,
                const int o_rstride, const float scale,
                const __global int *lens, /* (B) or (B, nq) valid lengths; unused if mode 0 */
                const int lens_mode, const int causal, const long causal_offset, const int splits,
                const int split_keys, const int kv_group, const int window) {
    const int i = get_global_id(0);
    if (i >= nq) return; /* no barriers below */
    const int groups = heads / HG;
    const int bg = get_global_id(1); /* batch, then group of HG consecutive heads */
    const int sp = get_global_id(2);
    const int b = bg / groups, h0 = (bg - b * groups) * HG;
    const int lim = clf_visible_keys(nk, i, b, nq, lens, lens_mode, causal, causal_offset);
    const int j_begin = max(sp * split_keys, clf_first_key(lim, window));
    const int j_end = splits > 1 ? min(lim, (sp + 1) * split_keys) : lim;

    const __global float *qr = q + b * q_bstride + (long)i * q_rstride + q_col + h0 * DH;
    const __global stype *kb = k + b * k_bstride + k_col;
    const __global stype *vb = v + b * v_bstride + v_col;
    floatV qv[HG][NV], acc[HG][NV], lv[HG];
    float m[HG];
    int kvo[HG]; /* column of head h0 + g's K and V block (grouped-query: heads share one) */
    for (int g = 0; g < HG; g++) {
        kvo[g] = (h0 + g) / kv_group * DH;
        UNROLL_V
        for (int d = 0; d < NV; d++) {
            qv[g][d] = VLOAD(g * NV + d, qr) * (scale * M_LOG2E_F); /* log2-unit scores */
            acc[g][d] = (floatV)(0.0f);
        }
        m[g] = CLF_NEG_BIG;
        lv[g] = (floatV)(0.0f);
    }
    float sa[VW], pa[VW];
    /* Tiles of VW keys: one horizontal sum per key, then the tile's softmax in one vector; the
     * HG heads of a tile one after another, so whole rows of K and V are read. */
    for (int j0 = j_begin; j0 < j_end; j0 += VW) {
        const int jn = min(VW, j_end - j0);
        const intV visible = (IOTA + j0) < j_end;
        for (int g = 0; g < HG; g++) {
            for (int jj = 0; jj < VW; jj++) {
                const __global stype *kr = kb + (long)(j0 + min(jj, jn - 1)) * k_rstride + kvo[g];
                floatV dot = qv[g][0] * SLOAD(0, kr);
                UNROLL_V
                for (int d = 1; d < NV; d++)
                    dot = MAD(qv[g][d], SLOAD(d, kr), dot);
                sa[jj] = HSUM(dot);
            }
            const floatV s = select((floatV)(CLF_NEG_BIG), PRIV_VLOAD(sa), visible);
            const float bm = HMAX(s);
            if (bm > m[g] + RESCALE) { /* lazy rescale; also the first tile (m is the sentinel) */
                const float corr = exp2(m[g] - bm);
                lv[g] *= corr;
                UNROLL_V
                for (int d = 0; d < NV; d++)
                    acc[g][d] *= corr;
                m[g] = bm;
            }
            const floatV p = select((floatV)(0.0f), exp2(s - m[g]), visible);
            lv[g] += p;
            PRIV_VSTORE(p, pa);
            for (int jj = 0; jj < jn; jj++) {
                const __global stype *vr = vb + (long)(j0 + jj) * v_rstride + kvo[g];
                UNROLL_V
                for (int d = 0; d < NV; d++)
                    acc[g][d] = MAD((floatV)(pa[jj]), SLOAD(d, vr), acc[g][d]);
            }
        }
    }
    for (int g = 0; g < HG; g++) {
        const float l = HSUM(lv[g]);
        const int bh = b * heads + h0 + g;
        if (splits > 1) {
            __global float *pr = part + (((long)bh * nq + i) * splits + sp) * (DH + 2);
            pr[0] = m[g];
            pr[1] = l;
            UNROLL_V
            for (int d = 0; d < NV; d++)
                VSTORE(acc[g][d], d, pr + 2);
        } else {
            __global float *orow = out + ((long)b * nq + i) * o_rstride + (h0 + g) * DH;
            const float inv = l > 0.0f ? 1.0f / l : 0.0f;
            UNROLL_V
            for (int d = 0; d < NV; d++)
                VSTORE(acc[g][d] * inv, d, orow);
        }
    }
}

/* Merges the splits' partials (m, l, acc) of each (batch, head, query): one work-item per output
 * vector of VW floats, so no work-item holds a row (a per-work-item array of DH floats is a stack
 * array on GPUs). Every work-item of a row reads the row's (m, l) pairs itself. */
__kernel void attention_combine(const __global float *part, /* (B * H * nq, splits, DH + 2) */
                                __global float *out,        /* (B, nq, o_rstride) */
                                const int nq, const int heads, const int splits,
                                const int o_rstride, const long rows /* B * H * nq */) {
    const long x = get_global_id(0);
    if (x >= rows * NV) return;
    const long row = x / NV; /* (b * heads + h) * nq + i */
    const int d = (int)(x - row * NV);
    const int i = (int)(row % nq);
    const long bh = row / nq;
    const long b = bh / heads;
    const int h = (int)(bh - b * heads);
    const __global float *pr = part + row * splits * (DH + 2);
    float m = CLF_NEG_BIG;
    for (int s = 0; s < splits; s++)
        m = fmax(m, pr[s * (DH + 2)]);
    float l = 0.0f;
    floatV acc = (floatV)(0.0f);
    for (int s = 0; s < splits; s++) {
        const __global float *ps = pr + s * (DH + 2);
        const float w = ps[1] > 0.0f ? exp2(ps[0] - m) : 0.0f; /* an empty split adds nothing */
        l += w * ps[1];
        acc = MAD((floatV)(w), VLOAD(d, ps + 2), acc);
    }
    __global float *orow = out + (b * nq + i) * o_rstride + h * DH;
    VSTORE(acc * (l > 0.0f ? 1.0f / l : 0.0f), d, orow);
}

/* K of each (batch, KV head) transposed tile by tile, zero past nk: (B * H, nkp / VW, DH, VW) (H
 * here: the KV heads), the
 * VW keys of a tile as DH vectors of VW, one key per lane. attention_tiled_t then scores VW keys
 * per vector with no horizontal sums, and reads each tile as one contiguous block (DH VW floats)
 * rather than DH rows far apart (a TLB miss per row at long N). */
__kernel void attention_transpose_k(const __global stype *k, /* (B, >= nk, k_rstride) */
                                    __global float *kt,      /* (B * H, nkp / VW, DH, VW) */
                                    const int nk, const int nkp, const int heads,
                                    const long k_bstride, const int k_rstride, const int k_col) {
    /* One tile of VW keys per work-item: the tile's DH x VW floats are written in order, row d
     * from element d of its VW keys (rows of K that stay in L1 across d). One key per work-item
     * wrote a float every VW floats and read K rows far apart: 2.6 ms for MiniLM's 6 MB of K on
     * 2 Zen 4 cores under PoCL, nearly half the attention after it. */
    const int tile = get_global_id(0);
    if (tile * VW >= nkp) return;
    const int bh = get_global_id(1);
    const int b = bh / heads, h = bh - b * heads;
    __global float *dst = kt + ((long)bh * nkp + (long)tile * VW) * DH;
    const __global stype *src = k + b * k_bstride + (long)tile * VW * k_rstride + k_col + h * DH;
    const int keys = min(VW, nk - tile * VW); /* <= 0: a tile past nk, all zeros */
    for (int d = 0; d < DH; d++)
        for (int l = 0; l < VW; l++)
            dst[d * VW + l] = l < keys ? SLOAD1(d, src + (long)l * k_rstride) : 0.0f;
}

/* One V row (key j0 + jj of the tile) into vectors p0 .. p0 + PVN of the QB accumulators (that
 * loop unrolled, so the QB x PVN accumulators can stay in registers through the tile's rows). */
#define PV_ROW(jj, p0)                                                                             \
    do {                                                                                           \
        const __global stype *vr = vb + (long)(j0 + (jj)) * v_rstride;                             \
        _Pragma("unroll") for (int d = (p0); d < (p0) + PVN; d++) {                                \
            const floatV vv = SLOAD(d, vr);                                                        \
            UNROLL_Q                                                                               \
            for (int u = 0; u < QB; u++)                                                           \
                acc[u][d] = MAD((floatV)(pa[u][(jj)]), vv, acc[u][d]);                             \
        }                                                                                          \
    } while (0)

/* The same attention as attention_tiled, on transposed keys, QB queries per work-item: VW keys
 * are scored per vector (DH multiply-adds with q[d] broadcast, each key vector loaded once for QB
 * queries), their softmax weights come from one vector exp, and each V row is loaded once and
 * accumulated into QB outputs. On PoCL this avoids a horizontal sum and a scalar exp per key. */
__kernel __attribute__((reqd_work_group_size(BQ, 1, 1))) void
attention_tiled_t(const __global float *q,  /* (B, *, q_rstride) */
                  const __global float *kt, /* (B * KVH, nkp / VW, DH, VW): attention_transpose_k */
                  const __global stype *v,  /* (B, >= nk, v_rstride) */
                  __global float *out,      /* (B, nq, o_rstride) */
                  const int nq, const int nk, const int nkp, const int heads, const long q_bstride,
                  const int q_rstride, const int q_col, const long v_bstride, const int v_rstride,
                  const int v_col, const int o_rstride, const float scale, const __global int *lens,
                  const int lens_mode, const int causal, const long causal_offset,
                  const int kv_group, const int window) {
    const int i0 = get_global_id(0) * QB;
    const bool active = i0 < nq; /* no early return: every work-item meets the barriers */
    const int bh = get_global_id(1);
    const int b = bh / heads, h = bh - b * heads;
    const int kvh = h / kv_group; /* grouped-query: kv_group heads share a K/V head */
    const __global float *ktb = kt + ((long)b * (heads / kv_group) + kvh) * DH * nkp;
    const __global stype *vb = v + b * v_bstride + v_col + kvh * DH;
    int lim[QB], lo[QB];
    int lim_max = 0, lo_min = INT_MAX;
    float qs[QB][DH];
    floatV acc[QB][NV];
    float m[QB];
    floatV lv[QB];
    UNROLL_Q
    for (int u = 0; u < QB; u++) {
        const int i = min(i0 + u, nq - 1); /* past nq: a copy of the last query, never stored */
        lim[u] =
            active ? clf_visible_keys(nk, i, b, nq, lens, lens_mode, causal, causal_offset) : 0;
        lim_max = max(lim_max, lim[u]);
        lo[u] = clf_first_key(lim[u], window);
        lo_min = min(lo_min, lo[u]);
        const __global float *qr = q + b * q_bstride + (long)i * q_rstride + q_col + h * DH;
        for (int d = 0; d < DH; d++)
            qs[u][d] = qr[d] * (scale * M_LOG2E_F);
        UNROLL_T
        for (int d = 0; d < NV; d++)
            acc[u][d] = (floatV)(0.0f);
        m[u] = CLF_NEG_BIG;
        lv[u] = (floatV)(0.0f);
    }
    float pa[QB][VW];
    /* Keys in chunks of KC, with a barrier after each: the group's work-items go through the
     * same chunk together, so its K and V rows are read from memory once per group, not once
     * per work-item (PoCL runs a group's work-items one after another between barriers). */
    for (int c0 = 0; c0 < nk; c0 += KC) {
        const int c1 = min(c0 + KC, lim_max);
        /* tiles wholly before every query's window are skipped (tiles stay VW-aligned) */
        for (int j0 = max(c0, lo_min / VW * VW); j0 < c1; j0 += VW) {
            floatV s[QB];
            UNROLL_Q
            for (int u = 0; u < QB; u++)
                s[u] = (floatV)(0.0f);
            for (int d = 0; d < DH; d++) {
                const floatV kv = VLOAD(0, ktb + (long)j0 * DH + d * VW);
                UNROLL_Q
                for (int u = 0; u < QB; u++)
                    s[u] = MAD((floatV)(qs[u][d]), kv, s[u]);
            }
            UNROLL_Q
            for (int u = 0; u < QB; u++) {
                const intV visible = (IOTA + j0) < lim[u] && (IOTA + j0) >= lo[u];
                const floatV su = select((floatV)(CLF_NEG_BIG), s[u], visible);
                const float bm = HMAX(su);
                if (bm > m[u] + RESCALE) { /* lazy rescale; also the first visible tile */
                    const float corr = exp2(m[u] - bm);
                    lv[u] *= corr;
                    UNROLL_T
                    for (int d = 0; d < NV; d++)
                        acc[u][d] *= corr;
                    m[u] = bm;
                }
                /* Masked lanes weigh 0, also when no lane is visible (then m is the sentinel). */
                const floatV p = select((floatV)(0.0f), exp2(su - m[u]), visible);
                lv[u] += p;
                PRIV_VSTORE(p, pa[u]);
            }
            const int jn = min(VW, lim_max - j0);
            UNROLL_T
            for (int p0 = 0; p0 < NV; p0 += PVN) {
                for (int jj = 0; jj < jn; jj++)
                    PV_ROW(jj, p0);
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    UNROLL_Q
    for (int u = 0; u < QB;
         u++) { /* a constant trip count, so it unrolls: acc stays in registers */
        if (i0 + u < nq) {
            __global float *orow = out + ((long)b * nq + i0 + u) * o_rstride + h * DH;
            const float l = HSUM(lv[u]);
            const float inv = l > 0.0f ? 1.0f / l : 0.0f;
            UNROLL_T
            for (int d = 0; d < NV; d++)
                VSTORE(acc[u][d] * inv, d, orow);
        }
    }
}
