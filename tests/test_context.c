/*
 * test_context.c — device layer, context, tensors and their error paths (the program cache:
 * test_programs.c).
 */
#include "harness.h"
#include "ref/ref.h"
#include "../src/internal.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void test_device_list(void **state) {
    (void)state;
    uint32_t n = 0;
    CLF_OK(clf_device_list(NULL, 0, &n));
    assert_true(n >= 1);
    clf_device_info *infos = calloc(n, sizeof(*infos));
    uint32_t n2 = 0;
    CLF_OK(clf_device_list(infos, n, &n2));
    assert_int_equal(n, n2);
    for (uint32_t i = 0; i < n; i++) {
        assert_int_equal(infos[i].global_index, i);
        assert_true(strlen(infos[i].name) > 0);
        assert_true(infos[i].compute_units >= 1);
        assert_true(infos[i].max_alloc_bytes > 0);
        assert_true(infos[i].global_mem_bytes >= infos[i].max_alloc_bytes);
        assert_true(infos[i].max_work_group_size >= 1);
        assert_non_null(strstr(infos[i].opencl_c_version, "OpenCL C"));
    }
    /* Selecting each device by its index and by platform:device finds the same one. */
    clf_device_info sel;
    char spec[32];
    snprintf(spec, sizeof(spec), "%u:%u", infos[n - 1].platform_index, infos[n - 1].device_index);
    CLF_OK(clf_device_select(spec, &sel, NULL));
    assert_string_equal(sel.name, infos[n - 1].name);
    assert_int_equal(clf_device_list(NULL, 1, &n2), CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_device_list(NULL, 0, NULL), CLF_ERROR_INVALID_ARGUMENT);
    free(infos);
}

static void test_bad_device_spec(void **state) {
    (void)state;
    clf_error msg = {""};
    clf_context_params p = clf_context_default_params();
    p.device_spec = "no-such-device-xyz";
    p.error = &msg;
    clf_context *ctx = (clf_context *)0x1;
    assert_int_equal(clf_context_create(&ctx, &p), CLF_ERROR_NO_DEVICE);
    assert_null(ctx);
    assert_non_null(strstr(msg.message, "no-such-device-xyz"));
    /* The message names the devices that exist. */
    clf_device_info info;
    CLF_OK(clf_context_device_info(g_ctx, &info));
    assert_non_null(strstr(msg.message, info.name));
    p.device_spec = "x:y";
    assert_int_equal(clf_context_create(&ctx, &p), CLF_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(msg.message, "malformed"));
    clf_error sel_err = {"stale"};
    assert_int_equal(clf_device_select("no-such-device-xyz", &info, &sel_err), CLF_ERROR_NO_DEVICE);
    assert_non_null(strstr(sel_err.message, "no-such-device-xyz"));
    CLF_OK(clf_device_select(NULL, &info, &sel_err));
    assert_string_equal(sel_err.message, ""); /* cleared on success */
    assert_int_equal(clf_context_create(NULL, &p), CLF_ERROR_INVALID_ARGUMENT);
}

/* CLF_DEVICE picks the device when the parameters name none; the parameters win over it. */
static void test_device_env(void **state) {
    (void)state;
    char *old = getenv("CLF_DEVICE") ? strdup(getenv("CLF_DEVICE")) : NULL;
    clf_error msg = {""};
    clf_context_params p = clf_context_default_params();
    p.error = &msg;
    clf_context *ctx = NULL;
    setenv("CLF_DEVICE", "no-such-device-from-env", 1);
    assert_int_equal(clf_context_create(&ctx, &p), CLF_ERROR_NO_DEVICE);
    assert_non_null(strstr(msg.message, "no-such-device-from-env"));
    clf_device_info info;
    CLF_OK(clf_context_device_info(g_ctx, &info));
    p.device_spec = info.type == CLF_DEVICE_GPU ? "gpu" : "cpu";
    CLF_OK(clf_context_create(&ctx, &p));
    clf_context_free(ctx);
    p.device_spec = NULL;
    setenv("CLF_DEVICE", "0", 1);
    CLF_OK(clf_context_create(&ctx, &p));
    clf_context_free(ctx);
    if (old)
        setenv("CLF_DEVICE", old, 1);
    else
        unsetenv("CLF_DEVICE");
    free(old);
}

