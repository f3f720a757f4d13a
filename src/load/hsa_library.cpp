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

#include "common/bytes.h"
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

}  // namespace

Expected<std::shared_ptr<HsaLibrary>> HsaLibrary::open(const std::string& name) {
  // The copy the process already has comes first: a runtime embedding coload
  // hands over its own agents, which only its own ROCr instance knows.
  // RTLD_NODELETE: ROCr is never unmapped (see ~HsaLibrary), even when this
  // handle is the only one.
  void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
  if (!handle) handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!handle) {
    const char* why = dlerror();
    return Error(ErrorKind::Io, "cannot load the HSA runtime '" + name + "': " + (why ? why : "dlopen failed"));
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
  return Error(ErrorKind::NotFound, std::move(message));
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
