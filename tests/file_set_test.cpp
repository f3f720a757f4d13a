// File sets (coload/fat_binary.h, FatBinary::open_files; docs/loading.md,
// "File sets"): per-arch bare code objects laid out as AITER ships them
// (fixtures filesets/hsa/<arch>/<kernel>.co), selected per device through
// the registry over the dry-run runtime, and the errors of a set.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "code_object_test_support.h"
#include "coload/fat_binary.h"
#include "coload/registry.h"
#include "coload/runtime.h"
#include "registry_test_support.h"
#include "test_util.h"

namespace coload {
namespace {

namespace fs = std::filesystem;
using testing::dry_run_devices;
using testing::FailsWith;
using testing::fixture;
using testing::ScratchDirectory;
using testing::Succeeds;

const std::string kHsa = fixture("filesets/hsa");

std::string object(const std::string& arch, const std::string& kernel) {
  return kHsa + "/" + arch + "/" + kernel + ".co";
}

/// What a device loads of the set: per bundle, the file chosen and its tier.
struct Chosen {
  std::string file;
  std::optional<Tier> tier;
};

struct FileSetTest : ::testing::Test {
  // The matrix of issue 26: native where present, the generic family for
  // gfx1101 and gfx1151, nothing for gfx906.
  std::vector<Device> devices =
      dry_run_devices({"gfx90a", "gfx942", "gfx950", "gfx1030", "gfx1101", "gfx1151", "gfx906"});
  Registry registry{std::shared_ptr<Runtime>(open_dry_run_runtime(devices)), Config{}};

