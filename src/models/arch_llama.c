/*
 * arch_llama.c — the Llama family (LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM): weight
 * names and the pre-norm block, as Hugging Face's modeling_llama.py at inference:
 *   h = embed_tokens(ids)
 *   per layer:  x = RMSNorm(h) * input_layernorm
 *               q, k, v = x W_q^T (+ b_q), x W_k^T (+ b_k), x W_v^T (+ b_v); RoPE on q and k
 *               h = h + W_o attention(q, cache ++ k, cache ++ v)   (grouped-query, causal)
 *               x = RMSNorm(h) * post_attention_layernorm
 *               h = h + down(silu(gate(x)) * up(x))
 *   logits = lm_head(RMSNorm(h) * norm)   (lm_head: embed_tokens when tied)
 * Fusions: Q | K | V is one projection, gate | up another (their weights stacked at load, split
 * into runs of one type where a GGUF file stores them in several: clf__load_stack), RoPE
 * runs once over the query and key heads, and each residual add is fused into the RMSNorm that
 * follows it (clf_rmsnorm writes the updated stream too).
 */
#include "lm.h"

static const char *const k_q = "model.layers.{i}.self_attn.q_proj",
                         *const k_k = "model.layers.{i}.self_attn.k_proj",
                         *const k_v = "model.layers.{i}.self_attn.v_proj",
                         *const k_o = "model.layers.{i}.self_attn.o_proj",
                         *const k_gate = "model.layers.{i}.mlp.gate_proj",
                         *const k_up = "model.layers.{i}.mlp.up_proj",
                         *const k_down = "model.layers.{i}.mlp.down_proj",
                         *const k_n1 = "model.layers.{i}.input_layernorm.weight",
                         *const k_n2 = "model.layers.{i}.post_attention_layernorm.weight";

static clf_status llama_load(clf_loader *L, clf_lm *m) {
    const clf_lm_info *in = &m->cfg.info;
    const int64_t d = in->hidden_size, q = in->heads * in->head_dim,
                  kv = in->kv_heads * in->head_dim, F = in->ffn_size;
    CLF_TRY(clf__load(L, "model.embed_tokens.weight", in->vocab_size, d, &m->tok));
    CLF_TRY(clf__load(L, "model.norm.weight", d, 0, &m->final.g));
    CLF_TRY(clf__load_lin(L, m->cfg.tied ? "model.embed_tokens" : "lm_head", in->vocab_size, d, 0,
                          &m->head));
    const int64_t h = in->head_dim / 2;
    CLF_TRY(clf_tensor_create(L->ctx, CLF_F32, 1, &h, &m->freq));
    CLF_TRY(clf_tensor_write(m->freq, m->cfg.inv_freq, (size_t)h * sizeof(float)));
    const char *qkv[3] = {k_q, k_k, k_v}, *gu[2] = {k_gate, k_up};
    const int64_t qkv_rows[3] = {q, kv, kv}, gu_rows[2] = {F, F};
    for (L->layer = 0; L->layer < in->layers; L->layer++) {
        clf_lm_layer *l = &m->layers[L->layer];
        CLF_TRY(clf__load(L, k_n1, d, 0, &l->n1.g));
        CLF_TRY(clf__load(L, k_n2, d, 0, &l->n2.g));
        CLF_TRY(clf__load_stack(L, qkv, 3, qkv_rows, d, m->cfg.qkv_bias, &l->qkv));
        CLF_TRY(clf__load_lin(L, k_o, d, q, 0, &l->o));
        CLF_TRY(clf__load_stack(L, gu, 2, gu_rows, d, 0, &l->up));
        CLF_TRY(clf__load_lin(L, k_down, d, F, 0, &l->down));
    }
    return CLF_SUCCESS;
}

static clf_status llama_embed(clf_context *ctx, const clf_lm *m, const clf_tensor *ids,
                              clf_lm_ws *ws) {
    ws->pending = 0;
    return clf_embedding(ctx, ids, m->tok, 1.0f, 0, 0, &ws->h);
}

/* x = RMSNorm(h) * g, adding the pending sublayer output o into h first (fused). */
static clf_status llama_norm(clf_context *ctx, const clf_lm *m, const clf_norm *n, clf_lm_ws *ws,
                             clf_tensor *h, clf_tensor *x) {
    const float eps = m->cfg.norm_eps;
    if (!ws->pending) return clf_rmsnorm(ctx, h, NULL, n->g, eps, NULL, x);
    ws->pending = 0;
    return clf_rmsnorm(ctx, &ws->o, h, n->g, eps, h, x);
}

static clf_status llama_block(clf_context *ctx, const clf_lm *m, const clf_lm_layer *l,
                              clf_tensor *kv, const int64_t *lengths, const int64_t *n_new,
                              clf_lm_ws *ws) {
    const clf_lm_info *in = &m->cfg.info;
    clf_rope_params rp = clf_rope_default_params(in->heads + in->kv_heads, in->head_dim);
    rp.inv_freq = m->freq;
    rp.positions = ws->offs; /* sequence b's new tokens from position length(b) */
    CLF_TRY(llama_norm(ctx, m, &l->n1, ws, &ws->h, &ws->x));
    CLF_TRY(clf__lin(ctx, &ws->x, &l->qkv, CLF_ACT_IDENTITY, &ws->qkv)); /* (B, T, q + 2 kv) */
    CLF_TRY(clf_rope(ctx, &ws->qkv, &rp));                               /* query and key heads */
    CLF_TRY(clf__lm_attend(ctx, m, kv, lengths, n_new, ws));             /* (B, T, q) */
    CLF_TRY(clf__lin(ctx, &ws->att, &l->o, CLF_ACT_IDENTITY, &ws->o));
    ws->pending = 1;
    CLF_TRY(llama_norm(ctx, m, &l->n2, ws, &ws->h, &ws->x));           /* h += o; x = norm(h) */
    CLF_TRY(clf__lin(ctx, &ws->x, &l->up, CLF_ACT_IDENTITY, &ws->up)); /* (B, T, 2F) */
    CLF_TRY(clf_gated_act(ctx, &ws->up, NULL, CLF_ACT_SILU, &ws->mid));
    CLF_TRY(clf__lin(ctx, &ws->mid, &l->down, CLF_ACT_IDENTITY, &ws->o));
    ws->pending = 1; /* added into h by the next norm */
    return CLF_SUCCESS;
}

const clf_lm_arch clf__lm_llama = {llama_load, llama_embed, llama_block, llama_norm};
