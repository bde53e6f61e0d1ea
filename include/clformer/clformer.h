/*
 * clformer — Transformer inference on any OpenCL device.
 *
 * Usage (errors elided; every call returns a clf_status):
 *
 *     clf_context_params p = clf_context_default_params();
 *     p.device_spec = "cpu";                  // or NULL: $CLF_DEVICE, else first GPU, else CPU
 *     clf_context *ctx;
 *     if (clf_context_create(&ctx, &p) != CLF_SUCCESS) { ... }
 *
 *     int64_t shape[2] = {4, 1000};
 *     clf_tensor *x;
 *     clf_tensor_create(ctx, CLF_F32, 2, shape, &x);
 *     clf_tensor_write(x, host_data, 4 * 1000 * sizeof(float));
 *     clf_softmax(ctx, x, x, NULL);            // in place, no mask
 *     clf_tensor_read(x, host_data, 4 * 1000 * sizeof(float));
 *     clf_tensor_free(x);
 *     clf_context_free(ctx);
 *
 * Conventions
 * - Every call returns clf_status. CLF_SUCCESS is 0, OpenCL errors pass through with their own
 *   (negative, > -1000) values, library errors are CLF_ERROR_* (<= -1000). After an error,
 *   clf_context_last_error() says what went wrong (argument, shapes, a kernel's build log).
 * - A call that fails on bad input changes nothing: validation happens before any work is queued.
 * - The library never prints, aborts or exits, and has no global mutable state. A context (and
 *   the tensors made from it) must be used by one thread at a time; use one context per thread
 *   for concurrency. Contexts may share an OpenCL device.
 * - Tensors are row-major, up to CLF_MAX_DIMS dimensions, shapes are int64_t.
 * - Ops run asynchronously on the context's in-order queue; clf_tensor_read() or
 *   clf_context_finish() waits for them.
 */
#ifndef CLFORMER_CLFORMER_H
#define CLFORMER_CLFORMER_H

#include <stddef.h>
#include <stdint.h>

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32) && defined(CLF_SHARED_BUILD)
#define CLF_API __declspec(dllexport)
#elif defined(__GNUC__)
#define CLF_API __attribute__((visibility("default")))
#else
#define CLF_API
#endif

#define CLF_VERSION_MAJOR 0
#define CLF_VERSION_MINOR 1
#define CLF_VERSION_PATCH 0

/* ---------------------------------------------------------------- status codes */

typedef int32_t clf_status;

enum {
    CLF_SUCCESS = 0,
    /* OpenCL's own error codes (-1 .. -999) are returned unchanged. */
    CLF_ERROR_INVALID_ARGUMENT = -1000, /* NULL pointer, bad enum, eps <= 0, ... */
    CLF_ERROR_SHAPE_MISMATCH = -1001,   /* tensor shapes do not fit together */
    CLF_ERROR_UNSUPPORTED = -1002,      /* dtype/feature not supported on this device */
    CLF_ERROR_OUT_OF_MEMORY = -1003,    /* host allocation failed */
    CLF_ERROR_BUILD_FAILED = -1004,     /* kernel compilation failed (log in last_error) */
    CLF_ERROR_IO = -1005,               /* file could not be read or written */
    CLF_ERROR_BAD_FORMAT = -1006,       /* corrupt or malformed file */
    CLF_ERROR_NO_DEVICE = -1007,        /* no OpenCL device, or none matches the spec */
    CLF_ERROR_SIZE_LIMIT = -1008,       /* size over a device limit or size_t overflow */
    CLF_ERROR_CLBLAST = -1009,          /* CLBlast reported an error */
    CLF_ERROR_OUT_OF_RANGE = -1010,     /* an index (token id, position) out of range */
    CLF_ERROR_INTERNAL = -1011          /* a bug in clformer: please report it */
};

/* Static description of a status; never NULL. */
CLF_API const char *clf_strerror(clf_status status);

/* ---------------------------------------------------------------- devices */

#define CLF_NAME_LEN 256

