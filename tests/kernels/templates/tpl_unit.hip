// One translation unit of the template library (tests/HipTemplates.cmake
// compiles this file once per unit, with -DTPL_TU=<n> and its group's
// --offload-arch list): a kernel of its own plus an overlapping subset of the
// template instantiations of tpl_kernels.h, every one launched by
// tpl_unit_<n>_launch(index, row), which also says what it launched.
#include "tpl_kernels.h"

#define TPL_PASTE3(a, b, c) a##b##c
#define TPL_UNIT_FUNCTION(n, suffix) TPL_PASTE3(tpl_unit_, n, suffix)

// Slot k (4 and up) is instantiated in unit n when this holds: each slot in
// 3 of every 7 units, a different 3 per slot, so the subsets overlap.
#define TPL_HAS(k) ((TPL_TU * 5 + (k) * 3) % 7 < 3)

// Internal linkage and the same name in every unit: one stub per unit.
static __global__ void tpl_unit_own(int* out) {
  __shared__ int own[TPL_TU + 1];
  own[hip_thread_idx_x() % (TPL_TU + 1)] = int(hip_thread_idx_x());
  hip_syncthreads();
  if (out) out[hip_thread_idx_x()] = own[TPL_TU];
}

/// Launches the unit's `index`-th kernel (its own first) and describes it in
/// *row: 1, or 0 when the unit has no kernel of that index.
extern "C" int TPL_UNIT_FUNCTION(TPL_TU, _launch)(int index, tpl_kernel_row* row) {
  int k = 0;
#define TPL_SLOT(present, launch)            \
  if ((present) && index == k++) {          \
    launch;                                 \
    return 1;                               \
  }
  TPL_SLOT(1, (tpl_unit_own<<<dim3(1), dim3(64)>>>(nullptr),
               *row = {reinterpret_cast<const void*>(&tpl_unit_own), sizeof(int), 1}))
  TPL_SLOT(1, (tpl_launch_reduce<float, 256>(row)))
  TPL_SLOT(1, (tpl_launch_scan<int, 128>(row)))
  TPL_SLOT(1, (tpl_launch_histogram<unsigned, 256, 4>(row)))
  TPL_SLOT(1, (tpl_launch_transform<float, 128, tpl_scale_op<float>>(row)))
  TPL_SLOT(TPL_HAS(4), (tpl_launch_reduce<double, 128>(row)))
  TPL_SLOT(TPL_HAS(5), (tpl_launch_reduce<int, 64>(row)))
  TPL_SLOT(TPL_HAS(6), (tpl_launch_scan<float, 256>(row)))
  TPL_SLOT(TPL_HAS(7), (tpl_launch_scan<double, 64>(row)))
  TPL_SLOT(TPL_HAS(8), (tpl_launch_histogram<unsigned, 128, 8>(row)))
  TPL_SLOT(TPL_HAS(9), (tpl_launch_histogram<unsigned long long, 256, 4>(row)))
  TPL_SLOT(TPL_HAS(10), (tpl_launch_transform<double, 64, tpl_negate_op<double>>(row)))
  TPL_SLOT(TPL_HAS(11), (tpl_launch_transform<int, 256, tpl_negate_op<int>>(row)))
#undef TPL_SLOT
  return 0;
}
