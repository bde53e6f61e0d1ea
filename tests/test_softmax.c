/*
 * test_softmax.c — masked softmax against the double reference (tests/ref).
 *
 * Error bound: |got - want| <= 1e-9 + (n + 16) * 2^-24 * want. exp and the division add a few
 * ulps; the sum of n terms in float has relative error at most (n - 1) * 2^-24 (recursive
 * summation, the worst case of every tunable style: one chain per work-item); masked positions
 * must be exactly 0.
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

static double tol_rel(int64_t n) {
    return (double)(n + 16) * 5.9604644775390625e-8;
}

/* Runs softmax on x (shape) with the mask, compares to the reference, checks masked zeros. */
static void run_case_w(const char *what, int ndim, const int64_t *shape, const float *x,
                       const int32_t *lens, int lens_ndim, int causal, int64_t offset, int inplace,
                       int64_t window) {
    int64_t numel = 1;
    for (int i = 0; i < ndim; i++)
        numel *= shape[i];
    const int64_t n = shape[ndim - 1], rows = numel / n;
    const int64_t nq = ndim >= 2 ? shape[ndim - 2] : 1, batch = ndim >= 3 ? shape[0] : 1;
    clf_tensor *tx = tensor_from(CLF_F32, ndim, shape, x);
    clf_tensor *out = inplace ? tx : tensor_poisoned(CLF_F32, ndim, shape);
    clf_tensor *tl = NULL;
    if (lens) {
        int64_t lshape[2] = {batch, nq};
        tl = tensor_from(CLF_I32, lens_ndim, lshape, lens);
    }
    clf_mask mask = {tl, causal, offset, window};
    CLF_OK(clf_softmax(g_ctx, tx, out, (lens || causal || window) ? &mask : NULL));
    float *got = tensor_to_host(out);
    double *want = malloc(sizeof(double) * (size_t)numel);
    int64_t *lim = malloc(sizeof(int64_t) * (size_t)rows);
    ref_mask_limits(rows, n, batch, nq, lens, lens_ndim, causal, offset, lim);
    ref_softmax_window(x, want, rows, n, lim, window);
    check_close(what, got, want, numel, 1e-9, tol_rel(n));
    for (int64_t r = 0; r < rows; r++)
        for (int64_t i = 0; i < n; i++)
            if ((i >= lim[r] || i < ref_first_key(lim[r], window)) && got[r * n + i] != 0.0f)
                fail_msg("%s: masked [%lld, %lld] = %g", what, (long long)r, (long long)i,
                         (double)got[r * n + i]);
    free(got);
    free(want);
    free(lim);
    if (!inplace) clf_tensor_free(out);
    clf_tensor_free(tx);
    clf_tensor_free(tl);
}

static void run_case(const char *what, int ndim, const int64_t *shape, const float *x,
                     const int32_t *lens, int lens_ndim, int causal, int64_t offset, int inplace) {
    run_case_w(what, ndim, shape, x, lens, lens_ndim, causal, offset, inplace, 0);
}

static float *random_logits(int64_t n, double scale) {
    float *x = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++)
        x[i] = (float)(rng_normal() * scale);
    return x;
}

static void test_unmasked_shapes(void **state) {
    (void)state;
    rng_seed(11);
    for (int s = 0; s < 3; s++) {
        use_tunables("softmax", k_styles[s].vw, k_styles[s].wg, k_styles[s].rpg);
        for (size_t li = 0; li < n_lengths(); li++) {
            int64_t n = k_lengths[li];
            int ndim = 1 + (int)(li % 4); /* 0 to 3 leading dims */
            int64_t shape[4];
            int64_t numel = n;
            for (int d = 0; d < ndim - 1; d++) {
                shape[d] = rng_int(1, n > 1000 ? 3 : 5);
                numel *= shape[d];
            }
            shape[ndim - 1] = n;
            float *x = random_logits(numel, 3.0);
            run_case(k_styles[s].label, ndim, shape, x, NULL, 0, 0, 0, (int)(li % 2));
            free(x);
        }
    }
}

static void test_masks(void **state) {
    (void)state;
    rng_seed(12);
    for (int s = 0; s < 3; s++) {
        use_tunables("softmax", k_styles[s].vw, k_styles[s].wg, k_styles[s].rpg);
        for (size_t li = 0; li < n_lengths(); li++) {
            const int64_t nk = k_lengths[li], batch = 3, heads = 2, nq = 5;
            int64_t shape4[4] = {batch, heads, nq, nk};
            int64_t shape3[3] = {batch, nq, nk};
            float *x = random_logits(batch * heads * nq * nk, 2.0);
            /* Per batch: empty, partial, and longer than the row (clamped). */
            int32_t lb[3] = {0, (int32_t)(nk / 2 + 1), (int32_t)(nk + 5)};
            run_case("lens (B)", 4, shape4, x, lb, 1, 0, 0, 0);
            run_case("lens (B) 3-D", 3, shape3, x, lb, 1, 0, 0, 1);
            int32_t lr[15];
            for (int i = 0; i < 15; i++)
                lr[i] = (int32_t)rng_int(-1, nk + 1);
            lr[3] = 0;
            run_case("lens (B, Nq)", 4, shape4, x, lr, 2, 0, 0, 0);
            /* Causal: decoding with a cache (Nk = offset + Nq) and a plain square-ish case. */
            int64_t off = nk >= nq ? nk - nq : 0;
            run_case("causal offset", 4, shape4, x, NULL, 0, 1, off, 0);
            run_case("causal 0", 3, shape3, x, NULL, 0, 1, 0, 0);
            run_case("causal + lens (B, Nq)", 4, shape4, x, lr, 2, 1, off, 1);
            run_case("causal + lens (B)", 3, shape3, x, lb, 1, 1, 2, 0);
            /* sliding windows: narrower than, about, and wider than the visible keys */
            const int64_t w = nk > 3 ? nk / 3 : 1;
            run_case_w("causal + window", 4, shape4, x, NULL, 0, 1, off, 0, w);
            run_case_w("lens (B, Nq) + window", 4, shape4, x, lr, 2, 0, 0, 1, w + 1);
            run_case_w("window only", 3, shape3, x, NULL, 0, 0, 0, 0, nk > 17 ? 17 : 1);
            run_case_w("window wider than the row", 3, shape3, x, lb, 1, 1, 1, 0, nk + 9);
            free(x);
        }
    }
}