typedef enum {
    CLF_DEVICE_CPU = 1,
    CLF_DEVICE_GPU = 2,
    CLF_DEVICE_ACCELERATOR = 3,
    CLF_DEVICE_OTHER = 4
} clf_device_type;

typedef struct clf_device_info {
    uint32_t global_index;   /* position in clf_device_list() order */
    uint32_t platform_index; /* platform number, as clGetPlatformIDs orders them */
    uint32_t device_index;   /* device number within the platform */
    char platform_name[CLF_NAME_LEN];
    char name[CLF_NAME_LEN];
    char vendor[CLF_NAME_LEN];
    char driver_version[CLF_NAME_LEN];
    char device_version[CLF_NAME_LEN];   /* "OpenCL 1.2 ..." */
    char opencl_c_version[CLF_NAME_LEN]; /* "OpenCL C 1.2 ..." */
    clf_device_type type;
    uint32_t compute_units;
    uint32_t clock_mhz;
    uint64_t global_mem_bytes;
    uint64_t max_alloc_bytes;
    uint64_t local_mem_bytes;
    int local_mem_dedicated; /* 1: on-chip scratchpad (GPU); 0: ordinary memory (CPU) */
    uint64_t max_work_group_size;
    uint32_t preferred_vector_width_float;
    uint32_t native_vector_width_float;
    int has_fp16;
    int has_fp64;
    int has_subgroups;
    int is_simulator; /* 1: a simulator (Oclgrind); never picked unless a spec names it */
} clf_device_info;

/* Lists every device of every platform. Writes up to `capacity` entries to `infos` (may be NULL
 * when capacity is 0) and the total number to *count. No platform at all yields *count = 0 and
 * CLF_SUCCESS. */
CLF_API clf_status clf_device_list(clf_device_info *infos, uint32_t capacity, uint32_t *count);

/* Picks a device by spec (see clf_context_params.device_spec). On failure writes a message naming
 * the existing devices to msg (if msg != NULL). */
CLF_API clf_status clf_device_select(const char *spec, clf_device_info *out, char *msg,
                                     size_t msg_size);

/* ---------------------------------------------------------------- context */

typedef struct clf_context clf_context;

typedef struct clf_context_params {
    /* Device choice: "gpu", "cpu", "accelerator", a global index ("0"), "platform:device"
     * ("1:0"), or a case-insensitive substring of the vendor, platform or device name
     * ("nvidia", "intel", "amd", "pthread", "rusticl", "oclgrind"). NULL: $CLF_DEVICE, else the
     * first GPU, else the first CPU, else the first accelerator, else any other device. Neither
     * the default nor "gpu"/"cpu"/"accelerator" ever picks a simulator (Oclgrind, which reports
     * every type): only an index or a name does. */
    const char *device_spec;
    int enable_profiling;   /* 1: time every kernel (clf_context_profile) */
    int disk_cache;         /* 1 (default): keep built programs on disk */
    const char *cache_dir;  /* NULL: $XDG_CACHE_HOME/clformer, else $HOME/.cache/clformer */
    const char *kernel_dir; /* developer override: read kernels/<name>.cl from here */
    char *error_buf;        /* optional: why clf_context_create failed (no context to ask) */
    size_t error_buf_size;
    /* 1 (default): give CLBlast this device's saved GEMM tuning (clf_gemm_tune), else the
     * built-in values for its device type; 0: leave CLBlast's own defaults. CLBlast keeps
     * overrides per device for the whole process, so contexts on one device share them. */
    int gemm_tuning;
} clf_context_params;

CLF_API clf_context_params clf_context_default_params(void);

/* Creates a context, its OpenCL context and an in-order queue on the chosen device. */
CLF_API clf_status clf_context_create(clf_context **out, const clf_context_params *params);

/* Wraps an application's own OpenCL objects; they are retained and released by the context, so
 * the application and clformer (and CLBlast) share the queue. params may be NULL. The queue must
 * be in-order; profiling is used only if the queue was created with it. */
CLF_API clf_status clf_context_create_from_cl(clf_context **out, cl_context cl_ctx,
                                              cl_device_id device, cl_command_queue queue,
                                              const clf_context_params *params);

