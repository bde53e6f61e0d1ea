/*
 * lm.h — causal language models (decoder-only): the config read from a Hugging Face folder
 * (lm_config.c), the weights of a family (arch_llama.c, arch_gpt2.c, described by a clf_lm_arch),
 * the stack and its states (lm.c) and generation (generate.c).
 *
 * Shapes: B sequences, T new tokens per step, d = hidden_size, H query heads and KVH K/V heads of
 * Dh, q = H Dh, kv = KVH Dh, F the FFN width, V the vocabulary.
 */
#ifndef CLFORMER_MODELS_LM_H
#define CLFORMER_MODELS_LM_H

#include "models.h"

typedef struct clf_lm_arch clf_lm_arch;

/* Everything the forward needs from config.json, checked. */
typedef struct clf_lm_config {
    clf_lm_info info;        /* the public part (sizes, special ids) */
    const clf_lm_arch *arch; /* the family's loader and forward */
    float norm_eps;          /* rms_norm_eps / layer_norm_epsilon */
    int qkv_bias;            /* Q, K, V projections have biases (Qwen2, Llama's attention_bias) */
    int tied;                /* the head is the token embedding */
    int64_t window;          /* Mistral's sliding_window (0: none) */
    float *inv_freq; /* (head_dim / 2) rotary frequencies after rope scaling (Llama family) */
} clf_lm_config;

/* Reads dir/config.json into c (message naming what is unsupported or missing): the family
 * named by "architectures" (one of clf__lm_archs) parses the rest. */
clf_status clf__lm_read_config(clf_context *ctx, const char *dir, clf_lm_config *c);
/* The same from a GGUF file's metadata (lm_gguf.c): the family whose gguf_names holds
 * general.architecture parses its <arch>.* keys. *unpermute_dh: the head size when the file's Q
 * and K rows are permuted for interleaved RoPE (llama.cpp's converter does so for "llama"),
 * else 0. */
clf_status clf__lm_read_gguf_config(clf_context *ctx, const clf_gguf *g, clf_lm_config *c,
                                    int64_t *unpermute_dh);
void clf__lm_config_free(clf_lm_config *c);
/* Shared by both: drops (with a warning naming source) eos ids outside the vocabulary; checks
 * the heads (K/V heads divide query heads; head size even, at most 256). */
void clf__lm_drop_bad_eos(clf_context *ctx, clf_lm_info *info, const char *source);
clf_status clf__lm_check_heads(clf_context *ctx, const clf_lm_info *in, const char *source);

/* For the families' config.json readers (lm_config.c): a field, null read as absent; a number,
 * bool or string with a fallback; a size (required: a positive integer; optional: 0 when
 * absent); bos_token_id and eos_token_id (fallback: both, when absent; -1 none); the rotary
 * frequencies after rope scaling into c->inv_freq. */
struct cJSON;
const struct cJSON *clf__hf_field(const struct cJSON *c, const char *key);
double clf__hf_num(const struct cJSON *c, const char *key, double fallback);
int clf__hf_bool(const struct cJSON *c, const char *key, int fallback);
const char *clf__hf_str(const struct cJSON *c, const char *key, const char *fallback);
clf_status clf__hf_size(clf_context *ctx, const struct cJSON *c, const char *key, int required,
                        int64_t *out);
clf_status clf__hf_special_ids(clf_context *ctx, const struct cJSON *c, clf_lm_info *info,
                               int32_t fallback);
clf_status clf__hf_rope(clf_context *ctx, const struct cJSON *c, clf_lm_config *k);

/* For the families' GGUF readers (lm_gguf.c): the file and its general.architecture; an
 * <arch>.<key> size (absent: fallback, or an error when required) or float; the special ids from
 * tokenizer.ggml.*; the rotary frequencies (rope.freq_base, linear scaling, rope_freqs); the
 * vocabulary (<arch>.vocab_size, else token_embd's rows). */
typedef struct clf_gguf_meta {
    clf_context *ctx;
    const clf_gguf *g;
    const char *arch; /* general.architecture, NUL-terminated copy */
} clf_gguf_meta;
clf_status clf__gguf_size(const clf_gguf_meta *m, const char *key, int required, int64_t fallback,
                          int64_t *out);
clf_status clf__gguf_float(const clf_gguf_meta *m, const char *key, double fallback, double *out);
clf_status clf__gguf_special_ids(const clf_gguf_meta *m, clf_lm_info *in);
clf_status clf__gguf_rope(const clf_gguf_meta *m, clf_lm_config *k);
clf_status clf__gguf_vocab(const clf_gguf_meta *m, clf_lm_info *in);

