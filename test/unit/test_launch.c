/* test_launch.c: unit tests of the host runtime's launch path (runtime-host/launch.c) over a fake GPU.
 * FLEP §4.1: converted kernels run as persistent grids with their own control block; others run as written. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "fake_gpu.h"
#include "preempt.h"
#include "runtime.h"

static int stub_a, stub_b;

/* The relaunch thread enqueues, under the runtime's lock, the relaunches
 * whose launch has started (to the fake: once events_pending is 0). Waits
 * until it has been quiet for 20 ms, then takes the lock (any API call) so
 * that a relaunch in progress has finished. */
static void wait_for_relauncher(void) {
  for (int round = 0; round < 100; round++) {
    int launches = __atomic_load_n(&fake_gpu.launches, __ATOMIC_ACQUIRE);
    usleep(20000);
    if (launches == __atomic_load_n(&fake_gpu.launches, __ATOMIC_ACQUIRE))
      break;
  }
  preempt_launch_state state;
  preempt_query(0, &state);
}

/* One launch of desc (ctas CTAs of 32 threads) on each of count streams (to the fake, a stream is any address),
 * each launch's id kept in launches when given. */
static void launch_on_streams(preempt_kernel_desc *desc, unsigned ctas, int count, long long *streams,
                              preempt_launch_id *launches) {
  for (int index = 0; index < count; index++) {
    CHECK_EQ_U64(preempt_launch_kernel(desc, (preempt_dim3){ctas, 1, 1}, (preempt_dim3){32, 1, 1}, NULL, 0,
                                       &streams[index]), 0);
    if (launches)
      launches[index] = preempt_last_launch();
  }
}

/* A converted kernel's launch runs its unconverted copy, as written, unless its duration predicted from timed launches
 * (per wave of the copy's occupancy) reaches PREEMPT_LONG_US (default 500): docs/preemption.md, "Launches as written". */
static void test_short_launches(void) {
  static const preempt_dim3 block64 = {64, 1, 1};
  long long first = 99, second = 7;
  void *args[] = {&first, &second};
  void *app_stream = &first;
  preempt_kernel_info info;
  unsetenv("PREEMPT_LONG_US"); /* the default */

  /* Never timed: runs as written and is timed, with no control block (no device memory), no stream wait. */
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  {
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z4manyPxx", 2);
    fake_gpu.has_original = 1;
    fake_gpu.expected_params = 2;
    fake_gpu.elapsed_ms = 0.1f; /* 95 waves of 1056 blocks: about 1.05 us a wave */
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){100000, 1, 1}, block64, args, 0, app_stream), 0);
    CHECK(fake_gpu.last.as_written);
    CHECK(fake_gpu.last.args == args && fake_gpu.last.grid.x == 100000 && fake_gpu.last.stream == app_stream);
    CHECK_EQ_U64(fake_gpu.timed_event_records, 2);
    CHECK_EQ_U64(fake_gpu.stream_waits, 0);
    CHECK_EQ_U64(fake_gpu.device_allocs, 0);
    CHECK_EQ_U64(preempt_last_launch(), 0);
    /* The sample is read at the next launch: 100 us predicted, short, and not timed again. */
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){100000, 1, 1}, block64, args, 0, app_stream), 0);
    CHECK(fake_gpu.last.as_written);
    CHECK_EQ_U64(fake_gpu.timed_event_records, 2);
    /* Ten times the grid: about 1 ms predicted, long: the converted form, tracked and evictable. */
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){1000000, 1, 1}, block64, args, 0, app_stream), 0);
    CHECK(fake_gpu.last.persistent && !fake_gpu.last.original);
    CHECK(preempt_last_launch() != 0);
    CHECK(fake_gpu.device_allocs > 0);
    CHECK_EQ_U64(preempt_get_kernel_info(&desc, &info), PREEMPT_OK);
    CHECK_EQ_U64(info.short_launches, 2);
    CHECK_EQ_U64(info.capture_launches, 0);
    CHECK_EQ_U64(info.launches, 3);
    /* Every 64th short launch is timed again: a kernel whose blocks grow longer is seen. */
    int timed = fake_gpu.timed_event_records;
    for (int launch = 0; launch < 63; launch++) /* short launches 2..64: the 64th is timed */
      CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){2000, 1, 1}, block64, args, 0, app_stream), 0);
    CHECK(fake_gpu.timed_event_records > timed);
    CHECK(fake_gpu.last.as_written);
    fake_gpu.elapsed_ms = 2.0f; /* the timed launch (2 waves) took 2 ms */
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){2000, 1, 1}, block64, args, 0, app_stream), 0);
    CHECK(fake_gpu.last.persistent);
    /* A long launch whose grid fits in one wave still runs as written: no CTA of it could yield (one-wave rule). */
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){1000, 1, 1}, block64, args, 0, app_stream), 0);
    CHECK(fake_gpu.last.original); /* the one-wave path: the copy through the driver */
  }

  /* Lazy module loading: nothing in the process could evict (every eviction would be refused), so even a long
   * launch runs as written, untimed, counted apart from the short ones; PREEMPT_LONG_US=0 still converts. */
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  {
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z4idlePxx", 2);
    fake_gpu.has_original = 1;
    fake_gpu.expected_params = 2;
    fake_gpu.lazy_loading = 1;
    fake_gpu.elapsed_ms = 100.0f; /* would be long, were it timed */
    for (int launch = 0; launch < 3; launch++) {
      CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){1000000, 1, 1}, block64, args, 0, app_stream), 0);
      CHECK(fake_gpu.last.as_written && !fake_gpu.last.persistent);
      CHECK(fake_gpu.last.args == args && fake_gpu.last.grid.x == 1000000 && fake_gpu.last.stream == app_stream);
    }
    CHECK_EQ_U64(fake_gpu.timed_event_records, 0);
    CHECK_EQ_U64(fake_gpu.device_allocs, 0);
    /* Only the marker is read, once: no form is looked up (under lazy loading each lookup loads it). */
    CHECK_EQ_U64(fake_gpu.marker_lookups, 1);
    CHECK_EQ_U64(fake_gpu.form_lookups, 0);
    CHECK_EQ_U64(fake_gpu.param_size_reads, 0);
    CHECK_EQ_U64(preempt_last_launch(), 0);
    CHECK_EQ_U64(preempt_get_kernel_info(&desc, &info), PREEMPT_OK);
    CHECK(info.converted);
    CHECK_EQ_U64(info.unevictable_launches, 3);
    CHECK_EQ_U64(info.short_launches, 0);
    CHECK_EQ_U64(preempt_evict(preempt_last_launch(), NULL), PREEMPT_ERROR_FINISHED);
    CHECK(strstr(preempt_last_error(), "PREEMPT_EVICT_READY=1") != NULL);
    setenv("PREEMPT_LONG_US", "0", 1);
    fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
    fake_gpu.has_original = 1;
    fake_gpu.expected_params = 2;
    fake_gpu.lazy_loading = 1;
    preempt_kernel_desc converted = fake_kernel_desc(&stub_a, "_Z4idlePxx", 2);
    CHECK_EQ_U64(preempt_launch_kernel(&converted, (preempt_dim3){1000000, 1, 1}, block64, args, 0, app_stream), 0);
    CHECK(fake_gpu.last.persistent);
    CHECK(fake_gpu.form_lookups > 0 && fake_gpu.param_size_reads > 0); /* a converted form needs them */
    unsetenv("PREEMPT_LONG_US");
  }

  /* A timing still in flight is not started again, and is taken once its event fired. */
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  {
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z4slowPxx", 2);
    fake_gpu.has_original = 1;
    fake_gpu.expected_params = 2;
    fake_gpu.elapsed_ms = 5.0f;
    fake_gpu.events_pending = 1;
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){10000, 1, 1}, block64, args, 0, app_stream), 0);
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){10000, 1, 1}, block64, args, 0, app_stream), 0);
    CHECK(fake_gpu.last.as_written);
    CHECK_EQ_U64(fake_gpu.timed_event_records, 2);
    fake_gpu.events_pending = 0;
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){10000, 1, 1}, block64, args, 0, app_stream), 0);
    CHECK(fake_gpu.last.persistent); /* 5 ms a wave: long */
  }

  /* Waves count in the copy's own occupancy: 16 CTAs per SM against the converted form's 8. A 0.3 ms timing of
   * 16 x 132 blocks is one wave of 300 us; 17 x 132 blocks are two waves (600 us, long), not three of 150. */
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  {
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z5densePxx", 2);
    fake_gpu.has_original = 1;
    fake_gpu.expected_params = 2;
    fake_gpu.original_ctas_per_sm = 16;
    fake_gpu.elapsed_ms = 0.3f;
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){16 * 132, 1, 1}, block64, args, 0, app_stream), 0);
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){16 * 132, 1, 1}, block64, args, 0, app_stream), 0);
    CHECK(fake_gpu.last.as_written);
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){17 * 132, 1, 1}, block64, args, 0, app_stream), 0);
    CHECK(fake_gpu.last.persistent);
  }

  /* The program's own launch fails (an impossible block): its error, as the original's, and nothing converted. */
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  {
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z4nocpPxx", 2);
    fake_gpu.expected_params = 2;
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){100000, 1, 1}, (preempt_dim3){2048, 1, 1}, args, 0,
                                       app_stream), FAKE_ERROR_LAUNCH);
    CHECK_EQ_U64(fake_gpu.launches, 1);
    CHECK(fake_gpu.last.as_written);
    CHECK_EQ_U64(fake_gpu.device_allocs, 0);
  }
  /* PREEMPT_LONG_US=0: every launch converted. */
  setenv("PREEMPT_LONG_US", "0", 1);
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  {
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z4zeroPxx", 2);
    fake_gpu.has_original = 1;
    fake_gpu.expected_params = 2;
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){100000, 1, 1}, block64, args, 0, app_stream), 0);
    CHECK(fake_gpu.last.persistent);
  }
  /* A value that is not a whole number of microseconds is said, and the default kept. */
  setenv("PREEMPT_LONG_US", "fast", 1);
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  {
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z4fastPxx", 2);
    fake_gpu.has_original = 1;
    fake_gpu.expected_params = 2;
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){100000, 1, 1}, block64, args, 0, app_stream), 0);
    CHECK(fake_gpu.last.as_written);
    CHECK(strstr(preempt_last_error(), "PREEMPT_LONG_US") != NULL);
  }
  /* Kernels the plugin left as written go through as before. */
  unsetenv("PREEMPT_LONG_US");
  fake_gpu_reset(0);
  {
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z5plainPxx", 2);
    fake_gpu.expected_params = -1;
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){100000, 1, 1}, block64, args, 0, app_stream), 0);
    CHECK(fake_gpu.last.as_written && !fake_gpu.last.persistent);
    CHECK_EQ_U64(fake_gpu.timed_event_records, 0);
  }
  setenv("PREEMPT_LONG_US", "0", 1);
}

/* The kernel's parameters are counted on the device, not from the host stub's LLVM arguments: a small struct the
 * host ABI splits in two made the runtime copy one parameter more than the application's array holds (CUB). */
static void test_param_count_from_device(void) {
  static const preempt_dim3 block64 = {64, 1, 1};
  long long first = 77, second = 9;
  void *args[] = {&first, &second}; /* two parameters on the device */
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z5splitP4pairx", 3); /* three arguments in the host IR */
  fake_gpu.expected_params = 2;
  CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){100000, 1, 1}, block64, args, 0, &first), 0);
  preempt_launch_id launch = preempt_last_launch();
  CHECK(launch != 0 && fake_gpu.last.persistent);
  CHECK_EQ_U64(fake_gpu.last.first_param, 77);
  CHECK(fake_gpu.last.control == fake_launch_record(launch)->control); /* the extras follow the 2 own parameters */
  CHECK_EQ_U64(fake_gpu.last.task_count, 100000);
}

/* A form that holds no CTA of a launch the kernel as written runs (48 KiB of dynamic shared memory, which the kernel
 * as written takes without an attribute, beside the persistent form's task context: HeCBench bincount failed with
 * "launching the persistent grid failed ... 719" under PREEMPT_STRESS): the launch runs as written, not as a
 * persistent grid of CTAs that cannot start. */
/* A converted kernel of two 8-byte parameters with its copy as written, on a fresh fake GPU. */
static preempt_kernel_desc fresh_kernel_with_copy(const char *name) {
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  fake_gpu.has_original = 1;
  fake_gpu.expected_params = 2;
  return fake_kernel_desc(&stub_a, name, 2);
}

static void test_form_without_room(void) {
  static const preempt_dim3 block256 = {256, 1, 1};
  long long first = 5, second = 6;
  void *args[] = {&first, &second};
  preempt_kernel_desc desc = fresh_kernel_with_copy("_Z8bincountPiPKii");
  fake_gpu.original_ctas_per_sm = 4;
  fake_gpu.ctas_per_sm = 0;
  CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){40000, 1, 1}, block256, args, 49152, &first), 0);
  CHECK(fake_gpu.last.as_written && !fake_gpu.last.persistent);
  CHECK(fake_gpu.last.args == args && fake_gpu.last.grid.x == 40000 && fake_gpu.last.shared == 49152);
  CHECK_EQ_U64(preempt_last_launch(), 0);
  preempt_kernel_info info;
  CHECK_EQ_U64(preempt_get_kernel_info(&desc, &info), PREEMPT_OK);
  CHECK_EQ_U64(info.unevictable_launches, 1);
  /* Where the form has room again (a smaller launch), it is converted as before. */
  fake_gpu.ctas_per_sm = 4;
  CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){40000, 1, 1}, block256, args, 1024, &first), 0);
  CHECK(fake_gpu.last.persistent);
}

/* A kernel whose forms the pass made for blocks of one row or of rows of whole warps (the warp-sync rule,
 * KernelSafety.cpp): a launch of any other block shape runs as written, said once; those shapes convert as before. */
static void test_warp_rows(void) {
  long long first = 5, second = 6;
  void *args[] = {&first, &second};
  preempt_kernel_desc desc = fresh_kernel_with_copy("_Z11first_warpsPf");
  fake_gpu.warp_rows = 1;
  static const preempt_dim3 allowed[] = {{256, 1, 1}, {48, 1, 1}, {32, 8, 1}, {64, 2, 2}};
  static const preempt_dim3 refused[] = {{16, 16, 1}, {48, 2, 1}, {8, 4, 4}};
  for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++) {
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){100000, 1, 1}, allowed[i], args, 0, &first), 0);
    CHECK(fake_gpu.last.persistent && !fake_gpu.last.as_written);
  }
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){100000, 1, 1}, refused[i], args, 0, &first), 0);
    CHECK(fake_gpu.last.as_written && !fake_gpu.last.persistent);
    CHECK(fake_gpu.last.block.x == refused[i].x && fake_gpu.last.block.y == refused[i].y);
  }
  CHECK(strstr(preempt_last_error(), "rows of whole warps") && strstr(preempt_last_error(), "16x16x1"));
  preempt_kernel_info info;
  CHECK_EQ_U64(preempt_get_kernel_info(&desc, &info), PREEMPT_OK);
  CHECK_EQ_U64(info.unevictable_launches, 3);
  /* Without the global every shape converts. */
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  desc = fake_kernel_desc(&stub_b, "_Z10every_lanePf", 2);
  fake_gpu.expected_params = 2;
  CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){100000, 1, 1}, refused[0], args, 0, &first), 0);
  CHECK(fake_gpu.last.persistent);
}

/* Under lazy module loading an eviction that would hold a stream is refused, said with the way out: a launch of a
 * kernel not yet loaded waits behind a held stream (context.c, PREEMPT_EVICT_READY). */
static void test_lazy_loading_refuses_eviction(void) {
  static const preempt_dim3 block64 = {64, 1, 1};
  long long first = 3, second = 4;
  void *args[] = {&first, &second};
  void *app_stream = &first;
  for (int lazy = 0; lazy < 2; lazy++) {
    fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z4lazyPxx", 2);
    fake_gpu.expected_params = 2;
    fake_gpu.lazy_loading = lazy;
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){100000, 1, 1}, block64, args, 0, app_stream), 0);
    preempt_launch_id launch = preempt_last_launch();
    CHECK(launch != 0);
    fake_event_set_pending(fake_launch_record(launch)->done_event, 1); /* still running */
    preempt_status status = preempt_evict(launch, NULL);
    if (lazy) {
      CHECK_EQ_U64(status, PREEMPT_ERROR_UNSUPPORTED);
      CHECK(strstr(preempt_last_error(), "lazily") && strstr(preempt_last_error(), "PREEMPT_EVICT_READY=1"));
      CHECK_EQ_U64(fake_gpu.mask_writes, 0);
    } else {
      CHECK_EQ_U64(status, PREEMPT_OK);
      CHECK(fake_gpu.mask_writes > 0);
      CHECK_EQ_U64(preempt_resume(launch), PREEMPT_OK);
    }
    fake_event_set_pending(fake_launch_record(launch)->done_event, 0);
  }
}

/* PREEMPT_LONG_US as the other tests set it, kept by a test that changes it and given back at its end. */
typedef struct {
  int set;
  char value[32];
} kept_long_us;

static kept_long_us keep_long_us(void) {
  kept_long_us kept = {0, ""};
  const char *value = getenv("PREEMPT_LONG_US");
  if (value) {
    kept.set = 1;
    snprintf(kept.value, sizeof kept.value, "%s", value);
  }
  return kept;
}

static void give_back_long_us(const kept_long_us *kept) {
  if (kept->set)
    setenv("PREEMPT_LONG_US", kept->value, 1);
  else
    unsetenv("PREEMPT_LONG_US");
}

/* The stream-priority tests' fake GPU: persistent forms for every launch, and `urgent` a stream above the rest. */
/* |got - wanted| within a hundredth of a microsecond: the fake's elapsed times pass through a float of milliseconds. */
static int near_us(double got, double wanted) { return got > wanted - 0.01 && got < wanted + 0.01; }

static void reset_for_priorities(int *urgent) {
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  setenv("PREEMPT_FORM", "persistent", 1);
  setenv("PREEMPT_LONG_US", "0", 1);
  fake_gpu.expected_params = 2;
  fake_gpu.priority_stream = urgent;
  fake_gpu.priority_value = -1;
}

/* A long kernel on an ordinary stream and an urgent one on `urgent_stream`, as the stream-priority tests launch
 * them: a 15000-block grid and a 100-block one (one SM per block: 100 of the fake's 132), 64 threads each. */
static const preempt_dim3 priority_block = {64, 1, 1}, priority_long_grid = {15000, 1, 1},
                          priority_urgent_grid = {100, 1, 1};
