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
  return testing::write_plain_bundle({{"host-x86_64-unknown-linux-gnu-", {}},
                                      {"hipv4-amdgcn-amd-amdhsa--" + processor, code(3000 + seed, seed)}});
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
  starts.push_back(testing::append_aligned(region, testing::write_ccob(bundle_for("gfx942", 2), 3, CcobMethod::Zstd), 4096));
  starts.push_back(testing::append_aligned(region, testing::write_ccob(bundle_for("gfx1030", 3), 2, CcobMethod::Zlib), 16));
  starts.push_back(testing::append_aligned(region, testing::write_ccob(bundle_for("gfx1100", 4), 1, CcobMethod::Zstd), 4096));
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
  EXPECT_NE(bundles.error().message().find("bundle 1 at offset " + detail::hex(garbage_at)),
            std::string::npos)
      << bundles.error().message();
}

TEST(ScanBundles, AllZeroRegionHoldsNoBundle) {
  Bytes region(8192);
  EXPECT_TRUE(FailsWith(scan_bundles(region, whole(region)), ErrorKind::NotFound));
}

TEST(ScanBundles, WrapperOffsetsAreUsedInsteadOfWalking) {
  Bytes region;
  std::uint64_t first = testing::append_aligned(region, bundle_for("gfx90a", 1), 4096);
  std::uint64_t second = testing::append_aligned(region, testing::write_ccob(bundle_for("gfx942", 2), 3, CcobMethod::Zstd), 4096);
  testing::append(region, testing::to_bytes("trailing bytes no wrapper points at"));
  SourceLayout layout = whole(region);
  layout.wrapper_offsets = {first, second};
  auto bundles = scan_bundles(region, layout);
  ASSERT_TRUE(Succeeds(bundles));
  ASSERT_EQ(bundles->size(), 2u);
  EXPECT_EQ((*bundles)[1].offset, second);

  layout.wrapper_offsets = {first, first + 64};
  EXPECT_TRUE(FailsWith(scan_bundles(region, layout), ErrorKind::Malformed));
  layout.wrapper_offsets = {region.size() + 10};
  EXPECT_TRUE(FailsWith(scan_bundles(region, layout), ErrorKind::OutOfBounds));
}

TEST(ScanBundles, RegionOutsideTheSourceIsOutOfBounds) {
  Bytes region = bundle_for("gfx90a", 1);
  SourceLayout layout = whole(region);
  layout.region_offset = 16;
  EXPECT_TRUE(FailsWith(scan_bundles(region, layout), ErrorKind::OutOfBounds));
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
  EXPECT_EQ(bundle.error().message().rfind("lib.so: bundle 0 at offset 0x0: CCOB v3: stored hash 0x2a at offset 0x18", 0), 0u)
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
