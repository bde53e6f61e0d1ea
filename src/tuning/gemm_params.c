/*
 * gemm_params.c — CLBlast's GEMM parameters for devices it does not know: the loading half.
 *
 * CLBlast picks Xgemm (indirect, large products), XgemmDirect (small products) and the switch
 * point between them (GemmRoutine: XGEMM_MIN_INDIRECT_SIZE) from its database; PoCL's device
 * and many others are not in it, and its generic defaults run SGEMM at ~9% of a CPU's FMA peak.
 * At context creation we apply, in order of preference: this device's tuning file (written by
 * clf_gemm_tune in search/gemm_search.c), else a built-in set for its device type, else nothing.
 * CLBlast keeps overrides per device for the whole process (CLBlastOverrideParameters).
 *
 * Tuning file: <cache>/gemm-tuning/<hash of device name, vendor, driver, platform>.json
 *   {"format": "clformer-gemm-tuning-1", "device": ..., "driver": ...,
 *    "Xgemm": {16 parameters}, "XgemmDirect": {10 parameters},
 *    "GemmRoutine": {"XGEMM_MIN_INDIRECT_SIZE": n}, "gflops": ..., "small_gflops": ...}
 */
#include "gemm_params.h"

#include <cjson/cJSON.h>
#include <clblast_c.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const clf__xgemm_names[CLF_N_XGEMM] = {
    "GEMMK", "KREG", "KWG", "KWI", "MDIMA", "MDIMC", "MWG", "NDIMB",
    "NDIMC", "NWG",  "SA",  "SB",  "STRM",  "STRN",  "VWM", "VWN"};
const char *const clf__direct_names[CLF_N_DIRECT] = {"KWID", "MDIMAD", "MDIMCD", "NDIMBD", "NDIMCD",
                                                     "PADA", "PADB",   "VWMD",   "VWND",   "WGD"};

/* Built-in values for CPUs (PoCL): the Xgemm set measured in ../shared/PERF.md (86 GFLOP/s at
 * 1024^3 on a Zen 4 core pair, vs ~30 with CLBlast's defaults). GPUs keep CLBlast's database. */
bool clf__gemm_builtin(clf_device_type type, clf_gemm_params *p) {
    memset(p, 0, sizeof(*p));
    if (type != CLF_DEVICE_CPU) return false;
    const size_t x[CLF_N_XGEMM] = {0, 1, 32, 2, 8, 8, 64, 8, 8, 64, 1, 1, 0, 0, 4, 4};
    memcpy(p->xgemm, x, sizeof(x));
    p->has_xgemm = true;
    return true;
}

/* CLBlast keeps parameter overrides per device for the whole process, so two contexts on one
 * device would run each other's parameters, and a tune in one thread would change GEMMs in
 * another. Each context therefore keeps its own parameters (ctx->tuning->gemm) and every CLBlast
 * call runs under one process-wide lock that first re-applies the calling context's parameters
 * when another context applied its own to that device since (see clf__gemm_lock). This lock and
 * the small table of who applied last are the library's only process-wide state. */
#define OWNERS_MAX 32
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    cl_device_id device;
    uint64_t owner; /* id of the context whose parameters CLBlast holds for the device */
} owners[OWNERS_MAX];
static uint64_t next_id = 1; /* context ids (under the lock) */

static clf_status override(clf_context *ctx, const clf_gemm_params *p) {
    CLBlastStatusCode s = CLBlastSuccess;
    if (p->has_xgemm)
        s = CLBlastOverrideParameters(ctx->device, "Xgemm", CLBlastPrecisionSingle, CLF_N_XGEMM,
                                      (const char **)clf__xgemm_names, p->xgemm);
    if (s == CLBlastSuccess && p->has_direct)
        s = CLBlastOverrideParameters(ctx->device, "XgemmDirect", CLBlastPrecisionSingle,
                                      CLF_N_DIRECT, (const char **)clf__direct_names, p->direct);
    if (s == CLBlastSuccess && p->has_routine) {
        const char *names[1] = {"XGEMM_MIN_INDIRECT_SIZE"};
        s = CLBlastOverrideParameters(ctx->device, "GemmRoutine", CLBlastPrecisionSingle, 1, names,
                                      &p->min_indirect);
    }
    return s == CLBlastSuccess ? CLF_SUCCESS
                               : clf__clblast_fail(ctx, s, "CLBlastOverrideParameters");
}

