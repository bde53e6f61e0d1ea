/*
 * bpe.h — what the three parts of clformer's BPE tokenizer share (internal): the loaded
 * tokenizer (struct clf_bpe: vocabulary and merges in hash tables, the pipeline description),
 * a growable byte buffer, and the helpers more than one part calls.
 *   bpe_load.c    tokenizer.json into struct clf_bpe (refusing what it does not compute), the
 *                 tables, the accessors
 *   bpe_encode.c  the split patterns and encoding
 *   bpe_decode.c  decoding and streaming decoding
 */
#ifndef CLF_BPE_H
#define CLF_BPE_H

#include "internal.h"
#include "unicode.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* Writes a message into e (if not NULL). */
void clf__bpe_err(clf_error *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A growable byte buffer, NUL-terminated with 4 spare bytes (UTF-8 reads stop at the NUL); oom
 * is set, and later writes dropped, when memory runs out. */
typedef struct buf {
    char *p;
    size_t n, cap;
    int oom;
} buf;
void clf__buf_put(buf *b, const char *s, size_t n);
void clf__buf_str(buf *b, const char *s);
void clf__buf_cp(buf *b, uint32_t c); /* one code point as UTF-8 */

/* A tokenizer from tokenizer.json's parsed text (path names it in messages); the GGUF loader
 * (bpe_gguf.c) builds such a description from a file's tokenizer.ggml.* metadata. */
clf_status clf__bpe_from_json(const cJSON *j, const char *path, clf_bpe **out, clf_error *e);
/* The split patterns clformer matches, as tokenizer.json spells them (after JSON decoding). */
extern const char clf__bpe_gpt2_pattern[], clf__bpe_llama3_pattern[], clf__bpe_qwen2_pattern[];

/* The id of token s[0 .. n), or -1. */
int32_t clf__bpe_lookup(const clf_bpe *t, const char *s, size_t n);
/* The merge of (a, b): 1 with its rank and merged id, or 0. */
int clf__bpe_merge_find(const clf_bpe *t, int32_t a, int32_t b, int32_t *rank, int32_t *merged);
/* out += s[0 .. n) with every `from` replaced by `to`. */
void clf__bpe_replace_all(buf *out, const char *s, size_t n, const char *from, const char *to);

#endif
