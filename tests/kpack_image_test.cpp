// kpack'd host images (HIPK) against the images they were packed from
// (build/hipk_fixtures, tests/fixtures/hipk_fixtures.sh): what coload chooses
// per wrapper and device is the original's code, byte for byte, or a named
// refusal; never another translation unit's code. Through FatBinary, through
// a wrapper's own FatBinary, and through a registry fed the HIPK records of a
// dlopen'ed library, as a CLR-style layer registers them.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "coload/detail/kpack_archive.h"
#include "coload/detail/wrapper.h"
#include "coload/fat_binary.h"
#include "coload/pipeline.h"
#include "coload/registry.h"
#include "io/map_budget.h"
#include "kpack_writer.h"
#include "loaded_wrappers.h"
#include "registry_test_support.h"
#include "test_util.h"

namespace coload {
namespace {

const std::string kRoot = COLOAD_HIPK_FIXTURE_DIR;
const char* const kSchemes[] = {"none", "zstd-per-kernel"};
const char* const kDevices[] = {"gfx90a",  "gfx90a:xnack+", "gfx90a:xnack-",          "gfx942", "gfx1030", "gfx1100",
                                "gfx1101", "gfx1151",       "gfx908:sramecc+:xnack-", "gfx1200"};

struct Case {
  std::string name, relpath, original;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const auto& row : testing::read_tsv(kRoot + "/cases.tsv")) {  // case, prefix, relpath, original, note
    if (row.size() >= 4) out.push_back({row[0], row[2], row[3]});
  }
  return out;
}

/// Each wrapper's choice for `spec`: the chosen bytes, or the error's kind.
struct Choice {
  std::vector<std::byte> bytes;
  std::optional<ErrorKind> refused;
  std::string why;
};

std::vector<Choice> choices(const FatBinary& binary, const char* spec) {
  std::vector<std::size_t> indices(binary.bundles().size());
  for (std::size_t i = 0; i < indices.size(); ++i) indices[i] = i;
  std::vector<Choice> out(indices.size());
  choose_in_binary(binary, indices, *device_from_spec(spec), {.threads = 1},
                   [&](std::size_t index, Expected<BundleChoice>& choice) {
                     if (!choice) {
                       out[index].refused = choice.error().kind();
                       out[index].why = choice.error().message();
                     } else {
                       auto bytes = choice->chosen_bytes();
                       out[index].bytes.assign(bytes.begin(), bytes.end());
                     }
                     return true;
                   });
  return out;
}

TEST(KpackImages, EveryWrapperGetsTheOriginalsCodeOrANamedRefusal) {
  const std::vector<Case> all = cases();
  ASSERT_GE(all.size(), 15u);
  std::size_t identical = 0, ambiguous = 0;
  for (const char* scheme : kSchemes) {
    for (const Case& one : all) {
      const std::string packed = kRoot + "/" + scheme + "/" + one.name + "/" + one.relpath;
      auto kpacked = FatBinary::open(packed);
      ASSERT_TRUE(kpacked) << kpacked.error().message();
      auto original = FatBinary::open(kRoot + "/" + one.original);
      ASSERT_TRUE(original) << original.error().message();
      ASSERT_TRUE(kpacked->layout().kpack_ref) << packed;
      ASSERT_EQ(kpacked->bundles().size(), original->bundles().size()) << packed;
      for (const char* spec : kDevices) {
        const auto got = choices(*kpacked, spec);
        const auto want = choices(*original, spec);
        for (std::size_t w = 0; w < got.size(); ++w) {
          SCOPED_TRACE(packed + " wrapper " + std::to_string(w) + " on " + spec);
          if (got[w].refused) {
            // Never a crash or a silent substitute: the packer lost which TU is which.
            EXPECT_TRUE(*got[w].refused == ErrorKind::Ambiguous || *got[w].refused == ErrorKind::NotFound)
                << got[w].why;
            ambiguous += *got[w].refused == ErrorKind::Ambiguous;
            if (one.name == "consistent") EXPECT_EQ(got[w].refused, want[w].refused) << got[w].why;
            continue;
          }
          if (got[w].bytes.empty()) continue;  // its key has no entry for the device: nothing, not a substitute
          ASSERT_FALSE(want[w].refused) << "the kpack'd image chose code where the original has none";
          EXPECT_TRUE(got[w].bytes == want[w].bytes) << "another code object than the original's";
          ++identical;
        }
      }
    }
  }
  EXPECT_GT(identical, 0u);
  EXPECT_GT(ambiguous, 0u);  // the fixtures carry the packer's numbering defect
}

TEST(KpackImages, TheConsistentControlMatchesTheOriginalEverywhere) {
  for (const char* scheme : kSchemes) {
    for (const char* relpath : {"lib/libconsistent.so", "bin/app_consistent"}) {
      auto kpacked = FatBinary::open(kRoot + "/" + scheme + "/consistent/" + relpath);
      ASSERT_TRUE(kpacked) << kpacked.error().message();
      auto original = FatBinary::open(kRoot + "/orig/consistent/" + relpath);
      ASSERT_TRUE(original);
      for (const char* spec : kDevices) {
        const auto got = choices(*kpacked, spec);
        const auto want = choices(*original, spec);
        for (std::size_t w = 0; w < got.size(); ++w) {
          EXPECT_EQ(got[w].bytes, want[w].bytes) << relpath << " " << w << " " << spec << ": " << got[w].why;
          EXPECT_EQ(got[w].refused.has_value(), want[w].refused.has_value()) << got[w].why;
        }
      }
    }
  }
}

TEST(KpackImages, MixedTargetsAreRefusedAsAmbiguousNamingTheCounts) {
  // TUs for gfx942 | gfx90a+gfx942 | gfx90a: gfx90a's #0 is wrapper 1's code.
  auto kpacked = FatBinary::open(kRoot + "/zstd-per-kernel/mixed_targets/lib/libmixed_targets.so");
  ASSERT_TRUE(kpacked) << kpacked.error().message();
  const auto got = choices(*kpacked, "gfx90a");
  ASSERT_EQ(got.size(), 3u);
  ASSERT_EQ(got[0].refused, ErrorKind::Ambiguous) << got[0].why;
  EXPECT_NE(got[0].why.find("2 code objects for target gfx90a"), std::string::npos) << got[0].why;
  EXPECT_NE(got[0].why.find("3 wrappers"), std::string::npos) << got[0].why;
  EXPECT_NE(got[0].why.find("mixed_gfx90a.kpack"), std::string::npos) << got[0].why;
  // gfx942 is in TUs 0 and 1 only: refused too.
  EXPECT_EQ(choices(*kpacked, "gfx942")[0].refused, ErrorKind::Ambiguous);
}

TEST(KpackImages, ANonPieImagesZeroPointersAreReadThroughTheMarkerWithAWarning) {
  auto kpacked = FatBinary::open(kRoot + "/none/app_nopie/bin/app_nopie");
  ASSERT_TRUE(kpacked) << kpacked.error().message();
  const auto& warnings = kpacked->layout().warnings;
  ASSERT_FALSE(warnings.empty());
  EXPECT_NE(warnings.front().find("3 of 3 wrappers hold pointer 0"), std::string::npos) << warnings.front();
  EXPECT_EQ(kpacked->bundles().size(), 3u);
}

TEST(KpackImages, TheSearchFollowsRocmKpacksVariables) {
  const std::string tree = kRoot + "/zstd-per-kernel/consistent";
  const std::string image = tree + "/lib/libconsistent.so";
  ReadOptions disabled;
  disabled.kpack.disabled = true;
  auto off = FatBinary::open(image, disabled);
  ASSERT_TRUE(off);
  auto none = choices(*off, "gfx90a");
  ASSERT_EQ(none[0].refused, ErrorKind::NotFound);
  EXPECT_NE(none[0].why.find("ROCM_KPACK_DISABLE"), std::string::npos) << none[0].why;

  ReadOptions only_gfx942;  // ROCM_KPACK_PATH replaces the marker's paths
  only_gfx942.kpack.paths = {tree + "/.kpack/consistent_gfx942.kpack"};
  auto narrowed = FatBinary::open(image, only_gfx942);
  ASSERT_TRUE(narrowed);
  EXPECT_FALSE(choices(*narrowed, "gfx942")[0].bytes.empty());
  auto gfx90a = choices(*narrowed, "gfx90a")[0];  // its archive is not read: nothing fits
  EXPECT_FALSE(gfx90a.refused) << gfx90a.why;
  EXPECT_TRUE(gfx90a.bytes.empty());

  ReadOptions elsewhere;  // COLOAD_KPACK_ROOT: the marker's "../.kpack" from another directory
  elsewhere.kpack.root = "/nonexistent/lib";
  auto lost = FatBinary::open(image, elsewhere);
  ASSERT_TRUE(lost);
  auto missing = choices(*lost, "gfx90a");
  ASSERT_EQ(missing[0].refused, ErrorKind::NotFound);
  EXPECT_NE(missing[0].why.find("/nonexistent/.kpack/consistent_@GFXARCH@.kpack"), std::string::npos) << missing[0].why;
  elsewhere.kpack.root = tree + "/lib";
  auto found = FatBinary::open(image, elsewhere);
  ASSERT_TRUE(found);
  EXPECT_FALSE(choices(*found, "gfx90a")[0].bytes.empty());
}

/// The warnings of `image` read with its archives' pattern matched in `kpack`.
std::vector<std::string> search_warnings(const std::string& image) {
  auto kpacked = FatBinary::open(image);
  EXPECT_TRUE(kpacked) << kpacked.error().message();
  if (!kpacked) return {};
  auto nothing = choices(*kpacked, "gfx942");
  EXPECT_EQ(nothing[0].refused, ErrorKind::NotFound);
  EXPECT_NE(nothing[0].why.find("no kpack archive found"), std::string::npos) << nothing[0].why;
  return kpacked->layout().warnings;
}

bool mentions(const std::vector<std::string>& lines, const std::string& text) {
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& line) { return line.find(text) != line.npos; });
}

