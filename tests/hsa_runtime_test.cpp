// The HSA backend against the test HSA library (tests/support/fake_hsa), which
// runs coload's real call sequence without a GPU, and against Debian's real
// libhsa-runtime64.so.1 on this GPU-less machine.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "coload/code_object.h"
#include "coload/runtime.h"
#include "load/hsa_library.h"
#include "load/hsa_runtime.h"
#include "test_util.h"

namespace coload {
namespace {

using testing::FailsAtField;
using testing::FailsWith;
using testing::Succeeds;

/// Asserts that `text` contains `part`.
::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << text << "' does not contain '" << part << "'";
}

/// The fake library's control functions, reached through its own handle (the
/// same loaded object coload dlopens, so the script and counters are shared).
class FakeHsaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    handle_ = dlopen(COLOAD_TEST_HSA_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
    script_ = reinterpret_cast<int (*)(const char*)>(dlsym(handle_, "coload_test_hsa_script"));
    counter_ = reinterpret_cast<long (*)(const char*)>(dlsym(handle_, "coload_test_hsa_counter"));
    ASSERT_NE(script_, nullptr);
    ASSERT_NE(counter_, nullptr);
    hsa::forget_failed_inits();  // a test's failing hsa_init must not stand for the next test's
  }
  void TearDown() override {
    if (handle_) dlclose(handle_);
  }

  void script(const char* text) { ASSERT_EQ(script_(text), 0) << text; }
  long counter(const char* name) { return counter_(name); }

  Expected<std::unique_ptr<Runtime>> open() {
    HsaOptions options;
    options.library = COLOAD_TEST_HSA_LIBRARY;
    return open_hsa_runtime(options);
  }

  /// Every reader and executable created was destroyed, executables first.
  void expect_all_destroyed() {
    EXPECT_EQ(counter("readers_created"), counter("readers_destroyed"));
    EXPECT_EQ(counter("executables_created"), counter("executables_destroyed"));
    EXPECT_EQ(counter("order_violations"), 0);
  }

  void* handle_ = nullptr;
  int (*script_)(const char*) = nullptr;
  long (*counter_)(const char*) = nullptr;
};

struct Fixture {
  std::shared_ptr<std::vector<std::byte>> bytes;
  CodeObject code_object;
  Image image() const { return Image{*bytes, bytes}; }
};

Fixture read_fixture(const std::string& name) {
  std::string path = std::string(COLOAD_FIXTURE_DIR) + "/co/" + name;
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto bytes = std::make_shared<std::vector<std::byte>>(chars.size());
  std::memcpy(bytes->data(), chars.data(), chars.size());
  auto code_object = CodeObject::read(*bytes);
  EXPECT_TRUE(Succeeds(code_object)) << path;
  if (!code_object) std::abort();  // the fixtures are built by the toolchain: a bug here, not input
  return Fixture{bytes, std::move(*code_object)};
}

TargetId target(const char* text) { return *TargetId::parse(text); }

TEST_F(FakeHsaTest, DevicesFromSeveralAgentsSkipCpus) {
  script(
      "cpu\n"
      "gpu gfx90a:sramecc+:xnack- lds=65536 wave=64 asic=1\n"
      "cpu\n"
      "gpu gfx1100 lds=65536 wave=32\n"
      "gpu gfx950:sramecc-:xnack+,gfx9-4-generic:sramecc-:xnack+ lds=163840 wave=64 asic=2\n");
  {
    auto runtime = open();
    ASSERT_TRUE(Succeeds(runtime));
    EXPECT_EQ((*runtime)->name(), "hsa");
    auto devices = (*runtime)->devices();
    ASSERT_EQ(devices.size(), 3u);
    EXPECT_EQ(devices[0].target, target("gfx90a:sramecc+:xnack-"));
    EXPECT_EQ(devices[0].lds_bytes, 65536u);
    EXPECT_EQ(devices[0].wave_sizes, kWave64);
    EXPECT_EQ(devices[0].asic_revision, 1u);
    EXPECT_EQ(devices[1].target, target("gfx1100"));
    EXPECT_EQ(devices[1].wave_sizes, kWave32 | kWave64);
    EXPECT_EQ(devices[1].asic_revision, std::nullopt);
    // The first ISA is the native one; the generic one listed after it is not the device.
    EXPECT_EQ(devices[2].str(), "gfx950:sramecc-:xnack+");
    EXPECT_EQ(devices[2].lds_bytes, 163840u);
    // The fake is versioned as a ROCr 1.14 built outside ROCm (.so.1.14.0), which loads v6.
    EXPECT_EQ(devices[2].code_object_versions, (std::vector<unsigned>{4, 5, 6}));
    EXPECT_EQ(devices[2].runtime_release, "ROCr 1.14.0");
    // Generic code where the agent lists its family's generic ISA (this script lists it).
    EXPECT_TRUE(devices[2].loads_generic);
    EXPECT_FALSE(devices[0].loads_generic);
    EXPECT_TRUE((*runtime)->warnings().empty());
    EXPECT_EQ(counter("init"), 1);
    EXPECT_EQ(counter("shut_down"), 0);
  }
  EXPECT_EQ(counter("shut_down"), 1);
  EXPECT_EQ(counter("refcount"), 0);
}

