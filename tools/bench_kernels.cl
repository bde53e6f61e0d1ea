/*
 * bench_kernels.cl — clformer-bench's device-peak kernels (clpeak-style).
 *   copy1/copy4/copy16: global memory copy with float, float4, float16 loads (bytes read+written)
 *   fma16: fp32 multiply-add throughput on float16, NCHAINS independent chains
 *   empty: kernel launch latency
 */
#ifndef NCHAINS
#define NCHAINS 8 /* independent FMA chains per work-item (hides FMA latency) */
#endif

__kernel void copy1(const __global float *a, __global float *b) {
    b[get_global_id(0)] = a[get_global_id(0)];
}
__kernel void copy4(const __global float4 *a, __global float4 *b) {
    b[get_global_id(0)] = a[get_global_id(0)];
}
__kernel void copy16(const __global float16 *a, __global float16 *b) {
    b[get_global_id(0)] = a[get_global_id(0)];
}

__kernel void fma16(__global float *out, const float a, const float b, const int iters) {
    float16 x[NCHAINS];
    const float seed = (float)get_global_id(0) * 1e-9f;
    for (int c = 0; c < NCHAINS; c++) x[c] = (float16)(seed + (float)c);
    for (int i = 0; i < iters; i++) {
#pragma unroll
        for (int c = 0; c < NCHAINS; c++) x[c] = mad(x[c], (float16)a, (float16)b);
    }
    float16 s = x[0];
    for (int c = 1; c < NCHAINS; c++) s += x[c];
    out[get_global_id(0)] = s.s0 + s.s1 + s.s2 + s.s3 + s.s4 + s.s5 + s.s6 + s.s7 + s.s8 + s.s9 +
                            s.sa + s.sb + s.sc + s.sd + s.se + s.sf;
}

__kernel void empty(__global float *out) {
    if (get_global_id(0) == 0x7fffffff) out[0] = 0.0f;
}
