/*
 * safetensors.c — a validating reader of the safetensors format.
 *
 * Layout: u64 little-endian N, then N bytes of JSON {"name": {"dtype": "F32", "shape": [..],
 * "data_offsets": [begin, end]}, ..., "__metadata__": {..}}, then the data; offsets are relative
 * to the start of the data. Everything in the header is checked when the file is opened, so a
 * loaded tensor never reads outside the file.
 */
#include "internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ST_MAX_HEADER (100u << 20) /* the format's own limit is 100 MB */

struct clf_safetensors {
    char *path;
    uint64_t file_size;
    uint64_t data_start;
    size_t n;
    clf_st_info *t; /* sorted by data offset (file order) */
    char *names;    /* all names, NUL-separated */
};

static const struct {
    const char *name;
    clf_st_dtype dtype;
    unsigned size;
} k_dtypes[] = {
    {"F32", CLF_ST_F32, 4},    {"F16", CLF_ST_F16, 2},       {"BF16", CLF_ST_BF16, 2},
    {"F64", CLF_ST_F64, 8},    {"I32", CLF_ST_I32, 4},       {"I64", CLF_ST_I64, 8},
    {"I8", CLF_ST_OTHER, 1},   {"U8", CLF_ST_OTHER, 1},      {"I16", CLF_ST_OTHER, 2},
    {"U16", CLF_ST_OTHER, 2},  {"U32", CLF_ST_OTHER, 4},     {"U64", CLF_ST_OTHER, 8},
    {"BOOL", CLF_ST_OTHER, 1}, {"F8_E4M3", CLF_ST_OTHER, 1}, {"F8_E5M2", CLF_ST_OTHER, 1},
};

static int cmp_offset(const void *a, const void *b) {
    const clf_st_info *x = a, *y = b;
    return x->offset < y->offset ? -1 : x->offset > y->offset ? 1 : 0;
}

/* A JSON number that is a non-negative integer exactly representable (< 2^53). */
static bool json_uint(const cJSON *j, uint64_t *out) {
    if (!cJSON_IsNumber(j)) return false;
    double v = j->valuedouble;
    if (!(v >= 0 && v < 9007199254740992.0) || v != (double)(uint64_t)v) return false;
    *out = (uint64_t)v;
    return true;
}

static clf_status parse_entry(const cJSON *e, uint64_t data_size, clf_st_info *info, char *err,
                              size_t es) {
    const char *name = e->string;
    if (!cJSON_IsObject(e)) {
        clf__msg(err, es, "tensor \"%s\": header entry is not an object", name);
        return CLF_ERROR_BAD_FORMAT;
    }
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    if (!cJSON_IsString(dt) || !cJSON_IsArray(sh) || !cJSON_IsArray(off) ||
        cJSON_GetArraySize(off) != 2) {
        clf__msg(err, es, "tensor \"%s\": needs a string dtype, a shape array and two data_offsets",
                 name);
        return CLF_ERROR_BAD_FORMAT;
    }
    unsigned esize = 0;
    for (size_t i = 0; i < sizeof(k_dtypes) / sizeof(k_dtypes[0]); i++)
        if (strcmp(dt->valuestring, k_dtypes[i].name) == 0) {
            info->dtype = k_dtypes[i].dtype;
            info->dtype_name = k_dtypes[i].name;
            esize = k_dtypes[i].size;
        }
    if (!esize) {
        clf__msg(err, es, "tensor \"%s\": unknown dtype \"%.32s\"", name, dt->valuestring);
        return CLF_ERROR_BAD_FORMAT;
    }
    int nd = cJSON_GetArraySize(sh);
    if (nd > CLF_ST_MAX_DIMS) {
        clf__msg(err, es, "tensor \"%s\": %d dims (at most %d supported)", name, nd,
                 CLF_ST_MAX_DIMS);
        return CLF_ERROR_BAD_FORMAT;
    }
    info->ndim = nd;
    uint64_t numel = 1;
    for (int i = 0; i < nd; i++) {
        uint64_t d;
        if (!json_uint(cJSON_GetArrayItem(sh, i), &d)) {
            clf__msg(err, es, "tensor \"%s\": shape[%d] is not a non-negative integer", name, i);
            return CLF_ERROR_BAD_FORMAT;
        }
        if (d != 0 && numel > (UINT64_MAX / 16) / d) {
            clf__msg(err, es, "tensor \"%s\": shape overflows", name);
            return CLF_ERROR_BAD_FORMAT;
        }
        numel *= d;
        info->shape[i] = (int64_t)d;
    }
    uint64_t b, en;
    if (!json_uint(cJSON_GetArrayItem(off, 0), &b) || !json_uint(cJSON_GetArrayItem(off, 1), &en) ||
        b > en) {
        clf__msg(err, es, "tensor \"%s\": bad data_offsets", name);
        return CLF_ERROR_BAD_FORMAT;
    }
    if (en > data_size) {
        clf__msg(err, es,
                 "tensor \"%s\": data_offsets [%llu, %llu) run past the end of the data (%llu "
                 "bytes; file truncated?)",
                 name, (unsigned long long)b, (unsigned long long)en,
                 (unsigned long long)data_size);
        return CLF_ERROR_BAD_FORMAT;
    }
    if (en - b != numel * esize) {
        clf__msg(err, es, "tensor \"%s\": %llu bytes for %llu elements of %s", name,
                 (unsigned long long)(en - b), (unsigned long long)numel, info->dtype_name);
        return CLF_ERROR_BAD_FORMAT;
    }
    info->numel = (int64_t)numel;
    info->offset = b;
    info->bytes = en - b;
    return CLF_SUCCESS;
}

