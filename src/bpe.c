/*
 * bpe.c — BPE tokenizers from Hugging Face's tokenizer.json (see io.h for what is supported):
 * loading (the vocabulary and merges into hash tables; the normalizer, pre-tokenizer, decoder and
 * post-processor into a small pipeline description, refusing what it does not compute),
 * encoding (added tokens, normalizer, split pattern, byte-level or metaspace mapping, BPE merges
 * by rank with a heap, byte fallback), decoding and streaming decoding.
 *
 * The split patterns are matched by hand-written code, one function per pattern string clformer
 * knows (GPT-2's, Llama 3's, Qwen2's), following the regex's ordered alternation and its
 * backtracking (e.g. \s+(?!\S) leaves the last space of a run to the word after it).
 */
#include "internal.h"
#include "unicode.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOKENIZER_MAX_BYTES (256u << 20)

/* Returns the status of a call from the caller on failure. */
#define CLF_TRY_E(call)                                                                            \
    do {                                                                                           \
        clf_status try_st_ = (call);                                                               \
        if (try_st_ != CLF_SUCCESS) return try_st_;                                                \
    } while (0)
#define META_MAX 8 /* bytes of a metaspace replacement */

typedef enum { SPLIT_NONE = 0, SPLIT_GPT2, SPLIT_LLAMA3, SPLIT_QWEN2 } split_kind;
typedef enum { NORM_PREPEND, NORM_REPLACE, NORM_NFC } norm_kind;
typedef enum {
    DEC_REPLACE,
    DEC_BYTE_FALLBACK,
    DEC_FUSE,
    DEC_STRIP,
    DEC_BYTE_LEVEL,
    DEC_METASPACE
} dec_kind;

typedef struct norm_step {
    norm_kind kind;
    char *from, *to; /* REPLACE: every `from` by `to`; PREPEND: `to` in front */
} norm_step;

typedef struct dec_step {
    dec_kind kind;
    char *from, *to;     /* REPLACE; METASPACE: from = the replacement */
    uint32_t strip_char; /* STRIP */
    int strip_start, strip_stop;
    int prepend; /* METASPACE: 0 never (else strip the first token's leading space) */
} dec_step;

typedef struct added_tok {
    char *content;
    size_t len;
    int32_t id;
    int special;
} added_tok;

struct clf_bpe {
    char **tok; /* id -> token (NUL-terminated), NULL for unused ids */
    int64_t n_tok;
    int32_t *slots; /* token -> id, open addressing */
    uint64_t mask;
    uint64_t *mkey; /* merges: (left id << 32 | right id) -> rank, merged id */
    int32_t *mrank, *mnew;
    uint64_t mmask;
    added_tok *add;
    size_t n_add;
    norm_step norm[4];
    int n_norm;
    split_kind split;
    int byte_level, bl_prefix_space;
    int metaspace, meta_prepend, meta_split; /* prepend: 0 never, 1 first, 2 always */
    char meta[META_MAX];
    int byte_fallback, fuse_unk, ignore_merges;
    int32_t unk;
    int32_t pre[4], post[4];
    int n_pre, n_post;
    dec_step dec[8];
    int n_dec, has_decoder;
    int32_t byte_tok[256];   /* the <0xXX> tokens (byte fallback), -1 if absent */
    uint32_t byte_char[256]; /* byte-level alphabet: byte -> code point */
    int16_t char_byte[324];  /* and back (code points < 324), -1 if none */
};

static void set_err(clf_error *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_err(clf_error *e, const char *fmt, ...) {
    if (!e) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof(e->message), fmt, ap);
    va_end(ap);
}

/* ---------------------------------------------------------------- growable byte buffer */

typedef struct buf {
    char *p;
    size_t n, cap;
    int oom;
} buf;

static void buf_put(buf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->n + n + 5 > b->cap) { /* 4 spare bytes past the end: UTF-8 reads stop at the NUL */
        size_t c = b->cap ? b->cap * 2 : 64;
        while (c < b->n + n + 5)
            c *= 2;
        char *q = realloc(b->p, c);
        if (!q) {
            b->oom = 1;
            return;
        }
        b->p = q;
        b->cap = c;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    memset(b->p + b->n, 0, 5);
}
static void buf_str(buf *b, const char *s) {
    buf_put(b, s, strlen(s));
}
static void buf_cp(buf *b, uint32_t c) {
    char o[4];
    buf_put(b, o, (size_t)clf__utf8_put(c, o));
}

/* ---------------------------------------------------------------- tables */

static int32_t lookup_n(const clf_bpe *t, const char *s, size_t n) {
    for (uint64_t i = clf__hash_bytes(s, n) & t->mask;; i = (i + 1) & t->mask) {
        const int32_t id = t->slots[i];
        if (id < 0) return -1;
        if (strncmp(t->tok[id], s, n) == 0 && t->tok[id][n] == '\0') return id;
    }
}

static int merge_find(const clf_bpe *t, int32_t a, int32_t b, int32_t *rank, int32_t *merged) {
    if (!t->mkey) return 0;
    const uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
    for (uint64_t i = (key * 0x9e3779b97f4a7c15ULL >> 17) & t->mmask;; i = (i + 1) & t->mmask) {
        if (t->mkey[i] == UINT64_MAX) return 0;
        if (t->mkey[i] == key) {
            *rank = t->mrank[i];
            *merged = t->mnew[i];
            return 1;
        }
    }
}

void clf_bpe_free(clf_bpe *t) {
    if (!t) return;
    for (int64_t i = 0; i < t->n_tok; i++)
        free(t->tok[i]);
    free(t->tok);
    free(t->slots);
    free(t->mkey);
    free(t->mrank);
    free(t->mnew);
    for (size_t i = 0; i < t->n_add; i++)
        free(t->add[i].content);
    free(t->add);
    for (int i = 0; i < t->n_norm; i++) {
        free(t->norm[i].from);
        free(t->norm[i].to);
    }
    for (int i = 0; i < t->n_dec; i++) {
        free(t->dec[i].from);
        free(t->dec[i].to);
    }
    free(t);
}

static char *dup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* Puts token s at id (the id table grows; a second token for one id is an error). */
static clf_status set_token(clf_bpe *t, int64_t id, const char *s, clf_error *e) {
    if (id < 0 || id > (1 << 30)) {
        set_err(e, "tokenizer.json: token \"%.40s\" has id %lld", s, (long long)id);
        return CLF_ERROR_BAD_FORMAT;
    }
    if (id >= t->n_tok) {
        int64_t n = t->n_tok ? t->n_tok : 1024;
        while (n <= id)
            n *= 2;
        char **g = realloc(t->tok, sizeof(char *) * (size_t)n);
        if (!g) return CLF_ERROR_OUT_OF_MEMORY;
        memset(g + t->n_tok, 0, sizeof(char *) * (size_t)(n - t->n_tok));
        t->tok = g;
        t->n_tok = n;
    }
    if (t->tok[id]) {
        if (strcmp(t->tok[id], s) == 0) return CLF_SUCCESS; /* an added token in the vocab */
        set_err(e, "tokenizer.json: id %lld is both \"%.40s\" and \"%.40s\"", (long long)id,
                t->tok[id], s);
        return CLF_ERROR_BAD_FORMAT;
    }
    if (!(t->tok[id] = dup(s))) return CLF_ERROR_OUT_OF_MEMORY;
    return CLF_SUCCESS;
}

