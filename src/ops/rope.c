/*
 * rope.c — host side of kernels/rope.cl: rotary position embedding in place.
 */
#include "../internal.h"

#include <math.h>
#include <string.h>

clf_rope_params clf_rope_default_params(int64_t heads, int64_t head_dim) {
    clf_rope_params p;
    memset(&p, 0, sizeof(p));
    p.heads = heads;
    p.head_dim = head_dim;
    p.layout = CLF_ROPE_NEOX;
    p.theta = 10000.0f;
    return p;
}

/* Positions as the kernel reads them (pos_mode 0: pos_offset; 1: (B) offsets; 2: (B, N)). */
static clf_status check_positions(clf_context *ctx, const clf_rope_params *p, int64_t batch,
                                  int64_t n, cl_mem fallback, cl_int *mode, cl_mem *mem) {
    *mode = 0;
    *mem = fallback; /* a valid buffer the kernel never reads in mode 0 */
    const clf_tensor *t = p->positions;
    if (!t) {
        if (p->pos_offset < 0 || p->pos_offset + n > (1 << 24))
            return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                             "rope: positions %lld .. %lld must lie in 0 .. 2^24",
                             (long long)p->pos_offset, (long long)(p->pos_offset + n - 1));
        return CLF_SUCCESS;
    }
    clf_status st = clf__check_tensor(ctx, t, "positions", CLF_I32);
    if (st != CLF_SUCCESS) return st;
    if (!((t->ndim == 1 && t->shape[0] == batch) ||
          (t->ndim == 2 && t->shape[0] == batch && t->shape[1] == n))) {
        char a[96];
        return clf__fail(
            ctx, CLF_ERROR_SHAPE_MISMATCH, "rope: positions %s must be (%lld) or (%lld, %lld)",
            clf__shape_str(t, a, sizeof(a)), (long long)batch, (long long)batch, (long long)n);
    }
    *mode = (cl_int)t->ndim;
    *mem = t->mem;
    return CLF_SUCCESS;
}

/* The KV append of clf__rope_append (NULL: none). */
typedef struct rope_app {
    int64_t kv_heads;
    clf_tensor *cache;
    const clf_tensor *lens;
} rope_app;

static clf_status rope_run(clf_context *ctx, clf_tensor *x, const clf_rope_params *p,
                           const rope_app *app);

clf_status clf_rope(clf_context *ctx, clf_tensor *x, const clf_rope_params *p) {
    if (!ctx) return CLF_ERROR_INVALID_ARGUMENT;
    clf__clear_error(ctx);
    return rope_run(ctx, x, p, NULL);
}

clf_status clf__rope_append(clf_context *ctx, clf_tensor *x, const clf_rope_params *p,
                            int64_t kv_heads, clf_tensor *cache, const clf_tensor *lens) {
    if (!ctx || !p || !x) return CLF_ERROR_INVALID_ARGUMENT;
    clf_status st = clf__check_tensor(ctx, cache, "cache", cache ? cache->dtype : CLF_F32);
    if (st == CLF_SUCCESS) st = clf__check_tensor(ctx, lens, "lens", CLF_I32);
    if (st != CLF_SUCCESS) return st;
    const int64_t B = x->ndim == 3 ? x->shape[0] : 1, n = x->shape[x->ndim - 2];
    const bool ok =
        x->ndim == 3 && (cache->dtype == CLF_F32 || cache->dtype == CLF_F16) && cache->ndim == 3 &&
        cache->shape[0] == B && cache->shape[2] == 2 * kv_heads * p->head_dim && kv_heads >= 1 &&
        kv_heads < p->heads && p->col == 0 && (p->heads + kv_heads) * p->head_dim <= x->shape[2] &&
        (p->rotary_dim == 0 || p->rotary_dim == p->head_dim) && lens->numel == B * n;
    if (!ok)
        return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH,
                         "rope append: a (B, T, W) QKV, a (B, max_len, 2 kv Dh) F32 or F16 cache, "
                         "whole heads rotated and (B, T) lengths are required");
    const rope_app a = {kv_heads, cache, lens};
    return rope_run(ctx, x, p, &a);
}

