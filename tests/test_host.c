/*
 * test_host.c — host-only logic, no OpenCL device needed: status strings, device-spec matching,
 * tunables and build options, program-cache keys and folders.
 */
#include "harness.h"
#include "../src/internal.h"

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
    for (clf_status a = CLF_ERROR_INTERNAL; a <= CLF_ERROR_INVALID_ARGUMENT; a++) {
        assert_true(strlen(clf_strerror(a)) > 3);
        assert_string_not_equal(clf_strerror(a), "unknown status");
        for (clf_status b = a + 1; b <= CLF_ERROR_INVALID_ARGUMENT; b++)
            assert_string_not_equal(clf_strerror(a), clf_strerror(b));
    }
    assert_string_equal(clf_strerror(CLF_ERROR_INTERNAL - 1), "unknown status");
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

static void test_build_options(void **state) {
    (void)state;
    int64_t *vals = calloc(clf__tunable_count, sizeof(int64_t));
    for (size_t i = 0; i < clf__tunable_count; i++)
        vals[i] = (int64_t)(i + 2);
    char buf[512];
    assert_int_equal(clf__build_options(CLF_PROG_SOFTMAX, vals, CLF_DEVICE_GPU, buf, sizeof(buf)),
                     0);
    char want[128];
    int vw = clf__tunable_find("softmax.VW"), wg = clf__tunable_find("softmax.WG"),
        rpg = clf__tunable_find("softmax.RPG");
    snprintf(want, sizeof(want), "-DCLF_DEVICE_TYPE=2 -DVW=%d -DWG=%d -DRPG=%d", vw + 2, wg + 2,
             rpg + 2);
    assert_string_equal(buf, want);
    /* Only the program's own tunables. */
    assert_null(strstr(buf, "layernorm"));
    assert_int_equal(clf__build_options(CLF_PROG_SOFTMAX, vals, CLF_DEVICE_GPU, buf, 10), -1);
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

static void test_embedded_sources(void **state) {
    (void)state;
    assert_non_null(clf__embedded_find("common"));
    for (int p = 0; p < CLF_PROG_COUNT; p++) {
        const char *src = clf__embedded_find(clf__prog_names[p]);
        assert_non_null(src);
        /* Every tunable of the program has an #ifndef default in its file. */
        for (size_t i = 0; i < clf__tunable_count; i++) {
            if (clf__tunable_defs[i].prog != (clf_prog_id)p || clf__tunable_defs[i].host) continue;
            char guard[64];
            snprintf(guard, sizeof(guard), "#ifndef %s\n",
                     strchr(clf__tunable_defs[i].name, '.') + 1);
            assert_non_null(strstr(src, guard));
        }
    }
    for (int k = 0; k < CLF_K_COUNT; k++) {
        const char *src = clf__embedded_find(clf__prog_names[clf__kernel_defs[k].prog]);
        assert_non_null(strstr(src, clf__kernel_defs[k].name));
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strerror),         cmocka_unit_test(test_device_match),
        cmocka_unit_test(test_tunables),         cmocka_unit_test(test_build_options),
        cmocka_unit_test(test_cache_key),        cmocka_unit_test(test_cache_dir),
        cmocka_unit_test(test_embedded_sources),
    };
    return cmocka_run_group_tests_name("host", tests, NULL, NULL);
}
