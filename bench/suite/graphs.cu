// graphs: converted kernels inside CUDA graphs, by stream capture (global mode) and as explicit kernel nodes.
// Part of preempt's correctness suite (bench/suite, issue 39): before kernel ABI 9 the first launch inside a capture
// failed in the runtime's marker lookup (CUDA error 900) and crashed, and a kernel node ran the converted kernel
// without its parameters.
#include "common.h"

namespace {

constexpr size_t kN = (size_t(1) << 22) + 77;
constexpr int kBlock = 256;
constexpr int kSteps = 6;     // captured launches per graph
constexpr int kReplays = 8;   // launches of each graph per repetition
constexpr size_t kSampleStride = 1021;

// x = x * 0.5 + y: exact for these inputs (multiples of powers of two), so the bits do not depend on contraction.
__global__ void axpy_half(float* __restrict__ x, const float* __restrict__ y, size_t n) {
  size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) x[i] = fmaf(x[i], 0.5f, y[i]);
}

// Counts its blocks: a kernel node that ran with missing parameters, or twice, changes the count.
__global__ void count_blocks(unsigned long long* counter, unsigned stride) {
  if (threadIdx.x == 0) atomicAdd(counter, static_cast<unsigned long long>(stride));
}

}  // namespace

int main(int argc, char** argv) {
  Args args = parse_args(argc, argv);

  Rng rng(0x5EED0031);
  std::vector<float> hx(kN), hy(kN);
  for (size_t i = 0; i < kN; ++i) hx[i] = static_cast<float>(static_cast<int>(rng.unit() * 1024)) / 64.0f;
  for (size_t i = 0; i < kN; ++i) hy[i] = static_cast<float>(static_cast<int>(rng.unit() * 256)) / 256.0f;
  float* dx = upload(hx);
  float* dy = upload(hy);
  unsigned long long* dcounter = device_alloc<unsigned long long>(1);
  const unsigned grid = div_up(kN, kBlock);

  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  // Stream capture in global mode: the first <<<>>> launches of these kernels happen inside the capture.
  cudaGraph_t captured;
  CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  for (int k = 0; k < kSteps; ++k) {
    axpy_half<<<grid, kBlock, 0, stream>>>(dx, dy, kN);
    LAUNCH_CHECK();
  }
  count_blocks<<<grid, kBlock, 0, stream>>>(dcounter, 1);
  LAUNCH_CHECK();
  CUDA_CHECK(cudaStreamEndCapture(stream, &captured));
  cudaGraphExec_t captured_exec;
  CUDA_CHECK(cudaGraphInstantiate(&captured_exec, captured, 0));

  // An explicit graph: one kernel node of the converted kernel, given by its pointer (the runtime never sees it).
  cudaGraph_t explicit_graph;
  CUDA_CHECK(cudaGraphCreate(&explicit_graph, 0));
  unsigned stride = 3;
  void* node_args[] = {&dcounter, &stride};
  cudaKernelNodeParams params = {};
  params.func = reinterpret_cast<void*>(count_blocks);
  params.gridDim = dim3(grid);
  params.blockDim = dim3(kBlock);
  params.kernelParams = node_args;
  cudaGraphNode_t node;
  CUDA_CHECK(cudaGraphAddKernelNode(&node, explicit_graph, nullptr, 0, &params));
  cudaGraphExec_t explicit_exec;
  CUDA_CHECK(cudaGraphInstantiate(&explicit_exec, explicit_graph, 0));

  time_reps(
      args.reps, stream,
      [&] {
        CUDA_CHECK(cudaMemcpy(dx, hx.data(), kN * sizeof(float), cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemset(dcounter, 0, sizeof(unsigned long long)));
      },
      [&] {
        for (int r = 0; r < kReplays; ++r) {
          CUDA_CHECK(cudaGraphLaunch(captured_exec, stream));
          CUDA_CHECK(cudaGraphLaunch(explicit_exec, stream));
        }
      });

  std::vector<float> out = download(dx, kN);
  std::vector<unsigned long long> counter = download(dcounter, 1);
  write_output(args.out_path, {out_buf(out), out_buf(counter)});

  Checker check("graphs");
  for (size_t i = 0; i < kN; i += kSampleStride) {
    float want = hx[i];
    for (int r = 0; r < kReplays * kSteps; ++r) want = fmaf(want, 0.5f, hy[i]);
    check.close(out[i], want, 0.0, 0.0, "element %zu", i);
  }
  unsigned long long want_count = static_cast<unsigned long long>(grid) * kReplays * (1 + stride);
  check.equal(counter[0], want_count, "block count");
  check.finish();
  CUDA_CHECK(cudaGraphExecDestroy(captured_exec));
  CUDA_CHECK(cudaGraphExecDestroy(explicit_exec));
  CUDA_CHECK(cudaGraphDestroy(captured));
  CUDA_CHECK(cudaGraphDestroy(explicit_graph));
  CUDA_CHECK(cudaStreamDestroy(stream));
  return 0;
}
