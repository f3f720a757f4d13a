// Test kernel with static LDS (a __shared__ array): a block-wide sum.
#include "hip_min.h"

constexpr unsigned kBlock = 256;

__global__ void block_sum(const float* in, float* out, unsigned n) {
  __shared__ float tile[kBlock];
  unsigned t = hip_thread_idx_x();
  unsigned i = hip_block_idx_x() * kBlock + t;
  tile[t] = i < n ? in[i] : 0.0f;
  hip_syncthreads();
  for (unsigned stride = kBlock / 2; stride > 0; stride /= 2) {
    if (t < stride) tile[t] += tile[t + stride];
    hip_syncthreads();
  }
  if (t == 0) out[hip_block_idx_x()] = tile[0];
}

__global__ void histogram(const unsigned char* bytes, unsigned* bins, unsigned n) {
  __shared__ unsigned local[256];
  unsigned t = hip_thread_idx_x();
  local[t] = 0;
  hip_syncthreads();
  for (unsigned i = hip_global_idx_x(); i < n; i += kBlock * 64)
    __atomic_fetch_add(&local[bytes[i]], 1u, __ATOMIC_RELAXED);
  hip_syncthreads();
  __atomic_fetch_add(&bins[t], local[t], __ATOMIC_RELAXED);
}

extern "C" int lds_static_launch(const float* in, float* out, const unsigned char* bytes,
                                 unsigned* bins, unsigned n) {
  block_sum<<<(n + kBlock - 1) / kBlock, kBlock>>>(in, out, n);
  histogram<<<64, kBlock>>>(bytes, bins, n);
  return 0;
}
