#include "target/elf_target.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <optional>
#include <vector>

#include "common/aligned_bytes.h"
#include "common/try.h"
#include "elf/elf_view.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Object/ELF.h"

namespace coload::detail {

Expected<std::string> target_id_from_elf_header(Bytes elf) {
  // Sizing checks every table and content range, so a truncated object fails here.
  COLOAD_RETURN_IF_ERROR(code_object_size(elf));
  auto target = read_code_object_target(elf);
  COLOAD_RETURN_IF_ERROR(target);
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
