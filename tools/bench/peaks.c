/*
 * peaks.c — the device's ceilings, measured with our own small kernels as clpeak does: global
 * copy bandwidth (float, float4, float16 loads), fp32 FMA throughput, host<->device transfers,
 * kernel launch latency (queued back to back and round trip), and cold vs warm program start.
 */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK_CL(call, what)                                                                       \
    do {                                                                                           \
        cl_int e_ = (call);                                                                        \
        if (e_ != CL_SUCCESS) {                                                                    \
            fprintf(stderr, "clformer-bench: %s failed: %s (%d)\n", what, clf_strerror(e_), e_);   \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

/* Time (ms) of one launch, from batches of `batch` launches each ended by clFinish: the median
 * of the samples, or the best one if `best` (a ceiling is the best the device can do). */
static double time_kernel(cl_command_queue q, cl_kernel k, size_t global, const size_t *local,
                          int batch, int samples, int best) {
    double t[64];
    if (samples > 64) samples = 64;
    clEnqueueNDRangeKernel(q, k, 1, NULL, &global, local, 0, NULL, NULL); /* warm-up */
    clFinish(q);
    for (int s = 0; s < samples; s++) {
        double t0 = bench_now_ms();
        for (int b = 0; b < batch; b++)
            if (clEnqueueNDRangeKernel(q, k, 1, NULL, &global, local, 0, NULL, NULL) != CL_SUCCESS)
                return -1.0;
        clFinish(q);
        t[s] = (bench_now_ms() - t0) / batch;
    }
    double m = bench_median(t, samples); /* sorts t */
    return best ? t[0] : m;
}

/* Best copy bandwidth (read + write bytes) of `size` bytes each way from a to b: float, float4
 * and float16 loads, work-groups of 64, 256 and 1024. out[3]: per load width; *width and *local
 * (either may be NULL): the winner's. */
static int copy_best(clf_context *ctx, const bench_opts *o, cl_kernel kc[3], cl_mem a, cl_mem b,
                     size_t size, double out[3], int *width, size_t *local) {
    double best = 0;
    cl_command_queue q = clf_context_cl_queue(ctx);
    clf_device_info info;
    clf_context_device_info(ctx, &info);
    const size_t widths[3] = {1, 4, 16}, locals[3] = {64, 256, 1024};
    for (int i = 0; i < 3; i++) {
        CHECK_CL(clSetKernelArg(kc[i], 0, sizeof(cl_mem), &a), "clSetKernelArg");
        CHECK_CL(clSetKernelArg(kc[i], 1, sizeof(cl_mem), &b), "clSetKernelArg");
        out[i] = 0;
        const size_t global = size / (4 * widths[i]);
        for (int l = 0; l < 3; l++) {
            if (locals[l] > info.max_work_group_size || global % locals[l]) continue;
            double ms = time_kernel(q, kc[i], global, &locals[l], 4, o->samples, 1);
            double gbps = ms > 0 ? 2.0 * (double)size / (ms * 1e6) : 0;
            if (gbps > out[i]) out[i] = gbps;
            if (gbps > best) {
                best = gbps;
                if (width) *width = (int)widths[i];
                if (local) *local = locals[l];
            }
        }
    }
    return 0;
fail:
    return 1;
}

int bench_peaks_measure(clf_context *ctx, const bench_opts *o, bench_peaks *p) {
    cl_context c = clf_context_cl_context(ctx);
    cl_command_queue q = clf_context_cl_queue(ctx);
    clf_device_info info;
    clf_context_device_info(ctx, &info);
    cl_kernel kc[3] = {NULL, NULL, NULL}, kf = NULL, ke = NULL;
    cl_mem a = NULL, b = NULL;
    void *host = NULL;
    int rc = 1;
    /* Copy at two sizes: DRAM (each buffer >= 4x the last-level cache, at least 64 MiB) and
     * cache-resident (both buffers within half of it). A 16 MiB copy on a 32 MiB L3 measures the
     * cache, not memory: the DRAM figure is the memory roof. */
    cl_ulong llc = 0;
    if (clGetDeviceInfo(clf_context_cl_device(ctx), CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, sizeof(llc),
                        &llc, NULL) != CL_SUCCESS ||
        llc == 0)
        llc = (cl_ulong)32 << 20;
    p->llc_bytes = (double)llc;
    size_t bytes = (size_t)llc * 4;
    if (bytes < ((size_t)64 << 20)) bytes = (size_t)64 << 20;
    /* GPUs: at least 512 MiB. Their drivers under-report the last level (an H200 says 4 MiB of a
     * 50 MB L2), and a 64 MiB pass there lasts ~20 us, about twice a launch's round trip. */
    if (info.type != CLF_DEVICE_CPU && bytes < ((size_t)512 << 20)) bytes = (size_t)512 << 20;
    while (bytes > info.max_alloc_bytes || bytes > info.global_mem_bytes / 4)
        bytes /= 2;
    p->dram_bytes = (double)bytes;
    size_t cache_size = (size_t)llc / 4;
    cache_size = cache_size / 4096 * 4096;
    if (cache_size < 65536) cache_size = 65536;
    /* The host CPU's own ceilings, for CPU devices (the OpenCL device runs on it), before any
     * OpenCL work is queued and with the queue drained: measured while PoCL's workers still
     * filled the buffers below (queued, not waited for), the native FMA loop read 230-330
     * GFLOP/s where it reads 464-488 alone (2 Zen 5 cores, AVX-512). */
    p->native_fma_gflops = p->native_copy_gbps = p->native_read_gbps = 0;
    p->native_isa[0] = '\0';
    if (info.type == CLF_DEVICE_CPU) {
        clFinish(q);
        bench_progress("peaks: native C ceilings (%s FMA, memcpy %.0f MiB each way)",
                       bench_native_isa(), (double)bytes / 1048576.0);
        p->native_fma_gflops = bench_native_fma_gflops();
        p->native_copy_gbps = bench_native_copy_gbps(bytes);
        p->native_read_gbps = bench_native_read_gbps(bytes);
        snprintf(p->native_isa, sizeof(p->native_isa), "%s", bench_native_isa());
    }
    cl_int err;
    a = clCreateBuffer(c, CL_MEM_READ_WRITE, bytes, NULL, &err);
    CHECK_CL(err, "clCreateBuffer");
    b = clCreateBuffer(c, CL_MEM_READ_WRITE, bytes, NULL, &err);
    CHECK_CL(err, "clCreateBuffer");
    float zero = 0.0f;
    CHECK_CL(clEnqueueFillBuffer(q, a, &zero, sizeof(zero), 0, bytes, 0, NULL, NULL), "fill");
    CHECK_CL(clEnqueueFillBuffer(q, b, &zero, sizeof(zero), 0, bytes, 0, NULL, NULL), "fill");

    const char *names[3] = {"copy1", "copy4", "copy16"};
    bench_progress("peaks: copy bandwidth (DRAM: %.0f MiB each way; cache: %.0f MiB)",
                   (double)bytes / 1048576.0, (double)cache_size / 1048576.0);
    for (int i = 0; i < 3; i++)
        if (bench_build_kernel(ctx, names[i], "", &kc[i])) goto fail;
    double dram[3], cache[3];
    p->copy_best_width = 1;
    p->copy_best_local = 64;
    if (copy_best(ctx, o, kc, a, b, bytes, dram, &p->copy_best_width, &p->copy_best_local) ||
        copy_best(ctx, o, kc, a, b, cache_size, cache, NULL, NULL))
        goto fail;
    p->copy1_gbps = dram[0];
    p->copy4_gbps = dram[1];
    p->copy16_gbps = dram[2];
    p->cl_copy_gbps = p->cache_copy_gbps = 0;
    for (int i = 0; i < 3; i++) {
        if (dram[i] > p->cl_copy_gbps) p->cl_copy_gbps = dram[i];
        if (cache[i] > p->cache_copy_gbps) p->cache_copy_gbps = cache[i];
    }

    /* Reads: read16 over the DRAM-sized buffer, both orders, work-groups of 64 and 256. */
    bench_progress("peaks: read bandwidth (DRAM: %.0f MiB)", (double)bytes / 1048576.0);
    p->cl_read_gbps = 0;
    p->read_best_contig = 1;
    p->read_best_local = 64;
    for (int contig = 0; contig <= 1; contig++) {
        char opts[48];
        snprintf(opts, sizeof(opts), "-DRD=16 -DCONTIG=%d", contig);
        if (bench_build_kernel(ctx, "read16", opts, &kf)) goto fail;
        CHECK_CL(clSetKernelArg(kf, 0, sizeof(cl_mem), &a), "clSetKernelArg");
        CHECK_CL(clSetKernelArg(kf, 1, sizeof(cl_mem), &b), "clSetKernelArg");
        const size_t global = bytes / (64 * 16), locals[2] = {64, 256};
        for (int l = 0; l < 2; l++) {
            if (locals[l] > info.max_work_group_size || global % locals[l]) continue;
            double ms = time_kernel(q, kf, global, &locals[l], 4, o->samples, 1);
            double gbps = ms > 0 ? (double)bytes / (ms * 1e6) : 0;
            if (gbps > p->cl_read_gbps) {
                p->cl_read_gbps = gbps;
                p->read_best_contig = contig;
                p->read_best_local = locals[l];
            }
        }
        clReleaseKernel(kf);
        kf = NULL;
    }

    /* FMA: every (vector width, chains, fma or mad) shape, the best kept. fma() only where the
     * device says it is fused (CL_FP_FMA): elsewhere it is emulated in software (libclc's on
     * llvmpipe, whose config lacks CL_FP_FMA) and never the ceiling: there they made a --quick
     * run 6 min 58 s instead of 48 s (rusticl, 2 Zen 5 cores) and timed test_bench out in CI. */
    cl_device_fp_config fpc = 0;
    if (clGetDeviceInfo(clf_context_cl_device(ctx), CL_DEVICE_SINGLE_FP_CONFIG, sizeof(fpc), &fpc,
                        NULL) != CL_SUCCESS)
        fpc = 0;
    const int has_fma = (fpc & CL_FP_FMA) != 0;
    bench_progress("peaks: fp32 FMA (%d kernel shapes)", has_fma ? 18 : 9);
    p->cl_fma_gflops = 0;
    p->fma_best_fused = has_fma;
    {
        size_t global = (size_t)info.compute_units * 1024, local = 64;
        if (local > info.max_work_group_size) local = info.max_work_group_size;
        global = (global + local - 1) / local * local;
        const int fws[3] = {4, 8, 16}, fchs[3] = {4, 8, 12};
        for (int fused = has_fma; fused >= 0; fused--)
            for (int w = 0; w < 3; w++)
                for (int h = 0; h < 3; h++) {
                    char opts[64];
                    snprintf(opts, sizeof(opts), "-DFW=%d -DFCH=%d -DFOP=%s", fws[w], fchs[h],
                             fused ? "fma" : "mad");
                    if (bench_build_kernel(ctx, "fma_chains", opts, &kf)) goto fail;
                    float fa = 0.999999f, fb = 1e-7f;
                    /* 32768 lane-FMAs per chain: shorter runs under-read the peak on PoCL
                     * (thread start-up) */
                    cl_int iters = 32768 / fws[w];
                    CHECK_CL(clSetKernelArg(kf, 0, sizeof(cl_mem), &a), "clSetKernelArg");
                    CHECK_CL(clSetKernelArg(kf, 1, sizeof(float), &fa), "clSetKernelArg");
                    CHECK_CL(clSetKernelArg(kf, 2, sizeof(float), &fb), "clSetKernelArg");
                    CHECK_CL(clSetKernelArg(kf, 3, sizeof(cl_int), &iters), "clSetKernelArg");
                    double ms = time_kernel(q, kf, global, &local, 1, o->samples, 1);
                    double g =
                        ms > 0 ? (double)global * iters * fchs[h] * fws[w] * 2 / (ms * 1e6) : 0;
                    if (g > p->cl_fma_gflops) {
                        p->cl_fma_gflops = g;
                        p->fma_best_width = fws[w];
                        p->fma_best_chains = fchs[h];
                        p->fma_best_fused = fused;
                        snprintf(p->cl_fma_variant, sizeof(p->cl_fma_variant),
                                 "float%d x %d chains, %s", fws[w], fchs[h], fused ? "fma" : "mad");
                    }
                    clReleaseKernel(kf);
                    kf = NULL;
                }
    }
    p->copy_gbps = p->cl_copy_gbps > p->native_copy_gbps ? p->cl_copy_gbps : p->native_copy_gbps;
    p->read_gbps = p->cl_read_gbps > p->native_read_gbps ? p->cl_read_gbps : p->native_read_gbps;
    p->fma_gflops =
        p->cl_fma_gflops > p->native_fma_gflops ? p->cl_fma_gflops : p->native_fma_gflops;

    /* Transfers: blocking write/read, and map for reading. */
    bench_progress("peaks: host<->device transfers");
    host = malloc(bytes);
    if (!host) goto fail;
    memset(host, 1, bytes);
    {
        double tw[16], tr[16], tm[16];
        int n = o->samples > 16 ? 16 : o->samples;
        for (int s = 0; s < n; s++) {
            double t0 = bench_now_ms();
            CHECK_CL(clEnqueueWriteBuffer(q, a, CL_TRUE, 0, bytes, host, 0, NULL, NULL), "write");
            double t1 = bench_now_ms();
            CHECK_CL(clEnqueueReadBuffer(q, a, CL_TRUE, 0, bytes, host, 0, NULL, NULL), "read");
            double t2 = bench_now_ms();
            void *m = clEnqueueMapBuffer(q, a, CL_TRUE, CL_MAP_READ, 0, bytes, 0, NULL, NULL, &err);
            CHECK_CL(err, "map");
            volatile float sink = 0;
            for (size_t i = 0; i < bytes / 4; i += 1024)
                sink += ((float *)m)[i];
            (void)sink;
            CHECK_CL(clEnqueueUnmapMemObject(q, a, m, 0, NULL, NULL), "unmap");
            clFinish(q);
            double t3 = bench_now_ms();
            tw[s] = t1 - t0;
            tr[s] = t2 - t1;
            tm[s] = t3 - t2;
        }
        p->h2d_gbps = (double)bytes / (bench_median(tw, n) * 1e6);
        p->d2h_gbps = (double)bytes / (bench_median(tr, n) * 1e6);
        p->map_gbps = (double)bytes / (bench_median(tm, n) * 1e6);
    }

    /* Launch latency: an empty kernel queued back to back, and with clFinish after each. */
    bench_progress("peaks: launch latency");
    if (bench_build_kernel(ctx, "empty", "", &ke)) goto fail;
    CHECK_CL(clSetKernelArg(ke, 0, sizeof(cl_mem), &a), "clSetKernelArg");
    {
        size_t global = 1, local = 1;
        const int n = o->quick ? 200 : 1000;
        CHECK_CL(clEnqueueNDRangeKernel(q, ke, 1, NULL, &global, &local, 0, NULL, NULL), "launch");
        clFinish(q);
        double t0 = bench_now_ms();
        for (int i = 0; i < n; i++)
            CHECK_CL(clEnqueueNDRangeKernel(q, ke, 1, NULL, &global, &local, 0, NULL, NULL),
                     "launch");
        clFinish(q);
        double t1 = bench_now_ms();
        for (int i = 0; i < n / 4; i++) {
            CHECK_CL(clEnqueueNDRangeKernel(q, ke, 1, NULL, &global, &local, 0, NULL, NULL),
                     "launch");
            clFinish(q);
        }
        double t2 = bench_now_ms();
        p->launch_us = (t1 - t0) * 1e3 / n;
        p->roundtrip_us = (t2 - t1) * 1e3 / (n / 4);
    }
    rc = 0;
fail:
    for (int i = 0; i < 3; i++)
        if (kc[i]) clReleaseKernel(kc[i]);
    if (kf) clReleaseKernel(kf);
    if (ke) clReleaseKernel(ke);
    if (a) clReleaseMemObject(a);
    if (b) clReleaseMemObject(b);
    free(host);
    return rc;
}

/* Context creation plus the first use of every kernel, with the program cache in `dir`. */
static double start_once(const bench_opts *o, const char *dir) {
    clf_context_params params = clf_context_default_params();
    params.device_spec = o->spec;
    params.cache_dir = dir;
    params.gemm_tuning = 0;
    clf_error msg = {""};
    params.error = &msg;
    double t0 = bench_now_ms();
    clf_context *ctx = NULL;
    if (clf_context_create(&ctx, &params) != CLF_SUCCESS) {
        fprintf(stderr, "clformer-bench: %s\n", msg.message);
        return -1;
    }
    int bad = bench_ops_touch_all(ctx);
    clf_context_finish(ctx);
    double t1 = bench_now_ms();
    clf_context_free(ctx);
    return bad ? -1 : t1 - t0;
}

int bench_start_times(const bench_opts *o, bench_peaks *p) {
    char dir[512];
    snprintf(dir, sizeof(dir), "%s/clformer-cache", o->tmp_dir);
    /* Start-up is about clformer's own programs: leave CLBlast's parameters alone. */
    bench_progress("peaks: cold program start (empty caches)");
    p->cold_start_ms = start_once(o, dir);
    bench_progress("peaks: warm program start");
    p->warm_start_ms = start_once(o, dir);
    return (p->cold_start_ms < 0 || p->warm_start_ms < 0) ? 1 : 0;
}
