/*
 * test_gguf.c — the GGUF reader (src/gguf.c) on tests/data/gguf/reader.gguf (written by the gguf
 * package: tools/make_gguf_fixtures.py, which lists its contents): every metadata type, arrays of
 * strings, numbers and arrays, tensors of every type clformer reads and one it does not; the same
 * file as version 2; and broken copies of it: cut at every byte, counts, lengths, types, offsets
 * and the alignment corrupted, duplicate keys and names. Each must be refused with a message, and
 * nothing leaks (the sanitizer build checks).
 */
#include "harness.h"
#include "../src/internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char *g_file;
static size_t g_size;
static char g_path[1024];

static int load_fixture(void) {
    snprintf(g_path, sizeof(g_path), "%s/tests/data/gguf/reader.gguf", CLF_SRC);
    FILE *f = fopen(g_path, "rb");
    if (!f) return 1;
    fseek(f, 0, SEEK_END);
    g_size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    g_file = malloc(g_size);
    const size_t got = g_file ? fread(g_file, 1, g_size, f) : 0;
    fclose(f);
    return got != g_size;
}
static void free_fixture(void) {
    free(g_file);
}

/* Parses a buffer; returns the status (the parse's allocations released either way). */
static clf_status parse(const unsigned char *p, size_t n, char *why, size_t ws) {
    clf_gguf *g = malloc(clf__gguf_struct_size());
    assert_non_null(g);
    why[0] = '\0';
    clf_status st = clf__gguf_parse(p, n, g, why, ws);
    if (st == CLF_SUCCESS)
        clf__gguf_release(g);
    else
        assert_true(why[0] != '\0'); /* a refusal always says why */
    free(g);
    return st;
}

static void test_metadata(void **state) {
    (void)state;
    clf_gguf *g = NULL;
    clf_error e;
    if (clf_gguf_open(g_path, &g, &e) != CLF_SUCCESS) fail_msg("%s", e.message);
    assert_int_equal(clf_gguf_version(g), 3);
    assert_int_equal(clf_gguf_kv_count(g), 17);
    int64_t i;
    double f;
    static const struct {
        const char *key;
        int64_t v;
    } ints[] = {{"test.u8", 200},           {"test.i8", -100},          {"test.u16", 60000},
                {"test.i16", -30000},       {"test.u32", 4000000000LL}, {"test.i32", -2000000000},
                {"test.i64", -(1LL << 40)}, {"test.bool", 1},           {"general.alignment", 64}};
    for (size_t k = 0; k < sizeof(ints) / sizeof(ints[0]); k++) {
        if (clf_gguf_get_int(g, ints[k].key, &i, &e) != CLF_SUCCESS) fail_msg("%s", e.message);
        assert_int_equal(i, ints[k].v);
    }
    assert_int_equal(clf_gguf_get_int(g, "test.u64", &i, &e), CLF_ERROR_BAD_FORMAT); /* > 2^63 */
    assert_non_null(strstr(e.message, "test.u64"));
    CLF_OK(clf_gguf_get_float(g, "test.u64", &f, NULL));
    assert_true(f == 9223372036854775813.0);
    CLF_OK(clf_gguf_get_float(g, "test.f32", &f, NULL));
    assert_true(f == 0.5);
    CLF_OK(clf_gguf_get_float(g, "test.f64", &f, NULL));
    assert_true(f == 3.25);
    CLF_OK(clf_gguf_get_float(g, "test.i8", &f, NULL));
    assert_true(f == -100.0);
    assert_int_equal(clf_gguf_get_float(g, "test.bool", &f, NULL), CLF_ERROR_BAD_FORMAT);
    assert_int_equal(clf_gguf_get_int(g, "test.f32", &i, NULL), CLF_ERROR_BAD_FORMAT);
    assert_int_equal(clf_gguf_get_int(g, "no.such.key", &i, &e), CLF_ERROR_NOT_FOUND);
    assert_non_null(strstr(e.message, "no.such.key"));
    assert_int_equal(clf_gguf_find_key(g, "no.such.key"), -1);
    const int64_t at = clf_gguf_find_key(g, "test.strings");
    assert_true(at >= 0);
    assert_string_equal(clf_gguf_key(g, (size_t)at), "test.strings");
    assert_int_equal(clf_gguf_kv_type(g, (size_t)at), CLF_GGUF_ARRAY);
    const char *s;
    size_t len;
    CLF_OK(clf_gguf_get_string(g, "general.architecture", &s, &len, NULL));
    assert_int_equal(len, 5);
    assert_memory_equal(s, "llama", 5);
    assert_int_equal(clf_gguf_get_string(g, "test.u8", &s, &len, NULL), CLF_ERROR_BAD_FORMAT);
    clf_gguf_type et;
    uint64_t n;
    CLF_OK(clf_gguf_get_array(g, "test.strings", &et, &n, NULL));
    assert_int_equal(et, CLF_GGUF_STRING);
    assert_int_equal(n, 3);
    static const char *const want[3] = {"a", "", "h\xc3\xa9llo"};
    for (uint64_t k = 0; k < 3; k++) {
        CLF_OK(clf_gguf_array_string(g, "test.strings", k, &s, &len, NULL));
        assert_int_equal(len, strlen(want[k]));
        assert_memory_equal(s, want[k], len);
    }
    assert_int_equal(clf_gguf_array_string(g, "test.strings", 3, &s, &len, NULL),
                     CLF_ERROR_OUT_OF_RANGE);
    assert_int_equal(clf_gguf_array_int(g, "test.strings", 0, &i, NULL), CLF_ERROR_BAD_FORMAT);
    static const int64_t ints_want[3] = {1, -2, 3};
    for (uint64_t k = 0; k < 3; k++) {
        CLF_OK(clf_gguf_array_int(g, "test.ints", k, &i, NULL));
        assert_int_equal(i, ints_want[k]);
    }
    CLF_OK(clf_gguf_array_float(g, "test.floats", 1, &f, NULL));
    assert_true(f == -1.5);
    CLF_OK(clf_gguf_get_array(g, "test.nested", &et, &n, NULL));
    assert_int_equal(et, CLF_GGUF_ARRAY);
    assert_int_equal(n, 2);
    assert_int_equal(clf_gguf_array_int(g, "test.nested", 0, &i, NULL), CLF_ERROR_BAD_FORMAT);
    assert_int_equal(clf_gguf_get_array(g, "test.u8", &et, &n, NULL), CLF_ERROR_BAD_FORMAT);
    clf_gguf_free(g);
    clf_gguf_free(NULL);
}

