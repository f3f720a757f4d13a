// Test-side writer for AMDGPU ELF code objects, independent of the library
// under test (no coload header): the 64-byte ELF header the selector reads,
// and complete minimal AMDHSA code objects (metadata note, kernel descriptors,
// entry functions, symbol table) with knobs to corrupt every field the reader
// checks. Tests and fuzz targets link it as coload_elf_writer.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace coload::testing {

// EI_ABIVERSION values (ELF.h): 1 = v3, 2 = v4, 3 = v5, 4 = v6.
inline constexpr std::uint8_t kAbiV3 = 1, kAbiV4 = 2, kAbiV5 = 3, kAbiV6 = 4;

// e_flags pieces (docs/format.md, "ELF header").
inline constexpr std::uint32_t kXnackAny = 0x100, kXnackOff = 0x200, kXnackOn = 0x300;
inline constexpr std::uint32_t kSrameccAny = 0x400, kSrameccOff = 0x800, kSrameccOn = 0xc00;
inline constexpr std::uint32_t generic_version(std::uint32_t version) { return version << 24; }

// A 64-byte ELF64 little-endian header: EM_AMDGPU, ELFOSABI_AMDGPU_HSA, ET_DYN.
inline std::vector<std::byte> amdgpu_elf_header(std::uint32_t e_flags, std::uint8_t abi_version = kAbiV6,
                                                std::uint8_t osabi = 64, std::uint16_t machine = 224) {
  std::vector<std::byte> header(64);
  auto put = [&](std::size_t offset, auto value) { std::memcpy(header.data() + offset, &value, sizeof value); };
  std::memcpy(header.data(),
              "\x7f"
              "ELF",
              4);
  put(4, std::uint8_t{2});  // ELFCLASS64
  put(5, std::uint8_t{1});  // ELFDATA2LSB
  put(6, std::uint8_t{1});  // EV_CURRENT
  put(7, osabi);
  put(8, abi_version);
  put(16, std::uint16_t{3});  // ET_DYN
  put(18, machine);
  put(20, std::uint32_t{1});
  put(48, e_flags);
  put(52, std::uint16_t{64});  // e_ehsize
  return header;
}

// ---------------------------------------------------------------------------
// Complete code objects.

// ELF constants the specs below use (values from the gABI and AMDGPUUsage).
inline constexpr std::uint16_t kEtRel = 1, kEtExec = 2, kEtDyn = 3;
inline constexpr std::uint32_t kShtProgbits = 1, kShtSymtab = 2, kShtStrtab = 3, kShtNote = 7, kShtNobits = 8,
                               kShtDynsym = 11;
inline constexpr std::uint32_t kPtLoad = 1, kPtNote = 4;
inline constexpr std::uint8_t kSttNotype = 0, kSttObject = 1, kSttFunc = 2;
inline constexpr std::uint16_t kShnAbs = 0xfff1;
inline constexpr std::uint32_t kNtAmdgpuMetadata = 32;
inline constexpr std::uint32_t kMachGfx90a = 0x03f, kMachGfx1100 = 0x041, kMachGfx908 = 0x030;

/// The fields of a 64-byte kernel descriptor (AMDGPUUsage "Kernel Descriptor").
struct DescriptorFields {
  std::uint32_t group_segment_fixed_size = 0;
  std::uint32_t private_segment_fixed_size = 0;
  std::uint32_t kernarg_size = 0;
  std::int64_t kernel_code_entry_byte_offset = 0;  ///< overwritten when KernelSpec::link_entry
  std::uint32_t compute_pgm_rsrc3 = 0;
  std::uint32_t compute_pgm_rsrc1 = 0;
  std::uint32_t compute_pgm_rsrc2 = 0;
  std::uint16_t kernel_code_properties = 0;  ///< bit 10 wave32, bit 11 dynamic stack
  std::uint16_t kernarg_preload = 0;
};
/// The descriptor's bytes; reserved bytes zero.
std::array<std::byte, 64> descriptor_bytes(const DescriptorFields& fields);

