// coload ls for kpack inputs: an archive's TOC facts, and a kpack bundle's
// entries (a binary key's, or a HIPK wrapper's across its archives) with
// their targets, sizes and stored sizes, read from the TOCs alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "coload/bundle.h"
#include "coload/detail/kpack_archive.h"
#include "coload/fat_binary.h"
#include "report_printer.h"

namespace coload::cli {

/// roc-obj-ls style URI of an entry that lies in the file as is. The path is
/// percent-encoded (RFC 3986) so that a `#`, `&` or `%` in it cannot be read
/// as the fragment. (ls_command.cpp)
std::string entry_uri(const std::string& path, std::uint64_t offset, std::uint64_t size);

struct KpackListed {
  const detail::kpack::Member* member = nullptr;
  detail::kpack::Archive::Stored stored;  ///< its blob, or its zstd frame
};

/// A kpack bundle's entries as listed: nothing is decoded.
struct KpackListing {
  std::shared_ptr<const detail::kpack::Members> members;  // what `entries` point into
  std::vector<KpackListed> entries;
};

/// Bundle `index`'s entries and where each is stored (a zstd frame's size
/// word is read, nothing else). Errors: a frame table that leaves its region.
Expected<KpackListing> list_kpack_bundle(const FatBinary& binary, std::size_t index);

/// The first line of a kpack archive's or kpack'd host image's listing;
/// false (nothing written) for another input.
bool write_kpack_header(ReportPrinter& out, const FatBinary& binary, const ReadOptions& options);

/// Bundle `index`'s line: its key, binary and code object index.
void write_kpack_bundle_line(ReportPrinter& out, const FatBinary& binary, std::size_t index);

/// zstd when the bundle's entries are zstd frames.
Compression kpack_compression(const FatBinary& binary, std::size_t index);

/// One line per entry: target, ordinal, sizes, the archive and a URI for a
/// blob stored as it is.
void write_kpack_entries(ReportPrinter& out, const KpackListing& listing);

}  // namespace coload::cli
