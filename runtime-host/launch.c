/* launch.c: preempt_launch_kernel, which runs a converted kernel as a persistent grid sized by occupancy.
 * FLEP §4.1 (persistent CTAs fill the GPU), EffiSha §6 (launch through the runtime, stream order kept). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preempt/generation.h"
#include "preempt/task_grid.h"
#include "runtime.h"

/* Converted launches enqueued so far (evictable, or held for preemptd): a synchronous copy that finds it unchanged
 * since it last waited for the device need not wait again (sync_copies_cuda.c). */
uint64_t preempt_tracked_launches;

#define PREEMPT_KERNEL_DESC_VERSION 1u
#define PREEMPT_MAX_CHECK_INTERVAL 1024u

static _Thread_local preempt_launch_id last_launch;

preempt_launch_id preempt_last_launch(void) { return last_launch; }

static preempt_kernel_state *kernel_state(preempt_runtime *runtime, preempt_kernel_desc *desc) {
  if (desc->runtime_state)
    return desc->runtime_state;
  preempt_kernel_state *state = calloc(1, sizeof *state);
  if (!state)
    return NULL;
  state->desc = desc;
  state->next = runtime->kernels;
  runtime->kernels = state;
  desc->runtime_state = state;
  return state;
}

/* A kernel the pass kept beside the converted one (gpu.h's original_kernel), or NULL. */
static void *look_up_copy(const preempt_gpu_ops *gpu, const preempt_kernel_desc *desc, const char *name,
                          const char *what) {
  void *function = NULL;
  if (!gpu->original_kernel)
    return NULL;
  int status = gpu->original_kernel(desc->host_stub, name, &function);
  if (status != 0 && status != gpu->not_supported)
    preempt_report_gpu(gpu, status, what, desc->name);
  return status == 0 ? function : NULL;
}

/* preempt_report, the first time `*said` is 0: a kernel's reason to run its
 * launches as written is said once, not at every launch. */
static void say_once(int *said, const char *format, ...) {
  if (*said)
    return;
  *said = 1;
  char text[512];
  va_list arguments;
  va_start(arguments, format);
  vsnprintf(text, sizeof text, format, arguments);
  va_end(arguments);
  preempt_report("%s", text);
}

#define NAME_CAPACITY 4096

/* `prefix` and the kernel's name, the name of a global or kernel the pass
 * keeps beside it; 0, or -1 when it does not fit. */
static int prefixed_name(char name[NAME_CAPACITY], const char *prefix, const char *kernel) {
  int length = snprintf(name, NAME_CAPACITY, "%s%s", prefix, kernel);
  return length < 0 || length >= NAME_CAPACITY ? -1 : 0;
}

/* The in-task variant's twin in constant chunks (intask.c, choose_shape).
 * Optional: without it (none made, or a descriptor this runtime refuses,
 * said) the first variant runs alone. */
static void resolve_chunks_variant(const preempt_gpu_ops *gpu, const preempt_kernel_desc *desc,
                                   preempt_kernel_on_device *on_device, const char *desc_name, const char *name) {
  preempt_intask_desc *chunks = &on_device->intask_chunks;
  int status = gpu->kernel_global(desc->host_stub, desc_name, chunks, sizeof *chunks);
  if (status != 0) {
    preempt_report_gpu(gpu, status, "looking up the constant-chunk variant's descriptor (the other variant runs)",
                       desc->name);
  } else if (chunks->point_count != 0 &&
             (chunks->abi_version != PREEMPT_KERNEL_ABI_VERSION || chunks->point_count > PREEMPT_INTASK_MAX_POINTS)) {
    preempt_report("kernel '%s' has a constant-chunk descriptor of ABI %u with %u points: the other in-task variant "
                   "runs; rebuild it with the matching libpreempt.so",
                   desc->name, chunks->abi_version, chunks->point_count);
  } else if (chunks->point_count != 0) {
    on_device->intask_chunks_function = look_up_copy(
        gpu, desc, name, "looking up the constant-chunk variant (the other in-task variant runs)");
  }
  if (!on_device->intask_chunks_function)
    memset(chunks, 0, sizeof *chunks);
}

/* Drops what a failed resolve_forms read: the kernel is resolved again at its next launch. */
static void forget_params(preempt_kernel_on_device *on_device) {
  free(on_device->param_sizes);
  on_device->param_sizes = NULL;
}

/* Finds out once per device whether the plugin converted this kernel (its
 * marker). Only that: under lazy module loading each form looked up is a
 * module load, which a process that never evicts must not pay for. */
static int resolve_marker(preempt_runtime *runtime, preempt_kernel_state *kernel, int device) {
  preempt_kernel_on_device *on_device = &kernel->on_device[device];
  const preempt_kernel_desc *desc = kernel->desc;
  const preempt_gpu_ops *gpu = runtime->gpu;
  char marker_name[NAME_CAPACITY];
  if (prefixed_name(marker_name, PREEMPT_KERNEL_MARKER_PREFIX, desc->name)) {
    preempt_report("kernel name too long: '%.64s...'", desc->name);
    return gpu->invalid_value;
  }
  uint32_t abi_version = 0;
  int status = gpu->kernel_global(desc->host_stub, marker_name, &abi_version, sizeof abi_version);
  if (status != 0)
    return preempt_report_gpu(gpu, status, "looking up the preempt marker", desc->name);
  if (abi_version != 0 && abi_version != PREEMPT_KERNEL_ABI_VERSION) {
    preempt_report("kernel '%s' was converted for kernel ABI %u but this runtime speaks %u: rebuild it with the "
                   "matching libpreempt.so",
                   desc->name, abi_version, PREEMPT_KERNEL_ABI_VERSION);
    return gpu->not_supported;
  }
  on_device->converted = abi_version != 0;
  on_device->resolved = 1;
  return 0;
}

