// The C API (coload/coload.h) over coload::Registry: handles checked by a
// magic tag, sizes of options structs checked, every C++ error and exception
// turned into a status plus a thread-local message.
#include "coload/coload.h"
#include "coload/detail/registry_copies.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "capi/c_boundary.h"
#include "coload/config.h"
#include "coload/device.h"
#include "coload/error.h"
#include "coload/pipeline.h"
#include "coload/registry.h"
#include "coload/runtime.h"
#include "common/try.h"

using namespace coload::capi;  // NOLINT: the C API's shared parts, in every entry point

namespace {

coload::Expected<std::vector<coload::Device>> parse_devices(std::string_view specs) {
  std::vector<coload::Device> devices;
  while (!specs.empty()) {
    std::size_t comma = specs.find(',');
    std::string_view spec = specs.substr(0, comma);
    while (!spec.empty() && spec.front() == ' ') spec.remove_prefix(1);
    while (!spec.empty() && spec.back() == ' ') spec.remove_suffix(1);
    if (!spec.empty()) {
      auto device = coload::device_from_spec(spec);
      if (!device) {  // a bad spec is the caller's argument, whatever the parser called it (coload.h)
        return coload::Error(coload::ErrorKind::InvalidArgument,
                             "dry_run_devices \"" + std::string(spec) + "\": " + device.error().message());
      }
      devices.push_back(std::move(*device));
    }
    if (comma == std::string_view::npos) break;
    specs.remove_prefix(comma + 1);
  }
  if (devices.empty()) {
    return coload::Error(coload::ErrorKind::InvalidArgument, "dry_run_devices lists no device");
  }
  return devices;
}

/// The registry's Config: the settings `options` gives (c_boundary.h).
coload::Expected<coload::Config> config_of(const coload_registry_options& options) {
  return config_of(Settings{.options = "coload_registry_options",
                            .ignore_environment = options.ignore_environment != 0,
                            .unbundler = enum_bits(options.unbundler),
                            .hotswap = enum_bits(options.hotswap),
                            .hash_check = enum_bits(options.hash_check),
                            .log_level = enum_bits(options.log_level),
                            .extended_isa_compat = options.extended_isa_compat,
                            .hotswap_plugin = options.hotswap_plugin,
                            .hotswap_pairs = options.hotswap_pairs,
                            .verify_cache = options.verify_cache,
                            .max_decompressed_bytes = options.max_decompressed_bytes,
                            .kpack_root = options.kpack_root,
                            .kpack_binary_path = options.kpack_binary_path});
}

/// A caller's device list (hsa_agents, hip_devices) as the C++ options take
/// it: nullopt without a pointer. coload_registry_create has refused a null
/// pointer with a count.
template <class T>
coload::Expected<std::optional<std::vector<T>>> device_list(const T* items, std::size_t count, const char* field) {
  // More than any machine has: a count that is not one, rather than a reason to allocate.
  constexpr std::size_t kMaxDevices = 4096;
  if (!items) return std::optional<std::vector<T>>();
  if (count > kMaxDevices) {
    return coload::Error(coload::ErrorKind::InvalidArgument,
                         std::string("coload_registry_options.") + field + "_count " + std::to_string(count) +
                             " is above the limit of " + std::to_string(kMaxDevices));
  }
  return std::optional<std::vector<T>>(std::vector<T>(items, items + count));
}

coload::Expected<std::shared_ptr<coload::Runtime>> open_runtime(const coload_registry_options& options) {
  const bool hsa_agents = options.hsa_agents || options.hsa_agent_count;
  const bool hip_devices = options.hip_devices || options.hip_device_count;
  const int runtime = enum_bits(options.runtime);
  // Each list belongs to one runtime: its values mean nothing to the others.
  auto refuse_list = [](const char* field, const char* runtime_name) {
    return coload::Error(coload::ErrorKind::InvalidArgument, std::string("coload_registry_options.") + field +
                                                                 " is not for the " + runtime_name + " runtime");
  };
  switch (runtime) {
    case COLOAD_RUNTIME_HSA: {
      if (hip_devices) return refuse_list("hip_devices", "HSA");
      coload::HsaOptions hsa;
      if (options.runtime_library) hsa.library = options.runtime_library;
      auto agents = device_list(options.hsa_agents, options.hsa_agent_count, "hsa_agent");
      COLOAD_RETURN_IF_ERROR(agents);
      hsa.agents = std::move(*agents);
      auto runtime = coload::open_hsa_runtime(hsa);
      COLOAD_RETURN_IF_ERROR(runtime);
      return std::shared_ptr<coload::Runtime>(std::move(*runtime));
    }
    case COLOAD_RUNTIME_HIP: {
      if (hsa_agents) return refuse_list("hsa_agents", "HIP");
      coload::HipOptions hip;
      if (options.runtime_library) hip.library = options.runtime_library;
      auto devices = device_list(options.hip_devices, options.hip_device_count, "hip_device");
      COLOAD_RETURN_IF_ERROR(devices);
      hip.devices = std::move(*devices);
      auto runtime = coload::open_hip_runtime(hip);
      COLOAD_RETURN_IF_ERROR(runtime);
      return std::shared_ptr<coload::Runtime>(std::move(*runtime));
    }
    case COLOAD_RUNTIME_DRY_RUN: {
      if (hsa_agents) return refuse_list("hsa_agents", "dry-run");
      if (hip_devices) return refuse_list("hip_devices", "dry-run");
      if (!options.dry_run_devices) {
        return coload::Error(coload::ErrorKind::InvalidArgument, "the dry-run runtime needs dry_run_devices");
      }
      auto devices = parse_devices(options.dry_run_devices);
      COLOAD_RETURN_IF_ERROR(devices);
      return std::shared_ptr<coload::Runtime>(coload::open_dry_run_runtime(std::move(*devices)));
    }
  }
  return coload::Error(coload::ErrorKind::InvalidArgument,
                       "unknown runtime kind " + std::to_string(runtime) + " (0 hsa, 1 hip, 2 dry-run)");
}

}  // namespace

