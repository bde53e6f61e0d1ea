/*
 * lm.c — the causal language model stack: weights loaded once from a Hugging Face folder
 * (clf_lm), states (clf_lm_state) that hold the KV caches of a batch of sequences, each at its
 * own length, and the step that appends tokens to them:
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

struct clf_lm_state {
    const clf_lm *m;
    int64_t batch, max_len;
    int64_t *lengths; /* (B) tokens in each sequence's cache */
    clf_tensor **kv;  /* [layers] (B, max_len, 2 kv): K | V of every cached position */
    int64_t rows;     /* B T the workspace below holds */
    clf_tensor *h, *x, *qkv, *att, *o, *up, *mid; /* (rows, d | d | q+2kv | q | d | 2F | F) */
    clf_tensor *lens, *offs, *pos_ids;            /* (B, T), (B), (B, T) I32 */
    clf_tensor *last;                             /* (B, d) each sequence's last new row */
    int32_t *host_lens, *host_pos;                /* (B, T) staging */
    int32_t *host_offs;                           /* (B) staging */
    /* The last step's staging writes, not waited for (the queue is in order: the kernels after
     * them see the data); the staging arrays change only after it completes. */
    cl_event staged;
};

/* Waits for the last step's staging writes, so the staging arrays can change. */
static clf_status wait_staged(clf_lm_state *s) {
    if (!s->staged) return CLF_SUCCESS;
    const cl_int err = clWaitForEvents(1, &s->staged);
    clReleaseEvent(s->staged);
    s->staged = NULL;
    return err == CL_SUCCESS ? CLF_SUCCESS
                             : clf__cl_fail(s->m->ctx, err, "lm step: staging writes");
}

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
    clf_tensor_free(m->freq);
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
    const clf_dtype t = m->tok->dtype;
    if ((t != CLF_F32 || L->weight_dtype == CLF_F32) && !clf__linear_packs(L->ctx, t)) {
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
    per += numel_or0(m->layers[0].qkv.b) + numel_or0(m->layers[0].o.b) +
           numel_or0(m->layers[0].up.b) + numel_or0(m->layers[0].down.b);
    per += numel_or0(m->layers[0].n1.g) + numel_or0(m->layers[0].n1.b) +
           numel_or0(m->layers[0].n2.g) + numel_or0(m->layers[0].n2.b);
    return per * in->layers + numel_or0(m->tok) + numel_or0(m->pos) + numel_or0(m->final.g) +
           numel_or0(m->final.b) + (m->cfg.tied ? 0 : in->vocab_size * d);
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

clf_status clf_lm_load(clf_context *ctx, const char *dir, clf_lm **out) {
    return clf_lm_load_with(ctx, dir, NULL, out);
}

clf_status clf_lm_load_with(clf_context *ctx, const char *dir, const clf_load_params *params,
                            clf_lm **out) {
    if (!ctx) return CLF_ERROR_INVALID_ARGUMENT;
    clf__clear_error(ctx);
    if (!dir || !out)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "lm: dir and out must not be NULL");
    *out = NULL;
    const clf_load_params p = params ? *params : clf_load_default_params();
    CLF_TRY(check_dtypes(ctx, p.weight_dtype, p.cache_dtype));
    clf_lm *m = calloc(1, sizeof(*m));
    if (!m) return clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
    m->ctx = ctx;
    /* A file is a GGUF model; a folder a Hugging Face one. */
    struct stat sb;
    clf_gguf *g = NULL;
    int64_t unpermute_dh = 0;
    clf_status st;
    if (stat(dir, &sb) == 0 && S_ISREG(sb.st_mode)) {
        clf_error err;
        st = clf_gguf_open(dir, &g, &err);
        if (st != CLF_SUCCESS) st = clf__fail(ctx, st, "%s", err.message);
        if (st == CLF_SUCCESS) st = clf__lm_read_gguf_config(ctx, g, &m->cfg, &unpermute_dh);
    } else {
        st = clf__lm_read_config(ctx, dir, &m->cfg);
    }
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
    clf_loader L = {.ctx = ctx,
                    .prefix = "",
                    .shards = files.st,
                    .n_shards = files.n,
                    .weight_dtype = p.weight_dtype,
                    .gguf = g,
                    .unpermute_dh = unpermute_dh,
                    .gguf_names = m->cfg.arch->gguf_names,
                    .n_gguf_names = m->cfg.arch->n_gguf_names};
    CLF_CHECK(m->cfg.arch->load(&L, m));
    m->cfg.info.parameters = count_params(m);
    /* A GGUF file's types are its own (they may differ by tensor): the first Q projection's. */
    if (g && m->layers[0].qkv.w) m->cfg.info.weight_dtype = m->layers[0].qkv.w->dtype;
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
    clf_status st = CLF_SUCCESS;
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
    CLF_CHECK(clf_tensor_create(ctx, CLF_F32, 1, &half, &m->freq));
    CLF_CHECK(clf_tensor_write(m->freq, m->cfg.inv_freq, sizeof(float) * (size_t)half));
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
    *out = m;
    return CLF_SUCCESS;
fail:
    clf_lm_free(m);
    return st;
}