static void test_extreme_inputs(void **state) {
    (void)state;
    rng_seed(13);
    for (int s = 0; s < 3; s++) {
        use_tunables("softmax", k_styles[s].vw, k_styles[s].wg, k_styles[s].rpg);
        int64_t shape[2] = {6, 1000};
        float *x = malloc(sizeof(float) * 6000);
        for (int i = 0; i < 1000; i++) {
            x[i] = (float)(rng_uniform(-1e4, 1e4));              /* huge spread */
            x[1000 + i] = 1e4f;                                  /* constant, huge */
            x[2000 + i] = -1e4f;                                 /* constant, very negative */
            x[3000 + i] = (i == 517) ? 1e4f : -1e4f;             /* one-hot */
            x[4000 + i] = 0.0f;                                  /* zeros */
            x[5000 + i] = (float)(1e4 + rng_uniform(-1.0, 1.0)); /* big mean, small spread */
        }
        run_case("extreme", 2, shape, x, NULL, 0, 0, 0, 0);
        float *y = NULL;
        clf_tensor *t = tensor_from(CLF_F32, 2, shape, x);
        CLF_OK(clf_softmax(g_ctx, t, t, NULL));
        y = tensor_to_host(t);
        assert_true(fabs(y[1000 + 3] - 1e-3) < 1e-8); /* uniform */
        assert_true(y[3000 + 517] == 1.0f);
        free(y);
        clf_tensor_free(t);
        free(x);
    }
}

static void test_bad_input(void **state) {
    (void)state;
    int64_t shape[3] = {2, 4, 9};
    clf_tensor *x = tensor_poisoned(CLF_F32, 3, shape);
    clf_tensor *out = tensor_poisoned(CLF_F32, 3, shape);
    int64_t s_bad[3] = {2, 4, 8};
    clf_tensor *out_bad = tensor_poisoned(CLF_F32, 3, s_bad);
    int64_t l1[1] = {3}, l2[2] = {2, 5}, l3[2] = {2, 4};
    clf_tensor *lens_b = tensor_poisoned(CLF_I32, 1, l1);
    clf_tensor *lens_r = tensor_poisoned(CLF_I32, 2, l2);
    clf_tensor *lens_f = tensor_poisoned(CLF_F32, 2, l3);
    clf_mask m = {lens_b, 0, 0, 0};
    assert_int_equal(clf_softmax(g_ctx, x, out, &m), CLF_ERROR_SHAPE_MISMATCH);
    assert_non_null(strstr(clf_context_last_error(g_ctx), "valid_lens"));
    m.valid_lens = lens_r;
    assert_int_equal(clf_softmax(g_ctx, x, out, &m), CLF_ERROR_SHAPE_MISMATCH);
    m.valid_lens = lens_f;
    assert_int_equal(clf_softmax(g_ctx, x, out, &m), CLF_ERROR_UNSUPPORTED);
    clf_mask c = {NULL, 1, -1, 0};
    assert_int_equal(clf_softmax(g_ctx, x, out, &c), CLF_ERROR_INVALID_ARGUMENT);
    clf_mask wneg = {NULL, 1, 0, -3}; /* a negative window */
    assert_int_equal(clf_softmax(g_ctx, x, out, &wneg), CLF_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(clf_context_last_error(g_ctx), "window"));
    assert_int_equal(clf_softmax(g_ctx, x, out_bad, NULL), CLF_ERROR_SHAPE_MISMATCH);
    assert_non_null(strstr(clf_context_last_error(g_ctx), "[2, 4, 8]"));
    assert_int_equal(clf_softmax(g_ctx, x, lens_f, NULL), CLF_ERROR_SHAPE_MISMATCH);
    /* Outputs untouched. */
    float *h = tensor_to_host(out);
    for (int i = 0; i < 72; i++)
        assert_true(isnan(h[i]));
    free(h);
    clf_tensor_free(x);
    clf_tensor_free(out);
    clf_tensor_free(out_bad);
    clf_tensor_free(lens_b);
    clf_tensor_free(lens_r);
    clf_tensor_free(lens_f);
}

/* A device that allows 1, 3 or 32 work-items per group (every tunable style is fitted). */
static void test_wg_caps(void **state) {
    harness_under_wg_caps(test_unmasked_shapes, state);
    harness_under_wg_caps(test_masks, state);
}

/* A loop budget as llvmpipe's, scaled down: long rows (4097 scalar loads) take more work-items. */
static void test_loop_budget(void **state) {
    harness_under_loop_budget(test_unmasked_shapes, state, 2000);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unmasked_shapes), cmocka_unit_test(test_masks),
        cmocka_unit_test(test_wg_caps),         cmocka_unit_test(test_loop_budget),
        cmocka_unit_test(test_extreme_inputs),  cmocka_unit_test(test_bad_input),
    };
    return HARNESS_RUN("softmax", tests);
}