TEST(KpackImages, APatternMatchingMoreArchivesThanAllowedMapsNone) {
  // A hostile tree: @GFXARCH@ matches 1025 names (links to one real archive).
  const std::string tree = ::testing::TempDir() + "kpack_many";
  std::filesystem::remove_all(tree);
  std::filesystem::create_directories(tree + "/lib");
  std::filesystem::create_directories(tree + "/.kpack");
  const std::string image = tree + "/lib/libconsistent.so";
  std::filesystem::copy_file(kRoot + "/none/consistent/lib/libconsistent.so", image);
  const std::string archive = kRoot + "/none/consistent/.kpack/consistent_gfx942.kpack";
  for (int i = 0; i < 1025; ++i)
    std::filesystem::create_symlink(archive, tree + "/.kpack/consistent_x" + std::to_string(i) + ".kpack");
  const std::string pattern = tree + "/.kpack/consistent_@GFXARCH@.kpack";
  EXPECT_TRUE(mentions(search_warnings(image), "kpack search path " + pattern +
                                                   " matches 1025 archives; with the 0 read before, that is above "
                                                   "the limit of 1024 archives per image: none of them is read"));

  // 17 matches (past the count that is read without a look at the budget) in a
  // process with no mappings left to keep them.
  for (int i = 17; i < 1025; ++i) std::filesystem::remove(tree + "/.kpack/consistent_x" + std::to_string(i) + ".kpack");
  auto budget = detail::map_budget();
  ASSERT_TRUE(budget.has_value());
  {
    detail::ScopedMaxMapCount lowered(budget->in_use + detail::kReservedMappings + 1);
    EXPECT_TRUE(mentions(search_warnings(image), "kpack search path " + pattern +
                                                     " matches 17 archives, but "
                                                     "vm.max_map_count"));
  }
  auto read = FatBinary::open(image);  // with the budget back, all 17 (one file) are read
  ASSERT_TRUE(read);
  EXPECT_FALSE(choices(*read, "gfx942")[0].bytes.empty());
  std::filesystem::remove_all(tree);
}

