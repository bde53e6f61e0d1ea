/*
 * layers.c — the reusable layers of the Transformer models: loading their weights (checked:
 * every tensor present with its exact shape; fused QKV; packed for CPUs), and their forwards
 * (linear, AddNorm, FFN, multi-head self-attention, the post-LN encoder block).
 */
#include "layers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- weights */

void clf__lin_free(clf_lin *l) {
    clf_tensor_free(l->w);
    clf_tensor_free(l->b);
    l->w = l->b = NULL;
    for (int i = 0; i < 2; i++) {
        clf_tensor_free(l->more[i].w);
        clf_tensor_free(l->more[i].b);
        l->more[i].w = l->more[i].b = NULL;
    }
    l->n_more = 0;
}
void clf__norm_free(clf_norm *n) {
    clf_tensor_free(n->g);
    clf_tensor_free(n->b);
    n->g = n->b = NULL;
}
void clf__mha_free(clf_mha_w *m) {
    clf__lin_free(&m->qkv);
    clf__lin_free(&m->kv);
    clf__lin_free(&m->o);
}
void clf__ffn_free(clf_ffn_w *f) {
    clf__lin_free(&f->up);
    clf__lin_free(&f->down);
}
void clf__embed_free(clf_embed_w *e) {
    clf_tensor_free(e->tok);
    clf_tensor_free(e->pos);
    e->tok = e->pos = NULL;
    clf__norm_free(&e->norm);
}

/* ---------------------------------------------------------------- loading */

/* prefix + name with "{i}" replaced by the layer number. */
static void full_name(const clf_loader *L, const char *name, const char *suffix, char *out,
                      size_t size) {
    const char *at = strstr(name, "{i}");
    if (at)
        snprintf(out, size, "%s%.*s%lld%s%s", L->prefix, (int)(at - name), name,
                 (long long)L->layer, at + 3, suffix);
    else
        snprintf(out, size, "%s%s%s", L->prefix, name, suffix);
}

/* The file that holds `full` (the loader's file, or the first shard that has it); NULL when none
 * does. */
static const clf_safetensors *file_of(const clf_loader *L, const char *full,
                                      const clf_st_info **info) {
    if (!L->n_shards) {
        *info = clf_safetensors_find(L->st, full);
        return *info ? L->st : NULL;
    }
    for (size_t i = 0; i < L->n_shards; i++)
        if ((*info = clf_safetensors_find(L->shards[i], full)) != NULL) return L->shards[i];
    return NULL;
}

/* A GGUF file's load of `count` names (at most 3): full names, then clf__gguf_load_rows. */
static clf_status gguf_rows(clf_loader *L, const char *const *names, int count, const int64_t *rows,
                            int64_t cols, clf_tensor **out) {
    char full[3][512];
    const char *fn[3];
    if (count > 3) return clf__fail(L->ctx, CLF_ERROR_INTERNAL, "load_rows: at most 3 tensors");
    for (int i = 0; i < count; i++) {
        full_name(L, names[i], "", full[i], sizeof(full[i]));
        fn[i] = full[i];
    }
    return clf__gguf_load_rows(L, fn, count, rows, cols, out);
}

