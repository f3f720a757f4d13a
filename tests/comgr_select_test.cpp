// coload_select (the C API, coload/coload.h) against the comgr it mirrors:
// amd_comgr_lookup_code_object of the system's comgr (Debian's ROCm 5.2.3,
// interface 2.4) on every single plain bundle fixture, for every ISA comgr
// lists and every feature mode ROCr names such a device with. Each
// disagreement must be one of the documented rules of docs/comgr.md
// ("coload_select"); CCOBs, which comgr refuses, get coload's answer for
// their plain twin's entry.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "coload/bundle.h"
#include "coload/coload.h"
#include "coload/target.h"
#include "select/comgr_lookup.h"
#include "support/bundle_writer.h"
#include "test_util.h"

namespace coload {
namespace {

using detail::Comgr;
using detail::ComgrHit;
using detail::ComgrInput;
using testing::Bytes;

const std::filesystem::path kFixtures = COLOAD_FIXTURE_DIR;

Bytes fixture(const std::string& path) { return testing::read_file((kFixtures / path).string()); }

/// Fixtures that are one bundle of a format starting with `format`
/// (bundles.tsv rows whose file is the bundle itself; docs/fixtures.md).
std::vector<std::string> single_bundles(std::string_view format) {
  std::ifstream in(kFixtures / "bundles.tsv");
  std::vector<std::string> files;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> fields;
    std::stringstream split(line);
    for (std::string field; std::getline(split, field, '\t');) fields.push_back(field);
    if (fields.size() >= 4 && fields[0][0] != '#' && fields[0] == fields[2] && fields[3].starts_with(format))
      files.push_back(fields[0]);
  }
  return files;
}

/// Every ISA comgr lists, bare as it lists them, then with every On/Off
/// mode of the features its processor has, as ROCr names such a device
/// ("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-").
std::vector<std::string> isas_of(const Comgr& comgr) {
  std::vector<std::string> isas;
  for (const std::string& name : comgr.isa_names()) {
    isas.push_back(name);
    const Processor* processor = find_processor(detail::isa_processor(name));
    if (!processor) continue;
    std::vector<std::string> modes{""};
    auto vary = [&](std::string_view feature) {
      std::vector<std::string> more;
      for (const std::string& mode : modes)
        for (char sign : {'+', '-'}) more.push_back(mode + ":" + std::string(feature) + sign);
      modes = std::move(more);
    };
    if (processor->sramecc) vary("sramecc");
    if (processor->xnack == XnackSupport::OnOff) vary("xnack");
    if (modes.size() > 1)
      for (const std::string& mode : modes) isas.push_back(name + mode);
  }
  return isas;
}

/// One ISA's answer from coload_select; nullopt when nothing fits.
struct Answer {
  std::string entry_id;
  coload_tier tier = COLOAD_TIER_NATIVE;
  std::uint64_t offset = 0, size = 0;
};

std::optional<Answer> coload_answer(const Bytes& bytes, const std::string& isa) {
  coload_select_options options;
  std::memset(&options, 0, sizeof options);
  options.struct_size = sizeof options;
  options.ignore_environment = 1;  // builtin unbundler, no equivalence, no hotswap
  const char* name = isa.c_str();
  coload_selection* selection = nullptr;
  coload_status status = coload_select(bytes.data(), bytes.size(), &name, 1, &options, &selection);
  EXPECT_EQ(status, COLOAD_OK) << isa << ": " << coload_last_error_message();
  if (status != COLOAD_OK) return std::nullopt;
  const coload_selected& result = *selection->results[0];
  std::optional<Answer> answer;
  if (result.status == COLOAD_OK) {
    answer = Answer{result.entry_id, result.tier, result.offset, result.size};
  } else {
    EXPECT_EQ(result.status, COLOAD_ERROR_NOT_FOUND) << isa << ": " << result.message;
  }
  coload_selection_free(selection);
  return answer;
}

/// The entry of `table` at `hit`, as comgr reports it (offsets from the bundle start).
const BundleEntry* entry_at(const PlainBundle& table, const ComgrHit& hit) {
  for (const BundleEntry& entry : table.entries)
    if (entry.offset == hit.offset && entry.size == hit.size) return &entry;
  return nullptr;
}

TargetId target_of(std::string_view entry_id) {
  auto id = EntryId::parse(entry_id);
  EXPECT_TRUE(id && id->target) << entry_id;
  return id && id->target ? *id->target : TargetId{};
}

/// The documented rule (docs/comgr.md, "coload_select") a disagreement
/// follows, or "" when it follows none.
std::string rule_for(const std::string& isa, const std::optional<Answer>& ours, const BundleEntry* theirs) {
  auto device = device_target_from_runtime(isa);
  if (!device) return "";
  // Generic tier: comgr 5.2.3 lists no generic target and a device's query
  // never returns one; coload falls back to the device's generic family.
  if (ours && !theirs && ours->tier == COLOAD_TIER_GENERIC) {
    TargetId code = target_of(ours->entry_id);
    return code.processor && code.processor->name == device->processor->generic_family ? "generic tier" : "";
  }
  // Exact features beat Any: comgr takes the first compatible entry in file
  // order, coload the one whose xnack/sramecc equal the device's.
  if (ours && theirs && ours->tier == COLOAD_TIER_NATIVE && theirs->offset < ours->offset) {
    TargetId mine = target_of(ours->entry_id), comgrs = target_of(theirs->id);
    const bool looser = (comgrs.xnack == FeatureState::Any && mine.xnack != FeatureState::Any) ||
                        (comgrs.sramecc == FeatureState::Any && mine.sramecc != FeatureState::Any);
    if (mine.processor == device->processor && comgrs.processor == device->processor && looser &&
        feature_mismatch(mine, *device).empty() && feature_mismatch(comgrs, *device).empty())
      return "exact features beat Any";
  }
  return "";
}

#define REQUIRE_COMGR_5_2_3(name)                                                                          \
  auto loaded = Comgr::load();                                                                             \
  if (!loaded) GTEST_SKIP() << detail::kComgrLibrary << " cannot be loaded: " << loaded.error().message(); \
  const Comgr* name = *loaded;                                                                             \
  if (name->version() != "2.4") GTEST_SKIP() << "comgr interface " << name->version() << ", not 2.4 (5.2.3)";

TEST(ComgrSelectDifferential, AgreesWithComgrOnEveryPlainBundleForEveryIsaItKnows) {
  REQUIRE_COMGR_5_2_3(comgr);
  const std::vector<std::string> isas = isas_of(*comgr);
  EXPECT_EQ(comgr->isa_names().size(), 33u);
  std::size_t pairs = 0, agreed = 0, both_chose = 0;
  std::size_t cov4_pairs = 0, cov4_agreed = 0;     // the code object v4 bundles (driver_cov4, cov4_variants)
  std::map<std::string, std::size_t> differences;  // rule → pairs
  const std::vector<std::string> files = single_bundles("plain");
  ASSERT_GE(files.size(), 25u);
  for (const std::string& file : files) {
    Bytes bytes = fixture(file);
    auto table = parse_plain_bundle(bytes);
    ASSERT_TRUE(testing::Succeeds(table)) << file;
    const bool cov4 = file.find("cov4") != std::string::npos;
    for (const std::string& isa : isas) {
      SCOPED_TRACE(file + " for " + isa);
      ++pairs;
      cov4_pairs += cov4;
      auto hits = comgr->lookup(bytes, ComgrInput::Bundle, std::vector<std::string>{isa});
      ASSERT_TRUE(testing::Succeeds(hits));
      const std::optional<ComgrHit> hit = hits->front();
      const BundleEntry* theirs = hit ? entry_at(*table, *hit) : nullptr;
      ASSERT_EQ(theirs != nullptr, hit.has_value()) << "comgr's hit is no entry of the table";
      std::optional<Answer> ours = coload_answer(bytes, isa);
      if (ours.has_value() == hit.has_value() && (!ours || (ours->offset == hit->offset && ours->size == hit->size))) {
        ++agreed;
        cov4_agreed += cov4;
        if (ours) {
          ++both_chose;
          EXPECT_EQ(ours->tier, COLOAD_TIER_NATIVE);
          EXPECT_EQ(ours->entry_id, theirs->id);
        }
        continue;
      }
      const std::string rule = rule_for(isa, ours, theirs);
      EXPECT_FALSE(rule.empty()) << "coload chose " << (ours ? ours->entry_id : "nothing") << ", comgr "
                                 << (theirs ? std::string(theirs->id) : "nothing") << ": no documented rule";
      ++differences[rule];
    }
  }
  std::cout << "coload_select against comgr " << comgr->version() << ": " << files.size() << " plain bundles x "
            << isas.size() << " ISAs = " << pairs << " pairs; " << agreed << " agree (" << both_chose
            << " with an entry), of which code object v4 bundles " << cov4_agreed << " of " << cov4_pairs
            << "; differences:";
  for (const auto& [rule, count] : differences) std::cout << " " << rule << " " << count << ";";
  std::cout << "\n";
  EXPECT_EQ(pairs, agreed + differences["generic tier"] + differences["exact features beat Any"]);
  EXPECT_GE(differences["generic tier"], 1u);             // bundles/driver_generic.hipfb, select/gfx9_*
  EXPECT_GE(differences["exact features beat Any"], 1u);  // select/any_first.hipfb, cov4_variants.hipfb
  EXPECT_GE(both_chose, 70u);
  EXPECT_EQ(cov4_pairs, 2 * isas.size());
}

TEST(ComgrSelectDifferential, AnswersCcobsComgrRefusesAsComgrAnswersTheirPlainTwin) {
  REQUIRE_COMGR_5_2_3(comgr);
  // make_ccob of bundles/bundler_plain.hipfb (docs/fixtures.md): decoded,
  // the same bytes, so comgr's answer on the plain bundle is the reference.
  Bytes plain = fixture("bundles/bundler_plain.hipfb");
  const std::vector<std::string> isas = isas_of(*comgr);
  std::size_t answered = 0;
  for (const std::string& file : single_bundles("ccob")) {
    if (!file.starts_with("compressed/handmade_v") || file.find("features") != std::string::npos) continue;
    SCOPED_TRACE(file);
    Bytes ccob = fixture(file);
    auto refused = comgr->lookup(ccob, ComgrInput::Bundle, std::vector<std::string>{isas.front()});
    EXPECT_TRUE(testing::FailsWith(refused, ErrorKind::InvalidArgument));
    for (const std::string& isa : isas) {
      auto hits = comgr->lookup(plain, ComgrInput::Bundle, std::vector<std::string>{isa});
      ASSERT_TRUE(testing::Succeeds(hits)) << isa;
      std::optional<Answer> ours = coload_answer(ccob, isa);
      ASSERT_EQ(ours.has_value(), hits->front().has_value()) << isa;
      if (!ours) continue;
      EXPECT_EQ(ours->offset, hits->front()->offset) << isa;
      EXPECT_EQ(ours->size, hits->front()->size) << isa;
      ++answered;
    }
  }
  EXPECT_GE(answered, 6u * 5u);  // six CCOBs; gfx1030 and gfx90a's modes
}

}  // namespace
}  // namespace coload
