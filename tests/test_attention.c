/*
 * test_attention.c — tiled and naive attention against a double-precision reference.
 *
 * Error bound for output row (b, i, head h): |err| <= 2^-24 * max|v| * (4 * Dh * S + 2 * Nk + 16)
 * + 1e-7, where S = max_j scale * sum_d |q_d k_jd| bounds the scores' magnitudes: a float dot
 * product of Dh terms errs by at most Dh * 2^-24 * S, which perturbs each weight exp(s - m) by that
 * much relatively (twice: s and m); the weighted sum of Nk rows of V and the normalization add
 * about 2 Nk ulps of max|v|.
 */
#include "harness.h"
#include "ref/ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct acase {
    int64_t b, h, nq, nk, dh;
    int64_t kmax;  /* rows of k and v (>= nk) */
    int fused;     /* q, k, v are one (B, N, 3 H Dh) tensor (needs nq == nk == kmax) */
    int lens_mode; /* 0, 1 (B), 2 (B, Nq) */
    int causal;
    int64_t offset;
    double qk_scale; /* magnitude of q and k entries */
    double rising;   /* > 0: scores also grow by this much per key (q_0 = 1, k_j0 ~ j) */
    int64_t kvh;     /* K/V heads (grouped-query); 0: h */
    int64_t window;  /* sliding window (the last `window` visible keys); 0: none */
} acase;

static int64_t kv_heads(const acase *c) {
    return c->kvh ? c->kvh : c->h;
}

static float *random_floats(int64_t n, double mag) {
    float *x = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    for (int64_t i = 0; i < n; i++)
        x[i] = (float)rng_uniform(-mag, mag);
    return x;
}

/* Reference: out (B, Nq, H Dh) in double, and the per-row tolerance. */
static void ref_attention(const acase *c, const float *q, int64_t wq, int64_t qcol, const float *k,
                          int64_t wk, int64_t kcol, const float *v, int64_t wv, int64_t vcol,
                          double scale, const int64_t *lim, double *out, double *tol) {
    const int64_t hd = c->h * c->dh, group = c->h / kv_heads(c);
    double *s = malloc(sizeof(double) * (size_t)c->nk);
    double vmax = 0;
    for (int64_t b = 0; b < c->b; b++)
        for (int64_t j = 0; j < c->nk; j++)
            for (int64_t d = 0; d < kv_heads(c) * c->dh; d++)
                vmax = fmax(vmax, fabs((double)v[(b * c->kmax + j) * wv + vcol + d]));
    for (int64_t b = 0; b < c->b; b++)
        for (int64_t h = 0; h < c->h; h++)
            for (int64_t i = 0; i < c->nq; i++) {
                const float *qr = q + (b * c->nq + i) * wq + qcol + h * c->dh;
                const int64_t l = lim[b * c->nq + i], lo = ref_first_key(l, c->window);
                double m = -INFINITY, sum = 0, smag = 0;
                for (int64_t j = lo; j < l; j++) {
                    const float *kr = k + (b * c->kmax + j) * wk + kcol + h / group * c->dh;
                    double dot = 0, mag = 0;
                    for (int64_t d = 0; d < c->dh; d++) {
                        dot += (double)qr[d] * (double)kr[d];
                        mag += fabs((double)qr[d] * (double)kr[d]);
                    }
                    s[j] = dot * scale;
                    smag = fmax(smag, mag * fabs(scale));
                    m = fmax(m, s[j]);
                }
                for (int64_t j = lo; j < l; j++)
                    sum += exp(s[j] - m);
                double *o = out + (b * c->nq + i) * hd + h * c->dh;
                for (int64_t d = 0; d < c->dh; d++) {
                    double acc = 0;
                    for (int64_t j = lo; j < l; j++)
                        acc += exp(s[j] - m) / sum *
                               (double)v[(b * c->kmax + j) * wv + vcol + h / group * c->dh + d];
                    o[d] = l > lo ? acc : 0.0;
                }
                tol[(b * c->nq + i) * c->h + h] =
                    5.9604644775390625e-8 * vmax *
                        (4.0 * (double)c->dh * smag + 2.0 * (double)c->nk + 16.0) +
                    1e-7;
            }
    free(s);
}

