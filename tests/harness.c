/* harness.c — see harness.h. */
#include "harness.h"
#include "../src/rng.h"
#include "../src/internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

clf_context *g_ctx;

int harness_setup(void **state) {
    (void)state;
    clf_error msg = {""};
    clf_context_params p = clf_context_default_params();
    p.error = &msg;
    clf_status st = clf_context_create(&g_ctx, &p);
    if (st != CLF_SUCCESS) {
        fprintf(stderr, "cannot create a clformer context: %s (%d): %s\n", clf_strerror(st), st,
                msg.message);
        return -1;
    }
    clf_device_info info;
    clf_context_device_info(g_ctx, &info);
    fprintf(stderr, "device: %s (%s, driver %s)\n", info.name, info.platform_name,
            info.driver_version);
    return harness_after_setup ? harness_after_setup() : 0;
}

int (*harness_after_setup)(void);
void (*harness_before_teardown)(void);

int harness_teardown(void **state) {
    (void)state;
    if (harness_before_teardown) harness_before_teardown();
    clf_context_free(g_ctx);
    g_ctx = NULL;
    return 0;
}

/* On llvmpipe the device's own limits (32 work-items for most kernels, a loop budget) already
 * shape every test, and it runs them 10x slower than PoCL: the emulated limits stay off there,
 * and the test that asked for them reports a skip (cmocka's skip()), not a pass. */
static int emulating_pointless(const char *what) {
    clf_device_info info;
    clf_context_device_info(g_ctx, &info);
    if (clf__device_loop_budget(&info) == 0) return 0;
    fprintf(stderr, "%s: not emulated on %s, whose own limits apply to every test\n", what,
            info.name);
    return 1;
}

/* Caps 1 and 3 everywhere the caps are emulated; 32 only on Oclgrind. Cap 32 is what
 * rusticl/llvmpipe reports as CL_KERNEL_WORK_GROUP_SIZE for every kernel (PoCL: 4096), so the
 * rusticl stage runs every test under it natively; emulating it on PoCL repeated that stage's
 * coverage at the price of a third set of cold compiles. */
void harness_under_wg_caps(void (*body)(void **state), void **state) {
    static const size_t caps[] = {1, 3, 32};
    if (emulating_pointless("work-group caps")) skip();
    clf_device_info info;
    clf_context_device_info(g_ctx, &info);
    const size_t n_caps = clf__is_simulator(&info) ? 3 : 2;
    for (size_t i = 0; i < n_caps; i++) {
        clf__wg_cap_set(g_ctx, caps[i]);
        body(state);
    }
    clf__wg_cap_set(g_ctx, 0);
}

void harness_under_loop_budget(void (*body)(void **state), void **state, int64_t budget) {
    if (emulating_pointless("loop budget")) skip();
    clf_device_info info;
    clf_context_device_info(g_ctx, &info);
    clf__loop_budget_set(g_ctx, budget);
    body(state);
    clf__loop_budget_set(g_ctx, clf__device_loop_budget(&info));
}

