/*
 * test_lm_split.c — a causal LM split by layers over several contexts (clf_lm_load_split) gives
 * what the same model gives on one: every fixture family and weight type (the Hugging Face
 * folders of test_lm, the GGUF files of test_lm_quant, a five-layer Q4_0 file with a tied,
 * quantized embedding split 2, 3 and 5 ways), logits of a full forward and of incremental steps
 * within 1e-5 of the largest (quantized models: QUANT_TOL, as the devices may take different
 * paths: rusticl's floats, PoCL's integers), greedy ids identical over 20 tokens for two prompts
 * of different lengths. The second context: $CLF_DEVICE2 (a device spec; "twin": the next device of
 * the same name, as POCL_DEVICES="pthread pthread" makes), else a second context on the first's
 * device. Stages alternate between the two. Also: bad splits refused before any weight moves (more
 * stages than layers, shares, a device without memory for its stage), and a failure on the second
 * stage reported on the first context naming that stage, the state unchanged. And stage models
 * (clf_lm_load_stage, one per MPI rank) chained through host buffers equal the whole model.
 * Tensor-parallel shards (clf_lm_load_shard) in threads, summing through shared memory, equal
 * the whole model (logits within 1e-5 of the largest, 20 greedy ids); uneven cuts refused.
 */
#include "harness.h"
#include "../src/internal.h"
#include "../src/models/lm.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lm_fixtures.h"

static clf_context *g_ctx2;

static int open_second(void) {
    const char *spec = getenv("CLF_DEVICE2");
    char idx[16];
    clf_device_info mine;
    clf_context_device_info(g_ctx, &mine);
    if (spec && strcmp(spec, "twin") == 0) { /* the next device named like the first */
        clf_device_info all[32];
        uint32_t n = 0;
        if (clf_device_list(all, 32, &n) != CLF_SUCCESS) return -1;
        int first = -1, twin = -1;
        for (uint32_t i = 0; i < n && i < 32; i++)
            if (strcmp(all[i].name, mine.name) == 0) {
                if (first < 0)
                    first = (int)i;
                else if (twin < 0)
                    twin = (int)i;
            }
        if (twin < 0) {
            fprintf(stderr, "CLF_DEVICE2=twin: one device named '%s' only\n", mine.name);
            if (!harness_in_ci()) exit(77);
            return -1;
        }
        snprintf(idx, sizeof(idx), "%d", twin);
        spec = idx;
    }
    clf_context_params p = clf_context_default_params();
    p.device_spec = spec; /* NULL: $CLF_DEVICE, as the first */
    clf_error err = {""};
    p.error = &err;
    if (clf_context_create(&g_ctx2, &p) != CLF_SUCCESS) {
        fprintf(stderr, "second context (%s): %s%s\n", spec ? spec : "$CLF_DEVICE", err.message,
                harness_in_ci() ? "" : " (skipped outside CI)");
        if (!harness_in_ci()) exit(77);
        return -1;
    }
    clf_device_info info;
    clf_context_device_info(g_ctx2, &info);
    fprintf(stderr, "second device: %s (%s)\n", info.name, info.platform_name);
    return 0;
}

static void close_second(void) {
    clf_context_free(g_ctx2);
    g_ctx2 = NULL;
}

/* Stage i's context: the two alternate. */
static void stage_contexts(int n, clf_context **out) {
    for (int i = 0; i < n; i++)
        out[i] = i % 2 ? g_ctx2 : g_ctx;
}

static void path_of(const char *name, char *out, size_t size) {
    if (strstr(name, ".gguf")) {
        char dir[512];
        model_dir("gguf", dir, sizeof(dir));
        snprintf(out, size, "%s/%s", dir, name);
    } else {
        model_dir(name, out, size);
    }
}

/* (B, T, V) logits of ids (B, T) from an empty state, into a host array (free it); lg_ctx: the
 * context the logits tensor is made on. */
/* 1 when a weight of m is of a block type: comparisons across paths on such models allow
 * QUANT_TOL (lm_fixtures.h; 9e-5 seen between the incremental and the full forward, 4.5e-5
 * between shards and the whole model). */
static int quantized(const clf_lm *m) {
    clf_lm_weight w[256];
    int64_t n = 0;
    CLF_OK(clf_lm_weights(m, w, 256, &n));
    assert_true(n <= 256);
    for (int64_t i = 0; i < n; i++)
        if (clf_dtype_block(w[i].dtype) > 1) return 1;
    return 0;
}

