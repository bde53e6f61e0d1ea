/*
 * tunables.c — the one table of kernel tunables: each is a -D macro of one program, with a
 * default per device type. CPUs through PoCL want wide vectors and tiny work-groups (no local
 * memory staging); GPUs want coalesced float4 loads and large groups with tree reductions
 * (../shared/PERF.md has the measurements behind the CPU column).
 */
#include "internal.h"

#include <stdio.h>
#include <string.h>

const char *const clf__prog_names[CLF_PROG_COUNT] = {
    [CLF_PROG_SOFTMAX] = "softmax", [CLF_PROG_LAYERNORM] = "layernorm",
    [CLF_PROG_POSENC] = "posenc",   [CLF_PROG_ELEMENTWISE] = "elementwise",
    [CLF_PROG_LINEAR] = "linear",   [CLF_PROG_ATTENTION] = "attention",
};

const char *const clf__prog_preludes[CLF_PROG_COUNT] = {
    [CLF_PROG_ELEMENTWISE] = "activation",
    [CLF_PROG_LINEAR] = "activation",
};

/* Work-group dims per kernel: the -D macro each size is compiled in as (NULL: launch-time only),
 * and whether it must be a power of two (reduction trees). */
const clf_kernel_def clf__kernel_defs[CLF_K_COUNT] = {
    [CLF_K_SOFTMAX] = {CLF_PROG_SOFTMAX, "softmax_rows", {"WG", "RPG"}, {1, 0}},
    [CLF_K_LAYERNORM] = {CLF_PROG_LAYERNORM, "layernorm_rows", {"WG", "RPG"}, {1, 0}},
    [CLF_K_POSENC] = {CLF_PROG_POSENC, "embed_posenc", {"WG"}, {0}},
    [CLF_K_BIAS_ACT] = {CLF_PROG_ELEMENTWISE, "bias_act", {"WG"}, {0}},
    [CLF_K_ADD] = {CLF_PROG_ELEMENTWISE, "add", {"WG"}, {0}},
    [CLF_K_ARGMAX] = {CLF_PROG_ELEMENTWISE, "argmax_rows", {"ARGMAX_WG"}, {1}},
    [CLF_K_LINEAR_ROWS] = {CLF_PROG_LINEAR, "linear_rows", {"SK_LW"}, {1}},
    [CLF_K_PACK_PANELS] = {CLF_PROG_LINEAR, "pack_panels", {NULL}, {0}},
    [CLF_K_LINEAR_PACKED] = {CLF_PROG_LINEAR, "linear_packed", {NULL}, {0}},
    [CLF_K_ATTENTION] = {CLF_PROG_ATTENTION, "attention_tiled", {"BQ"}, {0}},
    [CLF_K_ATTENTION_COMBINE] = {CLF_PROG_ATTENTION, "attention_combine", {"BQ"}, {0}},
    [CLF_K_ATTENTION_T] = {CLF_PROG_ATTENTION, "attention_tiled_t", {"BQ"}, {0}},
    [CLF_K_ATTENTION_TRANSPOSE] = {CLF_PROG_ATTENTION, "attention_transpose_k", {NULL}, {0}},
};

