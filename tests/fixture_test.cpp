// Tests against inputs the real toolchain built at build time (clang-22,
// clang-offload-bundler-22 and -19, lld, GNU ld): see tests/fixtures/.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "coload/fat_binary.h"
#include "support/bundle_writer.h"
#include "test_util.h"

namespace coload {
namespace {

using testing::Bytes;
using testing::Succeeds;

const std::filesystem::path kFixtures = COLOAD_FIXTURE_DIR;

Bytes fixture(const std::string& path) { return testing::read_file((kFixtures / path).string()); }

std::vector<std::vector<std::string>> read_table(const std::string& name) {
  return testing::read_tsv(kFixtures / name);
}

const BundleEntry* find_entry(const Bundle& bundle, std::string_view id) {
  for (const BundleEntry& entry : bundle.entries()) {
    if (entry.id == id) return &entry;
  }
  return nullptr;
}

TEST(Fixtures, EveryEntryIsByteIdenticalToClangOffloadBundler) {
  auto rows = read_table("manifest.tsv");
  ASSERT_GE(rows.size(), 40u) << "the fixture manifest is missing or nearly empty";
  std::size_t compared = 0;
  for (const auto& row : rows) {
    ASSERT_EQ(row.size(), 4u);
    SCOPED_TRACE(row[0] + " bundle " + row[1] + " " + row[2]);
    auto binary = FatBinary::open((kFixtures / row[0]).string());
    ASSERT_TRUE(Succeeds(binary));
    auto bundle = binary->read(std::stoul(row[1]));
    ASSERT_TRUE(Succeeds(bundle));
    const BundleEntry* entry = find_entry(*bundle, row[2]);
    ASSERT_NE(entry, nullptr);
    Bytes expected = fixture(row[3]);
    ASSERT_EQ(entry->bytes.size(), expected.size());
    EXPECT_TRUE(std::equal(entry->bytes.begin(), entry->bytes.end(), expected.begin()));
    ++compared;
  }
  RecordProperty("entries_compared", static_cast<int>(compared));
}

TEST(Fixtures, KindsBundleCountsAndCodeObjectTargets) {
  auto rows = read_table("fixtures.tsv");
  ASSERT_GE(rows.size(), 20u);
  for (const auto& row : rows) {
    ASSERT_GE(row.size(), 3u);
    SCOPED_TRACE(row[0]);
    auto binary = FatBinary::open((kFixtures / row[0]).string());
    ASSERT_TRUE(Succeeds(binary));
    EXPECT_EQ(to_string(binary->layout().kind), row[1]);
    EXPECT_EQ(binary->bundles().size(), std::stoul(row[2]));
    EXPECT_TRUE(binary->layout().warnings.empty()) << binary->layout().warnings.front();
    for (std::size_t i = 0; i < binary->bundles().size(); ++i) {
      auto bundle = binary->read(i);
      ASSERT_TRUE(Succeeds(bundle));
      if (row[1] == "code_object" && row.size() > 3 && !row[3].empty()) {
        ASSERT_EQ(bundle->entries().size(), 1u);
        EXPECT_EQ(bundle->entries()[0].id, "hipv4-amdgcn-amd-amdhsa--" + row[3]);
      }
    }
  }
}

TEST(Fixtures, HostImagesAreLocatedThroughTheirWrappers) {
  for (const auto& row : read_table("fixtures.tsv")) {
    if (row[1] != "host_image") continue;
    SCOPED_TRACE(row[0]);
    auto binary = FatBinary::open((kFixtures / row[0]).string());
    ASSERT_TRUE(Succeeds(binary));
    EXPECT_EQ(binary->layout().wrapper_offsets.size(), binary->bundles().size());
  }
}

/// A prefix is accepted when it opens and reads as the whole file does.
bool accepted(std::span<const std::byte> prefix, std::size_t full_bundle_count) {
  auto binary = FatBinary::from_memory(prefix);
  if (!binary) return false;
  if (binary->bundles().size() != full_bundle_count) return false;
  for (std::size_t i = 0; i < full_bundle_count; ++i) {
    if (!binary->read(i)) return false;
  }
  return true;
}

TEST(Fixtures, NoTruncatedPrefixOfAnyFixtureIsAccepted) {
  std::set<std::string> kinds_seen;
  for (const auto& row : read_table("fixtures.tsv")) {
    Bytes bytes = fixture(row[0]);
    auto whole = FatBinary::from_memory(bytes);
    ASSERT_TRUE(Succeeds(whole));
    std::size_t count = whole->bundles().size();
    // Every prefix of small files; a dense sample (every 7th byte and the last
    // page) of large ones, to keep the sanitizer build quick.
    std::size_t stride = bytes.size() <= 32768 ? 1 : 7;
    for (std::size_t length = 0; length < bytes.size(); length += (length + 4096 >= bytes.size() ? 1 : stride)) {
      ASSERT_FALSE(accepted(std::span<const std::byte>(bytes).first(length), count))
          << row[0] << ": prefix of " << length << " of " << bytes.size() << " bytes accepted";
    }
    kinds_seen.insert(row[1]);
  }
  EXPECT_EQ(kinds_seen.size(), 3u);
}

TEST(Fixtures, BareCodeObjectImagesAmongBundlesAreSizedFromTheirElfTables) {
  Bytes plain = fixture("bundles/driver_two_arch.hipfb");
  Bytes object = fixture("co/gfx90a_xnack-.co");
  Bytes compressed = fixture("compressed/driver_v3.hipfb");
  Bytes region;
  testing::append_aligned(region, plain, 4096);
  std::uint64_t object_at = testing::append_aligned(region, object, 4096);
  testing::append_aligned(region, compressed, 4096);

  auto binary = FatBinary::from_memory(region);
  ASSERT_TRUE(Succeeds(binary));
  ASSERT_EQ(binary->bundles().size(), 3u);
  const BundleInfo& info = binary->bundles()[1];
  EXPECT_EQ(info.format, BundleFormat::CodeObject);
  EXPECT_EQ(info.offset, object_at);
  EXPECT_EQ(info.size, object.size());
  auto bundle = binary->read(1);
  ASSERT_TRUE(Succeeds(bundle));
  ASSERT_EQ(bundle->entries().size(), 1u);
  EXPECT_EQ(bundle->entries()[0].id, "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-");
  EXPECT_TRUE(
      std::equal(bundle->entries()[0].bytes.begin(), bundle->entries()[0].bytes.end(), object.begin(), object.end()));
  EXPECT_EQ(binary->bundles()[2].format, BundleFormat::Compressed);
}

TEST(Fixtures, CodeObjectImageAtAnOddOffsetIsRead) {
  Bytes plain = fixture("bundles/bundler_align1.hipfb");
  Bytes object = fixture("co/gfx942.co");
  Bytes region = plain;
  if (region.size() % 2 == 0) region.push_back(std::byte{0});  // odd start; zero is walked over
  std::uint64_t object_at = testing::append_aligned(region, object, 1);
  ASSERT_NE(object_at % 8, 0u);
  auto binary = FatBinary::from_memory(region);
  ASSERT_TRUE(Succeeds(binary));
  ASSERT_EQ(binary->bundles().size(), 2u);
  EXPECT_EQ(binary->bundles()[1].offset, object_at);
  EXPECT_EQ(binary->bundles()[1].size, object.size());
  auto bundle = binary->read(1);
  ASSERT_TRUE(Succeeds(bundle));
  EXPECT_EQ(bundle->entries()[0].id, "hipv4-amdgcn-amd-amdhsa--gfx942");
}

}  // namespace
}  // namespace coload
