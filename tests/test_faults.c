/*
 * test_faults.c — injected OpenCL failures. For each kind of call (buffer allocation, program
 * build, kernel enqueue, transfer) and each N, the Nth such call of a representative workload
 * fails: the failing call must return an error status with a message, the op's output must stay
 * untouched, nothing may leak (ASan build), and the same context must then run the whole
 * workload correctly.
 */
#include "harness.h"
#include "../src/internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { R = 6, N = 77, B = 2, S = 9, H = 4, DH = 8, OUT = 40 };

typedef struct outputs {
    float sm[R * N], ln[R * N], att[B * S * H * DH], lin[R * OUT];
} outputs;

typedef struct inputs {
    float x[R * N], g[N], b[N], qkv[B * S * H * DH], w[OUT * N];
} inputs;

/* Runs the workload; on failure returns the status and names the failing op. Output tensors
 * are read back (poisoned values where an op did not write) when the failure left them. */
/* The message of the workload's last call (later calls that succeed clear the context's). */
static char g_fail_msg[2048];

static clf_status workload(clf_context *ctx, const inputs *in, outputs *out, const char **op,
                           int *out_untouched) {
    int64_t sx[2] = {R, N}, sn[1] = {N}, sq[3] = {B, S, H * DH}, sw[2] = {OUT, N}, sy[2] = {R, OUT};
    clf_tensor *x = NULL, *g = NULL, *b = NULL, *q = NULL, *w = NULL, *sm = NULL, *ln = NULL,
               *att = NULL, *y = NULL;
    clf_status st = CLF_SUCCESS;
    *op = "create";
    *out_untouched = 1;
#define STEP(name, call)                                                                           \
    if (st == CLF_SUCCESS) {                                                                       \
        *op = name;                                                                                \
        st = (call);                                                                               \
        snprintf(g_fail_msg, sizeof(g_fail_msg), "%s", clf_context_last_error(ctx));               \
    }
    STEP("create x", clf_tensor_create(ctx, CLF_F32, 2, sx, &x));
    STEP("create g", clf_tensor_create(ctx, CLF_F32, 1, sn, &g));
    STEP("create b", clf_tensor_create(ctx, CLF_F32, 1, sn, &b));
    STEP("create q", clf_tensor_create(ctx, CLF_F32, 3, sq, &q));
    STEP("create w", clf_tensor_create(ctx, CLF_F32, 2, sw, &w));
    STEP("create sm", clf_tensor_create(ctx, CLF_F32, 2, sx, &sm));
    STEP("create ln", clf_tensor_create(ctx, CLF_F32, 2, sx, &ln));
    STEP("create att", clf_tensor_create(ctx, CLF_F32, 3, sq, &att));
    STEP("create y", clf_tensor_create(ctx, CLF_F32, 2, sy, &y));
    STEP("write x", clf_tensor_write(x, in->x, sizeof(in->x)));
    STEP("write g", clf_tensor_write(g, in->g, sizeof(in->g)));
    STEP("write b", clf_tensor_write(b, in->b, sizeof(in->b)));
    STEP("write q", clf_tensor_write(q, in->qkv, sizeof(in->qkv)));
    STEP("write w", clf_tensor_write(w, in->w, sizeof(in->w)));
    STEP("poison sm", clf_tensor_fill(sm, NAN));
    STEP("poison ln", clf_tensor_fill(ln, NAN));
    STEP("poison att", clf_tensor_fill(att, NAN));
    STEP("poison y", clf_tensor_fill(y, NAN));
    clf_attention_params d = clf_attention_default_params(H, DH);
    d.mask.causal = 1;
    STEP("softmax", clf_softmax(ctx, x, sm, NULL));
    STEP("layernorm", clf_layernorm(ctx, x, NULL, g, b, 1e-5f, ln));
    STEP("attention", clf_attention(ctx, q, q, q, att, &d));
    STEP("linear", clf_linear(ctx, x, w, NULL, CLF_ACT_RELU, y));
    STEP("read sm", clf_tensor_read(sm, out->sm, sizeof(out->sm)));
    STEP("read ln", clf_tensor_read(ln, out->ln, sizeof(out->ln)));
    STEP("read att", clf_tensor_read(att, out->att, sizeof(out->att)));
    STEP("read y", clf_tensor_read(y, out->lin, sizeof(out->lin)));
#undef STEP
    if (st != CLF_SUCCESS) {
        /* The failing op's output must still hold the poison (read it with faults off). */
        clf_tensor *t = strcmp(*op, "softmax") == 0     ? sm
                        : strcmp(*op, "layernorm") == 0 ? ln
                        : strcmp(*op, "attention") == 0 ? att
                                                        : NULL;
        if (t) {
            for (int k = 0; k < CLF_FAULT_KINDS; k++)
                clf__fault_set(ctx, (clf_fault_kind)k, -1);
            float *h = malloc(clf_tensor_bytes(t));
            if (clf_tensor_read(t, h, clf_tensor_bytes(t)) != CLF_SUCCESS) *out_untouched = 0;
            for (int64_t i = 0; i < clf_tensor_numel(t); i++)
                if (!isnan(h[i])) *out_untouched = 0;
            free(h);
        }
    }
    clf_tensor *all[] = {x, g, b, q, w, sm, ln, att, y};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        clf_tensor_free(all[i]);
    return st;
}

