// The same-ISA retarget (coload/detail/hotswap.h retarget_code_object): clang-22
// fixtures relabelled across the same-ISA groups, checked byte by byte, with
// llvm-objdump-22 and llvm-readelf-22, with coload's validator and metadata
// reader; refusals with their exact kinds; and the note rewrite on
// hand-built objects for string lengths no real pair produces.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>
#include "bundle_writer.h"
#include "coload/code_object.h"
#include "coload/detail/hotswap.h"
#include "coload/device.h"
#include "coload/validate.h"
#include "elf_writer.h"
#include "hotswap/retarget_note.h"
#include "msgpack_writer.h"
#include "test_util.h"

namespace coload {
namespace {

using namespace coload::testing;

const std::filesystem::path kFixtures = COLOAD_FIXTURE_DIR;
constexpr std::size_t kFlagsAt = 0x30;

std::vector<std::byte> fixture(const std::string& path) { return read_file((kFixtures / path).string()); }

Device device(const std::string& spec) {
  auto made = device_from_spec(spec);
  EXPECT_TRUE(Succeeds(made)) << spec;
  return made ? *made : Device{};
}

std::uint32_t e_flags(const std::vector<std::byte>& elf) {
  std::uint32_t flags = 0;
  std::memcpy(&flags, elf.data() + kFlagsAt, sizeof flags);
  return flags;
}

/// Offset of `text` in `bytes` (tests may search; the library never does).
std::size_t find_text(const std::vector<std::byte>& bytes, const std::string& text) {
  std::string_view all(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  return all.find(text);
}

// ---------------------------------------------------------------------------
// External tools.

std::optional<std::string> tool(const char* name) {
  for (std::string dir : {"/usr/lib/llvm-22/bin/", "/usr/bin/"}) {
    for (std::string candidate : {dir + name, dir + name + "-22"}) {
      if (std::filesystem::exists(candidate)) return candidate;
    }
  }
  return std::nullopt;
}

std::string run(const std::string& command) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) return {};
  std::string out;
  char buffer[4096];
  while (std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe.get())) out.append(buffer, n);
  return out;
}

