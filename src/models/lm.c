/*
 * lm.c — the causal language model's weights (clf_lm): loaded once from a Hugging Face folder or
 * a GGUF file onto one context, or split by layers over several (lm_split.c plans the stages),
 * made at random for the bench, and listed. States and the step are in lm_state.c:
 *   h = embed(ids, positions length(b) ..); per block: h = block(h, cache); logits = head(norm(h))
 * The family (arch_llama.c, arch_gpt2.c) gives the loader, embedding, block and norm.
 */
#include "lm.h"
#include "../rng.h"

#include <math.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---------------------------------------------------------------- weights */

static void layer_free(clf_lm_layer *l) {
    clf__norm_free(&l->n1);
    clf__norm_free(&l->n2);
    clf_lin *ls[] = {&l->qkv, &l->o, &l->up, &l->down};
    for (size_t i = 0; i < sizeof(ls) / sizeof(ls[0]); i++)
        clf__lin_free(ls[i]);
}

void clf_lm_free(clf_lm *m) {
    if (!m) return;
    if (m->layers)
        for (int64_t i = 0; i < m->cfg.info.layers; i++)
            layer_free(&m->layers[i]);
    free(m->layers);
    clf_tensor_free(m->tok);
    clf_tensor_free(m->pos);
    for (int p = 0; m->parts && p < m->n_parts; p++)
        clf_tensor_free(m->parts[p].freq);
    free(m->parts);
    clf__norm_free(&m->final);
    if (m->head_shared) m->head.w = NULL; /* freed as tok */
    clf__lin_free(&m->head);
    clf__lm_config_free(&m->cfg);
    free(m);
}

static int64_t numel_or0(const clf_tensor *t) {
    return t ? clf_tensor_numel(t) : 0;
}

clf_status clf__lm_tied_head(clf_loader *L, clf_lm *m, const char *stem) {
    const clf_dtype t = m->tok ? m->tok->dtype : CLF_F32;
    if (m->tok && m->tok->ctx == L->ctx && (t != CLF_F32 || L->weight_dtype == CLF_F32) &&
        !clf__linear_packs(L->ctx, t) && L->shard_size <= 1) { /* a shard cuts the head's rows */
        m->head.w = m->tok;
        m->head_shared = 1;
        return CLF_SUCCESS;
    }
    const clf_lm_info *in = &m->cfg.info;
    return clf__load_lin(L, stem, in->vocab_size, in->hidden_size, 0, &m->head);
}

/* Parameters as the checkpoint counts them (a tied head once; packed panels by their source). */
static int64_t count_params(const clf_lm *m) {
    const clf_lm_info *in = &m->cfg.info;
    const int64_t d = in->hidden_size, q = in->heads * in->head_dim,
                  kv = in->kv_heads * in->head_dim, F = in->ffn_size;
    int64_t per = (q + 2 * kv) * d + q * d + m->cfg.arch->ffn_matrices * F * d; /* projections */
    const clf_lm_layer *l = &m->layers[clf__lm_first(m)];
    per += numel_or0(l->qkv.b) + numel_or0(l->o.b) + numel_or0(l->up.b) + numel_or0(l->down.b);
    per += numel_or0(l->n1.g) + numel_or0(l->n1.b) + numel_or0(l->n2.g) + numel_or0(l->n2.b);
    /* a stage model counts what it holds */
    return per * (clf__lm_end(m) - clf__lm_first(m)) + numel_or0(m->tok) + numel_or0(m->pos) +
           numel_or0(m->final.g) + numel_or0(m->final.b) +
           (m->cfg.tied || !m->heads ? 0 : in->vocab_size * d);
}

/* The types a model may be kept in: weights converted at load (clf__load_weight_type), caches
 * of a type attention reads (CLF_DTU_KV). */
static clf_status check_dtypes(clf_context *ctx, clf_dtype weights, clf_dtype cache) {
    const clf_dtype_traits *c = clf__dtype(cache);
    if (!clf__load_weight_type(weights))
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                         "lm: weight_dtype %d must be CLF_F32, F16, BF16, Q8_0, Q4_0, Q4_K or Q6_K",
                         (int)weights);
    if (!c || !(c->uses & CLF_DTU_KV))
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                         "lm: cache_dtype %d must be CLF_F32 or CLF_F16", (int)cache);
    return CLF_SUCCESS;
}