/* Parses and validates a header; fills st->t/n/names. */
static clf_status parse_header(clf_safetensors *st, const char *text, size_t len,
                               uint64_t data_size, char *err, size_t es) {
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!root || !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        clf__msg(err, es, "header is not a JSON object");
        return CLF_ERROR_BAD_FORMAT;
    }
    for (const char *p = end; p && p < text + len; p++)
        if (*p != ' ' && *p != '\0') { /* the format pads with spaces */
            cJSON_Delete(root);
            clf__msg(err, es, "trailing bytes after the JSON header");
            return CLF_ERROR_BAD_FORMAT;
        }
    size_t n = 0, name_bytes = 0;
    for (const cJSON *e = root->child; e; e = e->next) {
        if (strcmp(e->string, "__metadata__") == 0) continue;
        n++;
        name_bytes += strlen(e->string) + 1;
    }
    clf_status rc = CLF_SUCCESS;
    st->t = calloc(n ? n : 1, sizeof(clf_st_info));
    st->names = malloc(name_bytes + 1);
    if (!st->t || !st->names) {
        cJSON_Delete(root);
        clf__msg(err, es, "out of host memory");
        return CLF_ERROR_OUT_OF_MEMORY;
    }
    char *np = st->names;
    for (const cJSON *e = root->child; e && rc == CLF_SUCCESS; e = e->next) {
        if (strcmp(e->string, "__metadata__") == 0) {
            if (!cJSON_IsObject(e)) {
                clf__msg(err, es, "__metadata__ is not an object");
                rc = CLF_ERROR_BAD_FORMAT;
            }
            continue;
        }
        clf_st_info *info = &st->t[st->n];
        size_t l = strlen(e->string);
        memcpy(np, e->string, l + 1);
        info->name = np;
        np += l + 1;
        rc = parse_entry(e, data_size, info, err, es);
        if (rc == CLF_SUCCESS) {
            for (size_t j = 0; j < st->n; j++)
                if (strcmp(st->t[j].name, info->name) == 0) {
                    clf__msg(err, es, "tensor \"%s\" appears twice", info->name);
                    rc = CLF_ERROR_BAD_FORMAT;
                }
            st->n++;
        }
    }
    cJSON_Delete(root);
    if (rc != CLF_SUCCESS) return rc;
    qsort(st->t, st->n, sizeof(clf_st_info), cmp_offset);
    for (size_t i = 1; i < st->n; i++)
        if (st->t[i].offset < st->t[i - 1].offset + st->t[i - 1].bytes) {
            clf__msg(err, es, "tensors \"%s\" and \"%s\" overlap", st->t[i - 1].name,
                     st->t[i].name);
            return CLF_ERROR_BAD_FORMAT;
        }
    for (size_t i = 0; i < st->n; i++)
        st->t[i].offset += st->data_start;
    return CLF_SUCCESS;
}

