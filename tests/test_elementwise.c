/*
 * test_elementwise.c — bias + activation, the gated activation (SwiGLU) and residual add against
 * the double reference.
 *
 * Error bound: |err| <= 1e-7 + 2^-21 * (|want| + |x + bias|). The add rounds once (1/2 ulp); the
 * erf error (builtin <= 16 ulp; activation.cl's rational <= 3.4e-7 absolute) enters multiplied
 * by 0.5 |x|, so it is bounded relative to |x + bias| rather than to the (possibly tiny) result;
 * GELU (tanh) as x / (1 + e^(-2u)) and SiLU as x / (1 + e^(-x)) are within a few ulp of the
 * result. The gated activation multiplies that by up (one more rounding): the bound scales by
 * |up|.
 */
#include "harness.h"
#include "ref/ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const int64_t k_lengths[] = {1, 3, 7, 64, 77, 384, 1000, 4097};
/* The lengths a run takes: on a simulator (the Oclgrind label: races and uninitialized reads,
 * not numbers) all but 4097, as 1000 already runs every loop over several work-group chunks with
 * a tail; 4097 was three quarters of the label's time for this program. */
static size_t n_lengths(void) {
    return sizeof(k_lengths) / sizeof(k_lengths[0]) - (harness_on_simulator() ? 1 : 0);
}

static void test_bias_act(void **state) {
    (void)state;
    rng_seed(41);
    const int64_t vws[3] = {16, 4, 1}, wgs[3] = {64, 256, 5};
    for (int s = 0; s < 4; s++) {
        /* Styles 0-2 with the polynomial erf, style 3 (= style 0) with the builtin erf. */
        use_tunables("elementwise", vws[s % 3], wgs[s % 3], 0);
        CLF_OK(clf_context_set_tunable(g_ctx, "elementwise.ERF_POLY", s < 3));
        for (size_t li = 0; li < n_lengths(); li++) {
            const int64_t n = k_lengths[li];
            int ndim = 1 + (int)(li % 4);
            int64_t shape[4], numel = n;
            for (int d = 0; d < ndim - 1; d++) {
                shape[d] = rng_int(1, 4);
                numel *= shape[d];
            }
            shape[ndim - 1] = n;
            float *x = malloc(sizeof(float) * (size_t)numel),
                  *b = malloc(sizeof(float) * (size_t)n);
            for (int64_t i = 0; i < numel; i++)
                x[i] = (float)(rng_normal() * 3.0);
            for (int64_t i = 0; i < n; i++)
                b[i] = (float)rng_uniform(-1, 1);
            clf_tensor *tb = tensor_from(CLF_F32, 1, &n, b);
            for (int act = 0; act <= CLF_ACT_SILU; act++) {
                const int with_bias = (act + (int)li) % 2 == 0;
                const int inplace = (act + s) % 2;
                clf_tensor *tx = tensor_from(CLF_F32, ndim, shape, x);
                clf_tensor *out = inplace ? tx : tensor_poisoned(CLF_F32, ndim, shape);
                CLF_OK(clf_bias_act(g_ctx, tx, with_bias ? tb : NULL, (clf_activation)act, out));
                float *got = tensor_to_host(out);
                for (int64_t i = 0; i < numel; i++) {
                    double v = (double)x[i] + (with_bias ? (double)b[i % n] : 0.0);
                    double w = ref_act(v, act);
                    double tol = 1e-7 + 4.76837158203125e-7 * (fabs(w) + fabs(v));
                    if (!(fabs((double)got[i] - w) <= tol))
                        fail_msg("bias_act act %d bias %d n %lld [%lld]: got %.9g want %.9g", act,
                                 with_bias, (long long)n, (long long)i, (double)got[i], w);
                }
                free(got);
                if (out != tx) clf_tensor_free(out);
                clf_tensor_free(tx);
            }
            clf_tensor_free(tb);
            free(x);
            free(b);
        }
    }
}

static void test_add(void **state) {
    (void)state;
    rng_seed(42);
    const int64_t vws[3] = {16, 4, 1}, wgs[3] = {64, 256, 5};
    for (int s = 0; s < 3; s++) {
        use_tunables("elementwise", vws[s], wgs[s], 0);
        for (size_t li = 0; li < n_lengths(); li++) {
            const int64_t n = k_lengths[li] * (int64_t)(1 + li % 3);
            float *a = malloc(sizeof(float) * (size_t)n), *b = malloc(sizeof(float) * (size_t)n);
            double *want = malloc(sizeof(double) * (size_t)n);
            for (int64_t i = 0; i < n; i++) {
                a[i] = (float)rng_normal();
                b[i] = (float)rng_normal();
                want[i] = (double)a[i] + (double)b[i];
            }
            clf_tensor *ta = tensor_from(CLF_F32, 1, &n, a), *tb = tensor_from(CLF_F32, 1, &n, b);
            clf_tensor *out = (li % 3 == 0)   ? ta
                              : (li % 3 == 1) ? tb
                                              : tensor_poisoned(CLF_F32, 1, &n);
            CLF_OK(clf_add(g_ctx, ta, tb, out));
            float *got = tensor_to_host(out);
            check_close("add", got, want, n, 0.0, 5.9604644775390625e-8); /* one rounding */
            free(got);
            if (out != ta && out != tb) clf_tensor_free(out);
            clf_tensor_free(ta);
            clf_tensor_free(tb);
            free(a);
            free(b);
            free(want);
        }
    }
}

