// Contract test of the C API (coload/coload.h), through libcoload.so: every
// entry point with a null and a foreign handle, null arguments, bad struct
// sizes and small buffers; then the happy path with the dry-run runtime.
#include "c_api_test_support.h"
#include "coload/coload.h"
#include "fifo_watchdog.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace {

using coload::testing::dry_run_options;
using coload::testing::fixture;
using coload::testing::kernel_info;
using coload::testing::last_error_location;

/// Something that is not a registry, with a plausible size and alignment.
struct Foreign {
  alignas(16) unsigned char bytes[64];
  Foreign() { std::memset(bytes, 0xa5, sizeof bytes); }
  coload_registry* handle() { return reinterpret_cast<coload_registry*>(bytes); }
};

struct CApiTest : ::testing::Test {
  coload_registry* registry = nullptr;
  void SetUp() override {
    auto options = dry_run_options("gfx90a, gfx1100");
    ASSERT_EQ(coload_registry_create(&options, &registry), COLOAD_OK) << coload_last_error_message();
  }
  void TearDown() override {
    if (registry) EXPECT_EQ(coload_registry_destroy(registry), COLOAD_OK);
  }
};

TEST(CApiContract, EveryEntryPointRejectsNullAndForeignHandles) {
  Foreign foreign;
  for (coload_registry* bad : {static_cast<coload_registry*>(nullptr), foreign.handle()}) {
    coload_binary binary = 7;
    coload_kernel_info info = kernel_info();
    std::size_t count = 9;
    char name[32];
    std::size_t required = 0;
    EXPECT_EQ(coload_registry_destroy(bad), COLOAD_ERROR_INVALID_HANDLE);
    EXPECT_NE(std::string(coload_last_error_message()).find("coload_registry_destroy"), std::string::npos);
    EXPECT_EQ(coload_register_file(bad, fixture("bundles/driver_two_arch.hipfb").c_str(), &binary),
              COLOAD_ERROR_INVALID_HANDLE);
    EXPECT_EQ(coload_register_memory(bad, name, sizeof name, "x", &binary), COLOAD_ERROR_INVALID_HANDLE);
    EXPECT_EQ(coload_register_wrapper(bad, name, "x", &binary), COLOAD_ERROR_INVALID_HANDLE);
    EXPECT_EQ(coload_register_function(bad, 1, name, "k"), COLOAD_ERROR_INVALID_HANDLE);
    EXPECT_EQ(coload_lookup_function(bad, name, 0, &info), COLOAD_ERROR_INVALID_HANDLE);
    EXPECT_EQ(coload_check_function_dispatch(bad, name, 0, 0, 0, nullptr), COLOAD_ERROR_INVALID_HANDLE);
    EXPECT_EQ(coload_unregister(bad, 1), COLOAD_ERROR_INVALID_HANDLE);
    EXPECT_EQ(coload_lookup_kernel(bad, 1, 0, "k", &info), COLOAD_ERROR_INVALID_HANDLE);
    EXPECT_EQ(coload_check_dispatch(bad, 1, 0, "k", 0, 0, nullptr), COLOAD_ERROR_INVALID_HANDLE);
    EXPECT_EQ(coload_load(bad, 1, 0), COLOAD_ERROR_INVALID_HANDLE);
    std::uint64_t address = 0;
    EXPECT_EQ(coload_lookup_global(bad, 1, 0, "g", &address, &count), COLOAD_ERROR_INVALID_HANDLE);
    EXPECT_EQ(coload_device_count(bad, &count), COLOAD_ERROR_INVALID_HANDLE);
    EXPECT_EQ(coload_device_name(bad, 0, name, sizeof name, &required), COLOAD_ERROR_INVALID_HANDLE);
    EXPECT_EQ(
        coload_choose(bad, 1, 0, [](void*, const coload_choice*) { return 1; }, nullptr), COLOAD_ERROR_INVALID_HANDLE);
    EXPECT_STRNE(coload_last_error_message(), "");
  }
}

