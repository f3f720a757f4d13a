// The HIP backend: devices and modules through libamdhip64 (opened and
// checked in load/hip_library.cpp), every call through one status check that
// names the HIP function, modules as RAII handles. docs/loading.md has the
// call sequence and what HIP 5.2.3 does without a GPU.
//
// HIP 5, 6 and 7 in one build (docs/loading.md, "HIP releases"): the only
// struct coload reads, hipDeviceProp_t, changed layout in HIP 6, where
// hipGetDeviceProperties became a macro for hipGetDevicePropertiesR0600 and
// the plain export kept the HIP 5 layout. So the properties are read into a
// byte buffer through the entry point of the library's major, at the
// offset of gcnArchName in that layout, defined here from the public
// headers; the attributes coload asks for kept their numbers (74, 87) in
// every header from 5.2.3 to 6.x.
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "coload/runtime.h"
#include "common/bytes.h"
#include "common/try.h"
#include "io/process_maps.h"
#include "load/hip_library.h"
#include "load/loaded_module.h"
#include "load/process_exit.h"

namespace coload {
namespace {

using detail::hex;
using hip::check;
using hip::HipApi;
using hip::HipLibrary;
using hip::major_of;
using hip::minor_of;

/// Where gcnArchName (char[256]) lies in each hipDeviceProp_t layout, and
/// how long the struct is (HIP 5.2.3's hip_runtime_api.h; HIP 6's
/// hip_runtime_api.h for R0600, hip_deprecated.h for R0000).
struct PropertiesLayout {
  const char* entry_point;
  std::size_t arch_offset;
  std::size_t size;
};
constexpr PropertiesLayout kR0000{"hipGetDeviceProperties", 396, 792};
constexpr PropertiesLayout kR0600{"hipGetDevicePropertiesR0600", 1160, 1472};
constexpr std::size_t kArchNameBytes = 256;
static_assert(HIP_VERSION_MAJOR != 5 || (offsetof(hipDeviceProp_t, gcnArchName) == kR0000.arch_offset &&
                                         sizeof(hipDeviceProp_t) == kR0000.size),
              "the HIP 5 headers coload builds against disagree with the R0000 layout");
static_assert(hipDeviceAttributeMaxSharedMemoryPerBlock == 74 && hipDeviceAttributeWarpSize == 87,
              "hipDeviceAttribute_t numbers as HIP 5.2.3 to 6.x number them");

/// One device's properties, in a buffer larger than either layout so that a
/// library writing a slightly longer struct stays inside.
struct PropertiesBuffer {
  alignas(alignof(std::max_align_t)) unsigned char bytes[4096];
};

Expected<int> attribute(const HipLibrary& library, hipDeviceAttribute_t attribute, std::string_view name, int device) {
  int value = 0;
  auto ok = check(library.api, library.api.device_get_attribute(&value, attribute, device), "hipDeviceGetAttribute",
                  "for " + std::string(name) + " of device " + std::to_string(device));
  COLOAD_RETURN_IF_ERROR(ok);
  return value;
}

/// Sets `*unreconciled` when HIP answered but coload cannot square the answer
/// with its tables (an unknown gcnArchName, an impossible size): that device
/// alone can be left out, where a failing HIP call fails them all.
Expected<Device> describe_device(const HipLibrary& library, int index, bool* unreconciled) {
  std::string where = "device " + std::to_string(index);
  // HIP 6+ through the R0600 entry point; HIP 5 (which has none) through the plain one.
  const bool r0600 = library.api.get_device_properties_r0600 &&
                     (major_of(library.version) >= 6 || !library.api.get_device_properties_r0000);
  const PropertiesLayout& layout = r0600 ? kR0600 : kR0000;
  auto buffer = std::make_unique<PropertiesBuffer>();  // zeroed
  // The buffer is larger than either struct and suitably aligned; HIP writes only its layout's bytes.
  const hipError_t status =
      r0600 ? library.api.get_device_properties_r0600(reinterpret_cast<hipDeviceProp_tR0600*>(buffer->bytes), index)
            : library.api.get_device_properties_r0000(reinterpret_cast<hipDeviceProp_t*>(buffer->bytes), index);
  COLOAD_RETURN_IF_ERROR(check(library.api, status, layout.entry_point, "for " + where));
  *unreconciled = true;  // past HIP's answer: what follows judges it
  const char* arch = reinterpret_cast<const char*>(buffer->bytes + layout.arch_offset);
  std::size_t length = strnlen(arch, kArchNameBytes);
  if (length == kArchNameBytes) {
    return Error(ErrorKind::Malformed, "HIP " + std::string(layout.entry_point) + ": gcnArchName of " + where +
                                           " is not terminated within " + std::to_string(length) + " bytes");
  }
  std::string_view arch_name(arch, length);
  auto target = device_target_from_runtime(arch_name);
  if (!target) {
    Error error = std::move(target).error();
    ErrorKind kind = error.kind() == ErrorKind::InvalidArgument ? ErrorKind::Malformed : error.kind();
    return Error(kind, "HIP " + std::string(layout.entry_point) + ": gcnArchName '" + std::string(arch_name) + "' of " +
                           where + ": " + error.message());
  }
  *unreconciled = false;
  auto lds =
      attribute(library, hipDeviceAttributeMaxSharedMemoryPerBlock, "hipDeviceAttributeMaxSharedMemoryPerBlock", index);
  COLOAD_RETURN_IF_ERROR(lds);
  auto warp = attribute(library, hipDeviceAttributeWarpSize, "hipDeviceAttributeWarpSize", index);
  COLOAD_RETURN_IF_ERROR(warp);
  *unreconciled = true;
  if (*lds < 0) {
    return Error(ErrorKind::Malformed, "HIP hipDeviceGetAttribute: hipDeviceAttributeMaxSharedMemoryPerBlock of " +
                                           where + " is negative (" + std::to_string(*lds) + ")");
  }
  if (*warp != 32 && *warp != 64) {
    return Error(ErrorKind::Malformed, "HIP hipDeviceGetAttribute: hipDeviceAttributeWarpSize of " + where + " is " +
                                           std::to_string(*warp) + ", not 32 or 64");
  }
  *unreconciled = false;
  Device device;
  device.target = *target;
  device.lds_bytes = static_cast<std::uint64_t>(*lds);
  // The runtime reports its default wave size; the processor may run both.
  device.wave_sizes = target->processor->wave_sizes | (*warp == 32 ? kWave32 : kWave64);
  device.code_object_versions = hip::code_object_versions_of(library.version);
  device.loads_generic = hip::loads_generic(library.version);
  device.runtime_release = library.release();
  return device;
}

/// A hipModule_t, unloaded when destroyed. Empty after a move or a failed load.
class ModuleHandle {
 public:
  ModuleHandle() = default;
  ModuleHandle(const HipApi& api, hipModule_t module) : api_(&api), module_(module) {}
  ModuleHandle(ModuleHandle&& other) noexcept : api_(other.api_), module_(std::exchange(other.module_, nullptr)) {}
  ModuleHandle& operator=(ModuleHandle&&) = delete;
  ~ModuleHandle() {
    // Nothing to report a failure to; HIP fails here only for a bad handle.
    // At exit HIP may already be torn down: the exiting process releases it.
    if (module_ && !detail::process_exiting()) static_cast<void>(api_->module_unload(module_));
  }
  hipModule_t get() const { return module_; }

