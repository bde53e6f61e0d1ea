/*
 * bpe_encode.c — encoding with a loaded BPE tokenizer (bpe.h): added tokens, normalizer, split
 * pattern, byte-level or metaspace mapping, BPE merges by rank with a heap, byte fallback.
 *
 * The split patterns are matched by hand-written code, one function per pattern string clformer
 * knows (GPT-2's, Llama 3's, Qwen2's), following the regex's ordered alternation and its
 * backtracking (e.g. \s+(?!\S) leaves the last space of a run to the word after it).
 */
#include "bpe.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- split patterns */

static bool is_other(uint32_t c) { /* [^\s\p{L}\p{N}] */
    return !clf__is_white_space(c) && !clf__is_letter(c) && !clf__is_number(c);
}
static bool is_nl(uint32_t c) {
    return c == '\r' || c == '\n';
}
static uint32_t lower_ascii(uint32_t c) {
    return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

/* 's 't 're 've 'm 'll 'd at c[i] (case-insensitive if ci); returns the length or 0. */
static size_t contraction(const uint32_t *c, size_t i, size_t n, int ci) {
    if (c[i] != '\'' || i + 1 >= n) return 0;
    const uint32_t a = ci ? lower_ascii(c[i + 1]) : c[i + 1];
    const uint32_t b = i + 2 < n ? (ci ? lower_ascii(c[i + 2]) : c[i + 2]) : 0;
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    return 0;
}

static size_t run(const uint32_t *c, size_t i, size_t n, bool (*pred)(uint32_t)) {
    size_t k = i;
    while (k < n && pred(c[k]))
        k++;
    return k - i;
}

/* \s+(?!\S) then \s+ at a whitespace c[i]. */
static size_t spaces(const uint32_t *c, size_t i, size_t n) {
    const size_t k = run(c, i, n, clf__is_white_space);
    if (i + k == n || k == 1) return k; /* at the end: all; one before a non-space: \s+ */
    return k - 1;                       /* the last space goes with what follows */
}

/* GPT-2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
static size_t match_gpt2(const uint32_t *c, size_t i, size_t n) {
    size_t m = contraction(c, i, n, 0);
    if (m) return m;
    const size_t j = c[i] == ' ' && i + 1 < n ? i + 1 : i;
    bool (*classes[3])(uint32_t) = {clf__is_letter, clf__is_number, is_other};
    for (int k = 0; k < 3; k++) {
        if (classes[k](c[j])) return j - i + run(c, j, n, classes[k]);
        if (j != i && classes[k](c[i])) return run(c, i, n, classes[k]); /* never: c[i] is ' ' */
    }
    if (clf__is_white_space(c[i])) return spaces(c, i, n);
    return 1;
}

static bool not_nl_l_n(uint32_t c) { /* [^\r\n\p{L}\p{N}] */
    return !is_nl(c) && !clf__is_letter(c) && !clf__is_number(c);
}

/* Llama 3 (max_digits 3) and Qwen2 (1):
 * (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,D}| ?[^\s\p{L}\p{N}]+[\r\n]*|
 * \s*[\r\n]+|\s+(?!\S)|\s+ */
static size_t match_llama3(const uint32_t *c, size_t i, size_t n, size_t max_digits) {
    size_t m = contraction(c, i, n, 1);
    if (m) return m;
    if (not_nl_l_n(c[i]) && i + 1 < n && clf__is_letter(c[i + 1]))
        return 1 + run(c, i + 1, n, clf__is_letter);
    if (clf__is_letter(c[i])) return run(c, i, n, clf__is_letter);
    if (clf__is_number(c[i])) {
        m = run(c, i, n, clf__is_number);
        return m < max_digits ? m : max_digits;
    }
    const size_t j = c[i] == ' ' && i + 1 < n && is_other(c[i + 1]) ? i + 1 : i;
    if (is_other(c[j])) {
        const size_t k = j + run(c, j, n, is_other);
        return k - i + run(c, k, n, is_nl);
    }
    if (clf__is_white_space(c[i])) {
        const size_t k = i + run(c, i, n, clf__is_white_space);
        for (size_t x = k; x > i; x--) /* \s*[\r\n]+: up to the run's last newline */
            if (is_nl(c[x - 1])) return x - i;
        return spaces(c, i, n);
    }
    return 1;
}

