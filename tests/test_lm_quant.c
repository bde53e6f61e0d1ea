/*
 * test_lm_quant.c — decoder-only LLMs with quantized weights: Hugging Face folders quantized at
 * load (Q8_0, Q4_0) against the same models with their weights' quantize-dequantize round trip,
 * and models from GGUF files (tools/make_lm_gguf_fixtures.py) against their folders, the types
 * kept as stored (a stack of mixed types split by type, a tied head over a quantized table
 * shared with it), and every GGUF fixture with F16 or block-type matrices against itself
 * dequantized; files that are no model clformer runs, refused. The fixtures and the
 * reference are test_lm's (lm_fixtures.h).
 */
#include "lm_fixtures.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A linear weight replaced by its dtype round trip (clf_quantize then clf_dequantize), kept F32. */
static void round_trip(clf_lin *l, clf_dtype t) {
    assert_int_equal(clf_tensor_ndim(l->w), 2); /* linear.PACK off: not packed */
    const int64_t n = clf_tensor_numel(l->w);
    float *h = malloc(sizeof(float) * (size_t)n);
    const size_t bytes = clf_dtype_row_bytes(t, n);
    unsigned char *q = malloc(bytes);
    CLF_OK(clf_tensor_read_f32(l->w, h, n));
    assert_int_equal(clf_quantize(t, h, n, q, bytes, NULL), CLF_SUCCESS);
    assert_int_equal(clf_dequantize(t, q, bytes, h, n, NULL), CLF_SUCCESS);
    CLF_OK(clf_tensor_write_f32(l->w, h, n));
    free(h);
    free(q);
}

/* Weights quantized at load (clf_load_params.weight_dtype Q8_0, Q4_0): the model's logits equal
 * those of the F32 model whose linear weights were replaced by their quantize-dequantize round
 * trip, within 3e-4 of the largest logit (QUANT_TOL): the kernels dequantize exactly, but on CPU
 * panels they multiply x quantized to int16 per 32 (kernels/linear_int.cl: decoding, and from 3
 * rows Q8_0 and Q4_0 where the device has VNNI), each product within sum |w| max|x_32| / 65534,
 * which through these models reaches about 1e-4 of the largest logit (1.02e-4 seen on llama
 * Q4_0); elsewhere they compute in fp32 (1e-6). Against the unquantized reference they move by what
 * quantizing costs (printed; bounded loosely: 5e-2 for Q8_0, 0.5 for Q4_0 on these random tiny
 * models). A model whose weights are not whole blocks (mistral_mqa: an FFN of 112) is refused,
 * naming the weight. */
