/*
 * attention_local.c — host side of kernels/attention_local.cl: attention with K and V staged
 * through local memory, the default on devices whose local memory is on chip
 * (CL_DEVICE_LOCAL_MEM_TYPE == CL_LOCAL) and anywhere with attention.LOCAL_KV = 1.
 */
#include "attention.h"

#include <string.h>

/* Largest power of two <= x (x >= 1). */
static int64_t floor_pow2(int64_t x) {
    int64_t p = 1;
    while (p * 2 <= x)
        p *= 2;
    return p;
}

/* Arguments shared by both kernels, in their order up to the mask. */
typedef struct flash_args {
    cl_int nq, nk, heads, qr, qc, kr, kc, vr, vc, orow, mode, causal, kv_group;
    cl_long qb, kb, vb, coff;
    float scale;
} flash_args;

static flash_args make_args(const clf_attention_params *d, const att_shape *s) {
    flash_args a;
    memset(&a, 0, sizeof(a));
    a.nq = (cl_int)s->nq;
    a.nk = (cl_int)s->nk;
    a.heads = (cl_int)s->heads;
    a.qb = s->nq * s->wq;
    a.kb = s->kmax * s->wk;
    a.vb = s->kmax * s->wv;
    a.qr = (cl_int)s->wq;
    a.kr = (cl_int)s->wk;
    a.vr = (cl_int)s->wv;
    a.qc = (cl_int)d->q_col;
    a.kc = (cl_int)d->k_col;
    a.vc = (cl_int)d->v_col;
    a.orow = (cl_int)(s->heads * s->dh);
    a.mode = s->lens_mode;
    a.causal = d->mask.causal ? 1 : 0;
    a.coff = d->mask.causal_offset;
    a.kv_group = (cl_int)(s->heads / s->kv_heads);
    a.scale = s->scale;
    return a;
}

/* attention_flash: groups of (tpq, bq) work-items, tpq per query, bq queries; tiles of bk keys
 * (in defs). */
static clf_status flash(clf_context *ctx, const clf_tensor *q, const clf_tensor *k,
                        const clf_tensor *v, clf_tensor *out, const att_shape *s,
                        const clf_defines *defs, const flash_args *a, int64_t tpq, int64_t bq) {
    size_t local[3] = {(size_t)tpq, (size_t)bq, 1};
    cl_kernel kf;
    clf_status st = clf__kernel_fit(ctx, CLF_K_ATTENTION_FLASH, defs, 3, local, &kf);
    if (st != CLF_SUCCESS) return st;
    st = clf__set_args(ctx, kf, sizeof(cl_mem), &q->mem, sizeof(cl_mem), &k->mem, sizeof(cl_mem),
                       &v->mem, sizeof(cl_mem), &out->mem, sizeof(cl_int), &a->nq, sizeof(cl_int),
                       &a->nk, sizeof(cl_int), &a->heads, sizeof(cl_long), &a->qb, sizeof(cl_int),
                       &a->qr, sizeof(cl_int), &a->qc, sizeof(cl_long), &a->kb, sizeof(cl_int),
                       &a->kr, sizeof(cl_int), &a->kc, sizeof(cl_long), &a->vb, sizeof(cl_int),
                       &a->vr, sizeof(cl_int), &a->vc, sizeof(cl_int), &a->orow, sizeof(float),
                       &a->scale, sizeof(cl_mem), &s->lens, sizeof(cl_int), &a->mode,
                       sizeof(cl_int), &a->causal, sizeof(cl_long), &a->coff, sizeof(cl_int),
                       &a->kv_group, sizeof(cl_int), &s->window, (size_t)0);
    if (st != CLF_SUCCESS) return st;
    size_t global[3] = {local[0], clf__round_up((size_t)s->nq, local[1]),
                        (size_t)(s->batch * s->heads)};
    return clf__launch(ctx, CLF_K_ATTENTION_FLASH, kf, 3, global, local);
}

