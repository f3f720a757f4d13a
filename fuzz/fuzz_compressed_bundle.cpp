// Fuzzes the CCOB header, the stream measurement (v1), decompression with its
// size and hash checks, and the plain bundle inside.
#include <cstddef>
#include <cstdint>

#include "coload/bundle.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  coload::ReadOptions options;
  options.max_decompressed_bytes = 16u << 20;  // stays inside libFuzzer's malloc limit
  auto header = coload::parse_compressed_header(bytes, options);
  if (!header) return 0;
  auto total = coload::compressed_bundle_size(bytes, *header, options);
  if (!total || *total > bytes.size()) return 0;
  auto plain = coload::decompress_bundle(bytes.first(*total), *header, options);
  if (!plain) return 0;
  auto bundle = coload::parse_plain_bundle(*plain);
  return bundle ? 0 : 0;
}
