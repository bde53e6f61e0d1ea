/* fuzz_util.h — helpers shared by the fuzz targets. */
#ifndef CLF_FUZZ_UTIL_H
#define CLF_FUZZ_UTIL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The fuzzer's bytes as a NUL-terminated string (malloc'ed; NULL if out of memory). */
static inline char *fuzz_text(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (text) {
        if (size) memcpy(text, data, size);
        text[size] = '\0';
    }
    return text;
}

#endif
