// The test HIP library's state and what each release it plays decides
// (fake_hip_state.h; docs/loading.md, "HIP releases"): the version number,
// the code objects it loads and how it refuses the rest, when it reopens a
// file mapping by path, and how HIP_RETURN keeps the thread's last error.
#include "fake_hip_state.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace coload::fake_hip {
namespace {

/// What hipRuntimeGetVersion reports for each release the tests name.
struct Release {
  const char* name;
  int version;
};
constexpr Release kReleases[] = {
    {"5.0", 50013601}, {"5.1", 50120532}, {"5.2", 50221153}, {"5.4", 50422804}, {"5.5", 50530201}, {"6.0", 60032830},
    {"6.1", 60140092}, {"6.2", 60241134}, {"6.3", 60342131}, {"6.4", 60443483}, {"7.0", 70051831}, {"8.0", 80000000},
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

/// The /proc/self/maps line holding `image`, its fields read as CLR reads
/// them; false when no line holds it.
struct MapsEntry {
  std::uintptr_t low = 0;
  std::uint64_t inode = 0;
  std::string path;  ///< up to the first blank
};
bool maps_entry_at(const void* image, MapsEntry* entry) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  const auto address = reinterpret_cast<std::uintptr_t>(image);
  while (std::getline(maps, line)) {
    std::istringstream tokens(line);
    std::uintptr_t low = 0, high = 0;
    char dash = 0;
    tokens >> std::hex >> low >> dash >> high >> std::dec;
    if (dash != '-' || address < low || address >= high) continue;
    std::string permissions, offset, device;
    entry->low = low;
    tokens >> permissions >> offset >> device >> entry->inode >> entry->path;
    return true;
  }
  return false;
}

}  // namespace

State& state() {
  static State* instance = [] {
    auto* s = new State;
    reset(*s);
    return s;
  }();
  return *instance;
}

void reset(State& s) {
  s.version = default_version();
  s.runtime_unbundler = -1;
  s.devices.clear();
  s.failures.clear();
  s.hidden_kernels.clear();
  s.modules.clear();
  s.module_loads = s.module_unloads = s.bad_unloads = s.set_device_calls = 0;
  s.properties_r0000 = s.properties_r0600 = 0;
  s.init = s.reopens = s.own_mappings = s.bytes_changed = s.failed_calls = 0;
  s.last_image = nullptr;
  s.next_base = 0x7e0000000000ull;
  current_device() = 0;
  last_error() = hipSuccess;
}

int& current_device() {
  thread_local int device = 0;
  return device;
}

hipError_t& last_error() {
  thread_local hipError_t error = hipSuccess;
  return error;
}

int release_version(const char* name) {
  for (const Release& release : kReleases)
    if (name && std::strcmp(name, release.name) == 0) return release.version;
  return 0;
}

void keep_error(const State& s, hipError_t status) {
  if (major_of(s.version) < 7) {
    last_error() = status;  // HIP_RETURN: hip::tls.last_error_ = ret
  } else if (status != hipSuccess && status != hipErrorNotReady) {
    last_error() = status;  // HIP_UPDATE_ERROR_STATE
  }
}

hipError_t hip_return(State& s, hipError_t status) {
  if (status != hipSuccess) ++s.failed_calls;
  keep_error(s, status);
  return status;
}

hipError_t scripted(State& s, const char* function, bool initialises) {
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
    case hipErrorNotReady: return "hipErrorNotReady";
    case hipErrorFileNotFound: return "hipErrorFileNotFound";
    case hipErrorSharedObjectInitFailed: return "hipErrorSharedObjectInitFailed";
    default: return "hipErrorUnknown";
  }
}

std::uint64_t checksum(const std::byte* bytes, std::size_t size) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (std::size_t i = 0; i < size; ++i) hash = (hash ^ static_cast<std::uint8_t>(bytes[i])) * 0x100000001b3ull;
  return hash;
}

bool reopens_mapped_files(const State& s) {
  if (!at_least(s.version, 5, 5)) return false;  // no comgr unbundler path
  if (major_of(s.version) >= 7) return true;     // the only path (rocm-systems flags.hpp has no flag)
  // rocclr/utils/flags.hpp: true (the runtime unbundler) up to 5.7, false from 6.0.
  const bool runtime_unbundler = s.runtime_unbundler >= 0 ? s.runtime_unbundler != 0 : major_of(s.version) < 6;
  return !runtime_unbundler;
}

std::optional<std::string> file_name_from_address(const void* image) {
  MapsEntry entry;
  if (!maps_entry_at(image, &entry) || entry.inode == 0 || entry.path.empty()) return std::nullopt;
  return entry.path;
}

bool in_anonymous_pages(const void* image) {
  // Page-aligned: the kernel may merge a fresh mapping with an anonymous
  // neighbour, so its start need not be the line's; malloc's chunks never are.
  const auto address = reinterpret_cast<std::uintptr_t>(image);
  MapsEntry entry;
  return address % static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE)) == 0 && maps_entry_at(image, &entry) &&
         entry.inode == 0 && entry.path.empty();
}

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

}  // namespace coload::fake_hip
