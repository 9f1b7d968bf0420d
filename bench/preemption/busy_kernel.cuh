// busy_kernel.cuh: a kernel that keeps its SMs busy with arithmetic, as a running persistent grid keeps them.
// The "every SM busy" side of latency_floor.cu and evict_call_probe.cu (issue 42's latency pieces).
#ifndef PREEMPT_BUSY_KERNEL_CUH
#define PREEMPT_BUSY_KERNEL_CUH

__global__ void busy_kernel(unsigned *sink, unsigned iterations) {
  unsigned value = threadIdx.x;
  for (unsigned i = 0; i < iterations; i++)
    value = value * 1664525u + 1013904223u;
  if (value == 0xdeadbeef)
    sink[blockIdx.x] = value;
}

#endif
