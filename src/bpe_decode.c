/*
 * bpe_decode.c — decoding ids with a loaded BPE tokenizer (bpe.h): the decoder pipeline
 * (replace, byte fallback, fuse, strip, byte-level, metaspace), and streaming decoding that
 * releases text only once its bytes form whole UTF-8 characters.
 */
#include "bpe.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- decoding */

typedef struct toks {
    buf *t;
    size_t n, cap;
} toks;

static int toks_push(toks *l, const char *s, size_t n) {
    if (l->n == l->cap) {
        size_t c = l->cap ? 2 * l->cap : 16;
        buf *g = realloc(l->t, sizeof(buf) * c);
        if (!g) return 1;
        l->t = g;
        l->cap = c;
    }
    buf *b = &l->t[l->n++];
    memset(b, 0, sizeof(*b));
    clf__buf_put(b, s, n);
    return b->oom;
}

static void toks_free(toks *l) {
    for (size_t i = 0; i < l->n; i++)
        free(l->t[i].p);
    free(l->t);
    memset(l, 0, sizeof(*l));
}

/* Bytes -> text as Rust's from_utf8_lossy: each invalid sequence becomes U+FFFD. */
static void lossy(buf *out, const char *p, size_t n) {
    out->n = 0;
    const unsigned char *s = (const unsigned char *)p, *end = s + n;
    while (s < end) {
        const unsigned char *c0 = s;
        const uint32_t c = clf__utf8_next(&s);
        if (s > end) s = end;
        if (c == 0xFFFD && !(s - c0 == 3 && c0[0] == 0xEF))
            clf__buf_cp(out, 0xFFFD);
        else
            clf__buf_put(out, (const char *)c0, (size_t)(s - c0));
    }
    clf__buf_put(out, "", 0);
}

/* 1 if p[0..n) is valid UTF-8 (a real U+FFFD, EF BF BD, counts as valid). */
static int valid_utf8(const char *p, size_t n) {
    const unsigned char *s = (const unsigned char *)p, *end = s + n;
    while (s < end) {
        const unsigned char *c0 = s;
        if (clf__utf8_next(&s) == 0xFFFD && !(s - c0 == 3 && c0[0] == 0xEF)) return 0;
        if (s > end) return 0;
    }
    return 1;
}

static int byte_token(const char *s, unsigned char *b) {
    unsigned v;
    char tail;
    if (strlen(s) != 6 || strncmp(s, "<0x", 3) != 0 || s[5] != '>') return 0;
    if (sscanf(s + 3, "%2x%c", &v, &tail) != 2 || tail != '>') return 0;
    *b = (unsigned char)v;
    return 1;
}