/* Before a converted kernel's first launch that may take a preemptible form:
 * the sizes of its parameters, which a relaunch needs, its forms, and its
 * unconverted copy, which one-wave launches run. */
static int resolve_forms(preempt_runtime *runtime, preempt_kernel_state *kernel, int device) {
  preempt_kernel_on_device *on_device = &kernel->on_device[device];
  if (on_device->forms_resolved)
    return 0;
  const preempt_kernel_desc *desc = kernel->desc;
  const preempt_gpu_ops *gpu = runtime->gpu;
  char persistent_name[NAME_CAPACITY], drain_name[NAME_CAPACITY], intask_name[NAME_CAPACITY],
      variant_name[NAME_CAPACITY], chunks_desc_name[NAME_CAPACITY], chunks_name[NAME_CAPACITY],
      warp_rows_name[NAME_CAPACITY];
  if (prefixed_name(persistent_name, PREEMPT_PERSISTENT_KERNEL_PREFIX, desc->name) ||
      prefixed_name(warp_rows_name, PREEMPT_WARP_ROWS_PREFIX, desc->name) ||
      prefixed_name(drain_name, PREEMPT_DRAIN_KERNEL_PREFIX, desc->name) ||
      prefixed_name(intask_name, PREEMPT_INTASK_DESC_PREFIX, desc->name) ||
      prefixed_name(variant_name, PREEMPT_INTASK_KERNEL_PREFIX, desc->name) ||
      prefixed_name(chunks_desc_name, PREEMPT_INTASK_CHUNKS_DESC_PREFIX, desc->name) ||
      prefixed_name(chunks_name, PREEMPT_INTASK_CHUNKS_KERNEL_PREFIX, desc->name)) {
    preempt_report("kernel name too long: '%.64s...'", desc->name);
    return gpu->invalid_value;
  }
  int status;
  /* The kernel's own parameters as the device compiled them: the host
   * stub's argument count (desc->param_count) counts a small struct the host
   * ABI splits as two, and read that many, a relaunch copied memory past the
   * application's argument array (CUB's kernels crashed or got none). */
  uint32_t param_count = 0;
  if ((status = gpu->kernel_param_sizes(desc->host_stub, 0, NULL, &param_count)) != 0)
    return preempt_report_gpu(gpu, status, "reading the parameter count", desc->name);
  if (param_count > PREEMPT_MAX_KERNEL_PARAMS - PREEMPT_KERNEL_EXTRA_PARAMS) {
    preempt_report("kernel '%s' has %u parameters, more than the %u supported", desc->name, param_count,
                   PREEMPT_MAX_KERNEL_PARAMS - PREEMPT_KERNEL_EXTRA_PARAMS);
    return gpu->invalid_value;
  }
  on_device->param_count = param_count;
  if (param_count > 0) {
    on_device->param_sizes = calloc(param_count, sizeof *on_device->param_sizes);
    if (!on_device->param_sizes) {
      preempt_report("out of host memory resolving kernel '%s'", desc->name);
      return gpu->out_of_memory;
    }
    uint32_t read = 0;
    status = gpu->kernel_param_sizes(desc->host_stub, param_count, on_device->param_sizes, &read);
    if (status == 0 && read != param_count)
      status = gpu->invalid_value;
    if (status != 0) {
      forget_params(on_device);
      return preempt_report_gpu(gpu, status, "reading the parameter sizes", desc->name);
    }
  }
  /* No copy or drain form (an older plugin made the kernel, the pass kept
   * none, or the API cannot look it up) only means that one-wave launches,
   * or all launches, stay persistent: not an error. A failed lookup is
   * said, once, and means the same. */
  on_device->original_function = NULL;
  on_device->persistent_function = NULL;
  on_device->drain_function = NULL;
  memset(&on_device->intask, 0, sizeof on_device->intask);
  on_device->intask_function = NULL;
  memset(&on_device->intask_chunks, 0, sizeof on_device->intask_chunks);
  on_device->intask_chunks_function = NULL;
  /* The persistent form, which every converted launch needs: a kernel
   * whose marker says converted but has none cannot be launched as
   * converted, and its own name may not be the kernel as written either. */
  status = gpu->original_kernel(desc->host_stub, persistent_name, &on_device->persistent_function);
  if (status == 0 && !on_device->persistent_function)
    status = gpu->not_supported;
  if (status != 0) {
    forget_params(on_device);
    on_device->persistent_function = NULL;
    return preempt_report_gpu(gpu, status, "looking up the persistent form (rebuild the kernel with the matching "
                              "libpreempt.so)", desc->name);
  }
  /* Absent (0) unless the pass made the forms for blocks of one row or of
   * rows of whole warps only; a failed lookup cannot tell, so the kernel
   * waits for its next launch to be resolved again. */
  status = gpu->kernel_global(desc->host_stub, warp_rows_name, &on_device->warp_rows, sizeof on_device->warp_rows);
  if (status != 0) {
    forget_params(on_device);
    return preempt_report_gpu(gpu, status, "looking up the block shapes the forms allow", desc->name);
  }
  /* In-task points (docs/intask.md): a descriptor of another ABI or with
   * more points than the runtime knows is refused, not guessed at. Left
   * unresolved, the kernel is resolved again at its next launch: its
   * parameter sizes go, or each attempt would leak them. */
  status = gpu->kernel_global(desc->host_stub, intask_name, &on_device->intask, sizeof on_device->intask);
  if (status == 0 && on_device->intask.point_count != 0 &&
      (on_device->intask.abi_version != PREEMPT_KERNEL_ABI_VERSION ||
       on_device->intask.point_count > PREEMPT_INTASK_MAX_POINTS)) {
    preempt_report("kernel '%s' has an in-task descriptor of ABI %u with %u points: rebuild it with the matching "
                   "libpreempt.so", desc->name, on_device->intask.abi_version, on_device->intask.point_count);
    status = gpu->not_supported;
  } else if (status != 0) {
    preempt_report_gpu(gpu, status, "looking up the in-task descriptor", desc->name);
  }
  if (status != 0) {
    forget_params(on_device);
    memset(&on_device->intask, 0, sizeof on_device->intask);
    return status;
  }
  if (on_device->intask.point_count != 0) {
    on_device->intask_function =
        look_up_copy(gpu, desc, variant_name, "looking up the in-task variant (evictions wait for task boundaries)");
    if (!on_device->intask_function)
      memset(&on_device->intask, 0, sizeof on_device->intask);
  }
  if (on_device->intask_function)
    resolve_chunks_variant(gpu, desc, on_device, chunks_desc_name, chunks_name);
  /* The kernel's own name: the kernel as written (control_block.h). */
  on_device->original_function =
      look_up_copy(gpu, desc, desc->name, "looking up the kernel as written (launches stay converted)");
  on_device->drain_function =
      look_up_copy(gpu, desc, drain_name, "looking up the drain form (launches stay persistent)");
  on_device->forms_resolved = 1;
  return 0;
}

