// coload/registry.h: fat binaries registered once, loaded lazily per device.
//
// Covers: registering a fat binary (a file, a caller's buffer, a file set, a
// folder, a `__hip_fatbin_wrapper`) from its headers only; looking kernels,
// host stubs and globals up per (binary, device), the first lookup choosing,
// validating and loading (docs/loading.md, "Registry"). Does not cover:
// launching kernels, or choosing which runtime to use (coload/runtime.h).
//
// Ownership: the Registry shares the Runtime; a file stays mapped and a
// caller's buffer borrowed until unregister() returns, which unloads first.
// Threads: every member may be called from many threads at once; a (binary,
// device) pair loads once. A LoadedKernel pointer lives until its binary is
// unregistered; unregister() must not be called from a log callback or a lookup.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "coload/config.h"
#include "coload/device.h"
#include "coload/error.h"
#include "coload/fat_binary.h"
#include "coload/pipeline.h"
#include "coload/runtime.h"
#include "coload/validate.h"

namespace coload {

class HotswapRegistry;  // coload/detail/hotswap.h: passes a program may add
namespace detail {
class RegistryCopies;  // coload/detail/registry_copies.h: the C boundary's copies
}  // namespace detail

/// A registered fat binary. Handles are never reused; 0 is never valid.
struct BinaryHandle {
  std::uint64_t value = 0;
  friend bool operator==(const BinaryHandle&, const BinaryHandle&) = default;
};

/// Counters of the work the registry has done, for tests and diagnostics.
struct RegistryStats {
  std::uint64_t binaries_registered = 0;   ///< registrations made, ever
  std::uint64_t bundles_read = 0;          ///< bundle tables parsed (plain tables read, CCOB tables streamed)
  std::uint64_t bundles_decompressed = 0;  ///< CCOB streams decoded (select_in_compressed_bundle calls)
  std::uint64_t code_objects_read = 0;     ///< CodeObject::read calls
  std::uint64_t modules_loaded = 0;        ///< successful Runtime::load calls
  std::uint64_t bytes_decoded = 0;         ///< uncompressed bytes those streams produced
};

/// What a Registry takes besides its runtime and config.
struct RegistryOptions {
  /// The hotswap passes; null for coload::hotswap_registry(config) (the
  /// built-in passes plus COLOAD_HOTSWAP_PLUGIN's) when hotswap is on, built
  /// when the Registry is, and the built-in passes alone when it is off.
  std::shared_ptr<const HotswapRegistry> hotswap;
  /// Threads a first lookup may read a host image's bundles on (decoding
  /// CCOBs, reading the chosen code objects; the calling thread included,
  /// extra threads live only during that lookup). 0: as the pipeline
  /// decides (coload::decode_threads: one per bundle up to the hardware's
  /// concurrency, at most 8; one with the comgr unbundler). 1: the calling
  /// thread only. Peak memory grows with it: each stream holds its decoder
  /// window and its chosen entry.
  std::size_t decode_threads = 0;
  /// Receives the registry's messages of the Config's log_level
  /// (COLOAD_LOG) or more severe: warn, a (binary, device) load that failed
  /// or a wrapper's image that could not be opened at its first use;
  /// info, what each load chose per bundle; debug, each compressed stream
  /// and each entry reused. Null: written to stderr as "coload: LEVEL:
  /// MESSAGE". Called from the thread doing the load (or a decode thread),
  /// possibly while other first lookups of the same binary wait: keep it short.
  std::function<void(LogLevel level, std::string_view message)> log;
};

/// Fat binaries registered once and loaded lazily, once per (binary, device).
///
/// Transformed entries: when the chosen entry's tier is Hotswap, the pass
/// validated for (entry processor → device processor) runs (device_check,
/// then transform); when it is Equivalent, the built-in same-ISA retarget
/// relabels the object for the device so a strict runtime (ROCr) accepts it.
/// Either output is read (CodeObject::read) and validated as any entry is
/// before Runtime::load; errors name the pass, the entry and the device. A
/// native or generic entry is never transformed.
class Registry {
 public:
  /// A registry over `runtime`'s devices, each with `config` applied
  /// (Config::apply); `config` also gives the read and select options, the
  /// hotswap allowlist coming from the hotswap registry (Config::select_options
  /// with it). With hotswap on and no registry given, the plugin is loaded
  /// here; when that fails, every load fails with its error.
  Registry(std::shared_ptr<Runtime> runtime, Config config, RegistryOptions options = {});
  /// Unloads every module, then releases every binary.
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  /// The runtime modules are loaded with.
  Runtime& runtime() const;
  /// The runtime's devices with the config applied; the index is the device number.
  std::span<const Device> devices() const;