TEST(KpackImages, OneWrappersBinaryHoldsItsBundleOnly) {
  const std::string image = kRoot + "/none/consistent/lib/libconsistent.so";
  auto whole = FatBinary::open(image);
  ASSERT_TRUE(whole);
  for (std::uint32_t index = 0; index < 3; ++index) {
    auto one = FatBinary::open_kpack_wrapper(image, index, "wrapper " + std::to_string(index));
    ASSERT_TRUE(one) << one.error().message();
    ASSERT_EQ(one->bundles().size(), 1u);
    EXPECT_EQ(choices(*one, "gfx942")[0].bytes, choices(*whole, "gfx942")[index].bytes);
  }
  auto past = FatBinary::open_kpack_wrapper(image, 7, "wrapper 7");
  ASSERT_FALSE(past);
  EXPECT_EQ(past.error().kind(), ErrorKind::NotFound);
  EXPECT_EQ(past.error().location().field, "reserved");
  auto plain = FatBinary::open_kpack_wrapper(kRoot + "/orig/consistent/lib/libconsistent.so", 0, "w");
  ASSERT_FALSE(plain);
  EXPECT_EQ(plain.error().kind(), ErrorKind::InvalidArgument);
}

/// A CLR-style layer: dlopen the library, hand each record its constructor
/// passes to __hipRegisterFatBinary to the registry, look every kernel up.
TEST(KpackImages, ARegistryLoadsADlopenedLibrarysHipkWrappersAsTheOriginals) {
  const char* const kKernels[] = {"_Z7add_onePii", "_Z9block_sumPKfPfj", "_Z4fillPffy"};
  for (const char* scheme : kSchemes) {
    std::vector<std::vector<std::byte>> loaded[2];  // original, kpack'd: what the runtime was handed
    for (int kpacked = 0; kpacked < 2; ++kpacked) {
      const std::string path = kpacked ? kRoot + "/" + scheme + "/consistent/lib/libconsistent.so"
                                       : kRoot + "/orig/consistent/lib/libconsistent.so";
      void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      ASSERT_NE(handle, nullptr) << ::dlerror();
      std::vector<const void*> wrappers = testing::loaded_wrappers(path, handle);
      ASSERT_EQ(wrappers.size(), 3u);
      auto runtime = std::make_shared<testing::CountingRuntime>(testing::dry_run_devices({"gfx942", "gfx1100"}));
      {
        Registry registry{runtime, Config{}};
        std::vector<BinaryHandle> binaries;
        for (const void* wrapper : wrappers) {
          auto binary = registry.register_wrapper(wrapper);
          ASSERT_TRUE(binary) << binary.error().message();
          binaries.push_back(*binary);
        }
        for (std::size_t device = 0; device < 2; ++device) {
          for (std::size_t w = 0; w < 3; ++w) {
            auto kernel = registry.lookup_kernel(binaries[w], device, kKernels[w]);
            ASSERT_TRUE(kernel) << path << " wrapper " << w << ": " << kernel.error().message();
          }
        }
        for (std::span<const std::byte> image : runtime->images())
          loaded[kpacked].emplace_back(image.begin(), image.end());
      }
      ::dlclose(handle);
    }
    ASSERT_EQ(loaded[0].size(), 6u);
    EXPECT_EQ(loaded[1], loaded[0]) << scheme << ": the runtime was handed other code objects";
  }
}

