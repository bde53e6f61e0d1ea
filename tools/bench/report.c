/*
 * report.c — clformer-bench output: a table on stdout, JSON (cJSON) and CSV files.
 */
#include "bench.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>

static const char *type_name(clf_device_type t) {
    return t == CLF_DEVICE_GPU           ? "gpu"
           : t == CLF_DEVICE_CPU         ? "cpu"
           : t == CLF_DEVICE_ACCELERATOR ? "accelerator"
                                         : "other";
}

static void shape_str(const bench_result *r, char *buf, size_t size) {
    size_t off = 0;
    for (int i = 0; i < r->ndim && off < size; i++)
        off +=
            (size_t)snprintf(buf + off, size - off, "%s%lld", i ? "x" : "", (long long)r->shape[i]);
}

void bench_print_table(const clf_device_info *d, const bench_peaks *p, const bench_results *r) {
    printf("device: %s (%s, %s, driver %s, %u compute units)\n", d->name, d->platform_name,
           type_name(d->type), d->driver_version, d->compute_units);
    printf("\npeaks\n");
    printf("  memory roof (DRAM)  %8.2f GB/s  (the records' memory ceiling)\n", p->copy_gbps);
    printf("    OpenCL copy       %8.2f GB/s  (%.0f MiB each way; float %.2f, float4 %.2f, "
           "float16 %.2f)\n",
           p->cl_copy_gbps, p->dram_bytes / 1048576.0, p->copy1_gbps, p->copy4_gbps,
           p->copy16_gbps);
    if (p->native_copy_gbps > 0) printf("    native memcpy     %8.2f GB/s\n", p->native_copy_gbps);
    printf("  read roof (DRAM)    %8.2f GB/s  (bytes read; the ceiling of \"read\" records)\n",
           p->read_gbps);
    printf("    OpenCL read16     %8.2f GB/s\n", p->cl_read_gbps);
    if (p->native_read_gbps > 0) printf("    native read       %8.2f GB/s\n", p->native_read_gbps);
    printf("    cache-resident    %8.2f GB/s  (last-level cache %.0f MiB; not a roof)\n",
           p->cache_copy_gbps, p->llc_bytes / 1048576.0);
    printf("  fp32 FMA roof       %8.2f GFLOP/s  (the records' compute ceiling)\n", p->fma_gflops);
    printf("    OpenCL            %8.2f GFLOP/s  (best: %s)\n", p->cl_fma_gflops,
           p->cl_fma_variant);
    if (p->native_fma_gflops > 0)
        printf("    native C          %8.2f GFLOP/s  (%s, every core; OpenCL reaches %.0f%%)\n",
               p->native_fma_gflops, p->native_isa,
               100.0 * p->cl_fma_gflops / p->native_fma_gflops);
    printf("  host->device        %8.2f GB/s\n", p->h2d_gbps);
    printf("  device->host        %8.2f GB/s   (map %.2f GB/s)\n", p->d2h_gbps, p->map_gbps);
    printf("  launch, queued      %8.2f us\n", p->launch_us);
    printf("  launch, round trip  %8.2f us\n", p->roundtrip_us);
    printf("  program start cold  %8.1f ms\n", p->cold_start_ms);
    printf("  program start warm  %8.1f ms   (%.3f of cold)\n", p->warm_start_ms,
           p->cold_start_ms > 0 ? p->warm_start_ms / p->cold_start_ms : 0);
    printf("\n%-18s %-20s %10s %10s %10s %9s\n", "op", "shape", "ms", "GB/s", "GFLOP/s", "% peak");
    for (size_t i = 0; i < r->n; i++) {
        const bench_result *x = &r->items[i];
        char s[64] = "";
        shape_str(x, s, sizeof(s));
        char roof[48] = "";
        if (x->roof_gbps > 0) snprintf(roof, sizeof(roof), " of %.1f GB/s alongside", x->roof_gbps);
        if (x->roof_gflops > 0)
            snprintf(roof, sizeof(roof), " of %.0f GFLOP/s alongside", x->roof_gflops);
        printf("%-18s %-16s %10.3f %10.2f %10.2f %8.1f%%  (%s%s%s%s)\n", x->op, s, x->ms, x->gbps,
               x->gflops, x->pct_peak, x->bound, roof,
               x->tuned == 1   ? ", tuned: "
               : x->tuned == 0 ? ", CLBlast defaults"
                               : "",
               x->tuned == 1 ? x->params : "");
        if (x->tokens_per_s > 0) printf("%-18s   %.1f tokens/s", "", x->tokens_per_s);
        if (x->launches > 0) printf(", %lld launches per layer", (long long)x->launches);
        if (x->sentences_per_s > 0) printf(", %.2f sentences/s", x->sentences_per_s);
        if (x->tokens_per_s > 0) printf("\n");
        if (x->note[0]) printf("%-18s   %s\n", "", x->note);
    }
}

