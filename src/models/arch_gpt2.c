/*
 * arch_gpt2.c — GPT-2 (GPT2LMHeadModel): weight names and the pre-LN block, as Hugging Face's
 * modeling_gpt2.py at inference:
 *   h = wte(ids) + wpe(positions)
 *   per layer:  h = h + c_proj(attention(c_attn(LN_1(h))))      (causal, all heads)
 *               h = h + mlp.c_proj(gelu_new(mlp.c_fc(LN_2(h))))
 *   logits = LN_f(h) wte^T   (the head is tied to wte)
 * GPT-2's Conv1D layers store their weights as (in, out): they are transposed at load into
 * nn.Linear's (out, in). Checkpoints name the tensors with or without "transformer.".
 */
#include "lm.h"

#include <stdio.h>

/* "<prefix><stem>.weight" stored (in, out), transposed to (out, in), with its bias. */
static clf_status load_conv1d(clf_loader *L, const char *stem, int64_t out, int64_t in,
                              clf_lin *l) {
    char w[160], b[160];
    snprintf(w, sizeof(w), "%s.weight", stem);
    snprintf(b, sizeof(b), "%s.bias", stem);
    const char *wn[1] = {w};
    CLF_TRY(clf__load_rows(L, wn, 1, &out, in, 1, &l->w));
    CLF_TRY(clf__load(L, b, out, 0, &l->b));
    return clf__pack(L->ctx, L->weight_dtype, &l->w);
}

static clf_status load_ln(clf_loader *L, const char *stem, int64_t d, clf_norm *n) {
    return clf__load_norm(L, stem, d, n);
}

static clf_status gpt2_load(clf_loader *L, clf_lm *m) {
    const clf_lm_info *in = &m->cfg.info;
    const int64_t d = in->hidden_size, F = in->ffn_size, V = in->vocab_size;
    /* Names with or without the "transformer." of GPT2LMHeadModel. */
    const clf_st_info *probe = NULL;
    for (size_t i = 0; i < L->n_shards && !probe; i++)
        probe = clf_safetensors_find(L->shards[i], "transformer.wte.weight");
    L->prefix = probe ? "transformer." : "";
    CLF_TRY(clf__load(L, "wte.weight", V, d, &m->tok));
    CLF_TRY(clf__load(L, "wpe.weight", in->max_positions, d, &m->pos));
    CLF_TRY(load_ln(L, "ln_f", d, &m->final));
    CLF_TRY(clf__load_lin(L, "wte", V, d, 0, &m->head)); /* tied */
    for (L->layer = 0; L->layer < in->layers; L->layer++) {
        clf_lm_layer *l = &m->layers[L->layer];
        CLF_TRY(load_ln(L, "h.{i}.ln_1", d, &l->n1));
        CLF_TRY(load_ln(L, "h.{i}.ln_2", d, &l->n2));
        CLF_TRY(load_conv1d(L, "h.{i}.attn.c_attn", 3 * d, d, &l->qkv));
        CLF_TRY(load_conv1d(L, "h.{i}.attn.c_proj", d, d, &l->o));
        CLF_TRY(load_conv1d(L, "h.{i}.mlp.c_fc", F, d, &l->up));
        CLF_TRY(load_conv1d(L, "h.{i}.mlp.c_proj", d, F, &l->down));
    }
    return CLF_SUCCESS;
}

static clf_status gpt2_embed(clf_context *ctx, const clf_lm *m, const clf_tensor *ids,
                             clf_lm_ws *ws) {
    ws->pending = 0;
    CLF_TRY(clf_embedding(ctx, ids, m->tok, 1.0f, 0, 0, &ws->h));
    CLF_TRY(clf_embedding(ctx, &ws->pos_ids, m->pos, 1.0f, 0, 0, &ws->x));
    return clf_add(ctx, &ws->h, &ws->x, &ws->h);
}

/* x = LayerNorm(h), adding the pending sublayer output o into h first. */
static clf_status gpt2_norm(clf_context *ctx, const clf_lm *m, const clf_norm *n, clf_lm_ws *ws,
                            clf_tensor *h, clf_tensor *x) {
    if (ws->pending) CLF_TRY(clf_add(ctx, h, &ws->o, h));
    ws->pending = 0;
    return clf_layernorm(ctx, h, NULL, n->g, n->b, m->cfg.norm_eps, x);
}

static clf_status gpt2_block(clf_context *ctx, const clf_lm *m, const clf_lm_layer *l,
                             clf_tensor *kv, const int64_t *lengths, const int64_t *n_new,
                             clf_lm_ws *ws) {
    CLF_TRY(gpt2_norm(ctx, m, &l->n1, ws, &ws->h, &ws->x));
    CLF_TRY(clf__lin(ctx, &ws->x, &l->qkv, CLF_ACT_IDENTITY, &ws->qkv)); /* (B, T, 3d) */
    CLF_TRY(clf__lm_attend(ctx, m, kv, lengths, n_new, ws));
    CLF_TRY(clf__lin(ctx, &ws->att, &l->o, CLF_ACT_IDENTITY, &ws->o));
    ws->pending = 1;
    CLF_TRY(gpt2_norm(ctx, m, &l->n2, ws, &ws->h, &ws->x));
    CLF_TRY(clf__lin(ctx, &ws->x, &l->up, CLF_ACT_GELU_TANH, &ws->mid)); /* (B, T, F) */
    CLF_TRY(clf__lin(ctx, &ws->mid, &l->down, CLF_ACT_IDENTITY, &ws->o));
    ws->pending = 1;
    return CLF_SUCCESS;
}

const clf_lm_arch clf__lm_gpt2 = {gpt2_load, gpt2_embed, gpt2_block, gpt2_norm};
