// Internal: the one checked view of an AMDGPU ELF64 little-endian file that
// every reader of code objects uses (CodeObject::read, the retarget, the
// sizing of a code object inside a bundle): the header checks, the section
// and segment tables with every content range checked, the note records of a
// note region, and the symbol tables. LLVM's ELF reader lists the tables;
// the note walk is this file's own, since LLVM's note iterator requires the
// last record's padding and says only "ELF note overflows container".
// Does not cover: the metadata msgpack (code_object/metadata.h), kernel descriptors
// (code_object/kernel_descriptor.h), the target ID in e_flags (coload/target.h
// read_code_object_target), host images (io/host_image.cpp).
// Lifetime: every view borrows the caller's bytes, which must be 8-byte
// aligned (common/aligned_bytes.h) and outlive it. Thread safety: views are
// immutable after creation.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/bytes.h"
#include "elf/code_object_size.h"
#include "llvm/Object/ELF.h"

namespace coload::detail {

/// What an ELF range must fit in, as range errors name it.
inline constexpr std::string_view kCodeObjectContainer = "the code object";

/// check_range, with `what()` building the range's name only when the range
/// does not fit: most ranges are checked once per section, symbol or kernel.
template <class What>
Expected<void> check_range_lazily(What&& what, std::uint64_t offset, std::uint64_t size, std::uint64_t limit,
                                  std::string_view container) {
  if (auto end = checked_add(offset, size); end && *end <= limit) return {};
  return check_range(what(), offset, size, limit, container);
}

/// "code object ELF: <what>": the prefix of the view's own messages.
Error elf_error(ErrorKind kind, const std::string& what);

/// What an ELF file's bytes must hold for a code object beyond the fields
/// read_code_object_target checks: EV_CURRENT, ET_DYN, real e_ehsize,
/// e_phentsize and e_shentsize, both header tables within `elf` (which holds
/// at least the 64-byte header). Errors: Malformed, OutOfBounds, Overflow.
Expected<void> check_code_object_header(Bytes elf);

/// A section header, copied out of the bytes.
struct ElfSection {
  unsigned index = 0;
  std::uint32_t type = 0;
  std::uint64_t flags = 0, addr = 0, offset = 0, size = 0;
  std::uint32_t link = 0;
  std::uint64_t addralign = 0, entsize = 0;

  /// "section 3", as messages name it.
  std::string label() const { return "section " + std::to_string(index); }
};

/// A program header, copied out.
struct ElfSegment {
  unsigned index = 0;
  std::uint32_t type = 0, flags = 0;
  std::uint64_t offset = 0, vaddr = 0, filesz = 0, memsz = 0, align = 0;
};

/// Both header tables, each entry's contents checked to lie in the file.
struct ElfLayout {
  std::vector<ElfSection> sections;
  std::vector<ElfSegment> segments;
};

/// An AMDGPU ELF64 LE file as LLVM's reader opens it.
class ElfView {
 public:
  /// LLVM's checks of the header, and e_machine EM_AMDGPU. Errors:
  /// Malformed "code object ELF: <reason>".
  static Expected<ElfView> open(Bytes elf);

  Bytes bytes() const { return bytes_; }
  const llvm::object::ELF64LEFile& file() const { return file_; }
  const llvm::object::ELF64LE::Ehdr& header() const { return file_.getHeader(); }

  /// Both tables copied out, with every section (NOBITS: its offset) and
  /// segment range inside the file and e_shstrndx naming a section. Errors:
  /// Malformed for what LLVM refuses ("code object ELF: <reason>") and a bad
  /// e_shstrndx, OutOfBounds / Overflow "section 3 (sh_type 1): ...".
  Expected<ElfLayout> layout() const;

 private:
  ElfView(llvm::object::ELF64LEFile file, Bytes bytes) : file_(std::move(file)), bytes_(bytes) {}

