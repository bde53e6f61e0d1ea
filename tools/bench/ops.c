/*
 * ops.c — every library op at realistic sizes: median wall time of batches of back-to-back calls
 * ended by clFinish, GB/s of bytes read + written once, percent of the measured copy peak; gemm
 * and linear against the FMA roof (attention: attention.c).
 */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct op_args {
    clf_tensor *x, *y, *res, *gamma, *beta, *bias, *ids, *table, *lens;
} op_args;

typedef clf_status (*op_fn)(clf_context *ctx, op_args *a);

static void free_args(op_args *a) {
    clf_tensor *all[] = {a->x, a->y, a->res, a->gamma, a->beta, a->bias, a->ids, a->table, a->lens};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        clf_tensor_free(all[i]);
    memset(a, 0, sizeof(*a));
}

clf_tensor *bench_make(clf_context *ctx, clf_dtype dt, int ndim, const int64_t *shape, double value,
                       int *bad) {
    clf_tensor *t = NULL;
    if (*bad) return NULL;
    clf_status st = clf_tensor_create(ctx, dt, ndim, shape, &t);
    if (st == CLF_SUCCESS) st = clf_tensor_fill(t, value);
    if (st != CLF_SUCCESS) {
        fprintf(stderr, "clformer-bench: tensor: %s: %s\n", clf_strerror(st),
                clf_context_last_error(ctx));
        *bad = 1;
    }
    return t;
}

/* Weights of any type: plain ones filled with 0.01, block types with bytes 0x11 (small scales,
 * every quant the same: valid blocks; the time does not depend on the values). */
static clf_tensor *make_weights(clf_context *ctx, clf_dtype dt, const int64_t *shape, int *bad) {
    if (clf_dtype_block(dt) == 1) return bench_make(ctx, dt, 2, shape, 0.01, bad);
    clf_tensor *t = NULL;
    if (*bad) return NULL;
    const size_t bytes = clf_dtype_row_bytes(dt, shape[1]) * (size_t)shape[0];
    void *h = malloc(bytes);
    clf_status st = h ? clf_tensor_create(ctx, dt, 2, shape, &t) : CLF_ERROR_OUT_OF_MEMORY;
    if (st == CLF_SUCCESS) {
        memset(h, 0x11, bytes);
        st = clf_tensor_write(t, h, bytes);
    }
    free(h);
    if (st != CLF_SUCCESS) {
        fprintf(stderr, "clformer-bench: weights: %s: %s\n", clf_strerror(st),
                clf_context_last_error(ctx));
        *bad = 1;
    }
    return t;
}

/* Token ids 0, 7, 14, ... modulo vocab. */
static clf_tensor *make_ids(clf_context *ctx, int ndim, const int64_t *shape, int64_t vocab,
                            int *bad) {
    clf_tensor *t = bench_make(ctx, CLF_I32, ndim, shape, 0, bad);
    if (*bad) return t;
    int64_t n = clf_tensor_numel(t);
    int32_t *h = malloc(sizeof(int32_t) * (size_t)n);
    if (!h) {
        *bad = 1;
        return t;
    }
    for (int64_t i = 0; i < n; i++)
        h[i] = (int32_t)((i * 7) % vocab);
    if (clf_tensor_write(t, h, sizeof(int32_t) * (size_t)n) != CLF_SUCCESS) *bad = 1;
    free(h);
    return t;
}

/* ---------------------------------------------------------------- the memory-bound ops
 * One row per op: its name, what it needs (tensors at benchmark size, or tiny for the first-use
 * pass), the call, and its flops per output element as the kernels compute them (exp, erf's exp
 * and sincos count 1: the x coordinate of the roofline plot, not a speed claim). */

typedef struct op_size {
    int ndim;
    int64_t shape[3]; /* the output's shape */
    double bytes;     /* read + written once */
} op_size;

