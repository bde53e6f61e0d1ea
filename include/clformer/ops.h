/*
 * clformer/ops.h — the ops: row ops (softmax, LayerNorm, positional encoding, embedding,
 * elementwise), matrix products and linear layers, attention. Part of clformer's public API;
 * include <clformer/clformer.h>, which includes every part.
 */
#ifndef CLFORMER_OPS_H
#define CLFORMER_OPS_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- row ops
 * Memory-bound kernels of every Transformer layer. All take f32 tensors, work over the last
 * dimension, and allow out to be the input (in place). Shapes are checked before anything is
 * queued; a failing call writes nothing.
 */

/* Which keys a query may see, as d2l's masked_softmax(X, valid_lens) plus a causal mask.
 * For scores x of shape (B, ..., Nq, Nk) (a 2-D x is one matrix, B = 1):
 *   valid_lens: I32 tensor (B) — batch b sees keys 0 .. valid_lens[b]-1 — or (B, Nq) — query q
 *               of batch b sees keys 0 .. valid_lens[b, q]-1; NULL for none. Values are clamped
 *               to 0 .. Nk.
 *   causal:     1: query q (absolute position causal_offset + q) sees keys 0 .. causal_offset+q,
 *               for decoding with a KV cache where Nk = causal_offset + Nq.
 *   window:     > 0: a query sees only the last `window` keys of what the rules above let it see
 *               (a sliding window: with causal, query position p sees keys p - window + 1 .. p,
 *               as Mistral's sliding_window); 0: no window.
 * They may be combined. A query that sees no key gets all zeros (never NaN). */
typedef struct clf_mask {
    const clf_tensor *valid_lens;
    int causal;
    int64_t causal_offset;
    int64_t window;
} clf_mask;

/* out = softmax(x) over the last dimension, masked positions 0. mask may be NULL. */
CLF_API clf_status clf_softmax(clf_context *ctx, const clf_tensor *x, clf_tensor *out,
                               const clf_mask *mask);

/* out = LayerNorm(x + residual) over the last dimension n (biased variance, as PyTorch):
 * (z - mean) / sqrt(var + eps) * gamma + beta. residual may be NULL (plain LayerNorm); gamma
 * and beta are (n); eps > 0 (PyTorch's default is 1e-5). d2l's AddNorm(X, Y) at inference
 * is clf_layernorm(ctx, Y, X, gamma, beta, eps, out). */
CLF_API clf_status clf_layernorm(clf_context *ctx, const clf_tensor *x, const clf_tensor *residual,
                                 const clf_tensor *gamma, const clf_tensor *beta, float eps,
                                 clf_tensor *out);

/* RMSNorm as Llama, Qwen2 and Mistral use it, with the pre-norm block's residual add fused:
 *   z = x + residual (residual may be NULL: z = x);  out = z / sqrt(mean(z^2) + eps) * gamma
 * over the last dimension n, gamma (n), eps > 0. sum, if not NULL, receives z (the updated
 * residual stream). sum and out may be x or residual (in place); sum must not be out. */
CLF_API clf_status clf_rmsnorm(clf_context *ctx, const clf_tensor *x, const clf_tensor *residual,
                               const clf_tensor *gamma, float eps, clf_tensor *sum,
                               clf_tensor *out);

/* Rotary position embedding, in place on x (B, N, W) or (N, W): heads consecutive heads of
 * head_dim floats from column col of each row. The first rotary_dim dims of each head rotate in
 * pairs, pair i by the angle p * f_i (computed in fp32, as Hugging Face does), where p is the
 * row's position and f_i = theta^(-2i / rotary_dim), or inv_freq[i] when given (the rope
 * scalings, computed by the caller); the rest of each head is unchanged. A fused QKV projection
 * (B, N, (H + 2 KVH) Dh) rotates its query and key heads in one call: col 0, heads H + KVH. */
typedef enum {
    CLF_ROPE_NEOX = 0,       /* half split, pairs (i, i + rotary_dim / 2): Llama, Qwen2, Mistral */
    CLF_ROPE_INTERLEAVED = 1 /* pairs (2i, 2i + 1): GPT-J */
} clf_rope_layout;

