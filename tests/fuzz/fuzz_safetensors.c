/* libFuzzer target: the safetensors header validator (clf__safetensors_check) on any bytes. An
 * accepted file must describe tensors that lie inside it; a refusal always says why. */
#include "../../src/internal.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    clf_error why = {""};
    size_t n = 0;
    clf_status rc = clf__safetensors_check(data, size, &n, &why);
    if (rc != CLF_SUCCESS && why.message[0] == '\0') abort();
    if (rc == CLF_SUCCESS && n > size) abort(); /* every tensor needs a header entry */
    return 0;
}