  std::vector<Chosen> choices(BinaryHandle binary, std::size_t device) {
    std::vector<Chosen> chosen;
    auto walked = registry.choose(binary, device, [&](std::size_t, Expected<BundleChoice>& choice) {
      EXPECT_TRUE(choice.has_value()) << (choice ? "" : choice.error().message());
      if (!choice) return true;
      const Candidate* picked = choice->selection.chosen();
      chosen.push_back({choice->file, picked ? picked->tier : std::nullopt});
      return true;
    });
    EXPECT_TRUE(Succeeds(walked));
    return chosen;
  }
};

TEST_F(FileSetTest, OneBundlePerKernelAndTheFileEachDeviceLoads) {
  auto binary = registry.register_directory(kHsa, {.pattern = "*.co", .recursive = true});
  ASSERT_TRUE(Succeeds(binary));
  EXPECT_EQ(registry.stats().code_objects_read, 0u);  // registering reads headers and symbols only

  struct Row {
    std::size_t device;
    std::string arch;  // the folder the kernels come from
    Tier tier;
  };
  const Row rows[] = {{0, "gfx90a", Tier::Native},         {1, "gfx942", Tier::Native},
                      {2, "gfx950", Tier::Native},         {3, "gfx1030", Tier::Native},
                      {4, "gfx11-generic", Tier::Generic}, {5, "gfx11-generic", Tier::Generic}};
  for (const Row& row : rows) {
    SCOPED_TRACE(devices[row.device].str());
    std::vector<Chosen> chosen = choices(*binary, row.device);
    // fmha_fwd's group, gemm's group, gemm_128x128's (gfx950 only), in path order of their first files.
    ASSERT_EQ(chosen.size(), 3u);
    EXPECT_EQ(chosen[0].file, object(row.arch, "fmha_fwd"));
    EXPECT_EQ(chosen[0].tier, row.tier);
    EXPECT_EQ(chosen[1].file, object(row.arch, "gemm"));
    EXPECT_EQ(chosen[1].tier, row.tier);
    EXPECT_EQ(chosen[2].tier.has_value(), row.arch == "gfx950");
    for (const char* kernel : {"fmha_fwd", "gemm"}) {
      auto found = registry.lookup_kernel(*binary, row.device, kernel);
      ASSERT_TRUE(Succeeds(found)) << kernel;
      EXPECT_EQ((*found)->name, kernel);
    }
    auto modules = registry.modules(*binary, row.device);
    ASSERT_TRUE(Succeeds(modules));
    EXPECT_EQ(modules->size(), row.arch == "gfx950" ? 3u : 2u);
    EXPECT_EQ((*modules)[0]->code_object().target().target.str().find(row.arch.substr(0, 5)), 0u);
    // The file each module came from, as the choices named them.
    std::vector<std::string> expected = {object(row.arch, "fmha_fwd"), object(row.arch, "gemm")};
    if (row.arch == "gfx950") expected.push_back(chosen[2].file);
    auto files = registry.module_files(*binary, row.device);
    ASSERT_TRUE(Succeeds(files));
    EXPECT_EQ(*files, expected);
  }
}

TEST_F(FileSetTest, NothingForGfx906ListsWhatIsThereAndNamesTheFiles) {
  auto binary = registry.register_directory(kHsa, {.pattern = "*.co", .recursive = true});
  ASSERT_TRUE(Succeeds(binary));
  auto found = registry.lookup_kernel(*binary, 6, "fmha_fwd");
  ASSERT_TRUE(FailsWith(found, ErrorKind::NotFound));
  const std::string message = found.error().message();
  EXPECT_NE(message.find("none of its 3 bundles fits"), std::string::npos) << message;
  EXPECT_NE(message.find("entries present: hipv4-amdgcn-amd-amdhsa--gfx1030"), std::string::npos) << message;
  EXPECT_NE(message.find(object("gfx942", "fmha_fwd")), std::string::npos) << message;
  EXPECT_NE(message.find(object("gfx11-generic", "fmha_fwd")), std::string::npos) << message;
  EXPECT_NE(message.find("gfx906"), std::string::npos) << message;
}

TEST_F(FileSetTest, ListedFilesAndABundleFileTogether) {
  const std::vector<std::string> paths{object("gfx942", "gemm"), fixture("bundles/driver_two_arch.hipfb"),
                                       object("gfx90a", "gemm"), object("gfx942", "fmha_fwd")};
  auto fat = FatBinary::open_files(paths, "");
  ASSERT_TRUE(Succeeds(fat));
  EXPECT_EQ(fat->name(), paths[0] + " and 3 more files");
  EXPECT_EQ(fat->file_count(), 4u);
  // gemm's group at its first file, the bundle file's bundle, fmha_fwd's group.
  ASSERT_EQ(fat->bundles().size(), 3u);
  EXPECT_EQ(fat->bundles()[0].format, BundleFormat::FileGroup);
  EXPECT_NE(fat->bundles()[1].format, BundleFormat::FileGroup);
  EXPECT_EQ(fat->file(1), paths[1]);
  auto group = fat->read(0);
  ASSERT_TRUE(Succeeds(group));
  ASSERT_EQ(group->entries().size(), 2u);
  EXPECT_EQ(group->entries()[0].id, "hipv4-amdgcn-amd-amdhsa--gfx942");
  EXPECT_EQ(group->entries()[1].id, "hipv4-amdgcn-amd-amdhsa--gfx90a");
  EXPECT_EQ(fat->file(0, 1), paths[2]);
  EXPECT_EQ(fat->file(0), fat->name());  // no entry: the set

  auto binary = registry.register_files(paths);
  ASSERT_TRUE(Succeeds(binary));
  std::vector<Chosen> chosen = choices(*binary, 0);  // gfx90a
  ASSERT_EQ(chosen.size(), 3u);
  EXPECT_EQ(chosen[0].file, paths[2]);
  EXPECT_EQ(chosen[1].file, paths[1]);
  EXPECT_FALSE(chosen[2].tier);  // fmha_fwd only for gfx942 here
  EXPECT_TRUE(Succeeds(registry.lookup_kernel(*binary, 0, "gemm")));
  EXPECT_TRUE(FailsWith(registry.lookup_kernel(*binary, 0, "fmha_fwd"), ErrorKind::NotFound));
}

TEST_F(FileSetTest, OneKernelTwiceForOneTargetIsRefusedNamingBothFiles) {
  ScratchDirectory scratch;
  fs::create_directories(scratch.path() / "a");
  fs::create_directories(scratch.path() / "b");
  fs::copy_file(object("gfx942", "fmha_fwd"), scratch.path() / "a" / "fmha_fwd.co");
  fs::copy_file(object("gfx942", "fmha_fwd"), scratch.path() / "b" / "attention.co");
  fs::copy_file(object("gfx90a", "fmha_fwd"), scratch.path() / "b" / "fmha_fwd.co");
  auto binary = registry.register_directory(scratch.str(), {.recursive = true});
  ASSERT_TRUE(FailsWith(binary, ErrorKind::Ambiguous));
  const std::string message = binary.error().message();
  EXPECT_NE(message.find("kernel \"fmha_fwd\" for target gfx942"), std::string::npos) << message;
  EXPECT_NE(message.find((scratch.path() / "a" / "fmha_fwd.co").string()), std::string::npos) << message;
  EXPECT_NE(message.find((scratch.path() / "b" / "attention.co").string()), std::string::npos) << message;
  // Without the second gfx942 file the same kernel for two targets is the normal case.
  fs::remove(scratch.path() / "b" / "attention.co");
  EXPECT_TRUE(Succeeds(registry.register_directory(scratch.str(), {.recursive = true})));
}

TEST_F(FileSetTest, DirectoriesPatternsAndTheirErrors) {
  // Not recursive: the folder's own files only.
  auto one_arch = list_directory(kHsa + "/gfx950", {.pattern = "gemm*.co"});
  ASSERT_TRUE(Succeeds(one_arch));
  EXPECT_EQ(*one_arch, (std::vector<std::string>{object("gfx950", "gemm"), object("gfx950", "gemm_lds96")}));
  auto top = list_directory(kHsa);  // only subdirectories there
  ASSERT_TRUE(Succeeds(top));
  EXPECT_TRUE(top->empty());
  auto none = registry.register_directory(kHsa);
  ASSERT_TRUE(FailsWith(none, ErrorKind::NotFound));
  EXPECT_NE(none.error().message().find(kHsa), std::string::npos) << none.error().message();
  auto unmatched = registry.register_directory(kHsa, {.pattern = "*.hsaco", .recursive = true});
  ASSERT_TRUE(FailsWith(unmatched, ErrorKind::NotFound));
  EXPECT_NE(unmatched.error().message().find("*.hsaco"), std::string::npos);

  auto missing = registry.register_directory(kHsa + "/gfx999");
  ASSERT_TRUE(FailsWith(missing, ErrorKind::Io));
  EXPECT_NE(missing.error().message().find("gfx999"), std::string::npos);
  auto file = registry.register_directory(object("gfx942", "gemm"));
  ASSERT_TRUE(FailsWith(file, ErrorKind::Io));
  EXPECT_NE(file.error().message().find("not a directory"), std::string::npos);

  ScratchDirectory scratch;
  fs::copy_file(object("gfx942", "gemm"), scratch.path() / "gemm.co");
  fs::copy_file(object("gfx942", "gemm"), scratch.path() / ".hidden.co");  // skipped, or it would clash
  {
    std::ofstream corrupt(scratch.path() / "broken.co", std::ios::binary);
    corrupt << "not a code object at all";
  }
  auto broken = registry.register_directory(scratch.str());
  ASSERT_TRUE(FailsWith(broken, ErrorKind::BadMagic));
  EXPECT_EQ(broken.error().location().file, (scratch.path() / "broken.co").string());
  EXPECT_TRUE(Succeeds(registry.register_directory(scratch.str(), {.pattern = "g*"})));
}

TEST_F(FileSetTest, ListsOfFilesAndTheirErrors) {
  EXPECT_TRUE(FailsWith(registry.register_files({}), ErrorKind::InvalidArgument));
  const std::vector<std::string> missing{object("gfx942", "gemm"), kHsa + "/gfx942/absent.co"};
  auto absent = registry.register_files(missing);
  ASSERT_TRUE(FailsWith(absent, ErrorKind::Io));
  EXPECT_NE(absent.error().message().find("absent.co"), std::string::npos);
  // One file is that file, named by its path.
  const std::vector<std::string> one{object("gfx942", "gemm")};
  auto single = registry.register_files(one);
  ASSERT_TRUE(Succeeds(single));
  EXPECT_EQ(*registry.binary_name(*single), one[0]);
  std::vector<Chosen> chosen = choices(*single, 1);
  ASSERT_EQ(chosen.size(), 1u);
  EXPECT_EQ(chosen[0].file, one[0]);
}

// Kernel sets that overlap without being equal stay separate bundles; a
// kernel both define comes from the better fit (exact features before Any),
// whatever the path order.
TEST_F(FileSetTest, AKernelTwoBundlesDefineComesFromTheBetterFit) {
  auto write = [](const std::string& path, const std::vector<std::string>& kernels, std::uint32_t e_flags) {
    code_object_test::Meta meta;
    meta.kernels.clear();
    for (const std::string& kernel : kernels) meta.kernels.push_back({.name = kernel, .symbol = kernel + ".kd"});
    testing::ElfSpec spec = code_object_test::valid_spec(meta);
    spec.e_flags = e_flags;
    std::vector<std::byte> bytes = testing::write_amdgpu_elf(spec);
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  };
  ScratchDirectory scratch;
  constexpr std::uint32_t kGfx90a = 0x3f;
  const std::string any = (scratch.path() / "a_any.co").string(), exact = (scratch.path() / "b_exact.co").string();
  write(any, {"a"}, kGfx90a | testing::kXnackAny | testing::kSrameccAny);
  write(exact, {"a", "b"}, kGfx90a | testing::kXnackOff | testing::kSrameccOn);
  auto binary = registry.register_files(std::vector<std::string>{any, exact});
  ASSERT_TRUE(Succeeds(binary));
  auto modules = registry.modules(*binary, 0);  // gfx90a:sramecc+:xnack-: both fit, natively
  ASSERT_TRUE(Succeeds(modules));
  ASSERT_EQ(modules->size(), 2u);
  auto a = registry.lookup_kernel(*binary, 0, "a");
  ASSERT_TRUE(Succeeds(a));
  const LoadedModule& second = *(*modules)[1];
  EXPECT_EQ(*a, &second.kernels()[0]) << "a comes from the exact build, b_exact.co";
  EXPECT_EQ(second.code_object().target().target.str(), "gfx90a:sramecc+:xnack-");
}

}  // namespace
}  // namespace coload