static void test_quantized_weights(void **state) {
    (void)state;
    static const clf_dtype types[2] = {CLF_Q8_0, CLF_Q4_0};
    static const double loose[2] = {5e-2, 0.5};
    for (size_t mi = 0; mi < N_MODELS; mi++) {
        const char *name = k_models[mi];
        char dir[1024];
        model_dir(name, dir, sizeof(dir));
        for (int ti = 0; ti < 2; ti++) {
            clf_load_params p = clf_load_default_params();
            p.weight_dtype = types[ti];
            clf_lm *m = NULL, *f = NULL;
            const clf_status st = clf_lm_load_with(g_ctx, dir, &p, &m);
            if (strcmp(name, "mistral_mqa") == 0) {
                assert_int_equal(st, CLF_ERROR_SHAPE_MISMATCH);
                assert_null(m);
                assert_non_null(strstr(clf_context_last_error(g_ctx), "multiple of its block"));
                continue;
            }
            CLF_OK(st);
            clf_lm_info info;
            CLF_OK(clf_lm_get_info(m, &info));
            assert_int_equal(info.weight_dtype, types[ti]);
            assert_int_equal(clf_tensor_dtype(m->layers[0].qkv.w), types[ti]); /* as stored */
            assert_int_equal(clf_tensor_dtype(m->layers[info.layers - 1].down.w), types[ti]);
            assert_int_equal(clf_tensor_dtype(m->head.w), types[ti]);
            int64_t pack;
            CLF_OK(clf_context_get_tunable(g_ctx, "linear.PACK", &pack));
            CLF_OK(clf_context_set_tunable(g_ctx, "linear.PACK", 0));
            CLF_OK(clf_lm_load(g_ctx, dir, &f));
            CLF_OK(clf_context_set_tunable(g_ctx, "linear.PACK", pack));
            for (int64_t i = 0; i < info.layers; i++) {
                round_trip(&f->layers[i].qkv, types[ti]);
                round_trip(&f->layers[i].o, types[ti]);
                round_trip(&f->layers[i].up, types[ti]);
                round_trip(&f->layers[i].down, types[ti]);
            }
            if (f->head_shared) { /* unpacked F32: the tied head is the table itself */
                clf_tensor *own = NULL;
                const int64_t n = clf_tensor_numel(f->tok);
                float *h = malloc(sizeof(float) * (size_t)n);
                CLF_OK(clf_tensor_read_f32(f->tok, h, n));
                CLF_OK(clf_tensor_create(g_ctx, CLF_F32, 2, f->tok->shape, &own));
                CLF_OK(clf_tensor_write_f32(own, h, n));
                free(h);
                f->head.w = own;
                f->head_shared = 0;
            }
            round_trip(&f->head, types[ti]);
            const int64_t V = info.vocab_size;
            ref r;
            load_ref(name, V, &r);
            float *got[2];
            clf_lm *both[2] = {m, f};
            for (int k = 0; k < 2; k++) {
                clf_lm_state *s = NULL;
                CLF_OK(clf_lm_state_create(both[k], 2, 16, &s));
                int64_t ls[3] = {2, 9, V};
                clf_tensor *ids = ids_tensor(2, 9, r.ids), *lg = tensor_poisoned(CLF_F32, 3, ls);
                CLF_OK(clf_lm_state_step(s, ids, NULL, lg));
                got[k] = tensor_to_host(lg);
                clf_tensor_free(ids);
                clf_tensor_free(lg);
                clf_lm_state_free(s);
            }
            double scale = 0;
            for (int64_t i = 0; i < 18 * V; i++)
                scale = fmax(scale, fabs((double)got[1][i]));
            const double same = check_logits_tol("quantized weights vs their round trip", name,
                                                 got[0], got[1], 18 * V, scale, QUANT_TOL);
            const double cost = check_logits_tol("quantized weights vs F32", name, got[0], r.logits,
                                                 18 * V, r.scale, loose[ti]);
            printf("%-12s %s weights: within %.2e of the round-tripped F32 model; the "
                   "quantizing moves the logits by %.2e of the largest\n",
                   name, clf_dtype_name(types[ti]), same, cost);
            free(got[0]);
            free(got[1]);
            free(r.logits);
            clf_lm_free(m);
            clf_lm_free(f);
        }
    }
}

/* Models from GGUF files (tools/make_lm_gguf_fixtures.py: the fixtures as llama.cpp's converter
 * writes them): the same logits as from their folders where the weights are the same values
 * (F32 files; Q8_0 projections against the folder loaded as Q8_0: the same blocks, Llama's Q/K
 * permutation undone), and a file of mixed types (quantized embedding, a Q4_0 attn_v beside Q8_0
 * attn_q/attn_k: the stack split by type, nothing converted) within the Q4_0 bound of the F32
 * reference. */
static void gguf_logits(clf_lm *m, const int32_t *ids_host, int64_t V, float **out) {
    clf_lm_state *s = NULL;
    CLF_OK(clf_lm_state_create(m, 2, 16, &s));
    int64_t ls[3] = {2, 9, V};
    clf_tensor *ids = ids_tensor(2, 9, ids_host), *lg = tensor_poisoned(CLF_F32, 3, ls);
    CLF_OK(clf_lm_state_step(s, ids, NULL, lg));
    *out = tensor_to_host(lg);
    clf_tensor_free(ids);
    clf_tensor_free(lg);
    clf_lm_state_free(s);
}

