/*
 * gemm.c — matrix products through CLBlast on the context's queue: clf_matmul (2-D and batched),
 * the raw strided-batched form, and clf_linear (nn.Linear: x W^T + b, then the bias/activation
 * epilogue kernel).
 */
#include "../internal.h"

#include <clblast_c.h>
#include <math.h>

/* Smallest number of elements a row-major matrix of `rows` x `cols` with row stride ld needs. */
static bool span(int64_t rows, int64_t cols, int64_t ld, int64_t *out) {
    if (rows <= 0 || cols <= 0 || ld < cols) return false;
    if ((rows - 1) > (INT64_MAX - cols) / ld) return false;
    *out = (rows - 1) * ld + cols;
    return true;
}

/* Checks that `batch` matrices rows x cols (ld, stride, offset) fit in tensor t. */
static clf_status check_matrix(clf_context *ctx, const clf_tensor *t, const char *what,
                               int64_t rows, int64_t cols, int64_t offset, int64_t ld,
                               int64_t stride, int64_t batch) {
    clf_status st = clf__check_tensor(ctx, t, what, CLF_F32);
    if (st != CLF_SUCCESS) return st;
    int64_t one;
    if (offset < 0 || stride < 0 || !span(rows, cols, ld, &one))
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                         "%s: %lld x %lld matrix with row stride %lld, offset %lld, batch stride "
                         "%lld is not valid",
                         what, (long long)rows, (long long)cols, (long long)ld, (long long)offset,
                         (long long)stride);
    int64_t last = offset;
    if (batch > 1) {
        if (stride > 0 && batch - 1 > (INT64_MAX - offset - one) / stride)
            return clf__fail(ctx, CLF_ERROR_SIZE_LIMIT, "%s: batch extent overflows", what);
        last += (batch - 1) * stride;
    }
    if (last > t->numel - one) {
        char s[96];
        return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH,
                         "%s: %lld matrices of %lld x %lld (row stride %lld, offset %lld, batch "
                         "stride %lld) reach element %lld, past the %lld of tensor %s",
                         what, (long long)batch, (long long)rows, (long long)cols, (long long)ld,
                         (long long)offset, (long long)stride, (long long)(last + one),
                         (long long)t->numel, clf__shape_str(t, s, sizeof(s)));
    }
    return CLF_SUCCESS;
}

static CLBlastTranspose tr(clf_transpose t) {
    return t == CLF_TRANS ? CLBlastTransposeYes : CLBlastTransposeNo;
}

clf_status clf_gemm_strided_batched(clf_context *ctx, clf_transpose ta, clf_transpose tb, int64_t m,
                                    int64_t n, int64_t k, float alpha, const clf_tensor *a,
                                    int64_t a_offset, int64_t lda, int64_t a_stride,
                                    const clf_tensor *b, int64_t b_offset, int64_t ldb,
                                    int64_t b_stride, float beta, clf_tensor *c, int64_t c_offset,
                                    int64_t ldc, int64_t c_stride, int64_t batch) {
    if (!ctx) return CLF_ERROR_INVALID_ARGUMENT;
    if ((ta != CLF_NO_TRANS && ta != CLF_TRANS) || (tb != CLF_NO_TRANS && tb != CLF_TRANS))
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "gemm: unknown transpose value");
    if (m <= 0 || n <= 0 || k <= 0 || batch <= 0)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                         "gemm: m = %lld, n = %lld, k = %lld, batch = %lld must all be >= 1",
                         (long long)m, (long long)n, (long long)k, (long long)batch);
    if (!isfinite(alpha) || !isfinite(beta))
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "gemm: alpha and beta must be finite");
    /* Stored shapes: a is (m, k) or (k, m), b is (k, n) or (n, k), c is (m, n). */
    clf_status st =
        check_matrix(ctx, a, "a", ta ? k : m, ta ? m : k, a_offset, lda, a_stride, batch);
    if (st == CLF_SUCCESS)
        st = check_matrix(ctx, b, "b", tb ? n : k, tb ? k : n, b_offset, ldb, b_stride, batch);
    if (st == CLF_SUCCESS) st = check_matrix(ctx, c, "c", m, n, c_offset, ldc, c_stride, batch);
    if (st != CLF_SUCCESS) return st;
    if (c == a || c == b)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "gemm: c must not be a or b");
    cl_event ev = NULL;
    CLBlastStatusCode s;
    if (clf__fault(ctx, CLF_FAULT_ENQUEUE))
        return clf__cl_fail(ctx, CL_OUT_OF_RESOURCES, "CLBlastSgemm (injected fault)");
    clf_status lst = clf__gemm_lock(ctx);
    if (lst != CLF_SUCCESS) return lst;
    if (batch == 1)
        s = CLBlastSgemm(CLBlastLayoutRowMajor, tr(ta), tr(tb), (size_t)m, (size_t)n, (size_t)k,
                         alpha, a->mem, (size_t)a_offset, (size_t)lda, b->mem, (size_t)b_offset,
                         (size_t)ldb, beta, c->mem, (size_t)c_offset, (size_t)ldc, &ctx->queue,
                         ctx->profiling ? &ev : NULL);
    else
        s = CLBlastSgemmStridedBatched(
            CLBlastLayoutRowMajor, tr(ta), tr(tb), (size_t)m, (size_t)n, (size_t)k, alpha, a->mem,
            (size_t)a_offset, (size_t)lda, (size_t)a_stride, b->mem, (size_t)b_offset, (size_t)ldb,
            (size_t)b_stride, beta, c->mem, (size_t)c_offset, (size_t)ldc, (size_t)c_stride,
            (size_t)batch, &ctx->queue, ctx->profiling ? &ev : NULL);
    clf__gemm_unlock();
    if (s != CLBlastSuccess) {
        if (ev) clReleaseEvent(ev);
        return clf__clblast_fail(ctx, s,
                                 batch == 1 ? "CLBlastSgemm" : "CLBlastSgemmStridedBatched");
    }
    ctx->launches++;
    return ev ? clf__profile_event(ctx, ev) : CLF_SUCCESS;
}

