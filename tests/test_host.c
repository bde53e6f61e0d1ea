/*
 * test_host.c — host-only logic, no OpenCL device needed: status strings, device-spec matching,
 * tunables and build options, program-cache keys and folders.
 */
#include "harness.h"
#include "../src/internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_strerror(void **state) {
    (void)state;
    assert_string_equal(clf_strerror(CLF_SUCCESS), "success");
    assert_string_equal(clf_strerror(CL_OUT_OF_RESOURCES), "CL_OUT_OF_RESOURCES");
    assert_string_equal(clf_strerror(CL_BUILD_PROGRAM_FAILURE), "CL_BUILD_PROGRAM_FAILURE");
    assert_string_equal(clf_strerror(-998), "OpenCL error");
    assert_string_equal(clf_strerror(12345), "unknown status");
    /* Every library code has its own, distinct message. */
    for (clf_status a = CLF_ERROR_NOT_FOUND; a <= CLF_ERROR_INVALID_ARGUMENT; a++) {
        assert_true(strlen(clf_strerror(a)) > 3);
        assert_string_not_equal(clf_strerror(a), "unknown status");
        for (clf_status b = a + 1; b <= CLF_ERROR_INVALID_ARGUMENT; b++)
            assert_string_not_equal(clf_strerror(a), clf_strerror(b));
    }
    assert_string_equal(clf_strerror(CLF_ERROR_NOT_FOUND - 1), "unknown status");
}

static clf_device_info fake(uint32_t g, uint32_t p, uint32_t d, clf_device_type type,
                            const char *name, const char *vendor, const char *platform) {
    clf_device_info i;
    memset(&i, 0, sizeof(i));
    i.global_index = g;
    i.platform_index = p;
    i.device_index = d;
    i.type = type;
    snprintf(i.name, sizeof(i.name), "%s", name);
    snprintf(i.vendor, sizeof(i.vendor), "%s", vendor);
    snprintf(i.platform_name, sizeof(i.platform_name), "%s", platform);
    return i;
}

static void test_device_match(void **state) {
    (void)state;
    clf_device_info list[3] = {
        fake(0, 0, 0, CLF_DEVICE_CPU, "pthread-znver4-AMD EPYC 9454", "AuthenticAMD",
             "Portable Computing Language"),
        fake(1, 1, 0, CLF_DEVICE_GPU, "NVIDIA H200", "NVIDIA Corporation", "NVIDIA CUDA"),
        fake(2, 1, 1, CLF_DEVICE_GPU, "NVIDIA H100", "NVIDIA Corporation", "NVIDIA CUDA"),
    };
    uint32_t idx = 99;
    assert_int_equal(clf__device_match(list, 3, NULL, &idx), CLF_SUCCESS);
    assert_int_equal(idx, 1); /* default: first GPU */
    assert_int_equal(clf__device_match(list, 1, "", &idx), CLF_SUCCESS);
    assert_int_equal(idx, 0); /* no GPU: first CPU */
    assert_int_equal(clf__device_match(list, 3, "cpu", &idx), CLF_SUCCESS);
    assert_int_equal(idx, 0);
    assert_int_equal(clf__device_match(list, 3, " GPU ", &idx), CLF_SUCCESS);
    assert_int_equal(idx, 1);
    assert_int_equal(clf__device_match(list, 3, "2", &idx), CLF_SUCCESS);
    assert_int_equal(idx, 2);
    assert_int_equal(clf__device_match(list, 3, "1:1", &idx), CLF_SUCCESS);
    assert_int_equal(idx, 2);
    assert_int_equal(clf__device_match(list, 3, "h100", &idx), CLF_SUCCESS);
    assert_int_equal(idx, 2);
    assert_int_equal(clf__device_match(list, 3, "nvidia", &idx), CLF_SUCCESS);
    assert_int_equal(idx, 1);
    assert_int_equal(clf__device_match(list, 3, "amd", &idx), CLF_SUCCESS);
    assert_int_equal(idx, 0);
    assert_int_equal(clf__device_match(list, 3, "pthread", &idx), CLF_SUCCESS);
    assert_int_equal(idx, 0);
    assert_int_equal(clf__device_match(list, 3, "portable", &idx), CLF_SUCCESS);
    assert_int_equal(idx, 0);
    /* Nothing matches / malformed / empty list. */
    assert_int_equal(clf__device_match(list, 3, "intel", &idx), CLF_ERROR_NO_DEVICE);
    assert_int_equal(clf__device_match(list, 3, "3", &idx), CLF_ERROR_NO_DEVICE);
    assert_int_equal(clf__device_match(list, 3, "0:1", &idx), CLF_ERROR_NO_DEVICE);
    assert_int_equal(clf__device_match(list, 1, "gpu", &idx), CLF_ERROR_NO_DEVICE);
    assert_int_equal(clf__device_match(list, 3, "a:b", &idx), CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf__device_match(list, 3, "1:", &idx), CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf__device_match(list, 3, "99999999999", &idx), CLF_ERROR_NO_DEVICE);
    assert_int_equal(clf__device_match(list, 0, "cpu", &idx), CLF_ERROR_NO_DEVICE);
    char longspec[600];
    memset(longspec, 'x', sizeof(longspec) - 1);
    longspec[sizeof(longspec) - 1] = '\0';
    assert_int_equal(clf__device_match(list, 3, longspec, &idx), CLF_ERROR_INVALID_ARGUMENT);
}

