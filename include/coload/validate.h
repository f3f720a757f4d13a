// coload/validate.h: device-facing checks of a code object before any runtime
// sees it, and of a dispatch before it is submitted.
//
// Covers: code object version, target compatibility, static LDS against the
// device's LDS, wave size, workgroup sizes (load time); the caller's packed
// kernarg buffer and static + dynamic LDS (dispatch time); the admission
// policy (admit). Every failure names the kernel, the field, the value and
// the limit. Does not cover: the code object's own problems
// (coload/code_object.h); what the runtimes leave unchecked (docs/loading.md).
//
// Ownership and threads: results are values; the functions share no state.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "coload/code_object.h"
#include "coload/device.h"
#include "coload/error.h"

namespace coload {

/// One failed check. `kernel` is empty for object-wide checks.
struct Violation {
  ErrorKind kind = ErrorKind::InvalidArgument;
  std::string kernel;
  std::string field;  ///< e.g. "group_segment_fixed_size"
  std::uint64_t value = 0;
  std::uint64_t limit = 0;
  /// e.g. `kernel "gemm_128x128": group_segment_fixed_size 98304 exceeds the
  /// 65536-byte LDS of gfx942 (built for gfx950?)`
  std::string message;
};

/// Every violation of `code_object` on `device`, in a fixed order: object-wide
/// checks, then kernels in metadata order. Empty when it can be loaded. The
/// code object's own problems (CodeObject::problems) are not repeated here.
std::vector<Violation> validate(const CodeObject& code_object, const Device& device);

/// The admission policy: whether `code_object` may be handed to a runtime for
/// `device`. A problem of a kernel (a CodeObject::problems entry naming one)
/// refuses the object, and so does any violation of validate(); object-wide
/// problems (metadata strings no runtime reads to load, `.kd` symbols no
/// kernel names) refuse nothing (docs/loading.md). The error names `what`
/// (empty: nothing), the count and the first reason, with its kind, field,
/// value and limit.
/// The registry admits every code object before its runtime sees it; the
/// dry-run runtime admits what it is given.
Expected<void> admit(const CodeObject& code_object, const Device& device, std::string_view what);

/// A dispatch of `kernel` on `device`: `kernarg_bytes` is the length of the
/// caller's packed explicit arguments, `dynamic_lds` the bytes of dynamic LDS.
struct Dispatch {
  std::uint64_t kernarg_bytes = 0;
  std::uint64_t dynamic_lds = 0;
  std::array<std::uint32_t, 3> workgroup_size{1, 1, 1};
};

/// Checks a dispatch: the kernarg buffer covers the explicit arguments and
/// does not run into the hidden ones or past the segment (a kernel whose
/// metadata lists no `.args` takes exactly `.kernarg_segment_size`: nothing
/// says where its explicit arguments end); static + dynamic LDS
/// fits the device (64-bit, overflow-safe); the workgroup size respects
/// `.max_flat_workgroup_size` and `.reqd_workgroup_size`. Errors:
/// SizeMismatch for a kernarg length, LimitExceeded for LDS, InvalidArgument
/// for a workgroup size, Malformed for a kernel whose kernarg layout has a
/// problem (it cannot be dispatched); each names kernel, field, value and limit.
Expected<void> check_dispatch(const Kernel& kernel, const Device& device, const Dispatch& dispatch);

}  // namespace coload
