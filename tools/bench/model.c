/*
 * model.c — clformer-bench's layer records: one encoder layer (d 512, 8 heads, FFN 2048,
 * B 8 x N 512) as a fraction of the FMA peak with tokens/s and launches per layer, and one
 * decoder step with the KV cache at growing contexts (per-token latency, bytes read as a
 * fraction of the copy peak). Weights are random, written to a scratch safetensors file and
 * loaded through the library's own loader.
 */
#include "bench.h"
#include "../../src/rng.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct wlist {
    clf_st_entry e[64];
    int64_t shapes[64][2];
    char names[64][96];
    float *data[64];
    size_t n;
} wlist;

static int add(wlist *w, const char *prefix, const char *name, int64_t rows, int64_t cols,
               double scale, clf_rng *rng) {
    if (w->n == 64 || strlen(prefix) + strlen(name) >= sizeof(w->names[0])) return 1;
    size_t i = w->n++;
    memcpy(w->names[i], prefix, strlen(prefix));
    memcpy(w->names[i] + strlen(prefix), name, strlen(name) + 1);
    w->shapes[i][0] = rows;
    w->shapes[i][1] = cols;
    const int64_t n = rows * (cols ? cols : 1);
    w->data[i] = malloc((size_t)n * sizeof(float));
    if (!w->data[i]) return 1;
    for (int64_t j = 0; j < n; j++) {
        const double u = clf_rng_uniform(rng, 0.0, 1.0);
        w->data[i][j] = (float)(scale < 0 ? 1.0 + 0.1 * (u - 0.5) : scale * (2 * u - 1));
    }
    w->e[i] = (clf_st_entry){w->names[i], CLF_ST_F32, cols ? 2 : 1, w->shapes[i], w->data[i]};
    return 0;
}

static void wfree(wlist *w) {
    for (size_t i = 0; i < w->n; i++)
        free(w->data[i]);
    w->n = 0;
}

/* d2l's weight names for one encoder block (decoder: two attentions, three norms). */
static int add_block(wlist *w, const char *pre, int decoder, int64_t d, int64_t f, clf_rng *seed) {
    const double s = 1.0 / sqrt((double)d);
    char n[160];
    const char *atts[2] = {decoder ? "attention1" : "attention", "attention2"};
    int rc = 0;
    for (int a = 0; a < (decoder ? 2 : 1); a++) {
        const char *proj[4] = {"W_q", "W_k", "W_v", "W_o"};
        for (int p = 0; p < 4; p++) {
            snprintf(n, sizeof(n), "%s.%s.weight", atts[a], proj[p]);
            rc |= add(w, pre, n, d, d, s, seed);
        }
    }
    for (int k = 1; k <= (decoder ? 3 : 2); k++) {
        snprintf(n, sizeof(n), "addnorm%d.ln.weight", k);
        rc |= add(w, pre, n, d, 0, -1, seed);
        snprintf(n, sizeof(n), "addnorm%d.ln.bias", k);
        rc |= add(w, pre, n, d, 0, 0.1, seed);
    }
    rc |= add(w, pre, "ffn.dense1.weight", f, d, s, seed);
    rc |= add(w, pre, "ffn.dense1.bias", f, 0, 0.1, seed);
    rc |= add(w, pre, "ffn.dense2.weight", d, f, 1.0 / sqrt((double)f), seed);
    rc |= add(w, pre, "ffn.dense2.bias", d, 0, 0.1, seed);
    return rc;
}

static int fail(clf_context *ctx, const char *what, clf_status st) {
    fprintf(stderr, "clformer-bench: %s: %s: %s\n", what, clf_strerror(st),
            clf_context_last_error(ctx));
    return 1;
}

static int write_model(const char *path, int decoder, int64_t V, int64_t d, int64_t f) {
    wlist *w = calloc(1, sizeof(wlist));
    if (!w) return 1;
    clf_rng seed = clf_rng_make(1);
    int rc = add(w, "", "embedding.weight", V, d, 1.0, &seed);
    rc |= add_block(w, "blks.block0.", decoder, d, f, &seed);
    if (decoder) {
        rc |= add(w, "", "dense.weight", V, d, 1.0 / sqrt((double)d), &seed);
        rc |= add(w, "", "dense.bias", V, 0, 0.1, &seed);
    }
    clf_error err = {""};
    if (!rc && clf_safetensors_write(path, w->e, w->n, &err) != CLF_SUCCESS) {
        fprintf(stderr, "clformer-bench: %s\n", err.message);
        rc = 1;
    }
    wfree(w);
    free(w);
    return rc;
}

