// The test HIP library: the hip* entry points coload's HIP backend calls,
// answering from a script the test sets through fake_hip.h, as the HIP
// release it is set to would (docs/loading.md, "HIP releases"). Signatures
// come from HIP 5's own header, so a mismatch is a compile error here.
// hipModuleLoadData reads the image's ELF header and symbol table
// (../fake_elf.h) as far as its own headers reach; hipModuleGetFunction knows
// the STT_FUNC names, hipModuleGetGlobal the variables.
//
// Built once per HIP major (FAKE_HIP_MAJOR, with that SONAME: CMakeLists.txt)
// and once unversioned (FAKE_HIP_MAJOR 0): the copy of major 5 lacks
// hipGetDevicePropertiesR0600, as HIP 5 does.
#include "fake_hip.h"

#include <fcntl.h>
#include <hip/hip_runtime_api.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "fake_elf.h"

#ifndef FAKE_HIP_MAJOR
#define FAKE_HIP_MAJOR 0
#endif

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
  std::set<std::string> function_names;  ///< the STT_FUNC symbols
  /// The caller's bytes, which HIP keeps using (it does not copy them), and
  /// their checksum at load.
  const std::byte* bytes = nullptr;
  std::size_t extent = 0;
  std::uint64_t checksum = 0;
};

namespace {

struct FakeDevice {
  std::string arch;
  int lds_bytes = 0;
  int warp_size = 0;
};

/// What hipRuntimeGetVersion reports for each release the tests name.
struct Release {
  const char* name;
  int version;
};
constexpr Release kReleases[] = {
    {"5.0", 50013601}, {"5.1", 50120532}, {"5.2", 50221153}, {"6.0", 60032830}, {"6.1", 60140092},
    {"6.2", 60241134}, {"6.3", 60342131}, {"6.4", 60443483}, {"7.0", 70051831}, {"8.0", 80000000},
};

/// The copy's release before any is set: its major's (7.0, which loads
/// everything, for the unversioned copy).
constexpr int default_version() {
  switch (FAKE_HIP_MAJOR) {
    case 5: return 50221153;
    case 6: return 60241134;
    case 8: return 80000000;
    default: return 70051831;
  }
}

// What a release loads and how it refuses (docs/loading.md, "HIP releases").
int major_of(int version) { return version / 10000000; }
int minor_of(int version) { return version / 100000 % 100; }
bool at_least(int version, int major, int minor) {
  return major_of(version) > major || (major_of(version) == major && minor_of(version) >= minor);
}
/// The newest code object version: ROCr 1.5.0 of 5.0/5.1 v4, then v5, v6 from 6.2.
unsigned newest_code_object(int version) { return at_least(version, 6, 2) ? 6 : at_least(version, 5, 2) ? 5 : 4; }
/// CLR's ISA table and ROCr 1.15 (ROCm 6.4) know the generic targets.
bool loads_generic(int version) { return at_least(version, 6, 4); }
/// FatBinaryInfo::BuildProgram's answer when the program does not build.
hipError_t refusal(int version) {
  return at_least(version, 6, 1) ? hipErrorNoBinaryForGpu : hipErrorSharedObjectInitFailed;
}

// EF_AMDGPU_MACH, generic family by processor name, from coload's own table.
struct Mach {
  const char* name;
  std::uint32_t mach;
  const char* family;  ///< the generic target a processor belongs to; "" for none or a generic
  bool generic;
};
constexpr Mach kMachs[] = {
#define COLOAD_PROCESSOR(name, mach, major, minor, stepping, family, ...) {name, mach, family, false},
#define COLOAD_GENERIC(name, mach, ...) {name, mach, "", true},
#define COLOAD_ALIAS(alias, name)
#include "target/processors.def"
#undef COLOAD_PROCESSOR
#undef COLOAD_GENERIC
#undef COLOAD_ALIAS
};
const Mach* mach_named(const std::string& name) {
  for (const Mach& m : kMachs)
    if (name == m.name) return &m;
  return nullptr;
}
const Mach* mach_numbered(std::uint32_t mach) {
  for (const Mach& m : kMachs)
    if (mach == m.mach) return &m;
  return nullptr;
}

struct State {
  std::mutex mutex;
  int version = default_version();
  std::vector<FakeDevice> devices;
  std::map<std::string, int> failures;
  std::set<std::string> hidden_kernels;
  std::map<ihipModule_t*, std::unique_ptr<ihipModule_t>> modules;
  int module_loads = 0, module_unloads = 0, bad_unloads = 0, set_device_calls = 0;
  int properties_r0000 = 0, properties_r0600 = 0;  // calls of each hipGetDeviceProperties entry point
  int init = 0;                                    // calls that run CLR's hip::init (HIP_INIT_API)
  int reopens = 0;                                 // loads whose bytes HIP found in a file mapping and reopened by path
  int bytes_changed = 0;                           // unloads that found the loaded bytes changed (or freed)
  std::uint64_t next_base = 0x7e0000000000ull;
};

State& state() {
  static State* instance = new State;
  return *instance;
}

thread_local int current_device = 0;

/// The scripted status for `function`, or hipSuccess; counts `function` as
/// initialising HIP when it does in CLR (every HIP_INIT_API entry point).
hipError_t scripted(State& s, const char* function, bool initialises = true) {
  if (initialises) ++s.init;
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
    case hipErrorFileNotFound: return "hipErrorFileNotFound";
    case hipErrorSharedObjectInitFailed: return "hipErrorSharedObjectInitFailed";
    default: return "hipErrorUnknown";
  }
}

