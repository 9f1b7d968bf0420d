// Gaussian elimination step t on a dense size x size system: Fan1 computes the row multipliers of column t, Fan2 eliminates column t from the rows below the pivot (and from b).
// Table I row GE; after Rodinia's gaussian/gaussianElim_kernels.cl (Fan1, Fan2); here Fan2 walks its row in chunks of 4 columns so one work-item covers several.
#include "ocl_builtins.h"

#define COLS_PER_ITEM 4

// One work-item per row below the pivot row t.
__kernel void Fan1(__global float *restrict m_dev, __global const float *restrict a_dev,
                   const int size, const int t) {
  const int gid = get_global_id(0);
  if (gid < size - 1 - t) {
    const int row = gid + t + 1;
    m_dev[size * row + t] = a_dev[size * row + t] / a_dev[size * t + t];
  }
}

// Dimension 0: row below the pivot; dimension 1: chunks of COLS_PER_ITEM columns, strided by the
// grid. a[row][y] -= m[row][t] * a[t][y] for y >= t; work-item y == 0 also updates b[row].
__kernel void Fan2(__global const float *restrict m_dev, __global float *a_dev,
                   __global float *restrict b_dev, const int size, const int t) {
  const int xidx = get_global_id(0);
  const int yidx = get_global_id(1);
  if (xidx >= size - 1 - t)
    return;
  const int row = xidx + 1 + t;
  const float mult = m_dev[size * row + t];
  __global float *a_row = a_dev + size * row;
  __global const float *pivot_row = a_dev + size * t;
  const int ystride = get_global_size(1) * COLS_PER_ITEM;
  for (int y = t + yidx * COLS_PER_ITEM; y < size; y += ystride) {
    if (y + COLS_PER_ITEM <= size) {
      float p[COLS_PER_ITEM];
#pragma unroll
      for (int k = 0; k < COLS_PER_ITEM; ++k)
        p[k] = pivot_row[y + k];
#pragma unroll
      for (int k = 0; k < COLS_PER_ITEM; ++k)
        a_row[y + k] -= mult * p[k];
    } else {
      for (int k = y; k < size; ++k)
        a_row[k] -= mult * pivot_row[k];
    }
  }
  if (yidx == 0)
    b_dev[row] -= mult * b_dev[t];
}
