/*
 * test_dtypes.c — the storage types (include/clformer/dtypes.def, src/dtype.c, kernels/dtypes.cl):
 * the type table; clf_quantize and clf_dequantize bit for bit against the gguf package
 * (tests/data/quant/, tools/make_quant_fixtures.py); block-type tensors; and clf_linear with
 * weights of every type (F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K) in every style of its kernels
 * (linear_rows, linear_tiled, prepared weights), three of them under work-group caps; the
 * embedding gather from a table of every type.
 *
 * Error bound of the linear layers, per element: the kernels compute in fp32 on the dequantized
 * weights, so against the double reference on those same weights (clf_dequantize: exact, the
 * kernels' scale products are one fp32 rounding each, (d sc) q - dmin m being two) the bound of
 * test_linear.c, (in + 4) 2^-24 sum |x w| (+ |b|) through the activation, plus 3 2^-24 sum |x w|
 * for the dequantizing (at most three roundings per weight, relative to it).
 */
#include "harness.h"
#include "ref/ref.h"
#include "../src/internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- host: the table */

static void test_table(void **state) {
    (void)state;
    static const struct {
        clf_dtype t;
        const char *name;
        int64_t block;
        size_t bytes;
    } want[] = {{CLF_F32, "F32", 1, 4},       {CLF_F16, "F16", 1, 2},
                {CLF_I32, "I32", 1, 4},       {CLF_BF16, "BF16", 1, 2},
                {CLF_Q8_0, "Q8_0", 32, 34},   {CLF_Q4_0, "Q4_0", 32, 18},
                {CLF_Q4_K, "Q4_K", 256, 144}, {CLF_Q6_K, "Q6_K", 256, 210}};
    assert_int_equal(clf__dtype_count, sizeof(want) / sizeof(want[0]));
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        assert_string_equal(clf_dtype_name(want[i].t), want[i].name);
        assert_int_equal(clf_dtype_block(want[i].t), want[i].block);
        assert_int_equal(clf_dtype_block_bytes(want[i].t), want[i].bytes);
        assert_int_equal(clf_dtype_size(want[i].t), want[i].block == 1 ? want[i].bytes : 0);
        assert_int_equal(clf_dtype_row_bytes(want[i].t, want[i].block * 3), want[i].bytes * 3);
        if (want[i].block > 1) assert_int_equal(clf_dtype_row_bytes(want[i].t, 16), 0);
        assert_ptr_equal(clf__dtype_from_gguf(clf__dtype(want[i].t)->gguf), clf__dtype(want[i].t));
    }
    assert_null(clf_dtype_name((clf_dtype)99));
    assert_int_equal(clf_dtype_block((clf_dtype)-1), 0);
    assert_int_equal(clf_dtype_row_bytes(CLF_Q8_0, -32), 0);
    assert_null(clf__dtype_from_gguf(3)); /* Q4_1: not (yet) a clformer type */
    assert_null(clf__dtype_from_gguf(-1));
}

/* ---------------------------------------------------------------- host: against gguf */

/* A fixture file of tests/data/quant/, malloc'ed, its size in *n. */
static void *fixture(const char *name, size_t *n) {
    char path[1024];
    snprintf(path, sizeof(path), "%s/tests/data/quant/%s", CLF_SRC, name);
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    const long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *p = malloc(size > 0 ? (size_t)size : 1);
    assert_non_null(p);
    assert_int_equal(fread(p, 1, (size_t)size, f), (size_t)size);
    fclose(f);
    *n = (size_t)size;
    return p;
}

static void test_matches_gguf(void **state) {
    (void)state;
    static const struct {
        clf_dtype t;
        const char *stem;
    } types[] = {{CLF_Q8_0, "q8_0"}, {CLF_Q4_0, "q4_0"}, {CLF_Q4_K, "q4_k"}, {CLF_Q6_K, "q6_k"}};
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        char name[64];
        size_t nb, nd;
        snprintf(name, sizeof(name), "%s.bin", types[i].stem);
        unsigned char *blocks = fixture(name, &nb);
        snprintf(name, sizeof(name), "%s_deq.f32", types[i].stem);
        float *deq = fixture(name, &nd);
        const int64_t n = (int64_t)(nd / 4);
        assert_int_equal(clf_dtype_row_bytes(types[i].t, n), nb);
        float *got = malloc(nd);
        clf_error e;
        assert_int_equal(clf_dequantize(types[i].t, blocks, nb, got, n, &e), CLF_SUCCESS);
        for (int64_t j = 0; j < n; j++) /* bit for bit (the same fp32 operations) */
            if (memcmp(&got[j], &deq[j], 4) != 0)
                fail_msg("%s dequantized [%lld]: %.9g, gguf %.9g", types[i].stem, (long long)j,
                         (double)got[j], (double)deq[j]);
        if (types[i].t == CLF_Q8_0 || types[i].t == CLF_Q4_0) {
            size_t ns;
            snprintf(name, sizeof(name), "%s_src.f32", types[i].stem);
            float *src = fixture(name, &ns);
            assert_int_equal(ns / 4, (size_t)n);
            unsigned char *q = malloc(nb);
            assert_int_equal(clf_quantize(types[i].t, src, n, q, nb, &e), CLF_SUCCESS);
            for (size_t j = 0; j < nb; j++)
                if (q[j] != blocks[j])
                    fail_msg("%s quantized: byte %zu (block %zu) is %u, gguf %u", types[i].stem, j,
                             j / clf_dtype_block_bytes(types[i].t), q[j], blocks[j]);
            free(q);
            free(src);
        }
        free(got);
        free(deq);
        free(blocks);
    }
}