static void test_bad_input(void **state) {
    (void)state;
    int64_t shape[2] = {3, 8}, n7 = 7, other[2] = {3, 9};
    clf_tensor *x = tensor_poisoned(CLF_F32, 2, shape), *out = tensor_poisoned(CLF_F32, 2, shape);
    clf_tensor *b7 = tensor_poisoned(CLF_F32, 1, &n7), *y = tensor_poisoned(CLF_F32, 2, other);
    CLF_OK(clf_tensor_fill(x, 1.0));
    assert_int_equal(clf_bias_act(g_ctx, x, b7, CLF_ACT_RELU, out), CLF_ERROR_SHAPE_MISMATCH);
    assert_int_equal(clf_bias_act(g_ctx, x, NULL, (clf_activation)7, out),
                     CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_bias_act(g_ctx, x, NULL, CLF_ACT_RELU, y), CLF_ERROR_SHAPE_MISMATCH);
    assert_int_equal(clf_add(g_ctx, x, y, out), CLF_ERROR_SHAPE_MISMATCH);
    assert_int_equal(clf_add(g_ctx, x, x, y), CLF_ERROR_SHAPE_MISMATCH);
    assert_int_equal(clf_add(g_ctx, x, NULL, out), CLF_ERROR_INVALID_ARGUMENT);
    float *h = tensor_to_host(out);
    for (int i = 0; i < 24; i++)
        assert_true(isnan(h[i]));
    free(h);
    clf_tensor_free(x);
    clf_tensor_free(out);
    clf_tensor_free(b7);
    clf_tensor_free(y);
}

/* act(gate) * up, with gate and up apart (out new, or in place on either) and fused as the two
 * halves of one (..., 2F) row, every activation, rows of awkward widths. */
static void test_gated_act(void **state) {
    (void)state;
    rng_seed(43);
    const int64_t vws[3] = {16, 4, 1}, wgs[3] = {64, 256, 5};
    for (int s = 0; s < 3; s++) {
        use_tunables("elementwise", vws[s], wgs[s], 0);
        for (size_t li = 0; li < n_lengths(); li++) {
            const int64_t f = k_lengths[li], rows = rng_int(1, 5);
            const int fused = (int)(li + (size_t)s) % 2;
            const int64_t w = fused ? 2 * f : f;
            float *g = malloc(sizeof(float) * (size_t)(rows * w)),
                  *u = malloc(sizeof(float) * (size_t)(rows * f));
            for (int64_t i = 0; i < rows * w; i++)
                g[i] = (float)(rng_normal() * 3.0);
            for (int64_t i = 0; i < rows * f; i++)
                u[i] = (float)(rng_normal() * 2.0);
            int64_t gs[2] = {rows, w}, fs[2] = {rows, f};
            for (int act = 0; act <= CLF_ACT_SILU; act++) {
                clf_tensor *tg = tensor_from(CLF_F32, 2, gs, g);
                clf_tensor *tu = fused ? NULL : tensor_from(CLF_F32, 2, fs, u);
                const int where = fused ? 0 : (act + s) % 3; /* 0 new, 1 on gate, 2 on up */
                clf_tensor *out = where == 1   ? tg
                                  : where == 2 ? tu
                                               : tensor_poisoned(CLF_F32, 2, fs);
                CLF_OK(clf_gated_act(g_ctx, tg, tu, (clf_activation)act, out));
                float *got = tensor_to_host(out);
                for (int64_t r = 0; r < rows; r++)
                    for (int64_t i = 0; i < f; i++) {
                        const double v = g[r * w + i];
                        const double up = fused ? g[r * w + f + i] : u[r * f + i];
                        const double a = ref_act(v, act), want = a * up;
                        const double tol =
                            (1e-7 + 4.76837158203125e-7 * (fabs(a) + fabs(v))) * fabs(up) +
                            5.9604644775390625e-8 * fabs(want);
                        const double gt = got[r * f + i];
                        if (!(fabs(gt - want) <= tol))
                            fail_msg("gated_act act %d fused %d f %lld [%lld, %lld]: got %.9g "
                                     "want %.9g",
                                     act, fused, (long long)f, (long long)r, (long long)i, gt,
                                     want);
                    }
                free(got);
                if (out != tg && out != tu) clf_tensor_free(out);
                clf_tensor_free(tg);
                clf_tensor_free(tu);
            }
            free(g);
            free(u);
        }
    }
    /* Bad shapes and arguments change nothing. */
    int64_t s4[2] = {2, 4}, s5[2] = {2, 5}, s2[2] = {2, 2}, s3[2] = {2, 3};
    clf_tensor *a = tensor_poisoned(CLF_F32, 2, s4), *b = tensor_poisoned(CLF_F32, 2, s5),
               *o2 = tensor_poisoned(CLF_F32, 2, s2), *o3 = tensor_poisoned(CLF_F32, 2, s3);
    assert_int_equal(clf_gated_act(g_ctx, a, b, CLF_ACT_SILU, a), CLF_ERROR_SHAPE_MISMATCH);
    assert_int_equal(clf_gated_act(g_ctx, a, a, CLF_ACT_SILU, b), CLF_ERROR_SHAPE_MISMATCH);
    assert_int_equal(clf_gated_act(g_ctx, b, NULL, CLF_ACT_SILU, o2), CLF_ERROR_SHAPE_MISMATCH);
    assert_non_null(strstr(clf_context_last_error(g_ctx), "even"));
    assert_int_equal(clf_gated_act(g_ctx, a, NULL, CLF_ACT_SILU, o3), CLF_ERROR_SHAPE_MISMATCH);
    assert_int_equal(clf_gated_act(g_ctx, a, NULL, CLF_ACT_SILU, a), CLF_ERROR_SHAPE_MISMATCH);
    assert_int_equal(clf_gated_act(g_ctx, a, NULL, (clf_activation)9, o2),
                     CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_gated_act(g_ctx, NULL, NULL, CLF_ACT_SILU, o2),
                     CLF_ERROR_INVALID_ARGUMENT);
    float *h = tensor_to_host(o2);
    for (int i = 0; i < 4; i++)
        assert_true(isnan(h[i]));
    free(h);
    clf_tensor_free(a);
    clf_tensor_free(b);
    clf_tensor_free(o2);
    clf_tensor_free(o3);
}

