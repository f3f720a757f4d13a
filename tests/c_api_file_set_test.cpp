// coload_register_files and coload_register_directory (coload/coload.h) over
// the per-arch fixtures filesets/hsa/<arch>/<kernel>.co, and coload_choice's
// `file`: the dry-run runtime, no GPU.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "c_api_test_support.h"
#include "coload/coload.h"

namespace {

using coload::testing::dry_run_options;
using coload::testing::fixture;
using coload::testing::kernel_info;

const std::string kHsa = fixture("filesets/hsa");

std::string object(const std::string& arch, const std::string& kernel) {
  return kHsa + "/" + arch + "/" + kernel + ".co";
}

struct CApiFileSetTest : ::testing::Test {
  coload_registry* registry = nullptr;
  void SetUp() override {
    auto options = dry_run_options("gfx942, gfx1151, gfx906");
    ASSERT_EQ(coload_registry_create(&options, &registry), COLOAD_OK) << coload_last_error_message();
  }
  void TearDown() override {
    if (registry) EXPECT_EQ(coload_registry_destroy(registry), COLOAD_OK);
  }

  /// The `file` of each bundle's choice for `device`, "-" where none fits.
  std::vector<std::string> chosen_files(coload_binary binary, std::size_t device) {
    std::vector<std::string> files;
    auto take = [](void* user, const coload_choice* choice) {
      auto& out = *static_cast<std::vector<std::string>*>(user);
      EXPECT_GE(choice->struct_size, offsetof(coload_choice, file) + sizeof choice->file);
      EXPECT_NE(choice->file, nullptr);
      out.push_back(choice->status == COLOAD_OK ? std::string(choice->file) : "-");
      return 1;
    };
    EXPECT_EQ(coload_choose(registry, binary, device, take, &files), COLOAD_OK) << coload_last_error_message();
    return files;
  }
};

TEST_F(CApiFileSetTest, DirectoryWithPatternAndRecursion) {
  coload_binary binary = 0;
  ASSERT_EQ(coload_register_directory(registry, kHsa.c_str(), "*.co", 1, &binary), COLOAD_OK)
      << coload_last_error_message();
  EXPECT_EQ(chosen_files(binary, 0),
            (std::vector<std::string>{object("gfx942", "fmha_fwd"), object("gfx942", "gemm"), "-"}));
  EXPECT_EQ(chosen_files(binary, 1),
            (std::vector<std::string>{object("gfx11-generic", "fmha_fwd"), object("gfx11-generic", "gemm"), "-"}));
  coload_kernel_info info = kernel_info();
  EXPECT_EQ(coload_lookup_kernel(registry, binary, 1, "gemm", &info), COLOAD_OK) << coload_last_error_message();
  EXPECT_EQ(coload_lookup_kernel(registry, binary, 2, "gemm", &info), COLOAD_ERROR_NOT_FOUND);
  EXPECT_NE(std::string(coload_last_error_message()).find(object("gfx90a", "fmha_fwd")), std::string::npos)
      << coload_last_error_message();
  EXPECT_EQ(coload_unregister(registry, binary), COLOAD_OK);

  // Not recursive, every file: one folder's objects.
  ASSERT_EQ(coload_register_directory(registry, (kHsa + "/gfx942").c_str(), nullptr, 0, &binary), COLOAD_OK)
      << coload_last_error_message();
  EXPECT_EQ(chosen_files(binary, 0),
            (std::vector<std::string>{object("gfx942", "fmha_fwd"), object("gfx942", "gemm")}));
  // The pattern selects by file name: only gemm.co.
  ASSERT_EQ(coload_register_directory(registry, kHsa.c_str(), "gemm.co", 1, &binary), COLOAD_OK);
  EXPECT_EQ(chosen_files(binary, 0), (std::vector<std::string>{object("gfx942", "gemm")}));
  EXPECT_EQ(coload_lookup_kernel(registry, binary, 0, "fmha_fwd", &info), COLOAD_ERROR_NOT_FOUND);
}

TEST_F(CApiFileSetTest, ListedFiles) {
  const std::string paths[] = {object("gfx942", "fmha_fwd"), object("gfx90a", "fmha_fwd"),
                               object("gfx11-generic", "fmha_fwd")};
  const char* const c_paths[] = {paths[0].c_str(), paths[1].c_str(), paths[2].c_str()};
  coload_binary binary = 0;
  ASSERT_EQ(coload_register_files(registry, c_paths, 3, &binary), COLOAD_OK) << coload_last_error_message();
  EXPECT_EQ(chosen_files(binary, 0), (std::vector<std::string>{paths[0]}));
  EXPECT_EQ(chosen_files(binary, 1), (std::vector<std::string>{paths[2]}));
  EXPECT_EQ(chosen_files(binary, 2), (std::vector<std::string>{"-"}));
  // A refused group's choice names the set.
  std::string refused;
  auto take = [](void* user, const coload_choice* choice) {
    *static_cast<std::string*>(user) = choice->file;
    EXPECT_EQ(choice->status, COLOAD_ERROR_NOT_FOUND);
    return 1;
  };
  ASSERT_EQ(coload_choose(registry, binary, 2, take, &refused), COLOAD_OK);
  EXPECT_EQ(refused, paths[0] + " and 2 more files");

  // One file is coload_register_file: its choice names that file.
  ASSERT_EQ(coload_register_files(registry, c_paths, 1, &binary), COLOAD_OK);
  EXPECT_EQ(chosen_files(binary, 0), (std::vector<std::string>{paths[0]}));
}

TEST_F(CApiFileSetTest, Errors) {
  coload_binary binary = 5;
  const std::string gemm = object("gfx942", "gemm");
  const char* const one[] = {gemm.c_str()};
  const char* const with_null[] = {gemm.c_str(), nullptr};
  EXPECT_EQ(coload_register_files(nullptr, one, 1, &binary), COLOAD_ERROR_INVALID_HANDLE);
  EXPECT_EQ(coload_register_files(registry, one, 1, nullptr), COLOAD_ERROR_NULL_ARGUMENT);
  EXPECT_EQ(coload_register_files(registry, nullptr, 1, &binary), COLOAD_ERROR_NULL_ARGUMENT);
  EXPECT_EQ(binary, 0u);
  EXPECT_EQ(coload_register_files(registry, with_null, 2, &binary), COLOAD_ERROR_NULL_ARGUMENT);
  EXPECT_NE(std::string(coload_last_error_message()).find("paths[1]"), std::string::npos);
  EXPECT_EQ(coload_register_files(registry, one, 0, &binary), COLOAD_ERROR_INVALID_ARGUMENT);
  // A count no set can hold is named before anything is read or allocated for it.
  EXPECT_EQ(coload_register_files(registry, one, SIZE_MAX, &binary), COLOAD_ERROR_LIMIT_EXCEEDED);
  EXPECT_NE(std::string(coload_last_error_message()).find("count 18446744073709551615"), std::string::npos)
      << coload_last_error_message();

  const std::string absent = kHsa + "/gfx942/absent.co";
  const char* const missing[] = {gemm.c_str(), absent.c_str()};
  EXPECT_EQ(coload_register_files(registry, missing, 2, &binary), COLOAD_ERROR_IO);
  EXPECT_NE(std::string(coload_last_error_message()).find(absent), std::string::npos);

  const std::string twin = object("gfx942", "fmha_fwd");
  const char* const twice[] = {twin.c_str(), gemm.c_str(), twin.c_str()};
  EXPECT_EQ(coload_register_files(registry, twice, 3, &binary), COLOAD_ERROR_AMBIGUOUS);
  EXPECT_NE(std::string(coload_last_error_message()).find("\"fmha_fwd\" for target gfx942"), std::string::npos)
      << coload_last_error_message();

  EXPECT_EQ(coload_register_directory(nullptr, kHsa.c_str(), nullptr, 1, &binary), COLOAD_ERROR_INVALID_HANDLE);
  EXPECT_EQ(coload_register_directory(registry, nullptr, nullptr, 1, &binary), COLOAD_ERROR_NULL_ARGUMENT);
  EXPECT_EQ(coload_register_directory(registry, kHsa.c_str(), nullptr, 1, nullptr), COLOAD_ERROR_NULL_ARGUMENT);
  EXPECT_EQ(coload_register_directory(registry, (kHsa + "/gfx999").c_str(), nullptr, 1, &binary), COLOAD_ERROR_IO);
  EXPECT_EQ(coload_register_directory(registry, gemm.c_str(), nullptr, 1, &binary), COLOAD_ERROR_IO);
  EXPECT_EQ(coload_register_directory(registry, kHsa.c_str(), "*.hsaco", 1, &binary), COLOAD_ERROR_NOT_FOUND);
  EXPECT_EQ(coload_register_directory(registry, kHsa.c_str(), nullptr, 0, &binary), COLOAD_ERROR_NOT_FOUND);
  EXPECT_EQ(binary, 0u);
}

}  // namespace