/* A resolve step with the thread's capture mode relaxed. */
static int resolve_relaxed(preempt_runtime *runtime, preempt_kernel_state *kernel, int device,
                           int (*resolve)(preempt_runtime *, preempt_kernel_state *, int)) {
  const preempt_gpu_ops *gpu = runtime->gpu;
  int saved_mode = 0;
  int relaxed = gpu->capture_mode_relax && gpu->capture_mode_relax(&saved_mode) == 0;
  int status = resolve(runtime, kernel, device);
  if (relaxed)
    gpu->capture_mode_restore(saved_mode);
  return status;
}

/* The converted kernel's occupancy for this block size and dynamic shared
 * memory, and its in-task variant's; the last configuration's is kept, so a
 * kernel launched the same way again costs no query. A variant that holds
 * fewer CTAs per SM (its yield points' registers) is said once per
 * configuration: PREEMPT_INTASK=auto does not run it (intask.c). */
static int kernel_occupancy(const preempt_runtime *runtime, const preempt_kernel_desc *desc,
                            preempt_kernel_on_device *on_device, preempt_dim3 block, size_t shared_bytes) {
  const preempt_gpu_ops *gpu = runtime->gpu;
  uint32_t block_threads = block.x * block.y * block.z;
  if (on_device->cached_block_threads == block_threads && on_device->cached_shared_bytes == shared_bytes)
    return 0;
  /* The stub's own (the runtime API's query, which also binds the thread's
   * context for the driver's queries below) is the kernel as written's since
   * ABI 9; the persistent form's is asked of its function. */
  int status = gpu->occupancy(desc->host_stub, block_threads, shared_bytes, &on_device->original_ctas_per_sm);
  if (status == 0)
    status = gpu->function_occupancy(desc->host_stub, on_device->persistent_function, block_threads, shared_bytes,
                                     &on_device->ctas_per_sm);
  if (status != 0)
    return preempt_report_gpu(gpu, status, "querying occupancy", desc->name);
  on_device->intask_ctas_per_sm = 0;
  on_device->intask_chunks_ctas_per_sm = 0;
  if (on_device->intask_chunks_function && runtime->settings.intask != PREEMPT_INTASK_OFF &&
      (status = gpu->function_occupancy(desc->host_stub, on_device->intask_chunks_function, block_threads,
                                        shared_bytes, &on_device->intask_chunks_ctas_per_sm)) != 0)
    preempt_report_gpu(gpu, status, "querying the constant-chunk variant's occupancy (PREEMPT_INTASK=auto will not "
                       "run it)", desc->name);
  if (on_device->intask_function && runtime->settings.intask != PREEMPT_INTASK_OFF) {
    status = gpu->function_occupancy(desc->host_stub, on_device->intask_function, block_threads, shared_bytes,
                                     &on_device->intask_ctas_per_sm);
    if (status != 0)
      preempt_report_gpu(gpu, status, "querying the in-task variant's occupancy (PREEMPT_INTASK=auto will not run it)",
                         desc->name);
    else if (on_device->intask_ctas_per_sm < on_device->ctas_per_sm)
      preempt_report("kernel '%s': its in-task variant holds %u CTAs per SM against the kernel's %u at %u threads "
                     "per CTA (its yield points' registers): PREEMPT_INTASK=auto does not run it",
                     desc->name, on_device->intask_ctas_per_sm, on_device->ctas_per_sm, block_threads);
  }
  on_device->cached_block_threads = block_threads;
  on_device->cached_shared_bytes = shared_bytes;
  return 0;
}

/* A sampled launch's task length: its first wave's time (or its one
 * relaunch's) shared out over the tasks each persistent CTA ran. */
static void take_task_sample(preempt_kernel_on_device *on_device, const preempt_launch_record *sample,
                             float milliseconds) {
  if (sample->task_count == 0 || milliseconds <= 0)
    return;
  double per_task = milliseconds * 1e6 / sample->task_count;
  if (sample->shape_sample) {
    /* A variant that failed to launch left this one to the persistent form: it times neither shape. */
    if (sample->intask_enabled) {
      on_device->shape_ns_per_task[sample->intask_chunks] += per_task / PREEMPT_SHAPE_SAMPLES;
      on_device->shape_samples[sample->intask_chunks]++;
    }
    return;
  }
  if (sample->drained) {
    on_device->drain_ns_per_task += per_task / PREEMPT_DRAIN_SAMPLES;
    on_device->drain_samples++;
    return;
  }
  on_device->persistent_ns_per_task = per_task;
  on_device->task_nanoseconds = per_task * sample->full_ctas;
  on_device->task_samples++;
}

/* Makes `record` the kernel's sampled launch: its first wave is timed (or
 * its first relaunch: a held launch's first-wave timing has no grid in it,
 * and that relaunch runs the whole grid when nothing evicts it). */