static void test_tensors(void **state) {
    (void)state;
    clf_gguf *g = NULL;
    clf_error e;
    if (clf_gguf_open(g_path, &g, &e) != CLF_SUCCESS) fail_msg("%s", e.message);
    static const struct {
        const char *name;
        int ndim;
        int64_t ne0, ne1;
        int ggml;
        int dtype;
    } want[] = {{"f32", 2, 3, 2, 0, CLF_F32},      {"f16", 1, 4, 1, 1, CLF_F16},
                {"q8_0", 2, 64, 2, 8, CLF_Q8_0},   {"q4_0", 2, 32, 3, 2, CLF_Q4_0},
                {"q4_k", 2, 256, 1, 12, CLF_Q4_K}, {"q6_k", 2, 256, 1, 14, CLF_Q6_K},
                {"q5_k", 2, 256, 1, 13, -1}};
    assert_int_equal(clf_gguf_tensor_count(g), 7);
    for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
        const clf_gguf_tensor *t = clf_gguf_tensor_find(g, want[k].name);
        assert_non_null(t);
        assert_ptr_equal(t, clf_gguf_tensor_at(g, k)); /* file order */
        assert_int_equal(t->ndim, want[k].ndim);
        assert_int_equal(t->ne[0], want[k].ne0);
        if (t->ndim > 1) assert_int_equal(t->ne[1], want[k].ne1);
        assert_int_equal(t->ggml_type, want[k].ggml);
        assert_int_equal(t->dtype, want[k].dtype);
        assert_int_equal(t->offset % 64, 0);
        assert_non_null(t->data);
        clf_tensor *x = NULL;
        if (want[k].dtype < 0) {
            assert_int_equal(clf_gguf_load(g_ctx, g, want[k].name, &x), CLF_ERROR_UNSUPPORTED);
            assert_null(x);
            assert_non_null(strstr(clf_context_last_error(g_ctx), "Q5_K"));
            assert_non_null(strstr(clf_context_last_error(g_ctx), "\"q5_k\""));
            continue;
        }
        CLF_OK(clf_gguf_load(g_ctx, g, want[k].name, &x));
        assert_int_equal(clf_tensor_dtype(x), want[k].dtype);
        assert_int_equal(clf_tensor_dim(x, -1), want[k].ne0); /* PyTorch's order */
        assert_int_equal(clf_tensor_bytes(x), t->bytes);
        unsigned char *back = malloc(t->bytes);
        CLF_OK(clf_tensor_read(x, back, t->bytes));
        assert_memory_equal(back, t->data, t->bytes);
        free(back);
        clf_tensor_free(x);
    }
    assert_null(clf_gguf_tensor_find(g, "nope"));
    clf_tensor *x = NULL;
    assert_int_equal(clf_gguf_load(g_ctx, g, "nope", &x), CLF_ERROR_NOT_FOUND);
    /* values: the F32 tensor is i / 8; Q8_0 holds (i - 64) / 16 within its step (d = 4 / 127) */
    float v[128];
    const clf_gguf_tensor *t = clf_gguf_tensor_find(g, "f32");
    assert_int_equal(clf_dequantize(CLF_F32, t->data, t->bytes, v, 6, NULL), CLF_SUCCESS);
    for (int k = 0; k < 6; k++)
        assert_true(v[k] == (float)k / 8);
    t = clf_gguf_tensor_find(g, "q8_0");
    assert_int_equal(clf_dequantize(CLF_Q8_0, t->data, t->bytes, v, 128, NULL), CLF_SUCCESS);
    for (int k = 0; k < 128; k++)
        assert_true(fabs(v[k] - (k - 64) / 16.0) <= 0.5 * 4.0 / 127 + 1e-3);
    assert_string_equal(clf_gguf_type_name(13), "Q5_K");
    assert_null(clf_gguf_type_name(4)); /* retired */
    assert_null(clf_gguf_type_name(-1));
    clf_gguf_free(g);
}

