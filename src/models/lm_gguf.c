/*
 * lm_gguf.c — causal language models from a GGUF file (llama.cpp's format): the config from its
 * metadata (general.architecture and the <arch>.* keys), and the loads behind clf__load /
 * clf__load_rows when the loader reads one. The families' loaders (arch_llama.c, arch_gpt2.c)
 * ask for Hugging Face's names; each family's map (L->gguf_names, in its arch_*.c) gives
 * llama.cpp's (token_embd, blk.N.attn_q ...), and its parse_gguf reads its <arch>.* keys with
 * the helpers here.
 *
 * Weights keep the types they are stored in (Q4_0, Q8_0, Q4_K, Q6_K, F16, BF16, F32): nothing is
 * dequantized (real quantized files mix types: Q4_K_M keeps some attn_v and ffn_down in Q6_K; a
 * fused projection over parts of different types is split by clf__load_stack, one tensor per
 * type). Vectors (norms, biases) come as F32. llama.cpp's converter permutes the rows of Llama's Q
 * and K (and their biases) for its interleaved RoPE; clformer's RoPE rotates halves as Hugging Face
 * does, so the permutation is undone here, row by row (whole blocks: no conversion).
 */
#include "lm.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- names */

/* name against a stem template: the layer's digits where "{i}" is; returns the rest of name
 * (empty or from a '.'), or NULL when it does not match. */
static const char *match(const char *tmpl, const char *name, char *layer, size_t layer_size) {
    layer[0] = '\0';
    while (*tmpl) {
        if (strncmp(tmpl, "{i}", 3) == 0) {
            size_t n = 0;
            while (isdigit((unsigned char)name[n]))
                n++;
            if (n == 0 || n >= layer_size) return NULL;
            memcpy(layer, name, n);
            layer[n] = '\0';
            name += n;
            tmpl += 3;
        } else if (*tmpl++ != *name++) {
            return NULL;
        }
    }
    return *name == '\0' || *name == '.' ? name : NULL;
}

/* The GGUF name of a Hugging Face name into out, by the family's map (L->gguf_names); *rope: its
 * rows are permuted. False if the name has no GGUF counterpart. */
static bool gguf_name(const clf_loader *L, const char *hf, char *out, size_t size, int *rope) {
    for (size_t i = 0; i < L->n_gguf_names; i++) {
        const clf_gguf_name *e = &L->gguf_names[i];
        char layer[24];
        const char *rest = match(e->hf, hf, layer, sizeof(layer));
        if (!rest) continue;
        const char *g = e->gguf, *at = strstr(g, "{i}");
        if (at)
            snprintf(out, size, "%.*s%s%s%s", (int)(at - g), g, layer, at + 3, rest);
        else
            snprintf(out, size, "%s%s", g, rest);
        *rope = e->rope;
        return true;
    }
    return false;
}

/* ---------------------------------------------------------------- tensors */

/* Row r of a head-permuted matrix: llama.cpp's converter stores HF row (h, s, j) of each head
 * (s the half, j < dh / 2) at (h, j, s). */
static int64_t permuted_row(int64_t r, int64_t dh) {
    const int64_t h = r / dh, w = r % dh, half = dh / 2;
    return h * dh + (w % half) * 2 + w / half;
}

typedef struct part {
    char name[512]; /* the GGUF name */
    const clf_gguf_tensor *t;
    int rope;
} part;

/* Finds and checks part i of a load: present, (rows) or (rows, cols), a type clformer reads. */
static clf_status find_part(clf_loader *L, const char *hf, int64_t rows, int64_t cols, part *p) {
    if (!gguf_name(L, hf, p->name, sizeof(p->name), &p->rope))
        return clf__fail(L->ctx, CLF_ERROR_INTERNAL, "GGUF: no name for \"%s\"", hf);
    p->rope = p->rope && L->unpermute_dh > 0;
    p->t = clf_gguf_tensor_find(L->gguf, p->name);
    const clf_gguf_tensor *t = p->t;
    if (!t) return clf__fail(L->ctx, CLF_ERROR_BAD_FORMAT, "GGUF: missing tensor \"%s\"", p->name);
    const int nd = cols ? 2 : 1;
    bool ok = t->ne[0] == (cols ? cols : rows) && (!cols || t->ne[1] == rows);
    for (int d = nd; d < t->ndim; d++)
        ok = ok && t->ne[d] == 1;
    if (!ok || t->ndim < nd)
        return clf__fail(L->ctx, CLF_ERROR_SHAPE_MISMATCH,
                         "GGUF: tensor \"%s\" must be (%lld%s%lld) in PyTorch's order", p->name,
                         (long long)rows, cols ? ", " : "", (long long)(cols ? cols : 0));
    if (t->dtype < 0)
        return clf__fail(L->ctx, CLF_ERROR_UNSUPPORTED,
                         "GGUF: tensor \"%s\" is %s, a type clformer does not read (F32, F16, "
                         "BF16, Q8_0, Q4_0, Q4_K, Q6_K)",
                         p->name, clf_gguf_type_name(t->ggml_type));
    if (p->rope && (rows % L->unpermute_dh || L->unpermute_dh % 2))
        return clf__fail(L->ctx, CLF_ERROR_SHAPE_MISMATCH,
                         "GGUF: tensor \"%s\": %lld rows are not whole heads of %lld", p->name,
                         (long long)rows, (long long)L->unpermute_dh);
    return CLF_SUCCESS;
}

