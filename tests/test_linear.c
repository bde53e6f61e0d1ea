/*
 * test_linear.c — clf_linear and clformer's linear kernels (kernels/linear.cl: linear_rows,
 * pack_panels, linear_packed) against the double reference, every activation, with and without
 * bias, every tunable style, and under work-group caps; parts of a stack split by type writing
 * their own columns of one output (clf__linear_cols).
 *
 * Error bound per element: the GEMM bound of test_gemm.c, (in + 4) * 2^-24 * sum |x w| (+ |b|),
 * carried through the activation (slope <= 1.13), plus the activation's own bound
 * (test_elementwise.c).
 *
 * F16 weights (g_f16): against the reference on the same weights rounded to f16, the same bound
 * (the kernels convert exactly and compute in fp32); against the unrounded fp32 weights, the
 * bound plus 2^-11 * sum |x w| (each weight's rounding error is at most 2^-11 of it).
 */
#include "harness.h"
#include "ref/ref.h"
#include "../src/internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* clf_linear on x (lead, per, in) against the double reference, every activation, with and
 * without bias. */
static int g_packed; /* 1: linear_case packs w and runs clf__linear_packed; 2: it prepares w
                      * (clf_linear_prepare, w freed at once) and runs clf_linear_apply */
static int g_f16;    /* 1: w is an F16 tensor */

static void linear_case(int64_t lead, int64_t per, int64_t in, int64_t out) {
    int64_t xs[3] = {lead, per, in}, ws[2] = {out, in}, ys[3] = {lead, per, out};
    const int64_t rows = lead * per;
    float *x = rng_floats(rows * in), *w = rng_floats(out * in), *b = rng_floats(out);
    clf_tensor *tx = tensor_from(CLF_F32, 3, xs, x), *tw;
    clf_tensor *tb = tensor_from(CLF_F32, 1, &out, b);
    double *lin = malloc(sizeof(double) * (size_t)(rows * out)),
           *mag = malloc(sizeof(double) * (size_t)(rows * out)),
           *lin32 = malloc(sizeof(double) * (size_t)(rows * out));
    ref_gemm(0, 1, rows, out, in, 1.0, x, in, w, in, 0.0, NULL, lin32, out, mag);
    if (g_f16) {
        CLF_OK(clf_tensor_create(g_ctx, CLF_F16, 2, ws, &tw));
        CLF_OK(clf_tensor_write_f32(tw, w, out * in));
        for (int64_t i = 0; i < out * in; i++) /* the reference takes the stored weights */
            w[i] = clf_f16_to_f32(clf_f32_to_f16(w[i]));
    } else {
        tw = tensor_from(CLF_F32, 2, ws, w);
    }
    ref_gemm(0, 1, rows, out, in, 1.0, x, in, w, in, 0.0, NULL, lin, out, mag);
    clf_tensor *tp = NULL;
    clf_linear_weights *lw = NULL;
    if (g_packed == 1) CLF_OK(clf__linear_pack(g_ctx, tw, &tp));
    if (g_packed == 2) {
        CLF_OK(clf_linear_prepare(g_ctx, tw, &lw));
        clf_tensor_free(tw); /* the prepared weights own their copy */
        tw = NULL;
    }
    for (int act = 0; act <= CLF_ACT_SILU; act++) {
        for (int with_bias = 0; with_bias <= 1; with_bias++) {
            clf_tensor *ty = tensor_poisoned(CLF_F32, 3, ys);
            if (g_packed == 1)
                CLF_OK(clf__linear_packed(g_ctx, tx, tp, out, with_bias ? tb : NULL,
                                          (clf_activation)act, ty, NULL));
            else if (g_packed == 2)
                CLF_OK(clf_linear_apply(g_ctx, tx, lw, with_bias ? tb : NULL, (clf_activation)act,
                                        ty));
            else
                CLF_OK(clf_linear(g_ctx, tx, tw, with_bias ? tb : NULL, (clf_activation)act, ty));
            float *got = tensor_to_host(ty);
            for (int64_t r = 0; r < rows; r++)
                for (int64_t j = 0; j < out; j++) {
                    double v = lin[r * out + j] + (with_bias ? b[j] : 0.0);
                    double want = ref_act(v, act);
                    /* GEMM bound, carried through the activation (slope <= 1.13), plus the
                     * activation's own bound (test_elementwise.c). */
                    double tol = 1.13 * ((double)(in + 4) * 5.9604644775390625e-8 *
                                             (mag[r * out + j] + fabs(b[j])) +
                                         1e-30) +
                                 1e-7 + 4.76837158203125e-7 * (fabs(want) + fabs(v));
                    if (!(fabs((double)got[r * out + j] - want) <= tol))
                        fail_msg("linear act %d bias %d [%lld, %lld]: got %.9g want %.9g", act,
                                 with_bias, (long long)r, (long long)j, (double)got[r * out + j],
                                 want);
                    /* F16 weights against the fp32 ones */
                    const double v32 = lin32[r * out + j] + (with_bias ? b[j] : 0.0);
                    const double want32 = ref_act(v32, act),
                                 tol32 = tol + 1.13 * 0x1p-11 * mag[r * out + j];
                    if (g_f16 && !(fabs((double)got[r * out + j] - want32) <= tol32))
                        fail_msg("linear f16 vs f32 act %d [%lld, %lld]: got %.9g want %.9g", act,
                                 (long long)r, (long long)j, (double)got[r * out + j], want32);
                }
            free(got);
            clf_tensor_free(ty);
        }
    }
    free(x);
    free(w);
    free(b);
    free(lin);
    free(lin32);
    free(mag);
    clf_tensor_free(tx);
    clf_tensor_free(tw);
    clf_tensor_free(tb);
    clf_tensor_free(tp);
    clf_linear_weights_free(lw);
}

