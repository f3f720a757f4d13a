// The checked AMDGPU ELF view (src/elf/elf_view.h): the note walk's
// padding and alignment rules and where it stops, the header tables of a
// written object, and where the metadata decoder says `amdhsa.target` lies.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "code_object/metadata.h"
#include "common/aligned_bytes.h"
#include "elf/elf_view.h"
#include "support/elf_writer.h"
#include "support/msgpack_writer.h"
#include "test_util.h"

namespace coload {
namespace {

using detail::ElfNote;
using detail::NoteFault;
using detail::NoteWalk;
using testing::FailsAtField;
using testing::FailsWith;
using testing::Succeeds;

/// Appends one note record: header, name (with its NUL), descriptor, each
/// padded to `align` unless `pad_desc` is false.
void add_note(std::vector<std::byte>& out, std::string name, std::uint32_t type, std::size_t descsz,
              std::uint64_t align = 4, bool pad_desc = true) {
  name.push_back('\0');
  auto put = [&](std::uint32_t value) {
    std::byte bytes[4];
    std::memcpy(bytes, &value, 4);
    out.insert(out.end(), bytes, bytes + 4);
  };
  auto pad = [&] { out.resize((out.size() + align - 1) / align * align); };
  put(static_cast<std::uint32_t>(name.size()));
  put(static_cast<std::uint32_t>(descsz));
  put(type);
  for (char c : name) out.push_back(static_cast<std::byte>(c));
  pad();
  for (std::size_t i = 0; i < descsz; ++i) out.push_back(std::byte{0x5a});
  if (pad_desc) pad();
}

std::vector<ElfNote> walk_all(NoteWalk& walk) {
  std::vector<ElfNote> notes;
  while (auto note = walk.next()) notes.push_back(*note);
  return notes;
}

TEST(NoteWalk, YieldsRecordsWithFileOffsets) {
  std::vector<std::byte> region;
  add_note(region, "AMDGPU", 32, 5);  // 12 + 8 (name padded) + 8 (desc padded)
  add_note(region, "AMD", 1, 8);
  ASSERT_EQ(region.size(), 28u + 12 + 4 + 8);
  NoteWalk walk(region, 0x100, 4);
  auto notes = walk_all(walk);
  EXPECT_FALSE(walk.fault());
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0].offset, 0x100u);
  EXPECT_EQ(notes[0].name, std::string_view("AMDGPU\0", 7));
  EXPECT_EQ(notes[0].type, 32u);
  EXPECT_EQ(notes[0].name_offset(), 0x100u + 12);
  EXPECT_EQ(notes[0].desc_offset, 0x100u + 20);
  EXPECT_EQ(notes[0].desc.size(), 5u);
  EXPECT_TRUE(notes[0].is_amdgpu_metadata());
  EXPECT_EQ(notes[1].offset, 0x100u + 28);
  EXPECT_EQ(notes[1].desc_offset, 0x100u + 28 + 16);
  EXPECT_FALSE(notes[1].is_amdgpu_metadata());
}

TEST(NoteWalk, AlignsToEight) {
  std::vector<std::byte> region;
  add_note(region, "AMDGPU", 32, 5, 8);  // 12 + 7 -> 24, desc 5 -> 32
  add_note(region, "AMD", 1, 4, 8);
  NoteWalk walk(region, 0, 8);
  auto notes = walk_all(walk);
  EXPECT_FALSE(walk.fault());
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0].desc_offset, 24u);
  EXPECT_EQ(notes[1].offset, 32u);
  // The same bytes walked at 4 put the descriptor at 20 and stop somewhere: a
  // region's alignment is not guessed.
  NoteWalk four(region, 0, 4);
  auto first = four.next();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->desc_offset, 20u);
}

TEST(NoteWalk, LastRecordMayLackItsPadding) {
  std::vector<std::byte> region;
  add_note(region, "AMDGPU", 32, 6, 4, /*pad_desc=*/false);
  NoteWalk walk(region, 0, 4);
  EXPECT_EQ(walk_all(walk).size(), 1u);
  EXPECT_FALSE(walk.fault());
  // One byte of the padding present is a record whose padding runs past the region.
  region.push_back(std::byte{0});
  NoteWalk short_padding(region, 0, 4);
  ASSERT_TRUE(short_padding.next());  // the record itself fits
  EXPECT_FALSE(short_padding.next());
  ASSERT_TRUE(short_padding.fault());
  EXPECT_EQ(short_padding.fault()->part, NoteFault::Part::DescriptorPadding);
  EXPECT_EQ(short_padding.fault()->record, 0u);
  EXPECT_EQ(short_padding.fault()->at, 26u);
}

