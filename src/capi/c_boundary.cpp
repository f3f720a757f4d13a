// The C API's shared parts (c_boundary.h).
#include "capi/c_boundary.h"

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace coload::capi {

namespace {

/// This thread's last error message. Trivially destructible, so it stays
/// usable after the thread's thread_local destructors have run: a HIP
/// program's static destructors (__hipUnregisterFatBinary, registered with
/// atexit) call the C API after the main thread's have, at exit.
struct LastError {
  char* text = nullptr;  // malloc'ed, NUL-terminated; null: ""
  std::size_t capacity = 0;
};
thread_local LastError last_error;

/// Frees last_error's text when a thread ends (a process's main thread
/// frees nothing at exit: the text stays usable for the destructors after).
struct ReleaseLastError {
  ~ReleaseLastError() {
    std::free(last_error.text);
    last_error = {};
  }
};
thread_local ReleaseLastError release_last_error;

void set_last_error(std::string_view message) {
  (void)&release_last_error;  // constructed, and so released, once per thread
  if (message.size() + 1 > last_error.capacity) {
    std::size_t capacity = std::max<std::size_t>(message.size() + 1, 256);
    char* grown = static_cast<char*>(std::realloc(last_error.text, capacity));
    if (!grown) {
      // Out of memory: keep what fits of the message.
      if (last_error.capacity == 0) return;
      message = message.substr(0, last_error.capacity - 1);
    } else {
      last_error.text = grown;
      last_error.capacity = capacity;
    }
  }
  std::memcpy(last_error.text, message.data(), message.size());
  last_error.text[message.size()] = '\0';
}

/// coload_kernel_info as 0.1 had it (ending with dynamic_callstack): a caller
/// built against it passes this size and gets those fields.
constexpr std::size_t kFirstKernelInfoSize = offsetof(coload_kernel_info, dynamic_callstack) + sizeof(int);

/// The value of setting `field` (a C enum's bits) as its COLOAD_* variable
/// spells it: `spellings[value - 1]`; nullopt for 0 (unset). A value past
/// them is the caller's argument.
Expected<std::optional<std::string>> spelled(int value, const Settings& settings, const char* field,
                                             std::initializer_list<const char*> spellings) {
  if (value == 0) return std::optional<std::string>();
  if (value < 0 || static_cast<std::size_t>(value) > spellings.size()) {
    return Error(ErrorKind::InvalidArgument, std::string(settings.options) + "." + field + " " + std::to_string(value) +
                                                 " is out of range (0 to " + std::to_string(spellings.size()) + ")");
  }
  return std::optional<std::string>(spellings.begin()[value - 1]);
}

}  // namespace

Expected<Config> config_of(const Settings& given) {
  struct Setting {
    const char* field;
    std::string_view variable;
    std::optional<std::string> value;
  };
  std::vector<Setting> settings;
  auto add_enum = [&](int setting, const char* field, std::string_view variable,
                      std::initializer_list<const char*> spellings) -> Expected<void> {
    auto value = spelled(setting, given, field, spellings);
    if (!value) return std::move(value).error();
    if (*value) settings.push_back({field, variable, std::move(*value)});
    return {};
  };
  auto add_text = [&](const char* text, const char* field, std::string_view variable) {
    if (text) settings.push_back({field, variable, std::string(text)});
  };
  if (auto added = add_enum(given.unbundler, "unbundler", "COLOAD_UNBUNDLER", {"builtin", "comgr"}); !added)
    return std::move(added).error();
  if (auto added = add_enum(given.hotswap, "hotswap", "COLOAD_HOTSWAP", {"0", "1"}); !added)
    return std::move(added).error();
  if (auto added = add_enum(given.hash_check, "hash_check", "COLOAD_HASH_CHECK", {"verify", "skip"}); !added)
    return std::move(added).error();
  if (auto added = add_enum(given.log_level, "log_level", "COLOAD_LOG", {"error", "warn", "info", "debug"}); !added)
    return std::move(added).error();
  add_text(given.extended_isa_compat, "extended_isa_compat", "COLOAD_EXTENDED_ISA_COMPAT");
  add_text(given.hotswap_plugin, "hotswap_plugin", "COLOAD_HOTSWAP_PLUGIN");
  add_text(given.hotswap_pairs, "hotswap_pairs", "COLOAD_HOTSWAP_PAIRS");
  add_text(given.verify_cache, "verify_cache", "COLOAD_VERIFY_CACHE");
  if (given.max_decompressed_bytes != 0) {
    settings.push_back(
        {"max_decompressed_bytes", "COLOAD_MAX_DECOMPRESSED_BYTES", std::to_string(given.max_decompressed_bytes)});
  }
  if (settings.empty()) {
    if (given.ignore_environment) return Config{};
    return process_config();  // read once per process
  }
  // Each setting alone first, so that a bad one is named as the caller spelled it.
  for (const Setting& setting : settings) {
    auto alone = Config::from_settings(
        [&](std::string_view name) { return name == setting.variable ? setting.value : std::nullopt; }, false);
    if (!alone) {
      return Error(ErrorKind::InvalidArgument, std::string(given.options) + "." + setting.field + " \"" +
                                                   *setting.value + "\": " + alone.error().message());
    }
  }
  return Config::from_settings(
      [&](std::string_view name) -> std::optional<std::string> {
        for (const Setting& setting : settings)
          if (setting.variable == name) return setting.value;
        return std::nullopt;
      },
      !given.ignore_environment);
}

coload_status fail(coload_status status, std::string message) {
  set_last_error(message);
  return status;
}

coload_status ok() {
  if (last_error.text) last_error.text[0] = '\0';
  return COLOAD_OK;
}

coload_status status_of(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::Io: return COLOAD_ERROR_IO;
    case ErrorKind::Truncated: return COLOAD_ERROR_TRUNCATED;
    case ErrorKind::BadMagic: return COLOAD_ERROR_BAD_MAGIC;
    case ErrorKind::OutOfBounds: return COLOAD_ERROR_OUT_OF_BOUNDS;
    case ErrorKind::Overflow: return COLOAD_ERROR_OVERFLOW;
    case ErrorKind::LimitExceeded: return COLOAD_ERROR_LIMIT_EXCEEDED;
    case ErrorKind::UnsupportedVersion: return COLOAD_ERROR_UNSUPPORTED_VERSION;
    case ErrorKind::UnsupportedMethod: return COLOAD_ERROR_UNSUPPORTED_METHOD;
    case ErrorKind::HashMismatch: return COLOAD_ERROR_HASH_MISMATCH;
    case ErrorKind::SizeMismatch: return COLOAD_ERROR_SIZE_MISMATCH;
    case ErrorKind::CorruptData: return COLOAD_ERROR_CORRUPT_DATA;
    case ErrorKind::Malformed: return COLOAD_ERROR_MALFORMED;
    case ErrorKind::NotFound: return COLOAD_ERROR_NOT_FOUND;
    case ErrorKind::Ambiguous: return COLOAD_ERROR_AMBIGUOUS;
    case ErrorKind::InvalidArgument: return COLOAD_ERROR_INVALID_ARGUMENT;
  }
  return COLOAD_ERROR_INTERNAL;
}

