/*
 * model.c — the seeds' Transformer (and BERT's encoder) from the library's ops: multi-head
 * attention with a fused QKV projection, position-wise FFN, AddNorm, encoder and decoder blocks,
 * a decoder with a KV cache of projected keys and values, and greedy decoding.
 *
 * Activations live in workspaces sized for (batch, length) and reused; a decoding step allocates
 * nothing on the device. Workspace tensors are reused at smaller shapes through views: a copy of
 * the tensor struct with another shape over the same buffer (never freed through the view).
 */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- helpers */

/* A view of base's first a*b*c (or a*b with c = 0) elements as (a, b, c). */
static clf_tensor view3(const clf_tensor *base, int64_t a, int64_t b, int64_t c) {
    clf_tensor v = *base;
    v.ndim = c ? 3 : 2;
    v.shape[0] = a;
    v.shape[1] = b;
    v.shape[2] = c;
    v.shape[3] = 0;
    v.numel = a * b * (c ? c : 1);
    v.bytes = (size_t)v.numel * clf_dtype_size(base->dtype);
    return v;
}

static void free_all(clf_tensor **ts, size_t n) {
    for (size_t i = 0; i < n; i++) {
        clf_tensor_free(ts[i]);
        ts[i] = NULL;
    }
}

typedef struct mha_w {
    clf_tensor *w_in, *b_in; /* self: fused (3d, d) and (3d); cross: W_q (d, d), b_q */
    clf_tensor *w_kv, *b_kv; /* cross only: fused (2d, d) and (2d) */
    clf_tensor *w_o, *b_o;
} mha_w;

typedef struct ffn_w {
    clf_tensor *w1, *b1, *w2, *b2;
} ffn_w;

typedef struct norm_w {
    clf_tensor *g, *b;
} norm_w;

typedef struct loader {
    clf_context *ctx;
    const clf_safetensors *st;
    const char *prefix;
} loader;

static clf_status load(loader *L, const char *name, int64_t rows, int64_t cols, clf_tensor **out) {
    char full[512];
    snprintf(full, sizeof(full), "%s%s", L->prefix, name);
    int64_t shape[2] = {rows, cols};
    return clf_safetensors_load(L->ctx, L->st, full, cols ? 2 : 1, shape, out);
}

/* Concatenates the row blocks of several tensors of shape (rows, cols) (or (rows) if cols is 0)
 * into one device tensor: the fused projections. */
