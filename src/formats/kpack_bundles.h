// Internal: a kpack archive as the bundles of a FatBinary, one per binary key
// of its TOC (BundleFormat::Kpack), whose entries are that key's targets
// (docs/format.md "kpack archives").
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "coload/bundle.h"
#include "coload/detail/kpack_archive.h"
#include "coload/detail/source.h"
#include "coload/error.h"

namespace coload::detail {

struct KpackBundles {
  std::shared_ptr<const kpack::Archive> archive;
  /// Bundle i is binary key i: at its map in the TOC, sized as that map.
  std::vector<BundleInfo> bundles;
};

/// Reads the archive in `source` (kpack::Archive::parse); its warnings join
/// `layout`'s.
Expected<KpackBundles> kpack_bundles(const Source& source, SourceLayout& layout, const ReadOptions& options);

/// What read_kpack_bundle puts in an entry's bytes.
enum class KpackPart : std::uint8_t {
  Whole,   ///< the code object, checked against its target
  Head,    ///< its first kEntryHeadBytes bytes: the ELF header, all selection reads
  Stored,  ///< its stored bytes as they are (a blob, or a zstd frame): for an entry
           ///< whose ID alone decides a selection, which never reads them
  Nothing,
};
/// What a Head part holds.
inline constexpr std::size_t kEntryHeadBytes = 64;

/// Binary key `key` of `archive` as a Bundle under `info`, entry i's bytes
/// as parts[i] says (every entry Whole when `parts` is empty): views of the
/// archive, or decoded from a zstd frame into storage the Bundle owns (the
/// Bundle also keeps the archive). Only Whole parts decode a frame whole.
/// Errors name the entry.
Expected<Bundle> read_kpack_bundle(std::shared_ptr<const kpack::Archive> archive, const BundleInfo& info,
                                   std::size_t key, std::span<const KpackPart> parts = {});

}  // namespace coload::detail
