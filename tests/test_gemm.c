/*
 * test_gemm.c — matrix products through CLBlast against the double reference.
 *
 * Error bound per element: |got - want| <= (k + 4) * 2^-24 * mag + 1e-30, where
 * mag = |alpha| sum_q |a_iq b_qj| + |beta c_ij|: the classic bound for a float dot product of
 * length k (every partial sum rounds once), plus the alpha/beta scaling and the final add.
 */
#include "harness.h"
#include "ref/ref.h"
#include "../src/internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check_gemm(const char *what, const float *got, const double *want, const double *mag,
                       int64_t count, int64_t k) {
    for (int64_t i = 0; i < count; i++) {
        double tol = (double)(k + 4) * 5.9604644775390625e-8 * mag[i] + 1e-30;
        if (!(fabs((double)got[i] - want[i]) <= tol))
            fail_msg("%s: [%lld] got %.9g want %.9g (tol %.3g)", what, (long long)i, (double)got[i],
                     want[i], tol);
    }
}

static void run_matmul(int ta, int tb, int64_t m, int64_t n, int64_t k, int64_t batch, float alpha,
                       float beta) {
    const int nd = batch > 1 ? 3 : 2;
    /* Shapes: (rows, cols) for 2-D, (batch, rows, cols) for 3-D. */
    const int o = nd == 3 ? 1 : 0;
    int64_t shape_a[3] = {batch, 0, 0}, shape_b[3] = {batch, 0, 0}, shape_c[3] = {batch, 0, 0};
    shape_a[o] = ta ? k : m;
    shape_a[o + 1] = ta ? m : k;
    shape_b[o] = tb ? n : k;
    shape_b[o + 1] = tb ? k : n;
    shape_c[o] = m;
    shape_c[o + 1] = n;
    float *a = rng_floats(batch * m * k), *b = rng_floats(batch * k * n),
          *c0 = rng_floats(batch * m * n);
    double *want = malloc(sizeof(double) * (size_t)(batch * m * n));
    double *mag = malloc(sizeof(double) * (size_t)(batch * m * n));
    for (int64_t i = 0; i < batch; i++)
        ref_gemm(ta, tb, m, n, k, alpha, a + i * m * k, ta ? m : k, b + i * k * n, tb ? k : n, beta,
                 c0 + i * m * n, want + i * m * n, n, mag + i * m * n);
    clf_tensor *ta_t = tensor_from(CLF_F32, nd, shape_a, a),
               *tb_t = tensor_from(CLF_F32, nd, shape_b, b);
    clf_tensor *tc = beta != 0.0f ? tensor_from(CLF_F32, nd, shape_c, c0)
                                  : tensor_poisoned(CLF_F32, nd, shape_c);
    CLF_OK(clf_matmul(g_ctx, ta ? CLF_TRANS : CLF_NO_TRANS, tb ? CLF_TRANS : CLF_NO_TRANS, alpha,
                      ta_t, tb_t, beta, tc));
    float *got = tensor_to_host(tc);
    char what[128];
    snprintf(what, sizeof(what), "matmul %s%s m %lld n %lld k %lld batch %lld", ta ? "T" : "N",
             tb ? "T" : "N", (long long)m, (long long)n, (long long)k, (long long)batch);
    check_gemm(what, got, want, mag, batch * m * n, k);
    free(got);
    free(a);
    free(b);
    free(c0);
    free(want);
    free(mag);
    clf_tensor_free(ta_t);
    clf_tensor_free(tb_t);
    clf_tensor_free(tc);
}

static void test_matmul_shapes(void **state) {
    (void)state;
    rng_seed(51);
    const int64_t dims[][3] = {{1, 1, 1},       {17, 1, 129},   {1, 129, 17},
                               {129, 17, 1},    {17, 17, 17},   {129, 129, 129},
                               {1000, 17, 129}, {17, 1000, 64}, {200, 300, 1000}};
    for (size_t i = 0; i < sizeof(dims) / sizeof(dims[0]); i++)
        for (int t = 0; t < 4; t++)
            run_matmul(t & 1, t >> 1, dims[i][0], dims[i][1], dims[i][2], 1, 1.0f, 0.0f);
    /* alpha, beta and a large product (the indirect kernel). */
    run_matmul(0, 1, 129, 17, 1000, 1, 0.5f, -2.0f);
    run_matmul(1, 0, 600, 700, 500, 1, 1.0f, 1.0f);
}