static clf_status load_cat(loader *L, const char *const *names, int count, int64_t rows,
                           int64_t cols, clf_tensor **out) {
    const int64_t per = rows * (cols ? cols : 1);
    float *host = malloc((size_t)(per * count) * sizeof(float));
    if (!host) return clf__fail(L->ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
    clf_status st = CLF_SUCCESS;
    for (int i = 0; i < count && st == CLF_SUCCESS; i++) {
        char full[512], err[512];
        snprintf(full, sizeof(full), "%s%s", L->prefix, names[i]);
        const clf_st_info *info = clf_safetensors_find(L->st, full);
        bool shape_ok = info && info->ndim == (cols ? 2 : 1) && info->shape[0] == rows &&
                        (!cols || info->shape[1] == cols);
        if (!info)
            st = clf__fail(L->ctx, CLF_ERROR_BAD_FORMAT, "weights: missing tensor \"%s\"", full);
        else if (!shape_ok)
            st = clf__fail(L->ctx, CLF_ERROR_SHAPE_MISMATCH,
                           "weights: tensor \"%s\" must be (%lld%s%lld)", full, (long long)rows,
                           cols ? ", " : "", (long long)(cols ? cols : 0));
        else if ((st = clf_safetensors_read_f32(L->st, full, host + per * i, per, err,
                                                sizeof(err))) != CLF_SUCCESS)
            clf__fail(L->ctx, st, "%s", err);
    }
    int64_t shape[2] = {rows * count, cols};
    clf_tensor *t = NULL;
    if (st == CLF_SUCCESS) st = clf_tensor_create(L->ctx, CLF_F32, cols ? 2 : 1, shape, &t);
    if (st == CLF_SUCCESS) st = clf_tensor_write(t, host, (size_t)(per * count) * sizeof(float));
    free(host);
    if (st != CLF_SUCCESS) {
        clf_tensor_free(t);
        return st;
    }
    *out = t;
    return CLF_SUCCESS;
}

/* Replaces a (out, in) weight by its packed panels when the device prefers them
 * (elementwise.PACK: CPUs), see clf__linear_pack. */
static clf_status pack_w(clf_context *ctx, clf_tensor **w) {
    if (!*w || !clf__tun(ctx, "elementwise.PACK")) return CLF_SUCCESS;
    clf_tensor *p = NULL;
    clf_status st = clf__linear_pack(ctx, *w, &p);
    if (st != CLF_SUCCESS) return st;
    clf_tensor_free(*w);
    *w = p;
    return CLF_SUCCESS;
}

/* y = act(x W^T + b) with W as loaded: (out, in), or packed panels (3-D). */
static clf_status lin(clf_context *ctx, const clf_tensor *x, const clf_tensor *w,
                      const clf_tensor *b, clf_activation act, clf_tensor *y) {
    if (w->ndim == 3) return clf__linear_packed(ctx, x, w, y->shape[y->ndim - 1], b, act, y);
    return clf_linear(ctx, x, w, b, act, y);
}

static void mha_free(mha_w *m) {
    clf_tensor *ts[] = {m->w_in, m->b_in, m->w_kv, m->b_kv, m->w_o, m->b_o};
    free_all(ts, 6);
}
static void ffn_free(ffn_w *f) {
    clf_tensor *ts[] = {f->w1, f->b1, f->w2, f->b2};
    free_all(ts, 4);
}
static void norm_free(norm_w *n) {
    clf_tensor_free(n->g);
    clf_tensor_free(n->b);
}

/* Weight names of one block, by architecture. */
typedef struct block_names {
    const char *q, *k, *v, *o; /* projection stems; ".weight"/".bias" appended */
} block_names;

static clf_status load_mha(loader *L, const char *pre, int64_t d, int bias, int cross,
                           const block_names *n, mha_w *m) {
    char wq[256], wk[256], wv[256], wo[256], bq[256], bk[256], bv[256], bo[256];
    snprintf(wq, sizeof(wq), "%s%s.weight", pre, n->q);
    snprintf(wk, sizeof(wk), "%s%s.weight", pre, n->k);
    snprintf(wv, sizeof(wv), "%s%s.weight", pre, n->v);
    snprintf(wo, sizeof(wo), "%s%s.weight", pre, n->o);
    snprintf(bq, sizeof(bq), "%s%s.bias", pre, n->q);
    snprintf(bk, sizeof(bk), "%s%s.bias", pre, n->k);
    snprintf(bv, sizeof(bv), "%s%s.bias", pre, n->v);
    snprintf(bo, sizeof(bo), "%s%s.bias", pre, n->o);
    const char *w3[] = {wq, wk, wv}, *b3[] = {bq, bk, bv};
    clf_status st;
    if (!cross) {
        st = load_cat(L, w3, 3, d, d, &m->w_in);
        if (st == CLF_SUCCESS && bias) st = load_cat(L, b3, 3, d, 0, &m->b_in);
    } else {
        st = load_cat(L, w3, 1, d, d, &m->w_in);
        if (st == CLF_SUCCESS) st = load_cat(L, w3 + 1, 2, d, d, &m->w_kv);
        if (st == CLF_SUCCESS && bias) st = load_cat(L, b3, 1, d, 0, &m->b_in);
        if (st == CLF_SUCCESS && bias) st = load_cat(L, b3 + 1, 2, d, 0, &m->b_kv);
    }
    if (st == CLF_SUCCESS) st = load(L, wo + 0, d, d, &m->w_o);
    if (st == CLF_SUCCESS && bias) st = load(L, bo, d, 0, &m->b_o);
    if (st == CLF_SUCCESS) st = pack_w(L->ctx, &m->w_in);
    if (st == CLF_SUCCESS) st = pack_w(L->ctx, &m->w_kv);
    if (st == CLF_SUCCESS) st = pack_w(L->ctx, &m->w_o);
    return st;
}

static clf_status load_norm(loader *L, const char *stem, int64_t d, norm_w *n) {
    char g[300], b[300];
    snprintf(g, sizeof(g), "%s.weight", stem);
    snprintf(b, sizeof(b), "%s.bias", stem);
    clf_status st = load(L, g, d, 0, &n->g);
    if (st == CLF_SUCCESS) st = load(L, b, d, 0, &n->b);
    return st;
}

static clf_status load_ffn(loader *L, const char *d1, const char *d2, int64_t d, int64_t f,
                           ffn_w *w) {
    char n[4][300];
    snprintf(n[0], sizeof(n[0]), "%s.weight", d1);
    snprintf(n[1], sizeof(n[1]), "%s.bias", d1);
    snprintf(n[2], sizeof(n[2]), "%s.weight", d2);
    snprintf(n[3], sizeof(n[3]), "%s.bias", d2);
    clf_status st = load(L, n[0], f, d, &w->w1);
    if (st == CLF_SUCCESS) st = load(L, n[1], f, 0, &w->b1);
    if (st == CLF_SUCCESS) st = load(L, n[2], d, f, &w->w2);
    if (st == CLF_SUCCESS) st = load(L, n[3], d, 0, &w->b2);
    if (st == CLF_SUCCESS) st = pack_w(L->ctx, &w->w1);
    if (st == CLF_SUCCESS) st = pack_w(L->ctx, &w->w2);
    return st;
}

clf_transformer_config clf_transformer_default_config(int64_t vocab_size, int64_t num_hiddens,
                                                      int64_t ffn_num_hiddens, int64_t num_heads,
                                                      int64_t num_layers) {
    clf_transformer_config c;
    memset(&c, 0, sizeof(c));
    c.arch = CLF_ARCH_D2L;
    c.vocab_size = vocab_size;
    c.num_hiddens = num_hiddens;
    c.ffn_num_hiddens = ffn_num_hiddens;
    c.num_heads = num_heads;
    c.num_layers = num_layers;
    c.ffn_act = CLF_ACT_RELU;
    c.norm_eps = 1e-5f;
    c.max_len = 1000;
    return c;
}

static clf_status check_config(clf_context *ctx, const clf_transformer_config *c,
                               clf_transformer_config *out) {
    if (!c) return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "config is NULL");
    *out = *c;
    if (!out->max_len) out->max_len = 1000;
    const int64_t d = c->num_hiddens;
    if (c->arch != CLF_ARCH_D2L && c->arch != CLF_ARCH_BERT)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "config: unknown arch %d", (int)c->arch);
    if (c->vocab_size < 1 || d < 1 || c->ffn_num_hiddens < 1 || c->num_heads < 1 ||
        c->num_layers < 1 || out->max_len < 1)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                         "config: vocab_size, num_hiddens, ffn_num_hiddens, num_heads, num_layers "
                         "and max_len must be >= 1");
    const int64_t qkv[3] = {c->query_size, c->key_size, c->value_size};
    for (int i = 0; i < 3; i++)
        if (qkv[i] != 0 && qkv[i] != d)
            return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                             "config: query/key/value sizes (%lld, %lld, %lld) must equal "
                             "num_hiddens %lld: each block's input is the previous block's output",
                             (long long)qkv[0], (long long)qkv[1], (long long)qkv[2], (long long)d);
    if (d % c->num_heads != 0 || d / c->num_heads > 256)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                         "config: num_hiddens %lld must split into %lld heads of at most 256",
                         (long long)d, (long long)c->num_heads);
    if (!(c->norm_eps > 0.0f))
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "config: norm_eps must be > 0");
    if (c->ffn_act < CLF_ACT_IDENTITY || c->ffn_act > CLF_ACT_GELU_TANH)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "config: unknown ffn_act");
    if (out->max_len >= (1 << 24))
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "config: max_len must be < 2^24");
    return CLF_SUCCESS;
}

/* Checks ids (B, N) I32 and valid_lens (B) I32 or NULL. */
static clf_status check_ids(clf_context *ctx, const clf_tensor *ids, const clf_tensor *vl) {
    clf_status st = clf__check_tensor(ctx, ids, "ids", CLF_I32);
    if (st != CLF_SUCCESS) return st;
    char a[96], b[96];
    if (ids->ndim != 2)
        return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH, "ids %s must be (batch, length)",
                         clf__shape_str(ids, a, sizeof(a)));
    if (vl) {
        if ((st = clf__check_tensor(ctx, vl, "valid_lens", CLF_I32)) != CLF_SUCCESS) return st;
        if (vl->ndim != 1 || vl->shape[0] != ids->shape[0])
            return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH,
                             "valid_lens %s must be (%lld), one per sequence of ids %s",
                             clf__shape_str(vl, a, sizeof(a)), (long long)ids->shape[0],
                             clf__shape_str(ids, b, sizeof(b)));
    }
    return CLF_SUCCESS;
}

