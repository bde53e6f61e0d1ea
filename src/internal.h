/*
 * internal.h — what the library's source files share and the public header does not show:
 * the context and tensor structs, the program/kernel registry, tunables, error helpers.
 * Tests include it too (they link the static library) to check host-only logic.
 */
#ifndef CLFORMER_INTERNAL_H
#define CLFORMER_INTERNAL_H

#include "clformer/clformer.h"
#include "cache_io.h"

#include <stdarg.h>
#include <strings.h>
#include <stdbool.h>

/* ---------------------------------------------------------------- library programs */

/* One entry per kernels/<name>.cl program file (common.cl and dtypes.cl are prepended to each,
 * activation.cl and linear_int.cl to those whose clf__prog_preludes entry names them). */
typedef enum {
    CLF_PROG_SOFTMAX = 0,
    CLF_PROG_LAYERNORM,
    CLF_PROG_POSENC,
    CLF_PROG_ROPE,
    CLF_PROG_ELEMENTWISE,
    CLF_PROG_LINEAR,
    CLF_PROG_ATTENTION,
    CLF_PROG_ATTENTION_LOCAL,
    CLF_PROG_SAMPLE,
    CLF_PROG_COUNT
} clf_prog_id;

/* Every kernel of every library program. */
typedef enum {
    CLF_K_SOFTMAX = 0,
    CLF_K_LAYERNORM,
    CLF_K_RMSNORM,
    CLF_K_ROPE,
    CLF_K_POSENC, /* embedding gather and/or positional encoding */
    CLF_K_BIAS_ACT,
    CLF_K_ADD,
    CLF_K_GATED_ACT,
    CLF_K_ARGMAX,
    CLF_K_ROWS_TO_HALF,
    CLF_K_LINEAR_ROWS,
    CLF_K_PACK_PANELS,
    CLF_K_PACK_BLOCKS,     /* block types' panels */
    CLF_K_UNPACK_BLOCKS,   /* block panels as F32 panels (linear.DQ_ROWS) */
    CLF_K_LINEAR_PACKED,   /* PK_R rows per work-item */
    CLF_K_LINEAR_PACKED_1, /* 1, 2 and 4 rows (fewer rows than PK_R: decoding) */
    CLF_K_LINEAR_PACKED_2,
    CLF_K_LINEAR_PACKED_4,
    CLF_K_QUANTIZE_X,        /* x quantized per 32 for linear_packed_xq (linear.QROWS) */
    CLF_K_LINEAR_PACKED_XQ,  /* block panels against quantize_x's integers */
    CLF_K_LINEAR_PACKED_LQ1, /* block panels, 1 and 2 rows, x quantized by the work-group */
    CLF_K_LINEAR_PACKED_LQ2,
    CLF_K_LINEAR_TILED,
    CLF_K_GET_ROWS, /* the embedding gather of a stored (quantized, F16) table */
    CLF_K_ATTENTION,
    CLF_K_ATTENTION_COMBINE,
    CLF_K_ATTENTION_T,
    CLF_K_ATTENTION_TRANSPOSE,
    CLF_K_ATTENTION_FLASH,
    CLF_K_ATTENTION_FLASH_SPLIT,
    CLF_K_SAMPLE,
    CLF_K_COUNT
} clf_kernel_id;
/* Profiling slots past the kernels: CLBlast's GEMMs, buffer copies (KV cache, rows). */
enum { CLF_PROF_GEMM = CLF_K_COUNT, CLF_PROF_COPY, CLF_PROF_SLOTS };

/* A kernel and its work-group shape. Dimension d of its local size is compiled into the kernel as
 * the -D macro wg_macro[d] (a reqd_work_group_size, local arrays, a reduction tree), or, when
 * NULL, is chosen at launch only. wg_pow2[d]: that size must stay a power of two. */
typedef struct clf_kernel_def {
    clf_prog_id prog;
    const char *name; /* __kernel function name */
    const char *wg_macro[3];
    unsigned char wg_pow2[3];
} clf_kernel_def;

extern const char *const clf__prog_names[CLF_PROG_COUNT]; /* file stem, e.g. "softmax" */
/* Parts prepended after common.cl and dtypes.cl, in order (file stems; NULL: none). */
#define CLF_PRELUDES 3
extern const char *const clf__prog_preludes[CLF_PROG_COUNT][CLF_PRELUDES];
extern const clf_kernel_def clf__kernel_defs[CLF_K_COUNT];