clf_status clf_matmul(clf_context *ctx, clf_transpose ta, clf_transpose tb, float alpha,
                      const clf_tensor *a, const clf_tensor *b, float beta, clf_tensor *c) {
    if (!ctx) return CLF_ERROR_INVALID_ARGUMENT;
    clf_status st = clf__check_tensor(ctx, a, "a", CLF_F32);
    if (st == CLF_SUCCESS) st = clf__check_tensor(ctx, b, "b", CLF_F32);
    if (st == CLF_SUCCESS) st = clf__check_tensor(ctx, c, "c", CLF_F32);
    if (st != CLF_SUCCESS) return st;
    char sa[96], sb[96], sc[96];
    const int nd = a->ndim;
    bool ok = (nd == 2 || nd == 3) && b->ndim == nd && c->ndim == nd;
    if (ok && nd == 3) ok = a->shape[0] == b->shape[0] && a->shape[0] == c->shape[0];
    int64_t m = 0, k = 0, n = 0, kb = 0;
    if (ok) {
        m = ta ? a->shape[nd - 1] : a->shape[nd - 2];
        k = ta ? a->shape[nd - 2] : a->shape[nd - 1];
        kb = tb ? b->shape[nd - 1] : b->shape[nd - 2];
        n = tb ? b->shape[nd - 2] : b->shape[nd - 1];
        ok = k == kb && c->shape[nd - 2] == m && c->shape[nd - 1] == n;
    }
    if (!ok)
        return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH,
                         "matmul: a %s%s, b %s%s and c %s do not fit (2-D or 3-D with one batch)",
                         clf__shape_str(a, sa, sizeof(sa)), ta ? "^T" : "",
                         clf__shape_str(b, sb, sizeof(sb)), tb ? "^T" : "",
                         clf__shape_str(c, sc, sizeof(sc)));
    const int64_t batch = nd == 3 ? a->shape[0] : 1;
    return clf_gemm_strided_batched(ctx, ta, tb, m, n, k, alpha, a, 0, a->shape[nd - 1], m * k, b,
                                    0, b->shape[nd - 1], k * n, beta, c, 0, n, m * n, batch);
}

