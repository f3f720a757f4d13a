#include "elf_writer.h"

#include <algorithm>
#include <map>

namespace coload::testing {
namespace {

constexpr std::size_t kEhdrSize = 64, kPhdrSize = 56, kShdrSize = 64, kSymSize = 24;
constexpr std::uint64_t kTextBias = 0x1000;  // .text vaddr - offset, as lld lays it out
constexpr std::uint64_t kSlot = 256;         // code bytes per kernel
constexpr std::uint32_t kPfX = 1, kPfR = 4;
constexpr std::uint64_t kShfAlloc = 2, kShfExec = 4;

std::uint64_t align_to(std::uint64_t value, std::uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

class Buffer {
 public:
  std::vector<std::byte>& bytes() { return bytes_; }
  std::uint64_t size() const { return bytes_.size(); }

  template <class T>
  void put(std::uint64_t offset, T value) {
    if (bytes_.size() < offset + sizeof value) bytes_.resize(offset + sizeof value);
    std::memcpy(bytes_.data() + offset, &value, sizeof value);
  }
  void put_bytes(std::uint64_t offset, const void* data, std::size_t size) {
    if (bytes_.size() < offset + size) bytes_.resize(offset + size);
    if (size != 0) std::memcpy(bytes_.data() + offset, data, size);
  }
  void pad_to(std::uint64_t alignment) { bytes_.resize(align_to(bytes_.size(), alignment)); }

 private:
  std::vector<std::byte> bytes_;
};

/// A string table under construction; offset 0 is the empty name.
class Strings {
 public:
  Strings() { text_.push_back('\0'); }
  std::uint32_t add(const std::string& name) {
    auto offset = static_cast<std::uint32_t>(text_.size());
    text_.insert(text_.end(), name.begin(), name.end());
    text_.push_back('\0');
    return offset;
  }
  const std::vector<char>& text() const { return text_; }

 private:
  std::vector<char> text_;
};

struct Shdr {
  std::string name;
  std::uint32_t type = 0;
  std::uint64_t flags = 0, addr = 0, offset = 0, size = 0;
  std::uint32_t link = 0, info = 0;
  std::uint64_t addralign = 1, entsize = 0;
};

struct Phdr {
  std::uint32_t type = 0, flags = 0;
  std::uint64_t offset = 0, vaddr = 0, filesz = 0, memsz = 0, align = 0;
};

struct Sym {
  std::uint32_t name = 0;
  std::uint8_t info = 0, other = 3;  // STV_PROTECTED, as lld writes kernels
  std::uint16_t shndx = 0;
  std::uint64_t value = 0, size = 0;
};

void apply(Sym& sym, const SymbolOverrides& overrides) {
  if (overrides.st_name) sym.name = *overrides.st_name;
  if (overrides.st_type) sym.info = static_cast<std::uint8_t>((sym.info & 0xf0) | (*overrides.st_type & 0x0f));
  if (overrides.st_shndx) sym.shndx = *overrides.st_shndx;
  if (overrides.st_value) sym.value = *overrides.st_value;
  if (overrides.st_size) sym.size = *overrides.st_size;
}

std::vector<std::byte> note_bytes(const ElfSpec& spec) {
  std::vector<NoteRecord> records;
  if (!spec.metadata_note.empty()) {
    NoteRecord metadata;
    metadata.desc = spec.metadata_note;
    records.push_back(std::move(metadata));
  }
  records.insert(records.end(), spec.notes.begin(), spec.notes.end());
  Buffer out;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const NoteRecord& record = records[i];
    std::uint64_t at = out.size();
    out.put(at, record.namesz.value_or(static_cast<std::uint32_t>(record.name.size() + 1)));
    out.put(at + 4, record.descsz.value_or(static_cast<std::uint32_t>(record.desc.size())));
    out.put(at + 8, record.type);
    out.put_bytes(at + 12, record.name.c_str(), record.name.size() + 1);
    out.pad_to(4);
    out.put_bytes(out.size(), record.desc.data(), record.desc.size());
    bool last = i + 1 == records.size();
    if (!(last && spec.drop_last_note_padding)) out.pad_to(4);
  }
  return std::move(out.bytes());
}

}  // namespace

std::array<std::byte, 64> descriptor_bytes(const DescriptorFields& fields) {
  Buffer out;
  out.put(0, fields.group_segment_fixed_size);
  out.put(4, fields.private_segment_fixed_size);
  out.put(8, fields.kernarg_size);
  out.put(16, fields.kernel_code_entry_byte_offset);
  out.put(44, fields.compute_pgm_rsrc3);
  out.put(48, fields.compute_pgm_rsrc1);
  out.put(52, fields.compute_pgm_rsrc2);
  out.put(56, fields.kernel_code_properties);
  out.put(58, fields.kernarg_preload);
  out.put(60, std::uint32_t{0});
  std::array<std::byte, 64> bytes{};
  std::copy(out.bytes().begin(), out.bytes().end(), bytes.begin());
  return bytes;
}

std::vector<std::byte> write_amdgpu_elf(const ElfSpec& spec) {
  std::vector<std::byte> notes = note_bytes(spec);
  bool has_notes = !notes.empty();
  bool note_segment = has_notes && spec.note_segment;
  std::size_t kernel_count = spec.kernels.size();

  // Layout of the loaded part.
  std::vector<Phdr> phdrs(note_segment ? 3 : 2);
  std::uint64_t note_off = align_to(kEhdrSize + phdrs.size() * kPhdrSize, 4);
  std::uint64_t rodata_off = align_to(note_off + notes.size(), 64);
  std::uint64_t rodata_size = 64 * kernel_count;
  std::uint64_t text_off = align_to(rodata_off + rodata_size, kSlot);
  std::uint64_t text_size = kSlot * std::max<std::size_t>(kernel_count, 1);
  std::uint64_t text_addr = text_off + kTextBias;

  // Sections.
  std::vector<Shdr> sections(1);
  std::map<std::string, std::size_t> index;
  auto add_section = [&](Shdr shdr) {
    index[shdr.name] = sections.size();
    sections.push_back(std::move(shdr));
  };
  if (has_notes) add_section({".note", spec.note_section_type, kShfAlloc, note_off, note_off, notes.size(), 0, 0, 4});
  add_section({".rodata", kShtProgbits, kShfAlloc, rodata_off, rodata_off, rodata_size, 0, 0, 64});
  add_section({".text", kShtProgbits, kShfAlloc | kShfExec, text_addr, text_off, text_size, 0, 0, kSlot});

  // Symbols and their names (one name table shared by both symbol tables).
  Strings names;
  std::vector<Sym> symbols(1);
  std::vector<std::array<std::byte, 64>> descriptors;
  for (std::size_t i = 0; i < kernel_count; ++i) {
    const KernelSpec& kernel = spec.kernels[i];
    std::uint64_t kd_addr = rodata_off + 64 * i;
    std::uint64_t code_addr = text_addr + kSlot * i;
    std::array<std::byte, 64> descriptor = kernel.descriptor;
    if (kernel.link_entry) {
      auto offset = static_cast<std::int64_t>(code_addr - kd_addr);
      std::memcpy(descriptor.data() + 16, &offset, sizeof offset);
    }
    descriptors.push_back(descriptor);
    Sym kd{names.add(kernel.descriptor_symbol),
           static_cast<std::uint8_t>(0x10 | kSttObject),
           3,
           static_cast<std::uint16_t>(index.at(".rodata")),
           kd_addr,
           64};
    apply(kd, kernel.descriptor_overrides);
    symbols.push_back(kd);
    if (!kernel.function_symbol.empty()) {
      Sym function{names.add(kernel.function_symbol),
                   static_cast<std::uint8_t>(0x10 | kSttFunc),
                   3,
                   static_cast<std::uint16_t>(index.at(".text")),
                   code_addr,
                   kSlot};
      apply(function, kernel.function_overrides);
      symbols.push_back(function);
    }
  }

  Buffer out;
  out.put_bytes(note_off, notes.data(), notes.size());
  for (std::size_t i = 0; i < descriptors.size(); ++i) out.put_bytes(rodata_off + 64 * i, descriptors[i].data(), 64);
  for (std::size_t i = 0; i < std::max<std::size_t>(kernel_count, 1); ++i) {
    out.put(text_off + kSlot * i, std::uint32_t{0xbf810000});  // s_endpgm
  }
  if (out.size() < text_off + text_size) out.bytes().resize(text_off + text_size);

  // Symbol tables, each followed by its string table.
  auto write_table = [&](const std::string& table_name, const std::string& strings_name, std::uint32_t type) {
    out.pad_to(8);
    std::uint64_t sym_off = out.size();
    for (std::size_t i = 0; i < symbols.size(); ++i) {
      const Sym& sym = symbols[i];
      std::uint64_t at = sym_off + i * kSymSize;
      out.put(at, sym.name);
      out.put(at + 4, sym.info);
      out.put(at + 5, sym.other);
      out.put(at + 6, sym.shndx);
      out.put(at + 8, sym.value);
      out.put(at + 16, sym.size);
    }
    std::uint64_t str_off = out.size();
    out.put_bytes(str_off, names.text().data(), names.text().size());
    std::size_t table_index = sections.size();
    add_section({table_name, type, type == kShtDynsym ? kShfAlloc : 0, 0, sym_off, symbols.size() * kSymSize,
                 static_cast<std::uint32_t>(table_index + 1), 1, 8, kSymSize});
    add_section({strings_name, kShtStrtab, 0, 0, str_off, names.text().size(), 0, 0, 1});
  };
  if (spec.symbol_table) {
    bool dynamic = spec.symbol_table_type == kShtDynsym;
    write_table(dynamic ? ".dynsym" : ".symtab", dynamic ? ".dynstr" : ".strtab", spec.symbol_table_type);
  }
  if (spec.also_dynsym) write_table(".dynsym", ".dynstr", kShtDynsym);

  // Section names, then the section header table.
  Strings section_names;
  std::vector<std::uint32_t> name_offsets(sections.size(), 0);
  for (std::size_t i = 1; i < sections.size(); ++i) name_offsets[i] = section_names.add(sections[i].name);
  std::uint32_t shstrtab_name = section_names.add(".shstrtab");
  std::uint64_t shstr_off = out.size();
  out.put_bytes(shstr_off, section_names.text().data(), section_names.text().size());
  index[".shstrtab"] = sections.size();
  sections.push_back({".shstrtab", kShtStrtab, 0, 0, shstr_off, section_names.text().size(), 0, 0, 1});
  name_offsets.push_back(shstrtab_name);

  for (const SectionPatch& patch : spec.section_patches) {
    auto found = index.find(patch.name);
    if (found == index.end()) continue;
    Shdr& shdr = sections[found->second];
    if (patch.sh_type) shdr.type = *patch.sh_type;
    if (patch.sh_link) shdr.link = *patch.sh_link;
    if (patch.sh_addr) shdr.addr = *patch.sh_addr;
    if (patch.sh_offset) shdr.offset = *patch.sh_offset;
    if (patch.sh_size) shdr.size = *patch.sh_size;
    if (patch.sh_entsize) shdr.entsize = *patch.sh_entsize;
    if (patch.sh_addralign) shdr.addralign = *patch.sh_addralign;
  }

  out.pad_to(8);
  std::uint64_t shoff = out.size();
  for (std::size_t i = 0; i < sections.size(); ++i) {
    const Shdr& shdr = sections[i];
    std::uint64_t at = shoff + i * kShdrSize;
    out.put(at, name_offsets[i]);
    out.put(at + 4, shdr.type);
    out.put(at + 8, shdr.flags);
    out.put(at + 16, shdr.addr);
    out.put(at + 24, shdr.offset);
    out.put(at + 32, shdr.size);
    out.put(at + 40, shdr.link);
    out.put(at + 44, shdr.info);
    out.put(at + 48, shdr.addralign);
    out.put(at + 56, shdr.entsize);
  }

  // Program headers.
  phdrs[0] = {kPtLoad, kPfR, 0, 0, rodata_off + rodata_size, rodata_off + rodata_size, 0x1000};
  phdrs[1] = {kPtLoad, kPfR | kPfX, text_off, text_addr, text_size, text_size, 0x1000};
  if (note_segment) phdrs[2] = {kPtNote, kPfR, note_off, note_off, notes.size(), notes.size(), 4};
  for (const SegmentPatch& patch : spec.segment_patches) {
    auto found = patch.index
                     ? (*patch.index < phdrs.size() ? phdrs.begin() + *patch.index : phdrs.end())
                     : std::find_if(phdrs.begin(), phdrs.end(), [&](const Phdr& p) { return p.type == patch.p_type; });
    if (found == phdrs.end()) continue;
    if (patch.p_flags) found->flags = *patch.p_flags;
    if (patch.p_offset) found->offset = *patch.p_offset;
    if (patch.p_vaddr) found->vaddr = *patch.p_vaddr;
    if (patch.p_filesz) found->filesz = *patch.p_filesz;
    if (patch.p_memsz) found->memsz = *patch.p_memsz;
    if (patch.p_align) found->align = *patch.p_align;
  }
  for (std::size_t i = 0; i < phdrs.size(); ++i) {
    const Phdr& phdr = phdrs[i];
    std::uint64_t at = kEhdrSize + i * kPhdrSize;
    out.put(at, phdr.type);
    out.put(at + 4, phdr.flags);
    out.put(at + 8, phdr.offset);
    out.put(at + 16, phdr.vaddr);
    out.put(at + 24, phdr.vaddr);  // p_paddr
    out.put(at + 32, phdr.filesz);
    out.put(at + 40, phdr.memsz);
    out.put(at + 48, phdr.align);
  }

  // The ELF header.
  std::vector<std::byte> header = amdgpu_elf_header(spec.e_flags, spec.abi_version, spec.osabi, spec.machine);
  out.put_bytes(0, header.data(), header.size());
  out.put(16, spec.e_type);
  out.put(20, spec.header.e_version.value_or(1));
  out.put(32, spec.header.e_phoff.value_or(kEhdrSize));
  out.put(40, spec.header.e_shoff.value_or(shoff));
  out.put(52, spec.header.e_ehsize.value_or(std::uint16_t{kEhdrSize}));
  out.put(54, spec.header.e_phentsize.value_or(std::uint16_t{kPhdrSize}));
  out.put(56, spec.header.e_phnum.value_or(static_cast<std::uint16_t>(phdrs.size())));
  out.put(58, spec.header.e_shentsize.value_or(std::uint16_t{kShdrSize}));
  out.put(60, spec.header.e_shnum.value_or(static_cast<std::uint16_t>(sections.size())));
  out.put(62, spec.header.e_shstrndx.value_or(static_cast<std::uint16_t>(index.at(".shstrtab"))));
  return std::move(out.bytes());
}

}  // namespace coload::testing