/* Grows a workspace tensor to at least n elements. */
static clf_status ensure(clf_context *ctx, clf_tensor **t, clf_dtype dt, int64_t n) {
    if (*t && (*t)->numel >= n) return CLF_SUCCESS;
    clf_tensor *nt = NULL;
    clf_status st = clf_tensor_create(ctx, dt, 1, &n, &nt);
    if (st != CLF_SUCCESS) return st;
    clf_tensor_free(*t);
    *t = nt;
    return CLF_SUCCESS;
}

/* A workspace of `floats` floats must fit the device's global memory (with the weights and
 * everything else it holds, it could still fail later; this catches the impossible at once). */
static clf_status check_workspace(clf_context *ctx, const char *what, int64_t floats) {
    const double bytes = 4.0 * (double)floats;
    if (bytes > (double)ctx->info.global_mem_bytes)
        return clf__fail(ctx, CLF_ERROR_SIZE_LIMIT,
                         "%s: the workspace needs %.0f MiB, more than the device's %.0f MiB of "
                         "global memory",
                         what, bytes / 1048576.0, (double)ctx->info.global_mem_bytes / 1048576.0);
    return CLF_SUCCESS;
}

/* ---------------------------------------------------------------- encoder */

typedef struct enc_layer {
    mha_w att;
    norm_w n1, n2;
    ffn_w ffn;
    clf_tensor *weights; /* recorded attention weights (B, H, N, N) */
} enc_layer;

struct clf_encoder {
    clf_context *ctx;
    clf_transformer_config cfg;
    clf_tensor *emb;      /* (V, d) word embeddings */
    clf_tensor *pos_type; /* BERT: (max_len, d) position + token type 0 embeddings */
    norm_w emb_norm;      /* BERT */
    enc_layer *layers;
    /* workspace */
    clf_tensor *y, *qkv, *att, *tmp, *h, *pos_ids;
    int64_t ws_rows;
    int64_t pos_b, pos_n; /* shape pos_ids holds */
    int record;
    int64_t launches_per_layer;
};

void clf_encoder_free(clf_encoder *enc) {
    if (!enc) return;
    if (enc->layers)
        for (int64_t i = 0; i < enc->cfg.num_layers; i++) {
            mha_free(&enc->layers[i].att);
            norm_free(&enc->layers[i].n1);
            norm_free(&enc->layers[i].n2);
            ffn_free(&enc->layers[i].ffn);
            clf_tensor_free(enc->layers[i].weights);
        }
    free(enc->layers);
    clf_tensor *ts[] = {enc->emb, enc->pos_type, enc->y, enc->qkv,
                        enc->att, enc->tmp,      enc->h, enc->pos_ids};
    free_all(ts, sizeof(ts) / sizeof(ts[0]));
    norm_free(&enc->emb_norm);
    free(enc);
}

static clf_status load_bert_embeddings(loader *L, clf_encoder *enc) {
    const int64_t d = enc->cfg.num_hiddens, P = enc->cfg.max_len;
    clf_status st = load(L, "embeddings.word_embeddings.weight", enc->cfg.vocab_size, d, &enc->emb);
    if (st != CLF_SUCCESS) return st;
    char full[512], err[512];
    snprintf(full, sizeof(full), "%sembeddings.position_embeddings.weight", L->prefix);
    const clf_st_info *pi = clf_safetensors_find(L->st, full);
    snprintf(full + 256, 256, "%sembeddings.token_type_embeddings.weight", L->prefix);
    const clf_st_info *ti = clf_safetensors_find(L->st, full + 256);
    if (!pi || !ti)
        return clf__fail(L->ctx, CLF_ERROR_BAD_FORMAT, "weights: missing tensor \"%s\"",
                         !pi ? full : full + 256);
    if (pi->ndim != 2 || pi->shape[1] != d || pi->shape[0] < P || ti->ndim != 2 ||
        ti->shape[1] != d || ti->shape[0] < 1)
        return clf__fail(L->ctx, CLF_ERROR_SHAPE_MISMATCH,
                         "weights: position embeddings must be (>= max_len %lld, %lld) and token "
                         "type embeddings (>= 1, %lld)",
                         (long long)P, (long long)d, (long long)d);
    float *pos = malloc((size_t)(pi->numel + ti->numel) * sizeof(float));
    if (!pos) return clf__fail(L->ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
    float *typ = pos + pi->numel;
    st = clf_safetensors_read_f32(L->st, full, pos, pi->numel, err, sizeof(err));
    if (st == CLF_SUCCESS)
        st = clf_safetensors_read_f32(L->st, full + 256, typ, ti->numel, err, sizeof(err));
    if (st != CLF_SUCCESS) {
        free(pos);
        return clf__fail(L->ctx, st, "%s", err);
    }
    for (int64_t p = 0; p < P; p++)
        for (int64_t j = 0; j < d; j++)
            pos[p * d + j] += typ[j];
    int64_t shape[2] = {P, d};
    st = clf_tensor_create(L->ctx, CLF_F32, 2, shape, &enc->pos_type);
    if (st == CLF_SUCCESS) st = clf_tensor_write(enc->pos_type, pos, (size_t)(P * d) * 4);
    free(pos);
    if (st == CLF_SUCCESS) st = load_norm(L, "embeddings.LayerNorm", d, &enc->emb_norm);
    return st;
}

clf_status clf_encoder_load(clf_context *ctx, const clf_safetensors *st, const char *prefix,
                            const clf_transformer_config *cfg, clf_encoder **out) {
    if (!ctx) return CLF_ERROR_INVALID_ARGUMENT;
    if (!st || !out)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "st and out must not be NULL");
    *out = NULL;
    clf_encoder *enc = calloc(1, sizeof(*enc));
    if (!enc) return clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
    enc->ctx = ctx;
    clf_status s = check_config(ctx, cfg, &enc->cfg);
    if (s != CLF_SUCCESS) {
        free(enc);
        return s;
    }
    const clf_transformer_config *c = &enc->cfg;
    const int64_t d = c->num_hiddens, F = c->ffn_num_hiddens;
    loader L = {ctx, st, prefix ? prefix : ""};
    enc->layers = calloc((size_t)c->num_layers, sizeof(enc_layer));
    if (!enc->layers) s = clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
    if (s == CLF_SUCCESS)
        s = c->arch == CLF_ARCH_D2L ? load(&L, "embedding.weight", c->vocab_size, d, &enc->emb)
                                    : load_bert_embeddings(&L, enc);
    for (int64_t i = 0; i < c->num_layers && s == CLF_SUCCESS; i++) {
        enc_layer *l = &enc->layers[i];
        char pre[128], a[192], b[192], f1[192], f2[192];
        if (c->arch == CLF_ARCH_D2L) {
            snprintf(pre, sizeof(pre), "blks.block%lld.", (long long)i);
            block_names bn = {"W_q", "W_k", "W_v", "W_o"};
            char mp[160];
            snprintf(mp, sizeof(mp), "%sattention.", pre);
            s = load_mha(&L, mp, d, c->use_bias, 0, &bn, &l->att);
            snprintf(a, sizeof(a), "%saddnorm1.ln", pre);
            snprintf(b, sizeof(b), "%saddnorm2.ln", pre);
            snprintf(f1, sizeof(f1), "%sffn.dense1", pre);
            snprintf(f2, sizeof(f2), "%sffn.dense2", pre);
        } else {
            snprintf(pre, sizeof(pre), "encoder.layer.%lld.", (long long)i);
            block_names bn = {"self.query", "self.key", "self.value", "output.dense"};
            char mp[160];
            snprintf(mp, sizeof(mp), "%sattention.", pre);
            s = load_mha(&L, mp, d, 1, 0, &bn, &l->att);
            snprintf(a, sizeof(a), "%sattention.output.LayerNorm", pre);
            snprintf(b, sizeof(b), "%soutput.LayerNorm", pre);
            snprintf(f1, sizeof(f1), "%sintermediate.dense", pre);
            snprintf(f2, sizeof(f2), "%soutput.dense", pre);
        }
        if (s == CLF_SUCCESS) s = load_norm(&L, a, d, &l->n1);
        if (s == CLF_SUCCESS) s = load_norm(&L, b, d, &l->n2);
        if (s == CLF_SUCCESS) s = load_ffn(&L, f1, f2, d, F, &l->ffn);
    }
    if (s != CLF_SUCCESS) {
        clf_encoder_free(enc);
        return s;
    }
    *out = enc;
    return CLF_SUCCESS;
}

