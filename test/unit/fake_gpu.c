/* fake_gpu.c: a gpu.h backend that records calls instead of touching a GPU, for runtime unit tests.
 * Lets CI check FLEP §3-4's launch, eviction and resumption logic on a machine with no GPU. */
#include <stdlib.h>
#include <string.h>

#include "fake_gpu.h"
#include "runtime.h"

fake_gpu_state fake_gpu;

static const char *fake_error_string(int code) { return code == FAKE_ERROR_LAUNCH ? "fake launch failure" : "fake error"; }
static int fake_current_device(int *device) {
  __atomic_add_fetch(&fake_gpu.current_device_calls, 1, __ATOMIC_RELAXED);
  *device = 0;
  return 0;
}
static int fake_set_device(int device) {
  __atomic_add_fetch(&fake_gpu.set_device_calls, 1, __ATOMIC_RELAXED);
  return device == 0 ? 0 : FAKE_ERROR_INVALID_VALUE; /* the fake's threads are always on device 0 */
}
static int fake_device_count(int *count) { *count = fake_gpu.device_count ? fake_gpu.device_count : 1; return 0; }
void fake_device_uuid(int device, unsigned char uuid[16]) {
  memset(uuid, 0x5a, 16);
  uuid[0] = 0xfa;
  uuid[1] = 0xce;
  uuid[2] = (unsigned char)device;
}
static int fake_uuid(int device, unsigned char uuid[16]) { fake_device_uuid(device, uuid); return 0; }
static int fake_sm_count(int device, uint32_t *count) { (void)device; *count = fake_gpu.sm_count; return 0; }
static int fake_kernel_global(const void *stub, const char *name, void *value, size_t bytes) {
  (void)stub;
  memset(value, 0, bytes);
  if (strncmp(name, PREEMPT_INTASK_CHUNKS_DESC_PREFIX, strlen(PREEMPT_INTASK_CHUNKS_DESC_PREFIX)) == 0) {
    if (bytes == sizeof fake_gpu.intask_chunks_desc)
      memcpy(value, &fake_gpu.intask_chunks_desc, bytes);
    return 0;
  }
  if (strncmp(name, PREEMPT_WARP_ROWS_PREFIX, strlen(PREEMPT_WARP_ROWS_PREFIX)) == 0) {
    if (bytes == sizeof fake_gpu.warp_rows)
      memcpy(value, &fake_gpu.warp_rows, bytes);
    return 0;
  }
  if (strncmp(name, PREEMPT_INTASK_DESC_PREFIX, strlen(PREEMPT_INTASK_DESC_PREFIX)) == 0) {
    if (bytes == sizeof fake_gpu.intask_desc)
      memcpy(value, &fake_gpu.intask_desc, bytes);
    return 0;
  }
  fake_gpu.marker_lookups++;
  strncpy(fake_gpu.last_marker_name, name, sizeof fake_gpu.last_marker_name - 1);
  if (bytes == sizeof fake_gpu.marker_abi)
    memcpy(value, &fake_gpu.marker_abi, bytes);
  return 0;
}
static int fake_param_sizes(const void *stub, uint32_t capacity, size_t *sizes, uint32_t *count) {
  (void)stub;
  fake_gpu.param_size_reads++;
  *count = fake_gpu.expected_params > 0 ? (uint32_t)fake_gpu.expected_params : 0;
  for (uint32_t index = 0; sizes && index < *count && index < capacity; index++)
    sizes[index] = 8; /* the tests pass 8-byte parameters */
  return 0;
}
/* The stub's kernel: the kernel as written (control_block.h, ABI 9). */
static int fake_occupancy(const void *stub, uint32_t threads, size_t shared, uint32_t *ctas_per_sm) {
  (void)stub; (void)threads; (void)shared;
  *ctas_per_sm = fake_gpu.original_ctas_per_sm ? fake_gpu.original_ctas_per_sm : fake_gpu.ctas_per_sm;
  return 0;
}
/* The H100's, as gpu_cuda.c reads them there. */
static int fake_sm_limits(int device, preempt_sm_limits *limits) {
  (void)device;
  *limits = (preempt_sm_limits){2048, 32, 65536, 256, 233472, 128, 1024, 32};
  return 0;
}
static int fake_kernel_footprint(const void *stub, void *function, uint32_t *registers_per_thread,
                                 uint32_t *static_shared_bytes) {
  (void)stub;
  (void)function;
  *registers_per_thread = fake_gpu.registers_per_thread;
  *static_shared_bytes = fake_gpu.static_shared_bytes;
  return 0;
}
/* "Device memory" is host memory here: a copy lands at once. */
static int fake_copy_device_async(void *device_destination, const void *device_source, size_t bytes, void *stream) {
  (void)stream;
  memcpy(device_destination, device_source, bytes);
  fake_gpu.device_copies++;
  return 0;
}
static int fake_copy_to_host(void *host, const void *device_pointer, size_t bytes, void *stream) {
  (void)stream;
  memcpy(host, device_pointer, bytes);
  fake_gpu.copies_to_host++;
  return 0;
}
static int fake_device_alloc(void **pointer, size_t bytes) {
  if (fake_gpu.fail_device_alloc)
    return FAKE_ERROR_OUT_OF_MEMORY;
  *pointer = calloc(1, bytes);
  fake_gpu.device_allocs++;
  return 0;
}
static int fake_free(void *pointer) { free(pointer); return 0; }
static int fake_device_zero(void *pointer, size_t bytes) {
  memset(pointer, 0, bytes);
  fake_gpu.zeroed_bytes += bytes;
  return 0;
}
static int fake_device_zero_async(void *pointer, size_t bytes, void *stream) {
  (void)stream;
  memset(pointer, 0, bytes);
  fake_gpu.zeroed_async_bytes += bytes;
  fake_gpu.last_zeroed_async = pointer;
  return 0;
}
static int fake_stream_create(void **stream, int urgent) {
  (void)urgent;
  *stream = calloc(1, 1);
  fake_gpu.streams_created++;
  return 0;
}
/* Whether this thread relaxed its capture mode and has not restored it (CUDA keeps the mode per thread). */
static _Thread_local int thread_relaxed;

