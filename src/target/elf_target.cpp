#include "target/elf_target.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <optional>
#include <vector>

#include "codeobject/elf_view.h"
#include "common/aligned_bytes.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Object/ELF.h"

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
  if (auto tables = check_header_tables(unaligned); !tables) return std::move(tables).error();
  AlignedBytes aligned(unaligned.first(elf_tables_extent(unaligned)));
  auto view = ElfView::open(aligned.bytes());
  if (!view) return std::move(view).error();
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

Expected<std::string> target_id_from_elf_header(Bytes elf) {
  // Sizing checks every table and content range, so a truncated object fails here.
  if (auto size = code_object_size(elf); !size) return std::move(size).error();
  auto target = read_code_object_target(elf);
  if (!target) return std::move(target).error();
  return target->target.str();
}

}  // namespace coload::detail

namespace coload {
namespace {

using detail::hex;

FeatureState v4_state(std::uint32_t bits, std::uint32_t any, std::uint32_t off, std::uint32_t on) {
  if (bits == on) return FeatureState::On;
  if (bits == off) return FeatureState::Off;
  if (bits == any) return FeatureState::Any;
  return FeatureState::Unsupported;
}

}  // namespace

Expected<CodeObjectTarget> read_code_object_target(std::span<const std::byte> elf) {
  namespace E = llvm::ELF;
  // "code object ELF header: <what>", the header field at fault as its location.
  auto fail = [](ErrorKind kind, std::string what, std::string_view field, std::uint64_t offset,
                 std::optional<std::uint64_t> value = std::nullopt,
                 std::optional<std::uint64_t> limit = std::nullopt) -> Error {
    return Error(kind, "code object ELF header: " + what).at_field(field, offset, value, limit);
  };
  if (elf.size() < sizeof(E::Elf64_Ehdr)) {
    return fail(ErrorKind::Truncated,
                "needs " + std::to_string(sizeof(E::Elf64_Ehdr)) + " bytes, have " + std::to_string(elf.size()),
                "ELF header", 0, std::nullopt, elf.size());
  }
  E::Elf64_Ehdr header;
  std::memcpy(&header, elf.data(), sizeof header);
  if (std::memcmp(header.e_ident, E::ElfMagic, 4) != 0) {
    return fail(ErrorKind::BadMagic, "bytes " + detail::show_bytes(elf.first(4)) + " at offset 0 are not \\x7fELF",
                "EI_MAG", E::EI_MAG0);
  }
  if (header.e_ident[E::EI_CLASS] != E::ELFCLASS64 || header.e_ident[E::EI_DATA] != E::ELFDATA2LSB) {
    // The sentence gives both; the location names the one at fault.
    const bool class_wrong = header.e_ident[E::EI_CLASS] != E::ELFCLASS64;
    const unsigned at = class_wrong ? E::EI_CLASS : E::EI_DATA;
    return fail(ErrorKind::Malformed,
                "EI_CLASS " + std::to_string(header.e_ident[E::EI_CLASS]) + " / EI_DATA " +
                    std::to_string(header.e_ident[E::EI_DATA]) + " at offset 0x4 is not 64-bit little-endian (2 / 1)",
                class_wrong ? "EI_CLASS" : "EI_DATA", at, header.e_ident[at]);
  }
  if (header.e_machine != E::EM_AMDGPU) {
    return fail(ErrorKind::Malformed,
                "e_machine " + std::to_string(header.e_machine) + " at offset 0x12 is not EM_AMDGPU (224)", "e_machine",
                offsetof(E::Elf64_Ehdr, e_machine), header.e_machine);
  }
  unsigned osabi = header.e_ident[E::EI_OSABI];
  if (osabi != E::ELFOSABI_AMDGPU_HSA) {
    return fail(ErrorKind::Malformed,
                "EI_OSABI " + std::to_string(osabi) +
                    " at offset 0x7 is not ELFOSABI_AMDGPU_HSA (64); PAL (65) and Mesa (66) "
                    "objects are not HSA code objects",
                "EI_OSABI", E::EI_OSABI, osabi);
  }
  unsigned abi = header.e_ident[E::EI_ABIVERSION];
  if (abi < E::ELFABIVERSION_AMDGPU_HSA_V3 || abi > E::ELFABIVERSION_AMDGPU_HSA_V6) {
    return fail(
        ErrorKind::UnsupportedVersion,
        "EI_ABIVERSION " + std::to_string(abi) + " at offset 0x8 " +
            (abi == E::ELFABIVERSION_AMDGPU_HSA_V2 ? std::string("is code object v2, which coload does not read")
                                                   : std::string("is not a known code object version")) +
            " (1..4 are v3..v6)",
        "EI_ABIVERSION", E::EI_ABIVERSION, abi);
  }
  CodeObjectTarget result;
  result.e_flags = header.e_flags;
  result.e_type = header.e_type;
  result.code_object_version = abi + 2;
  std::uint32_t mach = header.e_flags & E::EF_AMDGPU_MACH;
  const Processor* processor = find_processor_by_mach(mach);
  if (!processor) {
    return fail(
        ErrorKind::NotFound,
        "e_flags " + hex(header.e_flags) + " at offset 0x30: EF_AMDGPU_MACH " + hex(mach) + " is not a known processor",
        "e_flags", offsetof(E::Elf64_Ehdr, e_flags), header.e_flags);
  }
  result.target.processor = processor;
  if (abi >= E::ELFABIVERSION_AMDGPU_HSA_V4) {
    result.target.sramecc =
        v4_state(header.e_flags & E::EF_AMDGPU_FEATURE_SRAMECC_V4, E::EF_AMDGPU_FEATURE_SRAMECC_ANY_V4,
                 E::EF_AMDGPU_FEATURE_SRAMECC_OFF_V4, E::EF_AMDGPU_FEATURE_SRAMECC_ON_V4);
    result.target.xnack = v4_state(header.e_flags & E::EF_AMDGPU_FEATURE_XNACK_V4, E::EF_AMDGPU_FEATURE_XNACK_ANY_V4,
                                   E::EF_AMDGPU_FEATURE_XNACK_OFF_V4, E::EF_AMDGPU_FEATURE_XNACK_ON_V4);
  } else {
    // v3 has one bit per feature. LLVM sets it for on and for any; ROCr, CLR
    // and comgr read it as `+` and a clear bit as `-` where the processor has
    // the mode, and so does coload: an object they refuse is not chosen.
    auto v3_state = [](bool on, bool supported) {
      return on ? FeatureState::On : supported ? FeatureState::Off : FeatureState::Unsupported;
    };
    result.target.sramecc = v3_state(header.e_flags & E::EF_AMDGPU_FEATURE_SRAMECC_V3, processor->sramecc);
    result.target.xnack =
        v3_state(header.e_flags & E::EF_AMDGPU_FEATURE_XNACK_V3, processor->xnack == XnackSupport::OnOff);
  }
  // "Any" for a mode the processor lacks means the same as unsupported (ROCm
  // LLVM writes sramecc any for gfx1250: e_flags 0x549).
  if (!processor->sramecc && result.target.sramecc == FeatureState::Any) {
    result.target.sramecc = FeatureState::Unsupported;
  }
  if (processor->xnack == XnackSupport::None && result.target.xnack == FeatureState::Any) {
    result.target.xnack = FeatureState::Unsupported;
  }
  // Always-on xnack: unsupported or any is the bare processor; on is kept,
  // since ROCr names such an object gfx1250:xnack+ and refuses it unless its
  // table has that name (docs/selection.md, "Always-on xnack").
  if (processor->xnack == XnackSupport::AlwaysOn && result.target.xnack == FeatureState::Any) {
    result.target.xnack = FeatureState::Unsupported;
  }
  if (abi >= E::ELFABIVERSION_AMDGPU_HSA_V6) {
    result.generic_version = header.e_flags >> E::EF_AMDGPU_GENERIC_VERSION_OFFSET;
  }
  return result;
}

}  // namespace coload