clf_status clf__load_rows(clf_loader *L, const char *const *names, int count, const int64_t *rows,
                          int64_t cols, int transpose, clf_tensor **out) {
    /* GGUF files keep matrices as (out, in): no Conv1D transposes */
    if (L->gguf) {
        CLF_TRY(gguf_rows(L, names, count, rows, cols, out));
        return clf__cut(L, names[0], count, rows, out);
    }
    const int64_t c = cols ? cols : 1;
    int64_t total = 0, big = 0;
    for (int i = 0; i < count; i++) {
        total += rows[i];
        big = rows[i] > big ? rows[i] : big;
    }
    float *host = malloc((size_t)(total * c) * sizeof(float));
    float *tmp = transpose ? malloc((size_t)(big * c) * sizeof(float)) : NULL;
    if (!host || (transpose && !tmp)) {
        free(host);
        free(tmp);
        return clf__fail(L->ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
    }
    clf_status st = CLF_SUCCESS;
    int64_t at = 0;
    for (int i = 0; i < count && st == CLF_SUCCESS; i++) {
        char full[512];
        clf_error err;
        full_name(L, names[i], "", full, sizeof(full));
        const clf_st_info *info = NULL;
        const clf_safetensors *f = file_of(L, full, &info);
        const int64_t r0 = transpose ? cols : rows[i], r1 = transpose ? rows[i] : cols;
        bool shape_ok = info && info->ndim == (cols ? 2 : 1) && info->shape[0] == r0 &&
                        (!cols || info->shape[1] == r1);
        float *dst = host + at * c;
        if (!info)
            st = clf__fail(L->ctx, CLF_ERROR_BAD_FORMAT, "weights: missing tensor \"%s\"", full);
        else if (!shape_ok)
            st = clf__fail(L->ctx, CLF_ERROR_SHAPE_MISMATCH,
                           "weights: tensor \"%s\" must be (%lld%s%lld)", full, (long long)r0,
                           cols ? ", " : "", (long long)(cols ? r1 : 0));
        else if ((st = clf_safetensors_read_f32(f, full, transpose ? tmp : dst, rows[i] * c,
                                                &err)) != CLF_SUCCESS)
            clf__fail(L->ctx, st, "%s", err.message);
        else if (transpose)
            for (int64_t a = 0; a < cols; a++) /* tmp (cols, rows[i]) -> dst (rows[i], cols) */
                for (int64_t b = 0; b < rows[i]; b++)
                    dst[b * cols + a] = tmp[a * rows[i] + b];
        at += rows[i];
    }
    free(tmp);
    int64_t shape[2] = {total, cols};
    clf_tensor *t = NULL;
    if (st == CLF_SUCCESS) st = clf_tensor_create(L->ctx, CLF_F32, cols ? 2 : 1, shape, &t);
    if (st == CLF_SUCCESS) st = clf_tensor_write(t, host, (size_t)(total * c) * sizeof(float));
    free(host);
    if (st != CLF_SUCCESS) {
        clf_tensor_free(t);
        return st;
    }
    *out = t;
    return clf__cut(L, names[0], count, rows, out);
}

int64_t clf__cut_rows(int64_t rows, int r, int n) {
    return n > 1 ? rows * (r + 1) / n - rows * r / n : rows;
}

clf_status clf__cut(clf_loader *L, const char *name, int count, const int64_t *rows,
                    clf_tensor **t) {
    const int n = L->shard_size, r = L->shard_rank;
    clf_tensor *w = *t;
    if (n <= 1 || L->cut == CLF_CUT_NONE || !w) return CLF_SUCCESS;
    if (L->cut == CLF_CUT_COLS && w->ndim == 1) { /* a bias after the cut columns: shard 0's */
        if (r > 0) {
            clf_tensor_free(w);
            *t = NULL;
        }
        return CLF_SUCCESS;
    }
    const int64_t C = w->ndim == 2 ? w->shape[1] : 1;
    int64_t part[3];
    int parts = count;
    if (parts < 1 || parts > 3) return clf__fail(L->ctx, CLF_ERROR_INTERNAL, "cut: 1 to 3 parts");
    for (int i = 0; i < parts; i++)
        part[i] = rows[i];
    if (count == 1 && L->fused > 1 && L->fused <= 3) { /* one file tensor of stacked parts */
        parts = L->fused;
        for (int i = 0; i < parts; i++)
            part[i] = rows[0] / parts;
    }
    int64_t keep_rows = 0, keep_cols = C;
    if (L->cut == CLF_CUT_ROWS) { /* part i's rows P i r / n .. P i (r + 1) / n - 1 */
        for (int i = 0; i < parts; i++)
            keep_rows += clf__cut_rows(part[i], r, n);
    } else {
        keep_rows = w->shape[0];
        keep_cols = C / n;
        if (C % n || !clf_dtype_row_bytes(w->dtype, keep_cols))
            return clf__fail(L->ctx, CLF_ERROR_INVALID_ARGUMENT,
                             "tensor parallel: \"%s\"'s %lld columns (%s, blocks of %lld) do not "
                             "cut into %d equal shards of whole blocks",
                             name, (long long)C, clf_dtype_name(w->dtype),
                             (long long)clf_dtype_block(w->dtype), n);
    }
    const size_t rb = clf_dtype_row_bytes(w->dtype, C),
                 kb = clf_dtype_row_bytes(w->dtype, keep_cols);
    unsigned char *all = malloc(w->bytes), *mine = malloc((size_t)keep_rows * kb + 1);
    clf_status st = all && mine ? clf_tensor_read(w, all, w->bytes)
                                : clf__fail(L->ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
    if (st == CLF_SUCCESS && L->cut == CLF_CUT_ROWS) {
        int64_t at = 0, to = 0; /* part i's rows start at `at`; this shard's piece of it */
        for (int i = 0; i < parts; i++) {
            const int64_t piece = clf__cut_rows(part[i], r, n), from = part[i] * r / n;
            memcpy(mine + (size_t)to * kb, all + (size_t)(at + from) * rb, (size_t)piece * kb);
            at += part[i];
            to += piece;
        }
    } else if (st == CLF_SUCCESS) {
        for (int64_t i = 0; i < keep_rows; i++)
            memcpy(mine + (size_t)i * kb, all + (size_t)i * rb + (size_t)r * kb, kb);
    }
    clf_tensor *c = NULL;
    const int64_t shape[2] = {keep_rows, keep_cols};
    if (st == CLF_SUCCESS) st = clf_tensor_create(L->ctx, w->dtype, w->ndim, shape, &c);
    if (st == CLF_SUCCESS) st = clf_tensor_write(c, mine, (size_t)keep_rows * kb);
    free(all);
    free(mine);
    if (st != CLF_SUCCESS) {
        clf_tensor_free(c);
        return st;
    }
    clf_tensor_free(w);
    *t = c;
    return CLF_SUCCESS;
}

clf_status clf__load_cat(clf_loader *L, const char *const *names, int count, int64_t rows,
                         int64_t cols, clf_tensor **out) {
    int64_t r[3] = {rows, rows, rows};
    if (count > 3) return clf__fail(L->ctx, CLF_ERROR_INTERNAL, "load_cat: at most 3 tensors");
    return clf__load_rows(L, names, count, r, cols, 0, out);
}

clf_status clf__load(clf_loader *L, const char *name, int64_t rows, int64_t cols,
                     clf_tensor **out) {
    if (L->gguf) {
        CLF_TRY(gguf_rows(L, &name, 1, &rows, cols, out));
        return clf__cut(L, name, 1, &rows, out);
    }
    char full[512];
    full_name(L, name, "", full, sizeof(full));
    int64_t shape[2] = {rows, cols};
    const clf_st_info *info;
    const clf_safetensors *f = file_of(L, full, &info);
    CLF_TRY(clf_safetensors_load(L->ctx,
                                 f             ? f
                                 : L->n_shards ? L->shards[0]
                                               : L->st,
                                 full, cols ? 2 : 1, shape, out));
    return clf__cut(L, name, 1, &rows, out);
}

/* Converts a (out, in) F32 weight to `dtype` (rounded, or quantized as clf_quantize does), then
 * replaces it by its packed panels when the device prefers them (linear.PACK: CPUs) and the type
 * has panels there (clf__linear_packs), see clf__linear_pack. */
static clf_status pack_with(clf_context *ctx, clf_dtype dtype, int *gated, clf_tensor **w);

clf_status clf__pack(clf_context *ctx, clf_dtype dtype, clf_tensor **w) {
    int gated = 0;
    return pack_with(ctx, dtype, &gated, w);
}

/* clf__pack; *gated 1 asks for gated panels (a GLU's gate | up) and stays 1 where they were made,
 * else becomes 0. */
static clf_status pack_with(clf_context *ctx, clf_dtype dtype, int *gated, clf_tensor **w) {
    if (*w && dtype != CLF_F32 && (*w)->dtype == CLF_F32) {
        const int64_t n = (*w)->numel;
        float *h = malloc(sizeof(float) * (size_t)n);
        clf_tensor *t = NULL;
        if (!h) return clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
        clf_status st = clf_tensor_read(*w, h, sizeof(float) * (size_t)n);
        if (st == CLF_SUCCESS) st = clf_tensor_create(ctx, dtype, (*w)->ndim, (*w)->shape, &t);
        if (st == CLF_SUCCESS) st = clf_tensor_write_f32(t, h, n);
        if (st != CLF_SUCCESS) {
            char why[256]; /* the message is rewritten from a copy: clf__fail writes the buffer */
            snprintf(why, sizeof(why), "%s", clf_context_last_error(ctx));
            clf__fail(ctx, st, "weights as %s (a (%lld, %lld) linear weight): %s",
                      clf_dtype_name(dtype), (long long)(*w)->shape[0], (long long)(*w)->shape[1],
                      why);
        }
        free(h);
        if (st != CLF_SUCCESS) {
            clf_tensor_free(t);
            return st;
        }
        clf_tensor_free(*w);
        *w = t;
    }
    *gated = *gated && *w && (*w)->ndim == 2 && clf__linear_packs(ctx, (*w)->dtype) &&
             clf__linear_gates(ctx, (*w)->dtype, (*w)->shape[0]);
    if (!*w || !clf__linear_packs(ctx, (*w)->dtype)) return CLF_SUCCESS;
    clf_tensor *p = NULL;
    CLF_TRY(*gated ? clf__linear_pack_gated(ctx, *w, &p) : clf__linear_pack(ctx, *w, &p));
    clf_tensor_free(*w);
    *w = p;
    return CLF_SUCCESS;
}

static clf_status load_stack(clf_loader *L, const char *const *stems, int count,
                             const int64_t *rows, int64_t cols, int bias, int glu, clf_lin *l);

clf_status clf__load_stack(clf_loader *L, const char *const *stems, int count, const int64_t *rows,
                           int64_t cols, int bias, clf_lin *l) {
    return load_stack(L, stems, count, rows, cols, bias, 0, l);
}

clf_status clf__load_glu(clf_loader *L, const char *const *stems, const int64_t *rows, int64_t cols,
                         clf_lin *l) {
    return load_stack(L, stems, 2, rows, cols, 0, 1, l);
}

static clf_status load_stack(clf_loader *L, const char *const *stems, int count,
                             const int64_t *rows, int64_t cols, int bias, int glu, clf_lin *l) {
    char w[3][160], b[3][160];
    const char *wn[3], *bn[3];
    int type[3];
    if (count < 1 || count > 3) return clf__fail(L->ctx, CLF_ERROR_INTERNAL, "stack: 1 to 3");
    for (int i = 0; i < count; i++) {
        snprintf(w[i], sizeof(w[i]), "%s.weight", stems[i]);
        snprintf(b[i], sizeof(b[i]), "%s.bias", stems[i]);
        wn[i] = w[i];
        bn[i] = b[i];
        type[i] = -1; /* safetensors: one type, the loader's weight_dtype */
        if (L->gguf) {
            char full[512];
            full_name(L, wn[i], "", full, sizeof(full));
            type[i] = clf__gguf_stored_type(L, full);
        }
    }
    /* runs of one stored type: the first in l->w, the others in l->more */
    int run = 0;
    for (int start = 0, i = 1; i <= count; i++) {
        if (i < count && type[i] == type[start]) continue;
        clf_tensor **tw = run ? &l->more[run - 1].w : &l->w;
        clf_tensor **tb = run ? &l->more[run - 1].b : &l->b;
        int64_t out = 0;
        for (int j = start; j < i; j++) /* this shard's outputs when its rows are cut */
            out += L->cut == CLF_CUT_ROWS ? clf__cut_rows(rows[j], L->shard_rank, L->shard_size)
                                          : rows[j];
        CLF_TRY(clf__load_rows(L, wn + start, i - start, rows + start, cols, 0, tw));
        if (bias) CLF_TRY(clf__load_rows(L, bn + start, i - start, rows + start, 0, 0, tb));
        /* a GLU's gate | up in one run (one type): gated panels where they pack */
        int gated = glu && start == 0 && i == count;
        CLF_TRY(pack_with(L->ctx, L->weight_dtype, &gated, tw));
        if (!run) l->gated = gated;
        if (run) {
            l->more[run - 1].out = out;
            l->more[run - 1].n_tensors = i - start;
            l->n_more = run;
        } else {
            l->out = out;
            l->n_tensors = i - start;
        }
        run++;
        start = i;
    }
    return CLF_SUCCESS;
}

/* Joins stem and suffix into buf (the loader expands "{i}" later). */
static const char *join(char *buf, size_t size, const char *stem, const char *suffix) {
    snprintf(buf, size, "%s%s", stem, suffix);
    return buf;
}

clf_status clf__load_lin(clf_loader *L, const char *stem, int64_t out, int64_t in, int bias,
                         clf_lin *l) {
    char n[300];
    CLF_TRY(clf__load(L, join(n, sizeof(n), stem, ".weight"), out, in, &l->w));
    if (bias) CLF_TRY(clf__load(L, join(n, sizeof(n), stem, ".bias"), out, 0, &l->b));
    return clf__pack(L->ctx, L->weight_dtype, &l->w);
}

clf_status clf__load_norm(clf_loader *L, const char *stem, int64_t d, clf_norm *n) {
    char s[300];
    CLF_TRY(clf__load(L, join(s, sizeof(s), stem, ".weight"), d, 0, &n->g));
    return clf__load(L, join(s, sizeof(s), stem, ".bias"), d, 0, &n->b);
}

/* Loads count projections (d, d) by rows into one clf_lin (count d, d). */
static clf_status load_fused(clf_loader *L, const char *const *stems, int count, int64_t d,
                             int bias, clf_lin *l) {
    char w[3][300], b[3][300];
    const char *wn[3], *bn[3];
    for (int i = 0; i < count; i++) {
        wn[i] = join(w[i], sizeof(w[i]), stems[i], ".weight");
        bn[i] = join(b[i], sizeof(b[i]), stems[i], ".bias");
    }
    CLF_TRY(clf__load_cat(L, wn, count, d, d, &l->w));
    if (bias) CLF_TRY(clf__load_cat(L, bn, count, d, 0, &l->b));
    return clf__pack(L->ctx, L->weight_dtype, &l->w);
}

clf_status clf__load_mha(clf_loader *L, const char *q, const char *k, const char *v, const char *o,
                         int64_t d, int bias, int cross, clf_mha_w *m) {
    const char *qkv[3] = {q, k, v};
    if (!cross) {
        CLF_TRY(load_fused(L, qkv, 3, d, bias, &m->qkv));
    } else {
        CLF_TRY(load_fused(L, qkv, 1, d, bias, &m->qkv));
        CLF_TRY(load_fused(L, qkv + 1, 2, d, bias, &m->kv));
    }
    return clf__load_lin(L, o, d, d, bias, &m->o);
}

clf_status clf__load_ffn(clf_loader *L, const char *up, const char *down, int64_t d, int64_t f,
                         clf_ffn_w *w) {
    CLF_TRY(clf__load_lin(L, up, f, d, 1, &w->up));
    return clf__load_lin(L, down, d, f, 1, &w->down);
}

clf_status clf__load_enc_layer(clf_loader *L, const clf_transformer_params *c,
                               const clf_enc_names *n, int bias, clf_enc_layer *l) {
    const int64_t d = c->num_hiddens;
    CLF_TRY(clf__load_mha(L, n->q, n->k, n->v, n->o, d, bias, 0, &l->att));
    CLF_TRY(clf__load_norm(L, n->norm1, d, &l->n1));
    CLF_TRY(clf__load_norm(L, n->norm2, d, &l->n2));
    return clf__load_ffn(L, n->up, n->down, d, c->ffn_num_hiddens, &l->ffn);
}

/* ---------------------------------------------------------------- workspaces and checks */

clf_tensor clf__view(const clf_tensor *base, int64_t a, int64_t b, int64_t c) {
    clf_tensor v = *base;
    v.ndim = c ? 3 : 2;
    v.shape[0] = a;
    v.shape[1] = b;
    v.shape[2] = c;
    v.shape[3] = 0;
    v.numel = a * b * (c ? c : 1);
    v.bytes = (size_t)v.numel * clf_dtype_size(base->dtype);
    return v;
}

clf_status clf__ensure(clf_context *ctx, clf_tensor **t, clf_dtype dt, int64_t n) {
    if (*t && (*t)->numel >= n) return CLF_SUCCESS;
    clf_tensor *nt = NULL;
    CLF_TRY(clf_tensor_create(ctx, dt, 1, &n, &nt));
    clf_tensor_free(*t);
    *t = nt;
    return CLF_SUCCESS;
}

clf_status clf__ensure_4d(clf_context *ctx, clf_tensor **t, int64_t B, int64_t H, int64_t T,
                          int64_t K) {
    const int64_t s[4] = {B, H, T, K};
    bool fits = *t && (*t)->ndim == 4;
    for (int i = 0; fits && i < 4; i++)
        fits = (*t)->shape[i] == s[i];
    if (fits) return CLF_SUCCESS;
    clf_tensor_free(*t);
    *t = NULL;
    return clf_tensor_create(ctx, CLF_F32, 4, s, t);
}

/* A workspace of `floats` floats must fit the device's global memory (with the weights and
 * everything else it holds, it could still fail later; this catches the impossible at once). */
clf_status clf__check_workspace(clf_context *ctx, const char *what, int64_t floats) {
    const double bytes = 4.0 * (double)floats;
    if (bytes > (double)ctx->info.global_mem_bytes)
        return clf__fail(ctx, CLF_ERROR_SIZE_LIMIT,
                         "%s: the workspace needs %.0f MiB, more than the device's %.0f MiB of "
                         "global memory",
                         what, bytes / 1048576.0, (double)ctx->info.global_mem_bytes / 1048576.0);
    return CLF_SUCCESS;
}

clf_status clf__check_ids(clf_context *ctx, const clf_tensor *ids, const clf_tensor *vl) {
    CLF_TRY(clf__check_tensor(ctx, ids, "ids", CLF_I32));
    char a[96], b[96];
    if (ids->ndim != 2)
        return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH, "ids %s must be (batch, length)",
                         clf__shape_str(ids, a, sizeof(a)));
    if (!vl) return CLF_SUCCESS;
    CLF_TRY(clf__check_tensor(ctx, vl, "valid_lens", CLF_I32));
    if (vl->ndim != 1 || vl->shape[0] != ids->shape[0])
        return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH,
                         "valid_lens %s must be (%lld), one per sequence of ids %s",
                         clf__shape_str(vl, a, sizeof(a)), (long long)ids->shape[0],
                         clf__shape_str(ids, b, sizeof(b)));
    return CLF_SUCCESS;
}