static clf_tensor *random_tensor(clf_context *ctx, clf_dtype dt, int nd, const int64_t *shape,
                                 int64_t vocab, int *bad) {
    clf_tensor *t = NULL;
    if (clf_tensor_create(ctx, dt, nd, shape, &t) != CLF_SUCCESS) {
        *bad = 1;
        return NULL;
    }
    const int64_t n = clf_tensor_numel(t);
    void *h = malloc((size_t)n * 4);
    if (!h) {
        *bad = 1;
        return t;
    }
    uint64_t s = 12345;
    for (int64_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        if (dt == CLF_I32)
            ((int32_t *)h)[i] = (int32_t)((s >> 33) % (uint64_t)vocab);
        else
            ((float *)h)[i] = (float)((double)(s >> 40) / 16777216.0 - 0.5);
    }
    if (clf_tensor_write(t, h, (size_t)n * 4) != CLF_SUCCESS) *bad = 1;
    free(h);
    return t;
}

/* Writes random weights for one block of cfg's sizes to path and loads them as an encoder (enc)
 * or a decoder (dec). */
static int load_random(clf_context *ctx, const char *path, const clf_transformer_params *c,
                       clf_encoder **enc, clf_decoder **dec) {
    if (write_model(path, dec != NULL, c->vocab_size, c->num_hiddens, c->ffn_num_hiddens)) return 1;
    clf_error err = {""};
    clf_safetensors *st = NULL;
    if (clf_safetensors_open(path, &st, &err) != CLF_SUCCESS) {
        fprintf(stderr, "clformer-bench: %s\n", err.message);
        return 1;
    }
    clf_status s =
        enc ? clf_encoder_load(ctx, st, "", c, enc) : clf_decoder_load(ctx, st, "", c, dec);
    clf_safetensors_free(st);
    return s != CLF_SUCCESS ? fail(ctx, enc ? "encoder_layer" : "decoder_step", s) : 0;
}

typedef struct encoder_call {
    clf_encoder *enc;
    clf_tensor *ids, *vl, *out;
} encoder_call;
static clf_status run_encoder(clf_context *ctx, void *arg) {
    const encoder_call *c = arg;
    (void)ctx;
    return clf_encoder_forward(c->enc, c->ids, c->vl, c->out);
}

static int encoder_layer(clf_context *ctx, const bench_opts *o, const char *path,
                         bench_results *r) {
    const int64_t B = 8, N = 512, d = 512, H = 8, F = 2048, V = 1000;
    bench_progress("layer: encoder_layer B%lld N%lld d%lld H%lld F%lld", (long long)B, (long long)N,
                   (long long)d, (long long)H, (long long)F);
    clf_transformer_params c = clf_transformer_default_params(V, d, F, H, 1);
    clf_encoder *enc = NULL;
    if (load_random(ctx, path, &c, &enc, NULL)) return 1;
    clf_status s;
    int bad = 0;
    int64_t is[2] = {B, N}, os[3] = {B, N, d}, one = B;
    clf_tensor *ids = random_tensor(ctx, CLF_I32, 2, is, V, &bad);
    clf_tensor *out = random_tensor(ctx, CLF_F32, 3, os, 0, &bad);
    clf_tensor *vl = random_tensor(ctx, CLF_I32, 1, &one, N / 2, &bad);
    if (!bad) { /* lengths N/2 .. N: some masking, as in a real batch */
        int32_t lens[8];
        for (int i = 0; i < 8; i++)
            lens[i] = (int32_t)(N - i * 17);
        bad = clf_tensor_write(vl, lens, sizeof(lens)) != CLF_SUCCESS;
    }
    /* a first call builds the kernels; each sample is paired with the FMA roof */
    double t[8];
    bench_roof_pair roof[8];
    const int samples = o->quick ? 3 : 5;
    encoder_call ec = {enc, ids, vl, out};
    s = bad ? CLF_ERROR_INTERNAL
            : bench_time_paired(ctx, o, run_encoder, &ec, 1, samples, 1, BENCH_ROOF_COMPUTE, t,
                                roof);
    const int64_t launches = clf_encoder_launches_per_layer(enc);
    clf_tensor_free(ids);
    clf_tensor_free(out);
    clf_tensor_free(vl);
    clf_encoder_free(enc);
    if (s != CLF_SUCCESS) return fail(ctx, "encoder_layer", s);
    const int64_t sh[5] = {B, N, d, H, F};
    bench_result res = bench_result_make("encoder_layer", 5, sh, "compute");
    /* embedding excluded: per token 2 (4 d^2 + 2 d F) for the projections and FFN, plus
     * 4 N d for QK^T and PV over all keys */
    const double flops = (double)(B * N) * (2.0 * (4.0 * d * d + 2.0 * d * F) + 4.0 * N * d);
    bench_roof_judge_compute(&res, flops, t, roof, samples); /* before the median sorts t */
    res.ms = bench_median(t, samples);
    res.gflops = flops / (res.ms * 1e6);
    res.tokens_per_s = (double)(B * N) / (res.ms / 1000.0);
    res.launches = launches;
    return bench_add_result(r, &res);
}

