/*
 * gguf.h — the GGUF reader's private parts, shared by gguf.c (parsing, open/free) and
 * gguf_meta.c (metadata, tensor lookup, loads).
 */
#ifndef CLF_GGUF_H
#define CLF_GGUF_H

#include "internal.h"

/* Bytes of one value of a fixed-size metadata type, 0 for strings, arrays and unknown types. */
static inline uint64_t clf__gguf_value_size(uint32_t t) {
    static const unsigned char sz[13] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return t < 13 ? sz[t] : 0;
}

typedef struct gguf_kv {
    char *key;
    uint32_t type;
    uint64_t at;       /* the value's offset (an array's: its first element) */
    uint32_t elem;     /* arrays: element type */
    uint64_t count;    /* arrays: element count */
    uint64_t *strings; /* string arrays: each element's offset (its u64 length first) */
} gguf_kv;

struct clf_gguf {
    const unsigned char *data; /* the mapping (or the fuzzer's buffer) */
    size_t size;
    int mapped;
    uint32_t version;
    uint64_t alignment, data_start;
    size_t n_kv, n_t;
    gguf_kv *kv;
    clf_gguf_tensor *t;
    size_t *by_name; /* tensor indices sorted by name (lookup) */
};

/* Little-endian reads (the format is little-endian; any host). */
static inline uint32_t clf__gguf_rd32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t clf__gguf_rd64(const unsigned char *p) {
    return (uint64_t)clf__gguf_rd32(p) | (uint64_t)clf__gguf_rd32(p + 4) << 32;
}

/* The pair of a key (binary search over the sorted keys), NULL if absent. */
const gguf_kv *clf__gguf_find_kv(const clf_gguf *g, const char *key);
/* e->message = the formatted text (nothing when e is NULL). */
void clf__gguf_set_err(clf_error *e, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#endif