clf_status clf_lm_get_info(const clf_lm *m, clf_lm_info *out) {
    if (!m || !out) return CLF_ERROR_INVALID_ARGUMENT;
    *out = m->cfg.info;
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

/* ---------------------------------------------------------------- states */

static void ws_free(clf_lm_state *s) {
    wait_staged(s);
    clf_tensor *ts[] = {s->h,  s->x,   s->qkv,  s->att,     s->o,
                        s->up, s->mid, s->lens, s->pos_ids, s->last};
    for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++)
        clf_tensor_free(ts[i]);
    s->h = s->x = s->qkv = s->att = s->o = s->up = s->mid = s->lens = s->pos_ids = s->last = NULL;
    free(s->host_lens);
    free(s->host_pos);
    s->host_lens = s->host_pos = NULL;
    s->rows = 0;
}

void clf_lm_state_free(clf_lm_state *s) {
    if (!s) return;
    ws_free(s);
    if (s->kv)
        for (int64_t i = 0; i < s->m->cfg.info.layers; i++)
            clf_tensor_free(s->kv[i]);
    free(s->kv);
    clf_tensor_free(s->offs);
    free(s->host_offs);
    free(s->lengths);
    free(s);
}

clf_status clf_lm_state_create(const clf_lm *m, int64_t batch, int64_t max_len,
                               clf_lm_state **out) {
    if (!m || !out) return CLF_ERROR_INVALID_ARGUMENT;
    clf_context *ctx = m->ctx;
    clf__clear_error(ctx);
    *out = NULL;
    const clf_lm_info *in = &m->cfg.info;
    const int64_t kv = in->kv_heads * in->head_dim;
    if (batch < 1 || max_len < 1 || max_len > in->max_positions)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                         "lm state: batch %lld must be >= 1 and max_len %lld in 1 .. %lld",
                         (long long)batch, (long long)max_len, (long long)in->max_positions);
    if (batch > INT64_MAX / max_len / 2 / kv / in->layers)
        return clf__fail(ctx, CLF_ERROR_SIZE_LIMIT, "lm state: the caches overflow");
    CLF_TRY(
        clf__check_workspace(ctx, "lm state (KV caches)", batch * max_len * 2 * kv * in->layers));
    clf_lm_state *s = calloc(1, sizeof(*s));
    clf_status st = CLF_SUCCESS;
    if (!s) return clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
    s->m = m;
    s->batch = batch;
    s->max_len = max_len;
    s->lengths = calloc((size_t)batch, sizeof(int64_t));
    s->host_offs = calloc((size_t)batch, sizeof(int32_t));
    s->kv = calloc((size_t)in->layers, sizeof(clf_tensor *));
    if (!s->lengths || !s->host_offs || !s->kv) {
        st = clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
        goto fail;
    }
    const int64_t shape[3] = {batch, max_len, 2 * kv};
    for (int64_t i = 0; i < in->layers; i++)
        CLF_CHECK(clf_tensor_create(ctx, in->cache_dtype, 3, shape, &s->kv[i]));
    CLF_CHECK(clf_tensor_create(ctx, CLF_I32, 1, &batch, &s->offs));
    *out = s;
    return CLF_SUCCESS;
fail:
    clf_lm_state_free(s);
    return st;
}

clf_status clf_lm_state_reset(clf_lm_state *s) {
    if (!s) return CLF_ERROR_INVALID_ARGUMENT;
    memset(s->lengths, 0, sizeof(int64_t) * (size_t)s->batch);
    return CLF_SUCCESS;
}

int64_t clf_lm_state_length(const clf_lm_state *s, int64_t b) {
    return s && b >= 0 && b < s->batch ? s->lengths[b] : -1;
}