static float *forward(clf_lm *m, clf_context *lg_ctx, int64_t B, int64_t T, const int32_t *ids,
                      int64_t V) {
    const int q = quantized(m);
    clf_lm_state *s = NULL;
    CLF_OK(clf_lm_state_create(m, B, 16, &s));
    clf_tensor *in = ids_tensor(B, T, ids), *lg = NULL;
    const int64_t shape[3] = {B, T, V};
    CLF_OK(clf_tensor_create(lg_ctx, CLF_F32, 3, shape, &lg));
    CLF_OK(clf_tensor_fill(lg, NAN));
    CLF_OK(clf_lm_state_step(s, in, NULL, lg));
    float *out = malloc(sizeof(float) * (size_t)(B * T * V));
    assert_non_null(out);
    CLF_OK(clf_tensor_read(lg, out, clf_tensor_bytes(lg)));
    /* incremental: the first 4 tokens, then one at a time, each sequence's last logits */
    CLF_OK(clf_lm_state_reset(s));
    clf_tensor *lg1 = NULL;
    const int64_t s1[2] = {B, V};
    CLF_OK(clf_tensor_create(lg_ctx, CLF_F32, 2, s1, &lg1));
    float *row = malloc(sizeof(float) * (size_t)(B * V));
    assert_non_null(row);
    for (int64_t t = 0; t < T;) {
        const int64_t step = t == 0 ? 4 : 1;
        int32_t part[64];
        for (int64_t b = 0; b < B; b++)
            for (int64_t j = 0; j < step; j++)
                part[b * step + j] = ids[b * T + t + j];
        clf_tensor *pi = ids_tensor(B, step, part);
        CLF_OK(clf_tensor_fill(lg1, NAN));
        CLF_OK(clf_lm_state_step(s, pi, NULL, lg1));
        CLF_OK(clf_tensor_read(lg1, row, clf_tensor_bytes(lg1)));
        t += step;
        for (int64_t b = 0; b < B; b++) {
            float big = 0.0f; /* the row's largest logit, for a quantized model's allowance */
            for (int64_t v = 0; v < V && q; v++)
                big = fmaxf(big, fabsf(out[(b * T + t - 1) * V + v]));
            for (int64_t v = 0; v < V; v++) {
                const float full = out[(b * T + t - 1) * V + v], inc = row[b * V + v];
                if (!(fabsf(full - inc) <= 1e-4f * (1.0f + fabsf(full)) + (float)QUANT_TOL * big))
                    fail_msg("incremental step to %lld, sequence %lld, logit %lld: %g, full %g",
                             (long long)t, (long long)b, (long long)v, inc, full);
            }
        }
        clf_tensor_free(pi);
    }
    free(row);
    clf_tensor_free(lg1);
    clf_tensor_free(in);
    clf_tensor_free(lg);
    clf_lm_state_free(s);
    return out;
}

/* 20 greedy tokens for two prompts of 9 and 5 tokens. */
static void greedy(clf_lm *m, const int32_t *ids, int32_t tokens[40]) {
    const int32_t *prompts[2] = {ids, ids + 9};
    const int64_t lens[2] = {9, 5};
    int64_t counts[2];
    clf_generate_params gp = clf_generate_default_params();
    gp.max_new_tokens = 20;
    gp.ignore_eos = 1;
    CLF_OK(clf_lm_generate(m, prompts, lens, 2, &gp, tokens, counts));
    assert_int_equal(counts[0], 20);
    assert_int_equal(counts[1], 20);
}