void harness_free_checked(clf_context *ctx, const char *when) {
    cl_context cl = clf_context_cl_context(ctx);
    cl_uint refs = 0;
    assert_int_equal(clRetainContext(cl), CL_SUCCESS);
    clf_context_free(ctx);
    /* A driver may drop its own references from worker threads a little after clFinish (PoCL's
     * pthread device does under load: a CI run saw 2 at once, a cold build fault beside another
     * test): a leak is a reference that stays, so the count gets up to 5 s to come down. */
    for (int tries = 0; tries < 5000; tries++) {
        assert_int_equal(
            clGetContextInfo(cl, CL_CONTEXT_REFERENCE_COUNT, sizeof(refs), &refs, NULL),
            CL_SUCCESS);
        if (refs <= 1) break;
        const struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    clReleaseContext(cl);
    if (refs != 1)
        fail_msg("%s: %u references to the cl_context remain after clf_context_free (1 expected)",
                 when, refs);
}

int harness_in_ci(void) {
    const char *ci = getenv("CI");
    return ci && *ci && strcmp(ci, "0") != 0 && strcmp(ci, "false") != 0;
}

/* Runs the tests a name list picks: with keep, those it names (in its order); else all but those.
 * The list is CLF_TEST_ONLY's or CLF_TEST_SKIP's (`var`, for messages); a name that matches no test
 * fails, so a typo cannot pass. */
static int run_listed(const char *name, const struct CMUnitTest *tests, size_t count,
                      const char *var, const char *names, int keep) {
    struct CMUnitTest *picked = calloc(count ? count : 1, sizeof(*picked));
    unsigned char *named = calloc(count ? count : 1, 1);
    char *list = strdup(names);
    int missing = !picked || !named || !list;
    size_t n = 0;
    for (char *tok = missing ? NULL : strtok(list, ", "); tok; tok = strtok(NULL, ", ")) {
        size_t i = 0;
        while (i < count && strcmp(tests[i].name, tok) != 0)
            i++;
        if (i == count) {
            fprintf(stderr, "%s: %s names '%s', which is no test here\n", name, var, tok);
            missing = 1;
        } else {
            named[i] = 1;
            if (keep) picked[n++] = tests[i]; /* in the list's order */
        }
    }
    for (size_t i = 0; !keep && !missing && i < count; i++)
        if (!named[i]) picked[n++] = tests[i];
    int rc =
        missing ? 1 : _cmocka_run_group_tests(name, picked, n, harness_setup, harness_teardown);
    free(list);
    free(named);
    free(picked);
    return rc;
}

int harness_run(const char *name, const struct CMUnitTest *tests, size_t count) {
    /* CLF_TEST_LIST=1: print a header line and the test names, a line each, and run nothing
     * (device-check.sh runs a long program's tests as separate processes side by side this way). */
    const char *list = getenv("CLF_TEST_LIST");
    if (list && *list && strcmp(list, "0") != 0) {
        printf("clformer tests of %s:\n", name); /* what the script looks for */
        for (size_t i = 0; i < count; i++)
            printf("%s\n", tests[i].name);
        return 0;
    }
    uint32_t n = 0;
    if (clf_device_list(NULL, 0, &n) != CLF_SUCCESS || n == 0) {
        if (harness_in_ci()) {
            fprintf(stderr, "%s: no OpenCL device found, and CI is set: failing\n", name);
            return 1;
        }
        fprintf(stderr, "%s: no OpenCL device found: skipping (set CI=1 to fail instead)\n", name);
        return 77; /* CTest SKIP_RETURN_CODE */
    }
    /* CLF_TEST_ONLY="test_a,test_b": only those (the Oclgrind label runs subsets this way);
     * CLF_TEST_SKIP="test_a,test_b": all but those (a program split across CTest entries, run
     * side by side: another entry takes them with CLF_TEST_ONLY). */
    const char *only = getenv("CLF_TEST_ONLY");
    const char *skip = getenv("CLF_TEST_SKIP");
    if (only && *only) return run_listed(name, tests, count, "CLF_TEST_ONLY", only, 1);
    if (skip && *skip) return run_listed(name, tests, count, "CLF_TEST_SKIP", skip, 0);
    return _cmocka_run_group_tests(name, tests, count, harness_setup, harness_teardown);
}

int harness_on_simulator(void) {
    clf_device_info info;
    return g_ctx && clf_context_device_info(g_ctx, &info) == CLF_SUCCESS && info.is_simulator;
}

char *harness_slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    if (b) b[n] = '\0';
    fclose(f);
    return b;
}

clf_context *harness_context_in(const char *cache_dir) {
    clf_context_params p = clf_context_default_params();
    p.cache_dir = cache_dir;
    clf_context *ctx = NULL;
    clf_error msg = {""};
    p.error = &msg;
    if (clf_context_create(&ctx, &p) != CLF_SUCCESS)
        fail_msg("context in %s: %s", cache_dir, msg.message);
    return ctx;
}

void harness_remove_tree(const char *dir) {
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static clf_rng rng_state = {0x9e3779b97f4a7c15ULL}; /* the tests' one stream (src/rng.h) */

void harness_write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_true(fputs(text, f) >= 0);
    assert_int_equal(fclose(f), 0);
}

void harness_fresh_tuning(const char *tag, const char *kind, char *dir, size_t dir_size, char *file,
                          size_t file_size) {
    snprintf(dir, dir_size, "/tmp/clf-%s-XXXXXX", tag);
    assert_non_null(mkdtemp(dir));
    clf_context *ctx = harness_context_in(dir);
    char *path = clf__tuning_path(ctx, kind);
    assert_non_null(path);
    snprintf(file, file_size, "%s", path);
    free(path);
    clf_context_free(ctx);
    char sub[1024];
    snprintf(sub, sizeof(sub), "%s/%s", dir, kind);
    assert_int_equal(clf__make_dirs(sub), 0);
}

const char *harness_env_or(const char *name, const char *fallback) {
    const char *v = getenv(name);
    return v && *v ? v : fallback;
}