CLF_API void clf_context_free(clf_context *ctx);

/* The detail message of the last failed call on this context ("" if none). Valid until the next
 * call on the context. */
CLF_API const char *clf_context_last_error(const clf_context *ctx);

CLF_API clf_status clf_context_device_info(const clf_context *ctx, clf_device_info *out);
CLF_API cl_context clf_context_cl_context(const clf_context *ctx);
CLF_API cl_device_id clf_context_cl_device(const clf_context *ctx);
CLF_API cl_command_queue clf_context_cl_queue(const clf_context *ctx);

/* Waits for all queued work. */
CLF_API clf_status clf_context_finish(clf_context *ctx);

/* Builds every library program and creates every kernel now instead of at first use. */
CLF_API clf_status clf_context_warmup(clf_context *ctx);

/* Overrides a kernel tunable, e.g. ("softmax.WG", 64). The program that reads it is rebuilt at
 * its next use. Unknown names or values <= 0 are CLF_ERROR_INVALID_ARGUMENT. */
CLF_API clf_status clf_context_set_tunable(clf_context *ctx, const char *name, int64_t value);
/* Reads the value in force (override, else the device-type default). */
CLF_API clf_status clf_context_get_tunable(const clf_context *ctx, const char *name,
                                           int64_t *value);

/* Statistics of the program cache since the context was created. */
typedef struct clf_cache_stats {
    uint32_t programs_built_from_source;
    uint32_t programs_loaded_from_disk;
    uint32_t programs_from_memory;
} clf_cache_stats;
CLF_API clf_status clf_context_cache_stats(const clf_context *ctx, clf_cache_stats *out);

/* With enable_profiling: total device time of kernels run since the last reset, and how many. */
CLF_API clf_status clf_context_profile(clf_context *ctx, uint64_t *kernel_ns,
                                       uint64_t *kernel_count);
CLF_API clf_status clf_context_profile_reset(clf_context *ctx);

/* Builds (through the context's program cache) a kernel from caller-provided OpenCL C source;
 * the caller releases the returned kernel. A source that does not compile yields
 * CLF_ERROR_BUILD_FAILED with the full build log in clf_context_last_error(). */
CLF_API clf_status clf_context_build_kernel(clf_context *ctx, const char *source,
                                            const char *options, const char *kernel_name,
                                            cl_kernel *out);

/* ---------------------------------------------------------------- tensors */

#define CLF_MAX_DIMS 4

typedef enum { CLF_F32 = 0, CLF_F16 = 1, CLF_I32 = 2 } clf_dtype;

typedef struct clf_tensor clf_tensor;

/* Allocates an uninitialized device tensor. Sizes are checked for overflow and against the
 * device's max allocation. */
CLF_API clf_status clf_tensor_create(clf_context *ctx, clf_dtype dtype, int ndim,
                                     const int64_t *shape, clf_tensor **out);
CLF_API void clf_tensor_free(clf_tensor *t);

/* Blocking transfers; `bytes` must equal clf_tensor_bytes(t). */
CLF_API clf_status clf_tensor_write(clf_tensor *t, const void *host, size_t bytes);
CLF_API clf_status clf_tensor_read(const clf_tensor *t, void *host, size_t bytes);
/* Sets every element to value (converted to the dtype; I32 takes the integer part). */
CLF_API clf_status clf_tensor_fill(clf_tensor *t, double value);
/* Copies src into dst (same dtype and element count). */
CLF_API clf_status clf_tensor_copy(clf_tensor *dst, const clf_tensor *src);
/* Changes the shape in place; the element count must stay the same. */
CLF_API clf_status clf_tensor_reshape(clf_tensor *t, int ndim, const int64_t *shape);

CLF_API int clf_tensor_ndim(const clf_tensor *t);
CLF_API int64_t clf_tensor_dim(const clf_tensor *t, int i); /* negative i counts from the end */
CLF_API int64_t clf_tensor_numel(const clf_tensor *t);
CLF_API size_t clf_tensor_bytes(const clf_tensor *t);
CLF_API clf_dtype clf_tensor_dtype(const clf_tensor *t);
CLF_API cl_mem clf_tensor_cl_mem(const clf_tensor *t);
CLF_API size_t clf_dtype_size(clf_dtype dtype);

