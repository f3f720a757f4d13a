// Which ROCr coload opens and starts (docs/loading.md, "Which library"),
// against test HSA libraries that answer as real ones do: installed under the
// names wheels give ROCr (torch/lib/libhsa-runtime64.so,
// wheel/lib/libhsa-runtime64.so.1: no release in the name, a quoted build
// version), a ROCr of another major, and an hsa_init that fails.
//
// Its own executable, apart from coload_tests: these libraries are of the
// libhsa-runtime64.so family, which coload adopts wherever it is loaded, so
// none may be loaded in a process that tests another ROCr. Each test runs in
// its own process (gtest_discover_tests), as each loads its own copy first.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <link.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "code_object_test_support.h"
#include "coload/config.h"
#include "coload/registry.h"
#include "coload/runtime.h"
#include "load/hsa_library.h"
#include "support/bundle_writer.h"
#include "support/elf_writer.h"
#include "test_util.h"

namespace coload {
namespace {

using testing::FailsWith;
using testing::Succeeds;

/// A test library loaded first, by its path, as the application would load
/// it; scripted and counted through that handle.
class Loaded {
 public:
  explicit Loaded(const char* path) {
    handle_ = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    EXPECT_NE(handle_, nullptr) << dlerror();
    if (!handle_) std::abort();  // the build made these libraries: a bug here, not input
    script_ = reinterpret_cast<int (*)(const char*)>(dlsym(handle_, "coload_test_hsa_script"));
    counter_ = reinterpret_cast<long (*)(const char*)>(dlsym(handle_, "coload_test_hsa_counter"));
  }
  ~Loaded() { dlclose(handle_); }

  void script(const std::string& text) { ASSERT_EQ(script_(text.c_str()), 0) << text; }
  long counter(const char* name) { return counter_(name); }

 private:
  void* handle_ = nullptr;
  int (*script_)(const char*) = nullptr;
  long (*counter_)(const char*) = nullptr;
};

Expected<std::unique_ptr<Runtime>> open(const std::string& library) {
  HsaOptions options;
  options.library = library;
  return open_hsa_runtime(options);
}

/// The loaded objects whose file name starts with libhsa-runtime64.so.
std::vector<std::string> loaded_rocrs() {
  std::vector<std::string> found;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        std::string name = info->dlpi_name ? info->dlpi_name : "";
        if (name.find("/libhsa-runtime64.so") != std::string::npos) {
          static_cast<std::vector<std::string>*>(data)->push_back(name);
        }
        return 0;
      },
      &found);
  return found;
}

// gfx942 code objects of v4, v5 and v6 in one bundle, each naming more of
// the device's modes than the one before: the registry takes the most exact
// fit the release loads.
std::vector<std::byte> v4_to_v6_bundle() {
  struct Version {
    unsigned version;
    const char* target;
    std::uint32_t features;
  };
  const Version versions[] = {{4, "gfx942", testing::kXnackAny | testing::kSrameccAny},
                              {5, "gfx942:xnack-", testing::kXnackOff | testing::kSrameccAny},
                              {6, "gfx942:sramecc+:xnack-", testing::kXnackOff | testing::kSrameccOn}};
  std::vector<testing::Entry> entries{{"host-x86_64-unknown-linux-gnu-", {}}};
  for (const Version& version : versions) {
    code_object_test::Meta meta;
    meta.target = std::string("amdgcn-amd-amdhsa--") + version.target;
    testing::ElfSpec spec = code_object_test::valid_spec(meta);
    spec.e_flags = 0x04c | version.features;  // gfx942
    spec.abi_version = static_cast<std::uint8_t>(version.version - 2);
    entries.push_back({std::string("hipv4-amdgcn-amd-amdhsa--") + version.target, testing::write_amdgpu_elf(spec)});
  }
  return testing::write_plain_bundle(entries);
}

constexpr const char* kGfx942 = "gpu gfx942:sramecc+:xnack-";

/// What the release read from a wheel's library lets through: the device
/// loads v4 to v6, and the registry chooses v6.
void expect_rocm7(Expected<std::unique_ptr<Runtime>>& runtime) {
  ASSERT_TRUE(Succeeds(runtime));
  ASSERT_EQ((*runtime)->devices().size(), 1u);
  const Device& device = (*runtime)->devices()[0];
  EXPECT_EQ(device.runtime_release, "ROCr 1.18");
  EXPECT_EQ(device.code_object_versions, (std::vector<unsigned>{4, 5, 6}));
  EXPECT_TRUE(device.loads_generic);
  const auto bundle = v4_to_v6_bundle();  // outlives the registry
  Registry registry(std::shared_ptr<Runtime>(std::move(*runtime)), Config{});
  auto binary = registry.register_memory(bundle, "v4_to_v6.hipfb");
  ASSERT_TRUE(Succeeds(binary));
  auto modules = registry.modules(*binary, 0);
  ASSERT_TRUE(Succeeds(modules));
  ASSERT_EQ(modules->size(), 1u);
  EXPECT_EQ((*modules)[0]->code_object().target().code_object_version, 6u);
}

