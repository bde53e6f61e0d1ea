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
 * follows it (clf_rmsnorm writes the updated stream too). Decoding block-type weights on CPUs
 * (clf__lin_fuses: one or two rows, linear_packed_lq) fuses further: W_o and down add their
 * output into h themselves, and the projection after each norm computes the norm of h itself.
 */
#include "lm.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

static const char *const k_hf_names[] = {"LlamaForCausalLM", "MistralForCausalLM",
                                         "Qwen2ForCausalLM", NULL};
static const char *const k_gguf_archs[] = {"llama", "qwen2", NULL};

/* config.json (Hugging Face's LlamaConfig, MistralConfig, Qwen2Config). */
static clf_status parse_hf(clf_context *ctx, const cJSON *c, clf_lm_config *k) {
    clf_lm_info *in = &k->info;
    CLF_TRY(clf__hf_size(ctx, c, "vocab_size", 1, &in->vocab_size));
    CLF_TRY(clf__hf_size(ctx, c, "hidden_size", 1, &in->hidden_size));
    CLF_TRY(clf__hf_size(ctx, c, "intermediate_size", 1, &in->ffn_size));
    CLF_TRY(clf__hf_size(ctx, c, "num_hidden_layers", 1, &in->layers));
    CLF_TRY(clf__hf_size(ctx, c, "num_attention_heads", 1, &in->heads));
    CLF_TRY(clf__hf_size(ctx, c, "num_key_value_heads", 0, &in->kv_heads));
    CLF_TRY(clf__hf_size(ctx, c, "head_dim", 0, &in->head_dim));
    CLF_TRY(clf__hf_size(ctx, c, "max_position_embeddings", 0, &in->max_positions));
    if (!in->kv_heads) in->kv_heads = in->heads;
    if (!in->max_positions) in->max_positions = 2048;
    if (!in->head_dim) {
        if (in->hidden_size % in->heads)
            return clf__fail(ctx, CLF_ERROR_BAD_FORMAT,
                             "config.json: hidden_size %lld is not a multiple of "
                             "num_attention_heads %lld",
                             (long long)in->hidden_size, (long long)in->heads);
        in->head_dim = in->hidden_size / in->heads;
    }
    CLF_TRY(clf__lm_check_heads(ctx, in, "config.json"));
    k->norm_eps = (float)clf__hf_num(c, "rms_norm_eps", 1e-6);
    k->tied = clf__hf_bool(c, "tie_word_embeddings", 0);
    const int qwen2 = strcmp(in->arch, "Qwen2ForCausalLM") == 0;
    k->qkv_bias = qwen2 || clf__hf_bool(c, "attention_bias", 0);
    if (clf__hf_bool(c, "mlp_bias", 0))
        return clf__fail(ctx, CLF_ERROR_UNSUPPORTED, "config.json: mlp_bias is not supported");
    const char *act = clf__hf_str(c, "hidden_act", "silu");
    if (strcmp(act, "silu") != 0)
        return clf__fail(ctx, CLF_ERROR_UNSUPPORTED,
                         "config.json: hidden_act \"%s\" is not supported (silu is)", act);
    if (strcmp(in->arch, "MistralForCausalLM") == 0) k->window = clf__json_int(c, "sliding_window");
    if (qwen2 && clf__hf_bool(c, "use_sliding_window", 0))
        k->window = clf__json_int(c, "sliding_window");
    const cJSON *types = clf__hf_field(c, "layer_types"), *t;
    cJSON_ArrayForEach(t, types) {
        if (cJSON_IsString(t) && strcmp(t->valuestring, "full_attention") != 0 &&
            (strcmp(t->valuestring, "sliding_attention") != 0 ||
             !clf__json_int(c, "sliding_window")))
            return clf__fail(ctx, CLF_ERROR_UNSUPPORTED,
                             "config.json: layer type \"%s\" is not supported", t->valuestring);
        if (cJSON_IsString(t) && strcmp(t->valuestring, "sliding_attention") == 0)
            k->window = clf__json_int(c, "sliding_window");
    }
    if (k->window >= in->max_positions) k->window = 0; /* never reached */
    CLF_TRY(clf__hf_rope(ctx, c, k));
    return clf__hf_special_ids(ctx, c, in, -1);
}