  llvm::object::ELF64LEFile file_;
  Bytes bytes_;
};

/// How far the header and both header tables of the ELF at bytes[0] reach
/// (section 0 holds the counts of PN_XNUM / SHN_UNDEF headers); all of
/// `bytes` when it cannot tell. Reads only the header and section 0.
std::uint64_t elf_tables_extent(Bytes bytes);

// ---------------------------------------------------------------------------
// Notes.

/// The record alignment of a note region whose sh_addralign / p_align is
/// `align`: 4 up to 4, 8 for 8, nullopt (not a note region) otherwise.
std::optional<std::uint64_t> note_alignment(std::uint64_t align);

/// Where the record after a descriptor ending at `desc_end` starts in a
/// region of `size` bytes aligned to `align` (offsets within the region):
/// the padded end, or `size` when the descriptor ends the region exactly and
/// the producer left out its padding (IREE accepts this too). nullopt when
/// the padding runs past the region.
std::optional<std::uint64_t> next_note_at(std::uint64_t desc_end, std::uint64_t size, std::uint64_t align);

/// One note record; offsets are from the start of the file.
struct ElfNote {
  std::uint64_t offset = 0;  ///< the record's header (namesz, descsz, type)
  std::uint32_t type = 0;
  std::string_view name;  ///< namesz bytes, the NUL included; at name_offset()
  std::uint64_t desc_offset = 0;
  Bytes desc;

  /// Where the name starts: right after the 12-byte header.
  std::uint64_t name_offset() const { return offset + 12; }
  /// NT_AMDGPU_METADATA named "AMDGPU".
  bool is_amdgpu_metadata() const;
};

/// Why a note walk stopped early: the part of the record at `record` that
/// does not fit the region. Offsets are within the region.
struct NoteFault {
  enum class Part {
    Header,             ///< fewer than 12 bytes remain (`size` of them)
    Name,               ///< [at, +size) is the name, past the region
    NamePadding,        ///< the padding after the name runs past the region
    Descriptor,         ///< [at, +size) is the descriptor, past the region
    DescriptorPadding,  ///< the padding after the descriptor runs past the region
  };
  Part part = Part::Header;
  std::uint64_t record = 0;
  std::uint64_t at = 0;
  std::uint64_t size = 0;
};

/// Walks the note records of one region by their declared sizes: a 12-byte
/// header (namesz, descsz, type), the name and the descriptor, each padded
/// to the region's alignment. `region` lies at file offset `offset`; its
/// alignment comes from note_alignment.
class NoteWalk {
 public:
  NoteWalk(Bytes region, std::uint64_t offset, std::uint64_t align) : region_(region), offset_(offset), align_(align) {}

  /// The next record; nullopt at the end of the region, or at a record that
  /// does not fit it (then fault() says which part). The padding after a
  /// record's descriptor is checked when moving on to the next one, so a
  /// caller that stops at the record it looks for never meets it.
  std::optional<ElfNote> next();
  const std::optional<NoteFault>& fault() const { return fault_; }
  /// fault() as an error (the one rendering of a note that does not fit):
  /// its kind, the record and part at their file offsets, the region's size
  /// as the limit; `where` names the region. Only when fault() is set.
  Error fault_error(std::string_view where) const;

 private:
  std::optional<ElfNote> stop(NoteFault fault);

  Bytes region_;
  std::uint64_t offset_;
  std::uint64_t align_;
  std::uint64_t position_ = 0;
  std::optional<std::pair<std::uint64_t, std::uint64_t>> previous_;  ///< the last record and its descriptor's end
  std::optional<NoteFault> fault_;
};

// ---------------------------------------------------------------------------
// Symbols.

/// One symbol; `name` views the file's bytes.
struct ElfSymbol {
  std::string_view name;
  std::uint8_t type = 0;
  std::uint16_t shndx = 0;
  std::uint64_t value = 0, size = 0;
  std::uint8_t binding = 0;  ///< STB_LOCAL, STB_GLOBAL, STB_WEAK, ...
};

/// Whether `shndx` names one of the sections (not UNDEF, not reserved).
bool is_real_section(std::uint16_t shndx, const ElfLayout& layout);

/// Every symbol of the SHT_SYMTAB and the SHT_DYNSYM, .symtab first, after
/// checking each table, its string table and each entry's name and st_shndx.
/// An ELF file has at most one of each (gABI). Errors: Malformed,
/// OutOfBounds, LimitExceeded (symbol names totalling more than four times
/// their string table and 1 MiB), each "code object ELF: symbol table ...".
Expected<std::vector<ElfSymbol>> read_symbols(Bytes elf, const ElfLayout& layout);

}  // namespace coload::detail
