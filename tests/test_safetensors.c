/*
 * test_safetensors.c — the safetensors reader: dtype conversions (F16, BF16, F64, I64) checked
 * against values computed here, and every kind of corrupt or truncated file refused with a clear
 * message. Files are written by a small writer in this test.
 */
#include "harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char g_dir[256];

static const char *path_of(const char *name) {
    static char p[512];
    snprintf(p, sizeof(p), "%s/%s", g_dir, name);
    return p;
}

/* Writes header text (padded to a multiple of 8 with spaces) and data as a safetensors file;
 * header_len_override != 0 writes that header size instead of the true one. */
static void write_file(const char *name, const char *header, const void *data, size_t data_len,
                       uint64_t header_len_override) {
    size_t hl = strlen(header), padded = (hl + 7) / 8 * 8;
    FILE *f = fopen(path_of(name), "wb");
    assert_non_null(f);
    uint64_t n = header_len_override ? header_len_override : padded;
    unsigned char b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(n >> (8 * i));
    assert_int_equal(fwrite(b, 1, 8, f), 8);
    assert_int_equal(fwrite(header, 1, hl, f), hl);
    for (size_t i = hl; i < padded; i++)
        fputc(' ', f);
    if (data_len) assert_int_equal(fwrite(data, 1, data_len, f), data_len);
    fclose(f);
}

static void test_dtypes(void **state) {
    (void)state;
    /* F32 [1.5, -2], F16 [1, -2, 65504, 2^-24 (subnormal)], BF16 [1, -3.5], F64 [0.1],
     * I64 [7, -3], I32 [5] */
    unsigned char data[8 + 8 + 4 + 8 + 16 + 4];
    float f32[2] = {1.5f, -2.0f};
    uint16_t f16[4] = {0x3c00, 0xc000, 0x7bff, 0x0001};
    uint16_t bf16[2] = {0x3f80, 0xc060};
    double f64 = 0.1;
    int64_t i64[2] = {7, -3};
    int32_t i32 = 5;
    size_t o = 0;
    memcpy(data + o, f32, 8), o += 8;
    memcpy(data + o, f16, 8), o += 8;
    memcpy(data + o, bf16, 4), o += 4;
    memcpy(data + o, &f64, 8), o += 8;
    memcpy(data + o, i64, 16), o += 16;
    memcpy(data + o, &i32, 4), o += 4;
    write_file("dtypes.safetensors",
               "{\"__metadata__\":{\"format\":\"pt\"},"
               "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
               "\"h\":{\"dtype\":\"F16\",\"shape\":[2,2],\"data_offsets\":[8,16]},"
               "\"bf\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[16,20]},"
               "\"d\":{\"dtype\":\"F64\",\"shape\":[],\"data_offsets\":[20,28]},"
               "\"l\":{\"dtype\":\"I64\",\"shape\":[2],\"data_offsets\":[28,44]},"
               "\"i\":{\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[44,48]}}",
               data, sizeof(data), 0);
    clf_safetensors *st = NULL;
    clf_error err = {""};
    assert_int_equal(clf_safetensors_open(path_of("dtypes.safetensors"), &st, &err), CLF_SUCCESS);
    assert_int_equal(clf_safetensors_count(st), 6);
    assert_string_equal(clf_safetensors_at(st, 0)->name, "a"); /* file order */
    const clf_st_info *h = clf_safetensors_find(st, "h");
    assert_non_null(h);
    assert_int_equal(h->ndim, 2);
    assert_int_equal(h->dtype, CLF_ST_F16);
    assert_null(clf_safetensors_find(st, "__metadata__"));
    float out[4];
    assert_int_equal(clf_safetensors_read_f32(st, "h", out, 4, &err), CLF_SUCCESS);
    assert_true(out[0] == 1.0f && out[1] == -2.0f && out[2] == 65504.0f);
    assert_true(out[3] == ldexpf(1.0f, -24));
    assert_int_equal(clf_safetensors_read_f32(st, "bf", out, 2, &err), CLF_SUCCESS);
    assert_true(out[0] == 1.0f && out[1] == -3.5f);
    assert_int_equal(clf_safetensors_read_f32(st, "d", out, 1, &err), CLF_SUCCESS);
    assert_true(out[0] == 0.1f);
    int32_t iv[2];
    assert_int_equal(clf_safetensors_read_i32(st, "l", iv, 2, &err), CLF_SUCCESS);
    assert_true(iv[0] == 7 && iv[1] == -3);
    /* wrong count, wrong kind, missing */
    assert_int_equal(clf_safetensors_read_f32(st, "h", out, 3, &err), CLF_ERROR_SHAPE_MISMATCH);
    assert_int_equal(clf_safetensors_read_i32(st, "a", iv, 2, &err), CLF_ERROR_UNSUPPORTED);
    assert_int_equal(clf_safetensors_read_f32(st, "nope", out, 1, &err), CLF_ERROR_BAD_FORMAT);
    assert_non_null(strstr(err.message, "nope"));
    /* device load: F16 converted; shape checked */
    clf_tensor *t = NULL;
    int64_t shape[2] = {2, 2}, bad[2] = {4, 1};
    CLF_OK(clf_safetensors_load(g_ctx, st, "h", 2, shape, &t));
    float back[4];
    CLF_OK(clf_tensor_read(t, back, sizeof(back)));
    assert_true(back[2] == 65504.0f);
    clf_tensor_free(t);
    t = NULL;
    assert_int_equal(clf_safetensors_load(g_ctx, st, "h", 2, bad, &t), CLF_ERROR_SHAPE_MISMATCH);
    assert_null(t);
    assert_non_null(strstr(clf_context_last_error(g_ctx), "\"h\""));
    assert_int_equal(clf_safetensors_load(g_ctx, st, "missing", 0, NULL, &t), CLF_ERROR_BAD_FORMAT);
    CLF_OK(clf_safetensors_load(g_ctx, st, "l", 0, NULL, &t));
    assert_int_equal(clf_tensor_dtype(t), CLF_I32);
    clf_tensor_free(t);
    clf_safetensors_free(st);
}