/* "Device memory" is host memory here: a stream write lands at once. */
static int fake_stream_write(void *stream, uint32_t *words, const uint32_t *values, uint32_t count) {
  if (!thread_relaxed && !pthread_equal(pthread_self(), fake_gpu.application_thread))
    fake_gpu.unrelaxed_thread_writes++;
  int entry = fake_gpu.write_count++ % FAKE_WRITE_LOG;
  fake_gpu.write_log[entry].stream = stream;
  fake_gpu.write_log[entry].word = words;
  fake_gpu.write_log[entry].value = count ? values[0] : 0;
  fake_gpu.write_log[entry].queries = __atomic_load_n(&fake_gpu.event_queries, __ATOMIC_RELAXED);
  for (uint32_t index = 0; index < count; index++) {
    uint32_t before = words[index];
    fake_gpu.nonzero_mask_words += (before == 0 && values[index] != 0) - (before != 0 && values[index] == 0);
    words[index] = values[index];
    fake_gpu.mask_writes++;
  }
  fake_gpu.mask_write_calls++;
  return 0;
}
static int fake_stream_wait(void *stream, void *word, uint32_t value) {
  fake_gpu.stream_waits++;
  fake_gpu.last_wait_stream = stream;
  fake_gpu.last_wait_word = word;
  fake_gpu.last_wait_value = value;
  return 0;
}
static int fake_host_words_alloc(uint32_t **host, void **device_view, uint32_t count) {
  if (!fake_gpu.host_words)
    return FAKE_ERROR_INVALID_VALUE;
  *host = calloc(count, sizeof **host);
  if (!*host)
    return FAKE_ERROR_OUT_OF_MEMORY;
  *device_view = *host; /* one address space, as CUDA's unified addressing gives */
  fake_gpu.host_words_allocs++;
  fake_gpu.last_host_words = *host;
  return 0;
}
/* The last block stays readable until the next reset: a test reads what shutdown stored there. */
static int fake_host_words_free(uint32_t *host) {
  if (host != fake_gpu.last_host_words)
    free(host);
  return 0;
}
static int fake_stream_wait_event(void *stream, void *event) {
  (void)stream;
  (void)event;
  fake_gpu.stream_event_waits++;
  return 0;
}
/* An event: pending (set by tests), whether it was created timed, where it was last recorded, and its time on the
 * fake's clock (fake_event_set_time). */
