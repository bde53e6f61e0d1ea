/* libFuzzer target: the BPE tokenizers of tokenizer.json on any bytes (invalid UTF-8 included).
 * The first byte picks one of two small tokenizers (byte-level BPE with Llama 3's split pattern;
 * SentencePiece-style metaspace BPE with byte fallback and an added token). Every id must be in
 * the vocabulary, decoding must succeed, a byte-level encoding must decode to the input (invalid
 * bytes read as U+FFFD), and the streamed pieces must add up to a prefix of the whole decoding. */
#define _DEFAULT_SOURCE /* mkstemp */
#include "../../src/internal.h"
#include "../../src/unicode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The byte-level alphabet (GPT-2's bytes_to_unicode) as vocabulary entries "c": id, and a few
 * merges over it; or a metaspace vocabulary with byte tokens. */
static char *bytelevel_json(void) {
    size_t cap = 1 << 16, n = 0;
    char *j = malloc(cap);
    if (!j) abort();
    n += (size_t)snprintf(
        j + n, cap - n,
        "{\"added_tokens\": [{\"id\": 300, \"content\": \"<|eot|>\", "
        "\"special\": true}], \"pre_tokenizer\": {\"type\": \"Sequence\", "
        "\"pretokenizers\": [{\"type\": \"Split\", \"pattern\": {\"Regex\": "
        "\"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|"
        "\\\\p{N}{1,3}| ?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|\\\\s*[\\\\r\\\\n]+|"
        "\\\\s+(?!\\\\S)|\\\\s+\"}, \"behavior\": \"Isolated\", \"invert\": "
        "false}, {\"type\": \"ByteLevel\", \"use_regex\": false}]}, "
        "\"decoder\": {\"type\": \"ByteLevel\"}, \"model\": {\"type\": \"BPE\", "
        "\"vocab\": {");
    int m = 0;
    for (int b = 0; b < 256; b++) {
        const int printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
        const unsigned cp = printable ? (unsigned)b : 256u + (unsigned)m++;
        char u[8];
        int k = cp < 0x80 ? (u[0] = (char)cp, 1)
                          : (u[0] = (char)(0xC0 | cp >> 6), u[1] = (char)(0x80 | (cp & 0x3F)), 2);
        u[k] = '\0';
        if (cp == '"' || cp == '\\')
            n += (size_t)snprintf(j + n, cap - n, "\"\\%s\": %d, ", u, b);
        else
            n += (size_t)snprintf(j + n, cap - n, "\"%s\": %d, ", u, b);
    }
    n += (size_t)snprintf(
        j + n, cap - n,
        "\"th\": 256, \"the\": 257, \"\xC4\xA0t\": 258, \"\xC4\xA0the\": 259, "
        "\"in\": 260, \"\xC4\xA0th\": 261}, \"merges\": [\"t h\", \"th e\", \"\xC4\xA0 t\", "
        "\"\xC4\xA0t h\", \"\xC4\xA0th e\", \"i n\"], \"ignore_merges\": true}}");
    return j;
}

static const char k_meta_json[] =
    "{\"added_tokens\": [{\"id\": 0, \"content\": \"<unk>\", \"special\": true}, {\"id\": 1, "
    "\"content\": \"<s>\", \"special\": true}], \"normalizer\": {\"type\": \"Sequence\", "
    "\"normalizers\": [{\"type\": \"Prepend\", \"prepend\": \"\xE2\x96\x81\"}, {\"type\": "
    "\"Replace\", \"pattern\": {\"String\": \" \"}, \"content\": \"\xE2\x96\x81\"}]}, "
    "\"decoder\": {\"type\": \"Sequence\", \"decoders\": [{\"type\": \"Replace\", \"pattern\": "
    "{\"String\": \"\xE2\x96\x81\"}, \"content\": \" \"}, {\"type\": \"ByteFallback\"}, "
    "{\"type\": \"Fuse\"}, {\"type\": \"Strip\", \"content\": \" \", \"start\": 1, \"stop\": 0}]}, "
    "\"model\": {\"type\": \"BPE\", \"byte_fallback\": true, \"fuse_unk\": true, \"unk_token\": "
    "\"<unk>\", \"vocab\": {\"<unk>\": 0, \"<s>\": 1, \"\xE2\x96\x81\": 2, \"a\": 3, \"b\": 4, "
    "\"ab\": 5, \"\xE2\x96\x81"
    "a\": 6, \"\xE2\x96\x81"
    "ab\": 7, \"\xE4\xB8\xAD\": 8";

