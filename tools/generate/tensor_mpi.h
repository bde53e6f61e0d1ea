/*
 * tensor_mpi.h — clformer-generate --tensor-parallel over MPI ranks: every rank holds shard r of
 * every layer (clf_lm_load_shard: its part of the heads and FFN columns) and runs every step;
 * the shards' partial sums meet in two all-reduces per layer and one for the head's logits; rank
 * 0 samples and broadcasts each step's ids.
 */
#ifndef CLF_TOOLS_TENSOR_MPI_H
#define CLF_TOOLS_TENSOR_MPI_H

#include "mpi_net.h"
#include "pipeline_mpi.h"

/* One job on this rank's context (rank 0: tokens and counts as mpi_generate fills them), once,
 * or twice with job->warmup (the second timed and printed). */
void tp_generate(net *c, const gen_job *job, clf_context *ctx, const int32_t *prompt, int64_t n,
                 int64_t B, int32_t *tokens, int64_t *counts);

#endif
