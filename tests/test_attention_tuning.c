/*
 * test_attention_tuning.c — attention tiles per (device, head size): the tuning file (parsing,
 * malformed files, persistence, precedence of explicit tunables) and a short run of the tuner.
 * Results with tuned or hand-written tiles are checked against the naive path, itself checked
 * against a double reference in test_attention: agreement within 2e-6 * (1 + |value|).
 */
#include "harness.h"
#include "../src/internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void test_parse(void **state) {
    (void)state;
    clf_att_tile t[CLF_ATT_TILES_MAX];
    int n = -1;
    const char *why = NULL;
    assert_true(clf__attention_tuning_parse(
        "{\"format\": \"clformer-attention-tuning-1\", \"tiles\": [{\"head_dim\": 64, \"QB\": 16, "
        "\"BQ\": 4, \"ms\": 1.5}, {\"head_dim\": 24, \"QB\": 3, \"BQ\": 5}]}",
        64, t, &n, &why));
    assert_int_equal(n, 2);
    assert_int_equal(t[0].head_dim, 64);
    assert_int_equal(t[0].qb, 16);
    assert_int_equal(t[0].bq, 4);
    assert_int_equal(t[1].head_dim, 24);
    assert_int_equal(t[1].qb, 3);
    assert_int_equal(t[1].bq, 5);
    const char *bad[] = {
        "",
        "not json",
        "[]",
        "{\"format\": \"clformer-attention-tuning-1\"}",
        "{\"format\": \"other\", \"tiles\": [{\"head_dim\": 64, \"QB\": 1, \"BQ\": 4}]}",
        "{\"format\": \"clformer-attention-tuning-1\", \"tiles\": []}",
        "{\"format\": \"clformer-attention-tuning-1\", \"tiles\": {}}",
        "{\"format\": \"clformer-attention-tuning-1\", \"tiles\": [3]}",
        "{\"format\": \"clformer-attention-tuning-1\", \"tiles\": [{\"head_dim\": 64, \"QB\": 17, "
        "\"BQ\": 4}]}",
        "{\"format\": \"clformer-attention-tuning-1\", \"tiles\": [{\"head_dim\": 0, \"QB\": 1, "
        "\"BQ\": 4}]}",
        "{\"format\": \"clformer-attention-tuning-1\", \"tiles\": [{\"head_dim\": 257, \"QB\": 1, "
        "\"BQ\": 4}]}",
        "{\"format\": \"clformer-attention-tuning-1\", \"tiles\": [{\"head_dim\": 64, \"QB\": 1, "
        "\"BQ\": 65}]}", /* over the device's work-group limit (64 here) */
        "{\"format\": \"clformer-attention-tuning-1\", \"tiles\": [{\"head_dim\": 64, \"QB\": 1.5, "
        "\"BQ\": 4}]}",
        "{\"format\": \"clformer-attention-tuning-1\", \"tiles\": [{\"head_dim\": 64, \"QB\": "
        "\"2\", \"BQ\": 4}]}",
        "{\"format\": \"clformer-attention-tuning-1\", \"tiles\": [{\"head_dim\": 64, \"BQ\": 4}]}",
        "{\"format\": \"clformer-attention-tuning-1\", \"tiles\": [{\"head_dim\": 64, \"QB\": 1, "
        "\"BQ\": 4}, {\"head_dim\": 64, \"QB\": 2, \"BQ\": 4}]}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        why = NULL;
        n = -1;
        if (clf__attention_tuning_parse(bad[i], 64, t, &n, &why)) fail_msg("accepted: %s", bad[i]);
        assert_non_null(why);
        assert_int_equal(n, 0);
    }
}

/* The tiles for head size dh on ctx (public API); returns whether they were tuned. */
static int tiles(const clf_context *ctx, int64_t dh, int64_t *qb, int64_t *bq) {
    int tuned = -1;
    assert_int_equal(clf_attention_tiles(ctx, dh, qb, bq, &tuned), CLF_SUCCESS);
    assert_true(tuned == 0 || tuned == 1);
    return tuned;
}

static char g_dir[64];
static char g_file[600];

/* A fresh tuning folder in g_dir and this device's attention tuning file path in g_file. */
static void fresh_tuning_dir(void) {
    harness_fresh_tuning("atune-test", CLF_ATT_TUNING_KIND, g_dir, sizeof(g_dir), g_file,
                         sizeof(g_file));
}

/* Tiled attention (B 2, H 3, Nq 37, Nk 41, head size dh, valid lengths) on ctx agrees with the
 * naive path. */
