/*
 * arch_bert.c — BERT's encoder (Hugging Face BertModel, e.g. all-MiniLM-L6-v2): its weight names,
 * its embedding (word + learned position + token type 0, then LayerNorm) and its block order
 * (the post-LN block it shares with d2l's encoder). No decoder.
 */
#include "models.h"

#include <stdio.h>
#include <stdlib.h>

/* ---------------------------------------------------------------- weight names ({i}: layer) */

static const clf_enc_names enc = {
    "encoder.layer.{i}.attention.self.query",       "encoder.layer.{i}.attention.self.key",
    "encoder.layer.{i}.attention.self.value",       "encoder.layer.{i}.attention.output.dense",
    "encoder.layer.{i}.attention.output.LayerNorm", "encoder.layer.{i}.output.LayerNorm",
    "encoder.layer.{i}.intermediate.dense",         "encoder.layer.{i}.output.dense",
};
#define WORD_EMB "embeddings.word_embeddings.weight"
#define POS_EMB  "embeddings.position_embeddings.weight"
#define TYPE_EMB "embeddings.token_type_embeddings.weight"
#define EMB_NORM "embeddings.LayerNorm"

/* ---------------------------------------------------------------- loading */

/* Token embeddings as they are; position embeddings with token type 0's row added once. */
static clf_status load_embed(clf_loader *L, const clf_transformer_params *c, int decoder,
                             clf_embed_w *e) {
    const int64_t d = c->num_hiddens, P = c->max_len;
    CLF_TRY(clf__load(L, WORD_EMB, c->vocab_size, d, &e->tok));
    char pn[512], tn[512];
    clf_error err;
    snprintf(pn, sizeof(pn), "%s%s", L->prefix, POS_EMB);
    snprintf(tn, sizeof(tn), "%s%s", L->prefix, TYPE_EMB);
    const clf_st_info *pi = clf_safetensors_find(L->st, pn);
    const clf_st_info *ti = clf_safetensors_find(L->st, tn);
    if (!pi || !ti)
        return clf__fail(L->ctx, CLF_ERROR_BAD_FORMAT, "weights: missing tensor \"%s\"",
                         !pi ? pn : tn);
    if (pi->ndim != 2 || pi->shape[1] != d || pi->shape[0] < P || ti->ndim != 2 ||
        ti->shape[1] != d || ti->shape[0] < 1)
        return clf__fail(L->ctx, CLF_ERROR_SHAPE_MISMATCH,
                         "weights: position embeddings must be (>= max_len %lld, %lld) and token "
                         "type embeddings (>= 1, %lld)",
                         (long long)P, (long long)d, (long long)d);
    float *pos = malloc((size_t)(pi->numel + ti->numel) * sizeof(float));
    if (!pos) return clf__fail(L->ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
    float *typ = pos + pi->numel;
    clf_status st = clf_safetensors_read_f32(L->st, pn, pos, pi->numel, &err);
    if (st == CLF_SUCCESS) st = clf_safetensors_read_f32(L->st, tn, typ, ti->numel, &err);
    if (st != CLF_SUCCESS) {
        free(pos);
        return clf__fail(L->ctx, st, "%s", err.message);
    }
    for (int64_t p = 0; p < P; p++)
        for (int64_t j = 0; j < d; j++)
            pos[p * d + j] += typ[j];
    const int64_t shape[2] = {P, d};
    st = clf_tensor_create(L->ctx, CLF_F32, 2, shape, &e->pos);
    if (st == CLF_SUCCESS) st = clf_tensor_write(e->pos, pos, (size_t)(P * d) * sizeof(float));
    free(pos);
    CLF_TRY(st);
    return clf__load_norm(L, EMB_NORM, d, &e->norm);
}

static clf_status load_encoder_layer(clf_loader *L, const clf_transformer_params *c,
                                     clf_enc_layer *l) {
    return clf__load_enc_layer(L, c, &enc, 1, l);
}

/* ---------------------------------------------------------------- forward */

/* out = LayerNorm(word[ids] + (position + type 0)[0 .. N-1]). */
static clf_status embed(clf_context *ctx, const clf_transformer_params *c, const clf_embed_w *e,
                        const clf_tensor *ids, int64_t pos0, clf_embed_ws *ws, clf_tensor *out) {
    const int64_t B = ids->shape[0], N = ids->shape[1];
    clf_tensor pos = clf__view(ws->pos_ids, B, N, 0);
    if (ws->pos_b != B || ws->pos_n != N) { /* position ids 0 .. N-1 for every sequence */
        int32_t *p = malloc((size_t)(B * N) * sizeof(int32_t));
        if (!p) return clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
        for (int64_t i = 0; i < B * N; i++)
            p[i] = (int32_t)(pos0 + i % N);
        clf_status st = clf_tensor_write(&pos, p, pos.bytes);
        free(p);
        CLF_TRY(st);
        ws->pos_b = B;
        ws->pos_n = N;
    }
    CLF_TRY(clf_embedding(ctx, ids, e->tok, 1.0f, 0, 0, out));
    CLF_TRY(clf_embedding(ctx, &pos, e->pos, 1.0f, 0, 0, &ws->tmp));
    return clf__add_norm(ctx, out, &ws->tmp, &e->norm, c->norm_eps, out);
}

const clf_arch_def clf__arch_bert = {
    .arch = CLF_ARCH_BERT,
    .name = "bert",
    .load_embed = load_embed,
    .embed = embed,
    .load_encoder_layer = load_encoder_layer,
    .encoder_block = clf__post_ln_encoder_block,
};
