/*
 * test_lm.c — decoder-only LLMs from Hugging Face folders against transformers in float64
 * (tests/data/lm/<name>/, made by tools/make_lm_fixtures.py): GPT-2, Llama (sharded, untied),
 * Llama with grouped-query attention, head_dim != d / H and llama3 rope scaling (tied), Qwen2
 * (QKV biases, BF16 weights) and Mistral with multi-query attention.
 *
 * Agreement: logits within 1e-4 of the largest |logit| of the reference (the bound; fp32
 * with d <= 128 and 2 layers is ~1e-6 in practice), greedy ids identical over 20 new tokens,
 * incremental decoding equal to the full-sequence forward, a batch of sequences of different
 * lengths equal to each sequence alone, generation stopping at the config's eos id. Quantized
 * weights and GGUF files: test_lm_quant.c; the fixtures' loaders and checks: lm_fixtures.c.
 */
#include "harness.h"
#include "../src/models/lm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lm_fixtures.h"

/* Runs body on each fixture model with its reference. */
typedef void (*model_case)(const char *name, clf_lm *m, const clf_lm_info *info, const ref *r);
static void for_each_model(model_case body) {
    for (size_t mi = 0; mi < N_MODELS; mi++) {
        /* On a simulator (the Oclgrind label: races and bounds, not numbers) the families whose
         * kernels the others run already: llama's (MHA, RMSNorm, RoPE, SwiGLU) are llama_gqa's
         * but for the head count, qwen2's QKV biases are gpt2's biased linears (oclgrind_lm
         * took 230 s of CI with all five). */
        if (harness_on_simulator() &&
            (strcmp(k_models[mi], "llama") == 0 || strcmp(k_models[mi], "qwen2") == 0))
            continue;
        clf_lm_info info;
        clf_lm *m = load_model(k_models[mi], &info);
        ref r;
        load_ref(k_models[mi], info.vocab_size, &r);
        body(k_models[mi], m, &info, &r);
        free(r.logits);
        clf_lm_free(m);
    }
}

/* The full-sequence forward, then the same tokens fed 4 + 1 + 1 + ... (incremental decoding):
 * every position's logits match the reference. */
static void forward_and_incremental_case(const char *name, clf_lm *m, const clf_lm_info *info,
                                         const ref *r) {
    const int64_t V = info->vocab_size;
    clf_lm_state *s = NULL;
    CLF_OK(clf_lm_state_create(m, 2, 16, &s));
    int64_t ls[3] = {2, 9, V};
    clf_tensor *ids = ids_tensor(2, 9, r->ids), *lg = tensor_poisoned(CLF_F32, 3, ls);
    CLF_OK(clf_lm_state_step(s, ids, NULL, lg));
    float *got = tensor_to_host(lg);
    const double rel = check_logits("full forward", name, got, r->logits, 18 * V, r->scale);
    printf("%-12s %-20s %lld parameters: full-forward logits within %.2e of the largest\n", name,
           info->arch, (long long)info->parameters, rel);
    assert_int_equal(clf_lm_state_length(s, 0), 9);
    assert_int_equal(clf_lm_state_length(s, 1), 9);
    free(got);
    clf_tensor_free(ids);
    clf_tensor_free(lg);

    /* incremental: 4 tokens, then one at a time */
    CLF_OK(clf_lm_state_reset(s));
    int32_t part[2 * 4];
    for (int b = 0; b < 2; b++)
        memcpy(part + 4 * b, r->ids + 9 * b, 4 * sizeof(int32_t));
    int64_t ps[3] = {2, 4, V};
    ids = ids_tensor(2, 4, part);
    lg = tensor_poisoned(CLF_F32, 3, ps);
    CLF_OK(clf_lm_state_step(s, ids, NULL, lg));
    got = tensor_to_host(lg);
    for (int b = 0; b < 2; b++)
        check_logits("prefill of 4", name, got + b * 4 * V, r->logits + b * 9 * V, 4 * V, r->scale);
    free(got);
    clf_tensor_free(ids);
    clf_tensor_free(lg);
    int64_t os[2] = {2, V};
    lg = tensor_poisoned(CLF_F32, 2, os); /* (B, V): each sequence's last token */
    for (int t = 4; t < 9; t++) {
        int32_t one[2] = {r->ids[t], r->ids[9 + t]};
        ids = ids_tensor(2, 1, one);
        if (t & 1) /* every other step with the ids from the host */
            CLF_OK(clf_lm_state_step_ids(s, one, 1, NULL, lg));
        else
            CLF_OK(clf_lm_state_step(s, ids, NULL, lg));
        got = tensor_to_host(lg);
        for (int b = 0; b < 2; b++)
            check_logits("incremental step", name, got + b * V, r->logits + (b * 9 + t) * V, V,
                         r->scale);
        free(got);
        clf_tensor_free(ids);
    }
    clf_tensor_free(lg);
    clf_lm_state_free(s);
}