/* ---------------------------------------------------------------- encoding */

typedef struct ids_out {
    int32_t *ids;
    int64_t cap, n;
} ids_out;

static void emit(ids_out *o, int32_t id) {
    if (o->n < o->cap) o->ids[o->n] = id;
    o->n++;
}

typedef struct pair {
    int32_t rank, pos, left, right;
} pair;

static bool pair_less(const pair *a, const pair *b) {
    return a->rank != b->rank ? a->rank < b->rank : a->pos < b->pos;
}

static void heap_push(pair *h, size_t *n, pair p) {
    size_t i = (*n)++;
    h[i] = p;
    while (i > 0 && pair_less(&h[i], &h[(i - 1) / 2])) {
        pair x = h[i];
        h[i] = h[(i - 1) / 2];
        h[(i - 1) / 2] = x;
        i = (i - 1) / 2;
    }
}

static pair heap_pop(pair *h, size_t *n) {
    pair top = h[0];
    h[0] = h[--(*n)];
    for (size_t i = 0;;) {
        size_t l = 2 * i + 1, r = l + 1, s = i;
        if (l < *n && pair_less(&h[l], &h[s])) s = l;
        if (r < *n && pair_less(&h[r], &h[s])) s = r;
        if (s == i) break;
        pair x = h[i];
        h[i] = h[s];
        h[s] = x;
        i = s;
    }
    return top;
}

/* BPE of one pre-token p[0..len) (in the vocabulary's alphabet). */
static clf_status bpe_word(const clf_bpe *t, const char *p, size_t len, ids_out *o) {
    if (t->ignore_merges) {
        const int32_t whole = clf__bpe_lookup(t, p, len);
        if (whole >= 0) {
            emit(o, whole);
            return CLF_SUCCESS;
        }
    }
    /* symbols: one per character (or per byte, byte fallback), linked */
    int32_t *id = malloc(sizeof(int32_t) * (len + 1) * 5), *prev = id + len + 1,
            *next = prev + len + 1;
    pair *heap = malloc(sizeof(pair) * (len + 1) * 3);
    if (!id || !heap) {
        free(id);
        free(heap);
        return CLF_ERROR_OUT_OF_MEMORY;
    }
    int32_t n = 0;
    const unsigned char *s = (const unsigned char *)p, *end = s + len;
    while (s < end) {
        const unsigned char *c0 = s;
        clf__utf8_next(&s);
        if (s > end) s = end;
        const int32_t x = clf__bpe_lookup(t, (const char *)c0, (size_t)(s - c0));
        if (x >= 0) {
            id[n++] = x;
        } else if (t->byte_fallback) {
            for (const unsigned char *b = c0; b < s; b++)
                id[n++] = t->byte_tok[*b] >= 0 ? t->byte_tok[*b] : t->unk;
        } else if (t->unk >= 0 && !(t->fuse_unk && n > 0 && id[n - 1] == t->unk)) {
            id[n++] = t->unk;
        }
    }
    size_t hn = 0;
    for (int32_t i = 0; i < n; i++) {
        prev[i] = i - 1;
        next[i] = i + 1 < n ? i + 1 : -1;
        int32_t r, m;
        if (i + 1 < n && id[i] >= 0 && id[i + 1] >= 0 &&
            clf__bpe_merge_find(t, id[i], id[i + 1], &r, &m))
            heap_push(heap, &hn, (pair){r, i, id[i], id[i + 1]});
    }
    while (hn > 0) {
        const pair q = heap_pop(heap, &hn);
        const int32_t a = q.pos, b = next[a];
        if (id[a] != q.left || b < 0 || id[b] != q.right) continue; /* stale */
        int32_t r, m;
        clf__bpe_merge_find(t, id[a], id[b], &r, &m);
        id[a] = m;
        id[b] = -2; /* gone */
        next[a] = next[b];
        if (next[b] >= 0) prev[next[b]] = a;
        if (prev[a] >= 0 && clf__bpe_merge_find(t, id[prev[a]], id[a], &r, &m))
            heap_push(heap, &hn, (pair){r, prev[a], id[prev[a]], id[a]});
        if (next[a] >= 0 && clf__bpe_merge_find(t, id[a], id[next[a]], &r, &m))
            heap_push(heap, &hn, (pair){r, a, id[a], id[next[a]]});
    }
    for (int32_t i = 0; n > 0 && i >= 0; i = next[i])
        if (id[i] >= 0) emit(o, id[i]);
    free(id);
    free(heap);
    return CLF_SUCCESS;
}