static void start_sample(preempt_kernel_on_device *on_device, preempt_launch_record *record, uint32_t slot,
                         int held) {
  on_device->sampling = 1;
  on_device->sample_slot = slot;
  on_device->sample_generation = record->generation;
  record->time_first_relaunch = held;
}

/* A drained launch's first eviction lasts until every block not yet started
 * has passed its gate and left (docs/preemption.md, "Drain form"): on the
 * H200 about 0.85 us per wave of such blocks (preempt_bench at 963389f: the
 * first eviction of a 27.0 M-block launch at 1,056 resident CTAs took
 * 21.8 ms, of a 3.4 M-block launch 2.49 ms; later evictions of the same
 * launches, persistent relaunches by then: the 80 evictions' medians 44 and 189 us). */
#define DRAIN_SKIP_NS_PER_WAVE 850.0

/* Issue 42: where evictions are expected (PREEMPT_STRESS,
 * PREEMPT_EVICT_READY=1, or one was asked), `auto` drains only launches
 * whose blocks would all leave within PREEMPT_EVICT_BOUND_US; a larger grid
 * runs persistent, whose CTAs leave at their next check. Until then nothing
 * in the process evicts, and the faster form is taken. */
static int drain_leaves_in_time(const preempt_runtime *runtime, uint64_t task_count, uint32_t ctas) {
  const preempt_settings *settings = &runtime->settings;
  if (settings->evict_bound_us == 0 || ctas == 0)
    return 1;
  if (!preempt_evictions_expected(runtime))
    return 1;
  return (double)task_count / ctas * DRAIN_SKIP_NS_PER_WAVE <= settings->evict_bound_us * 1e3;
}

/* Which form a converted launch takes (docs/preemption.md, "Drain form").
 * Both are evictable; they differ in cost, which depends on the kernel: the
 * persistent form's task loop costs short blocks with barriers 10-20% on the
 * H100, while it balances load the hardware's block order does not (spmv_csr
 * ran in 0.64x the original's time). So, unless PREEMPT_FORM says which,
 * each kernel is timed in the persistent form first (its task length sets
 * the check interval, two samples; the second, at that interval, counts),
 * then twice in the drain form (one timing alone chose wrongly for one of
 * float_atomics' kernels on the H100 often enough to show in its median),
 * and later launches take whichever ran faster per task. The caller keeps
 * launches persistent under preemptd, whose held launches start through the
 * relaunch path. */
static int choose_drain(const preempt_runtime *runtime, const preempt_kernel_on_device *on_device,
                        uint32_t block_threads, uint32_t ctas, uint64_t task_count) {
  if (!on_device->drain_function || runtime->settings.form == PREEMPT_FORM_PERSISTENT)
    return 0;
  /* The drain form has no in-task points: where they would check, its
   * evictions would wait for whole blocks (docs/intask.md). */
  if (runtime->settings.form == PREEMPT_FORM_AUTO && preempt_intask_wanted(runtime, on_device, block_threads, ctas))
    return 0;
  if (runtime->settings.form == PREEMPT_FORM_DRAIN)
    return 1;
  if (!drain_leaves_in_time(runtime, task_count, ctas))
    return 0;
  if (on_device->task_samples < PREEMPT_TASK_SAMPLES)
    return 0;
  if (on_device->drain_samples < PREEMPT_DRAIN_SAMPLES)
    return !on_device->sampling; /* the next sample is a drained one */
  return on_device->drain_ns_per_task <= on_device->persistent_ns_per_task;
}

/* EffiSha §6.3's adaptive checking: a yield check every `period / task
 * length` tasks, once a sampled launch has measured the task length; every
 * task until then. An override (API or PREEMPT_CHECK_INTERVAL) wins. */
static uint32_t check_interval(preempt_runtime *runtime, preempt_kernel_state *kernel,
                               preempt_kernel_on_device *on_device, preempt_device_state *device) {
  if (kernel->check_interval_override)
    return kernel->check_interval_override;
  if (runtime->check_interval_env)
    return runtime->check_interval_env;
  const preempt_gpu_ops *gpu = runtime->gpu;
  if (on_device->sampling) {
    preempt_launch_record *sample = &device->control_pool.records[on_device->sample_slot];
    if (sample->generation != on_device->sample_generation) {
      on_device->sampling = 0; /* reused: the launch is long gone */
    } else if (sample->time_first_relaunch) {
      /* Held for preemptd: its one relaunch ran the whole grid. */
      float milliseconds = 0;
      if (sample->relaunches > 1) {
        on_device->sampling = 0;
      } else if (sample->relaunches == 1 && gpu->event_query(sample->resume_event) == 0) {
        if (gpu->event_elapsed_ms(sample->relaunch_start_event, sample->resume_event, &milliseconds) == 0)
          take_task_sample(on_device, sample, milliseconds);
        on_device->sampling = 0;
      }
    } else if (sample->resumed) {
      on_device->sampling = 0; /* evicted: the timing says nothing about tasks */
    } else if (gpu->event_query(sample->sample_end_event) == 0) {
      float milliseconds = 0;
      if (gpu->event_elapsed_ms(sample->sample_start_event, sample->sample_end_event, &milliseconds) == 0)
        take_task_sample(on_device, sample, milliseconds);
      on_device->sampling = 0;
    }
  }
  if (on_device->task_nanoseconds <= 0)
    return 1;
  double tasks = runtime->check_period_ns / on_device->task_nanoseconds;
  if (tasks < 1)
    return 1;
  return tasks > PREEMPT_MAX_CHECK_INTERVAL ? PREEMPT_MAX_CHECK_INTERVAL : (uint32_t)tasks;
}