/// A file in the test's temporary directory, removed at the end.
class TempFile {
 public:
  TempFile(const std::string& name, const std::vector<std::byte>& bytes)
      : path_(std::filesystem::temp_directory_path() / ("coload_retarget_" + std::to_string(::getpid()) + "_" + name)) {
    write_file(path_.string(), bytes);
  }
  ~TempFile() { std::filesystem::remove(path_); }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

/// Disassembly without the lines that name the file or its format.
std::string disassembly(const std::string& objdump, const std::vector<std::byte>& elf, const std::string& name) {
  TempFile file(name, elf);
  std::istringstream text(run(objdump + " -d " + file.path()));
  std::string kept, line;
  while (std::getline(text, line)) {
    if (line.find("file format") != std::string::npos) continue;
    kept += line + "\n";
  }
  return kept;
}

// ---------------------------------------------------------------------------
// Metadata compared field by field.

void expect_same_args(const KernelArg& a, const KernelArg& b, const std::string& where) {
  EXPECT_EQ(a.name, b.name) << where;
  EXPECT_EQ(a.type_name, b.type_name) << where;
  EXPECT_EQ(a.offset, b.offset) << where;
  EXPECT_EQ(a.size, b.size) << where;
  EXPECT_EQ(a.kind, b.kind) << where;
  EXPECT_EQ(a.kind_text, b.kind_text) << where;
  EXPECT_EQ(a.address_space, b.address_space) << where;
  EXPECT_EQ(a.access, b.access) << where;
  EXPECT_EQ(a.actual_access, b.actual_access) << where;
  EXPECT_EQ(a.pointee_align, b.pointee_align) << where;
  EXPECT_EQ(a.is_const, b.is_const) << where;
  EXPECT_EQ(a.is_restrict, b.is_restrict) << where;
  EXPECT_EQ(a.is_volatile, b.is_volatile) << where;
  EXPECT_EQ(a.is_pipe, b.is_pipe) << where;
}

void expect_same_kernels(const Metadata& a, const Metadata& b) {
  EXPECT_EQ(a.version_major, b.version_major);
  EXPECT_EQ(a.version_minor, b.version_minor);
  EXPECT_EQ(a.printf_formats, b.printf_formats);
  EXPECT_EQ(a.unknown_keys, b.unknown_keys);
  ASSERT_EQ(a.kernels.size(), b.kernels.size());
  for (std::size_t i = 0; i < a.kernels.size(); ++i) {
    const Kernel& x = a.kernels[i];
    const Kernel& y = b.kernels[i];
    std::string where = "kernel " + x.name;
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.symbol, y.symbol) << where;
    EXPECT_EQ(x.kernarg_segment_size, y.kernarg_segment_size) << where;
    EXPECT_EQ(x.kernarg_segment_align, y.kernarg_segment_align) << where;
    EXPECT_EQ(x.group_segment_fixed_size, y.group_segment_fixed_size) << where;
    EXPECT_EQ(x.private_segment_fixed_size, y.private_segment_fixed_size) << where;
    EXPECT_EQ(x.wavefront_size, y.wavefront_size) << where;
    EXPECT_EQ(x.sgpr_count, y.sgpr_count) << where;
    EXPECT_EQ(x.vgpr_count, y.vgpr_count) << where;
    EXPECT_EQ(x.agpr_count, y.agpr_count) << where;
    EXPECT_EQ(x.max_flat_workgroup_size, y.max_flat_workgroup_size) << where;
    EXPECT_EQ(x.reqd_workgroup_size, y.reqd_workgroup_size) << where;
    EXPECT_EQ(x.workgroup_size_hint, y.workgroup_size_hint) << where;
    EXPECT_EQ(x.uses_dynamic_stack, y.uses_dynamic_stack) << where;
    EXPECT_EQ(x.sgpr_spill_count, y.sgpr_spill_count) << where;
    EXPECT_EQ(x.vgpr_spill_count, y.vgpr_spill_count) << where;
    EXPECT_EQ(x.workgroup_processor_mode, y.workgroup_processor_mode) << where;
    EXPECT_EQ(x.uniform_work_group_size, y.uniform_work_group_size) << where;
    EXPECT_EQ(x.language, y.language) << where;
    EXPECT_EQ(x.layout.explicit_size, y.layout.explicit_size) << where;
    EXPECT_EQ(x.layout.hidden_offset, y.layout.hidden_offset) << where;
    EXPECT_EQ(x.layout.hidden_end, y.layout.hidden_end) << where;
    ASSERT_EQ(x.descriptor.has_value(), y.descriptor.has_value()) << where;
    if (x.descriptor) {
      EXPECT_EQ(x.descriptor->address, y.descriptor->address) << where;
      EXPECT_EQ(x.descriptor->compute_pgm_rsrc1, y.descriptor->compute_pgm_rsrc1) << where;
      EXPECT_EQ(x.descriptor->compute_pgm_rsrc2, y.descriptor->compute_pgm_rsrc2) << where;
      EXPECT_EQ(x.descriptor->compute_pgm_rsrc3, y.descriptor->compute_pgm_rsrc3) << where;
      EXPECT_EQ(x.descriptor->kernel_code_properties, y.descriptor->kernel_code_properties) << where;
    }
    ASSERT_EQ(x.args.size(), y.args.size()) << where;
    for (std::size_t j = 0; j < x.args.size(); ++j) {
      expect_same_args(x.args[j], y.args[j], where + " arg " + std::to_string(j));
    }
  }
}

// ---------------------------------------------------------------------------
// clang-22 fixtures across the groups.

struct Case {
  std::string fixture;  ///< relative to the fixture directory
  std::string from, to;
};

void PrintTo(const Case& c, std::ostream* out) { *out << c.from << "->" << c.to; }

class RetargetFixture : public ::testing::TestWithParam<Case> {};

