/*
 * clformer-bench — how fast is this device, and how close do clformer's ops come to its limits?
 *
 *   clformer-bench [--quick] [--device SPEC] [--ops LIST] [--json FILE] [--csv FILE]
 *   clformer-bench --list
 *
 * Measures the device's peaks with its own kernels (copy bandwidth, FMA rate, transfers, launch
 * latency, cold vs warm program start), then every op as a fraction of the peak that bounds it.
 * Progress goes to stderr, the table to stdout.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void usage(FILE *f) {
    fprintf(f, "usage: clformer-bench [options]\n"
               "  --list          list OpenCL devices and exit\n"
               "  --device SPEC   gpu, cpu, an index, platform:device or a name substring\n"
               "                  (default: $CLF_DEVICE, else the first GPU, else the first CPU)\n"
               "  --quick         short run, every op still covered (about a minute on 2 cores)\n"
               "  --ops LIST      comma-separated ops: softmax,layernorm,add_layernorm,\n"
               "                  add_rmsnorm,rope,posenc,embedding_posenc,bias_gelu,swiglu,add,\n"
               "                  gemm, linear, gemv, gemv_f16, gemv_q8_0, gemv_q4_0, gemv_q4_k,\n"
               "                  gemv_q6_k,\n"
               "                  attention_tiled,\n"
               "                  attention_naive, attention_decode, attention_decode_f16,\n"
               "                  attention_gqa, attention_local,\n"
               "                  encoder_layer, decoder_step, llm_prefill, llm_decode,\n"
               "                  llm_prefill_f16, llm_decode_f16, llm_prefill_q8_0,\n"
               "                  llm_decode_q8_0, llm_prefill_q4_0, llm_decode_q4_0,\n"
               "                  llm_prefill_q4_k, llm_decode_q4_k,\n"
               "                  model_minilm,\n"
               "                  model_minilm_f16 ($CLF_MODEL_DIR, else models/all-MiniLM-L6-v2)\n"
               "  --all-devices   every device in turn, each with its own ceilings (simulators\n"
               "                  are left out; RUSTICL_ENABLE=llvmpipe adds rusticl's device)\n"
               "  --set NAME=V    override a kernel tunable (repeatable), e.g. softmax.WG=8\n"
               "  --profile       time every kernel (each launch waits for the last, so the\n"
               "                  records run slower) and print the device time per kernel\n"
               "                  of each part of the run, and of one decoding step\n"
               "  --json FILE     write the results as JSON\n"
               "  --csv FILE      write the op results as CSV\n"
               "  --plot FILE     write a roofline of every op as SVG\n"
               "  --compare BASE  print each record's ratio to a saved JSON run, flag regressions\n"
               "  --threshold R   a regression is a speed ratio below R (default 0.8)\n"
               "  --floor OP=PCT  fail (exit 1) unless record OP reaches PCT %% of its roof,\n"
               "                  the peak measured alongside (repeatable; a speed gate that\n"
               "                  holds across machines, unlike a saved baseline)\n"
               "  --compare-only CUR BASE  compare two saved JSON runs, measure nothing\n"
               "  --help          this text\n");
}

static int list_devices(void) {
    uint32_t n = 0;
    clf_status st = clf_device_list(NULL, 0, &n);
    if (st != CLF_SUCCESS) {
        fprintf(stderr, "clformer-bench: listing devices: %s\n", clf_strerror(st));
        return 1;
    }
    if (n == 0) {
        printf("no OpenCL device found\n");
        return 1;
    }
    clf_device_info *d = calloc(n, sizeof(*d));
    if (!d) return 1;
    clf_device_list(d, n, &n);
    for (uint32_t i = 0; i < n; i++) {
        printf("[%u] %u:%u %s  %s (%s)\n", d[i].global_index, d[i].platform_index,
               d[i].device_index,
               d[i].type == CLF_DEVICE_GPU   ? "gpu"
               : d[i].type == CLF_DEVICE_CPU ? "cpu"
                                             : "other",
               d[i].name, d[i].platform_name);
        printf("      vendor %s, driver %s, %s, %u CUs @ %u MHz, %.1f GiB global (max alloc %.1f "
               "GiB), "
               "%.0f KiB local (%s), max work-group %llu, float vector %u/%u, fp16 %s, fp64 %s, "
               "sub-groups %s, fma %s\n",
               d[i].vendor, d[i].driver_version, d[i].opencl_c_version, d[i].compute_units,
               d[i].clock_mhz, (double)d[i].global_mem_bytes / (1 << 30),
               (double)d[i].max_alloc_bytes / (1 << 30), (double)d[i].local_mem_bytes / 1024,
               d[i].local_mem_dedicated ? "dedicated" : "global",
               (unsigned long long)d[i].max_work_group_size, d[i].preferred_vector_width_float,
               d[i].native_vector_width_float, d[i].has_fp16 ? "yes" : "no",
               d[i].has_fp64 ? "yes" : "no", d[i].has_subgroups ? "yes" : "no",
               d[i].has_fma ? "yes" : "no");
    }
    free(d);
    return 0;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* Fails early on an output path that cannot be written. */
