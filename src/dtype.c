/*
 * dtype.c — the storage types' traits (generated from include/clformer/dtypes.def) and their
 * host conversions: clf_quantize / clf_dequantize, the plain C reference of every block layout
 * (the kernels' sections in kernels/dtypes.cl compute the same values).
 *
 * Built with -ffp-contract=off (CMakeLists.txt): Q8_0 and Q4_0 must round exactly as ggml's
 * reference quantizer and the gguf package do, and a fused x * id + 8.5 would not.
 */
#include "internal.h"

#include <math.h>
#include <string.h>

const clf_dtype_traits clf__dtypes[] = {
#define CLF_DTYPE(name_, value_, block_, bytes_, gguf_, uses_)                                     \
    {.name = #name_,                                                                               \
     .dtype = CLF_##name_,                                                                         \
     .block = block_,                                                                              \
     .block_bytes = bytes_,                                                                        \
     .gguf = gguf_,                                                                                \
     .uses = uses_},
#include "clformer/dtypes.def"
#undef CLF_DTYPE
};
const size_t clf__dtype_count = sizeof(clf__dtypes) / sizeof(clf__dtypes[0]);

const clf_dtype_traits *clf__dtype(clf_dtype dtype) {
    for (size_t i = 0; i < clf__dtype_count; i++)
        if (clf__dtypes[i].dtype == dtype) return &clf__dtypes[i];
    return NULL;
}

const clf_dtype_traits *clf__dtype_from_gguf(int64_t gguf_type) {
    for (size_t i = 0; i < clf__dtype_count; i++)
        if (clf__dtypes[i].gguf >= 0 && clf__dtypes[i].gguf == gguf_type) return &clf__dtypes[i];
    return NULL;
}

size_t clf_dtype_size(clf_dtype dtype) {
    const clf_dtype_traits *t = clf__dtype(dtype);
    return t && t->block == 1 ? (size_t)t->block_bytes : 0;
}

const char *clf_dtype_name(clf_dtype dtype) {
    const clf_dtype_traits *t = clf__dtype(dtype);
    return t ? t->name : NULL;
}

clf_status clf_dtype_from_name(const char *name, clf_dtype *out) {
    for (size_t i = 0; name && out && i < clf__dtype_count; i++)
        if (strcasecmp(name, clf__dtypes[i].name) == 0) {
            *out = clf__dtypes[i].dtype;
            return CLF_SUCCESS;
        }
    return CLF_ERROR_INVALID_ARGUMENT;
}

int64_t clf_dtype_block(clf_dtype dtype) {
    const clf_dtype_traits *t = clf__dtype(dtype);
    return t ? t->block : 0;
}

size_t clf_dtype_block_bytes(clf_dtype dtype) {
    const clf_dtype_traits *t = clf__dtype(dtype);
    return t ? (size_t)t->block_bytes : 0;
}

size_t clf_dtype_row_bytes(clf_dtype dtype, int64_t n) {
    const clf_dtype_traits *t = clf__dtype(dtype);
    if (!t || n < 0 || n % t->block) return 0;
    size_t bytes;
    return clf__mul_size((size_t)(n / t->block), (size_t)t->block_bytes, &bytes) ? bytes : 0;
}

void clf__dtype_define(clf_defines *defs, clf_dtype dtype) {
    if (dtype == CLF_F32) return; /* dtypes.cl's default: the variant clf_context_warmup builds */
    defs->name[defs->n] = "DT";
    defs->value[defs->n] = (int64_t)dtype;
    defs->n++;
}

bool clf__load_weight_type(clf_dtype dtype) {
    return dtype == CLF_F32 || dtype == CLF_F16 || dtype == CLF_BF16 || dtype == CLF_Q8_0 ||
           dtype == CLF_Q4_0 || dtype == CLF_Q4_K || dtype == CLF_Q6_K;
}

/* ---------------------------------------------------------------- conversions */

static uint16_t get16(const unsigned char *p) {
    return (uint16_t)(p[0] | p[1] << 8);
}
static void put16(unsigned char *p, uint16_t v) {
    p[0] = (unsigned char)(v & 0xff);
    p[1] = (unsigned char)(v >> 8);
}

