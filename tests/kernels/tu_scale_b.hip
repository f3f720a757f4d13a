// The second `scale` (see tu_scale_a.hip): the same signature, so the same
// mangled name (_ZL5scalePff), but 2 KiB of static LDS, and a device global
// the launches count in.
#include "hip_min.h"

__device__ int scale_b_launches;

static __global__ void scale(float* x, float factor) {
  __shared__ float tile[512];
  unsigned t = hip_thread_idx_x();
  tile[t] = x[hip_global_idx_x()];
  hip_syncthreads();
  x[hip_global_idx_x()] = tile[511 - t] * factor;
  if (hip_global_idx_x() == 0) scale_b_launches += 1;
}

int launch_scale_b(float* x, unsigned long dynamic_lds) {
  scale<<<dim3(2), dim3(512), dynamic_lds>>>(x, 3.0f);
  return 0;
}
const void* scale_b_stub() { return reinterpret_cast<const void*>(&scale); }
const void* scale_b_launches_symbol() { return &scale_b_launches; }
extern "C" void launch_scale_b_c() { launch_scale_b(nullptr, 0); }