// As HIP's hipErrorNoDevice: a caller (the C API's example) falls back to another runtime.
TEST_F(FakeHsaTest, NoGpuAgentIsNotFound) {
  script("cpu; cpu");
  auto runtime = open();
  ASSERT_TRUE(FailsWith(runtime, ErrorKind::NotFound));
  EXPECT_EQ(runtime.error().message(), "no AMD GPU: hsa_iterate_agents reported 2 agent(s), none of them a GPU");
  EXPECT_EQ(counter("shut_down"), 1);
}

TEST_F(FakeHsaTest, HsaInitFailingIsNotFoundWithoutShutDown) {
  script("gpu gfx90a:sramecc+:xnack-; fail hsa_init OUT_OF_RESOURCES");
  auto runtime = open();
  ASSERT_TRUE(FailsWith(runtime, ErrorKind::NotFound));
  EXPECT_TRUE(Contains(runtime.error().message(),
                       "hsa_init failed with HSA_STATUS_ERROR_OUT_OF_RESOURCES (0x1008): no AMD GPU or /dev/kfd "
                       "not available (The runtime failed to allocate"));
  EXPECT_EQ(counter("calls.hsa_shut_down"), 0);
  EXPECT_EQ(counter("calls.hsa_iterate_agents"), 0);
}

TEST_F(FakeHsaTest, FailureAfterInitShutsDownOnce) {
  script("gpu gfx90a:sramecc+:xnack-; fail hsa_iterate_agents ERROR");
  auto runtime = open();
  ASSERT_TRUE(FailsWith(runtime, ErrorKind::Io));
  EXPECT_TRUE(Contains(runtime.error().message(), "hsa_iterate_agents failed with HSA_STATUS_ERROR (0x1000)"));
  EXPECT_EQ(counter("init"), 1);
  EXPECT_EQ(counter("shut_down"), 1);
}

TEST_F(FakeHsaTest, AGpuOfAnUnknownProcessorIsLeftOutAndTheOthersStay) {
  script("gpu gfx90a:sramecc+:xnack-; gpu gfx9999; gpu gfx1100 wave=32");
  auto runtime = open();
  ASSERT_TRUE(Succeeds(runtime));
  auto devices = (*runtime)->devices();
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].str(), "gfx90a:sramecc+:xnack-");
  EXPECT_EQ(devices[1].str(), "gfx1100");
  ASSERT_EQ((*runtime)->warnings().size(), 1u);
  EXPECT_TRUE(Contains((*runtime)->warnings()[0], "HSA agent 1 (GPU 1): ISA name 'amdgcn-amd-amdhsa--gfx9999'"));
  EXPECT_TRUE((*runtime)->warnings()[0].ends_with("; this GPU is left out"));
  Fixture fixture = read_fixture("gfx1100.co");
  auto module = (*runtime)->load(1, fixture.image(), fixture.code_object);  // the gfx1100 agent, not gfx9999's
  ASSERT_TRUE(Succeeds(module));
}

TEST_F(FakeHsaTest, OnlyUnknownProcessorsIsNotFoundNamingTheAgentAndTheIsa) {
  script("cpu; gpu gfx9999");
  auto runtime = open();
  ASSERT_TRUE(FailsWith(runtime, ErrorKind::NotFound));
  EXPECT_TRUE(Contains(runtime.error().message(), "no GPU agent coload can describe (1 left out)"));
  EXPECT_TRUE(Contains(runtime.error().message(), "HSA agent 1 (GPU 0)"));
  EXPECT_TRUE(Contains(runtime.error().message(), "ISA name 'amdgcn-amd-amdhsa--gfx9999'"));
  EXPECT_EQ(counter("shut_down"), 1);
}