/* The linear_rows kernel (few rows when decoding; every size on CPUs): every tunable style, row
 * counts around its block size and past several groups of blocks, awkward widths. */
typedef struct linear_shapes {
    int64_t rows[6], ins[2], outs[2];
    size_t n_rows;
} linear_shapes;
static const linear_shapes k_linear_shapes = {{1, 3, 4, 5, 16, 67}, {77, 515}, {1, 203}, 6};
/* Simulator-sized (Oclgrind): still partial row blocks, panels and vectors. */
static const linear_shapes k_linear_small = {{1, 5, 9}, {7, 37}, {1, 19}, 3};

static void linear_rows_styles(const linear_shapes *sh) {
    /* ROWS OPI LW VW GM; style 0 is the device's defaults */
    const int64_t styles[3][5] = {{0, 0, 0, 0, 0}, {4, 1, 64, 4, 8}, {3, 3, 2, 1, 3}};
    const int64_t *rows = sh->rows, *ins = sh->ins, *outs = sh->outs;
    const char *names[] = {"linear.SK_ROWS", "linear.SK_OPI", "linear.SK_LW", "linear.VW",
                           "linear.SK_GM"};
    int64_t defaults[5], skinny;
    for (int i = 0; i < 5; i++)
        CLF_OK(clf_context_get_tunable(g_ctx, names[i], &defaults[i]));
    CLF_OK(clf_context_get_tunable(g_ctx, "linear.SKINNY_MAX", &skinny));
    CLF_OK(clf_context_set_tunable(g_ctx, "linear.SKINNY_MAX", 1 << 20));
    for (int st = 0; st < 3; st++) {
        if (st > 0)
            for (int i = 0; i < 5; i++)
                CLF_OK(clf_context_set_tunable(g_ctx, names[i], styles[st][i]));
        for (size_t r = 0; r < sh->n_rows; r++)
            for (size_t i = 0; i < 2; i++)
                for (size_t o = 0; o < 2; o++)
                    linear_case(1, rows[r], ins[i], outs[o]);
    }
    for (int i = 0; i < 5; i++)
        CLF_OK(clf_context_set_tunable(g_ctx, names[i], defaults[i]));
    CLF_OK(clf_context_set_tunable(g_ctx, "linear.SKINNY_MAX", skinny));
}

static void test_linear_rows_kernel(void **state) {
    (void)state;
    rng_seed(55);
    linear_rows_styles(&k_linear_shapes);
}

/* Packed weights (clf__linear_pack + linear_packed, the CPU path of the model layers): every
 * style of tunables, partial row blocks and panels, every activation; a packing made under other
 * tunables is refused. */
static void linear_packed_styles(const linear_shapes *sh) {
    /* R NV VW GM; style 0 is the device's defaults, style 3 the AVX2 tile (clf__isa_defaults) */
    const int64_t styles[4][4] = {{0, 0, 0, 0}, {3, 3, 4, 2}, {1, 1, 1, 1}, {6, 2, 8, 4}};
    const char *names[] = {"linear.PK_R", "linear.PK_NV", "linear.VW", "linear.PK_GM"};
    const int64_t *rows = sh->rows, *ins = sh->ins, *outs = sh->outs;
    int64_t defaults[4];
    for (int i = 0; i < 4; i++)
        CLF_OK(clf_context_get_tunable(g_ctx, names[i], &defaults[i]));
    g_packed = 1;
    for (int st = 0; st < 4; st++) {
        if (st > 0)
            for (int i = 0; i < 4; i++)
                CLF_OK(clf_context_set_tunable(g_ctx, names[i], styles[st][i]));
        for (size_t r = 0; r < sh->n_rows; r++)
            for (size_t i = 0; i < 2; i++)
                for (size_t o = 0; o < 2; o++)
                    linear_case(1, rows[r], ins[i], outs[o]);
    }
    g_packed = 0;
    for (int i = 0; i < 4; i++)
        CLF_OK(clf_context_set_tunable(g_ctx, names[i], defaults[i]));
}

