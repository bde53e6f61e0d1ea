/*
 * tensor.c — clf_tensor: a device buffer with a dtype and a row-major shape of up to
 * CLF_MAX_DIMS dims. Every size is checked for overflow and against the device's limits.
 */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The type's name in messages. */
static const char *dtype_name(clf_dtype d) {
    const char *n = clf_dtype_name(d);
    return n ? n : "?";
}

const char *clf__shape_str(const clf_tensor *t, char *buf, size_t size) {
    size_t off = 0;
    int w = snprintf(buf, size, "[");
    off = w > 0 ? (size_t)w : 0;
    for (int i = 0; i < t->ndim && off < size; i++) {
        w = snprintf(buf + off, size - off, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
        if (w < 0) break;
        off += (size_t)w;
    }
    if (off < size) snprintf(buf + off, size - off, "]");
    return buf;
}

bool clf__same_shape(const clf_tensor *a, const clf_tensor *b) {
    if (a->ndim != b->ndim) return false;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i]) return false;
    return true;
}

clf_status clf__check_tensor(clf_context *ctx, const clf_tensor *t, const char *what,
                             clf_dtype dtype) {
    if (!t) return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "%s is NULL", what);
    if (t->ctx != ctx)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "%s belongs to another context", what);
    if (t->dtype != dtype)
        return clf__fail(ctx, CLF_ERROR_UNSUPPORTED, "%s has dtype %s, expected %s", what,
                         dtype_name(t->dtype), dtype_name(dtype));
    return CLF_SUCCESS;
}

/* Validates a shape and computes its element count and byte size. */
static clf_status shape_size(clf_context *ctx, clf_dtype dtype, int ndim, const int64_t *shape,
                             int64_t *numel, size_t *bytes) {
    if (ndim < 1 || ndim > CLF_MAX_DIMS)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "tensor rank %d: must be 1..%d", ndim,
                         CLF_MAX_DIMS);
    if (!shape) return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "shape is NULL");
    const clf_dtype_traits *tr = clf__dtype(dtype);
    if (!tr) return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "unknown dtype %d", dtype);
    size_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] <= 0)
            return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "shape[%d] = %lld: must be >= 1", i,
                             (long long)shape[i]);
        if ((uint64_t)shape[i] > SIZE_MAX || !clf__mul_size(n, (size_t)shape[i], &n))
            return clf__fail(ctx, CLF_ERROR_SIZE_LIMIT, "tensor element count overflows");
    }
    /* A block type: whole blocks along the last dimension (each row stands alone). */
    if (tr->block > 1 && (ndim < 1 || shape[ndim - 1] % tr->block))
        return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH,
                         "a %s tensor's last dimension must be a multiple of its block of %lld, "
                         "not %lld",
                         tr->name, (long long)tr->block, ndim ? (long long)shape[ndim - 1] : 0LL);
    size_t b;
    if (n > (size_t)INT64_MAX || !clf__mul_size(n / (size_t)tr->block, (size_t)tr->block_bytes, &b))
        return clf__fail(ctx, CLF_ERROR_SIZE_LIMIT, "tensor byte size overflows");
    *numel = (int64_t)n;
    *bytes = b;
    return CLF_SUCCESS;
}

clf_status clf_tensor_create(clf_context *ctx, clf_dtype dtype, int ndim, const int64_t *shape,
                             clf_tensor **out) {
    if (!ctx) return CLF_ERROR_INVALID_ARGUMENT;
    clf__clear_error(ctx);
    if (!out) return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "clf_tensor_create: out is NULL");
    *out = NULL;
    int64_t numel;
    size_t bytes;
    clf_status st = shape_size(ctx, dtype, ndim, shape, &numel, &bytes);
    if (st != CLF_SUCCESS) return st;
    /* F16 is storage only (vload_half/vstore_half, core OpenCL), so any device has it. */
    if ((uint64_t)bytes > ctx->info.max_alloc_bytes)
        return clf__fail(ctx, CLF_ERROR_SIZE_LIMIT,
                         "tensor of %zu bytes exceeds the device's max allocation of %llu bytes "
                         "(%s)",
                         bytes, (unsigned long long)ctx->info.max_alloc_bytes, ctx->info.name);
    clf_tensor *t = calloc(1, sizeof(*t));
    if (!t) return clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
    cl_int err = CL_MEM_OBJECT_ALLOCATION_FAILURE;
    t->mem = clf__fault(ctx, CLF_FAULT_ALLOC)
                 ? NULL
                 : clCreateBuffer(ctx->cl_ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (err != CL_SUCCESS) {
        free(t);
        return clf__fail(ctx, err, "clCreateBuffer(%zu bytes) failed: %s (%d)", bytes,
                         clf_strerror(err), (int)err);
    }
    t->ctx = ctx;
    t->dtype = dtype;
    t->ndim = ndim;
    memcpy(t->shape, shape, (size_t)ndim * sizeof(int64_t));
    t->numel = numel;
    t->bytes = bytes;
    *out = t;
    return CLF_SUCCESS;
}

