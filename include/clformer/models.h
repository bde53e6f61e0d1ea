/*
 * clformer/models.h — Transformer models (d2l's encoder-decoder, BERT encoders) and sentence
 * embeddings. Part of clformer's public API; include <clformer/clformer.h>, which includes every
 * part.
 */
#ifndef CLFORMER_MODELS_H
#define CLFORMER_MODELS_H

#include "io.h"
#include "ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- Transformer models
 * d2l's Transformer and BERT-style encoders built from the ops above.
 *
 * Encoder (post-LN, as d2l's EncoderBlock and BERT):
 *   X = embed(ids)
 *   per block: Y = AddNorm(X, MHA(X, X, X, valid_lens)); X = AddNorm(Y, FFN(Y))
 * where MHA projects Q, K, V with one fused GEMM, runs clf_attention over all heads and projects
 * back with W_o; FFN = dense2(act(dense1(.))); AddNorm(X, Y) = LayerNorm(X + Y).
 * Decoder (d2l's DecoderBlock): causal self-attention over a KV cache of projected keys and
 * values, AddNorm, cross-attention over the encoder outputs (projected to K, V once per
 * sequence) with their valid lengths, AddNorm, FFN, AddNorm, then a dense layer to the vocabulary.
 *
 * Weight names (safetensors, PyTorch module names; <p> is the prefix given to the loader):
 *   CLF_ARCH_D2L encoder, d2l's TransformerEncoder:
 *     <p>embedding.weight (V, d)
 *     <p>blks.block<i>.attention.W_{q,k,v,o}.weight (d, d)  [.bias (d) if use_bias]
 *     <p>blks.block<i>.addnorm{1,2}.ln.{weight,bias} (d)
 *     <p>blks.block<i>.ffn.dense1.{weight (F, d), bias (F)}, ffn.dense2.{weight (d, F), bias (d)}
 *   CLF_ARCH_D2L decoder, d2l's TransformerDecoder: embedding.weight,
 *     blks.block<i>.attention{1,2}.W_{q,k,v,o}.weight [.bias if use_bias],
 *     blks.block<i>.addnorm{1,2,3}.ln.{weight,bias}, blks.block<i>.ffn.dense{1,2}.*,
 *     dense.{weight (V, d), bias (V)}
 *   CLF_ARCH_BERT encoder (Hugging Face BertModel; <p> is "" or "bert."):
 *     embeddings.{word_embeddings,position_embeddings,token_type_embeddings}.weight,
 *     embeddings.LayerNorm.{weight,bias},
 *     encoder.layer.<i>.attention.self.{query,key,value}.{weight,bias},
 *     encoder.layer.<i>.attention.output.dense.{weight,bias},
 *     encoder.layer.<i>.attention.output.LayerNorm.{weight,bias},
 *     encoder.layer.<i>.intermediate.dense.{weight,bias},
 *     encoder.layer.<i>.output.dense.{weight,bias}, encoder.layer.<i>.output.LayerNorm.*
 */
typedef enum {
    CLF_ARCH_D2L = 0, /* embedding x sqrt(d) + sinusoidal positions; d2l's names */
    CLF_ARCH_BERT = 1 /* word + learned position + token type 0 embeddings, LayerNorm */
} clf_arch;

/* How a folder loader keeps a model on the device (clf_lm_load_with,
 * clf_sentence_model_load_with). F16 is storage only (vload_half, core OpenCL: every device):
 * the math stays fp32. */
typedef struct clf_load_params {
    /* The linear layers' weights: CLF_F32 (default), CLF_F16 or CLF_BF16 (rounded to nearest
     * even at load; a weight past F16's range fails the load), CLF_Q8_0, CLF_Q4_0, CLF_Q4_K or
     * CLF_Q6_K (quantized at load as clf_quantize does: ggml's blocks of 32 or 256, so every
     * weight's rows must be whole blocks; one that is not fails the load, naming it). Embeddings
     * and norms stay F32. */
    clf_dtype weight_dtype;
    /* The KV caches of clf_lm states: CLF_F32 (default) or CLF_F16 (half the bytes a decode step
     * reads). */
    clf_dtype cache_dtype;
} clf_load_params;

/* F32 weights and caches. */
CLF_API clf_load_params clf_load_default_params(void);

typedef struct clf_transformer_params {
    clf_arch arch;
    int64_t vocab_size;      /* rows of the embedding (and the decoder's output size) */
    int64_t num_hiddens;     /* d; norm_shape is (d) */
    int64_t ffn_num_hiddens; /* F */
    int64_t num_heads;       /* H; d must be a multiple of H, d / H <= 256 */
    int64_t num_layers;
    int use_bias;           /* biases of the attention projections (d2l's use_bias) */
    clf_activation ffn_act; /* RELU in d2l, GELU_ERF in BERT */
    float norm_eps;         /* LayerNorm eps: 1e-5 in d2l, 1e-12 in BERT */
    int64_t max_len;        /* longest sequence (positions); 0: 1000 (d2l's table) */
    /* The linear layers' weights on the device: CLF_F32 (0, the default), or F16, BF16, Q8_0,
     * Q4_0, Q4_K, Q6_K as clf_load_params.weight_dtype. The math stays fp32; embeddings, norms and
     * biases stay F32. */
    clf_dtype weight_dtype;
} clf_transformer_params;

/* d2l's defaults for given sizes: D2L, ReLU, eps 1e-5, no attention bias, max_len 1000. */
CLF_API clf_transformer_params clf_transformer_default_params(int64_t vocab_size,
                                                              int64_t num_hiddens,
                                                              int64_t ffn_num_hiddens,
                                                              int64_t num_heads,
                                                              int64_t num_layers);

/* Weights and runs are apart: a clf_encoder / clf_decoder holds the loaded weights, which no call
 * changes; a clf_encoder_state / clf_decoder_state holds what one run changes (activations, KV
 * caches, recorded attention weights), so several states run over one copy of the weights, e.g.
 * two batches decoded at once. Each encoder and decoder also owns one state, which the calls
 * without "_state" use (clf_encoder_forward, clf_decoder_step, ...). A state borrows its encoder
 * or decoder: free it first. Calls on one context run one at a time (a context is not
 * thread-safe), so states of one context are interleaved, not concurrent. */
typedef struct clf_encoder clf_encoder;
typedef struct clf_decoder clf_decoder;
typedef struct clf_encoder_state clf_encoder_state;
typedef struct clf_decoder_state clf_decoder_state;

/* Loads an encoder's weights (checked: every tensor present with its exact shape). */
CLF_API clf_status clf_encoder_load(clf_context *ctx, const clf_safetensors *st, const char *prefix,
                                    const clf_transformer_params *cfg, clf_encoder **out);
CLF_API void clf_encoder_free(clf_encoder *enc);
/* Allocates the activation workspace for up to `batch` sequences of `len` tokens now (forward
 * otherwise grows it on demand; it never shrinks). len must not exceed cfg.max_len. */
CLF_API clf_status clf_encoder_reserve(clf_encoder *enc, int64_t batch, int64_t len);
/* out (B, N, d) = encoder(ids (B, N) I32); valid_lens (B) I32 or NULL masks the keys of each
 * sequence beyond its length (d2l's valid_lens). Rows past a sequence's length are
 * computed too (they attend to the valid keys), as in d2l. */
CLF_API clf_status clf_encoder_forward(clf_encoder *enc, const clf_tensor *ids,
                                       const clf_tensor *valid_lens, clf_tensor *out);
/* 1: later forwards run attention through the naive path and keep each layer's weights
 * (d2l's attention_weights), readable with clf_encoder_attention_weights. */
CLF_API clf_status clf_encoder_record_weights(clf_encoder *enc, int on);
/* The (B, H, N, N) attention weights of a layer from the last forward; NULL if not recorded.
 * Owned by the encoder's own state: valid until its next forward or clf_encoder_free. */
CLF_API const clf_tensor *clf_encoder_attention_weights(const clf_encoder *enc, int64_t layer);
/* GEMMs and other kernels queued by one forward of the last shape, per layer (for reports). */
CLF_API int64_t clf_encoder_launches_per_layer(const clf_encoder *enc);

/* A new state over enc's weights (its workspace grows on first use). The same calls as above, on
 * that state. */
CLF_API clf_status clf_encoder_state_create(const clf_encoder *enc, clf_encoder_state **out);
CLF_API void clf_encoder_state_free(clf_encoder_state *s);
CLF_API clf_status clf_encoder_state_reserve(clf_encoder_state *s, int64_t batch, int64_t len);
CLF_API clf_status clf_encoder_state_forward(clf_encoder_state *s, const clf_tensor *ids,
                                             const clf_tensor *valid_lens, clf_tensor *out);
CLF_API clf_status clf_encoder_state_record_weights(clf_encoder_state *s, int on);
/* Owned by the state: valid until its next forward or its free. */
CLF_API const clf_tensor *clf_encoder_state_attention_weights(const clf_encoder_state *s,
                                                              int64_t layer);

CLF_API clf_status clf_decoder_load(clf_context *ctx, const clf_safetensors *st, const char *prefix,
                                    const clf_transformer_params *cfg, clf_decoder **out);
CLF_API void clf_decoder_free(clf_decoder *dec);
/* d2l's init_state: projects the encoder outputs (B, Ns, d) to each layer's cross-attention
 * K and V once, keeps a copy of enc_valid_lens (B) I32 (or NULL), and allocates the KV caches
 * and workspace for `max_len` decoded tokens (<= cfg.max_len). The decoded length becomes 0. */
CLF_API clf_status clf_decoder_init_state(clf_decoder *dec, const clf_tensor *enc_outputs,
                                          const clf_tensor *enc_valid_lens, int64_t max_len);
/* Decodes T new tokens ids (B, T) I32 at positions length .. length+T-1, appending their
 * projected keys and values to the caches; logits (B, T, V). T = 1 is incremental decoding;
 * T = N from length 0 is d2l's training-mode decoding (causal mask). Fails without
 * writing anything if length + T > max_len. */
CLF_API clf_status clf_decoder_step(clf_decoder *dec, const clf_tensor *ids, clf_tensor *logits);
/* Forgets the decoded tokens (keeps the encoder state). */
CLF_API clf_status clf_decoder_reset(clf_decoder *dec);
CLF_API int64_t clf_decoder_length(const clf_decoder *dec);
/* 1: later steps use the naive attention path and keep each layer's weights:
 * which 0 = self-attention (B, H, T, length), 1 = cross-attention (B, H, T, Ns). */
CLF_API clf_status clf_decoder_record_weights(clf_decoder *dec, int on);
/* Owned by the decoder's own state: valid until its next step or clf_decoder_free. */
CLF_API const clf_tensor *clf_decoder_attention_weights(const clf_decoder *dec, int64_t layer,
                                                        int which);

/* A new state over dec's weights, to be initialized with clf_decoder_state_init. The same calls
 * as above, on that state: each state decodes its own batch with its own caches. */
CLF_API clf_status clf_decoder_state_create(const clf_decoder *dec, clf_decoder_state **out);
CLF_API void clf_decoder_state_free(clf_decoder_state *s);
CLF_API clf_status clf_decoder_state_init(clf_decoder_state *s, const clf_tensor *enc_outputs,
                                          const clf_tensor *enc_valid_lens, int64_t max_len);
CLF_API clf_status clf_decoder_state_step(clf_decoder_state *s, const clf_tensor *ids,
                                          clf_tensor *logits);
CLF_API clf_status clf_decoder_state_reset(clf_decoder_state *s);
CLF_API int64_t clf_decoder_state_length(const clf_decoder_state *s);
CLF_API clf_status clf_decoder_state_record_weights(clf_decoder_state *s, int on);
/* Owned by the state: valid until its next step or its free. */
CLF_API const clf_tensor *clf_decoder_state_attention_weights(const clf_decoder_state *s,
                                                              int64_t layer, int which);

/* Called after each greedy step with the step number; may read the decoder's weights. */
typedef void (*clf_step_fn)(void *user, const clf_decoder *dec, int64_t step);

typedef struct clf_greedy_params {
    int32_t bos, eos;    /* the first input token; the token that ends a sequence */
    int64_t max_steps;   /* at most this many tokens per sequence */
    clf_step_fn on_step; /* optional */
    void *user;          /* passed to on_step */
} clf_greedy_params;

/* bos, eos and max_steps as given, no callback. */
CLF_API clf_greedy_params clf_greedy_default_params(int32_t bos, int32_t eos, int64_t max_steps);

/* d2l's predict_seq2seq for a batch: encodes src (B, Ns) I32 with src_valid_lens (B) I32
 * (or NULL), then feeds bos and each step's argmax until every sequence has produced eos or
 * max_steps tokens. tokens (B, max_steps) host receives each sequence's tokens (eos excluded,
 * the rest -1) and lengths (B) their counts. */
CLF_API clf_status clf_greedy_decode(clf_encoder *enc, clf_decoder *dec, const clf_tensor *src,
                                     const clf_tensor *src_valid_lens,
                                     const clf_greedy_params *params, int32_t *tokens,
                                     int64_t *lengths);

/* ---------------------------------------------------------------- causal language models
 * Decoder-only Transformers from a Hugging Face model folder: config.json and model.safetensors,
 * or the shards that model.safetensors.index.json lists. F16 and BF16 weights are converted to
 * f32 on load. The families, by config.json's "architectures":
 *   GPT2LMHeadModel: learned positions, pre-LN blocks, GELU (tanh) FFN, Conv1D weights (stored
 *     transposed), head tied to the token embeddings;
 *   LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM: pre-norm RMSNorm blocks, rotary
 *     positions (rope_theta; "llama3", "linear" and "default" rope_scaling), grouped-query
 *     attention (num_key_value_heads), SwiGLU FFN, QKV biases where the config has them (Qwen2:
 *     always; Llama: attention_bias), tied or separate head, Mistral's sliding_window (each
 *     token attends to the last sliding_window positions; the cache keeps every position).
 * A folder of another architecture, or with a field clformer does not support, is refused with a
 * message naming it.
 *
 * Weights and runs are apart, as for the encoders: a clf_lm holds the weights, a clf_lm_state
 * holds the KV caches of a batch of sequences, each with its own length, so one model serves
 * several batches (states) and each batch several sequences of different lengths. */
typedef struct clf_lm clf_lm;
typedef struct clf_lm_state clf_lm_state;

#define CLF_LM_MAX_EOS 8

typedef struct clf_lm_info {
    char arch[64]; /* "LlamaForCausalLM", ... */
    int64_t vocab_size, hidden_size, ffn_size, layers, heads, kv_heads, head_dim;
    int64_t max_positions;       /* max_position_embeddings (n_positions for GPT-2) */
    int32_t bos;                 /* bos_token_id, or -1 */
    int32_t eos[CLF_LM_MAX_EOS]; /* eos_token_id(s) */
    int n_eos;
    int64_t parameters; /* weights loaded (tied ones once) */
    /* How the model is kept (clf_load_params; clf_lm_create_random reads them from its sizes). */
    clf_dtype weight_dtype, cache_dtype;
} clf_lm_info;

/* Loads the model in folder dir (config.json, model.safetensors or its shards), or from a GGUF
 * file when dir is a file (llama, qwen2 or gpt2; its weights keep their stored types, F32 ones
 * converted as clf_load_params.weight_dtype says; info.weight_dtype is then the first layer's
 * Q|K|V type, as types may differ by tensor). */
CLF_API clf_status clf_lm_load(clf_context *ctx, const char *dir, clf_lm **out);
/* The same with how the model is kept on the device (clf_load_params: F16 weights, F16 KV
 * caches); NULL params: the defaults (F32). */
CLF_API clf_status clf_lm_load_with(clf_context *ctx, const char *dir,
                                    const clf_load_params *params, clf_lm **out);
/* The same model split by layers over n contexts (a pipeline: n may name devices of different
 * OpenCL implementations, or one device twice). Stage i, on ctxs[i], holds a contiguous range of
 * the layers, their weights and, in a state, their KV caches; the first stage also holds the token
 * embedding, the last the final norm and the head (a tied head is loaded again there). split
 * (n values > 0, or NULL: each device's global memory) gives the stages' shares of the layers,
 * rounded to whole layers, at least one each. Refused before any weight moves: n over the
 * layers, a share that is not a positive finite number, a device whose global memory cannot hold
 * its stage's weights. A step carries the residual stream (B, T, d) from stage to stage through
 * the host. Every call on the model or its states leaves its error message on ctxs[0], naming
 * the stage where it failed on another. n = 1 is clf_lm_load_with. */
CLF_API clf_status clf_lm_load_split(clf_context *const *ctxs, int n, const double *split,
                                     const char *dir, const clf_load_params *params, clf_lm **out);
/* The sizes and special ids of the model at dir (a folder's config.json or a GGUF file's
 * metadata), nothing loaded: a driver's plan of stages. */
CLF_API clf_status clf_lm_read_info(clf_context *ctx, const char *dir, clf_lm_info *out);
/* One pipeline stage of the model at dir on ctx, for a driver that carries the residual stream
 * between stages itself (clformer-generate under MPI: one stage per rank): layers first .. end - 1
 * (0 <= first < end <= layers), with the token embedding when first is 0 and the final norm and
 * head when end is the model's layer count. Only those tensors are read from the files (they are
 * memory-mapped: the rest is never touched). clf_lm_get_info describes the whole model; its
 * states step with clf_lm_state_step_stage (clf_lm_state_step too when the stage is the whole
 * model). */
CLF_API clf_status clf_lm_load_stage(clf_context *ctx, const char *dir,
                                     const clf_load_params *params, int64_t first, int64_t end,
                                     clf_lm **out);
/* Tensor parallelism: the shards of a group each hold a part of every layer and run every step
 * together. The library moves nothing between them: after each attention output projection and
 * each FFN down projection a shard hands its partial sums (count floats: the (B, T, d) stream) to
 * allreduce, which must leave in place their sum over the group's shards (MPI_Allreduce with
 * MPI_SUM, or threads sharing memory) and return 0, or nonzero when it failed (the step fails). */
typedef int (*clf_allreduce_fn)(void *user, float *data, int64_t count);
typedef struct clf_shard {
    int rank, size;             /* this shard: 0 <= rank < size */
    clf_allreduce_fn allreduce; /* required when size > 1 */
    void *user;
} clf_shard;
/* Shard rank of size of the model at path on ctx. Query heads, K/V heads and FFN columns are cut
 * into size equal parts: the shard keeps part rank of W_q, W_k, W_v, gate and up (rows, with
 * their biases), of W_o and down (columns; their biases on shard 0 alone) and its part of the KV
 * cache; the head's rows (the vocabulary, V r / size .. V (r + 1) / size - 1) are cut too, the
 * logits summed by a third all-reduce of (rows, V) floats; the norms and the token embedding
 * (GPT-2: and positions) are whole on every shard. Every shard steps with
 * clf_lm_state_step_stage (or clf_lm_state_step) on the same ids and counts: each gives the
 * logits when asked, or takes logits NULL (it joins as for (B, V) logits: all shards must ask
 * for the same shape or NULL). Refused (CLF_ERROR_INVALID_ARGUMENT, naming the count) when size
 * does not divide the heads, the K/V heads or the FFN width, or a quantized weight's columns do
 * not cut into whole blocks. Each weight matrix is read from the file, cut on the host and only
 * the shard's part stays on the device. clf_lm_get_info describes the whole model but for
 * parameters (the shard's); clf_lm_stages gives the shard's weight bytes. */
CLF_API clf_status clf_lm_load_shard(clf_context *ctx, const char *path,
                                     const clf_load_params *params, const clf_shard *shard,
                                     clf_lm **out);
/* One stage of a model split by layers (clf_lm_load_split, clf_sentence_model_load_split; a
 * model on one context has one). */
typedef struct clf_stage {
    clf_context *context;
    int64_t first_layer, layers; /* its layers: first_layer .. first_layer + layers - 1 */
    int embedding, head;         /* it holds the token embedding / the final norm and head */
    int64_t weight_bytes;        /* the device memory of its weights */
} clf_stage;
/* Writes up to cap stages to out and their number to *count (cap 0, out NULL: count only). */
CLF_API clf_status clf_lm_stages(const clf_lm *m, clf_stage *out, int64_t cap, int64_t *count);
/* A LlamaForCausalLM of the sizes in `sizes` (vocab_size, hidden_size, ffn_size, layers, heads,
 * kv_heads, head_dim (0: hidden_size / heads), max_positions; the rest ignored) with random
 * weights drawn from seed (uniform, scaled by 1 / sqrt(fan-in); norms 1; rope_theta 500000,
 * untied head): for benchmarks and tests, no file involved. */
CLF_API clf_status clf_lm_create_random(clf_context *ctx, const clf_lm_info *sizes, uint64_t seed,
                                        clf_lm **out);
CLF_API void clf_lm_free(clf_lm *m);
CLF_API clf_status clf_lm_get_info(const clf_lm *m, clf_lm_info *out);

/* A weight matrix as the model keeps it on the device (a GGUF file's types may differ by tensor:
 * Q4_K_M keeps some in Q6_K). Names as llama.cpp's: token_embd, position_embd (GPT-2),
 * blk.N.attn_qkv (Q | K | V stacked), blk.N.attn_output, blk.N.ffn_up (gate | up stacked in
 * the Llama family), blk.N.ffn_down, output (the head; a tied one is the embedding again). A
 * stack whose tensors the file stores in different types is kept as one matrix per run of a
 * type, each listed under the names it joins: blk.N.attn_q+attn_k and blk.N.attn_v. */
typedef struct clf_lm_weight {
    char name[32];
    clf_dtype dtype;
    size_t bytes; /* on the device (packed panels on CPUs: the same bytes, whole panels) */
} clf_lm_weight;
/* Writes up to cap entries to out and their total number to *count (cap 0, out NULL: count
 * only). Norms and biases (F32) are not listed; nor is a tied head ("output") that is the token
 * table itself (where the linear kernels read the table as it is stored: GPUs, and quantized
 * tables everywhere), as it takes no memory of its own. */
CLF_API clf_status clf_lm_weights(const clf_lm *m, clf_lm_weight *out, int64_t cap, int64_t *count);

/* A state for `batch` sequences of up to max_len tokens each (<= max_positions), all empty. Its
 * caches are allocated now; the workspace grows with the tokens of a step. */
CLF_API clf_status clf_lm_state_create(const clf_lm *m, int64_t batch, int64_t max_len,
                                       clf_lm_state **out);
CLF_API void clf_lm_state_free(clf_lm_state *s);
/* Empties every sequence. */
CLF_API clf_status clf_lm_state_reset(clf_lm_state *s);
/* Tokens in sequence b's cache. */
CLF_API int64_t clf_lm_state_length(const clf_lm_state *s, int64_t b);
/* Appends tokens: ids (B, T) I32 on the device; sequence b takes its first n_new[b] ids (n_new
 * NULL: all T; 0: none, the sequence is unchanged), at positions length(b) ... The prompt's
 * prefill is one step with T = the longest prompt, decoding is steps of T = 1.
 * logits: (B, T, V) for every position (positions past n_new[b] hold values computed from
 * padding), or (B, V) for each sequence's last new token (a sequence with n_new 0 gets values
 * computed from padding). Fails, changing nothing, if a sequence would pass max_len. */
CLF_API clf_status clf_lm_state_step(clf_lm_state *s, const clf_tensor *ids, const int64_t *n_new,
                                     clf_tensor *logits);
/* clf_lm_state_step with the ids (B, T) on the host, checked against the vocabulary there: they
 * go to the device with the step's other host data, without the read-back that checks a device
 * tensor of ids (a round trip per step; clf_lm_generate steps this way). */
CLF_API clf_status clf_lm_state_step_ids(clf_lm_state *s, const int32_t *ids, int64_t T,
                                         const int64_t *n_new, clf_tensor *logits);
/* A step of a stage model's state (clf_lm_load_stage), T positions with n_new as above. In: ids
 * (B, T) I32 on the device when the stage embeds, else hidden_in (B, T, d) host floats, the
 * stream the stage before gave out. Out: logits as above when the stage has the head, else
 * hidden_out (B, T, d) host floats for the next stage (NULL on a tensor-parallel shard without the
 * head). The arguments not used may be NULL. */
CLF_API clf_status clf_lm_state_step_stage(clf_lm_state *s, const clf_tensor *ids,
                                           const float *hidden_in, int64_t T, const int64_t *n_new,
                                           float *hidden_out, clf_tensor *logits);

/* Called with each new token of sequence seq (0 .. n-1); return nonzero to stop generating. */
typedef int (*clf_token_fn)(void *user, int64_t seq, int32_t token);

typedef struct clf_generate_params {
    int64_t max_new_tokens;
    clf_sampling_params sampling;
    int ignore_eos;        /* 1: do not stop at the config's eos_token_id(s) */
    clf_token_fn on_token; /* optional, for streaming */
    void *user;
} clf_generate_params;

/* max_new_tokens 32, greedy, stop at eos. */
CLF_API clf_generate_params clf_generate_default_params(void);

/* Generates for n prompts at once (prompts[i]: prompt_lens[i] >= 1 token ids): one batched
 * prefill, then one step per token, a sequence stopping at an eos id (which is not stored) or
 * after max_new_tokens. Tokens are picked on the device (clf_sample), or by the same rule on the
 * host where the device refuses the vocabulary. tokens (n, max_new_tokens) host receives each
 * sequence's new tokens (the rest -1), counts (n) their numbers. */
CLF_API clf_status clf_lm_generate(clf_lm *m, const int32_t *const *prompts,
                                   const int64_t *prompt_lens, int64_t n,
                                   const clf_generate_params *params, int32_t *tokens,
                                   int64_t *counts);

/* ---------------------------------------------------------------- sentence embeddings
 * A sentence-transformers model folder with a BERT encoder (e.g. all-MiniLM-L6-v2):
 * config.json (BertModel sizes), vocab.txt, model.safetensors, and optionally
 * sentence_bert_config.json (max_seq_length), 1_Pooling/config.json (mean pooling is the only
 * mode supported) and modules.json (a Normalize module turns on L2 normalization).
 * An embedding is the mean of the encoder outputs over the sentence's tokens ([CLS] and [SEP]
 * included, padding excluded), L2-normalized when the model says so. */
typedef struct clf_sentence_model clf_sentence_model;

CLF_API clf_status clf_sentence_model_load(clf_context *ctx, const char *dir,
                                           clf_sentence_model **out);
/* The same with params' weight_dtype (cache_dtype unused: an encoder has no cache). */
CLF_API clf_status clf_sentence_model_load_with(clf_context *ctx, const char *dir,
                                                const clf_load_params *params,
                                                clf_sentence_model **out);
/* The same split by layers over n contexts as clf_lm_load_split splits a causal LM: stage i on
 * ctxs[i] holds a contiguous range of the encoder's layers, the first also the embedding; the
 * pooling runs on the last. Same shares, refusals and error reporting (on ctxs[0]). */
CLF_API clf_status clf_sentence_model_load_split(clf_context *const *ctxs, int n,
                                                 const double *split, const char *dir,
                                                 const clf_load_params *params,
                                                 clf_sentence_model **out);
/* The stages of a model (one when it is on one context), as clf_lm_stages. */
CLF_API clf_status clf_sentence_model_stages(const clf_sentence_model *m, clf_stage *out,
                                             int64_t cap, int64_t *count);
CLF_API void clf_sentence_model_free(clf_sentence_model *m);
CLF_API int64_t clf_sentence_model_dim(const clf_sentence_model *m);
/* Longest token sequence (sentences are truncated to it). */
CLF_API int64_t clf_sentence_model_max_len(const clf_sentence_model *m);
/* 1 when later embeddings are L2-normalized: as the model's modules.json says (a Normalize
 * module), unless clf_sentence_model_set_normalize changed it; 0 otherwise (also for NULL). */
CLF_API int clf_sentence_model_normalizes(const clf_sentence_model *m);
/* Later embeddings are L2-normalized (on 1) or left as pooled (on 0), whatever the model says. */
CLF_API clf_status clf_sentence_model_set_normalize(clf_sentence_model *m, int on);
/* The model's tokenizer and encoder, owned by it: valid until clf_sentence_model_free (do not
 * free them). A split model's encoder is its first stage, which runs only that stage's layers:
 * clf_sentence_model_encoder gives NULL for it. */
CLF_API const clf_tokenizer *clf_sentence_model_tokenizer(const clf_sentence_model *m);
CLF_API clf_encoder *clf_sentence_model_encoder(clf_sentence_model *m);
/* Embeds n UTF-8 sentences into out (n, dim), in batches of up to batch_size (0: 32) sentences
 * of similar length. */
CLF_API clf_status clf_sentence_embed(clf_sentence_model *m, const char *const *texts, int64_t n,
                                      int64_t batch_size, float *out);
/* Embeds a batch already tokenized on the device: ids (B, N) I32 padded with [PAD], lens (B)
 * I32 the token counts; out (B, dim) host. */
CLF_API clf_status clf_sentence_embed_ids(clf_sentence_model *m, const clf_tensor *ids,
                                          const clf_tensor *lens, float *out);

#ifdef __cplusplus
}
#endif

#endif /* CLFORMER_MODELS_H */
