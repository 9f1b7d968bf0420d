// Direct 2-D convolution (NCHW, KxK filter, stride, zero padding, bias, optional fused ReLU); each work-item computes 4 adjacent outputs of one row.
// Table I row DC; after the direct (non-im2col) convolution kernels of OpenCL deep-learning libraries (OpenCL Caffe's spatial convolution, MIOpen's direct convolutions).
#include "ocl_builtins.h"

#ifndef KERNEL_H
#define KERNEL_H 3
#endif
#ifndef KERNEL_W
#define KERNEL_W 3
#endif
#ifndef STRIDE_H
#define STRIDE_H 1
#endif
#ifndef STRIDE_W
#define STRIDE_W 1
#endif
#define OUT_BLOCK_W 4                                        // outputs per work-item, along x
#define IN_BLOCK_W ((OUT_BLOCK_W - 1) * STRIDE_W + KERNEL_W) // input columns they read

// NDRange: x = ceil(out_width / OUT_BLOCK_W), y = out_height, z = num * num_output with a
// local size of 1 in z, so that the output channel (and so every filter tap) is work-group uniform.
__kernel void conv_forward_direct(__global const float *restrict bottom,
                                  __global const float *restrict weight,
                                  __global const float *restrict bias, __global float *restrict top,
                                  const int channels, const int height, const int width,
                                  const int num_output, const int out_height, const int out_width,
                                  const int pad_h, const int pad_w, const int fuse_relu) {
  const int ox0 = get_global_id(0) * OUT_BLOCK_W;
  const int oy = get_global_id(1);
  const int nm = get_group_id(2);
  const int m = nm % num_output;
  const int n = nm / num_output;
  if (ox0 >= out_width || oy >= out_height)
    return;

  const int plane = height * width;
  __global const float *in_n = bottom + n * channels * plane;
  __global const float *w_m = weight + m * channels * (KERNEL_H * KERNEL_W);
  const int iy0 = oy * STRIDE_H - pad_h;
  const int ix0 = ox0 * STRIDE_W - pad_w;

  float acc[OUT_BLOCK_W];
  const float b = bias[m];
#pragma unroll
  for (int i = 0; i < OUT_BLOCK_W; ++i)
    acc[i] = b;

  for (int c = 0; c < channels; ++c) {
    __global const float *in_c = in_n + c * plane;
    __global const float *w_c = w_m + c * (KERNEL_H * KERNEL_W);
#pragma unroll
    for (int ky = 0; ky < KERNEL_H; ++ky) {
      const int iy = iy0 + ky;
      if (iy < 0 || iy >= height)
        continue;
      __global const float *in_row = in_c + iy * width;
      float row[IN_BLOCK_W];
#pragma unroll
      for (int j = 0; j < IN_BLOCK_W; ++j) {
        const int ix = ix0 + j;
        row[j] = (ix >= 0 && ix < width) ? in_row[ix] : 0.0f;
      }
#pragma unroll
      for (int kx = 0; kx < KERNEL_W; ++kx) {
        const float wv = w_c[ky * KERNEL_W + kx];
#pragma unroll
        for (int i = 0; i < OUT_BLOCK_W; ++i)
          acc[i] = mad(row[i * STRIDE_W + kx], wv, acc[i]);
      }
    }
  }

  __global float *out_row = top + ((n * num_output + m) * out_height + oy) * out_width;
#pragma unroll
  for (int i = 0; i < OUT_BLOCK_W; ++i) {
    if (ox0 + i < out_width)
      out_row[ox0 + i] = fuse_relu ? fmax(acc[i], 0.0f) : acc[i];
  }
}
