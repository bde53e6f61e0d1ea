/*
 * bench.h — clformer-bench internals: shared helpers (util.c), device peaks (peaks.c), the timing
 * loop and the roof measured alongside the records (timing.c), op benchmarks (ops.c), layers and
 * models (model.c), output (report.c, plot.c), baselines (compare.c), command line (main.c).
 */
#ifndef CLF_BENCH_H
#define CLF_BENCH_H

#include "clformer/clformer.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The roof kernels run alongside memory-bound records (timing.c). */
typedef struct bench_roof {
    cl_command_queue q;
    cl_kernel copy, read, fma;
    cl_mem a, b;
    size_t bytes, copy_global, copy_local, read_global, read_local, fma_global, fma_local;
    double fma_flops; /* per launch of fma */
    int native;       /* CPU device: the compute roof is also sampled with the native loop */
} bench_roof;

typedef struct bench_opts {
    int quick;           /* shorter runs, same coverage */
    int samples;         /* timed samples per measurement (median reported) */
    const char *ops;     /* comma-separated op names, NULL: all */
    const char *spec;    /* device spec */
    const char *tmp_dir; /* scratch folder for the cold/warm start caches */
    int profile;         /* --profile: per-kernel device times (the context profiles) */
    bench_roof *roof;    /* set once the peaks are measured: the roof of paired samples */
} bench_opts;

typedef struct bench_peaks {
    /* The roofs every record is judged against: the best of the device's own kernels and, on CPU
     * devices, the native C loops (native.c). copy_gbps is DRAM bandwidth (buffers >= 4x the
     * last-level cache), never cache-resident. */
    double copy_gbps, fma_gflops;
    double copy1_gbps, copy4_gbps, copy16_gbps; /* OpenCL copy at DRAM size, by load width */
    double cl_copy_gbps;                        /* best of the three */
    double cache_copy_gbps;                     /* OpenCL copy, buffers within the cache */
    double cl_fma_gflops;                       /* best OpenCL FMA variant */
    char cl_fma_variant[40];                    /* e.g. "float8 x 12 chains, fma" */
    double native_fma_gflops, native_copy_gbps; /* plain C on the host CPU (CPU devices; else 0) */
    /* DRAM read bandwidth (bytes read; a step of decoding reads its weights and writes almost
     * nothing): the best of the OpenCL read16 kernels and, on CPU devices, a native read loop.
     * read_gbps is the roof of "read" records. */
    double read_gbps, cl_read_gbps, native_read_gbps;
    /* The winning OpenCL variants, which timing.c runs again beside the records. */
    int copy_best_width, read_best_contig, fma_best_width, fma_best_chains;
    int fma_best_fused; /* the FMA winner uses fma() (1) or mad() (0) */
    size_t copy_best_local, read_best_local;
    char native_isa[16];
    double llc_bytes;  /* the device's last-level (global memory) cache */
    double dram_bytes; /* bytes each way of the DRAM-sized copy (and of memory-bound op tensors) */
    double h2d_gbps, d2h_gbps, map_gbps;
    double launch_us, roundtrip_us;
    double cold_start_ms, warm_start_ms;
} bench_peaks;

typedef struct bench_result {
    char op[32];
    int ndim;
    int64_t shape[8];
    double ms, gflops, gbps, pct_peak;
    double roof_gbps;    /* memory and read records: the median roof of the paired samples
                          * (pct_peak is then the median per-pair ratio); 0: judged against
                          * the peaks measured at the start */
    double roof_gflops;  /* compute records: the same with the FMA roof */
    const char *bound;   /* "memory" (reads and writes: the copy roof), "read" (reads only: the
                          * read roof) or "compute" */
    int tuned;           /* GEMM: 1 tuned parameters in force, 0 CLBlast's defaults; -1 other ops */
    char params[96];     /* GEMM: where the parameters came from */
    double mem_bytes;    /* device memory the call needed (attention), 0 if not reported */
    char note[96];       /* e.g. why a record has no time */
    double tokens_per_s; /* layer records: tokens processed per second */
    int64_t context;     /* decoder_step: tokens in the KV cache */
    int64_t launches;    /* encoder_layer: kernels + CLBlast calls per layer */
    double sentences_per_s; /* model_minilm */
} bench_result;

typedef struct bench_results {
    bench_result *items;
    size_t n, cap;
} bench_results;

/* Embedded tools/bench_kernels.cl. */
struct clf_embedded_source {
    const char *name;
    const char *text;
};
extern const struct clf_embedded_source clf_bench_sources[];
extern const size_t clf_bench_count;

double bench_now_ms(void);
double bench_median(double *v, int n);
/* Times call(ctx, arg), the one timing loop of the records: `warmups` calls (the first builds the
 * kernels) and clf_context_finish, then `samples` samples of `batch` calls ending in
 * clf_context_finish; t[s] gets sample s's milliseconds per call. Returns the first failure. */
typedef clf_status (*bench_call_fn)(clf_context *ctx, void *arg);
clf_status bench_time_calls(clf_context *ctx, bench_call_fn call, void *arg, int warmups,
                            int samples, int batch, double *t);
/* One sample of the roofs: GB/s of the copy (bytes read + written) and of the read, or GFLOP/s
 * of the FMA kernel (on CPU devices the better of it and the native loop), as
 * bench_roof_sample's kind asks. */
typedef struct bench_roof_pair {
    double copy_gbps, read_gbps, fma_gflops;
} bench_roof_pair;
typedef enum { BENCH_ROOF_MEMORY, BENCH_ROOF_COMPUTE } bench_roof_kind;
/* The mean of two roof samples by time (the harmonic mean of the rates); 0 where either is 0. */
bench_roof_pair bench_roof_mean(bench_roof_pair a, bench_roof_pair b);
/* bench_time_calls with a sample of o->roof (of `kind`) before the first sample and after each:
 * roof[s] is the mean of the two around sample s (zeros without a roof). */
