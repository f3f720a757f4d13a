// load/hsa_library.cpp: opening ROCr (the process's copy first), hsa_init,
// and turning an hsa_status_t into a coload::Error (hsa_library.h).
//
// Status → ErrorKind: hsa_init failing is NotFound (no GPU, no /dev/kfd);
// INVALID_SYMBOL_NAME is NotFound; INCOMPATIBLE_ARGUMENTS, INVALID_ARGUMENT and
// INVALID_AGENT are InvalidArgument (the code object does not fit the agent);
// INVALID_CODE_OBJECT, INVALID_ISA and INVALID_ISA_NAME are Malformed; every
// other status (OUT_OF_RESOURCES, NOT_INITIALIZED, ERROR, …) is Io.
#include "load/hsa_library.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <map>
#include <mutex>

#include "common/bytes.h"
#include "load/loaded_library.h"
#include "load/process_exit.h"

namespace coload::hsa {
namespace {

ErrorKind kind_of(hsa_status_t status) {
  switch (status) {
    case HSA_STATUS_ERROR_INVALID_SYMBOL_NAME: return ErrorKind::NotFound;
    case HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS:
    case HSA_STATUS_ERROR_INVALID_ARGUMENT:
    case HSA_STATUS_ERROR_INVALID_AGENT: return ErrorKind::InvalidArgument;
    case HSA_STATUS_ERROR_INVALID_CODE_OBJECT:
    case HSA_STATUS_ERROR_INVALID_ISA:
    case HSA_STATUS_ERROR_INVALID_ISA_NAME: return ErrorKind::Malformed;
    default: return ErrorKind::Io;
  }
}

/// The SONAME major of every ROCr coload knows (libhsa-runtime64.so.1, ROCm 5.0 to 7.x).
constexpr int kRocrMajor = 1;

Error unknown_major(const detail::LoadedLibrary& library) {
  return Error(ErrorKind::UnsupportedVersion, "the HSA runtime '" + library.path + "' (" + library.name +
                                                  ") is ROCr major " + std::to_string(*library.major) +
                                                  "; coload knows ROCr " + std::to_string(kRocrMajor) +
                                                  " only and does not start another");
}

/// hsa_init failures, by the failing instance's hsa_init: a failed hsa_init
/// may leave ROCr half initialised, and calling it again then can crash
/// (rocm-systems#10739), so a failure stands for the rest of the process.
struct FailedInits {
  std::mutex mutex;
  std::map<void*, Error> errors;
};
FailedInits& failed_inits() {
  static FailedInits failed;
  return failed;
}

}  // namespace

void forget_failed_inits() {
  FailedInits& failed = failed_inits();
  std::lock_guard<std::mutex> lock(failed.mutex);
  failed.errors.clear();
}

Expected<std::shared_ptr<HsaLibrary>> HsaLibrary::open(const std::string& name) {
  // The copy the process already has comes first: a runtime embedding coload
  // hands over its own agents, which only its own ROCr instance knows. It is
  // found by its SONAME family, not by `name`: RTLD_NOLOAD matches exact
  // names only, and a wheel's copy is torch/lib/libhsa-runtime64.so.
  // RTLD_NODELETE: ROCr is never unmapped (see ~HsaLibrary), even when this
  // handle is the only one.
  const std::string family = detail::family_of(name);
  void* handle = nullptr;
  if (auto loaded = detail::find_loaded_library(family)) {
    if (loaded->major && *loaded->major != kRocrMajor) return unknown_major(*loaded);
    handle = dlopen(loaded->path.c_str(), RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
  }
  if (!handle) {
    // A name that says another major is not even opened.
    if (auto major = detail::major_in_name(name); major && *major != kRocrMajor) {
      return unknown_major({name, std::string(detail::base_name(name)), major});
    }
    handle = dlopen(name.c_str(), RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
    if (!handle) handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  }
  if (!handle) {
    const char* why = dlerror();
    return Error(ErrorKind::Io, "cannot load the HSA runtime '" + name + "': " + (why ? why : "dlopen failed"));
  }
  // What was opened may still be another major (a plain name linked to .so.2).
  if (auto opened = detail::loaded_library_of(handle); opened && opened->major && *opened->major != kRocrMajor) {
    return unknown_major(*opened);
  }
  std::shared_ptr<HsaLibrary> library(new HsaLibrary(handle, name));
#define COLOAD_HSA_RESOLVE(fn)                                                                    \
  library->api_.fn = reinterpret_cast<decltype(&::fn)>(dlsym(handle, #fn));                       \
  if (!library->api_.fn) {                                                                        \
    return Error(ErrorKind::Io, "the HSA runtime '" + library->file_ + "' does not export " #fn); \
  }
  COLOAD_HSA_FUNCTIONS(COLOAD_HSA_RESOLVE)
#undef COLOAD_HSA_RESOLVE
  return library;
}

HsaLibrary::HsaLibrary(void* handle, std::string name) : handle_(handle), file_(std::move(name)) {
  link_map* map = nullptr;
  if (dlinfo(handle_, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name) {
    if (char* real = realpath(map->l_name, nullptr)) {
      file_ = real;
      std::free(real);
    } else {
      file_ = map->l_name;
    }
  }
}

HsaLibrary::~HsaLibrary() {
  // At exit ROCr may already be torn down: the exiting process releases it.
  if (initialized_ && !detail::process_exiting()) api_.hsa_shut_down();
  // No dlclose: unmapping ROCr runs its static destructors after
  // Runtime::Unload has torn its state down, which corrupts the heap
  // (ROCm/AMDMIGraphX#4792, ROCm/clr#272); the library stays until exit.
}

Expected<void> HsaLibrary::init() {
  FailedInits& failed = failed_inits();
  void* instance = reinterpret_cast<void*>(api_.hsa_init);
  // Held across hsa_init: two first calls of one instance must not both run it.
  std::lock_guard<std::mutex> lock(failed.mutex);
  if (auto remembered = failed.errors.find(instance); remembered != failed.errors.end()) {
    return Error(remembered->second.kind(),
                 remembered->second.message() + " (earlier in this process; hsa_init is not called again)");
  }
  hsa_status_t status = api_.hsa_init();
  if (status == HSA_STATUS_SUCCESS) {
    initialized_ = true;
    detail::watch_process_exit();
    return {};
  }
  auto [name, description] = status_text(status);
  std::string message = "hsa_init failed with " + name;
  if (status == HSA_STATUS_ERROR_OUT_OF_RESOURCES) {
    message += ": no AMD GPU or /dev/kfd not available (" + description + ")";
  } else {
    message += ": " + description + " (no usable AMD GPU?)";
  }
  Error error(ErrorKind::NotFound, std::move(message));
  failed.errors.emplace(instance, error);
  return error;
}

Error HsaLibrary::error(std::string_view function, hsa_status_t status) const {
  auto [name, description] = status_text(status);
  return Error(kind_of(status), std::string(function) + " failed with " + name + ": " + description);
}

std::pair<std::string, std::string> HsaLibrary::status_text(hsa_status_t status) const {
  const char* text = nullptr;
  std::string code = detail::hex(static_cast<std::uint32_t>(status));
  if (api_.hsa_status_string(status, &text) != HSA_STATUS_SUCCESS || !text) {
    return {"status " + code, "hsa_status_string has no text for it"};
  }
  std::string_view view(text);
  std::size_t colon = view.find(':');
  if (view.starts_with("HSA_STATUS") && colon != std::string_view::npos) {
    std::string_view rest = view.substr(colon + 1);
    while (rest.starts_with(' ')) rest.remove_prefix(1);
    return {std::string(view.substr(0, colon)) + " (" + code + ")", std::string(rest)};
  }
  return {"status " + code, std::string(view)};
}

}  // namespace coload::hsa
