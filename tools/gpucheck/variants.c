/*
 * clformer-gpu-variants — makes the library build every kernel variant a context on the chosen
 * device would build, and records each program's source, options and launch shape through the
 * developer option clf_context_params.program_log_dir. scripts/gpu-compile-check.sh runs it on
 * Oclgrind (which takes the GPU column of the tunables) and compiles what it records with the
 * NVIDIA, AMD and Intel offline compilers.
 *
 *   clformer-gpu-variants --log DIR [--device SPEC] [--profile VENDOR] [--record-only]
 *                         [--tunable NAME=VALUE ...]
 *
 * --profile: clf_context_params.device_profile (nvidia, amd-cdna, amd-rdna, intel): the tunables
 * that vendor's GPUs get.
 * --record-only: clf_context_params.program_log_only: every kernel built, fitted and recorded,
 * none run (on Oclgrind, running them was three quarters of a profile's 55 s).
 *
 * What it runs, on tiny shapes (what matters is which programs get built, not the numbers): every
 * non-attention op with its real launch (so the logged work-group is the launched one), then
 * clf_context_warmup for anything an op call missed; linear layers with weights of every type, a
 * few rows (the decode style) and many (CLBlast or the tiled style), and the packed style;
 * attention at every head size of HEAD_DIMS with F32 and F16 K/V, for decoding (one query, keys
 * in one piece and split) and prefill, on the tiled path (local-memory attention off) and the
 * local-memory path (on). A failed call fails the run with the library's message.
 */
#include <clformer/clformer.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const int64_t HEAD_DIMS[] = {32, 64, 80, 96, 128, 256};

static clf_context *g_ctx;
static int g_failed;

#define TRY(call)                                                                                  \
    do {                                                                                           \
        clf_status st_ = (call);                                                                   \
        if (st_ != CLF_SUCCESS) {                                                                  \
            fprintf(stderr, "clformer-gpu-variants: %s failed: %s: %s\n", #call,                   \
                    clf_strerror(st_), clf_context_last_error(g_ctx));                             \
            g_failed = 1;                                                                          \
            goto done;                                                                             \
        }                                                                                          \
    } while (0)

/* A tensor of the given shape filled with a small value (F16 tensors through fill too). */
static clf_tensor *make(clf_dtype dt, int ndim, int64_t d0, int64_t d1, int64_t d2, double fill) {
    const int64_t shape[3] = {d0, d1, d2};
    clf_tensor *t = NULL;
    if (clf_tensor_create(g_ctx, dt, ndim, shape, &t) != CLF_SUCCESS ||
        clf_tensor_fill(t, fill) != CLF_SUCCESS) {
        fprintf(stderr, "clformer-gpu-variants: tensor: %s\n", clf_context_last_error(g_ctx));
        clf_tensor_free(t);
        return NULL;
    }
    return t;
}

static int run_elementwise(void) {
    enum { R = 5, N = 72, V = 300 };
    clf_tensor *x = make(CLF_F32, 2, R, N, 0, 0.5), *y = make(CLF_F32, 2, R, N, 0, 0);
    clf_tensor *g = make(CLF_F32, 1, N, 0, 0, 1), *b = make(CLF_F32, 1, N, 0, 0, 0.1);
    clf_tensor *sum = make(CLF_F32, 2, R, N, 0, 0), *logits = make(CLF_F32, 2, 2, V, 0, 0.25);
    clf_tensor *ids = make(CLF_I32, 1, R, 0, 0, 1), *table = make(CLF_F32, 2, 7, N, 0, 0.5);
    clf_tensor *lens = make(CLF_I32, 1, 1, 0, 0, 3), *out_ids = make(CLF_I32, 1, 2, 0, 0, 0);
    clf_tensor *q = make(CLF_F32, 3, 1, R, 4 * 64, 0.5), *u = make(CLF_F32, 1, 2, 0, 0, 0.5);
    clf_tensor *seen = make(CLF_I32, 2, 2, V, 0, 0);
    int rc = 1;
    if (!x || !y || !g || !b || !sum || !logits || !ids || !table || !lens || !out_ids || !q ||
        !u || !seen)
        goto done;
    clf_mask mask = {lens, 1, 0, 0};
    TRY(clf_softmax(g_ctx, x, y, &mask));
    TRY(clf_layernorm(g_ctx, x, y, g, b, 1e-5f, y));
    TRY(clf_rmsnorm(g_ctx, x, y, g, 1e-5f, sum, y));
    clf_rope_params rp = clf_rope_default_params(4, 64);
    TRY(clf_rope(g_ctx, q, &rp));
    rp.layout = CLF_ROPE_INTERLEAVED;
    TRY(clf_rope(g_ctx, q, &rp));
    TRY(clf_posenc_add(g_ctx, x, 3, y));
    TRY(clf_embedding(g_ctx, ids, table, 1.0f, 1, 0, y));
    for (int act = CLF_ACT_IDENTITY; act <= CLF_ACT_SILU; act++) {
        TRY(clf_bias_act(g_ctx, x, b, (clf_activation)act, y));
        TRY(clf_gated_act(g_ctx, x, x, (clf_activation)act, y));
    }
    TRY(clf_add(g_ctx, x, x, y));
    TRY(clf_argmax(g_ctx, logits, out_ids));
    clf_sampling_params sp = clf_sampling_default_params();
    sp.temperature = 0.8f;
    sp.top_k = 5;
    sp.top_p = 0.9f;
    sp.repetition_penalty = 1.1f;
    TRY(clf_sample(g_ctx, logits, &sp, u, seen, out_ids));
    rc = 0;
done:
    clf_tensor_free(x), clf_tensor_free(y), clf_tensor_free(g), clf_tensor_free(b);
    clf_tensor_free(sum), clf_tensor_free(logits), clf_tensor_free(ids), clf_tensor_free(table);
    clf_tensor_free(lens), clf_tensor_free(out_ids), clf_tensor_free(q), clf_tensor_free(u);
    clf_tensor_free(seen);
    return rc;
}

