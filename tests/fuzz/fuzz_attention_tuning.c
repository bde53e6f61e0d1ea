/* libFuzzer target: the attention tuning file parser (clf__attention_tuning_parse) on any bytes:
 * a refusal says why and yields no tiles; an acceptance yields 1..16 tiles within range. */
#include "../../src/internal.h"
#include "fuzz_util.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fuzz_text(data, size);
    if (!text) return 0;
    const char *why = NULL;
    clf_att_tile tiles[CLF_ATT_TILES_MAX];
    int n = -1;
    if (clf__attention_tuning_parse(text, 256, tiles, &n, &why)) {
        if (n < 1 || n > CLF_ATT_TILES_MAX) abort();
        for (int i = 0; i < n; i++)
            if (tiles[i].head_dim < 1 || tiles[i].head_dim > 256 || tiles[i].qb < 1 ||
                tiles[i].qb > 16 || tiles[i].bq < 1 || tiles[i].bq > 256)
                abort();
    } else if (!why || n != 0) {
        abort();
    }
    free(text);
    return 0;
}
