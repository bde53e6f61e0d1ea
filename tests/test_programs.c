/*
 * test_programs.c — the context's programs: what warm-up builds, the disk cache of binaries,
 * profiling, a kernel folder that overrides the embedded sources, and the build log.
 */
#include "harness.h"
#include "ref/ref.h"
#include "../src/internal.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A context made with a folder of its own, so its disk cache starts empty. */
static clf_context *fresh_context(const char *cache_dir, int profiling, const char *kernel_dir) {
    clf_context_params p = clf_context_default_params();
    p.cache_dir = cache_dir;
    p.disk_cache = cache_dir != NULL ? 2 : 0; /* 2: binaries on disk on PoCL too */
    p.enable_profiling = profiling;
    p.kernel_dir = kernel_dir;
    clf_context *ctx = NULL;
    CLF_OK(clf_context_create(&ctx, &p));
    return ctx;
}

/* What warm-up builds is what the calls launch: after it, softmax, LayerNorm, positional
 * encoding, embedding, bias + activation, add, argmax and the linear kernels (rows, packed) build
 * no program; attention, built per head size, then builds its own. */
static void test_warmup_covers_calls(void **state) {
    (void)state;
    clf_context *c = fresh_context(NULL, 0, NULL);
    CLF_OK(clf_context_warmup(c));
    clf_cache_stats s0, s1;
    CLF_OK(clf_context_cache_stats(c, &s0));
    int64_t xs[2] = {4, 33}, ws[2] = {5, 33}, ys[2] = {4, 5}, n = 33, ids_n = 4, bs = 5;
    clf_tensor *x, *w, *y, *g, *b, *ids, *am, *bias, *p = NULL, *att;
    CLF_OK(clf_tensor_create(c, CLF_F32, 2, xs, &x));
    CLF_OK(clf_tensor_create(c, CLF_F32, 2, ws, &w));
    CLF_OK(clf_tensor_create(c, CLF_F32, 2, ys, &y));
    CLF_OK(clf_tensor_create(c, CLF_F32, 1, &n, &g));
    CLF_OK(clf_tensor_create(c, CLF_F32, 1, &n, &b));
    CLF_OK(clf_tensor_create(c, CLF_F32, 1, &bs, &bias));
    CLF_OK(clf_tensor_create(c, CLF_I32, 1, &ids_n, &ids));
    CLF_OK(clf_tensor_create(c, CLF_I32, 1, &ids_n, &am));
    CLF_OK(clf_tensor_fill(x, 0.5));
    CLF_OK(clf_tensor_fill(w, 0.25));
    CLF_OK(clf_tensor_fill(g, 1.0));
    CLF_OK(clf_tensor_fill(b, 0.0));
    CLF_OK(clf_tensor_fill(bias, 0.0));
    CLF_OK(clf_tensor_fill(ids, 1));
    CLF_OK(clf_softmax(c, x, x, NULL));
    CLF_OK(clf_layernorm(c, x, NULL, g, b, 1e-5f, x));
    CLF_OK(clf_rmsnorm(c, x, x, g, 1e-5f, NULL, x));
    clf_rope_params rp = clf_rope_default_params(2, 16);
    CLF_OK(clf_rope(c, x, &rp));
    CLF_OK(clf_posenc_add(c, x, 0, x));
    CLF_OK(clf_embedding(c, ids, w, 1.0f, 0, 0, x));
    CLF_OK(clf_bias_act(c, y, bias, CLF_ACT_GELU_ERF, y));
    CLF_OK(clf_add(c, x, x, x));
    CLF_OK(clf_gated_act(c, x, x, CLF_ACT_SILU, x));
    CLF_OK(clf_argmax(c, x, am));
    clf_sampling_params sp = clf_sampling_default_params();
    sp.temperature = 0.5f;
    clf_tensor *su = NULL;
    const int64_t four = 4;
    CLF_OK(clf_tensor_create(c, CLF_F32, 1, &four, &su));
    CLF_OK(clf_tensor_fill(su, 0.25));
    CLF_OK(clf_sample(c, x, &sp, su, NULL, am));
    clf_tensor_free(su);
    CLF_OK(clf_linear(c, x, w, bias, CLF_ACT_RELU, y)); /* 4 rows: linear_rows */
    CLF_OK(clf__linear_pack(c, w, &p));
    CLF_OK(clf__linear_packed(c, x, p, 5, bias, CLF_ACT_IDENTITY, y, NULL));
    CLF_OK(clf_context_finish(c));
    CLF_OK(clf_context_cache_stats(c, &s1));
    assert_int_equal(s1.programs_built_from_source, s0.programs_built_from_source);
    /* attention: its first call builds its variant */
    int64_t as[3] = {1, 3, 8};
    CLF_OK(clf_tensor_create(c, CLF_F32, 3, as, &att));
    CLF_OK(clf_tensor_fill(att, 0.1));
    clf_attention_params ad = clf_attention_default_params(1, 8);
    clf_tensor *ao;
    CLF_OK(clf_tensor_create(c, CLF_F32, 3, as, &ao));
    CLF_OK(clf_attention(c, att, att, att, ao, &ad));
    CLF_OK(clf_context_cache_stats(c, &s1));
    assert_true(s1.programs_built_from_source > s0.programs_built_from_source);
    clf_tensor *all[] = {x, w, y, g, b, ids, am, bias, p, att, ao};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        clf_tensor_free(all[i]);
    clf_context_free(c);
}