static void test_linear_packed(void **state) {
    (void)state;
    rng_seed(56);
    linear_packed_styles(&k_linear_shapes);
    const char *names[] = {"linear.PK_R", "linear.PK_NV", "linear.VW", "linear.PK_GM"};
    const int64_t style2[4] = {1, 1, 1, 1};
    int64_t defaults[4];
    for (int i = 0; i < 4; i++) {
        CLF_OK(clf_context_get_tunable(g_ctx, names[i], &defaults[i]));
        CLF_OK(clf_context_set_tunable(g_ctx, names[i], style2[i]));
    }
    /* packed under style 2 (panels of 1), used under the defaults: refused, y untouched */
    int64_t ws[2] = {9, 5}, xs[2] = {4, 5}, ys[2] = {4, 9};
    clf_tensor *w = tensor_poisoned(CLF_F32, 2, ws), *x = tensor_poisoned(CLF_F32, 2, xs);
    clf_tensor *y = tensor_poisoned(CLF_F32, 2, ys), *p = NULL;
    CLF_OK(clf__linear_pack(g_ctx, w, &p));
    for (int i = 0; i < 4; i++)
        CLF_OK(clf_context_set_tunable(g_ctx, names[i], defaults[i]));
    if (defaults[1] * defaults[2] != 1)
        assert_int_equal(clf__linear_packed(g_ctx, x, p, 9, NULL, CLF_ACT_IDENTITY, y, NULL),
                         CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf__linear_packed(g_ctx, x, p, 10, NULL, CLF_ACT_IDENTITY, y, NULL),
                     CLF_ERROR_SHAPE_MISMATCH);
    float *after = tensor_to_host(y);
    for (int i = 0; i < 36; i++)
        assert_true(isnan(after[i]));
    free(after);
    clf_tensor_free(w);
    clf_tensor_free(x);
    clf_tensor_free(y);
    clf_tensor_free(p);
}

/* The public prepared weights (clf_linear_prepare / clf_linear_apply): packed where linear.PACK
 * is on, a copy where it is off, F32 and F16; bad input fails and leaves y untouched. */
