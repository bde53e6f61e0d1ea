/*
 * d2l_fixtures.c — the seeds' Transformer fixtures (tools/make_d2l_fixtures.py) for test_model and
 * test_model_state: weights, PyTorch's outputs, the config, and the error measures.
 */
#include "d2l_fixtures.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

clf_safetensors *g_w, *g_fx;
int32_t g_cfg[9]; /* src V, tgt V, d, H, F, layers, bos, eos, max_steps */

void open_fixtures(void) {
    if (g_w) return;
    char p[512];
    clf_error err = {""};
    snprintf(p, sizeof(p), "%s/tests/data/d2l_weights.safetensors", CLF_SRC);
    if (clf_safetensors_open(p, &g_w, &err) != CLF_SUCCESS) fail_msg("%s", err.message);
    snprintf(p, sizeof(p), "%s/tests/data/d2l_fixtures.safetensors", CLF_SRC);
    if (clf_safetensors_open(p, &g_fx, &err) != CLF_SUCCESS) fail_msg("%s", err.message);
    assert_int_equal(clf_safetensors_read_i32(g_fx, "config", g_cfg, 9, &err), CLF_SUCCESS);
}

clf_transformer_params enc_cfg(void) {
    clf_transformer_params c = clf_transformer_default_params(g_cfg[SRC_V], g_cfg[DM], g_cfg[FFN],
                                                              g_cfg[HEADS], g_cfg[LAYERS]);
    c.use_bias = 1; /* the fixture's encoder has biased attention projections */
    return c;
}
clf_transformer_params dec_cfg(void) {
    return clf_transformer_default_params(g_cfg[TGT_V], g_cfg[DM], g_cfg[FFN], g_cfg[HEADS],
                                          g_cfg[LAYERS]);
}

clf_tensor *fixture(const char *name, const clf_st_info **info) {
    clf_tensor *t = NULL;
    CLF_OK(clf_safetensors_load(g_ctx, g_fx, name, 0, NULL, &t));
    if (info) *info = clf_safetensors_find(g_fx, name);
    return t;
}

double *fixture_f64(const char *name, int64_t n) {
    float *f = malloc((size_t)n * sizeof(float));
    double *d = malloc((size_t)n * sizeof(double));
    assert_true(f && d);
    clf_error err = {""};
    assert_int_equal(clf_safetensors_read_f32(g_fx, name, f, n, &err), CLF_SUCCESS);
    for (int64_t i = 0; i < n; i++)
        d[i] = f[i];
    free(f);
    return d;
}

double max_abs(const double *x, int64_t n) {
    double m = 0;
    for (int64_t i = 0; i < n; i++)
        m = fmax(m, fabs(x[i]));
    return m;
}

/* Largest |got - want| relative to the largest |want|. */
double rel_err(const float *got, const double *want, int64_t n) {
    double e = 0;
    for (int64_t i = 0; i < n; i++) {
        if (isnan(got[i])) return INFINITY;
        e = fmax(e, fabs(got[i] - want[i]));
    }
    return e / max_abs(want, n);
}

clf_encoder *load_encoder(void) {
    clf_transformer_params c = enc_cfg();
    clf_encoder *e = NULL;
    CLF_OK(clf_encoder_load(g_ctx, g_w, "encoder.", &c, &e));
    return e;
}
clf_decoder *load_decoder(void) {
    clf_transformer_params c = dec_cfg();
    clf_decoder *d = NULL;
    CLF_OK(clf_decoder_load(g_ctx, g_w, "decoder.", &c, &d));
    return d;
}