/* A simulator (Oclgrind reports every device type) is never the default nor a type word's pick;
 * a spec that names it does pick it. */
static void test_device_match_simulator(void **state) {
    (void)state;
    clf_device_info list[3] = {
        fake(0, 0, 0, CLF_DEVICE_GPU, "Oclgrind Simulator", "University of Bristol", "Oclgrind"),
        fake(1, 1, 0, CLF_DEVICE_CPU, "pthread-haswell-AMD EPYC", "AuthenticAMD",
             "Portable Computing Language"),
        fake(2, 2, 0, CLF_DEVICE_CPU, "llvmpipe (LLVM 15.0.6, 256 bits)", "Mesa", "rusticl"),
    };
    list[0].is_simulator = 1;
    clf_device_info probe = list[0];
    probe.is_simulator = 0;
    assert_true(clf__is_simulator(&probe));
    assert_false(clf__is_simulator(&list[1]));
    assert_false(clf__is_simulator(&list[2]));
    uint32_t idx = 99;
    assert_int_equal(clf__device_match(list, 3, NULL, &idx), CLF_SUCCESS);
    assert_int_equal(idx, 1); /* not the simulator's "GPU": the first CPU */
    clf_device_info soft_first[2] = {list[2], list[1]};
    assert_int_equal(clf__device_match(soft_first, 2, NULL, &idx), CLF_SUCCESS);
    assert_int_equal(idx, 1); /* PoCL before llvmpipe, whatever the platform order */
    assert_int_equal(clf__device_match(soft_first, 1, "cpu", &idx), CLF_SUCCESS);
    assert_int_equal(idx, 0); /* llvmpipe alone: it is a CPU device */
    assert_int_equal(clf__device_match(list, 3, "gpu", &idx), CLF_ERROR_NO_DEVICE);
    assert_int_equal(clf__device_match(list, 3, "cpu", &idx), CLF_SUCCESS);
    assert_int_equal(idx, 1);
    assert_int_equal(clf__device_match(list, 3, "rusticl", &idx), CLF_SUCCESS);
    assert_int_equal(idx, 2);
    assert_int_equal(clf__device_match(list, 3, "oclgrind", &idx), CLF_SUCCESS);
    assert_int_equal(idx, 0);
    assert_int_equal(clf__device_match(list, 3, "0", &idx), CLF_SUCCESS);
    assert_int_equal(idx, 0);
    /* Only a simulator: nothing by default. */
    assert_int_equal(clf__device_match(list, 1, NULL, &idx), CLF_ERROR_NO_DEVICE);
    /* An accelerator comes after CPUs, a device of another type last. */
    clf_device_info two[2] = {
        fake(0, 0, 0, CLF_DEVICE_OTHER, "custom", "x", "p"),
        fake(1, 0, 1, CLF_DEVICE_ACCELERATOR, "fpga", "x", "p"),
    };
    assert_int_equal(clf__device_match(two, 2, NULL, &idx), CLF_SUCCESS);
    assert_int_equal(idx, 1);
    assert_int_equal(clf__device_match(two, 1, NULL, &idx), CLF_SUCCESS);
    assert_int_equal(idx, 0);
}

/* Work-group fitting: the largest dim takes the cut, powers of two stay powers of two, other
 * sizes prefer a multiple of the preferred multiple. */
