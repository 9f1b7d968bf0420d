/* ocl_builtins.h: the OpenCL C built-ins these kernels call, written on clang's AMDGPU builtins.
 * With -nogpulib no device library (ROCm-Device-Libs) is linked, so get_global_id(), barrier(),
 * atomic_inc(), min()/max() and pow() would stay undefined external calls; these macros make them
 * inline code, as the device library would after linking. Included by every kernel file here. */
#ifndef CTXBACK_OCL_BUILTINS_H
#define CTXBACK_OCL_BUILTINS_H

/* Work-item functions. The dimension is always a constant, so the selects fold away. Global offsets
 * (clEnqueueNDRangeKernel's global_work_offset) are taken as zero, and get_local_size() is the
 * enqueued size (the last work-group of a non-uniform grid is not special-cased). */
static inline uint ctx_local_id(uint d) {
  return d == 0 ? __builtin_amdgcn_workitem_id_x()
                : d == 1 ? __builtin_amdgcn_workitem_id_y() : __builtin_amdgcn_workitem_id_z();
}
static inline uint ctx_group_id(uint d) {
  return d == 0 ? __builtin_amdgcn_workgroup_id_x()
                : d == 1 ? __builtin_amdgcn_workgroup_id_y() : __builtin_amdgcn_workgroup_id_z();
}
static inline uint ctx_local_size(uint d) {
  return d == 0 ? __builtin_amdgcn_workgroup_size_x()
                : d == 1 ? __builtin_amdgcn_workgroup_size_y() : __builtin_amdgcn_workgroup_size_z();
}
static inline uint ctx_global_size(uint d) {
  return d == 0 ? __builtin_amdgcn_grid_size_x()
                : d == 1 ? __builtin_amdgcn_grid_size_y() : __builtin_amdgcn_grid_size_z();
}
static inline uint ctx_num_groups(uint d) {
  return (ctx_global_size(d) + ctx_local_size(d) - 1) / ctx_local_size(d);
}
static inline uint ctx_global_id(uint d) {
  return ctx_group_id(d) * ctx_local_size(d) + ctx_local_id(d);
}

#define get_local_id(d) ((size_t)ctx_local_id(d))
#define get_group_id(d) ((size_t)ctx_group_id(d))
#define get_local_size(d) ((size_t)ctx_local_size(d))
#define get_global_size(d) ((size_t)ctx_global_size(d))
#define get_num_groups(d) ((size_t)ctx_num_groups(d))
#define get_global_id(d) ((size_t)ctx_global_id(d))

/* barrier(CLK_LOCAL_MEM_FENCE): work-group release fence, s_barrier, acquire fence. */
static inline void ctx_barrier(void) {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
#define barrier(flags) ctx_barrier()

/* OpenCL 1.1 atomic_inc on a 32-bit counter: returns the old value. */
#define atomic_inc(p) __scoped_atomic_fetch_add((p), 1u, __ATOMIC_RELAXED, __MEMORY_SCOPE_DEVICE)

/* Integer and float min/max (same operand types), pow for x > 0 (OpenCL's powr). */
#define min(a, b) __builtin_elementwise_min((a), (b))
#define max(a, b) __builtin_elementwise_max((a), (b))
#define pow(x, y) __builtin_exp2f((y) * __builtin_log2f(x))

#endif