TEST(KpackImages, AHipkRecordInMemoryWithoutAFileNeedsTheBinarysPath) {
  const std::string image = kRoot + "/none/consistent/lib/libconsistent.so";
  struct Record {  // a HIPK record in no file's mapping
    std::uint32_t magic = kHipKpackWrapperMagic, version = 1;
    const void* binary = nullptr;
    std::uint64_t reserved = 1;
  };
  auto record = std::make_unique<Record>();
  auto runtime = std::make_shared<testing::CountingRuntime>(testing::dry_run_devices({"gfx942"}));
  Registry anonymous{runtime, Config{}};
  auto binary = anonymous.register_wrapper(record.get(), "heap");
  ASSERT_TRUE(binary) << binary.error().message();
  auto lost = anonymous.lookup_kernel(*binary, 0, "_Z9block_sumPKfPfj");
  ASSERT_FALSE(lost);
  EXPECT_EQ(lost.error().kind(), ErrorKind::NotFound);
  EXPECT_NE(lost.error().message().find("binary_path"), std::string::npos) << lost.error().message();

  Config told;  // the caller knows the binary
  told.kpack.binary_path = image;
  Registry knowing{runtime, told};
  auto known = knowing.register_wrapper(record.get(), "heap");
  ASSERT_TRUE(known);
  auto kernel = knowing.lookup_kernel(*known, 0, "_Z9block_sumPKfPfj");
  EXPECT_TRUE(kernel) << kernel.error().message();
}

