// A process that already runs HIP under HIP's own name (docs/loading.md,
// "Which library"): the test HIP library built as libamdhip64.so.7 (SONAME
// libamdhip64.so.7, release 7.0, HIP 7's sticky per-thread error) or .so.8,
// dlopened by the application before coload is asked with default options.
// Its own executable, each test its own process (ctest): what matters is
// which copies of the libamdhip64 family the process holds, and Debian's
// real libamdhip64.so.5 (which coload would otherwise open) may be installed.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <link.h>
#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__ 1
#endif
#include <hip/hip_runtime_api.h>  // the entry points' types: calls through dlsym must use them (UBSan)

#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "coload/config.h"
#include "coload/registry.h"
#include "coload/runtime.h"
#include "hip_test_support.h"
#include "support/bundle_writer.h"
#include "test_util.h"

namespace coload {
namespace {

using testing::Contains;
using testing::FailsWith;
using testing::FakeHip;
using testing::Succeeds;

const std::filesystem::path kFixtures = COLOAD_FIXTURE_DIR;

/// How many loaded objects are of the libamdhip64 family, by file name.
int hip_copies() {
  int count = 0;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        const char* name = info->dlpi_name ? std::strrchr(info->dlpi_name, '/') : nullptr;
        if (name && std::strncmp(name + 1, "libamdhip64.so", 14) == 0) ++*static_cast<int*>(data);
        return 0;
      },
      &count);
  return count;
}

/// The test library under HIP's own name, dlopened as an application does
/// (`mode`: RTLD_GLOBAL or RTLD_LOCAL), with one gfx90a. Skips when the
/// process already holds a copy (each test needs a process of its own).
const FakeHip* application_hip(const char* path, int mode) {
  if (hip_copies() != 0) return nullptr;
  void* handle = dlopen(path, RTLD_NOW | mode);
  EXPECT_NE(handle, nullptr) << dlerror();
  const FakeHip& fake = FakeHip::at(path);  // the same instance, by the same path
  EXPECT_EQ(fake.handle, handle);
  fake.reset();
  fake.add_device("gfx90a:sramecc+:xnack-", 65536, 64);
  return &fake;
}

/// The gfx90a fixture (dev_counter, dev_coeffs) in a bundle.
std::vector<std::byte> fixture_bundle() {
  return testing::write_plain_bundle(
      {{"host-x86_64-unknown-linux-gnu-", {}},
       {"hipv4-amdgcn-amd-amdhsa--gfx90a", testing::read_file((kFixtures / "co/gfx90a.co").string())}});
}

// HIP 7 already running: coload's HIP runtime with default options adopts
// that instance (no second libamdhip64 in the process, no second start), and
// leaves the error the application had pending where it was through every
// call, as HIP 7 keeps it until hipGetLastError.
void adopts_hip7(int mode) {
  const FakeHip* fake = application_hip(COLOAD_TEST_AMDHIP7_LIBRARY, mode);
  if (!fake) GTEST_SKIP() << "the process already holds a libamdhip64 (ctest runs each test alone)";
  auto peek = reinterpret_cast<decltype(&hipPeekAtLastError)>(dlsym(fake->handle, "hipPeekAtLastError"));
  auto get = reinterpret_cast<decltype(&hipGetLastError)>(dlsym(fake->handle, "hipGetLastError"));
  auto set_device = reinterpret_cast<decltype(&hipSetDevice)>(dlsym(fake->handle, "hipSetDevice"));
  ASSERT_TRUE(peek && get && set_device);
  ASSERT_EQ(set_device(9), hipErrorInvalidDevice);  // the application's own failure, left pending
  const int failed = fake->counter("failed_calls");
  auto after = [&](const char* call) {
    EXPECT_EQ(peek(), hipErrorInvalidDevice) << "after " << call;
    EXPECT_EQ(fake->counter("failed_calls"), failed) << "a HIP call failed in " << call;
  };

  auto runtime = open_hip_runtime();
  ASSERT_TRUE(Succeeds(runtime));
  after("open_hip_runtime");
  EXPECT_EQ(hip_copies(), 1) << "a second libamdhip64 was opened";
  ASSERT_EQ((*runtime)->devices().size(), 1u);
  EXPECT_EQ((*runtime)->devices()[0].str(), "gfx90a:sramecc+:xnack-");
  EXPECT_EQ((*runtime)->devices()[0].runtime_release, "HIP 7.0.51831");
  EXPECT_EQ(fake->counter("properties_r0600"), 1) << "the devices came from the application's instance";

  const std::vector<std::byte> bytes = fixture_bundle();
  auto registry = std::make_unique<Registry>(std::move(*runtime), Config{});
  after("Registry");
  auto binary = registry->register_memory(bytes);
  ASSERT_TRUE(Succeeds(binary));
  after("register_memory");
  auto kernel = registry->lookup_kernel(*binary, 0, "_Z5saxpyfPKfPfi");
  ASSERT_TRUE(Succeeds(kernel));
  EXPECT_NE((*kernel)->handle, 0u);
  after("lookup_kernel");
  ASSERT_TRUE(Succeeds(registry->lookup_global(*binary, 0, "dev_counter")));
  after("lookup_global (found)");
  ASSERT_TRUE(FailsWith(registry->lookup_global(*binary, 0, "no_such_variable"), ErrorKind::NotFound));
  after("lookup_global (missing)");
  ASSERT_TRUE(Succeeds(registry->unregister(*binary)));
  after("unregister");
  registry.reset();
  after("~Registry");
  EXPECT_EQ(fake->counter("module_loads"), 1);
  EXPECT_EQ(fake->counter("live_modules"), 0);
  EXPECT_EQ(hip_copies(), 1);

  EXPECT_EQ(get(), hipErrorInvalidDevice);
  EXPECT_EQ(peek(), hipSuccess);
}

TEST(HipAdopt, AProcessRunningHip7GlobalHasItAdopted) { adopts_hip7(RTLD_GLOBAL); }
TEST(HipAdopt, AProcessRunningHip7LocalHasItAdopted) { adopts_hip7(RTLD_LOCAL); }

// A later major already running, under a name coload does not ask for
// (libamdhip64.so.8): found by its SONAME family and refused from that name,
// never started, and no other libamdhip64 opened beside it.
TEST(HipAdopt, ALaterMajorRunningIsRefusedNotStartedAndNothingOpened) {
  const FakeHip* fake = application_hip(COLOAD_TEST_AMDHIP8_LIBRARY, RTLD_LOCAL);
  if (!fake) GTEST_SKIP() << "the process already holds a libamdhip64 (ctest runs each test alone)";
  auto runtime = open_hip_runtime();
  ASSERT_TRUE(FailsWith(runtime, ErrorKind::UnsupportedVersion));
  EXPECT_TRUE(Contains(runtime.error().message(), "is HIP 8 (its SONAME libamdhip64.so.8; not started)"));
  EXPECT_EQ(fake->counter("init"), 0);
  EXPECT_EQ(hip_copies(), 1);
}

}  // namespace
}  // namespace coload