typedef struct {
  long long first, second;
  void *args[2];
  int low_stream, urgent_stream, other_stream;
  preempt_kernel_desc long_desc, urgent_desc;
  kept_long_us kept;
} priority_fixture;

static void priority_fixture_start(priority_fixture *f) {
  f->first = 5;
  f->second = 6;
  f->args[0] = &f->first;
  f->args[1] = &f->second;
  f->kept = keep_long_us();
  reset_for_priorities(&f->urgent_stream);
  f->long_desc = fake_kernel_desc(&stub_a, "_Z4longPxx", 2);
  f->urgent_desc = fake_kernel_desc(&stub_b, "_Z6urgentPxx", 2);
}

static preempt_status priority_launch(priority_fixture *f, int urgent, void *stream) {
  return preempt_launch_kernel(urgent ? &f->urgent_desc : &f->long_desc,
                               urgent ? priority_urgent_grid : priority_long_grid, priority_block, f->args, 0, stream);
}

static void priority_fixture_end(priority_fixture *f) {
  unsetenv("PREEMPT_FORM");
  give_back_long_us(&f->kept);
  preempt_shutdown();
}

/* A launch as written asks the API for nothing it does not need (issue 39; bench/preemption/as_written_cost.cu
 * prices each call on the H200): the current device only where more than one device is visible, and the stream's
 * priority only once a converted launch has run: a long launch that fits in one wave sets up the device but runs as
 * written, so no converted grid can be in an urgent launch's way yet (priority.c). */
static void test_as_written_asks_little(void) {
  static const preempt_dim3 block64 = {64, 1, 1}, one_wave = {1000, 1, 1}, many_waves = {100000, 1, 1};
  long long first = 99, second = 7;
  void *args[] = {&first, &second};
  kept_long_us kept = keep_long_us();
  for (int devices = 1; devices <= 2; devices++) {
    unsetenv("PREEMPT_LONG_US");
    fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
    fake_gpu.device_count = devices;
    fake_gpu.has_original = 1;
    fake_gpu.expected_params = 2;
    fake_gpu.elapsed_ms = 2.0f; /* a wave takes 2 ms: long, from the second launch on */
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z5fewPxx", 2);
    for (int launch = 0; launch < 10; launch++) {
      CHECK_EQ_U64(preempt_launch_kernel(&desc, one_wave, block64, args, 0, &first), 0);
      CHECK(fake_gpu.last.as_written || fake_gpu.last.original);
    }
    CHECK(fake_gpu.last.original); /* the one-wave path: long, so the device is set up */
    CHECK_EQ_U64(fake_gpu.current_device_calls, devices == 1 ? 0 : 10);
    CHECK_EQ_U64(fake_gpu.stream_priority_calls, 0);
    /* Once a launch is converted, a launch asks its stream's priority. */
    setenv("PREEMPT_LONG_US", "0", 1);
    preempt_runtime_unconfigure(preempt_runtime_context());
    CHECK_EQ_U64(preempt_launch_kernel(&desc, many_waves, block64, args, 0, &first), 0);
    CHECK(fake_gpu.last.persistent);
    int asked = fake_gpu.stream_priority_calls;
    CHECK_EQ_U64(preempt_launch_kernel(&desc, many_waves, block64, args, 0, &first), 0);
    CHECK(fake_gpu.stream_priority_calls > asked);
  }
  give_back_long_us(&kept);
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
}

/* Inside a stream capture a converted kernel's launch runs as written, through the program's own call (the stub's
 * kernel since ABI 9), untimed (the graph runs later), and the one-time lookups run with the thread's capture mode
 * relaxed. */
static void test_capture_launches(void) {
  static const preempt_dim3 block64 = {64, 1, 1};
  long long first = 5, second = 8;
  void *args[] = {&first, &second};
  void *app_stream = &second;
  preempt_kernel_info info;
  for (int query_fails = 0; query_fails < 2; query_fails++) {
    fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z7capturePxx", 2);
    fake_gpu.has_original = 1;
    fake_gpu.expected_params = 2;
    fake_gpu.capturing = !query_fails;
    fake_gpu.capture_query_error = query_fails ? FAKE_ERROR_INVALID_VALUE : 0; /* counts as capturing */
    for (int launch = 0; launch < 3; launch++) {
      CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){100000, 1, 1}, block64, args, 0, app_stream), 0);
      CHECK(fake_gpu.last.as_written && fake_gpu.last.args == args && fake_gpu.last.stream == app_stream);
    }
    CHECK_EQ_U64(fake_gpu.event_records, 0);
    CHECK_EQ_U64(fake_gpu.device_allocs, 0);
    CHECK_EQ_U64(fake_gpu.capture_relaxes, 1); /* once: the kernel's lookups */
    CHECK_EQ_U64(fake_gpu.capture_restores, 1);
    CHECK_EQ_U64(preempt_last_launch(), 0);
    CHECK_EQ_U64(preempt_get_kernel_info(&desc, &info), PREEMPT_OK);
    CHECK_EQ_U64(info.capture_launches, 3);
    /* The capture ends: the next launch is converted (PREEMPT_LONG_US=0 here). */
    fake_gpu.capturing = 0;
    fake_gpu.capture_query_error = 0;
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){100000, 1, 1}, block64, args, 0, app_stream), 0);
    CHECK(fake_gpu.last.persistent);
  }
  /* The program's own launch fails inside the capture: its error, said by the API as it would be to the original. */
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  {
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z6nocopyPxx", 2);
    fake_gpu.expected_params = 2;
    fake_gpu.capturing = 1;
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){100000, 1, 1}, (preempt_dim3){2048, 1, 1}, args, 0,
                                       app_stream), FAKE_ERROR_LAUNCH);
    CHECK(fake_gpu.last.as_written);
    CHECK_EQ_U64(fake_gpu.event_records, 0);
  }
}

/* A converted kernel whose whole grid fits in one wave of persistent CTAs (the fake: 132 SMs x 8 CTAs) runs its
 * unconverted copy, unless the copy is missing, PREEMPT_ONE_WAVE says persistent, or the copy fails to launch. */
static void test_one_wave_launches(void) {
  static const preempt_dim3 block64 = {64, 1, 1};
  long long first = 4321, second = 6;
  void *args[] = {&first, &second};
  void *app_stream = &second; /* any handle */

  /* As written: the application's grid, block, shared bytes, stream and very argument array; no control block,
   * no event, no stream wait, nothing to evict. Up to exactly one wave (1056 blocks). */
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  {
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z5smallPxx", 2);
    fake_gpu.has_original = 1;
    fake_gpu.expected_params = 2;
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){37, 3, 2}, block64, args, 128, app_stream), 0);
    CHECK_EQ_U64(fake_gpu.original_lookups, 1);
    CHECK(strcmp(fake_gpu.last_original_name, "_Z5smallPxx") == 0); /* the kernel's own name (ABI 9) */
    CHECK_EQ_U64(fake_gpu.function_launches, 1);
    CHECK_EQ_U64(fake_gpu.launches, 1);
    CHECK(fake_gpu.last.original && fake_gpu.last.function == &fake_original_function);
    CHECK(fake_gpu.last.host_stub == &stub_a); /* whose API-set attributes the copy takes on */
    CHECK(fake_gpu.last.grid.x == 37 && fake_gpu.last.grid.y == 3 && fake_gpu.last.grid.z == 2);
    CHECK(fake_gpu.last.block.x == 64 && fake_gpu.last.block.y == 1 && fake_gpu.last.block.z == 1);
    CHECK_EQ_U64(fake_gpu.last.shared, 128);
    CHECK(fake_gpu.last.stream == app_stream);
    CHECK(fake_gpu.last.args == args);
    CHECK_EQ_U64(fake_gpu.last.first_param, 4321);
    CHECK_EQ_U64(fake_gpu.event_records, 0);
    CHECK_EQ_U64(fake_gpu.stream_waits, 0);
    CHECK_EQ_U64(preempt_last_launch(), 0);
    CHECK_EQ_U64(preempt_evict_stream(app_stream, NULL), PREEMPT_OK); /* nothing of it to evict */
    CHECK_EQ_U64(fake_gpu.mask_writes, 0);
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){8 * 132, 1, 1}, block64, args, 128, app_stream), 0);
    CHECK_EQ_U64(fake_gpu.function_launches, 2);
    CHECK_EQ_U64(preempt_last_launch(), 0);

    /* One block more than a wave: persistent, with its control block and stream wait. */
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){8 * 132 + 1, 1, 1}, block64, args, 128, app_stream), 0);
    CHECK_EQ_U64(fake_gpu.function_launches, 2);
    CHECK(fake_gpu.last.persistent && !fake_gpu.last.original);
    CHECK_EQ_U64(fake_gpu.last.grid.x, 8 * 132);
    CHECK_EQ_U64(fake_gpu.last.task_count, 8 * 132 + 1);
    CHECK(preempt_last_launch() != 0);
    CHECK_EQ_U64(fake_gpu.stream_waits, 1);
    /* One occupancy query for the three: the cache is shared by both paths. */
    CHECK_EQ_U64(fake_gpu.occupancy_queries, 1);
    preempt_kernel_info info;
    CHECK_EQ_U64(preempt_get_kernel_info(&desc, &info), PREEMPT_OK);
    CHECK(info.converted == 1 && info.launches == 3 && info.one_wave_launches == 2);

    /* The wave is the converted kernel's occupancy for this configuration: at 4 CTAs per SM, 1056 blocks are
     * two waves. The copy is looked up once per kernel and device. */
    fake_gpu.ctas_per_sm = 4;
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){8 * 132, 1, 1}, (preempt_dim3){128, 1, 1}, args, 0,
                                       app_stream), 0);
    CHECK_EQ_U64(fake_gpu.occupancy_queries, 2);
    CHECK(fake_gpu.last.persistent && fake_gpu.last.grid.x == 4 * 132);
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){4 * 132, 1, 1}, (preempt_dim3){128, 1, 1}, args, 0,
                                       app_stream), 0);
    CHECK(fake_gpu.last.original);
    CHECK_EQ_U64(fake_gpu.original_lookups, 1);
    /* A block that cannot run (occupancy 0): persistent, so that the API reports its own error. */
    fake_gpu.ctas_per_sm = 0;
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){1, 1, 1}, (preempt_dim3){2048, 1, 1}, args, 0,
                                       app_stream), FAKE_ERROR_LAUNCH);
    CHECK(!fake_gpu.last.original);
    CHECK_EQ_U64(preempt_get_kernel_info(&desc, &info), PREEMPT_OK);
    CHECK(info.launches == 5 && info.one_wave_launches == 3);
    fake_gpu.events_pending = 0;
  }

  /* A kernel built by a plugin that kept no copy: persistent, and no error. */
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  {
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z6nocopyPxx", 2);
    fake_gpu.expected_params = 2;
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){8, 1, 1}, block64, args, 0, app_stream), 0);
    CHECK_EQ_U64(fake_gpu.original_lookups, 1);
    CHECK_EQ_U64(fake_gpu.function_launches, 0);
    CHECK(fake_gpu.last.persistent && fake_gpu.last.grid.x == 8);
    CHECK(preempt_last_launch() != 0);
    CHECK(strstr(preempt_last_error(), "unconverted copy") == NULL);
    preempt_kernel_info info;
    CHECK_EQ_U64(preempt_get_kernel_info(&desc, &info), PREEMPT_OK);
    CHECK_EQ_U64(info.one_wave_launches, 0);
  }

  /* An API that cannot look copies up (HIP 5.2): persistent, silently. A lookup that fails otherwise: persistent,
   * said once. */
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  {
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z5nohipPxx", 2);
    fake_gpu.expected_params = 2;
    fake_gpu.has_original = 1;
    fake_gpu.original_lookup_error = FAKE_ERROR_NOT_SUPPORTED;
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){8, 1, 1}, block64, args, 0, app_stream), 0);
    CHECK(fake_gpu.last.persistent && fake_gpu.function_launches == 0);
    CHECK(strstr(preempt_last_error(), "unconverted copy") == NULL);
    fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
    fake_gpu.expected_params = 2;
    fake_gpu.has_original = 1;
    fake_gpu.original_lookup_error = FAKE_ERROR_INVALID_VALUE;
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){8, 1, 1}, block64, args, 0, app_stream), 0);
    CHECK(fake_gpu.last.persistent && fake_gpu.function_launches == 0);
    CHECK(strstr(preempt_last_error(), "looking up the kernel as written") != NULL);
    CHECK(strstr(preempt_last_error(), "_Z5nohipPxx") != NULL);
  }

  /* A converted kernel without its persistent form (a broken or mixed build): refused, said, nothing launched. */
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  {
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z6nopersPxx", 2);
    fake_gpu.expected_params = 2;
    fake_gpu.has_original = 1;
    fake_gpu.persistent_missing = 1;
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){8, 1, 1}, block64, args, 0, app_stream),
                 FAKE_ERROR_NOT_SUPPORTED);
    CHECK_EQ_U64(fake_gpu.launches, 0);
    CHECK(strstr(preempt_last_error(), "persistent form") != NULL && strstr(preempt_last_error(), "_Z6nopersPxx"));
  }

  /* The copy fails to launch (e.g. a thread with no current context for the driver): the persistent form runs. */
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  {
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z4failPxx", 2);
    fake_gpu.expected_params = 2;
    fake_gpu.has_original = 1;
    fake_gpu.fail_function_launch = 1;
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){8, 1, 1}, block64, args, 0, app_stream), 0);
    CHECK(fake_gpu.last.persistent && fake_gpu.last.first_param == 4321);
    CHECK_EQ_U64(fake_gpu.launches, 1);
    CHECK(preempt_last_launch() != 0);
    preempt_kernel_info info;
    CHECK_EQ_U64(preempt_get_kernel_info(&desc, &info), PREEMPT_OK);
    CHECK(info.launches == 1 && info.one_wave_launches == 0);
  }

  /* A kernel the plugin refused has neither marker nor copy: no lookup, launched as written by its stub. */
  fake_gpu_reset(0);
  {
    preempt_kernel_desc desc = fake_kernel_desc(&stub_b, "_Z7refusedv", 0);
    fake_gpu.has_original = 1;
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){8, 1, 1}, block64, NULL, 0, NULL), 0);
    CHECK_EQ_U64(fake_gpu.original_lookups, 0);
    CHECK(!fake_gpu.last.original && !fake_gpu.last.persistent);
    CHECK_EQ_U64(fake_gpu.function_launches, 0);
  }

  /* PREEMPT_ONE_WAVE=persistent: tracked and evictable like any launch. "original" is the default, spelled out. */
  setenv("PREEMPT_ONE_WAVE", "persistent", 1);
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  {
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z5smallPxx", 2);
    fake_gpu.expected_params = 2;
    fake_gpu.has_original = 1;
    fake_gpu.events_pending = 1;
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){8, 1, 1}, block64, args, 0, app_stream), 0);
    CHECK(fake_gpu.last.persistent && fake_gpu.function_launches == 0);
    CHECK_EQ_U64(fake_gpu.stream_waits, 1);
    preempt_launch_id launch = preempt_last_launch();
    CHECK(launch != 0);
    CHECK_EQ_U64(preempt_evict(launch, NULL), PREEMPT_OK);
    fake_gpu.events_pending = 0;
    CHECK_EQ_U64(preempt_resume(launch), PREEMPT_OK);
    wait_for_relauncher();
    preempt_kernel_info info;
    CHECK_EQ_U64(preempt_get_kernel_info(&desc, &info), PREEMPT_OK);
    CHECK_EQ_U64(info.one_wave_launches, 0);
  }
  setenv("PREEMPT_ONE_WAVE", "original", 1);
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  {
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z5smallPxx", 2);
    fake_gpu.has_original = 1;
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){8, 1, 1}, block64, args, 0, app_stream), 0);
    CHECK(fake_gpu.last.original && fake_gpu.function_launches == 1);
  }

  /* Any other value is a mistake: said when the runtime starts, and the safe choice, persistent, is kept. */
  setenv("PREEMPT_ONE_WAVE", "sometimes", 1);
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  {
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z5smallPxx", 2);
    fake_gpu.expected_params = 2;
    fake_gpu.has_original = 1;
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){8, 1, 1}, block64, args, 0, app_stream), 0);
    CHECK(strstr(preempt_last_error(), "PREEMPT_ONE_WAVE='sometimes'") != NULL);
    CHECK(fake_gpu.last.persistent && fake_gpu.function_launches == 0);
  }
  unsetenv("PREEMPT_ONE_WAVE");
  preempt_shutdown();
}

/* The drain form (control_block.h): the application's grid runs the kernel's drain form, with the control block
 * after its own parameters; the stream waits for drain_hold = 0; an eviction writes drain_hold = 1 before the
 * yield mask, and the relaunch is the persistent form walking the bitmap of undone blocks. PREEMPT_FORM=auto
 * times both forms and keeps the faster; a failed drain launch runs persistent. */
