/*
 * clformer-generate — text generation with a decoder-only model (GPT-2, Llama, Mistral, Qwen2)
 * from a Hugging Face folder or a GGUF file on any OpenCL device.
 *
 *   clformer-generate --model DIR|FILE.gguf [--tokenizer FILE] [--device SPEC]
 *                     [--devices SPEC,SPEC[,...] [--split 3,1]] [--max-new-tokens N]
 *                     [--temperature T] [--top-k K] [--top-p P] [--repetition-penalty R]
 *                     [--seed S] [--ignore-eos] [--stats] [--print-ids] [--ids "1 2 3" | "prompt"]
 *   clformer-generate --model DIR --tokenize "text"
 *
 * Streams the generated text to standard output as it is produced (the prompt is not repeated).
 * The folder needs config.json and model.safetensors (or its shards); tokenizer.json for text
 * prompts and text output. A GGUF file keeps its stored weight types and brings its own
 * tokenizer (a byte-level BPE; --tokenizer gives a tokenizer.json instead).
 */
#include "clformer/clformer.h"
#include "../common/devices.h"
#include "pipeline_mpi.h"

#ifdef CLF_MPI
#include <mpi.h>
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* --stats: the weight matrices' storage types, e.g. "weights: 74 Q4_K (91.2 MB), 12 Q6_K". */
static void print_weights(const clf_lm *m) {
    int64_t n = 0;
    if (clf_lm_weights(m, NULL, 0, &n) != CLF_SUCCESS || n < 1) return;
    clf_lm_weight *w = malloc(sizeof(clf_lm_weight) * (size_t)n);
    if (!w || clf_lm_weights(m, w, n, &n) != CLF_SUCCESS) {
        free(w);
        return;
    }
    fprintf(stderr, "weights:");
    int first = 1;
    for (int64_t i = 0; i < n; i++) {
        int seen = 0; /* each type once, at its first tensor */
        for (int64_t j = 0; j < i && !seen; j++)
            seen = w[j].dtype == w[i].dtype;
        if (seen) continue;
        int64_t count = 0;
        double bytes = 0.0;
        for (int64_t j = i; j < n; j++)
            if (w[j].dtype == w[i].dtype) {
                count++;
                bytes += (double)w[j].bytes;
            }
        fprintf(stderr, "%s %lld %s (%.1f MB)", first ? "" : ",", (long long)count,
                clf_dtype_name(w[i].dtype), bytes / 1e6);
        first = 0;
    }
    fprintf(stderr, "\n");
    free(w);
}

