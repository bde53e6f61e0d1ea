/*
 * models.h — the model stacks (encoder.c, decoder.c, greedy.c), the KV cache (kv_cache.c) and the
 * extension point for architectures: a clf_arch_def per family (arch_d2l.c, arch_bert.c), found
 * by clf__arch_find (arch.c). A new family is one arch_<name>.c with its weight names, embedding
 * step and block order, plus the ops it lacks; the stacks, loaders and states stay as they are.
 *
 * Weights (clf_encoder, clf_decoder) are immutable once loaded; everything one run changes lives
 * in a state (clf_encoder_state, clf_decoder_state), so many states can share one set of weights.
 */
#ifndef CLFORMER_MODELS_MODELS_H
#define CLFORMER_MODELS_MODELS_H

#include "layers.h"

/* ---------------------------------------------------------------- KV cache */

typedef struct clf_kv_cache {
    clf_tensor *kv;  /* (B, max_len, 2d): projected K | V of every decoded position */
    int64_t max_len; /* positions it holds */
} clf_kv_cache;

clf_status clf__kv_cache_init(clf_context *ctx, clf_kv_cache *c, int64_t batch, int64_t max_len,
                              int64_t d);
void clf__kv_cache_free(clf_kv_cache *c);
/* Copies the K | V columns (d .. 3d) of qkv (B, T, 3d) into positions pos .. pos+T-1. */
clf_status clf__kv_cache_append(clf_context *ctx, clf_kv_cache *c, const clf_tensor *qkv,
                                int64_t pos);

/* Rows of a (B, rows, width) float tensor t, from row `row` and column `col` of each batch. */
typedef struct clf_rows_at {
    const clf_tensor *t;
    size_t width, rows, col, row;
} clf_rows_at;
/* Copies `rows` rows of `width` floats of batches b0 .. b0 + nb - 1 from src to dst (one
 * rectangular copy; into an F16 dst, e.g. an F16 KV cache, one rows_to_half launch). */
clf_status clf__copy_rows(clf_context *ctx, const clf_rows_at *src, const clf_rows_at *dst,
                          size_t width, size_t rows, size_t b0, size_t nb);

/* ---------------------------------------------------------------- states' per-layer parts */

/* What one decoder layer keeps between steps of one run. */
typedef struct clf_dec_layer_state {
    clf_kv_cache self;    /* (B, max_len, 2d) */
    clf_tensor *cross_kv; /* (B, Ns, 2d): the encoder outputs' projected K | V */
    clf_tensor *w_self;   /* recorded (B, H, T, length) self-attention weights, or NULL */
    clf_tensor *w_cross;  /* recorded (B, H, T, Ns) cross-attention weights, or NULL */
} clf_dec_layer_state;

/* Embedding workspace of a state (BERT: the position ids of the current (B, N)). */
typedef struct clf_embed_ws {
    clf_tensor *pos_ids;  /* (rows) I32 */
    int64_t pos_b, pos_n; /* the shape pos_ids holds ids for; 0: none */
    clf_tensor tmp;       /* (B, N, d) view */
} clf_embed_ws;

/* ---------------------------------------------------------------- architectures */