typedef struct fake_event {
  int pending;
  int timed;
  void *stream;
  double time_us;
} fake_event;
static int fake_event_create(void **event, int timed) {
  fake_event *state = calloc(1, sizeof *state);
  if (!state)
    return FAKE_ERROR_OUT_OF_MEMORY;
  state->timed = timed;
  state->pending = fake_gpu.events_born_pending;
  *event = state;
  fake_gpu.events_created++;
  return 0;
}
static int fake_event_record(void *event, void *stream) {
  fake_event *state = event;
  state->stream = stream;
  fake_gpu.event_records++;
  fake_gpu.timed_event_records += state->timed;
  return 0;
}
void fake_event_set_pending(void *event, int pending) {
  __atomic_store_n(&((fake_event *)event)->pending, pending, __ATOMIC_RELEASE);
}
void fake_event_set_time(void *event, double time_us) { ((fake_event *)event)->time_us = time_us; }
void *fake_event_stream(void *event) { return ((fake_event *)event)->stream; }
int fake_event_timed(void *event) { return ((fake_event *)event)->timed; }
static int fake_event_query(void *event) {
  __atomic_add_fetch(&fake_gpu.event_queries, 1, __ATOMIC_RELAXED);
  return fake_gpu.events_pending || __atomic_load_n(&((fake_event *)event)->pending, __ATOMIC_ACQUIRE)
             ? FAKE_ERROR_NOT_READY
             : 0;
}
static int fake_event_synchronize(void *event) { (void)event; fake_gpu.event_waits++; return 0; }
static int fake_event_elapsed(void *start, void *end, float *milliseconds) {
  const fake_event *first = start, *last = end;
  /* As CUDA: an event created without timing cannot be timed (cudaErrorInvalidResourceHandle there). */
  if (!first->timed || !last->timed)
    return FAKE_ERROR_INVALID_VALUE;
  *milliseconds = fake_gpu.event_clock ? (float)((last->time_us - first->time_us) / 1000.0) : fake_gpu.elapsed_ms;
  return 0;
}
/* The parameters a persistent form takes after the kernel's own. */
static void read_persistent_params(fake_launch *last, void **args) {
  int first = fake_gpu.expected_params;
  last->persistent = 1;
  if (first > 0)
    last->first_param = *(long long *)args[0];
  last->control = *(preempt_control_block **)args[first];
  last->task_count = *(unsigned int *)args[first + 1];
  for (int axis = 0; axis < 3; axis++)
    last->grid_param[axis] = *(unsigned int *)args[first + 2 + axis];
  last->generation = *(unsigned int *)args[first + 5];
  last->check_interval = *(unsigned int *)args[first + 6];
  last->relaunched = *(unsigned int *)args[first + 7];
}

/* Set while launch_function launches the persistent form through fake_launch_kernel. */
static int persistent_route;

static int fake_launch_kernel(const void *stub, preempt_dim3 grid, preempt_dim3 block, void **args, size_t shared,
                              void *stream) {
  (void)stub;
  fake_launch *last = &fake_gpu.last;
  memset(last, 0, sizeof *last);
  last->grid = grid;
  last->block = block;
  last->shared = shared;
  last->stream = stream;
  last->args = args;
  if (args && fake_gpu.expected_params >= 0 && persistent_route)
    read_persistent_params(last, args);
  last->as_written = !persistent_route;
  __atomic_fetch_add(&fake_gpu.launches, 1, __ATOMIC_RELEASE); /* last: the test polls it */
  if (block.x * block.y * block.z > 1024)
    return FAKE_ERROR_LAUNCH; /* what a real API says about an impossible block */
  return 0;
}

int fake_original_function;
int fake_drain_function;
int fake_intask_function;
int fake_intask_chunks_function;
int fake_persistent_function;

static int is_intask_function(const void *function) {
  return function == &fake_intask_function || function == &fake_intask_chunks_function;
}