/* Generated at build time from kernels/\*.cl (see cmake/embed_kernels.cmake). */
typedef struct clf_embedded_source {
    const char *name; /* file stem */
    const char *text;
} clf_embedded_source;
extern const clf_embedded_source clf__embedded_sources[];
extern const size_t clf__embedded_count;
const char *clf__embedded_find(const char *name);

/* The last clf_activation value (the checks of every op that takes one). */
#define CLF__ACT_LAST CLF_ACT_SILU

/* ---------------------------------------------------------------- tunables */

typedef struct clf_tunable_def {
    const char *name; /* "<program>.<MACRO>", e.g. "softmax.WG"; MACRO is the -D name */
    clf_prog_id prog;
    int64_t cpu;      /* default on CPU devices (PoCL habits: wide vectors, tiny groups) */
    int64_t gpu;      /* default on GPUs (coalesced loads, large groups) */
    int64_t fallback; /* any other device type */
    int pow2;         /* 1: value must be a power of two */
    int64_t max;      /* largest accepted value */
    int64_t min;      /* smallest accepted value */
    int host;         /* 1: read by the host only, not passed as -D */
} clf_tunable_def;

/* Tunable ids, CLF_T_<PROGRAM>_<MACRO> (e.g. CLF_T_SOFTMAX_WG), from tunables.def. */
typedef enum {
#define CLF_TUNABLE(id, ...) CLF_T_##id,
#include "tunables.def"
#undef CLF_TUNABLE
    CLF_T_COUNT
} clf_tunable_id;

extern const clf_tunable_def clf__tunable_defs[CLF_T_COUNT];
extern const size_t clf__tunable_count; /* CLF_T_COUNT */

/* Attention tiles (attention.QB, attention.BQ) for one head size, from an attention tuning file
 * (see tuning/attention_tiles.c). */
#define CLF_ATT_TILES_MAX CLF_ATTENTION_TUNE_MAX
typedef struct clf_att_tile {
    int64_t head_dim, qb, bq;
} clf_att_tile;

/* What the tuning files gave a context (src/tuning/), read by the ops; the searches in src/search/
 * update it after a tune. Owned by the context. */
#define CLF_GEMM_TUNING_KIND  "gemm-tuning"
#define CLF_ATT_TUNING_KIND   "attention-tuning"
#define CLF_ATT_TUNING_FORMAT "clformer-attention-tuning-1"
/* CLBlast's GEMM parameters for one device (see tuning/gemm_params.h). */
typedef struct clf_gemm_params {
    bool has_xgemm, has_direct, has_routine;
    size_t xgemm[16];
    size_t direct[10];
    size_t min_indirect; /* GemmRoutine's XGEMM_MIN_INDIRECT_SIZE */
} clf_gemm_params;
typedef struct clf_tuning {
    uint64_t id;          /* process-unique, for the CLBlast lock (clf__gemm_lock) */
    clf_gemm_params gemm; /* this context's GEMM parameters (none: CLBlast's database) */
    char *dir; /* owned; the tuning folder (the cache folder, even if the disk cache is off) */
    clf_att_tile att_tiles[CLF_ATT_TILES_MAX]; /* attention tiles per head size */
    int n_att_tiles;
    char att_source[600];  /* see clf_attention_tuning_source() */
    char gemm_source[600]; /* see clf_gemm_tuning_source() */
} clf_tuning;

/* Index of a tunable by full name, or -1. */
int clf__tunable_find(const char *name);
/* Default for a device type. */
int64_t clf__tunable_default(const clf_tunable_def *def, clf_device_type type);
/* Register blocking by a CPU's vector ISA: the CPU column is sized for AVX-512 (32 registers of
 * 16 floats); a CPU whose native float vector is at most 8 lanes (AVX2: 16 registers) gets tiles
 * that fit 16 registers. Nothing for other device types. */
void clf__isa_defaults(const clf_device_info *info, int64_t *tunables);
/* AVX512-VNNI's instructions may run in the device's kernels (linear.VNNI). */
bool clf__x86_vnni(const clf_device_info *info);
/* GPUs: the SIMD width of the device's vendor and generation (NVIDIA 32, AMD GCN/CDNA 64, AMD
 * RDNA 32, Intel 16), 0 for another vendor or device type. */
int clf__gpu_wave(const clf_device_info *info);
/* Work-group shapes by that width, over the GPU column (nothing for unknown vendors or other
 * device types); the table is in the README's portability notes. */
