/*
 * test_gemm_tuning.c — the GEMM tuning file (parsing, malformed files, persistence) and a short
 * run of the tuner. CLBlast's overrides are per process, so this program has its own.
 */
#include "harness.h"
#include "../src/internal.h"

#include <stdio.h>
#include <stdlib.h>
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

/* The tuning file the tuner wrote in g_dir (the only one there). */
static char *tuning_file(void) {
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "ls %s/gemm-tuning/*.json 2>/dev/null | head -n1", g_dir);
    FILE *f = popen(cmd, "r");
    static char path[512];
    path[0] = '\0';
    if (f) {
        if (!fgets(path, sizeof(path), f)) path[0] = '\0';
        pclose(f);
    }
    path[strcspn(path, "\n")] = '\0';
    return path;
}

static void test_tune_save_and_reload(void **state) {
    (void)state;
    snprintf(g_dir, sizeof(g_dir), "/tmp/clf-tune-test-XXXXXX");
    assert_non_null(mkdtemp(g_dir));
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
    assert_true(strlen(r.file) > 0);
    assert_true(access(r.file, R_OK) == 0);
    assert_non_null(strstr(clf_gemm_tuning_source(ctx), "file:"));
    clf_context_free(ctx);

    /* A new context reads the file. */
    ctx = harness_context_in(g_dir);
    assert_non_null(strstr(clf_gemm_tuning_source(ctx), r.file));
    /* GEMM still computes correctly with what the tuner chose. */
    int64_t s[2] = {33, 33};
    float a[33 * 33], c[33 * 33];
    for (int i = 0; i < 33 * 33; i++)
        a[i] = (i % 33 == i / 33) ? 1.0f : 0.0f; /* identity */
    clf_tensor *ta = NULL, *tc = NULL;
    CLF_OK(clf_tensor_create(ctx, CLF_F32, 2, s, &ta));
    CLF_OK(clf_tensor_create(ctx, CLF_F32, 2, s, &tc));
    CLF_OK(clf_tensor_write(ta, a, sizeof(a)));
    CLF_OK(clf_matmul(ctx, CLF_NO_TRANS, CLF_NO_TRANS, 1.0f, ta, ta, 0.0f, tc));
    CLF_OK(clf_tensor_read(tc, c, sizeof(c)));
    assert_memory_equal(a, c, sizeof(a));
    clf_tensor_free(ta);
    clf_tensor_free(tc);
    clf_context_free(ctx);
}

static void test_malformed_file_ignored(void **state) {
    (void)state;
    char *path = tuning_file();
    assert_true(strlen(path) > 0);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("{\"format\": \"clformer-gemm-tuning-1\", \"Xgemm\": {\"GEMMK\": ", f); /* truncated */
    fclose(f);
    clf_context *ctx = harness_context_in(g_dir);
    assert_non_null(strstr(clf_context_last_error(ctx), "warning: ignoring GEMM tuning file"));
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
    assert_non_null(strstr(clf_context_last_error(ctx), "warning"));
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
