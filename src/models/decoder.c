/*
 * decoder.c — the decoder stack: weights loaded once (clf_decoder), runs in states
 * (clf_decoder_state) that hold one batch's KV caches, cross-attention keys and values and
 * workspace, so several batches can be decoded at once over one copy of the weights.
 *   X = embed(ids, positions length ..); per block: X = block(X, cache, enc_outputs);
 *   logits = head(X)
 * A step allocates nothing on the device.
 */
#include "models.h"

#include <stdlib.h>
#include <string.h>

struct clf_decoder_state {
    const clf_decoder *dec;
    int64_t batch, max_len, src_len, length;
    int ready, record;
    clf_tensor *enc_lens;        /* (B) I32 copy of enc_valid_lens, or NULL */
    clf_dec_layer_state *layers; /* [num_layers] */
    /* workspace, rows = batch * max_len */
    clf_tensor *x, *y; /* (rows, d) each: a block's input and output, swapped per block */
    clf_tensor *qkv;   /* (rows, 3d) */
    clf_tensor *q, *att, *tmp, *h; /* (rows, d) x 3, (rows, F) */
    clf_embed_ws emb;
};

/* ---------------------------------------------------------------- weights */

void clf_decoder_free(clf_decoder *dec) {
    if (!dec) return;
    clf_decoder_state_free(dec->own);
    if (dec->layers)
        for (int64_t i = 0; i < dec->cfg.num_layers; i++) {
            clf_dec_layer *l = &dec->layers[i];
            clf__mha_free(&l->self);
            clf__mha_free(&l->cross);
            clf__norm_free(&l->n1);
            clf__norm_free(&l->n2);
            clf__norm_free(&l->n3);
            clf__ffn_free(&l->ffn);
        }
    free(dec->layers);
    clf__embed_free(&dec->emb);
    clf__lin_free(&dec->head);
    free(dec);
}

clf_status clf_decoder_load(clf_context *ctx, const clf_safetensors *st, const char *prefix,
                            const clf_transformer_params *cfg, clf_decoder **out) {
    if (!ctx) return CLF_ERROR_INVALID_ARGUMENT;
    clf__clear_error(ctx);
    if (!st || !out)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "st and out must not be NULL");
    *out = NULL;
    clf_decoder *dec = calloc(1, sizeof(*dec));
    if (!dec) return clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
    dec->ctx = ctx;
    clf_status s = clf__check_config(ctx, cfg, &dec->cfg);
    if (s == CLF_SUCCESS) {
        dec->arch = clf__arch_find(dec->cfg.arch);
        if (!dec->arch->decoder_block)
            s = clf__fail(ctx, CLF_ERROR_UNSUPPORTED, "decoder: the %s architecture has none",
                          dec->arch->name);
    }
    if (s != CLF_SUCCESS) {
        free(dec);
        return s;
    }
    const clf_transformer_params *c = &dec->cfg;
    clf_loader L = {
        .ctx = ctx, .st = st, .prefix = prefix ? prefix : "", .weight_dtype = c->weight_dtype};
    dec->layers = calloc((size_t)c->num_layers, sizeof(clf_dec_layer));
    if (!dec->layers) {
        s = clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
        goto fail;
    }
    if ((s = dec->arch->load_embed(&L, c, 1, &dec->emb)) != CLF_SUCCESS) goto fail;
    if ((s = dec->arch->load_head(&L, c, &dec->head)) != CLF_SUCCESS) goto fail;
    for (L.layer = 0; L.layer < c->num_layers; L.layer++)
        if ((s = dec->arch->load_decoder_layer(&L, c, &dec->layers[L.layer])) != CLF_SUCCESS)
            goto fail;
    if ((s = clf_decoder_state_create(dec, &dec->own)) != CLF_SUCCESS) goto fail;
    *out = dec;
    return CLF_SUCCESS;
fail:
    clf_decoder_free(dec);
    return s;
}

/* ---------------------------------------------------------------- states */

clf_status clf_decoder_state_create(const clf_decoder *dec, clf_decoder_state **out) {
    if (!dec || !out) return CLF_ERROR_INVALID_ARGUMENT;
    *out = NULL;
    clf_decoder_state *s = calloc(1, sizeof(*s));
    if (s) s->layers = calloc((size_t)dec->cfg.num_layers, sizeof(clf_dec_layer_state));
    if (!s || !s->layers) {
        free(s);
        return clf__fail(dec->ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
    }
    s->dec = dec;
    *out = s;
    return CLF_SUCCESS;
}

/* Releases what init allocated; the state can be initialized again. */
static void release(clf_decoder_state *s) {
    for (int64_t i = 0; i < s->dec->cfg.num_layers; i++) {
        clf_dec_layer_state *l = &s->layers[i];
        clf__kv_cache_free(&l->self);
        clf_tensor *ts[] = {l->cross_kv, l->w_self, l->w_cross};
        for (int j = 0; j < 3; j++)
            clf_tensor_free(ts[j]);
        l->cross_kv = l->w_self = l->w_cross = NULL;
    }
    clf_tensor *ts[] = {s->enc_lens, s->x,   s->y, s->qkv,        s->q,
                        s->att,      s->tmp, s->h, s->emb.pos_ids};
    for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++)
        clf_tensor_free(ts[i]);
    s->enc_lens = s->x = s->y = s->qkv = s->q = s->att = s->tmp = s->h = s->emb.pos_ids = NULL;
    s->ready = 0;
    s->length = 0;
}

