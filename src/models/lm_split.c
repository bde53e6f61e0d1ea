/*
 * lm_split.c — a causal language model split by layers over several contexts (a pipeline): the
 * plan (each stage's share of the layers, checked against its device's memory before any weight
 * moves), the stages as the API lists them, and errors of one stage carried to the first
 * context, where the caller reads them.
 */
#include "lm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

clf_status clf__lm_relay_error(const clf_lm *m, clf_context *ctx, clf_status st) {
    int p = 0;
    while (p < m->n_parts - 1 && m->parts[p].ctx != ctx)
        p++;
    return clf__relay_error(m->ctx, ctx, p, st);
}

double clf__matrix_bytes(clf_dtype dtype, int64_t rows, int64_t cols) {
    const clf_dtype_traits *t = clf__dtype(dtype);
    if (!t) return 4.0 * (double)rows * (double)cols;
    return (double)rows * (double)((cols + t->block - 1) / t->block) * t->block_bytes;
}

clf_status clf__split_layers(clf_context *const *ctxs, int n, const double *split, int64_t layers,
                             int64_t *count) {
    clf_context *ctx = ctxs[0];
    if (n > layers)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                         "split: %d stages for a model of %lld layers (at most one stage per "
                         "layer)",
                         n, (long long)layers);
    double total = 0;
    for (int i = 0; i < n; i++) {
        const double w = split ? split[i] : (double)ctxs[i]->info.global_mem_bytes;
        if (!(w > 0) || !isfinite(w))
            return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                             "split: stage %d's share %g must be a positive number", i, w);
        total += w;
    }
    /* Whole layers by largest remainder, then at least one per stage (taken from the largest). */
    int64_t given = 0;
    for (int i = 0; i < n; i++) {
        const double w = split ? split[i] : (double)ctxs[i]->info.global_mem_bytes;
        count[i] = (int64_t)floor((double)layers * w / total);
        given += count[i];
    }
    while (given < layers) {
        int best = 0;
        double rem = -1;
        for (int i = 0; i < n; i++) {
            const double w = split ? split[i] : (double)ctxs[i]->info.global_mem_bytes;
            const double r = (double)layers * w / total - (double)count[i];
            if (r > rem + 1e-12) rem = r, best = i;
        }
        count[best]++;
        given++;
    }
    for (int i = 0; i < n; i++)
        while (count[i] < 1) {
            int big = 0;
            for (int j = 1; j < n; j++)
                if (count[j] > count[big]) big = j;
            count[big]--;
            count[i]++;
        }
    return CLF_SUCCESS;
}

/* What each layer and the first and last stages' own tensors take on the device: from the file's
 * tensors (GGUF: stored types kept), else from the sizes and the load's weight type. */
static void estimate(const clf_lm *m, const clf_gguf *g, clf_dtype wt, double *layer, double *first,
                     double *last) {
    const clf_lm_info *in = &m->cfg.info;
    const int64_t L = in->layers, d = in->hidden_size, V = in->vocab_size,
                  q = in->heads * in->head_dim, kv = in->kv_heads * in->head_dim, F = in->ffn_size;
    double embd = 4.0 * (double)V * (double)d, head = clf__matrix_bytes(wt, V, d);
    *first = *last = 0;
    for (int64_t i = 0; i < L; i++)
        layer[i] = 0;
    if (g) {
        head = 0;
        for (size_t i = 0; i < clf_gguf_tensor_count(g); i++) {
            const clf_gguf_tensor *t = clf_gguf_tensor_at(g, i);
            /* 1-D tensors (norms, biases) come as F32 */
            double b = t->ndim == 1 ? 4.0 * (double)t->ne[0] : (double)t->bytes;
            int blk = -1, at = 0;
            if (sscanf(t->name, "blk.%d.%n", &blk, &at) == 1 && at > 0 && blk >= 0 && blk < L)
                layer[blk] += b;
            else if (strcmp(t->name, "token_embd.weight") == 0) {
                embd = b;
                if (m->cfg.tied) head = b;
            } else if (strncmp(t->name, "position_embd", 13) == 0)
                *first += b;
            else if (strcmp(t->name, "output.weight") == 0)
                head = b;
            else
                *last += b;
        }
    } else {
        const double per = clf__matrix_bytes(wt, q + 2 * kv, d) + clf__matrix_bytes(wt, d, q) +
                           (double)m->cfg.arch->ffn_matrices * clf__matrix_bytes(wt, F, d) +
                           4.0 * (double)(2 * d + q + 2 * kv + F + d);
        for (int64_t i = 0; i < L; i++)
            layer[i] = per;
        *last += 4.0 * (double)d;
        if (in->max_positions > 0 && strstr(in->arch, "GPT2"))
            *first += 4.0 * (double)in->max_positions * (double)d;
    }
    *first += embd;
    *last += head; /* a tied head too: the last stage loads the table again */
}