static clf_context *fresh(void) {
    clf_context_params p = clf_context_default_params();
    p.disk_cache = 0; /* every program is built from source: BUILD faults can hit each */
    clf_context *ctx = NULL;
    CLF_OK(clf_context_create(&ctx, &p));
    return ctx;
}

static void test_fault_walk(void **state) {
    (void)state;
    rng_seed(71);
    static inputs in;
    static outputs base, got;
    for (int i = 0; i < R * N; i++)
        in.x[i] = (float)rng_normal();
    for (int i = 0; i < N; i++) {
        in.g[i] = (float)rng_uniform(0.5, 1.5);
        in.b[i] = (float)rng_uniform(-1, 1);
    }
    for (int i = 0; i < B * S * H * DH; i++)
        in.qkv[i] = (float)rng_uniform(-1, 1);
    for (int i = 0; i < OUT * N; i++)
        in.w[i] = (float)rng_uniform(-0.2, 0.2);
    const char *op;
    int untouched;
    clf_context *ctx = fresh();
    assert_int_equal(workload(ctx, &in, &base, &op, &untouched), CLF_SUCCESS);
    clf_context_free(ctx);

    const char *kinds[CLF_FAULT_KINDS] = {"alloc", "build", "enqueue", "transfer"};
    int total = 0;
    for (int k = 0; k < CLF_FAULT_KINDS; k++) {
        for (int64_t n = 0;; n++) {
            ctx = fresh();
            clf__fault_set(ctx, (clf_fault_kind)k, n);
            clf_status st = workload(ctx, &in, &got, &op, &untouched);
            if (st == CLF_SUCCESS) { /* the walk passed the last call of this kind */
                assert_memory_equal(&got, &base, sizeof(got));
                harness_free_checked(ctx, kinds[k]);
                fprintf(stderr, "faults: %s: %lld calls, each failure handled\n", kinds[k],
                        (long long)n);
                assert_true(n > 0);
                break;
            }
            total++;
            if (strlen(g_fail_msg) == 0)
                fail_msg("%s fault %lld in %s: status %d without a message", kinds[k], (long long)n,
                         op, st);
            if (!untouched)
                fail_msg("%s fault %lld in %s: the op's output was written", kinds[k], (long long)n,
                         op);
            /* The context still works. */
            for (int j = 0; j < CLF_FAULT_KINDS; j++)
                clf__fault_set(ctx, (clf_fault_kind)j, -1);
            st = workload(ctx, &in, &got, &op, &untouched);
            if (st != CLF_SUCCESS)
                fail_msg("after %s fault %lld: %s failed: %s", kinds[k], (long long)n, op,
                         clf_context_last_error(ctx));
            assert_memory_equal(&got, &base, sizeof(got));
            char when[64];
            snprintf(when, sizeof(when), "%s fault %lld", kinds[k], (long long)n);
            harness_free_checked(ctx, when);
        }
    }
    assert_true(total > 20);
}

/* The model workload: load the seeds' encoder and decoder from safetensors, encode a batch with
 * valid lengths, init the decoder state, decode two tokens one at a time. Returns the logits of
 * the last step in out (B x V). */