  /// Maps `path` and locates its bundles (headers only). A plain bundle's
  /// table and a bare code object still read in the mapping are probed, and
  /// the chosen entry copied, through checked reads at each device's first
  /// lookup: a file that shrank since is Io naming it and the offset, not
  /// SIGBUS. A CCOB is decoded from the mapping: its file must keep its
  /// length (docs/reading-rules.md). Errors: those of FatBinary::open,
  /// naming the path.
  Expected<BinaryHandle> register_file(const std::string& path);
  /// Registers a caller's buffer (bundle file, code object or host image),
  /// which must stay mapped and readable until unregister: coload reads it
  /// in place. `name` appears in errors.
  Expected<BinaryHandle> register_memory(std::span<const std::byte> bytes, std::string name = "<memory>");
  /// Registers `paths` as one binary, a file set (FatBinary::open_files;
  /// docs/loading.md, "File sets"): bare code objects with the same kernels
  /// are one bundle whose entries are those files, chosen per device by the
  /// same tiers; other files add their bundles. Each file is mapped (headers
  /// and symbol tables read) until unregistered. `name` (default: the one
  /// path, or "<first> and N more files") appears in errors. Errors: those
  /// of FatBinary::open_files (InvalidArgument for no path, a file's errors
  /// naming it, Ambiguous for a kernel twice for one target).
  Expected<BinaryHandle> register_files(std::span<const std::string> paths, std::string name = {});
  /// register_files of the files of directory `path` that `scan` takes, in
  /// sorted path order (FatBinary::open_directory), named `path`. Errors:
  /// Io for a directory that cannot be read, NotFound when it holds no file
  /// `scan` takes, then register_files'.
  Expected<BinaryHandle> register_directory(const std::string& path, const DirectoryScan& scan = {});
  /// Registers the image a `__hip_fatbin_wrapper` points at (one wrapper,
  /// one binary, as __hipRegisterFatBinary receives it). Only the record is
  /// read and checked (wrapper_reach, coload/detail/wrapper.h); the image is
  /// measured within the mapping that holds it and copied, through checked
  /// reads, and its bundles located in the copy, at the binary's first use,
  /// whose error (wrapped_image_in's, then register_memory's) every later
  /// use of it returns. The record and the image must stay mapped from
  /// registration to that first use; after it coload reads only its copy.
  /// `name` (default
  /// "__hip_fatbin_wrapper at 0x…") appears in errors. Errors: wrapper_reach's.
  Expected<BinaryHandle> register_wrapper(const void* wrapper, std::string name = {});
  /// Unloads the binary's modules on every device and releases its bytes,
  /// once lookups of it already running on other threads have returned.
  /// Every dispatch of its kernels must have finished first (drain the
  /// queues): the runtimes free a module's code at once, and a kernel still
  /// queued or running then faults the GPU.
  /// Errors: NotFound for an unknown (or already unregistered) handle.
  Expected<void> unregister(BinaryHandle binary);

