/*
 * arch_d2l.c — d2l's Transformer (the PyTorch TransformerEncoder / TransformerDecoder of "Dive
 * into Deep Learning", chapter 10.7): its weight names, its embedding (token embedding x sqrt(d)
 * plus sinusoidal positions) and its block order (post-LN encoder and decoder blocks).
 */
#include "models.h"

#include <math.h>

/* ---------------------------------------------------------------- weight names ({i}: block) */

static const clf_enc_names enc = {
    "blks.block{i}.attention.W_q", "blks.block{i}.attention.W_k", "blks.block{i}.attention.W_v",
    "blks.block{i}.attention.W_o", "blks.block{i}.addnorm1.ln",   "blks.block{i}.addnorm2.ln",
    "blks.block{i}.ffn.dense1",    "blks.block{i}.ffn.dense2",
};

static const struct {
    const char *q1, *k1, *v1, *o1, *q2, *k2, *v2, *o2, *norm1, *norm2, *norm3, *up, *down;
} dec = {
    "blks.block{i}.attention1.W_q", "blks.block{i}.attention1.W_k", "blks.block{i}.attention1.W_v",
    "blks.block{i}.attention1.W_o", "blks.block{i}.attention2.W_q", "blks.block{i}.attention2.W_k",
    "blks.block{i}.attention2.W_v", "blks.block{i}.attention2.W_o", "blks.block{i}.addnorm1.ln",
    "blks.block{i}.addnorm2.ln",    "blks.block{i}.addnorm3.ln",    "blks.block{i}.ffn.dense1",
    "blks.block{i}.ffn.dense2",
};

/* ---------------------------------------------------------------- loading */

static clf_status load_embed(clf_loader *L, const clf_transformer_params *c, int decoder,
                             clf_embed_w *e) {
    return clf__load(L, "embedding.weight", c->vocab_size, c->num_hiddens, &e->tok);
}

static clf_status load_encoder_layer(clf_loader *L, const clf_transformer_params *c,
                                     clf_enc_layer *l) {
    return clf__load_enc_layer(L, c, &enc, c->use_bias, l);
}

static clf_status load_decoder_layer(clf_loader *L, const clf_transformer_params *c,
                                     clf_dec_layer *l) {
    const int64_t d = c->num_hiddens;
    CLF_TRY(clf__load_mha(L, dec.q1, dec.k1, dec.v1, dec.o1, d, c->use_bias, 0, &l->self));
    CLF_TRY(clf__load_mha(L, dec.q2, dec.k2, dec.v2, dec.o2, d, c->use_bias, 1, &l->cross));
    CLF_TRY(clf__load_norm(L, dec.norm1, d, &l->n1));
    CLF_TRY(clf__load_norm(L, dec.norm2, d, &l->n2));
    CLF_TRY(clf__load_norm(L, dec.norm3, d, &l->n3));
    return clf__load_ffn(L, dec.up, dec.down, d, c->ffn_num_hiddens, &l->ffn);
}

static clf_status load_head(clf_loader *L, const clf_transformer_params *c, clf_lin *head) {
    return clf__load_lin(L, "dense", c->vocab_size, c->num_hiddens, 1, head);
}

/* ---------------------------------------------------------------- forward */

/* out = embedding(ids) * sqrt(d) + P[pos0 .., :] (d2l's PositionalEncoding, dropout off). */
static clf_status embed(clf_context *ctx, const clf_transformer_params *c, const clf_embed_w *e,
                        const clf_tensor *ids, int64_t pos0, clf_embed_ws *ws, clf_tensor *out) {
    return clf_embedding(ctx, ids, e->tok, (float)sqrt((double)c->num_hiddens), 1, pos0, out);
}

/* d2l's DecoderBlock at inference, x (B, T, d) at positions pos .. pos+T-1, into out (x is
 * overwritten):
 *   X2 = cache ++ X;  Y = AddNorm(X, MHA(X, X2, X2, causal))
 *   Z = AddNorm(Y, MHA(Y, enc_outputs, enc_outputs, enc_valid_lens))
 *   out = AddNorm(Z, FFN(Z))
 * The cache holds projected keys and values, so X2's projection is never recomputed. */
static clf_status decoder_block(clf_context *ctx, const clf_transformer_params *c,
                                const clf_dec_layer *l, clf_dec_layer_state *ls, clf_tensor *x,
                                int64_t pos, const clf_tensor *enc_lens, int record,
                                clf_block_ws *ws, clf_tensor *out) {
    const int64_t d = c->num_hiddens, H = c->num_heads, B = x->shape[0], T = x->shape[1];
    const float eps = c->norm_eps;
    clf_tensor *y = out, *z = x; /* Y in out, then Z over X, then the result in out */

    /* causal self-attention over the cache */
    clf_attention_params sd = clf_attention_default_params(H, d / H);
    sd.v_col = d; /* the cache holds K | V */
    sd.nk = pos + T;
    sd.mask.causal = 1;
    sd.mask.causal_offset = pos;
    if (record) {
        CLF_TRY(clf__ensure_4d(ctx, &ls->w_self, B, H, T, pos + T));
        sd.naive = 1;
        sd.weights = ls->w_self;
    }
    CLF_TRY(clf__lin(ctx, x, &l->self.qkv, CLF_ACT_IDENTITY, &ws->qkv)); /* (B, T, 3d) */
    CLF_TRY(clf__kv_cache_append(ctx, &ls->self, &ws->qkv, pos));
    CLF_TRY(clf_attention(ctx, &ws->qkv, ls->self.kv, ls->self.kv, &ws->att, &sd));
    CLF_TRY(clf__lin(ctx, &ws->att, &l->self.o, CLF_ACT_IDENTITY, &ws->tmp));
    CLF_TRY(clf__add_norm(ctx, &ws->tmp, x, &l->n1, eps, y));

    /* cross-attention over the encoder outputs' projected K | V */
    clf_attention_params cd = clf_attention_default_params(H, d / H);
    cd.v_col = d;
    cd.mask.valid_lens = enc_lens;
    if (record) {
        CLF_TRY(clf__ensure_4d(ctx, &ls->w_cross, B, H, T, ls->cross_kv->shape[1]));
        cd.naive = 1;
        cd.weights = ls->w_cross;
    }
    CLF_TRY(clf__lin(ctx, y, &l->cross.qkv, CLF_ACT_IDENTITY, &ws->q)); /* (B, T, d) */
    CLF_TRY(clf_attention(ctx, &ws->q, ls->cross_kv, ls->cross_kv, &ws->att, &cd));
    CLF_TRY(clf__lin(ctx, &ws->att, &l->cross.o, CLF_ACT_IDENTITY, &ws->tmp));
    CLF_TRY(clf__add_norm(ctx, &ws->tmp, y, &l->n2, eps, z));

    /* position-wise FFN */
    CLF_TRY(clf__ffn(ctx, z, &l->ffn, c->ffn_act, &ws->h, &ws->tmp));
    return clf__add_norm(ctx, &ws->tmp, z, &l->n3, eps, out);
}

const clf_arch_def clf__arch_d2l = {
    .arch = CLF_ARCH_D2L,
    .name = "d2l",
    .load_embed = load_embed,
    .embed = embed,
    .load_encoder_layer = load_encoder_layer,
    .encoder_block = clf__post_ln_encoder_block,
    .load_decoder_layer = load_decoder_layer,
    .load_head = load_head,
    .decoder_block = decoder_block,
};
