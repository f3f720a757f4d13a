// Host stubs registered by several binaries (Registry::register_function):
// a template kernel's stub is one COMDAT function that every translation
// unit instantiating the template registers from its own wrapper
// (docs/embedding.md, "Host stubs"). A lookup takes the binary whose code
// fits the device best, the first registration on a tie, and falls back to
// the others as binaries are unregistered.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "coload/detail/registry_copies.h"
#include "coload/registry.h"
#include "registry_test_support.h"
#include "support/bundle_writer.h"
#include "test_util.h"

namespace coload {
namespace {

using testing::Bytes;
using testing::CountingRuntime;
using testing::dry_run_devices;
using testing::file_bytes;
using testing::fixture;

constexpr const char* kKernel = "_Z7add_onePii";  // in every co/ fixture
constexpr const char* kOther = "_Z5saxpyfPKfPfi";

/// A plain bundle of the co/ fixtures `objects` (file stem, entry target).
Bytes bundle_of(std::initializer_list<std::pair<const char*, const char*>> objects) {
  std::vector<testing::Entry> entries{{"host-x86_64-unknown-linux-gnu-", {}}};
  for (auto [file, target] : objects) {
    entries.push_back(
        {std::string("hipv4-amdgcn-amd-amdhsa--") + target, file_bytes(fixture(std::string("co/") + file + ".co"))});
  }
  return testing::write_plain_bundle(entries);
}

struct SharedStubTest : ::testing::Test {
  // 0: an MI200 running xnack off; 1: gfx1100; 2: gfx1101 and 3: gfx906, which only generic code fits.
  std::shared_ptr<CountingRuntime> runtime =
      std::make_shared<CountingRuntime>(dry_run_devices({"gfx90a:sramecc+:xnack-", "gfx1100", "gfx1101", "gfx906"}));
  Registry registry{runtime, Config{}};
  // Three translation units' bundles, each instantiating the same template:
  Bytes generic_only = bundle_of({{"gfx9-generic", "gfx9-generic"}});                       // C
  Bytes any_xnack = bundle_of({{"gfx90a", "gfx90a"}, {"gfx11-generic", "gfx11-generic"}});  // A
  Bytes exact = bundle_of({{"gfx90a_xnack-", "gfx90a:xnack-"}, {"gfx1100", "gfx1100"}});    // B
  char stub = 0;  // the one host stub all three register

