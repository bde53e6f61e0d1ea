/*
 * pipeline_mpi.c — see pipeline_mpi.h. Rank r holds pipeline stage r: a contiguous range of the
 * layers (clf_lm_load_stage reads only those from the file), rank 0 the embedding, the last rank
 * the final norm, the head and the sampler. The batch is cut into micro-batches, each with its own
 * state on every rank, so that while rank r works on micro-batch k rank r + 1 works on k - 1; the
 * prompts go through in chunks of positions (a later chunk needs only the earlier ones' KV cache,
 * which each rank keeps), so the prefill fills the pipeline too.
 *
 * Messages (MPI_BYTE, point-to-point, in order between each pair of ranks):
 *   job   rank 0 -> every rank: int64 batch, prompt length n, then n int32 ids
 *   fwd   rank r -> r + 1: int64 micro-batch, T, stop, sample, n_new[Bk], then (Bk, T, d)
 *         floats (sample 0: a prompt chunk before the last, nothing to sample after it)
 *   tok   last -> rank 0: int64 micro-batch, then Bk int32 sampled ids
 *   info  rank r -> 0 after loading: int64 first layer, layers, weight bytes, then the device name
 *   count rank r -> 0 at the end: int64 messages and bytes it sent forward
 * Every wait is bounded (gen_job.timeout; the messaging is mpi_net.c): past it the rank prints
 * which rank it waited for and aborts the job. Sampling draws from each sequence's own stream as
 * clf_lm_generate does, so the tokens equal the one-process run's.
 *
 * Test hook: CLF_MPI_DIE_AT="RANK:STEP" makes rank RANK kill itself (SIGKILL) before its STEP-th
 * stage step, as a crashed rank would; "RANK:STEP:hang" makes it stop answering instead (a hung
 * device or link), which the other ranks' bounded waits must catch.
 */
#include "pipeline_mpi.h"
#include "mpi_net.h"
#include "tensor_mpi.h"
#include "../common/devices.h"
#include "../../src/rng.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* This rank's context: --devices' spec r (mod their count), --device, else on a node with
 * several GPUs the one of its local rank, else the default. */
static clf_context *open_context(const net *c, const gen_job *job) {
    char spec[256] = "";
    const char *use = job->device;
    if (job->devices) {
        int n = 1;
        for (const char *p = job->devices; *p; p++)
            n += *p == ',';
        const char *p = job->devices;
        for (int i = 0; i < c->rank % n; i++)
            p = strchr(p, ',') + 1;
        const char *e = strchr(p, ',');
        const size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == 0 || len >= sizeof(spec)) mpi_die(c, "bad --devices list '%s'", job->devices);
        memcpy(spec, p, len);
        use = spec;
    } else if (!use && !getenv("CLF_DEVICE")) {
        MPI_Comm node;
        int local = 0;
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, c->rank, MPI_INFO_NULL, &node);
        MPI_Comm_rank(node, &local);
        MPI_Comm_free(&node);
        clf_device_info all[64];
        uint32_t n = 0, gpus = 0;
        if (clf_device_list(all, 64, &n) == CLF_SUCCESS) {
            int idx[64];
            for (uint32_t i = 0; i < n && i < 64; i++)
                if (all[i].type == CLF_DEVICE_GPU) idx[gpus++] = (int)i;
            if (gpus > 1) {
                snprintf(spec, sizeof(spec), "%d", idx[local % (int)gpus]);
                use = spec;
            }
        }
    }
    clf_context_params p = clf_context_default_params();
    clf_error msg = {""};
    p.device_spec = use;
    p.error = &msg;
    clf_context *ctx = NULL;
    if (clf_context_create(&ctx, &p) != CLF_SUCCESS) mpi_die(c, "%s", msg.message);
    if (cli_apply_sets(ctx, job->sets, job->nsets, "clformer-generate") != 0)
        mpi_die(c, "a --set the device refuses");
    return ctx;
}

/* first[r] .. first[r + 1] - 1: rank r's layers, by --split's shares, whole layers by largest
 * remainder, at least one each. Without --split the work is balanced: the last rank's head
 * (V x d weights, read for every token) counts as V d / (a layer's weights) layers there. */
