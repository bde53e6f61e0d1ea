/*
 * lm_config.c — a Hugging Face folder of a causal language model: config.json read and checked
 * (the fields each family's forward depends on; anything that would change the math and is not
 * computed here is refused by name), the rotary frequencies after rope scaling, and the weight
 * files (model.safetensors, or the shards of model.safetensors.index.json).
 */
#include "lm.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const cJSON *clf__hf_field(const cJSON *c, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, key);
    return cJSON_IsNull(v) ? NULL : v;
}

double clf__hf_num(const cJSON *c, const char *key, double fallback) {
    const cJSON *v = clf__hf_field(c, key);
    return cJSON_IsNumber(v) ? v->valuedouble : fallback;
}

int clf__hf_bool(const cJSON *c, const char *key, int fallback) {
    const cJSON *v = clf__hf_field(c, key);
    return cJSON_IsBool(v) ? cJSON_IsTrue(v) : fallback;
}

const char *clf__hf_str(const cJSON *c, const char *key, const char *fallback) {
    const cJSON *v = clf__hf_field(c, key);
    return cJSON_IsString(v) ? v->valuestring : fallback;
}

/* A size field: required (positive integer) or 0 when absent and optional. */
clf_status clf__hf_size(clf_context *ctx, const cJSON *c, const char *key, int required,
                        int64_t *out) {
    *out = clf__json_int(c, key);
    if (*out == 0 && (required || clf__hf_field(c, key)))
        return clf__fail(ctx, CLF_ERROR_BAD_FORMAT,
                         "config.json: \"%s\" must be a positive integer%s", key,
                         clf__hf_field(c, key) ? "" : " (missing)");
    return CLF_SUCCESS;
}

/* bos_token_id (int or null) and eos_token_id (int, list or null). */
clf_status clf__hf_special_ids(clf_context *ctx, const cJSON *c, clf_lm_info *info,
                               int32_t fallback) {
    const cJSON *bos = clf__hf_field(c, "bos_token_id"), *eos = clf__hf_field(c, "eos_token_id");
    info->bos = cJSON_IsNumber(bos) ? (int32_t)bos->valuedouble : fallback;
    info->n_eos = 0;
    if (cJSON_IsNumber(eos)) {
        info->eos[info->n_eos++] = (int32_t)eos->valuedouble;
    } else if (cJSON_IsArray(eos)) {
        const cJSON *e;
        cJSON_ArrayForEach(e, eos) {
            if (!cJSON_IsNumber(e) || info->n_eos == CLF_LM_MAX_EOS)
                return clf__fail(ctx, CLF_ERROR_UNSUPPORTED,
                                 "config.json: eos_token_id must be integers, at most %d",
                                 CLF_LM_MAX_EOS);
            info->eos[info->n_eos++] = (int32_t)e->valuedouble;
        }
    } else if (fallback >= 0) {
        info->eos[info->n_eos++] = fallback;
    }
    clf__lm_drop_bad_eos(ctx, info, "config.json");
    return CLF_SUCCESS;
}

void clf__lm_drop_bad_eos(clf_context *ctx, clf_lm_info *info, const char *source) {
    /* An eos outside the vocabulary can never be generated (transformers runs such a model, as
     * tiny test GPT-2s ship with 50256 over a smaller vocabulary): dropped, with a warning. */
    int kept = 0;
    for (int i = 0; i < info->n_eos; i++) {
        if (info->eos[i] >= 0 && info->eos[i] < info->vocab_size) {
            info->eos[kept++] = info->eos[i];
            continue;
        }
        clf__warn(ctx,
                  "%s: eos token %d is outside the vocabulary of %lld: never generated, so "
                  "generation stops only at max_new_tokens for it",
                  source, (int)info->eos[i], (long long)info->vocab_size);
    }
    info->n_eos = kept;
}

clf_status clf__lm_check_heads(clf_context *ctx, const clf_lm_info *in, const char *source) {
    if (in->heads % in->kv_heads || in->head_dim % 2 || in->head_dim > 256)
        return clf__fail(ctx, CLF_ERROR_UNSUPPORTED,
                         "%s: %lld K/V heads must divide %lld query heads, and the head size "
                         "%lld be even and at most 256",
                         source, (long long)in->kv_heads, (long long)in->heads,
                         (long long)in->head_dim);
    return CLF_SUCCESS;
}

