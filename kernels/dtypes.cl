/*
 * dtypes.cl — the storage types of a program's stored operand (linear's weights, attention's K
 * and V), one section per type, selected by DT (a clf_dtype value). Prepended to every program
 * after common.cl; the CLF_DT_<NAME> ids come first, written by the host from
 * include/clformer/dtypes.def (the block layouts are documented there).
 *
 * Each section defines:
 *   DT_BLOCK, DT_BYTES   elements and bytes per block (1 and the element size for a plain type)
 *   dt_load<N>(row, i)   elements i .. i + N - 1 of a row (its bytes) as a floatN, N in
 *                        {1, 2, 4, 8, 16}; i a multiple of N (block types: N divides 16, so a
 *                        vector never straddles a block or a Q6_K scale group); dt_load1 is the
 *                        scalar form
 * and a plain type (DT_BLOCK 1) also stype (its element type: float, half, or ushort for BF16)
 * and SLOAD(i, p) / SLOAD1(i, p): VW elements at p + i VW as a floatV / element i as a float.
 * Scales are fp16 bits converted with integer operations (clf_scale; core OpenCL): no type needs
 * cl_khr_fp16, sub-groups or an integer dot-product extension.
 */
#ifndef DT
#define DT CLF_DT_F32
#endif

/* N bytes at p as a floatN: signed (clf_i8_N), or the nibble at bit `shift` (0 or 4) of each
 * unsigned one (clf_u4_N). */
static inline float clf_i8_1(const __global char *p) {
    return (float)p[0];
}
static inline float clf_u4_1(const __global uchar *p, int shift) {
    return (float)((p[0] >> shift) & 15);
}
/* Q6_K's 6-bit value less 32: the nibble at `ls` of *ql topped by the two bits at `hs` of *qh. */
static inline float clf_q6_1(const __global uchar *ql, int ls, const __global uchar *qh, int hs) {
    return (float)((int)(((ql[0] >> ls) & 15) | (((qh[0] >> hs) & 3) << 4)) - 32);
}
#define CLF_BYTE_HELPERS(N)                                                                        \
    static inline float##N clf_i8_##N(const __global char *p) {                                    \
        return convert_float##N(vload##N(0, p));                                                   \
    }                                                                                              \
    static inline float##N clf_u4_##N(const __global uchar *p, int shift) {                        \
        return convert_float##N((vload##N(0, p) >> (uchar)shift) & (uchar)15);                     \
    }                                                                                              \
    static inline float##N clf_q6_##N(const __global uchar *ql, int ls, const __global uchar *qh,  \
                                      int hs) {                                                    \
        const int##N q =                                                                           \
            convert_int##N(((vload##N(0, ql) >> (uchar)ls) & (uchar)15) |                          \
                           (((vload##N(0, qh) >> (uchar)hs) & (uchar)3) << (uchar)4));             \
        return convert_float##N(q - 32);                                                           \
    }
CLF_BYTE_HELPERS(2)
CLF_BYTE_HELPERS(4)
CLF_BYTE_HELPERS(8)
CLF_BYTE_HELPERS(16)

/* The fp16 at element i of p (2-byte aligned) as a float, exactly (subnormals, inf and nan too),
 * with integer operations: a block's scale. PoCL's vload_half is a 17-instruction scalar routine
 * on x86, more than the 32 weights it scales take (an F16C conversion is one instruction, which
 * OpenCL C cannot ask for without cl_khr_fp16); on GPUs this is a few ALU operations per block. */
static inline float clf_scale(const __global uchar *p, int i) {
    const uint h = ((const __global ushort *)p)[i];
    const uint a = (h & 0x7fffu) << 13;  /* exponent and mantissa at a float's place */
    const uint e = a & 0x0f800000u;      /* the fp16 exponent field */
    float f = as_float(a + 0x38000000u); /* normal: exponent rebiased by 127 - 15 */
    f = e == 0x0f800000u ? as_float(a + 0x70000000u) : f;   /* inf, nan: exponent 255 */
    f = e == 0u ? as_float(a + 0x38800000u) - 0x1p-14f : f; /* subnormal: (1 + m) 2^-14 - 2^-14 */
    return as_float(as_uint(f) | ((h & 0x8000u) << 16));
}

/* BF16: the top half of a float. */
static inline float clf_bf16_1(const __global ushort *p) {
    return as_float((uint)p[0] << 16);
}
#define CLF_BF16_HELPER(N)                                                                         \
    static inline float##N clf_bf16_##N(const __global ushort *p) {                                \
        return as_float##N(convert_uint##N(vload##N(0, p)) << 16);                                 \
    }
CLF_BF16_HELPER(2)
CLF_BF16_HELPER(4)
CLF_BF16_HELPER(8)
CLF_BF16_HELPER(16)

#define CLF_DT_GEN(LOAD) LOAD(1) LOAD(2) LOAD(4) LOAD(8) LOAD(16)

/* ---------------------------------------------------------------- plain types */
#if DT == CLF_DT_F32
#define DT_BLOCK 1
#define DT_BYTES 4
#define stype    float
#define DT_LOAD(N)                                                                                 \
    static inline float##N dt_load##N(const __global uchar *row, int i) {                          \
        return clf_vload##N(0, (const __global float *)row + i);                                   \
    }

#elif DT == CLF_DT_F16
#define DT_BLOCK 1
#define DT_BYTES 2
#define stype    half
#define DT_LOAD(N)                                                                                 \
    static inline float##N dt_load##N(const __global uchar *row, int i) {                          \
        return clf_vload_half##N(0, (const __global half *)row + i);                               \
    }