static void test_gguf_models(void **state) {
    (void)state;
    static const struct {
        const char *file, *folder;
        clf_dtype folder_dtype; /* the folder loaded as */
        clf_dtype qkv, o, tok;  /* the GGUF model's types */
        clf_dtype v;            /* attn_v's when the file stores it apart from attn_q, attn_k */
        double tol;             /* against the folder's logits (relative to the largest) */
    } cases[] = {
        {"llama_q8_0", "llama", CLF_Q8_0, CLF_Q8_0, CLF_Q8_0, CLF_F32, (clf_dtype)-1, 1e-6},
        /* rope_freqs divides the frequencies in float, the folder rounds once: 5e-7 seen */
        {"llama_gqa_f32", "llama_gqa", CLF_F32, CLF_F32, CLF_F32, CLF_F32, (clf_dtype)-1, 1e-5},
        {"qwen2_f32", "qwen2", CLF_F32, CLF_F32, CLF_F32, CLF_F32, (clf_dtype)-1, 1e-6},
        {"gpt2_f32", "gpt2", CLF_F32, CLF_F32, CLF_F32, CLF_F32, (clf_dtype)-1, 1e-6},
        /* against the F32 reference: Q4_0's bound of test_quantized_weights; Q | K | V split
         * into Q8_0 q+k and Q4_0 v, each kept in its type */
        {"llama_gqa_mixed", "llama_gqa", (clf_dtype)-1, CLF_Q8_0, CLF_Q4_0, CLF_Q8_0, CLF_Q4_0,
         0.5},
    };
    int64_t pack;
    CLF_OK(clf_context_get_tunable(g_ctx, "linear.PACK", &pack));
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        char path[1200], dir[1024];
        snprintf(path, sizeof(path), "%s/tests/data/lm/gguf/%s.gguf", CLF_SRC, cases[c].file);
        model_dir(cases[c].folder, dir, sizeof(dir));
        clf_lm *g = NULL, *f = NULL;
        CLF_OK(clf_context_set_tunable(g_ctx, "linear.PACK", 0)); /* the types as loaded */
        const clf_status st = clf_lm_load(g_ctx, path, &g);
        CLF_OK(clf_context_set_tunable(g_ctx, "linear.PACK", pack));
        if (st != CLF_SUCCESS) fail_msg("%s: %s", cases[c].file, clf_context_last_error(g_ctx));
        clf_lm_info gi, fi;
        CLF_OK(clf_lm_get_info(g, &gi));
        assert_int_equal(clf_tensor_dtype(g->layers[0].qkv.w), cases[c].qkv);
        assert_int_equal(clf_tensor_dtype(g->layers[1].o.w), cases[c].o);
        assert_int_equal(clf_tensor_dtype(g->tok), cases[c].tok);
        assert_int_equal(gi.weight_dtype, cases[c].qkv);
        const int split = (int)cases[c].v >= 0;
        assert_int_equal(g->layers[0].qkv.n_more, split);
        if (split) {
            assert_int_equal(clf_tensor_dtype(g->layers[0].qkv.more[0].w), cases[c].v);
            assert_int_equal(g->layers[0].qkv.out, (gi.heads + gi.kv_heads) * gi.head_dim);
            assert_int_equal(g->layers[0].qkv.more[0].out, gi.kv_heads * gi.head_dim);
        }
        /* clf_lm_weights: every matrix with its type, in order, the count first */
        int64_t nw = -1;
        CLF_OK(clf_lm_weights(g, NULL, 0, &nw));
        /* a tied head that is the token table itself is not listed again */
        const int64_t want_nw = 1 + (g->pos != NULL) + (4 + split) * gi.layers + !g->head_shared;
        /* shared: only a tied head, always one over a quantized table (never packed) */
        if (!g->cfg.tied) assert_false(g->head_shared);
        if (g->cfg.tied && clf_dtype_block(cases[c].tok) > 1) assert_true(g->head_shared);
        if (g->head_shared) assert_ptr_equal(g->head.w, g->tok);
        assert_int_equal(nw, want_nw);
        clf_lm_weight *ws = malloc(sizeof(clf_lm_weight) * (size_t)(nw + 1));
        memset(ws, 0x5a, sizeof(clf_lm_weight) * (size_t)(nw + 1));
        int64_t got_nw = -1;
        CLF_OK(clf_lm_weights(g, ws, nw + 1, &got_nw));
        assert_int_equal(got_nw, nw);
        assert_string_equal(ws[0].name, "token_embd");
        assert_int_equal(ws[0].dtype, cases[c].tok);
        assert_int_equal(ws[0].bytes, clf_tensor_bytes(g->tok));
        const int64_t l1 = 1 + (g->pos != NULL) + 4 + split; /* blk.1.attn_qkv */
        assert_string_equal(ws[l1].name, split ? "blk.1.attn_q+attn_k" : "blk.1.attn_qkv");
        if (split) {
            assert_string_equal(ws[l1 + 1].name, "blk.1.attn_v");
            assert_int_equal(ws[l1 + 1].dtype, cases[c].v);
        }
        assert_string_equal(ws[l1 + 1 + split].name, "blk.1.attn_output");
        assert_int_equal(ws[l1 + 1 + split].dtype, cases[c].o);
        assert_string_equal(ws[nw - 1].name, g->head_shared ? "blk.1.ffn_down" : "output");
        assert_int_equal(ws[nw].name[0], 0x5a); /* nothing past the count */
        assert_int_equal(clf_lm_weights(g, NULL, 1, &got_nw), CLF_ERROR_INVALID_ARGUMENT);
        free(ws);
        clf_lm_free(g);
        CLF_OK(
            clf_lm_load(g_ctx, path, &g)); /* as a user gets it (packed where the device packs) */
        CLF_OK(clf_lm_get_info(g, &gi));
        ref r;
        load_ref(cases[c].folder, gi.vocab_size, &r);
        const int64_t V = gi.vocab_size, n = 18 * V;
        float *got, *want = r.logits;
        gguf_logits(g, r.ids, V, &got);
        if ((int)cases[c].folder_dtype >= 0) {
            clf_load_params p = clf_load_default_params();
            p.weight_dtype = cases[c].folder_dtype;
            CLF_OK(clf_lm_load_with(g_ctx, dir, &p, &f));
            CLF_OK(clf_lm_get_info(f, &fi));
            assert_string_equal(gi.arch, fi.arch);
            assert_memory_equal(&gi.vocab_size, &fi.vocab_size,
                                sizeof(int64_t) * 8); /* vocab .. max_positions */
            /* (not bos: llama_gqa's tokenizer.json and config.json disagree on it, and the
             * file takes the tokenizer's, as the converter does) */
            assert_int_equal(gi.n_eos, fi.n_eos);
            assert_int_equal(gi.parameters, fi.parameters);
            gguf_logits(f, r.ids, V, &want);
        }
        const double e =
            check_logits_tol("GGUF", cases[c].file, got, want, n, r.scale, cases[c].tol);
        printf("%-16s from GGUF: within %.2e of the largest logit of %s\n", cases[c].file, e,
               (int)cases[c].folder_dtype >= 0 ? "its folder's" : "the F32 reference");
        if (want != r.logits) free(want);
        free(got);
        free(r.logits);
        clf_lm_free(g);
        clf_lm_free(f);
    }
}