static void test_drain_form(void) {
  static const preempt_dim3 block64 = {64, 1, 1};
  static const preempt_dim3 grid = {5000, 3, 1}; /* 15000 blocks: many waves */
  long long first = 77, second = 8;
  void *args[] = {&first, &second};
  void *app_stream = &second;

  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  setenv("PREEMPT_FORM", "drain", 1);
  {
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z5drainPxx", 2);
    fake_gpu.has_drain = 1;
    fake_gpu.expected_params = 2;
    CHECK_EQ_U64(preempt_launch_kernel(&desc, grid, block64, args, 32, app_stream), 0);
    CHECK_EQ_U64(fake_gpu.drain_lookups, 1);
    CHECK_EQ_U64(fake_gpu.function_launches, 1);
    CHECK(fake_gpu.last.function == &fake_drain_function);
    CHECK(fake_gpu.last.grid.x == 5000 && fake_gpu.last.grid.y == 3 && fake_gpu.last.grid.z == 1);
    CHECK(fake_gpu.last.stream == app_stream && fake_gpu.last.shared == 32);
    CHECK_EQ_U64(fake_gpu.last.first_param, 77);
    preempt_control_block *control = fake_gpu.last.control;
    CHECK(control != NULL);
    /* Its bitmap: one bit per block, addressed by the control block, zeroed on the application's stream. */
    CHECK(control->undone != NULL);
    CHECK(fake_gpu.zeroed_async_bytes >= 15000 / 8);
    CHECK_EQ_U64(fake_gpu.stream_waits, 1);
    CHECK(fake_gpu.last_wait_word == &control->drain_hold && fake_gpu.last_wait_value == 0);
    CHECK(fake_gpu.last_wait_stream == app_stream);
    preempt_launch_id launch = preempt_last_launch();
    CHECK(launch != 0);

    /* Evicted while it runs: the hold first, then every mask word. */
    fake_gpu.events_pending = 1;
    int writes_before = fake_gpu.mask_writes;
    CHECK_EQ_U64(preempt_evict(launch, NULL), PREEMPT_OK);
    CHECK_EQ_U64(control->drain_hold, 1);
    CHECK_EQ_U64(fake_gpu.mask_writes - writes_before, 1 + PREEMPT_YIELD_MASK_WORDS);
    /* A second eviction writes no second hold. */
    CHECK_EQ_U64(preempt_evict(launch, NULL), PREEMPT_OK);
    CHECK_EQ_U64(fake_gpu.mask_writes - writes_before, 1 + PREEMPT_YIELD_MASK_WORDS);
    /* Resumed: nothing is relaunched while the first wave has not ended. */
    int launches_before = fake_gpu.launches;
    CHECK_EQ_U64(preempt_resume(launch), PREEMPT_OK);
    usleep(50000);
    CHECK_EQ_U64(fake_gpu.launches, launches_before);
    fake_gpu.events_pending = 0;
    wait_for_relauncher();
    CHECK_EQ_U64(fake_gpu.launches, launches_before + 1);
    CHECK(fake_gpu.last.persistent);
    CHECK_EQ_U64(fake_gpu.last.relaunched & 0xffu, PREEMPT_RELAUNCH_UNDONE);
    CHECK_EQ_U64(fake_gpu.last.task_count, 15000);
    CHECK(fake_gpu.last.control == control);
    CHECK_EQ_U64(fake_gpu.publishes, 1);

    preempt_kernel_info info;
    CHECK_EQ_U64(preempt_get_kernel_info(&desc, &info), PREEMPT_OK);
    CHECK(info.launches == 1 && info.drain_launches == 1);

    /* The drain form fails to launch: the persistent form runs instead, ordered on done_generation. */
    fake_gpu.fail_function_launch = 1;
    CHECK_EQ_U64(preempt_launch_kernel(&desc, grid, block64, args, 32, app_stream), 0);
    CHECK(fake_gpu.last.persistent && fake_gpu.last.grid.x == 8 * 132 && fake_gpu.last.relaunched == 0);
    CHECK(fake_gpu.last_wait_word == &fake_gpu.last.control->done_generation);
    CHECK_EQ_U64(preempt_get_kernel_info(&desc, &info), PREEMPT_OK);
    CHECK(info.launches == 2 && info.drain_launches == 1);
    fake_gpu.fail_function_launch = 0;
  }

  /* Without a drain form, or with PREEMPT_FORM=persistent, every launch is persistent. */
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  {
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z5drainPxx", 2);
    fake_gpu.expected_params = 2;
    CHECK_EQ_U64(preempt_launch_kernel(&desc, grid, block64, args, 0, app_stream), 0);
    CHECK(fake_gpu.last.persistent && fake_gpu.function_launches == 0);
  }
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  setenv("PREEMPT_FORM", "persistent", 1);
  {
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z5drainPxx", 2);
    fake_gpu.has_drain = 1;
    fake_gpu.expected_params = 2;
    for (int launch = 0; launch < 5; launch++)
      CHECK_EQ_U64(preempt_launch_kernel(&desc, grid, block64, args, 0, app_stream), 0);
    CHECK_EQ_U64(fake_gpu.function_launches, 0);
  }

  /* auto (a mistaken value reads as auto, and is said): two persistent samples, then two drained, then the form
   * whose time per task was lower; the fake's timed pairs measure elapsed_ms, read as a sample is taken (at the
   * next launch). */
  for (int drain_faster = 0; drain_faster <= 1; drain_faster++) {
    fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
    setenv("PREEMPT_FORM", "fastest", 1);
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z5drainPxx", 2);
    fake_gpu.has_drain = 1;
    fake_gpu.expected_params = 2;
    fake_gpu.elapsed_ms = 2.0f;
    for (int launch = 0; launch < 3; launch++)
      CHECK_EQ_U64(preempt_launch_kernel(&desc, grid, block64, args, 0, app_stream), 0);
    CHECK(strstr(preempt_last_error(), "PREEMPT_FORM='fastest'") != NULL);
    CHECK_EQ_U64(fake_gpu.function_launches, 1); /* the third, the first drained sample */
    CHECK(fake_gpu.last.function == &fake_drain_function);
    /* Both drained samples measure 1 or 3 ms against the persistent 2 ms. */
    fake_gpu.elapsed_ms = drain_faster ? 1.0f : 3.0f;
    CHECK_EQ_U64(preempt_launch_kernel(&desc, grid, block64, args, 0, app_stream), 0);
    CHECK_EQ_U64(fake_gpu.function_launches, 2); /* the second drained sample */
    CHECK_EQ_U64(preempt_launch_kernel(&desc, grid, block64, args, 0, app_stream), 0);
    CHECK_EQ_U64(preempt_launch_kernel(&desc, grid, block64, args, 0, app_stream), 0);
    CHECK_EQ_U64(fake_gpu.function_launches, drain_faster ? 4 : 2);
    CHECK(drain_faster ? fake_gpu.last.function == &fake_drain_function : fake_gpu.last.persistent);
  }

  /* Eviction latency (issue 42): once an eviction has been asked, auto drains only grids whose blocks would all
   * leave within PREEMPT_EVICT_BOUND_US at 0.85 us per wave of 8 x 132 CTAs: 15000 blocks (14.2 waves, 12 us) not
   * within 10 us, 3000 (2.8 waves) within; PREEMPT_FORM=drain drains regardless. */
  for (int forced = 0; forced <= 1; forced++) {
    fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
    setenv("PREEMPT_FORM", forced ? "drain" : "auto", 1);
    setenv("PREEMPT_EVICT_BOUND_US", "10", 1);
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z5drainPxx", 2);
    fake_gpu.has_drain = 1;
    fake_gpu.expected_params = 2;
    fake_gpu.elapsed_ms = 2.0f;
    for (int launch = 0; launch < 3; launch++) /* two persistent samples, then drained */
      CHECK_EQ_U64(preempt_launch_kernel(&desc, grid, block64, args, 0, app_stream), 0);
    fake_gpu.elapsed_ms = 1.0f;
    for (int launch = 0; launch < 3; launch++) /* the drain form is the faster */
      CHECK_EQ_U64(preempt_launch_kernel(&desc, grid, block64, args, 0, app_stream), 0);
    CHECK(fake_gpu.last.function == &fake_drain_function);
    preempt_evict(preempt_last_launch(), NULL); /* finished or not: the process evicts */
    int drained_before = fake_gpu.function_launches;
    CHECK_EQ_U64(preempt_launch_kernel(&desc, grid, block64, args, 0, app_stream), 0);
    CHECK_EQ_U64(fake_gpu.function_launches, drained_before + forced);
    CHECK(forced ? fake_gpu.last.function == &fake_drain_function : fake_gpu.last.persistent);
    static const preempt_dim3 small_grid = {1000, 3, 1};
    CHECK_EQ_U64(preempt_launch_kernel(&desc, small_grid, block64, args, 0, app_stream), 0);
    CHECK_EQ_U64(fake_gpu.function_launches, drained_before + forced + 1);
    CHECK(fake_gpu.last.function == &fake_drain_function);
  }
  unsetenv("PREEMPT_EVICT_BOUND_US");
  unsetenv("PREEMPT_FORM");
  preempt_shutdown();
}

/* Stream priorities kept (priority.c): a converted launch on a higher-priority stream evicts lower-priority
 * persistent grids from just enough SMs for its blocks (100 blocks at 8 CTAs per SM: 13 SMs), and they resume
 * once it has ended (an event after it); same priority or a drained grid: nothing evicted; the program's own
 * eviction cancels the automatic resume. */
static void test_stream_priorities(void) {
  static const preempt_dim3 block64 = {64, 1, 1};
  static const preempt_dim3 long_grid = {15000, 1, 1}, urgent_grid = {100, 1, 1};
  long long first = 5, second = 6;
  void *args[] = {&first, &second};
  int low_stream, urgent_stream, other_stream;
  kept_long_us kept = keep_long_us();
  for (int drained = 0; drained <= 1; drained++) {
    reset_for_priorities(&urgent_stream);
    if (drained)
      setenv("PREEMPT_FORM", "drain", 1);
    fake_gpu.has_drain = 1;
    preempt_kernel_desc long_desc = fake_kernel_desc(&stub_a, "_Z4longPxx", 2);
    preempt_kernel_desc urgent_desc = fake_kernel_desc(&stub_b, "_Z6urgentPxx", 2);
    CHECK_EQ_U64(preempt_launch_kernel(&long_desc, long_grid, block64, args, 0, &low_stream), 0);
    preempt_launch_id low = preempt_last_launch();
    preempt_launch_record *record = fake_launch_record(low);
    CHECK(record != NULL && record->drained == drained);
    fake_event_set_pending(record->done_event, 1); /* still running */
    fake_event_set_pending(record->wave_done_event, 1);
    /* The same priority: nothing happens to it. */
    CHECK_EQ_U64(preempt_launch_kernel(&urgent_desc, urgent_grid, block64, args, 0, &other_stream), 0);
    CHECK(!preempt_launch_suspended(record));
    fake_gpu.events_born_pending = 1;
    CHECK_EQ_U64(preempt_launch_kernel(&urgent_desc, urgent_grid, block64, args, 0, &urgent_stream), 0);
    fake_gpu.events_born_pending = 0;
    if (drained) {
      CHECK(!preempt_launch_suspended(record) && !record->resume_after);
      continue;
    }
    uint32_t evicted_sms = 0;
    for (int word = 0; word < PREEMPT_YIELD_MASK_WORDS; word++)
      evicted_sms += (uint32_t)__builtin_popcount(record->yield_mask[word]);
    /* One SM per urgent block: 100 of the 132. */
    CHECK_EQ_U64(evicted_sms, 100);
    CHECK_EQ_U64(record->yield_mask[0], 0xffffffffu);
    CHECK_EQ_U64(record->yield_mask[3], 0xfu);
    CHECK(record->resume_after && record->resume_after_event != NULL);
    CHECK(fake_event_stream(record->resume_after_event) == &urgent_stream);
    /* Held while the urgent launch runs. */
    usleep(50000);
    CHECK(preempt_launch_suspended(record) && record->resume_after);
    int launches_before = __atomic_load_n(&fake_gpu.launches, __ATOMIC_ACQUIRE);
    fake_event_set_pending(record->resume_after_event, 0);
    fake_event_set_pending(record->wave_done_event, 0);
    wait_for_relauncher();
    CHECK(!preempt_launch_suspended(record) && !record->resume_after);
    CHECK(__atomic_load_n(&fake_gpu.launches, __ATOMIC_ACQUIRE) > launches_before); /* the relaunch */
    /* Evicted again for an urgent launch, then by the program itself: the program decides when it resumes. Every
     * event pending meanwhile (the event made room for before is re-recorded, and the fake's recording does not
     * make it pending again: the relaunch thread would resume at once). */
    fake_gpu.events_born_pending = 1;
    fake_gpu.events_pending = 1;
    CHECK_EQ_U64(preempt_launch_kernel(&urgent_desc, urgent_grid, block64, args, 0, &urgent_stream), 0);
    fake_gpu.events_born_pending = 0;
    CHECK(preempt_launch_suspended(record) && record->resume_after);
    CHECK_EQ_U64(preempt_evict(low, NULL), PREEMPT_OK);
    CHECK(!record->resume_after);
    fake_gpu.events_pending = 0;
    fake_event_set_pending(record->resume_after_event, 0);
    wait_for_relauncher();
    CHECK(preempt_launch_suspended(record));
    CHECK_EQ_U64(preempt_resume(low), PREEMPT_OK);
    wait_for_relauncher();
    /* A wave's worth of urgent blocks or more (200 for 132 SMs): every SM, and resumed after it as before. */
    fake_gpu.events_born_pending = 1;
    fake_gpu.events_pending = 1;
    CHECK_EQ_U64(preempt_launch_kernel(&urgent_desc, (preempt_dim3){200, 1, 1}, block64, args, 0, &urgent_stream), 0);
    fake_gpu.events_born_pending = 0;
    CHECK(preempt_launch_suspended(record) && preempt_yield_mask_full(record->yield_mask) && record->resume_after);
    fake_gpu.events_pending = 0;
    fake_event_set_pending(record->resume_after_event, 0);
    wait_for_relauncher();
    CHECK(!preempt_launch_suspended(record) && !record->resume_after);
  }
  /* Where the eviction would be refused (lazy module loading here), nothing is evicted and nothing said: the
   * program asked for no eviction. */
  reset_for_priorities(&urgent_stream);
  fake_gpu.lazy_loading = 1;
  {
    preempt_kernel_desc long_desc = fake_kernel_desc(&stub_a, "_Z4longPxx", 2);
    preempt_kernel_desc urgent_desc = fake_kernel_desc(&stub_b, "_Z6urgentPxx", 2);
    CHECK_EQ_U64(preempt_launch_kernel(&long_desc, long_grid, block64, args, 0, &low_stream), 0);
    preempt_launch_record *record = fake_launch_record(preempt_last_launch());
    CHECK(record != NULL);
    if (record) {
      fake_event_set_pending(record->done_event, 1);
      preempt_report("marker");
      CHECK_EQ_U64(preempt_launch_kernel(&urgent_desc, urgent_grid, block64, args, 0, &urgent_stream), 0);
      CHECK(!preempt_launch_suspended(record) && !record->resume_after);
      CHECK(strstr(preempt_last_error(), "marker") != NULL);
      fake_event_set_pending(record->done_event, 0);
    }
  }
  unsetenv("PREEMPT_FORM");
  give_back_long_us(&kept);
  preempt_shutdown();
}

/* Prompt yield checks (PREEMPT_PROMPT, control_block.h's PREEMPT_LAUNCH_PROMPT): auto asks for them only where
 * evictions are expected and two tasks outlast PREEMPT_EVICT_BOUND_US (50 us); on and off decide alone; a relaunch
 * keeps its first wave's. Five launches each, so that two have timed the tasks (PREEMPT_TASK_SAMPLES). */
static void test_prompt_checks(void) {
  static const preempt_dim3 block64 = {64, 1, 1}, grid = {15000, 1, 1};
  long long first = 5, second = 6;
  void *args[] = {&first, &second};
  int stream;
  kept_long_us kept = keep_long_us();
  static const struct {
    const char *prompt, *evict_ready;
    float wave_ms; /* the timed launch's first wave: 2 ms is ~140 us a task here, 0.1 ms ~7 us */
    int wanted;
  } cases[] = {
      {NULL, NULL, 2.0f, 0},    /* auto: nothing in the process evicts */
      {NULL, "1", 2.0f, 1},     /* auto: evictions expected, long tasks */
      {NULL, "1", 0.1f, 0},     /* auto: evictions expected, short tasks */
      {"auto", "1", 2.0f, 1},   /* said */
      {"on", NULL, 0.1f, 1},    /* always */
      {"off", "1", 2.0f, 0},    /* never */
  };
  for (size_t index = 0; index < sizeof cases / sizeof cases[0]; index++) {
    if (cases[index].prompt)
      setenv("PREEMPT_PROMPT", cases[index].prompt, 1);
    else
      unsetenv("PREEMPT_PROMPT");
    if (cases[index].evict_ready)
      setenv("PREEMPT_EVICT_READY", cases[index].evict_ready, 1);
    else
      unsetenv("PREEMPT_EVICT_READY");
    setenv("PREEMPT_LONG_US", "0", 1);
    setenv("PREEMPT_FORM", "persistent", 1);
    fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
    fake_gpu.expected_params = 2;
    fake_gpu.elapsed_ms = cases[index].wave_ms;
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z6promptPxx", 2);
    for (int launch = 0; launch < 5; launch++)
      CHECK_EQ_U64(preempt_launch_kernel(&desc, grid, block64, args, 0, &stream), 0);
    CHECK(fake_gpu.last.persistent);
    int wanted = cases[index].wanted;
    CHECK_EQ_U64((fake_gpu.last.relaunched & PREEMPT_LAUNCH_PROMPT) != 0, wanted);
    preempt_kernel_info info;
    CHECK_EQ_U64(preempt_get_kernel_info(&desc, &info), PREEMPT_OK);
    CHECK(wanted ? info.prompt_launches >= 3 : info.prompt_launches == 0);
    /* Evicted and resumed: the relaunch reads as its first wave did. */
    preempt_launch_id launch = preempt_last_launch();
    preempt_launch_record *record = fake_launch_record(launch);
    CHECK(record != NULL);
    if (!record)
      continue;
    fake_event_set_pending(record->done_event, 1);
    fake_event_set_pending(record->wave_done_event, 1);
    CHECK_EQ_U64(preempt_evict(launch, NULL), PREEMPT_OK);
    fake_event_set_pending(record->wave_done_event, 0);
    CHECK_EQ_U64(preempt_resume(launch), PREEMPT_OK);
    wait_for_relauncher();
    CHECK(fake_gpu.last.persistent && (fake_gpu.last.relaunched & 3u) == 1u);
    CHECK_EQ_U64((fake_gpu.last.relaunched & PREEMPT_LAUNCH_PROMPT) != 0, wanted);
    fake_event_set_pending(record->done_event, 0);
  }
  unsetenv("PREEMPT_PROMPT");
  unsetenv("PREEMPT_EVICT_READY");
  unsetenv("PREEMPT_FORM");
  give_back_long_us(&kept);
  preempt_shutdown();
}

/* PREEMPT_TIME_EVICTIONS=1 times the host steps of each converted launch that evicted for its stream's priority
 * (issue 42: the urgent path measured piece by piece), apart from preempt_evict's, and no other launch. */
