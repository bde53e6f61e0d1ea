/*
 * program.c — building OpenCL programs through a two-level cache, and launching kernels.
 *
 * Memory cache: every program a context builds is kept, keyed by a 128-bit hash of
 * (source, options, device name, driver version, platform, cache format). Disk cache: the device
 * binary of each program under <cache_dir>/programs/<key>.bin, so a warm start skips the
 * compiler. A disk entry that fails to load is ignored and rebuilt from source.
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

clf_status clf__program_source(clf_context *ctx, clf_prog_id prog, char **out) {
    char *common = NULL, *body = NULL;
    clf_status st = kernel_text(ctx, "common", &common);
    if (st == CLF_SUCCESS) st = kernel_text(ctx, clf__prog_names[prog], &body);
    if (st == CLF_SUCCESS) {
        size_t n = strlen(common) + strlen(body) + 64;
        *out = malloc(n);
        if (*out)
            snprintf(*out, n, "%s\n#line 1 \"%s.cl\"\n%s", common, clf__prog_names[prog], body);
        else
            st = clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    free(common);
    free(body);
    return st;
}

/* Builds (through the program cache) the library program `id` with the tunables in force, the
 * fitted work-group macros of the kernel asked for, and the call's extra options. */
static clf_status lib_program(clf_context *ctx, clf_prog_id id, const char *const *macros,
                              const int64_t *macro_values, int n_macros, const char *extra,
                              cl_program *out) {
    char options[768];
    size_t n;
    if (clf__build_options_with(id, ctx->tunables, ctx->info.type, macros, macro_values, n_macros,
                                options, sizeof(options)) != 0 ||
        (n = strlen(options)) + strlen(extra) + 2 > sizeof(options))
        return clf__fail(ctx, CLF_ERROR_INTERNAL, "build options too long");
    if (extra[0]) snprintf(options + n, sizeof(options) - n, " %s", extra);
    char *src = NULL;
    clf_status st = clf__program_source(ctx, id, &src);
    if (st != CLF_SUCCESS) return st;
    st = clf__program_get(ctx, src, options, out);
    free(src);
    return st;
}

static clf_kernel_entry *find_entry(clf_context *ctx, clf_kernel_id id, const char *extra,
                                    const size_t want[3]) {
    for (size_t i = 0; i < ctx->n_kernels; i++) {
        clf_kernel_entry *e = &ctx->kernels[i];
        if (e->id == id && strcmp(e->extra, extra) == 0 && e->want[0] == want[0] &&
            e->want[1] == want[1] && e->want[2] == want[2])
            return e;
    }
    return NULL;
}

static size_t product(const size_t *local, cl_uint dims) {
    size_t p = 1;
    for (cl_uint d = 0; d < dims; d++)
        p *= local[d];
    return p;
}

bool clf__wg_shrink(size_t *local, const unsigned char *pow2, cl_uint dims, size_t limit,
                    size_t multiple) {
    if (limit < 1) return false;
    while (product(local, dims) > limit) {
        /* The largest dim takes the cut, down to what fits beside the others. */
        cl_uint big = 0;
        for (cl_uint d = 1; d < dims; d++)
            if (local[d] > local[big]) big = d;
        if (local[big] <= 1) return false;
        const size_t others = product(local, dims) / local[big];
        size_t v = limit / others;
        if (v >= local[big]) v = local[big] - 1;
        if (v < 1) v = 1;
        if (pow2[big]) {
            size_t p = 1;
            while (p * 2 <= v)
                p *= 2;
            v = p;
        } else if (multiple > 1 && v >= multiple) {
            v -= v % multiple;
        }
        local[big] = v;
    }
    return true;
}

