// Hybrid sort steps: bucketcount bins floats into 1024 pivot buckets with a __local histogram (binary search over the pivots); bitonic_sort_local sorts 1024 key/value pairs per work-group in __local memory; bitonic_merge_global is one global compare-exchange stage.
// Table I row HS; bucketcount after Rodinia's hybridsort/bucketsort_kernels.cl, the bitonic kernels after the bitonic sort of the NVIDIA/AMD OpenCL SDK samples.
#include "ocl_builtins.h"

#define DIVISIONS 1024
#define LOG_DIVISIONS 10
#define LOCAL_SIZE_LIMIT 1024 // pairs sorted per work-group by bitonic_sort_local

// Each element finds its bucket among DIVISIONS-1 sorted pivots, takes a slot in that bucket from
// the work-group's histogram, and records (slot << LOG_DIVISIONS) | bucket. The histogram goes to
// d_prefixoffsets[group][bucket] for the prefix-sum step.
__kernel void bucketcount(__global const float *restrict input, __global int *restrict indice,
                          __global uint *restrict d_prefixoffsets, const int size,
                          __global const float *restrict l_pivotpoints) {
  volatile __local uint s_offset[DIVISIONS];
  const int lid = get_local_id(0);
  const int lsize = get_local_size(0);
  for (int i = lid; i < DIVISIONS; i += lsize)
    s_offset[i] = 0;
  barrier(CLK_LOCAL_MEM_FENCE);

  for (int tid = get_global_id(0); tid < size; tid += get_global_size(0)) {
    const float elem = input[tid];
    int idx = DIVISIONS / 2 - 1;
    int jump = DIVISIONS / 4;
    float piv = l_pivotpoints[idx];
#pragma unroll
    for (int step = 0; step < LOG_DIVISIONS - 1; ++step) {
      idx = (elem < piv) ? (idx - jump) : (idx + jump);
      piv = l_pivotpoints[idx];
      jump >>= 1;
    }
    idx = (elem < piv) ? idx : (idx + 1);
    indice[tid] = (int)(atomic_inc(&s_offset[idx]) << LOG_DIVISIONS) + idx;
  }
  barrier(CLK_LOCAL_MEM_FENCE);

  __global uint *offsets = d_prefixoffsets + get_group_id(0) * DIVISIONS;
  for (int i = lid; i < DIVISIONS; i += lsize)
    offsets[i] = s_offset[i];
}

static inline void comparator_local(__local uint *keyA, __local uint *valA, __local uint *keyB,
                                    __local uint *valB, const uint dir) {
  const uint ka = *keyA, kb = *keyB;
  if ((ka > kb) == dir) {
    const uint va = *valA;
    *keyA = kb;
    *keyB = ka;
    *valA = *valB;
    *valB = va;
  }
}

// Sorts each LOCAL_SIZE_LIMIT-element chunk; even work-groups sort descending, odd ones
// ascending, so that neighbouring chunks form bitonic sequences for bitonic_merge_global.
__kernel __attribute__((reqd_work_group_size(LOCAL_SIZE_LIMIT / 2, 1, 1)))
void bitonic_sort_local(__global uint *restrict d_DstKey, __global uint *restrict d_DstVal,
                        __global const uint *restrict d_SrcKey,
                        __global const uint *restrict d_SrcVal) {
  __local uint l_key[LOCAL_SIZE_LIMIT];
  __local uint l_val[LOCAL_SIZE_LIMIT];
  const uint lid = get_local_id(0);
  const uint base = get_group_id(0) * LOCAL_SIZE_LIMIT + lid;
  const uint half_n = LOCAL_SIZE_LIMIT / 2;

  l_key[lid] = d_SrcKey[base];
  l_val[lid] = d_SrcVal[base];
  l_key[lid + half_n] = d_SrcKey[base + half_n];
  l_val[lid + half_n] = d_SrcVal[base + half_n];

  const uint comparatorI = get_global_id(0) & (LOCAL_SIZE_LIMIT / 2 - 1);
#pragma unroll 1
  for (uint size = 2; size < LOCAL_SIZE_LIMIT; size <<= 1) {
    const uint ddd = (comparatorI & (size / 2)) != 0;
    for (uint stride = size / 2; stride > 0; stride >>= 1) {
      barrier(CLK_LOCAL_MEM_FENCE);
      const uint pos = 2 * lid - (lid & (stride - 1));
      comparator_local(&l_key[pos], &l_val[pos], &l_key[pos + stride], &l_val[pos + stride], ddd);
    }
  }

  // Final bitonic merge of the whole chunk, in the work-group's direction.
  const uint dir = get_group_id(0) & 1;
#pragma unroll 1
  for (uint stride = LOCAL_SIZE_LIMIT / 2; stride > 0; stride >>= 1) {
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint pos = 2 * lid - (lid & (stride - 1));
    comparator_local(&l_key[pos], &l_val[pos], &l_key[pos + stride], &l_val[pos + stride], dir);
  }
  barrier(CLK_LOCAL_MEM_FENCE);

  d_DstKey[base] = l_key[lid];
  d_DstVal[base] = l_val[lid];
  d_DstKey[base + half_n] = l_key[lid + half_n];
  d_DstVal[base + half_n] = l_val[lid + half_n];
}

// One stage (size, stride) of the bitonic merge over the whole array, in global memory.
__kernel void bitonic_merge_global(__global uint *restrict d_Key, __global uint *restrict d_Val,
                                   const uint arrayLength, const uint size, const uint stride,
                                   const uint dir) {
  const uint global_comparatorI = get_global_id(0);
  const uint comparatorI = global_comparatorI & (arrayLength / 2 - 1);
  const uint ddd = dir ^ ((comparatorI & (size / 2)) != 0);
  const uint pos = 2 * global_comparatorI - (global_comparatorI & (stride - 1));
  const uint keyA = d_Key[pos], keyB = d_Key[pos + stride];
  if ((keyA > keyB) == ddd) {
    const uint valA = d_Val[pos], valB = d_Val[pos + stride];
    d_Key[pos] = keyB;
    d_Key[pos + stride] = keyA;
    d_Val[pos] = valB;
    d_Val[pos + stride] = valA;
  }
}
