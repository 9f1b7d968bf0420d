// Dot product x.y in two stages: each work-group reduces a strided share in __local memory to one partial sum, then one work-group adds the partials.
// Table I row DOT; after CLBlast's Xdot/XdotEpilogue (src/kernels/level1/xdot.opencl), the same scheme as Caffe's OpenCL dot.
#include "ocl_builtins.h"

#ifndef WGS1
#define WGS1 256 // work-group size of the main kernel
#endif
#ifndef WGS2
#define WGS2 256 // work-group size of the epilogue; the main kernel runs 2*WGS2 work-groups
#endif

__kernel __attribute__((reqd_work_group_size(WGS1, 1, 1)))
void Xdot(const int n, __global const float *restrict xgm, const int x_offset, const int x_inc,
          __global const float *restrict ygm, const int y_offset, const int y_inc,
          __global float *restrict output) {
  __local float lm[WGS1];
  const int lid = get_local_id(0);
  const int wgid = get_group_id(0);
  const int num_groups = get_num_groups(0);

  // Strided accumulation, two elements per trip.
  int id = wgid * WGS1 + lid;
  const int step = num_groups * WGS1;
  float acc0 = 0.0f, acc1 = 0.0f;
  while (id + step < n) {
    acc0 = mad(xgm[id * x_inc + x_offset], ygm[id * y_inc + y_offset], acc0);
    acc1 = mad(xgm[(id + step) * x_inc + x_offset], ygm[(id + step) * y_inc + y_offset], acc1);
    id += 2 * step;
  }
  if (id < n)
    acc0 = mad(xgm[id * x_inc + x_offset], ygm[id * y_inc + y_offset], acc0);
  lm[lid] = acc0 + acc1;
  barrier(CLK_LOCAL_MEM_FENCE);

  // Tree reduction in local memory.
#pragma unroll
  for (int s = WGS1 / 2; s > 0; s >>= 1) {
    if (lid < s)
      lm[lid] += lm[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0)
    output[wgid] = lm[0];
}

// One work-group of WGS2 adds the 2*WGS2 partial sums.
__kernel __attribute__((reqd_work_group_size(WGS2, 1, 1)))
void XdotEpilogue(__global const float *restrict input, __global float *restrict dot,
                  const int dot_offset) {
  __local float lm[WGS2];
  const int lid = get_local_id(0);
  lm[lid] = input[lid] + input[lid + WGS2];
  barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
  for (int s = WGS2 / 2; s > 0; s >>= 1) {
    if (lid < s)
      lm[lid] += lm[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0)
    dot[dot_offset] = lm[0];
}
