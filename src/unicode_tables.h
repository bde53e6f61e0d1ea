/*
 * unicode_tables.h — the Unicode tables of the tokenizers (WordPiece, BPE) (src/unicode_tables.c is generated
 * by tools/gen_unicode_tables.py). All arrays are sorted by code point.
 */
#ifndef CLFORMER_UNICODE_TABLES_H
#define CLFORMER_UNICODE_TABLES_H

#include <stddef.h>
#include <stdint.h>

typedef struct clf_fold_entry {
    uint32_t cp;
    uint8_t len;     /* 0: the code point is deleted */
    uint32_t out[3]; /* lowercase, accents stripped */
} clf_fold_entry;

typedef struct clf_cp_range {
    uint32_t first, last;
} clf_cp_range;

extern const clf_fold_entry clf__fold[];
extern const size_t clf__fold_count;
extern const clf_cp_range clf__other[]; /* Cc, Cf, Cs, Co */
extern const size_t clf__other_count;
extern const clf_cp_range clf__punct[]; /* P* */
extern const size_t clf__punct_count;
extern const clf_cp_range clf__letter[]; /* L* */
extern const size_t clf__letter_count;
extern const clf_cp_range clf__number[]; /* N* */
extern const size_t clf__number_count;

#endif
