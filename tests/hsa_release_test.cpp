// The HSA backend release by release (docs/loading.md, "HSA releases"):
// against the test HSA library built once per ROCm release and named as
// ROCm names ROCr (tests/support/fake_hsa), through the Registry, so what the
// release loads decides what the selector offers; and the checks that the
// test library makes of the bytes and of the process's exit.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <hsa/hsa.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "code_object_test_support.h"
#include "coload/config.h"
#include "coload/registry.h"
#include "coload/runtime.h"
#include "common/bytes.h"
#include "load/hsa_runtime.h"
#include "support/bundle_writer.h"
#include "support/elf_writer.h"
#include "test_util.h"

namespace coload {
namespace {

using testing::FailsWith;
using testing::Succeeds;

struct ReleaseLibrary {
  const char* release;
  const char* path;
  const char* name;  // Device::runtime_release
};
const ReleaseLibrary kReleases[] = {
    {"5.0", COLOAD_TEST_HSA_ROCM50, "ROCr 1.5.50000 (ROCm 5.0)"},
    {"5.2", COLOAD_TEST_HSA_ROCM52, "ROCr 1.5.50200 (ROCm 5.2)"},
    {"6.2", COLOAD_TEST_HSA_ROCM62, "ROCr 1.14.60200 (ROCm 6.2)"},
    {"6.4", COLOAD_TEST_HSA_ROCM64, "ROCr 1.15.60400 (ROCm 6.4)"},
    {"7.0", COLOAD_TEST_HSA_ROCM70, "ROCr 1.18.70000 (ROCm 7.0)"},
};

/// One release's library, scripted through its own handle (the object coload opens).
class Release {
 public:
  explicit Release(const ReleaseLibrary& library) : library_(library) {
    handle_ = dlopen(library.path, RTLD_NOW | RTLD_LOCAL);
    EXPECT_NE(handle_, nullptr) << dlerror();
    if (!handle_) std::abort();  // the build made these libraries: a bug here, not input
    script_ = reinterpret_cast<int (*)(const char*)>(dlsym(handle_, "coload_test_hsa_script"));
    counter_ = reinterpret_cast<long (*)(const char*)>(dlsym(handle_, "coload_test_hsa_counter"));
  }
  ~Release() { dlclose(handle_); }

  void script(const std::string& text) { ASSERT_EQ(script_(text.c_str()), 0) << text; }
  long counter(const char* name) { return counter_(name); }
  Expected<std::unique_ptr<Runtime>> open() {
    HsaOptions options;
    options.library = library_.path;
    return open_hsa_runtime(options);
  }

