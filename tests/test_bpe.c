/*
 * test_bpe.c — the BPE tokenizers of tokenizer.json against Hugging Face's tokenizers (host only):
 * five small tokenizers trained by tools/make_bpe_fixtures.py (byte-level GPT-2, Llama 3 and Qwen2
 * styles; SentencePiece-style Llama 2 and Mistral with byte fallback) on texts with emoji, CJK,
 * combining marks, digits, whitespace runs, code and special tokens: ids identical with and
 * without the template, decoding identical (special tokens kept and skipped), streaming decoding
 * identical piece by piece, and decode(encode(text)) == text where tokenizers round-trips.
 */
#include "harness.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A call that must succeed (no device context here: the status is the message). */
#define BPE_OK(call)                                                                               \
    do {                                                                                           \
        clf_status st_ = (call);                                                                   \
        if (st_ != CLF_SUCCESS) fail_msg("%s -> %s", #call, clf_strerror(st_));                    \
    } while (0)

static const char *const k_names[] = {"gpt2", "llama3", "qwen2", "llama2", "mistral"};
#define N_TOK (sizeof(k_names) / sizeof(k_names[0]))

static cJSON *g_cases;

static clf_bpe *load(const char *name) {
    char path[1024];
    snprintf(path, sizeof(path), "%s/tests/data/bpe/%s.json", CLF_SRC, name);
    clf_bpe *t = NULL;
    clf_error err;
    if (clf_bpe_load(path, &t, &err) != CLF_SUCCESS) fail_msg("%s: %s", name, err.message);
    return t;
}

static int setup(void **state) {
    (void)state;
    char path[1024];
    snprintf(path, sizeof(path), "%s/tests/data/bpe/cases.json", CLF_SRC);
    char *text = harness_slurp(path);
    if (!text) return -1;
    g_cases = cJSON_Parse(text);
    free(text);
    return g_cases ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    cJSON_Delete(g_cases);
    return 0;
}

static void expect_ids(const char *name, const char *text, const char *what, const int32_t *got,
                       int64_t n, const cJSON *want) {
    const int64_t wn = cJSON_GetArraySize(want);
    int64_t bad = n == wn ? -1 : (n < wn ? n : wn);
    for (int64_t i = 0; bad < 0 && i < n; i++)
        if (got[i] != (int32_t)cJSON_GetArrayItem(want, (int)i)->valuedouble) bad = i;
    if (bad >= 0)
        fail_msg("%s %s of \"%s\": %lld ids, tokenizers %lld; first difference at %lld (%d vs "
                 "%d)",
                 name, what, text, (long long)n, (long long)wn, (long long)bad,
                 bad < n ? got[bad] : -1,
                 bad < wn ? (int)cJSON_GetArrayItem(want, (int)bad)->valuedouble : -1);
}

/* The tokenizer of a GGUF file (tests/data/bpe/<name>.gguf: the byte-level fixtures as llama.cpp's
 * converter writes them, tools/make_lm_gguf_fixtures.py). */
static clf_bpe *load_gguf(const char *name) {
    char path[1024];
    snprintf(path, sizeof(path), "%s/tests/data/bpe/%s.gguf", CLF_SRC, name);
    clf_bpe *t = NULL;
    clf_error err;
    if (clf_bpe_load_gguf(path, &t, &err) != CLF_SUCCESS) fail_msg("%s: %s", name, err.message);
    return t;
}

static void matches_tokenizers(size_t first, size_t count, clf_bpe *(*loader)(const char *)) {
    const cJSON *texts = cJSON_GetObjectItem(g_cases, "texts");
    const cJSON *results = cJSON_GetObjectItem(g_cases, "results");
    int32_t ids[4096];
    char out[8192];
    for (size_t k = first; k < first + count; k++) {
        clf_bpe *t = loader(k_names[k]);
        const cJSON *rows = cJSON_GetObjectItem(results, k_names[k]);
        assert_int_equal(cJSON_GetArraySize(rows), cJSON_GetArraySize(texts));
        for (int i = 0; i < cJSON_GetArraySize(texts); i++) {
            const char *text = cJSON_GetArrayItem(texts, i)->valuestring;
            const cJSON *row = cJSON_GetArrayItem(rows, i);
            int64_t n;
            clf_error err;
            BPE_OK(clf_bpe_encode(t, text, 0, ids, 4096, &n, &err));
            expect_ids(k_names[k], text, "ids", ids, n, cJSON_GetObjectItem(row, "ids"));
            size_t len;
            BPE_OK(clf_bpe_decode(t, ids, n, 0, out, sizeof(out), &len, &err));
            const char *want = cJSON_GetObjectItem(row, "decoded")->valuestring;
            if (strcmp(out, want) != 0 || len != strlen(want))
                fail_msg("%s decode of \"%s\": \"%s\", tokenizers \"%s\"", k_names[k], text, out,
                         want);
            /* streaming: the same text, released in the same pieces */
            clf_bpe_stream *s = NULL;
            BPE_OK(clf_bpe_stream_create(t, 0, &s));
            const cJSON *pieces = cJSON_GetObjectItem(row, "stream");
            for (int64_t j = 0; j < n; j++) {
                char piece[256];
                BPE_OK(clf_bpe_stream_next(s, ids[j], piece, sizeof(piece), &len));
                const char *wp = cJSON_GetArrayItem(pieces, (int)j)->valuestring;
                if (strcmp(piece, wp) != 0)
                    fail_msg("%s stream of \"%s\", id %lld: \"%s\", tokenizers \"%s\"", k_names[k],
                             text, (long long)j, piece, wp);
            }
            clf_bpe_stream_free(s);
            /* with the template, and decoding that skips special tokens */
            BPE_OK(clf_bpe_encode(t, text, 1, ids, 4096, &n, &err));
            expect_ids(k_names[k], text, "ids with the template", ids, n,
                       cJSON_GetObjectItem(row, "ids_special"));
            BPE_OK(clf_bpe_decode(t, ids, n, 1, out, sizeof(out), &len, &err));
            want = cJSON_GetObjectItem(row, "decoded_skip")->valuestring;
            if (strcmp(out, want) != 0)
                fail_msg("%s decode (skip special) of \"%s\": \"%s\", tokenizers \"%s\"",
                         k_names[k], text, out, want);
        }
        clf_bpe_free(t);
    }
}

static void test_matches_tokenizers(void **state) {
    (void)state;
    matches_tokenizers(0, N_TOK, load);
}

/* The byte-level ones (gpt2, llama3, qwen2: the first three) from GGUF files give tokenizers'
 * ids, text and pieces as their tokenizer.json does; a file without a tokenizer, and one whose
 * tokenizer is not a byte-level BPE, are refused with a message. */
static void test_gguf_tokenizers(void **state) {
    (void)state;
    matches_tokenizers(0, 3, load_gguf);
    clf_bpe *a = load("llama3"), *b = load_gguf("llama3");
    assert_int_equal(clf_bpe_vocab_size(a), clf_bpe_vocab_size(b));
    for (int64_t i = 0; i < clf_bpe_vocab_size(a); i++) {
        assert_string_equal(clf_bpe_token(a, i), clf_bpe_token(b, i));
        assert_int_equal(clf_bpe_is_special(a, i), clf_bpe_is_special(b, i));
    }
    clf_bpe_free(a);
    clf_bpe_free(b);
    static const struct {
        const char *path; /* under tests/data */
        clf_status st;
        const char *says;
    } refused[] = {
        {"gguf/reader.gguf", CLF_ERROR_NOT_FOUND, "no tokenizer"},
        {"lm/gguf/llama_q8_0.gguf", CLF_ERROR_NOT_FOUND, "no tokenizer"},
        {"bpe/gpt2.json", CLF_ERROR_BAD_FORMAT, "GGUF"},
    };
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        char path[1024];
        snprintf(path, sizeof(path), "%s/tests/data/%s", CLF_SRC, refused[i].path);
        clf_bpe *t = (clf_bpe *)&t;
        clf_error err;
        assert_int_equal(clf_bpe_load_gguf(path, &t, &err), refused[i].st);
        assert_null(t);
        if (!strstr(err.message, refused[i].says))
            fail_msg("%s: \"%s\" does not say %s", refused[i].path, err.message, refused[i].says);
    }
}

