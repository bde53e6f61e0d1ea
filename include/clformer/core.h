/*
 * clformer/core.h — status codes, devices, the context and tensors.
 * Part of clformer's public API; include <clformer/clformer.h>, which includes every part.
 */
#ifndef CLFORMER_CORE_H
#define CLFORMER_CORE_H

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

/* A call's result. OpenCL's own error codes (-1 .. -999) are returned unchanged, as values of
 * this type (CL_OUT_OF_RESOURCES is -5 here too); clformer's own codes are named below. */
typedef enum clf_status {
    CLF_SUCCESS = 0,
    CLF_OPENCL_ERROR_LAST = -999,       /* OpenCL errors are -1 .. CLF_OPENCL_ERROR_LAST */
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
    CLF_ERROR_INTERNAL = -1011,         /* a bug in clformer: please report it */
    CLF_ERROR_NOT_FOUND = -1012         /* a key or name that is not there (the lowest code) */
} clf_status;

/* Errors: a call with a context leaves what went wrong in the context (clf_context_last_error).
 * A call without one (context creation, device selection, the file loaders) takes a clf_error
 * (or NULL) instead: on failure its message says what went wrong; on success it is "". Warnings
 * (a tuning file that was ignored) are apart from both: clf_context_last_warning. */
typedef struct clf_error {
    char message[2048];
} clf_error;

/* Static description of a status; never NULL; valid for the whole process. */
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
    int has_fma;      /* 1: fused multiply-add in hardware (CL_FP_FMA in its float config) */
} clf_device_info;

/* Lists every device of every platform. Writes up to `capacity` entries to `infos` (may be NULL
 * when capacity is 0) and the total number to *count. No platform at all yields *count = 0 and
 * CLF_SUCCESS. */
CLF_API clf_status clf_device_list(clf_device_info *infos, uint32_t capacity, uint32_t *count);

/* Picks a device by spec (see clf_context_params.device_spec). On failure err (may be NULL) says
 * why and names the existing devices. */
CLF_API clf_status clf_device_select(const char *spec, clf_device_info *out, clf_error *err);

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
    int enable_profiling; /* 1: time every kernel (clf_context_profile) */
    /* 1 (default): keep built programs' binaries on disk, except on PoCL, whose own kernel
     * cache (POCL_CACHE_DIR) already gives a warm start and which compiles every kernel of a
     * program to hand out its binary; 2: on every implementation, PoCL too; 0: off. */
    int disk_cache;
    const char *cache_dir;  /* NULL: $XDG_CACHE_HOME/clformer, else $HOME/.cache/clformer */
    const char *kernel_dir; /* developer override: read kernels/<name>.cl from here */
    /* Developer option (scripts/gpu-compile-check.sh): record every library kernel the context
     * creates in this folder (made if absent): each program's full source as <key>.cl and its
     * build options as <key>.opts, and a line per kernel in kernels.tsv: key, __kernel name,
     * the local size it launches with (3 numbers; 1 1 1 also where the launch leaves it to the
     * driver), the variant's per-call defines ("DH=64 VW=4 ..."), the device name. NULL: off. */
    const char *program_log_dir;
    /* Developer option (scripts/gpu-compile-check.sh, on Oclgrind): choose tunables as on that
     * vendor's GPU, "nvidia", "amd-cdna" (gfx9: 64-wide wavefronts), "amd-rdna" (gfx10+: 32-wide)
     * or "intel", whatever the device is; the device's own limits still apply. NULL: off. */
    const char *device_profile;
    clf_error *error; /* optional: why clf_context_create failed (no context to ask) */
    /* 1 (default): give CLBlast this device's saved GEMM tuning (clf_gemm_tune), else the
     * built-in values for its device type; 0: leave CLBlast's own defaults. CLBlast keeps
     * overrides per device for the whole process, so contexts on one device share them. */
    int gemm_tuning;
    /* Developer option, with program_log_dir (scripts/gpu-compile-check.sh): build, fit and
     * record every library kernel as above but enqueue none of them, so that a simulator records
     * a profile's programs without running them; outputs are left unwritten. A launch is still
     * checked as the driver would check it (its work-group within what the kernel allows, the
     * global size a multiple of it). 0 (default): off. */
    int program_log_only;
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

/* What went wrong in the last call on this context: its detail message if it failed, "" if it
 * succeeded. Valid until the next call on the context. */
CLF_API const char *clf_context_last_error(const clf_context *ctx);
/* The last warning on this context (e.g. a tuning file that was malformed and ignored at
 * creation), "" if none. Warnings never make a call fail and are not cleared by later calls. */
CLF_API const char *clf_context_last_warning(const clf_context *ctx);

CLF_API clf_status clf_context_device_info(const clf_context *ctx, clf_device_info *out);
/* The context's OpenCL objects, owned by it (retain them to keep them past clf_context_free). */
CLF_API cl_context clf_context_cl_context(const clf_context *ctx);
CLF_API cl_device_id clf_context_cl_device(const clf_context *ctx);
CLF_API cl_command_queue clf_context_cl_queue(const clf_context *ctx);

/* Waits for all queued work. */
CLF_API clf_status clf_context_finish(clf_context *ctx);

/* Builds every library program and creates its kernels now, with the tunables in force, instead
 * of at first use; the variants later calls launch are then built (or loaded from the disk
 * cache) already. Attention is the exception: its kernels are built per head size (and tile) by
 * the first call with that head size. */
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
/* The same per kernel (its __kernel name; "clblast_gemm" for CLBlast's GEMMs, "buffer_copy"
 * for buffer copies): fills out[0 .. min(max, *n) - 1] with every kernel run since the last
 * reset, in a fixed order, and sets *n to how many there are (max 0 and out NULL: just count).
 * Names are static strings. */