/* name, program, cpu, gpu, fallback, power of two, max, min, host only */
const clf_tunable_def clf__tunable_defs[] = {
    /* Row kernels: VW floats per load, WG work-items share a row (tree reduction in local
     * memory when > 1), RPG rows per work-group. PoCL: one work-item owns a row with float16
     * loads (2.2 ms vs 20+ ms for a local-memory tree, PERF.md). */
    {"softmax.VW", CLF_PROG_SOFTMAX, 16, 4, 4, 1, 16, 1, 0},
    {"softmax.WG", CLF_PROG_SOFTMAX, 1, 128, 64, 1, 1024, 1, 0},
    {"softmax.RPG", CLF_PROG_SOFTMAX, 4, 1, 1, 0, 64, 1, 0},
    {"layernorm.VW", CLF_PROG_LAYERNORM, 16, 4, 4, 1, 16, 1, 0},
    {"layernorm.WG", CLF_PROG_LAYERNORM, 1, 128, 64, 1, 1024, 1, 0},
    {"layernorm.RPG", CLF_PROG_LAYERNORM, 4, 1, 1, 0, 64, 1, 0},
    /* Positional encoding: VW (sin, cos) pairs per work-item through vector sincos (scalar sin
     * and cos do not vectorize on PoCL 3.1: 31 ms vs 1.3-2.2 ms with sincos on float8), for PR
     * consecutive positions by rotation (one sincos per PR rows). 8 x 1024 x 512 on PoCL
     * (clformer-bench, one run): VW 8 PR 1 9.9 ms, VW 8 PR 8 2.9 ms, VW 16 PR 32 1.2 ms. */
    {"posenc.VW", CLF_PROG_POSENC, 16, 2, 2, 1, 16, 1, 0},
    {"posenc.PR", CLF_PROG_POSENC, 32, 2, 2, 0, 64, 1, 0},
    {"posenc.WG", CLF_PROG_POSENC, 16, 128, 64, 0, 1024, 1, 0},
    /* Elementwise: PoCL wants work-groups of 64+ (local size 8: 4 ms, >= 64: 0.5-0.9 ms). */
    {"elementwise.VW", CLF_PROG_ELEMENTWISE, 16, 4, 4, 1, 16, 1, 0},
    {"elementwise.WG", CLF_PROG_ELEMENTWISE, 64, 256, 64, 0, 1024, 1, 0},
    /* GELU's erf: 1 polynomial + exp (PoCL's erf(float16) runs scalar: 5x slower), 0 builtin. */
    {"elementwise.ARGMAX_WG", CLF_PROG_ELEMENTWISE, 1, 256, 64, 1, 1024, 1, 0},
    {"elementwise.ERF_POLY", CLF_PROG_ELEMENTWISE, 1, 0, 0, 0, 1, 0, 0},
    /* Linear layers (linear.cl): linear_rows (few rows: SK_ROWS rows per launch, SK_OPI outputs
     * per group, SK_LW work-items per row of w, SK_GM row blocks walked together) up to
     * SKINNY_MAX rows; on CPUs (PACK) weights packed once into panels for linear_packed (PK_R
     * rows x PK_NV vectors of VW outputs per work-item, PK_GM blocks walked together). */
    {"linear.VW", CLF_PROG_LINEAR, 16, 4, 4, 1, 16, 1, 0},
    {"linear.ERF_POLY", CLF_PROG_LINEAR, 1, 0, 0, 0, 1, 0, 0},
    {"linear.SK_ROWS", CLF_PROG_LINEAR, 8, 4, 4, 0, 16, 1, 0},
    {"linear.SK_OPI", CLF_PROG_LINEAR, 4, 1, 1, 0, 16, 1, 0},
    {"linear.SK_LW", CLF_PROG_LINEAR, 1, 64, 16, 1, 1024, 1, 0},
    {"linear.SK_GM", CLF_PROG_LINEAR, 8, 8, 8, 0, 1024, 1, 0},
    {"linear.PK_R", CLF_PROG_LINEAR, 8, 4, 4, 0, 16, 1, 0},
    {"linear.PK_NV", CLF_PROG_LINEAR, 2, 1, 1, 0, 8, 1, 0},
    {"linear.PK_GM", CLF_PROG_LINEAR, 4, 4, 4, 0, 1024, 1, 0},
    {"linear.PACK", CLF_PROG_LINEAR, 1, 0, 0, 0, 1, 0, 1},
    {"linear.SKINNY_MAX", CLF_PROG_LINEAR, 1 << 30, 8, 8, 0, 1 << 30, 0, 1},
    /* Attention: MAXVW caps the vector width (the host passes VW, the largest power of two
     * <= MAXVW dividing Dh, with DH per call); BQ queries per work-group;
     * SPLIT_NQ: at most this many queries take the split-key (flash-decoding) path, with
     * SPLIT_KEYS keys per split. */
    {"attention.MAXVW", CLF_PROG_ATTENTION, 16, 4, 4, 1, 16, 1, 1},
    {"attention.BQ", CLF_PROG_ATTENTION, 4, 64, 32, 0, 1024, 1, 1},
    {"attention.SPLIT_NQ", CLF_PROG_ATTENTION, 4, 4, 4, 0, 1024, 0, 1},
    {"attention.SPLIT_KEYS", CLF_PROG_ATTENTION, 256, 256, 256, 0, 1 << 20, 1, 1},
    /* BQ and QB reach the kernels as per-call options, per head size (clf_attention_tune
     * keeps tuned pairs per device and Dh), so they are host-side here. */
    /* KT 1: score on keys transposed once per call (vector of VW keys per multiply-add). */
    {"attention.KT", CLF_PROG_ATTENTION, 1, 1, 1, 0, 1, 0, 1},
    /* MAXHG: at most this many consecutive heads per work-item of the row kernel (split-key
     * decoding): the largest divisor of H up to it is used, so a work-item reads whole rows of
     * K and V (CPUs: the prefetchers see one stream, not H strided ones). */
    {"attention.MAXHG", CLF_PROG_ATTENTION, 8, 1, 1, 0, 64, 1, 1},
    {"attention.QB", CLF_PROG_ATTENTION, 16, 1, 1, 0, 16, 1, 1},
    /* KC keys per chunk between the barriers of attention_tiled_t (a power of two >= 16, so a
     * multiple of VW): a group's work-items share each chunk's K and V rows while cached.
     * PoCL, B 1 H 8 Dh 64 N 2048, interleaved A/B: 173-177 ms with chunks of 256 vs 248 ms
     * without (work-items one after another over all keys). */
    {"attention.KC", CLF_PROG_ATTENTION, 256, 256, 256, 1, 4096, 16, 0},
};
const size_t clf__tunable_count = sizeof(clf__tunable_defs) / sizeof(clf__tunable_defs[0]);

