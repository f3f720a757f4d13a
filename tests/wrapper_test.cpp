// The image behind a __hip_fatbin_wrapper pointer (coload/detail/wrapper.h): measured
// from its own headers, read only within the mapping that holds it, and the
// wrappers of a loaded shared library registered one binary each.
#include "coload/detail/wrapper.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "coload/fat_binary.h"
#include "coload/registry.h"
#include "coload/runtime.h"
#include "loaded_wrappers.h"
#include "test_util.h"

namespace coload {
namespace {

using testing::FailsAtField;
using testing::FailsWith;
using testing::Succeeds;

const std::string kFixtures = COLOAD_FIXTURE_DIR;

using testing::file_bytes;
using testing::loaded_wrappers;

/// Pages of anonymous memory followed by one PROT_NONE page: bytes placed to
/// end at the guard page have nothing readable after them.
class GuardedPages {
 public:
  explicit GuardedPages(std::size_t readable) : page_(static_cast<std::size_t>(::sysconf(_SC_PAGESIZE))) {
    readable_ = (readable + page_ - 1) / page_ * page_;
    void* mapping = ::mmap(nullptr, readable_ + page_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT_NE(mapping, MAP_FAILED);
    base_ = static_cast<std::byte*>(mapping);
    EXPECT_EQ(::mprotect(base_ + readable_, page_, PROT_NONE), 0);
  }
  ~GuardedPages() { ::munmap(base_, readable_ + page_); }
  GuardedPages(const GuardedPages&) = delete;
  GuardedPages& operator=(const GuardedPages&) = delete;

  /// Copies `bytes` so that they end where the guard page starts.
  const std::byte* place_at_end(std::span<const std::byte> bytes) {
    std::byte* at = base_ + readable_ - bytes.size();
    std::memcpy(at, bytes.data(), bytes.size());
    return at;
  }
  std::byte* at(std::size_t offset) { return base_ + offset; }
  const std::byte* guard() const { return base_ + readable_; }
  std::size_t readable() const { return readable_; }

 private:
  std::size_t page_;
  std::size_t readable_ = 0;
  std::byte* base_ = nullptr;
};

/// A wrapper record {magic, version, binary, reserved}.
struct WrapperRecord {
  std::uint32_t magic = kHipFatbinWrapperMagic;
  std::uint32_t version = kHipFatbinWrapperVersion;
  const void* binary = nullptr;
  void* reserved = nullptr;
};
static_assert(sizeof(WrapperRecord) == kHipFatbinWrapperSize);

TEST(MeasureImage, EveryFixtureImageMeasuresAsTheWalkDoes) {
  int measured = 0;
  for (const char* folder : {"bundles", "compressed", "co"}) {
    for (const auto& file : std::filesystem::directory_iterator(kFixtures + "/" + folder)) {
      auto binary = FatBinary::open(file.path().string());
      ASSERT_TRUE(Succeeds(binary)) << file.path();
      std::vector<std::byte> bytes = file_bytes(file.path().string());
      const BundleInfo& first = binary->bundles().front();
      auto image = measure_image(std::span<const std::byte>(bytes).subspan(first.offset));
      ASSERT_TRUE(Succeeds(image)) << file.path();
      EXPECT_EQ(image->size, first.size) << file.path();
      EXPECT_EQ(image->format, first.format) << file.path();
      ++measured;
    }
  }
  EXPECT_GT(measured, 20);
}

TEST(MeasureImage, AnImageCutShortIsRefusedNamingTheField) {
  struct Case {
    const char* file;
    ErrorKind kind;
    const char* field;
  };
  // Each loses its last byte: the field whose range reaches past the end is named, with the bytes there are.
  for (const Case& cut : {Case{"bundles/driver_two_arch.hipfb", ErrorKind::OutOfBounds, "entries[2].offset"},
                          Case{"compressed/driver_v3.hipfb", ErrorKind::OutOfBounds, "total_size"},
                          Case{"co/gfx1100.co", ErrorKind::OutOfBounds, "e_shoff"}}) {
    std::vector<std::byte> bytes = file_bytes(kFixtures + "/" + cut.file);
    auto image = measure_image(std::span<const std::byte>(bytes).first(bytes.size() - 1));
    ASSERT_TRUE(FailsWith(image, cut.kind)) << cut.file;
    EXPECT_EQ(image.error().location().field, cut.field) << cut.file << ": " << image.error().message();
    EXPECT_EQ(image.error().location().limit, bytes.size() - 1) << cut.file << ": " << image.error().message();
  }
  std::vector<std::byte> zeros(64);
  EXPECT_TRUE(FailsAtField(measure_image(zeros), ErrorKind::BadMagic, "magic", 0));
}

TEST(ReadableBytes, EndAtTheGuardPage) {
  GuardedPages pages(10000);
  auto bytes = readable_bytes_at(pages.at(100));
  ASSERT_TRUE(Succeeds(bytes));
  EXPECT_EQ(bytes->data(), reinterpret_cast<const std::byte*>(pages.at(100)));
  EXPECT_EQ(bytes->size(), pages.readable() - 100);
  EXPECT_TRUE(FailsAtField(readable_bytes_at(pages.guard()), ErrorKind::OutOfBounds, "address", std::nullopt,
                           reinterpret_cast<std::uintptr_t>(pages.guard())));
}

TEST(ReadableBytes, ALoadedSegmentEndsTheRange) {
  // This function's own code lies in a loaded, readable segment of the test executable.
  static const char kInRodata[] = "a constant of the test executable";
  auto bytes = readable_bytes_at(kInRodata);
  ASSERT_TRUE(Succeeds(bytes));
  EXPECT_GE(bytes->size(), sizeof kInRodata);
  EXPECT_TRUE(FailsWith(readable_bytes_at(reinterpret_cast<const void*>(std::uintptr_t{16})), ErrorKind::OutOfBounds));
}

TEST(WrappedImage, APlainBundleEndingAtTheMappingIsExact) {
  std::vector<std::byte> plain = file_bytes(kFixtures + "/bundles/driver_two_arch.hipfb");
  GuardedPages pages(plain.size() + 4096);
  WrapperRecord record{.binary = pages.place_at_end(plain)};
  auto image = wrapped_image(&record);
  ASSERT_TRUE(Succeeds(image));
  EXPECT_EQ(image->data(), record.binary);
  EXPECT_EQ(image->size(), plain.size());
}

TEST(WrappedImage, BundlesRunningPastTheirMappingAreRefusedWithoutReadingThere) {
  // Each image loses its last byte to the guard page: its headers claim bytes that are not mapped.
  for (const char* name : {"bundles/driver_two_arch.hipfb", "compressed/driver_v3.hipfb",
                           "compressed/bundler19_v2.hipfb", "co/gfx1100.co"}) {
    std::vector<std::byte> bytes = file_bytes(kFixtures + "/" + name);
    ASSERT_FALSE(bytes.empty()) << name;
    GuardedPages pages(bytes.size() + 4096);
    WrapperRecord record{.binary = pages.place_at_end(std::span<const std::byte>(bytes).first(bytes.size() - 1))};
    auto image = wrapped_image(&record);
    ASSERT_TRUE(FailsWith(image, ErrorKind::OutOfBounds)) << name;
    EXPECT_EQ(image.error().location().limit, bytes.size() - 1) << name << ": " << image.error().message();
    EXPECT_NE(image.error().message().find("__hip_fatbin_wrapper at 0x"), std::string::npos) << image.error().message();
  }
}

TEST(WrappedImage, ABadRecordIsRefusedByField) {
  std::vector<std::byte> plain = file_bytes(kFixtures + "/bundles/driver_two_arch.hipfb");
  WrapperRecord bad_magic{.magic = 0x46504948, .binary = plain.data()};
  EXPECT_TRUE(FailsAtField(wrapped_image(&bad_magic), ErrorKind::BadMagic, "magic", 0, 0x46504948));
  WrapperRecord version_two{.version = 2, .binary = plain.data()};
  EXPECT_TRUE(FailsAtField(wrapped_image(&version_two), ErrorKind::UnsupportedVersion, "version", 4, 2));
  WrapperRecord null_binary{};
  EXPECT_TRUE(FailsAtField(wrapped_image(&null_binary), ErrorKind::Malformed, "binary", 8, 0));

  GuardedPages pages(4096);
  WrapperRecord unmapped_binary{.binary = pages.guard()};
  EXPECT_TRUE(FailsAtField(wrapped_image(&unmapped_binary), ErrorKind::OutOfBounds, "address", std::nullopt,
                           reinterpret_cast<std::uintptr_t>(pages.guard())));
  // A record whose last 8 bytes would lie on the guard page.
  WrapperRecord record{.binary = plain.data()};
  const std::byte* cut = pages.place_at_end(std::as_bytes(std::span(&record, 1)).first(16));
  EXPECT_TRUE(FailsAtField(wrapped_image(cut), ErrorKind::Truncated, "wrapper", 0, 16, 24));
  EXPECT_TRUE(FailsWith(wrapped_image(pages.guard()), ErrorKind::OutOfBounds));
}

TEST(RegisterWrapper, EachWrapperOfALoadedLibraryIsItsOwnBinary) {
  const std::string path = kFixtures + "/host/libkernels_mixed.so";
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << ::dlerror();
  std::vector<const void*> wrappers = loaded_wrappers(path, handle);
  ASSERT_EQ(wrappers.size(), 3u);
  for (const void* wrapper : wrappers) ASSERT_NE(wrapper, nullptr);

  auto from_file = FatBinary::open(path);
  ASSERT_TRUE(Succeeds(from_file));
  std::vector<std::byte> file = file_bytes(path);
  Registry registry(open_dry_run_runtime({testing::device("gfx1100")}), Config{});
  std::vector<BinaryHandle> binaries;
  for (const void* wrapper : wrappers) {
    auto image = wrapped_image(wrapper);
    ASSERT_TRUE(Succeeds(image));
    // The image is one of the file's bundles, byte for byte, in the loaded segment.
    bool matches_a_bundle = false;
    for (const BundleInfo& bundle : from_file->bundles()) {
      matches_a_bundle |=
          bundle.size == image->size() && std::memcmp(file.data() + bundle.offset, image->data(), image->size()) == 0;
    }
    EXPECT_TRUE(matches_a_bundle);
    auto binary = registry.register_wrapper(wrapper);
    ASSERT_TRUE(Succeeds(binary));
    binaries.push_back(*binary);
  }
  // gfx1100 code lies in one translation unit's bundle only: its wrapper's binary has the kernel.
  int found = 0;
  for (BinaryHandle binary : binaries) {
    auto kernel = registry.lookup_kernel(binary, 0, "_Z9block_sumPKfPfj");
    if (!kernel) continue;
    ++found;
    EXPECT_EQ((*kernel)->kernarg_segment_size, 20u);
    EXPECT_EQ((*kernel)->group_segment_size, 1024u);
  }
  EXPECT_EQ(found, 1);
  for (BinaryHandle binary : binaries) EXPECT_TRUE(Succeeds(registry.unregister(binary)));
  ::dlclose(handle);
}

TEST(RegisterWrapper, RegisteringReadsOnlyTheRecordAndTheImageIsCheckedAtFirstUse) {
  std::vector<std::string> warnings;
  RegistryOptions options;
  options.log = [&](LogLevel, std::string_view text) { warnings.emplace_back(text); };
  Registry registry(open_dry_run_runtime({testing::device("gfx1100"), testing::device("gfx90a")}), Config{},
                    std::move(options));
  // A record pointing at no image at all: registering reads none of it, as
  // CLR's does; the first lookup measures it and fails, naming the wrapper,
  // and every later use (any device) gets the same answer without reading again.
  std::vector<std::byte> zeros(4096);
  WrapperRecord record{.binary = zeros.data()};
  auto binary = registry.register_wrapper(&record, "tu.o");
  ASSERT_TRUE(Succeeds(binary));
  EXPECT_EQ(registry.stats().bundles_read, 0u);
  auto kernel = registry.lookup_kernel(*binary, 0, "k");
  ASSERT_TRUE(FailsAtField(kernel, ErrorKind::BadMagic, "magic", 0));
  EXPECT_NE(kernel.error().message().find("__hip_fatbin_wrapper at 0x"), std::string::npos) << kernel.error().message();
  zeros[0] = std::byte{'_'};  // were it read again, the error would change
  auto again = registry.lookup_kernel(*binary, 1, "k");
  EXPECT_TRUE(FailsAtField(again, ErrorKind::BadMagic, "magic", 0));
  EXPECT_EQ(again.error().message(), kernel.error().message());
  ASSERT_EQ(warnings.size(), 1u);  // logged once, when the image was opened
  EXPECT_EQ(warnings[0], kernel.error().message());
  // A bad record is still refused at registration.
  WrapperRecord bad_magic{.magic = 0x46504948, .binary = zeros.data()};
  EXPECT_TRUE(FailsAtField(registry.register_wrapper(&bad_magic), ErrorKind::BadMagic, "magic", 0, 0x46504948));
  EXPECT_TRUE(Succeeds(registry.unregister(*binary)));
}

}  // namespace
}  // namespace coload
