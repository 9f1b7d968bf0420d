// vadd.cl: a source for compile.test, whose stand-in compiler never reads it.
__kernel void vadd(__global float *a, __global const float *b) { a[get_global_id(0)] += b[get_global_id(0)]; }
