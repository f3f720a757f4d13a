// Verified marks under streamed selection (ReadOptions::verified_cache): a
// CCOB checked once in Verify mode is decoded as in Skip mode afterwards, only
// the exact bytes checked are trusted, and nothing else is ever marked.
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

// Verified marks (ReadOptions::verified_cache): a CCOB Verify mode checked
// once is decoded as in Skip mode afterwards; nothing else is ever marked.

using testing::file_names;

TEST(StreamSelectMarks, ACheckedCcobIsMarkedAndTheNextVerifyStopsEarly) {
  Bytes plain = three_entry_bundle();
  auto parsed = parse_plain_bundle(plain);
  ASSERT_TRUE(Succeeds(parsed));
  Bytes want(parsed->entries[2].bytes.begin(), parsed->entries[2].bytes.end());
  for (int version : {1, 2, 3}) {
    for (CcobMethod method : {CcobMethod::Zlib, CcobMethod::Zstd}) {
      testing::ScratchDirectory cache;
      StreamOptions marked{.read = {.verified_cache = (cache.path() / "verified").string()}};
      Bytes ccob = testing::write_ccob(plain, version, method);
      auto first = select_ccob(ccob, "gfx90a", marked);
      ASSERT_TRUE(Succeeds(first)) << version;
      EXPECT_EQ(first->hash, StreamSelection::Hash::Checked);
      EXPECT_EQ(first->decoded_bytes, plain.size());
      std::vector<std::string> names = file_names(cache.path() / "verified");
      ASSERT_EQ(names.size(), 1u) << version;
      EXPECT_EQ(names[0].size(), 32u);  // 128 bits in hex, nothing left over from the write
      EXPECT_EQ(names[0].find_first_not_of("0123456789abcdef"), std::string::npos) << names[0];

      auto second = select_ccob(ccob, "gfx90a", marked);
      ASSERT_TRUE(Succeeds(second)) << version;
      EXPECT_EQ(second->hash, StreamSelection::Hash::CheckedEarlier);
      EXPECT_LT(second->decoded_bytes, plain.size() - 200000) << version;  // gfx942's 400000 bytes not decoded
      EXPECT_EQ(describe(second->selection), describe(first->selection));
      EXPECT_TRUE(second->chosen == want);
      EXPECT_FALSE(second->every_head);  // as in Skip mode: gfx942's head never decoded
    }
  }
}

TEST(StreamSelectMarks, SkipAndPlainBundlesNeitherReadNorWriteMarks) {
  testing::ScratchDirectory cache;
  Bytes plain = three_entry_bundle();
  Bytes ccob = testing::write_ccob(plain, 3, CcobMethod::Zstd);
  auto skip = select_ccob(ccob, "gfx90a", {.hash = Hash::Skip, .read = {.verified_cache = cache.str()}});
  ASSERT_TRUE(Succeeds(skip));
  EXPECT_EQ(skip->hash, StreamSelection::Hash::NotChecked);
  auto whole = select_ccob(plain, "gfx90a", {.read = {.verified_cache = cache.str()}});
  ASSERT_TRUE(Succeeds(whole));
  EXPECT_EQ(whole->hash, StreamSelection::Hash::NotChecked);
  EXPECT_TRUE(file_names(cache.path()).empty());
  auto unmarked = select_ccob(ccob, "gfx90a");
  ASSERT_TRUE(Succeeds(unmarked));
  EXPECT_EQ(unmarked->hash, StreamSelection::Hash::Checked);
}

// The whole-bundle fallback reports and keeps marks as the stream does:
// Verify marks once and trusts the mark after; Skip neither reads nor
// writes one (and read_bundle checks the hash).
TEST(StreamSelectMarks, TheWholeBundleFallbackKeepsMarksAsTheStreamDoes) {
  testing::ScratchDirectory cache;
  Bytes a;
  Bytes ccob = out_of_order_ccob(a);
  auto skip = select_ccob(ccob, "gfx90a", {.hash = Hash::Skip, .read = {.verified_cache = cache.str()}});
  ASSERT_TRUE(Succeeds(skip));
  EXPECT_TRUE(skip->decompressed_whole);
  EXPECT_EQ(skip->hash, StreamSelection::Hash::Checked);
  EXPECT_TRUE(file_names(cache.path()).empty());
  for (StreamSelection::Hash want : {StreamSelection::Hash::Checked, StreamSelection::Hash::CheckedEarlier}) {
    auto verify = select_ccob(ccob, "gfx90a", {.read = {.verified_cache = cache.str()}});
    ASSERT_TRUE(Succeeds(verify));
    EXPECT_TRUE(verify->decompressed_whole);
    EXPECT_EQ(verify->hash, want);
    EXPECT_TRUE(verify->chosen == a);
    EXPECT_EQ(file_names(cache.path()).size(), 1u);
  }
  auto skip_again = select_ccob(ccob, "gfx90a", {.hash = Hash::Skip, .read = {.verified_cache = cache.str()}});
  ASSERT_TRUE(Succeeds(skip_again));
  EXPECT_EQ(skip_again->hash, StreamSelection::Hash::Checked);
}