int64_t clf__lm_first(const clf_lm *m) {
    return m->parts[0].first;
}
int64_t clf__lm_end(const clf_lm *m) {
    return m->parts[m->n_parts - 1].end;
}

clf_context *clf__lm_layer_ctx(const clf_lm *m, int64_t layer) {
    for (int p = 0; p < m->n_parts; p++)
        if (layer < m->parts[p].end) return m->parts[p].ctx;
    return m->parts[m->n_parts - 1].ctx;
}

/* A model on one context: one stage of layers first .. end - 1 (every layer but in a stage
 * model). */
static clf_status one_part(clf_context *ctx, clf_lm *m, int64_t first, int64_t end) {
    m->parts = calloc(1, sizeof(clf_lm_part));
    if (!m->parts) return clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
    m->n_parts = 1;
    m->parts[0] = (clf_lm_part){ctx, first, end, NULL};
    m->embeds = first == 0;
    m->heads = end == m->cfg.info.layers;
    return CLF_SUCCESS;
}

clf_status clf_lm_load(clf_context *ctx, const char *dir, clf_lm **out) {
    return clf_lm_load_with(ctx, dir, NULL, out);
}

clf_status clf_lm_load_with(clf_context *ctx, const char *dir, const clf_load_params *params,
                            clf_lm **out) {
    return clf_lm_load_split(&ctx, 1, NULL, dir, params, out);
}

static clf_status load(clf_context *const *ctxs, int n, const double *split, int64_t first,
                       int64_t end, const char *dir, const clf_load_params *params,
                       const clf_shard *shard, clf_lm **out);

/* The configuration of the model at dir: a file is a GGUF model (*g stays open for the weights),
 * a folder a Hugging Face one. */
static clf_status read_config(clf_context *ctx, const char *dir, clf_lm_config *cfg, clf_gguf **g,
                              int64_t *unpermute_dh) {
    struct stat sb;
    *g = NULL;
    if (stat(dir, &sb) == 0 && S_ISREG(sb.st_mode)) {
        clf_error err;
        clf_status st = clf_gguf_open(dir, g, &err);
        if (st != CLF_SUCCESS) return clf__fail(ctx, st, "%s", err.message);
        st = clf__lm_read_gguf_config(ctx, *g, cfg, unpermute_dh);
        if (st != CLF_SUCCESS) {
            clf_gguf_free(*g);
            *g = NULL;
        }
        return st;
    }
    return clf__lm_read_config(ctx, dir, cfg);
}

clf_status clf_lm_read_info(clf_context *ctx, const char *dir, clf_lm_info *out) {
    if (!ctx) return CLF_ERROR_INVALID_ARGUMENT;
    clf__clear_error(ctx);
    if (!dir || !out)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "lm: dir and out must not be NULL");
    clf_lm_config cfg;
    memset(&cfg, 0, sizeof(cfg));
    clf_gguf *g = NULL;
    int64_t unpermute_dh = 0;
    CLF_TRY(read_config(ctx, dir, &cfg, &g, &unpermute_dh));
    *out = cfg.info;
    clf_gguf_free(g);
    clf__lm_config_free(&cfg);
    return CLF_SUCCESS;
}

clf_status clf_lm_load_split(clf_context *const *ctxs, int n, const double *split, const char *dir,
                             const clf_load_params *params, clf_lm **out) {
    return load(ctxs, n, split, 0, -1, dir, params, NULL, out);
}

clf_status clf_lm_load_stage(clf_context *ctx, const char *path, const clf_load_params *params,
                             int64_t first, int64_t end, clf_lm **out) {
    if (!ctx) return CLF_ERROR_INVALID_ARGUMENT;
    if (first < 0 || end <= first) {
        clf__clear_error(ctx);
        if (out) *out = NULL;
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                         "lm stage: layers %lld .. %lld must be a range of at least one layer",
                         (long long)first, (long long)end - 1);
    }
    return load(&ctx, 1, NULL, first, end, path, params, NULL, out);
}