static void test_disk_cache(void **state) {
    (void)state;
    char dir[] = "/tmp/clf-cache-test-XXXXXX";
    assert_non_null(mkdtemp(dir));
    clf_context *a = fresh_context(dir, 0, NULL);
    CLF_OK(clf_context_warmup(a));
    clf_cache_stats s;
    CLF_OK(clf_context_cache_stats(a, &s));
    /* One program per file but the two of attention (built per head size at their first call), more
     * where a kernel's work-group had to be fitted to the device (rusticl: 32 work-items, so
     * elementwise.cl is built again for bias_act's and add's). */
    const uint64_t built = s.programs_built_from_source;
    assert_true(built >= CLF_PROG_COUNT - 2);
    assert_int_equal(s.programs_loaded_from_disk, 0);
    CLF_OK(clf_context_warmup(a)); /* second time: nothing rebuilt */
    CLF_OK(clf_context_cache_stats(a, &s));
    assert_int_equal(s.programs_built_from_source, built);
    clf_context_free(a);

    clf_context *b = fresh_context(dir, 0, NULL);
    CLF_OK(clf_context_warmup(b));
    CLF_OK(clf_context_cache_stats(b, &s));
    assert_int_equal(s.programs_built_from_source, 0);
    assert_int_equal(s.programs_loaded_from_disk, built);
    /* Kernels loaded from disk compute correctly. */
    float x[5] = {1, 2, 3, 4, 5};
    int64_t shape[1] = {5};
    clf_tensor *t = NULL;
    CLF_OK(clf_tensor_create(b, CLF_F32, 1, shape, &t));
    CLF_OK(clf_tensor_write(t, x, sizeof(x)));
    CLF_OK(clf_softmax(b, t, t, NULL));
    float y[5];
    double want[5];
    CLF_OK(clf_tensor_read(t, y, sizeof(y)));
    ref_softmax(x, want, 1, 5, NULL);
    check_close("softmax from cached binary", y, want, 5, 1e-7, 1e-5);
    clf_tensor_free(t);
    clf_context_free(b);

    /* Corrupt every cached file: they are ignored and rebuilt, never a crash. */
    char sub[600];
    snprintf(sub, sizeof(sub), "%s/programs", dir);
    DIR *dd = opendir(sub);
    assert_non_null(dd);
    struct dirent *e;
    int corrupted = 0;
    while ((e = readdir(dd)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char path[1200];
        snprintf(path, sizeof(path), "%s/%s", sub, e->d_name);
        FILE *f = fopen(path, "r+b");
        assert_non_null(f);
        fseek(f, 40, SEEK_SET);
        fputs("garbage garbage garbage", f);
        fclose(f);
        corrupted++;
    }
    closedir(dd);
    assert_int_equal((uint64_t)corrupted, built);
    clf_context *c = fresh_context(dir, 0, NULL);
    CLF_OK(clf_context_warmup(c));
    CLF_OK(clf_context_cache_stats(c, &s));
    assert_int_equal(s.programs_built_from_source + s.programs_loaded_from_disk, built);
    clf_context_free(c);
    harness_remove_tree(dir);

    /* The default (1): binaries on disk everywhere but on PoCL, which keeps its own. */
    assert_non_null(mkdtemp(strcpy(dir, "/tmp/clf-cache-test-XXXXXX")));
    clf_context_params p = clf_context_default_params();
    p.cache_dir = dir;
    assert_int_equal(p.disk_cache, 1);
    clf_context *d = NULL;
    CLF_OK(clf_context_create(&d, &p));
    CLF_OK(clf_context_warmup(d));
    clf_device_info info;
    CLF_OK(clf_context_device_info(d, &info));
    clf_context_free(d);
    const int pocl = strstr(info.platform_name, "Portable Computing Language") != NULL;
    snprintf(sub, sizeof(sub), "%s/programs", dir);
    dd = opendir(sub);
    int stored = 0;
    while (dd && (e = readdir(dd)) != NULL)
        stored += e->d_name[0] != '.';
    if (dd) closedir(dd);
    if (pocl)
        assert_int_equal(stored, 0);
    else
        assert_true(stored > 0);
    harness_remove_tree(dir);
}

static void test_profiling(void **state) {
    (void)state;
    clf_context *ctx = fresh_context(NULL, 1, NULL);
    int64_t shape[2] = {64, 100};
    clf_tensor *t = NULL;
    CLF_OK(clf_tensor_create(ctx, CLF_F32, 2, shape, &t));
    CLF_OK(clf_tensor_fill(t, 1.0));
    CLF_OK(clf_softmax(ctx, t, t, NULL));
    CLF_OK(clf_softmax(ctx, t, t, NULL));
    CLF_OK(clf_add(ctx, t, t, t));
    uint64_t ns = 0, count = 0;
    CLF_OK(clf_context_profile(ctx, &ns, &count));
    assert_int_equal(count, 3);
    assert_true(ns > 0);
    /* Per kernel: two entries, their times summing to the total. */
    size_t n = 99;
    CLF_OK(clf_context_profile_kernels(ctx, NULL, 0, &n));
    assert_int_equal(n, 2);
    clf_kernel_profile kp[3];
    memset(kp, 0, sizeof(kp));
    n = 0;
    CLF_OK(clf_context_profile_kernels(ctx, kp, 1, &n)); /* room for one: the count stays 2 */
    assert_int_equal(n, 2);
    assert_non_null(kp[0].name);
    assert_null(kp[1].name);
    CLF_OK(clf_context_profile_kernels(ctx, kp, 3, &n));
    assert_int_equal(n, 2);
    uint64_t sum = 0, soft = 0;
    for (size_t i = 0; i < n; i++) {
        sum += kp[i].ns;
        if (strstr(kp[i].name, "softmax"))
            soft = kp[i].count;
        else
            assert_int_equal(kp[i].count, 1);
    }
    assert_int_equal(soft, 2);
    assert_int_equal(sum, ns);
    assert_int_equal(clf_context_profile_kernels(ctx, NULL, 3, &n), CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_context_profile_kernels(ctx, kp, 3, NULL), CLF_ERROR_INVALID_ARGUMENT);
    CLF_OK(clf_context_profile_reset(ctx));
    CLF_OK(clf_context_profile(ctx, &ns, &count));
    assert_int_equal(count, 0);
    CLF_OK(clf_context_profile_kernels(ctx, kp, 3, &n));
    assert_int_equal(n, 0);
    clf_tensor_free(t);
    clf_context_free(ctx);
    /* Off by default. */
    uint64_t ns2;
    assert_int_equal(clf_context_profile(g_ctx, &ns2, NULL), CLF_ERROR_UNSUPPORTED);
    assert_int_equal(clf_context_profile_kernels(g_ctx, NULL, 0, &n), CLF_ERROR_UNSUPPORTED);
}

static void test_kernel_dir_override(void **state) {
    (void)state;
    char kernels[1024];
    snprintf(kernels, sizeof(kernels), "%s/kernels", CLF_SRC);
    clf_context *ctx = fresh_context(NULL, 0, kernels);
    CLF_OK(clf_context_warmup(ctx));
    clf_context_free(ctx);
    ctx = fresh_context(NULL, 0, "/nonexistent-clformer-kernels");
    int64_t shape[1] = {4};
    clf_tensor *t = NULL;
    CLF_OK(clf_tensor_create(ctx, CLF_F32, 1, shape, &t));
    assert_int_equal(clf_softmax(ctx, t, t, NULL), CLF_ERROR_IO);
    assert_non_null(strstr(clf_context_last_error(ctx), "/nonexistent-clformer-kernels/"));
    clf_tensor_free(t);
    clf_context_free(ctx);
}

/* Reads a whole small file into buf (NUL-terminated); the bytes read, -1 if it cannot. */
static long read_small(const char *path, char *buf, size_t size) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    size_t n = fread(buf, 1, size - 1, f);
    fclose(f);
    buf[n] = '\0';
    return (long)n;
}