static void test_wg_shrink(void **state) {
    (void)state;
    const unsigned char p2[3] = {1, 0, 0}, none[3] = {0, 0, 0};
    size_t a[3] = {128, 1, 1};
    assert_true(clf__wg_shrink(a, p2, 3, 32, 1));
    assert_int_equal(a[0], 32);
    size_t b[3] = {128, 1, 1};
    assert_true(clf__wg_shrink(b, p2, 3, 3, 1));
    assert_int_equal(b[0], 2);
    size_t c[3] = {1, 4, 1};
    assert_true(clf__wg_shrink(c, p2, 3, 3, 1));
    assert_int_equal(c[0], 1);
    assert_int_equal(c[1], 3);
    size_t d[3] = {64, 4, 1};
    assert_true(clf__wg_shrink(d, p2, 3, 32, 8));
    assert_int_equal(d[0] * d[1], 32);
    size_t e[3] = {1000, 1, 1};
    assert_true(clf__wg_shrink(e, none, 3, 200, 32));
    assert_int_equal(e[0], 192); /* a multiple of 32 */
    size_t f[3] = {100, 1, 1};
    assert_true(clf__wg_shrink(f, none, 3, 20, 32));
    assert_int_equal(f[0], 20); /* below the multiple: as large as fits */
    size_t g[3] = {16, 1, 1};
    assert_true(clf__wg_shrink(g, none, 3, 1, 8));
    assert_int_equal(g[0], 1);
    size_t h[3] = {16, 8, 1};
    assert_true(clf__wg_shrink(h, none, 3, 200, 8)); /* already fits: unchanged */
    assert_int_equal(h[0], 16);
    assert_int_equal(h[1], 8);
    size_t z[3] = {4, 1, 1};
    assert_false(clf__wg_shrink(z, none, 3, 0, 1));
}

static void test_tunables(void **state) {
    (void)state;
    assert_true(clf__tunable_count > 0);
    for (size_t i = 0; i < clf__tunable_count; i++) {
        const clf_tunable_def *d = &clf__tunable_defs[i];
        /* Name is "<program>.<MACRO>" and the program matches. */
        const char *dot = strchr(d->name, '.');
        assert_non_null(dot);
        assert_int_equal((size_t)(dot - d->name), strlen(clf__prog_names[d->prog]));
        assert_memory_equal(d->name, clf__prog_names[d->prog], (size_t)(dot - d->name));
        assert_int_equal(clf__tunable_find(d->name), (int)i);
        /* Every default is a legal value. */
        int64_t v[3] = {d->cpu, d->gpu, d->fallback};
        for (int k = 0; k < 3; k++) {
            assert_true(v[k] >= d->min && v[k] <= d->max);
            if (d->pow2) assert_int_equal(v[k] & (v[k] - 1), 0);
        }
    }
    assert_int_equal(clf__tunable_find("softmax.NOPE"), -1);
    assert_int_equal(clf__tunable_find(NULL), -1);
    int i = clf__tunable_find("softmax.WG");
    assert_true(i >= 0);
    assert_int_equal(clf__tunable_default(&clf__tunable_defs[i], CLF_DEVICE_CPU), 1);
    assert_true(clf__tunable_default(&clf__tunable_defs[i], CLF_DEVICE_GPU) >= 64);
}

/* The register blocking of a CPU by its native vector width: AVX-512 (16 lanes) keeps the CPU
 * column, AVX2 (8 lanes) gets tiles that fit 16 registers, GPUs are untouched. */
static void test_isa_defaults(void **state) {
    (void)state;
    int64_t *t = calloc(clf__tunable_count, sizeof(int64_t));
    assert_non_null(t);
    clf_device_info info;
    memset(&info, 0, sizeof(info));
    info.type = CLF_DEVICE_CPU;
    for (size_t i = 0; i < clf__tunable_count; i++)
        t[i] = clf__tunable_defs[i].cpu;
    info.native_vector_width_float = 16;
    clf__isa_defaults(&info, t);
    assert_int_equal(t[CLF_T_LINEAR_PK_R], clf__tunable_defs[CLF_T_LINEAR_PK_R].cpu);
    assert_int_equal(t[CLF_T_LINEAR_VW], 16);
    info.native_vector_width_float = 8;
    clf__isa_defaults(&info, t);
    /* accumulators PK_R x PK_NV plus PK_NV weight vectors and a broadcast fit 16 registers */
    assert_true(t[CLF_T_LINEAR_PK_R] * t[CLF_T_LINEAR_PK_NV] + t[CLF_T_LINEAR_PK_NV] + 1 <= 16);
    assert_int_equal(t[CLF_T_LINEAR_VW], 8);
    assert_int_equal(t[CLF_T_ATTENTION_MAXVW], 8);
    assert_true(t[CLF_T_ATTENTION_QB] + 1 <= 16);
    for (size_t i = 0; i < clf__tunable_count; i++) { /* still legal values */
        const clf_tunable_def *d = &clf__tunable_defs[i];
        assert_true(t[i] >= d->min && t[i] <= d->max);
        if (d->pow2) assert_int_equal(t[i] & (t[i] - 1), 0);
    }
    info.type = CLF_DEVICE_GPU;
    t[CLF_T_LINEAR_PK_R] = 99;
    clf__isa_defaults(&info, t);
    assert_int_equal(t[CLF_T_LINEAR_PK_R], 99);
    free(t);
}

