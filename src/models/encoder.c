/*
 * encoder.c — the encoder stack: weights loaded once (clf_encoder), runs in states
 * (clf_encoder_state) that hold the activations, so several states can share one encoder.
 *   X = embed(ids); per block: X = block(X, valid_lens)   (the block order is the arch's)
 * Workspaces are sized for the largest (B, N) seen and reused through views; a forward of a shape
 * already reserved allocates nothing on the device.
 */
#include "models.h"

#include <stdlib.h>
#include <string.h>

struct clf_encoder_state {
    const clf_encoder *enc;
    /* workspace, rows = B * N of the largest shape reserved */
    clf_tensor *qkv; /* (rows, 3d) */
    clf_tensor *att; /* (rows, d) */
    clf_tensor *tmp; /* (rows, d) */
    clf_tensor *y;   /* (rows, d) */
    clf_tensor *h;   /* (rows, F) */
    clf_embed_ws emb;
    int64_t ws_rows;
    int record;
    clf_tensor **weights; /* [num_layers] recorded (B, H, N, N) attention weights, or NULL */
    int64_t launches_per_layer;
};

/* ---------------------------------------------------------------- weights */

void clf_encoder_free(clf_encoder *enc) {
    if (!enc) return;
    clf_encoder_state_free(enc->own);
    if (enc->layers)
        for (int64_t i = 0; i < enc->cfg.num_layers; i++) {
            clf__mha_free(&enc->layers[i].att);
            clf__norm_free(&enc->layers[i].n1);
            clf__norm_free(&enc->layers[i].n2);
            clf__ffn_free(&enc->layers[i].ffn);
        }
    free(enc->layers);
    clf__embed_free(&enc->emb);
    free(enc);
}

clf_status clf__encoder_load_part(clf_context *ctx, const clf_safetensors *st, const char *prefix,
                                  const clf_transformer_params *cfg, int64_t first, int64_t end,
                                  int embeds, clf_encoder **out) {
    clf_encoder *enc = calloc(1, sizeof(*enc));
    if (!enc) return clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
    enc->ctx = ctx;
    clf_status s = clf__check_config(ctx, cfg, &enc->cfg);
    if (s != CLF_SUCCESS) {
        free(enc);
        return s;
    }
    const clf_transformer_params *c = &enc->cfg;
    enc->first = first;
    enc->end = end;
    enc->embeds = embeds;
    enc->arch = clf__arch_find(c->arch);
    clf_loader L = {
        .ctx = ctx, .st = st, .prefix = prefix ? prefix : "", .weight_dtype = c->weight_dtype};
    enc->layers = calloc((size_t)c->num_layers, sizeof(clf_enc_layer));
    if (!enc->layers) {
        s = clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
        goto fail;
    }
    if (embeds && (s = enc->arch->load_embed(&L, c, 0, &enc->emb)) != CLF_SUCCESS) goto fail;
    for (L.layer = first; L.layer < end; L.layer++)
        if ((s = enc->arch->load_encoder_layer(&L, c, &enc->layers[L.layer])) != CLF_SUCCESS)
            goto fail;
    if ((s = clf_encoder_state_create(enc, &enc->own)) != CLF_SUCCESS) goto fail;
    *out = enc;
    return CLF_SUCCESS;
fail:
    clf_encoder_free(enc);
    return s;
}

static int64_t norm_bytes(const clf_norm *n) {
    return clf__tensor_bytes0(n->g) + clf__tensor_bytes0(n->b);
}

int64_t clf__encoder_weight_bytes(const clf_encoder *enc) {
    int64_t b = clf__tensor_bytes0(enc->emb.tok) + clf__tensor_bytes0(enc->emb.pos) +
                norm_bytes(&enc->emb.norm);
    for (int64_t i = enc->first; i < enc->end; i++) {
        const clf_enc_layer *l = &enc->layers[i];
        b += clf__lin_bytes(&l->att.qkv) + clf__lin_bytes(&l->att.kv) + clf__lin_bytes(&l->att.o) +
             norm_bytes(&l->n1) + norm_bytes(&l->n2) + clf__lin_bytes(&l->ffn.up) +
             clf__lin_bytes(&l->ffn.down);
    }
    return b;
}

