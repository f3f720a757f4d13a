// Internal: the fixed header of a CCOB, declared once per version as clang
// declares RawCompressedBundleHeader V1/V2/V3 (clang/lib/Driver/OffloadBundler.cpp).
// Every reader of a header field, and every message that names a field's
// offset, takes the offset from here. Does not cover the payload
// (ccob/decompress.h) or what coload checks of it (docs/reading-rules.md).
//
//   v1: magic[4] version:u16 method:u16                 uncompressed_size:u32 hash:u64  20 bytes
//   v2: magic[4] version:u16 method:u16 total_size:u32  uncompressed_size:u32 hash:u64  24 bytes
//   v3: magic[4] version:u16 method:u16 total_size:u64  uncompressed_size:u64 hash:u64  32 bytes
#pragma once

#include <cstdint>
#include <string_view>

#include "common/magic.h"

namespace coload::detail {

/// Where a header field lies and how many bytes (little-endian) it takes.
/// Width 0: the version has no such field (v1's total_size).
struct CcobField {
  std::uint8_t offset = 0;
  std::uint8_t width = 0;
  constexpr std::uint8_t end() const { return offset + width; }
};

/// Magic, version and method lie alike in every version: they are read
/// before the version is known.
inline constexpr CcobField kCcobMagicField{0, 4};
inline constexpr CcobField kCcobVersionField{4, 2};
inline constexpr CcobField kCcobMethodField{6, 2};

/// One version's header: its fields, in file order, and its size.
struct CcobLayout {
  CcobField magic = kCcobMagicField;
  CcobField version = kCcobVersionField;
  CcobField method = kCcobMethodField;
  CcobField total_size;
  CcobField uncompressed_size;
  CcobField hash;
  std::uint8_t header_size = 0;
};

inline constexpr CcobLayout kCcobV1{
    .total_size = {8, 0}, .uncompressed_size = {8, 4}, .hash = {12, 8}, .header_size = 20};
inline constexpr CcobLayout kCcobV2{
    .total_size = {8, 4}, .uncompressed_size = {12, 4}, .hash = {16, 8}, .header_size = 24};
inline constexpr CcobLayout kCcobV3{
    .total_size = {8, 8}, .uncompressed_size = {16, 8}, .hash = {24, 8}, .header_size = 32};

/// The layout of `version`: 1, 2 or 3, the versions parse_compressed_header
/// admits (a hand-built header of another version is taken as v3).
constexpr const CcobLayout& ccob_layout(std::uint16_t version) {
  return version == 1 ? kCcobV1 : version == 2 ? kCcobV2 : kCcobV3;
}

/// Each field starts where the one before it ends and the header ends with
/// the hash, so a header reads front to back (parse_compressed_header).
constexpr bool contiguous(const CcobLayout& layout) {
  return layout.magic.offset == 0 && layout.magic.end() == layout.version.offset &&
         layout.version.end() == layout.method.offset && layout.method.end() == layout.total_size.offset &&
         layout.total_size.end() == layout.uncompressed_size.offset &&
         layout.uncompressed_size.end() == layout.hash.offset && layout.hash.end() == layout.header_size;
}
static_assert(contiguous(kCcobV1) && contiguous(kCcobV2) && contiguous(kCcobV3));
static_assert(kCcobMagic.size() == kCcobMagicField.width);

}  // namespace coload::detail
