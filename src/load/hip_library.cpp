// load/hip_library.cpp: finding and opening libamdhip64 (hip_library.h).
//
// The major first, from the library's own name: hipRuntimeGetVersion runs
// HIP's full init (CLR's HIP_INIT_API), and a runtime started only to be
// refused stays started beside the one the process uses. A library whose
// names carry no major (a test library, a local build) is asked for its
// version, then checked the same way.
#include "load/hip_library.h"
#include "load/process_exit.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

namespace coload::hip {
namespace {

ErrorKind kind_of(hipError_t status) {
  switch (status) {
    case hipErrorNoDevice:
    case hipErrorInvalidDevice:  // what every call gives when hsa_init failed (6.3)
    case hipErrorNotFound: return ErrorKind::NotFound;
    case hipErrorInvalidValue:
    case hipErrorNoBinaryForGpu:          // the code object does not fit the device (HIP 6.1+)
    case hipErrorSharedObjectInitFailed:  // the same before HIP 6.1 (docs/loading.md)
      return ErrorKind::InvalidArgument;
    case hipErrorOutOfMemory: return ErrorKind::LimitExceeded;
    default:  // hipErrorInvalidImage, hipErrorInvalidKernelFile, ...
      return ErrorKind::Malformed;
  }
}

/// coload knows the device-property layouts of HIP 5 to 7; another major's
/// struct could be laid out anyhow.
bool readable_major(int major) { return major >= 5 && major <= 7; }
constexpr const char* kReadableMajors = "coload reads the device properties of HIP 5 to 7 only";

/// The major in a library file name: 6 in "libamdhip64.so.6" and
/// "libamdhip64.so.6.2.41133"; nullopt without a version after ".so".
std::optional<int> major_in_name(std::string_view name) {
  std::size_t slash = name.rfind('/');
  if (slash != std::string_view::npos) name.remove_prefix(slash + 1);
  std::size_t so = name.find(".so.");
  if (so == std::string_view::npos) return std::nullopt;
  std::string_view digits = name.substr(so + 4);
  digits = digits.substr(0, digits.find('.'));
  if (digits.empty() || digits.size() > 4 || digits.find_first_not_of("0123456789") != std::string_view::npos)
    return std::nullopt;
  return std::atoi(std::string(digits).c_str());
}

/// The DT_SONAME of a loaded object, from its dynamic section in memory.
std::optional<std::string> soname_of(const link_map& map) {
  if (!map.l_ld) return std::nullopt;
  ElfW(Addr) strtab = 0;
  std::optional<ElfW(Xword)> soname;
  for (const ElfW(Dyn)* entry = map.l_ld; entry->d_tag != DT_NULL; ++entry) {
    if (entry->d_tag == DT_STRTAB) strtab = entry->d_un.d_ptr;
    if (entry->d_tag == DT_SONAME) soname = entry->d_un.d_val;
  }
  if (!soname || strtab == 0) return std::nullopt;
  // glibc relocates DT_STRTAB in place; where the dynamic section is
  // read-only (and under other loaders) it stays relative to the load address.
  if (strtab < map.l_addr) strtab += map.l_addr;
  return std::string(reinterpret_cast<const char*>(strtab + *soname));
}

/// Which file a handle is and the major its names carry: the SONAME
/// (libamdhip64.so.6), else the real file name (libamdhip64.so.6.2.41133).
struct LibraryName {
  std::string file;      ///< the real path, or the name it was opened by
  std::string named_by;  ///< "SONAME libamdhip64.so.6" or "file name"
  std::optional<int> major;
};
LibraryName name_of(void* handle, const std::string& opened_as) {
  LibraryName name{opened_as, "", std::nullopt};
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || !map) return name;
  if (map->l_name && *map->l_name) {
    if (char* real = realpath(map->l_name, nullptr)) {
      name.file = real;
      std::free(real);
    } else {
      name.file = map->l_name;
    }
  }
  if (auto soname = soname_of(*map)) {
    if ((name.major = major_in_name(*soname))) {
      name.named_by = "SONAME " + *soname;
      return name;
    }
  }
  if ((name.major = major_in_name(name.file))) name.named_by = "file name";
  return name;
}

/// Resolves every entry point; the list of missing ones, empty when none is.
std::string resolve(void* handle, HipApi& api) {
  std::string missing;
  auto bind = [&](auto& function, const char* symbol) {
    function = reinterpret_cast<std::remove_reference_t<decltype(function)>>(dlsym(handle, symbol));
    if (!function) missing += (missing.empty() ? "" : ", ") + std::string(symbol);
  };
  bind(api.get_error_name, "hipGetErrorName");
  bind(api.get_error_string, "hipGetErrorString");
  bind(api.runtime_get_version, "hipRuntimeGetVersion");
  bind(api.get_device_count, "hipGetDeviceCount");
  bind(api.device_get_attribute, "hipDeviceGetAttribute");
  bind(api.get_device, "hipGetDevice");
  bind(api.set_device, "hipSetDevice");
  bind(api.module_load_data, "hipModuleLoadData");
  bind(api.module_get_function, "hipModuleGetFunction");
  bind(api.module_get_global, "hipModuleGetGlobal");
  bind(api.module_unload, "hipModuleUnload");
  // The device properties: HIP 5 has the plain export only, HIP 6 both; a
  // release with the R0600 entry point alone still reads.
  api.get_device_properties_r0000 =
      reinterpret_cast<decltype(api.get_device_properties_r0000)>(dlsym(handle, "hipGetDeviceProperties"));
  api.get_device_properties_r0600 =
      reinterpret_cast<decltype(api.get_device_properties_r0600)>(dlsym(handle, "hipGetDevicePropertiesR0600"));
  if (!api.get_device_properties_r0000 && !api.get_device_properties_r0600)
    missing += (missing.empty() ? "" : ", ") + std::string("hipGetDeviceProperties");
  return missing;
}

/// The library behind `handle` (opened as `path`), checked and initialised.
/// A refused handle is closed: nothing of HIP has run in it.
Expected<std::shared_ptr<const HipLibrary>> adopt(void* handle, const std::string& path) {
  auto library = std::make_shared<HipLibrary>();
  library->path = path;
  if (std::string missing = resolve(handle, library->api); !missing.empty()) {
    dlclose(handle);
    return Error(ErrorKind::UnsupportedVersion, "'" + path + "' lacks " + missing + " (not a HIP runtime library?)");
  }
  const LibraryName name = name_of(handle, path);
  if (name.major && !readable_major(*name.major)) {
    dlclose(handle);
    return Error(ErrorKind::UnsupportedVersion, "'" + name.file + "' is HIP " + std::to_string(*name.major) + " (its " +
                                                    name.named_by + "; not started); " + kReadableMajors);
  }
  // From here HIP runs: the handle stays open whatever the answer.
  if (auto ok = check(library->api, library->api.runtime_get_version(&library->version), "hipRuntimeGetVersion",
                      "in '" + path + "'");
      !ok) {
    return std::move(ok).error();
  }
  detail::watch_process_exit();  // hipRuntimeGetVersion has initialised HIP
  const int major = major_of(library->version);
  if (!readable_major(major) || (name.major && *name.major != major)) {
    std::string why =
        name.major ? "its " + name.named_by + " says HIP " + std::to_string(*name.major) + "; " : std::string();
    return Error(ErrorKind::UnsupportedVersion, "'" + path + "' is HIP " + version_text(library->version) +
                                                    " (hipRuntimeGetVersion " + std::to_string(library->version) +
                                                    "); " + why + kReadableMajors);
  }
  return std::shared_ptr<const HipLibrary>(std::move(library));
}

}  // namespace