static float bf16_to_f32(uint16_t h) {
    const uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static uint16_t f32_to_bf16(float f) {
    uint32_t bits;
    memcpy(&bits, &f, 4);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((bits >> 16) | 0x40); /* quiet NaN */
    return (uint16_t)((bits + 0x7fffu + ((bits >> 16) & 1)) >> 16);
}

/* Q4_K's 6-bit (scale, min) of sub-block j (0..7) from its 12 packed bytes: j < 4 in the low six
 * bits of bytes j and j + 4; j >= 4 in the nibbles of byte j + 4, topped by the high two bits of
 * bytes j - 4 and j. */
void clf__q4k_scale_min(const unsigned char *q, int j, int *sc, int *m) {
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (q[j + 4] & 0xf) | ((q[j - 4] >> 6) << 4);
        *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

static void quantize_q8_0(const float *x, unsigned char *b) {
    float amax = 0.0f;
    for (int j = 0; j < 32; j++)
        amax = fmaxf(amax, fabsf(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    put16(b, clf_f32_to_f16(d));
    for (int j = 0; j < 32; j++) {
        const float v = x[j] * id;
        b[2 + j] = (unsigned char)(int8_t)roundf(v); /* half away from zero, as ggml */
    }
}

static void quantize_q4_0(const float *x, unsigned char *b) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 32; j++)
        if (fabsf(x[j]) > amax) { /* the first of the largest magnitude */
            amax = fabsf(x[j]);
            max = x[j];
        }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    put16(b, clf_f32_to_f16(d));
    for (int j = 0; j < 16; j++) {
        int q[2];
        for (int h = 0; h < 2; h++) {
            const float v = x[j + 16 * h] * id;
            const float t = truncf(v + 8.5f);
            q[h] = t > 15.0f ? 15 : (int)t;
        }
        b[2 + j] = (unsigned char)(q[0] | q[1] << 4);
    }
}

/* fp16 of v, rounded up to a value >= v (v >= 0, finite): a scale whose multiples must cover v. */
static uint16_t f16_at_least(float v) {
    uint16_t h = clf_f32_to_f16(v);
    if (clf_f16_to_f32(h) < v) h++; /* the next fp16 up (v > 0, below the largest finite) */
    return h;
}

/* Q4_K and Q6_K by a plain fit, not llama-quantize's error-minimizing search (make_qkx2_quants):
 * the same layout, other (and a little larger) errors. Each sub-block's range is covered
 * without clipping: its scale and min are rounded up, so every element lands within half a
 * step d sc of its value. */
static void quantize_q4_k(const float *x, unsigned char *b) {
    float lo[8], step[8], dmax = 0.0f, mmax = 0.0f;
    for (int s = 0; s < 8; s++) {
        float mn = 0.0f, mx = 0.0f; /* the min term is >= 0: mn <= 0 */
        for (int l = 0; l < 32; l++) {
            mn = fminf(mn, x[32 * s + l]);
            mx = fmaxf(mx, x[32 * s + l]);
        }
        lo[s] = -mn;
        step[s] = (mx - mn) / 15.0f;
        mmax = fmaxf(mmax, lo[s]);
    }
    const uint16_t hm = f16_at_least(mmax / 63.0f);
    const float dmin = clf_f16_to_f32(hm);
    int sc[8], m[8];
    for (int s = 0; s < 8; s++) {
        m[s] = dmin > 0.0f ? (int)ceilf(lo[s] / dmin) : 0;
        if (m[s] > 63) m[s] = 63;
        /* the step that covers the range from the stored min term (>= lo) up */
        step[s] += fmaxf(dmin * (float)m[s] - lo[s], 0.0f) / 15.0f;
        dmax = fmaxf(dmax, step[s]);
    }
    const uint16_t hd = f16_at_least(dmax / 63.0f);
    const float d = clf_f16_to_f32(hd);
    for (int s = 0; s < 8; s++) {
        sc[s] = d > 0.0f ? (int)ceilf(step[s] / d) : 0;
        if (sc[s] > 63) sc[s] = 63;
    }
    put16(b, hd);
    put16(b + 2, hm);
    unsigned char *q = b + 4, *qs = b + 16;
    memset(q, 0, 12);
    for (int j = 0; j < 8; j++) /* clf__q4k_scale_min's packing */
        if (j < 4) {
            q[j] |= (unsigned char)(sc[j] & 63);
            q[j + 4] |= (unsigned char)(m[j] & 63);
        } else {
            q[j + 4] |= (unsigned char)((sc[j] & 0xf) | (m[j] & 0xf) << 4);
            q[j - 4] |= (unsigned char)((sc[j] >> 4) << 6);
            q[j] |= (unsigned char)((m[j] >> 4) << 6);
        }
    memset(qs, 0, 128);
    for (int s = 0; s < 8; s++) {
        const float ds = d * (float)sc[s], dm = dmin * (float)m[s];
        const float id = ds > 0.0f ? 1.0f / ds : 0.0f;
        for (int l = 0; l < 32; l++) {
            const float v = nearbyintf((x[32 * s + l] + dm) * id);
            const int qv = v < 0.0f ? 0 : v > 15.0f ? 15 : (int)v;
            qs[32 * (s / 2) + l] |= (unsigned char)(qv << (4 * (s & 1)));
        }
    }
}

static void quantize_q6_k(const float *x, unsigned char *b) {
    float step[16], smax = 0.0f;
    for (int s = 0; s < 16; s++) { /* q in -32..31: 31 steps cover the largest magnitude */
        float amax = 0.0f;
        for (int l = 0; l < 16; l++)
            amax = fmaxf(amax, fabsf(x[16 * s + l]));
        step[s] = amax / 31.0f;
        smax = fmaxf(smax, step[s]);
    }
    const uint16_t hd = f16_at_least(smax / 127.0f);
    const float d = clf_f16_to_f32(hd);
    unsigned char *ql = b, *qh = b + 128;
    memset(b, 0, 210);
    for (int s = 0; s < 16; s++) {
        int sc = d > 0.0f ? (int)ceilf(step[s] / d) : 0;
        if (sc > 127) sc = 127;
        b[192 + s] = (unsigned char)(int8_t)sc;
        const float id = sc > 0 ? 1.0f / (d * (float)sc) : 0.0f;
        for (int l = 0; l < 16; l++) {
            const int i = 16 * s + l; /* = 128 h + 32 q + r: dequantize_block's order */
            const int h = i / 128, qq = (i % 128) / 32, r = i % 32;
            const float v = nearbyintf(x[i] * id);
            const int qv = (v < -32.0f ? -32 : v > 31.0f ? 31 : (int)v) + 32;
            ql[64 * h + 32 * (qq & 1) + r] |= (unsigned char)((qv & 0xf) << (4 * (qq >> 1)));
            qh[32 * h + r] |= (unsigned char)((qv >> 4) << (2 * qq));
        }
    }
    put16(b + 208, hd);
}

/* Dequantizes one block of `t` at b into y[t->block]. */
static void dequantize_block(const clf_dtype_traits *t, const unsigned char *b, float *y) {
    switch (t->dtype) {
    case CLF_Q8_0: {
        const float d = clf_f16_to_f32(get16(b));
        for (int j = 0; j < 32; j++)
            y[j] = d * (float)(int8_t)b[2 + j];
        break;
    }
    case CLF_Q4_0: {
        const float d = clf_f16_to_f32(get16(b));
        for (int j = 0; j < 16; j++) {
            y[j] = d * (float)((b[2 + j] & 0xf) - 8);
            y[j + 16] = d * (float)((b[2 + j] >> 4) - 8);
        }
        break;
    }
    case CLF_Q4_K: {
        const float d = clf_f16_to_f32(get16(b)), dmin = clf_f16_to_f32(get16(b + 2));
        const unsigned char *scales = b + 4, *qs = b + 16;
        for (int s = 0; s < 8; s++) { /* sub-block s: nibbles of bytes 32 (s / 2) .. + 31 */
            int sc, m;
            clf__q4k_scale_min(scales, s, &sc, &m);
            const float ds = d * (float)sc, dm = dmin * (float)m;
            for (int l = 0; l < 32; l++) {
                const int q = (qs[32 * (s / 2) + l] >> (4 * (s & 1))) & 0xf;
                y[32 * s + l] = ds * (float)q - dm;
            }
        }
        break;
    }
    case CLF_Q6_K: {
        const unsigned char *ql = b, *qh = b + 128;
        const int8_t *sc = (const int8_t *)(b + 192);
        const float d = clf_f16_to_f32(get16(b + 208));
        /* Weight 128 h + 32 q + l (h < 2, q < 4, l < 32): low nibble of ql[64 h + 32 (q & 1) + l]
         * (high nibble for q >= 2), bits 2q, 2q + 1 of qh[32 h + l], scale sc[8 h + 2 q + l / 16].
         */
        for (int h = 0; h < 2; h++)
            for (int q = 0; q < 4; q++)
                for (int l = 0; l < 32; l++) {
                    const int lo = (ql[64 * h + 32 * (q & 1) + l] >> (4 * (q >> 1))) & 0xf;
                    const int hi = (qh[32 * h + l] >> (2 * q)) & 3;
                    const float s = d * (float)sc[8 * h + 2 * q + l / 16];
                    y[128 * h + 32 * q + l] = s * (float)((lo | hi << 4) - 32);
                }
        break;
    }
    default:
        break;
    }
}

/* The shared checks of clf_quantize / clf_dequantize. */
static clf_status check_convert(clf_dtype dtype, const void *a, const void *b, int64_t n,
                                size_t bytes, const char *what, clf_error *err,
                                const clf_dtype_traits **out) {
    if (err) err->message[0] = '\0';
    const clf_dtype_traits *t = clf__dtype(dtype);
    if (!t) {
        if (err) clf__msg(err->message, sizeof(err->message), "%s: unknown dtype %d", what, dtype);
        return CLF_ERROR_INVALID_ARGUMENT;
    }
    if (!a || !b) {
        if (err) clf__msg(err->message, sizeof(err->message), "%s: a pointer is NULL", what);
        return CLF_ERROR_INVALID_ARGUMENT;
    }
    const size_t want = clf_dtype_row_bytes(dtype, n);
    if (n <= 0 || want == 0 || want != bytes) {
        if (err)
            clf__msg(err->message, sizeof(err->message),
                     "%s: %lld elements of %s take %zu bytes (blocks of %lld), not %zu", what,
                     (long long)n, t->name, want, (long long)t->block, bytes);
        return CLF_ERROR_SHAPE_MISMATCH;
    }
    *out = t;
    return CLF_SUCCESS;
}

clf_status clf_quantize(clf_dtype dtype, const float *src, int64_t n, void *dst, size_t dst_bytes,
                        clf_error *err) {
    const clf_dtype_traits *t;
    clf_status st = check_convert(dtype, src, dst, n, dst_bytes, "clf_quantize", err, &t);
    if (st != CLF_SUCCESS) return st;
    if (dtype == CLF_I32) {
        if (err)
            clf__msg(err->message, sizeof(err->message), "clf_quantize: I32 is not a float type");
        return CLF_ERROR_UNSUPPORTED;
    }
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(src[i])) {
            if (err)
                clf__msg(err->message, sizeof(err->message),
                         "clf_quantize: element %lld is %g, not finite", (long long)i,
                         (double)src[i]);
            return CLF_ERROR_INVALID_ARGUMENT;
        }
    unsigned char *out = dst;
    for (int64_t i = 0; i < n / t->block; i++) {
        const float *x = src + i * t->block;
        unsigned char *b = out + i * t->block_bytes;
        switch (dtype) {
        case CLF_F32:
            memcpy(b, x, 4);
            break;
        case CLF_F16:
            put16(b, clf_f32_to_f16(x[0]));
            break;
        case CLF_BF16:
            put16(b, f32_to_bf16(x[0]));
            break;
        case CLF_Q8_0:
            quantize_q8_0(x, b);
            break;
        case CLF_Q4_0:
            quantize_q4_0(x, b);
            break;
        case CLF_Q4_K:
            quantize_q4_k(x, b);
            break;
        case CLF_Q6_K:
            quantize_q6_k(x, b);
            break;
        default:
            break;
        }
    }
    return CLF_SUCCESS;
}

clf_status clf_dequantize(clf_dtype dtype, const void *src, size_t src_bytes, float *dst, int64_t n,
                          clf_error *err) {
    const clf_dtype_traits *t;
    clf_status st = check_convert(dtype, src, dst, n, src_bytes, "clf_dequantize", err, &t);
    if (st != CLF_SUCCESS) return st;
    if (dtype == CLF_I32) {
        if (err)
            clf__msg(err->message, sizeof(err->message), "clf_dequantize: I32 is not a float type");
        return CLF_ERROR_UNSUPPORTED;
    }
    const unsigned char *in = src;
    for (int64_t i = 0; i < n / t->block; i++) {
        const unsigned char *b = in + i * t->block_bytes;
        float *y = dst + i * t->block;
        switch (dtype) {
        case CLF_F32:
            memcpy(y, b, 4);
            break;
        case CLF_F16:
            y[0] = clf_f16_to_f32(get16(b));
            break;
        case CLF_BF16:
            y[0] = bf16_to_f32(get16(b));
            break;
        default:
            dequantize_block(t, b, y);
            break;
        }
    }
    return CLF_SUCCESS;
}