static int apply_step(const clf_bpe *t, const dec_step *d, toks *l) {
    buf tmp = {0};
    int bad = 0;
    if (d->kind == DEC_REPLACE || d->kind == DEC_METASPACE) {
        /* Metaspace: the replacement is a space, except in the first token, where (unless
         * prepend_scheme is never) it is dropped, as tokenizers' Metaspace decoder does. */
        for (size_t i = 0; i < l->n && !bad; i++) {
            const char *to = d->kind == DEC_REPLACE ? d->to : (i == 0 && d->prepend) ? "" : " ";
            clf__bpe_replace_all(&tmp, l->t[i].p, l->t[i].n, d->from, to);
            l->t[i].n = 0;
            clf__buf_put(&l->t[i], tmp.p, tmp.n);
            bad = l->t[i].oom || tmp.oom;
        }
    } else if (d->kind == DEC_BYTE_FALLBACK) {
        toks nl = {0};
        for (size_t i = 0; i < l->n && !bad;) {
            unsigned char byte;
            if (!byte_token(l->t[i].p, &byte)) {
                bad = toks_push(&nl, l->t[i].p, l->t[i].n);
                i++;
                continue;
            }
            buf bytes = {0};
            size_t j = i;
            while (j < l->n && byte_token(l->t[j].p, &byte)) {
                clf__buf_put(&bytes, (const char *)&byte, 1);
                j++;
            }
            clf__buf_put(&bytes, "", 0);
            if (!valid_utf8(bytes.p, bytes.n)) /* not UTF-8: one U+FFFD per byte */
                for (size_t k = i; k < j && !bad; k++)
                    bad = toks_push(&nl, "\xEF\xBF\xBD", 3);
            else
                bad = toks_push(&nl, bytes.p, bytes.n);
            bad = bad || bytes.oom;
            free(bytes.p);
            i = j;
        }
        toks_free(l);
        *l = nl;
    } else if (d->kind == DEC_FUSE || d->kind == DEC_BYTE_LEVEL) {
        for (size_t i = 0; i < l->n; i++) {
            if (d->kind == DEC_FUSE) {
                clf__buf_put(&tmp, l->t[i].p, l->t[i].n);
                continue;
            }
            /* each character back to its byte; a token with a foreign character as is */
            buf bytes = {0};
            const unsigned char *s = (const unsigned char *)l->t[i].p, *end = s + l->t[i].n;
            int all = 1;
            while (s < end && all) {
                const uint32_t c = clf__utf8_next(&s);
                if (c < 324 && t->char_byte[c] >= 0) {
                    unsigned char byte = (unsigned char)t->char_byte[c];
                    clf__buf_put(&bytes, (const char *)&byte, 1);
                } else {
                    all = 0;
                }
            }
            clf__buf_put(&tmp, all ? bytes.p : l->t[i].p, all ? bytes.n : l->t[i].n);
            free(bytes.p);
        }
        clf__buf_put(&tmp, "", 0);
        buf fused = {0};
        if (d->kind == DEC_BYTE_LEVEL)
            lossy(&fused, tmp.p, tmp.n);
        else
            clf__buf_put(&fused, tmp.p, tmp.n);
        toks_free(l);
        bad = tmp.oom || fused.oom || toks_push(l, fused.p, fused.n);
        free(fused.p);
    } else if (d->kind == DEC_STRIP) {
        for (size_t i = 0; i < l->n; i++) {
            char cs[4];
            const size_t cl = (size_t)clf__utf8_put(d->strip_char, cs);
            size_t a = 0, z = l->t[i].n;
            for (int k = 0; k < d->strip_start && a + cl <= z && memcmp(l->t[i].p + a, cs, cl) == 0;
                 k++)
                a += cl;
            for (int k = 0;
                 k < d->strip_stop && z >= a + cl && memcmp(l->t[i].p + z - cl, cs, cl) == 0; k++)
                z -= cl;
            memmove(l->t[i].p, l->t[i].p + a, z - a);
            l->t[i].n = z - a;
            l->t[i].p[l->t[i].n] = '\0';
        }
    }
    free(tmp.p);
    return bad;
}

/* The decoded text of ids into out (a buf). */
static clf_status decode_buf(const clf_bpe *t, const int32_t *ids, int64_t n, int skip_special,
                             buf *out, clf_error *e) {
    toks l = {0};
    for (int64_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= t->n_tok || !t->tok[ids[i]]) {
            clf__bpe_err(e, "bpe decode: id %d is not a token", (int)ids[i]);
            toks_free(&l);
            return CLF_ERROR_OUT_OF_RANGE;
        }
        if (skip_special && clf_bpe_is_special(t, ids[i])) continue;
        if (toks_push(&l, t->tok[ids[i]], strlen(t->tok[ids[i]]))) goto oom;
    }
    for (int i = 0; i < t->n_dec; i++)
        if (apply_step(t, &t->dec[i], &l)) goto oom;
    out->n = 0;
    for (size_t i = 0; i < l.n; i++) { /* no decoder: tokens joined by spaces */
        if (i && !t->has_decoder) clf__buf_put(out, " ", 1);
        clf__buf_put(out, l.t[i].p, l.t[i].n);
    }
    clf__buf_put(out, "", 0);
    toks_free(&l);
    if (out->oom) goto oom;
    return CLF_SUCCESS;
oom:
    toks_free(&l);
    clf__bpe_err(e, "bpe decode: out of host memory");
    return CLF_ERROR_OUT_OF_MEMORY;
}

static clf_status copy_out(const buf *b, char *out, size_t cap, size_t *len, clf_error *e) {
    if (len) *len = b->n;
    if (cap == 0 || !out) {
        clf__bpe_err(e, "bpe decode: no room for the text");
        return CLF_ERROR_SIZE_LIMIT;
    }
    const size_t k = b->n < cap ? b->n : cap - 1;
    memcpy(out, b->p, k);
    out[k] = '\0';
    if (b->n >= cap) {
        clf__bpe_err(e, "bpe decode: %zu bytes of text, room for %zu", b->n, cap - 1);
        return CLF_ERROR_SIZE_LIMIT;
    }
    return CLF_SUCCESS;
}

clf_status clf_bpe_decode(const clf_bpe *t, const int32_t *ids, int64_t n, int skip_special,
                          char *out, size_t cap, size_t *len, clf_error *e) {
    clf__bpe_err(e, "%s", "");
    if (!t || (n > 0 && !ids) || n < 0) {
        clf__bpe_err(e, "bpe decode: t must be given, and ids for n > 0");
        return CLF_ERROR_INVALID_ARGUMENT;
    }
    buf b = {0};
    clf_status st = decode_buf(t, ids, n, skip_special, &b, e);
    if (st == CLF_SUCCESS) st = copy_out(&b, out, cap, len, e);
    free(b.p);
    return st;
}

