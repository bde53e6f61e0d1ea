/*
 * lm_state.c — the states of a causal language model (clf_lm_state): the KV caches of a batch of
 * sequences, each at its own length, and the step that appends tokens to them. A model split
 * over several contexts (pipeline stages) keeps each layer's cache and a workspace on its stage's
 * context; the step runs the stages in order and carries the residual stream (B, T, d) from one
 * to the next through the host.
 */
#include "lm.h"

#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* One stage's workspace, on its context. */
typedef struct stage_ws {
    clf_tensor *h, *x, *qkv, *att, *o, *up, *mid; /* (rows, d | d | q+2kv | q | d | 2F | F) */
    clf_tensor *lens, *offs, *pos_ids;            /* (B, T), (B), (B, T) I32 */
    clf_tensor *ids;  /* the first stage: (B, T) I32 ids from the host (clf_lm_state_step_ids) */
    clf_tensor *last; /* last stage: (B, d) each sequence's last row */
    clf_tensor *part; /* a tensor-parallel shard: (rows, its vocabulary rows) of the logits */
    /* The last step's staging writes, not waited for (the queue is in order: the kernels after
     * them see the data); the staging arrays change only after it completes. */
    cl_event staged;
} stage_ws;

struct clf_lm_state {
    const clf_lm *m;
    int64_t batch, max_len;
    int64_t *lengths;              /* (B) tokens in each sequence's cache */
    clf_tensor **kv;               /* [layers] (B, max_len, 2 kv): K | V of every cached position */
    int64_t rows;                  /* B T the workspaces hold */
    stage_ws *st;                  /* [n_parts] */
    int32_t *host_lens, *host_pos; /* (B, T) staging */
    int32_t *host_ids;             /* (B, T) staging of clf_lm_state_step_ids */
    int32_t *host_offs;            /* (B) staging */
    float *carry;                  /* (rows, d) the residual stream between stages (split) */
    float *part_h, *logits_h;      /* a shard's part of the logits and all of them, on the host */
    float *reduce_h;               /* a shard's stream for its all-reduces (clf_lm_ws.reduce_h) */
    int64_t reduce_n;
    /* The caller's ids or logits on another context than the first or last stage's: copies */
    clf_tensor *ids_here, *logits_here;
};

/* Waits for the last step's staging writes, so the staging arrays can change. */
static clf_status wait_staged(clf_lm_state *s) {
    clf_status st = CLF_SUCCESS;
    for (int p = 0; s->st && p < s->m->n_parts; p++) {
        stage_ws *w = &s->st[p];
        if (!w->staged) continue;
        const cl_int err = clWaitForEvents(1, &w->staged);
        clReleaseEvent(w->staged);
        w->staged = NULL;
        if (err != CL_SUCCESS && st == CLF_SUCCESS)
            st = clf__cl_fail(s->m->ctx, err, "lm step: staging writes");
    }
    return st;
}

static void ws_free(clf_lm_state *s) {
    wait_staged(s);
    for (int p = 0; s->st && p < s->m->n_parts; p++) {
        stage_ws *w = &s->st[p];
        clf_tensor *ts[] = {w->h,   w->x,    w->qkv,     w->att,  w->o,    w->up,
                            w->mid, w->lens, w->pos_ids, w->last, w->part, w->ids};
        for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++)
            clf_tensor_free(ts[i]);
        w->h = w->x = w->qkv = w->att = w->o = w->up = w->mid = w->lens = w->pos_ids = w->last =
            w->part = w->ids = NULL;
    }
    free(s->part_h);
    free(s->logits_h);
    free(s->reduce_h);
    s->part_h = s->logits_h = s->reduce_h = NULL;
    s->reduce_n = 0;
    free(s->host_lens);
    free(s->host_pos);
    free(s->host_ids);
    free(s->carry);
    s->host_lens = s->host_pos = s->host_ids = NULL;
    s->carry = NULL;
    s->rows = 0;
}