int bench_write_json(const char *path, const clf_device_info *d, const bench_peaks *p,
                     const bench_results *r) {
    cJSON *root = cJSON_CreateObject();
    cJSON *dev = cJSON_AddObjectToObject(root, "device");
    cJSON_AddStringToObject(dev, "name", d->name);
    cJSON_AddStringToObject(dev, "vendor", d->vendor);
    cJSON_AddStringToObject(dev, "platform", d->platform_name);
    cJSON_AddStringToObject(dev, "type", type_name(d->type));
    cJSON_AddStringToObject(dev, "driver", d->driver_version);
    cJSON_AddNumberToObject(dev, "compute_units", d->compute_units);
    cJSON_AddNumberToObject(dev, "global_mem_bytes", (double)d->global_mem_bytes);
    cJSON *pk = cJSON_AddObjectToObject(root, "peaks");
    cJSON_AddNumberToObject(pk, "copy_gbps", p->copy_gbps);
    cJSON_AddNumberToObject(pk, "copy_float_gbps", p->copy1_gbps);
    cJSON_AddNumberToObject(pk, "copy_float4_gbps", p->copy4_gbps);
    cJSON_AddNumberToObject(pk, "copy_float16_gbps", p->copy16_gbps);
    cJSON_AddNumberToObject(pk, "fma_gflops", p->fma_gflops);
    cJSON_AddNumberToObject(pk, "opencl_copy_gbps", p->cl_copy_gbps);
    cJSON_AddNumberToObject(pk, "cache_copy_gbps", p->cache_copy_gbps);
    cJSON_AddNumberToObject(pk, "opencl_fma_gflops", p->cl_fma_gflops);
    cJSON_AddStringToObject(pk, "opencl_fma_variant", p->cl_fma_variant);
    cJSON_AddNumberToObject(pk, "native_fma_gflops", p->native_fma_gflops);
    cJSON_AddNumberToObject(pk, "native_copy_gbps", p->native_copy_gbps);
    cJSON_AddNumberToObject(pk, "read_gbps", p->read_gbps);
    cJSON_AddNumberToObject(pk, "opencl_read_gbps", p->cl_read_gbps);
    cJSON_AddNumberToObject(pk, "native_read_gbps", p->native_read_gbps);
    cJSON_AddStringToObject(pk, "native_isa", p->native_isa);
    cJSON_AddNumberToObject(pk, "llc_bytes", p->llc_bytes);
    cJSON_AddNumberToObject(pk, "dram_copy_bytes", p->dram_bytes);
    cJSON_AddNumberToObject(pk, "h2d_gbps", p->h2d_gbps);
    cJSON_AddNumberToObject(pk, "d2h_gbps", p->d2h_gbps);
    cJSON_AddNumberToObject(pk, "map_gbps", p->map_gbps);
    cJSON_AddNumberToObject(pk, "launch_us", p->launch_us);
    cJSON_AddNumberToObject(pk, "roundtrip_us", p->roundtrip_us);
    cJSON_AddNumberToObject(pk, "cold_start_ms", p->cold_start_ms);
    cJSON_AddNumberToObject(pk, "warm_start_ms", p->warm_start_ms);
    cJSON *res = cJSON_AddArrayToObject(root, "results");
    for (size_t i = 0; i < r->n; i++) {
        const bench_result *x = &r->items[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "op", x->op);
        cJSON *sh = cJSON_AddArrayToObject(o, "shape");
        for (int k = 0; k < x->ndim; k++)
            cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)x->shape[k]));
        cJSON_AddNumberToObject(o, "ms", x->ms);
        cJSON_AddNumberToObject(o, "gflops", x->gflops);
        cJSON_AddNumberToObject(o, "gbps", x->gbps);
        cJSON_AddNumberToObject(o, "pct_peak", x->pct_peak);
        if (x->roof_gbps > 0) cJSON_AddNumberToObject(o, "roof_gbps", x->roof_gbps);
        if (x->roof_gflops > 0) cJSON_AddNumberToObject(o, "roof_gflops", x->roof_gflops);
        cJSON_AddStringToObject(o, "bound", x->bound);
        if (x->mem_bytes > 0) cJSON_AddNumberToObject(o, "mem_bytes", x->mem_bytes);
        if (x->note[0]) cJSON_AddStringToObject(o, "note", x->note);
        if (x->tokens_per_s > 0) cJSON_AddNumberToObject(o, "tokens_per_s", x->tokens_per_s);
        if (x->sentences_per_s > 0)
            cJSON_AddNumberToObject(o, "sentences_per_s", x->sentences_per_s);
        if (x->context > 0) cJSON_AddNumberToObject(o, "context", (double)x->context);
        if (x->launches > 0) cJSON_AddNumberToObject(o, "launches_per_layer", (double)x->launches);
        if (x->tuned >= 0) {
            cJSON_AddBoolToObject(o, "tuned", x->tuned);
            cJSON_AddStringToObject(o, "params", x->params);
        }
        cJSON_AddItemToArray(res, o);
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text) return 1;
    FILE *f = fopen(path, "w");
    int rc = 1;
    if (f) {
        rc = (fputs(text, f) < 0 || fputc('\n', f) == EOF);
        rc |= fclose(f) != 0;
    }
    if (rc) fprintf(stderr, "clformer-bench: cannot write '%s'\n", path);
    free(text);
    return rc;
}

int bench_write_csv(const char *path, const bench_results *r) {
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "clformer-bench: cannot write '%s'\n", path);
        return 1;
    }
    fprintf(f, "op,shape,ms,gflops,gbps,pct_peak,bound,tuned,tokens_per_s,context,roof_gbps\n");
    for (size_t i = 0; i < r->n; i++) {
        const bench_result *x = &r->items[i];
        char s[64] = "";
        shape_str(x, s, sizeof(s));
        fprintf(f, "%s,%s,%.6f,%.4f,%.4f,%.2f,%s,%s,%.2f,%lld,%.2f\n", x->op, s, x->ms, x->gflops,
                x->gbps, x->pct_peak, x->bound,
                x->tuned == 1   ? "yes"
                : x->tuned == 0 ? "no"
                                : "",
                x->tokens_per_s, (long long)x->context, x->roof_gbps);
    }
    if (fclose(f) != 0) {
        fprintf(stderr, "clformer-bench: cannot write '%s'\n", path);
        return 1;
    }
    return 0;
}
