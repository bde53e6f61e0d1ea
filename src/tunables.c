/*
 * tunables.c — the library's programs and kernels, the tunables table (generated from
 * tunables.def), and the -D options of a program built from them.
 */
#include "internal.h"

#include <stdio.h>
#include <string.h>

const char *const clf__prog_names[CLF_PROG_COUNT] = {
    [CLF_PROG_SOFTMAX] = "softmax",         [CLF_PROG_LAYERNORM] = "layernorm",
    [CLF_PROG_POSENC] = "posenc",           [CLF_PROG_ROPE] = "rope",
    [CLF_PROG_ELEMENTWISE] = "elementwise", [CLF_PROG_LINEAR] = "linear",
    [CLF_PROG_ATTENTION] = "attention",     [CLF_PROG_ATTENTION_LOCAL] = "attention_local",
    [CLF_PROG_SAMPLE] = "sample",
};

const char *const clf__prog_preludes[CLF_PROG_COUNT][CLF_PRELUDES] = {
    [CLF_PROG_ELEMENTWISE] = {"activation"},
    [CLF_PROG_LINEAR] = {"activation", "linear_int", "linear_tiled"},
};

/* Work-group dims per kernel: the -D macro each size is compiled in as (NULL: launch-time only),
 * and whether it must be a power of two (reduction trees). */
const clf_kernel_def clf__kernel_defs[CLF_K_COUNT] = {
    [CLF_K_SOFTMAX] = {CLF_PROG_SOFTMAX, "softmax_rows", {"WG", "RPG"}, {1, 0}},
    [CLF_K_LAYERNORM] = {CLF_PROG_LAYERNORM, "layernorm_rows", {"WG", "RPG"}, {1, 0}},
    [CLF_K_RMSNORM] = {CLF_PROG_LAYERNORM, "rmsnorm_rows", {"WG", "RPG"}, {1, 0}},
    [CLF_K_ROPE] = {CLF_PROG_ROPE, "rope_rows", {NULL, NULL}, {0, 0}},
    [CLF_K_POSENC] = {CLF_PROG_POSENC, "embed_posenc", {"WG"}, {0}},
    [CLF_K_BIAS_ACT] = {CLF_PROG_ELEMENTWISE, "bias_act", {"WG"}, {0}},
    [CLF_K_ADD] = {CLF_PROG_ELEMENTWISE, "add", {"WG"}, {0}},
    [CLF_K_GATED_ACT] = {CLF_PROG_ELEMENTWISE, "gated_act", {"WG"}, {0}},
    [CLF_K_ARGMAX] = {CLF_PROG_ELEMENTWISE, "argmax_rows", {"ARGMAX_WG"}, {1}},
    [CLF_K_ROWS_TO_HALF] = {CLF_PROG_ELEMENTWISE, "rows_to_half", {NULL}, {0}},
    [CLF_K_LINEAR_ROWS] = {CLF_PROG_LINEAR, "linear_rows", {"SK_LW"}, {1}},
    [CLF_K_PACK_PANELS] = {CLF_PROG_LINEAR, "pack_panels", {NULL}, {0}},
    [CLF_K_PACK_BLOCKS] = {CLF_PROG_LINEAR, "pack_blocks", {NULL}, {0}},
    [CLF_K_UNPACK_BLOCKS] = {CLF_PROG_LINEAR, "unpack_blocks", {NULL}, {0}},
    [CLF_K_LINEAR_PACKED] = {CLF_PROG_LINEAR, "linear_packed", {NULL}, {0}},
    [CLF_K_LINEAR_PACKED_1] = {CLF_PROG_LINEAR, "linear_packed_1", {NULL}, {0}},
    [CLF_K_LINEAR_PACKED_2] = {CLF_PROG_LINEAR, "linear_packed_2", {NULL}, {0}},
    [CLF_K_LINEAR_PACKED_4] = {CLF_PROG_LINEAR, "linear_packed_4", {NULL}, {0}},
    [CLF_K_QUANTIZE_X] = {CLF_PROG_LINEAR, "quantize_x", {NULL}, {0}},
    [CLF_K_LINEAR_PACKED_XQ] = {CLF_PROG_LINEAR, "linear_packed_xq", {NULL}, {0}},
    [CLF_K_LINEAR_PACKED_LQ1] = {CLF_PROG_LINEAR, "linear_packed_lq1", {NULL}, {0}},
    [CLF_K_LINEAR_PACKED_LQ2] = {CLF_PROG_LINEAR, "linear_packed_lq2", {NULL}, {0}},
    [CLF_K_LINEAR_TILED] = {CLF_PROG_LINEAR, "linear_tiled", {"LT_WX", "LT_WY"}, {0, 0}},
    [CLF_K_GET_ROWS] = {CLF_PROG_LINEAR, "get_rows", {NULL}, {0}},
    [CLF_K_ATTENTION] = {CLF_PROG_ATTENTION, "attention_tiled", {"BQ"}, {0}},
    [CLF_K_ATTENTION_COMBINE] = {CLF_PROG_ATTENTION, "attention_combine", {NULL}, {0}},
    [CLF_K_ATTENTION_T] = {CLF_PROG_ATTENTION, "attention_tiled_t", {"BQ"}, {0}},
    [CLF_K_ATTENTION_TRANSPOSE] = {CLF_PROG_ATTENTION, "attention_transpose_k", {NULL}, {0}},
    [CLF_K_ATTENTION_FLASH] = {CLF_PROG_ATTENTION_LOCAL, "attention_flash", {"TPQ", "BQ"}, {0, 0}},
    [CLF_K_ATTENTION_FLASH_SPLIT] = {CLF_PROG_ATTENTION_LOCAL,
                                     "attention_flash_split",
                                     {"WG"},
                                     {1}},
    [CLF_K_SAMPLE] = {CLF_PROG_SAMPLE, "sample_rows", {"WG"}, {1}},
};

