// The selector against toolchain-built fat binaries (tests/fixtures, select/):
// one cell per (device, overrides, options, fixture). Every expectation comes
// from a rule of docs/selection.md, labelled per cell as below; none is read
// back from the implementation.
//
//   1.2  an On/Off feature of the code object must equal the device's; Any
//        and Unsupported constrain nothing
//   3.2  generic: the device's generic family, code object v6, generic
//        version >= the member's minimum (1 for every member today)
//   4.4  tiers native > equivalent > generic > hotswap (hotswap only when the
//        others found nothing); inside a tier more exact features beat Any,
//        then a higher generic version, then file order
//   5    extended ISA compatibility (opt-in): gfx900 group -> gfx900, gfx902,
//        gfx906, gfx909, gfx90c; gfx1010 -> gfx1010-1013; gfx1030-1036 among
//        themselves; nothing else
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "coload/device.h"
#include "coload/fat_binary.h"
#include "coload/select.h"
#include "test_util.h"

namespace coload {
namespace {

using testing::Succeeds;

const std::filesystem::path kFixtures = COLOAD_FIXTURE_DIR;

/// "hipv4-amdgcn-amd-amdhsa--" + target: the entry IDs of every fixture here.
std::string amd(std::string_view target) { return "hipv4-amdgcn-amd-amdhsa--" + std::string(target); }

struct Cell {
  std::string name;                     ///< gtest parameter name
  std::string device;                   ///< spec for device_from_spec
  std::string fixture;                  ///< relative to COLOAD_FIXTURE_DIR, bundle 0
  std::optional<std::string> expected;  ///< selected entry ID; nullopt = nothing fits
  std::optional<Tier> tier;             ///< tier of the selected entry
  std::string rule;                     ///< where the expectation comes from
  bool extended_isa_compat = false;
  std::vector<unsigned> code_object_versions = {};  ///< empty = device default
  bool hotswap = false;
  std::vector<std::pair<std::string, std::string>> allowlist = {};  ///< (source, device)
};

void PrintTo(const Cell& cell, std::ostream* os) { *os << cell.name; }

// clang-format off
const std::vector<Cell> kCells = {
  // --- xnack / sramecc (1.2, 4.4 exact beats Any) --------------------------
  // gfx90a_variants: gfx90a, gfx90a:xnack+, gfx90a:xnack-, gfx90a:sramecc+:xnack-
  {.name = "xnack_on_picks_xnack_plus_over_any", .device = "gfx90a:sramecc-:xnack+",
   .fixture = "select/gfx90a_variants.hipfb", .expected = amd("gfx90a:xnack+"), .tier = Tier::Native,
   .rule = "1.2 + 4.4: xnack+ matches exactly, Any does not count, xnack- and sramecc+ refused"},
  {.name = "sramecc_off_xnack_off_must_not_take_sramecc_plus", .device = "gfx90a:sramecc-:xnack-",
   .fixture = "select/gfx90a_variants.hipfb", .expected = amd("gfx90a:xnack-"), .tier = Tier::Native,
   .rule = "1.2: sramecc+ entry refused on sramecc-; xnack- (1 exact) beats Any"},
  {.name = "sramecc_on_xnack_off_picks_both_exact", .device = "gfx90a:sramecc+:xnack-",
   .fixture = "select/gfx90a_variants.hipfb", .expected = amd("gfx90a:sramecc+:xnack-"), .tier = Tier::Native,
   .rule = "4.4: two exact features beat one (xnack-) and none (Any)"},
  {.name = "sramecc_on_xnack_on_skips_sramecc_plus_xnack_minus", .device = "gfx90a:sramecc+:xnack+",
   .fixture = "select/gfx90a_variants.hipfb", .expected = amd("gfx90a:xnack+"), .tier = Tier::Native,
   .rule = "1.2: sramecc+:xnack- refused for its xnack-; xnack+ beats Any"},
  // any_first: gfx90a (Any) precedes gfx90a:xnack- in file order
  {.name = "exact_beats_earlier_any", .device = "gfx90a:sramecc+:xnack-",
   .fixture = "select/any_first.hipfb", .expected = amd("gfx90a:xnack-"), .tier = Tier::Native,
   .rule = "4.4: exact beats Any regardless of file order (comgr would take the Any one)"},
  {.name = "any_taken_when_no_exact", .device = "gfx90a:sramecc+:xnack+",
   .fixture = "select/any_first.hipfb", .expected = amd("gfx90a"), .tier = Tier::Native,
   .rule = "1.2: Any runs in both modes; xnack- refused"},
  // Single xnack+ code object on an xnack- device, and the existing features bundle.
  {.name = "xnack_plus_only_on_xnack_off_device", .device = "gfx90a:sramecc+:xnack-",
   .fixture = "co/gfx90a_xnack+.co", .expected = std::nullopt, .tier = std::nullopt,
   .rule = "1.2: an xnack+ object does not run on an xnack- device"},
  {.name = "gfx908_sramecc_off_refuses_sramecc_plus", .device = "gfx908:sramecc-:xnack-",
   .fixture = "bundles/driver_features.hipfb", .expected = std::nullopt, .tier = std::nullopt,
   .rule = "1.2: gfx908:sramecc+:xnack- needs sramecc+"},
  {.name = "gfx942_sramecc_plus_entry_on_xnack_on_device", .device = "gfx942:sramecc+:xnack+",
   .fixture = "bundles/driver_features.hipfb", .expected = amd("gfx942:sramecc+"), .tier = Tier::Native,
   .rule = "1.2: xnack Any in gfx942:sramecc+ constrains nothing"},
  {.name = "gfx942_sramecc_off_refuses_sramecc_plus", .device = "gfx942:sramecc-:xnack-",
   .fixture = "bundles/driver_features.hipfb", .expected = std::nullopt, .tier = std::nullopt,
   .rule = "1.2"},

  // --- code object v4 bundle (cov4_variants: gfx90a, gfx90a:xnack-, gfx906, gfx1030) ---
  {.name = "cov4_xnack_off_device_without_v6", .device = "gfx90a:sramecc+:xnack-",
   .fixture = "select/cov4_variants.hipfb", .expected = amd("gfx90a:xnack-"), .tier = Tier::Native,
   .rule = "4.4 exact beats the earlier Any; v4 loads on a {4,5} runtime", .code_object_versions = {4, 5}},
  {.name = "cov4_gfx906_native", .device = "gfx906:sramecc+:xnack-",
   .fixture = "select/cov4_variants.hipfb", .expected = amd("gfx906"), .tier = Tier::Native, .rule = "4.4 tier 1"},
  {.name = "cov4_gfx1031_equivalent_gfx1030", .device = "gfx1031",
   .fixture = "select/cov4_variants.hipfb", .expected = amd("gfx1030"), .tier = Tier::Equivalent,
   .rule = "5: gfx1030 code on gfx1031 when enabled", .extended_isa_compat = true},
  {.name = "cov4_gfx900_never_takes_gfx906", .device = "gfx900:xnack-",
   .fixture = "select/cov4_variants.hipfb", .expected = std::nullopt, .tier = std::nullopt,
   .rule = "5: gfx906 only receives; its code is not accepted on gfx900", .extended_isa_compat = true},

  // --- generic (3.2) and native over generic (4.4) -------------------------
  // gfx9_mixed: gfx9-generic precedes gfx900 in file order
  {.name = "gfx900_native_beats_earlier_generic", .device = "gfx900:xnack-",
   .fixture = "select/gfx9_mixed.hipfb", .expected = amd("gfx900"), .tier = Tier::Native,
   .rule = "4.4: native beats generic"},
  {.name = "gfx906_takes_gfx9_generic", .device = "gfx906:sramecc+:xnack-",
   .fixture = "select/gfx9_mixed.hipfb", .expected = amd("gfx9-generic"), .tier = Tier::Generic,
   .rule = "3.2: gfx906 is a gfx9-generic member; gfx900 is another processor"},
  {.name = "gfx906_compat_equivalent_beats_generic", .device = "gfx906:sramecc+:xnack-",
   .fixture = "select/gfx9_mixed.hipfb", .expected = amd("gfx900"), .tier = Tier::Equivalent,
   .rule = "5 + 4.4: gfx900 code accepted on gfx906; tier 2 beats tier 3", .extended_isa_compat = true},
  {.name = "gfx908_has_no_generic", .device = "gfx908:sramecc+:xnack-",
   .fixture = "select/gfx9_mixed.hipfb", .expected = std::nullopt, .tier = std::nullopt,
   .rule = "3: gfx908 is in no generic family"},
  {.name = "gfx906_generic_fallback", .device = "gfx906:sramecc-:xnack+",
   .fixture = "select/gfx9_generic_only.hipfb", .expected = amd("gfx9-generic"), .tier = Tier::Generic,
   .rule = "3.2 (sramecc dropped: gfx9-generic has none; xnack Any)"},
  {.name = "gfx906_generic_needs_v6_runtime", .device = "gfx906:sramecc+:xnack-",
   .fixture = "select/gfx9_generic_only.hipfb", .expected = std::nullopt, .tier = std::nullopt,
   .rule = "3: generic code objects are v6; the device loads 4 and 5 only", .code_object_versions = {4, 5}},
  {.name = "gfx90a_not_in_gfx9_generic", .device = "gfx90a:sramecc+:xnack-",
   .fixture = "select/gfx9_generic_only.hipfb", .expected = std::nullopt, .tier = std::nullopt,
   .rule = "3: gfx90a is in no generic family"},
  // generic_only: gfx10-1, gfx10-3, gfx11, gfx12, gfx9-4, gfx9 generic (file order)
  {.name = "generic_only_gfx906", .device = "gfx906:sramecc+:xnack-",
   .fixture = "select/generic_only.hipfb", .expected = amd("gfx9-generic"), .tier = Tier::Generic, .rule = "3.2"},
  {.name = "generic_only_gfx942", .device = "gfx942:sramecc+:xnack-",
   .fixture = "select/generic_only.hipfb", .expected = amd("gfx9-4-generic"), .tier = Tier::Generic, .rule = "3.2"},
  {.name = "generic_only_gfx950", .device = "gfx950:sramecc-:xnack+",
   .fixture = "select/generic_only.hipfb", .expected = amd("gfx9-4-generic"), .tier = Tier::Generic, .rule = "3.2"},
  {.name = "generic_only_gfx1011", .device = "gfx1011:xnack-",
   .fixture = "select/generic_only.hipfb", .expected = amd("gfx10-1-generic"), .tier = Tier::Generic, .rule = "3.2"},
  {.name = "generic_only_gfx1031", .device = "gfx1031",
   .fixture = "select/generic_only.hipfb", .expected = amd("gfx10-3-generic"), .tier = Tier::Generic, .rule = "3.2"},
  {.name = "generic_only_gfx1036", .device = "gfx1036",
   .fixture = "select/generic_only.hipfb", .expected = amd("gfx10-3-generic"), .tier = Tier::Generic, .rule = "3.2"},
  {.name = "generic_only_gfx1151", .device = "gfx1151",
   .fixture = "select/generic_only.hipfb", .expected = amd("gfx11-generic"), .tier = Tier::Generic, .rule = "3.2"},
  {.name = "generic_only_gfx1201", .device = "gfx1201",
   .fixture = "select/generic_only.hipfb", .expected = amd("gfx12-generic"), .tier = Tier::Generic, .rule = "3.2"},
  {.name = "generic_only_gfx1250_other_family", .device = "gfx1250",
   .fixture = "select/generic_only.hipfb", .expected = std::nullopt, .tier = std::nullopt,
   .rule = "3.2: gfx1250's family is gfx12-5-generic, not gfx12-generic (do not copy CLR's minor <= rule)"},
  {.name = "generic_only_gfx1030_without_v6", .device = "gfx1030",
   .fixture = "select/generic_only.hipfb", .expected = std::nullopt, .tier = std::nullopt,
   .rule = "3: generic needs v6; the device loads 4 and 5 only", .code_object_versions = {4, 5}},
  {.name = "generic_only_gfx1100_without_v6", .device = "gfx1100",
   .fixture = "select/generic_only.hipfb", .expected = std::nullopt, .tier = std::nullopt,
   .rule = "3: generic needs v6", .code_object_versions = {4, 5}},

  // --- gfx12 / gfx1250 ------------------------------------------------------
  {.name = "gfx1250_refuses_gfx12_generic", .device = "gfx1250",
   .fixture = "select/gfx12_generic_only.hipfb", .expected = std::nullopt, .tier = std::nullopt,
   .rule = "3.2: different family"},
  {.name = "gfx1251_refuses_gfx12_generic", .device = "gfx1251",
   .fixture = "select/gfx12_generic_only.hipfb", .expected = std::nullopt, .tier = std::nullopt,
   .rule = "3.2: different family"},
  {.name = "gfx1200_takes_gfx12_generic", .device = "gfx1200",
   .fixture = "select/gfx12_generic_only.hipfb", .expected = amd("gfx12-generic"), .tier = Tier::Generic,
   .rule = "3.2"},
  {.name = "gfx1250_native_beside_gfx12_generic", .device = "gfx1250",
   .fixture = "select/gfx1250_gfx12generic.hipfb", .expected = amd("gfx1250"), .tier = Tier::Native,
   .rule = "4.4 tier 1; 2 note 4: xnack Any in e_flags accepted on an always-on device"},
  {.name = "gfx1201_skips_gfx1250_takes_generic", .device = "gfx1201",
   .fixture = "select/gfx1250_gfx12generic.hipfb", .expected = amd("gfx12-generic"), .tier = Tier::Generic,
   .rule = "3.2"},
  {.name = "gfx1251_takes_neither", .device = "gfx1251",
   .fixture = "select/gfx1250_gfx12generic.hipfb", .expected = std::nullopt, .tier = std::nullopt,
   .rule = "1.2 processor test; 3.2 family; 5 has no gfx125x group", .extended_isa_compat = true},

  // --- extended ISA compatibility (5) ---------------------------------------
  {.name = "gfx1031_without_compat_refuses_gfx1030", .device = "gfx1031",
   .fixture = "select/gfx1030_only.hipfb", .expected = std::nullopt, .tier = std::nullopt,
   .rule = "1.2 processor test; 5 is opt-in"},
  {.name = "gfx1031_with_compat_takes_gfx1030", .device = "gfx1031",
   .fixture = "select/gfx1030_only.hipfb", .expected = amd("gfx1030"), .tier = Tier::Equivalent,
   .rule = "5", .extended_isa_compat = true},
  {.name = "gfx1030_native_only_on_v6_runtime", .device = "gfx1030",
   .fixture = "select/gfx1030_only.hipfb", .expected = std::nullopt, .tier = std::nullopt,
   .rule = "Device::code_object_versions: the entry is v6, the runtime loads 4 and 5",
   .code_object_versions = {4, 5}},
  {.name = "gfx1100_with_compat_refuses_gfx1030", .device = "gfx1100",
   .fixture = "select/gfx1030_only.hipfb", .expected = std::nullopt, .tier = std::nullopt,
   .rule = "5: anything else same processor only", .extended_isa_compat = true},
  // gfx1030_gfx1031: gfx1030 precedes gfx1031 in file order
  {.name = "gfx1031_native_beats_earlier_equivalent", .device = "gfx1031",
   .fixture = "select/gfx1030_gfx1031.hipfb", .expected = amd("gfx1031"), .tier = Tier::Native,
   .rule = "4.4: native beats equivalent", .extended_isa_compat = true},
  {.name = "gfx1031_native_without_compat", .device = "gfx1031",
   .fixture = "select/gfx1030_gfx1031.hipfb", .expected = amd("gfx1031"), .tier = Tier::Native, .rule = "4.4"},
  {.name = "gfx1032_equivalents_tie_on_file_order", .device = "gfx1032",
   .fixture = "select/gfx1030_gfx1031.hipfb", .expected = amd("gfx1030"), .tier = Tier::Equivalent,
   .rule = "5 + 4.4: both equivalent, no features, no generic version: lower index", .extended_isa_compat = true},

  // --- hotswap (4.3, 4.4) ----------------------------------------------------
  // native_and_foreign: gfx1250 precedes gfx942 in file order
  {.name = "hotswap_never_skips_native", .device = "gfx942:sramecc+:xnack-",
   .fixture = "select/native_and_foreign.hipfb", .expected = amd("gfx942"), .tier = Tier::Native,
   .rule = "4.3 PR #7715 lesson + 4.4: an allowlisted source never beats a native entry",
   .hotswap = true, .allowlist = {{"gfx1250", "gfx942"}}},
  {.name = "hotswap_source_when_no_native", .device = "gfx950:sramecc+:xnack-",
   .fixture = "select/native_and_foreign.hipfb", .expected = amd("gfx1250"), .tier = Tier::Hotswap,
   .rule = "4.4 tier 4: gfx942 is not gfx950's processor nor a generic",
   .hotswap = true, .allowlist = {{"gfx1250", "gfx950"}}},
  {.name = "hotswap_gfx1250_native_on_gfx1250", .device = "gfx1250",
   .fixture = "select/native_and_foreign.hipfb", .expected = amd("gfx1250"), .tier = Tier::Native,
   .rule = "4.4 tier 1", .hotswap = true, .allowlist = {{"gfx1250", "gfx942"}}},
  {.name = "hotswap_only_source", .device = "gfx942:sramecc+:xnack-",
   .fixture = "select/gfx1250_only.hipfb", .expected = amd("gfx1250"), .tier = Tier::Hotswap,
   .rule = "4.4 tier 4", .hotswap = true, .allowlist = {{"gfx1250", "gfx942"}}},
  {.name = "hotswap_disabled", .device = "gfx942:sramecc+:xnack-",
   .fixture = "select/gfx1250_only.hipfb", .expected = std::nullopt, .tier = std::nullopt,
   .rule = "4.4 tier 4 needs hotswap on", .hotswap = false, .allowlist = {{"gfx1250", "gfx942"}}},
  {.name = "hotswap_empty_allowlist", .device = "gfx942:sramecc+:xnack-",
   .fixture = "select/gfx1250_only.hipfb", .expected = std::nullopt, .tier = std::nullopt,
   .rule = "4.4 tier 4 needs the pair allowlisted", .hotswap = true},
  {.name = "hotswap_pair_is_per_device", .device = "gfx950:sramecc+:xnack-",
   .fixture = "select/gfx1250_only.hipfb", .expected = std::nullopt, .tier = std::nullopt,
   .rule = "4.4 tier 4: (gfx1250, gfx950) not listed", .hotswap = true, .allowlist = {{"gfx1250", "gfx942"}}},

  // --- SPIR-V: never selected (no JIT) ---------------------------------------
  {.name = "spirv_beside_native", .device = "gfx90a:sramecc+:xnack-",
   .fixture = "select/spirv_gfx90a.hipfb", .expected = amd("gfx90a"), .tier = Tier::Native, .rule = "4.4 tier 1"},
  {.name = "spirv_not_selected_for_other_device", .device = "gfx1030",
   .fixture = "select/spirv_gfx90a.hipfb", .expected = std::nullopt, .tier = std::nullopt,
   .rule = "4.4 optional tier 5: coload has no JIT"},
  {.name = "spirv_only", .device = "gfx90a:sramecc+:xnack-",
   .fixture = "select/spirv_only.hipfb", .expected = std::nullopt, .tier = std::nullopt,
   .rule = "4.4 optional tier 5: coload has no JIT"},
};
// clang-format on

/// An opened fixture: the FatBinary owns the bytes the Bundle's entries view.
struct Opened {
  FatBinary binary;
  Bundle bundle;
};

::testing::AssertionResult open_fixture(const std::string& path, std::optional<Opened>& out) {
  auto binary = FatBinary::open((kFixtures / path).string());
  if (!binary) return ::testing::AssertionFailure() << binary.error().message();
  auto bundle = binary->read(0);
  if (!bundle) return ::testing::AssertionFailure() << bundle.error().message();
  out.emplace(Opened{std::move(*binary), std::move(*bundle)});
  return ::testing::AssertionSuccess();
}

DeviceOverrides overrides_of(const Cell& cell) {
  DeviceOverrides overrides;
  overrides.extended_isa_compat = cell.extended_isa_compat;
  if (!cell.code_object_versions.empty()) overrides.code_object_versions = cell.code_object_versions;
  return overrides;
}

::testing::AssertionResult options_of(const Cell& cell, SelectOptions& options) {
  options.hotswap = cell.hotswap;
  for (const auto& [source, device] : cell.allowlist) {
    auto added = options.hotswap_allowlist.add(source, device);
    if (!added) return ::testing::AssertionFailure() << "allowlist add: " << added.error().message();
  }
  return ::testing::AssertionSuccess();
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

/// Selects for a cell; the device, fixture and selection stay alive in `out`.
struct CellRun {
  std::optional<Opened> opened;
  std::optional<Device> device;
  Selection selection;
};

::testing::AssertionResult run_cell(const Cell& cell, CellRun& run) {
  auto device = device_from_spec(cell.device, overrides_of(cell));
  if (!device) return ::testing::AssertionFailure() << "device " << cell.device << ": " << device.error().message();
  run.device = std::move(*device);
  if (auto opened = open_fixture(cell.fixture, run.opened); !opened) return opened;
  SelectOptions options;
  if (auto built = options_of(cell, options); !built) return built;
  run.selection = select_entry(*run.device, run.opened->bundle.entries(), options);
  return ::testing::AssertionSuccess();
}

/// The SPIR-V fixtures exist only when clang-22 has its SPIR-V backend.
bool missing_spirv_fixture(const Cell& cell) {
  return cell.fixture.starts_with("select/spirv") && !std::filesystem::exists(kFixtures / cell.fixture);
}

class SelectMatrixCell : public ::testing::TestWithParam<Cell> {};

TEST_P(SelectMatrixCell, SelectsPerRule) {
  const Cell& cell = GetParam();
  SCOPED_TRACE("device " + cell.device + " on " + cell.fixture + " (rule " + cell.rule + ")");
  if (missing_spirv_fixture(cell)) GTEST_SKIP() << cell.fixture << " not built (no SPIR-V backend)";
  CellRun run;
  ASSERT_TRUE(run_cell(cell, run));
  const Selection& selection = run.selection;
  auto entries = run.opened->bundle.entries();

  // The report covers every entry, in entry order.
  EXPECT_EQ(selection.device, run.device->str());
  ASSERT_EQ(selection.candidates.size(), entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    EXPECT_EQ(selection.candidates[i].entry_index, i);
    EXPECT_EQ(selection.candidates[i].id, entries[i].id);
  }

  const Candidate* chosen = selection.chosen();
  if (cell.expected) {
    ASSERT_NE(chosen, nullptr) << "expected " << *cell.expected << ", nothing selected";
    EXPECT_EQ(chosen->id, *cell.expected);
    EXPECT_EQ(chosen->tier, cell.tier);
    EXPECT_EQ(chosen->verdict, Verdict::Selected);
  } else {
    EXPECT_EQ(chosen, nullptr) << "selected " << chosen->id;
  }

  // Consistency of the verdicts (4.4): one Selected at most, and it is the
  // chosen one; fitting entries carry a tier no better than the chosen one;
  // refused entries carry a reason and no tier; host and SPIR-V never win.
  std::size_t selected_count = 0;
  for (std::size_t i = 0; i < selection.candidates.size(); ++i) {
    const Candidate& c = selection.candidates[i];
    SCOPED_TRACE("candidate " + std::to_string(i) + " " + c.id + ": " + c.reason);
    switch (c.verdict) {
      case Verdict::Selected:
        ++selected_count;
        EXPECT_EQ(selection.selected, std::optional<std::size_t>(i));
        EXPECT_TRUE(c.tier.has_value());
        break;
      case Verdict::Compatible:
        ASSERT_TRUE(c.tier.has_value());
        ASSERT_NE(chosen, nullptr) << "a compatible entry but no selection";
        EXPECT_GE(static_cast<int>(*c.tier), static_cast<int>(*chosen->tier));
        break;
      case Verdict::Rejected:
        EXPECT_FALSE(c.tier.has_value());
        EXPECT_FALSE(c.reason.empty());
        break;
    }
    if (entries[i].is_host) EXPECT_EQ(c.verdict, Verdict::Rejected);
    if (c.id.find("amdgcnspirv") != std::string::npos) {
      EXPECT_TRUE(c.needs_jit);
      EXPECT_NE(c.verdict, Verdict::Selected);
    } else {
      EXPECT_FALSE(c.needs_jit);
    }
  }
  EXPECT_EQ(selected_count, cell.expected ? 1u : 0u);
}

INSTANTIATE_TEST_SUITE_P(SelectMatrix, SelectMatrixCell, ::testing::ValuesIn(kCells),
                         [](const ::testing::TestParamInfo<Cell>& info) { return info.param.name; });

// ---------------------------------------------------------------------------
// Individual cells, with every candidate's verdict and the reasons' key words.

const Cell& cell_named(std::string_view name) {
  for (const Cell& cell : kCells) {
    if (cell.name == name) return cell;
  }
  throw std::logic_error("no matrix cell " + std::string(name));
}

const Candidate* candidate(const Selection& selection, std::string_view id) {
  for (const Candidate& c : selection.candidates) {
    if (c.id == id) return &c;
  }
  return nullptr;
}

#define EXPECT_VERDICT(selection, id, verdict_, tier_)            \
  do {                                                            \
    const Candidate* c_ = candidate(selection, id);               \
    ASSERT_NE(c_, nullptr) << id;                                 \
    EXPECT_EQ(c_->verdict, verdict_) << id << ": " << c_->reason; \
    EXPECT_EQ(c_->tier, tier_) << id << ": " << c_->reason;       \
  } while (0)

TEST(SelectMatrixDetail, Gfx90aVariantsOnSrameccOffXnackOff) {
  CellRun run;
  ASSERT_TRUE(run_cell(cell_named("sramecc_off_xnack_off_must_not_take_sramecc_plus"), run));
  const Selection& s = run.selection;
  ASSERT_EQ(s.candidates.size(), 5u);
  EXPECT_EQ(s.device, "gfx90a:sramecc-:xnack-");
  EXPECT_EQ(s.candidates[0].verdict, Verdict::Rejected);  // host entry
  EXPECT_VERDICT(s, amd("gfx90a"), Verdict::Compatible, std::optional<Tier>(Tier::Native));
  EXPECT_VERDICT(s, amd("gfx90a:xnack+"), Verdict::Rejected, std::nullopt);
  EXPECT_VERDICT(s, amd("gfx90a:xnack-"), Verdict::Selected, std::optional<Tier>(Tier::Native));
  EXPECT_VERDICT(s, amd("gfx90a:sramecc+:xnack-"), Verdict::Rejected, std::nullopt);
  EXPECT_NE(lower(candidate(s, amd("gfx90a:xnack+"))->reason).find("xnack"), std::string::npos)
      << candidate(s, amd("gfx90a:xnack+"))->reason;
  EXPECT_NE(lower(candidate(s, amd("gfx90a:sramecc+:xnack-"))->reason).find("sramecc"), std::string::npos)
      << candidate(s, amd("gfx90a:sramecc+:xnack-"))->reason;
  // The ELF headers were read: every gfx90a entry is a v6 object (clang-22 default).
  for (std::size_t i = 1; i < s.candidates.size(); ++i) {
    ASSERT_TRUE(s.candidates[i].code_object.has_value()) << s.candidates[i].id;
    EXPECT_EQ(s.candidates[i].code_object->target.processor_name(), "gfx90a");
    EXPECT_EQ(s.candidates[i].code_object->code_object_version, 6u);
  }
}

TEST(SelectMatrixDetail, AnyFirstExactWins) {
  CellRun run;
  ASSERT_TRUE(run_cell(cell_named("exact_beats_earlier_any"), run));
  EXPECT_VERDICT(run.selection, amd("gfx90a"), Verdict::Compatible, std::optional<Tier>(Tier::Native));
  EXPECT_VERDICT(run.selection, amd("gfx90a:xnack-"), Verdict::Selected, std::optional<Tier>(Tier::Native));
}

TEST(SelectMatrixDetail, Cov4EntriesAreVersion4) {
  CellRun run;
  ASSERT_TRUE(run_cell(cell_named("cov4_xnack_off_device_without_v6"), run));
  const Selection& s = run.selection;
  for (const char* target : {"gfx90a", "gfx90a:xnack-"}) {
    const Candidate* c = candidate(s, amd(target));
    ASSERT_NE(c, nullptr) << target;
    ASSERT_TRUE(c->code_object.has_value()) << target;
    EXPECT_EQ(c->code_object->code_object_version, 4u) << target;
  }
  // Unrelated to the gfx90a device: rejected on the entry ID, ELF header unread.
  for (const char* target : {"gfx906", "gfx1030"}) {
    const Candidate* c = candidate(s, amd(target));
    ASSERT_NE(c, nullptr) << target;
    EXPECT_FALSE(c->code_object.has_value()) << target;
    auto read = read_code_object_target(run.opened->bundle.entries()[c->entry_index].bytes);
    ASSERT_TRUE(read) << target;
    EXPECT_EQ(read->code_object_version, 4u) << target;
  }
  EXPECT_VERDICT(s, amd("gfx90a"), Verdict::Compatible, std::optional<Tier>(Tier::Native));
  EXPECT_VERDICT(s, amd("gfx906"), Verdict::Rejected, std::nullopt);
  EXPECT_VERDICT(s, amd("gfx1030"), Verdict::Rejected, std::nullopt);
}

TEST(SelectMatrixDetail, Gfx906CompatRanksEquivalentOverGeneric) {
  CellRun run;
  ASSERT_TRUE(run_cell(cell_named("gfx906_compat_equivalent_beats_generic"), run));
  EXPECT_VERDICT(run.selection, amd("gfx900"), Verdict::Selected, std::optional<Tier>(Tier::Equivalent));
  EXPECT_VERDICT(run.selection, amd("gfx9-generic"), Verdict::Compatible, std::optional<Tier>(Tier::Generic));
  const Candidate* generic = candidate(run.selection, amd("gfx9-generic"));
  ASSERT_TRUE(generic->code_object.has_value());
  EXPECT_EQ(generic->code_object->code_object_version, 6u);
  EXPECT_EQ(generic->code_object->generic_version, 1u);
}

TEST(SelectMatrixDetail, Gfx1250RefusesGfx12GenericNamingTheFamily) {
  CellRun run;
  ASSERT_TRUE(run_cell(cell_named("gfx1250_refuses_gfx12_generic"), run));
  const Candidate* c = candidate(run.selection, amd("gfx12-generic"));
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->verdict, Verdict::Rejected);
  EXPECT_NE(lower(c->reason).find("family"), std::string::npos) << c->reason;
}

TEST(SelectMatrixDetail, GenericRefusedOnRuntimeWithoutV6NamesTheVersion) {
  CellRun run;
  ASSERT_TRUE(run_cell(cell_named("gfx906_generic_needs_v6_runtime"), run));
  const Candidate* c = candidate(run.selection, amd("gfx9-generic"));
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->verdict, Verdict::Rejected);
  EXPECT_NE(lower(c->reason).find("version"), std::string::npos) << c->reason;
  EXPECT_NE(c->reason.find('6'), std::string::npos) << c->reason;
}

TEST(SelectMatrixDetail, Gfx1031NativeAndEquivalent) {
  CellRun run;
  ASSERT_TRUE(run_cell(cell_named("gfx1031_native_beats_earlier_equivalent"), run));
  EXPECT_VERDICT(run.selection, amd("gfx1030"), Verdict::Compatible, std::optional<Tier>(Tier::Equivalent));
  EXPECT_VERDICT(run.selection, amd("gfx1031"), Verdict::Selected, std::optional<Tier>(Tier::Native));

  CellRun off;
  ASSERT_TRUE(run_cell(cell_named("gfx1031_native_without_compat"), off));
  EXPECT_VERDICT(off.selection, amd("gfx1030"), Verdict::Rejected, std::nullopt);
  EXPECT_VERDICT(off.selection, amd("gfx1031"), Verdict::Selected, std::optional<Tier>(Tier::Native));
}

TEST(SelectMatrixDetail, HotswapSourceIsNeverChosenOverNative) {
  CellRun run;
  ASSERT_TRUE(run_cell(cell_named("hotswap_never_skips_native"), run));
  EXPECT_VERDICT(run.selection, amd("gfx942"), Verdict::Selected, std::optional<Tier>(Tier::Native));
  const Candidate* source = candidate(run.selection, amd("gfx1250"));
  ASSERT_NE(source, nullptr);
  EXPECT_NE(source->verdict, Verdict::Selected);
  if (source->tier) EXPECT_EQ(*source->tier, Tier::Hotswap);
}

TEST(SelectMatrixDetail, HotswapDisabledReportsTheSource) {
  CellRun run;
  ASSERT_TRUE(run_cell(cell_named("hotswap_disabled"), run));
  const Candidate* source = candidate(run.selection, amd("gfx1250"));
  ASSERT_NE(source, nullptr);
  EXPECT_EQ(source->verdict, Verdict::Rejected);
  EXPECT_NE(lower(source->reason).find("hotswap"), std::string::npos) << source->reason;
}

TEST(SelectMatrixDetail, SpirvNeedsJitAndIsNotSelected) {
  if (missing_spirv_fixture(cell_named("spirv_only"))) GTEST_SKIP() << "no SPIR-V fixtures";
  CellRun run;
  ASSERT_TRUE(run_cell(cell_named("spirv_beside_native"), run));
  const Candidate* spirv = candidate(run.selection, "hipv4-spirv64-amd-amdhsa--amdgcnspirv");
  ASSERT_NE(spirv, nullptr);
  EXPECT_TRUE(spirv->needs_jit);
  EXPECT_NE(spirv->verdict, Verdict::Selected);
  EXPECT_VERDICT(run.selection, amd("gfx90a"), Verdict::Selected, std::optional<Tier>(Tier::Native));

  CellRun only;
  ASSERT_TRUE(run_cell(cell_named("spirv_only"), only));
  spirv = candidate(only.selection, "hip-spirv64-amd-amdhsa--amdgcnspirv");
  ASSERT_NE(spirv, nullptr);
  EXPECT_TRUE(spirv->needs_jit);
  EXPECT_EQ(only.selection.chosen(), nullptr);
}

TEST(SelectMatrixDetail, NoFitErrorNamesDeviceAndNearestMiss) {
  CellRun run;
  ASSERT_TRUE(run_cell(cell_named("xnack_plus_only_on_xnack_off_device"), run));
  ASSERT_EQ(run.selection.chosen(), nullptr);
  const Candidate* c = candidate(run.selection, amd("gfx90a:xnack+"));
  ASSERT_NE(c, nullptr);
  EXPECT_NE(lower(c->reason).find("xnack"), std::string::npos) << c->reason;

  Error error = no_fit_error(*run.device, run.selection);
  EXPECT_EQ(error.kind(), ErrorKind::NotFound) << error.message();
  EXPECT_NE(error.message().find("gfx90a:sramecc+:xnack-"), std::string::npos) << error.message();
  EXPECT_NE(error.message().find("gfx90a:xnack+ present; device runs with xnack-"), std::string::npos)
      << error.message();
}

}  // namespace
}  // namespace coload
