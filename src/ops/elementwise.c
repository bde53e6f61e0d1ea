/*
 * elementwise.c — host side of kernels/elementwise.cl: bias + activation, residual add, the gated
 * FFN activation, argmax.
 */
#include "../internal.h"

clf_status clf_bias_act(clf_context *ctx, const clf_tensor *x, const clf_tensor *bias,
                        clf_activation act, clf_tensor *out) {
    if (!ctx) return CLF_ERROR_INVALID_ARGUMENT;
    clf__clear_error(ctx);
    clf_status st = clf__check_tensor(ctx, x, "x", CLF_F32);
    if (st == CLF_SUCCESS) st = clf__check_out(ctx, x, out);
    if (st != CLF_SUCCESS) return st;
    const int64_t n = x->shape[x->ndim - 1];
    if (bias) {
        if ((st = clf__check_tensor(ctx, bias, "bias", CLF_F32)) != CLF_SUCCESS) return st;
        if (bias->numel != n) {
            char a[96], b[96];
            return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH,
                             "bias %s must have the %lld elements of x's last dim (x %s)",
                             clf__shape_str(bias, a, sizeof(a)), (long long)n,
                             clf__shape_str(x, b, sizeof(b)));
        }
    }
    if (act < CLF_ACT_IDENTITY || act > CLF__ACT_LAST)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "unknown activation %d", (int)act);
    if ((st = clf__check_int(ctx, n, "row length")) != CLF_SUCCESS) return st;
    cl_kernel k;
    size_t wg[2] = {(size_t)clf__tun(ctx, CLF_T_ELEMENTWISE_WG), 1};
    if ((st = clf__kernel_fit(ctx, CLF_K_BIAS_ACT, NULL, 2, wg, &k)) != CLF_SUCCESS) return st;
    const int64_t vw = clf__tun(ctx, CLF_T_ELEMENTWISE_VW);
    const int64_t rows = x->numel / n;
    cl_mem bm = bias ? bias->mem : x->mem;
    cl_int has_bias = bias ? 1 : 0, c_n = (cl_int)n, c_act = (cl_int)act;
    cl_long c_rows = rows;
    st = clf__set_args(ctx, k, sizeof(cl_mem), &x->mem, sizeof(cl_mem), &bm, sizeof(cl_int),
                       &has_bias, sizeof(cl_mem), &out->mem, sizeof(cl_long), &c_rows,
                       sizeof(cl_int), &c_n, sizeof(cl_int), &c_act, (size_t)0);
    if (st != CLF_SUCCESS) return st;
    size_t global[2] = {clf__round_up((size_t)((n + vw - 1) / vw), wg[0]), (size_t)rows};
    return clf__launch(ctx, CLF_K_BIAS_ACT, k, 2, global, wg);
}

clf_status clf_add(clf_context *ctx, const clf_tensor *a, const clf_tensor *b, clf_tensor *out) {
    if (!ctx) return CLF_ERROR_INVALID_ARGUMENT;
    clf_status st = clf__check_tensor(ctx, a, "a", CLF_F32);
    if (st == CLF_SUCCESS) st = clf__check_tensor(ctx, b, "b", CLF_F32);
    if (st == CLF_SUCCESS) st = clf__check_out(ctx, a, out);
    if (st != CLF_SUCCESS) return st;
    if (!clf__same_shape(a, b)) {
        char sa[96], sb[96];
        return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH, "add: a %s and b %s differ",
                         clf__shape_str(a, sa, sizeof(sa)), clf__shape_str(b, sb, sizeof(sb)));
    }
    cl_kernel k;
    size_t wg = (size_t)clf__tun(ctx, CLF_T_ELEMENTWISE_WG);
    if ((st = clf__kernel_fit(ctx, CLF_K_ADD, NULL, 1, &wg, &k)) != CLF_SUCCESS) return st;
    const int64_t vw = clf__tun(ctx, CLF_T_ELEMENTWISE_VW);
    cl_long n = a->numel;
    st = clf__set_args(ctx, k, sizeof(cl_mem), &a->mem, sizeof(cl_mem), &b->mem, sizeof(cl_mem),
                       &out->mem, sizeof(cl_long), &n, (size_t)0);
    if (st != CLF_SUCCESS) return st;
    size_t global = clf__round_up((size_t)((n + vw - 1) / vw), wg);
    return clf__launch(ctx, CLF_K_ADD, k, 1, &global, &wg);
}