/* Greedy decoding's argmax: random integer rows (ties: the first index), a row of -inf, work-items
 * per row 1 and 64, and bad shapes and dtypes. */
static void test_argmax(void **state) {
    (void)state;
    const int64_t ns[] = {1, 7, 203, 1000, 4099};
    const int64_t wgs[] = {1, 64};
    int64_t ds;
    CLF_OK(clf_context_get_tunable(g_ctx, "elementwise.ARGMAX_WG", &ds));
    for (size_t w = 0; w < 2; w++) {
        CLF_OK(clf_context_set_tunable(g_ctx, "elementwise.ARGMAX_WG", wgs[w]));
        for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
            const int64_t n = ns[i], rows = 5;
            float *x = malloc((size_t)(rows * n) * sizeof(float));
            for (int64_t j = 0; j < rows * n; j++)
                x[j] = (float)rng_int(-50, 50);
            for (int64_t j = 0; j < n; j++)
                x[3 * n + j] = -INFINITY; /* all -inf: index 0 */
            int64_t xs[2] = {rows, n}, os = rows;
            clf_tensor *tx = tensor_from(CLF_F32, 2, xs, x);
            clf_tensor *to = tensor_poisoned(CLF_I32, 1, &os);
            CLF_OK(clf_argmax(g_ctx, tx, to));
            int32_t got[5];
            CLF_OK(clf_tensor_read(to, got, sizeof(got)));
            for (int64_t r = 0; r < rows; r++) {
                int64_t best = 0;
                for (int64_t j = 1; j < n; j++)
                    if (x[r * n + j] > x[r * n + best]) best = j;
                if (got[r] != best)
                    fail_msg("argmax n=%lld wg=%lld row %lld: %d, want %lld", (long long)n,
                             (long long)wgs[w], (long long)r, got[r], (long long)best);
            }
            free(x);
            clf_tensor_free(tx);
            clf_tensor_free(to);
        }
    }
    CLF_OK(clf_context_set_tunable(g_ctx, "elementwise.ARGMAX_WG", ds)); /* for later tests */
    int64_t xs[2] = {2, 3}, bad = 3;
    clf_tensor *tx = tensor_poisoned(CLF_F32, 2, xs), *to = tensor_poisoned(CLF_I32, 1, &bad);
    assert_int_equal(clf_argmax(g_ctx, tx, to), CLF_ERROR_SHAPE_MISMATCH);
    assert_int_equal(clf_argmax(g_ctx, to, tx), CLF_ERROR_UNSUPPORTED); /* dtypes swapped */
    clf_tensor_free(tx);
    clf_tensor_free(to);
}

static void test_wg_caps(void **state) {
    harness_under_wg_caps(test_bias_act, state);
    harness_under_wg_caps(test_add, state);
    harness_under_wg_caps(test_gated_act, state);
    harness_under_wg_caps(test_argmax, state);
    harness_under_loop_budget(test_argmax, state, 100);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bias_act),  cmocka_unit_test(test_add),
        cmocka_unit_test(test_gated_act), cmocka_unit_test(test_argmax),
        cmocka_unit_test(test_wg_caps),   cmocka_unit_test(test_bad_input),
    };
    return HARNESS_RUN("elementwise", tests);
}
