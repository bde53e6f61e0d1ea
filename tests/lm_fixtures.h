/*
 * lm_fixtures.h — the LLM fixtures of test_lm and test_lm_quant: the Hugging Face folders under
 * tests/data/lm/<name>/ (tools/make_lm_fixtures.py) with their float64 transformers reference,
 * and the logit checks both programs use.
 */
#ifndef CLF_TESTS_LM_FIXTURES_H
#define CLF_TESTS_LM_FIXTURES_H

#include "harness.h"
#include "../src/models/lm.h"

extern const char *const k_models[];
#define N_MODELS ((size_t)5)
/* Block-type weights on CPU panels multiply x quantized to int16 per 32 (kernels/linear_int.cl:
 * decoding steps, and from 3 rows Q8_0 and Q4_0 where the device has AVX512-VNNI): each such
 * product is within sum |w| max|x_32| / 65534 of the float one (test_dtypes), and an ulp's
 * difference upstream (another path, another order of a sum) can move an element of x across a
 * rounding step. Through a model's layers that comes to about 1e-4 of the largest logit, so
 * comparisons of quantized models across paths allow 3e-4 of the largest logit. */
#define QUANT_TOL 3e-4

typedef struct ref {
    int32_t ids[2 * 9], prompt0[9], prompt1[5], greedy0[20], greedy1[20];
    float *logits; /* (2, 9, V) */
    double scale;  /* largest |logit| */
} ref;

/* tests/data/lm/<name> into out. */
void model_dir(const char *name, char *out, size_t size);
/* The reference of model name (V its vocabulary); free r->logits. */
void load_ref(const char *name, int64_t V, ref *r);
/* The same from a reference file at path (tools/make_lm_gguf_refs.py writes them so). */
void load_ref_file(const char *path, int64_t V, ref *r);
/* The folder's model, loaded with the defaults on g_ctx, and its info. */
clf_lm *load_model(const char *name, clf_lm_info *info);
/* got (n) against want (n) (float64 values stored as F32): within tol (relative) of the largest.
 * Returns the worst error relative to the largest logit. */
double check_logits_tol(const char *what, const char *model, const float *got, const float *want,
                        int64_t n, double scale, double tol);
/* The bound of the F32 tests: 1e-4 of the largest logit. */
double check_logits(const char *what, const char *model, const float *got, const float *want,
                    int64_t n, double scale);
/* 20 greedy ids after each of r's two prompts equal to r's: with eos < 0 eos is ignored and all
 * 20 come; else generation stops at eos (not emitted: -1 past the end). */
void check_ref_greedy(const char *name, clf_lm *m, const ref *r, int32_t eos);
/* (b, t) I32 ids on the device. */
clf_tensor *ids_tensor(int64_t b, int64_t t, const int32_t *data);

#endif