static clf_status build_index(clf_bpe *t, clf_error *e) {
    int64_t used = 0, top = 0;
    for (int64_t i = 0; i < t->n_tok; i++)
        if (t->tok[i]) {
            used++;
            top = i + 1;
        }
    t->n_tok = top;
    uint64_t size = 16;
    while (size < (uint64_t)used * 2)
        size *= 2;
    t->slots = malloc(sizeof(int32_t) * size);
    if (!t->slots) return CLF_ERROR_OUT_OF_MEMORY;
    memset(t->slots, 0xff, sizeof(int32_t) * size);
    t->mask = size - 1;
    for (int64_t id = 0; id < t->n_tok; id++) {
        if (!t->tok[id]) continue;
        const size_t n = strlen(t->tok[id]);
        if (lookup_n(t, t->tok[id], n) >= 0) {
            set_err(e, "tokenizer.json: token \"%.40s\" appears twice", t->tok[id]);
            return CLF_ERROR_BAD_FORMAT;
        }
        uint64_t i = clf__hash_bytes(t->tok[id], n) & t->mask;
        while (t->slots[i] >= 0)
            i = (i + 1) & t->mask;
        t->slots[i] = (int32_t)id;
    }
    return CLF_SUCCESS;
}

static clf_status load_merges(clf_bpe *t, const cJSON *merges, clf_error *e) {
    const int n = cJSON_GetArraySize(merges);
    if (n == 0) return CLF_SUCCESS;
    uint64_t size = 16;
    while (size < (uint64_t)n * 2)
        size *= 2;
    t->mkey = malloc(sizeof(uint64_t) * size);
    t->mrank = malloc(sizeof(int32_t) * size);
    t->mnew = malloc(sizeof(int32_t) * size);
    if (!t->mkey || !t->mrank || !t->mnew) return CLF_ERROR_OUT_OF_MEMORY;
    memset(t->mkey, 0xff, sizeof(uint64_t) * size);
    t->mmask = size - 1;
    int rank = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, merges) {
        char a[1024], b[1024];
        if (cJSON_IsString(m)) { /* "left right" */
            const char *sp = strchr(m->valuestring, ' ');
            if (!sp || strchr(sp + 1, ' ') || (size_t)(sp - m->valuestring) >= sizeof(a) ||
                strlen(sp + 1) >= sizeof(b)) {
                set_err(e, "tokenizer.json: merge \"%.60s\" is not two tokens", m->valuestring);
                return CLF_ERROR_BAD_FORMAT;
            }
            snprintf(a, sizeof(a), "%.*s", (int)(sp - m->valuestring), m->valuestring);
            snprintf(b, sizeof(b), "%s", sp + 1);
        } else if (cJSON_IsArray(m) && cJSON_GetArraySize(m) == 2 &&
                   cJSON_IsString(cJSON_GetArrayItem(m, 0)) &&
                   cJSON_IsString(cJSON_GetArrayItem(m, 1))) { /* ["left", "right"] */
            snprintf(a, sizeof(a), "%s", cJSON_GetArrayItem(m, 0)->valuestring);
            snprintf(b, sizeof(b), "%s", cJSON_GetArrayItem(m, 1)->valuestring);
        } else {
            set_err(e, "tokenizer.json: merge %d is neither \"a b\" nor [\"a\", \"b\"]", rank);
            return CLF_ERROR_BAD_FORMAT;
        }
        char ab[2048];
        snprintf(ab, sizeof(ab), "%s%s", a, b);
        const int32_t ia = lookup_n(t, a, strlen(a)), ib = lookup_n(t, b, strlen(b)),
                      iab = lookup_n(t, ab, strlen(ab));
        if (ia < 0 || ib < 0 || iab < 0) {
            set_err(e, "tokenizer.json: merge \"%.40s\" + \"%.40s\": a token is not in the vocab",
                    a, b);
            return CLF_ERROR_BAD_FORMAT;
        }
        int32_t r0, m0;
        if (!merge_find(t, ia, ib, &r0, &m0)) { /* the first (lowest) rank of a pair wins */
            const uint64_t key = (uint64_t)(uint32_t)ia << 32 | (uint32_t)ib;
            uint64_t i = (key * 0x9e3779b97f4a7c15ULL >> 17) & t->mmask;
            while (t->mkey[i] != UINT64_MAX)
                i = (i + 1) & t->mmask;
            t->mkey[i] = key;
            t->mrank[i] = rank;
            t->mnew[i] = iab;
        }
        rank++;
    }
    return CLF_SUCCESS;
}

/* ---------------------------------------------------------------- the pipeline description */

static const char *type_of(const cJSON *o) {
    const cJSON *ty = cJSON_GetObjectItemCaseSensitive(o, "type");
    return cJSON_IsString(ty) ? ty->valuestring : "";
}

static const char *str_item(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int bool_item(const cJSON *o, const char *key, int fallback) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsBool(v) ? cJSON_IsTrue(v) : fallback;
}

/* A {"String": s} pattern's string, NULL otherwise. */
static const char *string_pattern(const cJSON *o) {
    return str_item(cJSON_GetObjectItemCaseSensitive(o, "pattern"), "String");
}

static clf_status unsupported(clf_error *e, const char *what, const char *name) {
    set_err(e, "tokenizer.json: %s \"%s\" is not supported", what, name);
    return CLF_ERROR_UNSUPPORTED;
}

static clf_status parse_normalizer(clf_bpe *t, const cJSON *n, clf_error *e) {
    if (!n || cJSON_IsNull(n)) return CLF_SUCCESS;
    const char *ty = type_of(n);
    if (strcmp(ty, "Sequence") == 0) {
        const cJSON *x;
        cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(n, "normalizers"))
            CLF_TRY_E(parse_normalizer(t, x, e));
        return CLF_SUCCESS;
    }
    if (t->n_norm == 4) return unsupported(e, "normalizer sequence of", "more than 4");
    norm_step *s = &t->norm[t->n_norm];
    if (strcmp(ty, "NFC") == 0) {
        s->kind = NORM_NFC;
        t->n_norm++;
        return CLF_SUCCESS;
    }
    if (strcmp(ty, "Prepend") == 0 && str_item(n, "prepend")) {
        s->kind = NORM_PREPEND;
        s->to = dup(str_item(n, "prepend"));
    } else if (strcmp(ty, "Replace") == 0 && string_pattern(n) && str_item(n, "content")) {
        s->kind = NORM_REPLACE;
        s->from = dup(string_pattern(n));
        s->to = dup(str_item(n, "content"));
        if (s->from && !*s->from) return unsupported(e, "normalizer Replace of", "");
    } else {
        return unsupported(e, "normalizer", *ty ? ty : "(Replace with a regex)");
    }
    t->n_norm++;
    return (s->to && (s->kind == NORM_PREPEND || s->from)) ? CLF_SUCCESS : CLF_ERROR_OUT_OF_MEMORY;
}