static void test_null_arguments(void **state) {
    (void)state;
    int64_t shape[2] = {3, 5};
    clf_tensor *t = tensor_poisoned(CLF_F32, 2, shape);
    assert_int_equal(clf_softmax(NULL, t, t, NULL), CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_softmax(g_ctx, NULL, t, NULL), CLF_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(clf_context_last_error(g_ctx), "x is NULL"));
    assert_int_equal(clf_softmax(g_ctx, t, NULL, NULL), CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_layernorm(g_ctx, t, NULL, NULL, NULL, 1e-5f, t),
                     CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_tensor_write(t, NULL, clf_tensor_bytes(t)), CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_tensor_read(NULL, shape, 8), CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_tensor_create(g_ctx, CLF_F32, 2, shape, NULL), CLF_ERROR_INVALID_ARGUMENT);
    clf_tensor *t2 = (clf_tensor *)0x1;
    assert_int_equal(clf_tensor_create(g_ctx, CLF_F32, 2, NULL, &t2), CLF_ERROR_INVALID_ARGUMENT);
    assert_null(t2);
    assert_int_equal(clf_context_set_tunable(g_ctx, NULL, 1), CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_context_build_kernel(g_ctx, NULL, NULL, "k", NULL),
                     CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_context_create_from_cl(NULL, NULL, NULL, NULL, NULL),
                     CLF_ERROR_INVALID_ARGUMENT);
    clf_context_free(NULL);
    clf_tensor_free(NULL);
    /* Nothing was written. */
    float *h = tensor_to_host(t);
    for (int i = 0; i < 15; i++)
        assert_true(isnan(h[i]));
    free(h);
    clf_tensor_free(t);
}

static void test_tensor_basics(void **state) {
    (void)state;
    int64_t shape[3] = {2, 3, 7};
    float data[42];
    for (int i = 0; i < 42; i++)
        data[i] = (float)i * 0.5f;
    clf_tensor *a = tensor_from(CLF_F32, 3, shape, data);
    assert_int_equal(clf_tensor_ndim(a), 3);
    assert_int_equal(clf_tensor_dim(a, -1), 7);
    assert_int_equal(clf_tensor_dim(a, 0), 2);
    assert_int_equal(clf_tensor_dim(a, 5), 0);
    assert_int_equal(clf_tensor_numel(a), 42);
    assert_int_equal(clf_tensor_bytes(a), 168);
    clf_tensor *b = tensor_poisoned(CLF_F32, 3, shape);
    CLF_OK(clf_tensor_copy(b, a));
    float out[42];
    CLF_OK(clf_tensor_read(b, out, sizeof(out)));
    assert_memory_equal(out, data, sizeof(out));
    CLF_OK(clf_tensor_fill(b, 2.5));
    CLF_OK(clf_tensor_read(b, out, sizeof(out)));
    for (int i = 0; i < 42; i++)
        assert_true(out[i] == 2.5f);
    /* Size mismatches. */
    assert_int_equal(clf_tensor_read(b, out, 8), CLF_ERROR_SHAPE_MISMATCH);
    int64_t rs[2] = {6, 7}, bad[2] = {6, 8};
    CLF_OK(clf_tensor_reshape(b, 2, rs));
    assert_int_equal(clf_tensor_dim(b, 0), 6);
    assert_int_equal(clf_tensor_reshape(b, 2, bad), CLF_ERROR_SHAPE_MISMATCH);
    assert_int_equal(clf_tensor_dim(b, 1), 7);
    int64_t s1[1] = {5};
    clf_tensor *c = tensor_poisoned(CLF_F32, 1, s1);
    assert_int_equal(clf_tensor_copy(c, a), CLF_ERROR_SHAPE_MISMATCH);
    clf_tensor *ci = tensor_poisoned(CLF_I32, 1, s1);
    assert_int_equal(clf_tensor_copy(ci, c), CLF_ERROR_UNSUPPORTED);
    CLF_OK(clf_tensor_fill(ci, -7));
    int32_t iv[5];
    CLF_OK(clf_tensor_read(ci, iv, sizeof(iv)));
    for (int i = 0; i < 5; i++)
        assert_int_equal(iv[i], -7);
    assert_int_equal(clf_tensor_fill(ci, 1e12), CLF_ERROR_INVALID_ARGUMENT);
    /* f16 storage: 1.5 is exact in half (0x3e00). */
    clf_tensor *h = NULL;
    CLF_OK(clf_tensor_create(g_ctx, CLF_F16, 1, s1, &h));
    assert_int_equal(clf_tensor_bytes(h), 10);
    CLF_OK(clf_tensor_fill(h, 1.5));
    uint16_t hv[5];
    CLF_OK(clf_tensor_read(h, hv, sizeof(hv)));
    for (int i = 0; i < 5; i++)
        assert_int_equal(hv[i], 0x3e00);
    clf_tensor_free(h);
    clf_tensor_free(a);
    clf_tensor_free(b);
    clf_tensor_free(c);
    clf_tensor_free(ci);
}