static int decoder_steps(clf_context *ctx, const bench_opts *o, const char *path,
                         bench_results *r) {
    const int64_t d = 512, H = 8, F = 2048, V = 1000, Ns = 64;
    const int64_t contexts[] = {64, 512, 2048};
    clf_transformer_params c = clf_transformer_default_params(V, d, F, H, 1);
    c.max_len = 4096;
    clf_decoder *dec = NULL;
    if (load_random(ctx, path, &c, NULL, &dec)) return 1;
    clf_status s;
    int bad = 0;
    int64_t es[3] = {1, Ns, d}, one[2] = {1, 1}, ls[3] = {1, 1, V};
    clf_tensor *enc = random_tensor(ctx, CLF_F32, 3, es, 0, &bad);
    clf_tensor *tok = random_tensor(ctx, CLF_I32, 2, one, V, &bad);
    clf_tensor *logits = random_tensor(ctx, CLF_F32, 3, ls, 0, &bad);
    int rc = bad;
    for (size_t ci = 0; ci < 3 && !rc; ci++) {
        const int64_t ctxlen = contexts[ci];
        bench_progress("layer: decoder_step context %lld", (long long)ctxlen);
        const int samples = o->quick ? 8 : 16;
        int64_t ps[2] = {1, ctxlen - 1}, pl[3] = {1, ctxlen - 1, V};
        clf_tensor *prompt = random_tensor(ctx, CLF_I32, 2, ps, V, &bad);
        clf_tensor *plog = random_tensor(ctx, CLF_F32, 3, pl, 0, &bad);
        s = bad ? CLF_ERROR_INTERNAL : clf_decoder_init_state(dec, enc, NULL, ctxlen + samples + 1);
        /* prefill ctxlen - 1 tokens at once, then time single-token steps at context ctxlen */
        if (s == CLF_SUCCESS) s = clf_decoder_step(dec, prompt, plog);
        if (s == CLF_SUCCESS) s = clf_decoder_step(dec, tok, logits); /* warm-up step */
        if (s == CLF_SUCCESS) s = clf_context_finish(ctx);
        double t[16];
        for (int i = 0; i < samples && s == CLF_SUCCESS; i++) {
            const double t0 = bench_now_ms();
            s = clf_decoder_step(dec, tok, logits);
            if (s == CLF_SUCCESS) s = clf_context_finish(ctx);
            t[i] = bench_now_ms() - t0;
        }
        clf_tensor_free(prompt);
        clf_tensor_free(plog);
        if (s != CLF_SUCCESS) {
            rc = fail(ctx, "decoder_step", s);
            break;
        }
        const int64_t sh[5] = {1, ctxlen, d, H, F};
        bench_result res = bench_result_make("decoder_step", 5, sh, "read");
        res.ms = bench_median(t, samples);
        res.context = ctxlen;
        res.tokens_per_s = 1000.0 / res.ms;
        /* bytes a step must read: every weight once (self QKV + O, cross Q + O, FFN, output
         * layer), the self cache (ctxlen rows of K and V) and the cross K/V */
        const double bytes =
            4.0 * (6.0 * d * d + 2.0 * d * F + (double)V * d + 2.0 * ctxlen * d + 2.0 * Ns * d);
        res.gbps = bytes / (res.ms * 1e6);
        res.gflops =
            2.0 * (6.0 * d * d + 2.0 * d * F + (double)V * d + 2.0 * ctxlen * d) / (res.ms * 1e6);
        rc = bench_add_result(r, &res);
    }
    clf_tensor_free(enc);
    clf_tensor_free(tok);
    clf_tensor_free(logits);
    clf_decoder_free(dec);
    return rc;
}

/* all-MiniLM-L6-v2 on a batch of 32 sentences of 128 tokens (random ids, no padding), the
 * shape tools/bench_minilm_torch.py times for sentence-transformers on the CPU. */
typedef struct embed_call {
    clf_sentence_model *m;
    clf_tensor *ids, *lens;
    float *out;
} embed_call;
static clf_status run_embed(clf_context *ctx, void *arg) {
    const embed_call *c = arg;
    (void)ctx;
    return clf_sentence_embed_ids(c->m, c->ids, c->lens, c->out);
}