/* The split patterns clformer matches (as they appear in tokenizer.json after JSON decoding). */
static const char k_gpt2_pattern[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
static const char k_llama3_pattern[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char k_qwen2_pattern[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

static clf_status set_meta(char *dst, const char *s, clf_error *e) {
    if (!s || !*s || strlen(s) >= META_MAX) {
        set_err(e, "tokenizer.json: a metaspace replacement must be 1 to %d bytes", META_MAX - 1);
        return CLF_ERROR_BAD_FORMAT;
    }
    snprintf(dst, META_MAX, "%s", s);
    return CLF_SUCCESS;
}

/* prepend_scheme (or the older add_prefix_space) of a Metaspace. */
static int meta_prepend(const cJSON *o) {
    const char *ps = str_item(o, "prepend_scheme");
    if (ps) return strcmp(ps, "never") == 0 ? 0 : strcmp(ps, "first") == 0 ? 1 : 2;
    return bool_item(o, "add_prefix_space", 1) ? 2 : 0;
}

static clf_status parse_pre(clf_bpe *t, const cJSON *p, clf_error *e) {
    if (!p || cJSON_IsNull(p)) return CLF_SUCCESS;
    const char *ty = type_of(p);
    if (strcmp(ty, "Sequence") == 0) {
        const cJSON *x;
        cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(p, "pretokenizers"))
            CLF_TRY_E(parse_pre(t, x, e));
        return CLF_SUCCESS;
    }
    if (t->byte_level || t->metaspace) /* nothing may follow these two */
        return unsupported(e, "pre-tokenizer after ByteLevel or Metaspace:", ty);
    if (strcmp(ty, "ByteLevel") == 0) {
        t->byte_level = 1;
        t->bl_prefix_space = bool_item(p, "add_prefix_space", 0);
        if (bool_item(p, "use_regex", 1)) {
            if (t->split) return unsupported(e, "pre-tokenizer", "Split then ByteLevel use_regex");
            t->split = SPLIT_GPT2;
        } else if (t->bl_prefix_space) {
            return unsupported(e, "pre-tokenizer", "ByteLevel add_prefix_space without use_regex");
        }
        return CLF_SUCCESS;
    }
    if (strcmp(ty, "Metaspace") == 0) {
        t->metaspace = 1;
        t->meta_prepend = meta_prepend(p);
        t->meta_split = bool_item(p, "split", 1);
        return set_meta(t->meta, str_item(p, "replacement"), e);
    }
    if (strcmp(ty, "Split") == 0) {
        const char *re = str_item(cJSON_GetObjectItemCaseSensitive(p, "pattern"), "Regex");
        const char *beh = str_item(p, "behavior");
        if (t->split) return unsupported(e, "pre-tokenizer", "a second Split");
        if (!re) return unsupported(e, "Split pattern", "(a plain string)");
        if (!beh || strcmp(beh, "Isolated") != 0 || bool_item(p, "invert", 0))
            return unsupported(e, "Split behavior", beh ? beh : "(none)");
        t->split = strcmp(re, k_gpt2_pattern) == 0     ? SPLIT_GPT2
                   : strcmp(re, k_llama3_pattern) == 0 ? SPLIT_LLAMA3
                   : strcmp(re, k_qwen2_pattern) == 0  ? SPLIT_QWEN2
                                                       : SPLIT_NONE;
        return t->split ? CLF_SUCCESS : unsupported(e, "Split pattern", re);
    }
    return unsupported(e, "pre-tokenizer", *ty ? ty : "(untyped)");
}

static clf_status parse_decoder(clf_bpe *t, const cJSON *d, clf_error *e) {
    if (!d || cJSON_IsNull(d)) return CLF_SUCCESS;
    t->has_decoder = 1;
    const char *ty = type_of(d);
    if (strcmp(ty, "Sequence") == 0) {
        const cJSON *x;
        cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(d, "decoders"))
            CLF_TRY_E(parse_decoder(t, x, e));
        return CLF_SUCCESS;
    }
    if (t->n_dec == 8) return unsupported(e, "decoder sequence of", "more than 8");
    dec_step *s = &t->dec[t->n_dec];
    memset(s, 0, sizeof(*s));
    if (strcmp(ty, "Replace") == 0 && string_pattern(d) && str_item(d, "content")) {
        s->kind = DEC_REPLACE;
        s->from = dup(string_pattern(d));
        s->to = dup(str_item(d, "content"));
        if (!s->from || !s->to) return CLF_ERROR_OUT_OF_MEMORY;
        if (!*s->from) return unsupported(e, "decoder Replace of", "");
    } else if (strcmp(ty, "ByteFallback") == 0) {
        s->kind = DEC_BYTE_FALLBACK;
    } else if (strcmp(ty, "Fuse") == 0) {
        s->kind = DEC_FUSE;
    } else if (strcmp(ty, "Strip") == 0) {
        const char *c = str_item(d, "content");
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(d, "start"),
                    *b = cJSON_GetObjectItemCaseSensitive(d, "stop");
        const unsigned char *cp = (const unsigned char *)(c ? c : "");
        s->kind = DEC_STRIP;
        s->strip_char = clf__utf8_next(&cp);
        s->strip_start = cJSON_IsNumber(a) ? (int)a->valuedouble : 0;
        s->strip_stop = cJSON_IsNumber(b) ? (int)b->valuedouble : 0;
        if (!c || !*c || *cp || s->strip_start < 0 || s->strip_stop < 0)
            return unsupported(e, "decoder Strip of", c ? c : "(none)");
    } else if (strcmp(ty, "ByteLevel") == 0) {
        s->kind = DEC_BYTE_LEVEL;
    } else if (strcmp(ty, "Metaspace") == 0) {
        s->kind = DEC_METASPACE;
        s->from = dup(str_item(d, "replacement") ? str_item(d, "replacement") : "");
        if (!s->from) return CLF_ERROR_OUT_OF_MEMORY;
        if (!*s->from) return unsupported(e, "decoder Metaspace replacement", "");
        s->prepend = meta_prepend(d);
    } else {
        return unsupported(e, "decoder", *ty ? ty : "(untyped)");
    }
    t->n_dec++;
    return CLF_SUCCESS;
}

/* The id of a special token named in a template (from "special_tokens" or the vocabulary). */
static clf_status template_id(const clf_bpe *t, const cJSON *specials, const char *name,
                              int32_t *id, clf_error *e) {
    const cJSON *ids =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(specials, name), "ids");
    if (cJSON_GetArraySize(ids) == 1 && cJSON_IsNumber(cJSON_GetArrayItem(ids, 0))) {
        *id = (int32_t)cJSON_GetArrayItem(ids, 0)->valuedouble;
        return CLF_SUCCESS;
    }
    if ((*id = lookup_n(t, name, strlen(name))) >= 0) return CLF_SUCCESS;
    set_err(e, "tokenizer.json: the post-processor's token \"%.40s\" is unknown", name);
    return CLF_ERROR_BAD_FORMAT;
}