/* Memory-bound ops run at DRAM sizes: each big tensor holds `bytes` (the size of the DRAM copy
 * ceiling, >= 4x the last-level cache), so no record is judged at cache speed; 0: tiny sizes for
 * the first-use pass. Rows of a (rows, n) tensor of `bytes`, at least `least`. */
static int64_t rows_for(size_t bytes, int64_t n, int64_t least) {
    const int64_t r = (int64_t)(bytes / ((size_t)n * sizeof(float)));
    return r > least ? r : least;
}

/* x and y of (rows, 1024) (tiny: 3 x 37). */
static op_size rows_xy(clf_context *ctx, size_t bytes, op_args *a, int *bad) {
    const int tiny = bytes == 0;
    const int64_t n = tiny ? 37 : 1024, rows = tiny ? 3 : rows_for(bytes, n, 4096);
    op_size z = {2, {rows, n, 0}, 2.0 * (double)(rows * n) * 4};
    a->x = bench_make(ctx, CLF_F32, 2, z.shape, 0.5, bad);
    a->y = bench_make(ctx, CLF_F32, 2, z.shape, 0, bad);
    return z;
}
/* LayerNorm's x, y, gamma and beta of (rows, 512) (tiny: 5 x 77). */
static op_size norm_xy(clf_context *ctx, size_t bytes, op_args *a, int *bad) {
    const int tiny = bytes == 0;
    const int64_t ln = tiny ? 77 : 512, lr = tiny ? 5 : rows_for(bytes, ln, 8192);
    op_size z = {2, {lr, ln, 0}, 2.0 * (double)(lr * ln) * 4 + 2.0 * (double)ln * 4};
    a->x = bench_make(ctx, CLF_F32, 2, z.shape, 0.5, bad);
    a->y = bench_make(ctx, CLF_F32, 2, z.shape, 0, bad);
    a->gamma = bench_make(ctx, CLF_F32, 1, &z.shape[1], 1, bad);
    a->beta = bench_make(ctx, CLF_F32, 1, &z.shape[1], 0, bad);
    return z;
}
/* Sequences (B, 1024, 512), B >= 8 (tiny: 2 x 5 x 33). */
static op_size seq_shape(size_t bytes) {
    const int tiny = bytes == 0;
    const int64_t seq = tiny ? 5 : 1024, d = tiny ? 33 : 512;
    const int64_t b = tiny ? 2 : rows_for(bytes, seq * d, 8);
    op_size z = {3, {b, seq, d}, 2.0 * (double)(b * seq * d) * 4};
    return z;
}

static op_size setup_softmax(clf_context *ctx, size_t bytes, op_args *a, int *bad) {
    return rows_xy(ctx, bytes, a, bad);
}
static op_size setup_bias_gelu(clf_context *ctx, size_t bytes, op_args *a, int *bad) {
    op_size z = rows_xy(ctx, bytes, a, bad);
    a->bias = bench_make(ctx, CLF_F32, 1, &z.shape[1], 0.1, bad);
    z.bytes += (double)z.shape[1] * 4;
    return z;
}
static op_size setup_add(clf_context *ctx, size_t bytes, op_args *a, int *bad) {
    op_size z = rows_xy(ctx, bytes, a, bad);
    a->res = bench_make(ctx, CLF_F32, 2, z.shape, 0.25, bad);
    z.bytes *= 1.5;
    return z;
}
static op_size setup_layernorm(clf_context *ctx, size_t bytes, op_args *a, int *bad) {
    return norm_xy(ctx, bytes, a, bad);
}
static op_size setup_add_layernorm(clf_context *ctx, size_t bytes, op_args *a, int *bad) {
    op_size z = norm_xy(ctx, bytes, a, bad);
    a->res = bench_make(ctx, CLF_F32, 2, z.shape, 0.25, bad);
    z.bytes += (double)(z.shape[0] * z.shape[1]) * 4;
    return z;
}
/* The pre-norm block's RMSNorm: reads x and the residual stream, writes the stream (in place) and
 * the normalized rows. */
