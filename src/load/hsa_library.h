// load/hsa_library.h: the opened ROCr library and the one call wrapper that
// the HSA backend's files share (hsa_runtime.cpp: executables and modules;
// hsa_agents.cpp: the devices). Internal.
//
// Every HSA function coload calls is resolved once into HsaApi and called
// through call(), which turns an hsa_status_t into a coload::Error naming the
// function and hsa_status_string's text. The HSA headers give the types only;
// nothing links against libhsa-runtime64.
#pragma once

#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "coload/device.h"
#include "coload/error.h"
#include "common/try.h"

namespace coload::hsa {

// Every HSA function coload calls; one dlsym each.
#define COLOAD_HSA_FUNCTIONS(X)                \
  X(hsa_init)                                  \
  X(hsa_shut_down)                             \
  X(hsa_status_string)                         \
  X(hsa_system_get_info)                       \
  X(hsa_iterate_agents)                        \
  X(hsa_agent_get_info)                        \
  X(hsa_agent_iterate_isas)                    \
  X(hsa_isa_get_info_alt)                      \
  X(hsa_amd_agent_iterate_memory_pools)        \
  X(hsa_amd_memory_pool_get_info)              \
  X(hsa_code_object_reader_create_from_memory) \
  X(hsa_code_object_reader_destroy)            \
  X(hsa_executable_create_alt)                 \
  X(hsa_executable_destroy)                    \
  X(hsa_executable_load_agent_code_object)     \
  X(hsa_executable_freeze)                     \
  X(hsa_executable_get_symbol_by_name)         \
  X(hsa_executable_symbol_get_info)

static_assert(sizeof(hsa_device_type_t) == sizeof(std::uint32_t) && sizeof(hsa_symbol_kind_t) == sizeof(std::uint32_t),
              "HSA enums are read as 32-bit values");

struct HsaApi {
#define COLOAD_HSA_MEMBER(fn) decltype(&::fn) fn = nullptr;
  COLOAD_HSA_FUNCTIONS(COLOAD_HSA_MEMBER)
#undef COLOAD_HSA_MEMBER
};

/// The opened library: the handle, the function table, hsa_init's reference.
/// Shared by the Runtime and its modules, so hsa_shut_down comes after the
/// last executable is destroyed; the library itself is never unmapped. Immutable after open(): thread-safe.
class HsaLibrary {
 public:
  /// The ROCr the process already has, found by the SONAME family of `name`
  /// (its file name cut after ".so": any libhsa-runtime64.so[.N...] is the
  /// process's copy, whatever name it was loaded by), else `name` opened
  /// (docs/loading.md, "Which library"). Errors: UnsupportedVersion naming
  /// the file when its SONAME (or file name) has a major other than 1, before
  /// any of it is called; Io when it cannot be loaded or lacks a function
  /// coload calls.
  static Expected<std::shared_ptr<HsaLibrary>> open(const std::string& name);

  HsaLibrary(const HsaLibrary&) = delete;
  HsaLibrary& operator=(const HsaLibrary&) = delete;
  ~HsaLibrary();

  const HsaApi& api() const { return api_; }
  /// The real file behind the name dlopen was given (symlinks resolved).
  const std::string& file() const { return file_; }

  /// hsa_init; on success the destructor pairs it with hsa_shut_down.
  /// A failure is remembered for this ROCr instance for the rest of the
  /// process: later calls return the same error without calling hsa_init
  /// again (docs/loading.md, "Which library"). Thread-safe.
  /// Errors: NotFound with hsa_init's status (no GPU, no /dev/kfd).
  Expected<void> init();

  /// "<function> failed with HSA_STATUS_ERROR_X (0x...): <ROCr's text>".
  Error error(std::string_view function, hsa_status_t status) const;

 private:
  HsaLibrary(void* handle, std::string name);
  /// {"HSA_STATUS_ERROR_X (0x1008)", "description"} from hsa_status_string.
  std::pair<std::string, std::string> status_text(hsa_status_t status) const;

  void* handle_;
  std::string file_;
  HsaApi api_;
  bool initialized_ = false;
};

/// Forgets every hsa_init failure init() remembers. For tests that script a
/// failing hsa_init in a test library and then use it again in one process.
void forget_failed_inits();

/// One HSA call: success, or the error naming `function` and its status.
template <class Fn, class... Args>
Expected<void> call(const HsaLibrary& library, std::string_view function, Fn fn, Args... args) {
  hsa_status_t status = fn(args...);
  if (status == HSA_STATUS_SUCCESS) return {};
  return library.error(function, status);
}
#define COLOAD_HSA_CALL(library, fn, ...) \
  ::coload::hsa::call((library), #fn, (library).api().fn __VA_OPT__(, ) __VA_ARGS__)

/// Collects the handles an hsa_*_iterate_* function hands to its callback.
template <class Handle>
hsa_status_t collect(Handle handle, void* data) {
  static_cast<std::vector<Handle>*>(data)->push_back(handle);
  return HSA_STATUS_SUCCESS;
}

template <class T>
Expected<T> agent_info(const HsaLibrary& library, hsa_agent_t agent, hsa_agent_info_t attribute,
                       std::string_view attribute_name) {
  T value{};
  auto status = call(library, "hsa_agent_get_info(" + std::string(attribute_name) + ")",
                     library.api().hsa_agent_get_info, agent, attribute, static_cast<void*>(&value));
  COLOAD_RETURN_IF_ERROR(status);
  return value;
}

template <class T>
Expected<T> symbol_info(const HsaLibrary& library, hsa_executable_symbol_t symbol,
                        hsa_executable_symbol_info_t attribute, std::string_view attribute_name) {
  T value{};
  auto status = call(library, "hsa_executable_symbol_get_info(" + std::string(attribute_name) + ")",
                     library.api().hsa_executable_symbol_get_info, symbol, attribute, static_cast<void*>(&value));
  COLOAD_RETURN_IF_ERROR(status);
  return value;
}

/// The runtime's devices: the agents and their descriptions, index for index,
/// and one warning per GPU left out.
struct AgentDevices {
  std::vector<hsa_agent_t> agents;
  std::vector<Device> devices;
  std::vector<std::string> warnings;
};

/// The devices of `library` (after init), each with the release's limits
/// (rocr_release in hsa_runtime.h; generic code where the agent lists its
/// family's generic ISA): without `requested`, every GPU agent
/// hsa_iterate_agents lists that coload can describe, a GPU it cannot
/// reconcile (an unknown processor, an ISA name it cannot parse, a wave size
/// the processor lacks) left out and named in a warning; with it, exactly
/// those agents, in that order. Errors: NotFound when no GPU is usable;
/// InvalidArgument naming the index and handle for a requested agent that is
/// not one of this ROCr's GPU agents, repeats an earlier one, or that coload
/// cannot describe; InvalidArgument for an empty list; the HSA queries' errors
/// (Io), which fail every GPU.
Expected<AgentDevices> agent_devices(const HsaLibrary& library,
                                     const std::optional<std::vector<std::uint64_t>>& requested);

}  // namespace coload::hsa