int clf__tunable_find(const char *name) {
    if (!name) return -1;
    for (size_t i = 0; i < clf__tunable_count; i++)
        if (strcmp(clf__tunable_defs[i].name, name) == 0) return (int)i;
    return -1;
}

int64_t clf__tunable_default(const clf_tunable_def *def, clf_device_type type) {
    switch (type) {
    case CLF_DEVICE_CPU:
        return def->cpu;
    case CLF_DEVICE_GPU:
        return def->gpu;
    default:
        return def->fallback;
    }
}

int clf__build_options_with(clf_prog_id prog, const int64_t *values, clf_device_type type,
                            const char *const *macros, const int64_t *macro_values, int n,
                            char *buf, size_t size) {
    size_t off = 0;
    int w = snprintf(buf, size, "-DCLF_DEVICE_TYPE=%d", (int)type);
    if (w < 0 || (size_t)w >= size) return -1;
    off = (size_t)w;
    bool used[3] = {false, false, false};
    if (n > 3) return -1;
    for (size_t i = 0; i < clf__tunable_count; i++) {
        const clf_tunable_def *d = &clf__tunable_defs[i];
        if (d->prog != prog || d->host) continue;
        const char *macro = strchr(d->name, '.');
        macro = macro ? macro + 1 : d->name;
        int64_t v = values[i];
        for (int j = 0; j < n; j++)
            if (strcmp(macros[j], macro) == 0) {
                v = macro_values[j];
                used[j] = true;
            }
        w = snprintf(buf + off, size - off, " -D%s=%lld", macro, (long long)v);
        if (w < 0 || (size_t)w >= size - off) return -1;
        off += (size_t)w;
    }
    for (int j = 0; j < n; j++) {
        if (used[j]) continue;
        w = snprintf(buf + off, size - off, " -D%s=%lld", macros[j], (long long)macro_values[j]);
        if (w < 0 || (size_t)w >= size - off) return -1;
        off += (size_t)w;
    }
    return 0;
}

int clf__build_options(clf_prog_id prog, const int64_t *values, clf_device_type type, char *buf,
                       size_t size) {
    return clf__build_options_with(prog, values, type, NULL, NULL, 0, buf, size);
}

int64_t clf__tun(const clf_context *ctx, const char *name) {
    int i = clf__tunable_find(name);
    return i < 0 ? 1 : ctx->tunables[i];
}