typedef struct clf_rope_params {
    int64_t heads;      /* heads to rotate, >= 1 */
    int64_t head_dim;   /* Dh */
    int64_t rotary_dim; /* dims rotated per head, even, <= Dh; 0: Dh */
    int64_t col;        /* column of the first head */
    clf_rope_layout layout;
    float theta;                /* rope_theta, > 1 (Llama 2: 10000, Llama 3: 500000) */
    const clf_tensor *inv_freq; /* optional F32 (rotary_dim / 2): f_i, overriding theta */
    /* Positions: row n of each sequence is at pos_offset + n; or positions, I32: (B) each
     * sequence's offset (batched decoding of sequences of different lengths), or (B, N) each
     * row's position. Positions should be in 0 .. 2^24 (exact in float): pos_offset is checked,
     * a positions tensor's values are not read back (each only sets an angle). */
    int64_t pos_offset;
    const clf_tensor *positions;
} clf_rope_params;

/* heads heads of head_dim from column 0, all dims rotated, NeoX layout, theta 10000, offset 0. */
CLF_API clf_rope_params clf_rope_default_params(int64_t heads, int64_t head_dim);

CLF_API clf_status clf_rope(clf_context *ctx, clf_tensor *x, const clf_rope_params *params);

/* out = x + P[pos_offset + i] for x of shape (B, N, d) or (N, d), row i of each sequence, with
 * d2l's sinusoidal table P[p, 2j] = sin(p / 10000^(2j/d)), P[p, 2j+1] = cos(...), computed
 * in the kernel (any d, odd included). Positions must stay below 2^24 (exact in float). */
CLF_API clf_status clf_posenc_add(clf_context *ctx, const clf_tensor *x, int64_t pos_offset,
                                  clf_tensor *out);

/* out[..., :] = table[ids[...], :] * scale (+ P[pos_offset + i] if add_posenc), for I32 ids of
 * shape (B, N) or (N), table (V, d), out (B, N, d) or (N, d). d2l's encoder and decoder use
 * scale = sqrt(d) and add_posenc = 1. An id outside 0 .. V-1 is CLF_ERROR_OUT_OF_RANGE and
 * nothing is written (ids are read back to check them). */
CLF_API clf_status clf_embedding(clf_context *ctx, const clf_tensor *ids, const clf_tensor *table,
                                 float scale, int add_posenc, int64_t pos_offset, clf_tensor *out);

typedef enum {
    CLF_ACT_IDENTITY = 0,
    CLF_ACT_RELU = 1,
    CLF_ACT_GELU_ERF = 2,  /* 0.5 x (1 + erf(x / sqrt 2)), PyTorch's default GELU */
    CLF_ACT_GELU_TANH = 3, /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), GPT-2's gelu_new */
    CLF_ACT_SILU = 4       /* x / (1 + exp(-x)), Llama's FFN gate */
} clf_activation;

/* out = act(x + bias) with bias (n) broadcast over the rows of x (..., n); bias may be NULL. */
CLF_API clf_status clf_bias_act(clf_context *ctx, const clf_tensor *x, const clf_tensor *bias,
                                clf_activation act, clf_tensor *out);

/* The gated FFN's middle: out = act(gate) * up, elementwise (SwiGLU with CLF_ACT_SILU: Llama's
 * down(silu(gate(x)) * up(x)) is clf_linear, clf_gated_act, clf_linear). gate and up (..., F),
 * out (..., F); or up NULL and gate (..., 2F) holding gate then up in each row (one linear with
 * the two weights stacked). out may be gate or up when all are (..., F). */
CLF_API clf_status clf_gated_act(clf_context *ctx, const clf_tensor *gate, const clf_tensor *up,
                                 clf_activation act, clf_tensor *out);

/* out = a + b, all the same shape (the residual add). */
CLF_API clf_status clf_add(clf_context *ctx, const clf_tensor *a, const clf_tensor *b,
                           clf_tensor *out);

/* ---------------------------------------------------------------- matrix products
 * Row-major single precision GEMMs on the context's queue. On CPUs (tunable linear.PACK, 1 there)
 * through clformer's packed kernels (op(b) packed into the context's scratch per call), elsewhere
 * through CLBlast, whose errors map to CLF_ERROR_CLBLAST (OpenCL errors it reports pass through)
 * with a detail message. */

