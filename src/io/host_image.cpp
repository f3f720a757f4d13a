// Classifies an input and, for host ELF images, finds .hip_fatbin and the
// bundles the __hip_fatbin_wrapper records point to. LLVM's ELF reader does
// the section and relocation table bounds checks.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "coload/detail/source.h"
#include "common/bytes.h"
#include "common/magic.h"
#include "common/try.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Object/ELF.h"

namespace coload {
namespace {

using detail::Bytes;
using detail::hex;
using ElfFile = llvm::object::ELF64LEFile;
using ElfShdr = ElfFile::Elf_Shdr;

using detail::kCcobMagic;
using detail::kElfMagic;
using detail::kKpackMagic;
using detail::kPlainBundleMagic;
constexpr std::uint32_t kHipWrapperMagic = 0x48495046;    // "HIPF"
constexpr std::uint32_t kKpackWrapperMagic = 0x4B504948;  // "HIPK": points at a kpack marker
constexpr std::uint64_t kWrapperSize = 24;
// Offsets of section header fields (Elf64_Shdr).
constexpr std::uint64_t kShTypeAt = 4;
constexpr std::uint64_t kShOffsetAt = 24;

Error from_llvm(llvm::Error error, ErrorKind kind, std::string_view context) {
  return Error(kind, std::string(context) + ": " + llvm::toString(std::move(error)));
}

struct Sections {
  const ElfShdr* fatbin = nullptr;
  const ElfShdr* wrappers = nullptr;
  const ElfShdr* marker = nullptr;  // .rocm_kpack_ref
  std::size_t wrappers_index = 0;
  std::size_t fatbin_index = 0;
};

class HostImageReader {
 public:
  HostImageReader(const ElfFile& elf, Bytes bytes, SourceLayout& layout) : elf_(elf), bytes_(bytes), layout_(layout) {}

  Expected<void> read() {
    auto sections = elf_.sections();
    if (!sections) return from_llvm(sections.takeError(), ErrorKind::Malformed, "host ELF section table");
    sections_ = *sections;
    std::string_view other_offload;  // __CLANG_OFFLOAD_BUNDLE__<id> (-fgpu-rdc) or .llvm.offloading (new driver)
    for (std::size_t index = 0; index < sections_.size(); ++index) {
      auto name = elf_.getSectionName(sections_[index]);
      if (!name) return from_llvm(name.takeError(), ErrorKind::Malformed, "host ELF section " + std::to_string(index));
      if (*name == ".hip_fatbin" && found_.fatbin == nullptr) {
        found_.fatbin = &sections_[index];
        found_.fatbin_index = index;
      } else if (*name == ".rocm_kpack_ref" && found_.marker == nullptr) {
        found_.marker = &sections_[index];
      } else if (*name == ".hipFatBinSegment" && found_.wrappers == nullptr) {
        found_.wrappers = &sections_[index];
        found_.wrappers_index = index;
      } else if (other_offload.empty() &&
                 (name->starts_with("__CLANG_OFFLOAD_BUNDLE__") || *name == ".llvm.offloading")) {
        other_offload = *name;
      }
    }
    if (found_.wrappers != nullptr) {
      auto kpack = has_kpack_wrapper();
      COLOAD_RETURN_IF_ERROR(kpack);
      if (*kpack) return read_kpack();
    }
    if (found_.fatbin == nullptr) {
      // Objects not linked yet carry device code another way; say which, not only what is missing.
      std::string why = other_offload.empty() ? " (not a HIP fat binary host image)"
                                              : "; its section " + std::string(other_offload) +
                                                    " holds device code for a link step, which coload does not read";
      return Error(ErrorKind::NotFound, "host ELF has no .hip_fatbin section" + why)
          .at_field(".hip_fatbin", std::nullopt);
    }
    const ElfShdr& fatbin = *found_.fatbin;
    if (fatbin.sh_type == llvm::ELF::SHT_NOBITS) {
      return Error(ErrorKind::Malformed, ".hip_fatbin is SHT_NOBITS: it has no contents in the file")
          .at_field(".hip_fatbin.sh_type", header_at(found_.fatbin_index) + kShTypeAt, fatbin.sh_type);
    }
    if (auto in_file =
            detail::check_range(".hip_fatbin section", fatbin.sh_offset, fatbin.sh_size, bytes_.size(), "the file");
        !in_file) {
      return std::move(in_file).error().at_field(".hip_fatbin.sh_offset", header_at(found_.fatbin_index) + kShOffsetAt,
                                                 fatbin.sh_offset, bytes_.size());
    }
    layout_.region_offset = fatbin.sh_offset;
    layout_.region_size = fatbin.sh_size;
    if (found_.wrappers != nullptr) return read_wrappers();
    return {};
  }