/* A matrix that is not F32 replaced by its F32 values: clf_dequantize on the host, whose blocks
 * test_dtypes holds to the gguf package's dequantizer (F16 widened exactly). */
static void to_f32(clf_tensor **w) {
    if (!*w || clf_tensor_dtype(*w) == CLF_F32) return;
    assert_int_equal(clf_tensor_ndim(*w), 2); /* linear.PACK off: as stored */
    const int64_t n = clf_tensor_numel(*w);
    const size_t bytes = clf_tensor_bytes(*w);
    unsigned char *q = malloc(bytes);
    float *h = malloc(sizeof(float) * (size_t)n);
    CLF_OK(clf_tensor_read(*w, q, bytes));
    assert_int_equal(clf_dequantize(clf_tensor_dtype(*w), q, bytes, h, n, NULL), CLF_SUCCESS);
    clf_tensor *t = NULL;
    CLF_OK(clf_tensor_create(g_ctx, CLF_F32, 2, (*w)->shape, &t));
    CLF_OK(clf_tensor_write_f32(t, h, n));
    clf_tensor_free(*w);
    *w = t;
    free(q);
    free(h);
}

static void lin_to_f32(clf_lin *l) {
    to_f32(&l->w);
    for (int k = 0; k < l->n_more; k++)
        to_f32(&l->more[k].w);
}

