// extract_from_compressed_bundle: the caller picks an entry from the table,
// only the picked entry is kept (byte-identical to read_bundle's), Skip stops
// at it, and Verify still checks the hash.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "coload/detail/stream_select.h"
#include "coload/fat_binary.h"
#include "stream_select_test_support.h"
#include "support/bundle_writer.h"
#include "test_util.h"

namespace coload {
namespace {

using namespace stream_select_test;

// extract_from_compressed_bundle: the caller picks from the table; only the
// picked entry is kept, byte-identical to read_bundle's.
EntryPicker by_id(std::string id) {
  return [id = std::move(id)](std::span<const BundleEntry> table) -> std::optional<std::size_t> {
    for (std::size_t i = 0; i < table.size(); ++i) {
      if (!table[i].bytes.empty()) return std::nullopt;  // the picker sees the table alone
      if (table[i].id == id) return i;
    }
    return std::nullopt;
  };
}

TEST(StreamExtract, EveryEntryOfEveryCompressedFixture) {
  std::size_t checked = 0;
  for (const std::string& path : compressed_fixtures()) {
    auto binary = FatBinary::open((kFixtures / path).string());
    ASSERT_TRUE(Succeeds(binary)) << path;
    for (const BundleInfo& info : binary->bundles()) {
      if (info.format != BundleFormat::Compressed) continue;
      auto bundle = read_bundle(binary->source().bytes(), info);
      ASSERT_TRUE(Succeeds(bundle)) << path;
      for (std::size_t i = 0; i < bundle->entries().size(); ++i) {
        const BundleEntry& entry = bundle->entries()[i];
        if (std::any_of(bundle->entries().begin(), bundle->entries().begin() + static_cast<std::ptrdiff_t>(i),
                        [&](const BundleEntry& e) { return e.id == entry.id; })) {
          continue;  // a repeated ID picks its first occurrence
        }
        for (Hash mode : {Hash::Verify, Hash::Skip}) {
          std::string label = path + " entry " + std::to_string(i) + (mode == Hash::Skip ? " skip" : " verify");
          auto got = extract_from_compressed_bundle(binary->source().bytes(), info, by_id(std::string(entry.id)),
                                                    {.hash = mode});
          ASSERT_TRUE(Succeeds(got)) << label;
          EXPECT_EQ(got->selection.selected, std::optional<std::size_t>(i)) << label;
          EXPECT_TRUE(std::ranges::equal(got->chosen, entry.bytes)) << label;
          ASSERT_EQ(got->selection.candidates.size(), bundle->entries().size()) << label;
          EXPECT_EQ(got->selection.candidates[i].verdict, Verdict::Selected) << label;
          EXPECT_EQ(got->heads.size(), bundle->entries().size()) << label;
          if (mode == Hash::Verify) EXPECT_EQ(got->decoded_bytes, info.compressed->uncompressed_size) << label;
          ++checked;
        }
      }
    }
  }
  EXPECT_GE(checked, 40u);
}

TEST(StreamExtract, SkipStopsAtThePickedEntry) {
  Bytes plain = three_entry_bundle();
  Bytes ccob = testing::write_ccob(plain, 3, CcobMethod::Zlib);
  auto binary = FatBinary::from_memory(ccob);
  ASSERT_TRUE(Succeeds(binary));
  // gfx1030 is the first sized entry (300000 bytes): Skip stops after it, a
  // decoder chunk later at most, well before the other 900000 bytes.
  auto skip = extract_from_compressed_bundle(ccob, binary->bundles()[0], by_id("hipv4-amdgcn-amd-amdhsa--gfx1030"),
                                             {.hash = Hash::Skip});
  ASSERT_TRUE(Succeeds(skip));
  EXPECT_EQ(skip->selection.selected, std::optional<std::size_t>(1));
  EXPECT_EQ(skip->chosen.size(), 300000u);
  EXPECT_LT(skip->decoded_bytes, plain.size() - 600000);
  EXPECT_EQ(skip->selection.candidates[2].reason, "not requested");
  EXPECT_EQ(skip->selection.candidates[2].verdict, Verdict::Rejected);
}

// What `coload ls` asks for: the table and nothing else. A first check
// decodes and hashes it all; a marked CCOB (or Skip mode) stops within a
// block of the table's end, before any entry's bytes.
TEST(StreamExtract, NoPickStopsAfterTheTableOnceMarked) {
  Bytes plain = three_entry_bundle(kLarge);
  auto parsed = parse_plain_bundle(plain);
  ASSERT_TRUE(Succeeds(parsed));
  const std::uint64_t first_entry = parsed->entries[1].offset;
  EntryPicker nothing = [](std::span<const BundleEntry>) { return std::optional<std::size_t>(); };
  for (CcobMethod method : {CcobMethod::Zlib, CcobMethod::Zstd}) {
    testing::ScratchDirectory cache;
    StreamOptions marked{.read = {.verified_cache = (cache.path() / "verified").string()}};
    Bytes ccob = testing::write_ccob(plain, 3, method);
    auto binary = FatBinary::from_memory(ccob);
    ASSERT_TRUE(Succeeds(binary));
    auto first = extract_from_compressed_bundle(ccob, binary->bundles()[0], nothing, marked);
    ASSERT_TRUE(Succeeds(first));
    EXPECT_EQ(first->hash, StreamSelection::Hash::Checked);
    EXPECT_EQ(first->decoded_bytes, plain.size());
    for (auto [options, hash] : {std::pair{marked, StreamSelection::Hash::CheckedEarlier},
                                 std::pair{StreamOptions{.hash = Hash::Skip}, StreamSelection::Hash::NotChecked}}) {
      auto table = extract_from_compressed_bundle(ccob, binary->bundles()[0], nothing, options);
      ASSERT_TRUE(Succeeds(table));
      EXPECT_EQ(table->hash, hash);
      EXPECT_LE(table->decoded_bytes, first_entry + (128u << 10));
      EXPECT_TRUE(table->chosen.empty());
      ASSERT_EQ(table->heads.size(), parsed->entries.size());
      for (std::size_t i = 0; i < parsed->entries.size(); ++i) {
        EXPECT_EQ(table->heads[i].id, parsed->entries[i].id) << i;
        EXPECT_EQ(table->heads[i].offset, parsed->entries[i].offset) << i;
        EXPECT_EQ(table->heads[i].size, parsed->entries[i].size) << i;
        EXPECT_EQ(table->heads[i].is_host, parsed->entries[i].is_host) << i;
      }
    }
  }
}

TEST(StreamExtract, NoPickKeepsNothingAndVerifyStillChecksTheHash) {
  Bytes plain = three_entry_bundle();
  Bytes ccob = testing::write_ccob(plain, 3, CcobMethod::Zstd);
  auto binary = FatBinary::from_memory(ccob);
  ASSERT_TRUE(Succeeds(binary));
  for (EntryPicker pick : {by_id("hipv4-amdgcn-amd-amdhsa--gfx1100"),
                           EntryPicker([](std::span<const BundleEntry>) { return std::optional<std::size_t>(99); })}) {
    auto none = extract_from_compressed_bundle(ccob, binary->bundles()[0], pick);
    ASSERT_TRUE(Succeeds(none));
    EXPECT_FALSE(none->selection.selected.has_value());
    EXPECT_TRUE(none->chosen.empty());
    EXPECT_EQ(none->decoded_bytes, plain.size());
  }
  testing::CcobOptions options;
  options.overrides.hash = testing::ccob_hash(plain) ^ 1;
  Bytes wrong = testing::write_ccob(plain, 3, CcobMethod::Zstd, options);
  auto rebinary = FatBinary::from_memory(wrong);
  ASSERT_TRUE(Succeeds(rebinary));
  EXPECT_TRUE(
      FailsWith(extract_from_compressed_bundle(wrong, rebinary->bundles()[0], by_id("hipv4-amdgcn-amd-amdhsa--gfx90a")),
                ErrorKind::HashMismatch));
}

}  // namespace
}  // namespace coload
