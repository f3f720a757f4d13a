// The __hip_fatbin_wrapper records of a shared library loaded with dlopen, as
// its static constructors hand them to __hipRegisterFatBinary: found from the
// file's .hipFatBinSegment section and the library's load base. Only ELF and
// the dynamic loader, so the C API's tests can use it too.
#pragma once

#include <dlfcn.h>
#include <elf.h>
#include <link.h>

#include <cstddef>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

namespace coload::testing {

inline std::vector<std::byte> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> bytes(chars.size());
  std::memcpy(bytes.data(), chars.data(), chars.size());
  return bytes;
}

/// The addresses of the 24-byte wrapper records of the library at `path`,
/// loaded as `handle`; empty when the file is not a 64-bit ELF with them.
inline std::vector<const void*> loaded_wrappers(const std::string& path, void* handle) {
  std::vector<std::byte> file = file_bytes(path);
  std::vector<const void*> wrappers;
  Elf64_Ehdr header;
  if (file.size() < sizeof header) return wrappers;
  std::memcpy(&header, file.data(), sizeof header);
  if (header.e_shoff + std::size_t{header.e_shnum} * sizeof(Elf64_Shdr) > file.size()) return wrappers;
  std::vector<Elf64_Shdr> sections(header.e_shnum);
  std::memcpy(sections.data(), file.data() + header.e_shoff, sections.size() * sizeof(Elf64_Shdr));
  if (header.e_shstrndx >= sections.size()) return wrappers;
  const char* names = reinterpret_cast<const char*>(file.data()) + sections[header.e_shstrndx].sh_offset;
  link_map* map = nullptr;
  if (::dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0) return wrappers;
  for (const Elf64_Shdr& section : sections) {
    if (std::string_view(names + section.sh_name) != ".hipFatBinSegment") continue;
    for (std::uint64_t at = 0; at + 24 <= section.sh_size; at += 24)
      wrappers.push_back(reinterpret_cast<const std::byte*>(map->l_addr + section.sh_addr + at));
  }
  return wrappers;
}

}  // namespace coload::testing
