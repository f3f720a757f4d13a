// The test HIP library's hip* entry points (fake_hip_state.h has the
// state they share): signatures from HIP 5's own header, so a mismatch is a
// compile error here. Each does its work in a function of its own and
// returns through hip_return, as CLR's entry points return through
// HIP_RETURN, which keeps the thread's last error as the release does.
// hipModuleLoadData reads the image's ELF header and symbol table
// (../fake_elf.h) as far as its own headers reach; hipModuleGetFunction knows
// the STT_FUNC names, hipModuleGetGlobal the variables.
#include <fcntl.h>
#include <hip/hip_runtime_api.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "fake_elf.h"
#include "fake_hip_state.h"

using namespace coload::fake_hip;

// hipGetErrorName and hipGetErrorString neither initialise HIP nor touch its
// error state (CLR hip_error.cpp).
FAKE_HIP_EXPORT const char* hipGetErrorName(hipError_t status) { return error_name(status); }

FAKE_HIP_EXPORT const char* hipGetErrorString(hipError_t status) {
  // HIP 5.2.3 answers with the name as well (docs/loading.md); a distinct text
  // here shows that both reach the message.
  switch (status) {
    case hipErrorNoDevice: return "no ROCm-capable device is detected";
    case hipErrorInvalidImage: return "device kernel image is invalid";
    case hipErrorNoBinaryForGpu: return "no kernel image is available for execution on the device";
    case hipErrorNotFound: return "named symbol not found";
    default: return error_name(status);
  }
}

static hipError_t runtimeGetVersion(State& s, int* version) {
  if (hipError_t status = scripted(s, "hipRuntimeGetVersion")) return status;  // HIP_INIT_API_NO_RETURN
  if (!version) return hipErrorInvalidValue;
  *version = s.version;
  return hipSuccess;
}

FAKE_HIP_EXPORT hipError_t hipRuntimeGetVersion(int* version) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  return hip_return(s, runtimeGetVersion(s, version));
}

static hipError_t getDeviceCount(State& s, int* count) {
  if (!count) return hipErrorInvalidValue;
  *count = 0;
  if (hipError_t status = scripted(s, "hipGetDeviceCount")) return status;
  *count = static_cast<int>(s.devices.size());
  return s.devices.empty() ? hipErrorNoDevice : hipSuccess;
}

FAKE_HIP_EXPORT hipError_t hipGetDeviceCount(int* count) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  return hip_return(s, getDeviceCount(s, count));
}

static hipError_t getDeviceProperties(State& s, hipDeviceProp_t* properties, int device) {
  if (hipError_t status = scripted(s, "hipGetDeviceProperties")) return status;
  if (!properties) return hipErrorInvalidValue;
  if (!valid_device(s, device)) return hipErrorInvalidDevice;
  const FakeDevice& d = s.devices[static_cast<std::size_t>(device)];
  ++s.properties_r0000;
  std::memset(properties, 0, sizeof *properties);
  std::strncpy(properties->name, "coload test device", sizeof properties->name - 1);
  std::strncpy(properties->gcnArchName, d.arch.c_str(), sizeof properties->gcnArchName - 1);
  properties->sharedMemPerBlock = static_cast<std::size_t>(d.lds_bytes);
  properties->warpSize = d.warp_size;
  return hipSuccess;
}

FAKE_HIP_EXPORT hipError_t hipGetDeviceProperties(hipDeviceProp_t* properties, int device) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  return hip_return(s, getDeviceProperties(s, properties, device));
}

/// HIP 6's struct, declared only: the HIP 5 headers here lack it, and the
/// entry point's type must be the one coload calls it through.
struct hipDeviceProp_tR0600;

#if FAKE_HIP_MAJOR != 5
// HIP 6's hipGetDeviceProperties (the macro's target): hipDeviceProp_tR0600,
// 1472 bytes, name at 0 and gcnArchName at 1160 (HIP 6's hip_runtime_api.h).
// Exported, as a HIP 6 library exports it beside the R0000
// hipGetDeviceProperties, by every copy but HIP 5's.
static hipError_t getDevicePropertiesR0600(State& s, hipDeviceProp_tR0600* properties, int device) {
  if (hipError_t status = scripted(s, "hipGetDevicePropertiesR0600")) return status;
  if (!properties) return hipErrorInvalidValue;
  if (!valid_device(s, device)) return hipErrorInvalidDevice;
  ++s.properties_r0600;
  const FakeDevice& d = s.devices[static_cast<std::size_t>(device)];
  auto* bytes = reinterpret_cast<char*>(properties);
  std::memset(bytes, 0, 1472);
  std::strncpy(bytes, "coload test device", 255);
  std::strncpy(bytes + 1160, d.arch.c_str(), 255);
  return hipSuccess;
}

