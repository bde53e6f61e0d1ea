/*
 * test_model.c — the seeds' Transformer against PyTorch fixtures (tools/make_d2l_fixtures.py):
 * encoder outputs and training-mode decoder logits within 1e-4 of float64 PyTorch, identical
 * greedy tokens; incremental decoding with the KV cache equal to full-sequence causal decoding;
 * a batch equal to each sequence alone; argmax against a C reference (two states on one decoder
 * and bad weight files: test_model_state.c).
 */
#include "d2l_fixtures.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>

static void test_encoder_matches_pytorch(void **state) {
    (void)state;
    open_fixtures();
    const clf_st_info *si;
    clf_tensor *src = fixture("src", &si), *vl = fixture("src_valid_lens", NULL);
    const int64_t B = si->shape[0], N = si->shape[1], d = g_cfg[DM], H = g_cfg[HEADS];
    clf_encoder *enc = load_encoder();
    int64_t os[3] = {B, N, d};
    clf_tensor *out = tensor_poisoned(CLF_F32, 3, os);
    CLF_OK(clf_encoder_record_weights(enc, 1));
    CLF_OK(clf_encoder_forward(enc, src, vl, out));
    float *got = tensor_to_host(out);
    double *want = fixture_f64("enc_outputs", B * N * d);
    double e = rel_err(got, want, B * N * d);
    print_message("encoder outputs vs PyTorch (float64): max error %.3g of max |out|\n", e);
    assert_true(e <= 1e-4);
    /* recorded attention weights of layer 0 (the seeds' attention_weights) */
    const clf_tensor *w = clf_encoder_attention_weights(enc, 0);
    assert_non_null(w);
    assert_int_equal(clf_tensor_numel(w), B * H * N * N);
    float *gw = tensor_to_host(w);
    double *ww = fixture_f64("enc_attention_weights0", B * H * N * N);
    check_close("encoder attention weights", gw, ww, B * H * N * N, 1e-5, 1e-4);
    /* the tiled path (not recording) gives the same outputs */
    CLF_OK(clf_encoder_record_weights(enc, 0));
    CLF_OK(clf_tensor_fill(out, NAN));
    CLF_OK(clf_encoder_forward(enc, src, vl, out));
    float *got2 = tensor_to_host(out);
    assert_true(rel_err(got2, want, B * N * d) <= 1e-4);
    assert_true(clf_encoder_launches_per_layer(enc) > 0);
    free(got);
    free(got2);
    free(want);
    free(gw);
    free(ww);
    clf_tensor_free(out);
    clf_tensor_free(src);
    clf_tensor_free(vl);
    clf_encoder_free(enc);
}

/* Each sequence run alone (B = 1, its own valid length) equals its row of the batch. */
static void test_batch_equals_alone(void **state) {
    (void)state;
    open_fixtures();
    const clf_st_info *si;
    clf_tensor *src = fixture("src", &si);
    const int64_t B = si->shape[0], N = si->shape[1], d = g_cfg[DM];
    int32_t *ids = malloc((size_t)(B * N) * 4), lens[8];
    clf_error err = {""};
    assert_int_equal(clf_safetensors_read_i32(g_fx, "src", ids, B * N, &err), CLF_SUCCESS);
    assert_int_equal(clf_safetensors_read_i32(g_fx, "src_valid_lens", lens, B, &err), CLF_SUCCESS);
    clf_tensor *vl = fixture("src_valid_lens", NULL);
    clf_encoder *enc = load_encoder();
    int64_t os[3] = {B, N, d}, os1[3] = {1, N, d}, is1[2] = {1, N}, one = 1;
    clf_tensor *out = tensor_poisoned(CLF_F32, 3, os);
    CLF_OK(clf_encoder_forward(enc, src, vl, out));
    float *all = tensor_to_host(out);
    for (int64_t b = 0; b < B; b++) {
        clf_tensor *s1 = tensor_from(CLF_I32, 2, is1, ids + b * N);
        clf_tensor *l1 = tensor_from(CLF_I32, 1, &one, &lens[b]);
        clf_tensor *o1 = tensor_poisoned(CLF_F32, 3, os1);
        CLF_OK(clf_encoder_forward(enc, s1, l1, o1));
        float *g = tensor_to_host(o1);
        double *want = malloc((size_t)(N * d) * sizeof(double));
        for (int64_t i = 0; i < N * d; i++)
            want[i] = all[b * N * d + i];
        check_close("sequence alone vs in batch", g, want, N * d, 1e-6, 1e-5);
        free(g);
        free(want);
        clf_tensor_free(s1);
        clf_tensor_free(l1);
        clf_tensor_free(o1);
    }
    free(all);
    free(ids);
    clf_tensor_free(out);
    clf_tensor_free(src);
    clf_tensor_free(vl);
    clf_encoder_free(enc);
}

