/*
 * safetensors_write.c — writes F32 and I32 tensors as a safetensors file (fixtures, tests and
 * tools; the reader is safetensors.c). The file is written whole or not at all.
 */
#include "internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

clf_status clf_safetensors_write(const char *path, const clf_st_entry *entries, size_t n,
                                 clf_error *error) {
    char *err = error ? error->message : NULL;
    const size_t es = error ? sizeof(error->message) : 0;
    clf__msg(err, es, "%s", "");
    if (!path || (n && !entries)) {
        clf__msg(err, es, "path and entries must not be NULL");
        return CLF_ERROR_INVALID_ARGUMENT;
    }
    cJSON *root = cJSON_CreateObject();
    if (!root) return CLF_ERROR_OUT_OF_MEMORY;
    uint64_t off = 0;
    clf_status rc = CLF_SUCCESS;
    for (size_t i = 0; i < n && rc == CLF_SUCCESS; i++) {
        const clf_st_entry *e = &entries[i];
        if (!e->name || (e->ndim && !e->shape) || !e->data || e->ndim < 0 ||
            e->ndim > CLF_ST_MAX_DIMS || (e->dtype != CLF_ST_F32 && e->dtype != CLF_ST_I32) ||
            strcmp(e->name, "__metadata__") == 0 || cJSON_GetObjectItem(root, e->name)) {
            clf__msg(err, es, "entry %zu: needs a unique name, F32 or I32, 0..%d dims and data", i,
                     CLF_ST_MAX_DIMS);
            rc = CLF_ERROR_INVALID_ARGUMENT;
            break;
        }
        uint64_t numel = 1;
        cJSON *o = cJSON_CreateObject(), *sh = cJSON_CreateArray(), *of = cJSON_CreateArray();
        for (int k = 0; k < e->ndim; k++) {
            if (e->shape[k] < 0) rc = CLF_ERROR_INVALID_ARGUMENT;
            numel *= (uint64_t)e->shape[k];
            cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)e->shape[k]));
        }
        cJSON_AddItemToArray(of, cJSON_CreateNumber((double)off));
        off += numel * 4;
        cJSON_AddItemToArray(of, cJSON_CreateNumber((double)off));
        cJSON_AddStringToObject(o, "dtype", e->dtype == CLF_ST_F32 ? "F32" : "I32");
        cJSON_AddItemToObject(o, "shape", sh);
        cJSON_AddItemToObject(o, "data_offsets", of);
        cJSON_AddItemToObject(root, e->name, o);
        if (rc != CLF_SUCCESS) clf__msg(err, es, "entry %zu: negative dimension", i);
    }
    char *text = rc == CLF_SUCCESS ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    if (rc != CLF_SUCCESS) return rc;
    if (!text) return CLF_ERROR_OUT_OF_MEMORY;
    const size_t hl = strlen(text), padded = (hl + 7) / 8 * 8;
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    bool ok = f != NULL;
    unsigned char hb[8];
    for (int i = 0; i < 8; i++)
        hb[i] = (unsigned char)((uint64_t)padded >> (8 * i));
    if (ok) ok = fwrite(hb, 1, 8, f) == 8 && fwrite(text, 1, hl, f) == hl;
    for (size_t i = hl; ok && i < padded; i++)
        ok = fputc(' ', f) != EOF;
    for (size_t i = 0; ok && i < n; i++) {
        uint64_t numel = 1;
        for (int k = 0; k < entries[i].ndim; k++)
            numel *= (uint64_t)entries[i].shape[k];
        ok = fwrite(entries[i].data, 4, (size_t)numel, f) == numel;
    }
    if (f) ok = (fclose(f) == 0) && ok;
    free(text);
    if (ok) ok = rename(tmp, path) == 0;
    if (!ok) {
        remove(tmp);
        clf__msg(err, es, "%s: cannot write: %s", path, strerror(errno));
        return CLF_ERROR_IO;
    }
    return CLF_SUCCESS;
}
