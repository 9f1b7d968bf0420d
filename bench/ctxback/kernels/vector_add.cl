// Vector addition: add_kernel is y = a + b one element per work-item (grid-stride); vector_axpy is y = alpha*x + y on float4s, WPT vectors per work-item, unrolled.
// Table I row VA; add_kernel after Caffe's kernel_add (math_functions.cl), vector_axpy after CLBlast's XaxpyFaster (src/kernels/level1/xaxpy.opencl).
#include "ocl_builtins.h"

#ifndef WPT
#define WPT 4 // float4 vectors per work-item in vector_axpy
#endif

__kernel void add_kernel(const int n, __global const float *restrict a,
                         __global const float *restrict b, __global float *restrict y) {
  for (int index = get_global_id(0); index < n; index += get_global_size(0))
    y[index] = a[index] + b[index];
}

// n (in floats) is a multiple of 4; work-item gid handles vectors gid, gid + gsize, ... (WPT of them).
__kernel void vector_axpy(const int n, const float alpha, __global const float4 *restrict xgm,
                          __global float4 *restrict ygm) {
  const int gid = get_global_id(0);
  const int gsize = get_global_size(0);
#pragma unroll
  for (int w = 0; w < WPT; ++w) {
    const int id = w * gsize + gid;
    if (id < n / 4) {
      const float4 xv = xgm[id];
      const float4 yv = ygm[id];
      ygm[id] = (float4)(mad(alpha, xv.x, yv.x), mad(alpha, xv.y, yv.y), mad(alpha, xv.z, yv.z),
                         mad(alpha, xv.w, yv.w));
    }
  }
}
