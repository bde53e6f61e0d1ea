/*
 * posenc.c — host side of kernels/posenc.cl: sinusoidal positional encoding and the embedding
 * gather (with scale and optional positional encoding) through one kernel.
 */
#include "../internal.h"

#include <math.h>
#include <stdlib.h>

#define CLF_MAX_POSITION (1LL << 24) /* positions are exact in float below this */

/* Launches embed_posenc over rows of d floats. src is the table (ids != NULL) or x. */
static clf_status launch(clf_context *ctx, cl_mem src, const clf_tensor *ids, cl_mem y,
                         int64_t rows, int64_t d, float scale, int add_pe, int64_t seq_len,
                         int64_t pos_offset) {
    cl_kernel k;
    size_t wg = (size_t)clf__tun(ctx, CLF_T_POSENC_WG);
    clf_status st = clf__kernel_fit(ctx, CLF_K_POSENC, NULL, 1, &wg, &k);
    if (st != CLF_SUCCESS) return st;
    const int64_t vw = clf__tun(ctx, CLF_T_POSENC_VW), pr = clf__tun(ctx, CLF_T_POSENC_PR);
    const int64_t cpr = ((d + 1) / 2 + vw - 1) / vw;                   /* chunks per row */
    const int64_t blocks = rows / seq_len * ((seq_len + pr - 1) / pr); /* row blocks */
    size_t items;
    if (!clf__mul_size((size_t)blocks, (size_t)cpr, &items) || items > SIZE_MAX - wg)
        return clf__fail(ctx, CLF_ERROR_SIZE_LIMIT, "posenc: too many work-items");
    cl_mem idm = ids ? ids->mem : src;
    cl_int use_ids = ids ? 1 : 0, c_d = (cl_int)d, c_pe = add_pe, c_seq = (cl_int)seq_len;
    cl_long c_rows = rows, c_off = pos_offset;
    float freq = (float)(-log2(10000.0) * 2.0 / (double)d);
    st = clf__set_args(ctx, k, sizeof(cl_mem), &src, sizeof(cl_mem), &idm, sizeof(cl_int), &use_ids,
                       sizeof(cl_mem), &y, sizeof(cl_long), &c_rows, sizeof(cl_int), &c_d,
                       sizeof(float), &scale, sizeof(cl_int), &c_pe, sizeof(cl_int), &c_seq,
                       sizeof(cl_long), &c_off, sizeof(float), &freq, (size_t)0);
    if (st != CLF_SUCCESS) return st;
    size_t global = clf__round_up(items, wg);
    return clf__launch(ctx, CLF_K_POSENC, k, 1, &global, &wg);
}

static clf_status check_positions(clf_context *ctx, int64_t pos_offset, int64_t seq_len) {
    if (pos_offset < 0 || pos_offset > CLF_MAX_POSITION - seq_len)
        return clf__fail(ctx, CLF_ERROR_OUT_OF_RANGE,
                         "positions %lld .. %lld: must lie in 0 .. 2^24-1", (long long)pos_offset,
                         (long long)(pos_offset + seq_len - 1));
    return CLF_SUCCESS;
}

clf_status clf_posenc_add(clf_context *ctx, const clf_tensor *x, int64_t pos_offset,
                          clf_tensor *out) {
    if (!ctx) return CLF_ERROR_INVALID_ARGUMENT;
    clf__clear_error(ctx);
    clf_status st = clf__check_tensor(ctx, x, "x", CLF_F32);
    if (st == CLF_SUCCESS) st = clf__check_out(ctx, x, out);
    if (st != CLF_SUCCESS) return st;
    if (x->ndim != 2 && x->ndim != 3) {
        char a[96];
        return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH, "posenc: x %s must be (N, d) or (B, N, d)",
                         clf__shape_str(x, a, sizeof(a)));
    }
    const int64_t d = x->shape[x->ndim - 1], seq = x->shape[x->ndim - 2];
    if ((st = clf__check_int(ctx, d, "posenc d")) != CLF_SUCCESS) return st;
    if ((st = check_positions(ctx, pos_offset, seq)) != CLF_SUCCESS) return st;
    return launch(ctx, x->mem, NULL, out->mem, x->numel / d, d, 1.0f, 1, seq, pos_offset);
}

/* out (rows, d) = table[ids] * scale for a table of a stored type (kernels/linear.cl's get_rows,
 * its section of kernels/dtypes.cl). */