clf_status clf_lm_load_shard(clf_context *ctx, const char *path, const clf_load_params *params,
                             const clf_shard *shard, clf_lm **out) {
    if (!ctx) return CLF_ERROR_INVALID_ARGUMENT;
    if (!shard || shard->size < 1 || shard->rank < 0 || shard->rank >= shard->size ||
        (shard->size > 1 && !shard->allreduce)) {
        clf__clear_error(ctx);
        if (out) *out = NULL;
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                         "lm shard: needs 0 <= rank < size and, when size > 1, an allreduce");
    }
    return load(&ctx, 1, NULL, 0, -1, path, params, shard->size > 1 ? shard : NULL, out);
}

/* What a shard of size cuts must divide: the heads, the K/V heads, the FFN width. */
static clf_status check_shard(clf_context *ctx, const clf_lm_info *in, int size) {
    const struct {
        const char *what;
        int64_t n;
    } cut[] = {{"attention heads", in->heads},
               {"key/value heads", in->kv_heads},
               {"FFN width", in->ffn_size}};
    for (size_t i = 0; i < sizeof(cut) / sizeof(cut[0]); i++)
        if (cut[i].n % size)
            return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                             "tensor parallel: %d shards do not divide the model's %lld %s", size,
                             (long long)cut[i].n, cut[i].what);
    return CLF_SUCCESS;
}

clf_status clf__lm_allreduce(clf_context *ctx, const clf_lm *m, float *x, int64_t n) {
    if (m->shard.allreduce(m->shard.user, x, n) == 0) return CLF_SUCCESS;
    return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                     "tensor parallel: shard %d's all-reduce of %lld floats failed", m->shard.rank,
                     (long long)n);
}

/* Shared by the blocks (lm.h). */
clf_status clf__lm_attend(clf_context *ctx, const clf_lm *m, clf_tensor *kv, const int64_t *lengths,
                          const int64_t *n_new, clf_lm_ws *ws, int appended) {
    const clf_lm_info *in = &m->cfg.info;
    const int64_t B = ws->qkv.shape[0], T = ws->qkv.shape[1];
    const size_t q = (size_t)(in->heads * in->head_dim), w = (size_t)(in->kv_heads * in->head_dim);
    /* The new rows' K | V into each sequence's cache: one copy when all sequences are alike. */
    bool alike = true;
    for (int64_t b = 1; b < B; b++)
        alike = alike && lengths[b] == lengths[0] && n_new[b] == n_new[0];
    for (int64_t b = 0; b < B && !appended; b += alike ? B : 1) {
        if (!n_new[b]) continue;
        const clf_rows_at src = {&ws->qkv, q + 2 * w, (size_t)T, q, 0};
        const clf_rows_at dst = {kv, 2 * w, (size_t)kv->shape[1], 0, (size_t)lengths[b]};
        CLF_TRY(clf__copy_rows(ctx, &src, &dst, 2 * w, (size_t)n_new[b], (size_t)b,
                               alike ? (size_t)B : 1));
    }
    clf_attention_params ap = clf_attention_default_params(in->heads, in->head_dim);
    ap.kv_heads = in->kv_heads;
    ap.v_col = (int64_t)w;
    ap.nk = ws->nk;
    ap.mask.valid_lens = &ws->lens; /* (B, T): causal within each sequence */
    ap.mask.window = m->cfg.window; /* Mistral's sliding window (0: none) */
    return clf_attention(ctx, &ws->qkv, kv, kv, &ws->att, &ap);
}

clf_status clf__lm_reduce(clf_context *ctx, const clf_lm *m, clf_lm_ws *ws, clf_tensor *y) {
    if (m->shard.size <= 1) return CLF_SUCCESS;
    if (*ws->reduce_n < y->numel) { /* grows to the largest step's stream, then stays */
        float *h = realloc(*ws->reduce_h, y->bytes);
        if (!h) return clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
        *ws->reduce_h = h;
        *ws->reduce_n = y->numel;
    }
    float *h = *ws->reduce_h;
    CLF_TRY(clf_tensor_read(y, h, y->bytes));
    CLF_TRY(clf__lm_allreduce(ctx, m, h, y->numel));
    return clf_tensor_write(y, h, y->bytes);
}