void clf_lm_state_free(clf_lm_state *s) {
    if (!s) return;
    ws_free(s);
    if (s->kv)
        for (int64_t i = 0; i < s->m->cfg.info.layers; i++)
            clf_tensor_free(s->kv[i]);
    free(s->kv);
    for (int p = 0; s->st && p < s->m->n_parts; p++)
        clf_tensor_free(s->st[p].offs);
    free(s->st);
    clf_tensor_free(s->ids_here);
    clf_tensor_free(s->logits_here);
    free(s->host_offs);
    free(s->lengths);
    free(s);
}

clf_status clf_lm_state_create(const clf_lm *m, int64_t batch, int64_t max_len,
                               clf_lm_state **out) {
    if (!m || !out) return CLF_ERROR_INVALID_ARGUMENT;
    clf_context *ctx = m->ctx;
    clf__clear_error(ctx);
    *out = NULL;
    const clf_lm_info *in = &m->cfg.info;
    const int64_t kv = in->kv_heads * in->head_dim;
    if (batch < 1 || max_len < 1 || max_len > in->max_positions)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                         "lm state: batch %lld must be >= 1 and max_len %lld in 1 .. %lld",
                         (long long)batch, (long long)max_len, (long long)in->max_positions);
    if (batch > INT64_MAX / max_len / 2 / kv / in->layers)
        return clf__fail(ctx, CLF_ERROR_SIZE_LIMIT, "lm state: the caches overflow");
    for (int p = 0; p < m->n_parts; p++) {
        const clf_lm_part *pt = &m->parts[p];
        const clf_status st = clf__check_workspace(
            pt->ctx, "lm state (KV caches)", batch * max_len * 2 * kv * (pt->end - pt->first));
        if (st != CLF_SUCCESS) return clf__lm_relay_error(m, pt->ctx, st);
    }
    clf_lm_state *s = calloc(1, sizeof(*s));
    clf_status st = CLF_SUCCESS;
    if (!s) return clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
    s->m = m;
    s->batch = batch;
    s->max_len = max_len;
    s->lengths = calloc((size_t)batch, sizeof(int64_t));
    s->host_offs = calloc((size_t)batch, sizeof(int32_t));
    s->kv = calloc((size_t)in->layers, sizeof(clf_tensor *));
    s->st = calloc((size_t)m->n_parts, sizeof(stage_ws));
    if (!s->lengths || !s->host_offs || !s->kv || !s->st) {
        st = clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
        goto fail;
    }
    const int64_t shape[3] = {batch, max_len, 2 * kv};
    for (int p = 0; p < m->n_parts && st == CLF_SUCCESS; p++) {
        const clf_lm_part *pt = &m->parts[p];
        for (int64_t i = pt->first; i < pt->end && st == CLF_SUCCESS; i++)
            st = clf_tensor_create(pt->ctx, in->cache_dtype, 3, shape, &s->kv[i]);
        if (st == CLF_SUCCESS) st = clf_tensor_create(pt->ctx, CLF_I32, 1, &batch, &s->st[p].offs);
        if (st != CLF_SUCCESS) clf__lm_relay_error(m, pt->ctx, st);
    }
    if (st != CLF_SUCCESS) goto fail;
    *out = s;
    return CLF_SUCCESS;
fail:
    clf_lm_state_free(s);
    return st;
}

clf_status clf_lm_state_reset(clf_lm_state *s) {
    if (!s) return CLF_ERROR_INVALID_ARGUMENT;
    memset(s->lengths, 0, sizeof(int64_t) * (size_t)s->batch);
    return CLF_SUCCESS;
}

int64_t clf_lm_state_length(const clf_lm_state *s, int64_t b) {
    return s && b >= 0 && b < s->batch ? s->lengths[b] : -1;
}

