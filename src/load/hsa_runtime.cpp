// load/hsa_runtime.cpp: the HSA (ROCr) runtime, opened with dlopen at run time:
// code objects loaded into executables, kernels and variables looked up.
// The library and its call wrapper are hsa_library.h's; the devices are
// hsa_agents.cpp's. Sequence and statuses: docs/loading.md.
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "coload/runtime.h"
#include "common/bytes.h"
#include "common/try.h"
#include "load/hsa_library.h"
#include "load/loaded_module.h"
#include "load/process_exit.h"
#include "target/elf_target.h"

namespace coload {
namespace {

using hsa::call;
using hsa::HsaLibrary;
using hsa::symbol_info;

/// An hsa_code_object_reader_t that is destroyed with its owner.
class Reader {
 public:
  Reader(std::shared_ptr<const HsaLibrary> library, hsa_code_object_reader_t handle)
      : library_(std::move(library)), handle_(handle) {}
  Reader(Reader&& other) noexcept : library_(std::move(other.library_)), handle_(other.handle_) {}
  Reader& operator=(Reader&&) = delete;
  ~Reader() {
    if (library_ && !detail::process_exiting()) library_->api().hsa_code_object_reader_destroy(handle_);
  }
  hsa_code_object_reader_t get() const { return handle_; }

 private:
  std::shared_ptr<const HsaLibrary> library_;
  hsa_code_object_reader_t handle_;
};

/// An hsa_executable_t that is destroyed with its owner.
class Executable {
 public:
  Executable(std::shared_ptr<const HsaLibrary> library, hsa_executable_t handle)
      : library_(std::move(library)), handle_(handle) {}
  Executable(Executable&& other) noexcept : library_(std::move(other.library_)), handle_(other.handle_) {}
  Executable& operator=(Executable&&) = delete;
  ~Executable() {
    if (library_ && !detail::process_exiting()) library_->api().hsa_executable_destroy(handle_);
  }
  hsa_executable_t get() const { return handle_; }

 private:
  std::shared_ptr<const HsaLibrary> library_;
  hsa_executable_t handle_;
};

/// A code object loaded into one executable. Members are destroyed in
/// reverse order: executable, reader, then the bytes' owner, then (with the
/// last reference) hsa_shut_down (ROCr stays mapped).
class HsaModule final : public LoadedModule {
 public:
  HsaModule(std::shared_ptr<const HsaLibrary> library, std::shared_ptr<const void> owner, CodeObject code_object,
            std::vector<LoadedKernel> kernels, hsa_agent_t agent, Reader reader, Executable executable)
      : library_(std::move(library)),
        owner_(std::move(owner)),
        code_object_(std::move(code_object)),
        kernels_(std::move(kernels)),
        agent_(agent),
        reader_(std::move(reader)),
        executable_(std::move(executable)) {}

  const CodeObject& code_object() const override { return code_object_; }
  std::span<const LoadedKernel> kernels() const override { return kernels_; }

  /// The executable's agent symbol `name`, which must be a variable (a
  /// kernel's symbol is `<name>.kd` and of kind KERNEL).
  Expected<LoadedGlobal> global(std::string_view name) const override {
    const HsaLibrary& library = *library_;
    const std::string text(name);
    hsa_executable_symbol_t symbol{};
    auto found =
        COLOAD_HSA_CALL(library, hsa_executable_get_symbol_by_name, executable_.get(), text.c_str(), &agent_, &symbol);
    if (!found && found.error().kind() == ErrorKind::NotFound) {
      return global_not_found(code_object_, name, found.error().message());
    }
    if (!found) return std::move(found).error().with_context("global variable \"" + text + "\"");
    auto type = symbol_info<std::uint32_t>(library, symbol, HSA_EXECUTABLE_SYMBOL_INFO_TYPE, "TYPE");
    if (!type) return std::move(type).error().with_context("global variable \"" + text + "\"");
    if (*type != HSA_SYMBOL_KIND_VARIABLE) {
      return global_not_found(code_object_, name,
                              "HSA_EXECUTABLE_SYMBOL_INFO_TYPE is " + std::to_string(*type) +
                                  ", not HSA_SYMBOL_KIND_VARIABLE (" + std::to_string(HSA_SYMBOL_KIND_VARIABLE) + ")");
    }
    auto address =
        symbol_info<std::uint64_t>(library, symbol, HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS, "VARIABLE_ADDRESS");
    if (!address) return std::move(address).error().with_context("global variable \"" + text + "\"");
    auto size = symbol_info<std::uint32_t>(library, symbol, HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SIZE, "VARIABLE_SIZE");
    if (!size) return std::move(size).error().with_context("global variable \"" + text + "\"");
    return LoadedGlobal{.address = *address, .size = *size};
  }