static void test_convert_errors(void **state) {
    (void)state;
    float x[64] = {0};
    unsigned char b[68];
    clf_error e;
    assert_int_equal(clf_quantize(CLF_Q8_0, NULL, 32, b, 34, &e), CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_quantize(CLF_Q8_0, x, 32, NULL, 34, &e), CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_quantize((clf_dtype)42, x, 32, b, 34, &e), CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_quantize(CLF_Q8_0, x, 32, b, 33, &e), CLF_ERROR_SHAPE_MISMATCH);
    assert_non_null(strstr(e.message, "34 bytes"));
    assert_int_equal(clf_quantize(CLF_Q8_0, x, 31, b, 34, &e), CLF_ERROR_SHAPE_MISMATCH);
    x[40] = NAN;
    memset(b, 0x5a, sizeof(b));
    assert_int_equal(clf_quantize(CLF_Q4_0, x, 64, b, 36, &e), CLF_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(e.message, "element 40"));
    for (size_t i = 0; i < sizeof(b); i++) /* nothing written */
        assert_int_equal(b[i], 0x5a);
    x[40] = 0.0f;
    unsigned char big[144];
    float y[256] = {0};
    assert_int_equal(clf_quantize(CLF_I32, y, 1, big, 4, &e), CLF_ERROR_UNSUPPORTED);
    assert_non_null(strstr(e.message, "I32"));
    assert_int_equal(clf_dequantize(CLF_I32, b, 4, y, 1, &e), CLF_ERROR_UNSUPPORTED);
    assert_int_equal(clf_dequantize(CLF_Q6_K, big, 144, y, 256, &e), CLF_ERROR_SHAPE_MISMATCH);
    assert_int_equal(clf_quantize(CLF_BF16, x, 2, b, 4, NULL), CLF_SUCCESS); /* err optional */
}

/* Q4_K and Q6_K quantized by clf_quantize's plain fit, dequantized (bit for bit as gguf, above):
 * every element within half a step of its value. Bound per sub-block (Q4_K: 32 elements of
 * range R_s = max(x, 0) - min(x, 0), B the largest R_s of the block; Q6_K: 16 elements of
 * largest magnitude A_s, A the block's): the step is R_s / 15 (A_s / 31) plus at most one unit
 * of the 6-bit (8-bit) scale grid, B / 945 (A / 3937), and of the min grid (Q4_K), so
 * |x - y| <= R_s / 30 + 1.1 B / 945 (A_s / 62 + 0.51 A / 3937), plus 1e-6 of the block's range
 * for fp32 rounding. Blocks of mixed scales, one sign, zeros, one spike, tiny values. */
static void test_quantize_k(void **state) {
    (void)state;
    rng_seed(17);
    enum { NB = 24, N = 256 * NB };
    float *x = malloc(sizeof(float) * N), *y = malloc(sizeof(float) * N);
    unsigned char *q = malloc(210 * NB);
    for (int b = 0; b < NB; b++)
        for (int i = 0; i < 256; i++) {
            const float sub = (float)rng_uniform(0.01, 3.0) * (float)(1 + (i / 16) % 5);
            float v = (float)rng_uniform(-1.0, 1.0) * sub;
            /* 1 all positive, none near 0; 2 all negative, large; 3 half zeros; 4 a spike;
             * 5 tiny: scales near fp16's subnormals */
            switch (b % 6) {
            case 1:
                v = fabsf(v) + 0.5f;
                break;
            case 2:
                v = -fabsf(v) * 100.0f;
                break;
            case 3:
                v = i < 128 ? 0.0f : v;
                break;
            case 4:
                v = i == 77 ? 1000.0f : v;
                break;
            case 5:
                v *= 1e-4f;
                break;
            default:
                break;
            }
            x[256 * b + i] = v;
        }
    static const struct {
        clf_dtype t;
        int sub;
    } types[] = {{CLF_Q4_K, 32}, {CLF_Q6_K, 16}};
    for (int k = 0; k < 2; k++) {
        const clf_dtype t = types[k].t;
        const int sub = types[k].sub;
        const size_t nb = clf_dtype_row_bytes(t, N);
        memset(y, 0xff, sizeof(float) * N); /* NaN poison */
        assert_int_equal(clf_quantize(t, x, N, q, nb, NULL), CLF_SUCCESS);
        assert_int_equal(clf_dequantize(t, q, nb, y, N, NULL), CLF_SUCCESS);
        double worst = 0.0;
        for (int b = 0; b < NB; b++) {
            double big = 0.0;
            for (int s = 0; s < 256 / sub; s++) {
                double lo = 0.0, hi = 0.0;
                for (int l = 0; l < sub; l++) {
                    lo = fmin(lo, x[256 * b + sub * s + l]);
                    hi = fmax(hi, x[256 * b + sub * s + l]);
                }
                big = fmax(big, t == CLF_Q4_K ? hi - lo : fmax(hi, -lo));
            }
            for (int s = 0; s < 256 / sub; s++) {
                double lo = 0.0, hi = 0.0;
                for (int l = 0; l < sub; l++) {
                    lo = fmin(lo, x[256 * b + sub * s + l]);
                    hi = fmax(hi, x[256 * b + sub * s + l]);
                }
                const double bound = t == CLF_Q4_K
                                         ? (hi - lo) / 30.0 + 1.1 * big / 945.0 + 1e-6 * big
                                         : fmax(hi, -lo) / 62.0 + 0.51 * big / 3937.0 + 1e-6 * big;
                for (int l = 0; l < sub; l++) {
                    const int i = 256 * b + sub * s + l;
                    const double err = fabs((double)y[i] - (double)x[i]);
                    if (!(err <= bound))
                        fail_msg("%s block %d [%d]: %.9g for %.9g, error %.3g > bound %.3g",
                                 clf_dtype_name(t), b, sub * s + l, (double)y[i], (double)x[i], err,
                                 bound);
                    worst = fmax(worst, err / bound);
                }
            }
        }
        print_message("%s: worst error %.3f of the bound\n", clf_dtype_name(t), worst);
    }
    free(q);
    free(y);
    free(x);
}