  BinaryHandle add(const Bytes& bytes, const char* name) {
    auto binary = registry.register_memory(bytes, name);
    EXPECT_TRUE(binary) << binary.error().message();
    return binary ? *binary : BinaryHandle{};
  }
  /// The kernel `binary` itself has on `device` (by name).
  const LoadedKernel* own(BinaryHandle binary, std::size_t device) {
    auto kernel = registry.lookup_kernel(binary, device, kKernel);
    EXPECT_TRUE(kernel) << kernel.error().message();
    return kernel ? *kernel : nullptr;
  }
  const LoadedKernel* by_stub(std::size_t device) {
    auto kernel = registry.lookup_function(&stub, device);
    EXPECT_TRUE(kernel) << kernel.error().message();
    return kernel ? *kernel : nullptr;
  }
};

TEST_F(SharedStubTest, EachDeviceGetsTheBinaryThatFitsItBest) {
  BinaryHandle c = add(generic_only, "tu_c");
  BinaryHandle a = add(any_xnack, "tu_a");
  BinaryHandle b = add(exact, "tu_b");
  for (BinaryHandle binary : {c, a, b}) ASSERT_TRUE(registry.register_function(binary, &stub, kKernel));

  EXPECT_EQ(by_stub(0), own(b, 0));  // native with exact xnack before native with xnack any, before generic
  EXPECT_EQ(by_stub(1), own(b, 1));  // native gfx1100 before gfx11-generic
  EXPECT_EQ(by_stub(2), own(a, 2));  // only tu_a's gfx11-generic runs on gfx1101
  EXPECT_EQ(by_stub(3), own(c, 3));  // only tu_c's gfx9-generic runs on gfx906
  // The same answer from the remembered kernel, and through a copy.
  EXPECT_EQ(by_stub(0), own(b, 0));
  auto copy = detail::RegistryCopies::function(registry, &stub, 2);
  ASSERT_TRUE(copy);
  EXPECT_EQ(copy->name, kKernel);
  // The dispatch check reads the metadata of the kernel the stub resolved to.
  Dispatch dispatch;
  dispatch.kernarg_bytes = 12;
  dispatch.workgroup_size = {64, 1, 1};
  EXPECT_TRUE(registry.check_function_dispatch(&stub, 0, dispatch));
  dispatch.kernarg_bytes = 40;
  EXPECT_TRUE(testing::FailsWith(registry.check_function_dispatch(&stub, 0, dispatch), ErrorKind::SizeMismatch));
}

TEST_F(SharedStubTest, ATieGoesToTheFirstRegistration) {
  Bytes twin = bundle_of({{"gfx90a", "gfx90a"}});
  BinaryHandle second = add(twin, "tu_second");
  BinaryHandle first = add(any_xnack, "tu_first");
  // Registered by `second` first: equal fits, so its kernel stands.
  ASSERT_TRUE(registry.register_function(second, &stub, kKernel));
  ASSERT_TRUE(registry.register_function(first, &stub, kKernel));
  EXPECT_EQ(by_stub(0), own(second, 0));
  EXPECT_NE(own(second, 0), own(first, 0));
}

TEST(SharedStub, NativeExactCodeInTheFirstBinaryLoadsNoOther) {
  auto runtime = std::make_shared<CountingRuntime>(dry_run_devices({"gfx908:sramecc+:xnack-"}));
  Registry registry{runtime, Config{}};
  Bytes exact = bundle_of({{"gfx908_sramecc+_xnack-", "gfx908:sramecc+:xnack-"}});
  std::vector<BinaryHandle> binaries;
  char stub = 0;
  for (const char* name : {"tu_0", "tu_1", "tu_2"}) {
    auto binary = registry.register_memory(exact, name);
    ASSERT_TRUE(binary);
    ASSERT_TRUE(registry.register_function(*binary, &stub, kKernel));
    binaries.push_back(*binary);
  }
  auto kernel = registry.lookup_function(&stub, 0);
  ASSERT_TRUE(kernel) << kernel.error().message();
  EXPECT_EQ(runtime->loads(0), 1u);  // tu_0's module: nothing can fit better than exact native code
  EXPECT_EQ(*kernel, *registry.lookup_kernel(binaries[0], 0, kKernel));
}

TEST_F(SharedStubTest, UnregisteringTheBestFallsBackToTheNext) {
  BinaryHandle c = add(generic_only, "tu_c");
  BinaryHandle a = add(any_xnack, "tu_a");
  BinaryHandle b = add(exact, "tu_b");
  for (BinaryHandle binary : {c, a, b}) ASSERT_TRUE(registry.register_function(binary, &stub, kKernel));
  EXPECT_EQ(by_stub(0), own(b, 0));
  ASSERT_TRUE(registry.unregister(b));
  EXPECT_EQ(by_stub(0), own(a, 0));  // native, xnack any
  ASSERT_TRUE(registry.unregister(a));
  // tu_c has no code for device 0: its own error; on gfx906 it still resolves.
  auto none = registry.lookup_function(&stub, 0);
  EXPECT_TRUE(testing::FailsWith(none, ErrorKind::NotFound));
  EXPECT_EQ(none.error().location().file, "tu_c") << none.error().message();
  EXPECT_EQ(none.error().location().bundle, std::optional<std::size_t>(0));
  EXPECT_EQ(by_stub(3), own(c, 3));
  ASSERT_TRUE(registry.unregister(c));
  auto gone = registry.lookup_function(&stub, 3);
  EXPECT_TRUE(testing::FailsWith(gone, ErrorKind::NotFound));
  EXPECT_NE(gone.error().message().find("no kernel is registered for host stub"), std::string::npos);
}

TEST_F(SharedStubTest, ABetterBinaryRegisteredAfterALookupIsTaken) {
  BinaryHandle a = add(any_xnack, "tu_a");
  ASSERT_TRUE(registry.register_function(a, &stub, kKernel));
  EXPECT_EQ(by_stub(0), own(a, 0));
  // A library loaded later whose instantiation interposes the same stub.
  BinaryHandle b = add(exact, "tu_b");
  ASSERT_TRUE(registry.register_function(b, &stub, kKernel));
  EXPECT_EQ(by_stub(0), own(b, 0));
}

TEST_F(SharedStubTest, ABinaryWithoutCodeForTheDeviceIsPassedOver) {
  BinaryHandle c = add(generic_only, "tu_c");
  ASSERT_TRUE(registry.register_function(c, &stub, kKernel));
  // gfx9-generic does not run on gfx1101: with no other binary, its own error.
  auto none = registry.lookup_function(&stub, 2);
  EXPECT_TRUE(testing::FailsWith(none, ErrorKind::NotFound));
  EXPECT_NE(none.error().message().find("tu_c"), std::string::npos) << none.error().message();
  BinaryHandle a = add(any_xnack, "tu_a");
  ASSERT_TRUE(registry.register_function(a, &stub, kKernel));
  EXPECT_EQ(by_stub(2), own(a, 2));
  auto out_of_range = registry.lookup_function(&stub, 4);
  EXPECT_TRUE(testing::FailsWith(out_of_range, ErrorKind::InvalidArgument));
}

TEST_F(SharedStubTest, AnotherDeviceNameIsAmbiguous) {
  BinaryHandle a = add(any_xnack, "tu_a");
  BinaryHandle b = add(exact, "tu_b");
  ASSERT_TRUE(registry.register_function(a, &stub, kKernel));
  auto other = registry.register_function(b, &stub, kOther);
  ASSERT_TRUE(testing::FailsWith(other, ErrorKind::Ambiguous));
  EXPECT_EQ(other.error().location().field, "device_name");
  EXPECT_NE(other.error().message().find(std::string("already stands for kernel \"") + kKernel + "\""),
            std::string::npos)
      << other.error().message();
  // The same binary again, and the same name from another binary, are accepted.
  EXPECT_TRUE(registry.register_function(a, &stub, kKernel));
  EXPECT_TRUE(registry.register_function(b, &stub, kKernel));
  EXPECT_EQ(by_stub(0), own(b, 0));
}

}  // namespace
}  // namespace coload
