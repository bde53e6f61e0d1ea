/*
 * test_layernorm.c — LayerNorm and RMSNorm with and without the fused residual against the double
 * reference.
 *
 * Error bound: |got - want| <= 2^-24 * (32 + 2 * sqrt(n)) * (|z_hat| |gamma| + |beta| + 1), where
 * z_hat is the normalized value (|want - beta| / |gamma|, bounded by sqrt(n)). The mean and the
 * variance are float sums of n terms whose rounding errors grow like sqrt(n) ulps on random data;
 * rsqrt, the products and the final fma add a few ulps; we state the bound on the output scale
 * (gamma, beta). Measured worst error is well inside it (see the assertion messages on failure).
 * RMSNorm: |got - want| <= 2^-24 (32 + 2 sqrt(n)) |want| + 1e-30: its output is z * rstd * gamma,
 * products of the row's own value (one rounding each) and of rstd, whose only error is the float
 * sum of n squares (relative, growing like sqrt(n) ulps) and the rsqrt; the residual stream it
 * writes (sum) is the float sum x + res, correctly rounded: exactly (float)(x + res).
 */
#include "harness.h"
#include "ref/ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const int64_t k_lengths[] = {1, 3, 7, 64, 77, 384, 1000, 4097};

/* A random ndim-D shape ending in n (leading dims 1..5, 1..3 for long rows); returns its numel. */
static int64_t random_rows(int ndim, int64_t n, int64_t *shape) {
    int64_t numel = n;
    for (int d = 0; d < ndim - 1; d++) {
        shape[d] = rng_int(1, n > 1000 ? 3 : 5);
        numel *= shape[d];
    }
    shape[ndim - 1] = n;
    return numel;
}

static void check_ln(const char *what, const float *got, const double *want, const float *gamma,
                     const float *beta, int64_t rows, int64_t n) {
    const double u = 5.9604644775390625e-8, c = u * (32.0 + 2.0 * sqrt((double)n)) * 4.0;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t i = 0; i < n; i++) {
            double w = want[r * n + i];
            double zh = gamma[i] != 0 ? fabs((w - beta[i]) / gamma[i]) : 0.0;
            double tol = c * (zh * fabs(gamma[i]) + fabs(beta[i]) + 1.0);
            double err = fabs((double)got[r * n + i] - w);
            if (!(err <= tol))
                fail_msg("%s: [%lld, %lld] got %.9g want %.9g (|err| %.3g > %.3g)", what,
                         (long long)r, (long long)i, (double)got[r * n + i], w, err, tol);
        }
}

static void run_case(const char *what, int ndim, const int64_t *shape, const float *x,
                     const float *res, const float *gamma, const float *beta, float eps,
                     int inplace) {
    int64_t numel = 1;
    for (int i = 0; i < ndim; i++)
        numel *= shape[i];
    const int64_t n = shape[ndim - 1], rows = numel / n;
    clf_tensor *tx = tensor_from(CLF_F32, ndim, shape, x);
    clf_tensor *tr = res ? tensor_from(CLF_F32, ndim, shape, res) : NULL;
    clf_tensor *tg = tensor_from(CLF_F32, 1, &n, gamma);
    clf_tensor *tb = tensor_from(CLF_F32, 1, &n, beta);
    clf_tensor *out = inplace == 1           ? tx
                      : (inplace == 2 && tr) ? tr
                                             : tensor_poisoned(CLF_F32, ndim, shape);
    CLF_OK(clf_layernorm(g_ctx, tx, tr, tg, tb, eps, out));
    float *got = tensor_to_host(out);
    double *want = malloc(sizeof(double) * (size_t)numel);
    ref_layernorm(x, res, gamma, beta, eps, want, rows, n);
    check_ln(what, got, want, gamma, beta, rows, n);
    free(got);
    free(want);
    if (out != tx && out != tr) clf_tensor_free(out);
    clf_tensor_free(tx);
    clf_tensor_free(tr);
    clf_tensor_free(tg);
    clf_tensor_free(tb);
}

