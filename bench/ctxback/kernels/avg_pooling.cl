// Average pooling over NCHW feature maps, forward and backward: one output (input) element per work-item, grid-stride loop.
// Table I row AP; after Caffe's AvePoolForward/AvePoolBackward kernels (OpenCL Caffe, src/caffe/greentea/cl_kernels/pooling.cl).
#include "ocl_builtins.h"

// Forward: each pooled element averages its window; the divisor counts the padded window (Caffe).
__kernel void ave_pool_forward(const int nthreads, __global const float *restrict bottom_data,
                               const int channels, const int height, const int width,
                               const int pooled_height, const int pooled_width, const int kernel_h,
                               const int kernel_w, const int stride_h, const int stride_w,
                               const int pad_h, const int pad_w, __global float *restrict top_data) {
  for (int index = get_global_id(0); index < nthreads; index += get_global_size(0)) {
    const int pw = index % pooled_width;
    const int ph = (index / pooled_width) % pooled_height;
    const int c = (index / pooled_width / pooled_height) % channels;
    const int n = index / pooled_width / pooled_height / channels;
    int hstart = ph * stride_h - pad_h;
    int wstart = pw * stride_w - pad_w;
    int hend = min(hstart + kernel_h, height + pad_h);
    int wend = min(wstart + kernel_w, width + pad_w);
    const int pool_size = (hend - hstart) * (wend - wstart);
    hstart = max(hstart, 0);
    wstart = max(wstart, 0);
    hend = min(hend, height);
    wend = min(wend, width);
    __global const float *bottom_slice = bottom_data + (n * channels + c) * height * width;
    float aveval = 0.0f;
    for (int h = hstart; h < hend; ++h) {
      __global const float *row = bottom_slice + h * width;
      for (int w = wstart; w < wend; ++w)
        aveval += row[w];
    }
    top_data[index] = aveval / (float)pool_size;
  }
}

// Backward: each bottom element gathers the gradients of every pooled window that covers it.
__kernel void ave_pool_backward(const int nthreads, __global const float *restrict top_diff,
                                const int channels, const int height, const int width,
                                const int pooled_height, const int pooled_width, const int kernel_h,
                                const int kernel_w, const int stride_h, const int stride_w,
                                const int pad_h, const int pad_w, __global float *restrict bottom_diff) {
  for (int index = get_global_id(0); index < nthreads; index += get_global_size(0)) {
    const int w = index % width + pad_w;
    const int h = (index / width) % height + pad_h;
    const int c = (index / width / height) % channels;
    const int n = index / width / height / channels;
    const int phstart = (h < kernel_h) ? 0 : (h - kernel_h) / stride_h + 1;
    const int phend = min(h / stride_h + 1, pooled_height);
    const int pwstart = (w < kernel_w) ? 0 : (w - kernel_w) / stride_w + 1;
    const int pwend = min(w / stride_w + 1, pooled_width);
    __global const float *top_slice = top_diff + (n * channels + c) * pooled_height * pooled_width;
    float gradient = 0.0f;
    for (int ph = phstart; ph < phend; ++ph) {
      const int hstart = ph * stride_h - pad_h;
      const int hend = min(hstart + kernel_h, height + pad_h);
      for (int pw = pwstart; pw < pwend; ++pw) {
        const int wstart = pw * stride_w - pad_w;
        const int wend = min(wstart + kernel_w, width + pad_w);
        const int pool_size = (hend - hstart) * (wend - wstart);
        gradient += top_slice[ph * pooled_width + pw] / (float)pool_size;
      }
    }
    bottom_diff[index] = gradient;
  }
}
