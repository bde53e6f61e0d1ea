/*
 * layers.h — what the model files share (src/models/): the weights of the reusable layers
 * (linear, norm, multi-head attention, FFN), their loaders, the forward of each layer, and the
 * description of an architecture (models.h's clf_arch_def) that the encoder and decoder stacks run.
 *
 * Shapes: B sequences, N (or T) tokens each, d = num_hiddens, H heads of Dh = d / H, F the FFN
 * width, V the vocabulary. Every workspace below is a view (see clf__view) of a buffer sized for
 * the largest (B, N) reserved so far.
 */
#ifndef CLFORMER_MODELS_LAYERS_H
#define CLFORMER_MODELS_LAYERS_H

#include "../internal.h"

/* Runs a call that returns clf_status and returns its status from the caller on failure: the
 * forward passes read as the math, one line per step. */
#define CLF_TRY(call)                                                                              \
    do {                                                                                           \
        clf_status clf_try_st_ = (call);                                                           \
        if (clf_try_st_ != CLF_SUCCESS) return clf_try_st_;                                        \
    } while (0)

/* The same for code that owns something to release: sets `st` and jumps to `fail`. */
#define CLF_CHECK(call)                                                                            \
    do {                                                                                           \
        if ((st = (call)) != CLF_SUCCESS) goto fail;                                               \
    } while (0)

/* ---------------------------------------------------------------- weights */

/* A further part of a split stack (clf_lin.more). */
typedef struct clf_lin_part {
    clf_tensor *w, *b;
    int64_t out;   /* its outputs: the output columns after the part before it */
    int n_tensors; /* the file's tensors it stacks */
} clf_lin_part;

typedef struct clf_lin {
    clf_tensor *w; /* (out, in) as loaded, or packed panels (3-D, see clf__linear_pack) */
    clf_tensor *b; /* (out), or NULL */
    /* A stack whose tensors are stored in different types (a GGUF file's Q4_K attn_q and attn_k
     * beside a Q6_K attn_v) is split into runs of one type, each kept in its own: w and b hold
     * the first run (out outputs, n_tensors of the stack's tensors), more[] the others, each
     * writing its own columns of the one output (clf__lin). n_more 0: one tensor. */
    int n_more;
    int64_t out;
    int n_tensors;
    clf_lin_part more[2];
    int gated; /* a GLU's gate | up (2F, in) as gated panels (clf__load_glu) */
} clf_lin;

typedef struct clf_norm {
    clf_tensor *g, *b; /* (d) each: LayerNorm's weight and bias */
} clf_norm;

typedef struct clf_mha_w {
    clf_lin qkv; /* self-attention: fused W_q | W_k | W_v (3d, d); cross-attention: W_q (d, d) */
    clf_lin kv;  /* cross-attention only: fused W_k | W_v (2d, d) */
    clf_lin o;   /* W_o (d, d) */
} clf_mha_w;

typedef struct clf_ffn_w {
    clf_lin up;   /* dense1 (F, d) */
    clf_lin down; /* dense2 (d, F) */
} clf_ffn_w;

/* Embedding weights, by architecture (arch_*.c fills what it uses). */
typedef struct clf_embed_w {
    clf_tensor *tok; /* (V, d) token embeddings */
    clf_tensor *pos; /* BERT: (max_len, d) learned positions + token type 0; d2l: NULL */
    clf_norm norm;   /* BERT: the embedding LayerNorm */
} clf_embed_w;

/* One encoder block's weights: post-LN self-attention and FFN (d2l's EncoderBlock, BERT's layer).
 */
typedef struct clf_enc_layer {
    clf_mha_w att;
    clf_norm n1, n2; /* after attention, after the FFN */
    clf_ffn_w ffn;
} clf_enc_layer;

/* One decoder block's weights (d2l's DecoderBlock). */
typedef struct clf_dec_layer {
    clf_mha_w self, cross;
    clf_norm n1, n2, n3; /* after self-attention, cross-attention, FFN */
    clf_ffn_w ffn;
} clf_dec_layer;

