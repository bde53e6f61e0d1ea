/*
 * posenc.cl — embedding gather and sinusoidal positional encoding in one kernel:
 *   y[r, :] = src[id(r), :] * scale  (+ P[pos(r), :] if add_pe)
 * with id(r) = ids[r] (embedding lookup) or r (src is the activations: posenc add, in place
 * allowed), pos(r) = pos_offset + r % seq_len, and the seeds' table computed on the fly:
 *   P[pos, 2j] = sin(pos * 10000^(-2j/d)),  P[pos, 2j+1] = cos(pos * 10000^(-2j/d)).
 * Each work-item handles VW (sin, cos) pairs of PR consecutive rows of one sequence: one vector
 * SINCOS (common.cl) gives the first row's values, then each next position is a rotation by the
 * pair's frequency f (sin(x+f) = sin x cos f + cos x sin f), 4 multiply-adds instead of a sincos.
 * The rotation adds about 2 ulp per step, below the error of forming the angle p * f in float
 * directly (tests/test_posenc.c states the bound). The last, partial chunk of a row (odd d
 * included) goes element-wise, through the same SINCOS at width 1.
 *
 * Tunables: VW (pairs per work-item), PR (rows per work-item), WG (work-group size).
 */
#ifndef VW
#define VW 16 /* (sin, cos) pairs per work-item: 2*VW floats */
#endif
#ifndef PR
#define PR 32 /* consecutive rows (positions) per work-item */
#endif
#ifndef WG
#define WG 16 /* work-group size (the host launches with it) */
#endif

/* Interleave s and c into (s0, c0, s1, c1, ...): lo holds pairs 0..VW/2-1, hi the rest. */
#if VW == 2
#define PE_LO ((uint2)(0, 2))
#define PE_HI ((uint2)(1, 3))
#elif VW == 4
#define PE_LO ((uint4)(0, 4, 1, 5))
#define PE_HI ((uint4)(2, 6, 3, 7))
#elif VW == 8
#define PE_LO ((uint8)(0, 8, 1, 9, 2, 10, 3, 11))
#define PE_HI ((uint8)(4, 12, 5, 13, 6, 14, 7, 15))
#elif VW == 16
#define PE_LO ((uint16)(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23))
#define PE_HI ((uint16)(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31))
#endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
embed_posenc(const __global float *src, /* (V, d) embedding table, or (rows, d) activations */
             const __global int *ids,   /* (rows) token ids in 0..V-1; unused if !use_ids */
             const int use_ids,         /* 1: gather rows of src by ids */
             __global float *y,         /* (rows, d); may be src when !use_ids */
             const long rows, const int d,
             const float scale,       /* multiplies src (sqrt(d) for the seeds' embeddings) */
             const int add_pe,        /* 1: add the sinusoidal encoding */
             const int seq_len,       /* rows per sequence: positions restart every seq_len */
             const long pos_offset,   /* position of each sequence's first row */
             const float freq_log2) { /* -log2(10000) * 2 / d */
    const int pairs = (d + 1) / 2;
    const int cpr = (pairs + VW - 1) / VW;   /* chunks per row */
    const int bps = (seq_len + PR - 1) / PR; /* row blocks per sequence */
    const long gid = get_global_id(0);
    const long blk = gid / cpr;
    const int c = (int)(gid - blk * cpr);
    const long sq = blk / bps;
    if (sq >= rows / seq_len) return;
    const int p0 = (int)(blk - sq * bps) * PR; /* first row of the block within its sequence */
    const int np = min(PR, seq_len - p0);
    const long row0 = sq * seq_len + p0;
    const int e0 = c * 2 * VW;

#if VW > 1
    if (e0 + 2 * VW <= d) {
        floatV sn = (floatV)(0.0f), cs = (floatV)(0.0f), sd = (floatV)(0.0f), cd = (floatV)(1.0f);
        if (add_pe) {
            const floatV f = exp2(convert_floatV(IOTA + c * VW) * freq_log2);
            sn = SINCOS((float)(pos_offset + p0) * f, &cs);
            sd = SINCOS(f, &cd); /* one position further: rotate by f */
        }
        for (int p = 0; p < np; p++) {
            const long row = row0 + p;
            const __global float *s = src + (use_ids ? (long)ids[row] : row) * (long)d;
            __global float *yr = y + row * (long)d;
            floatV a = VLOAD(2 * c, s) * scale;
            floatV b = VLOAD(2 * c + 1, s) * scale;
            if (add_pe) {
                a += shuffle2(sn, cs, PE_LO);
                b += shuffle2(sn, cs, PE_HI);
                const floatV t = sn * cd + cs * sd; /* sin(x + f), cos(x + f) */
                cs = cs * cd - sn * sd;
                sn = t;
            }
            VSTORE(a, 2 * c, yr);
            VSTORE(b, 2 * c + 1, yr);
        }
        return;
    }
#endif
    /* The last, partial chunk of each row (and VW 1): element-wise, sin/cos per element. */
    const int e1 = min(e0 + 2 * VW, d);
    for (int p = 0; p < np; p++) {
        const long row = row0 + p;
        const __global float *s = src + (use_ids ? (long)ids[row] : row) * (long)d;
        __global float *yr = y + row * (long)d;
        const float pos = (float)(pos_offset + p0 + p);
        for (int e = e0; e < e1; e++) {
            float v = s[e] * scale;
            if (add_pe) {
                float cv;
                const float sv = clf_sincos1(pos * exp2((float)(e / 2) * freq_log2), &cv);
                v += (e & 1) ? cv : sv;
            }
            yr[e] = v;
        }
    }
}
