/*
 * rope.cl — rotary position embedding (RoPE), in place, on `heads` consecutive heads of DH floats
 * from column col of each row of x (B, N, W): the query heads and then the key heads of a fused
 * QKV projection are one run of heads, so one launch rotates both.
 *
 * Dims 0 .. rd - 1 of each head rotate in pairs, pair i by the angle p * f_i, where p is the row's
 * position and f_i = theta^(-2i / rd) = exp2(i * freq_log2), freq_log2 = -2 log2(theta) / rd from
 * the host in double (or inv_freq[i], for the rope scalings the host computes):
 *   layout 0 (NeoX, half split: Llama, Qwen2, Mistral): pair (i, i + rd/2);
 *   layout 1 (interleaved: GPT-J):                       pair (2i, 2i + 1);
 *   (a, b) -> (a cos - b sin, b cos + a sin). Dims rd .. DH - 1 stay as they are.
 * The angle is the fp32 product p * f_i, as Hugging Face computes it, then one sincos.
 *
 * A work-item takes VW consecutive pairs of one row (a 2-D range: chunks of a row, rows): their sin
 * and cos come from one vector SINCOS (common.cl: within 9e-8 of the float angle's sin and cos,
 * where libclc's vector sin and cos took 15 s to build at VW 8 on rusticl) and serve every head of
 * the row. The last chunk of a row, if shorter than VW, goes pair by pair (SINCOS at width 1).
 *
 * Positions: pos_mode 0: row n of each sequence is at pos_offset + n; 1: positions (B) gives each
 * sequence's offset; 2: positions (B, N) gives every row's position.
 *
 * The KV append (app 1: an F32 cache, 2: F16, rounded to nearest even as rows_to_half): a decoder
 * step's fused QKV rows rotated and their keys and values stored into the cache in the same
 * launch (one launch a layer fewer). Heads kh0 .. heads - 1 of the rotated run are the kvh key
 * heads, the kvh value heads follow them in the row; a row at position p goes to cache row
 * (b, p) (cache: (B, max_len, 2 kvh DH), K then V), only where it is a real token: lens (B, N),
 * each query's visible keys, is p + 1 there (padding rows repeat the last real row's length). The
 * whole head rotates (rd = DH; the host checks), so a row's chunks cover every dim.
 *
 * The work-group is chosen at launch, not compiled in (one program for every head size, so
 * clf_context_warmup builds it): rope.WG work-items over a row's chunks and as many rows as fill
 * the rest. A Llama head of 64 dims is 4 chunks of 8 pairs: one row per group of 64 left 60
 * work-items idle and made one group per row.
 *
 * Tunables: VW (pairs per work-item); rope.WG is read by the host.
 */
#ifndef VW
#define VW 8 /* pairs per work-item */
#endif

static inline void rope_pair(__global float *a, __global float *b, float c, float s) {
    const float x = *a, y = *b;
    *a = x * c - y * s;
    *b = y * c + x * s;
}

__kernel void rope_rows(__global float *x,                /* (B, N, W), rotated in place */
                        const long rows, const int n_seq, /* rows = B * N; N rows per sequence */
                        const int w, const int col, const int heads, const int dh, const int rd,
                        const int layout, const float freq_log2, /* f_i = exp2(i * freq_log2) */
                        const __global float *inv_freq, /* (rd / 2); unused unless has_freq */
                        const int has_freq, const __global int *positions, const int pos_mode,
                        const long pos_offset, __global float *cache, const int app, const int kh0,
                        const int kvh, const long c_batch, const int c_row,
                        const __global int *lens) {
    const int npairs = rd / 2;
    const int i0 = (int)get_global_id(0) * VW; /* a chunk of VW pairs of row get_global_id(1) */
    const long row = (long)get_global_id(1);
    if (i0 >= npairs || row >= rows) return;
    const long b = row / n_seq, n = row - b * n_seq;
    const long pos = pos_mode == 2   ? (long)positions[row]
                     : pos_mode == 1 ? (long)positions[b] + n
                                     : pos_offset + n;
    const float p = (float)pos;
    __global float *xr = x + row * (long)w + col;
    const int na = min(VW, npairs - i0); /* pairs of this chunk */
    float cs[VW], sn[VW];
    if (na == VW) {
        floatV f;
        if (has_freq)
            f = VLOAD(0, inv_freq + i0);
        else
            f = exp2(convert_floatV(IOTA + i0) * freq_log2);
        floatV c;
        PRIV_VSTORE(SINCOS(p * f, &c), sn);
        PRIV_VSTORE(c, cs);
    } else {
        for (int j = 0; j < na; j++) {
            const int i = i0 + j;
            const float f = has_freq ? inv_freq[i] : exp2((float)i * freq_log2);
            sn[j] = clf_sincos1(p * f, &cs[j]);
        }
    }
    for (int h = 0; h < heads; h++) {
        __global float *hr = xr + h * dh;
        if (layout == 0) {
            if (na == VW) { /* vector loads of both halves */
                const floatV a = VLOAD(0, hr + i0), bb = VLOAD(0, hr + npairs + i0);
                const floatV c = PRIV_VLOAD(cs), s = PRIV_VLOAD(sn);
                VSTORE(a * c - bb * s, 0, hr + i0);
                VSTORE(bb * c + a * s, 0, hr + npairs + i0);
            } else {
                for (int j = 0; j < na; j++)
                    rope_pair(hr + i0 + j, hr + npairs + i0 + j, cs[j], sn[j]);
            }
        } else {
            for (int j = 0; j < na; j++)
                rope_pair(hr + 2 * (i0 + j), hr + 2 * (i0 + j) + 1, cs[j], sn[j]);
        }
    }
    if (!app || lens[row] != pos + 1) return;
    /* this chunk's dims of the key heads (rotated above, read back) and of the value heads */
    const long e0 = b * c_batch + pos * (long)c_row; /* elements of the cache's type */
    for (int h = 0; h < 2 * kvh; h++) {
        const __global float *src = xr + (kh0 + h) * dh;
        const long c0 = e0 + h * dh;
        for (int j = 0; j < na; j++) {
            const int d0 = layout == 0 ? i0 + j : 2 * (i0 + j),
                      d1 = layout == 0 ? npairs + i0 + j : 2 * (i0 + j) + 1;
            if (app == 2) {
                vstore_half_rte(src[d0], c0 + d0, (__global half *)cache);
                vstore_half_rte(src[d1], c0 + d1, (__global half *)cache);
            } else {
                cache[c0 + d0] = src[d0];
                cache[c0 + d1] = src[d1];
            }
        }
    }
}