/* Prompt yield checks (control_block.h, PREEMPT_LAUNCH_PROMPT): a CTA that reads its yield word one task ahead
 * and fetches its next batch as the last task of the current one starts leaves only after up to two more tasks
 * once a request lands: 156 us on the GPU's clock for 58 us tasks on the H200, 42 us with prompt checks
 * (bench/results/2026-11-30-h200-prompt-ab-f69da64/). Read as the batch is due, it waits for the task in flight
 * only, at the price of the read's and the fetch's round trips per batch (grid3d's short tasks: 1.026x), which a
 * process that never evicts should not pay (auto asks for it only where evictions are expected), nor a short task
 * (only where two tasks outlast the bound, PREEMPT_EVICT_BOUND_US: a batch is then one task). */
static int prompt_checks(const preempt_runtime *runtime, const preempt_kernel_on_device *on_device) {
  if (runtime->settings.prompt != PREEMPT_PROMPT_AUTO)
    return runtime->settings.prompt == PREEMPT_PROMPT_ON;
  double bound_ns = runtime->settings.evict_bound_us * 1e3;
  return bound_ns > 0 && preempt_evictions_expected(runtime) && 2 * on_device->task_nanoseconds > bound_ns;
}

/* Enqueues a launch's first wave in the drain form, on the application's
 * grid with its bitmap zeroed first. Returns whether it did: a drain form
 * that cannot be launched (gpu.h's launch_function) leaves the launch to the
 * persistent form, as a one-wave copy does. Context unlocked. */
static int launch_drained(const preempt_gpu_ops *gpu, const preempt_kernel_on_device *on_device,
                          preempt_launch_record *record, preempt_grid_dims grid, void *stream) {
  preempt_dim3 dims = {grid.x, grid.y, grid.z};
  return preempt_launch_record_reset_undone(gpu, record, stream) == 0 &&
         gpu->launch_function(record->desc->host_stub, on_device->drain_function, dims, record->block, record->params,
                              record->shared_bytes, stream) == 0;
}

