/*
 * unicode.h — the Unicode and UTF-8 helpers the tokenizers share (unicode.c), over the generated
 * tables of unicode_tables.c.
 */
#ifndef CLFORMER_UNICODE_H
#define CLFORMER_UNICODE_H

#include "unicode_tables.h"

#include <stdbool.h>

/* cp in one of the n sorted ranges r. */
bool clf__in_ranges(const clf_cp_range *r, size_t n, uint32_t cp);
/* Unicode's White_Space property (\s of the split patterns; BERT's whitespace). */
bool clf__is_white_space(uint32_t c);
/* General categories L* and N* (\p{L}, \p{N}). */
bool clf__is_letter(uint32_t c);
bool clf__is_number(uint32_t c);
/* Next code point of UTF-8 text at *p (advanced); invalid sequences give 0xFFFD. */
uint32_t clf__utf8_next(const unsigned char **p);
/* Writes c as UTF-8 into o (room for 4); returns the bytes written. */
int clf__utf8_put(uint32_t c, char *o);
/* Unicode normalization form C of UTF-8 text p[0..n) (invalid sequences already U+FFFD) into a
 * malloc'ed NUL-terminated string *out of *out_len bytes; 0, or -1 when out of memory. */
int clf__nfc(const char *p, size_t n, char **out, size_t *out_len);
/* FNV-1a of n bytes (the tokenizers' hash tables). */
uint64_t clf__hash_bytes(const char *s, size_t n);

#endif
