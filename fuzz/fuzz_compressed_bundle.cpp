// Fuzzes the CCOB header, the stream measurement (v1), decompression with its
// size and hash checks, and the plain bundle inside. A v1 length read from
// zstd frame headers must be where decoding ends, whenever decoding succeeds.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "ccob/decompress.h"
#include "coload/bundle.h"

namespace {
struct Discard final : coload::detail::DecodeSink {
  void write(coload::detail::Bytes) override {}
};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  coload::ReadOptions options;
  options.max_decompressed_bytes = 16u << 20;  // stays inside libFuzzer's malloc limit
  auto header = coload::parse_compressed_header(bytes, options);
  if (!header) return 0;
  auto total = coload::compressed_bundle_size(bytes, *header, options);
  if (!total || *total > bytes.size()) return 0;
  if (!header->total_size) {
    auto payload = bytes.subspan(header->header_size);
    auto walked = coload::detail::measure_from_frame_headers(header->method, payload, header->uncompressed_size);
    if (walked) {
      Discard discard;
      auto decoded = coload::detail::decode_stream(header->method, payload, header->uncompressed_size,
                                                   coload::detail::StreamEnd::EndOfExpected, discard);
      if (decoded && *decoded != *walked) std::abort();
    }
  }
  auto plain = coload::decompress_bundle(bytes.first(*total), *header, options);
  if (!plain) return 0;
  auto bundle = coload::parse_plain_bundle(*plain);
  return bundle ? 0 : 0;
}
