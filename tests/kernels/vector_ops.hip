// Test kernels: pointer, int, float and double arguments, a __device__ and a
// __constant__ variable (registered through __hipRegisterVar on the host).
#include "hip_min.h"

__device__ int dev_counter = 7;
__constant__ float dev_coeffs[4] = {1.0f, 0.5f, 0.25f, 0.125f};

__global__ void add_one(int* data, int n) {
  unsigned i = hip_global_idx_x();
  if (i < static_cast<unsigned>(n)) data[i] += 1;
}

__global__ void saxpy(float a, const float* __restrict__ x, float* __restrict__ y, int n) {
  unsigned i = hip_global_idx_x();
  if (i < static_cast<unsigned>(n)) y[i] = a * x[i] + y[i] * dev_coeffs[i & 3];
}

__global__ void scale_double(double* data, double factor, long long n) {
  unsigned i = hip_global_idx_x();
  if (i < n) data[i] *= factor;
  if (i == 0) __atomic_fetch_add(&dev_counter, 1, __ATOMIC_RELAXED);
}

extern "C" int vector_ops_launch(int* ints, float* xs, float* ys, double* ds, int n) {
  add_one<<<(n + 63) / 64, 64>>>(ints, n);
  saxpy<<<dim3((n + 127) / 128), dim3(128)>>>(2.0f, xs, ys, n);
  scale_double<<<1, 256, 0, 0>>>(ds, 0.5, n);
  return 0;
}