 private:
  std::shared_ptr<const HsaLibrary> library_;
  std::shared_ptr<const void> owner_;
  CodeObject code_object_;
  std::vector<LoadedKernel> kernels_;
  hsa_agent_t agent_;
  Reader reader_;
  Executable executable_;
};

class HsaRuntime final : public Runtime {
 public:
  HsaRuntime(std::shared_ptr<const HsaLibrary> library, hsa::AgentDevices found)
      : library_(std::move(library)),
        agents_(std::move(found.agents)),
        devices_(std::move(found.devices)),
        warnings_(std::move(found.warnings)) {}

  std::string_view name() const override { return "hsa"; }
  std::span<const Device> devices() const override { return devices_; }
  std::span<const std::string> warnings() const override { return warnings_; }

  // Reads only what the constructor set; ROCr's calls are thread-safe.
  Expected<std::unique_ptr<LoadedModule>> load(std::size_t device, const Image& image,
                                               const CodeObject& code_object) override {
    if (device >= devices_.size()) {
      return Error(ErrorKind::InvalidArgument, "HSA device " + std::to_string(device) + " does not exist (" +
                                                   std::to_string(devices_.size()) + " GPU agents)");
    }
    auto module = load_on(agents_[device], devices_[device], image, code_object);
    if (!module) {
      return std::move(module).error().with_context("HSA device " + std::to_string(device) + " (" +
                                                    devices_[device].str() + ")");
    }
    return module;
  }

 private:
  Expected<std::unique_ptr<LoadedModule>> load_on(hsa_agent_t agent, const Device& device, const Image& image,
                                                  const CodeObject& code_object) const {
    const HsaLibrary& library = *library_;
    if (image.bytes.empty()) return Error(ErrorKind::InvalidArgument, "the code object image is empty");
    COLOAD_RETURN_IF_ERROR(image_holds_its_elf(image, code_object));

    hsa_code_object_reader_t reader_handle{};
    auto created_reader = COLOAD_HSA_CALL(library, hsa_code_object_reader_create_from_memory, image.bytes.data(),
                                          image.bytes.size(), &reader_handle);
    COLOAD_RETURN_IF_ERROR(created_reader);
    Reader reader(library_, reader_handle);

    hsa_executable_t executable_handle{};
    auto created = COLOAD_HSA_CALL(library, hsa_executable_create_alt, HSA_PROFILE_FULL,
                                   HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT, nullptr, &executable_handle);
    COLOAD_RETURN_IF_ERROR(created);
    Executable executable(library_, executable_handle);  // destroyed before `reader` on every path

    hsa_loaded_code_object_t loaded{};
    hsa_status_t status =
        library.api().hsa_executable_load_agent_code_object(executable.get(), agent, reader.get(), nullptr, &loaded);
    if (status != HSA_STATUS_SUCCESS) return load_error(status, device, code_object);
    auto frozen = COLOAD_HSA_CALL(library, hsa_executable_freeze, executable.get(), nullptr);
    COLOAD_RETURN_IF_ERROR(frozen);

    std::vector<LoadedKernel> kernels;
    kernels.reserve(code_object.kernels().size());
    for (const Kernel& kernel : code_object.kernels()) {
      auto loaded_kernel = lookup(executable.get(), agent, kernel);
      if (!loaded_kernel) {
        return std::move(loaded_kernel)
            .error()
            .with_context("kernel '" + kernel.name + "' (symbol " + kernel.symbol + ")");
      }
      kernels.push_back(std::move(*loaded_kernel));
    }
    return std::unique_ptr<LoadedModule>(new HsaModule(library_, image.owner, code_object, std::move(kernels), agent,
                                                       std::move(reader), std::move(executable)));
  }

