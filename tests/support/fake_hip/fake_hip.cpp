// The test HIP library: the hip* entry points coload's HIP backend calls,
// answering from a script the test sets through fake_hip.h. Signatures come
// from HIP 5's own header, so a mismatch is a compile error here.
// hipModuleLoadData reads the image's symbol table (../fake_elf.h) as far as
// its own headers reach; hipModuleGetGlobal answers from its variables.
#include "fake_hip.h"

#include <hip/hip_runtime_api.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "fake_elf.h"

#define FAKE_HIP_EXPORT extern "C" __attribute__((visibility("default")))

// The opaque handle types of hip_runtime_api.h, given a body here.
struct ihipModuleSymbol_t {
  std::string name;
};
struct ihipModule_t {
  int device = 0;
  std::uint64_t base = 0;  ///< where the fake places the module's variables
  std::map<std::string, std::unique_ptr<ihipModuleSymbol_t>> functions;
  std::map<std::string, coload::fake::CodeObjectSymbol> symbols;
};

namespace {

struct FakeDevice {
  std::string arch;
  int lds_bytes = 0;
  int warp_size = 0;
};

struct State {
  std::mutex mutex;
  int version = 50221153;
  std::vector<FakeDevice> devices;
  std::map<std::string, int> failures;
  std::set<std::string> hidden_kernels;
  std::map<ihipModule_t*, std::unique_ptr<ihipModule_t>> modules;
  int module_loads = 0, module_unloads = 0, bad_unloads = 0, set_device_calls = 0;
  int properties_r0000 = 0, properties_r0600 = 0;  // calls of each hipGetDeviceProperties entry point
  std::uint64_t next_base = 0x7e0000000000ull;
};

State& state() {
  static State* instance = new State;
  return *instance;
}

thread_local int current_device = 0;

/// The scripted status for `function`, or hipSuccess.
hipError_t scripted(State& s, const char* function) {
  auto it = s.failures.find(function);
  return it == s.failures.end() ? hipSuccess : static_cast<hipError_t>(it->second);
}

bool valid_device(const State& s, int device) { return device >= 0 && device < static_cast<int>(s.devices.size()); }

const char* error_name(hipError_t status) {
  switch (status) {
    case hipSuccess: return "hipSuccess";
    case hipErrorInvalidValue: return "hipErrorInvalidValue";
    case hipErrorOutOfMemory: return "hipErrorOutOfMemory";
    case hipErrorNoDevice: return "hipErrorNoDevice";
    case hipErrorInvalidDevice: return "hipErrorInvalidDevice";
    case hipErrorInvalidImage: return "hipErrorInvalidImage";
    case hipErrorNoBinaryForGpu: return "hipErrorNoBinaryForGpu";
    case hipErrorInvalidKernelFile: return "hipErrorInvalidKernelFile";
    case hipErrorInvalidResourceHandle: return "hipErrorInvalidResourceHandle";
    case hipErrorNotFound: return "hipErrorNotFound";
    default: return "hipErrorUnknown";
  }
}

}  // namespace

// ---- control interface (fake_hip.h) ----

FAKE_HIP_EXPORT void coload_fake_hip_reset(void) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.version = 50221153;
  s.devices.clear();
  s.failures.clear();
  s.hidden_kernels.clear();
  s.modules.clear();
  s.module_loads = s.module_unloads = s.bad_unloads = s.set_device_calls = 0;
  s.properties_r0000 = s.properties_r0600 = 0;
  s.next_base = 0x7e0000000000ull;
  current_device = 0;
}

FAKE_HIP_EXPORT void coload_fake_hip_add_device(const char* arch, int lds_bytes, int warp_size) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.devices.push_back({arch, lds_bytes, warp_size});
}

/// COLOAD_TEST_HIP_DEVICES ("ARCH/LDS/WARP,…"), added when the library is
/// loaded: for a process that cannot script it before coload opens it (a HIP
/// program whose static constructors register through a layer).
__attribute__((constructor)) static void add_devices_from_environment() {
  const char* devices = std::getenv("COLOAD_TEST_HIP_DEVICES");
  if (!devices) return;
  std::string list = devices;
  for (std::size_t start = 0; start < list.size();) {
    std::size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    std::string device = list.substr(start, comma - start);
    std::size_t slash = device.find('/'), second = device.find('/', slash + 1);
    if (slash != std::string::npos && second != std::string::npos) {
      coload_fake_hip_add_device(device.substr(0, slash).c_str(), std::atoi(device.c_str() + slash + 1),
                                 std::atoi(device.c_str() + second + 1));
    }
    start = comma + 1;
  }
}

FAKE_HIP_EXPORT void coload_fake_hip_set_version(int version) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.version = version;
}

FAKE_HIP_EXPORT void coload_fake_hip_fail(const char* function, int status) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.failures[function] = status;
}

FAKE_HIP_EXPORT void coload_fake_hip_hide_kernel(const char* name) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.hidden_kernels.insert(name);
}

FAKE_HIP_EXPORT int coload_fake_hip_counter(const char* name) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  std::string_view what(name);
  if (what == "module_loads") return s.module_loads;
  if (what == "module_unloads") return s.module_unloads;
  if (what == "live_modules") return static_cast<int>(s.modules.size());
  if (what == "bad_unloads") return s.bad_unloads;
  if (what == "set_device") return s.set_device_calls;
  if (what == "properties_r0000") return s.properties_r0000;
  if (what == "properties_r0600") return s.properties_r0600;
  if (what == "current_device") return current_device;
  return -1;
}

