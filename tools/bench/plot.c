/*
 * plot.c — an SVG roofline: every op record as a numbered point (arithmetic intensity in
 * FLOP/byte, GFLOP/s) under the roofs measured in the same run: DRAM bandwidth (the records'
 * memory roof) and cache-resident bandwidth, the OpenCL FMA ceiling and, on CPU devices, the
 * native C one. Log-log axes. Points carry numbers only; the list beside the plot names them.
 * Each number is placed where it covers no point and no other number (place_label: rings of
 * candidate spots around its point, a leader line once it sits away from it), so a quick run's
 * cluster of linear and attention records stays readable (rendered to PNG and looked at).
 */
#include "bench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define W  1280.0
#define H  560.0 /* roofline panel */
#define H2 380.0 /* attention sweep panel below it */
#define L  80.0  /* margins */
#define R  520.0 /* the legend and the numbered list of records */
#define T  40.0
#define B  60.0

typedef struct axes {
    double x0, x1, y0, y1; /* log10 ranges */
} axes;

static double px(const axes *a, double x) {
    return L + (log10(x) - a->x0) / (a->x1 - a->x0) * (W - L - R);
}
static double py(const axes *a, double y) {
    return H - B - (log10(y) - a->y0) / (a->y1 - a->y0) * (H - T - B);
}

static void xml_text(FILE *f, const char *s) {
    for (; *s; s++) {
        if (*s == '<')
            fputs("&lt;", f);
        else if (*s == '>')
            fputs("&gt;", f);
        else if (*s == '&')
            fputs("&amp;", f);
        else if (*s == '"')
            fputs("&quot;", f);
        else
            fputc(*s, f);
    }
}

typedef struct box {
    double x0, y0, x1, y1;
} box;

static int box_hits(const box *b, const box *taken, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (b->x0 < taken[i].x1 && taken[i].x0 < b->x1 && b->y0 < taken[i].y1 &&
            taken[i].y0 < b->y1)
            return 1;
    return 0;
}

/* A spot for a w x h label of the point at (cx, cy): the first of 8 directions on rings 8, 14,
 * 20, ... px out whose box stays inside `area` and meets nothing in taken[0 .. n); failing all,
 * the first ring's right-hand spot. The chosen box is appended to taken (room for one more). */
static box place_label(double cx, double cy, double w, double h, const box *area, box *taken,
                       size_t *n) {
    static const double dir[8][2] = {{1, 0},  {1, -1}, {0, -1}, {-1, -1},
                                     {-1, 0}, {-1, 1}, {0, 1},  {1, 1}};
    box b = {cx + 7, cy - h / 2, cx + 7 + w, cy + h / 2};
    for (int ring = 0; ring < 12; ring++) {
        const double d = 8 + 6 * ring;
        for (int k = 0; k < 8; k++) {
            /* the box's near edge d px from the point along the direction */
            const double bx = cx + dir[k][0] * d - (dir[k][0] < 0 ? w : dir[k][0] == 0 ? w / 2 : 0);
            const double by = cy + dir[k][1] * d - (dir[k][1] < 0 ? h : dir[k][1] == 0 ? h / 2 : 0);
            const box c = {bx, by, bx + w, by + h};
            if (c.x0 < area->x0 || c.x1 > area->x1 || c.y0 < area->y0 || c.y1 > area->y1) continue;
            if (!box_hits(&c, taken, *n)) {
                taken[(*n)++] = c;
                return c;
            }
        }
    }
    taken[(*n)++] = b;
    return b;
}

