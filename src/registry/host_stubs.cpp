// The registry's host-stub table (host_stubs.h).
#include "registry/host_stubs.h"

#include <algorithm>
#include <mutex>
#include <utility>

#include "common/bytes.h"

namespace coload::registry {
namespace {

std::string stub_name(const void* host_stub) {
  return "host stub " + detail::hex(reinterpret_cast<std::uintptr_t>(host_stub));
}

}  // namespace

Expected<void> HostStubs::add(const void* host_stub, BinaryHandle binary, std::string_view kernel) {
  std::unique_lock lock(mutex_);
  auto [it, added] = stubs_.try_emplace(host_stub);
  Record& record = it->second;
  if (added) {
    record.kernel = kernel;
    record.binaries.push_back(binary);
    record.generation = next_generation_++;
    record.found = std::make_unique<std::atomic<const LoadedKernel*>[]>(devices_);
    for (std::size_t i = 0; i < devices_; ++i) record.found[i].store(nullptr, std::memory_order_relaxed);
    by_binary_[binary.value].push_back(host_stub);
    return {};
  }
  if (record.kernel != kernel) {
    return Error(ErrorKind::Ambiguous, stub_name(host_stub) + " already stands for kernel \"" + record.kernel +
                                           "\" (registered by binary " + std::to_string(record.binaries.front().value) +
                                           "); not \"" + std::string(kernel) + "\" of binary " +
                                           std::to_string(binary.value))
        .at_field("device_name", std::nullopt);
  }
  const bool known = std::ranges::any_of(record.binaries, [&](BinaryHandle b) { return b.value == binary.value; });
  if (known) return {};
  // Another translation unit's instantiation of the same template: it may fit
  // a device better than the kernel a lookup already resolved to.
  record.binaries.push_back(binary);
  clear_found(record);
  by_binary_[binary.value].push_back(host_stub);
  return {};
}

Expected<HostStubs::Stub> HostStubs::find(const void* host_stub) const {
  std::shared_lock lock(mutex_);
  auto it = stubs_.find(host_stub);
  if (it == stubs_.end()) return Error(ErrorKind::NotFound, "no kernel is registered for " + stub_name(host_stub));
  return Stub{it->second.kernel, it->second.binaries, it->second.generation};
}

void HostStubs::remember(const void* host_stub, std::uint64_t generation, std::size_t device,
                         const LoadedKernel* kernel) {
  std::shared_lock lock(mutex_);
  auto it = stubs_.find(host_stub);
  if (it == stubs_.end() || it->second.generation != generation || device >= devices_) return;
  it->second.found[device].store(kernel, std::memory_order_release);
}

void HostStubs::clear_found(Record& record) {
  record.generation = next_generation_++;
  for (std::size_t i = 0; i < devices_; ++i) record.found[i].store(nullptr, std::memory_order_relaxed);
}

std::vector<std::string> HostStubs::kernels_of(BinaryHandle binary) const {
  std::shared_lock lock(mutex_);
  std::vector<std::string> kernels;
  auto registered = by_binary_.find(binary.value);
  if (registered == by_binary_.end()) return kernels;
  for (const void* host_stub : registered->second) {
    if (auto it = stubs_.find(host_stub); it != stubs_.end()) kernels.push_back(it->second.kernel);
  }
  return kernels;
}

void HostStubs::forget(BinaryHandle binary) {
  std::unique_lock lock(mutex_);
  auto registered = by_binary_.find(binary.value);
  if (registered == by_binary_.end()) return;
  for (const void* host_stub : registered->second) {
    auto it = stubs_.find(host_stub);
    if (it == stubs_.end()) continue;
    Record& record = it->second;
    std::erase_if(record.binaries, [&](BinaryHandle b) { return b.value == binary.value; });
    if (record.binaries.empty()) {
      stubs_.erase(it);
    } else {
      clear_found(record);
    }
  }
  by_binary_.erase(registered);
}

}  // namespace coload::registry
