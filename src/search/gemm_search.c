/*
 * gemm_search.c — clf_gemm_tune: searches CLBlast's Xgemm and XgemmDirect parameters and the
 * switch point between them on this device, applies the best and saves it as the device's GEMM
 * tuning file (read back by tuning/gemm_params.c in later contexts).
 */
#include "../rng.h"
#include "../tuning/gemm_params.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---------------------------------------------------------------- the search
 * Random sampling mixed with local moves around the best set so far, under a wall-clock budget:
 * phase 1 Xgemm at 1024^3, phase 2 XgemmDirect at 128 x 512 x 512, then the switch point. */

typedef struct tuner {
    clf_context *ctx;
    const clf_tune_params *par;
    double t_end;
    clf_rng rng;
    clf_tensor *a, *b, *c; /* 1024 x 1024 each */
    float *ha, *hb;        /* host copies for the spot checks */
    int tried;
} tuner;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void progress(tuner *t, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void progress(tuner *t, const char *fmt, ...) {
    if (!t->par->progress) return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    t->par->progress(t->par->user, msg);
}

static uint64_t next_rand(tuner *t) {
    return clf_rng_next(&t->rng);
}

static size_t pick(tuner *t, const size_t *set, size_t n) {
    return set[next_rand(t) % n];
}

/* GFLOP/s of an m x n x k product A (m, k) * B (k, n) (compile and first run not timed), or -1
 * if CLBlast fails or the spot check of 8 entries against a double reference fails. */
static double measure(tuner *t, int64_t m, int64_t n, int64_t k) {
    clf_context *ctx = t->ctx;
    clf_status st = clf_gemm_strided_batched(ctx, CLF_NO_TRANS, CLF_NO_TRANS, m, n, k, 1.0f, t->a,
                                             0, k, 0, t->b, 0, n, 0, 0.0f, t->c, 0, n, 0, 1);
    if (st == CLF_SUCCESS) st = clf_context_finish(ctx);
    if (st != CLF_SUCCESS) return -1;
    /* Spot check. */
    for (int s = 0; s < 8; s++) {
        int64_t i = (int64_t)(next_rand(t) % (uint64_t)m),
                j = (int64_t)(next_rand(t) % (uint64_t)n);
        double want = 0, mag = 0;
        for (int64_t q = 0; q < k; q++) {
            want += (double)t->ha[i * k + q] * (double)t->hb[q * n + j];
            mag += fabs((double)t->ha[i * k + q] * (double)t->hb[q * n + j]);
        }
        float got;
        cl_int err =
            clEnqueueReadBuffer(ctx->queue, t->c->mem, CL_TRUE, (size_t)(i * n + j) * sizeof(float),
                                sizeof(float), &got, 0, NULL, NULL);
        if (err != CL_SUCCESS || !(fabs((double)got - want) <= 1e-5 * mag + 1e-6)) return -1;
    }
    double best = 1e30;
    for (int r = 0; r < 2; r++) {
        double t0 = now_s();
        st = clf_gemm_strided_batched(ctx, CLF_NO_TRANS, CLF_NO_TRANS, m, n, k, 1.0f, t->a, 0, k, 0,
                                      t->b, 0, n, 0, 0.0f, t->c, 0, n, 0, 1);
        if (st == CLF_SUCCESS) st = clf_context_finish(ctx);
        if (st != CLF_SUCCESS) return -1;
        double dt = now_s() - t0;
        if (dt < best) best = dt;
    }
    return 2.0 * (double)m * (double)n * (double)k / (best * 1e9);
}

/* At most this many accumulators per work-item: larger register tiles spill anyway, and their
 * fully unrolled kernels take PoCL minutes to compile (a tuner test once spent 8 minutes in one).
 */
#define MAX_TILE 64

static bool xgemm_valid(const size_t *v, const clf_device_info *dev) {
    if (v[MWG] % (v[MDIMC] * v[VWM]) || v[NWG] % (v[NDIMC] * v[VWN])) return false;
    if ((v[MWG] / v[MDIMC]) * (v[NWG] / v[NDIMC]) > MAX_TILE) return false;
    if (v[MWG] % (v[MDIMA] * v[VWM]) || v[NWG] % (v[NDIMB] * v[VWN])) return false;
    size_t threads = v[MDIMC] * v[NDIMC];
    if (threads % v[MDIMA] || threads % v[NDIMB]) return false;
    if (v[KWG] % (threads / v[MDIMA]) || v[KWG] % (threads / v[NDIMB]) || v[KWG] % v[KWI])
        return false;
    if (!v[SA] && v[MDIMA] != v[MDIMC]) return false;
    if (!v[SB] && v[NDIMB] != v[NDIMC]) return false;
    size_t local = (v[SA] ? v[KWG] * v[MWG] : 0) + (v[SB] ? v[KWG] * v[NWG] : 0);
    return threads <= dev->max_work_group_size && local * 4 <= dev->local_mem_bytes;
}

static bool direct_valid(const size_t *v, const clf_device_info *dev) {
    size_t w = v[WGD];
    if (w % (v[MDIMCD] * v[VWMD]) || w % (v[NDIMCD] * v[VWND])) return false;
    if ((w / v[MDIMCD]) * (w / v[NDIMCD]) > MAX_TILE) return false;
    if (w % (v[MDIMAD] * v[VWMD]) || w % (v[NDIMBD] * v[VWND])) return false;
    size_t threads = v[MDIMCD] * v[NDIMCD];
    if (threads % v[MDIMAD] || threads % v[NDIMBD]) return false;
    if (w % (threads / v[MDIMAD]) || w % (threads / v[NDIMBD]) || w % v[KWID]) return false;
    size_t local = 2 * w * (w + 1);
    return threads <= dev->max_work_group_size && local * 4 <= dev->local_mem_bytes;
}

static void random_xgemm(tuner *t, size_t *v) {
    static const size_t tiles[] = {16, 32, 64, 128}, kw[] = {16, 32}, dims[] = {4, 8, 16},
                        vw[] = {1, 2, 4, 8}, bits[] = {0, 1};
    for (int tries = 0; tries < 100000; tries++) {
        v[GEMMK] = 0;
        v[KREG] = 1;
        v[KWI] = 2;
        v[MWG] = pick(t, tiles, 4);
        v[NWG] = pick(t, tiles, 4);
        v[KWG] = pick(t, kw, 2);
        v[MDIMC] = pick(t, dims, 3);
        v[NDIMC] = pick(t, dims, 3);
        v[SA] = pick(t, bits, 2);
        v[SB] = pick(t, bits, 2);
        v[MDIMA] = v[SA] ? pick(t, dims, 3) : v[MDIMC];
        v[NDIMB] = v[SB] ? pick(t, dims, 3) : v[NDIMC];
        v[STRM] = pick(t, bits, 2);
        v[STRN] = pick(t, bits, 2);
        v[VWM] = pick(t, vw, 4);
        v[VWN] = pick(t, vw, 4);
        if (xgemm_valid(v, &t->ctx->info)) return;
    }
}

static void random_direct(tuner *t, size_t *v) {
    static const size_t wgd[] = {8, 16, 32, 64}, dims[] = {4, 8, 16}, kwid[] = {2, 8},
                        vw[] = {1, 2, 4, 8}, bits[] = {0, 1};
    for (int tries = 0; tries < 100000; tries++) {
        v[WGD] = pick(t, wgd, 4);
        v[MDIMCD] = pick(t, dims, 3);
        v[NDIMCD] = pick(t, dims, 3);
        v[MDIMAD] = pick(t, dims, 3);
        v[NDIMBD] = pick(t, dims, 3);
        v[KWID] = pick(t, kwid, 2);
        v[VWMD] = pick(t, vw, 4);
        v[VWND] = pick(t, vw, 4);
        v[PADA] = pick(t, bits, 2);
        v[PADB] = pick(t, bits, 2);
        if (direct_valid(v, &t->ctx->info)) return;
    }
}

/* A neighbour of `from`: one or two parameters taken from a fresh random valid set, retried until
 * the result is valid. With compiles costing seconds, local moves around the best so far find
 * good sets in far fewer tries than uniform sampling. */
static void mutate(tuner *t, const size_t *from, size_t *out, size_t count,
                   void (*random_set)(tuner *, size_t *),
                   bool (*valid)(const size_t *, const clf_device_info *)) {
    size_t fresh[CLF_N_XGEMM];
    for (int tries = 0; tries < 1000; tries++) {
        random_set(t, fresh);
        memcpy(out, from, count * sizeof(size_t));
        int changes = 1 + (int)(next_rand(t) % 2);
        for (int c = 0; c < changes; c++) {
            size_t i = (size_t)(next_rand(t) % count);
            out[i] = fresh[i];
        }
        if (memcmp(out, from, count * sizeof(size_t)) != 0 && valid(out, &t->ctx->info)) return;
    }
    memcpy(out, fresh, count * sizeof(size_t)); /* no valid neighbour: a random set */
}

/* One phase of the search: candidates for Xgemm (direct false, scored at 1024^3) or XgemmDirect
 * (scored at 128 x 512 x 512) until `end`; *best and *score improve in place. Returns whether
 * anything beat the starting score. */
static bool search(tuner *t, clf_gemm_params *best, bool direct, double end, double *score) {
    const size_t count = direct ? CLF_N_DIRECT : CLF_N_XGEMM;
    void (*random_set)(tuner *, size_t *) = direct ? random_direct : random_xgemm;
    bool (*valid)(const size_t *, const clf_device_info *) = direct ? direct_valid : xgemm_valid;
    bool improved = false;
    do {
        clf_gemm_params cand = *best;
        cand.has_routine = false; /* the forced switch point stays */
        size_t *values = direct ? cand.direct : cand.xgemm;
        const bool had = direct ? best->has_direct : best->has_xgemm;
        if (had && next_rand(t) % 4 != 0) /* 3 of 4 tries: near the best */
            mutate(t, direct ? best->direct : best->xgemm, values, count, random_set, valid);
        else
            random_set(t, values);
        if (direct)
            cand.has_direct = true;
        else
            cand.has_xgemm = true;
        if (clf__gemm_params_apply(t->ctx, &cand) != CLF_SUCCESS) continue;
        const double g = direct ? measure(t, 128, 512, 512) : measure(t, 1024, 1024, 1024);
        t->tried++;
        progress(t, "%s candidate %d: %.1f GFLOP/s (best %.1f)", direct ? "XgemmDirect" : "Xgemm",
                 t->tried, g, *score);
        if (g > *score) {
            *score = g;
            memcpy(direct ? best->direct : best->xgemm, values, count * sizeof(size_t));
            if (direct)
                best->has_direct = true;
            else
                best->has_xgemm = true;
            improved = true;
        }
    } while (now_s() < end);
    return improved;
}

static clf_status set_routine(clf_context *ctx, size_t min_indirect) {
    clf_gemm_params p;
    memset(&p, 0, sizeof(p));
    p.has_routine = true;
    p.min_indirect = min_indirect;
    return clf__gemm_params_apply(ctx, &p);
}

static clf_status save(clf_context *ctx, const clf_gemm_params *p, const clf_tune_result *r,
                       char *path_out, size_t path_size) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "format", CLF_GEMM_TUNING_FORMAT);
    if (p->has_xgemm) {
        cJSON *x = cJSON_AddObjectToObject(root, "Xgemm");
        for (int i = 0; i < CLF_N_XGEMM; i++)
            cJSON_AddNumberToObject(x, clf__xgemm_names[i], (double)p->xgemm[i]);
    }
    if (p->has_direct) {
        cJSON *d = cJSON_AddObjectToObject(root, "XgemmDirect");
        for (int i = 0; i < CLF_N_DIRECT; i++)
            cJSON_AddNumberToObject(d, clf__direct_names[i], (double)p->direct[i]);
    }
    cJSON *g = cJSON_AddObjectToObject(root, "GemmRoutine");
    cJSON_AddNumberToObject(g, "XGEMM_MIN_INDIRECT_SIZE", (double)p->min_indirect);
    cJSON_AddNumberToObject(root, "gflops", r->after_gflops);
    cJSON_AddNumberToObject(root, "small_gflops", r->small_after_gflops);
    cJSON_AddNumberToObject(root, "seconds", r->seconds);
    return clf__tuning_save(ctx, CLF_GEMM_TUNING_KIND, root, path_out, path_size);
}