/* --stats with --devices: each stage's device, layers and weight memory. */
static void print_stages(const clf_lm *m) {
    clf_stage st[CLI_MAX_STAGES];
    int64_t n = 0;
    if (clf_lm_stages(m, st, CLI_MAX_STAGES, &n) != CLF_SUCCESS) return;
    for (int64_t i = 0; i < n && i < CLI_MAX_STAGES; i++) {
        clf_device_info info;
        clf_context_device_info(st[i].context, &info);
        fprintf(stderr, "stage %lld: layers %lld .. %lld%s%s, %.1f MB of weights on %s\n",
                (long long)i, (long long)st[i].first_layer,
                (long long)(st[i].first_layer + st[i].layers - 1),
                st[i].embedding ? ", embedding" : "", st[i].head ? ", head" : "",
                (double)st[i].weight_bytes / 1e6, info.name);
    }
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: clformer-generate --model DIR|FILE.gguf [options] \"prompt\"\n"
            "  --model DIR              Hugging Face folder: config.json, model.safetensors (or\n"
            "                           shards), tokenizer.json (for text)\n"
            "  --model FILE.gguf        llama.cpp's format (llama, qwen2, gpt2; weights F32, F16,\n"
            "                           BF16, Q8_0, Q4_0, Q4_K, Q6_K kept as stored)\n"
            "  --tokenizer FILE         tokenizer.json (default: the folder's, or the GGUF\n"
            "                           file's own)\n"
            "  --devices SPEC,SPEC,...  split the model by layers over these devices (a pipeline;\n"
            "                           a spec twice: two contexts on one device)\n"
            "  --split 3,1              the devices' shares of the layers (default: their\n"
            "                           global memory)\n"
            "  --device SPEC            OpenCL device (gpu, cpu, an index, a name; default\n"
            "                           $CLF_DEVICE, else the first GPU, else the first CPU)\n"
            "  --max-new-tokens N       at most N new tokens (default 64)\n"
            "  --warmup                 generate once before the run that prints (--stats then\n"
            "                           times a run whose programs are built)\n"
            "  --batch N                generate for N copies of the prompt at once (default 1;\n"
            "                           N > 1 prints one line per sequence at the end)\n"
            "  under mpirun -np N (a build with -DCLF_MPI=ON): one pipeline stage per rank\n"
            "  --tensor-parallel        instead: every rank holds a part of every layer's\n"
            "                           heads and FFN columns; two all-reduces per layer\n"
            "  --micro-batches M        micro-batches in flight (default: one per rank)\n"
            "  --prefill-chunk C        prompt positions per pipeline message (default: about\n"
            "                           4 messages per rank in flight, at least 8 positions)\n"
            "  --timeout S              seconds a rank waits for another before it stops the\n"
            "                           job (default 300)\n"
            "  (--split gives the ranks' shares; --devices SPEC,... rank r's device)\n"
            "  --weights TYPE           the linear weights on the device: f32 (default), f16,\n"
            "                           bf16, q8_0, q4_0, q4_k or q6_k (quantized at load as\n"
            "                           clf_quantize does; math in fp32; a GGUF file's F32\n"
            "                           weights only)\n"
            "  --cache f32|f16          the KV cache (default f32)\n"
            "  --temperature T          0: greedy (default); > 0 samples\n"
            "  --top-k K, --top-p P     keep the K most likely / the smallest set of mass P\n"
            "  --repetition-penalty R   > 1 discourages repeated tokens (default 1)\n"
            "  --seed S                 sampling seed (default 0)\n"
            "  --ignore-eos             do not stop at the model's end-of-sequence token\n"
            "  --set NAME=V             a kernel tunable on every device (repeatable), e.g.\n"
            "                           linear.QX=2: decode 4- and 6-bit weights against x\n"
            "                           in int8 as llama.cpp does (faster, within\n"
            "                           sum |w| max|x_32| / 254 instead of / 65534)\n"
            "  --stats                  print the weights' types, prompt and generation tokens/s\n"
            "                           to stderr\n"
            "  --ids \"1 2 3\"            feed token ids instead of a text prompt\n"
            "  --print-ids              print the generated ids on one line instead of text\n"
            "  --tokenize \"text\"        print the ids of text as a prompt (with the template's\n"
            "                           special tokens) and exit\n"
            "  --help                   this text\n");
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct run {
    clf_bpe *tok;
    clf_bpe_stream *stream;
    int print_ids;
    int64_t produced;
    double t_first; /* when every sequence had its first token (the prefill's end) */
    int failed;
    int64_t batch, started; /* sequences, those with a token */
    unsigned char *has;     /* (batch) */
} run;

static int on_token(void *user, int64_t seq, int32_t token) {
    run *r = user;
    r->produced++;
    if (r->has && seq >= 0 && seq < r->batch && !r->has[seq]) {
        r->has[seq] = 1;
        if (++r->started == r->batch) r->t_first = now_s();
    }
    if (r->batch > 1) return 0; /* printed at the end */
    if (r->print_ids || !r->stream) return 0;
    char piece[1024];
    size_t len;
    if (clf_bpe_stream_next(r->stream, token, piece, sizeof(piece), &len) != CLF_SUCCESS) {
        r->failed = 1;
        return 1;
    }
    fwrite(piece, 1, len, stdout);
    fflush(stdout);
    return 0;
}