/* GPU work-groups by the vendor's SIMD width: NVIDIA 32, AMD CDNA/GCN 64, RDNA 32, Intel 16; an
 * unknown vendor and CPUs keep their column; every value stays legal; the developer profiles
 * read as those vendors. */
static void test_gpu_defaults(void **state) {
    (void)state;
    static const struct {
        const char *vendor, *name;
        int wave;
        int64_t rows, flash, split;
    } k[] = {
        {"NVIDIA Corporation", "NVIDIA H200", 32, 128, 128, 64},
        {"Advanced Micro Devices, Inc.", "gfx90a:sramecc+:xnack-", 64, 256, 128, 64},
        {"Advanced Micro Devices, Inc.", "gfx1100", 32, 128, 128, 64},
        {"AMD", "Fiji", 64, 256, 128, 64},
        {"Intel(R) Corporation", "Intel(R) Arc(TM) A770 Graphics", 16, 64, 64, 32},
        {"ARM", "Mali-G710", 0, 0, 0, 0},
    };
    int64_t *t = calloc(clf__tunable_count, sizeof(int64_t));
    assert_non_null(t);
    for (size_t c = 0; c < sizeof(k) / sizeof(k[0]); c++) {
        clf_device_info info;
        memset(&info, 0, sizeof(info));
        info.type = CLF_DEVICE_GPU;
        snprintf(info.vendor, sizeof(info.vendor), "%s", k[c].vendor);
        snprintf(info.name, sizeof(info.name), "%s", k[c].name);
        assert_int_equal(clf__gpu_wave(&info), k[c].wave);
        for (size_t i = 0; i < clf__tunable_count; i++)
            t[i] = clf__tunable_defs[i].gpu;
        clf__gpu_defaults(&info, t);
        if (k[c].wave == 0) { /* the GPU column */
            for (size_t i = 0; i < clf__tunable_count; i++)
                assert_int_equal(t[i], clf__tunable_defs[i].gpu);
            continue;
        }
        assert_int_equal(t[CLF_T_SOFTMAX_WG], k[c].rows);
        assert_int_equal(t[CLF_T_LAYERNORM_WG], k[c].rows);
        assert_int_equal(t[CLF_T_ATTENTION_FLASH_WG], k[c].flash);
        assert_int_equal(t[CLF_T_ATTENTION_LOCAL_WG], k[c].split);
        for (size_t i = 0; i < clf__tunable_count; i++) {
            const clf_tunable_def *d = &clf__tunable_defs[i];
            assert_true(t[i] >= d->min && t[i] <= d->max);
            if (d->pow2) assert_int_equal(t[i] & (t[i] - 1), 0);
        }
        info.type = CLF_DEVICE_CPU; /* CPUs keep theirs */
        t[CLF_T_SOFTMAX_WG] = 1;
        clf__gpu_defaults(&info, t);
        assert_int_equal(t[CLF_T_SOFTMAX_WG], 1);
    }
    const char *profiles[] = {"nvidia", "amd-cdna", "amd-rdna", "intel"};
    const int waves[] = {32, 64, 32, 16};
    for (int i = 0; i < 4; i++) {
        clf_device_info info;
        memset(&info, 0, sizeof(info));
        info.type = CLF_DEVICE_CPU;
        assert_int_equal(clf__device_profile(&info, profiles[i]), 0);
        assert_int_equal(info.type, CLF_DEVICE_GPU);
        assert_int_equal(info.local_mem_dedicated, 1);
        assert_int_equal(clf__gpu_wave(&info), waves[i]);
    }
    clf_device_info info;
    memset(&info, 0, sizeof(info));
    assert_int_equal(clf__device_profile(&info, "nvidia-ish"), -1);
    assert_int_equal(info.type, 0); /* unchanged */
    free(t);
}