typedef enum { CLF_NO_TRANS = 0, CLF_TRANS = 1 } clf_transpose;

/* c = alpha * op(a) op(b) + beta * c. 2-D: op(a) is (M, K) — a is (M, K), or (K, M) with
 * CLF_TRANS — op(b) is (K, N), c is (M, N). 3-D: the same for each of the leading batch dim,
 * which must agree (one strided-batched GEMM). beta = 0 ignores c's contents. */
CLF_API clf_status clf_matmul(clf_context *ctx, clf_transpose ta, clf_transpose tb, float alpha,
                              const clf_tensor *a, const clf_tensor *b, float beta, clf_tensor *c);

/* The raw form, for products on slices of tensors (e.g. per-head blocks of a fused QKV
 * projection): for i in 0..batch-1, C_i = alpha op(A_i) op(B_i) + beta C_i, where A_i starts at
 * element a_offset + i * a_stride of a with row stride lda (row-major), likewise B_i and C_i.
 * Every matrix must lie inside its tensor; sizes are in elements. */
CLF_API clf_status clf_gemm_strided_batched(clf_context *ctx, clf_transpose ta, clf_transpose tb,
                                            int64_t m, int64_t n, int64_t k, float alpha,
                                            const clf_tensor *a, int64_t a_offset, int64_t lda,
                                            int64_t a_stride, const clf_tensor *b, int64_t b_offset,
                                            int64_t ldb, int64_t b_stride, float beta,
                                            clf_tensor *c, int64_t c_offset, int64_t ldc,
                                            int64_t c_stride, int64_t batch);

/* y = act(x W^T + bias): PyTorch's nn.Linear layout. x (..., in), w (out, in), bias (out) or
 * NULL, y (..., out) with the same leading dims. The bias and activation run as one epilogue
 * kernel after the GEMM. y must not be x. */
CLF_API clf_status clf_linear(clf_context *ctx, const clf_tensor *x, const clf_tensor *w,
                              const clf_tensor *bias, clf_activation act, clf_tensor *y);

/* Weights prepared once for many clf_linear_apply calls, in the layout the device's fastest path
 * reads: where the tunable linear.PACK is on (CPU devices) w is packed into panels of
 * linear.PK_NV x linear.VW output columns for the register-blocked linear_packed kernel, the
 * path clformer's own models take; elsewhere a copy of w, used as clf_linear uses it. w is
 * (out, in), F32 or F16 (storage; the math is fp32), and may be freed after the call. Packed
 * weights are tied to the panel tunables in force when prepared: clf_linear_apply refuses them
 * once linear.PK_NV or linear.VW change. */
typedef struct clf_linear_weights clf_linear_weights;
CLF_API clf_status clf_linear_prepare(clf_context *ctx, const clf_tensor *w,
                                      clf_linear_weights **out);
/* y = act(x W^T + bias) with prepared weights: clf_linear's shapes and rules. */
CLF_API clf_status clf_linear_apply(clf_context *ctx, const clf_tensor *x,
                                    const clf_linear_weights *w, const clf_tensor *bias,
                                    clf_activation act, clf_tensor *y);
/* (out, in) of prepared weights; 1 when packed, 0 when kept as w. Any pointer may be NULL. */
CLF_API void clf_linear_weights_info(const clf_linear_weights *w, int64_t *out, int64_t *in,
                                     int *packed);
/* Frees prepared weights; NULL is a no-op. */
CLF_API void clf_linear_weights_free(clf_linear_weights *w);

/* Where the GEMM parameters in force came from: "file:<path>", "builtin:<type>", or "clblast"
 * (CLBlast's own defaults). Owned by the context: valid until its next tune or its free. */
CLF_API const char *clf_gemm_tuning_source(const clf_context *ctx);

typedef void (*clf_progress_fn)(void *user, const char *message);

typedef struct clf_tune_params {
    double budget_s;          /* wall-clock budget for the search (compiles included) */
    uint64_t seed;            /* seeds the GEMM search and both tuners' random inputs */
    int save;                 /* 1: write the result to the tuning file of this device */
    clf_progress_fn progress; /* optional progress messages */
    void *user;
} clf_tune_params;

/* A 30 s budget, seed 1, save 1, no progress callback. */
CLF_API clf_tune_params clf_tune_default_params(void);

