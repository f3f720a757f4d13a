// coload/fat_binary.h: one input opened end to end: its bytes, its layout and
// the bundles in it.
//
// Covers: opening a file (mapped) or a caller's buffer, classifying it and
// locating every bundle from headers only; opening several files (a list, or
// a directory's) as one binary, a file set (docs/loading.md, "File sets");
// reading a bundle's entries on demand (decompressing a CCOB then). Does not
// cover: choosing an entry for a device (selection) or checking a code object.
//
// Ownership: a FatBinary owns its Sources (or borrows the caller's buffer, which
// must outlive it). Bundles returned by read() view the FatBinary's bytes for
// plain bundles, so the FatBinary must outlive them. Const member functions are
// safe to call from many threads at once.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "coload/bundle.h"
#include "coload/detail/source.h"
#include "coload/error.h"

namespace coload {

namespace detail::kpack {
struct Members;
}

/// Most files one file set may hold (FatBinary::open_files; docs/loading.md,
/// "File sets"): far above any kernel library, low enough that a count is
/// checked before anything is allocated for it. Each member is also mapped,
/// so a set holds at most the mappings the process has left (LimitExceeded
/// naming vm.max_map_count).
inline constexpr std::size_t kMaxSetFiles = std::size_t{1} << 20;

/// Which files of a directory a file set takes (FatBinary::open_directory).
struct DirectoryScan {
  /// fnmatch(3) pattern a file's name must match; empty: every file. With
  /// a '/', the path relative to the directory must match it (FNM_PATHNAME)
  /// and the walk enters only the subdirectories its leading components
  /// match (docs/loading.md, "File sets").
  std::string pattern;
  /// Whether files in subdirectories (at any depth) are taken too.
  bool recursive = false;
};

/// The regular files of directory `path` that `scan` takes, in sorted path
/// order (paths are `path` + "/" + the relative path). Symbolic links to
/// files are followed, to directories not; hidden entries ("." first) are
/// skipped. Linear in the tree; a deep one holds a descriptor per 32 levels.
/// Errors: Io naming the directory or subdirectory that cannot be opened or
/// read (one the pattern keeps the walk out of is never opened), or a
/// `path` that is no directory.
Expected<std::vector<std::string>> list_directory(const std::string& path, const DirectoryScan& scan = {});
/// The members of the file set directory `path` makes: list_directory's,
/// or NotFound naming the directory (and the pattern) when it takes no file.
Expected<std::vector<std::string>> list_set_members(const std::string& path, const DirectoryScan& scan = {});

/// An opened fat binary: a bundle file, a bare code object, a host image or a
/// kpack archive (one bundle per binary key, BundleFormat::Kpack); or a file
/// set, several such files as one binary.
class FatBinary {
 public:
  /// Maps `path` and locates its bundles (scan_bundles: the v1 CCOBs of one
  /// file share one options.max_decompressed_bytes of measuring, so a file of
  /// v1 bombs fails with LimitExceeded instead of decoding each). Errors name the path.
  static Expected<FatBinary> open(const std::string& path, const ReadOptions& options = {});
  /// Locates the bundles of a caller's buffer, as open() does; `name` appears in errors.
  static Expected<FatBinary> from_memory(std::span<const std::byte> bytes, std::string name = "<memory>",
                                         const ReadOptions& options = {});
  /// Opens `paths` as one binary named `name` (empty: the one path, or
  /// "<first path> and N more files"; docs/loading.md, "File sets"). One
  /// path is open(path) under that name. Of several, each bare
  /// code object is read to its ELF header and symbol table (its kernels are
  /// its `.kd` symbols), and the objects with the same kernel names form one
  /// bundle of format FileGroup whose entries are those files, in the order
  /// of `paths`, each with the entry ID clang gives its target; every other
  /// file adds its own bundles. Bundles follow the first file of each in
  /// `paths`. Errors: InvalidArgument for no path; LimitExceeded for more
  /// than kMaxSetFiles paths or more than the mappings the process has left
  /// (docs/loading.md, "File sets"); open()'s, naming the file;
  /// Ambiguous for one kernel name in two files for one target ID, naming
  /// both files, the kernel and the target.
  static Expected<FatBinary> open_files(std::span<const std::string> paths, std::string name,
                                        const ReadOptions& options = {});
  /// open_files of list_set_members(path, scan), named `path`. Errors:
  /// list_set_members'.
  static Expected<FatBinary> open_directory(const std::string& path, const DirectoryScan& scan = {},
                                            const ReadOptions& options = {});