/* The same file as version 2 (same layout) parses; versions 1 and 4 do not. */
static void test_versions(void **state) {
    (void)state;
    unsigned char *c = malloc(g_size);
    memcpy(c, g_file, g_size);
    char why[1024];
    c[4] = 2;
    assert_int_equal(parse(c, g_size, why, sizeof(why)), CLF_SUCCESS);
    c[4] = 1;
    assert_int_equal(parse(c, g_size, why, sizeof(why)), CLF_ERROR_BAD_FORMAT);
    assert_non_null(strstr(why, "version 1"));
    c[4] = 4;
    assert_int_equal(parse(c, g_size, why, sizeof(why)), CLF_ERROR_BAD_FORMAT);
    c[4] = 0, c[7] = 3; /* big-endian 3 */
    assert_int_equal(parse(c, g_size, why, sizeof(why)), CLF_ERROR_BAD_FORMAT);
    assert_non_null(strstr(why, "big-endian"));
    free(c);
}

/* Every prefix of the file that cuts the last tensor's data or anything before it (each section
 * boundary among them) is refused, with a reason; the file's end padding may go. */
static void test_truncated(void **state) {
    (void)state;
    char why[1024];
    clf_gguf *g = NULL;
    CLF_OK(clf_gguf_open(g_path, &g, NULL));
    size_t end = 0;
    for (size_t k = 0; k < clf_gguf_tensor_count(g); k++) {
        const clf_gguf_tensor *t = clf_gguf_tensor_at(g, k);
        if (t->offset + t->bytes > end) end = (size_t)(t->offset + t->bytes);
    }
    clf_gguf_free(g);
    assert_true(end > g_size - 64 && end <= g_size);
    for (size_t n = 0; n < end; n++) {
        unsigned char *c = malloc(n ? n : 1); /* its own allocation: ASan sees any overread */
        memcpy(c, g_file, n);
        if (parse(c, n, why, sizeof(why)) != CLF_ERROR_BAD_FORMAT)
            fail_msg("the first %zu of %zu bytes were accepted", n, g_size);
        free(c);
    }
    assert_int_equal(parse(g_file, g_size, why, sizeof(why)), CLF_SUCCESS);
}

/* Offsets of the fields a corruption targets, found by walking the file's own layout. */
static size_t find(const char *needle) {
    const size_t n = strlen(needle);
    for (size_t i = 0; i + n <= g_size; i++)
        if (memcmp(g_file + i, needle, n) == 0) return i;
    fail_msg("fixture lacks \"%s\"", needle);
    return 0;
}
static void put64(unsigned char *p, uint64_t v) {
    for (int k = 0; k < 8; k++)
        p[k] = (unsigned char)(v >> (8 * k));
}
static void put32(unsigned char *p, uint32_t v) {
    for (int k = 0; k < 4; k++)
        p[k] = (unsigned char)(v >> (8 * k));
}