static clf_status parse_post(clf_bpe *t, const cJSON *p, clf_error *e) {
    if (!p || cJSON_IsNull(p)) return CLF_SUCCESS;
    const char *ty = type_of(p);
    if (strcmp(ty, "Sequence") == 0) {
        const cJSON *x;
        cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(p, "processors"))
            CLF_TRY_E(parse_post(t, x, e));
        return CLF_SUCCESS;
    }
    if (strcmp(ty, "ByteLevel") == 0) return CLF_SUCCESS; /* offsets only */
    if (strcmp(ty, "TemplateProcessing") != 0) return unsupported(e, "post-processor", ty);
    const cJSON *single = cJSON_GetObjectItemCaseSensitive(p, "single"), *x;
    const cJSON *specials = cJSON_GetObjectItemCaseSensitive(p, "special_tokens");
    int seen_a = 0;
    t->n_pre = t->n_post = 0;
    cJSON_ArrayForEach(x, single) {
        const cJSON *sp = cJSON_GetObjectItemCaseSensitive(x, "SpecialToken");
        if (cJSON_GetObjectItemCaseSensitive(x, "Sequence")) {
            seen_a = 1;
        } else if (sp && str_item(sp, "id")) {
            int32_t *dst = seen_a ? t->post : t->pre;
            int *n = seen_a ? &t->n_post : &t->n_pre;
            if (*n == 4) return unsupported(e, "template with", "more than 4 special tokens");
            CLF_TRY_E(template_id(t, specials, str_item(sp, "id"), &dst[(*n)++], e));
        } else {
            return unsupported(e, "template piece", "(neither SpecialToken nor Sequence)");
        }
    }
    return CLF_SUCCESS;
}

/* GPT-2's byte-level alphabet: printable bytes stand for themselves, the others for 256 + n. */
static void byte_alphabet(clf_bpe *t) {
    int n = 0;
    for (int i = 0; i < 324; i++)
        t->char_byte[i] = -1;
    for (int b = 0; b < 256; b++) {
        const int printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
        t->byte_char[b] = printable ? (uint32_t)b : (uint32_t)(256 + n++);
        t->char_byte[t->byte_char[b]] = (int16_t)b;
    }
}

static clf_status parse_model(clf_bpe *t, const cJSON *m, clf_error *e) {
    const char *ty = type_of(m);
    if (*ty && strcmp(ty, "BPE") != 0) return unsupported(e, "model", ty);
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(m, "vocab"), *v;
    if (!cJSON_IsObject(vocab)) {
        set_err(e, "tokenizer.json: the model has no vocab object");
        return CLF_ERROR_BAD_FORMAT;
    }
    cJSON_ArrayForEach(v, vocab) {
        if (!cJSON_IsNumber(v) || !v->string) {
            set_err(e, "tokenizer.json: vocab entry \"%.40s\" has no id",
                    v->string ? v->string : "");
            return CLF_ERROR_BAD_FORMAT;
        }
        CLF_TRY_E(set_token(t, (int64_t)v->valuedouble, v->string, e));
    }
    const cJSON *drop = cJSON_GetObjectItemCaseSensitive(m, "dropout");
    if (cJSON_IsNumber(drop) && drop->valuedouble > 0) return unsupported(e, "BPE", "dropout");
    const char *cont = str_item(m, "continuing_subword_prefix"),
               *suf = str_item(m, "end_of_word_suffix");
    if ((cont && *cont) || (suf && *suf))
        return unsupported(e, "BPE", "continuing_subword_prefix / end_of_word_suffix");
    t->byte_fallback = bool_item(m, "byte_fallback", 0);
    t->fuse_unk = bool_item(m, "fuse_unk", 0);
    t->ignore_merges = bool_item(m, "ignore_merges", 0);
    return CLF_SUCCESS;
}

static clf_status parse_added(clf_bpe *t, const cJSON *list, clf_error *e) {
    const int n = cJSON_GetArraySize(list);
    if (n <= 0) return CLF_SUCCESS;
    t->add = calloc((size_t)n, sizeof(added_tok));
    if (!t->add) return CLF_ERROR_OUT_OF_MEMORY;
    const cJSON *a;
    cJSON_ArrayForEach(a, list) {
        const char *c = str_item(a, "content");
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(a, "id");
        if (!c || !*c || !cJSON_IsNumber(id)) {
            set_err(e, "tokenizer.json: an added token lacks content or id");
            return CLF_ERROR_BAD_FORMAT;
        }
        if (bool_item(a, "lstrip", 0) || bool_item(a, "rstrip", 0) ||
            bool_item(a, "single_word", 0))
            return unsupported(e, "added token with lstrip, rstrip or single_word:", c);
        added_tok *x = &t->add[t->n_add++];
        x->content = dup(c);
        if (!x->content) return CLF_ERROR_OUT_OF_MEMORY;
        x->len = strlen(c);
        x->id = (int32_t)id->valuedouble;
        x->special = bool_item(a, "special", 0);
        CLF_TRY_E(set_token(t, x->id, c, e));
    }
    return CLF_SUCCESS;
}

clf_status clf_bpe_load(const char *path, clf_bpe **out, clf_error *e) {
    set_err(e, "%s", "");
    if (!path || !out) {
        set_err(e, "path and out must not be NULL");
        return CLF_ERROR_INVALID_ARGUMENT;
    }
    *out = NULL;
    char *text = clf__read_text(path, TOKENIZER_MAX_BYTES);
    if (!text) {
        set_err(e, "%s: missing, unreadable or larger than 256 MiB", path);
        return CLF_ERROR_IO;
    }
    cJSON *j = cJSON_Parse(text);
    free(text);
    if (!j) {
        set_err(e, "%s: not valid JSON", path);
        return CLF_ERROR_BAD_FORMAT;
    }
    clf_bpe *t = calloc(1, sizeof(*t));
    clf_status st = t ? CLF_SUCCESS : CLF_ERROR_OUT_OF_MEMORY;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(j, "model");
    if (st == CLF_SUCCESS && !cJSON_IsObject(model)) {
        set_err(e, "%s: no \"model\" object", path);
        st = CLF_ERROR_BAD_FORMAT;
    }
    if (st == CLF_SUCCESS) st = parse_model(t, model, e);
    if (st == CLF_SUCCESS)
        st = parse_added(t, cJSON_GetObjectItemCaseSensitive(j, "added_tokens"), e);
    if (st == CLF_SUCCESS) st = build_index(t, e);
    if (st == CLF_SUCCESS)
        st = load_merges(t, cJSON_GetObjectItemCaseSensitive(model, "merges"), e);
    if (st == CLF_SUCCESS)
        st = parse_normalizer(t, cJSON_GetObjectItemCaseSensitive(j, "normalizer"), e);
    if (st == CLF_SUCCESS)
        st = parse_pre(t, cJSON_GetObjectItemCaseSensitive(j, "pre_tokenizer"), e);
    if (st == CLF_SUCCESS) st = parse_decoder(t, cJSON_GetObjectItemCaseSensitive(j, "decoder"), e);
    if (st == CLF_SUCCESS)
        st = parse_post(t, cJSON_GetObjectItemCaseSensitive(j, "post_processor"), e);
    if (st == CLF_SUCCESS) {
        const char *unk = str_item(model, "unk_token");
        t->unk = unk ? lookup_n(t, unk, strlen(unk)) : -1;
        if (unk && t->unk < 0) {
            set_err(e, "%s: unk_token \"%.40s\" is not in the vocab", path, unk);
            st = CLF_ERROR_BAD_FORMAT;
        }
        for (int b = 0; b < 256; b++) {
            char name[8];
            snprintf(name, sizeof(name), "<0x%02X>", b);
            t->byte_tok[b] = lookup_n(t, name, strlen(name));
        }
        byte_alphabet(t);
    }
    cJSON_Delete(j);
    if (st == CLF_ERROR_OUT_OF_MEMORY) set_err(e, "out of host memory");
    if (st != CLF_SUCCESS) {
        if (e && !e->message[0]) set_err(e, "%s: cannot be read", path);
        clf_bpe_free(t);
        return st;
    }
    *out = t;
    return CLF_SUCCESS;
}

