/*
 * program.c — building OpenCL programs through a two-level cache.
 *
 * Memory cache: every program a context builds is kept, keyed by a 128-bit hash of
 * (source, options, device name, driver version, platform, cache format). Disk cache: the device
 * binary of each program under <cache_dir>/programs/<key>.bin, so a warm start skips the
 * compiler. A disk entry that fails to load is ignored and rebuilt from source. The library
 * kernels built from these programs, and their launches, are in launch.c.
 */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CLF_CACHE_FORMAT "clformer-program-cache-2"
/* File: magic, key (2 x u64), size (u64), FNV-1a of the binary (u64), the binary. The checksum
 * matters: rusticl accepts a corrupted binary in clCreateProgramWithBinary and clBuildProgram
 * and only fails at clCreateKernel. */
static const char cache_magic[8] = {'C', 'L', 'F', 'P', 'R', 'G', '2', '\0'};

static uint64_t fnv1a_bytes(const unsigned char *p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* FNV-1a over a string, continuing from h. */
static uint64_t fnv1a(uint64_t h, const char *s) {
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ULL;
    }
    h ^= 0xff; /* field separator, so ("ab","c") and ("a","bc") differ */
    h *= 0x100000001b3ULL;
    return h;
}

void clf__cache_key(const char *source, const char *options, const clf_device_info *dev,
                    uint64_t key[2]) {
    const char *fields[] = {CLF_CACHE_FORMAT,
                            source,
                            options ? options : "",
                            dev->name,
                            dev->vendor,
                            dev->driver_version,
                            dev->device_version,
                            dev->platform_name};
    uint64_t a = 0xcbf29ce484222325ULL, b = 0x84222325cbf29ce4ULL;
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        a = fnv1a(a, fields[i]);
        b = fnv1a(b ^ 0x9e3779b97f4a7c15ULL, fields[i]);
    }
    key[0] = a;
    key[1] = b;
}

void clf__cache_file_name(const uint64_t key[2], char out[40]) {
    snprintf(out, 40, "%016llx%016llx.bin", (unsigned long long)key[0], (unsigned long long)key[1]);
}

char *clf__default_cache_dir(void) {
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    const char *base;
    const char *suffix;
    if (xdg && xdg[0] == '/') {
        base = xdg;
        suffix = "/clformer";
    } else if (home && home[0]) {
        base = home;
        suffix = "/.cache/clformer";
    } else {
        return NULL;
    }
    size_t n = strlen(base) + strlen(suffix) + 1;
    char *out = malloc(n);
    if (out) snprintf(out, n, "%s%s", base, suffix);
    return out;
}

int clf__make_dirs(const char *path) {
    char *tmp = strdup(path);
    if (!tmp) return -1;
    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, 0755) != 0 && errno != EEXIST) {
                free(tmp);
                return -1;
            }
            *p = '/';
        }
    }
    int rc = (mkdir(tmp, 0755) != 0 && errno != EEXIST) ? -1 : 0;
    free(tmp);
    return rc;
}

static char *cache_path(const clf_context *ctx, const uint64_t key[2]) {
    char name[40];
    clf__cache_file_name(key, name);
    size_t n = strlen(ctx->cache_dir) + strlen("/programs/") + strlen(name) + 1;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/programs/%s", ctx->cache_dir, name);
    return p;
}

/* Reads a cached binary; NULL if absent or invalid. */
static unsigned char *disk_load(const clf_context *ctx, const uint64_t key[2], size_t *size) {
    char *path = cache_path(ctx, key);
    if (!path) return NULL;
    FILE *f = fopen(path, "rb");
    free(path);
    if (!f) return NULL;
    unsigned char *bin = NULL;
    char magic[8];
    uint64_t k[2], n, sum;
    if (fread(magic, 1, 8, f) != 8 || memcmp(magic, cache_magic, 8) != 0) goto fail;
    if (fread(k, sizeof(uint64_t), 2, f) != 2 || k[0] != key[0] || k[1] != key[1]) goto fail;
    if (fread(&n, sizeof(n), 1, f) != 1 || n == 0 || n > ((uint64_t)1 << 31)) goto fail;
    if (fread(&sum, sizeof(sum), 1, f) != 1) goto fail;
    bin = malloc((size_t)n);
    if (!bin || fread(bin, 1, (size_t)n, f) != n) goto fail;
    if (fgetc(f) != EOF) goto fail;                    /* trailing bytes: not our file */
    if (fnv1a_bytes(bin, (size_t)n) != sum) goto fail; /* corrupted */
    fclose(f);
    *size = (size_t)n;
    return bin;
fail:
    free(bin);
    fclose(f);
    return NULL;
}

/* Writes a binary atomically (temporary file + rename). Failures are ignored: the disk cache is
 * an optimization. */
