/*
 * linear.c — host side of kernels/linear.cl: clf_linear (nn.Linear: y = act(x W^T + b)) through
 * linear_rows for a few rows (decoding) and through CLBlast plus the bias/activation epilogue for
 * the rest; on CPUs (linear.PACK) weights packed once into panels for linear_packed. Weights
 * may be F16 (storage; the kernels read them with vload_half, WH 1): CLBlast has no GEMM with
 * F16 weights and F32 activations, so those take linear_rows at every row count.
 */
#include "../internal.h"

#include <math.h>
#include <stdlib.h>

/* The kernels' per-call define for the weights' type (DT, kernels/dtypes.cl). */
static clf_defines weight_defs(clf_dtype wtype) {
    clf_defines d = {0, {NULL}, {0}};
    clf__dtype_define(&d, wtype);
    return d;
}

/* The sizes a kernel takes as int. */
static clf_status check_sizes(clf_context *ctx, int64_t rows, int64_t in, int64_t out) {
    clf_status st = clf__check_int(ctx, in, "linear input size");
    if (st == CLF_SUCCESS) st = clf__check_int(ctx, out, "linear output size");
    if (st == CLF_SUCCESS) st = clf__check_int(ctx, rows, "linear rows");
    return st;
}

/* The linear_rows variant for `rows` rows of weights of type wt and its rows per launch:
 * linear.SK_ROWS, or for fewer rows (a decode step) the largest power of two up to them, a variant
 * of its own: one token would otherwise also multiply SK_ROWS - 1 rows of zeros, and a step of
 * quantized weights (converted once per row block) turn compute-bound. */
static clf_defines rows_variant(const clf_context *ctx, clf_dtype wt, int64_t rows,
                                int64_t *chunk) {
    clf_defines defs = weight_defs(wt);
    *chunk = clf__tun(ctx, CLF_T_LINEAR_SK_ROWS);
    if (rows < *chunk) {
        int64_t r = 1;
        while (r * 2 <= rows)
            r *= 2;
        *chunk = r;
        defs.name[defs.n] = "SK_ROWS";
        defs.value[defs.n++] = r;
    }
    return defs;
}

clf_status clf__linear_rows_warmup(clf_context *ctx) {
    for (int64_t rows = 1; rows < clf__tun(ctx, CLF_T_LINEAR_SK_ROWS) && rows <= 4; rows *= 2) {
        int64_t chunk;
        const clf_defines defs = rows_variant(ctx, CLF_F32, rows, &chunk);
        size_t local[2] = {(size_t)clf__tun(ctx, CLF_T_LINEAR_SK_LW), 1};
        cl_kernel k;
        clf_status st = clf__kernel_fit(ctx, CLF_K_LINEAR_ROWS, &defs, 2, local, &k);
        if (st != CLF_SUCCESS) return st;
    }
    return CLF_SUCCESS;
}

/* clf_linear for a few rows (decoding): the linear_rows kernel, SK_ROWS rows per launch. */
static clf_status linear_rows(clf_context *ctx, const clf_tensor *x, int64_t rows, int64_t in,
                              const clf_tensor *w, const clf_tensor *bias, clf_activation act,
                              clf_tensor *y, int64_t out, int64_t y_off, int64_t y_rs) {
    clf_status st = check_sizes(ctx, rows, in, out);
    cl_kernel k;
    size_t local[2] = {(size_t)clf__tun(ctx, CLF_T_LINEAR_SK_LW), 1};
    int64_t chunk;
    const clf_defines defs = rows_variant(ctx, w->dtype, rows, &chunk);
    if (st == CLF_SUCCESS) st = clf__kernel_fit(ctx, CLF_K_LINEAR_ROWS, &defs, 2, local, &k);
    if (st != CLF_SUCCESS) return st;
    const int64_t opi = clf__tun(ctx, CLF_T_LINEAR_SK_OPI);
    const size_t lw = local[0];
    cl_mem bm = bias ? bias->mem : w->mem;
    /* ReLU is free in the kernel's scalar epilogue; GELU's exp is not (PoCL: about 10x the
     * cost per element of the vectorized bias_act pass), so GELU runs as a second pass. */
    const bool fused = act == CLF_ACT_IDENTITY || act == CLF_ACT_RELU;
    cl_int has_bias = bias ? 1 : 0, c_in = (cl_int)in, c_out = (cl_int)out;
    cl_int c_act = fused ? (cl_int)act : (cl_int)CLF_ACT_IDENTITY;
    cl_int c_rows = (cl_int)rows;
    cl_long w_rs = (cl_long)clf_dtype_row_bytes(w->dtype, in), c_yoff = y_off, c_yrs = y_rs;
    const size_t global[2] = {(size_t)((out + opi - 1) / opi) * lw,
                              (size_t)((rows + chunk - 1) / chunk)};
    st = clf__set_args(ctx, k, sizeof(cl_mem), &x->mem, sizeof(cl_int), &c_rows, sizeof(cl_mem),
                       &w->mem, sizeof(cl_long), &w_rs, sizeof(cl_mem), &bm, sizeof(cl_int),
                       &has_bias, sizeof(cl_int), &c_act, sizeof(cl_mem), &y->mem, sizeof(cl_long),
                       &c_yoff, sizeof(cl_long), &c_yrs, sizeof(cl_int), &c_in, sizeof(cl_int),
                       &c_out, (size_t)0);
    if (st == CLF_SUCCESS) st = clf__launch(ctx, CLF_K_LINEAR_ROWS, k, 2, global, local);
    if (st == CLF_SUCCESS && !fused) st = clf_bias_act(ctx, y, NULL, act, y);
    return st;
}

