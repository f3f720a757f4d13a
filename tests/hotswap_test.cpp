// The hotswap registry: the built-in passes bound from passes.def (each
// registration binds only its own slot; unlisted names stay absent; built
// once), add()'s exact errors, find_pair, the allowlist, plugins built by the
// tests (tests/support/hotswap_plugins: a good one and several bad ones) and
// the registry a Config asks for.
#include "coload/detail/hotswap.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "hotswap/passes.h"
#include "registry_test_support.h"
#include "select/target_rules.h"
#include "test_util.h"

namespace coload {
namespace {

using coload::testing::FailsWith;
using coload::testing::Succeeds;

HotswapPass pass_named(std::string name, std::vector<HotswapAllowlist::Pair> pairs) {
  HotswapPass pass;
  pass.name = std::move(name);
  pass.pairs = std::move(pairs);
  pass.transform = [](std::span<const std::byte> source, const Device&) -> Expected<std::vector<std::byte>> {
    return std::vector<std::byte>(source.begin(), source.end());
  };
  return pass;
}

Device device(const char* spec) {
  auto made = device_from_spec(spec);
  EXPECT_TRUE(Succeeds(made)) << spec;
  return *made;
}

// --- Built-in passes: the .def list ----------------------------------------

TEST(HotswapBuiltin, EveryListedPassBindsOnlyItsOwnSlot) {
  std::size_t listed = 0;
#define COLOAD_HOTSWAP_PASS(Name, pass_name)                                                        \
  {                                                                                                 \
    ++listed;                                                                                       \
    HotswapRegistry alone;                                                                          \
    detail::register_##Name##_pass(alone);                                                          \
    ASSERT_EQ(alone.passes().size(), 1u) << #Name;                                                  \
    EXPECT_EQ(alone.passes()[0]->name, pass_name) << #Name;                                         \
    for (std::string_view other : detail::kBuiltinPassNames) {                                      \
      if (other != pass_name) EXPECT_EQ(alone.find(other), nullptr) << #Name << " bound " << other; \
    }                                                                                               \
  }
#include "hotswap/passes.def"
#undef COLOAD_HOTSWAP_PASS
  EXPECT_EQ(listed, std::size(detail::kBuiltinPassNames));
}

TEST(HotswapBuiltin, HoldsExactlyTheListedPasses) {
  const HotswapRegistry& builtin = HotswapRegistry::builtin();
  ASSERT_EQ(builtin.passes().size(), std::size(detail::kBuiltinPassNames));
  for (std::size_t i = 0; i < builtin.passes().size(); ++i) {
    EXPECT_EQ(builtin.passes()[i]->name, detail::kBuiltinPassNames[i]);
    EXPECT_EQ(builtin.find(detail::kBuiltinPassNames[i]), builtin.passes()[i].get());
  }
  EXPECT_EQ(builtin.find("no-such-pass"), nullptr);
  EXPECT_EQ(builtin.find(""), nullptr);
}

TEST(HotswapBuiltin, IsOneRegistryBuiltOnceAcrossThreads) {
  std::vector<const HotswapRegistry*> seen(8);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < seen.size(); ++i) {
    threads.emplace_back([&seen, i] { seen[i] = &HotswapRegistry::builtin(); });
  }
  for (auto& thread : threads) thread.join();
  for (const HotswapRegistry* registry : seen) EXPECT_EQ(registry, &HotswapRegistry::builtin());
  // Built once: the passes are the same objects every time.
  const HotswapPass* first = HotswapRegistry::builtin().passes()[0].get();
  EXPECT_EQ(HotswapRegistry::builtin().passes()[0].get(), first);
}

// The selector asks by processor, the hotswap passes by name: one table, one answer.
TEST(HotswapBuiltin, SameIsaGroupsAnswerAlikeByNameAndByProcessor) {
  std::size_t equivalent = 0;
  for (const Processor& code : processors()) {
    for (const Processor& device : processors()) {
      bool by_name = detail::runs_equivalently(code.name, device.name);
      EXPECT_EQ(detail::runs_equivalently(code, device), by_name) << code.name << " -> " << device.name;
      equivalent += by_name;
    }
  }
  EXPECT_EQ(equivalent, 4u * 5 + 1 * 4 + 7 * 7);  // every name of the groups is a known processor
}

TEST(HotswapBuiltin, SameIsaRetargetCoversExactlyTheSameIsaGroups) {
  const HotswapPass* pass = HotswapRegistry::builtin().find("same-isa-retarget");
  ASSERT_NE(pass, nullptr);
  EXPECT_EQ(pass->pairs, detail::equivalent_pairs());
  EXPECT_TRUE(pass->transform);
  for (const auto& pair : pass->pairs) {
    EXPECT_NE(pair.source, pair.device);
    EXPECT_TRUE(detail::runs_equivalently(pair.source, pair.device)) << pair.source << " -> " << pair.device;
  }
  const HotswapRegistry& builtin = HotswapRegistry::builtin();
  EXPECT_EQ(builtin.find_pair("gfx1030", "gfx1031"), pass);
  EXPECT_EQ(builtin.find_pair("gfx900", "gfx906"), pass);
  EXPECT_EQ(builtin.find_pair("gfx1030", "gfx1030"), nullptr);  // identity: native code
  EXPECT_EQ(builtin.find_pair("gfx906", "gfx900"), nullptr);    // gfx906 only receives
  EXPECT_EQ(builtin.find_pair("gfx1011", "gfx1010"), nullptr);
  EXPECT_EQ(builtin.find_pair("gfx1250", "gfx942"), nullptr);  // no cross-ISA pass is built in
}

// --- A test-only list, bound the way passes.def is -------------------------

#define TEST_HOTSWAP_PASSES(X) X(Alpha, "alpha", "gfx1250", "gfx942") X(Beta, "beta", "gfx1250", "gfx950")

#define DEFINE_TEST_PASS(Name, pass_name, source, device)                           \
  void register_##Name##_pass(HotswapRegistry& registry) {                          \
    ASSERT_TRUE(Succeeds(registry.add(pass_named(pass_name, {{source, device}})))); \
  }