/* Fills a tensor with values uniform in [-1, 1] and keeps a host copy. */
static clf_status random_tensor(tuner *t, clf_tensor **out, float **host) {
    const int64_t shape[2] = {1024, 1024};
    clf_status st = clf_tensor_create(t->ctx, CLF_F32, 2, shape, out);
    if (st != CLF_SUCCESS) return st;
    *host = malloc(1024 * 1024 * sizeof(float));
    if (!*host) return clf__fail(t->ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
    for (int i = 0; i < 1024 * 1024; i++)
        (*host)[i] = (float)clf_rng_uniform(&t->rng, -1.0, 1.0);
    return clf_tensor_write(*out, *host, 1024 * 1024 * sizeof(float));
}

clf_tune_params clf_tune_default_params(void) {
    clf_tune_params p;
    memset(&p, 0, sizeof(p));
    p.budget_s = 30.0;
    p.seed = 1;
    p.save = 1;
    return p;
}

clf_status clf_gemm_tune(clf_context *ctx, const clf_tune_params *params, clf_tune_result *result) {
    if (!ctx) return CLF_ERROR_INVALID_ARGUMENT;
    clf__clear_error(ctx);
    if (!params || !result || !(params->budget_s > 0))
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                         "clf_gemm_tune: params (budget_s > 0) and result are required");
    memset(result, 0, sizeof(*result));
    tuner t = {.ctx = ctx, .par = params, .rng = clf_rng_make(params->seed)};
    const double t0 = now_s();
    t.t_end = t0 + params->budget_s;
    clf_status st = random_tensor(&t, &t.a, &t.ha);
    if (st == CLF_SUCCESS) st = random_tensor(&t, &t.b, &t.hb);
    if (st == CLF_SUCCESS) {
        const int64_t shape[2] = {1024, 1024};
        st = clf_tensor_create(ctx, CLF_F32, 2, shape, &t.c);
    }
    if (st != CLF_SUCCESS) goto done;

    /* What is in force now: the baseline, kept unless something beats it. */
    progress(&t, "measuring the parameters in force (%s)", ctx->tuning->gemm_source);
    result->before_gflops = measure(&t, 1024, 1024, 1024);
    result->small_before_gflops = measure(&t, 128, 512, 512);
    if (result->before_gflops < 0 || result->small_before_gflops < 0) {
        st = clf__fail(ctx, CLF_ERROR_CLBLAST, "GEMM with the parameters in force failed");
        goto done;
    }
    clf_gemm_params best;
    memset(&best, 0, sizeof(best));
    bool have_file_or_builtin = false;
    {
        clf_gemm_params cur;
        const char *why;
        if (clf__gemm_params_load(ctx, &cur, NULL, &why) && cur.has_xgemm) {
            best = cur;
            have_file_or_builtin = true;
        } else if (clf__gemm_builtin(ctx->info.type, &cur)) {
            best.has_xgemm = true;
            memcpy(best.xgemm, cur.xgemm, sizeof(cur.xgemm));
            have_file_or_builtin = true;
        }
    }
    double best_big = result->before_gflops;

    /* Phase 1 (60% of the budget): Xgemm, the indirect kernel, at 1024^3. */
    if ((st = set_routine(ctx, 1)) != CLF_SUCCESS) goto done; /* everything indirect */
    bool improved_x = search(&t, &best, false, t0 + 0.6 * params->budget_s, &best_big);
    if (!improved_x && !have_file_or_builtin) best.has_xgemm = false;
    best.has_routine = false;
    if (best.has_xgemm && (st = clf__gemm_params_apply(ctx, &best)) != CLF_SUCCESS) goto done;

    /* Phase 2 (the rest): XgemmDirect, the small-product kernel, at 128 x 512 x 512. */
    if ((st = set_routine(ctx, 4096)) != CLF_SUCCESS) goto done; /* everything direct */
    double best_small = measure(&t, 128, 512, 512);
    search(&t, &best, true, t.t_end, &best_small);
    if ((best.has_xgemm || best.has_direct) &&
        (st = clf__gemm_params_apply(ctx, &best)) != CLF_SUCCESS)
        goto done;

    /* The switch point: the smallest cube where the indirect kernel wins. */
    best.has_routine = true;
    best.min_indirect = 1024;
    const int64_t sizes[3] = {128, 256, 512};
    for (int i = 0; i < 3; i++) {
        if ((st = set_routine(ctx, 4096)) != CLF_SUCCESS) goto done;
        double direct = measure(&t, sizes[i], sizes[i], sizes[i]);
        if ((st = set_routine(ctx, 1)) != CLF_SUCCESS) goto done;
        double indirect = measure(&t, sizes[i], sizes[i], sizes[i]);
        progress(&t, "%lld^3: direct %.1f, indirect %.1f GFLOP/s", (long long)sizes[i], direct,
                 indirect);
        if (indirect > direct) {
            best.min_indirect = (size_t)sizes[i];
            break;
        }
    }
    if ((st = clf__gemm_params_apply(ctx, &best)) != CLF_SUCCESS) goto done;
    result->after_gflops = measure(&t, 1024, 1024, 1024);
    result->small_after_gflops = measure(&t, 128, 512, 512);
    result->candidates_tried = t.tried;
    result->seconds = now_s() - t0;
    snprintf(ctx->tuning->gemm_source, sizeof(ctx->tuning->gemm_source), "tuned");
    progress(&t, "SGEMM 1024^3: %.1f -> %.1f GFLOP/s; 128x512x512: %.1f -> %.1f GFLOP/s",
             result->before_gflops, result->after_gflops, result->small_before_gflops,
             result->small_after_gflops);
    if (params->save) {
        st = save(ctx, &best, result, result->file, sizeof(result->file));
        if (st == CLF_SUCCESS)
            snprintf(ctx->tuning->gemm_source, sizeof(ctx->tuning->gemm_source), "file:%s",
                     result->file);
    }
done:
    clf_tensor_free(t.a);
    clf_tensor_free(t.b);
    clf_tensor_free(t.c);
    free(t.ha);
    free(t.hb);
    return st;
}