/* SentencePiece's model from a GGUF file (tests/data/bpe/spm.gguf, tools/make_spm_fixtures.py:
 * a BPE model the sentencepiece package trained as Llama's was set up, written as llama.cpp's
 * converter writes Llama 2's) gives sentencepiece's own ids and decoding (spm_cases.json), and
 * BOS in front with the template. */
static void test_gguf_sentencepiece(void **state) {
    (void)state;
    char path[1024];
    snprintf(path, sizeof(path), "%s/tests/data/bpe/spm_cases.json", CLF_SRC);
    char *text = harness_slurp(path);
    assert_non_null(text);
    cJSON *j = cJSON_Parse(text);
    free(text);
    assert_non_null(j);
    clf_bpe *t = load_gguf("spm");
    const int bos = (int)cJSON_GetObjectItem(j, "bos")->valuedouble;
    const cJSON *c;
    int32_t ids[4096];
    char out[8192];
    int cases = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(j, "cases")) {
        const char *s = cJSON_GetObjectItem(c, "text")->valuestring;
        int64_t n;
        size_t len;
        clf_error err;
        BPE_OK(clf_bpe_encode(t, s, 0, ids, 4096, &n, &err));
        expect_ids("spm", s, "ids", ids, n, cJSON_GetObjectItem(c, "ids"));
        BPE_OK(clf_bpe_decode(t, ids, n, 0, out, sizeof(out), &len, &err));
        const char *want = cJSON_GetObjectItem(c, "decoded")->valuestring;
        if (strcmp(out, want) != 0)
            fail_msg("spm decode of \"%s\": \"%s\", sentencepiece \"%s\"", s, out, want);
        BPE_OK(clf_bpe_encode(t, s, 1, ids, 4096, &n, &err));
        assert_true(n >= 1);
        assert_int_equal(ids[0], bos);
        cases++;
    }
    assert_true(cases >= 20);
    clf_bpe_free(t);
    cJSON_Delete(j);
}