void clf__lin_free(clf_lin *l);
void clf__norm_free(clf_norm *n);
void clf__mha_free(clf_mha_w *m);
void clf__ffn_free(clf_ffn_w *f);
void clf__embed_free(clf_embed_w *e);

/* ---------------------------------------------------------------- loading */

/* Reads tensors of one model from a safetensors file, or from the first of n_shards files that
 * holds each name (a sharded checkpoint; st unused then). Names may hold "{i}", replaced by
 * `layer`; `prefix` is put in front of every name. */
/* One entry of a family's GGUF name map: Hugging Face's stem ("{i}" the layer) -> llama.cpp's;
 * rope: the rows come permuted for interleaved RoPE (Llama's Q and K), when the file says so. */
typedef struct clf_gguf_name {
    const char *hf, *gguf;
    int rope;
} clf_gguf_name;

typedef struct clf_loader {
    clf_context *ctx;
    const clf_safetensors *st;
    const char *prefix;
    int64_t layer;
    clf_safetensors *const *shards;
    size_t n_shards;
    clf_dtype weight_dtype; /* the linear weights' dtype on the device (clf__pack) */
    /* A GGUF file instead (lm_gguf.c): the names asked for are Hugging Face's, mapped to the
     * file's (clf__gguf_name); weights keep their stored types. unpermute_dh: the head size
     * when Q and K rows come permuted for interleaved RoPE (undone at load), else 0. */
    const clf_gguf *gguf;
    int64_t unpermute_dh;
    const clf_gguf_name *gguf_names; /* the family's name map (its arch_*.c) */
    size_t n_gguf_names;
    /* Tensor parallel (clf_lm_load_shard): shard shard_rank of shard_size keeps part
     * shard_rank of every weight the family loads with cut set (clf__cut): */
    int shard_rank, shard_size;
    int cut;   /* CLF_CUT_*: how the next loads are cut (CLF_CUT_NONE: whole) */
    int fused; /* CLF_CUT_ROWS of a tensor that is this many stacked parts (GPT-2's c_attn: 3) */
} clf_loader;

/* How a shard keeps its part of a loaded tensor: CLF_CUT_ROWS, each stacked part's rows (and its
 * bias) cut in shard_size pieces, rows P r / n .. P (r + 1) / n - 1 of a part of P (W_q, W_k,
 * W_v, gate, up: even, as the heads and FFN width divide; the head's vocabulary: any);
 * CLF_CUT_COLS, the columns (W_o, down), the bias kept whole by shard 0 alone (the all-reduce adds
 * it once). */
enum { CLF_CUT_NONE = 0, CLF_CUT_ROWS, CLF_CUT_COLS };
/* The rows shard r of n keeps of a part of `rows` rows (n 1: all). */
int64_t clf__cut_rows(int64_t rows, int r, int n);
/* Cuts *t (name: the first file tensor's, for messages; count stacked parts of rows[i] rows, as
 * loaded: before clf__pack) to this shard's part as L->cut says; a COLS bias on a shard but the
 * first becomes NULL. Refused when the columns do not cut evenly into whole blocks.
 */
clf_status clf__cut(clf_loader *L, const char *name, int count, const int64_t *rows,
                    clf_tensor **t);

/* The GGUF loads behind clf__load and clf__load_rows when L->gguf is set (lm_gguf.c): full
 * are the names with prefix and layer in place. 1-D tensors come as F32; a matrix in its stored
 * type (stacked parts of different types are refused: clf__load_stack splits them). */
clf_status clf__gguf_load_rows(clf_loader *L, const char *const *full, int count,
                               const int64_t *rows, int64_t cols, clf_tensor **out);
/* The stored type of a GGUF tensor by its full name, or -1 when the file has none. */
int clf__gguf_stored_type(const clf_loader *L, const char *full);