enum { MB = 3, MV = 203 };
static clf_status model_workload(clf_context *ctx, float *out, const char **op,
                                 int64_t *len_after) {
    char path[512];
    clf_error err = {""};
    snprintf(path, sizeof(path), "%s/tests/data/d2l_weights.safetensors", CLF_SRC);
    clf_safetensors *st = NULL;
    clf_encoder *enc = NULL;
    clf_decoder *dec = NULL;
    clf_tensor *src = NULL, *vl = NULL, *eo = NULL, *ids = NULL, *lg = NULL;
    clf_transformer_params ec = clf_transformer_default_params(197, 32, 64, 4, 2);
    ec.use_bias = 1;
    clf_transformer_params dc = clf_transformer_default_params(MV, 32, 64, 4, 2);
    int32_t sh[MB * 9], lens[MB] = {9, 5, 2}, tok[MB] = {1, 1, 1};
    for (int i = 0; i < MB * 9; i++)
        sh[i] = 3 + (i * 37) % 190;
    int64_t ss[2] = {MB, 9}, es[3] = {MB, 9, 32}, is[2] = {MB, 1}, ls[3] = {MB, 1, MV}, nb = MB;
    clf_status rc = clf_safetensors_open(path, &st, &err);
    *op = "open";
    *len_after = -1;
#define STEP(name, call)                                                                           \
    if (rc == CLF_SUCCESS) {                                                                       \
        *op = name;                                                                                \
        rc = (call);                                                                               \
    }
    STEP("encoder load", clf_encoder_load(ctx, st, "encoder.", &ec, &enc));
    STEP("decoder load", clf_decoder_load(ctx, st, "decoder.", &dc, &dec));
    STEP("create src", clf_tensor_create(ctx, CLF_I32, 2, ss, &src));
    STEP("create vl", clf_tensor_create(ctx, CLF_I32, 1, &nb, &vl));
    STEP("create eo", clf_tensor_create(ctx, CLF_F32, 3, es, &eo));
    STEP("create ids", clf_tensor_create(ctx, CLF_I32, 2, is, &ids));
    STEP("create lg", clf_tensor_create(ctx, CLF_F32, 3, ls, &lg));
    STEP("write src", clf_tensor_write(src, sh, sizeof(sh)));
    STEP("write vl", clf_tensor_write(vl, lens, sizeof(lens)));
    STEP("write ids", clf_tensor_write(ids, tok, sizeof(tok)));
    STEP("encoder forward", clf_encoder_forward(enc, src, vl, eo));
    STEP("init state", clf_decoder_init_state(dec, eo, vl, 4));
    STEP("step 1", clf_decoder_step(dec, ids, lg));
    STEP("argmax", clf_argmax(ctx, lg, ids));
    if (rc == CLF_SUCCESS) *len_after = clf_decoder_length(dec);
    STEP("step 2", clf_decoder_step(dec, ids, lg));
    if (rc != CLF_SUCCESS && strcmp(*op, "step 2") == 0 && clf_decoder_length(dec) != *len_after)
        *len_after = -2; /* a failed step changed the decoded length */
    STEP("read", clf_tensor_read(lg, out, MB * MV * sizeof(float)));
#undef STEP
    clf_tensor *all[] = {src, vl, eo, ids, lg};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        clf_tensor_free(all[i]);
    clf_encoder_free(enc);
    clf_decoder_free(dec);
    clf_safetensors_free(st);
    return rc;
}

/* Every allocation, enqueue and transfer of loading and running the model fails in turn (builds
 * are the first walk's: programs come from the disk cache here), one test per kind of call (CTest
 * runs them as two entries side by side: together they were 99 s of the PoCL suite's 619). */
static void model_walk(clf_fault_kind kind, const char *name) {
    static float base[MB * MV], got[MB * MV];
    const char *op;
    int64_t len;
    clf_context_params p = clf_context_default_params();
    clf_context *ctx = NULL;
    CLF_OK(clf_context_create(&ctx, &p));
    CLF_OK(model_workload(ctx, base, &op, &len));
    clf_context_free(ctx);
    for (int64_t n = 0;; n++) {
        CLF_OK(clf_context_create(&ctx, &p));
        clf__fault_set(ctx, kind, n);
        clf_status st = model_workload(ctx, got, &op, &len);
        if (st == CLF_SUCCESS) {
            assert_memory_equal(got, base, sizeof(got));
            harness_free_checked(ctx, name);
            fprintf(stderr, "faults: model %s: %lld calls, each failure handled\n", name,
                    (long long)n);
            assert_true(n > 10);
            break;
        }
        if (strlen(clf_context_last_error(ctx)) == 0)
            fail_msg("model %s fault %lld in %s: status %d without a message", name, (long long)n,
                     op, st);
        if (len == -2)
            fail_msg("model %s fault %lld: a failed decoder step changed the state", name,
                     (long long)n);
        clf__fault_set(ctx, kind, -1);
        st = model_workload(ctx, got, &op, &len);
        if (st != CLF_SUCCESS)
            fail_msg("after model %s fault %lld: %s failed: %s", name, (long long)n, op,
                     clf_context_last_error(ctx));
        assert_memory_equal(got, base, sizeof(got));
        char when[64];
        snprintf(when, sizeof(when), "model %s fault %lld", name, (long long)n);
        harness_free_checked(ctx, when);
    }
}

static void test_fault_walk_model_alloc(void **state) {
    (void)state;
    model_walk(CLF_FAULT_ALLOC, "alloc");
}

static void test_fault_walk_model_enqueue(void **state) {
    (void)state;
    model_walk(CLF_FAULT_ENQUEUE, "enqueue");
}

static void test_fault_walk_model_transfer(void **state) {
    (void)state;
    model_walk(CLF_FAULT_TRANSFER, "transfer");
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_fault_walk),
                                       cmocka_unit_test(test_fault_walk_model_alloc),
                                       cmocka_unit_test(test_fault_walk_model_enqueue),
                                       cmocka_unit_test(test_fault_walk_model_transfer)};
    return HARNESS_RUN("faults", tests);
}
