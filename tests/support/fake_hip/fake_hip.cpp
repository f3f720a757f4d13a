// The test HIP library: the hip* entry points coload's HIP backend calls
// (fake_hip_api.cpp), answering from a script the test sets through
// fake_hip.h, as the HIP release it is set to would (fake_hip_state.cpp;
// docs/loading.md, "HIP releases"). This file is the control interface and
// what the library reads from the environment when it loads.
//
// Built once per HIP major (FAKE_HIP_MAJOR, with that SONAME: CMakeLists.txt),
// once unversioned (FAKE_HIP_MAJOR 0), and under HIP's own name for the
// majors a process may already run (libamdhip64.so.7, .so.8): the copy of
// major 5 lacks hipGetDevicePropertiesR0600, as HIP 5 does.
#include "fake_hip.h"

#include <cstdlib>
#include <string>
#include <string_view>

#include "fake_hip_state.h"

using coload::fake_hip::State;
using coload::fake_hip::state;

FAKE_HIP_EXPORT void coload_fake_hip_reset(void) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  coload::fake_hip::reset(s);
}

FAKE_HIP_EXPORT void coload_fake_hip_add_device(const char* arch, int lds_bytes, int warp_size) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.devices.push_back({arch, lds_bytes, warp_size});
}

/// COLOAD_TEST_HIP_DEVICES ("ARCH/LDS/WARP,…"), added when the library is
/// loaded: for a process that cannot script it before coload opens it (a HIP
/// program whose static constructors register through a layer).
__attribute__((constructor)) static void add_devices_from_environment() {
  const char* devices = std::getenv("COLOAD_TEST_HIP_DEVICES");
  if (!devices) return;
  std::string list = devices;
  for (std::size_t start = 0; start < list.size();) {
    std::size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    std::string device = list.substr(start, comma - start);
    std::size_t slash = device.find('/'), second = device.find('/', slash + 1);
    if (slash != std::string::npos && second != std::string::npos) {
      coload_fake_hip_add_device(device.substr(0, slash).c_str(), std::atoi(device.c_str() + slash + 1),
                                 std::atoi(device.c_str() + second + 1));
    }
    start = comma + 1;
  }
}

/// COLOAD_TEST_HIP_RELEASE ("6.2") and HIP_USE_RUNTIME_UNBUNDLER (CLR reads
/// its flags once, at start), read when the library is loaded.
__attribute__((constructor)) static void release_from_environment() {
  State& s = state();
  if (int version = coload::fake_hip::release_version(std::getenv("COLOAD_TEST_HIP_RELEASE"))) s.version = version;
  if (const char* flag = std::getenv("HIP_USE_RUNTIME_UNBUNDLER")) s.runtime_unbundler = std::atoi(flag) != 0;
}

FAKE_HIP_EXPORT int coload_fake_hip_set_release(const char* release) {
  const int version = coload::fake_hip::release_version(release);
  if (version == 0) return -1;
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.version = version;
  return 0;
}

FAKE_HIP_EXPORT void coload_fake_hip_set_version(int version) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.version = version;
}

FAKE_HIP_EXPORT void coload_fake_hip_set_runtime_unbundler(int use) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.runtime_unbundler = use < 0 ? -1 : use != 0;
}

FAKE_HIP_EXPORT void coload_fake_hip_fail(const char* function, int status) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.failures[function] = status;
}

FAKE_HIP_EXPORT void coload_fake_hip_hide_kernel(const char* name) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.hidden_kernels.insert(name);
}

FAKE_HIP_EXPORT int coload_fake_hip_counter(const char* name) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  std::string_view what(name);
  if (what == "module_loads") return s.module_loads;
  if (what == "module_unloads") return s.module_unloads;
  if (what == "live_modules") return static_cast<int>(s.modules.size());
  if (what == "bad_unloads") return s.bad_unloads;
  if (what == "set_device") return s.set_device_calls;
  if (what == "properties_r0000") return s.properties_r0000;
  if (what == "properties_r0600") return s.properties_r0600;
  if (what == "current_device") return coload::fake_hip::current_device();
  if (what == "init") return s.init;
  if (what == "reopens") return s.reopens;
  if (what == "own_mappings") return s.own_mappings;
  if (what == "bytes_changed") return s.bytes_changed;
  if (what == "failed_calls") return s.failed_calls;
  return -1;
}

FAKE_HIP_EXPORT const void* coload_fake_hip_last_image(void) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  return s.last_image;
}