static void test_matmul_batched(void **state) {
    (void)state;
    rng_seed(52);
    run_matmul(0, 1, 17, 33, 64, 3, 1.0f, 0.0f);
    run_matmul(1, 0, 5, 129, 7, 4, 0.25f, 1.0f);
    run_matmul(0, 0, 1, 1, 1000, 6, 1.0f, 0.0f);
}

/* Both routes on any device: the packed kernels (linear.PACK 1, the CPU default) and CLBlast
 * (0), with transposes, alpha/beta, batches and a B shared by the batch (b_stride 0, as grouped-
 * query attention's naive path passes), at sizes that are no multiple of a panel or a row block. */
static void test_matmul_routes(void **state) {
    (void)state;
    rng_seed(54);
    int64_t pack0 = 0;
    CLF_OK(clf_context_get_tunable(g_ctx, "linear.PACK", &pack0));
    for (int pack = 0; pack < 2; pack++) {
        CLF_OK(clf_context_set_tunable(g_ctx, "linear.PACK", pack));
        for (int t = 0; t < 4; t++) {
            run_matmul(t & 1, t >> 1, 37, 45, 29, 1, 1.0f, 0.0f);
            run_matmul(t & 1, t >> 1, 3, 70, 33, 2, -0.5f, 0.75f);
        }
        const int64_t B = 3, m = 11, n = 19, k = 23;
        int64_t sa[3] = {B, m, k}, sb[2] = {n, k}, sc[3] = {B, m, n};
        float *a = rng_floats(B * m * k), *b = rng_floats(n * k);
        clf_tensor *ta = tensor_from(CLF_F32, 3, sa, a), *tb = tensor_from(CLF_F32, 2, sb, b);
        clf_tensor *tc = tensor_poisoned(CLF_F32, 3, sc);
        CLF_OK(clf_gemm_strided_batched(g_ctx, CLF_NO_TRANS, CLF_TRANS, m, n, k, 2.0f, ta, 0, k,
                                        m * k, tb, 0, k, 0, 0.0f, tc, 0, n, m * n, B));
        float *got = tensor_to_host(tc);
        double *want = malloc(sizeof(double) * (size_t)(B * m * n));
        double *mag = malloc(sizeof(double) * (size_t)(B * m * n));
        for (int64_t i = 0; i < B; i++)
            ref_gemm(0, 1, m, n, k, 2.0, a + i * m * k, k, b, k, 0.0, NULL, want + i * m * n, n,
                     mag + i * m * n);
        check_gemm(pack ? "shared B, packed" : "shared B, CLBlast", got, want, mag, B * m * n, k);
        free(got);
        free(want);
        free(mag);
        free(a);
        free(b);
        clf_tensor_free(ta);
        clf_tensor_free(tb);
        clf_tensor_free(tc);
    }
    CLF_OK(clf_context_set_tunable(g_ctx, "linear.PACK", pack0));
}

/* A context that ran CLBlast lets go of its cl_context when freed (CLBlast's program cache
 * retained it: one CUDA context leaked per clformer context on NVIDIA). */
static void test_clblast_releases_context(void **state) {
    (void)state;
    clf_context_params p = clf_context_default_params(); /* $CLF_DEVICE, as g_ctx */
    clf_context *ctx = NULL;
    CLF_OK(clf_context_create(&ctx, &p));
    CLF_OK(clf_context_set_tunable(ctx, "linear.PACK", 0));
    int64_t sa[2] = {5, 7}, sb[2] = {7, 3}, sc[2] = {5, 3};
    clf_tensor *a = NULL, *b = NULL, *c = NULL;
    CLF_OK(clf_tensor_create(ctx, CLF_F32, 2, sa, &a));
    CLF_OK(clf_tensor_create(ctx, CLF_F32, 2, sb, &b));
    CLF_OK(clf_tensor_create(ctx, CLF_F32, 2, sc, &c));
    CLF_OK(clf_matmul(ctx, CLF_NO_TRANS, CLF_NO_TRANS, 1.0f, a, b, 0.0f, c));
    CLF_OK(clf_context_finish(ctx));
    clf_tensor_free(a);
    clf_tensor_free(b);
    clf_tensor_free(c);
    harness_free_checked(ctx, "a context that ran CLBlast");
}

