// A clang-built HIP program whose runtime is the example registration layer
// (examples/hip_layer): its two translation units each define a kernel
// `static __global__ void scale(float*, float)`, the same mangled name in
// both, one without LDS and one with 2 KiB (tests/kernels/tu_scale_{a,b}.hip,
// one bundle plain, one compressed). Checks that each launch reached its own TU's kernel
// for the layer's device, with that kernel's kernarg and LDS sizes, that the
// device global resolves, and that a launch asking for too much LDS is
// refused before it would run. Prints one line per check; exit 0 when all hold.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "hip_layer.h"

void launch_scale_a(float* x);
int launch_scale_b(float* x, unsigned long dynamic_lds);
const void* scale_a_stub();
const void* scale_b_stub();
const void* scale_b_launches_symbol();

namespace {

int failures = 0;

void expect(bool holds, const char* what) {
  std::printf("%s: %s\n", holds ? "ok" : "FAILED", what);
  if (!holds) ++failures;
}

hip_layer_launch last() {
  hip_layer_launch launch;
  std::memset(&launch, 0, sizeof launch);
  expect(hip_layer_last_launch(&launch) == 0, "a launch was made");
  return launch;
}

}  // namespace

int main() {
  expect(hip_layer_registry() != nullptr, "the layer has a registry");
  expect(hip_layer_binary_count() == 2, "two wrappers registered, one per translation unit");

  launch_scale_a(nullptr);
  hip_layer_launch a = last();
  expect(a.status == 0, "TU a's launch succeeds");
  expect(a.host_stub == scale_a_stub(), "TU a launched by its own stub");
  expect(a.kernel.explicit_kernarg_size == 12, "TU a's scale(float*, float): 12 bytes of explicit arguments");
  expect(a.kernel.group_segment_size == 0, "TU a's scale uses no LDS");
  expect(a.block[0] == 64, "TU a's block of 64");

  launch_scale_b(nullptr, 0);
  hip_layer_launch b = last();
  expect(b.status == 0, "TU b's launch succeeds");
  expect(b.host_stub == scale_b_stub() && b.host_stub != a.host_stub, "TU b launched by its own stub");
  expect(b.kernel.explicit_kernarg_size == 12, "TU b's scale(float*, float): 12 bytes of explicit arguments");
  expect(b.kernel.group_segment_size == 2048, "TU b's scale, of the same name, has its own 2 KiB of static LDS");
  expect(b.block[0] == 512, "TU b's block of 512");

  // A runtime that loads (HSA, HIP) hands each kernel its own handle; the dry-run runtime gives 0.
  const char* runtime = std::getenv("HIP_LAYER_RUNTIME");
  if (runtime && std::strcmp(runtime, "dry-run") != 0) {
    expect(a.kernel.handle != 0 && b.kernel.handle != 0 && a.kernel.handle != b.kernel.handle,
           "each TU's kernel has its own runtime handle");
  }

  launch_scale_b(nullptr, 64 * 1024);
  expect(last().status == 9, "2 KiB static + 64 KiB dynamic LDS is refused (hipErrorInvalidConfiguration)");

  size_t size = 0;
  expect(hipGetSymbolSize(&size, scale_b_launches_symbol()) == 0 && size == sizeof(int),
         "TU b's __device__ int resolves, 4 bytes");
  void* address = reinterpret_cast<void*>(1);
  expect(hipGetSymbolAddress(&address, scale_b_launches_symbol()) == 0, "its device address resolves");
  expect(hipGetSymbolSize(&size, &failures) == 13, "a host variable that is no device global: hipErrorInvalidSymbol");

  std::printf("%s\n", failures == 0 ? "all checks passed" : "some checks FAILED");
  return failures == 0 ? 0 : 1;
}
