// coload_register_wrapper and coload_bundle_size on memory that a loaded
// object's segment or /proc/self/maps calls readable but that faults when
// touched (docs/reading-rules.md, "What coload requires of the caller's
// memory and files"): each case in a forked child, which must return the
// named status, never die of SIGSEGV or SIGBUS.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "c_api_test_support.h"
#include "coload/coload.h"
#include "fault_child.h"
#include "loaded_wrappers.h"

namespace {

using coload::testing::ChildEnd;
using coload::testing::file_bytes;
using coload::testing::fixture;
using coload::testing::in_child;
using coload::testing::loaded_wrappers;
using coload::testing::page_of;
using coload::testing::page_size;
using coload::testing::PastEndMapping;

using Wrapper = coload::testing::HipFatbinWrapper;

/// The child's exit code: the status, or 99 when the registry cannot be made.
template <class Call>
ChildEnd status_in_child(Call call) {
  return in_child([&] {
    coload_registry_options options = coload::testing::dry_run_options("gfx1100");
    coload_registry* registry = nullptr;
    if (coload_registry_create(&options, &registry) != COLOAD_OK) return 99;
    return static_cast<int>(call(registry));
  });
}

ChildEnd ended_with(coload_status status) { return {.code = static_cast<int>(status)}; }

using LoadedLibrary = coload::testing::LoadedLibrary;

TEST_F(LoadedLibrary, AWrapperPageMadeProtNoneIsOutOfBounds) {
  ChildEnd end = status_in_child([&](coload_registry* registry) {
    if (::mprotect(page_of(wrappers[0]), page_size(), PROT_NONE) != 0) return COLOAD_ERROR_INTERNAL;
    coload_binary binary = 0;
    return coload_register_wrapper(registry, wrappers[0], nullptr, &binary);
  });
  EXPECT_EQ(end, ended_with(COLOAD_ERROR_OUT_OF_BOUNDS)) << describe(end);
}

TEST_F(LoadedLibrary, AnImagePageMadeProtNoneIsOutOfBoundsForBundleSize) {
  const void* image = static_cast<const Wrapper*>(wrappers[0])->binary;
  ChildEnd end = status_in_child([&](coload_registry*) {
    if (::mprotect(page_of(image), page_size(), PROT_NONE) != 0) return COLOAD_ERROR_INTERNAL;
    std::size_t size = 0;
    return coload_bundle_size(image, COLOAD_AVAILABLE_MAPPED, &size);
  });
  EXPECT_EQ(end, ended_with(COLOAD_ERROR_OUT_OF_BOUNDS)) << describe(end);
}

TEST(PagesPastEndOfFile, ATableRunningIntoThemIsTruncatedForBundleSizeAndLookup) {
  // The plain bundle's magic ends the file's one page; its table would follow
  // on the next, which the mapping has but the file does not.
  std::vector<std::byte> plain = file_bytes(fixture("bundles/driver_two_arch.hipfb"));
  std::vector<std::byte> page(page_size());
  std::memcpy(page.data() + page.size() - 24, plain.data(), 24);
  PastEndMapping mapping(page.data(), page.size(), 3 * page_size());
  ASSERT_NE(mapping.base(), nullptr);
  const std::byte* image = mapping.base() + page_size() - 24;
  ChildEnd size_end = status_in_child([&](coload_registry*) {
    std::size_t size = 0;
    return coload_bundle_size(image, COLOAD_AVAILABLE_MAPPED, &size);
  });
  EXPECT_EQ(size_end, ended_with(COLOAD_ERROR_TRUNCATED)) << describe(size_end);
  Wrapper record{.binary = image};
  ChildEnd lookup_end = status_in_child([&](coload_registry* registry) {
    coload_binary binary = 0;
    if (coload_status status = coload_register_wrapper(registry, &record, "tu.o", &binary); status != COLOAD_OK)
      return status;
    coload_kernel_info info;
    std::memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    return coload_lookup_kernel(registry, binary, 0, "k", &info);
  });
  EXPECT_EQ(lookup_end, ended_with(COLOAD_ERROR_TRUNCATED)) << describe(lookup_end);
  ChildEnd wrapper_end = status_in_child([&](coload_registry* registry) {
    coload_binary binary = 0;
    return coload_register_wrapper(registry, mapping.base() + page_size(), "tu.o", &binary);
  });
  EXPECT_EQ(wrapper_end, ended_with(COLOAD_ERROR_OUT_OF_BOUNDS)) << describe(wrapper_end);
}

TEST(Vvar, BundleSizeAndRegistrationThereAreOutOfBounds) {
  const void* vvar = coload::testing::vvar_page();
  if (vvar == nullptr) GTEST_SKIP() << "no [vvar] mapping";
  ChildEnd size_end = status_in_child([&](coload_registry*) {
    std::size_t size = 0;
    return coload_bundle_size(vvar, COLOAD_AVAILABLE_MAPPED, &size);
  });
  EXPECT_EQ(size_end, ended_with(COLOAD_ERROR_OUT_OF_BOUNDS)) << describe(size_end);
  ChildEnd wrapper_end = status_in_child([&](coload_registry* registry) {
    coload_binary binary = 0;
    return coload_register_wrapper(registry, vvar, "tu.o", &binary);
  });
  EXPECT_EQ(wrapper_end, ended_with(COLOAD_ERROR_OUT_OF_BOUNDS)) << describe(wrapper_end);
}

}  // namespace