static void test_shapes(void **state) {
    (void)state;
    rng_seed(21);
    for (int s = 0; s < 3; s++) {
        use_tunables("layernorm", k_styles[s].vw, k_styles[s].wg, k_styles[s].rpg);
        for (size_t li = 0; li < sizeof(k_lengths) / sizeof(k_lengths[0]); li++) {
            const int64_t n = k_lengths[li];
            const int ndim = 1 + (int)(li % 4);
            int64_t shape[4];
            const int64_t numel = random_rows(ndim, n, shape);
            float *x = malloc(sizeof(float) * (size_t)numel),
                  *r = malloc(sizeof(float) * (size_t)numel);
            float *g = malloc(sizeof(float) * (size_t)n), *b = malloc(sizeof(float) * (size_t)n);
            for (int64_t i = 0; i < numel; i++) {
                x[i] = (float)(rng_normal() * 2.0 + 0.5);
                r[i] = (float)(rng_normal());
            }
            for (int64_t i = 0; i < n; i++) {
                g[i] = (float)rng_uniform(0.5, 1.5);
                b[i] = (float)rng_uniform(-0.5, 0.5);
            }
            run_case("layernorm", ndim, shape, x, NULL, g, b, 1e-5f, (int)(li % 2));
            run_case("add_layernorm", ndim, shape, x, r, g, b, 1e-5f, (int)(li % 3));
            free(x);
            free(r);
            free(g);
            free(b);
        }
    }
}

/* RMSNorm: out new or in place on x or the residual, sum new, in place on the other input, or
 * not asked for. */
static void run_rms(int ndim, const int64_t *shape, const float *x, const float *res,
                    const float *gamma, float eps, int where) {
    int64_t numel = 1;
    for (int i = 0; i < ndim; i++)
        numel *= shape[i];
    const int64_t n = shape[ndim - 1], rows = numel / n;
    clf_tensor *tx = tensor_from(CLF_F32, ndim, shape, x);
    clf_tensor *tr = res ? tensor_from(CLF_F32, ndim, shape, res) : NULL;
    clf_tensor *tg = tensor_from(CLF_F32, 1, &n, gamma);
    /* where 0: out and sum new; 1: out on x, sum on res; 2: out on res, sum on x; 3: no sum */
    clf_tensor *out = (where == 1)         ? tx
                      : (where == 2 && tr) ? tr
                                           : tensor_poisoned(CLF_F32, ndim, shape);
    clf_tensor *sum = where == 3                  ? NULL
                      : (where == 1 && tr)        ? tr
                      : (where == 2 && out != tx) ? tx
                                                  : tensor_poisoned(CLF_F32, ndim, shape);
    CLF_OK(clf_rmsnorm(g_ctx, tx, tr, tg, eps, sum, out));
    float *got = tensor_to_host(out);
    double *want = malloc(sizeof(double) * (size_t)numel);
    ref_rmsnorm(x, res, gamma, eps, want, rows, n);
    const double c = 5.9604644775390625e-8 * (32.0 + 2.0 * sqrt((double)n));
    for (int64_t i = 0; i < numel; i++) {
        const double err = fabs((double)got[i] - want[i]), tol = c * fabs(want[i]) + 1e-30;
        if (!(err <= tol))
            fail_msg(
                "rmsnorm n %lld res %d where %d [%lld]: got %.9g want %.9g (|err| %.3g > %.3g)",
                (long long)n, res != NULL, where, (long long)i, (double)got[i], want[i], err, tol);
    }
    free(got);
    if (sum) {
        float *gs = tensor_to_host(sum);
        for (int64_t i = 0; i < numel; i++) {
            const float z = res ? x[i] + res[i] : x[i];
            if (gs[i] != z)
                fail_msg("rmsnorm sum n %lld [%lld]: got %.9g want %.9g", (long long)n,
                         (long long)i, (double)gs[i], (double)z);
        }
        free(gs);
    }
    free(want);
    if (out != tx && out != tr) clf_tensor_free(out);
    if (sum && sum != tx && sum != tr) clf_tensor_free(sum);
    clf_tensor_free(tx);
    clf_tensor_free(tr);
    clf_tensor_free(tg);
}