static clf_status get_rows(clf_context *ctx, const clf_tensor *table, const clf_tensor *ids,
                           clf_tensor *out, int64_t rows, int64_t d, float scale) {
    clf_defines defs = {0, {NULL}, {0}};
    clf__dtype_define(&defs, table->dtype);
    cl_kernel k;
    size_t local[2] = {1, 1};
    clf_status st = clf__kernel_fit(ctx, CLF_K_GET_ROWS, &defs, 2, local, &k);
    if (st != CLF_SUCCESS) return st;
    cl_long t_rs = (cl_long)clf_dtype_row_bytes(table->dtype, d);
    cl_int c_d = (cl_int)d;
    st = clf__set_args(ctx, k, sizeof(cl_mem), &table->mem, sizeof(cl_long), &t_rs, sizeof(cl_mem),
                       &ids->mem, sizeof(cl_mem), &out->mem, sizeof(cl_int), &c_d, sizeof(float),
                       &scale, (size_t)0);
    if (st != CLF_SUCCESS) return st;
    const size_t global[2] = {(size_t)((d + 15) / 16), (size_t)rows};
    return clf__launch(ctx, CLF_K_GET_ROWS, k, 2, global, NULL); /* the driver picks */
}

clf_status clf_embedding(clf_context *ctx, const clf_tensor *ids, const clf_tensor *table,
                         float scale, int add_posenc, int64_t pos_offset, clf_tensor *out) {
    return clf__embedding(ctx, ids, table, scale, add_posenc, pos_offset, out, 0);
}

clf_status clf__embedding(clf_context *ctx, const clf_tensor *ids, const clf_tensor *table,
                          float scale, int add_posenc, int64_t pos_offset, clf_tensor *out,
                          int in_range) {
    if (!ctx) return CLF_ERROR_INVALID_ARGUMENT;
    clf__clear_error(ctx);
    clf_status st = clf__check_tensor(ctx, ids, "ids", CLF_I32);
    if (st == CLF_SUCCESS)
        st = clf__check_tensor(ctx, table, "table", table ? table->dtype : CLF_F32);
    if (st == CLF_SUCCESS && (table->dtype == CLF_I32))
        st = clf__fail(ctx, CLF_ERROR_UNSUPPORTED, "embedding: an I32 table");
    if (st == CLF_SUCCESS) st = clf__check_tensor(ctx, out, "out", CLF_F32);
    if (st != CLF_SUCCESS) return st;
    char a[96], b[96], c[96];
    if (table->ndim != 2 || ids->ndim > 2)
        return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH,
                         "embedding: table %s must be (V, d) and ids %s (N) or (B, N)",
                         clf__shape_str(table, a, sizeof(a)), clf__shape_str(ids, b, sizeof(b)));
    const int64_t vocab = table->shape[0], d = table->shape[1];
    bool ok = out->ndim == ids->ndim + 1 && out->shape[out->ndim - 1] == d;
    for (int i = 0; ok && i < ids->ndim; i++)
        ok = out->shape[i] == ids->shape[i];
    if (!ok)
        return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH,
                         "embedding: out %s must be ids' shape %s plus d = %lld (table %s)",
                         clf__shape_str(out, a, sizeof(a)), clf__shape_str(ids, b, sizeof(b)),
                         (long long)d, clf__shape_str(table, c, sizeof(c)));
    if (!isfinite(scale))
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "embedding: scale is not finite");
    const int64_t seq = ids->shape[ids->ndim - 1];
    if ((st = clf__check_int(ctx, d, "embedding d")) != CLF_SUCCESS) return st;
    if ((st = clf__check_int(ctx, vocab, "vocabulary size")) != CLF_SUCCESS) return st;
    if (add_posenc && (st = check_positions(ctx, pos_offset, seq)) != CLF_SUCCESS) return st;

    /* Check every id before anything is written (a read of ids, a round trip to the device,
     * which a caller that wrote them from checked host values skips: in_range) */
    if (!in_range) {
        int32_t *host = malloc(ids->bytes);
        if (!host) return clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
        st = clf_tensor_read(ids, host, ids->bytes);
        for (int64_t i = 0; st == CLF_SUCCESS && i < ids->numel; i++) {
            if (host[i] < 0 || host[i] >= vocab)
                st = clf__fail(ctx, CLF_ERROR_OUT_OF_RANGE,
                               "embedding: ids[%lld] = %d is outside the vocabulary 0 .. %lld",
                               (long long)i, (int)host[i], (long long)(vocab - 1));
        }
        free(host);
        if (st != CLF_SUCCESS) return st;
    }
    if (table->dtype == CLF_F32)
        return launch(ctx, table->mem, ids, out->mem, ids->numel, d, scale, add_posenc ? 1 : 0, seq,
                      pos_offset);
    st = get_rows(ctx, table, ids, out, ids->numel, d, scale);
    if (st == CLF_SUCCESS && add_posenc)
        st = launch(ctx, out->mem, NULL, out->mem, ids->numel, d, 1.0f, 1, seq, pos_offset);
    return st;
}
