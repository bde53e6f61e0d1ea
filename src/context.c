/*
 * context.c — the clformer context: device choice, OpenCL context and queue, tunables in force,
 * program cache, profiling counters, last error. Everything mutable lives here.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

clf_context_params clf_context_default_params(void) {
    clf_context_params p;
    memset(&p, 0, sizeof(p));
    p.disk_cache = 1;
    p.gemm_tuning = 1;
    return p;
}

static void set_buf(const clf_context_params *p, const char *msg) {
    if (p && p->error) snprintf(p->error->message, sizeof(p->error->message), "%s", msg);
}

/* Common part of both constructors, after cl_ctx/device/queue are set and retained. */
static clf_status finish_setup(clf_context *ctx, const clf_context_params *p) {
    if (p->device_profile && clf__device_profile(&ctx->info, p->device_profile) != 0) {
        char msg[300];
        snprintf(msg, sizeof(msg),
                 "device_profile '%.200s' is none of nvidia, amd-cdna, amd-rdna, intel",
                 p->device_profile);
        set_buf(p, msg);
        return CLF_ERROR_INVALID_ARGUMENT;
    }
    for (int i = 0; i < CLF_FAULT_KINDS; i++)
        ctx->fault_at[i] = -1;
    ctx->loop_budget = clf__device_loop_budget(&ctx->info);
    /* Per-dimension work-item limits (kernels fit their work-groups within them). */
    cl_uint item_dims = 0;
    if (clGetDeviceInfo(ctx->device, CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS, sizeof(item_dims),
                        &item_dims, NULL) == CL_SUCCESS &&
        item_dims >= 3 && item_dims <= 16) {
        size_t sizes[16];
        if (clGetDeviceInfo(ctx->device, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof(sizes), sizes,
                            NULL) == CL_SUCCESS)
            for (int d = 0; d < 3; d++)
                ctx->max_item[d] = sizes[d];
    }
    ctx->error = calloc(1, 1);
    ctx->tunables = calloc(clf__tunable_count, sizeof(int64_t));
    ctx->tunable_set = calloc(clf__tunable_count, 1);
    if (!ctx->error || !ctx->tunables || !ctx->tunable_set) return CLF_ERROR_OUT_OF_MEMORY;
    /* llvmpipe is a CPU device that runs 8 work-items per SIMD instruction (one per lane), so
     * PoCL's habits (one work-item per group, wide vectors per work-item) leave 7 lanes idle:
     * it takes the tunables of "other" devices (groups of 16-64, float4). test_minilm on
     * rusticl: over 900 s with the CPU column, see the portability notes in the README. */
    const clf_device_type style = ctx->loop_budget > 0 ? CLF_DEVICE_OTHER : ctx->info.type;
    for (size_t i = 0; i < clf__tunable_count; i++)
        ctx->tunables[i] = clf__tunable_default(&clf__tunable_defs[i], style);
    /* Local-memory attention where local memory is on chip (GPUs; Oclgrind says so too), not
     * by device type: PoCL and llvmpipe keep it in ordinary memory. */
    ctx->tunables[CLF_T_ATTENTION_LOCAL_KV] = ctx->info.local_mem_dedicated ? 1 : 0;
    if (style == CLF_DEVICE_CPU) clf__isa_defaults(&ctx->info, ctx->tunables);
    if (style == CLF_DEVICE_GPU) clf__gpu_defaults(&ctx->info, ctx->tunables);
    /* disk_cache 1 (auto) leaves PoCL to its own kernel cache (POCL_CACHE_DIR, on by default):
     * PoCL builds a program's binary by compiling every kernel in it, so fetching the binary
     * multiplied a cold build's time (test_linear: 245 s against 55 s, 2-core EPYC, 2026-12-05)
     * for a warm start PoCL gives anyway. 2 stores binaries on every implementation. */
    ctx->disk_cache = p->disk_cache;
    if (p->disk_cache == 1 && clf__ci_contains(ctx->info.platform_name, "portable computing"))
        ctx->disk_cache = 0;
    if (ctx->disk_cache) {
        ctx->cache_dir = p->cache_dir ? strdup(p->cache_dir) : clf__default_cache_dir();
        /* No cache folder at all (no HOME): run without a disk cache rather than fail. */
    }
    if (p->kernel_dir) {
        ctx->kernel_dir = strdup(p->kernel_dir);
        if (!ctx->kernel_dir) return CLF_ERROR_OUT_OF_MEMORY;
    }
    if (p->program_log_dir) {
        ctx->program_log_dir = strdup(p->program_log_dir);
        if (!ctx->program_log_dir) return CLF_ERROR_OUT_OF_MEMORY;
        if (clf__make_dirs(ctx->program_log_dir) != 0) {
            char msg[600];
            snprintf(msg, sizeof(msg), "program_log_dir '%.500s' cannot be created",
                     p->program_log_dir);
            set_buf(p, msg);
            return CLF_ERROR_IO;
        }
    }
    if (p->program_log_only && !p->program_log_dir) {
        set_buf(p, "program_log_only needs a program_log_dir");
        return CLF_ERROR_INVALID_ARGUMENT;
    }
    ctx->program_log_only = p->program_log_only != 0;
    ctx->tuning = calloc(1, sizeof(*ctx->tuning));
    if (!ctx->tuning) return CLF_ERROR_OUT_OF_MEMORY;
    ctx->tuning->dir = p->cache_dir ? strdup(p->cache_dir) : clf__default_cache_dir();
    snprintf(ctx->tuning->gemm_source, sizeof(ctx->tuning->gemm_source), "clblast");
    clf__gemm_tuning_register(ctx);
    if (p->gemm_tuning) clf__gemm_tuning_init(ctx);
    clf__attention_tuning_init(ctx);
    return CLF_SUCCESS;
}