/* clf_linear through linear_tiled, the local-memory GEMM (F16 weights on GPUs). */
static clf_status linear_tiled(clf_context *ctx, const clf_tensor *x, int64_t rows, int64_t in,
                               const clf_tensor *w, const clf_tensor *bias, clf_activation act,
                               clf_tensor *y, int64_t out, int64_t y_off, int64_t y_rs) {
    clf_status st = check_sizes(ctx, rows, in, out);
    cl_kernel k;
    size_t local[2] = {(size_t)clf__tun(ctx, CLF_T_LINEAR_LT_WX),
                       (size_t)clf__tun(ctx, CLF_T_LINEAR_LT_WY)};
    const clf_defines defs = weight_defs(w->dtype);
    if (st == CLF_SUCCESS) st = clf__kernel_fit(ctx, CLF_K_LINEAR_TILED, &defs, 2, local, &k);
    if (st != CLF_SUCCESS) return st;
    /* The tile follows the fitted group: TN = WX RN outputs, TM = WY RM rows. */
    const size_t tn = local[0] * (size_t)clf__tun(ctx, CLF_T_LINEAR_LT_RN);
    const size_t tm = local[1] * (size_t)clf__tun(ctx, CLF_T_LINEAR_LT_RM);
    cl_mem bm = bias ? bias->mem : w->mem;
    cl_int has_bias = bias ? 1 : 0, c_in = (cl_int)in, c_out = (cl_int)out, c_rows = (cl_int)rows;
    cl_int c_act = (cl_int)act;
    cl_long w_rs = (cl_long)clf_dtype_row_bytes(w->dtype, in), c_yoff = y_off, c_yrs = y_rs;
    const size_t global[2] = {((size_t)out + tn - 1) / tn * local[0],
                              ((size_t)rows + tm - 1) / tm * local[1]};
    st = clf__set_args(ctx, k, sizeof(cl_mem), &x->mem, sizeof(cl_int), &c_rows, sizeof(cl_mem),
                       &w->mem, sizeof(cl_long), &w_rs, sizeof(cl_mem), &bm, sizeof(cl_int),
                       &has_bias, sizeof(cl_int), &c_act, sizeof(cl_mem), &y->mem, sizeof(cl_long),
                       &c_yoff, sizeof(cl_long), &c_yrs, sizeof(cl_int), &c_in, sizeof(cl_int),
                       &c_out, (size_t)0);
    if (st == CLF_SUCCESS) st = clf__launch(ctx, CLF_K_LINEAR_TILED, k, 2, global, local);
    return st;
}

/* Weights are of any type the table marks for them (CLF_DTU_WEIGHTS). */
static clf_status check_weights(clf_context *ctx, const clf_tensor *w, const char *what) {
    const clf_dtype_traits *t = w && w->ctx == ctx ? clf__dtype(w->dtype) : NULL;
    if (t && (t->uses & CLF_DTU_WEIGHTS)) return CLF_SUCCESS;
    return clf__check_tensor(ctx, w, what, CLF_F32);
}

/* Panels (the packed kernels) hold plain types, and block types at 8 or 16 columns a vector
 * (the CPUs' widths; kernels/dtypes.cl, "panels"). */
static bool packable(const clf_context *ctx, clf_dtype t) {
    const int64_t vw = clf__tun(ctx, CLF_T_LINEAR_VW);
    return clf_dtype_block(t) == 1 || vw == 8 || vw == 16;
}

bool clf__linear_packs(const clf_context *ctx, clf_dtype t) {
    return clf__tun(ctx, CLF_T_LINEAR_PACK) && packable(ctx, t);
}