/* Per-head products straight out of a fused QKV projection (B, N, 3 * H * Dh): for each batch,
 * H products Q_h K_h^T of (N, Dh) x (Dh, N), with row stride 3 H Dh and head stride Dh. */
static void test_strided_heads(void **state) {
    (void)state;
    rng_seed(53);
    const int64_t B = 2, N = 13, H = 3, Dh = 7, W = 3 * H * Dh;
    int64_t qkv_shape[3] = {B, N, W}, s_shape[4] = {B, H, N, N};
    float *qkv = rng_floats(B * N * W);
    clf_tensor *tq = tensor_from(CLF_F32, 3, qkv_shape, qkv);
    clf_tensor *ts = tensor_poisoned(CLF_F32, 4, s_shape);
    for (int64_t b = 0; b < B; b++)
        CLF_OK(clf_gemm_strided_batched(g_ctx, CLF_NO_TRANS, CLF_TRANS, N, N, Dh, 0.5f, tq,
                                        b * N * W, W, Dh, tq, b * N * W + H * Dh, W, Dh, 0.0f, ts,
                                        b * H * N * N, N, N * N, H));
    float *got = tensor_to_host(ts);
    double *want = malloc(sizeof(double) * (size_t)(B * H * N * N));
    double *mag = malloc(sizeof(double) * (size_t)(B * H * N * N));
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++)
            ref_gemm(0, 1, N, N, Dh, 0.5, qkv + b * N * W + h * Dh, W,
                     qkv + b * N * W + H * Dh + h * Dh, W, 0.0, NULL, want + (b * H + h) * N * N, N,
                     mag + (b * H + h) * N * N);
    check_gemm("per-head QK^T", got, want, mag, B * H * N * N, Dh);
    /* A slice that runs past the tensor is refused, and nothing is written. */
    CLF_OK(clf_tensor_fill(ts, NAN));
    assert_int_equal(clf_gemm_strided_batched(g_ctx, CLF_NO_TRANS, CLF_TRANS, N, N, Dh, 1.0f, tq, 0,
                                              W, Dh, tq, H * Dh, W, Dh, 0.0f, ts, 0, N, N * N,
                                              H + 100),
                     CLF_ERROR_SHAPE_MISMATCH);
    assert_non_null(strstr(clf_context_last_error(g_ctx), "past the"));
    assert_int_equal(clf_gemm_strided_batched(g_ctx, CLF_NO_TRANS, CLF_TRANS, N, N, Dh, 1.0f, tq, 0,
                                              Dh - 1, Dh, tq, 0, W, Dh, 0.0f, ts, 0, N, N * N, 1),
                     CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_gemm_strided_batched(g_ctx, CLF_NO_TRANS, CLF_TRANS, 0, N, Dh, 1.0f, tq, 0,
                                              W, Dh, tq, 0, W, Dh, 0.0f, ts, 0, N, N * N, 1),
                     CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_gemm_strided_batched(g_ctx, CLF_NO_TRANS, CLF_TRANS, N, N, Dh, 1.0f, tq,
                                              -1, W, Dh, tq, 0, W, Dh, 0.0f, ts, 0, N, N * N, 1),
                     CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_gemm_strided_batched(g_ctx, CLF_NO_TRANS, CLF_TRANS, N, N, Dh, 1.0f, tq, 0,
                                              W, Dh, tq, 0, W, Dh, 0.0f, tq, 0, N, N * N, 1),
                     CLF_ERROR_INVALID_ARGUMENT);
    float *after = tensor_to_host(ts);
    for (int64_t i = 0; i < B * H * N * N; i++)
        assert_true(isnan(after[i]));
    free(after);
    free(got);
    free(want);
    free(mag);
    free(qkv);
    clf_tensor_free(tq);
    clf_tensor_free(ts);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matmul_shapes),
        cmocka_unit_test(test_matmul_batched),
        cmocka_unit_test(test_strided_heads),
        cmocka_unit_test(test_matmul_routes),
        cmocka_unit_test(test_clblast_releases_context),
    };
    return HARNESS_RUN("gemm", tests);
}