/// FNV-1a of the bytes HIP was given.
std::uint64_t checksum(const std::byte* bytes, std::size_t size) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (std::size_t i = 0; i < size; ++i) hash = (hash ^ static_cast<std::uint8_t>(bytes[i])) * 0x100000001b3ull;
  return hash;
}

/// HIP 6.0+'s Os::FindFileNameFromAddress: the /proc/self/maps line holding
/// `image`, split on blanks as CLR's stream does (a path with a space is cut
/// at it, " (deleted)" falls away); nullopt for anonymous memory.
std::optional<std::string> file_name_from_address(const void* image) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  const auto address = reinterpret_cast<std::uintptr_t>(image);
  while (std::getline(maps, line)) {
    std::istringstream tokens(line);
    std::uintptr_t low = 0, high = 0;
    char dash = 0;
    tokens >> std::hex >> low >> dash >> high >> std::dec;
    if (dash != '-' || address < low || address >= high) continue;
    std::string permissions, offset, device, path;
    std::uint64_t inode = 0;
    tokens >> permissions >> offset >> device >> inode >> path;
    if (inode == 0 || path.empty()) return std::nullopt;
    return path;
  }
  return std::nullopt;
}

/// Whether the current device (gcnArchName `arch`) runs the code object
/// whose header is at `image`, as CLR (Isa::findIsa, Isa::isCompatible) and
/// ROCr's loader decide: hipSuccess or the release's refusal.
hipError_t check_code_object(const State& s, const std::byte* image, const std::string& arch) {
  std::uint8_t abi = 0;
  std::uint32_t flags = 0;
  coload::fake::read_at(image, 64, 8, &abi);
  coload::fake::read_at(image, 64, 48, &flags);
  const unsigned version = abi + 2u;  // EI_ABIVERSION 2 = v4, 3 = v5, 4 = v6
  const Mach* object = mach_numbered(flags & 0xff);
  const Mach* device = mach_named(arch.substr(0, arch.find(':')));
  if (!object || !device || version > newest_code_object(s.version)) return refusal(s.version);
  if (object->generic ? !loads_generic(s.version) || std::string(device->family) != object->name
                      : object->mach != device->mach) {
    return refusal(s.version);
  }
  const std::uint32_t xnack = flags & 0x300, sramecc = flags & 0xc00;  // V4+: 0x200 off, 0x300 on
  auto has = [&](const char* mode) { return arch.find(mode) != std::string::npos; };
  if ((xnack == 0x200 && !has("xnack-")) || (xnack == 0x300 && !has("xnack+")) ||
      (sramecc == 0x800 && !has("sramecc-")) || (sramecc == 0xc00 && !has("sramecc+"))) {
    return refusal(s.version);
  }
  return hipSuccess;
}

/// A release name ("6.2") as hipRuntimeGetVersion's number; 0 when unknown.
int release_version(const char* name) {
  for (const Release& release : kReleases)
    if (name && std::strcmp(name, release.name) == 0) return release.version;
  return 0;
}

}  // namespace

// ---- control interface (fake_hip.h) ----

FAKE_HIP_EXPORT void coload_fake_hip_reset(void) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.version = default_version();
  s.devices.clear();
  s.failures.clear();
  s.hidden_kernels.clear();
  s.modules.clear();
  s.module_loads = s.module_unloads = s.bad_unloads = s.set_device_calls = 0;
  s.properties_r0000 = s.properties_r0600 = 0;
  s.init = s.reopens = s.bytes_changed = 0;
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

/// COLOAD_TEST_HIP_RELEASE ("6.2"), read when the library is loaded.
__attribute__((constructor)) static void release_from_environment() {
  if (int version = release_version(std::getenv("COLOAD_TEST_HIP_RELEASE"))) state().version = version;
}

FAKE_HIP_EXPORT int coload_fake_hip_set_release(const char* release) {
  const int version = release_version(release);
  if (version == 0) return -1;
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.version = version;
  return 0;
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
  if (what == "init") return s.init;
  if (what == "reopens") return s.reopens;
  if (what == "bytes_changed") return s.bytes_changed;
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
  if (hipError_t status = scripted(s, "hipRuntimeGetVersion")) return status;  // HIP_INIT_API_NO_RETURN
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

#if FAKE_HIP_MAJOR != 5
// HIP 6's hipGetDeviceProperties (the macro's target): hipDeviceProp_tR0600,
// 1472 bytes, name at 0 and gcnArchName at 1160 (HIP 6's hip_runtime_api.h).
// Exported, as a HIP 6 library exports it beside the R0000
// hipGetDeviceProperties, by every copy but HIP 5's.
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
#endif

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
  if (!image) return hipErrorInvalidValue;
  if (!valid_device(s, current_device)) return hipErrorInvalidDevice;
  // HIP 6.0+ reopens the file the bytes are mapped from, by its path.
  if (major_of(s.version) >= 6) {
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
  if (hipError_t status = check_code_object(s, bytes, s.devices[static_cast<std::size_t>(current_device)].arch))
    return status;
  record->bytes = bytes;
  record->checksum = checksum(bytes, record->extent);
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
  // CLR knows only the code object's function symbols (DynCO::populateDynGlobalFuncs).
  if (s.hidden_kernels.count(name) || !it->second->function_names.count(name)) return hipErrorNotFound;
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