TEST_P(RetargetFixture, ChangesOnlyFlagsAndTargetString) {
  const Case& c = GetParam();
  auto input = fixture(c.fixture);
  Device to = device(c.to);
  auto output = retarget_code_object(input, to);
  ASSERT_TRUE(Succeeds(output));
  ASSERT_EQ(output->size(), input.size());

  auto read = CodeObject::read(*output);
  ASSERT_TRUE(Succeeds(read));
  EXPECT_TRUE(read->problems().empty());
  EXPECT_EQ(read->target().target.processor_name(), c.to);
  EXPECT_EQ(e_flags(*output) & 0xff, find_processor(c.to)->mach);
  EXPECT_EQ(e_flags(*output) & ~0xfffu, e_flags(input) & ~0xfffu) << "bits outside mach/xnack/sramecc changed";

  std::string old_text = "amdgcn-amd-amdhsa--" + c.from;
  std::string new_text = "amdgcn-amd-amdhsa--" + c.to;
  EXPECT_EQ(read->metadata().target, new_text);
  std::size_t at = find_text(input, old_text);
  ASSERT_NE(at, std::string::npos);
  EXPECT_EQ(find_text(*output, new_text), at);
  for (std::size_t i = 0; i < input.size(); ++i) {
    bool flags = i >= kFlagsAt && i < kFlagsAt + 4;
    bool target = i >= at && i < at + new_text.size();
    if (!flags && !target) ASSERT_EQ((*output)[i], input[i]) << "byte " << i << " changed";
  }

  EXPECT_TRUE(validate(*read, to).empty()) << validate(*read, to).front().message;
  auto original = CodeObject::read(input);
  ASSERT_TRUE(Succeeds(original));
  expect_same_kernels(original->metadata(), read->metadata());
}

TEST_P(RetargetFixture, DisassemblyIsUnchanged) {
  auto objdump = tool("llvm-objdump");
  if (!objdump) GTEST_SKIP() << "llvm-objdump-22 is not installed";
  const Case& c = GetParam();
  auto input = fixture(c.fixture);
  auto output = retarget_code_object(input, device(c.to));
  ASSERT_TRUE(Succeeds(output));
  std::string before = disassembly(*objdump, input, c.from + ".co");
  std::string after = disassembly(*objdump, *output, c.to + ".co");
  EXPECT_NE(before.find("s_endpgm"), std::string::npos) << before;
  EXPECT_EQ(before, after);
}

TEST_P(RetargetFixture, ReadelfShowsTheNewTarget) {
  auto readelf = tool("llvm-readelf");
  if (!readelf) GTEST_SKIP() << "llvm-readelf-22 is not installed";
  const Case& c = GetParam();
  auto output = retarget_code_object(fixture(c.fixture), device(c.to));
  ASSERT_TRUE(Succeeds(output));
  TempFile file(c.to + ".co", *output);
  std::string shown = run(*readelf + " -h --notes " + file.path() + " 2>&1");
  std::size_t flags = shown.find("Flags:");
  ASSERT_NE(flags, std::string::npos) << shown;
  std::string flags_line = shown.substr(flags, shown.find('\n', flags) - flags);
  EXPECT_NE((flags_line + ",").find(", " + c.to + ","), std::string::npos) << flags_line;
  EXPECT_NE(shown.find("amdhsa.target:   amdgcn-amd-amdhsa--" + c.to), std::string::npos) << shown;
  EXPECT_EQ(shown.find("warning"), std::string::npos) << shown;
}

std::vector<Case> cases() {
  std::vector<Case> all;
  for (const char* to : {"gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036"}) {
    all.push_back({"co/gfx1030.co", "gfx1030", to});
  }
  for (const char* to : {"gfx902", "gfx906", "gfx909", "gfx90c"}) all.push_back({"co/gfx900.co", "gfx900", to});
  for (const char* to : {"gfx1011", "gfx1012", "gfx1013"}) all.push_back({"co/gfx1010.co", "gfx1010", to});
  return all;
}

INSTANTIATE_TEST_SUITE_P(SameIsaGroups, RetargetFixture, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.from + "_to_" + info.param.to; });