static void test_linear_prepared(void **state) {
    (void)state;
    rng_seed(58);
    int64_t pack;
    CLF_OK(clf_context_get_tunable(g_ctx, "linear.PACK", &pack));
    const int64_t shapes[4][3] = {{1, 37, 19}, {3, 203, 77}, {5, 64, 33}, {67, 19, 203}};
    g_packed = 2;
    for (int p = 0; p <= 1; p++) {
        CLF_OK(clf_context_set_tunable(g_ctx, "linear.PACK", p));
        for (g_f16 = 0; g_f16 <= 1; g_f16++)
            for (int i = 0; i < 4; i++)
                linear_case(1, shapes[i][0], shapes[i][1], shapes[i][2]);
        int64_t ws[2] = {9, 5}, out = 0, in = 0;
        int packed = -1;
        clf_tensor *w = tensor_poisoned(CLF_F32, 2, ws);
        clf_linear_weights *lw = NULL;
        CLF_OK(clf_linear_prepare(g_ctx, w, &lw));
        clf_linear_weights_info(lw, &out, &in, &packed);
        assert_true(out == 9 && in == 5 && packed == p);
        clf_linear_weights_free(lw);
        clf_tensor_free(w);
    }
    g_f16 = 0;
    g_packed = 0;
    CLF_OK(clf_context_set_tunable(g_ctx, "linear.PACK", pack));

    int64_t ws[2] = {9, 5}, w3[3] = {1, 9, 5}, xs[2] = {4, 5}, x6[2] = {4, 6}, ys[2] = {4, 9};
    clf_tensor *w = tensor_poisoned(CLF_F32, 2, ws), *w_3d = tensor_poisoned(CLF_F32, 3, w3);
    clf_tensor *x = tensor_poisoned(CLF_F32, 2, xs), *xbad = tensor_poisoned(CLF_F32, 2, x6);
    clf_tensor *y = tensor_poisoned(CLF_F32, 2, ys), *y2 = tensor_poisoned(CLF_F32, 2, xs);
    clf_linear_weights *lw = (clf_linear_weights *)&lw, *sq = NULL;
    assert_int_equal(clf_linear_prepare(NULL, w, &lw), CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_linear_prepare(g_ctx, w, NULL), CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_linear_prepare(g_ctx, NULL, &lw), CLF_ERROR_INVALID_ARGUMENT);
    assert_null(lw);
    assert_int_equal(clf_linear_prepare(g_ctx, w_3d, &lw), CLF_ERROR_SHAPE_MISMATCH);
    assert_null(lw);
    CLF_OK(clf_linear_prepare(g_ctx, w, &lw));
    assert_int_equal(clf_linear_apply(g_ctx, x, NULL, NULL, CLF_ACT_IDENTITY, y),
                     CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_linear_apply(g_ctx, xbad, lw, NULL, CLF_ACT_IDENTITY, y),
                     CLF_ERROR_SHAPE_MISMATCH);
    assert_int_equal(clf_linear_apply(g_ctx, x, lw, NULL, (clf_activation)99, y),
                     CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_linear_apply(g_ctx, x, lw, x, CLF_ACT_IDENTITY, y),
                     CLF_ERROR_SHAPE_MISMATCH); /* a bias of 5 for 9 outputs */
    /* a (5, 5) product in place: y must not be x */
    int64_t sqs[2] = {5, 5};
    clf_tensor *wsq = tensor_poisoned(CLF_F32, 2, sqs);
    CLF_OK(clf_linear_prepare(g_ctx, wsq, &sq));
    assert_int_equal(clf_linear_apply(g_ctx, y2, sq, NULL, CLF_ACT_IDENTITY, y2),
                     CLF_ERROR_INVALID_ARGUMENT);
    if (pack) { /* packed, then the panel width changes: refused */
        int64_t nv;
        CLF_OK(clf_context_get_tunable(g_ctx, "linear.PK_NV", &nv));
        CLF_OK(clf_context_set_tunable(g_ctx, "linear.PK_NV", nv == 1 ? 2 : 1));
        assert_int_equal(clf_linear_apply(g_ctx, x, lw, NULL, CLF_ACT_IDENTITY, y),
                         CLF_ERROR_INVALID_ARGUMENT);
        assert_non_null(strstr(clf_context_last_error(g_ctx), "pack them again"));
        CLF_OK(clf_context_set_tunable(g_ctx, "linear.PK_NV", nv));
    }
    float *after = tensor_to_host(y);
    for (int i = 0; i < 36; i++)
        assert_true(isnan(after[i]));
    free(after);
    clf_linear_weights_free(lw);
    clf_linear_weights_free(sq);
    clf_linear_weights_free(NULL);
    clf_tensor *ts[] = {w, w_3d, x, xbad, y, y2, wsq};
    for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++)
        clf_tensor_free(ts[i]);
}