  /// ROCr ignores the size it is given: its loader reads the ELF as far as
  /// the ELF's own headers say (ElfSize, docs/loading.md "What the runtimes
  /// check themselves"). So the image must hold the code object coload read
  /// and every byte its own headers reach. Errors: OutOfBounds (or the ELF
  /// header checks' Malformed / Overflow) naming the field, offset and value.
  static Expected<void> image_holds_its_elf(const Image& image, const CodeObject& code_object) {
    const std::uint64_t size = image.bytes.size();
    if (size < code_object.size()) {
      return Error(ErrorKind::OutOfBounds, "HSA load: the image has " + detail::hex(size) +
                                               " bytes but the code object reaches " + detail::hex(code_object.size()))
          .at_field("image size", std::nullopt, size, code_object.size());
    }
    auto extent = detail::code_object_size(image.bytes);
    if (!extent) {
      return std::move(extent).error().with_context("HSA load: the image's ELF headers reach past its " +
                                                    detail::hex(size) + " bytes, which ROCr would read");
    }
    return {};
  }

  /// hsa_executable_load_agent_code_object's refusal. What the release
  /// refuses is UnsupportedVersion naming it (docs/loading.md, "HSA
  /// releases"): generic code on a release that loads none (ROCr 1.14 answers
  /// INVALID_ISA_NAME for the generic names its loader knows and
  /// INVALID_CODE_OBJECT for gfx9-4-generic and gfx12-generic; 1.13 and older
  /// INVALID_CODE_OBJECT for every one), any ISA name it does not know, or a
  /// version outside what coload offers it (INVALID_CODE_OBJECT is also
  /// ROCr's answer to a bad object, so only these are the release's fault).
  Error load_error(hsa_status_t status, const Device& device, const CodeObject& code_object) const {
    Error error = library_->error("hsa_executable_load_agent_code_object", status);
    const CodeObjectTarget& target = code_object.target();
    const std::string what = "code object for " + target.target.str();
    const bool refused_object =
        status == HSA_STATUS_ERROR_INVALID_ISA_NAME || status == HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
    const bool generic = target.target.processor && target.target.processor->is_generic;
    if (refused_object && generic && !device.loads_generic) {
      return Error(ErrorKind::UnsupportedVersion, error.message())
          .with_context(what + ": " + device.runtime_name() + " does not load generic code objects");
    }
    if (status == HSA_STATUS_ERROR_INVALID_ISA_NAME) {
      return Error(ErrorKind::UnsupportedVersion, error.message())
          .with_context(what + ": " + device.runtime_name() + " does not know its ISA name");
    }
    if (status == HSA_STATUS_ERROR_INVALID_CODE_OBJECT &&
        !device.accepts_code_object_version(target.code_object_version)) {
      return Error(ErrorKind::UnsupportedVersion, error.message())
          .with_context(what + ": " + device.runtime_name() + " refused code object version " +
                        std::to_string(target.code_object_version) + " (coload offers it versions " +
                        device.code_object_versions_text() + ")");
    }
    if (error.kind() == ErrorKind::InvalidArgument) return error.with_context(what + " does not run on this agent");
    return error;
  }