static op_size setup_add_rmsnorm(clf_context *ctx, size_t bytes, op_args *a, int *bad) {
    op_size z = norm_xy(ctx, bytes, a, bad);
    a->res = bench_make(ctx, CLF_F32, 2, z.shape, 0.25, bad);
    z.bytes = 4.0 * (double)(z.shape[0] * z.shape[1]) * 4 + (double)z.shape[1] * 4;
    return z;
}
/* RoPE in place on (rows, 1024): 16 heads of 64 (a Llama-style fused Q and K), read and written. */
static op_size setup_rope(clf_context *ctx, size_t bytes, op_args *a, int *bad) {
    const int tiny = bytes == 0;
    const int64_t n = tiny ? 40 : 1024, rows = tiny ? 3 : rows_for(bytes, n, 4096);
    op_size z = {2, {rows, n, 0}, 2.0 * (double)(rows * n) * 4};
    a->x = bench_make(ctx, CLF_F32, 2, z.shape, 0.5, bad);
    return z;
}
/* SwiGLU's middle on a fused (rows, 2F) gate/up, F = 1024: reads 2F, writes F per row. */
static op_size setup_swiglu(clf_context *ctx, size_t bytes, op_args *a, int *bad) {
    const int tiny = bytes == 0;
    const int64_t f = tiny ? 37 : 1024, rows = tiny ? 3 : rows_for(bytes, f, 4096);
    int64_t gs[2] = {rows, 2 * f};
    op_size z = {2, {rows, f, 0}, 3.0 * (double)(rows * f) * 4};
    a->x = bench_make(ctx, CLF_F32, 2, gs, 0.5, bad);
    a->y = bench_make(ctx, CLF_F32, 2, z.shape, 0, bad);
    return z;
}
static op_size setup_posenc(clf_context *ctx, size_t bytes, op_args *a, int *bad) {
    op_size z = seq_shape(bytes);
    a->x = bench_make(ctx, CLF_F32, 3, z.shape, 0.5, bad);
    a->y = bench_make(ctx, CLF_F32, 3, z.shape, 0, bad);
    return z;
}
static op_size setup_embedding(clf_context *ctx, size_t bytes, op_args *a, int *bad) {
    op_size z = seq_shape(bytes);
    const int64_t vocab = bytes == 0 ? 11 : 30522;
    int64_t ts[2] = {vocab, z.shape[2]};
    a->table = bench_make(ctx, CLF_F32, 2, ts, 0.01, bad);
    a->ids = make_ids(ctx, 2, z.shape, vocab, bad);
    a->y = bench_make(ctx, CLF_F32, 3, z.shape, 0, bad);
    z.bytes += (double)(z.shape[0] * z.shape[1]) * 4;
    return z;
}

static clf_status run_softmax(clf_context *ctx, op_args *a) {
    return clf_softmax(ctx, a->x, a->y, NULL);
}
static clf_status run_layernorm(clf_context *ctx, op_args *a) {
    return clf_layernorm(ctx, a->x, NULL, a->gamma, a->beta, 1e-5f, a->y);
}
static clf_status run_add_layernorm(clf_context *ctx, op_args *a) {
    return clf_layernorm(ctx, a->x, a->res, a->gamma, a->beta, 1e-5f, a->y);
}
static clf_status run_add_rmsnorm(clf_context *ctx, op_args *a) {
    return clf_rmsnorm(ctx, a->x, a->res, a->gamma, 1e-6f, a->res, a->y);
}
static clf_status run_rope(clf_context *ctx, op_args *a) {
    const int64_t dh = clf_tensor_dim(a->x, 1) == 40 ? 8 : 64;
    clf_rope_params p = clf_rope_default_params(clf_tensor_dim(a->x, 1) / dh, dh);
    p.theta = 500000.0f;
    p.pos_offset = 7;
    return clf_rope(ctx, a->x, &p);
}
static clf_status run_swiglu(clf_context *ctx, op_args *a) {
    return clf_gated_act(ctx, a->x, NULL, CLF_ACT_SILU, a->y);
}
static clf_status run_posenc(clf_context *ctx, op_args *a) {
    return clf_posenc_add(ctx, a->x, 0, a->y);
}
static clf_status run_embedding(clf_context *ctx, op_args *a) {
    return clf_embedding(ctx, a->ids, a->table, 22.627417f, 1, 0, a->y);
}
static clf_status run_bias_gelu(clf_context *ctx, op_args *a) {
    return clf_bias_act(ctx, a->x, a->bias, CLF_ACT_GELU_ERF, a->y);
}
static clf_status run_add(clf_context *ctx, op_args *a) {
    return clf_add(ctx, a->x, a->res, a->y);
}