static void test_linear(void **state) {
    (void)state;
    rng_seed(54);
    int64_t skinny;
    CLF_OK(clf_context_get_tunable(g_ctx, "linear.SKINNY_MAX", &skinny));
    linear_case(2, 9, 77, 129); /* 18 rows: the device's default path */
    CLF_OK(clf_context_set_tunable(g_ctx, "linear.SKINNY_MAX", 1));
    linear_case(2, 9, 77, 129); /* CLBlast's GEMM + the bias_act epilogue */
    CLF_OK(clf_context_set_tunable(g_ctx, "linear.SKINNY_MAX", skinny));
    const int64_t in = 77, out = 129;
    int64_t xs[3] = {2, 9, in}, ws[2] = {out, in}, ys[3] = {2, 9, out};
    float *x = rng_floats(18 * in), *w = rng_floats(out * in), *b = rng_floats(out);
    clf_tensor *tx = tensor_from(CLF_F32, 3, xs, x), *tw = tensor_from(CLF_F32, 2, ws, w);
    clf_tensor *tb = tensor_from(CLF_F32, 1, &out, b);
    /* Bad input: nothing is written. */
    clf_tensor *ty = tensor_poisoned(CLF_F32, 3, ys);
    int64_t ws_bad[2] = {out, in + 1}, ys_bad[3] = {2, 8, out}, one = out + 1;
    clf_tensor *tw_bad = tensor_poisoned(CLF_F32, 2, ws_bad),
               *ty_bad = tensor_poisoned(CLF_F32, 3, ys_bad);
    clf_tensor *tb_bad = tensor_poisoned(CLF_F32, 1, &one);
    assert_int_equal(clf_linear(g_ctx, tx, tw_bad, NULL, CLF_ACT_IDENTITY, ty),
                     CLF_ERROR_SHAPE_MISMATCH);
    assert_non_null(strstr(clf_context_last_error(g_ctx), "linear"));
    assert_int_equal(clf_linear(g_ctx, tx, tw, NULL, CLF_ACT_IDENTITY, ty_bad),
                     CLF_ERROR_SHAPE_MISMATCH);
    assert_int_equal(clf_linear(g_ctx, tx, tw, tb_bad, CLF_ACT_RELU, ty), CLF_ERROR_SHAPE_MISMATCH);
    assert_int_equal(clf_linear(g_ctx, tx, tw, tb, (clf_activation)9, ty),
                     CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_linear(g_ctx, tx, NULL, tb, CLF_ACT_RELU, ty), CLF_ERROR_INVALID_ARGUMENT);
    float *after = tensor_to_host(ty);
    for (int64_t i = 0; i < 18 * out; i++)
        assert_true(isnan(after[i]));
    free(after);
    /* matmul shape errors. */
    assert_int_equal(clf_matmul(g_ctx, CLF_NO_TRANS, CLF_NO_TRANS, 1.0f, tx, tw, 0.0f, ty),
                     CLF_ERROR_SHAPE_MISMATCH);
    assert_int_equal(clf_matmul(g_ctx, CLF_NO_TRANS, CLF_TRANS, NAN, tw, tw, 0.0f, tw_bad),
                     CLF_ERROR_SHAPE_MISMATCH);
    free(x);
    free(w);
    free(b);
    clf_tensor_free(tx);
    clf_tensor_free(tw);
    clf_tensor_free(tb);
    clf_tensor_free(ty);
    clf_tensor_free(tw_bad);
    clf_tensor_free(ty_bad);
    clf_tensor_free(tb_bad);
}

/* linear_tiled (the local-memory GEMM of F16 weights at many rows, GPUs' default) in three
 * styles: 16 x 16 work-items of 4 x 4 outputs with steps of 16, a 3 x 5 group of 2 x 3 with steps
 * of 7 (partial tiles everywhere), and single work-items. */
static void linear_tiled_styles(const linear_shapes *sh, int n_styles) {
    const int64_t styles[3][5] = {{16, 16, 4, 4, 16}, {3, 5, 2, 3, 7}, {1, 1, 1, 1, 1}};
    const char *names[] = {"linear.LT_WX", "linear.LT_WY", "linear.LT_RM", "linear.LT_RN",
                           "linear.LT_TK"};
    int64_t defaults[5], skinny, tiled;
    for (int i = 0; i < 5; i++)
        CLF_OK(clf_context_get_tunable(g_ctx, names[i], &defaults[i]));
    CLF_OK(clf_context_get_tunable(g_ctx, "linear.SKINNY_MAX", &skinny));
    CLF_OK(clf_context_get_tunable(g_ctx, "linear.TILED", &tiled));
    CLF_OK(clf_context_set_tunable(g_ctx, "linear.SKINNY_MAX", 0));
    CLF_OK(clf_context_set_tunable(g_ctx, "linear.TILED", 1));
    for (int st = 0; st < n_styles; st++) {
        for (int i = 0; i < 5; i++)
            CLF_OK(clf_context_set_tunable(g_ctx, names[i], styles[st][i]));
        for (size_t r = 0; r < sh->n_rows; r++)
            for (size_t i = 0; i < 2; i++)
                for (size_t o = 0; o < 2; o++)
                    linear_case(1, sh->rows[r], sh->ins[i], sh->outs[o]);
    }
    for (int i = 0; i < 5; i++)
        CLF_OK(clf_context_set_tunable(g_ctx, names[i], defaults[i]));
    CLF_OK(clf_context_set_tunable(g_ctx, "linear.SKINNY_MAX", skinny));
    CLF_OK(clf_context_set_tunable(g_ctx, "linear.TILED", tiled));
}

/* F16 weights: linear_rows in every style (the path of F16 weights at every row count on CPUs),
 * the packed panels in every style, linear_tiled, clf_linear's default path. */
static void test_linear_f16(void **state) {
    (void)state;
    rng_seed(58);
    g_f16 = 1;
    linear_rows_styles(&k_linear_small);
    linear_packed_styles(&k_linear_small);
    linear_tiled_styles(&k_linear_small, 3);
    linear_case(2, 9, 77, 129);
    linear_case(1, 40, 515, 203);
    g_f16 = 0;
}

