// Test support for the registry tests: a Runtime that wraps the dry-run one
// and counts loads per device, live modules and the images it was handed.
#pragma once

#include <atomic>
#include <cstddef>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "coload/device.h"
#include "coload/runtime.h"
#include "loaded_wrappers.h"  // file_bytes

namespace coload::testing {

inline std::string fixture(const std::string& relative) { return std::string(COLOAD_FIXTURE_DIR) + "/" + relative; }

/// Devices from specs; a bad spec is a test bug (empty result).
inline std::vector<Device> dry_run_devices(std::initializer_list<const char*> specs) {
  std::vector<Device> devices;
  for (const char* spec : specs) {
    auto device = device_from_spec(spec);
    if (device) devices.push_back(*device);
  }
  return devices;
}

/// The dry-run runtime, counted. Thread-safe.
class CountingRuntime final : public Runtime {
 public:
  explicit CountingRuntime(std::vector<Device> devices)
      : inner_(open_dry_run_runtime(devices)), loads_(devices.size()) {
    for (auto& count : loads_) count.store(0);
  }

  std::string_view name() const override { return inner_->name(); }
  std::span<const Device> devices() const override { return inner_->devices(); }

  Expected<std::unique_ptr<LoadedModule>> load(std::size_t device, const Image& image,
                                               const CodeObject& code_object) override {
    if (device < loads_.size()) loads_[device].fetch_add(1);
    {
      std::lock_guard lock(mutex_);
      images_.push_back(image.bytes);
      owners_.push_back(image.owner);
    }
    auto module = inner_->load(device, image, code_object);
    if (!module) return std::move(module).error();
    return std::unique_ptr<LoadedModule>(std::make_unique<Module>(std::move(*module), live_));
  }

  std::size_t loads(std::size_t device) const { return loads_.at(device).load(); }
  std::size_t total_loads() const {
    std::size_t total = 0;
    for (const auto& count : loads_) total += count.load();
    return total;
  }
  int live_modules() const { return live_.load(); }
  std::vector<std::span<const std::byte>> images() const {
    std::lock_guard lock(mutex_);
    return images_;
  }
  std::vector<std::weak_ptr<const void>> owners() const {
    std::lock_guard lock(mutex_);
    return owners_;
  }

 private:
  class Module final : public LoadedModule {
   public:
    Module(std::unique_ptr<LoadedModule> inner, std::atomic<int>& live) : inner_(std::move(inner)), live_(live) {
      live_.fetch_add(1);
    }
    ~Module() override { live_.fetch_sub(1); }
    const CodeObject& code_object() const override { return inner_->code_object(); }
    std::span<const LoadedKernel> kernels() const override { return inner_->kernels(); }
    Expected<LoadedGlobal> global(std::string_view name) const override { return inner_->global(name); }

   private:
    std::unique_ptr<LoadedModule> inner_;
    std::atomic<int>& live_;
  };

  std::unique_ptr<Runtime> inner_;
  std::vector<std::atomic<std::size_t>> loads_;
  std::atomic<int> live_{0};
  mutable std::mutex mutex_;
  std::vector<std::span<const std::byte>> images_;
  std::vector<std::weak_ptr<const void>> owners_;
};

}  // namespace coload::testing
