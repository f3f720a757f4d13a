// What coload leaves in HIP's per-thread error state, per release, against
// the test HIP library (tests/support/fake_hip), which keeps that state as
// CLR's HIP_RETURN does (docs/embedding.md, "HIP's error state"): no HIP
// call coload makes on the way fails, so hipPeekAtLastError is hipSuccess
// after each, and on HIP 7, where a success does not clear the stored
// error, an error the application had pending is still the one pending.
#include <dlfcn.h>
#include <gtest/gtest.h>
#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__ 1
#endif
#include <hip/hip_runtime_api.h>  // the entry points' types: calls through dlsym must use them (UBSan)

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

using testing::FailsWith;
using testing::FakeHip;
using testing::hip_options;
using testing::Succeeds;

const std::filesystem::path kFixtures = COLOAD_FIXTURE_DIR;

/// Two bundles back to back, one gfx90a code object (v5) each: the first
/// defines no device variable but its kernel's cuid, the second
/// dev_counter and dev_coeffs. The registry loads both for a gfx90a and asks
/// them in that order.
std::vector<std::byte> two_modules() {
  auto bundle = [](const char* fixture) {
    return testing::write_plain_bundle(
        {{"host-x86_64-unknown-linux-gnu-", {}},
         {"hipv4-amdgcn-amd-amdhsa--gfx90a", testing::read_file((kFixtures / fixture).string())}});
  };
  std::vector<std::byte> bytes = bundle("check/kernel_args-cov5.co");
  testing::append(bytes, bundle("co/gfx90a-cov5.co"));
  return bytes;
}

const char* library_of(int major) {
  switch (major) {
    case 5: return COLOAD_TEST_HIP5_LIBRARY;
    case 6: return COLOAD_TEST_HIP6_LIBRARY;
    default: return COLOAD_TEST_HIP7_LIBRARY;
  }
}

/// The application's side: HIP's own error functions and a call of its own.
struct Application {
  explicit Application(void* handle)
      : peek(reinterpret_cast<decltype(&hipPeekAtLastError)>(dlsym(handle, "hipPeekAtLastError"))),
        get(reinterpret_cast<decltype(&hipGetLastError)>(dlsym(handle, "hipGetLastError"))),
        set_device(reinterpret_cast<decltype(&hipSetDevice)>(dlsym(handle, "hipSetDevice"))) {}
  decltype(&hipPeekAtLastError) peek;
  decltype(&hipGetLastError) get;
  decltype(&hipSetDevice) set_device;
};

// Every coload call on the HIP path, one after another: the runtime opened,
// the registry made, a binary registered, a kernel looked up (which loads
// both modules and probes every kernel), a global found in the second module
// and one found in neither, the binary unregistered. After each, HIP's
// stored error is the one the application left (HIP 7) or hipSuccess (5 and
// 6, where every call's status replaces it), and no HIP call failed.
TEST(HipErrorState, NoCallLeavesAnErrorAndAPendingOneSurvivesOnHip7) {
  const std::vector<std::byte> bytes = two_modules();
  for (auto [major, release] : {std::pair{5, "5.2"}, std::pair{6, "6.2"}, std::pair{7, "7.0"}}) {
    SCOPED_TRACE(release);
    const FakeHip& fake = FakeHip::at(library_of(major));
    ASSERT_TRUE(fake.reset) << dlerror();
    fake.reset();
    ASSERT_EQ(fake.set_release(release), 0);
    fake.add_device("gfx90a:sramecc+:xnack-", 65536, 64);
    Application app(fake.handle);
    ASSERT_TRUE(app.peek && app.get && app.set_device);

    // The application's own failing call leaves an error pending.
    ASSERT_EQ(app.set_device(7), hipErrorInvalidDevice);
    ASSERT_EQ(app.peek(), hipErrorInvalidDevice);
    const hipError_t pending = major >= 7 ? hipErrorInvalidDevice : hipSuccess;
    const int failed = fake.counter("failed_calls");
    auto after = [&](const char* call) {
      EXPECT_EQ(app.peek(), pending) << "after " << call;
      EXPECT_EQ(fake.counter("failed_calls"), failed) << "a HIP call failed in " << call;
    };

    auto runtime = open_hip_runtime(hip_options(library_of(major)));
    ASSERT_TRUE(Succeeds(runtime));
    after("open_hip_runtime");
    auto registry = std::make_unique<Registry>(std::move(*runtime), Config{});
    after("Registry");
    auto binary = registry->register_memory(bytes);
    ASSERT_TRUE(Succeeds(binary));
    after("register_memory");
    ASSERT_TRUE(Succeeds(registry->lookup_kernel(*binary, 0, "many_args")));
    ASSERT_EQ(fake.counter("module_loads"), 2);
    after("lookup_kernel");
    auto counter = registry->lookup_global(*binary, 0, "dev_counter");
    ASSERT_TRUE(Succeeds(counter));
    EXPECT_EQ(counter->size, 4u);
    after("lookup_global (found in the second module)");
    auto missing = registry->lookup_global(*binary, 0, "no_such_variable");
    ASSERT_TRUE(FailsWith(missing, ErrorKind::NotFound));
    after("lookup_global (in neither module)");
    ASSERT_TRUE(Succeeds(registry->unregister(*binary)));
    EXPECT_EQ(fake.counter("live_modules"), 0);
    after("unregister");
    registry.reset();
    after("~Registry");

    // hipGetLastError hands the pending error back once.
    EXPECT_EQ(app.get(), major >= 7 ? hipErrorInvalidDevice : hipSuccess);
    EXPECT_EQ(app.peek(), hipSuccess);
  }
}

// The test library keeps the error as each release does: on HIP 7 a success
// leaves a stored failure and hipErrorNotReady is no failure; before, every
// status replaces it. What the test above relies on, shown directly.
TEST(HipErrorState, TheTestLibraryKeepsTheErrorAsTheReleaseDoes) {
  for (auto [major, release] : {std::pair{6, "6.2"}, std::pair{7, "7.0"}}) {
    SCOPED_TRACE(release);
    const FakeHip& fake = FakeHip::at(library_of(major));
    fake.reset();
    ASSERT_EQ(fake.set_release(release), 0);
    fake.add_device("gfx1100", 65536, 32);
    Application app(fake.handle);
    EXPECT_EQ(app.set_device(3), hipErrorInvalidDevice);
    EXPECT_EQ(app.set_device(0), hipSuccess);
    EXPECT_EQ(app.peek(), major >= 7 ? hipErrorInvalidDevice : hipSuccess);
    EXPECT_EQ(app.peek(), major >= 7 ? hipErrorInvalidDevice : hipSuccess) << "peeking keeps it";
    EXPECT_EQ(app.get(), major >= 7 ? hipErrorInvalidDevice : hipSuccess);
    EXPECT_EQ(app.get(), hipSuccess) << "getting resets it";
    fake.fail("hipGetDevice", hipErrorNotReady);
    int device = -1;
    auto get_device = reinterpret_cast<decltype(&hipGetDevice)>(dlsym(fake.handle, "hipGetDevice"));
    EXPECT_EQ(get_device(&device), hipErrorNotReady);
    EXPECT_EQ(app.peek(), major >= 7 ? hipSuccess : hipErrorNotReady);
  }
}

}  // namespace
}  // namespace coload
