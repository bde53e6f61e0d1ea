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

static float *random_floats(int64_t n) {
    float *x = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++)
        x[i] = (float)rng_uniform(-1, 1);
    return x;
}

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
    float *a = random_floats(batch * m * k), *b = random_floats(batch * k * n),
          *c0 = random_floats(batch * m * n);
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

/* Per-head products straight out of a fused QKV projection (B, N, 3 * H * Dh): for each batch,
 * H products Q_h K_h^T of (N, Dh) x (Dh, N), with row stride 3 H Dh and head stride Dh. */
static void test_strided_heads(void **state) {
    (void)state;
    rng_seed(53);
    const int64_t B = 2, N = 13, H = 3, Dh = 7, W = 3 * H * Dh;
    int64_t qkv_shape[3] = {B, N, W}, s_shape[4] = {B, H, N, N};
    float *qkv = random_floats(B * N * W);
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

/* clf_linear on x (lead, per, in) against the double reference, every activation, with and
 * without bias. */
static int g_packed; /* 1: linear_case packs w and runs clf__linear_packed */

static void linear_case(int64_t lead, int64_t per, int64_t in, int64_t out) {
    int64_t xs[3] = {lead, per, in}, ws[2] = {out, in}, ys[3] = {lead, per, out};
    const int64_t rows = lead * per;
    float *x = random_floats(rows * in), *w = random_floats(out * in), *b = random_floats(out);
    clf_tensor *tx = tensor_from(CLF_F32, 3, xs, x), *tw = tensor_from(CLF_F32, 2, ws, w);
    clf_tensor *tb = tensor_from(CLF_F32, 1, &out, b);
    double *lin = malloc(sizeof(double) * (size_t)(rows * out)),
           *mag = malloc(sizeof(double) * (size_t)(rows * out));
    ref_gemm(0, 1, rows, out, in, 1.0, x, in, w, in, 0.0, NULL, lin, out, mag);
    clf_tensor *tp = NULL;
    if (g_packed) CLF_OK(clf__linear_pack(g_ctx, tw, &tp));
    for (int act = 0; act <= 3; act++) {
        for (int with_bias = 0; with_bias <= 1; with_bias++) {
            clf_tensor *ty = tensor_poisoned(CLF_F32, 3, ys);
            if (g_packed)
                CLF_OK(clf__linear_packed(g_ctx, tx, tp, out, with_bias ? tb : NULL,
                                          (clf_activation)act, ty));
            else
                CLF_OK(clf_linear(g_ctx, tx, tw, with_bias ? tb : NULL, (clf_activation)act, ty));
            float *got = tensor_to_host(ty);
            for (int64_t r = 0; r < rows; r++)
                for (int64_t j = 0; j < out; j++) {
                    double v = lin[r * out + j] + (with_bias ? b[j] : 0.0);
                    double want = ref_act(v, act);
                    /* GEMM bound, carried through the activation (slope <= 1.13), plus the
                     * activation's own bound (test_elementwise.c). */
                    double tol = 1.13 * ((double)(in + 4) * 5.9604644775390625e-8 *
                                             (mag[r * out + j] + fabs(b[j])) +
                                         1e-30) +
                                 1e-7 + 4.76837158203125e-7 * (fabs(want) + fabs(v));
                    if (!(fabs((double)got[r * out + j] - want) <= tol))
                        fail_msg("linear act %d bias %d [%lld, %lld]: got %.9g want %.9g", act,
                                 with_bias, (long long)r, (long long)j, (double)got[r * out + j],
                                 want);
                }
            free(got);
            clf_tensor_free(ty);
        }
    }
    free(x);
    free(w);
    free(b);
    free(lin);
    free(mag);
    clf_tensor_free(tx);
    clf_tensor_free(tw);
    clf_tensor_free(tb);
    clf_tensor_free(tp);
}

/* The linear_rows kernel (few rows when decoding; every size on CPUs): every tunable style, row
 * counts around its block size and past several groups of blocks, awkward widths. */
typedef struct linear_shapes {
    int64_t rows[6], ins[2], outs[2];
    size_t n_rows;
} linear_shapes;
static const linear_shapes k_linear_shapes = {{1, 3, 4, 5, 16, 67}, {77, 515}, {1, 203}, 6};
/* Simulator-sized (Oclgrind): still partial row blocks, panels and vectors. */
static const linear_shapes k_linear_small = {{1, 5, 9}, {7, 37}, {1, 19}, 3};

static void linear_rows_styles(const linear_shapes *sh) {
    /* ROWS OPI LW VW GM; style 0 is the device's defaults */
    const int64_t styles[3][5] = {{0, 0, 0, 0, 0}, {4, 1, 64, 4, 8}, {3, 3, 2, 1, 3}};
    const int64_t *rows = sh->rows, *ins = sh->ins, *outs = sh->outs;
    const char *names[] = {"elementwise.SK_ROWS", "elementwise.SK_OPI", "elementwise.SK_LW",
                           "elementwise.VW", "elementwise.SK_GM"};
    int64_t defaults[5], skinny;
    for (int i = 0; i < 5; i++)
        CLF_OK(clf_context_get_tunable(g_ctx, names[i], &defaults[i]));
    CLF_OK(clf_context_get_tunable(g_ctx, "elementwise.SKINNY_MAX", &skinny));
    CLF_OK(clf_context_set_tunable(g_ctx, "elementwise.SKINNY_MAX", 1 << 20));
    for (int st = 0; st < 3; st++) {
        if (st > 0)
            for (int i = 0; i < 5; i++)
                CLF_OK(clf_context_set_tunable(g_ctx, names[i], styles[st][i]));
        for (size_t r = 0; r < sh->n_rows; r++)
            for (size_t i = 0; i < 2; i++)
                for (size_t o = 0; o < 2; o++)
                    linear_case(1, rows[r], ins[i], outs[o]);
    }
    for (int i = 0; i < 5; i++)
        CLF_OK(clf_context_set_tunable(g_ctx, names[i], defaults[i]));
    CLF_OK(clf_context_set_tunable(g_ctx, "elementwise.SKINNY_MAX", skinny));
}

static void test_linear_rows_kernel(void **state) {
    (void)state;
    rng_seed(55);
    linear_rows_styles(&k_linear_shapes);
}

/* Packed weights (clf__linear_pack + linear_packed, the CPU path of the model layers): every
 * style of tunables, partial row blocks and panels, every activation; a packing made under other
 * tunables is refused. */
static void linear_packed_styles(const linear_shapes *sh) {
    /* R NV VW GM; style 0 is the device's defaults */
    const int64_t styles[3][4] = {{0, 0, 0, 0}, {3, 3, 4, 2}, {1, 1, 1, 1}};
    const char *names[] = {"elementwise.PK_R", "elementwise.PK_NV", "elementwise.VW",
                           "elementwise.PK_GM"};
    const int64_t *rows = sh->rows, *ins = sh->ins, *outs = sh->outs;
    int64_t defaults[4];
    for (int i = 0; i < 4; i++)
        CLF_OK(clf_context_get_tunable(g_ctx, names[i], &defaults[i]));
    g_packed = 1;
    for (int st = 0; st < 3; st++) {
        if (st > 0)
            for (int i = 0; i < 4; i++)
                CLF_OK(clf_context_set_tunable(g_ctx, names[i], styles[st][i]));
        for (size_t r = 0; r < sh->n_rows; r++)
            for (size_t i = 0; i < 2; i++)
                for (size_t o = 0; o < 2; o++)
                    linear_case(1, rows[r], ins[i], outs[o]);
    }
    g_packed = 0;
    for (int i = 0; i < 4; i++)
        CLF_OK(clf_context_set_tunable(g_ctx, names[i], defaults[i]));
}

static void test_linear_packed(void **state) {
    (void)state;
    rng_seed(56);
    linear_packed_styles(&k_linear_shapes);
    const char *names[] = {"elementwise.PK_R", "elementwise.PK_NV", "elementwise.VW",
                           "elementwise.PK_GM"};
    const int64_t style2[4] = {1, 1, 1, 1};
    int64_t defaults[4];
    for (int i = 0; i < 4; i++) {
        CLF_OK(clf_context_get_tunable(g_ctx, names[i], &defaults[i]));
        CLF_OK(clf_context_set_tunable(g_ctx, names[i], style2[i]));
    }
    /* packed under style 2 (panels of 1), used under the defaults: refused, y untouched */
    int64_t ws[2] = {9, 5}, xs[2] = {4, 5}, ys[2] = {4, 9};
    clf_tensor *w = tensor_poisoned(CLF_F32, 2, ws), *x = tensor_poisoned(CLF_F32, 2, xs);
    clf_tensor *y = tensor_poisoned(CLF_F32, 2, ys), *p = NULL;
    CLF_OK(clf__linear_pack(g_ctx, w, &p));
    for (int i = 0; i < 4; i++)
        CLF_OK(clf_context_set_tunable(g_ctx, names[i], defaults[i]));
    if (defaults[1] * defaults[2] != 1)
        assert_int_equal(clf__linear_packed(g_ctx, x, p, 9, NULL, CLF_ACT_IDENTITY, y),
                         CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf__linear_packed(g_ctx, x, p, 10, NULL, CLF_ACT_IDENTITY, y),
                     CLF_ERROR_SHAPE_MISMATCH);
    float *after = tensor_to_host(y);
    for (int i = 0; i < 36; i++)
        assert_true(isnan(after[i]));
    free(after);
    clf_tensor_free(w);
    clf_tensor_free(x);
    clf_tensor_free(y);
    clf_tensor_free(p);
}

static void test_linear(void **state) {
    (void)state;
    rng_seed(54);
    int64_t skinny;
    CLF_OK(clf_context_get_tunable(g_ctx, "elementwise.SKINNY_MAX", &skinny));
    linear_case(2, 9, 77, 129); /* 18 rows: the device's default path */
    CLF_OK(clf_context_set_tunable(g_ctx, "elementwise.SKINNY_MAX", 1));
    linear_case(2, 9, 77, 129); /* CLBlast's GEMM + the bias_act epilogue */
    CLF_OK(clf_context_set_tunable(g_ctx, "elementwise.SKINNY_MAX", skinny));
    const int64_t in = 77, out = 129;
    int64_t xs[3] = {2, 9, in}, ws[2] = {out, in}, ys[3] = {2, 9, out};
    float *x = random_floats(18 * in), *w = random_floats(out * in), *b = random_floats(out);
    clf_tensor *tx = tensor_from(CLF_F32, 3, xs, x), *tw = tensor_from(CLF_F32, 2, ws, w);
    clf_tensor *tb = tensor_from(CLF_F32, 1, &out, b);
    /* Bad input: nothing is written. */
    clf_tensor *ty = tensor_poisoned(CLF_F32, 3, ys);
    int64_t ws_bad[2] = {out, in + 1}, ys_bad[3] = {2, 8, out}, one = out + 1;
    clf_tensor *tw_bad = tensor_poisoned(CLF_F32, 2, ws_bad),
               *ty_bad = tensor_poisoned(CLF_F32, 3, ys_bad);
    clf_tensor *tb_bad = tensor_poisoned(CLF_F32, 1, &one);
    assert_int_equal(clf_linear(g_ctx, tx, tw_bad, NULL, CLF_ACT_IDENTITY, ty),
                     CLF_ERROR_SHAPE_MISMATCH);
    assert_non_null(strstr(clf_context_last_error(g_ctx), "linear"));
    assert_int_equal(clf_linear(g_ctx, tx, tw, NULL, CLF_ACT_IDENTITY, ty_bad),
                     CLF_ERROR_SHAPE_MISMATCH);
    assert_int_equal(clf_linear(g_ctx, tx, tw, tb_bad, CLF_ACT_RELU, ty), CLF_ERROR_SHAPE_MISMATCH);
    assert_int_equal(clf_linear(g_ctx, tx, tw, tb, (clf_activation)9, ty),
                     CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_linear(g_ctx, tx, NULL, tb, CLF_ACT_RELU, ty), CLF_ERROR_INVALID_ARGUMENT);
    float *after = tensor_to_host(ty);
    for (int64_t i = 0; i < 18 * out; i++)
        assert_true(isnan(after[i]));
    free(after);
    /* matmul shape errors. */
    assert_int_equal(clf_matmul(g_ctx, CLF_NO_TRANS, CLF_NO_TRANS, 1.0f, tx, tw, 0.0f, ty),
                     CLF_ERROR_SHAPE_MISMATCH);
    assert_int_equal(clf_matmul(g_ctx, CLF_NO_TRANS, CLF_TRANS, NAN, tw, tw, 0.0f, tw_bad),
                     CLF_ERROR_SHAPE_MISMATCH);
    free(x);
    free(w);
    free(b);
    clf_tensor_free(tx);
    clf_tensor_free(tw);
    clf_tensor_free(tb);
    clf_tensor_free(ty);
    clf_tensor_free(tw_bad);
    clf_tensor_free(ty_bad);
    clf_tensor_free(tb_bad);
}

/* A device that allows 1, 3 or 32 work-items per group: clformer's own linear kernels. */
static void test_wg_caps(void **state) {
    harness_under_wg_caps(test_linear_rows_kernel, state);
    harness_under_wg_caps(test_linear_packed, state);
}

/* The same kernels at simulator-sized shapes, also under the caps (the Oclgrind label). */
static void test_linear_small(void **state) {
    (void)state;
    rng_seed(57);
    linear_rows_styles(&k_linear_small);
    linear_packed_styles(&k_linear_small);
}

static void test_linear_small_caps(void **state) {
    harness_under_wg_caps(test_linear_small, state);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matmul_shapes),
        cmocka_unit_test(test_matmul_batched),
        cmocka_unit_test(test_strided_heads),
        cmocka_unit_test(test_linear),
        cmocka_unit_test(test_linear_rows_kernel),
        cmocka_unit_test(test_linear_packed),
        cmocka_unit_test(test_wg_caps),
        cmocka_unit_test(test_linear_small),
        cmocka_unit_test(test_linear_small_caps),
    };
    return HARNESS_RUN("gemm", tests);
}