#elif DT == CLF_DT_BF16
#define DT_BLOCK 1
#define DT_BYTES 2
#define stype    ushort
#define DT_LOAD(N)                                                                                 \
    static inline float##N dt_load##N(const __global uchar *row, int i) {                          \
        return clf_bf16_##N((const __global ushort *)row + i);                                     \
    }

/* ---------------------------------------------------------------- block types */
#elif DT == CLF_DT_Q8_0
/* w = d q: block i / 32, its scale, then the int8s from i % 32. */
#define DT_BLOCK 32
#define DT_BYTES 34
#define DT_LOAD(N)                                                                                 \
    static inline float##N dt_load##N(const __global uchar *row, int i) {                          \
        const __global uchar *b = row + (i >> 5) * 34;                                             \
        return clf_scale(b, 0) * clf_i8_##N((const __global char *)(b + 2 + (i & 31)));            \
    }

#elif DT == CLF_DT_Q4_0
/* w = d (q - 8): element e < 16 of a block is the low nibble of byte e, e >= 16 the high nibble
 * of byte e - 16. */
#define DT_BLOCK 32
#define DT_BYTES 18
#define DT_LOAD(N)                                                                                 \
    static inline float##N dt_load##N(const __global uchar *row, int i) {                          \
        const __global uchar *b = row + (i >> 5) * 18;                                             \
        const int e = i & 31;                                                                      \
        return clf_scale(b, 0) * (clf_u4_##N(b + 2 + (e & 15), (e >> 4) * 4) - 8.0f);              \
    }

#elif DT == CLF_DT_Q4_K
/* Sub-block s = e / 32 of a 256-block: w = d sc_s q - dmin m_s, q the nibble (s odd: high) of
 * byte 32 (s / 2) + e % 32; (sc_s, m_s) six bits each, packed in 12 bytes (dtypes.def). */
#define DT_BLOCK 256
#define DT_BYTES 144
static inline int2 clf_q4k_scale_min(const __global uchar *q, int s) {
    return s < 4 ? (int2)(q[s] & 63, q[s + 4] & 63)
                 : (int2)((q[s + 4] & 15) | ((q[s - 4] >> 6) << 4),
                          (q[s + 4] >> 4) | ((q[s] >> 6) << 4));
}
#define DT_LOAD(N)                                                                                 \
    static inline float##N dt_load##N(const __global uchar *row, int i) {                          \
        const __global uchar *b = row + (i >> 8) * 144;                                            \
        const int e = i & 255, s = e >> 5;                                                         \
        const int2 sm = clf_q4k_scale_min(b + 4, s);                                               \
        const float d = clf_scale(b, 0) * (float)sm.x;                                             \
        const float m = clf_scale(b, 1) * (float)sm.y;                                             \
        return d * clf_u4_##N(b + 16 + 32 * (s >> 1) + (e & 31), (s & 1) * 4) - m;                 \
    }

