// Single-precision GEMM C = alpha*A*B + beta*C (row-major), tiled through __local memory with 2-D register blocking: each work-item computes a 4x4 block of C.
// Table I row MM; after CLBlast's Xgemm scheme (C. Nugteren's "myGEMM" tiling: TSM x TSN tiles of C, TSK-deep tiles of A and B, fully unrolled inner product).
#include "ocl_builtins.h"

#define TSM 32                                  // rows of C per work-group
#define TSN 32                                  // columns of C per work-group
#define TSK 8                                   // depth of one A/B tile
#define WPTM 4                                  // rows of C per work-item
#define WPTN 4                                  // columns of C per work-item
#define RTSM (TSM / WPTM)                       // work-group size in y
#define RTSN (TSN / WPTN)                       // work-group size in x
#define LPTA ((TSK * TSM) / (RTSM * RTSN))      // A elements each work-item loads per tile
#define LPTB ((TSK * TSN) / (RTSM * RTSN))      // B elements each work-item loads per tile

__kernel __attribute__((reqd_work_group_size(RTSN, RTSM, 1)))
void sgemm_tiled(const int M, const int N, const int K, const float alpha,
                 __global const float *restrict A, const int lda, __global const float *restrict B,
                 const int ldb, const float beta, __global float *restrict C, const int ldc) {
  const int tidn = get_local_id(0);
  const int tidm = get_local_id(1);
  const int tid = tidm * RTSN + tidn;
  const int offsetN = TSN * get_group_id(0);
  const int offsetM = TSM * get_group_id(1);

  __local float Asub[TSK][TSM];
  __local float Bsub[TSK][TSN];

  float acc[WPTM][WPTN];
#pragma unroll
  for (int wm = 0; wm < WPTM; wm++)
#pragma unroll
    for (int wn = 0; wn < WPTN; wn++)
      acc[wm][wn] = 0.0f;

  const int numTiles = (K + TSK - 1) / TSK;
  for (int t = 0; t < numTiles; t++) {
    const int tileK = t * TSK;
    // Stage the tiles; out-of-range elements are zero so the edges need no special case below.
#pragma unroll
    for (int la = 0; la < LPTA; la++) {
      const int id = la * RTSM * RTSN + tid;
      const int m = id % TSM, k = id / TSM;
      const int gm = offsetM + m, gk = tileK + k;
      Asub[k][m] = (gm < M && gk < K) ? A[gm * lda + gk] : 0.0f;
    }
#pragma unroll
    for (int lb = 0; lb < LPTB; lb++) {
      const int id = lb * RTSM * RTSN + tid;
      const int n = id % TSN, k = id / TSN;
      const int gn = offsetN + n, gk = tileK + k;
      Bsub[k][n] = (gn < N && gk < K) ? B[gk * ldb + gn] : 0.0f;
    }
    barrier(CLK_LOCAL_MEM_FENCE);

#pragma unroll
    for (int k = 0; k < TSK; k++) {
      float Areg[WPTM], Breg[WPTN];
#pragma unroll
      for (int wm = 0; wm < WPTM; wm++)
        Areg[wm] = Asub[k][tidm + wm * RTSM];
#pragma unroll
      for (int wn = 0; wn < WPTN; wn++)
        Breg[wn] = Bsub[k][tidn + wn * RTSN];
#pragma unroll
      for (int wm = 0; wm < WPTM; wm++)
#pragma unroll
        for (int wn = 0; wn < WPTN; wn++)
          acc[wm][wn] = mad(Areg[wm], Breg[wn], acc[wm][wn]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }

#pragma unroll
  for (int wm = 0; wm < WPTM; wm++) {
    const int gm = offsetM + tidm + wm * RTSM;
#pragma unroll
    for (int wn = 0; wn < WPTN; wn++) {
      const int gn = offsetN + tidn + wn * RTSN;
      if (gm < M && gn < N) {
        __global float *c = C + gm * ldc + gn;
        *c = (beta == 0.0f) ? alpha * acc[wm][wn] : mad(alpha, acc[wm][wn], beta * *c);
      }
    }
  }
}