/// Replaces fields of one written symbol (ELF64 Sym) after layout.
struct SymbolOverrides {
  std::optional<std::uint32_t> st_name;
  std::optional<std::uint8_t> st_type;  ///< STT_* (binding stays GLOBAL)
  std::optional<std::uint16_t> st_shndx;
  std::optional<std::uint64_t> st_value;
  std::optional<std::uint64_t> st_size;
};

/// One kernel's symbols: an STT_OBJECT descriptor in .rodata (64-aligned,
/// st_size 64) and, when `function_symbol` is set, an STT_FUNC in .text at the
/// kernel's 256-byte code slot.
struct KernelSpec {
  std::string descriptor_symbol;  ///< "k.kd"
  std::array<std::byte, 64> descriptor{};
  std::string function_symbol;  ///< "k"; empty: no function symbol
  /// Writes kernel_code_entry_byte_offset so that it points at the code slot.
  bool link_entry = true;
  SymbolOverrides descriptor_overrides, function_overrides;
};

/// One ELF note record. The declared sizes may lie; the real bytes are written.
struct NoteRecord {
  std::string name = "AMDGPU";  ///< written with its NUL
  std::uint32_t type = kNtAmdgpuMetadata;
  std::vector<std::byte> desc;
  std::optional<std::uint32_t> namesz, descsz;  ///< declared sizes; default the real ones
};

/// Replaces fields of the section with this name after layout.
struct SectionPatch {
  std::string name;  ///< ".note", ".rodata", ".text", ".symtab" (or ".dynsym"), ".strtab" (".dynstr"), ".shstrtab"
  std::optional<std::uint32_t> sh_type, sh_link;
  std::optional<std::uint64_t> sh_addr, sh_offset, sh_size, sh_entsize, sh_addralign;
};

/// Replaces fields of the first program header of this type (or the one at
/// `index`: 0 PT_LOAD R, 1 PT_LOAD RX, 2 PT_NOTE) after layout.
struct SegmentPatch {
  std::uint32_t p_type = kPtNote;
  std::optional<std::size_t> index;
  std::optional<std::uint32_t> p_flags;
  std::optional<std::uint64_t> p_offset, p_vaddr, p_filesz, p_memsz, p_align;
};

/// Replaces ELF header fields after layout.
struct HeaderPatch {
  std::optional<std::uint64_t> e_phoff, e_shoff;
  std::optional<std::uint16_t> e_ehsize, e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx;
  std::optional<std::uint32_t> e_version;
};

/// A minimal AMDHSA code object. Layout: header, program headers (PT_LOAD R
/// for .note and .rodata, PT_LOAD RX for .text at vaddr = offset + 0x1000,
/// PT_NOTE), .note, .rodata (descriptors), .text (256 bytes per kernel),
/// symbol table, its string table, .shstrtab, section headers.
struct ElfSpec {
  std::uint32_t e_flags = kMachGfx90a | kXnackAny | kSrameccAny;
  std::uint8_t abi_version = kAbiV5;
  std::uint16_t e_type = kEtDyn;
  std::uint8_t osabi = 64;
  std::uint16_t machine = 224;

  /// The NT_AMDGPU_METADATA descriptor (msgpack); empty: no metadata note.
  std::vector<std::byte> metadata_note;
  /// Further records, written after the metadata note.
  std::vector<NoteRecord> notes;
  bool note_segment = true;  ///< a PT_NOTE over .note
  std::uint32_t note_section_type = kShtNote;
  bool drop_last_note_padding = false;  ///< the last record ends at its descriptor's end

  std::vector<KernelSpec> kernels;
  bool symbol_table = true;
  std::uint32_t symbol_table_type = kShtSymtab;  ///< or kShtDynsym (then named .dynsym/.dynstr)
  bool also_dynsym = false;                      ///< a second, identical table as .dynsym/.dynstr

  std::vector<SectionPatch> section_patches;
  std::vector<SegmentPatch> segment_patches;
  HeaderPatch header;
};

/// Writes the object `spec` describes.
std::vector<std::byte> write_amdgpu_elf(const ElfSpec& spec);

}  // namespace coload::testing
