// Single-precision GEMV y = alpha*A*x + beta*y: Xgemv gives each work-item WPT rows and stages x through __local memory in chunks of WGS; gemv_row_reduce gives each work-group one row and reduces in __local memory.
// Table I row MV; Xgemv after CLBlast's Xgemv (src/kernels/level2/xgemv.opencl, row-major and column-major A), gemv_row_reduce after the row-per-work-group GEMV of clBLAS and DL libraries.
#include "ocl_builtins.h"

#ifndef WGS
#define WGS 64 // work-group size; also the chunk of x staged in local memory
#endif
#ifndef WPT
#define WPT 2 // rows per work-item
#endif

__kernel __attribute__((reqd_work_group_size(WGS, 1, 1)))
void Xgemv(const int m, const int n, const float alpha, const float beta, const int a_row_major,
           __global const float *restrict agm, const int a_offset, const int a_ld,
           __global const float *restrict xgm, const int x_offset, const int x_inc,
           __global float *restrict ygm, const int y_offset, const int y_inc) {
  __local float xlm[WGS];
  const int lid = get_local_id(0);
  const int gid = get_global_id(0);
  const int gsize = get_global_size(0);

  float acc[WPT];
#pragma unroll
  for (int w = 0; w < WPT; ++w)
    acc[w] = 0.0f;

  // Full chunks of WGS columns through local memory.
  const int n_floor = (n / WGS) * WGS;
  for (int kwg = 0; kwg < n_floor; kwg += WGS) {
    xlm[lid] = xgm[(kwg + lid) * x_inc + x_offset];
    barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
    for (int w = 0; w < WPT; ++w) {
      const int row = w * gsize + gid;
      if (row < m) {
        if (a_row_major) {
          __global const float *a = agm + row * a_ld + kwg + a_offset;
#pragma unroll 8
          for (int kl = 0; kl < WGS; ++kl)
            acc[w] = mad(a[kl], xlm[kl], acc[w]);
        } else {
          __global const float *a = agm + kwg * a_ld + row + a_offset;
#pragma unroll 8
          for (int kl = 0; kl < WGS; ++kl)
            acc[w] = mad(a[kl * a_ld], xlm[kl], acc[w]);
        }
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }

  // The remaining columns straight from global memory, then the update of y.
#pragma unroll
  for (int w = 0; w < WPT; ++w) {
    const int row = w * gsize + gid;
    if (row < m) {
      for (int k = n_floor; k < n; ++k) {
        const float a = a_row_major ? agm[row * a_ld + k + a_offset] : agm[k * a_ld + row + a_offset];
        acc[w] = mad(a, xgm[k * x_inc + x_offset], acc[w]);
      }
      __global float *y = ygm + row * y_inc + y_offset;
      *y = mad(alpha, acc[w], beta * *y);
    }
  }
}

// Row-major A, one work-group per row (grid-strided over rows), 4 columns per trip.
__kernel __attribute__((reqd_work_group_size(WGS, 1, 1)))
void gemv_row_reduce(const int m, const int n, const float alpha, const float beta,
                     __global const float *restrict A, const int lda,
                     __global const float *restrict x, __global float *restrict y) {
  __local float partial[WGS];
  const int lid = get_local_id(0);
  for (int row = get_group_id(0); row < m; row += get_num_groups(0)) {
    __global const float *a = A + row * lda;
    float sum = 0.0f;
    int k = lid * 4;
    for (; k + 4 <= n; k += WGS * 4) {
#pragma unroll
      for (int u = 0; u < 4; ++u)
        sum = mad(a[k + u], x[k + u], sum);
    }
    for (; k < n; ++k) // this work-item's last, partial group of 4
      sum = mad(a[k], x[k], sum);
    partial[lid] = sum;
    barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
    for (int s = WGS / 2; s > 0; s >>= 1) {
      if (lid < s)
        partial[lid] += partial[lid + s];
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
      y[row] = mad(alpha, partial[0], beta * y[row]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}