/* clf_linear for a few rows (decoding): the linear_rows kernel, SK_ROWS rows per launch. */
static clf_status linear_rows(clf_context *ctx, const clf_tensor *x, int64_t rows, int64_t in,
                              const clf_tensor *w, const clf_tensor *bias, clf_activation act,
                              clf_tensor *y, int64_t out) {
    clf_status st = clf__check_int(ctx, in, "linear input size");
    if (st == CLF_SUCCESS) st = clf__check_int(ctx, out, "linear output size");
    if (st == CLF_SUCCESS) st = clf__check_int(ctx, rows, "linear rows");
    cl_kernel k;
    size_t local[2] = {(size_t)clf__tun(ctx, "elementwise.SK_LW"), 1};
    if (st == CLF_SUCCESS) st = clf__kernel_fit(ctx, CLF_K_LINEAR_ROWS, NULL, 2, local, &k);
    if (st != CLF_SUCCESS) return st;
    const int64_t chunk = clf__tun(ctx, "elementwise.SK_ROWS");
    const int64_t opi = clf__tun(ctx, "elementwise.SK_OPI");
    const size_t lw = local[0];
    cl_mem bm = bias ? bias->mem : w->mem;
    /* ReLU is free in the kernel's scalar epilogue; GELU's exp is not (PoCL: about 10x the
     * cost per element of the vectorized bias_act pass), so GELU runs as a second pass. */
    const bool fused = act == CLF_ACT_IDENTITY || act == CLF_ACT_RELU;
    cl_int has_bias = bias ? 1 : 0, c_in = (cl_int)in, c_out = (cl_int)out;
    cl_int c_act = fused ? (cl_int)act : (cl_int)CLF_ACT_IDENTITY;
    cl_int c_rows = (cl_int)rows;
    const size_t global[2] = {(size_t)((out + opi - 1) / opi) * lw,
                              (size_t)((rows + chunk - 1) / chunk)};
    st = clf__set_args(ctx, k, sizeof(cl_mem), &x->mem, sizeof(cl_int), &c_rows, sizeof(cl_mem),
                       &w->mem, sizeof(cl_mem), &bm, sizeof(cl_int), &has_bias, sizeof(cl_int),
                       &c_act, sizeof(cl_mem), &y->mem, sizeof(cl_int), &c_in, sizeof(cl_int),
                       &c_out, (size_t)0);
    if (st == CLF_SUCCESS) st = clf__launch(ctx, CLF_K_LINEAR_ROWS, k, 2, global, local);
    if (st == CLF_SUCCESS && !fused) st = clf_bias_act(ctx, y, NULL, act, y);
    return st;
}

clf_status clf_linear(clf_context *ctx, const clf_tensor *x, const clf_tensor *w,
                      const clf_tensor *bias, clf_activation act, clf_tensor *y) {
    if (!ctx) return CLF_ERROR_INVALID_ARGUMENT;
    clf_status st = clf__check_tensor(ctx, x, "x", CLF_F32);
    if (st == CLF_SUCCESS) st = clf__check_tensor(ctx, w, "w", CLF_F32);
    if (st == CLF_SUCCESS) st = clf__check_tensor(ctx, y, "y", CLF_F32);
    if (st == CLF_SUCCESS && bias) st = clf__check_tensor(ctx, bias, "bias", CLF_F32);
    if (st != CLF_SUCCESS) return st;
    char sx[96], sw[96], sy[96];
    const int64_t in = x->shape[x->ndim - 1];
    const int64_t out = w->ndim == 2 ? w->shape[0] : -1;
    bool ok = w->ndim == 2 && w->shape[1] == in && y->ndim == x->ndim &&
              y->shape[y->ndim - 1] == out && (!bias || bias->numel == out);
    for (int i = 0; ok && i < x->ndim - 1; i++)
        ok = x->shape[i] == y->shape[i];
    if (!ok)
        return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH,
                         "linear: x %s, w %s (out, in), bias of %lld and y %s do not fit",
                         clf__shape_str(x, sx, sizeof(sx)), clf__shape_str(w, sw, sizeof(sw)),
                         bias ? (long long)bias->numel : 0LL, clf__shape_str(y, sy, sizeof(sy)));
    if (y == x) return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "linear: y must not be x");
    if (act < CLF_ACT_IDENTITY || act > CLF_ACT_GELU_TANH)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "unknown activation %d", (int)act);
    const int64_t rows = x->numel / in;
    if (rows <= clf__tun(ctx, "elementwise.SKINNY_MAX"))
        return linear_rows(ctx, x, rows, in, w, bias, act, y, out);
    st = clf_gemm_strided_batched(ctx, CLF_NO_TRANS, CLF_TRANS, rows, out, in, 1.0f, x, 0, in, 0, w,
                                  0, in, 0, 0.0f, y, 0, out, 0, 1);
    if (st != CLF_SUCCESS || (!bias && act == CLF_ACT_IDENTITY)) return st;
    return clf_bias_act(ctx, y, bias, act, y);
}

