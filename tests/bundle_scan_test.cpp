#include <gtest/gtest.h>

#include "coload/bundle.h"
#include "coload/fat_binary.h"
#include "common/bytes.h"
#include "support/bundle_writer.h"
#include "test_util.h"

namespace coload {
namespace {

using testing::Bytes;
using testing::CcobMethod;
using testing::FailsWith;
using testing::Succeeds;

Bytes code(std::size_t size, std::uint8_t seed) {
  Bytes bytes(size);
  for (std::size_t i = 0; i < size; ++i) bytes[i] = std::byte(static_cast<std::uint8_t>(seed ^ (i * 31)));
  auto magic = testing::to_bytes("CCOB__CLANG_OFFLOAD_BUNDLE__");  // must never be searched for
  std::copy(magic.begin(), magic.end(), bytes.begin() + size / 2);
  return bytes;
}

Bytes bundle_for(const std::string& processor, std::uint8_t seed) {
  return testing::write_plain_bundle(
      {{"host-x86_64-unknown-linux-gnu-", {}}, {"hipv4-amdgcn-amd-amdhsa--" + processor, code(3000 + seed, seed)}});
}

SourceLayout whole(const Bytes& bytes) {
  SourceLayout layout;
  layout.region_size = bytes.size();
  return layout;
}

TEST(ScanBundles, WalksMixedBundlesByDeclaredSizeSkippingPadding) {
  Bytes region;
  std::vector<std::uint64_t> starts;
  starts.push_back(testing::append_aligned(region, bundle_for("gfx90a", 1), 4096));
  starts.push_back(
      testing::append_aligned(region, testing::write_ccob(bundle_for("gfx942", 2), 3, CcobMethod::Zstd), 4096));
  starts.push_back(
      testing::append_aligned(region, testing::write_ccob(bundle_for("gfx1030", 3), 2, CcobMethod::Zlib), 16));
  starts.push_back(
      testing::append_aligned(region, testing::write_ccob(bundle_for("gfx1100", 4), 1, CcobMethod::Zstd), 4096));
  starts.push_back(testing::append_aligned(region, bundle_for("gfx1200", 5), 4096));
  testing::pad_to(region, 4096);

  auto bundles = scan_bundles(region, whole(region));
  ASSERT_TRUE(Succeeds(bundles));
  ASSERT_EQ(bundles->size(), 5u);
  const std::string processors[] = {"gfx90a", "gfx942", "gfx1030", "gfx1100", "gfx1200"};
  const BundleFormat formats[] = {BundleFormat::Plain, BundleFormat::Compressed, BundleFormat::Compressed,
                                  BundleFormat::Compressed, BundleFormat::Plain};
  for (std::size_t i = 0; i < 5; ++i) {
    const BundleInfo& info = (*bundles)[i];
    EXPECT_EQ(info.index, i);
    EXPECT_EQ(info.offset, starts[i]);
    EXPECT_EQ(info.format, formats[i]);
    auto bundle = read_bundle(region, info);
    ASSERT_TRUE(Succeeds(bundle)) << i;
    ASSERT_EQ(bundle->entries().size(), 2u);
    EXPECT_EQ(bundle->entries()[1].id, "hipv4-amdgcn-amd-amdhsa--" + processors[i]);
    EXPECT_EQ(Bytes(bundle->entries()[1].bytes.begin(), bundle->entries()[1].bytes.end()),
              code(3000 + i + 1, static_cast<std::uint8_t>(i + 1)));
  }
  EXPECT_EQ((*bundles)[1].compressed->version, 3);
  EXPECT_EQ((*bundles)[2].compressed->method, Compression::Zlib);
  EXPECT_FALSE((*bundles)[3].compressed->total_size.has_value());
}

TEST(ScanBundles, ConcatenatedCompressedBundlesWithoutPadding) {
  Bytes region = testing::write_ccob(bundle_for("gfx90a", 1), 3, CcobMethod::Zstd);
  testing::append(region, testing::write_ccob(bundle_for("gfx942", 2), 2, CcobMethod::Zstd));
  auto bundles = scan_bundles(region, whole(region));
  ASSERT_TRUE(Succeeds(bundles));
  EXPECT_EQ(bundles->size(), 2u);
}

TEST(ScanBundles, CompressedBundleFollowedByPaddingOnly) {
  Bytes region = testing::write_ccob(bundle_for("gfx90a", 1), 3, CcobMethod::Zstd);
  testing::pad_to(region, 4096);
  auto bundles = scan_bundles(region, whole(region));
  ASSERT_TRUE(Succeeds(bundles));
  ASSERT_EQ(bundles->size(), 1u);
  EXPECT_TRUE(Succeeds(read_bundle(region, (*bundles)[0])));
}

TEST(ScanBundles, GarbageBetweenBundlesIsBadMagicNamingTheOffset) {
  Bytes region = bundle_for("gfx90a", 1);
  std::uint64_t garbage_at = region.size();
  testing::append(region, testing::to_bytes("garbage!"));
  auto bundles = scan_bundles(region, whole(region));
  ASSERT_TRUE(FailsWith(bundles, ErrorKind::BadMagic));
  EXPECT_EQ(bundles.error().location().bundle, std::optional<std::size_t>(1));
  EXPECT_EQ(bundles.error().location().bundle_offset, std::optional<std::uint64_t>(garbage_at));
  EXPECT_EQ(bundles.error().location().field, "magic");
  EXPECT_EQ(bundles.error().location().offset, std::optional<std::uint64_t>(0));
}

// The walk jumps by total_size: a short one lands inside the CCOB's own
// payload, and the error says which size led there.
TEST(ScanBundles, AShortTotalSizeIsNamedWhereTheWalkLands) {
  Bytes real = testing::write_ccob(bundle_for("gfx90a", 1), 3, CcobMethod::Zstd);
  testing::CcobOptions options;
  options.overrides.total_size = real.size() - 10;
  Bytes region = testing::write_ccob(bundle_for("gfx90a", 1), 3, CcobMethod::Zstd, options);
  auto bundles = scan_bundles(region, whole(region));
  ASSERT_TRUE(FailsWith(bundles, ErrorKind::BadMagic));
  const ErrorLocation& at = bundles.error().location();
  EXPECT_EQ(at.bundle, std::optional<std::size_t>(1));
  EXPECT_EQ(at.bundle_offset, std::optional<std::uint64_t>(real.size() - 10));
  EXPECT_EQ(at.bundle_view, " (after bundle 0, whose total_size " + detail::hex(real.size() - 10) + " ends there)");
}

TEST(ScanBundles, AllZeroRegionHoldsNoBundle) {
  Bytes region(8192);
  auto bundles = scan_bundles(region, whole(region));
  ASSERT_TRUE(FailsWith(bundles, ErrorKind::NotFound));
  EXPECT_EQ(bundles.error().location().field, "bundle region");
  EXPECT_EQ(bundles.error().location().offset, std::optional<std::uint64_t>(0));
  EXPECT_EQ(bundles.error().location().value, std::optional<std::uint64_t>(8192));
}

TEST(ScanBundles, WrapperOffsetsAreUsedInsteadOfWalking) {
  Bytes region;
  std::uint64_t first = testing::append_aligned(region, bundle_for("gfx90a", 1), 4096);
  std::uint64_t second =
      testing::append_aligned(region, testing::write_ccob(bundle_for("gfx942", 2), 3, CcobMethod::Zstd), 4096);
  testing::append(region, testing::to_bytes("trailing bytes no wrapper points at"));
  SourceLayout layout = whole(region);
  layout.wrapper_offsets = {first, second};
  auto bundles = scan_bundles(region, layout);
  ASSERT_TRUE(Succeeds(bundles));
  ASSERT_EQ(bundles->size(), 2u);
  EXPECT_EQ((*bundles)[1].offset, second);

  layout.wrapper_offsets = {first, first + 64};
  auto inside = scan_bundles(region, layout);
  ASSERT_TRUE(FailsWith(inside, ErrorKind::Malformed));
  EXPECT_EQ(inside.error().location().bundle, std::optional<std::size_t>(1));
  EXPECT_EQ(inside.error().location().field, "wrapper pointer");
  EXPECT_EQ(inside.error().location().value, std::optional<std::uint64_t>(first + 64));
  EXPECT_EQ(inside.error().location().limit, std::optional<std::uint64_t>(first + (*bundles)[0].size));
  layout.wrapper_offsets = {region.size() + 10};
  auto outside = scan_bundles(region, layout);
  ASSERT_TRUE(FailsWith(outside, ErrorKind::OutOfBounds));
  EXPECT_EQ(outside.error().location().field, "wrapper pointer");
  EXPECT_EQ(outside.error().location().value, std::optional<std::uint64_t>(region.size() + 10));
  EXPECT_EQ(outside.error().location().limit, std::optional<std::uint64_t>(region.size()));
}

TEST(ScanBundles, RegionOutsideTheSourceIsOutOfBounds) {
  Bytes region = bundle_for("gfx90a", 1);
  SourceLayout layout = whole(region);
  layout.region_offset = 16;
  auto bundles = scan_bundles(region, layout);
  ASSERT_TRUE(FailsWith(bundles, ErrorKind::OutOfBounds));
  EXPECT_EQ(bundles.error().location().field, "bundle region");
  EXPECT_EQ(bundles.error().location().offset, std::optional<std::uint64_t>(16));
  EXPECT_EQ(bundles.error().location().value, std::optional<std::uint64_t>(region.size()));
  EXPECT_EQ(bundles.error().location().limit, std::optional<std::uint64_t>(region.size()));
}

// v1 bundles of `plains` (zstd and zlib in turn) with a v3 one third, which
// is measured by its total_size and so never charged to the v1 budget. Only
// the zlib ones are charged: a zstd frame's headers tell its length.
Bytes v1_chain(const std::vector<Bytes>& plains, std::vector<std::uint64_t>& starts) {
  Bytes region;
  for (std::size_t i = 0; i < plains.size(); ++i) {
    if (i == 2) {
      Bytes v3 = testing::write_ccob(bundle_for("gfx1100", 9), 3, CcobMethod::Zstd);
      starts.push_back(testing::append_aligned(region, v3, 16));
    }
    CcobMethod method = i % 2 == 0 ? CcobMethod::Zstd : CcobMethod::Zlib;
    starts.push_back(testing::append_aligned(region, testing::write_ccob(plains[i], 1, method), 16));
  }
  return region;
}

TEST(ScanBundles, V1BundlesWithinTheWalkBudgetAreAllFound) {
  std::vector<Bytes> plains = {bundle_for("gfx90a", 1), bundle_for("gfx942", 2), bundle_for("gfx1030", 3),
                               bundle_for("gfx1200", 4)};
  std::vector<std::uint64_t> starts;
  Bytes region = v1_chain(plains, starts);
  ReadOptions options;  // exactly the zlib v1 bundles' sum: the budget is inclusive
  options.max_decompressed_bytes = plains[1].size() + plains[3].size();
  for (const Bytes& plain : plains) ASSERT_LE(plain.size(), options.max_decompressed_bytes);

  auto binary = FatBinary::from_memory(region, "v1.bin", options);
  ASSERT_TRUE(Succeeds(binary));
  ASSERT_EQ(binary->bundles().size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(binary->bundles()[i].offset, starts[i]);
    EXPECT_EQ(binary->bundles()[i].compressed->version, i == 2 ? 3 : 1);
    EXPECT_TRUE(Succeeds(binary->read(i))) << i;
  }
}

TEST(ScanBundles, V1ChainPastTheWalkBudgetIsLimitExceededAtTheLaterBundle) {
  std::vector<Bytes> plains = {bundle_for("gfx90a", 1), bundle_for("gfx942", 2), bundle_for("gfx1030", 3),
                               bundle_for("gfx1200", 4)};
  std::vector<std::uint64_t> starts;
  Bytes region = v1_chain(plains, starts);
  std::uint64_t before_last = plains[1].size();  // the zlib bundles are charged
  ReadOptions options;  // each bundle fits on its own; the two zlib v1 together miss by one byte
  options.max_decompressed_bytes = before_last + plains[3].size() - 1;
  for (std::uint64_t start : starts) {
    EXPECT_TRUE(Succeeds(parse_compressed_header(std::span(region).subspan(start), options))) << start;
  }

  // Bundle 4 is refused: what is left of the budget is one byte short of its uncompressed_size.
  auto refused_at_bundle_4 = [&](const Error& error, std::string_view view) {
    const ErrorLocation& at = error.location();
    EXPECT_EQ(error.kind(), ErrorKind::LimitExceeded);
    EXPECT_EQ(at.bundle, std::optional<std::size_t>(4));
    EXPECT_EQ(at.bundle_offset, std::optional<std::uint64_t>(starts[4]));
    EXPECT_EQ(at.bundle_view, view);
    EXPECT_EQ(at.field, "uncompressed_size");
    EXPECT_EQ(at.offset, std::optional<std::uint64_t>(8));
    EXPECT_EQ(at.value, std::optional<std::uint64_t>(plains[3].size()));
    EXPECT_EQ(at.limit, std::optional<std::uint64_t>(plains[3].size() - 1));
  };
  auto walked = scan_bundles(region, whole(region), options);
  ASSERT_TRUE(FailsWith(walked, ErrorKind::LimitExceeded));
  refused_at_bundle_4(walked.error(), " (after bundle 3)");

  SourceLayout wrapped = whole(region);  // host images: the wrappers' bundles share the budget too
  wrapped.wrapper_offsets = starts;
  auto pointed = scan_bundles(region, wrapped, options);
  ASSERT_TRUE(FailsWith(pointed, ErrorKind::LimitExceeded));
  refused_at_bundle_4(pointed.error(), " (from __hip_fatbin_wrapper)");

  // The budget is per walk: without bundle 4 the same file opens.
  auto without_last = FatBinary::from_memory(std::span(region).first(starts[4]), "v1.bin", options);
  ASSERT_TRUE(Succeeds(without_last));
  EXPECT_EQ(without_last->bundles().size(), 4u);
}

// A file of v1 bombs: each declares just over half the default limit (1 GiB)
// of zeros from a small stream. The walk decodes the first and refuses the
// second before decoding it, instead of decoding every bomb in the file.
// (zlib: zstd bombs whose frames declare their size are not decoded at all,
// V1ZstdStreamsAreMeasuredFromTheirFrameHeaders.)
class V1Bombs : public ::testing::TestWithParam<CcobMethod> {};

TEST_P(V1Bombs, ChainDecodesOneLimitAtMost) {
  const std::uint64_t limit = ReadOptions{}.max_decompressed_bytes;
  const std::uint64_t declared = limit / 2 + (1u << 20);
  testing::CcobOptions bomb_options;
  bomb_options.payload = testing::compress_zeros(declared, GetParam());
  bomb_options.overrides.uncompressed_size = declared;
  Bytes bomb = testing::write_ccob(bundle_for("gfx90a", 1), 1, GetParam(), bomb_options);
  Bytes region;
  for (int i = 0; i < 16; ++i) testing::append(region, bomb);
  ASSERT_LT(region.size(), 16u << 20);

  auto binary = FatBinary::from_memory(region, "bombs.bin");
  ASSERT_TRUE(FailsWith(binary, ErrorKind::LimitExceeded));
  // Bundle 1 is refused and the budget used is bundle 0's: one bomb decoded.
  EXPECT_EQ(binary.error().location().value, std::optional<std::uint64_t>(declared));
  EXPECT_EQ(binary.error().location().limit, std::optional<std::uint64_t>(limit - declared));
  // The rendering the CLI prints, kept as one golden sentence.
  EXPECT_EQ(binary.error().message(),
            "bombs.bin: bundle 1 at offset " + detail::hex(bomb.size()) +
                " (after bundle 0): CCOB v1 header: uncompressed_size " + detail::hex(declared) +
                " at offset 0x8 exceeds the " + detail::hex(limit - declared) +
                " bytes left for measuring v1 streams in this walk: earlier v1 bundles used " + detail::hex(declared) +
                " of the limit " + detail::hex(limit) + " (max_decompressed_bytes)");
}

INSTANTIATE_TEST_SUITE_P(Ccob, V1Bombs, ::testing::Values(CcobMethod::Zlib), [](const auto&) { return "zlib"; });

// A v1 zstd stream whose frames declare their content size is measured from
// its frame and block headers (walking the frames with the frame-size
// query): nothing is decoded or charged to the v1 budget when the file opens.
TEST(ScanBundles, V1ZstdStreamsAreMeasuredFromTheirFrameHeaders) {
  // 16 bombs that would cost 8 limits of decoding: all found.
  const std::uint64_t declared = ReadOptions{}.max_decompressed_bytes / 2 + (1u << 20);
  testing::CcobOptions bomb_options;
  bomb_options.payload = testing::compress_zeros(declared, CcobMethod::Zstd);
  bomb_options.overrides.uncompressed_size = declared;
  Bytes bomb = testing::write_ccob(bundle_for("gfx90a", 1), 1, CcobMethod::Zstd, bomb_options);
  Bytes bombs;
  for (int i = 0; i < 16; ++i) testing::append(bombs, bomb);
  auto opened = FatBinary::from_memory(bombs, "bombs.bin");
  ASSERT_TRUE(Succeeds(opened));
  ASSERT_EQ(opened->bundles().size(), 16u);
  EXPECT_EQ(opened->bundles()[15].offset, 15 * bomb.size());

  // Corrupt block contents behind intact headers: found, the bundle after it
  // too; reading it names the corruption.
  Bytes plain = bundle_for("gfx90a", 1);
  Bytes good = testing::write_ccob(plain, 1, CcobMethod::Zstd);
  Bytes bad = good;
  bad[bad.size() - 2] ^= std::byte{0x5a};  // inside the last block (no checksum follows)
  Bytes region = bad;
  std::uint64_t second = testing::append_aligned(region, good, 16);
  auto binary = FatBinary::from_memory(region, "corrupt.bin");
  ASSERT_TRUE(Succeeds(binary));
  ASSERT_EQ(binary->bundles().size(), 2u);
  EXPECT_EQ(binary->bundles()[0].size, bad.size());
  EXPECT_EQ(binary->bundles()[1].offset, second);
  EXPECT_TRUE(FailsWith(binary->read(0), ErrorKind::CorruptData));
  EXPECT_TRUE(Succeeds(binary->read(1)));

  // Without the content size in the frame, the stream is decoded to be
  // measured, and charged: two such bundles pass a budget of one.
  testing::CcobOptions unsized;
  unsized.payload = testing::compress_zstd(plain, {.content_size = false});
  Bytes decoded = testing::write_ccob(plain, 1, CcobMethod::Zstd, unsized);
  Bytes pair = decoded;
  testing::append(pair, decoded);
  ReadOptions one{.max_decompressed_bytes = plain.size()};
  EXPECT_TRUE(FailsWith(FatBinary::from_memory(pair, "unsized.bin", one), ErrorKind::LimitExceeded));
  Bytes sized_pair = good;
  testing::append(sized_pair, good);
  EXPECT_TRUE(Succeeds(FatBinary::from_memory(sized_pair, "sized.bin", one)));
}

TEST(FatBinary, ErrorsNameTheSourceAndBundle) {
  Bytes plain = bundle_for("gfx90a", 1);
  testing::CcobOptions options;
  options.overrides.hash = 42;
  Bytes region = testing::write_ccob(plain, 3, CcobMethod::Zstd, options);
  auto binary = FatBinary::from_memory(region, "lib.so");
  ASSERT_TRUE(Succeeds(binary));
  auto bundle = binary->read(0);
  ASSERT_TRUE(FailsWith(bundle, ErrorKind::HashMismatch));
  EXPECT_EQ(bundle.error().location().file, "lib.so");
  EXPECT_EQ(bundle.error().location().bundle, std::optional<std::size_t>(0));
  EXPECT_EQ(bundle.error().location().bundle_offset, std::optional<std::uint64_t>(0));
  // The rendering the CLI prints, kept as one golden sentence.
  EXPECT_EQ(
      bundle.error().message().rfind("lib.so: bundle 0 at offset 0x0: CCOB v3: stored hash 0x2a at offset 0x18", 0), 0u)
      << bundle.error().message();
  EXPECT_TRUE(FailsWith(binary->read(1), ErrorKind::InvalidArgument));
}

TEST(FatBinary, CompressedEntriesOutliveCopiesOfTheBundle) {
  Bytes region = testing::write_ccob(bundle_for("gfx90a", 1), 3, CcobMethod::Zstd);
  auto binary = FatBinary::from_memory(region);
  ASSERT_TRUE(Succeeds(binary));
  std::optional<Bundle> kept;
  {
    auto bundle = binary->read(0);
    ASSERT_TRUE(Succeeds(bundle));
    kept = *bundle;
  }
  EXPECT_EQ(kept->entries()[1].id, "hipv4-amdgcn-amd-amdhsa--gfx90a");
  EXPECT_EQ(Bytes(kept->entries()[1].bytes.begin(), kept->entries()[1].bytes.end()), code(3001, 1));
}

}  // namespace
}  // namespace coload