static void test_rmsnorm(void **state) {
    (void)state;
    rng_seed(23);
    for (int s = 0; s < 3; s++) {
        use_tunables("layernorm", k_styles[s].vw, k_styles[s].wg, k_styles[s].rpg);
        for (size_t li = 0; li < sizeof(k_lengths) / sizeof(k_lengths[0]); li++) {
            const int64_t n = k_lengths[li];
            const int ndim = 1 + (int)(li % 3);
            int64_t shape[3];
            const int64_t numel = random_rows(ndim, n, shape);
            float *x = rng_floats(numel), *r = rng_floats(numel), *g = rng_floats(n);
            for (int64_t i = 0; i < numel; i++)
                x[i] *= (li % 2) ? 1e3f : 3.0f; /* large rows too: the squares stay finite */
            for (int64_t i = 0; i < n; i++)
                g[i] += 1.5f;
            const int where = (int)(li + (size_t)s) % 4;
            run_rms(ndim, shape, x, NULL, g, 1e-6f, where == 2 ? 0 : where);
            run_rms(ndim, shape, x, r, g, 1e-5f, where);
            free(x);
            free(r);
            free(g);
        }
    }
    /* A zero row gives zeros (rstd = 1 / sqrt(eps)), not NaN. */
    int64_t shape[2] = {2, 5};
    float x[10] = {0}, g[5] = {1, 2, 3, 4, 5};
    x[5] = 1e-20f;
    run_rms(2, shape, x, NULL, g, 1e-6f, 0);
    /* Bad input changes nothing. */
    int64_t n9 = 9, sb[2] = {2, 6};
    clf_tensor *tx = tensor_poisoned(CLF_F32, 2, shape), *out = tensor_poisoned(CLF_F32, 2, shape);
    clf_tensor *g9 = tensor_poisoned(CLF_F32, 1, &n9), *bad = tensor_poisoned(CLF_F32, 2, sb);
    clf_tensor *g5 = tensor_from(CLF_F32, 1, &shape[1], g);
    CLF_OK(clf_tensor_fill(tx, 1.0));
    assert_int_equal(clf_rmsnorm(g_ctx, tx, NULL, g9, 1e-6f, NULL, out), CLF_ERROR_SHAPE_MISMATCH);
    assert_int_equal(clf_rmsnorm(g_ctx, tx, bad, g5, 1e-6f, NULL, out), CLF_ERROR_SHAPE_MISMATCH);
    assert_int_equal(clf_rmsnorm(g_ctx, tx, NULL, g5, 1e-6f, bad, out), CLF_ERROR_SHAPE_MISMATCH);
    assert_int_equal(clf_rmsnorm(g_ctx, tx, NULL, g5, 1e-6f, NULL, bad), CLF_ERROR_SHAPE_MISMATCH);
    assert_int_equal(clf_rmsnorm(g_ctx, tx, NULL, g5, 0.0f, NULL, out), CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_rmsnorm(g_ctx, tx, NULL, g5, 1e-6f, out, out), CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_rmsnorm(g_ctx, tx, NULL, NULL, 1e-6f, NULL, out),
                     CLF_ERROR_INVALID_ARGUMENT);
    float *h = tensor_to_host(out);
    for (int i = 0; i < 10; i++)
        assert_true(isnan(h[i]));
    free(h);
    clf_tensor *all[] = {tx, out, g9, bad, g5};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        clf_tensor_free(all[i]);
}