FAKE_HIP_EXPORT hipError_t hipGetDevicePropertiesR0600(hipDeviceProp_tR0600* properties, int device) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  return hip_return(s, getDevicePropertiesR0600(s, properties, device));
}
#endif

static hipError_t deviceGetAttribute(State& s, int* value, hipDeviceAttribute_t attribute, int device) {
  if (hipError_t status = scripted(s, "hipDeviceGetAttribute")) return status;
  if (!value) return hipErrorInvalidValue;
  if (!valid_device(s, device)) return hipErrorInvalidDevice;
  const FakeDevice& d = s.devices[static_cast<std::size_t>(device)];
  switch (attribute) {
    case hipDeviceAttributeMaxSharedMemoryPerBlock: *value = d.lds_bytes; return hipSuccess;
    case hipDeviceAttributeWarpSize: *value = d.warp_size; return hipSuccess;
    default: return hipErrorInvalidValue;
  }
}

FAKE_HIP_EXPORT hipError_t hipDeviceGetAttribute(int* value, hipDeviceAttribute_t attribute, int device) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  return hip_return(s, deviceGetAttribute(s, value, attribute, device));
}

static hipError_t getDevice(State& s, int* device) {
  if (hipError_t status = scripted(s, "hipGetDevice")) return status;
  if (!device) return hipErrorInvalidValue;
  *device = current_device();
  return hipSuccess;
}

FAKE_HIP_EXPORT hipError_t hipGetDevice(int* device) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  return hip_return(s, getDevice(s, device));
}

static hipError_t setDevice(State& s, int device) {
  ++s.set_device_calls;
  if (hipError_t status = scripted(s, "hipSetDevice")) return status;
  if (!valid_device(s, device)) return hipErrorInvalidDevice;
  current_device() = device;
  return hipSuccess;
}

FAKE_HIP_EXPORT hipError_t hipSetDevice(int device) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  return hip_return(s, setDevice(s, device));
}

static hipError_t moduleLoadData(State& s, hipModule_t* module, const void* image) {
  if (!module) return hipErrorInvalidValue;
  *module = nullptr;
  if (hipError_t status = scripted(s, "hipModuleLoadData")) return status;
  if (!image) return hipErrorInvalidValue;
  if (!valid_device(s, current_device())) return hipErrorInvalidDevice;
  s.last_image = image;
  if (in_anonymous_pages(image)) ++s.own_mappings;
  // The comgr unbundler (5.5+; the default from 6.0) reopens the file the
  // bytes are mapped from, by its path.
  if (reopens_mapped_files(s)) {
    if (auto path = file_name_from_address(image)) {
      ++s.reopens;
      int fd = open(path->c_str(), O_RDONLY);
      if (fd < 0) return hipErrorFileNotFound;
      struct stat status{};
      bool empty = fstat(fd, &status) != 0 || status.st_size == 0;
      close(fd);
      if (empty) return hipErrorInvalidValue;
    }
  }
  const auto* bytes = static_cast<const std::byte*>(image);
  if (std::memcmp(image,
                  "\x7f"
                  "ELF",
                  4) != 0)
    return hipErrorInvalidImage;
  auto record = std::make_unique<ihipModule_t>();
  record->extent = coload::fake::elf_extent(bytes);
  if (record->extent == 0 || !coload::fake::read_symbols(bytes, record->extent, &record->symbols) ||
      !coload::fake::read_function_names(bytes, record->extent, &record->function_names)) {
    return hipErrorInvalidImage;
  }
  if (hipError_t status = check_code_object(s, bytes, s.devices[static_cast<std::size_t>(current_device())].arch))
    return status;
  record->bytes = bytes;
  record->checksum = checksum(bytes, record->extent);
  record->device = current_device();
  record->base = s.next_base;
  s.next_base += std::uint64_t{1} << 32;
  *module = record.get();
  s.modules.emplace(record.get(), std::move(record));
  ++s.module_loads;
  return hipSuccess;
}