/* A device that allows 1, 3 or 32 work-items per group: clformer's own linear kernels. */
static void test_wg_caps(void **state) {
    /* linear_packed runs one work-item per group under any cap (test_linear_packed) */
    harness_under_wg_caps(test_linear_rows_kernel, state);
}

/* The same kernels at simulator-sized shapes, also under the caps (the Oclgrind label). */
static void test_linear_small(void **state) {
    (void)state;
    rng_seed(57);
    linear_rows_styles(&k_linear_small);
    linear_packed_styles(&k_linear_small);
}

/* linear_tiled's 16 x 16 group fitted to 1, 3 or 32 work-items (few shapes: the Oclgrind label
 * runs this). */
static const linear_shapes k_linear_tiny = {{1, 9}, {7, 37}, {19, 5}, 2};
static void linear_tiled_f16_tiny(void **state) {
    (void)state;
    g_f16 = 1;
    linear_tiled_styles(&k_linear_tiny, 1);
    g_f16 = 0;
}

static void linear_rows_small(void **state) {
    (void)state;
    linear_rows_styles(&k_linear_small);
}
/* Work-group caps reach linear_rows (SK_LW) and linear_tiled; linear_packed and pack_panels run
 * one work-item per group whatever the cap, so they are not run again under each. */
static void test_linear_small_caps(void **state) {
    rng_seed(59);
    harness_under_wg_caps(linear_rows_small, state);
    harness_under_wg_caps(linear_tiled_f16_tiny, state);
}

/* A stack split by type (clf__linear_cols: a GGUF file's Q8_0 attn_q with a Q4_0 attn_v): parts
 * of Q8_0, Q4_0 and F16 weights (3 blocks wide) each writing its own columns of one output, with
 * and without bias, identity and ReLU, and a column between two parts and one after the last
 * that no part writes, which must keep its poison. In each style: linear_rows at every row count,
 * linear_tiled, and panels (linear.PACK, vectors of 16 so that block types pack on every
 * device). The bound: test_linear's against the reference on the dequantized weights, plus
 * 3 2^-24 sum |x w| for the dequantizing (test_dtypes.c), plus for block types on panels x's
 * int16 step, sum_k |w[j, k]| max|x_32(k)| / 65534 (kernels/linear_int.cl). */
static void columns_case(int64_t rows, int packed) {
    static const clf_dtype types[3] = {CLF_Q8_0, CLF_Q4_0, CLF_F16};
    static const int64_t outs[3] = {40, 17, 9}, cols[3] = {0, 41, 59}, Y = 69, in = 96;
    int64_t xs[2] = {rows, in}, ys[2] = {rows, Y};
    float *x = rng_floats(rows * in);
    clf_tensor *tx = tensor_from(CLF_F32, 2, xs, x), *ty = tensor_poisoned(CLF_F32, 2, ys);
    double *lin = malloc(sizeof(double) * (size_t)(rows * 40)),
           *mag = malloc(sizeof(double) * (size_t)(rows * 40));
    float *w[3], *b[3];
    for (int p = 0; p < 3; p++) {
        const int64_t ws[2] = {outs[p], in}, n = outs[p] * in;
        const size_t bytes = clf_dtype_row_bytes(types[p], in) * (size_t)outs[p];
        unsigned char *q = malloc(bytes);
        w[p] = rng_floats(n);
        b[p] = rng_floats(outs[p]);
        CLF_OK(clf_quantize(types[p], w[p], n, q, bytes, NULL));
        CLF_OK(clf_dequantize(types[p], q, bytes, w[p], n, NULL)); /* the reference's weights */
        clf_tensor *tw = NULL, *tp = NULL, *tb = tensor_from(CLF_F32, 1, &outs[p], b[p]);
        CLF_OK(clf_tensor_create(g_ctx, types[p], 2, ws, &tw));
        CLF_OK(clf_tensor_write(tw, q, bytes));
        if (packed) CLF_OK(clf__linear_pack(g_ctx, tw, &tp));
        CLF_OK(clf__linear_cols(g_ctx, tx, tp ? tp : tw, outs[p], p == 1 ? NULL : tb,
                                p == 2 ? CLF_ACT_RELU : CLF_ACT_IDENTITY, ty, cols[p], NULL));
        free(q);
        clf_tensor_free(tw);
        clf_tensor_free(tp);
        clf_tensor_free(tb);
    }
    float *got = tensor_to_host(ty);
    for (int p = 0; p < 3; p++) {
        ref_gemm(0, 1, rows, outs[p], in, 1.0, x, in, w[p], in, 0.0, NULL, lin, outs[p], mag);
        for (int64_t r = 0; r < rows; r++)
            for (int64_t j = 0; j < outs[p]; j++) {
                const double bj = p == 1 ? 0.0 : b[p][j], v = lin[r * outs[p] + j] + bj;
                const double want = p == 2 ? ref_act(v, CLF_ACT_RELU) : v;
                double xq = 0.0;
                if (packed && types[p] != CLF_F16)
                    for (int64_t k0 = 0; k0 < in; k0 += 32) {
                        double amax = 0.0, sw = 0.0;
                        for (int64_t k = k0; k < k0 + 32; k++) {
                            amax = fmax(amax, fabs((double)x[r * in + k]));
                            sw += fabs((double)w[p][j * in + k]);
                        }
                        xq += sw * amax / 65534.0;
                    }
                const double tol =
                    (double)(in + 4 + 3) * 0x1p-24 * (mag[r * outs[p] + j] + fabs(bj)) + xq + 1e-30;
                const double g = (double)got[r * Y + cols[p] + j];
                if (!(fabs(g - want) <= tol))
                    fail_msg("columns: %s part, %lld rows (packed %d) [%lld, %lld]: got %.9g "
                             "want %.9g",
                             clf_dtype_name(types[p]), (long long)rows, packed, (long long)r,
                             (long long)j, g, want);
            }
    }
    for (int64_t r = 0; r < rows; r++) /* columns 40, 58 and 68 belong to no part */
        for (int c = 0; c < 3; c++) {
            const int64_t col = c == 0 ? 40 : c == 1 ? 58 : 68;
            if (!isnan(got[r * Y + col]))
                fail_msg("columns: [%lld, %lld] written (%g) outside every part", (long long)r,
                         (long long)col, (double)got[r * Y + col]);
        }
    for (int p = 0; p < 3; p++) {
        free(w[p]);
        free(b[p]);
    }
    free(got);
    free(x);
    free(lin);
    free(mag);
    clf_tensor_free(tx);
    clf_tensor_free(ty);
}

