/*
 * util.c — what every part of clformer-bench shares: the clock, medians, progress lines, the
 * --ops filter and the list of results. Below every other bench file; calls none of them.
 */
#include "bench.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double bench_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(double *v, int n) {
    if (n <= 0) return 0;
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int bench_build_kernel(clf_context *ctx, const char *name, const char *options, cl_kernel *k) {
    clf_status st = clf_context_build_kernel(ctx, clf_bench_sources[0].text, options, name, k);
    if (st != CLF_SUCCESS) {
        fprintf(stderr, "clformer-bench: building %s: %s\n%s\n", name, clf_strerror(st),
                clf_context_last_error(ctx));
        return 1;
    }
    return 0;
}

void bench_progress(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "[clformer-bench] ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static int by_time(const void *a, const void *b) {
    const clf_kernel_profile *x = a, *y = b;
    return x->ns < y->ns ? 1 : x->ns > y->ns ? -1 : 0;
}

void bench_profile_report(clf_context *ctx, const bench_opts *o, const char *what, int reps,
                          double wall_ms) {
    if (!o->profile) return;
    clf_kernel_profile kp[64];
    size_t n = 0;
    uint64_t total = 0, count = 0;
    if (clf_context_profile_kernels(ctx, kp, 64, &n) != CLF_SUCCESS ||
        clf_context_profile(ctx, &total, &count) != CLF_SUCCESS) {
        fprintf(stderr, "clformer-bench: profile: %s\n", clf_context_last_error(ctx));
        return;
    }
    if (n > 64) n = 64;
    qsort(kp, n, sizeof(kp[0]), by_time);
    const double per = reps > 0 ? (double)reps : 1.0;
    const double kms = (double)total / 1e6 / per;
    printf("profile: %s: %.3f ms of kernels in %.1f launches%s", what, kms, (double)count / per,
           reps > 0 ? " per rep" : "");
    if (wall_ms > 0)
        printf(", wall %.3f ms (%.1f%% in kernels, %.3f ms between them)", wall_ms,
               100.0 * kms / wall_ms, wall_ms - kms);
    printf("\n");
    for (size_t i = 0; i < n; i++)
        printf("  %-24s %9.3f ms %7.1f launches %5.1f%%  %8.1f us each\n", kp[i].name,
               (double)kp[i].ns / 1e6 / per, (double)kp[i].count / per,
               total ? 100.0 * (double)kp[i].ns / (double)total : 0.0,
               (double)kp[i].ns / 1e3 / (double)kp[i].count);
    clf_context_profile_reset(ctx);
}

int bench_op_selected(const bench_opts *o, const char *op) {
    if (!o->ops) return 1;
    size_t n = strlen(op);
    for (const char *p = o->ops; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncmp(p, op, n) == 0) return 1;
        if (!e) break;
        p = e + 1;
    }
    return 0;
}

bench_result bench_result_make(const char *op, int ndim, const int64_t *shape, const char *bound) {
    bench_result res;
    memset(&res, 0, sizeof(res));
    snprintf(res.op, sizeof(res.op), "%s", op);
    res.ndim = ndim;
    memcpy(res.shape, shape, (size_t)ndim * sizeof(int64_t));
    res.bound = bound;
    res.tuned = -1;
    return res;
}

int bench_add_result(bench_results *r, const bench_result *x) {
    if (r->n == r->cap) {
        size_t nc = r->cap ? r->cap * 2 : 16;
        bench_result *ni = realloc(r->items, nc * sizeof(*ni));
        if (!ni) return 1;
        r->items = ni;
        r->cap = nc;
    }
    r->items[r->n++] = *x;
    return 0;
}
