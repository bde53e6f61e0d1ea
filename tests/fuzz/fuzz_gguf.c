/* libFuzzer target: the GGUF parser (clf__gguf_parse) on any bytes. An accepted file must describe
 * tensors inside it; a refusal always says why; nothing leaks (ASan). */
#include "../../src/internal.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    clf_gguf *g = malloc(clf__gguf_struct_size());
    if (!g) return 0;
    char why[512] = "";
    clf_status rc = clf__gguf_parse(data, size, g, why, sizeof(why));
    if (rc != CLF_SUCCESS && why[0] == '\0') abort();
    if (rc == CLF_SUCCESS) {
        for (size_t i = 0; i < clf_gguf_tensor_count(g); i++) {
            const clf_gguf_tensor *t = clf_gguf_tensor_at(g, i);
            if (t->offset > size || t->bytes > size - t->offset) abort();
            if (clf_gguf_tensor_find(g, t->name) == NULL) abort();
        }
        for (size_t i = 0; i < clf_gguf_kv_count(g); i++) { /* every value reads back */
            const char *key = clf_gguf_key(g, i), *s;
            size_t len;
            int64_t v;
            double f;
            clf_gguf_type et;
            uint64_t n;
            (void)clf_gguf_get_int(g, key, &v, NULL);
            (void)clf_gguf_get_float(g, key, &f, NULL);
            if (clf_gguf_get_string(g, key, &s, &len, NULL) == CLF_SUCCESS && len > size) abort();
            if (clf_gguf_get_array(g, key, &et, &n, NULL) == CLF_SUCCESS && n > 0) {
                (void)clf_gguf_array_string(g, key, n - 1, &s, &len, NULL);
                (void)clf_gguf_array_float(g, key, n - 1, &f, NULL);
            }
        }
        clf__gguf_release(g);
    }
    free(g);
    return 0;
}