#elif DT == CLF_DT_Q6_K
/* Element e = 128 h + 32 q + l of a 256-block: the low nibble (q >= 2: high) of
 * ql[64 h + 32 (q & 1) + l] and bits 2q, 2q + 1 of qh[32 h + l], less 32, times d sc[8 h + 2 q +
 * l / 16] (ql at 0, qh at 128, the int8 scales at 192, d at 208). */
#define DT_BLOCK 256
#define DT_BYTES 210
#define DT_LOAD(N)                                                                                 \
    static inline float##N dt_load##N(const __global uchar *row, int i) {                          \
        const __global uchar *b = row + (i >> 8) * 210;                                            \
        const int e = i & 255, h = e >> 7, q = (e >> 5) & 3, l = e & 31;                           \
        const float d =                                                                            \
            clf_scale(b, 104) * (float)((const __global char *)b)[192 + 8 * h + 2 * q + (l >> 4)]; \
        return d * clf_q6_##N(b + 64 * h + 32 * (q & 1) + l, (q >> 1) * 4, b + 128 + 32 * h + l,   \
                              2 * q);                                                              \
    }

#else
#error "DT names no storage type of dtypes.cl"
#endif

CLF_DT_GEN(DT_LOAD)

/* ---------------------------------------------------------------- 32-weight chunks
 * Block types also define dt_chunk32(row, c, &w0, &w1, &m): chunk c of a row (elements 32c ..
 * 32c + 31: a Q8_0/Q4_0 block, a Q4_K sub-block, two Q6_K scale groups) as two float16 of
 * integer-valued weights and the chunk's scale s, so that weight e = s w_e - m (m: Q4_K's min
 * term, 0 for the others). A few-rows kernel converts a chunk once and applies s once per row
 * (s (w0 . x0 + w1 . x1) - m sum(x)) instead of scaling every weight. */
#if DT == CLF_DT_Q8_0
static inline float dt_chunk32(const __global uchar *row, int c, float16 *w0, float16 *w1,
                               float *m) {
    const __global uchar *b = row + c * 34;
    *w0 = clf_i8_16((const __global char *)(b + 2));
    *w1 = clf_i8_16((const __global char *)(b + 18));
    *m = 0.0f;
    return clf_scale(b, 0);
}
#elif DT == CLF_DT_Q4_0
static inline float dt_chunk32(const __global uchar *row, int c, float16 *w0, float16 *w1,
                               float *m) {
    const __global uchar *b = row + c * 18;
    const uchar16 q = vload16(0, b + 2);
    *w0 = convert_float16(q & (uchar)15) - 8.0f;
    *w1 = convert_float16(q >> (uchar)4) - 8.0f;
    *m = 0.0f;
    return clf_scale(b, 0);
}
#elif DT == CLF_DT_Q4_K
static inline float dt_chunk32(const __global uchar *row, int c, float16 *w0, float16 *w1,
                               float *m) {
    const __global uchar *b = row + (c >> 3) * 144;
    const int s = c & 7;
    const int2 sm = clf_q4k_scale_min(b + 4, s);
    const int shift = (s & 1) * 4;
    *w0 = clf_u4_16(b + 16 + 32 * (s >> 1), shift);
    *w1 = clf_u4_16(b + 16 + 32 * (s >> 1) + 16, shift);
    *m = clf_scale(b, 1) * (float)sm.y;
    return clf_scale(b, 0) * (float)sm.x;
}
#elif DT == CLF_DT_Q6_K
static inline float dt_chunk32(const __global uchar *row, int c, float16 *w0, float16 *w1,
                               float *m) {
    const __global uchar *b = row + (c >> 3) * 210;
    const int e = c & 7, h = e >> 2, q = e & 3;
    const __global uchar *ql = b + 64 * h + 32 * (q & 1), *qh = b + 128 + 32 * h;
    const __global char *sc = (const __global char *)b + 192 + 8 * h + 2 * q;
    *w0 = clf_q6_16(ql, (q >> 1) * 4, qh, 2 * q) * (float)sc[0];
    *w1 = clf_q6_16(ql + 16, (q >> 1) * 4, qh + 16, 2 * q) * (float)sc[1];
    *m = 0.0f;
    return clf_scale(b, 104);
}
#endif

