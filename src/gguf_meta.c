/*
 * gguf_meta.c — a parsed GGUF file's metadata (typed getters, arrays by element), its tensors
 * (lookup by name) and clf_gguf_load; parsing and mapping are gguf.c's.
 */
#define _DEFAULT_SOURCE /* madvise */
#include "gguf.h"

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---------------------------------------------------------------- metadata */

uint32_t clf_gguf_version(const clf_gguf *g) {
    return g ? g->version : 0;
}
size_t clf_gguf_kv_count(const clf_gguf *g) {
    return g ? g->n_kv : 0;
}
const char *clf_gguf_key(const clf_gguf *g, size_t i) {
    return g && i < g->n_kv ? g->kv[i].key : NULL;
}
clf_gguf_type clf_gguf_kv_type(const clf_gguf *g, size_t i) {
    return g && i < g->n_kv ? (clf_gguf_type)g->kv[i].type : (clf_gguf_type)-1;
}
int64_t clf_gguf_find_key(const clf_gguf *g, const char *key) {
    const gguf_kv *kv = g && key ? clf__gguf_find_kv(g, key) : NULL;
    return kv ? (int64_t)(kv - g->kv) : -1;
}

/* A value of fixed-size type t at p as an integer (bool too); false for floats or a U64 past
 * INT64_MAX. */
static bool int_at(const unsigned char *p, uint32_t t, int64_t *v) {
    switch (t) {
    case CLF_GGUF_U8:
    case CLF_GGUF_BOOL:
        *v = p[0];
        return true;
    case CLF_GGUF_I8:
        *v = (int8_t)p[0];
        return true;
    case CLF_GGUF_U16:
        *v = (uint16_t)(p[0] | p[1] << 8);
        return true;
    case CLF_GGUF_I16:
        *v = (int16_t)(uint16_t)(p[0] | p[1] << 8);
        return true;
    case CLF_GGUF_U32:
        *v = clf__gguf_rd32(p);
        return true;
    case CLF_GGUF_I32:
        *v = (int32_t)clf__gguf_rd32(p);
        return true;
    case CLF_GGUF_U64:
        if (clf__gguf_rd64(p) > (uint64_t)INT64_MAX) return false;
        *v = (int64_t)clf__gguf_rd64(p);
        return true;
    case CLF_GGUF_I64:
        *v = (int64_t)clf__gguf_rd64(p);
        return true;
    default:
        return false;
    }
}
static bool float_at(const unsigned char *p, uint32_t t, double *v) {
    int64_t i;
    if (t == CLF_GGUF_F32) {
        const uint32_t b = clf__gguf_rd32(p);
        float f;
        memcpy(&f, &b, 4);
        *v = f;
        return true;
    }
    if (t == CLF_GGUF_F64) {
        const uint64_t b = clf__gguf_rd64(p);
        memcpy(v, &b, 8);
        return true;
    }
    if (t == CLF_GGUF_U64) {
        *v = (double)clf__gguf_rd64(p);
        return true;
    }
    if (!int_at(p, t, &i)) return false;
    *v = (double)i;
    return true;
}

/* The pair of key, or an error (not found; or not of the kind `want` names, for messages). */
static clf_status lookup(const clf_gguf *g, const char *key, const gguf_kv **kv, clf_error *e) {
    if (e) e->message[0] = '\0';
    if (!g || !key) {
        clf__gguf_set_err(e, "GGUF: NULL argument");
        return CLF_ERROR_INVALID_ARGUMENT;
    }
    if (!(*kv = clf__gguf_find_kv(g, key))) {
        clf__gguf_set_err(e, "GGUF: no key \"%s\"", key);
        return CLF_ERROR_NOT_FOUND;
    }
    return CLF_SUCCESS;
}
static clf_status wrong_type(const char *key, const char *want, clf_error *e) {
    clf__gguf_set_err(e, "GGUF: key \"%s\" is not %s", key, want);
    return CLF_ERROR_BAD_FORMAT;
}