static int g_kv_half; /* 1: K and V (unless fused with Q) are F16 tensors, an F16 KV cache */

/* Rounds x[0 .. n) to the values an F16 tensor stores. */
static void round_f16(float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        x[i] = clf_f16_to_f32(clf_f32_to_f16(x[i]));
}

/* A 3-D tensor of `data`, F16 when g_kv_half. */
static clf_tensor *kv_tensor(const int64_t *shape, const float *data) {
    if (!g_kv_half) return tensor_from(CLF_F32, 3, shape, data);
    clf_tensor *t = NULL;
    CLF_OK(clf_tensor_create(g_ctx, CLF_F16, 3, shape, &t));
    CLF_OK(clf_tensor_write_f32(t, data, shape[0] * shape[1] * shape[2]));
    return t;
}

static void run_case(const acase *c, int naive) {
    const int64_t hd = c->h * c->dh, kvd = kv_heads(c) * c->dh;
    int64_t wq, wk, wv, qcol, kcol, vcol;
    float *q, *k, *v;
    if (c->fused) { /* (B, N, H Dh + 2 KVH Dh), as Llama's q, k, v projections concatenated */
        wq = wk = wv = hd + 2 * kvd;
        qcol = 0;
        kcol = hd;
        vcol = hd + kvd;
        q = k = v = random_floats(c->b * c->kmax * wq, c->qk_scale);
        for (int64_t i = 0; i < c->b * c->kmax; i++) /* keep v in [-1, 1] */
            for (int64_t d = 0; d < kvd; d++)
                v[i * wq + vcol + d] = (float)rng_uniform(-1, 1);
    } else {
        wq = hd + 3; /* rows wider than the heads: columns offset inside */
        wk = kvd + 1;
        wv = kvd + 2;
        qcol = 2;
        kcol = 1;
        vcol = 0;
        q = random_floats(c->b * c->nq * wq, c->qk_scale);
        k = random_floats(c->b * c->kmax * wk, c->qk_scale);
        v = random_floats(c->b * c->kmax * wv, 1.0);
        if (c->rising > 0) /* the running max grows all along: the kernels must rescale */
            for (int64_t h = 0; h < c->h; h++) {
                for (int64_t r = 0; r < c->b * c->nq; r++)
                    q[r * wq + qcol + h * c->dh] = 1.0f;
                for (int64_t r = 0; r < c->b * c->kmax && h < kv_heads(c); r++)
                    k[r * wk + kcol + h * c->dh] =
                        (float)(c->rising * (double)(r % c->kmax) * sqrt((double)c->dh));
            }
        if (g_kv_half) { /* the reference takes the stored values: the same bound holds */
            round_f16(k, c->b * c->kmax * wk);
            round_f16(v, c->b * c->kmax * wv);
        }
    }
    int32_t *lens = NULL;
    if (c->lens_mode) {
        int64_t n = c->lens_mode == 1 ? c->b : c->b * c->nq;
        lens = malloc(sizeof(int32_t) * (size_t)n);
        for (int64_t i = 0; i < n; i++)
            lens[i] = (int32_t)rng_int(0, c->nk + 2);
        if (n > 1) lens[1] = 0; /* one batch or query sees nothing */
    }
    int64_t *lim = malloc(sizeof(int64_t) * (size_t)(c->b * c->nq));
    ref_mask_limits(c->b * c->nq, c->nk, c->b, c->nq, lens, c->lens_mode, c->causal, c->offset,
                    lim);
    const double scale = 1.0 / sqrt((double)c->dh);
    double *want = malloc(sizeof(double) * (size_t)(c->b * c->nq * hd));
    double *tol = malloc(sizeof(double) * (size_t)(c->b * c->nq * c->h));
    ref_attention(c, q, wq, qcol, k, wk, kcol, v, wv, vcol, scale, lim, want, tol);

    clf_tensor *tq, *tk, *tv, *tl = NULL;
    if (c->fused) {
        int64_t s[3] = {c->b, c->kmax, wq};
        tq = tk = tv = tensor_from(CLF_F32, 3, s, q);
    } else {
        int64_t sq[3] = {c->b, c->nq, wq}, sk[3] = {c->b, c->kmax, wk}, sv[3] = {c->b, c->kmax, wv};
        tq = tensor_from(CLF_F32, 3, sq, q);
        tk = kv_tensor(sk, k);
        tv = kv_tensor(sv, v);
    }
    if (lens) {
        int64_t ls[2] = {c->b, c->nq};
        tl = tensor_from(CLF_I32, c->lens_mode, ls, lens);
    }
    int64_t so[3] = {c->b, c->nq, hd};
    clf_tensor *out = tensor_poisoned(CLF_F32, 3, so);
    clf_attention_params d = clf_attention_default_params(c->h, c->dh);
    d.kv_heads = c->kvh;
    d.q_col = qcol;
    d.k_col = kcol;
    d.v_col = vcol;
    d.nk = c->nk;
    d.mask.valid_lens = tl;
    d.mask.causal = c->causal;
    d.mask.causal_offset = c->offset;
    d.mask.window = c->window;
    d.naive = naive;
    CLF_OK(clf_attention(g_ctx, tq, tk, tv, out, &d));
    float *got = tensor_to_host(out);
    for (int64_t r = 0; r < c->b * c->nq; r++)
        for (int64_t x = 0; x < hd; x++) {
            const double w = want[r * hd + x], t = tol[r * c->h + x / c->dh];
            const double g = got[r * hd + x];
            if (!(fabs(g - w) <= t))
                fail_msg("%s B%lld H%lld KVH%lld Nq%lld Nk%lld Dh%lld lens%d causal%d off%lld "
                         "fused%d: row %lld col %lld got %.9g want %.9g (tol %.3g)",
                         naive ? "naive" : "tiled", (long long)c->b, (long long)c->h,
                         (long long)kv_heads(c), (long long)c->nq, (long long)c->nk,
                         (long long)c->dh, c->lens_mode, c->causal, (long long)c->offset, c->fused,
                         (long long)r, (long long)x, g, w, t);
        }
    free(got);
    clf_tensor_free(out);
    clf_tensor_free(tl);
    if (!c->fused) {
        clf_tensor_free(tk);
        clf_tensor_free(tv);
        free(k);
        free(v);
    }
    clf_tensor_free(tq);
    free(q);
    free(lens);
    free(lim);
    free(want);
    free(tol);
}

