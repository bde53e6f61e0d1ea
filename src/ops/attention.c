/*
 * attention.c — the checks of every attention call, the host side of kernels/attention.cl (tiled,
 * with split-key decoding) and the naive path (GEMM, masked softmax, GEMM) that is both the
 * baseline and the way to get the weights. attention_local.c has the local-memory path.
 */
#include "attention.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

clf_attention_params clf_attention_default_params(int64_t heads, int64_t head_dim) {
    clf_attention_params d;
    memset(&d, 0, sizeof(d));
    d.heads = heads;
    d.head_dim = head_dim;
    return d;
}

static clf_status check(clf_context *ctx, const clf_tensor *q, const clf_tensor *k,
                        const clf_tensor *v, const clf_tensor *out, const clf_attention_params *d,
                        att_shape *s) {
    /* K and V: both F32 or both F16 (a half-precision KV cache; math stays fp32). */
    /* K and V: any type the table marks for them (CLF_DTU_KV), both the same. */
    const clf_dtype_traits *kvtr = k && k->ctx == ctx ? clf__dtype(k->dtype) : NULL;
    const clf_dtype kvt = kvtr && (kvtr->uses & CLF_DTU_KV) ? k->dtype : CLF_F32;
    clf_status st = clf__check_tensor(ctx, q, "q", CLF_F32);
    if (st == CLF_SUCCESS) st = clf__check_tensor(ctx, k, "k", kvt);
    if (st == CLF_SUCCESS) st = clf__check_tensor(ctx, v, "v", kvt);
    if (st == CLF_SUCCESS) st = clf__check_tensor(ctx, out, "out", CLF_F32);
    if (st != CLF_SUCCESS) return st;
    if (!d) return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "attention: desc is NULL");
    char a[96], b[96], c[96], e[96];
    if (q->ndim != 3 || k->ndim != 3 || v->ndim != 3 || out->ndim != 3)
        return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH,
                         "attention: q %s, k %s, v %s and out %s must all be 3-D (B, N, width)",
                         clf__shape_str(q, a, sizeof(a)), clf__shape_str(k, b, sizeof(b)),
                         clf__shape_str(v, c, sizeof(c)), clf__shape_str(out, e, sizeof(e)));
    if (d->heads < 1 || d->head_dim < 1 || d->head_dim > 256)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                         "attention: heads = %lld must be >= 1 and head_dim = %lld in 1..256",
                         (long long)d->heads, (long long)d->head_dim);
    s->batch = q->shape[0];
    s->nq = q->shape[1];
    s->kmax = k->shape[1];
    s->nk = d->nk ? d->nk : s->kmax;
    s->heads = d->heads;
    s->kv_heads = d->kv_heads ? d->kv_heads : d->heads;
    s->dh = d->head_dim;
    if (s->kv_heads < 1 || s->heads % s->kv_heads)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                         "attention: kv_heads = %lld must divide heads = %lld",
                         (long long)d->kv_heads, (long long)d->heads);
    s->wq = q->shape[2];
    s->wk = k->shape[2];
    s->wv = v->shape[2];
    const int64_t hd = s->heads * s->dh, kvd = s->kv_heads * s->dh;
    bool ok = k->shape[0] == s->batch && v->shape[0] == s->batch && out->shape[0] == s->batch &&
              out->shape[1] == s->nq && out->shape[2] == hd && v->shape[1] >= s->nk && s->nk >= 1 &&
              s->nk <= s->kmax && d->q_col >= 0 && d->k_col >= 0 && d->v_col >= 0 &&
              d->q_col + hd <= s->wq && d->k_col + kvd <= s->wk && d->v_col + kvd <= s->wv;
    if (!ok)
        return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH,
                         "attention: q %s (col %lld), k %s (col %lld), v %s (col %lld), out %s do "
                         "not fit %lld heads (%lld of K/V) of %lld with %lld keys",
                         clf__shape_str(q, a, sizeof(a)), (long long)d->q_col,
                         clf__shape_str(k, b, sizeof(b)), (long long)d->k_col,
                         clf__shape_str(v, c, sizeof(c)), (long long)d->v_col,
                         clf__shape_str(out, e, sizeof(e)), (long long)s->heads,
                         (long long)s->kv_heads, (long long)s->dh, (long long)s->nk);
    if (out == q || out == k || out == v)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "attention: out must not be q, k or v");
    const int64_t limits[] = {s->nq, s->kmax, s->wq, s->wk, s->wv, s->batch * s->heads};
    for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++)
        if ((st = clf__check_int(ctx, limits[i], "attention size")) != CLF_SUCCESS) return st;
    s->scale = d->scale != 0.0f ? d->scale : (float)(1.0 / sqrt((double)s->dh));
    if (!isfinite(s->scale))
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "attention: scale is not finite");
    clf_mask_args m;
    if ((st = clf__check_mask(ctx, &d->mask, s->batch, s->nq, "attention", q->mem, &m)) !=
        CLF_SUCCESS)
        return st;
    s->lens_mode = m.lens_mode;
    s->lens = m.lens;
    s->window = m.window;
    s->kv_dtype = kvt;
    if (kvt != CLF_F32 && d->naive)
        return clf__fail(ctx, CLF_ERROR_UNSUPPORTED,
                         "attention: the naive path (GEMMs) takes F32 K and V, these are F16");
    if (d->weights && !d->naive)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                         "attention: weights are only produced by the naive path (naive = 1)");
    return CLF_SUCCESS;
}