TEST(CApiContract, CreateChecksItsArguments) {
  coload_registry* registry = reinterpret_cast<coload_registry*>(0x1);
  auto options = dry_run_options("gfx90a");
  EXPECT_EQ(coload_registry_create(nullptr, &registry), COLOAD_ERROR_NULL_ARGUMENT);
  EXPECT_EQ(registry, nullptr);  // cleared before anything else fails
  EXPECT_EQ(coload_registry_create(&options, nullptr), COLOAD_ERROR_NULL_ARGUMENT);

  auto small = options;
  small.struct_size = sizeof(std::size_t);
  EXPECT_EQ(coload_registry_create(&small, &registry), COLOAD_ERROR_BAD_STRUCT_SIZE);
  auto no_devices = dry_run_options(nullptr);
  EXPECT_EQ(coload_registry_create(&no_devices, &registry), COLOAD_ERROR_INVALID_ARGUMENT);
  auto empty = dry_run_options(" , ");
  EXPECT_EQ(coload_registry_create(&empty, &registry), COLOAD_ERROR_INVALID_ARGUMENT);
  auto generic = dry_run_options("gfx9-generic");
  EXPECT_EQ(coload_registry_create(&generic, &registry), COLOAD_ERROR_INVALID_ARGUMENT);
  // Every bad spec is the caller's argument (coload.h), not "no GPU" or malformed input.
  for (const char* bad : {"gfx90a,gfx9999", "gfx90A", "gfx90a:xnack+:xnack-", "gfx90a:foo+", ":"}) {
    auto options_for_bad = dry_run_options(bad);
    EXPECT_EQ(coload_registry_create(&options_for_bad, &registry), COLOAD_ERROR_INVALID_ARGUMENT) << bad;
  }
  auto unknown = dry_run_options("gfx90a,gfx9999");
  EXPECT_EQ(coload_registry_create(&unknown, &registry), COLOAD_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(coload_last_error_message()).find("gfx9999"), std::string::npos);
  auto bad_kind = dry_run_options("gfx90a");
  bad_kind.runtime = static_cast<coload_runtime_kind>(42);
  EXPECT_EQ(coload_registry_create(&bad_kind, &registry), COLOAD_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(registry, nullptr);

  // No GPU here, or a missing library: an error, never a crash.
  auto hsa = dry_run_options(nullptr);
  hsa.runtime = COLOAD_RUNTIME_HSA;
  hsa.runtime_library = "/nonexistent/libhsa-runtime64.so.1";
  EXPECT_NE(coload_registry_create(&hsa, &registry), COLOAD_OK);
  EXPECT_STRNE(coload_last_error_message(), "");
  auto hip = hsa;
  hip.runtime = COLOAD_RUNTIME_HIP;
  hip.runtime_library = "/nonexistent/libamdhip64.so";
  EXPECT_NE(coload_registry_create(&hip, &registry), COLOAD_OK);
  EXPECT_EQ(registry, nullptr);
}

TEST_F(CApiTest, NullArgumentsAndBadSizes) {
  coload_binary binary = 7;
  coload_kernel_info info = kernel_info();
  EXPECT_EQ(coload_register_file(registry, nullptr, &binary), COLOAD_ERROR_NULL_ARGUMENT);
  EXPECT_EQ(binary, 0u);
  EXPECT_EQ(coload_register_file(registry, "x", nullptr), COLOAD_ERROR_NULL_ARGUMENT);
  EXPECT_EQ(coload_register_memory(registry, nullptr, 16, "x", &binary), COLOAD_ERROR_NULL_ARGUMENT);
  EXPECT_EQ(coload_register_memory(registry, "x", 1, "x", nullptr), COLOAD_ERROR_NULL_ARGUMENT);
  EXPECT_EQ(coload_lookup_kernel(registry, 1, 0, nullptr, &info), COLOAD_ERROR_NULL_ARGUMENT);
  EXPECT_EQ(coload_lookup_kernel(registry, 1, 0, "k", nullptr), COLOAD_ERROR_NULL_ARGUMENT);
  info.struct_size = 8;
  EXPECT_EQ(coload_lookup_kernel(registry, 1, 0, "k", &info), COLOAD_ERROR_BAD_STRUCT_SIZE);
  EXPECT_EQ(coload_device_count(registry, nullptr), COLOAD_ERROR_NULL_ARGUMENT);
  std::uint64_t address = 7;
  std::size_t size = 7;
  EXPECT_EQ(coload_lookup_global(registry, 1, 0, nullptr, &address, &size), COLOAD_ERROR_NULL_ARGUMENT);
  EXPECT_EQ(address, 0u);
  EXPECT_EQ(size, 0u);
  EXPECT_EQ(coload_lookup_global(registry, 1, 0, "g", nullptr, &size), COLOAD_ERROR_NULL_ARGUMENT);
  EXPECT_EQ(coload_lookup_global(registry, 1, 0, "g", &address, nullptr), COLOAD_ERROR_NULL_ARGUMENT);
}

TEST_F(CApiTest, WrongBinaryHandles) {
  coload_kernel_info info = kernel_info();
  EXPECT_EQ(coload_unregister(registry, 0), COLOAD_ERROR_NOT_FOUND);
  EXPECT_EQ(coload_unregister(registry, 12345), COLOAD_ERROR_NOT_FOUND);
  EXPECT_EQ(coload_lookup_kernel(registry, 0, 0, "k", &info), COLOAD_ERROR_NOT_FOUND);
  EXPECT_NE(std::string(coload_last_error_message()).find("handle 0"), std::string::npos);
}

TEST_F(CApiTest, DeviceNamesWithSmallBuffers) {
  std::size_t count = 0;
  ASSERT_EQ(coload_device_count(registry, &count), COLOAD_OK);
  EXPECT_EQ(count, 2u);
  std::size_t required = 0;
  EXPECT_EQ(coload_device_name(registry, 0, nullptr, 0, &required), COLOAD_ERROR_BUFFER_TOO_SMALL);
  const std::string expected = "gfx90a:sramecc+:xnack-";
  EXPECT_EQ(required, expected.size() + 1);
  char small[8];
  std::memset(small, 'z', sizeof small);
  EXPECT_EQ(coload_device_name(registry, 0, small, sizeof small, &required), COLOAD_ERROR_BUFFER_TOO_SMALL);
  EXPECT_EQ(small[0], 'z');  // nothing written
  std::vector<char> exact(required);
  ASSERT_EQ(coload_device_name(registry, 0, exact.data(), exact.size(), nullptr), COLOAD_OK);
  EXPECT_EQ(std::string(exact.data()), expected);
  EXPECT_STREQ(coload_last_error_message(), "");
  EXPECT_EQ(coload_device_name(registry, 0, nullptr, 5, &required), COLOAD_ERROR_NULL_ARGUMENT);
  EXPECT_EQ(coload_device_name(registry, 2, exact.data(), exact.size(), &required), COLOAD_ERROR_INVALID_ARGUMENT);
}

TEST_F(CApiTest, RegisterLookUpAndUnregister) {
  coload_binary binary = 0;
  ASSERT_EQ(coload_register_file(registry, fixture("host/libkernels_compressed.so").c_str(), &binary), COLOAD_OK)
      << coload_last_error_message();
  EXPECT_NE(binary, 0u);
  coload_kernel_info info = kernel_info();
  ASSERT_EQ(coload_lookup_kernel(registry, binary, 0, "_Z5saxpyfPKfPfi", &info), COLOAD_OK)
      << coload_last_error_message();
  EXPECT_EQ(info.handle, 0u);
  EXPECT_EQ(info.kernarg_segment_size, 288u);
  EXPECT_EQ(info.explicit_kernarg_size, 28u);  // float, two pointers, int: the hidden arguments follow

  // A caller built against 0.1's coload_kernel_info (no explicit_kernarg_size) gets the fields it has.
  struct {
    coload_kernel_info first;
    std::uint32_t canary;
  } old{};
  old.first.struct_size = offsetof(coload_kernel_info, dynamic_callstack) + sizeof(int);
  old.first.explicit_kernarg_size = 0xdead;
  ASSERT_EQ(coload_lookup_kernel(registry, binary, 0, "_Z5saxpyfPKfPfi", &old.first), COLOAD_OK)
      << coload_last_error_message();
  EXPECT_EQ(old.first.kernarg_segment_size, 288u);
  EXPECT_EQ(old.first.explicit_kernarg_size, 0xdeadu);  // past its struct_size: not written

  ASSERT_EQ(coload_lookup_kernel(registry, binary, 1, "_Z9block_sumPKfPfj", &info), COLOAD_OK)
      << coload_last_error_message();
  EXPECT_EQ(info.group_segment_size, 1024u);

  EXPECT_EQ(coload_lookup_kernel(registry, binary, 0, "missing", &info), COLOAD_ERROR_NOT_FOUND);
  EXPECT_NE(std::string(coload_last_error_message()).find("\"missing\""), std::string::npos);
  EXPECT_EQ(coload_lookup_kernel(registry, binary, 9, "missing", &info), COLOAD_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(coload_unregister(registry, binary), COLOAD_OK);
  EXPECT_EQ(coload_unregister(registry, binary), COLOAD_ERROR_NOT_FOUND);
}

// coload_load: a binary loads on a device without a kernel name; once per pair.
TEST_F(CApiTest, LoadWithoutAKernelName) {
  coload_binary binary = 0;
  ASSERT_EQ(coload_register_file(registry, fixture("bundles/driver_two_arch.hipfb").c_str(), &binary), COLOAD_OK)
      << coload_last_error_message();
  EXPECT_EQ(coload_load(registry, binary, 0), COLOAD_OK) << coload_last_error_message();
  EXPECT_EQ(coload_load(registry, binary, 0), COLOAD_OK);
  EXPECT_STREQ(coload_last_error_message(), "");
  EXPECT_EQ(coload_load(registry, binary, 1), COLOAD_ERROR_NOT_FOUND);  // no gfx1100 entry
  EXPECT_NE(std::string(coload_last_error_message()).find("gfx1100"), std::string::npos) << coload_last_error_message();
  EXPECT_EQ(coload_load(registry, binary, 9), COLOAD_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(coload_load(registry, 12345, 0), COLOAD_ERROR_NOT_FOUND);
}

// tests/kernels/vector_ops.hip's `__device__ int dev_counter`; dry-run: its size at address 0.
TEST_F(CApiTest, LookUpAGlobal) {
  coload_binary binary = 0;
  const std::string path = fixture("bundles/driver_two_arch.hipfb");
  ASSERT_EQ(coload_register_file(registry, path.c_str(), &binary), COLOAD_OK) << coload_last_error_message();
  std::uint64_t address = 7;
  std::size_t size = 0;
  ASSERT_EQ(coload_lookup_global(registry, binary, 0, "dev_counter", &address, &size), COLOAD_OK)
      << coload_last_error_message();
  EXPECT_EQ(address, 0u);
  EXPECT_EQ(size, 4u);
  EXPECT_STREQ(coload_last_error_message(), "");
  size = 7;
  EXPECT_EQ(coload_lookup_global(registry, binary, 0, "_Z5saxpyfPKfPfi", &address, &size), COLOAD_ERROR_NOT_FOUND);
  EXPECT_EQ(size, 0u);
  const std::string message = coload_last_error_message();
  EXPECT_NE(message.find("global variable \"_Z5saxpyfPKfPfi\" not found in " + path), std::string::npos) << message;
  EXPECT_EQ(coload_lookup_global(registry, binary, 9, "dev_counter", &address, &size), COLOAD_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(coload_lookup_global(registry, binary + 100, 0, "dev_counter", &address, &size), COLOAD_ERROR_NOT_FOUND);
}

std::vector<char> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A runtime that loads code objects itself asks for each bundle's choice.
TEST_F(CApiTest, ChooseHandsOverEachBundlesChoiceInOrder) {
  coload_binary binary = 0;
  ASSERT_EQ(coload_register_file(registry, fixture("host/libkernels_mixed.so").c_str(), &binary), COLOAD_OK)
      << coload_last_error_message();
  struct Seen {
    std::size_t bundle;
    coload_status status;
    std::string id;
    coload_tier tier;
    std::vector<char> bytes;
    std::string message;
  };
  std::vector<Seen> seen;
  auto record = [](void* user_data, const coload_choice* choice) {
    EXPECT_EQ(choice->struct_size, sizeof(coload_choice));
    const char* bytes = static_cast<const char*>(choice->bytes);
    static_cast<std::vector<Seen>*>(user_data)->push_back({choice->bundle, choice->status, choice->entry_id,
                                                           choice->tier, std::vector<char>(bytes, bytes + choice->size),
                                                           choice->message});
    return 1;
  };
  ASSERT_EQ(coload_choose(registry, binary, 1, record, &seen), COLOAD_OK) << coload_last_error_message();  // gfx1100
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].status, COLOAD_ERROR_NOT_FOUND);
  EXPECT_EQ(seen[0].id, "");
  EXPECT_TRUE(seen[0].bytes.empty());
  EXPECT_EQ(
      seen[0].message.rfind(fixture("host/libkernels_mixed.so") + ": bundle 0: no code object fits device gfx1100", 0),
      0u)
      << seen[0].message;
  EXPECT_EQ(seen[1].status, COLOAD_OK);
  EXPECT_EQ(seen[1].id, "hipv4-amdgcn-amd-amdhsa--gfx1100");
  EXPECT_EQ(seen[1].tier, COLOAD_TIER_NATIVE);
  EXPECT_EQ(seen[1].message, "");
  EXPECT_EQ(seen[1].bytes, file_bytes(fixture("expected/host__parts__plain-lds_static.hipfb/"
                                              "hipv4-amdgcn-amd-amdhsa--gfx1100.co")));
  EXPECT_EQ(seen[2].status, COLOAD_OK);
  EXPECT_EQ(seen[2].id, "hipv4-amdgcn-amd-amdhsa--gfx11-generic");
  EXPECT_EQ(seen[2].tier, COLOAD_TIER_GENERIC);
  EXPECT_EQ(seen[2].bytes, file_bytes(fixture("expected/host__parts__compressed-lds_dynamic.hipfb/"
                                              "hipv4-amdgcn-amd-amdhsa--gfx11-generic.co")));

  // Stopping after the first bundle; wrong arguments.
  std::size_t calls = 0;
  EXPECT_EQ(coload_choose(
                registry, binary, 0,
                [](void* count, const coload_choice*) {
                  ++*static_cast<std::size_t*>(count);
                  return 0;
                },
                &calls),
            COLOAD_OK);
  EXPECT_EQ(calls, 1u);
  EXPECT_EQ(coload_choose(registry, binary, 0, nullptr, nullptr), COLOAD_ERROR_NULL_ARGUMENT);
  EXPECT_EQ(coload_choose(registry, binary, 2, record, &seen), COLOAD_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(coload_choose(registry, 12345, 0, record, &seen), COLOAD_ERROR_NOT_FOUND);
}

// docs/loading.md: a C runtime checks a dispatch against the metadata before
// submitting it, with errors naming kernel, field, value and limit.
TEST_F(CApiTest, CheckDispatchAgainstTheKernelsMetadata) {
  coload_binary binary = 0;
  ASSERT_EQ(coload_register_file(registry, fixture("host/libkernels_compressed.so").c_str(), &binary), COLOAD_OK)
      << coload_last_error_message();
  const char* saxpy = "_Z5saxpyfPKfPfi";  // explicit arguments end at 28, hidden ones start at 32
  EXPECT_EQ(coload_check_dispatch(registry, binary, 0, saxpy, 28, 0, nullptr), COLOAD_OK)
      << coload_last_error_message();
  EXPECT_EQ(coload_check_dispatch(registry, binary, 0, saxpy, 32, 0, nullptr), COLOAD_OK);
  auto expect_at = [](const char* field, std::uint64_t value, std::optional<std::uint64_t> limit) {
    coload_error_location at = last_error_location();
    EXPECT_STREQ(at.field, field) << coload_last_error_message();
    EXPECT_EQ(at.value, value) << coload_last_error_message();
    if (limit) EXPECT_EQ(at.limit, *limit) << coload_last_error_message();
  };
  EXPECT_EQ(coload_check_dispatch(registry, binary, 0, saxpy, 27, 0, nullptr), COLOAD_ERROR_SIZE_MISMATCH);
  expect_at("kernarg_bytes", 27, 28);  // where the explicit arguments end
  EXPECT_EQ(coload_check_dispatch(registry, binary, 0, saxpy, 33, 0, nullptr), COLOAD_ERROR_SIZE_MISMATCH);
  expect_at("kernarg_bytes", 33, 32);  // where the hidden ones start
  EXPECT_EQ(coload_check_dispatch(registry, binary, 0, saxpy, 28, 65537, nullptr), COLOAD_ERROR_LIMIT_EXCEEDED);
  expect_at("dynamic_lds", 65537, std::nullopt);
  const std::uint32_t too_wide[3] = {2048, 1, 1};
  EXPECT_EQ(coload_check_dispatch(registry, binary, 0, saxpy, 28, 0, too_wide), COLOAD_ERROR_INVALID_ARGUMENT);
  expect_at("workgroup_size", 2048, std::nullopt);
  EXPECT_NE(std::string(coload_last_error_message()).find("max_flat_workgroup_size"), std::string::npos)
      << coload_last_error_message();
  const std::uint32_t fits[3] = {256, 4, 1};
  EXPECT_EQ(coload_check_dispatch(registry, binary, 0, saxpy, 28, 0, fits), COLOAD_OK);
  EXPECT_EQ(coload_check_dispatch(registry, binary, 0, "missing", 0, 0, nullptr), COLOAD_ERROR_NOT_FOUND);
  EXPECT_EQ(coload_check_dispatch(registry, binary, 0, nullptr, 0, 0, nullptr), COLOAD_ERROR_NULL_ARGUMENT);
  EXPECT_EQ(coload_check_dispatch(nullptr, binary, 0, saxpy, 28, 0, nullptr), COLOAD_ERROR_INVALID_HANDLE);
  EXPECT_EQ(coload_unregister(registry, binary), COLOAD_OK);
  EXPECT_EQ(coload_check_dispatch(registry, binary, 0, saxpy, 28, 0, nullptr), COLOAD_ERROR_NOT_FOUND);
}

TEST_F(CApiTest, RegisterMemoryAndBadInput) {
  std::ifstream in(fixture("bundles/driver_two_arch.hipfb"), std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  coload_binary binary = 0;
  ASSERT_EQ(coload_register_memory(registry, bytes.data(), bytes.size(), nullptr, &binary), COLOAD_OK);
  coload_kernel_info info = kernel_info();
  EXPECT_EQ(coload_lookup_kernel(registry, binary, 1, "_Z5saxpyfPKfPfi", &info), COLOAD_ERROR_NOT_FOUND);
  EXPECT_NE(std::string(coload_last_error_message()).find("no code object fits"), std::string::npos);
  EXPECT_EQ(coload_unregister(registry, binary), COLOAD_OK);

  const char garbage[64] = "definitely not a fat binary";
  EXPECT_EQ(coload_register_memory(registry, garbage, sizeof garbage, "garbage", &binary), COLOAD_ERROR_BAD_MAGIC);
  EXPECT_EQ(binary, 0u);
  EXPECT_EQ(coload_register_file(registry, "/nonexistent/file.hipfb", &binary), COLOAD_ERROR_IO);
}

// A FIFO named as a file is refused at once (docs/reading-rules.md, "Files"),
// not waited on until a writer comes. Should the open block, a watchdog
// opens the write end after 5 s so the test ends, and fails on the time.
TEST_F(CApiTest, RegisterFileRefusesAFifo) {
  std::string fifo = ::testing::TempDir() + "coload_c_api_fifo";
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  coload::testing::FifoWatchdog watchdog(fifo);
  coload_binary binary = 0;
  coload_status status = coload_register_file(registry, fifo.c_str(), &binary);
  auto elapsed = watchdog.stop();
  ::unlink(fifo.c_str());
  EXPECT_LT(elapsed, coload::testing::FifoWatchdog::kPatience) << "coload_register_file waited in open for a writer";
  EXPECT_EQ(status, COLOAD_ERROR_IO);
  EXPECT_NE(std::string(coload_last_error_message()).find("not a regular file (a FIFO)"), std::string::npos)
      << coload_last_error_message();
}

TEST(CApiContract, LastErrorIsPerThread) {
  EXPECT_EQ(coload_device_count(nullptr, nullptr), COLOAD_ERROR_INVALID_HANDLE);
  std::string other;
  std::thread([&] { other = coload_last_error_message(); }).join();
  EXPECT_EQ(other, "");
  EXPECT_STRNE(coload_last_error_message(), "");
}

TEST(CApiContract, StatusStrings) {
  EXPECT_STREQ(coload_status_string(COLOAD_OK), "ok");
  EXPECT_STREQ(coload_status_string(COLOAD_ERROR_NOT_FOUND), "not_found");
  EXPECT_STREQ(coload_status_string(static_cast<coload_status>(999)), "unknown_status");
}

// The options struct as the first coload.h had it (ending at
// ignore_environment): accepted, the later fields take their defaults.
TEST(CApiOptions, AnOlderStructSizeIsAccepted) {
  auto options = dry_run_options("gfx90a");
  options.struct_size = offsetof(coload_registry_options, ignore_environment) + sizeof(int);
  options.log = reinterpret_cast<coload_log_fn>(0x1);  // past struct_size: must not be called
  coload_registry* registry = nullptr;
  ASSERT_EQ(coload_registry_create(&options, &registry), COLOAD_OK) << coload_last_error_message();
  coload_binary binary = 0;
  ASSERT_EQ(coload_register_file(registry, fixture("bundles/driver_two_arch.hipfb").c_str(), &binary), COLOAD_OK);
  coload_kernel_info info = kernel_info();
  EXPECT_EQ(coload_lookup_kernel(registry, binary, 0, "_Z5saxpyfPKfPfi", &info), COLOAD_OK);
  EXPECT_EQ(coload_registry_destroy(registry), COLOAD_OK);
  options.struct_size = offsetof(coload_registry_options, ignore_environment);
  EXPECT_EQ(coload_registry_create(&options, &registry), COLOAD_ERROR_BAD_STRUCT_SIZE);
}

struct Logged {
  std::mutex mutex;
  std::vector<std::pair<coload_log_level, std::string>> lines;
  static void record(void* user_data, coload_log_level level, const char* message) {
    auto* self = static_cast<Logged*>(user_data);
    std::lock_guard lock(self->mutex);
    self->lines.emplace_back(level, message);
  }
};

TEST(CApiOptions, LogCallbackReceivesAFailedLoad) {
  Logged logged;
  auto options = dry_run_options("gfx942");
  options.decode_threads = 1;
  options.log = &Logged::record;
  options.log_user_data = &logged;
  coload_registry* registry = nullptr;
  ASSERT_EQ(coload_registry_create(&options, &registry), COLOAD_OK) << coload_last_error_message();
  coload_binary binary = 0;
  ASSERT_EQ(coload_register_file(registry, fixture("bundles/driver_two_arch.hipfb").c_str(), &binary), COLOAD_OK);
  coload_kernel_info info = kernel_info();
  EXPECT_EQ(coload_lookup_kernel(registry, binary, 0, "_Z5saxpyfPKfPfi", &info), COLOAD_ERROR_NOT_FOUND);
  EXPECT_EQ(coload_registry_destroy(registry), COLOAD_OK);
  ASSERT_EQ(logged.lines.size(), 1u);
  EXPECT_EQ(logged.lines[0].first, COLOAD_LOG_WARN);
  EXPECT_NE(logged.lines[0].second.find("no code object fits device gfx942"), std::string::npos)
      << logged.lines[0].second;
}

// The caller's devices: each list is its runtime's, checked before any library is opened.
TEST(CApiOptions, DeviceListsBelongToTheirRuntime) {
  const std::uint64_t agents[] = {0xa0000};
  const int ordinals[] = {0};
  coload_registry* registry = nullptr;
  auto expect_refused = [&](coload_registry_options options, coload_status status, const char* part) {
    EXPECT_EQ(coload_registry_create(&options, &registry), status) << part;
    EXPECT_NE(std::string(coload_last_error_message()).find(part), std::string::npos) << coload_last_error_message();
    EXPECT_EQ(registry, nullptr);
  };
  auto dry_agents = dry_run_options("gfx90a");
  dry_agents.hsa_agents = agents;
  dry_agents.hsa_agent_count = 1;
  expect_refused(dry_agents, COLOAD_ERROR_INVALID_ARGUMENT, "hsa_agents is not for the dry-run runtime");
  auto dry_ordinals = dry_run_options("gfx90a");
  dry_ordinals.hip_devices = ordinals;
  dry_ordinals.hip_device_count = 1;
  expect_refused(dry_ordinals, COLOAD_ERROR_INVALID_ARGUMENT, "hip_devices is not for the dry-run runtime");
  auto hip_agents = dry_agents;
  hip_agents.runtime = COLOAD_RUNTIME_HIP;
  hip_agents.runtime_library = "/nonexistent/libamdhip64.so";
  expect_refused(hip_agents, COLOAD_ERROR_INVALID_ARGUMENT, "hsa_agents is not for the HIP runtime");
  auto hsa_ordinals = dry_ordinals;
  hsa_ordinals.runtime = COLOAD_RUNTIME_HSA;
  hsa_ordinals.runtime_library = "/nonexistent/libhsa-runtime64.so.1";
  expect_refused(hsa_ordinals, COLOAD_ERROR_INVALID_ARGUMENT, "hip_devices is not for the HSA runtime");
  auto null_agents = hsa_ordinals;
  null_agents.hip_devices = nullptr;
  null_agents.hip_device_count = 0;
  null_agents.hsa_agent_count = 2;
  expect_refused(null_agents, COLOAD_ERROR_NULL_ARGUMENT, "options->hsa_agents is null but hsa_agent_count is 2");
  auto null_ordinals = hip_agents;
  null_ordinals.hsa_agents = nullptr;
  null_ordinals.hsa_agent_count = 0;
  null_ordinals.hip_device_count = 1;
  expect_refused(null_ordinals, COLOAD_ERROR_NULL_ARGUMENT, "options->hip_devices is null but hip_device_count is 1");
}

// Through the test HSA library (tests/support/fake_hsa): agent i of its
// script is 0xa0000 + i; the library this test loaded is the one coload uses.
TEST(CApiOptions, HsaAgentsAreTheDevicesInTheirOrder) {
  void* fake = dlopen(COLOAD_TEST_HSA_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(fake, nullptr) << dlerror();
  auto script = reinterpret_cast<int (*)(const char*)>(dlsym(fake, "coload_test_hsa_script"));
  ASSERT_NE(script, nullptr);
  ASSERT_EQ(script("gpu gfx90a:sramecc+:xnack-; cpu; gpu gfx1100 wave=32"), 0);
  const std::uint64_t agents[] = {0xa0002, 0xa0000};
  auto options = dry_run_options(nullptr);
  options.runtime = COLOAD_RUNTIME_HSA;
  options.runtime_library = COLOAD_TEST_HSA_LIBRARY;
  options.hsa_agents = agents;
  options.hsa_agent_count = 2;
  coload_registry* registry = nullptr;
  ASSERT_EQ(coload_registry_create(&options, &registry), COLOAD_OK) << coload_last_error_message();
  char name[64];
  ASSERT_EQ(coload_device_name(registry, 0, name, sizeof name, nullptr), COLOAD_OK);
  EXPECT_STREQ(name, "gfx1100");
  ASSERT_EQ(coload_device_name(registry, 1, name, sizeof name, nullptr), COLOAD_OK);
  EXPECT_STREQ(name, "gfx90a:sramecc+:xnack-");
  coload_binary binary = 0;
  ASSERT_EQ(coload_register_file(registry, fixture("co/gfx90a.co").c_str(), &binary), COLOAD_OK);
  std::uint64_t address = 0;
  std::size_t size = 0;
  ASSERT_EQ(coload_lookup_global(registry, binary, 1, "dev_coeffs", &address, &size), COLOAD_OK)
      << coload_last_error_message();
  EXPECT_NE(address, 0u);
  EXPECT_EQ(size, 16u);
  EXPECT_EQ(coload_registry_destroy(registry), COLOAD_OK);

  const std::uint64_t cpu[] = {0xa0001};
  options.hsa_agents = cpu;
  options.hsa_agent_count = 1;
  EXPECT_EQ(coload_registry_create(&options, &registry), COLOAD_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(last_error_location().field, "hsa_agents[0]") << coload_last_error_message();
  EXPECT_EQ(last_error_location().value, 0xa0001u);
  dlclose(fake);
}

}  // namespace