clf_status clf__lm_plan_split(clf_lm *m, clf_context *const *ctxs, int n, const double *split,
                              const clf_gguf *g, clf_dtype weight_dtype) {
    clf_context *ctx = m->ctx;
    const int64_t L = m->cfg.info.layers;
    double *layer = malloc(sizeof(double) * (size_t)L);
    int64_t *count = calloc((size_t)n, sizeof(int64_t));
    m->parts = calloc((size_t)n, sizeof(clf_lm_part));
    clf_status st = CLF_SUCCESS;
    if (!layer || !count || !m->parts) {
        st = clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
        goto done;
    }
    CLF_CHECK(clf__split_layers(ctxs, n, split, L, count));
    double first = 0, last = 0;
    estimate(m, g, weight_dtype, layer, &first, &last);
    int64_t at = 0;
    for (int i = 0; i < n; i++) {
        m->parts[i] = (clf_lm_part){ctxs[i], at, at + count[i], NULL};
        double bytes = (i == 0 ? first : 0) + (i == n - 1 ? last : 0);
        for (int64_t j = at; j < at + count[i]; j++)
            bytes += layer[j];
        at += count[i];
        const double have = (double)ctxs[i]->info.global_mem_bytes;
        if (bytes > have) {
            st = clf__fail(ctx, CLF_ERROR_SIZE_LIMIT,
                           "split: stage %d on '%s' needs %.1f MiB for layers %lld .. %lld%s "
                           "and the device has %.1f MiB of global memory",
                           i, ctxs[i]->info.name, bytes / 1048576.0, (long long)m->parts[i].first,
                           (long long)m->parts[i].end - 1,
                           i == 0       ? " and the embedding"
                           : i == n - 1 ? " and the head"
                                        : "",
                           have / 1048576.0);
            goto fail;
        }
    }
    m->n_parts = n;
    m->embeds = m->heads = 1;
done:
fail:
    free(layer);
    free(count);
    if (st != CLF_SUCCESS) {
        free(m->parts);
        m->parts = NULL;
    }
    return st;
}

clf_status clf_lm_stages(const clf_lm *m, clf_stage *out, int64_t cap, int64_t *count) {
    if (!m || !count || cap < 0 || (cap > 0 && !out)) return CLF_ERROR_INVALID_ARGUMENT;
    for (int p = 0; p < m->n_parts && p < cap; p++) {
        const clf_lm_part *pt = &m->parts[p];
        clf_stage *s = &out[p];
        s->context = pt->ctx;
        s->first_layer = pt->first;
        s->layers = pt->end - pt->first;
        s->embedding = p == 0 && m->embeds;
        s->head = p == m->n_parts - 1 && m->heads;
        int64_t b = clf__tensor_bytes0(pt->freq);
        for (int64_t i = pt->first; i < pt->end; i++) {
            const clf_lm_layer *l = &m->layers[i];
            b += clf__tensor_bytes0(l->n1.g) + clf__tensor_bytes0(l->n1.b) +
                 clf__tensor_bytes0(l->n2.g) + clf__tensor_bytes0(l->n2.b);
            b += clf__lin_bytes(&l->qkv) + clf__lin_bytes(&l->o) + clf__lin_bytes(&l->up) +
                 clf__lin_bytes(&l->down);
        }
        if (s->embedding) b += clf__tensor_bytes0(m->tok) + clf__tensor_bytes0(m->pos);
        if (s->head)
            b += clf__tensor_bytes0(m->final.g) + clf__tensor_bytes0(m->final.b) +
                 (m->head_shared ? 0 : clf__lin_bytes(&m->head));
        s->weight_bytes = b;
    }
    *count = m->n_parts;
    return CLF_SUCCESS;
}
