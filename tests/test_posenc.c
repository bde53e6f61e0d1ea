/*
 * test_posenc.c — sinusoidal positional encoding and the embedding gather against the double
 * reference.
 *
 * Error bound for an element at position p: |err| <= 1e-6 + 7e-7 * p + 2^-23 * |want|.
 * The angle p0 * 10000^(-2j/d) of a work-item's first position p0 is formed in float: exp2
 * (<= 3 ulp) of a rounded argument and a rounded product give an angle error below 4.6e-7 * p0
 * radians over all j; sin/cos add <= 4 ulp (< 5e-7 absolute); each rotation to the next position
 * adds about 2 ulp (< 2.4e-7), and k rotations reach p = p0 + k, so the angle part stays below
 * 4.6e-7 p0 + 2.4e-7 k <= 7e-7 p; adding to x and scaling round once each.
 */
#include "harness.h"
#include "ref/ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const int64_t k_dims[] = {1, 2, 3, 7, 64, 77, 384, 1000};

static void check_pe(const char *what, const float *got, const double *want, int64_t rows,
                     int64_t seq, int64_t d, int64_t offset) {
    for (int64_t r = 0; r < rows; r++) {
        const double p = (double)(offset + r % seq);
        for (int64_t i = 0; i < d; i++) {
            double w = want[r * d + i];
            double tol = 1e-6 + 7e-7 * p + 1.2e-7 * fabs(w);
            double err = fabs((double)got[r * d + i] - w);
            if (!(err <= tol))
                fail_msg("%s: d %lld row %lld col %lld (pos %g): got %.9g want %.9g (|err| %.3g > "
                         "%.3g)",
                         what, (long long)d, (long long)r, (long long)i, p, (double)got[r * d + i],
                         w, err, tol);
        }
    }
}

static void test_posenc_add(void **state) {
    (void)state;
    rng_seed(31);
    const int64_t offsets[] = {0, 37, 5000};
    const int64_t vws[3] = {16, 2, 1}, wgs[3] = {16, 64, 3}, prs[3] = {32, 1, 3};
    for (int s = 0; s < 3; s++) {
        use_tunables("posenc", vws[s], wgs[s], 0);
        CLF_OK(clf_context_set_tunable(g_ctx, "posenc.PR", prs[s]));
        for (size_t di = 0; di < sizeof(k_dims) / sizeof(k_dims[0]); di++) {
            const int64_t d = k_dims[di], b = 1 + (int64_t)(di % 3), n = 1 + rng_int(1, 70);
            const int64_t off = offsets[(di + (size_t)s) % 3];
            int ndim = (di % 2) ? 3 : 2;
            int64_t shape3[3] = {b, n, d}, shape2[2] = {n, d};
            const int64_t *shape = ndim == 3 ? shape3 : shape2;
            const int64_t rows = ndim == 3 ? b * n : n;
            float *x = malloc(sizeof(float) * (size_t)(rows * d));
            double *want = malloc(sizeof(double) * (size_t)(rows * d));
            for (int64_t i = 0; i < rows * d; i++)
                x[i] = (float)rng_normal();
            for (int64_t r = 0; r < rows; r++)
                for (int64_t i = 0; i < d; i++)
                    want[r * d + i] = (double)x[r * d + i] + ref_posenc(off + r % n, i, d);
            clf_tensor *tx = tensor_from(CLF_F32, ndim, shape, x);
            clf_tensor *out = (di % 2) ? tx : tensor_poisoned(CLF_F32, ndim, shape);
            CLF_OK(clf_posenc_add(g_ctx, tx, off, out));
            float *got = tensor_to_host(out);
            check_pe("posenc_add", got, want, rows, n, d, off);
            free(got);
            if (out != tx) clf_tensor_free(out);
            clf_tensor_free(tx);
            free(x);
            free(want);
        }
    }
}