/* A model on ctxs (split n ways), or a stage of it (n 1: layers first .. end - 1; end -1: all),
 * or a tensor-parallel shard of it (shard not NULL: every layer on ctxs[0]). */
static clf_status load(clf_context *const *ctxs, int n, const double *split, int64_t first,
                       int64_t end, const char *dir, const clf_load_params *params,
                       const clf_shard *shard, clf_lm **out) {
    if (!ctxs || n < 1 || !ctxs[0]) return CLF_ERROR_INVALID_ARGUMENT;
    clf_context *ctx = ctxs[0];
    clf__clear_error(ctx);
    if (!dir || !out)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "lm: dir and out must not be NULL");
    *out = NULL;
    for (int i = 1; i < n; i++)
        if (!ctxs[i])
            return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "lm split: context %d is NULL", i);
    const clf_load_params p = params ? *params : clf_load_default_params();
    CLF_TRY(check_dtypes(ctx, p.weight_dtype, p.cache_dtype));
    clf_lm *m = calloc(1, sizeof(*m));
    if (!m) return clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
    m->ctx = ctx;
    clf_gguf *g = NULL;
    int64_t unpermute_dh = 0;
    clf_status st = read_config(ctx, dir, &m->cfg, &g, &unpermute_dh);
    if (st != CLF_SUCCESS) {
        clf_gguf_free(g);
        free(m);
        return st;
    }
    m->cfg.info.weight_dtype = p.weight_dtype;
    m->cfg.info.cache_dtype = p.cache_dtype;
    clf_lm_files files = {0};
    m->layers = calloc((size_t)m->cfg.info.layers, sizeof(clf_lm_layer));
    if (!m->layers) {
        st = clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
        goto fail;
    }
    if (!g) CLF_CHECK(clf__lm_open_files(ctx, dir, &files));
    /* The stages, checked against each device's memory before any weight moves. */
    if (end > m->cfg.info.layers) {
        st = clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                       "lm stage: layers %lld .. %lld of a model of %lld layers", (long long)first,
                       (long long)end - 1, (long long)m->cfg.info.layers);
        goto fail;
    }
    if (shard) CLF_CHECK(check_shard(ctx, &m->cfg.info, shard->size));
    if (n == 1)
        CLF_CHECK(one_part(ctx, m, first, end < 0 ? m->cfg.info.layers : end));
    else
        CLF_CHECK(clf__lm_plan_split(m, ctxs, n, split, g, p.weight_dtype));
    clf_loader L = {.ctx = ctx,
                    .prefix = "",
                    .shards = files.st,
                    .n_shards = files.n,
                    .weight_dtype = p.weight_dtype,
                    .gguf = g,
                    .unpermute_dh = unpermute_dh,
                    .gguf_names = m->cfg.arch->gguf_names,
                    .n_gguf_names = m->cfg.arch->n_gguf_names,
                    .shard_rank = shard ? shard->rank : 0,
                    .shard_size = shard ? shard->size : 1};
    if (shard) m->shard = *shard;
    st = m->cfg.arch->load(&L, m);
    if (st != CLF_SUCCESS) {
        clf__lm_relay_error(m, L.ctx, st);
        goto fail;
    }
    m->cfg.info.parameters = count_params(m);
    /* A GGUF file's types are its own (they may differ by tensor): the first Q projection's. */
    const clf_lm_layer *l0 = &m->layers[clf__lm_first(m)];
    if (g && l0->qkv.w) m->cfg.info.weight_dtype = l0->qkv.w->dtype;
    m->whole = m->cfg.info;
    if (shard) { /* the forward runs on this shard's heads and FFN columns */
        m->cfg.info.heads /= shard->size;
        m->cfg.info.kv_heads /= shard->size;
        m->cfg.info.ffn_size /= shard->size;
    }
    clf__lm_files_free(&files);
    clf_gguf_free(g);
    *out = m;
    return CLF_SUCCESS;