// A failed check leaves no mark, and a mark covers only the bytes it was made
// for: the same bundle with a corrupt tail (which Skip mode would not notice)
// is checked in full and refused.
TEST(StreamSelectMarks, OnlyTheExactBytesCheckedAreTrusted) {
  testing::ScratchDirectory cache;
  StreamOptions marked{.read = {.verified_cache = cache.str()}};
  Bytes plain = three_entry_bundle();

  testing::CcobOptions wrong_hash;
  wrong_hash.overrides.hash = testing::ccob_hash(plain) ^ 1;
  Bytes refused = testing::write_ccob(plain, 3, CcobMethod::Zstd, wrong_hash);
  EXPECT_TRUE(FailsWith(select_ccob(refused, "gfx90a", marked), ErrorKind::HashMismatch));
  EXPECT_TRUE(file_names(cache.path()).empty());
  EXPECT_TRUE(FailsWith(select_ccob(refused, "gfx90a", marked), ErrorKind::HashMismatch));

  // Two zstd frames, split just past the last entry's ELF header.
  auto parsed = parse_plain_bundle(plain);
  ASSERT_TRUE(Succeeds(parsed));
  std::size_t split = parsed->entries[3].offset + 64;
  Bytes first = testing::compress(std::span(plain).first(split), CcobMethod::Zstd);
  Bytes second = testing::compress(std::span(plain).subspan(split), CcobMethod::Zstd);
  testing::CcobOptions options;
  options.payload = first;
  options.payload->insert(options.payload->end(), second.begin(), second.end());
  Bytes intact = testing::write_ccob(plain, 3, CcobMethod::Zstd, options);
  ASSERT_TRUE(Succeeds(select_ccob(intact, "gfx90a", marked)));
  ASSERT_EQ(file_names(cache.path()).size(), 1u);
  auto again = select_ccob(intact, "gfx90a", marked);
  ASSERT_TRUE(Succeeds(again));
  EXPECT_EQ(again->hash, StreamSelection::Hash::CheckedEarlier);

  Bytes corrupt = intact;
  for (std::size_t i = corrupt.size() - second.size() / 2; i < corrupt.size(); ++i) corrupt[i] = std::byte{0xff};
  ASSERT_TRUE(Succeeds(select_ccob(corrupt, "gfx90a", {.hash = Hash::Skip})));
  auto checked = select_ccob(corrupt, "gfx90a", marked);
  ASSERT_FALSE(checked.has_value());
  EXPECT_TRUE(checked.error().kind() == ErrorKind::CorruptData || checked.error().kind() == ErrorKind::HashMismatch ||
              checked.error().kind() == ErrorKind::SizeMismatch)
      << checked.error().message();
  EXPECT_EQ(file_names(cache.path()).size(), 1u);
}

// A mark whose contents are not what this library writes (another tool's
// file, a write cut short by a crash) is a miss, and is written again.
TEST(StreamSelectMarks, AMarkWithOtherContentsIsAMiss) {
  testing::ScratchDirectory cache;
  StreamOptions marked{.read = {.verified_cache = cache.str()}};
  Bytes ccob = testing::write_ccob(three_entry_bundle(), 3, CcobMethod::Zlib);
  ASSERT_TRUE(Succeeds(select_ccob(ccob, "gfx90a", marked)));
  std::vector<std::string> names = file_names(cache.path());
  ASSERT_EQ(names.size(), 1u);
  for (std::string contents : {std::string(), std::string("coload verified\n")}) {
    std::ofstream(cache.path() / names[0], std::ios::trunc) << contents;
    auto missed = select_ccob(ccob, "gfx90a", marked);
    ASSERT_TRUE(Succeeds(missed));
    EXPECT_EQ(missed->hash, StreamSelection::Hash::Checked) << contents;
    auto rewritten = select_ccob(ccob, "gfx90a", marked);
    ASSERT_TRUE(Succeeds(rewritten));
    EXPECT_EQ(rewritten->hash, StreamSelection::Hash::CheckedEarlier) << contents;
  }
}

// Threads (or processes) checking one CCOB at once each write the mark under
// their own temporary name: one mark results, nothing else is left behind.
TEST(StreamSelectMarks, ConcurrentChecksLeaveOneMark) {
  testing::ScratchDirectory cache;
  StreamOptions marked{.read = {.verified_cache = (cache.path() / "a" / "b").string()}};
  Bytes ccob = testing::write_ccob(three_entry_bundle(), 3, CcobMethod::Zstd);
  auto binary = FatBinary::from_memory(ccob);
  ASSERT_TRUE(Succeeds(binary));
  const Device gfx90a = device("gfx90a");
  constexpr int kThreads = 8;
  std::vector<std::optional<std::size_t>> chosen(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto result = select_in_compressed_bundle(gfx90a, ccob, binary->bundles()[0], {}, marked);
      if (result) chosen[t] = result->selection.selected;
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(chosen[t], std::optional<std::size_t>(2)) << t;
  std::vector<std::string> names = file_names(cache.path() / "a" / "b");
  ASSERT_EQ(names.size(), 1u) << names.size() << " files, first " << names.front();
  EXPECT_EQ(names[0].size(), 32u) << names[0];
}

// A cache directory that cannot be made costs a full check, never an error.
TEST(StreamSelectMarks, AnUnusableDirectoryIsNoError) {
  testing::ScratchDirectory scratch;
  std::ofstream(scratch.path() / "file") << "not a directory";
  StreamOptions marked{.read = {.verified_cache = (scratch.path() / "file" / "verified").string()}};
  Bytes ccob = testing::write_ccob(three_entry_bundle(), 3, CcobMethod::Zstd);
  for (int run = 0; run < 2; ++run) {
    auto result = select_ccob(ccob, "gfx90a", marked);
    ASSERT_TRUE(Succeeds(result)) << run;
    EXPECT_EQ(result->hash, StreamSelection::Hash::Checked) << run;
    EXPECT_EQ(result->selection.selected, std::optional<std::size_t>(2));
  }
}

}  // namespace
}  // namespace coload
