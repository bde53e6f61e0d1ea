/*
 * test_gemm_tuning.c — the GEMM tuning file (parsing, malformed files, persistence) and a short
 * run of the tuner whose result is checked on random rectangular products, with the tuned
 * indirect kernel forced too.
 */
#include "harness.h"
#include "../src/tuning/gemm_params.h"
#include "../src/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

static const char *k_valid =
    "{\"format\": \"clformer-gemm-tuning-1\", \"Xgemm\": {\"GEMMK\": 0, \"KREG\": 1, \"KWG\": 32, "
    "\"KWI\": 2, \"MDIMA\": 8, \"MDIMC\": 8, \"MWG\": 64, \"NDIMB\": 8, \"NDIMC\": 8, \"NWG\": 64, "
    "\"SA\": 1, \"SB\": 1, \"STRM\": 0, \"STRN\": 0, \"VWM\": 4, \"VWN\": 4}, \"GemmRoutine\": "
    "{\"XGEMM_MIN_INDIRECT_SIZE\": 256}}";

static void test_parse(void **state) {
    (void)state;
    const char *why = NULL;
    assert_true(clf__gemm_tuning_parse(k_valid, &why));
    const char *bad[] = {
        "",
        "not json",
        "{}",
        "{\"format\": \"other\"}",
        "{\"format\": \"clformer-gemm-tuning-1\"}",
        "{\"format\": \"clformer-gemm-tuning-1\", \"Xgemm\": {\"GEMMK\": 0}}",
        "{\"format\": \"clformer-gemm-tuning-1\", \"GemmRoutine\": {\"XGEMM_MIN_INDIRECT_SIZE\": "
        "-1}}",
        "{\"format\": \"clformer-gemm-tuning-1\", \"GemmRoutine\": {\"XGEMM_MIN_INDIRECT_SIZE\": "
        "1.5}}",
        "{\"format\": \"clformer-gemm-tuning-1\", \"GemmRoutine\": {\"XGEMM_MIN_INDIRECT_SIZE\": "
        "\"8\"}}",
        "{\"format\": \"clformer-gemm-tuning-1\", \"XgemmDirect\": []}",
        "[1, 2, 3]",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        why = NULL;
        if (clf__gemm_tuning_parse(bad[i], &why)) fail_msg("accepted: %s", bad[i]);
        assert_non_null(why);
    }
}

static char g_dir[64];

/* A fresh tuning folder in g_dir; returns this device's GEMM tuning file path there. */
static char *fresh_tuning_file(void) {
    static char path[600];
    harness_fresh_tuning("tune-test", CLF_GEMM_TUNING_KIND, g_dir, sizeof(g_dir), path,
                         sizeof(path));
    return path;
}

/* c (m, n) = a (m, k) b (k, n) with random entries in [-1, 1], against a double reference. Bound:
 * per entry 2e-5 * sum_k |a_ik b_kj|, above fp32's worst case for k = 288 sequential
 * accumulations (288 * 2^-24 = 1.7e-5), far below what swapped or transposed operands give. */
static void check_gemm(clf_context *ctx, int64_t m, int64_t n, int64_t k) {
    float *a = malloc((size_t)(m * k) * 4), *b = malloc((size_t)(k * n) * 4);
    for (int64_t i = 0; i < m * k; i++)
        a[i] = (float)rng_uniform(-1, 1);
    for (int64_t i = 0; i < k * n; i++)
        b[i] = (float)rng_uniform(-1, 1);
    int64_t sa[2] = {m, k}, sb[2] = {k, n}, sc[2] = {m, n};
    clf_tensor *ta = tensor_poisoned(CLF_F32, 2, sa), *tb = tensor_poisoned(CLF_F32, 2, sb);
    clf_tensor *tc = tensor_poisoned(CLF_F32, 2, sc);
    CLF_OK(clf_tensor_write(ta, a, (size_t)(m * k) * 4));
    CLF_OK(clf_tensor_write(tb, b, (size_t)(k * n) * 4));
    CLF_OK(clf_matmul(ctx, CLF_NO_TRANS, CLF_NO_TRANS, 1.0f, ta, tb, 0.0f, tc));
    float *c = tensor_to_host(tc);
    double worst = 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double ref = 0, mag = 0;
            for (int64_t p = 0; p < k; p++) {
                ref += (double)a[i * k + p] * b[p * n + j];
                mag += fabs((double)a[i * k + p] * b[p * n + j]);
            }
            const double e = fabs(c[i * n + j] - ref) / mag;
            if (!(e <= worst)) worst = e; /* NaN (poison left) counts as worst */
        }
    print_message("tuned GEMM %lldx%lldx%lld vs double: max error %.3g of sum |a b|\n",
                  (long long)m, (long long)n, (long long)k, worst);
    assert_true(worst <= 2e-5);
    free(a);
    free(b);
    free(c);
    clf_tensor_free(ta);
    clf_tensor_free(tb);
    clf_tensor_free(tc);
}