static int check_writable(const char *path) {
    if (!path) return 0;
    FILE *f = fopen(path, "a");
    if (!f) {
        fprintf(stderr, "clformer-bench: cannot write output file '%s'\n", path);
        return 1;
    }
    fclose(f);
    return 0;
}

/* With --all-devices on several devices the records go to indexed files: the empty file that
 * check_writable left under the plain name goes. */
static void remove_if_empty(const char *path) {
    struct stat sb;
    if (path && stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size == 0) remove(path);
}

/* Measures cold and warm start in a child process whose PoCL kernel cache and clformer program
 * cache start empty (PoCL reads POCL_CACHE_DIR once per process), so this process keeps the
 * user's warm caches (CLBlast's kernels take seconds each to compile on PoCL). */
static int start_times_in_child(bench_opts *o, bench_peaks *p) {
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0) {
        fprintf(stderr, "clformer-bench: cannot find its own executable\n");
        return 1;
    }
    self[n] = '\0';
    int fd[2];
    if (pipe(fd) != 0) return 1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
        dup2(fd[1], STDOUT_FILENO);
        close(fd[0]);
        close(fd[1]);
        char *args[6] = {self, "--start-child", (char *)o->tmp_dir, NULL, NULL, NULL};
        if (o->spec) {
            args[3] = "--device";
            args[4] = (char *)o->spec;
        }
        execv(self, args);
        _exit(127);
    }
    close(fd[1]);
    char buf[256] = "";
    FILE *f = fdopen(fd[0], "r");
    int got = f && fgets(buf, sizeof(buf), f) != NULL;
    if (f) fclose(f);
    int status = 0;
    waitpid(pid, &status, 0);
    if (!got || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
        sscanf(buf, "%lf %lf", &p->cold_start_ms, &p->warm_start_ms) != 2) {
        fprintf(stderr, "clformer-bench: the start-up measurement failed\n");
        return 1;
    }
    return 0;
}

typedef struct cli {
    bench_opts o;
    const char *json, *csv, *svg, *compare;
    double threshold;
    const char *sets[32];
    int n_sets;
    const char *floors[16];
    int n_floors;
} cli;

/* "out.json" + 2 -> "out.2.json" (for --all-devices); NULL stays NULL. */
static const char *indexed(const char *path, int index, int many, char *buf, size_t size) {
    if (!path || !many) return path;
    const char *dot = strrchr(path, '.');
    const char *slash = strrchr(path, '/');
    if (!dot || (slash && dot < slash))
        snprintf(buf, size, "%s.%d", path, index);
    else
        snprintf(buf, size, "%.*s.%d%s", (int)(dot - path), path, index, dot);
    return buf;
}