/// Writes `objects` as the archive `path`.
void write_archive(const std::string& path, std::vector<testing::kpack::Object> objects) {
  const auto bytes = testing::kpack::write(objects, {.scheme = testing::kpack::Scheme::ZstdPerKernel});
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

TEST(KpackImages, AFeatureOverlayArchiveServesItsModeAndTheBaseTheOthers) {
  // The consistent library with its gfx90a code split as TheRock splits a
  // feature variant: a partial overlay _gfx90a:xnack-.kpack over _gfx90a.kpack.
  const std::string tree = ::testing::TempDir() + "kpack_overlay";
  std::filesystem::remove_all(tree);
  std::filesystem::create_directories(tree + "/lib");
  std::filesystem::create_directories(tree + "/.kpack");
  std::filesystem::copy_file(kRoot + "/none/consistent/lib/libconsistent.so", tree + "/lib/libconsistent.so");
  const auto base = testing::file_bytes(testing::fixture("co/gfx90a.co"));
  const auto minus = testing::file_bytes(testing::fixture("co/gfx90a_xnack-.co"));
  std::vector<testing::kpack::Object> any, overlay;
  for (int w = 0; w < 3; ++w) {
    const std::string key = "consistent/lib/libconsistent.so#" + std::to_string(w);
    any.push_back(
        {.key = key, .target = "gfx90a", .bytes = base, .metadata_target = "hipv4-amdgcn-amd-amdhsa--gfx90a"});
    overlay.push_back({.key = key,
                       .target = "gfx90a:xnack-",
                       .bytes = minus,
                       .metadata_target = "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-"});
  }
  write_archive(tree + "/.kpack/consistent_gfx90a.kpack", any);
  write_archive(tree + "/.kpack/consistent_gfx90a:xnack-.kpack", overlay);
  auto kpacked = FatBinary::open(tree + "/lib/libconsistent.so");
  ASSERT_TRUE(kpacked) << kpacked.error().message();
  for (const auto& [spec, want, archive] : {std::tuple{"gfx90a:xnack-", &minus, "consistent_gfx90a:xnack-.kpack"},
                                            std::tuple{"gfx90a:xnack+", &base, "consistent_gfx90a.kpack"}}) {
    std::vector<std::size_t> every{0, 1, 2};
    choose_in_binary(*kpacked, every, *device_from_spec(spec), {.threads = 1},
                     [&](std::size_t index, Expected<BundleChoice>& choice) {
                       EXPECT_TRUE(choice) << spec << " " << index << ": " << choice.error().message();
                       if (!choice) return true;
                       auto bytes = choice->chosen_bytes();
                       EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), want->begin(), want->end())) << spec;
                       EXPECT_EQ(choice->file, tree + "/.kpack/" + archive) << spec;  // the report names it
                       return true;
                     });
  }
}