clf_status clf__kernel_fit(clf_context *ctx, clf_kernel_id id, const char *extra, cl_uint dims,
                           size_t *local, cl_kernel *out) {
    if (!extra) extra = "";
    if (dims < 1 || dims > 3) return clf__fail(ctx, CLF_ERROR_INTERNAL, "kernel dims %u", dims);
    size_t want[3] = {1, 1, 1};
    for (cl_uint d = 0; d < dims; d++)
        want[d] = local[d] ? local[d] : 1;
    clf_kernel_entry *e = find_entry(ctx, id, extra, want);
    if (e) {
        for (cl_uint d = 0; d < dims; d++)
            local[d] = e->local[d];
        *out = e->kernel;
        return CLF_SUCCESS;
    }
    if (strlen(extra) >= sizeof(e->extra))
        return clf__fail(ctx, CLF_ERROR_INTERNAL, "kernel variant options too long");
    if (ctx->n_kernels == ctx->cap_kernels) {
        size_t nc = ctx->cap_kernels ? ctx->cap_kernels * 2 : 16;
        clf_kernel_entry *nk = realloc(ctx->kernels, nc * sizeof(*nk));
        if (!nk) return clf__fail(ctx, CLF_ERROR_OUT_OF_MEMORY, "out of host memory");
        ctx->kernels = nk;
        ctx->cap_kernels = nc;
    }
    const clf_kernel_def *def = &clf__kernel_defs[id];
    /* Start within the device's own limits, then fit to what the built kernel allows: a smaller
     * compiled-in size needs fewer registers and less local memory, so each try can only help. */
    size_t fit[3] = {want[0], want[1], want[2]};
    size_t limit = (size_t)ctx->info.max_work_group_size;
    if (limit == 0) limit = 1;
    if (ctx->wg_cap && ctx->wg_cap < limit) limit = ctx->wg_cap;
    for (cl_uint d = 0; d < 3; d++)
        if (ctx->max_item[d] && fit[d] > ctx->max_item[d]) {
            fit[d] = ctx->max_item[d];
            if (def->wg_pow2[d] && (fit[d] & (fit[d] - 1))) {
                size_t p = 1;
                while (p * 2 <= fit[d])
                    p *= 2;
                fit[d] = p;
            }
        }
    clf__wg_shrink(fit, def->wg_pow2, 3, limit, 1);
    for (int attempt = 0;; attempt++) {
        const char *macros[3];
        int64_t values[3];
        int n = 0;
        for (cl_uint d = 0; d < 3; d++)
            if (def->wg_macro[d]) {
                macros[n] = def->wg_macro[d];
                values[n++] = (int64_t)fit[d];
            }
        cl_program prog;
        clf_status st = lib_program(ctx, def->prog, macros, values, n, extra, &prog);
        if (st != CLF_SUCCESS) return st;
        cl_int err;
        cl_kernel k = clCreateKernel(prog, def->name, &err);
        if (err != CL_SUCCESS) return clf__cl_fail(ctx, err, "clCreateKernel");
        size_t kwg = 0, multiple = 1;
        cl_ulong lmem = 0;
        err = clGetKernelWorkGroupInfo(k, ctx->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof(kwg), &kwg,
                                       NULL);
        if (err == CL_SUCCESS)
            err = clGetKernelWorkGroupInfo(k, ctx->device, CL_KERNEL_LOCAL_MEM_SIZE, sizeof(lmem),
                                           &lmem, NULL);
        if (err == CL_SUCCESS &&
            clGetKernelWorkGroupInfo(k, ctx->device, CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE,
                                     sizeof(multiple), &multiple, NULL) != CL_SUCCESS)
            multiple = 1;
        if (err != CL_SUCCESS) {
            clReleaseKernel(k);
            return clf__cl_fail(ctx, err, "clGetKernelWorkGroupInfo");
        }
        size_t klimit = kwg < limit ? kwg : limit;
        const size_t total = product(fit, 3);
        /* Local arrays sized by the compiled-in work-group that do not fit the device's local
         * memory: halve the group and build again. */
        const bool lmem_over = ctx->info.local_mem_bytes && lmem > ctx->info.local_mem_bytes;
        if (lmem_over && total / 2 < klimit) klimit = total / 2;
        if (total <= klimit && !lmem_over) {
            e = &ctx->kernels[ctx->n_kernels++];
            e->id = id;
            snprintf(e->extra, sizeof(e->extra), "%s", extra);
            for (int d = 0; d < 3; d++) {
                e->want[d] = want[d];
                e->local[d] = fit[d];
            }
            e->kernel = k;
            e->wg = klimit;
            for (cl_uint d = 0; d < dims; d++)
                local[d] = fit[d];
            *out = k;
            return CLF_SUCCESS;
        }
        clReleaseKernel(k);
        if (attempt >= 16 || !clf__wg_shrink(fit, def->wg_pow2, 3, klimit, multiple))
            return clf__fail(ctx, CLF_ERROR_UNSUPPORTED,
                             "kernel %s: no work-group fits this device (it allows %zu work-items "
                             "and %llu bytes of local memory for it; the kernel needs %llu)",
                             def->name, kwg, (unsigned long long)ctx->info.local_mem_bytes,
                             (unsigned long long)lmem);
    }
}

clf_status clf__kernel(clf_context *ctx, clf_kernel_id id, cl_kernel *out) {
    /* The request its tunables make: "<program>.<macro>" for each compiled-in dim. */
    const clf_kernel_def *def = &clf__kernel_defs[id];
    size_t local[3] = {1, 1, 1};
    for (int d = 0; d < 3; d++) {
        if (!def->wg_macro[d]) continue;
        char name[64];
        snprintf(name, sizeof(name), "%s.%s", clf__prog_names[def->prog], def->wg_macro[d]);
        int i = clf__tunable_find(name);
        if (i >= 0) local[d] = (size_t)ctx->tunables[i];
    }
    return clf__kernel_fit(ctx, id, "", 3, local, out);
}