static clf_bpe *tokenizer(int which) {
    static clf_bpe *t[2];
    if (t[which]) return t[which];
    char path[] = "/tmp/clf-fuzz-bpe-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) abort();
    char *json = which == 0 ? bytelevel_json() : NULL;
    if (which == 1) { /* byte tokens <0x00> .. <0xFF> as ids 9 .. 264 */
        json = malloc(1 << 15);
        if (!json) abort();
        size_t n = (size_t)snprintf(json, 1 << 15, "%s", k_meta_json);
        for (int b = 0; b < 256; b++)
            n += (size_t)snprintf(json + n, (1 << 15) - n, ", \"<0x%02X>\": %d", b, 9 + b);
        snprintf(json + n, (1 << 15) - n,
                 "}, \"merges\": [\"a b\", \"\xE2\x96\x81 a\", \"\xE2\x96\x81"
                 "a b\"]}}");
    }
    const size_t len = strlen(json);
    if (write(fd, json, len) != (ssize_t)len) abort();
    close(fd);
    free(json);
    clf_error err = {""};
    if (clf_bpe_load(path, &t[which], &err) != CLF_SUCCESS) {
        fprintf(stderr, "%s\n", err.message);
        abort();
    }
    unlink(path);
    return t[which];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const int which = size ? data[0] & 1 : 0;
    clf_bpe *t = tokenizer(which);
    char *text = malloc(size + 1);
    if (!text) abort();
    if (size) memcpy(text, data + 1, size - 1);
    text[size ? size - 1 : 0] = '\0';
    int64_t n = 0;
    if (clf_bpe_encode(t, text, 1, NULL, 0, &n, NULL) != CLF_SUCCESS && n == 0 && text[0]) abort();
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)(n + 1));
    const size_t cap = 4 * size + 64;
    char *out = malloc(cap), *streamed = malloc(cap), *piece = malloc(cap);
    if (!ids || !out || !streamed || !piece) abort();
    int64_t n2 = 0;
    if (clf_bpe_encode(t, text, 0, ids, n + 1, &n2, NULL) != CLF_SUCCESS) abort();
    for (int64_t i = 0; i < n2; i++)
        if (ids[i] < 0 || ids[i] >= clf_bpe_vocab_size(t)) abort();
    size_t len;
    if (clf_bpe_decode(t, ids, n2, 0, out, cap, &len, NULL) != CLF_SUCCESS) abort();
    if (which == 0) { /* byte-level: exact, invalid bytes as U+FFFD */
        size_t k = 0;
        const unsigned char *p = (const unsigned char *)text;
        char want[8];
        while (*p) {
            const unsigned char *c0 = p;
            const uint32_t c = clf__utf8_next(&p);
            const int w = c == 0xFFFD && !(p - c0 == 3 && c0[0] == 0xEF)
                              ? clf__utf8_put(0xFFFD, want)
                              : (memcpy(want, c0, (size_t)(p - c0)), (int)(p - c0));
            if (k + (size_t)w > len || memcmp(out + k, want, (size_t)w) != 0) abort();
            k += (size_t)w;
        }
        if (k != len) abort();
    }
    clf_bpe_stream *s = NULL;
    if (clf_bpe_stream_create(t, 0, &s) != CLF_SUCCESS) abort();
    size_t at = 0;
    for (int64_t i = 0; i < n2; i++) {
        size_t pl;
        if (clf_bpe_stream_next(s, ids[i], piece, cap, &pl) != CLF_SUCCESS) abort();
        memcpy(streamed + at, piece, pl);
        at += pl;
    }
    clf_bpe_stream_free(s);
    if (at > len || memcmp(streamed, out, at) != 0) abort();
    free(ids);
    free(out);
    free(streamed);
    free(piece);
    free(text);
    return 0;
}
