// ReLU activation with Caffe's negative slope (leaky ReLU when nonzero), forward and backward, one element per work-item in a grid-stride loop.
// Table I row RELU; after Caffe's ReLUForward/ReLUBackward kernels (OpenCL Caffe, src/caffe/greentea/cl_kernels/activation.cl).
#include "ocl_builtins.h"

__kernel void relu_forward(const int n, __global const float *restrict in,
                           __global float *restrict out, const float negative_slope) {
  for (int index = get_global_id(0); index < n; index += get_global_size(0)) {
    const float v = in[index];
    out[index] = v > 0.0f ? v : v * negative_slope;
  }
}

__kernel void relu_backward(const int n, __global const float *restrict in_diff,
                            __global const float *restrict in_data,
                            __global float *restrict out_diff, const float negative_slope) {
  for (int index = get_global_id(0); index < n; index += get_global_size(0)) {
    const float d = in_diff[index];
    out_diff[index] = d * ((in_data[index] > 0.0f) + (in_data[index] <= 0.0f) * negative_slope);
  }
}
