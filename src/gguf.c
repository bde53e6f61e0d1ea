/*
 * gguf.c — a validating reader of GGUF files (versions 2 and 3, little-endian), memory-mapped.
 *
 * Layout: "GGUF", u32 version, u64 tensor count, u64 metadata count; each metadata pair a string
 * key (u64 length, bytes), a u32 value type and the value (a string; an array: u32 element type,
 * u64 count, the elements, arrays nested in arrays); each tensor info a string name, u32 n_dims,
 * u64 ne[n_dims], u32 ggml type, u64 offset into the data; the data at the next multiple of
 * general.alignment (u32, default 32), each tensor's offset a multiple of it. clf__gguf_parse
 * checks all of it against the buffer before anything is used; the fuzz target runs it on any
 * bytes. The metadata getters, tensor lookup and loads: gguf_meta.c.
 */
#include "gguf.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define GGUF_MAX_DEPTH 8 /* arrays of arrays ... */

/* ggml's types (facts of the format: ggml.h's numbering, ggml-common.h's block sizes): name,
 * elements per block, bytes per block; numbers ggml has retired are NULL. */
static const struct {
    const char *name;
    int block, bytes;
} k_ggml_types[] = {
    [0] = {"F32", 1, 4},         [1] = {"F16", 1, 2},         [2] = {"Q4_0", 32, 18},
    [3] = {"Q4_1", 32, 20},      [6] = {"Q5_0", 32, 22},      [7] = {"Q5_1", 32, 24},
    [8] = {"Q8_0", 32, 34},      [9] = {"Q8_1", 32, 40},      [10] = {"Q2_K", 256, 84},
    [11] = {"Q3_K", 256, 110},   [12] = {"Q4_K", 256, 144},   [13] = {"Q5_K", 256, 176},
    [14] = {"Q6_K", 256, 210},   [15] = {"Q8_K", 256, 292},   [16] = {"IQ2_XXS", 256, 66},
    [17] = {"IQ2_XS", 256, 74},  [18] = {"IQ3_XXS", 256, 98}, [19] = {"IQ1_S", 256, 50},
    [20] = {"IQ4_NL", 32, 18},   [21] = {"IQ3_S", 256, 110},  [22] = {"IQ2_S", 256, 82},
    [23] = {"IQ4_XS", 256, 136}, [24] = {"I8", 1, 1},         [25] = {"I16", 1, 2},
    [26] = {"I32", 1, 4},        [27] = {"I64", 1, 8},        [28] = {"F64", 1, 8},
    [29] = {"IQ1_M", 256, 56},   [30] = {"BF16", 1, 2},       [34] = {"TQ1_0", 256, 54},
    [35] = {"TQ2_0", 256, 66},   [39] = {"MXFP4", 32, 17},    [40] = {"NVFP4", 64, 36},
    [41] = {"Q1_0", 128, 18},
};
#define N_GGML_TYPES (int)(sizeof(k_ggml_types) / sizeof(k_ggml_types[0]))

/* ---------------------------------------------------------------- parsing */

typedef struct cursor {
    const unsigned char *p;
    size_t size, at;
    char *err;
    size_t es;
} cursor;

static bool need(cursor *c, uint64_t n, const char *what) {
    if (n <= c->size - c->at) return true;
    clf__msg(c->err, c->es, "truncated at byte %zu: %s needs %llu bytes, %zu remain", c->at, what,
             (unsigned long long)n, c->size - c->at);
    return false;
}
static bool u32(cursor *c, uint32_t *v, const char *what) {
    if (!need(c, 4, what)) return false;
    *v = clf__gguf_rd32(c->p + c->at);
    c->at += 4;
    return true;
}
static bool u64(cursor *c, uint64_t *v, const char *what) {
    if (!need(c, 8, what)) return false;
    *v = clf__gguf_rd64(c->p + c->at);
    c->at += 8;
    return true;
}
/* A string: its length, then that many bytes (checked against the file). */
static bool str(cursor *c, uint64_t *at, uint64_t *len, const char *what) {
    if (!u64(c, len, what) || !need(c, *len, what)) return false;
    *at = c->at;
    c->at += (size_t)*len;
    return true;
}