clf_status clf_linear(clf_context *ctx, const clf_tensor *x, const clf_tensor *w,
                      const clf_tensor *bias, clf_activation act, clf_tensor *y) {
    if (!ctx) return CLF_ERROR_INVALID_ARGUMENT;
    clf__clear_error(ctx);
    clf_status st = clf__check_tensor(ctx, x, "x", CLF_F32);
    if (st == CLF_SUCCESS) st = check_weights(ctx, w, "w");
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
    if (act < CLF_ACT_IDENTITY || act > CLF__ACT_LAST)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "unknown activation %d", (int)act);
    const int64_t rows = x->numel / in;
    /* CLBlast multiplies F32 weights only: other types take linear_rows (few rows, or a device
     * without linear.TILED) or linear_tiled. */
    if (rows <= clf__tun(ctx, CLF_T_LINEAR_SKINNY_MAX) ||
        (w->dtype != CLF_F32 && !clf__tun(ctx, CLF_T_LINEAR_TILED)))
        return linear_rows(ctx, x, rows, in, w, bias, act, y, out, 0, out);
    if (w->dtype != CLF_F32) return linear_tiled(ctx, x, rows, in, w, bias, act, y, out, 0, out);
    st = clf_gemm_strided_batched(ctx, CLF_NO_TRANS, CLF_TRANS, rows, out, in, 1.0f, x, 0, in, 0, w,
                                  0, in, 0, 0.0f, y, 0, out, 0, 1);
    if (st != CLF_SUCCESS || (!bias && act == CLF_ACT_IDENTITY)) return st;
    return clf_bias_act(ctx, y, bias, act, y);
}

struct clf_linear_weights {
    clf_context *ctx;
    clf_tensor *w; /* packed panels (3-D) or a copy of w (out, in) */
    int64_t out, in;
};

clf_status clf_linear_prepare(clf_context *ctx, const clf_tensor *w, clf_linear_weights **out) {
    if (!ctx) return CLF_ERROR_INVALID_ARGUMENT;
    clf__clear_error(ctx);
    if (!out) return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "linear weights: out is NULL");
    *out = NULL;
    clf_status st = check_weights(ctx, w, "w");
    if (st != CLF_SUCCESS) return st;
    if (w->ndim != 2) {
        char sw[96];
        return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH, "linear weights: w %s must be (out, in)",
                         clf__shape_str(w, sw, sizeof(sw)));
    }
    clf_linear_weights *lw = calloc(1, sizeof(*lw));
    if (!lw) return clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
    lw->ctx = ctx;
    lw->out = w->shape[0];
    lw->in = w->shape[1];
    if (clf__linear_packs(ctx, w->dtype)) {
        st = clf__linear_pack(ctx, w, &lw->w);
    } else {
        st = clf_tensor_create(ctx, w->dtype, 2, w->shape, &lw->w);
        if (st == CLF_SUCCESS) st = clf_tensor_copy(lw->w, w);
    }
    if (st != CLF_SUCCESS) {
        clf_linear_weights_free(lw);
        return st;
    }
    *out = lw;
    return CLF_SUCCESS;
}

clf_status clf_linear_apply(clf_context *ctx, const clf_tensor *x, const clf_linear_weights *w,
                            const clf_tensor *bias, clf_activation act, clf_tensor *y) {
    if (!ctx) return CLF_ERROR_INVALID_ARGUMENT;
    clf__clear_error(ctx);
    if (!w) return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "linear: prepared weights are NULL");
    if (w->ctx != ctx)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                         "linear: prepared weights belong to another context");
    if (w->w->ndim == 2) return clf_linear(ctx, x, w->w, bias, act, y);
    return clf__linear_packed(ctx, x, w->w, w->out, bias, act, y, NULL);
}

void clf_linear_weights_info(const clf_linear_weights *w, int64_t *out, int64_t *in, int *packed) {
    if (out) *out = w ? w->out : 0;
    if (in) *in = w ? w->in : 0;
    if (packed) *packed = w && w->w->ndim == 3;
}

void clf_linear_weights_free(clf_linear_weights *w) {
    if (!w) return;
    clf_tensor_free(w->w);
    free(w);
}

clf_status clf__pack_panels(clf_context *ctx, cl_mem w, clf_dtype wtype, int64_t off, int64_t os,
                            int64_t ks, int64_t bs, int64_t in, int64_t out, int64_t batch,
                            int gated, cl_mem wp) {
    const int64_t pw = clf__tun(ctx, CLF_T_LINEAR_PK_NV) * clf__tun(ctx, CLF_T_LINEAR_VW);
    const int64_t nb = (out + pw - 1) / pw;
    clf_status st = clf__check_int(ctx, nb * pw, "pack: output size");
    if (st == CLF_SUCCESS) st = clf__check_int(ctx, in, "pack: input size");
    if (st == CLF_SUCCESS) st = clf__check_int(ctx, nb * batch, "pack: panels");
    if (st != CLF_SUCCESS) return st;
    cl_kernel k;
    size_t none[3] = {1, 1, 1}; /* launched with no local size */
    const clf_defines defs = weight_defs(wtype);
    if ((st = clf__kernel_fit(ctx, CLF_K_PACK_PANELS, &defs, 3, none, &k)) != CLF_SUCCESS)
        return st;
    cl_long c_off = off, c_os = os, c_ks = ks, c_bs = bs;
    cl_int c_in = (cl_int)in, c_out = (cl_int)out, c_gated = gated;
    st = clf__set_args(ctx, k, sizeof(cl_mem), &w, sizeof(cl_long), &c_off, sizeof(cl_long), &c_os,
                       sizeof(cl_long), &c_ks, sizeof(cl_long), &c_bs, sizeof(cl_mem), &wp,
                       sizeof(cl_int), &c_in, sizeof(cl_int), &c_out, sizeof(cl_int), &c_gated,
                       (size_t)0);
    const size_t global[3] = {(size_t)pw, (size_t)in, (size_t)(nb * batch)};
    if (st == CLF_SUCCESS) st = clf__launch(ctx, CLF_K_PACK_PANELS, k, 3, global, NULL);
    return st;
}

