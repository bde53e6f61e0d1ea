/*
 * sentence.c — sentence-transformers BERT models (all-MiniLM-L6-v2 and its kind): the model
 * folder's configuration, the WordPiece tokenizer, the BERT encoder of model.c (on one context, or
 * split by layers over several: a pipeline whose stages pass (B, N, d) through the host), mean
 * pooling (a strided-batched GEMM with a per-sequence weight row) and L2 normalization.
 */
#include "internal.h"
#include "models/models.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct clf_sentence_model {
    clf_context *ctx; /* the first stage's: every call's error is left here */
    clf_tokenizer *tok;
    clf_encoder *enc;    /* the first stage (the whole encoder on one context) */
    clf_encoder **parts; /* [n_parts]: parts[0] is enc */
    int n_parts;
    clf_transformer_params cfg;
    int64_t max_len;
    int normalize;
};

static clf_status parse_config(clf_context *ctx, const char *dir, clf_sentence_model *m) {
    clf_status st = CLF_SUCCESS;
    cJSON *c = clf__read_json(ctx, dir, "config.json", 1, &st);
    if (!c) return st;
    clf_transformer_params *k = &m->cfg;
    memset(k, 0, sizeof(*k));
    k->arch = CLF_ARCH_BERT;
    k->vocab_size = clf__json_int(c, "vocab_size");
    k->num_hiddens = clf__json_int(c, "hidden_size");
    k->num_heads = clf__json_int(c, "num_attention_heads");
    k->num_layers = clf__json_int(c, "num_hidden_layers");
    k->ffn_num_hiddens = clf__json_int(c, "intermediate_size");
    k->max_len = clf__json_int(c, "max_position_embeddings");
    k->use_bias = 1;
    const cJSON *eps = cJSON_GetObjectItemCaseSensitive(c, "layer_norm_eps");
    k->norm_eps = cJSON_IsNumber(eps) ? (float)eps->valuedouble : 1e-12f;
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(c, "hidden_act");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(c, "model_type");
    const char *a = cJSON_IsString(act) ? act->valuestring : "gelu";
    if (strcmp(a, "gelu") == 0)
        k->ffn_act = CLF_ACT_GELU_ERF;
    else if (strcmp(a, "gelu_new") == 0 || strcmp(a, "gelu_pytorch_tanh") == 0)
        k->ffn_act = CLF_ACT_GELU_TANH;
    else if (strcmp(a, "relu") == 0)
        k->ffn_act = CLF_ACT_RELU;
    else
        st = clf__fail(ctx, CLF_ERROR_UNSUPPORTED, "%s/config.json: hidden_act \"%.40s\"", dir, a);
    if (st == CLF_SUCCESS && (!cJSON_IsString(type) || strcmp(type->valuestring, "bert") != 0))
        st = clf__fail(ctx, CLF_ERROR_UNSUPPORTED, "%s/config.json: model_type must be \"bert\"",
                       dir);
    if (st == CLF_SUCCESS && (!k->vocab_size || !k->num_hiddens || !k->num_heads ||
                              !k->num_layers || !k->ffn_num_hiddens || !k->max_len))
        st = clf__fail(ctx, CLF_ERROR_BAD_FORMAT,
                       "%s/config.json: vocab_size, hidden_size, num_attention_heads, "
                       "num_hidden_layers, intermediate_size and max_position_embeddings must be "
                       "positive integers",
                       dir);
    cJSON_Delete(c);
    if (st != CLF_SUCCESS) return st;
    m->max_len = k->max_len;
    cJSON *sb = clf__read_json(ctx, dir, "sentence_bert_config.json", 0, &st);
    if (sb) {
        const int64_t msl = clf__json_int(sb, "max_seq_length");
        if (msl && msl < m->max_len) m->max_len = msl;
        cJSON_Delete(sb);
    }
    cJSON *pool =
        st == CLF_SUCCESS ? clf__read_json(ctx, dir, "1_Pooling/config.json", 0, &st) : NULL;
    if (pool) {
        const cJSON *mean = cJSON_GetObjectItemCaseSensitive(pool, "pooling_mode_mean_tokens");
        if (!cJSON_IsTrue(mean))
            st = clf__fail(ctx, CLF_ERROR_UNSUPPORTED,
                           "%s/1_Pooling/config.json: only mean pooling is supported", dir);
        cJSON_Delete(pool);
    }
    cJSON *mods = st == CLF_SUCCESS ? clf__read_json(ctx, dir, "modules.json", 0, &st) : NULL;
    if (mods) {
        const cJSON *e;
        cJSON_ArrayForEach(e, mods) {
            const cJSON *t = cJSON_GetObjectItemCaseSensitive(e, "type");
            if (cJSON_IsString(t) && strstr(t->valuestring, "Normalize")) m->normalize = 1;
        }
        cJSON_Delete(mods);
    }
    return st;
}

