// The test HIP library's shared state and what its release decides
// (fake_hip_state.cpp), used by its control interface (fake_hip.cpp) and its
// hip* entry points (fake_hip_api.cpp). Internal to the library.
#pragma once

#include <hip/hip_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "fake_elf.h"

#ifndef FAKE_HIP_MAJOR
#define FAKE_HIP_MAJOR 0
#endif

#define FAKE_HIP_EXPORT extern "C" __attribute__((visibility("default")))

// The opaque handle types of hip_runtime_api.h, given a body here.
struct ihipModuleSymbol_t {
  std::string name;
};
struct ihipModule_t {
  int device = 0;
  std::uint64_t base = 0;  ///< where the fake places the module's variables
  std::map<std::string, std::unique_ptr<ihipModuleSymbol_t>> functions;
  std::map<std::string, coload::fake::CodeObjectSymbol> symbols;
  std::set<std::string> function_names;  ///< the STT_FUNC symbols
  /// The caller's bytes, which HIP keeps using (it does not copy them), and
  /// their checksum at load.
  const std::byte* bytes = nullptr;
  std::size_t extent = 0;
  std::uint64_t checksum = 0;
};

namespace coload::fake_hip {

struct FakeDevice {
  std::string arch;
  int lds_bytes = 0;
  int warp_size = 0;
};

struct State {
  std::mutex mutex;
  int version = 0;  ///< hipRuntimeGetVersion's answer; set by reset()
  /// HIP_USE_RUNTIME_UNBUNDLER as CLR reads it at start: 1 or 0; -1 unset
  /// (the release's default).
  int runtime_unbundler = -1;
  std::vector<FakeDevice> devices;
  std::map<std::string, int> failures;
  std::set<std::string> hidden_kernels;
  std::map<ihipModule_t*, std::unique_ptr<ihipModule_t>> modules;
  int module_loads = 0, module_unloads = 0, bad_unloads = 0, set_device_calls = 0;
  int properties_r0000 = 0, properties_r0600 = 0;  // calls of each hipGetDeviceProperties entry point
  int init = 0;                                    // calls that run CLR's hip::init (HIP_INIT_API)
  int reopens = 0;                                 // loads whose bytes HIP found in a file mapping and reopened by path
  int own_mappings = 0;                            // loads whose bytes start a page of an unnamed anonymous mapping
  int bytes_changed = 0;                           // unloads that found the loaded bytes changed (or freed)
  int failed_calls = 0;              // entry points that returned an error (hipGetLastError's answer aside)
  const void* last_image = nullptr;  // the bytes of the last hipModuleLoadData
  std::uint64_t next_base = 0x7e0000000000ull;
};

/// The library's one state (never destroyed: HIP's outlives its users).
State& state();
/// Forgets everything: the copy's default release, no devices, no failures.
void reset(State& s);
/// The calling thread's current device (HIP's is per thread).
int& current_device();

/// A release name ("6.2") as hipRuntimeGetVersion's number; 0 when unknown.
int release_version(const char* name);

/// What HIP_RETURN does with `status` to the thread's last error in the
/// release (CLR hip_internal.hpp): before 7.0 every status becomes it,
/// hipSuccess included; from 7.0 (HIP_UPDATE_ERROR_STATE) a failure other
/// than hipErrorNotReady replaces it and a success leaves it.
void keep_error(const State& s, hipError_t status);
/// An entry point's return: counts a failure, keep_error, returns `status`.
hipError_t hip_return(State& s, hipError_t status);
/// The calling thread's last error (hip::tls.last_error_).
hipError_t& last_error();

/// The scripted status for `function`, or hipSuccess; counts `function` as
/// initialising HIP when it does in CLR (every HIP_INIT_API entry point).
hipError_t scripted(State& s, const char* function, bool initialises = true);
bool valid_device(const State& s, int device);
const char* error_name(hipError_t status);

/// FNV-1a of the bytes HIP was given.
std::uint64_t checksum(const std::byte* bytes, std::size_t size);

/// Whether hipModuleLoadData reopens the file the bytes are mapped from
/// (ExtractFatBinaryUsingCOMGR): from 5.5 when HIP_USE_RUNTIME_UNBUNDLER is
/// false, its default from 6.0; 7.x has no such flag and always does.
bool reopens_mapped_files(const State& s);
/// HIP's Os::FindFileNameFromAddress: the /proc/self/maps line holding
/// `image`, split on blanks as CLR's stream does (a path with a space is cut
/// at it, " (deleted)" falls away); nullopt for anonymous memory.
std::optional<std::string> file_name_from_address(const void* image);
/// Whether `image` starts a page of a mapping with neither inode nor name:
/// an anonymous mmap of its own, not malloc memory (in "[heap]", in a
/// /anon_hugepage mapping, or after a chunk header).
bool in_anonymous_pages(const void* image);
/// Whether the current device (gcnArchName `arch`) runs the code object
/// whose header is at `image`, as CLR (Isa::findIsa, Isa::isCompatible) and
/// ROCr's loader decide: hipSuccess or the release's refusal.
hipError_t check_code_object(const State& s, const std::byte* image, const std::string& arch);

}  // namespace coload::fake_hip
