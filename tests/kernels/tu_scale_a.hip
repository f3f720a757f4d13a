// One of two translation units that each define an internal-linkage kernel
// named `scale`, with different arguments and LDS: a registration layer must
// send each TU's launch to its own kernel (tests/hip_proof_main.cpp).
#include "hip_min.h"

static __global__ void scale(float* x, float factor) { x[hip_global_idx_x()] *= factor; }

void launch_scale_a(float* x) { scale<<<dim3(4), dim3(64)>>>(x, 2.0f); }
const void* scale_a_stub() { return reinterpret_cast<const void*>(&scale); }
extern "C" void launch_scale_a_c() { launch_scale_a(nullptr); }