static void test_forward_and_incremental(void **state) {
    (void)state;
    for_each_model(forward_and_incremental_case);
}

/* F16 storage (clf_load_params). F16 weights against transformers on the same fp16-rounded
 * linear weights (reference_f16w.safetensors, tools/make_lm_f16_fixtures.py) with the F32 bound,
 * 1e-4 of the largest logit: the rounding itself moves the logits by 5e-4 .. 8e-4 of the largest
 * (all but qwen2, whose BF16 weights are exact in F16), so the test tells rounded weights from
 * unrounded ones; against the fp32 reference itself they must stay within 2e-3. Then an F16 KV
 * cache too, full forward and incremental steps, against the same reference within 4e-3 of the
 * largest: each cached K and V entry carries a relative error of at most 2^-11, as each weight
 * does, whose whole effect is under 8e-4. */
static void f16_case(size_t mi) {
    const char *name = k_models[mi];
    char dir[1024], path[1200];
    model_dir(name, dir, sizeof(dir));
    clf_load_params p = clf_load_default_params();
    p.weight_dtype = CLF_F16;
    clf_lm_info info;
    for (int cache = 0; cache <= 1; cache++) {
        p.cache_dtype = cache ? CLF_F16 : CLF_F32;
        clf_lm *m = NULL;
        CLF_OK(clf_lm_load_with(g_ctx, dir, &p, &m));
        CLF_OK(clf_lm_get_info(m, &info));
        assert_int_equal(info.weight_dtype, CLF_F16);
        assert_int_equal(info.cache_dtype, p.cache_dtype);
        const int64_t V = info.vocab_size;
        ref r;
        load_ref(name, V, &r);
        snprintf(path, sizeof(path), "%s/reference_f16w.safetensors", dir);
        clf_safetensors *st = NULL;
        clf_error err;
        if (clf_safetensors_open(path, &st, &err) != CLF_SUCCESS) fail_msg("%s", err.message);
        float *want = malloc(sizeof(float) * (size_t)(18 * V));
        if (clf_safetensors_read_f32(st, "logits_f16w", want, 18 * V, &err) != CLF_SUCCESS)
            fail_msg("%s", err.message);
        clf_safetensors_free(st);
        const double tol = cache ? 4e-3 : 1e-4;
        clf_lm_state *s = NULL;
        CLF_OK(clf_lm_state_create(m, 2, 16, &s));
        int64_t ls[3] = {2, 9, V}, os[2] = {2, V};
        clf_tensor *ids = ids_tensor(2, 9, r.ids), *lg = tensor_poisoned(CLF_F32, 3, ls);
        CLF_OK(clf_lm_state_step(s, ids, NULL, lg));
        float *got = tensor_to_host(lg);
        double rel = check_logits_tol(cache ? "F16 weights and cache" : "F16 weights", name, got,
                                      want, 18 * V, r.scale, tol);
        printf("%-12s F16 weights%s: logits within %.2e of the largest (bound %.0e)\n", name,
               cache ? ", F16 cache" : "", rel, tol);
        if (!cache) { /* against the fp32 run (the unrounded reference): the rounding's effect */
            rel =
                check_logits_tol("F16 weights vs F32", name, got, r.logits, 18 * V, r.scale, 2e-3);
            printf("%-12s F16 weights vs the F32 reference: %.2e of the largest (bound 2e-03)\n",
                   name, rel);
        }
        free(got);
        clf_tensor_free(ids);
        clf_tensor_free(lg);
        if (cache) { /* incremental steps on the F16 cache: one token at a time after 4 */
            CLF_OK(clf_lm_state_reset(s));
            int32_t part[8];
            for (int b = 0; b < 2; b++)
                memcpy(part + 4 * b, r.ids + 9 * b, 4 * sizeof(int32_t));
            ids = ids_tensor(2, 4, part);
            lg = tensor_poisoned(CLF_F32, 2, os);
            CLF_OK(clf_lm_state_step(s, ids, NULL, lg));
            clf_tensor_free(ids);
            for (int t = 4; t < 9; t++) {
                int32_t one[2] = {r.ids[t], r.ids[9 + t]};
                ids = ids_tensor(2, 1, one);
                CLF_OK(clf_lm_state_step(s, ids, NULL, lg));
                got = tensor_to_host(lg);
                for (int b = 0; b < 2; b++)
                    check_logits_tol("F16 cache, incremental step", name, got + b * V,
                                     want + (b * 9 + t) * V, V, r.scale, tol);
                free(got);
                clf_tensor_free(ids);
            }
            clf_tensor_free(lg);
        }
        clf_lm_state_free(s);
        free(want);
        free(r.logits);
        clf_lm_free(m);
    }
}

