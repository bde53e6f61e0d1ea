/*
 * bpe_gguf.c — a GGUF file's own tokenizer (tokenizer.ggml.*), translated into the pipeline
 * description its tokenizer.json would hold, then built by tokenizer.json's loader
 * (clf__bpe_from_json), so the checks, the encoder and the decoder are the same.
 *
 * Byte-level BPE (model "gpt2": GPT-2, Llama 3, Qwen2 ...):
 *   tokens            the vocabulary (id = index); UNUSED ones left out
 *   token_type        CONTROL tokens become special added tokens, USER_DEFINED plain added ones
 *                     (matched in the text before pre-tokenization, as tokenizers does)
 *   merges            "left right", in rank order
 *   pre               gpt-2 (GPT-2's split), llama-bpe (Llama 3's), qwen2 (Qwen2's, after NFC)
 *   add_bos_token     the template (bos_token_id first), add_eos_token likewise at the end
 * SentencePiece (model "llama": Llama 2, Mistral 7B): tokens with scores and no merges, as
 * Hugging Face's converter turns a sentencepiece model into a BPE: every split of a piece into
 * two pieces is a merge, ranked by the piece's score (highest first; ties by the piece's id, then
 * the parts' ids); byte fallback to the <0xXX> (BYTE) pieces, unknown pieces to the UNKNOWN one;
 * U+2581 for spaces and one in front of the text (add_space_prefix, default on); CONTROL and
 * UNKNOWN pieces special added tokens; BOS added unless add_bos_token says no.
 */
#include "bpe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TT_UNKNOWN      2
#define TT_CONTROL      3
#define TT_USER_DEFINED 4
#define TT_UNUSED       5