/* ---------------------------------------------------------------- forwards */

static clf_status lin_with(clf_context *ctx, const clf_tensor *x, const clf_lin *l,
                           clf_activation act, clf_tensor *y, const clf_lin_fuse *f) {
    if (!l->n_more) {
        if (l->gated) /* gated panels: the outputs in W's order */
            return clf__linear_packed_gated(ctx, x, l->w, l->out, l->b, act, 0, y, f);
        if (l->w->ndim == 3)
            return clf__linear_packed(ctx, x, l->w, y->shape[y->ndim - 1], l->b, act, y, f);
        return clf_linear(ctx, x, l->w, l->b, act, y);
    }
    /* a split stack: each run into its columns; an activation other than ReLU once over all */
    const bool fused = act == CLF_ACT_IDENTITY || act == CLF_ACT_RELU;
    const clf_activation a = fused ? act : CLF_ACT_IDENTITY;
    int64_t col = l->out;
    CLF_TRY(clf__linear_cols(ctx, x, l->w, l->out, l->b, a, y, 0, f));
    for (int i = 0; i < l->n_more; i++) {
        CLF_TRY(clf__linear_cols(ctx, x, l->more[i].w, l->more[i].out, l->more[i].b, a, y, col, f));
        col += l->more[i].out;
    }
    if (col != y->shape[y->ndim - 1])
        return clf__fail(ctx, CLF_ERROR_INTERNAL, "linear stack: %lld outputs for %lld columns",
                         (long long)col, (long long)y->shape[y->ndim - 1]);
    return fused ? CLF_SUCCESS : clf_bias_act(ctx, y, NULL, act, y);
}