/* One pre-token: mapped to the byte-level alphabet if the tokenizer is byte-level, then BPE. */
static clf_status piece(const clf_bpe *t, const char *p, size_t len, buf *scratch, ids_out *o) {
    if (!len) return CLF_SUCCESS;
    if (!t->byte_level) return bpe_word(t, p, len, o);
    scratch->n = 0;
    for (size_t i = 0; i < len; i++)
        clf__buf_cp(scratch, t->byte_char[(unsigned char)p[i]]);
    if (scratch->oom) return CLF_ERROR_OUT_OF_MEMORY;
    return bpe_word(t, scratch->p, scratch->n, o);
}

void clf__bpe_replace_all(buf *out, const char *s, size_t n, const char *from, const char *to) {
    const size_t fl = strlen(from);
    out->n = 0;
    for (size_t i = 0; i < n;) {
        if (fl && i + fl <= n && memcmp(s + i, from, fl) == 0) {
            clf__buf_str(out, to);
            i += fl;
        } else {
            clf__buf_put(out, s + i, 1);
            i++;
        }
    }
    if (!out->p) clf__buf_put(out, "", 0);
}

/* A text segment between added tokens, at offset `at` of the input. */
static clf_status segment(const clf_bpe *t, const char *text, size_t len, size_t at, ids_out *o) {
    buf a = {0}, b = {0}, scratch = {0};
    clf_status st = CLF_SUCCESS;
    /* invalid UTF-8 becomes U+FFFD, so every later step sees whole characters */
    const unsigned char *s = (const unsigned char *)text, *end = s + len;
    while (s < end) {
        const unsigned char *c0 = s;
        const uint32_t c = clf__utf8_next(&s);
        if (s > end) s = end;
        if (c == 0xFFFD && !(s - c0 == 3 && c0[0] == 0xEF))
            clf__buf_cp(&a, 0xFFFD);
        else
            clf__buf_put(&a, (const char *)c0, (size_t)(s - c0));
    }
    clf__buf_put(&a, "", 0);
    for (int i = 0; i < t->n_norm; i++) { /* normalizer steps */
        const norm_step *n = &t->norm[i];
        if (n->kind == NORM_PREPEND) {
            b.n = 0;
            clf__buf_str(&b, n->to);
            clf__buf_put(&b, a.p, a.n);
        } else if (n->kind == NORM_NFC) {
            char *c = NULL;
            size_t cn = 0;
            if (clf__nfc(a.p, a.n, &c, &cn) != 0) {
                st = CLF_ERROR_OUT_OF_MEMORY;
                goto done;
            }
            b.n = 0;
            clf__buf_put(&b, c, cn);
            free(c);
        } else {
            clf__bpe_replace_all(&b, a.p, a.n, n->from, n->to);
        }
        buf x = a;
        a = b;
        b = x;
    }
    if (t->metaspace) { /* spaces to the replacement, which may be prepended */
        clf__bpe_replace_all(&b, a.p, a.n, " ", t->meta);
        const size_t ml = strlen(t->meta);
        const int starts = b.n >= ml && memcmp(b.p, t->meta, ml) == 0;
        a.n = 0;
        if (!starts && (t->meta_prepend == 2 || (t->meta_prepend == 1 && at == 0)))
            clf__buf_str(&a, t->meta);
        clf__buf_put(&a, b.p, b.n);
    }
    if (t->bl_prefix_space && (a.n == 0 || a.p[0] != ' ')) {
        b.n = 0;
        clf__buf_str(&b, " ");
        clf__buf_put(&b, a.p, a.n);
        buf x = a;
        a = b;
        b = x;
    }
    if (a.oom || b.oom) {
        st = CLF_ERROR_OUT_OF_MEMORY;
        goto done;
    }
    if (t->split) { /* the split pattern on code points, then each piece */
        uint32_t *cps = malloc(sizeof(uint32_t) * (a.n + 1));
        size_t *off = malloc(sizeof(size_t) * (a.n + 2));
        if (!cps || !off) {
            free(cps);
            free(off);
            st = CLF_ERROR_OUT_OF_MEMORY;
            goto done;
        }
        size_t n = 0;
        const unsigned char *q = (const unsigned char *)a.p, *qe = q + a.n;
        while (q < qe) {
            off[n] = (size_t)(q - (const unsigned char *)a.p);
            cps[n++] = clf__utf8_next(&q);
        }
        off[n] = a.n;
        for (size_t i = 0; i < n && st == CLF_SUCCESS;) {
            size_t m = t->split == SPLIT_GPT2     ? match_gpt2(cps, i, n)
                       : t->split == SPLIT_LLAMA3 ? match_llama3(cps, i, n, 3)
                                                  : match_llama3(cps, i, n, 1);
            st = piece(t, a.p + off[i], off[i + m] - off[i], &scratch, o);
            i += m;
        }
        free(cps);
        free(off);
    } else if (t->metaspace && t->meta_split) { /* pieces start at each replacement */
        const size_t ml = strlen(t->meta);
        size_t start = 0;
        for (size_t i = 1; i <= a.n && st == CLF_SUCCESS; i++)
            if (i == a.n || (i + ml <= a.n && memcmp(a.p + i, t->meta, ml) == 0)) {
                st = piece(t, a.p + start, i - start, &scratch, o);
                start = i;
            }
    } else {
        st = piece(t, a.p, a.n, &scratch, o);
    }
done:
    free(a.p);
    free(b.p);
    free(scratch.p);
    return st;
}