clf_status clf_context_create(clf_context **out, const clf_context_params *params) {
    clf_context_params defaults = clf_context_default_params();
    const clf_context_params *p = params ? params : &defaults;
    if (!out) {
        set_buf(p, "clf_context_create: out is NULL");
        return CLF_ERROR_INVALID_ARGUMENT;
    }
    *out = NULL;
    const char *spec = p->device_spec;
    if (!spec) spec = getenv("CLF_DEVICE");

    clf_context *ctx = calloc(1, sizeof(*ctx));
    if (!ctx) {
        set_buf(p, "out of host memory");
        return CLF_ERROR_OUT_OF_MEMORY;
    }
    char msg[2048];
    clf_status st =
        clf__device_pick(spec, &ctx->info, &ctx->platform, &ctx->device, msg, sizeof(msg));
    if (st != CLF_SUCCESS) {
        set_buf(p, msg);
        free(ctx);
        return st;
    }
    cl_int err;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)ctx->platform, 0};
    ctx->cl_ctx = clCreateContext(props, 1, &ctx->device, NULL, NULL, &err);
    if (err != CL_SUCCESS) {
        snprintf(msg, sizeof(msg), "clCreateContext failed on '%s': %s (%d)", ctx->info.name,
                 clf_strerror(err), (int)err);
        set_buf(p, msg);
        free(ctx);
        return err;
    }
    ctx->profiling = p->enable_profiling ? 1 : 0;
    ctx->queue = clCreateCommandQueue(ctx->cl_ctx, ctx->device,
                                      ctx->profiling ? CL_QUEUE_PROFILING_ENABLE : 0, &err);
    if (err != CL_SUCCESS) {
        snprintf(msg, sizeof(msg), "clCreateCommandQueue failed on '%s': %s (%d)", ctx->info.name,
                 clf_strerror(err), (int)err);
        set_buf(p, msg);
        clf_context_free(ctx);
        return err;
    }
    st = finish_setup(ctx, p);
    if (st != CLF_SUCCESS) {
        if (st == CLF_ERROR_OUT_OF_MEMORY) set_buf(p, "out of host memory");
        clf_context_free(ctx);
        return st;
    }
    *out = ctx;
    return CLF_SUCCESS;
}

