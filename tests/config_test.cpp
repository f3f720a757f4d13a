// Config: every COLOAD_* variable, every accepted value, each kind of bad
// value, defaults, and the process-wide config. Variables come from a map;
// only ProcessEnvironmentDeathTest touches the real environment, in a child.
#include "coload/config.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "coload/detail/hotswap.h"
#include "test_util.h"

namespace coload {
namespace {

using coload::testing::FailsWith;
using coload::testing::Succeeds;
using Variables = std::map<std::string, std::string, std::less<>>;

Config::Lookup lookup_in(Variables variables) {
  return [variables = std::move(variables)](std::string_view name) -> std::optional<std::string> {
    auto found = variables.find(name);
    if (found == variables.end()) return std::nullopt;
    return found->second;
  };
}

Expected<Config> config_with(std::string name, std::string value) {
  return Config::from_variables(lookup_in({{std::move(name), std::move(value)}}));
}

/// Refused with InvalidArgument, the variable as the field at fault, and a
/// sentence that quotes the value and says what is `accepted`.
::testing::AssertionResult Refused(const Expected<Config>& result, std::string_view variable, std::string_view value,
                                   std::string_view accepted) {
  if (auto kind = FailsWith(result, ErrorKind::InvalidArgument); !kind) return kind;
  if (result.error().location().field != variable) {
    return ::testing::AssertionFailure() << "field \"" << result.error().location().field << "\" is not \"" << variable
                                         << "\"";
  }
  const std::string& message = result.error().detail();
  const std::string quoted = "\"" + std::string(value) + "\"";
  for (std::string_view part : {std::string_view(quoted), accepted}) {
    if (message.find(part) == std::string::npos) {
      return ::testing::AssertionFailure() << "message \"" << message << "\" does not contain \"" << part << "\"";
    }
  }
  return ::testing::AssertionSuccess();
}

const std::vector<std::string> kVariables = {"COLOAD_UNBUNDLER",
                                             "COLOAD_EXTENDED_ISA_COMPAT",
                                             "COLOAD_HOTSWAP",
                                             "COLOAD_LOG",
                                             "COLOAD_MAX_DECOMPRESSED_BYTES",
                                             "COLOAD_HOTSWAP_PLUGIN",
                                             "COLOAD_HOTSWAP_PAIRS",
                                             "COLOAD_HASH_CHECK",
                                             "COLOAD_VERIFY_CACHE",
                                             "COLOAD_KPACK_ROOT",
                                             "ROCM_KPACK_PATH",
                                             "ROCM_KPACK_PATH_PREFIX",
                                             "ROCM_KPACK_DISABLE"};

void expect_defaults(const Config& config) {
  EXPECT_EQ(config.unbundler, Unbundler::Builtin);
  EXPECT_TRUE(config.extended_isa_compat.empty());
  EXPECT_FALSE(config.extended_isa_compat_all);
  EXPECT_FALSE(config.hotswap);
  EXPECT_TRUE(config.hotswap_plugin.empty());
  EXPECT_TRUE(config.hotswap_pairs.empty());
  EXPECT_EQ(config.log_level, LogLevel::Warn);
  EXPECT_EQ(config.max_decompressed_bytes, ReadOptions{}.max_decompressed_bytes);
  EXPECT_EQ(config.hash_check, StreamOptions::HashCheck::Verify);
  EXPECT_EQ(config.stream_options().hash, StreamOptions::HashCheck::Verify);
  EXPECT_EQ(config.verified_cache, "");  // without HOME or XDG_CACHE_HOME: no marks
  EXPECT_EQ(config.stream_options().read.verified_cache, "");
  EXPECT_TRUE(config.kpack.paths.empty());
  EXPECT_TRUE(config.kpack.prefix_paths.empty());
  EXPECT_FALSE(config.kpack.disabled);
  EXPECT_EQ(config.kpack.root, "");
}

TEST(ConfigDefaults, UnsetVariablesKeepDefaults) {
  auto config = Config::from_variables(lookup_in({}));
  ASSERT_TRUE(Succeeds(config));
  expect_defaults(*config);
  expect_defaults(Config{});
}

TEST(ConfigDefaults, EmptyVariablesKeepDefaults) {
  Variables variables;
  for (const std::string& name : kVariables) variables[name] = "";
  auto config = Config::from_variables(lookup_in(variables));
  ASSERT_TRUE(Succeeds(config));
  expect_defaults(*config);
}

TEST(ConfigDefaults, ReadsExactlyTheDocumentedVariables) {
  std::set<std::string> asked;
  auto config = Config::from_variables([&](std::string_view name) -> std::optional<std::string> {
    asked.insert(std::string(name));
    return std::nullopt;
  });
  ASSERT_TRUE(Succeeds(config));
  std::set<std::string> documented(kVariables.begin(), kVariables.end());
  documented.insert({"XDG_CACHE_HOME", "HOME"});  // for COLOAD_VERIFY_CACHE's default
  EXPECT_EQ(asked, documented);
}

TEST(ConfigDefaults, OtherVariablesAreIgnored) {
  auto config = Config::from_variables(
      lookup_in({{"HIP_USE_RUNTIME_UNBUNDLER", "1"}, {"HSA_OVERRIDE_GFX_VERSION", "10.3.0"}, {"COLOAD_BOGUS", "x"}}));
  ASSERT_TRUE(Succeeds(config));
  expect_defaults(*config);
}

TEST(ConfigKpack, ReadsRocmKpackVariablesAsItsLoaderDoes) {
  auto config = Config::from_variables(lookup_in({{"ROCM_KPACK_PATH", "/a/x.kpack::/b/y.kpack:"},
                                                  {"ROCM_KPACK_PATH_PREFIX", "/p.kpack"},
                                                  {"COLOAD_KPACK_ROOT", "/opt/rocm/lib"}}));
  ASSERT_TRUE(Succeeds(config));
  EXPECT_EQ(config->kpack.paths, (std::vector<std::string>{"/a/x.kpack", "/b/y.kpack"}));  // empty parts dropped
  EXPECT_EQ(config->kpack.prefix_paths, (std::vector<std::string>{"/p.kpack"}));
  EXPECT_EQ(config->kpack.root, "/opt/rocm/lib");
  EXPECT_EQ(config->read_options().kpack.paths, config->kpack.paths);
  EXPECT_EQ(config->read_options().kpack.root, "/opt/rocm/lib");
  // rocm-kpack: on when set, not empty, and not starting with '0'.
  for (const auto& [value, on] : std::vector<std::pair<std::string, bool>>{
           {"1", true}, {"yes", true}, {"0", false}, {"0x", false}, {"", false}}) {
    auto disabled = Config::from_variables(lookup_in({{"ROCM_KPACK_DISABLE", value}}));
    ASSERT_TRUE(Succeeds(disabled));
    EXPECT_EQ(disabled->kpack.disabled, on) << value;
  }
}

TEST(ConfigUnbundler, AcceptsBuiltinAndComgr) {
  auto builtin = config_with("COLOAD_UNBUNDLER", "builtin");
  ASSERT_TRUE(Succeeds(builtin));
  EXPECT_EQ(builtin->unbundler, Unbundler::Builtin);
  auto comgr = config_with("COLOAD_UNBUNDLER", "comgr");
  ASSERT_TRUE(Succeeds(comgr));
  EXPECT_EQ(comgr->unbundler, Unbundler::Comgr);
  EXPECT_EQ(select_options(*comgr).unbundler, Unbundler::Comgr);
}

TEST(ConfigUnbundler, RefusesOtherValues) {
  for (const char* value : {"Comgr", "BUILTIN", "runtime", "1", "0", " builtin", "builtin ", "builtin,comgr"}) {
    EXPECT_TRUE(Refused(config_with("COLOAD_UNBUNDLER", value), "COLOAD_UNBUNDLER", value, "builtin, comgr")) << value;
  }
}

TEST(ConfigHotswap, AcceptsZeroAndOne) {
  auto off = config_with("COLOAD_HOTSWAP", "0");
  ASSERT_TRUE(Succeeds(off));
  EXPECT_FALSE(off->hotswap);
  auto on = config_with("COLOAD_HOTSWAP", "1");
  ASSERT_TRUE(Succeeds(on));
  EXPECT_TRUE(on->hotswap);
  EXPECT_TRUE(select_options(*on).hotswap);
}

TEST(ConfigHotswap, RefusesOtherValues) {
  for (const char* value : {"true", "on", "yes", "2", "01", "-1", " 1"}) {
    EXPECT_TRUE(Refused(config_with("COLOAD_HOTSWAP", value), "COLOAD_HOTSWAP", value, "0, 1")) << value;
  }
}

TEST(ConfigHotswapPlugin, KeepsThePathAsGiven) {
  auto config = config_with("COLOAD_HOTSWAP_PLUGIN", "/opt/vendor/libtranspile.so");
  ASSERT_TRUE(Succeeds(config));
  EXPECT_EQ(config->hotswap_plugin, "/opt/vendor/libtranspile.so");
}

TEST(ConfigHotswapPairs, AcceptsPairsCanonicalAndUnique) {
  auto config = config_with("COLOAD_HOTSWAP_PAIRS", "gfx1030>gfx1031,gfx1250>gfx942,gfx1030>gfx1031");
  ASSERT_TRUE(Succeeds(config));
  EXPECT_EQ(config->hotswap_pairs, (std::vector<std::string>{"gfx1030>gfx1031", "gfx1250>gfx942"}));
}

TEST(ConfigHotswapPairs, RefusesMalformedPairs) {
  const std::string accepted = "source>device pairs";
  EXPECT_TRUE(Refused(config_with("COLOAD_HOTSWAP_PAIRS", "gfx1030"), "COLOAD_HOTSWAP_PAIRS", "gfx1030", accepted));
  EXPECT_TRUE(Refused(config_with("COLOAD_HOTSWAP_PAIRS", "gfx1030>gfx1031,"), "COLOAD_HOTSWAP_PAIRS",
                      "gfx1030>gfx1031,", accepted));
  EXPECT_TRUE(Refused(config_with("COLOAD_HOTSWAP_PAIRS", "a>b>c"), "COLOAD_HOTSWAP_PAIRS", "a>b>c", accepted));
  EXPECT_TRUE(Refused(config_with("COLOAD_HOTSWAP_PAIRS", "gfx1030>gfx9999"), "COLOAD_HOTSWAP_PAIRS", "gfx1030>gfx9999",
                      accepted));
  EXPECT_TRUE(
      Refused(config_with("COLOAD_HOTSWAP_PAIRS", "gfx942>gfx942"), "COLOAD_HOTSWAP_PAIRS", "gfx942>gfx942", accepted));
  EXPECT_TRUE(Refused(config_with("COLOAD_HOTSWAP_PAIRS", "gfx9-generic>gfx900"), "COLOAD_HOTSWAP_PAIRS",
                      "gfx9-generic>gfx900", accepted));
}

TEST(ConfigHotswapPairs, NarrowTheRegistryAllowlistWhenHotswapIsOn) {
  auto config =
      Config::from_variables(lookup_in({{"COLOAD_HOTSWAP", "1"}, {"COLOAD_HOTSWAP_PAIRS", "gfx1030>gfx1031"}}));
  ASSERT_TRUE(Succeeds(config));
  SelectOptions select = select_options(*config);
  ASSERT_EQ(select.hotswap_allowlist.pairs().size(), 1u);
  EXPECT_TRUE(select.hotswap_allowlist.contains("gfx1030", "gfx1031"));

  config->hotswap = false;  // off: nothing to consult
  EXPECT_TRUE(select_options(*config).hotswap_allowlist.empty());
}

TEST(ConfigLog, AcceptsEveryLevel) {
  const std::pair<const char*, LogLevel> levels[] = {
      {"error", LogLevel::Error}, {"warn", LogLevel::Warn}, {"info", LogLevel::Info}, {"debug", LogLevel::Debug}};
  for (const auto& [text, level] : levels) {
    auto config = config_with("COLOAD_LOG", text);
    ASSERT_TRUE(Succeeds(config)) << text;
    EXPECT_EQ(config->log_level, level) << text;
    EXPECT_EQ(to_string(level), text);  // the value is the level's own name
  }
}

TEST(ConfigLog, RefusesOtherValues) {
  for (const char* value : {"ERROR", "warning", "trace", "verbose", "3", "info,debug"}) {
    EXPECT_TRUE(Refused(config_with("COLOAD_LOG", value), "COLOAD_LOG", value, "error, warn, info, debug")) << value;
  }
}

TEST(ConfigMaxDecompressedBytes, AcceptsCountsAndSuffixes) {
  const std::pair<const char*, std::uint64_t> accepted[] = {
      {"1", 1},
      {"4096", 4096},
      {"007", 7},
      {"1K", 1024},
      {"512M", 512ull << 20},
      {"2G", 2ull << 30},
      {"16777216", 16ull << 20},
      {"18446744073709551615", UINT64_MAX},
      {"17179869183G", ((std::uint64_t{1} << 34) - 1) << 30},  // largest G count that fits
  };
  for (const auto& [text, bytes] : accepted) {
    auto config = config_with("COLOAD_MAX_DECOMPRESSED_BYTES", text);
    ASSERT_TRUE(Succeeds(config)) << text;
    EXPECT_EQ(config->max_decompressed_bytes, bytes) << text;
    EXPECT_EQ(config->read_options().max_decompressed_bytes, bytes) << text;
  }
}

TEST(ConfigMaxDecompressedBytes, RefusesMalformedCounts) {
  for (const char* value :
       {"K", "G", "-1", "+5", "1.5G", "1KB", "1k", "1m", "1T", "0x10", " 1", "1 ", "1_000", "1e9", "ten"}) {
    EXPECT_TRUE(Refused(config_with("COLOAD_MAX_DECOMPRESSED_BYTES", value), "COLOAD_MAX_DECOMPRESSED_BYTES", value,
                        "K, M or G"))
        << value;
  }
}

TEST(ConfigMaxDecompressedBytes, RefusesZero) {
  for (const char* value : {"0", "0K", "000G"}) {
    auto config = config_with("COLOAD_MAX_DECOMPRESSED_BYTES", value);
    ASSERT_TRUE(Refused(config, "COLOAD_MAX_DECOMPRESSED_BYTES", value, "above 0")) << value;
    EXPECT_EQ(config.error().location().value, std::optional<std::uint64_t>(0)) << value;
  }
}

TEST(ConfigMaxDecompressedBytes, RefusesOverflow) {
  for (const char* value : {"18446744073709551616", "99999999999999999999999", "17179869184G", "18014398509481984K"}) {
    auto config = config_with("COLOAD_MAX_DECOMPRESSED_BYTES", value);
    ASSERT_TRUE(Refused(config, "COLOAD_MAX_DECOMPRESSED_BYTES", value, "K, M or G")) << value;
    EXPECT_FALSE(config.error().location().value.has_value()) << value;
    EXPECT_NE(config.error().detail().find("overflows"), std::string::npos) << config.error().detail();
  }
}

TEST(ConfigHashCheck, AcceptsVerifyAndSkip) {
  auto skip = config_with("COLOAD_HASH_CHECK", "skip");
  ASSERT_TRUE(Succeeds(skip));
  EXPECT_EQ(skip->hash_check, StreamOptions::HashCheck::Skip);
  EXPECT_EQ(skip->stream_options().hash, StreamOptions::HashCheck::Skip);
  auto verify = config_with("COLOAD_HASH_CHECK", "verify");
  ASSERT_TRUE(Succeeds(verify));
  EXPECT_EQ(verify->hash_check, StreamOptions::HashCheck::Verify);
}

TEST(ConfigHashCheck, StreamOptionsCarryTheReadCap) {
  auto config = config_with("COLOAD_MAX_DECOMPRESSED_BYTES", "2M");
  ASSERT_TRUE(Succeeds(config));
  EXPECT_EQ(config->stream_options().read.max_decompressed_bytes, 2u << 20);
}

TEST(ConfigHashCheck, RefusesOtherValues) {
  for (const char* value : {"Verify", "SKIP", "0", "1", "off", "none", "fast"}) {
    EXPECT_TRUE(Refused(config_with("COLOAD_HASH_CHECK", value), "COLOAD_HASH_CHECK", value, "verify, skip")) << value;
  }
}

TEST(ConfigVerifyCache, DefaultsToTheUsersCacheDirectory) {
  auto home = Config::from_variables(lookup_in({{"HOME", "/home/ada"}}));
  ASSERT_TRUE(Succeeds(home));
  EXPECT_EQ(home->verified_cache, "/home/ada/.cache/coload/verified");
  EXPECT_EQ(home->stream_options().read.verified_cache, "/home/ada/.cache/coload/verified");
  auto xdg = Config::from_variables(lookup_in({{"HOME", "/home/ada"}, {"XDG_CACHE_HOME", "/var/cache/ada"}}));
  ASSERT_TRUE(Succeeds(xdg));
  EXPECT_EQ(xdg->verified_cache, "/var/cache/ada/coload/verified");
  // The XDG rules ignore relative paths.
  auto relative = Config::from_variables(lookup_in({{"HOME", "/home/ada"}, {"XDG_CACHE_HOME", "cache"}}));
  ASSERT_TRUE(Succeeds(relative));
  EXPECT_EQ(relative->verified_cache, "/home/ada/.cache/coload/verified");
  auto neither = Config::from_variables(lookup_in({{"HOME", "relative"}}));
  ASSERT_TRUE(Succeeds(neither));
  EXPECT_EQ(neither->verified_cache, "");
}

TEST(ConfigVerifyCache, AcceptsOffAndAbsoluteDirectories) {
  auto off = Config::from_variables(lookup_in({{"HOME", "/home/ada"}, {"COLOAD_VERIFY_CACHE", "off"}}));
  ASSERT_TRUE(Succeeds(off));
  EXPECT_EQ(off->verified_cache, "");
  auto chosen = Config::from_variables(lookup_in({{"HOME", "/home/ada"}, {"COLOAD_VERIFY_CACHE", "/srv/marks"}}));
  ASSERT_TRUE(Succeeds(chosen));
  EXPECT_EQ(chosen->verified_cache, "/srv/marks");
  EXPECT_EQ(chosen->stream_options().read.verified_cache, "/srv/marks");
}

TEST(ConfigVerifyCache, RefusesRelativePaths) {
  for (const char* value : {"marks", "./marks", "~/marks", "OFF", "0"}) {
    EXPECT_TRUE(Refused(config_with("COLOAD_VERIFY_CACHE", value), "COLOAD_VERIFY_CACHE", value,
                        "off, or an absolute directory"))
        << value;
  }
}

TEST(ConfigExtendedIsaCompat, AcceptsOneProcessor) {
  auto config = config_with("COLOAD_EXTENDED_ISA_COMPAT", "gfx1031");
  ASSERT_TRUE(Succeeds(config));
  EXPECT_EQ(config->extended_isa_compat, std::vector<std::string>{"gfx1031"});
  EXPECT_FALSE(config->extended_isa_compat_all);
}

TEST(ConfigExtendedIsaCompat, KeepsOrderAndDropsDuplicates) {
  auto config = config_with("COLOAD_EXTENDED_ISA_COMPAT", "gfx1031,gfx1011,gfx906,gfx1031");
  ASSERT_TRUE(Succeeds(config));
  EXPECT_EQ(config->extended_isa_compat, (std::vector<std::string>{"gfx1031", "gfx1011", "gfx906"}));
}

TEST(ConfigExtendedIsaCompat, StoresCanonicalNamesOfAliases) {
  const Processor* fiji = find_processor("fiji");
  ASSERT_NE(fiji, nullptr);
  ASSERT_EQ(fiji->name, "gfx803");
  auto config = config_with("COLOAD_EXTENDED_ISA_COMPAT", "fiji,gfx803");
  ASSERT_TRUE(Succeeds(config));
  EXPECT_EQ(config->extended_isa_compat, std::vector<std::string>{"gfx803"});
  EXPECT_TRUE(config->extended_isa_compat_for("gfx803"));
  EXPECT_TRUE(config->extended_isa_compat_for("fiji"));
}

TEST(ConfigExtendedIsaCompat, AllMeansEveryDevice) {
  auto config = config_with("COLOAD_EXTENDED_ISA_COMPAT", "all");
  ASSERT_TRUE(Succeeds(config));
  EXPECT_TRUE(config->extended_isa_compat_all);
  EXPECT_TRUE(config->extended_isa_compat.empty());
  for (const char* processor : {"gfx1031", "gfx900", "gfx942", "gfx1201"}) {
    EXPECT_TRUE(config->extended_isa_compat_for(processor)) << processor;
  }
}

TEST(ConfigExtendedIsaCompat, AnswersPerProcessor) {
  auto config = config_with("COLOAD_EXTENDED_ISA_COMPAT", "gfx1031,gfx1011");
  ASSERT_TRUE(Succeeds(config));
  EXPECT_TRUE(config->extended_isa_compat_for("gfx1031"));
  EXPECT_TRUE(config->extended_isa_compat_for("gfx1011"));
  EXPECT_TRUE(config->extended_isa_compat_for("gfx1031:xnack-"));  // a device's full target ID
  EXPECT_FALSE(config->extended_isa_compat_for("gfx1030"));
  EXPECT_FALSE(config->extended_isa_compat_for("gfx1010"));
  EXPECT_FALSE(config->extended_isa_compat_for(""));
  EXPECT_FALSE(config->extended_isa_compat_for("gfx9999"));
  EXPECT_FALSE(Config{}.extended_isa_compat_for("gfx1031"));
}

TEST(ConfigExtendedIsaCompat, RefusesEmptyEntries) {
  for (const char* value : {",", "gfx1031,", ",gfx1031", "gfx1031,,gfx1030"}) {
    auto config = config_with("COLOAD_EXTENDED_ISA_COMPAT", value);
    ASSERT_TRUE(Refused(config, "COLOAD_EXTENDED_ISA_COMPAT", value, "`all`")) << value;
    EXPECT_NE(config.error().detail().find("is empty"), std::string::npos) << config.error().detail();
  }
}

TEST(ConfigExtendedIsaCompat, RefusesUnknownProcessors) {
  for (const char* value : {"gfx9999", "gfx1031,gfx9999", "GFX1031", "gfx1031 ", "gfx1031, gfx1030", "ALL", "amdgcn"}) {
    auto config = config_with("COLOAD_EXTENDED_ISA_COMPAT", value);
    ASSERT_TRUE(Refused(config, "COLOAD_EXTENDED_ISA_COMPAT", value, "`all`")) << value;
    EXPECT_NE(config.error().detail().find("not a known processor"), std::string::npos) << config.error().detail();
  }
}

TEST(ConfigExtendedIsaCompat, RefusesGenericTargets) {
  for (const char* value : {"gfx10-3-generic", "gfx1031,gfx9-generic"}) {
    auto config = config_with("COLOAD_EXTENDED_ISA_COMPAT", value);
    ASSERT_TRUE(Refused(config, "COLOAD_EXTENDED_ISA_COMPAT", value, "`all`")) << value;
    EXPECT_NE(config.error().detail().find("generic"), std::string::npos) << config.error().detail();
  }
}

TEST(ConfigExtendedIsaCompat, RefusesAllAmongProcessorsAndTargetIds) {
  for (const char* value : {"all,gfx1031", "gfx1031,all", "all,all", "gfx1031:xnack-", "gfx90a:sramecc+"}) {
    EXPECT_TRUE(Refused(config_with("COLOAD_EXTENDED_ISA_COMPAT", value), "COLOAD_EXTENDED_ISA_COMPAT", value, "`all`"))
        << value;
  }
}

TEST(ConfigApply, OptsListedDevicesInAndNeverOut) {
  auto config = config_with("COLOAD_EXTENDED_ISA_COMPAT", "gfx1031");
  ASSERT_TRUE(Succeeds(config));
  auto listed = device_from_spec("gfx1031");
  ASSERT_TRUE(Succeeds(listed));
  config->apply(*listed);
  EXPECT_TRUE(listed->extended_isa_compat);

  DeviceOverrides opted_in;
  opted_in.extended_isa_compat = true;
  auto unlisted = device_from_spec("gfx1030", opted_in);
  ASSERT_TRUE(Succeeds(unlisted));
  config->apply(*unlisted);
  EXPECT_TRUE(unlisted->extended_isa_compat);  // the caller's opt-in stands

  auto plain = device_from_spec("gfx1030");
  ASSERT_TRUE(Succeeds(plain));
  config->apply(*plain);
  EXPECT_FALSE(plain->extended_isa_compat);
}

TEST(ConfigApply, AllOptsEveryDeviceIn) {
  auto config = config_with("COLOAD_EXTENDED_ISA_COMPAT", "all");
  ASSERT_TRUE(Succeeds(config));
  for (const char* spec : {"gfx900", "gfx90a:sramecc+:xnack-", "gfx1100"}) {
    auto device = device_from_spec(spec);
    ASSERT_TRUE(Succeeds(device)) << spec;
    config->apply(*device);
    EXPECT_TRUE(device->extended_isa_compat) << spec;
  }
}

TEST(ConfigOptions, BuildsTheOtherModulesOptions) {
  auto config = Config::from_variables(lookup_in({{"COLOAD_UNBUNDLER", "comgr"},
                                                  {"COLOAD_HOTSWAP", "1"},
                                                  {"COLOAD_LOG", "debug"},
                                                  {"COLOAD_MAX_DECOMPRESSED_BYTES", "64M"},
                                                  {"COLOAD_EXTENDED_ISA_COMPAT", "gfx1031"}}));
  ASSERT_TRUE(Succeeds(config));
  SelectOptions select = select_options(*config);
  EXPECT_EQ(select.unbundler, Unbundler::Comgr);
  EXPECT_TRUE(select.hotswap);
  // The built-in passes' pairs (same-ISA retarget), not the environment's.
  EXPECT_EQ(select.hotswap_allowlist.pairs().size(), HotswapRegistry::builtin().allowlist().pairs().size());
  EXPECT_EQ(config->read_options().max_decompressed_bytes, 64ull << 20);
  EXPECT_EQ(config->log_level, LogLevel::Debug);

  Config defaults;
  EXPECT_EQ(defaults.read_options().max_decompressed_bytes, ReadOptions{}.max_decompressed_bytes);
  EXPECT_EQ(select_options(defaults).unbundler, SelectOptions{}.unbundler);
  EXPECT_EQ(select_options(defaults).hotswap, SelectOptions{}.hotswap);
}

TEST(ConfigOptions, OneBadVariableFailsTheWholeConfig) {
  auto config = Config::from_variables(lookup_in({{"COLOAD_UNBUNDLER", "comgr"}, {"COLOAD_LOG", "loud"}}));
  EXPECT_TRUE(Refused(config, "COLOAD_LOG", "loud", "error, warn, info, debug"));
}

TEST(ConfigLog, NamesEveryLevel) {
  EXPECT_EQ(to_string(LogLevel::Error), "error");
  EXPECT_EQ(to_string(LogLevel::Warn), "warn");
  EXPECT_EQ(to_string(LogLevel::Info), "info");
  EXPECT_EQ(to_string(LogLevel::Debug), "debug");
}

// The only test that touches the real environment: each check runs in a child
// process (gtest's death-test fork), so the parent's environment and its
// process_config() stay untouched.
TEST(ProcessEnvironmentDeathTest, ReadsOnceAndKeepsTheFirstResult) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        for (const std::string& name : kVariables) unsetenv(name.c_str());
        auto empty = Config::from_environment();
        if (!empty || empty->log_level != LogLevel::Warn || empty->unbundler != Unbundler::Builtin) std::_Exit(2);
        setenv("COLOAD_UNBUNDLER", "comgr", 1);
        setenv("COLOAD_LOG", "debug", 1);
        setenv("COLOAD_MAX_DECOMPRESSED_BYTES", "1M", 1);
        setenv("COLOAD_EXTENDED_ISA_COMPAT", "gfx1031", 1);
        setenv("COLOAD_HOTSWAP", "1", 1);
        auto fresh = Config::from_environment();
        if (!fresh || fresh->unbundler != Unbundler::Comgr || fresh->log_level != LogLevel::Debug ||
            fresh->max_decompressed_bytes != (1u << 20) || !fresh->extended_isa_compat_for("gfx1031") ||
            !fresh->hotswap) {
          std::_Exit(3);
        }
        // The first process_config() call reads the environment; later calls,
        // from any thread, return that same object even after the environment changes.
        std::vector<const Expected<Config>*> seen(4, nullptr);
        std::vector<std::thread> threads;
        for (std::size_t i = 0; i < seen.size(); ++i) threads.emplace_back([&seen, i] { seen[i] = &process_config(); });
        for (std::thread& thread : threads) thread.join();
        const Expected<Config>& first = *seen[0];
        for (const auto* each : seen) {
          if (each != &first) std::_Exit(4);
        }
        if (!first || first->log_level != LogLevel::Debug) std::_Exit(5);
        setenv("COLOAD_LOG", "error", 1);
        if (&process_config() != &first || process_config()->log_level != LogLevel::Debug) std::_Exit(6);
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(
      {
        for (const std::string& name : kVariables) unsetenv(name.c_str());
        setenv("COLOAD_HOTSWAP", "yes", 1);
        const Expected<Config>& config = process_config();
        bool named = !config && config.error().kind() == ErrorKind::InvalidArgument &&
                     config.error().location().field == "COLOAD_HOTSWAP";
        std::_Exit(named ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace coload
