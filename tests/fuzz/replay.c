/* Replays a fuzz corpus through a libFuzzer target without libFuzzer (CI's regression test):
 *   replay DIR...   runs LLVMFuzzerTestOneInput on every file of each folder. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv) {
    int files = 0;
    for (int a = 1; a < argc; a++) {
        DIR *d = opendir(argv[a]);
        if (!d) {
            fprintf(stderr, "replay: cannot open %s\n", argv[a]);
            return 1;
        }
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.') continue;
            char path[4096];
            snprintf(path, sizeof(path), "%s/%s", argv[a], e->d_name);
            FILE *f = fopen(path, "rb");
            if (!f) continue;
            fseek(f, 0, SEEK_END);
            long n = ftell(f);
            fseek(f, 0, SEEK_SET);
            uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
            size_t got = buf ? fread(buf, 1, (size_t)(n > 0 ? n : 0), f) : 0;
            fclose(f);
            LLVMFuzzerTestOneInput(buf, got);
            free(buf);
            files++;
        }
        closedir(d);
    }
    printf("replay: %d inputs, no crash\n", files);
    return files > 0 ? 0 : 1;
}