/* Marks ctx as the last to apply its parameters to its device (under the lock). */
static void set_owner(const clf_context *ctx) {
    int free_slot = -1;
    for (int i = 0; i < OWNERS_MAX; i++) {
        if (owners[i].device == ctx->device) {
            owners[i].owner = ctx->tuning->id;
            return;
        }
        if (!owners[i].device && free_slot < 0) free_slot = i;
    }
    if (free_slot >= 0) {
        owners[free_slot].device = ctx->device;
        owners[free_slot].owner = ctx->tuning->id;
    } /* a full table: the device has no owner and every call re-applies */
}

static bool is_owner(const clf_context *ctx) {
    for (int i = 0; i < OWNERS_MAX; i++)
        if (owners[i].device == ctx->device) return owners[i].owner == ctx->tuning->id;
    return false;
}

void clf__gemm_tuning_register(clf_context *ctx) {
    pthread_mutex_lock(&lock);
    ctx->tuning->id = next_id++;
    pthread_mutex_unlock(&lock);
}

clf_status clf__gemm_params_apply(clf_context *ctx, const clf_gemm_params *p) {
    /* The context's parameters with p's groups in place of its own; all of them go to CLBlast,
     * so after a success CLBlast holds exactly this context's set and it owns the device. */
    clf_gemm_params g = ctx->tuning->gemm;
    if (p->has_xgemm) memcpy(g.xgemm, p->xgemm, sizeof(g.xgemm));
    if (p->has_direct) memcpy(g.direct, p->direct, sizeof(g.direct));
    if (p->has_routine) g.min_indirect = p->min_indirect;
    g.has_xgemm |= p->has_xgemm;
    g.has_direct |= p->has_direct;
    g.has_routine |= p->has_routine;
    pthread_mutex_lock(&lock);
    clf_status st = override(ctx, &g);
    if (st == CLF_SUCCESS) {
        ctx->tuning->gemm = g;
        set_owner(ctx);
    } else {
        /* CLBlast may now hold part of g: no context's parameters are whole there */
        for (int i = 0; i < OWNERS_MAX; i++)
            if (owners[i].device == ctx->device) owners[i].owner = 0;
    }
    pthread_mutex_unlock(&lock);
    return st;
}

clf_status clf__gemm_lock(clf_context *ctx) {
    pthread_mutex_lock(&lock);
    clf_status st = CLF_SUCCESS;
    const clf_gemm_params *g = &ctx->tuning->gemm;
    if (!is_owner(ctx) && (g->has_xgemm || g->has_direct || g->has_routine)) {
        st = override(ctx, g);
        if (st == CLF_SUCCESS) set_owner(ctx);
    }
    if (st != CLF_SUCCESS) pthread_mutex_unlock(&lock);
    return st;
}

void clf__gemm_unlock(void) {
    pthread_mutex_unlock(&lock);
}

/* CLBlast keeps each program it builds in a process-wide cache, and every program there retains
 * its cl_context: a clformer context that ran CLBlast would outlive clf_context_free (on NVIDIA a
 * CUDA context each; the fault walks ran out of them at about 100, CL_OUT_OF_HOST_MEMORY).
 * CLBlast can only drop its whole cache, so other live contexts rebuild their GEMM programs on
 * next use; the parameter overrides stay (they live elsewhere in CLBlast). */