TEST(Retarget, RefusesPairsOutsideTheGroups) {
  struct Refused {
    const char* fixture;
    const char* device;
  };
  for (auto [path, spec] : {Refused{"co/gfx1030.co", "gfx1100"}, Refused{"co/gfx906.co", "gfx900"},
                            Refused{"co/gfx1011.co", "gfx1010"}, Refused{"co/gfx1030.co", "gfx1030"},
                            Refused{"co/gfx10-3-generic.co", "gfx1100"}, Refused{"co/gfx90a.co", "gfx942"}}) {
    auto bytes = fixture(path);
    EXPECT_TRUE(FailsWith(retarget_code_object(bytes, device(spec)), ErrorKind::InvalidArgument))
        << path << " -> " << spec;
  }
}

TEST(Retarget, AGenericObjectIsRelabelledForAMemberOfItsFamily) {
  // What a runtime that loads no generics loads (docs/preload.md): the
  // member's mach, no generic version, the member's metadata target.
  const auto bytes = fixture("co/gfx10-3-generic.co");
  auto relabelled = retarget_code_object(bytes, device("gfx1031"));
  ASSERT_TRUE(Succeeds(relabelled));
  auto object = CodeObject::read(*relabelled);
  ASSERT_TRUE(Succeeds(object));
  EXPECT_EQ(object->target().target.str(), "gfx1031");
  EXPECT_EQ(object->target().generic_version, 0u);
  EXPECT_EQ(object->metadata().target, "amdgcn-amd-amdhsa--gfx1031");
  EXPECT_TRUE(object->problems().empty());
  EXPECT_EQ(relabelled->size(), bytes.size());
}

TEST(Retarget, RefusesEveryTruncation) {
  auto bytes = fixture("co/gfx1030.co");
  Device to = device("gfx1031");
  for (std::size_t size = 0; size < bytes.size(); ++size) {
    auto result = retarget_code_object(std::span<const std::byte>(bytes).first(size), to);
    ASSERT_FALSE(result.has_value()) << "a " << size << "-byte prefix was retargeted";
  }
  EXPECT_TRUE(FailsWith(retarget_code_object(std::span<const std::byte>(bytes).first(40), to), ErrorKind::Truncated));
}

TEST(Retarget, IsAGroupPairLikeTheSelector) {
  // The gfx900 group reaches gfx906, but gfx906 code stays on gfx906.
  EXPECT_TRUE(Succeeds(retarget_code_object(fixture("co/gfx900.co"), device("gfx906"))));
  EXPECT_TRUE(FailsWith(retarget_code_object(fixture("co/gfx900.co"), device("gfx904")), ErrorKind::InvalidArgument));
}

// ---------------------------------------------------------------------------
// Hand-built objects: features and the note rewrite.

std::vector<std::byte> metadata(std::optional<std::string> target, bool target_first = false) {
  msgpack::Writer w;
  w.map(target ? 3 : 2);
  if (target && target_first) w.str("amdhsa.target").str(*target);
  w.str("amdhsa.version").array(2).uint(1).uint(2);
  if (target && !target_first) w.str("amdhsa.target").str(*target);
  w.str("amdhsa.kernels").array(0);
  return w.take();
}

ElfSpec spec_for(std::uint32_t e_flags, std::optional<std::string> target) {
  ElfSpec spec;
  spec.e_flags = e_flags;
  spec.metadata_note = metadata(std::move(target));
  return spec;
}

std::uint32_t mach(const char* name) { return find_processor(name)->mach; }

TEST(Retarget, KeepsPinnedFeaturesThatMatchTheDevice) {
  auto input = write_amdgpu_elf(spec_for(mach("gfx900") | kXnackOff, "amdgcn-amd-amdhsa--gfx900:xnack-"));
  ASSERT_TRUE(Succeeds(CodeObject::read(input)));
  auto output = retarget_code_object(input, device("gfx902:xnack-"));
  ASSERT_TRUE(Succeeds(output));
  EXPECT_EQ(e_flags(*output), mach("gfx902") | kXnackOff);
  auto read = CodeObject::read(*output);
  ASSERT_TRUE(Succeeds(read));
  EXPECT_EQ(read->metadata().target, "amdgcn-amd-amdhsa--gfx902:xnack-");

  EXPECT_TRUE(FailsWith(retarget_code_object(input, device("gfx902:xnack+")), ErrorKind::InvalidArgument));
}

