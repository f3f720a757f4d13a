// CodeObject::read's checks of what the symbol tables and kernel descriptors
// say against the metadata, on hand-built objects: descriptor symbols, the
// descriptor's fields and reserved bits, kernel entry points, and the
// object-wide checks of the metadata target and version.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <string>

#include "code_object_test_support.h"
#include "coload/code_object.h"
#include "support/elf_writer.h"
#include "test_util.h"

namespace coload {
namespace {

using testing::ElfSpec;
using testing::FailsWith;
using testing::KernelSpec;
using testing::SectionPatch;
using testing::SegmentPatch;
using testing::Succeeds;
using namespace code_object_test;

// ---------------------------------------------------------------------------
// Symbol tables.

TEST(CodeObjectSymbols, TableChecks) {
  auto patched = [](SectionPatch patch) {
    ElfSpec spec = valid_spec();
    spec.section_patches = {std::move(patch)};
    return read(spec);
  };
  EXPECT_TRUE(FailsWith(patched({.name = ".symtab", .sh_entsize = 16}), ErrorKind::Malformed));
  EXPECT_TRUE(FailsWith(patched({.name = ".symtab", .sh_size = 0x100000}), ErrorKind::OutOfBounds));
  EXPECT_TRUE(FailsWith(patched({.name = ".symtab", .sh_size = 24 * 2 + 7}), ErrorKind::Malformed));
  EXPECT_TRUE(FailsWith(patched({.name = ".symtab", .sh_link = 1}), ErrorKind::Malformed));  // .note
  EXPECT_TRUE(FailsWith(patched({.name = ".symtab", .sh_link = 99}), ErrorKind::Malformed));
  EXPECT_TRUE(FailsWith(patched({.name = ".symtab", .sh_link = 0}), ErrorKind::Malformed));
  EXPECT_TRUE(FailsWith(patched({.name = ".strtab", .sh_size = 0x100000}), ErrorKind::OutOfBounds));
  // The last name ("k") loses its NUL.
  EXPECT_TRUE(FailsWith(patched({.name = ".strtab", .sh_size = 1 + 5 + 1}), ErrorKind::Malformed));
}

TEST(CodeObjectSymbols, SymbolChecks) {
  ElfSpec spec = valid_spec();
  spec.kernels[0].descriptor_overrides.st_name = 0x1000;
  EXPECT_TRUE(FailsWith(read(spec), ErrorKind::OutOfBounds));
  spec = valid_spec();
  spec.kernels[0].function_overrides.st_shndx = 50;
  EXPECT_TRUE(FailsWith(read(spec), ErrorKind::Malformed));
  // Reserved indices (SHN_ABS) are symbols' business, not a table error.
  spec = valid_spec();
  spec.kernels[0].function_overrides.st_shndx = testing::kShnAbs;
  EXPECT_TRUE(Succeeds(read(spec)));
}

TEST(CodeObjectSymbols, NoSymbolTableLeavesEveryKernelWithoutDescriptor) {
  ElfSpec spec = valid_spec();
  spec.symbol_table = false;
  auto object = read(spec);
  EXPECT_TRUE(HasOneProblem(object, ErrorKind::NotFound, ".symbol", {"\"k\"", "\"k.kd\""}));
  EXPECT_FALSE(object->kernels()[0].descriptor.has_value());
}

// ---------------------------------------------------------------------------
// Descriptor symbols: problems, descriptor left empty.

::testing::AssertionResult DescriptorRejected(const ElfSpec& spec, ErrorKind kind, std::vector<std::string> words) {
  auto object = read(spec);
  auto result = HasOneProblem(object, kind, ".symbol", std::move(words));
  if (!result) return result;
  if (object->kernels()[0].descriptor) return ::testing::AssertionFailure() << "descriptor was read anyway";
  if (object->problems()[0].kernel != "k") return ::testing::AssertionFailure() << "problem names no kernel";
  return ::testing::AssertionSuccess();
}

/// Where the writer puts the first descriptor.
std::uint64_t first_descriptor_address() {
  auto object = read(valid_spec());
  return object && object->kernels()[0].descriptor ? object->kernels()[0].descriptor->address : 0;
}

TEST(CodeObjectDescriptor, SymbolRules) {
  std::uint64_t kd = first_descriptor_address();
  ASSERT_NE(kd, 0u);
  ElfSpec spec = valid_spec();
  spec.kernels[0].descriptor_overrides.st_type = testing::kSttFunc;
  EXPECT_TRUE(DescriptorRejected(spec, ErrorKind::Malformed, {"STT_FUNC", "k.kd"}));
  spec = valid_spec();
  spec.kernels[0].descriptor_overrides.st_size = 32;
  EXPECT_TRUE(DescriptorRejected(spec, ErrorKind::Malformed, {"st_size 32"}));
  spec = valid_spec();
  spec.kernels[0].descriptor_overrides.st_value = kd + 8;  // inside .rodata, not 64-aligned
  EXPECT_TRUE(DescriptorRejected(spec, ErrorKind::Malformed, {"not 64-byte aligned"}));
  spec = valid_spec();
  spec.kernels[0].descriptor_overrides.st_shndx = testing::kShnAbs;
  EXPECT_TRUE(DescriptorRejected(spec, ErrorKind::Malformed, {"0xfff1"}));
  spec = valid_spec();
  spec.kernels[0].descriptor_overrides.st_value = kd + 64;  // just past .rodata
  EXPECT_TRUE(DescriptorRejected(spec, ErrorKind::OutOfBounds, {"outside section"}));
  spec.kernels[0].descriptor_overrides.st_value = kd - 64;  // just before it
  EXPECT_TRUE(DescriptorRejected(spec, ErrorKind::OutOfBounds, {"outside section"}));
  spec = valid_spec();
  spec.section_patches = {SectionPatch{.name = ".rodata", .sh_type = testing::kShtNobits}};
  EXPECT_TRUE(DescriptorRejected(spec, ErrorKind::Malformed, {"SHT_NOBITS"}));
  // Addresses map to file bytes through the section's sh_addr and sh_offset:
  // moved by 0x10000 together, they name the same descriptor bytes.
  spec = valid_spec();
  spec.kernels[0].descriptor_overrides.st_value = kd + 0x10000;
  spec.section_patches = {SectionPatch{.name = ".rodata", .sh_addr = kd + 0x10000}};
  auto object = read(spec);
  ASSERT_TRUE(Succeeds(object));
  ASSERT_TRUE(object->kernels()[0].descriptor.has_value());
  EXPECT_EQ(object->kernels()[0].descriptor->address, kd + 0x10000);
  EXPECT_EQ(object->kernels()[0].descriptor->kernarg_size, 8u);
  EXPECT_TRUE(problems_on(*object, "kernarg_size").empty());
}

TEST(CodeObjectDescriptor, SymbolNamedByTheMetadataNotBuiltFromTheName) {
  Meta meta;
  meta.kernels[0].symbol = "descriptor_of_k";
  auto object = read(valid_spec(meta));
  ASSERT_TRUE(Succeeds(object));
  EXPECT_TRUE(object->problems().empty()) << all_problems(*object);
  EXPECT_TRUE(object->kernels()[0].descriptor.has_value());

  // A missing `.symbol` is not replaced by a `<name>.kd` that happens to exist.
  ElfSpec spec = valid_spec();
  spec.metadata_note = metadata(Meta{.kernels = {MetaKernel{.symbol = "missing.kd"}}});
  object = read(spec);
  ASSERT_TRUE(Succeeds(object));
  EXPECT_FALSE(object->kernels()[0].descriptor.has_value());
  auto missing = problems_on(*object, ".symbol");
  ASSERT_EQ(missing.size(), 2u) << all_problems(*object);
  EXPECT_EQ(missing[0].kind, ErrorKind::NotFound);
  EXPECT_NE(missing[0].message.find("missing.kd"), std::string::npos);
  EXPECT_EQ(object->orphan_descriptors().size(), 1u);  // k.kd
}

// ---------------------------------------------------------------------------
// Cross-checks (docs/format.md, "Kernel descriptor").

TEST(CodeObjectDescriptor, SizesMustEqualTheMetadata) {
  struct Case {
    std::size_t offset;
    std::string field;
  };
  for (const Case& c :
       {Case{0, "group_segment_fixed_size"}, Case{4, "private_segment_fixed_size"}, Case{8, "kernarg_size"}}) {
    SCOPED_TRACE(c.field);
    ElfSpec spec = valid_spec();
    set_u32(spec.kernels[0].descriptor, c.offset, 1234);
    auto object = read(spec);
    EXPECT_TRUE(HasOneProblem(object, ErrorKind::SizeMismatch, c.field, {"1234", "\"k\"", "k.kd"}));
    EXPECT_TRUE(object->kernels()[0].descriptor.has_value());  // still decoded
  }
}

TEST(CodeObjectDescriptor, KernargSizeZeroIsAProblemFromV4) {
  ElfSpec spec = valid_spec();
  set_u32(spec.kernels[0].descriptor, 8, 0);
  EXPECT_TRUE(HasOneProblem(read(spec), ErrorKind::SizeMismatch, "kernarg_size", {"kernarg_size 0", "8"}));
}

TEST(CodeObjectDescriptor, WaveSizeBit) {
  ElfSpec spec = valid_spec();
  spec.kernels[0].descriptor[57] |= std::byte{0x04};  // bit 10 of kernel_code_properties
  EXPECT_TRUE(HasOneProblem(read(spec), ErrorKind::Malformed, "wavefront_size", {"is set", "64"}));

  Meta meta;
  meta.kernels[0].wavefront = 32;
  spec = valid_spec(meta);
  spec.kernels[0].descriptor[57] &= std::byte{0xfb};
  EXPECT_TRUE(HasOneProblem(read(spec), ErrorKind::Malformed, "wavefront_size", {"is clear", "32"}));
}

TEST(CodeObjectDescriptor, DynamicStackBitWhenTheMetadataSaysSo) {
  Meta meta;
  meta.kernels[0].uses_dynamic_stack = true;
  ElfSpec spec = valid_spec(meta);
  EXPECT_TRUE(read(spec)->problems().empty());
  spec.kernels[0].descriptor[57] &= std::byte{0xf7};  // clear bit 11
  EXPECT_TRUE(HasOneProblem(read(spec), ErrorKind::Malformed, "uses_dynamic_stack", {"clear", "true"}));
  // Absent from the metadata (v4): not compared.
  spec = valid_spec();
  spec.kernels[0].descriptor[57] |= std::byte{0x08};
  EXPECT_TRUE(read(spec)->problems().empty());
}

TEST(CodeObjectDescriptor, WorkgroupProcessorModeOnGfx10Plus) {
  Meta meta;
  meta.target = "amdgcn-amd-amdhsa--gfx1100";
  meta.kernels[0].wavefront = 32;
  meta.kernels[0].workgroup_processor_mode = 1;
  ElfSpec spec = valid_spec(meta);
  spec.e_flags = testing::kMachGfx1100;
  auto object = read(spec);
  EXPECT_TRUE(object->problems().empty()) << all_problems(*object);
  set_u32(spec.kernels[0].descriptor, 48, 0x00af0000);  // WGP_MODE clear
  EXPECT_TRUE(HasOneProblem(read(spec), ErrorKind::Malformed, "workgroup_processor_mode", {"clear", "1"}));

  // Before GFX10 bit 29 is reserved and the key is not compared.
  meta = Meta{};
  meta.kernels[0].workgroup_processor_mode = 1;
  spec = valid_spec(meta);
  set_u32(spec.kernels[0].descriptor, 48, 0x00af0000);
  EXPECT_TRUE(read(spec)->problems().empty());
}

TEST(CodeObjectDescriptor, GranulatedLdsSizeMustBeZero) {
  ElfSpec spec = valid_spec();
  set_u32(spec.kernels[0].descriptor, 52, 0x90 | (3u << 15));
  EXPECT_TRUE(HasOneProblem(read(spec), ErrorKind::Malformed, "compute_pgm_rsrc2", {"GRANULATED_LDS_SIZE", "3"}));
}

TEST(CodeObjectDescriptor, ReservedBytesMustBeZero) {
  for (auto [offset, field] : {std::pair<std::size_t, std::string>{13, "reserved0"},
                               {30, "reserved1"},
                               {43, "reserved1"},
                               {63, "reserved3"}}) {
    SCOPED_TRACE(offset);
    ElfSpec spec = valid_spec();
    spec.kernels[0].descriptor[offset] = std::byte{0x80};
    EXPECT_TRUE(HasOneProblem(read(spec), ErrorKind::Malformed, field, {"offset " + std::to_string(offset)}));
  }
}

TEST(CodeObjectDescriptor, ReservedKernelCodePropertiesMustBeZero) {
  for (auto [bit, shown] :
       {std::pair<unsigned, std::string>{7, "0x80"}, {9, "0x200"}, {12, "0x1000"}, {15, "0x8000"}}) {
    SCOPED_TRACE(bit);
    ElfSpec spec = valid_spec();
    std::uint16_t properties = 0x0008 | (1u << bit);
    std::memcpy(spec.kernels[0].descriptor.data() + 56, &properties, sizeof properties);
    EXPECT_TRUE(HasOneProblem(read(spec), ErrorKind::Malformed, "kernel_code_properties",
                              {"offset 56", "reserved bits " + shown}));
  }
}

// compute_pgm_rsrc3 and kernarg preloading by processor, as clang-22 writes them.
TEST(CodeObjectDescriptor, Rsrc3AndKernargPreloadOnlyWhereTheProcessorHasThem) {
  auto with = [](std::uint32_t e_flags, std::string target, std::uint32_t rsrc3, std::uint16_t preload) {
    Meta meta;
    meta.target = "amdgcn-amd-amdhsa--" + target;
    ElfSpec spec = valid_spec(meta);
    spec.e_flags = e_flags;
    set_u32(spec.kernels[0].descriptor, 44, rsrc3);
    std::memcpy(spec.kernels[0].descriptor.data() + 58, &preload, sizeof preload);
    return read(spec);
  };
  constexpr std::uint32_t kGfx906 = 0x2f, kGfx942 = 0x4c, kGfx1030 = 0x36, kGfx1250 = 0x49;
  // gfx90a and the gfx940 family use both (ACCUM_OFFSET, a 4-dword preload).
  constexpr std::uint32_t kAny = testing::kXnackAny | testing::kSrameccAny;
  EXPECT_TRUE(with(testing::kMachGfx90a | kAny, "gfx90a", 0x1, 4)->problems().empty());
  EXPECT_TRUE(with(kGfx942 | kAny, "gfx942", 0x1, 4)->problems().empty());
  EXPECT_TRUE(with(kGfx1250, "gfx1250", 0, 4)->problems().empty());
  EXPECT_TRUE(with(kGfx1030, "gfx1030", 0x3c0, 0)->problems().empty());  // GFX10+ rsrc3 fields
  EXPECT_TRUE(HasOneProblem(with(kGfx906 | kAny, "gfx906", 0x1, 0), ErrorKind::Malformed, "compute_pgm_rsrc3",
                            {"offset 44", "gfx906"}));
  EXPECT_TRUE(HasOneProblem(with(kGfx906 | kAny, "gfx906", 0, 4), ErrorKind::Malformed, "kernarg_preload",
                            {"offset 58", "gfx906"}));
  EXPECT_TRUE(HasOneProblem(with(kGfx1030, "gfx1030", 0, 4), ErrorKind::Malformed, "kernarg_preload", {"gfx1030"}));
}

// ---------------------------------------------------------------------------
// Entry points.

void set_entry_offset(KernelSpec& kernel, std::int64_t offset) {
  kernel.link_entry = false;
  std::memcpy(kernel.descriptor.data() + 16, &offset, sizeof offset);
}

TEST(CodeObjectEntry, MustBeAlignedExecutableAndAtTheFunction) {
  auto object = read(valid_spec());
  ASSERT_TRUE(Succeeds(object));
  std::uint64_t kd = object->kernels()[0].descriptor->address;
  std::int64_t linked = object->kernels()[0].descriptor->kernel_code_entry_byte_offset;

  ElfSpec spec = valid_spec();
  set_entry_offset(spec.kernels[0], linked + 4);
  object = read(spec);
  ASSERT_TRUE(Succeeds(object));
  auto entry = problems_on(*object, "kernel_code_entry_byte_offset");
  ASSERT_EQ(entry.size(), 2u) << all_problems(*object);
  EXPECT_NE(entry[0].message.find("not 256-byte aligned"), std::string::npos);
  EXPECT_NE(entry[1].message.find("function symbol \"k\""), std::string::npos);

  // Aligned, executable, but not where the function symbol is.
  spec = valid_spec();
  spec.kernels[0].function_overrides.st_value = kd + linked + 0x100;
  EXPECT_TRUE(HasOneProblem(read(spec), ErrorKind::Malformed, "kernel_code_entry_byte_offset", {"function symbol"}));
  // Without a function symbol there is nothing to compare.
  spec = valid_spec();
  spec.kernels[0].function_symbol.clear();
  EXPECT_TRUE(read(spec)->problems().empty());

  // Not in an executable segment.
  spec = valid_spec();
  spec.segment_patches = {SegmentPatch{.index = 1, .p_flags = 4}};
  EXPECT_TRUE(
      HasOneProblem(read(spec), ErrorKind::OutOfBounds, "kernel_code_entry_byte_offset", {"no executable PT_LOAD"}));

  // An offset that wraps.
  spec = valid_spec();
  set_entry_offset(spec.kernels[0], std::numeric_limits<std::int64_t>::min());
  spec.kernels[0].function_symbol.clear();
  EXPECT_TRUE(HasOneProblem(read(spec), ErrorKind::Overflow, "kernel_code_entry_byte_offset", {"wraps"}));
}

// ---------------------------------------------------------------------------
// Object-wide checks.

TEST(CodeObjectWide, MetadataTargetMustDescribeEFlags) {
  ElfSpec spec = valid_spec();
  spec.e_flags = testing::kMachGfx90a | testing::kXnackOff | testing::kSrameccAny;
  EXPECT_TRUE(HasOneProblem(read(spec), ErrorKind::Malformed, "amdhsa.target",
                            {"amdgcn-amd-amdhsa--gfx90a\"", "gfx90a:xnack-"}));

  Meta meta;
  meta.target = "amdgcn-amd-amdhsa--gfx90a:xnack-";
  spec = valid_spec(meta);
  spec.e_flags = testing::kMachGfx90a | testing::kXnackOff | testing::kSrameccAny;
  EXPECT_TRUE(read(spec)->problems().empty());

  meta.target = "gfx90a:xnack-";  // no triple
  spec.metadata_note = metadata(meta);
  EXPECT_TRUE(HasOneProblem(read(spec), ErrorKind::Malformed, "amdhsa.target"));

  meta.target.clear();
  spec.metadata_note = metadata(meta);
  EXPECT_TRUE(HasOneProblem(read(spec), ErrorKind::NotFound, "amdhsa.target", {"missing"}));
}

TEST(CodeObjectWide, MetadataVersionMustFitTheAbiVersion) {
  Meta meta;
  meta.minor = 1;
  EXPECT_TRUE(HasOneProblem(read(valid_spec(meta)), ErrorKind::Malformed, "amdhsa.version", {"1.1", "v5"}));
  ElfSpec spec = valid_spec(meta);
  spec.abi_version = testing::kAbiV4;
  EXPECT_TRUE(read(spec)->problems().empty());
}

}  // namespace
}  // namespace coload
