// The HIP backend against the test HIP library (tests/support/fake_hip), so
// its real call sequence runs without a GPU, and against Debian's real
// libamdhip64.so.5 where there is no GPU: a clear error, never a crash.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "coload/code_object.h"
#include "coload/runtime.h"
#include "hip_test_support.h"
#include "support/bundle_writer.h"
#include "test_util.h"

namespace coload {
namespace {

using testing::Bytes;
using testing::FailsAtField;
using testing::FailsWith;
using testing::hip_options;
using testing::Succeeds;

const std::filesystem::path kFixtures = COLOAD_FIXTURE_DIR;
constexpr const char* kTestHip = COLOAD_TEST_HIP_LIBRARY;

// hipError_t values of HIP 5 (hip_runtime_api.h); the test does not include HIP.
constexpr int kNoDevice = 100;
constexpr int kInvalidImage = 200;
constexpr int kNoBinaryForGpu = 209;

using testing::Contains;
using testing::FakeHip;

class HipRuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fake.reset && fake.counter) << "cannot load the test HIP library " << kTestHip << ": " << dlerror();
    fake.reset();
  }
  void TearDown() override {
    EXPECT_EQ(fake.counter("live_modules"), 0) << "a module stayed loaded";
    EXPECT_EQ(fake.counter("bad_unloads"), 0) << "a module was unloaded twice or never loaded";
    EXPECT_EQ(fake.counter("module_loads"), fake.counter("module_unloads"));
  }

  Expected<std::unique_ptr<Runtime>> open() { return open_hip_runtime(hip_options(kTestHip)); }

  /// Two devices: gfx90a (wave64) and gfx1100 (wave32).
  void two_devices() {
    fake.add_device("gfx90a:sramecc+:xnack-", 65536, 64);
    fake.add_device("gfx1100", 65536, 32);
  }

  /// Two devices the gfx90a fixture (xnack and sramecc Any) loads on.
  void two_gfx90a() {
    fake.add_device("gfx90a:sramecc+:xnack-", 65536, 64);
    fake.add_device("gfx90a:sramecc-:xnack+", 65536, 64);
  }

  /// The toolchain-built gfx90a object, its bytes owned by a shared_ptr.
  struct Fixture {
    std::shared_ptr<const Bytes> bytes;
    CodeObject code_object;
    Image image() const { return Image{*bytes, bytes}; }
  };
  static Fixture gfx90a() {
    auto bytes = std::make_shared<const Bytes>(testing::read_file((kFixtures / "co/gfx90a.co").string()));
    auto code_object = CodeObject::read(*bytes);
    EXPECT_TRUE(Succeeds(code_object));
    return Fixture{bytes, std::move(*code_object)};
  }

  const FakeHip& fake = FakeHip::at(kTestHip);
};

TEST_F(HipRuntimeTest, DevicesFromArchNameAndAttributes) {
  two_devices();
  auto runtime = open();
  ASSERT_TRUE(Succeeds(runtime));
  EXPECT_EQ((*runtime)->name(), "hip");
  auto devices = (*runtime)->devices();
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].str(), "gfx90a:sramecc+:xnack-");
  EXPECT_TRUE(devices[0].target.is_concrete());
  EXPECT_EQ(devices[0].lds_bytes, 65536u);
  EXPECT_EQ(devices[0].wave_sizes, kWave64);
  EXPECT_EQ(devices[1].str(), "gfx1100");
  EXPECT_EQ(devices[1].wave_sizes, kWave32 | kWave64);                           // RDNA runs both; HIP reports 32
  EXPECT_EQ(devices[0].code_object_versions, (std::vector<unsigned>{4, 5, 6}));  // the test library is HIP 7.0
  EXPECT_TRUE(devices[0].loads_generic);
  EXPECT_EQ(devices[0].runtime_release, "HIP 7.0.51831");
}

