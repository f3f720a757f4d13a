// The code object reading the test HSA and HIP libraries share
// (tests/support/fake_hsa, tests/support/fake_hip): minimal, bounds-checked,
// and independent of coload's own reader, so a test runtime answers from the
// bytes it was given as ROCr and HIP do, not from what coload decoded.
//
// Covers: the .symtab's defined STT_OBJECT symbols, as ROCr's loader sorts
// them: a `.kd` symbol is a kernel (sizes from its 64-byte descriptor), a
// non-local other one a variable; and its STT_FUNC names. Does not cover: relocations, segments,
// .dynsym (the code objects the tests load list every symbol in .symtab).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <string>

namespace coload::fake {

/// Copies the T at `offset`; false when it does not lie within `size` bytes.
template <class T>
bool read_at(const std::byte* data, std::size_t size, std::uint64_t offset, T* out) {
  if (offset > size || size - offset < sizeof(T)) return false;
  std::memcpy(out, data + offset, sizeof(T));
  return true;
}

/// A kernel (`.kd`) or variable symbol of a code object.
struct CodeObjectSymbol {
  bool kernel = false;
  std::uint64_t value = 0;  ///< st_value: the descriptor's or the variable's address in the object
  std::uint64_t size = 0;   ///< st_size
  // Kernels only, from the descriptor:
  std::uint32_t kernarg = 0, group = 0, private_size = 0;
  bool dynamic_callstack = false;
};

/// Every kernel and variable symbol of the .symtab, by name; false for a
/// table, name or descriptor outside the `size` bytes at `data`.
bool read_symbols(const std::byte* data, std::size_t size, std::map<std::string, CodeObjectSymbol>* out);

/// The names of the .symtab's defined STT_FUNC symbols: all HIP's
/// hipModuleGetFunction knows (comgr's function symbols); false as read_symbols.
bool read_function_names(const std::byte* data, std::size_t size, std::set<std::string>* out);

/// How far the ELF64 at `data` reaches by its own header, section table and
/// section contents (what a runtime given only a pointer reads, as
/// hipModuleLoadData is); 0 when it does not start with an ELF64 header.
/// `data` must hold that many bytes.
std::size_t elf_extent(const std::byte* data);

}  // namespace coload::fake