/* Second panel: attention time vs N, tiled vs naive (log-log), one polyline per path. */
static void sweep_panel(FILE *f, const bench_results *r) {
    const char *ops[2] = {"attention_tiled", "attention_naive"};
    const char *colors[2] = {"#06c", "#c60"};
    double nmin = 1e30, nmax = 0, tmin = 1e30, tmax = 0;
    for (size_t i = 0; i < r->n; i++) {
        const bench_result *x = &r->items[i];
        if ((strcmp(x->op, ops[0]) && strcmp(x->op, ops[1])) || !(x->ms > 0) || x->ndim < 4)
            continue;
        nmin = fmin(nmin, (double)x->shape[2]);
        nmax = fmax(nmax, (double)x->shape[2]);
        tmin = fmin(tmin, x->ms);
        tmax = fmax(tmax, x->ms);
    }
    const double top = H + 30, bottom = H + H2 - 50;
    fprintf(f,
            "<text x=\"%.0f\" y=\"%.0f\" font-size=\"15\">Attention: time vs N (B=1, H=8, "
            "Dh=64), tiled vs naive</text>\n",
            L, H + 16);
    if (nmax <= 0) {
        fprintf(f, "<text x=\"%.0f\" y=\"%.0f\">(no attention records in this run)</text>\n", L,
                top + 40);
        return;
    }
    axes a = {floor(log10(nmin)) - 0.1, ceil(log10(nmax)) + 0.1, floor(log10(tmin)),
              ceil(log10(tmax))};
    if (a.y1 <= a.y0) a.y1 = a.y0 + 1;
        /* Map into the panel: reuse px, and a y map over [top, bottom]. */
#define SY(t) (bottom - (log10(t) - a.y0) / (a.y1 - a.y0) * (bottom - top))
    for (int e = (int)ceil(a.y0); e <= (int)a.y1; e++) {
        double y = SY(pow(10, e));
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", L,
                y, W - R, y);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">1e%d ms</text>\n", L - 6, y + 4,
                e);
    }
    for (size_t i = 0; i < r->n; i++) { /* N ticks */
        const bench_result *x = &r->items[i];
        if (strcmp(x->op, ops[0]) || x->ndim < 4) continue;
        double xx = px(&a, (double)x->shape[2]);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%lld</text>\n", xx,
                bottom + 16, (long long)x->shape[2]);
    }
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">N (queries = keys)</text>\n",
            (L + W - R) / 2, bottom + 36);
    for (int s = 0; s < 2; s++) {
        fprintf(
            f, "<polyline class=\"sweep\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"",
            colors[s]);
        for (size_t i = 0; i < r->n; i++) {
            const bench_result *x = &r->items[i];
            if (strcmp(x->op, ops[s]) || !(x->ms > 0) || x->ndim < 4) continue;
            fprintf(f, "%.1f,%.1f ", px(&a, (double)x->shape[2]), SY(x->ms));
        }
        fprintf(f, "\"/>\n<text x=\"%.1f\" y=\"%.1f\" fill=\"%s\">%s</text>\n", L + 12,
                top + 14 + 16 * s, colors[s], s ? "naive (GEMM + softmax + GEMM)" : "tiled");
    }
#undef SY
}

