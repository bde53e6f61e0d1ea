/*
 * attention.c — the bench's attention records: prefill and decode shapes, grouped-query, the F16
 * KV cache, and the naive (score matrix) form beside the fused kernels.
 */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One attention call on (B, H, Nq, Nk, Dh) with kvh K/V heads (grouped-query when < H), K and V
 * of dtype kvt (F16: a half-precision KV cache, half the bytes read); returns
 * 0 and fills res, or 1 on error. A naive call whose score matrix does not fit is recorded with
 * ms = 0 and a note. */
typedef struct attention_call {
    clf_tensor *q, *k, *v, *out;
    const clf_attention_params *d;
} attention_call;
static clf_status run_attention(clf_context *ctx, void *arg) {
    attention_call *a = arg;
    return clf_attention(ctx, a->q, a->k, a->v, a->out, a->d);
}

static int attention_one(clf_context *ctx, const bench_opts *o, const char *op, int naive,
                         int64_t b, int64_t h, int64_t kvh, int64_t nq, int64_t nk, int64_t dh,
                         clf_dtype kvt, bench_results *r) {
    bench_progress("op: %s B%lld H%lld Nq%lld Nk%lld Dh%lld", op, (long long)b, (long long)h,
                   (long long)nq, (long long)nk, (long long)dh);
    const int64_t sh[5] = {b, h, nq, nk, dh};
    bench_result res = bench_result_make(op, 5, sh, nq == 1 ? "read" : "compute");
    const double flops = 4.0 * (double)(b * h * nq * nk * dh);
    const double io = 4.0 * (double)(2 * b * nq * h * dh) +
                      (double)clf_dtype_size(kvt) * (double)(2 * b * nk * kvh * dh);
    int bad = 0;
    int64_t sq[3] = {b, nq, h * dh}, sk[3] = {b, nk, kvh * dh};
    clf_tensor *q = bench_make(ctx, CLF_F32, 3, sq, 0.01, &bad),
               *k = bench_make(ctx, kvt, 3, sk, 0.02, &bad);
    clf_tensor *v = bench_make(ctx, kvt, 3, sk, 0.5, &bad),
               *out = bench_make(ctx, CLF_F32, 3, sq, 0, &bad);
    clf_attention_params d = clf_attention_default_params(h, dh);
    d.kv_heads = kvh;
    d.naive = naive;
    res.mem_bytes = io + (naive ? 4.0 * (double)(b * h * nq * nk) : 0.0);
    clf_status st = bad ? CLF_ERROR_INTERNAL : clf_attention(ctx, q, k, v, out, &d);
    const int fits = st != CLF_ERROR_SIZE_LIMIT;
    if (!fits) {
        snprintf(res.note, sizeof(res.note), "does not fit: %.0f MiB score matrix",
                 4.0 * (double)(b * h * nq * nk) / 1048576.0);
        st = CLF_SUCCESS;
    }
    double t[16];
    bench_roof_pair roof[16];
    int samples = !fits ? 0 : flops > 1e11 ? 1 : (o->quick ? 3 : 5);
    attention_call ac = {q, k, v, out, &d};
    if (fits && st == CLF_SUCCESS)
        st = bench_time_paired(ctx, o, run_attention, &ac, 0, samples, 1,
                               nq == 1 ? BENCH_ROOF_MEMORY : BENCH_ROOF_COMPUTE, t, roof);
    clf_tensor_free(q);
    clf_tensor_free(k);
    clf_tensor_free(v);
    clf_tensor_free(out);
    if (st != CLF_SUCCESS) {
        fprintf(stderr, "clformer-bench: %s: %s: %s\n", op, clf_strerror(st),
                clf_context_last_error(ctx));
        return 1;
    }
    if (samples > 0) {
        if (nq == 1) /* a decode step reads K and V and writes one row per head */
            bench_roof_judge(&res, io - 4.0 * (double)(b * h * dh), 4.0 * (double)(b * h * dh), 0,
                             t, roof, samples);
        else
            bench_roof_judge_compute(&res, flops, t, roof, samples);
        res.ms = bench_median(t, samples);
        res.gflops = flops / (res.ms * 1e6);
        res.gbps = io / (res.ms * 1e6);
    }
    int64_t qb, bq, local = 0;
    int tuned = 0;
    clf_context_get_tunable(ctx, "attention.LOCAL_KV", &local);
    if (!naive && local)
        snprintf(res.note, sizeof(res.note), "local-memory kernels");
    else if (!naive && nq > 1 && clf_attention_tiles(ctx, dh, &qb, &bq, &tuned) == CLF_SUCCESS)
        snprintf(res.note, sizeof(res.note), "tiles QB %lld BQ %lld (%s)", (long long)qb,
                 (long long)bq, tuned ? "tuned" : "defaults");
    if (kvh != h) {
        const size_t used = strlen(res.note);
        snprintf(res.note + used, sizeof(res.note) - used, "%skv_heads %lld", used ? "; " : "",
                 (long long)kvh);
    }
    if (kvt == CLF_F16) {
        const size_t used = strlen(res.note);
        snprintf(res.note + used, sizeof(res.note) - used, "%sF16 K and V", used ? "; " : "");
    }
    return bench_add_result(r, &res);
}

