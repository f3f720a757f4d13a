// Internal: parsing a plain bundle's table from a prefix of the bundle, for
// readers that see the bundle arrive in pieces (streaming decompression and
// copied reads), and what a scan keeps of the tables it copied.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "coload/bundle.h"

namespace coload::detail {

/// parse_plain_bundle over the first bytes.size() bytes of a bundle that is
/// `extent` bytes long (extent >= bytes.size()): counts and entry ranges are
/// checked against `extent`, and an entry's `bytes` is empty unless it lies
/// within `bytes`. A table that runs past `bytes` is Truncated, so a caller
/// with bytes.size() < extent may retry with more bytes; the other errors are
/// final. parse_plain_bundle(b) is parse_plain_bundle_prefix(b, b.size()).
Expected<PlainBundle> parse_plain_bundle_prefix(std::span<const std::byte> bytes, std::uint64_t extent);

/// The entry IDs of one scan's plain tables, each kept once: a fat binary's
/// bundles repeat the same IDs, one per offload target. Filled while the scan
/// runs (one thread), read only after; views of it stay valid (a deque never
/// moves its strings). Holds no more than the tables it was given.
class ScannedIds {
 public:
  /// `id` as kept here, added when new. `position` is its entry's index: an
  /// ID at the position the previous table had it is found without hashing.
  std::string_view intern(std::string_view id, std::size_t position);

 private:
  std::deque<std::string> kept_;
  std::unordered_set<std::string_view> index_;  // views of kept_
  std::vector<std::string_view> previous_;      // the last table's IDs by position
};

}  // namespace coload::detail

namespace coload {

/// What a scan keeps of a plain table it copied out of a file: offsets,
/// sizes and IDs (viewing `ids`). read_bundle makes the entries from it.
struct PlainTableCopy {
  struct Entry {
    std::string_view id;
    std::uint64_t offset = 0;
    std::uint64_t size = 0;
  };
  std::vector<Entry> entries;
  std::shared_ptr<const detail::ScannedIds> ids;
};

}  // namespace coload