void clf__gemm_release(void) {
    pthread_mutex_lock(&lock);
    CLBlastClearCache();
    pthread_mutex_unlock(&lock);
}

/* Reads `count` named non-negative integers (<= 4096) from object obj. */
static bool read_group(const cJSON *obj, const char *const *names, size_t count, size_t *out) {
    if (!cJSON_IsObject(obj)) return false;
    for (size_t i = 0; i < count; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, names[i]);
        if (!cJSON_IsNumber(v)) return false;
        double d = v->valuedouble;
        if (!(d >= 0 && d <= 4096) || d != floor(d)) return false;
        out[i] = (size_t)d;
    }
    return true;
}

bool clf__gemm_tuning_parse(const char *text, const char **why) {
    clf_gemm_params p;
    return clf__gemm_params_parse(text, &p, why);
}

bool clf__gemm_params_parse(const char *text, clf_gemm_params *p, const char **why) {
    memset(p, 0, sizeof(*p));
    cJSON *root = cJSON_Parse(text);
    bool ok = false;
    *why = "not JSON";
    if (!root) return false;
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
    if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, CLF_GEMM_TUNING_FORMAT) != 0) {
        *why = "missing or unknown \"format\"";
        goto done;
    }
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(root, "Xgemm");
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(root, "XgemmDirect");
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(root, "GemmRoutine");
    if (x && !(p->has_xgemm = read_group(x, clf__xgemm_names, CLF_N_XGEMM, p->xgemm))) {
        *why = "bad \"Xgemm\" parameters";
        goto done;
    }
    if (d && !(p->has_direct = read_group(d, clf__direct_names, CLF_N_DIRECT, p->direct))) {
        *why = "bad \"XgemmDirect\" parameters";
        goto done;
    }
    if (r) {
        const char *names[1] = {"XGEMM_MIN_INDIRECT_SIZE"};
        if (!(p->has_routine = read_group(r, names, 1, &p->min_indirect))) {
            *why = "bad \"GemmRoutine\" parameters";
            goto done;
        }
    }
    if (!p->has_xgemm && !p->has_direct && !p->has_routine) {
        *why = "no parameters";
        goto done;
    }
    ok = true;
done:
    cJSON_Delete(root);
    return ok;
}

bool clf__gemm_params_load(const clf_context *ctx, clf_gemm_params *p, char **path_out,
                           const char **why) {
    char *path = clf__tuning_path(ctx, CLF_GEMM_TUNING_KIND);
    char *text = path ? clf__read_text(path, 1 << 16) : NULL;
    *why = NULL;
    const bool ok = text && clf__gemm_params_parse(text, p, why);
    free(text);
    if (path_out)
        *path_out = path;
    else
        free(path);
    return ok;
}

void clf__gemm_tuning_init(clf_context *ctx) {
    clf_gemm_params p;
    char *path = NULL;
    const char *why = NULL;
    if (clf__gemm_params_load(ctx, &p, &path, &why)) {
        if (clf__gemm_params_apply(ctx, &p) == CLF_SUCCESS) {
            snprintf(ctx->tuning->gemm_source, sizeof(ctx->tuning->gemm_source), "file:%s", path);
            free(path);
            return;
        }
        why = "CLBlast refused its parameters";
    }
    if (why) /* present but unusable: say so, carry on with the built-in values */
        clf__warn(ctx, "ignoring GEMM tuning file %s: %s", path, why);
    free(path);
    if (clf__gemm_builtin(ctx->info.type, &p) && clf__gemm_params_apply(ctx, &p) == CLF_SUCCESS)
        snprintf(ctx->tuning->gemm_source, sizeof(ctx->tuning->gemm_source), "builtin:%s",
                 ctx->info.type == CLF_DEVICE_CPU ? "cpu" : "gpu");
}

const char *clf_gemm_tuning_source(const clf_context *ctx) {
    return ctx ? ctx->tuning->gemm_source : "";
}