// ROCr lists an agent's native ISA first; read in whatever order, the processor is the device.
TEST_F(FakeHsaTest, AGenericIsaListedFirstIsNotTheDevice) {
  script("gpu gfx9-4-generic:sramecc+:xnack-,gfx942:sramecc+:xnack-");
  auto runtime = open();
  ASSERT_TRUE(Succeeds(runtime));
  ASSERT_EQ((*runtime)->devices().size(), 1u);
  EXPECT_EQ((*runtime)->devices()[0].str(), "gfx942:sramecc+:xnack-");
  // A generic ISA before an unknown processor's: the GPU is left out as unknown, in either order.
  for (const char* isas : {"gfx9-4-generic:sramecc+:xnack-,gfx9999", "gfx9999,gfx9-4-generic:sramecc+:xnack-"}) {
    script((std::string("gpu gfx90a:sramecc+:xnack-; gpu ") + isas).c_str());
    auto mixed = open();
    ASSERT_TRUE(Succeeds(mixed)) << isas;
    ASSERT_EQ((*mixed)->devices().size(), 1u) << isas;
  }
}

// Since ROCm PR #8237 ROCr reports gfx902/gfx909/gfx90c bare (xnack unsupported):
// such a GPU is usable, and only code leaving xnack "any" fits it, as in ROCr.
TEST_F(FakeHsaTest, AnApuReportedWithoutXnackIsADeviceWithoutXnackMode) {
  script("gpu gfx1100 wave=32; gpu gfx90c");
  auto runtime = open();
  ASSERT_TRUE(Succeeds(runtime));
  auto devices = (*runtime)->devices();
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[1].str(), "gfx90c");
  EXPECT_EQ(devices[1].target.xnack, FeatureState::Unsupported);
  EXPECT_EQ(feature_mismatch(target("gfx90c"), devices[1].target), "");
  EXPECT_EQ(feature_mismatch(target("gfx90c:xnack-"), devices[1].target), "device has no xnack mode");
  EXPECT_EQ(feature_mismatch(target("gfx90c:xnack+"), devices[1].target), "device has no xnack mode");
}

// A GPU coload cannot square with its table is left out, as an unknown one is.
TEST_F(FakeHsaTest, AWaveSizeTheProcessorLacksLeavesTheGpuOut) {
  script("gpu gfx90a:sramecc+:xnack- wave=32");
  auto runtime = open();
  ASSERT_TRUE(FailsWith(runtime, ErrorKind::NotFound));
  EXPECT_EQ(runtime.error().message(),
            "no GPU agent coload can describe (1 left out): HSA agent 0 (GPU 0): HSA_AGENT_INFO_WAVEFRONT_SIZE is 32 "
            "but gfx90a runs wave64 only");
  script("gpu gfx1100 wave=32; gpu gfx90a:sramecc+:xnack- wave=32");
  auto kept = open();
  ASSERT_TRUE(Succeeds(kept));
  ASSERT_EQ((*kept)->devices().size(), 1u);
  ASSERT_EQ((*kept)->warnings().size(), 1u);
  EXPECT_EQ((*kept)->warnings()[0],
            "HSA agent 1 (GPU 1): HSA_AGENT_INFO_WAVEFRONT_SIZE is 32 but gfx90a runs wave64 only; this GPU is left "
            "out");
}

TEST_F(FakeHsaTest, AgentQueryFailureNamesTheFunction) {
  script("gpu gfx90a:sramecc+:xnack-; fail hsa_amd_agent_iterate_memory_pools OUT_OF_RESOURCES");
  auto runtime = open();
  ASSERT_TRUE(FailsWith(runtime, ErrorKind::Io));
  EXPECT_TRUE(Contains(runtime.error().message(),
                       "hsa_amd_agent_iterate_memory_pools failed with HSA_STATUS_ERROR_OUT_OF_RESOURCES (0x1008)"));
}

TEST(HsaRuntime, MissingLibraryIsIo) {
  HsaOptions options;
  options.library = "/nonexistent/libhsa-runtime64.so.1";
  auto runtime = open_hsa_runtime(options);
  ASSERT_TRUE(FailsWith(runtime, ErrorKind::Io));
  EXPECT_TRUE(Contains(runtime.error().message(), "cannot load the HSA runtime '/nonexistent/libhsa-runtime64.so.1'"));
}