static void test_tune_save_and_reload(void **state) {
    (void)state;
    rng_seed(63);
    char *expected = fresh_tuning_file();
    clf_context *ctx = harness_context_in(g_dir);
    clf_device_info info;
    CLF_OK(clf_context_device_info(ctx, &info));
    if (info.type == CLF_DEVICE_CPU)
        assert_string_equal(clf_gemm_tuning_source(ctx), "builtin:cpu");
    clf_tune_params tp = {.budget_s = 1.0, .seed = 7, .save = 1};
    clf_tune_result r;
    CLF_OK(clf_gemm_tune(ctx, &tp, &r));
    assert_true(r.before_gflops > 0 && r.after_gflops > 0);
    assert_true(r.small_before_gflops > 0 && r.small_after_gflops > 0);
    assert_true(r.candidates_tried >= 2); /* at least one of each kernel */
    assert_string_equal(r.file, expected);
    assert_true(access(r.file, R_OK) == 0);
    assert_non_null(strstr(clf_gemm_tuning_source(ctx), "file:"));
    clf_context_free(ctx);

    /* A new context reads the file. */
    ctx = harness_context_in(g_dir);
    assert_non_null(strstr(clf_gemm_tuning_source(ctx), r.file));
    /* GEMM still computes correctly with what the tuner chose, at a rectangular shape, with
     * the switch point the tuner chose and with the tuned indirect kernel (Xgemm) forced. */
    clf_context *saved = g_ctx; /* tensor_poisoned makes tensors on g_ctx */
    g_ctx = ctx;
    check_gemm(ctx, 256, 320, 288);
    clf_gemm_params p = {.has_routine = true, .min_indirect = 1};
    CLF_OK(clf__gemm_params_apply(ctx, &p));
    check_gemm(ctx, 256, 320, 288);
    g_ctx = saved;
    clf_context_free(ctx);
    harness_remove_tree(g_dir);
}

static void test_malformed_file_ignored(void **state) {
    (void)state;
    char *path = fresh_tuning_file();
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("{\"format\": \"clformer-gemm-tuning-1\", \"Xgemm\": {\"GEMMK\": ", f); /* truncated */
    fclose(f);
    clf_context *ctx = harness_context_in(g_dir);
    assert_non_null(strstr(clf_context_last_warning(ctx), "ignoring GEMM tuning file"));
    assert_string_equal(clf_context_last_error(ctx), ""); /* a warning is not an error */
    assert_null(strstr(clf_gemm_tuning_source(ctx), "file:"));
    clf_context_free(ctx);
    /* A file with missing parameters is ignored too. */
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("{\"format\": \"clformer-gemm-tuning-1\", \"GemmRoutine\": {\"XGEMM_MIN_INDIRECT_SIZE\": "
          "64}, \"XgemmDirect\": {\"KWID\": 2}}",
          f);
    fclose(f);
    ctx = harness_context_in(g_dir);
    assert_non_null(strstr(clf_context_last_warning(ctx), "ignoring GEMM tuning file"));
    clf_context_free(ctx);
    harness_remove_tree(g_dir);
}

static void test_bad_arguments(void **state) {
    (void)state;
    clf_tune_result r;
    clf_tune_params tp = {.budget_s = 0};
    assert_int_equal(clf_gemm_tune(g_ctx, &tp, &r), CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_gemm_tune(g_ctx, NULL, &r), CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_gemm_tune(NULL, &tp, &r), CLF_ERROR_INVALID_ARGUMENT);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_tune_save_and_reload),
        cmocka_unit_test(test_malformed_file_ignored),
    };
    return HARNESS_RUN("gemm_tuning", tests);
}
