/*
 * test_model_state.c — the seeds' Transformer (tools/make_d2l_fixtures.py) under use a
 * demanding caller makes of it: two decoding states over one decoder, interleaved, each equal to
 * PyTorch; bad weight files and bad configs refused with errors naming the tensor.
 */
#include "d2l_fixtures.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Two batches decoded at once over one set of weights: state a holds the fixture's batch, state b
 * the same sequences in reverse order with their own encoder outputs; their steps interleave.
 * Each must match PyTorch's logits (bound as for training mode: 1e-4 of the largest |logit|), and
 * neither may disturb the other or the decoder's own state. */
static void test_two_states_one_decoder(void **state) {
    (void)state;
    open_fixtures();
    const clf_st_info *ti, *ei;
    clf_tensor *tgt = fixture("tgt", &ti), *enc_out = fixture("enc_outputs", &ei);
    clf_tensor *vl = fixture("src_valid_lens", NULL);
    const int64_t B = ti->shape[0], T = ti->shape[1], V = g_cfg[TGT_V];
    const int64_t Ns = ei->shape[1], d = ei->shape[2];
    assert_true(B >= 2 && B <= 16);
    /* reversed batch: encoder outputs and valid lengths */
    float *eo = tensor_to_host(enc_out), *eo_r = malloc((size_t)(B * Ns * d) * sizeof(float));
    int32_t vl_h[16], vl_r[16], *ids = malloc((size_t)(B * T) * 4);
    clf_error err = {""};
    CLF_OK(clf_tensor_read(vl, vl_h, (size_t)B * 4));
    assert_int_equal(clf_safetensors_read_i32(g_fx, "tgt", ids, B * T, &err), CLF_SUCCESS);
    for (int64_t b = 0; b < B; b++) {
        memcpy(eo_r + (B - 1 - b) * Ns * d, eo + b * Ns * d, (size_t)(Ns * d) * sizeof(float));
        vl_r[B - 1 - b] = vl_h[b];
    }
    int64_t es[3] = {B, Ns, d};
    clf_tensor *enc_r = tensor_poisoned(CLF_F32, 3, es), *vlr = tensor_poisoned(CLF_I32, 1, &B);
    CLF_OK(clf_tensor_write(enc_r, eo_r, (size_t)(B * Ns * d) * sizeof(float)));
    CLF_OK(clf_tensor_write(vlr, vl_r, (size_t)B * 4));

    clf_decoder *dec = load_decoder();
    clf_decoder_state *sa = NULL, *sb = NULL;
    CLF_OK(clf_decoder_state_create(dec, &sa));
    CLF_OK(clf_decoder_state_create(dec, &sb));
    CLF_OK(clf_decoder_state_init(sa, enc_out, vl, 16));
    CLF_OK(clf_decoder_state_init(sb, enc_r, vlr, 16));
    assert_int_equal(clf_decoder_state_step(sa, tgt, NULL), CLF_ERROR_INVALID_ARGUMENT);

    double *want = fixture_f64("logits", B * T * V), *want_b = malloc((size_t)(B * V) * 8);
    int64_t is1[2] = {B, 1}, ls1[3] = {B, 1, V};
    clf_tensor *ia = tensor_poisoned(CLF_I32, 2, is1), *ib = tensor_poisoned(CLF_I32, 2, is1);
    clf_tensor *la = tensor_poisoned(CLF_F32, 3, ls1), *lb = tensor_poisoned(CLF_F32, 3, ls1);
    double worst_a = 0, worst_b = 0;
    for (int64_t t = 0; t < T; t++) {
        int32_t ca[16], cb[16];
        for (int64_t b = 0; b < B; b++) {
            ca[b] = ids[b * T + t];
            cb[B - 1 - b] = ids[b * T + t];
        }
        CLF_OK(clf_tensor_write(ia, ca, (size_t)B * 4));
        CLF_OK(clf_tensor_write(ib, cb, (size_t)B * 4));
        CLF_OK(clf_decoder_state_step(sa, ia, la));
        CLF_OK(clf_decoder_state_step(sb, ib, lb));
        float *ga = tensor_to_host(la), *gb = tensor_to_host(lb);
        for (int64_t b = 0; b < B; b++)
            for (int64_t v = 0; v < V; v++) {
                want_b[b * V + v] = want[(b * T + t) * V + v]; /* state a's row b */
            }
        worst_a = fmax(worst_a, rel_err(ga, want_b, B * V));
        for (int64_t b = 0; b < B; b++)
            for (int64_t v = 0; v < V; v++)
                want_b[(B - 1 - b) * V + v] = want[(b * T + t) * V + v];
        worst_b = fmax(worst_b, rel_err(gb, want_b, B * V));
        free(ga);
        free(gb);
    }
    print_message("two states, interleaved steps, vs PyTorch: max error %.3g and %.3g\n", worst_a,
                  worst_b);
    assert_true(worst_a <= 1e-4);
    assert_true(worst_b <= 1e-4);
    assert_int_equal(clf_decoder_state_length(sa), T);
    assert_int_equal(clf_decoder_state_length(sb), T);
    assert_int_equal(clf_decoder_length(dec), 0); /* the decoder's own state was not touched */
    clf_decoder_state_free(sa);
    clf_decoder_state_free(sb);
    clf_decoder_free(dec);
    clf_tensor *ts[] = {tgt, enc_out, vl, enc_r, vlr, ia, ib, la, lb};
    for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++)
        clf_tensor_free(ts[i]);
    free(eo);
    free(eo_r);
    free(ids);
    free(want);
    free(want_b);
}