clf_status clf_gguf_get_int(const clf_gguf *g, const char *key, int64_t *out, clf_error *e) {
    const gguf_kv *kv;
    clf_status st = lookup(g, key, &kv, e);
    if (st != CLF_SUCCESS) return st;
    if (!out || !int_at(g->data + kv->at, kv->type, out))
        return wrong_type(key, "an integer (of int64's range)", e);
    return CLF_SUCCESS;
}

clf_status clf_gguf_get_float(const clf_gguf *g, const char *key, double *out, clf_error *e) {
    const gguf_kv *kv;
    clf_status st = lookup(g, key, &kv, e);
    if (st != CLF_SUCCESS) return st;
    if (!out || kv->type == CLF_GGUF_BOOL || !float_at(g->data + kv->at, kv->type, out))
        return wrong_type(key, "a number", e);
    return CLF_SUCCESS;
}

clf_status clf_gguf_get_string(const clf_gguf *g, const char *key, const char **s, size_t *len,
                               clf_error *e) {
    const gguf_kv *kv;
    clf_status st = lookup(g, key, &kv, e);
    if (st != CLF_SUCCESS) return st;
    if (!s || !len || kv->type != CLF_GGUF_STRING) return wrong_type(key, "a string", e);
    *len = (size_t)clf__gguf_rd64(g->data + kv->at);
    *s = (const char *)g->data + kv->at + 8;
    return CLF_SUCCESS;
}

clf_status clf_gguf_get_array(const clf_gguf *g, const char *key, clf_gguf_type *elem,
                              uint64_t *count, clf_error *e) {
    const gguf_kv *kv;
    clf_status st = lookup(g, key, &kv, e);
    if (st != CLF_SUCCESS) return st;
    if (kv->type != CLF_GGUF_ARRAY) return wrong_type(key, "an array", e);
    if (elem) *elem = (clf_gguf_type)kv->elem;
    if (count) *count = kv->count;
    return CLF_SUCCESS;
}

/* Element i of the array under key, of fixed-size element type: its bytes. */
static clf_status element(const clf_gguf *g, const char *key, uint64_t i, const gguf_kv **kv,
                          const unsigned char **p, clf_error *e) {
    clf_status st = lookup(g, key, kv, e);
    if (st != CLF_SUCCESS) return st;
    if ((*kv)->type != CLF_GGUF_ARRAY) return wrong_type(key, "an array", e);
    if (i >= (*kv)->count) {
        clf__gguf_set_err(e, "GGUF: key \"%s\" has no element %llu", key, (unsigned long long)i);
        return CLF_ERROR_OUT_OF_RANGE;
    }
    const uint64_t es = clf__gguf_value_size((*kv)->elem);
    *p = es ? g->data + (*kv)->at + i * es : NULL;
    return CLF_SUCCESS;
}

clf_status clf_gguf_array_string(const clf_gguf *g, const char *key, uint64_t i, const char **s,
                                 size_t *len, clf_error *e) {
    const gguf_kv *kv;
    const unsigned char *p;
    clf_status st = element(g, key, i, &kv, &p, e);
    if (st != CLF_SUCCESS) return st;
    if (kv->elem != CLF_GGUF_STRING || !s || !len) return wrong_type(key, "an array of strings", e);
    *len = (size_t)clf__gguf_rd64(g->data + kv->strings[i]);
    *s = (const char *)g->data + kv->strings[i] + 8;
    return CLF_SUCCESS;
}

clf_status clf_gguf_array_float(const clf_gguf *g, const char *key, uint64_t i, double *out,
                                clf_error *e) {
    const gguf_kv *kv;
    const unsigned char *p;
    clf_status st = element(g, key, i, &kv, &p, e);
    if (st != CLF_SUCCESS) return st;
    if (!p || !out || kv->elem == CLF_GGUF_BOOL || !float_at(p, kv->elem, out))
        return wrong_type(key, "an array of numbers", e);
    return CLF_SUCCESS;
}

