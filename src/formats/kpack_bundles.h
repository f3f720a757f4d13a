// Internal: kpack inputs as the bundles of a FatBinary (docs/format.md,
// "kpack archives"; docs/reading-rules.md, "kpack archives" and "kpack'd host
// images"): an archive gives one bundle per binary key, a kpack'd host image
// one per HIPK wrapper, whose entries are its key's across the archives its
// marker names. Each bundle's entries are kpack::Members.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "coload/bundle.h"
#include "coload/detail/kpack_archive.h"
#include "coload/detail/source.h"
#include "coload/error.h"

namespace coload::detail {

/// One bundle of a kpack input: where it is (BundleFormat::Kpack) and its entries.
struct KpackBundle {
  BundleInfo info;
  std::shared_ptr<const kpack::Members> members;
};

/// The bundles of `source`, a kpack archive or a kpack'd host image (layout
/// kind KpackArchive, or a kpack_ref); warnings (the archives' own, the
/// search's) join `layout`'s. An archive's bytes stay in `source`, which the
/// caller keeps. Errors: the archive's or the marker's, naming the field;
/// a host image's archives that cannot be read are warnings, not errors.
Expected<std::vector<KpackBundle>> kpack_input_bundles(const Source& source, SourceLayout& layout,
                                                       const ReadOptions& options);

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

/// `members` as a Bundle under `info`, entry i's bytes as parts[i] says
/// (every entry Whole when `parts` is empty): views of an archive, or
/// decoded from a zstd frame into storage the Bundle owns (it also keeps the
/// archives). Only Whole parts decode a frame whole. Errors name the entry.
Expected<Bundle> read_kpack_bundle(std::shared_ptr<const kpack::Members> members, const BundleInfo& info,
                                   std::span<const KpackPart> parts = {});

}  // namespace coload::detail
