// The settings of coload_registry_options: each changes what the registry
// does as its COLOAD_* variable would, is checked by the same parser, and
// names its field when it is bad; the environment fills in what is left at 0.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "c_api_test_support.h"
#include "coload/coload.h"
#include "loaded_wrappers.h"

namespace {

using coload::testing::file_bytes;

using coload::testing::dry_run_options;
using coload::testing::fixture;

struct Choice {
  coload_status status = COLOAD_ERROR_INTERNAL;
  coload_tier tier = COLOAD_TIER_HOTSWAP;
  std::string entry_id;
  std::string message;
};

/// Bundle 0's choice for device 0 of a registry made with `options`, of
/// `bytes`; the status of registering them when that fails.
Choice choose(const coload_registry_options& options, const std::vector<std::byte>& bytes) {
  Choice choice;
  coload_registry* registry = nullptr;
  if (coload_registry_create(&options, &registry) != COLOAD_OK) {
    choice.message = coload_last_error_message();
    return choice;
  }
  coload_binary binary = 0;
  choice.status = coload_register_memory(registry, bytes.data(), bytes.size(), "input", &binary);
  if (choice.status != COLOAD_OK) {
    choice.message = coload_last_error_message();
    EXPECT_EQ(coload_registry_destroy(registry), COLOAD_OK);
    return choice;
  }
  EXPECT_EQ(coload_choose(
                registry, binary, 0,
                [](void* user_data, const coload_choice* made) {
                  auto* into = static_cast<Choice*>(user_data);
                  into->status = made->status;
                  into->tier = made->tier;
                  into->entry_id = made->entry_id;
                  into->message = made->message;
                  return 0;
                },
                &choice),
            COLOAD_OK);
  EXPECT_EQ(coload_registry_destroy(registry), COLOAD_OK);
  return choice;
}

/// driver_v3.hipfb with one byte of its stored hash flipped (v3 header: hash at offset 24).
std::vector<std::byte> ccob_with_a_wrong_hash() {
  std::vector<std::byte> bytes = file_bytes(fixture("compressed/driver_v3.hipfb"));
  bytes.at(24) ^= std::byte{0x01};
  return bytes;
}

TEST(CApiSettings, HashCheckSkipReadsABundleVerifyRefuses) {
  const std::vector<std::byte> bytes = ccob_with_a_wrong_hash();
  auto options = dry_run_options("gfx90a");
  EXPECT_EQ(choose(options, bytes).status, COLOAD_ERROR_HASH_MISMATCH);  // verify is the default
  options.hash_check = COLOAD_HASH_CHECK_VERIFY;
  EXPECT_EQ(choose(options, bytes).status, COLOAD_ERROR_HASH_MISMATCH);
  options.hash_check = COLOAD_HASH_CHECK_SKIP;
  Choice skipped = choose(options, bytes);
  EXPECT_EQ(skipped.status, COLOAD_OK) << skipped.message;
  EXPECT_EQ(skipped.entry_id, "hipv4-amdgcn-amd-amdhsa--gfx90a");
}

TEST(CApiSettings, MaxDecompressedBytesCapsACompressedBundle) {
  const std::vector<std::byte> bytes = file_bytes(fixture("compressed/driver_v3.hipfb"));
  auto options = dry_run_options("gfx90a");
  options.max_decompressed_bytes = 1024;
  Choice capped = choose(options, bytes);  // refused when it registers: its header declares more
  EXPECT_EQ(capped.status, COLOAD_ERROR_LIMIT_EXCEEDED) << capped.message;
  EXPECT_NE(capped.message.find("0x400"), std::string::npos) << capped.message;
  options.max_decompressed_bytes = 0;  // the default, 1 GiB
  EXPECT_EQ(choose(options, bytes).status, COLOAD_OK);
}

TEST(CApiSettings, ExtendedIsaCompatOptsADeviceIntoItsSameIsaEquivalent) {
  const std::vector<std::byte> bytes = file_bytes(fixture("select/gfx1030_only.hipfb"));
  auto options = dry_run_options("gfx1031");
  EXPECT_EQ(choose(options, bytes).status, COLOAD_ERROR_NOT_FOUND);
  options.extended_isa_compat = "gfx1031";
  Choice equivalent = choose(options, bytes);
  ASSERT_EQ(equivalent.status, COLOAD_OK) << equivalent.message;
  EXPECT_EQ(equivalent.tier, COLOAD_TIER_EQUIVALENT);
  EXPECT_EQ(equivalent.entry_id, "hipv4-amdgcn-amd-amdhsa--gfx1030");
}

struct Logged {
  std::vector<std::pair<coload_log_level, std::string>> lines;
  static void record(void* user_data, coload_log_level level, const char* message) {
    static_cast<Logged*>(user_data)->lines.emplace_back(level, message);
  }
};

TEST(CApiSettings, LogLevelDebugReachesTheCallback) {
  const std::string ccob = fixture("compressed/driver_v3.hipfb");
  Logged logged;
  auto options = dry_run_options("gfx90a");
  options.log = &Logged::record;
  options.log_user_data = &logged;
  options.log_level = COLOAD_LOG_LEVEL_DEBUG;
  coload_registry* registry = nullptr;
  ASSERT_EQ(coload_registry_create(&options, &registry), COLOAD_OK) << coload_last_error_message();
  coload_binary binary = 0;
  ASSERT_EQ(coload_register_file(registry, ccob.c_str(), &binary), COLOAD_OK);
  coload_kernel_info info;
  std::memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  EXPECT_EQ(coload_lookup_kernel(registry, binary, 0, "_Z5saxpyfPKfPfi", &info), COLOAD_OK);
  EXPECT_EQ(coload_registry_destroy(registry), COLOAD_OK);
  bool streamed = false;
  for (const auto& [level, text] : logged.lines)
    streamed |= level == COLOAD_LOG_DEBUG && text.find("CCOB streamed for gfx90a") != std::string::npos;
  EXPECT_TRUE(streamed) << logged.lines.size() << " lines, none at debug about the CCOB";

  Logged quiet;
  options.log_user_data = &quiet;
  options.log_level = COLOAD_LOG_LEVEL_ERROR;
  ASSERT_EQ(coload_registry_create(&options, &registry), COLOAD_OK);
  ASSERT_EQ(coload_register_file(registry, ccob.c_str(), &binary), COLOAD_OK);
  EXPECT_EQ(coload_lookup_kernel(registry, binary, 0, "_Z5saxpyfPKfPfi", &info), COLOAD_OK);
  EXPECT_EQ(coload_registry_destroy(registry), COLOAD_OK);
  EXPECT_TRUE(quiet.lines.empty());
}

TEST(CApiSettings, ABadSettingNamesItsField) {
  coload_registry* registry = nullptr;
  auto options = dry_run_options("gfx90a");
  options.extended_isa_compat = "gfx9999";
  EXPECT_EQ(coload_registry_create(&options, &registry), COLOAD_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(coload_last_error_message()).find("coload_registry_options.extended_isa_compat \"gfx9999\""),
            std::string::npos)
      << coload_last_error_message();
  options = dry_run_options("gfx90a");
  options.hotswap_pairs = "gfx1030-gfx1031";
  EXPECT_EQ(coload_registry_create(&options, &registry), COLOAD_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(coload_last_error_message()).find("coload_registry_options.hotswap_pairs"), std::string::npos);
  options = dry_run_options("gfx90a");
  options.unbundler = static_cast<coload_unbundler>(7);
  EXPECT_EQ(coload_registry_create(&options, &registry), COLOAD_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(coload_last_error_message()).find("coload_registry_options.unbundler 7 is out of range"),
            std::string::npos)
      << coload_last_error_message();
  options = dry_run_options("gfx90a");
  options.verify_cache = "relative/dir";
  EXPECT_EQ(coload_registry_create(&options, &registry), COLOAD_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(registry, nullptr);
}

TEST(CApiSettings, TheEnvironmentFillsWhatOptionsLeaveUnsetUnlessIgnored) {
  const std::vector<std::byte> bytes = file_bytes(fixture("compressed/driver_v3.hipfb"));
  ::setenv("COLOAD_MAX_DECOMPRESSED_BYTES", "1K", 1);
  auto options = dry_run_options("gfx90a");
  options.ignore_environment = 0;
  options.hash_check = COLOAD_HASH_CHECK_VERIFY;  // a setting given: the rest comes from the environment now
  EXPECT_EQ(choose(options, bytes).status, COLOAD_ERROR_LIMIT_EXCEEDED);
  options.max_decompressed_bytes = 1 << 20;  // the option wins over the variable
  EXPECT_EQ(choose(options, bytes).status, COLOAD_OK);
  options.max_decompressed_bytes = 0;
  options.ignore_environment = 1;
  EXPECT_EQ(choose(options, bytes).status, COLOAD_OK);
  ::unsetenv("COLOAD_MAX_DECOMPRESSED_BYTES");
}

TEST(CApiSettings, TheUnbundlerCanBeComgr) {
  // comgr (ROCm 5.2.3, loaded at run time) picks the plain bundle's entry: the same one for code object v4 ...
  auto options = dry_run_options("gfx90a");
  options.unbundler = COLOAD_UNBUNDLER_COMGR;
  Choice v4 = choose(options, file_bytes(fixture("bundles/driver_cov4.hipfb")));
  ASSERT_EQ(v4.status, COLOAD_OK) << v4.message;
  EXPECT_EQ(v4.entry_id, "hipv4-amdgcn-amd-amdhsa--gfx90a");
  // ... and, for v6, the refusal that only the comgr unbundler gives.
  Choice v6 = choose(options, file_bytes(fixture("bundles/driver_two_arch.hipfb")));
  EXPECT_EQ(v6.status, COLOAD_ERROR_UNSUPPORTED_METHOD);
  EXPECT_NE(v6.message.find("unbundler comgr"), std::string::npos) << v6.message;
  options.unbundler = COLOAD_UNBUNDLER_BUILTIN;
  EXPECT_EQ(choose(options, file_bytes(fixture("bundles/driver_two_arch.hipfb"))).status, COLOAD_OK);
}

}  // namespace