TEST(Retarget, KeepsAnyAndUnsupported) {
  auto input = write_amdgpu_elf(spec_for(mach("gfx1010") | kXnackAny, "amdgcn-amd-amdhsa--gfx1010"));
  auto output = retarget_code_object(input, device("gfx1013:xnack+"));
  ASSERT_TRUE(Succeeds(output));
  EXPECT_EQ(e_flags(*output), mach("gfx1013") | kXnackAny);

  // gfx900 has no sramecc; gfx906 has it, and a gfx906 object leaving it open says Any.
  auto gfx900 = write_amdgpu_elf(spec_for(mach("gfx900") | kXnackAny, "amdgcn-amd-amdhsa--gfx900"));
  auto on_906 = retarget_code_object(gfx900, device("gfx906"));
  ASSERT_TRUE(Succeeds(on_906));
  EXPECT_EQ(e_flags(*on_906), mach("gfx906") | kXnackAny | kSrameccAny);
  // And back: gfx909 has no sramecc, so Any (from a gfx900 object that said so) becomes unsupported.
  auto any = write_amdgpu_elf(spec_for(mach("gfx900") | kXnackAny, "amdgcn-amd-amdhsa--gfx900"));
  auto on_909 = retarget_code_object(any, device("gfx909"));
  ASSERT_TRUE(Succeeds(on_909));
  EXPECT_EQ(e_flags(*on_909), mach("gfx909") | kXnackAny);
}

TEST(Retarget, WithoutTargetKeyRewritesOnlyTheFlags) {
  auto input = write_amdgpu_elf(spec_for(mach("gfx1030"), std::nullopt));
  // A v5 object without amdhsa.target has that object-wide problem, which no
  // loader cares about: the flags are rewritten and the problem is kept.
  ASSERT_EQ(CodeObject::read(input)->problems().size(), 1u);
  auto output = retarget_code_object(input, device("gfx1032"));
  ASSERT_TRUE(Succeeds(output));
  EXPECT_EQ(e_flags(*output), mach("gfx1032"));
  auto read = CodeObject::read(*output);
  ASSERT_TRUE(Succeeds(read));
  ASSERT_EQ(read->problems().size(), 1u);
  EXPECT_EQ(read->problems()[0].field, "amdhsa.target");
}

/// gfx1030 metadata declaring amdhsa.version 1.0 (code object v3's, older than v5 needs).
std::vector<std::byte> gfx1030_metadata_version_1_0() {
  msgpack::Writer w;
  w.map(3).str("amdhsa.version").array(2).uint(1).uint(0);
  w.str("amdhsa.target").str("amdgcn-amd-amdhsa--gfx1030").str("amdhsa.kernels").array(0);
  return w.take();
}

// Hand-written assembly kernels often carry an old amdhsa.version: the object
// loads as it is, so it loads retargeted, and keeps exactly that problem.
TEST(Retarget, KeepsAnObjectWideProblemItDoesNotAdd) {
  ElfSpec spec = spec_for(mach("gfx1030"), std::nullopt);
  spec.metadata_note = gfx1030_metadata_version_1_0();
  auto input = write_amdgpu_elf(spec);
  auto read_input = CodeObject::read(input);
  ASSERT_TRUE(Succeeds(read_input));
  ASSERT_EQ(read_input->problems().size(), 1u);
  ASSERT_EQ(read_input->problems()[0].field, "amdhsa.version");
  auto output = retarget_code_object(input, device("gfx1031"));
  ASSERT_TRUE(Succeeds(output));
  auto read = CodeObject::read(*output);
  ASSERT_TRUE(Succeeds(read));
  EXPECT_EQ(read->metadata().target, "amdgcn-amd-amdhsa--gfx1031");
  ASSERT_EQ(read->problems().size(), 1u);
  EXPECT_EQ(read->problems()[0].field, "amdhsa.version");
}