/* Transposes K of each (batch, head) into scratch, then runs attention_tiled_t with per_item
 * queries per work-item and bq per group (the kernels built with `defs`, vectors of vw). */
static clf_status tiled_t(clf_context *ctx, const clf_tensor *q, const clf_tensor *k,
                          const clf_tensor *v, clf_tensor *out, const clf_attention_params *d,
                          const att_shape *s, const clf_defines *defs, int64_t vw, size_t per_item,
                          size_t bq) {
    const int64_t nkp = (s->nk + vw - 1) / vw * vw;
    size_t bytes;
    if (!clf__mul_size((size_t)(s->batch * s->kv_heads * s->dh), (size_t)nkp * sizeof(float),
                       &bytes))
        return clf__fail(ctx, CLF_ERROR_SIZE_LIMIT, "attention: transposed keys overflow");
    cl_kernel ktr, kat;
    cl_mem kt;
    size_t tl[2] = {64, 1}, local[2] = {bq, 1};
    clf_status st = clf__kernel_fit(ctx, CLF_K_ATTENTION_TRANSPOSE, defs, 2, tl, &ktr);
    if (st == CLF_SUCCESS) st = clf__kernel_fit(ctx, CLF_K_ATTENTION_T, defs, 2, local, &kat);
    if (st == CLF_SUCCESS) st = clf__scratch(ctx, bytes, &kt);
    if (st != CLF_SUCCESS) return st;
    cl_int nq = (cl_int)s->nq, nk = (cl_int)s->nk, c_nkp = (cl_int)nkp, heads = (cl_int)s->heads;
    cl_int kv_heads = (cl_int)s->kv_heads, kv_group = (cl_int)(s->heads / s->kv_heads);
    cl_long qb = s->nq * s->wq, kb = s->kmax * s->wk, vb = s->kmax * s->wv;
    cl_int qr = (cl_int)s->wq, kr = (cl_int)s->wk, vr = (cl_int)s->wv;
    cl_int qc = (cl_int)d->q_col, kc = (cl_int)d->k_col, vc = (cl_int)d->v_col;
    cl_int orow = (cl_int)(s->heads * s->dh), mode = s->lens_mode, causal = d->mask.causal ? 1 : 0;
    cl_long coff = d->mask.causal_offset;
    float scale = s->scale;
    st = clf__set_args(ctx, ktr, sizeof(cl_mem), &k->mem, sizeof(cl_mem), &kt, sizeof(cl_int), &nk,
                       sizeof(cl_int), &c_nkp, sizeof(cl_int), &kv_heads, sizeof(cl_long), &kb,
                       sizeof(cl_int), &kr, sizeof(cl_int), &kc, (size_t)0);
    if (st != CLF_SUCCESS) return st;
    size_t tg[2] = {clf__round_up((size_t)(nkp / vw), tl[0]), (size_t)(s->batch * s->kv_heads)};
    if ((st = clf__launch(ctx, CLF_K_ATTENTION_TRANSPOSE, ktr, 2, tg, tl)) != CLF_SUCCESS)
        return st;
    st = clf__set_args(ctx, kat, sizeof(cl_mem), &q->mem, sizeof(cl_mem), &kt, sizeof(cl_mem),
                       &v->mem, sizeof(cl_mem), &out->mem, sizeof(cl_int), &nq, sizeof(cl_int), &nk,
                       sizeof(cl_int), &c_nkp, sizeof(cl_int), &heads, sizeof(cl_long), &qb,
                       sizeof(cl_int), &qr, sizeof(cl_int), &qc, sizeof(cl_long), &vb,
                       sizeof(cl_int), &vr, sizeof(cl_int), &vc, sizeof(cl_int), &orow,
                       sizeof(float), &scale, sizeof(cl_mem), &s->lens, sizeof(cl_int), &mode,
                       sizeof(cl_int), &causal, sizeof(cl_long), &coff, sizeof(cl_int), &kv_group,
                       sizeof(cl_int), &s->window, (size_t)0);
    if (st != CLF_SUCCESS) return st;
    size_t global[2] = {clf__round_up(((size_t)s->nq + per_item - 1) / per_item, local[0]),
                        (size_t)(s->batch * s->heads)};
    return clf__launch(ctx, CLF_K_ATTENTION_T, kat, 2, global, local);
}

