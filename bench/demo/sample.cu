// sample.cu: the README demo program: three kernels, two that the plugin converts and one it refuses.
// Plain CUDA: built with and without libpreempt.so it must print the same checksums (FLEP §4.1 conversion).
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK_CUDA(call)                                                                           \
  do {                                                                                             \
    cudaError_t status_ = (call);                                                                  \
    if (status_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "sample: %s failed: %s\n", #call, cudaGetErrorString(status_));         \
      std::exit(2);                                                                                \
    }                                                                                              \
  } while (0)

// 1D, divergent early exit and no barrier: converted.
__global__ void saxpy(float a, const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  y[i] = a * x[i] + y[i];
}

// 2D grid, shared-memory tile and barriers: converted.
__global__ void blur_rows(const float *in, float *out, int width, int height) {
  __shared__ float tile[16][18];
  int x = blockIdx.x * 16 + threadIdx.x, y = blockIdx.y * 16 + threadIdx.y;
  bool inside = x < width && y < height;
  tile[threadIdx.y][threadIdx.x + 1] = inside ? in[y * width + x] : 0.0f;
  if (threadIdx.x == 0)
    tile[threadIdx.y][0] = (inside && x > 0) ? in[y * width + x - 1] : 0.0f;
  if (threadIdx.x == 15)
    tile[threadIdx.y][17] = (inside && x + 1 < width) ? in[y * width + x + 1] : 0.0f;
  __syncthreads();
  if (inside)
    out[y * width + x] = 0.25f * tile[threadIdx.y][threadIdx.x] + 0.5f * tile[threadIdx.y][threadIdx.x + 1] +
                         0.25f * tile[threadIdx.y][threadIdx.x + 2];
}

// A thread-divergent return before a barrier: refused, and it still runs as written.
__global__ void block_sums(const float *in, float *sums, int n) {
  __shared__ float partial[256];
  int i = blockIdx.x * 256 + threadIdx.x;
  if (i >= n)
    return;
  partial[threadIdx.x] = in[i];
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0.0f;
    for (int k = 0; k < 256 && blockIdx.x * 256 + k < n; k++)
      total += partial[k];
    sums[blockIdx.x] = total;
  }
}

static double checksum(const std::vector<float> &values) {
  double sum = 0.0;
  for (size_t i = 0; i < values.size(); i++)
    sum += values[i] * (double)((i % 7) + 1);
  return sum;
}

int main() {
  const int width = 2048, height = 1024, n = width * height;
  std::vector<float> host(n);
  for (int i = 0; i < n; i++)
    host[i] = (float)((i * 37) % 101) / 8.0f;
  float *x, *y, *blurred, *sums;
  CHECK_CUDA(cudaMalloc(&x, n * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&y, n * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&blurred, n * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&sums, (n / 256) * sizeof(float)));
  CHECK_CUDA(cudaMemcpy(x, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(y, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));

  // Enough rounds (tens of milliseconds) for PREEMPT_STRESS=1 to evict the
  // kernels while they run.
  const int rounds = 200;
  for (int round = 0; round < rounds; round++) {
    saxpy<<<(n + 255) / 256, 256>>>(2.0f, x, y, n);
    CHECK_CUDA(cudaGetLastError());
    blur_rows<<<dim3(width / 16, height / 16), dim3(16, 16)>>>(y, blurred, width, height);
    CHECK_CUDA(cudaGetLastError());
    block_sums<<<n / 256, 256>>>(blurred, sums, n);
    CHECK_CUDA(cudaGetLastError());
  }
  CHECK_CUDA(cudaDeviceSynchronize());

  std::vector<float> result(n), block_totals(n / 256);
  CHECK_CUDA(cudaMemcpy(result.data(), blurred, n * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(block_totals.data(), sums, (n / 256) * sizeof(float), cudaMemcpyDeviceToHost));
  // Reference on the CPU, same operation order as the kernels.
  std::vector<float> expected_y(n), expected_blur(n);
  for (int i = 0; i < n; i++) {
    expected_y[i] = host[i];
    for (int round = 0; round < rounds; round++) // multiples of 1/8 below 2^20: exact in float
      expected_y[i] = 2.0f * host[i] + expected_y[i];
  }
  for (int row = 0; row < height; row++)
    for (int col = 0; col < width; col++) {
      float left = col > 0 ? expected_y[row * width + col - 1] : 0.0f;
      float right = col + 1 < width ? expected_y[row * width + col + 1] : 0.0f;
      expected_blur[row * width + col] = 0.25f * left + 0.5f * expected_y[row * width + col] + 0.25f * right;
    }
  int wrong = 0;
  for (int i = 0; i < n; i++)
    wrong += std::abs(result[i] - expected_blur[i]) > 1e-4f * (1.0f + std::abs(expected_blur[i]));
  std::printf("sample: blur checksum %.6f, block-sum checksum %.6f, %d of %d values off the CPU reference\n",
              checksum(result), checksum(block_totals), wrong, n);
  return wrong == 0 ? 0 : 3;
}