static void expect_refused(const unsigned char *c, const char *what, const char *says) {
    char why[1024];
    const clf_status st = parse(c, g_size, why, sizeof(why));
    if (st != CLF_ERROR_BAD_FORMAT) fail_msg("%s: accepted", what);
    if (says && !strstr(why, says)) fail_msg("%s: \"%s\" does not name \"%s\"", what, why, says);
}

static void test_corrupted(void **state) {
    (void)state;
    unsigned char *c = malloc(g_size);
    const size_t key_u8 = find("test.u8"), name_q8 = find("q8_0\x02") /* its n_dims follows */;
    struct {
        const char *what, *says;
        size_t at;
        int width;
        uint64_t value;
    } cases[] = {
        {"tensor count huge", "tensor infos", 8, 8, UINT64_MAX / 2},
        {"metadata count huge", "metadata pairs", 16, 8, 1ULL << 40},
        {"metadata count short by one", NULL, 16, 8, 16},
        {"key length past the end", "truncated", key_u8 - 8, 8, 1ULL << 50},
        {"unknown value type", "test.u8", key_u8 + 7, 4, 13},
        {"tensor dims 5", "q8_0", name_q8 + 4, 4, 5},
        {"tensor dims 0", "q8_0", name_q8 + 4, 4, 0},
        {"tensor dimension 0", "q8_0", name_q8 + 8, 8, 0},
        {"row not whole blocks", "q8_0", name_q8 + 8, 8, 48},
        {"tensor past the end", "q8_0", name_q8 + 16, 8, 1ULL << 20},
        {"unknown ggml type", "q8_0", name_q8 + 24, 4, 99},
        {"retired ggml type", "q8_0", name_q8 + 24, 4, 4},
        {"offset not aligned", "alignment", name_q8 + 28, 8, 1024 - 896 + 32},
        {"tensors overlap", "overlap", name_q8 + 28, 8, 0},
        {"offset past the end", "q8_0", name_q8 + 28, 8, 1ULL << 40},
        {"alignment 48", "general.alignment", find("general.alignment") + 17 + 4, 4, 48},
        {"alignment 0", "general.alignment", find("general.alignment") + 17 + 4, 4, 0},
        {"magic", "magic", 0, 4, 0x46554748},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        memcpy(c, g_file, g_size);
        if (cases[k].width == 8)
            put64(c + cases[k].at, cases[k].value);
        else
            put32(c + cases[k].at, (uint32_t)cases[k].value);
        expect_refused(c, cases[k].what, cases[k].says);
    }
    /* a duplicate key and a duplicate tensor name (same lengths: renamed in place) */
    memcpy(c, g_file, g_size);
    memcpy(c + find("test.i8"), "test.u8", 7);
    expect_refused(c, "duplicate key", "\"test.u8\" appears twice");
    memcpy(c, g_file, g_size);
    memcpy(c + find("q4_0\x02"), "q8_0", 4);
    expect_refused(c, "duplicate tensor", "\"q8_0\" appears twice");
    /* an array whose count passes the end, strings and numbers */
    memcpy(c, g_file, g_size);
    put64(c + find("test.strings") + 12 + 4 + 4, 1ULL << 40);
    expect_refused(c, "string array count", "test.strings");
    memcpy(c, g_file, g_size);
    put64(c + find("test.ints") + 9 + 4 + 4, 1ULL << 61);
    expect_refused(c, "int array count", "test.ints");
    free(c);
}

static void test_open_errors(void **state) {
    (void)state;
    clf_gguf *g = (clf_gguf *)1;
    clf_error e;
    assert_int_equal(clf_gguf_open("/nonexistent/x.gguf", &g, &e), CLF_ERROR_IO);
    assert_null(g);
    assert_non_null(strstr(e.message, "/nonexistent/x.gguf"));
    char path[1200];
    snprintf(path, sizeof(path), "%s/tests/data/quant/q8_0.bin", CLF_SRC); /* not GGUF */
    assert_int_equal(clf_gguf_open(path, &g, &e), CLF_ERROR_BAD_FORMAT);
    assert_non_null(strstr(e.message, "magic"));
    assert_int_equal(clf_gguf_open(NULL, &g, &e), CLF_ERROR_INVALID_ARGUMENT);
}

int main(void) {
    if (load_fixture()) {
        fprintf(stderr, "test_gguf: cannot read the fixture %s\n", g_path);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metadata),  cmocka_unit_test(test_tensors),
        cmocka_unit_test(test_versions),  cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_corrupted), cmocka_unit_test(test_open_errors),
    };
    const int rc = HARNESS_RUN("gguf", tests);
    free_fixture();
    return rc;
}