static clf_status tiled(clf_context *ctx, const clf_tensor *q, const clf_tensor *k,
                        const clf_tensor *v, clf_tensor *out, const clf_attention_params *d,
                        const att_shape *s) {
    /* The widest vector (<= MAXVW) that divides Dh: rows then never need a partial vector. */
    int64_t vw = clf__tun(ctx, CLF_T_ATTENTION_MAXVW);
    while (s->dh % vw)
        vw /= 2;
    /* Tiles per head size (tuned, else the tunables): build options of their own. */
    int64_t qb64, bq64;
    clf__attention_tiles(ctx, s->dh, &qb64, &bq64);
    /* Per-call macros of the variant (BQ: the fitted work-group, clf__kernel_fit). */
    clf_defines defs = {3, {"DH", "VW", "QB"}, {s->dh, vw, qb64}};
    clf__dtype_define(&defs, s->kv_dtype);
    const size_t bq = (size_t)bq64;
    int64_t split_keys = clf__tun(ctx, CLF_T_ATTENTION_SPLIT_KEYS);
    int64_t splits = 1;
    if (s->nq <= clf__tun(ctx, CLF_T_ATTENTION_SPLIT_NQ) && s->nk > split_keys)
        splits = (s->nk + split_keys - 1) / split_keys;
    /* Heads per work-item: the largest divisor of H up to MAXHG (whole rows of K and V). */
    int64_t hg = clf__tun(ctx, CLF_T_ATTENTION_MAXHG);
    while (s->heads % hg)
        hg--;
    /* A device that runs only so many loop iterations per work-item (llvmpipe silently skips
     * those past 65535, see clf_context.loop_budget): each work-item's keys are capped so its
     * loops stay within the budget, through the split-key path (partials, then the combine).
     * Loop trips per tile of VW keys, counting every loop as if none were unrolled: transposed
     * keys DH QB (scores) + QB NV (rescale) + VW NV (QB + 1) (values, in up to NV passes); row
     * kernel, per head, DH (scores) + NV (rescale) + DH (values), plus the tile loops themselves.
     */
    const int64_t budget = ctx->loop_budget;
    /* Transposed keys pay a pass over K per call: worth it for many queries, not for a decoding
     * step's few (each step transposed the whole cache: in a 128-token F16 decode step the
     * transpose and attention_tiled_t took 108 us a layer, 12% of the step, PoCL 3.1, Zen 5). */
    bool use_t = splits == 1 && s->nq > clf__tun(ctx, CLF_T_ATTENTION_SPLIT_NQ) &&
                 clf__tun(ctx, CLF_T_ATTENTION_KT);
    if (budget > 0) {
        const int64_t nv = s->dh / vw;
        const int64_t tile_t = s->dh * qb64 + qb64 * nv + vw * nv * (qb64 + 1) + 2 * qb64 + 2;
        if (use_t && (s->nk + vw - 1) / vw * tile_t > budget) use_t = false;
        int64_t tile_row = hg * (2 * s->dh + nv + 2 * vw) + 2;
        if (!use_t && (s->nk + vw - 1) / vw * tile_row > budget) {
            hg = 1; /* fewer splits with one head per work-item */
            tile_row = 2 * s->dh + nv + 2 * vw + 2;
            int64_t keys = budget / tile_row * vw;
            if (keys < vw) keys = vw;
            if (keys < split_keys || splits == 1) split_keys = keys;
            splits = (s->nk + split_keys - 1) / split_keys;
        }
    }
    if (use_t) {
        /* PV passes of pvn vectors of the output row: the largest divisor of Dh / VW up to
         * attention.PVN (0: one pass) */
        const int64_t nv = s->dh / vw;
        int64_t pvn = clf__tun(ctx, CLF_T_ATTENTION_PVN);
        if (pvn <= 0 || pvn > nv) pvn = nv;
        while (nv % pvn)
            pvn--;
        defs.name[defs.n] = "PVN";
        defs.value[defs.n++] = pvn;
        return tiled_t(ctx, q, k, v, out, d, s, &defs, vw, (size_t)qb64, bq);
    }
    defs.name[defs.n] = "HG";
    defs.value[defs.n++] = hg;
    cl_kernel kt;
    size_t local[3] = {bq, 1, 1};
    clf_status st = clf__kernel_fit(ctx, CLF_K_ATTENTION, &defs, 3, local, &kt);
    if (st != CLF_SUCCESS) return st;
    cl_mem part = out->mem;
    const size_t rows = (size_t)(s->batch * s->heads * s->nq);
    if (splits > 1) {
        size_t bytes;
        if (!clf__mul_size(rows * (size_t)splits, (size_t)(s->dh + 2) * sizeof(float), &bytes))
            return clf__fail(ctx, CLF_ERROR_SIZE_LIMIT, "attention: split buffer overflows");
        if ((st = clf__scratch(ctx, bytes, &part)) != CLF_SUCCESS) return st;
    }
    cl_int nq = (cl_int)s->nq, nk = (cl_int)s->nk, heads = (cl_int)s->heads;
    cl_long qb = s->nq * s->wq, kb = s->kmax * s->wk, vb = s->kmax * s->wv;
    cl_int qr = (cl_int)s->wq, kr = (cl_int)s->wk, vr = (cl_int)s->wv;
    cl_int qc = (cl_int)d->q_col, kc_ = (cl_int)d->k_col, vc = (cl_int)d->v_col;
    cl_int orow = (cl_int)(s->heads * s->dh), mode = s->lens_mode, causal = d->mask.causal ? 1 : 0;
    cl_long coff = d->mask.causal_offset;
    cl_int c_splits = (cl_int)splits, c_split_keys = (cl_int)split_keys;
    cl_int kv_group = (cl_int)(s->heads / s->kv_heads);
    float scale = s->scale;
    st = clf__set_args(
        ctx, kt, sizeof(cl_mem), &q->mem, sizeof(cl_mem), &k->mem, sizeof(cl_mem), &v->mem,
        sizeof(cl_mem), &out->mem, sizeof(cl_mem), &part, sizeof(cl_int), &nq, sizeof(cl_int), &nk,
        sizeof(cl_int), &heads, sizeof(cl_long), &qb, sizeof(cl_int), &qr, sizeof(cl_int), &qc,
        sizeof(cl_long), &kb, sizeof(cl_int), &kr, sizeof(cl_int), &kc_, sizeof(cl_long), &vb,
        sizeof(cl_int), &vr, sizeof(cl_int), &vc, sizeof(cl_int), &orow, sizeof(float), &scale,
        sizeof(cl_mem), &s->lens, sizeof(cl_int), &mode, sizeof(cl_int), &causal, sizeof(cl_long),
        &coff, sizeof(cl_int), &c_splits, sizeof(cl_int), &c_split_keys, sizeof(cl_int), &kv_group,
        sizeof(cl_int), &s->window, (size_t)0);
    if (st != CLF_SUCCESS) return st;
    size_t global[3] = {clf__round_up((size_t)s->nq, local[0]), (size_t)(s->batch * s->heads / hg),
                        (size_t)splits};
    if ((st = clf__launch(ctx, CLF_K_ATTENTION, kt, 3, global, local)) != CLF_SUCCESS) return st;
    if (splits == 1) return CLF_SUCCESS;
    return clf__attention_combine(ctx, &defs, part, out, s, splits, vw);
}