/* F16 weights (clf_transformer_params.weight_dtype): encoder outputs and decoder logits against
 * the seeds' model on the same fp16-rounded linear weights (d2l_fixtures_f16w.safetensors,
 * tools/make_d2l_f16_fixtures.py), with the F32 tests' bound, 1e-4 of the largest value; the
 * rounding itself moves the logits by 3.9e-4 of the largest, so the test tells rounded weights
 * from unrounded ones; against the fp32 model's logits they must stay within 2e-3. An unknown
 * weight_dtype is refused. */
static void test_f16_weights_match_pytorch(void **state) {
    (void)state;
    open_fixtures();
    char p[512];
    clf_error err = {""};
    clf_safetensors *f16 = NULL;
    snprintf(p, sizeof(p), "%s/tests/data/d2l_fixtures_f16w.safetensors", CLF_SRC);
    if (clf_safetensors_open(p, &f16, &err) != CLF_SUCCESS) fail_msg("%s", err.message);
    const clf_st_info *si, *ti;
    clf_tensor *src = fixture("src", &si), *vl = fixture("src_valid_lens", NULL);
    clf_tensor *tgt = fixture("tgt", &ti);
    const int64_t B = si->shape[0], N = si->shape[1], d = g_cfg[DM], T = ti->shape[1],
                  V = g_cfg[TGT_V];
    clf_transformer_params ec = enc_cfg(), dc = dec_cfg();
    ec.weight_dtype = dc.weight_dtype = CLF_F16;
    clf_encoder *enc = NULL;
    clf_decoder *dec = NULL;
    CLF_OK(clf_encoder_load(g_ctx, g_w, "encoder.", &ec, &enc));
    CLF_OK(clf_decoder_load(g_ctx, g_w, "decoder.", &dc, &dec));
    int64_t os[3] = {B, N, d}, ls[3] = {B, T, V};
    clf_tensor *out = tensor_poisoned(CLF_F32, 3, os), *logits = tensor_poisoned(CLF_F32, 3, ls);
    CLF_OK(clf_encoder_forward(enc, src, vl, out));
    float *got = tensor_to_host(out), *want = malloc(sizeof(float) * (size_t)(B * T * V));
    double *w64 = malloc(sizeof(double) * (size_t)(B * T * V));
    assert_int_equal(clf_safetensors_read_f32(f16, "enc_outputs_f16w", want, B * N * d, &err),
                     CLF_SUCCESS);
    for (int64_t i = 0; i < B * N * d; i++)
        w64[i] = want[i];
    double e = rel_err(got, w64, B * N * d);
    print_message("F16 weights: encoder outputs vs PyTorch on the rounded weights: %.3g\n", e);
    assert_true(e <= 1e-4);
    free(got);
    CLF_OK(clf_decoder_init_state(dec, out, vl, 16)); /* over the F16 encoder's outputs */
    CLF_OK(clf_decoder_step(dec, tgt, logits));
    got = tensor_to_host(logits);
    assert_int_equal(clf_safetensors_read_f32(f16, "logits_f16w", want, B * T * V, &err),
                     CLF_SUCCESS);
    for (int64_t i = 0; i < B * T * V; i++)
        w64[i] = want[i];
    e = rel_err(got, w64, B * T * V);
    print_message("F16 weights: decoder logits vs PyTorch on the rounded weights: %.3g\n", e);
    assert_true(e <= 1e-4);
    double *w32 = fixture_f64("logits", B * T * V); /* the fp32 model's logits */
    e = rel_err(got, w32, B * T * V);
    print_message("F16 weights: decoder logits vs the F32 model: %.3g (bound 2e-3)\n", e);
    assert_true(e <= 2e-3);
    free(w32);
    free(got);
    free(want);
    free(w64);
    clf_decoder_free(dec);
    clf_encoder_free(enc);
    ec.weight_dtype = CLF_I32;
    enc = NULL;
    assert_int_equal(clf_encoder_load(g_ctx, g_w, "encoder.", &ec, &enc),
                     CLF_ERROR_INVALID_ARGUMENT);
    assert_null(enc);
    /* A weight past F16's range fails an F16 load with a message (and loads as F32): a copy of
     * the weights with one FFN weight of 1e5. */
    const size_t n = clf_safetensors_count(g_w);
    clf_st_entry *ent = calloc(n, sizeof(*ent));
    float **data = calloc(n, sizeof(*data));
    assert_true(ent && data);
    for (size_t i = 0; i < n; i++) {
        const clf_st_info *in = clf_safetensors_at(g_w, i);
        data[i] = malloc(sizeof(float) * (size_t)in->numel);
        assert_int_equal(clf_safetensors_read_f32(g_w, in->name, data[i], in->numel, &err),
                         CLF_SUCCESS);
        if (strcmp(in->name, "encoder.blks.block1.ffn.dense1.weight") == 0) data[i][7] = 1e5f;
        ent[i] = (clf_st_entry){in->name, CLF_ST_F32, in->ndim, in->shape, data[i]};
    }
    char big[] = "/tmp/clf-f16-range-XXXXXX";
    const int fd = mkstemp(big);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(clf_safetensors_write(big, ent, n, &err), CLF_SUCCESS);
    clf_safetensors *wb = NULL;
    assert_int_equal(clf_safetensors_open(big, &wb, &err), CLF_SUCCESS);
    ec.weight_dtype = CLF_F16;
    assert_int_equal(clf_encoder_load(g_ctx, wb, "encoder.", &ec, &enc),
                     CLF_ERROR_INVALID_ARGUMENT);
    assert_null(enc);
    assert_non_null(strstr(clf_context_last_error(g_ctx), "outside f16's range"));
    assert_non_null(strstr(clf_context_last_error(g_ctx), "weights as F16"));
    ec.weight_dtype = CLF_F32;
    CLF_OK(clf_encoder_load(g_ctx, wb, "encoder.", &ec, &enc));
    clf_encoder_free(enc);
    clf_safetensors_free(wb);
    unlink(big);
    for (size_t i = 0; i < n; i++)
        free(data[i]);
    free(data);
    free(ent);
    clf_tensor_free(out);
    clf_tensor_free(logits);
    clf_tensor_free(src);
    clf_tensor_free(vl);
    clf_tensor_free(tgt);
    clf_safetensors_free(f16);
}