/* Block panels as F32 panels in the context's scratch (unpack_blocks), when many rows share
 * them (linear.DQ_ROWS) and they fit linear.DQ_MIB: *f the call on them, else unchanged. */
static clf_status unpacked(clf_context *ctx, const clf_packed_call *c, clf_packed_call *f) {
    *f = *c;
    const int64_t dq = clf__tun(ctx, CLF_T_LINEAR_DQ_ROWS);
    if (clf_dtype_block(c->wtype) <= 1 || c->batch != 1 || dq <= 0 || c->rows < dq || c->norm_g)
        return CLF_SUCCESS; /* a fused norm: linear_packed_lq1, _2 */
    const int64_t nv = clf__tun(ctx, CLF_T_LINEAR_PK_NV), pw = nv * clf__tun(ctx, CLF_T_LINEAR_VW);
    const int64_t nb = (c->out + pw - 1) / pw, nblk = c->in / clf_dtype_block(c->wtype);
    const double bytes = 4.0 * (double)(nb * pw) * (double)c->in;
    if (bytes > (double)clf__tun(ctx, CLF_T_LINEAR_DQ_MIB) * 1048576.0 ||
        bytes > (double)ctx->info.max_alloc_bytes)
        return CLF_SUCCESS;
    cl_mem wf;
    cl_kernel k;
    size_t none[3] = {1, 1, 1}; /* launched with no local size */
    const clf_defines defs = weight_defs(c->wtype);
    clf_status st = clf__scratch(ctx, (size_t)bytes, &wf);
    if (st == CLF_SUCCESS) st = clf__kernel_fit(ctx, CLF_K_UNPACK_BLOCKS, &defs, 3, none, &k);
    cl_int in = (cl_int)c->in;
    if (st == CLF_SUCCESS)
        st = clf__set_args(ctx, k, sizeof(cl_mem), &c->wp, sizeof(cl_mem), &wf, sizeof(cl_int), &in,
                           (size_t)0);
    const size_t global[3] = {(size_t)nv, (size_t)nblk, (size_t)nb};
    if (st == CLF_SUCCESS) st = clf__launch(ctx, CLF_K_UNPACK_BLOCKS, k, 3, global, NULL);
    if (st != CLF_SUCCESS) return st;
    f->wp = wf;
    f->wtype = CLF_F32;
    return CLF_SUCCESS;
}

/* Many rows of a block type in integers (linear.QROWS): x quantized once into the context's
 * scratch (quantize_x), then linear_packed_xq. */
static clf_status packed_xq(clf_context *ctx, const clf_packed_call *c) {
    const int64_t groups = c->in / 32,
                  pw = clf__tun(ctx, CLF_T_LINEAR_PK_NV) * clf__tun(ctx, CLF_T_LINEAR_VW);
    const int64_t R = clf__tun(ctx, CLF_T_LINEAR_QR);
    size_t bytes;
    if (!clf__mul_size((size_t)(c->rows * groups), 80, &bytes))
        return clf__fail(ctx, CLF_ERROR_SIZE_LIMIT, "linear: quantized x overflows");
    cl_mem xq;
    cl_kernel k;
    size_t none[3] = {1, 1, 1}, one[3] = {1, 1, 1};
    const clf_defines defs = weight_defs(c->wtype);
    clf_status st = clf__scratch(ctx, bytes, &xq);
    if (st == CLF_SUCCESS) st = clf__kernel_fit(ctx, CLF_K_QUANTIZE_X, &defs, 2, none, &k);
    cl_long x_off = c->x_off, x_rs = c->x_rs, xm_off = c->rows * groups * 16;
    cl_int in = (cl_int)c->in, out = (cl_int)c->out, rows = (cl_int)c->rows;
    if (st == CLF_SUCCESS)
        st = clf__set_args(ctx, k, sizeof(cl_mem), &c->x, sizeof(cl_long), &x_off, sizeof(cl_long),
                           &x_rs, sizeof(cl_int), &in, sizeof(cl_mem), &xq, sizeof(cl_long),
                           &xm_off, (size_t)0);
    const size_t qglobal[2] = {(size_t)groups, (size_t)c->rows};
    if (st == CLF_SUCCESS) st = clf__launch(ctx, CLF_K_QUANTIZE_X, k, 2, qglobal, NULL);
    if (st == CLF_SUCCESS) st = clf__kernel_fit(ctx, CLF_K_LINEAR_PACKED_XQ, &defs, 3, one, &k);
    cl_mem bm = c->has_bias ? c->bias : c->wp;
    cl_long y_off = c->y_off, y_rs = c->y_rs;
    cl_int has_bias = c->has_bias, act = c->act | c->gate << 8;
    if (st == CLF_SUCCESS)
        st = clf__set_args(ctx, k, sizeof(cl_mem), &xq, sizeof(cl_long), &xm_off, sizeof(cl_int),
                           &rows, sizeof(cl_mem), &c->wp, sizeof(cl_mem), &bm, sizeof(cl_int),
                           &has_bias, sizeof(cl_int), &act, sizeof(cl_mem), &c->y, sizeof(cl_long),
                           &y_off, sizeof(cl_long), &y_rs, sizeof(cl_int), &in, sizeof(cl_int),
                           &out, (size_t)0);
    const size_t global[3] = {(size_t)((c->out + pw - 1) / pw), (size_t)((c->rows + R - 1) / R), 1};
    if (st == CLF_SUCCESS) st = clf__launch(ctx, CLF_K_LINEAR_PACKED_XQ, k, 3, global, one);
    return st;
}