typedef struct clf_arch_def {
    clf_arch arch;
    const char *name;
    /* Embeddings: loads e for an encoder (decoder 0) or a decoder (1). */
    clf_status (*load_embed)(clf_loader *L, const clf_transformer_params *c, int decoder,
                             clf_embed_w *e);
    /* out (B, N, d) = embedding of ids (B, N) at positions pos0 .. pos0+N-1. */
    clf_status (*embed)(clf_context *ctx, const clf_transformer_params *c, const clf_embed_w *e,
                        const clf_tensor *ids, int64_t pos0, clf_embed_ws *ws, clf_tensor *out);
    /* One encoder layer's weights (L->layer is its number) and its forward, in place on x. */
    clf_status (*load_encoder_layer)(clf_loader *L, const clf_transformer_params *c,
                                     clf_enc_layer *l);
    clf_status (*encoder_block)(clf_context *ctx, const clf_transformer_params *c,
                                const clf_enc_layer *l, clf_tensor *x, const clf_tensor *valid_lens,
                                clf_tensor *weights, clf_block_ws *ws);
    /* Decoder, or NULL when the family has none: one layer's weights, the output head, and one
     * block over x (B, T, d) at positions pos .. pos+T-1 into out (B, T, d), overwriting x;
     * record: keep the attention weights in ls. */
    clf_status (*load_decoder_layer)(clf_loader *L, const clf_transformer_params *c,
                                     clf_dec_layer *l);
    clf_status (*load_head)(clf_loader *L, const clf_transformer_params *c, clf_lin *head);
    clf_status (*decoder_block)(clf_context *ctx, const clf_transformer_params *c,
                                const clf_dec_layer *l, clf_dec_layer_state *ls, clf_tensor *x,
                                int64_t pos, const clf_tensor *enc_lens, int record,
                                clf_block_ws *ws, clf_tensor *out);
} clf_arch_def;

extern const clf_arch_def clf__arch_d2l;
extern const clf_arch_def clf__arch_bert;
/* The family of cfg->arch, or NULL. */
const clf_arch_def *clf__arch_find(clf_arch arch);
/* Checks a config and fills in its defaults (max_len 0: 1000). */
clf_status clf__check_config(clf_context *ctx, const clf_transformer_params *c,
                             clf_transformer_params *out);

/* ---------------------------------------------------------------- the stacks' weights */

struct clf_encoder {
    clf_context *ctx;
    clf_transformer_params cfg;
    const clf_arch_def *arch;
    clf_embed_w emb;
    clf_enc_layer *layers;  /* [num_layers], those of first .. end - 1 loaded */
    clf_encoder_state *own; /* the state the encoder's own calls use (clf_encoder_forward) */
    /* A pipeline stage (clf_sentence_model_load_split): layers first .. end - 1, and the
     * embedding when embeds; a whole encoder is 0 .. num_layers with it. */
    int64_t first, end;
    int embeds;
};

/* One stage of an encoder: layers first .. end - 1 of the checkpoint, its embedding when embeds. */
clf_status clf__encoder_load_part(clf_context *ctx, const clf_safetensors *st, const char *prefix,
                                  const clf_transformer_params *cfg, int64_t first, int64_t end,
                                  int embeds, clf_encoder **out);
/* A stage's forward on its own state: x (B, N, d) in place (a stage that embeds writes it from
 * ids first). valid_lens (B) on the stage's context. */
clf_status clf__encoder_part_forward(clf_encoder *enc, const clf_tensor *ids,
                                     const clf_tensor *valid_lens, clf_tensor *x);

/* Device bytes of the weights an encoder (stage) holds. */
int64_t clf__encoder_weight_bytes(const clf_encoder *enc);
/* Layers per stage of a split over n contexts (lm_split.c): shares from split, else each
 * device's global memory; whole layers by largest remainder, at least one each. Refuses n over
 * layers and shares that are not positive finite numbers (on ctxs[0]). */
clf_status clf__split_layers(clf_context *const *ctxs, int n, const double *split, int64_t layers,
                             int64_t *count);
/* Bytes of a rows x cols matrix kept as dtype (rows padded to whole blocks). */
double clf__matrix_bytes(clf_dtype dtype, int64_t rows, int64_t cols);

struct clf_decoder {
    clf_context *ctx;
    clf_transformer_params cfg;
    const clf_arch_def *arch;
    clf_embed_w emb;
    clf_dec_layer *layers;  /* [num_layers] */
    clf_lin head;           /* (V, d) dense to the vocabulary */
    clf_decoder_state *own; /* the state the decoder's own calls use (clf_decoder_step) */
};

#endif /* CLFORMER_MODELS_MODELS_H */
