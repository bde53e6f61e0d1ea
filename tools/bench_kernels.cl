/*
 * bench_kernels.cl — clformer-bench's device-peak kernels (clpeak-style).
 *   copy1/copy4/copy16: global memory copy with float, float4, float16 loads (bytes read+written)
 *   fma16: fp32 multiply-add throughput on float16, 8 independent chains
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

/* 8 independent float16 chains in named variables (an array of chains measured 58 vs 114
 * GFLOP/s on PoCL: it was not kept in registers). 2 flops per lane per mad. */
__kernel void fma16(__global float *out, const float a, const float b, const int iters) {
    const float16 fa = (float16)(a), fb = (float16)(b);
    float16 x0 = (float16)((float)get_global_id(0) * 1e-9f);
    float16 x1 = x0 + 1.0f, x2 = x0 + 2.0f, x3 = x0 + 3.0f, x4 = x0 + 4.0f, x5 = x0 + 5.0f,
            x6 = x0 + 6.0f, x7 = x0 + 7.0f;
    for (int i = 0; i < iters; i++) {
        x0 = mad(x0, fa, fb);
        x1 = mad(x1, fa, fb);
        x2 = mad(x2, fa, fb);
        x3 = mad(x3, fa, fb);
        x4 = mad(x4, fa, fb);
        x5 = mad(x5, fa, fb);
        x6 = mad(x6, fa, fb);
        x7 = mad(x7, fa, fb);
    }
    float16 s = ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7));
    out[get_global_id(0)] = s.s0 + s.s5 + s.sa + s.sf;
}

__kernel void empty(__global float *out) {
    if (get_global_id(0) == 0x7fffffff) out[0] = 0.0f;
}
