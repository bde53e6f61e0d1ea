/*
 * tuning_file.c — where tuning files live and how they are written: one JSON file per (kind,
 * device) under the tuning folder, <dir>/<kind>/<hash of device name, vendor, driver,
 * platform>.json, replaced atomically. Read by tuning/gemm_params.c and tuning/attention_tiles.c
 * at context creation; written by the searches in src/search/.
 */
#include "../internal.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* <cache>/<kind>/<hash>.json for this device; NULL without a cache folder. */
char *clf__tuning_path(const clf_context *ctx, const char *kind) {
    if (!ctx->tuning->dir) return NULL;
    uint64_t key[2];
    clf__cache_key(kind, "", &ctx->info, key);
    size_t n = strlen(ctx->tuning->dir) + strlen(kind) + 48;
    char *path = malloc(n);
    if (path)
        snprintf(path, n, "%s/%s/%016llx%016llx.json", ctx->tuning->dir, kind,
                 (unsigned long long)key[0], (unsigned long long)key[1]);
    return path;
}

clf_status clf__tuning_save(clf_context *ctx, const char *kind, cJSON *root, char *path_out,
                            size_t path_size) {
    char *path = clf__tuning_path(ctx, kind);
    if (!path) {
        cJSON_Delete(root);
        return clf__fail(ctx, CLF_ERROR_IO, "no cache folder to save %s in", kind);
    }
    cJSON_AddStringToObject(root, "device", ctx->info.name);
    cJSON_AddStringToObject(root, "vendor", ctx->info.vendor);
    cJSON_AddStringToObject(root, "driver", ctx->info.driver_version);
    cJSON_AddStringToObject(root, "platform", ctx->info.platform_name);
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    clf_status st = CLF_SUCCESS;
    char dir[700], tmp[800];
    snprintf(dir, sizeof(dir), "%s/%s", ctx->tuning->dir, kind);
    snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid());
    FILE *f = (text && clf__make_dirs(dir) == 0) ? fopen(tmp, "w") : NULL;
    if (!f || fputs(text, f) < 0 || fclose(f) != 0 || rename(tmp, path) != 0) {
        if (f) remove(tmp);
        st = clf__fail(ctx, CLF_ERROR_IO, "cannot write %s file %s", kind, path);
    } else {
        snprintf(path_out, path_size, "%s", path);
    }
    free(text);
    free(path);
    return st;
}
