// Test kernel with dynamic LDS (extern __shared__) and a struct passed by value.
#include "hip_min.h"

struct Params {
  int n;
  float scale;
  double bias;
  unsigned char flags[4];
};

extern __shared__ float dyn_smem[];

__global__ void transform(Params p, const float* in, float* out) {
  unsigned t = hip_thread_idx_x();
  unsigned i = hip_global_idx_x();
  dyn_smem[t] = i < static_cast<unsigned>(p.n) ? in[i] : 0.0f;
  hip_syncthreads();
  unsigned neighbour = (t + 1) % hip_block_dim_x();
  float v = dyn_smem[t] * p.scale + dyn_smem[neighbour] + static_cast<float>(p.bias);
  if (p.flags[0]) v = -v;
  if (i < static_cast<unsigned>(p.n)) out[i] = v;
}

__global__ void fill(float* out, float value, unsigned long long count) {
  unsigned i = hip_global_idx_x();
  if (i < count) out[i] = value;
}

extern "C" int lds_dynamic_launch(const float* in, float* out, int n) {
  Params p{n, 1.5f, 0.25, {0, 1, 2, 3}};
  transform<<<(n + 127) / 128, 128, 128 * sizeof(float)>>>(p, in, out);
  fill<<<1, 64>>>(out, 0.0f, 0);
  return 0;
}