/* ---------------------------------------------------------------- device: tensors */

static void test_block_tensors(void **state) {
    (void)state;
    clf_tensor *t = NULL;
    const int64_t bad[2] = {3, 48}, good[2] = {3, 64};
    assert_int_equal(clf_tensor_create(g_ctx, CLF_Q8_0, 2, bad, &t), CLF_ERROR_SHAPE_MISMATCH);
    assert_null(t);
    assert_non_null(strstr(clf_context_last_error(g_ctx), "multiple of its block of 32"));
    CLF_OK(clf_tensor_create(g_ctx, CLF_Q4_0, 2, good, &t));
    assert_int_equal(clf_tensor_bytes(t), 3 * 2 * 18);
    assert_int_equal(clf_tensor_numel(t), 3 * 64);
    assert_int_equal(clf_tensor_fill(t, 1.0), CLF_ERROR_UNSUPPORTED);
    rng_seed(7);
    float *x = rng_floats(3 * 64), *back = malloc(sizeof(float) * 3 * 64),
          *want = malloc(sizeof(float) * 3 * 64);
    unsigned char q[3 * 2 * 18];
    CLF_OK(clf_tensor_write_f32(t, x, 3 * 64));
    CLF_OK(clf_tensor_read_f32(t, back, 3 * 64));
    assert_int_equal(clf_quantize(CLF_Q4_0, x, 3 * 64, q, sizeof(q), NULL), CLF_SUCCESS);
    assert_int_equal(clf_dequantize(CLF_Q4_0, q, sizeof(q), want, 3 * 64, NULL), CLF_SUCCESS);
    assert_memory_equal(back, want, sizeof(float) * 3 * 64);
    const int64_t reshaped[2] = {6, 32}, wrong[2] = {12, 16};
    CLF_OK(clf_tensor_reshape(t, 2, reshaped));
    assert_int_equal(clf_tensor_reshape(t, 2, wrong), CLF_ERROR_SHAPE_MISMATCH);
    clf_tensor_free(t);
    /* BF16: a plain type, filled and read like F16 */
    CLF_OK(clf_tensor_create(g_ctx, CLF_BF16, 2, good, &t));
    CLF_OK(clf_tensor_fill(t, -1.5));
    CLF_OK(clf_tensor_read_f32(t, back, 3 * 64));
    for (int i = 0; i < 3 * 64; i++)
        assert_true(back[i] == -1.5f);
    clf_tensor_free(t);
    free(x);
    free(back);
    free(want);
}

/* ---------------------------------------------------------------- device: linear layers */

/* Random weights of type t as stored bytes: floats quantized (plain types, Q8_0, Q4_0), or, for
 * the K-quants, random quants and scales with scales of a sane size. */
static unsigned char *random_weights(clf_dtype t, int64_t out, int64_t in, size_t *bytes) {
    const size_t rb = clf_dtype_row_bytes(t, in);
    *bytes = rb * (size_t)out;
    unsigned char *w = malloc(*bytes);
    assert_non_null(w);
    if (t != CLF_Q4_K && t != CLF_Q6_K) {
        float *f = rng_floats(out * in);
        assert_int_equal(clf_quantize(t, f, out * in, w, *bytes, NULL), CLF_SUCCESS);
        free(f);
        return w;
    }
    for (size_t i = 0; i < *bytes; i++)
        w[i] = (unsigned char)rng_int(0, 255);
    const size_t bb = clf_dtype_block_bytes(t);
    for (size_t b = 0; b < *bytes / bb; b++) { /* d (and dmin) in [-1/64, 1/64] */
        unsigned char *blk = w + b * bb;
        const int nscale = t == CLF_Q4_K ? 2 : 1;
        for (int s = 0; s < nscale; s++) {
            const uint16_t h = clf_f32_to_f16((float)rng_uniform(-1.0 / 64, 1.0 / 64));
            unsigned char *p = t == CLF_Q4_K ? blk + 2 * s : blk + 208;
            p[0] = (unsigned char)(h & 0xff);
            p[1] = (unsigned char)(h >> 8);
        }
    }
    return w;
}

static clf_dtype g_type;
static int g_prepared; /* 1: through clf_linear_prepare / clf_linear_apply */
static int g_qx8;      /* 1: linear.QX 2 is set (int8 x for Q4_0, Q4_K, Q6_K) */

/* clf_linear on x (rows, in) with weights of g_type against the double reference on the
 * dequantized weights: identity and GELU, with and without bias. */
