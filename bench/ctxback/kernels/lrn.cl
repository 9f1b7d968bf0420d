// Local response normalization across channels (NCHW): lrn_fill_scale slides a window of `size` channels along c and writes scale = k + alpha/size * sum(x^2); lrn_compute_output writes x * scale^-beta.
// Table I row LRN; after Caffe's LRNFillScale and LRNComputeOutput kernels (OpenCL Caffe, src/caffe/greentea/cl_kernels/lrn.cl).
#include "ocl_builtins.h"

// One work-item per (n, h, w) column; nthreads = num * height * width.
__kernel void lrn_fill_scale(const int nthreads, __global const float *restrict in,
                             const int channels, const int height, const int width, const int size,
                             const float alpha_over_size, const float k,
                             __global float *restrict scale) {
  for (int index = get_global_id(0); index < nthreads; index += get_global_size(0)) {
    const int w = index % width;
    const int h = (index / width) % height;
    const int n = index / width / height;
    const int offset = (n * channels * height + h) * width + w;
    const int step = height * width;
    __global const float *in_off = in + offset;
    __global float *scale_off = scale + offset;
    const int pre_pad = (size - 1) / 2;
    const int post_pad = size - pre_pad - 1;
    float accum_scale = 0.0f;
    int head = 0;
    // Fill the window.
    while (head < post_pad && head < channels) {
      const float v = in_off[head * step];
      accum_scale = mad(v, v, accum_scale);
      ++head;
    }
    // Add the channel entering the window, drop the one leaving it.
    while (head < channels) {
      const float v = in_off[head * step];
      accum_scale = mad(v, v, accum_scale);
      if (head - size >= 0) {
        const float u = in_off[(head - size) * step];
        accum_scale -= u * u;
      }
      scale_off[(head - post_pad) * step] = mad(accum_scale, alpha_over_size, k);
      ++head;
    }
    // Drain the window.
    while (head < channels + post_pad) {
      if (head - size >= 0) {
        const float u = in_off[(head - size) * step];
        accum_scale -= u * u;
      }
      scale_off[(head - post_pad) * step] = mad(accum_scale, alpha_over_size, k);
      ++head;
    }
  }
}

__kernel void lrn_compute_output(const int nthreads, __global const float *restrict in,
                                 __global const float *restrict scale, const float negative_beta,
                                 __global float *restrict out) {
  for (int index = get_global_id(0); index < nthreads; index += get_global_size(0))
    out[index] = in[index] * pow(scale[index], negative_beta);
}