void clf_tensor_free(clf_tensor *t) {
    if (!t) return;
    if (t->mem) clReleaseMemObject(t->mem);
    free(t);
}

static clf_status check_transfer(const clf_tensor *t, const void *host, size_t bytes,
                                 const char *what) {
    if (!t) return CLF_ERROR_INVALID_ARGUMENT;
    if (!host)
        return clf__fail(t->ctx, CLF_ERROR_INVALID_ARGUMENT, "%s: host pointer is NULL", what);
    if (bytes != t->bytes)
        return clf__fail(t->ctx, CLF_ERROR_SHAPE_MISMATCH, "%s: %zu bytes given, tensor has %zu",
                         what, bytes, t->bytes);
    return CLF_SUCCESS;
}

static clf_status write_buffer(clf_tensor *t, const void *host, size_t bytes, cl_bool blocking,
                               cl_event *ev) {
    clf_status st = check_transfer(t, host, bytes, "clf_tensor_write");
    if (st != CLF_SUCCESS) return st;
    cl_int err =
        clf__fault(t->ctx, CLF_FAULT_TRANSFER)
            ? CL_OUT_OF_RESOURCES
            : clEnqueueWriteBuffer(t->ctx->queue, t->mem, blocking, 0, bytes, host, 0, NULL, ev);
    return err == CL_SUCCESS ? CLF_SUCCESS : clf__cl_fail(t->ctx, err, "clEnqueueWriteBuffer");
}

clf_status clf_tensor_write(clf_tensor *t, const void *host, size_t bytes) {
    if (t) clf__clear_error(t->ctx);
    return write_buffer(t, host, bytes, CL_TRUE, NULL);
}

clf_status clf__tensor_write_async(clf_tensor *t, const void *host, size_t bytes, cl_event *ev) {
    return write_buffer(t, host, bytes, CL_FALSE, ev);
}

clf_status clf_tensor_read(const clf_tensor *t, void *host, size_t bytes) {
    if (t) clf__clear_error(t->ctx);
    clf_status st = check_transfer(t, host, bytes, "clf_tensor_read");
    if (st != CLF_SUCCESS) return st;
    cl_int err =
        clf__fault(t->ctx, CLF_FAULT_TRANSFER)
            ? CL_OUT_OF_RESOURCES
            : clEnqueueReadBuffer(t->ctx->queue, t->mem, CL_TRUE, 0, bytes, host, 0, NULL, NULL);
    return err == CL_SUCCESS ? CLF_SUCCESS : clf__cl_fail(t->ctx, err, "clEnqueueReadBuffer");
}

uint16_t clf_f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0));
    if (absx >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* overflow to inf */
    if (absx < 0x38800000u) {                                   /* subnormal or zero */
        float a;
        memcpy(&a, &absx, 4);
        return (uint16_t)(sign | (uint32_t)lrintf(a * 16777216.0f));
    }
    uint32_t mant = absx & 0x7fffffu;
    uint32_t exp = (absx >> 23) - 112;
    uint32_t h = (exp << 10) | (mant >> 13);
    uint32_t rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++;
    return (uint16_t)(sign | h);
}