/* One or two rows of a block type take linear_packed_lq1, _2 (x in integers, QX 1 or 2) where
 * their quantized x, 80 bytes per 32 per row, fits the device's local memory: *bytes. */
static bool lq_fits(const clf_context *ctx, clf_dtype wtype, int64_t rows, int64_t in,
                    size_t *bytes) {
    const int64_t R = clf__linear_packed_rows(ctx, rows);
    *bytes = (size_t)(R * (in / 32) * 80);
    return clf_dtype_block(wtype) > 1 && R <= 2 && rows <= R &&
           clf__tun(ctx, CLF_T_LINEAR_QX) > 0 && *bytes <= ctx->info.local_mem_bytes;
}

bool clf__linear_fuses(const clf_context *ctx, const clf_tensor *wp, int64_t rows) {
    size_t bytes;
    return clf__tun(ctx, CLF_T_LINEAR_FUSE) && wp && wp->ndim == 3 &&
           lq_fits(ctx, wp->dtype, rows, wp->shape[2], &bytes);
}

clf_status clf__packed_run(clf_context *ctx, const clf_packed_call *call) {
    clf_status st = check_sizes(ctx, call->rows, call->in, call->out);
    if (st == CLF_SUCCESS) st = clf__check_int(ctx, call->batch, "batch");
    if (st != CLF_SUCCESS) return st;
    /* A block type's few rows read x's rows as contiguous (linear.cl, pairs_group): block types
     * come from clf_linear only, whose x is. */
    if (clf_dtype_block(call->wtype) > 1 && call->x_ks != 1)
        return clf__fail(ctx, CLF_ERROR_INTERNAL, "linear: %s panels with x's column stride %lld",
                         clf_dtype_name(call->wtype), (long long)call->x_ks);
    int64_t qrows = clf__tun(ctx, CLF_T_LINEAR_QROWS);
    if (qrows < 0) /* the library's choice: tunables.def */
        qrows =
            clf__tun(ctx, CLF_T_LINEAR_VNNI) && (call->wtype == CLF_Q8_0 || call->wtype == CLF_Q4_0)
                ? 3
                : 0;
    if (clf_dtype_block(call->wtype) > 1 && qrows > 0 && call->rows >= qrows && call->rows > 2 &&
        call->batch == 1 && call->alpha == 1.0f && call->beta == 0.0f)
        return packed_xq(ctx, call);
    clf_packed_call f;
    if ((st = unpacked(ctx, call, &f)) != CLF_SUCCESS) return st;
    const clf_packed_call *c = &f;
    const int64_t pw = clf__tun(ctx, CLF_T_LINEAR_PK_NV) * clf__tun(ctx, CLF_T_LINEAR_VW);
    const int64_t R = clf__linear_packed_rows(ctx, c->rows), panels = (c->out + pw - 1) / pw;
    clf_kernel_id kid = R == clf__tun(ctx, CLF_T_LINEAR_PK_R) ? CLF_K_LINEAR_PACKED
                        : R == 1                              ? CLF_K_LINEAR_PACKED_1
                        : R == 2                              ? CLF_K_LINEAR_PACKED_2
                                                              : CLF_K_LINEAR_PACKED_4;
    size_t local[3] = {1, 1, 1}; /* one work-item per group: reqd_work_group_size(1, 1, 1) */
    /* One or two rows of a block type in integers: x quantized once per work-group of up to
     * linear.LQ_WG panels (linear_packed_lq1, _2), the largest leaving linear.LQ_MIN groups per
     * compute unit, where its quantized x fits local memory (lq_bytes); a fused norm takes them
     * at any size */
    size_t lq_bytes = 0, need;
    if (lq_fits(ctx, c->wtype, c->rows, c->in, &need) && c->batch == 1) {
        const int64_t cu = ctx->info.compute_units ? (int64_t)ctx->info.compute_units : 1,
                      lmin = clf__tun(ctx, CLF_T_LINEAR_LQ_MIN);
        int64_t wg = 1;
        while (wg * 2 <= clf__tun(ctx, CLF_T_LINEAR_LQ_WG) && panels >= wg * 2 * lmin * cu)
            wg *= 2;
        if (wg > 1 || c->norm_g) {
            kid = R == 1 ? CLF_K_LINEAR_PACKED_LQ1 : CLF_K_LINEAR_PACKED_LQ2;
            local[0] = (size_t)wg; /* no reqd_work_group_size: the fit may make it smaller */
            lq_bytes = need;
        }
    }
    if (c->norm_g && !lq_bytes)
        return clf__fail(ctx, CLF_ERROR_INTERNAL, "linear: a fused norm where none fuses");
    cl_kernel k;
    const clf_defines defs = weight_defs(c->wtype);
    if ((st = clf__kernel_fit(ctx, kid, &defs, 3, local, &k)) != CLF_SUCCESS) return st;
    cl_mem bm = c->has_bias ? c->bias : c->wp;
    cl_long x_off = c->x_off, x_rs = c->x_rs, x_ks = c->x_ks, x_bs = c->x_bs, wp_bs = c->wp_bs;
    cl_long y_off = c->y_off, y_rs = c->y_rs, y_bs = c->y_bs;
    /* act and the gated flags (linear.cl, packed_rows) */
    cl_int rows = (cl_int)c->rows, has_bias = c->has_bias, act = c->act | c->gate << 8,
           in = (cl_int)c->in, out = (cl_int)c->out, has_norm = c->norm_g != NULL;
    float alpha = c->alpha, beta = c->beta, eps = c->eps;
    cl_mem ng = has_norm ? c->norm_g : c->wp;
    st = clf__set_args(ctx, k, sizeof(cl_mem), &c->x, sizeof(cl_long), &x_off, sizeof(cl_long),
                       &x_rs, sizeof(cl_long), &x_ks, sizeof(cl_long), &x_bs, sizeof(cl_int), &rows,
                       sizeof(cl_mem), &c->wp, sizeof(cl_long), &wp_bs, sizeof(cl_mem), &bm,
                       sizeof(cl_int), &has_bias, sizeof(cl_int), &act, sizeof(cl_mem), &c->y,
                       sizeof(cl_long), &y_off, sizeof(cl_long), &y_rs, sizeof(cl_long), &y_bs,
                       sizeof(float), &alpha, sizeof(float), &beta, sizeof(cl_int), &in,
                       sizeof(cl_int), &out, lq_bytes ? sizeof(cl_mem) : (size_t)0, &ng,
                       sizeof(cl_int), &has_norm, sizeof(float), &eps, lq_bytes, NULL,
                       (size_t)0); /* linear_packed_lq's arguments, or 0: the list ends */
    const size_t global[3] = {((size_t)panels + local[0] - 1) / local[0] * local[0],
                              (size_t)((c->rows + R - 1) / R), (size_t)c->batch};
    if (st == CLF_SUCCESS) st = clf__launch(ctx, kid, k, 3, global, local);
    return st;
}

