/*
 * d2l_fixtures.h — the seeds' Transformer fixtures shared by test_model.c and test_model_state.c
 * (d2l_fixtures.c): tests/data/d2l_weights.safetensors and d2l_fixtures.safetensors.
 */
#ifndef CLF_TESTS_D2L_FIXTURES_H
#define CLF_TESTS_D2L_FIXTURES_H

#include "harness.h"

extern clf_safetensors *g_w, *g_fx;
extern int32_t g_cfg[9]; /* src V, tgt V, d, H, F, layers, bos, eos, max_steps */
enum { SRC_V, TGT_V, DM, HEADS, FFN, LAYERS, BOS, EOS, MAXSTEPS };

/* Opens both files once (into g_w, g_fx, g_cfg). */
void open_fixtures(void);
/* The encoder's and the decoder's parameters from g_cfg. */
clf_transformer_params enc_cfg(void);
clf_transformer_params dec_cfg(void);
/* A fixture tensor on g_ctx (and its record when info is not NULL). */
clf_tensor *fixture(const char *name, const clf_st_info **info);
/* A fixture's n values as doubles (free them). */
double *fixture_f64(const char *name, int64_t n);
double max_abs(const double *x, int64_t n);
/* Largest |got - want| relative to the largest |want| (a NaN: infinity). */
double rel_err(const float *got, const double *want, int64_t n);
/* The fixture's encoder and decoder, loaded on g_ctx. */
clf_encoder *load_encoder(void);
clf_decoder *load_decoder(void);

#endif
