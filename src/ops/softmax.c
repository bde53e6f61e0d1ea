/*
 * softmax.c — host side of kernels/softmax.cl: masked softmax over the last dimension.
 */
#include "../internal.h"

clf_status clf_softmax(clf_context *ctx, const clf_tensor *x, clf_tensor *out,
                       const clf_mask *mask) {
    if (!ctx) return CLF_ERROR_INVALID_ARGUMENT;
    clf_status st = clf__check_tensor(ctx, x, "x", CLF_F32);
    if (st == CLF_SUCCESS) st = clf__check_out(ctx, x, out);
    if (st != CLF_SUCCESS) return st;
    const int64_t n = x->shape[x->ndim - 1];
    const int64_t rows = x->numel / n;
    const int64_t nq = x->ndim >= 2 ? x->shape[x->ndim - 2] : 1;
    const int64_t batch = x->ndim >= 3 ? x->shape[0] : 1;
    if ((st = clf__check_int(ctx, n, "softmax row length")) != CLF_SUCCESS) return st;
    if ((st = clf__check_int(ctx, nq, "softmax query count")) != CLF_SUCCESS) return st;

    int lens_mode = 0, causal = 0;
    int64_t offset = 0;
    cl_mem lens = x->mem; /* a valid buffer the kernel never reads when lens_mode is 0 */
    if (mask) {
        causal = mask->causal ? 1 : 0;
        offset = mask->causal_offset;
        if (causal && offset < 0)
            return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "causal_offset %lld is negative",
                             (long long)offset);
        const clf_tensor *vl = mask->valid_lens;
        if (vl) {
            if ((st = clf__check_tensor(ctx, vl, "valid_lens", CLF_I32)) != CLF_SUCCESS) return st;
            char a[96], b[96];
            bool ok = (vl->ndim == 1 && vl->shape[0] == batch) ||
                      (vl->ndim == 2 && vl->shape[0] == batch && vl->shape[1] == nq);
            if (!ok)
                return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH,
                                 "valid_lens has shape %s; for scores %s it must be (%lld) or "
                                 "(%lld, %lld)",
                                 clf__shape_str(vl, a, sizeof(a)), clf__shape_str(x, b, sizeof(b)),
                                 (long long)batch, (long long)batch, (long long)nq);
            lens_mode = vl->ndim;
            lens = vl->mem;
        }
    }
    cl_kernel k;
    size_t local[2];
    if ((st = clf__row_kernel(ctx, CLF_K_SOFTMAX, n, &k, local)) != CLF_SUCCESS) return st;
    cl_long c_rows = rows, c_rpb = rows / batch, c_off = offset;
    cl_int c_n = (cl_int)n, c_nq = (cl_int)nq, c_mode = lens_mode, c_causal = causal;
    st = clf__set_args(ctx, k, sizeof(cl_mem), &x->mem, sizeof(cl_mem), &out->mem, sizeof(cl_long),
                       &c_rows, sizeof(cl_int), &c_n, sizeof(cl_mem), &lens, sizeof(cl_int),
                       &c_mode, sizeof(cl_long), &c_rpb, sizeof(cl_int), &c_nq, sizeof(cl_int),
                       &c_causal, sizeof(cl_long), &c_off, (size_t)0);
    if (st != CLF_SUCCESS) return st;
    size_t global[2] = {local[0], clf__round_up((size_t)rows, local[1])};
    return clf__launch(ctx, CLF_K_SOFTMAX, k, 2, global, local);
}
