#include "elf/code_object_size.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <optional>
#include <vector>

#include "common/aligned_bytes.h"
#include "common/try.h"
#include "elf/elf_view.h"
#include "llvm/BinaryFormat/ELF.h"

namespace coload::detail {

namespace {

/// The section and program header tables lie within `bytes`, as their ELF
/// header places them: an image cut short (a wrapper's bytes ending at their
/// mapping) is told by the field that reaches past the end, where LLVM's
/// reader would only say the table "goes past the end of file". Extended
/// counts (e_shnum 0, e_phnum PN_XNUM) are left to the ELF view.
Expected<void> check_header_tables(Bytes bytes) {
  using Header = llvm::ELF::Elf64_Ehdr;
  if (bytes.size() < sizeof(Header)) return {};
  auto field = [&](std::size_t at, std::size_t size) -> std::uint64_t {
    return size == 8 ? load_le<std::uint64_t>(bytes.data() + at) : load_le<std::uint16_t>(bytes.data() + at);
  };
  struct Table {
    const char* what;
    const char* field;
    std::size_t offset_at;
    std::uint64_t count;
    std::uint64_t entry_size;
  };
  const Table tables[] = {
      {"code object section header table", "e_shoff", offsetof(Header, e_shoff), field(offsetof(Header, e_shnum), 2),
       field(offsetof(Header, e_shentsize), 2)},
      {"code object program header table", "e_phoff", offsetof(Header, e_phoff), field(offsetof(Header, e_phnum), 2),
       field(offsetof(Header, e_phentsize), 2)},
  };
  for (const Table& table : tables) {
    if (table.count == 0 || table.count == llvm::ELF::PN_XNUM) continue;
    std::uint64_t offset = field(table.offset_at, 8);
    if (auto fits =
            check_range(table.what, offset, table.count * table.entry_size, bytes.size(), "the available bytes");
        !fits) {
      return std::move(fits).error().at_field(table.field, table.offset_at, offset, bytes.size());
    }
  }
  return {};
}

}  // namespace

Expected<std::uint64_t> code_object_size(Bytes unaligned) {
  // Sizing reads nothing past the header tables, so an unaligned object is
  // copied only that far: a region of 160 000 bare objects at odd offsets
  // was copied to its end once per object.
  COLOAD_RETURN_IF_ERROR(check_header_tables(unaligned));
  AlignedBytes aligned(unaligned.first(elf_tables_extent(unaligned)));
  auto view = ElfView::open(aligned.bytes());
  COLOAD_RETURN_IF_ERROR(view);
  const llvm::object::ELF64LEFile& file = view->file();
  const auto& header = view->header();
  std::uint64_t end = sizeof(llvm::ELF::Elf64_Ehdr);
  auto extend = [&](std::string_view what, std::uint64_t offset, std::uint64_t size) -> Expected<void> {
    if (auto fits = check_range(what, offset, size, unaligned.size(), "the available bytes"); !fits) return fits;
    end = std::max(end, offset + size);
    return {};
  };
  // A header claiming more than the bytes hold must not stretch the object.
  if (auto fits = extend("code object ELF header (e_ehsize)", 0, header.e_ehsize); !fits) {
    return std::move(fits).error().at_field("e_ehsize", offsetof(llvm::ELF::Elf64_Ehdr, e_ehsize), header.e_ehsize,
                                            unaligned.size());
  }
  // LLVM has checked both header tables against the buffer when listing them.
  auto sections = file.sections();
  if (!sections) return elf_error(ErrorKind::Malformed, llvm::toString(sections.takeError()));
  if (!sections->empty()) end = std::max<std::uint64_t>(end, header.e_shoff + sections->size() * header.e_shentsize);
  for (const auto& section : *sections) {
    // A NOBITS section occupies no bytes, but its offset still counts (ROCr's ElfSize).
    std::uint64_t size = section.sh_type == llvm::ELF::SHT_NOBITS ? 0 : section.sh_size;
    if (auto fits = extend("code object section", section.sh_offset, size); !fits) {
      return std::move(fits).error().at_field("code object section", std::nullopt, section.sh_offset, unaligned.size());
    }
  }
  auto segments = file.program_headers();
  if (!segments) return elf_error(ErrorKind::Malformed, llvm::toString(segments.takeError()));
  if (!segments->empty()) end = std::max<std::uint64_t>(end, header.e_phoff + segments->size() * header.e_phentsize);
  for (const auto& segment : *segments) {
    if (auto fits = extend("code object segment", segment.p_offset, segment.p_filesz); !fits) {
      return std::move(fits).error().at_field("code object segment", std::nullopt, segment.p_offset, unaligned.size());
    }
  }
  return end;
}

}  // namespace coload::detail
