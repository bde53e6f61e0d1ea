/*
 * pipeline_mpi.h — clformer-generate over MPI ranks (built with -DCLF_MPI=ON): one pipeline
 * stage per rank, the residual stream passed rank to rank with point-to-point messages, the
 * sampled tokens sent back from the last rank to rank 0, which alone prints.
 */
#ifndef CLF_TOOLS_PIPELINE_MPI_H
#define CLF_TOOLS_PIPELINE_MPI_H

#include "clformer/clformer.h"

typedef struct gen_job {
    const char *model;
    clf_load_params lp;
    clf_generate_params gp; /* max_new_tokens, sampling, ignore_eos, on_token (rank 0) */
    const char *device;     /* --device: every rank's spec */
    const char *devices;    /* --devices: rank r takes spec r (mod their count) */
    const char *split;      /* --split: the ranks' shares of the layers (default: equal) */
    int64_t batch;          /* sequences: copies of the prompt */
    int64_t micro;          /* micro-batches in flight (0: one per rank, at most the batch) */
    int64_t chunk;          /* prompt positions per prefill message (0: about 4 per rank) */
    double timeout;         /* seconds any wait for another rank may take */
    int stats;
    int warmup; /* run the whole generation once before the one that counts (and prints) */
    int tp;     /* tensor parallel (tensor_mpi.c) instead of a pipeline */
    const char *const *sets; /* --set NAME=V on every rank's context */
    int nsets;
} gen_job;

/* Runs job on every rank of MPI_COMM_WORLD (more than one). Rank 0 gives the prompt (ids, n) and
 * receives tokens (batch x max_new_tokens, -1 past each count) and counts; the other ranks pass
 * NULL. Returns the process's exit status; a rank that fails or waits past the timeout aborts
 * the job (every rank exits non-zero) with a message naming itself or the rank it waited for. */
int mpi_generate(const gen_job *job, const int32_t *ids, int64_t n, int32_t *tokens,
                 int64_t *counts);

/* Rank 0's record of token t sampled for sequence b (shared by the pipeline and tensor_mpi.c):
 * 0 when the sequence was done or t ends it (eos, not kept), 1 when t is kept and ends it (the
 * count reached, or on_token asked to stop; streamed only when timed), 2 when kept and the
 * sequence goes on. */
int mpi_take_token(const gen_job *job, const clf_lm_info *in, int64_t b, int32_t t,
                   unsigned char *done, int32_t *tokens, int64_t *counts, int timed);

#endif