static void plan(const net *c, const gen_job *job, const clf_lm_info *in, int64_t *first) {
    const int n = c->world;
    const int64_t layers = in->layers;
    if (n > layers)
        mpi_die(c, "%d ranks for a model of %lld layers (one stage per rank)", n,
                (long long)layers);
    double w[256], total = 0;
    if (n > 256) mpi_die(c, "at most 256 ranks");
    const char *s = job->split;
    for (int i = 0; i < n; i++) {
        char *end = NULL;
        w[i] = s ? strtod(s, &end) : 1.0;
        if (s && (end == s || !(w[i] > 0) || (*end && *end != ',') || (!*end && i < n - 1) ||
                  (*end == ',' && i == n - 1)))
            mpi_die(c, "--split '%s' must give %d positive shares, one per rank", job->split, n);
        if (s) s = *end ? end + 1 : end;
        total += w[i];
    }
    if (!job->split) { /* balanced: the head's weight in layers comes off the last share */
        const double d = (double)in->hidden_size, q = (double)(in->heads * in->head_dim),
                     kv = (double)(in->kv_heads * in->head_dim), F = (double)in->ffn_size;
        const double gated = strstr(in->arch, "GPT2") ? 2 : 3,
                     layer = d * (q + 2 * kv) + q * d + gated * F * d,
                     head = (double)in->vocab_size * d / layer, per = ((double)layers + head) / n;
        total = 0;
        for (int i = 0; i < n; i++) {
            w[i] = i < n - 1 ? per : (per - head > 0.5 ? per - head : 0.5);
            total += w[i];
        }
    }
    int64_t count[256], given = 0;
    for (int i = 0; i < n; i++)
        given += count[i] = (int64_t)((double)layers * w[i] / total);
    while (given < layers) {
        int best = 0;
        double rem = -1;
        for (int i = 0; i < n; i++) {
            const double r = (double)layers * w[i] / total - (double)count[i];
            if (r > rem + 1e-12) rem = r, best = i;
        }
        count[best]++, given++;
    }
    for (int i = 0; i < n; i++)
        while (count[i] < 1) {
            int big = 0;
            for (int j = 1; j < n; j++)
                if (count[j] > count[big]) big = j;
            count[big]--, count[i]++;
        }
    first[0] = 0;
    for (int i = 0; i < n; i++)
        first[i + 1] = first[i] + count[i];
}

typedef struct micro {
    int64_t off, size; /* its sequences: off .. off + size - 1 of the batch */
    clf_lm_state *s;
    clf_tensor *ids1;                   /* rank 0: (size, 1) next ids */
    clf_tensor *logits, *am, *u, *seen; /* last rank: (size, V), (size), (size), (size, V) */
    int live;
} micro;

static int is_eos(const clf_lm_info *in, int32_t t) {
    for (int i = 0; i < in->n_eos; i++)
        if (in->eos[i] == t) return 1;
    return 0;
}

int mpi_take_token(const gen_job *job, const clf_lm_info *in, int64_t b, int32_t t,
                   unsigned char *done, int32_t *tokens, int64_t *counts, int timed) {
    const int64_t max_new = job->gp.max_new_tokens;
    if (done[b]) return 0;
    if (!job->gp.ignore_eos && is_eos(in, t)) {
        done[b] = 1;
        return 0;
    }
    tokens[b * max_new + counts[b]++] = t;
    if ((timed && job->gp.on_token && job->gp.on_token(job->gp.user, b, t)) ||
        counts[b] == max_new) {
        done[b] = 1;
        return 1;
    }
    return 2;
}

/* One generation of the job through the pipeline (this rank's part): micro-batches, each with a
 * state on every rank; rank 0 fills tokens and counts; timed: the run whose figures --stats
 * prints and whose tokens stream (a warm-up run's do not). */
