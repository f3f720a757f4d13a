// The C API's shared parts (c_boundary.h).
#include "capi/c_boundary.h"

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/try.h"

namespace coload::capi {

namespace {

/// This thread's last error: its status, message and location. Trivially
/// destructible, so it stays usable after the thread's thread_local
/// destructors have run: a HIP program's static destructors
/// (__hipUnregisterFatBinary, registered with atexit) call the C API after
/// the main thread's have, at exit.
struct LastError {
  // malloc'ed: the message, then the location's file, entry_id and field,
  // each NUL-terminated; null: all "".
  char* text = nullptr;
  std::size_t capacity = 0;
  coload_status status = COLOAD_OK;
  std::uint32_t has = 0;                          // COLOAD_LOCATION_HAS_* bits
  std::size_t file = 0, entry_id = 0, field = 0;  // their offsets in text
  std::uint64_t bundle = 0, bundle_offset = 0, entry = 0, offset = 0, value = 0, limit = 0;
};
static_assert(std::is_trivially_destructible_v<LastError>, "the C API is called after thread_local destructors");
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

/// Makes room for `size` bytes of text; false (the old room kept) when
/// memory is short.
bool reserve_text(std::size_t size) {
  (void)&release_last_error;  // constructed, and so released, once per thread
  if (size <= last_error.capacity) return true;
  std::size_t capacity = std::max<std::size_t>(size, 256);
  char* grown = static_cast<char*>(std::realloc(last_error.text, capacity));
  if (!grown) return false;
  last_error.text = grown;
  last_error.capacity = capacity;
  return true;
}

/// Records `status`, `message` and, when given, `location`. Out of memory,
/// what fits of the message is kept and the location's strings are "".
void set_last_error(coload_status status, std::string_view message, const ErrorLocation* location) {
  LastError& error = last_error;
  error.status = status;
  error.has = 0;
  error.bundle = error.bundle_offset = error.entry = error.offset = error.value = error.limit = 0;
  struct Part {
    std::string_view text;
    std::size_t* offset;
  };
  Part parts[] = {{{}, &error.file}, {{}, &error.entry_id}, {{}, &error.field}};
  if (location) {
    parts[0].text = location->file;
    parts[1].text = location->entry_id;
    parts[2].text = location->field;
    auto take = [&](const auto& number, std::uint32_t bit, std::uint64_t& into) {
      if (!number) return;
      error.has |= bit;
      into = static_cast<std::uint64_t>(*number);
    };
    take(location->bundle, COLOAD_LOCATION_HAS_BUNDLE, error.bundle);
    take(location->bundle_offset, COLOAD_LOCATION_HAS_BUNDLE_OFFSET, error.bundle_offset);
    take(location->entry, COLOAD_LOCATION_HAS_ENTRY, error.entry);
    take(location->offset, COLOAD_LOCATION_HAS_OFFSET, error.offset);
    take(location->value, COLOAD_LOCATION_HAS_VALUE, error.value);
    take(location->limit, COLOAD_LOCATION_HAS_LIMIT, error.limit);
  }
  std::size_t size = message.size() + 1;
  for (const Part& part : parts) size += part.text.size() + 1;
  const bool whole = reserve_text(size);
  if (!whole && !reserve_text(message.size() + 1)) {
    if (error.capacity == 0) return;  // no text at all: every string reads ""
    message = message.substr(0, error.capacity - 1);
  }
  if (!message.empty()) std::memcpy(error.text, message.data(), message.size());  // data() may be null
  error.text[message.size()] = '\0';
  std::size_t next = message.size() + 1;
  for (const Part& part : parts) {
    if (!whole) {
      *part.offset = message.size();  // the message's NUL: ""
      continue;
    }
    *part.offset = next;
    if (!part.text.empty()) std::memcpy(error.text + next, part.text.data(), part.text.size());
    error.text[next + part.text.size()] = '\0';
    next += part.text.size() + 1;
  }
}

/// The string at `offset` of last_error's text; "" when there is none.
const char* last_error_text(std::size_t offset) { return last_error.text ? last_error.text + offset : ""; }

/// The part of coload_error_location a caller must pass (through `has`);
/// each field after it is written only when struct_size covers it whole.
constexpr std::size_t kFirstLocationSize = offsetof(coload_error_location, has) + sizeof(std::uint32_t);

/// Where each field of coload_error_location after struct_size ends, in order.
constexpr std::size_t kLocationFieldEnds[] = {
    offsetof(coload_error_location, status) + sizeof(coload_status),
    kFirstLocationSize,
    offsetof(coload_error_location, file) + sizeof(const char*),
    offsetof(coload_error_location, bundle) + sizeof(std::uint64_t),
    offsetof(coload_error_location, bundle_offset) + sizeof(std::uint64_t),
    offsetof(coload_error_location, entry) + sizeof(std::uint64_t),
    offsetof(coload_error_location, entry_id) + sizeof(const char*),
    offsetof(coload_error_location, field) + sizeof(const char*),
    offsetof(coload_error_location, offset) + sizeof(std::uint64_t),
    offsetof(coload_error_location, value) + sizeof(std::uint64_t),
    offsetof(coload_error_location, limit) + sizeof(std::uint64_t),
};
static_assert(kLocationFieldEnds[std::size(kLocationFieldEnds) - 1] == sizeof(coload_error_location),
              "kLocationFieldEnds lists every field of coload_error_location");

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
    COLOAD_RETURN_IF_ERROR(value);
    if (*value) settings.push_back({field, variable, std::move(*value)});
    return {};
  };
  auto add_text = [&](const char* text, const char* field, std::string_view variable) {
    if (text) settings.push_back({field, variable, std::string(text)});
  };
  COLOAD_RETURN_IF_ERROR(add_enum(given.unbundler, "unbundler", "COLOAD_UNBUNDLER", {"builtin", "comgr"}));
  COLOAD_RETURN_IF_ERROR(add_enum(given.hotswap, "hotswap", "COLOAD_HOTSWAP", {"0", "1"}));
  COLOAD_RETURN_IF_ERROR(add_enum(given.hash_check, "hash_check", "COLOAD_HASH_CHECK", {"verify", "skip"}));
  COLOAD_RETURN_IF_ERROR(add_enum(given.log_level, "log_level", "COLOAD_LOG", {"error", "warn", "info", "debug"}));
  add_text(given.extended_isa_compat, "extended_isa_compat", "COLOAD_EXTENDED_ISA_COMPAT");
  add_text(given.hotswap_plugin, "hotswap_plugin", "COLOAD_HOTSWAP_PLUGIN");
  add_text(given.hotswap_pairs, "hotswap_pairs", "COLOAD_HOTSWAP_PAIRS");
  add_text(given.verify_cache, "verify_cache", "COLOAD_VERIFY_CACHE");
  add_text(given.kpack_root, "kpack_root", "COLOAD_KPACK_ROOT");
  if (given.max_decompressed_bytes != 0) {
    settings.push_back(
        {"max_decompressed_bytes", "COLOAD_MAX_DECOMPRESSED_BYTES", std::to_string(given.max_decompressed_bytes)});
  }
  auto with_binary_path = [&](Config config) {
    if (given.kpack_binary_path) config.kpack.binary_path = given.kpack_binary_path;
    return config;
  };
  if (settings.empty()) {
    if (given.ignore_environment) return with_binary_path(Config{});
    const Expected<Config>& process = process_config();  // read once per process
    if (!process) return process.error();
    return with_binary_path(*process);
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
  auto config = Config::from_settings(
      [&](std::string_view name) -> std::optional<std::string> {
        for (const Setting& setting : settings)
          if (setting.variable == name) return setting.value;
        return std::nullopt;
      },
      !given.ignore_environment);
  COLOAD_RETURN_IF_ERROR(config);
  return with_binary_path(std::move(*config));
}

coload_status fail(coload_status status, std::string message) {
  set_last_error(status, message, nullptr);
  return status;
}

coload_status ok() {
  LastError& error = last_error;
  if (error.text) error.text[0] = '\0';
  error.status = COLOAD_OK;
  error.has = 0;
  error.file = error.entry_id = error.field = 0;  // text[0]: ""
  error.bundle = error.bundle_offset = error.entry = error.offset = error.value = error.limit = 0;
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

coload_status fail(const Error& error) {
  coload_status status = status_of(error.kind());
  set_last_error(status, error.message(), &error.location());
  return status;
}

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

const char* last_error_message() { return last_error_text(0); }

coload_status last_error_location(coload_error_location* out) {
  // Neither failure is recorded: the last error is what the caller inspects.
  if (!out) return COLOAD_ERROR_NULL_ARGUMENT;
  if (out->struct_size < kFirstLocationSize) return COLOAD_ERROR_BAD_STRUCT_SIZE;
  const LastError& error = last_error;
  coload_error_location full{};
  full.status = error.status;
  full.has = error.has;
  full.file = last_error_text(error.file);
  full.bundle = error.bundle;
  full.bundle_offset = error.bundle_offset;
  full.entry = error.entry;
  full.entry_id = last_error_text(error.entry_id);
  full.field = last_error_text(error.field);
  full.offset = error.offset;
  full.value = error.value;
  full.limit = error.limit;
  std::size_t end = 0;
  for (std::size_t field_end : kLocationFieldEnds)
    if (field_end <= out->struct_size) end = field_end;
  constexpr std::size_t kStart = sizeof full.struct_size;
  std::memcpy(reinterpret_cast<char*>(out) + kStart, reinterpret_cast<const char*>(&full) + kStart, end - kStart);
  return COLOAD_OK;
}

}  // namespace coload::capi
