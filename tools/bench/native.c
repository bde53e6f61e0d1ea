/*
 * native.c — the CPU's own ceilings, measured in plain C on every online core, next to the
 * OpenCL ones: a ceiling must be real, not what our own kernels happen to reach.
 *   FMA: 12 independent vector FMA chains per thread (12 accumulators fit AVX2's 16 registers
 *        with the two constants; AVX-512 has 32), in the widest ISA the CPU has, chosen at run
 *        time (AVX-512F, AVX2+FMA, else scalar fmaf), so one build runs on any x86-64.
 *   read: a sum of `bytes` split over the threads, 8 independent 64-bit accumulators per thread
 *        (scalar loads: a core issues them far faster than DRAM delivers), best of several runs.
 *   copy: memcpy of `bytes` each way split over the threads, best of several runs (read +
 *        written bytes), at a size far past the last-level cache for DRAM.
 */
#include "bench.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CLF_X86 1
#endif

#define CHAINS 12

typedef struct fma_job {
    long iters;
    int isa; /* 2: AVX-512F, 1: AVX2+FMA, 0: scalar */
    float sink;
} fma_job;

/* 12 named accumulators (an array risks living in memory): one FMA each per iteration. */
#define CHAINS_DECL(T, init)                                                                       \
    T x0 = init(0.0f), x1 = init(1.0f), x2 = init(2.0f), x3 = init(3.0f), x4 = init(4.0f),         \
      x5 = init(5.0f), x6 = init(6.0f), x7 = init(7.0f), x8 = init(8.0f), x9 = init(9.0f),         \
      x10 = init(10.0f), x11 = init(11.0f)
#define CHAINS_STEP(F)                                                                             \
    x0 = F(x0, a, b);                                                                              \
    x1 = F(x1, a, b);                                                                              \
    x2 = F(x2, a, b);                                                                              \
    x3 = F(x3, a, b);                                                                              \
    x4 = F(x4, a, b);                                                                              \
    x5 = F(x5, a, b);                                                                              \
    x6 = F(x6, a, b);                                                                              \
    x7 = F(x7, a, b);                                                                              \
    x8 = F(x8, a, b);                                                                              \
    x9 = F(x9, a, b);                                                                              \
    x10 = F(x10, a, b);                                                                            \
    x11 = F(x11, a, b)
#define CHAINS_SUM(ADD)                                                                            \
    ADD(ADD(ADD(ADD(x0, x1), ADD(x2, x3)), ADD(ADD(x4, x5), ADD(x6, x7))),                         \
        ADD(ADD(x8, x9), ADD(x10, x11)))

#ifdef CLF_X86
__attribute__((target("avx512f"))) static float fma_avx512(long iters) {
    const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
    CHAINS_DECL(__m512, _mm512_set1_ps);
    for (long i = 0; i < iters; i++) {
        CHAINS_STEP(_mm512_fmadd_ps);
    }
    return _mm512_reduce_add_ps(CHAINS_SUM(_mm512_add_ps));
}

__attribute__((target("avx2,fma"))) static float fma_avx2(long iters) {
    const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
    CHAINS_DECL(__m256, _mm256_set1_ps);
    for (long i = 0; i < iters; i++) {
        CHAINS_STEP(_mm256_fmadd_ps);
    }
    float t[8];
    _mm256_storeu_ps(t, CHAINS_SUM(_mm256_add_ps));
    return t[0] + t[7];
}
#endif

static float scalar_init(float v) {
    return v;
}
static float scalar_add(float x, float y) {
    return x + y;
}

static float fma_scalar(long iters) {
    const float a = 0.999999f, b = 1e-7f;
    CHAINS_DECL(float, scalar_init);
    for (long i = 0; i < iters; i++) {
        CHAINS_STEP(fmaf);
    }
    return CHAINS_SUM(scalar_add);
}

static int isa_lanes(int isa) {
    return isa == 2 ? 16 : isa == 1 ? 8 : 1;
}

static void *fma_thread(void *arg) {
    fma_job *j = arg;
#ifdef CLF_X86
    if (j->isa == 2)
        j->sink = fma_avx512(j->iters);
    else if (j->isa == 1)
        j->sink = fma_avx2(j->iters);
    else
#endif
        j->sink = fma_scalar(j->iters);
    return NULL;
}

static int best_isa(void) {
#ifdef CLF_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return 2;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return 1;
#endif
    return 0;
}

const char *bench_native_isa(void) {
    const int isa = best_isa();
    return isa == 2 ? "AVX-512F" : isa == 1 ? "AVX2+FMA" : "scalar";
}