std::string version_text(int version) {
  return std::to_string(major_of(version)) + "." + std::to_string(minor_of(version)) + "." +
         std::to_string(version % 100000);
}

Expected<void> check(const HipApi& api, hipError_t status, std::string_view function, std::string_view what) {
  if (status == hipSuccess) return {};
  const char* name = api.get_error_name(status);
  const char* text = api.get_error_string(status);
  std::string message = "HIP " + std::string(function) + " failed with " + (name ? name : "unknown status") + " (" +
                        std::to_string(static_cast<int>(status)) + ")";
  if (text && (!name || std::strcmp(text, name) != 0)) message += ": " + std::string(text);
  if (!what.empty()) message += " " + std::string(what);
  return Error(kind_of(status), std::move(message));
}

Expected<std::shared_ptr<const HipLibrary>> find_library(const HipOptions& options) {
  // The names, in groups: the process's copy under any name of a group comes
  // before opening one of them. The default name and its versioned ones are
  // one group; a name the caller chose is its own group, the versioned
  // defaults a later one (tried only when it cannot be opened).
  const std::string fallbacks[] = {"libamdhip64.so.6", "libamdhip64.so.5"};
  std::vector<std::vector<std::string>> groups(1);
  if (!options.library.empty()) groups.back().push_back(options.library);
  if (!options.library.empty() && options.library != HipOptions{}.library) groups.emplace_back();
  for (const std::string& name : fallbacks) {
    if (name != options.library) groups.back().push_back(name);
  }
  // Only a library that cannot be opened sends us to the next name, and a
  // fallback of a HIP major coload cannot read; the library asked for by
  // name, and one the process has, is the answer.
  std::string failures;
  std::optional<Error> wrong_major;
  for (const std::vector<std::string>& group : groups) {
    for (const std::string& name : group) {
      dlerror();  // clear a stale message
      if (void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_NOLOAD)) return adopt(handle, name);
    }
    for (const std::string& name : group) {
      dlerror();
      void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!handle) {
        const char* why = dlerror();
        failures +=
            (failures.empty() ? "" : "; ") + ("cannot load HIP from '" + name + "': ") + (why ? why : "dlopen failed");
        continue;
      }
      auto library = adopt(handle, name);
      if (!library && library.error().kind() == ErrorKind::UnsupportedVersion && name != options.library) {
        if (!wrong_major) wrong_major = std::move(library).error();
        continue;
      }
      return library;
    }
  }
  if (wrong_major) return std::move(*wrong_major);
  return Error(ErrorKind::Io, "no HIP runtime library could be loaded: " + failures);
}

}  // namespace coload::hip