TEST_HOTSWAP_PASSES(DEFINE_TEST_PASS)
#undef DEFINE_TEST_PASS

TEST(HotswapTestList, EachRegistrationTouchesOnlyItsName) {
  const std::vector<std::string> names = {
#define NAME_OF(Name, pass_name, source, device) pass_name,
      TEST_HOTSWAP_PASSES(NAME_OF)
#undef NAME_OF
  };
#define CHECK_ALONE(Name, pass_name, source, device)                              \
  {                                                                               \
    HotswapRegistry alone;                                                        \
    register_##Name##_pass(alone);                                                \
    ASSERT_EQ(alone.passes().size(), 1u);                                         \
    EXPECT_NE(alone.find(pass_name), nullptr);                                    \
    EXPECT_EQ(alone.find_pair(source, device), alone.find(pass_name));            \
    for (const std::string& other : names) {                                      \
      if (other != pass_name) EXPECT_EQ(alone.find(other), nullptr) << pass_name; \
    }                                                                             \
    EXPECT_EQ(alone.find("gamma"), nullptr);                                      \
  }
  TEST_HOTSWAP_PASSES(CHECK_ALONE)
#undef CHECK_ALONE

  HotswapRegistry all;
#define REGISTER(Name, pass_name, source, device) register_##Name##_pass(all);
  TEST_HOTSWAP_PASSES(REGISTER)
#undef REGISTER
  ASSERT_EQ(all.passes().size(), names.size());
  EXPECT_EQ(all.find_pair("gfx1250", "gfx942"), all.find("alpha"));
  EXPECT_EQ(all.find_pair("gfx1250", "gfx950"), all.find("beta"));
  EXPECT_EQ(all.find("gamma"), nullptr);
  EXPECT_EQ(all.find_pair("gfx1250", "gfx90a"), nullptr);
  HotswapAllowlist allowlist = all.allowlist();
  EXPECT_EQ(allowlist.pairs().size(), 2u);
  EXPECT_TRUE(allowlist.contains("gfx1250", "gfx942"));
  EXPECT_TRUE(allowlist.contains("gfx1250", "gfx950"));
}

// --- add() -----------------------------------------------------------------

TEST(HotswapAdd, RefusesWithExactKinds) {
  HotswapRegistry registry;
  ASSERT_TRUE(Succeeds(registry.add(pass_named("first", {{"gfx1250", "gfx942"}}))));

  EXPECT_TRUE(FailsWith(registry.add(pass_named("", {{"gfx1250", "gfx950"}})), ErrorKind::InvalidArgument));
  EXPECT_TRUE(FailsWith(registry.add(pass_named("no-pairs", {})), ErrorKind::InvalidArgument));
  HotswapPass no_transform = pass_named("no-transform", {{"gfx1250", "gfx950"}});
  no_transform.transform = nullptr;
  EXPECT_TRUE(FailsWith(registry.add(no_transform), ErrorKind::InvalidArgument));
  EXPECT_TRUE(FailsWith(registry.add(pass_named("first", {{"gfx1250", "gfx950"}})), ErrorKind::InvalidArgument));
  EXPECT_TRUE(FailsWith(registry.add(pass_named("unknown", {{"gfx1250", "gfx9999"}})), ErrorKind::NotFound));
  EXPECT_TRUE(FailsWith(registry.add(pass_named("identity", {{"gfx942", "gfx942"}})), ErrorKind::InvalidArgument));
  EXPECT_TRUE(FailsWith(registry.add(pass_named("generic", {{"gfx9-generic", "gfx900"}})), ErrorKind::InvalidArgument));
  auto overlap = registry.add(pass_named("second", {{"gfx1250", "gfx950"}, {"gfx1250", "gfx942"}}));
  ASSERT_TRUE(FailsWith(overlap, ErrorKind::Ambiguous));
  EXPECT_NE(overlap.error().message().find("\"first\""), std::string::npos) << overlap.error().message();

  // Nothing half-added.
  ASSERT_EQ(registry.passes().size(), 1u);
  EXPECT_EQ(registry.find("second"), nullptr);
  EXPECT_EQ(registry.find_pair("gfx1250", "gfx950"), nullptr);
}

