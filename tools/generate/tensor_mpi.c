/*
 * tensor_mpi.c — see tensor_mpi.h. Each step every rank embeds the same ids, runs its shard of
 * each layer and adds the other shards' partial sums (MPI_Iallreduce, bounded like every wait);
 * every rank holds its rows of the head, whose logits a third all-reduce sums; rank 0 samples each
 * sequence from its own stream (as clf_lm_generate does) and broadcasts the next ids and counts,
 * or the stop. Per decoding step two all-reduces of (B, 1, d) floats per layer cross the ranks,
 * and one of (B, V).
 */
#include "tensor_mpi.h"
#include "../../src/rng.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int allreduce(void *user, float *data, int64_t count) {
    mpi_allreduce_sum((net *)user, data, count);
    return 0; /* a failure or a late rank aborts the job inside */
}

/* The tensors of one generation: rank 0's sampling ones NULL elsewhere. */
typedef struct tp_run {
    clf_lm_state *s;
    clf_tensor *ids, *ids1, *logits, *am, *u, *seen;
} tp_run;

static void run_free(tp_run *r) {
    clf_lm_state_free(r->s);
    clf_tensor *ts[] = {r->ids, r->ids1, r->logits, r->am, r->u, r->seen};
    for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++)
        clf_tensor_free(ts[i]);
}

static void run_once(net *c, const gen_job *job, clf_context *ctx, clf_lm *m, const clf_lm_info *in,
                     const int32_t *prompt, int64_t n, int64_t B, int32_t *tokens, int64_t *counts,
                     int timed) {
    const int64_t V = in->vocab_size, max_new = job->gp.max_new_tokens;
    const clf_sampling_params *sp = &job->gp.sampling;
    const int root = c->rank == 0, greedy = sp->temperature <= 0.0f,
              penalty = sp->repetition_penalty != 1.0f;
    tp_run r = {0};
    const int64_t ps[2] = {B, n}, s1[2] = {B, 1}, ls[2] = {B, V};
    int32_t *h = malloc(4 * (size_t)(B * n));
    int64_t *nn = malloc(8 * (size_t)B);
    /* the step message: stop, then n_new (B int64), then the ids (B int32) */
    char *msg = malloc(8 + 12 * (size_t)B);
    unsigned char *done = calloc((size_t)B, 1);
    int32_t *picks = malloc(4 * (size_t)B);
    float *draw = malloc(sizeof(float) * (size_t)B);
    clf_rng *rng = malloc(sizeof(clf_rng) * (size_t)B);
    if (!h || !nn || !msg || !done || !picks || !draw || !rng) mpi_die(c, "out of host memory");
    for (int64_t b = 0; b < B; b++) { /* as clf_lm_generate seeds each sequence */
        rng[b] = clf_rng_make(sp->seed ^ (0x632be59bd9b4e019ULL * (uint64_t)(b + 1)));
        memcpy(h + b * n, prompt, 4 * (size_t)n);
        nn[b] = n;
    }
    mpi_check(c, ctx, clf_lm_state_create(m, B, n + max_new, &r.s), "a state");
    mpi_check(c, ctx, clf_tensor_create(ctx, CLF_I32, 2, ps, &r.ids), "ids");
    mpi_check(c, ctx, clf_tensor_write(r.ids, h, 4 * (size_t)(B * n)), "ids");
    mpi_check(c, ctx, clf_tensor_create(ctx, CLF_I32, 2, s1, &r.ids1), "ids");
    if (root) {
        mpi_check(c, ctx, clf_tensor_create(ctx, CLF_F32, 2, ls, &r.logits), "logits");
        mpi_check(c, ctx, clf_tensor_create(ctx, CLF_I32, 1, &B, &r.am), "ids");
        mpi_check(c, ctx, clf_tensor_create(ctx, CLF_F32, 1, &B, &r.u), "draws");
        mpi_check(c, ctx, clf_tensor_fill(r.u, 0.0), "draws");
        if (penalty) { /* the prompt's tokens, seen by every sequence */
            int32_t *seen = calloc((size_t)(B * V), 4);
            if (!seen) mpi_die(c, "out of host memory");
            for (int64_t i = 0; i < B; i++)
                for (int64_t t = 0; t < n; t++)
                    seen[i * V + prompt[t]] = 1;
            mpi_check(c, ctx, clf_tensor_create(ctx, CLF_I32, 2, ls, &r.seen), "seen");
            mpi_check(c, ctx, clf_tensor_write(r.seen, seen, 4 * (size_t)(B * V)), "seen");
            free(seen);
        }
        for (int64_t b = 0; b < B * max_new; b++)
            tokens[b] = -1;
        for (int64_t b = 0; b < B; b++)
            counts[b] = 0;
    }
    c->msgs = c->bytes = 0;
    c->coll_s = 0;
    const double t0 = mpi_now();
    double t_first = 0;
    int64_t produced = 0;
    mpi_maybe_die(c);
    mpi_check(c, ctx, clf_lm_state_step_stage(r.s, r.ids, NULL, n, NULL, NULL, r.logits),
              "prefill");
    const int64_t pre_msgs = c->msgs, pre_bytes = c->bytes;
    const double pre_s = c->coll_s, t_pre = mpi_now() - t0;
    int64_t steps = 0;
    for (;;) {
        int64_t any = 0;
        if (root) {
            if (!greedy) /* one draw per sequence that stepped, from its own stream */
                for (int64_t b = 0; b < B; b++)
                    draw[b] = nn[b] > 0 ? (float)clf_rng_uniform(&rng[b], 0.0, 1.0) : 0.0f;
            if (!greedy)
                mpi_check(c, ctx, clf_tensor_write(r.u, draw, sizeof(float) * (size_t)B), "draws");
            mpi_check(c, ctx, clf_sample(ctx, r.logits, sp, r.u, r.seen, r.am), "sampling");
            mpi_check(c, ctx, clf_tensor_read(r.am, picks, 4 * (size_t)B), "sampling");
            if (t_first == 0) t_first = mpi_now();
            for (int64_t b = 0; b < B; b++) {
                const int took = mpi_take_token(job, in, b, picks[b], done, tokens, counts, timed);
                produced += took > 0;
                nn[b] = took == 2;
                any |= took == 2;
            }
            memcpy(msg, &any, 8);
            memcpy(msg + 8, nn, 8 * (size_t)B);
            memcpy(msg + 8 + 8 * B, picks, 4 * (size_t)B);
        }
        mpi_bcast(c, msg, 8 + 12 * (size_t)B, 0);
        memcpy(&any, msg, 8);
        if (!any) break;
        memcpy(nn, msg + 8, 8 * (size_t)B);
        for (int64_t b = 0; b < B; b++) {
            if (nn[b] < 0 || nn[b] > 1) mpi_die(c, "a malformed step message");
            memcpy(&picks[b], msg + 8 + 8 * B + 4 * b, 4);
            if (!nn[b]) picks[b] = 0;
        }
        mpi_check(c, ctx, clf_tensor_write(r.ids1, picks, 4 * (size_t)B), "ids");
        mpi_maybe_die(c);
        mpi_check(c, ctx, clf_lm_state_step_stage(r.s, r.ids1, NULL, 1, nn, NULL, r.logits),
                  "step");
        steps++;
    }
    const double t1 = mpi_now();
    if (job->stats && timed) /* every rank: its time in all-reduces */
        fprintf(stderr,
                "rank %d: all-reduces took %.0f%% of the prefill (%.1f ms), %.0f%% of the "
                "decoding\n",
                c->rank, 100 * pre_s / t_pre, 1e3 * pre_s,
                100 * (c->coll_s - pre_s) / (t1 - t0 - t_pre));
    if (root && job->stats && timed) {
        fprintf(stderr,
                "all-reduces: %lld, %.1f kB per rank: the prefill %lld, %.1f kB; each of %lld "
                "decoding steps of %lld sequences %.0f, %.1f kB\n",
                (long long)c->msgs, (double)c->bytes / 1e3, (long long)pre_msgs,
                (double)pre_bytes / 1e3, (long long)steps, (long long)B,
                steps ? (double)(c->msgs - pre_msgs) / (double)steps : 0.0,
                steps ? (double)(c->bytes - pre_bytes) / 1e3 / (double)steps : 0.0);
        fprintf(stderr, "prompt: %lld x %lld tokens, %.1f tokens/s (to the first new tokens)\n",
                (long long)B, (long long)n, t_first > t0 ? (double)(B * n) / (t_first - t0) : 0.0);
        fprintf(stderr, "generated: %lld tokens, %.1f tokens/s over %d ranks, tensor parallel\n",
                (long long)produced,
                produced > B && t1 > t_first ? (double)(produced - B) / (t1 - t_first) : 0.0,
                c->world);
    }
    run_free(&r);
    free(h);
    free(nn);
    free(msg);
    free(done);
    free(picks);
    free(draw);
    free(rng);
}