/* A block type's panels (pack_blocks): one item per block of a row. */
static clf_status pack_blocks(clf_context *ctx, const clf_tensor *w, int64_t in, int64_t out,
                              int gated, cl_mem wp) {
    const int64_t pw = clf__tun(ctx, CLF_T_LINEAR_PK_NV) * clf__tun(ctx, CLF_T_LINEAR_VW);
    const int64_t nb = (out + pw - 1) / pw, nblk = in / clf_dtype_block(w->dtype);
    clf_status st = clf__check_int(ctx, nb * pw, "pack: output size");
    if (st == CLF_SUCCESS) st = clf__check_int(ctx, in, "pack: input size");
    if (st != CLF_SUCCESS) return st;
    cl_kernel k;
    size_t none[3] = {1, 1, 1}; /* launched with no local size */
    const clf_defines defs = weight_defs(w->dtype);
    if ((st = clf__kernel_fit(ctx, CLF_K_PACK_BLOCKS, &defs, 3, none, &k)) != CLF_SUCCESS)
        return st;
    cl_long w_rs = (cl_long)clf_dtype_row_bytes(w->dtype, in);
    cl_int c_in = (cl_int)in, c_out = (cl_int)out, c_gated = gated;
    st = clf__set_args(ctx, k, sizeof(cl_mem), &w->mem, sizeof(cl_long), &w_rs, sizeof(cl_mem), &wp,
                       sizeof(cl_int), &c_in, sizeof(cl_int), &c_out, sizeof(cl_int), &c_gated,
                       (size_t)0);
    const size_t global[3] = {(size_t)pw, (size_t)nblk, (size_t)nb};
    if (st == CLF_SUCCESS) st = clf__launch(ctx, CLF_K_PACK_BLOCKS, k, 3, global, NULL);
    return st;
}