int bench_attention_run(clf_context *ctx, const bench_opts *o, bench_results *r) {
    const int64_t ns[] = {128, 512, 2048, 4096};
    const size_t n_ns = o->quick ? 3 : 4;
    for (int naive = 0; naive <= 1; naive++) {
        const char *op = naive ? "attention_naive" : "attention_tiled";
        if (!bench_op_selected(o, op)) continue;
        for (size_t i = 0; i < n_ns; i++)
            if (attention_one(ctx, o, op, naive, 1, 8, 8, ns[i], ns[i], 64, CLF_F32, r)) return 1;
        if (!o->quick && attention_one(ctx, o, op, naive, 1, 8, 8, 16384, 16384, 64, CLF_F32, r))
            return 1;
    }
    if (bench_op_selected(o, "attention_decode")) {
        const int64_t nks[] = {512, 4096, 16384};
        for (size_t i = 0; i < 3; i++)
            if (attention_one(ctx, o, "attention_decode", 0, 1, 8, 8, 1, nks[i], 64, CLF_F32, r))
                return 1;
    }
    /* The same decode steps on an F16 KV cache (vload_half: half the bytes of K and V). */
    if (bench_op_selected(o, "attention_decode_f16")) {
        const int64_t nks[] = {4096, 16384};
        for (size_t i = 0; i < 2; i++)
            if (attention_one(ctx, o, "attention_decode_f16", 0, 1, 8, 8, 1, nks[i], 64, CLF_F16,
                              r))
                return 1;
    }
    /* Grouped-query, Llama 3's 32 query heads on 8 K/V heads of 64: a prefill and a decode step
     * (the decode reads a quarter of the K/V bytes of 32 full heads). */
    if (bench_op_selected(o, "attention_gqa")) {
        if (attention_one(ctx, o, "attention_gqa", 0, 1, 32, 8, 1024, 1024, 64, CLF_F32, r))
            return 1;
        if (attention_one(ctx, o, "attention_gqa", 0, 1, 32, 8, 1, 4096, 64, CLF_F32, r)) return 1;
    }
    /* The local-memory kernels (attention.LOCAL_KV, the default on GPUs) wherever the bench
     * runs: a prefill at N 2048 and a decode step over 4096 keys. */
    if (bench_op_selected(o, "attention_local")) {
        int64_t was = 0;
        clf_context_get_tunable(ctx, "attention.LOCAL_KV", &was);
        int bad = clf_context_set_tunable(ctx, "attention.LOCAL_KV", 1) != CLF_SUCCESS;
        if (!bad)
            bad = attention_one(ctx, o, "attention_local", 0, 1, 8, 8, 2048, 2048, 64, CLF_F32, r);
        if (!bad)
            bad = attention_one(ctx, o, "attention_local", 0, 1, 8, 8, 1, 4096, 64, CLF_F32, r);
        clf_context_set_tunable(ctx, "attention.LOCAL_KV", was);
        if (bad) return 1;
    }
    return 0;
}