clf_status clf__lin(clf_context *ctx, const clf_tensor *x, const clf_lin *l, clf_activation act,
                    clf_tensor *y) {
    return lin_with(ctx, x, l, act, y, NULL);
}

bool clf__lin_fuses(const clf_context *ctx, const clf_lin *l, int64_t rows) {
    bool ok = clf__linear_fuses(ctx, l->w, rows);
    for (int i = 0; ok && i < l->n_more; i++)
        ok = clf__linear_fuses(ctx, l->more[i].w, rows);
    return ok;
}

clf_status clf__lin_fused(clf_context *ctx, const clf_tensor *x, const clf_lin *l, clf_tensor *y,
                          const clf_lin_fuse *f) {
    return lin_with(ctx, x, l, CLF_ACT_IDENTITY, y, f);
}

clf_status clf__lin_glu(clf_context *ctx, const clf_tensor *x, const clf_lin *l, clf_activation act,
                        clf_tensor *y, const clf_lin_fuse *f) {
    if (!l->gated || l->n_more)
        return clf__fail(ctx, CLF_ERROR_INTERNAL, "linear: a GLU on weights not gated");
    return clf__linear_packed_gated(ctx, x, l->w, l->out, l->b, act, 1, y, f);
}

clf_status clf__add_norm(clf_context *ctx, const clf_tensor *x, const clf_tensor *r,
                         const clf_norm *n, float eps, clf_tensor *y) {
    return clf_layernorm(ctx, x, r, n->g, n->b, eps, y);
}