/* GGUF metadata (llama.cpp's llama and qwen2 keys). Llama files come with Q and K rows
 * permuted for the interleaved rotation; Qwen2 files keep Hugging Face's half-split order. */
static clf_status parse_gguf(const clf_gguf_meta *m, clf_lm_config *k, int64_t *unpermute_dh) {
    clf_lm_info *in = &k->info;
    const int qwen2 = strcmp(m->arch, "qwen2") == 0;
    snprintf(in->arch, sizeof(in->arch), "%s", qwen2 ? "Qwen2ForCausalLM" : "LlamaForCausalLM");
    CLF_TRY(clf__gguf_vocab(m, in));
    CLF_TRY(clf__gguf_size(m, "embedding_length", 1, 0, &in->hidden_size));
    CLF_TRY(clf__gguf_size(m, "feed_forward_length", 1, 0, &in->ffn_size));
    CLF_TRY(clf__gguf_size(m, "block_count", 1, 0, &in->layers));
    CLF_TRY(clf__gguf_size(m, "attention.head_count", 1, 0, &in->heads));
    CLF_TRY(clf__gguf_size(m, "attention.head_count_kv", 0, in->heads, &in->kv_heads));
    CLF_TRY(clf__gguf_size(m, "context_length", 0, 2048, &in->max_positions));
    int64_t kl, vl;
    CLF_TRY(clf__gguf_size(m, "attention.key_length", 0, in->hidden_size / in->heads, &kl));
    CLF_TRY(clf__gguf_size(m, "attention.value_length", 0, kl, &vl));
    if (kl != vl || (kl == in->hidden_size / in->heads && in->hidden_size % in->heads))
        return clf__fail(m->ctx, CLF_ERROR_UNSUPPORTED,
                         "GGUF: key length %lld and value length %lld must agree (and divide the "
                         "embedding of %lld by the heads)",
                         (long long)kl, (long long)vl, (long long)in->hidden_size);
    in->head_dim = kl;
    CLF_TRY(clf__lm_check_heads(m->ctx, in, "GGUF"));
    double eps;
    CLF_TRY(clf__gguf_float(m, "attention.layer_norm_rms_epsilon", 1e-5, &eps));
    k->norm_eps = (float)eps;
    k->tied = clf_gguf_tensor_find(m->g, "output.weight") == NULL;
    k->qkv_bias = clf_gguf_tensor_find(m->g, "blk.0.attn_q.bias") != NULL;
    int64_t window;
    CLF_TRY(clf__gguf_size(m, "attention.sliding_window", 0, in->max_positions, &window));
    k->window = window < in->max_positions ? window : 0;
    *unpermute_dh = qwen2 ? 0 : in->head_dim;
    CLF_TRY(clf__gguf_rope(m, k));
    return clf__gguf_special_ids(m, in);
}