static void test_decoder_matches_pytorch(void **state) {
    (void)state;
    open_fixtures();
    const clf_st_info *ti, *ei;
    clf_tensor *tgt = fixture("tgt", &ti), *enc_out = fixture("enc_outputs", &ei);
    clf_tensor *vl = fixture("src_valid_lens", NULL);
    const int64_t B = ti->shape[0], T = ti->shape[1], V = g_cfg[TGT_V];
    clf_decoder *dec = load_decoder();
    CLF_OK(clf_decoder_init_state(dec, enc_out, vl, 16));
    int64_t ls[3] = {B, T, V};
    clf_tensor *logits = tensor_poisoned(CLF_F32, 3, ls);
    CLF_OK(clf_decoder_step(dec, tgt, logits)); /* training mode: all T at once, causal */
    assert_int_equal(clf_decoder_length(dec), T);
    float *full = tensor_to_host(logits);
    double *want = fixture_f64("logits", B * T * V);
    double e = rel_err(full, want, B * T * V);
    print_message("training-mode logits vs PyTorch (float64): max error %.3g of max |logit|\n", e);
    assert_true(e <= 1e-4);

    /* incremental decoding, one token at a time through the cache, gives the same logits */
    int32_t *ids = malloc((size_t)(B * T) * 4);
    clf_error err = {""};
    assert_int_equal(clf_safetensors_read_i32(g_fx, "tgt", ids, B * T, &err), CLF_SUCCESS);
    CLF_OK(clf_decoder_reset(dec));
    int64_t is1[2] = {B, 1}, ls1[3] = {B, 1, V};
    clf_tensor *step_ids = tensor_poisoned(CLF_I32, 2, is1);
    clf_tensor *step_logits = tensor_poisoned(CLF_F32, 3, ls1);
    double *full_d = malloc((size_t)(B * V) * sizeof(double));
    int32_t col[16];
    double worst = 0;
    for (int64_t t = 0; t < T; t++) {
        for (int64_t b = 0; b < B; b++)
            col[b] = ids[b * T + t];
        CLF_OK(clf_tensor_write(step_ids, col, (size_t)B * 4));
        CLF_OK(clf_decoder_step(dec, step_ids, step_logits));
        float *g = tensor_to_host(step_logits);
        for (int64_t b = 0; b < B; b++)
            for (int64_t v = 0; v < V; v++)
                full_d[b * V + v] = full[(b * T + t) * V + v];
        worst = fmax(worst, rel_err(g, full_d, B * V));
        free(g);
    }
    print_message("incremental (KV cache) vs full-sequence logits: max error %.3g\n", worst);
    assert_true(worst <= 1e-5);
    assert_int_equal(clf_decoder_length(dec), T);

    /* past max_len: refused, nothing changes */
    clf_tensor *long_ids = NULL;
    int64_t ls_[2] = {B, 16 - T + 1};
    CLF_OK(clf_tensor_create(g_ctx, CLF_I32, 2, ls_, &long_ids));
    CLF_OK(clf_tensor_fill(long_ids, 3));
    int64_t lls[3] = {B, ls_[1], V};
    clf_tensor *long_logits = tensor_poisoned(CLF_F32, 3, lls);
    assert_int_equal(clf_decoder_step(dec, long_ids, long_logits), CLF_ERROR_SIZE_LIMIT);
    assert_int_equal(clf_decoder_length(dec), T);
    float *lg = tensor_to_host(long_logits);
    assert_true(isnan(lg[0]));
    free(lg);
    /* wrong logits shape, wrong batch */
    assert_int_equal(clf_decoder_step(dec, step_ids, logits), CLF_ERROR_SHAPE_MISMATCH);
    int64_t is2[2] = {B + 1, 1};
    clf_tensor *bad_ids = tensor_poisoned(CLF_I32, 2, is2);
    assert_int_equal(clf_decoder_step(dec, bad_ids, step_logits), CLF_ERROR_SHAPE_MISMATCH);
    /* a token id out of range */
    CLF_OK(clf_tensor_fill(step_ids, (double)V));
    assert_int_equal(clf_decoder_step(dec, step_ids, step_logits), CLF_ERROR_OUT_OF_RANGE);
    assert_int_equal(clf_decoder_length(dec), T);

    /* recorded weights: rows sum to 1 over the visible keys */
    CLF_OK(clf_decoder_reset(dec));
    CLF_OK(clf_decoder_record_weights(dec, 1));
    CLF_OK(clf_decoder_step(dec, tgt, logits));
    float *rec = tensor_to_host(logits);
    assert_true(rel_err(rec, want, B * T * V) <= 1e-4);
    const clf_tensor *ws = clf_decoder_attention_weights(dec, 1, 0);
    const clf_tensor *wc = clf_decoder_attention_weights(dec, 1, 1);
    assert_non_null(ws);
    assert_non_null(wc);
    assert_int_equal(clf_tensor_dim(ws, 3), T);
    assert_int_equal(clf_tensor_dim(wc, 3), ei->shape[1]);
    float *sw = tensor_to_host(ws);
    for (int64_t q = 0; q < T; q++) { /* batch 0, head 0: causal */
        double s = 0;
        for (int64_t k = 0; k < T; k++) {
            if (k > q) assert_true(sw[q * T + k] == 0.0f);
            s += sw[q * T + k];
        }
        assert_true(fabs(s - 1.0) < 1e-5);
    }
    free(sw);
    free(rec);
    CLF_OK(clf_decoder_record_weights(dec, 0));

    free(ids);
    free(full);
    free(full_d);
    free(want);
    clf_tensor_free(bad_ids);
    clf_tensor_free(long_ids);
    clf_tensor_free(long_logits);
    clf_tensor_free(step_ids);
    clf_tensor_free(step_logits);
    clf_tensor_free(logits);
    clf_tensor_free(tgt);
    clf_tensor_free(enc_out);
    clf_tensor_free(vl);
    clf_decoder_free(dec);
}

