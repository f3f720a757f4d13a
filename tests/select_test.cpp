// The selector's rules on hand-built entries (ELF headers only, which is all
// the selector reads). The toolchain-built matrix is select_matrix_test.cpp.
#include <gtest/gtest.h>

#include <deque>
#include <thread>

#include "coload/select.h"
#include "select/rank.h"
#include "support/bundle_writer.h"
#include "support/elf_writer.h"
#include "test_util.h"

namespace coload {
namespace {

using namespace coload::testing;

constexpr std::uint32_t kGfx90a = 0x3f, kGfx906 = 0x2f, kGfx900 = 0x2c, kGfx942 = 0x4c, kGfx1030 = 0x36,
                        kGfx1031 = 0x37, kGfx1250 = 0x49, kGfx9Generic = 0x51, kGfx12Generic = 0x59,
                        kGfx10_3Generic = 0x53;

// Entries whose bytes live as long as the builder.
class Entries {
 public:
  Entries& add(std::string id, std::vector<std::byte> bytes) {
    storage_.push_back(std::move(bytes));
    entries_.push_back(BundleEntry{.id = ids_.emplace_back(std::move(id)), .bytes = storage_.back()});
    entries_.back().size = storage_.back().size();
    entries_.back().is_host = entries_.back().id.starts_with("host-");
    return *this;
  }
  Entries& code(std::string target, std::uint32_t flags, std::uint8_t abi = kAbiV6) {
    return add("hipv4-amdgcn-amd-amdhsa--" + target, amdgpu_elf_header(flags, abi));
  }
  std::span<const BundleEntry> get() const { return entries_; }