TEST(Retarget, RefusesCodeObjectV3) {
  ElfSpec spec = spec_for(mach("gfx1030"), "amdgcn-amd-amdhsa--gfx1030");
  spec.abi_version = kAbiV3;
  spec.metadata_note = gfx1030_metadata_version_1_0();
  auto input = write_amdgpu_elf(spec);
  ASSERT_TRUE(Succeeds(CodeObject::read(input)));
  EXPECT_TRUE(FailsWith(retarget_code_object(input, device("gfx1031")), ErrorKind::UnsupportedVersion));
}

/// A 28-byte target: the descriptor is 78 bytes, with 2 bytes of padding.
const std::string kTarget28 = "amdgcn-amd-amdhsa--gfx1030:a";

struct NoteCase : ::testing::Test {
  std::vector<std::byte> object(bool with_trailer = false, bool target_first = false) {
    ElfSpec spec = spec_for(mach("gfx1030"), std::nullopt);
    spec.metadata_note = metadata(kTarget28, target_first);
    EXPECT_EQ(spec.metadata_note.size() % 4, 2u);
    if (with_trailer) {
      NoteRecord trailer;
      trailer.name = "AMD";
      trailer.type = 1;
      trailer.desc.assign(8, std::byte{0x5a});
      spec.notes.push_back(trailer);
    }
    return write_amdgpu_elf(spec);
  }
  std::string target_of(const std::vector<std::byte>& elf) {
    auto read = CodeObject::read(elf);
    EXPECT_TRUE(Succeeds(read));
    return read ? read->metadata().target : std::string();
  }
};

TEST_F(NoteCase, GrowsIntoItsPadding) {
  for (bool trailer : {false, true}) {
    auto elf = object(trailer);
    auto before = elf;
    std::string longer = kTarget28 + "bc";
    auto done = detail::rewrite_metadata_target(elf, longer);
    ASSERT_TRUE(Succeeds(done));
    EXPECT_TRUE(*done);
    EXPECT_EQ(elf.size(), before.size());
    EXPECT_EQ(target_of(elf), longer);
    if (trailer) {
      std::size_t tail = find_text(before, std::string("AMD\0", 4));
      ASSERT_NE(tail, std::string::npos);
      EXPECT_TRUE(std::equal(elf.begin() + tail - 12, elf.end(), before.begin() + tail - 12))
          << "the next note record changed";
    }
  }
}

TEST_F(NoteCase, ShrinksByWideningTheRootMapCount) {
  // 28 bytes to 22 would end the descriptor 4 bytes before the next record;
  // the root map's count as map16 (2 bytes more) keeps it ending there.
  for (bool trailer : {false, true}) {
    auto elf = object(trailer);
    auto before = elf;
    const std::string shorter = "amdgcn-amd-amdhsa--gfx";
    auto done = detail::rewrite_metadata_target(elf, shorter);
    ASSERT_TRUE(Succeeds(done));
    EXPECT_TRUE(*done);
    EXPECT_EQ(elf.size(), before.size());
    EXPECT_EQ(target_of(elf), shorter);
    if (trailer) {
      std::size_t tail = find_text(before, std::string("AMD\0", 4));
      ASSERT_NE(tail, std::string::npos);
      EXPECT_TRUE(std::equal(elf.begin() + tail - 12, elf.end(), before.begin() + tail - 12))
          << "the next note record changed";
    }
  }
}

TEST_F(NoteCase, RefusesToGrowPastItsPadding) {
  auto elf = object();
  auto before = elf;
  auto done = detail::rewrite_metadata_target(elf, kTarget28 + "bcd");
  ASSERT_TRUE(FailsWith(done, ErrorKind::UnsupportedMethod));
  EXPECT_NE(done.error().message().find("needs 81 bytes, the note has 80"), std::string::npos)
      << done.error().message();
  EXPECT_EQ(elf, before);
}

