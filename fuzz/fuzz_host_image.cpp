// Fuzzes the whole path from raw bytes: classification, host ELF sections and
// wrapper relocations, the bundle walk, and reading every bundle found.
#include <cstddef>
#include <cstdint>

#include "coload/fat_binary.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  coload::ReadOptions options;
  options.max_decompressed_bytes = 16u << 20;
  auto binary = coload::FatBinary::from_memory(bytes, "fuzz", options);
  if (!binary) return 0;
  for (std::size_t i = 0; i < binary->bundles().size(); ++i) {
    auto bundle = binary->read(i);
    if (!bundle) continue;
    for (const coload::BundleEntry& entry : bundle->entries()) {
      volatile std::byte last = entry.bytes.empty() ? std::byte{0} : entry.bytes.back();
      (void)last;
    }
  }
  return 0;
}