static void test_urgent_launch_steps(void) {
  priority_fixture f;
  setenv("PREEMPT_TIME_EVICTIONS", "1", 1);
  priority_fixture_start(&f);
  const preempt_evict_timing *timing = &preempt_runtime_context()->evict_timing;
  const preempt_evict_steps *urgent = &timing->series[PREEMPT_STEPS_URGENT];
  uint32_t urgent_before = urgent->rows, evict_before = timing->series[PREEMPT_STEPS_EVICT].rows;
  CHECK_EQ_U64(priority_launch(&f, 0, &f.low_stream), 0);
  preempt_launch_id low = preempt_last_launch();
  preempt_launch_record *record = fake_launch_record(low);
  CHECK(record != NULL);
  if (!record) {
    unsetenv("PREEMPT_TIME_EVICTIONS");
    priority_fixture_end(&f);
    return;
  }
  fake_event_set_pending(record->done_event, 1);
  fake_event_set_pending(record->wave_done_event, 1);
  /* The same priority: no room made, nothing timed. */
  CHECK_EQ_U64(priority_launch(&f, 1, &f.other_stream), 0);
  CHECK_EQ_U64(urgent->rows, urgent_before);
  CHECK(!timing->active);
  fake_gpu.events_born_pending = 1;
  CHECK_EQ_U64(priority_launch(&f, 1, &f.urgent_stream), 0);
  fake_gpu.events_born_pending = 0;
  CHECK(preempt_launch_suspended(record) && record->resume_after);
  CHECK_EQ_U64(urgent->rows, urgent_before + 1);
  CHECK(!timing->active);
  CHECK_EQ_U64(timing->series[PREEMPT_STEPS_EVICT].rows, evict_before);
  if (urgent->rows == urgent_before + 1 && urgent_before < PREEMPT_EVICT_STEP_ROWS) {
    const float *row = urgent->us[urgent_before];
    double sum = 0;
    for (int step = 0; step < PREEMPT_EVICT_STEP_COUNT; step++) {
      CHECK(row[step] >= 0);
      sum += row[step];
    }
    CHECK(row[PREEMPT_EVICT_STEP_COUNT] > 0 && near_us(sum, row[PREEMPT_EVICT_STEP_COUNT]));
  }
  /* Resumed after the urgent launch; once the long launch has finished, an urgent launch finds nothing in its
   * way and is not timed. */
  fake_event_set_pending(record->resume_after_event, 0);
  fake_event_set_pending(record->wave_done_event, 0);
  wait_for_relauncher();
  CHECK(!preempt_launch_suspended(record));
  fake_gpu.events_pending = 0;
  fake_event_set_pending(record->done_event, 0);
  CHECK_EQ_U64(priority_launch(&f, 1, &f.urgent_stream), 0);
  CHECK_EQ_U64(urgent->rows, urgent_before + 1);
  CHECK(!timing->active);
  unsetenv("PREEMPT_TIME_EVICTIONS");
  priority_fixture_end(&f);
}

/* Scans of launches stop at the slots handed out (control_pool.h, in_use): every slot beyond has never held a
 * launch, and the scans still reach slots the pool grew into. 70 launches in flight grow it from 64 to 128; an
 * urgent launch makes room on the last of them, and a stream-wide eviction reaches it too. Once they have
 * finished, an urgent launch marks them so, and the next one does not ask again. */
static void test_scans_reach_grown_slots(void) {
  priority_fixture f;
  priority_fixture_start(&f);
  fake_gpu.events_pending = 1; /* every launch runs on */
  preempt_launch_id last = 0;
  for (int launch = 0; launch < 70; launch++) {
    CHECK_EQ_U64(priority_launch(&f, 0, &f.low_stream), 0);
    last = preempt_last_launch();
  }
  const preempt_control_pool *pool = &preempt_runtime_context()->devices[0].control_pool;
  CHECK_EQ_U64(pool->in_use, 2 * PREEMPT_POOL_FIRST_SLOTS);
  for (uint32_t slot = pool->in_use; slot < pool->capacity; slot++)
    CHECK(!pool->records[slot].in_flight && pool->records[slot].generation == 0);
  preempt_launch_record *record = fake_launch_record(last);
  CHECK(record != NULL && record - pool->records >= PREEMPT_POOL_FIRST_SLOTS);
  CHECK(!preempt_launch_suspended(record));
  CHECK_EQ_U64(priority_launch(&f, 1, &f.urgent_stream), 0);
  CHECK(preempt_launch_suspended(record) && record->resume_after);
  CHECK_EQ_U64(preempt_evict_stream(&f.low_stream, NULL), PREEMPT_OK);
  CHECK(preempt_yield_mask_full(record->yield_mask));
  fake_gpu.events_pending = 0;
  CHECK_EQ_U64(preempt_resume_stream(&f.low_stream), PREEMPT_OK);
  wait_for_relauncher();
  CHECK(!preempt_launch_suspended(record));
  /* All 70 have finished: the next urgent launch finds each finished once and marks it so (priority.c), and the
   * one after asks nothing about them (before, 2 event queries for each, on every urgent launch). */
  CHECK_EQ_U64(priority_launch(&f, 1, &f.urgent_stream), 0);
  for (uint32_t slot = 0; slot < pool->in_use; slot++)
    CHECK(pool->records[slot].stream != &f.low_stream || !pool->records[slot].in_flight);
  int queries_before = fake_gpu.event_queries;
  CHECK_EQ_U64(priority_launch(&f, 1, &f.urgent_stream), 0);
  CHECK(fake_gpu.event_queries - queries_before < 70); /* the relaunch thread may ask about the urgent ones */
  priority_fixture_end(&f);
}

/* CTA quotas (quota.c; FlexSched §4.2's BSUs placed by the CTAs themselves, control_block.h). The fake's device
 * memory is host memory: the test reads the control block the runtime wrote, and writes what CTAs would. */
static void test_quota(void) {
  static const preempt_dim3 block64 = {64, 1, 1};
  static const preempt_dim3 grid = {20000, 1, 1};
  long long first = 5, second = 6;
  void *args[] = {&first, &second};
  void *app_stream = &first;

  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z5quotaPxx", 2);
  fake_gpu.expected_params = 2;
  CHECK_EQ_U64(preempt_launch_kernel(&desc, grid, block64, args, 0, app_stream), 0);
  preempt_launch_id launch = preempt_last_launch();
  preempt_control_block *control = fake_gpu.last.control;
  uint32_t generation = fake_gpu.last.generation;
  CHECK(launch != 0 && control != NULL && fake_gpu.last.relaunched == 0);
  fake_gpu.events_pending = 1; /* running: not finished */

  CHECK_EQ_U64(preempt_set_quota(launch, 0), PREEMPT_ERROR_INVALID_ARGUMENT);
  CHECK_EQ_U64(preempt_set_quota(0, 2), PREEMPT_ERROR_INVALID_ARGUMENT);
  preempt_progress progress;
  CHECK_EQ_U64(preempt_get_progress(launch, NULL), PREEMPT_ERROR_INVALID_ARGUMENT);

  /* A launch without a quota: every yield bit sends its CTAs (which never counted themselves) away, and stays
   * set until its first wave has ended; the relaunch, with PREEMPT_LAUNCH_QUOTA, is ordered after the writes on
   * the control stream and counts its own CTAs, which the bits send away only above the quota. */
  int launches_before = fake_gpu.launches, ordered_before = fake_gpu.stream_event_waits;
  CHECK_EQ_U64(preempt_set_quota(launch, 3), PREEMPT_OK);
  CHECK_EQ_U64(control->cta_quota, 3);
  for (int word = 0; word < PREEMPT_YIELD_MASK_WORDS; word++)
    CHECK_EQ_U64(control->yield_mask[word], 0xffffffffu);
  preempt_launch_state state;
  CHECK_EQ_U64(preempt_query(launch, &state), PREEMPT_OK);
  CHECK_EQ_U64(state, PREEMPT_LAUNCH_RUNNING); /* not an eviction: nothing for the application to resume */
  CHECK_EQ_U64(fake_gpu.launches, launches_before); /* its start event has not fired */
  preempt_launch_record *record = fake_launch_record(launch);
  fake_event_set_pending(record->done_event, 1); /* from here on it runs; its other events have fired */
  fake_gpu.events_pending = 0;
  wait_for_relauncher();
  CHECK_EQ_U64(fake_gpu.launches, launches_before + 1);
  CHECK(fake_gpu.last.persistent && fake_gpu.last.control == control);
  CHECK_EQ_U64(fake_gpu.last.relaunched & 0xffu, 1 | PREEMPT_LAUNCH_QUOTA);
  CHECK_EQ_U64(fake_gpu.last.grid.x, 8 * 132); /* every SM at occupancy: the excess leaves at once */
  CHECK(fake_gpu.stream_event_waits > ordered_before);

  /* Progress: this generation's task counter, and the SMs' counts. An older generation's counter reads 0. */
  control->task_word[generation % PREEMPT_CONTROL_LANES] = ((unsigned long long)(generation - 1) << 32) | 77;
  CHECK_EQ_U64(preempt_get_progress(launch, &progress), PREEMPT_OK);
  CHECK_EQ_U64(progress.tasks_taken, 0);
  control->task_word[generation % PREEMPT_CONTROL_LANES] = ((unsigned long long)generation << 32) | 500;
  for (int sm = 0; sm < 132; sm++)
    control->sm_resident[sm] = 3;
  int copies_before = fake_gpu.copies_to_host;
  CHECK_EQ_U64(preempt_get_progress(launch, &progress), PREEMPT_OK);
  CHECK_EQ_U64(fake_gpu.copies_to_host, copies_before + 1);
  CHECK_EQ_U64(progress.tasks_taken, 500);
  CHECK_EQ_U64(progress.task_count, 20000);
  CHECK_EQ_U64(progress.quota, 3);
  CHECK_EQ_U64(progress.resident_ctas, 3 * 132);
  CHECK_EQ_U64(progress.most_resident, 3);
  CHECK_EQ_U64(progress.occupied_sms, 132);
  /* Within the quota and the first wave gone: the bits are cleared by that read. */
  for (int word = 0; word < PREEMPT_YIELD_MASK_WORDS; word++)
    CHECK_EQ_U64(control->yield_mask[word], 0);

  /* Lower: the quota, then every yield bit (CTAs above it leave); nothing launched. The bits stay until the
   * counts say every SM is within the quota. */
  launches_before = fake_gpu.launches;
  CHECK_EQ_U64(preempt_set_quota(launch, 2), PREEMPT_OK);
  CHECK_EQ_U64(control->cta_quota, 2);
  for (int word = 0; word < PREEMPT_YIELD_MASK_WORDS; word++)
    CHECK_EQ_U64(control->yield_mask[word], 0xffffffffu);
  CHECK_EQ_U64(fake_gpu.launches, launches_before);
  CHECK_EQ_U64(preempt_query(launch, &state), PREEMPT_OK);
  CHECK_EQ_U64(state, PREEMPT_LAUNCH_RUNNING); /* a shrink is not an eviction */
  CHECK_EQ_U64(preempt_get_progress(launch, &progress), PREEMPT_OK);
  CHECK_EQ_U64(control->yield_mask[0], 0xffffffffu);
  control->sm_resident[7] = 2;
  CHECK_EQ_U64(preempt_get_progress(launch, &progress), PREEMPT_OK);
  CHECK_EQ_U64(control->yield_mask[0], 0xffffffffu); /* 131 SMs still above */
  for (int sm = 0; sm < 132; sm++)
    control->sm_resident[sm] = 2;
  CHECK_EQ_U64(preempt_get_progress(launch, &progress), PREEMPT_OK);
  for (int word = 0; word < PREEMPT_YIELD_MASK_WORDS; word++)
    CHECK_EQ_U64(control->yield_mask[word], 0);

  /* Raise: every CTA leaves (quota 0 and every bit, on the control stream), then, on the relaunch stream behind
   * the grid they leave, quota_next is copied into cta_quota and the bits are cleared before one new grid. The
   * fake runs it all at once, so only the end shows, and the copy that made it. */
  int copies_before_raise = fake_gpu.device_copies, writes_before_raise = fake_gpu.mask_writes;
  CHECK_EQ_U64(preempt_set_quota(launch, 4), PREEMPT_OK);
  wait_for_relauncher();
  CHECK_EQ_U64(control->quota_next, 4);
  CHECK_EQ_U64(control->cta_quota, 4);
  CHECK_EQ_U64(fake_gpu.device_copies, copies_before_raise + 1);
  CHECK_EQ_U64(fake_gpu.mask_writes - writes_before_raise, 2 + 2 * PREEMPT_YIELD_MASK_WORDS); /* quotas, bits, clear */
  for (int word = 0; word < PREEMPT_YIELD_MASK_WORDS; word++)
    CHECK_EQ_U64(control->yield_mask[word], 0);
  CHECK_EQ_U64(fake_gpu.launches, launches_before + 1);
  CHECK_EQ_U64(fake_gpu.last.relaunched & 0xffu, 1 | PREEMPT_LAUNCH_QUOTA);

  /* Lower, then raise before the shrink ends: the raise clears the bits first. */
  CHECK_EQ_U64(preempt_set_quota(launch, 1), PREEMPT_OK);
  CHECK_EQ_U64(control->yield_mask[3], 0xffffffffu);
  CHECK_EQ_U64(preempt_set_quota(launch, 2), PREEMPT_OK);
  for (int word = 0; word < PREEMPT_YIELD_MASK_WORDS; word++)
    CHECK_EQ_U64(control->yield_mask[word], 0);
  CHECK_EQ_U64(control->cta_quota, 2);

  /* An eviction of a quota launch makes the quota 0 first (a yield bit sends a quota CTA away only above it);
   * the resumption restores it before the bits are cleared. */
  CHECK_EQ_U64(preempt_evict(launch, NULL), PREEMPT_OK);
  CHECK_EQ_U64(control->cta_quota, 0);
  CHECK_EQ_U64(control->yield_mask[0], 0xffffffffu);
  CHECK_EQ_U64(preempt_resume(launch), PREEMPT_OK);
  CHECK_EQ_U64(control->cta_quota, 2);
  CHECK_EQ_U64(control->yield_mask[0], 0);
  /* A partial eviction during a shrink evicts only its SMs: the shrink's bits are put back first. */
  CHECK_EQ_U64(preempt_set_quota(launch, 1), PREEMPT_OK);
  preempt_sm_mask first_sms;
  memset(&first_sms, 0, sizeof first_sms);
  first_sms.words[0] = 0xf;
  CHECK_EQ_U64(preempt_evict(launch, &first_sms), PREEMPT_OK);
  CHECK_EQ_U64(control->yield_mask[0], 0xf);
  CHECK_EQ_U64(control->yield_mask[1], 0);
  fake_event_set_pending(record->done_event, 0);

  /* Finished: FINISHED from both. */
  CHECK_EQ_U64(preempt_set_quota(launch, 2), PREEMPT_ERROR_FINISHED);
  CHECK_EQ_U64(preempt_get_progress(launch, &progress), PREEMPT_ERROR_FINISHED);

  /* A drained launch has no quota. */
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  setenv("PREEMPT_FORM", "drain", 1);
  desc = fake_kernel_desc(&stub_a, "_Z5quotaPxx", 2);
  fake_gpu.has_drain = 1;
  fake_gpu.expected_params = 2;
  CHECK_EQ_U64(preempt_launch_kernel(&desc, grid, block64, args, 0, app_stream), 0);
  fake_gpu.events_pending = 1;
  CHECK_EQ_U64(preempt_set_quota(preempt_last_launch(), 2), PREEMPT_ERROR_UNSUPPORTED);
  fake_gpu.events_pending = 0;
  unsetenv("PREEMPT_FORM");
}

/* In-task preemption (intask.c, docs/intask.md, control_block.h). The fake's device memory is host memory: the test
 * reads what the runtime wrote into the control block, and its write log says on which stream and in what order. */
static int find_write(const void *word, int since) {
  if (since < fake_gpu.write_count - FAKE_WRITE_LOG)
    since = fake_gpu.write_count - FAKE_WRITE_LOG;
  for (int index = since; index < fake_gpu.write_count; index++)
    if (fake_gpu.write_log[index % FAKE_WRITE_LOG].word == word)
      return index;
  return -1;
}

static void *device_control_stream(void) {
  preempt_runtime *runtime = preempt_runtime_lock();
  void *stream = runtime->devices[0].control_stream;
  preempt_runtime_unlock(runtime);
  return stream;
}

/* As PREEMPT_INTASK would set it (its spelling is test_settings'). */
static void set_intask_mode(preempt_intask_mode mode) {
  preempt_runtime *runtime = preempt_runtime_lock();
  runtime->settings.intask = mode;
  preempt_runtime_unlock(runtime);
}

/* A fresh fake GPU: 16 SMs x 4 CTAs (64 persistent CTAs, a ring of 2 x 64 + 2 contexts), and kernels with one
 * in-task point. */
static void intask_fake(void) {
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  fake_gpu.sm_count = 16;
  fake_gpu.ctas_per_sm = 4;
  fake_gpu.expected_params = 2;
  fake_gpu.intask_desc = (preempt_intask_desc){PREEMPT_KERNEL_ABI_VERSION, 1, 16, 4096};
}