 private:
  std::deque<std::string> ids_;
  std::deque<std::vector<std::byte>> storage_;
  std::vector<BundleEntry> entries_;
};

Device device(std::string_view spec, DeviceOverrides overrides = {}) {
  auto result = device_from_spec(spec, overrides);
  EXPECT_TRUE(Succeeds(result)) << spec;
  return *result;
}

std::string chosen_id(const Selection& selection) { return selection.chosen() ? selection.chosen()->id : "none"; }

TEST(Select, ExactFeatureMatchBeatsAnyWhateverTheOrder) {
  Entries entries;
  entries.add("host-x86_64-unknown-linux-gnu-", {})
      .code("gfx90a", kGfx90a | kXnackAny | kSrameccAny)
      .code("gfx90a:xnack-", kGfx90a | kXnackOff | kSrameccAny)
      .code("gfx90a:xnack+", kGfx90a | kXnackOn | kSrameccAny);
  Selection off = select_entry(device("gfx90a:xnack-"), entries.get());
  EXPECT_EQ(chosen_id(off), "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-");
  EXPECT_EQ(off.chosen()->tier, Tier::Native);
  EXPECT_EQ(off.candidates[0].verdict, Verdict::Rejected);
  EXPECT_EQ(off.candidates[0].reason, "host entry");
  EXPECT_EQ(off.candidates[1].verdict, Verdict::Compatible);
  EXPECT_EQ(off.candidates[1].tier, Tier::Native);
  EXPECT_EQ(off.candidates[3].verdict, Verdict::Rejected);
  EXPECT_EQ(off.candidates[3].reason, "device runs with xnack-");
  Selection on = select_entry(device("gfx90a:xnack+"), entries.get());
  EXPECT_EQ(chosen_id(on), "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+");
}

TEST(Select, AnyIsTakenWhenNothingExactFitsAndTiesGoToFileOrder) {
  Entries entries;
  entries.code("gfx90a:xnack+", kGfx90a | kXnackOn | kSrameccAny)
      .code("gfx90a", kGfx90a | kXnackAny | kSrameccAny)
      .add("hip-amdgcn-amd-amdhsa--gfx90a", amdgpu_elf_header(kGfx90a | kXnackAny | kSrameccAny));
  Selection selection = select_entry(device("gfx90a:sramecc+:xnack-"), entries.get());
  EXPECT_EQ(selection.selected, 1u);
  EXPECT_EQ(selection.candidates[2].verdict, Verdict::Compatible);
  EXPECT_NE(selection.candidates[2].reason.find("ranked below entry 1"), std::string::npos);
}

TEST(Select, SrameccMustMatchTheDevice) {
  Entries entries;
  entries.code("gfx90a:sramecc+:xnack-", kGfx90a | kXnackOff | kSrameccOn);
  EXPECT_EQ(chosen_id(select_entry(device("gfx90a:sramecc+:xnack-"), entries.get())),
            "hipv4-amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-");
  Selection off = select_entry(device("gfx90a:sramecc-:xnack-"), entries.get());
  EXPECT_FALSE(off.selected);
  EXPECT_EQ(off.candidates[0].reason, "device runs with sramecc-");
}

TEST(Select, NativeBeatsGenericAndGenericIsTheFallback) {
  Entries both;
  both.code("gfx9-generic", kGfx9Generic | kXnackAny | generic_version(1))
      .code("gfx906", kGfx906 | kXnackAny | kSrameccAny);
  Selection native = select_entry(device("gfx906"), both.get());
  EXPECT_EQ(native.selected, 1u);
  EXPECT_EQ(native.candidates[0].tier, Tier::Generic);
  EXPECT_EQ(native.candidates[0].verdict, Verdict::Compatible);
  Selection generic = select_entry(device("gfx900"), both.get());
  EXPECT_EQ(generic.selected, 0u);
  EXPECT_EQ(generic.chosen()->tier, Tier::Generic);
}

TEST(Select, GenericNeedsV6AVersionAndTheDevicesOwnFamily) {
  Entries entries;
  entries.code("gfx9-generic", kGfx9Generic | kXnackAny, kAbiV5)
      .code("gfx9-generic", kGfx9Generic | kXnackAny | generic_version(0))
      .code("gfx12-generic", kGfx12Generic | generic_version(1));
  Selection gfx906 = select_entry(device("gfx906"), entries.get(), {});
  EXPECT_FALSE(gfx906.selected);
  EXPECT_EQ(gfx906.candidates[0].reason, "a generic code object needs v6, this one is v5");
  EXPECT_EQ(gfx906.candidates[1].reason, "generic version 0 is below 1, the first to support gfx906");
  // Family by name: gfx1250 (12.5) is not a gfx12-generic member although 12.5 > 12.0.
  Selection gfx1250 = select_entry(device("gfx1250"), entries.get());
  EXPECT_FALSE(gfx1250.selected);
  EXPECT_EQ(gfx1250.candidates[2].reason,
            "generic target gfx12-generic does not cover gfx1250 (its family is gfx12-5-generic)");
  Selection gfx90a = select_entry(device("gfx90a"), entries.get());
  EXPECT_EQ(gfx90a.candidates[0].reason,
            "generic target gfx9-generic does not cover gfx90a (it has no generic family)");
}

TEST(Select, GenericFeaturesFollowTheSameRule) {
  Entries entries;
  entries.code("gfx9-generic:xnack+", kGfx9Generic | kXnackOn | generic_version(1));
  EXPECT_FALSE(select_entry(device("gfx906:xnack-"), entries.get()).selected);
  EXPECT_EQ(select_entry(device("gfx906:xnack+"), entries.get()).selected, 0u);
}

TEST(Select, CodeObjectVersionMustBeOneTheRuntimeLoads) {
  Entries entries;
  entries.code("gfx90a", kGfx90a | kXnackAny | kSrameccAny, kAbiV6)
      .code("gfx90a:sramecc-:xnack-", kGfx90a, kAbiV3);  // v3: clear bits are off
  Selection selection =
      select_entry(device("gfx90a", {.code_object_versions = std::vector<unsigned>{4, 5}}), entries.get());
  EXPECT_FALSE(selection.selected);
  EXPECT_EQ(selection.candidates[0].reason, "code object version 6; coload offers versions 4, 5 to the runtime");
  EXPECT_EQ(selection.candidates[1].reason, "code object version 3; coload offers versions 4, 5 to the runtime");
}

TEST(Select, ARuntimeReleaseNamesItselfInTheRefusal) {
  Entries entries;
  entries.code("gfx90a", kGfx90a | kXnackAny | kSrameccAny, kAbiV5);
  Device old_rocr = *device_from_spec("gfx90a", {.code_object_versions = std::vector<unsigned>{4}});
  old_rocr.runtime_release = "ROCr 1.5.50000 (ROCm 5.0)";
  Selection selection = select_entry(old_rocr, entries.get());
  EXPECT_FALSE(selection.selected);
  EXPECT_EQ(selection.candidates[0].reason,
            "code object version 5; coload offers versions 4 to ROCr 1.5.50000 (ROCm 5.0)");
  EXPECT_EQ(no_fit_error(old_rocr, selection).kind(), ErrorKind::UnsupportedVersion);
  // A device from a spec has no release to blame: nothing fits, as before.
  Device spec = *device_from_spec("gfx90a", {.code_object_versions = std::vector<unsigned>{4}});
  EXPECT_EQ(no_fit_error(spec, select_entry(spec, entries.get())).kind(), ErrorKind::NotFound);
}

TEST(Select, GenericObjectsAreRefusedWhereTheRuntimeLoadsNone) {
  Entries entries;
  entries.code("gfx9-generic", kGfx9Generic | kXnackAny | generic_version(1));
  Device device_of_rocm_6_2 = *device_from_spec("gfx906:xnack-");
  device_of_rocm_6_2.loads_generic = false;
  device_of_rocm_6_2.runtime_release = "ROCr 1.14.60200 (ROCm 6.2)";
  Selection selection = select_entry(device_of_rocm_6_2, entries.get());
  EXPECT_FALSE(selection.selected);
  EXPECT_EQ(selection.candidates[0].reason,
            "generic target gfx9-generic: ROCr 1.14.60200 (ROCm 6.2) does not load generic code objects");
  device_of_rocm_6_2.loads_generic = true;
  EXPECT_EQ(select_entry(device_of_rocm_6_2, entries.get()).selected, 0u);
}

// ROCr names an xnack-on gfx1250 object gfx1250:xnack+ and refuses it while
// its ISA table lacks that name (ROCm/rocm-systems#11737).
TEST(Select, AlwaysOnXnackWrittenOutLoadsOnlyWhereTheRuntimeNamesTheDeviceSo) {
  Entries entries;
  entries.code("gfx1250", kGfx1250 | kXnackOn);
  Device bare = *device_from_spec("gfx1250");
  bare.runtime_release = "ROCr 1.18.70000 (ROCm 7.0)";
  Selection refused = select_entry(bare, entries.get());
  EXPECT_FALSE(refused.selected);
  EXPECT_EQ(refused.candidates[0].code_object->target.str(), "gfx1250:xnack+");
  EXPECT_EQ(refused.candidates[0].reason,
            "e_flags say xnack on, so ROCr 1.18.70000 (ROCm 7.0) names this object gfx1250:xnack+, an ISA it does not "
            "list for gfx1250, and refuses it (ROCm/rocm-systems#11737); entry ID says gfx1250, ELF header says "
            "gfx1250:xnack+, judged by the ELF header");
  EXPECT_EQ(no_fit_error(bare, refused).kind(), ErrorKind::UnsupportedVersion);
  Selection named = select_entry(*device_from_spec("gfx1250:xnack+"), entries.get());
  ASSERT_EQ(named.selected, 0u);
  EXPECT_EQ(named.chosen()->tier, Tier::Native);
  // What clang-22 writes (xnack any) is the bare processor and loads anywhere.
  Entries any;
  any.code("gfx1250", kGfx1250 | kXnackAny);
  EXPECT_EQ(select_entry(bare, any.get()).selected, 0u);
}

TEST(Select, UnrelatedProcessorsAreRejectedOnTheirIdWithoutReadingTheElf) {
  Entries entries;
  const std::vector<std::byte> not_elf{std::byte{'B'}, std::byte{'C'}, std::byte{0xc0}, std::byte{0xde}};
  entries.add("hipv4-amdgcn-amd-amdhsa--gfx1030", not_elf)
      .add("hipv4-amdgcn-amd-amdhsa--gfx12-generic", not_elf)
      .add("hipv4-amdgcn-amd-amdhsa--gfx1031", not_elf)          // same ISA group as gfx1030: read
      .add("hipv4-amdgcn-amd-amdhsa--gfx10-3-generic", not_elf)  // gfx1030's family: read
      .code("gfx906", kGfx906, kAbiV6);                          // a readable v6 object, unrelated
  Selection selection =
      select_entry(device("gfx1030", {.code_object_versions = std::vector<unsigned>{4, 5}}), entries.get());
  EXPECT_FALSE(selection.selected);
  auto reason = [&](std::size_t i) { return selection.candidates[i].reason; };
  EXPECT_EQ(reason(0).rfind("not a loadable AMDGPU code object: ", 0), 0u) << reason(0);  // native: read
  EXPECT_EQ(reason(1), "generic target gfx12-generic does not cover gfx1030 (its family is gfx10-3-generic)");
  EXPECT_EQ(reason(2).rfind("not a loadable AMDGPU code object: ", 0), 0u) << reason(2);
  EXPECT_EQ(reason(3).rfind("not a loadable AMDGPU code object: ", 0), 0u) << reason(3);
  // The processor decides before the version: v6 is not what keeps gfx906 code off gfx1030.
  EXPECT_EQ(reason(4), "built for gfx906; device is gfx1030");
  EXPECT_FALSE(selection.candidates[1].code_object);
  EXPECT_FALSE(selection.candidates[4].code_object);
  for (const Candidate& candidate : selection.candidates) EXPECT_EQ(candidate.verdict, Verdict::Rejected);
}

TEST(Select, EquivalentIsaOnlyWhenTheDeviceOptsIn) {
  Entries entries;
  entries.code("gfx1030", kGfx1030, kAbiV5);
  Selection off = select_entry(device("gfx1031"), entries.get());
  EXPECT_FALSE(off.selected);
  EXPECT_EQ(off.candidates[0].reason,
            "runs on gfx1031 only with extended ISA compatibility, which is off for this device");
  Selection on = select_entry(device("gfx1031", {.extended_isa_compat = true}), entries.get());
  ASSERT_TRUE(on.selected);
  EXPECT_EQ(on.chosen()->tier, Tier::Equivalent);
  // Native still wins when present, even listed second.
  entries.code("gfx1031", kGfx1031, kAbiV5);
  Selection both = select_entry(device("gfx1031", {.extended_isa_compat = true}), entries.get());
  EXPECT_EQ(both.selected, 1u);
  EXPECT_EQ(both.candidates[0].verdict, Verdict::Compatible);
}

TEST(Select, EquivalenceGroupsAreTheDebianOnes) {
  auto takes = [](std::string_view device_spec, std::uint32_t mach, const char* name) {
    Entries entries;
    entries.code(name, mach | kXnackAny, kAbiV5);
    return select_entry(device(device_spec, {.extended_isa_compat = true}), entries.get()).selected.has_value();
  };
  EXPECT_TRUE(takes("gfx906", kGfx900, "gfx900"));   // gfx906 receives gfx900 code
  EXPECT_FALSE(takes("gfx900", kGfx906, "gfx906"));  // but does not give
  EXPECT_FALSE(takes("gfx904", kGfx900, "gfx900"));  // gfx904 is in no group
  EXPECT_TRUE(takes("gfx1013", 0x33, "gfx1010"));
  EXPECT_FALSE(takes("gfx1010", 0x34, "gfx1011"));
  EXPECT_TRUE(takes("gfx1036", kGfx1031, "gfx1031"));
  EXPECT_FALSE(takes("gfx1100", kGfx1030, "gfx1030"));
}

TEST(Select, HotswapOnlyWhenNothingNativeOrGenericFits) {
  SelectOptions options{.hotswap = true};
  ASSERT_TRUE(Succeeds(options.hotswap_allowlist.add("gfx1250", "gfx942")));
  Entries both;
  both.code("gfx1250", kGfx1250 | kXnackAny).code("gfx942", kGfx942 | kXnackAny | kSrameccAny);
  Selection native = select_entry(device("gfx942"), both.get(), options);
  EXPECT_EQ(native.selected, 1u);  // the CLR forwarding bug (docs/selection.md): the allowlisted source must not win
  EXPECT_EQ(native.candidates[0].tier, Tier::Hotswap);
  EXPECT_EQ(native.candidates[0].verdict, Verdict::Compatible);
  EXPECT_NE(native.candidates[0].reason.find("not used: a native entry fits"), std::string::npos);

  Entries source_only;
  source_only.code("gfx1250", kGfx1250 | kXnackOn);  // always-on xnack written out changes nothing here
  Selection hotswap = select_entry(device("gfx942"), source_only.get(), options);
  ASSERT_TRUE(hotswap.selected);
  EXPECT_EQ(hotswap.chosen()->tier, Tier::Hotswap);

  options.hotswap = false;
  Selection disabled = select_entry(device("gfx942"), source_only.get(), options);
  EXPECT_FALSE(disabled.selected);
  EXPECT_EQ(disabled.candidates[0].reason,
            "allowlisted hotswap source, but hotswap is off; entry ID says gfx1250, ELF header says gfx1250:xnack+, "
            "judged by the ELF header");
  // Not allowlisted in this direction.
  options.hotswap = true;
  Entries reverse;
  reverse.code("gfx942", kGfx942 | kXnackAny | kSrameccAny);
  EXPECT_FALSE(select_entry(device("gfx1250"), reverse.get(), options).selected);
}

// The built-in pass's pairs are same-ISA pairs: allowlisted, they reach the
// hotswap tier without the extended-ISA opt-in, and with it are "equivalent".
TEST(Select, AnAllowlistedSameIsaPairIsHotswapWithoutTheOptIn) {
  SelectOptions options{.hotswap = true};
  ASSERT_TRUE(Succeeds(options.hotswap_allowlist.add("gfx1030", "gfx1031")));
  Entries entries;
  entries.code("gfx1030", kGfx1030, kAbiV5);
  Selection hotswap = select_entry(device("gfx1031"), entries.get(), options);
  ASSERT_TRUE(hotswap.selected);
  EXPECT_EQ(hotswap.chosen()->tier, Tier::Hotswap);
  EXPECT_EQ(hotswap.chosen()->reason, "hotswap source gfx1030 -> gfx1031");
  Selection equivalent = select_entry(device("gfx1031", {.extended_isa_compat = true}), entries.get(), options);
  ASSERT_TRUE(equivalent.selected);
  EXPECT_EQ(equivalent.chosen()->tier, Tier::Equivalent);
  options.hotswap = false;
  Selection off = select_entry(device("gfx1031"), entries.get(), options);
  EXPECT_FALSE(off.selected);
  EXPECT_EQ(off.candidates[0].reason,
            "runs on gfx1031 only with extended ISA compatibility, which is off for this device");
}

// Rule 1.2 holds in the hotswap tier too: code built for xnack- is not run with xnack+.
TEST(Select, HotswapSourceMustFitTheDevicesFeatureModes) {
  SelectOptions options{.hotswap = true};
  ASSERT_TRUE(Succeeds(options.hotswap_allowlist.add("gfx942", "gfx90a")));
  Entries entries;
  entries.code("gfx942:xnack-", kGfx942 | kXnackOff | kSrameccAny)
      .code("gfx942:xnack+", kGfx942 | kXnackOn | kSrameccAny);
  Selection selection = select_entry(device("gfx90a:xnack+"), entries.get(), options);
  ASSERT_TRUE(selection.selected);
  EXPECT_EQ(*selection.selected, 1u);
  EXPECT_EQ(selection.candidates[0].verdict, Verdict::Rejected);
  EXPECT_EQ(selection.candidates[0].reason, "device runs with xnack+");
  EXPECT_EQ(selection.chosen()->tier, Tier::Hotswap);
}

// A relocatable object (ET_REL) is not what a loader takes, however well its target fits.
TEST(Select, OnlyLinkedCodeObjectsAreChosen) {
  std::vector<std::byte> relocatable = amdgpu_elf_header(kGfx90a | kXnackOff | kSrameccOn);
  relocatable[16] = std::byte{1};  // e_type ET_REL
  Entries entries;
  entries.add("hipv4-amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-", relocatable)
      .code("gfx90a", kGfx90a | kXnackAny | kSrameccAny);
  Selection selection = select_entry(device("gfx90a:sramecc+:xnack-"), entries.get());
  ASSERT_TRUE(selection.selected);
  EXPECT_EQ(*selection.selected, 1u);
  EXPECT_EQ(selection.candidates[0].verdict, Verdict::Rejected);
  EXPECT_EQ(selection.candidates[0].reason,
            "not a loadable AMDGPU code object: e_type 1 at offset 0x10 is not ET_DYN (3); the loader takes only "
            "linked code objects");
}

TEST(Select, HotswapAllowlistRefusesIdentityGenericAndUnknownPairs) {
  HotswapAllowlist allowlist;
  EXPECT_TRUE(testing::FailsWith(allowlist.add("gfx1250", "gfx1250"), ErrorKind::InvalidArgument));
  auto generic = allowlist.add("gfx12-5-generic", "gfx942");
  ASSERT_TRUE(testing::FailsWith(generic, ErrorKind::InvalidArgument));
  EXPECT_EQ(generic.error().location().field, "source");
  auto unknown = allowlist.add("gfx942", "gfx9999");
  ASSERT_TRUE(testing::FailsWith(unknown, ErrorKind::NotFound));
  EXPECT_EQ(unknown.error().location().field, "device");
  EXPECT_TRUE(allowlist.empty());
  ASSERT_TRUE(Succeeds(allowlist.add("gfx1250", "gfx950")));
  ASSERT_TRUE(Succeeds(allowlist.add("gfx1250", "gfx950")));
  EXPECT_EQ(allowlist.pairs().size(), 1u);
  EXPECT_TRUE(allowlist.contains("gfx1250", "gfx950"));
  EXPECT_FALSE(allowlist.contains("gfx950", "gfx1250"));
}

TEST(Select, SpirvIsReportedAsNeedingJitAndNeverChosen) {
  Entries entries;
  entries.add("hip-spirv64-amd-amdhsa--amdgcnspirv",
              {std::byte{0x03}, std::byte{0x02}, std::byte{0x23}, std::byte{0x07}});
  Selection selection = select_entry(device("gfx90a"), entries.get());
  EXPECT_FALSE(selection.selected);
  EXPECT_TRUE(selection.candidates[0].needs_jit);
  EXPECT_FALSE(selection.candidates[0].tier);
  Error error = no_fit_error(device("gfx90a"), selection);
  EXPECT_NE(error.message().find("nearest miss: hip-spirv64-amd-amdhsa--amdgcnspirv present; SPIR-V"),
            std::string::npos)
      << error.message();
}

TEST(Select, EntriesThatCannotLoadAreRejectedWithTheirReason) {
  Entries entries;
  entries.add("openmp-amdgcn-amd-amdhsa--gfx90a", amdgpu_elf_header(kGfx90a, kAbiV5))
      .add("hipv4-amdgcn-amd-amdhsa-gnu-gfx90a", amdgpu_elf_header(kGfx90a, kAbiV5))
      .add("hipv4-amdgcn-amd-amdhsa--gfx90a", {})
      .add("hipv4-amdgcn-amd-amdhsa--gfx90a", {std::byte{'B'}, std::byte{'C'}, std::byte{0xc0}, std::byte{0xde}})
      .add("hip-amdgcn-amd-amdhsa--", amdgpu_elf_header(kGfx90a, kAbiV5))
      .add("cuda-nvptx64-nvidia-cuda--sm_80", {std::byte{1}})
      .add("hipv4-amdgcn-amd-amdhsa--gfx90a", amdgpu_elf_header(0x30, kAbiV5));  // ELF says gfx908
  Selection selection = select_entry(device("gfx90a"), entries.get());
  EXPECT_FALSE(selection.selected);
  auto reason = [&](std::size_t i) { return selection.candidates[i].reason; };
  EXPECT_EQ(reason(0), "OpenMP offload entry; HIP runtimes load hip, hipv4 and hcc entries");
  EXPECT_EQ(reason(1), "triple amdgcn-amd-amdhsa-gnu is not amdgcn-amd-amdhsa");
  EXPECT_EQ(reason(2), "empty entry");
  EXPECT_NE(reason(3).find("not a loadable AMDGPU code object: code object ELF header: needs 64 bytes"),
            std::string::npos)
      << reason(3);
  EXPECT_NE(reason(4).find("names no processor"), std::string::npos) << reason(4);
  EXPECT_EQ(reason(5), "offload kind 'cuda' is not hip, hipv4 or hcc");
  EXPECT_EQ(reason(6), "entry ID names gfx90a but its ELF header says gfx908; neither is trusted");
  for (const Candidate& candidate : selection.candidates) EXPECT_EQ(candidate.verdict, Verdict::Rejected);
}

TEST(Select, ElfHeaderFeaturesWinOverTheEntryIdAndTheDisagreementIsReported) {
  Entries entries;
  entries.code("gfx90a", kGfx90a | kXnackOn | kSrameccAny, kAbiV5);  // ID says any, ELF says xnack+
  Selection off = select_entry(device("gfx90a:xnack-"), entries.get());
  EXPECT_FALSE(off.selected);
  EXPECT_EQ(off.candidates[0].reason,
            "device runs with xnack-; entry ID says gfx90a, ELF header says gfx90a:xnack+, judged by the ELF header");
  Selection on = select_entry(device("gfx90a:xnack+"), entries.get());
  EXPECT_EQ(on.selected, 0u);
  EXPECT_NE(on.chosen()->reason.find("judged by the ELF header"), std::string::npos);
}

TEST(Select, NoFitErrorNamesTheDeviceTheEntriesAndTheNearestMiss) {
  Entries entries;
  entries.add("host-x86_64-unknown-linux-gnu-", {})
      .code("gfx1030", kGfx1030, kAbiV5)
      .code("gfx90a:xnack+", kGfx90a | kXnackOn | kSrameccAny, kAbiV5);
  Device mi200 = device("gfx90a:sramecc+:xnack-");
  Selection selection = select_entry(mi200, entries.get());
  ASSERT_FALSE(selection.selected);
  Error error = no_fit_error(mi200, selection);
  EXPECT_EQ(error.kind(), ErrorKind::NotFound);
  EXPECT_EQ(error.message(),
            "no code object fits device gfx90a:sramecc+:xnack-; entries present: "
            "hipv4-amdgcn-amd-amdhsa--gfx1030, hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+; "
            "nearest miss: gfx90a:xnack+ present; device runs with xnack-");
  Selection navi = select_entry(device("gfx1031"), entries.get());
  EXPECT_NE(no_fit_error(device("gfx1031"), navi)
                .message()
                .find("nearest miss: gfx1030 present; runs on gfx1031 only with extended ISA compatibility"),
            std::string::npos);
  Entries nothing;
  EXPECT_EQ(no_fit_error(mi200, select_entry(mi200, nothing.get())).message(),
            "no code object fits device gfx90a:sramecc+:xnack-; entries present: none");
}

TEST(Select, GenericVersionBreaksTiesInsideTheGenericTier) {
  Entries entries;
  entries.code("gfx10-3-generic", kGfx10_3Generic | generic_version(1))
      .code("gfx10-3-generic", kGfx10_3Generic | generic_version(2));
  EXPECT_EQ(select_entry(device("gfx1035"), entries.get()).selected, 1u);
}

// ---------------------------------------------------------------------------
// Selector: select_in_bundle across bundles, keeping what entry IDs decide.

// Plain bundles repeating IDs: each ID decided by itself (unrelated
// processors, OpenMP, SPIR-V, a bad ID) appears both with bytes and empty,
// in both orders, so a kept verdict meets the empty-entry rule both ways.
std::vector<std::vector<std::byte>> repeating_bundles() {
  using testing::Entry;
  const std::vector<std::byte> spirv{std::byte{0x03}, std::byte{0x02}, std::byte{0x23}, std::byte{0x07}};
  const std::string id = "hipv4-amdgcn-amd-amdhsa--";
  std::vector<Entry> first{
      {"host-x86_64-unknown-linux-gnu-", {}},
      {id + "gfx1030", amdgpu_elf_header(kGfx1030)},
      {id + "gfx942", {}},
      {"openmp-amdgcn-amd-amdhsa--gfx90a", amdgpu_elf_header(kGfx90a)},
      {"hip-spirv64-amd-amdhsa--amdgcnspirv", spirv},
      {id + "gfx9000", amdgpu_elf_header(kGfx90a)},  // names no processor
      {id + "gfx90a", amdgpu_elf_header(kGfx90a | kXnackAny | kSrameccAny)},
      {id + "gfx1031", amdgpu_elf_header(kGfx1031)},
      {id + "gfx10-3-generic", amdgpu_elf_header(kGfx10_3Generic | generic_version(1))},
  };
  std::vector<Entry> second{
      {id + "gfx90a", amdgpu_elf_header(0x30)},  // the ELF says gfx908
      {id + "gfx1030", {}},
      {id + "gfx942", amdgpu_elf_header(kGfx942)},
      {"openmp-amdgcn-amd-amdhsa--gfx90a", {}},
      {"hip-spirv64-amd-amdhsa--amdgcnspirv", {}},
      {id + "gfx9000", {}},
      {id + "gfx1031", {}},
  };
  std::vector<Entry> third(first.rbegin(), first.rend());
  return {testing::write_plain_bundle(first, 64), testing::write_plain_bundle(second, 64),
          testing::write_plain_bundle(third, 64)};
}

Bundle read_plain(std::span<const std::byte> bytes) {
  auto bundle = read_bundle(bytes, BundleInfo{.offset = 0, .size = bytes.size(), .format = BundleFormat::Plain});
  EXPECT_TRUE(Succeeds(bundle));
  return std::move(*bundle);
}

TEST(Selector, EveryResultIsSelectInBundlesWhateverTheIdsRepeat) {
  const auto files = repeating_bundles();
  std::vector<Bundle> bundles;
  for (const auto& file : files) bundles.push_back(read_plain(file));
  SelectOptions hotswap{.hotswap = true};
  ASSERT_TRUE(Succeeds(hotswap.hotswap_allowlist.add("gfx942", "gfx90a")));
  const std::vector<std::pair<Device, SelectOptions>> cases{
      {device("gfx90a"), {}},
      {device("gfx90a"), hotswap},
      {device("gfx1030"), {}},
      {device("gfx1031", {.extended_isa_compat = true}), {}},
  };
  for (const auto& [target, options] : cases) {
    Selector selector(target, options);
    EXPECT_EQ(selector.device().str(), target.str());
    // Reused across bundles of 9, 7 and 9 entries, and filled with another
    // judgement before each use: every field must be rewritten.
    Selection reused;
    auto spoil = [&reused] {
      reused.device = "gfx1100";
      reused.selected = 0;
      reused.candidates.resize(8);
      for (Candidate& c : reused.candidates) {
        c = {.entry_index = 99,
             .id = std::string(300, 'i'),
             .tier = Tier::Hotswap,
             .verdict = Verdict::Selected,
             .reason = std::string(300, 'r'),
             .code_object = CodeObjectTarget{},
             .needs_jit = true};
      }
    };
    for (int round = 0; round < 2; ++round) {  // the second round decides every ID from kept verdicts
      for (std::size_t i = 0; i < bundles.size(); ++i) {
        auto expected = select_in_bundle(target, bundles[i], options);
        auto got = selector.select(bundles[i]);
        ASSERT_TRUE(Succeeds(expected));
        ASSERT_TRUE(Succeeds(got));
        EXPECT_EQ(describe(*got), describe(*expected)) << target.str() << " bundle " << i << " round " << round;
        spoil();
        ASSERT_TRUE(Succeeds(selector.select(bundles[i], reused)));
        EXPECT_EQ(describe(reused), describe(*expected))
            << target.str() << " reused, bundle " << i << " round " << round;
      }
    }
  }
  // The rules the cases rest on, for gfx90a: an empty entry is empty first
  // when its processor decides, and after the ID's own verdict otherwise.
  Selector selector(device("gfx90a"));
  Selection second = *selector.select(bundles[1]);
  EXPECT_EQ(second.candidates[1].reason, "empty entry");  // gfx1030, kept verdict "built for gfx1030"
  EXPECT_EQ(second.candidates[3].reason, "OpenMP offload entry; HIP runtimes load hip, hipv4 and hcc entries");
  EXPECT_TRUE(second.candidates[4].needs_jit);
  EXPECT_EQ(second.candidates[0].reason, "entry ID names gfx90a but its ELF header says gfx908; neither is trusted");
  Selection first = *selector.select(bundles[0]);
  EXPECT_EQ(first.candidates[1].reason, "built for gfx1030; device is gfx90a");
  EXPECT_EQ(chosen_id(first), "hipv4-amdgcn-amd-amdhsa--gfx90a");
}

TEST(Selector, KeepsWhatTheIdSaysAndNothingElse) {
  const auto files = repeating_bundles();
  Bundle bundle = read_plain(files[0]);
  detail::IdVerdicts verdicts("gfx90a:sramecc+:xnack-");
  Selection selection;
  detail::select_entries(device("gfx90a"), bundle.entries(), {}, &bundle, &verdicts, selection);
  EXPECT_EQ(selection.device, "gfx90a:sramecc+:xnack-");
  std::vector<const detail::IdVerdict*> found(bundle.entries().size());
  verdicts.find(bundle.entries(), found);
  // host, gfx1030, gfx942, openmp, spirv, gfx9000, gfx90a, gfx1031, gfx10-3-generic:
  // every ID but the host's; only gfx90a's leaves the choice to the ELF header.
  const std::vector<bool> kept{false, true, true, true, true, true, true, true, true};
  for (std::size_t i = 0; i < found.size(); ++i) {
    EXPECT_EQ(found[i] != nullptr, kept[i]) << bundle.entries()[i].id;
    if (found[i]) EXPECT_EQ(found[i]->target.has_value(), i == 6) << bundle.entries()[i].id;
  }
  EXPECT_EQ(found[6]->target->str(), "gfx90a");
  EXPECT_EQ(found[6]->reason, "");
  EXPECT_EQ(found[1]->reason, "built for gfx1030; device is gfx90a");
  EXPECT_TRUE(found[1]->by_processor);
  EXPECT_FALSE(found[3]->by_processor);
  EXPECT_TRUE(found[4]->needs_jit);
  EXPECT_NE(found[5]->reason.find("gfx9000"), std::string::npos) << found[5]->reason;
  EXPECT_EQ(found[8]->reason, "generic target gfx10-3-generic does not cover gfx90a (it has no generic family)");
}

TEST(Selector, KeepsABoundedNumberOfVerdictsOfBoundedLength) {
  detail::IdVerdicts verdicts("gfx90a");
  std::deque<std::string> ids;
  std::vector<std::pair<std::string_view, detail::IdVerdict>> learned;
  for (std::size_t i = 0; i <= detail::IdVerdicts::kMaxIds; ++i) {
    learned.emplace_back(ids.emplace_back("id" + std::to_string(i)), detail::IdVerdict{.reason = "r"});
  }
  verdicts.add(learned);
  std::vector<std::pair<std::string_view, detail::IdVerdict>> long_id{
      {ids.emplace_back(detail::IdVerdicts::kMaxIdBytes + 1, 'x'), {.reason = "long"}}};
  detail::IdVerdicts fresh("gfx90a");
  fresh.add(long_id);
  auto kept = [](const detail::IdVerdicts& in, std::string_view id) {
    BundleEntry entry{.id = id};
    const detail::IdVerdict* found = nullptr;
    in.find(std::span(&entry, 1), std::span(&found, 1));
    return found != nullptr;
  };
  EXPECT_TRUE(kept(verdicts, "id0"));
  EXPECT_TRUE(kept(verdicts, "id" + std::to_string(detail::IdVerdicts::kMaxIds - 1)));
  EXPECT_FALSE(kept(verdicts, "id" + std::to_string(detail::IdVerdicts::kMaxIds)));
  EXPECT_FALSE(kept(fresh, ids.back()));
}

TEST(Selector, ThreadsShareOne) {
  const auto files = repeating_bundles();
  std::vector<Bundle> bundles;
  for (const auto& file : files) bundles.push_back(read_plain(file));
  const Device gfx90a = device("gfx90a");
  std::vector<std::string> expected;
  for (const Bundle& bundle : bundles) expected.push_back(describe(*select_in_bundle(gfx90a, bundle)));
  const Selector selector(gfx90a);
  std::vector<int> mismatches(4, 0);
  {
    std::vector<std::jthread> threads;
    for (std::size_t t = 0; t < mismatches.size(); ++t) {
      threads.emplace_back([&, t] {
        for (int round = 0; round < 50; ++round) {
          std::size_t i = (t + static_cast<std::size_t>(round)) % bundles.size();
          if (describe(*selector.select(bundles[i])) != expected[i]) ++mismatches[t];
        }
      });
    }
  }
  for (int count : mismatches) EXPECT_EQ(count, 0);
}

}  // namespace
}  // namespace coload