static void test_build_options(void **state) {
    (void)state;
    int64_t *vals = calloc(clf__tunable_count, sizeof(int64_t));
    for (size_t i = 0; i < clf__tunable_count; i++)
        vals[i] = (int64_t)(i + 2);
    char buf[512];
    assert_int_equal(clf__build_options(CLF_PROG_SOFTMAX, vals, buf, sizeof(buf)), 0);
    char want[128];
    int vw = clf__tunable_find("softmax.VW"), wg = clf__tunable_find("softmax.WG"),
        rpg = clf__tunable_find("softmax.RPG");
    snprintf(want, sizeof(want), "-DVW=%d -DWG=%d -DRPG=%d", vw + 2, wg + 2, rpg + 2);
    assert_string_equal(buf, want);
    /* Only the program's own tunables. */
    assert_null(strstr(buf, "layernorm"));
    assert_int_equal(clf__build_options(CLF_PROG_SOFTMAX, vals, buf, 10), -1);
    /* Fitted work-group macros replace the tunables' values, and others are appended once. */
    const char *macros[2] = {"WG", "BQ"};
    const int64_t mv[2] = {32, 7};
    assert_int_equal(
        clf__build_options_with(CLF_PROG_SOFTMAX, vals, macros, mv, 2, buf, sizeof(buf)), 0);
    snprintf(want, sizeof(want), "-DVW=%d -DWG=32 -DRPG=%d -DBQ=7", vw + 2, rpg + 2);
    assert_string_equal(buf, want);
    free(vals);
}

static void test_cache_key(void **state) {
    (void)state;
    clf_device_info dev;
    memset(&dev, 0, sizeof(dev));
    strcpy(dev.name, "dev");
    strcpy(dev.driver_version, "1.0");
    uint64_t k0[2], k1[2];
    clf__cache_key("src", "-DA=1", &dev, k0);
    clf__cache_key("src", "-DA=1", &dev, k1);
    assert_memory_equal(k0, k1, sizeof(k0));
    clf__cache_key("src", "-DA=2", &dev, k1);
    assert_memory_not_equal(k0, k1, sizeof(k0));
    clf__cache_key("src2", "-DA=1", &dev, k1);
    assert_memory_not_equal(k0, k1, sizeof(k0));
    clf__cache_key("sr", "c-DA=1", &dev, k1); /* field boundaries matter */
    assert_memory_not_equal(k0, k1, sizeof(k0));
    strcpy(dev.driver_version, "1.1");
    clf__cache_key("src", "-DA=1", &dev, k1);
    assert_memory_not_equal(k0, k1, sizeof(k0));
    strcpy(dev.driver_version, "1.0");
    strcpy(dev.name, "dev2");
    clf__cache_key("src", "-DA=1", &dev, k1);
    assert_memory_not_equal(k0, k1, sizeof(k0));
    char name[40];
    clf__cache_file_name(k0, name);
    assert_int_equal(strlen(name), 36);
    assert_string_equal(name + 32, ".bin");
}

static void test_cache_dir(void **state) {
    (void)state;
    char *old_xdg = getenv("XDG_CACHE_HOME") ? strdup(getenv("XDG_CACHE_HOME")) : NULL;
    char *old_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
    setenv("HOME", "/home/u", 1);
    char *d = clf__default_cache_dir();
    assert_string_equal(d, "/tmp/xdg/clformer");
    free(d);
    setenv("XDG_CACHE_HOME", "relative/ignored", 1); /* the XDG spec: relative paths are invalid */
    d = clf__default_cache_dir();
    assert_string_equal(d, "/home/u/.cache/clformer");
    free(d);
    unsetenv("XDG_CACHE_HOME");
    unsetenv("HOME");
    assert_null(clf__default_cache_dir());
    if (old_xdg) setenv("XDG_CACHE_HOME", old_xdg, 1);
    if (old_home) setenv("HOME", old_home, 1);
    free(old_xdg);
    free(old_home);
}

/* Whether text occurs in program p's own file or one of its preludes. */
static int in_program(int p, const char *text) {
    int found = strstr(clf__embedded_find(clf__prog_names[p]), text) != NULL;
    for (int j = 0; j < CLF_PRELUDES; j++)
        found |=
            clf__prog_preludes[p][j] && strstr(clf__embedded_find(clf__prog_preludes[p][j]), text);
    return found;
}