/* ---------------------------------------------------------------- row ops
 * Memory-bound kernels of every Transformer layer. All take f32 tensors, work over the last
 * dimension, and allow out to be the input (in place). Shapes are checked before anything is
 * queued; a failing call writes nothing.
 */

/* Which keys a query may see, as the seeds' masked_softmax(X, valid_lens) plus a causal mask.
 * For scores x of shape (B, ..., Nq, Nk) (a 2-D x is one matrix, B = 1):
 *   valid_lens: I32 tensor (B) — batch b sees keys 0 .. valid_lens[b]-1 — or (B, Nq) — query q
 *               of batch b sees keys 0 .. valid_lens[b, q]-1; NULL for none. Values are clamped
 *               to 0 .. Nk.
 *   causal:     1: query q (absolute position causal_offset + q) sees keys 0 .. causal_offset+q,
 *               for decoding with a KV cache where Nk = causal_offset + Nq.
 * Both may be combined. A query that sees no key gets all zeros (never NaN). */
typedef struct clf_mask {
    const clf_tensor *valid_lens;
    int causal;
    int64_t causal_offset;
} clf_mask;

/* out = softmax(x) over the last dimension, masked positions 0. mask may be NULL. */
CLF_API clf_status clf_softmax(clf_context *ctx, const clf_tensor *x, clf_tensor *out,
                               const clf_mask *mask);

/* out = LayerNorm(x + residual) over the last dimension n (biased variance, as PyTorch):
 * (z - mean) / sqrt(var + eps) * gamma + beta. residual may be NULL (plain LayerNorm); gamma
 * and beta are (n); eps > 0 (PyTorch's default is 1e-5). The seeds' AddNorm(X, Y) at inference
 * is clf_layernorm(ctx, Y, X, gamma, beta, eps, out). */
CLF_API clf_status clf_layernorm(clf_context *ctx, const clf_tensor *x, const clf_tensor *residual,
                                 const clf_tensor *gamma, const clf_tensor *beta, float eps,
                                 clf_tensor *out);

/* out = x + P[pos_offset + i] for x of shape (B, N, d) or (N, d), row i of each sequence, with
 * the seeds' sinusoidal table P[p, 2j] = sin(p / 10000^(2j/d)), P[p, 2j+1] = cos(...), computed
 * in the kernel (any d, odd included). Positions must stay below 2^24 (exact in float). */
CLF_API clf_status clf_posenc_add(clf_context *ctx, const clf_tensor *x, int64_t pos_offset,
                                  clf_tensor *out);

/* out[..., :] = table[ids[...], :] * scale (+ P[pos_offset + i] if add_posenc), for I32 ids of
 * shape (B, N) or (N), table (V, d), out (B, N, d) or (N, d). The seeds' encoder and decoder use
 * scale = sqrt(d) and add_posenc = 1. An id outside 0 .. V-1 is CLF_ERROR_OUT_OF_RANGE and
 * nothing is written (ids are read back to check them). */
CLF_API clf_status clf_embedding(clf_context *ctx, const clf_tensor *ids, const clf_tensor *table,
                                 float scale, int add_posenc, int64_t pos_offset, clf_tensor *out);

typedef enum {
    CLF_ACT_IDENTITY = 0,
    CLF_ACT_RELU = 1,
    CLF_ACT_GELU_ERF = 2, /* 0.5 x (1 + erf(x / sqrt 2)), PyTorch's default GELU */
    CLF_ACT_GELU_TANH = 3 /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
} clf_activation;

/* out = act(x + bias) with bias (n) broadcast over the rows of x (..., n); bias may be NULL. */
CLF_API clf_status clf_bias_act(clf_context *ctx, const clf_tensor *x, const clf_tensor *bias,
                                clf_activation act, clf_tensor *out);

