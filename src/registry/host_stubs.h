// The registry's host stubs (Registry::register_function): which kernel of
// which binary each stub stands for, and, per device, the kernel a lookup by
// the stub found, so that later lookups are one hash lookup.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <shared_mutex>
#include <string>
#include <unordered_map>

#include "coload/error.h"
#include "coload/registry.h"
#include "coload/runtime.h"

namespace coload::registry {

class HostStubs {
 public:
  /// What a stub stands for.
  struct Stub {
    BinaryHandle binary;
    std::string kernel;
    /// Per device, the kernel once a lookup found it; read under the table's
    /// lock, which forget() takes before the binary's modules are freed.
    std::unique_ptr<std::atomic<const LoadedKernel*>[]> found;
  };

  explicit HostStubs(std::size_t devices) : devices_(devices) {}

  /// Records that `host_stub` stands for `kernel` of `binary` (the caller
  /// keeps the binary registered meanwhile). Again for the same kernel and
  /// binary: nothing. Errors: Ambiguous when it stands for another.
  Expected<void> add(const void* host_stub, BinaryHandle binary, std::string kernel);
  /// The record of `host_stub`. Errors: NotFound naming the stub.
  Expected<std::shared_ptr<const Stub>> find(const void* host_stub) const;
  /// Calls `use` with the kernel a lookup by `host_stub` found on `device`,
  /// under the table's lock; false (`use` not called) when none has yet.
  template <class Use>
  bool found_before(const void* host_stub, std::size_t device, Use&& use) const {
    std::shared_lock lock(mutex_);
    auto it = stubs_.find(host_stub);
    if (it == stubs_.end() || device >= devices_) return false;
    const LoadedKernel* kernel = it->second->found[device].load(std::memory_order_acquire);
    if (!kernel) return false;
    use(*kernel);
    return true;
  }
  /// Remembers `kernel` for (`host_stub`, `device`) while `stub` is still its
  /// record (a stub forgotten meanwhile stays forgotten). The caller holds the binary.
  void remember(const void* host_stub, const Stub& stub, std::size_t device, const LoadedKernel* kernel);
  /// Forgets every stub of `binary`.
  void forget(BinaryHandle binary);

 private:
  std::size_t devices_;
  mutable std::shared_mutex mutex_;
  std::unordered_map<const void*, std::shared_ptr<const Stub>> stubs_;
};

}  // namespace coload::registry