/* Stage p's workspace for B T rows. */
static clf_status stage_grow(clf_lm_state *s, int p, int64_t rows) {
    const clf_lm *m = s->m;
    clf_context *ctx = m->parts[p].ctx;
    const clf_lm_info *in = &m->cfg.info;
    const int64_t B = s->batch, d = in->hidden_size, q = in->heads * in->head_dim,
                  kv = in->kv_heads * in->head_dim, F = in->ffn_size;
    stage_ws *w = &s->st[p];
    clf_status st = clf__check_workspace(ctx, "lm step", rows * (4 * d + 2 * q + 2 * kv + 3 * F));
    if (st == CLF_SUCCESS) st = clf__ensure(ctx, &w->h, CLF_F32, rows * d);
    if (st == CLF_SUCCESS) st = clf__ensure(ctx, &w->x, CLF_F32, rows * d);
    if (st == CLF_SUCCESS) st = clf__ensure(ctx, &w->qkv, CLF_F32, rows * (q + 2 * kv));
    if (st == CLF_SUCCESS) st = clf__ensure(ctx, &w->att, CLF_F32, rows * q);
    if (st == CLF_SUCCESS) st = clf__ensure(ctx, &w->o, CLF_F32, rows * d);
    if (st == CLF_SUCCESS) st = clf__ensure(ctx, &w->up, CLF_F32, rows * 2 * F);
    if (st == CLF_SUCCESS) st = clf__ensure(ctx, &w->mid, CLF_F32, rows * F);
    if (st == CLF_SUCCESS) st = clf__ensure(ctx, &w->lens, CLF_I32, rows);
    if (st == CLF_SUCCESS) st = clf__ensure(ctx, &w->pos_ids, CLF_I32, rows);
    if (st == CLF_SUCCESS && p == 0 && m->embeds) st = clf__ensure(ctx, &w->ids, CLF_I32, rows);
    if (st == CLF_SUCCESS && p == m->n_parts - 1) st = clf__ensure(ctx, &w->last, CLF_F32, B * d);
    return st == CLF_SUCCESS ? st : clf__lm_relay_error(m, ctx, st);
}

/* The workspaces for B T rows (they grow, never shrink). */
static clf_status ws_grow(clf_lm_state *s, int64_t T) {
    const clf_lm *m = s->m;
    const int64_t rows = s->batch * T, d = m->cfg.info.hidden_size;
    if (rows <= s->rows) return CLF_SUCCESS;
    ws_free(s);
    clf_status st = CLF_SUCCESS;
    s->host_lens = malloc(sizeof(int32_t) * (size_t)rows);
    s->host_pos = malloc(sizeof(int32_t) * (size_t)rows);
    s->host_ids = malloc(sizeof(int32_t) * (size_t)rows);
    if (m->n_parts > 1) s->carry = malloc(sizeof(float) * (size_t)(rows * d));
    if (!s->host_lens || !s->host_pos || !s->host_ids || (m->n_parts > 1 && !s->carry))
        st = clf__fail(m->ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
    for (int p = 0; p < m->n_parts && st == CLF_SUCCESS; p++)
        st = stage_grow(s, p, rows);
    if (st != CLF_SUCCESS) {
        ws_free(s);
        return st;
    }
    s->rows = rows;
    return CLF_SUCCESS;
}

/* Stage p's views for (B, T). */
static void ws_views(clf_lm_state *s, int p, int64_t T, clf_lm_ws *ws) {
    const clf_lm_info *in = &s->m->cfg.info;
    const int64_t B = s->batch, d = in->hidden_size, q = in->heads * in->head_dim,
                  kv = in->kv_heads * in->head_dim, F = in->ffn_size;
    const stage_ws *w = &s->st[p];
    memset(ws, 0, sizeof(*ws));
    ws->h = clf__view(w->h, B, T, d);
    ws->x = clf__view(w->x, B, T, d);
    ws->qkv = clf__view(w->qkv, B, T, q + 2 * kv);
    ws->att = clf__view(w->att, B, T, q);
    ws->o = clf__view(w->o, B, T, d);
    ws->up = clf__view(w->up, B, T, 2 * F);
    ws->mid = clf__view(w->mid, B, T, F);
    ws->lens = clf__view(w->lens, B, T, 0);
    ws->pos_ids = clf__view(w->pos_ids, B, T, 0);
    ws->offs = w->offs;
    ws->freq = s->m->parts[p].freq;
    ws->reduce_h = &s->reduce_h;
    ws->reduce_n = &s->reduce_n;
}

/* Checks a step's counts of new tokens (T positions) against the state. */
static clf_status check_counts(clf_lm_state *s, int64_t T, const int64_t *n_new) {
    clf_context *ctx = s->m->ctx;
    for (int64_t i = 0; i < s->batch; i++) {
        const int64_t n = n_new ? n_new[i] : T;
        if (n < 0 || n > T)
            return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                             "lm step: n_new[%lld] = %lld must be in 0 .. %lld", (long long)i,
                             (long long)n, (long long)T);
        if (s->lengths[i] + n > s->max_len)
            return clf__fail(ctx, CLF_ERROR_SIZE_LIMIT,
                             "lm step: sequence %lld would hold %lld tokens, over the state's "
                             "max_len %lld",
                             (long long)i, (long long)(s->lengths[i] + n), (long long)s->max_len);
    }
    return CLF_SUCCESS;
}

