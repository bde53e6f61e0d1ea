/*
 * device.c — enumerates OpenCL platforms and devices, describes each one (clf_device_info) and
 * picks one by spec string. Nothing here is cached between calls: no global state.
 */
#include "internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void get_str(cl_device_id d, cl_device_info what, char *out) {
    out[0] = '\0';
    size_t n = 0;
    if (clGetDeviceInfo(d, what, CLF_NAME_LEN - 1, out, &n) != CL_SUCCESS) out[0] = '\0';
    out[CLF_NAME_LEN - 1] = '\0';
    /* Drivers pad some strings with spaces. */
    size_t len = strlen(out);
    while (len > 0 && isspace((unsigned char)out[len - 1]))
        out[--len] = '\0';
}

static bool has_extension(cl_device_id d, const char *ext) {
    size_t n = 0;
    if (clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, 0, NULL, &n) != CL_SUCCESS || n == 0) return false;
    char *s = malloc(n + 1);
    if (!s) return false;
    bool found = false;
    if (clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, n, s, NULL) == CL_SUCCESS) {
        s[n] = '\0';
        size_t el = strlen(ext);
        for (const char *p = strstr(s, ext); p; p = strstr(p + 1, ext)) {
            bool start = (p == s) || p[-1] == ' ';
            bool end = p[el] == '\0' || p[el] == ' ';
            if (start && end) {
                found = true;
                break;
            }
        }
    }
    free(s);
    return found;
}

clf_status clf__device_query(cl_platform_id platform, cl_device_id d, clf_device_info *info) {
    memset(info, 0, sizeof(*info));
    if (platform) {
        if (clGetPlatformInfo(platform, CL_PLATFORM_NAME, CLF_NAME_LEN - 1, info->platform_name,
                              NULL) != CL_SUCCESS)
            info->platform_name[0] = '\0';
    }
    get_str(d, CL_DEVICE_NAME, info->name);
    get_str(d, CL_DEVICE_VENDOR, info->vendor);
    get_str(d, CL_DRIVER_VERSION, info->driver_version);
    get_str(d, CL_DEVICE_VERSION, info->device_version);
    get_str(d, CL_DEVICE_OPENCL_C_VERSION, info->opencl_c_version);

    cl_device_type type = 0;
    cl_int err = clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof(type), &type, NULL);
    if (err != CL_SUCCESS) return err;
    info->type = (type & CL_DEVICE_TYPE_GPU)           ? CLF_DEVICE_GPU
                 : (type & CL_DEVICE_TYPE_CPU)         ? CLF_DEVICE_CPU
                 : (type & CL_DEVICE_TYPE_ACCELERATOR) ? CLF_DEVICE_ACCELERATOR
                                                       : CLF_DEVICE_OTHER;
    cl_uint u = 0;
    cl_ulong ul = 0;
    size_t sz = 0;
    if (clGetDeviceInfo(d, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof(u), &u, NULL) == CL_SUCCESS)
        info->compute_units = u;
    if (clGetDeviceInfo(d, CL_DEVICE_MAX_CLOCK_FREQUENCY, sizeof(u), &u, NULL) == CL_SUCCESS)
        info->clock_mhz = u;
    if (clGetDeviceInfo(d, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof(ul), &ul, NULL) == CL_SUCCESS)
        info->global_mem_bytes = ul;
    if (clGetDeviceInfo(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof(ul), &ul, NULL) == CL_SUCCESS)
        info->max_alloc_bytes = ul;
    if (clGetDeviceInfo(d, CL_DEVICE_LOCAL_MEM_SIZE, sizeof(ul), &ul, NULL) == CL_SUCCESS)
        info->local_mem_bytes = ul;
    cl_device_local_mem_type lt = CL_GLOBAL;
    if (clGetDeviceInfo(d, CL_DEVICE_LOCAL_MEM_TYPE, sizeof(lt), &lt, NULL) == CL_SUCCESS)
        info->local_mem_dedicated = (lt == CL_LOCAL);
    if (clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof(sz), &sz, NULL) == CL_SUCCESS)
        info->max_work_group_size = sz;
    if (clGetDeviceInfo(d, CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT, sizeof(u), &u, NULL) ==
        CL_SUCCESS)
        info->preferred_vector_width_float = u;
    if (clGetDeviceInfo(d, CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT, sizeof(u), &u, NULL) == CL_SUCCESS)
        info->native_vector_width_float = u;
    info->has_fp16 = has_extension(d, "cl_khr_fp16");
    info->has_fp64 = has_extension(d, "cl_khr_fp64");
    info->has_subgroups =
        has_extension(d, "cl_khr_subgroups") || has_extension(d, "cl_intel_subgroups");
    cl_device_fp_config fp = 0;
    if (clGetDeviceInfo(d, CL_DEVICE_SINGLE_FP_CONFIG, sizeof(fp), &fp, NULL) == CL_SUCCESS)
        info->has_fma = (fp & CL_FP_FMA) != 0;
    info->is_simulator = clf__is_simulator(info);
    return CL_SUCCESS;
}

