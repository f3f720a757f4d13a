// coload/runtime.h: the runtimes a checked code object is loaded into.
//
// Covers: one Runtime interface (devices as Device descriptions; load a code
// object on a device; kernels with their handles and sizes) and three
// implementations: HSA (ROCr, opened at run time), HIP (opened at run time)
// and dry-run (validation only, for tools and machines without a GPU).
// docs/loading.md has the call sequences and what each runtime checks.
//
// Ownership: a LoadedModule keeps its Image's owner alive for as long as the
// runtime may read the bytes (ROCr keeps pointers into them), and unloads in
// the right order when destroyed. A Runtime must outlive its modules.
// Threads: devices() and load() may be called from many threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
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

/// One code object loaded on one device. Destroying it unloads it.
class LoadedModule {
 public:
  virtual ~LoadedModule() = default;
  virtual const CodeObject& code_object() const = 0;
  virtual std::span<const LoadedKernel> kernels() const = 0;
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
};

struct HsaOptions {
  /// dlopen'ed at run time; a test HSA library can stand in.
  std::string library = "libhsa-runtime64.so.1";
};
/// Opens ROCr: hsa_init, then every GPU agent as a Device (its first
/// processor ISA name → target ID, a mode the name leaves out being one the
/// device lacks; LDS from the group memory pool; wave size). A GPU whose
/// processor coload does not know is left out, as CLR leaves it out; device
/// numbers count the GPUs kept. Errors: Io when the library cannot be loaded;
/// NotFound with hsa_init's status when there is no GPU (no /dev/kfd), when
/// no agent is a GPU, or when no GPU's processor is known, never a crash.
Expected<std::unique_ptr<Runtime>> open_hsa_runtime(const HsaOptions& options = {});

struct HipOptions {
  std::string library = "libamdhip64.so";  ///< tries .so.6 and .so.5 when this fails
};
/// Opens HIP: devices from hipGetDeviceProperties (gcnArchName only) and
/// hipDeviceGetAttribute (shared memory per block, warp size), modules with
/// hipModuleLoadData, kernels probed with hipModuleGetFunction. load() sets
/// the calling thread's HIP device and puts the previous one back. Errors: Io
/// when no candidate library opens (.so.6 and .so.5 are tried only when the
/// named one cannot be opened), UnsupportedVersion for a library of another
/// HIP major than coload was built against, NotFound when there is no GPU.
Expected<std::unique_ptr<Runtime>> open_hip_runtime(const HipOptions& options = {});

/// A runtime that loads nothing: load() validates against the device and
/// returns the kernels with handle 0. For tools, CI and offline checks.
std::unique_ptr<Runtime> open_dry_run_runtime(std::vector<Device> devices);

}  // namespace coload