static void pipeline(net *c, const gen_job *job, clf_context *ctx, clf_lm *m, const clf_lm_info *in,
                     const int32_t *prompt, int64_t n, int64_t B, int32_t *tokens, int64_t *counts,
                     char **buf, size_t *cap, int timed) {
    const int last = c->world - 1;
    const int64_t d = in->hidden_size, V = in->vocab_size, max_new = job->gp.max_new_tokens;
    c->msgs = c->bytes = 0;
    /* micro-batches, each with a state on every rank */
    int64_t M = job->micro > 0 ? job->micro : c->world;
    if (M > B) M = B;
    micro *mb = calloc((size_t)M, sizeof(micro));
    float *h_in = malloc(sizeof(float) * (size_t)((B / M + 1) * n * d));
    float *h_out = malloc(sizeof(float) * (size_t)((B / M + 1) * n * d));
    char *out = malloc(8 * (size_t)(4 + B) + sizeof(float) * (size_t)((B / M + 1) * n * d));
    clf_rng *rng = malloc(sizeof(clf_rng) * (size_t)B);
    if (!mb || !h_in || !h_out || !out || !rng) mpi_die(c, "out of host memory");
    const clf_sampling_params *sp = &job->gp.sampling;
    const int greedy = sp->temperature <= 0.0f, penalty = sp->repetition_penalty != 1.0f;
    for (int64_t b = 0; b < B; b++) /* as clf_lm_generate seeds each sequence */
        rng[b] = clf_rng_make(sp->seed ^ (0x632be59bd9b4e019ULL * (uint64_t)(b + 1)));
    for (int64_t k = 0, off = 0; k < M; k++) {
        micro *u = &mb[k];
        u->off = off;
        u->size = B / M + (k < B % M);
        off += u->size;
        u->live = 1;
        mpi_check(c, ctx, clf_lm_state_create(m, u->size, n + max_new, &u->s), "a state");
        if (c->rank == 0) {
            const int64_t s1[2] = {u->size, 1};
            mpi_check(c, ctx, clf_tensor_create(ctx, CLF_I32, 2, s1, &u->ids1), "ids");
        }
        if (c->rank == last) {
            const int64_t ls[2] = {u->size, V};
            mpi_check(c, ctx, clf_tensor_create(ctx, CLF_F32, 2, ls, &u->logits), "logits");
            mpi_check(c, ctx, clf_tensor_create(ctx, CLF_I32, 1, &u->size, &u->am), "ids");
            mpi_check(c, ctx, clf_tensor_create(ctx, CLF_F32, 1, &u->size, &u->u), "draws");
            mpi_check(c, ctx, clf_tensor_fill(u->u, 0.0), "draws");
            if (penalty) { /* the prompt's tokens, seen by every sequence */
                int32_t *h = calloc((size_t)(u->size * V), 4);
                if (!h) mpi_die(c, "out of host memory");
                for (int64_t i = 0; i < u->size; i++)
                    for (int64_t t = 0; t < n; t++)
                        h[i * V + prompt[t]] = 1;
                mpi_check(c, ctx, clf_tensor_create(ctx, CLF_I32, 2, ls, &u->seen), "seen");
                mpi_check(c, ctx, clf_tensor_write(u->seen, h, 4 * (size_t)(u->size * V)), "seen");
                free(h);
            }
        }
    }

    /* the pipeline */
    const double t0 = mpi_now();
    double t_first = 0;
    int64_t produced = 0, first_tokens = 0;
    int64_t live = M;
    if (c->rank == 0) {
        unsigned char *done = calloc((size_t)B, 1);
        int32_t *next = malloc(4 * (size_t)B);
        int64_t *nn = malloc(8 * (size_t)B);
        if (!done || !next || !nn) mpi_die(c, "out of host memory");
        for (int64_t b = 0; b < B * max_new; b++)
            tokens[b] = -1;
        for (int64_t b = 0; b < B; b++)
            counts[b] = 0;
        /* the prefills: chunk after chunk of positions, each through every micro-batch */
        int64_t chunk = job->chunk;
        if (chunk <= 0) { /* about 4 units of work per rank in flight, chunks of >= 8 */
            const int64_t per = (4 * c->world + M - 1) / M;
            chunk = (n + per - 1) / per;
            if (chunk < 8) chunk = 8;
        }
        int32_t *h = malloc(4 * (size_t)((B / M + 1) * chunk));
        if (!h) mpi_die(c, "out of host memory");
        for (int64_t at = 0; at < n; at += chunk) {
            const int64_t T = n - at < chunk ? n - at : chunk;
            for (int64_t k = 0; k < M; k++) {
                micro *u = &mb[k];
                const int64_t shape[2] = {u->size, T};
                clf_tensor *x = NULL;
                for (int64_t i = 0; i < u->size; i++)
                    memcpy(h + i * T, prompt + at, 4 * (size_t)T);
                mpi_check(c, ctx, clf_tensor_create(ctx, CLF_I32, 2, shape, &x), "ids");
                mpi_check(c, ctx, clf_tensor_write(x, h, 4 * (size_t)(u->size * T)), "ids");
                mpi_maybe_die(c);
                mpi_check(c, ctx, clf_lm_state_step_stage(u->s, x, NULL, T, NULL, h_out, NULL),
                          "prefill");
                clf_tensor_free(x);
                const int64_t hd[4] = {k, T, 0, at + T == n};
                memcpy(out, hd, HDR);
                for (int64_t i = 0; i < u->size; i++)
                    memcpy(out + HDR + 8 * i, &T, 8);
                memcpy(out + HDR + 8 * u->size, h_out, sizeof(float) * (size_t)(u->size * T * d));
                mpi_post(c, 1, out,
                         HDR + 8 * (size_t)u->size + sizeof(float) * (size_t)(u->size * T * d));
            }
        }
        free(h);
        while (live > 0) {
            mpi_recv(c, last, TAG_TOK, buf, cap);
            int64_t k;
            memcpy(&k, *buf, 8);
            if (k < 0 || k >= M || !mb[k].live)
                mpi_die(c, "a token message for micro-batch %lld", (long long)k);
            micro *u = &mb[k];
            if (++first_tokens == M) t_first = mpi_now(); /* every micro-batch's prefill is done */
            int any = 0;
            for (int64_t i = 0; i < u->size; i++) {
                const int64_t b = u->off + i;
                int32_t t;
                memcpy(&t, *buf + 8 + 4 * i, 4);
                const int took = mpi_take_token(job, in, b, t, done, tokens, counts, timed);
                produced += took > 0;
                nn[i] = took == 2;
                next[i] = took == 2 ? t : 0;
                any |= took == 2;
            }
            if (!any) { /* every sequence of the micro-batch is done: stop it along the line */
                const int64_t hd[4] = {k, 0, 1, 0};
                mpi_post(c, 1, hd, HDR);
                u->live = 0;
                live--;
                continue;
            }
            mpi_maybe_die(c);
            mpi_check(c, ctx, clf_tensor_write(u->ids1, next, 4 * (size_t)u->size), "ids");
            mpi_check(c, ctx, clf_lm_state_step_stage(u->s, u->ids1, NULL, 1, nn, h_out, NULL),
                      "step");
            const int64_t hd[4] = {k, 1, 0, 1};
            memcpy(out, hd, HDR);
            memcpy(out + HDR, nn, 8 * (size_t)u->size);
            memcpy(out + HDR + 8 * u->size, h_out, sizeof(float) * (size_t)(u->size * d));
            mpi_post(c, 1, out, HDR + 8 * (size_t)u->size + sizeof(float) * (size_t)(u->size * d));
        }
        free(done);
        free(next);
        free(nn);
    } else {
        int32_t *picks = malloc(4 * (size_t)(B / M + 1));
        float *draw = malloc(sizeof(float) * (size_t)(B / M + 1));
        if (!picks || !draw) mpi_die(c, "out of host memory");
        while (live > 0) {
            const size_t len = mpi_recv(c, c->rank - 1, TAG_FWD, buf, cap);
            int64_t hd[4];
            memcpy(hd, *buf, HDR);
            const int64_t k = hd[0], T = hd[1];
            if (k < 0 || k >= M || !mb[k].live)
                mpi_die(c, "a message for micro-batch %lld", (long long)k);
            micro *u = &mb[k];
            if (hd[2]) { /* stopped */
                if (c->rank < last) mpi_post(c, c->rank + 1, hd, HDR);
                u->live = 0;
                live--;
                continue;
            }
            const size_t want =
                HDR + 8 * (size_t)u->size + sizeof(float) * (size_t)(u->size * T * d);
            if (T < 1 || T > n || len != want) mpi_die(c, "a malformed stream message");
            const int64_t *nn = (const int64_t *)(*buf + HDR);
            memcpy(h_in, *buf + HDR + 8 * u->size, sizeof(float) * (size_t)(u->size * T * d));
            mpi_maybe_die(c);
            if (c->rank < last) {
                mpi_check(c, ctx, clf_lm_state_step_stage(u->s, NULL, h_in, T, nn, h_out, NULL),
                          "step");
                memcpy(out, *buf, HDR + 8 * (size_t)u->size);
                memcpy(out + HDR + 8 * u->size, h_out, sizeof(float) * (size_t)(u->size * T * d));
                mpi_post(c, c->rank + 1, out, want);
                continue;
            }
            mpi_check(c, ctx, clf_lm_state_step_stage(u->s, NULL, h_in, T, nn, NULL, u->logits),
                      "step");
            if (!hd[3]) continue; /* a prompt chunk before the last: nothing to sample yet */
            if (!greedy) {        /* one draw per live sequence from its own stream */
                for (int64_t i = 0; i < u->size; i++)
                    draw[i] = nn[i] > 0 ? (float)clf_rng_uniform(&rng[u->off + i], 0.0, 1.0) : 0.0f;
                mpi_check(c, ctx, clf_tensor_write(u->u, draw, sizeof(float) * (size_t)u->size),
                          "draws");
            }
            mpi_check(c, ctx, clf_sample(ctx, u->logits, sp, u->u, u->seen, u->am), "sampling");
            mpi_check(c, ctx, clf_tensor_read(u->am, picks, 4 * (size_t)u->size), "sampling");
            char *tm = out;
            memcpy(tm, &k, 8);
            memcpy(tm + 8, picks, 4 * (size_t)u->size);
            mpi_send(c, 0, TAG_TOK, tm, 8 + 4 * (size_t)u->size);
        }
        free(picks);
        free(draw);
    }
    mpi_drain(c);
    const double t1 = mpi_now();

    /* what crossed each boundary */
    if (c->rank > 0 && c->rank < last) {
        const int64_t v[2] = {c->msgs, c->bytes};
        mpi_send(c, 0, TAG_COUNT, v, 16);
    } else if (c->rank == 0) {
        for (int r = 0; r < last; r++) {
            int64_t v[2] = {c->msgs, c->bytes};
            if (r > 0) {
                mpi_recv(c, r, TAG_COUNT, buf, cap);
                memcpy(v, *buf, 16);
            }
            if (job->stats && timed)
                fprintf(stderr,
                        "boundary %d -> %d: %lld messages, %.1f kB (%.2f messages, %.1f kB per "
                        "generated token)\n",
                        r, r + 1, (long long)v[0], (double)v[1] / 1e3,
                        produced ? (double)v[0] / (double)produced : 0.0,
                        produced ? (double)v[1] / 1e3 / (double)produced : 0.0);
        }
        if (job->stats && timed) {
            fprintf(stderr, "prompt: %lld x %lld tokens, %.1f tokens/s (to the first new tokens)\n",
                    (long long)B, (long long)n,
                    t_first > t0 ? (double)(B * n) / (t_first - t0) : 0.0);
            fprintf(stderr,
                    "generated: %lld tokens, %.1f tokens/s over %d ranks, %lld micro-batches\n",
                    (long long)produced,
                    produced > B && t1 > t_first ? (double)(produced - B) / (t1 - t_first) : 0.0,
                    c->world, (long long)M);
        }
    }
    for (int64_t k = 0; k < M; k++) {
        clf_lm_state_free(mb[k].s);
        clf_tensor *ts[] = {mb[k].ids1, mb[k].logits, mb[k].am, mb[k].u, mb[k].seen};
        for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++)
            clf_tensor_free(ts[i]);
    }
    free(mb);
    free(h_in);
    free(h_out);
    free(out);
    free(rng);
}