/* ---------------------------------------------------------------- streaming */

struct clf_bpe_stream {
    const clf_bpe *t;
    int skip_special;
    int32_t *ids;
    size_t n, cap, prefix_index;
    buf prefix;
};

clf_status clf_bpe_stream_create(const clf_bpe *t, int skip_special, clf_bpe_stream **out) {
    if (!t || !out) return CLF_ERROR_INVALID_ARGUMENT;
    *out = calloc(1, sizeof(clf_bpe_stream));
    if (!*out) return CLF_ERROR_OUT_OF_MEMORY;
    (*out)->t = t;
    (*out)->skip_special = skip_special;
    clf__buf_put(&(*out)->prefix, "", 0);
    return (*out)->prefix.oom ? CLF_ERROR_OUT_OF_MEMORY : CLF_SUCCESS;
}

void clf_bpe_stream_free(clf_bpe_stream *s) {
    if (!s) return;
    free(s->ids);
    free(s->prefix.p);
    free(s);
}

/* As tokenizers' DecodeStream::step: decode the ids kept since the last emitted text; emit the
 * part past the previous decoding once it grew and does not end in U+FFFD (an incomplete
 * character); then keep only the ids from the previous emission on as context. Where the
 * context's own text changes, it releases the new ids' text (tokenizers fails there). */
clf_status clf_bpe_stream_next(clf_bpe_stream *s, int32_t id, char *out, size_t cap, size_t *len) {
    if (!s || !out || cap == 0) return CLF_ERROR_INVALID_ARGUMENT;
    out[0] = '\0';
    if (len) *len = 0;
    if (s->n == s->cap) {
        size_t c = s->cap ? 2 * s->cap : 16;
        int32_t *g = realloc(s->ids, sizeof(int32_t) * c);
        if (!g) return CLF_ERROR_OUT_OF_MEMORY;
        s->ids = g;
        s->cap = c;
    }
    s->ids[s->n++] = id;
    buf text = {0};
    clf_status st = decode_buf(s->t, s->ids, (int64_t)s->n, s->skip_special, &text, NULL);
    if (st != CLF_SUCCESS) {
        s->n--;
        free(text.p);
        return st;
    }
    const int grew = text.n > s->prefix.n,
              incomplete = text.n >= 3 && memcmp(text.p + text.n - 3, "\xEF\xBF\xBD", 3) == 0;
    if (grew && !incomplete) {
        buf fresh = {0};
        size_t new_prefix_index = s->n - s->prefix_index;
        if (memcmp(text.p, s->prefix.p, s->prefix.n) == 0) {
            clf__buf_put(&fresh, text.p + s->prefix.n, text.n - s->prefix.n);
        } else {
            /* The context's text changed (a released byte token joined an invalid byte run):
             * tokenizers' DecodeStream fails here; release the new tokens' own text instead. */
            memmove(s->ids, s->ids + s->prefix_index, sizeof(int32_t) * (s->n - s->prefix_index));
            s->n -= s->prefix_index;
            s->prefix_index = 0;
            new_prefix_index = s->n;
            st = decode_buf(s->t, s->ids, (int64_t)s->n, s->skip_special, &fresh, NULL);
        }
        if (st == CLF_SUCCESS) {
            memmove(s->ids, s->ids + s->prefix_index, sizeof(int32_t) * (s->n - s->prefix_index));
            s->n -= s->prefix_index;
            st = decode_buf(s->t, s->ids, (int64_t)s->n, s->skip_special, &s->prefix, NULL);
            s->prefix_index = new_prefix_index;
        }
        if (st == CLF_SUCCESS) st = copy_out(&fresh, out, cap, len, NULL);
        free(fresh.p);
    }
    free(text.p);
    return st;
}

/* ---------------------------------------------------------------- the vocabulary */

int64_t clf_bpe_vocab_size(const clf_bpe *t) {
    return t ? t->n_tok : 0;
}

int64_t clf_bpe_find(const clf_bpe *t, const char *token) {
    return t && token ? clf__bpe_lookup(t, token, strlen(token)) : -1;
}

const char *clf_bpe_token(const clf_bpe *t, int64_t id) {
    return t && id >= 0 && id < t->n_tok ? t->tok[id] : NULL;
}

int clf_bpe_is_special(const clf_bpe *t, int64_t id) {
    for (size_t i = 0; t && i < t->n_add; i++)
        if (t->add[i].id == id) return t->add[i].special;
    return 0;
}