static void test_intask(void) {
  static const preempt_dim3 block128 = {128, 1, 1}, block64 = {64, 1, 1};
  static const preempt_dim3 grid = {20000, 1, 1}; /* many waves */
  static const preempt_dim3 one_wave = {8, 1, 1};
  const uint32_t capacity = 2 * 4 * 16 + 2, bytes128 = 64 + 4096 + 16 * 128, bytes64 = 64 + 4096 + 16 * 64;
  long long first = 11, second = 12;
  void *args[] = {&first, &second};
  void *app_stream = &second;

  /* PREEMPT_INTASK=on: the variant runs every grid of the launch, with the period and the ring, zeroed, in its
   * control block. */
  setenv("PREEMPT_INTASK", "on", 1);
  intask_fake();
  {
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z4longPxx", 2);
    CHECK_EQ_U64(preempt_launch_kernel(&desc, grid, block128, args, 0, app_stream), 0);
    CHECK_EQ_U64(fake_gpu.intask_lookups, 1);
    CHECK(strcmp(fake_gpu.last_intask_name, "__preempt_intaskform__Z4longPxx") == 0);
    CHECK_EQ_U64(fake_gpu.launches, 1);
    CHECK_EQ_U64(fake_gpu.function_launches, 1);
    CHECK(fake_gpu.last.function == &fake_intask_function && fake_gpu.last.persistent);
    CHECK(fake_gpu.last.host_stub == &stub_a && fake_gpu.last.stream == app_stream);
    CHECK_EQ_U64(fake_gpu.last.grid.x, 64);
    CHECK_EQ_U64(fake_gpu.last.task_count, 20000);
    CHECK_EQ_U64(fake_gpu.last.first_param, 11);
    CHECK_EQ_U64(fake_gpu.last.relaunched, 0);
    preempt_control_block *control = fake_gpu.last.control;
    CHECK(control != NULL);
    CHECK_EQ_U64(control->intask_period_ns, 10000);
    CHECK_EQ_U64(control->intask_capacity, capacity);
    CHECK_EQ_U64(control->intask_record_bytes, bytes128);
    CHECK(control->intask_contexts != NULL);
    CHECK(fake_gpu.last_zeroed_async == control->intask_contexts);
    CHECK(fake_gpu.zeroed_async_bytes >= (size_t)capacity * bytes128);
    CHECK_EQ_U64(control->intask_evict, 0);
    int period_write = find_write(&control->intask_period_ns, 0);
    CHECK(period_write >= 0 && fake_gpu.write_log[period_write % FAKE_WRITE_LOG].stream == app_stream);
    preempt_launch_id launch = preempt_last_launch();
    CHECK(launch != 0);
    preempt_launch_record *record = fake_launch_record(launch);
    CHECK(record != NULL && record->intask_enabled);
    fake_event_set_pending(record->done_event, 1); /* from here on it runs; its other events have fired */
    void *control_stream = device_control_stream();

    /* A partial eviction leaves at task boundaries: no eviction word. Its relaunch runs the variant, as epoch 1,
     * and resumes no context. */
    int since = fake_gpu.write_count, launches_before = fake_gpu.launches;
    preempt_sm_mask one_sm = {{0}};
    one_sm.words[0] = 1u << 3;
    CHECK_EQ_U64(preempt_evict(launch, &one_sm), PREEMPT_OK);
    CHECK_EQ_U64(control->yield_mask[0], 1u << 3);
    CHECK_EQ_U64(control->intask_evict, 0);
    CHECK_EQ_U64(find_write(&control->intask_evict, since), (uint64_t)-1);
    CHECK(!record->intask_evicted && !record->intask_evict_set);
    CHECK_EQ_U64(preempt_resume(launch), PREEMPT_OK);
    wait_for_relauncher();
    CHECK_EQ_U64(fake_gpu.launches, launches_before + 1);
    CHECK(fake_gpu.last.function == &fake_intask_function && fake_gpu.last.control == control);
    CHECK_EQ_U64(fake_gpu.last.relaunched, 1u | (1u << PREEMPT_RELAUNCH_EPOCH_SHIFT));
    CHECK_EQ_U64(fake_gpu.last.grid.x, 4); /* one SM at occupancy */

    /* A full eviction: the eviction word, on the control stream, ahead of the yield mask. */
    since = fake_gpu.write_count;
    CHECK_EQ_U64(preempt_evict(launch, NULL), PREEMPT_OK);
    CHECK_EQ_U64(control->intask_evict, 1);
    int evict_write = find_write(&control->intask_evict, since);
    CHECK(evict_write >= 0 && fake_gpu.write_log[evict_write % FAKE_WRITE_LOG].stream == control_stream);
    CHECK(find_write(&control->yield_mask[0], since) > evict_write);
    CHECK(record->intask_evicted && record->intask_evict_set);
    /* Again: nothing more to write. */
    since = fake_gpu.write_count;
    CHECK_EQ_U64(preempt_evict(launch, NULL), PREEMPT_OK);
    CHECK_EQ_U64(fake_gpu.write_count, since);

    /* Resumed while the first wave still runs: the word goes back to 0 at once (control stream), but the relaunch
     * waits for the first wave's end, since it resumes contexts that wave saved. */
    fake_event_set_pending(record->wave_done_event, 1);
    launches_before = fake_gpu.launches;
    int publishes_before = fake_gpu.publishes;
    since = fake_gpu.write_count;
    CHECK_EQ_U64(preempt_resume(launch), PREEMPT_OK);
    CHECK_EQ_U64(control->intask_evict, 0);
    evict_write = find_write(&control->intask_evict, since);
    CHECK(evict_write >= 0 && fake_gpu.write_log[evict_write % FAKE_WRITE_LOG].stream == control_stream);
    CHECK(!record->intask_evict_set && record->intask_evicted);
    for (int word = 0; word < PREEMPT_YIELD_MASK_WORDS; word++)
      CHECK_EQ_U64(control->yield_mask[word], 0);
    usleep(50000);
    CHECK_EQ_U64(fake_gpu.launches, launches_before);
    fake_event_set_pending(record->wave_done_event, 0);
    wait_for_relauncher();
    CHECK_EQ_U64(fake_gpu.launches, launches_before + 1);
    CHECK(fake_gpu.last.function == &fake_intask_function && fake_gpu.last.control == control);
    CHECK_EQ_U64(fake_gpu.last.relaunched,
                 1u | PREEMPT_RELAUNCH_RESUMES | (2u << PREEMPT_RELAUNCH_EPOCH_SHIFT));
    CHECK_EQ_U64(fake_gpu.last.grid.x, 64);
    CHECK_EQ_U64(fake_gpu.publishes, publishes_before + 1);

    /* A second full eviction sets the word again; every later relaunch resumes contexts, at the next epoch. */
    CHECK_EQ_U64(preempt_evict(launch, NULL), PREEMPT_OK);
    CHECK_EQ_U64(control->intask_evict, 1);
    CHECK_EQ_U64(preempt_resume(launch), PREEMPT_OK);
    CHECK_EQ_U64(control->intask_evict, 0);
    wait_for_relauncher();
    CHECK_EQ_U64(fake_gpu.launches, launches_before + 2);
    CHECK_EQ_U64(fake_gpu.last.relaunched,
                 1u | PREEMPT_RELAUNCH_RESUMES | (3u << PREEMPT_RELAUNCH_EPOCH_SHIFT));
    CHECK(fake_gpu.last.function == &fake_intask_function);
    fake_event_set_pending(record->done_event, 0);

    /* A launch preemptd holds before its first run (launch.c: every yield bit, held_unstarted) has no CTA to stop:
     * an eviction writes no word, which its first run, clearing nothing on the device, would find set. */
    CHECK_EQ_U64(preempt_launch_kernel(&desc, grid, block128, args, 0, app_stream), 0);
    launch = preempt_last_launch();
    record = fake_launch_record(launch);
    control = fake_gpu.last.control;
    fake_event_set_pending(record->done_event, 1);
    preempt_runtime *runtime = preempt_runtime_lock();
    memset(record->yield_mask, 0xff, sizeof record->yield_mask);
    record->held_unstarted = 1;
    preempt_runtime_unlock(runtime);
    CHECK_EQ_U64(preempt_evict(launch, NULL), PREEMPT_OK);
    CHECK_EQ_U64(control->intask_evict, 0);
    CHECK(!record->intask_evicted && !record->intask_evict_set);
    launches_before = fake_gpu.launches;
    CHECK_EQ_U64(preempt_resume(launch), PREEMPT_OK);
    wait_for_relauncher();
    CHECK_EQ_U64(fake_gpu.launches, launches_before + 1);
    CHECK_EQ_U64(control->intask_evict, 0);
    CHECK_EQ_U64(fake_gpu.last.relaunched, 1u | (1u << PREEMPT_RELAUNCH_EPOCH_SHIFT));
    fake_event_set_pending(record->done_event, 0);

    /* The variant fails to launch: the first wave runs the persistent form, said, and its evictions wait for task
     * boundaries. */
    fake_gpu.fail_function_launch = 1;
    CHECK_EQ_U64(preempt_launch_kernel(&desc, grid, block128, args, 0, app_stream), 0);
    CHECK(strstr(preempt_last_error(), "in-task variant") != NULL);
    CHECK(fake_gpu.last.persistent && !fake_gpu.last.original);
    launch = preempt_last_launch();
    record = fake_launch_record(launch);
    control = fake_gpu.last.control;
    CHECK(!record->intask_enabled);
    fake_event_set_pending(record->done_event, 1);
    CHECK_EQ_U64(preempt_evict(launch, NULL), PREEMPT_OK);
    CHECK_EQ_U64(control->intask_evict, 0);
    CHECK_EQ_U64(preempt_resume(launch), PREEMPT_OK);
    wait_for_relauncher();
    CHECK(fake_gpu.last.persistent && !fake_gpu.last.original);
    CHECK_EQ_U64(fake_gpu.last.relaunched, 1u | (1u << PREEMPT_RELAUNCH_EPOCH_SHIFT));
    fake_event_set_pending(record->done_event, 0);
    fake_gpu.fail_function_launch = 0;
  }

  /* Rings follow the launches, not the pool's slots (intask.c's take_ring). Launches one after another, each
   * over before the next: the pool hands out its first 64 slots in turn, and every launch takes the one ring
   * from the launch before, allocated and zeroed once; each control block is told where it is. In-task off,
   * then on again: the period goes back to 0 and comes back. */
  intask_fake();
  {
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z4longPxx", 2);
    CHECK_EQ_U64(preempt_launch_kernel(&desc, grid, block128, args, 0, app_stream), 0);
    preempt_control_block *control = fake_gpu.last.control;
    unsigned char *ring = control->intask_contexts;
    CHECK_EQ_U64(control->intask_period_ns, 10000);
    int allocs_before = fake_gpu.device_allocs;
    size_t zeroed_before = fake_gpu.zeroed_async_bytes;
    for (int launch = 1; launch < 70; launch++) {
      CHECK_EQ_U64(preempt_launch_kernel(&desc, grid, block128, args, 0, app_stream), 0);
      CHECK(fake_gpu.last.function == &fake_intask_function);
      CHECK(fake_gpu.last.control->intask_contexts == ring);
      CHECK_EQ_U64(fake_gpu.last.control->intask_capacity, capacity);
      CHECK_EQ_U64(fake_gpu.last.control->intask_record_bytes, bytes128);
    }
    CHECK(fake_gpu.last.control != control); /* the slots did turn */
    CHECK_EQ_U64(fake_gpu.device_allocs, allocs_before);
    CHECK_EQ_U64(fake_gpu.zeroed_async_bytes, zeroed_before);
    set_intask_mode(PREEMPT_INTASK_OFF);
    for (int launch = 0; launch < 64; launch++)
      CHECK_EQ_U64(preempt_launch_kernel(&desc, grid, block128, args, 0, app_stream), 0);
    CHECK(fake_gpu.last.function != &fake_intask_function && fake_gpu.last.control->intask_period_ns == 0);
    set_intask_mode(PREEMPT_INTASK_ON);
    CHECK_EQ_U64(preempt_launch_kernel(&desc, grid, block128, args, 0, app_stream), 0);
    CHECK(fake_gpu.last.function == &fake_intask_function && fake_gpu.last.control->intask_period_ns == 10000);
    CHECK(fake_gpu.last.control->intask_contexts == ring);
    CHECK_EQ_U64(fake_gpu.device_allocs, allocs_before);

    /* A launch in flight keeps its ring (its CTAs may save contexts into it): the next launch gets another, and
     * once the first is over, the launch after takes the first ring back rather than allocate a third. */
    preempt_launch_record *running = fake_launch_record(preempt_last_launch());
    CHECK(running != NULL);
    fake_event_set_pending(running->done_event, 1);
    CHECK_EQ_U64(preempt_launch_kernel(&desc, grid, block128, args, 0, app_stream), 0);
    unsigned char *second_ring = fake_gpu.last.control->intask_contexts;
    CHECK(second_ring != NULL && second_ring != ring);
    CHECK_EQ_U64(fake_gpu.device_allocs, allocs_before + 1);
    CHECK(fake_gpu.last_zeroed_async == second_ring);
    fake_event_set_pending(running->done_event, 0);
    for (int launch = 0; launch < 3; launch++) {
      CHECK_EQ_U64(preempt_launch_kernel(&desc, grid, block128, args, 0, app_stream), 0);
      CHECK(fake_gpu.last.control->intask_contexts == ring || fake_gpu.last.control->intask_contexts == second_ring);
    }
    CHECK_EQ_U64(fake_gpu.device_allocs, allocs_before + 1);

    /* A new layout (smaller blocks) fits in the same ring, which is zeroed for it: stale bytes of the old layout
     * could look like a record's tag. */
    control = fake_gpu.last.control;
    memset(control->intask_contexts, 0x5a, 64);
    zeroed_before = fake_gpu.zeroed_async_bytes;
    CHECK_EQ_U64(preempt_launch_kernel(&desc, grid, block64, args, 0, app_stream), 0);
    control = fake_gpu.last.control;
    CHECK_EQ_U64(control->intask_record_bytes, bytes64);
    CHECK_EQ_U64(control->intask_capacity, capacity);
    CHECK(fake_gpu.zeroed_async_bytes - zeroed_before >= (size_t)capacity * bytes64);
    CHECK_EQ_U64(control->intask_contexts[0], 0);
    CHECK_EQ_U64(control->intask_contexts[63], 0);
    CHECK_EQ_U64(fake_gpu.device_allocs, allocs_before + 1);
  }

  /* PREEMPT_INTASK=off: the persistent form as ever, period 0, and a full eviction writes only the yield mask. */
  setenv("PREEMPT_INTASK", "off", 1);
  intask_fake();
  {
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z4longPxx", 2);
    CHECK_EQ_U64(preempt_launch_kernel(&desc, grid, block128, args, 0, app_stream), 0);
    CHECK_EQ_U64(fake_gpu.function_launches, 0);
    CHECK(fake_gpu.last.persistent && !fake_gpu.last.original);
    preempt_control_block *control = fake_gpu.last.control;
    CHECK_EQ_U64(control->intask_period_ns, 0);
    CHECK_EQ_U64(control->intask_capacity, 0);
    CHECK(control->intask_contexts == NULL);
    preempt_launch_id launch = preempt_last_launch();
    preempt_launch_record *record = fake_launch_record(launch);
    fake_event_set_pending(record->done_event, 1);
    int writes_before = fake_gpu.mask_writes, since = fake_gpu.write_count;
    CHECK_EQ_U64(preempt_evict(launch, NULL), PREEMPT_OK);
    CHECK_EQ_U64(fake_gpu.mask_writes - writes_before, PREEMPT_YIELD_MASK_WORDS);
    CHECK_EQ_U64(find_write(&control->intask_evict, since), (uint64_t)-1);
    CHECK_EQ_U64(control->intask_evict, 0);
    CHECK_EQ_U64(preempt_resume(launch), PREEMPT_OK);
    wait_for_relauncher();
    CHECK_EQ_U64(fake_gpu.function_launches, 0);
    CHECK_EQ_U64(fake_gpu.last.relaunched, 1u | (1u << PREEMPT_RELAUNCH_EPOCH_SHIFT));
    fake_event_set_pending(record->done_event, 0);
  }

  /* auto (the default): in-task checks only for launches preemptd schedules (intask.c); with no daemon, off
   * even once the tasks measure long (50 ms for 20000 tasks on 64 CTAs: 160 us a task). The fake's timed pairs
   * measure elapsed_ms as the sample is read, at the next launch. */
  unsetenv("PREEMPT_INTASK");
  intask_fake();
  {
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z4longPxx", 2);
    fake_gpu.elapsed_ms = 50.0f;
    CHECK_EQ_U64(preempt_launch_kernel(&desc, grid, block128, args, 0, app_stream), 0);
    CHECK_EQ_U64(fake_gpu.function_launches, 0);
    CHECK_EQ_U64(fake_gpu.last.control->intask_period_ns, 0);
    CHECK_EQ_U64(preempt_launch_kernel(&desc, grid, block128, args, 0, app_stream), 0);
    CHECK_EQ_U64(fake_gpu.function_launches, 0);
    CHECK(fake_gpu.last.function == NULL);
    CHECK_EQ_U64(fake_gpu.last.control->intask_period_ns, 0);
    preempt_kernel_info info;
    CHECK_EQ_U64(preempt_get_kernel_info(&desc, &info), PREEMPT_OK);
    CHECK(info.task_microseconds > 159 && info.task_microseconds < 161);
    fake_gpu.elapsed_ms = 10.0f;
    CHECK_EQ_U64(preempt_launch_kernel(&desc, grid, block128, args, 0, app_stream), 0);
    CHECK_EQ_U64(preempt_get_kernel_info(&desc, &info), PREEMPT_OK);
    CHECK(info.task_microseconds > 31 && info.task_microseconds < 33);
    CHECK_EQ_U64(fake_gpu.function_launches, 0);
    CHECK(!fake_gpu.last.original && fake_gpu.last.persistent);
  }

  /* The variant's occupancy: asked once per configuration (with the kernel's), only while in-task checks can be
   * on. One that holds fewer CTAs per SM than the kernel is said; auto then does not run it, even for long tasks of
   * a launch preemptd schedules (intask.c: the grid is sized for the persistent form), where an equal one runs. */
  setenv("PREEMPT_INTASK", "on", 1);
  intask_fake();
  {
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z4longPxx", 2);
    fake_gpu.intask_ctas_per_sm = 3;
    CHECK_EQ_U64(preempt_launch_kernel(&desc, grid, block128, args, 0, app_stream), 0);
    CHECK_EQ_U64(fake_gpu.intask_occupancy_queries, 1);
    CHECK(strstr(preempt_last_error(), "in-task variant holds 3 CTAs per SM against the kernel's 4 at 128") != NULL);
    CHECK(fake_gpu.last.function == &fake_intask_function); /* on: runs it anyway */
    CHECK_EQ_U64(preempt_launch_kernel(&desc, grid, block128, args, 0, app_stream), 0);
    CHECK_EQ_U64(fake_gpu.intask_occupancy_queries, 1);
    CHECK_EQ_U64(preempt_launch_kernel(&desc, grid, block64, args, 0, app_stream), 0);
    CHECK_EQ_U64(fake_gpu.intask_occupancy_queries, 2);

    /* preempt_intask_wanted under auto, for a launch preemptd schedules whose tasks are long (1 ms, contexts of
     * 6208 B for 64 CTAs: 0.4 us to save). */
    preempt_runtime decider;
    memset(&decider, 0, sizeof decider);
    decider.settings.intask = PREEMPT_INTASK_AUTO;
    decider.settings.evict_bound_us = 50;
    decider.daemon.registered = 1;
    preempt_kernel_on_device kernel;
    memset(&kernel, 0, sizeof kernel);
    kernel.intask = fake_gpu.intask_desc;
    kernel.task_nanoseconds = 1e6;
    kernel.ctas_per_sm = 4;
    kernel.intask_ctas_per_sm = 4;
    /* The persistent form's own samples come first: its time per task is the variant's yardstick. */
    kernel.task_samples = PREEMPT_TASK_SAMPLES - 1;
    CHECK_EQ_U64(preempt_intask_wanted(&decider, &kernel, 128, 64), 0);
    kernel.task_samples = PREEMPT_TASK_SAMPLES;
    kernel.persistent_ns_per_task = 1000;
    CHECK_EQ_U64(preempt_intask_wanted(&decider, &kernel, 128, 64), 1); /* the trial: the variant is timed */
    kernel.intask_ctas_per_sm = 3;
    CHECK_EQ_U64(preempt_intask_wanted(&decider, &kernel, 128, 64), 0);
    kernel.intask_ctas_per_sm = 0; /* the query failed */
    CHECK_EQ_U64(preempt_intask_wanted(&decider, &kernel, 128, 64), 0);
    decider.settings.intask = PREEMPT_INTASK_ON;
    CHECK_EQ_U64(preempt_intask_wanted(&decider, &kernel, 128, 64), 1);
    decider.settings.intask = PREEMPT_INTASK_AUTO;
    kernel.intask_ctas_per_sm = 4;
    kernel.task_nanoseconds = 50e3; /* tasks within the 50 us bound: a task-boundary eviction meets it */
    CHECK_EQ_U64(preempt_intask_wanted(&decider, &kernel, 128, 64), 0);
    kernel.task_nanoseconds = 60e3; /* beyond it */
    CHECK_EQ_U64(preempt_intask_wanted(&decider, &kernel, 128, 64), 1);
    decider.settings.evict_bound_us = 0; /* no bound: no variant for latency */
    CHECK_EQ_U64(preempt_intask_wanted(&decider, &kernel, 128, 64), 0);
    decider.settings.evict_bound_us = 50;
    decider.daemon.registered = 0; /* nothing expects an eviction: no cost for nothing */
    CHECK_EQ_U64(preempt_intask_wanted(&decider, &kernel, 128, 64), 0);
    /* Each other way evictions come to be expected. */
    decider.stress.enabled = 1;
    CHECK_EQ_U64(preempt_intask_wanted(&decider, &kernel, 128, 64), 1);
    decider.stress.enabled = 0;
    decider.settings.evict_ready = 1;
    CHECK_EQ_U64(preempt_intask_wanted(&decider, &kernel, 128, 64), 1);
    decider.settings.evict_ready = -1;
    CHECK_EQ_U64(preempt_intask_wanted(&decider, &kernel, 128, 64), 0);
    decider.evictions_asked = 1;
    CHECK_EQ_U64(preempt_intask_wanted(&decider, &kernel, 128, 64), 1);
    /* Its cost decides once its samples are in: 1.04x runs on, 1.22x does not. */
    kernel.shape_samples[0] = PREEMPT_SHAPE_SAMPLES;
    kernel.shape_ns_per_task[0] = 1040;
    CHECK_EQ_U64(preempt_intask_wanted(&decider, &kernel, 128, 64), 1);
    kernel.shape_ns_per_task[0] = 1220;
    CHECK_EQ_U64(preempt_intask_wanted(&decider, &kernel, 128, 64), 0);
    /* With a usable constant-chunk twin, both shapes are timed first, and the cheaper one counts. */
    static int twin;
    kernel.intask_chunks_function = &twin;
    kernel.intask_chunks_ctas_per_sm = 4;
    CHECK_EQ_U64(preempt_intask_wanted(&decider, &kernel, 128, 64), 1); /* the twin's trial */
    kernel.shape_samples[1] = PREEMPT_SHAPE_SAMPLES;
    kernel.shape_ns_per_task[1] = 1010;
    CHECK_EQ_U64(preempt_intask_wanted(&decider, &kernel, 128, 64), 1);
    kernel.shape_ns_per_task[1] = 1300;
    CHECK_EQ_U64(preempt_intask_wanted(&decider, &kernel, 128, 64), 0);
    /* A shape asked for (PREEMPT_INTASK_SHAPE) is the one weighed: the twin alone, then the first alone. */
    decider.settings.intask_shape = PREEMPT_SHAPE_CHUNKS;
    CHECK_EQ_U64(preempt_intask_wanted(&decider, &kernel, 128, 64), 0); /* 1.30x */
    kernel.shape_samples[1] = 0;
    CHECK_EQ_U64(preempt_intask_wanted(&decider, &kernel, 128, 64), 1); /* its trial */
    decider.settings.intask_shape = PREEMPT_SHAPE_RUNTIME;
    CHECK_EQ_U64(preempt_intask_wanted(&decider, &kernel, 128, 64), 0); /* the first: 1.22x */
    decider.settings.intask_shape = PREEMPT_SHAPE_AUTO;
    /* PREEMPT_INTASK=on runs it whatever it costs. */
    decider.settings.intask = PREEMPT_INTASK_ON;
    CHECK_EQ_U64(preempt_intask_wanted(&decider, &kernel, 128, 64), 1);
  }
  /* A failed query is said; the launch goes on. Off: never asked. */
  intask_fake();
  {
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z4longPxx", 2);
    fake_gpu.intask_occupancy_error = 7;
    CHECK_EQ_U64(preempt_launch_kernel(&desc, grid, block128, args, 0, app_stream), 0);
    CHECK(strstr(preempt_last_error(), "in-task variant's occupancy") != NULL);
    CHECK_EQ_U64(fake_gpu.launches, 1);
    set_intask_mode(PREEMPT_INTASK_OFF);
    CHECK_EQ_U64(preempt_launch_kernel(&desc, grid, block64, args, 0, app_stream), 0);
    CHECK_EQ_U64(fake_gpu.intask_occupancy_queries, 1);
  }

  /* Long tasks and a drain form: PREEMPT_FORM=auto keeps such launches persistent (the drain form has no
   * in-task points) where it would otherwise time the drain form from the third launch on (test_drain_form). */
  for (int intask_on = 0; intask_on <= 1; intask_on++) {
    setenv("PREEMPT_INTASK", intask_on ? "on" : "off", 1);
    intask_fake();
    fake_gpu.has_drain = 1;
    fake_gpu.elapsed_ms = 2.0f;
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z4longPxx", 2);
    int drained = 0;
    for (int launch = 0; launch < 6; launch++) {
      CHECK_EQ_U64(preempt_launch_kernel(&desc, grid, block128, args, 0, app_stream), 0);
      drained += fake_gpu.last.function == &fake_drain_function;
      if (intask_on)
        CHECK(fake_gpu.last.function == &fake_intask_function);
    }
    CHECK(intask_on ? drained == 0 : drained >= 2);
  }

  /* A descriptor of another ABI, or with more points than the runtime knows: refused at resolution, said, no
   * launch (again at the next launch, which resolves again). */
  setenv("PREEMPT_INTASK", "on", 1);
  for (int wrong = 0; wrong < 2; wrong++) {
    intask_fake();
    if (wrong == 0)
      fake_gpu.intask_desc.abi_version = PREEMPT_KERNEL_ABI_VERSION + 1;
    else
      fake_gpu.intask_desc.point_count = PREEMPT_INTASK_MAX_POINTS + 1;
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z4longPxx", 2);
    for (int attempt = 0; attempt < 2; attempt++) {
      CHECK_EQ_U64(preempt_launch_kernel(&desc, grid, block128, args, 0, app_stream), FAKE_ERROR_NOT_SUPPORTED);
      CHECK(strstr(preempt_last_error(), "in-task descriptor") != NULL);
      CHECK(strstr(preempt_last_error(), "_Z4longPxx") != NULL);
    }
    CHECK_EQ_U64(fake_gpu.launches, 0);
    CHECK_EQ_U64(fake_gpu.intask_lookups, 0);
  }

  /* Points but no variant (the lookup finds none): in-task stays off, silently; evictions write no word, and a
   * one-wave grid runs the unconverted copy as any kernel's. */
  intask_fake();
  fake_gpu.intask_variant_missing = 1;
  fake_gpu.has_original = 1;
  {
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z4longPxx", 2);
    CHECK_EQ_U64(preempt_launch_kernel(&desc, grid, block128, args, 0, app_stream), 0);
    CHECK_EQ_U64(fake_gpu.intask_lookups, 1);
    CHECK_EQ_U64(fake_gpu.function_launches, 0);
    CHECK(fake_gpu.last.persistent && !fake_gpu.last.original);
    preempt_control_block *control = fake_gpu.last.control;
    CHECK_EQ_U64(control->intask_period_ns, 0);
    preempt_launch_id launch = preempt_last_launch();
    preempt_launch_record *record = fake_launch_record(launch);
    fake_event_set_pending(record->done_event, 1);
    CHECK_EQ_U64(preempt_evict(launch, NULL), PREEMPT_OK);
    CHECK_EQ_U64(control->intask_evict, 0);
    CHECK_EQ_U64(preempt_resume(launch), PREEMPT_OK);
    wait_for_relauncher();
    CHECK_EQ_U64(fake_gpu.last.relaunched, 1u | (1u << PREEMPT_RELAUNCH_EPOCH_SHIFT));
    fake_event_set_pending(record->done_event, 0);
    CHECK_EQ_U64(preempt_launch_kernel(&desc, one_wave, block128, args, 0, app_stream), 0);
    CHECK(fake_gpu.last.original && fake_gpu.last.function == &fake_original_function);
  }

  /* A one-wave grid of a kernel with points stays persistent under on (the variant), where an in-task eviction
   * can reach it; under auto without preemptd and under off it runs the copy. */
  for (int mode = 0; mode < 3; mode++) {
    static const char *const modes[] = {"auto", "on", "off"};
    setenv("PREEMPT_INTASK", modes[mode], 1);
    intask_fake();
    fake_gpu.has_original = 1;
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z4longPxx", 2);
    CHECK_EQ_U64(preempt_launch_kernel(&desc, one_wave, block128, args, 0, app_stream), 0);
    if (mode != 1) {
      CHECK(fake_gpu.last.function == &fake_original_function);
      CHECK_EQ_U64(preempt_last_launch(), 0);
    } else {
      CHECK(fake_gpu.last.persistent && fake_gpu.last.grid.x == 8);
      CHECK(fake_gpu.last.function == (void *)&fake_intask_function);
      CHECK(preempt_last_launch() != 0);
    }
  }

  /* A mistaken spelling is said, and auto kept (each spelling: test_settings); the period comes from
   * PREEMPT_INTASK_PERIOD_US. */
  setenv("PREEMPT_INTASK", "On", 1);
  intask_fake();
  {
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z4longPxx", 2);
    CHECK_EQ_U64(preempt_launch_kernel(&desc, grid, block128, args, 0, app_stream), 0);
    CHECK(strstr(preempt_last_error(), "PREEMPT_INTASK='On'") != NULL);
    CHECK_EQ_U64(fake_gpu.function_launches, 0); /* auto, no task measured */
  }
  setenv("PREEMPT_INTASK", "on", 1);
  setenv("PREEMPT_INTASK_PERIOD_US", "25", 1);
  intask_fake();
  {
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z4longPxx", 2);
    CHECK_EQ_U64(preempt_launch_kernel(&desc, grid, block128, args, 0, app_stream), 0);
    CHECK_EQ_U64(fake_gpu.last.control->intask_period_ns, 25000);
  }
  unsetenv("PREEMPT_INTASK_PERIOD_US");
  unsetenv("PREEMPT_INTASK");
  preempt_shutdown();
}


