/* libFuzzer target: the GEMM tuning file parser (clf__gemm_tuning_parse) on any bytes. */
#include "../../src/internal.h"
#include "fuzz_util.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fuzz_text(data, size);
    if (!text) return 0;
    const char *why = NULL;
    if (!clf__gemm_tuning_parse(text, &why) && !why) abort(); /* a refusal always says why */
    free(text);
    return 0;
}