/* Weights (out, in) of any type: plain ones filled, block types zero bytes (valid blocks). */
static clf_tensor *make_weights(clf_dtype dt, int64_t out, int64_t in) {
    if (clf_dtype_block(dt) == 1) return make(dt, 2, out, in, 0, 0.25);
    const int64_t shape[2] = {out, in};
    clf_tensor *t = NULL;
    void *zeros = calloc(1, clf_dtype_row_bytes(dt, in) * (size_t)out);
    if (!zeros || clf_tensor_create(g_ctx, dt, 2, shape, &t) != CLF_SUCCESS ||
        clf_tensor_write(t, zeros, clf_tensor_bytes(t)) != CLF_SUCCESS) {
        fprintf(stderr, "clformer-gpu-variants: weights: %s\n", clf_context_last_error(g_ctx));
        clf_tensor_free(t);
        t = NULL;
    }
    free(zeros);
    return t;
}

/* Linear layers: rows 1 (decode style) and 40 (past linear.SKINNY_MAX: CLBlast for F32 weights,
 * the tiled kernel for the other types on GPUs), weights of every type dtypes.cl has, through
 * clf_linear and prepared. */
static int run_linear(void) {
    enum { IN = 256, OUT = 72 };
    static const clf_dtype types[] = {CLF_F32,  CLF_F16,  CLF_BF16, CLF_Q8_0,
                                      CLF_Q4_0, CLF_Q4_K, CLF_Q6_K};
    const int64_t rows[] = {1, 2, 3, 40};
    int rc = 1;
    clf_tensor *b = make(CLF_F32, 1, OUT, 0, 0, 0.1), *w = NULL, *x = NULL, *y = NULL;
    clf_linear_weights *lw = NULL;
    if (!b) goto done;
    for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
        clf_tensor_free(w);
        if (!(w = make_weights(types[t], OUT, IN))) goto done;
        for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
            clf_tensor_free(x), clf_tensor_free(y);
            x = make(CLF_F32, 2, rows[i], IN, 0, 0.5);
            y = make(CLF_F32, 2, rows[i], OUT, 0, 0);
            if (!x || !y) goto done;
            TRY(clf_linear(g_ctx, x, w, b, CLF_ACT_GELU_ERF, y));
            TRY(clf_linear_prepare(g_ctx, w, &lw));
            TRY(clf_linear_apply(g_ctx, x, lw, NULL, CLF_ACT_SILU, y));
            clf_linear_weights_free(lw);
            lw = NULL;
        }
    }
    rc = 0;
done:
    clf_linear_weights_free(lw);
    clf_tensor_free(b), clf_tensor_free(w), clf_tensor_free(x), clf_tensor_free(y);
    return rc;
}

/* Attention at head size dh, K/V F32 or F16: a decoding step over keys in one piece and over
 * keys split (attention.SPLIT_KEYS), and a causal prefill. */
