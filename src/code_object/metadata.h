// Internal: strict decoding of the NT_AMDGPU_METADATA msgpack descriptor
// (docs/format.md "Metadata keys", docs/reading-rules.md) with the strict
// msgpack reader of msgpack/msgpack_reader.h, over LLVM's. Does not cover: the ELF
// note that holds the bytes, the kernel descriptors and kernarg layouts
// (code_object.cpp, kernarg_layout.cpp).
// Thread safety: a pure function of its input; no shared state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "coload/code_object.h"
#include "msgpack/msgpack_reader.h"

namespace coload::detail {

/// Nesting deeper than this is refused (IREE uses the same bound); the root
/// map is depth 1.
inline constexpr unsigned kMaxMetadataDepth = 64;
/// Kernels per object and arguments per kernel: far above what a compiler
/// writes, low enough that a hostile count cannot make the decoder work
/// without bound.
inline constexpr std::size_t kMaxMetadataKernels = 65536;
inline constexpr std::size_t kMaxKernelArgs = 65536;
/// `amdhsa.printf` strings: one per printf call site; each malformed one is a
/// problem, and an empty string is one byte of msgpack.
inline constexpr std::size_t kMaxPrintfFormats = 65536;
/// Unknown keys listed (Metadata::unknown_keys); later ones are skipped unlisted.
inline constexpr std::size_t kMaxUnknownKeys = 1024;

/// How much of a kernel or argument name messages quote: a kernel's problems
/// each quote its name, so a name of a megabyte would otherwise be copied
/// into every one of them.
inline constexpr std::size_t kMessageNameLimit = 128;

/// Where a string value lies in the msgpack: its encoding starts at byte
/// `offset` with a `head`-byte head (fixstr 1, str8 2, str16 3, str32 5),
/// then `length` bytes of text.
struct StringLocation {
  std::uint64_t offset = 0;
  unsigned head = 0;
  std::uint64_t length = 0;
};

/// What decode_metadata returns.
struct DecodedMetadata {
  Metadata metadata;  ///< kernels without descriptor or layout yet
  /// Where `amdhsa.target` lies (the retarget rewrites it in place); nullopt without the key.
  std::optional<StringLocation> target_at;
  /// Findings that do not stop decoding: two kernels sharing a `.name` or a
  /// `.symbol` (Ambiguous), an `amdhsa.printf` string not of the form
  /// `ID:N:S0:...:Format` (Malformed).
  std::vector<Problem> problems;
};

/// Decodes one msgpack map: exactly one root value and no trailing bytes,
/// no duplicate keys in any map, depth at most kMaxMetadataDepth, the
/// required keys per map, integers in uint32 range (signed encodings only when
/// non-negative), power-of-two alignments, strings where strings belong.
/// Unknown keys are skipped (with the same depth, count and duplicate checks)
/// and listed in Metadata::unknown_keys; an unknown `hidden_*` value kind is
/// HiddenUnknown, any other unknown value kind an error. Every error names
/// the key path ("amdhsa.kernels[2].args[0].offset"), the byte offset in
/// `msgpack` and the offending value or encoding: LimitExceeded for depth and
/// the kernel and argument caps, UnsupportedVersion for an `amdhsa.version`
/// whose major is not 1, Malformed for everything else (truncation included).
/// Copies what it keeps; `msgpack` is not referenced after the call.
Expected<DecodedMetadata> decode_metadata(std::span<const std::byte> msgpack);

}  // namespace coload::detail