 private:
  ReleaseLibrary library_;
  void* handle_ = nullptr;
  int (*script_)(const char*) = nullptr;
  long (*counter_)(const char*) = nullptr;
};

// gfx906 (family gfx9-generic): EF_AMDGPU_MACH values and e_flags feature bits.
constexpr std::uint32_t kMachGfx906 = 0x02f, kMachGfx9Generic = 0x051;

/// A one-kernel code object for `target` ("gfx906:xnack-") of version `version`.
std::vector<std::byte> code_object(const std::string& target, std::uint32_t e_flags, unsigned version,
                                   code_object_test::Meta meta = {}) {
  meta.target = "amdgcn-amd-amdhsa--" + target;
  testing::ElfSpec spec = code_object_test::valid_spec(meta);
  spec.e_flags = e_flags;
  spec.abi_version = static_cast<std::uint8_t>(version - 2);
  return testing::write_amdgpu_elf(spec);
}

std::vector<std::byte> native_v4() {
  return code_object("gfx906", kMachGfx906 | testing::kXnackAny | testing::kSrameccAny, 4);
}
std::vector<std::byte> native_v5() {
  return code_object("gfx906:xnack-", kMachGfx906 | testing::kXnackOff | testing::kSrameccAny, 5);
}
std::vector<std::byte> native_v6() {
  return code_object("gfx906:sramecc+:xnack-", kMachGfx906 | testing::kXnackOff | testing::kSrameccOn, 6);
}
std::vector<std::byte> generic_v6() {
  return code_object("gfx9-generic:xnack-", kMachGfx9Generic | testing::kXnackOff | testing::generic_version(1), 6);
}

/// A bundle of `objects`, each under its target's entry ID.
std::vector<std::byte> bundle(const std::vector<std::pair<std::string, std::vector<std::byte>>>& objects) {
  std::vector<testing::Entry> entries{{"host-x86_64-unknown-linux-gnu-", {}}};
  for (const auto& [target, bytes] : objects) entries.push_back({"hipv4-amdgcn-amd-amdhsa--" + target, bytes});
  return testing::write_plain_bundle(entries);
}

/// What the registry loaded for device 0, as "target vN", or the error's kind and message.
struct Outcome {
  std::string chosen;
  std::optional<ErrorKind> kind;
  std::string message;
};
Outcome load_through_registry(Release& release, const std::vector<std::byte>& bytes) {
  auto runtime = release.open();
  if (!runtime) return {"", runtime.error().kind(), runtime.error().message()};
  Registry registry(std::shared_ptr<Runtime>(std::move(*runtime)), Config{});
  auto binary = registry.register_memory(bytes, "release.hipfb");
  if (!binary) return {"", binary.error().kind(), binary.error().message()};
  auto modules = registry.modules(*binary, 0);
  if (!modules) return {"", modules.error().kind(), modules.error().message()};
  Outcome outcome;
  for (const LoadedModule* module : *modules) {
    const CodeObjectTarget& target = module->code_object().target();
    outcome.chosen +=
        (outcome.chosen.empty() ? "" : ", ") + target.target.str() + " v" + std::to_string(target.code_object_version);
  }
  return outcome;
}

// docs/loading.md, "HSA releases": ROCm's file names carry the ROCm release;
// the runtime's build version outranks a file name that disagrees.
TEST(HsaReleases, ReleaseFromTheFileNameAndTheBuildVersion) {
  using V = std::vector<unsigned>;
  auto check = [](const char* file, const char* build, const std::string& name, const V& versions) {
    hsa::RocrRelease release = hsa::rocr_release(file, build);
    EXPECT_EQ(release.name, name) << file << " " << build;
    EXPECT_EQ(release.code_object_versions, versions) << file << " " << build;
  };
  // Debian 12's ROCm 5.2.3: a ROCr 1.5 of an unknown ROCm (5.0 to 5.2) is offered v4 only.
  check("/usr/lib/x86_64-linux-gnu/libhsa-runtime64.so.1.5.0", "1.5.0-local-build-unknown", "ROCr 1.5.0", V{4});
  check("/opt/rocm-5.0.0/lib/libhsa-runtime64.so.1.5.50000", "1.5.0-1-abc", "ROCr 1.5.50000 (ROCm 5.0)", V{4});
  check("/opt/rocm-5.1.3/lib/libhsa-runtime64.so.1.5.50103", "", "ROCr 1.5.50103 (ROCm 5.1.3)", V{4});
  check("/opt/rocm-5.2.3/lib/libhsa-runtime64.so.1.5.50203", "", "ROCr 1.5.50203 (ROCm 5.2.3)", (V{4, 5}));
  check("/opt/rocm/lib/libhsa-runtime64.so.1.13.60100", "1.13.0-x", "ROCr 1.13.60100 (ROCm 6.1)", (V{4, 5}));
  check("/opt/rocm/lib/libhsa-runtime64.so.1.12.0", "", "ROCr 1.12.0", (V{4, 5}));
  check("/opt/rocm/lib/libhsa-runtime64.so.1.14.60200", "1.14.0-y", "ROCr 1.14.60200 (ROCm 6.2)", (V{4, 5, 6}));
  check("/opt/rocm/lib/libhsa-runtime64.so.1.18.70000", "1.18.0-z", "ROCr 1.18.70000 (ROCm 7.0)", (V{4, 5, 6}));
  check("libhsa-runtime64.so.2.0", "", "ROCr 2.0", (V{4, 5, 6}));
  // No version in the name: the runtime's answer alone; neither: v4 only.
  check("/x/libhsa-runtime64.so", "1.14.3-local-build-unknown", "ROCr 1.14", (V{4, 5, 6}));
  check("/x.so.1/libhsa.so", "", "ROCr of unknown release", V{4});
  // A file named as another release: the runtime decides, the name adds nothing.
  check("/x/libhsa-runtime64.so.1.14.60200", "1.5.0-local-build-unknown", "ROCr 1.5", V{4});
}

// ROCr's HSA_AMD_SYSTEM_INFO_BUILD_VERSION is STRING(ROCR_BUILD_ID) over a
// string literal, so the quotes are in the string (Debian 12's library holds
// "\"1.5.0-local-build-unknown\""). Where the file name has no version (wheels),
// the quoted answer is all there is.
TEST(HsaReleases, AQuotedBuildVersionIsReadWithoutItsQuotes) {
  using V = std::vector<unsigned>;
  auto check = [](const char* file, const char* build, const std::string& name, const V& versions) {
    hsa::RocrRelease release = hsa::rocr_release(file, build);
    EXPECT_EQ(release.name, name) << file << " " << build;
    EXPECT_EQ(release.code_object_versions, versions) << file << " " << build;
  };
  check("/site-packages/torch/lib/libhsa-runtime64.so", "\"1.18.70200-rocm-rel-7.2-7-abc\"", "ROCr 1.18", (V{4, 5, 6}));
  check("/site-packages/_rocm_sdk_core/lib/libhsa-runtime64.so.1", "\"1.18.70000-coload-test\"", "ROCr 1.18",
        (V{4, 5, 6}));
  check("/x/libhsa-runtime64.so.1", " \"1.13.0-local-build-unknown\" \n", "ROCr 1.13", (V{4, 5}));
  check("/usr/lib/x86_64-linux-gnu/libhsa-runtime64.so.1.5.0", "\"1.5.0-local-build-unknown\"", "ROCr 1.5.0", V{4});
  check("/opt/rocm/lib/libhsa-runtime64.so.1.14.60200", "\"1.14.0-x\"", "ROCr 1.14.60200 (ROCm 6.2)", (V{4, 5, 6}));
  // A quoted answer for another release still outranks the file name.
  check("/x/libhsa-runtime64.so.1.14.60200", "\"1.5.0-local-build-unknown\"", "ROCr 1.5", V{4});
  // Quotes or blanks alone are no answer.
  check("/x/libhsa-runtime64.so.1", "\"\"", "ROCr of unknown release", V{4});
  check("/x/libhsa-runtime64.so", " ", "ROCr of unknown release", V{4});
}

const char* const kGfx906 = "gpu gfx906:sramecc+:xnack-";

TEST(HsaReleases, EachReleaseReadsItsVersionsAndGenericSupportFromTheRuntime) {
  const std::vector<unsigned> versions[] = {{4}, {4, 5}, {4, 5, 6}, {4, 5, 6}, {4, 5, 6}};
  const bool generic[] = {false, false, false, true, true};
  for (std::size_t i = 0; i < std::size(kReleases); ++i) {
    Release release(kReleases[i]);
    release.script(kGfx906);
    auto runtime = release.open();
    ASSERT_TRUE(Succeeds(runtime)) << kReleases[i].release;
    ASSERT_EQ((*runtime)->devices().size(), 1u);
    const Device& device = (*runtime)->devices()[0];
    EXPECT_EQ(device.runtime_release, kReleases[i].name);
    EXPECT_EQ(device.code_object_versions, versions[i]) << kReleases[i].release;
    EXPECT_EQ(device.loads_generic, generic[i]) << kReleases[i].release;
    EXPECT_EQ(device.str(), "gfx906:sramecc+:xnack-");
  }
}

// v4, v5, v6 and generic entries: each release gets the best it loads.
TEST(HsaReleases, TheRegistryChoosesOnlyWhatTheReleaseLoads) {
  const auto mixed = bundle({{"gfx906", native_v4()},
                             {"gfx906:xnack-", native_v5()},
                             {"gfx906:sramecc+:xnack-", native_v6()},
                             {"gfx9-generic:xnack-", generic_v6()}});
  const char* expected[] = {"gfx906 v4", "gfx906:xnack- v5", "gfx906:sramecc+:xnack- v6", "gfx906:sramecc+:xnack- v6",
                            "gfx906:sramecc+:xnack- v6"};
  for (std::size_t i = 0; i < std::size(kReleases); ++i) {
    Release release(kReleases[i]);
    release.script(kGfx906);
    Outcome outcome = load_through_registry(release, mixed);
    EXPECT_EQ(outcome.message, "") << kReleases[i].release;
    EXPECT_EQ(outcome.chosen, expected[i]) << kReleases[i].release;
    EXPECT_EQ(release.counter("bytes_changed"), 0);
  }
}

// Generic code alone: loaded from 6.4 on, refused before, naming the release.
TEST(HsaReleases, GenericCodeAloneLoadsFromRocm64AndIsRefusedNamingTheReleaseBefore) {
  const auto generic_only = bundle({{"gfx9-generic:xnack-", generic_v6()}});
  for (std::size_t i = 0; i < std::size(kReleases); ++i) {
    Release release(kReleases[i]);
    release.script(kGfx906);
    Outcome outcome = load_through_registry(release, generic_only);
    const std::string name = kReleases[i].name;
    if (i >= 3) {
      EXPECT_EQ(outcome.message, "") << name;
      EXPECT_EQ(outcome.chosen, "gfx9-generic:xnack- v6");
      continue;
    }
    EXPECT_EQ(outcome.kind, ErrorKind::UnsupportedVersion) << name << ": " << outcome.message;
    const std::string why =
        i < 2 ? "code object version 6; coload offers versions 4" + std::string(i == 1 ? ", 5" : "") + " to " + name
              : "generic target gfx9-generic: " + name + " does not load generic code objects";
    EXPECT_NE(outcome.message.find(why), std::string::npos) << outcome.message;
  }
}

// Native code that needs more than the release gives: UnsupportedVersion naming it.
TEST(HsaReleases, CodeNeedingANewerReleaseIsUnsupportedVersionNamingTheRelease) {
  const auto v6_only = bundle({{"gfx906:sramecc+:xnack-", native_v6()}});
  const auto v5_only = bundle({{"gfx906:xnack-", native_v5()}});
  Release rocm50(kReleases[0]);
  rocm50.script(kGfx906);
  Outcome v5_on_50 = load_through_registry(rocm50, v5_only);
  EXPECT_EQ(v5_on_50.kind, ErrorKind::UnsupportedVersion);
  EXPECT_NE(v5_on_50.message.find("code object version 5; coload offers versions 4 to ROCr 1.5.50000 (ROCm 5.0)"),
            std::string::npos)
      << v5_on_50.message;
  Release rocm52(kReleases[1]);
  rocm52.script(kGfx906);
  EXPECT_EQ(load_through_registry(rocm52, v5_only).chosen, "gfx906:xnack- v5");
  Outcome v6_on_52 = load_through_registry(rocm52, v6_only);
  EXPECT_EQ(v6_on_52.kind, ErrorKind::UnsupportedVersion);
  EXPECT_NE(v6_on_52.message.find("code object version 6; coload offers versions 4, 5 to ROCr 1.5.50200 (ROCm 5.2)"),
            std::string::npos)
      << v6_on_52.message;
}

// A ROCr 1.5 whose file name does not give the ROCm release (Debian 12's
// libhsa-runtime64.so.1.5.0 is ROCm 5.2.3): the agent's answer to
// SVM_DIRECT_HOST_ACCESS tells 5.2 (v5 loads) from 5.0/5.1 (v4 only). The
// library here is named 1.14.0, so its 1.5 build version wins and the name
// adds no ROCm release.
TEST(HsaReleases, ARocr15OfUnknownRocmIsSettledByTheAgentsAnswer) {
  const ReleaseLibrary unnamed{"", COLOAD_TEST_HSA_LIBRARY, ""};
  const auto v5_only = bundle({{"gfx906:xnack-", native_v5()}});
  Release rocm52(unnamed);
  rocm52.script(std::string("release 5.2; ") + kGfx906);
  auto runtime = rocm52.open();
  ASSERT_TRUE(Succeeds(runtime));
  EXPECT_EQ((*runtime)->devices()[0].runtime_release, "ROCr 1.5 (ROCm 5.2)");
  EXPECT_EQ((*runtime)->devices()[0].code_object_versions, (std::vector<unsigned>{4, 5}));
  runtime->reset();
  EXPECT_EQ(load_through_registry(rocm52, v5_only).chosen, "gfx906:xnack- v5");

  Release rocm50(unnamed);
  rocm50.script(std::string("release 5.0; ") + kGfx906);
  auto old = rocm50.open();
  ASSERT_TRUE(Succeeds(old));
  EXPECT_EQ((*old)->devices()[0].runtime_release, "ROCr 1.5 (ROCm 5.0 or 5.1)");
  EXPECT_EQ((*old)->devices()[0].code_object_versions, (std::vector<unsigned>{4}));
  old->reset();
  Outcome refused = load_through_registry(rocm50, v5_only);
  EXPECT_EQ(refused.kind, ErrorKind::UnsupportedVersion);
  EXPECT_NE(refused.message.find("code object version 5; coload offers versions 4 to ROCr 1.5 (ROCm 5.0 or 5.1)"),
            std::string::npos)
      << refused.message;
}

// What the runtime itself refuses because of its release, past the selector.
TEST(HsaReleases, TheRuntimesRefusalsCausedByTheReleaseAreUnsupportedVersion) {
  Release rocm62(kReleases[2]);
  rocm62.script(kGfx906);
  auto runtime = rocm62.open();
  ASSERT_TRUE(Succeeds(runtime));
  auto generic = std::make_shared<std::vector<std::byte>>(generic_v6());
  auto generic_object = CodeObject::read(*generic);
  ASSERT_TRUE(Succeeds(generic_object));
  auto refused = (*runtime)->load(0, Image{*generic, generic}, *generic_object);
  ASSERT_TRUE(FailsWith(refused, ErrorKind::UnsupportedVersion));
  EXPECT_EQ(refused.error().message(),
            "HSA device 0 (gfx906:sramecc+:xnack-): code object for gfx9-generic:xnack-: ROCr 1.14.60200 (ROCm 6.2) "
            "does not load generic code objects: hsa_executable_load_agent_code_object failed with "
            "HSA_STATUS_ERROR_INVALID_ISA_NAME (0x1017): The instruction set architecture name is invalid.");

  Release rocm50(kReleases[0]);
  rocm50.script(kGfx906);
  auto old = rocm50.open();
  ASSERT_TRUE(Succeeds(old));
  auto v5 = std::make_shared<std::vector<std::byte>>(native_v5());
  auto v5_object = CodeObject::read(*v5);
  ASSERT_TRUE(Succeeds(v5_object));
  auto too_new = (*old)->load(0, Image{*v5, v5}, *v5_object);
  ASSERT_TRUE(FailsWith(too_new, ErrorKind::UnsupportedVersion));
  EXPECT_EQ(too_new.error().message(),
            "HSA device 0 (gfx906:sramecc+:xnack-): code object for gfx906:xnack-: ROCr 1.5.50000 (ROCm 5.0) refused "
            "code object version 5 (coload offers it versions 4): hsa_executable_load_agent_code_object failed with "
            "HSA_STATUS_ERROR_INVALID_CODE_OBJECT (0x1010): The code object is invalid.");
}

// A `release` statement changes what the runtime answers, file name aside:
// the runtime's build version decides the ROCr release.
TEST(HsaReleases, TheRuntimesBuildVersionOutranksTheFileName) {
  Release rocm70(kReleases[4]);
  rocm70.script(std::string("release 5.0; ") + kGfx906);
  auto runtime = rocm70.open();
  ASSERT_TRUE(Succeeds(runtime));
  const Device& device = (*runtime)->devices()[0];
  EXPECT_EQ(device.runtime_release, "ROCr 1.5 (ROCm 5.0 or 5.1)");  // the agent's answer names the ROCm
  EXPECT_EQ(device.code_object_versions, (std::vector<unsigned>{4}));
  EXPECT_FALSE(device.loads_generic);
}

// An unknown GPU among known ones: left out, named in a warning the registry logs; the others work.
TEST(HsaReleases, AnUnknownGpuIsLeftOutAndWarnedTheOthersWork) {
  const auto generic_only = bundle({{"gfx9-generic:xnack-", generic_v6()}});  // outlives the registry
  Release rocm64(kReleases[3]);
  rocm64.script(std::string(kGfx906) + "; gpu gfx9999; gpu gfx90a:sramecc+:xnack- wave=32");
  auto runtime = rocm64.open();
  ASSERT_TRUE(Succeeds(runtime));
  std::vector<std::string> warnings;
  RegistryOptions options;
  options.log = [&](LogLevel level, std::string_view message) {
    if (level == LogLevel::Warn) warnings.emplace_back(message);
  };
  Registry registry(std::shared_ptr<Runtime>(std::move(*runtime)), Config{}, options);
  ASSERT_EQ(registry.devices().size(), 1u);
  EXPECT_EQ(registry.devices()[0].str(), "gfx906:sramecc+:xnack-");
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_EQ(warnings[0],
            "hsa: HSA agent 1 (GPU 1): ISA name 'amdgcn-amd-amdhsa--gfx9999': target ID 'gfx9999': unknown processor "
            "'gfx9999'; this GPU is left out");
  EXPECT_EQ(warnings[1],
            "hsa: HSA agent 2 (GPU 2): HSA_AGENT_INFO_WAVEFRONT_SIZE is 32 but gfx90a runs wave64 only; this GPU is "
            "left out");
  auto binary = registry.register_memory(generic_only, "generic.hipfb");
  ASSERT_TRUE(Succeeds(binary));
  EXPECT_TRUE(Succeeds(registry.lookup_kernel(*binary, 0, "k")));
}

// The test library re-checks the bytes each reader was given when it drops them.
TEST(HsaReleases, BytesChangedUnderALoadedModuleAreCounted) {
  Release rocm70(kReleases[4]);
  rocm70.script(kGfx906);
  auto runtime = rocm70.open();
  ASSERT_TRUE(Succeeds(runtime));
  auto bytes = std::make_shared<std::vector<std::byte>>(native_v6());
  auto object = CodeObject::read(*bytes);
  ASSERT_TRUE(Succeeds(object));
  auto module = (*runtime)->load(0, Image{*bytes, bytes}, *object);
  ASSERT_TRUE(Succeeds(module));
  (*bytes)[bytes->size() - 1] ^= std::byte{1};
  module = Error(ErrorKind::NotFound, "released");
  EXPECT_EQ(rocm70.counter("bytes_changed"), 2);  // at hsa_executable_destroy, then at hsa_code_object_reader_destroy
}

/// Loads `bytes` on device 0 of `release`'s runtime, past the selector.
Expected<std::unique_ptr<LoadedModule>> load_directly(Release& release, const std::vector<std::byte>& bytes) {
  auto runtime = release.open();
  if (!runtime) return std::move(runtime).error();
  auto owned = std::make_shared<std::vector<std::byte>>(bytes);
  auto object = CodeObject::read(*owned);
  if (!object) return std::move(object).error();
  return (*runtime)->load(0, Image{*owned, owned}, *object);
}

// Each release refuses generic code as its loader does (docs/loading.md, "HSA
// releases"): 1.13 and older cannot name any generic EF_AMDGPU_MACH
// (INVALID_CODE_OBJECT); 1.14 names gfx9-generic but has no such ISA
// (INVALID_ISA_NAME) and cannot name gfx9-4-generic or gfx12-generic
// (INVALID_CODE_OBJECT); 1.15 loads all three. Every refusal is the release's:
// UnsupportedVersion naming it, never Malformed.
TEST(HsaReleases, EachReleaseRefusesGenericCodeWithItsOwnStatus) {
  struct Case {
    const char* agent;
    std::string target;
    std::uint32_t e_flags;
  };
  const Case cases[] = {
      {kGfx906, "gfx9-generic:xnack-", kMachGfx9Generic | testing::kXnackOff | testing::generic_version(1)},
      {"gpu gfx942:sramecc+:xnack-", "gfx9-4-generic:sramecc+:xnack-",
       0x05f | testing::kXnackOff | testing::kSrameccOn | testing::generic_version(1)},
      {"gpu gfx1200 wave=32", "gfx12-generic", 0x059 | testing::generic_version(1)},
  };
  // Per release, per case: the status, or "" where it loads.
  const char* expected[][3] = {
      {"INVALID_CODE_OBJECT (0x1010)", "INVALID_CODE_OBJECT (0x1010)", "INVALID_CODE_OBJECT (0x1010)"},
      {"INVALID_CODE_OBJECT (0x1010)", "INVALID_CODE_OBJECT (0x1010)", "INVALID_CODE_OBJECT (0x1010)"},
      {"INVALID_ISA_NAME (0x1017)", "INVALID_CODE_OBJECT (0x1010)", "INVALID_CODE_OBJECT (0x1010)"},
      {"", "", ""},
      {"", "", ""},
  };
  for (std::size_t i = 0; i < std::size(kReleases); ++i) {
    for (std::size_t c = 0; c < std::size(cases); ++c) {
      Release release(kReleases[i]);
      release.script(cases[c].agent);
      auto module = load_directly(release, code_object(cases[c].target, cases[c].e_flags, 6));
      const std::string where = std::string(kReleases[i].release) + " " + cases[c].target;
      if (!*expected[i][c]) {
        EXPECT_TRUE(Succeeds(module)) << where;
        continue;
      }
      ASSERT_TRUE(FailsWith(module, ErrorKind::UnsupportedVersion)) << where;
      EXPECT_NE(module.error().message().find("code object for " + cases[c].target + ": " + kReleases[i].name +
                                              " does not load generic code objects: "
                                              "hsa_executable_load_agent_code_object failed with HSA_STATUS_ERROR_" +
                                              expected[i][c]),
                std::string::npos)
          << where << ": " << module.error().message();
    }
  }
}

// ROCr 1.5 answers KERNEL_DYNAMIC_CALLSTACK false for every kernel (it reads
// the descriptor's bit from 1.7, ROCm 5.3): coload takes the bit from the
// descriptor, so every release reports the same.
TEST(HsaReleases, DynamicCallstackComesFromTheDescriptorOnEveryRelease) {
  code_object_test::Meta dynamic;
  dynamic.kernels[0].uses_dynamic_stack = true;
  const auto with_stack = code_object("gfx906", kMachGfx906 | testing::kXnackAny | testing::kSrameccAny, 4, dynamic);
  for (const ReleaseLibrary& library : kReleases) {
    Release release(library);
    release.script(kGfx906);
    auto module = load_directly(release, with_stack);
    ASSERT_TRUE(Succeeds(module)) << library.release;
    ASSERT_EQ((*module)->kernels().size(), 1u);
    EXPECT_TRUE((*module)->kernels()[0].dynamic_callstack) << library.release;
    auto plain = load_directly(release, native_v4());
    ASSERT_TRUE(Succeeds(plain)) << library.release;
    EXPECT_FALSE((*plain)->kernels()[0].dynamic_callstack) << library.release;
  }
}

// ROCr reads as far as the ELF's own headers say, whatever size it is given;
// the test library does the same and counts reads past the size.
TEST(HsaReleases, TheTestLibraryReadsTheElfByItsHeadersNotByTheSize) {
  Release rocm70(kReleases[4]);
  rocm70.script(kGfx906);
  auto runtime = rocm70.open();  // hsa_init, so the library answers
  ASSERT_TRUE(Succeeds(runtime));
  using CreateReader = hsa_status_t (*)(const void*, std::size_t, hsa_code_object_reader_t*);
  void* library = dlopen(COLOAD_TEST_HSA_ROCM70, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(library, nullptr);
  auto create = reinterpret_cast<CreateReader>(dlsym(library, "hsa_code_object_reader_create_from_memory"));
  auto load = reinterpret_cast<hsa_status_t (*)(hsa_executable_t, hsa_agent_t, hsa_code_object_reader_t, const char*,
                                                hsa_loaded_code_object_t*)>(
      dlsym(library, "hsa_executable_load_agent_code_object"));
  auto make = reinterpret_cast<hsa_status_t (*)(hsa_profile_t, hsa_default_float_rounding_mode_t, const char*,
                                                hsa_executable_t*)>(dlsym(library, "hsa_executable_create_alt"));
  ASSERT_TRUE(create && load && make);
  const auto bytes = native_v4();
  hsa_code_object_reader_t reader{};
  ASSERT_EQ(create(bytes.data(), 64, &reader), HSA_STATUS_SUCCESS);  // the header only, as far as the size goes
  hsa_executable_t executable{};
  ASSERT_EQ(make(HSA_PROFILE_FULL, HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT, nullptr, &executable), HSA_STATUS_SUCCESS);
  EXPECT_EQ(load(executable, hsa_agent_t{0xa0000}, reader, nullptr, nullptr), HSA_STATUS_SUCCESS);
  EXPECT_EQ(rocm70.counter("read_past_size"), 1);
  dlclose(library);
}

// So coload never hands ROCr fewer bytes than the ELF's headers reach: not
// fewer than the code object it read, and not an image whose own headers
// reach past its end. Both are refused before a reader exists.
TEST(HsaReleases, AnImageShorterThanItsElfIsRefusedBeforeRocrSeesIt) {
  Release rocm70(kReleases[4]);
  rocm70.script(kGfx906);
  auto runtime = rocm70.open();
  ASSERT_TRUE(Succeeds(runtime));
  const auto full = native_v4();
  auto object = CodeObject::read(full);
  ASSERT_TRUE(Succeeds(object));
  ASSERT_EQ(object->size(), full.size());
  // Exactly sized heap copies, so a read past them faults under ASan.
  auto shorter = std::make_shared<std::vector<std::byte>>(full.begin(), full.end() - 1);
  auto refused = (*runtime)->load(0, Image{*shorter, shorter}, *object);
  ASSERT_TRUE(FailsWith(refused, ErrorKind::OutOfBounds));
  EXPECT_EQ(refused.error().message(), "HSA device 0 (gfx906:sramecc+:xnack-): HSA load: the image has " +
                                           detail::hex(full.size() - 1) + " bytes but the code object reaches " +
                                           detail::hex(full.size()));
  EXPECT_EQ(refused.error().location().field, "image size");

  // An image as long as the code object coload read, whose own headers reach further.
  code_object_test::Meta padded;
  padded.pad = std::string(4096, 'p');
  const auto longer = code_object("gfx906", kMachGfx906 | testing::kXnackAny | testing::kSrameccAny, 4, padded);
  ASSERT_GT(longer.size(), full.size());
  auto cut = std::make_shared<std::vector<std::byte>>(longer.begin(), longer.begin() + full.size());
  auto past = (*runtime)->load(0, Image{*cut, cut}, *object);
  ASSERT_FALSE(Succeeds(past));
  EXPECT_NE(past.error().message().find("HSA load: the image's ELF headers reach past its " + detail::hex(full.size()) +
                                        " bytes, which ROCr would read"),
            std::string::npos)
      << past.error().message();
  EXPECT_FALSE(past.error().location().field.empty()) << past.error().message();
  EXPECT_EQ(rocm70.counter("readers_created"), 0);
  EXPECT_EQ(rocm70.counter("read_past_size"), 0);
}

// ROCr called after its static state is gone (from a static destructor, at
// exit) must not pass unnoticed: the test library ends the process.
TEST(HsaReleasesDeathTest, ACallAfterTheRuntimeWasTornDownEndsTheProcess) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        static hsa_status_t (*shut_down)() = nullptr;
        std::atexit([] { shut_down(); });  // runs after the library's state, created later, is destroyed
        void* library = dlopen(COLOAD_TEST_HSA_ROCM70, RTLD_NOW | RTLD_LOCAL);
        if (!library) std::_Exit(1);
        shut_down = reinterpret_cast<hsa_status_t (*)()>(dlsym(library, "hsa_shut_down"));
        std::exit(0);
      },
      ::testing::ExitedWithCode(86), "coload_test_hsa: hsa_shut_down called after the HSA runtime was torn down");
}

}  // namespace
}  // namespace coload
