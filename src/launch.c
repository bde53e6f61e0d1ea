/*
 * launch.c — library kernels: each (kernel, variant, requested work-group) built once per
 * context with its work-group fitted to what the device allows for it (clf__kernel_fit), the
 * test-only caps (work-group, loop budget), argument setting, and launching with profiling.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Writes text to dir/name unless that file exists (program_log_dir); 0 on success. */
static int log_file(const char *dir, const char *name, const char *text) {
    char path[1024];
    if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path)) return -1;
    FILE *f = fopen(path, "r");
    if (f) {
        fclose(f);
        return 0;
    }
    f = fopen(path, "w");
    if (!f) return -1;
    const bool ok = fputs(text, f) >= 0;
    return (fclose(f) == 0 && ok) ? 0 : -1;
}

/* Builds (through the program cache) the library program `id` with the tunables in force and
 * `n` macros set: the kernel's fitted work-group sizes and the call's defines. With a
 * program_log_dir, records its source and options there and gives its key's file stem. */
static clf_status lib_program(clf_context *ctx, clf_prog_id id, const char *const *macros,
                              const int64_t *values, int n, cl_program *out, char stem[40]) {
    char options[768];
    if (clf__build_options_with(id, ctx->tunables, macros, values, n, options, sizeof(options)) !=
        0)
        return clf__fail(ctx, CLF_ERROR_INTERNAL, "build options too long");
    char *src = NULL;
    clf_status st = clf__program_source(ctx, id, &src);
    if (st != CLF_SUCCESS) return st;
    st = clf__program_get(ctx, src, options, out);
    if (st == CLF_SUCCESS && ctx->program_log_dir) {
        uint64_t key[2];
        char name[48];
        clf__cache_key(src, options, &ctx->info, key);
        clf__cache_file_name(key, stem);
        stem[32] = '\0'; /* drop ".bin" */
        snprintf(name, sizeof(name), "%s.cl", stem);
        int rc = log_file(ctx->program_log_dir, name, src);
        snprintf(name, sizeof(name), "%s.opts", stem);
        if (rc == 0) rc = log_file(ctx->program_log_dir, name, options);
        if (rc != 0)
            st = clf__fail(ctx, CLF_ERROR_IO, "program_log_dir '%s': cannot write %s",
                           ctx->program_log_dir, name);
    }
    free(src);
    return st;
}

/* Appends a created kernel's line to program_log_dir/kernels.tsv. */
static clf_status log_kernel(clf_context *ctx, const char *stem, const char *name,
                             const size_t local[3], const char *extra) {
    char path[1024];
    snprintf(path, sizeof(path), "%s/kernels.tsv", ctx->program_log_dir);
    FILE *f = fopen(path, "a");
    bool ok = f && fprintf(f, "%s\t%s\t%zu\t%zu\t%zu\t%s\t%s\n", stem, name, local[0], local[1],
                           local[2], extra, ctx->info.name) > 0;
    if (f) ok = (fclose(f) == 0) && ok;
    return ok ? CLF_SUCCESS
              : clf__fail(ctx, CLF_ERROR_IO, "program_log_dir: cannot append to %s", path);
}

/* The variant key of a kernel's defines, "NAME=value ...". false if it does not fit. */
static bool variant_key(const clf_defines *defs, char *key, size_t size) {
    size_t off = 0;
    key[0] = '\0';
    for (int i = 0; defs && i < defs->n; i++) {
        int w = snprintf(key + off, size - off, "%s%s=%lld", i ? " " : "", defs->name[i],
                         (long long)defs->value[i]);
        if (w < 0 || (size_t)w >= size - off) return false;
        off += (size_t)w;
    }
    return true;
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

static size_t floor_pow2(size_t v) {
    size_t p = 1;
    while (p * 2 <= v)
        p *= 2;
    return p;
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
            v = floor_pow2(v);
        } else if (multiple > 1 && v >= multiple) {
            v -= v % multiple;
        }
        local[big] = v;
    }
    return true;
}

