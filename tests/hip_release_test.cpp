// The HIP backend against the test HIP library in each release mode
// (tests/support/fake_hip; docs/loading.md, "HIP releases"): what the
// registry chooses per release, the major read before HIP starts, code
// objects in file mappings HIP 5.5+ would reopen by path, and function lookup
// by STT_FUNC symbol only.
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__ 1
#endif
#include <hip/hip_runtime_api.h>  // the entry points' types: calls through dlsym must use them (UBSan)
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "code_object_test_support.h"
#include "coload/config.h"
#include "coload/registry.h"
#include "coload/runtime.h"
#include "hip_test_support.h"
#include "support/bundle_writer.h"
#include "test_util.h"

namespace coload {
namespace {

using code_object_test::Meta;
using code_object_test::MetaKernel;
using testing::Contains;
using testing::FailsWith;
using testing::FakeHip;
using testing::hip_options;
using testing::Succeeds;

constexpr int kFileNotFound = 301;  // hipErrorFileNotFound

const char* library_of(int major) {
  switch (major) {
    case 5: return COLOAD_TEST_HIP5_LIBRARY;
    case 6: return COLOAD_TEST_HIP6_LIBRARY;
    case 7: return COLOAD_TEST_HIP7_LIBRARY;
    default: return COLOAD_TEST_HIP8_LIBRARY;
  }
}

/// A code object with kernel "k" (an STT_FUNC "k" unless `function_symbol`
/// is false) for `processor` ("gfx1100", "gfx11-generic") at `version`.
std::vector<std::byte> code_object(const std::string& processor, unsigned version, bool function_symbol = true) {
  Meta meta;
  meta.target = "amdgcn-amd-amdhsa--" + processor;
  meta.minor = version == 4 ? 1 : 2;
  auto spec = code_object_test::valid_spec(meta);
  const bool generic = processor.find("generic") != std::string::npos;
  spec.e_flags = generic                 ? 0x054u | testing::generic_version(1)
                 : processor == "gfx90a" ? testing::kMachGfx90a
                                         : testing::kMachGfx1100;
  spec.abi_version = static_cast<std::uint8_t>(version - 2);
  if (!function_symbol) spec.kernels[0].function_symbol.clear();
  return testing::write_amdgpu_elf(spec);
}

/// A bundle of code objects: (processor, version) each.
std::vector<std::byte> bundle(const std::vector<std::pair<std::string, unsigned>>& entries) {
  std::vector<testing::Entry> written{{"host-x86_64-unknown-linux-gnu-", {}}};
  for (const auto& [processor, version] : entries) {
    written.push_back({"hipv4-amdgcn-amd-amdhsa--" + processor, code_object(processor, version)});
  }
  return testing::write_plain_bundle(written);
}

class HipReleaseTest : public ::testing::Test {
 protected:
  /// The copy of `major`, reset, at `release`, with one gfx1100.
  const FakeHip& fake(int major, const char* release = nullptr) {
    const FakeHip& f = FakeHip::at(library_of(major));
    EXPECT_TRUE(f.reset) << "cannot load " << library_of(major) << ": " << dlerror();
    f.reset();
    if (release) EXPECT_EQ(f.set_release(release), 0) << release;
    f.add_device("gfx1100", 65536, 32);
    return f;
  }
  static std::shared_ptr<Runtime> open(int major) {
    auto runtime = open_hip_runtime(hip_options(library_of(major)));
    EXPECT_TRUE(Succeeds(runtime));
    return runtime ? std::shared_ptr<Runtime>(std::move(*runtime)) : nullptr;
  }
};

// The copy of major 8 is refused from its SONAME: hipRuntimeGetVersion, which
// starts HIP, is never called, nor is any other function.
TEST_F(HipReleaseTest, AWrongMajorIsRefusedBeforeHipStarts) {
  const FakeHip& hip8 = fake(8);
  auto runtime = open_hip_runtime(hip_options(library_of(8)));
  ASSERT_TRUE(FailsWith(runtime, ErrorKind::UnsupportedVersion));
  EXPECT_TRUE(Contains(runtime.error().message(), "is HIP 8 (its SONAME libcoload_test_hip.so.8; not started)"));
  EXPECT_TRUE(Contains(runtime.error().message(), "libcoload_test_hip.so.8.0.0"));
  EXPECT_EQ(hip8.counter("init"), 0);
  // Asked directly, the version call does count as starting HIP.
  auto get_version = reinterpret_cast<decltype(&hipRuntimeGetVersion)>(dlsym(hip8.handle, "hipRuntimeGetVersion"));
  int version = 0;
  ASSERT_EQ(get_version(&version), 0);
  EXPECT_EQ(version, 80000000);
  EXPECT_EQ(hip8.counter("init"), 1);
}

TEST_F(HipReleaseTest, EachMajorReadsItsOwnLayoutAndNamesItsRelease) {
  struct Case {
    int major;
    const char* release;
    const char* name;
    bool r0600;
  };
  for (const Case& c : {Case{5, "5.0", "HIP 5.0.13601", false}, Case{5, "5.2", "HIP 5.2.21153", false},
                        Case{6, "6.2", "HIP 6.2.41134", true}, Case{6, "6.4", "HIP 6.4.43483", true},
                        Case{7, "7.0", "HIP 7.0.51831", true}}) {
    const FakeHip& hip = fake(c.major, c.release);
    EXPECT_EQ(dlsym(hip.handle, "hipGetDevicePropertiesR0600") != nullptr, c.major != 5);
    auto runtime = open(c.major);
    ASSERT_TRUE(runtime) << c.release;
    ASSERT_EQ(runtime->devices().size(), 1u);
    EXPECT_EQ(runtime->devices()[0].runtime_release, c.name);
    EXPECT_EQ(hip.counter("properties_r0600"), c.r0600 ? 1 : 0) << c.release;
    EXPECT_EQ(hip.counter("properties_r0000"), c.r0600 ? 0 : 1) << c.release;
  }
}

// Per release, one binary per kind of entry: the registry loads exactly
// those the release loads, and refuses the others as UnsupportedVersion
// naming the release, before HIP is asked.
TEST_F(HipReleaseTest, TheRegistryChoosesOnlyWhatTheReleaseLoads) {
  struct Case {
    int major;
    const char* release;
    const char* name;
    bool v4, v5, v6, generic;
  };
  const std::vector<std::pair<std::string, unsigned>> kinds = {
      {"gfx1100", 4}, {"gfx1100", 5}, {"gfx1100", 6}, {"gfx11-generic", 6}};
  for (const Case& c :
       {Case{5, "5.0", "HIP 5.0", true, false, false, false}, Case{5, "5.2", "HIP 5.2", true, true, false, false},
        Case{6, "6.2", "HIP 6.2", true, true, true, false}, Case{6, "6.4", "HIP 6.4", true, true, true, true},
        Case{7, "7.0", "HIP 7.0", true, true, true, true}}) {
    const FakeHip& hip = fake(c.major, c.release);
    Registry registry(open(c.major), Config{});
    const bool loads[] = {c.v4, c.v5, c.v6, c.generic};
    for (std::size_t i = 0; i < kinds.size(); ++i) {
      SCOPED_TRACE(std::string(c.release) + " " + kinds[i].first + " v" + std::to_string(kinds[i].second));
      auto bytes = bundle({kinds[i]});
      auto binary = registry.register_memory(bytes);
      ASSERT_TRUE(Succeeds(binary));
      auto kernel = registry.lookup_kernel(*binary, 0, "k");
      if (loads[i]) {
        EXPECT_TRUE(Succeeds(kernel));
      } else {
        ASSERT_TRUE(FailsWith(kernel, ErrorKind::UnsupportedVersion));
        EXPECT_TRUE(Contains(kernel.error().message(), c.name));
      }
      ASSERT_TRUE(Succeeds(registry.unregister(*binary)));
    }
    EXPECT_EQ(hip.counter("module_loads"), c.v4 + c.v5 + c.v6 + c.generic) << c.release;
    EXPECT_EQ(hip.counter("bytes_changed"), 0);
  }
}

// One binary with a v6 native entry and a generic one: HIP 5.2 loads
// neither, 6.2 the native one, 7.0 the native one before the generic.
TEST_F(HipReleaseTest, AMixedBinaryGivesEachReleaseWhatItLoads) {
  auto bytes = bundle({{"gfx11-generic", 6}, {"gfx1100", 6}});
  for (auto [major, release] : {std::pair{5, "5.2"}, std::pair{6, "6.2"}, std::pair{7, "7.0"}}) {
    SCOPED_TRACE(release);
    fake(major, release);
    Registry registry(open(major), Config{});
    auto binary = registry.register_memory(bytes);
    ASSERT_TRUE(Succeeds(binary));
    auto kernel = registry.lookup_kernel(*binary, 0, "k");
    if (major == 5) {
      ASSERT_TRUE(FailsWith(kernel, ErrorKind::UnsupportedVersion));
      EXPECT_TRUE(Contains(kernel.error().message(), "HIP 5.2"));
      continue;
    }
    ASSERT_TRUE(Succeeds(kernel));
    auto modules = registry.modules(*binary, 0);
    ASSERT_TRUE(Succeeds(modules));
    ASSERT_EQ(modules->size(), 1u);
    EXPECT_EQ((*modules)[0]->code_object().target().target.str(), "gfx1100");
  }
}

/// A temporary directory whose name has a space, as a user's might.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "coload hip XXXXXX").string();
    path = mkdtemp(pattern.data());
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

/// A file mapped read-only by the caller, as a runtime maps a code object it
/// registers as memory (Registry::register_file hands HIP coload's checked
/// copy of the entry instead: docs/reading-rules.md).
struct CallerMapping {
  std::span<const std::byte> bytes;
  explicit CallerMapping(const std::filesystem::path& file) {
    int fd = ::open(file.c_str(), O_RDONLY);
    if (fd < 0) return;
    const auto size = static_cast<std::size_t>(std::filesystem::file_size(file));
    void* mapped = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (mapped != MAP_FAILED) bytes = {static_cast<const std::byte*>(mapped), size};
  }
  ~CallerMapping() {
    if (!bytes.empty()) munmap(const_cast<std::byte*>(bytes.data()), bytes.size());
  }
  CallerMapping(const CallerMapping&) = delete;
  CallerMapping& operator=(const CallerMapping&) = delete;
};

/// A release and its HIP_USE_RUNTIME_UNBUNDLER (-1: the release's default).
struct Unbundler {
  int major;
  const char* release;
  int runtime_unbundler;
};

// HIP 5.5+ can reopen a mapped file by path (the comgr unbundler: with
// HIP_USE_RUNTIME_UNBUNDLER=0 from 5.5, by default from 6.0): the file
// renamed (or its path holding a space) fails there. coload hands it a copy
// in an anonymous mapping of its own instead; HIP 5.2, which cannot reopen,
// gets the mapping itself. The mapping is the caller's, registered as
// memory: a file coload registers itself reaches HIP as a copy already.
TEST_F(HipReleaseTest, AFileRenamedAfterRegistrationStillLoadsFromHip55) {
  for (const Unbundler& c : {Unbundler{6, "6.2", -1}, Unbundler{7, "7.0", -1}, Unbundler{5, "5.5", 0},
                             Unbundler{5, "5.5", -1}, Unbundler{5, "5.2", -1}}) {
    SCOPED_TRACE(std::string(c.release) + " HIP_USE_RUNTIME_UNBUNDLER " + std::to_string(c.runtime_unbundler));
    const FakeHip& hip = fake(c.major, c.release);
    hip.set_runtime_unbundler(c.runtime_unbundler);
    TempDir dir;
    const auto file = dir.path / "kernels.co";
    testing::write_file(file.string(), code_object("gfx1100", 4));
    Registry registry(open(c.major), Config{});
    CallerMapping mapping(file);
    ASSERT_FALSE(mapping.bytes.empty());
    auto binary = registry.register_memory(mapping.bytes, file.string());
    ASSERT_TRUE(Succeeds(binary));
    std::filesystem::rename(file, dir.path / "moved.co");
    ASSERT_TRUE(Succeeds(registry.lookup_kernel(*binary, 0, "k")));
    EXPECT_EQ(hip.counter("reopens"), 0) << "HIP was handed the mapping";
    const bool copied = std::string(c.release) != "5.2";
    EXPECT_EQ(hip.counter("own_mappings"), copied ? 1 : 0);
    ASSERT_TRUE(Succeeds(registry.unregister(*binary)));
    EXPECT_EQ(hip.counter("bytes_changed"), 0);
  }
}

// Without the copy: the test HIP library, handed the mapping itself, fails
// as HIP does where it reopens (6.2; 5.5 with the comgr unbundler), and
// loads it where it does not (5.5 by default; 5.4, which has no comgr
// unbundler, even with HIP_USE_RUNTIME_UNBUNDLER=0; 5.2).
TEST_F(HipReleaseTest, HandedTheMappingTheComgrUnbundlerFailsAsFileNotFound) {
  for (const Unbundler& c : {Unbundler{6, "6.2", -1}, Unbundler{5, "5.5", 0}, Unbundler{5, "5.5", -1},
                             Unbundler{5, "5.4", 0}, Unbundler{5, "5.2", -1}}) {
    SCOPED_TRACE(std::string(c.release) + " HIP_USE_RUNTIME_UNBUNDLER " + std::to_string(c.runtime_unbundler));
    const FakeHip& hip = fake(c.major, c.release);
    hip.set_runtime_unbundler(c.runtime_unbundler);
    const bool reopens = c.major == 6 || (c.runtime_unbundler == 0 && std::string(c.release) == "5.5");
    auto load = reinterpret_cast<decltype(&hipModuleLoadData)>(dlsym(hip.handle, "hipModuleLoadData"));
    auto unload = reinterpret_cast<decltype(&hipModuleUnload)>(dlsym(hip.handle, "hipModuleUnload"));
    TempDir dir;
    const auto file = dir.path / "kernels.co";
    const auto bytes = code_object("gfx1100", 4);
    testing::write_file(file.string(), bytes);
    int fd = ::open(file.c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    void* mapped = mmap(nullptr, bytes.size(), PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    ASSERT_NE(mapped, MAP_FAILED);
    hipModule_t spaced_module = nullptr, deleted_module = nullptr;
    // The path holds a space: CLR's /proc/self/maps reading cuts it there.
    const int spaced = load(&spaced_module, mapped);
    std::filesystem::remove(file);
    const int deleted = load(&deleted_module, mapped);
    if (reopens) {
      EXPECT_EQ(spaced, kFileNotFound);
      EXPECT_EQ(deleted, kFileNotFound);
      EXPECT_EQ(hip.counter("reopens"), 2);
    } else {
      EXPECT_EQ(spaced, 0);
      EXPECT_EQ(deleted, 0);
      EXPECT_EQ(hip.counter("reopens"), 0);
      EXPECT_EQ(hip.counter("module_loads"), 2);
      EXPECT_EQ(unload(spaced_module), 0);
      EXPECT_EQ(unload(deleted_module), 0);
    }
    munmap(mapped, bytes.size());
  }
}

// The copy is an anonymous mapping of its own, not heap memory (which
// glibc.malloc.hugetlb can place in a /anon_hugepage mapping HIP would take
// for a file), and is unmapped once the module is unloaded.
TEST_F(HipReleaseTest, TheCopyIsAnAnonymousMappingUnmappedAtUnload) {
  const FakeHip& hip = fake(6, "6.2");
  TempDir dir;
  const auto file = dir.path / "kernels.co";
  testing::write_file(file.string(), code_object("gfx1100", 4));
  Registry registry(open(6), Config{});
  CallerMapping mapping(file);
  ASSERT_FALSE(mapping.bytes.empty());
  auto binary = registry.register_memory(mapping.bytes, file.string());
  ASSERT_TRUE(Succeeds(binary));
  ASSERT_TRUE(Succeeds(registry.lookup_kernel(*binary, 0, "k")));
  EXPECT_EQ(hip.counter("own_mappings"), 1);
  void* page = const_cast<void*>(hip.last_image());
  ASSERT_NE(page, nullptr);
  ASSERT_EQ(reinterpret_cast<std::uintptr_t>(page) % static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE)), 0u);
  unsigned char resident = 0;
  EXPECT_EQ(mincore(page, 1, &resident), 0) << "the copy is mapped while the module lives";
  ASSERT_TRUE(Succeeds(registry.unregister(*binary)));
  EXPECT_EQ(hip.counter("bytes_changed"), 0);
  EXPECT_EQ(mincore(page, 1, &resident), -1);
  EXPECT_EQ(errno, ENOMEM) << "the copy is still mapped after hipModuleUnload";
}

// The heap copy lives until hipModuleUnload; the caller's buffer changing
// afterwards is not seen, and a buffer changed under a module is.
TEST_F(HipReleaseTest, TheLibraryNoticesBytesChangedBeforeUnload) {
  fake(6, "6.2");
  auto runtime = open(6);
  auto bytes = code_object("gfx1100", 4);
  auto code_object = CodeObject::read(bytes);
  ASSERT_TRUE(Succeeds(code_object));
  auto module = runtime->load(0, Image{bytes, nullptr}, *code_object);
  ASSERT_TRUE(Succeeds(module));
  bytes[0x100] ^= std::byte{0xff};
  module->reset();
  EXPECT_EQ(FakeHip::at(library_of(6)).counter("bytes_changed"), 1);
}

// HIP finds a function only among the STT_FUNC symbols: a kernel the
// metadata lists without one is NotFound before HIP is asked (which would
// leave the miss in the caller's HIP error state), and nothing is loaded.
TEST_F(HipReleaseTest, AKernelWithoutAFunctionSymbolIsNotFoundBeforeHip) {
  const FakeHip& hip = fake(7);
  auto runtime = open(7);
  auto bytes = code_object("gfx1100", 5, /*function_symbol=*/false);
  auto unlisted = CodeObject::read(bytes);
  ASSERT_TRUE(Succeeds(unlisted));
  ASSERT_EQ(unlisted->kernels().size(), 1u);
  EXPECT_FALSE(unlisted->kernels()[0].function_symbol);
  const int set_device_calls = hip.counter("set_device");
  auto module = runtime->load(0, Image{bytes, nullptr}, *unlisted);
  ASSERT_TRUE(FailsWith(module, ErrorKind::NotFound));
  EXPECT_EQ(module.error().message(),
            "HIP load: kernel 'k' on device 0 (gfx1100) has no function symbol (STT_FUNC) of that name in the code "
            "object, which HIP's hipModuleGetFunction finds kernels by (not loaded)");
  EXPECT_EQ(hip.counter("module_loads"), 0);
  EXPECT_EQ(hip.counter("failed_calls"), 0);
  EXPECT_EQ(hip.counter("set_device"), set_device_calls);

  auto with_symbol = code_object("gfx1100", 5);
  auto listed = CodeObject::read(with_symbol);
  ASSERT_TRUE(Succeeds(listed));
  EXPECT_TRUE(listed->kernels()[0].function_symbol);
  EXPECT_TRUE(Succeeds(runtime->load(0, Image{with_symbol, nullptr}, *listed)));
}

// hipModuleLoadData refuses a foreign ISA, a version or a generic the
// release cannot load: hipErrorSharedObjectInitFailed before 6.1,
// hipErrorNoBinaryForGpu after; both InvalidArgument.
TEST_F(HipReleaseTest, ARefusedCodeObjectIsInvalidArgumentWithTheReleasesStatus) {
  struct Case {
    int major;
    const char* release;
    std::string processor;
    unsigned version;
    const char* status;
  };
  for (const Case& c : {Case{5, "5.2", "gfx1100", 6, "hipErrorSharedObjectInitFailed (303)"},
                        Case{6, "6.2", "gfx11-generic", 6, "hipErrorNoBinaryForGpu (209)"},
                        Case{7, "7.0", "gfx90a", 6, "hipErrorNoBinaryForGpu (209)"}}) {
    SCOPED_TRACE(c.release);
    fake(c.major, c.release);
    auto runtime = open(c.major);
    auto bytes = code_object(c.processor, c.version);
    auto code_object = CodeObject::read(bytes);
    ASSERT_TRUE(Succeeds(code_object));
    auto module = runtime->load(0, Image{bytes, nullptr}, *code_object);
    ASSERT_TRUE(FailsWith(module, ErrorKind::InvalidArgument));
    EXPECT_TRUE(Contains(module.error().message(), std::string("hipModuleLoadData failed with ") + c.status));
  }
}

}  // namespace
}  // namespace coload