/* A (rows, cols) tensor (a (rows) one when cols is 0), checked for its exact shape. */
clf_status clf__load(clf_loader *L, const char *name, int64_t rows, int64_t cols, clf_tensor **out);
/* `count` tensors of (rows, cols) (or (rows)) concatenated by rows: the fused projections. */
clf_status clf__load_cat(clf_loader *L, const char *const *names, int count, int64_t rows,
                         int64_t cols, clf_tensor **out);
/* The same with rows[i] rows for tensor i; transpose: each is stored as (cols, rows[i]) (GPT-2's
 * Conv1D weights) and is transposed into (rows[i], cols). */
clf_status clf__load_rows(clf_loader *L, const char *const *names, int count, const int64_t *rows,
                          int64_t cols, int transpose, clf_tensor **out);
/* Makes a loaded F32 (out, in) weight what the linear layers run on: stored as dtype (F16:
 * rounded, refused past its range), then packed into panels when the device prefers them
 * (linear.PACK: CPUs). */
clf_status clf__pack(clf_context *ctx, clf_dtype dtype, clf_tensor **w);
/* count stems' <stem>.weight (rows[i], cols) stacked by rows (a fused projection), their biases
 * too when bias, packed for the device: one tensor, or from a GGUF file whose stems are stored in
 * different types, one per run of a type (clf_lin.more): nothing is converted. */
clf_status clf__load_stack(clf_loader *L, const char *const *stems, int count, const int64_t *rows,
                           int64_t cols, int bias, clf_lin *l);
/* A GLU's gate and up stems (rows F each, no biases) as clf__load_stack stacks them, as gated
 * panels (l->gated) where they are one run of one type and the device packs them
 * (clf__linear_gates): then clf__lin_glu runs the GLU in their launch. */
clf_status clf__load_glu(clf_loader *L, const char *const *stems, const int64_t *rows, int64_t cols,
                         clf_lin *l);
/* <stem>.weight (out, in) and, with bias, <stem>.bias (out), packed for the device. */
clf_status clf__load_lin(clf_loader *L, const char *stem, int64_t out, int64_t in, int bias,
                         clf_lin *l);
/* <stem>.weight and <stem>.bias, (d) each. */
clf_status clf__load_norm(clf_loader *L, const char *stem, int64_t d, clf_norm *n);
/* q, k, v, o are projection stems; cross: W_q alone and W_k | W_v fused. */
clf_status clf__load_mha(clf_loader *L, const char *q, const char *k, const char *v, const char *o,
                         int64_t d, int bias, int cross, clf_mha_w *m);
clf_status clf__load_ffn(clf_loader *L, const char *up, const char *down, int64_t d, int64_t f,
                         clf_ffn_w *w);

/* The weight names of one post-LN encoder block (an arch's table; "{i}" is the layer). */
typedef struct clf_enc_names {
    const char *q, *k, *v, *o; /* attention projections */
    const char *norm1, *norm2; /* after attention, after the FFN */
    const char *up, *down;     /* FFN dense1, dense2 */
} clf_enc_names;
/* One encoder block's weights by those names; bias: the attention projections have biases. */
clf_status clf__load_enc_layer(clf_loader *L, const clf_transformer_params *c,
                               const clf_enc_names *n, int bias, clf_enc_layer *l);

/* ---------------------------------------------------------------- forward pieces */

