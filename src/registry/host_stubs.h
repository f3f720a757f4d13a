// The registry's host stubs (Registry::register_function): which kernel each
// stub stands for and the binaries that registered it, in registration
// order, and, per device, the kernel a lookup by the stub resolved to, so
// that later lookups are one hash lookup.
//
// A template kernel's host stub is a COMDAT function the linker merges into
// one address, so every translation unit that instantiated it registers the
// same stub from its own wrapper, with the same device name
// (docs/embedding.md, "Host stubs"): one stub, several binaries.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "coload/error.h"
#include "coload/registry.h"
#include "coload/runtime.h"

namespace coload::registry {

class HostStubs {
 public:
  /// What a stub stands for, as one lookup reads it.
  struct Stub {
    std::string kernel;
    std::vector<BinaryHandle> binaries;  ///< in registration order; never empty
    std::uint64_t generation = 0;        ///< changes whenever `binaries` does
  };

  explicit HostStubs(std::size_t devices) : devices_(devices) {}

  /// Records that `host_stub` stands for `kernel`, registered by `binary`
  /// (the caller keeps the binary registered meanwhile). Again by the same
  /// binary: nothing. By another binary for the same kernel: added after the
  /// earlier ones. Errors: Ambiguous when the stub stands for another kernel.
  Expected<void> add(const void* host_stub, BinaryHandle binary, std::string_view kernel);
  /// A copy of the record of `host_stub`. Errors: NotFound naming the stub.
  Expected<Stub> find(const void* host_stub) const;
  /// Calls `use` with the kernel a lookup by `host_stub` resolved to on
  /// `device`, under the table's lock; false (`use` not called) when none has
  /// since the stub's binaries last changed.
  template <class Use>
  bool found_before(const void* host_stub, std::size_t device, Use&& use) const {
    std::shared_lock lock(mutex_);
    auto it = stubs_.find(host_stub);
    if (it == stubs_.end() || device >= devices_) return false;
    const LoadedKernel* kernel = it->second.found[device].load(std::memory_order_acquire);
    if (!kernel) return false;
    use(*kernel);
    return true;
  }
  /// Remembers `kernel` for (`host_stub`, `device`) if the stub's binaries
  /// are still those of `generation` (one added or forgotten meanwhile makes
  /// the next lookup resolve again). The caller holds the kernel's binary.
  void remember(const void* host_stub, std::uint64_t generation, std::size_t device, const LoadedKernel* kernel);
  /// The kernels `binary`'s stubs name, in registration order.
  std::vector<std::string> kernels_of(BinaryHandle binary) const;
  /// Forgets `binary` in every stub; a stub no binary holds any more is gone.
  void forget(BinaryHandle binary);

 private:
  struct Record {
    std::string kernel;
    std::vector<BinaryHandle> binaries;
    std::uint64_t generation = 0;
    /// Per device, once a lookup resolved it.
    std::unique_ptr<std::atomic<const LoadedKernel*>[]> found;
  };
  void clear_found(Record& record);

  std::size_t devices_;
  mutable std::shared_mutex mutex_;
  std::unordered_map<const void*, Record> stubs_;
  /// The stubs each binary registered: forget() visits only those.
  std::unordered_map<std::uint64_t, std::vector<const void*>> by_binary_;
  std::uint64_t next_generation_ = 1;
};

}  // namespace coload::registry