static void typed_case(int64_t rows, int64_t in, int64_t out) {
    int64_t xs[2] = {rows, in}, ws[2] = {out, in}, ys[2] = {rows, out};
    size_t wbytes;
    unsigned char *wq = random_weights(g_type, out, in, &wbytes);
    float *x = rng_floats(rows * in), *b = rng_floats(out), *w = malloc(sizeof(float) * out * in);
    assert_int_equal(clf_dequantize(g_type, wq, wbytes, w, out * in, NULL), CLF_SUCCESS);
    double *lin = malloc(sizeof(double) * (size_t)(rows * out)),
           *mag = malloc(sizeof(double) * (size_t)(rows * out));
    ref_gemm(0, 1, rows, out, in, 1.0, x, in, w, in, 0.0, NULL, lin, out, mag);
    /* Block types at few rows on CPUs (linear.cl, pairs_group) take x quantized per 32 to
     * int16, each element within half a step dx / 2 = max|x_32| / 65534 of x: the bound adds
     * sum_k |w[j, k]| max|x_32(k)| / 65534 (every path of these types is held to it); with
     * linear.QX 2, int8 for the types of at most 6 bits: max|x_32| / 254. */
    const double xstep = g_qx8 && g_type != CLF_Q8_0 ? 254.0 : 65534.0;
    double *xq = calloc((size_t)(rows * out), sizeof(double));
    if (clf_dtype_block(g_type) > 1)
        for (int64_t r = 0; r < rows; r++)
            for (int64_t k0 = 0; k0 < in; k0 += 32) {
                double amax = 0.0;
                for (int64_t k = k0; k < k0 + 32; k++)
                    amax = fmax(amax, fabs((double)x[r * in + k]));
                for (int64_t j = 0; j < out; j++)
                    for (int64_t k = k0; k < k0 + 32; k++)
                        xq[r * out + j] += fabs((double)w[j * in + k]) * amax / xstep;
            }
    clf_tensor *tx = tensor_from(CLF_F32, 2, xs, x), *tb = tensor_from(CLF_F32, 1, &out, b);
    clf_tensor *tw = NULL;
    CLF_OK(clf_tensor_create(g_ctx, g_type, 2, ws, &tw));
    CLF_OK(clf_tensor_write(tw, wq, wbytes));
    clf_linear_weights *lw = NULL;
    if (g_prepared) {
        CLF_OK(clf_linear_prepare(g_ctx, tw, &lw));
        clf_tensor_free(tw);
        tw = NULL;
    }
    static const int acts[2] = {CLF_ACT_IDENTITY, CLF_ACT_GELU_ERF};
    for (int a = 0; a < 2; a++)
        for (int with_bias = 0; with_bias <= 1; with_bias++) {
            clf_tensor *ty = tensor_poisoned(CLF_F32, 2, ys);
            const clf_tensor *bias = with_bias ? tb : NULL;
            if (lw)
                CLF_OK(clf_linear_apply(g_ctx, tx, lw, bias, (clf_activation)acts[a], ty));
            else
                CLF_OK(clf_linear(g_ctx, tx, tw, bias, (clf_activation)acts[a], ty));
            float *got = tensor_to_host(ty);
            for (int64_t r = 0; r < rows; r++)
                for (int64_t j = 0; j < out; j++) {
                    const double v = lin[r * out + j] + (with_bias ? b[j] : 0.0);
                    const double want = ref_act(v, acts[a]);
                    const double m = mag[r * out + j];
                    const double tol = 1.13 * ((double)(in + 4 + 3) * 0x1p-24 * (m + fabs(b[j])) +
                                               1e-30 + xq[r * out + j]) +
                                       1e-7 + 4.76837158203125e-7 * (fabs(want) + fabs(v));
                    const double g = (double)got[r * out + j];
                    if (!(fabs(g - want) <= tol))
                        fail_msg("linear %s (%lld x %lld -> %lld) act %d bias %d [%lld, %lld]: got "
                                 "%.9g want %.9g (tol %.3g)",
                                 clf_dtype_name(g_type), (long long)rows, (long long)in,
                                 (long long)out, acts[a], with_bias, (long long)r, (long long)j, g,
                                 want, tol);
                }
            free(got);
            clf_tensor_free(ty);
        }
    free(wq);
    free(x);
    free(b);
    free(w);
    free(lin);
    free(mag);
    free(xq);
    clf_tensor_free(tx);
    clf_tensor_free(tb);
    clf_tensor_free(tw);
    clf_linear_weights_free(lw);
}

static const clf_dtype k_weight_types[] = {CLF_F16,  CLF_BF16, CLF_Q8_0,
                                           CLF_Q4_0, CLF_Q4_K, CLF_Q6_K};
#define N_WEIGHT_TYPES (sizeof(k_weight_types) / sizeof(k_weight_types[0]))

/* Shapes per type: one row, odd rows, rows past a block of linear_rows; rows of 1, 3 and 9
 * blocks (k not a multiple of 256 where the block is 32), outputs 1 and odd. Level 0 all of
 * them, 1 fewer, 2 (the simulator's) one row count past one and one width. */
