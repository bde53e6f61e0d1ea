/*
 * test_bench.c — clformer-bench as a user runs it: its JSON and CSV parse back (cJSON), the SVG
 * is well-formed with one point per record, --compare arithmetic, and clear errors for a bad
 * device or an unwritable output path.
 */
#include "harness.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The bench binary: $CLF_BENCH_PATH, else the one built beside these tests. */
#define BENCH harness_env_or("CLF_BENCH_PATH", CLF_BENCH_PATH)

static char g_dir[64];

/* Runs a shell command, returns its exit status and its stdout+stderr (malloc'ed). */
static int run(const char *cmd, char **output) {
    char full[4096];
    snprintf(full, sizeof(full), "%s 2>&1", cmd);
    FILE *p = popen(full, "r");
    assert_non_null(p);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n - 1, p)) > 0) {
        n += got;
        if (n + 1 == cap) buf = realloc(buf, cap *= 2);
    }
    buf[n] = '\0';
    int st = pclose(p);
    *output = buf;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static double num(const cJSON *o, const char *name) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    if (!cJSON_IsNumber(v)) fail_msg("JSON: %s missing or not a number", name);
    return v->valuedouble;
}

/* Minimal XML well-formedness: every element closed in order, no stray '<'. */
static int svg_well_formed(const char *s) {
    const char *stack[64];
    size_t lens[64];
    int depth = 0;
    for (const char *p = strchr(s, '<'); p; p = strchr(p, '<')) {
        if (p[1] == '?' || p[1] == '!') {
            p = strchr(p, '>');
            if (!p) return 0;
            continue;
        }
        const char *end = strchr(p, '>');
        if (!end) return 0;
        if (p[1] == '/') {
            size_t len = strcspn(p + 2, " >");
            if (depth == 0 || lens[depth - 1] != len || strncmp(stack[depth - 1], p + 2, len) != 0)
                return 0;
            depth--;
        } else if (end[-1] != '/') {
            if (depth == 64) return 0;
            stack[depth] = p + 1;
            lens[depth] = strcspn(p + 1, " >/");
            depth++;
        }
        p = end;
    }
    return depth == 0;
}

static void test_outputs(void **state) {
    (void)state;
    snprintf(g_dir, sizeof(g_dir), "/tmp/clf-bench-test-XXXXXX");
    assert_non_null(mkdtemp(g_dir));
    char cmd[2048], *out;
    snprintf(cmd, sizeof(cmd),
             "%s --quick --ops add,softmax --json %s/r.json --csv %s/r.csv --plot %s/r.svg", BENCH,
             g_dir, g_dir, g_dir);
    int rc = run(cmd, &out);
    if (rc != 0) fail_msg("bench failed (%d):\n%s", rc, out);
    assert_non_null(strstr(out, "copy bandwidth"));
    free(out);

    char path[256];
    snprintf(path, sizeof(path), "%s/r.json", g_dir);
    char *text = harness_slurp(path);
    assert_non_null(text);
    cJSON *root = cJSON_Parse(text);
    assert_non_null(root);
    const cJSON *dev = cJSON_GetObjectItemCaseSensitive(root, "device");
    const char *fields[] = {"name", "vendor", "type", "driver"};
    for (int i = 0; i < 4; i++)
        assert_true(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(dev, fields[i])));
    assert_true(num(dev, "compute_units") >= 1);
    const cJSON *pk = cJSON_GetObjectItemCaseSensitive(root, "peaks");
    const char *peaks[] = {"copy_gbps", "fma_gflops",    "launch_us",     "h2d_gbps",
                           "d2h_gbps",  "cold_start_ms", "warm_start_ms", "read_gbps"};
    for (int i = 0; i < 8; i++)
        assert_true(num(pk, peaks[i]) > 0);
    assert_true(num(pk, "warm_start_ms") < num(pk, "cold_start_ms"));
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(root, "results");
    assert_int_equal(cJSON_GetArraySize(res), 2);
    const cJSON *r;
    cJSON_ArrayForEach(r, res) {
        const cJSON *op = cJSON_GetObjectItemCaseSensitive(r, "op");
        assert_true(cJSON_IsString(op));
        assert_true(strcmp(op->valuestring, "add") == 0 || strcmp(op->valuestring, "softmax") == 0);
        const cJSON *shape = cJSON_GetObjectItemCaseSensitive(r, "shape");
        assert_true(cJSON_IsArray(shape) && cJSON_GetArraySize(shape) >= 1);
        assert_true(num(r, "ms") > 0);
        assert_true(num(r, "gbps") > 0);
        assert_true(num(r, "pct_peak") > 0);
        assert_true(num(r, "roof_gbps") > 0); /* memory records: judged against a paired roof */
        (void)num(r, "gflops");
    }
    cJSON_Delete(root);
    free(text);

    snprintf(path, sizeof(path), "%s/r.csv", g_dir);
    text = harness_slurp(path);
    assert_non_null(text);
    int lines = 0;
    for (char *p = text; *p; p++)
        lines += *p == '\n';
    assert_int_equal(lines, 3);
    assert_true(strncmp(text, "op,shape,ms,gflops,gbps,pct_peak,bound,tuned,", 45) == 0);
    free(text);

    snprintf(path, sizeof(path), "%s/r.svg", g_dir);
    text = harness_slurp(path);
    assert_non_null(text);
    assert_true(svg_well_formed(text));
    int points = 0;
    for (char *p = strstr(text, "<circle class=\"op\""); p;
         p = strstr(p + 1, "<circle class=\"op\""))
        points++;
    assert_int_equal(points, 2);
    free(text);
    harness_remove_tree(g_dir);
}