/* The workspace for B T rows (it grows, never shrinks), as views of (B, T, width). */
static clf_status ws_ready(clf_lm_state *s, int64_t T, clf_lm_ws *ws) {
    const clf_lm *m = s->m;
    clf_context *ctx = m->ctx;
    const clf_lm_info *in = &m->cfg.info;
    const int64_t B = s->batch, rows = B * T, d = in->hidden_size, q = in->heads * in->head_dim,
                  kv = in->kv_heads * in->head_dim, F = in->ffn_size;
    if (rows > s->rows) {
        CLF_TRY(clf__check_workspace(ctx, "lm step", rows * (4 * d + 2 * q + 2 * kv + 3 * F)));
        ws_free(s);
        clf_status st = CLF_SUCCESS;
        s->host_lens = malloc(sizeof(int32_t) * (size_t)rows);
        s->host_pos = malloc(sizeof(int32_t) * (size_t)rows);
        if (!s->host_lens || !s->host_pos)
            st = clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
        if (st == CLF_SUCCESS) st = clf__ensure(ctx, &s->h, CLF_F32, rows * d);
        if (st == CLF_SUCCESS) st = clf__ensure(ctx, &s->x, CLF_F32, rows * d);
        if (st == CLF_SUCCESS) st = clf__ensure(ctx, &s->qkv, CLF_F32, rows * (q + 2 * kv));
        if (st == CLF_SUCCESS) st = clf__ensure(ctx, &s->att, CLF_F32, rows * q);
        if (st == CLF_SUCCESS) st = clf__ensure(ctx, &s->o, CLF_F32, rows * d);
        if (st == CLF_SUCCESS) st = clf__ensure(ctx, &s->up, CLF_F32, rows * 2 * F);
        if (st == CLF_SUCCESS) st = clf__ensure(ctx, &s->mid, CLF_F32, rows * F);
        if (st == CLF_SUCCESS) st = clf__ensure(ctx, &s->lens, CLF_I32, rows);
        if (st == CLF_SUCCESS) st = clf__ensure(ctx, &s->pos_ids, CLF_I32, rows);
        if (st == CLF_SUCCESS) st = clf__ensure(ctx, &s->last, CLF_F32, B * d);
        if (st != CLF_SUCCESS) {
            ws_free(s);
            return st;
        }
        s->rows = rows;
    }
    memset(ws, 0, sizeof(*ws));
    ws->h = clf__view(s->h, B, T, d);
    ws->x = clf__view(s->x, B, T, d);
    ws->qkv = clf__view(s->qkv, B, T, q + 2 * kv);
    ws->att = clf__view(s->att, B, T, q);
    ws->o = clf__view(s->o, B, T, d);
    ws->up = clf__view(s->up, B, T, 2 * F);
    ws->mid = clf__view(s->mid, B, T, F);
    ws->lens = clf__view(s->lens, B, T, 0);
    ws->pos_ids = clf__view(s->pos_ids, B, T, 0);
    ws->offs = s->offs;
    return CLF_SUCCESS;
}

clf_status clf__lm_attend(clf_context *ctx, const clf_lm *m, clf_tensor *kv, const int64_t *lengths,
                          const int64_t *n_new, clf_lm_ws *ws) {
    const clf_lm_info *in = &m->cfg.info;
    const int64_t B = ws->qkv.shape[0], T = ws->qkv.shape[1];
    const size_t q = (size_t)(in->heads * in->head_dim), w = (size_t)(in->kv_heads * in->head_dim);
    /* The new rows' K | V into each sequence's cache: one copy when all sequences are alike. */
    bool alike = true;
    for (int64_t b = 1; b < B; b++)
        alike = alike && lengths[b] == lengths[0] && n_new[b] == n_new[0];
    for (int64_t b = 0; b < B; b += alike ? B : 1) {
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

/* Checks a step's arguments against the state; *all_t: logits hold every position. */
static clf_status check_step(clf_lm_state *s, const clf_tensor *ids, const int64_t *n_new,
                             const clf_tensor *logits, int *all_t) {
    clf_context *ctx = s->m->ctx;
    const int64_t V = s->m->cfg.info.vocab_size;
    CLF_TRY(clf__check_ids(ctx, ids, NULL));
    CLF_TRY(clf__check_tensor(ctx, logits, "logits", CLF_F32));
    const int64_t B = ids->shape[0], T = ids->shape[1];
    char a[96], b[96];
    if (B != s->batch)
        return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH,
                         "lm step: ids %s must have the state's "
                         "%lld sequences",
                         clf__shape_str(ids, a, sizeof(a)), (long long)s->batch);
    *all_t = logits->ndim == 3;
    const bool ok = (logits->ndim == 3 && logits->shape[0] == B && logits->shape[1] == T &&
                     logits->shape[2] == V) ||
                    (logits->ndim == 2 && logits->shape[0] == B && logits->shape[1] == V);
    if (!ok)
        return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH,
                         "lm step: logits %s must be (%lld, %lld, %lld) or (%lld, %lld) for ids %s",
                         clf__shape_str(logits, a, sizeof(a)), (long long)B, (long long)T,
                         (long long)V, (long long)B, (long long)V,
                         clf__shape_str(ids, b, sizeof(b)));
    for (int64_t i = 0; i < B; i++) {
        const int64_t n = n_new ? n_new[i] : T;
        if (n < 0 || n > T)
            return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                             "lm step: n_new[%lld] = %lld must be in 0 .. %lld", (long long)i,
                             (long long)n, (long long)T);
        if (s->lengths[i] + n > s->max_len)
            return clf__fail(ctx, CLF_ERROR_SIZE_LIMIT,
                             "lm step: sequence %lld would hold %lld tokens, over the state's "
                             "max_len %lld",
                             (long long)i, (long long)(s->lengths[i] + n), (long long)s->max_len);
    }
    return CLF_SUCCESS;
}

