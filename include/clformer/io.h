/*
 * clformer/io.h — model files: safetensors, the WordPiece tokenizer and BPE tokenizers.
 * Part of clformer's public API; include <clformer/clformer.h>, which includes every part.
 */
#ifndef CLFORMER_IO_H
#define CLFORMER_IO_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- safetensors
 * A reader of the safetensors format (8-byte little-endian header size, a JSON header naming
 * each tensor's dtype, shape and [begin, end) byte offsets into the data that follows). Opening
 * validates the whole header: every dtype is known, every shape's size matches its byte range,
 * every range lies inside the file and no two overlap; a corrupt or truncated file is refused
 * with a message saying what is wrong. Data is read from the file when a tensor is loaded; one
 * clf_safetensors may be read from several threads at once (each read opens the file). */
typedef struct clf_safetensors clf_safetensors;

typedef enum {
    CLF_ST_F32 = 0,
    CLF_ST_F16,
    CLF_ST_BF16,
    CLF_ST_F64,
    CLF_ST_I32,
    CLF_ST_I64,
    CLF_ST_OTHER /* any other dtype of the format (I8, U8, BOOL, ...): listed, not loadable */
} clf_st_dtype;

#define CLF_ST_MAX_DIMS 8

typedef struct clf_st_info {
    const char *name;
    clf_st_dtype dtype;
    const char *dtype_name; /* as in the file, e.g. "BF16" */
    int ndim;
    int64_t shape[CLF_ST_MAX_DIMS];
    int64_t numel;
    uint64_t offset, bytes; /* within the file */
} clf_st_info;

/* err (may be NULL) receives the reason of a failure (see clf_error), as in every call below. */
CLF_API clf_status clf_safetensors_open(const char *path, clf_safetensors **out, clf_error *err);
CLF_API void clf_safetensors_free(clf_safetensors *st);
CLF_API size_t clf_safetensors_count(const clf_safetensors *st);
/* Tensor i (0 .. count-1, in file order), or by name; NULL if absent. Owned by st: valid until
 * clf_safetensors_free. */
CLF_API const clf_st_info *clf_safetensors_at(const clf_safetensors *st, size_t i);
CLF_API const clf_st_info *clf_safetensors_find(const clf_safetensors *st, const char *name);
/* Reads a tensor into host memory converted to float (F32, F16, BF16, F64, I32, I64) or int32
 * (I32, I64 in range); `count` must equal its numel. */
CLF_API clf_status clf_safetensors_read_f32(const clf_safetensors *st, const char *name, float *dst,
                                            int64_t count, clf_error *err);
CLF_API clf_status clf_safetensors_read_i32(const clf_safetensors *st, const char *name,
                                            int32_t *dst, int64_t count, clf_error *err);
/* Loads a tensor into a new f32 (or, for integer dtypes, I32) device tensor. With shape != NULL
 * its shape must be exactly (shape[0], ..., shape[ndim-1]); a missing tensor, another shape or
 * an unloadable dtype is an error naming the tensor. */
CLF_API clf_status clf_safetensors_load(clf_context *ctx, const clf_safetensors *st,
                                        const char *name, int ndim, const int64_t *shape,
                                        clf_tensor **out);

/* One tensor to write: F32 or I32 data (host, row-major), ndim 0 .. CLF_ST_MAX_DIMS. */
typedef struct clf_st_entry {
    const char *name;
    clf_st_dtype dtype; /* CLF_ST_F32 or CLF_ST_I32 */
    int ndim;
    const int64_t *shape;
    const void *data;
} clf_st_entry;

/* Writes a safetensors file (through a temporary file renamed into place). */
CLF_API clf_status clf_safetensors_write(const char *path, const clf_st_entry *entries, size_t n,
                                         clf_error *err);

/* ---------------------------------------------------------------- WordPiece tokenizer
 * BERT's tokenizer for uncased vocabularies, as Hugging Face's BertNormalizer, BertPreTokenizer
 * and WordPiece do it: control characters removed and whitespace unified; spaces put around CJK
 * ideographs; accents stripped (NFD without nonspacing marks) and text lowercased; split on
 * whitespace and around punctuation (Unicode P* and ASCII symbols); each word split into the
 * longest vocabulary pieces first ("##" marks a continuation), a word with no split (or over 100
 * characters) becoming [UNK]; then [CLS] ... [SEP]. Invalid UTF-8 bytes are dropped. */
typedef struct clf_tokenizer clf_tokenizer;

/* Reads a vocab.txt (one token per line, the line number is the id). It must hold [CLS], [SEP],
 * [UNK] and [PAD]. */
CLF_API clf_status clf_tokenizer_load(const char *vocab_path, clf_tokenizer **out, clf_error *err);
CLF_API void clf_tokenizer_free(clf_tokenizer *tok);
CLF_API int64_t clf_tokenizer_vocab_size(const clf_tokenizer *tok);
/* The token of an id, NULL if out of range. Owned by tok: valid until clf_tokenizer_free. */
CLF_API const char *clf_tokenizer_token(const clf_tokenizer *tok, int64_t id);
/* Ids of a special token ("[CLS]", "[SEP]", "[UNK]", "[PAD]", ...) or any token; -1 if absent. */
CLF_API int64_t clf_tokenizer_find(const clf_tokenizer *tok, const char *token);
/* Encodes UTF-8 text as [CLS] pieces [SEP], keeping at most max_len ids (>= 2: the pieces are
 * truncated to max_len - 2, as Hugging Face truncates). ids has room for max_len; *count
 * receives the number written. */
CLF_API clf_status clf_tokenizer_encode(const clf_tokenizer *tok, const char *text, int64_t max_len,
                                        int32_t *ids, int64_t *count);

/* ---------------------------------------------------------------- BPE tokenizers (tokenizer.json)
 * Hugging Face's tokenizer.json for BPE models, encoding and decoding as its tokenizers library
 * does:
 *   byte-level BPE (GPT-2, Llama 3, Qwen2): pre-tokenizer ByteLevel (GPT-2's split pattern), or
 *     a Sequence of a Split on the GPT-2, Llama 3 or Qwen2 pattern and ByteLevel; decoder
 *     ByteLevel;
 *   SentencePiece-style BPE (Llama 2, Mistral): the metaspace U+2581 for spaces (normalizer
 *     Prepend + Replace, or a Metaspace pre-tokenizer), byte_fallback to <0xXX> tokens, unknown
 *     pieces to unk_token; decoders Replace, ByteFallback, Fuse, Strip, Metaspace;
 *   added tokens (special or not), matched before anything else, longest first; the
 *     post-processor's single-sequence template (e.g. Llama's <s> first) when add_special is 1;
 *   BPE merges by rank (ignore_merges: a pre-token already in the vocabulary is kept whole).
 * Normalizers: NFC (Qwen2), Prepend, Replace of a string; others (NFKC, Lowercase ...), other
 * split patterns and models are refused, naming what is not supported. Invalid UTF-8 input bytes
 * are encoded as U+FFFD. */
typedef struct clf_bpe clf_bpe;

CLF_API clf_status clf_bpe_load(const char *path, clf_bpe **out, clf_error *err);
CLF_API void clf_bpe_free(clf_bpe *t);
/* One more than the largest id (model vocabulary and added tokens). */
CLF_API int64_t clf_bpe_vocab_size(const clf_bpe *t);
/* The id of a token (vocabulary or added), -1 if absent; the token of an id, NULL if none (owned
 * by t). */
CLF_API int64_t clf_bpe_find(const clf_bpe *t, const char *token);
CLF_API const char *clf_bpe_token(const clf_bpe *t, int64_t id);
/* 1 if id is an added token marked special (skipped by decoding with skip_special). */
CLF_API int clf_bpe_is_special(const clf_bpe *t, int64_t id);
/* Encodes UTF-8 text; add_special: the post-processor's template tokens too. Writes at most cap
 * ids (ids may be NULL when cap is 0); *count receives the number of ids of the whole encoding,
 * and the call fails with CLF_ERROR_SIZE_LIMIT (ids holding the first cap) if it exceeds cap. */
CLF_API clf_status clf_bpe_encode(const clf_bpe *t, const char *text, int add_special, int32_t *ids,
                                  int64_t cap, int64_t *count, clf_error *err);
/* Decodes ids into out (cap bytes, NUL-terminated); *len receives the text's length. Fails with
 * CLF_ERROR_SIZE_LIMIT if it does not fit (out then holds a truncated prefix). Byte sequences
 * that are not UTF-8 become U+FFFD, as in Hugging Face. */
CLF_API clf_status clf_bpe_decode(const clf_bpe *t, const int32_t *ids, int64_t n, int skip_special,
                                  char *out, size_t cap, size_t *len, clf_error *err);

/* Streaming decoding, one id at a time, as tokenizers' DecodeStream: text is released only once
 * it is complete (a UTF-8 character split across tokens comes out whole with its last byte).
 * Released text is never taken back: where a later id would change it (a released byte token
 * followed by bytes that make the run invalid UTF-8, where tokenizers' DecodeStream fails), the
 * stream goes on with the new ids' own text, and the concatenation then differs from
 * clf_bpe_decode of all the ids. */
typedef struct clf_bpe_stream clf_bpe_stream;
CLF_API clf_status clf_bpe_stream_create(const clf_bpe *t, int skip_special, clf_bpe_stream **out);
CLF_API void clf_bpe_stream_free(clf_bpe_stream *s);
/* Feeds one id; out (cap bytes, NUL-terminated) receives the new text, possibly empty. */
CLF_API clf_status clf_bpe_stream_next(clf_bpe_stream *s, int32_t id, char *out, size_t cap,
                                       size_t *len);

#ifdef __cplusplus
}
#endif

#endif /* CLFORMER_IO_H */