/* One model alone (llama_gqa: grouped-query, tied head, head_dim != d / H), for the Oclgrind
 * label. */
static void test_f16_one(void **state) {
    (void)state;
    f16_case(2);
}

static void test_f16_storage(void **state) {
    (void)state;
    for (size_t mi = 0; mi < N_MODELS; mi++)
        f16_case(mi);
    /* bad dtypes are refused */
    char dir[1024];
    model_dir("llama", dir, sizeof(dir));
    clf_load_params p = clf_load_default_params();
    p.cache_dtype = CLF_I32;
    clf_lm *m = NULL;
    assert_int_equal(clf_lm_load_with(g_ctx, dir, &p, &m), CLF_ERROR_INVALID_ARGUMENT);
    assert_null(m);
    assert_non_null(strstr(clf_context_last_error(g_ctx), "cache_dtype"));
}

/* A step of the batch s of two on ids (2, T) taking n[b] of sequence b's, and of each alone[b] on
 * its n[b] ids (none where n[b] is 0): each sequence's last logits (lg (2, V)) equal its own
 * (lg1 (1, V)). */
static void step_vs_alone(const char *what, const char *name, const ref *r, clf_lm_state *s,
                          clf_lm_state **alone, const int32_t *ids, int64_t T, const int64_t *n,
                          clf_tensor *lg, clf_tensor *lg1) {
    const int64_t V = lg->shape[1];
    clf_tensor *t = ids_tensor(2, T, ids);
    CLF_OK(clf_lm_state_step(s, t, n, lg));
    clf_tensor_free(t);
    float *got = tensor_to_host(lg);
    for (int b = 0; b < 2; b++) {
        if (!n[b]) continue;
        clf_tensor *one = ids_tensor(1, n[b], ids + b * T);
        CLF_OK(clf_lm_state_step(alone[b], one, NULL, lg1));
        clf_tensor_free(one);
        float *want = tensor_to_host(lg1);
        check_logits(what, name, got + b * V, want, V, r->scale);
        free(want);
    }
    free(got);
}

/* Two prompts of 9 and 5 tokens in one batch (right-padded, n_new 9 and 5), then steps where one
 * sequence advances and the other waits: each sequence's logits equal its run alone (B = 1), and
 * the prefill's equal the reference. The last step fills sequence 0 to the state's max_len with a
 * padding row past it (which must not be stored: it would land in sequence 1's cache). */
