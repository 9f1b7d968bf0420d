/* kernel_times.c: a CUPTI injection library (CUDA_INJECTION64_PATH) that records every kernel's
 * GPU time through CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL and writes, at exit, one line per kernel
 * name: name<TAB>launches<TAB>total_ns<TAB>max_ns<TAB>blocks (the grid of its longest launch), to the file named by CORPUS_KTIME_FILE (appended,
 * so a program that starts CUDA in several processes adds one block per process), and a line
 * #first_launch_ns<TAB>T<TAB>0<TAB>0<TAB>0: the CLOCK_MONOTONIC time of the process's first kernel or graph launch
 * call (runtime or driver API), from which runner.py takes a build's start-up (spawn to first launch; issue 39's
 * "process start" goal, measured alike in both builds); #first_launch_done_ns when such a call first returned; and
 * #cuda_init_ns when CUDA initialised in the process (it loads this library then, inside the process's first CUDA
 * call): start-up splits there into the program's own host code before its first CUDA call, and CUDA's part.
 * With CORPUS_API_CENSUS=1 it also counts every runtime and driver API call by name, in all and up to the first
 * launch call (that call included), one line each: #api<TAB>r:NAME or d:NAME<TAB>calls<TAB>calls before the first launch<TAB>0 (what a
 * build asks of CUDA that the other does not; issue 39, "ask CUDA for nothing the original would not"). Every
 * callback costs time, so a census run is never a timing run.
 * Part of bench/corpus (run.sh); built by bench/corpus's build script against the CUPTI headers. */
#include <cupti.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BUF_SIZE (8u << 20)
#define TABLE_SIZE 4096u

struct entry {
  char *name;
  uint64_t count, total_ns, max_ns, max_blocks;
};
static struct entry table[TABLE_SIZE];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t dropped;
static int initialized, written;
static uint64_t first_launch_ns; /* CLOCK_MONOTONIC; 0 until the first launch call */
static uint64_t first_launch_done_ns; /* CLOCK_MONOTONIC; 0 until a launch call has returned */
static uint64_t cuda_init_ns; /* CLOCK_MONOTONIC of InitializeInjection: CUDA starting in this process */
static int census; /* CORPUS_API_CENSUS=1 */
/* Calls per callback id: [0] in all, [1] before the first launch call's entry. */
static uint64_t runtime_calls[CUPTI_RUNTIME_TRACE_CBID_SIZE][2];
static uint64_t driver_calls[CUPTI_DRIVER_TRACE_CBID_SIZE][2];

static uint64_t monotonic_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static uint64_t hash(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static void add(const char *name, uint64_t ns, uint64_t blocks) {
  if (!name) name = "?";
  pthread_mutex_lock(&lock);
  uint64_t h = hash(name);
  for (unsigned i = 0; i < TABLE_SIZE; i++) {
    struct entry *e = &table[(h + i) % TABLE_SIZE];
    if (!e->name) e->name = strdup(name);
    if (strcmp(e->name, name) == 0) {
      e->count++;
      e->total_ns += ns;
      if (ns >= e->max_ns) {
        e->max_ns = ns;
        e->max_blocks = blocks;
      }
      pthread_mutex_unlock(&lock);
      return;
    }
  }
  dropped++;
  pthread_mutex_unlock(&lock);
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
  *buffer = aligned_alloc(8, BUF_SIZE);
  *size = *buffer ? BUF_SIZE : 0;
  *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                      size_t valid) {
  (void)ctx;
  (void)stream;
  (void)size;
  CUpti_Activity *record = NULL;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || record->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      CUpti_ActivityKernel10 *k = (CUpti_ActivityKernel10 *)record;
      add(k->name, k->end > k->start ? k->end - k->start : 0,
          (uint64_t)k->gridX * (uint64_t)k->gridY * (uint64_t)k->gridZ);
    }
  }
  size_t lost = 0;
  if (cuptiActivityGetNumDroppedRecords(ctx, stream, &lost) == CUPTI_SUCCESS && lost) {
    pthread_mutex_lock(&lock);
    dropped += lost;
    pthread_mutex_unlock(&lock);
  }
  free(buffer);
}