/* The weights of a folder: model.safetensors, or the shards of model.safetensors.index.json. */
typedef struct clf_lm_files {
    clf_safetensors **st;
    size_t n;
} clf_lm_files;
clf_status clf__lm_open_files(clf_context *ctx, const char *dir, clf_lm_files *f);
void clf__lm_files_free(clf_lm_files *f);

/* One decoder block's weights. Llama family: n1, n2 are RMSNorm weights (b NULL), qkv the fused
 * W_q | W_k | W_v (q + 2 kv, d), up the stacked gate | up (2F, d). GPT-2: LayerNorms, qkv is
 * c_attn (3d, d), up is c_fc (F, d). */
typedef struct clf_lm_layer {
    clf_norm n1, n2; /* before attention, before the FFN */
    clf_lin qkv, o;  /* o: (d, q) */
    clf_lin up, down;
} clf_lm_layer;

/* A pipeline stage (clf_lm_load_split): a context and the contiguous layers whose weights (and,
 * in a state, KV caches) it holds. The first stage also holds the embedding, the last the final
 * norm and the head; a model on one context is one stage. */
typedef struct clf_lm_part {
    clf_context *ctx;
    int64_t first, end; /* layers first .. end - 1 */
    clf_tensor *freq;   /* Llama family: (Dh / 2) rotary frequencies on this context */
} clf_lm_part;

struct clf_lm {
    clf_context *ctx; /* the first stage's: ids come in here, and every call's error is left here */
    clf_lm_config cfg;
    clf_tensor *tok; /* (V, d) token embeddings */
    clf_tensor *pos; /* GPT-2: (max_positions, d) learned positions; else NULL */
    clf_lm_part *parts;
    int n_parts;
    /* A stage model (clf_lm_load_stage) holds layers parts[0].first .. parts[n_parts - 1].end - 1
     * only; embeds: it holds the token embedding (its first layer is 0), heads: the final norm and
     * the head (its last layer is the model's). A whole model has both. */
    int embeds, heads;
    clf_lm_layer *layers;
    clf_norm final; /* the last norm */
    clf_lin head;   /* (V, d); tied: tok itself where the linear kernels read tok as it is
                     * stored (head_shared), else the table loaded again (packed on CPUs) */
    int head_shared;
    /* Tensor parallel (clf_lm_load_shard): cfg.info holds this shard's heads, K/V heads and FFN
     * width, whole its sizes as the file gives them. */
    clf_shard shard;
    clf_lm_info whole;
};

/* What one step of a state works on: views for the current (B, T). */
typedef struct clf_lm_ws {
    clf_tensor h;       /* (B, T, d) the residual stream */
    clf_tensor x;       /* (B, T, d) normalized input of a sublayer */
    clf_tensor qkv;     /* (B, T, q + 2 kv) */
    clf_tensor att;     /* (B, T, q) */
    clf_tensor o;       /* (B, T, d) a sublayer's output */
    clf_tensor up;      /* (B, T, 2F) (GPT-2: (B, T, F)) */
    clf_tensor mid;     /* (B, T, F) */
    clf_tensor lens;    /* (B, T) I32: query t of sequence b sees keys 0 .. length(b) + t */
    clf_tensor *offs;   /* (B) I32: length(b), the position of each sequence's first new token */
    clf_tensor pos_ids; /* (B, T) I32: positions (GPT-2's learned embedding) */
    const clf_tensor *freq; /* Llama family: the stage's rotary frequencies */
    int64_t nk;             /* keys in use: max over b of length(b) + n_new[b] */
    int pending;            /* o holds a sublayer output not yet added into h */
    int ids_in_range;       /* the ids were checked on the host (clf__embedding's in_range) */
    float **reduce_h;       /* a shard's host copy of the stream for its all-reduce (the state's */
    int64_t *reduce_n;      /* buffer and its floats, grown by clf__lm_reduce, kept across steps) */
} clf_lm_ws;

/* A family, all in its arch_*.c: the names it answers to (config.json's "architectures",
 * GGUF's general.architecture; NULL-terminated lists), its config readers for both (parse_hf:
 * every field but info.arch, which the caller sets to the name matched; parse_gguf: every field,
 * info.arch the Hugging Face class the file's model is), its GGUF name map, the weight
 * matrices of its FFN (2, or 3 when gated), its loader (every weight of m, L->prefix free to
 * set), its embedding of ids (B, T) into ws->h, its block (in place on ws->h, the new keys and
 * values appended to kv (B, max_len, 2 kv) at each sequence's length), its norm
 * (x = norm(h), first adding a pending sublayer output ws->o into h), and optionally (NULL: none)
 * its final norm fused into the head: y = lin(norm(x)) for x (rows, d) in lin's one launch,
 * called only where clf__lin_fuses says lin takes a norm at those rows. */
