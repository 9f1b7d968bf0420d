/* launch_host_path.c: what the host runtime adds to a launch it runs as written, on the CPU alone (a fake GPU).
 * EffiSha §6.3 / FLEP §4.2: a launch that needs no eviction must cost what the program's own launch costs (issue 39). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "fake_gpu.h"
#include "runtime.h"

static char stub;

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

static int compare(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* A process with no daemon and no PREEMPT_STRESS: every launch of a converted kernel goes through
 * preempt_launch_kernel to the program's own call. Under CUDA's lazy loading (its default) the runtime cannot evict
 * and takes its shortest path; under eager loading (how a process that expects evictions runs) it also asks for the
 * stream's capture state and times one launch in 64 (as_written.c). Rounds alternate the two paths; the figure is
 * the median over rounds of (through the runtime - the fake launch call alone), with the spread. The fake GPU's
 * calls cost nothing: what CUDA's own calls cost is measured on the GPU (bench/preemption/as_written_cost.cu). */
static int measure(int launches, int lazy) {
  enum { rounds = 11 };
  const preempt_dim3 grid = {37 * 3 * 2, 1, 1}, block = {64, 1, 1}; /* launch_storm's shape, one wave */
  long long first = 1, second = 2;
  void *args[] = {&first, &second};
  void *stream = &first;
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  fake_gpu.lazy_loading = lazy;
  fake_gpu.has_original = 1;
  fake_gpu.expected_params = 2;
  preempt_kernel_desc desc = fake_kernel_desc(&stub, "_Z5stormPxx", 2);
  const preempt_gpu_ops *gpu = preempt_runtime_context()->gpu;
  double added[rounds];
  for (int round = 0; round < rounds; round++) {
    double start = now_ns();
    for (int i = 0; i < launches; i++)
      if (preempt_launch_kernel(&desc, grid, block, args, 0, stream) != 0 || !fake_gpu.last.as_written) {
        fprintf(stderr, "launch_host_path: launch %d did not run as written\n", i);
        return 1;
      }
    double through = now_ns() - start;
    start = now_ns();
    for (int i = 0; i < launches; i++)
      gpu->launch(&stub, grid, block, args, 0, stream);
    added[round] = (through - (now_ns() - start)) / launches;
  }
  qsort(added, rounds, sizeof added[0], compare);
  printf("launch_host_path: the runtime adds %.1f ns per as-written launch under %s loading (median of %d rounds of "
         "%d; %.1f..%.1f)\n",
         added[rounds / 2], lazy ? "lazy" : "eager", rounds, launches, added[0], added[rounds - 1]);
  return 0;
}

int main(int argc, char **argv) {
  const int launches = argc > 1 ? atoi(argv[1]) : 1000000;
  return measure(launches, 1) || measure(launches, 0);
}