TEST_F(HipRuntimeTest, NoDevicesIsNotFound) {
  auto runtime = open();
  ASSERT_TRUE(FailsWith(runtime, ErrorKind::NotFound));
  EXPECT_TRUE(Contains(runtime.error().message(), "no AMD GPU"));
  EXPECT_TRUE(Contains(runtime.error().message(), "hipGetDeviceCount failed with hipErrorNoDevice (100)"));
  EXPECT_TRUE(Contains(runtime.error().message(), "no ROCm-capable device is detected"));
}

TEST_F(HipRuntimeTest, DeviceCountFailingWithNoDeviceIsNotFound) {
  two_devices();
  fake.fail("hipGetDeviceCount", kNoDevice);
  auto runtime = open();
  ASSERT_TRUE(FailsWith(runtime, ErrorKind::NotFound));
  EXPECT_TRUE(Contains(runtime.error().message(), "no AMD GPU: HIP hipGetDeviceCount failed with hipErrorNoDevice"));
}

TEST_F(HipRuntimeTest, EveryHipReleaseReadsItsLayoutAndLoadsItsVersions) {
  struct Release {
    int version;
    bool r0600;  // reads hipDeviceProp_tR0600 through hipGetDevicePropertiesR0600
    std::vector<unsigned> versions;
    bool generic;
  };
  // docs/loading.md, "HIP releases".
  for (const Release& release : {Release{50013601, false, {4}, false}, Release{50120532, false, {4}, false},
                                 Release{50221153, false, {4, 5}, false}, Release{60032830, true, {4, 5}, false},
                                 Release{60140092, true, {4, 5}, false}, Release{60241134, true, {4, 5, 6}, false},
                                 Release{60342131, true, {4, 5, 6}, false}, Release{60443483, true, {4, 5, 6}, true},
                                 Release{70051831, true, {4, 5, 6}, true}}) {
    fake.reset();
    two_devices();
    fake.set_version(release.version);
    auto runtime = open();
    ASSERT_TRUE(Succeeds(runtime)) << release.version;
    auto devices = (*runtime)->devices();
    ASSERT_EQ(devices.size(), 2u) << release.version;
    EXPECT_EQ(devices[0].str(), "gfx90a:sramecc+:xnack-") << release.version;
    EXPECT_EQ(devices[1].str(), "gfx1100") << release.version;
    EXPECT_EQ(devices[0].code_object_versions, release.versions) << release.version;
    EXPECT_EQ(devices[0].loads_generic, release.generic) << release.version;
    EXPECT_EQ(fake.counter("properties_r0600"), release.r0600 ? 2 : 0) << release.version;
    EXPECT_EQ(fake.counter("properties_r0000"), release.r0600 ? 0 : 2) << release.version;
  }
}

TEST_F(HipRuntimeTest, AHipMajorOutsideFiveToSevenIsUnsupportedVersion) {
  for (int version : {40400000, 80000000}) {
    fake.reset();
    two_devices();
    fake.set_version(version);
    auto runtime = open();
    ASSERT_TRUE(FailsWith(runtime, ErrorKind::UnsupportedVersion)) << version;
    EXPECT_TRUE(Contains(runtime.error().message(), "HIP 5 to 7 only")) << runtime.error().message();
    EXPECT_EQ(fake.counter("properties_r0000") + fake.counter("properties_r0600"), 0);
  }
}

// Of every device, one coload cannot reconcile is left out and named in a
// warning; the others keep their HIP ordinals. Named by the caller, it fails.
TEST_F(HipRuntimeTest, UnknownArchNameIsLeftOutAndNamed) {
  fake.add_device("gfx9999", 65536, 64);
  fake.add_device("gfx90a:sramecc+:xnack-", 65536, 64);
  auto runtime = open();
  ASSERT_TRUE(Succeeds(runtime));
  ASSERT_EQ((*runtime)->devices().size(), 1u);
  EXPECT_EQ((*runtime)->devices()[0].str(), "gfx90a:sramecc+:xnack-");
  ASSERT_EQ((*runtime)->warnings().size(), 1u);
  EXPECT_TRUE(Contains((*runtime)->warnings()[0], "gcnArchName 'gfx9999' of device 0"));
  EXPECT_TRUE(Contains((*runtime)->warnings()[0], "; this GPU is left out"));
  // Device 0 is HIP ordinal 1: the test library refuses gfx90a code on ordinal 0.
  Fixture fixture = gfx90a();
  EXPECT_TRUE(Succeeds((*runtime)->load(0, fixture.image(), fixture.code_object)));

  HipOptions named = hip_options(kTestHip);
  named.devices = std::vector<int>{1, 0};
  auto refused = open_hip_runtime(named);
  ASSERT_TRUE(FailsWith(refused, ErrorKind::NotFound));
  EXPECT_TRUE(Contains(refused.error().message(), "gcnArchName 'gfx9999' of device 0"));
}

