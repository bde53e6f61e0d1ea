/*
 * harness.h — what every device test shares: one context per test program (PoCL compiles
 * slowly), random inputs, poisoned outputs, error metrics.
 *
 * A missing OpenCL device fails the test program when CI is set, and skips it otherwise.
 */
#ifndef CLF_TEST_HARNESS_H
#define CLF_TEST_HARNESS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "clformer/clformer.h"

/* The shared context: created by harness_setup (a cmocka group setup), freed by
 * harness_teardown. */
extern clf_context *g_ctx;
int harness_setup(void **state);
int harness_teardown(void **state);

/* Optional hooks: run after the shared context is created (non-zero fails the group) and before
 * it is freed, e.g. to load a model once per test program. */
extern int (*harness_after_setup)(void);
extern void (*harness_before_teardown)(void);

/* 1 when $CI is set (and not "0" or "false"): missing devices and data fail instead of skip. */
int harness_in_ci(void);

/* 1 when the shared context runs on a simulator (Oclgrind). */
int harness_on_simulator(void);

/* Runs a cmocka group with the shared context; returns the exit status. CLF_TEST_ONLY (names,
 * comma-separated) runs only those tests. */
int harness_run(const char *name, const struct CMUnitTest *tests, size_t count);
#define HARNESS_RUN(name, tests) harness_run(name, tests, sizeof(tests) / sizeof(tests[0]))

/* A whole file, NUL-terminated, malloc'ed; NULL if unreadable. */
char *harness_slurp(const char *path);

/* A context with default parameters but cache folder cache_dir (fails the test if none). */
clf_context *harness_context_in(const char *cache_dir);
/* Removes a scratch folder and everything in it (fails the test if it cannot). */
void harness_remove_tree(const char *dir);

/* Writes text into the file at path (created or truncated); fails the test on an error. */
void harness_write_file(const char *path, const char *text);
/* A fresh temporary cache folder in dir (mkdtemp of "/tmp/clf-<tag>-XXXXXX") and this device's
 * tuning file path of `kind` there in file (not written; its folder made): tuning tests that
 * need one make their own, so every test runs alone. */
void harness_fresh_tuning(const char *tag, const char *kind, char *dir, size_t dir_size, char *file,
                          size_t file_size);
/* $name if set and not empty, else fallback: paths compiled in for this machine (the source
 * folder, the bench binary) can be pointed elsewhere when the built tests run on another machine
 * (scripts/device-check.sh). */
const char *harness_env_or(const char *name, const char *fallback);
/* The source folder (fixtures, kernels): $CLF_SOURCE_DIR, else the one the tests were built
 * from. */
#define CLF_SRC harness_env_or("CLF_SOURCE_DIR", CLF_SOURCE_DIR)

/* Deterministic random numbers (xorshift64*). */
void rng_seed(uint64_t seed);
double rng_uniform(double lo, double hi);
/* n floats uniform in [-1, 1], malloc'ed. */
float *rng_floats(int64_t n);
double rng_normal(void);
int64_t rng_int(int64_t lo, int64_t hi); /* inclusive */

/* Asserts a call succeeded, printing the context's detail message if not. */
#define CLF_OK(call)                                                                               \
    do {                                                                                           \
        clf_status st_ = (call);                                                                   \
        if (st_ != CLF_SUCCESS)                                                                    \
            fail_msg("%s -> %d (%s): %s", #call, (int)st_, clf_strerror(st_),                      \
                     clf_context_last_error(g_ctx));                                               \
    } while (0)

/* A device tensor (f32) holding host data. */
clf_tensor *tensor_from(clf_dtype dtype, int ndim, const int64_t *shape, const void *data);
/* A device tensor filled with NaN (every floating type, block types through NaN scales) or
 * INT32_MIN (i32): an element the op fails to write shows up as a mismatch. */
clf_tensor *tensor_poisoned(clf_dtype dtype, int ndim, const int64_t *shape);
/* Reads a f32 tensor into a malloc'ed array. */
float *tensor_to_host(const clf_tensor *t);

/* Compares got to want: every element must satisfy |got - want| <= atol + rtol * |want| (NaN
 * fails). Fails the test with the first bad index. */
void check_close(const char *what, const float *got, const double *want, int64_t n, double atol,
                 double rtol);

/* Sets program tunables on g_ctx: "<prog>.VW", "<prog>.WG" and, if rpg > 0, "<prog>.RPG"
 * ($CLF_TEST_MAX_VW caps VW). */
void use_tunables(const char *prog, int64_t vw, int64_t wg, int64_t rpg);

/* Runs body (a test's function) again with every kernel's work-group capped at 1, 3 and 32
 * work-items (a device that allows fewer than the tunables ask for: the ops must fit their
 * launches and still match the reference), then lifts the cap. */
void harness_under_wg_caps(void (*body)(void **state), void **state);
/* Runs body with a loop budget per work-item (llvmpipe's limit, scaled down so that PoCL takes
 * the same paths), then restores the device's own. */
void harness_under_loop_budget(void (*body)(void **state), void **state, int64_t budget);

/* Frees ctx and fails (naming `when`) unless that released its cl_context: a buffer, program,
 * kernel, queue or event leaked on some path, or a library's cache (CLBlast's), keeps the
 * cl_context alive, and on NVIDIA each is a CUDA context (the fault walks ran out of them at about
 * 100 contexts, CL_OUT_OF_HOST_MEMORY). */
void harness_free_checked(clf_context *ctx, const char *when);

/* Tunable styles every op test runs: PoCL's (one work-item per row, float16), a GPU's (float4,
 * 64 work-items per row, local-memory tree), and an odd one (scalar loads, 2 per row). */
typedef struct {
    const char *label;
    int64_t vw, wg, rpg;
} tunable_style;
extern const tunable_style k_styles[3];

#endif