bool clf__linear_gates(const clf_context *ctx, clf_dtype t, int64_t out) {
    return packable(ctx, t) && clf__tun(ctx, CLF_T_LINEAR_GLU) &&
           clf__tun(ctx, CLF_T_LINEAR_PK_NV) % 2 == 0 && out % 2 == 0 && out > 0;
}

static clf_status linear_pack(clf_context *ctx, const clf_tensor *w, int gated,
                              clf_tensor **packed) {
    *packed = NULL;
    clf_status st = check_weights(ctx, w, "w");
    if (st != CLF_SUCCESS) return st;
    if (w->ndim != 2) return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH, "pack: w must be (out, in)");
    if (!packable(ctx, w->dtype))
        return clf__fail(ctx, CLF_ERROR_UNSUPPORTED,
                         "pack: %s weights are packed into panels at linear.VW 8 or 16 only",
                         clf_dtype_name(w->dtype));
    const int64_t out = w->shape[0], in = w->shape[1];
    const int64_t pw = clf__tun(ctx, CLF_T_LINEAR_PK_NV) * clf__tun(ctx, CLF_T_LINEAR_VW);
    const bool blocks = clf_dtype_block(w->dtype) > 1;
    /* (panels, in, PW); block types (panels, PW, in): rows of whole blocks, the same bytes.
     * Sizes checked by clf__pack_panels / pack_blocks. */
    int64_t shape[3] = {(out + pw - 1) / pw, blocks ? pw : in, blocks ? in : pw};
    clf_tensor *t = NULL;
    if ((st = clf_tensor_create(ctx, w->dtype, 3, shape, &t)) != CLF_SUCCESS) return st;
    if (gated && !clf__linear_gates(ctx, w->dtype, out))
        st = clf__fail(ctx, CLF_ERROR_INTERNAL, "pack: gated panels of %lld rows", (long long)out);
    else
        st = blocks
                 ? pack_blocks(ctx, w, in, out, gated, t->mem)
                 : clf__pack_panels(ctx, w->mem, w->dtype, 0, in, 1, 0, in, out, 1, gated, t->mem);
    if (st != CLF_SUCCESS) {
        clf_tensor_free(t);
        return st;
    }
    *packed = t;
    return CLF_SUCCESS;
}

clf_status clf__linear_pack(clf_context *ctx, const clf_tensor *w, clf_tensor **packed) {
    return linear_pack(ctx, w, 0, packed);
}

clf_status clf__linear_pack_gated(clf_context *ctx, const clf_tensor *w, clf_tensor **packed) {
    return linear_pack(ctx, w, 1, packed);
}

int64_t clf__linear_packed_rows(const clf_context *ctx, int64_t rows) {
    const int64_t pk = clf__tun(ctx, CLF_T_LINEAR_PK_R);
    if (rows >= pk || rows >= 8) return pk;
    int64_t R = 1;
    while (R * 2 <= rows)
        R *= 2;
    return R;
}

/* clf__linear_packed into columns y_off .. y_off + out - 1 of y, rows y_rs apart. */
static clf_status packed_into(clf_context *ctx, const clf_tensor *x, const clf_tensor *wp,
                              int64_t out, const clf_tensor *bias, clf_activation act, int gate,
                              clf_tensor *y, int64_t y_off, int64_t y_rs, const clf_lin_fuse *f) {
    const int64_t in = x->shape[x->ndim - 1], rows = x->numel / in;
    if (f && !clf__linear_fuses(ctx, wp, rows))
        return clf__fail(ctx, CLF_ERROR_INTERNAL, "linear: a fused norm or sum where none fuses");
    if (f && f->g) {
        clf_status st = clf__check_tensor(ctx, f->g, "norm weight", CLF_F32);
        if (st != CLF_SUCCESS) return st;
        if (f->g->numel != in)
            return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH,
                             "linear: a norm weight of %lld for inputs of %lld",
                             (long long)f->g->numel, (long long)in);
    }
    const clf_packed_call c = {.x = x->mem,
                               .x_rs = in,
                               .x_ks = 1,
                               .rows = rows,
                               .wp = wp->mem,
                               .wtype = wp->dtype,
                               .bias = bias ? bias->mem : NULL,
                               .has_bias = bias != NULL,
                               .act = (int)act,
                               .y = y->mem,
                               .y_off = y_off,
                               .y_rs = y_rs,
                               .alpha = 1.0f,
                               .beta = f && f->acc ? 1.0f : 0.0f,
                               .in = in,
                               .out = out,
                               .batch = 1,
                               .norm_g = f && f->g ? f->g->mem : NULL,
                               .eps = f ? f->eps : 0.0f,
                               .gate = gate};
    return clf__packed_run(ctx, &c);
}

