/*
 * generate.c — text generation over a clf_lm: one batched prefill of every prompt, then one step
 * per token, each sequence stopping at an eos id or its token limit; and the sampler, as Hugging
 * Face's generate applies its processors: repetition penalty, temperature, top-k, top-p, draw.
 *
 * Greedy decoding without a repetition penalty takes the argmax on the device and reads back one
 * id per sequence. The other modes read each step's (B, V) logits to the host and sample there
 * (a sort of the vocabulary per token: not yet on the device).
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
    return x->id < y->id ? -1 : x->id > y->id; /* ties: the lower id first (stable) */
}

/* Picks the next token from logits (V) (modified in place); seen (V): tokens of the sequence so
 * far (for the repetition penalty); order: V entries of scratch. */
static int32_t sample_one(float *logits, int64_t V, const unsigned char *seen,
                          const clf_sampling_params *p, clf_rng *rng, scored *order) {
    if (p->repetition_penalty != 1.0f)
        for (int64_t i = 0; i < V; i++)
            if (seen[i])
                logits[i] = logits[i] < 0 ? logits[i] * p->repetition_penalty
                                          : logits[i] / p->repetition_penalty;
    if (p->temperature <= 0.0f) { /* greedy: the first maximum */
        int64_t best = 0;
        for (int64_t i = 1; i < V; i++)
            if (logits[i] > logits[best]) best = i;
        return (int32_t)best;
    }
    for (int64_t i = 0; i < V; i++) {
        order[i].v = logits[i] / p->temperature;
        order[i].id = (int32_t)i;
    }
    qsort(order, (size_t)V, sizeof(scored), by_value_desc);
    int64_t keep = p->top_k > 0 && p->top_k < V ? p->top_k : V;
    /* Probabilities of the kept tokens (softmax from the largest, in double). */
    double sum = 0.0;
    for (int64_t i = 0; i < keep; i++)
        sum += exp((double)order[i].v - (double)order[0].v);
    if (p->top_p < 1.0f) { /* keep while the mass before a token is < top_p (at least one) */
        double before = 0.0;
        int64_t i = 0;
        for (; i < keep; i++) {
            if (i > 0 && before >= (double)p->top_p) break;
            before += exp((double)order[i].v - (double)order[0].v) / sum;
        }
        keep = i;
        sum = 0.0;
        for (i = 0; i < keep; i++)
            sum += exp((double)order[i].v - (double)order[0].v);
    }
    const double u = clf_rng_uniform(rng, 0.0, sum);
    double acc = 0.0;
    for (int64_t i = 0; i < keep; i++) {
        acc += exp((double)order[i].v - (double)order[0].v);
        if (u < acc) return order[i].id;
    }
    return order[keep - 1].id;
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
    clf_context *ctx = m->ctx;
    clf__clear_error(ctx);
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
    const int host_sampling = sp->temperature > 0.0f || sp->repetition_penalty != 1.0f;
    clf_lm_state *s = NULL;
    clf_tensor *ids = NULL, *ids1 = NULL, *logits = NULL, *am = NULL;
    int32_t *host_ids = calloc((size_t)(n * longest), sizeof(int32_t));
    int64_t *n_new = malloc(sizeof(int64_t) * (size_t)n);
    int32_t *next = malloc(sizeof(int32_t) * (size_t)n);
    unsigned char *done = calloc((size_t)n, 1);
    unsigned char *seen = host_sampling ? calloc((size_t)(n * V), 1) : NULL;
    float *host_logits = host_sampling ? malloc(sizeof(float) * (size_t)(n * V)) : NULL;
    scored *order = host_sampling ? malloc(sizeof(scored) * (size_t)V) : NULL;
    clf_rng *rng = malloc(sizeof(clf_rng) * (size_t)n);
    clf_status st = CLF_SUCCESS;
    if (!host_ids || !n_new || !next || !done || !rng ||
        (host_sampling && (!seen || !host_logits || !order))) {
        st = clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
        goto fail;
    }
    for (int64_t b = 0; b < n; b++) {
        memcpy(host_ids + b * longest, prompts[b], sizeof(int32_t) * (size_t)prompt_lens[b]);
        n_new[b] = prompt_lens[b];
        counts[b] = 0;
        rng[b] =
            clf_rng_make(sp->seed ^ (0x632be59bd9b4e019ULL * (uint64_t)(b + 1))); /* per sequence */
        for (int64_t t = 0; seen && t < prompt_lens[b]; t++)
            seen[b * V + prompts[b][t]] = 1;
    }
    for (int64_t i = 0; i < n * max_new; i++)
        tokens[i] = -1;
    const int64_t ids_shape[2] = {n, longest}, one_shape[2] = {n, 1}, lg_shape[2] = {n, V};
    CLF_CHECK(clf_lm_state_create(m, n, longest + max_new, &s));
    CLF_CHECK(clf_tensor_create(ctx, CLF_I32, 2, ids_shape, &ids));
    CLF_CHECK(clf_tensor_create(ctx, CLF_I32, 2, one_shape, &ids1));
    CLF_CHECK(clf_tensor_create(ctx, CLF_F32, 2, lg_shape, &logits));
    CLF_CHECK(clf_tensor_create(ctx, CLF_I32, 1, &n, &am));
    CLF_CHECK(clf_tensor_write(ids, host_ids, sizeof(int32_t) * (size_t)(n * longest)));
    CLF_CHECK(clf_lm_state_step(s, ids, n_new, logits)); /* the prefill */
    for (int64_t step = 0;; step++) {
        if (host_sampling) {
            CLF_CHECK(clf_tensor_read(logits, host_logits, sizeof(float) * (size_t)(n * V)));
            for (int64_t b = 0; b < n; b++)
                next[b] =
                    done[b] ? 0
                            : sample_one(host_logits + b * V, V, seen + b * V, sp, &rng[b], order);
        } else {
            CLF_CHECK(clf_argmax(ctx, logits, am));
            CLF_CHECK(clf_tensor_read(am, next, sizeof(int32_t) * (size_t)n));
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
            if (seen) seen[b * V + t] = 1;
            if ((params->on_token && params->on_token(params->user, b, t)) ||
                counts[b] == max_new) {
                done[b] = 1;
                continue;
            }
            n_new[b] = 1;
            active = 1;
        }
        if (!active) break;
        CLF_CHECK(clf_tensor_write(ids1, next, sizeof(int32_t) * (size_t)n));
        CLF_CHECK(clf_lm_state_step(s, ids1, n_new, logits));
    }
fail:
    clf_lm_state_free(s);
    clf_tensor *ts[] = {ids, ids1, logits, am};
    for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++)
        clf_tensor_free(ts[i]);
    free(host_ids);
    free(n_new);
    free(next);
    free(done);
    free(seen);
    free(host_logits);
    free(order);
    free(rng);
    return st;
}