TEST(HotswapAdd, StoresPairsCanonicalAndUnique) {
  HotswapRegistry registry;
  ASSERT_TRUE(Succeeds(registry.add(pass_named("twice", {{"gfx1250", "gfx942"}, {"gfx1250", "gfx942"}}))));
  EXPECT_EQ(registry.find("twice")->pairs.size(), 1u);
}

// --- Plugins -----------------------------------------------------------------

std::vector<std::byte> gfx942_object() {
  auto bytes = coload::testing::file_bytes(coload::testing::fixture("co/gfx942.co"));
  EXPECT_FALSE(bytes.empty());
  return bytes;
}

/// The good plugin still loads and transforms: a bad one left nothing behind.
void expect_process_still_works(HotswapRegistry& registry) {
  std::size_t before = registry.passes().size();
  ASSERT_TRUE(Succeeds(registry.add_plugin(COLOAD_PLUGIN_GOOD)));
  ASSERT_EQ(registry.passes().size(), before + 1);
  const HotswapPass* pass = registry.find("good-plugin");
  ASSERT_NE(pass, nullptr);
  auto input = gfx942_object();
  auto output = pass->transform(input, device("gfx942"));
  ASSERT_TRUE(Succeeds(output));
  EXPECT_EQ(*output, input);
}

TEST(HotswapPlugin, GoodPluginAddsItsPassAndPairs) {
  HotswapRegistry registry;
  expect_process_still_works(registry);
  const HotswapPass* pass = registry.find("good-plugin");
  EXPECT_EQ(pass->pairs, (std::vector<HotswapAllowlist::Pair>{{"gfx1250", "gfx942"}, {"gfx1250", "gfx950"}}));
  EXPECT_EQ(registry.find_pair("gfx1250", "gfx942"), pass);
  EXPECT_TRUE(registry.allowlist().contains("gfx1250", "gfx950"));
  // The same plugin twice: its name is taken.
  EXPECT_TRUE(FailsWith(registry.add_plugin(COLOAD_PLUGIN_GOOD), ErrorKind::InvalidArgument));
}

TEST(HotswapPlugin, PassOutlivesTheRegistryCopyItCameFrom) {
  HotswapPass copy;
  {
    HotswapRegistry registry;
    ASSERT_TRUE(Succeeds(registry.add_plugin(COLOAD_PLUGIN_GOOD)));
    copy = *registry.find("good-plugin");
  }
  auto input = gfx942_object();
  auto output = copy.transform(input, device("gfx942"));
  ASSERT_TRUE(Succeeds(output));
  EXPECT_EQ(*output, input);
}

struct BadPlugin {
  const char* path;
  ErrorKind kind;
  const char* names;  ///< a part of the message
};

TEST(HotswapPlugin, BadPluginsFailToLoadWithExactKinds) {
  const BadPlugin cases[] = {
      {"/nonexistent/libcoload_plugin.so", ErrorKind::Io, "/nonexistent/libcoload_plugin.so"},
      {COLOAD_PLUGIN_MISSING_SYMBOL, ErrorKind::NotFound, "coload_hotswap_plugin_free"},
      {COLOAD_PLUGIN_WRONG_VERSION, ErrorKind::UnsupportedVersion, "version 2"},
      {COLOAD_PLUGIN_UNKNOWN_PROCESSOR, ErrorKind::NotFound, "gfx9999"},
  };
  for (const BadPlugin& bad : cases) {
    HotswapRegistry registry;
    auto loaded = registry.add_plugin(bad.path);
    ASSERT_TRUE(FailsWith(loaded, bad.kind)) << bad.path;
    EXPECT_NE(loaded.error().message().find(bad.names), std::string::npos) << loaded.error().message();
    EXPECT_NE(loaded.error().message().find(bad.path), std::string::npos) << loaded.error().message();
    EXPECT_TRUE(registry.passes().empty()) << bad.path;
    expect_process_still_works(registry);
  }
}