typedef struct op_row {
    const char *name;
    op_size (*setup)(clf_context *ctx, size_t bytes, op_args *a, int *bad);
    op_fn run;
    double flops; /* per output element */
    int outputs;  /* tensors of the output's shape written (the rest of op_size.bytes is read) */
    int in_place; /* of those, written over a tensor the op read */
} op_row;

static const op_row k_ops[] = {
    {"softmax", setup_softmax, run_softmax, 5, 1, 0},
    {"layernorm", setup_layernorm, run_layernorm, 8, 1, 0},
    {"add_layernorm", setup_add_layernorm, run_add_layernorm, 11, 1, 0},
    {"add_rmsnorm", setup_add_rmsnorm, run_add_rmsnorm, 5, 2, 1},
    {"rope", setup_rope, run_rope, 3, 1, 1},
    {"posenc", setup_posenc, run_posenc, 5, 1, 0},
    {"embedding_posenc", setup_embedding, run_embedding, 6, 1, 0},
    {"bias_gelu", setup_bias_gelu, run_bias_gelu, 20, 1, 0},
    {"swiglu", setup_swiglu, run_swiglu, 6, 1, 0},
    {"add", setup_add, run_add, 1, 1, 0},
};

int bench_ops_touch_all(clf_context *ctx) {
    for (size_t i = 0; i < sizeof(k_ops) / sizeof(k_ops[0]); i++) {
        op_args a;
        memset(&a, 0, sizeof(a));
        int bad = 0;
        k_ops[i].setup(ctx, 0, &a, &bad);
        clf_status st = bad ? CLF_ERROR_INTERNAL : k_ops[i].run(ctx, &a);
        free_args(&a);
        if (st != CLF_SUCCESS) {
            fprintf(stderr, "clformer-bench: %s: %s: %s\n", k_ops[i].name, clf_strerror(st),
                    clf_context_last_error(ctx));
            return 1;
        }
    }
    return 0;
}

typedef struct op_call {
    op_fn fn;
    op_args *a;
} op_call;
static clf_status run_op(clf_context *ctx, void *arg) {
    const op_call *c = arg;
    return c->fn(ctx, c->a);
}

