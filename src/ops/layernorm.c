/*
 * layernorm.c — host side of kernels/layernorm.cl: LayerNorm and RMSNorm, each with an optional
 * fused residual.
 */
#include "../internal.h"

#include <math.h>

/* The checks both norms share: x, out like x, gamma (n), residual like x, eps > 0. */
static clf_status check_norm(clf_context *ctx, const clf_tensor *x, const clf_tensor *residual,
                             const clf_tensor *gamma, float eps, const clf_tensor *out) {
    clf_status st = clf__check_tensor(ctx, x, "x", CLF_F32);
    if (st == CLF_SUCCESS) st = clf__check_out(ctx, x, out);
    if (st == CLF_SUCCESS) st = clf__check_tensor(ctx, gamma, "gamma", CLF_F32);
    if (st != CLF_SUCCESS) return st;
    const int64_t n = x->shape[x->ndim - 1];
    char a[96], b[96];
    if (gamma->numel != n)
        return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH,
                         "gamma %s must have the %lld elements of x's last dim (x %s)",
                         clf__shape_str(gamma, a, sizeof(a)), (long long)n,
                         clf__shape_str(x, b, sizeof(b)));
    if (residual) {
        if ((st = clf__check_tensor(ctx, residual, "residual", CLF_F32)) != CLF_SUCCESS) return st;
        if (!clf__same_shape(x, residual))
            return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH, "residual %s differs from x %s",
                             clf__shape_str(residual, a, sizeof(a)),
                             clf__shape_str(x, b, sizeof(b)));
    }
    if (!(eps > 0.0f) || !isfinite(eps))
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "eps = %g: must be > 0 and finite",
                         (double)eps);
    return clf__check_int(ctx, n, "norm row length");
}

clf_status clf_layernorm(clf_context *ctx, const clf_tensor *x, const clf_tensor *residual,
                         const clf_tensor *gamma, const clf_tensor *beta, float eps,
                         clf_tensor *out) {
    if (!ctx) return CLF_ERROR_INVALID_ARGUMENT;
    clf__clear_error(ctx);
    clf_status st = check_norm(ctx, x, residual, gamma, eps, out);
    if (st == CLF_SUCCESS) st = clf__check_tensor(ctx, beta, "beta", CLF_F32);
    if (st != CLF_SUCCESS) return st;
    const int64_t n = x->shape[x->ndim - 1];
    if (beta->numel != n) {
        char a[96], b[96];
        return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH,
                         "beta %s must have the %lld elements of x's last dim (x %s)",
                         clf__shape_str(beta, a, sizeof(a)), (long long)n,
                         clf__shape_str(x, b, sizeof(b)));
    }

    cl_kernel k;
    size_t local[2];
    if ((st = clf__row_kernel(ctx, CLF_K_LAYERNORM, n, &k, local)) != CLF_SUCCESS) return st;
    const int64_t rows = x->numel / n;
    cl_mem res = residual ? residual->mem : x->mem;
    cl_int has_res = residual ? 1 : 0, c_n = (cl_int)n;
    cl_long c_rows = rows;
    st = clf__set_args(ctx, k, sizeof(cl_mem), &x->mem, sizeof(cl_mem), &res, sizeof(cl_int),
                       &has_res, sizeof(cl_mem), &gamma->mem, sizeof(cl_mem), &beta->mem,
                       sizeof(cl_mem), &out->mem, sizeof(cl_long), &c_rows, sizeof(cl_int), &c_n,
                       sizeof(float), &eps, (size_t)0);
    if (st != CLF_SUCCESS) return st;
    size_t global[2] = {local[0], clf__round_up((size_t)rows, local[1])};
    return clf__launch(ctx, CLF_K_LAYERNORM, k, 2, global, local);
}

clf_status clf_rmsnorm(clf_context *ctx, const clf_tensor *x, const clf_tensor *residual,
                       const clf_tensor *gamma, float eps, clf_tensor *sum, clf_tensor *out) {
    if (!ctx) return CLF_ERROR_INVALID_ARGUMENT;
    clf__clear_error(ctx);
    clf_status st = check_norm(ctx, x, residual, gamma, eps, out);
    if (st == CLF_SUCCESS && sum) st = clf__check_out(ctx, x, sum);
    if (st != CLF_SUCCESS) return st;
    if (sum == out)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "rmsnorm: sum must not be out");
    const int64_t n = x->shape[x->ndim - 1];
    cl_kernel k;
    size_t local[2];
    if ((st = clf__row_kernel(ctx, CLF_K_RMSNORM, n, &k, local)) != CLF_SUCCESS) return st;
    const int64_t rows = x->numel / n;
    cl_mem res = residual ? residual->mem : x->mem, sm = sum ? sum->mem : out->mem;
    cl_int has_res = residual ? 1 : 0, has_sum = sum ? 1 : 0, c_n = (cl_int)n;
    cl_long c_rows = rows;
    st = clf__set_args(ctx, k, sizeof(cl_mem), &x->mem, sizeof(cl_mem), &res, sizeof(cl_int),
                       &has_res, sizeof(cl_mem), &gamma->mem, sizeof(cl_mem), &sm, sizeof(cl_int),
                       &has_sum, sizeof(cl_mem), &out->mem, sizeof(cl_long), &c_rows,
                       sizeof(cl_int), &c_n, sizeof(float), &eps, (size_t)0);
    if (st != CLF_SUCCESS) return st;
    size_t global[2] = {local[0], clf__round_up((size_t)rows, local[1])};
    return clf__launch(ctx, CLF_K_RMSNORM, k, 2, global, local);
}
