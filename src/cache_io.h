/*
 * cache_io.h — the program cache's keys and entries, and the file and JSON helpers of the disk
 * caches and tuning files (program.c, json.c). Included by internal.h.
 */
#ifndef CLF_CACHE_IO_H
#define CLF_CACHE_IO_H

#include "clformer/clformer.h"

#include <stddef.h>
#include <stdint.h>

typedef struct clf_prog_entry {
    uint64_t key[2];
    cl_program program;
} clf_prog_entry;

/* 128-bit key over (source, options, device name, driver version, platform, format version). */
void clf__cache_key(const char *source, const char *options, const clf_device_info *dev,
                    uint64_t key[2]);
/* File name "<32 hex digits>.bin" of a key. */
void clf__cache_file_name(const uint64_t key[2], char out[40]);
/* mkdir -p; 0 on success. */
int clf__make_dirs(const char *path);
/* A whole file of at most max bytes, NUL-terminated, malloc'ed; NULL if unreadable or larger. */
char *clf__read_text(const char *path, size_t max);
/* dir/name parsed as JSON; NULL with *st = CLF_SUCCESS when absent and not required, NULL with an
 * error in *st (and the context) when required and absent or not JSON. Free with cJSON_Delete. */
typedef struct cJSON cJSON;
cJSON *clf__read_json(clf_context *ctx, const char *dir, const char *name, int required,
                      clf_status *st);
/* A positive integer field (1 .. 1e9), or 0 if absent or not one. */
int64_t clf__json_int(const cJSON *o, const char *key);
/* Default cache folder from the environment ($XDG_CACHE_HOME/clformer, else
 * $HOME/.cache/clformer); NULL if neither is set. The caller frees. */
char *clf__default_cache_dir(void);

#endif