static clf_status rope_run(clf_context *ctx, clf_tensor *x, const clf_rope_params *p,
                           const rope_app *app) {
    clf_status st = clf__check_tensor(ctx, x, "x", CLF_F32);
    if (st != CLF_SUCCESS) return st;
    if (!p) return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "rope: params is NULL");
    char a[96];
    if (x->ndim != 2 && x->ndim != 3)
        return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH, "rope: x %s must be (B, N, W) or (N, W)",
                         clf__shape_str(x, a, sizeof(a)));
    const int64_t rd = p->rotary_dim ? p->rotary_dim : p->head_dim;
    if (p->heads < 1 || p->head_dim < 2 || rd < 2 || rd % 2 || rd > p->head_dim)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                         "rope: heads = %lld must be >= 1, head_dim = %lld >= 2, and rotary_dim = "
                         "%lld even, >= 2 and <= head_dim",
                         (long long)p->heads, (long long)p->head_dim, (long long)p->rotary_dim);
    if (p->layout != CLF_ROPE_NEOX && p->layout != CLF_ROPE_INTERLEAVED)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "rope: unknown layout %d",
                         (int)p->layout);
    const int64_t batch = x->ndim == 3 ? x->shape[0] : 1, n = x->shape[x->ndim - 2],
                  w = x->shape[x->ndim - 1];
    if (p->col < 0 || p->heads > (w - p->col) / p->head_dim)
        return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH,
                         "rope: %lld heads of %lld from column %lld do not fit rows of x %s",
                         (long long)p->heads, (long long)p->head_dim, (long long)p->col,
                         clf__shape_str(x, a, sizeof(a)));
    if (p->inv_freq) {
        if ((st = clf__check_tensor(ctx, p->inv_freq, "inv_freq", CLF_F32)) != CLF_SUCCESS)
            return st;
        if (p->inv_freq->numel != rd / 2)
            return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH,
                             "rope: inv_freq %s must have rotary_dim / 2 = %lld elements",
                             clf__shape_str(p->inv_freq, a, sizeof(a)), (long long)(rd / 2));
    } else if (!(p->theta > 1.0f) || !isfinite(p->theta)) {
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "rope: theta = %g must be > 1 and finite",
                         (double)p->theta);
    }
    cl_int mode;
    cl_mem pos;
    if ((st = check_positions(ctx, p, batch, n, x->mem, &mode, &pos)) != CLF_SUCCESS) return st;
    if ((st = clf__check_int(ctx, w, "rope row width")) != CLF_SUCCESS) return st;

    /* rope.WG work-items per group (chosen at launch: one program for every shape), spread over
     * a row's chunks of VW pairs (the power of two that covers them, within rope.WG) and as many
     * rows as fill the rest. */
    const int64_t vw = clf__tun(ctx, CLF_T_ROPE_VW), rows = batch * n;
    const size_t want = (size_t)clf__tun(ctx, CLF_T_ROPE_WG),
                 chunks = (size_t)((rd / 2 + vw - 1) / vw);
    size_t wg[2] = {1, 1};
    while (wg[0] < chunks && wg[0] * 2 <= want)
        wg[0] *= 2;
    wg[1] = want / wg[0] > 1 ? want / wg[0] : 1;
    cl_kernel k;
    if ((st = clf__kernel_fit(ctx, CLF_K_ROPE, NULL, 2, wg, &k)) != CLF_SUCCESS) return st;
    cl_long c_rows = rows, c_off = p->pos_offset;
    cl_int c_n = (cl_int)n, c_w = (cl_int)w, c_col = (cl_int)p->col, c_heads = (cl_int)p->heads,
           c_dh = (cl_int)p->head_dim, c_rd = (cl_int)rd, layout = (cl_int)p->layout,
           has_freq = p->inv_freq ? 1 : 0;
    /* f_i = exp2(i * freq_log2), the exponent in double, rounded once. */
    float freq_log2 = p->inv_freq ? 0.0f : (float)(-2.0 * log2((double)p->theta) / (double)rd);
    cl_mem fm = p->inv_freq ? p->inv_freq->mem : x->mem;
    /* the append: the cache, its type, the first key head, kv heads, the cache's batch and row
     * strides in elements, the lengths (unused buffers: x) */
    cl_mem cm = app ? app->cache->mem : x->mem, lm = app ? app->lens->mem : x->mem;
    cl_int c_app = app ? (app->cache->dtype == CLF_F16 ? 2 : 1) : 0,
           c_kh0 = app ? (cl_int)(p->heads - app->kv_heads) : 0,
           c_kvh = app ? (cl_int)app->kv_heads : 0, c_crow = app ? (cl_int)app->cache->shape[2] : 0;
    cl_long c_cb = app ? (cl_long)(app->cache->shape[1] * app->cache->shape[2]) : 0;
    st = clf__set_args(ctx, k, sizeof(cl_mem), &x->mem, sizeof(cl_long), &c_rows, sizeof(cl_int),
                       &c_n, sizeof(cl_int), &c_w, sizeof(cl_int), &c_col, sizeof(cl_int), &c_heads,
                       sizeof(cl_int), &c_dh, sizeof(cl_int), &c_rd, sizeof(cl_int), &layout,
                       sizeof(float), &freq_log2, sizeof(cl_mem), &fm, sizeof(cl_int), &has_freq,
                       sizeof(cl_mem), &pos, sizeof(cl_int), &mode, sizeof(cl_long), &c_off,
                       sizeof(cl_mem), &cm, sizeof(cl_int), &c_app, sizeof(cl_int), &c_kh0,
                       sizeof(cl_int), &c_kvh, sizeof(cl_long), &c_cb, sizeof(cl_int), &c_crow,
                       sizeof(cl_mem), &lm, (size_t)0);
    if (st != CLF_SUCCESS) return st;
    size_t global[2] = {clf__round_up(chunks, wg[0]), clf__round_up((size_t)rows, wg[1])};
    return clf__launch(ctx, CLF_K_ROPE, k, 2, global, wg);
}