/* HF's default rotary frequencies in float32 (1 / base^(2i / dim)), then the scaling. The
 * parameters are "rope_parameters" (transformers 5: rope_theta and the scaling in one object) or
 * "rope_theta" and "rope_scaling" (transformers 4). */
clf_status clf__hf_rope(clf_context *ctx, const cJSON *c, clf_lm_config *k) {
    const int64_t dh = k->info.head_dim, n = dh / 2;
    const cJSON *rp = clf__hf_field(c, "rope_parameters");
    const double theta =
        clf__hf_num(rp ? rp : c, "rope_theta", clf__hf_num(c, "rope_theta", 10000.0));
    if (!(theta > 1.0) || !isfinite(theta))
        return clf__fail(ctx, CLF_ERROR_BAD_FORMAT, "config.json: rope_theta %g must be > 1",
                         theta);
    if (clf__hf_num(c, "partial_rotary_factor", 1.0) != 1.0)
        return clf__fail(ctx, CLF_ERROR_UNSUPPORTED,
                         "config.json: partial_rotary_factor is not supported");
    k->inv_freq = malloc(sizeof(float) * (size_t)n);
    if (!k->inv_freq) return clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
    for (int64_t i = 0; i < n; i++)
        k->inv_freq[i] = 1.0f / powf((float)theta, (float)(2 * i) / (float)dh);
    const cJSON *rs = rp ? rp : clf__hf_field(c, "rope_scaling");
    if (!rs) return CLF_SUCCESS;
    const char *type = clf__hf_str(rs, "rope_type", clf__hf_str(rs, "type", "default"));
    const double factor = clf__hf_num(rs, "factor", 1.0);
    if (strcmp(type, "default") == 0) return CLF_SUCCESS;
    if (!(factor > 0.0))
        return clf__fail(ctx, CLF_ERROR_BAD_FORMAT, "config.json: rope_scaling factor %g", factor);
    if (strcmp(type, "linear") == 0) {
        for (int64_t i = 0; i < n; i++)
            k->inv_freq[i] = (float)(k->inv_freq[i] / factor);
        return CLF_SUCCESS;
    }
    if (strcmp(type, "llama3") == 0) { /* Llama 3.1's: long wavelengths slowed by factor */
        const double lo = clf__hf_num(rs, "low_freq_factor", 1.0),
                     hi = clf__hf_num(rs, "high_freq_factor", 4.0);
        const double old = clf__hf_num(rs, "original_max_position_embeddings", 8192.0);
        if (!(hi > lo))
            return clf__fail(
                ctx, CLF_ERROR_BAD_FORMAT,
                "config.json: rope_scaling high_freq_factor must exceed low_freq_factor");
        const double lo_wl = old / lo, hi_wl = old / hi;
        for (int64_t i = 0; i < n; i++) {
            const double f = k->inv_freq[i], wl = 6.283185307179586476925 / f;
            double g = wl > lo_wl ? f / factor : f;
            if (!(wl < hi_wl) && !(wl > lo_wl)) {
                const double s = (old / wl - lo) / (hi - lo);
                g = (1.0 - s) * g / factor + s * g;
            }
            k->inv_freq[i] = (float)g;
        }
        return CLF_SUCCESS;
    }
    return clf__fail(ctx, CLF_ERROR_UNSUPPORTED,
                     "config.json: rope_scaling type \"%s\" is not supported (default, linear, "
                     "llama3 are)",
                     type);
}