/* A NUL-terminated copy of a metadata string (malloc'ed; NULL when out of memory). */
static char *cstr(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

static clf_status bad(clf_error *e, clf_status st, const char *path, const char *what) {
    clf__bpe_err(e, "%s: %s", path, what);
    return st;
}

/* The pre-tokenizer, normalizer and decoder of a byte-level BPE by llama.cpp's pre name. */
static clf_status pipeline(cJSON *root, const char *pre, const char *path, clf_error *e) {
    const char *pattern = NULL;
    if (strcmp(pre, "llama-bpe") == 0 || strcmp(pre, "llama3") == 0)
        pattern = clf__bpe_llama3_pattern;
    else if (strcmp(pre, "qwen2") == 0)
        pattern = clf__bpe_qwen2_pattern;
    else if (strcmp(pre, "gpt-2") != 0 && strcmp(pre, "gpt2") != 0) {
        clf__bpe_err(e,
                     "%s: tokenizer.ggml.pre \"%.40s\" is not supported (gpt-2, llama-bpe, qwen2 "
                     "are)",
                     path, pre);
        return CLF_ERROR_UNSUPPORTED;
    }
    cJSON *bl = cJSON_CreateObject(), *dec = cJSON_CreateObject();
    if (!bl || !dec || !cJSON_AddItemToObject(root, "decoder", dec)) {
        cJSON_Delete(bl);
        cJSON_Delete(dec);
        return CLF_ERROR_OUT_OF_MEMORY;
    }
    cJSON_AddStringToObject(dec, "type", "ByteLevel");
    cJSON_AddStringToObject(bl, "type", "ByteLevel");
    cJSON_AddBoolToObject(bl, "add_prefix_space", 0);
    cJSON_AddBoolToObject(bl, "use_regex", pattern == NULL);
    if (!pattern)
        return cJSON_AddItemToObject(root, "pre_tokenizer", bl) ? CLF_SUCCESS
                                                                : CLF_ERROR_OUT_OF_MEMORY;
    cJSON *seq = cJSON_AddObjectToObject(root, "pre_tokenizer");
    cJSON *list = seq ? cJSON_AddArrayToObject(seq, "pretokenizers") : NULL;
    cJSON *split = cJSON_CreateObject();
    if (!list || !split) {
        cJSON_Delete(bl);
        cJSON_Delete(split);
        return CLF_ERROR_OUT_OF_MEMORY;
    }
    cJSON_AddStringToObject(seq, "type", "Sequence");
    cJSON_AddStringToObject(split, "type", "Split");
    cJSON_AddStringToObject(cJSON_AddObjectToObject(split, "pattern"), "Regex", pattern);
    cJSON_AddStringToObject(split, "behavior", "Isolated");
    cJSON_AddItemToArray(list, split);
    cJSON_AddItemToArray(list, bl);
    if (strcmp(pre, "qwen2") == 0) /* Qwen2's tokenizer.json normalizes to NFC first */
        cJSON_AddStringToObject(cJSON_AddObjectToObject(root, "normalizer"), "type", "NFC");
    return CLF_SUCCESS;
}

/* tokenizer.ggml.add_<which>_token (absent: 0) and <which>_token_id; the token's name. */
static clf_status template_token(const clf_gguf *g, const char *which, int fallback,
                                 const char *path, const cJSON *vocab_names, int *add,
                                 const char **name, clf_error *e) {
    char key[64];
    int64_t v = fallback, id = -1;
    snprintf(key, sizeof(key), "tokenizer.ggml.add_%s_token", which);
    *add = 0;
    *name = NULL;
    if (clf_gguf_get_int(g, key, &v, NULL) != CLF_SUCCESS) v = fallback;
    if (!v) return CLF_SUCCESS;
    snprintf(key, sizeof(key), "tokenizer.ggml.%s_token_id", which);
    if (clf_gguf_get_int(g, key, &id, NULL) != CLF_SUCCESS || id < 0 ||
        id >= cJSON_GetArraySize(vocab_names) ||
        !cJSON_IsString(cJSON_GetArrayItem(vocab_names, (int)id))) {
        clf__bpe_err(e, "%s: tokenizer.ggml.add_%s_token without a valid %s", path, which, key);
        return CLF_ERROR_BAD_FORMAT;
    }
    *add = 1;
    *name = cJSON_GetArrayItem(vocab_names, (int)id)->valuestring;
    return CLF_SUCCESS;
}

/* The TemplateProcessing that adds BOS / EOS as the file says. */
static clf_status post(const clf_gguf *g, cJSON *root, const cJSON *names, int spm,
                       const char *path, clf_error *e) {
    int add_bos, add_eos;
    const char *bos, *eos;
    CLF_TRY_E(template_token(g, "bos", spm, path, names, &add_bos, &bos, e));
    CLF_TRY_E(template_token(g, "eos", 0, path, names, &add_eos, &eos, e));
    if (!add_bos && !add_eos) return CLF_SUCCESS;
    cJSON *p = cJSON_AddObjectToObject(root, "post_processor");
    cJSON *single = p ? cJSON_AddArrayToObject(p, "single") : NULL;
    if (!single) return CLF_ERROR_OUT_OF_MEMORY;
    cJSON_AddStringToObject(p, "type", "TemplateProcessing");
    const char *pieces[3] = {add_bos ? bos : NULL, "A", add_eos ? eos : NULL};
    for (int i = 0; i < 3; i++) {
        if (!pieces[i]) continue;
        cJSON *x = cJSON_CreateObject();
        if (!x) return CLF_ERROR_OUT_OF_MEMORY;
        cJSON_AddItemToArray(single, x);
        cJSON_AddStringToObject(cJSON_AddObjectToObject(x, i == 1 ? "Sequence" : "SpecialToken"),
                                "id", pieces[i]);
    }
    return CLF_SUCCESS;
}

/* SentencePiece's pipeline as Hugging Face's Llama converter writes it. */
static clf_status spm_pipeline(const clf_gguf *g, cJSON *root, cJSON *model, const char *unk) {
    int64_t prefix = 1;
    if (clf_gguf_get_int(g, "tokenizer.ggml.add_space_prefix", &prefix, NULL) != CLF_SUCCESS)
        prefix = 1;
    cJSON_AddBoolToObject(model, "byte_fallback", 1);
    cJSON_AddBoolToObject(model, "fuse_unk", 1);
    if (unk) cJSON_AddStringToObject(model, "unk_token", unk);
    cJSON *norm = cJSON_AddObjectToObject(root, "normalizer");
    cJSON *nl = norm ? cJSON_AddArrayToObject(norm, "normalizers") : NULL;
    cJSON *dec = cJSON_AddObjectToObject(root, "decoder");
    cJSON *dl = dec ? cJSON_AddArrayToObject(dec, "decoders") : NULL;
    if (!nl || !dl) return CLF_ERROR_OUT_OF_MEMORY;
    cJSON_AddStringToObject(norm, "type", "Sequence");
    cJSON_AddStringToObject(dec, "type", "Sequence");
    cJSON *x;
    if (prefix) {
        cJSON_AddItemToArray(nl, x = cJSON_CreateObject());
        cJSON_AddStringToObject(x, "type", "Prepend");
        cJSON_AddStringToObject(x, "prepend", "\xe2\x96\x81");
    }
    cJSON_AddItemToArray(nl, x = cJSON_CreateObject());
    cJSON_AddStringToObject(x, "type", "Replace");
    cJSON_AddStringToObject(cJSON_AddObjectToObject(x, "pattern"), "String", " ");
    cJSON_AddStringToObject(x, "content", "\xe2\x96\x81");
    cJSON_AddItemToArray(dl, x = cJSON_CreateObject());
    cJSON_AddStringToObject(x, "type", "Replace");
    cJSON_AddStringToObject(cJSON_AddObjectToObject(x, "pattern"), "String", "\xe2\x96\x81");
    cJSON_AddStringToObject(x, "content", " ");
    cJSON_AddItemToArray(dl, x = cJSON_CreateObject());
    cJSON_AddStringToObject(x, "type", "ByteFallback");
    cJSON_AddItemToArray(dl, x = cJSON_CreateObject());
    cJSON_AddStringToObject(x, "type", "Fuse");
    if (prefix) {
        cJSON_AddItemToArray(dl, x = cJSON_CreateObject());
        cJSON_AddStringToObject(x, "type", "Strip");
        cJSON_AddStringToObject(x, "content", " ");
        cJSON_AddNumberToObject(x, "start", 1);
        cJSON_AddNumberToObject(x, "stop", 0);
    }
    return CLF_SUCCESS;
}

typedef struct spm_merge {
    float score;
    int32_t piece, left, right;
} spm_merge;

static int by_rank(const void *pa, const void *pb) {
    const spm_merge *a = pa, *b = pb;
    if (a->score != b->score) return a->score > b->score ? -1 : 1;
    if (a->piece != b->piece) return a->piece < b->piece ? -1 : 1;
    if (a->left != b->left) return a->left < b->left ? -1 : 1;
    return a->right < b->right ? -1 : a->right > b->right;
}

/* SentencePiece's merges into root's model (see the top): the pieces looked up in a tokenizer
 * built from root without them. */
static clf_status spm_merges(const clf_gguf *g, cJSON *root, const cJSON *names, const char *path,
                             clf_error *e) {
    clf_bpe *t = NULL;
    CLF_TRY_E(clf__bpe_from_json(root, path, &t, e));
    size_t cap = 1024, count = 0;
    spm_merge *m = malloc(sizeof(spm_merge) * cap);
    clf_status st = m ? CLF_SUCCESS : CLF_ERROR_OUT_OF_MEMORY;
    /* walked as the list it is: cJSON_GetArrayItem(names, id) starts from the head each time
     * (quadratic: 1.1 s of a 32 000-token vocabulary's load) */
    int id = -1;
    for (const cJSON *nm = names->child; nm && st == CLF_SUCCESS; nm = nm->next) {
        id++;
        double score;
        if (!cJSON_IsString(nm)) continue;
        if (clf_gguf_array_float(g, "tokenizer.ggml.scores", (uint64_t)id, &score, NULL) !=
            CLF_SUCCESS) {
            st = bad(e, CLF_ERROR_BAD_FORMAT, path, "unreadable score");
            break;
        }
        const char *p = nm->valuestring;
        const size_t len = strlen(p);
        for (size_t k = 1; k < len; k++) {
            if (((unsigned char)p[k] & 0xC0) == 0x80) continue; /* inside a character */
            const int32_t l = clf__bpe_lookup(t, p, k), r = clf__bpe_lookup(t, p + k, len - k);
            if (l < 0 || r < 0) continue;
            if (count == cap) {
                spm_merge *grown = realloc(m, sizeof(spm_merge) * (cap *= 2));
                if (!grown) {
                    st = CLF_ERROR_OUT_OF_MEMORY;
                    break;
                }
                m = grown;
            }
            m[count++] = (spm_merge){(float)score, id, l, r};
        }
    }
    if (st == CLF_SUCCESS) qsort(m, count, sizeof(spm_merge), by_rank);
    cJSON *merges = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItem(root, "model"), "merges");
    for (size_t i = 0; i < count && st == CLF_SUCCESS; i++) {
        const char *pair[2] = {clf_bpe_token(t, m[i].left), clf_bpe_token(t, m[i].right)};
        cJSON *x = cJSON_CreateStringArray(pair, 2);
        if (!x || !cJSON_AddItemToArray(merges, x)) st = CLF_ERROR_OUT_OF_MEMORY;
    }
    free(m);
    clf_bpe_free(t);
    return st;
}