/* Skips one value of type t (an array's elements recursively), checking it fits. */
static bool skip_value(cursor *c, uint32_t t, int depth, const char *key) {
    if (t == CLF_GGUF_STRING) {
        uint64_t at, len;
        return str(c, &at, &len, key);
    }
    if (t == CLF_GGUF_ARRAY) {
        uint32_t et;
        uint64_t n;
        if (depth >= GGUF_MAX_DEPTH) {
            clf__msg(c->err, c->es, "key \"%s\": arrays nested deeper than %d", key,
                     GGUF_MAX_DEPTH);
            return false;
        }
        if (!u32(c, &et, key) || !u64(c, &n, key)) return false;
        const uint64_t es = clf__gguf_value_size(et);
        if (es) { /* fixed-size elements: one check */
            if (n > (c->size - c->at) / es) {
                clf__msg(c->err, c->es,
                         "key \"%s\": an array of %llu elements of %llu bytes "
                         "passes the end of the file",
                         key, (unsigned long long)n, (unsigned long long)es);
                return false;
            }
            c->at += (size_t)(n * es);
            return true;
        }
        if (et != CLF_GGUF_STRING && et != CLF_GGUF_ARRAY) {
            clf__msg(c->err, c->es, "key \"%s\": unknown array element type %u", key, et);
            return false;
        }
        /* strings or arrays: each at least 8 bytes (bounds n before looping) */
        if (n > (c->size - c->at) / 8) {
            clf__msg(c->err, c->es, "key \"%s\": %llu array elements cannot fit in the file", key,
                     (unsigned long long)n);
            return false;
        }
        for (uint64_t i = 0; i < n; i++)
            if (!skip_value(c, et, depth + 1, key)) return false;
        return true;
    }
    if (!clf__gguf_value_size(t)) {
        clf__msg(c->err, c->es, "key \"%s\": unknown value type %u", key, t);
        return false;
    }
    return need(c, clf__gguf_value_size(t), key) &&
           (c->at += (size_t)clf__gguf_value_size(t), true);
}

static int cmp_kv(const void *a, const void *b) {
    return strcmp(((const gguf_kv *)a)->key, ((const gguf_kv *)b)->key);
}
static int cmp_name_ptr(const void *a, const void *b) {
    return strcmp((*(const clf_gguf_tensor *const *)a)->name,
                  (*(const clf_gguf_tensor *const *)b)->name);
}

/* A key or name copied out of the file, NUL-terminated; NULL for one holding a NUL byte. */
static char *copy_name(const unsigned char *p, uint64_t len) {
    if (memchr(p, 0, (size_t)len)) return NULL;
    char *s = malloc((size_t)len + 1);
    if (s) {
        memcpy(s, p, (size_t)len);
        s[len] = '\0';
    }
    return s;
}

static void gguf_release(clf_gguf *g) {
    for (size_t i = 0; g->kv && i < g->n_kv; i++) {
        free(g->kv[i].key);
        free(g->kv[i].strings);
    }
    for (size_t i = 0; g->t && i < g->n_t; i++)
        free((char *)g->t[i].name);
    free(g->kv);
    free(g->t);
    free(g->by_name);
}

static clf_status parse_kvs(clf_gguf *g, cursor *c, uint64_t n_kv) {
    /* each pair takes at least 8 (key length) + 4 (type) + 1 bytes */
    if (n_kv > (c->size - c->at) / 13) {
        clf__msg(c->err, c->es, "%llu metadata pairs cannot fit in the file",
                 (unsigned long long)n_kv);
        return CLF_ERROR_BAD_FORMAT;
    }
    g->kv = calloc(n_kv ? (size_t)n_kv : 1, sizeof(gguf_kv));
    if (!g->kv) return CLF_ERROR_OUT_OF_MEMORY;
    for (uint64_t i = 0; i < n_kv; i++) {
        gguf_kv *kv = &g->kv[i];
        uint64_t at, len;
        char what[48];
        snprintf(what, sizeof(what), "metadata key %llu", (unsigned long long)i);
        if (!str(c, &at, &len, what)) return CLF_ERROR_BAD_FORMAT;
        if (!(kv->key = copy_name(c->p + at, len))) {
            clf__msg(c->err, c->es, "%s holds a NUL byte (or out of memory)", what);
            return CLF_ERROR_BAD_FORMAT;
        }
        g->n_kv = (size_t)i + 1;
        if (!u32(c, &kv->type, kv->key)) return CLF_ERROR_BAD_FORMAT;
        if (kv->type == CLF_GGUF_ARRAY) {
            if (!u32(c, &kv->elem, kv->key) || !u64(c, &kv->count, kv->key))
                return CLF_ERROR_BAD_FORMAT;
            kv->at = c->at;
            c->at -= 12; /* skip_value reads the element type and count again */
            const size_t before = c->at;
            if (!skip_value(c, CLF_GGUF_ARRAY, 0, kv->key)) return CLF_ERROR_BAD_FORMAT;
            if (kv->elem == CLF_GGUF_STRING) { /* each element's offset, for random access */
                kv->strings = malloc(sizeof(uint64_t) * (size_t)(kv->count ? kv->count : 1));
                if (!kv->strings) return CLF_ERROR_OUT_OF_MEMORY;
                uint64_t o = before + 12;
                for (uint64_t e = 0; e < kv->count; e++) {
                    kv->strings[e] = o;
                    o += 8 + clf__gguf_rd64(c->p + o); /* checked by skip_value */
                }
            }
        } else {
            kv->at = c->at;
            if (!skip_value(c, kv->type, 0, kv->key)) return CLF_ERROR_BAD_FORMAT;
        }
    }
    qsort(g->kv, g->n_kv, sizeof(gguf_kv), cmp_kv);
    for (size_t i = 1; i < g->n_kv; i++)
        if (strcmp(g->kv[i - 1].key, g->kv[i].key) == 0) {
            clf__msg(c->err, c->es, "metadata key \"%s\" appears twice", g->kv[i].key);
            return CLF_ERROR_BAD_FORMAT;
        }
    return CLF_SUCCESS;
}