static clf_status linear_packed(clf_context *ctx, const clf_tensor *x, const clf_tensor *wp,
                                int64_t out, const clf_tensor *bias, clf_activation act, int gate,
                                clf_tensor *y, const clf_lin_fuse *f) {
    clf_status st = clf__check_tensor(ctx, x, "x", CLF_F32);
    if (st == CLF_SUCCESS) st = clf__check_tensor(ctx, y, "y", CLF_F32);
    if (st == CLF_SUCCESS && bias) st = clf__check_tensor(ctx, bias, "bias", CLF_F32);
    if (st != CLF_SUCCESS) return st;
    if (act < CLF_ACT_IDENTITY || act > CLF__ACT_LAST)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "unknown activation %d", (int)act);
    if (x == y) return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "linear: y must not be x");
    const int64_t in = x->shape[x->ndim - 1];
    const int64_t pw = clf__tun(ctx, CLF_T_LINEAR_PK_NV) * clf__tun(ctx, CLF_T_LINEAR_VW);
    char sx[96], sy[96];
    /* (panels, in, PW); block types (panels, PW, in) */
    const bool blocks = clf_dtype_block(wp->dtype) > 1;
    const int64_t wp_in = wp->ndim == 3 ? wp->shape[blocks ? 2 : 1] : -1;
    const int64_t wp_pw = wp->ndim == 3 ? wp->shape[blocks ? 1 : 2] : -1;
    /* the GLU's y: out / 2 columns */
    bool ok = wp->ndim == 3 && wp_in == in && wp->shape[0] * wp_pw >= out && y->ndim == x->ndim &&
              y->shape[y->ndim - 1] == (gate == 2 ? out / 2 : out) &&
              (!bias || bias->numel == out) && (!gate || clf__linear_gates(ctx, wp->dtype, out));
    for (int i = 0; ok && i < x->ndim - 1; i++)
        ok = x->shape[i] == y->shape[i];
    if (!ok)
        return clf__fail(
            ctx, CLF_ERROR_SHAPE_MISMATCH,
            "linear (packed): x %s and y %s do not fit the packed (%lld, %lld) weights",
            clf__shape_str(x, sx, sizeof(sx)), clf__shape_str(y, sy, sizeof(sy)), (long long)out,
            (long long)in);
    if (wp_pw != pw || !packable(ctx, wp->dtype))
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                         "linear (packed): weights packed in panels of %lld, the tunables in force "
                         "(linear.PK_NV x linear.VW) say %lld: pack them again",
                         (long long)wp_pw, (long long)pw);
    if ((st = check_weights(ctx, wp, "packed weights")) != CLF_SUCCESS) return st;
    return packed_into(ctx, x, wp, out, bias, act, gate, y, 0, gate == 2 ? out / 2 : out, f);
}

clf_status clf__linear_packed(clf_context *ctx, const clf_tensor *x, const clf_tensor *wp,
                              int64_t out, const clf_tensor *bias, clf_activation act,
                              clf_tensor *y, const clf_lin_fuse *f) {
    return linear_packed(ctx, x, wp, out, bias, act, 0, y, f);
}

clf_status clf__linear_packed_gated(clf_context *ctx, const clf_tensor *x, const clf_tensor *wp,
                                    int64_t out, const clf_tensor *bias, clf_activation act,
                                    int glu, clf_tensor *y, const clf_lin_fuse *f) {
    return linear_packed(ctx, x, wp, out, bias, act, glu ? 2 : 1, y, f);
}

clf_status clf__linear_cols(clf_context *ctx, const clf_tensor *x, const clf_tensor *w, int64_t out,
                            const clf_tensor *bias, clf_activation act, clf_tensor *y, int64_t col,
                            const clf_lin_fuse *f) {
    const int64_t in = x->shape[x->ndim - 1], rows = x->numel / in, y_rs = y->shape[y->ndim - 1];
    if (act != CLF_ACT_IDENTITY && act != CLF_ACT_RELU)
        return clf__fail(ctx, CLF_ERROR_INTERNAL, "linear (columns): identity or ReLU only");
    if (col < 0 || col + out > y_rs || y->numel / y_rs != rows)
        return clf__fail(ctx, CLF_ERROR_INTERNAL, "linear (columns): outside y");
    if (w->ndim == 3) return packed_into(ctx, x, w, out, bias, act, 0, y, col, y_rs, f);
    if (f)
        return clf__fail(ctx, CLF_ERROR_INTERNAL, "linear: a fused norm or sum where none fuses");
    if (rows <= clf__tun(ctx, CLF_T_LINEAR_SKINNY_MAX) || !clf__tun(ctx, CLF_T_LINEAR_TILED))
        return linear_rows(ctx, x, rows, in, w, bias, act, y, out, col, y_rs);
    return linear_tiled(ctx, x, rows, in, w, bias, act, y, out, col, y_rs);
}