static const acase k_cases[] = {
    /* b, h, nq, nk, dh, kmax, fused, lens, causal, offset, qk */
    {1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 0, 0, 0},
    {2, 3, 7, 13, 24, 13, 0, 1, 0, 0, 1, 0, 0, 0},
    {1, 2, 1, 257, 64, 300, 0, 0, 0, 0, 1, 0, 0, 0},
    {3, 2, 17, 5, 80, 5, 0, 2, 0, 0, 1, 0, 0, 0},
    {2, 1, 31, 37, 96, 37, 0, 0, 1, 6, 1, 0, 0, 0},
    {1, 2, 13, 61, 128, 61, 0, 2, 1, 48, 1, 0, 0, 0},
    {1, 1, 5, 11, 256, 11, 0, 1, 1, 0, 1, 0, 0, 0},
    {2, 4, 19, 19, 64, 19, 1, 1, 1, 0, 1, 0, 0, 0},
    {2, 2, 3, 101, 32, 128, 0, 2, 1, 98, 1, 0, 0, 0},
    {1, 3, 29, 29, 8, 29, 1, 0, 0, 0, 2, 0, 0, 0},
    /* grouped-query (8 heads on 2 K/V heads; 6 on 3, fused as Llama's QKV) and multi-query */
    {2, 8, 11, 23, 16, 23, 0, 1, 1, 12, 1, 0, 2, 0},
    {1, 6, 19, 19, 24, 19, 1, 0, 1, 0, 1, 0, 3, 0},
    {2, 4, 7, 40, 32, 45, 0, 2, 0, 0, 1, 0, 1, 0},
    /* sliding windows (Mistral): causal prefill, decoding with a cache offset, with lengths */
    {1, 4, 23, 23, 16, 23, 0, 0, 1, 0, 1, 0, 2, 5},
    {2, 2, 5, 70, 32, 80, 0, 2, 1, 65, 1, 0, 0, 17},
    {2, 3, 30, 30, 24, 30, 1, 1, 1, 0, 1, 0, 0, 1},
};