/* ---------------------------------------------------------------- panels
 * The CPU packed style (linear.cl's linear_packed) takes block types as panels: the blocks of PW
 * consecutive rows (one output column each) transposed, so that byte p of block j of column c
 * lies at panel + j DT_BYTES PW + DT_PANEL_AT(p, c, PW): p PW + c for the scales, so that a byte
 * of VW columns is one vector load (the same bytes as the rows, in another order), and the quants
 * (bytes W = DT_WORDS_AT .. DT_WORDS_END - 1) as 4-byte words: bytes W + 4 t .. W + 4 t + 3 of
 * column c at (W + 4 t) PW + 4 c, so that one vector load of words gives 4 (Q8_0) or 8 (nibbles)
 * quants of VW columns, and a word's quants pair up as 16-bit halves for integer multiply-adds
 * (clf_madd_pairs below; linear.cl's pairs_group).
 * Each block type defines, for VW columns c0 .. c0 + VW - 1 of block pb:
 *   DT_SUB                    elements sharing a scale (32; Q6_K 16)
 *   dt_panel_sm(pb, pw, g, c0, &m)  the scale s of scale group g and the min term m, so that
 *                             weight e = s q_e - m (exactly: s q_e - m fits a float)
 *   dt_panel_q(pb, pw, e, c0)  the integers q_e of element e.
 * At VW 8 and 16 only (the CPUs' widths: AVX2, AVX-512); the host packs block types at no other
 * width. */
/* Q8_0, Q4_0, Q4_K and Q6_K keep their quants (bytes DT_WORDS_AT .. DT_WORDS_END - 1: Q6_K's
 * low nibbles and high bits) as 4-byte words per column. */
#if DT == CLF_DT_Q8_0
#define DT_WORDS_AT  2
#define DT_WORDS_END 34
#elif DT == CLF_DT_Q4_0
#define DT_WORDS_AT  2
#define DT_WORDS_END 18
#elif DT == CLF_DT_Q4_K
#define DT_WORDS_AT  16
#define DT_WORDS_END 144
#elif DT == CLF_DT_Q6_K
#define DT_WORDS_AT  0
#define DT_WORDS_END 192
#endif
#if DT_BLOCK > 1 && !defined(DT_WORDS_AT)
#error "a block type's panels keep its quants as words (DT_WORDS_AT): linear.cl's pairs_group"
#endif
#ifdef DT_WORDS_AT
#define DT_PANEL_AT(p, c, pw)                                                                      \
    ((p) < DT_WORDS_AT || (p) >= DT_WORDS_END                                                      \
         ? (p) * (pw) + (c)                                                                        \
         : ((p) - ((p)-DT_WORDS_AT) % 4) * (pw) + 4 * (c) + ((p)-DT_WORDS_AT) % 4)
#else
#define DT_PANEL_AT(p, c, pw) ((p) * (pw) + (c))
#endif
#if defined(VW) && (VW == 8 || VW == 16)
#define uintV CLF_CAT(uint, VW)
/* Byte p of VW columns as unsigned or signed integers, and bytes p, p + 1 (little-endian) as
 * 16-bit integers. */
#define CLF_PANEL_HELPERS(N)                                                                       \
    static inline uint##N clf_panel_u8(const __global uchar *pb, int pw, int p, int c0) {          \
        return convert_uint##N(vload##N(0, pb + p * pw + c0));                                     \
    }                                                                                              \
    static inline float##N clf_panel_i8(const __global uchar *pb, int pw, int p, int c0) {         \
        return convert_float##N(vload##N(0, (const __global char *)pb + p * pw + c0));             \
    }                                                                                              \
    static inline ushort##N clf_panel_u16(const __global uchar *pb, int pw, int p, int c0) {       \
        return convert_ushort##N(vload##N(0, pb + p * pw + c0)) |                                  \
               (convert_ushort##N(vload##N(0, pb + (p + 1) * pw + c0)) << (ushort)8);              \
    }
