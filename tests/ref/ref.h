/*
 * ref.h — plain C references in double precision for clformer's kernels. Inputs are float (as
 * the device sees them), every intermediate is double, outputs are double.
 */
#ifndef CLF_TEST_REF_H
#define CLF_TEST_REF_H

#include <stdint.h>

/* Softmax over rows of n with a visible prefix per row: lim[r] in 0..n (0: all zeros). */
void ref_softmax(const float *x, double *y, int64_t rows, int64_t n, const int64_t *lim);
/* The first visible key with a sliding window of the last `window` keys of 0..lim-1 (0: none). */
int64_t ref_first_key(int64_t lim, int64_t window);
/* The same softmax over keys ref_first_key(lim[r], window) .. lim[r] - 1 of each row. */
void ref_softmax_window(const float *x, double *y, int64_t rows, int64_t n, const int64_t *lim,
                        int64_t window);

/* Visible prefix of each row for scores (B, ..., nq, n): valid lens per batch (lens_ndim 1) or
 * per (batch, query) (lens_ndim 2), or none (lens == NULL); causal with offset if causal. */
void ref_mask_limits(int64_t rows, int64_t n, int64_t batch, int64_t nq, const int32_t *lens,
                     int lens_ndim, int causal, int64_t offset, int64_t *lim);

/* LayerNorm of x (+ res if res != NULL) over rows of n, biased variance. */
void ref_layernorm(const float *x, const float *res, const float *gamma, const float *beta,
                   double eps, double *y, int64_t rows, int64_t n);

/* RMSNorm of x (+ res if res != NULL) over rows of n: z / sqrt(mean(z^2) + eps) * gamma. */
void ref_rmsnorm(const float *x, const float *res, const float *gamma, double eps, double *y,
                 int64_t rows, int64_t n);

/* The seeds' sinusoidal table entry P[pos, col] for width d. */
double ref_posenc(int64_t pos, int64_t col, int64_t d);

/* act(x + bias), act as clf_activation (0 identity, 1 relu, 2 gelu erf, 3 gelu tanh, 4 silu). */
double ref_act(double v, int act);

/* C = alpha op(A) op(B) + beta C for one row-major matrix each (lda, ldb, ldc row strides);
 * also writes mag[i, j] = sum_k |op(A)[i,k] op(B)[k,j]| for error bounds (mag may be NULL). */
void ref_gemm(int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha, const float *a,
              int64_t lda, const float *b, int64_t ldb, double beta, const float *c0, double *c,
              int64_t ldc, double *mag);

#endif