 private:
  const HipApi* api_ = nullptr;
  hipModule_t module_ = nullptr;
};

/// Sets the calling thread's current HIP device and puts the previous one
/// back when it goes out of scope (HIP's current device is per thread).
class CurrentDevice {
 public:
  static Expected<CurrentDevice> select(const HipApi& api, int device) {
    int previous = 0;
    COLOAD_RETURN_IF_ERROR(check(api, api.get_device(&previous), "hipGetDevice", ""));
    COLOAD_RETURN_IF_ERROR(check(api, api.set_device(device), "hipSetDevice", "to device " + std::to_string(device)));
    return CurrentDevice(api, previous, device);
  }
  CurrentDevice(CurrentDevice&& other) noexcept
      : api_(other.api_), previous_(other.previous_), restore_(std::exchange(other.restore_, false)) {}
  CurrentDevice& operator=(CurrentDevice&&) = delete;
  ~CurrentDevice() {
    // Best effort: a destructor has nowhere to report to.
    if (restore_) static_cast<void>(api_->set_device(previous_));
  }

 private:
  CurrentDevice(const HipApi& api, int previous, int selected)
      : api_(&api), previous_(previous), restore_(previous != selected) {}

  const HipApi* api_;
  int previous_;
  bool restore_;
};

/// The bytes hipModuleLoadData is handed, and what keeps them alive.
struct HipBytes {
  const void* data;
  std::shared_ptr<const void> owner;
};

/// Whether HIP `version` can reopen a code object's file by path: from 5.5,
/// whose comgr unbundler (HIP_USE_RUNTIME_UNBUNDLER=0; the default from 6.0,
/// the only path in 7.x) looks the bytes up in /proc/self/maps.
bool reopens_mapped_files(int version) {
  return major_of(version) > 5 || (major_of(version) == 5 && minor_of(version) >= 5);
}

/// HIP 5.5+ may look the pointer up in /proc/self/maps and, when it lies in
/// a file mapping, reopen that file by path (CLR hip_fatbin.cpp,
/// ExtractFatBinaryUsingCOMGR: Os::FindFileNameFromAddress, then
/// GetUniqueFileHandle): a path with a space, or a file renamed or deleted
/// since it was mapped, fails as hipErrorFileNotFound. Such bytes go to HIP
/// as a copy of the code object in an anonymous mapping of their own, owned
/// by the module and unmapped after hipModuleUnload: not heap memory, which
/// glibc.malloc.hugetlb can place in a /anon_hugepage mapping HIP would take
/// for a file (docs/loading.md, "HIP releases"). Anonymous bytes (a decoded
/// CCOB entry, a caller's buffer) go as they are. When the maps cannot be
/// read HIP cannot read them either, and takes the bytes as memory. Errors:
/// LimitExceeded when the copy cannot be mapped.
Expected<HipBytes> bytes_for_hip(const HipLibrary& library, const Image& image, std::size_t size) {
  HipBytes given{image.bytes.data(), image.owner};
  if (!reopens_mapped_files(library.version)) return given;  // HIP 5.0 to 5.4 unbundle from memory
  auto file = detail::mapped_file_at(image.bytes.data());
  if (!file || !*file) return given;
  // Populated at once: one call instead of a page fault per page as the
  // copy is written (docs/loading.md, "HIP releases": the cost).
  void* copy = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (copy == MAP_FAILED) {
    const int error = errno;
    return Error(ErrorKind::LimitExceeded, "HIP load: cannot map " + hex(size) +
                                               " bytes for a copy of the code object in '" + **file +
                                               "': " + std::strerror(error));
  }
  std::memcpy(copy, image.bytes.data(), size);
  std::shared_ptr<const void> owner(copy, [size](const void* bytes) { munmap(const_cast<void*>(bytes), size); });
  return HipBytes{copy, std::move(owner)};
}

class HipModule final : public LoadedModule {
 public:
  HipModule(std::shared_ptr<const HipLibrary> library, std::shared_ptr<const void> owner, ModuleHandle module,
            int ordinal, CodeObject code_object, std::vector<LoadedKernel> kernels)
      : library_(std::move(library)),
        owner_(std::move(owner)),
        module_(std::move(module)),
        ordinal_(ordinal),
        code_object_(std::move(code_object)),
        kernels_(std::move(kernels)) {}

