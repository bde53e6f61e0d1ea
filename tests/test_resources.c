/*
 * test_resources.c — creating and freeing a context with every kernel built, 200 times (6 under
 * the sanitizers), does not grow the process. After 20 rounds (which fill the driver's and the
 * loader's one-time caches) come two windows of 90 rounds; a leak grows both, a one-time
 * allocation (a bigger table in the driver) lands in one only, so the smaller window is judged:
 *  - the heap in use (malloc's count, every arena and mmap'ed chunk) is the precise measure, but
 *    the drivers grow it steadily with no leak of ours: PoCL 3.1 by 12 KiB a round (LLVM keeps
 *    metadata of every program built from a binary in its process-wide context, seen with
 *    heaptrack), 1.1 MiB a window; rusticl (llvmpipe) by 24 KiB, 2.2 MiB a window;
 *  - resident memory also catches what a driver maps without malloc, but it moves with page
 *    reuse (+0.05 .. 4.7 MiB a window locally, once +8.5 MiB over 180 rounds in CI), so it only
 *    has a loose bound.
 */
#include "harness.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long rss_kib(void) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    long kib = -1;
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, "VmRSS:", 6) == 0) kib = strtol(line + 6, NULL, 10);
    fclose(f);
    return kib;
}

static long heap_kib(void) {
    const struct mallinfo2 m = mallinfo2();
    return (long)((m.uordblks + m.hblkhd) / 1024);
}

static long smaller(long a, long b) {
    return a < b ? a : b;
}

static void round_trip(void) {
    clf_context *ctx = NULL;
    CLF_OK(clf_context_create(&ctx, NULL));
    if (clf_context_warmup(ctx) != CLF_SUCCESS) fail_msg("warmup: %s", clf_context_last_error(ctx));
    int64_t shape[2] = {4, 33};
    clf_tensor *t = NULL;
    if (clf_tensor_create(ctx, CLF_F32, 2, shape, &t) != CLF_SUCCESS ||
        clf_tensor_fill(t, 1.0) != CLF_SUCCESS || clf_softmax(ctx, t, t, NULL) != CLF_SUCCESS ||
        clf_context_finish(ctx) != CLF_SUCCESS)
        fail_msg("softmax: %s", clf_context_last_error(ctx));
    clf_tensor_free(t);
    clf_context_free(ctx);
}

#ifdef CLF_SANITIZED
/* ASan's quarantine keeps freed memory resident, so the windows judge nothing there; a few
 * rounds give LeakSanitizer what a leak per round would leave (200 took 143 s of CI). */
enum { WARM = 2, WINDOW = 2 };
#else
enum { WARM = 20, WINDOW = 90 };
#endif

static void test_context_churn(void **state) {
    (void)state;
    for (int i = 0; i < WARM; i++)
        round_trip();
    const long before = rss_kib(), heap0 = heap_kib();
    for (int i = 0; i < WINDOW; i++)
        round_trip();
    const long middle = rss_kib(), heap1 = heap_kib();
    for (int i = 0; i < WINDOW; i++)
        round_trip();
    const long after = rss_kib(), heap2 = heap_kib();
    fprintf(stderr,
            "resident memory after %d rounds: %ld KiB, after %d: %ld KiB (%+ld), after %d: "
            "%ld KiB (%+ld)\nheap in use: %ld KiB, %ld KiB (%+ld), %ld KiB (%+ld)\n",
            WARM, before, WARM + WINDOW, middle, middle - before, WARM + 2 * WINDOW, after,
            after - middle, heap0, heap1, heap1 - heap0, heap2, heap2 - heap1);
    assert_true(before > 0 && middle > 0 && after > 0);
#ifdef CLF_SANITIZED
    return; /* LeakSanitizer checks leaks there instead */
#endif
    /* A leak of 48 KiB a round (one program, kernel set or buffer per context is more) adds 4.2
     * MiB of heap to each window, on top of the drivers' own growth. */
    assert_true(smaller(heap1 - heap0, heap2 - heap1) < 4 * 1024);
    assert_true(smaller(middle - before, after - middle) < 8 * 1024);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_context_churn)};
    return HARNESS_RUN("resources", tests);
}