/* Floats into and out of F16 tensors: round to nearest even (ties, subnormals, signed zero,
 * infinities), the range refused with nothing written, wrong counts and dtypes refused. */
static void test_f16_transfers(void **state) {
    (void)state;
    const float in[8] = {
        1.0f, 1.0f + 0x1p-11f, 1.0f + 0x1p-11f + 0x1p-12f, -0.0f, 0x1p-24f, 65504.0f, INFINITY,
        0.1f};
    const float want[8] = {1.0f,     1.0f,     1.0f + 0x1p-10f, -0.0f,
                           0x1p-24f, 65504.0f, INFINITY,        0.0999755859375f};
    int64_t n = 8;
    clf_tensor *t = NULL, *i32 = NULL;
    CLF_OK(clf_tensor_create(g_ctx, CLF_F16, 1, &n, &t));
    CLF_OK(clf_tensor_create(g_ctx, CLF_I32, 1, &n, &i32));
    assert_int_equal(clf_tensor_bytes(t), 16);
    CLF_OK(clf_tensor_write_f32(t, in, n));
    float got[8];
    CLF_OK(clf_tensor_read_f32(t, got, n));
    for (int i = 0; i < 8; i++) {
        assert_true(got[i] == want[i]);
        assert_int_equal(signbit(got[i]), signbit(want[i]));
    }
    float big[8];
    memcpy(big, in, sizeof(big));
    big[5] = 65520.0f; /* rounds past the largest half */
    assert_int_equal(clf_tensor_write_f32(t, big, n), CLF_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(clf_context_last_error(g_ctx), "element 5"));
    CLF_OK(clf_tensor_read_f32(t, got, n)); /* unchanged */
    assert_true(got[5] == 65504.0f);
    assert_int_equal(clf_tensor_write_f32(t, in, n - 1), CLF_ERROR_SHAPE_MISMATCH);
    assert_int_equal(clf_tensor_write_f32(t, NULL, n), CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_tensor_read_f32(i32, got, n), CLF_ERROR_UNSUPPORTED);
    assert_int_equal(clf_tensor_write_f32(NULL, in, n), CLF_ERROR_INVALID_ARGUMENT);
    assert_true(clf_f16_to_f32(clf_f32_to_f16(NAN)) != clf_f16_to_f32(clf_f32_to_f16(NAN)));
    assert_int_equal(clf_f32_to_f16(1e6f), 0x7c00);
    assert_int_equal(clf_f32_to_f16(-2.0f), 0xc000);
    clf_tensor_free(t);
    clf_tensor_free(i32);
}

static void test_bad_shapes(void **state) {
    (void)state;
    clf_device_info info;
    CLF_OK(clf_context_device_info(g_ctx, &info));
    clf_tensor *t = (clf_tensor *)0x1;
    int64_t big[1] = {(int64_t)(info.max_alloc_bytes / 4 + 1)};
    assert_int_equal(clf_tensor_create(g_ctx, CLF_F32, 1, big, &t), CLF_ERROR_SIZE_LIMIT);
    assert_null(t);
    assert_non_null(strstr(clf_context_last_error(g_ctx), "max allocation"));
    int64_t ovf[3] = {INT64_MAX / 2, 4, 4};
    assert_int_equal(clf_tensor_create(g_ctx, CLF_F32, 3, ovf, &t), CLF_ERROR_SIZE_LIMIT);
    int64_t zero[2] = {3, 0};
    assert_int_equal(clf_tensor_create(g_ctx, CLF_F32, 2, zero, &t), CLF_ERROR_INVALID_ARGUMENT);
    int64_t five[5] = {1, 1, 1, 1, 1};
    assert_int_equal(clf_tensor_create(g_ctx, CLF_F32, 5, five, &t), CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_tensor_create(g_ctx, CLF_F32, 0, five, &t), CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_tensor_create(g_ctx, (clf_dtype)9, 1, five, &t),
                     CLF_ERROR_INVALID_ARGUMENT);
}