fail:
    clf__lm_files_free(&files);
    clf_gguf_free(g);
    clf_lm_free(m);
    return st;
}

/* A (rows, cols) (or (rows)) tensor of uniform values in [-scale, scale) (scale < 0: all 1). */
static clf_status random_tensor(clf_context *ctx, int64_t rows, int64_t cols, double scale,
                                clf_rng *rng, clf_tensor **out) {
    const int64_t shape[2] = {rows, cols}, n = rows * (cols ? cols : 1);
    float *h = malloc(sizeof(float) * (size_t)n);
    if (!h) return clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
    for (int64_t i = 0; i < n; i++)
        h[i] = scale < 0 ? 1.0f : (float)clf_rng_uniform(rng, -scale, scale);
    clf_status st = clf_tensor_create(ctx, CLF_F32, cols ? 2 : 1, shape, out);
    if (st == CLF_SUCCESS) st = clf_tensor_write(*out, h, sizeof(float) * (size_t)n);
    free(h);
    return st;
}

static clf_status random_lin(clf_context *ctx, int64_t out, int64_t in, clf_rng *rng,
                             clf_dtype dtype, clf_lin *l) {
    CLF_TRY(random_tensor(ctx, out, in, 1.0 / sqrt((double)in), rng, &l->w));
    return clf__pack(ctx, dtype, &l->w);
}

clf_status clf_lm_create_random(clf_context *ctx, const clf_lm_info *sizes, uint64_t seed,
                                clf_lm **out) {
    if (!ctx) return CLF_ERROR_INVALID_ARGUMENT;
    clf__clear_error(ctx);
    if (!sizes || !out)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "lm: sizes and out must not be NULL");
    *out = NULL;
    clf_lm_info in = *sizes;
    if (in.heads > 0 && !in.head_dim && in.hidden_size % in.heads == 0)
        in.head_dim = in.hidden_size / in.heads;
    if (in.vocab_size < 1 || in.hidden_size < 1 || in.ffn_size < 1 || in.layers < 1 ||
        in.heads < 1 || in.kv_heads < 1 || in.heads % in.kv_heads || in.head_dim < 2 ||
        in.head_dim % 2 || in.head_dim > 256 || in.max_positions < 1 ||
        in.max_positions > (1 << 24))
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                         "lm: sizes must be positive, kv_heads dividing heads, head_dim even and "
                         "at most 256, max_positions at most 2^24");
    CLF_TRY(check_dtypes(ctx, in.weight_dtype, in.cache_dtype));
    clf_lm *m = calloc(1, sizeof(*m));
    if (!m) return clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
    m->ctx = ctx;
    snprintf(in.arch, sizeof(in.arch), "LlamaForCausalLM"); /* the shape this call builds */
    in.bos = -1;
    in.n_eos = 0;
    m->cfg.info = in;
    m->cfg.arch = clf__lm_arch_find(in.arch, strlen(in.arch), 0);
    m->cfg.norm_eps = 1e-5f;
    clf_status st = one_part(ctx, m, 0, in.layers);
    if (st != CLF_SUCCESS) goto fail;
    const int64_t d = in.hidden_size, q = in.heads * in.head_dim, kv = in.kv_heads * in.head_dim,
                  F = in.ffn_size, half = in.head_dim / 2;
    m->layers = calloc((size_t)in.layers, sizeof(clf_lm_layer));
    m->cfg.inv_freq = malloc(sizeof(float) * (size_t)half);
    if (!m->layers || !m->cfg.inv_freq) {
        st = clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
        goto fail;
    }
    for (int64_t i = 0; i < half; i++)
        m->cfg.inv_freq[i] = 1.0f / powf(500000.0f, (float)(2 * i) / (float)in.head_dim);
    clf_rng rng = clf_rng_make(seed);
    CLF_CHECK(random_tensor(ctx, in.vocab_size, d, 1.0, &rng, &m->tok));
    CLF_CHECK(random_tensor(ctx, d, 0, -1, &rng, &m->final.g));
    const clf_dtype wt = in.weight_dtype;
    CLF_CHECK(random_lin(ctx, in.vocab_size, d, &rng, wt, &m->head));
    CLF_CHECK(clf_tensor_create(ctx, CLF_F32, 1, &half, &m->parts[0].freq));
    CLF_CHECK(clf_tensor_write(m->parts[0].freq, m->cfg.inv_freq, sizeof(float) * (size_t)half));
    for (int64_t i = 0; i < in.layers; i++) {
        clf_lm_layer *l = &m->layers[i];
        CLF_CHECK(random_tensor(ctx, d, 0, -1, &rng, &l->n1.g));
        CLF_CHECK(random_tensor(ctx, d, 0, -1, &rng, &l->n2.g));
        CLF_CHECK(random_lin(ctx, q + 2 * kv, d, &rng, wt, &l->qkv));
        CLF_CHECK(random_lin(ctx, d, q, &rng, wt, &l->o));
        CLF_CHECK(random_lin(ctx, 2 * F, d, &rng, wt, &l->up));
        CLF_CHECK(random_lin(ctx, d, F, &rng, wt, &l->down));
    }
    m->cfg.info.parameters = count_params(m);
    m->whole = m->cfg.info;
    *out = m;
    return CLF_SUCCESS;