static void run_all(int naive) {
    for (size_t i = 0; i < sizeof(k_cases) / sizeof(k_cases[0]); i++)
        run_case(&k_cases[i], naive);
}

/* Styles: CPU-like (transposed keys, 6 queries per work-item, values one output vector at a time,
 * chunks of 32 keys between barriers), GPU-like (chunks of 16, one head per work-item, values a
 * whole row at a time), the row-wise kernel with vectors of 1 and up to 2 heads per work-item
 * (the split path's kernel, here without splits), and the local-memory kernels
 * (attention.LOCAL_KV): tiles of 8 keys in groups of 16 queries of 4 work-items each with float4,
 * and tiles of 32 keys in groups of 3 queries of 3 work-items each with scalars (fewer work-items
 * than a tile's vectors: each stages several; a head dimension that 3 does not divide). */
#define N_STYLES 5
static void use_attention_style(int s) {
    const int64_t maxvw[N_STYLES] = {16, 4, 1, 4, 1}, bq[N_STYLES] = {8, 64, 3, 16, 3},
                  qb[N_STYLES] = {6, 1, 3, 1, 1}, kt[N_STYLES] = {1, 1, 0, 1, 1},
                  kc[N_STYLES] = {32, 16, 256, 256, 256}, hg[N_STYLES] = {8, 1, 2, 1, 1},
                  local[N_STYLES] = {0, 0, 0, 1, 1}, bk[N_STYLES] = {32, 32, 32, 8, 32},
                  lwg[N_STYLES] = {16, 16, 16, 8, 32}, pvn[N_STYLES] = {1, 0, 0, 0, 0},
                  tpq[N_STYLES] = {0, 0, 0, 4, 3}, fwg[N_STYLES] = {16, 16, 16, 64, 9};
    /* see use_tunables; CLF_TEST_ATTENTION_MAX_VW caps these styles only (scripts/run.sh: 4 on
     * rusticl, where llvmpipe's JIT of the CPU-like style's 16-wide programs took 50 s each) */
    const char *cap = getenv("CLF_TEST_ATTENTION_MAX_VW");
    if (!cap) cap = getenv("CLF_TEST_MAX_VW");
    const int64_t vw = cap && atoi(cap) > 0 && maxvw[s] > atoi(cap) ? atoi(cap) : maxvw[s];
    CLF_OK(clf_context_set_tunable(g_ctx, "attention.MAXVW", vw));
    CLF_OK(clf_context_set_tunable(g_ctx, "attention.BQ", bq[s]));
    CLF_OK(clf_context_set_tunable(g_ctx, "attention.QB", qb[s]));
    CLF_OK(clf_context_set_tunable(g_ctx, "attention.KT", kt[s]));
    CLF_OK(clf_context_set_tunable(g_ctx, "attention.KC", kc[s]));
    CLF_OK(clf_context_set_tunable(g_ctx, "attention.MAXHG", hg[s]));
    CLF_OK(clf_context_set_tunable(g_ctx, "attention.LOCAL_KV", local[s]));
    CLF_OK(clf_context_set_tunable(g_ctx, "attention.BK", bk[s]));
    CLF_OK(clf_context_set_tunable(g_ctx, "attention.LOCAL_WG", lwg[s]));
    CLF_OK(clf_context_set_tunable(g_ctx, "attention.PVN", pvn[s]));
    CLF_OK(clf_context_set_tunable(g_ctx, "attention.TPQ", tpq[s]));
    CLF_OK(clf_context_set_tunable(g_ctx, "attention.FLASH_WG", fwg[s]));
    /* The CPU-like style with the device's unrolling (attention.UNROLL: on CPUs the loops over
     * the register arrays unroll), the others rolled, as on GPUs: unrolled programs compile
     * several times slower, and every style is a cold compile of every head size in CI. */
    static int64_t unroll;
    static int have_unroll;
    if (!have_unroll) CLF_OK(clf_context_get_tunable(g_ctx, "attention.UNROLL", &unroll));
    have_unroll = 1;
    CLF_OK(clf_context_set_tunable(g_ctx, "attention.UNROLL", s == 0 || unroll < 0 ? unroll : 0));
}