void clf_sentence_model_free(clf_sentence_model *m) {
    if (!m) return;
    clf_tokenizer_free(m->tok);
    for (int i = 0; m->parts && i < m->n_parts; i++)
        clf_encoder_free(m->parts[i]);
    free(m->parts);
    free(m);
}

/* A failure on ctx, one of m's stages, reported on m->ctx (naming the stage) too. */
static clf_status relay(const clf_sentence_model *m, clf_context *ctx, clf_status st) {
    int p = 0;
    while (p < m->n_parts - 1 && m->parts[p] && m->parts[p]->ctx != ctx)
        p++;
    return clf__relay_error(m->ctx, ctx, p, st);
}

/* The stages' layers (split over n contexts), each checked against its device's memory. */
static clf_status load_parts(clf_sentence_model *m, clf_context *const *ctxs, int n,
                             const double *split, const clf_safetensors *w, const char *prefix) {
    const clf_transformer_params *c = &m->cfg;
    int64_t count[64];
    if (n > 64) return clf__fail(m->ctx, CLF_ERROR_INVALID_ARGUMENT, "split: at most 64 stages");
    if (!c->num_layers || c->num_layers < 1)
        return clf__fail(m->ctx, CLF_ERROR_BAD_FORMAT, "config.json: num_hidden_layers missing");
    CLF_TRY(n == 1 ? (count[0] = c->num_layers, CLF_SUCCESS)
                   : clf__split_layers(ctxs, n, split, c->num_layers, count));
    const int64_t d = c->num_hiddens, F = c->ffn_num_hiddens;
    const double layer = 4 * clf__matrix_bytes(c->weight_dtype, d, d) +
                         2 * clf__matrix_bytes(c->weight_dtype, F, d) + 4.0 * (9 * d + F),
                 embed = 4.0 * (double)(c->vocab_size + c->max_len + 2 + 2) * (double)d;
    int64_t at = 0;
    for (int i = 0; i < n && n > 1; i++) {
        const double bytes = (i == 0 ? embed : 0) + (double)count[i] * layer,
                     have = (double)ctxs[i]->info.global_mem_bytes;
        if (bytes > have)
            return clf__fail(m->ctx, CLF_ERROR_SIZE_LIMIT,
                             "split: stage %d on '%s' needs %.1f MiB for layers %lld .. %lld and "
                             "the device has %.1f MiB of global memory",
                             i, ctxs[i]->info.name, bytes / 1048576.0, (long long)at,
                             (long long)(at + count[i] - 1), have / 1048576.0);
        at += count[i];
    }
    m->parts = calloc((size_t)n, sizeof(clf_encoder *));
    if (!m->parts) return clf__fail(m->ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
    m->n_parts = n;
    at = 0;
    for (int i = 0; i < n; i++) {
        if (ctxs[i] != m->ctx) clf__clear_error(ctxs[i]);
        const clf_status st =
            clf__encoder_load_part(ctxs[i], w, prefix, c, at, at + count[i], i == 0, &m->parts[i]);
        if (st != CLF_SUCCESS) return relay(m, ctxs[i], st);
        at += count[i];
    }
    m->enc = m->parts[0];
    return CLF_SUCCESS;
}

clf_status clf_sentence_model_load(clf_context *ctx, const char *dir, clf_sentence_model **out) {
    return clf_sentence_model_load_with(ctx, dir, NULL, out);
}

clf_status clf_sentence_model_load_with(clf_context *ctx, const char *dir,
                                        const clf_load_params *params, clf_sentence_model **out) {
    return clf_sentence_model_load_split(&ctx, 1, NULL, dir, params, out);
}

clf_status clf_sentence_model_load_split(clf_context *const *ctxs, int n, const double *split,
                                         const char *dir, const clf_load_params *params,
                                         clf_sentence_model **out) {
    if (!ctxs || n < 1 || !ctxs[0]) return CLF_ERROR_INVALID_ARGUMENT;
    clf_context *ctx = ctxs[0];
    clf__clear_error(ctx);
    if (!dir || !out)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "dir and out must not be NULL");
    *out = NULL;
    for (int i = 1; i < n; i++)
        if (!ctxs[i])
            return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "split: context %d is NULL", i);
    clf_sentence_model *m = calloc(1, sizeof(*m));
    if (!m) return clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
    m->ctx = ctx;
    clf_status st = parse_config(ctx, dir, m);
    m->cfg.weight_dtype = params ? params->weight_dtype : CLF_F32; /* checked by the encoder */
    char path[4096];
    clf_error err;
    if (st == CLF_SUCCESS) {
        snprintf(path, sizeof(path), "%s/vocab.txt", dir);
        st = clf_tokenizer_load(path, &m->tok, &err);
        if (st != CLF_SUCCESS)
            clf__fail(ctx, st, "%s", err.message);
        else if (clf_tokenizer_vocab_size(m->tok) != m->cfg.vocab_size)
            st = clf__fail(ctx, CLF_ERROR_BAD_FORMAT, "%s: %lld tokens, config.json says %lld",
                           path, (long long)clf_tokenizer_vocab_size(m->tok),
                           (long long)m->cfg.vocab_size);
    }
    clf_safetensors *w = NULL;
    if (st == CLF_SUCCESS) {
        snprintf(path, sizeof(path), "%s/model.safetensors", dir);
        st = clf_safetensors_open(path, &w, &err);
        if (st != CLF_SUCCESS) clf__fail(ctx, st, "%s", err.message);
    }
    if (st == CLF_SUCCESS) {
        /* weights are named with or without the "bert." of BertForXxx checkpoints */
        const char *prefix =
            clf_safetensors_find(w, "bert.embeddings.word_embeddings.weight") ? "bert." : "";
        st = load_parts(m, ctxs, n, split, w, prefix);
    }
    clf_safetensors_free(w);
    if (st != CLF_SUCCESS) {
        clf_sentence_model_free(m);
        return st;
    }
    *out = m;
    return CLF_SUCCESS;
}