coload_status fail(const Error& error) { return fail(status_of(error.kind()), error.message()); }

coload_status check(const coload_registry* handle, const char* function, Registry** registry) {
  if (handle == nullptr) return fail(COLOAD_ERROR_INVALID_HANDLE, std::string(function) + ": registry is null");
  if (handle->magic != kRegistryMagic || !handle->registry) {
    return fail(COLOAD_ERROR_INVALID_HANDLE,
                std::string(function) + ": not a coload_registry (bad tag: destroyed, or another object)");
  }
  *registry = handle->registry.get();
  return COLOAD_OK;
}

coload_status null_argument(const char* function, const char* argument) {
  return fail(COLOAD_ERROR_NULL_ARGUMENT, std::string(function) + ": " + argument + " is null");
}

coload_status check_kernel_info(const char* function, const coload_kernel_info* out) {
  if (!out) return null_argument(function, "out");
  if (out->struct_size < kFirstKernelInfoSize) {
    return fail(COLOAD_ERROR_BAD_STRUCT_SIZE, std::string(function) + ": out->struct_size " +
                                                  std::to_string(out->struct_size) + " is less than " +
                                                  std::to_string(kFirstKernelInfoSize));
  }
  return COLOAD_OK;
}

Dispatch dispatch_of(std::uint64_t kernarg_bytes, std::uint64_t dynamic_lds, const std::uint32_t* workgroup_size) {
  Dispatch dispatch{.kernarg_bytes = kernarg_bytes, .dynamic_lds = dynamic_lds};
  if (workgroup_size) dispatch.workgroup_size = {workgroup_size[0], workgroup_size[1], workgroup_size[2]};
  return dispatch;
}

void fill_kernel_info(const LoadedKernel& kernel, coload_kernel_info* out) {
  out->handle = kernel.handle;
  out->kernarg_segment_size = kernel.kernarg_segment_size;
  out->kernarg_segment_align = kernel.kernarg_segment_align;
  out->group_segment_size = kernel.group_segment_size;
  out->private_segment_size = kernel.private_segment_size;
  out->dynamic_callstack = kernel.dynamic_callstack ? 1 : 0;
  if (out->struct_size >= offsetof(coload_kernel_info, explicit_kernarg_size) + sizeof(std::uint32_t))
    out->explicit_kernarg_size = kernel.explicit_kernarg_size;
}

const char* last_error_message() { return last_error.text ? last_error.text : ""; }

}  // namespace coload::capi
