/*
 * kv_cache.c — the KV cache of a decoder layer: the projected keys and values of every decoded
 * position, (B, max_len, 2d), appended to by each step with one rectangular copy.
 */
#include "models.h"

clf_status clf__kv_cache_init(clf_context *ctx, clf_kv_cache *c, int64_t batch, int64_t max_len,
                              int64_t d) {
    const int64_t shape[3] = {batch, max_len, 2 * d};
    clf__kv_cache_free(c);
    CLF_TRY(clf_tensor_create(ctx, CLF_F32, 3, shape, &c->kv));
    c->max_len = max_len;
    return CLF_SUCCESS;
}

void clf__kv_cache_free(clf_kv_cache *c) {
    clf_tensor_free(c->kv);
    c->kv = NULL;
    c->max_len = 0;
}

/* The F32 -> F16 form of clf__copy_rows. */
static clf_status rows_to_half(clf_context *ctx, const clf_rows_at *src, const clf_rows_at *dst,
                               size_t width, size_t rows, size_t b0, size_t nb) {
    cl_kernel k;
    CLF_TRY(clf__kernel(ctx, CLF_K_ROWS_TO_HALF, &k));
    cl_long s_row = (cl_long)src->width, s_batch = (cl_long)(src->width * src->rows);
    cl_long d_row = (cl_long)dst->width, d_batch = (cl_long)(dst->width * dst->rows);
    cl_long s_off = (cl_long)b0 * s_batch + (cl_long)(src->row * src->width + src->col);
    cl_long d_off = (cl_long)b0 * d_batch + (cl_long)(dst->row * dst->width + dst->col);
    cl_int w = (cl_int)width;
    CLF_TRY(clf__set_args(ctx, k, sizeof(cl_mem), &src->t->mem, sizeof(cl_long), &s_off,
                          sizeof(cl_long), &s_row, sizeof(cl_long), &s_batch, sizeof(cl_mem),
                          &dst->t->mem, sizeof(cl_long), &d_off, sizeof(cl_long), &d_row,
                          sizeof(cl_long), &d_batch, sizeof(cl_int), &w, (size_t)0));
    const size_t global[3] = {width, rows, nb};
    return clf__launch(ctx, CLF_K_ROWS_TO_HALF, k, 3, global, NULL);
}

clf_status clf__copy_rows(clf_context *ctx, const clf_rows_at *src, const clf_rows_at *dst,
                          size_t width, size_t rows, size_t b0, size_t nb) {
    if (dst->t->dtype == CLF_F16) return rows_to_half(ctx, src, dst, width, rows, b0, nb);
    const size_t f = sizeof(float);
    const size_t so[3] = {src->col * f, src->row, b0}, dor[3] = {dst->col * f, dst->row, b0};
    const size_t region[3] = {width * f, rows, nb};
    cl_event ev = NULL;
    cl_int err = clf__fault(ctx, CLF_FAULT_TRANSFER)
                     ? CL_OUT_OF_RESOURCES
                     : clEnqueueCopyBufferRect(ctx->queue, src->t->mem, dst->t->mem, so, dor,
                                               region, src->width * f, src->width * src->rows * f,
                                               dst->width * f, dst->width * dst->rows * f, 0, NULL,
                                               ctx->profiling ? &ev : NULL);
    if (err != CL_SUCCESS) return clf__cl_fail(ctx, err, "clEnqueueCopyBufferRect (rows)");
    ctx->launches++;
    return ev ? clf__profile_event(ctx, ev, CLF_PROF_COPY) : CLF_SUCCESS;
}

clf_status clf__kv_cache_append(clf_context *ctx, clf_kv_cache *c, const clf_tensor *qkv,
                                int64_t pos) {
    const size_t B = (size_t)qkv->shape[0], T = (size_t)qkv->shape[1];
    const size_t d = (size_t)qkv->shape[2] / 3, f = sizeof(float);
    const size_t src_origin[3] = {d * f, 0, 0}, dst_origin[3] = {0, (size_t)pos, 0};
    const size_t region[3] = {2 * d * f, T, B};
    cl_event ev = NULL;
    cl_int err = clf__fault(ctx, CLF_FAULT_TRANSFER)
                     ? CL_OUT_OF_RESOURCES
                     : clEnqueueCopyBufferRect(ctx->queue, qkv->mem, c->kv->mem, src_origin,
                                               dst_origin, region, 3 * d * f, T * 3 * d * f,
                                               2 * d * f, (size_t)c->max_len * 2 * d * f, 0, NULL,
                                               ctx->profiling ? &ev : NULL);
    if (err != CL_SUCCESS) return clf__cl_fail(ctx, err, "clEnqueueCopyBufferRect (KV cache)");
    ctx->launches++;
    return ev ? clf__profile_event(ctx, ev, CLF_PROF_COPY) : CLF_SUCCESS;
}
