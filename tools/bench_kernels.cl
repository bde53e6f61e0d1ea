/*
 * bench_kernels.cl — clformer-bench's device-peak kernels (clpeak-style).
 *   copy1/copy4/copy16: global memory copy with float, float4, float16 loads (bytes read+written)
 *   read16: DRAM read bandwidth: RD float16 loads per work-item, one float written per work-item
 *           (1 / (16 RD) of the bytes read); CONTIG 1 reads RD consecutive vectors (CPUs), 0
 *           at a stride of the global size (neighbouring work-items neighbouring vectors: GPUs)
 *   fma_chains: fp32 multiply-add throughput, FCH chains of floatFW (built per shape)
 *   empty: kernel launch latency
 */

__kernel void copy1(const __global float *a, __global float *b) {
    b[get_global_id(0)] = a[get_global_id(0)];
}
__kernel void copy4(const __global float4 *a, __global float4 *b) {
    b[get_global_id(0)] = a[get_global_id(0)];
}
__kernel void copy16(const __global float16 *a, __global float16 *b) {
    b[get_global_id(0)] = a[get_global_id(0)];
}
#ifndef RD
#define RD 16
#endif
#ifndef CONTIG
#define CONTIG 1
#endif
__kernel void read16(const __global float16 *a, __global float *out) {
    const size_t g = get_global_id(0), n = get_global_size(0);
    float16 s = (float16)(0.0f);
    for (int i = 0; i < RD; i++)
        s += a[CONTIG ? g * RD + i : g + i * n];
    const float8 h8 = s.lo + s.hi;
    const float4 h4 = h8.lo + h8.hi;
    out[g] = h4.x + h4.y + h4.z + h4.w;
}

/* fp32 multiply-add throughput: FCH independent chains of floatFW in named variables (an array
 * of chains measured 58 vs 114 GFLOP/s on PoCL: it was not kept in registers). The host builds
 * FW 4/8/16 x FCH 4/8/12 x FOP fma/mad and keeps the best: 8 float16 chains need 16 ymm
 * registers on AVX2 and spill, so no one shape is the ceiling everywhere. FOP: PoCL 3.1 compiles
 * mad() as a multiply and an add (vmulps + vaddps): full rate on Zen 4, whose adds have pipes of
 * their own, but half the FMA rate on Intel (both on the FMA ports: 207 vs 476 GFLOP/s native
 * on a 2-core Xeon); fma() is one instruction where the device has it, and slow where it is
 * emulated (no CL_FP_FMA), so both are tried. 2 flops per lane per multiply-add. */
#ifndef FW
#define FW 16
#endif
#ifndef FCH
#define FCH 8
#endif
#ifndef FOP
#define FOP fma
#endif
#define FCAT_(a, b) a##b
#define FCAT(a, b)  FCAT_(a, b)
#define FT          FCAT(float, FW)
/* Every lane differs (FLANES): with splats in every operand a compiler may compute one lane and
 * broadcast it (NVIDIA's did: 471 "TFLOP/s" on an H200, whose fp32 peak is about 67). */
#if FW == 4
#define FLANES (float4)(0.0f, 1.0f, 2.0f, 3.0f)
#elif FW == 8
#define FLANES (float8)(0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f)
#else
#define FLANES                                                                                     \
    (float16)(0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f, 9.0f, 10.0f, 11.0f, 12.0f,     \
              13.0f, 14.0f, 15.0f)
#endif
__kernel void fma_chains(__global float *out, const float a, const float b, const int iters) {
    const FT fa = (FT)(a) + FLANES * 1e-8f, fb = (FT)(b) + FLANES * 1e-9f;
    FT x0 = (FT)((float)get_global_id(0) * 1e-9f) + FLANES * 1e-3f;
    FT x1 = x0 + 1.0f, x2 = x0 + 2.0f, x3 = x0 + 3.0f;
#if FCH > 4
    FT x4 = x0 + 4.0f, x5 = x0 + 5.0f, x6 = x0 + 6.0f, x7 = x0 + 7.0f;
#endif
#if FCH > 8
    FT x8 = x0 + 8.0f, x9 = x0 + 9.0f, x10 = x0 + 10.0f, x11 = x0 + 11.0f;
#endif
    for (int i = 0; i < iters; i++) {
        x0 = FOP(x0, fa, fb);
        x1 = FOP(x1, fa, fb);
        x2 = FOP(x2, fa, fb);
        x3 = FOP(x3, fa, fb);
#if FCH > 4
        x4 = FOP(x4, fa, fb);
        x5 = FOP(x5, fa, fb);
        x6 = FOP(x6, fa, fb);
        x7 = FOP(x7, fa, fb);
#endif
#if FCH > 8
        x8 = FOP(x8, fa, fb);
        x9 = FOP(x9, fa, fb);
        x10 = FOP(x10, fa, fb);
        x11 = FOP(x11, fa, fb);
#endif
    }
    FT s = (x0 + x1) + (x2 + x3);
#if FCH > 4
    s += (x4 + x5) + (x6 + x7);
#endif
#if FCH > 8
    s += (x8 + x9) + (x10 + x11);
#endif
    /* every lane feeds the result, so none can be dropped */
#if FW == 16
    const float8 s8 = s.lo + s.hi;
    const float4 s4 = s8.lo + s8.hi;
#elif FW == 8
    const float4 s4 = s.lo + s.hi;
#else
    const float4 s4 = s;
#endif
    out[get_global_id(0)] = (s4.x + s4.y) + (s4.z + s4.w);
}

__kernel void empty(__global float *out) {
    if (get_global_id(0) == 0x7fffffff) out[0] = 0.0f;
}