static void disk_store(const clf_context *ctx, const uint64_t key[2], const unsigned char *bin,
                       size_t size) {
    size_t dn = strlen(ctx->cache_dir) + 16;
    char *dir = malloc(dn);
    char *path = cache_path(ctx, key);
    char *tmp = path ? malloc(strlen(path) + 32) : NULL;
    if (!dir || !path || !tmp) goto done;
    snprintf(dir, dn, "%s/programs", ctx->cache_dir);
    if (clf__make_dirs(dir) != 0) goto done;
    sprintf(tmp, "%s.%ld.tmp", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) goto done;
    uint64_t n = size, sum = fnv1a_bytes(bin, size);
    bool ok = fwrite(cache_magic, 1, 8, f) == 8 && fwrite(key, sizeof(uint64_t), 2, f) == 2 &&
              fwrite(&n, sizeof(n), 1, f) == 1 && fwrite(&sum, sizeof(sum), 1, f) == 1 &&
              fwrite(bin, 1, size, f) == size;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) remove(tmp);
done:
    free(dir);
    free(path);
    free(tmp);
}

/* The build log of a program, malloc'ed ("" if none). */
static char *build_log(cl_program prog, cl_device_id dev) {
    size_t n = 0;
    if (clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) != CL_SUCCESS) n = 0;
    char *log = malloc(n + 1);
    if (!log) return NULL;
    if (n == 0 ||
        clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, n, log, NULL) != CL_SUCCESS)
        n = 0;
    log[n] = '\0';
    return log;
}

static cl_program try_binary(clf_context *ctx, const uint64_t key[2], const char *options) {
    size_t size = 0;
    unsigned char *bin = disk_load(ctx, key, &size);
    if (!bin) return NULL;
    cl_int err, bin_status = CL_SUCCESS;
    const unsigned char *bins[1] = {bin};
    cl_program prog =
        clCreateProgramWithBinary(ctx->cl_ctx, 1, &ctx->device, &size, bins, &bin_status, &err);
    free(bin);
    if (err != CL_SUCCESS || bin_status != CL_SUCCESS) {
        if (prog) clReleaseProgram(prog);
        return NULL;
    }
    /* A binary the driver builds but holds no kernels is no executable (seen on rusticl). */
    size_t nk = 0;
    if (clBuildProgram(prog, 1, &ctx->device, options, NULL, NULL) != CL_SUCCESS ||
        clGetProgramInfo(prog, CL_PROGRAM_NUM_KERNELS, sizeof(nk), &nk, NULL) != CL_SUCCESS ||
        nk == 0) {
        clReleaseProgram(prog);
        return NULL;
    }
    return prog;
}

static void store_binary(clf_context *ctx, cl_program prog, const uint64_t key[2]) {
    size_t size = 0;
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof(size), &size, NULL) != CL_SUCCESS ||
        size == 0)
        return;
    unsigned char *bin = malloc(size);
    if (!bin) return;
    unsigned char *bins[1] = {bin};
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof(bins), bins, NULL) == CL_SUCCESS)
        disk_store(ctx, key, bin, size);
    free(bin);
}

clf_status clf__program_get(clf_context *ctx, const char *source, const char *options,
                            cl_program *out) {
    uint64_t key[2];
    clf__cache_key(source, options, &ctx->info, key);
    for (size_t i = 0; i < ctx->n_progs; i++) {
        if (ctx->progs[i].key[0] == key[0] && ctx->progs[i].key[1] == key[1]) {
            ctx->stats.programs_from_memory++;
            *out = ctx->progs[i].program;
            return CLF_SUCCESS;
        }
    }
    if (ctx->n_progs == ctx->cap_progs) {
        size_t nc = ctx->cap_progs ? ctx->cap_progs * 2 : 16;
        clf_prog_entry *np = realloc(ctx->progs, nc * sizeof(*np));
        if (!np) return clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "program cache: out of memory");
        ctx->progs = np;
        ctx->cap_progs = nc;
    }
    cl_program prog = ctx->cache_dir ? try_binary(ctx, key, options) : NULL;
    if (prog) {
        ctx->stats.programs_loaded_from_disk++;
    } else {
        if (clf__fault(ctx, CLF_FAULT_BUILD))
            return clf__fail(ctx, CLF_ERROR_BUILD_FAILED,
                             "kernel build failed (injected fault); build log:\n(none)");
        cl_int err;
        prog = clCreateProgramWithSource(ctx->cl_ctx, 1, &source, NULL, &err);
        if (err != CL_SUCCESS) return clf__cl_fail(ctx, err, "clCreateProgramWithSource");
        err = clBuildProgram(prog, 1, &ctx->device, options, NULL, NULL);
        if (err != CL_SUCCESS) {
            char *log = build_log(prog, ctx->device);
            clReleaseProgram(prog);
            clf_status st = (err == CL_BUILD_PROGRAM_FAILURE) ? CLF_ERROR_BUILD_FAILED : err;
            clf__fail(ctx, st, "kernel build failed (%s, options '%s'); build log:\n%s",
                      clf__cl_error_name(err) ? clf__cl_error_name(err) : "OpenCL error",
                      options ? options : "", log ? log : "(unavailable)");
            free(log);
            return st;
        }
        ctx->stats.programs_built_from_source++;
        if (ctx->cache_dir) store_binary(ctx, prog, key);
    }
    ctx->progs[ctx->n_progs].key[0] = key[0];
    ctx->progs[ctx->n_progs].key[1] = key[1];
    ctx->progs[ctx->n_progs].program = prog;
    ctx->n_progs++;
    *out = prog;
    return CLF_SUCCESS;
}