/* Two in-task shapes (intask.c, choose_shape): a kernel with a twin in constant chunks runs the first variant while
 * its task length is sampled, then each shape in turn, timed, PREEMPT_SHAPE_SAMPLES apiece, then the faster per task;
 * each launch's ring is sized from its own variant's descriptor. PREEMPT_INTASK_SHAPE forces one. The fake's timed
 * pairs measure elapsed_ms as a sample is read, at the next launch. */
static void test_intask_shapes(void) {
  static const preempt_dim3 block128 = {128, 1, 1}, grid = {20000, 1, 1};
  const uint32_t bytes_runtime = 64 + 4096 + 16 * 128, bytes_chunks = 64 + 4096 + 32 * 128;
  long long first = 11, second = 12;
  void *args[] = {&first, &second};
  void *app_stream = &second;
  setenv("PREEMPT_INTASK", "on", 1);
  for (int chunks_faster = 0; chunks_faster <= 1; chunks_faster++) {
    intask_fake();
    fake_gpu.intask_chunks_desc = (preempt_intask_desc){PREEMPT_KERNEL_ABI_VERSION, 1, 32, 4096};
    fake_gpu.intask_chunks_ctas_per_sm = 3; /* fewer than the grid was sized for: PREEMPT_INTASK=on runs it anyway */
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z5shapePxx", 2);
    fake_gpu.elapsed_ms = 2.0f;
    /* Launches 1 and 2 sample the task length; 3 is the first shape sample: all the first variant. */
    for (int launch = 0; launch < 3; launch++) {
      CHECK_EQ_U64(preempt_launch_kernel(&desc, grid, block128, args, 0, app_stream), 0);
      CHECK(fake_gpu.last.function == &fake_intask_function);
      CHECK_EQ_U64(fake_gpu.last.control->intask_record_bytes, bytes_runtime);
    }
    /* Then launches 4-6: constant chunks, the first variant, constant chunks. The first variant's samples (read at
     * launches 4 and 6) measure 2 ms, the constant chunks' (read at 5 and 7) 1.5 or 2.5 ms. */
    const float chunks_ms = chunks_faster ? 1.5f : 2.5f;
    const void *expected[] = {&fake_intask_chunks_function, &fake_intask_function, &fake_intask_chunks_function};
    for (int launch = 0; launch < 3; launch++) {
      fake_gpu.elapsed_ms = launch == 1 ? chunks_ms : 2.0f;
      CHECK_EQ_U64(preempt_launch_kernel(&desc, grid, block128, args, 0, app_stream), 0);
      CHECK(fake_gpu.last.function == expected[launch]);
      CHECK_EQ_U64(fake_gpu.last.control->intask_record_bytes,
                   expected[launch] == &fake_intask_chunks_function ? bytes_chunks : bytes_runtime);
    }
    preempt_kernel_info info;
    CHECK_EQ_U64(preempt_get_kernel_info(&desc, &info), PREEMPT_OK);
    CHECK(info.intask_shape == 0 && info.intask_chunks_launches == 2);
    /* Launch 7 reads launch 6's sample (constant chunks); from there on, the faster shape. */
    fake_gpu.elapsed_ms = chunks_ms;
    for (int launch = 0; launch < 3; launch++) {
      CHECK_EQ_U64(preempt_launch_kernel(&desc, grid, block128, args, 0, app_stream), 0);
      CHECK(fake_gpu.last.function == (chunks_faster ? (void *)&fake_intask_chunks_function : &fake_intask_function));
      fake_gpu.elapsed_ms = 9.0f; /* nothing is timed any more */
    }
    CHECK_EQ_U64(preempt_get_kernel_info(&desc, &info), PREEMPT_OK);
    CHECK_EQ_U64(info.intask_shape, chunks_faster ? 2 : 1);
    CHECK_EQ_U64(info.intask_chunks_launches, chunks_faster ? 5 : 2);
    preempt_shutdown();
  }
  /* PREEMPT_INTASK_SHAPE says which: from the first launch. Without a twin, chunks means the first variant. */
  for (int forced = 0; forced <= 2; forced++) {
    setenv("PREEMPT_INTASK_SHAPE", forced == 1 ? "runtime" : "chunks", 1);
    intask_fake();
    if (forced != 2)
      fake_gpu.intask_chunks_desc = (preempt_intask_desc){PREEMPT_KERNEL_ABI_VERSION, 1, 32, 4096};
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z5shapePxx", 2);
    for (int launch = 0; launch < 8; launch++) {
      CHECK_EQ_U64(preempt_launch_kernel(&desc, grid, block128, args, 0, app_stream), 0);
      CHECK(fake_gpu.last.function == (forced == 0 ? (void *)&fake_intask_chunks_function : &fake_intask_function));
    }
    preempt_shutdown();
  }
  /* A twin that cannot run at the block size (occupancy 0) is never launched, even when asked for. */
  intask_fake();
  fake_gpu.intask_chunks_desc = (preempt_intask_desc){PREEMPT_KERNEL_ABI_VERSION, 1, 32, 4096};
  fake_gpu.intask_chunks_ctas_per_sm = UINT32_MAX;
  {
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z5shapePxx", 2);
    for (int launch = 0; launch < 8; launch++) {
      CHECK_EQ_U64(preempt_launch_kernel(&desc, grid, block128, args, 0, app_stream), 0);
      CHECK(fake_gpu.last.function == &fake_intask_function);
    }
  }
  preempt_shutdown();
  /* A twin's descriptor of another ABI is said and left out: the first variant runs. */
  setenv("PREEMPT_INTASK_SHAPE", "chunks", 1);
  intask_fake();
  fake_gpu.intask_chunks_desc = (preempt_intask_desc){PREEMPT_KERNEL_ABI_VERSION + 1, 1, 32, 4096};
  {
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z5shapePxx", 2);
    CHECK_EQ_U64(preempt_launch_kernel(&desc, grid, block128, args, 0, app_stream), 0);
    CHECK(fake_gpu.last.function == &fake_intask_function);
    CHECK(strstr(preempt_last_error(), "constant-chunk descriptor of ABI") != NULL);
  }
  preempt_shutdown();
  unsetenv("PREEMPT_INTASK_SHAPE");
  unsetenv("PREEMPT_INTASK");
}

/* PREEMPT_TIME_EVICTIONS=1: the eviction that makes the mask full is timed on the GPU's clock, from an event on the
 * control stream after its words to the end of the launch's last grid. */