  /// The kernel named `kernel` (its `.name`) of `binary` on device `device`,
  /// loading the binary there first if this is the pair's first request.
  /// When several loaded modules define it (two bundles of one binary), the
  /// one whose code fits the device best: the better tier, then exact
  /// features before ones left Any, then the first in bundle order.
  /// Errors: NotFound for an unknown handle, for a binary with no entry for
  /// the device (no_fit_error's message with the binary and bundle) or for a
  /// kernel none of the loaded modules has (naming kernel and binary);
  /// UnsupportedVersion when only the runtime's release stands in the way
  /// (no_fit_error); InvalidArgument for a device out of range; otherwise the first error of
  /// reading, selecting, reading the code object, or Runtime::load.
  Expected<const LoadedKernel*> lookup_kernel(BinaryHandle binary, std::size_t device, std::string_view kernel);
  /// Records that host stub `host_stub` (the address a HIP program launches
  /// by, as __hipRegisterFunction receives it) stands for the kernel named
  /// `kernel` of `binary`: lookup_function then resolves it within the
  /// binaries that registered it only, so two translation units' kernels of
  /// the same name and different stubs stay apart. Several binaries may
  /// register one stub for the same kernel (a template's stub is one COMDAT
  /// function for every TU that instantiated it). Nothing is loaded; the
  /// same binary again does nothing. Errors: NotFound for an unknown binary;
  /// Ambiguous (field "device_name") when the stub already stands for
  /// another kernel; InvalidArgument for a null stub or an empty name. A
  /// binary's registrations are forgotten when it is unregistered.
  Expected<void> register_function(BinaryHandle binary, const void* host_stub, std::string kernel);
  /// The kernel `host_stub` stands for on `device`: of the binaries that
  /// registered it (loading each as lookup_kernel does, in registration
  /// order, until one has native code with exact features), the one whose
  /// code fits the device best (as lookup_kernel ranks modules), the first
  /// registration on a tie. Remembered per device until a binary registers
  /// the stub or is unregistered. Errors: NotFound for a stub never
  /// registered (or whose binaries were all unregistered); InvalidArgument
  /// for a device out of range; when no binary has the kernel for the
  /// device, the first one's lookup_kernel error.
  Expected<const LoadedKernel*> lookup_function(const void* host_stub, std::size_t device);
  /// check_dispatch for the kernel lookup_function resolves `host_stub` to.
  Expected<void> check_function_dispatch(const void* host_stub, std::size_t device, const Dispatch& dispatch);
  /// coload::check_dispatch for the kernel lookup_kernel finds (its metadata
  /// from the module that has it), loading first if needed; checked while
  /// the binary is held. Errors: those of lookup_kernel and check_dispatch.
  Expected<void> check_dispatch(BinaryHandle binary, std::size_t device, std::string_view kernel,
                                const Dispatch& dispatch);
  /// The global variable `name` (a `__device__` or `__constant__` variable)
  /// of `binary` on device `device`, loading the binary there first as
  /// lookup_kernel does: the first of its modules, in bundle order, that has
  /// it (LoadedModule::global). Errors: those of lookup_kernel, and NotFound
  /// naming the variable and the binary when no module has it.
  Expected<LoadedGlobal> lookup_global(BinaryHandle binary, std::size_t device, std::string_view name);
  /// The modules loaded for (binary, device), loading them first if needed;
  /// in bundle order. Valid as lookup_kernel's pointers are. Same errors.
  Expected<std::vector<const LoadedModule*>> modules(BinaryHandle binary, std::size_t device);
  /// The file each of modules()' modules came from, index for index: a file
  /// set's member (FatBinary::file), or the binary's name. Same errors.
  Expected<std::vector<std::string>> module_files(BinaryHandle binary, std::size_t device);
  /// The pipeline (coload::choose_in_binary) over every bundle of `binary`
  /// for device `device`, with this registry's options (unbundler, hotswap
  /// allowlist, hash check, byte cap, decode threads): for a runtime that
  /// loads code objects itself. Nothing is loaded or cached; `take` gets each
  /// bundle's choice in bundle order on this thread, the chosen entry as
  /// stored (an equivalent or hotswap entry is not transformed), and returns
  /// false to stop. The binary is held during the call. Errors: an unknown
  /// binary, a device out of range, a hotswap plugin that could not be used.
  Expected<void> choose(BinaryHandle binary, std::size_t device, const ChoiceTaker& take);
  /// The binary's name (its path, or the name given to register_memory).
  Expected<std::string> binary_name(BinaryHandle binary) const;

  RegistryStats stats() const;

 private:
  friend class detail::RegistryCopies;  // the copies the C boundary hands out
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace coload