int64_t clf_bpe_vocab_size(const clf_bpe *t) {
    return t ? t->n_tok : 0;
}

int64_t clf_bpe_find(const clf_bpe *t, const char *token) {
    return t && token ? lookup_n(t, token, strlen(token)) : -1;
}

const char *clf_bpe_token(const clf_bpe *t, int64_t id) {
    return t && id >= 0 && id < t->n_tok ? t->tok[id] : NULL;
}

int clf_bpe_is_special(const clf_bpe *t, int64_t id) {
    for (size_t i = 0; t && i < t->n_add; i++)
        if (t->add[i].id == id) return t->add[i].special;
    return 0;
}

/* ---------------------------------------------------------------- split patterns */

static bool is_other(uint32_t c) { /* [^\s\p{L}\p{N}] */
    return !clf__is_white_space(c) && !clf__is_letter(c) && !clf__is_number(c);
}
static bool is_nl(uint32_t c) {
    return c == '\r' || c == '\n';
}
static uint32_t lower_ascii(uint32_t c) {
    return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

/* 's 't 're 've 'm 'll 'd at c[i] (case-insensitive if ci); returns the length or 0. */
static size_t contraction(const uint32_t *c, size_t i, size_t n, int ci) {
    if (c[i] != '\'' || i + 1 >= n) return 0;
    const uint32_t a = ci ? lower_ascii(c[i + 1]) : c[i + 1];
    const uint32_t b = i + 2 < n ? (ci ? lower_ascii(c[i + 2]) : c[i + 2]) : 0;
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    return 0;
}

static size_t run(const uint32_t *c, size_t i, size_t n, bool (*pred)(uint32_t)) {
    size_t k = i;
    while (k < n && pred(c[k]))
        k++;
    return k - i;
}

/* \s+(?!\S) then \s+ at a whitespace c[i]. */
static size_t spaces(const uint32_t *c, size_t i, size_t n) {
    const size_t k = run(c, i, n, clf__is_white_space);
    if (i + k == n || k == 1) return k; /* at the end: all; one before a non-space: \s+ */
    return k - 1;                       /* the last space goes with what follows */
}

/* GPT-2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
static size_t match_gpt2(const uint32_t *c, size_t i, size_t n) {
    size_t m = contraction(c, i, n, 0);
    if (m) return m;
    const size_t j = c[i] == ' ' && i + 1 < n ? i + 1 : i;
    bool (*classes[3])(uint32_t) = {clf__is_letter, clf__is_number, is_other};
    for (int k = 0; k < 3; k++) {
        if (classes[k](c[j])) return j - i + run(c, j, n, classes[k]);
        if (j != i && classes[k](c[i])) return run(c, i, n, classes[k]); /* never: c[i] is ' ' */
    }
    if (clf__is_white_space(c[i])) return spaces(c, i, n);
    return 1;
}

static bool not_nl_l_n(uint32_t c) { /* [^\r\n\p{L}\p{N}] */
    return !is_nl(c) && !clf__is_letter(c) && !clf__is_number(c);
}

/* Llama 3 (max_digits 3) and Qwen2 (1):
 * (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,D}| ?[^\s\p{L}\p{N}]+[\r\n]*|
 * \s*[\r\n]+|\s+(?!\S)|\s+ */
static size_t match_llama3(const uint32_t *c, size_t i, size_t n, size_t max_digits) {
    size_t m = contraction(c, i, n, 1);
    if (m) return m;
    if (not_nl_l_n(c[i]) && i + 1 < n && clf__is_letter(c[i + 1]))
        return 1 + run(c, i + 1, n, clf__is_letter);
    if (clf__is_letter(c[i])) return run(c, i, n, clf__is_letter);
    if (clf__is_number(c[i])) {
        m = run(c, i, n, clf__is_number);
        return m < max_digits ? m : max_digits;
    }
    const size_t j = c[i] == ' ' && i + 1 < n && is_other(c[i + 1]) ? i + 1 : i;
    if (is_other(c[j])) {
        const size_t k = j + run(c, j, n, is_other);
        return k - i + run(c, k, n, is_nl);
    }
    if (clf__is_white_space(c[i])) {
        const size_t k = i + run(c, i, n, clf__is_white_space);
        for (size_t x = k; x > i; x--) /* \s*[\r\n]+: up to the run's last newline */
            if (is_nl(c[x - 1])) return x - i;
        return spaces(c, i, n);
    }
    return 1;
}

/* ---------------------------------------------------------------- encoding */

typedef struct ids_out {
    int32_t *ids;
    int64_t cap, n;
} ids_out;

static void emit(ids_out *o, int32_t id) {
    if (o->n < o->cap) o->ids[o->n] = id;
    o->n++;
}

typedef struct pair {
    int32_t rank, pos, left, right;
} pair;

static bool pair_less(const pair *a, const pair *b) {
    return a->rank != b->rank ? a->rank < b->rank : a->pos < b->pos;
}

static void heap_push(pair *h, size_t *n, pair p) {
    size_t i = (*n)++;
    h[i] = p;
    while (i > 0 && pair_less(&h[i], &h[(i - 1) / 2])) {
        pair x = h[i];
        h[i] = h[(i - 1) / 2];
        h[(i - 1) / 2] = x;
        i = (i - 1) / 2;
    }
}

static pair heap_pop(pair *h, size_t *n) {
    pair top = h[0];
    h[0] = h[--(*n)];
    for (size_t i = 0;;) {
        size_t l = 2 * i + 1, r = l + 1, s = i;
        if (l < *n && pair_less(&h[l], &h[s])) s = l;
        if (r < *n && pair_less(&h[r], &h[s])) s = r;
        if (s == i) break;
        pair x = h[i];
        h[i] = h[s];
        h[s] = x;
        i = s;
    }
    return top;
}