static void test_eviction_time(void) {
  static const preempt_dim3 grid = {20000, 1, 1}, block = {128, 1, 1}; /* many waves */
  long long first = 21, second = 22;
  void *args[] = {&first, &second};
  void *app_stream = &second;
  double gpu_us = -1;
  preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z4longPxx", 2);

  /* Without the variable: no request event, the end events untimed, and the call says what it needs. */
  unsetenv("PREEMPT_TIME_EVICTIONS");
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  fake_gpu.expected_params = 2;
  CHECK_EQ_U64(preempt_launch_kernel(&desc, grid, block, args, 0, app_stream), 0);
  preempt_launch_id launch = preempt_last_launch();
  preempt_launch_record *record = fake_launch_record(launch);
  CHECK(record != NULL && record->evict_request_event == NULL);
  CHECK(!fake_event_timed(record->wave_done_event) && !fake_event_timed(record->relaunch_done_event));
  CHECK_EQ_U64(fake_gpu.events_created, 1 + 9);
  fake_event_set_pending(record->done_event, 1);
  const preempt_evict_steps *steps = &preempt_runtime_context()->evict_timing.series[PREEMPT_STEPS_EVICT];
  uint32_t steps_before = steps->rows;
  CHECK_EQ_U64(preempt_evict(launch, NULL), PREEMPT_OK);
  CHECK_EQ_U64(steps->rows, steps_before); /* nor its host steps */
  CHECK_EQ_U64(preempt_get_eviction_time(launch, &gpu_us), PREEMPT_ERROR_UNSUPPORTED);
  CHECK(strstr(preempt_last_error(), "PREEMPT_TIME_EVICTIONS=1") != NULL);

  /* A value that is neither 1 nor 0 is said, and evictions are not timed. */
  setenv("PREEMPT_TIME_EVICTIONS", "yes", 1);
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  fake_gpu.expected_params = 2;
  CHECK_EQ_U64(preempt_launch_kernel(&desc, grid, block, args, 0, app_stream), 0);
  CHECK(strstr(preempt_last_error(), "PREEMPT_TIME_EVICTIONS='yes'") != NULL);
  record = fake_launch_record(preempt_last_launch());
  CHECK(record != NULL && record->evict_request_event == NULL);

  setenv("PREEMPT_TIME_EVICTIONS", "1", 1);
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  fake_gpu.expected_params = 2;
  fake_gpu.event_clock = 1;
  CHECK_EQ_U64(preempt_launch_kernel(&desc, grid, block, args, 0, app_stream), 0);
  launch = preempt_last_launch();
  record = fake_launch_record(launch);
  CHECK(record != NULL && record->evict_request_event != NULL && fake_event_timed(record->evict_request_event));
  CHECK(fake_event_timed(record->wave_done_event) && fake_event_timed(record->relaunch_done_event));
  CHECK(!fake_event_timed(record->done_event) && !fake_event_timed(record->ready_event));
  CHECK_EQ_U64(fake_gpu.events_created, 1 + 10);
  fake_event_set_pending(record->done_event, 1); /* it runs */
  CHECK_EQ_U64(preempt_get_eviction_time(launch, NULL), PREEMPT_ERROR_INVALID_ARGUMENT);
  CHECK_EQ_U64(preempt_get_eviction_time(launch, &gpu_us), PREEMPT_ERROR_NOT_READY); /* never evicted */

  /* A spatial eviction is not timed; the one that makes the mask full is, on the control stream, once. */
  preempt_sm_mask one_sm = {{0}};
  one_sm.words[0] = 1u << 3;
  int records_before = fake_gpu.event_records;
  CHECK_EQ_U64(preempt_evict(launch, &one_sm), PREEMPT_OK);
  CHECK_EQ_U64(fake_gpu.event_records, records_before);
  fake_event_set_pending(record->wave_done_event, 1); /* its CTAs still run */
  CHECK_EQ_U64(preempt_evict(launch, NULL), PREEMPT_OK);
  CHECK_EQ_U64(fake_gpu.event_records, records_before + 1);
  CHECK(fake_event_stream(record->evict_request_event) == device_control_stream());
  CHECK_EQ_U64(preempt_evict(launch, NULL), PREEMPT_OK);
  CHECK_EQ_U64(fake_gpu.event_records, records_before + 1);
  /* Each preempt_evict call's host steps are kept, and add up to the whole call. */
  CHECK_EQ_U64(steps->rows, steps_before + 3);
  for (uint32_t row = steps_before; row < steps->rows && row < PREEMPT_EVICT_STEP_ROWS; row++) {
    double sum = 0;
    for (int step = 0; step < PREEMPT_EVICT_STEP_COUNT; step++) {
      CHECK(steps->us[row][step] >= 0);
      sum += steps->us[row][step];
    }
    CHECK(steps->us[row][PREEMPT_EVICT_STEP_COUNT] > 0 && near_us(sum, steps->us[row][PREEMPT_EVICT_STEP_COUNT]));
    /* An urgent launch's steps are not preempt_evict's. */
    CHECK(steps->us[row][PREEMPT_EVICT_STEP_LAUNCH] == 0 && steps->us[row][PREEMPT_EVICT_STEP_IN_THE_WAY] == 0);
  }
  CHECK_EQ_U64(preempt_get_eviction_time(launch, &gpu_us), PREEMPT_ERROR_NOT_READY); /* EVICTING */
  fake_event_set_time(record->evict_request_event, 100.0);
  fake_event_set_time(record->wave_done_event, 137.5);
  fake_event_set_pending(record->wave_done_event, 0);
  preempt_launch_state state;
  CHECK_EQ_U64(preempt_query(launch, &state), PREEMPT_OK);
  CHECK_EQ_U64(state, PREEMPT_LAUNCH_EVICTED);
  CHECK_EQ_U64(preempt_get_eviction_time(launch, &gpu_us), PREEMPT_OK);
  CHECK(near_us(gpu_us, 37.5));

  /* Resumed before the launch's start (the relaunch waits for it), evicted again, and its first wave over: not
   * EVICTED, nor timed, until the relaunch asked for has been enqueued and has ended. */
  fake_event_set_pending(record->ready_event, 1);
  fake_event_set_pending(record->relaunch_done_event, 1);
  int launches_before = fake_gpu.launches;
  CHECK(!record->resumed); /* its first relaunch */
  CHECK_EQ_U64(preempt_resume(launch), PREEMPT_OK);
  CHECK(record->relaunch_pending);
  CHECK_EQ_U64(preempt_evict(launch, NULL), PREEMPT_OK);
  CHECK_EQ_U64(preempt_query(launch, &state), PREEMPT_OK);
  CHECK_EQ_U64(state, PREEMPT_LAUNCH_EVICTING);
  CHECK_EQ_U64(preempt_get_eviction_time(launch, &gpu_us), PREEMPT_ERROR_NOT_READY);
  fake_event_set_pending(record->ready_event, 0);
  wait_for_relauncher();
  CHECK_EQ_U64(fake_gpu.launches, launches_before + 1);
  CHECK_EQ_U64(preempt_query(launch, &state), PREEMPT_OK);
  CHECK_EQ_U64(state, PREEMPT_LAUNCH_EVICTING); /* the relaunch runs */
  fake_event_set_time(record->evict_request_event, 900.0);
  fake_event_set_time(record->wave_done_event, 137.5);
  fake_event_set_time(record->relaunch_done_event, 903.0);
  fake_event_set_pending(record->relaunch_done_event, 0);
  CHECK_EQ_U64(preempt_query(launch, &state), PREEMPT_OK);
  CHECK_EQ_U64(state, PREEMPT_LAUNCH_EVICTED);
  CHECK_EQ_U64(preempt_get_eviction_time(launch, &gpu_us), PREEMPT_OK);
  CHECK(near_us(gpu_us, 3.0));

  /* Resumed, then evicted again: timed afresh, to the relaunch's end; the first wave, long over, counts 0. */
  CHECK_EQ_U64(preempt_resume(launch), PREEMPT_OK);
  wait_for_relauncher();
  CHECK_EQ_U64(preempt_get_eviction_time(launch, &gpu_us), PREEMPT_ERROR_NOT_READY); /* running */
  CHECK_EQ_U64(preempt_evict(launch, NULL), PREEMPT_OK);
  CHECK_EQ_U64(preempt_query(launch, &state), PREEMPT_OK);
  CHECK_EQ_U64(state, PREEMPT_LAUNCH_EVICTED);
  fake_event_set_time(record->evict_request_event, 500.0);
  fake_event_set_time(record->relaunch_done_event, 512.0);
  CHECK_EQ_U64(preempt_get_eviction_time(launch, &gpu_us), PREEMPT_OK);
  CHECK(near_us(gpu_us, 12.0));
  /* Every CTA had left before the words landed: 0. */
  fake_event_set_time(record->relaunch_done_event, 450.0);
  CHECK_EQ_U64(preempt_get_eviction_time(launch, &gpu_us), PREEMPT_OK);
  CHECK(near_us(gpu_us, 0.0));
  /* The leaving CTAs finished the last tasks: the launch is done, its eviction still timed. */
  fake_event_set_pending(record->done_event, 0);
  CHECK_EQ_U64(preempt_query(launch, &state), PREEMPT_OK);
  CHECK_EQ_U64(state, PREEMPT_LAUNCH_DONE);
  CHECK_EQ_U64(preempt_get_eviction_time(launch, &gpu_us), PREEMPT_OK);
  CHECK(near_us(gpu_us, 0.0));
  fake_event_set_pending(record->done_event, 1);

  /* Finished. */
  CHECK_EQ_U64(preempt_resume(launch), PREEMPT_OK);
  wait_for_relauncher();
  fake_event_set_pending(record->done_event, 0);
  CHECK_EQ_U64(preempt_get_eviction_time(launch, &gpu_us), PREEMPT_ERROR_FINISHED);
  unsetenv("PREEMPT_TIME_EVICTIONS");
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
}