static void test_linear_columns(void **state) {
    (void)state;
    rng_seed(61);
    static const char *names[] = {"linear.SKINNY_MAX", "linear.TILED", "linear.PACK", "linear.VW"};
    int64_t def[4];
    for (int i = 0; i < 4; i++)
        CLF_OK(clf_context_get_tunable(g_ctx, names[i], &def[i]));
    const int sim = harness_on_simulator();
    static const int64_t rows[4] = {1, 3, 5, 37};
    /* styles: linear_rows, linear_tiled, panels */
    static const int64_t style[3][4] = {{1 << 20, 0, 0, -1}, {0, 1, 0, -1}, {0, 0, 1, 16}};
    for (int s = 0; s < 3; s++) {
        for (int i = 0; i < 4; i++)
            CLF_OK(
                clf_context_set_tunable(g_ctx, names[i], style[s][i] < 0 ? def[i] : style[s][i]));
        for (int r = sim ? 2 : 0; r < (sim ? 3 : 4); r++)
            columns_case(rows[r], s == 2);
    }
    for (int i = 0; i < 4; i++)
        CLF_OK(clf_context_set_tunable(g_ctx, names[i], def[i]));
}

/* Gated panels (clf__linear_pack_gated: a GLU's gate | up weights (2F, in)) on rows of x: glu 0,
 * y (rows, 2F) as W orders it, against the reference as any linear (bound above); glu 1, y (rows,
 * F) = SiLU(gate + b_gate) (up + b_up), each factor within its linear's bound t_g, t_u: the
 * product within 1.1 t_g |up| + |SiLU(gate)| t_u + t_g t_u (SiLU's slope is at most 1.1) plus
 * SiLU's own bound. */