clf_status clf__linear_pack(clf_context *ctx, const clf_tensor *w, clf_tensor **packed) {
    *packed = NULL;
    clf_status st = clf__check_tensor(ctx, w, "w", CLF_F32);
    if (st != CLF_SUCCESS) return st;
    if (w->ndim != 2) return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH, "pack: w must be (out, in)");
    const int64_t out = w->shape[0], in = w->shape[1];
    const int64_t pw = clf__tun(ctx, "elementwise.PK_NV") * clf__tun(ctx, "elementwise.VW");
    const int64_t nb = (out + pw - 1) / pw;
    if ((st = clf__check_int(ctx, nb * pw, "pack: output size")) != CLF_SUCCESS) return st;
    if ((st = clf__check_int(ctx, in, "pack: input size")) != CLF_SUCCESS) return st;
    cl_kernel k;
    if ((st = clf__kernel(ctx, CLF_K_PACK_PANELS, &k)) != CLF_SUCCESS) return st;
    int64_t shape[3] = {nb, in, pw};
    clf_tensor *t = NULL;
    if ((st = clf_tensor_create(ctx, CLF_F32, 3, shape, &t)) != CLF_SUCCESS) return st;
    cl_int c_in = (cl_int)in, c_out = (cl_int)out;
    st = clf__set_args(ctx, k, sizeof(cl_mem), &w->mem, sizeof(cl_mem), &t->mem, sizeof(cl_int),
                       &c_in, sizeof(cl_int), &c_out, (size_t)0);
    const size_t global[3] = {(size_t)pw, (size_t)in, (size_t)nb};
    if (st == CLF_SUCCESS) st = clf__launch(ctx, CLF_K_PACK_PANELS, k, 3, global, NULL);
    if (st != CLF_SUCCESS) {
        clf_tensor_free(t);
        return st;
    }
    *packed = t;
    return CLF_SUCCESS;
}

clf_status clf__linear_packed(clf_context *ctx, const clf_tensor *x, const clf_tensor *wp,
                              int64_t out, const clf_tensor *bias, clf_activation act,
                              clf_tensor *y) {
    clf_status st = clf__check_tensor(ctx, x, "x", CLF_F32);
    if (st == CLF_SUCCESS) st = clf__check_tensor(ctx, y, "y", CLF_F32);
    if (st == CLF_SUCCESS && bias) st = clf__check_tensor(ctx, bias, "bias", CLF_F32);
    if (st != CLF_SUCCESS) return st;
    const int64_t in = x->shape[x->ndim - 1], rows = x->numel / in;
    const int64_t pw = clf__tun(ctx, "elementwise.PK_NV") * clf__tun(ctx, "elementwise.VW");
    char sx[96], sy[96];
    bool ok = wp->ndim == 3 && wp->shape[1] == in && wp->shape[0] * wp->shape[2] >= out &&
              y->ndim == x->ndim && y->shape[y->ndim - 1] == out && (!bias || bias->numel == out);
    for (int i = 0; ok && i < x->ndim - 1; i++)
        ok = x->shape[i] == y->shape[i];
    if (!ok)
        return clf__fail(
            ctx, CLF_ERROR_SHAPE_MISMATCH,
            "linear (packed): x %s and y %s do not fit the packed (%lld, %lld) weights",
            clf__shape_str(x, sx, sizeof(sx)), clf__shape_str(y, sy, sizeof(sy)), (long long)out,
            (long long)in);
    if (wp->shape[2] != pw)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                         "linear (packed): weights packed in panels of %lld, the tunables in force "
                         "(elementwise.PK_NV x elementwise.VW) say %lld: pack them again",
                         (long long)wp->shape[2], (long long)pw);
    if ((st = clf__check_int(ctx, rows, "linear rows")) != CLF_SUCCESS) return st;
    cl_kernel k;
    size_t local[2] = {1, 1}; /* one work-item per group: reqd_work_group_size(1, 1, 1) */
    if ((st = clf__kernel_fit(ctx, CLF_K_LINEAR_PACKED, NULL, 2, local, &k)) != CLF_SUCCESS)
        return st;
    const int64_t R = clf__tun(ctx, "elementwise.PK_R");
    cl_mem bm = bias ? bias->mem : wp->mem;
    cl_int c_rows = (cl_int)rows, has_bias = bias ? 1 : 0, c_act = (cl_int)act, c_in = (cl_int)in,
           c_out = (cl_int)out;
    st = clf__set_args(ctx, k, sizeof(cl_mem), &x->mem, sizeof(cl_int), &c_rows, sizeof(cl_mem),
                       &wp->mem, sizeof(cl_mem), &bm, sizeof(cl_int), &has_bias, sizeof(cl_int),
                       &c_act, sizeof(cl_mem), &y->mem, sizeof(cl_int), &c_in, sizeof(cl_int),
                       &c_out, (size_t)0);
    const size_t global[2] = {(size_t)((out + pw - 1) / pw), (size_t)((rows + R - 1) / R)};
    if (st == CLF_SUCCESS) st = clf__launch(ctx, CLF_K_LINEAR_PACKED, k, 2, global, local);
    return st;
}
