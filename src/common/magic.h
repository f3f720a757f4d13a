// Internal: the bytes that open each container coload reads, for the readers
// of a format and for the code that tells the formats apart before reading.
#pragma once

#include <string_view>

namespace coload::detail {

/// A plain clang offload bundle.
inline constexpr std::string_view kPlainBundleMagic = "__CLANG_OFFLOAD_BUNDLE__";
/// A compressed clang offload bundle (CCOB, ccob/ccob_layout.h).
inline constexpr std::string_view kCcobMagic = "CCOB";
/// A kpack archive of code objects (kpack/kpack_archive.h).
inline constexpr std::string_view kKpackMagic = "KPAK";
/// An ELF file: a host image or a bare code object.
inline constexpr std::string_view kElfMagic =
    "\x7f"
    "ELF";

}  // namespace coload::detail
