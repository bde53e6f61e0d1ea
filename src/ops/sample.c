/*
 * sample.c — host side of kernels/sample.cl: one token per row of logits, picked on the device.
 */
#include "../internal.h"

#include <math.h>

clf_status clf_sample(clf_context *ctx, const clf_tensor *logits, const clf_sampling_params *p,
                      const clf_tensor *u, clf_tensor *seen, clf_tensor *out) {
    if (!ctx) return CLF_ERROR_INVALID_ARGUMENT;
    clf__clear_error(ctx);
    clf_status st = clf__check_tensor(ctx, logits, "logits", CLF_F32);
    if (st == CLF_SUCCESS) st = clf__check_tensor(ctx, u, "u", CLF_F32);
    if (st == CLF_SUCCESS) st = clf__check_tensor(ctx, out, "out", CLF_I32);
    if (st == CLF_SUCCESS && seen) st = clf__check_tensor(ctx, seen, "seen", CLF_I32);
    if (st != CLF_SUCCESS) return st;
    if (!p) return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "sample: params is NULL");
    char a[96], b[96];
    if (logits->ndim != 2 || u->numel != logits->shape[0] || out->numel != logits->shape[0] ||
        (seen && !clf__same_shape(seen, logits)))
        return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH,
                         "sample: logits %s must be (B, V), u and out (B), seen (B, V) (out %s)",
                         clf__shape_str(logits, a, sizeof(a)), clf__shape_str(out, b, sizeof(b)));
    if (!(p->temperature >= 0.0f) || !isfinite(p->temperature) || p->top_k < 0 ||
        !(p->top_p > 0.0f) || p->top_p > 1.0f || !(p->repetition_penalty > 0.0f) ||
        !isfinite(p->repetition_penalty))
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                         "sample: temperature >= 0, top_k >= 0, top_p in (0, 1] and "
                         "repetition_penalty > 0 are required");
    const int64_t V = logits->shape[1], rows = logits->shape[0];
    if ((st = clf__check_int(ctx, V, "sample vocabulary")) != CLF_SUCCESS) return st;
    cl_kernel k;
    size_t wg = (size_t)clf__tun(ctx, CLF_T_SAMPLE_WG);
    if ((st = clf__kernel_fit(ctx, CLF_K_SAMPLE, NULL, 1, &wg, &k)) != CLF_SUCCESS) return st;
    const int greedy = p->temperature <= 0.0f; /* the first maximum: top-k 1, drawn at u = 0 */
    const int64_t top_k = greedy ? (V > 1 ? 1 : 0) : p->top_k < V ? p->top_k : 0;
    const float top_p = greedy ? 1.0f : p->top_p;
    /* loop trips of a work-item: its chunk once per pass (max, mass, draw, pick; 32 per bisection,
     * none for top-k 1) */
    const int64_t chunk = (V + (int64_t)wg - 1) / (int64_t)wg;
    const int64_t passes = 4 + (top_k > 1 ? 33 : 0) + (top_p < 1 ? 33 : 0);
    if ((st = clf__check_loops(ctx, CLF_K_SAMPLE, chunk * passes + 2 * (int64_t)wg)) != CLF_SUCCESS)
        return st;
    cl_mem sm = seen ? seen->mem : out->mem;
    cl_int has_seen = seen ? 1 : 0, c_v = (cl_int)V, c_k = (cl_int)top_k;
    float temp = p->temperature, pen = p->repetition_penalty;
    st = clf__set_args(ctx, k, sizeof(cl_mem), &logits->mem, sizeof(cl_mem), &sm, sizeof(cl_int),
                       &has_seen, sizeof(cl_mem), &u->mem, sizeof(cl_mem), &out->mem,
                       sizeof(cl_int), &c_v, sizeof(float), &temp, sizeof(cl_int), &c_k,
                       sizeof(float), &top_p, sizeof(float), &pen, (size_t)0);
    if (st != CLF_SUCCESS) return st;
    size_t global;
    if (!clf__mul_size((size_t)rows, wg, &global))
        return clf__fail(ctx, CLF_ERROR_SIZE_LIMIT, "sample: too many rows");
    return clf__launch(ctx, CLF_K_SAMPLE, k, 1, &global, &wg);
}