clf_status clf_encoder_load(clf_context *ctx, const clf_safetensors *st, const char *prefix,
                            const clf_transformer_params *cfg, clf_encoder **out) {
    if (!ctx) return CLF_ERROR_INVALID_ARGUMENT;
    clf__clear_error(ctx);
    if (!st || !out)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "st and out must not be NULL");
    *out = NULL;
    if (!cfg) return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "cfg must not be NULL");
    return clf__encoder_load_part(ctx, st, prefix, cfg, 0, cfg->num_layers, 1, out);
}

/* ---------------------------------------------------------------- states */

clf_status clf_encoder_state_create(const clf_encoder *enc, clf_encoder_state **out) {
    if (!enc || !out) return CLF_ERROR_INVALID_ARGUMENT;
    *out = NULL;
    clf_encoder_state *s = calloc(1, sizeof(*s));
    if (s) s->weights = calloc((size_t)enc->cfg.num_layers, sizeof(clf_tensor *));
    if (!s || !s->weights) {
        free(s);
        return clf__fail(enc->ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
    }
    s->enc = enc;
    *out = s;
    return CLF_SUCCESS;
}

void clf_encoder_state_free(clf_encoder_state *s) {
    if (!s) return;
    clf_tensor *ts[] = {s->qkv, s->att, s->tmp, s->y, s->h, s->emb.pos_ids};
    for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++)
        clf_tensor_free(ts[i]);
    for (int64_t i = 0; i < s->enc->cfg.num_layers; i++)
        clf_tensor_free(s->weights[i]);
    free(s->weights);
    free(s);
}

clf_status clf_encoder_state_reserve(clf_encoder_state *s, int64_t batch, int64_t len) {
    if (!s) return CLF_ERROR_INVALID_ARGUMENT;
    clf_context *ctx = s->enc->ctx;
    const clf_transformer_params *c = &s->enc->cfg;
    if (batch < 1 || len < 1)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "reserve: batch and len must be >= 1");
    if (len > c->max_len)
        return clf__fail(ctx, CLF_ERROR_SIZE_LIMIT,
                         "sequence length %lld exceeds the model's max_len %lld", (long long)len,
                         (long long)c->max_len);
    if (batch > INT64_MAX / len / 4 / c->num_hiddens)
        return clf__fail(ctx, CLF_ERROR_SIZE_LIMIT, "reserve: batch x len overflows");
    const int64_t rows = batch * len, d = c->num_hiddens, F = c->ffn_num_hiddens;
    if (rows <= s->ws_rows) return CLF_SUCCESS;
    CLF_TRY(clf__check_workspace(ctx, "encoder", rows * (6 * d + F + 1)));
    CLF_TRY(clf__ensure(ctx, &s->qkv, CLF_F32, rows * 3 * d));
    CLF_TRY(clf__ensure(ctx, &s->att, CLF_F32, rows * d));
    CLF_TRY(clf__ensure(ctx, &s->tmp, CLF_F32, rows * d));
    CLF_TRY(clf__ensure(ctx, &s->y, CLF_F32, rows * d));
    CLF_TRY(clf__ensure(ctx, &s->h, CLF_F32, rows * F));
    CLF_TRY(clf__ensure(ctx, &s->emb.pos_ids, CLF_I32, rows));
    s->emb.pos_b = s->emb.pos_n = 0;
    s->ws_rows = rows;
    return CLF_SUCCESS;
}

clf_status clf_encoder_state_record_weights(clf_encoder_state *s, int on) {
    if (!s) return CLF_ERROR_INVALID_ARGUMENT;
    s->record = on ? 1 : 0;
    return CLF_SUCCESS;
}

const clf_tensor *clf_encoder_state_attention_weights(const clf_encoder_state *s, int64_t layer) {
    if (!s || layer < 0 || layer >= s->enc->cfg.num_layers) return NULL;
    return s->weights[layer];
}

/* The stack on s for (B, N): embeds ids into out when the encoder embeds, then its layers on out
 * in place. */
