#include <gtest/gtest.h>

#include "coload/device.h"
#include "coload/fat_binary.h"
#include "coload/target.h"
#include "support/elf_writer.h"
#include "target/elf_target.h"
#include "test_util.h"

namespace coload {
namespace {

using testing::FailsAtField;
using testing::FailsWith;
using testing::Succeeds;
using namespace coload::testing;

TargetId parsed(std::string_view text) {
  auto id = TargetId::parse(text);
  EXPECT_TRUE(Succeeds(id)) << text;
  return id ? *id : TargetId{};
}

TEST(TargetId, ParsesAndPrintsCanonically) {
  EXPECT_EQ(parsed("gfx90a").str(), "gfx90a");
  EXPECT_EQ(parsed("gfx90a:xnack-").str(), "gfx90a:xnack-");
  EXPECT_EQ(parsed("gfx90a:xnack-:sramecc+").str(), "gfx90a:sramecc+:xnack-");  // alphabetical
  EXPECT_EQ(parsed("fiji").str(), "gfx803");                                    // alias
  EXPECT_EQ(parsed("gfx10-3-generic").str(), "gfx10-3-generic");
  EXPECT_EQ(parsed("gfx9-4-generic:sramecc-:xnack+").str(), "gfx9-4-generic:sramecc-:xnack+");
}

TEST(TargetId, OmittedFeatureIsAnyWhenSupportedAndUnsupportedOtherwise) {
  TargetId mi200 = parsed("gfx90a:xnack+");
  EXPECT_EQ(mi200.xnack, FeatureState::On);
  EXPECT_EQ(mi200.sramecc, FeatureState::Any);
  TargetId navi = parsed("gfx1030");
  EXPECT_EQ(navi.xnack, FeatureState::Unsupported);
  EXPECT_EQ(navi.sramecc, FeatureState::Unsupported);
  EXPECT_FALSE(mi200.is_concrete());
  EXPECT_TRUE(navi.is_concrete());
  EXPECT_TRUE(parsed("gfx90a:sramecc-:xnack+").is_concrete());
}

TEST(TargetId, RejectsInvalidIds) {
  auto unknown = TargetId::parse("gfx9999");
  ASSERT_TRUE(FailsWith(unknown, ErrorKind::NotFound));
  EXPECT_EQ(unknown.error().location().field, "processor");
  EXPECT_EQ(unknown.error().location().offset, std::optional<std::uint64_t>(0));
  auto empty = TargetId::parse("");
  ASSERT_TRUE(FailsWith(empty, ErrorKind::Malformed));
  EXPECT_EQ(empty.error().location().field, "processor");
  EXPECT_TRUE(FailsWith(TargetId::parse(":xnack+"), ErrorKind::Malformed));
  EXPECT_TRUE(FailsWith(TargetId::parse("gfx1030:xnack+"), ErrorKind::Malformed));   // no xnack mode
  EXPECT_TRUE(FailsWith(TargetId::parse("gfx900:sramecc+"), ErrorKind::Malformed));  // no sramecc
  EXPECT_TRUE(FailsWith(TargetId::parse("gfx90a:xnack+:xnack-"), ErrorKind::Malformed));
  EXPECT_TRUE(FailsWith(TargetId::parse("gfx90a:xnack"), ErrorKind::Malformed));
  EXPECT_TRUE(FailsWith(TargetId::parse("gfx90a:xnack*"), ErrorKind::Malformed));
  EXPECT_TRUE(FailsWith(TargetId::parse("gfx90a:"), ErrorKind::Malformed));
  EXPECT_TRUE(FailsWith(TargetId::parse("gfx90a:tgsplit+"), ErrorKind::Malformed));
  // gfx1250's xnack is always on and cannot be written (clang refuses it too).
  auto always_on = TargetId::parse("gfx1250:xnack+");
  ASSERT_TRUE(FailsWith(always_on, ErrorKind::Malformed));
  EXPECT_EQ(always_on.error().location().field, "feature");
  EXPECT_EQ(always_on.error().location().offset, std::optional<std::uint64_t>(8));
  EXPECT_NE(always_on.error().detail().find("always on"), std::string::npos);  // the reason, not a field
  auto repeated = TargetId::parse("gfx90a:xnack+:xnack+");
  ASSERT_TRUE(FailsWith(repeated, ErrorKind::Malformed));
  EXPECT_EQ(repeated.error().location().field, "feature");
  EXPECT_EQ(repeated.error().location().offset, std::optional<std::uint64_t>(14));  // the second xnack+
}

TEST(TargetId, FeatureRuleOfRocrComgrAndClr) {
  TargetId device = parsed("gfx90a:sramecc+:xnack-");
  EXPECT_EQ(feature_mismatch(parsed("gfx90a"), device), "");
  EXPECT_EQ(feature_mismatch(parsed("gfx90a:xnack-"), device), "");
  EXPECT_EQ(feature_mismatch(parsed("gfx90a:sramecc+:xnack-"), device), "");
  EXPECT_EQ(feature_mismatch(parsed("gfx90a:xnack+"), device), "device runs with xnack-");
  EXPECT_EQ(feature_mismatch(parsed("gfx90a:sramecc-:xnack+"), device),
            "device runs with sramecc+, device runs with xnack-");
  TargetId no_modes = parsed("gfx1030");
  TargetId code = no_modes;
  code.xnack = FeatureState::On;
  EXPECT_EQ(feature_mismatch(code, no_modes), "device has no xnack mode");
  // gfx1250 runs with xnack always on: Off code cannot run there, On code can.
  TargetId gfx1250 = parsed("gfx1250");
  TargetId off = gfx1250;
  off.xnack = FeatureState::Off;
  EXPECT_EQ(feature_mismatch(off, gfx1250), "device runs with xnack always on");
  TargetId on = gfx1250;
  on.xnack = FeatureState::On;
  EXPECT_EQ(feature_mismatch(on, gfx1250), "");
  EXPECT_EQ(on.str(), "gfx1250:xnack+");  // as ROCr names such an object
  EXPECT_EQ(off.str(), "gfx1250:xnack-");
}

TEST(EntryId, ParsesEveryObservedForm) {
  struct Case {
    const char* text;
    OffloadKind kind;
    const char* target;  // canonical target ID, "" when none
    const char* canonical;
  };
  const Case cases[] = {
      {"hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+", OffloadKind::HipV4, "gfx90a:xnack+",
       "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+"},
      {"hip-amdgcn-amd-amdhsa--gfx1030", OffloadKind::Hip, "gfx1030", "hip-amdgcn-amd-amdhsa--gfx1030"},
      {"hcc-amdgcn-amd-amdhsa--gfx906", OffloadKind::Hcc, "gfx906", "hcc-amdgcn-amd-amdhsa--gfx906"},
      {"hipv4-amdgcn-amd-amdhsa-unknown-gfx90a", OffloadKind::HipV4, "gfx90a", "hipv4-amdgcn-amd-amdhsa--gfx90a"},
      {"hipv4-amdgcn-amd-amdhsa--gfx908:xnack-:sramecc+", OffloadKind::HipV4, "gfx908:sramecc+:xnack-",
       "hipv4-amdgcn-amd-amdhsa--gfx908:sramecc+:xnack-"},
      {"hipv4-amdgcn-amd-amdhsa--gfx10-3-generic", OffloadKind::HipV4, "gfx10-3-generic",
       "hipv4-amdgcn-amd-amdhsa--gfx10-3-generic"},
      {"openmp-amdgcn-amd-amdhsa--gfx90a", OffloadKind::OpenMP, "gfx90a", "openmp-amdgcn-amd-amdhsa--gfx90a"},
      {"host-x86_64-unknown-linux-gnu-", OffloadKind::Host, "", "host-x86_64-unknown-linux-gnu-"},
      {"host-x86_64-unknown-linux", OffloadKind::Host, "", "host-x86_64-unknown-linux"},
      {"host-x86_64-unknown-linux--", OffloadKind::Host, "", "host-x86_64-unknown-linux--"},
      {"openmp-x86_64-pc-linux-gnu-", OffloadKind::OpenMP, "", "openmp-x86_64-pc-linux-gnu-"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    auto id = EntryId::parse(c.text);
    ASSERT_TRUE(Succeeds(id));
    EXPECT_EQ(id->kind, c.kind);
    EXPECT_EQ(id->target ? id->target->str() : "", c.target);
    EXPECT_EQ(id->canonical(), c.canonical);
    EXPECT_EQ(id->text, c.text);
  }
}

TEST(EntryId, RecognisesSpirvInBothSpellings) {
  for (const char* text : {"hip-spirv64-amd-amdhsa--amdgcnspirv", "hipv4-spirv64-amd-amdhsa-unknown-amdgcnspirv"}) {
    auto id = EntryId::parse(text);
    ASSERT_TRUE(Succeeds(id)) << text;
    EXPECT_TRUE(id->is_spirv);
    EXPECT_FALSE(id->target.has_value());
  }
  EXPECT_TRUE(FailsWith(EntryId::parse("hip-spirv64-amd-amdhsa--amdgcnspirv:xnack+"), ErrorKind::Malformed));
}

TEST(EntryId, RejectsMalformedIds) {
  // bundler-22 turns a 3-part triple into this: the processor is lost.
  auto lost = EntryId::parse("hip-amdgcn-amd-amdhsa--");
  ASSERT_TRUE(FailsWith(lost, ErrorKind::Malformed));
  EXPECT_EQ(lost.error().location().field, "target");
  EXPECT_EQ(lost.error().location().offset, std::optional<std::uint64_t>(23));
  auto three_part = EntryId::parse("hip-amdgcn-amd-amdhsa-gfx90a");
  ASSERT_TRUE(FailsWith(three_part, ErrorKind::Malformed));
  EXPECT_EQ(three_part.error().location().field, "dashes");
  EXPECT_EQ(three_part.error().location().value, std::optional<std::uint64_t>(4));
  EXPECT_EQ(three_part.error().location().limit, std::optional<std::uint64_t>(5));
  auto empty = EntryId::parse("");
  ASSERT_TRUE(FailsWith(empty, ErrorKind::Malformed));
  EXPECT_EQ(empty.error().location().field, "kind");
  EXPECT_TRUE(FailsWith(EntryId::parse("hipv4"), ErrorKind::Malformed));
  EXPECT_TRUE(FailsWith(EntryId::parse("hipv4-amdgcn-amd-amdhsa--gfx9999"), ErrorKind::NotFound));
  EXPECT_TRUE(FailsWith(EntryId::parse("hipv4-amdgcn-amd-amdhsa--gfx1030:xnack-"), ErrorKind::Malformed));
  // Another environment is another triple: parsed, but not AMDHSA.
  auto other = EntryId::parse("hipv4-amdgcn-amd-amdhsa-gnu-gfx90a");
  ASSERT_TRUE(Succeeds(other));
  EXPECT_FALSE(other->is_amdhsa());
}

TEST(CodeObjectTarget, DecodesV4FlagsAndVersions) {
  auto read = [](std::uint32_t flags, std::uint8_t abi) {
    return read_code_object_target(amdgpu_elf_header(flags, abi));
  };
  auto v4 = read(0x3f | kXnackOff | kSrameccOn, kAbiV4);
  ASSERT_TRUE(Succeeds(v4));
  EXPECT_EQ(v4->target.str(), "gfx90a:sramecc+:xnack-");
  EXPECT_EQ(v4->code_object_version, 4u);
  EXPECT_EQ(v4->generic_version, 0u);
  auto any = read(0x3f | kXnackAny | kSrameccAny, kAbiV5);
  ASSERT_TRUE(Succeeds(any));
  EXPECT_EQ(any->target.str(), "gfx90a");
  EXPECT_EQ(any->target.xnack, FeatureState::Any);
  EXPECT_EQ(any->code_object_version, 5u);
  auto generic = read(0x51 | kXnackAny | generic_version(1), kAbiV6);
  ASSERT_TRUE(Succeeds(generic));
  EXPECT_EQ(generic->target.str(), "gfx9-generic");
  EXPECT_EQ(generic->generic_version, 1u);
  // The generic version byte means nothing before v6.
  auto v5_generic = read(0x51 | generic_version(7), kAbiV5);
  ASSERT_TRUE(Succeeds(v5_generic));
  EXPECT_EQ(v5_generic->generic_version, 0u);
  // v3: one bit per feature, read as ROCr and comgr read it: set is on, clear is off where the mode exists.
  auto v3 = read(0x3f | 0x100, kAbiV3);
  ASSERT_TRUE(Succeeds(v3));
  EXPECT_EQ(v3->target.xnack, FeatureState::On);
  EXPECT_EQ(v3->target.sramecc, FeatureState::Off);
  EXPECT_EQ(v3->target.str(), "gfx90a:sramecc-:xnack+");
  EXPECT_EQ(v3->code_object_version, 3u);
  EXPECT_EQ(read(0x2f | 0x200, kAbiV3)->target.str(), "gfx906:sramecc+:xnack-");
  EXPECT_EQ(read(0x36, kAbiV3)->target.str(), "gfx1030");  // no modes to be off
  // Newer processors than LLVM 22 are named from coload's table.
  auto gfx1250 = read(0x49 | kXnackOn, kAbiV6);
  ASSERT_TRUE(Succeeds(gfx1250));
  EXPECT_EQ(gfx1250->target.str(), "gfx1250:xnack+");  // e_flags xnack on, as ROCr names it
  // ROCm LLVM's gfx1250 objects say sramecc any (0x549): the same as unsupported there.
  auto rocm_gfx1250 = read(0x549, kAbiV6);
  ASSERT_TRUE(Succeeds(rocm_gfx1250));
  EXPECT_EQ(rocm_gfx1250->target, *TargetId::parse("gfx1250"));
  auto strict = read(0xeb, kAbiV6);
  ASSERT_TRUE(Succeeds(strict));
  EXPECT_EQ(strict->target.str(), "gfx1250-strict");
}

TEST(CodeObjectTarget, RefusesWhatIsNotAnHsaCodeObject) {
  // Each refusal names the header field at fault, its offset and the value found.
  std::vector<std::byte> header = amdgpu_elf_header(0x3f, kAbiV5);
  EXPECT_TRUE(FailsAtField(read_code_object_target(std::span(header).first(63)), ErrorKind::Truncated, "ELF header", 0,
                           std::nullopt, 63));
  EXPECT_TRUE(FailsAtField(read_code_object_target(amdgpu_elf_header(0x3f, 0)), ErrorKind::UnsupportedVersion,
                           "EI_ABIVERSION", 8, 0));
  EXPECT_TRUE(FailsAtField(read_code_object_target(amdgpu_elf_header(0x3f, 5)), ErrorKind::UnsupportedVersion,
                           "EI_ABIVERSION", 8, 5));
  EXPECT_TRUE(FailsAtField(read_code_object_target(amdgpu_elf_header(0x3f, kAbiV5, 65)), ErrorKind::Malformed,
                           "EI_OSABI", 7, 65));
  EXPECT_TRUE(FailsAtField(read_code_object_target(amdgpu_elf_header(0x3f, kAbiV5, 64, 62)), ErrorKind::Malformed,
                           "e_machine", 0x12, 62));
  auto unknown = read_code_object_target(amdgpu_elf_header(0x40, kAbiV5));  // gfx940, retired
  EXPECT_TRUE(FailsAtField(unknown, ErrorKind::NotFound, "e_flags", 0x30, 0x40));
  std::vector<std::byte> not_elf = header;
  not_elf[0] = std::byte{'B'};
  EXPECT_TRUE(FailsAtField(read_code_object_target(not_elf), ErrorKind::BadMagic, "EI_MAG", 0));
  std::vector<std::byte> elf32 = header;
  elf32[4] = std::byte{1};
  EXPECT_TRUE(FailsAtField(read_code_object_target(elf32), ErrorKind::Malformed, "EI_CLASS", 4, 1));
  std::vector<std::byte> big_endian = header;
  big_endian[5] = std::byte{2};
  EXPECT_TRUE(FailsAtField(read_code_object_target(big_endian), ErrorKind::Malformed, "EI_DATA", 5, 2));
}

// Fuzzer find: an e_ehsize past the bytes made the measured size exceed them.
TEST(CodeObjectSize, RefusesAHeaderSizePastTheBytes) {
  std::vector<std::byte> header = amdgpu_elf_header(0x3f, kAbiV5);
  EXPECT_EQ(*detail::code_object_size(header), 64u);
  header[52] = std::byte{0x40};
  header[53] = std::byte{0x30};  // e_ehsize 0x3040
  EXPECT_TRUE(FailsAtField(detail::code_object_size(header), ErrorKind::OutOfBounds, "e_ehsize", 0x34, 0x3040, 64));
}

// Every clang-22 code object fixture reads back as the target it was built for.
TEST(CodeObjectTarget, ReadsToolchainFixtures) {
  struct Case {
    const char* path;
    const char* target;
    unsigned version;
    unsigned generic_version;
  };
  const Case cases[] = {
      {"co/gfx90a.co", "gfx90a", 6, 0},
      {"co/gfx90a_xnack+.co", "gfx90a:xnack+", 6, 0},
      {"co/gfx908_sramecc+_xnack-.co", "gfx908:sramecc+:xnack-", 6, 0},
      {"co/gfx9-generic.co", "gfx9-generic", 6, 1},
      {"co/gfx12-generic.co", "gfx12-generic", 6, 1},
      {"co/gfx90a-cov4.co", "gfx90a", 4, 0},
      {"co/gfx90a-cov5.co", "gfx90a", 5, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.path);
    auto file = FatBinary::open(std::string(COLOAD_FIXTURE_DIR) + "/" + c.path);
    ASSERT_TRUE(Succeeds(file));
    auto target = read_code_object_target(file->source().bytes());
    ASSERT_TRUE(Succeeds(target));
    EXPECT_EQ(target->target.str(), c.target);
    EXPECT_EQ(target->code_object_version, c.version);
    EXPECT_EQ(target->generic_version, c.generic_version);
  }
}

TEST(Device, SpecFillsTableDefaultsAndOverrides) {
  auto mi300 = device_from_spec("gfx942");
  ASSERT_TRUE(Succeeds(mi300));
  EXPECT_EQ(mi300->str(), "gfx942:sramecc+:xnack-");
  EXPECT_TRUE(mi300->target.is_concrete());
  EXPECT_EQ(mi300->lds_bytes, 65536u);
  EXPECT_EQ(mi300->wave_sizes, kWave64);
  EXPECT_EQ(mi300->code_object_versions, (std::vector<unsigned>{4, 5, 6}));
  auto xnack_on = device_from_spec("gfx942:xnack+");
  ASSERT_TRUE(Succeeds(xnack_on));
  EXPECT_EQ(xnack_on->str(), "gfx942:sramecc+:xnack+");
  auto navi = device_from_spec("gfx1031", {.lds_bytes = 32768, .code_object_versions = std::vector<unsigned>{5, 4}});
  ASSERT_TRUE(Succeeds(navi));
  EXPECT_EQ(navi->str(), "gfx1031");
  EXPECT_EQ(navi->lds_bytes, 32768u);
  EXPECT_EQ(navi->code_object_versions, (std::vector<unsigned>{4, 5}));
  EXPECT_EQ(navi->wave_sizes, kWave32 | kWave64);
  auto gfx1250 = device_from_spec("gfx1250");
  ASSERT_TRUE(Succeeds(gfx1250));
  EXPECT_EQ(gfx1250->lds_bytes, 327680u);
  EXPECT_EQ(gfx1250->wave_sizes, kWave32);
}

// What rocminfo and ROCr print is accepted as a spec, and means the same device.
TEST(Device, SpecMayBeTheIsaNameARuntimePrints) {
  auto named = device_from_spec("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-");
  ASSERT_TRUE(Succeeds(named));
  EXPECT_EQ(named->target, device_from_spec("gfx90a:sramecc+:xnack-")->target);
  EXPECT_EQ(device_from_spec("amdgcn-amd-amdhsa--gfx1100")->str(), "gfx1100");
  EXPECT_TRUE(FailsWith(device_from_spec("amdgcn-amd-amdhsa--gfx9-generic"), ErrorKind::InvalidArgument));
  EXPECT_TRUE(FailsWith(device_from_spec("amdgcn-amd-amdhsa-gfx90a"), ErrorKind::NotFound));
  // gfx1250's xnack is always on: a runtime that says so names xnack-on
  // objects as it names the device (kept as On); saying off is an error.
  auto gfx1250 = device_from_spec("gfx1250:xnack+");
  ASSERT_TRUE(Succeeds(gfx1250));
  EXPECT_EQ(gfx1250->target.xnack, FeatureState::On);
  EXPECT_EQ(gfx1250->str(), "gfx1250:xnack+");
  EXPECT_EQ(device_from_spec("gfx1250")->target.xnack, FeatureState::Unsupported);
  EXPECT_TRUE(FailsWith(device_from_spec("gfx1250:xnack-"), ErrorKind::Malformed));
}

// ROCr reports gfx902/gfx909/gfx90c bare (PR #8237): a bare spec is that
// device, which runs only code leaving xnack "any"; `:xnack-` names an older ROCr's.
TEST(Device, ClientApusLeftBareHaveNoXnackMode) {
  for (const char* apu : {"gfx902", "gfx909", "gfx90c"}) {
    auto device = device_from_spec(apu);
    ASSERT_TRUE(Succeeds(device)) << apu;
    EXPECT_EQ(device->target.xnack, FeatureState::Unsupported) << apu;
    EXPECT_EQ(device->str(), apu);
  }
  EXPECT_EQ(device_from_spec("gfx90c:xnack-")->target.xnack, FeatureState::Off);
  EXPECT_EQ(device_from_spec("gfx900")->target.xnack, FeatureState::Off);
}

TEST(Device, SpecRejectsGenericTargetsAndBadVersions) {
  auto generic = device_from_spec("gfx9-generic");
  ASSERT_TRUE(FailsWith(generic, ErrorKind::InvalidArgument));
  EXPECT_EQ(generic.error().location().field, "processor");
  EXPECT_TRUE(FailsWith(device_from_spec("gfx9999"), ErrorKind::NotFound));
  auto none = device_from_spec("gfx90a", {.code_object_versions = std::vector<unsigned>{}});
  ASSERT_TRUE(FailsWith(none, ErrorKind::InvalidArgument));
  EXPECT_EQ(none.error().location().field, "code_object_versions");
  EXPECT_FALSE(none.error().location().value.has_value());
  auto two = device_from_spec("gfx90a", {.code_object_versions = std::vector<unsigned>{2}});
  ASSERT_TRUE(FailsWith(two, ErrorKind::InvalidArgument));
  EXPECT_EQ(two.error().location().field, "code_object_versions");
  EXPECT_EQ(two.error().location().value, std::optional<std::uint64_t>(2));
  auto versions = parse_code_object_versions("6,4,4");
  ASSERT_TRUE(Succeeds(versions));
  EXPECT_EQ(*versions, (std::vector<unsigned>{4, 6}));
  for (const char* bad : {"", "4,", "x", "7", "2", "4,,5", "-4", "4 "}) {
    EXPECT_TRUE(FailsWith(parse_code_object_versions(bad), ErrorKind::InvalidArgument)) << bad;
  }
  // The item at fault, by its offset in the list, and its value when it is a number.
  auto seven = parse_code_object_versions("4,5,7");
  ASSERT_TRUE(FailsWith(seven, ErrorKind::InvalidArgument));
  EXPECT_EQ(seven.error().location().field, "code_object_versions");
  EXPECT_EQ(seven.error().location().offset, std::optional<std::uint64_t>(4));
  EXPECT_EQ(seven.error().location().value, std::optional<std::uint64_t>(7));
  auto word = parse_code_object_versions("4,x");
  ASSERT_TRUE(FailsWith(word, ErrorKind::InvalidArgument));
  EXPECT_EQ(word.error().location().offset, std::optional<std::uint64_t>(2));
  EXPECT_FALSE(word.error().location().value.has_value());
}

}  // namespace
}  // namespace coload