TEST(NoteWalk, SaysWhichPartDoesNotFit) {
  struct Case {
    std::size_t cut;
    NoteFault::Part part;
    std::uint64_t at, size;
  };
  std::vector<std::byte> whole;
  add_note(whole, "AMDGPU", 32, 8);  // header 0..12, name 12..19, pad to 20, desc 20..28
  for (const Case& c : {Case{11, NoteFault::Part::Header, 0, 11}, Case{18, NoteFault::Part::Name, 12, 7},
                        Case{19, NoteFault::Part::NamePadding, 19, 0}, Case{27, NoteFault::Part::Descriptor, 20, 8}}) {
    std::vector<std::byte> region(whole.begin(), whole.begin() + c.cut);
    NoteWalk walk(region, 0, 4);
    EXPECT_FALSE(walk.next()) << c.cut;
    ASSERT_TRUE(walk.fault()) << c.cut;
    EXPECT_EQ(walk.fault()->part, c.part) << c.cut;
    EXPECT_EQ(walk.fault()->record, 0u);
    EXPECT_EQ(walk.fault()->at, c.at) << c.cut;
    EXPECT_EQ(walk.fault()->size, c.size) << c.cut;
    EXPECT_FALSE(walk.next()) << "a stopped walk stays stopped";
  }
}

TEST(NoteWalk, NoPrefixCutInsideARecordWalks) {
  std::vector<std::byte> whole;
  add_note(whole, "AMDGPU", 32, 9);
  std::size_t first_end = whole.size();
  add_note(whole, "AMD", 1, 3);
  for (std::size_t cut = 1; cut < whole.size(); ++cut) {
    std::vector<std::byte> region(whole.begin(), whole.begin() + cut);
    NoteWalk walk(region, 0, 4);
    auto notes = walk_all(walk);
    // A cut at a record's end (or at its descriptor's end, padding left out) is a shorter region.
    bool boundary = cut == first_end - 3 || cut == first_end || cut == whole.size() - 1;
    EXPECT_EQ(walk.fault().has_value(), !boundary) << cut;
  }
}

TEST(NoteWalk, NeverReadsPastHugeDeclaredSizes) {
  std::vector<std::byte> region;
  add_note(region, "AMDGPU", 32, 4);
  std::uint32_t huge = 0xffffffff;
  std::memcpy(region.data() + 4, &huge, 4);  // descsz
  NoteWalk walk(region, 0, 8);
  EXPECT_FALSE(walk.next());
  ASSERT_TRUE(walk.fault());
  EXPECT_EQ(walk.fault()->part, NoteFault::Part::Descriptor);
  EXPECT_EQ(walk.fault()->size, huge);
  std::memcpy(region.data(), &huge, 4);  // namesz
  NoteWalk name(region, 0, 4);
  EXPECT_FALSE(name.next());
  EXPECT_EQ(name.fault()->part, NoteFault::Part::Name);
}

TEST(NoteRules, AlignmentAndNextRecord) {
  for (std::uint64_t align : {0u, 1u, 2u, 3u, 4u}) EXPECT_EQ(detail::note_alignment(align), 4u) << align;
  EXPECT_EQ(detail::note_alignment(8), 8u);
  EXPECT_FALSE(detail::note_alignment(16));
  EXPECT_EQ(detail::next_note_at(13, 32, 4), 16u);
  EXPECT_EQ(detail::next_note_at(13, 32, 8), 16u);
  EXPECT_EQ(detail::next_note_at(17, 32, 8), 24u);
  EXPECT_EQ(detail::next_note_at(30, 30, 8), 30u);  // the last record without its padding
  EXPECT_FALSE(detail::next_note_at(29, 30, 8));
  EXPECT_FALSE(detail::next_note_at(~std::uint64_t{0} - 1, ~std::uint64_t{0}, 4));
}

// ---------------------------------------------------------------------------
// The tables of a written object.

std::vector<std::byte> small_object() {
  testing::msgpack::Writer w;
  w.map(2).str("amdhsa.version").array(2).uint(1).uint(2).str("amdhsa.kernels").array(0);
  testing::ElfSpec spec;
  spec.metadata_note = w.take();
  testing::KernelSpec kernel;
  kernel.descriptor_symbol = "k.kd";
  kernel.function_symbol = "k";
  spec.kernels.push_back(kernel);
  return testing::write_amdgpu_elf(spec);
}