 private:
  /// The file offset of section header `index`.
  std::uint64_t header_at(std::size_t index) const {
    return elf_.getHeader().e_shoff + index * std::uint64_t{elf_.getHeader().e_shentsize};
  }

  /// A million bad wrappers (24 bytes each) would otherwise keep a million messages.
  static constexpr std::size_t kMaxWarnings = 16;
  std::uint64_t unlisted_warnings_ = 0;

  void warn(std::string message) {
    if (layout_.warnings.size() < kMaxWarnings) {
      layout_.warnings.push_back(std::move(message));
    } else {
      ++unlisted_warnings_;
    }
  }

  /// Whether any wrapper is a HIPK record: the image was kpack'd.
  Expected<bool> has_kpack_wrapper() const {
    auto contents = elf_.getSectionContents(*found_.wrappers);
    if (!contents) return from_llvm(contents.takeError(), ErrorKind::OutOfBounds, ".hipFatBinSegment");
    for (std::uint64_t at = 0; at + kWrapperSize <= contents->size(); at += kWrapperSize) {
      if (detail::load_le<std::uint32_t>(reinterpret_cast<const std::byte*>(contents->data()) + at) ==
          kKpackWrapperMagic) {
        return true;
      }
    }
    return false;
  }

  /// A kpack'd image: the marker's bytes, and each HIPK wrapper's code object
  /// index. Every wrapper should point at the marker; one that does not (the
  /// packer leaves a non-PIE image's pointers 0) is read through the marker
  /// section, found by name, with a warning.
  Expected<void> read_kpack() {
    if (found_.marker == nullptr) {
      return Error(ErrorKind::NotFound, "HIPK wrappers, but no .rocm_kpack_ref section for them to point at")
          .at_field(".rocm_kpack_ref", std::nullopt);
    }
    const ElfShdr& marker = *found_.marker;
    if (marker.sh_type == llvm::ELF::SHT_NOBITS) {
      return Error(ErrorKind::Malformed, ".rocm_kpack_ref is SHT_NOBITS: the marker has no contents in the file")
          .at_field(".rocm_kpack_ref.sh_type", std::nullopt, marker.sh_type);
    }
    if (auto in_file =
            detail::check_range(".rocm_kpack_ref section", marker.sh_offset, marker.sh_size, bytes_.size(), "the file");
        !in_file) {
      return std::move(in_file).error().at_field(".rocm_kpack_ref.sh_offset", std::nullopt, marker.sh_offset,
                                                 bytes_.size());
    }
    layout_.region_offset = marker.sh_offset;
    layout_.region_size = marker.sh_size;
    KpackRefLayout& ref = layout_.kpack_ref.emplace();
    ref.marker_offset = marker.sh_offset;
    ref.marker_size = marker.sh_size;

    const ElfShdr& section = *found_.wrappers;
    auto contents = elf_.getSectionContents(section);
    if (!contents) return from_llvm(contents.takeError(), ErrorKind::OutOfBounds, ".hipFatBinSegment");
    const std::uint64_t count = contents->size() / kWrapperSize;
    auto relocated = relocated_pointers(section, count);
    COLOAD_RETURN_IF_ERROR(relocated);
    std::uint64_t unset = 0;  // wrappers whose pointer nothing writes
    for (std::uint64_t i = 0; i < count; ++i) {
      const auto* record = reinterpret_cast<const std::byte*>(contents->data()) + i * kWrapperSize;
      auto where = [i] {
        return "__hip_fatbin_wrapper " + std::to_string(i) + " at .hipFatBinSegment+" + hex(i * kWrapperSize);
      };
      const auto magic = detail::load_le<std::uint32_t>(record);
      const auto version = detail::load_le<std::uint32_t>(record + 4);
      if (magic != kKpackWrapperMagic || version != 1) {
        warn(where() + ": magic " + hex(magic) + " version " + std::to_string(version) +
             " in a kpack'd image (HIPK 0x4b504948 version 1 expected); skipped");
        continue;
      }
      const std::optional<Target>& found = (*relocated)[i];
      const std::uint64_t address =
          found && !found->undefined ? found->value : detail::load_le<std::uint64_t>(record + 8);
      if (address == 0) {
        ++unset;
      } else if (address != marker.sh_addr) {
        warn(where() + ": its pointer " + hex(address) + " is not the marker's address " + hex(marker.sh_addr) +
             ": the marker is read from .rocm_kpack_ref by name");
      }
      ref.indices.push_back(detail::load_le<std::uint32_t>(record + 16));
    }
    if (unset > 0) {
      warn(std::to_string(unset) + " of " + std::to_string(count) +
           " wrappers hold pointer 0 and no relocation writes them (the packer leaves a non-PIE executable so; a "
           "runtime handed one reads address 0): their marker is read from .rocm_kpack_ref by name");
    }
    if (unlisted_warnings_ > 0) {
      layout_.warnings.push_back("and " + std::to_string(unlisted_warnings_) + " more such warnings");
    }
    return {};
  }