/* A view of base's first a*b*c (or a*b with c = 0) elements as (a, b, c); never freed. */
clf_tensor clf__view(const clf_tensor *base, int64_t a, int64_t b, int64_t c);
/* Grows a workspace tensor to at least n elements (its contents are lost). */
clf_status clf__ensure(clf_context *ctx, clf_tensor **t, clf_dtype dt, int64_t n);
/* Fails (CLF_ERROR_SIZE_LIMIT) when `floats` floats cannot fit the device's global memory. */
clf_status clf__check_workspace(clf_context *ctx, const char *what, int64_t floats);
/* ids (B, N) I32 and valid_lens (B) I32 or NULL. */
clf_status clf__check_ids(clf_context *ctx, const clf_tensor *ids, const clf_tensor *vl);
/* (Re)allocates *t as (B, H, T, K) unless it already has that shape (recorded weights). */
clf_status clf__ensure_4d(clf_context *ctx, clf_tensor **t, int64_t B, int64_t H, int64_t T,
                          int64_t K);

/* Device bytes of a linear layer's weights and biases (every run of a split stack); of a
 * tensor, 0 for NULL. */
int64_t clf__lin_bytes(const clf_lin *l);
int64_t clf__tensor_bytes0(const clf_tensor *t);
/* y = act(x W^T + b). */
clf_status clf__lin(clf_context *ctx, const clf_tensor *x, const clf_lin *l, clf_activation act,
                    clf_tensor *y);
/* Every run of l takes a fused norm or sum (clf_lin_fuse) at rows rows of x. */
bool clf__lin_fuses(const clf_context *ctx, const clf_lin *l, int64_t rows);
/* clf__lin with f fused (act identity); only where clf__lin_fuses says so. */
clf_status clf__lin_fused(clf_context *ctx, const clf_tensor *x, const clf_lin *l, clf_tensor *y,
                          const clf_lin_fuse *f);
/* y (..., F) = act(x W_gate^T) (x W_up^T) for a gated l (clf__load_glu), with f (NULL, or a
 * fused norm where clf__lin_fuses says so) in the same launch. */
clf_status clf__lin_glu(clf_context *ctx, const clf_tensor *x, const clf_lin *l, clf_activation act,
                        clf_tensor *y, const clf_lin_fuse *f);
/* y = LayerNorm(x + r) with n's weight and bias. */
clf_status clf__add_norm(clf_context *ctx, const clf_tensor *x, const clf_tensor *r,
                         const clf_norm *n, float eps, clf_tensor *y);
/* y = down(act(up(x))); h (B, N, F) is the hidden workspace. */
clf_status clf__ffn(clf_context *ctx, const clf_tensor *x, const clf_ffn_w *f, clf_activation act,
                    clf_tensor *h, clf_tensor *y);

/* The workspace of one block forward: views for the current (B, N). */
typedef struct clf_block_ws {
    clf_tensor qkv; /* (B, N, 3d) fused Q | K | V */
    clf_tensor q;   /* (B, N, d) cross-attention queries */
    clf_tensor att; /* (B, N, d) attention output, heads concatenated */
    clf_tensor tmp; /* (B, N, d) a sublayer's output before AddNorm */
    clf_tensor y;   /* (B, N, d) the block's intermediate X */
    clf_tensor h;   /* (B, N, F) FFN hidden */
} clf_block_ws;

/* Multi-head self-attention over x (B, N, d): out (B, N, d) = W_o attention(x W_qkv^T), with the
 * mask in `mask`; weights (B, H, N, N) or NULL records the attention weights (naive path). */
clf_status clf__mha_self(clf_context *ctx, const clf_transformer_params *c, const clf_mha_w *m,
                         const clf_tensor *x, const clf_mask *mask, clf_tensor *weights,
                         clf_block_ws *ws, clf_tensor *out);

/* d2l's EncoderBlock and BERT's layer, post-LN, in place on x (B, N, d):
 *   Y = AddNorm(X, MHA(X, X, X, valid_lens)); X = AddNorm(Y, FFN(Y)) */
clf_status clf__post_ln_encoder_block(clf_context *ctx, const clf_transformer_params *c,
                                      const clf_enc_layer *l, clf_tensor *x,
                                      const clf_tensor *valid_lens, clf_tensor *weights,
                                      clf_block_ws *ws);

#endif /* CLFORMER_MODELS_LAYERS_H */
