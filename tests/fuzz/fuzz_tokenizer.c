/* libFuzzer target: the WordPiece tokenizer on any bytes (invalid UTF-8 included), with a small
 * vocabulary. The first byte picks max_len; the output must be [CLS] ... [SEP], at most max_len
 * ids, every id in the vocabulary. */
#define _DEFAULT_SOURCE /* mkstemp */
#include "../../src/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static clf_tokenizer *vocab(void) {
    static clf_tokenizer *t;
    if (t) return t;
    char path[] = "/tmp/clf-fuzz-vocab-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) abort();
    static const char words[] = "[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\n##s\na\n##b\nab\nc\n##c\n,\n.\n!"
                                "\n中\ne\n##e\nhello\nworld\n##ing\n1\n##2\n$\n";
    if (write(fd, words, sizeof(words) - 1) != (ssize_t)(sizeof(words) - 1)) abort();
    close(fd);
    clf_error err = {""};
    if (clf_tokenizer_load(path, &t, &err) != CLF_SUCCESS) abort();
    unlink(path);
    return t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    clf_tokenizer *t = vocab();
    const int64_t max_len = size ? 2 + data[0] % 40 : 8;
    char *text = malloc(size + 1);
    int32_t *ids = malloc((size_t)max_len * sizeof(int32_t));
    if (!text || !ids) abort();
    if (size) memcpy(text, data + 1, size - 1);
    text[size ? size - 1 : 0] = '\0';
    int64_t n = -1;
    if (clf_tokenizer_encode(t, text, max_len, ids, &n) != CLF_SUCCESS) abort();
    if (n < 2 || n > max_len) abort();
    if (ids[0] != clf_tokenizer_find(t, "[CLS]") || ids[n - 1] != clf_tokenizer_find(t, "[SEP]"))
        abort();
    for (int64_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= clf_tokenizer_vocab_size(t)) abort();
    free(text);
    free(ids);
    return 0;
}