clf_status clf__lm_read_config(clf_context *ctx, const char *dir, clf_lm_config *k) {
    memset(k, 0, sizeof(*k));
    clf_status st = CLF_SUCCESS;
    cJSON *c = clf__read_json(ctx, dir, "config.json", 1, &st);
    if (!c) return st;
    const cJSON *archs = clf__hf_field(c, "architectures");
    const cJSON *a0 = cJSON_IsArray(archs) ? cJSON_GetArrayItem(archs, 0) : NULL;
    const char *name = cJSON_IsString(a0) ? a0->valuestring : NULL;
    const clf_lm_arch *a = name ? clf__lm_arch_find(name, strlen(name), 0) : NULL;
    if (!a) {
        char list[256];
        st = clf__fail(ctx, CLF_ERROR_UNSUPPORTED,
                       "%s/config.json: architecture %s%s%s is not supported (%s are)", dir,
                       name ? "\"" : "", name ? name : "(none given)", name ? "\"" : "",
                       clf__lm_arch_list(0, list, sizeof(list)));
    } else {
        snprintf(k->info.arch, sizeof(k->info.arch), "%s", name);
        k->arch = a;
        st = a->parse_hf(ctx, c, k);
        if (st == CLF_SUCCESS && !(k->norm_eps > 0.0f))
            st = clf__fail(ctx, CLF_ERROR_BAD_FORMAT, "config.json: the norm eps must be > 0");
        if (st == CLF_SUCCESS && k->info.max_positions > (1 << 24))
            st = clf__fail(ctx, CLF_ERROR_UNSUPPORTED, "config.json: over 2^24 positions");
    }
    cJSON_Delete(c);
    if (st != CLF_SUCCESS) clf__lm_config_free(k);
    return st;
}

void clf__lm_config_free(clf_lm_config *k) {
    free(k->inv_freq);
    k->inv_freq = NULL;
}

/* ---------------------------------------------------------------- weight files */

void clf__lm_files_free(clf_lm_files *f) {
    for (size_t i = 0; i < f->n; i++)
        clf_safetensors_free(f->st[i]);
    free(f->st);
    f->st = NULL;
    f->n = 0;
}

static clf_status open_one(clf_context *ctx, const char *dir, const char *name, clf_lm_files *f) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    clf_safetensors **grown = realloc(f->st, (f->n + 1) * sizeof(*grown));
    if (!grown) return clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
    f->st = grown;
    clf_error err;
    clf_status st = clf_safetensors_open(path, &f->st[f->n], &err);
    if (st != CLF_SUCCESS) return clf__fail(ctx, st, "%s", err.message);
    f->n++;
    return CLF_SUCCESS;
}

clf_status clf__lm_open_files(clf_context *ctx, const char *dir, clf_lm_files *f) {
    memset(f, 0, sizeof(*f));
    clf_status st = CLF_SUCCESS;
    cJSON *idx = clf__read_json(ctx, dir, "model.safetensors.index.json", 0, &st);
    if (st != CLF_SUCCESS) return st;
    if (!idx) return open_one(ctx, dir, "model.safetensors", f);
    const cJSON *map = cJSON_GetObjectItemCaseSensitive(idx, "weight_map"), *e;
    if (!cJSON_IsObject(map))
        st = clf__fail(ctx, CLF_ERROR_BAD_FORMAT,
                       "%s/model.safetensors.index.json: no weight_map object", dir);
    /* Each distinct shard once, in the order first named. */
    char **seen = NULL;
    size_t n_seen = 0;
    const cJSON *list = st == CLF_SUCCESS ? map : NULL;
    cJSON_ArrayForEach(e, list) {
        if (!cJSON_IsString(e) || strchr(e->valuestring, '/')) {
            st = clf__fail(ctx, CLF_ERROR_BAD_FORMAT,
                           "model.safetensors.index.json: \"%s\" must name a file of the folder",
                           e->string ? e->string : "?");
            break;
        }
        size_t j = 0;
        while (j < n_seen && strcmp(seen[j], e->valuestring) != 0)
            j++;
        if (j < n_seen) continue;
        char **g = realloc(seen, (n_seen + 1) * sizeof(*g));
        if (!g) {
            st = clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
            break;
        }
        seen = g;
        seen[n_seen++] = e->valuestring;
        if ((st = open_one(ctx, dir, e->valuestring, f)) != CLF_SUCCESS) break;
    }
    free(seen);
    cJSON_Delete(idx);
    if (st == CLF_SUCCESS && f->n == 0)
        st = clf__fail(ctx, CLF_ERROR_BAD_FORMAT, "model.safetensors.index.json lists no file");
    if (st != CLF_SUCCESS) clf__lm_files_free(f);
    return st;
}