clf_status clf__kernel_fit(clf_context *ctx, clf_kernel_id id, const clf_defines *defs,
                           cl_uint dims, size_t *local, cl_kernel *out) {
    if (dims < 1 || dims > 3) return clf__fail(ctx, CLF_ERROR_INTERNAL, "kernel dims %u", dims);
    char extra[sizeof(((clf_kernel_entry *)0)->extra)];
    if (!variant_key(defs, extra, sizeof(extra)) || (defs && defs->n > CLF_MAX_DEFINES - 3))
        return clf__fail(ctx, CLF_ERROR_INTERNAL, "kernel variant has too many defines");
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
            fit[d] = def->wg_pow2[d] ? floor_pow2(ctx->max_item[d]) : ctx->max_item[d];
        }
    clf__wg_shrink(fit, def->wg_pow2, 3, limit, 1);
    for (int attempt = 0;; attempt++) {
        const char *macros[CLF_MAX_DEFINES];
        int64_t values[CLF_MAX_DEFINES];
        int n = 0;
        for (cl_uint d = 0; d < 3; d++)
            if (def->wg_macro[d]) {
                macros[n] = def->wg_macro[d];
                values[n++] = (int64_t)fit[d];
            }
        for (int i = 0; defs && i < defs->n; i++) {
            macros[n] = defs->name[i];
            values[n++] = defs->value[i];
        }
        cl_program prog;
        char stem[40] = "";
        clf_status st = lib_program(ctx, def->prog, macros, values, n, &prog, stem);
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
            if (ctx->program_log_dir &&
                (st = log_kernel(ctx, stem, def->name, fit, extra)) != CLF_SUCCESS) {
                clReleaseKernel(k);
                return st;
            }
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
    return clf__kernel_fit(ctx, id, NULL, 3, local, out);
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

clf_status clf__row_kernel(clf_context *ctx, clf_kernel_id id, int64_t n, cl_kernel *out,
                           size_t local[2]) {
    const bool sm = id == CLF_K_SOFTMAX; /* the row kernels: softmax_rows, layernorm_rows */
    const int64_t vw = clf__tun(ctx, sm ? CLF_T_SOFTMAX_VW : CLF_T_LAYERNORM_VW);
    local[0] = (size_t)clf__tun(ctx, sm ? CLF_T_SOFTMAX_WG : CLF_T_LAYERNORM_WG);
    local[1] = (size_t)clf__tun(ctx, sm ? CLF_T_SOFTMAX_RPG : CLF_T_LAYERNORM_RPG);
    local[0] = clf__row_wg_for_budget(ctx, n, vw, 3, local[0]); /* llvmpipe: long rows */
    clf_status st = clf__kernel_fit(ctx, id, NULL, 2, local, out);
    if (st != CLF_SUCCESS) return st;
    const int64_t per = vw * (int64_t)local[0];
    return clf__check_loops(ctx, id, 3 * ((n + per - 1) / per) + 3 * vw);
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
    if (ctx->program_log_only) {
        /* recorded at clf__kernel_fit; the launch only checked as an OpenCL 1.2 driver would */
        for (cl_uint d = 0; local && d < dims; d++)
            if (global[d] % local[d] != 0)
                return clf__fail(ctx, CLF_ERROR_INTERNAL,
                                 "kernel %s: global size %zu in dim %u is not a multiple of its "
                                 "work-group's %zu",
                                 clf__kernel_defs[id].name, global[d], d, local[d]);
        return CLF_SUCCESS;
    }
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
    return ev ? clf__profile_event(ctx, ev, (int)id) : CLF_SUCCESS;
}

clf_status clf__profile_event(clf_context *ctx, cl_event ev, int slot) {
    cl_ulong t0 = 0, t1 = 0;
    cl_int err = clWaitForEvents(1, &ev);
    if (err == CL_SUCCESS)
        err = clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof(t0), &t0, NULL);
    if (err == CL_SUCCESS)
        err = clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof(t1), &t1, NULL);
    clReleaseEvent(ev);
    if (err != CL_SUCCESS) return clf__cl_fail(ctx, err, "kernel profiling");
    const uint64_t ns = (t1 > t0) ? (uint64_t)(t1 - t0) : 0;
    ctx->prof_ns += ns;
    ctx->prof_count++;
    if (slot >= 0 && slot < CLF_PROF_SLOTS) {
        ctx->prof_each_ns[slot] += ns;
        ctx->prof_each_count[slot]++;
    }
    return CLF_SUCCESS;
}