char *clf__read_text(const char *path, size_t max) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = malloc(max + 1);
    size_t n = buf ? fread(buf, 1, max + 1, f) : 0;
    bool err = ferror(f) != 0;
    fclose(f);
    if (!buf || n > max || err) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

const char *clf__embedded_find(const char *name) {
    for (size_t i = 0; i < clf__embedded_count; i++)
        if (strcmp(clf__embedded_sources[i].name, name) == 0) return clf__embedded_sources[i].text;
    return NULL;
}

/* Text of kernels/<name>.cl, from the override folder or the embedded copy; malloc'ed. */
static clf_status kernel_text(clf_context *ctx, const char *name, char **out) {
    if (ctx->kernel_dir) {
        size_t n = strlen(ctx->kernel_dir) + strlen(name) + 8;
        char *path = malloc(n);
        if (!path) return clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of memory");
        snprintf(path, n, "%s/%s.cl", ctx->kernel_dir, name);
        *out = clf__read_text(path, 1 << 22);
        if (!*out) {
            clf__fail(ctx, CLF_ERROR_IO, "cannot read kernel source '%s' (kernel_dir override)",
                      path);
            free(path);
            return CLF_ERROR_IO;
        }
        free(path);
        return CLF_SUCCESS;
    }
    const char *text = clf__embedded_find(name);
    if (!text) return clf__fail(ctx, CLF_ERROR_INTERNAL, "no embedded kernel source '%s'", name);
    *out = strdup(text);
    return *out ? CLF_SUCCESS : clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of memory");
}

/* What every program's source starts with: whether the device fuses multiply-adds in hardware
 * (CLF_HW_FMA, common.cl's MAD), and the storage types' ids from include/clformer/dtypes.def, as
 * kernels/dtypes.cl reads them. */
static size_t source_head(const clf_context *ctx, char *buf, size_t size) {
    int w = snprintf(buf, buf ? size : 0, "#define CLF_HW_FMA %d\n", ctx->info.has_fma ? 1 : 0);
    size_t off = w > 0 ? (size_t)w : 0;
    for (size_t i = 0; i < clf__dtype_count; i++) {
        w = snprintf(buf ? buf + off : NULL, buf ? size - off : 0, "#define CLF_DT_%s %d\n",
                     clf__dtypes[i].name, (int)clf__dtypes[i].dtype);
        off += w > 0 ? (size_t)w : 0;
    }
    return off;
}

clf_status clf__program_source(clf_context *ctx, clf_prog_id prog, char **out) {
    /* common.cl, the storage types, the program's own preludes, the program. */
    enum { NP = 3 + CLF_PRELUDES };
    const char *names[NP] = {"common", "dtypes"};
    for (int i = 0; i < CLF_PRELUDES; i++)
        names[2 + i] = clf__prog_preludes[prog][i];
    names[NP - 1] = clf__prog_names[prog];
    char *parts[NP] = {NULL};
    clf_status st = CLF_SUCCESS;
    size_t n = 1 + source_head(ctx, NULL, 0);
    for (int i = 0; i < NP && st == CLF_SUCCESS; i++)
        if (names[i] && (st = kernel_text(ctx, names[i], &parts[i])) == CLF_SUCCESS)
            n += strlen(parts[i]) + strlen(names[i]) + 32;
    if (st == CLF_SUCCESS && !(*out = malloc(n)))
        st = clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of memory");
    if (st == CLF_SUCCESS) {
        size_t off = source_head(ctx, *out, n);
        for (int i = 0; i < NP; i++) /* each part keeps its own file name and line numbers */
            if (parts[i])
                off += (size_t)snprintf(*out + off, n - off, "\n#line 1 \"%s.cl\"\n%s\n", names[i],
                                        parts[i]);
    }
    for (int i = 0; i < NP; i++)
        free(parts[i]);
    return st;
}
