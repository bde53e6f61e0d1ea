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

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

static const char *const k_hf_names[] = {"GPT2LMHeadModel", NULL};
static const char *const k_gguf_archs[] = {"gpt2", NULL};

/* config.json (Hugging Face's GPT2Config). */
static clf_status parse_hf(clf_context *ctx, const cJSON *c, clf_lm_config *k) {
    clf_lm_info *in = &k->info;
    CLF_TRY(clf__hf_size(ctx, c, "vocab_size", 1, &in->vocab_size));
    CLF_TRY(clf__hf_size(ctx, c, "n_embd", 1, &in->hidden_size));
    CLF_TRY(clf__hf_size(ctx, c, "n_layer", 1, &in->layers));
    CLF_TRY(clf__hf_size(ctx, c, "n_head", 1, &in->heads));
    CLF_TRY(clf__hf_size(ctx, c, "n_positions", 1, &in->max_positions));
    CLF_TRY(clf__hf_size(ctx, c, "n_inner", 0, &in->ffn_size));
    if (!in->ffn_size) in->ffn_size = 4 * in->hidden_size;
    if (in->hidden_size % in->heads)
        return clf__fail(ctx, CLF_ERROR_BAD_FORMAT,
                         "config.json: n_embd %lld is not a multiple "
                         "of n_head %lld",
                         (long long)in->hidden_size, (long long)in->heads);
    in->kv_heads = in->heads;
    in->head_dim = in->hidden_size / in->heads;
    k->norm_eps = (float)clf__hf_num(c, "layer_norm_epsilon", 1e-5);
    k->tied = 1;
    k->qkv_bias = 1;
    const char *act = clf__hf_str(c, "activation_function", "gelu_new");
    if (strcmp(act, "gelu_new") != 0 && strcmp(act, "gelu_pytorch_tanh") != 0)
        return clf__fail(ctx, CLF_ERROR_UNSUPPORTED,
                         "config.json: activation_function \"%s\" is not supported (gelu_new is)",
                         act);
    if (!clf__hf_bool(c, "scale_attn_weights", 1) ||
        clf__hf_bool(c, "scale_attn_by_inverse_layer_idx", 0))
        return clf__fail(ctx, CLF_ERROR_UNSUPPORTED,
                         "config.json: scale_attn_weights false or scale_attn_by_inverse_layer_idx "
                         "true is not supported");
    return clf__hf_special_ids(ctx, c, in, 50256 < in->vocab_size ? 50256 : -1);
}

/* GGUF metadata (llama.cpp's gpt2 keys). */
static clf_status parse_gguf(const clf_gguf_meta *m, clf_lm_config *k, int64_t *unpermute_dh) {
    clf_lm_info *in = &k->info;
    snprintf(in->arch, sizeof(in->arch), "%s", "GPT2LMHeadModel");
    *unpermute_dh = 0;
    CLF_TRY(clf__gguf_vocab(m, in));
    CLF_TRY(clf__gguf_size(m, "embedding_length", 1, 0, &in->hidden_size));
    CLF_TRY(clf__gguf_size(m, "feed_forward_length", 0, 4 * in->hidden_size, &in->ffn_size));
    CLF_TRY(clf__gguf_size(m, "block_count", 1, 0, &in->layers));
    CLF_TRY(clf__gguf_size(m, "attention.head_count", 1, 0, &in->heads));
    CLF_TRY(clf__gguf_size(m, "context_length", 1, 0, &in->max_positions));
    if (in->hidden_size % in->heads)
        return clf__fail(m->ctx, CLF_ERROR_BAD_FORMAT,
                         "GGUF: embedding_length %lld is not a multiple of the %lld heads",
                         (long long)in->hidden_size, (long long)in->heads);
    in->kv_heads = in->heads;
    in->head_dim = in->hidden_size / in->heads;
    CLF_TRY(clf__lm_check_heads(m->ctx, in, "GGUF"));
    double eps;
    CLF_TRY(clf__gguf_float(m, "attention.layer_norm_epsilon", 1e-5, &eps));
    k->norm_eps = (float)eps;
    k->tied = 1;
    return clf__gguf_special_ids(m, in);
}

/* Hugging Face's stem (asked for without "transformer.") -> the GGUF stem ("{i}" the layer).
 * llama.cpp stores the c_* weights as (out, in) already. */