/* The types of m's matrices (clf_lm_weights), each once, as "Q4_K Q6_K" into out. */
static void weight_types(clf_lm *m, char *out, size_t size) {
    int64_t nw = 0;
    CLF_OK(clf_lm_weights(m, NULL, 0, &nw));
    clf_lm_weight *ws = malloc(sizeof(clf_lm_weight) * (size_t)nw);
    CLF_OK(clf_lm_weights(m, ws, nw, &nw));
    out[0] = '\0';
    for (int t = 0; t < 16; t++) /* clf_dtype values, in order */
        for (int64_t i = 0; i < nw; i++)
            if ((int)ws[i].dtype == t) {
                const size_t at = strlen(out);
                snprintf(out + at, size - at, "%s%s", at ? " " : "", clf_dtype_name(ws[i].dtype));
                break;
            }
    free(ws);
}

/* Every GGUF fixture whose matrices are not all F32 (F16, Q8_0, Q4_0 and Q4_K_M-like mixtures
 * per architecture; tools/make_lm_gguf_fixtures.py) against itself with those matrices dequantized
 * on the host and run by the F32 path, which test_lm holds to transformers: the logits of two
 * prompts within 1e-4 of the largest (the F32 bound), and 20 greedy ids identical. The stored
 * types run as a user gets them (packed where the device packs). */
static void test_gguf_dequantized(void **state) {
    (void)state;
    static const struct {
        const char *file, *types; /* the matrices' types */
    } cases[] = {
        {"llama_gqa_f16", "F16"},
        {"llama_q8_0", "F32 Q8_0"},
        {"llama_gqa_mixed", "Q8_0 Q4_0"},
        {"llama_q4_k_m", "Q4_K Q6_K"},
        {"qwen2_f16", "F16"},
        {"qwen2_q4_0", "Q8_0 Q4_0"},
        {"qwen2_q4_k_m", "Q4_K Q6_K"},
        {"gpt2_f16", "F32 F16"},
        {"gpt2_q8_0", "F32 Q8_0"},
        {"gpt2_q4_k_m", "F32 Q4_0 Q6_K"}, /* F32: position_embd */
    };
    int64_t pack;
    CLF_OK(clf_context_get_tunable(g_ctx, "linear.PACK", &pack));
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        char path[1200], types[128];
        snprintf(path, sizeof(path), "%s/tests/data/lm/gguf/%s.gguf", CLF_SRC, cases[c].file);
        clf_lm *g = NULL, *f = NULL;
        CLF_OK(clf_lm_load(g_ctx, path, &g));
        CLF_OK(clf_context_set_tunable(g_ctx, "linear.PACK", 0));
        const clf_status st = clf_lm_load(g_ctx, path, &f);
        CLF_OK(clf_context_set_tunable(g_ctx, "linear.PACK", pack));
        CLF_OK(st);
        weight_types(f, types, sizeof(types));
        if (strcmp(types, cases[c].types) != 0)
            fail_msg("%s: matrices %s, the fixture stores %s", cases[c].file, types,
                     cases[c].types);
        if (f->head_shared) f->head.w = NULL;
        to_f32(&f->tok);
        if (f->head_shared) f->head.w = f->tok;
        lin_to_f32(&f->head);
        for (int64_t i = 0; i < f->cfg.info.layers; i++) {
            lin_to_f32(&f->layers[i].qkv);
            lin_to_f32(&f->layers[i].o);
            lin_to_f32(&f->layers[i].up);
            lin_to_f32(&f->layers[i].down);
        }
        weight_types(f, types, sizeof(types));
        assert_string_equal(types, "F32");
        const int64_t V = f->cfg.info.vocab_size;
        int32_t ids[18];
        uint32_t x = 12345u + (uint32_t)c;
        for (int i = 0; i < 18; i++) {
            x = x * 1664525u + 1013904223u;
            ids[i] = (int32_t)((x >> 8) % (uint32_t)V);
        }
        float *got, *want;
        gguf_logits(g, ids, V, &got);
        gguf_logits(f, ids, V, &want);
        double scale = 0.0;
        for (int64_t i = 0; i < 18 * V; i++)
            scale = fmax(scale, fabs((double)want[i]));
        const double e = check_logits(cases[c].file, "dequantized", got, want, 18 * V, scale);
        const int32_t *prompts[2] = {ids, ids + 9};
        const int64_t lens[2] = {9, 5};
        int32_t tg[40], tf[40];
        int64_t cg[2], cf[2];
        clf_generate_params gp = clf_generate_default_params();
        gp.max_new_tokens = 20;
        gp.ignore_eos = 1;
        CLF_OK(clf_lm_generate(g, prompts, lens, 2, &gp, tg, cg));
        CLF_OK(clf_lm_generate(f, prompts, lens, 2, &gp, tf, cf));
        assert_int_equal(cg[0] + cg[1], 40);
        for (int i = 0; i < 40; i++)
            if (tg[i] != tf[i])
                fail_msg("%s: greedy sequence %d token %d: %d, dequantized %d", cases[c].file,
                         i / 20, i % 20, tg[i], tf[i]);
        printf("%-16s %-10s within %.2e of the largest logit of its dequantized F32 model; 20 "
               "greedy ids x 2 identical\n",
               cases[c].file, cases[c].types, e);
        free(got);
        free(want);
        clf_lm_free(g);
        clf_lm_free(f);
    }
}