const clf_tunable_def clf__tunable_defs[CLF_T_COUNT] = {
#define CLF_TUNABLE(id, name, prog, cpu, gpu, fallback, pow2, max, min, host)                      \
    [CLF_T_##id] = {name, prog, cpu, gpu, fallback, pow2, max, min, host},
#include "tunables.def"
#undef CLF_TUNABLE
};
const size_t clf__tunable_count = sizeof(clf__tunable_defs) / sizeof(clf__tunable_defs[0]);

int clf__tunable_find(const char *name) {
    if (!name) return -1;
    for (size_t i = 0; i < clf__tunable_count; i++)
        if (strcmp(clf__tunable_defs[i].name, name) == 0) return (int)i;
    return -1;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
/* The host CPU and OS run AVX512-BW and AVX512-VNNI: CPUID leaf 7 (EBX bit 30, ECX bit 11) and
 * the OS saving the opmask and all 32 zmm registers (XCR0 bits 1, 2, 5, 6, 7). */
static bool host_vnni(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return false; /* OSXSAVE */
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    if (!(b & (1u << 30)) || !(c & (1u << 11))) return false;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (lo & 0xe6u) == 0xe6u;
}
#else
static bool host_vnni(void) {
    return false;
}
#endif

bool clf__x86_vnni(const clf_device_info *info) {
    /* PoCL's CPU devices run on the host's own cores (the kernels also check that PoCL's
     * compiler targets AVX512-BW) */
    return info->type == CLF_DEVICE_CPU &&
           clf__ci_contains(info->platform_name, "portable computing") && host_vnni();
}

void clf__isa_defaults(const clf_device_info *info, int64_t *tunables) {
    if (info->type != CLF_DEVICE_CPU) return;
    tunables[CLF_T_LINEAR_VNNI] = clf__x86_vnni(info);
    const uint32_t w = info->native_vector_width_float;
    if (w == 0 || w > 8) return; /* AVX-512 (16 lanes, 32 registers): the CPU column */
    /* AVX2 and narrower: 16 vector registers of w lanes. linear_packed: 6 rows x 2 vectors of w
     * outputs (12 accumulators, 2 weight vectors, 1 broadcast: BLIS's Haswell sgemm tile);
     * attention_tiled_t: vectors of w keys, 12 queries per work-item (12 score vectors), values
     * accumulated one output vector at a time (12 accumulators). */
    tunables[CLF_T_LINEAR_VW] = w;
    tunables[CLF_T_LINEAR_PK_R] = 6;
    tunables[CLF_T_LINEAR_PK_NV] = 2;
    tunables[CLF_T_ATTENTION_MAXVW] = w;
    tunables[CLF_T_ATTENTION_QB] = 12;
    tunables[CLF_T_ATTENTION_PVN] = 1;
    tunables[CLF_T_ATTENTION_UNROLL] = 32;
}

/* The SIMD width a GPU's work-groups are built from: NVIDIA's 32-wide warps; AMD's 64-wide
 * wavefronts on GCN and CDNA (device names gfx6 .. gfx9, or a GCN marketing name), 32-wide on RDNA
 * (gfx10 and later, where the OpenCL compiler builds wave32); Intel's compiler picks SIMD8, 16 or
 * 32 per kernel (dg2: 16 for most of clformer's, pvc: 32), so 16. 0: unknown vendor. */
int clf__gpu_wave(const clf_device_info *info) {
    if (clf__ci_contains(info->vendor, "nvidia")) return 32;
    if (clf__ci_contains(info->vendor, "advanced micro") || clf__ci_contains(info->vendor, "amd")) {
        const char *g = strstr(info->name, "gfx");
        return g && atoi(g + 3) >= 1000 ? 32 : 64;
    }
    if (clf__ci_contains(info->vendor, "intel")) return 16;
    return 0;
}

int clf__device_profile(clf_device_info *info, const char *profile) {
    static const struct {
        const char *profile, *vendor, *name;
    } k[] = {
        {"nvidia", "NVIDIA Corporation", "NVIDIA H100 (profile nvidia)"},
        {"amd-cdna", "Advanced Micro Devices, Inc.", "gfx90a (profile amd-cdna)"},
        {"amd-rdna", "Advanced Micro Devices, Inc.", "gfx1100 (profile amd-rdna)"},
        {"intel", "Intel(R) Corporation", "Intel(R) Arc(TM) A770 (profile intel)"},
    };
    for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++)
        if (strcmp(profile, k[i].profile) == 0) {
            snprintf(info->vendor, sizeof(info->vendor), "%s", k[i].vendor);
            snprintf(info->name, sizeof(info->name), "%s", k[i].name);
            info->type = CLF_DEVICE_GPU;
            info->local_mem_dedicated = 1;
            return 0;
        }
    return -1;
}

void clf__gpu_defaults(const clf_device_info *info, int64_t *tunables) {
    if (info->type != CLF_DEVICE_GPU) return;
    const int64_t wave = clf__gpu_wave(info);
    if (wave == 0) return; /* the GPU column */
    /* Reduction trees of the row kernels: 4 waves; the decoding attention group: 2 waves (one
     * on GCN/CDNA, whose SIMDs run a 64-wide wavefront over 4 cycles); attention_flash's group:
     * 128 work-items (64 on Intel), 4 or 2 waves: its local memory (queries, scores) grows with
     * it, and with 256 on a 64 KiB CDNA compute unit one group filled it at Dh 128. */
    const int64_t rows = wave * 4 > 256 ? 256 : wave * 4;
    tunables[CLF_T_SOFTMAX_WG] = rows;
    tunables[CLF_T_LAYERNORM_WG] = rows;
    tunables[CLF_T_ATTENTION_FLASH_WG] = rows > 128 ? 128 : rows;
    tunables[CLF_T_ATTENTION_LOCAL_WG] = wave >= 64 ? wave : 2 * wave;
    tunables[CLF_T_LINEAR_SK_LW] = wave >= 64 ? wave : 2 * wave;
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

int clf__build_options_with(clf_prog_id prog, const int64_t *values, const char *const *macros,
                            const int64_t *macro_values, int n, char *buf, size_t size) {
    size_t off = 0;
    bool used[CLF_MAX_DEFINES] = {false};
    if (n > CLF_MAX_DEFINES || size == 0) return -1;
    buf[0] = '\0';
    for (size_t i = 0; i < clf__tunable_count; i++) {
        const clf_tunable_def *d = &clf__tunable_defs[i];
        if (d->prog != prog || d->host) continue;
        const char *macro = strchr(d->name, '.') + 1;
        int64_t v = values[i];
        for (int j = 0; j < n; j++)
            if (strcmp(macros[j], macro) == 0) {
                v = macro_values[j];
                used[j] = true;
            }
        int w = snprintf(buf + off, size - off, "%s-D%s=%lld", off ? " " : "", macro, (long long)v);
        if (w < 0 || (size_t)w >= size - off) return -1;
        off += (size_t)w;
    }
    for (int j = 0; j < n; j++) {
        if (used[j]) continue;
        int w = snprintf(buf + off, size - off, "%s-D%s=%lld", off ? " " : "", macros[j],
                         (long long)macro_values[j]);
        if (w < 0 || (size_t)w >= size - off) return -1;
        off += (size_t)w;
    }
    return 0;
}

int clf__build_options(clf_prog_id prog, const int64_t *values, char *buf, size_t size) {
    return clf__build_options_with(prog, values, NULL, NULL, 0, buf, size);
}
