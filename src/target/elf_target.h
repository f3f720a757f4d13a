// Internal: the target ID an AMDGPU code object declares in its ELF header.
// The target module of a later stage grows around this; for now the bundle
// reader needs it to present a bare code object as a one-entry bundle.
#pragma once

#include <string>

#include "common/bytes.h"

namespace coload::detail {

/// "gfx90a:sramecc+:xnack-": processor from EF_AMDGPU_MACH (names from LLVM),
/// features from the code object v3/v4+ e_flags bits, canonical order.
/// Errors: Malformed for a non-AMDGPU or unreadable ELF, NotFound for an
/// EF_AMDGPU_MACH value LLVM does not know.
Expected<std::string> target_id_from_elf_header(Bytes elf);

}  // namespace coload::detail
