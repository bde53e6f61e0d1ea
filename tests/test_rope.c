/*
 * test_rope.c — rotary position embedding against the double reference: both layouts, partial
 * rotary dims, heads from a column inside wider rows, positions from an offset, per sequence and
 * per row, frequencies from theta and from an inv_freq tensor, every tunable style.
 *
 * Error bound for a pair (a, b) rotated by the angle t = p f: |err| <= (|a| + |b|) (t 2e-6 + 5e-7).
 * The kernel's f = exp2(i * freq_log2) has a relative error <= (0.7 |e| + 1.5) 2^-23 for the
 * exponent e (<= 19 for theta 5e5), under 2e-6; the fp32 product p f adds 2^-24 relative (as
 * Hugging Face's own fp32 angle does); sincos errs by <= 4 ulp of values <= 1; the two products
 * and the sum round once each. With inv_freq given, f is exact and the t term is t 2^-24.
 * Columns outside the rotated dims must come back bit for bit.
 */
#include "harness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct rcase {
    int64_t b, n, heads, dh, rd, col, extra; /* rows of col + heads * dh + extra floats */
    int layout;
    double theta;
    int pos_mode; /* 0 offset, 1 (B) offsets, 2 (B, N) positions */
    int64_t offset;
    int freq; /* 1: pass inv_freq (a "scaled" table: theta's, halved above i = rd / 8) */
} rcase;

static void run_case(const rcase *c) {
    const int64_t w = c->col + c->heads * c->dh + c->extra, rows = c->b * c->n;
    const int64_t rd = c->rd ? c->rd : c->dh, half = rd / 2;
    float *x = rng_floats(rows * w);
    for (int64_t i = 0; i < rows * w; i++)
        x[i] *= 4.0f;
    int32_t *pos = NULL;
    int64_t *p = malloc(sizeof(int64_t) * (size_t)rows);
    if (c->pos_mode) {
        const int64_t np = c->pos_mode == 1 ? c->b : rows;
        pos = malloc(sizeof(int32_t) * (size_t)np);
        for (int64_t i = 0; i < np; i++)
            pos[i] = (int32_t)rng_int(0, 3000);
    }
    for (int64_t r = 0; r < rows; r++) {
        const int64_t bb = r / c->n, nn = r % c->n;
        p[r] = c->pos_mode == 2 ? pos[r] : c->pos_mode == 1 ? pos[bb] + nn : c->offset + nn;
    }
    float *fr = malloc(sizeof(float) * (size_t)half);
    double *f = malloc(sizeof(double) * (size_t)half);
    for (int64_t i = 0; i < half; i++) {
        f[i] = pow(c->theta, -2.0 * (double)i / (double)rd);
        if (c->freq) {
            fr[i] = (float)(i > rd / 8 ? f[i] * 0.5 : f[i]);
            f[i] = fr[i];
        }
    }
    int64_t shape[3] = {c->b, c->n, w};
    const int ndim = c->b == 1 && c->pos_mode == 0 ? 2 : 3; /* (N, W) too */
    clf_tensor *tx = tensor_from(CLF_F32, ndim, ndim == 3 ? shape : shape + 1, x);
    clf_tensor *tf = c->freq ? tensor_from(CLF_F32, 1, &half, fr) : NULL;
    clf_tensor *tp = NULL;
    if (pos) {
        int64_t ps[2] = {c->b, c->n};
        tp = tensor_from(CLF_I32, c->pos_mode, ps, pos);
    }
    clf_rope_params rp = clf_rope_default_params(c->heads, c->dh);
    rp.rotary_dim = c->rd;
    rp.col = c->col;
    rp.layout = (clf_rope_layout)c->layout;
    rp.theta = (float)c->theta;
    rp.inv_freq = tf;
    rp.pos_offset = c->offset;
    rp.positions = tp;
    CLF_OK(clf_rope(g_ctx, tx, &rp));
    float *got = tensor_to_host(tx);
    const double kf = c->freq ? 6e-8 : 2e-6;
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * w;
        const float *gr = got + r * w;
        unsigned char *done = calloc((size_t)w, 1);
        for (int64_t h = 0; h < c->heads; h++)
            for (int64_t i = 0; i < half; i++) {
                const int64_t ia = c->col + h * c->dh + (c->layout == 0 ? i : 2 * i);
                const int64_t ib = c->layout == 0 ? ia + half : ia + 1;
                const double t = (double)p[r] * f[i], a = xr[ia], b = xr[ib];
                const double wa = a * cos(t) - b * sin(t), wb = b * cos(t) + a * sin(t);
                const double tol = (fabs(a) + fabs(b)) * (t * kf + 5e-7);
                if (!(fabs(gr[ia] - wa) <= tol && fabs(gr[ib] - wb) <= tol))
                    fail_msg("rope layout %d B%lld N%lld H%lld Dh%lld rd%lld pos %lld row %lld "
                             "head %lld pair %lld: got (%.9g, %.9g) want (%.9g, %.9g), tol %.3g",
                             c->layout, (long long)c->b, (long long)c->n, (long long)c->heads,
                             (long long)c->dh, (long long)rd, (long long)p[r], (long long)r,
                             (long long)h, (long long)i, (double)gr[ia], (double)gr[ib], wa, wb,
                             tol);
                done[ia] = done[ib] = 1;
            }
        for (int64_t j = 0; j < w; j++)
            if (!done[j] && memcmp(&gr[j], &xr[j], sizeof(float)) != 0)
                fail_msg("rope: column %lld of row %lld is not rotated but changed: %.9g -> %.9g",
                         (long long)j, (long long)r, (double)xr[j], (double)gr[j]);
        free(done);
    }
    free(got);
    clf_tensor_free(tx);
    clf_tensor_free(tf);
    clf_tensor_free(tp);
    free(x);
    free(pos);
    free(p);
    free(fr);
    free(f);
}

