// The pipeline (coload/pipeline.h) and error locations (coload/error.h): one
// choice per bundle in bundle order, whatever the thread count; the budget
// its callers share; errors that carry their bundle and file as data.
#include "coload/pipeline.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <numeric>
#include <string>
#include <vector>

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

constexpr std::uint32_t kGfx90a = 0x3f, kGfx942 = 0x4c, kGfx1030 = 0x36;
constexpr std::uint32_t kAny = testing::kXnackAny | testing::kSrameccAny;

// A file of three bundles back to back: plain {gfx1030, gfx90a}, a CCOB v3
// {gfx90a, gfx942}, and a CCOB v3 {gfx942} whose stored hash is wrong.
struct ThreeBundles {
  Bytes gfx90a_plain = entry_bytes(kGfx90a | kAny, 3000, 1);
  Bytes gfx90a_ccob = entry_bytes(kGfx90a | kAny, 5000, 2);
  Bytes file;
  std::uint64_t third_offset = 0;

  ThreeBundles() {
    file = testing::write_plain_bundle({{"host-x86_64-unknown-linux-gnu", {}},
                                        {"hipv4-amdgcn-amd-amdhsa--gfx1030", entry_bytes(kGfx1030, 2000, 3)},
                                        {"hipv4-amdgcn-amd-amdhsa--gfx90a", gfx90a_plain}});
    Bytes second =
        testing::write_plain_bundle({{"hipv4-amdgcn-amd-amdhsa--gfx90a", gfx90a_ccob},
                                     {"hipv4-amdgcn-amd-amdhsa--gfx942", entry_bytes(kGfx942 | kAny, 4000, 4)}});
    Bytes third = testing::write_plain_bundle({{"hipv4-amdgcn-amd-amdhsa--gfx942", entry_bytes(kGfx942, 4000, 5)}});
    testing::CcobOptions wrong;
    wrong.overrides.hash = testing::ccob_hash(third) ^ 1;
    testing::append_aligned(file, testing::write_ccob(second, 3, CcobMethod::Zstd), 4096);
    third_offset = testing::append_aligned(file, testing::write_ccob(third, 3, CcobMethod::Zstd, wrong), 4096);
  }
};

std::vector<std::size_t> every(const FatBinary& binary) {
  std::vector<std::size_t> all(binary.bundles().size());
  std::iota(all.begin(), all.end(), std::size_t{0});
  return all;
}

TEST(ChooseInBinary, OneResultPerBundleInOrderOnAnyNumberOfThreads) {
  ThreeBundles input;
  auto binary = FatBinary::from_memory(input.file, "three.bin");
  ASSERT_TRUE(Succeeds(binary));
  ASSERT_EQ(binary->bundles().size(), 3u);
  std::string first_run;
  for (std::size_t threads : {1u, 2u, 3u}) {
    std::vector<std::size_t> order;
    std::string described;
    choose_in_binary(*binary, every(*binary), device("gfx90a"), {.threads = threads},
                     [&](std::size_t index, Expected<BundleChoice>& choice) {
                       order.push_back(index);
                       if (index == 0) {
                         EXPECT_TRUE(Succeeds(choice));
                         EXPECT_FALSE(choice->compressed());
                         EXPECT_NE(choice->plain(), nullptr);
                         EXPECT_EQ(choice->selection.selected, std::optional<std::size_t>(2));
                         EXPECT_TRUE(std::ranges::equal(choice->chosen_bytes(), input.gfx90a_plain));
                       } else if (index == 1) {
                         EXPECT_TRUE(Succeeds(choice));
                         EXPECT_TRUE(choice->compressed());
                         EXPECT_EQ(choice->selection.selected, std::optional<std::size_t>(0));
                         const StreamedChoice streamless;
                         const StreamedChoice& streamed = choice->streamed() ? *choice->streamed() : streamless;
                         EXPECT_EQ(streamed.hash, StoredHash::Checked);
                         EXPECT_TRUE(streamed.heads.empty());  // not asked for: dropped
                         EXPECT_TRUE(std::ranges::equal(choice->chosen_bytes(), input.gfx90a_ccob));
                       } else {
                         EXPECT_TRUE(FailsWith(choice, ErrorKind::HashMismatch));
                         const ErrorLocation& at = choice.error().location();
                         EXPECT_EQ(at.file, "three.bin");
                         EXPECT_EQ(at.bundle, std::optional<std::size_t>(2));
                         EXPECT_EQ(at.bundle_offset, std::optional<std::uint64_t>(input.third_offset));
                       }
                       if (choice) described += describe(choice->selection);
                       return true;
                     });
    EXPECT_EQ(order, (std::vector<std::size_t>{0, 1, 2})) << threads;
    if (first_run.empty()) first_run = described;
    EXPECT_EQ(described, first_run) << threads;
  }
}