size_t clf__row_wg_for_budget(const clf_context *ctx, int64_t n, int64_t vw, int passes,
                              size_t wg) {
    if (ctx->loop_budget <= 0) return wg;
    const int64_t room = ctx->loop_budget - passes * vw - 64; /* tails and the tree */
    while (wg < 1024 && room > 0 &&
           passes * ((n + vw * (int64_t)wg - 1) / (vw * (int64_t)wg)) > room)
        wg *= 2;
    return wg;
}

clf_status clf__check_loops(clf_context *ctx, clf_kernel_id id, int64_t iters) {
    if (ctx->loop_budget <= 0 || iters <= ctx->loop_budget) return CLF_SUCCESS;
    return clf__fail(ctx, CLF_ERROR_UNSUPPORTED,
                     "kernel %s: a work-item would run %lld loop iterations, over the %lld this "
                     "device runs correctly (llvmpipe stops loops after 65535 in all)",
                     clf__kernel_defs[id].name, (long long)iters, (long long)ctx->loop_budget);
}

void clf__loop_budget_set(clf_context *ctx, int64_t budget) {
    ctx->loop_budget = budget > 0 ? budget : 0;
}

void clf__wg_cap_set(clf_context *ctx, size_t cap) {
    ctx->wg_cap = cap;
    clf__drop_kernels(ctx, CLF_PROG_COUNT);
}

void clf__drop_kernels(clf_context *ctx, clf_prog_id prog) {
    size_t w = 0;
    for (size_t i = 0; i < ctx->n_kernels; i++) {
        if (prog == CLF_PROG_COUNT || clf__kernel_defs[ctx->kernels[i].id].prog == prog)
            clReleaseKernel(ctx->kernels[i].kernel);
        else
            ctx->kernels[w++] = ctx->kernels[i];
    }
    ctx->n_kernels = w;
}

clf_status clf__set_args(clf_context *ctx, cl_kernel k, ...) {
    va_list ap;
    va_start(ap, k);
    cl_uint i = 0;
    clf_status st = CLF_SUCCESS;
    for (;;) {
        size_t size = va_arg(ap, size_t);
        if (size == 0) break;
        const void *value = va_arg(ap, const void *);
        cl_int err = clSetKernelArg(k, i, size, value);
        if (err != CL_SUCCESS) {
            char what[64];
            snprintf(what, sizeof(what), "clSetKernelArg(%u)", i);
            st = clf__cl_fail(ctx, err, what);
            break;
        }
        i++;
    }
    va_end(ap);
    return st;
}

clf_status clf__launch(clf_context *ctx, clf_kernel_id id, cl_kernel k, cl_uint dims,
                       const size_t *global, const size_t *local) {
    if (local) {
        size_t total = 1, limit = 0;
        for (cl_uint d = 0; d < dims; d++)
            total *= local[d];
        for (size_t i = 0; i < ctx->n_kernels; i++)
            if (ctx->kernels[i].kernel == k) limit = ctx->kernels[i].wg;
        if (total > limit)
            return clf__fail(ctx, CLF_ERROR_UNSUPPORTED,
                             "kernel %s: work-group of %zu work-items exceeds the %zu this device "
                             "allows for it (CL_KERNEL_WORK_GROUP_SIZE); lower its tunables",
                             clf__kernel_defs[id].name, total, limit);
    }
    for (cl_uint d = 0; d < dims; d++)
        if (global[d] == 0) return CLF_SUCCESS; /* nothing to do */
    cl_event ev = NULL;
    cl_int err = clf__fault(ctx, CLF_FAULT_ENQUEUE)
                     ? CL_OUT_OF_RESOURCES
                     : clEnqueueNDRangeKernel(ctx->queue, k, dims, NULL, global, local, 0, NULL,
                                              ctx->profiling ? &ev : NULL);
    if (err != CL_SUCCESS) {
        char what[96];
        snprintf(what, sizeof(what), "clEnqueueNDRangeKernel(%s)", clf__kernel_defs[id].name);
        return clf__cl_fail(ctx, err, what);
    }
    ctx->launches++;
    return ev ? clf__profile_event(ctx, ev) : CLF_SUCCESS;
}

clf_status clf__profile_event(clf_context *ctx, cl_event ev) {
    cl_ulong t0 = 0, t1 = 0;
    cl_int err = clWaitForEvents(1, &ev);
    if (err == CL_SUCCESS)
        err = clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof(t0), &t0, NULL);
    if (err == CL_SUCCESS)
        err = clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof(t1), &t1, NULL);
    clReleaseEvent(ev);
    if (err != CL_SUCCESS) return clf__cl_fail(ctx, err, "kernel profiling");
    ctx->prof_ns += (t1 > t0) ? (uint64_t)(t1 - t0) : 0;
    ctx->prof_count++;
    return CLF_SUCCESS;
}