static void check_tiled(clf_context *ctx, int64_t dh) {
    const int64_t B = 2, H = 3, NQ = 37, NK = 41, hd = H * dh;
    const int64_t sq[3] = {B, NQ, hd}, sk[3] = {B, NK, hd}, sl[1] = {B};
    float *hq = malloc(sizeof(float) * (size_t)(B * NQ * hd));
    float *hk = malloc(sizeof(float) * (size_t)(B * NK * hd));
    float *hv = malloc(sizeof(float) * (size_t)(B * NK * hd));
    for (int64_t i = 0; i < B * NQ * hd; i++)
        hq[i] = (float)rng_uniform(-2, 2);
    for (int64_t i = 0; i < B * NK * hd; i++) {
        hk[i] = (float)rng_uniform(-2, 2);
        hv[i] = (float)rng_uniform(-1, 1);
    }
    const int32_t lens[2] = {41, 29};
    clf_tensor *q, *k, *v, *vl, *o1, *o2;
    CLF_OK(clf_tensor_create(ctx, CLF_F32, 3, sq, &q));
    CLF_OK(clf_tensor_create(ctx, CLF_F32, 3, sk, &k));
    CLF_OK(clf_tensor_create(ctx, CLF_F32, 3, sk, &v));
    CLF_OK(clf_tensor_create(ctx, CLF_I32, 1, sl, &vl));
    CLF_OK(clf_tensor_create(ctx, CLF_F32, 3, sq, &o1));
    CLF_OK(clf_tensor_create(ctx, CLF_F32, 3, sq, &o2));
    CLF_OK(clf_tensor_write(q, hq, sizeof(float) * (size_t)(B * NQ * hd)));
    CLF_OK(clf_tensor_write(k, hk, sizeof(float) * (size_t)(B * NK * hd)));
    CLF_OK(clf_tensor_write(v, hv, sizeof(float) * (size_t)(B * NK * hd)));
    CLF_OK(clf_tensor_write(vl, lens, sizeof(lens)));
    CLF_OK(clf_tensor_fill(o1, NAN));
    CLF_OK(clf_tensor_fill(o2, NAN));
    clf_attention_params d = clf_attention_default_params(H, dh);
    d.mask.valid_lens = vl;
    CLF_OK(clf_attention(ctx, q, k, v, o1, &d));
    d.naive = 1;
    CLF_OK(clf_attention(ctx, q, k, v, o2, &d));
    float *a = malloc(sizeof(float) * (size_t)(B * NQ * hd));
    float *b = malloc(sizeof(float) * (size_t)(B * NQ * hd));
    CLF_OK(clf_tensor_read(o1, a, sizeof(float) * (size_t)(B * NQ * hd)));
    CLF_OK(clf_tensor_read(o2, b, sizeof(float) * (size_t)(B * NQ * hd)));
    for (int64_t i = 0; i < B * NQ * hd; i++)
        if (!(fabsf(a[i] - b[i]) <= 2e-6f * (1.0f + fabsf(b[i]))))
            fail_msg("Dh %lld element %lld: tiled %.9g, naive %.9g", (long long)dh, (long long)i,
                     (double)a[i], (double)b[i]);
    free(a);
    free(b);
    free(hq);
    free(hk);
    free(hv);
    clf_tensor *all[6] = {q, k, v, vl, o1, o2};
    for (int i = 0; i < 6; i++)
        clf_tensor_free(all[i]);
}

static void test_tune_save_and_reload(void **state) {
    (void)state;
    rng_seed(71);
    fresh_tuning_dir();
    clf_context *ctx = harness_context_in(g_dir);
    assert_string_equal(clf_attention_tuning_source(ctx), "defaults");
    int64_t qb0, bq0, qb, bq;
    CLF_OK(clf_context_get_tunable(ctx, "attention.QB", &qb0));
    CLF_OK(clf_context_get_tunable(ctx, "attention.BQ", &bq0));
    assert_int_equal(tiles(ctx, 24, &qb, &bq), 0);
    assert_true(qb == qb0 && bq == bq0);

    const int64_t dims[1] = {24};
    clf_tune_params tp = {.budget_s = 3.0, .save = 1};
    clf_attention_tune_result r;
    CLF_OK(clf_attention_tune(ctx, &tp, dims, 1, &r));
    assert_int_equal(r.count, 1);
    assert_int_equal(r.dims[0].head_dim, 24);
    assert_true(r.dims[0].qb >= 1 && r.dims[0].qb <= 16 && r.dims[0].bq >= 1);
    assert_true(r.dims[0].before_ms > 0 && r.dims[0].after_ms > 0);
    assert_true(r.candidates_tried >= 2); /* the pair in force, then at least one other */
    assert_string_equal(r.file, g_file);  /* where this device's file belongs */
    assert_true(access(r.file, R_OK) == 0);
    assert_non_null(strstr(clf_attention_tuning_source(ctx), "file:"));
    assert_int_equal(tiles(ctx, 24, &qb, &bq), 1); /* in force at once */
    assert_true(qb == r.dims[0].qb && bq == r.dims[0].bq);
    clf_context_free(ctx);

    /* A new context reads the file: the pair for Dh 24, the defaults for other head sizes. */
    ctx = harness_context_in(g_dir);
    assert_non_null(strstr(clf_attention_tuning_source(ctx), r.file));
    assert_int_equal(tiles(ctx, 24, &qb, &bq), 1);
    assert_true(qb == r.dims[0].qb && bq == r.dims[0].bq);
    assert_int_equal(tiles(ctx, 64, &qb, &bq), 0);
    assert_true(qb == qb0 && bq == bq0);
    check_tiled(ctx, 24);
    clf_context_free(ctx);
    harness_remove_tree(g_dir);
}