typedef struct clf_tune_result {
    double before_gflops; /* SGEMM 1024^3 with the parameters in force before */
    double after_gflops;  /* ... with the best parameters found */
    double small_before_gflops, small_after_gflops; /* 128 x 512 x 512 */
    int candidates_tried;
    double seconds;
    char file[512]; /* where it was saved ("" if not) */
} clf_tune_result;

/* Searches CLBlast's Xgemm and XgemmDirect parameters and the direct/indirect switch point for
 * this device by random search and timing (each candidate is checked against a reference),
 * within the budget (a candidate's compile can overrun it: PoCL takes 5-20 s each); applies the
 * best and optionally saves it under the cache folder (<cache>/gemm-tuning/<device hash>.json),
 * where later contexts find it. A part whose search found nothing better than the saved or
 * built-in values keeps them; where CLBlast's own database was in force and nothing beat it,
 * nothing is saved for that part, but the last candidate stays in force in this process
 * (CLBlast has no way to undo an override). */
CLF_API clf_status clf_gemm_tune(clf_context *ctx, const clf_tune_params *params,
                                 clf_tune_result *result);

/* Attention tiles chosen for one head size by clf_attention_tune. */
typedef struct clf_attention_tune_entry {
    int64_t head_dim;
    int64_t qb, bq; /* attention.QB (queries per work-item) and attention.BQ (per group) */
    double before_ms, after_ms; /* B 1, H 8, N 2048, no mask: tiles in force before / chosen */
} clf_attention_tune_entry;

/* Most head sizes one attention tune (and one tuning file) holds. */
#define CLF_ATTENTION_TUNE_MAX 16

typedef struct clf_attention_tune_result {
    int count; /* head sizes tuned (dims[0 .. count - 1]) */
    clf_attention_tune_entry dims[CLF_ATTENTION_TUNE_MAX];
    int candidates_tried;
    double seconds;
    char file[512]; /* where it was saved ("" if not) */
} clf_attention_tune_result;

/* Tunes the tiled attention kernel's tiles (attention.QB, attention.BQ) for each head size in
 * head_dims[0 .. n_head_dims - 1] (NULL: 32, 64, 128; at most 16, each in 1..256): times
 * candidates on B 1, H 8, N 2048 by coordinate descent from the pair in force (QB in 1..16, then
 * BQ: 1..16 on CPUs, 32..512 on GPUs), each checked against the output of the pair in force,
 * sharing the budget between head sizes (at least one candidate each; a compile can overrun the
 * budget). A winner other than the pair in force is timed again against it, interleaved, and
 * must still be 3% faster. The best pairs
 * are in force at once for calls with those head sizes and, with params->save, kept in
 * <cache>/attention-tuning/<device hash>.json, which contexts created later load. Explicitly set
 * attention.QB or attention.BQ tunables take precedence over tuned pairs. params->seed is unused
 * (the search is deterministic). */
CLF_API clf_status clf_attention_tune(clf_context *ctx, const clf_tune_params *params,
                                      const int64_t *head_dims, int n_head_dims,
                                      clf_attention_tune_result *result);

/* The tiles (attention.QB, attention.BQ) the tiled path uses for head size head_dim; *tuned
 * (may be NULL) says whether they come from tuning (clf_attention_tune or a tuning file). */
CLF_API clf_status clf_attention_tiles(const clf_context *ctx, int64_t head_dim, int64_t *qb,
                                       int64_t *bq, int *tuned);

/* Where the attention tiles in force came from: "file:<path>", "tuned" (this context, not
 * saved) or "defaults" (the tunables' per-device-type defaults). Owned by the context: valid
 * until its next tune or its free. */
CLF_API const char *clf_attention_tuning_source(const clf_context *ctx);

