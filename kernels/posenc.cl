/*
 * posenc.cl — embedding gather and sinusoidal positional encoding in one kernel:
 *   y[r, :] = src[id(r), :] * scale  (+ P[pos(r), :] if add_pe)
 * with id(r) = ids[r] (embedding lookup) or r (src is the activations: posenc add, in place
 * allowed), pos(r) = pos_offset + r % seq_len, and the seeds' table computed on the fly:
 *   P[pos, 2j] = sin(pos * 10000^(-2j/d)),  P[pos, 2j+1] = cos(pos * 10000^(-2j/d)).
 * Each work-item handles VW (sin, cos) pairs of one row with vector sincos (scalar sin/cos do not
 * vectorize on PoCL 3.1); the last, partial chunk of a row (odd d included) goes element-wise.
 *
 * Tunables: VW (pairs per work-item), WG (work-group size, chosen by the host).
 */
#ifndef VW
#define VW 8 /* (sin, cos) pairs per work-item: 2*VW floats */
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
    const int cpr = (pairs + VW - 1) / VW; /* chunks per row */
    const long gid = get_global_id(0);
    const long row = gid / cpr;
    if (row >= rows) return;
    const int c = (int)(gid - row * cpr);
    const long srow = use_ids ? (long)ids[row] : row;
    const __global float *s = src + srow * (long)d;
    __global float *yr = y + row * (long)d;
    const float pos = (float)(pos_offset + row % seq_len);
    const int e0 = c * 2 * VW;

#if VW > 1
    if (e0 + 2 * VW <= d) {
        floatV a = VLOAD(2 * c, s) * scale;
        floatV b = VLOAD(2 * c + 1, s) * scale;
        if (add_pe) {
            floatV j = convert_floatV(IOTA + c * VW);
            floatV angle = pos * exp2(j * freq_log2);
            floatV cs;
            floatV sn = sincos(angle, &cs);
            a += shuffle2(sn, cs, PE_LO);
            b += shuffle2(sn, cs, PE_HI);
        }
        VSTORE(a, 2 * c, yr);
        VSTORE(b, 2 * c + 1, yr);
        return;
    }
#endif
    const int e1 = min(e0 + 2 * VW, d);
    for (int e = e0; e < e1; e++) {
        float v = s[e] * scale;
        if (add_pe) {
            float angle = pos * exp2((float)(e / 2) * freq_log2);
            v += (e & 1) ? cos(angle) : sin(angle);
        }
        yr[e] = v;
    }
}