void clf_decoder_state_free(clf_decoder_state *s) {
    if (!s) return;
    release(s);
    free(s->layers);
    free(s);
}

clf_status clf_decoder_state_init(clf_decoder_state *s, const clf_tensor *enc_outputs,
                                  const clf_tensor *enc_valid_lens, int64_t max_len) {
    if (!s) return CLF_ERROR_INVALID_ARGUMENT;
    const clf_decoder *dec = s->dec;
    clf_context *ctx = dec->ctx;
    clf__clear_error(ctx);
    const clf_transformer_params *c = &dec->cfg;
    const int64_t d = c->num_hiddens, F = c->ffn_num_hiddens;
    CLF_TRY(clf__check_tensor(ctx, enc_outputs, "enc_outputs", CLF_F32));
    char a[96];
    if (enc_outputs->ndim != 3 || enc_outputs->shape[2] != d)
        return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH,
                         "decoder: enc_outputs %s must be (B, Ns, %lld)",
                         clf__shape_str(enc_outputs, a, sizeof(a)), (long long)d);
    const int64_t B = enc_outputs->shape[0], Ns = enc_outputs->shape[1];
    if (enc_valid_lens) {
        CLF_TRY(clf__check_tensor(ctx, enc_valid_lens, "enc_valid_lens", CLF_I32));
        if (enc_valid_lens->ndim != 1 || enc_valid_lens->shape[0] != B)
            return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH,
                             "decoder: enc_valid_lens %s must be (%lld)",
                             clf__shape_str(enc_valid_lens, a, sizeof(a)), (long long)B);
    }
    if (max_len < 1 || max_len > c->max_len)
        return clf__fail(ctx, CLF_ERROR_SIZE_LIMIT, "decoder: max_len %lld must be 1 .. %lld",
                         (long long)max_len, (long long)c->max_len);
    if (B > INT64_MAX / max_len / 4 / (3 * d + F))
        return clf__fail(ctx, CLF_ERROR_SIZE_LIMIT, "decoder: batch x max_len overflows");
    const int64_t rows = B * max_len;
    CLF_TRY(clf__check_workspace(ctx, "decoder state",
                                 rows * (2 * d * c->num_layers + 7 * d + F) +
                                     B * Ns * 2 * d * c->num_layers));
    release(s);
    clf_status st = CLF_SUCCESS;
    const int64_t shx[3] = {B, Ns, 2 * d};
    if (enc_valid_lens) {
        CLF_CHECK(clf_tensor_create(ctx, CLF_I32, 1, &B, &s->enc_lens));
        CLF_CHECK(clf_tensor_copy(s->enc_lens, enc_valid_lens));
    }
    for (int64_t i = 0; i < c->num_layers; i++) {
        clf_dec_layer_state *l = &s->layers[i];
        CLF_CHECK(clf__kv_cache_init(ctx, &l->self, B, max_len, d));
        CLF_CHECK(clf_tensor_create(ctx, CLF_F32, 3, shx, &l->cross_kv));
        /* the encoder outputs' keys and values, projected once per sequence */
        CLF_CHECK(
            clf__lin(ctx, enc_outputs, &dec->layers[i].cross.kv, CLF_ACT_IDENTITY, l->cross_kv));
    }
    CLF_CHECK(clf__ensure(ctx, &s->x, CLF_F32, rows * d));
    CLF_CHECK(clf__ensure(ctx, &s->y, CLF_F32, rows * d));
    CLF_CHECK(clf__ensure(ctx, &s->qkv, CLF_F32, rows * 3 * d));
    CLF_CHECK(clf__ensure(ctx, &s->q, CLF_F32, rows * d));
    CLF_CHECK(clf__ensure(ctx, &s->att, CLF_F32, rows * d));
    CLF_CHECK(clf__ensure(ctx, &s->tmp, CLF_F32, rows * d));
    CLF_CHECK(clf__ensure(ctx, &s->h, CLF_F32, rows * F));
    CLF_CHECK(clf__ensure(ctx, &s->emb.pos_ids, CLF_I32, rows));
    s->emb.pos_b = s->emb.pos_n = 0;
    s->batch = B;
    s->src_len = Ns;
    s->max_len = max_len;
    s->length = 0;
    s->ready = 1;
    return CLF_SUCCESS;
fail:
    release(s);
    return st;
}