/* The tokenizer.json description of g's tokenizer (spm: SentencePiece's) into root. */
static clf_status describe(const clf_gguf *g, int spm, const char *path, cJSON *root,
                           clf_error *e) {
    clf_gguf_type et, tt = CLF_GGUF_I32;
    uint64_t n = 0, nt = 0, nm = 0;
    if (clf_gguf_get_array(g, "tokenizer.ggml.tokens", &et, &n, NULL) != CLF_SUCCESS ||
        et != CLF_GGUF_STRING || n == 0 || n > (1u << 30))
        return bad(e, CLF_ERROR_BAD_FORMAT, path, "tokenizer.ggml.tokens must be strings");
    const int has_types =
        clf_gguf_get_array(g, "tokenizer.ggml.token_type", &tt, &nt, NULL) == CLF_SUCCESS;
    if (has_types && nt != n)
        return bad(e, CLF_ERROR_BAD_FORMAT, path,
                   "tokenizer.ggml.token_type must give one type per token");
    if (!spm && (clf_gguf_get_array(g, "tokenizer.ggml.merges", &et, &nm, NULL) != CLF_SUCCESS ||
                 et != CLF_GGUF_STRING))
        return bad(e, CLF_ERROR_BAD_FORMAT, path, "tokenizer.ggml.merges must be strings");
    uint64_t ns = 0;
    if (spm && (clf_gguf_get_array(g, "tokenizer.ggml.scores", &et, &ns, NULL) != CLF_SUCCESS ||
                ns != n || et == CLF_GGUF_STRING || et == CLF_GGUF_ARRAY))
        return bad(e, CLF_ERROR_BAD_FORMAT, path,
                   "tokenizer.ggml.scores must give one number per token");
    const char *unk = NULL; /* SentencePiece's UNKNOWN piece */
    cJSON *model = cJSON_AddObjectToObject(root, "model");
    cJSON *vocab = model ? cJSON_AddObjectToObject(model, "vocab") : NULL;
    cJSON *merges = model ? cJSON_AddArrayToObject(model, "merges") : NULL;
    cJSON *added = cJSON_AddArrayToObject(root, "added_tokens");
    cJSON *names = cJSON_CreateArray(); /* id -> name (null when unused), for the template */
    if (!vocab || !merges || !added || !names) {
        cJSON_Delete(names);
        return CLF_ERROR_OUT_OF_MEMORY;
    }
    cJSON_AddStringToObject(model, "type", "BPE");
    clf_status st = CLF_SUCCESS;
    for (uint64_t i = 0; i < n && st == CLF_SUCCESS; i++) {
        const char *s;
        size_t len;
        int64_t type = 1;
        st = clf_gguf_array_string(g, "tokenizer.ggml.tokens", i, &s, &len, NULL);
        if (st == CLF_SUCCESS && has_types)
            st = clf_gguf_array_int(g, "tokenizer.ggml.token_type", i, &type, NULL);
        if (st != CLF_SUCCESS) {
            st = bad(e, CLF_ERROR_BAD_FORMAT, path, "unreadable token or token type");
            break;
        }
        char *tok = cstr(s, len);
        if (!tok || strlen(tok) != len || type == TT_UNUSED || len == 0) {
            /* unused, empty or with a NUL inside: not in the vocabulary */
            if (!tok) st = CLF_ERROR_OUT_OF_MEMORY;
            free(tok);
            cJSON_AddItemToArray(names, cJSON_CreateNull());
            continue;
        }
        cJSON *name = cJSON_CreateString(tok);
        cJSON_AddItemToArray(names, name);
        const int special = type == TT_CONTROL || (spm && type == TT_UNKNOWN);
        if (spm && type == TT_UNKNOWN && !unk && name) unk = name->valuestring;
        if (special || type == TT_USER_DEFINED) {
            cJSON *a = cJSON_CreateObject();
            if (!a) st = CLF_ERROR_OUT_OF_MEMORY;
            cJSON_AddItemToArray(added, a);
            cJSON_AddStringToObject(a, "content", tok);
            cJSON_AddNumberToObject(a, "id", (double)i);
            cJSON_AddBoolToObject(a, "special", special);
        } else if (!cJSON_AddNumberToObject(vocab, tok, (double)i)) {
            st = CLF_ERROR_OUT_OF_MEMORY;
        }
        free(tok);
    }
    for (uint64_t i = 0; i < nm && st == CLF_SUCCESS; i++) {
        const char *s;
        size_t len;
        if (clf_gguf_array_string(g, "tokenizer.ggml.merges", i, &s, &len, NULL) != CLF_SUCCESS) {
            st = bad(e, CLF_ERROR_BAD_FORMAT, path, "unreadable merge");
            break;
        }
        char *m = cstr(s, len);
        if (!m || !cJSON_AddItemToArray(merges, cJSON_CreateString(m)))
            st = CLF_ERROR_OUT_OF_MEMORY;
        free(m);
    }
    if (spm) {
        if (st == CLF_SUCCESS) st = spm_pipeline(g, root, model, unk);
        if (st == CLF_SUCCESS) st = spm_merges(g, root, names, path, e);
        if (st == CLF_SUCCESS) st = post(g, root, names, 1, path, e);
        cJSON_Delete(names);
        return st;
    }
    char pre[64] = "gpt-2"; /* llama.cpp's "default" split is GPT-2's */
    const char *ps;
    size_t pl;
    if (st == CLF_SUCCESS &&
        clf_gguf_get_string(g, "tokenizer.ggml.pre", &ps, &pl, NULL) == CLF_SUCCESS &&
        !(pl == 7 && memcmp(ps, "default", 7) == 0))
        snprintf(pre, sizeof(pre), "%.*s", (int)(pl < sizeof(pre) ? pl : sizeof(pre) - 1), ps);
    if (st == CLF_SUCCESS) st = pipeline(root, pre, path, e);
    if (st == CLF_SUCCESS) st = post(g, root, names, 0, path, e);
    cJSON_Delete(names);
    return st;
}

