// Internal: writes a plain clang offload bundle (docs/format.md, "Plain
// bundles") as clang-offload-bundler writes one for HIP: the magic, the entry
// count, one (offset, size, ID length, ID) record per entry, then the
// entries, each starting at a multiple of the alignment (zero-filled gaps).
// What coload hands a runtime in place of a wrapper's own image (the preload
// layer, docs/preload.md).
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace coload::detail {

/// One entry to write: its bundle entry ID and bytes (empty for the host entry).
struct EntryToWrite {
  std::string id;
  std::span<const std::byte> bytes;
};

/// The host entry HIP bundles start with (its bytes are empty).
inline constexpr const char* kHostEntryId = "host-x86_64-unknown-linux-gnu-";
/// Where clang's HIP driver aligns code objects (-bundle-align=4096).
inline constexpr std::size_t kBundleAlignment = 4096;

/// The bundle of `entries`, in order. The result's data() is aligned as
/// operator new aligns; a caller that needs the entries page-aligned in
/// memory copies it to page-aligned storage (the offsets are multiples of
/// `alignment` from the bundle's start).
std::vector<std::byte> write_plain_bundle(std::span<const EntryToWrite> entries,
                                          std::size_t alignment = kBundleAlignment);

}  // namespace coload::detail