  Expected<void> read_wrappers() {
    const ElfShdr& section = *found_.wrappers;
    auto contents = elf_.getSectionContents(section);
    if (!contents) return from_llvm(contents.takeError(), ErrorKind::OutOfBounds, ".hipFatBinSegment");
    std::uint64_t count = contents->size() / kWrapperSize;
    if (contents->size() % kWrapperSize != 0) {
      warn(".hipFatBinSegment size " + hex(contents->size()) + " is not a multiple of 24; trailing bytes ignored");
    }
    auto relocated = relocated_pointers(section, count);
    COLOAD_RETURN_IF_ERROR(relocated);

    for (std::uint64_t i = 0; i < count; ++i) {
      const auto* record = reinterpret_cast<const std::byte*>(contents->data()) + i * kWrapperSize;
      // Built only for a warning: an image has a wrapper per translation unit.
      auto where = [i] {
        return "__hip_fatbin_wrapper " + std::to_string(i) + " at .hipFatBinSegment+" + hex(i * kWrapperSize);
      };
      auto magic = detail::load_le<std::uint32_t>(record);
      auto version = detail::load_le<std::uint32_t>(record + 4);
      if (magic != kHipWrapperMagic) {
        warn(where() + ": magic " + hex(magic) + " is not HIPF (0x48495046); skipped");
        continue;
      }
      if (version != 1) {
        warn(where() + ": version " + std::to_string(version) + " is not 1; skipped");
        continue;
      }
      auto offset = resolve(*relocated, i, detail::load_le<std::uint64_t>(record + 8), where);
      if (offset) layout_.wrapper_offsets.push_back(*offset);
    }
    if (unlisted_warnings_ > 0) {
      layout_.warnings.push_back("and " + std::to_string(unlisted_warnings_) + " more such warnings");
    }
    std::sort(layout_.wrapper_offsets.begin(), layout_.wrapper_offsets.end());
    layout_.wrapper_offsets.erase(std::unique(layout_.wrapper_offsets.begin(), layout_.wrapper_offsets.end()),
                                  layout_.wrapper_offsets.end());
    return {};
  }

  /// What a relocation says a wrapper's pointer field holds.
  struct Target {
    bool section_relative = false;  // ET_REL: value is an offset into .hip_fatbin
    std::uint64_t value = 0;
    bool undefined = false;  // a linked image's absolute relocation against an undefined symbol: no value
  };

  /// The absolute 64-bit relocation of the image's machine (R_X86_64_64,
  /// R_AARCH64_ABS64), which a linker emits for a pointer to a preemptible
  /// symbol; 0 for another machine.
  std::uint32_t absolute_type() const {
    switch (elf_.getHeader().e_machine) {
      case llvm::ELF::EM_X86_64: return llvm::ELF::R_X86_64_64;
      case llvm::ELF::EM_AARCH64: return llvm::ELF::R_AARCH64_ABS64;
      default: return 0;
    }
  }