void rng_seed(uint64_t seed) {
    rng_state = clf_rng_make(seed);
}

static uint64_t rng_next(void) {
    return clf_rng_next(&rng_state);
}

float *rng_floats(int64_t n) {
    float *x = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    for (int64_t i = 0; x && i < n; i++)
        x[i] = (float)rng_uniform(-1, 1);
    return x;
}

double rng_uniform(double lo, double hi) {
    return clf_rng_uniform(&rng_state, lo, hi);
}

double rng_normal(void) {
    double u = rng_uniform(1e-12, 1.0), v = rng_uniform(0.0, 1.0);
    return sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v);
}

int64_t rng_int(int64_t lo, int64_t hi) {
    return lo + (int64_t)(rng_next() % (uint64_t)(hi - lo + 1));
}

clf_tensor *tensor_from(clf_dtype dtype, int ndim, const int64_t *shape, const void *data) {
    clf_tensor *t = NULL;
    CLF_OK(clf_tensor_create(g_ctx, dtype, ndim, shape, &t));
    CLF_OK(clf_tensor_write(t, data, clf_tensor_bytes(t)));
    return t;
}

clf_tensor *tensor_poisoned(clf_dtype dtype, int ndim, const int64_t *shape) {
    clf_tensor *t = NULL;
    CLF_OK(clf_tensor_create(g_ctx, dtype, ndim, shape, &t));
    /* Written from the host, not by clEnqueueFillBuffer: Oclgrind 21.10's uninitialized-value
     * check does not count a filled buffer as written and would flag every read of it. The
     * pattern reads as NaN in every floating type: 0x7fc00000 words would read as +0.0 in half
     * the elements of an F16 or BF16 tensor; all-ones bytes give a block type NaN scales. */
    const size_t bytes = clf_tensor_bytes(t);
    unsigned char *poison = malloc(bytes ? bytes : 4);
    assert_non_null(poison);
    const uint32_t word = dtype == CLF_I32 ? 0x80000000u : 0x7fc00000u; /* INT32_MIN, NaN */
    const uint16_t half = dtype == CLF_F16 ? 0x7e00u : 0x7fc0u;         /* NaN in F16, BF16 */
    for (size_t i = 0; i < bytes; i++) {
        if (dtype == CLF_F32 || dtype == CLF_I32)
            poison[i] = (unsigned char)(word >> (8 * (i % 4)));
        else if (dtype == CLF_F16 || dtype == CLF_BF16)
            poison[i] = (unsigned char)(half >> (8 * (i % 2)));
        else
            poison[i] = 0xff;
    }
    CLF_OK(clf_tensor_write(t, poison, bytes));
    free(poison);
    return t;
}

float *tensor_to_host(const clf_tensor *t) {
    float *h = malloc(clf_tensor_bytes(t));
    assert_non_null(h);
    CLF_OK(clf_tensor_read(t, h, clf_tensor_bytes(t)));
    return h;
}

void check_close(const char *what, const float *got, const double *want, int64_t n, double atol,
                 double rtol) {
    for (int64_t i = 0; i < n; i++) {
        double err = fabs((double)got[i] - want[i]);
        double tol = atol + rtol * fabs(want[i]);
        if (!(err <= tol)) /* NaN fails too */
            fail_msg("%s: element %lld: got %.9g, want %.9g (|err| %.3g > tol %.3g)", what,
                     (long long)i, (double)got[i], want[i], err, tol);
    }
}

void use_tunables(const char *prog, int64_t vw, int64_t wg, int64_t rpg) {
    char name[64];
    /* CLF_TEST_MAX_VW caps the vector width: the Oclgrind label's uninitialized-value pass runs
     * with 8, since that check of Oclgrind 21.10 misreads the halves of 16-wide vectors. */
    const char *cap = getenv("CLF_TEST_MAX_VW");
    if (cap && atoi(cap) > 0 && vw > atoi(cap)) vw = atoi(cap);
    snprintf(name, sizeof(name), "%s.VW", prog);
    CLF_OK(clf_context_set_tunable(g_ctx, name, vw));
    snprintf(name, sizeof(name), "%s.WG", prog);
    CLF_OK(clf_context_set_tunable(g_ctx, name, wg));
    if (rpg > 0) {
        snprintf(name, sizeof(name), "%s.RPG", prog);
        CLF_OK(clf_context_set_tunable(g_ctx, name, rpg));
    }
}

const tunable_style k_styles[3] = {
    {"cpu-style", 16, 1, 4},
    {"gpu-style", 4, 64, 2},
    {"odd-style", 1, 2, 3},
};
