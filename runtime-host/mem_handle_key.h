/* mem_handle_key.h: how a physical allocation's handle (cuMemCreate, hipMemCreate) is keyed in the allocation table.
 * schedGPU §4: post-free finds what an allocation was admitted by its key; handles must not pass for addresses.
 *
 * The table (mem_admission.c) keys device allocations by their address, and post-free looks up what the freed
 * key was admitted. A handle of virtual memory management is not an address: its value is the driver's to choose,
 * and nothing keeps it from equalling the address of a live allocation of the same process. Were the two keyed
 * alike, the handle's release would give back the other allocation's bytes and leave its own reserved. So handle
 * keys carry a tag: bit 63 set. Device addresses (CUDA's unified addresses, HIP's) are user-space virtual
 * addresses, below 2^57 on every Linux either runs on, so no address key has bit 63 set and no handle key can equal
 * one; and the tag is a bijection on the handles it accepts, so two handles never share a key. */
#ifndef PREEMPT_MEM_HANDLE_KEY_H
#define PREEMPT_MEM_HANDLE_KEY_H

#include <stdint.h>
#include <stdio.h>

#define PREEMPT_MEM_HANDLE_KEY_TAG (1ull << 63)

/* The key of `handle`: 0 and *key set, or -1 for a handle with bit 63 set (its key would lose that bit) or for
 * 2^63 - 1 (its key would be the table's deleted mark, UINT64_MAX); such a handle is not admitted at all. */
static inline int preempt_mem_handle_key(uint64_t handle, uint64_t *key) {
  if (handle >= PREEMPT_MEM_HANDLE_KEY_TAG - 1)
    return -1;
  *key = handle | PREEMPT_MEM_HANDLE_KEY_TAG;
  return 0;
}

/* After an allocation whose handle has no key: says so, once per wrapper file. The wrappers then report its
 * actual size as 0, which gives its admission back (preempt_mem_adjust), and nothing is recorded: a handle no key
 * can tell apart is not admitted rather than admitted under an address's key. (Drawn from a declared budget, its
 * bytes stay drawn until exit: budgets are not adjusted.) No driver is known to return such a handle. */
static inline void preempt_mem_say_unkeyable_handle(const char *api, uint64_t handle) {
  static int said;
  if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
    fprintf(stderr, "preempt: %s returned handle 0x%llx, which the allocation table cannot key apart from device "
                    "addresses: such physical allocations are not admitted\n", api, (unsigned long long)handle);
}

#endif