/* A hand-written pair (3 queries per work-item, groups of 5: neither divides anything) is used
 * and computes correctly; an explicit tunable then takes precedence. */
static void test_file_pair_and_precedence(void **state) {
    (void)state;
    rng_seed(72);
    fresh_tuning_dir();
    harness_write_file(g_file,
                       "{\"format\": \"clformer-attention-tuning-1\", \"tiles\": [{\"head_dim\": "
                       "24, \"QB\": 3, \"BQ\": 5}, {\"head_dim\": 64, \"QB\": 2, \"BQ\": 3}]}");
    clf_context *ctx = harness_context_in(g_dir);
    int64_t qb, bq;
    assert_int_equal(tiles(ctx, 24, &qb, &bq), 1);
    assert_true(qb == 3 && bq == 5);
    assert_int_equal(tiles(ctx, 64, &qb, &bq), 1);
    assert_true(qb == 2 && bq == 3);
    check_tiled(ctx, 24);
    check_tiled(ctx, 64);
    CLF_OK(clf_context_set_tunable(ctx, "attention.QB", 4));
    assert_int_equal(tiles(ctx, 24, &qb, &bq), 0);
    int64_t bq_t;
    CLF_OK(clf_context_get_tunable(ctx, "attention.BQ", &bq_t));
    assert_true(qb == 4 && bq == bq_t);
    clf_context_free(ctx);
    harness_remove_tree(g_dir);
}

static void test_malformed_file_ignored(void **state) {
    (void)state;
    fresh_tuning_dir();
    harness_write_file(g_file,
                       "{\"format\": \"clformer-attention-tuning-1\", \"tiles\": [{\"head_dim\"");
    clf_context *ctx = harness_context_in(g_dir);
    assert_string_equal(clf_attention_tuning_source(ctx), "defaults");
    assert_non_null(strstr(clf_context_last_warning(ctx), "ignoring attention tuning file"));
    check_tiled(ctx, 24); /* and attention still works, with the defaults */
    clf_context_free(ctx);
    harness_remove_tree(g_dir);
}

static void test_bad_arguments(void **state) {
    (void)state;
    clf_attention_tune_result r;
    clf_tune_params tp = {.budget_s = 0};
    const int64_t dims[2] = {64, 64}, big[1] = {300};
    assert_int_equal(clf_attention_tune(g_ctx, &tp, NULL, 0, &r), CLF_ERROR_INVALID_ARGUMENT);
    tp.budget_s = 1;
    assert_int_equal(clf_attention_tune(g_ctx, NULL, NULL, 0, &r), CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_attention_tune(NULL, &tp, NULL, 0, &r), CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_attention_tune(g_ctx, &tp, NULL, 0, NULL), CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_attention_tune(g_ctx, &tp, dims, 2, &r), CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_attention_tune(g_ctx, &tp, big, 1, &r), CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_attention_tune(g_ctx, &tp, dims, 0, &r), CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_attention_tune(g_ctx, &tp, dims, 17, &r), CLF_ERROR_INVALID_ARGUMENT);
    assert_string_equal(clf_attention_tuning_source(NULL), "");
    int64_t qb, bq;
    assert_int_equal(clf_attention_tiles(NULL, 64, &qb, &bq, NULL), CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_attention_tiles(g_ctx, 0, &qb, &bq, NULL), CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_attention_tiles(g_ctx, 64, NULL, &bq, NULL), CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_attention_tiles(g_ctx, 64, &qb, &bq, NULL), CLF_SUCCESS);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_tune_save_and_reload),
        cmocka_unit_test(test_file_pair_and_precedence),
        cmocka_unit_test(test_malformed_file_ignored),
    };
    return HARNESS_RUN("attention_tuning", tests);
}
