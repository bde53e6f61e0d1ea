/*
 * clformer-tune — tunes CLBlast's GEMM kernels for one device and saves the result where every
 * later clformer context on that device finds it.
 *
 *   clformer-tune [--device SPEC] [--budget SECONDS] [--seed N] [--no-save]
 */
#include "clformer/clformer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void on_progress(void *user, const char *msg) {
    (void)user;
    fprintf(stderr, "[clformer-tune] %s\n", msg);
}

int main(int argc, char **argv) {
    const char *spec = NULL;
    double budget = 600;
    unsigned long long seed = 1;
    int save = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--device") == 0 && i + 1 < argc)
            spec = argv[++i];
        else if (strcmp(argv[i], "--budget") == 0 && i + 1 < argc)
            budget = atof(argv[++i]);
        else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--no-save") == 0)
            save = 0;
        else {
            fprintf(stderr,
                    "usage: clformer-tune [--device SPEC] [--budget SECONDS] [--seed N] "
                    "[--no-save]\n"
                    "  Searches CLBlast's GEMM parameters for the device within the budget\n"
                    "  (default 600 s; each candidate compiles for 5-20 s on PoCL) and saves the\n"
                    "  best under $XDG_CACHE_HOME/clformer/gemm-tuning/.\n");
            return strcmp(argv[i], "--help") == 0 ? 0 : 2;
        }
    }
    if (!(budget > 0)) {
        fprintf(stderr, "clformer-tune: --budget must be > 0\n");
        return 2;
    }
    char msg[2048] = "";
    clf_context_params p = clf_context_default_params();
    p.device_spec = spec;
    p.error_buf = msg;
    p.error_buf_size = sizeof(msg);
    clf_context *ctx = NULL;
    clf_status st = clf_context_create(&ctx, &p);
    if (st != CLF_SUCCESS) {
        fprintf(stderr, "clformer-tune: %s\n", msg);
        return 1;
    }
    clf_device_info info;
    clf_context_device_info(ctx, &info);
    fprintf(stderr, "[clformer-tune] device: %s (%s), budget %.0f s, starting from %s\n", info.name,
            info.platform_name, budget, clf_gemm_tuning_source(ctx));
    clf_tune_params tp = {
        .budget_s = budget, .seed = seed, .save = save, .progress = on_progress, .user = NULL};
    clf_tune_result r;
    st = clf_gemm_tune(ctx, &tp, &r);
    if (st != CLF_SUCCESS) {
        fprintf(stderr, "clformer-tune: %s: %s\n", clf_strerror(st), clf_context_last_error(ctx));
        clf_context_free(ctx);
        return 1;
    }
    printf("device: %s\n", info.name);
    printf("SGEMM 1024x1024x1024: %.1f -> %.1f GFLOP/s\n", r.before_gflops, r.after_gflops);
    printf("SGEMM 128x512x512:    %.1f -> %.1f GFLOP/s\n", r.small_before_gflops,
           r.small_after_gflops);
    printf("candidates: %d in %.0f s\n", r.candidates_tried, r.seconds);
    printf("saved: %s\n", r.file[0] ? r.file : "(not saved)");
    clf_context_free(ctx);
    return 0;
}
