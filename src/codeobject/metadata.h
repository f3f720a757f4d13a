// Internal: strict decoding of the NT_AMDGPU_METADATA msgpack descriptor
// (shared/reference/metadata-and-loader.md sections 1.2-1.5) with LLVM's
// msgpack reader.
#pragma once

#include <span>
#include <vector>

#include "coload/code_object.h"

namespace coload::detail {

/// Nesting deeper than this is refused (IREE uses the same bound).
inline constexpr unsigned kMaxMetadataDepth = 64;

struct DecodedMetadata {
  Metadata metadata;  ///< kernels without descriptor or layout yet
  std::vector<Problem> problems;
};

/// Decodes one msgpack map: exactly one root value and no trailing bytes,
/// no duplicate keys in any map, depth at most kMaxMetadataDepth, the
/// required keys per map, integers in uint32 range (signed encodings only when
/// non-negative), power-of-two alignments, strings where strings belong.
/// Unknown keys are skipped and listed in Metadata::unknown_keys. Errors:
/// Malformed naming the key path ("amdhsa.kernels[2].args[0].offset") and the
/// offending value.
Expected<DecodedMetadata> decode_metadata(std::span<const std::byte> msgpack);

}  // namespace coload::detail