/* Enumerates all devices. On success *list is malloc'ed (NULL when there are none). Also returns
 * the platform and device handles when the out arrays are requested. */
static clf_status enumerate(clf_device_info **list, cl_platform_id **plats, cl_device_id **devs,
                            uint32_t *count) {
    *list = NULL;
    *count = 0;
    if (plats) *plats = NULL;
    if (devs) *devs = NULL;
    cl_uint np = 0;
    cl_int err = clGetPlatformIDs(0, NULL, &np);
    if (err == -1001 /* CL_PLATFORM_NOT_FOUND_KHR: ICD loader found no driver */ || np == 0)
        return CLF_SUCCESS;
    if (err != CL_SUCCESS) return err;
    cl_platform_id *ps = calloc(np, sizeof(*ps));
    if (!ps) return CLF_ERROR_OUT_OF_MEMORY;
    clf_status st = CLF_SUCCESS;
    clf_device_info *infos = NULL;
    cl_platform_id *out_p = NULL;
    cl_device_id *out_d = NULL;
    uint32_t n = 0, cap = 0;
    err = clGetPlatformIDs(np, ps, NULL);
    if (err != CL_SUCCESS) {
        st = err;
        goto cleanup;
    }
    for (cl_uint p = 0; p < np; p++) {
        cl_uint nd = 0;
        err = clGetDeviceIDs(ps[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd);
        if (err == CL_DEVICE_NOT_FOUND || nd == 0) continue;
        if (err != CL_SUCCESS) continue; /* a broken platform must not hide the others */
        cl_device_id *ds = calloc(nd, sizeof(*ds));
        if (!ds) {
            st = CLF_ERROR_OUT_OF_MEMORY;
            goto cleanup;
        }
        if (clGetDeviceIDs(ps[p], CL_DEVICE_TYPE_ALL, nd, ds, NULL) == CL_SUCCESS) {
            for (cl_uint i = 0; i < nd; i++) {
                if (n == cap) {
                    uint32_t nc = cap ? cap * 2 : 8;
                    clf_device_info *ni = realloc(infos, nc * sizeof(*ni));
                    if (ni) infos = ni;
                    cl_platform_id *np2 = realloc(out_p, nc * sizeof(*np2));
                    if (np2) out_p = np2;
                    cl_device_id *nd2 = realloc(out_d, nc * sizeof(*nd2));
                    if (nd2) out_d = nd2;
                    if (!ni || !np2 || !nd2) {
                        free(ds);
                        st = CLF_ERROR_OUT_OF_MEMORY;
                        goto cleanup;
                    }
                    cap = nc;
                }
                if (clf__device_query(ps[p], ds[i], &infos[n]) != CL_SUCCESS) continue;
                infos[n].global_index = n;
                infos[n].platform_index = p;
                infos[n].device_index = i;
                out_p[n] = ps[p];
                out_d[n] = ds[i];
                n++;
            }
        }
        free(ds);
    }
cleanup:
    free(ps);
    if (st != CLF_SUCCESS) {
        free(infos);
        free(out_p);
        free(out_d);
        return st;
    }
    *list = infos;
    *count = n;
    if (plats)
        *plats = out_p;
    else
        free(out_p);
    if (devs)
        *devs = out_d;
    else
        free(out_d);
    return CLF_SUCCESS;
}

clf_status clf_device_list(clf_device_info *infos, uint32_t capacity, uint32_t *count) {
    if (!count || (capacity > 0 && !infos)) return CLF_ERROR_INVALID_ARGUMENT;
    clf_device_info *list;
    uint32_t n;
    clf_status st = enumerate(&list, NULL, NULL, &n);
    if (st != CLF_SUCCESS) return st;
    for (uint32_t i = 0; i < n && i < capacity; i++)
        infos[i] = list[i];
    *count = n;
    free(list);
    return CLF_SUCCESS;
}

bool clf__ci_contains(const char *hay, const char *needle) {
    size_t nl = strlen(needle);
    if (nl == 0) return false;
    for (const char *h = hay; *h; h++) {
        size_t i = 0;
        while (i < nl && h[i] && tolower((unsigned char)h[i]) == tolower((unsigned char)needle[i]))
            i++;
        if (i == nl) return true;
    }
    return false;
}

static bool parse_u32(const char *s, const char *end, uint32_t *out) {
    if (s == end) return false;
    uint64_t v = 0;
    for (const char *p = s; p < end; p++) {
        if (!isdigit((unsigned char)*p)) return false;
        v = v * 10 + (uint64_t)(*p - '0');
        if (v > UINT32_MAX) return false;
    }
    *out = (uint32_t)v;
    return true;
}

int64_t clf__device_loop_budget(const clf_device_info *info) {
    /* Mesa's llvmpipe exits any loop once a work-item has run 65535 iterations (all its loops
     * together; LP_MAX_TGSI_LOOP_ITERATIONS) and goes on with what it has: attention over 1024
     * keys gave wrong outputs on rusticl/llvmpipe (Mesa 22.3) until the keys were split. */
    return clf__ci_contains(info->name, "llvmpipe") ? 32768 : 0;
}

bool clf__is_simulator(const clf_device_info *info) {
    /* Oclgrind: an instrumented interpreter that reports every device type at once. */
    return clf__ci_contains(info->platform_name, "oclgrind") ||
           clf__ci_contains(info->name, "oclgrind");
}

clf_status clf__device_match(const clf_device_info *list, uint32_t n, const char *spec,
                             uint32_t *index) {
    if (n == 0) return CLF_ERROR_NO_DEVICE;
    /* Trim surrounding white space. */
    char buf[CLF_NAME_LEN];
    if (!spec) spec = "";
    while (isspace((unsigned char)*spec))
        spec++;
    size_t len = strlen(spec);
    if (len >= sizeof(buf)) return CLF_ERROR_INVALID_ARGUMENT;
    memcpy(buf, spec, len + 1);
    while (len > 0 && isspace((unsigned char)buf[len - 1]))
        buf[--len] = '\0';

    /* The default and the type words never pick a simulator (Oclgrind): only a spec that names
     * it (by index, platform:device or name) does. */
    /* Default: first GPU, else first CPU, else first accelerator, else any other; within a
     * type, llvmpipe (a software rasterizer with a loop limit, slower than PoCL) comes last. */
    if (len == 0) {
        static const clf_device_type order[] = {CLF_DEVICE_GPU, CLF_DEVICE_CPU,
                                                CLF_DEVICE_ACCELERATOR, CLF_DEVICE_OTHER};
        for (size_t o = 0; o < sizeof(order) / sizeof(order[0]); o++)
            for (int soft = 0; soft < 2; soft++)
                for (uint32_t i = 0; i < n; i++)
                    if (list[i].type == order[o] && !list[i].is_simulator &&
                        (clf__device_loop_budget(&list[i]) > 0) == (soft == 1))
                        return *index = i, CLF_SUCCESS;
        return CLF_ERROR_NO_DEVICE;
    }
    static const struct {
        const char *word;
        clf_device_type type;
    } types[] = {
        {"gpu", CLF_DEVICE_GPU}, {"cpu", CLF_DEVICE_CPU}, {"accelerator", CLF_DEVICE_ACCELERATOR}};
    for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
        if (strcasecmp(buf, types[t].word) == 0) {
            for (uint32_t i = 0; i < n; i++)
                if (list[i].type == types[t].type && !list[i].is_simulator)
                    return *index = i, CLF_SUCCESS;
            return CLF_ERROR_NO_DEVICE;
        }
    }
    uint32_t a, b;
    const char *colon = strchr(buf, ':');
    if (colon) {
        if (!parse_u32(buf, colon, &a) || !parse_u32(colon + 1, buf + len, &b))
            return CLF_ERROR_INVALID_ARGUMENT;
        for (uint32_t i = 0; i < n; i++)
            if (list[i].platform_index == a && list[i].device_index == b)
                return *index = i, CLF_SUCCESS;
        return CLF_ERROR_NO_DEVICE;
    }
    if (parse_u32(buf, buf + len, &a)) {
        if (a < n) return *index = a, CLF_SUCCESS;
        return CLF_ERROR_NO_DEVICE;
    }
    for (uint32_t i = 0; i < n; i++)
        if (clf__ci_contains(list[i].name, buf) || clf__ci_contains(list[i].vendor, buf) ||
            clf__ci_contains(list[i].platform_name, buf))
            return *index = i, CLF_SUCCESS;
    return CLF_ERROR_NO_DEVICE;
}

