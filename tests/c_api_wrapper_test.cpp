// coload_register_wrapper and coload_bundle_size through libcoload.so: the
// wrappers of a dlopen'ed clang-built library, each its own binary, and bad
// records refused at registration with the field named.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "c_api_test_support.h"
#include "coload/coload.h"
#include "loaded_wrappers.h"

namespace {

using coload::testing::file_bytes;
using coload::testing::loaded_wrappers;

using coload::testing::fixture;
using coload::testing::kernel_info;
using coload::testing::last_error_location;

using Wrapper = coload::testing::HipFatbinWrapper;

struct CApiWrapperTest : ::testing::Test {
  coload_registry* registry = nullptr;
  void SetUp() override {
    coload_registry_options options = coload::testing::dry_run_options("gfx1100");
    ASSERT_EQ(coload_registry_create(&options, &registry), COLOAD_OK) << coload_last_error_message();
  }
  void TearDown() override {
    if (registry) EXPECT_EQ(coload_registry_destroy(registry), COLOAD_OK);
  }
};

TEST_F(CApiWrapperTest, EveryWrapperOfALoadedLibraryRegistersAndOneHasTheKernel) {
  const std::string path = fixture("host/libkernels_mixed.so");
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << ::dlerror();
  std::vector<const void*> wrappers = loaded_wrappers(path, handle);
  ASSERT_EQ(wrappers.size(), 3u);
  int found = 0;
  for (const void* wrapper : wrappers) {
    coload_binary binary = 0;
    ASSERT_EQ(coload_register_wrapper(registry, wrapper, nullptr, &binary), COLOAD_OK) << coload_last_error_message();
    coload_kernel_info info;
    std::memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    coload_status status = coload_lookup_kernel(registry, binary, 0, "_Z9block_sumPKfPfj", &info);
    if (status == COLOAD_OK) {
      ++found;
      EXPECT_EQ(info.kernarg_segment_size, 20u);
      EXPECT_EQ(info.group_segment_size, 1024u);
    } else {
      EXPECT_EQ(status, COLOAD_ERROR_NOT_FOUND) << coload_last_error_message();
      // Its default name says which wrapper it was.
      EXPECT_NE(std::string(coload_last_error_message()).find("__hip_fatbin_wrapper at 0x"), std::string::npos)
          << coload_last_error_message();
    }
    // The wrapper's bytes measure the same through coload_bundle_size, bounded by their mapping.
    const Wrapper* record = static_cast<const Wrapper*>(wrapper);
    std::size_t size = 0;
    EXPECT_EQ(coload_bundle_size(record->binary, COLOAD_AVAILABLE_MAPPED, &size), COLOAD_OK)
        << coload_last_error_message();
    EXPECT_GT(size, 0u);
    EXPECT_EQ(coload_unregister(registry, binary), COLOAD_OK);
  }
  EXPECT_EQ(found, 1);
  ::dlclose(handle);
}

TEST_F(CApiWrapperTest, BadRecordsAreRefusedAtRegistration) {
  std::vector<std::byte> plain = file_bytes(fixture("bundles/driver_two_arch.hipfb"));
  coload_binary binary = 5;
  EXPECT_EQ(coload_register_wrapper(registry, nullptr, nullptr, &binary), COLOAD_ERROR_NULL_ARGUMENT);
  EXPECT_EQ(binary, 0u);
  Wrapper record{.binary = plain.data()};
  EXPECT_EQ(coload_register_wrapper(registry, &record, "ok", nullptr), COLOAD_ERROR_NULL_ARGUMENT);

  Wrapper bad_magic{.magic = 0x12345678, .binary = plain.data()};
  EXPECT_EQ(coload_register_wrapper(registry, &bad_magic, "tu.o", &binary), COLOAD_ERROR_BAD_MAGIC);
  EXPECT_STREQ(last_error_location().field, "magic") << coload_last_error_message();
  EXPECT_EQ(last_error_location().value, 0x12345678u);
  Wrapper version_two{.version = 2, .binary = plain.data()};
  EXPECT_EQ(coload_register_wrapper(registry, &version_two, "tu.o", &binary), COLOAD_ERROR_UNSUPPORTED_VERSION);
  Wrapper null_binary{};
  EXPECT_EQ(coload_register_wrapper(registry, &null_binary, "tu.o", &binary), COLOAD_ERROR_MALFORMED);
  Wrapper wild{.binary = reinterpret_cast<const void*>(std::uintptr_t{0x10})};
  EXPECT_EQ(coload_register_wrapper(registry, &wild, "tu.o", &binary), COLOAD_ERROR_OUT_OF_BOUNDS);
  EXPECT_EQ(binary, 0u);

  ASSERT_EQ(coload_register_wrapper(registry, &record, "driver_two_arch", &binary), COLOAD_OK)
      << coload_last_error_message();
  EXPECT_NE(binary, 0u);
}

TEST_F(CApiWrapperTest, AHostStubResolvesWithinItsOwnBinary) {
  const std::string path = fixture("host/libkernels_mixed.so");
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << ::dlerror();
  std::vector<const void*> wrappers = loaded_wrappers(path, handle);
  ASSERT_EQ(wrappers.size(), 3u);
  // One stub per translation unit, each naming the same kernel, as each TU's
  // constructor would; only the TU built for gfx1100 has it for this device.
  const char stubs[3] = {};
  std::vector<coload_binary> binaries;
  for (std::size_t i = 0; i < wrappers.size(); ++i) {
    coload_binary binary = 0;
    ASSERT_EQ(coload_register_wrapper(registry, wrappers[i], nullptr, &binary), COLOAD_OK);
    ASSERT_EQ(coload_register_function(registry, binary, &stubs[i], "_Z9block_sumPKfPfj"), COLOAD_OK)
        << coload_last_error_message();
    binaries.push_back(binary);
  }
  int found = 0;
  for (std::size_t i = 0; i < wrappers.size(); ++i) {
    coload_kernel_info info = kernel_info();
    coload_kernel_info by_name = kernel_info();
    coload_status status = coload_lookup_function(registry, &stubs[i], 0, &info);
    // The stub answers exactly as its own binary does by name.
    EXPECT_EQ(status, coload_lookup_kernel(registry, binaries[i], 0, "_Z9block_sumPKfPfj", &by_name));
    if (status != COLOAD_OK) continue;
    ++found;
    EXPECT_EQ(info.kernarg_segment_size, 20u);
    EXPECT_EQ(info.group_segment_size, 1024u);
    // What a launch checks through the stub: its explicit arguments, dynamic LDS, workgroup size.
    const uint32_t workgroup[3] = {256, 1, 1};
    EXPECT_EQ(coload_check_function_dispatch(registry, &stubs[i], 0, info.explicit_kernarg_size, 0, workgroup),
              COLOAD_OK)
        << coload_last_error_message();
    EXPECT_EQ(coload_check_function_dispatch(registry, &stubs[i], 0, info.explicit_kernarg_size, 64 * 1024, workgroup),
              COLOAD_ERROR_LIMIT_EXCEEDED);
    EXPECT_EQ(coload_check_function_dispatch(registry, &stubs[i], 0, info.explicit_kernarg_size + 64, 0, workgroup),
              COLOAD_ERROR_SIZE_MISMATCH);
  }
  EXPECT_EQ(found, 1);

  // A stub stands for one kernel, of one or more binaries (a template's stub
  // registered by each TU that instantiated it: tests/shared_stubs_test.cpp).
  EXPECT_EQ(coload_register_function(registry, binaries[0], &stubs[0], "_Z9block_sumPKfPfj"), COLOAD_OK);
  EXPECT_EQ(coload_register_function(registry, binaries[0], &stubs[0], "other"), COLOAD_ERROR_AMBIGUOUS);
  EXPECT_EQ(coload_register_function(registry, 999, &stubs[0], "k"), COLOAD_ERROR_NOT_FOUND);
  EXPECT_EQ(coload_register_function(registry, binaries[0], nullptr, "k"), COLOAD_ERROR_NULL_ARGUMENT);
  EXPECT_EQ(coload_register_function(registry, binaries[0], &stubs[0], nullptr), COLOAD_ERROR_NULL_ARGUMENT);
  EXPECT_EQ(coload_register_function(registry, binaries[0], &found, ""), COLOAD_ERROR_INVALID_ARGUMENT);

  // Unregistering a binary forgets its stubs: the address is free for the next binary (a library loaded again).
  for (coload_binary binary : binaries) EXPECT_EQ(coload_unregister(registry, binary), COLOAD_OK);
  coload_kernel_info info = kernel_info();
  EXPECT_EQ(coload_lookup_function(registry, &stubs[0], 0, &info), COLOAD_ERROR_NOT_FOUND);
  EXPECT_NE(std::string(coload_last_error_message()).find("no kernel is registered for host stub 0x"),
            std::string::npos)
      << coload_last_error_message();
  coload_binary again = 0;
  ASSERT_EQ(coload_register_wrapper(registry, wrappers[1], nullptr, &again), COLOAD_OK);
  EXPECT_EQ(coload_register_function(registry, again, &stubs[0], "_Z9block_sumPKfPfj"), COLOAD_OK);
  // The stub now answers for the new binary, not with what it found for the old one.
  coload_kernel_info by_name = kernel_info();
  coload_status expected = coload_lookup_kernel(registry, again, 0, "_Z9block_sumPKfPfj", &by_name);
  EXPECT_EQ(coload_lookup_function(registry, &stubs[0], 0, &info), expected);
  EXPECT_EQ(info.group_segment_size, expected == COLOAD_OK ? by_name.group_segment_size : 0u);
  ::dlclose(handle);
}

TEST(CApiBundleSize, MeasuresWithinWhatIsAvailable) {
  for (const char* name : {"bundles/driver_two_arch.hipfb", "compressed/driver_v3.hipfb",
                           "compressed/bundler19_v2.hipfb", "co/gfx1100.co"}) {
    std::vector<std::byte> bytes = file_bytes(fixture(name));
    std::size_t size = 0;
    ASSERT_EQ(coload_bundle_size(bytes.data(), bytes.size(), &size), COLOAD_OK) << name << coload_last_error_message();
    EXPECT_EQ(size, bytes.size()) << name;
    EXPECT_EQ(coload_bundle_size(bytes.data(), bytes.size() - 1, &size), COLOAD_ERROR_OUT_OF_BOUNDS)
        << name << ": " << coload_last_error_message();
    EXPECT_EQ(size, 0u);
  }
  std::size_t size = 1;
  const char zeros[64] = {};
  EXPECT_EQ(coload_bundle_size(zeros, sizeof zeros, &size), COLOAD_ERROR_BAD_MAGIC);
  EXPECT_EQ(coload_bundle_size(nullptr, 10, &size), COLOAD_ERROR_NULL_ARGUMENT);
  EXPECT_EQ(coload_bundle_size(zeros, sizeof zeros, nullptr), COLOAD_ERROR_NULL_ARGUMENT);
}

}  // namespace
