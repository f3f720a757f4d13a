// libcoload_preload.so's exports (docs/preload.md): HIP's registration entry
// points, called by the static constructors clang writes into every HIP
// executable and shared library, and its module loads from memory. Each hands
// the call to the next definition in the process (the real HIP runtime, found
// with dlsym(RTLD_NEXT)), with the wrapper or image coload's session chose.
#include <dlfcn.h>
#include <unistd.h>

#include <string_view>

#include "preload/session.h"

namespace {

/// The next definition of `symbol`; without one, the process ends as the
/// dynamic loader ends one that calls an undefined function (the program
/// would not have run without a HIP runtime either).
void* next_definition(const char* symbol) {
  void* next = ::dlsym(RTLD_NEXT, symbol);
  if (next) return next;
  const std::string_view parts[] = {"coload: symbol lookup error: undefined symbol: ", symbol,
                                    " (libcoload_preload.so found no HIP runtime after it)\n"};
  for (std::string_view part : parts) [[maybe_unused]]
    ssize_t written = ::write(STDERR_FILENO, part.data(), part.size());
  ::_exit(127);
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) void** __hipRegisterFatBinary(const void* wrapper) {
  static const auto next =
      reinterpret_cast<coload::preload::RegisterFatBinary>(next_definition("__hipRegisterFatBinary"));
  return coload::preload::Session::process(reinterpret_cast<const void*>(next)).register_fat_binary(wrapper, next);
}

__attribute__((visibility("default"))) void __hipUnregisterFatBinary(void** handle) {
  static const auto next =
      reinterpret_cast<coload::preload::UnregisterFatBinary>(next_definition("__hipUnregisterFatBinary"));
  coload::preload::Session::process(reinterpret_cast<const void*>(next)).unregister_fat_binary(handle, next);
}

// hipModuleLoadData and hipModuleLoadDataEx (HIP's hip_runtime_api.h; a
// hipError_t is an int-sized enum, a hipModule_t a pointer, a hipJitOption
// an enum passed by pointer) and hipModuleUnload.
using HipError = int;
using HipModule = void*;

__attribute__((visibility("default"))) HipError hipModuleLoadData(HipModule* module, const void* image) {
  static const auto next =
      reinterpret_cast<HipError (*)(HipModule*, const void*)>(next_definition("hipModuleLoadData"));
  static const auto get_device = reinterpret_cast<coload::preload::GetDevice>(::dlsym(RTLD_NEXT, "hipGetDevice"));
  return coload::preload::Session::process(reinterpret_cast<const void*>(next))
      .load_module(module, image, [&](const void* given) { return next(module, given); }, get_device);
}

__attribute__((visibility("default"))) HipError hipModuleLoadDataEx(HipModule* module, const void* image,
                                                                    unsigned int count, void* options, void** values) {
  static const auto next = reinterpret_cast<HipError (*)(HipModule*, const void*, unsigned int, void*, void**)>(
      next_definition("hipModuleLoadDataEx"));
  static const auto get_device = reinterpret_cast<coload::preload::GetDevice>(::dlsym(RTLD_NEXT, "hipGetDevice"));
  return coload::preload::Session::process(reinterpret_cast<const void*>(next))
      .load_module(
          module, image, [&](const void* given) { return next(module, given, count, options, values); }, get_device);
}

__attribute__((visibility("default"))) HipError hipModuleUnload(HipModule module) {
  static const auto next = reinterpret_cast<HipError (*)(HipModule)>(next_definition("hipModuleUnload"));
  return coload::preload::Session::process(reinterpret_cast<const void*>(next)).unload_module(module, [&](void* given) {
    return next(given);
  });
}

}  // extern "C"