static void test_build_failure_log(void **state) {
    (void)state;
    cl_kernel k = (cl_kernel)0x1;
    clf_status st = clf_context_build_kernel(
        g_ctx, "__kernel void broken(__global float *x) { x[0] = no_such_symbol_42; }", "",
        "broken", &k);
    assert_int_equal(st, CLF_ERROR_BUILD_FAILED);
    const char *log = clf_context_last_error(g_ctx);
    assert_non_null(strstr(log, "build log"));
    assert_non_null(strstr(log, "no_such_symbol_42")); /* the compiler's own words */
    /* A good kernel builds; a missing kernel name is OpenCL's error. */
    CLF_OK(clf_context_build_kernel(g_ctx, "__kernel void fine(__global float *x) { x[0] = 1; }",
                                    NULL, "fine", &k));
    clReleaseKernel(k);
    st = clf_context_build_kernel(g_ctx, "__kernel void fine(__global float *x) { x[0] = 1; }",
                                  NULL, "other", &k);
    assert_int_equal(st, CL_INVALID_KERNEL_NAME);
    assert_null(k);
}

/* Every library program compiles on its own, with the defaults written in its file. */
static void test_kernels_standalone(void **state) {
    (void)state;
    for (int p = 0; p < CLF_PROG_COUNT; p++) {
        char *src = NULL;
        CLF_OK(clf__program_source(g_ctx, (clf_prog_id)p, &src));
        cl_program prog;
        CLF_OK(clf__program_get(g_ctx, src, "", &prog));
        free(src);
    }
}

static void test_tunables_api(void **state) {
    (void)state;
    int64_t v = 0;
    CLF_OK(clf_context_get_tunable(g_ctx, "softmax.VW", &v));
    clf_device_info info;
    CLF_OK(clf_context_device_info(g_ctx, &info));
    /* PoCL-style CPUs: 16 (llvmpipe, a CPU, takes the tunables of "other" devices: 4). */
    const int64_t want_vw = clf__device_loop_budget(&info) > 0 ? 4 : 16;
    if (info.type == CLF_DEVICE_CPU) assert_int_equal(v, want_vw);
    assert_int_equal(clf_context_set_tunable(g_ctx, "softmax.VW", 3), CLF_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(clf_context_last_error(g_ctx), "power of two"));
    assert_int_equal(clf_context_set_tunable(g_ctx, "softmax.VW", 32), CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_context_set_tunable(g_ctx, "softmax.VW", 0), CLF_ERROR_INVALID_ARGUMENT);
    assert_int_equal(clf_context_set_tunable(g_ctx, "nope.VW", 4), CLF_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(clf_context_last_error(g_ctx), "nope.VW"));
    CLF_OK(clf_context_finish(g_ctx)); /* a call that succeeds leaves no message */
    assert_string_equal(clf_context_last_error(g_ctx), "");
    CLF_OK(clf_context_get_tunable(g_ctx, "softmax.VW", &v));
    if (info.type == CLF_DEVICE_CPU) assert_int_equal(v, want_vw); /* unchanged */
    /* linear.VNNI: on by default exactly where the host finds AVX512-VNNI under PoCL's CPU
     * device, and refused elsewhere (its instructions would fault), leaving it 0. */
    CLF_OK(clf_context_get_tunable(g_ctx, "linear.VNNI", &v));
    assert_int_equal(v, clf__x86_vnni(&info) ? 1 : 0);
    if (!v) {
        assert_int_equal(clf_context_set_tunable(g_ctx, "linear.VNNI", 1), CLF_ERROR_UNSUPPORTED);
        assert_non_null(strstr(clf_context_last_error(g_ctx), "AVX512-VNNI"));
        CLF_OK(clf_context_get_tunable(g_ctx, "linear.VNNI", &v));
        assert_int_equal(v, 0);
    }
    CLF_OK(clf_context_set_tunable(g_ctx, "linear.VNNI", 0));
    CLF_OK(clf_context_set_tunable(g_ctx, "linear.VNNI", clf__x86_vnni(&info) ? 1 : 0));
    assert_int_equal(clf_context_set_tunable(g_ctx, "linear.QX", 3), CLF_ERROR_INVALID_ARGUMENT);
    /* A work-group larger than any device allows (1024 x 64) is a request: the kernel is built
     * for the largest that fits, and computes the same. */
    int64_t shape[2] = {2, 10};
    float x[20];
    for (int i = 0; i < 20; i++)
        x[i] = (float)(i % 10);
    clf_tensor *t = tensor_from(CLF_F32, 2, shape, x);
    CLF_OK(clf_context_set_tunable(g_ctx, "softmax.WG", 1024));
    CLF_OK(clf_context_set_tunable(g_ctx, "softmax.RPG", 64));
    CLF_OK(clf_softmax(g_ctx, t, t, NULL));
    float y[20];
    CLF_OK(clf_tensor_read(t, y, sizeof(y)));
    double sum = 0;
    for (int i = 0; i < 10; i++)
        sum += exp((double)i);
    for (int i = 0; i < 20; i++)
        assert_true(fabs(y[i] - exp((double)(i % 10)) / sum) < 1e-6);
    CLF_OK(clf_context_set_tunable(g_ctx, "softmax.WG", 1));
    CLF_OK(clf_context_set_tunable(g_ctx, "softmax.RPG", 4));
    clf_tensor_free(t);
}