/* t as the checks on the model's first context see it: t itself, or (t on another of the
 * model's contexts) a copy of its description in *copy naming the first context. */
static const clf_tensor *as_first_context(const clf_lm *m, const clf_tensor *t, clf_tensor *copy) {
    for (int p = 0; t && p < m->n_parts; p++)
        if (t->ctx == m->parts[p].ctx) {
            *copy = *t;
            copy->ctx = m->ctx;
            return copy;
        }
    return t;
}

/* logits for a step of T positions: (B, T, V) (*all_t 1) or (B, V); n_new's counts. what: the
 * ids, for messages. */
static clf_status check_out(clf_lm_state *s, int64_t T, const int64_t *n_new,
                            const clf_tensor *logits, int *all_t, const char *what) {
    const clf_lm *m = s->m;
    clf_context *ctx = m->ctx;
    const int64_t V = m->cfg.info.vocab_size, B = s->batch;
    clf_tensor logits_c;
    logits = as_first_context(m, logits, &logits_c);
    /* a tensor-parallel shard without logits joins the head's all-reduce as for (B, V) */
    if (!logits && m->shard.size > 1) return check_counts(s, T, n_new);
    CLF_TRY(clf__check_tensor(ctx, logits, "logits", CLF_F32));
    *all_t = logits->ndim == 3;
    const bool ok = (logits->ndim == 3 && logits->shape[0] == B && logits->shape[1] == T &&
                     logits->shape[2] == V) ||
                    (logits->ndim == 2 && logits->shape[0] == B && logits->shape[1] == V);
    char a[96];
    if (!ok)
        return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH,
                         "lm step: logits %s must be (%lld, %lld, %lld) or (%lld, %lld) for ids %s",
                         clf__shape_str(logits, a, sizeof(a)), (long long)B, (long long)T,
                         (long long)V, (long long)B, (long long)V, what);
    return check_counts(s, T, n_new);
}

/* Checks a step's arguments against the state; *all_t: logits hold every position. */
static clf_status check_step(clf_lm_state *s, const clf_tensor *ids, const int64_t *n_new,
                             const clf_tensor *logits, int *all_t) {
    const clf_lm *m = s->m;
    clf_context *ctx = m->ctx;
    /* ids and logits may sit on any of the model's contexts (copied through the host where they
     * are not the first and the last stage's). */
    clf_tensor ids_c;
    ids = as_first_context(m, ids, &ids_c);
    CLF_TRY(clf__check_ids(ctx, ids, NULL));
    char a[96];
    clf__shape_str(ids, a, sizeof(a));
    if (ids->shape[0] != s->batch)
        return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH,
                         "lm step: ids %s must have the state's %lld sequences", a,
                         (long long)s->batch);
    return check_out(s, ids->shape[1], n_new, logits, all_t, a);
}

/* A tensor like t on ctx: t itself when it is there, else *copy (made or remade to t's shape). */
static clf_status on_context(clf_context *ctx, const clf_tensor *t, clf_tensor **copy,
                             clf_tensor **out) {
    if (t->ctx == ctx) {
        *out = (clf_tensor *)t;
        return CLF_SUCCESS;
    }
    if (!*copy || (*copy)->ndim != t->ndim || (*copy)->dtype != t->dtype ||
        memcmp((*copy)->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim) != 0) {
        clf_tensor_free(*copy);
        *copy = NULL;
        CLF_TRY(clf_tensor_create(ctx, t->dtype, t->ndim, t->shape, copy));
    }
    *out = *copy;
    return CLF_SUCCESS;
}