clf_status clf_encoder_reserve(clf_encoder *enc, int64_t batch, int64_t len) {
    if (!enc) return CLF_ERROR_INVALID_ARGUMENT;
    clf_context *ctx = enc->ctx;
    if (batch < 1 || len < 1)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "reserve: batch and len must be >= 1");
    if (len > enc->cfg.max_len)
        return clf__fail(ctx, CLF_ERROR_SIZE_LIMIT,
                         "sequence length %lld exceeds the model's max_len %lld", (long long)len,
                         (long long)enc->cfg.max_len);
    if (batch > INT64_MAX / len / 4 / enc->cfg.num_hiddens)
        return clf__fail(ctx, CLF_ERROR_SIZE_LIMIT, "reserve: batch x len overflows");
    const int64_t rows = batch * len, d = enc->cfg.num_hiddens;
    if (rows <= enc->ws_rows) return CLF_SUCCESS;
    clf_status cs = check_workspace(ctx, "encoder", rows * (6 * d + enc->cfg.ffn_num_hiddens + 1));
    if (cs != CLF_SUCCESS) return cs;
    clf_status st = ensure(ctx, &enc->y, CLF_F32, rows * d);
    if (st == CLF_SUCCESS) st = ensure(ctx, &enc->qkv, CLF_F32, rows * 3 * d);
    if (st == CLF_SUCCESS) st = ensure(ctx, &enc->att, CLF_F32, rows * d);
    if (st == CLF_SUCCESS) st = ensure(ctx, &enc->tmp, CLF_F32, rows * d);
    if (st == CLF_SUCCESS) st = ensure(ctx, &enc->h, CLF_F32, rows * enc->cfg.ffn_num_hiddens);
    if (st == CLF_SUCCESS && enc->cfg.arch == CLF_ARCH_BERT) {
        st = ensure(ctx, &enc->pos_ids, CLF_I32, rows);
        enc->pos_b = enc->pos_n = 0;
    }
    if (st == CLF_SUCCESS) enc->ws_rows = rows;
    return st;
}

clf_status clf_encoder_record_weights(clf_encoder *enc, int on) {
    if (!enc) return CLF_ERROR_INVALID_ARGUMENT;
    enc->record = on ? 1 : 0;
    return CLF_SUCCESS;
}

const clf_tensor *clf_encoder_attention_weights(const clf_encoder *enc, int64_t layer) {
    if (!enc || layer < 0 || layer >= enc->cfg.num_layers) return NULL;
    return enc->layers[layer].weights;
}

int64_t clf_encoder_launches_per_layer(const clf_encoder *enc) {
    return enc ? enc->launches_per_layer : 0;
}

/* One post-LN block over x (B, N, d), in place. */
static clf_status encoder_block(clf_encoder *enc, enc_layer *l, clf_tensor *x, int64_t B, int64_t N,
                                const clf_tensor *valid_lens) {
    clf_context *ctx = enc->ctx;
    const clf_transformer_config *c = &enc->cfg;
    const int64_t d = c->num_hiddens, H = c->num_heads;
    clf_tensor qkv = view3(enc->qkv, B, N, 3 * d), att = view3(enc->att, B, N, d);
    clf_tensor tmp = view3(enc->tmp, B, N, d), y = view3(enc->y, B, N, d);
    clf_tensor h = view3(enc->h, B, N, c->ffn_num_hiddens);
    clf_status st = lin(ctx, x, l->att.w_in, l->att.b_in, CLF_ACT_IDENTITY, &qkv);
    if (st != CLF_SUCCESS) return st;
    clf_attention_desc ad = clf_attention_default_desc(H, d / H);
    ad.k_col = d;
    ad.v_col = 2 * d;
    ad.mask.valid_lens = valid_lens;
    if (enc->record) {
        int64_t ws[4] = {B, H, N, N};
        bool fits = l->weights && l->weights->ndim == 4;
        for (int i = 0; fits && i < 4; i++)
            fits = l->weights->shape[i] == ws[i];
        if (!fits) {
            clf_tensor_free(l->weights);
            l->weights = NULL;
            if ((st = clf_tensor_create(ctx, CLF_F32, 4, ws, &l->weights)) != CLF_SUCCESS)
                return st;
        }
        ad.naive = 1;
        ad.weights = l->weights;
    }
    if ((st = clf_attention(ctx, &qkv, &qkv, &qkv, &att, &ad)) != CLF_SUCCESS) return st;
    if ((st = lin(ctx, &att, l->att.w_o, l->att.b_o, CLF_ACT_IDENTITY, &tmp)) != CLF_SUCCESS)
        return st;
    if ((st = clf_layernorm(ctx, &tmp, x, l->n1.g, l->n1.b, c->norm_eps, &y)) != CLF_SUCCESS)
        return st;
    if ((st = lin(ctx, &y, l->ffn.w1, l->ffn.b1, c->ffn_act, &h)) != CLF_SUCCESS) return st;
    if ((st = lin(ctx, &h, l->ffn.w2, l->ffn.b2, CLF_ACT_IDENTITY, &tmp)) != CLF_SUCCESS) return st;
    return clf_layernorm(ctx, &tmp, &y, l->n2.g, l->n2.b, c->norm_eps, x);
}