/* attention_flash_split: one group of wg work-items per query, head and split of split_keys
 * keys; with splits > 1, then attention_combine. */
static clf_status flash_split(clf_context *ctx, const clf_tensor *q, const clf_tensor *k,
                              const clf_tensor *v, clf_tensor *out, const att_shape *s,
                              const clf_defines *defs, const flash_args *a, size_t wg,
                              int64_t splits, int64_t split_keys, int64_t vw) {
    size_t local[3] = {wg, 1, 1};
    cl_kernel ks;
    clf_status st = clf__kernel_fit(ctx, CLF_K_ATTENTION_FLASH_SPLIT, defs, 3, local, &ks);
    if (st != CLF_SUCCESS) return st;
    cl_mem part = out->mem;
    if (splits > 1) {
        size_t bytes;
        const size_t rows = (size_t)(s->batch * s->heads * s->nq);
        if (!clf__mul_size(rows * (size_t)splits, (size_t)(s->dh + 2) * sizeof(float), &bytes))
            return clf__fail(ctx, CLF_ERROR_SIZE_LIMIT, "attention: split buffer overflows");
        if ((st = clf__scratch(ctx, bytes, &part)) != CLF_SUCCESS) return st;
    }
    cl_int c_splits = (cl_int)splits, c_split_keys = (cl_int)split_keys;
    st = clf__set_args(ctx, ks, sizeof(cl_mem), &q->mem, sizeof(cl_mem), &k->mem, sizeof(cl_mem),
                       &v->mem, sizeof(cl_mem), &out->mem, sizeof(cl_mem), &part, sizeof(cl_int),
                       &a->nq, sizeof(cl_int), &a->nk, sizeof(cl_int), &a->heads, sizeof(cl_long),
                       &a->qb, sizeof(cl_int), &a->qr, sizeof(cl_int), &a->qc, sizeof(cl_long),
                       &a->kb, sizeof(cl_int), &a->kr, sizeof(cl_int), &a->kc, sizeof(cl_long),
                       &a->vb, sizeof(cl_int), &a->vr, sizeof(cl_int), &a->vc, sizeof(cl_int),
                       &a->orow, sizeof(float), &a->scale, sizeof(cl_mem), &s->lens, sizeof(cl_int),
                       &a->mode, sizeof(cl_int), &a->causal, sizeof(cl_long), &a->coff,
                       sizeof(cl_int), &c_splits, sizeof(cl_int), &c_split_keys, sizeof(cl_int),
                       &a->kv_group, sizeof(cl_int), &s->window, (size_t)0);
    if (st != CLF_SUCCESS) return st;
    size_t global[3] = {local[0] * (size_t)s->nq, (size_t)(s->batch * s->heads), (size_t)splits};
    st = clf__launch(ctx, CLF_K_ATTENTION_FLASH_SPLIT, ks, 3, global, local);
    if (st != CLF_SUCCESS || splits == 1) return st;
    return clf__attention_combine(ctx, defs, part, out, s, splits, vw);
}