/* The developer option device_profile: tunables as on that vendor's GPU (an AMD CDNA wavefront of
 * 64: row kernels of 256); an unknown name is refused, naming it. */
static void test_device_profile(void **state) {
    (void)state;
    clf_context_params p = clf_context_default_params();
    p.disk_cache = 0;
    p.device_profile = "amd-cdna";
    clf_context *ctx = NULL;
    CLF_OK(clf_context_create(&ctx, &p));
    int64_t wg = 0, local = 0;
    CLF_OK(clf_context_get_tunable(ctx, "softmax.WG", &wg));
    CLF_OK(clf_context_get_tunable(ctx, "attention.LOCAL_KV", &local));
    assert_int_equal(wg, 256);
    assert_int_equal(local, 1);
    clf_context_free(ctx);
    clf_error err;
    p.error = &err;
    p.device_profile = "voodoo";
    assert_int_equal(clf_context_create(&ctx, &p), CLF_ERROR_INVALID_ARGUMENT);
    assert_null(ctx);
    assert_non_null(strstr(err.message, "voodoo"));
}

static void test_wrap_existing_objects(void **state) {
    (void)state;
    cl_context cl_ctx = clf_context_cl_context(g_ctx);
    cl_device_id dev = clf_context_cl_device(g_ctx);
    cl_int err;
    cl_command_queue q = clCreateCommandQueue(cl_ctx, dev, 0, &err);
    assert_int_equal(err, CL_SUCCESS);
    clf_context *ctx = NULL;
    CLF_OK(clf_context_create_from_cl(&ctx, cl_ctx, dev, q, NULL));
    assert_ptr_equal(clf_context_cl_queue(ctx), q);
    float x[3] = {0, 1, 2};
    int64_t shape[1] = {3};
    clf_tensor *t = NULL;
    CLF_OK(clf_tensor_create(ctx, CLF_F32, 1, shape, &t));
    CLF_OK(clf_tensor_write(t, x, sizeof(x)));
    CLF_OK(clf_softmax(ctx, t, t, NULL));
    /* The application's queue runs our work: its clFinish waits for it. */
    assert_int_equal(clFinish(q), CL_SUCCESS);
    float y[3];
    double want[3];
    CLF_OK(clf_tensor_read(t, y, sizeof(y)));
    ref_softmax(x, want, 1, 3, NULL);
    check_close("softmax on a wrapped queue", y, want, 3, 1e-7, 1e-5);
    /* A tensor of another context is refused. */
    assert_int_equal(clf_softmax(g_ctx, t, t, NULL), CLF_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(clf_context_last_error(g_ctx), "another context"));
    clf_tensor_free(t);
    clf_context_free(ctx);
    /* Our objects are still ours. */
    assert_int_equal(clFinish(q), CL_SUCCESS);
    clReleaseCommandQueue(q);
    /* A queue of another device/context is refused. */
    cl_context other = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    assert_int_equal(err, CL_SUCCESS);
    cl_command_queue q2 = clCreateCommandQueue(other, dev, 0, &err);
    assert_int_equal(err, CL_SUCCESS);
    assert_int_equal(clf_context_create_from_cl(&ctx, cl_ctx, dev, q2, NULL),
                     CLF_ERROR_INVALID_ARGUMENT);
    clReleaseCommandQueue(q2);
    clReleaseContext(other);
}