  const CodeObject& code_object() const override { return code_object_; }
  std::span<const LoadedKernel> kernels() const override { return kernels_; }

  /// hipModuleGetGlobal on the module's device (HIP answers for the calling
  /// thread's current device), asked only for a variable the code object
  /// defines: a miss asked of HIP would stay in the application's HIP error
  /// state (HIP 7 keeps every failure until hipGetLastError;
  /// docs/embedding.md, "HIP's error state").
  Expected<LoadedGlobal> global(std::string_view name) const override {
    if (!code_object_.find_variable(name)) return global_not_found(code_object_, name, "");
    const HipApi& api = library_->api;
    const std::string text(name);
    auto current = CurrentDevice::select(api, ordinal_);
    COLOAD_RETURN_IF_ERROR(current);
    hipDeviceptr_t pointer = nullptr;
    std::size_t bytes = 0;
    auto found = check(api, api.module_get_global(&pointer, &bytes, module_.get(), text.c_str()), "hipModuleGetGlobal",
                       "for \"" + text + "\" on HIP device " + std::to_string(ordinal_));
    if (!found && found.error().kind() == ErrorKind::NotFound) {
      return global_not_found(code_object_, name, found.error().message());
    }
    COLOAD_RETURN_IF_ERROR(found);
    return LoadedGlobal{.address = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(pointer)),
                        .size = bytes};
  }

