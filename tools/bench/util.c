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

void bench_progress(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "[clformer-bench] ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
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
