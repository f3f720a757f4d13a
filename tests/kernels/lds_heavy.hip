// Test kernel with 96 KiB of static LDS: more than the 64 KiB of gfx942, less
// than the 160 KiB of gfx950 (clang refuses LDS over the target's limit, so
// it is built for gfx950 and checked against gfx942: docs/loading.md).
#include "hip_min.h"

constexpr unsigned kTile = 128;

extern "C" __global__ void gemm_128x128(const float* a, const float* b, float* c, unsigned n) {
  __shared__ float tile_a[kTile * kTile];      // 64 KiB
  __shared__ float tile_b[kTile * kTile / 2];  // 32 KiB
  unsigned t = hip_thread_idx_x();
  for (unsigned i = t; i < kTile * kTile; i += hip_block_dim_x()) tile_a[i] = a[i % n];
  for (unsigned i = t; i < kTile * kTile / 2; i += hip_block_dim_x()) tile_b[i] = b[i % n];
  hip_syncthreads();
  float sum = 0.0f;
  for (unsigned k = 0; k < kTile; ++k)
    sum += tile_a[(t % kTile) * kTile + k] * tile_b[(k * kTile + t) % (kTile * kTile / 2)];
  c[hip_global_idx_x()] = sum;
}