clf_status clf_argmax(clf_context *ctx, const clf_tensor *x, clf_tensor *out) {
    if (!ctx) return CLF_ERROR_INVALID_ARGUMENT;
    clf__clear_error(ctx);
    clf_status st = clf__check_tensor(ctx, x, "x", CLF_F32);
    if (st == CLF_SUCCESS) st = clf__check_tensor(ctx, out, "out", CLF_I32);
    if (st != CLF_SUCCESS) return st;
    const int64_t n = x->shape[x->ndim - 1];
    const int64_t rows = x->numel / n;
    if (out->numel != rows) {
        char a[96], b[96];
        return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH,
                         "argmax: out %s must have one element per row of x %s",
                         clf__shape_str(out, a, sizeof(a)), clf__shape_str(x, b, sizeof(b)));
    }
    if ((st = clf__check_int(ctx, n, "row length")) != CLF_SUCCESS) return st;
    cl_kernel k;
    size_t wg = (size_t)clf__tun(ctx, CLF_T_ELEMENTWISE_ARGMAX_WG);
    wg = clf__row_wg_for_budget(ctx, n, 1, 1, wg); /* llvmpipe: a long vocabulary */
    if ((st = clf__kernel_fit(ctx, CLF_K_ARGMAX, NULL, 1, &wg, &k)) != CLF_SUCCESS) return st;
    if ((st = clf__check_loops(ctx, CLF_K_ARGMAX, (n + (int64_t)wg - 1) / (int64_t)wg)) !=
        CLF_SUCCESS)
        return st;
    cl_int c_n = (cl_int)n;
    st = clf__set_args(ctx, k, sizeof(cl_mem), &x->mem, sizeof(cl_mem), &out->mem, sizeof(cl_int),
                       &c_n, (size_t)0);
    if (st != CLF_SUCCESS) return st;
    size_t global;
    if (!clf__mul_size((size_t)rows, wg, &global))
        return clf__fail(ctx, CLF_ERROR_SIZE_LIMIT, "argmax: too many rows");
    return clf__launch(ctx, CLF_K_ARGMAX, k, 1, &global, &wg);
}

clf_status clf_gated_act(clf_context *ctx, const clf_tensor *gate, const clf_tensor *up,
                         clf_activation act, clf_tensor *out) {
    if (!ctx) return CLF_ERROR_INVALID_ARGUMENT;
    clf__clear_error(ctx);
    clf_status st = clf__check_tensor(ctx, gate, "gate", CLF_F32);
    if (st == CLF_SUCCESS && up) st = clf__check_tensor(ctx, up, "up", CLF_F32);
    if (st == CLF_SUCCESS) st = clf__check_tensor(ctx, out, "out", CLF_F32);
    if (st != CLF_SUCCESS) return st;
    const int64_t w = gate->shape[gate->ndim - 1];
    char a[96], b[96];
    if (up ? !clf__same_shape(gate, up) || !clf__same_shape(gate, out) : w % 2 != 0)
        return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH,
                         up ? "gated_act: gate %s, up and out %s must have the same shape"
                            : "gated_act: a fused gate/up %s must have an even last dim (out %s)",
                         clf__shape_str(gate, a, sizeof(a)), clf__shape_str(out, b, sizeof(b)));
    const int64_t f = up ? w : w / 2;
    if (!up) {
        bool ok = out->ndim == gate->ndim && out->shape[out->ndim - 1] == f;
        for (int i = 0; ok && i < gate->ndim - 1; i++)
            ok = out->shape[i] == gate->shape[i];
        if (!ok)
            return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH,
                             "gated_act: out %s must be gate %s with half its last dim",
                             clf__shape_str(out, a, sizeof(a)), clf__shape_str(gate, b, sizeof(b)));
        if (out == gate)
            return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                             "gated_act: out must not be a fused gate/up tensor");
    }
    if (act < CLF_ACT_IDENTITY || act > CLF__ACT_LAST)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "unknown activation %d", (int)act);
    if ((st = clf__check_int(ctx, w, "row length")) != CLF_SUCCESS) return st;
    cl_kernel k;
    size_t wg[2] = {(size_t)clf__tun(ctx, CLF_T_ELEMENTWISE_WG), 1};
    if ((st = clf__kernel_fit(ctx, CLF_K_GATED_ACT, NULL, 2, wg, &k)) != CLF_SUCCESS) return st;
    const int64_t vw = clf__tun(ctx, CLF_T_ELEMENTWISE_VW);
    const int64_t rows = out->numel / f;
    cl_mem um = up ? up->mem : gate->mem;
    cl_long u_off = up ? 0 : f, g_rs = w, u_rs = w, c_rows = rows;
    cl_int c_f = (cl_int)f, c_act = (cl_int)act;
    st = clf__set_args(ctx, k, sizeof(cl_mem), &gate->mem, sizeof(cl_mem), &um, sizeof(cl_long),
                       &u_off, sizeof(cl_long), &g_rs, sizeof(cl_long), &u_rs, sizeof(cl_mem),
                       &out->mem, sizeof(cl_long), &c_rows, sizeof(cl_int), &c_f, sizeof(cl_int),
                       &c_act, (size_t)0);
    if (st != CLF_SUCCESS) return st;
    size_t global[2] = {clf__round_up((size_t)((f + vw - 1) / vw), wg[0]), (size_t)rows};
    return clf__launch(ctx, CLF_K_GATED_ACT, k, 2, global, wg);
}
