// select_in_compressed_bundle: the streamed selection equals select_entry over
// the whole decompressed bundle (every compressed fixture, several devices),
// Verify checks hash and size, Skip stops early, caps still hold.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "coload/detail/stream_select.h"
#include "coload/fat_binary.h"
#include "stream_select_test_support.h"
#include "support/bundle_writer.h"
#include "support/elf_writer.h"
#include "test_util.h"

namespace coload {
namespace {

using namespace stream_select_test;

constexpr const char* kDevices[] = {"gfx90a", "gfx90a:xnack+", "gfx942", "gfx1030", "gfx1100", "gfx908", "gfx1201"};

// Streams and compares with read_bundle + select_entry, in both modes.
void expect_same(const Device& dev, std::span<const std::byte> source, const BundleInfo& info,
                 const SelectOptions& options, const std::string& label, std::size_t& selected) {
  auto bundle = read_bundle(source, info);
  ASSERT_TRUE(Succeeds(bundle)) << label;
  Selection expected = select_entry(dev, bundle->entries(), options);
  if (expected.selected) ++selected;
  for (Hash mode : {Hash::Verify, Hash::Skip}) {
    auto streamed = select_in_compressed_bundle(dev, source, info, options, {.hash = mode});
    ASSERT_TRUE(Succeeds(streamed)) << label;
    EXPECT_EQ(describe(streamed->selection), describe(expected)) << label;
    EXPECT_FALSE(streamed->decompressed_whole) << label;
    if (const Candidate* chosen = expected.chosen()) {
      Bytes want(bundle->entries()[chosen->entry_index].bytes.begin(),
                 bundle->entries()[chosen->entry_index].bytes.end());
      EXPECT_TRUE(streamed->chosen == want) << label << ": chosen bytes differ";
    } else {
      EXPECT_TRUE(streamed->chosen.empty()) << label;
    }
    // The heads are the table with each entry's ELF header (Skip: as far as
    // it decoded), and selecting on every head (what the registry does for a
    // second device) chooses the same.
    if (mode == Hash::Verify) EXPECT_TRUE(streamed->every_head) << label;
    ASSERT_EQ(streamed->heads.size(), bundle->entries().size()) << label;
    bool every = true;
    for (std::size_t i = 0; i < streamed->heads.size(); ++i) {
      const EntryHead& head = streamed->heads[i];
      const BundleEntry& entry = bundle->entries()[i];
      EXPECT_EQ(head.id, entry.id) << label;
      EXPECT_EQ(head.offset, entry.offset) << label;
      EXPECT_EQ(head.size, entry.size) << label;
      EXPECT_EQ(head.is_host, entry.is_host) << label;
      auto first = entry.bytes.first(std::min<std::size_t>(entry.bytes.size(), 64));
      every = every && head.head.size() == first.size();
      ASSERT_LE(head.head.size(), first.size()) << label << " entry " << i;
      EXPECT_TRUE(std::ranges::equal(head.head, first.first(head.head.size()))) << label << " entry " << i;
    }
    EXPECT_EQ(streamed->every_head, every) << label;
    if (every) {
      EXPECT_EQ(describe(select_entry(dev, head_entries(streamed->heads), options)), describe(expected)) << label;
    }
    if (mode == Hash::Verify) EXPECT_EQ(streamed->decoded_bytes, info.compressed->uncompressed_size) << label;
    if (mode == Hash::Skip) EXPECT_LE(streamed->decoded_bytes, info.compressed->uncompressed_size) << label;
  }
}

TEST(StreamSelect, EqualsWholeBundleSelectionOnEveryCompressedFixture) {
  auto paths = compressed_fixtures();
  ASSERT_GE(paths.size(), 10u);
  std::size_t checked = 0, selected = 0;
  SelectOptions hotswap;
  hotswap.hotswap = true;
  ASSERT_TRUE(Succeeds(hotswap.hotswap_allowlist.add("gfx90a", "gfx942")));
  for (const std::string& path : paths) {
    auto binary = FatBinary::open((kFixtures / path).string());
    ASSERT_TRUE(Succeeds(binary)) << path;
    for (const BundleInfo& info : binary->bundles()) {
      if (info.format != BundleFormat::Compressed) continue;
      for (const char* spec : kDevices) {
        Device dev = device(spec);
        std::string label = path + " bundle " + std::to_string(info.index) + " device " + spec;
        expect_same(dev, binary->source().bytes(), info, {}, label, selected);
        expect_same(dev, binary->source().bytes(), info, hotswap, label + " (hotswap)", selected);
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, 20u);
  EXPECT_GE(selected, checked / 4) << "too few devices found an entry for the comparison to mean much";
  std::printf("compared %zu (bundle, device) pairs, %zu selections made\n", checked, selected);
}

TEST(StreamSelect, EveryVersionAndMethod) {
  Bytes plain = three_entry_bundle();
  auto parsed = parse_plain_bundle(plain);
  ASSERT_TRUE(Succeeds(parsed));
  Bytes want(parsed->entries[2].bytes.begin(), parsed->entries[2].bytes.end());
  for (int version : {1, 2, 3}) {
    for (CcobMethod method : {CcobMethod::Zlib, CcobMethod::Zstd}) {
      Bytes ccob = testing::write_ccob(plain, version, method);
      for (Hash mode : {Hash::Verify, Hash::Skip}) {
        auto result = select_ccob(ccob, "gfx90a", {.hash = mode});
        ASSERT_TRUE(Succeeds(result)) << version;
        ASSERT_EQ(result->selection.selected, std::optional<std::size_t>(2)) << version;
        EXPECT_TRUE(result->chosen == want) << version;
        EXPECT_FALSE(result->decompressed_whole);
      }
    }
  }
}

TEST(StreamSelect, VerifyDetectsWrongHashSkipDoesNot) {
  Bytes plain = three_entry_bundle();
  testing::CcobOptions options;
  options.overrides.hash = testing::ccob_hash(plain) ^ 1;
  Bytes ccob = testing::write_ccob(plain, 3, CcobMethod::Zstd, options);
  EXPECT_TRUE(FailsWith(select_ccob(ccob, "gfx90a"), ErrorKind::HashMismatch));
  EXPECT_TRUE(Succeeds(select_ccob(ccob, "gfx90a", {.hash = Hash::Skip})));
}

TEST(StreamSelect, VerifyDetectsWrongSize) {
  Bytes plain = three_entry_bundle();
  for (std::int64_t delta : {-1, 1}) {
    testing::CcobOptions options;
    options.overrides.uncompressed_size = plain.size() + delta;
    Bytes ccob = testing::write_ccob(plain, 3, CcobMethod::Zstd, options);
    EXPECT_TRUE(FailsWith(select_ccob(ccob, "gfx90a"), ErrorKind::SizeMismatch)) << delta;
  }
}

TEST(StreamSelect, SkipStopsEarly) {
  for (std::size_t scale : {std::size_t{1}, kLarge}) {
    Bytes plain = three_entry_bundle(scale);
    for (CcobMethod method : {CcobMethod::Zlib, CcobMethod::Zstd}) {
      Bytes ccob = testing::write_ccob(plain, 3, method);
      auto skip = select_ccob(ccob, "gfx90a", {.hash = Hash::Skip});
      auto verify = select_ccob(ccob, "gfx90a");
      ASSERT_TRUE(Succeeds(skip));
      ASSERT_TRUE(Succeeds(verify));
      EXPECT_EQ(verify->decoded_bytes, plain.size());
      // gfx942 comes last: Skip needs its ELF header, not its 400000 * scale
      // bytes (give or take one 128 KiB decoder chunk).
      EXPECT_LT(skip->decoded_bytes, plain.size() - 200000 * scale) << scale;
      EXPECT_EQ(describe(skip->selection), describe(verify->selection)) << scale;
    }
  }
}

// Entries whose IDs rule them out need none of their bytes: for gfx1030 the
// stream stops after the first entry, for gfx90a after the second (gfx942
// is unrelated to it), and only an unrelated entry's head is left out.
void expect_skip_stops_after_open_entries(std::size_t scale) {
  Bytes plain = three_entry_bundle(scale);
  auto parsed = parse_plain_bundle(plain);
  ASSERT_TRUE(Succeeds(parsed));
  const std::vector<BundleEntry>& entries = parsed->entries;
  for (CcobMethod method : {CcobMethod::Zlib, CcobMethod::Zstd}) {
    Bytes ccob = testing::write_ccob(plain, 3, method);
    for (auto [device_spec, chosen] : {std::pair{"gfx1030", 1}, std::pair{"gfx90a", 2}}) {
      std::string spec = std::string(device_spec) + " at scale " + std::to_string(scale);
      auto skip = select_ccob(ccob, device_spec, {.hash = Hash::Skip});
      auto verify = select_ccob(ccob, device_spec);
      ASSERT_TRUE(Succeeds(skip));
      ASSERT_TRUE(Succeeds(verify));
      EXPECT_EQ(describe(skip->selection), describe(verify->selection)) << spec;
      ASSERT_EQ(skip->selection.selected, std::optional<std::size_t>(chosen)) << spec;
      Bytes want(entries[chosen].bytes.begin(), entries[chosen].bytes.end());
      EXPECT_TRUE(skip->chosen == want) << spec;
      // Decoding ends within a decoder chunk (128 KiB) of the chosen entry's end.
      std::uint64_t chosen_end = entries[chosen].offset + entries[chosen].size;
      EXPECT_GE(skip->decoded_bytes, chosen_end) << spec;
      EXPECT_LT(skip->decoded_bytes, chosen_end + (128u << 10) + 1) << spec;
      EXPECT_FALSE(skip->every_head) << spec;
      EXPECT_TRUE(skip->heads.back().head.empty()) << spec;  // gfx942's, never decoded
      EXPECT_TRUE(verify->every_head) << spec;
      EXPECT_EQ(verify->heads.back().head.size(), 64u) << spec;
    }
  }
}

TEST(StreamSelect, SkipStopsAfterTheLastEntryItsIdsLeaveOpen) {
  expect_skip_stops_after_open_entries(1);
  expect_skip_stops_after_open_entries(kLarge);
}

// Without the chosen bytes (StreamOptions::keep_chosen false), the choice is
// final once every entry is judged: Skip stops after the chosen entry's ELF
// header instead of its end, and keeps nothing. Verify still decodes it all.
TEST(StreamSelect, WithoutTheChosenBytesSkipStopsAtTheLastHeadItNeeds) {
  for (std::size_t scale : {std::size_t{1}, kLarge}) {
    Bytes plain = three_entry_bundle(scale);
    auto parsed = parse_plain_bundle(plain);
    ASSERT_TRUE(Succeeds(parsed));
    for (CcobMethod method : {CcobMethod::Zlib, CcobMethod::Zstd}) {
      Bytes ccob = testing::write_ccob(plain, 3, method);
      for (auto [device_spec, chosen] : {std::pair{"gfx1030", 1}, std::pair{"gfx90a", 2}}) {
        std::string label = std::string(device_spec) + " at scale " + std::to_string(scale);
        auto kept = select_ccob(ccob, device_spec, {.hash = Hash::Skip});
        auto bare = select_ccob(ccob, device_spec, {.hash = Hash::Skip, .keep_chosen = false});
        ASSERT_TRUE(Succeeds(kept)) << label;
        ASSERT_TRUE(Succeeds(bare)) << label;
        EXPECT_EQ(describe(bare->selection), describe(kept->selection)) << label;
        ASSERT_EQ(bare->selection.selected, std::optional<std::size_t>(chosen)) << label;
        EXPECT_TRUE(bare->chosen.empty()) << label;
        std::uint64_t head_end = parsed->entries[chosen].offset + 64;
        EXPECT_GE(bare->decoded_bytes, head_end) << label;
        EXPECT_LT(bare->decoded_bytes, head_end + (128u << 10) + 1) << label;
        EXPECT_LT(bare->decoded_bytes, kept->decoded_bytes) << label;

        auto verify = select_ccob(ccob, device_spec, {.keep_chosen = false});
        ASSERT_TRUE(Succeeds(verify)) << label;
        EXPECT_EQ(describe(verify->selection), describe(kept->selection)) << label;
        EXPECT_TRUE(verify->chosen.empty()) << label;
        EXPECT_EQ(verify->hash, StreamSelection::Hash::Checked) << label;
        EXPECT_EQ(verify->decoded_bytes, plain.size()) << label;
      }
    }
  }
}

// Two zstd frames: the bundle up to just past the last entry's ELF header,
// then the rest, corrupted. Skip decides before the second frame; Verify fails.
TEST(StreamSelect, SkipIgnoresCorruptTailVerifyRejectsIt) {
  Bytes plain = three_entry_bundle();
  auto parsed = parse_plain_bundle(plain);
  ASSERT_TRUE(Succeeds(parsed));
  std::size_t split = parsed->entries[3].offset + 64;
  Bytes first = testing::compress(std::span(plain).first(split), CcobMethod::Zstd);
  Bytes second = testing::compress(std::span(plain).subspan(split), CcobMethod::Zstd);
  for (std::size_t i = second.size() / 2; i < second.size(); ++i) second[i] = std::byte{0xff};
  testing::CcobOptions options;
  options.payload = first;
  options.payload->insert(options.payload->end(), second.begin(), second.end());
  Bytes ccob = testing::write_ccob(plain, 3, CcobMethod::Zstd, options);
  auto skip = select_ccob(ccob, "gfx90a", {.hash = Hash::Skip});
  ASSERT_TRUE(Succeeds(skip));
  EXPECT_EQ(skip->selection.selected, std::optional<std::size_t>(2));
  auto verify = select_ccob(ccob, "gfx90a");
  ASSERT_FALSE(verify.has_value());
  EXPECT_TRUE(verify.error().kind() == ErrorKind::CorruptData || verify.error().kind() == ErrorKind::HashMismatch ||
              verify.error().kind() == ErrorKind::SizeMismatch)
      << verify.error().message();
}

TEST(StreamSelect, DecompressionBombIsCapped) {
  Bytes plain = three_entry_bundle();
  Bytes ccob = testing::write_ccob(plain, 3, CcobMethod::Zstd);
  auto binary = FatBinary::from_memory(ccob);
  ASSERT_TRUE(Succeeds(binary));
  StreamOptions capped{.hash = Hash::Skip, .read = {.max_decompressed_bytes = 100000}};
  EXPECT_TRUE(FailsWith(select_in_compressed_bundle(device("gfx90a"), ccob, binary->bundles()[0], {}, capped),
                        ErrorKind::LimitExceeded));
  // A header that understates the size: the stream must not run past it.
  testing::CcobOptions options;
  options.overrides.uncompressed_size = 4096;
  Bytes lying = testing::write_ccob(plain, 3, CcobMethod::Zstd, options);
  for (Hash mode : {Hash::Verify, Hash::Skip}) {
    EXPECT_TRUE(FailsWith(select_ccob(lying, "gfx90a", {.hash = mode}), ErrorKind::SizeMismatch));
  }
}

// A frame declaring a window past libzstd's limit (2^27), as `zstd --long=28`
// writes from a pipe: the stream reads it as read_bundle does, small or large.
TEST(StreamSelect, AFrameWindowPastTheDecodersLimitIsReadAsReadBundleReadsIt) {
  for (std::size_t scale : {std::size_t{1}, kLarge}) {
    Bytes plain = three_entry_bundle(scale);
    auto parsed = parse_plain_bundle(plain);
    ASSERT_TRUE(Succeeds(parsed));
    Bytes want(parsed->entries[2].bytes.begin(), parsed->entries[2].bytes.end());
    testing::CcobOptions options;
    options.payload = testing::compress_zstd(plain, {.content_size = false, .declared_window_log = 28});
    Bytes ccob = testing::write_ccob(plain, 3, CcobMethod::Zstd, options);
    auto binary = FatBinary::from_memory(ccob);
    ASSERT_TRUE(Succeeds(binary));
    auto whole = binary->read(0);
    ASSERT_TRUE(Succeeds(whole)) << scale;
    EXPECT_TRUE(std::ranges::equal(whole->uncompressed(), plain)) << scale;
    for (Hash mode : {Hash::Verify, Hash::Skip}) {
      auto result = select_ccob(ccob, "gfx90a", {.hash = mode});
      ASSERT_TRUE(Succeeds(result)) << scale;
      ASSERT_EQ(result->selection.selected, std::optional<std::size_t>(2)) << scale;
      EXPECT_TRUE(result->chosen == want) << scale;
    }
  }
}

// Entries not in ascending offset order: streamed selection falls back to the
// whole bundle, with the same result.
TEST(StreamSelect, OutOfOrderTableFallsBackToWholeBundle) {
  Bytes a;
  Bytes ccob = out_of_order_ccob(a);
  for (Hash mode : {Hash::Verify, Hash::Skip}) {
    auto result = select_ccob(ccob, "gfx90a", {.hash = mode});
    ASSERT_TRUE(Succeeds(result));
    EXPECT_TRUE(result->decompressed_whole);
    EXPECT_EQ(result->hash, StreamSelection::Hash::Checked);  // read_bundle checks in either mode
    EXPECT_EQ(result->selection.selected, std::optional<std::size_t>(0));
    EXPECT_TRUE(result->chosen == a);
    auto bare = select_ccob(ccob, "gfx90a", {.hash = mode, .keep_chosen = false});
    ASSERT_TRUE(Succeeds(bare));
    EXPECT_EQ(bare->selection.selected, std::optional<std::size_t>(0));
    EXPECT_TRUE(bare->chosen.empty());
  }
}

TEST(StreamSelect, NothingFitsKeepsNothing) {
  Bytes ccob = testing::write_ccob(three_entry_bundle(), 2, CcobMethod::Zlib);
  auto result = select_ccob(ccob, "gfx1100");
  ASSERT_TRUE(Succeeds(result));
  EXPECT_FALSE(result->selection.selected);
  EXPECT_TRUE(result->chosen.empty());
  EXPECT_EQ(result->selection.candidates.size(), 4u);
}

TEST(StreamSelect, CorruptTableIsReadBundlesError) {
  Bytes plain = three_entry_bundle();
  plain[0] = std::byte{'X'};  // bad magic inside the stream
  Bytes ccob = testing::write_ccob(plain, 3, CcobMethod::Zstd);
  auto binary = FatBinary::from_memory(ccob);
  ASSERT_TRUE(Succeeds(binary));
  auto whole = read_bundle(ccob, binary->bundles()[0]);
  ASSERT_FALSE(whole.has_value());
  auto streamed = select_ccob(ccob, "gfx90a");
  ASSERT_FALSE(streamed.has_value());
  EXPECT_EQ(streamed.error().kind(), whole.error().kind());
  EXPECT_EQ(streamed.error().message(), whole.error().message());
}

// A table of ten million records compresses to a few kilobytes: refused from
// its count, on the stream as on the whole bundle.
TEST(StreamSelect, ATableListingTooManyEntriesIsReadBundlesError) {
  testing::RawBundle raw;
  raw.entries.assign(kMaxBundleEntries + 1, testing::raw_entry("hipv4-amdgcn-amd-amdhsa--gfx90a", 0, 0));
  Bytes ccob = testing::write_ccob(testing::write_raw_bundle_header(raw), 3, CcobMethod::Zstd);
  auto binary = FatBinary::from_memory(ccob);
  ASSERT_TRUE(Succeeds(binary));
  auto whole = read_bundle(ccob, binary->bundles()[0]);
  ASSERT_TRUE(FailsWith(whole, ErrorKind::LimitExceeded));
  EXPECT_EQ(whole.error().location().field, "num_entries") << whole.error().message();
  EXPECT_EQ(whole.error().location().offset, std::optional<std::uint64_t>(0x18));
  EXPECT_EQ(whole.error().location().value, std::optional<std::uint64_t>(kMaxBundleEntries + 1));
  for (Hash mode : {Hash::Verify, Hash::Skip}) {
    auto streamed = select_ccob(ccob, "gfx90a", {.hash = mode});
    ASSERT_FALSE(streamed.has_value());
    EXPECT_EQ(streamed.error().message(), whole.error().message());
  }
}

}  // namespace
}  // namespace coload