clf_status clf_bpe_load_gguf(const char *path, clf_bpe **out, clf_error *e) {
    clf__bpe_err(e, "%s", "");
    if (!path || !out) return bad(e, CLF_ERROR_INVALID_ARGUMENT, "clf_bpe_load_gguf", "NULL");
    *out = NULL;
    clf_gguf *g = NULL;
    clf_status st = clf_gguf_open(path, &g, e);
    if (st != CLF_SUCCESS) return st;
    const char *model;
    size_t ml;
    if (clf_gguf_get_string(g, "tokenizer.ggml.model", &model, &ml, NULL) != CLF_SUCCESS) {
        st = bad(e, CLF_ERROR_NOT_FOUND, path, "no tokenizer (tokenizer.ggml.model)");
    } else if (!(ml == 4 && memcmp(model, "gpt2", 4) == 0) &&
               !(ml == 5 && memcmp(model, "llama", 5) == 0)) {
        clf__bpe_err(e,
                     "%s: tokenizer.ggml.model \"%.*s\" is not supported (gpt2, a byte-level BPE, "
                     "and llama, SentencePiece's, are)",
                     path, (int)(ml > 40 ? 40 : ml), model);
        st = CLF_ERROR_UNSUPPORTED;
    } else {
        cJSON *root = cJSON_CreateObject();
        st = root ? describe(g, ml == 5, path, root, e) : CLF_ERROR_OUT_OF_MEMORY;
        if (st == CLF_SUCCESS) st = clf__bpe_from_json(root, path, out, e);
        cJSON_Delete(root);
    }
    if (st == CLF_ERROR_OUT_OF_MEMORY) clf__bpe_err(e, "out of host memory");
    clf_gguf_free(g);
    return st;
}