#define CLF_PANEL_HELPERS_(N) CLF_PANEL_HELPERS(N) /* VW expanded first */
CLF_PANEL_HELPERS_(VW)
/* The fp16 in bytes p, p + 1 of VW columns (little-endian) as floats, exactly as clf_scale
 * converts one: F16C's vcvtph2ps where the kernel compiler targets it (x86 since Haswell: one
 * instruction, where the bit arithmetic below took 14 per vector of a block's scales in the
 * decoding loop), else in integers. */
#if VW == 16 && defined(__clang__) && defined(__AVX512F__)
static inline floatV clf_panel_half(const __global uchar *pb, int pw, int p, int c0) {
    return __builtin_ia32_vcvtph2ps512_mask(as_short16(clf_panel_u16(pb, pw, p, c0)),
                                            (float16)(0.0f), (ushort)0xffff, 4);
}
#elif VW == 8 && defined(__clang__) && defined(__F16C__)
static inline floatV clf_panel_half(const __global uchar *pb, int pw, int p, int c0) {
    return __builtin_ia32_vcvtph2ps256(as_short8(clf_panel_u16(pb, pw, p, c0)));
}
#else
static inline floatV clf_panel_half(const __global uchar *pb, int pw, int p, int c0) {
    const uintV h = CLF_CAT(convert_uint, VW)(clf_panel_u16(pb, pw, p, c0));
    const uintV a = (h & 0x7fffu) << 13, e = a & 0x0f800000u;
    floatV f = CLF_CAT(as_float, VW)(a + 0x38000000u);
    f = select(f, CLF_CAT(as_float, VW)(a + 0x70000000u), e == 0x0f800000u);
    f = select(f, CLF_CAT(as_float, VW)(a + 0x38800000u) - 0x1p-14f, e == 0u);
    return CLF_CAT(as_float, VW)(CLF_CAT(as_uint, VW)(f) | ((h & 0x8000u) << 16));
}
#endif
#ifdef DT_WORDS_AT
/* Word t of the quants (bytes DT_WORDS_AT + 4 t .. + 3) of VW columns. */
static inline uintV clf_panel_words(const __global uchar *pb, int pw, int t, int c0) {
    return CLF_CAT(vload, VW)(0, (const __global uint *)(pb + (DT_WORDS_AT + 4 * t) * pw) + c0);
}
/* Few rows of the word types (linear.cl, pairs_group): x quantized per 32 to int16 xi, and a
 * column's word w (bytes u = 0..3) gives pairs of nibbles as the two 16-bit halves of each lane:
 * (w >> s) & 0x000F000F holds the nibbles of bytes 0 and 2 (s = 0, 4) or 1 and 3 (s = 8, 12);
 * each multiplied by the matching pair of xi and summed into the lane (x86's pmaddwd where the
 * kernel compiler offers it: AVX-512BW at VW 16, AVX2 at VW 8; the same integers otherwise). */
#if VW == 16 && defined(__clang__) && defined(__AVX512BW__)
typedef short clf_short32 __attribute__((ext_vector_type(32)));
static inline intV clf_madd_pairs(uintV w, int x) {
    return __builtin_astype(__builtin_ia32_pmaddwd512(__builtin_astype(w, clf_short32),
                                                      __builtin_astype((int16)(x), clf_short32)),
                            int16);
}
#elif VW == 8 && defined(__clang__) && defined(__AVX2__)
static inline intV clf_madd_pairs(uintV w, int x) {
    return __builtin_astype(__builtin_ia32_pmaddwd256(__builtin_astype(w, short16),
                                                      __builtin_astype((int8)(x), short16)),
                            int8);
}
#else
static inline intV clf_madd_pairs(uintV w, int x) {
    return (CLF_CAT(as_int, VW)(w << 16) >> 16) * (as_int((uint)x << 16) >> 16) +
           (CLF_CAT(as_int, VW)(w) >> 16) * (x >> 16);
}
#endif
/* acc + clf_madd_pairs(w, *x): one vpdpwssd where linear.VNNI says the device runs AVX512-VNNI
 * (inline assembly: OpenCL C has no way to ask the compiler for it), *x broadcast from memory
 * (a register operand made the compiler keep each broadcast vector, and spill them). */