static void write_table(void) {
  if (written) return;
  written = 1;
  cuptiActivityFlushAll(1);
  const char *path = getenv("CORPUS_KTIME_FILE");
  FILE *f = path && *path ? fopen(path, "a") : stderr;
  if (!f) return;
  pthread_mutex_lock(&lock);
  for (unsigned i = 0; i < TABLE_SIZE; i++)
    if (table[i].name)
      fprintf(f, "%s\t%llu\t%llu\t%llu\t%llu\n", table[i].name, (unsigned long long)table[i].count,
              (unsigned long long)table[i].total_ns, (unsigned long long)table[i].max_ns,
              (unsigned long long)table[i].max_blocks);
  uint64_t first = __atomic_load_n(&first_launch_ns, __ATOMIC_ACQUIRE);
  if (first) fprintf(f, "#first_launch_ns\t%llu\t0\t0\t0\n", (unsigned long long)first);
  uint64_t done = __atomic_load_n(&first_launch_done_ns, __ATOMIC_ACQUIRE);
  if (done) fprintf(f, "#first_launch_done_ns\t%llu\t0\t0\t0\n", (unsigned long long)done);
  if (cuda_init_ns) fprintf(f, "#cuda_init_ns\t%llu\t0\t0\t0\n", (unsigned long long)cuda_init_ns);
  for (int domain = 0; census && domain < 2; domain++) {
    uint64_t(*calls)[2] = domain ? driver_calls : runtime_calls;
    uint32_t size = domain ? CUPTI_DRIVER_TRACE_CBID_SIZE : CUPTI_RUNTIME_TRACE_CBID_SIZE;
    for (uint32_t cbid = 0; cbid < size; cbid++) {
      const char *name = NULL;
      if (!calls[cbid][0] ||
          cuptiGetCallbackName(domain ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &name) !=
              CUPTI_SUCCESS || !name)
        continue;
      fprintf(f, "#api\t%c:%s\t%llu\t%llu\t0\n", domain ? 'd' : 'r', name, (unsigned long long)calls[cbid][0],
              (unsigned long long)calls[cbid][1]);
    }
  }
  if (dropped) fprintf(f, "#dropped\t%llu\t0\t0\t0\n", (unsigned long long)dropped);
  fprintf(f, "#end\t0\t0\t0\t0\n");
  pthread_mutex_unlock(&lock);
  if (f != stderr) fclose(f);
}

/* The launch calls whose first entry marks the end of start-up: the runtime's and the driver's (the plugin's
 * runtime launches through either), stream-ordered spellings included. */
static const CUpti_CallbackId runtime_launches[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,       CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,   CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,       CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000};
static const CUpti_CallbackId driver_launches[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,   CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz};

static int is_launch(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  const CUpti_CallbackId *ids = domain == CUPTI_CB_DOMAIN_DRIVER_API ? driver_launches : runtime_launches;
  size_t count = domain == CUPTI_CB_DOMAIN_DRIVER_API ? sizeof driver_launches / sizeof *driver_launches
                                                      : sizeof runtime_launches / sizeof *runtime_launches;
  for (size_t i = 0; i < count; i++)
    if (ids[i] == cbid)
      return 1;
  return 0;
}

/* Records still buffered when a context goes away (cudaDeviceReset) are flushed first. The first launch call's
 * entry sets first_launch_ns, the first return first_launch_done_ns; later ones cost a load and a compare. The
 * entry alone is not start-up: under lazy loading the original loads its first kernel inside the launch call, while
 * the plugin's runtime has looked the kernel up (and so loaded it) before calling. */
static void CUPTIAPI on_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void *data) {
  (void)userdata;
  if (domain == CUPTI_CB_DOMAIN_RESOURCE && cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
    cuptiActivityFlushAll(0);
    return;
  }
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API)
    return;
  int entry = ((const CUpti_CallbackData *)data)->callbackSite == CUPTI_API_ENTER;
  if (census) {
    int driver = domain == CUPTI_CB_DOMAIN_DRIVER_API;
    if (entry && cbid < (driver ? CUPTI_DRIVER_TRACE_CBID_SIZE : CUPTI_RUNTIME_TRACE_CBID_SIZE)) {
      uint64_t *calls = driver ? driver_calls[cbid] : runtime_calls[cbid];
      __atomic_add_fetch(&calls[0], 1, __ATOMIC_RELAXED);
      if (!__atomic_load_n(&first_launch_ns, __ATOMIC_RELAXED))
        __atomic_add_fetch(&calls[1], 1, __ATOMIC_RELAXED);
    }
    if (!is_launch(domain, cbid))
      return;
  }
  uint64_t *stamp = entry ? &first_launch_ns : &first_launch_done_ns;
  if (!__atomic_load_n(stamp, __ATOMIC_RELAXED)) {
    uint64_t expected = 0;
    __atomic_compare_exchange_n(stamp, &expected, monotonic_ns(), 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
  }
}

int InitializeInjection(void) {
  if (initialized) return 1;
  initialized = 1;
  cuda_init_ns = monotonic_ns();
  CUpti_SubscriberHandle subscriber;
  const char *census_setting = getenv("CORPUS_API_CENSUS");
  census = census_setting && strcmp(census_setting, "1") == 0;
  if (cuptiSubscribe(&subscriber, (CUpti_CallbackFunc)on_callback, NULL) == CUPTI_SUCCESS) {
    cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
    if (census) {
      cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API);
      cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
    }
    for (size_t i = 0; i < sizeof runtime_launches / sizeof *runtime_launches; i++)
      cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, runtime_launches[i]);
    for (size_t i = 0; i < sizeof driver_launches / sizeof *driver_launches; i++)
      cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, driver_launches[i]);
  }
  if (cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS) return 0;
  if (cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) return 0;
  atexit(write_table);
  return 1;
}
