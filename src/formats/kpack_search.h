// Internal: the archives a kpack'd host image's marker names, found as
// rocm-kpack's loader finds them (docs/loading.md, "kpack'd libraries").
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "coload/bundle.h"
#include "coload/detail/kpack_archive.h"

namespace coload::detail {

struct ArchiveSearch {
  /// Archives read, in search order: ROCM_KPACK_PATH alone, or
  /// ROCM_KPACK_PATH_PREFIX's then the marker's, a pattern's matches with
  /// feature variants (`gfx90a:xnack-`) before their base (`gfx90a`).
  std::vector<std::shared_ptr<const kpack::ArchiveFile>> archives;
  /// Archives that could not be read, paths that could not be resolved.
  std::vector<std::string> warnings;
  /// What was looked at, for none_found.
  std::vector<std::string> looked_at;

  /// "no kpack archive has KEY: ..." naming where the search looked.
  std::string none_found(const std::string& key) const;
};

/// Finds and reads the archives of `marker` for the binary at `binary_path`
/// (its real directory is where relative paths start, unless
/// options.kpack.root says otherwise). `@GFXARCH@` matches any target in the
/// file names of the pattern's directory: every archive present is read, and
/// selection chooses per device. Never fails: what cannot be read is a warning.
ArchiveSearch find_archives(const kpack::Marker& marker, const std::string& binary_path, const ReadOptions& options);

}  // namespace coload::detail
