// The test runtimes' code object reading (fake_elf.h).
#include "fake_elf.h"

#include <algorithm>
#include <string_view>
#include <vector>

namespace coload::fake {
namespace {

struct Section {
  std::uint32_t type;
  std::uint64_t addr, offset, size;
  std::uint32_t link;
};

constexpr std::uint32_t kSymtab = 2, kNobits = 8;
constexpr std::uint8_t kObject = 1, kFunc = 2, kLocal = 0;

bool read_sections(const std::byte* data, std::size_t size, std::vector<Section>* out) {
  std::uint64_t shoff = 0;
  std::uint16_t shentsize = 0, shnum = 0;
  if (!read_at(data, size, 0x28, &shoff) || !read_at(data, size, 0x3a, &shentsize) ||
      !read_at(data, size, 0x3c, &shnum) || shentsize != 64) {
    return false;
  }
  for (std::uint16_t i = 0; i < shnum; ++i) {
    std::uint64_t at = shoff + std::uint64_t{i} * 64;
    Section section{};
    if (!read_at(data, size, at + 4, &section.type) || !read_at(data, size, at + 16, &section.addr) ||
        !read_at(data, size, at + 24, &section.offset) || !read_at(data, size, at + 32, &section.size) ||
        !read_at(data, size, at + 40, &section.link)) {
      return false;
    }
    out->push_back(section);
  }
  return true;
}

// The descriptor at `value`: its sizes, as ROCr reads them; false when no
// section holds its 64 bytes.
bool read_descriptor(const std::byte* data, std::size_t size, const std::vector<Section>& sections, std::uint64_t value,
                     CodeObjectSymbol* symbol) {
  for (const Section& section : sections) {
    if (section.type == kNobits || section.addr == 0 || value < section.addr || value - section.addr > section.size ||
        section.size - (value - section.addr) < 64) {
      continue;
    }
    std::uint64_t kd = section.offset + (value - section.addr);
    std::uint16_t properties = 0;
    if (!read_at(data, size, kd + 0, &symbol->group) || !read_at(data, size, kd + 4, &symbol->private_size) ||
        !read_at(data, size, kd + 8, &symbol->kernarg) || !read_at(data, size, kd + 56, &properties)) {
      return false;
    }
    symbol->dynamic_callstack = properties & (1u << 11);
    return true;
  }
  return false;
}

}  // namespace

namespace {

/// Calls `visit(name, info, shndx, symbol)` for every .symtab symbol after
/// the null one (symbol: st_value and st_size filled); false for a table or
/// name outside the `size` bytes at `data`, or when `visit` returns false.
template <class Visit>
bool walk_symbols(const std::byte* data, std::size_t size, const std::vector<Section>& sections, Visit visit) {
  for (const Section& symtab : sections) {
    if (symtab.type != kSymtab) continue;
    if (symtab.link >= sections.size()) return false;
    const Section& strtab = sections[symtab.link];
    if (strtab.offset > size || strtab.size > size - strtab.offset) return false;
    for (std::uint64_t at = 24; at + 24 <= symtab.size; at += 24) {  // skip the null symbol
      std::uint32_t name_offset = 0;
      std::uint8_t info = 0;
      std::uint16_t shndx = 0;
      CodeObjectSymbol symbol;
      if (!read_at(data, size, symtab.offset + at, &name_offset) ||
          !read_at(data, size, symtab.offset + at + 4, &info) || !read_at(data, size, symtab.offset + at + 6, &shndx) ||
          !read_at(data, size, symtab.offset + at + 8, &symbol.value) ||
          !read_at(data, size, symtab.offset + at + 16, &symbol.size)) {
        return false;
      }
      if (name_offset >= strtab.size) continue;
      const char* begin = reinterpret_cast<const char*>(data + strtab.offset + name_offset);
      if (!visit(std::string_view(begin, strnlen(begin, strtab.size - name_offset)), info, shndx, symbol)) return false;
    }
  }
  return true;
}

}  // namespace

bool read_symbols(const std::byte* data, std::size_t size, std::map<std::string, CodeObjectSymbol>* out) {
  std::vector<Section> sections;
  if (!read_sections(data, size, &sections)) return false;
  return walk_symbols(data, size, sections,
                      [&](std::string_view name, std::uint8_t info, std::uint16_t shndx, CodeObjectSymbol symbol) {
                        if ((info & 0xf) != kObject || shndx == 0) return true;
                        symbol.kernel = name.ends_with(".kd");
                        if (symbol.kernel && !read_descriptor(data, size, sections, symbol.value, &symbol))
                          return false;
                        // ROCr's loader skips local symbols other than kernels.
                        if (!symbol.kernel && (info >> 4) == kLocal) return true;
                        (*out)[std::string(name)] = symbol;
                        return true;
                      });
}

bool read_function_names(const std::byte* data, std::size_t size, std::set<std::string>* out) {
  std::vector<Section> sections;
  if (!read_sections(data, size, &sections)) return false;
  return walk_symbols(data, size, sections,
                      [&](std::string_view name, std::uint8_t info, std::uint16_t shndx, const CodeObjectSymbol&) {
                        if ((info & 0xf) == kFunc && shndx != 0) out->emplace(name);
                        return true;
                      });
}

std::size_t elf_extent(const std::byte* data) {
  constexpr std::size_t kHeader = 64;
  if (!data ||
      std::memcmp(data,
                  "\x7f"
                  "ELF",
                  4) != 0 ||
      static_cast<unsigned char>(data[4]) != 2)
    return 0;
  std::uint64_t shoff = 0;
  std::uint16_t shnum = 0;
  read_at(data, kHeader, 0x28, &shoff);
  read_at(data, kHeader, 0x3c, &shnum);
  std::uint64_t extent = std::max<std::uint64_t>(kHeader, shoff + std::uint64_t{shnum} * 64);
  std::vector<Section> sections;
  if (!read_sections(data, extent, &sections)) return 0;
  for (const Section& section : sections) {
    if (section.type != kNobits) extent = std::max(extent, section.offset + section.size);
  }
  return extent;
}

}  // namespace coload::fake