/* The whole benchmark on one device. */
static int run_device(cli *c, const char *spec, const char *json, const char *csv,
                      const char *svg) {
    bench_opts o = c->o;
    o.spec = spec;
    int rc = 1;
    clf_context *ctx = NULL;
    bench_peaks peaks;
    bench_roof roof;
    bench_results results = {0}, base = {0};
    memset(&peaks, 0, sizeof(peaks));
    memset(&roof, 0, sizeof(roof));
    clf_error msg = {""};
    clf_context_params params = clf_context_default_params();
    params.device_spec = spec;
    params.error = &msg;
    if (c->compare && bench_load_results(c->compare, &base)) goto done;
    /* First, with CLBlast's own GEMM parameters (before any override in this process). */
    params.gemm_tuning = 0;
    if (clf_context_create(&ctx, &params) != CLF_SUCCESS) {
        fprintf(stderr, "clformer-bench: %s\n", msg.message);
        goto done;
    }
    if (bench_gemm_run(ctx, &o, 0, &results)) goto done;
    clf_context_free(ctx);
    ctx = NULL;
    if (start_times_in_child(&o, &peaks)) goto done;
    params.gemm_tuning = 1;
    params.enable_profiling = o.profile;
    if (clf_context_create(&ctx, &params) != CLF_SUCCESS) {
        fprintf(stderr, "clformer-bench: %s\n", msg.message);
        goto done;
    }
    if (clf_context_last_warning(ctx)[0])
        fprintf(stderr, "clformer-bench: warning: %s\n", clf_context_last_warning(ctx));
    for (int i = 0; i < c->n_sets; i++) {
        char name[128];
        const char *eq = strchr(c->sets[i], '=');
        snprintf(name, sizeof(name), "%.*s", (int)(eq - c->sets[i]), c->sets[i]);
        char *end = NULL;
        long long v = strtoll(eq + 1, &end, 10);
        if (!end || *end || clf_context_set_tunable(ctx, name, v) != CLF_SUCCESS) {
            fprintf(stderr, "clformer-bench: --set %s: %s\n", c->sets[i],
                    clf_context_last_error(ctx));
            goto done;
        }
    }
    clf_device_info info;
    clf_context_device_info(ctx, &info);
    bench_progress("device: %s (%s)", info.name, info.platform_name);
    if (bench_peaks_measure(ctx, &o, &peaks)) goto done;
    if (bench_roof_init(ctx, &peaks, &roof)) goto done;
    o.roof = &roof;
    bench_profile_report(ctx, &o, "ceilings", 0, 0);
    if (bench_ops_run(ctx, &o, &peaks, &results)) goto done;
    bench_profile_report(ctx, &o, "row ops", 0, 0);
    if (bench_gemm_run(ctx, &o, 1, &results)) goto done;
    if (bench_linear_run(ctx, &o, &results)) goto done;
    bench_profile_report(ctx, &o, "gemm and linear", 0, 0);
    if (bench_attention_run(ctx, &o, &results)) goto done;
    bench_profile_report(ctx, &o, "attention", 0, 0);
    if (bench_model_run(ctx, &o, &results)) goto done;
    bench_profile_report(ctx, &o, "models", 0, 0);
    if (bench_llm_run(ctx, &o, &results)) goto done;
    bench_gemm_finish(&peaks, &results);
    bench_print_table(&info, &peaks, &results);
    if (c->compare) bench_compare_results(&results, &base, c->threshold, stdout);
    if (json && bench_write_json(json, &info, &peaks, &results)) goto done;
    if (csv && bench_write_csv(csv, &results)) goto done;
    if (svg && bench_write_svg(svg, &info, &peaks, &results)) goto done;
    rc = c->n_floors && bench_check_floors(&results, c->floors, c->n_floors, stdout) ? 1 : 0;
done:
    bench_roof_free(&roof);
    clf_context_free(ctx);
    free(results.items);
    free(base.items);
    return rc;
}