clf_status clf__attention_combine(clf_context *ctx, const clf_defines *defs, cl_mem part,
                                  clf_tensor *out, const att_shape *s, int64_t splits, int64_t vw) {
    size_t local[1] = {64};
    cl_kernel kc;
    clf_status st = clf__kernel_fit(ctx, CLF_K_ATTENTION_COMBINE, defs, 1, local, &kc);
    if (st != CLF_SUCCESS) return st;
    cl_int nq = (cl_int)s->nq, heads = (cl_int)s->heads, c_splits = (cl_int)splits;
    cl_int orow = (cl_int)(s->heads * s->dh);
    cl_long rows = s->batch * s->heads * s->nq;
    st = clf__set_args(ctx, kc, sizeof(cl_mem), &part, sizeof(cl_mem), &out->mem, sizeof(cl_int),
                       &nq, sizeof(cl_int), &heads, sizeof(cl_int), &c_splits, sizeof(cl_int),
                       &orow, sizeof(cl_long), &rows, (size_t)0);
    if (st != CLF_SUCCESS) return st;
    size_t global[1] = {clf__round_up((size_t)rows * (size_t)(s->dh / vw), local[0])};
    return clf__launch(ctx, CLF_K_ATTENTION_COMBINE, kc, 1, global, local);
}