static void test_tiled(void **state) {
    (void)state;
    rng_seed(61);
    for (int s = 0; s < N_STYLES; s++) {
        use_attention_style(s);
        run_all(0);
    }
    use_attention_style(0);
}

static void test_naive(void **state) {
    (void)state;
    rng_seed(62);
    run_all(1);
}

/* Few queries, many keys: the split-key path with several splits (some empty under masks). */
static void test_split_decode(void **state) {
    (void)state;
    rng_seed(63);
    CLF_OK(clf_context_set_tunable(g_ctx, "attention.SPLIT_KEYS", 16));
    const acase cases[] = {
        {2, 2, 1, 100, 64, 128, 0, 1, 0, 0, 1, 0, 0, 0},
        {1, 3, 3, 77, 24, 77, 0, 2, 1, 74, 1, 0, 0, 0},
        {3, 1, 2, 33, 128, 40, 0, 0, 1, 31, 1, 0, 0, 0},
        {2, 6, 1, 50, 16, 64, 0, 1, 0, 0, 1, 0, 0, 0},
        {2, 6, 1, 70, 32, 70, 0, 1, 0, 0, 1, 0, 2, 0},  /* grouped-query decoding: 3 per K/V head */
        {1, 6, 2, 45, 16, 48, 0, 2, 1, 43, 1, 0, 1, 0}, /* multi-query */
        {2, 4, 1, 90, 16, 96, 0, 1, 0, 0, 1, 0, 2, 37}, /* a window over several splits */
    };
    const int64_t maxhg[3] = {8, 4, 1}; /* 6 heads: 6, 3 and 1 per work-item */
    for (int h = 0; h < 3; h++) {
        CLF_OK(clf_context_set_tunable(g_ctx, "attention.MAXHG", maxhg[h]));
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
            run_case(&cases[i], 0);
    }
    CLF_OK(clf_context_set_tunable(g_ctx, "attention.MAXHG", 8));
    /* The local-memory split kernel: 16 work-items per query (one tile a split), 4 (several
     * tiles a split, Dh over 4 work-items), 1 (the degenerate group). */
    const int64_t lwg[3] = {16, 4, 1};
    for (int w = 0; w < 3; w++) {
        use_attention_style(3);
        CLF_OK(clf_context_set_tunable(g_ctx, "attention.LOCAL_WG", lwg[w]));
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
            run_case(&cases[i], 0);
    }
    use_attention_style(0);
    CLF_OK(clf_context_set_tunable(g_ctx, "attention.SPLIT_KEYS", 256));
}

/* Long key sequences with the device's default tunables, prefill and decoding: on llvmpipe a
 * work-item looping over all 1500 keys passes its 65535-iteration limit (the outputs were wrong
 * from 1024 keys before the loop budget), so the keys must be split there. */
