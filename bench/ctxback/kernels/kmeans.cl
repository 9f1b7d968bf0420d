// K-means assignment step: each work-item takes one point, computes its squared distance to every cluster centre over all features, and records the nearest; kmeans_swap transposes the features first.
// Table I row KM; after Rodinia's kmeans/kmeans.cl (kmeans_kernel_c, kmeans_swap), with the feature loop unrolled by 8.
#include "ocl_builtins.h"

#ifndef FEATURE_UNROLL
#define FEATURE_UNROLL 8 // features per trip of the distance loop
#endif
#ifndef FLT_MAX
#define FLT_MAX 0x1.fffffep127f
#endif

// feature is transposed (feature-major: feature[l * npoints + point]) so that loads coalesce;
// the cluster centres (clusters[i * nfeatures + l]) are the same for every work-item.
__kernel void kmeans_kernel_c(__global const float *restrict feature,
                              __global const float *restrict clusters,
                              __global int *restrict membership, const int npoints,
                              const int nclusters, const int nfeatures) {
  const int point_id = get_global_id(0);
  if (point_id >= npoints)
    return;
  int index = 0;
  float min_dist = FLT_MAX;
  for (int i = 0; i < nclusters; i++) {
    __global const float *centre = clusters + i * nfeatures;
    float dist = 0.0f;
    int l = 0;
    for (; l + FEATURE_UNROLL <= nfeatures; l += FEATURE_UNROLL) {
#pragma unroll
      for (int u = 0; u < FEATURE_UNROLL; ++u) {
        const float diff = feature[(l + u) * npoints + point_id] - centre[l + u];
        dist = mad(diff, diff, dist);
      }
    }
    for (; l < nfeatures; l++) {
      const float diff = feature[l * npoints + point_id] - centre[l];
      dist = mad(diff, diff, dist);
    }
    if (dist < min_dist) {
      min_dist = dist;
      index = i;
    }
  }
  membership[point_id] = index;
}

// Point-major to feature-major: feature_swap[i * npoints + tid] = feature[tid * nfeatures + i].
__kernel void kmeans_swap(__global const float *restrict feature,
                          __global float *restrict feature_swap, const int npoints,
                          const int nfeatures) {
  const int tid = get_global_id(0);
  if (tid >= npoints)
    return;
  __global const float *src = feature + tid * nfeatures;
#pragma unroll 4
  for (int i = 0; i < nfeatures; i++)
    feature_swap[i * npoints + tid] = src[i];
}