static const char *type_name(clf_device_type t) {
    switch (t) {
    case CLF_DEVICE_CPU:
        return "cpu";
    case CLF_DEVICE_GPU:
        return "gpu";
    case CLF_DEVICE_ACCELERATOR:
        return "accelerator";
    default:
        return "other";
    }
}

/* Writes "no device matches 'x'; devices: 0 (0:0) gpu NAME; 1 ..." into msg. */
static void no_match_message(const clf_device_info *list, uint32_t n, const char *spec,
                             clf_status st, char *msg, size_t size) {
    if (!msg || size == 0) return;
    size_t off = 0;
    int w;
    if (n == 0)
        w = snprintf(msg, size,
                     "no OpenCL device found (no platform installed? check the ICD files in "
                     "/etc/OpenCL/vendors or OCL_ICD_VENDORS)");
    else if (st == CLF_ERROR_INVALID_ARGUMENT)
        w = snprintf(msg, size,
                     "device spec '%s' is malformed (use gpu, cpu, accelerator, an index, "
                     "platform:device, or a name substring); devices:",
                     spec);
    else
        w = snprintf(msg, size, "no OpenCL device matches '%s'; devices:", spec ? spec : "");
    if (w < 0) return;
    off = (size_t)w < size ? (size_t)w : size - 1;
    for (uint32_t i = 0; i < n && off + 1 < size; i++) {
        w = snprintf(msg + off, size - off, " [%u] %u:%u %s '%s' (%s)%s", list[i].global_index,
                     list[i].platform_index, list[i].device_index, type_name(list[i].type),
                     list[i].name, list[i].platform_name, i + 1 < n ? ";" : "");
        if (w < 0) break;
        off += (size_t)w < size - off ? (size_t)w : size - off - 1;
    }
}

