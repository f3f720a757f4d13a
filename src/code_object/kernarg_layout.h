// Internal: a kernel's kernarg layout from its `.args`
// (docs/format.md, "Kernarg segment").
#pragma once

#include <vector>

#include "coload/code_object.h"

namespace coload::detail {

/// The layout of `kernel`'s `.args` within its `.kernarg_segment_size` and
/// `.kernarg_segment_align`, appending a Problem (kind Malformed, naming the
/// kernel, the argument index and both values) to `problems` for:
///   - an explicit argument at or after the first hidden one ("args[i].offset");
///   - two arguments sharing bytes ("args[i].offset", i the later in offset order);
///   - an argument ending past `.kernarg_segment_size` ("args[i].size");
///   - a pointer-valued explicit argument (global_buffer, dynamic_shared_pointer,
///     image, sampler, pipe, queue) whose offset is not a multiple of its
///     natural alignment, min(size, `.kernarg_segment_align`) ("args[i].offset").
/// `.pointee_align` describes the pointee in LDS and does not constrain the
/// offset (clang puts a `local float4*` with pointee_align 16 at offset 8);
/// by-value and hidden arguments have no declared alignment to check.
/// Partial and unaligned hidden blocks (hand-written assembly, MIOpen) are
/// valid layouts, not problems. Sizes are computed in 64 bits and saturate at
/// UINT32_MAX in the result (an end that large is also reported).
KernargLayout kernarg_layout(const Kernel& kernel, std::vector<Problem>& problems);

/// Sets kernel.layout = kernarg_layout(kernel, problems).
void compute_kernarg_layout(Kernel& kernel, std::vector<Problem>& problems);

}  // namespace coload::detail