static int fake_original_kernel(const void *stub, const char *name, void **function) {
  (void)stub;
  fake_gpu.form_lookups++;
  if (strncmp(name, PREEMPT_DRAIN_KERNEL_PREFIX, strlen(PREEMPT_DRAIN_KERNEL_PREFIX)) == 0) {
    fake_gpu.drain_lookups++;
    *function = fake_gpu.has_drain ? &fake_drain_function : NULL;
    return 0;
  }
  if (strncmp(name, PREEMPT_PERSISTENT_KERNEL_PREFIX, strlen(PREEMPT_PERSISTENT_KERNEL_PREFIX)) == 0) {
    *function = fake_gpu.persistent_missing ? NULL : &fake_persistent_function;
    return 0;
  }
  if (strncmp(name, PREEMPT_INTASK_CHUNKS_KERNEL_PREFIX, strlen(PREEMPT_INTASK_CHUNKS_KERNEL_PREFIX)) == 0) {
    *function = fake_gpu.intask_chunks_desc.point_count != 0 ? &fake_intask_chunks_function : NULL;
    return 0;
  }
  if (strncmp(name, PREEMPT_INTASK_KERNEL_PREFIX, strlen(PREEMPT_INTASK_KERNEL_PREFIX)) == 0) {
    fake_gpu.intask_lookups++;
    strncpy(fake_gpu.last_intask_name, name, sizeof fake_gpu.last_intask_name - 1);
    int has = fake_gpu.intask_desc.point_count != 0 && !fake_gpu.intask_variant_missing;
    *function = has ? &fake_intask_function : NULL;
    return 0;
  }
  fake_gpu.original_lookups++;
  strncpy(fake_gpu.last_original_name, name, sizeof fake_gpu.last_original_name - 1);
  *function = NULL;
  if (fake_gpu.original_lookup_error)
    return fake_gpu.original_lookup_error;
  if (fake_gpu.has_original)
    *function = &fake_original_function;
  return 0;
}
/* A copy takes the kernel's own parameters: the first is read as 8 bytes when there is one. */
static int fake_function_occupancy(const void *host_stub, void *function, uint32_t threads, size_t shared,
                                   uint32_t *ctas_per_sm) {
  (void)host_stub; (void)threads; (void)shared;
  if (function == &fake_persistent_function) { /* the converted kernel's occupancy, as the stub's was before ABI 9 */
    fake_gpu.occupancy_queries++;
    *ctas_per_sm = fake_gpu.ctas_per_sm;
    return 0;
  }
  fake_gpu.intask_occupancy_queries++;
  *ctas_per_sm = 0;
  if (!is_intask_function(function))
    return 1; /* only variants are asked about */
  if (fake_gpu.intask_occupancy_error)
    return fake_gpu.intask_occupancy_error;
  if (function == &fake_intask_chunks_function) {
    uint32_t answer = fake_gpu.intask_chunks_ctas_per_sm ? fake_gpu.intask_chunks_ctas_per_sm : fake_gpu.ctas_per_sm;
    *ctas_per_sm = answer == UINT32_MAX ? 0 : answer;
    return 0;
  }
  *ctas_per_sm = fake_gpu.intask_ctas_per_sm ? fake_gpu.intask_ctas_per_sm : fake_gpu.ctas_per_sm;
  return 0;
}
static int fake_launch_function(const void *host_stub, void *function, preempt_dim3 grid, preempt_dim3 block,
                                void **args, size_t shared, void *stream) {
  if (function == &fake_persistent_function) { /* the persistent form: as the stub's launches were before ABI 9 */
    persistent_route = 1;
    int status = fake_launch_kernel(host_stub, grid, block, args, shared, stream);
    persistent_route = 0;
    return status;
  }
  if (fake_gpu.fail_function_launch)
    return FAKE_ERROR_LAUNCH;
  fake_launch *last = &fake_gpu.last;
  memset(last, 0, sizeof *last);
  last->original = 1;
  last->host_stub = host_stub;
  last->function = function;
  last->args = args;
  last->grid = grid;
  last->block = block;
  last->shared = shared;
  last->stream = stream;
  if (args && !is_intask_function(function))
    last->first_param = *(long long *)args[0];
  /* An in-task variant takes the persistent form's parameters. */
  if (is_intask_function(function) && args && fake_gpu.expected_params >= 0)
    read_persistent_params(last, args);
  /* A drain form takes the control block after the kernel's own parameters. */
  if (function == &fake_drain_function && args && fake_gpu.expected_params >= 0)
    last->control = *(preempt_control_block **)args[fake_gpu.expected_params];
  fake_gpu.function_launches++;
  __atomic_fetch_add(&fake_gpu.launches, 1, __ATOMIC_RELEASE);
  return 0;
}

static int fake_stream_capturing(void *stream, int *capturing) {
  (void)stream;
  *capturing = fake_gpu.capturing;
  return fake_gpu.capture_query_error;
}
static int fake_stream_priority(void *stream, int *priority) {
  __atomic_add_fetch(&fake_gpu.stream_priority_calls, 1, __ATOMIC_RELAXED);
  *priority = stream && stream == fake_gpu.priority_stream ? fake_gpu.priority_value : 0;
  return 0;
}
static int fake_capture_mode_relax(int *saved) {
  fake_gpu.capture_relaxes++;
  thread_relaxed = 1;
  *saved = 7; /* any mode: restore must hand it back */
  return 0;
}
static int fake_capture_mode_restore(int saved) {
  fake_gpu.capture_restores += saved == 7;
  thread_relaxed = 0;
  return 0;
}