TEST_F(FakeHsaTest, LoadsFixtureKernelsWithHandles) {
  script("gpu gfx1100 wave=32; gpu gfx90a:sramecc+:xnack- lds=65536");
  Fixture fixture = read_fixture("gfx90a.co");
  std::weak_ptr<std::vector<std::byte>> bytes = fixture.bytes;
  auto runtime = open();
  ASSERT_TRUE(Succeeds(runtime));
  {
    auto module = (*runtime)->load(1, fixture.image(), fixture.code_object);
    ASSERT_TRUE(Succeeds(module));
    fixture.bytes.reset();
    EXPECT_FALSE(bytes.expired()) << "the module keeps the bytes alive";
    auto kernels = (*module)->kernels();
    ASSERT_EQ(kernels.size(), fixture.code_object.kernels().size());
    ASSERT_FALSE(kernels.empty());
    for (const Kernel& kernel : fixture.code_object.kernels()) {
      const LoadedKernel* loaded = (*module)->find(kernel.name);
      ASSERT_NE(loaded, nullptr) << kernel.name;
      EXPECT_EQ(loaded->symbol, kernel.symbol);
      EXPECT_NE(loaded->handle, 0u);
      EXPECT_EQ(loaded->kernarg_segment_size, kernel.kernarg_segment_size);
      EXPECT_EQ(loaded->kernarg_segment_align, 16u);
      EXPECT_EQ(loaded->group_segment_size, kernel.group_segment_fixed_size);
      EXPECT_EQ(loaded->private_segment_size, kernel.private_segment_fixed_size);
    }
    EXPECT_EQ((*module)->find("no_such_kernel"), nullptr);
    EXPECT_EQ(&(*module)->code_object().metadata(), &(*module)->code_object().metadata());
    EXPECT_EQ(counter("executables_destroyed"), 0);
  }
  EXPECT_TRUE(bytes.expired()) << "destroying the module releases the bytes";
  expect_all_destroyed();
  EXPECT_EQ(counter("readers_destroyed"), 1);
}

TEST_F(FakeHsaTest, EachAgentLoadsItsOwnIsa) {
  script("gpu gfx90a:sramecc+:xnack-; gpu gfx1100 wave=32; gpu gfx942:sramecc+:xnack-");
  auto runtime = open();
  ASSERT_TRUE(Succeeds(runtime));
  const char* files[] = {"gfx90a.co", "gfx1100.co", "gfx942.co"};
  for (std::size_t device = 0; device < 3; ++device) {
    Fixture fixture = read_fixture(files[device]);
    auto module = (*runtime)->load(device, fixture.image(), fixture.code_object);
    ASSERT_TRUE(Succeeds(module)) << files[device];
    EXPECT_FALSE((*module)->kernels().empty());
  }
  expect_all_destroyed();
  EXPECT_EQ(counter("executables_created"), 3);
}

TEST_F(FakeHsaTest, IsaMismatchIsInvalidArgumentAndCleansUp) {
  script("gpu gfx90a:sramecc+:xnack-; gpu gfx1100 wave=32");
  auto runtime = open();
  ASSERT_TRUE(Succeeds(runtime));
  Fixture fixture = read_fixture("gfx90a.co");
  auto module = (*runtime)->load(1, fixture.image(), fixture.code_object);
  ASSERT_TRUE(FailsWith(module, ErrorKind::InvalidArgument));
  EXPECT_TRUE(Contains(module.error().message(), "HSA device 1 (gfx1100)"));
  EXPECT_TRUE(Contains(module.error().message(), "code object for gfx90a does not run on this agent"));
  EXPECT_TRUE(Contains(module.error().message(),
                       "hsa_executable_load_agent_code_object failed with "
                       "HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS (0x100d)"));
  expect_all_destroyed();
  EXPECT_EQ(counter("executables_created"), 1);
}

TEST_F(FakeHsaTest, XnackMismatchIsInvalidArgument) {
  script("gpu gfx90a:sramecc+:xnack-");
  auto runtime = open();
  ASSERT_TRUE(Succeeds(runtime));
  Fixture fixture = read_fixture("gfx90a_xnack+.co");
  auto module = (*runtime)->load(0, fixture.image(), fixture.code_object);
  ASSERT_TRUE(FailsWith(module, ErrorKind::InvalidArgument));
  EXPECT_TRUE(Contains(module.error().message(), "code object for gfx90a:xnack+ does not run on this agent"));
  expect_all_destroyed();
}

