/*
 * bpe_load.c — BPE tokenizers from Hugging Face's tokenizer.json (see io.h for what is supported):
 * loading (the vocabulary and merges into hash tables; the normalizer, pre-tokenizer, decoder and
 * post-processor into a small pipeline description, refusing what it does not compute),
 * encoding (added tokens, normalizer, split pattern, byte-level or metaspace mapping, BPE merges
 * by rank with a heap, byte fallback), decoding and streaming decoding.
 *
 * The split patterns are matched by hand-written code, one function per pattern string clformer
 * knows (GPT-2's, Llama 3's, Qwen2's), following the regex's ordered alternation and its
 * backtracking (e.g. \s+(?!\S) leaves the last space of a run to the word after it).
 */
#include "bpe.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void clf__bpe_err(clf_error *e, const char *fmt, ...) {
    if (!e) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof(e->message), fmt, ap);
    va_end(ap);
}

/* ---------------------------------------------------------------- growable byte buffer */

void clf__buf_put(buf *b, const char *s, size_t n) {
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
void clf__buf_str(buf *b, const char *s) {
    clf__buf_put(b, s, strlen(s));
}
void clf__buf_cp(buf *b, uint32_t c) {
    char o[4];
    clf__buf_put(b, o, (size_t)clf__utf8_put(c, o));
}

/* ---------------------------------------------------------------- tables */

int32_t clf__bpe_lookup(const clf_bpe *t, const char *s, size_t n) {
    for (uint64_t i = clf__hash_bytes(s, n) & t->mask;; i = (i + 1) & t->mask) {
        const int32_t id = t->slots[i];
        if (id < 0) return -1;
        if (strncmp(t->tok[id], s, n) == 0 && t->tok[id][n] == '\0') return id;
    }
}

int clf__bpe_merge_find(const clf_bpe *t, int32_t a, int32_t b, int32_t *rank, int32_t *merged) {
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
        clf__bpe_err(e, "tokenizer.json: token \"%.40s\" has id %lld", s, (long long)id);
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
        clf__bpe_err(e, "tokenizer.json: id %lld is both \"%.40s\" and \"%.40s\"", (long long)id,
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
        if (clf__bpe_lookup(t, t->tok[id], n) >= 0) {
            clf__bpe_err(e, "tokenizer.json: token \"%.40s\" appears twice", t->tok[id]);
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
                clf__bpe_err(e, "tokenizer.json: merge \"%.60s\" is not two tokens",
                             m->valuestring);
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
            clf__bpe_err(e, "tokenizer.json: merge %d is neither \"a b\" nor [\"a\", \"b\"]", rank);
            return CLF_ERROR_BAD_FORMAT;
        }
        char ab[2048];
        snprintf(ab, sizeof(ab), "%s%s", a, b);
        const int32_t ia = clf__bpe_lookup(t, a, strlen(a)), ib = clf__bpe_lookup(t, b, strlen(b)),
                      iab = clf__bpe_lookup(t, ab, strlen(ab));
        if (ia < 0 || ib < 0 || iab < 0) {
            clf__bpe_err(e,
                         "tokenizer.json: merge \"%.40s\" + \"%.40s\": a token is not in the vocab",
                         a, b);
            return CLF_ERROR_BAD_FORMAT;
        }
        int32_t r0, m0;
        if (!clf__bpe_merge_find(t, ia, ib, &r0,
                                 &m0)) { /* the first (lowest) rank of a pair wins */
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
    clf__bpe_err(e, "tokenizer.json: %s \"%s\" is not supported", what, name);
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
const char clf__bpe_gpt2_pattern[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
const char clf__bpe_llama3_pattern[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char clf__bpe_qwen2_pattern[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

static clf_status set_meta(char *dst, const char *s, clf_error *e) {
    if (!s || !*s || strlen(s) >= META_MAX) {
        clf__bpe_err(e, "tokenizer.json: a metaspace replacement must be 1 to %d bytes",
                     META_MAX - 1);
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
        t->split = strcmp(re, clf__bpe_gpt2_pattern) == 0     ? SPLIT_GPT2
                   : strcmp(re, clf__bpe_llama3_pattern) == 0 ? SPLIT_LLAMA3
                   : strcmp(re, clf__bpe_qwen2_pattern) == 0  ? SPLIT_QWEN2
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
    if ((*id = clf__bpe_lookup(t, name, strlen(name))) >= 0) return CLF_SUCCESS;
    clf__bpe_err(e, "tokenizer.json: the post-processor's token \"%.40s\" is unknown", name);
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
        clf__bpe_err(e, "tokenizer.json: the model has no vocab object");
        return CLF_ERROR_BAD_FORMAT;
    }
    cJSON_ArrayForEach(v, vocab) {
        if (!cJSON_IsNumber(v) || !v->string) {
            clf__bpe_err(e, "tokenizer.json: vocab entry \"%.40s\" has no id",
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
            clf__bpe_err(e, "tokenizer.json: an added token lacks content or id");
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
    clf__bpe_err(e, "%s", "");
    if (!path || !out) {
        clf__bpe_err(e, "path and out must not be NULL");
        return CLF_ERROR_INVALID_ARGUMENT;
    }
    *out = NULL;
    char *text = clf__read_text(path, TOKENIZER_MAX_BYTES);
    if (!text) {
        clf__bpe_err(e, "%s: missing, unreadable or larger than 256 MiB", path);
        return CLF_ERROR_IO;
    }
    cJSON *j = cJSON_Parse(text);
    free(text);
    if (!j) {
        clf__bpe_err(e, "%s: not valid JSON", path);
        return CLF_ERROR_BAD_FORMAT;
    }
    const clf_status st = clf__bpe_from_json(j, path, out, e);
    cJSON_Delete(j);
    return st;
}

clf_status clf__bpe_from_json(const cJSON *j, const char *path, clf_bpe **out, clf_error *e) {
    clf__bpe_err(e, "%s", "");
    *out = NULL;
    clf_bpe *t = calloc(1, sizeof(*t));
    clf_status st = t ? CLF_SUCCESS : CLF_ERROR_OUT_OF_MEMORY;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(j, "model");
    if (st == CLF_SUCCESS && !cJSON_IsObject(model)) {
        clf__bpe_err(e, "%s: no \"model\" object", path);
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
        t->unk = unk ? clf__bpe_lookup(t, unk, strlen(unk)) : -1;
        if (unk && t->unk < 0) {
            clf__bpe_err(e, "%s: unk_token \"%.40s\" is not in the vocab", path, unk);
            st = CLF_ERROR_BAD_FORMAT;
        }
        for (int b = 0; b < 256; b++) {
            char name[8];
            snprintf(name, sizeof(name), "<0x%02X>", b);
            t->byte_tok[b] = clf__bpe_lookup(t, name, strlen(name));
        }
        byte_alphabet(t);
    }
    if (st == CLF_ERROR_OUT_OF_MEMORY) clf__bpe_err(e, "out of host memory");
    if (st != CLF_SUCCESS) {
        if (e && !e->message[0]) clf__bpe_err(e, "%s: cannot be read", path);
        clf_bpe_free(t);
        return st;
    }
    *out = t;
    return CLF_SUCCESS;
}
