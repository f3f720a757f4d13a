// The TOC of a kpack archive (src/kpack/kpack_toc.cpp; docs/reading-rules.md,
// "kpack archives"), planted by the test-side writer: the root, binaries,
// entries, metadata, ordinals and blobs, each malformed field refused with its
// kind and the location the reader gives it (the field path, the value's
// offset in the TOC, the value and the limit).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "kpack_test_support.h"

namespace coload {
namespace {

using namespace kpack_test;

class TocBothSchemes : public ::testing::TestWithParam<Scheme> {};
INSTANTIATE_TEST_SUITE_P(Kpack, TocBothSchemes, kBothSchemes, scheme_name);

// --- The TOC's root ----------------------------------------------------------

TEST(KpackToc, RootThatIsNotAMap) {
  Layout parts = layout(Scheme::None);
  parts.toc = Node::array({Node(1)});
  EXPECT_TRUE(FailsAtField(parse(parts.assemble()), ErrorKind::Malformed, "kpack TOC", 0));
}

TEST(KpackToc, TrailingBytesAfterTheToc) {
  Layout parts = layout(Scheme::None);
  parts.trailing = {std::byte{0xc0}, std::byte{0xc0}, std::byte{0xc0}};
  const std::uint64_t toc_size = parts.toc.encode().size();
  EXPECT_TRUE(FailsAtField(parse(parts.assemble()), ErrorKind::Malformed, "kpack TOC", toc_size, 3));
}

TEST(KpackToc, EveryRequiredRootKeyMissing) {
  for (Scheme scheme : {Scheme::None, Scheme::ZstdPerKernel}) {
    std::vector<std::string> keys = {"format_version", "group_name", "gfx_arch_family",
                                     "gfx_arches",     "toc",        "compression_scheme"};
    if (scheme == Scheme::None) {
      keys.push_back("blobs");
    } else {
      keys.insert(keys.end(), {"zstd_offset", "zstd_size"});
    }
    for (const std::string& key : keys) {
      Layout parts = layout(scheme);
      parts.toc.erase(key);
      EXPECT_TRUE(FailsAtField(parse(parts.assemble()), ErrorKind::Malformed, "kpack TOC", 0)) << key;
    }
  }
}

TEST(KpackToc, DuplicateRootKey) {
  Layout parts = layout(Scheme::None);
  parts.toc.add("group_name", "again");
  EXPECT_TRUE(FailsWith(parse(parts.assemble()), ErrorKind::Malformed));
}

TEST(KpackToc, UnknownKeysAreTolerated) {
  Layout parts = layout(Scheme::ZstdPerKernel);
  parts.toc.add("future", Node::map({{"x", Node::array({Node(1)})}}));
  entry_node(parts, "lib/liba.so#0", "gfx90a").add("future", 7);
  entry_node(parts, "lib/liba.so#0", "gfx90a")["metadata"].add("source_file", "a.hip");
  EXPECT_TRUE(Succeeds(parse(parts.assemble())));
}

// Each root value of the wrong msgpack type: Malformed at its key, at the
// offset of the planted value (rocm-kpack's reader aborts the process).
TEST(KpackToc, EveryRootValueMistyped) {
  const Node planted = Node::raw(MsgWriter().u64(0xfeedfacecafe0001));
  const Node planted_text = Node("wrong-type-planted");
  struct Case {
    Scheme scheme;
    std::string key;
    Node value;
  };
  const std::vector<Case> cases = {
      {Scheme::None, "format_version", planted_text},
      {Scheme::None, "group_name", planted},
      {Scheme::None, "gfx_arch_family", planted},
      {Scheme::None, "gfx_arches", planted_text},
      {Scheme::None, "toc", planted_text},
      {Scheme::None, "compression_scheme", planted},
      {Scheme::None, "blobs", planted_text},
      {Scheme::ZstdPerKernel, "zstd_offset", planted_text},
      {Scheme::ZstdPerKernel, "zstd_size", planted_text},
  };
  for (const Case& c : cases) {
    Layout parts = layout(c.scheme);
    parts.toc[c.key] = c.value;
    const std::uint64_t at = toc_offset_of(parts, c.value);
    EXPECT_TRUE(FailsAtField(parse(parts.assemble()), ErrorKind::Malformed, c.key, at)) << c.key;
  }
  Layout parts = layout(Scheme::None);
  parts.toc["gfx_arches"].items().push_back(planted);
  const std::uint64_t at = toc_offset_of(parts, planted);
  EXPECT_TRUE(FailsAtField(parse(parts.assemble()), ErrorKind::Malformed, "gfx_arches[3]", at));
}

TEST(KpackToc, NegativeIntegers) {
  Layout parts = layout(Scheme::ZstdPerKernel);
  const Node negative = Node::raw(MsgWriter().i64(-64));
  parts.toc["zstd_offset"] = negative;
  EXPECT_TRUE(FailsWith(parse(parts.assemble()), ErrorKind::Malformed));
}

TEST(KpackToc, FormatVersionOtherThanOne) {
  Layout parts = layout(Scheme::None);
  parts.toc["format_version"] = Node(2);
  const std::uint64_t at = find(parts.toc.encode(), Node("format_version").encode()) + 15;
  EXPECT_TRUE(FailsAtField(parse(parts.assemble()), ErrorKind::UnsupportedVersion, "format_version", at, 2, 1));
}

TEST(KpackToc, UnknownCompressionScheme) {
  for (const char* scheme : {"zstd", "lz4-per-kernel", ""}) {
    Layout parts = layout(Scheme::None);
    parts.toc["compression_scheme"] = Node(std::string("planted:") + scheme);
    const std::uint64_t at = toc_offset_of(parts, parts.toc["compression_scheme"]);
    EXPECT_TRUE(FailsAtField(parse(parts.assemble()), ErrorKind::UnsupportedMethod, "compression_scheme", at))
        << scheme;
  }
}

// --- Binaries, entries, metadata ---------------------------------------------

TEST(KpackToc, BinaryThatIsNotAMap) {
  Layout parts = layout(Scheme::None);
  parts.toc["toc"]["lib/liba.so#1"] = Node("planted-not-a-map");
  const std::uint64_t at = toc_offset_of(parts, Node("planted-not-a-map"));
  EXPECT_TRUE(FailsAtField(parse(parts.assemble()), ErrorKind::Malformed, "toc.lib/liba.so#1", at));
}

TEST(KpackToc, EntryThatIsNotAMap) {
  Layout parts = layout(Scheme::None);
  entry_node(parts, "lib/liba.so#1", "gfx90a") = Node("planted-not-a-map");
  const std::uint64_t at = toc_offset_of(parts, Node("planted-not-a-map"));
  EXPECT_TRUE(FailsAtField(parse(parts.assemble()), ErrorKind::Malformed, "toc.lib/liba.so#1.gfx90a", at));
}

// A missing required entry key names the entry's map, at its offset.
TEST(KpackToc, EntryKeysMissing) {
  for (const char* key : {"ordinal", "original_size"}) {
    Layout parts = layout(Scheme::None);
    Node& entry = entry_node(parts, "lib/liba.so#1", "gfx90a");
    entry.erase(key);
    const std::uint64_t at = toc_offset_of(parts, entry);
    EXPECT_TRUE(FailsAtField(parse(parts.assemble()), ErrorKind::Malformed, "toc.lib/liba.so#1.gfx90a", at)) << key;
  }
  // type and metadata are optional.
  Layout parts = layout(Scheme::None);
  entry_node(parts, "lib/liba.so#0", "gfx90a").erase("type").erase("metadata");
  const Bytes file = parts.assemble();
  auto archive = parse(file);
  ASSERT_TRUE(Succeeds(archive));
  EXPECT_EQ((*archive)->entries()[0].id, std::string(kHip) + "gfx90a");
}

TEST(KpackToc, EntryValuesMistyped) {
  const Node planted_text = Node("wrong-type-planted");
  const Node planted_negative = Node::raw(MsgWriter().i64(-5));
  const Node planted_wide = Node::raw(MsgWriter().u64(0x100000000));  // ordinal: more than 32 bits
  struct Case {
    std::string key;
    Node value;
    std::optional<std::uint64_t> found, limit;
  };
  const std::vector<Case> cases = {{"type", Node::raw(MsgWriter().u64(0xfeedfacecafe0001)), {}, {}},
                                   {"ordinal", planted_text, {}, {}},
                                   {"ordinal", planted_negative, {}, {}},
                                   {"ordinal", planted_wide, 0x100000000, 0xffffffff},
                                   {"original_size", planted_text, {}, {}},
                                   {"original_size", planted_negative, {}, {}},
                                   {"metadata", planted_text, {}, {}}};
  for (const Case& c : cases) {
    Layout parts = layout(Scheme::None);
    entry_node(parts, "lib/liba.so#1", "gfx90a")[c.key] = c.value;
    const std::uint64_t at = toc_offset_of(parts, c.value);
    EXPECT_TRUE(FailsAtField(parse(parts.assemble()), ErrorKind::Malformed, "toc.lib/liba.so#1.gfx90a." + c.key, at,
                             c.found, c.limit))
        << c.key;
  }
}

TEST(KpackToc, MetadataTargetMistypedOrEmpty) {
  for (const Node& value : {Node::raw(MsgWriter().u64(0xfeedfacecafe0001)), Node(""), Node::map({})}) {
    Layout parts = layout(Scheme::None);
    entry_node(parts, "lib/liba.so#0", "gfx1100")["metadata"]["target"] = value;
    Node& metadata = entry_node(parts, "lib/liba.so#0", "gfx1100")["metadata"];
    const std::uint64_t at = toc_offset_of(parts, metadata) + 1 + 7;  // fixmap, "target" as a fixstr
    EXPECT_TRUE(
        FailsAtField(parse(parts.assemble()), ErrorKind::Malformed, "toc.lib/liba.so#0.gfx1100.metadata.target", at));
  }
}

TEST(KpackToc, MetadataTargetContradictsTheTargetKey) {
  Layout parts = layout(Scheme::None);
  Node& metadata = entry_node(parts, "lib/liba.so#0", "gfx1100")["metadata"];
  metadata["target"] = std::string(kHip) + "gfx1101";
  const std::uint64_t at = toc_offset_of(parts, metadata) + 1 + 7;
  EXPECT_TRUE(
      FailsAtField(parse(parts.assemble()), ErrorKind::Malformed, "toc.lib/liba.so#0.gfx1100.metadata.target", at));
  // Features count: gfx90a:xnack+ filed under a metadata target of gfx90a:xnack-.
  Layout features = layout(Scheme::None);
  entry_node(features, "lib/libb.so#0", "gfx90a:xnack+")["metadata"]["target"] = std::string(kHip) + "gfx90a:xnack-";
  EXPECT_TRUE(FailsWith(parse(features.assemble()), ErrorKind::Malformed));
}

TEST(KpackToc, DuplicateTargetInOneBinary) {
  auto objects = four_objects();
  objects.push_back(objects[0]);  // the Python writer refuses this; ours writes the key twice
  EXPECT_TRUE(FailsWith(parse(testing::kpack::write(objects)), ErrorKind::Malformed));
}

TEST(KpackToc, TargetMissingFromGfxArchesIsAWarning) {
  const Bytes file =
      testing::kpack::write(four_objects(), {.gfx_arches = std::vector<std::string>{"gfx90a", "gfx1100"}});
  auto archive = parse(file);
  ASSERT_TRUE(Succeeds(archive));
  ASSERT_EQ((*archive)->warnings().size(), 1u);
  EXPECT_NE((*archive)->warnings()[0].find("gfx90a:xnack+"), std::string::npos);
}

// --- Ordinals ----------------------------------------------------------------

TEST_P(TocBothSchemes, OrdinalOutOfRange) {
  for (std::uint32_t ordinal : {4u, 5u, 0xffffffffu}) {
    Layout parts = layout(GetParam());
    entry_node(parts, "lib/liba.so#1", "gfx90a")["ordinal"] = Node(std::uint64_t{ordinal});
    const std::uint64_t at = ordinal_offset(parts, "lib/liba.so#1", "gfx90a");
    EXPECT_TRUE(
        FailsAtField(parse(parts.assemble()), ErrorKind::Malformed, "toc.lib/liba.so#1.gfx90a.ordinal", at, ordinal, 4))
        << ordinal;
  }
}

TEST_P(TocBothSchemes, OrdinalReused) {
  Layout parts = layout(GetParam());
  entry_node(parts, "lib/libb.so#0", "gfx90a:xnack+")["ordinal"] = Node(1);
  const std::uint64_t at = ordinal_offset(parts, "lib/libb.so#0", "gfx90a:xnack+");
  EXPECT_TRUE(
      FailsAtField(parse(parts.assemble()), ErrorKind::Malformed, "toc.lib/libb.so#0.gfx90a:xnack+.ordinal", at, 1));
}

// An object no entry names is not an error (nothing reads it).
TEST_P(TocBothSchemes, UnreferencedObjectIsAccepted) {
  Layout parts = layout(GetParam());
  parts.toc["toc"].erase("lib/liba.so#1");
  const Bytes file = parts.assemble();
  auto archive = parse(file);
  ASSERT_TRUE(Succeeds(archive));
  EXPECT_EQ((*archive)->object_count(), 4u);
  EXPECT_EQ((*archive)->entries().size(), 3u);
}

// --- none: blobs ---------------------------------------------------------------

TEST(KpackBlobs, BlobShapeErrors) {
  {
    Layout parts = layout(Scheme::None);
    parts.toc["blobs"][1] = Node("planted-not-a-map");
    EXPECT_TRUE(FailsAtField(parse(parts.assemble()), ErrorKind::Malformed, "blobs[1]",
                             toc_offset_of(parts, Node("planted-not-a-map"))));
  }
  for (const char* key : {"offset", "size"}) {
    Layout parts = layout(Scheme::None);
    parts.toc["blobs"][2].erase(key);
    const std::uint64_t at = toc_offset_of(parts, parts.toc["blobs"][2]);
    EXPECT_TRUE(FailsAtField(parse(parts.assemble()), ErrorKind::Malformed, "blobs[2]", at)) << key;
    Layout mistyped = layout(Scheme::None);
    mistyped.toc["blobs"][2][key] = Node("wrong-type-planted");
    EXPECT_TRUE(FailsAtField(parse(mistyped.assemble()), ErrorKind::Malformed, std::string("blobs[2].") + key,
                             toc_offset_of(mistyped, Node("wrong-type-planted"))))
        << key;
  }
}

TEST(KpackBlobs, BlobOutsideTheDataRegion) {
  const Layout base = layout(Scheme::None);
  const std::uint64_t toc = base.toc_offset();
  const std::uint64_t size = base.stored[3].size;
  struct Case {
    std::uint64_t offset, size;
  };
  // Overlapping the TOC, past the end of the file, inside the header.
  for (Case c : {Case{toc - size + 1, size}, Case{toc, size}, Case{toc + 100000, size}, Case{8, size}}) {
    Layout parts = base;
    parts.toc["blobs"][3]["offset"] = Node(c.offset);
    parts.toc["blobs"][3]["size"] = Node(c.size);
    const std::uint64_t at = toc_offset_of(parts, parts.toc["blobs"][3]);
    EXPECT_TRUE(FailsAtField(parse(parts.assemble()), ErrorKind::OutOfBounds, "blobs[3]", at, c.offset + c.size, toc))
        << c.offset;
  }
  Layout parts = base;
  parts.toc["blobs"][3]["offset"] = Node(UINT64_MAX - 10);
  const std::uint64_t at = toc_offset_of(parts, parts.toc["blobs"][3]);
  EXPECT_TRUE(FailsAtField(parse(parts.assemble()), ErrorKind::Overflow, "blobs[3]", at, UINT64_MAX - 10));
}

TEST(KpackBlobs, OriginalSizeOtherThanTheBlobSize) {
  Layout parts = layout(Scheme::None);
  entry_node(parts, "lib/liba.so#1", "gfx90a")["original_size"] = Node(2499);
  const std::uint64_t at = original_size_offset(parts, "lib/liba.so#1", "gfx90a");
  EXPECT_TRUE(FailsAtField(parse(parts.assemble()), ErrorKind::SizeMismatch, "toc.lib/liba.so#1.gfx90a.original_size",
                           at, 2499, 2500));
}

}  // namespace
}  // namespace coload