/* "1 2 3" -> ids (malloc'ed); -1 on a bad list. */
static int64_t parse_ids(const char *s, int32_t **out) {
    int64_t n = 0, cap = 16;
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)cap);
    while (ids && *s) {
        char *end;
        while (*s == ' ' || *s == ',' || *s == '\t')
            s++;
        if (!*s) break;
        const long v = strtol(s, &end, 10);
        if (end == s || v < 0 || v > INT32_MAX) {
            free(ids);
            return -1;
        }
        if (n == cap) {
            int32_t *g = realloc(ids, sizeof(int32_t) * (size_t)(cap *= 2));
            if (!g) {
                free(ids);
                return -1;
            }
            ids = g;
        }
        ids[n++] = (int32_t)v;
        s = end;
    }
    *out = ids;
    return ids ? n : -1;
}

static double num_arg(const char *opt, const char *v, int *bad) {
    char *end;
    const double x = strtod(v, &end);
    if (end == v || *end) {
        fprintf(stderr, "clformer-generate: %s needs a number, not '%s'\n", opt, v);
        *bad = 1;
    }
    return x;
}

/* N > 1 sequences: each on its own line at the end, ids or text. */
static int print_sequences(clf_bpe *tok, const int32_t *out, const int64_t *counts, int64_t n,
                           int64_t max_new, int print_ids) {
    for (int64_t b = 0; b < n; b++) {
        clf_bpe_stream *st = NULL;
        if (!print_ids && clf_bpe_stream_create(tok, 1, &st) != CLF_SUCCESS) return 1;
        for (int64_t i = 0; i < counts[b]; i++) {
            if (print_ids) {
                printf("%s%d", i ? " " : "", out[b * max_new + i]);
                continue;
            }
            char piece[1024];
            size_t len;
            if (clf_bpe_stream_next(st, out[b * max_new + i], piece, sizeof(piece), &len) !=
                CLF_SUCCESS) {
                clf_bpe_stream_free(st);
                return 1;
            }
            fwrite(piece, 1, len, stdout);
        }
        clf_bpe_stream_free(st);
        printf("\n");
    }
    return 0;
}

static int run_main(int argc, char **argv, int rank, int world);

int main(int argc, char **argv) {
    int rank = 0, world = 1;
#ifdef CLF_MPI
    /* MPI only under a launcher (mpirun, srun: their environment): run alone, the tool needs no
     * MPI runtime (a singleton MPI_Init would start Open MPI's daemon). */
    const int launched = getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") ||
                         getenv("PMI_SIZE") || getenv("PMI_RANK");
    if (launched) {
        MPI_Init(&argc, &argv);
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Comm_size(MPI_COMM_WORLD, &world);
    }
#endif
    const int rc = run_main(argc, argv, rank, world);
#ifdef CLF_MPI
    if (launched) {
        if (world > 1 && rc != 0) MPI_Abort(MPI_COMM_WORLD, rc); /* none may wait on this one */
        MPI_Finalize();
    }
#endif
    return rc;
}