TEST_F(FakeHsaTest, AllocationFailureWhileLoadingDestroysExecutableThenReader) {
  script("gpu gfx90a:sramecc+:xnack-; fail hsa_executable_load_agent_code_object OUT_OF_RESOURCES");
  auto runtime = open();
  ASSERT_TRUE(Succeeds(runtime));
  Fixture fixture = read_fixture("gfx90a.co");
  auto module = (*runtime)->load(0, fixture.image(), fixture.code_object);
  ASSERT_TRUE(FailsWith(module, ErrorKind::Io));
  EXPECT_TRUE(Contains(module.error().message(),
                       "hsa_executable_load_agent_code_object failed with HSA_STATUS_ERROR_OUT_OF_RESOURCES"));
  EXPECT_EQ(counter("readers_created"), 1);
  EXPECT_EQ(counter("executables_created"), 1);
  expect_all_destroyed();
}

TEST_F(FakeHsaTest, ExecutableCreateFailureDestroysTheReader) {
  script("gpu gfx90a:sramecc+:xnack-; fail hsa_executable_create_alt OUT_OF_RESOURCES after=1");
  auto runtime = open();
  ASSERT_TRUE(Succeeds(runtime));
  Fixture fixture = read_fixture("gfx90a.co");
  auto first = (*runtime)->load(0, fixture.image(), fixture.code_object);
  ASSERT_TRUE(Succeeds(first));
  auto second = (*runtime)->load(0, fixture.image(), fixture.code_object);
  ASSERT_TRUE(FailsWith(second, ErrorKind::Io));
  EXPECT_TRUE(
      Contains(second.error().message(), "hsa_executable_create_alt failed with HSA_STATUS_ERROR_OUT_OF_RESOURCES"));
  EXPECT_EQ(counter("readers_created"), 2);
  EXPECT_EQ(counter("readers_destroyed"), 1);
  EXPECT_EQ(counter("executables_destroyed"), 0);
  first = Error(ErrorKind::NotFound, "released");
  expect_all_destroyed();
}

TEST_F(FakeHsaTest, FreezeFailureCleansUp) {
  script("gpu gfx90a:sramecc+:xnack-; fail hsa_executable_freeze ERROR");
  auto runtime = open();
  ASSERT_TRUE(Succeeds(runtime));
  Fixture fixture = read_fixture("gfx90a.co");
  auto module = (*runtime)->load(0, fixture.image(), fixture.code_object);
  ASSERT_TRUE(FailsWith(module, ErrorKind::Io));
  EXPECT_TRUE(Contains(module.error().message(), "hsa_executable_freeze failed with HSA_STATUS_ERROR (0x1000)"));
  expect_all_destroyed();
}

TEST_F(FakeHsaTest, KernelMissingFromExecutableIsNotFound) {
  Fixture fixture = read_fixture("gfx90a.co");
  const Kernel& kernel = fixture.code_object.kernels().back();
  script(("gpu gfx90a:sramecc+:xnack-; missing " + kernel.symbol).c_str());
  auto runtime = open();
  ASSERT_TRUE(Succeeds(runtime));
  auto module = (*runtime)->load(0, fixture.image(), fixture.code_object);
  ASSERT_TRUE(FailsWith(module, ErrorKind::NotFound));
  EXPECT_TRUE(Contains(module.error().message(), "kernel '" + kernel.name + "' (symbol " + kernel.symbol + ")"));
  EXPECT_TRUE(Contains(module.error().message(),
                       "hsa_executable_get_symbol_by_name failed with HSA_STATUS_ERROR_INVALID_SYMBOL_NAME (0x1013)"));
  expect_all_destroyed();
}

TEST_F(FakeHsaTest, DescriptorDisagreeingWithMetadataIsSizeMismatch) {
  Fixture fixture = read_fixture("gfx90a.co");
  const Kernel& kernel = fixture.code_object.kernels().front();
  script(("gpu gfx90a:sramecc+:xnack-; symbol " + kernel.symbol + " kernarg=4096").c_str());
  auto runtime = open();
  ASSERT_TRUE(Succeeds(runtime));
  auto module = (*runtime)->load(0, fixture.image(), fixture.code_object);
  ASSERT_TRUE(FailsWith(module, ErrorKind::SizeMismatch));
  EXPECT_TRUE(Contains(module.error().message(),
                       "HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE (from the kernel descriptor) is 4096 "
                       "but the metadata's .kernarg_segment_size is " +
                           std::to_string(kernel.kernarg_segment_size)));
  expect_all_destroyed();
}