/* Hugging Face's stem -> the GGUF stem ("{i}" the layer); rope: rows permuted (Q, K). */
static const clf_gguf_name k_gguf_names[] = {
    {"model.embed_tokens", "token_embd", 0},
    {"model.norm", "output_norm", 0},
    {"lm_head", "output", 0},
    {"model.layers.{i}.self_attn.q_proj", "blk.{i}.attn_q", 1},
    {"model.layers.{i}.self_attn.k_proj", "blk.{i}.attn_k", 1},
    {"model.layers.{i}.self_attn.v_proj", "blk.{i}.attn_v", 0},
    {"model.layers.{i}.self_attn.o_proj", "blk.{i}.attn_output", 0},
    {"model.layers.{i}.mlp.gate_proj", "blk.{i}.ffn_gate", 0},
    {"model.layers.{i}.mlp.up_proj", "blk.{i}.ffn_up", 0},
    {"model.layers.{i}.mlp.down_proj", "blk.{i}.ffn_down", 0},
    {"model.layers.{i}.input_layernorm", "blk.{i}.attn_norm", 0},
    {"model.layers.{i}.post_attention_layernorm", "blk.{i}.ffn_norm", 0},
};

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
    L->ctx = m->parts[0].ctx;
    if (m->embeds) CLF_TRY(clf__load(L, "model.embed_tokens.weight", in->vocab_size, d, &m->tok));
    L->ctx = m->parts[m->n_parts - 1].ctx;
    if (m->heads) {
        CLF_TRY(clf__load(L, "model.norm.weight", d, 0, &m->final.g));
        L->cut = CLF_CUT_ROWS; /* a tensor-parallel shard's rows of the vocabulary */
        if (m->cfg.tied)
            CLF_TRY(clf__lm_tied_head(L, m, "model.embed_tokens"));
        else
            CLF_TRY(clf__load_lin(L, "lm_head", in->vocab_size, d, 0, &m->head));
        L->cut = CLF_CUT_NONE;
    }
    const int64_t h = in->head_dim / 2;
    for (int p = 0; p < m->n_parts; p++) {
        CLF_TRY(clf_tensor_create(m->parts[p].ctx, CLF_F32, 1, &h, &m->parts[p].freq));
        CLF_TRY(clf_tensor_write(m->parts[p].freq, m->cfg.inv_freq, (size_t)h * sizeof(float)));
    }
    const char *qkv[3] = {k_q, k_k, k_v}, *gu[2] = {k_gate, k_up};
    const int64_t qkv_rows[3] = {q, kv, kv}, gu_rows[2] = {F, F};
    for (L->layer = clf__lm_first(m); L->layer < clf__lm_end(m); L->layer++) {
        clf_lm_layer *l = &m->layers[L->layer];
        L->ctx = clf__lm_layer_ctx(m, L->layer);
        CLF_TRY(clf__load(L, k_n1, d, 0, &l->n1.g));
        CLF_TRY(clf__load(L, k_n2, d, 0, &l->n2.g));
        L->cut = CLF_CUT_ROWS; /* a tensor-parallel shard's heads and FFN columns */
        CLF_TRY(clf__load_stack(L, qkv, 3, qkv_rows, d, m->cfg.qkv_bias, &l->qkv));
        CLF_TRY(clf__load_glu(L, gu, gu_rows, d, &l->up)); /* gated panels where packed */
        L->cut = CLF_CUT_COLS;
        CLF_TRY(clf__load_lin(L, k_o, d, q, 0, &l->o));
        CLF_TRY(clf__load_lin(L, k_down, d, F, 0, &l->down));
        L->cut = CLF_CUT_NONE;
    }
    return CLF_SUCCESS;
}

static clf_status llama_embed(clf_context *ctx, const clf_lm *m, const clf_tensor *ids,
                              clf_lm_ws *ws) {
    ws->pending = 0;
    return clf__embedding(ctx, ids, m->tok, 1.0f, 0, 0, &ws->h, ws->ids_in_range);
}

/* x = RMSNorm(h) * g, adding the pending sublayer output o into h first (fused). */
static clf_status llama_norm(clf_context *ctx, const clf_lm *m, const clf_norm *n, clf_lm_ws *ws,
                             clf_tensor *h, clf_tensor *x) {
    const float eps = m->cfg.norm_eps;
    if (!ws->pending) return clf_rmsnorm(ctx, h, NULL, n->g, eps, NULL, x);
    ws->pending = 0;
    return clf_rmsnorm(ctx, &ws->o, h, n->g, eps, h, x);
}

/* y = lin(RMSNorm(h) * g), or with glu (a gated lin) y = SiLU(gate) up of it: the norm fused where
 * lin takes it (no sublayer output pending), else through x = llama_norm. */
static clf_status llama_norm_lin(clf_context *ctx, const clf_lm *m, const clf_norm *n,
                                 const clf_lin *lin, int glu, clf_lm_ws *ws, clf_tensor *y) {
    if (!ws->pending && m->shard.size <= 1 &&
        clf__lin_fuses(ctx, lin, ws->h.numel / m->cfg.info.hidden_size)) {
        const clf_lin_fuse f = {n->g, m->cfg.norm_eps, 0};
        return glu ? clf__lin_glu(ctx, &ws->h, lin, CLF_ACT_SILU, y, &f)
                   : clf__lin_fused(ctx, &ws->h, lin, y, &f);
    }
    CLF_TRY(llama_norm(ctx, m, n, ws, &ws->h, &ws->x));
    return glu ? clf__lin_glu(ctx, &ws->x, lin, CLF_ACT_SILU, y, NULL)
               : clf__lin(ctx, &ws->x, lin, CLF_ACT_IDENTITY, y);
}

