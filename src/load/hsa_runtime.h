// load/hsa_runtime.h: the pieces of the HSA backend that tests check directly.
//
// Covers: parsing an HSA ISA name into a device target and reading a ROCr
// library's release and the code object versions it loads. Does not cover:
// the runtime itself (coload/runtime.h, open_hsa_runtime).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "coload/error.h"
#include "coload/target.h"

namespace coload::hsa {

/// "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-" → its concrete target ID.
/// Errors: Malformed without the prefix, for a generic or non-concrete target;
/// the errors of TargetId::parse (NotFound for an unknown processor).
Expected<TargetId> parse_isa_name(std::string_view isa_name);

/// A ROCr release and what it loads (docs/loading.md, "HSA releases").
struct RocrRelease {
  unsigned major = 0, minor = 0;  ///< ROCr's library version (1.14); 0.0 when unknown
  unsigned rocm = 0;              ///< the ROCm release as MMmmpp (60200), 0 when unknown
  /// "ROCr 1.14.60200 (ROCm 6.2)", "ROCr 1.5.0"; what refusals name.
  std::string name;
  /// Ascending: ROCm 5.0/5.1 {4}, 5.2 to 6.1 {4,5}, 6.2 on {4,5,6}.
  std::vector<unsigned> code_object_versions;
};

/// The release of a ROCr library from its real file name (ROCm's packages
/// install libhsa-runtime64.so.1.<minor>.<ROCm as MMmmpp>, Debian's is
/// .so.1.5.0; a wheel's has no version) and from
/// HSA_AMD_SYSTEM_INFO_BUILD_VERSION (ROCr answers it in double quotes,
/// "\"1.14.0-…\"", read without them and without blanks; empty when the
/// runtime gave none). The runtime's own answer decides the
/// ROCr version; the file name adds the ROCm release when it agrees. A ROCr
/// 1.5 whose ROCm release the name does not give (5.0, 5.1 or 5.2) is v4
/// only here; the opened runtime then asks the agent the one question whose
/// answer differs in 5.2 (hsa_agents.cpp, settle_rocr_1_5). HSA_SYSTEM_INFO_VERSION_*
/// is the HSA spec version (1.1 in every ROCr): it cannot tell releases apart.
RocrRelease rocr_release(std::string_view library_file, std::string_view build_version);

}  // namespace coload::hsa