fail:
    clf_lm_free(m);
    return st;
}

clf_status clf_lm_get_info(const clf_lm *m, clf_lm_info *out) {
    if (!m || !out) return CLF_ERROR_INVALID_ARGUMENT;
    *out = m->whole;
    return CLF_SUCCESS;
}

/* One entry of clf_lm_weights (written when i < cap). */
static void weight_entry(const clf_tensor *t, const char *name, int layer, clf_lm_weight *out,
                         int64_t cap, int64_t *i) {
    if (!t) return;
    if (*i < cap) {
        clf_lm_weight *w = &out[*i];
        if (layer >= 0)
            snprintf(w->name, sizeof(w->name), "blk.%d.%s", layer, name);
        else
            snprintf(w->name, sizeof(w->name), "%s", name);
        w->dtype = clf_tensor_dtype(t);
        w->bytes = clf_tensor_bytes(t);
    }
    (*i)++;
}

/* The entries of a stack (name when whole; split by type, one per run, named by the file's
 * tensors it holds: "attn_q+attn_k", "attn_v"). */
static void stack_entries(const clf_lin *l, const char *name, const char *const *parts, int layer,
                          clf_lm_weight *out, int64_t cap, int64_t *i) {
    if (!l->n_more) {
        weight_entry(l->w, name, layer, out, cap, i);
        return;
    }
    int at = 0;
    for (int r = 0; r <= l->n_more; r++) {
        const int n = r ? l->more[r - 1].n_tensors : l->n_tensors;
        char run[32] = "";
        for (int j = at; j < at + n; j++)
            snprintf(run + strlen(run), sizeof(run) - strlen(run), "%s%s", j > at ? "+" : "",
                     parts[j]);
        weight_entry(r ? l->more[r - 1].w : l->w, run, layer, out, cap, i);
        at += n;
    }
}

clf_status clf_lm_weights(const clf_lm *m, clf_lm_weight *out, int64_t cap, int64_t *count) {
    if (!m || !count || cap < 0 || (cap > 0 && !out)) return CLF_ERROR_INVALID_ARGUMENT;
    int64_t i = 0;
    weight_entry(m->tok, "token_embd", -1, out, cap, &i);
    weight_entry(m->pos, "position_embd", -1, out, cap, &i);
    for (int l = 0; l < (int)m->cfg.info.layers; l++) {
        const clf_lm_layer *y = &m->layers[l];
        static const char *const qkv[3] = {"attn_q", "attn_k", "attn_v"};
        static const char *const gu[2] = {"ffn_gate", "ffn_up"};
        stack_entries(&y->qkv, "attn_qkv", qkv, l, out, cap, &i);
        weight_entry(y->o.w, "attn_output", l, out, cap, &i);
        stack_entries(&y->up, "ffn_up", gu, l, out, cap, &i);
        weight_entry(y->down.w, "ffn_down", l, out, cap, &i);
    }
    if (!m->head_shared) weight_entry(m->head.w, "output", -1, out, cap, &i);
    *count = i;
    return CLF_SUCCESS;
}