/* Every corruption is refused at open with BAD_FORMAT (or IO) and a message containing `why`. */
static void expect_bad(const char *header, size_t data_len, uint64_t hl_override, const char *why) {
    static unsigned char zeros[64];
    write_file("bad.safetensors", header, zeros, data_len, hl_override);
    clf_safetensors *st = (clf_safetensors *)(uintptr_t)1;
    clf_error err = {""};
    clf_status rc = clf_safetensors_open(path_of("bad.safetensors"), &st, &err);
    if (rc != CLF_ERROR_BAD_FORMAT) fail_msg("%s: got %d (%s)", header, (int)rc, err.message);
    assert_null(st);
    if (!strstr(err.message, why))
        fail_msg("%s: message \"%s\" lacks \"%s\"", header, err.message, why);
}

static void test_corrupt(void **state) {
    (void)state;
    const char *ok = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
    expect_bad(ok, 4, 0, "past the end");             /* truncated data */
    expect_bad(ok, 8, 1000, "does not fit the file"); /* header size beyond the file */
    expect_bad("{\"a\":", 0, 0, "not a JSON object"); /* broken JSON */
    expect_bad("[1,2]", 0, 0, "not a JSON object");   /* not an object */
    expect_bad("{\"a\":{\"dtype\":\"F33\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, 0,
               "unknown dtype");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8, 0,
               "bytes for 3 elements");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8, 0,
               "shape[0]");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8, 0,
               "bad data_offsets");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8, 0, "data_offsets");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
               "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
               8, 0, "overlap");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4294967296],"
               "\"data_offsets\":[0,8]}}",
               8, 0, "overflows");
    expect_bad("{\"a\":3}", 0, 0, "not an object");
    expect_bad("{\"__metadata__\":[1]}", 0, 0, "__metadata__");
    /* fewer than 8 bytes */
    FILE *f = fopen(path_of("short.safetensors"), "wb");
    assert_non_null(f);
    fputs("abc", f);
    fclose(f);
    clf_safetensors *st = NULL;
    clf_error err = {""};
    assert_int_equal(clf_safetensors_open(path_of("short.safetensors"), &st, &err),
                     CLF_ERROR_BAD_FORMAT);
    assert_int_equal(clf_safetensors_open(path_of("does-not-exist"), &st, &err), CLF_ERROR_IO);
    assert_non_null(strstr(err.message, "does-not-exist"));
    assert_int_equal(clf_safetensors_open(NULL, &st, &err), CLF_ERROR_INVALID_ARGUMENT);
}

/* Every prefix of a real weights file is refused (truncation anywhere). */
static void test_truncated_everywhere(void **state) {
    (void)state;
    char src[512];
    snprintf(src, sizeof(src), "%s/tests/data/d2l_fixtures.safetensors", CLF_SRC);
    FILE *f = fopen(src, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc((size_t)n);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    clf_safetensors *st = NULL;
    clf_error err = {""};
    for (long cut = 0; cut < n; cut += (cut < 2048 ? 7 : 997)) {
        FILE *g = fopen(path_of("cut.safetensors"), "wb");
        assert_non_null(g);
        if (cut) assert_int_equal(fwrite(buf, 1, (size_t)cut, g), (size_t)cut);
        fclose(g);
        clf_status rc = clf_safetensors_open(path_of("cut.safetensors"), &st, &err);
        if (rc == CLF_SUCCESS) fail_msg("a file cut at %ld of %ld bytes was accepted", cut, n);
        assert_null(st);
    }
    FILE *g = fopen(path_of("cut.safetensors"), "wb");
    assert_non_null(g);
    assert_int_equal(fwrite(buf, 1, (size_t)n, g), (size_t)n);
    fclose(g);
    assert_int_equal(clf_safetensors_open(path_of("cut.safetensors"), &st, &err), CLF_SUCCESS);
    clf_safetensors_free(st);
    free(buf);
}

int main(void) {
    snprintf(g_dir, sizeof(g_dir), "%s", "/tmp/clf-st-XXXXXX");
    if (!mkdtemp(g_dir)) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dtypes),
        cmocka_unit_test(test_corrupt),
        cmocka_unit_test(test_truncated_everywhere),
    };
    int rc = HARNESS_RUN("safetensors", tests);
    const char *names[] = {"dtypes.safetensors", "bad.safetensors", "short.safetensors",
                           "cut.safetensors"};
    for (size_t i = 0; i < 4; i++)
        unlink(path_of(names[i]));
    rmdir(g_dir);
    return rc;
}
