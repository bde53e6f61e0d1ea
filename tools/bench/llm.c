/*
 * llm.c — clformer-bench's LLM records on a Llama-shaped model with random weights built in
 * memory (clf_lm_create_random): d 768, 12 layers, 12 query heads on 4 K/V heads of 64, SwiGLU
 * FFN 2048, vocabulary 32000, untied head: 124 M parameters (the shape of
 * tools/bench_lm_torch.py, which times transformers on the same CPU).
 *   llm_prefill: one prompt of P tokens in one step: tokens/s and % of the FMA roof (2 flops per
 *                weight per token but the head's, which runs on the last token only, plus
 *                attention's 4 P^2 / 2 Dh H per layer).
 *   llm_decode:  single-token steps after that prompt, each ending in the device argmax and a
 *                read of the id (what generation does): tokens/s, and the bytes a step must read
 *                (every weight but the embedding table once, plus the K/V cache) as % of the
 *                read roof.
 *   llm_prefill_f16, llm_decode_f16: the same with F16 weights and an F16 KV cache
 *                (clf_lm_info.weight_dtype, cache_dtype): half the bytes a step reads.
 *   llm_prefill_q8_0, llm_decode_q8_0, llm_prefill_q4_0, llm_decode_q4_0, llm_prefill_q4_k,
 *                llm_decode_q4_k: weights quantized at creation (ggml's Q8_0, Q4_0 and Q4_K
 *                blocks: 8.5, 4.5 and 4.5 bits per weight), F16 cache; the bytes read count the
 *                blocks as stored.
 */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>

static int fail(clf_context *ctx, const char *what, clf_status st) {
    fprintf(stderr, "clformer-bench: %s: %s: %s\n", what, clf_strerror(st),
            clf_context_last_error(ctx));
    return 1;
}

typedef struct prefill_call {
    clf_lm_state *st;
    clf_tensor *ids, *logits;
} prefill_call;
static clf_status run_prefill(clf_context *ctx, void *arg) {
    const prefill_call *c = arg;
    (void)ctx;
    clf_status s = clf_lm_state_reset(c->st);
    return s != CLF_SUCCESS ? s : clf_lm_state_step(c->st, c->ids, NULL, c->logits);
}

/* One decoding step as generation runs it: the step, the device argmax and a read of the id. */
typedef struct decode_call {
    clf_lm_state *st;
    clf_tensor *one, *logits, *am;
} decode_call;
static clf_status run_decode(clf_context *ctx, void *arg) {
    const decode_call *c = arg;
    int32_t next;
    clf_status s = clf_lm_state_step(c->st, c->one, NULL, c->logits);
    if (s == CLF_SUCCESS) s = clf_argmax(ctx, c->logits, c->am);
    return s != CLF_SUCCESS ? s : clf_tensor_read(c->am, &next, sizeof(next));
}