static void test_long_keys(void **state) {
    (void)state;
    rng_seed(64);
    const acase cases[] = {
        {1, 2, 5, 1500, 64, 1500, 0, 0, 1, 1495, 1, 0, 0, 0},
        {1, 2, 1, 1500, 64, 1500, 0, 1, 0, 0, 1, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        run_case(&cases[i], 0);
    use_attention_style(3); /* the local-memory kernels under the same budget */
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        run_case(&cases[i], 0);
    use_attention_style(0);
}

/* Scores of +-1e4 after scaling: no NaN, no Inf, still within the stated bound. */
static void test_extreme_logits(void **state) {
    (void)state;
    rng_seed(64);
    const acase cases[] = {
        {1, 2, 9, 23, 64, 23, 0, 0, 1, 14, 40.0, 0, 0, 0}, /* |s| up to ~64 * 1600 / 8 = 1.3e4 */
        {2, 1, 1, 300, 16, 300, 0, 1, 0, 0, 50.0, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        run_case(&cases[i], 0);
        run_case(&cases[i], 1);
        use_attention_style(3);
        run_case(&cases[i], 0);
        use_attention_style(0);
    }
}

/* Scores that rise by 1-3 per key, so the running max moves past the lazy-rescaling threshold
 * again and again, in every kernel style and in the split path. */
static void test_rising_scores(void **state) {
    (void)state;
    rng_seed(66);
    const acase cases[] = {
        {1, 2, 7, 300, 16, 300, 0, 0, 0, 0, 1, 1.0, 0, 0},
        {2, 1, 5, 203, 64, 210, 0, 1, 1, 198, 1, 3.0, 0, 0},
    };
    for (int st = 0; st < N_STYLES; st++) {
        use_attention_style(st);
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
            run_case(&cases[i], 0);
    }
    CLF_OK(clf_context_set_tunable(g_ctx, "attention.SPLIT_KEYS", 32));
    CLF_OK(clf_context_set_tunable(g_ctx, "attention.SPLIT_NQ", 8));
    for (int st = 0; st < N_STYLES; st += 3) { /* split keys, then combine; both kernels */
        use_attention_style(st);
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
            run_case(&cases[i], 0);
    }
    use_attention_style(0);
    CLF_OK(clf_context_set_tunable(g_ctx, "attention.SPLIT_KEYS", 256));
    CLF_OK(clf_context_set_tunable(g_ctx, "attention.SPLIT_NQ", 4));
}

static void test_naive_weights(void **state) {
    (void)state;
    rng_seed(65);
    const int64_t B = 2, H = 2, N = 9, Dh = 16, hd = H * Dh;
    int64_t s[3] = {B, N, hd}, ws[4] = {B, H, N, N};
    float *q = random_floats(B * N * hd, 1), *k = random_floats(B * N * hd, 1),
          *v = random_floats(B * N * hd, 1);
    clf_tensor *tq = tensor_from(CLF_F32, 3, s, q), *tk = tensor_from(CLF_F32, 3, s, k),
               *tv = tensor_from(CLF_F32, 3, s, v), *out = tensor_poisoned(CLF_F32, 3, s),
               *w = tensor_poisoned(CLF_F32, 4, ws);
    clf_attention_params d = clf_attention_default_params(H, Dh);
    d.mask.causal = 1;
    d.naive = 1;
    d.weights = w;
    CLF_OK(clf_attention(g_ctx, tq, tk, tv, out, &d));
    float *got = tensor_to_host(w);
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t i = 0; i < N; i++) {
                double row[9], m = -INFINITY, sum = 0;
                for (int64_t j = 0; j <= i; j++) {
                    double dot = 0;
                    for (int64_t x = 0; x < Dh; x++)
                        dot += (double)q[(b * N + i) * hd + h * Dh + x] *
                               k[(b * N + j) * hd + h * Dh + x];
                    row[j] = dot / 4.0;
                    m = fmax(m, row[j]);
                }
                for (int64_t j = 0; j <= i; j++)
                    sum += exp(row[j] - m);
                for (int64_t j = 0; j < N; j++) {
                    double want = j <= i ? exp(row[j] - m) / sum : 0.0;
                    float g = got[((b * H + h) * N + i) * N + j];
                    if (!(fabs(g - want) <= 1e-6))
                        fail_msg("weight [%lld,%lld,%lld,%lld]: %g vs %g", (long long)b,
                                 (long long)h, (long long)i, (long long)j, (double)g, want);
                }
            }
    free(got);
    /* Weights with the tiled path are refused. */
    d.naive = 0;
    assert_int_equal(clf_attention(g_ctx, tq, tk, tv, out, &d), CLF_ERROR_INVALID_ARGUMENT);
    free(q);
    free(k);
    free(v);
    clf_tensor_free(tq);
    clf_tensor_free(tk);
    clf_tensor_free(tv);
    clf_tensor_free(out);
    clf_tensor_free(w);
}

static void test_bad_input(void **state) {
    (void)state;
    int64_t s[3] = {2, 5, 32}, sbad[3] = {2, 5, 31}, s1[3] = {3, 5, 32};
    clf_tensor *q = tensor_poisoned(CLF_F32, 3, s), *out = tensor_poisoned(CLF_F32, 3, s);
    clf_tensor *bad = tensor_poisoned(CLF_F32, 3, sbad), *b3 = tensor_poisoned(CLF_F32, 3, s1);
    CLF_OK(clf_tensor_fill(q, 0.5));
    clf_attention_params d = clf_attention_default_params(4, 8);
    assert_int_equal(clf_attention(g_ctx, q, q, q, bad, &d), CLF_ERROR_SHAPE_MISMATCH);
    assert_int_equal(clf_attention(g_ctx, q, b3, q, out, &d), CLF_ERROR_SHAPE_MISMATCH);
    assert_int_equal(clf_attention(g_ctx, q, q, q, q, &d), CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_attention(g_ctx, q, q, q, out, NULL), CLF_ERROR_INVALID_ARGUMENT);
    d.k_col = 1; /* 1 + 32 > 32 */
    assert_int_equal(clf_attention(g_ctx, q, q, q, out, &d), CLF_ERROR_SHAPE_MISMATCH);
    assert_non_null(strstr(clf_context_last_error(g_ctx), "do not fit"));
    d.k_col = 0;
    d.kv_heads = 3; /* does not divide 4 */
    assert_int_equal(clf_attention(g_ctx, q, q, q, out, &d), CLF_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(clf_context_last_error(g_ctx), "kv_heads"));
    d.kv_heads = -1;
    assert_int_equal(clf_attention(g_ctx, q, q, q, out, &d), CLF_ERROR_INVALID_ARGUMENT);
    d.kv_heads = 2; /* K/V of 2 heads from column 24: 24 + 16 > 32 */
    d.k_col = 24;
    assert_int_equal(clf_attention(g_ctx, q, q, q, out, &d), CLF_ERROR_SHAPE_MISMATCH);
    d.k_col = 16; /* fits with 2 K/V heads (16 + 16 <= 32), not with 4 */
    d.v_col = 16;
    clf_tensor *ok_out = tensor_poisoned(CLF_F32, 3, s);
    CLF_OK(clf_attention(g_ctx, q, q, q, ok_out, &d));
    clf_tensor_free(ok_out);
    d.kv_heads = 0;
    assert_int_equal(clf_attention(g_ctx, q, q, q, out, &d), CLF_ERROR_SHAPE_MISMATCH);
    d = clf_attention_default_params(1, 300);
    assert_int_equal(clf_attention(g_ctx, q, q, q, out, &d), CLF_ERROR_INVALID_ARGUMENT);
    d = clf_attention_default_params(4, 8);
    d.nk = 6;
    assert_int_equal(clf_attention(g_ctx, q, q, q, out, &d), CLF_ERROR_SHAPE_MISMATCH);
    d.nk = 0;
    int64_t ls[1] = {3};
    clf_tensor *lens = tensor_poisoned(CLF_I32, 1, ls);
    d.mask.valid_lens = lens;
    assert_int_equal(clf_attention(g_ctx, q, q, q, out, &d), CLF_ERROR_SHAPE_MISMATCH);
    d.mask.valid_lens = NULL;
    d.mask.causal = 1;
    d.mask.causal_offset = -2;
    assert_int_equal(clf_attention(g_ctx, q, q, q, out, &d), CLF_ERROR_INVALID_ARGUMENT);
    float *h = tensor_to_host(out);
    for (int i = 0; i < 2 * 5 * 32; i++)
        assert_true(isnan(h[i]));
    free(h);
    /* The naive path refuses a score matrix over the device's max allocation; tiled runs. */
    clf_device_info info;
    CLF_OK(clf_context_device_info(g_ctx, &info));
    int64_t n = 1;
    while ((double)n * (double)n * 4.0 <= (double)info.max_alloc_bytes)
        n *= 2;
    int64_t sq[3] = {1, n, 1};
    clf_tensor *big = NULL, *bout = NULL;
    CLF_OK(clf_tensor_create(g_ctx, CLF_F32, 3, sq, &big));
    CLF_OK(clf_tensor_create(g_ctx, CLF_F32, 3, sq, &bout));
    d = clf_attention_default_params(1, 1);
    d.naive = 1;
    assert_int_equal(clf_attention(g_ctx, big, big, big, bout, &d), CLF_ERROR_SIZE_LIMIT);
    assert_non_null(strstr(clf_context_last_error(g_ctx), "use the tiled path"));
    clf_tensor_free(big);
    clf_tensor_free(bout);
    clf_tensor_free(lens);
    clf_tensor_free(q);
    clf_tensor_free(out);
    clf_tensor_free(bad);
    clf_tensor_free(b3);
}

/* An F16 KV cache: K and V stored as halfs in one style of each kernel family (0: private
 * memory, transposed K, float16; 2: row-wise K, scalars; 3: local memory, float4), the split-key
 * path in both families; the naive path and mixed dtypes are refused. Styles 1 and 4 differ from
 * those only in tile sizes, which the F32 tests cover: each style is a cold compile of every
 * head size in CI. */
static void test_kv_half(void **state) {
    rng_seed(67);
    g_kv_half = 1;
    const int styles[3] = {0, 2, 3};
    for (int si = 0; si < 3; si++) {
        const int st = styles[si];
        use_attention_style(st);
        for (size_t i = 0; i < sizeof(k_cases) / sizeof(k_cases[0]); i += 2)
            run_case(&k_cases[i], 0);
    }
    use_attention_style(0);
    test_split_decode(state);
    g_kv_half = 0;
    int64_t s[3] = {1, 4, 16};
    clf_tensor *q = tensor_poisoned(CLF_F32, 3, s), *out = tensor_poisoned(CLF_F32, 3, s), *h;
    CLF_OK(clf_tensor_create(g_ctx, CLF_F16, 3, s, &h));
    CLF_OK(clf_tensor_fill(h, 0.25));
    CLF_OK(clf_tensor_fill(q, 0.5));
    clf_attention_params d = clf_attention_default_params(2, 8);
    assert_int_equal(clf_attention(g_ctx, q, h, q, out, &d), CLF_ERROR_UNSUPPORTED);
    assert_int_equal(clf_attention(g_ctx, h, h, h, out, &d), CLF_ERROR_UNSUPPORTED);
    d.naive = 1;
    assert_int_equal(clf_attention(g_ctx, q, h, h, out, &d), CLF_ERROR_UNSUPPORTED);
    assert_non_null(strstr(clf_context_last_error(g_ctx), "F16"));
    float *after = tensor_to_host(out);
    for (int i = 0; i < 64; i++)
        assert_true(isnan(after[i]));
    free(after);
    d.naive = 0;
    CLF_OK(clf_attention(g_ctx, q, h, h, out, &d)); /* uniform weights over v = 0.25 */
    after = tensor_to_host(out);
    for (int i = 0; i < 64; i++)
        assert_true(after[i] == 0.25f);
    free(after);
    clf_tensor_free(q);
    clf_tensor_free(out);
    clf_tensor_free(h);
}

/* A device that allows 1, 3 or 32 work-items per group (every style's BQ is fitted). */
static void test_wg_caps(void **state) {
    harness_under_wg_caps(test_split_decode, state);
    harness_under_wg_caps(test_rising_scores, state);
}

/* A loop budget per work-item as llvmpipe's, scaled down so that PoCL takes the same paths:
 * keys split across work-items (the split-key kernel and the combine) in every style. */
static void test_loop_budget(void **state) {
    harness_under_loop_budget(test_tiled, state, 4000);
    harness_under_loop_budget(test_rising_scores, state, 2500);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tiled),         cmocka_unit_test(test_naive),
        cmocka_unit_test(test_split_decode),  cmocka_unit_test(test_extreme_logits),
        cmocka_unit_test(test_rising_scores), cmocka_unit_test(test_naive_weights),
        cmocka_unit_test(test_bad_input),     cmocka_unit_test(test_wg_caps),
        cmocka_unit_test(test_loop_budget),   cmocka_unit_test(test_long_keys),
        cmocka_unit_test(test_kv_half),
    };
    return HARNESS_RUN("attention", tests);
}