TEST_F(FakeHsaTest, CodeObjectVersionTheRuntimeRefusesIsMalformed) {
  script("gpu gfx90a:sramecc+:xnack-; max_cov 5");
  auto runtime = open();
  ASSERT_TRUE(Succeeds(runtime));
  Fixture v5 = read_fixture("gfx90a-cov5.co");
  EXPECT_TRUE(Succeeds((*runtime)->load(0, v5.image(), v5.code_object)));
  Fixture v6 = read_fixture("gfx90a-cov6.co");
  auto module = (*runtime)->load(0, v6.image(), v6.code_object);
  ASSERT_TRUE(FailsWith(module, ErrorKind::Malformed));
  EXPECT_TRUE(Contains(module.error().message(), "HSA_STATUS_ERROR_INVALID_CODE_OBJECT (0x1010)"));
  expect_all_destroyed();
}

TEST_F(FakeHsaTest, BadDeviceIndexAndEmptyImageAreInvalidArgument) {
  script("gpu gfx90a:sramecc+:xnack-");
  auto runtime = open();
  ASSERT_TRUE(Succeeds(runtime));
  Fixture fixture = read_fixture("gfx90a.co");
  auto module = (*runtime)->load(1, fixture.image(), fixture.code_object);
  ASSERT_TRUE(FailsWith(module, ErrorKind::InvalidArgument));
  EXPECT_TRUE(Contains(module.error().message(), "HSA device 1 does not exist (1 GPU agents)"));
  EXPECT_TRUE(FailsWith((*runtime)->load(0, Image{}, fixture.code_object), ErrorKind::InvalidArgument));
  EXPECT_EQ(counter("readers_created"), 0);
}

TEST_F(FakeHsaTest, ModuleOutlivingTheRuntimeDelaysShutDown) {
  script("gpu gfx90a:sramecc+:xnack-");
  Fixture fixture = read_fixture("gfx90a.co");
  auto runtime = open();
  ASSERT_TRUE(Succeeds(runtime));
  auto module = (*runtime)->load(0, fixture.image(), fixture.code_object);
  ASSERT_TRUE(Succeeds(module));
  runtime = Error(ErrorKind::NotFound, "released");
  EXPECT_EQ(counter("shut_down"), 0);
  module = Error(ErrorKind::NotFound, "released");
  EXPECT_EQ(counter("shut_down"), 1);
  expect_all_destroyed();
}

TEST_F(FakeHsaTest, ConcurrentLoads) {
  script("gpu gfx90a:sramecc+:xnack-; gpu gfx942:sramecc+:xnack-");
  Fixture gfx90a = read_fixture("gfx90a.co");
  Fixture gfx942 = read_fixture("gfx942.co");
  auto runtime = open();
  ASSERT_TRUE(Succeeds(runtime));
  std::atomic<int> loaded{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        const Fixture& fixture = t % 2 ? gfx942 : gfx90a;
        auto module = (*runtime)->load(t % 2, fixture.image(), fixture.code_object);
        if (module && (*module)->find(fixture.code_object.kernels().front().name)) ++loaded;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(loaded.load(), 160);
  expect_all_destroyed();
  EXPECT_EQ(counter("executables_created"), 160);
}

// The caller's agents (the fake's agent i is 0xa0000 + i): exactly those, in that order.
constexpr std::uint64_t kAgent = 0xa0000;

Expected<std::unique_ptr<Runtime>> open_on(std::vector<std::uint64_t> agents) {
  HsaOptions options;
  options.library = COLOAD_TEST_HSA_LIBRARY;
  options.agents = std::move(agents);
  return open_hsa_runtime(options);
}

TEST_F(FakeHsaTest, TheCallersAgentsAreTheDevicesInTheirOrder) {
  script("cpu; gpu gfx90a:sramecc+:xnack-; gpu gfx1100 wave=32; gpu gfx942:sramecc+:xnack-");
  auto runtime = open_on({kAgent + 3, kAgent + 1});
  ASSERT_TRUE(Succeeds(runtime));
  auto devices = (*runtime)->devices();
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].str(), "gfx942:sramecc+:xnack-");
  EXPECT_EQ(devices[1].str(), "gfx90a:sramecc+:xnack-");
  // Device 0 is agent 3: a gfx942 object loads there, a gfx90a one only on device 1.
  Fixture gfx942 = read_fixture("gfx942.co");
  Fixture gfx90a = read_fixture("gfx90a.co");
  EXPECT_TRUE(Succeeds((*runtime)->load(0, gfx942.image(), gfx942.code_object)));
  EXPECT_TRUE(FailsWith((*runtime)->load(0, gfx90a.image(), gfx90a.code_object), ErrorKind::InvalidArgument));
  EXPECT_TRUE(Succeeds((*runtime)->load(1, gfx90a.image(), gfx90a.code_object)));
}

