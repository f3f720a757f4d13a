// What the registry hands a runtime: hotswap passes for a device no entry
// fits, same-ISA retargets, and the validator's refusal of any code object
// (a pass's output, a native entry) the device cannot run.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "coload/code_object.h"
#include "coload/detail/hotswap.h"
#include "coload/registry.h"
#include "registry_test_support.h"
#include "support/bundle_writer.h"
#include "test_util.h"

namespace coload {
namespace {

using namespace testing;

// --- Hotswap and same-ISA retargeting through the registry ------------------

/// A pass for gfx1250 -> gfx942 that counts its calls and returns `output`
/// (or the source, when `output` is empty).
struct CountingPass {
  std::shared_ptr<std::atomic<int>> calls = std::make_shared<std::atomic<int>>(0);
  std::shared_ptr<const HotswapRegistry> registry;

  explicit CountingPass(std::vector<std::byte> output) {
    HotswapPass pass;
    pass.name = "counting";
    pass.pairs = {{"gfx1250", "gfx942"}};
    pass.transform = [calls = calls, output = std::move(output)](std::span<const std::byte> source,
                                                                 const Device&) -> Expected<std::vector<std::byte>> {
      calls->fetch_add(1);
      if (output.empty()) return std::vector<std::byte>(source.begin(), source.end());
      return output;
    };
    auto built = std::make_shared<HotswapRegistry>();
    EXPECT_TRUE(Succeeds(built->add(std::move(pass))));
    registry = std::move(built);
  }
};

Config hotswap_on() {
  Config config;
  config.hotswap = true;
  return config;
}

/// lds_heavy (built for gfx950, 160 KiB LDS) relabelled gfx942 (64 KiB):
/// a well-formed gfx942 object whose LDS the device cannot hold.
std::vector<std::byte> oversized_lds_gfx942_object() {
  std::vector<std::byte> bytes = file_bytes(fixture("check/lds_heavy-gfx950.co"));
  EXPECT_GT(bytes.size(), 64u);
  const std::string from = "gfx950", to = "gfx942";
  for (std::size_t i = 0; i + from.size() <= bytes.size(); ++i) {
    if (std::equal(from.begin(), from.end(), bytes.begin() + static_cast<std::ptrdiff_t>(i),
                   [](char c, std::byte b) { return static_cast<std::byte>(c) == b; })) {
      for (std::size_t j = 0; j < to.size(); ++j) bytes[i + j] = static_cast<std::byte>(to[j]);
    }
  }
  bytes[48] = std::byte{0x4c};  // e_flags' EF_AMDGPU_MACH: gfx950 0x4f -> gfx942 0x4c
  return bytes;
}

std::string loaded_processor(Registry& registry, BinaryHandle binary, std::size_t device) {
  auto modules = registry.modules(binary, device);
  if (!modules || modules->size() != 1) return "<none>";
  return std::string((*modules)[0]->code_object().target().target.processor_name());
}

TEST(RegistryHotswap, NativeWinsAndThePassIsNeverCalled) {
  CountingPass pass(file_bytes(fixture("co/gfx942.co")));
  auto runtime = std::make_shared<CountingRuntime>(dry_run_devices({"gfx942"}));
  Registry registry(runtime, hotswap_on(), RegistryOptions{.hotswap = pass.registry});
  auto binary = registry.register_file(fixture("select/native_and_foreign.hipfb"));
  ASSERT_TRUE(Succeeds(binary));
  ASSERT_TRUE(Succeeds(registry.lookup_kernel(*binary, 0, "_Z5saxpyfPKfPfi")));
  EXPECT_EQ(pass.calls->load(), 0);  // docs/selection.md, "Hotswap last": a listed pair never beats native code
  EXPECT_EQ(loaded_processor(registry, *binary, 0), "gfx942");
  EXPECT_EQ(runtime->total_loads(), 1u);
}

TEST(RegistryHotswap, ForeignOnlyEntryGoesThroughThePassOnce) {
  CountingPass pass(file_bytes(fixture("co/gfx942.co")));
  auto runtime = std::make_shared<CountingRuntime>(dry_run_devices({"gfx942"}));
  Registry registry(runtime, hotswap_on(), RegistryOptions{.hotswap = pass.registry});
  auto binary = registry.register_file(fixture("select/gfx1250_only.hipfb"));
  ASSERT_TRUE(Succeeds(binary));
  ASSERT_TRUE(Succeeds(registry.lookup_kernel(*binary, 0, "_Z5saxpyfPKfPfi")));
  ASSERT_TRUE(Succeeds(registry.lookup_kernel(*binary, 0, "_Z7add_onePii")));
  EXPECT_EQ(pass.calls->load(), 1);
  EXPECT_EQ(loaded_processor(registry, *binary, 0), "gfx942");
  EXPECT_EQ(runtime->total_loads(), 1u);
}

TEST(RegistryHotswap, HotswapOffNeverCallsThePass) {
  CountingPass pass(file_bytes(fixture("co/gfx942.co")));
  auto runtime = std::make_shared<CountingRuntime>(dry_run_devices({"gfx942"}));
  Registry registry(runtime, Config{}, RegistryOptions{.hotswap = pass.registry});
  auto binary = registry.register_file(fixture("select/gfx1250_only.hipfb"));
  ASSERT_TRUE(Succeeds(binary));
  EXPECT_TRUE(FailsWith(registry.lookup_kernel(*binary, 0, "_Z5saxpyfPKfPfi"), ErrorKind::NotFound));
  EXPECT_EQ(pass.calls->load(), 0);
}

TEST(RegistryHotswap, OutputForTheWrongTargetIsRefusedByTheValidator) {
  CountingPass pass(file_bytes(fixture("co/gfx90a.co")));  // a well-formed object for another processor
  auto runtime = std::make_shared<CountingRuntime>(dry_run_devices({"gfx942"}));
  Registry registry(runtime, hotswap_on(), RegistryOptions{.hotswap = pass.registry});
  auto binary = registry.register_file(fixture("select/gfx1250_only.hipfb"));
  ASSERT_TRUE(Succeeds(binary));
  auto kernel = registry.lookup_kernel(*binary, 0, "_Z5saxpyfPKfPfi");
  ASSERT_TRUE(FailsWith(kernel, ErrorKind::InvalidArgument));
  const std::string& message = kernel.error().message();
  for (const char* part : {"hotswap pass \"counting\"", "gfx1250", "gfx942", "gfx90a", "validator"}) {
    EXPECT_NE(message.find(part), std::string::npos) << part << " not in " << message;
  }
  EXPECT_EQ(pass.calls->load(), 1);
  EXPECT_EQ(runtime->total_loads(), 0u);
}

TEST(RegistryHotswap, OutputWithOversizedLdsIsRefusedByTheValidator) {
  CountingPass pass(oversized_lds_gfx942_object());
  auto runtime = std::make_shared<CountingRuntime>(dry_run_devices({"gfx942"}));
  Registry registry(runtime, hotswap_on(), RegistryOptions{.hotswap = pass.registry});
  auto binary = registry.register_file(fixture("select/gfx1250_only.hipfb"));
  ASSERT_TRUE(Succeeds(binary));
  auto modules = registry.modules(*binary, 0);
  ASSERT_TRUE(FailsWith(modules, ErrorKind::LimitExceeded));
  // The pass's output, refused at its field; the location is the entry the pass was given.
  const ErrorLocation& at = modules.error().location();
  EXPECT_EQ(at.field, "group_segment_fixed_size") << modules.error().message();
  EXPECT_EQ(at.limit, std::optional<std::uint64_t>(65536));
  EXPECT_EQ(at.bundle, std::optional<std::size_t>(0));
  EXPECT_EQ(at.entry_id, "hipv4-amdgcn-amd-amdhsa--gfx1250");
  EXPECT_NE(modules.error().detail().find("hotswap pass \"counting\" for device gfx942"), std::string::npos)
      << modules.error().message();
  EXPECT_EQ(runtime->total_loads(), 0u);
}

TEST(RegistryHotswap, BadPluginFailsEveryLoadWithItsError) {
  Config config = hotswap_on();
  config.hotswap_plugin = "/nonexistent/libcoload_plugin.so";
  auto runtime = std::make_shared<CountingRuntime>(dry_run_devices({"gfx942"}));
  Registry registry(runtime, config);
  auto binary = registry.register_file(fixture("select/gfx1250_only.hipfb"));
  ASSERT_TRUE(Succeeds(binary));
  auto kernel = registry.lookup_kernel(*binary, 0, "_Z5saxpyfPKfPfi");
  ASSERT_TRUE(FailsWith(kernel, ErrorKind::Io));
  EXPECT_NE(kernel.error().message().find("COLOAD_HOTSWAP_PLUGIN"), std::string::npos) << kernel.error().message();
}

TEST(RegistryHotswap, EquivalentEntryIsRetargetedForTheDevice) {
  auto runtime = std::make_shared<CountingRuntime>(dry_run_devices({"gfx1031"}));
  Config config;
  config.extended_isa_compat = {"gfx1031"};
  Registry registry(runtime, config);
  auto binary = registry.register_file(fixture("select/gfx1030_only.hipfb"));
  ASSERT_TRUE(Succeeds(binary));
  ASSERT_TRUE(Succeeds(registry.lookup_kernel(*binary, 0, "_Z5saxpyfPKfPfi")));
  EXPECT_EQ(loaded_processor(registry, *binary, 0), "gfx1031");  // what ROCr needs to see
}

// The registry checks every code object before a runtime sees it, native ones
// included: ROCr would take a kernel whose LDS the device lacks and fail only
// at dispatch. The counting runtime is never called.
TEST(RegistryChecks, ACodeObjectTheValidatorRefusesIsNotHandedToTheRuntime) {
  auto small = device_from_spec("gfx90a:sramecc+:xnack-", {.lds_bytes = 512});
  ASSERT_TRUE(Succeeds(small));
  auto runtime = std::make_shared<CountingRuntime>(std::vector<Device>{*small});
  Registry registry{runtime, Config{}};
  auto binary = registry.register_file(fixture("bundles/bundler_plain.hipfb"));
  ASSERT_TRUE(Succeeds(binary));
  auto kernel = registry.lookup_kernel(*binary, 0, "_Z9block_sumPKfPfj");
  ASSERT_TRUE(FailsWith(kernel, ErrorKind::LimitExceeded));
  const ErrorLocation& at = kernel.error().location();
  EXPECT_EQ(at.file, fixture("bundles/bundler_plain.hipfb"));
  EXPECT_EQ(at.bundle, std::optional<std::size_t>(0));
  EXPECT_EQ(at.entry, std::optional<std::size_t>(2));
  EXPECT_EQ(at.entry_id, "hipv4-amdgcn-amd-amdhsa--gfx90a");
  EXPECT_EQ(at.field, "group_segment_fixed_size") << kernel.error().message();
  EXPECT_EQ(at.value, std::optional<std::uint64_t>(1024));
  EXPECT_EQ(at.limit, std::optional<std::uint64_t>(512));
  EXPECT_EQ(runtime->total_loads(), 0u);
}

// Metadata strings no runtime reads (an old amdhsa.version, as hand-written
// assembly kernels carry) do not refuse a code object; a kernel whose
// descriptor disagrees with its metadata does, before the runtime sees it.
TEST(RegistryChecks, KernelProblemsRefuseTheObjectMetadataStringsDoNot) {
  const std::vector<std::byte> good = file_bytes(fixture("co/gfx90a.co"));
  auto good_object = CodeObject::read(good);
  ASSERT_TRUE(Succeeds(good_object));
  ASSERT_TRUE(good_object->problems().empty());
  const std::string kernel_name = good_object->kernels()[0].name;

  std::vector<std::byte> old_version = good;  // amdhsa.version [1, 2] -> [1, 0]
  const std::string key = "amdhsa.version";
  auto key_at = std::search(old_version.begin(), old_version.end(), key.begin(), key.end(),
                            [](std::byte b, char c) { return b == static_cast<std::byte>(c); });
  ASSERT_NE(key_at, old_version.end());
  std::size_t value = static_cast<std::size_t>(key_at - old_version.begin()) + key.size();
  ASSERT_EQ(old_version[value], std::byte{0x92});  // fixarray of 2
  ASSERT_EQ(old_version[value + 2], std::byte{0x02});
  old_version[value + 2] = std::byte{0x00};
  auto old_object = CodeObject::read(old_version);
  ASSERT_TRUE(Succeeds(old_object));
  ASSERT_EQ(old_object->problems().size(), 1u);
  EXPECT_EQ(old_object->problems()[0].field, "amdhsa.version");

  std::vector<std::byte> mismatch = good;  // descriptor private_segment_fixed_size + 16
  const Kernel& kernel = good_object->kernels()[0];
  std::uint64_t kd = kernel.descriptor->address;  // lld places .rodata at its file offset
  std::uint32_t private_size = kernel.private_segment_fixed_size + 16;
  std::memcpy(mismatch.data() + kd + 4, &private_size, sizeof private_size);
  auto mismatch_object = CodeObject::read(mismatch);
  ASSERT_TRUE(Succeeds(mismatch_object));
  ASSERT_EQ(mismatch_object->problems().size(), 1u);
  ASSERT_EQ(mismatch_object->problems()[0].field, "private_segment_fixed_size");

  auto runtime = std::make_shared<CountingRuntime>(dry_run_devices({"gfx90a"}));
  Registry registry{runtime, Config{}};
  auto loads = registry.register_memory(old_version, "old_version.co");
  ASSERT_TRUE(Succeeds(loads));
  EXPECT_TRUE(Succeeds(registry.lookup_kernel(*loads, 0, kernel_name)));
  EXPECT_EQ(runtime->total_loads(), 1u);

  auto refused = registry.register_memory(mismatch, "mismatch.co");
  ASSERT_TRUE(Succeeds(refused));
  auto lookup = registry.lookup_kernel(*refused, 0, kernel_name);
  ASSERT_TRUE(FailsWith(lookup, ErrorKind::SizeMismatch));
  const ErrorLocation& at = lookup.error().location();
  EXPECT_EQ(at.file, "mismatch.co");
  EXPECT_EQ(at.bundle, std::optional<std::size_t>(0));
  EXPECT_EQ(at.entry, std::optional<std::size_t>(0));
  EXPECT_EQ(at.field, "private_segment_fixed_size") << lookup.error().message();
  EXPECT_EQ(runtime->total_loads(), 1u);
}

}  // namespace
}  // namespace coload
