#include "target/elf_target.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Object/ELF.h"
#include "target/processors.h"

namespace coload::detail {
namespace {

/// LLVM's ELF reader reads its tables in place and expects them naturally
/// aligned; an entry of a -bundle-align=1 bundle is not. Copies only then.
class Aligned {
 public:
  explicit Aligned(Bytes bytes) : bytes_(bytes) {
    if (reinterpret_cast<std::uintptr_t>(bytes.data()) % alignof(std::uint64_t) == 0) return;
    storage_.resize((bytes.size() + 7) / 8);
    std::memcpy(storage_.data(), bytes.data(), bytes.size());
    bytes_ = Bytes(reinterpret_cast<const std::byte*>(storage_.data()), bytes.size());
  }
  Bytes bytes() const { return bytes_; }

 private:
  Bytes bytes_;
  std::vector<std::uint64_t> storage_;
};

// Returns LLVM's own Expected: a coload::Expected<llvm::…> instantiation would
// be a weak coload:: symbol carrying an LLVM type out of libcoload.so.
llvm::Expected<llvm::object::ELF64LEFile> open_amdgpu_elf(Bytes elf) {
  auto file = llvm::object::ELF64LEFile::create(as_chars(elf));
  if (file && file->getHeader().e_machine != llvm::ELF::EM_AMDGPU) {
    return llvm::createStringError("e_machine " + std::to_string(file->getHeader().e_machine) +
                                   " at offset 0x12 is not EM_AMDGPU (224)");
  }
  return file;
}

}  // namespace

Expected<std::uint64_t> code_object_size(Bytes unaligned) {
  Aligned aligned(unaligned);
  Bytes elf = aligned.bytes();
  auto file = open_amdgpu_elf(elf);
  if (!file) return Error(ErrorKind::Malformed, "code object ELF: " + llvm::toString(file.takeError()));
  const auto& header = file->getHeader();
  std::uint64_t end = std::max<std::uint64_t>(header.e_ehsize, sizeof(llvm::ELF::Elf64_Ehdr));
  auto extend = [&](std::string_view what, std::uint64_t offset, std::uint64_t size) -> Expected<void> {
    if (auto fits = check_range(what, offset, size, elf.size(), "the available bytes"); !fits) return fits;
    end = std::max(end, offset + size);
    return {};
  };
  // LLVM has checked both header tables against the buffer when listing them.
  auto sections = file->sections();
  if (!sections) return Error(ErrorKind::Malformed, "code object ELF: " + llvm::toString(sections.takeError()));
  if (!sections->empty()) end = std::max<std::uint64_t>(end, header.e_shoff + sections->size() * header.e_shentsize);
  for (const auto& section : *sections) {
    if (section.sh_type == llvm::ELF::SHT_NOBITS) continue;
    if (auto fits = extend("code object section", section.sh_offset, section.sh_size); !fits) {
      return std::move(fits).error();
    }
  }
  auto segments = file->program_headers();
  if (!segments) return Error(ErrorKind::Malformed, "code object ELF: " + llvm::toString(segments.takeError()));
  if (!segments->empty()) end = std::max<std::uint64_t>(end, header.e_phoff + segments->size() * header.e_phentsize);
  for (const auto& segment : *segments) {
    if (auto fits = extend("code object segment", segment.p_offset, segment.p_filesz); !fits) {
      return std::move(fits).error();
    }
  }
  return end;
}

Expected<std::string> target_id_from_elf_header(Bytes elf) {
  // Sizing checks every table and content range, so a truncated object fails here.
  if (auto size = code_object_size(elf); !size) return std::move(size).error();
  llvm::ELF::Elf64_Ehdr header;
  std::memcpy(&header, elf.data(), sizeof header);  // sized and checked above; may be unaligned
  std::uint32_t flags = header.e_flags;
  auto processor = processor_for_mach(flags & llvm::ELF::EF_AMDGPU_MACH);
  if (!processor) {
    return Error(ErrorKind::NotFound, "code object ELF: e_flags " + hex(flags) + " at offset 0x30: EF_AMDGPU_MACH " +
                                          hex(flags & llvm::ELF::EF_AMDGPU_MACH) + " is not a known processor");
  }
  std::string id(*processor);
  unsigned abi_version = header.e_ident[llvm::ELF::EI_ABIVERSION];
  if (abi_version >= llvm::ELF::ELFABIVERSION_AMDGPU_HSA_V4) {
    switch (flags & llvm::ELF::EF_AMDGPU_FEATURE_SRAMECC_V4) {
      case llvm::ELF::EF_AMDGPU_FEATURE_SRAMECC_OFF_V4: id += ":sramecc-"; break;
      case llvm::ELF::EF_AMDGPU_FEATURE_SRAMECC_ON_V4: id += ":sramecc+"; break;
      default: break;  // any or unsupported: not part of the target ID
    }
    switch (flags & llvm::ELF::EF_AMDGPU_FEATURE_XNACK_V4) {
      case llvm::ELF::EF_AMDGPU_FEATURE_XNACK_OFF_V4: id += ":xnack-"; break;
      case llvm::ELF::EF_AMDGPU_FEATURE_XNACK_ON_V4: id += ":xnack+"; break;
      default: break;
    }
  } else if (abi_version == llvm::ELF::ELFABIVERSION_AMDGPU_HSA_V3) {
    if (flags & llvm::ELF::EF_AMDGPU_FEATURE_SRAMECC_V3) id += ":sramecc+";
    if (flags & llvm::ELF::EF_AMDGPU_FEATURE_XNACK_V3) id += ":xnack+";
  }
  return id;
}

}  // namespace coload::detail