clf_status clf_lm_state_step(clf_lm_state *s, const clf_tensor *ids, const int64_t *n_new,
                             clf_tensor *logits) {
    if (!s) return CLF_ERROR_INVALID_ARGUMENT;
    const clf_lm *m = s->m;
    clf_context *ctx = m->ctx;
    clf__clear_error(ctx);
    int all_t = 0;
    CLF_TRY(check_step(s, ids, n_new, logits, &all_t));
    const int64_t B = s->batch, T = ids->shape[1], d = m->cfg.info.hidden_size;
    int64_t *nn = malloc(sizeof(int64_t) * (size_t)B);
    clf_lm_ws ws;
    clf_status st =
        nn ? wait_staged(s) : clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
    if (st == CLF_SUCCESS) st = ws_ready(s, T, &ws);
    if (st != CLF_SUCCESS) goto done;
    int32_t *offs = s->host_offs;
    /* Query t of sequence b sits at position length(b) + t and sees keys 0 .. length(b) + t;
     * padding rows (t >= n_new[b]) are clamped to the last real one, so they read only cached
     * keys and positions in range. */
    ws.nk = 1;
    for (int64_t b = 0; b < B; b++) {
        nn[b] = n_new ? n_new[b] : T;
        offs[b] = (int32_t)s->lengths[b];
        for (int64_t t = 0; t < T; t++) {
            const int64_t tc = t < nn[b] ? t : (nn[b] > 0 ? nn[b] - 1 : -1);
            s->host_lens[b * T + t] = (int32_t)(s->lengths[b] + tc + 1);
            s->host_pos[b * T + t] = (int32_t)(s->lengths[b] + (tc < 0 ? 0 : tc));
        }
        if (s->lengths[b] + nn[b] > ws.nk) ws.nk = s->lengths[b] + nn[b];
    }
    /* Three writes, none waited for: the step's first kernels queue behind them (a blocking
     * write each was a round trip to the device per step). If one fails, the queue is drained:
     * the staging arrays must not change under a write still in flight. */
    st = clf__tensor_write_async(&ws.lens, s->host_lens, sizeof(int32_t) * (size_t)(B * T), NULL);
    if (st == CLF_SUCCESS)
        st = clf__tensor_write_async(ws.offs, offs, sizeof(int32_t) * (size_t)B, NULL);
    if (st == CLF_SUCCESS)
        st = clf__tensor_write_async(&ws.pos_ids, s->host_pos, sizeof(int32_t) * (size_t)(B * T),
                                     &s->staged);
    if (st != CLF_SUCCESS) {
        clFinish(ctx->queue);
        goto fail;
    }

    const clf_lm_arch *arch = m->cfg.arch;
    CLF_CHECK(arch->embed(ctx, m, ids, &ws));
    for (int64_t i = 0; i < m->cfg.info.layers; i++)
        CLF_CHECK(arch->block(ctx, m, &m->layers[i], s->kv[i], s->lengths, nn, &ws));
    if (all_t) {
        CLF_CHECK(arch->norm(ctx, m, &m->final, &ws, &ws.h, &ws.x));
        CLF_CHECK(clf__lin(ctx, &ws.x, &m->head, CLF_ACT_IDENTITY, logits));
    } else {
        /* Only each sequence's last new row goes through the final norm and the head. */
        if (ws.pending) { /* h += o over all rows (the norm would fuse it) */
            CLF_CHECK(clf_add(ctx, &ws.h, &ws.o, &ws.h));
            ws.pending = 0;
        }
        clf_tensor last = clf__view(s->last, B, 1, d), lx = clf__view(s->x, B, 1, d);
        for (int64_t b = 0; b < B; b++) {
            const clf_rows_at src = {&ws.h, (size_t)d, (size_t)T, 0,
                                     (size_t)(nn[b] > 0 ? nn[b] - 1 : 0)};
            const clf_rows_at dst = {&last, (size_t)d, 1, 0, 0};
            CLF_CHECK(clf__copy_rows(ctx, &src, &dst, (size_t)d, 1, (size_t)b, 1));
        }
        CLF_CHECK(arch->norm(ctx, m, &m->final, &ws, &last, &lx));
        clf_tensor lx2 = clf__view(s->x, B, d, 0);
        CLF_CHECK(clf__lin(ctx, &lx2, &m->head, CLF_ACT_IDENTITY, logits));
    }
    for (int64_t b = 0; b < B; b++)
        s->lengths[b] += nn[b];
done:
fail:
    free(nn);
    return st;
}