clf_status clf_context_create_from_cl(clf_context **out, cl_context cl_ctx, cl_device_id device,
                                      cl_command_queue queue, const clf_context_params *params) {
    clf_context_params defaults = clf_context_default_params();
    const clf_context_params *p = params ? params : &defaults;
    if (!out || !cl_ctx || !device || !queue) {
        set_buf(p, "clf_context_create_from_cl: NULL argument");
        return CLF_ERROR_INVALID_ARGUMENT;
    }
    *out = NULL;
    cl_context qctx = NULL;
    cl_device_id qdev = NULL;
    cl_command_queue_properties qprops = 0;
    cl_int err = clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof(qctx), &qctx, NULL);
    if (err == CL_SUCCESS)
        err = clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof(qdev), &qdev, NULL);
    if (err == CL_SUCCESS)
        err = clGetCommandQueueInfo(queue, CL_QUEUE_PROPERTIES, sizeof(qprops), &qprops, NULL);
    if (err != CL_SUCCESS) {
        set_buf(p, "clf_context_create_from_cl: the queue cannot be queried");
        return err;
    }
    if (qctx != cl_ctx || qdev != device) {
        set_buf(p, "clf_context_create_from_cl: the queue belongs to another context or device");
        return CLF_ERROR_INVALID_ARGUMENT;
    }
    if (qprops & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) {
        set_buf(p, "clf_context_create_from_cl: the queue must be in-order");
        return CLF_ERROR_UNSUPPORTED;
    }
    clf_context *ctx = calloc(1, sizeof(*ctx));
    if (!ctx) return CLF_ERROR_OUT_OF_MEMORY;
    cl_platform_id platform = NULL;
    err = clGetDeviceInfo(device, CL_DEVICE_PLATFORM, sizeof(platform), &platform, NULL);
    if (err == CL_SUCCESS) err = clf__device_query(platform, device, &ctx->info);
    if (err != CL_SUCCESS) {
        set_buf(p, "clf_context_create_from_cl: the device cannot be queried");
        free(ctx);
        return err;
    }
    ctx->platform = platform;
    ctx->cl_ctx = cl_ctx;
    ctx->device = device;
    ctx->queue = queue;
    clRetainContext(cl_ctx);
    clRetainCommandQueue(queue);
    ctx->profiling = (qprops & CL_QUEUE_PROFILING_ENABLE) ? 1 : 0;
    clf_status st = finish_setup(ctx, p);
    if (st != CLF_SUCCESS) {
        if (st == CLF_ERROR_OUT_OF_MEMORY) set_buf(p, "out of host memory");
        clf_context_free(ctx);
        return st;
    }
    *out = ctx;
    return CLF_SUCCESS;
}

void clf_context_free(clf_context *ctx) {
    if (!ctx) return;
    if (ctx->queue) clFinish(ctx->queue);
    clf__drop_kernels(ctx, CLF_PROG_COUNT);
    free(ctx->kernels);
    if (ctx->scratch) clReleaseMemObject(ctx->scratch);
    for (size_t i = 0; i < ctx->n_progs; i++)
        clReleaseProgram(ctx->progs[i].program);
    free(ctx->progs);
    if (ctx->queue) clReleaseCommandQueue(ctx->queue);
    if (ctx->ran_clblast) clf__gemm_release();
    if (ctx->cl_ctx) clReleaseContext(ctx->cl_ctx);
    free(ctx->cache_dir);
    if (ctx->tuning) free(ctx->tuning->dir);
    free(ctx->tuning);
    free(ctx->kernel_dir);
    free(ctx->program_log_dir);
    free(ctx->tunables);
    free(ctx->tunable_set);
    free(ctx->error);
    free(ctx->warning);
    free(ctx);
}

clf_status clf_context_device_info(const clf_context *ctx, clf_device_info *out) {
    if (!ctx || !out) return CLF_ERROR_INVALID_ARGUMENT;
    *out = ctx->info;
    return CLF_SUCCESS;
}

