// mem_pattern.h: the values mem_pressure.cu writes, transforms and checks; shared with test/fake-gpu/fake_cuda.c
// (the dry run's stand-in for the CUDA runtime), so that both compute the same words.
#ifndef MEM_PATTERN_H
#define MEM_PATTERN_H
#include <stdint.h>

#ifdef __CUDACC__
#define MEM_PATTERN_HD __host__ __device__
#else
#define MEM_PATTERN_HD
#endif

// The value word `index` of a job's demand starts with: a hash, so that a word written to the wrong place shows.
static inline MEM_PATTERN_HD uint32_t mem_pattern(uint64_t index, uint32_t seed) {
  uint32_t x = (uint32_t)index * 0x9E3779B1u ^ (uint32_t)(index >> 32) * 0x85EBCA77u ^ (seed + 1) * 0xC2B2AE3Du;
  x ^= x >> 16;
  x *= 0x7FEB352Du;
  x ^= x >> 15;
  x *= 0x846CA68Bu;
  x ^= x >> 16;
  return x;
}

// One compute pass: x = A*x + B (mod 2^32) on every word; P passes compose to another such map.
#define MEM_STEP_A 1664525u
#define MEM_STEP_B 1013904223u

#endif
