// load/hsa_runtime.h: the pieces of the HSA backend that tests check directly.
//
// Covers: parsing an HSA ISA name into a device target and the rule that says
// which code object versions a ROCr library loads. Does not cover: the
// runtime itself (coload/runtime.h, open_hsa_runtime).
#pragma once

#include <string_view>
#include <vector>

#include "coload/error.h"
#include "coload/target.h"

namespace coload::hsa {

/// "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-" → its concrete target ID.
/// Errors: Malformed without the prefix, for a generic or non-concrete target;
/// the errors of TargetId::parse (NotFound for an unknown processor).
Expected<TargetId> parse_isa_name(std::string_view isa_name);

/// The code object versions a ROCr library loads, from its real file name
/// ("libhsa-runtime64.so.1.5.0"): the library minor version 14 (ROCm 6.2)
/// and later load v4..v6; older ones (1.5 is ROCm 5.2.3, which stops at v5)
/// and files whose name carries no version load v4 and v5. HSA's own
/// HSA_SYSTEM_INFO_VERSION_* is the spec version (1.1 in every ROCr), so it
/// cannot tell releases apart.
std::vector<unsigned> code_object_versions_for_library(std::string_view library_file);

}  // namespace coload::hsa
