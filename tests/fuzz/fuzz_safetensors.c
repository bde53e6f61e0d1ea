/* libFuzzer target: the safetensors header validator (clf__safetensors_check) on any bytes. An
 * accepted file must describe tensors that lie inside it; a refusal always says why. */
#include "../../src/internal.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char why[512];
    why[0] = '\0';
    size_t n = 0;
    clf_status rc = clf__safetensors_check(data, size, &n, why, sizeof(why));
    if (rc != CLF_SUCCESS && why[0] == '\0') abort();
    if (rc == CLF_SUCCESS && n > size) abort(); /* every tensor needs a header entry */
    return 0;
}
