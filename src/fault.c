/*
 * fault.c — the test-only fault-injection switch (see clf_fault_kind in internal.h): the call of
 * a kind numbered `after` fails as the OpenCL driver would fail it. It sits below everything that
 * allocates, builds, enqueues or transfers, and reads only the context's two counters.
 */
#include "internal.h"

void clf__fault_set(clf_context *ctx, clf_fault_kind kind, int64_t after) {
    ctx->fault_at[kind] = after;
    ctx->fault_seen[kind] = 0;
}

bool clf__fault(clf_context *ctx, clf_fault_kind kind) {
    if (ctx->fault_at[kind] < 0) return false;
    return ctx->fault_seen[kind]++ == ctx->fault_at[kind];
}
