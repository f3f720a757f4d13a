// Internal: how many bytes a code object occupies from the start of a larger
// region, without parsing more than its header tables and their ranges.
// Light on purpose: the bundle readers size objects without the ELF view.
#pragma once

#include <cstdint>

#include "common/bytes.h"

namespace coload::detail {

/// Bytes an AMDGPU ELF at elf[0] occupies: the furthest end of its header,
/// program and section header tables, and section and segment contents.
/// `elf` may run past the object (an image inside .hip_fatbin).
/// Errors: Malformed / OutOfBounds for tables or contents that do not fit.
Expected<std::uint64_t> code_object_size(Bytes elf);

}  // namespace coload::detail