/* out = a + b, all the same shape (the residual add). */
CLF_API clf_status clf_add(clf_context *ctx, const clf_tensor *a, const clf_tensor *b,
                           clf_tensor *out);

/* ---------------------------------------------------------------- matrix products (CLBlast)
 * Row-major single precision GEMMs on the context's queue. CLBlast's errors map to
 * CLF_ERROR_CLBLAST (OpenCL errors it reports pass through) with a detail message. */

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

/* Where the GEMM parameters in force came from: "file:<path>", "builtin:<type>", or "clblast"
 * (CLBlast's own defaults). */
CLF_API const char *clf_gemm_tuning_source(const clf_context *ctx);

typedef void (*clf_progress_fn)(void *user, const char *message);

typedef struct clf_tune_params {
    double budget_s;          /* wall-clock budget for the search (compiles included) */
    uint64_t seed;            /* random search seed */
    int save;                 /* 1: write the result to the tuning file of this device */
    clf_progress_fn progress; /* optional progress messages */
    void *user;
} clf_tune_params;

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

typedef struct clf_attention_tune_result {
    int count; /* head sizes tuned (dims[0 .. count - 1]) */
    clf_attention_tune_entry dims[16];
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
 * saved) or "defaults" (the tunables' per-device-type defaults). */
CLF_API const char *clf_attention_tuning_source(const clf_context *ctx);

/* ---------------------------------------------------------------- attention
 * Scaled dot-product attention for all heads in one call, the seeds' rearrange
 * 'b n (h d) -> b h n d' folded into indexing:
 *   q (B, Nq, Wq), k (B, Nk_max, Wk), v (B, Nk_max, Wv), out (B, Nq, H * Dh);
 * head h of a row of q is the Dh floats from column q_col + h * Dh (likewise k, v), so q, k and
 * v may be one fused QKV projection (B, N, 3 H Dh) with q_col 0, k_col H Dh, v_col 2 H Dh, and
 * k, v a KV cache of which the first nk rows are in use. out must not overlap q, k or v.
 * Masks as clf_mask (valid lengths per batch or per query, causal with an offset for decoding
 * with a cache); a query that sees no key gets zeros.
 * The tiled path (default) never forms the Nq x Nk matrix: memory O(N * Dh); with few queries and
 * many keys it splits the keys across work-groups (flash-decoding). The naive path (naive = 1)
 * computes scores by GEMM, the masked softmax and a second GEMM: the baseline, and the way to get
 * the attention weights; it refuses (CLF_ERROR_SIZE_LIMIT) when B x H x Nq x Nk floats exceed
 * the device's max allocation. */
typedef struct clf_attention_desc {
    int64_t heads;               /* H >= 1 */
    int64_t head_dim;            /* Dh, 1 .. 256 */
    int64_t q_col, k_col, v_col; /* column of head 0 within a row of q, k, v */
    int64_t nk;                  /* keys in use; 0: all of k's dim 1 */
    float scale;                 /* 0: 1 / sqrt(Dh) */
    clf_mask mask;               /* no mask: all zeros */
    int naive;                   /* 1: GEMM + masked softmax + GEMM */
    clf_tensor *weights;         /* naive only, optional: (B, H, Nq, Nk) attention weights */
} clf_attention_desc;

/* A description with H heads of Dh, no mask, columns 0, scale 1/sqrt(Dh), tiled. */
CLF_API clf_attention_desc clf_attention_default_desc(int64_t heads, int64_t head_dim);

CLF_API clf_status clf_attention(clf_context *ctx, const clf_tensor *q, const clf_tensor *k,
                                 const clf_tensor *v, clf_tensor *out,
                                 const clf_attention_desc *desc);

/* out[...] = index of the largest element of x[..., :] (the first one on ties), for f32 x
 * (..., n) and I32 out with x's leading dims (a 1-D x gives a 1-element out). */
CLF_API clf_status clf_argmax(clf_context *ctx, const clf_tensor *x, clf_tensor *out);

/* ---------------------------------------------------------------- safetensors
 * A reader of the safetensors format (8-byte little-endian header size, a JSON header naming
 * each tensor's dtype, shape and [begin, end) byte offsets into the data that follows). Opening
 * validates the whole header: every dtype is known, every shape's size matches its byte range,
 * every range lies inside the file and no two overlap; a corrupt or truncated file is refused
 * with a message saying what is wrong. Data is read from the file when a tensor is loaded; one
 * clf_safetensors may be read from several threads at once (each read opens the file). */
typedef struct clf_safetensors clf_safetensors;

typedef enum {
    CLF_ST_F32 = 0,
    CLF_ST_F16,
    CLF_ST_BF16,
    CLF_ST_F64,
    CLF_ST_I32,
    CLF_ST_I64,
    CLF_ST_OTHER /* any other dtype of the format (I8, U8, BOOL, ...): listed, not loadable */
} clf_st_dtype;

#define CLF_ST_MAX_DIMS 8

typedef struct clf_st_info {
    const char *name;
    clf_st_dtype dtype;
    const char *dtype_name; /* as in the file, e.g. "BF16" */
    int ndim;
    int64_t shape[CLF_ST_MAX_DIMS];
    int64_t numel;
    uint64_t offset, bytes; /* within the file */
} clf_st_info;

/* err (optional) receives the reason of a failure. */
CLF_API clf_status clf_safetensors_open(const char *path, clf_safetensors **out, char *err,
                                        size_t err_size);
CLF_API void clf_safetensors_close(clf_safetensors *st);
CLF_API size_t clf_safetensors_count(const clf_safetensors *st);
/* Tensor i (0 .. count-1, in file order), or by name; NULL if absent. */
CLF_API const clf_st_info *clf_safetensors_at(const clf_safetensors *st, size_t i);
CLF_API const clf_st_info *clf_safetensors_find(const clf_safetensors *st, const char *name);
/* Reads a tensor into host memory converted to float (F32, F16, BF16, F64, I32, I64) or int32
 * (I32, I64 in range); `count` must equal its numel. */
CLF_API clf_status clf_safetensors_read_f32(const clf_safetensors *st, const char *name, float *dst,
                                            int64_t count, char *err, size_t err_size);
CLF_API clf_status clf_safetensors_read_i32(const clf_safetensors *st, const char *name,
                                            int32_t *dst, int64_t count, char *err,
                                            size_t err_size);
/* Loads a tensor into a new f32 (or, for integer dtypes, I32) device tensor. With shape != NULL
 * its shape must be exactly (shape[0], ..., shape[ndim-1]); a missing tensor, another shape or
 * an unloadable dtype is an error naming the tensor. */
CLF_API clf_status clf_safetensors_load(clf_context *ctx, const clf_safetensors *st,
                                        const char *name, int ndim, const int64_t *shape,
                                        clf_tensor **out);

/* One tensor to write: F32 or I32 data (host, row-major), ndim 0 .. CLF_ST_MAX_DIMS. */
typedef struct clf_st_entry {
    const char *name;
    clf_st_dtype dtype; /* CLF_ST_F32 or CLF_ST_I32 */
    int ndim;
    const int64_t *shape;
    const void *data;
} clf_st_entry;

/* Writes a safetensors file (through a temporary file renamed into place). */
CLF_API clf_status clf_safetensors_write(const char *path, const clf_st_entry *entries, size_t n,
                                         char *err, size_t err_size);

/* ---------------------------------------------------------------- WordPiece tokenizer
 * BERT's tokenizer for uncased vocabularies, as Hugging Face's BertNormalizer, BertPreTokenizer
 * and WordPiece do it: control characters removed and whitespace unified; spaces put around CJK
 * ideographs; accents stripped (NFD without nonspacing marks) and text lowercased; split on
 * whitespace and around punctuation (Unicode P* and ASCII symbols); each word split into the
 * longest vocabulary pieces first ("##" marks a continuation), a word with no split (or over 100
 * characters) becoming [UNK]; then [CLS] ... [SEP]. Invalid UTF-8 bytes are dropped. */
typedef struct clf_tokenizer clf_tokenizer;

/* Reads a vocab.txt (one token per line, the line number is the id). It must hold [CLS], [SEP],
 * [UNK] and [PAD]. */
CLF_API clf_status clf_tokenizer_load(const char *vocab_path, clf_tokenizer **out, char *err,
                                      size_t err_size);
CLF_API void clf_tokenizer_free(clf_tokenizer *tok);
CLF_API int64_t clf_tokenizer_vocab_size(const clf_tokenizer *tok);
/* The token of an id, NULL if out of range. */
CLF_API const char *clf_tokenizer_token(const clf_tokenizer *tok, int64_t id);
/* Ids of a special token ("[CLS]", "[SEP]", "[UNK]", "[PAD]", ...) or any token; -1 if absent. */
CLF_API int64_t clf_tokenizer_find(const clf_tokenizer *tok, const char *token);
/* Encodes UTF-8 text as [CLS] pieces [SEP], keeping at most max_len ids (>= 2: the pieces are
 * truncated to max_len - 2, as Hugging Face truncates). ids has room for max_len; *count
 * receives the number written. */
CLF_API clf_status clf_tokenizer_encode(const clf_tokenizer *tok, const char *text, int64_t max_len,
                                        int32_t *ids, int64_t *count);

/* ---------------------------------------------------------------- Transformer models
 * The seeds' (d2l) Transformer and BERT-style encoders built from the ops above.
 *
 * Encoder (post-LN, as the seeds' EncoderBlock and BERT):
 *   X = embed(ids)
 *   per block: Y = AddNorm(X, MHA(X, X, X, valid_lens)); X = AddNorm(Y, FFN(Y))
 * where MHA projects Q, K, V with one fused GEMM, runs clf_attention over all heads and projects
 * back with W_o; FFN = dense2(act(dense1(.))); AddNorm(X, Y) = LayerNorm(X + Y).
 * Decoder (the seeds' DecoderBlock): causal self-attention over a KV cache of projected keys and
 * values, AddNorm, cross-attention over the encoder outputs (projected to K, V once per
 * sequence) with their valid lengths, AddNorm, FFN, AddNorm, then a dense layer to the vocabulary.
 *
 * Weight names (safetensors, PyTorch module names; <p> is the prefix given to the loader):
 *   CLF_ARCH_D2L encoder, the seeds' TransformerEncoder:
 *     <p>embedding.weight (V, d)
 *     <p>blks.block<i>.attention.W_{q,k,v,o}.weight (d, d)  [.bias (d) if use_bias]
 *     <p>blks.block<i>.addnorm{1,2}.ln.{weight,bias} (d)
 *     <p>blks.block<i>.ffn.dense1.{weight (F, d), bias (F)}, ffn.dense2.{weight (d, F), bias (d)}
 *   CLF_ARCH_D2L decoder, the seeds' TransformerDecoder: embedding.weight,
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
    CLF_ARCH_D2L = 0, /* embedding x sqrt(d) + sinusoidal positions; the seeds' names */
    CLF_ARCH_BERT = 1 /* word + learned position + token type 0 embeddings, LayerNorm */
} clf_arch;