typedef struct clf_kernel_profile {
    const char *name;
    uint64_t ns;    /* device time, CL_PROFILING_COMMAND_START to _END, summed */
    uint64_t count; /* launches */
} clf_kernel_profile;
CLF_API clf_status clf_context_profile_kernels(clf_context *ctx, clf_kernel_profile *out,
                                               size_t max, size_t *n);
CLF_API clf_status clf_context_profile_reset(clf_context *ctx);

/* Builds (through the context's program cache) a kernel from caller-provided OpenCL C source;
 * the caller releases the returned kernel. A source that does not compile yields
 * CLF_ERROR_BUILD_FAILED with the full build log in clf_context_last_error(). */
CLF_API clf_status clf_context_build_kernel(clf_context *ctx, const char *source,
                                            const char *options, const char *kernel_name,
                                            cl_kernel *out);

/* ---------------------------------------------------------------- tensors */

#define CLF_MAX_DIMS 4

/* Storage types (the table, with block layouts: dtypes.def). F32 is every op's type; F16 and BF16
 * store weights (F16 also K/V caches) and the block types Q8_0, Q4_0, Q4_K and Q6_K hold linear
 * weights and embeddings as ggml lays them out, each row a whole number of blocks (the last
 * dimension a multiple of clf_dtype_block). The math is fp32 whatever the storage. */
typedef enum {
#define CLF_DTYPE(name, value, ...) CLF_##name = value,
#include "dtypes.def"
#undef CLF_DTYPE
    CLF__DTYPE_END
} clf_dtype;

typedef struct clf_tensor clf_tensor;

/* Allocates an uninitialized device tensor. Sizes are checked for overflow and against the
 * device's max allocation. */
CLF_API clf_status clf_tensor_create(clf_context *ctx, clf_dtype dtype, int ndim,
                                     const int64_t *shape, clf_tensor **out);
CLF_API void clf_tensor_free(clf_tensor *t);

/* Blocking transfers; `bytes` must equal clf_tensor_bytes(t). */
CLF_API clf_status clf_tensor_write(clf_tensor *t, const void *host, size_t bytes);
CLF_API clf_status clf_tensor_read(const clf_tensor *t, void *host, size_t bytes);
/* Floats in and out of a floating tensor (F32 or F16: the storage type; math stays fp32), count
 * = its element count. Into F16 each value is rounded to nearest even; a finite value past
 * F16's range (|x| > 65504) is refused with its index, and nothing is written. */
CLF_API clf_status clf_tensor_write_f32(clf_tensor *t, const float *host, int64_t count);
CLF_API clf_status clf_tensor_read_f32(const clf_tensor *t, float *host, int64_t count);
/* IEEE binary16 bits from a float (round to nearest even; overflow gives an infinity) and back. */
CLF_API uint16_t clf_f32_to_f16(float f);
CLF_API float clf_f16_to_f32(uint16_t h);
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
/* The tensor's buffer, owned by it: valid until clf_tensor_free (retain it to keep it). */
CLF_API cl_mem clf_tensor_cl_mem(const clf_tensor *t);
/* Bytes per element of a plain type; 0 for a block type or an unknown value. */
CLF_API size_t clf_dtype_size(clf_dtype dtype);
/* The type's name as GGUF and ggml write it ("F32", "Q4_K"), or NULL for an unknown value. */
CLF_API const char *clf_dtype_name(clf_dtype dtype);
/* The type of a name, any case ("q4_0", "F16"): CLF_SUCCESS, or CLF_ERROR_INVALID_ARGUMENT. */
CLF_API clf_status clf_dtype_from_name(const char *name, clf_dtype *out);
/* Elements per block (1 for a plain type) and bytes per block; 0 for an unknown value. */
CLF_API int64_t clf_dtype_block(clf_dtype dtype);
CLF_API size_t clf_dtype_block_bytes(clf_dtype dtype);
/* Bytes of a row of n elements; 0 when n is not a whole number of blocks, negative, or the type
 * unknown. */
CLF_API size_t clf_dtype_row_bytes(clf_dtype dtype, int64_t n);
/* Converts n floats into dtype's storage at dst (dst_bytes = clf_dtype_row_bytes(dtype, n)):
 * F32, F16 and BF16 (round to nearest even), Q8_0 and Q4_0 bit for bit as ggml and the gguf
 * package quantize (per block: Q8_0 d = max|x| / 127, q = round(x / d); Q4_0 d = x_max / -8 for
 * the x of largest magnitude, q = min(15, trunc(x / d + 8.5))); Q4_K and Q6_K by a plain fit
 * (each sub-block's range covered by its scale and min rounded up: every element within half a
 * step), not llama-quantize's error-minimizing search, so their bytes differ from its files'.
 * I32: CLF_ERROR_UNSUPPORTED.
 * Non-finite input is refused (CLF_ERROR_INVALID_ARGUMENT, with its index in err). */
CLF_API clf_status clf_quantize(clf_dtype dtype, const float *src, int64_t n, void *dst,
                                size_t dst_bytes, clf_error *err);
/* The reverse for every type but I32: n floats from src (src_bytes = clf_dtype_row_bytes). */
CLF_API clf_status clf_dequantize(clf_dtype dtype, const void *src, size_t src_bytes, float *dst,
                                  int64_t n, clf_error *err);

#ifdef __cplusplus
}
#endif

#endif /* CLFORMER_CORE_H */
