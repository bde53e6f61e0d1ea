/*
 * softmax.c — host side of kernels/softmax.cl: masked softmax over the last dimension.
 */
#include "../internal.h"

clf_status clf_softmax(clf_context *ctx, const clf_tensor *x, clf_tensor *out,
                       const clf_mask *mask) {
    if (!ctx) return CLF_ERROR_INVALID_ARGUMENT;
    clf__clear_error(ctx);
    clf_status st = clf__check_tensor(ctx, x, "x", CLF_F32);
    if (st == CLF_SUCCESS) st = clf__check_out(ctx, x, out);
    if (st != CLF_SUCCESS) return st;
    const int64_t n = x->shape[x->ndim - 1];
    const int64_t rows = x->numel / n;
    const int64_t nq = x->ndim >= 2 ? x->shape[x->ndim - 2] : 1;
    const int64_t batch = x->ndim >= 3 ? x->shape[0] : 1;
    if ((st = clf__check_int(ctx, n, "softmax row length")) != CLF_SUCCESS) return st;
    if ((st = clf__check_int(ctx, nq, "softmax query count")) != CLF_SUCCESS) return st;

    clf_mask_args m;
    if ((st = clf__check_mask(ctx, mask, batch, nq, "softmax", x->mem, &m)) != CLF_SUCCESS)
        return st;
    cl_kernel k;
    size_t local[2];
    if ((st = clf__row_kernel(ctx, CLF_K_SOFTMAX, n, &k, local)) != CLF_SUCCESS) return st;
    cl_long c_rows = rows, c_rpb = rows / batch, c_off = m.causal_offset;
    cl_int c_n = (cl_int)n, c_nq = (cl_int)nq, c_mode = m.lens_mode, c_causal = m.causal,
           c_window = m.window;
    st = clf__set_args(ctx, k, sizeof(cl_mem), &x->mem, sizeof(cl_mem), &out->mem, sizeof(cl_long),
                       &c_rows, sizeof(cl_int), &c_n, sizeof(cl_mem), &m.lens, sizeof(cl_int),
                       &c_mode, sizeof(cl_long), &c_rpb, sizeof(cl_int), &c_nq, sizeof(cl_int),
                       &c_causal, sizeof(cl_long), &c_off, sizeof(cl_int), &c_window, (size_t)0);
    if (st != CLF_SUCCESS) return st;
    size_t global[2] = {local[0], clf__round_up((size_t)rows, local[1])};
    return clf__launch(ctx, CLF_K_SOFTMAX, k, 2, global, local);
}