TEST(KpackImages, ACodeObjectLackingAKernelItsWrapperRegistersIsRefused) {
  // Counts that agree can still hide a swap: the consistent library's archives
  // rewritten with wrappers 0 and 1's code objects exchanged.
  const std::string tree = ::testing::TempDir() + "kpack_swapped";
  std::filesystem::remove_all(tree);
  std::filesystem::create_directories(tree + "/lib");
  std::filesystem::create_directories(tree + "/.kpack");
  const std::string library = tree + "/lib/libconsistent.so";
  std::filesystem::copy_file(kRoot + "/none/consistent/lib/libconsistent.so", library);
  for (const char* target : {"gfx90a", "gfx942", "gfx1100"}) {
    const std::string name = std::string("/.kpack/consistent_") + target + ".kpack";
    auto archive = FatBinary::open(kRoot + "/none/consistent" + name);
    ASSERT_TRUE(archive) << archive.error().message();
    std::vector<testing::kpack::Object> objects;
    for (std::size_t b = 0; b < archive->bundles().size(); ++b) {
      const auto members = archive->kpack_members(b);
      if (members->key.rfind("consistent/lib/", 0) != 0) continue;
      auto bundle = archive->read(b);
      ASSERT_TRUE(bundle);
      std::string key = members->key;
      if (key.ends_with("#0"))
        key.back() = '1';
      else if (key.ends_with("#1"))
        key.back() = '0';
      const auto bytes = bundle->entries()[0].bytes;
      objects.push_back({.key = key,
                         .target = target,
                         .bytes = {bytes.begin(), bytes.end()},
                         .metadata_target = std::string(bundle->entries()[0].id)});
    }
    write_archive(tree + name, objects);
  }
  void* handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << ::dlerror();
  std::vector<const void*> wrappers = testing::loaded_wrappers(library, handle);
  ASSERT_EQ(wrappers.size(), 3u);
  auto runtime = std::make_shared<testing::CountingRuntime>(testing::dry_run_devices({"gfx942"}));
  {
    Registry registry{runtime, Config{}};
    auto first = registry.register_wrapper(wrappers[0]);
    ASSERT_TRUE(first);
    const char stub = 0;  // wrapper 0 (vector_ops.hip) registers add_one, as its constructor would
    ASSERT_TRUE(registry.register_function(*first, &stub, "_Z7add_onePii"));
    auto kernel = registry.lookup_function(&stub, 0);
    ASSERT_FALSE(kernel);
    EXPECT_EQ(kernel.error().kind(), ErrorKind::Ambiguous) << kernel.error().message();
    EXPECT_NE(kernel.error().message().find("lacks kernel \"_Z7add_onePii\""), std::string::npos)
        << kernel.error().message();
    EXPECT_EQ(runtime->images().size(), 1u);  // loaded, checked, and unloaded: nothing of it is kept
  }
  ::dlclose(handle);
}

TEST(KpackImages, AnArchiveCutShortAfterItWasMappedIsAnErrorNotAFault) {
  const std::string tree = ::testing::TempDir() + "kpack_cut";
  std::filesystem::remove_all(tree);
  std::filesystem::copy(kRoot + "/zstd-per-kernel/consistent", tree, std::filesystem::copy_options::recursive);
  struct Record {  // wrapper 0's HIPK record; the caller names its binary
    std::uint32_t magic = kHipKpackWrapperMagic, version = 1;
    const void* binary = nullptr;
    std::uint64_t reserved = 0;
  };
  auto record = std::make_unique<Record>();
  Config config;
  config.kpack.binary_path = tree + "/lib/libconsistent.so";
  auto runtime = std::make_shared<testing::CountingRuntime>(testing::dry_run_devices({"gfx90a", "gfx942"}));
  Registry registry{runtime, config};
  auto binary = registry.register_wrapper(record.get(), "wrapper 0");
  ASSERT_TRUE(binary);
  ASSERT_TRUE(registry.lookup_kernel(*binary, 0, "_Z7add_onePii"));  // maps every archive
  std::filesystem::resize_file(tree + "/.kpack/consistent_gfx942.kpack", 100);
  auto cut = registry.lookup_kernel(*binary, 1, "_Z7add_onePii");
  ASSERT_FALSE(cut);
  EXPECT_EQ(cut.error().kind(), ErrorKind::Io) << cut.error().message();
  EXPECT_EQ(cut.error().location().field, "size") << cut.error().message();
  EXPECT_EQ(cut.error().location().value, 100u);
}

}  // namespace
}  // namespace coload
