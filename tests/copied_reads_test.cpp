// Reading a large mapped file by copies (SourceReader: bundle tables and ELF
// headers read with pread, never through the mapping) must give exactly what
// reading the same bytes in place gives: the same bundles, entries, heads,
// selections and errors.
#include <gtest/gtest.h>

#include <filesystem>

#include "coload/device.h"
#include "coload/fat_binary.h"
#include "coload/select.h"
#include "formats/plain_table.h"
#include "support/bundle_writer.h"
#include "test_util.h"

namespace coload {
namespace {

using testing::Bytes;
using testing::FailsWith;
using testing::Succeeds;

const std::filesystem::path kFixtures = COLOAD_FIXTURE_DIR;
const char* const kDevices[] = {"gfx90a", "gfx90a:xnack+", "gfx908", "gfx942", "gfx1030", "gfx1100", "gfx1201"};

/// `bytes` written to a temporary file, padded with zeros past the size up to
/// which a Source only maps (the walk skips zero padding; an ELF ignores a tail).
class LargeFile {
 public:
  LargeFile(Bytes bytes, const char* name) : path_(std::filesystem::temp_directory_path() / name) {
    if (bytes.size() <= Source::kKeepOpenAbove) bytes.resize(Source::kKeepOpenAbove + 4096);
    testing::write_file(path_.string(), bytes);
    bytes_ = std::move(bytes);
  }
  ~LargeFile() { std::filesystem::remove(path_); }
  std::string path() const { return path_.string(); }
  const Bytes& bytes() const { return bytes_; }