int main(int argc, char **argv) {
  /* What the runtime's load-time constructor left in the environment (test/lit/unit/connections.test). */
  if (argc == 2 && strcmp(argv[1], "--connections") == 0) {
    const char *connections = getenv("CUDA_DEVICE_MAX_CONNECTIONS"), *loading = getenv("CUDA_MODULE_LOADING");
    printf("CUDA_DEVICE_MAX_CONNECTIONS=%s CUDA_MODULE_LOADING=%s\n", connections ? connections : "unset",
           loading ? loading : "unset");
    return 0;
  }
  unsetenv("PREEMPT_CHECK_INTERVAL");
  unsetenv("PREEMPT_STRESS");
  unsetenv("PREEMPT_ONE_WAVE");
  unsetenv("PREEMPT_FORM");
  unsetenv("PREEMPT_INTASK");
  unsetenv("PREEMPT_INTASK_PERIOD_US");
  unsetenv("PREEMPT_INTASK_SHAPE");
  unsetenv("PREEMPT_TIME_EVICTIONS");
  setenv("PREEMPT_DAEMON", "off", 1); /* launches go straight to the fake, even where a preemptd runs */
  /* Every launch converted, as before launches ran as written: the tests below but test_short_launches check the
   * converted forms. */
  setenv("PREEMPT_LONG_US", "0", 1);
  /* A converted kernel: persistent grid sized by occupancy, launch values as parameters. */
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  {
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z3addPfS_S_i", 2);
    long long first = 1234, second = 5;
    void *args[] = {&first, &second};
    fake_gpu.expected_params = 2;
    void *app_stream = &first; /* any handle */
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){4096, 3, 2}, (preempt_dim3){256, 1, 1}, args, 64,
                                       app_stream), 0);
    CHECK_EQ_U64(fake_gpu.launches, 1);
    /* Events exist only for slots handed out: the device's resume_ready and one slot's nine (not 9 x 1024:
     * under MPS every process's events come from one server). */
    CHECK_EQ_U64(fake_gpu.events_created, 1 + 9);
    /* This first launch samples the task length: only it records timed events, the two around its first
     * wave (a timed record costs the stream ~1.4 us on the H100). */
    CHECK_EQ_U64(fake_gpu.timed_event_records, 2);
    CHECK(strcmp(fake_gpu.last_marker_name, "__preempt_kernel__Z3addPfS_S_i") == 0);
    CHECK_EQ_U64(fake_gpu.last.grid.x, 8 * 132);
    CHECK(fake_gpu.last.grid.y == 1 && fake_gpu.last.grid.z == 1);
    CHECK_EQ_U64(fake_gpu.last.block.x, 256);
    CHECK_EQ_U64(fake_gpu.last.shared, 64);
    CHECK(fake_gpu.last.stream == app_stream);
    CHECK_EQ_U64(fake_gpu.last.first_param, 1234); /* the kernel's own values, copied */
    CHECK(fake_gpu.last.control != NULL);
    CHECK(fake_gpu.zeroed_bytes >= sizeof(preempt_control_block)); /* the pool starts zeroed */
    CHECK_EQ_U64(fake_gpu.last.task_count, 4096 * 3 * 2);
    CHECK(fake_gpu.last.grid_param[0] == 4096 && fake_gpu.last.grid_param[1] == 3 && fake_gpu.last.grid_param[2] == 2);
    CHECK_EQ_U64(fake_gpu.last.check_interval, 1); /* every task until the task length is known */
    CHECK_EQ_U64(fake_gpu.last.relaunched & 0xffu, 0);      /* the first wave publishes completion itself */
    preempt_launch_id launch = preempt_last_launch();
    CHECK(launch != 0);
    CHECK_EQ_U64((uint32_t)launch, fake_gpu.last.generation);
    /* Stream order: the application's stream waits for done_generation. */
    CHECK_EQ_U64(fake_gpu.stream_waits, 1);
    CHECK(fake_gpu.last_wait_stream == app_stream);
    CHECK(fake_gpu.last_wait_word == &fake_gpu.last.control->done_generation);
    CHECK_EQ_U64(fake_gpu.last_wait_value, fake_gpu.last.generation);

    /* Temporal eviction: every yield-mask word set, on the runtime's stream, in one call (each call
     * adds to the eviction's latency). */
    fake_gpu.events_pending = 1;
    preempt_control_block *control = fake_gpu.last.control;
    int write_calls_before = fake_gpu.mask_write_calls;
    CHECK_EQ_U64(preempt_evict(launch, NULL), PREEMPT_OK);
    for (int word = 0; word < PREEMPT_YIELD_MASK_WORDS; word++)
      CHECK_EQ_U64(control->yield_mask[word], 0xffffffffu);
    CHECK_EQ_U64(fake_gpu.mask_write_calls, write_calls_before + 1);
    preempt_launch_state state;
    CHECK_EQ_U64(preempt_query(launch, &state), PREEMPT_OK);
    CHECK_EQ_U64(state, PREEMPT_LAUNCH_EVICTING); /* its CTAs have not left yet */

    /* Resume before the launch has started (its start event pending): the
     * mask is cleared at once, the relaunch waits for the start, and the
     * relaunch thread enqueues it when the start event fires. A changed
     * argument after the launch call does not leak in. */
    first = 99;
    int launches_before = fake_gpu.launches, ordered_before = fake_gpu.stream_event_waits;
    CHECK_EQ_U64(preempt_resume(launch), PREEMPT_OK);
    for (int word = 0; word < PREEMPT_YIELD_MASK_WORDS; word++)
      CHECK_EQ_U64(control->yield_mask[word], 0);
    CHECK_EQ_U64(fake_gpu.mask_write_calls, write_calls_before + 2); /* cleared in one call too */
    CHECK_EQ_U64(fake_gpu.launches, launches_before);
    CHECK_EQ_U64(preempt_query(launch, &state), PREEMPT_OK);
    CHECK_EQ_U64(state, PREEMPT_LAUNCH_RUNNING);
    fake_gpu.events_pending = 0;
    for (int wait = 0; wait < 1000 && fake_gpu.launches == launches_before; wait++)
      usleep(1000);
    wait_for_relauncher();
    CHECK_EQ_U64(fake_gpu.launches, launches_before + 1); /* a full persistent grid, same values and generation */
    /* Its relaunch waits for the mask clearing on the control stream. */
    CHECK_EQ_U64(fake_gpu.stream_event_waits, ordered_before + 1);
    CHECK_EQ_U64(fake_gpu.last.grid.x, 8 * 132);
    CHECK(fake_gpu.last.stream != app_stream);
    CHECK_EQ_U64(fake_gpu.last.first_param, 1234);
    CHECK_EQ_U64(fake_gpu.last.generation, (uint32_t)launch);
    CHECK(fake_gpu.last.control == control);
    /* A relaunch counts its tasks for the publisher, enqueued right behind it on its stream. */
    CHECK_EQ_U64(fake_gpu.last.relaunched & 0xffu, 1);
    CHECK_EQ_U64(fake_gpu.publishes, 1);
    CHECK_EQ_U64(fake_gpu.launches_at_publish, fake_gpu.launches);
    CHECK(fake_gpu.last_publish_stream == fake_gpu.last.stream);
    CHECK(fake_gpu.last_publish_control == control);
    CHECK_EQ_U64(fake_gpu.last_publish_generation, (uint32_t)launch);
    CHECK_EQ_U64(fake_gpu.last_publish_task_count, 4096 * 3 * 2);

    /* Spatial eviction of SMs 3 and 40 of a started launch: only those bits;
     * the resume relaunches at once, refilling two SMs at the kernel's occupancy. */
    fake_gpu.events_pending = 1;
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){4096, 3, 2}, (preempt_dim3){256, 1, 1}, args, 64,
                                       app_stream), 0);
    launch = preempt_last_launch();
    control = fake_gpu.last.control;
    preempt_sm_mask two = {{0}};
    two.words[0] = 1u << 3;
    two.words[1] = 1u << 8;
    int queries_before = fake_gpu.event_queries;
    CHECK_EQ_U64(preempt_evict(launch, &two), PREEMPT_OK);
    CHECK(control->yield_mask[0] == (1u << 3) && control->yield_mask[1] == (1u << 8) && control->yield_mask[2] == 0);
    /* The words go out before "finished?" is asked (eviction.c): no event query comes before the mask's write. */
    CHECK(fake_gpu.write_log[(fake_gpu.write_count - 1) % FAKE_WRITE_LOG].word == &control->yield_mask[0]);
    CHECK_EQ_U64(fake_gpu.write_log[(fake_gpu.write_count - 1) % FAKE_WRITE_LOG].queries, queries_before);
    CHECK(fake_gpu.event_queries > queries_before);
    fake_gpu.events_pending = 0; /* started (and, to the fake, finished) */
    launches_before = fake_gpu.launches;
    CHECK_EQ_U64(preempt_resume(launch), PREEMPT_OK);
    CHECK_EQ_U64(fake_gpu.launches, launches_before + 1);
    CHECK_EQ_U64(fake_gpu.last.grid.x, 2 * 8);
    CHECK_EQ_U64(fake_gpu.publishes, 2);
    CHECK_EQ_U64(fake_gpu.launches_at_publish, fake_gpu.launches);

    /* Once every event has fired, the launch is finished: nothing to evict. */
    fake_gpu.events_pending = 0;
    CHECK_EQ_U64(preempt_query(launch, &state), PREEMPT_OK);
    CHECK_EQ_U64(state, PREEMPT_LAUNCH_DONE);
    int finished_writes_before = fake_gpu.write_count;
    CHECK_EQ_U64(preempt_evict(launch, NULL), PREEMPT_ERROR_FINISHED);
    /* Its words had gone out before it was found finished: undone as a resumption undoes them, so the control
     * block's next launch finds a clear mask, and the launch is still done. */
    CHECK(fake_gpu.write_count >= finished_writes_before + 2);
    for (int word = 0; word < PREEMPT_YIELD_MASK_WORDS; word++)
      CHECK_EQ_U64(control->yield_mask[word], 0);
    wait_for_relauncher();
    CHECK_EQ_U64(preempt_query(launch, &state), PREEMPT_OK);
    CHECK_EQ_U64(state, PREEMPT_LAUNCH_DONE);

    /* Both launches were resumed: their timings say nothing about tasks. The
     * next one is sampled: 0.01 ms for 24576 tasks on 1056 CTAs is 0.43 us a
     * task, so the launch after it checks every 20 us / 0.43 us = 46 tasks. */
    fake_gpu.elapsed_ms = 0.01f;
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){4096, 3, 2}, (preempt_dim3){256, 1, 1}, args, 64,
                                       app_stream), 0);
    CHECK_EQ_U64(fake_gpu.last.check_interval, 1);
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){4096, 3, 2}, (preempt_dim3){256, 1, 1}, args, 64,
                                       app_stream), 0);
    preempt_kernel_info info;
    CHECK_EQ_U64(preempt_get_kernel_info(&desc, &info), PREEMPT_OK);
    CHECK(info.task_microseconds > 0.42 && info.task_microseconds < 0.44);
    CHECK_EQ_U64(fake_gpu.last.check_interval, 46);
    CHECK_EQ_U64(preempt_set_check_interval(&stub_a, 7), PREEMPT_OK);
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){10, 1, 1}, (preempt_dim3){256, 1, 1}, args, 64,
                                       app_stream), 0);
    CHECK_EQ_U64(fake_gpu.last.check_interval, 7);
    CHECK_EQ_U64(fake_gpu.last.grid.x, 10); /* never more CTAs than tasks */
    CHECK_EQ_U64(fake_gpu.occupancy_queries, 1);
    CHECK_EQ_U64(fake_gpu.marker_lookups, 1);
    CHECK_EQ_U64(preempt_get_kernel_info(&desc, &info), PREEMPT_OK);
    CHECK(info.converted == 1 && info.launches == 5 && info.last_persistent_ctas == 10 && info.sm_count == 132);
    CHECK_EQ_U64(preempt_set_check_interval(&stub_b, 7), PREEMPT_ERROR_INVALID_ARGUMENT); /* never launched */

    /* Per stream: every unfinished launch on it. */
    fake_gpu.events_pending = 1;
    int writes_before = fake_gpu.mask_writes;
    CHECK_EQ_U64(preempt_evict_stream(app_stream, NULL), PREEMPT_OK);
    CHECK(fake_gpu.mask_writes > writes_before);
    writes_before = fake_gpu.mask_writes;
    CHECK_EQ_U64(preempt_resume_stream(app_stream), PREEMPT_OK);
    CHECK(fake_gpu.mask_writes > writes_before); /* masks cleared; relaunches wait for the starts */

    /* An evicted launch that is never resumed keeps its control block: the
     * pool skips it instead of waiting forever. */
    preempt_launch_id held = preempt_last_launch();
    CHECK_EQ_U64(preempt_evict(held, NULL), PREEMPT_OK);
    preempt_control_block *held_control = fake_gpu.last.control;
    for (int launch_index = 0; launch_index < 1100; launch_index++)
      preempt_launch_kernel(&desc, (preempt_dim3){10, 1, 1}, (preempt_dim3){256, 1, 1}, args, 64, app_stream);
    CHECK(fake_gpu.last.control != held_control);
    CHECK(fake_gpu.event_waits >= 1100 - 1024);
    CHECK_EQ_U64(preempt_resume(held), PREEMPT_OK);
    fake_gpu.events_pending = 0;
    wait_for_relauncher();

    /* An empty grid goes to the API unchanged, so that it reports its own error. */
    launches_before = fake_gpu.launches;
    fake_gpu.expected_params = -1;
    preempt_launch_kernel(&desc, (preempt_dim3){0, 1, 1}, (preempt_dim3){256, 1, 1}, args, 0, NULL);
    CHECK_EQ_U64(fake_gpu.launches, launches_before + 1);
    CHECK(fake_gpu.last.grid.x == 0 && !fake_gpu.last.persistent);
    CHECK_EQ_U64(preempt_last_launch(), 0);

    /* More tasks than the 32-bit task counter allows: a clear error, no launch. */
    launches_before = fake_gpu.launches;
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){2147483647u, 65535, 1}, (preempt_dim3){32, 1, 1}, args,
                                       0, NULL), FAKE_ERROR_INVALID_CONFIGURATION);
    CHECK_EQ_U64(fake_gpu.launches, launches_before);
    CHECK(strstr(preempt_last_error(), "exceeds") != NULL);

    /* An impossible block (occupancy 0): the API's own error comes back. */
    fake_gpu.ctas_per_sm = 0;
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){64, 1, 1}, (preempt_dim3){2048, 1, 1}, args, 0, NULL),
                 FAKE_ERROR_LAUNCH);
    CHECK(strstr(preempt_last_error(), "fake launch failure") != NULL);
  }

  /* PREEMPT_CHECK_INTERVAL fixes the interval for every kernel; a malformed value is refused. */
  setenv("PREEMPT_CHECK_INTERVAL", "12", 1);
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  {
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z1kv", 0);
    fake_gpu.expected_params = 0;
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){8, 1, 1}, (preempt_dim3){32, 1, 1}, NULL, 0, NULL), 0);
    CHECK_EQ_U64(fake_gpu.last.check_interval, 12);
  }
  setenv("PREEMPT_CHECK_INTERVAL", "12x", 1);
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  {
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z1kv", 0);
    fake_gpu.expected_params = 0;
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){8, 1, 1}, (preempt_dim3){32, 1, 1}, NULL, 0, NULL), 0);
    CHECK_EQ_U64(fake_gpu.last.check_interval, 1);
    CHECK(strstr(preempt_last_error(), "PREEMPT_CHECK_INTERVAL") != NULL);
  }
  unsetenv("PREEMPT_CHECK_INTERVAL");

  /* Held streams block hardware queues: at most half of them may be held. */
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "8", 1);
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  {
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z1kv", 0);
    fake_gpu.expected_params = 0;
    fake_gpu.events_pending = 1;
    long long stream_handles[6];
    preempt_launch_id launches[6];
    launch_on_streams(&desc, 8, 6, stream_handles, launches);
    for (int index = 0; index < 4; index++)
      CHECK_EQ_U64(preempt_evict(launches[index], NULL), PREEMPT_OK);
    CHECK_EQ_U64(preempt_evict(launches[4], NULL), PREEMPT_ERROR_UNSUPPORTED);
    CHECK(strstr(preempt_last_error(), "4 streams already held") != NULL);
    CHECK_EQ_U64(preempt_evict(launches[0], NULL), PREEMPT_OK); /* its own stream is already held */
    CHECK_EQ_U64(preempt_resume(launches[0]), PREEMPT_OK);
    CHECK_EQ_U64(preempt_evict(launches[4], NULL), PREEMPT_OK); /* room again */
    for (int index = 1; index < 5; index++)
      preempt_resume(launches[index]);
    fake_gpu.events_pending = 0;
    wait_for_relauncher();
  }

  /* Every control block held by an evicted launch that was never resumed: a
   * further launch fails with a clear error instead of waiting forever; it
   * succeeds again once one is resumed. */
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  {
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z1kv", 0);
    fake_gpu.expected_params = 0;
    fake_gpu.events_pending = 1;
    preempt_launch_id first_launch = 0;
    for (int index = 0; index < 1024; index++) {
      CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){8, 1, 1}, (preempt_dim3){32, 1, 1}, NULL, 0, NULL), 0);
      if (index == 0)
        first_launch = preempt_last_launch();
      CHECK_EQ_U64(preempt_evict(preempt_last_launch(), NULL), PREEMPT_OK);
    }
    int launches_before = fake_gpu.launches;
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){8, 1, 1}, (preempt_dim3){32, 1, 1}, NULL, 0, NULL),
                 FAKE_ERROR_NOT_READY);
    CHECK(strstr(preempt_last_error(), "never resumed") != NULL);
    CHECK_EQ_U64(fake_gpu.launches, launches_before);
    fake_gpu.events_pending = 0; /* started and finished, to the fake */
    CHECK_EQ_U64(preempt_resume(first_launch), PREEMPT_OK);
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){8, 1, 1}, (preempt_dim3){32, 1, 1}, NULL, 0, NULL), 0);
    preempt_resume_stream(NULL);
    wait_for_relauncher();
  }

  /* PREEMPT_STRESS=1: a runtime thread evicts and resumes running launches
   * on its own; shutting down stops it and leaves nothing evicted. */
  setenv("PREEMPT_STRESS", "1", 1);
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  {
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z1kv", 0);
    fake_gpu.expected_params = 0;
    fake_gpu.events_pending = 1; /* launches stay "running" */
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){64, 1, 1}, (preempt_dim3){32, 1, 1}, NULL, 0, NULL), 0);
    for (int wait = 0; wait < 2000 && fake_gpu.mask_writes < 12; wait++)
      usleep(1000);
    CHECK(fake_gpu.mask_writes >= 12); /* several rounds of evictions and resumptions */
    unsetenv("PREEMPT_STRESS");
    preempt_shutdown();
    CHECK_EQ_U64(fake_gpu.nonzero_mask_words, 0);
    fake_gpu.events_pending = 0;
  }

  /* PREEMPT_STRESS with CUDA's 8 queues (context.c no longer asks for 32
   * without MPS): launches on 6 streams, at most 4 of them held at any
   * moment; the others are passed by and counted, not refused with a
   * message every round. */
  setenv("PREEMPT_STRESS", "1", 1);
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "8", 1);
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  {
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z1kv", 0);
    fake_gpu.expected_params = 0;
    fake_gpu.events_pending = 1;
    long long stream_handles[6];
    launch_on_streams(&desc, 64, 6, stream_handles, NULL);
    uint64_t skipped = 0;
    uint32_t most_held = 0;
    for (int wait = 0; wait < 4000 && (skipped < 8 || fake_gpu.mask_writes < 24); wait++) {
      usleep(500);
      preempt_runtime *runtime = preempt_runtime_lock();
      skipped = runtime->stress.skipped_held_streams;
      uint32_t held = preempt_held_streams(&runtime->devices[0], NULL);
      most_held = held > most_held ? held : most_held;
      preempt_runtime_unlock(runtime);
    }
    CHECK(skipped >= 8); /* the limit was reached: a pass-by happens only with 4 streams held */
    CHECK(most_held <= 4); /* sampled every 500 us, which may miss the moments any was held: no lower bound */
    /* The stress thread's writes (and the relauncher's) came from threads that relaxed their capture mode: in CUDA's
     * global mode they would otherwise invalidate an application thread's capture (graphMemoryNodes, corpus). */
    CHECK(fake_gpu.mask_writes >= 24);
    CHECK_EQ_U64(fake_gpu.unrelaxed_thread_writes, 0);
    unsetenv("PREEMPT_STRESS");
    preempt_shutdown();
    CHECK_EQ_U64(fake_gpu.nonzero_mask_words, 0);
    fake_gpu.events_pending = 0;
  }
  unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");

  /* Under MPS with CUDA_DEVICE_MAX_CONNECTIONS unset (what the runtime now leaves it), a client's queues are its
   * share of the server's pool, taken as 2: one stream may be held, a second eviction is refused and says why. */
  {
    char mps_directory[] = "/tmp/test_launch_mps.XXXXXX";
    CHECK(mkdtemp(mps_directory) != NULL);
    char control[sizeof mps_directory + 16];
    snprintf(control, sizeof control, "%s/control", mps_directory);
    FILE *socket_stand_in = fopen(control, "w");
    CHECK(socket_stand_in != NULL);
    fclose(socket_stand_in);
    setenv("CUDA_MPS_PIPE_DIRECTORY", mps_directory, 1);
    unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
    fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z1kv", 0);
    fake_gpu.expected_params = 0;
    fake_gpu.events_pending = 1;
    long long stream_handles[2];
    preempt_launch_id launches[2];
    launch_on_streams(&desc, 8, 2, stream_handles, launches);
    CHECK_EQ_U64(preempt_evict(launches[0], NULL), PREEMPT_OK);
    CHECK_EQ_U64(preempt_evict(launches[1], NULL), PREEMPT_ERROR_UNSUPPORTED);
    CHECK(strstr(preempt_last_error(), "1 streams already held") != NULL);
    CHECK(strstr(preempt_last_error(), "unset under MPS") != NULL);
    CHECK_EQ_U64(preempt_resume(launches[0]), PREEMPT_OK);
    fake_gpu.events_pending = 0;
    wait_for_relauncher();
    unsetenv("CUDA_MPS_PIPE_DIRECTORY");
    unlink(control);
    rmdir(mps_directory);
  }

  /* One hardware queue for every stream: a resume would deadlock, so eviction is refused. */
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "1", 1);
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  {
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z1kv", 0);
    fake_gpu.expected_params = 0;
    fake_gpu.events_pending = 1;
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){8, 1, 1}, (preempt_dim3){32, 1, 1}, NULL, 0, NULL), 0);
    CHECK_EQ_U64(preempt_evict(preempt_last_launch(), NULL), PREEMPT_ERROR_UNSUPPORTED);
    CHECK(strstr(preempt_last_error(), "CUDA_DEVICE_MAX_CONNECTIONS") != NULL);
  }
  unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");

  /* A kernel the plugin refused: launched exactly as written, not evictable. */
  fake_gpu_reset(0);
  {
    preempt_kernel_desc desc = fake_kernel_desc(&stub_b, "_Z7refusedv", 0);
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){77, 2, 1}, (preempt_dim3){64, 1, 1}, NULL, 0, NULL), 0);
    CHECK(fake_gpu.last.grid.x == 77 && fake_gpu.last.grid.y == 2);
    CHECK_EQ_U64(fake_gpu.stream_waits, 0);
    CHECK_EQ_U64(preempt_last_launch(), 0);
    preempt_kernel_info info;
    CHECK_EQ_U64(preempt_get_kernel_info(&desc, &info), PREEMPT_OK);
    CHECK_EQ_U64(info.converted, 0);
    CHECK_EQ_U64(preempt_evict(12345, NULL), PREEMPT_ERROR_FINISHED); /* no such launch */
  }

  /* A kernel converted for another kernel ABI: refused with a clear error. */
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION + 1);
  {
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z3oldv", 0);
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){1, 1, 1}, (preempt_dim3){1, 1, 1}, NULL, 0, NULL),
                 FAKE_ERROR_NOT_SUPPORTED);
    CHECK_EQ_U64(fake_gpu.launches, 0);
    CHECK(strstr(preempt_last_error(), "kernel ABI") != NULL);
  }

  /* Bad descriptors and GPU memory exhaustion: errors, no launch, no crash. */
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  {
    CHECK_EQ_U64(preempt_launch_kernel(NULL, (preempt_dim3){1, 1, 1}, (preempt_dim3){1, 1, 1}, NULL, 0, NULL),
                 FAKE_ERROR_INVALID_VALUE);
    preempt_kernel_desc wrong = fake_kernel_desc(&stub_a, "_Z1kv", 0);
    wrong.desc_version = 99;
    CHECK_EQ_U64(preempt_launch_kernel(&wrong, (preempt_dim3){1, 1, 1}, (preempt_dim3){1, 1, 1}, NULL, 0, NULL),
                 FAKE_ERROR_INVALID_VALUE);
    fake_gpu.fail_device_alloc = 1;
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z1kv", 0);
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){8, 1, 1}, (preempt_dim3){32, 1, 1}, NULL, 0, NULL),
                 FAKE_ERROR_OUT_OF_MEMORY);
    CHECK(strstr(preempt_last_error(), "control-block pool") != NULL);
    CHECK_EQ_U64(fake_gpu.launches, 0);
    fake_gpu.fail_device_alloc = 0; /* recovers once memory is back */
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){8, 1, 1}, (preempt_dim3){32, 1, 1}, NULL, 0, NULL), 0);
    CHECK_EQ_U64(fake_gpu.launches, 1);
    CHECK(preempt_get_kernel_info(NULL, NULL) == PREEMPT_ERROR_INVALID_ARGUMENT);
    preempt_launch_state state;
    CHECK(preempt_query(0, &state) == PREEMPT_ERROR_INVALID_ARGUMENT);
    CHECK(preempt_query(preempt_last_launch(), NULL) == PREEMPT_ERROR_INVALID_ARGUMENT);
  }
  preempt_shutdown();
  /* Without the relaunch publisher a relaunch could never complete: launches run, evictions are refused
   * with a message, and nothing is held. */
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  {
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z9nopublishPf", 1);
    long long value = 3;
    void *args[] = {&value};
    fake_gpu.expected_params = 1;
    fake_gpu.fail_publisher_load = 1;
    fake_gpu.events_pending = 1;
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){512, 1, 1}, (preempt_dim3){128, 1, 1}, args, 0, NULL), 0);
    CHECK(strstr(preempt_last_error(), "relaunch publisher") != NULL); /* said when the device was set up */
    CHECK_EQ_U64(preempt_evict(preempt_last_launch(), NULL), PREEMPT_ERROR_UNSUPPORTED);
    CHECK(strstr(preempt_last_error(), "relaunch publisher failed to load") != NULL);
    CHECK_EQ_U64(fake_gpu.mask_writes, 0);
    fake_gpu.events_pending = 0;
  }

  /* Launches while a sample is in flight, or after the last one, record no timed event: only the sampled
   * ones do. The first sample runs with a check before every task; the launch after it, at the interval
   * that sample chose, is sampled again, and its estimate replaces the first. */
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  {
    preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z6timingPf", 1);
    long long value = 7;
    void *args[] = {&value};
    fake_gpu.expected_params = 1;
    fake_gpu.elapsed_ms = 0.001f; /* 1 us per task: a check every 20 tasks */
    fake_gpu.events_pending = 1;
    for (int launch = 0; launch < 3; launch++)
      CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){512, 1, 1}, (preempt_dim3){128, 1, 1}, args, 0, NULL), 0);
    CHECK_EQ_U64(fake_gpu.last.check_interval, 1);
    CHECK_EQ_U64(fake_gpu.timed_event_records, 2);
    fake_gpu.events_pending = 0;
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){512, 1, 1}, (preempt_dim3){128, 1, 1}, args, 0, NULL), 0);
    CHECK(fake_gpu.last.check_interval == 19 || fake_gpu.last.check_interval == 20); /* from the timed pair (float rounding) */
    CHECK_EQ_U64(fake_gpu.timed_event_records, 4); /* the second sample */
    /* At that interval the tasks took half as long: 0.5 us, a check every 40 tasks. */
    fake_gpu.elapsed_ms = 0.0005f;
    for (int launch = 0; launch < 2; launch++)
      CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){512, 1, 1}, (preempt_dim3){128, 1, 1}, args, 0, NULL), 0);
    CHECK(fake_gpu.last.check_interval == 39 || fake_gpu.last.check_interval == 40);
    preempt_kernel_info info;
    CHECK_EQ_U64(preempt_get_kernel_info(&desc, &info), PREEMPT_OK);
    CHECK(info.task_microseconds > 0.49 && info.task_microseconds < 0.51);
    CHECK_EQ_U64(fake_gpu.timed_event_records, 4); /* no third sample */
    CHECK_EQ_U64(fake_gpu.event_records, 6 * 3 + 4);
  }

  test_one_wave_launches();
  test_short_launches();
  test_capture_launches();
  test_as_written_asks_little();
  test_lazy_loading_refuses_eviction();
  test_param_count_from_device();
  test_form_without_room();
  test_warp_rows();
  test_drain_form();
  test_stream_priorities();
  test_scans_reach_grown_slots();
  test_urgent_launch_steps();
  test_prompt_checks();
  test_quota();
  test_intask();
  test_intask_shapes();
  test_eviction_time();
  CHECK_DONE("test_launch");
}