clf_status clf_safetensors_open(const char *path, clf_safetensors **out, clf_error *e) {
    char *err = e ? e->message : NULL;
    const size_t err_size = e ? sizeof(e->message) : 0;
    clf__msg(err, err_size, "%s", "");
    if (!path || !out) {
        clf__msg(err, err_size, "path and out must not be NULL");
        return CLF_ERROR_INVALID_ARGUMENT;
    }
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        clf__msg(err, err_size, "%s: %s", path, strerror(errno));
        return CLF_ERROR_IO;
    }
    clf_status rc = CLF_SUCCESS;
    char *text = NULL;
    clf_safetensors *st = calloc(1, sizeof(*st));
    unsigned char hb[8];
    uint64_t hlen = 0;
    long size = -1;
    if (!st) {
        rc = CLF_ERROR_OUT_OF_MEMORY;
        clf__msg(err, err_size, "out of host memory");
        goto done;
    }
    if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        rc = CLF_ERROR_IO;
        clf__msg(err, err_size, "%s: cannot seek", path);
        goto done;
    }
    st->file_size = (uint64_t)size;
    if (st->file_size < 8 || fread(hb, 1, 8, f) != 8) {
        rc = CLF_ERROR_BAD_FORMAT;
        clf__msg(err, err_size, "%s: shorter than the 8-byte header size (truncated?)", path);
        goto done;
    }
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | hb[i];
    if (hlen < 2 || hlen > ST_MAX_HEADER || hlen > st->file_size - 8) {
        rc = CLF_ERROR_BAD_FORMAT;
        clf__msg(err, err_size,
                 "%s: header size %llu does not fit the file (%llu bytes; not safetensors, or "
                 "truncated)",
                 path, (unsigned long long)hlen, (unsigned long long)st->file_size);
        goto done;
    }
    text = malloc((size_t)hlen + 1);
    if (!text) {
        rc = CLF_ERROR_OUT_OF_MEMORY;
        clf__msg(err, err_size, "out of host memory");
        goto done;
    }
    if (fread(text, 1, (size_t)hlen, f) != hlen) {
        rc = CLF_ERROR_IO;
        clf__msg(err, err_size, "%s: short read of the header", path);
        goto done;
    }
    text[hlen] = '\0';
    st->data_start = 8 + hlen;
    char why[400];
    why[0] = '\0';
    rc = parse_header(st, text, (size_t)hlen, st->file_size - st->data_start, why, sizeof(why));
    if (rc != CLF_SUCCESS) {
        clf__msg(err, err_size, "%s: %s", path, why);
        goto done;
    }
    st->path = strdup(path);
    if (!st->path) {
        rc = CLF_ERROR_OUT_OF_MEMORY;
        clf__msg(err, err_size, "out of host memory");
    }
done:
    fclose(f);
    free(text);
    if (rc != CLF_SUCCESS)
        clf_safetensors_free(st);
    else
        *out = st;
    return rc;
}

clf_status clf__safetensors_check(const unsigned char *data, size_t size, size_t *count,
                                  clf_error *e) {
    char *err = e ? e->message : NULL;
    const size_t es = e ? sizeof(e->message) : 0;
    uint64_t hlen = 0;
    if (size < 8) {
        clf__msg(err, es, "shorter than the 8-byte header size");
        return CLF_ERROR_BAD_FORMAT;
    }
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | data[i];
    if (hlen < 2 || hlen > ST_MAX_HEADER || hlen > size - 8) {
        clf__msg(err, es, "header size %llu does not fit the file", (unsigned long long)hlen);
        return CLF_ERROR_BAD_FORMAT;
    }
    clf_safetensors st;
    memset(&st, 0, sizeof(st));
    st.file_size = size;
    st.data_start = 8 + hlen;
    clf_status rc =
        parse_header(&st, (const char *)data + 8, (size_t)hlen, size - st.data_start, err, es);
    if (count) *count = st.n;
    free(st.t);
    free(st.names);
    return rc;
}

void clf_safetensors_free(clf_safetensors *st) {
    if (!st) return;
    free(st->path);
    free(st->t);
    free(st->names);
    free(st);
}

size_t clf_safetensors_count(const clf_safetensors *st) {
    return st ? st->n : 0;
}