/* BPE of one pre-token p[0..len) (in the vocabulary's alphabet). */
static clf_status bpe_word(const clf_bpe *t, const char *p, size_t len, ids_out *o) {
    if (t->ignore_merges) {
        const int32_t whole = lookup_n(t, p, len);
        if (whole >= 0) {
            emit(o, whole);
            return CLF_SUCCESS;
        }
    }
    /* symbols: one per character (or per byte, byte fallback), linked */
    int32_t *id = malloc(sizeof(int32_t) * (len + 1) * 5), *prev = id + len + 1,
            *next = prev + len + 1;
    pair *heap = malloc(sizeof(pair) * (len + 1) * 3);
    if (!id || !heap) {
        free(id);
        free(heap);
        return CLF_ERROR_OUT_OF_MEMORY;
    }
    int32_t n = 0;
    const unsigned char *s = (const unsigned char *)p, *end = s + len;
    while (s < end) {
        const unsigned char *c0 = s;
        clf__utf8_next(&s);
        if (s > end) s = end;
        const int32_t x = lookup_n(t, (const char *)c0, (size_t)(s - c0));
        if (x >= 0) {
            id[n++] = x;
        } else if (t->byte_fallback) {
            for (const unsigned char *b = c0; b < s; b++)
                id[n++] = t->byte_tok[*b] >= 0 ? t->byte_tok[*b] : t->unk;
        } else if (t->unk >= 0 && !(t->fuse_unk && n > 0 && id[n - 1] == t->unk)) {
            id[n++] = t->unk;
        }
    }
    size_t hn = 0;
    for (int32_t i = 0; i < n; i++) {
        prev[i] = i - 1;
        next[i] = i + 1 < n ? i + 1 : -1;
        int32_t r, m;
        if (i + 1 < n && id[i] >= 0 && id[i + 1] >= 0 && merge_find(t, id[i], id[i + 1], &r, &m))
            heap_push(heap, &hn, (pair){r, i, id[i], id[i + 1]});
    }
    while (hn > 0) {
        const pair q = heap_pop(heap, &hn);
        const int32_t a = q.pos, b = next[a];
        if (id[a] != q.left || b < 0 || id[b] != q.right) continue; /* stale */
        int32_t r, m;
        merge_find(t, id[a], id[b], &r, &m);
        id[a] = m;
        id[b] = -2; /* gone */
        next[a] = next[b];
        if (next[b] >= 0) prev[next[b]] = a;
        if (prev[a] >= 0 && merge_find(t, id[prev[a]], id[a], &r, &m))
            heap_push(heap, &hn, (pair){r, prev[a], id[prev[a]], id[a]});
        if (next[a] >= 0 && merge_find(t, id[a], id[next[a]], &r, &m))
            heap_push(heap, &hn, (pair){r, a, id[a], id[next[a]]});
    }
    for (int32_t i = 0; n > 0 && i >= 0; i = next[i])
        if (id[i] >= 0) emit(o, id[i]);
    free(id);
    free(heap);
    return CLF_SUCCESS;
}

/* One pre-token: mapped to the byte-level alphabet if the tokenizer is byte-level, then BPE. */
static clf_status piece(const clf_bpe *t, const char *p, size_t len, buf *scratch, ids_out *o) {
    if (!len) return CLF_SUCCESS;
    if (!t->byte_level) return bpe_word(t, p, len, o);
    scratch->n = 0;
    for (size_t i = 0; i < len; i++)
        buf_cp(scratch, t->byte_char[(unsigned char)p[i]]);
    if (scratch->oom) return CLF_ERROR_OUT_OF_MEMORY;
    return bpe_word(t, scratch->p, scratch->n, o);
}

static void replace_all(buf *out, const char *s, size_t n, const char *from, const char *to) {
    const size_t fl = strlen(from);
    out->n = 0;
    for (size_t i = 0; i < n;) {
        if (fl && i + fl <= n && memcmp(s + i, from, fl) == 0) {
            buf_str(out, to);
            i += fl;
        } else {
            buf_put(out, s + i, 1);
            i++;
        }
    }
    if (!out->p) buf_put(out, "", 0);
}

/* A text segment between added tokens, at offset `at` of the input. */
static clf_status segment(const clf_bpe *t, const char *text, size_t len, size_t at, ids_out *o) {
    buf a = {0}, b = {0}, scratch = {0};
    clf_status st = CLF_SUCCESS;
    /* invalid UTF-8 becomes U+FFFD, so every later step sees whole characters */
    const unsigned char *s = (const unsigned char *)text, *end = s + len;
    while (s < end) {
        const unsigned char *c0 = s;
        const uint32_t c = clf__utf8_next(&s);
        if (s > end) s = end;
        if (c == 0xFFFD && !(s - c0 == 3 && c0[0] == 0xEF))
            buf_cp(&a, 0xFFFD);
        else
            buf_put(&a, (const char *)c0, (size_t)(s - c0));
    }
    buf_put(&a, "", 0);
    for (int i = 0; i < t->n_norm; i++) { /* normalizer steps */
        const norm_step *n = &t->norm[i];
        if (n->kind == NORM_PREPEND) {
            b.n = 0;
            buf_str(&b, n->to);
            buf_put(&b, a.p, a.n);
        } else if (n->kind == NORM_NFC) {
            char *c = NULL;
            size_t cn = 0;
            if (clf__nfc(a.p, a.n, &c, &cn) != 0) {
                st = CLF_ERROR_OUT_OF_MEMORY;
                goto done;
            }
            b.n = 0;
            buf_put(&b, c, cn);
            free(c);
        } else {
            replace_all(&b, a.p, a.n, n->from, n->to);
        }
        buf x = a;
        a = b;
        b = x;
    }
    if (t->metaspace) { /* spaces to the replacement, which may be prepended */
        replace_all(&b, a.p, a.n, " ", t->meta);
        const size_t ml = strlen(t->meta);
        const int starts = b.n >= ml && memcmp(b.p, t->meta, ml) == 0;
        a.n = 0;
        if (!starts && (t->meta_prepend == 2 || (t->meta_prepend == 1 && at == 0)))
            buf_str(&a, t->meta);
        buf_put(&a, b.p, b.n);
    }
    if (t->bl_prefix_space && (a.n == 0 || a.p[0] != ' ')) {
        b.n = 0;
        buf_str(&b, " ");
        buf_put(&b, a.p, a.n);
        buf x = a;
        a = b;
        b = x;
    }
    if (a.oom || b.oom) {
        st = CLF_ERROR_OUT_OF_MEMORY;
        goto done;
    }
    if (t->split) { /* the split pattern on code points, then each piece */
        uint32_t *cps = malloc(sizeof(uint32_t) * (a.n + 1));
        size_t *off = malloc(sizeof(size_t) * (a.n + 2));
        if (!cps || !off) {
            free(cps);
            free(off);
            st = CLF_ERROR_OUT_OF_MEMORY;
            goto done;
        }
        size_t n = 0;
        const unsigned char *q = (const unsigned char *)a.p, *qe = q + a.n;
        while (q < qe) {
            off[n] = (size_t)(q - (const unsigned char *)a.p);
            cps[n++] = clf__utf8_next(&q);
        }
        off[n] = a.n;
        for (size_t i = 0; i < n && st == CLF_SUCCESS;) {
            size_t m = t->split == SPLIT_GPT2     ? match_gpt2(cps, i, n)
                       : t->split == SPLIT_LLAMA3 ? match_llama3(cps, i, n, 3)
                                                  : match_llama3(cps, i, n, 1);
            st = piece(t, a.p + off[i], off[i + m] - off[i], &scratch, o);
            i += m;
        }
        free(cps);
        free(off);
    } else if (t->metaspace && t->meta_split) { /* pieces start at each replacement */
        const size_t ml = strlen(t->meta);
        size_t start = 0;
        for (size_t i = 1; i <= a.n && st == CLF_SUCCESS; i++)
            if (i == a.n || (i + ml <= a.n && memcmp(a.p + i, t->meta, ml) == 0)) {
                st = piece(t, a.p + start, i - start, &scratch, o);
                start = i;
            }
    } else {
        st = piece(t, a.p, a.n, &scratch, o);
    }
done:
    free(a.p);
    free(b.p);
    free(scratch.p);
    return st;
}