clf_status clf__device_pick(const char *spec, clf_device_info *info, cl_platform_id *platform,
                            cl_device_id *device, char *msg, size_t msg_size) {
    clf_device_info *list;
    cl_platform_id *ps;
    cl_device_id *ds;
    uint32_t n;
    clf_status st = enumerate(&list, &ps, &ds, &n);
    if (st != CLF_SUCCESS) {
        if (msg && msg_size) snprintf(msg, msg_size, "enumerating OpenCL devices failed (%d)", st);
        return st;
    }
    uint32_t idx = 0;
    st = clf__device_match(list, n, spec, &idx);
    if (st == CLF_SUCCESS) {
        if (info) *info = list[idx];
        if (platform) *platform = ps[idx];
        if (device) *device = ds[idx];
    } else {
        no_match_message(list, n, spec, st, msg, msg_size);
    }
    free(list);
    free(ps);
    free(ds);
    return st;
}

clf_status clf_device_select(const char *spec, clf_device_info *out, clf_error *e) {
    char *msg = e ? e->message : NULL;
    const size_t msg_size = e ? sizeof(e->message) : 0;
    if (!out) return CLF_ERROR_INVALID_ARGUMENT;
    if (msg && msg_size) msg[0] = '\0';
    return clf__device_pick(spec, out, NULL, NULL, msg, msg_size);
}
