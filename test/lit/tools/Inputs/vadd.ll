; vadd.ll: a source for compile.test, whose stand-in compiler never reads it.
target triple = "amdgcn-amd-amdhsa"

define amdgpu_kernel void @vadd(ptr addrspace(1) %a, ptr addrspace(1) %b) {
  %x = load float, ptr addrspace(1) %b
  %y = load float, ptr addrspace(1) %a
  %sum = fadd float %x, %y
  store float %sum, ptr addrspace(1) %a
  ret void
}