static int g_steps_seen;
static void on_step(void *user, const clf_decoder *dec, int64_t step) {
    (void)user;
    assert_int_equal(clf_decoder_length(dec), step + 1);
    g_steps_seen++;
}

static void test_greedy_matches_pytorch(void **state) {
    (void)state;
    open_fixtures();
    const clf_st_info *si;
    clf_tensor *src = fixture("src", &si), *vl = fixture("src_valid_lens", NULL);
    const int64_t B = si->shape[0], M = g_cfg[MAXSTEPS];
    clf_encoder *enc = load_encoder();
    clf_decoder *dec = load_decoder();
    clf_greedy_params p = {g_cfg[BOS], g_cfg[EOS], M, on_step, NULL};
    int32_t *tokens = malloc((size_t)(B * M) * 4), *want = malloc((size_t)(B * M) * 4);
    int32_t want_len[8];
    int64_t lengths[8];
    clf_error err = {""};
    assert_int_equal(clf_safetensors_read_i32(g_fx, "greedy_tokens", want, B * M, &err),
                     CLF_SUCCESS);
    assert_int_equal(clf_safetensors_read_i32(g_fx, "greedy_lengths", want_len, B, &err),
                     CLF_SUCCESS);
    g_steps_seen = 0;
    CLF_OK(clf_greedy_decode(enc, dec, src, vl, &p, tokens, lengths));
    int64_t longest = 0;
    for (int64_t b = 0; b < B; b++) {
        assert_int_equal(lengths[b], want_len[b]);
        longest = lengths[b] > longest ? lengths[b] : longest;
        for (int64_t i = 0; i < M; i++)
            if (tokens[b * M + i] != want[b * M + i])
                fail_msg("sequence %lld token %lld: %d, PyTorch %d", (long long)b, (long long)i,
                         tokens[b * M + i], want[b * M + i]);
    }
    /* it stops when every sequence has ended: at eos after the longest, or at max_steps */
    assert_int_equal(g_steps_seen, longest < M ? longest + 1 : M);
    print_message("greedy: %lld sequences, lengths %lld %lld %lld, identical to PyTorch\n",
                  (long long)B, (long long)lengths[0], (long long)lengths[1],
                  (long long)lengths[2]);
    /* bad arguments */
    clf_greedy_params bad = p;
    bad.max_steps = 0;
    assert_int_equal(clf_greedy_decode(enc, dec, src, vl, &bad, tokens, lengths),
                     CLF_ERROR_INVALID_ARGUMENT);
    bad = p;
    bad.max_steps = 5000; /* over max_len 1000 */
    assert_int_equal(clf_greedy_decode(enc, dec, src, vl, &bad, tokens, lengths),
                     CLF_ERROR_SIZE_LIMIT);
    free(tokens);
    free(want);
    clf_tensor_free(src);
    clf_tensor_free(vl);
    clf_encoder_free(enc);
    clf_decoder_free(dec);
}