/* A sublayer's output lin(x) into the stream: added into h by lin itself where it takes that (no
 * shards), else into o, pending for the next norm (a shard's partial sums summed first). */
static clf_status llama_residual(clf_context *ctx, const clf_lm *m, const clf_lin *lin,
                                 const clf_tensor *x, clf_lm_ws *ws) {
    if (!ws->pending && m->shard.size <= 1 &&
        clf__lin_fuses(ctx, lin, ws->h.numel / m->cfg.info.hidden_size)) {
        const clf_lin_fuse f = {NULL, 0.0f, 1};
        return clf__lin_fused(ctx, x, lin, &ws->h, &f);
    }
    CLF_TRY(clf__lin(ctx, x, lin, CLF_ACT_IDENTITY, &ws->o));
    CLF_TRY(clf__lm_reduce(ctx, m, ws, &ws->o)); /* a shard's partial sums: summed over shards */
    ws->pending = 1;                             /* added into h by the next norm */
    return CLF_SUCCESS;
}

/* The final norm in the head's launch (y = lin(RMSNorm(x) g) for x (rows, d)). */
static clf_status llama_norm_head(clf_context *ctx, const clf_lm *m, const clf_norm *n,
                                  const clf_tensor *x, const clf_lin *lin, clf_tensor *y) {
    const clf_lin_fuse f = {n->g, m->cfg.norm_eps, 0};
    return clf__lin_fused(ctx, x, lin, y, &f);
}

static clf_status llama_block(clf_context *ctx, const clf_lm *m, const clf_lm_layer *l,
                              clf_tensor *kv, const int64_t *lengths, const int64_t *n_new,
                              clf_lm_ws *ws) {
    const clf_lm_info *in = &m->cfg.info;
    clf_rope_params rp = clf_rope_default_params(in->heads + in->kv_heads, in->head_dim);
    rp.inv_freq = ws->freq;
    rp.positions = ws->offs; /* sequence b's new tokens from position length(b) */
    CLF_TRY(llama_norm_lin(ctx, m, &l->n1, &l->qkv, 0, ws, &ws->qkv)); /* (B, T, q + 2 kv) */
    /* query and key heads rotated, and the new keys and values into the cache in that launch
     * (rope.APPEND) or copied after it */
    const int app = clf__tun(ctx, CLF_T_ROPE_APPEND) != 0;
    if (app)
        CLF_TRY(clf__rope_append(ctx, &ws->qkv, &rp, in->kv_heads, kv, &ws->lens));
    else
        CLF_TRY(clf_rope(ctx, &ws->qkv, &rp));
    CLF_TRY(clf__lm_attend(ctx, m, kv, lengths, n_new, ws, app)); /* (B, T, q) */
    CLF_TRY(llama_residual(ctx, m, &l->o, &ws->att, ws));         /* h += o */
    if (l->up.gated) { /* SwiGLU in the gate | up launch: (B, T, F) */
        CLF_TRY(llama_norm_lin(ctx, m, &l->n2, &l->up, 1, ws, &ws->mid));
    } else {
        CLF_TRY(llama_norm_lin(ctx, m, &l->n2, &l->up, 0, ws, &ws->up)); /* (B, T, 2F) */
        CLF_TRY(clf_gated_act(ctx, &ws->up, NULL, CLF_ACT_SILU, &ws->mid));
    }
    return llama_residual(ctx, m, &l->down, &ws->mid, ws);
}

const clf_lm_arch clf__lm_llama = {
    k_hf_names, k_gguf_archs,   parse_hf,
    parse_gguf, k_gguf_names,   sizeof(k_gguf_names) / sizeof(k_gguf_names[0]),
    3, /* gate, up, down */
    llama_load, llama_embed,    llama_block,
    llama_norm, llama_norm_head};
