/*
 * gemm.c — matrix products on the context's queue: clf_matmul (2-D and batched) and the raw
 * strided-batched form (clf_linear, in linear.c, uses it for large products). On CPUs
 * (linear.PACK) through clformer's packed kernels, elsewhere through CLBlast, whose tuning
 * database knows GPUs.
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

/* On CPUs (linear.PACK): op(B) packed into panels in the context's scratch (once when every
 * matrix of the batch shares B: b_stride 0), then the packed kernels of clf_linear with op(A)'s
 * strides and alpha/beta: CLBlast's generic parameters reach 6-18% of the FMA roof on PoCL. */
static clf_status gemm_packed(clf_context *ctx, clf_transpose ta, clf_transpose tb, int64_t m,
                              int64_t n, int64_t k, float alpha, const clf_tensor *a,
                              int64_t a_offset, int64_t lda, int64_t a_stride, const clf_tensor *b,
                              int64_t b_offset, int64_t ldb, int64_t b_stride, float beta,
                              clf_tensor *c, int64_t c_offset, int64_t ldc, int64_t c_stride,
                              int64_t batch) {
    const int64_t pw = clf__tun(ctx, CLF_T_LINEAR_PK_NV) * clf__tun(ctx, CLF_T_LINEAR_VW);
    const int64_t panels = (n + pw - 1) / pw, packs = b_stride == 0 ? 1 : batch;
    const double bytes = (double)packs * (double)panels * (double)pw * (double)k * sizeof(float);
    if (bytes > (double)ctx->info.max_alloc_bytes || bytes > (double)SIZE_MAX)
        return clf__fail(ctx, CLF_ERROR_SIZE_LIMIT,
                         "gemm: op(B) packed for %lld matrices needs %.0f MiB, over the device's "
                         "largest allocation (%.0f MiB)",
                         (long long)packs, bytes / 1048576.0,
                         (double)ctx->info.max_alloc_bytes / 1048576.0);
    cl_mem wp;
    clf_status st = clf__scratch(ctx, (size_t)bytes, &wp);
    /* W[o][kk] = op(B)[kk][o]: B stored (k, n) (no transpose) or (n, k). */
    if (st == CLF_SUCCESS)
        st = clf__pack_panels(ctx, b->mem, CLF_F32, b_offset, tb ? ldb : 1, tb ? 1 : ldb, b_stride,
                              k, n, packs, 0, wp);
    if (st != CLF_SUCCESS) return st;
    /* x[r][kk] = op(A)[r][kk]: A stored (m, k) (no transpose) or (k, m). */
    const clf_packed_call pc = {.x = a->mem,
                                .x_off = a_offset,
                                .x_rs = ta ? 1 : lda,
                                .x_ks = ta ? lda : 1,
                                .x_bs = a_stride,
                                .rows = m,
                                .wp = wp,
                                .wp_bs = b_stride == 0 ? 0 : panels * pw * k,
                                .act = CLF_ACT_IDENTITY,
                                .y = c->mem,
                                .y_off = c_offset,
                                .y_rs = ldc,
                                .y_bs = c_stride,
                                .alpha = alpha,
                                .beta = beta,
                                .in = k,
                                .out = n,
                                .batch = batch};
    return clf__packed_run(ctx, &pc);
}

clf_status clf_gemm_strided_batched(clf_context *ctx, clf_transpose ta, clf_transpose tb, int64_t m,
                                    int64_t n, int64_t k, float alpha, const clf_tensor *a,
                                    int64_t a_offset, int64_t lda, int64_t a_stride,
                                    const clf_tensor *b, int64_t b_offset, int64_t ldb,
                                    int64_t b_stride, float beta, clf_tensor *c, int64_t c_offset,
                                    int64_t ldc, int64_t c_stride, int64_t batch) {
    if (!ctx) return CLF_ERROR_INVALID_ARGUMENT;
    clf__clear_error(ctx);
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
    if (clf__tun(ctx, CLF_T_LINEAR_PACK))
        return gemm_packed(ctx, ta, tb, m, n, k, alpha, a, a_offset, lda, a_stride, b, b_offset,
                           ldb, b_stride, beta, c, c_offset, ldc, c_stride, batch);
    cl_event ev = NULL;
    CLBlastStatusCode s;
    if (clf__fault(ctx, CLF_FAULT_ENQUEUE))
        return clf__cl_fail(ctx, CL_OUT_OF_RESOURCES, "CLBlastSgemm (injected fault)");
    clf_status lst = clf__gemm_lock(ctx);
    if (lst != CLF_SUCCESS) return lst;
    ctx->ran_clblast = 1;
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
    return ev ? clf__profile_event(ctx, ev, CLF_PROF_GEMM) : CLF_SUCCESS;
}

clf_status clf_matmul(clf_context *ctx, clf_transpose ta, clf_transpose tb, float alpha,
                      const clf_tensor *a, const clf_tensor *b, float beta, clf_tensor *c) {
    if (!ctx) return CLF_ERROR_INVALID_ARGUMENT;
    clf__clear_error(ctx);
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