static void batch_of_lengths_case(const char *name, clf_lm *m, const clf_lm_info *info,
                                  const ref *r) {
    const int64_t V = info->vocab_size;
    clf_lm_state *s = NULL, *alone[2] = {NULL, NULL};
    CLF_OK(clf_lm_state_create(m, 2, 12, &s));
    int32_t pad[18];
    memcpy(pad, r->prompt0, sizeof(r->prompt0));
    memcpy(pad + 9, r->prompt1, sizeof(r->prompt1));
    for (int i = 14; i < 18; i++)
        pad[i] = 3; /* padding, never used */
    const int64_t n_new[2] = {9, 5};
    int64_t os[2] = {2, V}, o1[2] = {1, V};
    clf_tensor *ids = ids_tensor(2, 9, pad), *lg = tensor_poisoned(CLF_F32, 2, os);
    clf_tensor *lg1 = tensor_poisoned(CLF_F32, 2, o1);
    CLF_OK(clf_lm_state_step(s, ids, n_new, lg));
    float *got = tensor_to_host(lg);
    check_logits("batched prefill, sequence 0", name, got, r->logits + 8 * V, V, r->scale);
    check_logits("batched prefill, sequence 1", name, got + V, r->logits + (9 + 4) * V, V,
                 r->scale);
    free(got);
    clf_tensor_free(ids);
    assert_int_equal(clf_lm_state_length(s, 1), 5);
    /* each alone */
    for (int b = 0; b < 2; b++) {
        CLF_OK(clf_lm_state_create(m, 1, 20, &alone[b]));
        clf_tensor *one = ids_tensor(1, (int64_t)n_new[b], b ? r->prompt1 : r->prompt0);
        CLF_OK(clf_lm_state_step(alone[b], one, NULL, lg1));
        clf_tensor_free(one);
    }
    /* steps: both, only sequence 1, both */
    const int64_t adv[3][2] = {{1, 1}, {0, 1}, {1, 1}};
    for (int st = 0; st < 3; st++) {
        int32_t tok[2] = {(int32_t)(17 + st), (int32_t)(40 + 3 * st)};
        step_vs_alone("batch vs alone", name, r, s, alone, tok, 1, adv[st], lg, lg1);
    }
    assert_int_equal(clf_lm_state_length(s, 0), 11);
    assert_int_equal(clf_lm_state_length(s, 1), 8);
    /* sequence 0 one token (to max_len 12, its padding row at position 12), sequence 1 two */
    const int32_t two[4] = {23, 3, 51, 52};
    const int64_t last[2] = {1, 2};
    step_vs_alone("batch vs alone at max_len", name, r, s, alone, two, 2, last, lg, lg1);
    assert_int_equal(clf_lm_state_length(s, 0), 12);
    clf_tensor_free(lg);
    clf_tensor_free(lg1);
    clf_lm_state_free(s);
    clf_lm_state_free(alone[0]);
    clf_lm_state_free(alone[1]);
}

static void test_batch_of_lengths(void **state) {
    (void)state;
    for_each_model(batch_of_lengths_case);
}

/* Greedy generation of 20 tokens for both prompts at once equals transformers' greedy ids; without
 * ignore_eos it stops at the config's eos id (not stored). */
static void greedy_case(const char *name, clf_lm *m, const clf_lm_info *info, const ref *r) {
    check_ref_greedy(name, m, r, -1);
    assert_int_equal(info->n_eos, 1);
    check_ref_greedy(name, m, r, info->eos[0]);
    int64_t stop = 0;
    while (stop < 20 && r->greedy0[stop] != info->eos[0])
        stop++;
    assert_true(stop < 20); /* the fixture's eos appears in greedy0 */
}

static void test_greedy(void **state) {
    (void)state;
    for_each_model(greedy_case);
}

static int stop_after_3(void *user, int64_t seq, int32_t token) {
    int *seen = user;
    (void)token;
    return ++seen[seq] >= 3;
}

/* Sampling: the same seed gives the same tokens; top_k 1 and a tiny top_p are greedy; a callback
 * can stop a sequence; the repetition penalty changes greedy output and keeps ids in range. */