static const rcase k_cases[] = {
    /* b, n, heads, dh, rd, col, extra, layout, theta, pos_mode, offset, freq */
    {1, 1, 1, 2, 0, 0, 0, 0, 10000, 0, 0, 0},        {2, 7, 3, 64, 0, 0, 0, 0, 10000, 0, 5, 0},
    {1, 33, 6, 128, 0, 0, 0, 0, 500000, 0, 1000, 0}, /* Llama 3's theta */
    {3, 5, 4, 80, 0, 3, 7, 0, 1e6, 1, 0, 0},         /* Qwen2's theta; heads inside wider rows */
    {2, 9, 2, 24, 0, 1, 2, 1, 10000, 2, 0, 0},       /* interleaved (GPT-J) */
    {1, 13, 5, 64, 24, 0, 0, 0, 10000, 0, 17, 0},    /* partial rotary: 12 pairs of 32 */
    {2, 4, 3, 64, 16, 64, 5, 1, 10000, 1, 0, 0},     /* partial, interleaved, from column 64 */
    {2, 6, 8, 32, 0, 0, 64, 0, 10000, 2, 0, 1},      /* inv_freq from the caller */
    {1, 3, 2, 6, 0, 0, 1, 0, 10000, 0, 2990, 1},     /* 3 pairs: every chunk is short */
};

static void run_all(void) {
    for (size_t i = 0; i < sizeof(k_cases) / sizeof(k_cases[0]); i++)
        run_case(&k_cases[i]);
}

static void test_rope(void **state) {
    (void)state;
    rng_seed(71);
    const int64_t vws[3] = {8, 1, 16}, wgs[3] = {64, 128, 3};
    for (int s = 0; s < 3; s++) {
        use_tunables("rope", vws[s], wgs[s], 0);
        run_all();
    }
    use_tunables("rope", 8, 64, 0);
}

/* A fused QKV row (H query heads, KVH key heads, KVH value heads): one call rotates the query
 * and key heads and leaves the values alone. Covered by the column check of run_case. */
