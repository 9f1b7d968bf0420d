// One merge pass of a float4 merge sort: each work-item merges two adjacent sorted runs of nrElems/2 float4s (each float4 sorted) into one, keeping the smaller four values of the two heads each step.
// Table I row MS; after Rodinia's hybridsort/mergesort.cl (mergeSortPass with sortElem/getLowest/getHighest).
#include "ocl_builtins.h"

#ifndef DIVISIONS
#define DIVISIONS 1024
#endif

// Sorts the four lanes (a five-comparator network).
static inline float4 sort_elem(float4 r) {
  float4 nr;
  nr.x = fmin(r.x, r.y);
  nr.y = fmax(r.x, r.y);
  nr.z = fmin(r.z, r.w);
  nr.w = fmax(r.z, r.w);
  r.x = fmin(nr.x, nr.z);
  r.z = fmax(nr.x, nr.z);
  r.y = fmin(nr.y, nr.w);
  r.w = fmax(nr.y, nr.w);
  nr.x = r.x;
  nr.y = fmin(r.y, r.z);
  nr.z = fmax(r.y, r.z);
  nr.w = r.w;
  return nr;
}

// For sorted a and b: the four smallest (getLowest) and the four largest (getHighest) of the eight,
// each a bitonic sequence that sort_elem turns sorted.
static inline float4 get_lowest(float4 a, float4 b) {
  return (float4)(fmin(a.x, b.w), fmin(a.y, b.z), fmin(a.z, b.y), fmin(a.w, b.x));
}
static inline float4 get_highest(float4 a, float4 b) {
  return (float4)(fmax(a.w, b.x), fmax(a.z, b.y), fmax(a.y, b.z), fmax(a.x, b.w));
}

// The input is split into DIVISIONS buckets (constStartAddr[d] .. constStartAddr[d+1], in float4s);
// threadsPerDiv work-items per bucket, each owning one pair of runs of nrElems/2 float4s.
__kernel void merge_sort_pass(__global const float4 *restrict input, __global float4 *restrict result,
                              const int nrElems, const int threadsPerDiv,
                              __constant int *constStartAddr) {
  const int gid = get_global_id(0);
  const int division = gid / threadsPerDiv;
  if (division >= DIVISIONS)
    return;
  const int int_gid = gid - division * threadsPerDiv;
  const int divEnd = constStartAddr[division + 1];
  const int Astart = constStartAddr[division] + int_gid * nrElems;
  const int Bstart = Astart + nrElems / 2;
  if (Astart >= divEnd)
    return;
  __global float4 *resStart = result + Astart;
  if (Bstart >= divEnd) {
    // Odd run out: copy it.
    for (int i = 0; i < divEnd - Astart; i++)
      resStart[i] = input[Astart + i];
    return;
  }

  const int lenA = nrElems / 2;
  const int lenB = min(nrElems / 2, divEnd - Bstart);
  int aidx = 0, bidx = 0, outidx = 0;
  float4 a = input[Astart];
  float4 b = input[Bstart];
  while (true) {
    const bool elemsLeftInA = aidx + 1 < lenA;
    const bool elemsLeftInB = bidx + 1 < lenB;
    const float4 nextA = elemsLeftInA ? input[Astart + aidx + 1] : a;
    const float4 nextB = elemsLeftInB ? input[Bstart + bidx + 1] : b;
    const float4 na = get_lowest(a, b);
    const float4 nb = get_highest(a, b);
    a = sort_elem(na);
    b = sort_elem(nb);
    resStart[outidx++] = a;
    if (elemsLeftInA && (!elemsLeftInB || nextA.x < nextB.x)) {
      aidx += 1;
      a = nextA;
    } else if (elemsLeftInB) {
      bidx += 1;
      a = nextB;
    } else {
      break;
    }
  }
  resStart[outidx] = b;
}