static_assert(static_cast<int>(coload::Tier::Native) == COLOAD_TIER_NATIVE &&
                  static_cast<int>(coload::Tier::Equivalent) == COLOAD_TIER_EQUIVALENT &&
                  static_cast<int>(coload::Tier::Generic) == COLOAD_TIER_GENERIC &&
                  static_cast<int>(coload::Tier::Hotswap) == COLOAD_TIER_HOTSWAP,
              "coload_tier mirrors coload::Tier");
static_assert(static_cast<int>(coload::LogLevel::Error) == COLOAD_LOG_ERROR &&
                  static_cast<int>(coload::LogLevel::Warn) == COLOAD_LOG_WARN &&
                  static_cast<int>(coload::LogLevel::Info) == COLOAD_LOG_INFO &&
                  static_cast<int>(coload::LogLevel::Debug) == COLOAD_LOG_DEBUG,
              "coload_log_level mirrors coload::LogLevel");

extern "C" {

coload_status coload_registry_create(const coload_registry_options* options, coload_registry** out) {
  const char* function = __func__;
  return guarded(function, [&] {
    if (!out) return null_argument(function, "out");
    *out = nullptr;
    if (!options) return null_argument(function, "options");
    // The first version of the struct ended with ignore_environment.
    constexpr std::size_t kFirstSize = offsetof(coload_registry_options, ignore_environment) + sizeof(int);
    coload_registry_options given{};
    if (coload_status status = copy_options(function, *options, kFirstSize, given); status != COLOAD_OK) return status;
    if (!given.hsa_agents && given.hsa_agent_count) {
      return fail(COLOAD_ERROR_NULL_ARGUMENT, std::string(function) +
                                                  ": options->hsa_agents is null but hsa_agent_count is " +
                                                  std::to_string(given.hsa_agent_count));
    }
    if (!given.hip_devices && given.hip_device_count) {
      return fail(COLOAD_ERROR_NULL_ARGUMENT, std::string(function) +
                                                  ": options->hip_devices is null but hip_device_count is " +
                                                  std::to_string(given.hip_device_count));
    }
    auto config = config_of(given);
    if (!config) return fail(config.error());
    auto runtime = open_runtime(given);
    if (!runtime) return fail(runtime.error());
    coload::RegistryOptions registry_options;
    registry_options.decode_threads = given.decode_threads;
    if (given.log) {
      registry_options.log = [log = given.log, user_data = given.log_user_data](coload::LogLevel level,
                                                                                std::string_view message) {
        const std::string text(message);  // NUL-terminated for C
        log(user_data, static_cast<coload_log_level>(level), text.c_str());
      };
    }
    auto handle = std::make_unique<coload_registry>();
    handle->registry =
        std::make_unique<coload::Registry>(std::move(*runtime), std::move(*config), std::move(registry_options));
    *out = handle.release();
    return ok();
  });
}

coload_status coload_registry_destroy(coload_registry* registry) {
  const char* function = __func__;
  return guarded(function, [&] {
    coload::Registry* cxx = nullptr;
    if (coload_status status = check(registry, function, &cxx); status != COLOAD_OK) return status;
    registry->magic = kDeadMagic;
    delete registry;
    return ok();
  });
}

coload_status coload_register_file(coload_registry* registry, const char* path, coload_binary* out) {
  return register_binary(__func__, registry, out, path, "path",
                         [&](coload::Registry& cxx) { return cxx.register_file(path); });
}

coload_status coload_register_memory(coload_registry* registry, const void* bytes, size_t size, const char* name,
                                     coload_binary* out) {
  return register_binary(__func__, registry, out, bytes, "bytes", [&](coload::Registry& cxx) {
    return cxx.register_memory(std::span(static_cast<const std::byte*>(bytes), size), name ? name : "<memory>");
  });
}

coload_status coload_unregister(coload_registry* registry, coload_binary binary) {
  const char* function = __func__;
  return guarded(function, [&] {
    coload::Registry* cxx = nullptr;
    if (coload_status status = check(registry, function, &cxx); status != COLOAD_OK) return status;
    auto result = cxx->unregister(coload::BinaryHandle{binary});
    if (!result) return fail(result.error());
    return ok();
  });
}

coload_status coload_lookup_kernel(coload_registry* registry, coload_binary binary, size_t device,
                                   const char* kernel_name, coload_kernel_info* out) {
  const char* function = __func__;
  return guarded(function, [&] {
    coload::Registry* cxx = nullptr;
    if (coload_status status = check(registry, function, &cxx); status != COLOAD_OK) return status;
    if (coload_status status = check_kernel_info(function, out); status != COLOAD_OK) return status;
    if (!kernel_name) return null_argument(function, "kernel_name");
    auto kernel = coload::detail::RegistryCopies::kernel(*cxx, coload::BinaryHandle{binary}, device, kernel_name);
    if (!kernel) return fail(kernel.error());
    fill_kernel_info(*kernel, out);
    return ok();
  });
}

coload_status coload_load(coload_registry* registry, coload_binary binary, size_t device) {
  const char* function = __func__;
  return guarded(function, [&] {
    coload::Registry* cxx = nullptr;
    if (coload_status status = check(registry, function, &cxx); status != COLOAD_OK) return status;
    auto modules = cxx->modules(coload::BinaryHandle{binary}, device);  // loads the pair on first use
    if (!modules) return fail(modules.error());
    return ok();
  });
}

coload_status coload_check_dispatch(coload_registry* registry, coload_binary binary, size_t device,
                                    const char* kernel_name, uint64_t kernarg_bytes, uint64_t dynamic_lds,
                                    const uint32_t* workgroup_size) {
  const char* function = __func__;
  return guarded(function, [&] {
    coload::Registry* cxx = nullptr;
    if (coload_status status = check(registry, function, &cxx); status != COLOAD_OK) return status;
    if (!kernel_name) return null_argument(function, "kernel_name");
    auto checked = cxx->check_dispatch(coload::BinaryHandle{binary}, device, kernel_name,
                                       dispatch_of(kernarg_bytes, dynamic_lds, workgroup_size));
    if (!checked) return fail(checked.error());
    return ok();
  });
}

coload_status coload_choose(coload_registry* registry, coload_binary binary, size_t device, coload_choice_fn fn,
                            void* user_data) {
  const char* function = __func__;
  return guarded(function, [&] {
    coload::Registry* cxx = nullptr;
    if (coload_status status = check(registry, function, &cxx); status != COLOAD_OK) return status;
    if (!fn) return null_argument(function, "fn");
    const coload::Device* chosen_for = device < cxx->devices().size() ? &cxx->devices()[device] : nullptr;
    auto name = cxx->binary_name(coload::BinaryHandle{binary});
    if (!name) return fail(name.error());
    auto walked = cxx->choose(
        coload::BinaryHandle{binary}, device, [&](std::size_t index, coload::Expected<coload::BundleChoice>& made) {
          coload_choice choice{};
          choice.struct_size = sizeof choice;
          choice.bundle = index;
          std::string message;
          const coload::Candidate* chosen = made ? made->selection.chosen() : nullptr;
          if (!made) {
            message = made.error().message();
            choice.status = status_of(made.error().kind());
          } else if (!chosen) {
            coload::Error none = coload::no_fit_error(*chosen_for, made->selection).in_bundle(index).in_file(*name);
            message = none.message();
            choice.status = status_of(none.kind());
          } else {
            choice.status = COLOAD_OK;
            choice.entry_index = chosen->entry_index;
            choice.tier = static_cast<coload_tier>(*chosen->tier);
            std::span<const std::byte> bytes = made->chosen_bytes();
            choice.bytes = bytes.data();
            choice.size = bytes.size();
          }
          choice.message = message.c_str();
          choice.entry_id = chosen ? chosen->id.c_str() : "";
          choice.file = made ? made->file.c_str() : made.error().location().file.c_str();
          return fn(user_data, &choice) != 0;
        });
    if (!walked) return fail(walked.error());
    return ok();
  });
}

coload_status coload_device_count(const coload_registry* registry, size_t* out) {
  const char* function = __func__;
  return guarded(function, [&] {
    coload::Registry* cxx = nullptr;
    if (coload_status status = check(registry, function, &cxx); status != COLOAD_OK) return status;
    if (!out) return null_argument(function, "out");
    *out = cxx->devices().size();
    return ok();
  });
}

coload_status coload_device_name(const coload_registry* registry, size_t device, char* buffer, size_t capacity,
                                 size_t* required) {
  const char* function = __func__;
  return guarded(function, [&] {
    coload::Registry* cxx = nullptr;
    if (coload_status status = check(registry, function, &cxx); status != COLOAD_OK) return status;
    if (device >= cxx->devices().size()) {
      return fail(COLOAD_ERROR_INVALID_ARGUMENT, std::string(function) + ": device " + std::to_string(device) +
                                                     " out of range (" + std::to_string(cxx->devices().size()) +
                                                     " devices)");
    }
    const std::string name = cxx->devices()[device].str();
    if (required) *required = name.size() + 1;
    if (!buffer && capacity > 0) return null_argument(function, "buffer");
    if (capacity < name.size() + 1) {
      return fail(COLOAD_ERROR_BUFFER_TOO_SMALL, std::string(function) + ": capacity " + std::to_string(capacity) +
                                                     " is less than the " + std::to_string(name.size() + 1) +
                                                     " bytes of \"" + name + "\"");
    }
    std::memcpy(buffer, name.c_str(), name.size() + 1);
    return ok();
  });
}

const char* coload_last_error_message(void) { return last_error_message(); }

coload_status coload_last_error_location(coload_error_location* out) { return last_error_location(out); }

const char* coload_status_string(coload_status status) {
  switch (enum_bits(status)) {
    case COLOAD_OK: return "ok";
    case COLOAD_ERROR_INVALID_HANDLE: return "invalid_handle";
    case COLOAD_ERROR_NULL_ARGUMENT: return "null_argument";
    case COLOAD_ERROR_BAD_STRUCT_SIZE: return "bad_struct_size";
    case COLOAD_ERROR_BUFFER_TOO_SMALL: return "buffer_too_small";
    case COLOAD_ERROR_OUT_OF_MEMORY: return "out_of_memory";
    case COLOAD_ERROR_INTERNAL: return "internal";
    case COLOAD_ERROR_IO: return "io";
    case COLOAD_ERROR_TRUNCATED: return "truncated";
    case COLOAD_ERROR_BAD_MAGIC: return "bad_magic";
    case COLOAD_ERROR_OUT_OF_BOUNDS: return "out_of_bounds";
    case COLOAD_ERROR_OVERFLOW: return "overflow";
    case COLOAD_ERROR_LIMIT_EXCEEDED: return "limit_exceeded";
    case COLOAD_ERROR_UNSUPPORTED_VERSION: return "unsupported_version";
    case COLOAD_ERROR_UNSUPPORTED_METHOD: return "unsupported_method";
    case COLOAD_ERROR_HASH_MISMATCH: return "hash_mismatch";
    case COLOAD_ERROR_SIZE_MISMATCH: return "size_mismatch";
    case COLOAD_ERROR_CORRUPT_DATA: return "corrupt_data";
    case COLOAD_ERROR_MALFORMED: return "malformed";
    case COLOAD_ERROR_NOT_FOUND: return "not_found";
    case COLOAD_ERROR_AMBIGUOUS: return "ambiguous";
    case COLOAD_ERROR_INVALID_ARGUMENT: return "invalid_argument";
  }
  return "unknown_status";
}

const char* coload_version(void) { return COLOAD_VERSION_STRING; }

}  // extern "C"