static int fake_module_loading_lazy(int *lazy) {
  *lazy = fake_gpu.lazy_loading;
  return 0;
}

static int fake_publisher_load(void **publisher) {
  if (fake_gpu.fail_publisher_load)
    return FAKE_ERROR_LAUNCH;
  *publisher = &fake_gpu; /* any non-null handle */
  return 0;
}
static int fake_publish_relaunch(void *publisher, void *stream, void *control, uint32_t generation,
                                 uint32_t task_count) {
  if (publisher != &fake_gpu)
    return FAKE_ERROR_INVALID_VALUE;
  fake_gpu.last_publish_stream = stream;
  fake_gpu.last_publish_control = control;
  fake_gpu.last_publish_generation = generation;
  fake_gpu.last_publish_task_count = task_count;
  fake_gpu.launches_at_publish = fake_gpu.launches;
  fake_gpu.publishes++;
  return 0;
}

static const preempt_gpu_ops fake_ops = {
    .api_name = "FAKE",
    .invalid_value = FAKE_ERROR_INVALID_VALUE,
    .out_of_memory = FAKE_ERROR_OUT_OF_MEMORY,
    .invalid_configuration = FAKE_ERROR_INVALID_CONFIGURATION,
    .not_supported = FAKE_ERROR_NOT_SUPPORTED,
    .not_ready = FAKE_ERROR_NOT_READY,
    .error_string = fake_error_string,
    .current_device = fake_current_device,
    .set_device = fake_set_device,
    .device_count = fake_device_count,
    .sm_count = fake_sm_count,
    .sm_limits = fake_sm_limits,
    .kernel_footprint = fake_kernel_footprint,
    .copy_device_async = fake_copy_device_async,
    .copy_to_host = fake_copy_to_host,
    .device_uuid = fake_uuid,
    .kernel_global = fake_kernel_global,
    .kernel_param_sizes = fake_param_sizes,
    .occupancy = fake_occupancy,
    .device_alloc = fake_device_alloc,
    .device_free = fake_free,
    .device_zero = fake_device_zero,
    .device_zero_async = fake_device_zero_async,
    .stream_create = fake_stream_create,
    .stream_destroy = fake_free,
    .stream_write_words = fake_stream_write,
    .stream_wait_u32 = fake_stream_wait,
    .stream_wait_event = fake_stream_wait_event,
    .event_create = fake_event_create,
    .event_destroy = fake_free,
    .event_record = fake_event_record,
    .event_query = fake_event_query,
    .event_synchronize = fake_event_synchronize,
    .event_elapsed_ms = fake_event_elapsed,
    .launch = fake_launch_kernel,
    .original_kernel = fake_original_kernel,
    .launch_function = fake_launch_function,
    .function_occupancy = fake_function_occupancy,
    .publisher_load = fake_publisher_load,
    .publish_relaunch = fake_publish_relaunch,
    .stream_capturing = fake_stream_capturing,
    .stream_priority = fake_stream_priority,
    .host_words_alloc = fake_host_words_alloc,
    .host_words_free = fake_host_words_free,
    .capture_mode_relax = fake_capture_mode_relax,
    .capture_mode_restore = fake_capture_mode_restore,
    .module_loading_lazy = fake_module_loading_lazy,
};

const preempt_gpu_ops *preempt_gpu_backend(void) { return &fake_ops; }

void fake_gpu_reset(uint32_t marker_abi) {
  preempt_shutdown();
  free(fake_gpu.last_host_words);
  memset(&fake_gpu, 0, sizeof fake_gpu);
  fake_gpu.sm_count = 132;
  fake_gpu.ctas_per_sm = 8;
  fake_gpu.registers_per_thread = 32;
  fake_gpu.marker_abi = marker_abi;
  fake_gpu.expected_params = -1;
  fake_gpu.application_thread = pthread_self();
}

preempt_kernel_desc fake_kernel_desc(const void *stub, const char *name, uint32_t params) {
  preempt_kernel_desc desc = {.desc_version = 1, .gpu_api = 1, .param_count = params,
                              .kernel_abi = PREEMPT_KERNEL_ABI_VERSION, .host_stub = stub, .name = name};
  return desc;
}

preempt_launch_record *fake_launch_record(preempt_launch_id launch) {
  preempt_runtime *runtime = preempt_runtime_lock();
  preempt_device_state *device;
  preempt_launch_record *record = preempt_launch_lookup(runtime, launch, &device);
  preempt_runtime_unlock(runtime);
  return record;
}