  /// The registration probe: the metadata's `.symbol` must be an agent kernel
  /// symbol whose descriptor-derived sizes agree with the metadata.
  Expected<LoadedKernel> lookup(hsa_executable_t executable, hsa_agent_t agent, const Kernel& kernel) const {
    const HsaLibrary& library = *library_;
    hsa_executable_symbol_t symbol{};
    auto found =
        COLOAD_HSA_CALL(library, hsa_executable_get_symbol_by_name, executable, kernel.symbol.c_str(), &agent, &symbol);
    COLOAD_RETURN_IF_ERROR(found);

    auto type = symbol_info<std::uint32_t>(library, symbol, HSA_EXECUTABLE_SYMBOL_INFO_TYPE, "TYPE");
    COLOAD_RETURN_IF_ERROR(type);
    if (*type != HSA_SYMBOL_KIND_KERNEL) {
      return Error(ErrorKind::Malformed,
                   "HSA_EXECUTABLE_SYMBOL_INFO_TYPE is " + std::to_string(*type) + ", not HSA_SYMBOL_KIND_KERNEL");
    }
    // The handle and the sizes are ROCr's answers (two of the sizes are
    // checked against the metadata below).
    LoadedKernel loaded = loaded_kernel(kernel, 0);
#define COLOAD_SYMBOL_INFO(field, type, attribute)                                                       \
  {                                                                                                      \
    auto value = symbol_info<type>(library, symbol, HSA_EXECUTABLE_SYMBOL_INFO_##attribute, #attribute); \
    COLOAD_RETURN_IF_ERROR(value);                                                                       \
    loaded.field = *value;                                                                               \
  }
    COLOAD_SYMBOL_INFO(handle, std::uint64_t, KERNEL_OBJECT)
    COLOAD_SYMBOL_INFO(kernarg_segment_size, std::uint32_t, KERNEL_KERNARG_SEGMENT_SIZE)
    COLOAD_SYMBOL_INFO(kernarg_segment_align, std::uint32_t, KERNEL_KERNARG_SEGMENT_ALIGNMENT)
    COLOAD_SYMBOL_INFO(group_segment_size, std::uint32_t, KERNEL_GROUP_SEGMENT_SIZE)
    COLOAD_SYMBOL_INFO(private_segment_size, std::uint32_t, KERNEL_PRIVATE_SEGMENT_SIZE)
#undef COLOAD_SYMBOL_INFO
    // From the descriptor coload parsed, not KERNEL_DYNAMIC_CALLSTACK: ROCr
    // 1.5 (ROCm 5.0 to 5.2) answers false for every kernel and reads the
    // descriptor's bit only from 1.7 (ROCm 5.3), so the descriptor is the one
    // answer every release agrees with (docs/loading.md, "HSA releases"); the
    // metadata's flag only where no descriptor was parsed.
    loaded.dynamic_callstack =
        kernel.descriptor ? kernel.descriptor->uses_dynamic_stack() : kernel.uses_dynamic_stack.value_or(false);
    if (loaded.handle == 0) return Error(ErrorKind::Malformed, "HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT is 0");

    // ROCr takes these from the descriptor; the metadata must agree.
    auto check = [&](std::string_view attribute, std::uint32_t from_runtime, std::string_view key,
                     std::uint32_t from_metadata) -> Expected<void> {
      if (from_runtime == from_metadata) return {};
      return Error(ErrorKind::SizeMismatch, "HSA_EXECUTABLE_SYMBOL_INFO_" + std::string(attribute) +
                                                " (from the kernel descriptor) is " + std::to_string(from_runtime) +
                                                " but the metadata's " + std::string(key) + " is " +
                                                std::to_string(from_metadata));
    };
    COLOAD_RETURN_IF_ERROR(check("KERNEL_KERNARG_SEGMENT_SIZE", loaded.kernarg_segment_size, ".kernarg_segment_size",
                                 kernel.kernarg_segment_size));
    COLOAD_RETURN_IF_ERROR(check("KERNEL_GROUP_SEGMENT_SIZE", loaded.group_segment_size, ".group_segment_fixed_size",
                                 kernel.group_segment_fixed_size));
    return loaded;
  }

  std::shared_ptr<const HsaLibrary> library_;
  std::vector<hsa_agent_t> agents_;
  std::vector<Device> devices_;
  std::vector<std::string> warnings_;
};

}  // namespace

Expected<std::unique_ptr<Runtime>> open_hsa_runtime(const HsaOptions& options) {
  auto opened = HsaLibrary::open(options.library);
  COLOAD_RETURN_IF_ERROR(opened);
  std::shared_ptr<HsaLibrary> library = std::move(*opened);
  // A failed hsa_init holds no reference: the library is closed without hsa_shut_down.
  COLOAD_RETURN_IF_ERROR(library->init());
  auto found = hsa::agent_devices(*library, options.agents);
  COLOAD_RETURN_IF_ERROR(found);
  return std::unique_ptr<Runtime>(new HsaRuntime(std::move(library), std::move(*found)));
}

}  // namespace coload