clf_status clf_encoder_forward(clf_encoder *enc, const clf_tensor *ids,
                               const clf_tensor *valid_lens, clf_tensor *out) {
    if (!enc) return CLF_ERROR_INVALID_ARGUMENT;
    clf_context *ctx = enc->ctx;
    clf_status st = check_ids(ctx, ids, valid_lens);
    if (st == CLF_SUCCESS) st = clf__check_tensor(ctx, out, "out", CLF_F32);
    if (st != CLF_SUCCESS) return st;
    const int64_t B = ids->shape[0], N = ids->shape[1], d = enc->cfg.num_hiddens;
    if (out->ndim != 3 || out->shape[0] != B || out->shape[1] != N || out->shape[2] != d) {
        char a[96], b[96];
        return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH,
                         "encoder: out %s must be (%lld, %lld, %lld) for ids %s",
                         clf__shape_str(out, a, sizeof(a)), (long long)B, (long long)N,
                         (long long)d, clf__shape_str(ids, b, sizeof(b)));
    }
    if ((st = clf_encoder_reserve(enc, B, N)) != CLF_SUCCESS) return st;
    if (enc->cfg.arch == CLF_ARCH_D2L) {
        st = clf_embedding(ctx, ids, enc->emb, (float)sqrt((double)d), 1, 0, out);
    } else {
        clf_tensor pos = view3(enc->pos_ids, B, N, 0), tmp = view3(enc->tmp, B, N, d);
        if (enc->pos_b != B || enc->pos_n != N) {
            int32_t *p = malloc((size_t)(B * N) * sizeof(int32_t));
            if (!p) return clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
            for (int64_t i = 0; i < B * N; i++)
                p[i] = (int32_t)(i % N);
            st = clf_tensor_write(&pos, p, pos.bytes);
            free(p);
            if (st != CLF_SUCCESS) return st;
            enc->pos_b = B;
            enc->pos_n = N;
        }
        st = clf_embedding(ctx, ids, enc->emb, 1.0f, 0, 0, out);
        if (st == CLF_SUCCESS) st = clf_embedding(ctx, &pos, enc->pos_type, 1.0f, 0, 0, &tmp);
        if (st == CLF_SUCCESS)
            st = clf_layernorm(ctx, out, &tmp, enc->emb_norm.g, enc->emb_norm.b, enc->cfg.norm_eps,
                               out);
    }
    const uint64_t launches1 = ctx->launches;
    for (int64_t i = 0; i < enc->cfg.num_layers && st == CLF_SUCCESS; i++)
        st = encoder_block(enc, &enc->layers[i], out, B, N, valid_lens);
    if (st == CLF_SUCCESS) {
        enc->launches_per_layer = (int64_t)(ctx->launches - launches1) / enc->cfg.num_layers;
    }
    return st;
}

/* ---------------------------------------------------------------- decoder */

typedef struct dec_layer {
    mha_w self, cross;
    norm_w n1, n2, n3;
    ffn_w ffn;
    clf_tensor *cache;    /* (B, max_len, 2d): projected K | V of decoded tokens */
    clf_tensor *cross_kv; /* (B, Ns, 2d): projected K | V of the encoder outputs */
    clf_tensor *w_self, *w_cross;
} dec_layer;

struct clf_decoder {
    clf_context *ctx;
    clf_transformer_config cfg;
    clf_tensor *emb, *dense_w, *dense_b;
    dec_layer *layers;
    /* state */
    int64_t batch, max_len, src_len, length;
    int ready;
    clf_tensor *enc_lens; /* copy of enc_valid_lens, or NULL */
    /* workspace, (batch * max_len) rows */
    clf_tensor *x, *y, *qkv, *q, *att, *tmp, *h;
    int record;
};

static void dec_state_free(clf_decoder *dec) {
    if (dec->layers)
        for (int64_t i = 0; i < dec->cfg.num_layers; i++) {
            dec_layer *l = &dec->layers[i];
            clf_tensor *ts[] = {l->cache, l->cross_kv, l->w_self, l->w_cross};
            free_all(ts, 4);
            l->cache = l->cross_kv = l->w_self = l->w_cross = NULL;
        }
    clf_tensor *ts[] = {dec->enc_lens, dec->x,   dec->y,   dec->qkv,
                        dec->q,        dec->att, dec->tmp, dec->h};
    free_all(ts, sizeof(ts) / sizeof(ts[0]));
    dec->enc_lens = dec->x = dec->y = dec->qkv = dec->q = dec->att = dec->tmp = dec->h = NULL;
    dec->ready = 0;
    dec->length = 0;
}

void clf_decoder_free(clf_decoder *dec) {
    if (!dec) return;
    dec_state_free(dec);
    if (dec->layers)
        for (int64_t i = 0; i < dec->cfg.num_layers; i++) {
            dec_layer *l = &dec->layers[i];
            mha_free(&l->self);
            mha_free(&l->cross);
            norm_free(&l->n1);
            norm_free(&l->n2);
            norm_free(&l->n3);
            ffn_free(&l->ffn);
        }
    free(dec->layers);
    clf_tensor_free(dec->emb);
    clf_tensor_free(dec->dense_w);
    clf_tensor_free(dec->dense_b);
    free(dec);
}

