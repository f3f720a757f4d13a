// load/hip_library.cpp: finding and opening libamdhip64 (hip_library.h).
//
// The major first, from the library's own name: hipRuntimeGetVersion runs
// HIP's full init (CLR's HIP_INIT_API), and a runtime started only to be
// refused stays started beside the one the process uses. A library whose
// names carry no major (a test library, a local build) is asked for its
// version, then checked the same way.
#include "load/hip_library.h"
#include "common/try.h"
#include "load/loaded_library.h"
#include "load/process_exit.h"

#include <dlfcn.h>

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

/// Which file a handle is and the major its names carry: the SONAME
/// (libamdhip64.so.6), else the real file name (libamdhip64.so.6.2.41133).
struct LibraryName {
  std::string file;      ///< the real path, or the name it was opened by
  std::string named_by;  ///< "SONAME libamdhip64.so.6" or "file name"
  std::optional<int> major;
};
LibraryName name_of(void* handle, const std::string& opened_as) {
  LibraryName name{opened_as, "", std::nullopt};
  const std::optional<detail::LoadedLibrary> loaded = detail::loaded_library_of(handle);
  if (!loaded) return name;
  if (char* real = realpath(loaded->path.c_str(), nullptr)) {
    name.file = real;
    std::free(real);
  } else {
    name.file = loaded->path;
  }
  if (loaded->soname && (name.major = loaded->major)) {
    name.named_by = "SONAME " + loaded->name;
    return name;
  }
  if ((name.major = detail::major_in_name(name.file))) name.named_by = "file name";
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
  COLOAD_RETURN_IF_ERROR(check(library->api, library->api.runtime_get_version(&library->version),
                               "hipRuntimeGetVersion", "in '" + path + "'"));
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

std::vector<unsigned> code_object_versions_of(int version) {
  const int major = major_of(version), minor = minor_of(version);
  if (major == 5 && minor < 2) return {4};
  if (major == 5 || (major == 6 && minor < 2)) return {4, 5};
  return {4, 5, 6};
}

bool loads_generic(int version) { return major_of(version) > 6 || (major_of(version) == 6 && minor_of(version) >= 4); }

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
  // The names, in groups: the process's copy, under any name of a group or
  // by the group's SONAME family, comes before opening one of them. The
  // default name and its versioned ones (newest first) are one group; a name
  // the caller chose is its own group, the versioned defaults a later one
  // (tried only when it cannot be opened).
  const std::string default_name = HipOptions{}.library;
  const std::string fallbacks[] = {"libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5"};
  struct Group {
    std::vector<std::string> names;
    std::string family;
  };
  std::vector<Group> groups{{{}, detail::family_of(default_name)}};
  if (!options.library.empty()) groups.back() = {{options.library}, detail::family_of(options.library)};
  if (!options.library.empty() && options.library != default_name)
    groups.push_back({{}, detail::family_of(default_name)});
  for (const std::string& name : fallbacks) {
    if (name != options.library) groups.back().names.push_back(name);
  }
  // Only a library that cannot be opened sends us to the next name, and a
  // fallback of a HIP major coload cannot read; the library asked for by
  // name, and one the process has, is the answer.
  std::string failures;
  std::optional<Error> wrong_major;
  for (const Group& group : groups) {
    for (const std::string& name : group.names) {
      dlerror();  // clear a stale message
      if (void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_NOLOAD)) return adopt(handle, name);
    }
    // Under another name (a later major, a copy a wheel ships): found by the
    // loader's own records, then asked for by the path it was loaded from.
    if (std::optional<detail::LoadedLibrary> loaded = detail::find_loaded_library(group.family)) {
      if (void* handle = dlopen(loaded->path.c_str(), RTLD_NOW | RTLD_NOLOAD)) return adopt(handle, loaded->path);
    }
    for (const std::string& name : group.names) {
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