TEST(HotswapPlugin, PairAnotherPassCoversIsAmbiguous) {
  auto registry = hotswap_registry(Config{});
  ASSERT_TRUE(Succeeds(registry));
  std::size_t before = registry->passes().size();
  auto loaded = registry->add_plugin(COLOAD_PLUGIN_SAME_ISA_PAIR);
  ASSERT_TRUE(FailsWith(loaded, ErrorKind::Ambiguous));
  EXPECT_NE(loaded.error().message().find("same-isa-retarget"), std::string::npos) << loaded.error().message();
  EXPECT_EQ(registry->passes().size(), before);
  expect_process_still_works(*registry);
}

struct BadTransform {
  const char* path;
  ErrorKind kind;
  const char* names;
};

// Bytes a plugin returns past the ELF's own extent are never read: they are not kept either.
TEST(HotswapPlugin, OutputIsCutToTheCodeObjectsExtent) {
  HotswapRegistry registry;
  ASSERT_TRUE(Succeeds(registry.add_plugin(COLOAD_PLUGIN_PADDED)));
  const HotswapPass* pass = registry.find("test-plugin");
  ASSERT_NE(pass, nullptr);
  auto input = gfx942_object();
  auto output = pass->transform(input, device("gfx942"));
  ASSERT_TRUE(Succeeds(output));
  EXPECT_EQ(*output, input);  // not input + 1 MiB
}

TEST(HotswapPlugin, BadTransformsAreErrorsNamingThePlugin) {
  const BadTransform cases[] = {
      {COLOAD_PLUGIN_TRANSFORM_FAILS, ErrorKind::InvalidArgument, "stepping not supported"},
      {COLOAD_PLUGIN_GARBAGE, ErrorKind::BadMagic, "not an AMDHSA code object"},
      {COLOAD_PLUGIN_EMPTY, ErrorKind::Malformed, "no buffer"},
  };
  auto input = gfx942_object();
  for (const BadTransform& bad : cases) {
    HotswapRegistry registry;
    ASSERT_TRUE(Succeeds(registry.add_plugin(bad.path))) << bad.path;
    const HotswapPass* pass = registry.find("test-plugin");
    ASSERT_NE(pass, nullptr);
    for (int attempt = 0; attempt < 2; ++attempt) {  // and again: nothing broke
      auto output = pass->transform(input, device("gfx942"));
      ASSERT_TRUE(FailsWith(output, bad.kind)) << bad.path;
      const std::string& message = output.error().message();
      EXPECT_NE(message.find(bad.names), std::string::npos) << message;
      EXPECT_NE(message.find(bad.path), std::string::npos) << message;
      EXPECT_NE(message.find("gfx942"), std::string::npos) << message;
    }
  }
}

// --- The registry a Config asks for ------------------------------------------

TEST(HotswapConfig, BuiltinPassesThenThePlugin) {
  Config config;
  auto plain = hotswap_registry(config);
  ASSERT_TRUE(Succeeds(plain));
  EXPECT_EQ(plain->passes().size(), HotswapRegistry::builtin().passes().size());

  config.hotswap_plugin = COLOAD_PLUGIN_GOOD;
  auto with_plugin = hotswap_registry(config);
  ASSERT_TRUE(Succeeds(with_plugin));
  EXPECT_EQ(with_plugin->passes().size(), HotswapRegistry::builtin().passes().size() + 1);
  EXPECT_NE(with_plugin->find("good-plugin"), nullptr);
  EXPECT_NE(with_plugin->find("same-isa-retarget"), nullptr);

  config.hotswap = true;
  config.hotswap_pairs = {"gfx1250>gfx942"};
  SelectOptions narrowed = select_options(config, *with_plugin);
  ASSERT_EQ(narrowed.hotswap_allowlist.pairs().size(), 1u);
  EXPECT_TRUE(narrowed.hotswap_allowlist.contains("gfx1250", "gfx942"));
  config.hotswap_pairs.clear();
  EXPECT_EQ(select_options(config, *with_plugin).hotswap_allowlist.pairs().size(),
            with_plugin->allowlist().pairs().size());
}

TEST(HotswapConfig, BadPluginOrUncoveredPairIsAnError) {
  Config config;
  config.hotswap_plugin = COLOAD_PLUGIN_WRONG_VERSION;
  auto bad = hotswap_registry(config);
  ASSERT_TRUE(FailsWith(bad, ErrorKind::UnsupportedVersion));
  EXPECT_NE(bad.error().message().find("COLOAD_HOTSWAP_PLUGIN"), std::string::npos) << bad.error().message();

  config.hotswap_plugin.clear();
  config.hotswap_pairs = {"gfx1250>gfx942"};  // no pass without the plugin
  auto uncovered = hotswap_registry(config);
  ASSERT_TRUE(FailsWith(uncovered, ErrorKind::NotFound));
  EXPECT_NE(uncovered.error().message().find("gfx1250>gfx942"), std::string::npos) << uncovered.error().message();
}

}  // namespace
}  // namespace coload
