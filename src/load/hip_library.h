// load/hip_library.h: the opened libamdhip64 and the one status check that
// the HIP backend's calls go through (hip_runtime.cpp: devices and modules).
// Internal.
//
// <hip/hip_runtime_api.h> gives the types and enum values only; nothing links
// against HIP. Every function coload calls is resolved once into HipApi.
#pragma once

#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__ 1
#endif
#include <hip/hip_runtime_api.h>

#include <memory>
#include <string>
#include <string_view>

#include "coload/error.h"
#include "coload/runtime.h"

// HIP 6's device-property struct, only ever handled through a pointer. Named
// as HIP names it, so that a call through the pointer has the type of the
// function it calls (UBSan's -fsanitize=function checks that).
struct hipDeviceProp_tR0600;

namespace coload::hip {

/// The entry points coload calls, resolved with dlsym.
struct HipApi {
  decltype(&hipGetErrorName) get_error_name = nullptr;
  decltype(&hipGetErrorString) get_error_string = nullptr;
  decltype(&hipRuntimeGetVersion) runtime_get_version = nullptr;
  decltype(&hipGetDeviceCount) get_device_count = nullptr;
  /// hipGetDeviceProperties as HIP 5 exports it (and 6 keeps: the R0000
  /// layout, which is HIP 5's hipDeviceProp_t).
  hipError_t (*get_device_properties_r0000)(hipDeviceProp_t*, int) = nullptr;
  /// HIP 6+: hipGetDevicePropertiesR0600 (the R0600 layout); null before.
  hipError_t (*get_device_properties_r0600)(hipDeviceProp_tR0600*, int) = nullptr;
  decltype(&hipDeviceGetAttribute) device_get_attribute = nullptr;
  decltype(&hipGetDevice) get_device = nullptr;
  decltype(&hipSetDevice) set_device = nullptr;
  decltype(&hipModuleLoadData) module_load_data = nullptr;
  decltype(&hipModuleGetFunction) module_get_function = nullptr;
  decltype(&hipModuleGetGlobal) module_get_global = nullptr;
  decltype(&hipModuleUnload) module_unload = nullptr;
};

/// HIP_VERSION = major * 10000000 + minor * 100000 + patch.
inline int major_of(int version) { return version / 10000000; }
inline int minor_of(int version) { return version / 100000 % 100; }
/// "6.2.41133" for 60241133.
std::string version_text(int version);

/// The code object versions HIP `version` loads: 5.0 and 5.1 v4 only, 5.2 to
/// 6.1 v4 and v5, 6.2 on v4 to v6 (docs/loading.md, "HIP releases").
std::vector<unsigned> code_object_versions_of(int version);
/// Whether HIP `version` loads generic code objects: from 6.4, whose CLR ISA
/// table (rocclr/device/device.cpp) and ROCr 1.15 know the generic targets;
/// before, hipModuleLoadData refuses them (docs/loading.md, "HIP releases").
bool loads_generic(int version);

/// A loaded libamdhip64 of a major coload reads (5 to 7). Never dlclosed: HIP
/// keeps threads and global state that do not survive being unmapped, so the
/// handle lives until exit.
struct HipLibrary {
  std::string path;  ///< the name it was opened by
  HipApi api;
  int version = 0;  ///< hipRuntimeGetVersion, e.g. 60241133
  /// "HIP 6.2.41133": what refusals caused by the release name.
  std::string release() const { return "HIP " + version_text(version); }
};

/// The one place a hipError_t becomes a coload error: the function, HIP's
/// name, number and text for the status, and what was asked.
Expected<void> check(const HipApi& api, hipError_t status, std::string_view function, std::string_view what);

/// The library `options` names, the process's copy first: under a candidate
/// name, else any loaded object of the name's SONAME family
/// (libamdhip64.so.N; docs/loading.md, "Which library"). Its major comes
/// from its SONAME or file name
/// before any HIP call, so a major coload cannot read is refused without
/// starting that runtime (hipRuntimeGetVersion runs HIP's full init). Errors:
/// Io when no candidate opens; UnsupportedVersion for a major outside 5 to 7
/// (naming the file and the major) or a library lacking a function coload
/// calls; hipRuntimeGetVersion's failure.
Expected<std::shared_ptr<const HipLibrary>> find_library(const HipOptions& options);

}  // namespace coload::hip