const clf_st_info *clf_safetensors_at(const clf_safetensors *st, size_t i) {
    return st && i < st->n ? &st->t[i] : NULL;
}

const clf_st_info *clf_safetensors_find(const clf_safetensors *st, const char *name) {
    if (!st || !name) return NULL;
    for (size_t i = 0; i < st->n; i++)
        if (strcmp(st->t[i].name, name) == 0) return &st->t[i];
    return NULL;
}

/* Reads a tensor's raw bytes (malloc'ed). */
static clf_status read_raw(const clf_safetensors *st, const clf_st_info *info, void **out,
                           char *err, size_t es) {
    *out = NULL;
    void *buf = malloc(info->bytes ? (size_t)info->bytes : 1);
    if (!buf) {
        clf__msg(err, es, "out of host memory for tensor \"%s\"", info->name);
        return CLF_ERROR_OUT_OF_MEMORY;
    }
    FILE *f = fopen(st->path, "rb");
    bool ok = f && fseek(f, (long)info->offset, SEEK_SET) == 0 &&
              fread(buf, 1, (size_t)info->bytes, f) == info->bytes;
    if (f) fclose(f);
    if (!ok) {
        free(buf);
        clf__msg(err, es, "%s: cannot read tensor \"%s\" (file changed or unreadable)", st->path,
                 info->name);
        return CLF_ERROR_IO;
    }
    *out = buf;
    return CLF_SUCCESS;
}

static const clf_st_info *lookup(const clf_safetensors *st, const char *name, int64_t count,
                                 char *err, size_t es, clf_status *rc) {
    *rc = CLF_ERROR_INVALID_ARGUMENT;
    if (!st || !name) {
        clf__msg(err, es, "st and name must not be NULL");
        return NULL;
    }
    const clf_st_info *info = clf_safetensors_find(st, name);
    if (!info) {
        clf__msg(err, es, "%s: no tensor named \"%s\"", st->path, name);
        *rc = CLF_ERROR_BAD_FORMAT;
        return NULL;
    }
    if (count != info->numel) {
        clf__msg(err, es, "tensor \"%s\" has %lld elements, not %lld", name, (long long)info->numel,
                 (long long)count);
        *rc = CLF_ERROR_SHAPE_MISMATCH;
        return NULL;
    }
    *rc = CLF_SUCCESS;
    return info;
}

clf_status clf_safetensors_read_f32(const clf_safetensors *st, const char *name, float *dst,
                                    int64_t count, clf_error *e) {
    char *err = e ? e->message : NULL;
    const size_t es = e ? sizeof(e->message) : 0;
    clf_status rc;
    const clf_st_info *info = lookup(st, name, count, err, es, &rc);
    if (!info) return rc;
    if (!dst) return CLF_ERROR_INVALID_ARGUMENT;
    if (info->dtype == CLF_ST_OTHER) {
        clf__msg(err, es, "tensor \"%s\": dtype %s cannot be read as float", name,
                 info->dtype_name);
        return CLF_ERROR_UNSUPPORTED;
    }
    void *raw;
    if ((rc = read_raw(st, info, &raw, err, es)) != CLF_SUCCESS) return rc;
    const unsigned char *p = raw;
    for (int64_t i = 0; i < count; i++) {
        switch (info->dtype) {
        case CLF_ST_F32:
            memcpy(&dst[i], p + 4 * i, 4);
            break;
        case CLF_ST_F16: {
            uint16_t h = (uint16_t)(p[2 * i] | p[2 * i + 1] << 8);
            dst[i] = clf_f16_to_f32(h);
            break;
        }
        case CLF_ST_BF16: {
            uint32_t bits = (uint32_t)(p[2 * i] | p[2 * i + 1] << 8) << 16;
            memcpy(&dst[i], &bits, 4);
            break;
        }
        case CLF_ST_F64: {
            double d;
            memcpy(&d, p + 8 * i, 8);
            dst[i] = (float)d;
            break;
        }
        case CLF_ST_I32: {
            int32_t v;
            memcpy(&v, p + 4 * i, 4);
            dst[i] = (float)v;
            break;
        }
        default: {
            int64_t v;
            memcpy(&v, p + 8 * i, 8);
            dst[i] = (float)v;
            break;
        }
        }
    }
    free(raw);
    return CLF_SUCCESS;
}