/* The longest added token at text[i..], or -1. */
static int added_at(const clf_bpe *t, const char *text, size_t i, size_t n) {
    int best = -1;
    for (size_t k = 0; k < t->n_add; k++)
        if (t->add[k].len <= n - i && memcmp(text + i, t->add[k].content, t->add[k].len) == 0 &&
            (best < 0 || t->add[k].len > t->add[best].len))
            best = (int)k;
    return best;
}

clf_status clf_bpe_encode(const clf_bpe *t, const char *text, int add_special, int32_t *ids,
                          int64_t cap, int64_t *count, clf_error *e) {
    set_err(e, "%s", "");
    if (!t || !text || !count || cap < 0 || (cap > 0 && !ids)) {
        set_err(e, "bpe encode: t, text and count must be given, and ids for cap > 0");
        return CLF_ERROR_INVALID_ARGUMENT;
    }
    ids_out o = {ids, cap, 0};
    if (add_special)
        for (int i = 0; i < t->n_pre; i++)
            emit(&o, t->pre[i]);
    const size_t n = strlen(text);
    clf_status st = CLF_SUCCESS;
    size_t start = 0;
    for (size_t i = 0; i <= n && st == CLF_SUCCESS;) {
        const int k = i < n ? added_at(t, text, i, n) : -1;
        if (i < n && k < 0) {
            i++;
            continue;
        }
        if (i > start) st = segment(t, text + start, i - start, start, &o);
        if (k >= 0 && st == CLF_SUCCESS) {
            emit(&o, t->add[k].id);
            i += t->add[k].len;
            start = i;
        } else {
            break;
        }
    }
    if (add_special)
        for (int i = 0; i < t->n_post; i++)
            emit(&o, t->post[i]);
    *count = o.n;
    if (st == CLF_ERROR_OUT_OF_MEMORY) set_err(e, "bpe encode: out of host memory");
    if (st == CLF_SUCCESS && o.n > cap) {
        set_err(e, "bpe encode: %lld ids, room for %lld", (long long)o.n, (long long)cap);
        st = CLF_ERROR_SIZE_LIMIT;
    }
    return st;
}

/* ---------------------------------------------------------------- decoding */

typedef struct toks {
    buf *t;
    size_t n, cap;
} toks;

static int toks_push(toks *l, const char *s, size_t n) {
    if (l->n == l->cap) {
        size_t c = l->cap ? 2 * l->cap : 16;
        buf *g = realloc(l->t, sizeof(buf) * c);
        if (!g) return 1;
        l->t = g;
        l->cap = c;
    }
    buf *b = &l->t[l->n++];
    memset(b, 0, sizeof(*b));
    buf_put(b, s, n);
    return b->oom;
}

static void toks_free(toks *l) {
    for (size_t i = 0; i < l->n; i++)
        free(l->t[i].p);
    free(l->t);
    memset(l, 0, sizeof(*l));
}

/* Bytes -> text as Rust's from_utf8_lossy: each invalid sequence becomes U+FFFD. */
static void lossy(buf *out, const char *p, size_t n) {
    out->n = 0;
    const unsigned char *s = (const unsigned char *)p, *end = s + n;
    while (s < end) {
        const unsigned char *c0 = s;
        const uint32_t c = clf__utf8_next(&s);
        if (s > end) s = end;
        if (c == 0xFFFD && !(s - c0 == 3 && c0[0] == 0xEF))
            buf_cp(out, 0xFFFD);
        else
            buf_put(out, (const char *)c0, (size_t)(s - c0));
    }
    buf_put(out, "", 0);
}

/* 1 if p[0..n) is valid UTF-8 (a real U+FFFD, EF BF BD, counts as valid). */
static int valid_utf8(const char *p, size_t n) {
    const unsigned char *s = (const unsigned char *)p, *end = s + n;
    while (s < end) {
        const unsigned char *c0 = s;
        if (clf__utf8_next(&s) == 0xFFFD && !(s - c0 == 3 && c0[0] == 0xEF)) return 0;
        if (s > end) return 0;
    }
    return 1;
}

static int byte_token(const char *s, unsigned char *b) {
    unsigned v;
    char tail;
    if (strlen(s) != 6 || strncmp(s, "<0x", 3) != 0 || s[5] != '>') return 0;
    if (sscanf(s + 3, "%2x%c", &v, &tail) != 2 || tail != '>') return 0;
    *b = (unsigned char)v;
    return 1;
}

static int apply_step(const clf_bpe *t, const dec_step *d, toks *l) {
    buf tmp = {0};
    int bad = 0;
    if (d->kind == DEC_REPLACE || d->kind == DEC_METASPACE) {
        /* Metaspace: the replacement is a space, except in the first token, where (unless
         * prepend_scheme is never) it is dropped, as tokenizers' Metaspace decoder does. */
        for (size_t i = 0; i < l->n && !bad; i++) {
            const char *to = d->kind == DEC_REPLACE ? d->to : (i == 0 && d->prepend) ? "" : " ";
            replace_all(&tmp, l->t[i].p, l->t[i].n, d->from, to);
            l->t[i].n = 0;
            buf_put(&l->t[i], tmp.p, tmp.n);
            bad = l->t[i].oom || tmp.oom;
        }
    } else if (d->kind == DEC_BYTE_FALLBACK) {
        toks nl = {0};
        for (size_t i = 0; i < l->n && !bad;) {
            unsigned char byte;
            if (!byte_token(l->t[i].p, &byte)) {
                bad = toks_push(&nl, l->t[i].p, l->t[i].n);
                i++;
                continue;
            }
            buf bytes = {0};
            size_t j = i;
            while (j < l->n && byte_token(l->t[j].p, &byte)) {
                buf_put(&bytes, (const char *)&byte, 1);
                j++;
            }
            buf_put(&bytes, "", 0);
            if (!valid_utf8(bytes.p, bytes.n)) /* not UTF-8: one U+FFFD per byte */
                for (size_t k = i; k < j && !bad; k++)
                    bad = toks_push(&nl, "\xEF\xBF\xBD", 3);
            else
                bad = toks_push(&nl, bytes.p, bytes.n);
            bad = bad || bytes.oom;
            free(bytes.p);
            i = j;
        }
        toks_free(l);
        *l = nl;
    } else if (d->kind == DEC_FUSE || d->kind == DEC_BYTE_LEVEL) {
        for (size_t i = 0; i < l->n; i++) {
            if (d->kind == DEC_FUSE) {
                buf_put(&tmp, l->t[i].p, l->t[i].n);
                continue;
            }
            /* each character back to its byte; a token with a foreign character as is */
            buf bytes = {0};
            const unsigned char *s = (const unsigned char *)l->t[i].p, *end = s + l->t[i].n;
            int all = 1;
            while (s < end && all) {
                const uint32_t c = clf__utf8_next(&s);
                if (c < 324 && t->char_byte[c] >= 0) {
                    unsigned char byte = (unsigned char)t->char_byte[c];
                    buf_put(&bytes, (const char *)&byte, 1);
                } else {
                    all = 0;
                }
            }
            buf_put(&tmp, all ? bytes.p : l->t[i].p, all ? bytes.n : l->t[i].n);
            free(bytes.p);
        }
        buf_put(&tmp, "", 0);
        buf fused = {0};
        if (d->kind == DEC_BYTE_LEVEL)
            lossy(&fused, tmp.p, tmp.n);
        else
            buf_put(&fused, tmp.p, tmp.n);
        toks_free(l);
        bad = tmp.oom || fused.oom || toks_push(l, fused.p, fused.n);
        free(fused.p);
    } else if (d->kind == DEC_STRIP) {
        for (size_t i = 0; i < l->n; i++) {
            char cs[4];
            const size_t cl = (size_t)clf__utf8_put(d->strip_char, cs);
            size_t a = 0, z = l->t[i].n;
            for (int k = 0; k < d->strip_start && a + cl <= z && memcmp(l->t[i].p + a, cs, cl) == 0;
                 k++)
                a += cl;
            for (int k = 0;
                 k < d->strip_stop && z >= a + cl && memcmp(l->t[i].p + z - cl, cs, cl) == 0; k++)
                z -= cl;
            memmove(l->t[i].p, l->t[i].p + a, z - a);
            l->t[i].n = z - a;
            l->t[i].p[l->t[i].n] = '\0';
        }
    }
    free(tmp.p);
    return bad;
}