#if VW == 16 && defined(__clang__) && defined(__AVX512BW__) && defined(VNNI) && VNNI
static inline intV clf_dp_pairs(intV acc, uintV w, const int *x) {
    __asm__("vpdpwssd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(w), "m"(*x));
    return acc;
}
#else
static inline intV clf_dp_pairs(intV acc, uintV w, const int *x) {
    return acc + clf_madd_pairs(w, *x);
}
#endif
/* acc + the sum over each lane's four bytes of w, unsigned, times the matching byte of *x, signed
 * (linear.QX 2: int8 x against quants of at most 6 bits, so that x86's pmaddubsw cannot saturate:
 * 2 x 63 x 127 < 2^15): vpdpbusd with VNNI, else pmaddubsw then pmaddwd by ones. */
#if VW == 16 && defined(__clang__) && defined(__AVX512BW__) && defined(VNNI) && VNNI
static inline intV clf_dp_quads(intV acc, uintV w, const int *x) {
    __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(w), "m"(*x));
    return acc;
}
#elif VW == 16 && defined(__clang__) && defined(__AVX512BW__)
typedef char clf_char64 __attribute__((ext_vector_type(64)));
static inline intV clf_dp_quads(intV acc, uintV w, const int *x) {
    const clf_short32 p = __builtin_ia32_pmaddubsw512(__builtin_astype(w, clf_char64),
                                                      __builtin_astype((int16)(*x), clf_char64));
    return acc + __builtin_astype(__builtin_ia32_pmaddwd512(p, (clf_short32)(1)), int16);
}
#elif VW == 8 && defined(__clang__) && defined(__AVX2__)
typedef char clf_char32 __attribute__((ext_vector_type(32)));
static inline intV clf_dp_quads(intV acc, uintV w, const int *x) {
    const short16 p =
        __builtin_astype(__builtin_ia32_pmaddubsw256(__builtin_astype(w, clf_char32),
                                                     __builtin_astype((int8)(*x), clf_char32)),
                         short16);
    return acc + __builtin_astype(__builtin_ia32_pmaddwd256(p, (short16)(1)), int8);
}
#else
static inline intV clf_dp_quads(intV acc, uintV w, const int *x) {
    const intV wi = CLF_CAT(as_int, VW)(w);
    const uint u = (uint)*x;
    return acc + (wi & 0xff) * (as_int(u << 24) >> 24) +
           ((wi >> 8) & 0xff) * (as_int(u << 16) >> 24) +
           ((wi >> 16) & 0xff) * (as_int(u << 8) >> 24) + ((wi >> 24) & 0xff) * (as_int(u) >> 24);
}
#endif
/* Q8_0: a word's signed bytes as pairs, (b0, b2) in *lo and (b1, b3) in *hi, each sign-extended
 * into its 16-bit half (16-bit lane shifts where the x86 builtins are in use). */