// A mode gcnArchName leaves out is one the device does not report (gfx90c under current ROCm).
TEST_F(HipRuntimeTest, ArchNameWithoutFeatureModesHasNoSuchModes) {
  fake.add_device("gfx90c", 65536, 64);
  fake.add_device("gfx90a:xnack-", 65536, 64);
  auto runtime = open();
  ASSERT_TRUE(Succeeds(runtime));
  auto devices = (*runtime)->devices();
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].target.xnack, FeatureState::Unsupported);
  EXPECT_EQ(devices[1].target.xnack, FeatureState::Off);
  EXPECT_EQ(devices[1].target.sramecc, FeatureState::Unsupported);
}

TEST_F(HipRuntimeTest, GenericArchNameIsMalformed) {
  fake.add_device("gfx9-generic", 65536, 64);
  HipOptions named = hip_options(kTestHip);
  named.devices = std::vector<int>{0};
  auto runtime = open_hip_runtime(named);
  ASSERT_TRUE(FailsWith(runtime, ErrorKind::Malformed));
  EXPECT_TRUE(Contains(runtime.error().message(), "gcnArchName 'gfx9-generic' of device 0"));
  EXPECT_TRUE(Contains(runtime.error().message(), "names the generic target gfx9-generic, not a device"));
  // Among every device it is left out; with none left, there is no GPU.
  auto every = open();
  ASSERT_TRUE(FailsWith(every, ErrorKind::NotFound));
  EXPECT_TRUE(Contains(every.error().message(), "no GPU coload can describe (1 left out): HIP "));
}

TEST_F(HipRuntimeTest, AttributeFailureNamesTheFunction) {
  two_devices();
  fake.fail("hipDeviceGetAttribute", 101);  // hipErrorInvalidDevice
  auto runtime = open();
  ASSERT_TRUE(FailsWith(runtime, ErrorKind::NotFound));
  EXPECT_TRUE(Contains(runtime.error().message(),
                       "hipDeviceGetAttribute failed with hipErrorInvalidDevice (101) for "
                       "hipDeviceAttributeMaxSharedMemoryPerBlock of device 0"));
}

TEST_F(HipRuntimeTest, LibraryWithoutHipIsUnsupportedVersion) {
  auto runtime = open_hip_runtime(hip_options("libz.so.1"));
  ASSERT_TRUE(FailsWith(runtime, ErrorKind::UnsupportedVersion));
  EXPECT_TRUE(Contains(runtime.error().message(), "lacks hipGetErrorName"));
}