/* The kernel's occupancy for this launch is known (kernel_occupancy). */
static int persistent_launch(preempt_runtime *runtime, preempt_kernel_state *kernel, int device_index,
                             preempt_device_state *device, preempt_grid_dims grid, preempt_dim3 block, void **args,
                             size_t shared_bytes, void *stream) {
  const preempt_gpu_ops *gpu = runtime->gpu;
  const preempt_kernel_desc *desc = kernel->desc;
  preempt_kernel_on_device *on_device = &kernel->on_device[device_index];
  uint64_t task_count = preempt_grid_task_count(grid);
  if (task_count > PREEMPT_MAX_TASKS) {
    preempt_report("kernel '%s': grid of %llu blocks exceeds the %u a preemptible launch supports", desc->name,
                   (unsigned long long)task_count, PREEMPT_MAX_TASKS);
    return gpu->invalid_configuration;
  }
  /* Occupancy 0 means the block cannot run at all: launch one CTA anyway so
   * the GPU API reports its own error for this configuration. */
  uint32_t ctas = preempt_persistent_cta_count(on_device->ctas_per_sm, device->sm_count, task_count);
  if (ctas == 0)
    ctas = 1;

  uint32_t slot;
  int status = preempt_control_pool_acquire(&device->control_pool, gpu, &slot);
  if (status == gpu->not_ready) {
    preempt_report("every control block belongs to an evicted launch that was never resumed: resume some "
                   "before launching kernel '%s'", desc->name);
    return status;
  }
  if (status != 0)
    return preempt_report_gpu(gpu, status, "waiting for a free control block", desc->name);
  preempt_launch_record *record = &device->control_pool.records[slot];
  if (preempt_launch_record_store_params(record, on_device->param_count, on_device->param_sizes, args) != 0) {
    preempt_report("out of host memory launching kernel '%s'", desc->name);
    return gpu->out_of_memory;
  }
  uint32_t interval = check_interval(runtime, kernel, on_device, device);
  record->generation = preempt_next_generation(record->generation);
  record->desc = desc;
  record->stream = stream;
  record->resume_after = 0;
  record->stream_priority = 0;
  if (gpu->stream_priority)
    gpu->stream_priority(stream, &record->stream_priority); /* a failed query leaves 0, CUDA's default */
  if (record->stream_priority > runtime->max_stream_priority)
    runtime->max_stream_priority = record->stream_priority;
  record->block = block;
  record->shared_bytes = shared_bytes;
  record->ctas_per_sm = on_device->ctas_per_sm;
  record->full_ctas = ctas;
  record->task_count = (uint32_t)task_count;
  record->grid[0] = grid.x;
  record->grid[1] = grid.y;
  record->grid[2] = grid.z;
  record->check_interval = interval;
  record->prompt = prompt_checks(runtime, on_device);
  record->relaunched = record->prompt ? PREEMPT_LAUNCH_PROMPT : 0;
  memset(record->yield_mask, 0, sizeof record->yield_mask);
  record->resumed = 0;
  record->evict_request_recorded = 0;
  record->daemon_stub = 0;
  record->daemon_evicted = 0;
  record->held_unstarted = 0;
  record->go_held = 0;
  record->relaunch_after_clear = 0;
  record->time_first_relaunch = 0;
  record->relaunches = 0;
  record->drain_held = 0;
  record->drained = 0;
  record->cta_quota = 0;
  record->quota_shrinking = 0;
  record->quota_first_wave = 0;
  record->quota_refresh = 0;
  record->intask_enabled = 0;
  record->intask_evicted = 0;
  record->intask_function = NULL;
  record->persistent_function = on_device->persistent_function;
  record->intask_chunks = 0;
  record->shape_sample = 0;

  /* Under preemptd the launch is held: everything but its grid is enqueued,
   * and the daemon starts it later through the resume path (docs/daemon.md). */
  uint32_t epoch = 0;
  int stub = -1;
  int scheduled = preempt_daemon_active(runtime);
  if (scheduled)
    stub = preempt_daemon_hold(runtime, device_index, device, stream, block, on_device->ctas_per_sm, &epoch);
  /* On a lease nobody else has work on the GPU: the grid starts now and the
   * stub says RUNNING, so the daemon can still evict it (docs/daemon.md, "Leases"). */
  int started = stub >= 0 && preempt_daemon_may_start(runtime, device_index, stub);
  int held = stub >= 0 && !started;
  /* A held launch's grid waits in its own stream for a store to its go word: its first run needs no relaunch on
   * another stream, which under MPS's few hardware queues could sit behind this very stream's wait (the EffiSha
   * mix stalled so, bench/results/2026-11-29-h200-mps-mix-stall-d8d00a3). Where the API has no such memory, or
   * it cannot be had, the first run is a relaunch as before. */
  int go = held && preempt_control_pool_go_words(&device->control_pool, gpu) == 0;
  int runs_in_stream = !held || go;
  int drain = !scheduled && choose_drain(runtime, on_device, block.x * block.y * block.z, ctas, task_count);
  int sample = !on_device->sampling && (drain ? on_device->drain_samples < PREEMPT_DRAIN_SAMPLES
                                              : on_device->task_samples < PREEMPT_TASK_SAMPLES);
  if (sample)
    start_sample(on_device, record, slot, held && !go);
  if (drain && (status = preempt_launch_record_grow_undone(&device->control_pool, gpu, record,
                                                           (uint32_t)task_count)) != 0) {
    preempt_report_gpu(gpu, status, "allocating the drain form's bitmap (this launch runs persistent)", desc->name);
    drain = 0;
  }
  /* In-task points: the period and context ring, on the stream ahead of the grid. */
  int shape_timed = 0;
  if (!drain && (status = preempt_intask_prepare(runtime, device, on_device, record, stream, &shape_timed)) != 0) {
    if (sample)
      on_device->sampling = 0;
    if (held)
      preempt_daemon_unhold(runtime, stub, epoch);
    return preempt_report_gpu(gpu, status, "preparing the launch's in-task contexts", desc->name);
  }
  /* Timed for the in-task shape instead, once the task samples are in. */
  if (!sample && shape_timed) {
    sample = 1;
    record->shape_sample = 1;
    start_sample(on_device, record, slot, held && !go);
  }
  /* Enqueue with the context unlocked: a launch call can block while the
   * GPU's queue is full, and the queue may drain only once another thread
   * (the stress thread, or the application's) resumes an evicted launch. */
  record->launching = 1;
  preempt_runtime_unlock(runtime);
  const char *failed = NULL;
  preempt_dim3 persistent_grid = {ctas, 1, 1};
  preempt_control_block *control = record->control;
  int launched = 0, waiting = 0, go_waits = 0;
  /* Only the sampled launch pays for timed events (control_pool.h). */
  int time_wave = sample && runs_in_stream;
  if ((status = gpu->event_record(record->ready_event, stream)) != 0) {
    failed = "recording the launch's start";
  } else if (go && (go_waits = 1, status = gpu->stream_wait_u32(
                                   stream, preempt_go_word_device(&device->control_pool, record), record->generation)) !=
                        0) {
    failed = "holding the launch in its stream for preemptd";
  } else if (time_wave && (status = gpu->event_record(record->sample_start_event, stream)) != 0) {
    failed = "recording the launch's start";
  } else if (runs_in_stream && !(record->drained = drain && launch_drained(gpu, on_device, record, grid, stream)) &&
             (status = preempt_intask_launch(gpu, record, persistent_grid, stream, 1)) != 0) {
    failed = "launching the persistent grid";
  } else if ((launched = runs_in_stream, status = gpu->event_record(record->wave_done_event, stream)) != 0 ||
             (time_wave && (status = gpu->event_record(record->sample_end_event, stream)) != 0)) {
    failed = "recording the launch's first wave";
  } else if ((status = record->drained ? gpu->stream_wait_u32(stream, &control->drain_hold, 0)
                                       : gpu->stream_wait_u32(stream, &control->done_generation, record->generation)) !=
             0) {
    /* Stream order: the application's later work waits until every task is
     * done, however often the launch is evicted and resumed (docs/preemption.md, "Stream order"). A
     * drained launch's stream waits only while an eviction holds it: its
     * first wave publishes nothing, and its relaunches' publisher clears
     * drain_hold once every block has run (control_block.h). */
    failed = "ordering the stream after the launch";
  } else if ((waiting = 1, status = gpu->event_record(record->done_event, stream)) != 0) {
    failed = "recording the launch's completion";
  }
  runtime = preempt_runtime_lock(); /* the same context, locked again */
  record->launching = 0;
  /* A held launch whose stream already waits for it must run some day, or
   * the stream never moves on: it is in flight as if evicted from every SM
   * (not yet resumed), which keeps its control block and counts its stream
   * as held. */
  int must_run = held && waiting;
  if (must_run) {
    memset(record->yield_mask, 0xff, sizeof record->yield_mask);
    record->held_unstarted = 1;
    record->go_held = go;
  } else if (go_waits) {
    /* A later step failed: nobody would ever store the word its stream may already wait for. */
    preempt_go_word_release(&device->control_pool, record);
  }
  /* Once the grid is launched it runs: keep it in flight so that its
   * control block is not reused under it, even if a later step failed. */
  record->in_flight = launched || must_run;
  if (record->in_flight)
    __atomic_add_fetch(&preempt_tracked_launches, 1, __ATOMIC_RELEASE); /* sync_copies_cuda.c */
  record->unordered = failed && (launched || must_run);
  if (record->unordered)
    gpu->event_record(record->done_event, stream); /* best effort: "done" = the first wave ended */
  if (stub >= 0 && (failed || preempt_daemon_publish(runtime, stub, epoch, device_index, slot, record, started) != 0)) {
    if (failed)
      preempt_daemon_unhold(runtime, stub, epoch);
    /* Not under the daemon after all: it runs now, unscheduled. */
    if (must_run)
      preempt_resume_record(runtime, device, record);
  }
  if (failed) {
    if (sample && !launched)
      on_device->sampling = 0;
    return preempt_report_gpu(gpu, status, failed, desc->name);
  }
  on_device->last_persistent_ctas = ctas;
  on_device->last_check_interval = interval;
  on_device->launches++;
  on_device->drain_launches += record->drained;
  on_device->prompt_launches += record->prompt && !record->drained;
  on_device->intask_chunks_launches += record->intask_chunks;
  last_launch = preempt_launch_id_make(device_index, slot, record->generation);
  return 0;
}