clf_status clf_decoder_load(clf_context *ctx, const clf_safetensors *st, const char *prefix,
                            const clf_transformer_config *cfg, clf_decoder **out) {
    if (!ctx) return CLF_ERROR_INVALID_ARGUMENT;
    if (!st || !out)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "st and out must not be NULL");
    *out = NULL;
    clf_decoder *dec = calloc(1, sizeof(*dec));
    if (!dec) return clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
    dec->ctx = ctx;
    clf_status s = check_config(ctx, cfg, &dec->cfg);
    if (s == CLF_SUCCESS && dec->cfg.arch != CLF_ARCH_D2L)
        s = clf__fail(ctx, CLF_ERROR_UNSUPPORTED, "decoder: only CLF_ARCH_D2L decoders exist");
    if (s != CLF_SUCCESS) {
        free(dec);
        return s;
    }
    const clf_transformer_config *c = &dec->cfg;
    const int64_t d = c->num_hiddens, F = c->ffn_num_hiddens, V = c->vocab_size;
    loader L = {ctx, st, prefix ? prefix : ""};
    dec->layers = calloc((size_t)c->num_layers, sizeof(dec_layer));
    if (!dec->layers) s = clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
    if (s == CLF_SUCCESS) s = load(&L, "embedding.weight", V, d, &dec->emb);
    if (s == CLF_SUCCESS) s = load(&L, "dense.weight", V, d, &dec->dense_w);
    if (s == CLF_SUCCESS) s = load(&L, "dense.bias", V, 0, &dec->dense_b);
    if (s == CLF_SUCCESS) s = pack_w(ctx, &dec->dense_w);
    block_names bn = {"W_q", "W_k", "W_v", "W_o"};
    for (int64_t i = 0; i < c->num_layers && s == CLF_SUCCESS; i++) {
        dec_layer *l = &dec->layers[i];
        char pre[160], n[3][200], f1[200], f2[200];
        snprintf(pre, sizeof(pre), "blks.block%lld.attention1.", (long long)i);
        s = load_mha(&L, pre, d, c->use_bias, 0, &bn, &l->self);
        snprintf(pre, sizeof(pre), "blks.block%lld.attention2.", (long long)i);
        if (s == CLF_SUCCESS) s = load_mha(&L, pre, d, c->use_bias, 1, &bn, &l->cross);
        for (int j = 0; j < 3; j++)
            snprintf(n[j], sizeof(n[j]), "blks.block%lld.addnorm%d.ln", (long long)i, j + 1);
        snprintf(f1, sizeof(f1), "blks.block%lld.ffn.dense1", (long long)i);
        snprintf(f2, sizeof(f2), "blks.block%lld.ffn.dense2", (long long)i);
        if (s == CLF_SUCCESS) s = load_norm(&L, n[0], d, &l->n1);
        if (s == CLF_SUCCESS) s = load_norm(&L, n[1], d, &l->n2);
        if (s == CLF_SUCCESS) s = load_norm(&L, n[2], d, &l->n3);
        if (s == CLF_SUCCESS) s = load_ffn(&L, f1, f2, d, F, &l->ffn);
    }
    if (s != CLF_SUCCESS) {
        clf_decoder_free(dec);
        return s;
    }
    *out = dec;
    return CLF_SUCCESS;
}

clf_status clf_decoder_init_state(clf_decoder *dec, const clf_tensor *enc_outputs,
                                  const clf_tensor *enc_valid_lens, int64_t max_len) {
    if (!dec) return CLF_ERROR_INVALID_ARGUMENT;
    clf_context *ctx = dec->ctx;
    const clf_transformer_config *c = &dec->cfg;
    const int64_t d = c->num_hiddens;
    clf_status st = clf__check_tensor(ctx, enc_outputs, "enc_outputs", CLF_F32);
    if (st != CLF_SUCCESS) return st;
    char a[96];
    if (enc_outputs->ndim != 3 || enc_outputs->shape[2] != d)
        return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH,
                         "decoder: enc_outputs %s must be (B, Ns, %lld)",
                         clf__shape_str(enc_outputs, a, sizeof(a)), (long long)d);
    const int64_t B = enc_outputs->shape[0], Ns = enc_outputs->shape[1];
    if (enc_valid_lens) {
        if ((st = clf__check_tensor(ctx, enc_valid_lens, "enc_valid_lens", CLF_I32)) != CLF_SUCCESS)
            return st;
        if (enc_valid_lens->ndim != 1 || enc_valid_lens->shape[0] != B)
            return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH,
                             "decoder: enc_valid_lens %s must be (%lld)",
                             clf__shape_str(enc_valid_lens, a, sizeof(a)), (long long)B);
    }
    if (max_len < 1 || max_len > c->max_len)
        return clf__fail(ctx, CLF_ERROR_SIZE_LIMIT, "decoder: max_len %lld must be 1 .. %lld",
                         (long long)max_len, (long long)c->max_len);
    if (B > INT64_MAX / max_len / 4 / (3 * d + c->ffn_num_hiddens))
        return clf__fail(ctx, CLF_ERROR_SIZE_LIMIT, "decoder: batch x max_len overflows");
    const int64_t rows = B * max_len;
    st = check_workspace(ctx, "decoder state",
                         rows * (2 * d * c->num_layers + 7 * d + c->ffn_num_hiddens) +
                             B * Ns * 2 * d * c->num_layers);
    if (st != CLF_SUCCESS) return st;
    dec_state_free(dec);
    int64_t sh[3] = {B, max_len, 2 * d}, shx[3] = {B, Ns, 2 * d};
    if (enc_valid_lens) {
        st = clf_tensor_create(ctx, CLF_I32, 1, &B, &dec->enc_lens);
        if (st == CLF_SUCCESS) st = clf_tensor_copy(dec->enc_lens, enc_valid_lens);
    }
    for (int64_t i = 0; i < c->num_layers && st == CLF_SUCCESS; i++) {
        dec_layer *l = &dec->layers[i];
        st = clf_tensor_create(ctx, CLF_F32, 3, sh, &l->cache);
        if (st == CLF_SUCCESS) st = clf_tensor_create(ctx, CLF_F32, 3, shx, &l->cross_kv);
        if (st == CLF_SUCCESS)
            st = lin(ctx, enc_outputs, l->cross.w_kv, l->cross.b_kv, CLF_ACT_IDENTITY, l->cross_kv);
    }
    if (st == CLF_SUCCESS) st = ensure(ctx, &dec->x, CLF_F32, rows * d);
    if (st == CLF_SUCCESS) st = ensure(ctx, &dec->y, CLF_F32, rows * d);
    if (st == CLF_SUCCESS) st = ensure(ctx, &dec->qkv, CLF_F32, rows * 3 * d);
    if (st == CLF_SUCCESS) st = ensure(ctx, &dec->q, CLF_F32, rows * d);
    if (st == CLF_SUCCESS) st = ensure(ctx, &dec->att, CLF_F32, rows * d);
    if (st == CLF_SUCCESS) st = ensure(ctx, &dec->tmp, CLF_F32, rows * d);
    if (st == CLF_SUCCESS) st = ensure(ctx, &dec->h, CLF_F32, rows * c->ffn_num_hiddens);
    if (st != CLF_SUCCESS) {
        dec_state_free(dec);
        return st;
    }
    dec->batch = B;
    dec->src_len = Ns;
    dec->max_len = max_len;
    dec->length = 0;
    dec->ready = 1;
    return CLF_SUCCESS;
}