int clf__gguf_stored_type(const clf_loader *L, const char *full) {
    char name[512];
    int rope;
    if (!gguf_name(L, full, name, sizeof(name), &rope)) return -1;
    const clf_gguf_tensor *t = clf_gguf_tensor_find(L->gguf, name);
    return t ? t->dtype : -1;
}

/* Copies the rows of part p (row_bytes each) into dst, undoing the RoPE permutation. */
static void copy_rows(const part *p, const unsigned char *src, int64_t rows, size_t row_bytes,
                      int64_t dh, unsigned char *dst) {
    if (!p->rope) {
        memcpy(dst, src, (size_t)rows * row_bytes);
        return;
    }
    for (int64_t r = 0; r < rows; r++)
        memcpy(dst + (size_t)r * row_bytes, src + (size_t)permuted_row(r, dh) * row_bytes,
               row_bytes);
}

clf_status clf__gguf_load_rows(clf_loader *L, const char *const *full, int count,
                               const int64_t *rows, int64_t cols, clf_tensor **out) {
    part parts[3];
    int64_t total = 0;
    if (count < 1 || count > 3)
        return clf__fail(L->ctx, CLF_ERROR_INTERNAL, "GGUF load: 1 to 3 tensors");
    for (int i = 0; i < count; i++) {
        CLF_TRY(find_part(L, full[i], rows[i], cols, &parts[i]));
        total += rows[i];
    }
    /* The type on the device: a matrix's stored one (the parts', which clf__load_stack made
     * agree), F32 for vectors. */
    clf_dtype type = (clf_dtype)parts[0].t->dtype;
    for (int i = 1; cols && i < count; i++)
        if (parts[i].t->dtype != (int)type)
            return clf__fail(L->ctx, CLF_ERROR_INTERNAL, "GGUF: \"%s\" and \"%s\" stacked: %s, %s",
                             parts[0].name, parts[i].name, clf_dtype_name(type),
                             clf_dtype_name((clf_dtype)parts[i].t->dtype));
    const bool convert = !cols;
    if (convert) type = CLF_F32;
    const int64_t width = cols ? cols : 1;
    const size_t row_bytes = clf_dtype_row_bytes(type, width);
    unsigned char *host = malloc((size_t)total * row_bytes);
    float *tmp = NULL;
    clf_status st =
        host ? CLF_SUCCESS : clf__fail(L->ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
    int64_t at = 0;
    for (int i = 0; i < count && st == CLF_SUCCESS; i++) {
        const part *p = &parts[i];
        const unsigned char *src = p->t->data;
        if (convert) { /* a vector, as F32 */
            free(tmp);
            tmp = malloc(sizeof(float) * (size_t)rows[i]);
            clf_error err;
            if (!tmp)
                st = clf__fail(L->ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
            else if ((st = clf_dequantize((clf_dtype)p->t->dtype, p->t->data, (size_t)p->t->bytes,
                                          tmp, rows[i], &err)) != CLF_SUCCESS)
                clf__fail(L->ctx, st, "GGUF: tensor \"%s\": %s", p->name, err.message);
            src = (const unsigned char *)tmp;
        }
        if (st == CLF_SUCCESS)
            copy_rows(p, src, rows[i], row_bytes, L->unpermute_dh, host + at * row_bytes);
        at += rows[i];
    }
    free(tmp);
    const int64_t shape[2] = {total, cols};
    clf_tensor *t = NULL;
    if (st == CLF_SUCCESS) st = clf_tensor_create(L->ctx, type, cols ? 2 : 1, shape, &t);
    if (st == CLF_SUCCESS) st = clf_tensor_write(t, host, (size_t)total * row_bytes);
    for (int i = 0; i < count && st == CLF_SUCCESS; i++)
        clf__release_pages(parts[i].t->data, (size_t)parts[i].t->bytes);
    free(host);
    if (st != CLF_SUCCESS) {
        clf_tensor_free(t);
        return st;
    }
    *out = t;
    return CLF_SUCCESS;
}

/* ---------------------------------------------------------------- config */

/* <arch>.<key> as a positive integer (absent: fallback; required and absent: an error). */
clf_status clf__gguf_size(const clf_gguf_meta *m, const char *key, int required, int64_t fallback,
                          int64_t *out) {
    char k[160];
    snprintf(k, sizeof(k), "%s.%s", m->arch, key);
    clf_error err;
    const clf_status st = clf_gguf_get_int(m->g, k, out, &err);
    if (st == CLF_ERROR_NOT_FOUND && !required) {
        *out = fallback;
        return CLF_SUCCESS;
    }
    if (st == CLF_ERROR_NOT_FOUND)
        return clf__fail(m->ctx, CLF_ERROR_BAD_FORMAT, "GGUF: missing key %s", k);
    if (st != CLF_SUCCESS) return clf__fail(m->ctx, st, "%s", err.message);
    if (*out <= 0 || *out > (1LL << 40))
        return clf__fail(m->ctx, CLF_ERROR_BAD_FORMAT, "GGUF: %s = %lld must be positive", k,
                         (long long)*out);
    return CLF_SUCCESS;
}

clf_status clf__gguf_float(const clf_gguf_meta *m, const char *key, double fallback, double *out) {
    char k[160];
    snprintf(k, sizeof(k), "%s.%s", m->arch, key);
    clf_error err;
    const clf_status st = clf_gguf_get_float(m->g, k, out, &err);
    if (st == CLF_ERROR_NOT_FOUND) *out = fallback;
    if (st != CLF_SUCCESS && st != CLF_ERROR_NOT_FOUND)
        return clf__fail(m->ctx, st, "%s", err.message);
    if (!isfinite(*out) || !(*out > 0))
        return clf__fail(m->ctx, CLF_ERROR_BAD_FORMAT, "GGUF: %s = %g must be positive", k, *out);
    return CLF_SUCCESS;
}

/* tokenizer.ggml.bos_token_id and eos_token_id (absent: -1, none). */
clf_status clf__gguf_special_ids(const clf_gguf_meta *m, clf_lm_info *in) {
    int64_t v;
    clf_error err;
    clf_status st = clf_gguf_get_int(m->g, "tokenizer.ggml.bos_token_id", &v, &err);
    if (st != CLF_SUCCESS && st != CLF_ERROR_NOT_FOUND)
        return clf__fail(m->ctx, st, "%s", err.message);
    in->bos = st == CLF_SUCCESS && v >= 0 && v < INT32_MAX ? (int32_t)v : -1;
    st = clf_gguf_get_int(m->g, "tokenizer.ggml.eos_token_id", &v, &err);
    if (st != CLF_SUCCESS && st != CLF_ERROR_NOT_FOUND)
        return clf__fail(m->ctx, st, "%s", err.message);
    in->n_eos = 0;
    if (st == CLF_SUCCESS && v >= 0 && v < INT32_MAX) in->eos[in->n_eos++] = (int32_t)v;
    clf__lm_drop_bad_eos(m->ctx, in, "GGUF");
    return CLF_SUCCESS;
}

/* Rotary frequencies: base^(-2i / dh), divided by rope.scaling.factor (linear scaling) or by
 * the rope_freqs tensor (Llama 3.1's scaling, as llama.cpp's converter stores it). */
clf_status clf__gguf_rope(const clf_gguf_meta *m, clf_lm_config *k) {
    const int64_t dh = k->info.head_dim, n = dh / 2;
    int64_t dims;
    double base, factor = 1.0;
    CLF_TRY(clf__gguf_size(m, "rope.dimension_count", 0, dh, &dims));
    if (dims != dh)
        return clf__fail(m->ctx, CLF_ERROR_UNSUPPORTED,
                         "GGUF: rope.dimension_count %lld: partial rotary embeddings are not "
                         "supported (the head size is %lld)",
                         (long long)dims, (long long)dh);
    CLF_TRY(clf__gguf_float(m, "rope.freq_base", 10000.0, &base));
    char key[160];
    const char *type = NULL;
    size_t tlen = 0;
    snprintf(key, sizeof(key), "%s.rope.scaling.type", m->arch);
    if (clf_gguf_get_string(m->g, key, &type, &tlen, NULL) == CLF_SUCCESS &&
        !(tlen == 4 && memcmp(type, "none", 4) == 0)) {
        if (!(tlen == 6 && memcmp(type, "linear", 6) == 0))
            return clf__fail(m->ctx, CLF_ERROR_UNSUPPORTED,
                             "GGUF: rope scaling \"%.*s\" is not supported (linear is)",
                             (int)(tlen > 40 ? 40 : tlen), type);
        CLF_TRY(clf__gguf_float(m, "rope.scaling.factor", 1.0, &factor));
    }
    k->inv_freq = malloc(sizeof(float) * (size_t)n);
    if (!k->inv_freq) return clf__fail(m->ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
    for (int64_t i = 0; i < n; i++)
        k->inv_freq[i] = 1.0f / powf((float)base, (float)(2 * i) / (float)dh) / (float)factor;
    const clf_gguf_tensor *rf = clf_gguf_tensor_find(m->g, "rope_freqs.weight");
    if (!rf) return CLF_SUCCESS;
    if (rf->dtype != CLF_F32 || rf->ndim != 1 || rf->ne[0] != n)
        return clf__fail(m->ctx, CLF_ERROR_BAD_FORMAT,
                         "GGUF: rope_freqs.weight must be %lld F32 values", (long long)n);
    const float *ff = rf->data;
    for (int64_t i = 0; i < n; i++) {
        if (!(ff[i] > 0.0f) || !isfinite(ff[i]))
            return clf__fail(m->ctx, CLF_ERROR_BAD_FORMAT,
                             "GGUF: rope_freqs.weight[%lld] = %g must be positive", (long long)i,
                             (double)ff[i]);
        k->inv_freq[i] /= ff[i];
    }
    return CLF_SUCCESS;
}

/* The vocabulary: <arch>.vocab_size, else token_embd's rows. */
clf_status clf__gguf_vocab(const clf_gguf_meta *m, clf_lm_info *in) {
    const clf_gguf_tensor *t = clf_gguf_tensor_find(m->g, "token_embd.weight");
    if (!t || t->ndim != 2)
        return clf__fail(m->ctx, CLF_ERROR_BAD_FORMAT, "GGUF: token_embd.weight must be a matrix");
    return clf__gguf_size(m, "vocab_size", 0, t->ne[1], &in->vocab_size);
}

clf_status clf__lm_read_gguf_config(clf_context *ctx, const clf_gguf *g, clf_lm_config *k,
                                    int64_t *unpermute_dh) {
    memset(k, 0, sizeof(*k));
    const char *a = NULL;
    size_t alen = 0;
    clf_error err;
    clf_status st = clf_gguf_get_string(g, "general.architecture", &a, &alen, &err);
    if (st != CLF_SUCCESS)
        return clf__fail(ctx, st == CLF_ERROR_NOT_FOUND ? CLF_ERROR_BAD_FORMAT : st, "GGUF: %s",
                         st == CLF_ERROR_NOT_FOUND ? "no general.architecture" : err.message);
    char arch[32];
    snprintf(arch, sizeof(arch), "%.*s", (int)(alen < sizeof(arch) ? alen : sizeof(arch) - 1), a);
    const clf_gguf_meta m = {ctx, g, arch};
    k->arch = clf__lm_arch_find(a, alen, 1);
    if (k->arch) {
        st = k->arch->parse_gguf(&m, k, unpermute_dh);
    } else {
        char list[256];
        st = clf__fail(ctx, CLF_ERROR_UNSUPPORTED,
                       "GGUF: architecture \"%.*s\" is not supported (%s are)",
                       (int)(alen > 40 ? 40 : alen), a, clf__lm_arch_list(1, list, sizeof(list)));
    }
    if (st == CLF_SUCCESS && k->info.max_positions > (1 << 24))
        st = clf__fail(ctx, CLF_ERROR_UNSUPPORTED, "GGUF: over 2^24 positions");
    if (st != CLF_SUCCESS) clf__lm_config_free(k);
    return st;
}