void clf__gpu_defaults(const clf_device_info *info, int64_t *tunables);
/* Developer option clf_context_params.device_profile: makes info read as that vendor's GPU
 * ("nvidia", "amd-cdna", "amd-rdna", "intel"); -1 for another name. */
int clf__device_profile(clf_device_info *info, const char *profile);
/* Case-insensitive substring test (an empty needle never matches). */
bool clf__ci_contains(const char *hay, const char *needle);
/* Most -D macros a kernel variant sets besides the tunables (fitted work-group sizes and
 * per-call values). */
#define CLF_MAX_DEFINES 8
/* Per-call -D macros of a kernel variant (e.g. attention's DH, VW, QB, HG): name and value pairs,
 * formatted only by clf__build_options_with. */
typedef struct clf_defines {
    int n;
    const char *name[CLF_MAX_DEFINES - 3];
    int64_t value[CLF_MAX_DEFINES - 3];
} clf_defines;

/* ---------------------------------------------------------------- storage types */

/* What takes a type (dtypes.def's last column). */
enum { CLF_DTU_DATA = 1, CLF_DTU_WEIGHTS = 2, CLF_DTU_KV = 4 };
/* One row of include/clformer/dtypes.def. */
typedef struct clf_dtype_traits {
    const char *name; /* "Q4_K" */
    clf_dtype dtype;
    int64_t block;   /* elements per block */
    int block_bytes; /* bytes per block */
    int gguf;        /* ggml_type in GGUF files, -1: none */
    unsigned uses;   /* CLF_DTU_* */
} clf_dtype_traits;
extern const clf_dtype_traits clf__dtypes[];
extern const size_t clf__dtype_count;
/* The row of a clf_dtype value, or of a GGUF type number; NULL when there is none. */
const clf_dtype_traits *clf__dtype(clf_dtype dtype);
const clf_dtype_traits *clf__dtype_from_gguf(int64_t gguf_type);
/* Appends DT=<dtype> to defs, the one define that selects a program's stored-operand type (its
 * section of kernels/dtypes.cl): linear's weights, attention's K and V. F32, the default, adds
 * nothing. */
void clf__dtype_define(clf_defines *defs, clf_dtype dtype);
/* The types a model's F32 weights may be converted to at load (clf_load_params.weight_dtype):
 * those clf_quantize writes (F32, F16, BF16, Q8_0, Q4_0). */
bool clf__load_weight_type(clf_dtype dtype);
/* Q4_K's 6-bit scale and min of sub-block j (0..7) from the block's 12 packed bytes. */
void clf__q4k_scale_min(const unsigned char *q, int j, int *sc, int *m);

/* Writes the -D options of program `prog` from `values` (one per tunable, host-only ones left
 * out) into buf. Returns 0, or -1 if buf is too small. The only place -D options are written. */
int clf__build_options(clf_prog_id prog, const int64_t *values, char *buf, size_t size);
/* Same, with `n` macros set to other values (a kernel's fitted work-group sizes, per-call
 * values): a tunable of the program with one of these macro names takes that value, and the
 * others are appended. */
int clf__build_options_with(clf_prog_id prog, const int64_t *values, const char *const *macros,
                            const int64_t *macro_values, int n, char *buf, size_t size);

/* ---------------------------------------------------------------- fault injection (tests)
 * A test-only switch: the call of a kind numbered `after` (0 = the next one) fails as the OpenCL
 * driver would fail it; -1 turns the kind off. Only tests reach it (internal header). */
typedef enum {
    CLF_FAULT_ALLOC = 0, /* clCreateBuffer */
    CLF_FAULT_BUILD,     /* building a program from source */
    CLF_FAULT_ENQUEUE,   /* clEnqueueNDRangeKernel, CLBlast calls */
    CLF_FAULT_TRANSFER,  /* read, write, fill, copy */
    CLF_FAULT_KINDS
} clf_fault_kind;

/* ---------------------------------------------------------------- context and tensor */

/* A library kernel built with the tunables in force plus per-call options (e.g. "-DDH=64"), for
 * one requested work-group shape, and the shape fitted to what the device allows for it. */
typedef struct clf_kernel_entry {
    clf_kernel_id id;
    char extra[64];  /* the variant's per-call defines, "NAME=value ..." (a key, never options) */
    size_t want[3];  /* requested local size */
    size_t local[3]; /* fitted local size (the one to launch with) */
    cl_kernel kernel;
    size_t wg; /* the limit it was fitted to: CL_KERNEL_WORK_GROUP_SIZE, or the test cap */
} clf_kernel_entry;