static void test_sampling(void **state) {
    (void)state;
    clf_lm_info info;
    clf_lm *m = load_model("llama_gqa", &info);
    ref r;
    load_ref("llama_gqa", info.vocab_size, &r);
    const int32_t *prompts[2] = {r.prompt0, r.prompt1};
    const int64_t lens[2] = {9, 5};
    int32_t a[40], b[40];
    int64_t ca[2], cb[2];
    clf_generate_params gp = clf_generate_default_params();
    gp.max_new_tokens = 20;
    gp.ignore_eos = 1;
    gp.sampling.temperature = 1.5f;
    gp.sampling.top_k = 50;
    gp.sampling.top_p = 0.95f;
    gp.sampling.seed = 7;
    CLF_OK(clf_lm_generate(m, prompts, lens, 2, &gp, a, ca));
    CLF_OK(clf_lm_generate(m, prompts, lens, 2, &gp, b, cb));
    assert_memory_equal(a, b, sizeof(a));
    gp.sampling.seed = 8;
    CLF_OK(clf_lm_generate(m, prompts, lens, 2, &gp, b, cb));
    assert_true(memcmp(a, b, sizeof(a)) != 0); /* 40 draws at temperature 1.5 */
    for (int i = 0; i < 40; i++)
        assert_true(a[i] >= 0 && a[i] < info.vocab_size);
    for (int mode = 0; mode < 2; mode++) { /* top_k 1, then top_p 1e-6: both greedy */
        gp.sampling.top_k = mode == 0 ? 1 : 0;
        gp.sampling.top_p = mode == 0 ? 1.0f : 1e-6f;
        CLF_OK(clf_lm_generate(m, prompts, lens, 2, &gp, a, ca));
        assert_memory_equal(a, r.greedy0, sizeof(r.greedy0));
        assert_memory_equal(a + 20, r.greedy1, sizeof(r.greedy1));
    }
    gp.sampling = clf_sampling_default_params();
    gp.sampling.repetition_penalty = 1.3f; /* greedy on the host, repeats discouraged */
    CLF_OK(clf_lm_generate(m, prompts, lens, 2, &gp, a, ca));
    assert_true(memcmp(a, r.greedy0, sizeof(r.greedy0)) != 0);
    int seen[2] = {0, 0};
    gp.on_token = stop_after_3;
    gp.user = seen;
    CLF_OK(clf_lm_generate(m, prompts, lens, 2, &gp, a, ca));
    assert_int_equal(ca[0], 3);
    assert_int_equal(ca[1], 3);
    assert_int_equal(a[3], -1);
    free(r.logits);
    clf_lm_free(m);
}

/* Where the device refuses the sampler (a loop budget as llvmpipe's), generation picks tokens on
 * the host by the same rule: the same seed gives the same tokens. */
static void sampled(int32_t tokens[40]) {
    clf_lm_info info;
    clf_lm *m = load_model("llama_gqa", &info);
    ref r;
    load_ref("llama_gqa", info.vocab_size, &r);
    const int32_t *prompts[2] = {r.prompt0, r.prompt1};
    const int64_t lens[2] = {9, 5};
    int64_t counts[2];
    clf_generate_params gp = clf_generate_default_params();
    gp.max_new_tokens = 20;
    gp.ignore_eos = 1;
    gp.sampling.temperature = 1.2f;
    gp.sampling.top_k = 40;
    gp.sampling.top_p = 0.9f;
    gp.sampling.repetition_penalty = 1.2f;
    gp.sampling.seed = 11;
    CLF_OK(clf_lm_generate(m, prompts, lens, 2, &gp, tokens, counts));
    free(r.logits);
    clf_lm_free(m);
}

static int32_t g_device_tokens[40];
static void sample_fallback_body(void **state) {
    (void)state;
    int32_t host[40];
    sampled(host);
    assert_memory_equal(host, g_device_tokens, sizeof(host));
}

static void test_sampling_host_fallback(void **state) {
    sampled(g_device_tokens);
    harness_under_loop_budget(sample_fallback_body, state, 2000);
}

