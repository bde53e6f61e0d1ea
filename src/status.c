/*
 * status.c — status codes: clf_strerror(), OpenCL error names, and the per-context detail
 * message that every failing call leaves behind, and CLBlast's statuses mapped onto them.
 */
#include "internal.h"

#include <clblast_c.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *clf__cl_error_name(cl_int err) {
    switch (err) {
#define CLF_CL_ERR(x)                                                                              \
    case x:                                                                                        \
        return #x;
        CLF_CL_ERR(CL_DEVICE_NOT_FOUND)
        CLF_CL_ERR(CL_DEVICE_NOT_AVAILABLE)
        CLF_CL_ERR(CL_COMPILER_NOT_AVAILABLE)
        CLF_CL_ERR(CL_MEM_OBJECT_ALLOCATION_FAILURE)
        CLF_CL_ERR(CL_OUT_OF_RESOURCES)
        CLF_CL_ERR(CL_OUT_OF_HOST_MEMORY)
        CLF_CL_ERR(CL_PROFILING_INFO_NOT_AVAILABLE)
        CLF_CL_ERR(CL_MEM_COPY_OVERLAP)
        CLF_CL_ERR(CL_IMAGE_FORMAT_MISMATCH)
        CLF_CL_ERR(CL_IMAGE_FORMAT_NOT_SUPPORTED)
        CLF_CL_ERR(CL_BUILD_PROGRAM_FAILURE)
        CLF_CL_ERR(CL_MAP_FAILURE)
        CLF_CL_ERR(CL_MISALIGNED_SUB_BUFFER_OFFSET)
        CLF_CL_ERR(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
        CLF_CL_ERR(CL_COMPILE_PROGRAM_FAILURE)
        CLF_CL_ERR(CL_LINKER_NOT_AVAILABLE)
        CLF_CL_ERR(CL_LINK_PROGRAM_FAILURE)
        CLF_CL_ERR(CL_DEVICE_PARTITION_FAILED)
        CLF_CL_ERR(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)
        CLF_CL_ERR(CL_INVALID_VALUE)
        CLF_CL_ERR(CL_INVALID_DEVICE_TYPE)
        CLF_CL_ERR(CL_INVALID_PLATFORM)
        CLF_CL_ERR(CL_INVALID_DEVICE)
        CLF_CL_ERR(CL_INVALID_CONTEXT)
        CLF_CL_ERR(CL_INVALID_QUEUE_PROPERTIES)
        CLF_CL_ERR(CL_INVALID_COMMAND_QUEUE)
        CLF_CL_ERR(CL_INVALID_HOST_PTR)
        CLF_CL_ERR(CL_INVALID_MEM_OBJECT)
        CLF_CL_ERR(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)
        CLF_CL_ERR(CL_INVALID_IMAGE_SIZE)
        CLF_CL_ERR(CL_INVALID_SAMPLER)
        CLF_CL_ERR(CL_INVALID_BINARY)
        CLF_CL_ERR(CL_INVALID_BUILD_OPTIONS)
        CLF_CL_ERR(CL_INVALID_PROGRAM)
        CLF_CL_ERR(CL_INVALID_PROGRAM_EXECUTABLE)
        CLF_CL_ERR(CL_INVALID_KERNEL_NAME)
        CLF_CL_ERR(CL_INVALID_KERNEL_DEFINITION)
        CLF_CL_ERR(CL_INVALID_KERNEL)
        CLF_CL_ERR(CL_INVALID_ARG_INDEX)
        CLF_CL_ERR(CL_INVALID_ARG_VALUE)
        CLF_CL_ERR(CL_INVALID_ARG_SIZE)
        CLF_CL_ERR(CL_INVALID_KERNEL_ARGS)
        CLF_CL_ERR(CL_INVALID_WORK_DIMENSION)
        CLF_CL_ERR(CL_INVALID_WORK_GROUP_SIZE)
        CLF_CL_ERR(CL_INVALID_WORK_ITEM_SIZE)
        CLF_CL_ERR(CL_INVALID_GLOBAL_OFFSET)
        CLF_CL_ERR(CL_INVALID_EVENT_WAIT_LIST)
        CLF_CL_ERR(CL_INVALID_EVENT)
        CLF_CL_ERR(CL_INVALID_OPERATION)
        CLF_CL_ERR(CL_INVALID_GL_OBJECT)
        CLF_CL_ERR(CL_INVALID_BUFFER_SIZE)
        CLF_CL_ERR(CL_INVALID_MIP_LEVEL)
        CLF_CL_ERR(CL_INVALID_GLOBAL_WORK_SIZE)
        CLF_CL_ERR(CL_INVALID_PROPERTY)
        CLF_CL_ERR(CL_INVALID_IMAGE_DESCRIPTOR)
        CLF_CL_ERR(CL_INVALID_COMPILER_OPTIONS)
        CLF_CL_ERR(CL_INVALID_LINKER_OPTIONS)
        CLF_CL_ERR(CL_INVALID_DEVICE_PARTITION_COUNT)
#undef CLF_CL_ERR
    case -1001:
        return "CL_PLATFORM_NOT_FOUND_KHR";
    default:
        return NULL;
    }
}