  /// Relocations that write the pointer fields, by wrapper index (count is
  /// bounded by the section's size in the file).
  Expected<std::vector<std::optional<Target>>> relocated_pointers(const ElfShdr& wrappers, std::uint64_t count) {
    std::vector<std::optional<Target>> targets(count);
    bool relocatable = elf_.getHeader().e_type == llvm::ELF::ET_REL;
    // Field i sits at base + 24 i + 8: an address in linked images, an offset
    // into the section in relocatable objects.
    std::uint64_t base = relocatable ? 0 : wrappers.sh_addr;
    std::uint32_t relative_type = elf_.getRelativeRelocationType();
    std::uint32_t absolute = relocatable ? 0 : absolute_type();
    // Tables that fit the file side by side hold at most this many entries;
    // section headers sharing one table would each be walked in full.
    const std::uint64_t most = bytes_.size() / sizeof(llvm::object::ELF64LE::Rela);
    std::uint64_t visited = 0;
    for (const ElfShdr& section : sections_) {
      if (section.sh_type != llvm::ELF::SHT_RELA) continue;
      if (relocatable && section.sh_info != found_.wrappers_index) continue;
      auto relas = elf_.relas(section);
      if (!relas) return from_llvm(relas.takeError(), ErrorKind::OutOfBounds, "relocation section");
      visited += relas->size();
      if (visited > most) {
        return Error(ErrorKind::LimitExceeded, "relocation sections: the SHT_RELA section at offset " +
                                                   hex(section.sh_offset) + " brings their entries to " +
                                                   std::to_string(visited) + ", more than the " + std::to_string(most) +
                                                   " a file of " + hex(bytes_.size()) +
                                                   " bytes holds: section headers share or overlap tables")
            .at_field("SHT_RELA entries", section.sh_offset, visited, most);
      }
      const ElfShdr* symbols = nullptr;  // read when a relocation names a symbol
      auto symbol_of = [&](const auto& rela) -> const llvm::object::ELF64LE::Sym* {
        if (!symbols) {
          auto linked = elf_.getSection(section.sh_link);
          if (!linked) {
            llvm::consumeError(linked.takeError());
            return nullptr;
          }
          symbols = *linked;
        }
        auto symbol = elf_.getRelocationSymbol(rela, symbols);
        if (!symbol) {
          llvm::consumeError(symbol.takeError());
          return nullptr;
        }
        return *symbol;
      };
      if (relocatable) {
        auto linked = elf_.getSection(section.sh_link);
        if (!linked) return from_llvm(linked.takeError(), ErrorKind::OutOfBounds, "relocation symbol table");
        symbols = *linked;
      }
      for (const auto& rela : *relas) {
        std::uint64_t at = rela.r_offset;
        if (at < base || at - base >= count * kWrapperSize || (at - base) % kWrapperSize != 8) continue;
        std::uint64_t index = (at - base) / kWrapperSize;
        const auto addend = static_cast<std::uint64_t>(rela.r_addend);
        if (!relocatable) {
          // RELATIVE: base + addend. An absolute relocation against a symbol
          // (a preemptible __hip_fatbin): symbol + addend, resolved as a
          // RELATIVE one when the image defines the symbol (docs/reading-rules.md).
          std::uint32_t type = rela.getType(false);
          if (type == relative_type) {
            targets[index] = Target{false, addend};
          } else if (type != 0 && type == absolute) {
            if (rela.getSymbol(false) == 0) {  // no symbol: the addend is the address
              targets[index] = Target{false, addend};
            } else if (const auto* symbol = symbol_of(rela); symbol && symbol->st_shndx != llvm::ELF::SHN_UNDEF) {
              targets[index] = Target{false, symbol->st_value + addend};
            } else {
              targets[index] = Target{.undefined = true};
            }
          }
          continue;
        }
        const auto* symbol = symbol_of(rela);
        if (symbol != nullptr && symbol->st_shndx == found_.fatbin_index) {
          targets[index] = Target{true, symbol->st_value + addend};
        }
      }
    }
    return targets;
  }

  /// File offset of the bundle a wrapper points to, or nullopt with a warning.
  template <class Where>
  std::optional<std::uint64_t> resolve(const std::vector<std::optional<Target>>& relocated, std::uint64_t index,
                                       std::uint64_t stored, const Where& where) {
    const ElfShdr& fatbin = *found_.fatbin;
    const std::optional<Target>& found = relocated[index];
    std::uint64_t within = 0;
    if (found && found->section_relative) {
      within = found->value;
    } else if (found && found->undefined) {
      warn(where() +
           ": its pointer is written by a relocation against an undefined symbol, which only the "
           "dynamic loader resolves; skipped");
      return std::nullopt;
    } else if (elf_.getHeader().e_type == llvm::ELF::ET_REL) {
      warn(where() + ": no relocation into .hip_fatbin; skipped");
      return std::nullopt;
    } else {
      // lld PIE writes 0 and keeps the address in a RELATIVE addend; GNU ld,
      // non-PIE and RELR images hold the address in the field itself.
      std::uint64_t address = found ? found->value : stored;
      if (address < fatbin.sh_addr) {
        warn(where() + ": pointer " + hex(address) + " is outside .hip_fatbin [" + hex(fatbin.sh_addr) + ", +" +
             hex(fatbin.sh_size) + "); skipped");
        return std::nullopt;
      }
      within = address - fatbin.sh_addr;
    }
    if (within >= fatbin.sh_size) {
      warn(where() + ": pointer lands at .hip_fatbin+" + hex(within) + ", past its size " + hex(fatbin.sh_size) +
           "; skipped");
      return std::nullopt;
    }
    return fatbin.sh_offset + within;
  }

