// Memory a caller gives without a size, and files that shrink after they are
// registered: each case runs in a forked child, which must end normally with
// the named error, never by SIGSEGV or SIGBUS (docs/reading-rules.md, "What
// coload requires of the caller's memory and files"). The checked reads
// themselves: checked_read_test.cpp.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "coload/detail/wrapper.h"
#include "coload/registry.h"
#include "coload/runtime.h"
#include "fault_child.h"
#include "loaded_wrappers.h"
#include "test_util.h"

namespace coload {
namespace {

using testing::ChildEnd;
using testing::file_bytes;
using testing::in_child;
using testing::loaded_wrappers;
using testing::page_of;
using testing::page_size;
using testing::PastEndMapping;

const std::string kFixtures = COLOAD_FIXTURE_DIR;

/// A child's code for `result`: 0 when it failed with `kind` (and `field`,
/// unless empty), 1 when it succeeded, 2 for another kind, 3 for another field.
template <class T>
int expect_error(const Expected<T>& result, ErrorKind kind, std::string_view field = {}) {
  if (result) return 1;
  if (result.error().kind() != kind) return 2;
  if (!field.empty() && result.error().location().field != field) return 3;
  return 0;
}

constexpr ChildEnd kNamedError{.code = 0};

struct WrapperRecord {
  std::uint32_t magic = kHipFatbinWrapperMagic;
  std::uint32_t version = kHipFatbinWrapperVersion;
  const void* binary = nullptr;
  void* reserved = nullptr;
};

Registry dry_run(const char* device) { return Registry(open_dry_run_runtime({testing::device(device)}), Config{}); }

using LoadedLibrary = coload::testing::LoadedLibrary;

TEST_F(LoadedLibrary, AWrapperInAPageMadeProtNoneIsRefusedAtRegistration) {
  // The library's PT_LOAD segment says PF_R; mprotect changed that since.
  ChildEnd end = in_child([&] {
    if (::mprotect(page_of(wrappers[0]), page_size(), PROT_NONE) != 0) return 90;
    Registry registry = dry_run("gfx1100");
    return expect_error(registry.register_wrapper(wrappers[0]), ErrorKind::OutOfBounds, "address");
  });
  EXPECT_EQ(end, kNamedError) << describe(end);
}

TEST_F(LoadedLibrary, AnImageWhoseLaterPagesWereMadeProtNoneFailsAtLookupNotBeforeOrWithAFault) {
  // Each image but its first page: registering reads none of it; the first
  // lookup measures and copies it and stops at the protected page.
  std::vector<std::span<const std::byte>> images;
  for (const void* wrapper : wrappers) {
    auto image = wrapped_image(wrapper);
    ASSERT_TRUE(testing::Succeeds(image));
    images.push_back(*image);
  }
  bool spans_pages = false;
  for (auto image : images) spans_pages |= page_of(image.data()) != page_of(image.data() + image.size() - 1);
  ASSERT_TRUE(spans_pages) << "no image of the fixture crosses a page";
  ChildEnd end = in_child([&] {
    Registry registry = dry_run("gfx1100");
    std::vector<BinaryHandle> binaries;
    for (const void* wrapper : wrappers) {
      auto binary = registry.register_wrapper(wrapper);
      if (!binary) return 91;
      binaries.push_back(*binary);
    }
    for (auto image : images) {
      auto* second = static_cast<std::byte*>(page_of(image.data())) + page_size();
      if (second < image.data() + image.size() &&
          ::mprotect(second, static_cast<std::size_t>(image.data() + image.size() - second), PROT_NONE) != 0)
        return 90;
    }
    for (std::size_t i = 0; i < images.size(); ++i) {
      if (page_of(images[i].data()) == page_of(images[i].data() + images[i].size() - 1)) continue;
      auto kernel = registry.lookup_kernel(binaries[i], 0, "_Z9block_sumPKfPfj");
      if (int code = expect_error(kernel, ErrorKind::OutOfBounds); code != 0) return 10 * static_cast<int>(i) + code;
    }
    return 0;
  });
  EXPECT_EQ(end, kNamedError) << describe(end);
}

TEST(PagesPastEndOfFile, AnImageRunningIntoThemFailsAtLookup) {
  // A runtime mapped the file with a rounded length: /proc/self/maps lists
  // the pages after the file's last one readable, and touching them is SIGBUS.
  std::vector<std::byte> plain = file_bytes(kFixtures + "/bundles/driver_two_arch.hipfb");
  ASSERT_GT(plain.size(), 2 * page_size());
  PastEndMapping mapping(plain.data(), page_size(), plain.size());
  ASSERT_NE(mapping.base(), nullptr);
  WrapperRecord record{.binary = mapping.base()};
  ChildEnd end = in_child([&] {
    Registry registry = dry_run("gfx90a");
    auto binary = registry.register_wrapper(&record);
    if (!binary) return 91;
    return expect_error(registry.lookup_kernel(*binary, 0, "_Z5saxpyfPKfPfi"), ErrorKind::OutOfBounds,
                        "entries[1].offset");
  });
  EXPECT_EQ(end, kNamedError) << describe(end);
}

TEST(PagesPastEndOfFile, AWrapperOrATableInThemIsRefused) {
  // The bundle's magic ends the file's one page; its table would follow on the next.
  std::vector<std::byte> plain = file_bytes(kFixtures + "/bundles/driver_two_arch.hipfb");
  std::vector<std::byte> page(page_size());
  std::memcpy(page.data() + page.size() - 24, plain.data(), 24);
  PastEndMapping mapping(page.data(), page.size(), 3 * page_size());
  ASSERT_NE(mapping.base(), nullptr);
  const std::byte* past_end = mapping.base() + page_size();
  WrapperRecord record{.binary = past_end - 24};
  ChildEnd end = in_child([&] {
    Registry registry = dry_run("gfx90a");
    if (int code = expect_error(registry.register_wrapper(past_end), ErrorKind::OutOfBounds, "address")) return code;
    auto binary = registry.register_wrapper(&record);
    if (!binary) return 91;
    return 10 + expect_error(registry.lookup_kernel(*binary, 0, "k"), ErrorKind::Truncated);
  });
  EXPECT_EQ(end, (ChildEnd{.code = 10})) << describe(end);
}

TEST(Vvar, AWrapperOrAnImageThereIsRefused) {
  const void* vvar = testing::vvar_page();
  if (vvar == nullptr) GTEST_SKIP() << "no [vvar] mapping";
  WrapperRecord record{.binary = vvar};
  ChildEnd end = in_child([&] {
    Registry registry = dry_run("gfx90a");
    if (int code = expect_error(registry.register_wrapper(vvar), ErrorKind::OutOfBounds, "address")) return code;
    auto binary = registry.register_wrapper(&record);  // /proc/self/maps lists it readable
    if (!binary) return 91;
    return 10 + expect_error(registry.lookup_kernel(*binary, 0, "k"), ErrorKind::OutOfBounds, "address");
  });
  EXPECT_EQ(end, (ChildEnd{.code = 10})) << describe(end);
}

/// A copy of fixture `name` in a fresh temporary directory.
std::string scratch_copy(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("coload_memory_faults_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto path = dir / std::filesystem::path(name).filename();
  std::filesystem::copy_file(kFixtures + "/" + name, path, std::filesystem::copy_options::overwrite_existing);
  return path.string();
}

TEST(ShrunkFile, APlainBundleTruncatedAfterRegistrationIsIoAtTheFirstLookup) {
  const std::string path = scratch_copy("bundles/driver_two_arch.hipfb");
  ChildEnd end = in_child([&] {
    Registry registry = dry_run("gfx90a");
    auto binary = registry.register_file(path);
    if (!binary) return 91;
    if (::truncate(path.c_str(), static_cast<off_t>(page_size())) != 0) return 90;
    auto kernel = registry.lookup_kernel(*binary, 0, "_Z5saxpyfPKfPfi");
    if (int code = expect_error(kernel, ErrorKind::Io, "bundle")) return code;
    return kernel.error().location().file == path ? 0 : 4;
  });
  EXPECT_EQ(end, kNamedError) << describe(end);
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

TEST(ShrunkFile, ACodeObjectTruncatedAfterRegistrationIsIoAtTheFirstLookup) {
  const std::string path = scratch_copy("co/gfx90a.co");
  ChildEnd end = in_child([&] {
    Registry registry = dry_run("gfx90a");
    auto binary = registry.register_file(path);
    if (!binary) return 91;
    if (::truncate(path.c_str(), static_cast<off_t>(page_size())) != 0) return 90;
    return expect_error(registry.lookup_kernel(*binary, 0, "k"), ErrorKind::Io, "bundle");
  });
  EXPECT_EQ(end, kNamedError) << describe(end);
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

TEST(ShrunkFile, AFileSetMemberTruncatedAfterRegistrationIsIoNamingItsEntry) {
  // Its ELF header is still there, so selection chooses it; copying it finds the end.
  const std::vector<std::string> paths = {scratch_copy("co/gfx90a.co"), scratch_copy("co/gfx1100.co")};
  ChildEnd end = in_child([&] {
    Registry registry = dry_run("gfx90a");
    auto binary = registry.register_files(paths, "set");
    if (!binary) return 91;
    if (::truncate(paths[0].c_str(), static_cast<off_t>(page_size())) != 0) return 90;
    auto kernel = registry.lookup_kernel(*binary, 0, "k");
    if (int code = expect_error(kernel, ErrorKind::Io, "entry")) return code;
    if (kernel.error().location().file != paths[0]) return 4;
    return kernel.error().location().offset == page_size() ? 0 : 5;
  });
  EXPECT_EQ(end, kNamedError) << describe(end);
  std::filesystem::remove_all(std::filesystem::path(paths[0]).parent_path());
}

}  // namespace
}  // namespace coload