 private:
  // Destroyed bottom-up: the module is unloaded before the bytes' owner and
  // the library are released.
  std::shared_ptr<const HipLibrary> library_;
  std::shared_ptr<const void> owner_;
  ModuleHandle module_;
  int ordinal_;
  CodeObject code_object_;
  std::vector<LoadedKernel> kernels_;
};

class HipRuntime final : public Runtime {
 public:
  HipRuntime(std::shared_ptr<const HipLibrary> library, std::vector<int> ordinals, std::vector<Device> devices,
             std::vector<std::string> warnings)
      : library_(std::move(library)),
        ordinals_(std::move(ordinals)),
        devices_(std::move(devices)),
        warnings_(std::move(warnings)) {}

  std::string_view name() const override { return "hip"; }
  std::span<const Device> devices() const override { return devices_; }
  std::span<const std::string> warnings() const override { return warnings_; }

  Expected<std::unique_ptr<LoadedModule>> load(std::size_t device, const Image& image,
                                               const CodeObject& code_object) override {
    const HipApi& api = library_->api;
    if (device >= devices_.size()) {
      return Error(ErrorKind::InvalidArgument, "HIP load: device " + std::to_string(device) + " does not exist (" +
                                                   std::to_string(devices_.size()) + " devices)");
    }
    // hipModuleLoadData takes no size: HIP reads as far as the ELF says, so
    // the bytes must hold every byte the code object's tables reach.
    if (image.bytes.empty() || image.bytes.size() < code_object.size()) {
      return Error(ErrorKind::OutOfBounds, "HIP load: the image has " + hex(image.bytes.size()) +
                                               " bytes but the code object reaches " + hex(code_object.size()));
    }
    const int ordinal = ordinals_[device];
    std::string where = "on device " + std::to_string(device) + " (" + devices_[device].str() +
                        (ordinal == static_cast<int>(device) ? "" : ", HIP ordinal " + std::to_string(ordinal)) + ")";
    // hipModuleGetFunction finds kernels by their STT_FUNC symbol: one the
    // code object lacks is refused here, not asked of HIP, where the miss
    // would stay in the caller's HIP error state (docs/embedding.md).
    for (const Kernel& kernel : code_object.kernels()) {
      if (!kernel.function_symbol) {
        return Error(ErrorKind::NotFound, "HIP load: kernel '" + kernel.name + "' " + where +
                                              " has no function symbol (STT_FUNC) of that name in the code object, "
                                              "which HIP's hipModuleGetFunction finds kernels by (not loaded)");
      }
    }
    auto current = CurrentDevice::select(api, ordinal);
    COLOAD_RETURN_IF_ERROR(current);

    auto bytes = bytes_for_hip(*library_, image, code_object.size());
    COLOAD_RETURN_IF_ERROR(bytes);
    hipModule_t raw = nullptr;
    if (auto ok = check(api, api.module_load_data(&raw, bytes->data), "hipModuleLoadData",
                        "for a code object of " + hex(image.bytes.size()) + " bytes " + where);
        !ok) {
      // A failed load leaves nothing loaded; should HIP hand a module back
      // anyway, it is unloaded here.
      ModuleHandle stray(api, raw);
      return std::move(ok).error();
    }
    ModuleHandle module(api, raw);
    if (!raw) {
      return Error(ErrorKind::Malformed, "HIP hipModuleLoadData succeeded but returned no module " + where);
    }

    // The registration probe: every kernel the metadata lists must resolve.
    std::vector<LoadedKernel> kernels;
    kernels.reserve(code_object.kernels().size());
    for (const Kernel& kernel : code_object.kernels()) {
      std::string what = "for kernel '" + kernel.name + "' " + where + " (the metadata lists it; module unloaded)";
      hipFunction_t function = nullptr;
      COLOAD_RETURN_IF_ERROR(check(api, api.module_get_function(&function, module.get(), kernel.name.c_str()),
                                   "hipModuleGetFunction", what));
      if (!function) {
        return Error(ErrorKind::NotFound, "HIP hipModuleGetFunction returned no function " + what);
      }
      kernels.push_back(loaded_kernel(kernel, static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(function))));
    }
    return std::unique_ptr<LoadedModule>(
        new HipModule(library_, bytes->owner, std::move(module), ordinal, code_object, std::move(kernels)));
  }