#if VW == 16 && defined(__clang__) && defined(__AVX512BW__)
static inline void clf_i8_pairs(uintV w, uintV *lo, uintV *hi) {
    const clf_short32 s = __builtin_astype(w, clf_short32);
    *lo = __builtin_astype((clf_short32)((s << (short)8) >> (short)8), uint16);
    *hi = __builtin_astype((clf_short32)(s >> (short)8), uint16);
}
#elif VW == 8 && defined(__clang__) && defined(__AVX2__)
static inline void clf_i8_pairs(uintV w, uintV *lo, uintV *hi) {
    const short16 s = as_short16(w);
    *lo = as_uint8((s << (short)8) >> (short)8);
    *hi = as_uint8(s >> (short)8);
}
#else
static inline void clf_i8_pairs(uintV w, uintV *lo, uintV *hi) {
    const intV i = CLF_CAT(as_int, VW)(w);
    *lo = CLF_CAT(as_uint, VW)(((CLF_CAT(as_int, VW)(w << 24) >> 24) & 0xffff) |
                               ((CLF_CAT(as_int, VW)(w << 8) >> 24) << 16));
    *hi = CLF_CAT(as_uint, VW)(((CLF_CAT(as_int, VW)(w << 16) >> 24) & 0xffff) | ((i >> 24) << 16));
}
#endif
#endif
#if DT == CLF_DT_Q8_0
#define DT_SUB 32
static inline floatV dt_panel_sm(const __global uchar *pb, int pw, int g, int c0, floatV *m) {
    *m = (floatV)(0.0f);
    return clf_panel_half(pb, pw, 0, c0);
}
static inline floatV dt_panel_q(const __global uchar *pb, int pw, int e, int c0) {
    /* byte e % 4 of word e / 4, sign-extended */
    return convert_floatV(
        CLF_CAT(as_int, VW)(clf_panel_words(pb, pw, e >> 2, c0) << (uint)(24 - 8 * (e & 3))) >> 24);
}
#elif DT == CLF_DT_Q4_0
#define DT_SUB 32
static inline floatV dt_panel_sm(const __global uchar *pb, int pw, int g, int c0, floatV *m) {
    const floatV d = clf_panel_half(pb, pw, 0, c0);
    *m = 8.0f * d;
    return d;
}
static inline floatV dt_panel_q(const __global uchar *pb, int pw, int e, int c0) {
    const int i = e & 15; /* byte 2 + i: word i / 4, its byte i % 4, nibble e / 16 */
    return convert_floatV((clf_panel_words(pb, pw, i >> 2, c0) >> (8 * (i & 3) + 4 * (e >> 4))) &
                          15u);
}
#elif DT == CLF_DT_Q4_K
#define DT_SUB 32
static inline floatV dt_panel_sm(const __global uchar *pb, int pw, int g, int c0, floatV *m) {
    uintV sc, mn;
    if (g < 4) {
        sc = clf_panel_u8(pb, pw, 4 + g, c0) & 63u;
        mn = clf_panel_u8(pb, pw, 8 + g, c0) & 63u;
    } else {
        const uintV hi = clf_panel_u8(pb, pw, 8 + g, c0);
        sc = (hi & 15u) | ((clf_panel_u8(pb, pw, g, c0) >> 6) << 4);
        mn = (hi >> 4) | ((clf_panel_u8(pb, pw, 4 + g, c0) >> 6) << 4);
    }
    *m = clf_panel_half(pb, pw, 2, c0) * convert_floatV(mn);
    return clf_panel_half(pb, pw, 0, c0) * convert_floatV(sc);
}
static inline floatV dt_panel_q(const __global uchar *pb, int pw, int e, int c0) {
    const int g = e >> 5, l = e & 31; /* byte 16 + 32 (g / 2) + l: its word, byte, nibble */
    return convert_floatV(
        (clf_panel_words(pb, pw, 8 * (g >> 1) + (l >> 2), c0) >> (8 * (l & 3) + 4 * (g & 1))) &
        15u);
}
#elif DT == CLF_DT_Q6_K
#define DT_SUB 16
static inline floatV dt_panel_sm(const __global uchar *pb, int pw, int g, int c0, floatV *m) {
    const floatV s = clf_panel_half(pb, pw, 208, c0) * clf_panel_i8(pb, pw, 192 + g, c0);
    *m = 32.0f * s;
    return s;
}
static inline floatV dt_panel_q(const __global uchar *pb, int pw, int e, int c0) {
    const int h = e >> 7, q = (e >> 5) & 3, l = e & 31; /* bytes of ql and qh, as words */
    const uintV lo = clf_panel_words(pb, pw, 16 * h + 8 * (q & 1) + (l >> 2), c0) >>
                     (8 * (l & 3) + (q >> 1) * 4);
    const uintV hi = clf_panel_words(pb, pw, 32 + 8 * h + (l >> 2), c0) >> (8 * (l & 3) + 2 * q);
    return convert_floatV((lo & 15u) | ((hi & 3u) << 4));
}
#endif
#endif /* VW 8 or 16 */

/* Width-VW forms, expanded where a kernel file that defines VW uses them. */
#define dt_loadv(row, i) CLF_CAT(dt_load, VW)((row), (i))
#if DT_BLOCK == 1
#define SLOAD(i, p)  dt_loadv((const __global uchar *)(p), (i)*VW)
#define SLOAD1(i, p) dt_load1((const __global uchar *)(p), (i))
#endif