  const ElfFile& elf_;
  Bytes bytes_;
  SourceLayout& layout_;
  llvm::ArrayRef<ElfShdr> sections_;
  Sections found_;
};

Expected<SourceLayout> inspect_elf(Bytes bytes) {
  // e_ident[EI_CLASS] and [EI_DATA]; EI_NIDENT is 16, e_machine sits at 18.
  if (bytes.size() < 20) {
    return Error(ErrorKind::Truncated, "ELF header: file has " + hex(bytes.size()) + " bytes, needs at least 0x40")
        .at_field("ELF header", 0, bytes.size(), 0x40);
  }
  auto elf_class = static_cast<unsigned>(bytes[4]);
  auto elf_data = static_cast<unsigned>(bytes[5]);
  if (elf_class != llvm::ELF::ELFCLASS64 || elf_data != llvm::ELF::ELFDATA2LSB) {
    return Error(ErrorKind::Malformed, "ELF header: EI_CLASS " + std::to_string(elf_class) + " / EI_DATA " +
                                           std::to_string(elf_data) +
                                           " at offset 0x4: only 64-bit little-endian ELF is supported")
        .at_field(elf_class != llvm::ELF::ELFCLASS64 ? "EI_CLASS" : "EI_DATA",
                  elf_class != llvm::ELF::ELFCLASS64 ? llvm::ELF::EI_CLASS : llvm::ELF::EI_DATA,
                  elf_class != llvm::ELF::ELFCLASS64 ? elf_class : elf_data);
  }
  SourceLayout layout;
  if (detail::load_le<std::uint16_t>(bytes.data() + 18) == llvm::ELF::EM_AMDGPU) {
    layout.kind = SourceKind::CodeObject;
    layout.region_size = bytes.size();
    return layout;
  }
  auto elf = ElfFile::create(detail::as_chars(bytes));
  if (!elf) return from_llvm(elf.takeError(), ErrorKind::Malformed, "host ELF header");
  layout.kind = SourceKind::HostImage;
  HostImageReader reader(*elf, bytes, layout);
  COLOAD_RETURN_IF_ERROR(reader.read());
  return layout;
}

}  // namespace

Expected<SourceLayout> inspect_source(std::span<const std::byte> bytes) {
  if (bytes.empty()) return Error(ErrorKind::Truncated, "input is empty");
  if (detail::starts_with(bytes, kPlainBundleMagic) || detail::starts_with(bytes, kCcobMagic)) {
    SourceLayout layout;
    layout.kind = SourceKind::BundleFile;
    layout.region_size = bytes.size();
    return layout;
  }
  if (detail::starts_with(bytes, kKpackMagic)) {
    SourceLayout layout;
    layout.kind = SourceKind::KpackArchive;
    layout.region_size = bytes.size();
    return layout;
  }
  if (detail::starts_with(bytes, kElfMagic)) return inspect_elf(bytes);
  for (std::string_view magic : {kPlainBundleMagic, kCcobMagic, kKpackMagic, kElfMagic}) {
    if (bytes.size() < magic.size() && magic.starts_with(detail::as_chars(bytes))) {
      return Error(ErrorKind::Truncated, "input of " + hex(bytes.size()) + " bytes ends inside the magic " +
                                             (magic == kElfMagic ? std::string("\\x7fELF") : std::string(magic)))
          .at_field("magic", 0, bytes.size(), magic.size());
    }
  }
  return Error(ErrorKind::BadMagic, "offset 0x0: bytes " + detail::show_bytes(bytes) +
                                        " start no known format (expected __CLANG_OFFLOAD_BUNDLE__, CCOB, KPAK or ELF)")
      .at_field("magic", 0);
}

}  // namespace coload