TEST_F(FakeHsaTest, ACallersAgentThatIsNoGpuOfThisRuntimeOrRepeatsIsInvalidArgument) {
  script("cpu; gpu gfx90a:sramecc+:xnack-");
  auto cpu = open_on({kAgent + 1, kAgent});
  ASSERT_TRUE(FailsWith(cpu, ErrorKind::InvalidArgument));
  EXPECT_TRUE(Contains(cpu.error().message(), "hsa_agents[1] = 0xa0000: not a GPU agent of the HSA runtime '"));
  EXPECT_TRUE(Contains(cpu.error().message(), "(1 of its 2 agents are GPUs)"));
  auto foreign = open_on({0x1234});
  EXPECT_TRUE(FailsAtField(foreign, ErrorKind::InvalidArgument, "hsa_agents[0]", std::nullopt, 0x1234));
  EXPECT_TRUE(Contains(foreign.error().message(), "not a GPU agent"));
  auto repeated = open_on({kAgent + 1, kAgent + 1});
  EXPECT_TRUE(FailsAtField(repeated, ErrorKind::InvalidArgument, "hsa_agents[1]", std::nullopt, kAgent + 1));
  EXPECT_TRUE(Contains(repeated.error().message(), "repeats hsa_agents[0]"));
  EXPECT_TRUE(FailsWith(open_on({}), ErrorKind::InvalidArgument));
  EXPECT_EQ(counter("refcount"), 0);
}

// Left out when coload enumerates; refused when the caller names it.
TEST_F(FakeHsaTest, ACallersAgentColoadCannotDescribeIsInvalidArgumentNeverLeftOut) {
  script("gpu gfx90a:sramecc+:xnack-; gpu gfx9999; gpu gfx90a:sramecc+:xnack- wave=32");
  auto unknown = open_on({kAgent, kAgent + 1});
  ASSERT_TRUE(FailsWith(unknown, ErrorKind::InvalidArgument));
  EXPECT_TRUE(Contains(unknown.error().message(), "hsa_agents[1] = 0xa0001: ISA name 'amdgcn-amd-amdhsa--gfx9999'"));
  auto wave = open_on({kAgent + 2});
  ASSERT_TRUE(FailsWith(wave, ErrorKind::InvalidArgument));
  EXPECT_TRUE(Contains(wave.error().message(), "hsa_agents[0] = 0xa0002: HSA_AGENT_INFO_WAVEFRONT_SIZE is 32"));
  // A failing query is no fault of the caller's: it stays Io.
  script("gpu gfx90a:sramecc+:xnack-; fail hsa_agent_iterate_isas ERROR");
  auto query = open_on({kAgent});
  ASSERT_TRUE(FailsWith(query, ErrorKind::Io));
  EXPECT_TRUE(Contains(query.error().message(), "hsa_agents[0] = 0xa0000"));
}

// SetUp loaded the library by its path; its soname is in no search path, so
// only the process's copy (RTLD_NOLOAD) answers to it, with the script's state.
TEST_F(FakeHsaTest, TheProcesssCopyOfTheLibraryIsUsed) {
  script("gpu gfx90a:sramecc+:xnack-");
  HsaOptions options;
  options.library = "libcoload_test_hsa.so.1";
  auto runtime = open_hsa_runtime(options);
  ASSERT_TRUE(Succeeds(runtime));
  ASSERT_EQ((*runtime)->devices().size(), 1u);
  EXPECT_EQ(counter("init"), 1);
  options.library = "libcoload_test_hsa_absent.so.1";
  EXPECT_TRUE(FailsWith(open_hsa_runtime(options), ErrorKind::Io));
}