/* Two threads, each with its own context, load the encoder and decoder and decode greedily at
 * once: both get PyTorch's tokens (no state is shared between contexts). */
typedef struct thread_job {
    int ok;
    clf_error err;
} thread_job;

static void *thread_main(void *arg) {
    thread_job *job = arg;
    clf_context_params p = clf_context_default_params();
    clf_context *ctx = NULL;
    clf_encoder *enc = NULL;
    clf_decoder *dec = NULL;
    clf_tensor *src = NULL, *vl = NULL;
    const int64_t B = 3, M = g_cfg[MAXSTEPS];
    int32_t tokens[64], want[64], ids[64], lens[8];
    int64_t lengths[8];
    clf_transformer_params ec = enc_cfg(), dc = dec_cfg();
    clf_greedy_params gp = {g_cfg[BOS], g_cfg[EOS], M, NULL, NULL};
    int64_t ss[2] = {B, 9};
    clf_status st = clf_context_create(&ctx, &p);
    if (st == CLF_SUCCESS)
        st = clf_safetensors_read_i32(g_fx, "greedy_tokens", want, B * M, &job->err);
    if (st == CLF_SUCCESS) st = clf_safetensors_read_i32(g_fx, "src", ids, B * 9, &job->err);
    if (st == CLF_SUCCESS)
        st = clf_safetensors_read_i32(g_fx, "src_valid_lens", lens, B, &job->err);
    if (st == CLF_SUCCESS) st = clf_encoder_load(ctx, g_w, "encoder.", &ec, &enc);
    if (st == CLF_SUCCESS) st = clf_decoder_load(ctx, g_w, "decoder.", &dc, &dec);
    if (st == CLF_SUCCESS) st = clf_tensor_create(ctx, CLF_I32, 2, ss, &src);
    if (st == CLF_SUCCESS) st = clf_tensor_create(ctx, CLF_I32, 1, &ss[0], &vl);
    if (st == CLF_SUCCESS) st = clf_tensor_write(src, ids, (size_t)(B * 9) * 4);
    if (st == CLF_SUCCESS) st = clf_tensor_write(vl, lens, (size_t)B * 4);
    for (int round = 0; round < 3 && st == CLF_SUCCESS; round++) {
        st = clf_greedy_decode(enc, dec, src, vl, &gp, tokens, lengths);
        if (st == CLF_SUCCESS && memcmp(tokens, want, (size_t)(B * M) * 4) != 0)
            snprintf(job->err.message, sizeof(job->err.message),
                     "round %d: tokens differ from PyTorch", round);
    }
    if (st != CLF_SUCCESS && ctx)
        snprintf(job->err.message, sizeof(job->err.message), "%s", clf_context_last_error(ctx));
    job->ok = st == CLF_SUCCESS && job->err.message[0] == '\0';
    clf_tensor_free(src);
    clf_tensor_free(vl);
    clf_encoder_free(enc);
    clf_decoder_free(dec);
    clf_context_free(ctx);
    return NULL;
}

