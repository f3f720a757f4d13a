// Internal: the 64-byte AMDHSA kernel descriptor (`<name>.kd`) and its
// cross-check against the kernel's metadata
// (docs/format.md, "Kernel descriptor").
// Does not cover: finding the descriptor symbol, or the entry point, which
// need the ELF (code_object/code_object.cpp).
#pragma once

#include <cstddef>
#include <vector>

#include "coload/code_object.h"
#include "coload/target.h"
#include "common/bytes.h"

namespace coload::detail {

/// Bytes of one kernel descriptor, and the alignment the CP requires of it.
inline constexpr std::size_t kKernelDescriptorSize = 64;
inline constexpr std::uint64_t kKernelDescriptorAlign = 64;
/// Alignment of a kernel's first instruction.
inline constexpr std::uint64_t kKernelEntryAlign = 256;

/// Decodes a descriptor at `address`. `bytes` must hold exactly
/// kKernelDescriptorSize bytes (the caller has bounds-checked them).
KernelDescriptor decode_kernel_descriptor(Bytes bytes, std::uint64_t address);

/// Appends a Problem for each rule (docs/format.md) that `descriptor` (decoded
/// from `bytes`) breaks against `kernel`'s metadata: segment and kernarg
/// sizes, the wave32 and dynamic-stack bits, WGP mode (GFX10+), a non-zero
/// GRANULATED_LDS_SIZE, non-zero reserved bytes. Each names both values.
void cross_check_descriptor(const Kernel& kernel, const KernelDescriptor& descriptor, Bytes bytes,
                            const CodeObjectTarget& target, std::vector<Problem>& problems);

}  // namespace coload::detail
