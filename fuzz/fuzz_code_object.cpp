// Fuzzes CodeObject::read, the ELF layer of a code object (header, tables,
// notes, symbol tables, kernel descriptors) and everything it assembles, and
// checks what code_object.h promises of a success.
#include <cstddef>
#include <cstdint>
#include <set>
#include <span>
#include <string>

#include "coload/code_object.h"

namespace {

// Not assert: the check must hold in release builds and in the ctest replay.
void require(bool condition) {
  if (!condition) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  auto result = coload::CodeObject::read(bytes);
  if (!result) {
    require(!result.error().message().empty());
    return 0;
  }
  const coload::CodeObject& object = *result;
  // The ELF lies within the bytes and holds at least its header.
  require(object.size() >= 64 && object.size() <= size);
  require(object.target().code_object_version >= 3 && object.target().code_object_version <= 6);
  for (const coload::Problem& problem : object.problems()) require(!problem.message.empty());

  std::set<std::string> symbols;
  for (const coload::Kernel& kernel : object.kernels()) {
    symbols.insert(kernel.symbol);
    require(object.find_kernel(kernel.name) != nullptr);
    if (!kernel.descriptor) continue;
    // A descriptor was read only from 64 aligned bytes inside the object.
    require(kernel.descriptor->address % 64 == 0);
  }
  // An orphan descriptor never became a kernel.
  for (const std::string& orphan : object.orphan_descriptors()) {
    require(orphan.ends_with(".kd"));
    require(!symbols.contains(orphan));
  }
  return 0;
}