/* Calls of the builtin NAME in kernel source src, outside comments. */
static int calls_of(const char *src, const char *name) {
    const size_t n = strlen(name);
    int count = 0;
    for (const char *c = src; *c; c++) {
        if (c[0] == '/' && c[1] == '*') {
            const char *e = strstr(c + 2, "*/");
            if (!e) break;
            c = e + 1;
        } else if (c[0] == '/' && c[1] == '/') {
            while (c[1] && c[1] != '\n')
                c++;
        } else if (strncmp(c, name, n) == 0 && c[n] == '(' &&
                   (c == src || !(isalnum((unsigned char)c[-1]) || c[-1] == '_'))) {
            count++;
        }
    }
    return count;
}

/* kernels/NAME.cl calls fma() only in common.cl's MAD (on devices with hardware FMA) and for
 * linear_int's two rounding tricks (rusticl emulates fma in integer code), mad() never (PoCL does
 * not fuse it; MAD is the kernels' multiply-add), and libclc's sin, cos, sincos never (SINCOS
 * instead). */
static void check_builtins(const char *name) {
    static const char *const banned[] = {"fma", "mad", "sin", "cos", "sincos"};
    const char *src = clf__embedded_find(name);
    assert_non_null(src);
    for (size_t b = 0; b < sizeof(banned) / sizeof(banned[0]); b++) {
        const int want = b != 0                            ? 0
                         : strcmp(name, "linear_int") == 0 ? 2
                         : strcmp(name, "common") == 0     ? 1
                                                           : 0;
        const int got = calls_of(src, banned[b]);
        if (got != want)
            fail_msg("kernels/%s.cl calls %s() %d times (want %d)", name, banned[b], got, want);
    }
}

static void test_kernel_builtins(void **state) {
    (void)state;
    assert_int_equal(
        calls_of("a = fma(b, c); /* fma(x) */ // fma(y)\n e = xfma(f) + fma (g)", "fma"), 1);
    check_builtins("common");
    for (int p = 0; p < CLF_PROG_COUNT; p++) {
        check_builtins(clf__prog_names[p]);
        for (int i = 0; i < CLF_PRELUDES; i++)
            if (clf__prog_preludes[p][i]) check_builtins(clf__prog_preludes[p][i]);
    }
}

static void test_embedded_sources(void **state) {
    (void)state;
    assert_non_null(clf__embedded_find("common"));
    for (int p = 0; p < CLF_PROG_COUNT; p++) {
        assert_non_null(clf__embedded_find(clf__prog_names[p]));
        for (int i = 0; i < CLF_PRELUDES; i++)
            if (clf__prog_preludes[p][i])
                assert_non_null(clf__embedded_find(clf__prog_preludes[p][i]));
        /* Every tunable of the program has an #ifndef default in its file or a prelude. */
        for (size_t i = 0; i < clf__tunable_count; i++) {
            if (clf__tunable_defs[i].prog != (clf_prog_id)p || clf__tunable_defs[i].host) continue;
            char guard[64];
            snprintf(guard, sizeof(guard), "#ifndef %s\n",
                     strchr(clf__tunable_defs[i].name, '.') + 1);
            if (!in_program(p, guard)) fail_msg("%s: no %s", clf__tunable_defs[i].name, guard);
        }
    }
    for (int k = 0; k < CLF_K_COUNT; k++) {
        const clf_prog_id p = clf__kernel_defs[k].prog;
        if (!in_program((int)p, clf__kernel_defs[k].name))
            fail_msg("kernel %s is in no part of its program", clf__kernel_defs[k].name);
        /* Every compiled-in work-group size has an #ifndef default in the file or a prelude. */
        for (int d = 0; d < 3; d++) {
            if (!clf__kernel_defs[k].wg_macro[d]) continue;
            char guard[64];
            snprintf(guard, sizeof(guard), "#ifndef %s\n", clf__kernel_defs[k].wg_macro[d]);
            if (!in_program((int)p, guard))
                fail_msg("kernel %s: no %s", clf__kernel_defs[k].name, guard);
        }
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strerror),
        cmocka_unit_test(test_device_match),
        cmocka_unit_test(test_device_match_simulator),
        cmocka_unit_test(test_wg_shrink),
        cmocka_unit_test(test_tunables),
        cmocka_unit_test(test_isa_defaults),
        cmocka_unit_test(test_gpu_defaults),
        cmocka_unit_test(test_build_options),
        cmocka_unit_test(test_cache_key),
        cmocka_unit_test(test_cache_dir),
        cmocka_unit_test(test_embedded_sources),
        cmocka_unit_test(test_kernel_builtins),
    };
    return cmocka_run_group_tests_name("host", tests, NULL, NULL);
}