clf_status clf_decoder_state_step(clf_decoder_state *s, const clf_tensor *ids, clf_tensor *logits) {
    if (!s) return CLF_ERROR_INVALID_ARGUMENT;
    const clf_decoder *dec = s->dec;
    clf_context *ctx = dec->ctx;
    clf__clear_error(ctx);
    const clf_transformer_params *c = &dec->cfg;
    if (!s->ready)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                         "decoder: call clf_decoder_init_state first");
    CLF_TRY(clf__check_ids(ctx, ids, NULL));
    CLF_TRY(clf__check_tensor(ctx, logits, "logits", CLF_F32));
    const int64_t B = ids->shape[0], T = ids->shape[1], d = c->num_hiddens;
    const int64_t V = c->vocab_size, pos = s->length;
    char a[96], b[96];
    if (B != s->batch)
        return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH,
                         "decoder: ids %s: the state holds %lld sequences",
                         clf__shape_str(ids, a, sizeof(a)), (long long)s->batch);
    if (T > s->max_len - pos)
        return clf__fail(ctx, CLF_ERROR_SIZE_LIMIT,
                         "decoder: %lld decoded + %lld new tokens exceed max_len %lld",
                         (long long)pos, (long long)T, (long long)s->max_len);
    if (logits->ndim != 3 || logits->shape[0] != B || logits->shape[1] != T ||
        logits->shape[2] != V)
        return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH,
                         "decoder: logits %s must be (%lld, %lld, %lld) for ids %s",
                         clf__shape_str(logits, a, sizeof(a)), (long long)B, (long long)T,
                         (long long)V, clf__shape_str(ids, b, sizeof(b)));
    clf_tensor X = clf__view(s->x, B, T, d), Y = clf__view(s->y, B, T, d);
    clf_block_ws ws = {
        .qkv = clf__view(s->qkv, B, T, 3 * d),
        .q = clf__view(s->q, B, T, d),
        .att = clf__view(s->att, B, T, d),
        .tmp = clf__view(s->tmp, B, T, d),
        .h = clf__view(s->h, B, T, c->ffn_num_hiddens),
    };
    s->emb.tmp = ws.tmp;
    clf_tensor *x = &X, *y = &Y;
    CLF_TRY(dec->arch->embed(ctx, c, &dec->emb, ids, pos, &s->emb, x)); /* X (B, T, d) */
    for (int64_t i = 0; i < c->num_layers; i++) {
        CLF_TRY(dec->arch->decoder_block(ctx, c, &dec->layers[i], &s->layers[i], x, pos,
                                         s->enc_lens, s->record, &ws, y));
        clf_tensor *t = x; /* the block's output is the next block's input */
        x = y;
        y = t;
    }
    CLF_TRY(clf__lin(ctx, x, &dec->head, CLF_ACT_IDENTITY, logits)); /* (B, T, V) */
    /* The caches hold rows up to pos + T even if a call above failed: they count only once the
     * whole step succeeded (a failed step leaves the decoded length unchanged). */
    s->length = pos + T;
    return CLF_SUCCESS;
}

clf_status clf_decoder_state_reset(clf_decoder_state *s) {
    if (!s) return CLF_ERROR_INVALID_ARGUMENT;
    s->length = 0;
    return CLF_SUCCESS;
}

int64_t clf_decoder_state_length(const clf_decoder_state *s) {
    return s ? s->length : 0;
}

clf_status clf_decoder_state_record_weights(clf_decoder_state *s, int on) {
    if (!s) return CLF_ERROR_INVALID_ARGUMENT;
    s->record = on ? 1 : 0;
    return CLF_SUCCESS;
}

const clf_tensor *clf_decoder_state_attention_weights(const clf_decoder_state *s, int64_t layer,
                                                      int which) {
    if (!s || layer < 0 || layer >= s->dec->cfg.num_layers || which < 0 || which > 1) return NULL;
    return which ? s->layers[layer].w_cross : s->layers[layer].w_self;
}

/* ---------------------------------------------------------------- the decoder's own state */

clf_status clf_decoder_init_state(clf_decoder *dec, const clf_tensor *enc_outputs,
                                  const clf_tensor *enc_valid_lens, int64_t max_len) {
    return dec ? clf_decoder_state_init(dec->own, enc_outputs, enc_valid_lens, max_len)
               : CLF_ERROR_INVALID_ARGUMENT;
}
clf_status clf_decoder_step(clf_decoder *dec, const clf_tensor *ids, clf_tensor *logits) {
    return dec ? clf_decoder_state_step(dec->own, ids, logits) : CLF_ERROR_INVALID_ARGUMENT;
}
clf_status clf_decoder_reset(clf_decoder *dec) {
    return dec ? clf_decoder_state_reset(dec->own) : CLF_ERROR_INVALID_ARGUMENT;
}
int64_t clf_decoder_length(const clf_decoder *dec) {
    return dec ? clf_decoder_state_length(dec->own) : 0;
}
clf_status clf_decoder_record_weights(clf_decoder *dec, int on) {
    return dec ? clf_decoder_state_record_weights(dec->own, on) : CLF_ERROR_INVALID_ARGUMENT;
}
const clf_tensor *clf_decoder_attention_weights(const clf_decoder *dec, int64_t layer, int which) {
    return dec ? clf_decoder_state_attention_weights(dec->own, layer, which) : NULL;
}