/* The developer option program_log_dir records each kernel the context creates: a kernels.tsv
 * line (key, name, launched local size, defines, device) and the program's source and options
 * under that key, which are what the library built. A folder that cannot be made fails creation
 * with a message naming it. */
static void test_program_log(void **state) {
    (void)state;
    static char tsv[8192], text[1 << 17]; /* a program: common.cl, its prelude and the file */
    char dir[256], path[600];
    snprintf(dir, sizeof(dir), "%s/clf-program-log-%ld", P_tmpdir, (long)getpid());
    clf_context_params p = clf_context_default_params();
    p.disk_cache = 0;
    p.program_log_dir = dir;
    clf_context *ctx = NULL;
    CLF_OK(clf_context_create(&ctx, &p));
    int64_t shape[2] = {3, 40};
    clf_tensor *t = NULL;
    CLF_OK(clf_tensor_create(ctx, CLF_F32, 2, shape, &t));
    CLF_OK(clf_tensor_fill(t, 1.0));
    CLF_OK(clf_softmax(ctx, t, t, NULL));
    clf_tensor_free(t);
    clf_device_info info;
    CLF_OK(clf_context_device_info(ctx, &info));
    clf_context_free(ctx);
    snprintf(path, sizeof(path), "%s/kernels.tsv", dir);
    assert_true(read_small(path, tsv, sizeof(tsv)) > 0);
    char *line = strstr(tsv, "\tsoftmax_rows\t");
    assert_non_null(line);
    assert_non_null(strstr(tsv, info.name));
    /* the key before it names a source holding the kernel, and its options */
    assert_true(line - tsv >= 32);
    char key[33];
    memcpy(key, line - 32, 32);
    key[32] = '\0';
    snprintf(path, sizeof(path), "%s/%s.cl", dir, key);
    assert_true(read_small(path, text, sizeof(text)) > 0);
    assert_non_null(strstr(text, "softmax_rows"));
    snprintf(path, sizeof(path), "%s/%s.opts", dir, key);
    assert_true(read_small(path, text, sizeof(text)) > 0);
    assert_non_null(strstr(text, "-DVW="));
    /* clean up: every file is a <key>.cl / .opts or kernels.tsv */
    snprintf(path, sizeof(path), "rm -rf '%s'", dir);
    assert_int_equal(system(path), 0);

    clf_error err;
    p.error = &err;
    p.program_log_dir = "/proc/clformer-cannot-make-this";
    assert_int_equal(clf_context_create(&ctx, &p), CLF_ERROR_IO);
    assert_null(ctx);
    assert_non_null(strstr(err.message, "/proc/clformer-cannot-make-this"));
}

