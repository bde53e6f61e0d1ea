/*
 * attention.h — what attention.c (checks, the private-memory tiled kernels, the naive path) and
 * attention_local.c (the local-memory kernels for GPUs) share: the checked shape of a call.
 */
#ifndef CLF_OPS_ATTENTION_H
#define CLF_OPS_ATTENTION_H

#include "../internal.h"

/* Shapes and masks of one clf_attention call, all checked before anything is queued. */
typedef struct att_shape {
    int64_t batch, nq, nk, heads, kv_heads, dh, wq, wk, wv, kmax;
    float scale;
    int lens_mode, window;
    clf_dtype kv_dtype; /* K and V: F32 or F16 (the kernels' DT) */
    cl_mem lens;
} att_shape;

/* The local-memory path (attention.LOCAL_KV = 1): attention_flash for prefill, the split-key
 * attention_flash_split (then attention_combine) for few queries or a loop-budget device. */
clf_status clf__attention_local(clf_context *ctx, const clf_tensor *q, const clf_tensor *k,
                                const clf_tensor *v, clf_tensor *out, const clf_attention_params *d,
                                const att_shape *s);

/* attention_combine (attention.cl, program variant defs): merges the splits' partials part
 * (B * H * nq, splits, DH + 2) into out, one work-item per output vector of vw floats. */
clf_status clf__attention_combine(clf_context *ctx, const clf_defines *defs, cl_mem part,
                                  clf_tensor *out, const att_shape *s, int64_t splits, int64_t vw);

#endif