clf_status clf_decoder_reset(clf_decoder *dec) {
    if (!dec) return CLF_ERROR_INVALID_ARGUMENT;
    dec->length = 0;
    return CLF_SUCCESS;
}

int64_t clf_decoder_length(const clf_decoder *dec) {
    return dec ? dec->length : 0;
}

clf_status clf_decoder_record_weights(clf_decoder *dec, int on) {
    if (!dec) return CLF_ERROR_INVALID_ARGUMENT;
    dec->record = on ? 1 : 0;
    return CLF_SUCCESS;
}

const clf_tensor *clf_decoder_attention_weights(const clf_decoder *dec, int64_t layer, int which) {
    if (!dec || layer < 0 || layer >= dec->cfg.num_layers || which < 0 || which > 1) return NULL;
    return which ? dec->layers[layer].w_cross : dec->layers[layer].w_self;
}

/* (Re)allocates a recorded-weights tensor of shape (B, H, T, K). */
static clf_status weights_for(clf_context *ctx, clf_tensor **w, int64_t B, int64_t H, int64_t T,
                              int64_t K) {
    int64_t s[4] = {B, H, T, K};
    bool fits = *w != NULL;
    for (int i = 0; fits && i < 4; i++)
        fits = (*w)->shape[i] == s[i];
    if (fits) return CLF_SUCCESS;
    clf_tensor_free(*w);
    *w = NULL;
    return clf_tensor_create(ctx, CLF_F32, 4, s, w);
}

/* Copies the K | V columns (d .. 3d) of qkv (B, T, 3d) into rows pos .. pos+T-1 of the cache. */
static clf_status append_kv(clf_decoder *dec, const clf_tensor *qkv, clf_tensor *cache, int64_t B,
                            int64_t T) {
    clf_context *ctx = dec->ctx;
    const size_t d = (size_t)dec->cfg.num_hiddens, f = sizeof(float);
    const size_t src_origin[3] = {d * f, 0, 0}, dst_origin[3] = {0, (size_t)dec->length, 0};
    const size_t region[3] = {2 * d * f, (size_t)T, (size_t)B};
    cl_event ev = NULL;
    cl_int err = clf__fault(ctx, CLF_FAULT_TRANSFER)
                     ? CL_OUT_OF_RESOURCES
                     : clEnqueueCopyBufferRect(ctx->queue, qkv->mem, cache->mem, src_origin,
                                               dst_origin, region, 3 * d * f, (size_t)T * 3 * d * f,
                                               2 * d * f, (size_t)dec->max_len * 2 * d * f, 0, NULL,
                                               ctx->profiling ? &ev : NULL);
    if (err != CL_SUCCESS) return clf__cl_fail(ctx, err, "clEnqueueCopyBufferRect (KV cache)");
    ctx->launches++;
    return ev ? clf__profile_event(ctx, ev) : CLF_SUCCESS;
}

clf_status clf_decoder_step(clf_decoder *dec, const clf_tensor *ids, clf_tensor *logits) {
    if (!dec) return CLF_ERROR_INVALID_ARGUMENT;
    clf_context *ctx = dec->ctx;
    const clf_transformer_config *c = &dec->cfg;
    if (!dec->ready)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                         "decoder: call clf_decoder_init_state first");
    clf_status st = check_ids(ctx, ids, NULL);
    if (st == CLF_SUCCESS) st = clf__check_tensor(ctx, logits, "logits", CLF_F32);
    if (st != CLF_SUCCESS) return st;
    const int64_t B = ids->shape[0], T = ids->shape[1], d = c->num_hiddens, H = c->num_heads;
    const int64_t V = c->vocab_size, pos = dec->length;
    char a[96], b[96];
    if (B != dec->batch)
        return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH,
                         "decoder: ids %s: the state holds %lld sequences",
                         clf__shape_str(ids, a, sizeof(a)), (long long)dec->batch);
    if (T > dec->max_len - pos)
        return clf__fail(ctx, CLF_ERROR_SIZE_LIMIT,
                         "decoder: %lld decoded + %lld new tokens exceed max_len %lld",
                         (long long)pos, (long long)T, (long long)dec->max_len);
    if (logits->ndim != 3 || logits->shape[0] != B || logits->shape[1] != T ||
        logits->shape[2] != V)
        return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH,
                         "decoder: logits %s must be (%lld, %lld, %lld) for ids %s",
                         clf__shape_str(logits, a, sizeof(a)), (long long)B, (long long)T,
                         (long long)V, clf__shape_str(ids, b, sizeof(b)));
    clf_tensor X = view3(dec->x, B, T, d), Y = view3(dec->y, B, T, d);
    clf_tensor qkv = view3(dec->qkv, B, T, 3 * d), q = view3(dec->q, B, T, d);
    clf_tensor att = view3(dec->att, B, T, d), tmp = view3(dec->tmp, B, T, d);
    clf_tensor h = view3(dec->h, B, T, c->ffn_num_hiddens);
    clf_tensor *x = &X, *y = &Y;
    st = clf_embedding(ctx, ids, dec->emb, (float)sqrt((double)d), 1, pos, x);
    for (int64_t i = 0; i < c->num_layers && st == CLF_SUCCESS; i++) {
        dec_layer *l = &dec->layers[i];
        /* causal self-attention over the cache */
        st = lin(ctx, x, l->self.w_in, l->self.b_in, CLF_ACT_IDENTITY, &qkv);
        if (st == CLF_SUCCESS) st = append_kv(dec, &qkv, l->cache, B, T);
        clf_attention_desc ad = clf_attention_default_desc(H, d / H);
        ad.k_col = 0;
        ad.v_col = d;
        ad.nk = pos + T;
        ad.mask.causal = 1;
        ad.mask.causal_offset = pos;
        if (st == CLF_SUCCESS && dec->record) {
            st = weights_for(ctx, &l->w_self, B, H, T, pos + T);
            ad.naive = 1;
            ad.weights = l->w_self;
        }
        if (st == CLF_SUCCESS) st = clf_attention(ctx, &qkv, l->cache, l->cache, &att, &ad);
        if (st == CLF_SUCCESS)
            st = lin(ctx, &att, l->self.w_o, l->self.b_o, CLF_ACT_IDENTITY, &tmp);
        if (st == CLF_SUCCESS) st = clf_layernorm(ctx, &tmp, x, l->n1.g, l->n1.b, c->norm_eps, y);
        /* cross-attention over the encoder outputs */
        if (st == CLF_SUCCESS) st = lin(ctx, y, l->cross.w_in, l->cross.b_in, CLF_ACT_IDENTITY, &q);
        clf_attention_desc cd = clf_attention_default_desc(H, d / H);
        cd.k_col = 0;
        cd.v_col = d;
        cd.mask.valid_lens = dec->enc_lens;
        if (st == CLF_SUCCESS && dec->record) {
            st = weights_for(ctx, &l->w_cross, B, H, T, dec->src_len);
            cd.naive = 1;
            cd.weights = l->w_cross;
        }
        if (st == CLF_SUCCESS) st = clf_attention(ctx, &q, l->cross_kv, l->cross_kv, &att, &cd);
        if (st == CLF_SUCCESS)
            st = lin(ctx, &att, l->cross.w_o, l->cross.b_o, CLF_ACT_IDENTITY, &tmp);
        if (st == CLF_SUCCESS) st = clf_layernorm(ctx, &tmp, y, l->n2.g, l->n2.b, c->norm_eps, x);
        /* FFN: x holds Z */
        if (st == CLF_SUCCESS) st = lin(ctx, x, l->ffn.w1, l->ffn.b1, c->ffn_act, &h);
        if (st == CLF_SUCCESS) st = lin(ctx, &h, l->ffn.w2, l->ffn.b2, CLF_ACT_IDENTITY, &tmp);
        if (st == CLF_SUCCESS) st = clf_layernorm(ctx, &tmp, x, l->n3.g, l->n3.b, c->norm_eps, y);
        clf_tensor *t = x;
        x = y;
        y = t;
    }
    if (st == CLF_SUCCESS) st = lin(ctx, x, dec->dense_w, dec->dense_b, CLF_ACT_IDENTITY, logits);
    /* The caches hold rows up to pos + T even if a later call failed: only count them when the
     * whole step succeeded (a failed step leaves the decoded length unchanged). */
    if (st == CLF_SUCCESS) dec->length = pos + T;
    return st;
}