static void typed_shapes(int level) {
    const int64_t b = clf_dtype_block(g_type) > 1 ? clf_dtype_block(g_type) : 32;
    const int plain = g_type == CLF_F16 || g_type == CLF_BF16;
    const int64_t ins[3] = {b, (b == 32 ? 9 : 3) * b, b == 32 ? 3 * b + (plain ? 5 : 0) : 2 * b};
    const int64_t rows_big[4] = {1, 3, 9, 40}, rows_small[2] = {1, 5};
    const int64_t outs[2] = {19, 1};
    const int64_t *rows = level ? rows_small : rows_big;
    const int nr = level ? 2 : 4, ni = level == 0 ? 3 : level == 1 ? 2 : 1, no = level == 2 ? 1 : 2;
    for (int r = 0; r < nr; r++)
        for (int i = 0; i < ni; i++)
            for (int o = 0; o < no; o++)
                typed_case(rows[r], ins[level == 2 && plain ? 2 : i], outs[o]);
}

/* typed_shapes at linear.QX 1 then 2 (x in int16, then int8 for the types of at most 6 bits),
 * restoring QX to qx. */
static void typed_shapes_qx(int level, int64_t qx) {
    for (int q = 1; q <= 2; q++) {
        CLF_OK(clf_context_set_tunable(g_ctx, "linear.QX", q));
        g_qx8 = q == 2;
        typed_shapes(level);
    }
    g_qx8 = 0;
    CLF_OK(clf_context_set_tunable(g_ctx, "linear.QX", qx));
}

/* The same kernels' fusions (clf_lin_fuse: a decoding Llama block's): y = y0 + W (x rs g), x the
 * norm's input, rs = 1 / sqrt(mean(x^2) + eps), against the double reference on the dequantized
 * weights. The bound is typed_case's on the normalized x, plus the float norm's own rounding
 * (the sum of squares, rsqrt's 2 ulp, two products: (in / 2 + 6) 2^-24 relative) and the add. */
static void typed_fused_case(int64_t rows, int64_t in, int64_t out) {
    int64_t xs[2] = {rows, in}, ws[2] = {out, in}, ys[2] = {rows, out};
    size_t wbytes;
    unsigned char *wq = random_weights(g_type, out, in, &wbytes);
    float *x = rng_floats(rows * in), *g = rng_floats(in), *y0 = rng_floats(rows * out),
          *w = malloc(sizeof(float) * out * in);
    const float eps = 1e-5f;
    assert_int_equal(clf_dequantize(g_type, wq, wbytes, w, out * in, NULL), CLF_SUCCESS);
    double *xn = malloc(sizeof(double) * (size_t)(rows * in));
    float *xnf = malloc(sizeof(float) * (size_t)(rows * in));
    for (int64_t r = 0; r < rows; r++) {
        double s2 = 0.0;
        for (int64_t k = 0; k < in; k++)
            s2 += (double)x[r * in + k] * x[r * in + k];
        const double rs = 1.0 / sqrt(s2 / (double)in + eps);
        for (int64_t k = 0; k < in; k++) {
            xn[r * in + k] = x[r * in + k] * rs * g[k];
            xnf[r * in + k] = (float)xn[r * in + k];
        }
    }
    const double xstep = g_qx8 && g_type != CLF_Q8_0 ? 254.0 : 65534.0;
    clf_tensor *tx = tensor_from(CLF_F32, 2, xs, x), *tg = tensor_from(CLF_F32, 1, &in, g);
    clf_tensor *tw = NULL, *tp = NULL;
    CLF_OK(clf_tensor_create(g_ctx, g_type, 2, ws, &tw));
    CLF_OK(clf_tensor_write(tw, wq, wbytes));
    CLF_OK(clf__linear_pack(g_ctx, tw, &tp));
    assert_true(clf__linear_fuses(g_ctx, tp, rows));
    for (int acc = 0; acc <= 1; acc++) {
        clf_tensor *ty = acc ? tensor_from(CLF_F32, 2, ys, y0) : tensor_poisoned(CLF_F32, 2, ys);
        const clf_lin_fuse f = {tg, eps, acc};
        CLF_OK(clf__linear_packed(g_ctx, tx, tp, out, NULL, CLF_ACT_IDENTITY, ty, &f));
        float *got = tensor_to_host(ty);
        for (int64_t r = 0; r < rows; r++)
            for (int64_t j = 0; j < out; j++) {
                double want = acc ? y0[r * out + j] : 0.0, mag = 0.0, xq = 0.0;
                for (int64_t k = 0; k < in; k++) {
                    want += xn[r * in + k] * w[j * in + k];
                    mag += fabs(xn[r * in + k] * w[j * in + k]);
                }
                for (int64_t k0 = 0; k0 < in; k0 += 32) {
                    double amax = 0.0, sw = 0.0;
                    for (int64_t k = k0; k < k0 + 32; k++) {
                        amax = fmax(amax, fabs((double)xnf[r * in + k]));
                        sw += fabs((double)w[j * in + k]);
                    }
                    xq += sw * amax / xstep;
                }
                const double tol =
                    1.13 * ((double)(in + 7 + in / 2 + 6) * 0x1p-24 * mag + xq) + 1e-7 +
                    4.76837158203125e-7 * (fabs(want) + (acc ? fabs(y0[r * out + j]) : 0.0));
                const double gv = (double)got[r * out + j];
                if (!(fabs(gv - want) <= tol))
                    fail_msg("fused linear %s (%lld x %lld -> %lld) acc %d [%lld, %lld]: got %.9g "
                             "want %.9g (tol %.3g)",
                             clf_dtype_name(g_type), (long long)rows, (long long)in, (long long)out,
                             acc, (long long)r, (long long)j, gv, want, tol);
            }
        free(got);
        clf_tensor_free(ty);
    }
    free(wq);
    free(x);
    free(g);
    free(y0);
    free(w);
    free(xn);
    free(xnf);
    clf_tensor_free(tx);
    clf_tensor_free(tg);
    clf_tensor_free(tw);
    clf_tensor_free(tp);
}

