// Internal: parsing a plain bundle's table from a prefix of the bundle, for
// readers that see the bundle arrive in pieces (streaming decompression).
#pragma once

#include <cstdint>

#include "coload/bundle.h"

namespace coload::detail {

/// parse_plain_bundle over the first bytes.size() bytes of a bundle that is
/// `extent` bytes long (extent >= bytes.size()): counts and entry ranges are
/// checked against `extent`, and an entry's `bytes` is empty unless it lies
/// within `bytes`. A table that runs past `bytes` is Truncated, so a caller
/// with bytes.size() < extent may retry with more bytes; the other errors are
/// final. parse_plain_bundle(b) is parse_plain_bundle_prefix(b, b.size()).
Expected<PlainBundle> parse_plain_bundle_prefix(std::span<const std::byte> bytes, std::uint64_t extent);

}  // namespace coload::detail