typedef struct clf_transformer_config {
    clf_arch arch;
    int64_t vocab_size;      /* rows of the embedding (and the decoder's output size) */
    int64_t num_hiddens;     /* d; norm_shape is (d) */
    int64_t ffn_num_hiddens; /* F */
    int64_t num_heads;       /* H; d must be a multiple of H, d / H <= 256 */
    int64_t num_layers;
    int use_bias;           /* biases of the attention projections (the seeds' use_bias) */
    clf_activation ffn_act; /* RELU in the seeds, GELU_ERF in BERT */
    float norm_eps;         /* LayerNorm eps: 1e-5 in the seeds, 1e-12 in BERT */
    int64_t max_len;        /* longest sequence (positions); 0: 1000 (the seeds' table) */
} clf_transformer_config;

/* The seeds' defaults for given sizes: D2L, ReLU, eps 1e-5, no attention bias, max_len 1000. */
CLF_API clf_transformer_config clf_transformer_default_config(int64_t vocab_size,
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
                                    const clf_transformer_config *cfg, clf_encoder **out);
CLF_API void clf_encoder_free(clf_encoder *enc);
/* Allocates the activation workspace for up to `batch` sequences of `len` tokens now (forward
 * otherwise grows it on demand; it never shrinks). len must not exceed cfg.max_len. */