int bench_ops_run(clf_context *ctx, const bench_opts *o, const bench_peaks *p, bench_results *r) {
    for (size_t i = 0; i < sizeof(k_ops) / sizeof(k_ops[0]); i++) {
        const op_row *op = &k_ops[i];
        if (!bench_op_selected(o, op->name)) continue;
        bench_progress("op: %s", op->name);
        op_args a;
        memset(&a, 0, sizeof(a));
        int bad = 0;
        const op_size z = op->setup(ctx, (size_t)p->dram_bytes, &a, &bad);
        op_fn fn = op->run;
        bench_result res = bench_result_make(op->name, z.ndim, z.shape, "memory");
        double t[64];
        bench_roof_pair roof[64];
        int samples = o->samples > 64 ? 64 : o->samples;
        op_call call = {fn, &a};
        clf_status st = bad ? CLF_ERROR_INTERNAL
                            : bench_time_paired(ctx, o, run_op, &call, 2, samples, 5,
                                                BENCH_ROOF_MEMORY, t, roof);
        free_args(&a);
        if (st != CLF_SUCCESS) {
            fprintf(stderr, "clformer-bench: %s: %s: %s\n", op->name, clf_strerror(st),
                    clf_context_last_error(ctx));
            return 1;
        }
        double elements = 1;
        for (int d = 0; d < res.ndim; d++)
            elements *= (double)res.shape[d];
        const double wr = 4.0 * elements * op->outputs, wi = 4.0 * elements * op->in_place;
        /* before the median sorts t */
        bench_roof_judge(&res, z.bytes - wr, wr - wi, wi, t, roof, samples);
        res.ms = bench_median(t, samples);
        res.gbps = z.bytes / (res.ms * 1e6);
        res.gflops = op->flops * elements / (res.ms * 1e6);
        if (res.roof_gbps == 0)
            res.pct_peak = p->copy_gbps > 0 ? 100.0 * res.gbps / p->copy_gbps : 0;
        if (bench_add_result(r, &res)) return 1;
    }
    return 0;
}

/* GEMM shapes (M, N, K): a square reference, the Transformer's FFN products with 4096 tokens
 * and d = 512 (d -> 4d and 4d -> d), and small products (M <= 128 tokens). */
static const int64_t k_gemm_shapes[][3] = {
    {1024, 1024, 1024}, {4096, 2048, 512}, {4096, 512, 2048}, {128, 512, 512}, {128, 2048, 512}};

typedef struct gemm_call {
    clf_tensor *a, *b, *c;
} gemm_call;
static clf_status run_gemm(clf_context *ctx, void *arg) {
    gemm_call *g = arg;
    return clf_matmul(ctx, CLF_NO_TRANS, CLF_TRANS, 1.0f, g->a, g->b, 0.0f, g->c);
}

int bench_gemm_run(clf_context *ctx, const bench_opts *o, int tuned, bench_results *r) {
    if (!bench_op_selected(o, "gemm")) return 0;
    /* CPUs take clformer's packed kernels (src/ops/gemm.c), which no GEMM tuning changes: one
     * pass, not a CLBlast-defaults one and a tuned one. */
    int64_t pack = 0;
    clf_context_get_tunable(ctx, "linear.PACK", &pack);
    if (pack && !tuned) return 0;
    const size_t n_shapes = o->quick ? 4 : sizeof(k_gemm_shapes) / sizeof(k_gemm_shapes[0]);
    for (size_t i = 0; i < n_shapes; i++) {
        const int64_t m = k_gemm_shapes[i][0], n = k_gemm_shapes[i][1], k = k_gemm_shapes[i][2];
        bench_progress("op: gemm %lldx%lldx%lld (%s)", (long long)m, (long long)n, (long long)k,
                       pack    ? "packed kernels"
                       : tuned ? "tuned"
                               : "CLBlast defaults");
        int bad = 0;
        int64_t sa[2] = {m, k}, sb[2] = {n, k}, sc[2] = {m, n};
        clf_tensor *a = bench_make(ctx, CLF_F32, 2, sa, 0.01, &bad),
                   *b = bench_make(ctx, CLF_F32, 2, sb, 0.01, &bad);
        clf_tensor *c = bench_make(ctx, CLF_F32, 2, sc, 0, &bad);
        /* First call compiles; then the median of the samples (x W^T, as nn.Linear). */
        double t[16];
        bench_roof_pair roof[16];
        int samples = o->quick ? 3 : 7;
        gemm_call g = {a, b, c};
        clf_status st = bad ? CLF_ERROR_INTERNAL
                            : bench_time_paired(ctx, o, run_gemm, &g, 1, samples, 1,
                                                BENCH_ROOF_COMPUTE, t, roof);
        clf_tensor_free(a);
        clf_tensor_free(b);
        clf_tensor_free(c);
        if (st != CLF_SUCCESS) {
            fprintf(stderr, "clformer-bench: gemm: %s: %s\n", clf_strerror(st),
                    clf_context_last_error(ctx));
            return 1;
        }
        const int64_t sh[3] = {m, n, k};
        bench_result res = bench_result_make("gemm", 3, sh, "compute");
        bench_roof_judge_compute(&res, 2.0 * (double)m * (double)n * (double)k, t, roof, samples);
        res.ms = bench_median(t, samples);
        res.gflops = 2.0 * (double)m * (double)n * (double)k / (res.ms * 1e6);
        res.gbps = 4.0 * (double)(m * k + n * k + m * n) / (res.ms * 1e6);
        res.tuned = tuned;
        snprintf(res.params, sizeof(res.params), "%s",
                 pack ? "clformer packed kernels" : clf_gemm_tuning_source(ctx));
        if (bench_add_result(r, &res)) return 1;
    }
    return 0;
}