TEST(ChooseInBinary, HeadsAreHandedOverWhenAskedForAndTakeStops) {
  ThreeBundles input;
  auto binary = FatBinary::from_memory(input.file, "three.bin");
  ASSERT_TRUE(Succeeds(binary));
  std::vector<std::size_t> taken;
  choose_in_binary(*binary, every(*binary), device("gfx942"), {.threads = 2, .keep_heads = true},
                   [&](std::size_t index, Expected<BundleChoice>& choice) {
                     taken.push_back(index);
                     if (index == 1) {
                       EXPECT_TRUE(Succeeds(choice));
                       EXPECT_TRUE(choice->compressed());
                       EXPECT_EQ(choice->compressed() ? choice->streamed()->heads.size() : 0u, 2u);
                       EXPECT_EQ(choice->selection.selected, std::optional<std::size_t>(1));
                     }
                     return index < 1;
                   });
  EXPECT_EQ(taken, (std::vector<std::size_t>{0, 1}));
}

TEST(ChooseInBinary, TheComgrUnbundlerRefusesACcobAtItsBundle) {
  ThreeBundles input;
  auto binary = FatBinary::from_memory(input.file, "three.bin");
  ASSERT_TRUE(Succeeds(binary));
  const Selector selector(device("gfx90a"), {.unbundler = Unbundler::Comgr});
  auto choice = select_in_bundle_at(*binary, 1, selector, {});
  ASSERT_TRUE(FailsWith(choice, ErrorKind::UnsupportedMethod));
  EXPECT_EQ(choice.error().location().bundle, std::optional<std::size_t>(1));
  EXPECT_EQ(choice.error().location().bundle_offset, std::optional<std::uint64_t>(binary->bundles()[1].offset));
  EXPECT_EQ(choice.error().location().file, "three.bin");
}

TEST(KeptBytes, ChargesUpToTheLimitAndNamesWhatWouldPassIt) {
  KeptBytes kept(100, "what this test keeps");
  EXPECT_TRUE(Succeeds(kept.charge(60, "the first")));
  auto over = kept.charge(41, "the second");
  ASSERT_TRUE(FailsWith(over, ErrorKind::LimitExceeded));
  EXPECT_EQ(kept.used(), 60u);  // nothing counted for a refused charge
  const ErrorLocation& at = over.error().location();
  EXPECT_EQ(at.field, "max_decompressed_bytes");
  EXPECT_EQ(at.value, std::optional<std::uint64_t>(41));
  EXPECT_EQ(at.limit, std::optional<std::uint64_t>(100));
  EXPECT_EQ(over.error().message(),
            "the second (0x29 bytes) would pass the limit 0x64 (max_decompressed_bytes) on what this test keeps, "
            "of which 0x3c is kept already");
  EXPECT_TRUE(Succeeds(kept.charge(40, "the third")));
  EXPECT_EQ(kept.used(), 100u);
}

TEST(ErrorLocation, IsSetOnceByTheInnermostLayerAndRenderedAtTheEdge) {
  Error inner_most = Error(ErrorKind::HashMismatch, "stored hash differs").in_bundle(2, 0x3000).in_file("lib.so");
  Error error = std::move(inner_most).in_bundle(7).in_file("outer.so");  // outer layers do not overwrite
  EXPECT_EQ(error.location().bundle, std::optional<std::size_t>(2));
  EXPECT_EQ(error.location().file, "lib.so");
  EXPECT_EQ(error.detail(), "stored hash differs");
  EXPECT_EQ(error.message(), "lib.so: bundle 2 at offset 0x3000: stored hash differs");
  // A context added once the location is set says what the whole is about.
  EXPECT_EQ(error.with_context("loading").message(), "loading: lib.so: bundle 2 at offset 0x3000: stored hash differs");
  // A context added before stays inside.
  Error inner = Error(ErrorKind::Malformed, "bad").with_context("entry 1").in_bundle(0);
  EXPECT_EQ(inner.message(), "bundle 0: entry 1: bad");
  EXPECT_EQ(Error(ErrorKind::Truncated, "short").in_bundle(1, 0x10, ", decompressed").message(),
            "bundle 1 at offset 0x10, decompressed: short");
  Error entry = Error(ErrorKind::LimitExceeded, "its size").at_entry(3, "hipv4-amdgcn-amd-amdhsa--gfx90a");
  EXPECT_EQ(std::move(entry).in_bundle(2).in_file("a.so").message(),
            "a.so: bundle 2: entry 3 (hipv4-amdgcn-amd-amdhsa--gfx90a): its size");
  // An entry whose ID could not be read (a bad table) is named by its index alone.
  EXPECT_EQ(Error(ErrorKind::Malformed, "id at offset 0x6e is empty").at_entry(1, {}).in_bundle(0, 0).message(),
            "bundle 0 at offset 0x0: entry 1: id at offset 0x6e is empty");
}

TEST(ErrorLocation, AReadErrorNamesFileAndBundleAsFields) {
  ThreeBundles input;
  Bytes cut(input.file.begin(), input.file.begin() + static_cast<std::ptrdiff_t>(input.third_offset + 40));
  auto binary = FatBinary::from_memory(cut, "cut.bin");
  ASSERT_FALSE(binary.has_value());
  EXPECT_EQ(binary.error().location().file, "cut.bin");
  EXPECT_EQ(binary.error().location().bundle, std::optional<std::size_t>(2));
  EXPECT_EQ(binary.error().location().bundle_offset, std::optional<std::uint64_t>(input.third_offset));
}

}  // namespace
}  // namespace coload