cl_context clf_context_cl_context(const clf_context *ctx) {
    return ctx ? ctx->cl_ctx : NULL;
}
cl_device_id clf_context_cl_device(const clf_context *ctx) {
    return ctx ? ctx->device : NULL;
}
cl_command_queue clf_context_cl_queue(const clf_context *ctx) {
    return ctx ? ctx->queue : NULL;
}

clf_status clf_context_finish(clf_context *ctx) {
    if (!ctx) return CLF_ERROR_INVALID_ARGUMENT;
    clf__clear_error(ctx);
    cl_int err = clFinish(ctx->queue);
    return err == CL_SUCCESS ? CLF_SUCCESS : clf__cl_fail(ctx, err, "clFinish");
}

clf_status clf_context_warmup(clf_context *ctx) {
    if (!ctx) return CLF_ERROR_INVALID_ARGUMENT;
    for (int i = 0; i < CLF_K_COUNT; i++) {
        /* Attention's kernels are built per head size, vector width and tile (clf_defines of the
         * call), which warm-up cannot know: their first call per head size builds them. */
        const clf_prog_id prog = clf__kernel_defs[i].prog;
        if (prog == CLF_PROG_ATTENTION || prog == CLF_PROG_ATTENTION_LOCAL) continue;
        if (i == CLF_K_PACK_BLOCKS || i == CLF_K_UNPACK_BLOCKS || i == CLF_K_QUANTIZE_X ||
            i == CLF_K_LINEAR_PACKED_XQ || i == CLF_K_LINEAR_PACKED_LQ1 ||
            i == CLF_K_LINEAR_PACKED_LQ2)
            continue; /* block types' only: not in the F32 program */
        cl_kernel k;
        clf_status st = clf__kernel(ctx, (clf_kernel_id)i, &k);
        if (st != CLF_SUCCESS) return st;
    }
    /* linear_rows at fewer rows than linear.SK_ROWS (decoding) is a variant of its own */
    return clf__linear_rows_warmup(ctx);
}

clf_status clf_context_set_tunable(clf_context *ctx, const char *name, int64_t value) {
    if (!ctx) return CLF_ERROR_INVALID_ARGUMENT;
    clf__clear_error(ctx);
    int i = clf__tunable_find(name);
    if (i < 0)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "unknown tunable '%s'",
                         name ? name : "(null)");
    const clf_tunable_def *d = &clf__tunable_defs[i];
    if (value < d->min || value > d->max || (d->pow2 && (value & (value - 1))))
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                         "tunable %s = %lld: must be in %lld..%lld%s", name, (long long)value,
                         (long long)d->min, (long long)d->max,
                         d->pow2 ? " and a power of two" : "");
    if (i == CLF_T_LINEAR_VNNI && value && !clf__x86_vnni(&ctx->info))
        return clf__fail(ctx, CLF_ERROR_UNSUPPORTED,
                         "tunable %s = 1 needs PoCL's CPU device on an x86-64 host with "
                         "AVX512-BW and AVX512-VNNI; device '%s' is not",
                         name, ctx->info.name);
    ctx->tunable_set[i] = 1;
    if (ctx->tunables[i] == value) return CLF_SUCCESS;
    ctx->tunables[i] = value;
    /* Rebuild that program's kernels (through the program cache) at next use. */
    clf__drop_kernels(ctx, d->prog);
    return CLF_SUCCESS;
}

clf_status clf_context_get_tunable(const clf_context *ctx, const char *name, int64_t *value) {
    if (!ctx || !value) return CLF_ERROR_INVALID_ARGUMENT;
    int i = clf__tunable_find(name);
    if (i < 0) return CLF_ERROR_INVALID_ARGUMENT;
    *value = ctx->tunables[i];
    return CLF_SUCCESS;
}

clf_status clf_context_cache_stats(const clf_context *ctx, clf_cache_stats *out) {
    if (!ctx || !out) return CLF_ERROR_INVALID_ARGUMENT;
    *out = ctx->stats;
    return CLF_SUCCESS;
}