/* A launch whose whole grid fits in one wave of persistent CTAs gains
 * nothing from conversion: every CTA would run exactly one task, and once it
 * has started there is no task boundary at which it could yield. Such a
 * launch runs the kernel's unconverted copy, as written: the application's
 * grid, arguments and stream, and no control block, events or stream wait
 * (launch_storm's 6,000 such launches took well over twice as long
 * converted on the H100: docs/persistent-threads.md). It is not tracked:
 * preempt_last_launch() says 0, and eviction cannot reach it. Not under
 * preemptd without a lease (docs/daemon.md, "Leases"), which must hold and
 * schedule every converted launch, nor with
 * PREEMPT_ONE_WAVE=persistent, nor without a copy. The kernel's occupancy
 * for this launch is known (kernel_occupancy). Returns whether it ran: a
 * failed launch of the copy falls back to the persistent form, which runs,
 * or reports the API's error as it reports any launch's (gpu.h). */
static int one_wave_launch(preempt_runtime *runtime, preempt_kernel_state *kernel, int device_index,
                           const preempt_device_state *device, preempt_grid_dims grid, preempt_dim3 block, void **args,
                           size_t shared_bytes, void *stream) {
  preempt_kernel_on_device *on_device = &kernel->on_device[device_index];
  if (runtime->settings.one_wave_persistent || !on_device->original_function ||
      preempt_daemon_schedules(runtime, device_index))
    return 0;
  /* With in-task points a one-wave launch can still be evicted inside its
   * tasks (a persistent-style kernel's only way): under PREEMPT_INTASK=on it
   * stays persistent. (Under preemptd, above, it is anyway; auto checks
   * nowhere else: run persistent with checks, nbody and matmul_tiled took
   * 1.14x and 1.11x the original on the H100.) */
  if (on_device->intask.point_count && runtime->settings.intask == PREEMPT_INTASK_ON)
    return 0;
  /* The persistent grid would be the whole grid: task count <= CTAs per SM x
   * SMs (never at occupancy 0, a block that cannot run: the persistent path
   * lets the API say why). */
  uint64_t task_count = preempt_grid_task_count(grid);
  if (preempt_persistent_cta_count(on_device->ctas_per_sm, device->sm_count, task_count) != task_count)
    return 0;
  preempt_dim3 dims = {grid.x, grid.y, grid.z};
  if (runtime->gpu->launch_function(kernel->desc->host_stub, on_device->original_function, dims, block, args,
                                    shared_bytes, stream) != 0)
    return 0;
  on_device->one_wave_launches++;
  on_device->launches++;
  return 1;
}