TEST(ElfView, ListsTheTablesOfAWrittenObject) {
  auto elf = small_object();
  detail::AlignedBytes aligned(elf);
  ASSERT_TRUE(Succeeds(detail::check_code_object_header(aligned.bytes())));
  auto view = detail::ElfView::open(aligned.bytes());
  ASSERT_TRUE(Succeeds(view));
  auto layout = view->layout();
  ASSERT_TRUE(Succeeds(layout));
  ASSERT_EQ(layout->segments.size(), 3u);  // PT_LOAD R, PT_LOAD RX, PT_NOTE
  EXPECT_EQ(layout->segments[2].type, testing::kPtNote);
  EXPECT_EQ(layout->segments[2].index, 2u);
  const auto& header = view->header();
  EXPECT_EQ(layout->sections.size(), header.e_shnum);
  // The section header table is written last: the tables reach the end.
  EXPECT_EQ(detail::elf_tables_extent(aligned.bytes()), elf.size());
  EXPECT_EQ(detail::elf_tables_extent(aligned.bytes().first(63)), 63u);

  auto symbols = detail::read_symbols(aligned.bytes(), *layout);
  ASSERT_TRUE(Succeeds(symbols));
  bool descriptor = false;
  for (const auto& symbol : *symbols) descriptor |= symbol.name == "k.kd" && symbol.size == 64;
  EXPECT_TRUE(descriptor);

  // The PT_NOTE segment walks to the metadata note.
  const auto& note = layout->segments[2];
  NoteWalk walk(aligned.bytes().subspan(note.offset, note.filesz), note.offset, *detail::note_alignment(note.align));
  auto first = walk.next();
  ASSERT_TRUE(first);
  EXPECT_TRUE(first->is_amdgpu_metadata());
}

TEST(ElfView, RefusesAnotherMachineAndTablesPastTheEnd) {
  testing::ElfSpec spec;
  spec.machine = 62;  // EM_X86_64
  auto x86 = testing::write_amdgpu_elf(spec);
  detail::AlignedBytes aligned(x86);
  auto view = detail::ElfView::open(aligned.bytes());
  ASSERT_TRUE(FailsAtField(view, ErrorKind::Malformed, "e_machine", 0x12, 62));
  // The location is data: the sentence stays as written.
  EXPECT_EQ(view.error().message(), "code object ELF: e_machine 62 at offset 0x12 is not EM_AMDGPU (224)");

  testing::ElfSpec far;
  far.header.e_shoff = 0x100000;
  auto bad = testing::write_amdgpu_elf(far);
  detail::AlignedBytes bad_aligned(bad);
  auto checked = detail::check_code_object_header(bad_aligned.bytes());
  EXPECT_TRUE(FailsAtField(checked, ErrorKind::OutOfBounds, "e_shoff", 0x28, 0x100000, bad.size()));
}

// ---------------------------------------------------------------------------
// Where the decoder says amdhsa.target lies.

TEST(MetadataTargetLocation, FixstrAndStr8) {
  for (std::size_t length : {std::size_t{26}, std::size_t{40}}) {
    std::string target = "amdgcn-amd-amdhsa--gfx90a" + std::string(length - 25, 'x');
    testing::msgpack::Writer w;
    w.map(3).str("amdhsa.version").array(2).uint(1).uint(2).str("amdhsa.target").str(target);
    std::size_t at = w.bytes().size();
    w.str("amdhsa.kernels").array(0);
    auto bytes = w.take();
    auto decoded = detail::decode_metadata(bytes);
    ASSERT_TRUE(Succeeds(decoded));
    ASSERT_TRUE(decoded->target_at);
    unsigned head = length <= 31 ? 1 : 2;
    EXPECT_EQ(decoded->target_at->offset, at - head - length);
    EXPECT_EQ(decoded->target_at->head, head);
    EXPECT_EQ(decoded->target_at->length, length);
    EXPECT_EQ(decoded->metadata.target, target);
  }
  testing::msgpack::Writer w;
  w.map(2).str("amdhsa.version").array(2).uint(1).uint(2).str("amdhsa.kernels").array(0);
  auto decoded = detail::decode_metadata(w.take());
  ASSERT_TRUE(Succeeds(decoded));
  EXPECT_FALSE(decoded->target_at);
}

}  // namespace
}  // namespace coload
