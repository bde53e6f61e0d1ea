/* mpi_net.c — see mpi_net.h. */
#include "mpi_net.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

double mpi_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void mpi_die(const net *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "\nclformer-generate: rank %d: ", c->rank);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "; stopping every rank\n");
    va_end(ap);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

static void pause_briefly(void) {
    const struct timespec t = {0, 20000}; /* 20 us */
    nanosleep(&t, NULL);
}

void mpi_send(net *c, int peer, int tag, const void *buf, size_t len) {
    MPI_Request r;
    MPI_Isend(buf, (int)len, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &r);
    const double t0 = mpi_now();
    for (int done = 0;;) {
        MPI_Test(&r, &done, MPI_STATUS_IGNORE);
        if (done) break;
        if (mpi_now() - t0 > c->timeout)
            mpi_die(c, "rank %d did not take a message within %.0f s", peer, c->timeout);
        pause_briefly();
    }
}

/* Waits (bounded) until slot q's send completed. */
static void finish(net *c, slot *q) {
    if (!q->busy) return;
    const double t0 = mpi_now();
    for (int done = 0;;) {
        MPI_Test(&q->req, &done, MPI_STATUS_IGNORE);
        if (done) break;
        if (mpi_now() - t0 > c->timeout)
            mpi_die(c, "rank %d did not take a message within %.0f s", q->peer, c->timeout);
        pause_briefly();
    }
    q->busy = 0;
}

/* A stream message posted, not waited for (MPI keeps the order of one sender's messages to one
 * receiver): the rank goes on computing while the receiver takes it. */
void mpi_post(net *c, int peer, const void *data, size_t len) {
    slot *q = &c->ring[c->next];
    c->next = (c->next + 1) % SLOTS;
    finish(c, q);
    if (len > q->cap) {
        char *g = realloc(q->buf, len);
        if (!g) mpi_die(c, "out of host memory for a message of %zu bytes", len);
        q->buf = g;
        q->cap = len;
    }
    memcpy(q->buf, data, len);
    q->peer = peer;
    MPI_Isend(q->buf, (int)len, MPI_BYTE, peer, TAG_FWD, MPI_COMM_WORLD, &q->req);
    q->busy = 1;
    c->msgs++;
    c->bytes += (int64_t)len;
}

/* Every posted send completed, the ring's buffers freed. */
void mpi_drain(net *c) {
    for (int i = 0; i < SLOTS; i++) {
        finish(c, &c->ring[i]);
        free(c->ring[i].buf);
        c->ring[i].buf = NULL;
        c->ring[i].cap = 0;
    }
}

/* The next message of tag from peer into *buf (grown as needed); its length. */
size_t mpi_recv(net *c, int peer, int tag, char **buf, size_t *cap) {
    MPI_Status st;
    const double t0 = mpi_now();
    for (int flag = 0;;) {
        MPI_Iprobe(peer, tag, MPI_COMM_WORLD, &flag, &st);
        if (flag) break;
        if (mpi_now() - t0 > c->timeout)
            mpi_die(c, "no message from rank %d within %.0f s", peer, c->timeout);
        pause_briefly();
    }
    int len = 0;
    MPI_Get_count(&st, MPI_BYTE, &len);
    if ((size_t)len > *cap) {
        char *g = realloc(*buf, (size_t)len);
        if (!g) mpi_die(c, "out of host memory for a message of %d bytes", len);
        *buf = g;
        *cap = (size_t)len;
    }
    MPI_Recv(*buf, len, MPI_BYTE, peer, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return (size_t)len;
}

/* Answers every ping waiting for this rank; counts the pongs in *pongs (rank r: pongs[r] = 1). */
static void answer(net *c, char *pongs) {
    for (int flag = 1; flag;) {
        MPI_Status st;
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
        if (!flag || (st.MPI_TAG != TAG_PING && st.MPI_TAG != TAG_PONG)) return;
        char b;
        MPI_Recv(&b, 1, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (st.MPI_TAG == TAG_PONG) {
            if (pongs) pongs[st.MPI_SOURCE] = 1;
            continue;
        }
        MPI_Request r; /* not waited for: the job ends soon after a ping */
        MPI_Isend(&c->rank, 1, MPI_BYTE, st.MPI_SOURCE, TAG_PONG, MPI_COMM_WORLD, &r);
        MPI_Request_free(&r);
    }
}

/* Waits (bounded) for a collective of every rank; past the timeout names the ranks that do not
 * answer a ping. */
static void wait_all(net *c, MPI_Request *r, const char *what) {
    const double t0 = mpi_now();
    for (int done = 0;;) {
        MPI_Test(r, &done, MPI_STATUS_IGNORE);
        if (done) return;
        answer(c, NULL);
        const double waited = mpi_now() - t0;
        if (waited > c->timeout) break;
        if (waited > 2e-3) pause_briefly(); /* a collective of every step: spin at first */
    }
    char *pongs = calloc((size_t)c->world, 1);
    if (!pongs) mpi_die(c, "%s: another rank did not join within %.0f s", what, c->timeout);
    char ping = 1;
    for (int p = 0; p < c->world; p++)
        if (p != c->rank) {
            MPI_Request q;
            MPI_Isend(&ping, 1, MPI_BYTE, p, TAG_PING, MPI_COMM_WORLD, &q);
            MPI_Request_free(&q);
        }
    pongs[c->rank] = 1;
    for (const double t1 = mpi_now(); mpi_now() - t1 < 1.0;) {
        answer(c, pongs);
        pause_briefly();
    }
    char late[256] = "";
    for (int p = 0; p < c->world; p++)
        if (!pongs[p] && strlen(late) < sizeof(late) - 16)
            snprintf(late + strlen(late), sizeof(late) - strlen(late), "%s%d", *late ? ", " : "",
                     p);
    mpi_die(c, "%s: rank %s did not join within %.0f s", what,
            *late ? late : "(none answered late)", c->timeout);
}

void mpi_bcast(net *c, void *buf, size_t len, int root) {
    MPI_Request r;
    MPI_Ibcast(buf, (int)len, MPI_BYTE, root, MPI_COMM_WORLD, &r);
    wait_all(c, &r, "a broadcast");
}

void mpi_allreduce_sum(net *c, float *x, int64_t n) {
    const double t0 = mpi_now();
    MPI_Request r;
    MPI_Iallreduce(MPI_IN_PLACE, x, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r);
    wait_all(c, &r, "an all-reduce");
    c->msgs++;
    c->bytes += (int64_t)sizeof(float) * n;
    c->coll_s += mpi_now() - t0;
}

void mpi_check(const net *c, clf_context *ctx, clf_status st, const char *what) {
    if (st != CLF_SUCCESS)
        mpi_die(c, "%s: %s (%s)", what, clf_context_last_error(ctx), clf_strerror(st));
}

/* The test hook: a crash before this rank's next stage step. */
void mpi_maybe_die(net *c) {
    if (c->die_at >= 0 && c->steps++ == c->die_at) {
        fprintf(stderr, "clformer-generate: rank %d: CLF_MPI_DIE_AT: %s\n", c->rank,
                c->hang ? "hanging" : "killing itself");
        fflush(stderr);
        if (c->hang)
            for (;;)
                sleep(3600);
        raise(SIGKILL);
    }
}