/* The model at name split n ways (shares: split) against it on g_ctx alone. */
static void split_case(const char *name, int n, const double *split) {
    char path[640];
    path_of(name, path, sizeof(path));
    clf_lm *one = NULL, *two = NULL;
    CLF_OK(clf_lm_load(g_ctx, path, &one));
    clf_context *ctxs[8];
    stage_contexts(n, ctxs);
    const clf_status st = clf_lm_load_split(ctxs, n, split, path, NULL, &two);
    if (st != CLF_SUCCESS)
        fail_msg("%s split %d ways: %s (%d): %s", name, n, clf_strerror(st), st,
                 clf_context_last_error(g_ctx));
    clf_lm_info in;
    CLF_OK(clf_lm_get_info(one, &in));
    /* the stages: contiguous, every layer once, the embedding first and the head last */
    clf_stage stages[8];
    int64_t count = 0, at = 0;
    CLF_OK(clf_lm_stages(two, stages, 8, &count));
    assert_int_equal(count, n);
    char plan[128] = "";
    for (int i = 0; i < n; i++) {
        assert_ptr_equal(stages[i].context, ctxs[i]);
        assert_int_equal(stages[i].first_layer, at);
        assert_true(stages[i].layers >= 1);
        assert_int_equal(stages[i].embedding, i == 0);
        assert_int_equal(stages[i].head, i == n - 1);
        assert_true(stages[i].weight_bytes > 0);
        at += stages[i].layers;
        snprintf(plan + strlen(plan), sizeof(plan) - strlen(plan), "%s%lld", i ? "+" : "",
                 (long long)stages[i].layers);
    }
    assert_int_equal(at, in.layers);
    const int64_t V = in.vocab_size, B = 2, T = 9;
    int32_t ids[18];
    for (int i = 0; i < 18; i++)
        ids[i] = (int32_t)((7 * i + 3) % V);
    float *want = forward(one, g_ctx, B, T, ids, V);
    /* logits made on the last stage's context, and on the first (copied through the host) */
    float *got = forward(two, ctxs[n - 1], B, T, ids, V);
    float *got0 = forward(two, g_ctx, B, T, ids, V);
    double scale = 0, worst = 0;
    for (int64_t i = 0; i < B * T * V; i++)
        scale = fmax(scale, fabs((double)want[i]));
    for (int64_t i = 0; i < B * T * V; i++) {
        worst = fmax(worst, fabs((double)got[i] - want[i]) / scale);
        assert_true(got0[i] == got[i]);
    }
    if (!(worst <= (quantized(one) ? QUANT_TOL : 1e-5)))
        fail_msg("%s split %s: logits %.3e of the largest from one context's", name, plan, worst);
    int32_t a[40], b[40];
    greedy(one, ids, a);
    greedy(two, ids, b);
    for (int i = 0; i < 40; i++)
        if (a[i] != b[i])
            fail_msg("%s split %s: greedy token %d of sequence %d: %d, one context %d", name, plan,
                     i % 20, i / 20, b[i], a[i]);
    printf("%-22s split %-9s logits within %.1e of one context's, 2 x 20 greedy ids equal\n", name,
           plan, worst);
    free(want);
    free(got);
    free(got0);
    clf_lm_free(one);
    clf_lm_free(two);
}