clf_status clf_sentence_model_stages(const clf_sentence_model *m, clf_stage *out, int64_t cap,
                                     int64_t *count) {
    if (!m || !count || cap < 0 || (cap > 0 && !out)) return CLF_ERROR_INVALID_ARGUMENT;
    for (int p = 0; p < m->n_parts && p < cap; p++) {
        const clf_encoder *e = m->parts[p];
        clf_stage *s = &out[p];
        s->context = e->ctx;
        s->first_layer = e->first;
        s->layers = e->end - e->first;
        s->embedding = e->embeds;
        s->head = p == m->n_parts - 1;
        s->weight_bytes = clf__encoder_weight_bytes(e);
    }
    *count = m->n_parts;
    return CLF_SUCCESS;
}

int64_t clf_sentence_model_dim(const clf_sentence_model *m) {
    return m ? m->cfg.num_hiddens : 0;
}
int64_t clf_sentence_model_max_len(const clf_sentence_model *m) {
    return m ? m->max_len : 0;
}
int clf_sentence_model_normalizes(const clf_sentence_model *m) {
    return m ? m->normalize : 0;
}
clf_status clf_sentence_model_set_normalize(clf_sentence_model *m, int on) {
    if (!m) return CLF_ERROR_INVALID_ARGUMENT;
    if (on != 0 && on != 1)
        return clf__fail(m->ctx, CLF_ERROR_INVALID_ARGUMENT, "normalize must be 0 or 1, not %d",
                         on);
    m->normalize = on;
    clf__clear_error(m->ctx);
    return CLF_SUCCESS;
}
const clf_tokenizer *clf_sentence_model_tokenizer(const clf_sentence_model *m) {
    return m ? m->tok : NULL;
}
clf_encoder *clf_sentence_model_encoder(clf_sentence_model *m) {
    return m && m->n_parts == 1 ? m->enc : NULL;
}

/* The encoder's output x (B, N, d) of a device batch: on one context, the encoder's forward into
 * a new tensor; split, each stage in turn, the residual stream carried through the host (each
 * stage's lengths written from the host). *x is on the last stage's context. */
