// Internal: the target ID an AMDGPU code object declares in its ELF header,
// as text, for the readers that present a bare code object as a one-entry
// bundle. The header's fields themselves are read_code_object_target's
// (coload/target.h); the object's extent is code_object_size's (elf/code_object_size.h).
#pragma once

#include <string>

#include "coload/target.h"
#include "common/bytes.h"
#include "elf/code_object_size.h"

namespace coload::detail {

/// "gfx90a:sramecc+:xnack-": processor from EF_AMDGPU_MACH (names from LLVM),
/// features from the code object v3/v4+ e_flags bits, canonical order.
/// Errors: Malformed for a non-AMDGPU or unreadable ELF, NotFound for an
/// EF_AMDGPU_MACH value LLVM does not know.
Expected<std::string> target_id_from_elf_header(Bytes elf);

}  // namespace coload::detail