/* Block types at one and two rows with x quantized once per work-group (linear_packed_lq1, _2):
 * groups of 4 panels (linear.LQ_MIN 0: whatever the outputs), x in int16 and int8, outputs
 * over one panel and over several groups with the last one partial, alone and with the fused norm
 * and add, restoring the tunables. all 0 (the devices whose defaults do not pack: rusticl,
 * Oclgrind, whose compilers take long over these kernels): int16 x at one row, int8 x at two. */
static void typed_lq(int level, int all) {
    static const char *names[] = {"linear.LQ_WG", "linear.LQ_MIN", "linear.QX"};
    int64_t saved[3];
    for (int i = 0; i < 3; i++)
        CLF_OK(clf_context_get_tunable(g_ctx, names[i], &saved[i]));
    const int64_t b = clf_dtype_block(g_type), in = b == 32 ? 3 * b : 2 * b;
    static const int64_t outs[2] = {77, 19};
    CLF_OK(clf_context_set_tunable(g_ctx, "linear.LQ_MIN", 0));
    CLF_OK(clf_context_set_tunable(g_ctx, "linear.LQ_WG", 4));
    for (int q = 1; q <= 2; q++) {
        CLF_OK(clf_context_set_tunable(g_ctx, "linear.QX", q));
        g_qx8 = q == 2;
        for (int64_t rows = 1; rows <= 2; rows++)
            for (int o = 0; o < (level == 2 ? 1 : 2) && (all || rows == q); o++) {
                typed_case(rows, in, outs[o]);
                typed_fused_case(rows, in, outs[o]);
            }
    }
    g_qx8 = 0;
    for (int i = 0; i < 3; i++)
        CLF_OK(clf_context_set_tunable(g_ctx, names[i], saved[i]));
}

/* Every type through linear_rows in four tunable styles (SK_ROWS, SK_OPI, SK_LW, VW, SK_GM:
 * the device's, a GPU's, an odd one with scalar loads, and vectors of 16 with work-items
 * sharing a row: block types' chunk path, dt_chunk32, on every device), then linear_tiled, then
 * prepared weights with the device's defaults (packed panels on CPUs) and, for block types,
 * packed at the CPU width the defaults do not take in an odd style, and dequantized into F32
 * panels for many rows (linear.DQ_ROWS) in that style and the defaults. */