static clf_status encode(clf_sentence_model *m, const clf_tensor *ids, const clf_tensor *lens,
                         const int32_t *host_lens, clf_tensor **x) {
    const int64_t B = ids->shape[0], N = ids->shape[1], d = m->cfg.num_hiddens;
    int64_t xs[3] = {B, N, d};
    CLF_TRY(clf_tensor_create(m->ctx, CLF_F32, 3, xs, x));
    if (m->n_parts == 1) return clf_encoder_forward(m->enc, ids, lens, *x);
    clf_status st = clf__encoder_part_forward(m->parts[0], ids, lens, *x);
    float *carry = st == CLF_SUCCESS ? malloc(sizeof(float) * (size_t)(B * N * d)) : NULL;
    if (st == CLF_SUCCESS && !carry)
        st = clf__fail(m->ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
    for (int p = 1; p < m->n_parts && st == CLF_SUCCESS; p++) {
        clf_context *pc = m->parts[p]->ctx;
        clf__clear_error(pc);
        clf_tensor *next = NULL, *pl = NULL;
        st = clf_tensor_read(*x, carry, sizeof(float) * (size_t)(B * N * d));
        if (st != CLF_SUCCESS) st = relay(m, m->parts[p - 1]->ctx, st);
        clf_status ps = st;
        if (ps == CLF_SUCCESS) ps = clf_tensor_create(pc, CLF_F32, 3, xs, &next);
        if (ps == CLF_SUCCESS) ps = clf_tensor_create(pc, CLF_I32, 1, &B, &pl);
        if (ps == CLF_SUCCESS)
            ps = clf_tensor_write(next, carry, sizeof(float) * (size_t)(B * N * d));
        if (ps == CLF_SUCCESS) ps = clf_tensor_write(pl, host_lens, sizeof(int32_t) * (size_t)B);
        if (ps == CLF_SUCCESS) ps = clf__encoder_part_forward(m->parts[p], NULL, pl, next);
        if (st == CLF_SUCCESS && ps != CLF_SUCCESS) st = relay(m, pc, ps);
        clf_tensor_free(pl);
        clf_tensor_free(*x);
        *x = next;
    }
    free(carry);
    return st;
}

/* Embeds a device batch with lengths known on the host too. */
static clf_status embed_batch(clf_sentence_model *m, const clf_tensor *ids, const clf_tensor *lens,
                              const int32_t *host_lens, float *out) {
    const int64_t B = ids->shape[0], N = ids->shape[1], d = m->cfg.num_hiddens;
    clf_tensor *x = NULL, *w = NULL, *pooled = NULL;
    int64_t ws[2] = {B, N}, ps[2] = {B, d};
    float *wh = malloc((size_t)(B * N) * sizeof(float));
    if (!wh) return clf__fail(m->ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
    for (int64_t b = 0; b < B; b++) {
        const int64_t l = host_lens[b];
        for (int64_t t = 0; t < N; t++)
            wh[b * N + t] = t < l ? (float)(1.0 / (double)l) : 0.0f;
    }
    const clf_status enc = encode(m, ids, lens, host_lens, &x);
    /* the pooling on the last stage's context */
    clf_context *ctx = m->parts[m->n_parts - 1]->ctx;
    clf_status st = enc;
    if (st == CLF_SUCCESS) st = clf_tensor_create(ctx, CLF_F32, 2, ws, &w);
    if (st == CLF_SUCCESS) st = clf_tensor_create(ctx, CLF_F32, 2, ps, &pooled);
    if (st == CLF_SUCCESS) st = clf_tensor_write(w, wh, (size_t)(B * N) * sizeof(float));
    /* pooled_b (1, d) = w_b (1, N) x_b (N, d) */
    if (st == CLF_SUCCESS)
        st = clf_gemm_strided_batched(ctx, CLF_NO_TRANS, CLF_NO_TRANS, 1, d, N, 1.0f, w, 0, N, N, x,
                                      0, d, N * d, 0.0f, pooled, 0, d, d, B);
    if (st == CLF_SUCCESS) st = clf_tensor_read(pooled, out, (size_t)(B * d) * sizeof(float));
    if (enc == CLF_SUCCESS) st = relay(m, ctx, st); /* encode relayed its own */
    if (st == CLF_SUCCESS && m->normalize)
        for (int64_t b = 0; b < B; b++) {
            double s = 0;
            for (int64_t j = 0; j < d; j++)
                s += (double)out[b * d + j] * out[b * d + j];
            const double inv = 1.0 / fmax(sqrt(s), 1e-12); /* torch's F.normalize eps */
            for (int64_t j = 0; j < d; j++)
                out[b * d + j] = (float)(out[b * d + j] * inv);
        }
    free(wh);
    clf_tensor_free(x);
    clf_tensor_free(w);
    clf_tensor_free(pooled);
    return st;
}

clf_status clf_sentence_embed_ids(clf_sentence_model *m, const clf_tensor *ids,
                                  const clf_tensor *lens, float *out) {
    if (!m) return CLF_ERROR_INVALID_ARGUMENT;
    clf_context *ctx = m->ctx;
    clf_status st = clf__check_tensor(ctx, ids, "ids", CLF_I32);
    if (st == CLF_SUCCESS) st = clf__check_tensor(ctx, lens, "lens", CLF_I32);
    if (st != CLF_SUCCESS) return st;
    if (!out) return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "out must not be NULL");
    if (ids->ndim != 2 || lens->ndim != 1 || lens->shape[0] != ids->shape[0])
        return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH, "ids must be (B, N) and lens (B)");
    const int64_t B = ids->shape[0], N = ids->shape[1];
    int32_t *hl = malloc((size_t)B * sizeof(int32_t));
    if (!hl) return clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
    st = clf_tensor_read(lens, hl, (size_t)B * sizeof(int32_t));
    for (int64_t b = 0; b < B && st == CLF_SUCCESS; b++)
        if (hl[b] < 1 || hl[b] > N)
            st = clf__fail(ctx, CLF_ERROR_OUT_OF_RANGE, "lens[%lld] = %d must be 1 .. %lld",
                           (long long)b, hl[b], (long long)N);
    if (st == CLF_SUCCESS) st = embed_batch(m, ids, lens, hl, out);
    free(hl);
    return st;
}

