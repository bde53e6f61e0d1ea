/*
 * unicode.c — Unicode classes and UTF-8 for the tokenizers (see unicode.h).
 */
#include "unicode.h"

#include <stdlib.h>
#include <string.h>

bool clf__in_ranges(const clf_cp_range *r, size_t n, uint32_t cp) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cp < r[mid].first)
            hi = mid;
        else if (cp > r[mid].last)
            lo = mid + 1;
        else
            return true;
    }
    return false;
}

bool clf__is_white_space(uint32_t c) {
    return c == ' ' || (c >= 0x09 && c <= 0x0D) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
           c == 0x205F || c == 0x3000;
}

bool clf__is_letter(uint32_t c) {
    if (c < 128) return (c | 32) >= 'a' && (c | 32) <= 'z';
    return clf__in_ranges(clf__letter, clf__letter_count, c);
}

bool clf__is_number(uint32_t c) {
    if (c < 128) return c >= '0' && c <= '9';
    return clf__in_ranges(clf__number, clf__number_count, c);
}

uint32_t clf__utf8_next(const unsigned char **p) {
    const unsigned char *s = *p;
    uint32_t c = s[0];
    int n = c < 0x80             ? 0
            : (c & 0xE0) == 0xC0 ? 1
            : (c & 0xF0) == 0xE0 ? 2
            : (c & 0xF8) == 0xF0 ? 3
                                 : -1;
    if (n < 0) {
        *p = s + 1;
        return 0xFFFD;
    }
    c = n == 0 ? c : c & (0x3F >> n);
    for (int i = 1; i <= n; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            *p = s + i;
            return 0xFFFD;
        }
        c = c << 6 | (s[i] & 0x3F);
    }
    *p = s + n + 1;
    static const uint32_t min[4] = {0, 0x80, 0x800, 0x10000};
    if (c < min[n] || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return 0xFFFD;
    return c;
}

int clf__utf8_put(uint32_t c, char *o) {
    if (c < 0x80) {
        o[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        o[0] = (char)(0xC0 | c >> 6);
        o[1] = (char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        o[0] = (char)(0xE0 | c >> 12);
        o[1] = (char)(0x80 | ((c >> 6) & 0x3F));
        o[2] = (char)(0x80 | (c & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | c >> 18);
    o[1] = (char)(0x80 | ((c >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((c >> 6) & 0x3F));
    o[3] = (char)(0x80 | (c & 0x3F));
    return 4;
}

uint64_t clf__hash_bytes(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

/* ---------------------------------------------------------------- NFC */

#define HANGUL_S 0xAC00
#define HANGUL_L 0x1100
#define HANGUL_V 0x1161
#define HANGUL_T 0x11A7
#define HANGUL_N 11172 /* syllables */

/* bsearch over a table whose entries start with their code point. */
static int by_cp(const void *key, const void *entry) {
    const uint32_t k = *(const uint32_t *)key, c = *(const uint32_t *)entry;
    return (k > c) - (k < c);
}

static int ccc_of(uint32_t c) {
    if (c < 0x300) return 0;
    const clf_ccc_entry *e = bsearch(&c, clf__ccc, clf__ccc_count, sizeof(clf__ccc[0]), by_cp);
    return e ? e->ccc : 0;
}

static const clf_decomp_entry *decomp_of(uint32_t c) {
    return bsearch(&c, clf__decomp, clf__decomp_count, sizeof(clf__decomp[0]), by_cp);
}

/* The primary composite of (a, b), or 0. */
static uint32_t compose(uint32_t a, uint32_t b) {
    if (a >= HANGUL_L && a < HANGUL_L + 19 && b >= HANGUL_V && b < HANGUL_V + 21)
        return HANGUL_S + ((a - HANGUL_L) * 21 + (b - HANGUL_V)) * 28;
    if (a >= HANGUL_S && a < HANGUL_S + HANGUL_N && (a - HANGUL_S) % 28 == 0 && b > HANGUL_T &&
        b < HANGUL_T + 28)
        return a + (b - HANGUL_T);
    size_t lo = 0, hi = clf__compose_count;
    while (lo < hi) {
        const size_t mid = (lo + hi) / 2;
        const clf_compose_entry *e = &clf__compose[mid];
        if (a < e->first || (a == e->first && b < e->second))
            hi = mid;
        else if (a > e->first || b > e->second)
            lo = mid + 1;
        else
            return e->composite;
    }
    return 0;
}

/* Appends the full canonical decomposition of c to d (room for 4 more per level). */
static size_t decompose(uint32_t c, uint32_t *d, size_t n) {
    if (c >= HANGUL_S && c < HANGUL_S + HANGUL_N) {
        const uint32_t s = c - HANGUL_S;
        d[n++] = HANGUL_L + s / 588;
        d[n++] = HANGUL_V + (s % 588) / 28;
        if (s % 28) d[n++] = HANGUL_T + s % 28;
        return n;
    }
    const clf_decomp_entry *e = c >= 0xC0 ? decomp_of(c) : NULL;
    if (!e) {
        d[n++] = c;
        return n;
    }
    n = decompose(e->out[0], d, n);
    return e->len == 2 ? decompose(e->out[1], d, n) : n;
}

int clf__nfc(const char *p, size_t n, char **out, size_t *out_len) {
    size_t i = 0;
    while (i < n && (unsigned char)p[i] < 0xCC) /* below U+0300 the text is already NFC */
        i++;
    if (i == n) {
        char *o = malloc(n + 1);
        if (!o) return -1;
        memcpy(o, p, n);
        o[n] = '\0';
        *out = o;
        *out_len = n;
        return 0;
    }
    /* decompose (a canonical decomposition has at most 4 code points), then order each run of
     * non-starters by combining class (stable) */
    uint32_t *d = malloc(sizeof(uint32_t) * (4 * n + 4));
    if (!d) return -1;
    size_t m = 0;
    const unsigned char *s = (const unsigned char *)p, *end = s + n;
    while (s < end)
        m = decompose(clf__utf8_next(&s), d, m);
    for (size_t k = 1; k < m; k++) {
        const int c = ccc_of(d[k]);
        if (!c) continue;
        for (size_t j = k; j > 0 && ccc_of(d[j - 1]) > c; j--) {
            const uint32_t t = d[j];
            d[j] = d[j - 1];
            d[j - 1] = t;
        }
    }
    /* compose each character with the last starter unless blocked */
    size_t len = 0, starter = (size_t)-1;
    int prev_ccc = 0;
    for (size_t k = 0; k < m; k++) {
        const int c = ccc_of(d[k]);
        if (starter != (size_t)-1 && (starter == len - 1 || (prev_ccc != 0 && prev_ccc < c))) {
            const uint32_t x = compose(d[starter], d[k]);
            if (x) {
                d[starter] = x;
                continue;
            }
        }
        if (c == 0) starter = len;
        prev_ccc = c;
        d[len++] = d[k];
    }
    char *o = malloc(4 * len + 1);
    if (!o) {
        free(d);
        return -1;
    }
    size_t bytes = 0;
    for (size_t k = 0; k < len; k++)
        bytes += (size_t)clf__utf8_put(d[k], o + bytes);
    o[bytes] = '\0';
    free(d);
    *out = o;
    *out_len = bytes;
    return 0;
}