/* all-MiniLM-L6-v2 on 32 x 128 tokens, its linear weights as dt (model_minilm: F32,
 * model_minilm_f16: F16); the note gives the bytes of those weights on the device. */
static int model_minilm(clf_context *ctx, const bench_opts *o, bench_results *r, clf_dtype dt) {
    const char *op = dt == CLF_F16 ? "model_minilm_f16" : "model_minilm";
    if (!bench_op_selected(o, op)) return 0;
    const int64_t B = 32, N = 128;
    const char *dir = getenv("CLF_MODEL_DIR");
    if (!dir || !*dir) dir = "models/all-MiniLM-L6-v2";
    bench_progress("model: %s B%lld N%lld (%s)", op, (long long)B, (long long)N, dir);
    const int64_t sh[2] = {B, N};
    bench_result res = bench_result_make(op, 2, sh, "compute");
    char p[4096];
    snprintf(p, sizeof(p), "%s/model.safetensors", dir);
    if (access(p, R_OK) != 0) {
        snprintf(res.note, sizeof(res.note), "no model in %.40s: run tools/fetch_minilm.sh", dir);
        return bench_add_result(r, &res);
    }
    clf_sentence_model *m = NULL;
    clf_load_params lp = clf_load_default_params();
    lp.weight_dtype = dt;
    clf_status s = clf_sentence_model_load_with(ctx, dir, &lp, &m);
    if (s != CLF_SUCCESS) return fail(ctx, op, s);
    const int64_t d = clf_sentence_model_dim(m),
                  V = clf_tokenizer_vocab_size(clf_sentence_model_tokenizer(m));
    int bad = 0;
    int64_t is[2] = {B, N}, one = B;
    clf_tensor *ids = random_tensor(ctx, CLF_I32, 2, is, V, &bad);
    clf_tensor *lens = random_tensor(ctx, CLF_I32, 1, &one, 1, &bad);
    float *out = malloc((size_t)(B * d) * sizeof(float));
    if (!bad) {
        int32_t l[32];
        for (int i = 0; i < 32; i++)
            l[i] = (int32_t)N;
        bad = clf_tensor_write(lens, l, sizeof(l)) != CLF_SUCCESS;
    }
    /* a first call builds the kernels; each sample is paired with the FMA roof */
    double t[8];
    bench_roof_pair roof[8];
    const int samples = o->quick ? 3 : 5;
    embed_call ec = {m, ids, lens, out};
    s = bad || !out
            ? CLF_ERROR_INTERNAL
            : bench_time_paired(ctx, o, run_embed, &ec, 1, samples, 1, BENCH_ROOF_COMPUTE, t, roof);
    free(out);
    clf_tensor_free(ids);
    clf_tensor_free(lens);
    /* 6 layers: 2 (4 d^2 + 2 d F) per token for projections and FFN, 4 N d for attention */
    const double F = 4.0 * (double)d, layers = 6;
    const double flops =
        layers * (double)(B * N) * (2.0 * (4.0 * d * d + 2.0 * d * F) + 4.0 * N * d);
    clf_sentence_model_free(m);
    if (s != CLF_SUCCESS) return fail(ctx, op, s);
    bench_roof_judge_compute(&res, flops, t, roof, samples); /* before the median sorts t */
    res.ms = bench_median(t, samples);
    const double lin_bytes = layers * (4.0 * d * d + 2.0 * d * F) * (double)clf_dtype_size(dt);
    snprintf(res.note, sizeof(res.note), "linear weights %.1f MB (%s)", lin_bytes / 1e6,
             dt == CLF_F16 ? "F16" : "F32");
    res.gflops = flops / (res.ms * 1e6);
    res.tokens_per_s = (double)(B * N) / (res.ms / 1000.0);
    res.sentences_per_s = (double)B / (res.ms / 1000.0);
    return bench_add_result(r, &res);
}

int bench_model_run(clf_context *ctx, const bench_opts *o, bench_results *r) {
    char path[512];
    snprintf(path, sizeof(path), "%s/bench-model-%ld.safetensors", o->tmp_dir ? o->tmp_dir : "/tmp",
             (long)getpid());
    int rc = 0;
    if (bench_op_selected(o, "encoder_layer")) rc = encoder_layer(ctx, o, path, r);
    if (!rc && bench_op_selected(o, "decoder_step")) rc = decoder_steps(ctx, o, path, r);
    if (!rc) rc = model_minilm(ctx, o, r, CLF_F32);
    if (!rc) rc = model_minilm(ctx, o, r, CLF_F16);
    remove(path);
    return rc;
}