int bench_write_svg(const char *path, const clf_device_info *d, const bench_peaks *p,
                    const bench_results *r) {
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "clformer-bench: cannot write '%s'\n", path);
        return 1;
    }
    const double bw = p->copy_gbps > 0 ? p->copy_gbps : 1,
                 fma = p->fma_gflops > 0 ? p->fma_gflops : 1;
    axes a = {-2, 3, -2, ceil(log10(fma * 2))};
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n",
            W, H + H2, W, H + H2);
    fprintf(f, "<title>clformer-bench roofline: ");
    xml_text(f, d->name);
    fprintf(f, "</title>\n<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"white\"/>\n",
            W, H + H2);
    fprintf(f, "<text x=\"%.0f\" y=\"24\" font-size=\"15\">Roofline: ", L);
    xml_text(f, d->name);
    fprintf(f, " (DRAM %.1f GB/s, FMA %.1f GFLOP/s)</text>\n", bw, fma);
    /* Grid and axis labels at each decade. */
    for (int e = (int)a.x0; e <= (int)a.x1; e++) {
        double x = px(&a, pow(10, e));
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", x,
                T, x, H - B);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">1e%d</text>\n", x,
                H - B + 16, e);
    }
    for (int e = (int)a.y0; e <= (int)a.y1; e++) {
        double y = py(&a, pow(10, e));
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", L,
                y, W - R, y);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">1e%d</text>\n", L - 6, y + 4,
                e);
    }
    fprintf(f,
            "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">arithmetic intensity "
            "(FLOP/byte)</text>\n",
            (L + W - R) / 2, H - 20);
    fprintf(f,
            "<text x=\"20\" y=\"%.1f\" transform=\"rotate(-90 20 %.1f)\" "
            "text-anchor=\"middle\">GFLOP/s</text>\n",
            (T + H - B) / 2, (T + H - B) / 2);
    /* Roofs: bandwidth up to its ridge point with a compute roof, then that roof. */
    const double xl = pow(10, a.x0), xr = pow(10, a.x1);
    const double cache = p->cache_copy_gbps, cl_fma = p->cl_fma_gflops,
                 native = p->native_fma_gflops;
    struct roof {
        double bw, fma;
        const char *color, *dash, *label;
        char text[96];
    } roofs[3] = {{bw, fma, "#c00", "", "DRAM bandwidth, best FMA", ""},
                  {cache, fma, "#e88", "6,4", "cache-resident bandwidth", ""},
                  {0, cl_fma, "#a0a", "2,3", "OpenCL FMA", ""}};
    snprintf(roofs[0].text, sizeof(roofs[0].text), "memory roof: DRAM %.1f GB/s", bw);
    snprintf(roofs[1].text, sizeof(roofs[1].text), "cache-resident %.1f GB/s (not a roof)", cache);
    snprintf(roofs[2].text, sizeof(roofs[2].text), "OpenCL FMA %.1f GFLOP/s", cl_fma);
    for (int k = 0; k < 3; k++) {
        const struct roof *o = &roofs[k];
        if (!(o->fma > 0)) continue;
        if (o->bw > 0) {
            const double ridge = o->fma / o->bw;
            fprintf(f,
                    "<polyline class=\"roof\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\" "
                    "stroke-dasharray=\"%s\" points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\"/>\n",
                    o->color, o->dash, px(&a, xl), py(&a, o->bw * xl), px(&a, ridge),
                    py(&a, o->fma), px(&a, xr), py(&a, o->fma));
        } else {
            fprintf(f,
                    "<line class=\"roof\" stroke=\"%s\" stroke-width=\"2\" "
                    "stroke-dasharray=\"%s\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                    "y2=\"%.1f\"/>\n",
                    o->color, o->dash, px(&a, xl), py(&a, o->fma), px(&a, xr), py(&a, o->fma));
        }
    }
    /* Legend: the roofs, then the point colours, in the right-hand column. */
    const double lx = W - R + 24;
    double ly = T + 6;
    char fma_text[128];
    if (native > 0)
        snprintf(fma_text, sizeof(fma_text), "compute roof: native C FMA %.1f GFLOP/s (%s)", native,
                 p->native_isa);
    else
        snprintf(fma_text, sizeof(fma_text), "compute roof: FMA %.1f GFLOP/s", fma);
    const char *legend_text[4] = {roofs[0].text, fma_text, roofs[1].text, roofs[2].text};
    const char *legend_color[4] = {"#c00", "#c00", "#e88", "#a0a"};
    for (int k = 0; k < 4; k++, ly += 16) {
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                "stroke-width=\"2\"/>\n",
                lx, ly - 4, lx + 22, ly - 4, legend_color[k]);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">", lx + 28, ly);
        xml_text(f, legend_text[k]);
        fprintf(f, "</text>\n");
    }
    const char *kinds[3] = {"memory-bound", "compute-bound", "GEMM, CLBlast's defaults"};
    const char *kind_color[3] = {"#393", "#06c", "#999"};
    for (int k = 0; k < 3; k++, ly += 16) {
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"%s\"/>\n", lx + 11, ly - 4,
                kind_color[k]);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">%s</text>\n", lx + 28, ly, kinds[k]);
    }
    ly += 8;
    /* One numbered point per record, and its line in the list; the numbers are placed after
     * every point is known, so none covers a point drawn later. */
    double *cx = malloc((r->n + 1) * sizeof(double)), *cy = malloc((r->n + 1) * sizeof(double));
    box *taken = malloc((2 * r->n + 1) * sizeof(box));
    const char **colors = malloc((r->n + 1) * sizeof(char *));
    if (!cx || !cy || !taken || !colors) {
        free(cx);
        free(cy);
        free(taken);
        free(colors);
        fclose(f);
        fprintf(stderr, "clformer-bench: out of memory writing '%s'\n", path);
        return 1;
    }
    size_t n = 0, nt = 0;
    for (size_t i = 0; i < r->n; i++) {
        const bench_result *x = &r->items[i];
        if (!(x->gflops > 0) || !(x->gbps > 0)) continue;
        double ai = x->gflops / x->gbps;
        ai = fmin(fmax(ai, xl), xr);
        double g = fmax(x->gflops, pow(10, a.y0));
        const char *color =
            strcmp(x->bound, "compute") == 0 ? (x->tuned == 0 ? "#999" : "#06c") : "#393";
        char label[96];
        size_t off = (size_t)snprintf(label, sizeof(label), "%s ", x->op);
        for (int k = 0; k < x->ndim && off < sizeof(label); k++)
            off += (size_t)snprintf(label + off, sizeof(label) - off, "%s%lld", k ? "x" : "",
                                    (long long)x->shape[k]);
        if (x->tuned == 0 && off < sizeof(label))
            snprintf(label + off, sizeof(label) - off, " (defaults)");
        cx[n] = px(&a, ai);
        cy[n] = py(&a, g);
        colors[n] = color;
        taken[nt++] = (box){cx[n] - 5, cy[n] - 5, cx[n] + 5, cy[n] + 5};
        n++;
        fprintf(f, "<circle class=\"op\" cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"%s\"><title>",
                cx[n - 1], cy[n - 1], color);
        xml_text(f, label);
        fprintf(f, ": %.2f GFLOP/s, %.2f GB/s, %.1f%% of peak</title></circle>\n", x->gflops,
                x->gbps, x->pct_peak);
        if (ly < H + H2 - 12) {
            fprintf(f,
                    "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\"><tspan fill=\"%s\">%zu</tspan> ",
                    lx, ly, color, n);
            xml_text(f, label);
            fprintf(f, ": %.1f%%</text>\n", x->pct_peak);
            ly += 14;
        }
    }
    const box area = {L + 2, T + 2, W - R - 2, H - B - 2};
    for (size_t i = 0; i < n; i++) {
        const double w = 5.5 * (i + 1 >= 100 ? 3 : i + 1 >= 10 ? 2 : 1) + 2, h = 10;
        const box b = place_label(cx[i], cy[i], w, h, &area, taken, &nt);
        const double mx = (b.x0 + b.x1) / 2;
        /* away from its point: a leader line from the point to the box's nearest edge */
        const double ex = fmin(fmax(cx[i], b.x0), b.x1), ey = fmin(fmax(cy[i], b.y0), b.y1);
        if (hypot(ex - cx[i], ey - cy[i]) > 9)
            fprintf(f,
                    "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                    "stroke-width=\"0.6\"/>\n",
                    cx[i], cy[i], ex, ey, colors[i]);
        fprintf(f,
                "<text x=\"%.1f\" y=\"%.1f\" font-size=\"9\" text-anchor=\"middle\" "
                "fill=\"%s\">%zu</text>\n",
                mx, b.y1 - 2, colors[i], i + 1);
    }
    free(cx);
    free(cy);
    free(taken);
    free(colors);
    sweep_panel(f, r);
    fprintf(f, "</svg>\n");
    if (fclose(f) != 0) {
        fprintf(stderr, "clformer-bench: cannot write '%s'\n", path);
        return 1;
    }
    return 0;
}
