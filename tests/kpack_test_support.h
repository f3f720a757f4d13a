// Helpers of the kpack archive tests (kpack_archive_test.cpp,
// kpack_toc_test.cpp): four code objects under three keys laid out by the
// test-side writer, parsing them, and finding a planted value's offset.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "coload/detail/kpack_archive.h"
#include "support/elf_writer.h"
#include "support/kpack_writer.h"
#include "test_util.h"

namespace coload::kpack_test {

using detail::kpack::Archive;
using testing::entry_bytes;
using testing::kpack::Layout;
using testing::kpack::Object;
using testing::kpack::Scheme;
using Bytes = std::vector<std::byte>;
using Node = testing::msgpack::Node;
using MsgWriter = testing::msgpack::Writer;
using testing::FailsAtField;
using testing::FailsWith;
using testing::Succeeds;

/// A test parameterised by scheme; instantiate a suite of it with
/// INSTANTIATE_TEST_SUITE_P(Kpack, Suite, kBothSchemes, scheme_name).
inline const auto kBothSchemes = ::testing::Values(Scheme::None, Scheme::ZstdPerKernel);
inline std::string scheme_name(const ::testing::TestParamInfo<Scheme>& info) {
  return info.param == Scheme::None ? "none" : "zstd";
}

inline constexpr std::uint32_t kGfx90a = 0x3f, kGfx1100 = 0x41;
inline constexpr std::uint32_t kAny = testing::kXnackAny | testing::kSrameccAny;
inline constexpr std::string_view kHip = "hipv4-amdgcn-amd-amdhsa--";

/// Four code objects under three keys: liba#0 {gfx90a, gfx1100}, liba#1
/// {gfx90a} (no metadata), libb#0 {gfx90a:xnack+}. Ordinals 0..3 in this order.
inline std::vector<Object> four_objects() {
  return {
      {"lib/liba.so#0", "gfx90a", entry_bytes(kGfx90a | kAny, 3000, 1), std::string(kHip) + "gfx90a", "lib"},
      {"lib/liba.so#0", "gfx1100", entry_bytes(kGfx1100, 2000, 2), std::string(kHip) + "gfx1100", "lib"},
      {"lib/liba.so#1", "gfx90a", entry_bytes(kGfx90a | kAny, 2500, 3), std::nullopt, ""},
      {"lib/libb.so#0", "gfx90a:xnack+", entry_bytes(kGfx90a | testing::kXnackOn | testing::kSrameccAny, 1800, 4),
       std::string(kHip) + "gfx90a:xnack+", ""},
  };
}

inline Layout layout(Scheme scheme) { return testing::kpack::layout(four_objects(), {.scheme = scheme}); }

/// The archive in `file`, which must outlive it (its entries view the file).
inline Expected<std::shared_ptr<const Archive>> parse(const Bytes& file, const ReadOptions& options = {}) {
  return Archive::parse(SourceReader(file), options);
}

/// Offset of the first occurrence of `needle` in `haystack` (a failure and npos when absent).
inline std::uint64_t find(std::span<const std::byte> haystack, std::span<const std::byte> needle) {
  auto at = std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end());
  EXPECT_NE(at, haystack.end()) << "needle of " << needle.size() << " bytes not found";
  return at == haystack.end() ? UINT64_MAX : static_cast<std::uint64_t>(at - haystack.begin());
}

/// Offset in the TOC of the (only) encoding of `node`, as the TOC now reads.
inline std::uint64_t toc_offset_of(const Layout& layout, const Node& node) {
  return find(layout.toc.encode(), node.encode());
}

inline const detail::kpack::Entry* find_entry(const Archive& archive, std::string_view key, std::string_view target) {
  for (const auto& entry : archive.entries()) {
    if (entry.key == key && entry.target == target) return &entry;
  }
  return nullptr;
}

inline Node& entry_node(Layout& layout, const std::string& key, const std::string& target) {
  return layout.toc["toc"][key][target];
}

/// Offset in the TOC of the "ordinal" value of an entry the writer wrote
/// (fixmap, "type": "hsaco", then "ordinal").
inline std::uint64_t ordinal_offset(Layout& parts, const std::string& key, const std::string& target) {
  return toc_offset_of(parts, entry_node(parts, key, target)) + 1 + 5 + 6 + 8;
}

/// Offset of its "original_size" value, when its ordinal is a fixint.
inline std::uint64_t original_size_offset(Layout& parts, const std::string& key, const std::string& target) {
  return ordinal_offset(parts, key, target) + 1 + 14;
}

}  // namespace coload::kpack_test