CLF_API clf_status clf_encoder_reserve(clf_encoder *enc, int64_t batch, int64_t len);
/* out (B, N, d) = encoder(ids (B, N) I32); valid_lens (B) I32 or NULL masks the keys of each
 * sequence beyond its length (the seeds' valid_lens). Rows past a sequence's length are
 * computed too (they attend to the valid keys), as in the seeds. */
CLF_API clf_status clf_encoder_forward(clf_encoder *enc, const clf_tensor *ids,
                                       const clf_tensor *valid_lens, clf_tensor *out);
/* 1: later forwards run attention through the naive path and keep each layer's weights
 * (the seeds' attention_weights), readable with clf_encoder_attention_weights. */
CLF_API clf_status clf_encoder_record_weights(clf_encoder *enc, int on);
/* The (B, H, N, N) attention weights of a layer from the last forward; NULL if not recorded. */
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
                                    const clf_transformer_config *cfg, clf_decoder **out);
CLF_API void clf_decoder_free(clf_decoder *dec);
/* The seeds' init_state: projects the encoder outputs (B, Ns, d) to each layer's cross-attention
 * K and V once, keeps a copy of enc_valid_lens (B) I32 (or NULL), and allocates the KV caches
 * and workspace for `max_len` decoded tokens (<= cfg.max_len). The decoded length becomes 0. */
