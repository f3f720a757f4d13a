// coload/detail/gpu_topology.h: the GPUs of this machine as HIP will
// enumerate them, read from the KFD topology in sysfs without starting the
// HSA or HIP runtime. Unstable, for the preload library, the coload tool and
// the tests: it may change in any release; programs describe a device
// through coload/device.h or ask a runtime (coload/runtime.h).
//
// Covers: libhsakmt's reading of `nodes/<N>/gpu_id` and `nodes/<N>/properties`
// (which nodes it admits, which are GPUs), ROCr's ISA name per GPU (the
// gfx_target_version, HSA_OVERRIDE_GFX_VERSION, the sramecc capability bit
// and HSA_ENABLE_SRAMECC, the process's xnack mode and HSA_XNACK), ROCr's
// ROCR_VISIBLE_DEVICES and then CLR's HIP_VISIBLE_DEVICES (or
// CUDA_VISIBLE_DEVICES); docs/preload.md, "The GPUs without the runtime",
// says which code each rule models. Does not cover: the HIP or HSA release
// (code object versions, generics: the Device fields keep their defaults),
// nor COLOAD_DEVICES / --device, which replace this list.
//
// Ownership and threads: values only; a call reads the files and the
// environment function it is given and shares no state with other calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "coload/device.h"
#include "coload/error.h"

namespace coload::detail {

/// Where the topology is read and what the process's environment says.
struct TopologyOptions {
  /// The KFD topology (libhsakmt reads /sys/devices/virtual/kfd/kfd/topology,
  /// which /sys/class/kfd/kfd links to); a test points it at a fake tree.
  std::string root = "/sys/class/kfd/kfd/topology";
  /// Where the DRM render nodes are: libhsakmt admits a GPU node only when
  /// it can open `renderD<drm_render_minor>` here (a container that was not
  /// given the device does not see that GPU).
  std::string render_nodes = "/dev/dri";
  /// The process environment as a lookup, nullopt for an unset variable (a
  /// set, empty one is ""): HSA_OVERRIDE_GFX_VERSION[_<node>], HSA_XNACK,
  /// HSA_ENABLE_SRAMECC, ROCR_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES,
  /// CUDA_VISIBLE_DEVICES. A function, so tests need no setenv; empty: nothing is set.
  std::function<std::optional<std::string>(std::string_view)> environment;
  /// The xnack mode the KFD holds for this process (hsaKmtGetXNACKMode), used
  /// when HSA_XNACK does not decide it: query_kfd_xnack_mode, or a test's
  /// answer. Empty, or nullopt: off, as ROCr assumes when the query fails.
  std::function<std::optional<bool>()> kfd_xnack_mode;
};

/// One GPU as HIP will enumerate it.
struct TopologyGpu {
  std::size_t node = 0;  ///< the KFD node number (nodes/<N>)
  /// The target with the xnack/sramecc modes ROCr reports (a mode it does
  /// not report is Unsupported), the LDS size from lds_size_in_kb and the
  /// ASIC revision from the capability bits; release fields at defaults.
  Device device;
  /// The ISA name, as hsa_isa_get_info_alt gives it: "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-".
  std::string isa_name;
  std::uint64_t unique_id = 0;  ///< the properties' unique_id (0 when absent): ROCR_VISIBLE_DEVICES' "GPU-<hex>"
};

/// The GPUs HIP will enumerate, in HIP's order, after ROCR_VISIBLE_DEVICES
/// then HIP_VISIBLE_DEVICES (or CUDA_VISIBLE_DEVICES). Empty when those hide
/// every GPU or when ROCr would find none. Errors, each naming the file (and
/// the key and value when a file's content is at fault): Io when the tree or
/// a node's file cannot be read; Malformed for content that is not
/// `name value` lines of decimal numbers or a duplicated key; LimitExceeded
/// for a file over one page (what libhsakmt reads) or too many nodes;
/// Overflow for a value past its field's width; NotFound for a visible GPU
/// without a gfx_target_version or whose version names no processor coload knows; InvalidArgument for a bad
/// HSA_OVERRIDE_GFX_VERSION (libhsakmt then fails, and ROCr finds no GPU).
Expected<std::vector<TopologyGpu>> topology_gpus(const TopologyOptions& options);

/// The xnack mode the KFD holds for this process, asked as libhsakmt's
/// hsaKmtGetXNACKMode asks it (AMDKFD_IOC_SET_XNACK_MODE with -1, which
/// changes nothing) on `kfd`; nullopt when it cannot be opened or the kernel
/// lacks the query (before Linux 5.13). Opening /dev/kfd makes the KFD's
/// process for this address space, which ROCr's own open then finds. For
/// TopologyOptions::kfd_xnack_mode.
std::optional<bool> query_kfd_xnack_mode(const std::string& kfd = "/dev/kfd");

}  // namespace coload::detail