static int online_cpus(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 256 ? 256 : (int)n;
}

/* One run of `iters` FMA iterations per thread on every online core: GFLOP/s (0 if no thread
 * started). */
static double fma_run(long iters) {
    const int nt = online_cpus(), isa = best_isa();
    fma_job jobs[256];
    pthread_t th[256];
    const double t0 = bench_now_ms();
    int started = 0;
    for (int t = 0; t < nt; t++) {
        jobs[t] = (fma_job){iters, isa, 0};
        if (pthread_create(&th[t], NULL, fma_thread, &jobs[t]) != 0) break;
        started++;
    }
    for (int t = 0; t < started; t++)
        pthread_join(th[t], NULL);
    const double ms = bench_now_ms() - t0;
    const double flops = (double)started * iters * CHAINS * isa_lanes(isa) * 2;
    return ms > 0 ? flops / (ms * 1e6) : 0;
}

double bench_native_fma_gflops(void) {
    const long iters = best_isa() ? 20000000L : 2000000L; /* ~0.1-0.3 s per thread */
    double best = 0;
    for (int rep = 0; rep < 3; rep++) {
        const double g = fma_run(iters);
        if (g > best) best = g;
    }
    return best;
}

double bench_native_fma_sample(void) {
    return fma_run(best_isa() ? 1000000L : 100000L); /* ~5-15 ms */
}

typedef struct copy_job {
    const char *src;
    char *dst;
    size_t n;
} copy_job;

static void *copy_thread(void *arg) {
    copy_job *j = arg;
    memcpy(j->dst, j->src, j->n);
    return NULL;
}

double bench_native_copy_gbps(size_t bytes) {
    const int nt = online_cpus();
    char *src = malloc(bytes), *dst = malloc(bytes);
    double best = 0;
    if (!src || !dst) goto done;
    memset(src, 1, bytes);
    memset(dst, 0, bytes); /* touch every page before timing */
    copy_job jobs[256];
    pthread_t th[256];
    const size_t per = bytes / (size_t)nt / 64 * 64;
    for (int rep = 0; rep < 5; rep++) {
        const double t0 = bench_now_ms();
        int started = 0;
        for (int t = 0; t < nt; t++) {
            const size_t off = (size_t)t * per, n = t == nt - 1 ? bytes - off : per;
            jobs[t] = (copy_job){src + off, dst + off, n};
            if (pthread_create(&th[t], NULL, copy_thread, &jobs[t]) != 0) break;
            started++;
        }
        for (int t = 0; t < started; t++)
            pthread_join(th[t], NULL);
        const double ms = bench_now_ms() - t0;
        if (started == nt && ms > 0 && 2.0 * (double)bytes / (ms * 1e6) > best)
            best = 2.0 * (double)bytes / (ms * 1e6);
    }
done:
    free(src);
    free(dst);
    return best;
}

typedef struct read_job {
    const uint64_t *p;
    size_t n; /* words, a multiple of 8 */
    uint64_t sum;
} read_job;

static void *read_thread(void *arg) {
    read_job *j = arg;
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
    for (size_t i = 0; i < j->n; i += 8) {
        s0 += j->p[i];
        s1 += j->p[i + 1];
        s2 += j->p[i + 2];
        s3 += j->p[i + 3];
        s4 += j->p[i + 4];
        s5 += j->p[i + 5];
        s6 += j->p[i + 6];
        s7 += j->p[i + 7];
    }
    j->sum = s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7;
    return NULL;
}

double bench_native_read_gbps(size_t bytes) {
    const int nt = online_cpus();
    uint64_t *src = malloc(bytes);
    double best = 0;
    if (!src) return 0;
    memset(src, 1, bytes);
    read_job jobs[256];
    pthread_t th[256];
    const size_t words = bytes / 8, per = words / (size_t)nt / 8 * 8;
    volatile uint64_t sink = 0;
    for (int rep = 0; rep < 5; rep++) {
        const double t0 = bench_now_ms();
        int started = 0;
        for (int t = 0; t < nt; t++) {
            jobs[t] = (read_job){src + (size_t)t * per, per, 0};
            if (pthread_create(&th[t], NULL, read_thread, &jobs[t]) != 0) break;
            started++;
        }
        for (int t = 0; t < started; t++) {
            pthread_join(th[t], NULL);
            sink += jobs[t].sum;
        }
        const double ms = bench_now_ms() - t0;
        const double gb = 8.0 * (double)per * (double)nt / (ms * 1e6);
        if (started == nt && ms > 0 && gb > best) best = gb;
    }
    (void)sink;
    free(src);
    return best;
}