/* Moves the (B, T, d) residual stream of stage p into stage p + 1's (through the host). */
static clf_status carry_over(clf_lm_state *s, int p, clf_lm_ws *ws) {
    const clf_lm *m = s->m;
    clf_context *ctx = m->parts[p].ctx;
    if (ws->pending) { /* h += o, which the next stage's first norm would have fused */
        CLF_TRY(clf_add(ctx, &ws->h, &ws->o, &ws->h));
        ws->pending = 0;
    }
    CLF_TRY(clf_tensor_read(&ws->h, s->carry, ws->h.bytes));
    clf_tensor next = clf__view(s->st[p + 1].h, ws->h.shape[0], ws->h.shape[1], ws->h.shape[2]);
    const clf_status st = clf_tensor_write(&next, s->carry, next.bytes);
    return st == CLF_SUCCESS ? st : clf__lm_relay_error(m, m->parts[p + 1].ctx, st);
}

/* Stage p's staging writes (lengths and offsets of the new rows; on the first stage their
 * positions too), not waited for: the stage's first kernels queue behind them (a blocking write
 * each was a round trip to the device per step). */
static clf_status stage_staging(clf_lm_state *s, int p, clf_lm_ws *ws) {
    const int64_t B = ws->lens.shape[0], T = ws->lens.shape[1];
    stage_ws *w = &s->st[p];
    clf_status st =
        clf__tensor_write_async(&ws->lens, s->host_lens, sizeof(int32_t) * (size_t)(B * T), NULL);
    if (st == CLF_SUCCESS)
        st = clf__tensor_write_async(ws->offs, s->host_offs, sizeof(int32_t) * (size_t)B,
                                     p ? &w->staged : NULL);
    clf_tensor ids = p == 0 && ws->ids_in_range ? clf__view(w->ids, B, T, 0) : ws->lens;
    if (st == CLF_SUCCESS && p == 0 && ws->ids_in_range) /* clf_lm_state_step_ids */
        st = clf__tensor_write_async(&ids, s->host_ids, sizeof(int32_t) * (size_t)(B * T), NULL);
    if (st == CLF_SUCCESS && p == 0)
        st = clf__tensor_write_async(&ws->pos_ids, s->host_pos, sizeof(int32_t) * (size_t)(B * T),
                                     &w->staged);
    if (st != CLF_SUCCESS) { /* drained: the staging arrays must not change under a write */
        clFinish(s->m->parts[p].ctx->queue);
        clf__lm_relay_error(s->m, s->m->parts[p].ctx, st);
    }
    return st;
}

/* A checked step of T positions: the stream from ids (a model that embeds) or h_in (B, T, d)
 * host floats, through the stages, to logits (a model with the head; all_t: every position) or
 * h_out (B, T, d) host floats. */
/* The head on x (rows, d) into lg (rows, V), or on a tensor-parallel shard its rows of the
 * vocabulary, the others' added by the all-reduce (into lg when the caller gave logits). */
static clf_status head(clf_lm_state *s, clf_context *ctx, const clf_tensor *x, clf_tensor *lg) {
    const clf_lm *m = s->m;
    if (m->shard.size <= 1) return clf__lin(ctx, x, &m->head, CLF_ACT_IDENTITY, lg);
    const int64_t d = m->cfg.info.hidden_size, rows = x->numel / d, V = m->cfg.info.vocab_size,
                  v0 = V * m->shard.rank / m->shard.size,
                  vr = clf__cut_rows(V, m->shard.rank, m->shard.size);
    stage_ws *w = &s->st[m->n_parts - 1];
    clf_tensor xv = clf__view(x, rows, d, 0);
    CLF_TRY(clf__ensure(ctx, &w->part, CLF_F32, rows * vr));
    clf_tensor pv = clf__view(w->part, rows, vr, 0);
    CLF_TRY(clf__lin(ctx, &xv, &m->head, CLF_ACT_IDENTITY, &pv));
    float *ph = realloc(s->part_h, sizeof(float) * (size_t)(rows * vr));
    if (ph) s->part_h = ph;
    float *all = ph ? realloc(s->logits_h, sizeof(float) * (size_t)(rows * V)) : NULL;
    if (all) s->logits_h = all;
    if (!ph || !all) return clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
    CLF_TRY(clf_tensor_read(&pv, ph, pv.bytes));
    memset(all, 0, sizeof(float) * (size_t)(rows * V));
    for (int64_t i = 0; i < rows; i++)
        memcpy(all + i * V + v0, ph + i * vr, sizeof(float) * (size_t)vr);
    CLF_TRY(clf__lm_allreduce(ctx, m, all, rows * V));
    return lg ? clf_tensor_write(lg, all, sizeof(float) * (size_t)(rows * V)) : CLF_SUCCESS;
}

