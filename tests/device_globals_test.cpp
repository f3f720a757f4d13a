// Device globals (`__device__` and `__constant__` variables) without a GPU:
// the code object's variables as CodeObject reads them, the dry-run module's
// answer, and Registry::lookup_global over bundles and a host image. The HSA
// and HIP answers are in hsa_runtime_test.cpp and hip_runtime_test.cpp.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "coload/code_object.h"
#include "coload/registry.h"
#include "coload/runtime.h"
#include "registry_test_support.h"
#include "test_util.h"

namespace coload {
namespace {

using testing::dry_run_devices;
using testing::FailsWith;
using testing::file_bytes;
using testing::fixture;
using testing::Succeeds;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// tests/kernels/vector_ops.hip defines `int dev_counter` and `float dev_coeffs[4]`.
TEST(DeviceGlobals, CodeObjectListsItsVariablesNotItsKernels) {
  auto bytes = file_bytes(fixture("co/gfx90a.co"));
  auto code_object = CodeObject::read(bytes);
  ASSERT_TRUE(Succeeds(code_object));
  const Variable* counter = code_object->find_variable("dev_counter");
  ASSERT_NE(counter, nullptr);
  EXPECT_EQ(counter->size, 4u);
  const Variable* coeffs = code_object->find_variable("dev_coeffs");
  ASSERT_NE(coeffs, nullptr);
  EXPECT_EQ(coeffs->size, 16u);
  for (const Variable& variable : code_object->variables()) {
    EXPECT_FALSE(variable.name.ends_with(".kd")) << variable.name;
    EXPECT_EQ(code_object->find_kernel(variable.name), nullptr) << variable.name;
    EXPECT_EQ(code_object->find_variable(variable.name), &variable) << "listed once: " << variable.name;
  }
  for (const Kernel& kernel : code_object->kernels()) {
    EXPECT_EQ(code_object->find_variable(kernel.symbol), nullptr) << kernel.symbol;
    EXPECT_EQ(code_object->find_variable(kernel.name), nullptr) << kernel.name;
  }
}

TEST(DeviceGlobals, DryRunAnswersTheSymbolsSizeAtAddressZero) {
  auto bytes = std::make_shared<const std::vector<std::byte>>(file_bytes(fixture("co/gfx90a.co")));
  auto code_object = CodeObject::read(*bytes);
  ASSERT_TRUE(Succeeds(code_object));
  auto runtime = open_dry_run_runtime(dry_run_devices({"gfx90a"}));
  auto module = runtime->load(0, Image{*bytes, bytes}, *code_object);
  ASSERT_TRUE(Succeeds(module));
  auto counter = (*module)->global("dev_counter");
  ASSERT_TRUE(Succeeds(counter));
  EXPECT_EQ(counter->address, 0u);
  EXPECT_EQ(counter->size, 4u);
  EXPECT_EQ((*module)->global("dev_coeffs")->size, 16u);

  const Kernel& kernel = code_object->kernels().front();
  for (const std::string& name : {kernel.name, kernel.symbol}) {
    auto missing = (*module)->global(name);
    ASSERT_TRUE(FailsWith(missing, ErrorKind::NotFound)) << name;
    EXPECT_TRUE(contains(missing.error().message(), "global variable \"" + name + "\" not found")) << name;
    EXPECT_TRUE(contains(missing.error().message(), "it names kernel \"" + kernel.name + "\", not a variable"));
  }
  auto unknown = (*module)->global("no_such_variable");
  ASSERT_TRUE(FailsWith(unknown, ErrorKind::NotFound));
  EXPECT_FALSE(contains(unknown.error().message(), "names kernel"));
}

/// The `__hip_cuid_*` variable clang puts in every translation unit's code object.
std::string cuid_variable(const std::string& code_object_path) {
  auto code_object = CodeObject::read(file_bytes(code_object_path));
  if (!code_object) return {};
  for (const Variable& variable : code_object->variables()) {
    if (variable.name.starts_with("__hip_cuid_")) return variable.name;
  }
  return {};
}

TEST(DeviceGlobals, RegistryLoadsTheBinaryAndSearchesItsModules) {
  auto runtime = std::make_shared<testing::CountingRuntime>(dry_run_devices({"gfx1030", "gfx90a:xnack+"}));
  Registry registry(runtime, Config{});
  // A host image of three translation units; for gfx90a:xnack+ the first
  // (vector_ops.hip: dev_counter) and the third (lds_dynamic.hip) have entries.
  const std::string path = fixture("host/libkernels.so");
  auto binary = registry.register_file(path);
  ASSERT_TRUE(Succeeds(binary));
  auto counter = registry.lookup_global(*binary, 1, "dev_counter");
  ASSERT_TRUE(Succeeds(counter));
  EXPECT_EQ(counter->address, 0u);
  EXPECT_EQ(counter->size, 4u);
  EXPECT_EQ(runtime->loads(1), 2u);
  EXPECT_EQ(runtime->loads(0), 0u);
  const std::string third =
      cuid_variable(fixture("expected/host__parts__plain-lds_dynamic.hipfb/hipv4-amdgcn-amd-amdhsa--gfx90a_xnack+.co"));
  ASSERT_FALSE(third.empty());
  auto in_third = registry.lookup_global(*binary, 1, third);
  ASSERT_TRUE(Succeeds(in_third)) << "the second module is searched too";
  EXPECT_EQ(in_third->size, 1u);
  EXPECT_EQ(runtime->loads(1), 2u) << "loaded once";

  auto missing = registry.lookup_global(*binary, 1, "no_such_variable");
  ASSERT_TRUE(FailsWith(missing, ErrorKind::NotFound));
  EXPECT_TRUE(contains(missing.error().message(), "global variable \"no_such_variable\" not found in " + path +
                                                      " for device 1 (" + registry.devices()[1].str() +
                                                      "; 2 modules loaded)"));
  EXPECT_TRUE(FailsWith(registry.lookup_global(*binary, 2, "dev_counter"), ErrorKind::InvalidArgument));
  ASSERT_TRUE(Succeeds(registry.unregister(*binary)));
  EXPECT_TRUE(FailsWith(registry.lookup_global(*binary, 1, "dev_counter"), ErrorKind::NotFound));
}

}  // namespace
}  // namespace coload