/* program_log_only records as program_log_dir does but runs nothing: a softmax's output keeps
 * what was written before it, its kernel is in kernels.tsv; the option without a folder is
 * refused with a message. */
static void test_program_log_only(void **state) {
    (void)state;
    static char tsv[8192];
    char dir[256], path[600];
    snprintf(dir, sizeof(dir), "%s/clf-program-log-only-%ld", P_tmpdir, (long)getpid());
    clf_context_params p = clf_context_default_params();
    clf_error err;
    p.error = &err;
    p.program_log_only = 1;
    clf_context *ctx = NULL;
    assert_int_equal(clf_context_create(&ctx, &p), CLF_ERROR_INVALID_ARGUMENT);
    assert_null(ctx);
    assert_non_null(strstr(err.message, "program_log_dir"));
    p.disk_cache = 0;
    p.program_log_dir = dir;
    CLF_OK(clf_context_create(&ctx, &p));
    int64_t shape[2] = {3, 40};
    clf_tensor *x = NULL, *y = NULL;
    CLF_OK(clf_tensor_create(ctx, CLF_F32, 2, shape, &x));
    CLF_OK(clf_tensor_create(ctx, CLF_F32, 2, shape, &y));
    CLF_OK(clf_tensor_fill(x, 1.0));
    CLF_OK(clf_tensor_fill(y, 7.0));
    CLF_OK(clf_softmax(ctx, x, y, NULL));
    float got[120];
    CLF_OK(clf_tensor_read(y, got, sizeof(got)));
    for (int i = 0; i < 120; i++)
        assert_true(got[i] == 7.0f); /* a softmax that ran would give 1/40 */
    clf_tensor_free(x);
    clf_tensor_free(y);
    clf_context_free(ctx);
    snprintf(path, sizeof(path), "%s/kernels.tsv", dir);
    assert_true(read_small(path, tsv, sizeof(tsv)) > 0);
    assert_non_null(strstr(tsv, "\tsoftmax_rows\t"));
    snprintf(path, sizeof(path), "rm -rf '%s'", dir);
    assert_int_equal(system(path), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_warmup_covers_calls), cmocka_unit_test(test_disk_cache),
        cmocka_unit_test(test_profiling),           cmocka_unit_test(test_kernel_dir_override),
        cmocka_unit_test(test_program_log),         cmocka_unit_test(test_program_log_only),
    };
    return HARNESS_RUN("programs", tests);
}