int preempt_launch_kernel(preempt_kernel_desc *desc, preempt_dim3 grid, preempt_dim3 block, void **args,
                          size_t dynamic_shared_bytes, void *stream) {
  preempt_runtime *runtime = preempt_runtime_lock();
  const preempt_gpu_ops *gpu = runtime->gpu;
  int status = 0;
  last_launch = 0;
  if (!desc || desc->desc_version != PREEMPT_KERNEL_DESC_VERSION || !desc->host_stub || !desc->name) {
    preempt_report("launch with an invalid kernel descriptor (built by another libpreempt.so version?)");
    status = gpu->invalid_value;
    goto done;
  }
  int device;
  status = preempt_current_device(runtime, &device);
  if (status != 0) {
    preempt_report_gpu(gpu, status, "finding the current device", desc->name);
    goto done;
  }
  if (device < 0 || device >= PREEMPT_MAX_DEVICES) {
    preempt_report("device %d is beyond the %d the runtime supports", device, PREEMPT_MAX_DEVICES);
    status = gpu->invalid_value;
    goto done;
  }
  preempt_kernel_state *kernel = kernel_state(runtime, desc);
  if (!kernel) {
    preempt_report("out of host memory launching kernel '%s'", desc->name);
    status = gpu->out_of_memory;
    goto done;
  }
  /* Once per kernel and device: the lookups read device memory, which a
   * stream capture in CUDA's global mode forbids to every thread that has
   * not relaxed its own mode. */
  if (!kernel->on_device[device].resolved && (status = resolve_relaxed(runtime, kernel, device, resolve_marker)) != 0)
    goto done;
  preempt_grid_dims original = {grid.x, grid.y, grid.z};
  /* An unconverted kernel, or an empty grid that the API must reject itself:
   * the launch goes through exactly as written. */
  if (!kernel->on_device[device].converted || preempt_grid_task_count(original) == 0) {
    status = gpu->launch(desc->host_stub, grid, block, args, dynamic_shared_bytes, stream);
    if (status == 0)
      kernel->on_device[device].launches++;
    goto done;
  }
  /* A process that cannot evict: as written, with the context unlocked by
   * the call, and no form of the kernel ever looked up (loaded). */
  if (preempt_cannot_evict(runtime))
    return preempt_unevictable_launch(runtime, kernel, device, grid, block, args, dynamic_shared_bytes, stream);
  if (preempt_stream_capturing(gpu, stream)) {
    status = preempt_capture_launch(runtime, kernel, device, grid, block, args, dynamic_shared_bytes, stream);
    goto done;
  }
  if (!kernel->on_device[device].forms_resolved &&
      (status = resolve_relaxed(runtime, kernel, device, resolve_forms)) != 0)
    goto done;
  /* Under PREEMPT_STRESS a program of short launches only still gets its
   * report at exit, which says they ran as written (stress.c). */
  preempt_stress_start_if_requested(runtime);
  uint32_t sm_count;
  preempt_kernel_on_device *sized = &kernel->on_device[device];
  /* Forms safe only where threadIdx.x cut at warp boundaries cuts warps
   * (passes/KernelSafety.cpp, the warp-sync rule): in a block of several
   * rows that are not whole warps, a warp spans rows, and the lanes the
   * kernel as written lets exit would wait in the task loop. Decided by the
   * block's shape alone, before any occupancy query. */
  if (sized->warp_rows && block.x % 32 != 0 && (block.y > 1 || block.z > 1)) {
    say_once(&sized->warp_rows_reported,
             "kernel '%s': its converted forms need blocks of one row of threads or of rows of whole warps; "
             "launches of %ux%ux%u threads run as written, not evictable",
             desc->name, block.x, block.y, block.z);
    return preempt_unevictable_launch(runtime, kernel, device, grid, block, args, dynamic_shared_bytes, stream);
  }
  if ((status = preempt_device_sm_count(runtime, device, &sm_count)) != 0 ||
      (status = kernel_occupancy(runtime, desc, sized, block, dynamic_shared_bytes)) != 0)
    goto done;
  /* A form that holds no CTA of this launch's shape while the kernel as
   * written does (its dynamic shared memory does not fit beside the form's
   * own static shared memory, the task context: gpu_cuda.c; or the form's
   * registers): the launch runs as written, not evictable, and says so once
   * per kernel, rather than failing. */
  if (sized->ctas_per_sm == 0 && sized->original_ctas_per_sm > 0) {
    say_once(&sized->no_room_reported,
             "kernel '%s': its converted form holds no CTA of %u threads with %zu bytes of dynamic shared memory, "
             "the kernel as written does: such launches run as written, not evictable",
             desc->name, block.x * block.y * block.z, dynamic_shared_bytes);
    return preempt_unevictable_launch(runtime, kernel, device, grid, block, args, dynamic_shared_bytes, stream);
  }
  /* Stream priorities kept (priority.c): room made on lower-priority persistent grids first. */
  int made_room = preempt_priority_make_room(runtime, device, stream, preempt_grid_task_count(original));
  /* A launch runs as written unless it is long enough to need eviction
   * (docs/preemption.md, "Launches as written"): no control block, event or
   * stream wait, and the device's pool is not even set up. */
  if ((status = preempt_short_launch(runtime, kernel, device, sm_count, grid, block, args, dynamic_shared_bytes,
                                     stream)) >= 0)
    goto launched;
  status = 0;
  preempt_device_state *device_state = NULL;
  status = preempt_device_state_get(runtime, device, &device_state);
  if (status != 0)
    goto launched;
  if (!one_wave_launch(runtime, kernel, device, device_state, original, block, args, dynamic_shared_bytes, stream))
    status = persistent_launch(runtime, kernel, device, device_state, original, block, args, dynamic_shared_bytes,
                               stream);
launched:
  if (made_room) {
    preempt_evict_step_mark(runtime, PREEMPT_EVICT_STEP_LAUNCH);
    preempt_priority_after_launch(runtime, device, stream, status == 0);
    preempt_evict_step_mark(runtime, PREEMPT_EVICT_STEP_AFTER);
    preempt_evict_steps_end(runtime);
  }
done:
  preempt_runtime_unlock(runtime);
  return status;
}

preempt_status preempt_get_kernel_info(preempt_kernel_desc *desc, preempt_kernel_info *info) {
  if (!desc || !info)
    return PREEMPT_ERROR_INVALID_ARGUMENT;
  preempt_runtime *runtime = preempt_runtime_lock();
  preempt_status result = PREEMPT_OK;
  int device;
  preempt_kernel_state *kernel = desc->runtime_state;
  if (runtime->gpu->current_device(&device) != 0 || device < 0 || device >= PREEMPT_MAX_DEVICES) {
    result = PREEMPT_ERROR_GPU;
  } else if (!kernel || !kernel->on_device[device].resolved) {
    result = PREEMPT_ERROR_INVALID_ARGUMENT; /* never launched on this device */
  } else {
    const preempt_kernel_on_device *on_device = &kernel->on_device[device];
    memset(info, 0, sizeof *info);
    info->converted = on_device->converted;
    info->ctas_per_sm = on_device->ctas_per_sm;
    info->sm_count = runtime->devices[device].sm_count;
    info->last_persistent_ctas = on_device->last_persistent_ctas;
    info->launches = on_device->launches;
    info->one_wave_launches = on_device->one_wave_launches;
    info->short_launches = on_device->short_launches;
    info->capture_launches = on_device->capture_launches;
    info->unevictable_launches = on_device->unevictable_launches;
    info->drain_launches = on_device->drain_launches;
    info->prompt_launches = on_device->prompt_launches;
    info->intask_chunks_launches = on_device->intask_chunks_launches;
    info->intask_shape = (int)preempt_intask_chosen_shape(runtime, on_device); /* 0, 1, 2 as preempt.h says */
    info->check_interval = on_device->last_check_interval;
    info->task_microseconds = on_device->task_nanoseconds / 1000.0;
  }
  preempt_runtime_unlock(runtime);
  return result;
}

preempt_status preempt_set_check_interval(const void *kernel, uint32_t tasks) {
  if (!kernel)
    return PREEMPT_ERROR_INVALID_ARGUMENT;
  preempt_runtime *runtime = preempt_runtime_lock();
  preempt_status result = PREEMPT_ERROR_INVALID_ARGUMENT;
  for (preempt_kernel_state *state = runtime->kernels; state; state = state->next)
    if (state->desc->host_stub == kernel) {
      state->check_interval_override = tasks;
      result = PREEMPT_OK;
    }
  if (result != PREEMPT_OK)
    preempt_report("preempt_set_check_interval: kernel %p has not been launched through preempt yet", kernel);
  preempt_runtime_unlock(runtime);
  return result;
}