int main(int argc, char **argv) {
    cli c;
    memset(&c, 0, sizeof(c));
    c.threshold = 0.8;
    int list = 0, all = 0;
    const char *child_dir = NULL, *only_cur = NULL, *only_base = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--list") == 0)
            list = 1;
        else if (strcmp(a, "--quick") == 0)
            c.o.quick = 1;
        else if (strcmp(a, "--profile") == 0)
            c.o.profile = 1;
        else if (strcmp(a, "--all-devices") == 0)
            all = 1;
        else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (!v) {
            fprintf(stderr, "clformer-bench: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return 2;
        } else if (strcmp(a, "--device") == 0)
            c.o.spec = argv[++i];
        else if (strcmp(a, "--json") == 0)
            c.json = argv[++i];
        else if (strcmp(a, "--csv") == 0)
            c.csv = argv[++i];
        else if (strcmp(a, "--plot") == 0)
            c.svg = argv[++i];
        else if (strcmp(a, "--ops") == 0)
            c.o.ops = argv[++i];
        else if (strcmp(a, "--compare") == 0)
            c.compare = argv[++i];
        else if (strcmp(a, "--start-child") == 0)
            child_dir = argv[++i];
        else if (strcmp(a, "--threshold") == 0) {
            c.threshold = atof(argv[++i]);
            if (!(c.threshold > 0)) {
                fprintf(stderr, "clformer-bench: --threshold must be > 0\n");
                return 2;
            }
        } else if (strcmp(a, "--compare-only") == 0 && i + 2 < argc) {
            only_cur = argv[++i];
            only_base = argv[++i];
        } else if (strcmp(a, "--set") == 0) {
            if (c.n_sets == 32 || !strchr(v, '=')) {
                fprintf(stderr, "clformer-bench: --set takes NAME=VALUE (at most 32)\n");
                return 2;
            }
            c.sets[c.n_sets++] = argv[++i];
        } else if (strcmp(a, "--floor") == 0) {
            const char *eq = strchr(v, '=');
            char *end = NULL;
            if (c.n_floors == 16 || !eq || eq == v || !(strtod(eq + 1, &end) > 0) || *end) {
                fprintf(stderr, "clformer-bench: --floor takes OP=PCT, PCT > 0 (at most 16)\n");
                return 2;
            }
            c.floors[c.n_floors++] = argv[++i];
        } else {
            fprintf(stderr, "clformer-bench: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (list) return list_devices();
    if (only_cur) { /* compare two saved runs, no measurement */
        bench_results cur, base;
        if (bench_load_results(only_cur, &cur)) return 1;
        if (bench_load_results(only_base, &base)) {
            free(cur.items);
            return 1;
        }
        bench_compare_results(&cur, &base, c.threshold, stdout);
        free(cur.items);
        free(base.items);
        return 0;
    }
    if (child_dir) { /* internal: the cold/warm start measurement, in a fresh process */
        char pocl[600];
        snprintf(pocl, sizeof(pocl), "%s/pocl-cache", child_dir);
        setenv("POCL_CACHE_DIR", pocl, 1);
        bench_peaks p;
        c.o.tmp_dir = child_dir;
        if (bench_start_times(&c.o, &p)) return 1;
        printf("%.3f %.3f\n", p.cold_start_ms, p.warm_start_ms);
        return 0;
    }
    if (check_writable(c.json) || check_writable(c.csv) || check_writable(c.svg)) return 1;
    c.o.samples = c.o.quick ? 7 : 21;
    char tmp[] = "/tmp/clformer-bench-XXXXXX";
    if (!mkdtemp(tmp)) {
        fprintf(stderr, "clformer-bench: cannot create a scratch folder in /tmp\n");
        return 1;
    }
    c.o.tmp_dir = tmp;
    int rc = 0;
    if (!all) {
        rc = run_device(&c, c.o.spec, c.json, c.csv, c.svg);
    } else {
        uint32_t n = 0;
        if (clf_device_list(NULL, 0, &n) != CLF_SUCCESS || n == 0) {
            fprintf(stderr, "clformer-bench: no OpenCL device found\n");
            rc = 1;
        }
        clf_device_info *infos = n ? calloc(n, sizeof(*infos)) : NULL;
        if (n && (!infos || clf_device_list(infos, n, &n) != CLF_SUCCESS)) {
            fprintf(stderr, "clformer-bench: cannot list the OpenCL devices\n");
            rc = 1;
            n = 0;
        }
        for (uint32_t d = 0; d < n; d++) {
            char spec[16], bj[1024], bc[1024], bs[1024];
            snprintf(spec, sizeof(spec), "%u", d);
            if (infos[d].is_simulator) { /* timings of a simulator say nothing */
                printf(
                    "%s== device %u (%s): left out, a simulator (bench it with --device %u) ==\n",
                    d ? "\n" : "", d, infos[d].name, d);
                continue;
            }
            printf("%s== device %u ==\n", d ? "\n" : "", d);
            rc |= run_device(&c, spec, indexed(c.json, (int)d, n > 1, bj, sizeof(bj)),
                             indexed(c.csv, (int)d, n > 1, bc, sizeof(bc)),
                             indexed(c.svg, (int)d, n > 1, bs, sizeof(bs)));
        }
        free(infos);
        if (n > 1) {
            remove_if_empty(c.json);
            remove_if_empty(c.csv);
            remove_if_empty(c.svg);
        }
    }
    nftw(tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return rc;
}
