/*
 * lm_fixtures.c — see lm_fixtures.h.
 */
#include "lm_fixtures.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

const char *const k_models[N_MODELS] = {"gpt2", "llama", "llama_gqa", "qwen2", "mistral_mqa"};

void model_dir(const char *name, char *out, size_t size) {
    snprintf(out, size, "%s/tests/data/lm/%s", CLF_SRC, name);
}

static void read_i32(const clf_safetensors *st, const char *name, int32_t *dst, int64_t n) {
    clf_error err;
    if (clf_safetensors_read_i32(st, name, dst, n, &err) != CLF_SUCCESS)
        fail_msg("reference %s: %s", name, err.message);
}

void load_ref(const char *name, int64_t V, ref *r) {
    char dir[1024], path[1200];
    model_dir(name, dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/reference.safetensors", dir);
    load_ref_file(path, V, r);
}

void load_ref_file(const char *path, int64_t V, ref *r) {
    clf_safetensors *st = NULL;
    clf_error err;
    if (clf_safetensors_open(path, &st, &err) != CLF_SUCCESS) fail_msg("%s", err.message);
    read_i32(st, "ids", r->ids, 18);
    read_i32(st, "prompt0", r->prompt0, 9);
    read_i32(st, "prompt1", r->prompt1, 5);
    read_i32(st, "greedy0", r->greedy0, 20);
    read_i32(st, "greedy1", r->greedy1, 20);
    r->logits = malloc(sizeof(float) * (size_t)(18 * V));
    if (clf_safetensors_read_f32(st, "logits", r->logits, 18 * V, &err) != CLF_SUCCESS)
        fail_msg("%s", err.message);
    r->scale = 0;
    for (int64_t i = 0; i < 18 * V; i++)
        r->scale = fmax(r->scale, fabs((double)r->logits[i]));
    clf_safetensors_free(st);
}

clf_lm *load_model(const char *name, clf_lm_info *info) {
    char dir[1024];
    model_dir(name, dir, sizeof(dir));
    clf_lm *m = NULL;
    CLF_OK(clf_lm_load(g_ctx, dir, &m));
    CLF_OK(clf_lm_get_info(m, info));
    return m;
}

/* got (n) against want (n) (float64 values stored as F32): within tol (relative) of the largest.
 * Returns the worst error relative to the largest logit. */
double check_logits_tol(const char *what, const char *model, const float *got, const float *want,
                        int64_t n, double scale, double tol) {
    double worst = 0;
    int64_t at = 0;
    for (int64_t i = 0; i < n; i++) {
        const double e = fabs((double)got[i] - (double)want[i]);
        if (!(e <= worst)) { /* NaN counts as worst */
            worst = isnan(e) ? INFINITY : e;
            at = i;
        }
    }
    if (!(worst <= tol * scale))
        fail_msg("%s %s: logit %lld got %.7g want %.7g (|err| %.3g > %.0e x %.3g)", model, what,
                 (long long)at, (double)got[at], (double)want[at], worst, tol, scale);
    return worst / scale;
}

/* The bound of the F32 tests: 1e-4 of the largest logit. */
double check_logits(const char *what, const char *model, const float *got, const float *want,
                    int64_t n, double scale) {
    return check_logits_tol(what, model, got, want, n, scale, 1e-4);
}

clf_tensor *ids_tensor(int64_t b, int64_t t, const int32_t *data) {
    int64_t s[2] = {b, t};
    return tensor_from(CLF_I32, 2, s, data);
}

void check_ref_greedy(const char *name, clf_lm *m, const ref *r, int32_t eos) {
    const int32_t *prompts[2] = {r->prompt0, r->prompt1};
    const int64_t lens[2] = {9, 5};
    int32_t tokens[40];
    int64_t counts[2];
    clf_generate_params gp = clf_generate_default_params();
    gp.max_new_tokens = 20;
    gp.ignore_eos = eos < 0;
    CLF_OK(clf_lm_generate(m, prompts, lens, 2, &gp, tokens, counts));
    const int32_t *want[2] = {r->greedy0, r->greedy1};
    for (int b = 0; b < 2; b++) {
        int64_t stop = 0;
        while (stop < 20 && want[b][stop] != eos)
            stop++;
        assert_int_equal(counts[b], stop);
        for (int t = 0; t < 20; t++) {
            const int32_t w = t < stop ? want[b][t] : -1;
            if (tokens[b * 20 + t] != w)
                fail_msg("%s greedy sequence %d token %d: %d, transformers %d", name, b, t,
                         tokens[b * 20 + t], w);
        }
    }
}