TEST_F(HipRuntimeTest, LoadsTheFixtureAndProbesEveryKernel) {
  two_devices();
  auto runtime = open();
  ASSERT_TRUE(Succeeds(runtime));
  Fixture fixture = gfx90a();
  ASSERT_FALSE(fixture.code_object.kernels().empty());
  auto module = (*runtime)->load(0, fixture.image(), fixture.code_object);
  ASSERT_TRUE(Succeeds(module));
  EXPECT_EQ(fake.counter("module_loads"), 1);
  EXPECT_EQ(fake.counter("live_modules"), 1);

  auto kernels = (*module)->kernels();
  ASSERT_EQ(kernels.size(), fixture.code_object.kernels().size());
  std::set<std::uint64_t> handles;
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    const Kernel& expected = fixture.code_object.kernels()[i];
    SCOPED_TRACE(expected.name);
    EXPECT_EQ(kernels[i].name, expected.name);
    EXPECT_EQ(kernels[i].symbol, expected.symbol);
    EXPECT_NE(kernels[i].handle, 0u);
    handles.insert(kernels[i].handle);
    EXPECT_EQ(kernels[i].kernarg_segment_size, expected.kernarg_segment_size);
    EXPECT_EQ(kernels[i].kernarg_segment_align, expected.kernarg_segment_align);
    EXPECT_EQ(kernels[i].group_segment_size, expected.group_segment_fixed_size);
    EXPECT_EQ(kernels[i].private_segment_size, expected.private_segment_fixed_size);
  }
  EXPECT_EQ(handles.size(), kernels.size()) << "every kernel has its own hipFunction_t";
  EXPECT_EQ((*module)->code_object().kernels().size(), kernels.size());

  module->reset();
  EXPECT_EQ(fake.counter("module_unloads"), 1);
}

TEST_F(HipRuntimeTest, KeepsTheImageOwnerAliveUntilUnload) {
  two_devices();
  auto runtime = open();
  ASSERT_TRUE(Succeeds(runtime));
  Fixture fixture = gfx90a();
  std::weak_ptr<const Bytes> watch = fixture.bytes;
  auto module = (*runtime)->load(0, fixture.image(), fixture.code_object);
  ASSERT_TRUE(Succeeds(module));
  fixture.bytes.reset();
  EXPECT_FALSE(watch.expired());
  module->reset();
  EXPECT_TRUE(watch.expired());
}

TEST_F(HipRuntimeTest, LoadRestoresTheCallersCurrentDevice) {
  two_gfx90a();
  auto runtime = open();
  ASSERT_TRUE(Succeeds(runtime));
  Fixture fixture = gfx90a();
  auto module = (*runtime)->load(1, fixture.image(), fixture.code_object);
  ASSERT_TRUE(Succeeds(module));
  EXPECT_EQ(fake.counter("current_device"), 0);
}

TEST_F(HipRuntimeTest, InvalidImageIsMalformedAndLeavesNothingLoaded) {
  two_devices();
  fake.fail("hipModuleLoadData", kInvalidImage);
  auto runtime = open();
  ASSERT_TRUE(Succeeds(runtime));
  Fixture fixture = gfx90a();
  auto module = (*runtime)->load(0, fixture.image(), fixture.code_object);
  ASSERT_TRUE(FailsWith(module, ErrorKind::Malformed));
  EXPECT_TRUE(Contains(module.error().message(), "hipModuleLoadData failed with hipErrorInvalidImage (200)"));
  EXPECT_TRUE(Contains(module.error().message(), "on device 0 (gfx90a:sramecc+:xnack-)"));
  EXPECT_EQ(fake.counter("current_device"), 0);
}

TEST_F(HipRuntimeTest, NoBinaryForGpuIsInvalidArgument) {
  two_devices();
  fake.fail("hipModuleLoadData", kNoBinaryForGpu);
  auto runtime = open();
  ASSERT_TRUE(Succeeds(runtime));
  Fixture fixture = gfx90a();
  auto module = (*runtime)->load(1, fixture.image(), fixture.code_object);
  ASSERT_TRUE(FailsWith(module, ErrorKind::InvalidArgument));
  EXPECT_TRUE(Contains(module.error().message(), "hipModuleLoadData failed with hipErrorNoBinaryForGpu (209)"));
  EXPECT_EQ(fake.counter("current_device"), 0);
}