/* Bad weights: missing tensors, wrong shapes, a bad config — clear errors naming the tensor. */
static void test_bad_weights(void **state) {
    (void)state;
    open_fixtures();
    clf_encoder *enc = NULL;
    clf_decoder *dec = NULL;
    clf_transformer_params c = enc_cfg();
    /* wrong prefix: every tensor is missing */
    assert_int_equal(clf_encoder_load(g_ctx, g_w, "encodr.", &c, &enc), CLF_ERROR_BAD_FORMAT);
    assert_null(enc);
    assert_non_null(strstr(clf_context_last_error(g_ctx), "encodr.embedding.weight"));
    /* the decoder has no attention biases: asking for them finds them missing */
    clf_transformer_params dc = dec_cfg();
    dc.use_bias = 1;
    assert_int_equal(clf_decoder_load(g_ctx, g_w, "decoder.", &dc, &dec), CLF_ERROR_BAD_FORMAT);
    assert_null(dec);
    assert_non_null(strstr(clf_context_last_error(g_ctx), "bias"));
    /* wrong sizes: FFN and vocabulary */
    c = enc_cfg();
    c.ffn_num_hiddens += 1;
    assert_int_equal(clf_encoder_load(g_ctx, g_w, "encoder.", &c, &enc), CLF_ERROR_SHAPE_MISMATCH);
    assert_non_null(strstr(clf_context_last_error(g_ctx), "ffn.dense1.weight"));
    c = enc_cfg();
    c.vocab_size = 50;
    assert_int_equal(clf_encoder_load(g_ctx, g_w, "encoder.", &c, &enc), CLF_ERROR_SHAPE_MISMATCH);
    /* configs that cannot work */
    c = enc_cfg();
    c.num_heads = 5;
    assert_int_equal(clf_encoder_load(g_ctx, g_w, "encoder.", &c, &enc),
                     CLF_ERROR_INVALID_ARGUMENT);
    c = enc_cfg();
    c.norm_eps = 0;
    assert_int_equal(clf_encoder_load(g_ctx, g_w, "encoder.", &c, &enc),
                     CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_encoder_load(g_ctx, g_w, "encoder.", NULL, &enc),
                     CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_encoder_load(g_ctx, NULL, "encoder.", &c, &enc),
                     CLF_ERROR_INVALID_ARGUMENT);
    /* the encoder's weights are not a BERT model */
    c = enc_cfg();
    c.arch = CLF_ARCH_BERT;
    assert_int_equal(clf_encoder_load(g_ctx, g_w, "", &c, &enc), CLF_ERROR_BAD_FORMAT);
    assert_non_null(strstr(clf_context_last_error(g_ctx), "word_embeddings"));
    /* a sequence longer than max_len */
    c = enc_cfg();
    c.max_len = 4;
    CLF_OK(clf_encoder_load(g_ctx, g_w, "encoder.", &c, &enc));
    int64_t is[2] = {1, 5}, os[3] = {1, 5, g_cfg[DM]};
    clf_tensor *ids = NULL, *out = tensor_poisoned(CLF_F32, 3, os);
    CLF_OK(clf_tensor_create(g_ctx, CLF_I32, 2, is, &ids));
    CLF_OK(clf_tensor_fill(ids, 3));
    assert_int_equal(clf_encoder_forward(enc, ids, NULL, out), CLF_ERROR_SIZE_LIMIT);
    float *o = tensor_to_host(out);
    assert_true(isnan(o[0]));
    free(o);
    clf_tensor_free(ids);
    clf_tensor_free(out);
    clf_encoder_free(enc);
    /* workspaces larger than the device's memory: refused at once, with the sizes */
    c = enc_cfg();
    CLF_OK(clf_encoder_load(g_ctx, g_w, "encoder.", &c, &enc));
    assert_int_equal(clf_encoder_reserve(enc, 1000000000, 900), CLF_ERROR_SIZE_LIMIT);
    assert_non_null(strstr(clf_context_last_error(g_ctx), "global memory"));
    assert_int_equal(clf_encoder_reserve(enc, 1, 1001), CLF_ERROR_SIZE_LIMIT); /* > max_len */
    assert_int_equal(clf_encoder_reserve(enc, 0, 10), CLF_ERROR_INVALID_ARGUMENT);
    clf_encoder_free(enc);
    /* decoder calls before init_state */
    dc = dec_cfg();
    CLF_OK(clf_decoder_load(g_ctx, g_w, "decoder.", &dc, &dec));
    int64_t s1[2] = {1, 1}, l1[3] = {1, 1, g_cfg[TGT_V]};
    clf_tensor *i1 = NULL, *lo = tensor_poisoned(CLF_F32, 3, l1);
    CLF_OK(clf_tensor_create(g_ctx, CLF_I32, 2, s1, &i1));
    assert_int_equal(clf_decoder_step(dec, i1, lo), CLF_ERROR_INVALID_ARGUMENT);
    clf_tensor_free(i1);
    clf_tensor_free(lo);
    clf_decoder_free(dec);
}

/* argmax against a C reference: awkward row lengths, ties (first index wins), -inf rows. */
int main(void) {
    rng_seed(6);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_states_one_decoder),
        cmocka_unit_test(test_bad_weights),
    };
    int rc = HARNESS_RUN("model_state", tests);
    clf_safetensors_free(g_w);
    clf_safetensors_free(g_fx);
    return rc;
}
