// Test support for the HIP backend tests (hip_runtime_test.cpp,
// hip_release_test.cpp): the control entry points of a test HIP library
// (tests/support/fake_hip), resolved from the instance coload opens.
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <string>

#include "support/fake_hip/fake_hip.h"

#include "coload/runtime.h"

namespace coload::testing {

/// Asserts that `text` contains `part`, printing both otherwise.
inline ::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << text << "' lacks '" << part << "'";
}

/// One test HIP library's control entry points. The test dlopens it by the
/// path coload is given, so both get the one instance.
struct FakeHip {
  void* handle = nullptr;
  decltype(&coload_fake_hip_reset) reset = nullptr;
  decltype(&coload_fake_hip_add_device) add_device = nullptr;
  decltype(&coload_fake_hip_set_version) set_version = nullptr;
  decltype(&coload_fake_hip_set_release) set_release = nullptr;
  decltype(&coload_fake_hip_set_runtime_unbundler) set_runtime_unbundler = nullptr;
  decltype(&coload_fake_hip_fail) fail = nullptr;
  decltype(&coload_fake_hip_hide_kernel) hide_kernel = nullptr;
  decltype(&coload_fake_hip_counter) counter = nullptr;
  decltype(&coload_fake_hip_last_image) last_image = nullptr;

  /// The library at `path`, loaded once per process.
  static const FakeHip& at(const std::string& path) {
    static std::mutex mutex;
    static std::map<std::string, FakeHip> loaded;
    std::lock_guard lock(mutex);
    auto [it, inserted] = loaded.try_emplace(path);
    if (!inserted) return it->second;
    FakeHip& f = it->second;
    f.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!f.handle) return f;
    auto bind = [&](auto& function, const char* symbol) {
      function = reinterpret_cast<std::remove_reference_t<decltype(function)>>(dlsym(f.handle, symbol));
    };
    bind(f.reset, "coload_fake_hip_reset");
    bind(f.add_device, "coload_fake_hip_add_device");
    bind(f.set_version, "coload_fake_hip_set_version");
    bind(f.set_release, "coload_fake_hip_set_release");
    bind(f.set_runtime_unbundler, "coload_fake_hip_set_runtime_unbundler");
    bind(f.fail, "coload_fake_hip_fail");
    bind(f.hide_kernel, "coload_fake_hip_hide_kernel");
    bind(f.counter, "coload_fake_hip_counter");
    bind(f.last_image, "coload_fake_hip_last_image");
    return f;
  }
};

/// HipOptions naming `library`, the other fields their defaults.
inline HipOptions hip_options(std::string library) {
  HipOptions options;
  options.library = std::move(library);
  return options;
}

}  // namespace coload::testing