static void typed_styles_of(int level, const clf_dtype *types, size_t n_types) {
    static const int64_t styles[4][5] = {
        {0, 0, 0, 0, 0}, {4, 1, 64, 4, 8}, {3, 3, 2, 1, 3}, {2, 3, 4, 16, 2}};
    static const char *names[] = {"linear.SK_ROWS", "linear.SK_OPI", "linear.SK_LW", "linear.VW",
                                  "linear.SK_GM"};
    int64_t defaults[5], skinny, tiled;
    for (int i = 0; i < 5; i++)
        CLF_OK(clf_context_get_tunable(g_ctx, names[i], &defaults[i]));
    CLF_OK(clf_context_get_tunable(g_ctx, "linear.SKINNY_MAX", &skinny));
    CLF_OK(clf_context_get_tunable(g_ctx, "linear.TILED", &tiled));
    for (size_t t = 0; t < n_types; t++) {
        g_type = types[t];
        CLF_OK(clf_context_set_tunable(g_ctx, "linear.SKINNY_MAX", 1 << 20));
        for (int st = 0; st < 4; st++) {
            for (int i = 0; i < 5; i++)
                CLF_OK(clf_context_set_tunable(g_ctx, names[i], st ? styles[st][i] : defaults[i]));
            typed_shapes(level);
        }
        for (int i = 0; i < 5; i++)
            CLF_OK(clf_context_set_tunable(g_ctx, names[i], defaults[i]));
        /* linear_tiled: every row count takes it */
        CLF_OK(clf_context_set_tunable(g_ctx, "linear.SKINNY_MAX", 0));
        CLF_OK(clf_context_set_tunable(g_ctx, "linear.TILED", 1));
        typed_shapes(level ? 2 : 1);
        CLF_OK(clf_context_set_tunable(g_ctx, "linear.SKINNY_MAX", skinny));
        CLF_OK(clf_context_set_tunable(g_ctx, "linear.TILED", tiled));
        g_prepared = 1;
        typed_shapes(level ? 2 : 1);
        g_prepared = 0;
        if (clf_dtype_block(g_type) == 1) continue; /* plain types' panels: test_linear */
        g_prepared = 1;
        /* Block types' panels on every device (a GPU's defaults do not pack): the CPU width the
         * defaults do not take (8 columns a vector where they take 16, else 16: both on CPUs),
         * one vector a panel, 3 rows a work-item (linear_packed at 3 and more rows; _1, _2).
         * Block types' few rows (pairs_group) so take x86's pmaddwd at both widths on PoCL and
         * the portable integers on rusticl and Oclgrind (SPIR targets), there at 8 columns:
         * the same code as at 16 in half the vector, where llvmpipe's compiler took 5-12 s over
         * each 16-wide kernel (most of this test's time on rusticl). */
        static const char *pk_names[] = {"linear.PACK", "linear.VW", "linear.PK_NV", "linear.PK_R",
                                         "linear.PK_GM"};
        int64_t pk_style[] = {1, 16, 1, 3, 2};
        int64_t pk_defaults[5];
        for (int i = 0; i < 5; i++)
            CLF_OK(clf_context_get_tunable(g_ctx, pk_names[i], &pk_defaults[i]));
        const int packs = pk_defaults[0] && (pk_defaults[1] == 8 || pk_defaults[1] == 16);
        pk_style[1] = pk_defaults[1] == 16 || !packs ? 8 : 16;
        for (int i = 0; i < 5; i++)
            CLF_OK(clf_context_set_tunable(g_ctx, pk_names[i], pk_style[i]));
        typed_shapes(level ? 2 : 1);
        /* the few rows in floats (linear.QX 0) in that style, then in integers with x quantized
         * once per work-group */
        int64_t qx;
        CLF_OK(clf_context_get_tunable(g_ctx, "linear.QX", &qx));
        CLF_OK(clf_context_set_tunable(g_ctx, "linear.QX", 0));
        typed_shapes(level ? 2 : 1);
        CLF_OK(clf_context_set_tunable(g_ctx, "linear.QX", qx));
        typed_lq(level, packs);
        /* Many rows in integers too (linear.QROWS 3: quantize_x, then linear_packed_xq at
         * 3 rows and more), x in int16 and, with linear.QX 2, in int8 for the few rows and the
         * many: x86's pmaddwd and pmaddubsw at the width these take on PoCL, the portable
         * integers on SPIR targets. */
        int64_t qrows;
        CLF_OK(clf_context_get_tunable(g_ctx, "linear.QROWS", &qrows));
        CLF_OK(clf_context_set_tunable(g_ctx, "linear.QROWS", 3));
        typed_shapes_qx(level ? 2 : 1, qx);
        CLF_OK(clf_context_set_tunable(g_ctx, "linear.QROWS", qrows));
        /* The panels dequantized once into F32 panels (unpack_blocks, then the F32 program's
         * linear_packed) from 2 rows on, in that style and the defaults: rows 3, 5 and 9 take
         * it, one row keeps the registers' path. */
        int64_t dq;
        CLF_OK(clf_context_get_tunable(g_ctx, "linear.DQ_ROWS", &dq));
        CLF_OK(clf_context_set_tunable(g_ctx, "linear.DQ_ROWS", 2));
        typed_shapes(level ? 2 : 1);
        for (int i = 0; i < 5; i++)
            CLF_OK(clf_context_set_tunable(g_ctx, pk_names[i], pk_defaults[i]));
        typed_shapes(level ? 2 : 1);
        CLF_OK(clf_context_set_tunable(g_ctx, "linear.DQ_ROWS", dq));
        /* The defaults with many rows in integers (linear.QROWS 3), x in int16 and int8
         * (linear.QX 1, 2), and, where the device takes AVX512-VNNI (linear.VNNI 1 by default
         * there), both again without it: at 16 columns a vector that is the only run of
         * AVX-512's pmaddwd and pmaddubsw. Only where the defaults pack (CPUs through PoCL):
         * elsewhere these take no panels, and the forced style above ran the integers. */
        int64_t vnni;
        CLF_OK(clf_context_get_tunable(g_ctx, "linear.VNNI", &vnni));
        CLF_OK(clf_context_set_tunable(g_ctx, "linear.QROWS", 3));
        for (int v = (int)vnni; packs && v >= 0; v--) {
            CLF_OK(clf_context_set_tunable(g_ctx, "linear.VNNI", v));
            typed_shapes_qx(level ? 2 : 1, qx);
            typed_lq(level, 1);
        }
        CLF_OK(clf_context_set_tunable(g_ctx, "linear.VNNI", vnni));
        CLF_OK(clf_context_set_tunable(g_ctx, "linear.QROWS", qrows));
        g_prepared = 0;
    }
}

static void typed_styles(int level) {
    typed_styles_of(level, k_weight_types, N_WEIGHT_TYPES);
}

/* Under work-group caps: the caps change the kernels' work-group sizes (linear.SK_LW,
 * linear_tiled's tile), whose code is the same for every type; each cap and style is one more
 * program per type and row variant (376 s of PoCL compiles on 2 AVX2 cores for three types), so
 * the caps run on one block type: Q4_K, the one with a min term and 256-element blocks (rows of
 * 2 blocks: fewer blocks than work-items). Plain types under caps: test_linear (F32 rows, F16
 * tiled). */
static const clf_dtype k_caps_types[] = {CLF_Q4_K};
static void typed_styles_capped(int level) {
    typed_styles_of(level, k_caps_types, sizeof(k_caps_types) / sizeof(k_caps_types[0]));
}

static void test_linear_types(void **state) {
    (void)state;
    rng_seed(91);
    typed_styles(0);
}

static void linear_types_small(void **state) {
    (void)state;
    typed_styles(1);
}
static void linear_types_tiny(void **state) {
    (void)state;
    typed_styles(2);
}
static void linear_types_small_capped(void **state) {
    (void)state;
    typed_styles_capped(1);
}
static void linear_types_tiny_capped(void **state) {
    (void)state;
    typed_styles_capped(2);
}