static clf_status naive(clf_context *ctx, const clf_tensor *q, const clf_tensor *k,
                        const clf_tensor *v, clf_tensor *out, const clf_attention_params *d,
                        const att_shape *s) {
    const int64_t scores_shape[4] = {s->batch, s->heads, s->nq, s->nk};
    clf_tensor *w = d->weights, *tmp = NULL;
    clf_status st;
    if (w) {
        if ((st = clf__check_tensor(ctx, w, "weights", CLF_F32)) != CLF_SUCCESS) return st;
        bool ok = w->ndim == 4;
        for (int i = 0; ok && i < 4; i++)
            ok = w->shape[i] == scores_shape[i];
        if (!ok) {
            char a[96];
            return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH,
                             "attention: weights %s must be (%lld, %lld, %lld, %lld)",
                             clf__shape_str(w, a, sizeof(a)), (long long)s->batch,
                             (long long)s->heads, (long long)s->nq, (long long)s->nk);
        }
    } else {
        double bytes = (double)s->batch * (double)s->heads * (double)s->nq * (double)s->nk * 4.0;
        if (bytes > (double)ctx->info.max_alloc_bytes)
            return clf__fail(ctx, CLF_ERROR_SIZE_LIMIT,
                             "naive attention needs a %lld x %lld x %lld x %lld score matrix "
                             "(%.0f MiB), over the device's max allocation of %.0f MiB: use the "
                             "tiled path",
                             (long long)s->batch, (long long)s->heads, (long long)s->nq,
                             (long long)s->nk, bytes / 1048576.0,
                             (double)ctx->info.max_alloc_bytes / 1048576.0);
        if ((st = clf_tensor_create(ctx, CLF_F32, 4, scores_shape, &tmp)) != CLF_SUCCESS) return st;
        w = tmp;
    }
    const int64_t hd = s->heads * s->dh, per_b = s->heads * s->nq * s->nk, nqk = s->nq * s->nk;
    /* Per batch, one strided-batched GEMM over all H heads (a_stride Dh steps to the next head's
     * columns); grouped-query: one per K/V head j, over its kv_group query heads, which all read
     * the same K/V block (stride 0). */
    const int64_t group = s->heads / s->kv_heads;
    const int64_t calls = group == 1 ? 1 : s->kv_heads, per_call = group == 1 ? s->heads : group;
    const int64_t kv_stride = group == 1 ? s->dh : 0;
    /* Scores: (q_h * scale) k_j^T of (Nq, Dh) x (Dh, Nk). */
    for (int64_t b = 0; b < s->batch && st == CLF_SUCCESS; b++)
        for (int64_t j = 0; j < calls && st == CLF_SUCCESS; j++)
            st = clf_gemm_strided_batched(
                ctx, CLF_NO_TRANS, CLF_TRANS, s->nq, s->nk, s->dh, s->scale, q,
                b * s->nq * s->wq + d->q_col + j * per_call * s->dh, s->wq, s->dh, k,
                b * s->kmax * s->wk + d->k_col + j * s->dh, s->wk, kv_stride, 0.0f, w,
                b * per_b + j * per_call * nqk, s->nk, nqk, per_call);
    if (st == CLF_SUCCESS) st = clf_softmax(ctx, w, w, &d->mask);
    /* Out: P_h v_j of (Nq, Nk) x (Nk, Dh) into columns h * Dh. */
    for (int64_t b = 0; b < s->batch && st == CLF_SUCCESS; b++)
        for (int64_t j = 0; j < calls && st == CLF_SUCCESS; j++)
            st = clf_gemm_strided_batched(
                ctx, CLF_NO_TRANS, CLF_NO_TRANS, s->nq, s->dh, s->nk, 1.0f, w,
                b * per_b + j * per_call * nqk, s->nk, nqk, v,
                b * s->kmax * s->wv + d->v_col + j * s->dh, s->wv, kv_stride, 0.0f, out,
                b * s->nq * hd + j * per_call * s->dh, hd, s->dh, per_call);
    clf_tensor_free(tmp); /* released after the queued GEMM that reads it has run */
    return st;
}

clf_status clf_attention(clf_context *ctx, const clf_tensor *q, const clf_tensor *k,
                         const clf_tensor *v, clf_tensor *out, const clf_attention_params *desc) {
    if (!ctx) return CLF_ERROR_INVALID_ARGUMENT;
    clf__clear_error(ctx);
    att_shape s;
    clf_status st = check(ctx, q, k, v, out, desc, &s);
    if (st != CLF_SUCCESS) return st;
    if (desc->naive) return naive(ctx, q, k, v, out, desc, &s);
    if (clf__tun(ctx, CLF_T_ATTENTION_LOCAL_KV))
        return clf__attention_local(ctx, q, k, v, out, desc, &s);
    return tiled(ctx, q, k, v, out, desc, &s);
}