/* The byte-level tokenizers without a normalizer (gpt2, llama3) round-trip every text exactly
 * (qwen2's NFC turns decomposed text into composed text). */
static void test_round_trip(void **state) {
    (void)state;
    const cJSON *texts = cJSON_GetObjectItem(g_cases, "texts");
    int32_t ids[4096];
    char out[8192];
    for (size_t k = 0; k < 2; k++) {
        clf_bpe *t = load(k_names[k]);
        for (int i = 0; i < cJSON_GetArraySize(texts); i++) {
            const char *text = cJSON_GetArrayItem(texts, i)->valuestring;
            int64_t n;
            size_t len;
            BPE_OK(clf_bpe_encode(t, text, 0, ids, 4096, &n, NULL));
            BPE_OK(clf_bpe_decode(t, ids, n, 0, out, sizeof(out), &len, NULL));
            if (strcmp(out, text) != 0)
                fail_msg("%s: \"%s\" decodes to \"%s\"", k_names[k], text, out);
        }
        clf_bpe_free(t);
    }
}

/* A UTF-8 character split across byte tokens comes out of the stream whole, with its last byte. */
static void test_stream_split_character(void **state) {
    (void)state;
    clf_bpe *t = load("llama2");
    const int64_t e0 = clf_bpe_find(t, "<0xF0>"), e1 = clf_bpe_find(t, "<0x9F>"),
                  e2 = clf_bpe_find(t, "<0xA6>"), e3 = clf_bpe_find(t, "<0x84>");
    assert_true(e0 >= 0 && e1 >= 0 && e2 >= 0 && e3 >= 0);
    const int32_t ids[4] = {(int32_t)e0, (int32_t)e1, (int32_t)e2, (int32_t)e3}; /* U+1F984 */
    clf_bpe_stream *s = NULL;
    BPE_OK(clf_bpe_stream_create(t, 0, &s));
    char piece[64];
    size_t len;
    for (int i = 0; i < 3; i++) {
        BPE_OK(clf_bpe_stream_next(s, ids[i], piece, sizeof(piece), &len));
        assert_int_equal(len, 0);
    }
    BPE_OK(clf_bpe_stream_next(s, ids[3], piece, sizeof(piece), &len));
    assert_string_equal(piece, "\xF0\x9F\xA6\x84");
    clf_bpe_stream_free(s);
    /* decoded whole: the same character; a lone byte: U+FFFD */
    char out[64];
    BPE_OK(clf_bpe_decode(t, ids, 4, 0, out, sizeof(out), &len, NULL));
    assert_string_equal(out, "\xF0\x9F\xA6\x84");
    BPE_OK(clf_bpe_decode(t, ids, 2, 0, out, sizeof(out), &len, NULL));
    assert_string_equal(out, "\xEF\xBF\xBD\xEF\xBF\xBD");
    /* A released byte token ('n') that a later invalid byte (0xF8) would turn into U+FFFD:
     * tokenizers' DecodeStream fails; the stream goes on with the new ids' text. */
    const int32_t odd[3] = {(int32_t)clf_bpe_find(t, "<0x6E>"), (int32_t)clf_bpe_find(t, "<0xF8>"),
                            (int32_t)clf_bpe_find(t, "\xE2\x96\x81"
                                                     "a")};
    assert_true(odd[0] >= 0 && odd[1] >= 0 && odd[2] >= 0);
    BPE_OK(clf_bpe_stream_create(t, 0, &s));
    const char *want[3] = {"n", "", "\xEF\xBF\xBD a"};
    for (int i = 0; i < 3; i++) {
        BPE_OK(clf_bpe_stream_next(s, odd[i], piece, sizeof(piece), &len));
        assert_string_equal(piece, want[i]);
    }
    clf_bpe_stream_free(s);
    clf_bpe_free(t);
}