struct clf_context {
    cl_platform_id platform;
    cl_context cl_ctx;
    cl_device_id device;
    cl_command_queue queue;
    clf_device_info info;

    int profiling;
    uint64_t prof_ns, prof_count;
    /* the same per kernel id, then CLBlast's GEMMs and buffer copies (clf__profile_event) */
    uint64_t prof_each_ns[CLF_PROF_SLOTS], prof_each_count[CLF_PROF_SLOTS];

    int disk_cache;
    char *cache_dir;       /* owned; NULL when the disk cache is off */
    char *kernel_dir;      /* owned; NULL: embedded sources */
    char *program_log_dir; /* owned; NULL: off (clf_context_params.program_log_dir) */
    int program_log_only;  /* clf_context_params.program_log_only: clf__launch enqueues nothing */

    char *error;   /* detail message of the last failure, owned ("" when none) */
    char *warning; /* the last warning (an ignored tuning file), owned, NULL when none */

    clf_prog_entry *progs; /* memory cache, every program built by this context */
    size_t n_progs, cap_progs;
    clf_cache_stats stats;

    clf_kernel_entry *kernels; /* library kernels created so far, per (kernel, variant) */
    size_t n_kernels, cap_kernels;
    int64_t *tunables;                 /* [clf__tunable_count] values in force */
    unsigned char *tunable_set;        /* [clf__tunable_count] 1: set by clf_context_set_tunable */
    clf_tuning *tuning;                /* owned: tuning files read at creation (src/tuning/) */
    int64_t fault_at[CLF_FAULT_KINDS]; /* see clf__fault_set; -1: off */
    int64_t fault_seen[CLF_FAULT_KINDS];
    uint64_t launches;  /* kernels and CLBlast calls queued so far (for reports) */
    size_t max_item[3]; /* CL_DEVICE_MAX_WORK_ITEM_SIZES */
    size_t wg_cap;      /* test-only cap on every kernel's work-group (clf__wg_cap_set); 0: off */
    /* Most loop iterations one work-item may run, summed over all its loops; 0: no limit.
     * llvmpipe (Mesa's rusticl on the CPU) stops a kernel's loops after 65535 iterations in all
     * and carries on with wrong results (its shader loop limiter); ops that loop long per
     * work-item (attention over many keys, row reductions, argmax) split their work to stay
     * within it. Half the hard limit, for loops the estimates do not count. */
    int64_t loop_budget;
    int ran_clblast; /* CLBlast's cache then holds cl_ctx: clf__gemm_release at free */
    cl_mem scratch;  /* grow-only device scratch (attention partials, F32 panels: DQ_ROWS) */
    size_t scratch_bytes;
};

struct clf_tensor {
    clf_context *ctx;
    cl_mem mem;
    clf_dtype dtype;
    int ndim;
    int64_t shape[CLF_MAX_DIMS];
    int64_t numel;
    size_t bytes;
};