static int run_attention(int64_t dh, int half) {
    enum { H = 4, KVH = 2, NQ = 9, NK = 140 }; /* NK over main's attention.SPLIT_KEYS of 64 */
    int rc = 1;
    clf_tensor *q = make(CLF_F32, 3, 1, NQ, H * dh, 0.5), *out = make(CLF_F32, 3, 1, NQ, H * dh, 0);
    clf_tensor *q1 = make(CLF_F32, 3, 1, 1, H * dh, 0.5), *o1 = make(CLF_F32, 3, 1, 1, H * dh, 0);
    clf_tensor *k = make(half ? CLF_F16 : CLF_F32, 3, 1, NK, KVH * dh, 0.25);
    clf_tensor *v = make(half ? CLF_F16 : CLF_F32, 3, 1, NK, KVH * dh, 0.75);
    if (!q || !out || !q1 || !o1 || !k || !v) goto done;
    clf_attention_params p = clf_attention_default_params(H, dh);
    p.kv_heads = KVH;
    p.nk = 7; /* decoding, keys in one piece */
    TRY(clf_attention(g_ctx, q1, k, v, o1, &p));
    p.nk = NK; /* decoding, keys split */
    TRY(clf_attention(g_ctx, q1, k, v, o1, &p));
    p.nk = NQ; /* prefill, causal */
    p.mask.causal = 1;
    TRY(clf_attention(g_ctx, q, k, v, out, &p));
    p.nk = NK; /* prefill after a cache */
    p.mask.causal_offset = NK - NQ;
    TRY(clf_attention(g_ctx, q, k, v, out, &p));
    rc = 0;
done:
    clf_tensor_free(q), clf_tensor_free(out), clf_tensor_free(q1), clf_tensor_free(o1);
    clf_tensor_free(k), clf_tensor_free(v);
    return rc;
}

int main(int argc, char **argv) {
    const char *log = NULL, *spec = NULL, *profile = NULL;
    const char *tunables[32];
    int n_tunables = 0, record_only = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--log") && i + 1 < argc) {
            log = argv[++i];
        } else if (!strcmp(argv[i], "--device") && i + 1 < argc) {
            spec = argv[++i];
        } else if (!strcmp(argv[i], "--profile") && i + 1 < argc) {
            profile = argv[++i];
        } else if (!strcmp(argv[i], "--record-only")) {
            record_only = 1;
        } else if (!strcmp(argv[i], "--tunable") && i + 1 < argc && n_tunables < 32) {
            tunables[n_tunables++] = argv[++i];
        } else {
            fprintf(stderr, "usage: clformer-gpu-variants --log DIR [--device SPEC] "
                            "[--profile VENDOR] [--record-only] [--tunable NAME=VALUE ...]\n");
            return 2;
        }
    }
    if (!log) {
        fprintf(stderr, "clformer-gpu-variants: --log DIR is required\n");
        return 2;
    }
    clf_error err;
    clf_context_params cp = clf_context_default_params();
    cp.device_spec = spec;
    cp.program_log_dir = log;
    cp.device_profile = profile;
    cp.program_log_only = record_only;
    cp.disk_cache = 0; /* every program through the compiler: nothing to gain from a cache */
    cp.error = &err;
    clf_status st = clf_context_create(&g_ctx, &cp);
    if (st != CLF_SUCCESS) {
        fprintf(stderr, "clformer-gpu-variants: no context: %s: %s\n", clf_strerror(st),
                err.message);
        return 1;
    }
    for (int i = 0; i < n_tunables; i++) {
        char name[128];
        const char *eq = strchr(tunables[i], '=');
        if (!eq || (size_t)(eq - tunables[i]) >= sizeof(name)) {
            fprintf(stderr, "clformer-gpu-variants: --tunable %s: NAME=VALUE\n", tunables[i]);
            clf_context_free(g_ctx);
            return 2;
        }
        memcpy(name, tunables[i], (size_t)(eq - tunables[i]));
        name[eq - tunables[i]] = '\0';
        TRY(clf_context_set_tunable(g_ctx, name, strtoll(eq + 1, NULL, 10)));
    }
    clf_device_info info;
    TRY(clf_context_device_info(g_ctx, &info));
    printf("clformer-gpu-variants: %s (%s), logging to %s\n", info.name, info.vendor, log);
    if (run_elementwise() || run_linear()) goto done;
    /* Keys split from 64 (host-only, and no smaller than any profile's attention.LOCAL_WG: the
     * same programs as at the default 256, on a simulator's
     * budget). */
    TRY(clf_context_set_tunable(g_ctx, "attention.SPLIT_KEYS", 64));
    TRY(clf_context_warmup(g_ctx));
    for (int local = 1; local >= 0; local--) {
        TRY(clf_context_set_tunable(g_ctx, "attention.LOCAL_KV", local));
        for (size_t i = 0; i < sizeof(HEAD_DIMS) / sizeof(HEAD_DIMS[0]); i++)
            for (int half = 0; half < 2; half++)
                if (run_attention(HEAD_DIMS[i], half)) goto done;
    }
done:
    clf_context_free(g_ctx);
    return g_failed ? 1 : 0;
}