TEST_F(NoteCase, ShrinksWithinItsPaddingWideningTheHead) {
  for (bool target_first : {false, true}) {
    auto elf = object(/*with_trailer=*/true, target_first);
    std::string shorter = kTarget28.substr(0, 26);  // 76 bytes would end a record early; str8 makes 77
    auto done = detail::rewrite_metadata_target(elf, shorter);
    ASSERT_TRUE(Succeeds(done));
    EXPECT_EQ(target_of(elf), shorter);
    std::size_t at = find_text(elf, shorter);
    ASSERT_NE(at, std::string::npos);
    EXPECT_EQ(static_cast<std::uint8_t>(elf[at - 2]), 0xd9) << "expected a str8 head";
  }
  auto elf = object();
  ASSERT_TRUE(Succeeds(detail::rewrite_metadata_target(elf, kTarget28.substr(0, 27))));
  EXPECT_EQ(target_of(elf), kTarget28.substr(0, 27));
}

TEST_F(NoteCase, LastRecordWithoutPaddingCannotGrow) {
  ElfSpec spec = spec_for(mach("gfx1030"), kTarget28);
  spec.drop_last_note_padding = true;
  auto elf = write_amdgpu_elf(spec);
  ASSERT_EQ(target_of(elf), kTarget28);
  EXPECT_TRUE(FailsWith(detail::rewrite_metadata_target(elf, kTarget28 + "b"), ErrorKind::UnsupportedMethod));
  auto same = detail::rewrite_metadata_target(elf, "amdgcn-amd-amdhsa--gfx1031:b");
  ASSERT_TRUE(Succeeds(same));
  EXPECT_EQ(target_of(elf), "amdgcn-amd-amdhsa--gfx1031:b");
}

TEST_F(NoteCase, NoTargetKeyChangesNothing) {
  auto elf = write_amdgpu_elf(spec_for(mach("gfx1030"), std::nullopt));
  auto before = elf;
  auto done = detail::rewrite_metadata_target(elf, "amdgcn-amd-amdhsa--gfx1031");
  ASSERT_TRUE(Succeeds(done));
  EXPECT_FALSE(*done);
  EXPECT_EQ(elf, before);
}

TEST_F(NoteCase, WalksTheSectionBesideTheSegment) {
  // CodeObject::read walks only the PT_NOTE segment; the retarget rewrites
  // the record in every region that holds it, so it walks .note too and
  // says, as the reader would, which record does not fit there.
  ElfSpec spec = spec_for(mach("gfx1030"), kTarget28);
  spec.section_patches.push_back({.name = ".note", .sh_size = 60});
  auto elf = write_amdgpu_elf(spec);
  ASSERT_TRUE(Succeeds(CodeObject::read(elf)));
  auto before = elf;
  auto done = detail::rewrite_metadata_target(elf, "amdgcn-amd-amdhsa--gfx1031");
  // The one rendering of a note that does not fit (NoteWalk::fault_error):
  // the record's descsz field at its file offset, its value, the region's size.
  ASSERT_TRUE(FailsWith(done, ErrorKind::OutOfBounds));
  const ErrorLocation& at = done.error().location();
  EXPECT_EQ(at.field, "descsz");
  EXPECT_EQ(at.offset, 0xe8u + 4);
  EXPECT_EQ(at.value, 0x4eu);
  EXPECT_EQ(at.limit, 0x3cu);
  EXPECT_THAT(done.error().message(), ::testing::StartsWith("SHT_NOTE section 1 (file offset 0xe8): note record"));
  EXPECT_EQ(elf, before);

  // A note section aligned to neither 4 nor 8, beside the segment the reader
  // walks, is walked as 4-aligned, and the record in it rewritten too.
  ElfSpec aligned16 = spec_for(mach("gfx1030"), kTarget28);
  aligned16.section_patches.push_back({.name = ".note", .sh_addralign = 16});
  elf = write_amdgpu_elf(aligned16);
  ASSERT_TRUE(Succeeds(CodeObject::read(elf)));
  done = detail::rewrite_metadata_target(elf, "amdgcn-amd-amdhsa--gfx1031");
  ASSERT_TRUE(Succeeds(done));
  EXPECT_TRUE(*done);
  EXPECT_EQ(target_of(elf), "amdgcn-amd-amdhsa--gfx1031");
}

TEST_F(NoteCase, TruncatedObject) {
  std::vector<std::byte> tiny(20);
  EXPECT_TRUE(FailsWith(detail::rewrite_metadata_target(tiny, "x"), ErrorKind::Truncated));
}

}  // namespace
}  // namespace coload