// PyTorch's wheels: torch/lib/libhsa-runtime64.so, no version in the name.
// Only the quoted build version says 1.18 (before: "ROCr of unknown release", v4 only).
TEST(HsaLibrary, ATorchWheelsRocrIsReadFromItsQuotedBuildVersion) {
  Loaded torch(COLOAD_TEST_HSA_TORCH);
  torch.script(kGfx942);
  auto runtime = open(COLOAD_TEST_HSA_TORCH);
  expect_rocm7(runtime);
  EXPECT_EQ(torch.counter("init"), 1);
}

// TheRock's pip packages: a plain file libhsa-runtime64.so.1, no further version.
TEST(HsaLibrary, APipWheelsRocrIsReadFromItsQuotedBuildVersion) {
  Loaded wheel(COLOAD_TEST_HSA_WHEEL);
  wheel.script(kGfx942);
  auto runtime = open(COLOAD_TEST_HSA_WHEEL);
  expect_rocm7(runtime);
  EXPECT_EQ(wheel.counter("init"), 1);
}

// An application that loaded torch's ROCr: coload, asked for the default
// libhsa-runtime64.so.1, adopts that instance (its script's agent, its
// hsa_init count) and opens no other ROCr (Debian's, where installed).
TEST(HsaLibrary, TheProcesssRocrIsAdoptedByItsFamilyWhateverItsName) {
  Loaded torch(COLOAD_TEST_HSA_TORCH);
  torch.script(kGfx942);
  auto runtime = open_hsa_runtime();
  ASSERT_TRUE(Succeeds(runtime));
  ASSERT_EQ((*runtime)->devices().size(), 1u);
  EXPECT_EQ((*runtime)->devices()[0].str(), "gfx942:sramecc+:xnack-");
  EXPECT_EQ(torch.counter("init"), 1);
  const auto rocrs = loaded_rocrs();
  ASSERT_EQ(rocrs.size(), 1u);
  EXPECT_NE(rocrs[0].find("/torch/lib/libhsa-runtime64.so"), std::string::npos) << rocrs[0];
  runtime = Error(ErrorKind::NotFound, "released");
  EXPECT_EQ(torch.counter("shut_down"), 1);
}

// The same with the pip wheel's libhsa-runtime64.so.1 loaded from its own directory.
TEST(HsaLibrary, APipWheelsLoadedRocrIsAdopted) {
  Loaded wheel(COLOAD_TEST_HSA_WHEEL);
  wheel.script(kGfx942);
  auto runtime = open_hsa_runtime();
  ASSERT_TRUE(Succeeds(runtime));
  EXPECT_EQ((*runtime)->devices()[0].runtime_release, "ROCr 1.18");
  EXPECT_EQ(wheel.counter("init"), 1);
  EXPECT_EQ(loaded_rocrs().size(), 1u);
}

// A ROCr whose SONAME major is not 1 is refused, naming the file and the
// major, before any of its functions runs: loaded by the process (found by its
// family) or named by the caller (not even opened).
TEST(HsaLibrary, AnotherMajorIsUnsupportedVersionAndNeverStarted) {
  Loaded major2(COLOAD_TEST_HSA_MAJOR2);
  major2.script(kGfx942);
  auto adopted = open("libcoload_test_hsa_major2.so.1");
  ASSERT_TRUE(FailsWith(adopted, ErrorKind::UnsupportedVersion));
  EXPECT_NE(adopted.error().message().find("libcoload_test_hsa_major2.so.2.0.0' (libcoload_test_hsa_major2.so.2) is "
                                           "ROCr major 2; coload knows ROCr 1 only"),
            std::string::npos)
      << adopted.error().message();
  auto named = open("libcoload_test_hsa_unopened.so.3");
  ASSERT_TRUE(FailsWith(named, ErrorKind::UnsupportedVersion));
  EXPECT_EQ(named.error().message(),
            "the HSA runtime 'libcoload_test_hsa_unopened.so.3' (libcoload_test_hsa_unopened.so.3) is ROCr major 3; "
            "coload knows ROCr 1 only and does not start another");
  EXPECT_EQ(major2.counter("calls.hsa_init"), 0);
  EXPECT_EQ(major2.counter("calls.hsa_system_get_info"), 0);
}

// A failed hsa_init may leave ROCr half initialised (rocm-systems#10739): the
// failure stands for the process, and hsa_init is not called again, until
// forget_failed_inits (for tests).
TEST(HsaLibrary, AFailedHsaInitIsRememberedAndNotRetried) {
  Loaded torch(COLOAD_TEST_HSA_TORCH);
  torch.script(std::string(kGfx942) + "; fail hsa_init OUT_OF_RESOURCES");
  auto first = open(COLOAD_TEST_HSA_TORCH);
  ASSERT_TRUE(FailsWith(first, ErrorKind::NotFound));
  EXPECT_EQ(torch.counter("calls.hsa_init"), 1);
  torch.script(kGfx942);  // hsa_init would succeed now; the counters start again
  auto again = open_hsa_runtime();
  ASSERT_TRUE(FailsWith(again, ErrorKind::NotFound));
  EXPECT_EQ(again.error().message(),
            first.error().message() + " (earlier in this process; hsa_init is not called again)");
  EXPECT_EQ(torch.counter("calls.hsa_init"), 0);
  hsa::forget_failed_inits();
  auto after = open(COLOAD_TEST_HSA_TORCH);
  ASSERT_TRUE(Succeeds(after));
  EXPECT_EQ(torch.counter("init"), 1);
}

}  // namespace
}  // namespace coload