const char *clf_strerror(clf_status status) {
    switch (status) {
    case CLF_SUCCESS:
        return "success";
    case CLF_ERROR_INVALID_ARGUMENT:
        return "invalid argument";
    case CLF_ERROR_SHAPE_MISMATCH:
        return "tensor shapes do not match";
    case CLF_ERROR_UNSUPPORTED:
        return "not supported";
    case CLF_ERROR_OUT_OF_MEMORY:
        return "out of host memory";
    case CLF_ERROR_BUILD_FAILED:
        return "kernel build failed";
    case CLF_ERROR_IO:
        return "file input/output error";
    case CLF_ERROR_BAD_FORMAT:
        return "malformed file";
    case CLF_ERROR_NO_DEVICE:
        return "no matching OpenCL device";
    case CLF_ERROR_SIZE_LIMIT:
        return "size over a device limit";
    case CLF_ERROR_CLBLAST:
        return "CLBlast error";
    case CLF_ERROR_OUT_OF_RANGE:
        return "index out of range";
    case CLF_ERROR_INTERNAL:
        return "internal error in clformer";
    case CLF_ERROR_NOT_FOUND:
        return "not found";
    default:
        break;
    }
    if (status < 0 && status > -1000) {
        const char *name = clf__cl_error_name(status);
        return name ? name : "OpenCL error";
    }
    return "unknown status";
}

clf_status clf__fail(clf_context *ctx, clf_status status, const char *fmt, ...) {
    if (!ctx) return status;
    va_list ap;
    va_start(ap, fmt);
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n >= 0) {
        char *msg = malloc((size_t)n + 1);
        if (msg) {
            vsnprintf(msg, (size_t)n + 1, fmt, ap2);
            free(ctx->error);
            ctx->error = msg;
        }
    }
    va_end(ap2);
    return status;
}

void clf__msg(char *buf, size_t size, const char *fmt, ...) {
    if (!buf || size == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, size, fmt, ap);
    va_end(ap);
}

clf_status clf__cl_fail(clf_context *ctx, cl_int err, const char *what) {
    const char *name = clf__cl_error_name(err);
    if (name) return clf__fail(ctx, err, "%s failed: %s (%d)", what, name, (int)err);
    return clf__fail(ctx, err, "%s failed: OpenCL error %d", what, (int)err);
}

void clf__warn(clf_context *ctx, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char msg[1024];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    char *w = strdup(msg);
    if (!w) return; /* out of memory: the warning is lost, the call carries on */
    free(ctx->warning);
    ctx->warning = w;
}

const char *clf_context_last_warning(const clf_context *ctx) {
    return ctx && ctx->warning ? ctx->warning : "";
}

const char *clf_context_last_error(const clf_context *ctx) {
    if (!ctx || !ctx->error) return "";
    return ctx->error;
}

/* ---------------------------------------------------------------- CLBlast statuses */

static const char *clblast_name(CLBlastStatusCode s) {
    switch (s) {
    case CLBlastNotImplemented:
        return "not implemented";
    case CLBlastInvalidMatrixA:
    case CLBlastInvalidMatrixB:
    case CLBlastInvalidMatrixC:
        return "invalid matrix buffer";
    case CLBlastInvalidDimension:
        return "invalid dimension";
    case CLBlastInvalidLeadDimA:
    case CLBlastInvalidLeadDimB:
    case CLBlastInvalidLeadDimC:
        return "invalid leading dimension";
    case CLBlastInsufficientMemoryA:
    case CLBlastInsufficientMemoryB:
    case CLBlastInsufficientMemoryC:
        return "buffer too small";
    case CLBlastInvalidBatchCount:
        return "invalid batch count";
    case CLBlastInvalidOverrideKernel:
        return "invalid override kernel";
    case CLBlastMissingOverrideParameter:
        return "missing override parameter";
    case CLBlastInvalidLocalMemUsage:
        return "not enough local memory for these parameters";
    case CLBlastDatabaseError:
        return "no database entry";
    default:
        return "error";
    }
}

clf_status clf__clblast_fail(clf_context *ctx, int code, const char *what) {
    if (code > -1000) /* an OpenCL error, passed through with its own value */
        return clf__fail(ctx, code, "%s: CLBlast reported %s (%d)", what, clf_strerror(code), code);
    return clf__fail(ctx, CLF_ERROR_CLBLAST, "%s: CLBlast %s (%d)", what,
                     clblast_name((CLBlastStatusCode)code), code);
}

clf_status clf__relay_error(clf_context *dst, const clf_context *src, int stage, clf_status st) {
    if (st == CLF_SUCCESS || !src || src == dst) return st;
    const char *msg = clf_context_last_error(src);
    return clf__fail(dst, st, "stage %d (%s): %s", stage, src->info.name,
                     msg[0] ? msg : clf_strerror(st));
}