CLF_API clf_status clf_decoder_init_state(clf_decoder *dec, const clf_tensor *enc_outputs,
                                          const clf_tensor *enc_valid_lens, int64_t max_len);
/* Decodes T new tokens ids (B, T) I32 at positions length .. length+T-1, appending their
 * projected keys and values to the caches; logits (B, T, V). T = 1 is incremental decoding;
 * T = N from length 0 is the seeds' training-mode decoding (causal mask). Fails without
 * writing anything if length + T > max_len. */
CLF_API clf_status clf_decoder_step(clf_decoder *dec, const clf_tensor *ids, clf_tensor *logits);
/* Forgets the decoded tokens (keeps the encoder state). */
CLF_API clf_status clf_decoder_reset(clf_decoder *dec);
CLF_API int64_t clf_decoder_length(const clf_decoder *dec);
/* 1: later steps use the naive attention path and keep each layer's weights:
 * which 0 = self-attention (B, H, T, length), 1 = cross-attention (B, H, T, Ns). */
CLF_API clf_status clf_decoder_record_weights(clf_decoder *dec, int on);
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
    int32_t bos, eos;  /* the first input token; the token that ends a sequence */
    int64_t max_steps; /* at most this many tokens per sequence */
    clf_step_fn on_step;
    void *user;
} clf_greedy_params;

/* The seeds' predict_seq2seq for a batch: encodes src (B, Ns) I32 with src_valid_lens (B) I32
 * (or NULL), then feeds bos and each step's argmax until every sequence has produced eos or
 * max_steps tokens. tokens (B, max_steps) host receives each sequence's tokens (eos excluded,
 * the rest -1) and lengths (B) their counts. */
CLF_API clf_status clf_greedy_decode(clf_encoder *enc, clf_decoder *dec, const clf_tensor *src,
                                     const clf_tensor *src_valid_lens,
                                     const clf_greedy_params *params, int32_t *tokens,
                                     int64_t *lengths);

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
CLF_API void clf_sentence_model_free(clf_sentence_model *m);
CLF_API int64_t clf_sentence_model_dim(const clf_sentence_model *m);
/* Longest token sequence (sentences are truncated to it). */
CLF_API int64_t clf_sentence_model_max_len(const clf_sentence_model *m);
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

#endif /* CLFORMER_CLFORMER_H */
