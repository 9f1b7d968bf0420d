/* leases.c: which clients may start launches without asking the daemon: each one alone with work on a GPU.
 * FLEP §3 and EffiSha §7 schedule kernels that compete; with nobody competing every policy runs a launch at once. */
#include "preemptd.h"

/* The daemon GPUs (bit per index) where a client has work: one of its stubs holds a launch there, scheduled or
 * started on a lease and being sent away (stub_scan.c). One pass over its stubs: this runs at every wake-up. */
static uint32_t gpus_with_work(const preemptd_client *client) {
  _Static_assert(PREEMPTD_MAX_GPUS <= 32, "a GPU mask is 32 bits");
  uint32_t gpus = 0;
  for (uint32_t s = 0; s < PREEMPT_STUBS_PER_CLIENT; s++) {
    const preemptd_stub_record *record = &client->stubs[s];
    if (record->kernel_id != 0 || record->unscheduled)
      gpus |= 1u << record->gpu;
  }
  return gpus;
}

static bool leasable(const preemptd_client *client) {
  return client->fd >= 0 && client->registered && !client->broken && client->page;
}

void preemptd_update_leases(preemptd_context *ctx) {
  /* Per GPU: how many clients have work there, and which one when it is one. */
  uint32_t busy_clients[PREEMPTD_MAX_GPUS] = {0}, only_client[PREEMPTD_MAX_GPUS] = {0};
  for (uint32_t c = 0; c < PREEMPTD_MAX_CONNECTIONS; c++) {
    const preemptd_client *client = &ctx->clients[c];
    if (!leasable(client))
      continue;
    uint32_t gpus = gpus_with_work(client);
    for (uint32_t gpu = 0; gpus != 0; gpu++, gpus >>= 1)
      if (gpus & 1u) {
        busy_clients[gpu]++;
        only_client[gpu] = client->id;
      }
  }
  for (uint32_t c = 0; c < PREEMPTD_MAX_CONNECTIONS; c++) {
    preemptd_client *client = &ctx->clients[c];
    if (!leasable(client))
      continue;
    uint32_t lease = 0;
    /* The word has a bit per client GPU index: GPUs past the 32nd are never leased (their launches are held). */
    for (uint32_t i = 0; i < client->gpu_count && i < 32 && ctx->leases; i++) {
      uint32_t gpu = client->gpus[i];
      if (busy_clients[gpu] == 0 || (busy_clients[gpu] == 1 && only_client[gpu] == client->id))
        lease |= 1u << i;
    }
    if (lease == client->lease)
      continue;
    client->lease = lease;
    __atomic_store_n(&client->page->lease, lease, __ATOMIC_RELEASE);
    preemptd_log(ctx, "lease client=%u gpus=0x%x", client->id, lease);
  }
}

bool preemptd_client_leased(const preemptd_client *client, uint32_t client_gpu) {
  return client_gpu < 32 && (client->lease >> client_gpu) & 1u;
}