static void write_run(const char *path, double add_ms, double sm_ms) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(
        f,
        "{\"device\": {}, \"peaks\": {}, \"results\": ["
        "{\"op\": \"add\", \"shape\": [4096, 1024], \"ms\": %g, \"gflops\": 1, \"gbps\": 1},"
        "{\"op\": \"softmax\", \"shape\": [4096, 1024], \"ms\": %g, \"gflops\": 1, \"gbps\": 1},"
        "{\"op\": \"gemm\", \"shape\": [8, 8, 8], \"ms\": 1, \"tuned\": true}]}",
        add_ms, sm_ms);
    fclose(f);
}

static void test_compare(void **state) {
    (void)state;
    snprintf(g_dir, sizeof(g_dir), "/tmp/clf-bench-test-XXXXXX"); /* its own: runs alone too */
    assert_non_null(mkdtemp(g_dir));
    char cur[128], base[128], cmd[1024], *out;
    snprintf(cur, sizeof(cur), "%s/cur.json", g_dir);
    snprintf(base, sizeof(base), "%s/base.json", g_dir);
    write_run(cur, 1.0, 4.0);
    write_run(base, 2.0, 2.0);
    snprintf(cmd, sizeof(cmd), "%s --compare-only %s %s", BENCH, cur, base);
    assert_int_equal(run(cmd, &out), 0);
    assert_non_null(strstr(out, "2.00x"));             /* add: twice as fast */
    assert_non_null(strstr(out, "0.50x  REGRESSION")); /* softmax: half */
    assert_non_null(strstr(out, "3 records, 1 regressions, 0 without a baseline"));
    free(out);
    snprintf(cmd, sizeof(cmd), "%s --compare-only %s %s --threshold 0.4", BENCH, cur, base);
    assert_int_equal(run(cmd, &out), 0);
    assert_non_null(strstr(out, "0 regressions"));
    free(out);
    FILE *f = fopen(base, "w");
    fputs("{\"results\": [{\"op\": 3}]}", f);
    fclose(f);
    snprintf(cmd, sizeof(cmd), "%s --compare-only %s %s", BENCH, cur, base);
    assert_int_not_equal(run(cmd, &out), 0);
    assert_non_null(strstr(out, "malformed"));
    free(out);
    harness_remove_tree(g_dir);
}

static void test_errors(void **state) {
    (void)state;
    char cmd[1024], *out;
    snprintf(cmd, sizeof(cmd), "%s --quick --device no-such-device-xyz", BENCH);
    assert_int_not_equal(run(cmd, &out), 0);
    assert_non_null(strstr(out, "no OpenCL device matches 'no-such-device-xyz'"));
    free(out);
    snprintf(cmd, sizeof(cmd), "%s --quick --json /nonexistent-dir/x.json", BENCH);
    assert_int_not_equal(run(cmd, &out), 0);
    assert_non_null(strstr(out, "cannot write output file '/nonexistent-dir/x.json'"));
    free(out);
    snprintf(cmd, sizeof(cmd), "%s --bogus", BENCH);
    assert_int_equal(run(cmd, &out), 2);
    assert_non_null(strstr(out, "usage"));
    free(out);
    snprintf(cmd, sizeof(cmd), "%s --list", BENCH);
    assert_int_equal(run(cmd, &out), 0);
    assert_non_null(strstr(out, "[0] "));
    free(out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_outputs),
        cmocka_unit_test(test_compare),
        cmocka_unit_test(test_errors),
    };
    return HARNESS_RUN("bench", tests);
}
