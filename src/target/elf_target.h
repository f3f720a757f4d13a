// Internal: the target ID an AMDGPU code object declares in its ELF header.
// The target module of a later stage grows around this; for now the bundle
// reader needs it to present a bare code object as a one-entry bundle.
#pragma once

#include <string>

#include "coload/target.h"
#include "common/bytes.h"

namespace coload::detail {

/// "gfx90a:sramecc+:xnack-": processor from EF_AMDGPU_MACH (names from LLVM),
/// features from the code object v3/v4+ e_flags bits, canonical order.
/// Errors: Malformed for a non-AMDGPU or unreadable ELF, NotFound for an
/// EF_AMDGPU_MACH value LLVM does not know.
Expected<std::string> target_id_from_elf_header(Bytes elf);

/// Bytes an AMDGPU ELF at elf[0] occupies: the furthest end of its header,
/// program and section header tables, and section and segment contents.
/// `elf` may run past the object (an image inside .hip_fatbin).
/// Errors: Malformed / OutOfBounds for tables or contents that do not fit.
Expected<std::uint64_t> code_object_size(Bytes elf);

}  // namespace coload::detail