clf_status clf_context_profile(clf_context *ctx, uint64_t *kernel_ns, uint64_t *kernel_count) {
    if (!ctx || !kernel_ns) return CLF_ERROR_INVALID_ARGUMENT;
    if (!ctx->profiling)
        return clf__fail(ctx, CLF_ERROR_UNSUPPORTED,
                         "profiling is off: create the context with enable_profiling = 1");
    *kernel_ns = ctx->prof_ns;
    if (kernel_count) *kernel_count = ctx->prof_count;
    return CLF_SUCCESS;
}

clf_status clf_context_profile_kernels(clf_context *ctx, clf_kernel_profile *out, size_t max,
                                       size_t *n) {
    if (!ctx || !n || (max > 0 && !out)) return CLF_ERROR_INVALID_ARGUMENT;
    if (!ctx->profiling)
        return clf__fail(ctx, CLF_ERROR_UNSUPPORTED,
                         "profiling is off: create the context with enable_profiling = 1");
    size_t w = 0;
    for (int i = 0; i < CLF_PROF_SLOTS; i++) {
        if (ctx->prof_each_count[i] == 0) continue;
        if (w < max) {
            out[w].name = i == CLF_PROF_GEMM   ? "clblast_gemm"
                          : i == CLF_PROF_COPY ? "buffer_copy"
                                               : clf__kernel_defs[i].name;
            out[w].ns = ctx->prof_each_ns[i];
            out[w].count = ctx->prof_each_count[i];
        }
        w++;
    }
    *n = w;
    return CLF_SUCCESS;
}

clf_status clf_context_profile_reset(clf_context *ctx) {
    if (!ctx) return CLF_ERROR_INVALID_ARGUMENT;
    clf__clear_error(ctx);
    ctx->prof_ns = 0;
    ctx->prof_count = 0;
    memset(ctx->prof_each_ns, 0, sizeof(ctx->prof_each_ns));
    memset(ctx->prof_each_count, 0, sizeof(ctx->prof_each_count));
    return CLF_SUCCESS;
}

clf_status clf_context_build_kernel(clf_context *ctx, const char *source, const char *options,
                                    const char *kernel_name, cl_kernel *out) {
    if (!ctx) return CLF_ERROR_INVALID_ARGUMENT;
    clf__clear_error(ctx);
    if (!source || !kernel_name || !out)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                         "clf_context_build_kernel: source, kernel_name and out are required");
    cl_program prog;
    clf_status st = clf__program_get(ctx, source, options ? options : "", &prog);
    if (st != CLF_SUCCESS) return st;
    cl_int err;
    *out = clCreateKernel(prog, kernel_name, &err);
    if (err != CL_SUCCESS) {
        *out = NULL;
        return clf__fail(ctx, err, "clCreateKernel('%s') failed: %s (%d)", kernel_name,
                         clf_strerror(err), (int)err);
    }
    return CLF_SUCCESS;
}

clf_status clf__scratch(clf_context *ctx, size_t bytes, cl_mem *out) {
    if (bytes > ctx->info.max_alloc_bytes)
        return clf__fail(ctx, CLF_ERROR_SIZE_LIMIT,
                         "scratch of %zu bytes exceeds the device's max allocation of %llu", bytes,
                         (unsigned long long)ctx->info.max_alloc_bytes);
    if (ctx->scratch && ctx->scratch_bytes >= bytes) {
        *out = ctx->scratch;
        return CLF_SUCCESS;
    }
    cl_int err = CL_MEM_OBJECT_ALLOCATION_FAILURE;
    cl_mem m = clf__fault(ctx, CLF_FAULT_ALLOC)
                   ? NULL
                   : clCreateBuffer(ctx->cl_ctx, CL_MEM_READ_WRITE, bytes ? bytes : 4, NULL, &err);
    if (err != CL_SUCCESS) return clf__cl_fail(ctx, err, "clCreateBuffer (scratch)");
    if (ctx->scratch) clReleaseMemObject(ctx->scratch); /* queued users keep it alive */
    ctx->scratch = m;
    ctx->scratch_bytes = bytes;
    *out = m;
    return CLF_SUCCESS;
}