static int run_main(int argc, char **argv, int rank, int world) {
    const char *model = NULL, *prompt = NULL, *ids_arg = NULL, *tokenize = NULL, *tok_path = NULL;
    int stats = 0, print_ids = 0, bad = 0;
    clf_generate_params gp = clf_generate_default_params();
    gp.max_new_tokens = 64;
    clf_load_params lp = clf_load_default_params();
    cli_devices dev = {0};
    gen_job job = {0};
    job.batch = 1;
    job.timeout = 300;
    for (int i = 1; i < argc && !bad; i++) {
        const char *a = argv[i];
        const int has = i + 1 < argc;
        if (strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--model") == 0 && has) {
            model = argv[++i];
        } else if (strcmp(a, "--tokenizer") == 0 && has) {
            tok_path = argv[++i];
        } else if (strcmp(a, "--device") == 0 && has) {
            dev.device = argv[++i];
        } else if (strcmp(a, "--devices") == 0 && has) {
            dev.devices = argv[++i];
        } else if (strcmp(a, "--split") == 0 && has) {
            dev.split = argv[++i];
        } else if (strcmp(a, "--batch") == 0 && has) {
            job.batch = (int64_t)num_arg(a, argv[++i], &bad);
        } else if (strcmp(a, "--tensor-parallel") == 0) {
            job.tp = 1;
        } else if (strcmp(a, "--micro-batches") == 0 && has) {
            job.micro = (int64_t)num_arg(a, argv[++i], &bad);
        } else if (strcmp(a, "--warmup") == 0) {
            job.warmup = 1;
        } else if (strcmp(a, "--prefill-chunk") == 0 && has) {
            job.chunk = (int64_t)num_arg(a, argv[++i], &bad);
        } else if (strcmp(a, "--timeout") == 0 && has) {
            job.timeout = num_arg(a, argv[++i], &bad);
        } else if (strcmp(a, "--max-new-tokens") == 0 && has) {
            gp.max_new_tokens = (int64_t)num_arg(a, argv[++i], &bad);
        } else if (strcmp(a, "--temperature") == 0 && has) {
            gp.sampling.temperature = (float)num_arg(a, argv[++i], &bad);
        } else if (strcmp(a, "--top-k") == 0 && has) {
            gp.sampling.top_k = (int64_t)num_arg(a, argv[++i], &bad);
        } else if (strcmp(a, "--top-p") == 0 && has) {
            gp.sampling.top_p = (float)num_arg(a, argv[++i], &bad);
        } else if (strcmp(a, "--repetition-penalty") == 0 && has) {
            gp.sampling.repetition_penalty = (float)num_arg(a, argv[++i], &bad);
        } else if (strcmp(a, "--seed") == 0 && has) {
            gp.sampling.seed = (uint64_t)num_arg(a, argv[++i], &bad);
        } else if ((strcmp(a, "--weights") == 0 || strcmp(a, "--cache") == 0) && has) {
            const char *v = argv[++i];
            const int w = a[2] == 'w';
            clf_dtype *dt = w ? &lp.weight_dtype : &lp.cache_dtype;
            if (clf_dtype_from_name(v, dt) != CLF_SUCCESS) { /* the loader refuses other types */
                fprintf(stderr, "clformer-generate: %s takes %s, not '%s'\n", a,
                        w ? "f32, f16, bf16, q8_0, q4_0, q4_k or q6_k" : "f32 or f16", v);
                bad = 1;
            }
        } else if (strcmp(a, "--ids") == 0 && has) {
            ids_arg = argv[++i];
        } else if (strcmp(a, "--tokenize") == 0 && has) {
            tokenize = argv[++i];
        } else if (strcmp(a, "--ignore-eos") == 0) {
            gp.ignore_eos = 1;
        } else if (strcmp(a, "--set") == 0 && has) {
            if (dev.nsets == CLI_MAX_SETS) {
                fprintf(stderr, "clformer-generate: at most %d --set\n", CLI_MAX_SETS);
                bad = 1;
            } else {
                dev.sets[dev.nsets++] = argv[++i];
            }
        } else if (strcmp(a, "--stats") == 0) {
            stats = 1;
        } else if (strcmp(a, "--print-ids") == 0) {
            print_ids = 1;
        } else if (a[0] == '-' && a[1] == '-') {
            fprintf(stderr, "clformer-generate: unknown option '%s' (or its value is missing)\n",
                    a);
            bad = 1;
        } else if (!prompt) {
            prompt = a;
        } else {
            fprintf(stderr, "clformer-generate: one prompt only (quote it)\n");
            bad = 1;
        }
    }
    if (!bad && !model) {
        fprintf(stderr, "clformer-generate: --model DIR is required\n");
        bad = 1;
    }
    if (!bad && !tokenize && !!prompt == !!ids_arg) {
        fprintf(stderr, "clformer-generate: give a prompt or --ids, not both or neither\n");
        bad = 1;
    }
    if (!bad && (job.batch < 1 || job.micro < 0 || job.chunk < 0 || !(job.timeout > 0))) {
        fprintf(stderr, "clformer-generate: --batch >= 1, --micro-batches >= 0, --prefill-chunk "
                        ">= 0 and --timeout > 0 are required\n");
        bad = 1;
    }
    if (bad) {
        if (rank == 0) usage(stderr);
        return 2;
    }
    if (world > 1 && tokenize && rank > 0) return 0; /* rank 0 alone tokenizes */
    job.model = model;
    job.lp = lp;
    job.gp = gp;
    job.device = dev.device;
    job.devices = dev.devices;
    job.sets = dev.sets;
    job.nsets = dev.nsets;
    job.split = dev.split;
    job.stats = stats;
    if (world > 1 && rank > 0) return mpi_generate(&job, NULL, 0, NULL, NULL);
    /* the tokenizer, when there is one (required for text in or out): --tokenizer's, else the
     * folder's tokenizer.json or the GGUF file's own */
    char path[4096];
    struct stat sb;
    const int gguf = !tok_path && stat(model, &sb) == 0 && S_ISREG(sb.st_mode);
    snprintf(path, sizeof(path),
             tok_path ? "%s"
             : gguf   ? "%s"
                      : "%s/tokenizer.json",
             tok_path ? tok_path : model);
    clf_bpe *tok = NULL;
    clf_error msg = {""};
    const int need_tok = tokenize || prompt || !print_ids;
    int rc = 1;
    int32_t *ids = NULL, *out = NULL;
    int64_t n = 0;
    clf_context *ctx = NULL;
    clf_lm *m = NULL;
    run r = {.print_ids = print_ids};
    clf_status ts = CLF_ERROR_NOT_FOUND;
    if (gguf)
        ts = clf_bpe_load_gguf(path, &tok, &msg);
    else if (stat(path, &sb) == 0)
        ts = clf_bpe_load(path, &tok, &msg);
    if (ts != CLF_SUCCESS && ts != CLF_ERROR_NOT_FOUND && need_tok) {
        fprintf(stderr, "clformer-generate: %s%s\n", msg.message,
                gguf ? " (give a tokenizer.json with --tokenizer)" : "");
        goto done;
    }
    if (!tok && need_tok) {
        fprintf(stderr,
                "clformer-generate: %s %s: a text prompt, --tokenize and text output need a "
                "tokenizer (--tokenizer FILE; or use --ids and --print-ids)\n",
                path, gguf ? "has no tokenizer" : "is missing");
        goto done;
    }
    r.tok = tok;
    const char *text = tokenize ? tokenize : prompt;
    if (text) {
        clf_bpe_encode(tok, text, 1, NULL, 0, &n, NULL);
        ids = malloc(sizeof(int32_t) * (size_t)(n + 1));
        if (!ids || clf_bpe_encode(tok, text, 1, ids, n, &n, &msg) != CLF_SUCCESS) {
            fprintf(stderr, "clformer-generate: %s\n", msg.message);
            goto done;
        }
        if (tokenize) {
            for (int64_t i = 0; i < n; i++)
                printf("%s%d", i ? " " : "", ids[i]);
            printf("\n");
            rc = 0;
            goto done;
        }
    } else if ((n = parse_ids(ids_arg, &ids)) < 1) {
        fprintf(stderr, "clformer-generate: --ids needs space-separated token ids, not '%s'\n",
                ids_arg);
        rc = 2;
        goto done;
    }
    const int64_t B = job.batch, max_new = gp.max_new_tokens > 0 ? gp.max_new_tokens : 1;
    int64_t *counts = calloc((size_t)B, sizeof(int64_t));
    out = malloc(sizeof(int32_t) * (size_t)(B * max_new));
    if (!counts || !out) {
        free(counts);
        goto done;
    }
    if (tok && !print_ids && B == 1 && clf_bpe_stream_create(tok, 1, &r.stream) != CLF_SUCCESS) {
        free(counts);
        goto done;
    }
    /* one sequence streams its tokens as they come; the callback also times the prefill */
    r.batch = B;
    r.has = calloc((size_t)B, 1);
    if (!r.has) {
        free(counts);
        goto done;
    }
    job.gp.on_token = gp.on_token = on_token;
    job.gp.user = gp.user = &r;
    if (world > 1) {
        rc = mpi_generate(&job, ids, n, out, counts);
        if (rc == 0 && B > 1)
            rc = print_sequences(tok, out, counts, B, max_new, print_ids);
        else if (rc == 0 && print_ids)
            for (int64_t i = 0; i < counts[0]; i++)
                printf("%s%d", i ? " " : "", out[i]);
        if (rc == 0 && B == 1) printf("\n");
        free(counts);
        goto done;
    }
    if ((rc = cli_devices_open(&dev, "clformer-generate")) != 0) {
        free(counts);
        goto done;
    }
    rc = 1;
    ctx = dev.ctx[0];
    if (clf_lm_load_split(dev.ctx, dev.n, cli_devices_shares(&dev), model, &lp, &m) !=
        CLF_SUCCESS) {
        fprintf(stderr, "clformer-generate: %s\n", clf_context_last_error(ctx));
        goto done;
    }
    if (stats) {
        print_weights(m);
        if (dev.n > 1) print_stages(m);
    }
    const int32_t **prompts = malloc(sizeof(int32_t *) * (size_t)B);
    int64_t *lens = malloc(sizeof(int64_t) * (size_t)B);
    if (!prompts || !lens) {
        free(prompts);
        free(lens);
        free(counts);
        goto done;
    }
    for (int64_t b = 0; b < B; b++) {
        prompts[b] = ids;
        lens[b] = n;
    }
    clf_status gs = CLF_SUCCESS;
    if (job.warmup) { /* the same run, untimed and unprinted: every program gets built */
        clf_generate_params quiet = gp;
        quiet.on_token = NULL;
        gs = clf_lm_generate(m, prompts, lens, B, &quiet, out, counts);
    }
    const double t0 = now_s();
    if (gs == CLF_SUCCESS) gs = clf_lm_generate(m, prompts, lens, B, &gp, out, counts);
    const double t1 = now_s();
    free(prompts);
    free(lens);
    if (gs != CLF_SUCCESS) {
        fprintf(stderr, "\nclformer-generate: %s\n", clf_context_last_error(ctx));
        free(counts);
        goto done;
    }
    if (r.failed) {
        fprintf(stderr, "\nclformer-generate: a token could not be decoded\n");
        free(counts);
        goto done;
    }
    int64_t count = 0;
    for (int64_t b = 0; b < B; b++)
        count += counts[b];
    if (B > 1) {
        if (print_sequences(tok, out, counts, B, max_new, print_ids) != 0) {
            free(counts);
            goto done;
        }
    } else {
        if (print_ids)
            for (int64_t i = 0; i < count; i++)
                printf("%s%d", i ? " " : "", out[i]);
        printf("\n");
    }
    free(counts);
    if (stats) { /* the prefill: to every sequence's first token; then the rest */
        const double first = r.started == B ? r.t_first : t1, gen = t1 - first;
        if (B == 1)
            fprintf(stderr, "prompt: %lld tokens, %.1f tokens/s (to the first new token)\n",
                    (long long)n, first > t0 ? (double)n / (first - t0) : 0.0);
        else
            fprintf(stderr, "prompt: %lld x %lld tokens, %.1f tokens/s (to the first new tokens)\n",
                    (long long)B, (long long)n, first > t0 ? (double)(B * n) / (first - t0) : 0.0);
        fprintf(stderr, "generated: %lld tokens, %.1f tokens/s\n", (long long)count,
                count > B && gen > 0 ? (double)(count - B) / gen : 0.0);
    }
    rc = 0;
done:
    clf_bpe_stream_free(r.stream);
    free(r.has);
    free(out);
    free(ids);
    clf_lm_free(m);
    cli_devices_close(&dev);
    clf_bpe_free(tok);
    return rc;
}