 private:
  std::shared_ptr<const HipLibrary> library_;
  std::vector<int> ordinals_;  ///< device i is HIP ordinal ordinals_[i]
  std::vector<Device> devices_;
  std::vector<std::string> warnings_;  ///< one per device left out
};

/// The HIP ordinals the runtime's devices are: `requested`, checked against
/// `count`, or every one.
Expected<std::vector<int>> ordinals(const std::optional<std::vector<int>>& requested, int count) {
  std::vector<int> chosen;
  if (!requested) {
    for (int ordinal = 0; ordinal < count; ++ordinal) chosen.push_back(ordinal);
    return chosen;
  }
  if (requested->empty()) return Error(ErrorKind::InvalidArgument, "the list of HIP devices is empty");
  for (std::size_t i = 0; i < requested->size(); ++i) {
    const int ordinal = (*requested)[i];
    const std::string where = "hip_devices[" + std::to_string(i) + "] = " + std::to_string(ordinal);
    if (ordinal < 0 || ordinal >= count) {
      return Error(ErrorKind::InvalidArgument, where + " is out of range: HIP hipGetDeviceCount reports " +
                                                   std::to_string(count) + " devices (ordinals 0 to " +
                                                   std::to_string(count - 1) + ")")
          .at_field("hip_devices[" + std::to_string(i) + "]", std::nullopt, static_cast<std::uint64_t>(ordinal),
                    static_cast<std::uint64_t>(count));
    }
    auto earlier = std::find(chosen.begin(), chosen.end(), ordinal);
    if (earlier != chosen.end()) {
      return Error(ErrorKind::InvalidArgument,
                   where + " repeats hip_devices[" + std::to_string(earlier - chosen.begin()) + "]")
          .at_field("hip_devices[" + std::to_string(i) + "]", std::nullopt, static_cast<std::uint64_t>(ordinal));
    }
    chosen.push_back(ordinal);
  }
  return chosen;
}

Expected<std::unique_ptr<Runtime>> open_devices(std::shared_ptr<const HipLibrary> library,
                                                const std::optional<std::vector<int>>& requested) {
  const HipApi& api = library->api;
  int count = 0;
  hipError_t status = api.get_device_count(&count);
  if (status == hipErrorNoDevice || (status == hipSuccess && count <= 0)) {
    std::string why = status == hipSuccess ? "HIP hipGetDeviceCount reports " + std::to_string(count) + " devices"
                                           : check(api, status, "hipGetDeviceCount", "").error().message();
    return Error(ErrorKind::NotFound,
                 "no AMD GPU: " + why + " (" + library->release() + " from '" + library->path + "')");
  }
  COLOAD_RETURN_IF_ERROR(check(api, status, "hipGetDeviceCount", ""));

  // A count far beyond any machine is a broken library, not a reason to allocate.
  constexpr int kMaxDevices = 1024;
  if (count > kMaxDevices) {
    return Error(ErrorKind::LimitExceeded, "HIP hipGetDeviceCount reports " + std::to_string(count) +
                                               " devices, above the limit of " + std::to_string(kMaxDevices));
  }
  auto chosen = ordinals(requested, count);
  COLOAD_RETURN_IF_ERROR(chosen);
  std::vector<int> kept;
  std::vector<Device> devices;
  std::vector<std::string> warnings;
  for (int ordinal : *chosen) {
    bool unreconciled = false;
    auto device = describe_device(*library, ordinal, &unreconciled);
    // Of every device, one coload cannot reconcile is left out (as CLR leaves
    // out GPUs missing from its table) and named; a device the caller named,
    // or a failing HIP call, fails the runtime.
    if (!device && unreconciled && !requested) {
      warnings.push_back(device.error().message() + "; this GPU is left out");
      continue;
    }
    COLOAD_RETURN_IF_ERROR(device);
    kept.push_back(ordinal);
    devices.push_back(std::move(*device));
  }
  if (devices.empty()) {
    return Error(ErrorKind::NotFound,
                 "no GPU coload can describe (" + std::to_string(warnings.size()) + " left out): " + warnings.front());
  }
  return std::unique_ptr<Runtime>(
      new HipRuntime(std::move(library), std::move(kept), std::move(devices), std::move(warnings)));
}

}  // namespace

Expected<std::unique_ptr<Runtime>> open_hip_runtime(const HipOptions& options) {
  auto library = hip::find_library(options);
  COLOAD_RETURN_IF_ERROR(library);
  return open_devices(std::move(*library), options.devices);
}

}  // namespace coload