static void test_bad_input(void **state) {
    (void)state;
    clf_bpe *t = NULL;
    clf_error err;
    assert_int_equal(clf_bpe_load("/nonexistent/tokenizer.json", &t, &err), CLF_ERROR_IO);
    assert_null(t);
    char path[] = "/tmp/clf-bpe-XXXXXX";
    const int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    const struct {
        const char *json, *needle;
        clf_status st;
    } bad[] = {
        {"{", "JSON", CLF_ERROR_BAD_FORMAT},
        {"{\"model\": {\"type\": \"WordPiece\", \"vocab\": {}}}", "WordPiece",
         CLF_ERROR_UNSUPPORTED},
        {"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [\"a b\"]}}",
         "not in the vocab", CLF_ERROR_BAD_FORMAT},
        {"{\"normalizer\": {\"type\": \"NFKC\"}, \"model\": {\"type\": \"BPE\", \"vocab\": {}}}",
         "NFKC", CLF_ERROR_UNSUPPORTED},
        {"{\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"Regex\": \"\\\\w+\"}, "
         "\"behavior\": \"Isolated\"}, \"model\": {\"type\": \"BPE\", \"vocab\": {}}}",
         "\\w+", CLF_ERROR_UNSUPPORTED},
        {"{\"decoder\": {\"type\": \"WordPiece\"}, \"model\": {\"type\": \"BPE\", \"vocab\": {}}}",
         "WordPiece", CLF_ERROR_UNSUPPORTED},
        {"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 0}}}", "both",
         CLF_ERROR_BAD_FORMAT},
        {"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"unk_token\": \"<unk>\"}}",
         "unk_token", CLF_ERROR_BAD_FORMAT},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        harness_write_file(path, bad[i].json);
        assert_int_equal(clf_bpe_load(path, &t, &err), bad[i].st);
        if (!strstr(err.message, bad[i].needle))
            fail_msg("case %zu: \"%s\" does not name \"%s\"", i, err.message, bad[i].needle);
        assert_null(t);
    }
    remove(path);
    t = load("gpt2");
    int32_t ids[64];
    int64_t n;
    assert_int_equal(clf_bpe_encode(t, "Hello world, this is long", 0, ids, 2, &n, &err),
                     CLF_ERROR_SIZE_LIMIT);
    assert_true(n > 2);
    n = 0; /* counting only */
    assert_int_equal(clf_bpe_encode(t, "Hello world, this is long", 0, NULL, 0, &n, &err),
                     CLF_ERROR_SIZE_LIMIT);
    assert_true(n > 2);
    assert_int_equal(clf_bpe_encode(t, NULL, 0, ids, 4, &n, &err), CLF_ERROR_INVALID_ARGUMENT);
    const int32_t oor[1] = {99999};
    char out[8];
    size_t len;
    assert_int_equal(clf_bpe_decode(t, oor, 1, 0, out, sizeof(out), &len, &err),
                     CLF_ERROR_OUT_OF_RANGE);
    BPE_OK(clf_bpe_encode(t, "Hello world", 0, ids, 64, &n, &err));
    assert_int_equal(clf_bpe_decode(t, ids, n, 0, out, 4, &len, &err), CLF_ERROR_SIZE_LIMIT);
    assert_int_equal(len, 11);
    assert_string_equal(out, "Hel");
    /* invalid UTF-8 input is read as U+FFFD */
    BPE_OK(clf_bpe_encode(t,
                          "a\xff"
                          "b",
                          0, ids, 64, &n, &err));
    BPE_OK(clf_bpe_decode(t, ids, n, 0, out, sizeof(out), &len, &err));
    assert_string_equal(out, "a\xEF\xBF\xBD"
                             "b");
    clf_bpe_free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matches_tokenizers),     cmocka_unit_test(test_gguf_tokenizers),
        cmocka_unit_test(test_gguf_sentencepiece),     cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_stream_split_character), cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests_name("bpe", tests, setup, teardown);
}