clf_status clf__ffn(clf_context *ctx, const clf_tensor *x, const clf_ffn_w *f, clf_activation act,
                    clf_tensor *h, clf_tensor *y) {
    CLF_TRY(clf__lin(ctx, x, &f->up, act, h));              /* h (B, N, F) */
    return clf__lin(ctx, h, &f->down, CLF_ACT_IDENTITY, y); /* y (B, N, d) */
}

clf_status clf__mha_self(clf_context *ctx, const clf_transformer_params *c, const clf_mha_w *m,
                         const clf_tensor *x, const clf_mask *mask, clf_tensor *weights,
                         clf_block_ws *ws, clf_tensor *out) {
    const int64_t d = c->num_hiddens, H = c->num_heads;
    clf_attention_params ad = clf_attention_default_params(H, d / H);
    ad.k_col = d; /* K and V are columns d.. and 2d.. of the fused projection */
    ad.v_col = 2 * d;
    ad.mask = *mask;
    ad.naive = weights != NULL;
    ad.weights = weights;
    CLF_TRY(clf__lin(ctx, x, &m->qkv, CLF_ACT_IDENTITY, &ws->qkv));           /* (B, N, 3d) */
    CLF_TRY(clf_attention(ctx, &ws->qkv, &ws->qkv, &ws->qkv, &ws->att, &ad)); /* (B, N, d) */
    return clf__lin(ctx, &ws->att, &m->o, CLF_ACT_IDENTITY, out);
}