static clf_status step(clf_lm_state *s, int64_t T, const clf_tensor *ids, const int32_t *host_ids,
                       const float *h_in, const int64_t *n_new, float *h_out, clf_tensor *logits,
                       int all_t) {
    const clf_lm *m = s->m;
    clf_context *ctx = m->ctx;
    const int64_t B = s->batch, d = m->cfg.info.hidden_size;
    const int last = m->n_parts - 1;
    clf_context *out_ctx = m->parts[last].ctx;
    int64_t *nn = malloc(sizeof(int64_t) * (size_t)B);
    clf_lm_ws ws;
    clf_tensor *ids_in = NULL, *lg = NULL;
    clf_status st =
        nn ? wait_staged(s) : clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
    if (st == CLF_SUCCESS) st = ws_grow(s, T);
    clf_tensor ids_v; /* host_ids (checked): staged into the first stage's ids */
    if (st == CLF_SUCCESS && host_ids) {
        memcpy(s->host_ids, host_ids, sizeof(int32_t) * (size_t)(B * T));
        ids_v = clf__view(s->st[0].ids, B, T, 0);
        ids_in = &ids_v;
    }
    if (st == CLF_SUCCESS && ids) st = on_context(ctx, ids, &s->ids_here, &ids_in);
    if (st == CLF_SUCCESS && ids && ids_in != ids) { /* ids from another context: the host */
        int32_t *h = malloc(ids->bytes);
        st = h ? clf_tensor_read(ids, h, ids->bytes)
               : clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
        if (st == CLF_SUCCESS) st = clf_tensor_write(ids_in, h, ids->bytes);
        free(h);
    }
    if (st == CLF_SUCCESS && logits) st = on_context(out_ctx, logits, &s->logits_here, &lg);
    if (st != CLF_SUCCESS) goto done;
    /* Query t of sequence b sits at position length(b) + t and sees keys 0 .. length(b) + t;
     * padding rows (t >= n_new[b]) are clamped to the last real one, so they read only cached
     * keys and positions in range. */
    int64_t nk = 1;
    for (int64_t b = 0; b < B; b++) {
        nn[b] = n_new ? n_new[b] : T;
        s->host_offs[b] = (int32_t)s->lengths[b];
        for (int64_t t = 0; t < T; t++) {
            const int64_t tc = t < nn[b] ? t : (nn[b] > 0 ? nn[b] - 1 : -1);
            s->host_lens[b * T + t] = (int32_t)(s->lengths[b] + tc + 1);
            s->host_pos[b * T + t] = (int32_t)(s->lengths[b] + (tc < 0 ? 0 : tc));
        }
        if (s->lengths[b] + nn[b] > nk) nk = s->lengths[b] + nn[b];
    }
    const clf_lm_arch *arch = m->cfg.arch;
    for (int p = 0; p <= last; p++) {
        clf_context *pc = m->parts[p].ctx;
        ws_views(s, p, T, &ws);
        ws.nk = nk;
        ws.ids_in_range = p == 0 && host_ids != NULL;
        /* Writes not waited for: the stage's first kernels queue behind them (a blocking write
         * each was a round trip to the device per step). */
        CLF_CHECK(stage_staging(s, p, &ws));
        if (p == 0 && ids_in) {
            st = arch->embed(pc, m, ids_in, &ws);
        } else if (p == 0) { /* the stream from the stage before */
            st = clf_tensor_write(&ws.h, h_in, ws.h.bytes);
            ws.pending = 0;
        }
        for (int64_t i = m->parts[p].first; i < m->parts[p].end && st == CLF_SUCCESS; i++)
            st = arch->block(pc, m, &m->layers[i], s->kv[i], s->lengths, nn, &ws);
        if (st == CLF_SUCCESS && p < last) st = carry_over(s, p, &ws);
        if (st != CLF_SUCCESS) {
            clf__lm_relay_error(m, pc, st);
            goto fail;
        }
    }
    if (!m->heads) { /* a stage model without the head: its stream out */
        if (ws.pending) st = clf_add(out_ctx, &ws.h, &ws.o, &ws.h);
        if (st == CLF_SUCCESS) st = clf_tensor_read(&ws.h, h_out, ws.h.bytes);
    } else if (all_t) { /* the last stage: final norm and head */
        st = arch->norm(out_ctx, m, &m->final, &ws, &ws.h, &ws.x);
        if (st == CLF_SUCCESS) st = head(s, out_ctx, &ws.x, lg);
    } else {
        /* Only each sequence's last new row goes through the final norm and the head. */
        if (ws.pending) { /* h += o over all rows (the norm would fuse it) */
            st = clf_add(out_ctx, &ws.h, &ws.o, &ws.h);
            ws.pending = 0;
        }
        const stage_ws *w = &s->st[last];
        /* one position a sequence (decoding): the stream's rows are the last ones */
        clf_tensor lastv = T == 1 ? clf__view(&ws.h, B, 1, d) : clf__view(w->last, B, 1, d),
                   lx = clf__view(w->x, B, 1, d);
        for (int64_t b = 0; T > 1 && b < B && st == CLF_SUCCESS; b++) {
            const clf_rows_at src = {&ws.h, (size_t)d, (size_t)T, 0,
                                     (size_t)(nn[b] > 0 ? nn[b] - 1 : 0)};
            const clf_rows_at dst = {&lastv, (size_t)d, 1, 0, 0};
            st = clf__copy_rows(out_ctx, &src, &dst, (size_t)d, 1, (size_t)b, 1);
        }
        clf_tensor l2 = clf__view(&lastv, B, d, 0), lx2 = clf__view(w->x, B, d, 0);
        if (st == CLF_SUCCESS && arch->norm_lin && lg && m->shard.size <= 1 &&
            clf__lin_fuses(out_ctx, &m->head, B)) { /* the final norm in the head's launch */
            st = arch->norm_lin(out_ctx, m, &m->final, &l2, &m->head, lg);
        } else {
            if (st == CLF_SUCCESS) st = arch->norm(out_ctx, m, &m->final, &ws, &lastv, &lx);
            if (st == CLF_SUCCESS) st = head(s, out_ctx, &lx2, lg);
        }
    }
    if (st == CLF_SUCCESS && lg && lg != logits) { /* logits on another context: the host */
        float *h = malloc(lg->bytes);
        st = h ? clf_tensor_read(lg, h, lg->bytes)
               : clf__fail(out_ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
        if (st == CLF_SUCCESS) {
            st = clf_tensor_write(logits, h, lg->bytes);
            if (st != CLF_SUCCESS) clf__lm_relay_error(m, logits->ctx, st);
        }
        free(h);
    }
    if (st != CLF_SUCCESS) {
        clf__lm_relay_error(m, out_ctx, st);
        goto fail;
    }
    for (int64_t b = 0; b < B; b++)
        s->lengths[b] += nn[b];
done:
fail:
    free(nn);
    return st;
}

static void clear_errors(const clf_lm *m) {
    for (int p = 0; p < m->n_parts; p++)
        clf__clear_error(m->parts[p].ctx);
}

clf_status clf_lm_state_step(clf_lm_state *s, const clf_tensor *ids, const int64_t *n_new,
                             clf_tensor *logits) {
    if (!s) return CLF_ERROR_INVALID_ARGUMENT;
    const clf_lm *m = s->m;
    clear_errors(m);
    if (!m->embeds || !m->heads)
        return clf__fail(m->ctx, CLF_ERROR_INVALID_ARGUMENT,
                         "lm step: the model is a stage (layers %lld .. %lld of %lld): step it "
                         "with clf_lm_state_step_stage",
                         (long long)clf__lm_first(m), (long long)clf__lm_end(m) - 1,
                         (long long)m->cfg.info.layers);
    int all_t = 0;
    CLF_TRY(check_step(s, ids, n_new, logits, &all_t));
    return step(s, ids->shape[1], ids, NULL, NULL, n_new, NULL, logits, all_t);
}

clf_status clf_lm_state_step_ids(clf_lm_state *s, const int32_t *ids, int64_t T,
                                 const int64_t *n_new, clf_tensor *logits) {
    if (!s) return CLF_ERROR_INVALID_ARGUMENT;
    const clf_lm *m = s->m;
    clf_context *ctx = m->ctx;
    clear_errors(m);
    if (!m->embeds || !m->heads)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                         "lm step: the model is a stage: step it with clf_lm_state_step_stage");
    if (!ids) return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "lm step: ids is NULL");
    if (T < 1) return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "lm step: T must be >= 1");
    const int64_t B = s->batch, V = m->cfg.info.vocab_size;
    if (T > INT32_MAX / B)
        return clf__fail(ctx, CLF_ERROR_SIZE_LIMIT, "lm step: %lld x %lld ids", (long long)B,
                         (long long)T);
    char a[64];
    snprintf(a, sizeof(a), "(%lld, %lld) on the host", (long long)B, (long long)T);
    int all_t = 0;
    CLF_TRY(check_out(s, T, n_new, logits, &all_t, a));
    for (int64_t i = 0; i < B * T; i++)
        if (ids[i] < 0 || ids[i] >= V)
            return clf__fail(ctx, CLF_ERROR_OUT_OF_RANGE,
                             "lm step: ids[%lld] = %d is outside the vocabulary 0 .. %lld",
                             (long long)i, (int)ids[i], (long long)(V - 1));
    return step(s, T, NULL, ids, NULL, n_new, NULL, logits, all_t);
}