static void test_extreme_rows(void **state) {
    (void)state;
    rng_seed(22);
    for (int s = 0; s < 3; s++) {
        use_tunables("layernorm", k_styles[s].vw, k_styles[s].wg, k_styles[s].rpg);
        const int64_t n = 1000;
        int64_t shape[2] = {4, n};
        float *x = malloc(sizeof(float) * 4 * n), g[1000], b[1000];
        for (int64_t i = 0; i < n; i++) {
            x[i] = (float)(1e4 + rng_normal());    /* mean dwarfs the spread */
            x[n + i] = 3.25f;                      /* constant: output is beta */
            x[2 * n + i] = (i == 0) ? 1e4f : 0.0f; /* outlier first: shift far from mean */
            x[3 * n + i] = (float)(-1e4 + rng_normal() * 1e-2);
            g[i] = (float)rng_uniform(0.5, 1.5);
            b[i] = (float)rng_uniform(-0.5, 0.5);
        }
        run_case("extreme rows", 2, shape, x, NULL, g, b, 1e-5f, 0);
        run_case("extreme rows, eps 1e-12", 2, shape, x, NULL, g, b, 1e-12f, 0);
        free(x);
    }
}

static void test_bad_input(void **state) {
    (void)state;
    int64_t shape[2] = {3, 10}, n9 = 9, n10 = 10;
    int64_t other[2] = {3, 11};
    clf_tensor *x = tensor_poisoned(CLF_F32, 2, shape), *out = tensor_poisoned(CLF_F32, 2, shape);
    clf_tensor *g9 = tensor_poisoned(CLF_F32, 1, &n9), *g = tensor_poisoned(CLF_F32, 1, &n10);
    clf_tensor *r_bad = tensor_poisoned(CLF_F32, 2, other);
    CLF_OK(clf_tensor_fill(x, 1.0));
    assert_int_equal(clf_layernorm(g_ctx, x, NULL, g9, g, 1e-5f, out), CLF_ERROR_SHAPE_MISMATCH);
    assert_non_null(strstr(clf_context_last_error(g_ctx), "gamma [9]"));
    assert_int_equal(clf_layernorm(g_ctx, x, NULL, g, g9, 1e-5f, out), CLF_ERROR_SHAPE_MISMATCH);
    assert_int_equal(clf_layernorm(g_ctx, x, r_bad, g, g, 1e-5f, out), CLF_ERROR_SHAPE_MISMATCH);
    assert_int_equal(clf_layernorm(g_ctx, x, NULL, g, g, 0.0f, out), CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_layernorm(g_ctx, x, NULL, g, g, -1.0f, out), CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_layernorm(g_ctx, x, NULL, g, g, NAN, out), CLF_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(clf_context_last_error(g_ctx), "eps"));
    assert_int_equal(clf_layernorm(g_ctx, x, NULL, g, g, 1e-5f, r_bad), CLF_ERROR_SHAPE_MISMATCH);
    assert_int_equal(clf_layernorm(g_ctx, x, NULL, NULL, g, 1e-5f, out),
                     CLF_ERROR_INVALID_ARGUMENT);
    float *h = tensor_to_host(out);
    for (int i = 0; i < 30; i++)
        assert_true(isnan(h[i]));
    free(h);
    clf_tensor_free(x);
    clf_tensor_free(out);
    clf_tensor_free(g9);
    clf_tensor_free(g);
    clf_tensor_free(r_bad);
}

/* A device that allows 1, 3 or 32 work-items per group (every tunable style is fitted), and a
 * loop budget as llvmpipe's, scaled down. */
static void test_wg_caps(void **state) {
    harness_under_wg_caps(test_shapes, state);
    harness_under_loop_budget(test_shapes, state, 2000);
    harness_under_wg_caps(test_rmsnorm, state);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shapes),    cmocka_unit_test(test_rmsnorm),
        cmocka_unit_test(test_wg_caps),   cmocka_unit_test(test_extreme_rows),
        cmocka_unit_test(test_bad_input),
    };
    return HARNESS_RUN("layernorm", tests);
}
