// The Unbundler::Comgr path and its wrapper, against the comgr the system has
// (Debian's 5.2.3, interface 2.4; facts in docs/comgr.md). The differential
// test runs coload's builtin selector and comgr's amd_comgr_lookup_code_object
// on code object v4 bundles: they must choose the same entry except in the
// named cases where coload differs on purpose.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>
#include <thread>

#include "coload/fat_binary.h"
#include "coload/select.h"
#include "select/comgr_lookup.h"
#include "select/comgr_select.h"
#include "support/bundle_writer.h"
#include "test_util.h"

namespace coload {
namespace {

using detail::Comgr;
using detail::ComgrHit;
using detail::ComgrInput;
using testing::Bytes;
using testing::FailsWith;
using testing::Succeeds;

const std::filesystem::path kFixtures = COLOAD_FIXTURE_DIR;
constexpr std::string_view kDev = "hipv4-amdgcn-amd-amdhsa--";
constexpr std::string_view kIsa = "amdgcn-amd-amdhsa--";
constexpr std::string_view kHost = "host-x86_64-unknown-linux-gnu-";

Bytes fixture(const std::string& path) { return testing::read_file((kFixtures / path).string()); }

// comgr as select_in_bundle loads it; null (and a skip) when it is not installed.
const Comgr* system_comgr() {
  auto comgr = Comgr::load();
  if (!comgr) {
    EXPECT_EQ(comgr.error().kind(), ErrorKind::Io) << comgr.error().message();
    return nullptr;
  }
  return *comgr;
}

#define REQUIRE_COMGR(name)                                                                                          \
  const Comgr* name = system_comgr();                                                                                \
  if (!name) {                                                                                                       \
    GTEST_SKIP() << detail::kComgrLibrary                                                                            \
                 << " cannot be loaded (package libamd-comgr2 not installed?): " << Comgr::load().error().message(); \
  }

// The facts of docs/comgr.md were measured on comgr 5.2.3, interface 2.4.
#define REQUIRE_COMGR_5_2_3(name)                                                                               \
  REQUIRE_COMGR(name);                                                                                          \
  if (name->version() != "2.4") {                                                                               \
    GTEST_SKIP() << "comgr interface " << name->version() << ": these facts were measured on 2.4 (ROCm 5.2.3)"; \
  }

// A bundle read the way select_in_bundle's callers read one, owning its bytes.
struct OpenBundle {
  std::string name;
  Bytes bytes;
  std::unique_ptr<FatBinary> binary;
  std::unique_ptr<Bundle> bundle;
};

std::unique_ptr<OpenBundle> open_bundle(std::string name, Bytes bytes) {
  auto open = std::make_unique<OpenBundle>();
  open->name = std::move(name);
  open->bytes = std::move(bytes);
  auto binary = FatBinary::from_memory(open->bytes, open->name);
  EXPECT_TRUE(Succeeds(binary)) << open->name;
  if (!binary) return nullptr;
  open->binary = std::make_unique<FatBinary>(std::move(*binary));
  auto bundle = open->binary->read(0);
  EXPECT_TRUE(Succeeds(bundle)) << open->name;
  if (!bundle) return nullptr;
  open->bundle = std::make_unique<Bundle>(std::move(*bundle));
  return open;
}

Device device(std::string_view spec) {
  auto result = device_from_spec(spec);
  EXPECT_TRUE(Succeeds(result)) << spec;
  return *result;
}

SelectOptions with(Unbundler unbundler) {
  SelectOptions options;
  options.unbundler = unbundler;
  return options;
}

// A real code object v4 (clang-22 -mcode-object-version=4, gfx90a) with its
// e_flags rewritten: the selector and comgr read only the ELF header.
Bytes cov4_object(std::uint32_t e_flags) {
  Bytes elf = fixture("co/gfx90a-cov4.co");
  EXPECT_EQ(static_cast<int>(elf.at(8)), 2) << "co/gfx90a-cov4.co is not code object v4";
  testing::store_le(std::span(elf).subspan(48, 4), e_flags, 4);
  return elf;
}

constexpr std::uint32_t kGfx90a = 0x53f, kGfx90aXnackOff = 0x63f, kGfx90aSrameccOnXnackOff = 0xe3f,
                        kGfx908SrameccOnXnackOff = 0xe30, kGfx906 = 0x52f, kGfx906XnackOff = 0x62f, kGfx1030 = 0x36;

Bytes bundle_of(std::vector<testing::Entry> devices) {
  devices.insert(devices.begin(), testing::Entry{std::string(kHost), {}});
  return testing::write_plain_bundle(devices, 4096);
}

std::string dev(std::string_view target) { return std::string(kDev) + std::string(target); }

// select/cov4_variants.hipfb (tests/fixtures/build_fixtures.sh), or the same
// layout from rewritten headers when the fixture is not built.
Bytes cov4_variants() {
  if (std::filesystem::exists(kFixtures / "select/cov4_variants.hipfb")) return fixture("select/cov4_variants.hipfb");
  return bundle_of({{dev("gfx90a"), cov4_object(kGfx90a)},
                    {dev("gfx90a:xnack-"), cov4_object(kGfx90aXnackOff)},
                    {dev("gfx906"), cov4_object(kGfx906)},
                    {dev("gfx1030"), cov4_object(kGfx1030)}});
}

std::optional<std::string> chosen_id(const Selection& selection) {
  if (!selection.chosen()) return std::nullopt;
  return selection.chosen()->id;
}

std::string show(const std::optional<std::string>& id) { return id ? *id : "nothing"; }

// ---------------------------------------------------------------------------
// Without comgr.

TEST(ComgrPath, CompressedBundleIsUnsupportedMethodWithoutAskingComgr) {
  auto open = open_bundle("driver_v3", fixture("compressed/driver_v3.hipfb"));
  ASSERT_TRUE(open);
  ASSERT_EQ(open->bundle->info().format, BundleFormat::Compressed);
  auto selection = select_in_bundle(device("gfx90a:sramecc+:xnack-"), *open->bundle, with(Unbundler::Comgr));
  ASSERT_TRUE(FailsWith(selection, ErrorKind::UnsupportedMethod));
  EXPECT_NE(selection.error().message().find("cannot read compressed"), std::string::npos)
      << selection.error().message();
  EXPECT_NE(selection.error().message().find("COLOAD_UNBUNDLER=builtin"), std::string::npos);
  // Even with no comgr at all.
  EXPECT_TRUE(FailsWith(detail::select_with_comgr(device("gfx90a:sramecc+:xnack-"), *open->bundle,
                                                  with(Unbundler::Comgr), "/nonexistent/libamd_comgr.so.2"),
                        ErrorKind::UnsupportedMethod));
}

TEST(ComgrPath, MissingLibraryIsAnIoErrorNamingThePath) {
  auto comgr = Comgr::load("/nonexistent/libamd_comgr.so.2");
  ASSERT_TRUE(FailsWith(comgr, ErrorKind::Io));
  EXPECT_NE(comgr.error().message().find("/nonexistent/libamd_comgr.so.2"), std::string::npos);
  // Not remembered: the same answer again, no crash.
  EXPECT_TRUE(FailsWith(Comgr::load("/nonexistent/libamd_comgr.so.2"), ErrorKind::Io));
  EXPECT_TRUE(FailsWith(Comgr::load("libamd_comgr_does_not_exist.so.9"), ErrorKind::Io));

  auto open = open_bundle("driver_cov4", fixture("bundles/driver_cov4.hipfb"));
  ASSERT_TRUE(open);
  auto selection = detail::select_with_comgr(device("gfx90a:sramecc+:xnack-"), *open->bundle, with(Unbundler::Comgr),
                                             "/nonexistent/libamd_comgr.so.2");
  ASSERT_TRUE(FailsWith(selection, ErrorKind::Io));
  EXPECT_NE(selection.error().message().find("bundle 0"), std::string::npos) << selection.error().message();
}

TEST(ComgrPath, ALibraryThatIsNotComgrIsUnsupportedVersion) {
  auto comgr = Comgr::load("libz.so.1");
  ASSERT_TRUE(FailsWith(comgr, ErrorKind::UnsupportedVersion));
  EXPECT_NE(comgr.error().message().find("amd_comgr_lookup_code_object"), std::string::npos) << comgr.error().message();
}

TEST(ComgrPath, GenericQueryKeepsOnlyTheFeaturesTheGenericHas) {
  EXPECT_EQ(detail::generic_isa_name(device("gfx906:sramecc+:xnack-")), "amdgcn-amd-amdhsa--gfx9-generic:xnack-");
  EXPECT_EQ(detail::generic_isa_name(device("gfx900:xnack+")), "amdgcn-amd-amdhsa--gfx9-generic:xnack+");
  EXPECT_EQ(detail::generic_isa_name(device("gfx942:sramecc+:xnack-")),
            "amdgcn-amd-amdhsa--gfx9-4-generic:sramecc+:xnack-");
  EXPECT_EQ(detail::generic_isa_name(device("gfx1031")), "amdgcn-amd-amdhsa--gfx10-3-generic");
  EXPECT_EQ(detail::generic_isa_name(device("gfx90a:sramecc+:xnack-")), "");
  EXPECT_EQ(detail::generic_isa_name(device("gfx908:sramecc+:xnack-")), "");
}

TEST(ComgrPath, IsaProcessor) {
  EXPECT_EQ(detail::isa_processor("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"), "gfx90a");
  EXPECT_EQ(detail::isa_processor("amdgcn-amd-amdhsa--gfx10-3-generic"), "gfx10-3-generic");
  EXPECT_EQ(detail::isa_processor("amdgcn-amd-amdhsa--"), "");
}

// ---------------------------------------------------------------------------
// The wrapper.

TEST(ComgrWrapper, LoadsOnceAndListsItsIsas) {
  REQUIRE_COMGR(comgr);
  auto again = Comgr::load(detail::kComgrLibrary);
  ASSERT_TRUE(Succeeds(again));
  EXPECT_EQ(*again, comgr);
  EXPECT_EQ(comgr->path(), detail::kComgrLibrary);
  EXPECT_FALSE(comgr->version().empty());
  EXPECT_TRUE(comgr->knows_processor("gfx90a"));
  EXPECT_TRUE(comgr->knows_processor("gfx1030"));
  EXPECT_FALSE(comgr->knows_processor("gfx90"));
  EXPECT_FALSE(comgr->knows_processor(""));
}

TEST(ComgrWrapper, LoadAndLookupFromManyThreads) {
  REQUIRE_COMGR(comgr);
  Bytes bytes = fixture("bundles/driver_cov4.hipfb");
  std::vector<std::string> queries{std::string(kIsa) + "gfx90a:sramecc+:xnack-"};
  std::vector<const Comgr*> loaded(8, nullptr);
  std::vector<std::optional<ComgrHit>> found(loaded.size());
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < loaded.size(); ++t) {
    threads.emplace_back([&, t] {
      auto mine = Comgr::load(detail::kComgrLibrary);
      if (!mine) return;
      loaded[t] = *mine;
      for (int round = 0; round < 20; ++round) {
        auto hits = (*mine)->lookup(bytes, ComgrInput::Bundle, queries);
        if (!hits) return;
        found[t] = (*hits)[0];
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (std::size_t t = 0; t < loaded.size(); ++t) {
    EXPECT_EQ(loaded[t], comgr) << t;
    EXPECT_EQ(found[t], (ComgrHit{.offset = 0x3000, .size = 0x1e60})) << t;
  }
}

TEST(ComgrWrapper, Comgr523KnowsNoProcessorAfterGfx1036AndNoGeneric) {
  REQUIRE_COMGR_5_2_3(comgr);
  EXPECT_EQ(comgr->isa_names().size(), 33u);
  EXPECT_EQ(comgr->isa_names().front(), "amdgcn-amd-amdhsa--gfx600");
  EXPECT_EQ(comgr->isa_names().back(), "amdgcn-amd-amdhsa--gfx1036");
  for (std::string_view unknown : {"gfx940", "gfx942", "gfx950", "gfx1100", "gfx1200", "gfx1250", "gfx9-generic",
                                   "gfx10-3-generic", "gfx11-generic"}) {
    EXPECT_FALSE(comgr->knows_processor(unknown)) << unknown;
  }
}

TEST(ComgrWrapper, LookupAnswersEveryQueryOnItsOwn) {
  REQUIRE_COMGR(comgr);
  Bytes bytes = fixture("bundles/driver_cov4.hipfb");  // host, gfx1030 at 0x1000, gfx90a at 0x3000
  // One comgr call with this list would leave the second query empty on 5.2.3
  // (docs/comgr.md); the wrapper asks once per name.
  std::vector<std::string> queries{std::string(kIsa) + "gfx1030", std::string(kIsa) + "gfx90a:sramecc+:xnack-",
                                   std::string(kIsa) + "gfx90a:sramecc+:xnack-",
                                   std::string(kIsa) + "gfx908:sramecc+:xnack-"};
  auto hits = comgr->lookup(bytes, ComgrInput::Bundle, queries);
  ASSERT_TRUE(Succeeds(hits));
  ASSERT_EQ(hits->size(), 4u);
  EXPECT_EQ((*hits)[0], (ComgrHit{.offset = 0x1000, .size = 0x1938}));
  EXPECT_EQ((*hits)[1], (ComgrHit{.offset = 0x3000, .size = 0x1e60}));
  EXPECT_EQ((*hits)[2], (*hits)[1]);
  EXPECT_EQ((*hits)[3], std::nullopt);
}

TEST(ComgrWrapper, Comgr523ReadsNeitherCompressedBundlesNorCodeObjectV5) {
  REQUIRE_COMGR_5_2_3(comgr);
  std::vector<std::string> gfx90a{std::string(kIsa) + "gfx90a:sramecc+:xnack-"};
  for (std::string name :
       {"compressed/driver_v3.hipfb", "compressed/bundler22_v2.hipfb", "compressed/handmade_v1_zlib.hipfb"}) {
    auto hits = comgr->lookup(fixture(name), ComgrInput::Bundle, gfx90a);
    ASSERT_TRUE(FailsWith(hits, ErrorKind::InvalidArgument)) << name;
    EXPECT_EQ(hits.error().location().field, "amd_comgr_lookup_code_object") << name;
    EXPECT_TRUE(hits.error().location().value.has_value()) << name;  // comgr's status
  }
  auto v4 = comgr->code_object_isa_name(fixture("co/gfx90a-cov4.co"));
  ASSERT_TRUE(Succeeds(v4));
  EXPECT_EQ(*v4, "amdgcn-amd-amdhsa--gfx90a");
  for (std::string name : {"co/gfx90a-cov5.co", "co/gfx90a-cov6.co", "co/gfx9-generic.co"}) {
    auto isa = comgr->code_object_isa_name(fixture(name));
    ASSERT_TRUE(FailsWith(isa, ErrorKind::InvalidArgument)) << name;
    EXPECT_EQ(isa.error().location().field, "amd_comgr_get_data_isa_name") << name;
    EXPECT_TRUE(FailsWith(comgr->lookup(fixture(name), ComgrInput::CodeObject, gfx90a), ErrorKind::InvalidArgument));
  }
  auto bare = comgr->lookup(fixture("co/gfx90a-cov4.co"), ComgrInput::CodeObject, gfx90a);
  ASSERT_TRUE(Succeeds(bare));
  EXPECT_EQ((*bare)[0], (ComgrHit{.offset = 0, .size = fixture("co/gfx90a-cov4.co").size()}));
}

TEST(ComgrWrapper, TruncatedTableIsMalformedAndNoPrefixIsAccepted) {
  REQUIRE_COMGR(comgr);
  Bytes bytes = fixture("bundles/driver_cov4.hipfb");
  std::vector<std::string> absent{std::string(kIsa) + "gfx908:sramecc+:xnack-"};
  auto table = parse_plain_bundle(bytes);
  ASSERT_TRUE(Succeeds(table));
  // A query nothing answers makes comgr read the whole table.
  for (std::size_t size = 0; size < table->header_size; ++size) {
    auto hits = comgr->lookup(std::span(bytes).first(size), ComgrInput::Bundle, absent);
    ASSERT_FALSE(hits.has_value()) << "prefix of " << size << " bytes accepted";
    EXPECT_TRUE(hits.error().kind() == ErrorKind::Malformed || hits.error().kind() == ErrorKind::InvalidArgument)
        << size << ": " << hits.error().message();
  }
  EXPECT_TRUE(Succeeds(comgr->lookup(std::span(bytes).first(table->header_size), ComgrInput::Bundle, absent)));
}

// ---------------------------------------------------------------------------
// select_in_bundle with Unbundler::Comgr.

TEST(ComgrSelect, ReportsComgrsChoiceBesideColoadsJudgement) {
  REQUIRE_COMGR(comgr);
  auto open = open_bundle("cov4_variants", cov4_variants());  // host, gfx90a, gfx90a:xnack-, gfx906, gfx1030
  ASSERT_TRUE(open);
  auto selection = select_in_bundle(device("gfx90a:sramecc+:xnack-"), *open->bundle, with(Unbundler::Comgr));
  ASSERT_TRUE(Succeeds(selection));
  ASSERT_EQ(selection->candidates.size(), 5u);
  ASSERT_EQ(selection->selected, 1u);
  const Candidate& chosen = selection->candidates[1];
  EXPECT_EQ(chosen.id, dev("gfx90a"));
  EXPECT_EQ(chosen.verdict, Verdict::Selected);
  EXPECT_EQ(chosen.tier, Tier::Native);
  EXPECT_TRUE(chosen.reason.starts_with("chosen by comgr amd_comgr_lookup_code_object")) << chosen.reason;
  ASSERT_TRUE(chosen.code_object);
  EXPECT_EQ(chosen.code_object->code_object_version, 4u);

  const Candidate& exact = selection->candidates[2];  // what the builtin unbundler takes
  EXPECT_EQ(exact.verdict, Verdict::Compatible);
  EXPECT_EQ(exact.tier, Tier::Native);
  EXPECT_TRUE(exact.reason.starts_with("not chosen by comgr; the builtin unbundler would select it")) << exact.reason;
  for (std::size_t i : {3u, 4u}) {
    EXPECT_EQ(selection->candidates[i].verdict, Verdict::Rejected) << i;
    EXPECT_TRUE(selection->candidates[i].reason.starts_with("not chosen by comgr; "))
        << selection->candidates[i].reason;
  }
  EXPECT_EQ(selection->candidates[0].reason, "host entry");
}

TEST(ComgrSelect, OffsetsAreRelativeToTheBundleNotTheFile) {
  REQUIRE_COMGR(comgr);
  Bytes file = fixture("bundles/driver_cov4.hipfb");
  testing::pad_to(file, 4096);
  std::uint64_t second_at = file.size();
  testing::append(file, bundle_of({{dev("gfx90a:sramecc+:xnack-"), cov4_object(kGfx90aSrameccOnXnackOff)},
                                   {dev("gfx908:sramecc+:xnack-"), cov4_object(kGfx908SrameccOnXnackOff)}}));
  auto binary = FatBinary::from_memory(file, "two bundles");
  ASSERT_TRUE(Succeeds(binary));
  ASSERT_EQ(binary->bundles().size(), 2u);
  auto second = binary->read(1);
  ASSERT_TRUE(Succeeds(second));
  ASSERT_EQ(second->info().offset, second_at);
  for (auto [spec, index] : {std::pair{"gfx908:sramecc+:xnack-", 2u}, std::pair{"gfx90a:sramecc+:xnack-", 1u}}) {
    auto selection = select_in_bundle(device(spec), *second, with(Unbundler::Comgr));
    ASSERT_TRUE(Succeeds(selection)) << spec;
    EXPECT_EQ(selection->selected, index) << spec;
  }
}

TEST(ComgrSelect, NothingFoundIsASelectionWithoutChoice) {
  REQUIRE_COMGR(comgr);
  auto open = open_bundle("driver_cov4", fixture("bundles/driver_cov4.hipfb"));
  ASSERT_TRUE(open);
  Device gfx908 = device("gfx908:sramecc+:xnack-");
  auto selection = select_in_bundle(gfx908, *open->bundle, with(Unbundler::Comgr));
  ASSERT_TRUE(Succeeds(selection));
  EXPECT_EQ(selection->chosen(), nullptr);
  EXPECT_EQ(no_fit_error(gfx908, *selection).kind(), ErrorKind::NotFound);
}

TEST(ComgrSelect, BuiltinIsSelectEntry) {
  auto open = open_bundle("driver_cov4", fixture("bundles/driver_cov4.hipfb"));
  ASSERT_TRUE(open);
  Device gfx90a = device("gfx90a:sramecc+:xnack-");
  auto selection = select_in_bundle(gfx90a, *open->bundle);
  ASSERT_TRUE(Succeeds(selection));
  Selection direct = select_entry(gfx90a, open->bundle->entries());
  EXPECT_EQ(selection->selected, direct.selected);
  EXPECT_EQ(chosen_id(*selection), dev("gfx90a"));
}

TEST(ComgrSelect, Comgr523CannotServeV5PlusEntries) {
  REQUIRE_COMGR_5_2_3(comgr);
  // comgr picks by entry ID alone; the v6 object it picks is one it cannot read.
  auto open = open_bundle("driver_two_arch", fixture("bundles/driver_two_arch.hipfb"));
  ASSERT_TRUE(open);
  auto selection = select_in_bundle(device("gfx90a:sramecc+:xnack-"), *open->bundle, with(Unbundler::Comgr));
  ASSERT_TRUE(FailsWith(selection, ErrorKind::UnsupportedMethod));
  EXPECT_EQ(selection.error().location().field, "code_object_version");
  EXPECT_EQ(selection.error().location().value, std::optional<std::uint64_t>(6));
  EXPECT_EQ(selection.error().location().limit, std::optional<std::uint64_t>(4));
  EXPECT_NE(selection.error().detail().find(dev("gfx90a")), std::string::npos);  // the entry comgr chose

  for (auto [name, version] : {std::pair{"co/gfx90a-cov5.co", 5}, std::pair{"co/gfx90a-cov6.co", 6}}) {
    auto bare = open_bundle(name, fixture(name));
    ASSERT_TRUE(bare);
    ASSERT_EQ(bare->bundle->info().format, BundleFormat::CodeObject);
    auto result = select_in_bundle(device("gfx90a:sramecc+:xnack-"), *bare->bundle, with(Unbundler::Comgr));
    ASSERT_TRUE(FailsWith(result, ErrorKind::UnsupportedMethod)) << name;
    EXPECT_EQ(result.error().location().field, "code_object_version") << name;
    EXPECT_EQ(result.error().location().value, std::optional<std::uint64_t>(version)) << name;
  }
}

TEST(ComgrSelect, BareCodeObjectV4GoesToComgrAsAnExecutable) {
  REQUIRE_COMGR(comgr);
  auto bare = open_bundle("gfx90a-cov4", fixture("co/gfx90a-cov4.co"));
  ASSERT_TRUE(bare);
  auto fits = select_in_bundle(device("gfx90a:sramecc+:xnack+"), *bare->bundle, with(Unbundler::Comgr));
  ASSERT_TRUE(Succeeds(fits));
  EXPECT_EQ(fits->selected, 0u);
  auto other = select_in_bundle(device("gfx908:sramecc+:xnack-"), *bare->bundle, with(Unbundler::Comgr));
  ASSERT_TRUE(Succeeds(other));
  EXPECT_EQ(other->chosen(), nullptr);
}

TEST(ComgrSelect, Comgr523CannotServeProcessorsItDoesNotKnow) {
  REQUIRE_COMGR_5_2_3(comgr);
  // For gfx942 comgr compares target IDs as strings: gfx942:sramecc+ (xnack
  // Any) is missed for a gfx942:sramecc+:xnack- device.
  auto open = open_bundle("driver_features", fixture("bundles/driver_features.hipfb"));
  ASSERT_TRUE(open);
  auto missed = select_in_bundle(device("gfx942:sramecc+:xnack-"), *open->bundle, with(Unbundler::Comgr));
  ASSERT_TRUE(FailsWith(missed, ErrorKind::UnsupportedMethod));
  EXPECT_NE(missed.error().message().find("does not know gfx942"), std::string::npos) << missed.error().message();
  EXPECT_NE(missed.error().message().find(dev("gfx942:sramecc+")), std::string::npos) << missed.error().message();

  // An exact string finds the entry, whose header comgr then cannot read.
  constexpr std::uint32_t kGfx942SrameccOnXnackOff = 0xe4c, kGfx1100 = 0x41;
  auto exact =
      open_bundle("gfx942_exact", bundle_of({{dev("gfx942:sramecc+:xnack-"), cov4_object(kGfx942SrameccOnXnackOff)}}));
  ASSERT_TRUE(exact);
  auto found = select_in_bundle(device("gfx942:sramecc+:xnack-"), *exact->bundle, with(Unbundler::Comgr));
  ASSERT_TRUE(FailsWith(found, ErrorKind::UnsupportedMethod));
  EXPECT_EQ(found.error().location().field, "processor");
  EXPECT_NE(found.error().detail().find("comgr chose entry 1"), std::string::npos) << found.error().detail();

  // gfx1100 has no features, so comgr finds it by name, then cannot read it.
  auto gfx1100 = open_bundle("gfx1100", bundle_of({{dev("gfx1100"), cov4_object(kGfx1100)}}));
  ASSERT_TRUE(gfx1100);
  EXPECT_TRUE(FailsWith(select_in_bundle(device("gfx1100"), *gfx1100->bundle, with(Unbundler::Comgr)),
                        ErrorKind::UnsupportedMethod));
  // With nothing built for gfx942 comgr's miss is right: no choice, no error.
  auto cov4 = open_bundle("driver_cov4", fixture("bundles/driver_cov4.hipfb"));
  ASSERT_TRUE(cov4);
  auto none = select_in_bundle(device("gfx942:sramecc+:xnack-"), *cov4->bundle, with(Unbundler::Comgr));
  ASSERT_TRUE(Succeeds(none));
  EXPECT_EQ(none->chosen(), nullptr);
}

TEST(ComgrSelect, Comgr523CannotLookForAFeaturedGenericItDoesNotKnow) {
  REQUIRE_COMGR_5_2_3(comgr);
  auto open = open_bundle("driver_generic", fixture("bundles/driver_generic.hipfb"));  // gfx9-generic among others
  ASSERT_TRUE(open);
  auto selection = select_in_bundle(device("gfx906:sramecc+:xnack-"), *open->bundle, with(Unbundler::Comgr));
  ASSERT_TRUE(FailsWith(selection, ErrorKind::UnsupportedMethod));
  EXPECT_NE(selection.error().message().find("gfx9-generic:xnack-"), std::string::npos) << selection.error().message();
  // Without a gfx9-generic entry the generic query does not matter: no choice, no error.
  auto cov4 = open_bundle("driver_cov4", fixture("bundles/driver_cov4.hipfb"));
  ASSERT_TRUE(cov4);
  auto none = select_in_bundle(device("gfx906:sramecc+:xnack-"), *cov4->bundle, with(Unbundler::Comgr));
  ASSERT_TRUE(Succeeds(none));
  EXPECT_EQ(none->chosen(), nullptr);
}

// ---------------------------------------------------------------------------
// Differential: builtin against comgr on code object v4 plain bundles.

struct Case {
  std::string name;
  std::unique_ptr<OpenBundle> open;
};

std::vector<Case> cov4_bundles() {
  std::vector<Case> cases;
  auto add = [&](std::string name, Bytes bytes) {
    auto open = open_bundle(name, std::move(bytes));
    if (open) cases.push_back({std::move(name), std::move(open)});
  };
  add("bundles/driver_cov4.hipfb", fixture("bundles/driver_cov4.hipfb"));
  add("select/cov4_variants.hipfb", cov4_variants());
  add("exact_first",  // the exact entry before the Any one: both take it
      bundle_of({{dev("gfx90a:xnack-"), cov4_object(kGfx90aXnackOff)},
                 {dev("gfx90a"), cov4_object(kGfx90a)},
                 {dev("gfx1030"), cov4_object(kGfx1030)}}));
  add("mixed_kinds",  // comgr and coload take hip, hipv4 and hcc; neither openmp
      bundle_of({{"openmp-amdgcn-amd-amdhsa--gfx90a", cov4_object(kGfx90a)},
                 {"hip-amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-", cov4_object(kGfx90aSrameccOnXnackOff)},
                 {"hcc-amdgcn-amd-amdhsa--gfx908:sramecc+:xnack-", cov4_object(kGfx908SrameccOnXnackOff)},
                 {dev("gfx906:xnack-"), cov4_object(kGfx906XnackOff)}}));
  add("unknown_env", bundle_of({{"hipv4-amdgcn-amd-amdhsa-unknown-gfx90a", cov4_object(kGfx90a)}}));
  add("nul_padded_id", bundle_of({{dev("gfx1030") + std::string(2, '\0'), cov4_object(kGfx1030)}}));
  return cases;
}

// Where coload chooses differently from comgr 5.2.3, on purpose.
struct Difference {
  std::string bundle, device;
  std::optional<std::string> builtin, comgr;
  std::string why;
};

std::vector<Difference> expected_differences() {
  std::vector<Difference> differences;
  // docs/comgr.md: comgr gives a query the first compatible entry in file
  // order; coload prefers the entry whose xnack/sramecc equal the device's.
  for (std::string spec : {"gfx90a:sramecc+:xnack-", "gfx90a:sramecc-:xnack-"}) {
    differences.push_back({"select/cov4_variants.hipfb", spec, dev("gfx90a:xnack-"), dev("gfx90a"),
                           "comgr takes the Any entry listed first; coload the exact xnack- one"});
  }
  // docs/format.md (entry IDs): coload treats amdgcn-amd-amdhsa-unknown like
  // amdgcn-amd-amdhsa-; comgr 5.2.3 matches only the empty environment.
  for (std::string spec : {"gfx90a:sramecc+:xnack-", "gfx90a:sramecc+:xnack+", "gfx90a:sramecc-:xnack-"}) {
    differences.push_back({"unknown_env", spec, "hipv4-amdgcn-amd-amdhsa-unknown-gfx90a", std::nullopt,
                           "comgr 5.2.3 ignores the -unknown- environment spelling"});
  }
  // coload drops trailing NULs of entry IDs; comgr 5.2.3 keeps them in the ID.
  differences.push_back({"nul_padded_id", "gfx1030", dev("gfx1030"), std::nullopt,
                         "comgr 5.2.3 does not strip NUL padding from entry IDs"});
  return differences;
}

TEST(ComgrDifferential, BuiltinAndComgrChooseTheSameEntryExceptWhereColoadDiffersOnPurpose) {
  REQUIRE_COMGR_5_2_3(comgr);
  const std::vector<std::string> specs{"gfx90a:sramecc+:xnack-",
                                       "gfx90a:sramecc+:xnack+",
                                       "gfx90a:sramecc-:xnack-",
                                       "gfx908:sramecc+:xnack-",
                                       "gfx906:sramecc+:xnack-",
                                       "gfx906:sramecc-:xnack+",
                                       "gfx900:xnack-",
                                       "gfx1030",
                                       "gfx1031",
                                       "gfx1100",
                                       "gfx942:sramecc+:xnack-"};
  std::vector<Difference> differences = expected_differences();
  std::vector<bool> seen(differences.size(), false);
  std::size_t agreed = 0, chosen_by_both = 0;
  for (const Case& bundle_case : cov4_bundles()) {
    const Bundle& bundle = *bundle_case.open->bundle;
    for (const std::string& spec : specs) {
      SCOPED_TRACE(bundle_case.name + " on " + spec);
      Device target = device(spec);
      auto builtin = select_in_bundle(target, bundle, with(Unbundler::Builtin));
      ASSERT_TRUE(Succeeds(builtin));
      // gfx942 and gfx1100 are unknown to comgr 5.2.3: with no entry for them
      // its miss is still the right answer.
      auto by_comgr = select_in_bundle(target, bundle, with(Unbundler::Comgr));
      ASSERT_TRUE(Succeeds(by_comgr));
      std::optional<std::string> ours = chosen_id(*builtin), theirs = chosen_id(*by_comgr);
      auto difference = std::find_if(differences.begin(), differences.end(), [&](const Difference& d) {
        return d.bundle == bundle_case.name && d.device == spec;
      });
      if (difference != differences.end()) {
        seen[difference - differences.begin()] = true;
        EXPECT_EQ(show(ours), show(difference->builtin)) << difference->why;
        EXPECT_EQ(show(theirs), show(difference->comgr)) << difference->why;
        continue;
      }
      EXPECT_EQ(show(theirs), show(ours)) << "builtin and comgr disagree in a case not named as a difference";
      ++agreed;
      if (ours && theirs) {
        ++chosen_by_both;
        EXPECT_EQ(by_comgr->chosen()->verdict, Verdict::Selected);
        EXPECT_EQ(by_comgr->chosen()->tier, builtin->chosen()->tier);
      }
    }
  }
  for (std::size_t i = 0; i < differences.size(); ++i) {
    EXPECT_TRUE(seen[i]) << "named difference never reached: " << differences[i].bundle << " on "
                         << differences[i].device;
  }
  EXPECT_GE(agreed, 40u);
  EXPECT_GE(chosen_by_both, 10u);
}

}  // namespace
}  // namespace coload