clf_status clf_safetensors_read_i32(const clf_safetensors *st, const char *name, int32_t *dst,
                                    int64_t count, clf_error *e) {
    char *err = e ? e->message : NULL;
    const size_t es = e ? sizeof(e->message) : 0;
    clf_status rc;
    const clf_st_info *info = lookup(st, name, count, err, es, &rc);
    if (!info) return rc;
    if (!dst) return CLF_ERROR_INVALID_ARGUMENT;
    if (info->dtype != CLF_ST_I32 && info->dtype != CLF_ST_I64) {
        clf__msg(err, es, "tensor \"%s\": dtype %s is not an integer type", name, info->dtype_name);
        return CLF_ERROR_UNSUPPORTED;
    }
    void *raw;
    if ((rc = read_raw(st, info, &raw, err, es)) != CLF_SUCCESS) return rc;
    const unsigned char *p = raw;
    for (int64_t i = 0; i < count; i++) {
        if (info->dtype == CLF_ST_I32) {
            memcpy(&dst[i], p + 4 * i, 4);
        } else {
            int64_t v;
            memcpy(&v, p + 8 * i, 8);
            if (v < INT32_MIN || v > INT32_MAX) {
                free(raw);
                clf__msg(err, es, "tensor \"%s\": element %lld (%lld) does not fit int32", name,
                         (long long)i, (long long)v);
                return CLF_ERROR_OUT_OF_RANGE;
            }
            dst[i] = (int32_t)v;
        }
    }
    free(raw);
    return CLF_SUCCESS;
}

clf_status clf_safetensors_load(clf_context *ctx, const clf_safetensors *st, const char *name,
                                int ndim, const int64_t *shape, clf_tensor **out) {
    if (!ctx) return CLF_ERROR_INVALID_ARGUMENT;
    clf__clear_error(ctx);
    if (!st || !name || !out)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "st, name and out must not be NULL");
    *out = NULL;
    const clf_st_info *info = clf_safetensors_find(st, name);
    if (!info)
        return clf__fail(ctx, CLF_ERROR_BAD_FORMAT, "%s: missing tensor \"%s\"", st->path, name);
    if (shape) {
        bool same = ndim == info->ndim;
        for (int i = 0; same && i < ndim; i++)
            same = shape[i] == info->shape[i];
        if (!same) {
            char want[128] = "[", got[128] = "[";
            for (int i = 0; i < ndim; i++)
                snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s%lld", i ? ", " : "",
                         (long long)shape[i]);
            for (int i = 0; i < info->ndim; i++)
                snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%lld", i ? ", " : "",
                         (long long)info->shape[i]);
            return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH,
                             "%s: tensor \"%s\" has shape %s], expected %s]", st->path, name, got,
                             want);
        }
    }
    if (info->ndim > CLF_MAX_DIMS)
        return clf__fail(ctx, CLF_ERROR_UNSUPPORTED, "tensor \"%s\": %d dims (tensors hold %d)",
                         name, info->ndim, CLF_MAX_DIMS);
    const bool integer = info->dtype == CLF_ST_I32 || info->dtype == CLF_ST_I64;
    const int64_t n = info->numel;
    void *host = malloc(n ? (size_t)n * 4 : 4);
    if (!host) return clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
    clf_error err;
    clf_status rc = integer ? clf_safetensors_read_i32(st, name, host, n, &err)
                            : clf_safetensors_read_f32(st, name, host, n, &err);
    if (rc != CLF_SUCCESS) {
        free(host);
        return clf__fail(ctx, rc, "%s", err.message);
    }
    int64_t sh[CLF_MAX_DIMS] = {1};
    int nd = info->ndim ? info->ndim : 1;
    for (int i = 0; i < info->ndim; i++)
        sh[i] = info->shape[i];
    clf_tensor *t = NULL;
    if (n == 0) {
        free(host);
        return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH, "tensor \"%s\" is empty", name);
    }
    rc = clf_tensor_create(ctx, integer ? CLF_I32 : CLF_F32, nd, sh, &t);
    if (rc == CLF_SUCCESS) rc = clf_tensor_write(t, host, (size_t)n * 4);
    free(host);
    if (rc != CLF_SUCCESS) {
        clf_tensor_free(t);
        return rc;
    }
    *out = t;
    return CLF_SUCCESS;
}
