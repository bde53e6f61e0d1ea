/*
 * clformer-tune — tunes one device for clformer and saves the results where every later
 * clformer context on that device finds them: CLBlast's GEMM kernels (clf_gemm_tune) and the
 * tiled attention kernel's tiles per head size (clf_attention_tune).
 *
 *   clformer-tune [--device SPEC] [--gemm] [--attention] [--head-dims 32,64,128]
 *                 [--budget SECONDS] [--seed N] [--no-save]
 */
#include "clformer/clformer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void on_progress(void *user, const char *msg) {
    (void)user;
    fprintf(stderr, "[clformer-tune] %s\n", msg);
}

static int usage(int rc) {
    fprintf(rc ? stderr : stdout,
            "usage: clformer-tune [--device SPEC] [--gemm] [--attention] [--head-dims LIST]\n"
            "                     [--budget SECONDS] [--seed N] [--no-save]\n"
            "  --gemm       search CLBlast's GEMM parameters (each candidate compiles for\n"
            "               5-20 s on PoCL); saved under $XDG_CACHE_HOME/clformer/gemm-tuning/\n"
            "  --attention  pick the tiled attention kernel's tiles for each head size in\n"
            "               --head-dims (default 32,64,128); saved under\n"
            "               $XDG_CACHE_HOME/clformer/attention-tuning/\n"
            "  Neither: both. --budget is per part (default 600 s).\n");
    return rc;
}

/* "32,64,128" into dims; the count, or -1 if malformed. */
static int parse_dims(const char *s, int64_t *dims, int max) {
    int n = 0;
    while (*s) {
        char *end;
        long long v = strtoll(s, &end, 10);
        if (end == s || n == max || v < 1 || v > 256) return -1;
        dims[n++] = v;
        s = end;
        if (*s == ',')
            s++;
        else if (*s)
            return -1;
    }
    return n > 0 ? n : -1;
}

int main(int argc, char **argv) {
    const char *spec = NULL;
    double budget = 600;
    unsigned long long seed = 1;
    int save = 1, gemm = 0, attention = 0, n_dims = 3;
    int64_t dims[16] = {32, 64, 128};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--device") == 0 && i + 1 < argc)
            spec = argv[++i];
        else if (strcmp(argv[i], "--budget") == 0 && i + 1 < argc)
            budget = atof(argv[++i]);
        else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--head-dims") == 0 && i + 1 < argc) {
            if ((n_dims = parse_dims(argv[++i], dims, 16)) < 0) {
                fprintf(stderr, "clformer-tune: --head-dims wants up to 16 sizes in 1..256\n");
                return 2;
            }
        } else if (strcmp(argv[i], "--gemm") == 0)
            gemm = 1;
        else if (strcmp(argv[i], "--attention") == 0)
            attention = 1;
        else if (strcmp(argv[i], "--no-save") == 0)
            save = 0;
        else
            return usage(strcmp(argv[i], "--help") == 0 ? 0 : 2);
    }
    if (!gemm && !attention) gemm = attention = 1;
    if (!(budget > 0)) {
        fprintf(stderr, "clformer-tune: --budget must be > 0\n");
        return 2;
    }
    clf_error msg = {""};
    clf_context_params p = clf_context_default_params();
    p.device_spec = spec;
    p.error = &msg;
    clf_context *ctx = NULL;
    clf_status st = clf_context_create(&ctx, &p);
    if (st != CLF_SUCCESS) {
        fprintf(stderr, "clformer-tune: %s\n", msg.message);
        return 1;
    }
    if (clf_context_last_warning(ctx)[0])
        fprintf(stderr, "clformer-tune: warning: %s\n", clf_context_last_warning(ctx));
    clf_device_info info;
    clf_context_device_info(ctx, &info);
    fprintf(stderr, "[clformer-tune] device: %s (%s), budget %.0f s per part\n", info.name,
            info.platform_name, budget);
    printf("device: %s\n", info.name);
    clf_tune_params tp = {
        .budget_s = budget, .seed = seed, .save = save, .progress = on_progress, .user = NULL};
    if (gemm) {
        fprintf(stderr, "[clformer-tune] GEMM, starting from %s\n", clf_gemm_tuning_source(ctx));
        clf_tune_result r;
        if ((st = clf_gemm_tune(ctx, &tp, &r)) != CLF_SUCCESS) goto fail;
        printf("SGEMM 1024x1024x1024: %.1f -> %.1f GFLOP/s\n", r.before_gflops, r.after_gflops);
        printf("SGEMM 128x512x512:    %.1f -> %.1f GFLOP/s\n", r.small_before_gflops,
               r.small_after_gflops);
        printf("GEMM candidates: %d in %.0f s\n", r.candidates_tried, r.seconds);
        printf("GEMM saved: %s\n", r.file[0] ? r.file : "(not saved)");
    }
    if (attention) {
        fprintf(stderr, "[clformer-tune] attention tiles, starting from %s\n",
                clf_attention_tuning_source(ctx));
        clf_attention_tune_result r;
        if ((st = clf_attention_tune(ctx, &tp, dims, n_dims, &r)) != CLF_SUCCESS) goto fail;
        for (int i = 0; i < r.count; i++)
            printf("attention Dh %lld: QB %lld BQ %lld, %.2f -> %.2f ms (B 1, H 8, N 2048)\n",
                   (long long)r.dims[i].head_dim, (long long)r.dims[i].qb, (long long)r.dims[i].bq,
                   r.dims[i].before_ms, r.dims[i].after_ms);
        printf("attention candidates: %d in %.0f s\n", r.candidates_tried, r.seconds);
        printf("attention saved: %s\n", r.file[0] ? r.file : "(not saved)");
    }
    clf_context_free(ctx);
    return 0;
fail:
    fprintf(stderr, "clformer-tune: %s: %s\n", clf_strerror(st), clf_context_last_error(ctx));
    clf_context_free(ctx);
    return 1;
}