typedef struct tokenized {
    int32_t *ids; /* max_len per sentence */
    int64_t len;
    int64_t index;
} tokenized;

static int by_len_desc(const void *a, const void *b) {
    const tokenized *x = a, *y = b;
    if (x->len != y->len) return x->len < y->len ? 1 : -1;
    return x->index < y->index ? -1 : x->index > y->index;
}

clf_status clf_sentence_embed(clf_sentence_model *m, const char *const *texts, int64_t n,
                              int64_t batch_size, float *out) {
    if (!m) return CLF_ERROR_INVALID_ARGUMENT;
    clf_context *ctx = m->ctx;
    if (n < 0 || (n > 0 && (!texts || !out)) || batch_size < 0)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                         "embed: texts and out must not be NULL, n and batch_size >= 0");
    for (int64_t i = 0; i < n; i++)
        if (!texts[i])
            return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "embed: texts[%lld] is NULL",
                             (long long)i);
    if (n == 0) return CLF_SUCCESS;
    const int64_t L = m->max_len, d = m->cfg.num_hiddens, bs = batch_size ? batch_size : 32;
    tokenized *tk = calloc((size_t)n, sizeof(tokenized));
    int32_t *all = malloc((size_t)(n * L) * sizeof(int32_t));
    int32_t *batch_ids = malloc((size_t)(bs * L) * sizeof(int32_t));
    int32_t *batch_lens = malloc((size_t)bs * sizeof(int32_t));
    float *emb = malloc((size_t)(bs * d) * sizeof(float));
    clf_status st = CLF_SUCCESS;
    if (!tk || !all || !batch_ids || !batch_lens || !emb)
        st = clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
    for (int64_t i = 0; i < n && st == CLF_SUCCESS; i++) {
        tk[i].ids = all + i * L;
        tk[i].index = i;
        st = clf_tokenizer_encode(m->tok, texts[i], L, tk[i].ids, &tk[i].len);
        if (st != CLF_SUCCESS)
            clf__fail(ctx, st, "embed: cannot tokenize texts[%lld]", (long long)i);
    }
    if (st == CLF_SUCCESS) qsort(tk, (size_t)n, sizeof(tokenized), by_len_desc);
    const int32_t pad = (int32_t)clf_tokenizer_find(m->tok, "[PAD]");
    for (int64_t s = 0; s < n && st == CLF_SUCCESS; s += bs) {
        const int64_t B = n - s < bs ? n - s : bs, N = tk[s].len; /* longest first */
        for (int64_t b = 0; b < B; b++) {
            const tokenized *t = &tk[s + b];
            for (int64_t j = 0; j < N; j++)
                batch_ids[b * N + j] = j < t->len ? t->ids[j] : pad;
            batch_lens[b] = (int32_t)t->len;
        }
        clf_tensor *ids = NULL, *lens = NULL;
        int64_t is[2] = {B, N};
        st = clf_tensor_create(ctx, CLF_I32, 2, is, &ids);
        if (st == CLF_SUCCESS) st = clf_tensor_create(ctx, CLF_I32, 1, &B, &lens);
        if (st == CLF_SUCCESS) st = clf_tensor_write(ids, batch_ids, (size_t)(B * N) * 4);
        if (st == CLF_SUCCESS) st = clf_tensor_write(lens, batch_lens, (size_t)B * 4);
        if (st == CLF_SUCCESS) st = embed_batch(m, ids, lens, batch_lens, emb);
        for (int64_t b = 0; b < B && st == CLF_SUCCESS; b++)
            memcpy(out + tk[s + b].index * d, emb + b * d, (size_t)d * sizeof(float));
        clf_tensor_free(ids);
        clf_tensor_free(lens);
    }
    free(tk);
    free(all);
    free(batch_ids);
    free(batch_lens);
    free(emb);
    return st;
}
