/* libFuzzer target: the device-spec parser (clf__device_match) on any byte string. */
#include "../../src/internal.h"
#include "fuzz_util.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static clf_device_info list[3];
    static int init = 0;
    if (!init) {
        const char *names[3] = {"pthread-znver4-AMD EPYC", "NVIDIA H200", "Intel(R) Arc(TM) A770"};
        const clf_device_type types[3] = {CLF_DEVICE_CPU, CLF_DEVICE_GPU, CLF_DEVICE_GPU};
        for (uint32_t i = 0; i < 3; i++) {
            memset(&list[i], 0, sizeof(list[i]));
            list[i].global_index = i;
            list[i].platform_index = i;
            list[i].type = types[i];
            strcpy(list[i].name, names[i]);
            strcpy(list[i].vendor, "vendor");
            strcpy(list[i].platform_name, "platform");
        }
        init = 1;
    }
    char *spec = fuzz_text(data, size);
    if (!spec) return 0;
    uint32_t idx = 1234;
    clf_status st = clf__device_match(list, 3, spec, &idx);
    if (st == CLF_SUCCESS && idx >= 3) abort(); /* a match must name an existing device */
    if (st != CLF_SUCCESS && st != CLF_ERROR_NO_DEVICE && st != CLF_ERROR_INVALID_ARGUMENT) abort();
    free(spec);
    return 0;
}
