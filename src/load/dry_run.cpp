// The dry-run runtime: loads nothing. load() admits the code object
// (coload::admit, the registry's policy) and hands back every metadata kernel with handle 0 and
// the sizes the metadata declares. What tools, CI and machines without an AMD
// GPU use in place of HSA or HIP.
#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "coload/runtime.h"
#include "coload/validate.h"
#include "common/try.h"
#include "load/loaded_module.h"

namespace coload {
namespace {

class DryRunModule final : public LoadedModule {
 public:
  DryRunModule(CodeObject code_object, std::vector<LoadedKernel> kernels, std::shared_ptr<const void> owner)
      : code_object_(std::move(code_object)), kernels_(std::move(kernels)), owner_(std::move(owner)) {}

  const CodeObject& code_object() const override { return code_object_; }
  std::span<const LoadedKernel> kernels() const override { return kernels_; }
  /// From the symbol table: the variable's st_size, address 0 (nothing is placed).
  Expected<LoadedGlobal> global(std::string_view name) const override {
    const Variable* variable = code_object_.find_variable(name);
    if (!variable) return global_not_found(code_object_, name, "dry-run: no such variable symbol");
    return LoadedGlobal{.address = 0, .size = variable->size};
  }

 private:
  CodeObject code_object_;
  std::vector<LoadedKernel> kernels_;
  std::shared_ptr<const void> owner_;  // what a real runtime would keep alive
};

class DryRunRuntime final : public Runtime {
 public:
  explicit DryRunRuntime(std::vector<Device> devices) : devices_(std::move(devices)) {}

  std::string_view name() const override { return "dry-run"; }
  std::span<const Device> devices() const override { return devices_; }

  Expected<std::unique_ptr<LoadedModule>> load(std::size_t device, const Image& image,
                                               const CodeObject& code_object) override {
    if (device >= devices_.size()) {
      return Error(ErrorKind::InvalidArgument, "dry-run: device " + std::to_string(device) + " out of range (" +
                                                   std::to_string(devices_.size()) + " devices)");
    }
    const Device& target = devices_[device];
    const std::string what = "dry-run: code object for " + code_object.target().target.str() + " on device " +
                             std::to_string(device) + " (" + target.str() + ")";
    COLOAD_RETURN_IF_ERROR(admit(code_object, target, what));
    // A kernel without a descriptor is what a real runtime's symbol probe refuses.
    for (const Kernel& kernel : code_object.kernels()) {
      if (kernel.descriptor) continue;
      return Error(ErrorKind::NotFound,
                   what + ": kernel \"" + kernel.name + "\": symbol " + kernel.symbol + " is not in the code object");
    }
    std::vector<LoadedKernel> kernels;
    kernels.reserve(code_object.kernels().size());
    for (const Kernel& kernel : code_object.kernels()) kernels.push_back(loaded_kernel(kernel, 0));
    return std::unique_ptr<LoadedModule>(std::make_unique<DryRunModule>(code_object, std::move(kernels), image.owner));
  }

 private:
  std::vector<Device> devices_;
};

}  // namespace

std::unique_ptr<Runtime> open_dry_run_runtime(std::vector<Device> devices) {
  return std::make_unique<DryRunRuntime>(std::move(devices));
}

}  // namespace coload
