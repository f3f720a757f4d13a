// coload/runtime.h: the runtimes a checked code object is loaded into.
//
// Covers: one Runtime interface (devices as Device descriptions; load a code
// object on a device; kernels with their handles and sizes) and three
// implementations: HSA (ROCr, opened at run time), HIP (opened at run time)
// and dry-run (validation only, for tools and machines without a GPU).
// docs/loading.md has the call sequences and what each runtime checks.
// Does not cover: choosing the entry or caching modules (coload/registry.h).
//
// Ownership: a LoadedModule keeps its Image's owner alive for as long as the
// runtime may read the bytes (ROCr keeps pointers into them), and unloads in
// the right order when destroyed. A Runtime must outlive its modules.
// Threads: devices() and load() may be called from many threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "coload/code_object.h"
#include "coload/device.h"
#include "coload/error.h"

namespace coload {

/// Code object bytes and whatever keeps them alive (null when the caller
/// guarantees they outlive every module loaded from them).
struct Image {
  std::span<const std::byte> bytes;
  std::shared_ptr<const void> owner;
};

/// A kernel as the runtime registered it.
struct LoadedKernel {
  std::string name;    ///< `.name`
  std::string symbol;  ///< `.symbol` (the `.kd` name)
  /// HSA: the AQL `kernel_object` (device address of the descriptor);
  /// HIP: the hipFunction_t; dry-run: 0.
  std::uint64_t handle = 0;
  std::uint32_t kernarg_segment_size = 0;
  std::uint32_t kernarg_segment_align = 0;
  /// End of the explicit arguments the caller packs (KernargLayout::explicit_size, from the metadata).
  std::uint32_t explicit_kernarg_size = 0;
  std::uint32_t group_segment_size = 0;
  std::uint32_t private_segment_size = 0;
  bool dynamic_callstack = false;
};

/// A global variable of a loaded module, as the runtime placed it.
struct LoadedGlobal {
  /// HSA: HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS; HIP: hipModuleGetGlobal's
  /// device pointer; dry-run: 0.
  std::uint64_t address = 0;
  std::uint64_t size = 0;  ///< bytes (the runtime's answer; dry-run: the symbol's st_size)
};

/// One code object loaded on one device. Destroying it unloads it.
class LoadedModule {
 public:
  virtual ~LoadedModule() = default;
  virtual const CodeObject& code_object() const = 0;
  virtual std::span<const LoadedKernel> kernels() const = 0;
  /// The global variable `name` (a `__device__` or `__constant__` variable:
  /// CodeObject::variables), as the runtime answers for it. Errors: NotFound
  /// naming the variable when the runtime has no variable of that name (a
  /// kernel's name included); the runtime's errors, naming its function.
  /// Thread-safe.
  virtual Expected<LoadedGlobal> global(std::string_view name) const = 0;
  /// By `.name`; null when absent.
  const LoadedKernel* find(std::string_view name) const;
};

class Runtime {
 public:
  virtual ~Runtime() = default;
  /// "hsa", "hip" or "dry-run".
  virtual std::string_view name() const = 0;
  /// The GPU devices, in the runtime's order; the index is the device number.
  virtual std::span<const Device> devices() const = 0;
  /// Loads `code_object` (read from image.bytes) on device `device` and looks
  /// every metadata kernel up (a kernel the metadata lists but the runtime
  /// lacks is an error, not a null at launch). Validation is the caller's
  /// (coload::validate); the runtime re-checks what it checks. The module
  /// holds image.owner until it has unloaded. On failure nothing stays
  /// loaded. Errors name the runtime function and its status: NotFound for a
  /// missing symbol, InvalidArgument for an ISA the device does not run or a
  /// bad device index, Malformed for a code object the runtime refuses,
  /// SizeMismatch when the runtime's kernel sizes disagree with the metadata,
  /// Io (HSA) or LimitExceeded (HIP out of memory) for resource failures.
  virtual Expected<std::unique_ptr<LoadedModule>> load(std::size_t device, const Image& image,
                                                       const CodeObject& code_object) = 0;
  /// What the runtime left out when it opened (a GPU it cannot describe),
  /// one message each; a Registry logs each at LogLevel::Warn. Default: none.
  virtual std::span<const std::string> warnings() const { return {}; }
};

struct HsaOptions {
  /// dlopen'ed at run time, the process's ROCr first: any loaded object of
  /// this name's SONAME family (libhsa-runtime64.so, .so.1, a wheel's
  /// torch/lib/libhsa-runtime64.so); a test HSA library can stand in.
  std::string library = "libhsa-runtime64.so.1";
  /// The caller's GPU agents (hsa_agent_t handles of the process's ROCr), in
  /// the caller's order: device i is agents[i]. nullopt: every GPU agent.
  std::optional<std::vector<std::uint64_t>> agents;
};
/// Opens ROCr: the library the process already has loaded in the SONAME
/// family of `options.library`, else that name opened (docs/loading.md,
/// "Which ROCr"); hsa_init, whose failure stands for the process;
/// then the devices: every GPU agent as a Device (its first processor ISA
/// name → target ID, a mode the name leaves out being one the device lacks;
/// LDS from the group memory pool; wave size; the code object versions of
/// the ROCr release and generic code where the agent lists its family's
/// generic ISA: docs/loading.md, "HSA releases"), a GPU coload cannot
/// describe (an unknown processor, a wave size it lacks) left out, as CLR
/// leaves it out, and named in warnings() (device numbers count the GPUs
/// kept); or, with `options.agents`, exactly those agents in that order.
/// load() fails with UnsupportedVersion naming the release when the release
/// refuses the object's version, ISA name or generic target, and with
/// OutOfBounds when the image is shorter than its ELF. Errors:
/// UnsupportedVersion for a ROCr whose SONAME major is not 1 (never started);
/// Io when the library cannot be loaded; NotFound with hsa_init's status
/// when there is no GPU (no /dev/kfd), when no agent is a GPU, or when no GPU
/// can be described, never a crash; InvalidArgument
/// naming the index and handle for a listed agent that is not one of this
/// ROCr's GPU agents, repeats an earlier one, or cannot be described (an
/// unknown processor, a wave size it lacks), and for an empty list.
Expected<std::unique_ptr<Runtime>> open_hsa_runtime(const HsaOptions& options = {});

struct HipOptions {
  /// The process's copy first (RTLD_NOLOAD, then any loaded object of this
  /// name's SONAME family: libamdhip64.so.N), then opened by name; when this
  /// name cannot be opened, libamdhip64.so.7, .so.6 and .so.5 are tried the same way.
  std::string library = "libamdhip64.so";
  /// The caller's devices as HIP ordinals (what hipSetDevice takes), in the
  /// caller's order: device i is ordinal devices[i]. nullopt: every device.
  std::optional<std::vector<int>> devices;
};
/// Opens HIP 5, 6 or 7: devices from the device properties of the library's
/// release (gcnArchName only; docs/loading.md, "HIP releases") and
/// hipDeviceGetAttribute (shared memory per block, warp size), modules with
/// hipModuleLoadData, kernels probed with hipModuleGetFunction, globals with
/// hipModuleGetGlobal (only for a variable the code object defines: no HIP
/// call coload makes is expected to fail, docs/embedding.md). load() and
/// LoadedModule::global set the calling thread's HIP device and put the
/// previous one back. Library: the one the process has loaded under a
/// candidate name or of its SONAME family (every default name is asked
/// before any is opened), else the first that opens (docs/loading.md).
/// On HIP 5.5+, code objects lying in a file mapping are handed to HIP as a
/// copy in an anonymous mapping the module owns (HIP would reopen the file
/// by path). Without
/// `options.devices`, a device whose answers coload cannot reconcile (an
/// unknown gcnArchName) is left out and named in warnings(); the others keep
/// their ordinals. Errors: Io when no candidate library opens,
/// UnsupportedVersion for a library of a HIP major other than 5 to 7 (from
/// its SONAME or file name before any HIP call, which would start that
/// runtime), NotFound when there is no GPU or none coload can describe,
/// InvalidArgument naming the index and value for a listed ordinal out of
/// range or repeated, and for an empty list; a listed ordinal coload cannot
/// describe fails with its reason.
Expected<std::unique_ptr<Runtime>> open_hip_runtime(const HipOptions& options = {});

/// A runtime that loads nothing: load() validates against the device and
/// returns the kernels with handle 0. For tools, CI and offline checks.
std::unique_ptr<Runtime> open_dry_run_runtime(std::vector<Device> devices);

}  // namespace coload
