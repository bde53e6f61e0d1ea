/*
 * clformer — Transformer inference on any OpenCL device.
 *
 * Usage (errors elided; every call returns a clf_status):
 *
 *     clf_context_params p = clf_context_default_params();
 *     p.device_spec = "cpu";                  // or NULL: $CLF_DEVICE, else first GPU, else CPU
 *     clf_context *ctx;
 *     if (clf_context_create(&ctx, &p) != CLF_SUCCESS) { ... }
 *
 *     int64_t shape[2] = {4, 1000};
 *     clf_tensor *x;
 *     clf_tensor_create(ctx, CLF_F32, 2, shape, &x);
 *     clf_tensor_write(x, host_data, 4 * 1000 * sizeof(float));
 *     clf_softmax(ctx, x, x, NULL);            // in place, no mask
 *     clf_tensor_read(x, host_data, 4 * 1000 * sizeof(float));
 *     clf_tensor_free(x);
 *     clf_context_free(ctx);
 *
 * Conventions
 * - Every call returns clf_status. CLF_SUCCESS is 0, OpenCL errors pass through with their own
 *   (negative, > -1000) values, library errors are CLF_ERROR_* (<= -1000). After an error,
 *   clf_context_last_error() says what went wrong (argument, shapes, a kernel's build log).
 * - A call that fails on bad input changes nothing: validation happens before any work is queued.
 * - The library never prints, aborts or exits. A context (and the tensors, models and states
 *   made from it) must be used by one thread at a time; use one context per thread for
 *   concurrency. Contexts may share an OpenCL device.
 * - Process-wide state: exactly one. CLBlast keeps GEMM parameter overrides per device for the
 *   whole process; clformer keeps each context's own parameters and runs every CLBlast call under
 *   one process-wide lock that re-applies them when another context changed them, so a tune in
 *   one thread never changes the GEMMs of another. (Parameters set on the device by the
 *   application itself, through CLBlastOverrideParameters, are overwritten at the next call of a
 *   context with its own, and are used by contexts without any.)
 * - Tensors are row-major, up to CLF_MAX_DIMS dimensions, shapes are int64_t.
 * - Ops run asynchronously on the context's in-order queue; clf_tensor_read() or
 *   clf_context_finish() waits for them.
 */
#ifndef CLFORMER_CLFORMER_H
#define CLFORMER_CLFORMER_H

#include "core.h"   /* status codes, devices, context, tensors */
#include "ops.h"    /* softmax, LayerNorm, embeddings, GEMM and linear layers, attention */
#include "io.h"     /* safetensors, WordPiece tokenizer */
#include "models.h" /* Transformer encoders and decoders, sentence embeddings */

#endif /* CLFORMER_CLFORMER_H */