clf_status clf_lm_state_step_stage(clf_lm_state *s, const clf_tensor *ids, const float *hidden_in,
                                   int64_t T, const int64_t *n_new, float *hidden_out,
                                   clf_tensor *logits) {
    if (!s) return CLF_ERROR_INVALID_ARGUMENT;
    const clf_lm *m = s->m;
    clf_context *ctx = m->ctx;
    clear_errors(m);
    int all_t = 0;
    if (m->embeds && m->heads) {
        CLF_TRY(check_step(s, ids, n_new, logits, &all_t));
        if (ids->shape[1] != T)
            return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH,
                             "lm stage step: ids of %lld positions, T %lld",
                             (long long)ids->shape[1], (long long)T);
        return step(s, T, ids, NULL, NULL, n_new, NULL, logits, all_t);
    }
    if (T < 1) return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "lm stage step: T must be >= 1");
    if (m->embeds) {
        CLF_TRY(clf__check_ids(ctx, ids, NULL));
        if (ids->shape[0] != s->batch || ids->shape[1] != T)
            return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH,
                             "lm stage step: ids must be (%lld, %lld)", (long long)s->batch,
                             (long long)T);
    } else if (!hidden_in) {
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                         "lm stage step: hidden_in is NULL (the stage does not embed)");
    }
    if (m->heads) {
        CLF_TRY(clf__check_tensor(ctx, logits, "logits", CLF_F32));
        const int64_t V = m->cfg.info.vocab_size, B = s->batch;
        all_t = logits->ndim == 3;
        if (!((logits->ndim == 3 && logits->shape[0] == B && logits->shape[1] == T &&
               logits->shape[2] == V) ||
              (logits->ndim == 2 && logits->shape[0] == B && logits->shape[1] == V)))
            return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH,
                             "lm stage step: logits must be (%lld, %lld, %lld) or (%lld, %lld)",
                             (long long)B, (long long)T, (long long)V, (long long)B, (long long)V);
    } else if (!hidden_out) {
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                         "lm stage step: hidden_out is NULL (the stage has no head)");
    }
    CLF_TRY(check_counts(s, T, n_new));
    return step(s, T, m->embeds ? ids : NULL, NULL, hidden_in, n_new, hidden_out,
                m->heads ? logits : NULL, all_t);
}