static const clf_gguf_name k_gguf_names[] = {
    {"wte", "token_embd", 0},
    {"wpe", "position_embd", 0},
    {"ln_f", "output_norm", 0},
    {"h.{i}.ln_1", "blk.{i}.attn_norm", 0},
    {"h.{i}.ln_2", "blk.{i}.ffn_norm", 0},
    {"h.{i}.attn.c_attn", "blk.{i}.attn_qkv", 0},
    {"h.{i}.attn.c_proj", "blk.{i}.attn_output", 0},
    {"h.{i}.mlp.c_fc", "blk.{i}.ffn_up", 0},
    {"h.{i}.mlp.c_proj", "blk.{i}.ffn_down", 0},
};

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
    L->ctx = m->parts[0].ctx;
    if (m->embeds) {
        CLF_TRY(clf__load(L, "wte.weight", V, d, &m->tok));
        CLF_TRY(clf__load(L, "wpe.weight", in->max_positions, d, &m->pos));
    }
    L->ctx = m->parts[m->n_parts - 1].ctx;
    if (m->heads) {
        CLF_TRY(load_ln(L, "ln_f", d, &m->final));
        L->cut = CLF_CUT_ROWS; /* a tensor-parallel shard's rows of the vocabulary */
        CLF_TRY(clf__lm_tied_head(L, m, "wte"));
        L->cut = CLF_CUT_NONE;
    }
    for (L->layer = clf__lm_first(m); L->layer < clf__lm_end(m); L->layer++) {
        clf_lm_layer *l = &m->layers[L->layer];
        L->ctx = clf__lm_layer_ctx(m, L->layer);
        CLF_TRY(load_ln(L, "h.{i}.ln_1", d, &l->n1));
        CLF_TRY(load_ln(L, "h.{i}.ln_2", d, &l->n2));
        L->cut = CLF_CUT_ROWS; /* a tensor-parallel shard's heads and FFN columns */
        L->fused = 3;          /* c_attn: Q | K | V */
        CLF_TRY(load_conv1d(L, "h.{i}.attn.c_attn", 3 * d, d, &l->qkv));
        L->fused = 0;
        CLF_TRY(load_conv1d(L, "h.{i}.mlp.c_fc", F, d, &l->up));
        L->cut = CLF_CUT_COLS;
        CLF_TRY(load_conv1d(L, "h.{i}.attn.c_proj", d, d, &l->o));
        CLF_TRY(load_conv1d(L, "h.{i}.mlp.c_proj", d, F, &l->down));
        L->cut = CLF_CUT_NONE;
    }
    return CLF_SUCCESS;
}

static clf_status gpt2_embed(clf_context *ctx, const clf_lm *m, const clf_tensor *ids,
                             clf_lm_ws *ws) {
    ws->pending = 0;
    CLF_TRY(clf__embedding(ctx, ids, m->tok, 1.0f, 0, 0, &ws->h, ws->ids_in_range));
    /* the positions are below the state's max_len, at most max_positions: in range */
    CLF_TRY(clf__embedding(ctx, &ws->pos_ids, m->pos, 1.0f, 0, 0, &ws->x, 1));
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
    CLF_TRY(clf__lm_attend(ctx, m, kv, lengths, n_new, ws, 0));
    CLF_TRY(clf__lin(ctx, &ws->att, &l->o, CLF_ACT_IDENTITY, &ws->o));
    CLF_TRY(clf__lm_reduce(ctx, m, ws, &ws->o)); /* a shard's partial sums: summed over shards */
    ws->pending = 1;
    CLF_TRY(gpt2_norm(ctx, m, &l->n2, ws, &ws->h, &ws->x));
    CLF_TRY(clf__lin(ctx, &ws->x, &l->up, CLF_ACT_GELU_TANH, &ws->mid)); /* (B, T, F) */
    CLF_TRY(clf__lin(ctx, &ws->mid, &l->down, CLF_ACT_IDENTITY, &ws->o));
    CLF_TRY(clf__lm_reduce(ctx, m, ws, &ws->o));
    ws->pending = 1;
    return CLF_SUCCESS;
}

const clf_lm_arch clf__lm_gpt2 = {
    k_hf_names, k_gguf_archs, parse_hf,
    parse_gguf, k_gguf_names, sizeof(k_gguf_names) / sizeof(k_gguf_names[0]),
    2, /* c_fc, c_proj */
    gpt2_load,  gpt2_embed,   gpt2_block,
    gpt2_norm,  NULL /* LayerNorm: no fused form */};