clf_status clf__attention_local(clf_context *ctx, const clf_tensor *q, const clf_tensor *k,
                                const clf_tensor *v, clf_tensor *out, const clf_attention_params *d,
                                const att_shape *s) {
    /* The widest vector (<= MAXVW) that divides Dh. */
    int64_t vw = clf__tun(ctx, CLF_T_ATTENTION_MAXVW);
    while (s->dh % vw)
        vw /= 2;
    const int64_t nv = s->dh / vw;
    /* Work-items per query of the split kernel: at most one per key of a split, a power of two
     * (its reduction trees); clf__kernel_fit may lower it further to the kernel's limit. */
    int64_t split_keys = clf__tun(ctx, CLF_T_ATTENTION_SPLIT_KEYS);
    int64_t wg = clf__tun(ctx, CLF_T_ATTENTION_LOCAL_WG);
    if (wg > split_keys) wg = floor_pow2(split_keys);
    bool use_split = s->nq <= clf__tun(ctx, CLF_T_ATTENTION_SPLIT_NQ);
    /* attention_flash's group: tpq work-items per query, each with na of its nv output vectors
     * (attention.TPQ, else at most 16 floats each), and as many queries as fill FLASH_WG. */
    int64_t tpq = clf__tun(ctx, CLF_T_ATTENTION_TPQ);
    if (tpq <= 0) tpq = (s->dh + 15) / 16;
    if (tpq > nv) tpq = nv;
    int64_t bq = clf__tun(ctx, CLF_T_ATTENTION_FLASH_WG) / tpq;
    if (bq < 1) bq = 1;
    const int64_t na = (nv + tpq - 1) / tpq;
    /* Keys per tile: attention_flash's local arrays (bq queries and a tile of K and V rows, Dh
     * floats each, and bq x bk scores) in at most half the device's local memory, so that two
     * groups can be resident (a kernel that still does not fit is built again with half the
     * tile). */
    const uint64_t lmem = ctx->info.local_mem_bytes ? ctx->info.local_mem_bytes : 16384;
    int64_t bk = clf__tun(ctx, CLF_T_ATTENTION_BK);
    while (bk > 1 && (uint64_t)(bq * s->dh + 2 * bk * s->dh + bq * bk) * sizeof(float) > lmem / 2)
        bk /= 2;
    /* A device that runs only so many loop iterations per work-item (clf_context.loop_budget):
     * count every loop's trips as if none were unrolled. attention_flash, per tile of bk keys:
     * the staging loop, the score loop over its keys, and per key of the row the max, the
     * value loop over its vectors; past the budget the
     * split kernel takes every query, its keys per split capped so a work-item stays within it
     * (per tile of wg keys: the score loop, two reduction trees, the value loop over wg keys). */
    const int64_t budget = ctx->loop_budget;
    if (budget > 0) {
        int64_t nd = (s->dh + wg - 1) / wg, lg = 0;
        while ((1LL << lg) < wg)
            lg++;
        const int64_t tile_f = (bk * nv + tpq * bq - 1) / (tpq * bq) +
                               (bk + tpq - 1) / tpq * (nv + 1) + bk * (na + 2) + na + 2;
        if (!use_split && (s->nk + bk - 1) / bk * tile_f + bq + 2 * na + nv > budget)
            use_split = true;
        const int64_t tile_s = nv + 2 * lg + 4 + wg * (nd + 1) + 4;
        int64_t keys = (budget - 2 * lg - nv - 8) / tile_s * wg;
        if (keys < wg) keys = wg;
        if (keys < split_keys) split_keys = keys;
    }
    const flash_args a = make_args(d, s);
    if (!use_split) {
        /* A compiler may lay local arrays out larger than their sum (llvmpipe reports about
         * twice): a smaller tile while the kernel does not fit. */
        for (;; bk /= 2) {
            clf_defines defs = {3, {"DH", "VW", "BK"}, {s->dh, vw, bk}};
            clf__dtype_define(&defs, s->kv_dtype);
            clf_status st = flash(ctx, q, k, v, out, s, &defs, &a, tpq, bq);
            if (st != CLF_ERROR_UNSUPPORTED || bk == 1) return st;
            clf__clear_error(ctx);
        }
    }
    const int64_t splits = s->nk > split_keys ? (s->nk + split_keys - 1) / split_keys : 1;
    /* BK too: the program holds attention_flash as well, whose tiles must fit local memory for
     * the program to build at all (a GPU compiler rejects it, at DH 256 with the default BK). */
    clf_defines defs = {3, {"DH", "VW", "BK"}, {s->dh, vw, bk}};
    clf__dtype_define(&defs, s->kv_dtype);
    return flash_split(ctx, q, k, v, out, s, &defs, &a, (size_t)wg, splits, split_keys, vw);
}