static void test_two_threads(void **state) {
    (void)state;
    if (harness_on_simulator()) {
        /* Oclgrind 21.10 gives wrong results when two threads run kernels in two contexts of
         * their own, even in plain OpenCL with no clformer (the closing note of the portability
         * issue has a 40-line reproducer); PoCL and rusticl run this test. */
        fprintf(stderr,
                "test_two_threads: skipped on Oclgrind (not thread-safe across contexts)\n");
        skip();
    }
    open_fixtures();
    pthread_t th[2];
    thread_job jobs[2];
    memset(jobs, 0, sizeof(jobs));
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&th[i], NULL, thread_main, &jobs[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < 2; i++)
        if (!jobs[i].ok) fail_msg("thread %d: %s", i, jobs[i].err.message);
}

/* A device that allows 1, 3 or 32 work-items per group: the model layers (every
 * kernel they launch is fitted), and a loop budget as llvmpipe's, scaled down. */
static void test_wg_caps(void **state) {
    harness_under_wg_caps(test_encoder_matches_pytorch, state);
    harness_under_wg_caps(test_decoder_matches_pytorch, state);
    harness_under_loop_budget(test_decoder_matches_pytorch, state, 1000);
}

int main(void) {
    rng_seed(6);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_encoder_matches_pytorch),
        cmocka_unit_test(test_batch_equals_alone),
        cmocka_unit_test(test_decoder_matches_pytorch),
        cmocka_unit_test(test_f16_weights_match_pytorch),
        cmocka_unit_test(test_greedy_matches_pytorch),
        cmocka_unit_test(test_wg_caps),
        cmocka_unit_test(test_two_threads),
    };
    int rc = HARNESS_RUN("model", tests);
    clf_safetensors_free(g_w);
    clf_safetensors_free(g_fx);
    return rc;
}
