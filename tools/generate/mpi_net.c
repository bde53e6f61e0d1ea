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
