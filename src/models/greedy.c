/*
 * greedy.c — d2l's predict_seq2seq for a batch: encode the source once, then feed bos and each
 * step's argmax through the decoder until every sequence has produced eos or max_steps tokens.
 * Runs on the encoder's and decoder's own states.
 */
#include "models.h"

#include <stdlib.h>
#include <string.h>

clf_greedy_params clf_greedy_default_params(int32_t bos, int32_t eos, int64_t max_steps) {
    clf_greedy_params p;
    memset(&p, 0, sizeof(p));
    p.bos = bos;
    p.eos = eos;
    p.max_steps = max_steps;
    return p;
}

clf_status clf_greedy_decode(clf_encoder *enc, clf_decoder *dec, const clf_tensor *src,
                             const clf_tensor *src_valid_lens, const clf_greedy_params *p,
                             int32_t *tokens, int64_t *lengths) {
    if (!enc || !dec) return CLF_ERROR_INVALID_ARGUMENT;
    clf_context *ctx = enc->ctx;
    clf__clear_error(ctx);
    if (dec->ctx != ctx)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                         "greedy: encoder and decoder belong to different contexts");
    if (!p || !tokens || !lengths)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                         "greedy: params, tokens and lengths must not be NULL");
    clf_status st = clf__check_ids(ctx, src, src_valid_lens);
    if (st != CLF_SUCCESS) return st;
    if (enc->cfg.num_hiddens != dec->cfg.num_hiddens)
        return clf__fail(ctx, CLF_ERROR_SHAPE_MISMATCH, "greedy: encoder d %lld != decoder d %lld",
                         (long long)enc->cfg.num_hiddens, (long long)dec->cfg.num_hiddens);
    const int64_t V = dec->cfg.vocab_size, M = p->max_steps;
    if (M < 1 || p->bos < 0 || p->bos >= V)
        return clf__fail(ctx, CLF_ERROR_INVALID_ARGUMENT,
                         "greedy: max_steps must be >= 1 and bos a token id below %lld",
                         (long long)V);
    const int64_t B = src->shape[0], Ns = src->shape[1], d = enc->cfg.num_hiddens;
    const int64_t s3[3] = {B, Ns, d}, s2[2] = {B, 1}, sl[3] = {B, 1, V};
    clf_tensor *enc_out = NULL, *ids = NULL, *logits = NULL;  /* (B, Ns, d), (B, 1), (B, 1, V) */
    int32_t *host = malloc((size_t)B * sizeof(int32_t));      /* (B) this step's tokens */
    char *done = calloc((size_t)B, 1);                        /* (B) 1: eos seen */
    int32_t *tok = malloc((size_t)(B * M) * sizeof(int32_t)); /* (B, M) tokens so far */
    int64_t *len = calloc((size_t)B, sizeof(int64_t));        /* (B) their counts */
    if (!host || !done || !tok || !len) {
        st = clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
        goto fail;
    }
    CLF_CHECK(clf_tensor_create(ctx, CLF_F32, 3, s3, &enc_out));
    CLF_CHECK(clf_tensor_create(ctx, CLF_I32, 2, s2, &ids));
    CLF_CHECK(clf_tensor_create(ctx, CLF_F32, 3, sl, &logits));
    CLF_CHECK(clf_encoder_forward(enc, src, src_valid_lens, enc_out));
    CLF_CHECK(clf_decoder_init_state(dec, enc_out, src_valid_lens, M));
    for (int64_t b = 0; b < B; b++)
        host[b] = p->bos;
    CLF_CHECK(clf_tensor_write(ids, host, (size_t)B * sizeof(int32_t)));
    int64_t live = B;
    for (int64_t step = 0; step < M && live > 0; step++) {
        CLF_CHECK(clf_decoder_step(dec, ids, logits));
        CLF_CHECK(clf_argmax(ctx, logits, ids)); /* the next input is this step's argmax */
        CLF_CHECK(clf_tensor_read(ids, host, (size_t)B * sizeof(int32_t)));
        for (int64_t b = 0; b < B; b++) {
            if (done[b]) continue;
            if (host[b] == p->eos) {
                done[b] = 1;
                live--;
            } else {
                tok[b * M + len[b]++] = host[b];
            }
        }
        if (p->on_step) p->on_step(p->user, dec, step);
    }
    for (int64_t i = 0; i < B * M; i++)
        tokens[i] = -1;
    for (int64_t b = 0; b < B; b++) {
        memcpy(tokens + b * M, tok + b * M, (size_t)len[b] * sizeof(int32_t));
        lengths[b] = len[b];
    }
fail:
    free(tok);
    free(len);
    free(host);
    free(done);
    clf_tensor_free(enc_out);
    clf_tensor_free(ids);
    clf_tensor_free(logits);
    return st;
}
