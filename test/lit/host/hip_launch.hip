// HIP host side: the launch's handle is a constant global holding the device stub, not
// the stub itself; such launches are routed too, with a HIP descriptor (API 2) that
// names the handle. (Unrouted, a converted kernel would run without its parameters.)
// RUN: %clang -x hip --cuda-host-only -nogpuinc -O2 -S -emit-llvm -fpass-plugin=%plugin -Rpass=preempt %s -o %t.ll 2>&1 | %FileCheck %s --check-prefix=REMARK
// RUN: %FileCheck %s < %t.ll
// No direct launch anywhere in the module, before the routed call as well as after it (a CHECK-NOT after the
// positive match looked only at what follows it).
// RUN: %FileCheck %s --check-prefix=NOHIP < %t.ll

// REMARK: remark: launch of kernel '_Z1kPi' routed to the preempt runtime

// CHECK: @_Z1kPi = constant ptr @_Z16__device_stub__kPi
// CHECK: @__preempt_kernel_desc._Z16__device_stub__kPi = internal global { i32, i32, i32, i32, ptr, ptr, ptr } { i32 1, i32 2, i32 1, i32 10, ptr @_Z1kPi,
// CHECK: call {{.*}} @preempt_launch_kernel(ptr {{.*}}@__preempt_kernel_desc._Z16__device_stub__kPi
// NOHIP-NOT: call {{.*}} @hipLaunchKernel(

// What hip_runtime.h declares for the host side of a launch (no HIP headers needed).
struct dim3 {
  unsigned x, y, z;
  dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
typedef struct ihipStream_t *hipStream_t;
typedef int hipError_t;
extern "C" hipError_t hipLaunchKernel(const void *, dim3, dim3, void **, unsigned long, hipStream_t);
extern "C" hipError_t __hipPushCallConfiguration(dim3, dim3, unsigned long, hipStream_t);
extern "C" hipError_t __hipPopCallConfiguration(dim3 *, dim3 *, unsigned long *, hipStream_t *);

__attribute__((global)) void k(int *data) { data[0] = 1; }

void run(int *data) { k<<<4, 32, 0, 0>>>(data); }