const gguf_kv *clf__gguf_find_kv(const clf_gguf *g, const char *key) {
    size_t lo = 0, hi = g->n_kv;
    while (lo < hi) {
        const size_t mid = (lo + hi) / 2;
        const int r = strcmp(g->kv[mid].key, key);
        if (r == 0) return &g->kv[mid];
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static int cmp_offset(const void *a, const void *b) {
    const clf_gguf_tensor *x = *(const clf_gguf_tensor *const *)a,
                          *y = *(const clf_gguf_tensor *const *)b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static clf_status parse_tensors(clf_gguf *g, cursor *c, uint64_t n_t) {
    /* each info takes at least 8 + 4 + 8 + 4 + 8 bytes */
    if (n_t > (c->size - c->at) / 32) {
        clf__msg(c->err, c->es, "%llu tensor infos cannot fit in the file",
                 (unsigned long long)n_t);
        return CLF_ERROR_BAD_FORMAT;
    }
    g->t = calloc(n_t ? (size_t)n_t : 1, sizeof(clf_gguf_tensor));
    g->by_name = malloc(sizeof(size_t) * (size_t)(n_t ? n_t : 1));
    if (!g->t || !g->by_name) return CLF_ERROR_OUT_OF_MEMORY;
    for (uint64_t i = 0; i < n_t; i++) {
        clf_gguf_tensor *t = &g->t[i];
        uint64_t at, len;
        char what[48];
        snprintf(what, sizeof(what), "tensor info %llu", (unsigned long long)i);
        if (!str(c, &at, &len, what)) return CLF_ERROR_BAD_FORMAT;
        if (!(t->name = copy_name(c->p + at, len))) {
            clf__msg(c->err, c->es, "%s: its name holds a NUL byte (or out of memory)", what);
            return CLF_ERROR_BAD_FORMAT;
        }
        g->n_t = (size_t)i + 1;
        uint32_t nd, type;
        if (!u32(c, &nd, t->name)) return CLF_ERROR_BAD_FORMAT;
        if (nd < 1 || nd > 4) {
            clf__msg(c->err, c->es, "tensor \"%s\": %u dimensions (1 to 4)", t->name, nd);
            return CLF_ERROR_BAD_FORMAT;
        }
        t->ndim = (int)nd;
        uint64_t numel = 1;
        for (uint32_t d = 0; d < nd; d++) {
            uint64_t ne;
            if (!u64(c, &ne, t->name)) return CLF_ERROR_BAD_FORMAT;
            if (ne < 1 || ne > (uint64_t)INT64_MAX / numel) {
                clf__msg(c->err, c->es, "tensor \"%s\": dimension %u is %llu", t->name, d,
                         (unsigned long long)ne);
                return CLF_ERROR_BAD_FORMAT;
            }
            t->ne[d] = (int64_t)ne;
            numel *= ne;
        }
        if (!u32(c, &type, t->name) || !u64(c, &t->offset, t->name)) return CLF_ERROR_BAD_FORMAT;
        if (type >= (uint32_t)N_GGML_TYPES || !k_ggml_types[type].name) {
            clf__msg(c->err, c->es, "tensor \"%s\": unknown ggml type %u", t->name, type);
            return CLF_ERROR_BAD_FORMAT;
        }
        t->ggml_type = (int)type;
        const clf_dtype_traits *tr = clf__dtype_from_gguf(type);
        t->dtype = tr ? (int)tr->dtype : -1;
        const uint64_t blk = (uint64_t)k_ggml_types[type].block;
        if ((uint64_t)t->ne[0] % blk) {
            clf__msg(c->err, c->es,
                     "tensor \"%s\": rows of %lld elements are not whole %s blocks "
                     "of %llu",
                     t->name, (long long)t->ne[0], k_ggml_types[type].name,
                     (unsigned long long)blk);
            return CLF_ERROR_BAD_FORMAT;
        }
        const uint64_t blocks = numel / blk, bb = (uint64_t)k_ggml_types[type].bytes;
        if (blocks > UINT64_MAX / bb) {
            clf__msg(c->err, c->es, "tensor \"%s\": size overflows", t->name);
            return CLF_ERROR_BAD_FORMAT;
        }
        t->bytes = blocks * bb;
    }
    return CLF_SUCCESS;
}

/* Sorts the name index and refuses duplicates; places the data and checks every tensor. */
static clf_status place_tensors(clf_gguf *g, cursor *c) {
    /* sorted pointers: by name (the lookup index, duplicates), then by offset (overlaps) */
    const clf_gguf_tensor **ptrs = malloc(sizeof(*ptrs) * (g->n_t ? g->n_t : 1));
    if (!ptrs) return CLF_ERROR_OUT_OF_MEMORY;
    for (size_t i = 0; i < g->n_t; i++)
        ptrs[i] = &g->t[i];
    clf_status st = CLF_SUCCESS;
    qsort(ptrs, g->n_t, sizeof(*ptrs), cmp_name_ptr);
    for (size_t i = 0; i < g->n_t; i++) {
        g->by_name[i] = (size_t)(ptrs[i] - g->t);
        if (i && strcmp(ptrs[i - 1]->name, ptrs[i]->name) == 0 && st == CLF_SUCCESS) {
            clf__msg(c->err, c->es, "tensor \"%s\" appears twice", ptrs[i]->name);
            st = CLF_ERROR_BAD_FORMAT;
        }
    }
    /* the data: at the next multiple of the alignment after the infos */
    const uint64_t a = g->alignment;
    const uint64_t start = ((uint64_t)c->at + a - 1) / a * a;
    if (st == CLF_SUCCESS && g->n_t && start > c->size) {
        clf__msg(c->err, c->es, "the data section (at %llu) starts past the end of the file",
                 (unsigned long long)start);
        st = CLF_ERROR_BAD_FORMAT;
    }
    g->data_start = start;
    const uint64_t room = start <= c->size ? c->size - start : 0;
    for (size_t i = 0; st == CLF_SUCCESS && i < g->n_t; i++) {
        clf_gguf_tensor *t = &g->t[i];
        if (t->offset % a) {
            clf__msg(c->err, c->es,
                     "tensor \"%s\": offset %llu is not a multiple of the "
                     "alignment %llu",
                     t->name, (unsigned long long)t->offset, (unsigned long long)a);
            st = CLF_ERROR_BAD_FORMAT;
        } else if (t->offset > room || t->bytes > room - t->offset) {
            clf__msg(c->err, c->es,
                     "tensor \"%s\": %llu bytes at data offset %llu pass the end "
                     "of the file (%llu bytes of data)",
                     t->name, (unsigned long long)t->bytes, (unsigned long long)t->offset,
                     (unsigned long long)room);
            st = CLF_ERROR_BAD_FORMAT;
        } else {
            t->offset += start;
            t->data = g->data + t->offset;
        }
    }
    /* no two tensors overlap */
    qsort(ptrs, g->n_t, sizeof(*ptrs), cmp_offset);
    for (size_t i = 1; st == CLF_SUCCESS && i < g->n_t; i++)
        if (ptrs[i - 1]->offset + ptrs[i - 1]->bytes > ptrs[i]->offset) {
            clf__msg(c->err, c->es, "tensors \"%s\" and \"%s\" overlap", ptrs[i - 1]->name,
                     ptrs[i]->name);
            st = CLF_ERROR_BAD_FORMAT;
        }
    free(ptrs);
    return st;
}

clf_status clf__gguf_parse(const unsigned char *data, size_t size, clf_gguf *g, char *err,
                           size_t es) {
    memset(g, 0, sizeof(*g));
    g->data = data;
    g->size = size;
    cursor c = {data, size, 0, err, es};
    uint32_t magic, version;
    uint64_t n_t, n_kv;
    if (!u32(&c, &magic, "the magic")) return CLF_ERROR_BAD_FORMAT;
    if (magic != 0x46554747u) { /* "GGUF" */
        clf__msg(err, es, "not a GGUF file (no \"GGUF\" magic)");
        return CLF_ERROR_BAD_FORMAT;
    }
    if (!u32(&c, &version, "the version")) return CLF_ERROR_BAD_FORMAT;
    if (version != 2 && version != 3) {
        clf__msg(err, es, "GGUF version %u%s: clformer reads versions 2 and 3", version,
                 version > 0xffff ? " (a big-endian file?)" : "");
        return CLF_ERROR_BAD_FORMAT;
    }
    g->version = version;
    if (!u64(&c, &n_t, "the tensor count") || !u64(&c, &n_kv, "the metadata count"))
        return CLF_ERROR_BAD_FORMAT;
    clf_status st = parse_kvs(g, &c, n_kv);
    g->alignment = 32;
    const gguf_kv *al = st == CLF_SUCCESS ? clf__gguf_find_kv(g, "general.alignment") : NULL;
    if (al) {
        const uint32_t a = al->type == CLF_GGUF_U32 ? clf__gguf_rd32(data + al->at) : 0;
        if (a == 0 || (a & (a - 1)) || a > (1u << 24)) {
            clf__msg(err, es, "key \"general.alignment\": must be a u32 power of two up to 2^24");
            st = CLF_ERROR_BAD_FORMAT;
        }
        g->alignment = a;
    }
    if (st == CLF_SUCCESS) st = parse_tensors(g, &c, n_t);
    if (st == CLF_SUCCESS) st = place_tensors(g, &c);
    if (st == CLF_ERROR_OUT_OF_MEMORY) clf__msg(err, es, "out of host memory");
    if (st != CLF_SUCCESS) {
        gguf_release(g);
        memset(g, 0, sizeof(*g));
    }
    return st;
}

void clf__gguf_set_err(clf_error *e, const char *fmt, ...) {
    if (!e) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof(e->message), fmt, ap);
    va_end(ap);
}

clf_status clf_gguf_open(const char *path, clf_gguf **out, clf_error *e) {
    if (e) e->message[0] = '\0';
    if (!path || !out) {
        clf__gguf_set_err(e, "clf_gguf_open: path and out must not be NULL");
        return CLF_ERROR_INVALID_ARGUMENT;
    }
    *out = NULL;
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        if (fd >= 0) close(fd);
        clf__gguf_set_err(e, "%s: cannot open as a file", path);
        return CLF_ERROR_IO;
    }
    const size_t size = (size_t)sb.st_size;
    void *map = size ? mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
    close(fd);
    if (size && map == MAP_FAILED) {
        clf__gguf_set_err(e, "%s: cannot map the file", path);
        return CLF_ERROR_IO;
    }
    clf_gguf *g = malloc(sizeof(*g));
    if (!g) {
        if (map) munmap(map, size);
        clf__gguf_set_err(e, "out of host memory");
        return CLF_ERROR_OUT_OF_MEMORY;
    }
    char why[1024] = "";
    const clf_status st = clf__gguf_parse(map ? map : (const void *)"", size, g, why, sizeof(why));
    if (st != CLF_SUCCESS) {
        if (map) munmap(map, size);
        free(g);
        clf__gguf_set_err(e, "%s: %s", path, why);
        return st;
    }
    g->mapped = map != NULL;
    *out = g;
    return CLF_SUCCESS;
}

void clf__gguf_release(clf_gguf *g) {
    gguf_release(g);
}

void clf_gguf_free(clf_gguf *g) {
    if (!g) return;
    gguf_release(g);
    if (g->mapped) munmap((void *)g->data, g->size);
    free(g);
}

const char *clf_gguf_type_name(int ggml_type) {
    return ggml_type >= 0 && ggml_type < N_GGML_TYPES ? k_ggml_types[ggml_type].name : NULL;
}