 private:
  std::filesystem::path path_;
  Bytes bytes_;
};

void expect_same_selection(const Selection& copied, const Selection& in_place, const std::string& where) {
  EXPECT_EQ(copied.selected, in_place.selected) << where;
  ASSERT_EQ(copied.candidates.size(), in_place.candidates.size()) << where;
  for (std::size_t i = 0; i < copied.candidates.size(); ++i) {
    const Candidate& a = copied.candidates[i];
    const Candidate& b = in_place.candidates[i];
    EXPECT_EQ(a.id, b.id) << where;
    EXPECT_EQ(a.tier, b.tier) << where << " " << a.id;
    EXPECT_EQ(a.verdict, b.verdict) << where << " " << a.id;
    EXPECT_EQ(a.reason, b.reason) << where << " " << a.id;
    EXPECT_EQ(a.code_object.has_value(), b.code_object.has_value()) << where << " " << a.id;
  }
}

/// The same error either way: kind, location and the sentence they render.
void expect_same_error(const Error& copied, const Error& in_place, const std::string& label) {
  EXPECT_EQ(copied.kind(), in_place.kind()) << label;
  const ErrorLocation& a = copied.location();
  const ErrorLocation& b = in_place.location();
  EXPECT_EQ(a.bundle, b.bundle) << label;
  EXPECT_EQ(a.bundle_offset, b.bundle_offset) << label;
  EXPECT_EQ(a.entry, b.entry) << label;
  EXPECT_EQ(a.field, b.field) << label;
  EXPECT_EQ(a.offset, b.offset) << label;
  EXPECT_EQ(a.value, b.value) << label;
  EXPECT_EQ(a.limit, b.limit) << label;
  EXPECT_EQ(copied.message(), in_place.message()) << label;
}

/// Opens `file` (copies) and its bytes in memory (views), and compares
/// everything a caller can observe; counts the plain bundles whose table the
/// scan copied.
void expect_same_reading(const LargeFile& file, const std::string& label, std::size_t& copied_tables) {
  auto copied = FatBinary::open(file.path());
  auto in_place = FatBinary::from_memory(file.bytes(), file.path());
  if (!in_place) {
    EXPECT_TRUE(FailsWith(copied, in_place.error().kind())) << label;
    if (!copied) expect_same_error(copied.error(), in_place.error(), label);
    return;
  }
  if (!Succeeds(copied)) {
    ADD_FAILURE() << label << ": " << copied.error().message();
    return;
  }
  EXPECT_TRUE(copied->source().reader().copies()) << label;
  EXPECT_FALSE(in_place->source().reader().copies()) << label;
  const auto base_copied = copied->source().bytes().data();
  const auto base_in_place = in_place->source().bytes().data();
  ASSERT_EQ(copied->bundles().size(), in_place->bundles().size()) << label;
  for (std::size_t b = 0; b < copied->bundles().size(); ++b) {
    std::string where = label + " bundle " + std::to_string(b);
    const BundleInfo& info = copied->bundles()[b];
    EXPECT_EQ(info.offset, in_place->bundles()[b].offset) << where;
    EXPECT_EQ(info.size, in_place->bundles()[b].size) << where;
    EXPECT_EQ(info.format, in_place->bundles()[b].format) << where;
    auto x = copied->read(b);
    auto y = in_place->read(b);
    if (!y) {
      EXPECT_TRUE(FailsWith(x, y.error().kind())) << where;
      continue;
    }
    if (!Succeeds(x)) {
      ADD_FAILURE() << where << ": " << x.error().message();
      continue;
    }
    EXPECT_FALSE(in_place->bundles()[b].table) << where;
    if (info.format == BundleFormat::Plain) {
      // The scan keeps its copy of a table for read(); a table past the copy
      // limit is viewed, and there is no copy to keep.
      if (info.table) ++copied_tables;
      // Without the scan's copy, read_bundle reads the table itself.
      BundleInfo uncached = info;
      uncached.table.reset();
      auto z = read_bundle(copied->source().reader(), uncached);
      ASSERT_TRUE(Succeeds(z)) << where;
      ASSERT_EQ(z->entries().size(), x->entries().size()) << where;
      for (std::size_t e = 0; e < z->entries().size(); ++e) {
        EXPECT_EQ(z->entries()[e].id, x->entries()[e].id) << where;
        EXPECT_EQ(z->entries()[e].bytes.data(), x->entries()[e].bytes.data()) << where;
        EXPECT_EQ(z->entries()[e].bytes.size(), x->entries()[e].bytes.size()) << where;
      }
    }
    ASSERT_EQ(x->entries().size(), y->entries().size()) << where;
    for (std::size_t e = 0; e < x->entries().size(); ++e) {
      const BundleEntry& a = x->entries()[e];
      const BundleEntry& c = y->entries()[e];
      EXPECT_EQ(a.id, c.id) << where;
      EXPECT_EQ(a.offset, c.offset) << where << " " << a.id;
      EXPECT_EQ(a.size, c.size) << where << " " << a.id;
      EXPECT_EQ(a.is_host, c.is_host) << where << " " << a.id;
      if (info.format == BundleFormat::Plain) {
        // Still views of the mapping at the entry's own place: nothing copied.
        EXPECT_EQ(a.bytes.data() - base_copied, c.bytes.data() - base_in_place) << where << " " << a.id;
      }
      EXPECT_EQ(Bytes(a.bytes.begin(), a.bytes.end()), Bytes(c.bytes.begin(), c.bytes.end())) << where;
      std::vector<std::byte> scratch;
      auto head = x->head(e, 64, scratch);
      ASSERT_TRUE(Succeeds(head)) << where;
      auto expected = c.bytes.first(std::min<std::size_t>(64, c.bytes.size()));
      EXPECT_EQ(Bytes(head->begin(), head->end()), Bytes(expected.begin(), expected.end())) << where << " " << a.id;
      if (info.format == BundleFormat::Plain && !head->empty()) EXPECT_EQ(head->data(), scratch.data()) << where;
    }
    for (const char* spec : kDevices) {
      auto device = device_from_spec(spec);
      ASSERT_TRUE(Succeeds(device)) << spec;
      auto from_copies = select_in_bundle(*device, *x);
      auto from_views = select_in_bundle(*device, *y);
      ASSERT_TRUE(Succeeds(from_copies)) << where;
      ASSERT_TRUE(Succeeds(from_views)) << where;
      expect_same_selection(*from_copies, *from_views, where + " " + spec);
    }
  }
}

TEST(CopiedReads, EveryFixtureReadsAsInPlace) {
  std::size_t files = 0;
  std::size_t plain = 0;
  for (const auto& item : std::filesystem::recursive_directory_iterator(kFixtures)) {
    if (!item.is_regular_file() || item.path().extension() == ".tsv") continue;
    LargeFile file(testing::read_file(item.path().string()), "coload_copied_reads_fixture.bin");
    expect_same_reading(file, item.path().lexically_relative(kFixtures).string(), plain);
    ++files;
  }
  EXPECT_GE(files, 50u) << "fixtures missing";
  EXPECT_GE(plain, 40u) << "too few plain bundles had their tables copied";
}

// Tables larger than the first reads (1 KiB, then 4 KiB), and than the largest copy (64 KiB).
TEST(CopiedReads, LongTablesAreReadAgainLongerOrViewed) {
  for (std::size_t count : {150u, 2000u}) {
    std::vector<testing::Entry> entries;
    for (std::size_t i = 0; i < count; ++i) {
      entries.push_back(
          {"hipv4-amdgcn-amd-amdhsa--gfx90a-" + std::to_string(i), testing::to_bytes("payload " + std::to_string(i))});
    }
    Bytes bundle = testing::write_plain_bundle(entries, 1);
    ASSERT_GT(testing::plain_bundle_header_size(entries), count == 150 ? 4096u : 65536u);
    LargeFile file(bundle, "coload_copied_reads_long_table.bin");
    std::size_t copied_tables = 0;
    expect_same_reading(file, "table of " + std::to_string(count) + " entries", copied_tables);
    EXPECT_EQ(copied_tables, count == 150 ? 1u : 0u);
    auto binary = FatBinary::open(file.path());
    ASSERT_TRUE(Succeeds(binary));
    auto read = binary->read(0);
    ASSERT_TRUE(Succeeds(read));
    ASSERT_EQ(read->entries().size(), count);
    EXPECT_EQ(read->entries().back().id, "hipv4-amdgcn-amd-amdhsa--gfx90a-" + std::to_string(count - 1));
  }
}

// Errors found in a copied table are the ones found in place, word for word.
TEST(CopiedReads, BrokenTablesFailAsInPlace) {
  Bytes bundle = testing::write_plain_bundle(
      {{"host-x86_64-unknown-linux-gnu-", {}}, {"hipv4-amdgcn-amd-amdhsa--gfx90a", testing::to_bytes("code")}});
  Bytes huge_count = bundle;
  testing::store_le(std::span(huge_count).subspan(24, 8), 0x1000000, 8);
  Bytes past_end = bundle;
  // Entry 1's size (after magic, count, entry 0's record and entry 1's offset).
  std::size_t entry1_size = 24 + 8 + (24 + 30) + 8;
  testing::store_le(std::span(past_end).subspan(entry1_size, 8), 0x7fffffffffff, 8);
  Bytes past_file = bundle;
  testing::store_le(std::span(past_file).subspan(entry1_size, 8), 0x200000, 8);
  for (const Bytes& broken : {huge_count, past_end, past_file}) {
    LargeFile file(broken, "coload_copied_reads_broken.bin");
    auto copied = FatBinary::open(file.path());
    auto in_place = FatBinary::from_memory(file.bytes(), file.path());
    ASSERT_FALSE(in_place.has_value());
    ASSERT_TRUE(FailsWith(copied, in_place.error().kind()));
    expect_same_error(copied.error(), in_place.error(), "broken table");
  }
}

// read_bundle takes the scan's parsed entries only when they fit the bundle; a
// hand-built BundleInfo whose entries do not is read from the file instead.
TEST(CopiedReads, TableCopiesAreTrustedOnlyWhereTheyFit) {
  Bytes bundle = testing::write_plain_bundle(
      {{"host-x86_64-unknown-linux-gnu-", {}}, {"hipv4-amdgcn-amd-amdhsa--gfx90a", testing::to_bytes("code")}});
  LargeFile file(bundle, "coload_copied_reads_table_copy.bin");
  auto binary = FatBinary::open(file.path());
  ASSERT_TRUE(Succeeds(binary));
  const BundleInfo& scanned = binary->bundles()[0];
  ASSERT_TRUE(scanned.table);
  ASSERT_EQ(scanned.table->entries.size(), 2u);
  EXPECT_EQ(scanned.table->entries[1].id, "hipv4-amdgcn-amd-amdhsa--gfx90a");
  EXPECT_EQ(scanned.table->entries[1].size, 4u);

  // Entries that run past the bundle: the file's entries.
  auto forged = std::make_shared<PlainTableCopy>(*scanned.table);
  forged->entries[1].size = 0x7fffffffffff;
  BundleInfo info = scanned;
  info.table = forged;
  auto read = read_bundle(binary->source().reader(), info);
  ASSERT_TRUE(Succeeds(read));
  ASSERT_EQ(read->entries().size(), 2u);
  EXPECT_EQ(read->entries()[1].size, 4u);
  EXPECT_EQ(Bytes(read->entries()[1].bytes.begin(), read->entries()[1].bytes.end()), testing::to_bytes("code"));

  // Entries that fit are taken as they are, without reading the table: a
  // copy that moved an entry is believed (and is the scan's to get right).
  auto moved = std::make_shared<PlainTableCopy>(*scanned.table);
  moved->entries[1].size = 2;
  info.table = moved;
  auto trusted = read_bundle(binary->source().reader(), info);
  ASSERT_TRUE(Succeeds(trusted));
  EXPECT_EQ(Bytes(trusted->entries()[1].bytes.begin(), trusted->entries()[1].bytes.end()), testing::to_bytes("co"));
  EXPECT_TRUE(trusted->entries()[0].is_host);
  EXPECT_FALSE(trusted->entries()[1].is_host);
}

// A scan keeps each distinct entry ID once, however many tables list it.
TEST(CopiedReads, TheScanKeepsEachIdOnce) {
  Bytes one = testing::write_plain_bundle({{"host-x86_64-unknown-linux-gnu-", {}},
                                           {"hipv4-amdgcn-amd-amdhsa--gfx90a", testing::to_bytes("a")},
                                           {"hipv4-amdgcn-amd-amdhsa--gfx942", testing::to_bytes("b")}});
  Bytes reordered = testing::write_plain_bundle({{"hipv4-amdgcn-amd-amdhsa--gfx942", testing::to_bytes("c")},
                                                 {"hipv4-amdgcn-amd-amdhsa--gfx90a", testing::to_bytes("d")},
                                                 {"hipv4-amdgcn-amd-amdhsa--gfx1030", testing::to_bytes("e")}});
  Bytes image = one;
  image.insert(image.end(), reordered.begin(), reordered.end());
  image.insert(image.end(), one.begin(), one.end());
  LargeFile file(image, "coload_copied_reads_ids_once.bin");
  auto binary = FatBinary::open(file.path());
  ASSERT_TRUE(Succeeds(binary));
  ASSERT_EQ(binary->bundles().size(), 3u);
  auto id = [&](std::size_t bundle, std::size_t entry) { return binary->bundles()[bundle].table->entries[entry].id; };
  EXPECT_EQ(id(1, 0), "hipv4-amdgcn-amd-amdhsa--gfx942");
  EXPECT_EQ(id(1, 0).data(), id(0, 2).data());  // found by hashing: another position
  EXPECT_EQ(id(1, 1).data(), id(0, 1).data());  // found at the same position
  EXPECT_EQ(id(2, 1).data(), id(0, 1).data());
  EXPECT_EQ(id(2, 0).data(), id(0, 0).data());
  EXPECT_EQ(id(1, 2), "hipv4-amdgcn-amd-amdhsa--gfx1030");
  EXPECT_EQ(binary->bundles()[2].table->ids, binary->bundles()[0].table->ids);
  // What the bundles read from those tables is what the file says.
  for (std::size_t b = 0; b < 3; ++b) {
    auto read = binary->read(b);
    ASSERT_TRUE(Succeeds(read));
    auto parsed = parse_plain_bundle(std::span(image).subspan(binary->bundles()[b].offset, binary->bundles()[b].size));
    ASSERT_TRUE(Succeeds(parsed));
    ASSERT_EQ(read->entries().size(), parsed->entries.size());
    for (std::size_t e = 0; e < parsed->entries.size(); ++e) {
      EXPECT_EQ(read->entries()[e].id, parsed->entries[e].id);
      EXPECT_EQ(read->entries()[e].offset, parsed->entries[e].offset);
      EXPECT_EQ(read->entries()[e].size, parsed->entries[e].size);
      EXPECT_EQ(read->entries()[e].is_host, parsed->entries[e].is_host);
    }
  }
}

// Only a plain bundle's entries lie in the source: any other bundle's head()
// is a view of its own entry bytes, whatever reader it was given.
TEST(CopiedReads, HeadsOfOtherFormatsAreTheirOwnBytes) {
  LargeFile file(Bytes(16, std::byte{0x5a}), "coload_copied_reads_other_format.bin");
  auto source = Source::map_file(file.path());
  ASSERT_TRUE(Succeeds(source));
  ASSERT_TRUE(source->reader().copies());
  auto storage =
      std::make_shared<const std::vector<std::byte>>(testing::to_bytes("\x7f"
                                                                       "ELF decompressed"));
  BundleInfo info{.index = 0, .offset = 0, .size = storage->size(), .format = BundleFormat::Compressed};
  std::vector<BundleEntry> entries{{.id = "hipv4-amdgcn-amd-amdhsa--gfx90a",
                                    .offset = 0,
                                    .size = storage->size(),
                                    .is_host = false,
                                    .bytes = *storage}};
  Bundle bundle(info, entries, *storage, storage, source->reader());
  std::vector<std::byte> scratch;
  auto head = bundle.head(0, 64, scratch);
  ASSERT_TRUE(Succeeds(head));
  EXPECT_EQ(head->data(), storage->data());
  EXPECT_EQ(head->size(), storage->size());
  EXPECT_TRUE(FailsWith(bundle.head(1, 64, scratch), ErrorKind::InvalidArgument));
}

}  // namespace
}  // namespace coload
