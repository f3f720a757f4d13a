// kpack archives (coload/detail/kpack_archive.h; docs/format.md and
// docs/reading-rules.md, "kpack archives"), written by the test-side writer
// (tests/support/kpack_writer.h): both schemes round-trip byte for byte,
// `none` entries are views of the file, a zstd lookup decodes only its own
// frame; the header, the zstd region and frames, and the code object against
// its target, each refused with its kind and location. The TOC's fields:
// kpack_toc_test.cpp.
#include "coload/detail/kpack_archive.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "kpack_test_support.h"

namespace coload {
namespace {

using namespace kpack_test;

// --- Round trips ------------------------------------------------------------

class BothSchemes : public ::testing::TestWithParam<Scheme> {};
INSTANTIATE_TEST_SUITE_P(Kpack, BothSchemes, kBothSchemes, scheme_name);

TEST_P(BothSchemes, EveryEntryReadsBackByteIdentical) {
  const auto objects = four_objects();
  const Bytes file = testing::kpack::write(objects, {.scheme = GetParam(), .group_name = "blas"});
  auto archive = parse(file);
  ASSERT_TRUE(Succeeds(archive));
  const Archive& a = **archive;
  EXPECT_EQ(a.format_version(), 1u);
  EXPECT_EQ(a.group_name(), "blas");
  EXPECT_EQ(a.gfx_arch_family(), "mixed");
  EXPECT_EQ(std::vector<std::string_view>(a.gfx_arches().begin(), a.gfx_arches().end()),
            (std::vector<std::string_view>{"gfx90a", "gfx1100", "gfx90a:xnack+"}));
  EXPECT_EQ(a.object_count(), 4u);
  EXPECT_TRUE(a.warnings().empty());
  ASSERT_EQ(a.entries().size(), 4u);
  ASSERT_EQ(a.binaries().size(), 3u);
  EXPECT_EQ(a.binaries()[0].key, "lib/liba.so#0");
  EXPECT_EQ(a.binaries()[0].count, 2u);
  EXPECT_EQ(a.binaries()[1].key, "lib/liba.so#1");
  EXPECT_EQ(a.binaries()[2].first, 3u);
  for (std::size_t i = 0; i < objects.size(); ++i) {
    const auto* entry = find_entry(a, objects[i].key, objects[i].target);
    ASSERT_NE(entry, nullptr) << i;
    EXPECT_EQ(entry->ordinal, i);
    EXPECT_EQ(entry->original_size, objects[i].bytes.size());
    EXPECT_EQ(entry->id, objects[i].metadata_target.value_or(std::string(kHip) + objects[i].target));
    EXPECT_EQ(entry->field, "toc." + objects[i].key + "." + objects[i].target);
    std::vector<std::byte> out;
    auto bytes = a.bytes(*entry, out);
    ASSERT_TRUE(Succeeds(bytes)) << i;
    EXPECT_TRUE(std::ranges::equal(*bytes, objects[i].bytes)) << i;
    auto head = a.head(*entry, 64, out);
    ASSERT_TRUE(Succeeds(head));
    EXPECT_TRUE(std::ranges::equal(*head, std::span(objects[i].bytes).first(64))) << i;
  }
  const auto* c = find_entry(a, "lib/liba.so#1", "gfx90a");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->binary, "lib/liba.so");
  EXPECT_EQ(c->index, std::optional<std::uint32_t>(1));
  EXPECT_TRUE(c->metadata_target.empty());
}

TEST_P(BothSchemes, FatBinaryHasOneBundlePerKeyWithItsTargets) {
  const auto objects = four_objects();
  const Bytes file = testing::kpack::write(objects, {.scheme = GetParam()});
  auto binary = FatBinary::from_memory(file, "test.kpack");
  ASSERT_TRUE(Succeeds(binary));
  ASSERT_EQ(binary->bundles().size(), 3u);
  auto first = binary->read(0);
  ASSERT_TRUE(Succeeds(first));
  EXPECT_EQ(first->info().format, BundleFormat::Kpack);
  ASSERT_EQ(first->entries().size(), 2u);
  EXPECT_EQ(first->entries()[0].id, std::string(kHip) + "gfx90a");
  EXPECT_TRUE(std::ranges::equal(first->entries()[0].bytes, objects[0].bytes));
  EXPECT_EQ(first->entries()[1].id, std::string(kHip) + "gfx1100");
  EXPECT_TRUE(std::ranges::equal(first->entries()[1].bytes, objects[1].bytes));
  auto last = binary->read(2);
  ASSERT_TRUE(Succeeds(last));
  ASSERT_EQ(last->entries().size(), 1u);
  EXPECT_EQ(last->entries()[0].id, std::string(kHip) + "gfx90a:xnack+");
  EXPECT_TRUE(std::ranges::equal(last->entries()[0].bytes, objects[3].bytes));
}

TEST(KpackArchive, NoneEntriesAreViewsOfTheFile) {
  const Bytes file = testing::kpack::write(four_objects(), {.scheme = Scheme::None});
  auto archive = parse(file);
  ASSERT_TRUE(Succeeds(archive));
  for (const auto& entry : (*archive)->entries()) {
    std::vector<std::byte> out;
    auto bytes = (*archive)->bytes(entry, out);
    ASSERT_TRUE(Succeeds(bytes));
    EXPECT_TRUE(out.empty());
    EXPECT_GE(bytes->data(), file.data());
    EXPECT_LE(bytes->data() + bytes->size(), file.data() + file.size());
  }
}

TEST(KpackArchive, WriterLaysOutAsRocmKpack) {
  const auto objects = four_objects();
  for (Scheme scheme : {Scheme::None, Scheme::ZstdPerKernel}) {
    Layout parts = testing::kpack::layout(objects, {.scheme = scheme});
    EXPECT_EQ(parts.data_offset(), 64u);
    ASSERT_EQ(parts.stored.size(), 4u);
    // The Python writer's root key order.
    std::vector<std::string> keys;
    for (const auto& [key, value] : parts.toc.entries()) keys.push_back(key);
    std::vector<std::string> expected = {"format_version", "group_name", "gfx_arch_family",
                                         "gfx_arches",     "toc",        "compression_scheme"};
    if (scheme == Scheme::None) {
      expected.push_back("blobs");
    } else {
      expected.insert(expected.end(), {"zstd_offset", "zstd_size"});
    }
    EXPECT_EQ(keys, expected);
    // Entry maps: type, ordinal, original_size, metadata {target, source_prefix}; str keys, smallest integers.
    const Node& entry = entry_node(parts, "lib/liba.so#0", "gfx90a");
    EXPECT_EQ(entry.encode(),
              Node::map({{"type", "hsaco"},
                         {"ordinal", 0},
                         {"original_size", 3000},
                         {"metadata", Node::map({{"target", std::string(kHip) + "gfx90a"}, {"source_prefix", "lib"}})}})
                  .encode());
    EXPECT_EQ(entry.encode()[1 + 5 + 6 + 8 + 1 + 14], std::byte{0xcd});  // 3000 as uint16
    const Bytes file = parts.assemble();
    auto archive = parse(file);
    ASSERT_TRUE(Succeeds(archive));
    EXPECT_EQ((*archive)->toc_offset(), parts.toc_offset());
    for (const auto& entry : (*archive)->entries()) {
      auto stored = (*archive)->stored(entry);
      ASSERT_TRUE(Succeeds(stored));
      EXPECT_EQ(stored->offset, parts.stored[entry.ordinal].offset);
      EXPECT_EQ(stored->size, parts.stored[entry.ordinal].size);
    }
  }
  const Layout none = testing::kpack::layout(objects, {.scheme = Scheme::None});
  EXPECT_EQ(none.stored[0].offset, 64u);
  EXPECT_EQ(none.stored[1].offset, 64u + 3000u);  // back to back
  const Layout zstd = testing::kpack::layout(objects, {.scheme = Scheme::ZstdPerKernel});
  EXPECT_EQ(zstd.stored[0].offset, 64u + 8u);  // count, then the first size word
}

// A zstd lookup walks the size words up to its frame and decodes that frame
// alone: another frame's corruption does not reach it.
TEST(KpackArchive, ZstdLookupDecodesOnlyItsOwnFrame) {
  const auto objects = four_objects();
  Layout parts = layout(Scheme::ZstdPerKernel);
  for (std::uint64_t i = 0; i < parts.stored[1].size; ++i) parts.at(parts.stored[1].offset + i) = std::byte{0xff};
  const Bytes file = parts.assemble();
  auto archive = parse(file);
  ASSERT_TRUE(Succeeds(archive));
  for (std::size_t i : {0u, 2u, 3u}) {
    const auto* entry = find_entry(**archive, objects[i].key, objects[i].target);
    ASSERT_NE(entry, nullptr);
    std::vector<std::byte> out;
    auto bytes = (*archive)->bytes(*entry, out);
    ASSERT_TRUE(Succeeds(bytes)) << i;
    EXPECT_TRUE(std::ranges::equal(*bytes, objects[i].bytes)) << i;
  }
  const auto* broken = find_entry(**archive, "lib/liba.so#0", "gfx1100");
  std::vector<std::byte> out;
  EXPECT_TRUE(FailsAtField((*archive)->bytes(*broken, out), ErrorKind::CorruptData, broken->field, broken->toc_offset));
  // Through the FatBinary: key 1 reads, key 0 (which holds the broken frame) fails naming its entry.
  auto binary = FatBinary::from_memory(file, "test.kpack");
  ASSERT_TRUE(Succeeds(binary));
  EXPECT_TRUE(Succeeds(binary->read(1)));
  EXPECT_TRUE(Succeeds(binary->read_only(0, 0)));
  auto key0 = binary->read(0);
  ASSERT_TRUE(FailsWith(key0, ErrorKind::CorruptData));
  EXPECT_EQ(key0.error().location().entry, std::optional<std::size_t>(1));
  EXPECT_EQ(key0.error().location().bundle, std::optional<std::size_t>(0));
}

// No prefix of a valid archive is accepted.
TEST_P(BothSchemes, NoPrefixIsAnArchive) {
  const Bytes file = layout(GetParam()).assemble();
  for (std::size_t n = 0; n < file.size(); ++n) {
    const Bytes prefix(file.begin(), file.begin() + n);
    EXPECT_FALSE(parse(prefix).has_value()) << n;
  }
}

// --- The header ------------------------------------------------------------

TEST(KpackHeader, BadMagic) {
  Layout parts = layout(Scheme::None);
  parts.header[3] = std::byte{'X'};
  EXPECT_TRUE(FailsAtField(parse(parts.assemble()), ErrorKind::BadMagic, "magic", 0));
}

TEST(KpackHeader, ShortHeaderIsTruncated) {
  const Bytes file = layout(Scheme::None).assemble();
  EXPECT_TRUE(FailsWith(parse(Bytes(file.begin(), file.begin() + 12)), ErrorKind::Truncated));
}

TEST(KpackHeader, WrongVersion) {
  Layout parts = layout(Scheme::None);
  testing::kpack::put_u32(parts.header, 4, 2);
  EXPECT_TRUE(FailsAtField(parse(parts.assemble()), ErrorKind::UnsupportedVersion, "version", 4, 2, 1));
}

TEST(KpackHeader, TocOffsetOutOfRange) {
  Layout parts = layout(Scheme::None);
  const std::uint64_t size = parts.assemble().size();
  for (std::uint64_t offset : {size, size + 1, std::uint64_t{15}, std::uint64_t{0}, UINT64_MAX}) {
    testing::kpack::put_u64(parts.header, 8, offset);
    EXPECT_TRUE(FailsAtField(parse(parts.assemble()), ErrorKind::OutOfBounds, "toc_offset", 8, offset, size)) << offset;
  }
}

TEST(KpackHeader, TocOffsetInsideTheDataIsNotAMap) {
  Layout parts = layout(Scheme::None);
  testing::kpack::put_u64(parts.header, 8, 64);  // the first blob: an ELF header, 0x7f is a positive fixint
  EXPECT_TRUE(FailsAtField(parse(parts.assemble()), ErrorKind::Malformed, "kpack TOC", 0));
}

// --- zstd-per-kernel: the region and its frames --------------------------------

TEST(KpackZstd, RegionOutsideTheData) {
  const Layout base = layout(Scheme::ZstdPerKernel);
  const std::uint64_t toc = base.toc_offset();
  const std::uint64_t size = base.data.size();
  Layout parts = base;
  parts.toc["zstd_size"] = Node(size + 1);  // overlaps the TOC
  const std::uint64_t at = find(parts.toc.encode(), Node("zstd_offset").encode()) + 12;
  EXPECT_TRUE(FailsAtField(parse(parts.assemble()), ErrorKind::OutOfBounds, "zstd_offset", at, 64 + size + 1, toc));
  Layout past = base;
  past.toc["zstd_offset"] = Node(toc + 64);
  EXPECT_TRUE(FailsWith(parse(past.assemble()), ErrorKind::OutOfBounds));
  Layout overflow = base;
  overflow.toc["zstd_offset"] = Node(UINT64_MAX);
  EXPECT_TRUE(FailsWith(parse(overflow.assemble()), ErrorKind::Overflow));
}

TEST(KpackZstd, RegionTooSmallForItsCount) {
  Layout parts = layout(Scheme::ZstdPerKernel);
  parts.toc["zstd_size"] = Node(3);
  const std::uint64_t at = find(parts.toc.encode(), Node("zstd_size").encode()) + 10;
  EXPECT_TRUE(FailsAtField(parse(parts.assemble()), ErrorKind::Truncated, "zstd_size", at, 3, 4));
}

TEST(KpackZstd, FrameCountPastTheRegion) {
  Layout parts = layout(Scheme::ZstdPerKernel);
  const std::uint64_t room = (parts.data.size() - 4) / 4;
  for (std::uint32_t count : {static_cast<std::uint32_t>(room + 1), 0xffffffffu}) {
    testing::kpack::put_u32(parts.data, 0, count);
    EXPECT_TRUE(FailsAtField(parse(parts.assemble()), ErrorKind::OutOfBounds, "zstd_frame_count", 64, count, room))
        << count;
  }
  // A smaller count leaves the last ordinal out of range.
  testing::kpack::put_u32(parts.data, 0, 3);
  EXPECT_TRUE(FailsWith(parse(parts.assemble()), ErrorKind::Malformed));
}

// A frame size past the region is found when a lookup walks to it; lookups
// of the frames before it still work.
TEST(KpackZstd, FrameSizePastTheRegion) {
  const auto objects = four_objects();
  Layout parts = layout(Scheme::ZstdPerKernel);
  const std::uint64_t word = parts.stored[2].offset - 4;
  const std::uint64_t end = parts.toc_offset();
  const std::uint32_t size = static_cast<std::uint32_t>(end - parts.stored[2].offset + 1);
  testing::kpack::put_u32(parts.data, word - parts.data_offset(), size);
  const Bytes file = parts.assemble();
  auto archive = parse(file);
  ASSERT_TRUE(Succeeds(archive));
  std::vector<std::byte> out;
  const auto* first = find_entry(**archive, objects[0].key, objects[0].target);
  EXPECT_TRUE(Succeeds((*archive)->bytes(*first, out)));
  for (std::size_t i : {2u, 3u}) {
    const auto* entry = find_entry(**archive, objects[i].key, objects[i].target);
    EXPECT_TRUE(
        FailsAtField((*archive)->bytes(*entry, out), ErrorKind::OutOfBounds, "zstd_frame_size", word, size, size - 1))
        << i;
  }
}

// The region ends inside the frame table (its count still fits): the lookup
// that walks to the missing size word is Truncated there; earlier frames read.
TEST(KpackZstd, FrameTableEndsBeforeAFrameSizeWord) {
  const auto objects = four_objects();
  Layout parts = layout(Scheme::ZstdPerKernel);
  const std::uint64_t end = parts.stored[1].offset + parts.stored[1].size + 2;  // two bytes of frame 2's size word
  parts.toc["zstd_size"] = Node(end - parts.data_offset());
  const Bytes file = parts.assemble();
  auto archive = parse(file);
  ASSERT_TRUE(Succeeds(archive));
  std::vector<std::byte> out;
  EXPECT_TRUE(Succeeds((*archive)->bytes(*find_entry(**archive, objects[1].key, objects[1].target), out)));
  const auto* entry = find_entry(**archive, objects[2].key, objects[2].target);
  // The value is the bytes left of the size word, the limit the 4 it needs.
  EXPECT_TRUE(FailsAtField((*archive)->stored(*entry), ErrorKind::Truncated, "zstd_frame_size", end - 2, 2, 4));
}

/// A zstd frame header's size from its descriptor byte (RFC 8878, 3.1.1.1).
std::size_t zstd_frame_header_size(std::byte descriptor) {
  const unsigned fhd = std::to_integer<unsigned>(descriptor);
  const bool single_segment = (fhd >> 5) & 1;
  static constexpr std::size_t kDictId[] = {0, 1, 2, 4};
  const std::size_t content_size[] = {single_segment ? 1u : 0u, 2, 4, 8};
  return 4 + 1 + (single_segment ? 0 : 1) + kDictId[fhd & 3] + content_size[fhd >> 6];
}

TEST(KpackZstd, CorruptFrame) {
  const auto objects = four_objects();
  // A frame whose magic is gone; and one whose first block has the reserved type.
  for (bool magic : {true, false}) {
    Layout parts = layout(Scheme::ZstdPerKernel);
    const auto& frame = parts.stored[2];
    std::uint64_t at = frame.offset;
    if (!magic) {
      const std::size_t header = zstd_frame_header_size(parts.at(frame.offset + 4));
      at = frame.offset + header;  // block header: bits 1-2 are the type, 3 is reserved
      parts.at(at) |= std::byte{0x06};
    } else {
      parts.at(at) = std::byte{0};
    }
    const Bytes file = parts.assemble();
    auto archive = parse(file);
    ASSERT_TRUE(Succeeds(archive));
    const auto* entry = find_entry(**archive, objects[2].key, objects[2].target);
    std::vector<std::byte> out;
    EXPECT_TRUE(FailsAtField((*archive)->bytes(*entry, out), ErrorKind::CorruptData, entry->field, entry->toc_offset))
        << magic;
    EXPECT_TRUE(FailsWith((*archive)->head(*entry, 64, out), ErrorKind::CorruptData)) << magic;
  }
}

// The frame declares (and decodes to) a size other than original_size.
TEST(KpackZstd, FrameContentSizeOtherThanOriginalSize) {
  Layout parts = layout(Scheme::ZstdPerKernel);
  entry_node(parts, "lib/liba.so#1", "gfx90a")["original_size"] = Node(2600);
  const Bytes file = parts.assemble();
  auto archive = parse(file);
  ASSERT_TRUE(Succeeds(archive));
  const auto* entry = find_entry(**archive, "lib/liba.so#1", "gfx90a");
  std::vector<std::byte> out;
  EXPECT_TRUE(FailsAtField((*archive)->bytes(*entry, out), ErrorKind::SizeMismatch,
                           "toc.lib/liba.so#1.gfx90a.original_size", entry->toc_offset, 2500, 2600));
  EXPECT_TRUE(FailsWith((*archive)->head(*entry, 4096, out), ErrorKind::SizeMismatch));
}

TEST(KpackZstd, OriginalSizeAboveTheDecompressionLimit) {
  Layout parts = layout(Scheme::ZstdPerKernel);
  const std::uint64_t at = original_size_offset(parts, "lib/liba.so#0", "gfx90a");
  EXPECT_TRUE(FailsAtField(parse(parts.assemble(), {.max_decompressed_bytes = 2999}), ErrorKind::LimitExceeded,
                           "toc.lib/liba.so#0.gfx90a.original_size", at, 3000, 2999));
}

// --- The code object against its target -----------------------------------------

TEST_P(BothSchemes, CodeObjectOfAnotherTarget) {
  auto objects = four_objects();
  objects[2].bytes = entry_bytes(kGfx1100, 2500, 3);  // filed under gfx90a
  const Bytes file = testing::kpack::write(objects, {.scheme = GetParam()});
  auto archive = parse(file);
  ASSERT_TRUE(Succeeds(archive));
  const auto* entry = find_entry(**archive, "lib/liba.so#1", "gfx90a");
  std::vector<std::byte> out;
  EXPECT_TRUE(FailsAtField((*archive)->bytes(*entry, out), ErrorKind::Malformed, entry->field, entry->toc_offset));
  // xnack- in the header of an entry filed as xnack+.
  objects = four_objects();
  objects[3].bytes = entry_bytes(kGfx90a | testing::kXnackOff | testing::kSrameccAny, 1800, 4);
  const Bytes features = testing::kpack::write(objects, {.scheme = GetParam()});
  auto other = parse(features);
  ASSERT_TRUE(Succeeds(other));
  const auto* xnack = find_entry(**other, "lib/libb.so#0", "gfx90a:xnack+");
  EXPECT_TRUE(FailsAtField((*other)->bytes(*xnack, out), ErrorKind::Malformed, xnack->field, xnack->toc_offset));
}

}  // namespace
}  // namespace coload
