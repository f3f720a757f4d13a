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

#include "coload/fat_binary.h"
#include "coload/stream_select.h"
#include "support/bundle_writer.h"
#include "support/elf_writer.h"
#include "test_util.h"

namespace coload {
namespace {

using testing::Bytes;
using testing::CcobMethod;
using testing::describe;
using testing::device;
using testing::entry_bytes;
using testing::FailsWith;
using testing::Succeeds;
using Hash = StreamOptions::HashCheck;

const std::filesystem::path kFixtures = COLOAD_FIXTURE_DIR;
constexpr std::uint32_t kGfx90a = 0x3f, kGfx942 = 0x4c, kGfx1030 = 0x36;
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

std::vector<std::string> compressed_fixtures() {
  std::ifstream table(kFixtures / "bundles.tsv");
  std::vector<std::string> paths;
  for (std::string line; std::getline(table, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string path, index, file, format;
    fields >> path >> index >> file >> format;
    if (format.starts_with("ccob") && std::find(paths.begin(), paths.end(), path) == paths.end()) {
      paths.push_back(path);
    }
  }
  return paths;
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

// A bundle of real-looking entries: gfx1030, gfx90a (large), gfx942, each an
// ELF header followed by filler.

// kLarge makes it 4.8 MB: past 2 MiB, libzstd's window gives way to decoding
// in place (bundle/decompress.cpp), so both ways are covered.
constexpr std::size_t kLarge = 4;

Bytes three_entry_bundle(std::size_t scale = 1) {
  constexpr std::uint32_t kAny = testing::kXnackAny | testing::kSrameccAny;
  return testing::write_plain_bundle({
      {"host-x86_64-unknown-linux-gnu", {}},
      {"hipv4-amdgcn-amd-amdhsa--gfx1030", entry_bytes(kGfx1030, 300000 * scale, 1)},
      {"hipv4-amdgcn-amd-amdhsa--gfx90a", entry_bytes(kGfx90a | kAny, 500000 * scale, 2)},
      {"hipv4-amdgcn-amd-amdhsa--gfx942", entry_bytes(kGfx942 | kAny, 400000 * scale, 3)},
  });
}

Expected<StreamSelection> select_ccob(const Bytes& ccob, std::string_view spec, StreamOptions stream = {}) {
  auto binary = FatBinary::from_memory(ccob);
  if (!binary) return std::move(binary).error();
  return select_in_compressed_bundle(device(spec), ccob, binary->bundles()[0], {}, stream);
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

// A CCOB whose entries are not in ascending offset order: the gfx90a entry
// (returned in `gfx90a`) comes after the gfx942 one.
Bytes out_of_order_ccob(Bytes& gfx90a) {
  gfx90a = entry_bytes(kGfx90a | testing::kXnackAny | testing::kSrameccAny, 1000, 4);
  Bytes b = entry_bytes(kGfx942 | testing::kXnackAny | testing::kSrameccAny, 1000, 5);
  testing::RawBundle raw;
  raw.entries = {testing::raw_entry("hipv4-amdgcn-amd-amdhsa--gfx90a", 0x2000, gfx90a.size()),
                 testing::raw_entry("hipv4-amdgcn-amd-amdhsa--gfx942", 0x1000, b.size())};
  Bytes plain = testing::write_raw_bundle_header(raw);
  testing::place(plain, 0x2000, gfx90a);
  testing::place(plain, 0x1000, b);
  return testing::write_ccob(plain, 3, CcobMethod::Zstd);
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
  EXPECT_NE(whole.error().message().find("num_entries 0x1001 at offset 0x18"), std::string::npos)
      << whole.error().message();
  for (Hash mode : {Hash::Verify, Hash::Skip}) {
    auto streamed = select_ccob(ccob, "gfx90a", {.hash = mode});
    ASSERT_FALSE(streamed.has_value());
    EXPECT_EQ(streamed.error().message(), whole.error().message());
  }
}

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
  EXPECT_TRUE(FailsWith(extract_from_compressed_bundle(wrong, rebinary->bundles()[0],
                                                       by_id("hipv4-amdgcn-amd-amdhsa--gfx90a")),
                        ErrorKind::HashMismatch));
}

}  // namespace
}  // namespace coload