static void test_split_equals_one(void **state) {
    (void)state;
    static const char *const names[] = {"gpt2",
                                        "llama",
                                        "llama_gqa",
                                        "qwen2",
                                        "mistral_mqa",
                                        "llama_gqa_mixed.gguf",
                                        "qwen2_q4_0.gguf",
                                        "qwen2_f16.gguf",
                                        "gpt2_q8_0.gguf",
                                        "llama_q4_k_m.gguf"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        split_case(names[i], 2, NULL);
}

static void test_deeper_splits(void **state) {
    (void)state;
    const double three[3] = {1, 3, 1}, uneven[2] = {1, 4}, five[5] = {1, 1, 1, 1, 1};
    split_case("llama_deep_q4_0.gguf", 2, NULL); /* equal memories: 3 + 2 */
    split_case("llama_deep_q4_0.gguf", 2, uneven);
    split_case("llama_deep_q4_0.gguf", 3, three);
    split_case("llama_deep_q4_0.gguf", 5, five);
}

static void expect_refused(clf_context *const *ctxs, int n, const double *split, const char *path,
                           clf_status want, const char *words) {
    clf_lm *m = (clf_lm *)0x1;
    const clf_status st = clf_lm_load_split(ctxs, n, split, path, NULL, &m);
    assert_int_equal(st, want);
    assert_null(m);
    if (!strstr(clf_context_last_error(g_ctx), words))
        fail_msg("refused with '%s', not naming '%s'", clf_context_last_error(g_ctx), words);
}

static void test_bad_splits(void **state) {
    (void)state;
    char path[640], deep[640];
    path_of("llama_gqa", path, sizeof(path));
    path_of("llama_deep_q4_0.gguf", deep, sizeof(deep));
    clf_context *ctxs[8];
    stage_contexts(8, ctxs);
    expect_refused(ctxs, 3, NULL, path, CLF_ERROR_INVALID_ARGUMENT, "3 stages for a model of 2");
    expect_refused(ctxs, 6, NULL, deep, CLF_ERROR_INVALID_ARGUMENT, "6 stages for a model of 5");
    const double zero[2] = {1, 0}, neg[2] = {-1, 2}, nan2[2] = {NAN, 1}, inf2[2] = {INFINITY, 1};
    expect_refused(ctxs, 2, zero, path, CLF_ERROR_INVALID_ARGUMENT, "stage 1's share 0");
    expect_refused(ctxs, 2, neg, path, CLF_ERROR_INVALID_ARGUMENT, "stage 0's share -1");
    expect_refused(ctxs, 2, nan2, path, CLF_ERROR_INVALID_ARGUMENT, "positive number");
    expect_refused(ctxs, 2, inf2, path, CLF_ERROR_INVALID_ARGUMENT, "positive number");
    clf_context *with_null[2] = {g_ctx, NULL};
    expect_refused(with_null, 2, NULL, path, CLF_ERROR_INVALID_ARGUMENT, "context 1 is NULL");
    clf_lm *m = NULL;
    assert_int_equal(clf_lm_load_split(NULL, 2, NULL, path, NULL, &m), CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_lm_load_split(ctxs, 0, NULL, path, NULL, &m), CLF_ERROR_INVALID_ARGUMENT);

    /* A model no device holds (16 layers of d 16384, FFN 131072: 30 GB each in F32), refused
     * from its config alone, before a weight is read: the folder's weights are a tiny model's. */
    char dir[] = "/tmp/clf-split-XXXXXX", file[700], cmd[1600];
    assert_non_null(mkdtemp(dir));
    snprintf(cmd, sizeof(cmd), "cp '%s/model.safetensors' '%s/'", path, dir);
    assert_int_equal(system(cmd), 0);
    snprintf(file, sizeof(file), "%s/config.json", dir);
    harness_write_file(file, "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 16384, "
                             "\"intermediate_size\": 131072, \"num_hidden_layers\": 16, "
                             "\"num_attention_heads\": 128, \"num_key_value_heads\": 8, "
                             "\"vocab_size\": 32000, \"max_position_embeddings\": 4096, "
                             "\"rms_norm_eps\": 1e-5, \"tie_word_embeddings\": false}");
    expect_refused(ctxs, 2, NULL, dir, CLF_ERROR_SIZE_LIMIT, "of global memory");
    assert_non_null(strstr(clf_context_last_error(g_ctx), "stage 0 on '"));
    harness_remove_tree(dir);
}

/* A launch that fails on the second stage: the step fails with the message on the first context,
 * naming stage 1; the state keeps its lengths, and the next step gives the right logits. */
static void test_second_stage_fails(void **state) {
    (void)state;
    char path[640];
    path_of("llama_gqa", path, sizeof(path));
    clf_context *ctxs[2] = {g_ctx, g_ctx2};
    clf_lm *one = NULL, *two = NULL;
    CLF_OK(clf_lm_load(g_ctx, path, &one));
    CLF_OK(clf_lm_load_split(ctxs, 2, NULL, path, NULL, &two));
    clf_lm_info in;
    CLF_OK(clf_lm_get_info(two, &in));
    int32_t ids[18];
    for (int i = 0; i < 18; i++)
        ids[i] = (int32_t)((5 * i + 1) % in.vocab_size);
    clf_lm_state *s = NULL;
    CLF_OK(clf_lm_state_create(two, 2, 16, &s));
    clf_tensor *x = ids_tensor(2, 9, ids), *lg = NULL;
    const int64_t shape[2] = {2, in.vocab_size};
    CLF_OK(clf_tensor_create(g_ctx2, CLF_F32, 2, shape, &lg));
    clf__fault_set(g_ctx2, CLF_FAULT_ENQUEUE, 0);
    const clf_status st = clf_lm_state_step(s, x, NULL, lg);
    clf__fault_set(g_ctx2, CLF_FAULT_ENQUEUE, -1);
    assert_int_not_equal(st, CLF_SUCCESS);
    if (!strstr(clf_context_last_error(g_ctx), "stage 1 ("))
        fail_msg("the failure reads '%s'", clf_context_last_error(g_ctx));
    assert_int_equal(clf_lm_state_length(s, 0), 0);
    CLF_OK(clf_lm_state_step(s, x, NULL, lg));
    assert_int_equal(clf_lm_state_length(s, 0), 9);
    float *got = malloc(sizeof(float) * (size_t)(2 * in.vocab_size));
    assert_non_null(got);
    CLF_OK(clf_tensor_read(lg, got, clf_tensor_bytes(lg)));
    float *want = forward(one, g_ctx, 2, 9, ids, in.vocab_size);
    for (int64_t b = 0; b < 2; b++)
        for (int64_t v = 0; v < in.vocab_size; v++)
            assert_true(fabsf(got[b * in.vocab_size + v] - want[(b * 9 + 8) * in.vocab_size + v]) <=
                        1e-4f * (1.0f + fabsf(want[(b * 9 + 8) * in.vocab_size + v])));
    free(got);
    free(want);
    clf_tensor_free(x);
    clf_tensor_free(lg);
    clf_lm_state_free(s);
    clf_lm_free(one);
    clf_lm_free(two);
}

/* Stage models (clf_lm_load_stage) chained by hand through host buffers, as a driver over MPI
 * chains them: layers 0-1 (embedding), 2-3, 4 (head) of the five-layer (Q4_0) file on
 * alternating contexts give the whole model's logits for a prefill and 4 decode steps of two
 * sequences (within QUANT_TOL: the two devices may take different paths). */
static void test_stage_models(void **state) {
    (void)state;
    char path[640];
    path_of("llama_deep_q4_0.gguf", path, sizeof(path));
    clf_lm *whole = NULL, *st[3] = {NULL, NULL, NULL};
    CLF_OK(clf_lm_load(g_ctx, path, &whole));
    const int64_t range[4] = {0, 2, 4, 5};
    clf_context *ctxs[3] = {g_ctx, g_ctx2, g_ctx};
    for (int i = 0; i < 3; i++)
        CLF_OK(clf_lm_load_stage(ctxs[i], path, NULL, range[i], range[i + 1], &st[i]));
    clf_lm_info in;
    CLF_OK(clf_lm_get_info(st[1], &in));
    assert_int_equal(in.layers, 5);
    clf_stage info[2];
    int64_t count = 0;
    CLF_OK(clf_lm_stages(st[1], info, 2, &count));
    assert_int_equal(count, 1);
    assert_int_equal(info[0].first_layer, 2);
    assert_int_equal(info[0].layers, 2);
    assert_false(info[0].embedding || info[0].head);
    CLF_OK(clf_lm_stages(st[2], info, 2, &count));
    assert_true(info[0].head && !info[0].embedding);
    const int64_t B = 2, V = in.vocab_size, d = in.hidden_size;
    clf_lm_state *ws = NULL, *ss[3];
    CLF_OK(clf_lm_state_create(whole, B, 16, &ws));
    for (int i = 0; i < 3; i++)
        CLF_OK(clf_lm_state_create(st[i], B, 16, &ss[i]));
    int32_t ids[2 * 6] = {3, 9, 27, 81, 243 % 256, 5, 7, 11, 13, 17, 19, 23};
    const int64_t n_new[2] = {6, 4}; /* the second sequence's prompt is shorter */
    float *h1 = malloc(sizeof(float) * (size_t)(B * 6 * d)),
          *h2 = malloc(sizeof(float) * (size_t)(B * 6 * d));
    float *a = malloc(sizeof(float) * (size_t)(B * V)),
          *b = malloc(sizeof(float) * (size_t)(B * V));
    const int64_t ls[2] = {B, V};
    clf_tensor *lw = NULL, *ls2 = NULL;
    CLF_OK(clf_tensor_create(g_ctx, CLF_F32, 2, ls, &lw));
    CLF_OK(clf_tensor_create(ctxs[2], CLF_F32, 2, ls, &ls2));
    for (int t = 0; t < 5; t++) {
        const int64_t T = t ? 1 : 6;
        const int64_t *nn = t ? NULL : n_new;
        clf_tensor *x = ids_tensor(B, T, ids);
        CLF_OK(clf_lm_state_step(ws, x, nn, lw));
        CLF_OK(clf_tensor_fill(ls2, NAN));
        CLF_OK(clf_lm_state_step_stage(ss[0], x, NULL, T, nn, h1, NULL));
        CLF_OK(clf_lm_state_step_stage(ss[1], NULL, h1, T, nn, h2, NULL));
        CLF_OK(clf_lm_state_step_stage(ss[2], NULL, h2, T, nn, NULL, ls2));
        CLF_OK(clf_tensor_read(lw, a, clf_tensor_bytes(lw)));
        CLF_OK(clf_tensor_read(ls2, b, clf_tensor_bytes(ls2)));
        float big = 0.0f; /* a quantized model's allowance: across paths (QUANT_TOL) */
        for (int64_t i = 0; i < B * V; i++)
            big = fmaxf(big, fabsf(a[i]));
        for (int64_t i = 0; i < B * V; i++)
            if (!(fabsf(a[i] - b[i]) <= 1e-5f * (1.0f + fabsf(a[i])) + (float)QUANT_TOL * big))
                fail_msg("step %d logit %lld: stages %g, whole model %g", t, (long long)i, b[i],
                         a[i]);
        for (int i = 0; i < 2; i++) /* the next ids: each sequence's argmax */
            for (int64_t v = 0, best = 0; v < V; v++) {
                if (a[i * V + v] > a[i * V + best]) best = v;
                ids[i] = (int32_t)best;
            }
        clf_tensor_free(x);
    }
    assert_int_equal(clf_lm_state_length(ss[1], 0), 10);
    assert_int_equal(clf_lm_state_length(ss[1], 1), 8);
    /* misuse: a partial stage in clf_lm_state_step, missing buffers, bad ranges */
    clf_tensor *x = ids_tensor(B, 1, ids);
    assert_int_equal(clf_lm_state_step(ss[1], x, NULL, lw), CLF_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(clf_context_last_error(ctxs[1]), "clf_lm_state_step_stage"));
    assert_int_equal(clf_lm_state_step_stage(ss[1], NULL, NULL, 1, NULL, h2, NULL),
                     CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_lm_state_step_stage(ss[0], x, NULL, 1, NULL, NULL, NULL),
                     CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_lm_state_length(ss[1], 0), 10);
    clf_lm *bad = (clf_lm *)0x1;
    assert_int_equal(clf_lm_load_stage(g_ctx, path, NULL, 3, 3, &bad), CLF_ERROR_INVALID_ARGUMENT);
    assert_null(bad);
    assert_int_equal(clf_lm_load_stage(g_ctx, path, NULL, 4, 6, &bad), CLF_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(clf_context_last_error(g_ctx), "of a model of 5 layers"));
    assert_int_equal(clf_lm_load_stage(g_ctx, path, NULL, -1, 2, &bad), CLF_ERROR_INVALID_ARGUMENT);
    clf_tensor_free(x);
    clf_tensor_free(lw);
    clf_tensor_free(ls2);
    free(h1);
    free(h2);
    free(a);
    free(b);
    clf_lm_state_free(ws);
    for (int i = 0; i < 3; i++) {
        clf_lm_state_free(ss[i]);
        clf_lm_free(st[i]);
    }
    clf_lm_free(whole);
}

/* ---------------------------------------------------------------- tensor parallel */

/* The shards of a group, one thread each, summing through shared memory: every shard's buffer
 * is published, each sums them in shard order into its own scratch, then copies it back. */
typedef struct tp_group {
    pthread_barrier_t bar;
    int n;
    float *buf[4];
    int64_t count[4];
    int failed;
    /* the run: prompts (B 2, T 9; the second 5 long), then 20 greedy steps */
    const int32_t *prompt;
    int64_t V;
    int32_t next[2]; /* shard 0's argmax, read by all after the barrier */
    float *logits;   /* (21, 2, V): shard 0's last-row logits of each step */
    const char *path;
    clf_context *ctx[4];
    clf_status st[4];
    char why[4][256];
} tp_group;

typedef struct tp_member {
    tp_group *g;
    int rank;
} tp_member;

static int tp_allreduce(void *user, float *x, int64_t count) {
    tp_member *me = user;
    tp_group *g = me->g;
    g->buf[me->rank] = x;
    g->count[me->rank] = count;
    pthread_barrier_wait(&g->bar);
    float *sum = malloc(sizeof(float) * (size_t)count);
    int ok = sum != NULL;
    for (int r = 0; r < g->n; r++)
        ok = ok && g->count[r] == count;
    for (int64_t i = 0; ok && i < count; i++) {
        float s = 0.0f;
        for (int r = 0; r < g->n; r++)
            s += g->buf[r][i];
        sum[i] = s;
    }
    pthread_barrier_wait(&g->bar);
    if (ok) memcpy(x, sum, sizeof(float) * (size_t)count);
    free(sum);
    return ok ? 0 : 1;
}

static void *tp_shard_main(void *arg) {
    tp_member *me = arg;
    tp_group *g = me->g;
    clf_context *ctx = g->ctx[me->rank];
    const int root = me->rank == 0;
    const clf_shard sh = {me->rank, g->n, tp_allreduce, me};
    clf_lm *m = NULL;
    clf_lm_state *s = NULL;
    clf_tensor *ids = NULL, *ids1 = NULL, *lg = NULL;
    const int64_t B = 2, V = g->V, ps[2] = {B, 9}, s1[2] = {B, 1}, ls[2] = {B, V};
    const int64_t n_new[2] = {9, 5}, one[2] = {1, 1};
    clf_status st = clf_lm_load_shard(ctx, g->path, NULL, &sh, &m);
    if (st == CLF_SUCCESS) st = clf_lm_state_create(m, B, 32, &s);
    if (st == CLF_SUCCESS) st = clf_tensor_create(ctx, CLF_I32, 2, ps, &ids);
    if (st == CLF_SUCCESS) st = clf_tensor_write(ids, g->prompt, 4 * 18);
    if (st == CLF_SUCCESS) st = clf_tensor_create(ctx, CLF_I32, 2, s1, &ids1);
    if (st == CLF_SUCCESS && root) st = clf_tensor_create(ctx, CLF_F32, 2, ls, &lg);
    for (int t = 0; t <= 20; t++) {
        /* a shard that failed still meets the others at every barrier of the run */
        if (st == CLF_SUCCESS)
            st = clf_lm_state_step_stage(s, t ? ids1 : ids, NULL, t ? 1 : 9, t ? one : n_new, NULL,
                                         lg);
        if (st == CLF_SUCCESS && root)
            st = clf_tensor_read(lg, g->logits + (size_t)t * (size_t)(B * V),
                                 sizeof(float) * (size_t)(B * V));
        if (root)
            for (int b = 0; b < 2; b++) {
                const float *row = g->logits + ((size_t)t * 2 + (size_t)b) * (size_t)V;
                int64_t best = 0;
                for (int64_t v = 1; v < V; v++)
                    if (row[v] > row[best]) best = v;
                g->next[b] = (int32_t)best;
            }
        if (st != CLF_SUCCESS) g->failed = 1;
        pthread_barrier_wait(&g->bar);
        if (g->failed) break;
        if (st == CLF_SUCCESS) st = clf_tensor_write(ids1, g->next, sizeof(g->next));
    }
    g->st[me->rank] = st;
    if (st != CLF_SUCCESS)
        snprintf(g->why[me->rank], sizeof(g->why[0]), "%s", clf_context_last_error(ctx));
    clf_tensor_free(ids);
    clf_tensor_free(ids1);
    clf_tensor_free(lg);
    clf_lm_state_free(s);
    clf_lm_free(m);
    return NULL;
}

/* The model at name as n shards (contexts alternate between the two devices; a third and fourth
 * shard get their own context on the first's device) in n threads, against the whole model on
 * g_ctx: each step's logits within 1e-5 of the largest (quantized weights: QUANT_TOL), 2 x 20
 * greedy ids equal. */
static void shard_case(const char *name, int n) {
    char path[640];
    path_of(name, path, sizeof(path));
    clf_lm *whole = NULL;
    CLF_OK(clf_lm_load(g_ctx, path, &whole));
    clf_lm_info in;
    CLF_OK(clf_lm_get_info(whole, &in));
    const int64_t B = 2, V = in.vocab_size;
    int32_t prompt[18];
    for (int i = 0; i < 18; i++)
        prompt[i] = (int32_t)((7 * i + 3) % V);
    for (int i = 5; i < 9; i++) /* the second sequence is 5 long: padding after it */
        prompt[9 + i] = 0;
    /* the whole model, greedy, the same steps */
    float *want = malloc(sizeof(float) * (size_t)(21 * B * V));
    assert_non_null(want);
    clf_lm_state *s = NULL;
    CLF_OK(clf_lm_state_create(whole, B, 32, &s));
    const int64_t ls[2] = {B, V}, n_new[2] = {9, 5}, one[2] = {1, 1};
    clf_tensor *lg = NULL, *x = ids_tensor(B, 9, prompt);
    CLF_OK(clf_tensor_create(g_ctx, CLF_F32, 2, ls, &lg));
    int32_t want_ids[2][21];
    for (int t = 0; t <= 20; t++) {
        CLF_OK(clf_lm_state_step(s, x, t ? one : n_new, lg));
        CLF_OK(clf_tensor_read(lg, want + (size_t)t * (size_t)(B * V),
                               sizeof(float) * (size_t)(B * V)));
        int32_t nx[2];
        for (int b = 0; b < 2; b++) {
            const float *row = want + ((size_t)t * 2 + (size_t)b) * (size_t)V;
            int64_t best = 0;
            for (int64_t v = 1; v < V; v++)
                if (row[v] > row[best]) best = v;
            nx[b] = want_ids[b][t] = (int32_t)best;
        }
        clf_tensor_free(x);
        x = ids_tensor(B, 1, nx);
    }
    clf_tensor_free(x);
    clf_tensor_free(lg);
    clf_lm_state_free(s);
    /* the shards */
    tp_group g = {.n = n, .prompt = prompt, .V = V, .path = path};
    g.logits = malloc(sizeof(float) * (size_t)(21 * B * V));
    assert_non_null(g.logits);
    for (int i = 0; i < n; i++) {
        g.ctx[i] = i == 0 ? g_ctx : i == 1 ? g_ctx2 : NULL;
        if (!g.ctx[i]) CLF_OK(clf_context_create(&g.ctx[i], NULL));
    }
    assert_int_equal(pthread_barrier_init(&g.bar, NULL, (unsigned)n), 0);
    pthread_t th[4];
    tp_member mem[4];
    for (int i = 0; i < n; i++) {
        mem[i] = (tp_member){&g, i};
        assert_int_equal(pthread_create(&th[i], NULL, tp_shard_main, &mem[i]), 0);
    }
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&g.bar);
    for (int i = 2; i < n; i++)
        clf_context_free(g.ctx[i]);
    for (int i = 0; i < n; i++)
        if (g.st[i] != CLF_SUCCESS)
            fail_msg("%s, shard %d of %d: %s: %s", name, i, n, clf_strerror(g.st[i]), g.why[i]);
    double scale = 0, worst = 0;
    for (int64_t i = 0; i < 21 * B * V; i++)
        scale = fmax(scale, fabs((double)want[i]));
    for (int t = 0; t <= 20; t++)
        for (int b = 0; b < 2; b++) {
            const float *w = want + ((size_t)t * 2 + (size_t)b) * (size_t)V,
                        *got = g.logits + ((size_t)t * 2 + (size_t)b) * (size_t)V;
            int64_t best = 0;
            for (int64_t v = 0; v < V; v++) {
                worst = fmax(worst, fabs((double)got[v] - w[v]) / scale);
                if (got[v] > got[best]) best = v;
            }
            if (best != want_ids[b][t])
                fail_msg("%s in %d shards: greedy token %d of sequence %d: %lld, whole model %d",
                         name, n, t, b, (long long)best, want_ids[b][t]);
        }
    if (!(worst <= (quantized(whole) ? QUANT_TOL : 1e-5)))
        fail_msg("%s in %d shards: logits %.3e of the largest from the whole model's", name, n,
                 worst);
    printf("%-22s %d shards: logits within %.1e of the whole model's, 2 x 20 greedy ids equal\n",
           name, n, worst);
    free(want);
    free(g.logits);
    clf_lm_free(whole);
}

