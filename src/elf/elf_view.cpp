// The checked AMDGPU ELF view (elf_view.h): the ELF gABI and AMDGPUUsage
// ("ELF Code Object", "Note Records") are the rules; docs/reading-rules.md
// (Code objects) lists the bounds a crafted object meets.
#include "elf/elf_view.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <tuple>

#include "common/try.h"
#include "llvm/BinaryFormat/ELF.h"

namespace coload::detail {
namespace {

namespace E = llvm::ELF;

constexpr std::string_view kNoteName{"AMDGPU\0", 7};
constexpr std::uint64_t kNoteHeaderSize = 12;  // namesz, descsz, type

E::Elf64_Ehdr read_header(Bytes elf) {
  E::Elf64_Ehdr header;
  std::memcpy(&header, elf.data(), sizeof header);  // the caller checked the length
  return header;
}

}  // namespace

Error elf_error(ErrorKind kind, const std::string& what) { return Error(kind, "code object ELF: " + what); }

// ---------------------------------------------------------------------------
// Header and tables.

Expected<void> check_code_object_header(Bytes elf) {
  const E::Elf64_Ehdr header = read_header(elf);
  if (header.e_ident[E::EI_VERSION] != E::EV_CURRENT || header.e_version != E::EV_CURRENT) {
    Error error = elf_error(ErrorKind::Malformed, "EI_VERSION " + std::to_string(header.e_ident[E::EI_VERSION]) +
                                                      " (offset 0x6) / e_version " + std::to_string(header.e_version) +
                                                      " (offset 0x14) is not EV_CURRENT (1)");
    if (header.e_ident[E::EI_VERSION] != E::EV_CURRENT) {
      return std::move(error).at_field("EI_VERSION", E::EI_VERSION, header.e_ident[E::EI_VERSION]);
    }
    return std::move(error).at_field("e_version", offsetof(E::Elf64_Ehdr, e_version), header.e_version);
  }
  if (header.e_type != E::ET_DYN) {
    return elf_error(ErrorKind::Malformed,
                     "e_type " + std::to_string(header.e_type) +
                         " at offset 0x10 is not ET_DYN (3); a code object is a linked shared object")
        .at_field("e_type", offsetof(E::Elf64_Ehdr, e_type), header.e_type);
  }
  // code_object_size counts e_ehsize in the extent; only the real size is sane.
  if (header.e_ehsize != sizeof(E::Elf64_Ehdr)) {
    return elf_error(ErrorKind::Malformed, "e_ehsize " + std::to_string(header.e_ehsize) + " at offset 0x34 is not " +
                                               std::to_string(sizeof(E::Elf64_Ehdr)))
        .at_field("e_ehsize", offsetof(E::Elf64_Ehdr, e_ehsize), header.e_ehsize);
  }
  if (header.e_phnum != 0 && header.e_phentsize != sizeof(E::Elf64_Phdr)) {
    return elf_error(ErrorKind::Malformed, "e_phentsize " + std::to_string(header.e_phentsize) +
                                               " at offset 0x36 is not " + std::to_string(sizeof(E::Elf64_Phdr)))
        .at_field("e_phentsize", offsetof(E::Elf64_Ehdr, e_phentsize), header.e_phentsize);
  }
  if ((header.e_shnum != 0 || header.e_shoff != 0) && header.e_shentsize != sizeof(E::Elf64_Shdr)) {
    return elf_error(ErrorKind::Malformed, "e_shentsize " + std::to_string(header.e_shentsize) +
                                               " at offset 0x3a is not " + std::to_string(sizeof(E::Elf64_Shdr)))
        .at_field("e_shentsize", offsetof(E::Elf64_Ehdr, e_shentsize), header.e_shentsize);
  }
  // Extended numbering (PN_XNUM, e_shnum 0) keeps its count in section 0, which LLVM reads.
  if (header.e_phnum != E::PN_XNUM) {
    auto what = [&] {
      return "program header table (e_phoff " + hex(header.e_phoff) + ", " + std::to_string(header.e_phnum) +
             " entries)";
    };
    if (auto fits = check_range_lazily(what, header.e_phoff, std::uint64_t{header.e_phnum} * sizeof(E::Elf64_Phdr),
                                       elf.size(), kCodeObjectContainer);
        !fits) {
      return std::move(fits).error().at_field("e_phoff", offsetof(E::Elf64_Ehdr, e_phoff), header.e_phoff, elf.size());
    }
  }
  if (header.e_shoff != 0) {
    std::uint64_t count = header.e_shnum == 0 ? 1 : header.e_shnum;
    auto what = [&] {
      return "section header table (e_shoff " + hex(header.e_shoff) + ", " + std::to_string(count) + " entries)";
    };
    if (auto fits =
            check_range_lazily(what, header.e_shoff, count * sizeof(E::Elf64_Shdr), elf.size(), kCodeObjectContainer);
        !fits) {
      return std::move(fits).error().at_field("e_shoff", offsetof(E::Elf64_Ehdr, e_shoff), header.e_shoff, elf.size());
    }
  }
  return {};
}

Expected<ElfView> ElfView::open(Bytes elf) {
  auto file = llvm::object::ELF64LEFile::create(as_chars(elf));
  if (!file) return elf_error(ErrorKind::Malformed, llvm::toString(file.takeError()));
  if (auto machine = file->getHeader().e_machine; machine != E::EM_AMDGPU) {
    return elf_error(ErrorKind::Malformed,
                     "e_machine " + std::to_string(machine) + " at offset 0x12 is not EM_AMDGPU (224)")
        .at_field("e_machine", offsetof(E::Elf64_Ehdr, e_machine), machine);
  }
  return ElfView(std::move(*file), elf);
}

Expected<ElfLayout> ElfView::layout() const {
  ElfLayout layout;
  auto sections = file_.sections();
  if (!sections) return elf_error(ErrorKind::Malformed, llvm::toString(sections.takeError()));
  layout.sections.reserve(sections->size());
  unsigned index = 0;
  for (const auto& shdr : *sections) {
    ElfSection section{index++,      shdr.sh_type, shdr.sh_flags,     shdr.sh_addr,   shdr.sh_offset,
                       shdr.sh_size, shdr.sh_link, shdr.sh_addralign, shdr.sh_entsize};
    // A NOBITS section occupies no bytes, but its offset still counts (ROCr's ElfSize).
    std::uint64_t bytes = section.type == E::SHT_NOBITS ? 0 : section.size;
    auto what = [&] { return section.label() + " (sh_type " + std::to_string(section.type) + ")"; };
    if (auto fits = check_range_lazily(what, section.offset, bytes, bytes_.size(), kCodeObjectContainer); !fits) {
      return std::move(fits).error().at_field(section.label(), std::nullopt, section.offset, bytes_.size());
    }
    layout.sections.push_back(section);
  }
  std::uint32_t shstrndx = file_.getHeader().e_shstrndx;
  if (shstrndx != E::SHN_UNDEF && shstrndx != E::SHN_XINDEX && shstrndx >= layout.sections.size()) {
    return elf_error(ErrorKind::Malformed, "e_shstrndx " + std::to_string(shstrndx) +
                                               " at offset 0x3e is not one of the " +
                                               std::to_string(layout.sections.size()) + " sections")
        .at_field("e_shstrndx", offsetof(E::Elf64_Ehdr, e_shstrndx), shstrndx, layout.sections.size());
  }
  auto segments = file_.program_headers();
  if (!segments) return elf_error(ErrorKind::Malformed, llvm::toString(segments.takeError()));
  layout.segments.reserve(segments->size());
  index = 0;
  for (const auto& phdr : *segments) {
    ElfSegment segment{index++,      phdr.p_type,   phdr.p_flags, phdr.p_offset,
                       phdr.p_vaddr, phdr.p_filesz, phdr.p_memsz, phdr.p_align};
    auto what = [&] { return "segment " + std::to_string(segment.index) + " (p_type " + hex(segment.type) + ")"; };
    if (auto fits = check_range_lazily(what, segment.offset, segment.filesz, bytes_.size(), kCodeObjectContainer);
        !fits) {
      return std::move(fits).error().at_field("segment " + std::to_string(segment.index), std::nullopt, segment.offset,
                                              bytes_.size());
    }
    layout.segments.push_back(segment);
  }
  return layout;
}

std::uint64_t elf_tables_extent(Bytes bytes) {
  if (bytes.size() < sizeof(E::Elf64_Ehdr)) return bytes.size();
  const E::Elf64_Ehdr header = read_header(bytes);
  std::uint64_t phnum = header.e_phnum, shnum = header.e_shnum;
  const std::uint64_t shoff = header.e_shoff;
  if (shoff != 0 && shoff <= bytes.size() && bytes.size() - shoff >= sizeof(E::Elf64_Shdr)) {
    const std::byte* zero = bytes.data() + shoff;
    if (shnum == 0) shnum = load_le<std::uint64_t>(zero + offsetof(E::Elf64_Shdr, sh_size));
    if (phnum == E::PN_XNUM) phnum = load_le<std::uint32_t>(zero + offsetof(E::Elf64_Shdr, sh_info));
  }
  const std::uint64_t phoff = header.e_phoff;
  std::uint64_t end = sizeof(E::Elf64_Ehdr);
  for (auto [offset, count, entry] : {std::tuple{phoff, phnum, std::uint64_t{header.e_phentsize}},
                                      std::tuple{shoff, shnum, std::uint64_t{header.e_shentsize}}}) {
    if (count == 0) continue;
    if (entry != 0 && count > (~std::uint64_t{0} - offset) / entry) return bytes.size();
    end = std::max(end, offset + count * entry);
  }
  return std::min<std::uint64_t>(end, bytes.size());
}

// ---------------------------------------------------------------------------
// Notes.

std::optional<std::uint64_t> note_alignment(std::uint64_t align) {
  if (align <= 4) return 4;
  if (align == 8) return 8;
  return std::nullopt;
}

std::optional<std::uint64_t> next_note_at(std::uint64_t desc_end, std::uint64_t size, std::uint64_t align) {
  auto next = align_up(desc_end, align);
  if (next && *next <= size) return next;
  if (desc_end == size) return size;  // the producer left out the last record's padding
  return std::nullopt;
}

bool ElfNote::is_amdgpu_metadata() const { return type == E::NT_AMDGPU_METADATA && name == kNoteName; }

std::optional<ElfNote> NoteWalk::stop(NoteFault fault) {
  fault_ = fault;
  position_ = region_.size();
  return std::nullopt;
}

std::optional<ElfNote> NoteWalk::next() {
  const std::uint64_t size = region_.size();
  if (previous_) {  // the padding after the previous descriptor, checked when moving on
    auto [record, desc_end] = *previous_;
    previous_.reset();
    auto next = next_note_at(desc_end, size, align_);
    if (!next) return stop({NoteFault::Part::DescriptorPadding, record, desc_end, 0});
    position_ = *next;
  }
  if (position_ >= size) return std::nullopt;
  const std::uint64_t record = position_;
  if (size - record < kNoteHeaderSize) return stop({NoteFault::Part::Header, record, record, size - record});
  auto namesz = load_le<std::uint32_t>(region_.data() + record);
  auto descsz = load_le<std::uint32_t>(region_.data() + record + 4);
  auto type = load_le<std::uint32_t>(region_.data() + record + 8);
  const std::uint64_t name_at = record + kNoteHeaderSize;
  if (size - name_at < namesz) return stop({NoteFault::Part::Name, record, name_at, namesz});
  auto desc_at = align_up(name_at + namesz, align_);
  if (!desc_at || *desc_at > size) return stop({NoteFault::Part::NamePadding, record, name_at + namesz, 0});
  if (size - *desc_at < descsz) return stop({NoteFault::Part::Descriptor, record, *desc_at, descsz});
  previous_.emplace(record, *desc_at + descsz);
  return ElfNote{offset_ + record, type, as_chars(region_.subspan(name_at, namesz)), offset_ + *desc_at,
                 region_.subspan(*desc_at, descsz)};
}

Error NoteWalk::fault_error(std::string_view where) const {
  const NoteFault& fault = *fault_;
  const std::uint64_t offset = offset_, size = region_.size(), align = align_;
  using Part = detail::NoteFault::Part;
  constexpr std::string_view kLimit = "the region";
  std::string record =
      std::string(where) + " (file offset " + hex(offset) + "): note record at region offset " + hex(fault.record);
  auto out_of_range = [&](const std::string& what, std::string_view field, std::uint64_t field_at) {
    auto fits = check_range(what, fault.at, fault.size, size, kLimit);
    return (fits ? Error(ErrorKind::OutOfBounds, what) : std::move(fits).error())
        .at_field(field, offset + fault.record + field_at, fault.size, size);
  };
  switch (fault.part) {
    case Part::Header:
      return Error(ErrorKind::Truncated,
                   record + " needs a 12-byte header, only " + std::to_string(fault.size) + " bytes remain")
          .at_field("note header", offset + fault.record, std::nullopt, fault.size);
    case Part::Name: return out_of_range(record + ": name (namesz " + hex(fault.size) + ")", "namesz", 0);
    case Part::NamePadding:
      return Error(ErrorKind::OutOfBounds, record + ": name padding to " + std::to_string(align) +
                                               " bytes runs past the end of the region (" + hex(size) + " bytes)")
          .at_field("name padding", offset + fault.at, std::nullopt, size);
    case Part::Descriptor: return out_of_range(record + ": descriptor (descsz " + hex(fault.size) + ")", "descsz", 4);
    case Part::DescriptorPadding: break;
  }
  return Error(ErrorKind::Truncated, record + ": descriptor padding to " + std::to_string(align) +
                                         " bytes runs past the end of the region (" + hex(size) + " bytes)")
      .at_field("descriptor padding", offset + fault.at, std::nullopt, size);
}

// ---------------------------------------------------------------------------
// Symbols.

bool is_real_section(std::uint16_t shndx, const ElfLayout& layout) {
  return shndx != E::SHN_UNDEF && shndx < E::SHN_LORESERVE && shndx < layout.sections.size();
}

namespace {

/// Reads one SHT_SYMTAB / SHT_DYNSYM table after checking it and its string
/// table (gABI "Symbol Table"; docs/reading-rules.md, "Code objects").
Expected<void> read_symbol_table(Bytes elf, const ElfLayout& layout, const ElfSection& table,
                                 std::vector<ElfSymbol>& symbols) {
  std::string what = "symbol table " + table.label();
  // Fields are named as the sentence names them: "symbol table section 3: sh_size".
  auto field = [&](std::string_view name) { return what + ": " + std::string(name); };
  if (auto fits = check_range(what, table.offset, table.size, elf.size(), kCodeObjectContainer); !fits) {
    return std::move(fits).error().at_field(what, std::nullopt, table.offset, elf.size());
  }
  if (table.entsize != sizeof(E::Elf64_Sym)) {
    return elf_error(ErrorKind::Malformed, what + ": sh_entsize " + std::to_string(table.entsize) + " is not " +
                                               std::to_string(sizeof(E::Elf64_Sym)))
        .at_field(field("sh_entsize"), std::nullopt, table.entsize);
  }
  if (table.size % sizeof(E::Elf64_Sym) != 0) {
    return elf_error(ErrorKind::Malformed, what + ": sh_size " + hex(table.size) + " is not a multiple of " +
                                               std::to_string(sizeof(E::Elf64_Sym)))
        .at_field(field("sh_size"), std::nullopt, table.size);
  }
  if (table.link == 0 || table.link >= layout.sections.size() || layout.sections[table.link].type != E::SHT_STRTAB) {
    return elf_error(ErrorKind::Malformed,
                     what + ": sh_link " + std::to_string(table.link) + " is not a string table section")
        .at_field(field("sh_link"), std::nullopt, table.link);
  }
  const ElfSection& strings = layout.sections[table.link];
  auto strings_what = [&] { return what + ": string table " + strings.label(); };
  if (auto fits = check_range_lazily(strings_what, strings.offset, strings.size, elf.size(), kCodeObjectContainer);
      !fits) {
    return std::move(fits).error().at_field(strings_what(), std::nullopt, strings.offset, elf.size());
  }
  std::string_view text = as_chars(elf.subspan(strings.offset, strings.size));
  std::uint64_t count = table.size / sizeof(E::Elf64_Sym);
  symbols.reserve(symbols.size() + count);
  // Names may share bytes (a linker merges tails), but symbols naming one
  // long string over and over would cost symbols x string table to measure
  // and then to hash.
  const std::uint64_t name_budget = 4 * text.size() + (std::uint64_t{1} << 20);
  std::uint64_t name_bytes = 0;
  for (std::uint64_t i = 0; i < count; ++i) {
    E::Elf64_Sym raw;
    std::memcpy(&raw, elf.data() + table.offset + i * sizeof raw, sizeof raw);
    auto entry = [&] { return what + ": symbol " + std::to_string(i); };
    // The symbol's field as the sentence names it, at its byte offset in the file.
    auto at_symbol_field = [&](Error error, std::string_view name, std::size_t member, std::uint64_t value,
                               std::uint64_t limit) -> Error {
      return std::move(error).at_field(entry() + ": " + std::string(name), table.offset + i * sizeof raw + member,
                                       value, limit);
    };
    if (raw.st_name >= text.size()) {
      return at_symbol_field(
          elf_error(ErrorKind::OutOfBounds, entry() + ": st_name " + hex(raw.st_name) +
                                                " is outside its string table (" + hex(text.size()) + " bytes)"),
          "st_name", offsetof(E::Elf64_Sym, st_name), raw.st_name, text.size());
    }
    std::size_t end = text.find('\0', raw.st_name);
    if (end == std::string_view::npos) {
      return at_symbol_field(elf_error(ErrorKind::Malformed, entry() + ": name at st_name " + hex(raw.st_name) +
                                                                 " has no NUL before the end of its string table"),
                             "st_name", offsetof(E::Elf64_Sym, st_name), raw.st_name, text.size());
    }
    name_bytes += end - raw.st_name;
    if (name_bytes > name_budget) {
      return elf_error(ErrorKind::LimitExceeded, entry() + ": the names of symbols 0 to " + std::to_string(i) +
                                                     " take " + hex(name_bytes) + " bytes, more than " +
                                                     hex(name_budget) + " (four times their string table, " +
                                                     hex(text.size()) + " bytes, and 1 MiB)")
          .at_field(what, std::nullopt, name_bytes, name_budget);
    }
    if (raw.st_shndx != E::SHN_UNDEF && raw.st_shndx < E::SHN_LORESERVE && raw.st_shndx >= layout.sections.size()) {
      return at_symbol_field(
          elf_error(ErrorKind::Malformed, entry() + " (" + quoted(text.substr(raw.st_name, end - raw.st_name)) +
                                              "): st_shndx " + std::to_string(raw.st_shndx) + " is not one of the " +
                                              std::to_string(layout.sections.size()) + " sections"),
          "st_shndx", offsetof(E::Elf64_Sym, st_shndx), raw.st_shndx, layout.sections.size());
    }
    symbols.push_back({text.substr(raw.st_name, end - raw.st_name), raw.getType(), raw.st_shndx, raw.st_value,
                       raw.st_size, raw.getBinding()});
  }
  return {};
}

}  // namespace

Expected<std::vector<ElfSymbol>> read_symbols(Bytes elf, const ElfLayout& layout) {
  std::vector<ElfSymbol> symbols;
  for (std::uint32_t type : {E::SHT_SYMTAB, E::SHT_DYNSYM}) {
    const ElfSection* first = nullptr;
    for (const ElfSection& section : layout.sections) {
      if (section.type != type) continue;
      if (first) {
        return elf_error(ErrorKind::Malformed, section.label() + " is a second " +
                                                   (type == E::SHT_SYMTAB ? "SHT_SYMTAB" : "SHT_DYNSYM") + " (after " +
                                                   first->label() + "); an ELF file has at most one")
            .at_field(section.label(), std::nullopt, section.type);
      }
      first = &section;
      COLOAD_RETURN_IF_ERROR(read_symbol_table(elf, layout, section, symbols));
    }
  }
  return symbols;
}

}  // namespace coload::detail
