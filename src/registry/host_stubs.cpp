// The registry's host-stub table (host_stubs.h).
#include "registry/host_stubs.h"

#include <mutex>
#include <utility>

#include "common/bytes.h"

namespace coload::registry {
namespace {

std::string stub_name(const void* host_stub) {
  return "host stub " + detail::hex(reinterpret_cast<std::uintptr_t>(host_stub));
}

}  // namespace

Expected<void> HostStubs::add(const void* host_stub, BinaryHandle binary, std::string kernel) {
  std::unique_lock lock(mutex_);
  auto [it, added] = stubs_.try_emplace(host_stub);
  if (added) {
    auto found = std::make_unique<std::atomic<const LoadedKernel*>[]>(devices_);
    for (std::size_t i = 0; i < devices_; ++i) found[i].store(nullptr, std::memory_order_relaxed);
    it->second = std::make_shared<const Stub>(Stub{binary, std::move(kernel), std::move(found)});
    return {};
  }
  const Stub& known = *it->second;
  if (known.binary.value == binary.value && known.kernel == kernel) return {};
  return Error(ErrorKind::Ambiguous, stub_name(host_stub) + " already stands for kernel \"" + known.kernel +
                                         "\" of binary " + std::to_string(known.binary.value) + "; not \"" + kernel +
                                         "\" of binary " + std::to_string(binary.value));
}

Expected<std::shared_ptr<const HostStubs::Stub>> HostStubs::find(const void* host_stub) const {
  std::shared_lock lock(mutex_);
  auto it = stubs_.find(host_stub);
  if (it == stubs_.end()) return Error(ErrorKind::NotFound, "no kernel is registered for " + stub_name(host_stub));
  return it->second;
}

void HostStubs::remember(const void* host_stub, const Stub& stub, std::size_t device, const LoadedKernel* kernel) {
  std::shared_lock lock(mutex_);
  auto it = stubs_.find(host_stub);
  if (it != stubs_.end() && it->second.get() == &stub && device < devices_)
    stub.found[device].store(kernel, std::memory_order_release);
}

void HostStubs::forget(BinaryHandle binary) {
  std::unique_lock lock(mutex_);
  std::erase_if(stubs_, [&](const auto& entry) { return entry.second->binary.value == binary.value; });
}

}  // namespace coload::registry
