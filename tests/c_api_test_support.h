// What the C API's tests share (they link libcoload.so and use coload.h only).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "coload/coload.h"

namespace coload::testing {

inline std::string fixture(const std::string& relative) { return std::string(COLOAD_FIXTURE_DIR) + "/" + relative; }

/// Options of a dry-run registry for `devices`, the environment ignored.
inline coload_registry_options dry_run_options(const char* devices) {
  coload_registry_options options;
  std::memset(&options, 0, sizeof options);
  options.struct_size = sizeof options;
  options.runtime = COLOAD_RUNTIME_DRY_RUN;
  options.dry_run_devices = devices;
  options.ignore_environment = 1;
  return options;
}

/// This thread's last error's location, read with a full-size struct.
inline coload_error_location last_error_location() {
  coload_error_location location;
  std::memset(&location, 0, sizeof location);
  location.struct_size = sizeof location;
  coload_last_error_location(&location);
  return location;
}

/// A coload_kernel_info sized for this library, zeroed.
inline coload_kernel_info kernel_info() {
  coload_kernel_info info;
  std::memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  return info;
}

/// A __hip_fatbin_wrapper record as clang emits it (magic HIPF, version 1).
struct HipFatbinWrapper {
  std::uint32_t magic = 0x48495046;
  std::uint32_t version = 1;
  const void* binary = nullptr;
  void* reserved = nullptr;
};

}  // namespace coload::testing