TEST_F(HipRuntimeTest, MissingKernelIsNotFoundAndUnloadsTheModule) {
  two_devices();
  auto runtime = open();
  ASSERT_TRUE(Succeeds(runtime));
  Fixture fixture = gfx90a();
  const std::string missing = fixture.code_object.kernels().back().name;
  fake.hide_kernel(missing.c_str());
  auto module = (*runtime)->load(0, fixture.image(), fixture.code_object);
  ASSERT_TRUE(FailsWith(module, ErrorKind::NotFound));
  EXPECT_TRUE(Contains(module.error().message(), "hipModuleGetFunction failed with hipErrorNotFound (500)"));
  EXPECT_TRUE(Contains(module.error().message(), "for kernel '" + missing + "'"));
  EXPECT_EQ(fake.counter("module_loads"), 1);
  EXPECT_EQ(fake.counter("module_unloads"), 1);
}

TEST_F(HipRuntimeTest, BadDeviceAndShortImageAreRefusedBeforeHip) {
  two_devices();
  auto runtime = open();
  ASSERT_TRUE(Succeeds(runtime));
  Fixture fixture = gfx90a();
  EXPECT_TRUE(FailsWith((*runtime)->load(2, fixture.image(), fixture.code_object), ErrorKind::InvalidArgument));
  std::span<const std::byte> all(*fixture.bytes);
  Image short_image{all.first(64), nullptr};
  EXPECT_TRUE(FailsWith((*runtime)->load(0, short_image, fixture.code_object), ErrorKind::OutOfBounds));
  EXPECT_EQ(fake.counter("module_loads"), 0);
  EXPECT_EQ(fake.counter("set_device"), 0);
}

TEST_F(HipRuntimeTest, LoadsFromManyThreads) {
  two_gfx90a();
  auto runtime = open();
  ASSERT_TRUE(Succeeds(runtime));
  Fixture fixture = gfx90a();
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        auto module = (*runtime)->load(static_cast<std::size_t>((t + i) % 2), fixture.image(), fixture.code_object);
        if (!module) ++failures;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(fake.counter("module_loads"), 160);
}

Expected<std::unique_ptr<Runtime>> open_on(std::vector<int> ordinals) {
  HipOptions options = hip_options(kTestHip);
  options.devices = std::move(ordinals);
  return open_hip_runtime(options);
}

TEST_F(HipRuntimeTest, TheCallersOrdinalsAreTheDevicesInTheirOrder) {
  two_devices();
  fake.add_device("gfx942:sramecc+:xnack-", 65536, 64);
  auto runtime = open_on({2, 0});
  ASSERT_TRUE(Succeeds(runtime));
  auto devices = (*runtime)->devices();
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].str(), "gfx942:sramecc+:xnack-");
  EXPECT_EQ(devices[1].str(), "gfx90a:sramecc+:xnack-");
  Fixture fixture = gfx90a();
  auto module = (*runtime)->load(1, fixture.image(), fixture.code_object);  // HIP ordinal 0
  ASSERT_TRUE(Succeeds(module));
  // The fake answers hipModuleGetGlobal only on the module's own device.
  EXPECT_TRUE(Succeeds((*module)->global("dev_counter")));
  fake.fail("hipModuleLoadData", kInvalidImage);
  auto failed = (*runtime)->load(0, fixture.image(), fixture.code_object);
  ASSERT_TRUE(FailsWith(failed, ErrorKind::Malformed));
  EXPECT_TRUE(Contains(failed.error().message(), "on device 0 (gfx942:sramecc+:xnack-, HIP ordinal 2)"));
  EXPECT_EQ(fake.counter("current_device"), 0);
}

TEST_F(HipRuntimeTest, ACallersOrdinalOutOfRangeOrRepeatedIsInvalidArgument) {
  two_devices();
  auto past = open_on({0, 2});
  EXPECT_TRUE(FailsAtField(past, ErrorKind::InvalidArgument, "hip_devices[1]", std::nullopt, 2, 2));
  EXPECT_TRUE(FailsWith(open_on({-1}), ErrorKind::InvalidArgument));
  auto repeated = open_on({1, 0, 1});
  EXPECT_TRUE(FailsAtField(repeated, ErrorKind::InvalidArgument, "hip_devices[2]", std::nullopt, 1));
  EXPECT_TRUE(Contains(repeated.error().message(), "repeats hip_devices[0]"));
  EXPECT_TRUE(FailsWith(open_on({}), ErrorKind::InvalidArgument));
}

