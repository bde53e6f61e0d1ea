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

/* ---------------------------------------------------------------- GGUF
 * llama.cpp's model format, versions 2 and 3 (little-endian): metadata (typed key/value pairs,
 * arrays nested to any depth), tensor infos, then the tensor data at general.alignment (default
 * 32). The file is memory-mapped, never read whole; opening it checks everything against the
 * file before use: every count, length, offset and size, the value and tensor types, duplicate
 * keys and tensor names, the alignment, tensors inside the data and not overlapping. A file that
 * fails is refused with CLF_ERROR_BAD_FORMAT naming the key or tensor. Tensors of a ggml type
 * clformer has no kernels for (Q5_K, IQ4_XS ...) are listed (dtype -1) and refused on load,
 * naming the type and the tensor. */
typedef struct clf_gguf clf_gguf;

/* Metadata value types, numbered as in the format. */
typedef enum {
    CLF_GGUF_U8 = 0,
    CLF_GGUF_I8 = 1,
    CLF_GGUF_U16 = 2,
    CLF_GGUF_I16 = 3,
    CLF_GGUF_U32 = 4,
    CLF_GGUF_I32 = 5,
    CLF_GGUF_F32 = 6,
    CLF_GGUF_BOOL = 7,
    CLF_GGUF_STRING = 8,
    CLF_GGUF_ARRAY = 9,
    CLF_GGUF_U64 = 10,
    CLF_GGUF_I64 = 11,
    CLF_GGUF_F64 = 12
} clf_gguf_type;

typedef struct clf_gguf_tensor {
    const char *name; /* NUL-terminated, owned by the clf_gguf */
    int ndim;         /* 1 .. 4 */
    int64_t ne[4];    /* ggml's order: ne[0] is the contiguous dimension (a row of a matrix);
                       * PyTorch's shape is ne reversed */
    int ggml_type;    /* the file's type number (ggml_type) */
    int dtype;        /* its clf_dtype, or -1 when clformer has no such type */
    uint64_t offset;  /* absolute, in the file */
    uint64_t bytes;
    const void *data; /* in the mapping: valid until clf_gguf_free */
} clf_gguf_tensor;

CLF_API clf_status clf_gguf_open(const char *path, clf_gguf **out, clf_error *err);
CLF_API void clf_gguf_free(clf_gguf *g);
CLF_API uint32_t clf_gguf_version(const clf_gguf *g);
/* Metadata: the count, key i (NUL-terminated, owned by g) and its type; a key's index or -1. */
CLF_API size_t clf_gguf_kv_count(const clf_gguf *g);
CLF_API const char *clf_gguf_key(const clf_gguf *g, size_t i);
CLF_API clf_gguf_type clf_gguf_kv_type(const clf_gguf *g, size_t i);
CLF_API int64_t clf_gguf_find_key(const clf_gguf *g, const char *key);
/* Typed reads of a value (CLF_ERROR_NOT_FOUND when the key is absent, CLF_ERROR_BAD_FORMAT naming
 * it when its type does not fit; err may be NULL): an integer of any integer type or a bool
 * (a U64 past INT64_MAX does not fit); a number of any numeric type; a string, as a pointer into
 * the mapping and its length (not NUL-terminated). */
CLF_API clf_status clf_gguf_get_int(const clf_gguf *g, const char *key, int64_t *out,
                                    clf_error *err);
CLF_API clf_status clf_gguf_get_float(const clf_gguf *g, const char *key, double *out,
                                      clf_error *err);
CLF_API clf_status clf_gguf_get_string(const clf_gguf *g, const char *key, const char **s,
                                       size_t *len, clf_error *err);
/* An array's element type and count; element i of a string array (pointer and length), of a
 * numeric one (as a double; integers up to 2^53 exactly) or of an integer one (as int64). */
CLF_API clf_status clf_gguf_get_array(const clf_gguf *g, const char *key, clf_gguf_type *elem,
                                      uint64_t *count, clf_error *err);
CLF_API clf_status clf_gguf_array_string(const clf_gguf *g, const char *key, uint64_t i,
                                         const char **s, size_t *len, clf_error *err);
CLF_API clf_status clf_gguf_array_float(const clf_gguf *g, const char *key, uint64_t i, double *out,
                                        clf_error *err);
CLF_API clf_status clf_gguf_array_int(const clf_gguf *g, const char *key, uint64_t i, int64_t *out,
                                      clf_error *err);
/* Tensors, in file order; by name, or NULL. */
CLF_API size_t clf_gguf_tensor_count(const clf_gguf *g);
CLF_API const clf_gguf_tensor *clf_gguf_tensor_at(const clf_gguf *g, size_t i);
CLF_API const clf_gguf_tensor *clf_gguf_tensor_find(const clf_gguf *g, const char *name);
/* The name of a ggml type number ("Q5_K"), or NULL for a number ggml does not define. */
CLF_API const char *clf_gguf_type_name(int ggml_type);
/* A tensor as a device tensor of its own type and PyTorch's shape (ne reversed), copied from the
 * mapping (nothing converted, nothing read into host memory first). A type clformer has no kernels
 * for is CLF_ERROR_UNSUPPORTED naming the type and the tensor. */
CLF_API clf_status clf_gguf_load(clf_context *ctx, const clf_gguf *g, const char *name,
                                 clf_tensor **out);

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
/* The tokenizer inside a GGUF model file (tokenizer.ggml.*) as llama.cpp's converter writes it:
 * a byte-level BPE (model "gpt2"; pre-tokenizer gpt-2, llama-bpe or qwen2), the same tokenizer as
 * the model's tokenizer.json; or SentencePiece's (model "llama": Llama 2, Mistral 7B), as a BPE
 * whose merges come from the pieces' scores, as Hugging Face converts it. CLF_ERROR_NOT_FOUND
 * when the file has none; other models and pre-tokenizers are CLF_ERROR_UNSUPPORTED. */
CLF_API clf_status clf_bpe_load_gguf(const char *path, clf_bpe **out, clf_error *err);
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