/* ---------------------------------------------------------------- greedy decoding */

clf_status clf_greedy_decode(clf_encoder *enc, clf_decoder *dec, const clf_tensor *src,
                             const clf_tensor *src_valid_lens, const clf_greedy_params *p,
                             int32_t *tokens, int64_t *lengths) {
    if (!enc || !dec) return CLF_ERROR_INVALID_ARGUMENT;
    clf_context *ctx = enc->ctx;
    if (dec->ctx != ctx)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                         "greedy: encoder and decoder belong to different contexts");
    if (!p || !tokens || !lengths)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                         "greedy: params, tokens and lengths must not be NULL");
    clf_status st = check_ids(ctx, src, src_valid_lens);
    if (st != CLF_SUCCESS) return st;
    if (enc->cfg.num_hiddens != dec->cfg.num_hiddens)
        return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH, "greedy: encoder d %lld != decoder d %lld",
                         (long long)enc->cfg.num_hiddens, (long long)dec->cfg.num_hiddens);
    const int64_t V = dec->cfg.vocab_size, M = p->max_steps;
    if (M < 1 || p->bos < 0 || p->bos >= V)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                         "greedy: max_steps must be >= 1 and bos a token id below %lld",
                         (long long)V);
    const int64_t B = src->shape[0], Ns = src->shape[1], d = enc->cfg.num_hiddens;
    clf_tensor *enc_out = NULL, *ids = NULL, *logits = NULL;
    int32_t *host = malloc((size_t)B * sizeof(int32_t));
    char *done = calloc((size_t)B, 1);
    int64_t s3[3] = {B, Ns, d}, s2[2] = {B, 1}, sl[3] = {B, 1, V};
    if (!host || !done) st = clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
    if (st == CLF_SUCCESS) st = clf_tensor_create(ctx, CLF_F32, 3, s3, &enc_out);
    if (st == CLF_SUCCESS) st = clf_tensor_create(ctx, CLF_I32, 2, s2, &ids);
    if (st == CLF_SUCCESS) st = clf_tensor_create(ctx, CLF_F32, 3, sl, &logits);
    if (st == CLF_SUCCESS) st = clf_encoder_forward(enc, src, src_valid_lens, enc_out);
    if (st == CLF_SUCCESS) st = clf_decoder_init_state(dec, enc_out, src_valid_lens, M);
    if (st == CLF_SUCCESS) {
        for (int64_t b = 0; b < B; b++)
            host[b] = p->bos;
        st = clf_tensor_write(ids, host, (size_t)B * sizeof(int32_t));
    }
    int32_t *tok = NULL;
    int64_t *len = NULL;
    if (st == CLF_SUCCESS) {
        tok = malloc((size_t)(B * M) * sizeof(int32_t));
        len = calloc((size_t)B, sizeof(int64_t));
        if (!tok || !len) st = clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
    }
    int64_t live = B;
    for (int64_t step = 0; step < M && live > 0 && st == CLF_SUCCESS; step++) {
        st = clf_decoder_step(dec, ids, logits);
        if (st == CLF_SUCCESS) st = clf_argmax(ctx, logits, ids);
        if (st == CLF_SUCCESS) st = clf_tensor_read(ids, host, (size_t)B * sizeof(int32_t));
        if (st != CLF_SUCCESS) break;
        for (int64_t b = 0; b < B; b++) {
            if (done[b]) continue;
            if (host[b] == p->eos) {
                done[b] = 1;
                live--;
            } else {
                tok[b * M + len[b]++] = host[b];
            }
        }
        if (p->on_step) p->on_step(p->user, dec, step);
    }
    if (st == CLF_SUCCESS) {
        for (int64_t i = 0; i < B * M; i++)
            tokens[i] = -1;
        for (int64_t b = 0; b < B; b++) {
            memcpy(tokens + b * M, tok + b * M, (size_t)len[b] * sizeof(int32_t));
            lengths[b] = len[b];
        }
    }
    free(tok);
    free(len);
    free(host);
    free(done);
    clf_tensor_free(enc_out);
    clf_tensor_free(ids);
    clf_tensor_free(logits);
    return st;
}
