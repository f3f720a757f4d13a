// CodeObject::read: real clang-22 code objects, and hand-built ones (the ELF
// writer in tests/support plus LLVM's msgpack writer) for every check of the
// ELF layer and of the kernel descriptors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "coload/code_object.h"
#include "llvm/BinaryFormat/MsgPackDocument.h"
#include "llvm/Object/ELFObjectFile.h"
#include "support/bundle_writer.h"
#include "support/elf_writer.h"
#include "test_util.h"

namespace coload {
namespace {

using testing::DescriptorFields;
using testing::ElfSpec;
using testing::FailsWith;
using testing::KernelSpec;
using testing::NoteRecord;
using testing::SectionPatch;
using testing::SegmentPatch;
using testing::Succeeds;
using testing::write_amdgpu_elf;

const std::filesystem::path kFixtures = COLOAD_FIXTURE_DIR;

std::vector<std::byte> fixture(const std::string& path) { return testing::read_file((kFixtures / path).string()); }

// ---------------------------------------------------------------------------
// Metadata (msgpack) for hand-built objects.

struct MetaKernel {
  std::string name = "k";
  std::string symbol = "k.kd";
  std::uint32_t kernarg_size = 8, kernarg_align = 8;
  std::uint32_t group = 0, private_size = 0, wavefront = 64;
  std::optional<bool> uses_dynamic_stack;
  std::optional<std::uint32_t> workgroup_processor_mode;
  std::uint32_t overlapping_args = 0;  ///< more 8-byte args at offset 0, each overlapping the first
};

struct Meta {
  std::vector<MetaKernel> kernels{MetaKernel{}};
  std::string target = "amdgcn-amd-amdhsa--gfx90a";  // empty: no amdhsa.target
  std::uint32_t major = 1, minor = 2;
  std::string pad;  // a vendor key to adjust the blob's length
  std::size_t printf_formats = 0;  // empty amdhsa.printf strings
  std::size_t vendor_keys = 0;     // root keys vendor.0, vendor.1, ...
};

std::vector<std::byte> metadata(const Meta& meta) {
  llvm::msgpack::Document doc;
  auto root = doc.getRoot().getMap(/*Convert=*/true);
  auto version = doc.getArrayNode();
  version.push_back(doc.getNode(meta.major));
  version.push_back(doc.getNode(meta.minor));
  root["amdhsa.version"] = version;
  if (!meta.target.empty()) root["amdhsa.target"] = doc.getNode(meta.target, /*Copy=*/true);
  if (!meta.pad.empty()) root["vendor.pad"] = doc.getNode(meta.pad, /*Copy=*/true);
  if (meta.printf_formats > 0) {
    auto formats = doc.getArrayNode();
    for (std::size_t i = 0; i < meta.printf_formats; ++i) formats.push_back(doc.getNode(""));
    root["amdhsa.printf"] = formats;
  }
  for (std::size_t i = 0; i < meta.vendor_keys; ++i) {
    root[doc.getNode("vendor." + std::to_string(i), /*Copy=*/true)] = doc.getNode(0u);
  }
  auto kernels = doc.getArrayNode();
  for (const MetaKernel& kernel : meta.kernels) {
    auto map = doc.getMapNode();
    map[".name"] = doc.getNode(kernel.name, true);
    map[".symbol"] = doc.getNode(kernel.symbol, true);
    map[".kernarg_segment_size"] = doc.getNode(kernel.kernarg_size);
    map[".kernarg_segment_align"] = doc.getNode(kernel.kernarg_align);
    map[".group_segment_fixed_size"] = doc.getNode(kernel.group);
    map[".private_segment_fixed_size"] = doc.getNode(kernel.private_size);
    map[".wavefront_size"] = doc.getNode(kernel.wavefront);
    map[".sgpr_count"] = doc.getNode(8u);
    map[".vgpr_count"] = doc.getNode(4u);
    map[".max_flat_workgroup_size"] = doc.getNode(1024u);
    if (kernel.uses_dynamic_stack) map[".uses_dynamic_stack"] = doc.getNode(*kernel.uses_dynamic_stack);
    if (kernel.workgroup_processor_mode) map[".workgroup_processor_mode"] = doc.getNode(*kernel.workgroup_processor_mode);
    auto args = doc.getArrayNode();
    if (kernel.kernarg_size >= 8) {
      auto arg = doc.getMapNode();
      arg[".offset"] = doc.getNode(0u);
      arg[".size"] = doc.getNode(8u);
      arg[".value_kind"] = doc.getNode("global_buffer");
      arg[".address_space"] = doc.getNode("global");
      args.push_back(arg);
    }
    for (std::uint32_t i = 0; i < kernel.overlapping_args; ++i) {
      auto arg = doc.getMapNode();
      arg[".offset"] = doc.getNode(0u);
      arg[".size"] = doc.getNode(8u);
      arg[".value_kind"] = doc.getNode("by_value");
      args.push_back(arg);
    }
    map[".args"] = args;
    kernels.push_back(map);
  }
  root["amdhsa.kernels"] = kernels;
  std::string blob;
  doc.writeToBlob(blob);
  std::vector<std::byte> bytes(blob.size());
  std::memcpy(bytes.data(), blob.data(), blob.size());
  return bytes;
}

/// A descriptor agreeing with `kernel` (entry offset filled in by the writer).
std::array<std::byte, 64> descriptor_for(const MetaKernel& kernel) {
  DescriptorFields fields;
  fields.group_segment_fixed_size = kernel.group;
  fields.private_segment_fixed_size = kernel.private_size;
  fields.kernarg_size = kernel.kernarg_size;
  fields.compute_pgm_rsrc1 = 0x00af0000;  // float modes, IEEE, DX10 clamp as clang writes them
  fields.compute_pgm_rsrc2 = 0x00000090;
  fields.kernel_code_properties = 0x0008;  // kernarg segment pointer
  if (kernel.wavefront == 32) fields.kernel_code_properties |= 1u << 10;
  if (kernel.uses_dynamic_stack.value_or(false)) fields.kernel_code_properties |= 1u << 11;
  if (kernel.workgroup_processor_mode.value_or(0)) fields.compute_pgm_rsrc1 |= 1u << 29;
  return testing::descriptor_bytes(fields);
}

KernelSpec kernel_spec(const MetaKernel& kernel) {
  KernelSpec spec;
  spec.descriptor_symbol = kernel.symbol;
  spec.descriptor = descriptor_for(kernel);
  spec.function_symbol = kernel.name;
  return spec;
}

/// A valid object: gfx90a, code object v5, one kernel "k".
ElfSpec valid_spec(const Meta& meta = {}) {
  ElfSpec spec;
  spec.metadata_note = metadata(meta);
  for (const MetaKernel& kernel : meta.kernels) spec.kernels.push_back(kernel_spec(kernel));
  return spec;
}

Expected<CodeObject> read(const ElfSpec& spec) { return CodeObject::read(write_amdgpu_elf(spec)); }

void set_u32(std::array<std::byte, 64>& bytes, std::size_t offset, std::uint32_t value) {
  std::memcpy(bytes.data() + offset, &value, sizeof value);
}

/// The problems about `field`, for assertions.
std::vector<Problem> problems_on(const CodeObject& object, std::string_view field) {
  std::vector<Problem> found;
  for (const Problem& problem : object.problems()) {
    if (problem.field == field) found.push_back(problem);
  }
  return found;
}

std::string all_problems(const CodeObject& object) {
  std::string text;
  for (const Problem& problem : object.problems()) text += problem.field + ": " + problem.message + "\n";
  return text;
}

/// Exactly one problem, about `field`, of `kind`, whose message contains each of `words`.
::testing::AssertionResult HasOneProblem(const Expected<CodeObject>& object, ErrorKind kind, std::string_view field,
                                         std::vector<std::string> words = {}) {
  if (!object) return ::testing::AssertionFailure() << "read failed: " << object.error().message();
  if (object->problems().size() != 1) {
    return ::testing::AssertionFailure() << object->problems().size() << " problems:\n" << all_problems(*object);
  }
  const Problem& problem = object->problems()[0];
  if (problem.kind != kind || problem.field != field) {
    return ::testing::AssertionFailure() << "problem " << to_string(problem.kind) << " on " << problem.field << ": "
                                         << problem.message;
  }
  for (const std::string& word : words) {
    if (problem.message.find(word) == std::string::npos) {
      return ::testing::AssertionFailure() << "message lacks \"" << word << "\": " << problem.message;
    }
  }
  return ::testing::AssertionSuccess();
}

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
  EXPECT_NE(far.error().message().find("0x40000000"), std::string::npos) << far.error().message();
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
  EXPECT_NE(object.error().message().find("two metadata notes"), std::string::npos) << object.error().message();
}

TEST(CodeObjectNote, DeclaredSizesOutsideTheSegment) {
  ElfSpec spec = valid_spec();
  spec.notes = {NoteRecord{.name = "X", .type = 1, .desc = {}, .namesz = 0x1000}};
  EXPECT_TRUE(FailsWith(read(spec), ErrorKind::OutOfBounds));
  spec.notes = {NoteRecord{.name = "X", .type = 1, .desc = {}, .descsz = 0x1000}};
  EXPECT_TRUE(FailsWith(read(spec), ErrorKind::OutOfBounds));
  spec.notes = {NoteRecord{.name = "X", .type = 1, .desc = {}, .namesz = 0xffffffff, .descsz = 0xffffffff}};
  EXPECT_TRUE(FailsWith(read(spec), ErrorKind::OutOfBounds));
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
  ASSERT_TRUE(FailsWith(object, ErrorKind::Malformed));
  EXPECT_NE(object.error().message().find("metadata note at offset"), std::string::npos);
}

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
  for (const Case& c : {Case{0, "group_segment_fixed_size"}, Case{4, "private_segment_fixed_size"},
                        Case{8, "kernarg_size"}}) {
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
  for (auto [offset, field] : {std::pair<std::size_t, std::string>{13, "reserved0"}, {30, "reserved1"},
                               {43, "reserved1"}, {63, "reserved3"}}) {
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
  EXPECT_TRUE(HasOneProblem(with(kGfx906 | kAny, "gfx906", 0x1, 0),
                            ErrorKind::Malformed, "compute_pgm_rsrc3", {"offset 44", "gfx906"}));
  EXPECT_TRUE(HasOneProblem(with(kGfx906 | kAny, "gfx906", 0, 4),
                            ErrorKind::Malformed, "kernarg_preload", {"offset 58", "gfx906"}));
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
  EXPECT_TRUE(HasOneProblem(read(spec), ErrorKind::OutOfBounds, "kernel_code_entry_byte_offset",
                            {"no executable PT_LOAD"}));

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
  EXPECT_NE(object.error().message().find("is a second SHT_SYMTAB (after section "), std::string::npos)
      << object.error().message();
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
  EXPECT_NE(object.error().message().find(" (four times their string table, "), std::string::npos)
      << object.error().message().substr(0, 400);
}

std::string hex(std::uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
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
  ASSERT_TRUE(FailsWith(refused, ErrorKind::Malformed));
  EXPECT_NE(refused.error().message().find("PT_NOTE segment 2 [" + hex(note_offset) + ", +" + hex(note_size) +
                                           ") overlaps PT_NOTE segment 0"),
            std::string::npos)
      << refused.error().message();
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
  EXPECT_NE(object.error().message().find("65537 printf formats exceed the limit of 65536"), std::string::npos)
      << object.error().message();
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