/* Folders clformer cannot run, and bad calls: clear errors, nothing changed. */
static void test_bad_input(void **state) {
    (void)state;
    clf_lm *m = NULL;
    assert_int_equal(clf_lm_load(g_ctx, "/nonexistent/model", &m), CLF_ERROR_IO);
    assert_non_null(strstr(clf_context_last_error(g_ctx), "config.json"));
    char dir[] = "/tmp/clf-lm-test-XXXXXX", path[256];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/config.json", dir);
    harness_write_file(path, "{\"architectures\": [\"BertModel\"]}");
    assert_int_equal(clf_lm_load(g_ctx, dir, &m), CLF_ERROR_UNSUPPORTED);
    assert_non_null(strstr(clf_context_last_error(g_ctx), "BertModel"));
    harness_write_file(path,
                       "{\"architectures\": [\"LlamaForCausalLM\"], \"vocab_size\": 10, "
                       "\"hidden_size\": 8, \"intermediate_size\": 8, \"num_hidden_layers\": 1, "
                       "\"num_attention_heads\": 2, \"hidden_act\": \"gelu\"}");
    assert_int_equal(clf_lm_load(g_ctx, dir, &m), CLF_ERROR_UNSUPPORTED);
    assert_non_null(strstr(clf_context_last_error(g_ctx), "hidden_act"));
    harness_write_file(path,
                       "{\"architectures\": [\"LlamaForCausalLM\"], \"vocab_size\": 10, "
                       "\"hidden_size\": 8, \"intermediate_size\": 8, \"num_hidden_layers\": 1, "
                       "\"num_attention_heads\": 2, \"rope_scaling\": {\"rope_type\": \"yarn\", "
                       "\"factor\": 4}}");
    assert_int_equal(clf_lm_load(g_ctx, dir, &m), CLF_ERROR_UNSUPPORTED);
    assert_non_null(strstr(clf_context_last_error(g_ctx), "yarn"));
    harness_write_file(path,
                       "{\"architectures\": [\"LlamaForCausalLM\"], \"vocab_size\": 10, "
                       "\"hidden_size\": 8, \"intermediate_size\": 8, \"num_hidden_layers\": 1}");
    assert_int_equal(clf_lm_load(g_ctx, dir, &m), CLF_ERROR_BAD_FORMAT);
    assert_non_null(strstr(clf_context_last_error(g_ctx), "num_attention_heads"));
    harness_write_file(path,
                       "{\"architectures\": [\"LlamaForCausalLM\"], \"vocab_size\": 10, "
                       "\"hidden_size\": 8, \"intermediate_size\": 8, \"num_hidden_layers\": 1, "
                       "\"num_attention_heads\": 2}"); /* no weights */
    assert_int_equal(clf_lm_load(g_ctx, dir, &m), CLF_ERROR_IO);
    assert_non_null(strstr(clf_context_last_error(g_ctx), "model.safetensors"));
    assert_null(m);
    remove(path);
    rmdir(dir);

    clf_lm_info info;
    m = load_model("llama_gqa", &info);
    clf_lm_state *s = NULL;
    assert_int_equal(clf_lm_state_create(m, 0, 8, &s), CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_lm_state_create(m, 1, info.max_positions + 1, &s),
                     CLF_ERROR_INVALID_ARGUMENT);
    CLF_OK(clf_lm_state_create(m, 2, 6, &s));
    int32_t ids[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    int64_t os[2] = {2, info.vocab_size}, bad[2] = {2, 5};
    clf_tensor *t4 = ids_tensor(2, 4, ids), *t3 = ids_tensor(1, 4, ids);
    clf_tensor *lg = tensor_poisoned(CLF_F32, 2, os), *lbad = tensor_poisoned(CLF_F32, 2, bad);
    assert_int_equal(clf_lm_state_step(s, t3, NULL, lg), CLF_ERROR_SHAPE_MISMATCH);
    assert_int_equal(clf_lm_state_step(s, t4, NULL, lbad), CLF_ERROR_SHAPE_MISMATCH);
    const int64_t over[2] = {5, 1}, neg[2] = {-1, 1};
    assert_int_equal(clf_lm_state_step(s, t4, over, lg), CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_lm_state_step(s, t4, neg, lg), CLF_ERROR_INVALID_ARGUMENT);
    CLF_OK(clf_lm_state_step(s, t4, NULL, lg));
    assert_int_equal(clf_lm_state_step(s, t4, NULL, lg), CLF_ERROR_SIZE_LIMIT); /* 8 > 6 */
    assert_int_equal(clf_lm_state_length(s, 0), 4);
    assert_int_equal(clf_lm_state_length(s, 5), -1);
    int32_t oor[8] = {1, 2, 3, 4, 5, 6, 7, 9999};
    clf_tensor *to = ids_tensor(2, 1, oor + 6);
    assert_int_equal(clf_lm_state_step(s, to, NULL, lg), CLF_ERROR_OUT_OF_RANGE);
    assert_int_equal(clf_lm_state_length(s, 1), 4);
    /* the same checks with the ids from the host */
    assert_int_equal(clf_lm_state_step_ids(s, oor + 6, 1, NULL, lg), CLF_ERROR_OUT_OF_RANGE);
    assert_non_null(strstr(clf_context_last_error(g_ctx), "9999"));
    assert_int_equal(clf_lm_state_step_ids(s, NULL, 1, NULL, lg), CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_lm_state_step_ids(s, ids, 0, NULL, lg), CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_lm_state_step_ids(s, ids, 1, NULL, lbad), CLF_ERROR_SHAPE_MISMATCH);
    assert_int_equal(clf_lm_state_step_ids(s, ids, 1, over, lg), CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_lm_state_step_ids(s, ids, 3, NULL, lg), CLF_ERROR_SIZE_LIMIT); /* 7 > 6 */
    assert_int_equal(clf_lm_state_step_ids(NULL, ids, 1, NULL, lg), CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_lm_state_length(s, 0), 4);
    assert_int_equal(clf_lm_state_length(s, 1), 4);
    /* generate's checks */
    const int32_t *prompts[1] = {oor};
    int64_t plen[1] = {8}, cnt[1];
    int32_t toks[4];
    clf_generate_params gp = clf_generate_default_params();
    gp.max_new_tokens = 4;
    assert_int_equal(clf_lm_generate(m, prompts, plen, 1, &gp, toks, cnt), CLF_ERROR_OUT_OF_RANGE);
    plen[0] = 0;
    assert_int_equal(clf_lm_generate(m, prompts, plen, 1, &gp, toks, cnt),
                     CLF_ERROR_INVALID_ARGUMENT);
    plen[0] = 3;
    gp.sampling.top_p = 0.0f;
    assert_int_equal(clf_lm_generate(m, prompts, plen, 1, &gp, toks, cnt),
                     CLF_ERROR_INVALID_ARGUMENT);
    gp = clf_generate_default_params();
    gp.max_new_tokens = info.max_positions;
    assert_int_equal(clf_lm_generate(m, prompts, plen, 1, &gp, toks, cnt), CLF_ERROR_SIZE_LIMIT);
    clf_tensor *all[] = {t4, t3, lg, lbad, to};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        clf_tensor_free(all[i]);
    clf_lm_state_free(s);
    clf_lm_free(m);
}

/* A GPT-2 folder whose eos_token_id (50256) lies outside its vocabulary of 700 loads, as in
 * transformers: the eos is dropped with a warning (it can never be generated). */
static void test_eos_outside_vocab(void **state) {
    (void)state;
    char dir[] = "/tmp/clf-lm-eos-XXXXXX", path[1200], src[1024], text[8192];
    assert_non_null(mkdtemp(dir));
    model_dir("gpt2", src, sizeof(src));
    snprintf(path, sizeof(path), "%s/config.json", src);
    char *config = harness_slurp(path);
    assert_non_null(config);
    char *at = strstr(config, "\"eos_token_id\": 263");
    assert_non_null(at);
    snprintf(text, sizeof(text), "%.*s\"eos_token_id\": 50256%s", (int)(at - config), config,
             at + strlen("\"eos_token_id\": 263"));
    free(config);
    snprintf(path, sizeof(path), "%s/config.json", dir);
    harness_write_file(path, text);
    char weights[1200], link[1200];
    snprintf(weights, sizeof(weights), "%s/model.safetensors", src);
    snprintf(link, sizeof(link), "%s/model.safetensors", dir);
    assert_int_equal(symlink(weights, link), 0);
    clf_lm *m = NULL;
    CLF_OK(clf_lm_load(g_ctx, dir, &m));
    clf_lm_info info;
    CLF_OK(clf_lm_get_info(m, &info));
    assert_int_equal(info.n_eos, 0);
    assert_non_null(clf_context_last_warning(g_ctx));
    assert_non_null(strstr(clf_context_last_warning(g_ctx), "50256"));
    clf_lm_free(m);
    remove(link);
    remove(path);
    rmdir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forward_and_incremental),
        cmocka_unit_test(test_batch_of_lengths),
        cmocka_unit_test(test_greedy),
        cmocka_unit_test(test_sampling),
        cmocka_unit_test(test_sampling_host_fallback),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_f16_storage),
        cmocka_unit_test(test_f16_one),
        cmocka_unit_test(test_eos_outside_vocab),
    };
    return HARNESS_RUN("lm", tests);
}