/* Fewer shapes, and under work-group caps. */
static void test_linear_types_small(void **state) {
    rng_seed(92);
    linear_types_small(state);
}

static void test_linear_types_caps(void **state) {
    rng_seed(93);
    harness_under_wg_caps(linear_types_small_capped, state);
}

/* Every type and style at one shape each (under the caps, the caps' three types): the Oclgrind
 * label's. */
static void test_linear_types_tiny(void **state) {
    rng_seed(94);
    linear_types_tiny(state);
}

static void test_linear_types_tiny_caps(void **state) {
    rng_seed(95);
    harness_under_wg_caps(linear_types_tiny_capped, state);
}

/* clf_embedding from a table of every type: the dequantized rows times the scale, within 2^-23
 * of each value (the kernels' scale products may fuse), then the positional encoding on top as
 * the F32 table of the same values gets it. Awkward sizes: a row of 3 blocks (block types) or 37
 * elements (plain: the tail of a row one by one), repeated ids, the last row. */
static void test_embedding_types(void **state) {
    (void)state;
    rng_seed(96);
    const clf_dtype types[] = {CLF_F16, CLF_BF16, CLF_Q8_0, CLF_Q4_0, CLF_Q4_K, CLF_Q6_K};
    for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
        const int64_t V = 7, d = clf_dtype_block(types[t]) > 1 ? 3 * clf_dtype_block(types[t]) : 37;
        const int32_t idv[2 * 5] = {6, 0, 3, 3, 1, 5, 6, 2, 0, 4};
        const int64_t is[2] = {2, 5}, ys[3] = {2, 5, d}, ts[2] = {V, d};
        size_t bytes;
        unsigned char *wq = random_weights(types[t], V, d, &bytes);
        float *table = malloc(sizeof(float) * (size_t)(V * d));
        assert_int_equal(clf_dequantize(types[t], wq, bytes, table, V * d, NULL), CLF_SUCCESS);
        clf_tensor *tt = NULL, *ids = tensor_from(CLF_I32, 2, is, idv);
        clf_tensor *tf = tensor_from(CLF_F32, 2, ts, table);
        CLF_OK(clf_tensor_create(g_ctx, types[t], 2, ts, &tt));
        CLF_OK(clf_tensor_write(tt, wq, bytes));
        for (int pe = 0; pe <= 1; pe++) {
            clf_tensor *y = tensor_poisoned(CLF_F32, 3, ys), *yf = tensor_poisoned(CLF_F32, 3, ys);
            CLF_OK(clf_embedding(g_ctx, ids, tt, 1.5f, pe, 3, y));
            CLF_OK(clf_embedding(g_ctx, ids, tf, 1.5f, pe, 3, yf));
            float *got = tensor_to_host(y), *want = tensor_to_host(yf);
            for (int64_t r = 0; r < 10; r++)
                for (int64_t j = 0; j < d; j++) {
                    const double ref = 1.5 * (double)table[idv[r] * d + j];
                    const double g = got[r * d + j], w = pe ? want[r * d + j] : ref;
                    const double tol = 0x1p-23 * (fabs(ref) + (pe ? fabs(w) : 0.0)) + 1e-30;
                    if (!(fabs(g - w) <= tol))
                        fail_msg("embedding %s (posenc %d) [%lld, %lld]: got %.9g want %.9g",
                                 clf_dtype_name(types[t]), pe, (long long)r, (long long)j, g, w);
                }
            free(got);
            free(want);
            clf_tensor_free(y);
            clf_tensor_free(yf);
        }
        free(wq);
        free(table);
        clf_tensor_free(tt);
        clf_tensor_free(tf);
        clf_tensor_free(ids);
    }
}

/* Bad weights: an I32 tensor, a block tensor of the wrong width. */
static void test_linear_refuses(void **state) {
    (void)state;
    const int64_t xs[2] = {2, 64}, ws[2] = {3, 32}, ys[2] = {2, 3};
    clf_tensor *x = tensor_poisoned(CLF_F32, 2, xs), *y = tensor_poisoned(CLF_F32, 2, ys), *w;
    CLF_OK(clf_tensor_create(g_ctx, CLF_Q8_0, 2, ws, &w));
    assert_int_equal(clf_linear(g_ctx, x, w, NULL, CLF_ACT_IDENTITY, y), CLF_ERROR_SHAPE_MISMATCH);
    clf_tensor_free(w);
    CLF_OK(clf_tensor_create(g_ctx, CLF_I32, 2, ws, &w));
    assert_int_equal(clf_linear(g_ctx, x, w, NULL, CLF_ACT_IDENTITY, y), CLF_ERROR_UNSUPPORTED);
    clf_tensor_free(w);
    clf_tensor_free(x);
    clf_tensor_free(y);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_matches_gguf),
        cmocka_unit_test(test_convert_errors),
        cmocka_unit_test(test_quantize_k),
        cmocka_unit_test(test_block_tensors),
        cmocka_unit_test(test_linear_refuses),
        cmocka_unit_test(test_embedding_types),
        cmocka_unit_test(test_linear_types),
        cmocka_unit_test(test_linear_types_small),
        cmocka_unit_test(test_linear_types_caps),
        cmocka_unit_test(test_linear_types_tiny),
        cmocka_unit_test(test_linear_types_tiny_caps),
    };
    return HARNESS_RUN("dtypes", tests);
}
