/*
 * generate.c — text generation over a clf_lm: one batched prefill of every prompt, then one step
 * per token, each sequence stopping at an eos id or its token limit; and the sampler, as Hugging
 * Face's generate applies its processors: repetition penalty, temperature, top-k, top-p, draw.
 *
 * The token is picked on the device (clf_sample: penalty, temperature, top-k, top-p and the draw,
 * at a uniform number from each sequence's own stream of the project's RNG) and only the ids are
 * read back. A device that refuses the vocabulary (llvmpipe's loop limit) gets the same rule on
 * the host, on the step's logits.
 */
#include "lm.h"
#include "../rng.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

clf_sampling_params clf_sampling_default_params(void) {
    clf_sampling_params p;
    memset(&p, 0, sizeof(p));
    p.top_p = 1.0f;
    p.repetition_penalty = 1.0f;
    return p;
}

clf_generate_params clf_generate_default_params(void) {
    clf_generate_params p;
    memset(&p, 0, sizeof(p));
    p.max_new_tokens = 32;
    p.sampling = clf_sampling_default_params();
    return p;
}

typedef struct scored {
    float v;
    int32_t id;
} scored;

static int by_value_desc(const void *a, const void *b) {
    const scored *x = a, *y = b;
    if (x->v != y->v) return x->v > y->v ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* The host's pick, by the rule of kernels/sample.cl (used where the device refuses the
 * vocabulary: llvmpipe's loop limit): penalized scores in float, top-k keeping ties at the k-th,
 * top-p keeping a token while the mass of larger kept ones is < top_p, the draw at u in index
 * order. seen (V) is updated; order: V entries of scratch. */
static int32_t host_pick(const float *logits, int64_t V, unsigned char *seen,
                         const clf_sampling_params *p, double u, scored *order) {
    const int greedy = p->temperature <= 0.0f;
    const float inv_t = greedy ? 1.0f : 1.0f / p->temperature;
    for (int64_t i = 0; i < V; i++) {
        float v = logits[i];
        if (seen[i] && p->repetition_penalty != 1.0f)
            v = v < 0.0f ? v * p->repetition_penalty : v / p->repetition_penalty;
        order[i].v = v * inv_t;
        order[i].id = (int32_t)i;
    }
    qsort(order, (size_t)V, sizeof(scored), by_value_desc);
    const int64_t k = greedy ? 1 : p->top_k > 0 && p->top_k < V ? p->top_k : V;
    const float kth = order[k - 1].v, m = order[0].v;
    int64_t kept = k;
    while (kept < V && order[kept].v == kth) /* ties at the k-th are kept */
        kept++;
    if (!greedy && p->top_p < 1.0f) { /* mass of strictly larger kept scores < top_p */
        double z = 0.0, above = 0.0;
        for (int64_t i = 0; i < kept; i++)
            z += exp((double)order[i].v - m);
        int64_t i = 0;
        while (i < kept) {
            int64_t j = i;
            double tie = 0.0;
            while (j < kept && order[j].v == order[i].v)
                tie += exp((double)order[j++].v - m);
            if (!(above < (double)p->top_p * z)) break;
            above += tie;
            i = j;
        }
        kept = i;
    }
    /* the draw: kept tokens in index order */
    const float cut = order[kept - 1].v;
    double total = 0.0;
    for (int64_t i = 0; i < kept; i++)
        total += exp((double)order[i].v - m);
    const double r = (greedy ? 0.0 : u) * total;
    double acc = 0.0;
    int32_t pick = -1, last = -1;
    for (int64_t i = 0; i < V && pick < 0; i++) {
        float v = logits[i];
        if (seen[i] && p->repetition_penalty != 1.0f)
            v = v < 0.0f ? v * p->repetition_penalty : v / p->repetition_penalty;
        v *= inv_t;
        if (v < cut) continue;
        acc += exp((double)v - m);
        last = (int32_t)i;
        if (r < acc) pick = (int32_t)i;
    }
    if (pick < 0) pick = last;
    seen[pick] = 1;
    return pick;
}

static int is_eos(const clf_lm_info *in, int32_t t) {
    for (int i = 0; i < in->n_eos; i++)
        if (in->eos[i] == t) return 1;
    return 0;
}

clf_status clf_lm_generate(clf_lm *m, const int32_t *const *prompts, const int64_t *prompt_lens,
                           int64_t n, const clf_generate_params *params, int32_t *tokens,
                           int64_t *counts) {
    if (!m) return CLF_ERROR_INVALID_ARGUMENT;
    clf_context *ctx = m->ctx, *out_ctx = m->parts[m->n_parts - 1].ctx;
    clf__clear_error(ctx);
    clf__clear_error(out_ctx);
    if (!prompts || !prompt_lens || !params || !tokens || !counts || n < 1)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                         "generate: prompts, prompt_lens, params, tokens and counts must be given "
                         "and n >= 1");
    const clf_lm_info *in = &m->cfg.info;
    const clf_sampling_params *sp = &params->sampling;
    const int64_t V = in->vocab_size, max_new = params->max_new_tokens;
    int64_t longest = 0;
    for (int64_t b = 0; b < n; b++) {
        if (!prompts[b] || prompt_lens[b] < 1)
            return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT, "generate: prompt %lld is empty",
                             (long long)b);
        for (int64_t t = 0; t < prompt_lens[b]; t++)
            if (prompts[b][t] < 0 || prompts[b][t] >= V)
                return clf__fail(ctx, CLF_ERROR_OUT_OF_RANGE,
                                 "generate: prompt %lld token %lld is %d, outside 0 .. %lld",
                                 (long long)b, (long long)t, (int)prompts[b][t], (long long)V - 1);
        longest = prompt_lens[b] > longest ? prompt_lens[b] : longest;
    }
    if (max_new < 1 || !(sp->temperature >= 0.0f) || sp->top_k < 0 || !(sp->top_p > 0.0f) ||
        sp->top_p > 1.0f || !(sp->repetition_penalty > 0.0f))
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                         "generate: max_new_tokens >= 1, temperature >= 0, top_k >= 0, top_p in "
                         "(0, 1] and repetition_penalty > 0 are required");
    if (longest + max_new > in->max_positions)
        return clf__fail(ctx, CLF_ERROR_SIZE_LIMIT,
                         "generate: %lld prompt tokens + %lld new ones exceed the model's %lld "
                         "positions",
                         (long long)longest, (long long)max_new, (long long)in->max_positions);
    const int greedy = sp->temperature <= 0.0f, penalty = sp->repetition_penalty != 1.0f;
    clf_lm_state *s = NULL;
    clf_tensor *logits = NULL, *am = NULL, *u = NULL, *dseen = NULL;
    int32_t *host_ids = calloc((size_t)(n * longest), sizeof(int32_t));
    int64_t *n_new = malloc(sizeof(int64_t) * (size_t)n);
    int32_t *next = malloc(sizeof(int32_t) * (size_t)n);
    unsigned char *done = calloc((size_t)n, 1);
    unsigned char *seen = calloc((size_t)(n * V), 1); /* (n, V): the host's copy */
    float *draw = malloc(sizeof(float) * (size_t)n);
    clf_rng *rng = malloc(sizeof(clf_rng) * (size_t)n);
    float *host_logits = NULL;
    scored *order = NULL;
    int on_device = 1;
    clf_status st = CLF_SUCCESS;
    if (!host_ids || !n_new || !next || !done || !seen || !draw || !rng) {
        st = clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
        goto fail;
    }
    for (int64_t b = 0; b < n; b++) {
        memcpy(host_ids + b * longest, prompts[b], sizeof(int32_t) * (size_t)prompt_lens[b]);
        n_new[b] = prompt_lens[b];
        counts[b] = 0;
        rng[b] =
            clf_rng_make(sp->seed ^ (0x632be59bd9b4e019ULL * (uint64_t)(b + 1))); /* per sequence */
        for (int64_t t = 0; t < prompt_lens[b]; t++)
            seen[b * V + prompts[b][t]] = 1;
    }
    for (int64_t i = 0; i < n * max_new; i++)
        tokens[i] = -1;
    const int64_t lg_shape[2] = {n, V};
    CLF_CHECK(clf_lm_state_create(m, n, longest + max_new, &s));
    /* The logits and the sampler on the last stage's context (a split model's head). */
    st = clf_tensor_create(out_ctx, CLF_F32, 2, lg_shape, &logits);
    if (st == CLF_SUCCESS) st = clf_tensor_create(out_ctx, CLF_I32, 1, &n, &am);
    if (st == CLF_SUCCESS) st = clf_tensor_create(out_ctx, CLF_F32, 1, &n, &u);
    if (st == CLF_SUCCESS) st = clf_tensor_fill(u, 0.0);
    if (st != CLF_SUCCESS) {
        clf__lm_relay_error(m, out_ctx, st);
        goto fail;
    }
    if (penalty) { /* the tokens each sequence has seen, on the device; the sampler marks more */
        int32_t *h = malloc(sizeof(int32_t) * (size_t)(n * V));
        if (!h) {
            st = clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
            goto fail;
        }
        for (int64_t i = 0; i < n * V; i++)
            h[i] = seen[i];
        st = clf_tensor_create(out_ctx, CLF_I32, 2, lg_shape, &dseen);
        if (st == CLF_SUCCESS) st = clf_tensor_write(dseen, h, sizeof(int32_t) * (size_t)(n * V));
        free(h);
        if (st != CLF_SUCCESS) {
            clf__lm_relay_error(m, out_ctx, st);
            goto fail;
        }
    }
    /* ids from the host: no read-back of them to check (sampled ids are in range) */
    CLF_CHECK(clf_lm_state_step_ids(s, host_ids, longest, n_new, logits)); /* the prefill */
    for (int64_t step = 0;; step++) {
        if (!greedy) /* one uniform number per live sequence from its own stream */
            for (int64_t b = 0; b < n; b++)
                draw[b] = done[b] ? 0.0f : (float)clf_rng_uniform(&rng[b], 0.0, 1.0);
        if (on_device) {
            st = greedy ? CLF_SUCCESS : clf_tensor_write(u, draw, sizeof(float) * (size_t)n);
            if (st == CLF_SUCCESS) st = clf_sample(out_ctx, logits, sp, u, dseen, am);
            if (st == CLF_ERROR_UNSUPPORTED && step == 0) { /* the device's loop limit */
                on_device = 0;
                clf__clear_error(out_ctx);
                host_logits = malloc(sizeof(float) * (size_t)(n * V));
                order = malloc(sizeof(scored) * (size_t)V);
                if (!host_logits || !order) {
                    st = clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
                    goto fail;
                }
            } else if (st == CLF_SUCCESS) {
                st = clf_tensor_read(am, next, sizeof(int32_t) * (size_t)n);
            }
            if (st != CLF_SUCCESS && on_device) {
                clf__lm_relay_error(m, out_ctx, st);
                goto fail;
            }
        }
        if (!on_device) {
            st = clf_tensor_read(logits, host_logits, sizeof(float) * (size_t)(n * V));
            if (st != CLF_SUCCESS) {
                clf__lm_relay_error(m, out_ctx, st);
                goto fail;
            }
            for (int64_t b = 0; b < n; b++)
                next[b] = done[b] ? 0
                                  : host_pick(host_logits + b * V, V, seen + b * V, sp,
                                              (double)draw[b], order);
        }
        int active = 0;
        for (int64_t b = 0; b < n; b++) {
            n_new[b] = 0;
            if (done[b]) {
                next[b] = 0;
                continue;
            }
            const int32_t t = next[b];
            if (!params->ignore_eos && is_eos(in, t)) {
                done[b] = 1;
                next[b] = 0;
                continue;
            }
            tokens[b * max_new + counts[b]++] = t;
            seen[b * V + t] = 1;
            if ((params->on_token && params->on_token(params->user, b, t)) ||
                counts[b] == max_new) {
                done[b] = 1;
                continue;
            }
            n_new[b] = 1;
            active = 1;
        }
        if (!active) break;
        CLF_CHECK(clf_lm_state_step_ids(s, next, 1, n_new, logits));
    }
fail:
    clf_lm_state_free(s);
    clf_tensor *ts[] = {logits, am, u, dseen};
    for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++)
        clf_tensor_free(ts[i]);
    free(host_ids);
    free(n_new);
    free(next);
    free(done);
    free(seen);
    free(draw);
    free(host_logits);
    free(order);
    free(rng);
    return st;
}