/* Every GGUF fixture against transformers in float64 on the file's own weights, dequantized by
 * the gguf package (tools/make_lm_gguf_refs.py: <name>.reference.safetensors): the logits of two
 * 9-token prompts within 1e-4 of the largest (the F32 bound; clformer dequantizes exactly and
 * computes in fp32), and 20 greedy ids after each of two prompts identical. The model is loaded
 * as a user gets it (packed where the device packs). */
static void test_gguf_reference(void **state) {
    (void)state;
    static const char *const files[] = {
        "gpt2_f16",      "gpt2_f32",      "gpt2_q4_k_m",     "gpt2_q8_0",    "llama_deep_q4_0",
        "llama_gqa_f16", "llama_gqa_f32", "llama_gqa_mixed", "llama_q4_k_m", "llama_q8_0",
        "qwen2_f16",     "qwen2_f32",     "qwen2_q4_0",      "qwen2_q4_k_m",
    };
    for (size_t c = 0; c < sizeof(files) / sizeof(files[0]); c++) {
        char path[1200], rpath[1200];
        snprintf(path, sizeof(path), "%s/tests/data/lm/gguf/%s.gguf", CLF_SRC, files[c]);
        snprintf(rpath, sizeof(rpath), "%s/tests/data/lm/gguf/%s.reference.safetensors", CLF_SRC,
                 files[c]);
        clf_lm *m = NULL;
        if (clf_lm_load(g_ctx, path, &m) != CLF_SUCCESS)
            fail_msg("%s: %s", files[c], clf_context_last_error(g_ctx));
        clf_lm_info info;
        CLF_OK(clf_lm_get_info(m, &info));
        const int64_t V = info.vocab_size;
        ref r;
        load_ref_file(rpath, V, &r);
        float *got;
        gguf_logits(m, r.ids, V, &got);
        const double e = check_logits("transformers f64", files[c], got, r.logits, 18 * V, r.scale);
        check_ref_greedy(files[c], m, &r, -1);
        printf("%-16s within %.2e of the largest logit of transformers (float64, its weights "
               "dequantized by gguf); 20 greedy ids x 2 identical\n",
               files[c], e);
        free(got);
        free(r.logits);
        clf_lm_free(m);
    }
}

/* Files that are not models clformer runs: refused with a message, nothing returned. */
static void test_gguf_refused(void **state) {
    (void)state;
    static const struct {
        const char *path; /* under tests/data */
        clf_status st;
        const char *says;
    } cases[] = {
        {"gguf/reader.gguf", CLF_ERROR_BAD_FORMAT, "token_embd.weight"}, /* metadata only */
        {"lm/llama/config.json", CLF_ERROR_BAD_FORMAT, "GGUF"},          /* not GGUF */
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        char path[1200];
        snprintf(path, sizeof(path), "%s/tests/data/%s", CLF_SRC, cases[c].path);
        clf_lm *m = (clf_lm *)&m;
        assert_int_equal(clf_lm_load(g_ctx, path, &m), cases[c].st);
        assert_null(m);
        if (!strstr(clf_context_last_error(g_ctx), cases[c].says))
            fail_msg("%s: \"%s\" does not say %s", cases[c].path, clf_context_last_error(g_ctx),
                     cases[c].says);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantized_weights), cmocka_unit_test(test_gguf_models),
        cmocka_unit_test(test_gguf_dequantized),  cmocka_unit_test(test_gguf_reference),
        cmocka_unit_test(test_gguf_refused),
    };
    return HARNESS_RUN("lm_quant", tests);
}
