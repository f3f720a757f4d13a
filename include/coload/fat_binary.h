// coload/fat_binary.h: one input opened end to end: its bytes, its layout and
// the bundles in it.
//
// Covers: opening a file (mapped) or a caller's buffer, classifying it and
// locating every bundle from headers only; reading a bundle's entries on
// demand (decompressing a CCOB then). Does not cover: choosing an entry for a
// device (selection) or checking a code object.
//
// Ownership: a FatBinary owns its Source (or borrows the caller's buffer, which
// must outlive it). Bundles returned by read() view the FatBinary's bytes for
// plain bundles, so the FatBinary must outlive them. Const member functions are
// safe to call from many threads at once.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "coload/bundle.h"
#include "coload/error.h"
#include "coload/source.h"

namespace coload {

/// An opened fat binary: a bundle file, a bare code object or a host image.
class FatBinary {
 public:
  /// Maps `path` and locates its bundles (scan_bundles: the v1 CCOBs of one
  /// file share one options.max_decompressed_bytes of measuring, so a file of
  /// v1 bombs fails with LimitExceeded instead of decoding each). Errors name the path.
  static Expected<FatBinary> open(const std::string& path, const ReadOptions& options = {});
  /// Locates the bundles of a caller's buffer, as open() does; `name` appears in errors.
  static Expected<FatBinary> from_memory(std::span<const std::byte> bytes, std::string name = "<memory>",
                                         const ReadOptions& options = {});

  const Source& source() const { return source_; }
  const SourceLayout& layout() const { return layout_; }
  /// Every bundle, in file order, from headers only.
  std::span<const BundleInfo> bundles() const { return bundles_; }

  /// Reads bundle `index` (decompressing and verifying a CCOB). Errors name the
  /// file, bundle index and offset; InvalidArgument for an index out of range.
  Expected<Bundle> read(std::size_t index) const;

 private:
  FatBinary(Source source, SourceLayout layout, std::vector<BundleInfo> bundles, ReadOptions options)
      : source_(std::move(source)), layout_(std::move(layout)), bundles_(std::move(bundles)), options_(options) {}
  static Expected<FatBinary> locate(Source source, const ReadOptions& options);

  Source source_;
  SourceLayout layout_;
  std::vector<BundleInfo> bundles_;
  ReadOptions options_;
};

}  // namespace coload