typedef struct clf_lm_arch {
    const char *const *hf_names;
    const char *const *gguf_archs;
    clf_status (*parse_hf)(clf_context *ctx, const struct cJSON *c, clf_lm_config *k);
    clf_status (*parse_gguf)(const clf_gguf_meta *m, clf_lm_config *k, int64_t *unpermute_dh);
    const clf_gguf_name *gguf_names;
    size_t n_gguf_names;
    int ffn_matrices;
    clf_status (*load)(clf_loader *L, clf_lm *m);
    clf_status (*embed)(clf_context *ctx, const clf_lm *m, const clf_tensor *ids, clf_lm_ws *ws);
    clf_status (*block)(clf_context *ctx, const clf_lm *m, const clf_lm_layer *l, clf_tensor *kv,
                        const int64_t *lengths, const int64_t *n_new, clf_lm_ws *ws);
    clf_status (*norm)(clf_context *ctx, const clf_lm *m, const clf_norm *n, clf_lm_ws *ws,
                       clf_tensor *h, clf_tensor *x);
    clf_status (*norm_lin)(clf_context *ctx, const clf_lm *m, const clf_norm *n,
                           const clf_tensor *x, const clf_lin *lin, clf_tensor *y);
} clf_lm_arch;

extern const clf_lm_arch clf__lm_llama; /* arch_llama.c */
extern const clf_lm_arch clf__lm_gpt2;  /* arch_gpt2.c */
/* Every family (arch.c): the one whose hf_names (gguf 0) or gguf_archs (gguf 1) holds name
 * (len bytes), or NULL. list: the names the families answer to, comma-separated, into buf. */
const clf_lm_arch *clf__lm_arch_find(const char *name, size_t len, int gguf);
const char *clf__lm_arch_list(int gguf, char *buf, size_t size);

/* A tied head (after m->tok is loaded): tok itself where the head would be the same bytes (no
 * conversion to L->weight_dtype, no packed panels for its type on this device: GPUs, and
 * quantized types everywhere), else stem's weight loaded again as a linear layer. */
clf_status clf__lm_tied_head(clf_loader *L, clf_lm *m, const char *stem);

/* The layers m holds: first .. end - 1 (all of them but in a stage model). */
int64_t clf__lm_first(const clf_lm *m);
int64_t clf__lm_end(const clf_lm *m);
/* The context of layer i's stage. */
clf_context *clf__lm_layer_ctx(const clf_lm *m, int64_t layer);
/* Sets m->parts for a split over n contexts (lm_split.c): shares from split (or each device's
 * global memory), every stage's weight bytes (from the GGUF file g's tensors, else from the
 * sizes and the load's weight type) checked against its device's memory. */
clf_status clf__lm_plan_split(clf_lm *m, clf_context *const *ctxs, int n, const double *split,
                              const clf_gguf *g, clf_dtype weight_dtype);
/* A failure with status st recorded on ctx, one of m's stages: its message is copied to m->ctx
 * (prefixed with the stage and its device) when ctx is another context. Returns st. */
clf_status clf__lm_relay_error(const clf_lm *m, clf_context *ctx, clf_status st);

/* Shared by the blocks: y (the stream's partial sums on a tensor-parallel shard) summed over the
 * shards in place by m->shard.allreduce; nothing on a whole model. */
clf_status clf__lm_reduce(clf_context *ctx, const clf_lm *m, clf_lm_ws *ws, clf_tensor *y);
/* n host floats summed over the shards by m->shard.allreduce; its failure reported on ctx. */
clf_status clf__lm_allreduce(clf_context *ctx, const clf_lm *m, float *x, int64_t n);

/* Shared by the blocks: appends the K | V columns (from column q) of the first n_new[b] rows of
 * each sequence of ws->qkv (B, T, q + 2 kv) to kv at its length (unless appended: stored
 * already, clf__rope_append), then attends (causal over each sequence's cache, grouped-query)
 * into ws->att. */
clf_status clf__lm_attend(clf_context *ctx, const clf_lm *m, clf_tensor *kv, const int64_t *lengths,
                          const int64_t *n_new, clf_lm_ws *ws, int appended);

#endif /* CLFORMER_MODELS_LM_H */
