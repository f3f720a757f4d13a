// The second kernel of the file-set fixtures (<dir>/<arch>/gemm.co): a file
// complementary to fmha_fwd's, loaded beside it (docs/fixtures.md).
#include "hip_min.h"

extern "C" __global__ void gemm(const float* a, const float* b, float* c, unsigned n) {
  unsigned i = hip_global_idx_x();
  if (i < n) c[i] = a[i] * b[(i * 7) % n] + c[i];
}