static clf_status run(clf_encoder_state *s, int64_t B, int64_t N, const clf_tensor *ids,
                      const clf_tensor *valid_lens, clf_tensor *out) {
    const clf_encoder *enc = s->enc;
    clf_context *ctx = enc->ctx;
    const clf_transformer_params *c = &enc->cfg;
    const int64_t d = c->num_hiddens, H = c->num_heads;
    CLF_TRY(clf_encoder_state_reserve(s, B, N));
    clf_block_ws ws = {
        .qkv = clf__view(s->qkv, B, N, 3 * d),
        .att = clf__view(s->att, B, N, d),
        .tmp = clf__view(s->tmp, B, N, d),
        .y = clf__view(s->y, B, N, d),
        .h = clf__view(s->h, B, N, c->ffn_num_hiddens),
    };
    s->emb.tmp = ws.tmp;
    if (enc->embeds) /* X (B, N, d) */
        CLF_TRY(enc->arch->embed(ctx, c, &enc->emb, ids, 0, &s->emb, out));
    const uint64_t launches0 = ctx->launches;
    for (int64_t i = enc->first; i < enc->end; i++) {
        if (s->record) CLF_TRY(clf__ensure_4d(ctx, &s->weights[i], B, H, N, N));
        CLF_TRY(enc->arch->encoder_block(ctx, c, &enc->layers[i], out, valid_lens,
                                         s->record ? s->weights[i] : NULL, &ws));
    }
    s->launches_per_layer = (int64_t)(ctx->launches - launches0) / (enc->end - enc->first);
    return CLF_SUCCESS;
}

clf_status clf_encoder_state_forward(clf_encoder_state *s, const clf_tensor *ids,
                                     const clf_tensor *valid_lens, clf_tensor *out) {
    if (!s) return CLF_ERROR_INVALID_ARGUMENT;
    const clf_encoder *enc = s->enc;
    clf_context *ctx = enc->ctx;
    clf__clear_error(ctx);
    const clf_transformer_params *c = &enc->cfg;
    CLF_TRY(clf__check_ids(ctx, ids, valid_lens));
    CLF_TRY(clf__check_tensor(ctx, out, "out", CLF_F32));
    const int64_t B = ids->shape[0], N = ids->shape[1], d = c->num_hiddens;
    if (out->ndim != 3 || out->shape[0] != B || out->shape[1] != N || out->shape[2] != d) {
        char a[96], b[96];
        return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH,
                         "encoder: out %s must be (%lld, %lld, %lld) for ids %s",
                         clf__shape_str(out, a, sizeof(a)), (long long)B, (long long)N,
                         (long long)d, clf__shape_str(ids, b, sizeof(b)));
    }
    return run(s, B, N, ids, valid_lens, out);
}

clf_status clf__encoder_part_forward(clf_encoder *enc, const clf_tensor *ids,
                                     const clf_tensor *valid_lens, clf_tensor *x) {
    return run(enc->own, x->shape[0], x->shape[1], ids, valid_lens, x);
}

/* ---------------------------------------------------------------- the encoder's own state */

clf_status clf_encoder_reserve(clf_encoder *enc, int64_t batch, int64_t len) {
    return enc ? clf_encoder_state_reserve(enc->own, batch, len) : CLF_ERROR_INVALID_ARGUMENT;
}

clf_status clf_encoder_forward(clf_encoder *enc, const clf_tensor *ids,
                               const clf_tensor *valid_lens, clf_tensor *out) {
    return enc ? clf_encoder_state_forward(enc->own, ids, valid_lens, out)
               : CLF_ERROR_INVALID_ARGUMENT;
}

clf_status clf_encoder_record_weights(clf_encoder *enc, int on) {
    return enc ? clf_encoder_state_record_weights(enc->own, on) : CLF_ERROR_INVALID_ARGUMENT;
}

const clf_tensor *clf_encoder_attention_weights(const clf_encoder *enc, int64_t layer) {
    return enc ? clf_encoder_state_attention_weights(enc->own, layer) : NULL;
}

int64_t clf_encoder_launches_per_layer(const clf_encoder *enc) {
    return enc ? enc->own->launches_per_layer : 0;
}