clf_status clf__post_ln_encoder_block(clf_context *ctx, const clf_transformer_params *c,
                                      const clf_enc_layer *l, clf_tensor *x,
                                      const clf_tensor *valid_lens, clf_tensor *weights,
                                      clf_block_ws *ws) {
    const float eps = c->norm_eps;
    clf_mask mask = {0};
    mask.valid_lens = valid_lens;
    CLF_TRY(clf__mha_self(ctx, c, &l->att, x, &mask, weights, ws, &ws->tmp));
    CLF_TRY(clf__add_norm(ctx, &ws->tmp, x, &l->n1, eps, &ws->y)); /* Y = AddNorm(X, MHA(X)) */
    CLF_TRY(clf__ffn(ctx, &ws->y, &l->ffn, c->ffn_act, &ws->h, &ws->tmp));
    return clf__add_norm(ctx, &ws->tmp, &ws->y, &l->n2, eps, x); /* X = AddNorm(Y, FFN(Y)) */
}

int64_t clf__tensor_bytes0(const clf_tensor *t) {
    return t ? (int64_t)t->bytes : 0;
}

int64_t clf__lin_bytes(const clf_lin *l) {
    int64_t b = clf__tensor_bytes0(l->w) + clf__tensor_bytes0(l->b);
    for (int i = 0; i < l->n_more; i++)
        b += clf__tensor_bytes0(l->more[i].w) + clf__tensor_bytes0(l->more[i].b);
    return b;
}
