/*
 * mpi_net.h — the MPI pipeline's messaging (pipeline_mpi.c): point-to-point byte messages whose
 * every wait is bounded by the job's timeout (past it the rank names the rank it waited for and
 * aborts the job), the stream's sends posted from a ring of buffers and not waited for, and the
 * test hook that kills or hangs a rank.
 */
#ifndef CLF_TOOLS_MPI_NET_H
#define CLF_TOOLS_MPI_NET_H

#include "clformer/clformer.h"

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

enum { TAG_JOB = 1, TAG_FWD, TAG_TOK, TAG_INFO, TAG_COUNT, TAG_PING, TAG_PONG };
enum { HDR = 32 }; /* a fwd message's header bytes */

/* A send in flight: its own copy of the message, so the rank computes on while it travels. */
typedef struct slot {
    MPI_Request req;
    char *buf;
    size_t cap;
    int busy, peer;
} slot;
enum { SLOTS = 4 };

typedef struct net {
    int rank, world;
    slot ring[SLOTS]; /* the stream's sends in flight (fwd), oldest reused first */
    int next;
    double timeout;
    int64_t msgs, bytes; /* sent forward (fwd messages) */
    double coll_s;       /* seconds in collectives (waiting for the others included) */
    int die_at;          /* the test hook's step, -1: none */
    int hang;            /* the test hook hangs instead of dying */
    int64_t steps;
} net;

double mpi_now(void);
/* Prints "rank R: <why>; stopping every rank" and aborts the job (every rank exits non-zero). */
void mpi_die(const net *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3), noreturn))
#endif
    ;
/* A message sent and waited for (bounded). */
void mpi_send(net *c, int peer, int tag, const void *buf, size_t len);
/* A stream message (TAG_FWD) posted from the ring, not waited for; counted in c->msgs, bytes. */
void mpi_post(net *c, int peer, const void *data, size_t len);
/* Every posted send completed (bounded), the ring's buffers freed. */
void mpi_drain(net *c);
/* The next message of tag from peer into *buf (grown as needed), waited for (bounded); its
 * length. */
size_t mpi_recv(net *c, int peer, int tag, char **buf, size_t *cap);
/* Collectives over every rank, waited for (bounded): root's len bytes into every rank's buf; the
 * sum of every rank's n floats in place, counted in c->msgs, bytes (this rank's share: n floats).
 * While it waits a rank answers the others' pings; past the timeout it pings every rank and
 * names those that do not answer within a second (hung, or stuck outside the collective). */
void mpi_bcast(net *c, void *buf, size_t len, int root);
void mpi_allreduce_sum(net *c, float *x, int64_t n);
/* Dies with the context's message unless st is CLF_SUCCESS. */
void mpi_check(const net *c, clf_context *ctx, clf_status st, const char *what);
/* The test hook CLF_MPI_DIE_AT: kills (or hangs) this rank before its chosen stage step. */
void mpi_maybe_die(net *c);

#endif