float clf_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 31, m = h & 1023, bits;
    if (e == 0) {
        if (m == 0) {
            bits = sign;
        } else { /* subnormal: normalize */
            e = 113;
            while (!(m & 1024)) {
                m <<= 1;
                e--;
            }
            bits = sign | e << 23 | (m & 1023) << 13;
        }
    } else if (e == 31) {
        bits = sign | 0x7f800000u | m << 13;
    } else {
        bits = sign | (e + 112) << 23 | m << 13;
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* Checks a float transfer of count elements to or from t (any type but I32). */
static clf_status check_f32_transfer(const clf_tensor *t, const void *host, int64_t count,
                                     const char *what) {
    if (!t) return CLF_ERROR_INVALID_ARGUMENT;
    clf__clear_error(t->ctx);
    if (!host) return clf__fail(t->ctx, CLF_ERROR_INVALID_ARGUMENT, "%s: host is NULL", what);
    if (t->dtype == CLF_I32)
        return clf__fail(t->ctx, CLF_ERROR_UNSUPPORTED, "%s: the tensor is %s, not floating", what,
                         dtype_name(t->dtype));
    if (count != t->numel)
        return clf__fail(t->ctx, CLF_ERROR_SHAPE_MISMATCH, "%s: %lld elements for a tensor of %lld",
                         what, (long long)count, (long long)t->numel);
    return CLF_SUCCESS;
}

clf_status clf_tensor_write_f32(clf_tensor *t, const float *host, int64_t count) {
    clf_status st = check_f32_transfer(t, host, count, "clf_tensor_write_f32");
    if (st != CLF_SUCCESS || t->dtype == CLF_F32)
        return st != CLF_SUCCESS ? st : clf_tensor_write(t, host, t->bytes);
    for (int64_t i = 0; t->dtype == CLF_F16 && i < count; i++)
        if (isfinite(host[i]) && fabsf(host[i]) > 65504.0f)
            return clf__fail(t->ctx, CLF_ERROR_INVALID_ARGUMENT,
                             "clf_tensor_write_f32: element %lld = %g is outside f16's range "
                             "(|x| <= 65504)",
                             (long long)i, (double)host[i]);
    unsigned char *h = malloc(t->bytes);
    if (!h) return clf__fail(t->ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
    if (t->dtype == CLF_F16) { /* F16 keeps infinities and NaNs, as vstore_half does */
        for (int64_t i = 0; i < count; i++) {
            const uint16_t v = clf_f32_to_f16(host[i]);
            memcpy(h + 2 * i, &v, 2);
        }
    } else {
        clf_error e;
        st = clf_quantize(t->dtype, host, count, h, t->bytes, &e);
        if (st != CLF_SUCCESS) st = clf__fail(t->ctx, st, "clf_tensor_write_f32: %s", e.message);
    }
    if (st == CLF_SUCCESS) st = clf_tensor_write(t, h, t->bytes);
    free(h);
    return st;
}

clf_status clf_tensor_read_f32(const clf_tensor *t, float *host, int64_t count) {
    clf_status st = check_f32_transfer(t, host, count, "clf_tensor_read_f32");
    if (st != CLF_SUCCESS || t->dtype == CLF_F32)
        return st != CLF_SUCCESS ? st : clf_tensor_read(t, host, t->bytes);
    unsigned char *h = malloc(t->bytes);
    if (!h) return clf__fail(t->ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
    st = clf_tensor_read(t, h, t->bytes);
    clf_error e;
    if (st == CLF_SUCCESS &&
        (st = clf_dequantize(t->dtype, h, t->bytes, host, count, &e)) != CLF_SUCCESS)
        st = clf__fail(t->ctx, st, "clf_tensor_read_f32: %s", e.message);
    free(h);
    return st;
}

clf_status clf_tensor_fill(clf_tensor *t, double value) {
    if (!t) return CLF_ERROR_INVALID_ARGUMENT;
    clf__clear_error(t->ctx);
    if (clf_dtype_block(t->dtype) != 1)
        return clf__fail(t->ctx, CLF_ERROR_UNSUPPORTED,
                         "clf_tensor_fill: a %s tensor is filled through clf_tensor_write_f32",
                         dtype_name(t->dtype));
    if (t->dtype == CLF_I32 && !(value >= -2147483648.0 && value <= 2147483647.0))
        return clf__fail(t->ctx, CLF_ERROR_INVALID_ARGUMENT, "fill value %g out of int32 range",
                         value);
    float f = (float)value;
    int32_t i = (int32_t)value;
    unsigned char pattern[4];
    if (t->dtype == CLF_F32)
        memcpy(pattern, &f, 4);
    else if (t->dtype == CLF_I32)
        memcpy(pattern, &i, 4);
    else if (t->dtype == CLF_F16) {
        const uint16_t h = clf_f32_to_f16(f);
        memcpy(pattern, &h, 2);
    } else if (isfinite(f)) {
        clf_quantize(t->dtype, &f, 1, pattern, clf_dtype_size(t->dtype), NULL);
    } else { /* BF16 keeps f32's exponent: its top half */
        uint32_t bits;
        memcpy(&bits, &f, 4);
        const uint16_t h = (uint16_t)(bits >> 16);
        memcpy(pattern, &h, 2);
    }
    cl_int err = clf__fault(t->ctx, CLF_FAULT_TRANSFER)
                     ? CL_OUT_OF_RESOURCES
                     : clEnqueueFillBuffer(t->ctx->queue, t->mem, pattern, clf_dtype_size(t->dtype),
                                           0, t->bytes, 0, NULL, NULL);
    return err == CL_SUCCESS ? CLF_SUCCESS : clf__cl_fail(t->ctx, err, "clEnqueueFillBuffer");
}

clf_status clf_tensor_copy(clf_tensor *dst, const clf_tensor *src) {
    if (!dst) return CLF_ERROR_INVALID_ARGUMENT;
    clf_context *ctx = dst->ctx;
    clf__clear_error(ctx);
    clf_status st = clf__check_tensor(ctx, src, "src", dst->dtype);
    if (st != CLF_SUCCESS) return st;
    if (src->numel != dst->numel) {
        char a[96], b[96];
        return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH, "copy: src %s and dst %s differ in size",
                         clf__shape_str(src, a, sizeof(a)), clf__shape_str(dst, b, sizeof(b)));
    }
    if (src == dst) return CLF_SUCCESS;
    cl_int err =
        clf__fault(ctx, CLF_FAULT_TRANSFER)
            ? CL_OUT_OF_RESOURCES
            : clEnqueueCopyBuffer(ctx->queue, src->mem, dst->mem, 0, 0, dst->bytes, 0, NULL, NULL);
    return err == CL_SUCCESS ? CLF_SUCCESS : clf__cl_fail(ctx, err, "clEnqueueCopyBuffer");
}

clf_status clf_tensor_reshape(clf_tensor *t, int ndim, const int64_t *shape) {
    if (!t) return CLF_ERROR_INVALID_ARGUMENT;
    int64_t numel;
    size_t bytes;
    clf_status st = shape_size(t->ctx, t->dtype, ndim, shape, &numel, &bytes);
    if (st != CLF_SUCCESS) return st;
    if (numel != t->numel) {
        char a[96];
        return clf__fail(t->ctx, CLF_ERROR_SHAPE_MISMATCH,
                         "reshape: %lld elements cannot take the place of %s (%lld)",
                         (long long)numel, clf__shape_str(t, a, sizeof(a)), (long long)t->numel);
    }
    t->ndim = ndim;
    memset(t->shape, 0, sizeof(t->shape));
    memcpy(t->shape, shape, (size_t)ndim * sizeof(int64_t));
    return CLF_SUCCESS;
}

int clf_tensor_ndim(const clf_tensor *t) {
    return t ? t->ndim : 0;
}
int64_t clf_tensor_dim(const clf_tensor *t, int i) {
    if (!t) return 0;
    if (i < 0) i += t->ndim;
    return (i >= 0 && i < t->ndim) ? t->shape[i] : 0;
}
int64_t clf_tensor_numel(const clf_tensor *t) {
    return t ? t->numel : 0;
}
size_t clf_tensor_bytes(const clf_tensor *t) {
    return t ? t->bytes : 0;
}
clf_dtype clf_tensor_dtype(const clf_tensor *t) {
    return t ? t->dtype : CLF_F32;
}
cl_mem clf_tensor_cl_mem(const clf_tensor *t) {
    return t ? t->mem : NULL;
}

clf_status clf__check_out(clf_context *ctx, const clf_tensor *x, const clf_tensor *out) {
    clf_status st = clf__check_tensor(ctx, out, "out", CLF_F32);
    if (st != CLF_SUCCESS) return st;
    if (!clf__same_shape(x, out)) {
        char a[96], b[96];
        return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH, "out has shape %s, expected %s",
                         clf__shape_str(out, a, sizeof(a)), clf__shape_str(x, b, sizeof(b)));
    }
    return CLF_SUCCESS;
}

clf_status clf__check_int(clf_context *ctx, int64_t v, const char *what) {
    if (v > INT32_MAX)
        return clf__fail(ctx, CLF_ERROR_SIZE_LIMIT, "%s = %lld exceeds the kernels' limit %d", what,
                         (long long)v, INT32_MAX);
    return CLF_SUCCESS;
}