TEST_F(FakeHsaTest, GlobalsAreTheExecutablesVariableSymbols) {
  script("gpu gfx1100 wave=32; gpu gfx90a:sramecc+:xnack-");
  Fixture fixture = read_fixture("gfx90a.co");
  auto runtime = open();
  ASSERT_TRUE(Succeeds(runtime));
  auto module = (*runtime)->load(1, fixture.image(), fixture.code_object);  // agent 1: the lookup names it
  ASSERT_TRUE(Succeeds(module));
  auto counter_global = (*module)->global("dev_counter");
  ASSERT_TRUE(Succeeds(counter_global));
  EXPECT_EQ(counter_global->size, 4u);
  auto coeffs = (*module)->global("dev_coeffs");
  ASSERT_TRUE(Succeeds(coeffs));
  EXPECT_EQ(coeffs->size, 16u);
  EXPECT_NE(counter_global->address, 0u);
  EXPECT_NE(coeffs->address, counter_global->address);

  const Kernel& kernel = fixture.code_object.kernels().front();
  auto by_name = (*module)->global(kernel.name);
  ASSERT_TRUE(FailsWith(by_name, ErrorKind::NotFound));
  EXPECT_TRUE(Contains(by_name.error().message(),
                       "global variable \"" + kernel.name + "\" not found in the code object for gfx90a"));
  EXPECT_TRUE(Contains(by_name.error().message(), "it names kernel \"" + kernel.name + "\", not a variable"));
  EXPECT_TRUE(Contains(by_name.error().message(), "HSA_STATUS_ERROR_INVALID_SYMBOL_NAME"));
  auto by_symbol = (*module)->global(kernel.symbol);
  ASSERT_TRUE(FailsWith(by_symbol, ErrorKind::NotFound));
  EXPECT_TRUE(
      Contains(by_symbol.error().message(), "HSA_EXECUTABLE_SYMBOL_INFO_TYPE is 1, not HSA_SYMBOL_KIND_VARIABLE"));
  EXPECT_TRUE(FailsWith((*module)->global("no_such_variable"), ErrorKind::NotFound));
}

TEST(HsaRuntime, IsaNames) {
  auto parsed = hsa::parse_isa_name("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-");
  ASSERT_TRUE(Succeeds(parsed));
  EXPECT_EQ(parsed->str(), "gfx90a:sramecc+:xnack-");
  EXPECT_TRUE(FailsWith(hsa::parse_isa_name("gfx90a:sramecc+:xnack-"), ErrorKind::Malformed));
  EXPECT_TRUE(
      FailsWith(hsa::parse_isa_name("amdgcn-amd-amdhsa--gfx9-4-generic:sramecc+:xnack-"), ErrorKind::Malformed));
  EXPECT_TRUE(FailsWith(hsa::parse_isa_name("amdgcn-amd-amdhsa--gfx9999"), ErrorKind::NotFound));
  // A mode the name leaves out is one the device does not report.
  auto bare = hsa::parse_isa_name("amdgcn-amd-amdhsa--gfx90a");
  ASSERT_TRUE(Succeeds(bare));
  EXPECT_EQ(bare->xnack, FeatureState::Unsupported);
  EXPECT_EQ(bare->sramecc, FeatureState::Unsupported);
  EXPECT_EQ(hsa::parse_isa_name("amdgcn-amd-amdhsa--gfx90a:xnack+")->sramecc, FeatureState::Unsupported);
  EXPECT_EQ(hsa::parse_isa_name("amdgcn-amd-amdhsa--gfx90c")->xnack, FeatureState::Unsupported);
  // Always-on xnack written out is kept (that ROCr also names xnack-on objects so); off is refused.
  auto gfx1250 = hsa::parse_isa_name("amdgcn-amd-amdhsa--gfx1250:xnack+");
  ASSERT_TRUE(Succeeds(gfx1250));
  EXPECT_EQ(gfx1250->processor, target("gfx1250").processor);
  EXPECT_EQ(gfx1250->xnack, FeatureState::On);
  EXPECT_TRUE(FailsWith(hsa::parse_isa_name("amdgcn-amd-amdhsa--gfx1250:xnack-"), ErrorKind::Malformed));
}

// Debian's ROCr 5.2.3 on a machine without /dev/kfd: hsa_init fails cleanly.
TEST(HsaRuntime, RealLibraryWithoutGpuIsAClearNotFound) {
  void* real = dlopen("libhsa-runtime64.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!real) GTEST_SKIP() << "libhsa-runtime64.so.1 is not installed";
  dlclose(real);
  if (access("/dev/kfd", F_OK) == 0) GTEST_SKIP() << "/dev/kfd exists: this machine may have an AMD GPU";
  auto runtime = open_hsa_runtime();
  ASSERT_TRUE(FailsWith(runtime, ErrorKind::NotFound));
  EXPECT_TRUE(Contains(runtime.error().message(),
                       "hsa_init failed with HSA_STATUS_ERROR_OUT_OF_RESOURCES (0x1008): no AMD GPU or /dev/kfd "
                       "not available"));
}

}  // namespace
}  // namespace coload