static void glu_case(int64_t rows, int64_t in, int64_t f, int with_bias) {
    const int64_t out = 2 * f, xs[2] = {rows, in}, ws[2] = {out, in}, ys[2] = {rows, out},
                  ms[2] = {rows, f};
    float *x = rng_floats(rows * in), *w = rng_floats(out * in), *b = rng_floats(out);
    clf_tensor *tx = tensor_from(CLF_F32, 2, xs, x), *tw = tensor_from(CLF_F32, 2, ws, w);
    clf_tensor *tb = tensor_from(CLF_F32, 1, &out, b), *tp = NULL;
    double *lin = malloc(sizeof(double) * (size_t)(rows * out)),
           *mag = malloc(sizeof(double) * (size_t)(rows * out));
    ref_gemm(0, 1, rows, out, in, 1.0, x, in, w, in, 0.0, NULL, lin, out, mag);
    CLF_OK(clf__linear_pack_gated(g_ctx, tw, &tp));
    clf_tensor *ty = tensor_poisoned(CLF_F32, 2, ys), *tm = tensor_poisoned(CLF_F32, 2, ms);
    CLF_OK(clf__linear_packed_gated(g_ctx, tx, tp, out, with_bias ? tb : NULL, CLF_ACT_IDENTITY, 0,
                                    ty, NULL));
    CLF_OK(clf__linear_packed_gated(g_ctx, tx, tp, out, with_bias ? tb : NULL, CLF_ACT_SILU, 1, tm,
                                    NULL));
    float *got = tensor_to_host(ty), *gm = tensor_to_host(tm);
    for (int64_t r = 0; r < rows; r++) {
        double v[2], tol[2];
        for (int64_t j = 0; j < out; j++) {
            const int64_t i = r * out + j;
            const double want = lin[i] + (with_bias ? b[j] : 0.0);
            const double t = (double)(in + 4) * 0x1p-24 * (mag[i] + fabs(b[j])) + 1e-30;
            if (!(fabs((double)got[i] - want) <= t))
                fail_msg("gated panels %lld x %lld, F %lld [%lld, %lld]: got %.9g want %.9g",
                         (long long)rows, (long long)in, (long long)f, (long long)r, (long long)j,
                         (double)got[i], want);
        }
        for (int64_t j = 0; j < f; j++) {
            for (int h = 0; h < 2; h++) {
                const int64_t i = r * out + j + h * f;
                v[h] = lin[i] + (with_bias ? b[j + h * f] : 0.0);
                tol[h] = (double)(in + 4) * 0x1p-24 * (mag[i] + fabs(b[j + h * f])) + 1e-30;
            }
            const double sg = ref_act(v[0], CLF_ACT_SILU), want = sg * v[1];
            const double t = 1.1 * tol[0] * fabs(v[1]) + fabs(sg) * tol[1] + tol[0] * tol[1] +
                             (1e-7 + 4.76837158203125e-7 * (fabs(sg) + fabs(v[0]))) * fabs(v[1]) +
                             0x1p-23 * fabs(want);
            if (!(fabs((double)gm[r * f + j] - want) <= t))
                fail_msg("GLU %lld x %lld, F %lld [%lld, %lld]: got %.9g want %.9g",
                         (long long)rows, (long long)in, (long long)f, (long long)r, (long long)j,
                         (double)gm[r * f + j], want);
        }
    }
    free(got);
    free(gm);
    free(x);
    free(w);
    free(b);
    free(lin);
    free(mag);
    clf_tensor *ts[] = {tx, tw, tb, tp, ty, tm};
    for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++)
        clf_tensor_free(ts[i]);
}

/* Gated panels, packed on every device (linear.PACK 1, linear.VW 16; panels of 2 vectors): rows
 * 1, 2 (decoding), 3, 9 and 37 (every packed kernel; a simulator 1 and 3), F a multiple of the
 * half panel and not (a partial last panel); refused where the outputs are odd. */
static void test_linear_glu(void **state) {
    (void)state;
    rng_seed(62);
    static const char *names[] = {"linear.PACK", "linear.VW", "linear.PK_NV"};
    static const int64_t want[3] = {1, 16, 2};
    int64_t def[3];
    for (int i = 0; i < 3; i++) {
        CLF_OK(clf_context_get_tunable(g_ctx, names[i], &def[i]));
        CLF_OK(clf_context_set_tunable(g_ctx, names[i], want[i]));
    }
    assert_true(clf__linear_gates(g_ctx, CLF_F32, 2));
    const int sim = harness_on_simulator();
    static const int64_t rows[5] = {1, 3, 2, 9, 37}, fs[3] = {16, 40, 7};
    for (int r = 0; r < (sim ? 2 : 5); r++)
        for (int i = 0; i < 3; i++)
            glu_case(rows[r], 19, fs[i], (r + i) % 2);
    assert_false(clf__linear_gates(g_ctx, CLF_F32, 13));
    for (int i = 0; i < 3; i++)
        CLF_OK(clf_context_set_tunable(g_ctx, names[i], def[i]));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_linear),
        cmocka_unit_test(test_linear_rows_kernel),
        cmocka_unit_test(test_linear_packed),
        cmocka_unit_test(test_linear_prepared),
        cmocka_unit_test(test_wg_caps),
        cmocka_unit_test(test_linear_small),
        cmocka_unit_test(test_linear_small_caps),
        cmocka_unit_test(test_linear_f16),
        cmocka_unit_test(test_linear_columns),
        cmocka_unit_test(test_linear_glu),
    };
    return HARNESS_RUN("linear", tests);
}
