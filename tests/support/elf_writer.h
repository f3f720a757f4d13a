// Test-side writer for AMDGPU ELF pieces, independent of the library under
// test. Only what the selector reads for now: the 64-byte ELF header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace coload::testing {

// EI_ABIVERSION values (ELF.h): 1 = v3, 2 = v4, 3 = v5, 4 = v6.
inline constexpr std::uint8_t kAbiV3 = 1, kAbiV4 = 2, kAbiV5 = 3, kAbiV6 = 4;

// e_flags pieces (shared/reference/isa-matching.md section 1.3).
inline constexpr std::uint32_t kXnackAny = 0x100, kXnackOff = 0x200, kXnackOn = 0x300;
inline constexpr std::uint32_t kSrameccAny = 0x400, kSrameccOff = 0x800, kSrameccOn = 0xc00;
inline constexpr std::uint32_t generic_version(std::uint32_t version) { return version << 24; }

// A 64-byte ELF64 little-endian header: EM_AMDGPU, ELFOSABI_AMDGPU_HSA, ET_DYN.
inline std::vector<std::byte> amdgpu_elf_header(std::uint32_t e_flags, std::uint8_t abi_version = kAbiV6,
                                                std::uint8_t osabi = 64, std::uint16_t machine = 224) {
  std::vector<std::byte> header(64);
  auto put = [&](std::size_t offset, auto value) { std::memcpy(header.data() + offset, &value, sizeof value); };
  std::memcpy(header.data(), "\x7f" "ELF", 4);
  put(4, std::uint8_t{2});   // ELFCLASS64
  put(5, std::uint8_t{1});   // ELFDATA2LSB
  put(6, std::uint8_t{1});   // EV_CURRENT
  put(7, osabi);
  put(8, abi_version);
  put(16, std::uint16_t{3});  // ET_DYN
  put(18, machine);
  put(20, std::uint32_t{1});
  put(48, e_flags);
  put(52, std::uint16_t{64});  // e_ehsize
  return header;
}

}  // namespace coload::testing