/* Both records of one storage type of the weights (wt) and of the KV cache (ct). */
static int llm_run(clf_context *ctx, const bench_opts *o, bench_results *r, clf_dtype wt,
                   clf_dtype ct, const char *prefill_op, const char *decode_op) {
    const int want_prefill = bench_op_selected(o, prefill_op),
              want_decode = bench_op_selected(o, decode_op);
    if (!want_prefill && !want_decode) return 0;
    clf_lm_info sz = {0};
    sz.weight_dtype = wt;
    sz.cache_dtype = ct;
    /* bytes per weight and per cache element, as stored */
    const double wsize = (double)clf_dtype_block_bytes(wt) / (double)clf_dtype_block(wt);
    const double csize = (double)clf_dtype_size(ct);
    sz.vocab_size = 32000;
    sz.hidden_size = 768;
    sz.ffn_size = 2048;
    sz.layers = 12;
    sz.heads = 12;
    sz.kv_heads = 4;
    sz.head_dim = 64;
    sz.max_positions = 4096;
    const int64_t P = o->quick ? 128 : 512, steps = o->quick ? 8 : 32;
    bench_progress("model: llm (Llama-shaped, random weights, %s, %s cache)", clf_dtype_name(wt),
                   clf_dtype_name(ct));
    clf_lm *m = NULL;
    clf_status s = clf_lm_create_random(ctx, &sz, 1, &m);
    if (s != CLF_SUCCESS) return fail(ctx, "llm", s);
    clf_lm_info in;
    clf_lm_get_info(m, &in);
    const double d = (double)in.hidden_size, V = (double)in.vocab_size;
    const double weights = (double)in.parameters - V * d; /* all but the embedding table */
    const double kv_row = 2.0 * (double)(in.kv_heads * in.head_dim) * (double)in.layers;
    clf_lm_state *st = NULL;
    clf_tensor *ids = NULL, *one = NULL, *logits = NULL, *am = NULL;
    const int64_t ps[2] = {1, P}, os[2] = {1, 1}, ls[2] = {1, in.vocab_size}, n1 = 1;
    int32_t *h = malloc(sizeof(int32_t) * (size_t)P);
    s = h ? clf_lm_state_create(m, 1, P + steps + 2, &st) : CLF_ERROR_OUT_OF_MEMORY;
    if (s == CLF_SUCCESS) s = clf_tensor_create(ctx, CLF_I32, 2, ps, &ids);
    if (s == CLF_SUCCESS) s = clf_tensor_create(ctx, CLF_I32, 2, os, &one);
    if (s == CLF_SUCCESS) s = clf_tensor_create(ctx, CLF_F32, 2, ls, &logits);
    if (s == CLF_SUCCESS) s = clf_tensor_create(ctx, CLF_I32, 1, &n1, &am);
    for (int64_t i = 0; h && i < P; i++)
        h[i] = (int32_t)((i * 7919) % in.vocab_size);
    if (s == CLF_SUCCESS) s = clf_tensor_write(ids, h, sizeof(int32_t) * (size_t)P);
    if (s == CLF_SUCCESS) s = clf_tensor_fill(one, 5);
    /* prefill: a first call builds the kernels, then the median of timed prefills, each paired
     * with the FMA roof */
    double t[32];
    bench_roof_pair roof[32];
    const int samples = o->quick ? 2 : 3;
    prefill_call pc = {st, ids, logits};
    if (s == CLF_SUCCESS)
        s = bench_time_paired(ctx, o, run_prefill, &pc, 1, samples, 1, BENCH_ROOF_COMPUTE, t, roof);
    int rc = s != CLF_SUCCESS ? fail(ctx, prefill_op, s) : 0;
    if (!rc && want_prefill) {
        const int64_t sh[4] = {1, P, in.hidden_size, in.layers};
        bench_result res = bench_result_make(prefill_op, 4, sh, "compute");
        const double attn = 2.0 * (double)P * (double)P * (double)(in.heads * in.head_dim) *
                            (double)in.layers; /* causal: half of 4 P^2 q per layer */
        /* The (untied) head, V x d, runs on the last position only: the step returns one row
         * of logits. */
        const double flops = 2.0 * (weights - V * d) * (double)P + 2.0 * V * d + attn;
        bench_roof_judge_compute(&res, flops, t, roof, samples); /* before the median sorts t */
        res.ms = bench_median(t, samples);
        res.gflops = flops / (res.ms * 1e6);
        res.tokens_per_s = (double)P / (res.ms / 1000.0);
        snprintf(res.note, sizeof(res.note), "%.0f M parameters", (double)in.parameters / 1e6);
        rc = bench_add_result(r, &res);
    }
    /* decode: steps at context P .. P + steps, each with argmax and a read of the id */
    bench_profile_report(ctx, o, prefill_op, 0, 0);
    /* A warm-up step, then the timed steps, each paired with the memory roofs (not with
     * --profile: its launches wait for each other; the counters then cover the timed steps). */
    const int n = steps < 32 ? (int)steps : 32;
    decode_call dc = {st, one, logits, am};
    if (!rc && want_decode) {
        s = run_decode(ctx, &dc);
        if (s == CLF_SUCCESS) (void)clf_context_profile_reset(ctx);
        if (s == CLF_SUCCESS)
            s = bench_time_paired(ctx, o, run_decode, &dc, 0, n, 1, BENCH_ROOF_MEMORY, t,
                                  o->profile ? NULL : roof);
        if (s != CLF_SUCCESS) rc = fail(ctx, decode_op, s);
    }
    if (!rc && want_decode) {
        const int64_t sh[4] = {1, P, in.hidden_size, in.layers};
        bench_result res = bench_result_make(decode_op, 4, sh, "read");
        double sum = 0;
        for (int i = 0; i < n; i++)
            sum += t[i];
        res.context = P + steps / 2;
        const double bytes = wsize * weights + csize * kv_row * (double)res.context;
        /* before the median sorts t; a step writes its logits and one K/V row per layer */
        if (!o->profile) bench_roof_judge(&res, bytes, 4.0 * V + csize * kv_row, 0, t, roof, n);
        res.ms = bench_median(t, n);
        res.tokens_per_s = 1000.0 / res.ms;
        res.gbps = bytes / (res.ms * 1e6);
        res.gflops = 2.0 * weights / (res.ms * 1e6);
        snprintf(res.note, sizeof(res.note), "%.0f MB read per token", bytes / 1e6);
        rc = bench_add_result(r, &res);
        bench_profile_report(ctx, o, decode_op, (int)steps, sum / n);
    }
    free(h);
    clf_tensor *ts[] = {ids, one, logits, am};
    for (size_t i = 0; i < 4; i++)
        clf_tensor_free(ts[i]);
    clf_lm_state_free(st);
    clf_lm_free(m);
    return rc;
}

int bench_llm_run(clf_context *ctx, const bench_opts *o, bench_results *r) {
    if (llm_run(ctx, o, r, CLF_F32, CLF_F32, "llm_prefill", "llm_decode")) return 1;
    if (llm_run(ctx, o, r, CLF_F16, CLF_F16, "llm_prefill_f16", "llm_decode_f16")) return 1;
    if (llm_run(ctx, o, r, CLF_Q8_0, CLF_F16, "llm_prefill_q8_0", "llm_decode_q8_0")) return 1;
    if (llm_run(ctx, o, r, CLF_Q4_0, CLF_F16, "llm_prefill_q4_0", "llm_decode_q4_0")) return 1;
    return llm_run(ctx, o, r, CLF_Q4_K, CLF_F16, "llm_prefill_q4_k", "llm_decode_q4_k");
}