/* Two threads, each with its own context, run softmax on their own data at once. */
typedef struct {
    uint64_t seed;
    int ok;
    clf_error err;
} thread_job;

static void *thread_main(void *arg) {
    thread_job *job = arg;
    job->ok = 0;
    clf_context_params p = clf_context_default_params();
    p.error = &job->err;
    clf_context *ctx = NULL;
    if (clf_context_create(&ctx, &p) != CLF_SUCCESS) return NULL;
    enum { R = 37, N = 131 };
    float *x = malloc(sizeof(float) * R * N), *y = malloc(sizeof(float) * R * N);
    double *want = malloc(sizeof(double) * R * N);
    uint64_t s = job->seed;
    for (int i = 0; i < R * N; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        x[i] = (float)((double)(s >> 40) / (double)(1 << 24) * 8.0 - 4.0);
    }
    ref_softmax(x, want, R, N, NULL);
    int64_t shape[2] = {R, N};
    clf_tensor *t = NULL;
    int good = clf_tensor_create(ctx, CLF_F32, 2, shape, &t) == CLF_SUCCESS;
    for (int rep = 0; good && rep < 20; rep++) {
        good = clf_tensor_write(t, x, sizeof(float) * R * N) == CLF_SUCCESS &&
               clf_softmax(ctx, t, t, NULL) == CLF_SUCCESS &&
               clf_tensor_read(t, y, sizeof(float) * R * N) == CLF_SUCCESS;
        for (int i = 0; good && i < R * N; i++)
            good = fabs((double)y[i] - want[i]) <= 1e-7 + 1e-5 * want[i];
    }
    if (!good)
        snprintf(job->err.message, sizeof(job->err.message), "%s", clf_context_last_error(ctx));
    job->ok = good;
    clf_tensor_free(t);
    clf_context_free(ctx);
    free(x);
    free(y);
    free(want);
    return NULL;
}

static void test_two_threads_two_contexts(void **state) {
    (void)state;
    if (harness_on_simulator()) {
        /* Oclgrind 21.10 gives wrong results when two threads run kernels in two contexts of
         * their own, even in plain OpenCL with no clformer (see test_model's test_two_threads);
         * PoCL and rusticl run this test. */
        fprintf(stderr, "test_two_threads_two_contexts: skipped on Oclgrind (not thread-safe)\n");
        skip();
    }
    pthread_t th[2];
    thread_job jobs[2] = {{.seed = 1}, {.seed = 2}};
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&th[i], NULL, thread_main, &jobs[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < 2; i++)
        if (!jobs[i].ok) fail_msg("thread %d failed: %s", i, jobs[i].err.message);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_device_list),
        cmocka_unit_test(test_bad_device_spec),
        cmocka_unit_test(test_device_env),
        cmocka_unit_test(test_null_arguments),
        cmocka_unit_test(test_tensor_basics),
        cmocka_unit_test(test_f16_transfers),
        cmocka_unit_test(test_bad_shapes),
        cmocka_unit_test(test_build_failure_log),
        cmocka_unit_test(test_kernels_standalone),
        cmocka_unit_test(test_tunables_api),
        cmocka_unit_test(test_device_profile),
        cmocka_unit_test(test_wrap_existing_objects),
        cmocka_unit_test(test_two_threads_two_contexts),
    };
    return HARNESS_RUN("context", tests);
}