  /// The path, the caller's name for the buffer or the file set's name.
  const std::string& name() const { return name_; }
  /// Files the binary was opened from: 1, or a file set's count.
  std::size_t file_count() const { return files_.size(); }
  /// The (first) file's bytes and layout: a one-file binary's only ones.
  const Source& source() const { return files_.front().source; }
  const SourceLayout& layout() const { return files_.front().layout; }
  /// The bytes bundle `index` lies in, which its BundleInfo's offsets count
  /// from (a FileGroup's first file: its entries lie in their own files).
  const Source& source_of(std::size_t index) const { return files_[origins_[index].file].source; }
  /// The file bundle `index` came from; for a FileGroup, the file of entry
  /// `entry` (without one: the binary's name).
  const std::string& file(std::size_t index, std::optional<std::size_t> entry = std::nullopt) const;
  /// Every bundle, in file order, from headers only.
  std::span<const BundleInfo> bundles() const { return bundles_; }
  /// The archive entries kpack bundle `index` holds (for the pipeline, which
  /// reads only the entries a selection needs, and the coload tool's
  /// listing; unstable): null for a bundle of another format.
  std::shared_ptr<const detail::kpack::Members> kpack_members(std::size_t index) const;

  /// Reads bundle `index` (decompressing and verifying a CCOB; a FileGroup's
  /// entries view their files; a kpack key's code objects are viewed or
  /// decoded, each checked against its target). Errors name the file, bundle
  /// index and offset (and the entry); InvalidArgument for an index out of range.
  Expected<Bundle> read(std::size_t index) const;
  /// Bundle `index` with only entry `entry`'s bytes, or none: for a kpack
  /// key, the other entries carry their IDs and sizes with empty bytes, and
  /// no other code object is read or decoded. Other formats: read(index).
  Expected<Bundle> read_only(std::size_t index, std::optional<std::size_t> entry) const;
  /// `error` located at bundle `index`: its file and, for a FileGroup, the
  /// kernels and files it holds (" (fmha_fwd: hsa/gfx942/fmha_fwd.co, ...)").
  Error at_bundle(Error error, std::size_t index) const;

  /// The bare code objects of a file set with one set of kernel names.
  struct Group;

 private:
  struct File {
    Source source;
    SourceLayout layout;
  };
  /// Where bundle i came from: files_[file]; `group` set for a FileGroup;
  /// `kpack` for a kpack bundle.
  struct Origin {
    std::size_t file = 0;
    std::shared_ptr<const Group> group;
    std::shared_ptr<const detail::kpack::Members> kpack;
  };
  FatBinary(std::string name, std::vector<File> files, std::vector<BundleInfo> bundles, std::vector<Origin> origins,
            ReadOptions options)
      : name_(std::move(name)),
        files_(std::move(files)),
        bundles_(std::move(bundles)),
        origins_(std::move(origins)),
        options_(options) {}
  static Expected<FatBinary> locate(Source source, const ReadOptions& options);
  static Expected<FatBinary> locate_kpack(Source source, SourceLayout layout, const ReadOptions& options);

  std::string name_;
  std::vector<File> files_;
  std::vector<BundleInfo> bundles_;
  std::vector<Origin> origins_;  // one per bundle
  ReadOptions options_;
};

}  // namespace coload
