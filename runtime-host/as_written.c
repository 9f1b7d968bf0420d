/* as_written.c: which launches of a converted kernel run the kernel as written, exactly as the program wrote them.
 * FLEP §4.2 and EffiSha §6.3: only a launch long enough to need eviction pays for a preemptible form. */
#include "preempt/task_grid.h"
#include "runtime.h"

/* One as-written launch in this many is timed again, so that a kernel whose
 * launches grow long is seen; each timing costs two event records. */
#define PREEMPT_RETIME_EVERY 64u

int preempt_stream_capturing(const preempt_gpu_ops *gpu, void *stream) {
  int capturing = 0;
  if (!gpu->stream_capturing)
    return 0;
  /* An error (the legacy stream while another captures, say) counts as
   * capturing: only the copy can then be launched as written, and the API
   * answers that launch with its own error, as it would the original's. */
  return gpu->stream_capturing(stream, &capturing) != 0 || capturing;
}

/* A capture records the launch into a graph that runs later, any number of
 * times, where nothing of the runtime's (events, control blocks, stream
 * waits) can follow it: the kernel runs as written there, through the
 * program's own call (its stub's kernel is the kernel as written since ABI 9,
 * control_block.h), not preemptible, counted in
 * preempt_kernel_info.capture_launches. */
int preempt_capture_launch(preempt_runtime *runtime, preempt_kernel_state *kernel, int device, preempt_dim3 grid,
                           preempt_dim3 block, void **args, size_t shared_bytes, void *stream) {
  const preempt_gpu_ops *gpu = runtime->gpu;
  preempt_kernel_on_device *on_device = &kernel->on_device[device];
  int status = gpu->launch(kernel->desc->host_stub, grid, block, args, shared_bytes, stream);
  if (status != 0)
    return status; /* the API's own error for the program's own launch, as the original would get */
  on_device->capture_launches++;
  on_device->launches++;
  return 0;
}

/* The timed launch in flight, if its end event has fired, becomes the
 * kernel's sample. A pending one is left for a later launch: nothing here
 * waits for the GPU. */
static void take_length_sample(const preempt_gpu_ops *gpu, preempt_kernel_on_device *on_device) {
  if (on_device->length_pending != 1 || gpu->event_query(on_device->length_events[1]) != 0)
    return;
  float milliseconds = 0;
  if (gpu->event_elapsed_ms(on_device->length_events[0], on_device->length_events[1], &milliseconds) == 0)
    preempt_launch_length_add(&on_device->length, milliseconds * 1e6, on_device->length_waves);
  on_device->length_pending = 0;
}

/* Events for timing, made on first use; 0 when they could not be (the
 * launch then runs untimed, and the next one tries again). */
static int have_length_events(const preempt_gpu_ops *gpu, preempt_kernel_on_device *on_device) {
  for (int index = 0; index < 2; index++)
    if (!on_device->length_events[index] && gpu->event_create(&on_device->length_events[index], 1) != 0) {
      on_device->length_events[index] = NULL;
      return 0;
    }
  return 1;
}

int preempt_short_launch(preempt_runtime *runtime, preempt_kernel_state *kernel, int device, uint32_t sm_count,
                         preempt_dim3 grid, preempt_dim3 block, void **args, size_t shared_bytes, void *stream) {
  const preempt_gpu_ops *gpu = runtime->gpu;
  preempt_kernel_on_device *on_device = &kernel->on_device[device];
  /* As written unless predicted long (or PREEMPT_LONG_US=0); under
   * preemptd every launch is converted, held and scheduled, but on a lease
   * (no other process has work on the GPU: docs/daemon.md, "Leases"). */
  if (runtime->long_launch_ns <= 0 || preempt_daemon_schedules(runtime, device))
    return -1;
  take_length_sample(gpu, on_device);
  preempt_grid_dims dims = {grid.x, grid.y, grid.z};
  uint64_t waves = preempt_launch_waves(preempt_grid_task_count(dims), on_device->original_ctas_per_sm, sm_count);
  /* Occupancy 0: the block cannot run; the converted path lets the API say why. */
  if (waves == 0 || preempt_launch_is_long(&on_device->length, waves, runtime->long_launch_ns))
    return -1;
  int timed = !on_device->length_pending &&
              (on_device->length.samples == 0 || on_device->short_launches % PREEMPT_RETIME_EVERY == 0) &&
              have_length_events(gpu, on_device);
  int claimed = timed;
  if (claimed)
    on_device->length_pending = -1; /* claimed: no other thread records these events meanwhile */
  /* Enqueued with the context unlocked, as persistent_launch does: a launch
   * blocks while its stream's queue is full, which may drain only once
   * another thread (the stress thread's, say) resumes an evicted launch
   * ahead of it in the stream. */
  preempt_runtime_unlock(runtime);
  timed = timed && gpu->event_record(on_device->length_events[0], stream) == 0;
  int status = gpu->launch(kernel->desc->host_stub, grid, block, args, shared_bytes, stream);
  timed = timed && status == 0 && gpu->event_record(on_device->length_events[1], stream) == 0;
  runtime = preempt_runtime_lock(); /* the same context, locked again */
  if (claimed) {
    on_device->length_pending = timed;
    on_device->length_waves = waves;
  }
  if (status != 0)
    return status; /* the program's own launch failed: its error, as the original would get */
  on_device->short_launches++;
  on_device->launches++;
  return 0;
}

int preempt_cannot_evict(preempt_runtime *runtime) {
  return runtime->long_launch_ns > 0 && preempt_lazy_loading(runtime);
}

/* Nothing in a process that loads modules lazily can evict: every eviction
 * and every hold for preemptd is refused (eviction.c,
 * preempt_refuse_relaunch), so a converted form would only cost. The launch
 * goes through the program's own call with one lock cycle, no capture query
 * (a capture records it as written anyway) and no timing. Counted first: a
 * launch the API refuses is uncounted again. */
int preempt_unevictable_launch(preempt_runtime *runtime, preempt_kernel_state *kernel, int device, preempt_dim3 grid,
                               preempt_dim3 block, void **args, size_t shared_bytes, void *stream) {
  const preempt_gpu_ops *gpu = runtime->gpu;
  preempt_kernel_on_device *on_device = &kernel->on_device[device];
  on_device->unevictable_launches++;
  on_device->launches++;
  preempt_runtime_unlock(runtime);
  int status = gpu->launch(kernel->desc->host_stub, grid, block, args, shared_bytes, stream);
  if (status != 0) {
    runtime = preempt_runtime_lock();
    on_device->unevictable_launches--;
    on_device->launches--;
    preempt_runtime_unlock(runtime);
  }
  return status;
}