int mpi_generate(const gen_job *job, const int32_t *ids, int64_t n, int32_t *tokens,
                 int64_t *counts) {
    net c = {0};
    MPI_Comm_rank(MPI_COMM_WORLD, &c.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &c.world);
    c.timeout = job->timeout;
    c.die_at = -1;
    const char *hook = getenv("CLF_MPI_DIE_AT");
    int hr = -1, hs = -1;
    if (hook && sscanf(hook, "%d:%d", &hr, &hs) == 2 && hr == c.rank) {
        c.die_at = hs;
        c.hang = strstr(hook, ":hang") != NULL;
    }
    const int last = c.world - 1;
    char *buf = NULL;
    size_t cap = 0;

    /* the job: the batch and the prompt, from rank 0 */
    int64_t B = job->batch;
    int32_t *prompt = NULL;
    if (c.rank == 0) {
        const size_t len = 16 + 4 * (size_t)n;
        char *m = malloc(len);
        if (!m) mpi_die(&c, "out of host memory");
        memcpy(m, &B, 8);
        memcpy(m + 8, &n, 8);
        memcpy(m + 16, ids, 4 * (size_t)n);
        for (int r = 1; r < c.world; r++)
            mpi_send(&c, r, TAG_JOB, m, len);
        free(m);
        prompt = malloc(4 * (size_t)n);
        if (!prompt) mpi_die(&c, "out of host memory");
        memcpy(prompt, ids, 4 * (size_t)n);
    } else {
        const size_t len = mpi_recv(&c, 0, TAG_JOB, &buf, &cap);
        memcpy(&B, buf, 8);
        memcpy(&n, buf + 8, 8);
        if (len != 16 + 4 * (size_t)n || B < 1 || n < 1) mpi_die(&c, "a malformed job message");
        prompt = malloc(4 * (size_t)n);
        if (!prompt) mpi_die(&c, "out of host memory");
        memcpy(prompt, buf + 16, 4 * (size_t)n);
    }

    /* this rank's stage (or shard) */
    clf_context *ctx = open_context(&c, job);
    if (job->tp) {
        tp_generate(&c, job, ctx, prompt, n, B, tokens, counts);
        free(prompt);
        free(buf);
        clf_context_free(ctx);
        return 0;
    }
    clf_lm_info in;
    mpi_check(&c, ctx, clf_lm_read_info(ctx, job->model, &in), "reading the model");
    int64_t first[257];
    plan(&c, job, &in, first);
    clf_lm *m = NULL;
    mpi_check(&c, ctx,
              clf_lm_load_stage(ctx, job->model, &job->lp, first[c.rank], first[c.rank + 1], &m),
              "loading its layers");
    const int64_t max_new = job->gp.max_new_tokens;
    if (n + max_new > in.max_positions)
        mpi_die(&c, "%lld prompt tokens + %lld new ones exceed the model's %lld positions",
                (long long)n, (long long)max_new, (long long)in.max_positions);
    clf_stage me;
    int64_t one = 0;
    mpi_check(&c, ctx, clf_lm_stages(m, &me, 1, &one), "its stage");
    clf_device_info dev;
    clf_context_device_info(ctx, &dev);
    if (c.rank > 0) {
        char msg[24 + sizeof(dev.name)];
        const int64_t v[3] = {me.first_layer, me.layers, me.weight_bytes};
        memcpy(msg, v, 24);
        memcpy(msg + 24, dev.name, sizeof(dev.name));
        mpi_send(&c, 0, TAG_INFO, msg, sizeof(msg));
    } else {
        for (int r = 0; r < c.world; r++) {
            int64_t v[3] = {me.first_layer, me.layers, me.weight_bytes};
            const char *name = dev.name;
            if (r > 0) {
                mpi_recv(&c, r, TAG_INFO, &buf, &cap);
                memcpy(v, buf, 24);
                name = buf + 24;
            }
            if (job->stats)
                fprintf(stderr, "rank %d: layers %lld .. %lld%s%s, %.1f MB of weights on %s\n", r,
                        (long long)v[0], (long long)(v[0] + v[1] - 1), r == 0 ? ", embedding" : "",
                        r == last ? ", head" : "", (double)v[2] / 1e6, name);
        }
    }

    pipeline(&c, job, ctx, m, &in, prompt, n, B, tokens, counts, &buf, &cap, !job->warmup);
    if (job->warmup) /* the same again, timed: every program is built now */
        pipeline(&c, job, ctx, m, &in, prompt, n, B, tokens, counts, &buf, &cap, 1);
    free(prompt);
    free(buf);
    clf_lm_free(m);
    clf_context_free(ctx);
    return 0;
}
