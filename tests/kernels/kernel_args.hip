// Test kernel with many kinds of arguments, for the kernarg layout and the
// metadata reader: by-value structs of several alignments, pointers (const,
// __restrict__), scalars of every width, and dynamic LDS (extern __shared__,
// so a -O0 code object v5+ declares hidden_dynamic_lds_size).
#include "hip_min.h"

struct Small {
  char tag;
  short code;
};

struct Wide {
  double weight;
  int count;
  float scale[3];
};

struct alignas(16) Vec4 {
  float x, y, z, w;
};

extern __shared__ float scratch[];

extern "C" __global__ void many_args(const float* __restrict__ in, float* __restrict__ out, Small small,
                                     char c, Wide wide, const int* lookup, Vec4 v,
                                     unsigned long long count, short s, double d) {
  unsigned t = hip_thread_idx_x();
  unsigned i = hip_global_idx_x();
  scratch[t] = i < count ? in[i] * wide.scale[t % 3] : 0.0f;
  hip_syncthreads();
  float sum = scratch[(t + 1) % hip_block_dim_x()] + v.x * v.w + static_cast<float>(wide.weight * d);
  sum += static_cast<float>(small.tag + small.code + c + s + wide.count + lookup[t & 7]);
  if (i < count) out[i] = sum;
}