// ---- the HIP entry points ----

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

FAKE_HIP_EXPORT hipError_t hipRuntimeGetVersion(int* version) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (hipError_t status = scripted(s, "hipRuntimeGetVersion")) return status;
  if (!version) return hipErrorInvalidValue;
  *version = s.version;
  return hipSuccess;
}

FAKE_HIP_EXPORT hipError_t hipGetDeviceCount(int* count) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (!count) return hipErrorInvalidValue;
  *count = 0;
  if (hipError_t status = scripted(s, "hipGetDeviceCount")) return status;
  *count = static_cast<int>(s.devices.size());
  return s.devices.empty() ? hipErrorNoDevice : hipSuccess;
}

FAKE_HIP_EXPORT hipError_t hipGetDeviceProperties(hipDeviceProp_t* properties, int device) {
  State& s = state();
  std::lock_guard lock(s.mutex);
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

/// HIP 6's struct, declared only: the HIP 5 headers here lack it, and the
/// entry point's type must be the one coload calls it through.
struct hipDeviceProp_tR0600;

// HIP 6's hipGetDeviceProperties (the macro's target): hipDeviceProp_tR0600,
// 1472 bytes, name at 0 and gcnArchName at 1160 (HIP 6's hip_runtime_api.h).
// Exported whatever the version, as a HIP 6 library exports it beside the
// R0000 hipGetDeviceProperties; coload calls it only for HIP 6 and later.
FAKE_HIP_EXPORT hipError_t hipGetDevicePropertiesR0600(hipDeviceProp_tR0600* properties, int device) {
  State& s = state();
  std::lock_guard lock(s.mutex);
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

FAKE_HIP_EXPORT hipError_t hipDeviceGetAttribute(int* value, hipDeviceAttribute_t attribute, int device) {
  State& s = state();
  std::lock_guard lock(s.mutex);
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

FAKE_HIP_EXPORT hipError_t hipGetDevice(int* device) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (hipError_t status = scripted(s, "hipGetDevice")) return status;
  if (!device) return hipErrorInvalidValue;
  *device = current_device;
  return hipSuccess;
}

FAKE_HIP_EXPORT hipError_t hipSetDevice(int device) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  ++s.set_device_calls;
  if (hipError_t status = scripted(s, "hipSetDevice")) return status;
  if (!valid_device(s, device)) return hipErrorInvalidDevice;
  current_device = device;
  return hipSuccess;
}

FAKE_HIP_EXPORT hipError_t hipModuleLoadData(hipModule_t* module, const void* image) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (!module) return hipErrorInvalidValue;
  *module = nullptr;
  if (hipError_t status = scripted(s, "hipModuleLoadData")) return status;
  if (!image || std::memcmp(image,
                            "\x7f"
                            "ELF",
                            4) != 0)
    return hipErrorInvalidImage;
  if (!valid_device(s, current_device)) return hipErrorInvalidDevice;
  auto record = std::make_unique<ihipModule_t>();
  const auto* bytes = static_cast<const std::byte*>(image);
  std::size_t extent = coload::fake::elf_extent(bytes);
  if (extent == 0 || !coload::fake::read_symbols(bytes, extent, &record->symbols)) return hipErrorInvalidImage;
  record->device = current_device;
  record->base = s.next_base;
  s.next_base += std::uint64_t{1} << 32;
  *module = record.get();
  s.modules.emplace(record.get(), std::move(record));
  ++s.module_loads;
  return hipSuccess;
}

FAKE_HIP_EXPORT hipError_t hipModuleGetFunction(hipFunction_t* function, hipModule_t module, const char* name) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (!function || !name) return hipErrorInvalidValue;
  *function = nullptr;
  if (hipError_t status = scripted(s, "hipModuleGetFunction")) return status;
  auto it = s.modules.find(module);
  if (it == s.modules.end()) return hipErrorInvalidResourceHandle;
  if (s.hidden_kernels.count(name)) return hipErrorNotFound;
  auto& slot = it->second->functions[name];
  if (!slot) slot = std::make_unique<ihipModuleSymbol_t>(ihipModuleSymbol_t{name});
  *function = slot.get();
  return hipSuccess;
}

FAKE_HIP_EXPORT hipError_t hipModuleGetGlobal(hipDeviceptr_t* pointer, std::size_t* bytes, hipModule_t module,
                                              const char* name) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (!pointer || !bytes || !name) return hipErrorInvalidValue;
  if (hipError_t status = scripted(s, "hipModuleGetGlobal")) return status;
  auto it = s.modules.find(module);
  if (it == s.modules.end()) return hipErrorInvalidResourceHandle;
  // HIP answers for the current device; a module lives on the one it was loaded on.
  if (it->second->device != current_device) return hipErrorInvalidDevice;
  auto symbol = it->second->symbols.find(name);
  if (symbol == it->second->symbols.end() || symbol->second.kernel) return hipErrorNotFound;
  *pointer = reinterpret_cast<hipDeviceptr_t>(static_cast<std::uintptr_t>(it->second->base + symbol->second.value));
  *bytes = static_cast<std::size_t>(symbol->second.size);
  return hipSuccess;
}

FAKE_HIP_EXPORT hipError_t hipModuleUnload(hipModule_t module) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (hipError_t status = scripted(s, "hipModuleUnload")) return status;
  if (s.modules.erase(module) == 0) {
    ++s.bad_unloads;
    return hipErrorInvalidResourceHandle;
  }
  ++s.module_unloads;
  return hipSuccess;
}