/* ---------------------------------------------------------------- attention
 * Scaled dot-product attention for all heads in one call, d2l's rearrange
 * 'b n (h d) -> b h n d' folded into indexing:
 *   q (B, Nq, Wq), k (B, Nk_max, Wk), v (B, Nk_max, Wv), out (B, Nq, H * Dh);
 * head h of a row of q is the Dh floats from column q_col + h * Dh (likewise k, v), so q, k and
 * v may be one fused QKV projection (B, N, 3 H Dh) with q_col 0, k_col H Dh, v_col 2 H Dh, and
 * k, v a KV cache of which the first nk rows are in use. out must not overlap q, k or v.
 * Grouped-query (GQA) and multi-query (MQA, kv_heads 1) attention: k and v hold kv_heads heads
 * of Dh (from k_col, v_col), and query head h reads K/V head h / (H / kv_heads), as Llama,
 * Mistral and Qwen2 do.
 * Masks as clf_mask (valid lengths per batch or per query, causal with an offset for decoding
 * with a cache); a query that sees no key gets zeros.
 * The tiled path (default) never forms the Nq x Nk matrix: memory O(N * Dh); with few queries and
 * many keys it splits the keys across work-groups (flash-decoding). The naive path (naive = 1)
 * computes scores by GEMM, the masked softmax and a second GEMM: the baseline, and the way to get
 * the attention weights; it refuses (CLF_ERROR_SIZE_LIMIT) when B x H x Nq x Nk floats exceed
 * the device's max allocation. */
typedef struct clf_attention_params {
    int64_t heads;               /* H >= 1 */
    int64_t kv_heads;            /* heads of k and v, dividing H; 0: H */
    int64_t head_dim;            /* Dh, 1 .. 256 */
    int64_t q_col, k_col, v_col; /* column of head 0 within a row of q, k, v */
    int64_t nk;                  /* keys in use; 0: all of k's dim 1 */
    float scale;                 /* 0: 1 / sqrt(Dh) */
    clf_mask mask;               /* no mask: all zeros */
    int naive;                   /* 1: GEMM + masked softmax + GEMM */
    clf_tensor *weights;         /* naive only, optional: (B, H, Nq, Nk) attention weights */
} clf_attention_params;

/* A description with H heads of Dh (as many K/V heads), no mask, columns 0, scale 1/sqrt(Dh),
 * tiled. */
CLF_API clf_attention_params clf_attention_default_params(int64_t heads, int64_t head_dim);

CLF_API clf_status clf_attention(clf_context *ctx, const clf_tensor *q, const clf_tensor *k,
                                 const clf_tensor *v, clf_tensor *out,
                                 const clf_attention_params *desc);

/* How the next token is picked, as Hugging Face's generate: repetition penalty (over the
 * sequence's prompt and generated tokens), then temperature, top-k, top-p, then a draw. */
typedef struct clf_sampling_params {
    float temperature;        /* 0: greedy (the first largest penalized logit) */
    int64_t top_k;            /* keep the k most likely (0: all) */
    float top_p;              /* keep the smallest set with probability >= top_p (1: all) */
    float repetition_penalty; /* 1: off; > 1 discourages repeats (CTRL's rule) */
    uint64_t seed;            /* the same seed and logits give the same tokens on any device */
} clf_sampling_params;

/* Greedy: temperature 0, top_k 0, top_p 1, repetition_penalty 1, seed 0. */
CLF_API clf_sampling_params clf_sampling_default_params(void);

/* Picks one token per row of logits (B, V) on the device with params (see clf_sampling_params),
 * drawing with u (B) F32 uniform numbers in [0, 1) (the caller's RNG); out (B) I32 receives the
 * ids. seen (B, V) I32, or NULL, marks the tokens each row has seen (prompt and generated) for
 * the repetition penalty, and gets the chosen token marked. Top-k and top-p cut at thresholds
 * found by bisection (ties at a cut are all kept); the draw walks the kept tokens in index order.
 * A device that runs only so many loop iterations per work-item (llvmpipe) refuses a vocabulary
 * too large for it with CLF_ERROR_UNSUPPORTED. */
CLF_API clf_status clf_sample(clf_context *ctx, const clf_tensor *logits,
                              const clf_sampling_params *params, const clf_tensor *u,
                              clf_tensor *seen, clf_tensor *out);

/* out[...] = index of the largest element of x[..., :] (the first one on ties), for f32 x
 * (..., n) and I32 out with x's leading dims (a 1-D x gives a 1-element out). */
CLF_API clf_status clf_argmax(clf_context *ctx, const clf_tensor *x, clf_tensor *out);

#ifdef __cplusplus
}
#endif

#endif /* CLFORMER_OPS_H */