FAKE_HIP_EXPORT hipError_t hipModuleLoadData(hipModule_t* module, const void* image) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  return hip_return(s, moduleLoadData(s, module, image));
}

static hipError_t moduleGetFunction(State& s, hipFunction_t* function, hipModule_t module, const char* name) {
  if (!function || !name) return hipErrorInvalidValue;
  *function = nullptr;
  if (hipError_t status = scripted(s, "hipModuleGetFunction")) return status;
  auto it = s.modules.find(module);
  if (it == s.modules.end()) return hipErrorInvalidResourceHandle;
  // CLR knows only the code object's function symbols (DynCO::populateDynGlobalFuncs).
  if (s.hidden_kernels.count(name) || !it->second->function_names.count(name)) return hipErrorNotFound;
  auto& slot = it->second->functions[name];
  if (!slot) slot = std::make_unique<ihipModuleSymbol_t>(ihipModuleSymbol_t{name});
  *function = slot.get();
  return hipSuccess;
}

FAKE_HIP_EXPORT hipError_t hipModuleGetFunction(hipFunction_t* function, hipModule_t module, const char* name) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  return hip_return(s, moduleGetFunction(s, function, module, name));
}

static hipError_t moduleGetGlobal(State& s, hipDeviceptr_t* pointer, std::size_t* bytes, hipModule_t module,
                                  const char* name) {
  if (!pointer || !bytes || !name) return hipErrorInvalidValue;
  if (hipError_t status = scripted(s, "hipModuleGetGlobal")) return status;
  auto it = s.modules.find(module);
  if (it == s.modules.end()) return hipErrorInvalidResourceHandle;
  // HIP answers for the current device; a module lives on the one it was loaded on.
  if (it->second->device != current_device()) return hipErrorInvalidDevice;
  auto symbol = it->second->symbols.find(name);
  if (symbol == it->second->symbols.end() || symbol->second.kernel) return hipErrorNotFound;
  *pointer = reinterpret_cast<hipDeviceptr_t>(static_cast<std::uintptr_t>(it->second->base + symbol->second.value));
  *bytes = static_cast<std::size_t>(symbol->second.size);
  return hipSuccess;
}

FAKE_HIP_EXPORT hipError_t hipModuleGetGlobal(hipDeviceptr_t* pointer, std::size_t* bytes, hipModule_t module,
                                              const char* name) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  return hip_return(s, moduleGetGlobal(s, pointer, bytes, module, name));
}

static hipError_t moduleUnload(State& s, hipModule_t module) {
  if (hipError_t status = scripted(s, "hipModuleUnload")) return status;
  auto it = s.modules.find(module);
  if (it == s.modules.end()) {
    ++s.bad_unloads;
    return hipErrorInvalidResourceHandle;
  }
  // HIP read the caller's bytes until now: they must not have changed.
  if (checksum(it->second->bytes, it->second->extent) != it->second->checksum) ++s.bytes_changed;
  s.modules.erase(it);
  ++s.module_unloads;
  return hipSuccess;
}

FAKE_HIP_EXPORT hipError_t hipModuleUnload(hipModule_t module) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  return hip_return(s, moduleUnload(s, module));
}

// hipGetLastError: the thread's last error, reset to hipSuccess; not through
// HIP_RETURN. hipPeekAtLastError: the same without the reset, through
// HIP_RETURN (which stores it again). Both are HIP_INIT_API entry points,
// which answer hipErrorNoDevice through HIP_RETURN when there is no GPU.
FAKE_HIP_EXPORT hipError_t hipGetLastError(void) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  ++s.init;
  if (s.devices.empty()) return hip_return(s, hipErrorNoDevice);
  const hipError_t error = last_error();
  last_error() = hipSuccess;
  return error;
}

FAKE_HIP_EXPORT hipError_t hipPeekAtLastError(void) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  ++s.init;
  if (s.devices.empty()) return hip_return(s, hipErrorNoDevice);
  const hipError_t error = last_error();
  keep_error(s, error);  // what HIP_RETURN does with it, without counting a failure
  return error;
}
