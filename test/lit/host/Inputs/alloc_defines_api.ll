; A mock CUDA runtime: it defines cudaMalloc and calls the cudaFree it is linked with.
target triple = "x86_64-unknown-linux-gnu"

define i32 @cudaMalloc(ptr %p, i64 %size) {
  store ptr null, ptr %p
  ret i32 2
}

define i32 @try_alloc(ptr %p) {
  %1 = call i32 @cudaMalloc(ptr %p, i64 64)
  %2 = call i32 @cudaFree(ptr null)
  ret i32 %1
}

declare i32 @cudaFree(ptr)