static void test_shards(void **state) {
    (void)state;
    shard_case("llama_gqa", 2);            /* GQA, F32 folder */
    shard_case("gpt2", 2);                 /* fused c_attn, biases after the cut columns */
    shard_case("qwen2_q4_0.gguf", 2);      /* Q/K/V biases, Q4_0 cut by rows and blocks */
    shard_case("llama_deep_q4_0.gguf", 2); /* tied Q4_0 embedding and head */
    shard_case("llama_tp_q4_0.gguf", 3);   /* 6 heads on 3 K/V heads */
}

/* What does not cut evenly is refused, naming it, and nothing is returned. */
static void test_bad_shards(void **state) {
    (void)state;
    char path[640];
    clf_lm *m = (clf_lm *)0x1;
    const clf_shard three = {0, 3, tp_allreduce, NULL}, two = {1, 2, tp_allreduce, NULL};
    path_of("llama_gqa", path, sizeof(path)); /* 8 heads on 2 K/V heads */
    assert_int_equal(clf_lm_load_shard(g_ctx, path, NULL, &three, &m), CLF_ERROR_INVALID_ARGUMENT);
    assert_null(m);
    assert_non_null(strstr(clf_context_last_error(g_ctx), "3 shards do not divide the model's 8 "
                                                          "attention heads"));
    path_of("llama_tp_q4_0.gguf", path, sizeof(path)); /* 6 heads on 3 K/V heads */
    assert_int_equal(clf_lm_load_shard(g_ctx, path, NULL, &two, &m), CLF_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(clf_context_last_error(g_ctx), "do not divide the model's 3 key/value"));
    /* Q4_K rows of 256 columns: W_o's 256 cut in two are half blocks */
    path_of("llama_q4_k_m.gguf", path, sizeof(path));
    assert_int_equal(clf_lm_load_shard(g_ctx, path, NULL, &two, &m), CLF_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(clf_context_last_error(g_ctx), "do not cut into 2 equal shards of whole "
                                                          "blocks"));
    assert_null(m);
    const clf_shard bad[3] = {
        {2, 2, tp_allreduce, NULL}, {0, 0, tp_allreduce, NULL}, {0, 2, NULL, NULL}};
    for (int i = 0; i < 3; i++)
        assert_int_equal(clf_lm_load_shard(g_ctx, path, NULL, &bad[i], &m),
                         CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_lm_load_shard(g_ctx, path, NULL, NULL, &m), CLF_ERROR_INVALID_ARGUMENT);
}

int main(void) {
    harness_after_setup = open_second;
    harness_before_teardown = close_second;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_equals_one), cmocka_unit_test(test_deeper_splits),
        cmocka_unit_test(test_bad_splits),       cmocka_unit_test(test_second_stage_fails),
        cmocka_unit_test(test_stage_models),     cmocka_unit_test(test_shards),
        cmocka_unit_test(test_bad_shards),
    };
    return HARNESS_RUN("lm_split", tests);
}
