// CodeObject::read: real clang-22 code objects, and hand-built ones (the ELF
// writer in tests/support plus LLVM's msgpack writer) for every check of the
// ELF layer and of the kernel descriptors.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "code_object_test_support.h"
#include "coload/code_object.h"
#include "llvm/Object/ELFObjectFile.h"
#include "support/bundle_writer.h"
#include "support/elf_writer.h"
#include "test_util.h"

namespace coload {
namespace {

using testing::ElfSpec;
using testing::FailsWith;
using testing::KernelSpec;
using testing::NoteRecord;
using testing::SectionPatch;
using testing::SegmentPatch;
using testing::Succeeds;
using testing::write_amdgpu_elf;
using namespace code_object_test;

// ---------------------------------------------------------------------------
// Real code objects.

/// Symbol values read with LLVM's object library, independently of the reader.
std::map<std::string, std::uint64_t> symbol_values(const std::vector<std::byte>& bytes) {
  std::map<std::string, std::uint64_t> values;
  llvm::StringRef data(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  auto object = llvm::object::ObjectFile::createObjectFile(llvm::MemoryBufferRef(data, "fixture"));
  if (!object) {
    llvm::consumeError(object.takeError());
    return values;
  }
  for (const auto& symbol : (*object)->symbols()) {
    auto name = symbol.getName();
    auto value = symbol.getValue();
    if (!name || !value) {
      llvm::consumeError(name.takeError());
      llvm::consumeError(value.takeError());
      continue;
    }
    values.emplace(name->str(), *value);
  }
  return values;
}

struct FixtureCase {
  const char* path;
  unsigned version;
  const char* target;
  std::uint32_t wavefront;
};

class Fixture : public ::testing::TestWithParam<FixtureCase> {};

TEST_P(Fixture, ReadsEveryKernelWithDescriptorsMatchingMetadata) {
  const FixtureCase& param = GetParam();
  auto bytes = fixture(param.path);
  ASSERT_FALSE(bytes.empty()) << param.path;
  auto object = CodeObject::read(bytes);
  ASSERT_TRUE(Succeeds(object));
  EXPECT_TRUE(object->problems().empty()) << all_problems(*object);
  EXPECT_TRUE(object->orphan_descriptors().empty());
  EXPECT_EQ(object->size(), bytes.size());
  EXPECT_EQ(object->target().code_object_version, param.version);
  EXPECT_EQ(object->target().target.str(), param.target);
  EXPECT_EQ(object->metadata().target, std::string("amdgcn-amd-amdhsa--") + param.target);
  EXPECT_EQ(object->metadata().version_major, 1u);
  EXPECT_EQ(object->metadata().version_minor, param.version == 4 ? 1u : 2u);

  auto symbols = symbol_values(bytes);
  std::set<std::string> names;
  for (const Kernel& kernel : object->kernels()) {
    SCOPED_TRACE(kernel.name);
    names.insert(kernel.name);
    EXPECT_EQ(kernel.symbol, kernel.name + ".kd");
    EXPECT_EQ(object->find_kernel(kernel.name), &kernel);
    ASSERT_TRUE(kernel.descriptor.has_value());
    const KernelDescriptor& kd = *kernel.descriptor;
    EXPECT_EQ(kd.address, symbols.at(kernel.symbol));
    EXPECT_EQ(kd.group_segment_fixed_size, kernel.group_segment_fixed_size);
    EXPECT_EQ(kd.private_segment_fixed_size, kernel.private_segment_fixed_size);
    EXPECT_EQ(kd.kernarg_size, kernel.kernarg_segment_size);
    EXPECT_EQ(kernel.wavefront_size, param.wavefront);
    EXPECT_EQ(kd.wave32(), param.wavefront == 32);
    std::uint64_t entry = kd.address + static_cast<std::uint64_t>(kd.kernel_code_entry_byte_offset);
    EXPECT_EQ(entry, symbols.at(kernel.name));
    EXPECT_EQ(entry % 256, 0u);
  }
  EXPECT_EQ(names, (std::set<std::string>{"_Z7add_onePii", "_Z5saxpyfPKfPfi", "_Z12scale_doublePddx"}));
  EXPECT_EQ(object->find_kernel("_Z7add_onePii.kd"), nullptr);
}

INSTANTIATE_TEST_SUITE_P(Toolchain, Fixture,
                         ::testing::Values(FixtureCase{"co/gfx90a-cov4.co", 4, "gfx90a", 64},
                                           FixtureCase{"co/gfx90a-cov5.co", 5, "gfx90a", 64},
                                           FixtureCase{"co/gfx90a-cov6.co", 6, "gfx90a", 64},
                                           FixtureCase{"co/gfx9-generic.co", 6, "gfx9-generic", 64},
                                           FixtureCase{"co/gfx1100.co", 6, "gfx1100", 32},
                                           FixtureCase{"co/gfx908_sramecc+_xnack-.co", 6, "gfx908:sramecc+:xnack-",
                                                       64}));

TEST(CodeObjectFixtures, EveryToolchainCodeObjectReadsWithoutProblems) {
  std::ifstream in(kFixtures / "fixtures.tsv");
  std::string line;
  std::size_t read = 0;
  while (std::getline(in, line)) {
    std::stringstream cells(line);
    std::string path, kind;
    std::getline(cells, path, '\t');
    std::getline(cells, kind, '\t');
    if (kind != "code_object") continue;
    SCOPED_TRACE(path);
    auto object = CodeObject::read(fixture(path));
    ASSERT_TRUE(Succeeds(object));
    EXPECT_TRUE(object->problems().empty()) << all_problems(*object);
    EXPECT_FALSE(object->kernels().empty());
    for (const Kernel& kernel : object->kernels()) EXPECT_TRUE(kernel.descriptor.has_value()) << kernel.name;
    if (path.starts_with("co/")) EXPECT_EQ(object->kernels().size(), 3u);  // tests/kernels/vector_ops.hip
    ++read;
  }
  EXPECT_GE(read, 10u);
}

TEST(CodeObjectFixtures, NoTruncatedPrefixIsAccepted) {
  auto bytes = fixture("co/gfx90a-cov5.co");
  ASSERT_FALSE(bytes.empty());
  for (std::size_t size = 0; size < bytes.size(); ++size) {
    auto object = CodeObject::read(std::span<const std::byte>(bytes).first(size));
    ASSERT_FALSE(object.has_value()) << "a " << size << "-byte prefix of " << bytes.size() << " was accepted";
    ASSERT_FALSE(object.error().message().empty());
  }
}

TEST(CodeObjectFixtures, ReadsFromAnUnalignedBufferAndIgnoresTrailingBytes) {
  auto bytes = fixture("co/gfx1100.co");
  std::vector<std::byte> shifted(bytes.size() + 9, std::byte{0x5a});
  std::memcpy(shifted.data() + 1, bytes.data(), bytes.size());
  auto object = CodeObject::read(std::span<const std::byte>(shifted).subspan(1));
  ASSERT_TRUE(Succeeds(object));
  EXPECT_TRUE(object->problems().empty()) << all_problems(*object);
  EXPECT_EQ(object->size(), bytes.size());
  EXPECT_EQ(object->kernels().size(), 3u);
}

// ---------------------------------------------------------------------------
// Hand-built objects: the valid baseline.

TEST(CodeObjectWriter, MinimalObjectReadsCleanly) {
  auto object = read(valid_spec());
  ASSERT_TRUE(Succeeds(object));
  EXPECT_TRUE(object->problems().empty()) << all_problems(*object);
  ASSERT_EQ(object->kernels().size(), 1u);
  const Kernel* kernel = object->find_kernel("k");
  ASSERT_NE(kernel, nullptr);
  ASSERT_TRUE(kernel->descriptor.has_value());
  EXPECT_EQ(kernel->descriptor->kernarg_size, 8u);
  EXPECT_EQ(kernel->descriptor->address % 64, 0u);
  EXPECT_EQ((kernel->descriptor->address + kernel->descriptor->kernel_code_entry_byte_offset) % 256, 0u);
  EXPECT_EQ(kernel->layout.explicit_size, 8u);
  EXPECT_EQ(object->target().code_object_version, 5u);
  EXPECT_EQ(object->size(), write_amdgpu_elf(valid_spec()).size());
}

TEST(CodeObjectWriter, NoTruncatedPrefixIsAccepted) {
  auto bytes = write_amdgpu_elf(valid_spec());
  for (std::size_t size = 0; size < bytes.size(); ++size) {
    EXPECT_FALSE(CodeObject::read(std::span<const std::byte>(bytes).first(size)).has_value()) << size;
  }
}

TEST(CodeObjectWriter, SeveralKernelsAndADynsymOnlyTable) {
  Meta meta;
  meta.kernels = {MetaKernel{.name = "a", .symbol = "a.kd"}, MetaKernel{.name = "b", .symbol = "b.kd", .group = 4096}};
  ElfSpec spec = valid_spec(meta);
  spec.symbol_table_type = testing::kShtDynsym;
  auto object = read(spec);
  ASSERT_TRUE(Succeeds(object));
  EXPECT_TRUE(object->problems().empty()) << all_problems(*object);
  ASSERT_NE(object->find_kernel("b"), nullptr);
  EXPECT_EQ(object->find_kernel("b")->descriptor->group_segment_fixed_size, 4096u);
}

TEST(CodeObjectWriter, CodeObjectV3AllowsAZeroDescriptorKernargSize) {
  Meta meta;
  meta.target.clear();
  meta.minor = 0;
  ElfSpec spec = valid_spec(meta);
  spec.abi_version = testing::kAbiV3;
  spec.e_flags = testing::kMachGfx90a;
  set_u32(spec.kernels[0].descriptor, 8, 0);
  auto object = read(spec);
  ASSERT_TRUE(Succeeds(object));
  EXPECT_EQ(object->target().code_object_version, 3u);
  EXPECT_TRUE(object->problems().empty()) << all_problems(*object);
}

// ---------------------------------------------------------------------------
// ELF header and tables: errors.

TEST(CodeObjectElf, HeaderErrors) {
  ElfSpec spec = valid_spec();
  spec.e_type = testing::kEtRel;
  EXPECT_TRUE(FailsWith(read(spec), ErrorKind::Malformed));
  spec.e_type = testing::kEtExec;
  EXPECT_TRUE(FailsWith(read(spec), ErrorKind::Malformed));

  spec = valid_spec();
  spec.header.e_version = 0;
  EXPECT_TRUE(FailsWith(read(spec), ErrorKind::Malformed));
  spec = valid_spec();
  spec.header.e_ehsize = 0x3040;  // would make the extent larger than the bytes
  EXPECT_TRUE(FailsWith(read(spec), ErrorKind::Malformed));
  spec.header.e_ehsize = 0;
  EXPECT_TRUE(FailsWith(read(spec), ErrorKind::Malformed));
  spec = valid_spec();
  spec.header.e_phentsize = 32;
  EXPECT_TRUE(FailsWith(read(spec), ErrorKind::Malformed));
  spec = valid_spec();
  spec.header.e_shentsize = 40;
  EXPECT_TRUE(FailsWith(read(spec), ErrorKind::Malformed));
  spec = valid_spec();
  spec.header.e_shstrndx = 99;
  EXPECT_TRUE(FailsWith(read(spec), ErrorKind::Malformed));

  // The header errors read_code_object_target reports.
  spec = valid_spec();
  spec.machine = 62;
  EXPECT_TRUE(FailsWith(read(spec), ErrorKind::Malformed));
  spec = valid_spec();
  spec.abi_version = 0;
  EXPECT_TRUE(FailsWith(read(spec), ErrorKind::UnsupportedVersion));
  spec = valid_spec();
  spec.e_flags = 0;
  EXPECT_TRUE(FailsWith(read(spec), ErrorKind::NotFound));
  EXPECT_TRUE(FailsWith(CodeObject::read({}), ErrorKind::Truncated));
}

TEST(CodeObjectElf, TablesOutsideTheBytes) {
  ElfSpec spec = valid_spec();
  spec.header.e_phoff = 0x100000;
  EXPECT_TRUE(FailsWith(read(spec), ErrorKind::OutOfBounds));
  spec.header.e_phoff = std::numeric_limits<std::uint64_t>::max() - 8;
  EXPECT_TRUE(FailsWith(read(spec), ErrorKind::Overflow));
  spec = valid_spec();
  spec.header.e_shoff = 0x100000;
  EXPECT_TRUE(FailsWith(read(spec), ErrorKind::OutOfBounds));
  spec = valid_spec();
  spec.header.e_shnum = 200;
  EXPECT_TRUE(FailsWith(read(spec), ErrorKind::OutOfBounds));
}

TEST(CodeObjectElf, SectionAndSegmentRangesOutsideTheBytes) {
  ElfSpec spec = valid_spec();
  spec.section_patches = {SectionPatch{.name = ".rodata", .sh_offset = 0x100000}};
  EXPECT_TRUE(FailsWith(read(spec), ErrorKind::OutOfBounds));
  spec.section_patches = {SectionPatch{.name = ".rodata", .sh_offset = 64, .sh_size = ~std::uint64_t{0}}};
  EXPECT_TRUE(FailsWith(read(spec), ErrorKind::Overflow));
  spec.section_patches = {SectionPatch{.name = ".shstrtab", .sh_size = 0x100000}};
  EXPECT_TRUE(FailsWith(read(spec), ErrorKind::OutOfBounds));
  spec = valid_spec();
  spec.segment_patches = {SegmentPatch{.p_type = testing::kPtLoad, .p_filesz = 0x100000}};
  EXPECT_TRUE(FailsWith(read(spec), ErrorKind::OutOfBounds));
  // A NOBITS section may describe more than the file holds.
  spec = valid_spec();
  spec.section_patches = {SectionPatch{.name = ".shstrtab", .sh_type = testing::kShtNobits, .sh_size = 0x100000}};
  EXPECT_TRUE(Succeeds(read(spec)));
  // But its offset counts: ROCr's ElfSize would take this object for 1 GiB.
  spec.section_patches = {SectionPatch{.name = ".shstrtab", .sh_type = testing::kShtNobits, .sh_offset = 0x40000000}};
  auto far = read(spec);
  ASSERT_TRUE(FailsWith(far, ErrorKind::OutOfBounds));
  EXPECT_TRUE(far.error().location().field.starts_with("section ")) << far.error().location().field;
  EXPECT_EQ(far.error().location().value, std::optional<std::uint64_t>(0x40000000));
  EXPECT_EQ(far.error().location().limit, std::optional<std::uint64_t>(write_amdgpu_elf(spec).size()));
}

// ---------------------------------------------------------------------------
// The metadata note.

TEST(CodeObjectNote, NoneIsNotFound) {
  ElfSpec spec = valid_spec();
  spec.metadata_note.clear();
  EXPECT_TRUE(FailsWith(read(spec), ErrorKind::NotFound));
  // Records that are not the metadata note do not count.
  spec.notes = {NoteRecord{.name = "AMDGPU", .type = 33, .desc = metadata({})},
                NoteRecord{.name = "AMDGPX", .type = 32, .desc = metadata({})},
                NoteRecord{.name = "GNU", .type = 32, .desc = metadata({})}};
  EXPECT_TRUE(FailsWith(read(spec), ErrorKind::NotFound));
}

TEST(CodeObjectNote, OtherRecordsAreSkipped) {
  ElfSpec spec = valid_spec();
  spec.notes = {NoteRecord{.name = "AMDGPU", .type = 33, .desc = {std::byte{1}, std::byte{2}, std::byte{3}}},
                NoteRecord{.name = "GNU", .type = 1, .desc = {}}};
  EXPECT_TRUE(Succeeds(read(spec)));
}

TEST(CodeObjectNote, TwoMetadataNotesAreMalformed) {
  ElfSpec spec = valid_spec();
  spec.notes = {NoteRecord{.desc = spec.metadata_note}};
  auto object = read(spec);
  ASSERT_TRUE(FailsWith(object, ErrorKind::Malformed));
  // At the second note, with the count found.
  const ErrorLocation& at = object.error().location();
  EXPECT_EQ(at.field, "NT_AMDGPU_METADATA");
  EXPECT_TRUE(at.offset.has_value());
  EXPECT_EQ(at.value, std::optional<std::uint64_t>(2));
}

TEST(CodeObjectNote, DeclaredSizesOutsideTheSegment) {
  ElfSpec spec = valid_spec();
  // The field at fault and the size it declares; the limit is the region's size.
  auto at_field = [](const Expected<CodeObject>& object, std::string_view field, std::uint64_t size) {
    if (object) return;
    const ErrorLocation& at = object.error().location();
    EXPECT_EQ(at.field, field);
    EXPECT_TRUE(at.offset.has_value());
    EXPECT_EQ(at.value, std::optional<std::uint64_t>(size));
    EXPECT_TRUE(at.limit.has_value());
  };
  spec.notes = {NoteRecord{.name = "X", .type = 1, .desc = {}, .namesz = 0x1000}};
  auto name = read(spec);
  EXPECT_TRUE(FailsWith(name, ErrorKind::OutOfBounds));
  at_field(name, "namesz", 0x1000);
  spec.notes = {NoteRecord{.name = "X", .type = 1, .desc = {}, .descsz = 0x1000}};
  auto desc = read(spec);
  EXPECT_TRUE(FailsWith(desc, ErrorKind::OutOfBounds));
  at_field(desc, "descsz", 0x1000);
  spec.notes = {NoteRecord{.name = "X", .type = 1, .desc = {}, .namesz = 0xffffffff, .descsz = 0xffffffff}};
  auto both = read(spec);
  EXPECT_TRUE(FailsWith(both, ErrorKind::OutOfBounds));
  at_field(both, "namesz", 0xffffffff);
  spec.notes.clear();
  spec.segment_patches = {SegmentPatch{.p_filesz = 0x100000}};
  EXPECT_TRUE(FailsWith(read(spec), ErrorKind::OutOfBounds));
}

/// A metadata blob one byte past a multiple of 4, so its record needs 3 bytes of padding.
Meta unpadded_meta() {
  Meta meta;
  while (metadata(meta).size() % 4 != 1) meta.pad += "x";
  return meta;
}

TEST(CodeObjectNote, LastRecordWithoutTrailingPaddingIsAccepted) {
  ElfSpec spec = valid_spec(unpadded_meta());
  spec.drop_last_note_padding = true;
  auto object = read(spec);
  ASSERT_TRUE(Succeeds(object));
  EXPECT_TRUE(object->problems().empty()) << all_problems(*object);
}

TEST(CodeObjectNote, PartialPaddingOrAShortRecordHeaderIsTruncated) {
  Meta meta = unpadded_meta();
  std::uint64_t unpadded = 12 + 8 + metadata(meta).size();
  ElfSpec spec = valid_spec(meta);
  spec.segment_patches = {SegmentPatch{.p_filesz = unpadded + 1}};
  EXPECT_TRUE(FailsWith(read(spec), ErrorKind::Truncated));
  // Four bytes after the last record: too short for a record header.
  spec = valid_spec();
  spec.segment_patches = {SegmentPatch{.p_filesz = 12 + 8 + ((spec.metadata_note.size() + 3) & ~3u) + 4}};
  EXPECT_TRUE(FailsWith(read(spec), ErrorKind::Truncated));
}

TEST(CodeObjectNote, SegmentAlignmentMustBe4Or8) {
  ElfSpec spec = valid_spec();
  spec.segment_patches = {SegmentPatch{.p_align = 16}};
  EXPECT_TRUE(FailsWith(read(spec), ErrorKind::Malformed));
}

TEST(CodeObjectNote, SectionsAreTheFallbackWithoutPtNote) {
  ElfSpec spec = valid_spec();
  spec.note_segment = false;
  EXPECT_TRUE(Succeeds(read(spec)));
  spec.note_section_type = testing::kShtProgbits;
  EXPECT_TRUE(FailsWith(read(spec), ErrorKind::NotFound));
}

TEST(CodeObjectNote, MetadataThatDoesNotDecodeFailsTheRead) {
  ElfSpec spec = valid_spec();
  spec.metadata_note = {std::byte{0xc1}};  // a msgpack tag that is never used
  auto object = read(spec);
  EXPECT_TRUE(testing::FailsAtField(object, ErrorKind::Malformed, "metadata", 0));  // offset in the note
  EXPECT_NE(object.error().message().find("metadata note at offset"), std::string::npos);
}

TEST(CodeObjectOrphans, KdSymbolsWithoutMetadataAreReportedNeverKernels) {
  ElfSpec spec = valid_spec();
  KernelSpec ghost = kernel_spec(MetaKernel{.name = "ghost", .symbol = "ghost.kd"});
  spec.kernels.push_back(ghost);
  spec.also_dynsym = true;  // listed in both tables, reported once
  auto object = read(spec);
  ASSERT_TRUE(Succeeds(object));
  ASSERT_EQ(object->kernels().size(), 1u);
  EXPECT_EQ(object->find_kernel("ghost"), nullptr);
  ASSERT_EQ(object->orphan_descriptors().size(), 1u);
  EXPECT_EQ(object->orphan_descriptors()[0], "ghost.kd");
  EXPECT_TRUE(HasOneProblem(object, ErrorKind::NotFound, ".symbol", {"ghost.kd", "never turned into a kernel"}));
  EXPECT_TRUE(object->problems()[0].kernel.empty());
}

// ---------------------------------------------------------------------------
// What a crafted object can make the reader hold: a CCOB of a few KB can
// carry a gigabyte of code object, so every count that multiplies memory or
// time is bounded.

TEST(CodeObjectLimits, ASecondSymbolTableOfOneTypeIsMalformed) {
  ElfSpec spec = valid_spec();
  spec.also_dynsym = true;
  spec.section_patches = {SectionPatch{.name = ".dynsym", .sh_type = testing::kShtSymtab}};
  auto object = read(spec);
  ASSERT_TRUE(FailsWith(object, ErrorKind::Malformed));
  EXPECT_TRUE(object.error().location().field.starts_with("section ")) << object.error().location().field;
  EXPECT_EQ(object.error().location().value, std::optional<std::uint64_t>(testing::kShtSymtab));
}

TEST(CodeObjectLimits, SymbolsNamingOneLongStringPastTheBudgetAreRefused) {
  ElfSpec spec = valid_spec();
  spec.kernels[0].descriptor_symbol = std::string(64 * 1024, 'x') + ".kd";  // the table's first name: st_name 1
  for (int i = 0; i < 20; ++i) {
    KernelSpec ghost = kernel_spec(MetaKernel{.name = "g" + std::to_string(i), .symbol = "g.kd"});
    ghost.descriptor_overrides.st_name = 1;
    ghost.function_overrides.st_name = 1;
    spec.kernels.push_back(ghost);
  }
  auto object = read(spec);
  ASSERT_TRUE(FailsWith(object, ErrorKind::LimitExceeded));
  // The table's name bytes so far, past four times its string table and 1 MiB.
  const ErrorLocation& at = object.error().location();
  EXPECT_TRUE(at.field.starts_with("symbol table section ")) << at.field;
  ASSERT_TRUE(at.value && at.limit);
  EXPECT_GT(*at.value, *at.limit);
  EXPECT_GT(*at.limit, std::uint64_t{1} << 20);
}

/// Rewrites program header `index` of `bytes` (ELF64: e_phoff at 32, 56-byte entries).
void set_program_header(std::vector<std::byte>& bytes, std::size_t index, std::uint32_t type, std::uint64_t offset,
                        std::uint64_t filesz, std::uint64_t align) {
  std::uint64_t phoff = 0;
  std::memcpy(&phoff, bytes.data() + 32, 8);
  std::byte* header = bytes.data() + phoff + 56 * index;
  std::memcpy(header, &type, 4);
  std::memcpy(header + 8, &offset, 8);
  std::memcpy(header + 32, &filesz, 8);
  std::memcpy(header + 48, &align, 8);
}

TEST(CodeObjectLimits, PtNoteSegmentsThatRepeatAreWalkedOnceAndOverlapsRefused) {
  std::vector<std::byte> bytes = write_amdgpu_elf(valid_spec());
  std::uint64_t phoff = 0, note_offset = 0, note_size = 0;
  std::memcpy(&phoff, bytes.data() + 32, 8);
  std::memcpy(&note_offset, bytes.data() + phoff + 56 * 2 + 8, 8);  // the writer's PT_NOTE is header 2
  std::memcpy(&note_size, bytes.data() + phoff + 56 * 2 + 32, 8);
  std::vector<std::byte> repeated = bytes;
  set_program_header(repeated, 0, testing::kPtNote, note_offset, note_size, 4);
  auto object = CodeObject::read(repeated);
  ASSERT_TRUE(Succeeds(object));
  EXPECT_TRUE(object->problems().empty()) << all_problems(*object);
  std::vector<std::byte> overlapping = bytes;
  set_program_header(overlapping, 0, testing::kPtNote, note_offset, note_size - 4, 4);
  auto refused = CodeObject::read(overlapping);
  // Segment 2 starts where segment 0 does, before segment 0 ends.
  EXPECT_TRUE(testing::FailsAtField(refused, ErrorKind::Malformed, "PT_NOTE segment 2", std::nullopt, note_offset,
                                    note_offset + note_size - 4));
}

TEST(CodeObjectLimits, ProblemsPastTheLimitAreCountedInALastOne) {
  Meta meta;
  meta.kernels.clear();
  for (int i = 0; i < 5000; ++i) meta.kernels.push_back(MetaKernel{.name = "k" + std::to_string(i), .symbol = "s"});
  ElfSpec spec = valid_spec(meta);
  spec.symbol_table = false;  // one NotFound per kernel (the shared .symbol is a problem of its own)
  auto object = read(spec);
  ASSERT_TRUE(Succeeds(object));
  ASSERT_EQ(object->problems().size(), 4097u);
  const Problem& last = object->problems().back();
  EXPECT_EQ(last.field, "problems");
  EXPECT_FALSE(last.kernel.empty());  // a reader refusing kernel problems still sees one
  EXPECT_NE(last.message.find(" more problems are not listed (at most 4096 problems or 16 MiB"), std::string::npos)
      << last.message;
}

TEST(CodeObjectLimits, KernargLayoutProblemsPerKernelAreCapped) {
  Meta meta;
  meta.kernels[0].overlapping_args = 40;  // args 1..40 each overlap arg 0
  meta.kernels[0].kernarg_size = 8;
  auto object = read(valid_spec(meta));
  ASSERT_TRUE(Succeeds(object));
  std::vector<Problem> layout;
  for (const Problem& problem : object->problems()) {
    if (problem.field.starts_with("args")) layout.push_back(problem);
  }
  ASSERT_EQ(layout.size(), 17u) << all_problems(*object);
  EXPECT_EQ(layout.back().message, "kernel \"k\": 24 more kernarg layout problems are not listed");
}

TEST(CodeObjectLimits, LongNamesAreCutInMessagesButKeptInTheKernelField) {
  Meta meta;
  meta.kernels[0].name = std::string(300, 'n');
  meta.kernels[0].overlapping_args = 1;
  auto object = read(valid_spec(meta));
  ASSERT_TRUE(Succeeds(object));
  ASSERT_FALSE(object->problems().empty());
  for (const Problem& problem : object->problems()) {
    EXPECT_EQ(problem.kernel, meta.kernels[0].name);
    EXPECT_NE(problem.message.find("kernel \"" + std::string(128, 'n') + "...\""), std::string::npos)
        << problem.message;
    EXPECT_LT(problem.message.size(), 300u);
  }
}

TEST(CodeObjectLimits, PrintfFormatsPastTheLimitAreRefused) {
  Meta meta;
  meta.printf_formats = 65536;
  ASSERT_TRUE(Succeeds(read(valid_spec(meta))));
  meta.printf_formats = 65537;
  auto object = read(valid_spec(meta));
  ASSERT_TRUE(FailsWith(object, ErrorKind::LimitExceeded));
  EXPECT_EQ(object.error().location().field, "amdhsa.printf");
  EXPECT_EQ(object.error().location().value, std::optional<std::uint64_t>(65537));
  EXPECT_EQ(object.error().location().limit, std::optional<std::uint64_t>(65536));
}

TEST(CodeObjectLimits, OnlyTheFirstUnknownKeysAreListed) {
  Meta meta;
  meta.vendor_keys = 2000;
  auto object = read(valid_spec(meta));
  ASSERT_TRUE(Succeeds(object));
  EXPECT_EQ(object->metadata().unknown_keys.size(), 1024u);
}

TEST(CodeObjectLimits, OrphanDescriptorsPastTheLimitAreCountedNotKept) {
  ElfSpec spec = valid_spec();
  for (int i = 0; i < 5000; ++i) {
    spec.kernels.push_back(kernel_spec(MetaKernel{.name = "", .symbol = "ghost" + std::to_string(i) + ".kd"}));
  }
  auto object = read(spec);
  ASSERT_TRUE(Succeeds(object));
  EXPECT_EQ(object->orphan_descriptors().size(), 4096u);
  ASSERT_EQ(object->problems().size(), 4097u);
  EXPECT_NE(object->problems().back().message.find("904 more problems are not listed"), std::string::npos)
      << object->problems().back().message;
}

}  // namespace
}  // namespace coload