static void test_embedding(void **state) {
    (void)state;
    rng_seed(32);
    const int64_t vws[3] = {16, 2, 1}, wgs[3] = {16, 64, 3}, prs[3] = {32, 1, 3};
    for (int s = 0; s < 3; s++) {
        use_tunables("posenc", vws[s], wgs[s], 0);
        CLF_OK(clf_context_set_tunable(g_ctx, "posenc.PR", prs[s]));
        for (size_t di = 0; di < sizeof(k_dims) / sizeof(k_dims[0]); di++) {
            const int64_t d = k_dims[di], vocab = 53, b = 1 + (int64_t)(di % 3), n = 13;
            const int64_t rows = b * n, off = (di % 2) ? 0 : 7;
            const int add_pe = (int)((di + (size_t)s) % 2);
            const float scale = sqrtf((float)d);
            float *table = malloc(sizeof(float) * (size_t)(vocab * d));
            for (int64_t i = 0; i < vocab * d; i++)
                table[i] = (float)rng_normal();
            int32_t *ids = malloc(sizeof(int32_t) * (size_t)rows);
            for (int64_t i = 0; i < rows; i++)
                ids[i] = (int32_t)rng_int(0, vocab - 1);
            ids[0] = 0;
            ids[rows - 1] = (int32_t)(vocab - 1);
            double *want = malloc(sizeof(double) * (size_t)(rows * d));
            for (int64_t r = 0; r < rows; r++)
                for (int64_t i = 0; i < d; i++)
                    want[r * d + i] = (double)table[ids[r] * d + i] * (double)scale +
                                      (add_pe ? ref_posenc(off + r % n, i, d) : 0.0);
            int64_t tshape[2] = {vocab, d}, ishape[2] = {b, n}, oshape[3] = {b, n, d};
            clf_tensor *tt = tensor_from(CLF_F32, 2, tshape, table);
            clf_tensor *ti = tensor_from(CLF_I32, 2, ishape, ids);
            clf_tensor *out = tensor_poisoned(CLF_F32, 3, oshape);
            CLF_OK(clf_embedding(g_ctx, ti, tt, scale, add_pe, off, out));
            float *got = tensor_to_host(out);
            check_pe("embedding", got, want, rows, n, d, off);
            free(got);
            clf_tensor_free(tt);
            clf_tensor_free(ti);
            clf_tensor_free(out);
            free(table);
            free(ids);
            free(want);
        }
    }
}

static void test_bad_input(void **state) {
    (void)state;
    int64_t tshape[2] = {10, 6}, ishape[1] = {4}, oshape[2] = {4, 6}, obad[2] = {4, 7};
    clf_tensor *table = tensor_poisoned(CLF_F32, 2, tshape);
    CLF_OK(clf_tensor_fill(table, 1.0));
    int32_t bad_ids[4] = {0, 3, 10, 2}, neg_ids[4] = {0, -1, 1, 2};
    clf_tensor *ids = tensor_from(CLF_I32, 1, ishape, bad_ids);
    clf_tensor *out = tensor_poisoned(CLF_F32, 2, oshape);
    clf_tensor *out_bad = tensor_poisoned(CLF_F32, 2, obad);
    assert_int_equal(clf_embedding(g_ctx, ids, table, 1.0f, 1, 0, out), CLF_ERROR_OUT_OF_RANGE);
    assert_non_null(strstr(clf_context_last_error(g_ctx), "ids[2] = 10"));
    CLF_OK(clf_tensor_write(ids, neg_ids, sizeof(neg_ids)));
    assert_int_equal(clf_embedding(g_ctx, ids, table, 1.0f, 0, 0, out), CLF_ERROR_OUT_OF_RANGE);
    assert_int_equal(clf_embedding(g_ctx, ids, table, 1.0f, 0, 0, out_bad),
                     CLF_ERROR_SHAPE_MISMATCH);
    assert_int_equal(clf_embedding(g_ctx, table, table, 1.0f, 0, 0, out), CLF_ERROR_UNSUPPORTED);
    assert_int_equal(clf_embedding(g_ctx, ids, table, NAN, 0, 0, out), CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_embedding(g_ctx, ids, table, 1.0f, 1, -1, out), CLF_ERROR_OUT_OF_RANGE);
    float *h = tensor_to_host(out);
    for (int i = 0; i < 24; i++)
        assert_true(isnan(h[i]));
    free(h);
    /* posenc: rank and position range. */
    assert_int_equal(clf_posenc_add(g_ctx, ids, 0, out), CLF_ERROR_UNSUPPORTED);
    int64_t s1[1] = {6};
    clf_tensor *v = tensor_poisoned(CLF_F32, 1, s1);
    assert_int_equal(clf_posenc_add(g_ctx, v, 0, v), CLF_ERROR_SHAPE_MISMATCH);
    assert_int_equal(clf_posenc_add(g_ctx, out, 1 << 24, out), CLF_ERROR_OUT_OF_RANGE);
    assert_int_equal(clf_posenc_add(g_ctx, out, -3, out), CLF_ERROR_OUT_OF_RANGE);
    assert_int_equal(clf_posenc_add(g_ctx, out, 0, out_bad), CLF_ERROR_SHAPE_MISMATCH);
    h = tensor_to_host(out);
    for (int i = 0; i < 24; i++)
        assert_true(isnan(h[i]));
    free(h);
    clf_tensor_free(v);
    clf_tensor_free(table);
    clf_tensor_free(ids);
    clf_tensor_free(out);
    clf_tensor_free(out_bad);
}

/* A device that allows 1, 3 or 32 work-items per group. */
static void test_wg_caps(void **state) {
    harness_under_wg_caps(test_posenc_add, state);
    harness_under_wg_caps(test_embedding, state);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_posenc_add),
        cmocka_unit_test(test_embedding),
        cmocka_unit_test(test_wg_caps),
        cmocka_unit_test(test_bad_input),
    };
    return HARNESS_RUN("posenc", tests);
}
