/* ref.c — see ref.h. Written for clarity, not speed. */
#include "ref.h"

#include <math.h>

void ref_mask_limits(int64_t rows, int64_t n, int64_t batch, int64_t nq, const int32_t *lens,
                     int lens_ndim, int causal, int64_t offset, int64_t *lim) {
    int64_t rows_per_batch = rows / batch;
    for (int64_t r = 0; r < rows; r++) {
        int64_t b = r / rows_per_batch, q = r % nq, l = n;
        if (lens && lens_ndim == 1 && lens[b] < l) l = lens[b];
        if (lens && lens_ndim == 2 && lens[b * nq + q] < l) l = lens[b * nq + q];
        if (causal && q + offset + 1 < l) l = q + offset + 1;
        lim[r] = l < 0 ? 0 : l;
    }
}

void ref_softmax(const float *x, double *y, int64_t rows, int64_t n, const int64_t *lim) {
    ref_softmax_window(x, y, rows, n, lim, 0);
}

int64_t ref_first_key(int64_t lim, int64_t window) {
    return window > 0 && lim > window ? lim - window : 0;
}

void ref_softmax_window(const float *x, double *y, int64_t rows, int64_t n, const int64_t *lim,
                        int64_t window) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * n;
        double *yr = y + r * n;
        const int64_t l = lim ? lim[r] : n, lo = ref_first_key(l, window);
        double m = -INFINITY, s = 0.0;
        for (int64_t i = lo; i < l; i++)
            m = fmax(m, (double)xr[i]);
        for (int64_t i = lo; i < l; i++)
            s += exp((double)xr[i] - m);
        for (int64_t i = 0; i < n; i++)
            yr[i] = i < l && i >= lo ? exp((double)xr[i] - m) / s : 0.0;
    }
}

void ref_layernorm(const float *x, const float *res, const float *gamma, const float *beta,
                   double eps, double *y, int64_t rows, int64_t n) {
    for (int64_t r = 0; r < rows; r++) {
        double mean = 0.0, var = 0.0;
        for (int64_t i = 0; i < n; i++)
            mean += (double)x[r * n + i] + (res ? (double)res[r * n + i] : 0.0);
        mean /= (double)n;
        for (int64_t i = 0; i < n; i++) {
            double d = (double)x[r * n + i] + (res ? (double)res[r * n + i] : 0.0) - mean;
            var += d * d;
        }
        var /= (double)n;
        for (int64_t i = 0; i < n; i++) {
            double z = (double)x[r * n + i] + (res ? (double)res[r * n + i] : 0.0);
            y[r * n + i] = (z - mean) / sqrt(var + eps) * gamma[i] + beta[i];
        }
    }
}

double ref_posenc(int64_t pos, int64_t col, int64_t d) {
    double angle = (double)pos / pow(10000.0, (double)(col / 2 * 2) / (double)d);
    return (col % 2 == 0) ? sin(angle) : cos(angle);
}

double ref_act(double v, int act) {
    switch (act) {
    case 1:
        return v > 0 ? v : 0;
    case 2:
        return 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
    case 3:
        return 0.5 * v * (1.0 + tanh(sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
    case 4:
        return v / (1.0 + exp(-v));
    default:
        return v;
    }
}

void ref_gemm(int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha, const float *a,
              int64_t lda, const float *b, int64_t ldb, double beta, const float *c0, double *c,
              int64_t ldc, double *mag) {
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0.0, g = 0.0;
            for (int64_t q = 0; q < k; q++) {
                double x = ta ? a[q * lda + i] : a[i * lda + q];
                double y = tb ? b[j * ldb + q] : b[q * ldb + j];
                s += x * y;
                g += fabs(x * y);
            }
            double prev = (beta != 0.0 && c0) ? (double)c0[i * ldc + j] : 0.0;
            c[i * ldc + j] = alpha * s + beta * prev;
            if (mag) mag[i * ldc + j] = fabs(alpha) * g + fabs(beta * prev);
        }
}

void ref_rmsnorm(const float *x, const float *res, const float *gamma, double eps, double *y,
                 int64_t rows, int64_t n) {
    for (int64_t r = 0; r < rows; r++) {
        double ss = 0.0;
        for (int64_t i = 0; i < n; i++) {
            double z = (double)x[r * n + i] + (res ? (double)res[r * n + i] : 0.0);
            ss += z * z;
        }
        const double rstd = 1.0 / sqrt(ss / (double)n + eps);
        for (int64_t i = 0; i < n; i++) {
            double z = (double)x[r * n + i] + (res ? (double)res[r * n + i] : 0.0);
            y[r * n + i] = z * rstd * (double)gamma[i];
        }
    }
}