/* Records a detail message for `status` on ctx and returns status. ctx may be NULL. */
clf_status clf__fail(clf_context *ctx, clf_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* A failure st recorded on src, stage `stage` of a model whose errors are reported on dst:
 * src's message copied to dst, prefixed "stage N (device): " (nothing when src is dst). Returns
 * st. */
clf_status clf__relay_error(clf_context *dst, const clf_context *src, int stage, clf_status st);
/* Formats a message into a caller's buffer (buf may be NULL or size 0: nothing written). */
void clf__msg(char *buf, size_t size, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Records a warning on ctx (clf_context_last_warning); the call carries on. */
void clf__warn(clf_context *ctx, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Every public call with a context starts with this: a call that succeeds leaves no message. */
static inline void clf__clear_error(clf_context *ctx) {
    if (ctx && ctx->error) ctx->error[0] = '\0';
}
/* Same for an OpenCL error from call `what`. */
clf_status clf__cl_fail(clf_context *ctx, cl_int err, const char *what);
/* Name of an OpenCL error code ("CL_OUT_OF_RESOURCES"), or NULL if unknown. */
const char *clf__cl_error_name(cl_int err);

/* Gets (building on first use) library kernel `id`, variant `defs` (per-call -D macros, may be
 * NULL), with its work-group fitted to the device. local[0..dims) holds the requested local
 * size on entry (from tunables, or per call) and the size to launch with on return: within
 * CL_KERNEL_WORK_GROUP_SIZE, the device's work-item sizes and local memory, and the test cap,
 * with the sizes the kernel compiles in (clf_kernel_def.wg_macro) built to match. A size it
 * must lower goes to the largest fitting power of two where the kernel needs one, else to a
 * multiple of CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE where one fits. Dims past `dims` are
 * 1. Fails (CLF_ERROR_UNSUPPORTED) only if not even one work-item fits. */
clf_status clf__kernel_fit(clf_context *ctx, clf_kernel_id id, const clf_defines *defs,
                           cl_uint dims, size_t *local, cl_kernel *out);
/* The same with the local size its tunables request (kernels launched without one, warm-up). */
clf_status clf__kernel(clf_context *ctx, clf_kernel_id id, cl_kernel *out);
/* Lowers local[0..dims) until their product is at most limit (see clf__kernel_fit); false if it
 * cannot (host-only; tested without a device). */
bool clf__wg_shrink(size_t *local, const unsigned char *pow2, cl_uint dims, size_t limit,
                    size_t multiple);
/* Test-only: caps every kernel's work-group at `cap` work-items (0: off), as a device that allows
 * fewer would; drops the kernels built so far. */
void clf__wg_cap_set(clf_context *ctx, size_t cap);
/* Row kernels on a device with a loop budget: the power-of-two work-items per row (at least
 * wg) that keep `passes` passes over a row of n floats in vectors of vw within the budget. */
size_t clf__row_wg_for_budget(const clf_context *ctx, int64_t n, int64_t vw, int passes, size_t wg);
/* A row kernel of three passes over rows of n floats (softmax_rows, layernorm_rows), its local
 * size (WG work-items per row, RPG rows) requested by "<program>.WG/.RPG", raised for the loop
 * budget, fitted to the device, and checked against the budget. */
clf_status clf__row_kernel(clf_context *ctx, clf_kernel_id id, int64_t n, cl_kernel *out,
                           size_t local[2]);
/* Fails (CLF_ERROR_UNSUPPORTED, naming the kernel) when a work-item's `iters` loop iterations
 * exceed the device's loop budget. */
clf_status clf__check_loops(clf_context *ctx, clf_kernel_id id, int64_t iters);
/* Test-only: sets the loop budget (see clf_context.loop_budget; 0: none), as llvmpipe has one. */
void clf__loop_budget_set(clf_context *ctx, int64_t budget);
/* The budget a device needs: llvmpipe's 65535 loop iterations per work-item, halved; else 0. */
int64_t clf__device_loop_budget(const clf_device_info *info);
/* Releases the kernels of program `prog` (CLF_PROG_COUNT: all), e.g. after a tunable changed. */
void clf__drop_kernels(clf_context *ctx, clf_prog_id prog);
/* Enqueues a kernel after checking the local size against CL_KERNEL_WORK_GROUP_SIZE; with
 * profiling, waits for it and adds its device time. local may be NULL. */
clf_status clf__launch(clf_context *ctx, clf_kernel_id id, cl_kernel k, cl_uint dims,
                       const size_t *global, const size_t *local);
/* With profiling: waits for ev, adds its device time to the totals and to slot's (a kernel id,
 * CLF_PROF_GEMM or CLF_PROF_COPY), releases it. */
clf_status clf__profile_event(clf_context *ctx, cl_event ev, int slot);
/* clf_tensor_write without waiting: host must stay unchanged until *ev (set) completes; the
 * caller waits on and releases it. Later commands of the (in-order) queue see the data. */
clf_status clf__tensor_write_async(clf_tensor *t, const void *host, size_t bytes, cl_event *ev);
/* clf_embedding; in_range 1: the ids are known to be in the vocabulary (written from checked host
 * values), so they are not read back to be checked. */
clf_status clf__embedding(clf_context *ctx, const clf_tensor *ids, const clf_tensor *table,
                          float scale, int add_posenc, int64_t pos_offset, clf_tensor *out,
                          int in_range);
/* clf_rope on a decoder step's fused QKV rows x (B, T, W) from column 0 (p->heads: the query
 * heads and then kv_heads key heads, whole heads rotated), also storing each real row's key and
 * value heads (the kv_heads heads after the rotated ones) into cache (B, max_len, 2 kv_heads Dh),
 * F32 or F16, at the row's position: a real row is one whose lens (B, T) entry is its position + 1
 * (clf__lm_attend's valid lengths; padding rows are not stored). */
clf_status clf__rope_append(clf_context *ctx, clf_tensor *x, const clf_rope_params *p,
                            int64_t kv_heads, clf_tensor *cache, const clf_tensor *lens);
/* Maps a CLBlast status (OpenCL codes pass through) to a clf_status with a detail message. */
clf_status clf__clblast_fail(clf_context *ctx, int code, const char *what);
/* Applies the GEMM tuning in force for the context's device (file, built-in, or none); a
 * malformed file leaves a warning in ctx->error. */
void clf__gemm_tuning_init(clf_context *ctx);
/* Gives the context its id for the CLBlast lock; before clf__gemm_tuning_init. */
void clf__gemm_tuning_register(clf_context *ctx);
/* Every CLBlast call runs between these: takes the process-wide CLBlast lock and re-applies this
 * context's GEMM parameters to its device when another context changed them (CLBlast keeps them
 * per device for the whole process). On failure the lock is not held. */
clf_status clf__gemm_lock(clf_context *ctx);
void clf__gemm_unlock(void);
void clf__gemm_release(void);
/* Linear layers with weights packed once (CPUs, linear.PACK): w (out, in) into panels of
 * linear.PK_NV x VW output columns, a (panels, in, width) tensor (block types: (panels, width,
 * in), each block of width rows transposed); then y = act(x W^T + b)
 * through the linear_packed kernel. The packing is tied to the tunables in force when packed. */
clf_status clf__linear_pack(clf_context *ctx, const clf_tensor *w, clf_tensor **packed);
/* A GLU's gate | up weights w (2F, in), the gate's F rows then the up's, packed with each panel's
 * first half the gate's and second half the up's rows of the same F / (2 panels) outputs
 * (linear.cl, panel_row), so that one kernel can multiply them (clf__linear_packed_gated); where
 * clf__linear_gates says so (linear.GLU, an even linear.PK_NV). */
clf_status clf__linear_pack_gated(clf_context *ctx, const clf_tensor *w, clf_tensor **packed);
bool clf__linear_gates(const clf_context *ctx, clf_dtype t, int64_t out);
/* Whether weights of type t are packed into panels on this context (linear.PACK, and for block
 * types linear.VW 16): the models' and clf_linear_prepare's test. */
bool clf__linear_packs(const clf_context *ctx, clf_dtype t);
/* Builds linear_rows' variants for 1, 2 and 4 rows (those below linear.SK_ROWS: a decode step's)
 * with F32 weights, for clf_context_warmup. */
clf_status clf__linear_rows_warmup(clf_context *ctx);
/* Rows per linear_packed work-item for `rows` rows: linear.PK_R, or for fewer (a decode step)
 * the largest power of two up to them below 8 (linear_packed_1, _2, _4), so that one token does
 * not also multiply PK_R - 1 rows of zeros (a decode step would turn compute-bound). */
int64_t clf__linear_packed_rows(const clf_context *ctx, int64_t rows);

/* One launch of the packed kernels (linear.cl's packed_args): for each of `batch` matrices t,
 * y[r, o] = alpha act(sum_k x[r, k] w[o, k] + bias[o]) + beta y[r, o] (y not read when beta is
 * 0), x[r, k] at x_off + t x_bs + r x_rs + k x_ks, y[r, o] at y_off + t y_bs + r y_rs + o, the
 * panels of w (clf__pack_panels) at t wp_bs. */
typedef struct clf_packed_call {
    cl_mem x;
    int64_t x_off, x_rs, x_ks, x_bs, rows;
    cl_mem wp;
    int64_t wp_bs;
    clf_dtype wtype; /* the panels' type: F32, F16 or BF16 */
    cl_mem bias;     /* (out), or NULL */
    int has_bias, act;
    cl_mem y;
    int64_t y_off, y_rs, y_bs;
    float alpha, beta;
    int64_t in, out, batch;
    cl_mem norm_g; /* (in): x is RMSNorm's input, the product takes x rs norm_g (linear_packed_lq),
                    * or NULL */
    float eps;
    int gate; /* 1: gated panels (clf__linear_pack_gated); 2: also the GLU, y (rows, out / 2) */
} clf_packed_call;
clf_status clf__packed_run(clf_context *ctx, const clf_packed_call *c);
/* Packs `batch` matrices W_t (out, in), W_t[o][k] at w + off + t bs + o os + k ks, into panels
 * wp (batch, ceil(out / PW), in, PW), PW = linear.PK_NV x linear.VW (gated: linear.cl's
 * panel_row). */
clf_status clf__pack_panels(clf_context *ctx, cl_mem w, clf_dtype wtype, int64_t off, int64_t os,
                            int64_t ks, int64_t bs, int64_t in, int64_t out, int64_t batch,
                            int gated, cl_mem wp);
/* What a packed block-type linear of one or two rows (decoding) fuses: g not NULL, an RMSNorm of
 * x (its gamma (in) and eps) before the product, the norm's launch saved; acc, y += the result
 * (beta 1: the residual add). Only where clf__linear_fuses says so. */
typedef struct clf_lin_fuse {
    const clf_tensor *g;
    float eps;
    int acc;
} clf_lin_fuse;
/* Packed weights wp of rows rows of x take clf_lin_fuse (linear_packed_lq1, _2). */
bool clf__linear_fuses(const clf_context *ctx, const clf_tensor *wp, int64_t rows);
/* f: NULL, or what to fuse (clf__linear_fuses has said yes). */
clf_status clf__linear_packed(clf_context *ctx, const clf_tensor *x, const clf_tensor *wp,
                              int64_t out, const clf_tensor *bias, clf_activation act,
                              clf_tensor *y, const clf_lin_fuse *f);
/* clf__linear_packed on gated panels wp of out = 2F outputs: glu 0, y (..., 2F) as W's rows
 * order them (gate then up); glu 1, y (..., F) = act(x W_gate^T + b_gate) (x W_up^T + b_up),
 * gated_act's product, in the same launch. */
clf_status clf__linear_packed_gated(clf_context *ctx, const clf_tensor *x, const clf_tensor *wp,
                                    int64_t out, const clf_tensor *bias, clf_activation act,
                                    int glu, clf_tensor *y, const clf_lin_fuse *f);
/* One part of a stack of linear weights of different types (models: a GGUF file's Q4_K attn_q
 * and attn_k beside a Q6_K attn_v): y[r, col + o] = act(x W^T + bias)[r, o] for the out outputs
 * of w (out, in) or its packed panels, into y (..., Y) whose other columns are left as they are.
 * act is identity or ReLU (the caller runs any other once over all of y); clformer's kernels
 * only (CLBlast writes whole rows). The caller has checked the shapes. */
clf_status clf__linear_cols(clf_context *ctx, const clf_tensor *x, const clf_tensor *w, int64_t out,
                            const clf_tensor *bias, clf_activation act, clf_tensor *y, int64_t col,
                            const clf_lin_fuse *f);
/* Validates a whole safetensors file held in memory, as clf_safetensors_open does (host-only;
 * for fuzzing). */
clf_status clf__safetensors_check(const unsigned char *data, size_t size, size_t *count,
                                  clf_error *err);
/* Parses and validates a whole GGUF file held in memory into g (clf_gguf_open's checks; for
 * fuzzing); on failure g holds nothing and err says why. clf__gguf_release frees what a success
 * allocated (not the buffer). */
clf_status clf__gguf_parse(const unsigned char *data, size_t size, clf_gguf *g, char *err,
                           size_t es);
void clf__gguf_release(clf_gguf *g);
/* Drops the pages of a file mapping wholly inside [p, p + n) from the resident set once their
 * bytes are on the device (they stay in the page cache; a later read faults them back in). */
void clf__release_pages(const void *p, size_t n);
/* The size of struct clf_gguf (the fuzz target allocates one). */
size_t clf__gguf_struct_size(void);
/* Tuning files: <tuning dir>/<kind>/<hash of the device>.json, NULL without a tuning folder
 * (malloc'ed). */
char *clf__tuning_path(const clf_context *ctx, const char *kind);
/* Adds the device's identity to root, writes it (consumed) atomically to this device's <kind>
 * file and its path into path_out. */
struct cJSON;
clf_status clf__tuning_save(clf_context *ctx, const char *kind, struct cJSON *root, char *path_out,
                            size_t path_size);
/* Loads this device's attention tuning file, if any; a malformed one leaves a warning in
 * ctx->error and is ignored. */
void clf__attention_tuning_init(clf_context *ctx);
/* Parses an attention tuning file's text into tiles[CLF_ATT_TILES_MAX] (host-only; for tests and
 * fuzzing); false with why if it is not a valid one. */
bool clf__attention_tuning_parse(const char *text, int64_t max_wg, clf_att_tile *tiles, int *n,
                                 const char **why);
/* The (QB, BQ) for attention with head size dh: explicit tunables, else the tuned pair for dh
 * (returns true), else the tunables' defaults. */
bool clf__attention_tiles(const clf_context *ctx, int64_t dh, int64_t *qb, int64_t *bq);
/* Validates the text of a GEMM tuning file (host-only; for tests and fuzzing). */
bool clf__gemm_tuning_parse(const char *text, const char **why);

/* Sets kernel arguments: pairs of (size_t size, const void *value), terminated by size 0. */
clf_status clf__set_args(clf_context *ctx, cl_kernel k, ...);

/* Builds or fetches a program for (source, options). The program stays owned by ctx. */
clf_status clf__program_get(clf_context *ctx, const char *source, const char *options,
                            cl_program *out);
/* The full source of a library program (common.cl + <name>.cl), malloc'ed. */
clf_status clf__program_source(clf_context *ctx, clf_prog_id prog, char **out);

/* Fills *info from a device. */
clf_status clf__device_query(cl_platform_id platform, cl_device_id device, clf_device_info *info);
/* Picks a device from a list by spec (host-only logic, see clf_context_params.device_spec).
 * Returns CLF_SUCCESS and *index, or CLF_ERROR_NO_DEVICE / CLF_ERROR_INVALID_ARGUMENT. */
clf_status clf__device_match(const clf_device_info *list, uint32_t n, const char *spec,
                             uint32_t *index);

/* True for a simulator (Oclgrind), from its platform or device name. */
bool clf__is_simulator(const clf_device_info *info);

/* Selects a device by spec and returns its handles; on failure writes a message naming the
 * existing devices into msg. */
clf_status clf__device_pick(const char *spec, clf_device_info *info, cl_platform_id *platform,
                            cl_device_id *device, char *msg, size_t msg_size);

void clf__fault_set(clf_context *ctx, clf_fault_kind kind, int64_t after);
/* Counts a call of `kind`; true when it is the one that must fail. */
bool clf__fault(clf_context *ctx, clf_fault_kind kind);

/* A device scratch buffer of at least `bytes`, owned by the context (valid until the next call
 * that asks for a larger one; the queue is in order, so queued users are safe). */
clf_status clf__scratch(clf_context *ctx, size_t bytes, cl_mem *out);

/* Tensor checks used by every op. Each returns CLF_SUCCESS or records a detail message. */
clf_status clf__check_tensor(clf_context *ctx, const clf_tensor *t, const char *what,
                             clf_dtype dtype);
/* Formats a shape like "[2, 3, 4]" into buf. */
const char *clf__shape_str(const clf_tensor *t, char *buf, size_t size);
bool clf__same_shape(const clf_tensor *a, const clf_tensor *b);

/* Value in force of a tunable. */
static inline int64_t clf__tun(const clf_context *ctx, clf_tunable_id id) {
    return ctx->tunables[id];
}
/* A mask as the masked kernels take it (see common.cl's clf_visible_keys). */
typedef struct clf_mask_args {
    cl_mem lens;   /* valid lengths, or a buffer never read when lens_mode is 0 */
    int lens_mode; /* 0: none, 1: (B) per batch, 2: (B, nq) per query */
    int causal;
    int64_t causal_offset;
    int window; /* 0: none */
} clf_mask_args;
/* Checks mask (may be NULL) for scores of `batch` x `nq` queries and fills out; `what` names the
 * op in the message; fallback is any valid buffer (src/ops/mask.c). */
clf_status clf__check_mask(clf_context *ctx, const clf_mask *mask, int64_t batch, int64_t nq,
                           const char *what, cl_mem fallback, clf_mask_args *out);
/* Checks that out is a distinct-or-same f32 tensor of x's shape. */
clf_status clf__check_out(clf_context *ctx, const clf_tensor *x, const clf_tensor *out);
/* Checks that a row length fits the kernels' int arithmetic. */
clf_status clf__check_int(clf_context *ctx, int64_t v, const char *what);

static inline size_t clf__round_up(size_t n, size_t m) {
    return (n + m - 1) / m * m;
}

/* Overflow-checked size arithmetic: returns false on overflow. */
static inline bool clf__mul_size(size_t a, size_t b, size_t *out) {
    if (a != 0 && b > SIZE_MAX / a) return false;
    *out = a * b;
    return true;
}

#endif /* CLFORMER_INTERNAL_H */