/* clf_linear_apply with prepared weights, the path clformer's models take (packed panels on CPUs):
 *   linear: (M tokens, N outputs, K inputs) of the models in the bench: MiniLM's fused QKV, FFN
 *           up and down at 32 x 128 tokens, the LLM's gate/up and down at a 512-token prompt;
 *           FLOP/s against the FMA roof.
 *   gemv, gemv_f16: one row through an (11008, 4096) weight (a 7B Llama's FFN; F32 180 MB, over
 *           4x a 32 MiB last-level cache) and a (22016, 4096) F16 one of the same bytes: bytes
 *           read against the read roof.
 *   gemv_q8_0, gemv_q4_0, gemv_q4_k, gemv_q6_k: the (11008, 4096) weight in ggml's blocks (48,
 *           25, 25 and 37 MB as stored; Q6_K: the head and half the down projections of a
 *           Q4_K_M file): the bytes of the blocks against the read roof. */
static const int64_t k_linear_shapes[][3] = {
    {4096, 1152, 384}, {4096, 1536, 384}, {4096, 384, 1536}, {512, 2048, 768}, {512, 768, 2048}};

typedef struct linear_call {
    clf_tensor *x, *y;
    clf_linear_weights *w;
} linear_call;
static clf_status run_linear(clf_context *ctx, void *arg) {
    linear_call *l = arg;
    return clf_linear_apply(ctx, l->x, l->w, NULL, CLF_ACT_IDENTITY, l->y);
}