/* The decoded text of ids into out (a buf). */
static clf_status decode_buf(const clf_bpe *t, const int32_t *ids, int64_t n, int skip_special,
                             buf *out, clf_error *e) {
    toks l = {0};
    for (int64_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= t->n_tok || !t->tok[ids[i]]) {
            set_err(e, "bpe decode: id %d is not a token", (int)ids[i]);
            toks_free(&l);
            return CLF_ERROR_OUT_OF_RANGE;
        }
        if (skip_special && clf_bpe_is_special(t, ids[i])) continue;
        if (toks_push(&l, t->tok[ids[i]], strlen(t->tok[ids[i]]))) goto oom;
    }
    for (int i = 0; i < t->n_dec; i++)
        if (apply_step(t, &t->dec[i], &l)) goto oom;
    out->n = 0;
    for (size_t i = 0; i < l.n; i++) { /* no decoder: tokens joined by spaces */
        if (i && !t->has_decoder) buf_put(out, " ", 1);
        buf_put(out, l.t[i].p, l.t[i].n);
    }
    buf_put(out, "", 0);
    toks_free(&l);
    if (out->oom) goto oom;
    return CLF_SUCCESS;
oom:
    toks_free(&l);
    set_err(e, "bpe decode: out of host memory");
    return CLF_ERROR_OUT_OF_MEMORY;
}

static clf_status copy_out(const buf *b, char *out, size_t cap, size_t *len, clf_error *e) {
    if (len) *len = b->n;
    if (cap == 0 || !out) {
        set_err(e, "bpe decode: no room for the text");
        return CLF_ERROR_SIZE_LIMIT;
    }
    const size_t k = b->n < cap ? b->n : cap - 1;
    memcpy(out, b->p, k);
    out[k] = '\0';
    if (b->n >= cap) {
        set_err(e, "bpe decode: %zu bytes of text, room for %zu", b->n, cap - 1);
        return CLF_ERROR_SIZE_LIMIT;
    }
    return CLF_SUCCESS;
}

clf_status clf_bpe_decode(const clf_bpe *t, const int32_t *ids, int64_t n, int skip_special,
                          char *out, size_t cap, size_t *len, clf_error *e) {
    set_err(e, "%s", "");
    if (!t || (n > 0 && !ids) || n < 0) {
        set_err(e, "bpe decode: t must be given, and ids for n > 0");
        return CLF_ERROR_INVALID_ARGUMENT;
    }
    buf b = {0};
    clf_status st = decode_buf(t, ids, n, skip_special, &b, e);
    if (st == CLF_SUCCESS) st = copy_out(&b, out, cap, len, e);
    free(b.p);
    return st;
}

/* ---------------------------------------------------------------- streaming */

struct clf_bpe_stream {
    const clf_bpe *t;
    int skip_special;
    int32_t *ids;
    size_t n, cap, prefix_index;
    buf prefix;
};

clf_status clf_bpe_stream_create(const clf_bpe *t, int skip_special, clf_bpe_stream **out) {
    if (!t || !out) return CLF_ERROR_INVALID_ARGUMENT;
    *out = calloc(1, sizeof(clf_bpe_stream));
    if (!*out) return CLF_ERROR_OUT_OF_MEMORY;
    (*out)->t = t;
    (*out)->skip_special = skip_special;
    buf_put(&(*out)->prefix, "", 0);
    return (*out)->prefix.oom ? CLF_ERROR_OUT_OF_MEMORY : CLF_SUCCESS;
}

void clf_bpe_stream_free(clf_bpe_stream *s) {
    if (!s) return;
    free(s->ids);
    free(s->prefix.p);
    free(s);
}

/* As tokenizers' DecodeStream::step: decode the ids kept since the last emitted text; emit the
 * part past the previous decoding once it grew and does not end in U+FFFD (an incomplete
 * character); then keep only the ids from the previous emission on as context. Where the
 * context's own text changes, it releases the new ids' text (tokenizers fails there). */
clf_status clf_bpe_stream_next(clf_bpe_stream *s, int32_t id, char *out, size_t cap, size_t *len) {
    if (!s || !out || cap == 0) return CLF_ERROR_INVALID_ARGUMENT;
    out[0] = '\0';
    if (len) *len = 0;
    if (s->n == s->cap) {
        size_t c = s->cap ? 2 * s->cap : 16;
        int32_t *g = realloc(s->ids, sizeof(int32_t) * c);
        if (!g) return CLF_ERROR_OUT_OF_MEMORY;
        s->ids = g;
        s->cap = c;
    }
    s->ids[s->n++] = id;
    buf text = {0};
    clf_status st = decode_buf(s->t, s->ids, (int64_t)s->n, s->skip_special, &text, NULL);
    if (st != CLF_SUCCESS) {
        s->n--;
        free(text.p);
        return st;
    }
    const int grew = text.n > s->prefix.n,
              incomplete = text.n >= 3 && memcmp(text.p + text.n - 3, "\xEF\xBF\xBD", 3) == 0;
    if (grew && !incomplete) {
        buf fresh = {0};
        size_t new_prefix_index = s->n - s->prefix_index;
        if (memcmp(text.p, s->prefix.p, s->prefix.n) == 0) {
            buf_put(&fresh, text.p + s->prefix.n, text.n - s->prefix.n);
        } else {
            /* The context's text changed (a released byte token joined an invalid byte run):
             * tokenizers' DecodeStream fails here; release the new tokens' own text instead. */
            memmove(s->ids, s->ids + s->prefix_index, sizeof(int32_t) * (s->n - s->prefix_index));
            s->n -= s->prefix_index;
            s->prefix_index = 0;
            new_prefix_index = s->n;
            st = decode_buf(s->t, s->ids, (int64_t)s->n, s->skip_special, &fresh, NULL);
        }
        if (st == CLF_SUCCESS) {
            memmove(s->ids, s->ids + s->prefix_index, sizeof(int32_t) * (s->n - s->prefix_index));
            s->n -= s->prefix_index;
            st = decode_buf(s->t, s->ids, (int64_t)s->n, s->skip_special, &s->prefix, NULL);
            s->prefix_index = new_prefix_index;
        }
        if (st == CLF_SUCCESS) st = copy_out(&fresh, out, cap, len, NULL);
        free(fresh.p);
    }
    free(text.p);
    return st;
}
