/*
 * attention_tiles.c — tiles of the tiled attention kernel per (device, head size).
 *
 * attention_tiled_t's best register blocking depends on the device and on Dh: QB queries per
 * work-item and BQ work-items per group. clf_attention_tune times candidate pairs for each
 * head size asked for (coordinate descent from the pair in force: QB first, then BQ), keeps the
 * fastest, and saves them per device (search/attention_search.c); contexts created later load the
 * file and use a head size's pair for calls with that head size, unless attention.QB or
 * attention.BQ were set explicitly.
 *
 * Tuning file: <cache>/attention-tuning/<hash of device name, vendor, driver, platform>.json
 *   {"format": "clformer-attention-tuning-1", "device": ..., "driver": ...,
 *    "tiles": [{"head_dim": 64, "QB": 16, "BQ": 4, "ms": ..., "default_ms": ...}, ...]}
 */
#include "../internal.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static bool read_int(const cJSON *obj, const char *name, int64_t lo, int64_t hi, int64_t *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (!cJSON_IsNumber(v)) return false;
    const double d = v->valuedouble;
    if (!(d >= (double)lo && d <= (double)hi) || d != floor(d)) return false;
    *out = (int64_t)d;
    return true;
}

bool clf__attention_tuning_parse(const char *text, int64_t max_wg, clf_att_tile *tiles, int *n,
                                 const char **why) {
    *n = 0;
    *why = "not JSON";
    cJSON *root = cJSON_Parse(text);
    if (!root) return false;
    bool ok = false;
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "tiles");
    if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, CLF_ATT_TUNING_FORMAT) != 0) {
        *why = "missing or unknown \"format\"";
    } else if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) < 1 ||
               cJSON_GetArraySize(list) > CLF_ATT_TILES_MAX) {
        *why = "\"tiles\" must be an array of 1 to 16 entries";
    } else {
        ok = true;
        const cJSON *e;
        cJSON_ArrayForEach(e, list) {
            clf_att_tile t;
            if (!cJSON_IsObject(e) || !read_int(e, "head_dim", 1, 256, &t.head_dim) ||
                !read_int(e, "QB", 1, 16, &t.qb) || !read_int(e, "BQ", 1, max_wg, &t.bq)) {
                *why = "bad entry in \"tiles\" (head_dim 1..256, QB 1..16, BQ 1..max work-group)";
                ok = false;
                break;
            }
            for (int i = 0; i < *n; i++)
                if (tiles[i].head_dim == t.head_dim) {
                    *why = "a head_dim appears twice in \"tiles\"";
                    ok = false;
                }
            if (!ok) break;
            tiles[(*n)++] = t;
        }
    }
    if (!ok) *n = 0;
    cJSON_Delete(root);
    return ok;
}

void clf__attention_tuning_init(clf_context *ctx) {
    ctx->tuning->n_att_tiles = 0;
    snprintf(ctx->tuning->att_source, sizeof(ctx->tuning->att_source), "defaults");
    char *path = clf__tuning_path(ctx, CLF_ATT_TUNING_KIND);
    char *text = path ? clf__read_text(path, 1 << 16) : NULL;
    const char *why = NULL;
    if (text) {
        if (clf__attention_tuning_parse(text, (int64_t)ctx->info.max_work_group_size,
                                        ctx->tuning->att_tiles, &ctx->tuning->n_att_tiles, &why))
            snprintf(ctx->tuning->att_source, sizeof(ctx->tuning->att_source), "file:%s", path);
        else /* present but unusable: say so, carry on with the defaults */
            clf__warn(ctx, "ignoring attention tuning file %s: %s", path, why);
    }
    free(text);
    free(path);
}

const char *clf_attention_tuning_source(const clf_context *ctx) {
    return ctx ? ctx->tuning->att_source : "";
}

bool clf__attention_tiles(const clf_context *ctx, int64_t dh, int64_t *qb, int64_t *bq) {
    const int iq = CLF_T_ATTENTION_QB, ib = CLF_T_ATTENTION_BQ;
    *qb = ctx->tunables[iq];
    *bq = ctx->tunables[ib];
    if (ctx->tunable_set[iq] || ctx->tunable_set[ib]) return false; /* explicit values win */
    for (int i = 0; i < ctx->tuning->n_att_tiles; i++)
        if (ctx->tuning->att_tiles[i].head_dim == dh) {
            *qb = ctx->tuning->att_tiles[i].qb;
            *bq = ctx->tuning->att_tiles[i].bq;
            return true;
        }
    return false;
}

clf_status clf_attention_tiles(const clf_context *ctx, int64_t head_dim, int64_t *qb, int64_t *bq,
                               int *tuned) {
    if (!ctx || !qb || !bq || head_dim < 1 || head_dim > 256) return CLF_ERROR_INVALID_ARGUMENT;
    const bool t = clf__attention_tiles(ctx, head_dim, qb, bq);
    if (tuned) *tuned = t;
    return CLF_SUCCESS;
}