clf_status bench_time_paired(clf_context *ctx, const bench_opts *o, bench_call_fn call, void *arg,
                             int warmups, int samples, int batch, bench_roof_kind kind, double *t,
                             bench_roof_pair *roof);
void bench_progress(const char *fmt, ...);
/* Builds kernel `name` of the embedded bench kernels with `options`; prints the log, returns 1
 * on failure. */
int bench_build_kernel(clf_context *ctx, const char *name, const char *options, cl_kernel *k);
int bench_op_selected(const bench_opts *o, const char *op);
/* With --profile: prints to stdout the device time of each kernel run since the last report,
 * per rep (reps > 0: e.g. per decoding step) against wall_ms of wall-clock time per rep (0: none
 * known), then resets the counters. No-op without --profile. */
void bench_profile_report(clf_context *ctx, const bench_opts *o, const char *what, int reps,
                          double wall_ms);

/* Each returns 0, or prints the error to stderr and returns 1. */
int bench_peaks_measure(clf_context *ctx, const bench_opts *o, bench_peaks *p);
int bench_start_times(const bench_opts *o, bench_peaks *p);
int bench_ops_run(clf_context *ctx, const bench_opts *o, const bench_peaks *p, bench_results *r);
/* GEMM records at the Transformer's shapes; tuned says which parameters are in force. */
int bench_gemm_run(clf_context *ctx, const bench_opts *o, int tuned, bench_results *r);
/* linear, gemv, gemv_f16: clf_linear_apply with prepared weights (ops.c). */
int bench_linear_run(clf_context *ctx, const bench_opts *o, bench_results *r);
/* Attention records: tiled vs naive at growing N, and the decode path. */
int bench_attention_run(clf_context *ctx, const bench_opts *o, bench_results *r);
/* A tensor of dt and shape filled with value (ops.c); on an error prints it, sets *bad and
 * returns NULL (nothing is made once *bad is set). */
clf_tensor *bench_make(clf_context *ctx, clf_dtype dt, int ndim, const int64_t *shape, double value,
                       int *bad);
/* Layer records: encoder_layer (FMA peak fraction, tokens/s) and decoder_step per context. */
int bench_model_run(clf_context *ctx, const bench_opts *o, bench_results *r);
/* LLM records (llm.c): llm_prefill and llm_decode on a Llama-shaped random model. */
int bench_llm_run(clf_context *ctx, const bench_opts *o, bench_results *r);
/* Fills pct_peak of compute-bound records once the FMA peak is known. */
void bench_gemm_finish(const bench_peaks *p, bench_results *r);
int bench_add_result(bench_results *r, const bench_result *x);
/* A zeroed record of op with the given shape and bound ("memory" or "compute"), tuned = -1. */
bench_result bench_result_make(const char *op, int ndim, const int64_t *shape, const char *bound);
/* Runs every library op once on tiny inputs (first use of every kernel). */
int bench_ops_touch_all(clf_context *ctx);

/* The CPU's own ceilings in plain C (native.c): fp32 FMA rate on every online core in the widest
 * ISA it has, and memcpy bandwidth (read + write bytes) of `bytes` each way. */
double bench_native_fma_gflops(void);
/* One short run of the same loop (a few ms): the compute roof measured alongside a record. */
double bench_native_fma_sample(void);
double bench_native_copy_gbps(size_t bytes);
/* Bytes per second read by every online core summing `bytes` of memory, best of several runs. */
double bench_native_read_gbps(size_t bytes);
const char *bench_native_isa(void);

/* timing.c: builds the winning copy and read kernels of p over two DRAM-sized buffers. */
int bench_roof_init(clf_context *ctx, const bench_peaks *p, bench_roof *r);
/* One sample of the roofs of `kind` into *out (zeros without a roof: r NULL or not initialized).
 * Returns 1 if a launch failed. */
int bench_roof_sample(bench_roof *r, bench_roof_kind kind, bench_roof_pair *out);
void bench_roof_free(bench_roof *r);
/* Judges a record that reads rd bytes, writes wr bytes to memory it did not read and wi bytes in
 * place over memory it read, against the paired roof samples: pct_peak is the median over the
 * n pairs of the roof's time for those bytes over t[i] (ms), roof_gbps the median roof in GB/s
 * (the bytes over the roof's time). Leaves res alone if no pair has a roof. */
void bench_roof_judge(bench_result *res, double rd, double wr, double wi, const double *t,
                      const bench_roof_pair *roof, int n);
/* The same for a compute record of `flops` per call: pct_peak the median of flops / t[i] over the
 * paired FMA roof, roof_gflops the median roof. */
void bench_roof_judge_compute(bench_result *res, double flops, const double *t,
                              const bench_roof_pair *roof, int n);

void bench_print_table(const clf_device_info *d, const bench_peaks *p, const bench_results *r);
int bench_write_json(const char *path, const clf_device_info *d, const bench_peaks *p,
                     const bench_results *r);
int bench_write_csv(const char *path, const bench_results *r);
int bench_write_svg(const char *path, const clf_device_info *d, const bench_peaks *p,
                    const bench_results *r);
/* Reads the results of a saved JSON run (0 on success). */
int bench_load_results(const char *path, bench_results *r);
/* --floor OP=PCT: each named record's pct_peak against its floor, a line each to out; the count
 * under a floor or missing from cur. */
int bench_check_floors(const bench_results *cur, const char *const *floors, int n, FILE *out);
/* Prints each record's ratio to its baseline; returns the number of regressions. */
int bench_compare_results(const bench_results *cur, const bench_results *base, double threshold,
                          FILE *out);

#endif
