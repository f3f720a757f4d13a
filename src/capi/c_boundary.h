// What every file of the C API shares: the registry handle behind
// coload_registry*, this thread's last error, the status of an ErrorKind, the
// guard that keeps every C++ exception on this side of the boundary, and the
// Config an options struct's settings give.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>

#include "coload/coload.h"
#include "coload/config.h"
#include "coload/error.h"
#include "coload/registry.h"
#include "coload/runtime.h"
#include "coload/validate.h"

namespace coload::capi {

constexpr std::uint64_t kRegistryMagic = 0x59524745524c4f43;  // "COLREGRY"
constexpr std::uint64_t kDeadMagic = 0xdeaddeaddeaddead;

/// Sets this thread's last error message and returns `status`.
coload_status fail(coload_status status, std::string message);
/// fail() with the status of the error's kind and its whole message.
coload_status fail(const Error& error);
/// Clears this thread's last error and returns COLOAD_OK.
coload_status ok();
/// The status that mirrors `kind`.
coload_status status_of(ErrorKind kind);
/// This thread's last error message ("" after a success).
const char* last_error_message();
/// coload_last_error_location: this thread's last error's status and
/// location into the fields of `out` its struct_size covers.
coload_status last_error_location(coload_error_location* out);

/// Runs `body`, turning any exception into a status: nothing crosses into C.
template <class Body>
coload_status guarded(const char* function, Body&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return fail(COLOAD_ERROR_OUT_OF_MEMORY, std::string(function) + ": out of memory");
  } catch (const std::exception& exception) {
    return fail(COLOAD_ERROR_INTERNAL, std::string(function) + ": " + exception.what());
  } catch (...) {
    return fail(COLOAD_ERROR_INTERNAL, std::string(function) + ": unknown exception");
  }
}

/// Checks `handle`'s tag; on success *registry is the C++ registry behind it.
coload_status check(const coload_registry* handle, const char* function, Registry** registry);
/// COLOAD_ERROR_NULL_ARGUMENT naming the function and the argument.
coload_status null_argument(const char* function, const char* argument);

/// What every coload_register_* does around its own step: the handle
/// checked, *out cleared, `argument` (named `argument_name`) required, then
/// the handle `body(registry)` registers stored in *out.
template <class Body>
coload_status register_binary(const char* function, coload_registry* handle, coload_binary* out, const void* argument,
                              const char* argument_name, Body&& body) noexcept {
  return guarded(function, [&] {
    Registry* registry = nullptr;
    if (coload_status status = check(handle, function, &registry); status != COLOAD_OK) return status;
    if (!out) return null_argument(function, "out");
    *out = 0;
    if (!argument) return null_argument(function, argument_name);
    Expected<BinaryHandle> binary = body(*registry);
    if (!binary) return fail(binary.error());
    *out = binary->value;
    return ok();
  });
}
/// COLOAD_OK when `out` is a coload_kernel_info the caller sized for this
/// library; null_argument or COLOAD_ERROR_BAD_STRUCT_SIZE otherwise.
coload_status check_kernel_info(const char* function, const coload_kernel_info* out);
/// The Dispatch a C caller describes (workgroup_size may be null: 1×1×1).
Dispatch dispatch_of(std::uint64_t kernarg_bytes, std::uint64_t dynamic_lds, const std::uint32_t* workgroup_size);
/// Copies `kernel` into `out` (checked by check_kernel_info).
void fill_kernel_info(const LoadedKernel& kernel, coload_kernel_info* out);

// C callers may pass any int where an enum is declared; reading it as the
// C++ enum would be undefined, so the bits are read as an int.
template <class Enum>
int enum_bits(const Enum& value) {
  static_assert(sizeof(Enum) == sizeof(int), "C enums are int-sized on every ABI coload supports");
  int bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

/// The caller's options struct as this library knows it: its first
/// `struct_size` bytes over a zeroed struct, so fields a caller built against
/// an older coload.h lacks keep their defaults. COLOAD_ERROR_BAD_STRUCT_SIZE
/// when struct_size is below `first_size`, the size of the struct's first version.
template <class Options>
coload_status copy_options(const char* function, const Options& options, std::size_t first_size, Options& into) {
  if (options.struct_size < first_size) {
    return fail(COLOAD_ERROR_BAD_STRUCT_SIZE, std::string(function) + ": options->struct_size " +
                                                  std::to_string(options.struct_size) + " is less than " +
                                                  std::to_string(first_size));
  }
  into = Options{};
  std::memcpy(&into, &options, std::min(options.struct_size, sizeof into));
  return COLOAD_OK;
}

/// The settings an options struct gives (coload_registry_options,
/// coload_select_options) as the caller set them: 0 or null leaves one to its
/// COLOAD_* variable (unless ignore_environment), then to its default. Enums
/// are their bits (enum_bits).
struct Settings {
  const char* options = "";  ///< the struct, for errors: "coload_registry_options"
  bool ignore_environment = false;
  int unbundler = 0;
  int hotswap = 0;
  int hash_check = 0;
  int log_level = 0;
  const char* extended_isa_compat = nullptr;
  const char* hotswap_plugin = nullptr;
  const char* hotswap_pairs = nullptr;
  const char* verify_cache = nullptr;
  std::uint64_t max_decompressed_bytes = 0;
  const char* kpack_root = nullptr;
  const char* kpack_binary_path = nullptr;  ///< no variable: KpackSearch::binary_path
};

/// The Config `settings` give, spelled as the COLOAD_* variables (so one
/// parser checks both), then the environment unless ignore_environment.
/// Errors: InvalidArgument naming the options field and the value.
Expected<Config> config_of(const Settings& settings);

}  // namespace coload::capi

/// The registry behind a coload_registry*: tagged, so that a foreign or
/// destroyed pointer is told apart from a live one (coload.h, "Conventions").
struct coload_registry {
  std::uint64_t magic = coload::capi::kRegistryMagic;
  std::unique_ptr<coload::Registry> registry;
};
