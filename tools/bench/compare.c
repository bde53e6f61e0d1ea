/*
 * compare.c — reading saved runs back (cJSON) and comparing them record by record:
 * ratio = baseline ms / current ms (above 1: faster now), a regression below the threshold.
 */
#include "bench.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    long n;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
        buf = malloc((size_t)n + 1);
        if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
            free(buf);
            buf = NULL;
        }
        if (buf) buf[n] = '\0';
    }
    fclose(f);
    return buf;
}

int bench_load_results(const char *path, bench_results *r) {
    memset(r, 0, sizeof(*r));
    char *text = slurp(path);
    if (!text) {
        fprintf(stderr, "clformer-bench: cannot read '%s'\n", path);
        return 1;
    }
    cJSON *root = cJSON_Parse(text);
    free(text);
    const cJSON *res = root ? cJSON_GetObjectItemCaseSensitive(root, "results") : NULL;
    if (!cJSON_IsArray(res)) {
        fprintf(stderr, "clformer-bench: '%s' is not a clformer-bench JSON file\n", path);
        cJSON_Delete(root);
        return 1;
    }
    const cJSON *item;
    int rc = 0;
    cJSON_ArrayForEach(item, res) {
        bench_result x;
        memset(&x, 0, sizeof(x));
        const cJSON *op = cJSON_GetObjectItemCaseSensitive(item, "op");
        const cJSON *shape = cJSON_GetObjectItemCaseSensitive(item, "shape");
        const cJSON *ms = cJSON_GetObjectItemCaseSensitive(item, "ms");
        const cJSON *tuned = cJSON_GetObjectItemCaseSensitive(item, "tuned");
        if (!cJSON_IsString(op) || !cJSON_IsArray(shape) || !cJSON_IsNumber(ms) ||
            cJSON_GetArraySize(shape) > 8) {
            fprintf(stderr, "clformer-bench: '%s': malformed result record\n", path);
            rc = 1;
            break;
        }
        snprintf(x.op, sizeof(x.op), "%s", op->valuestring);
        const cJSON *d;
        cJSON_ArrayForEach(d, shape) x.shape[x.ndim++] = (int64_t)d->valuedouble;
        x.ms = ms->valuedouble;
        x.tuned = cJSON_IsBool(tuned) ? cJSON_IsTrue(tuned) : -1;
        const cJSON *g = cJSON_GetObjectItemCaseSensitive(item, "gflops");
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(item, "gbps");
        x.gflops = cJSON_IsNumber(g) ? g->valuedouble : 0;
        x.gbps = cJSON_IsNumber(b) ? b->valuedouble : 0;
        x.bound = "memory";
        if (bench_add_result(r, &x)) {
            rc = 1;
            break;
        }
    }
    cJSON_Delete(root);
    if (rc) {
        free(r->items);
        memset(r, 0, sizeof(*r));
    }
    return rc;
}

static int same_record(const bench_result *a, const bench_result *b) {
    if (strcmp(a->op, b->op) != 0 || a->ndim != b->ndim || a->tuned != b->tuned) return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i]) return 0;
    return 1;
}

int bench_compare_results(const bench_results *cur, const bench_results *base, double threshold,
                          FILE *out) {
    int regressions = 0, missing = 0;
    fprintf(out, "\ncompare with baseline (ratio = baseline ms / current ms; below %.2f flagged)\n",
            threshold);
    fprintf(out, "%-18s %-16s %12s %12s %8s\n", "op", "shape", "baseline ms", "current ms",
            "ratio");
    for (size_t i = 0; i < cur->n; i++) {
        const bench_result *c = &cur->items[i];
        const bench_result *b = NULL;
        for (size_t j = 0; j < base->n && !b; j++)
            if (same_record(c, &base->items[j])) b = &base->items[j];
        char s[64] = "";
        size_t off = 0;
        for (int k = 0; k < c->ndim && off < sizeof(s); k++)
            off += (size_t)snprintf(s + off, sizeof(s) - off, "%s%lld", k ? "x" : "",
                                    (long long)c->shape[k]);
        if (!b || !(b->ms > 0) || !(c->ms > 0)) {
            fprintf(out, "%-18s %-16s %12s %12.3f %8s\n", c->op, s, "-", c->ms, "new");
            missing++;
            continue;
        }
        double ratio = b->ms / c->ms;
        int bad = ratio < threshold;
        regressions += bad;
        fprintf(out, "%-18s %-16s %12.3f %12.3f %7.2fx%s\n", c->op, s, b->ms, c->ms, ratio,
                bad ? "  REGRESSION" : "");
    }
    fprintf(out, "compare: %zu records, %d regressions, %d without a baseline\n", cur->n,
            regressions, missing);
    return regressions;
}

int bench_check_floors(const bench_results *cur, const char *const *floors, int n, FILE *out) {
    int failed = 0;
    for (int f = 0; f < n; f++) {
        const char *eq = strchr(floors[f], '=');
        const int len = (int)(eq - floors[f]);
        const double pct = atof(eq + 1);
        int seen = 0;
        for (size_t i = 0; i < cur->n; i++) {
            const bench_result *c = &cur->items[i];
            if ((int)strlen(c->op) != len || strncmp(c->op, floors[f], (size_t)len) != 0) continue;
            seen = 1;
            const int bad = !(c->pct_peak >= pct); /* a record without a time fails too */
            failed += bad;
            fprintf(out, "floor: %s at %.1f%% of its roof (%s), floor %.1f%%%s\n", c->op,
                    c->pct_peak, c->bound ? c->bound : "-", pct, bad ? ": UNDER THE FLOOR" : "");
        }
        if (!seen) {
            fprintf(out, "floor: %.*s: no such record in this run\n", len, floors[f]);
            failed++;
        }
    }
    return failed;
}
