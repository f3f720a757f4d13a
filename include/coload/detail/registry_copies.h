// coload/detail/registry_copies.h: a registry's kernels copied while their
// binary is held. Unstable: it may change in any release (docs/architecture.md,
// "Two tiers of C++ headers").
//
// Covers: what the C API hands out (coload_lookup_kernel,
// coload_lookup_function), safe even when another thread unregisters the
// binary as the lookup returns: the handle is then stale, but reading the
// copy is not a use after free. Registry::lookup_kernel's pointer is valid
// only until unregister. Threads: as Registry's lookups.
#pragma once

#include <cstddef>
#include <string_view>

#include "coload/error.h"
#include "coload/registry.h"
#include "coload/runtime.h"

namespace coload::detail {

/// Registry's lookups, each returning a copy taken while the binary is held.
class RegistryCopies {
 public:
  /// Registry::lookup_kernel, copied.
  static Expected<LoadedKernel> kernel(Registry& registry, BinaryHandle binary, std::size_t device,
                                       std::string_view kernel);
  /// Registry::lookup_function, copied (under the stubs' lock when remembered).
  static Expected<LoadedKernel> function(Registry& registry, const void* host_stub, std::size_t device);
};

}  // namespace coload::detail