static void test_fused_qkv(void **state) {
    (void)state;
    rng_seed(72);
    const rcase c = {2, 11, 8 + 2, 16, 0, 0, 2 * 16, 0, 10000, 1, 0, 0};
    run_case(&c);
}

static void test_bad_input(void **state) {
    (void)state;
    int64_t s[3] = {2, 3, 32}, s1[1] = {32}, ps[1] = {3}, fs[1] = {3};
    clf_tensor *x = tensor_poisoned(CLF_F32, 3, s), *x1 = tensor_poisoned(CLF_F32, 1, s1);
    clf_tensor *pbad = tensor_poisoned(CLF_I32, 1, ps), *fbad = tensor_poisoned(CLF_F32, 1, fs);
    clf_rope_params p = clf_rope_default_params(2, 16);
    assert_int_equal(clf_rope(g_ctx, x1, &p), CLF_ERROR_SHAPE_MISMATCH);
    assert_int_equal(clf_rope(g_ctx, x, NULL), CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_rope(g_ctx, NULL, &p), CLF_ERROR_INVALID_ARGUMENT);
    p.col = 1; /* 1 + 2 * 16 > 32 */
    assert_int_equal(clf_rope(g_ctx, x, &p), CLF_ERROR_SHAPE_MISMATCH);
    assert_non_null(strstr(clf_context_last_error(g_ctx), "do not fit"));
    p = clf_rope_default_params(2, 16);
    p.rotary_dim = 7;
    assert_int_equal(clf_rope(g_ctx, x, &p), CLF_ERROR_INVALID_ARGUMENT);
    p.rotary_dim = 18;
    assert_int_equal(clf_rope(g_ctx, x, &p), CLF_ERROR_INVALID_ARGUMENT);
    p = clf_rope_default_params(0, 16);
    assert_int_equal(clf_rope(g_ctx, x, &p), CLF_ERROR_INVALID_ARGUMENT);
    p = clf_rope_default_params(2, 16);
    p.layout = (clf_rope_layout)5;
    assert_int_equal(clf_rope(g_ctx, x, &p), CLF_ERROR_INVALID_ARGUMENT);
    p.layout = CLF_ROPE_NEOX;
    p.theta = 1.0f;
    assert_int_equal(clf_rope(g_ctx, x, &p), CLF_ERROR_INVALID_ARGUMENT);
    p.theta = 10000.0f;
    p.positions = pbad; /* (3), not (B) = (2) */
    assert_int_equal(clf_rope(g_ctx, x, &p), CLF_ERROR_SHAPE_MISMATCH);
    p.positions = fbad; /* F32 */
    assert_int_equal(clf_rope(g_ctx, x, &p), CLF_ERROR_UNSUPPORTED);
    p.positions = NULL;
    p.inv_freq = fbad; /* 3 of 8 */
    assert_int_equal(clf_rope(g_ctx, x, &p), CLF_ERROR_SHAPE_MISMATCH);
    p.inv_freq = NULL;
    p.pos_offset = -1;
    assert_int_equal(clf_rope(g_ctx, x, &p), CLF_ERROR_INVALID_ARGUMENT);
    p.pos_offset = (1 << 24);
    assert_int_equal(clf_rope(g_ctx, x, &p), CLF_ERROR_INVALID_ARGUMENT);
    float *h = tensor_to_host(x);
    for (int i = 0; i < 2 * 3 * 32; i++)
        assert_true(isnan(h[i]));
    free(h);
    clf_tensor_free(x);
    clf_tensor_free(x1);
    clf_tensor_free(pbad);
    clf_tensor_free(fbad);
}

/* A device that allows 1, 3 or 32 work-items per group. */
static void test_wg_caps(void **state) {
    harness_under_wg_caps(test_rope, state);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rope),
        cmocka_unit_test(test_fused_qkv),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_wg_caps),
    };
    return HARNESS_RUN("rope", tests);
}