// FakeHip::get() loaded the library by its path; its bare file name is in no
// search path, so only the process's copy (RTLD_NOLOAD) answers to it, before
// libamdhip64.so.6 or .so.5 would be opened.
TEST_F(HipRuntimeTest, TheProcesssCopyOfTheLibraryIsUsed) {
  two_devices();
  auto runtime = open_hip_runtime(hip_options("libcoload_test_hip.so"));
  ASSERT_TRUE(Succeeds(runtime));
  EXPECT_EQ((*runtime)->devices().size(), 2u);
}

TEST_F(HipRuntimeTest, GlobalsThroughHipModuleGetGlobal) {
  two_gfx90a();
  auto runtime = open();
  ASSERT_TRUE(Succeeds(runtime));
  Fixture fixture = gfx90a();
  auto module = (*runtime)->load(1, fixture.image(), fixture.code_object);
  ASSERT_TRUE(Succeeds(module));
  auto counter = (*module)->global("dev_counter");
  ASSERT_TRUE(Succeeds(counter));
  EXPECT_EQ(counter->size, 4u);
  EXPECT_NE(counter->address, 0u);
  auto coeffs = (*module)->global("dev_coeffs");
  ASSERT_TRUE(Succeeds(coeffs));
  EXPECT_EQ(coeffs->size, 16u);
  EXPECT_NE(coeffs->address, counter->address);
  EXPECT_EQ(fake.counter("current_device"), 0) << "the caller's device is put back";

  // A name the code object defines no variable of is NotFound from its
  // symbol table: HIP is not asked, so no miss stays in its error state.
  const int set_device_calls = fake.counter("set_device");
  const std::string kernel = fixture.code_object.kernels().front().name;
  auto not_a_variable = (*module)->global(kernel);
  ASSERT_TRUE(FailsWith(not_a_variable, ErrorKind::NotFound));
  EXPECT_EQ(not_a_variable.error().message(), "global variable \"" + kernel +
                                                  "\" not found in the code object for gfx90a (3 variables): it "
                                                  "names kernel \"" +
                                                  kernel + "\", not a variable");
  auto missing = (*module)->global("no_such_variable");
  ASSERT_TRUE(FailsWith(missing, ErrorKind::NotFound));
  EXPECT_EQ(missing.error().message(),
            "global variable \"no_such_variable\" not found in the code object for gfx90a (3 variables)");
  EXPECT_EQ(fake.counter("failed_calls"), 0);
  EXPECT_EQ(fake.counter("set_device"), set_device_calls) << "HIP was asked";
  fake.fail("hipModuleGetGlobal", kInvalidImage);
  EXPECT_TRUE(FailsWith((*module)->global("dev_counter"), ErrorKind::Malformed));
}

// Debian's HIP 5.2.3 on a machine without a GPU: hipGetDeviceCount gives
// hipErrorNoDevice (docs/loading.md), which must arrive as NotFound.
TEST(HipRealRuntime, NoGpuIsAClearError) {
  void* probe = dlopen("libamdhip64.so.5", RTLD_NOW | RTLD_LOCAL);
  if (!probe) GTEST_SKIP() << "libamdhip64.so.5 is not installed (package libamdhip64-5)";
  dlclose(probe);
  auto runtime = open_hip_runtime(hip_options("libamdhip64.so.5"));
  if (runtime) GTEST_SKIP() << "a GPU is present: " << (*runtime)->devices().size() << " devices";
  ASSERT_TRUE(FailsWith(runtime, ErrorKind::NotFound));
  EXPECT_TRUE(Contains(runtime.error().message(), "no AMD GPU"));
  EXPECT_TRUE(Contains(runtime.error().message(), "hipGetDeviceCount"));
  EXPECT_TRUE(Contains(runtime.error().message(), "libamdhip64.so.5"));
}

}  // namespace
}  // namespace coload
