// vadd.cu: a source for compile.test, whose stand-in compiler never reads it.
__global__ void vadd(float *a, const float *b) { a[threadIdx.x] += b[threadIdx.x]; }
