/*
 * mask.c — the host-side checks of a clf_mask, shared by every masked op (softmax, attention):
 * valid lengths (B) per batch or (B, nq) per query, I32; a causal offset >= 0; a window >= 0. The
 * kernels apply the rules in common.cl (clf_visible_keys, clf_first_key).
 */
#include "../internal.h"

clf_status clf__check_mask(clf_context *ctx, const clf_mask *mask, int64_t batch, int64_t nq,
                           const char *what, cl_mem fallback, clf_mask_args *out) {
    out->lens_mode = 0;
    out->lens = fallback; /* a valid buffer the kernels never read without lengths */
    out->causal = 0;
    out->causal_offset = 0;
    out->window = 0;
    if (!mask) return CLF_SUCCESS;
    if (mask->window < 0 || mask->window > INT32_MAX)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "%s: window %lld must be in 0 .. 2^31-1",
                         what, (long long)mask->window);
    out->window = (int)mask->window;
    out->causal = mask->causal ? 1 : 0;
    out->causal_offset = mask->causal_offset;
    if (out->causal && out->causal_offset < 0)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "%s: causal_offset %lld is negative",
                         what, (long long)out->causal_offset);
    const clf_tensor *vl = mask->valid_lens;
    if (!vl) return CLF_SUCCESS;
    clf_status st = clf__check_tensor(ctx, vl, "valid_lens", CLF_I32);
    if (st != CLF_SUCCESS) return st;
    if (!((vl->ndim == 1 && vl->shape[0] == batch) ||
          (vl->ndim == 2 && vl->shape[0] == batch && vl->shape[1] == nq))) {
        char a[96];
        return clf__fail(
            ctx, CLF_ERROR_SHAPE_MISMATCH, "%s: valid_lens %s must be (%lld) or (%lld, %lld)", what,
            clf__shape_str(vl, a, sizeof(a)), (long long)batch, (long long)batch, (long long)nq);
    }
    out->lens_mode = vl->ndim;
    out->lens = vl->mem;
    return CLF_SUCCESS;
}