/* The longest added token at text[i..], or -1. */
static int added_at(const clf_bpe *t, const char *text, size_t i, size_t n) {
    int best = -1;
    for (size_t k = 0; k < t->n_add; k++)
        if (t->add[k].len <= n - i && memcmp(text + i, t->add[k].content, t->add[k].len) == 0 &&
            (best < 0 || t->add[k].len > t->add[best].len))
            best = (int)k;
    return best;
}

clf_status clf_bpe_encode(const clf_bpe *t, const char *text, int add_special, int32_t *ids,
                          int64_t cap, int64_t *count, clf_error *e) {
    clf__bpe_err(e, "%s", "");
    if (!t || !text || !count || cap < 0 || (cap > 0 && !ids)) {
        clf__bpe_err(e, "bpe encode: t, text and count must be given, and ids for cap > 0");
        return CLF_ERROR_INVALID_ARGUMENT;
    }
    ids_out o = {ids, cap, 0};
    if (add_special)
        for (int i = 0; i < t->n_pre; i++)
            emit(&o, t->pre[i]);
    const size_t n = strlen(text);
    clf_status st = CLF_SUCCESS;
    size_t start = 0;
    for (size_t i = 0; i <= n && st == CLF_SUCCESS;) {
        const int k = i < n ? added_at(t, text, i, n) : -1;
        if (i < n && k < 0) {
            i++;
            continue;
        }
        if (i > start) st = segment(t, text + start, i - start, start, &o);
        if (k >= 0 && st == CLF_SUCCESS) {
            emit(&o, t->add[k].id);
            i += t->add[k].len;
            start = i;
        } else {
            break;
        }
    }
    if (add_special)
        for (int i = 0; i < t->n_post; i++)
            emit(&o, t->post[i]);
    *count = o.n;
    if (st == CLF_ERROR_OUT_OF_MEMORY) clf__bpe_err(e, "bpe encode: out of host memory");
    if (st == CLF_SUCCESS && o.n > cap) {
        clf__bpe_err(e, "bpe encode: %lld ids, room for %lld", (long long)o.n, (long long)cap);
        st = CLF_ERROR_SIZE_LIMIT;
    }
    return st;
}