clf_status clf_gguf_array_int(const clf_gguf *g, const char *key, uint64_t i, int64_t *out,
                              clf_error *e) {
    const gguf_kv *kv;
    const unsigned char *p;
    clf_status st = element(g, key, i, &kv, &p, e);
    if (st != CLF_SUCCESS) return st;
    if (!p || !out || !int_at(p, kv->elem, out)) return wrong_type(key, "an array of integers", e);
    return CLF_SUCCESS;
}

/* ---------------------------------------------------------------- tensors */

size_t clf_gguf_tensor_count(const clf_gguf *g) {
    return g ? g->n_t : 0;
}
const clf_gguf_tensor *clf_gguf_tensor_at(const clf_gguf *g, size_t i) {
    return g && i < g->n_t ? &g->t[i] : NULL;
}
const clf_gguf_tensor *clf_gguf_tensor_find(const clf_gguf *g, const char *name) {
    if (!g || !name) return NULL;
    size_t lo = 0, hi = g->n_t;
    while (lo < hi) {
        const size_t mid = (lo + hi) / 2;
        const clf_gguf_tensor *t = &g->t[g->by_name[mid]];
        const int r = strcmp(t->name, name);
        if (r == 0) return t;
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* Drops the mapping's pages wholly inside [p, p + n) from this process's resident set once
 * their bytes are on the device (the file stays in the page cache; a later read faults them back
 * in), so a load's resident peak holds one tensor of the file at a time, not all of it. */
void clf__release_pages(const void *p, size_t n) {
#ifdef MADV_DONTNEED
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), a = (uintptr_t)p;
    const uintptr_t lo = (a + page - 1) / page * page, hi = (a + n) / page * page;
    if (page > 0 && hi > lo) (void)madvise((void *)lo, hi - lo, MADV_DONTNEED);
#else
    (void)p;
    (void)n;
#endif
}

clf_status clf_gguf_load(clf_context *ctx, const clf_gguf *g, const char *name, clf_tensor **out) {
    if (!ctx) return CLF_ERROR_INVALID_ARGUMENT;
    clf__clear_error(ctx);
    if (!g || !name || !out)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "clf_gguf_load: NULL argument");
    *out = NULL;
    const clf_gguf_tensor *t = clf_gguf_tensor_find(g, name);
    if (!t) return clf__fail(ctx, CLF_ERROR_NOT_FOUND, "GGUF: no tensor \"%s\"", name);
    if (t->dtype < 0)
        return clf__fail(ctx, CLF_ERROR_UNSUPPORTED,
                         "GGUF: tensor \"%s\" is %s, a type clformer does not read (F32, F16, "
                         "BF16, Q8_0, Q4_0, Q4_K, Q6_K)",
                         name, clf_gguf_type_name(t->ggml_type));
    int64_t shape[4];
    for (int d = 0; d < t->ndim; d++)
        shape[d] = t->ne[t->ndim - 1 - d];
    clf_tensor *x = NULL;
    clf_status st = clf_tensor_create(ctx, (clf_dtype)t->dtype, t->ndim, shape, &x);
    if (st == CLF_SUCCESS && clf_tensor_bytes(x) != t->bytes)
        st = clf__fail(ctx, CLF_ERROR_INTERNAL, "GGUF: tensor \"%s\": sizes disagree", name);
    if (st == CLF_SUCCESS) st = clf_tensor_write(x, t->data, (size_t)t->bytes);
    if (st == CLF_SUCCESS) clf__release_pages(t->data, (size_t)t->bytes);
    if (st != CLF_SUCCESS) {
        clf_tensor_free(x);
        return st;
    }
    *out = x;
    return CLF_SUCCESS;
}

size_t clf__gguf_struct_size(void) {
    return sizeof(clf_gguf);
}