static int linear_record(clf_context *ctx, const bench_opts *o, const char *op, clf_dtype wdt,
                         int64_t m, int64_t n, int64_t k, bench_results *r) {
    bench_progress("op: %s %lldx%lldx%lld", op, (long long)m, (long long)n, (long long)k);
    int bad = 0;
    int64_t sx[2] = {m, k}, sw[2] = {n, k}, sy[2] = {m, n};
    clf_tensor *x = bench_make(ctx, CLF_F32, 2, sx, 0.01, &bad),
               *w = make_weights(ctx, wdt, sw, &bad);
    clf_tensor *y = bench_make(ctx, CLF_F32, 2, sy, 0, &bad);
    clf_linear_weights *lw = NULL;
    clf_status st = bad ? CLF_ERROR_INTERNAL : clf_linear_prepare(ctx, w, &lw);
    clf_tensor_free(w);
    /* The first call builds the kernel; then the median of the samples. */
    double t[16];
    bench_roof_pair roof[16];
    const int samples = o->quick ? 3 : 7;
    linear_call l = {x, y, lw};
    /* One row reads the weights: paired with the memory roofs; more rows with the FMA roof. */
    if (st == CLF_SUCCESS)
        st = bench_time_paired(ctx, o, run_linear, &l, 1, samples, 1,
                               m == 1 ? BENCH_ROOF_MEMORY : BENCH_ROOF_COMPUTE, t, roof);
    int packed = 0;
    clf_linear_weights_info(lw, NULL, NULL, &packed);
    clf_linear_weights_free(lw);
    clf_tensor_free(x);
    clf_tensor_free(y);
    if (st != CLF_SUCCESS) {
        fprintf(stderr, "clformer-bench: %s: %s: %s\n", op, clf_strerror(st),
                clf_context_last_error(ctx));
        return 1;
    }
    const int64_t sh[3] = {m, n, k};
    bench_result res = bench_result_make(op, 3, sh, m == 1 ? "read" : "compute");
    const double rd = (double)clf_dtype_row_bytes(wdt, k) * (double)n + 4.0 * (double)(m * k),
                 wr = 4.0 * (double)(m * n), bytes = rd + wr;
    /* before the median sorts t */
    if (m == 1)
        bench_roof_judge(&res, rd, wr, 0, t, roof, samples);
    else
        bench_roof_judge_compute(&res, 2.0 * (double)m * (double)n * (double)k, t, roof, samples);
    res.ms = bench_median(t, samples);
    res.gflops = 2.0 * (double)m * (double)n * (double)k / (res.ms * 1e6);
    res.gbps = bytes / (res.ms * 1e6);
    snprintf(res.note, sizeof(res.note), "%s weights, %s", clf_dtype_name(wdt),
             packed ? "packed panels" : "as given");
    return bench_add_result(r, &res);
}

int bench_linear_run(clf_context *ctx, const bench_opts *o, bench_results *r) {
    if (bench_op_selected(o, "linear")) {
        const size_t n = o->quick ? 3 : sizeof(k_linear_shapes) / sizeof(k_linear_shapes[0]);
        for (size_t i = 0; i < n; i++)
            if (linear_record(ctx, o, "linear", CLF_F32, k_linear_shapes[i][0],
                              k_linear_shapes[i][1], k_linear_shapes[i][2], r))
                return 1;
    }
    if (bench_op_selected(o, "gemv") && linear_record(ctx, o, "gemv", CLF_F32, 1, 11008, 4096, r))
        return 1;
    if (bench_op_selected(o, "gemv_f16") &&
        linear_record(ctx, o, "gemv_f16", CLF_F16, 1, 22016, 4096, r))
        return 1;
    static const struct {
        const char *op;
        clf_dtype t;
    } q[] = {{"gemv_q8_0", CLF_Q8_0},
             {"gemv_q4_0", CLF_Q4_0},
             {"gemv_q4_k", CLF_Q4_K},
             {"gemv_q6_k", CLF_Q6_K}};
    for (size_t i = 0; i < sizeof(q) / sizeof(q[0]); i++)
        if (bench_op_selected(o, q[i].op) &&
            linear_record(ctx, o, q[i].op, q[i].t, 1, 11008, 4096, r))
            return 1;
    return 0;
}

void bench_gemm_finish(const bench_peaks *p, bench_results *r) {
    for (size_t i = 0; i < r->n; i++) {
        bench_result *x = &r->items[i];
        if (x->roof_gbps > 0 || x->roof_gflops > 0) /* judged against the roof run alongside */
            continue;
        if (strcmp(x->bound, "compute") == 0)
            x->pct_peak = p->fma_gflops > 0 ? 100.0 * x->gflops / p->fma_gflops : 0;
        else if (strcmp(x->bound, "read") == 0) /* decoding: weights and caches read once */
            x->pct_peak = p->read_gbps > 0 ? 100.0 * x->gbps / p->read_gbps : 0;
        else if (x->pct_peak == 0 && x->gbps > 0)
            x->pct_peak = p->copy_gbps > 0 ? 100.0 * x->gbps / p->copy_gbps : 0;
    }
}
