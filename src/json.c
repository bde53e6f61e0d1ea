/*
 * json.c — reading the JSON files of a model folder (config.json and friends) with cJSON.
 */
#include "internal.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

cJSON *clf__read_json(clf_context *ctx, const char *dir, const char *name, int required,
                      clf_status *st) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    char *text = clf__read_text(path, 1u << 24);
    if (!text) {
        *st = required ? clf__fail(ctx, CLF_ERROR_IO, "%s: missing or unreadable", path)
                       : CLF_SUCCESS;
        return NULL;
    }
    cJSON *j = cJSON_Parse(text);
    free(text);
    if (!j) *st = clf__fail(ctx, CLF_ERROR_BAD_FORMAT, "%s: not valid JSON", path);
    return j;
}

int64_t clf__json_int(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble > 1e9 ||
        v->valuedouble != floor(v->valuedouble))
        return 0;
    return (int64_t)v->valuedouble;
}