void tp_generate(net *c, const gen_job *job, clf_context *ctx, const int32_t *prompt, int64_t n,
                 int64_t B, int32_t *tokens, int64_t *counts) {
    clf_lm_info in;
    mpi_check(c, ctx, clf_lm_read_info(ctx, job->model, &in), "reading the model");
    const int64_t max_new = job->gp.max_new_tokens;
    if (n + max_new > in.max_positions)
        mpi_die(c, "%lld prompt tokens + %lld new ones exceed the model's %lld positions",
                (long long)n, (long long)max_new, (long long)in.max_positions);
    const clf_shard sh = {c->rank, c->world, allreduce, c};
    clf_lm *m = NULL;
    mpi_check(c, ctx, clf_lm_load_shard(ctx, job->model, &job->lp, &sh, &m), "loading its shard");
    clf_stage me;
    int64_t one = 0;
    mpi_check(c, ctx, clf_lm_stages(m, &me, 1, &one), "its shard");
    clf_device_info dev;
    clf_context_device_info(ctx, &dev);
    char *buf = NULL;
    size_t cap = 0;
    if (c->rank > 0) {
        char msg[8 + sizeof(dev.name)];
        memcpy(msg, &me.weight_bytes, 8);
        memcpy(msg + 8, dev.name, sizeof(dev.name));
        mpi_send(c, 0, TAG_INFO, msg, sizeof(msg));
    } else {
        for (int r = 0; r < c->world; r++) {
            int64_t bytes = me.weight_bytes;
            const char *name = dev.name;
            if (r > 0) {
                mpi_recv(c, r, TAG_INFO, &buf, &cap);
                memcpy(&bytes, buf, 8);
                name = buf + 8;
            }
            if (job->stats)
                fprintf(stderr,
                        "rank %d: shard %d of %d of every layer (%lld of %lld heads) and of the "
                        "head, embedding, %.1f MB of weights on %s\n",
                        r, r, c->world, (long long)(in.heads / c->world), (long long)in.heads,
                        (double)bytes / 1e6, name);
        }
    }
    free(buf);
    run_once(c, job, ctx, m, &in, prompt, n, B, tokens, counts, !job->warmup);
    if (job->warmup) /* the same again, timed: every program is built now */
        run_once(c, job, ctx, m, &in, prompt, n, B, tokens, counts, 1);
    clf_lm_free(m);
}
