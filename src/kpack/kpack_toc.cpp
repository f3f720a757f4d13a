// A kpack archive's header and TOC (kpack_archive.h; docs/reading-rules.md,
// "kpack archives"): the strict msgpack reader checks every value where it
// is read; what relates values to each other (ordinals, ranges, targets) is
// checked once the whole map is read, because rocm-kpack writes `toc` before
// `compression_scheme`.
#include <algorithm>
#include <array>
#include <charconv>
#include <string>

#include "coload/detail/kpack_archive.h"
#include "coload/target.h"
#include "common/bytes.h"
#include "common/magic.h"
#include "common/try.h"
#include "msgpack/msgpack_reader.h"

namespace coload::detail::kpack {

namespace {

using llvm::msgpack::Type;
using msgpack::Path;
using msgpack::Value;

/// "gfx942" → "hipv4-amdgcn-amd-amdhsa--gfx942"; SPIR-V has its own triple.
std::string entry_id_for(std::string_view target) {
  if (target == "amdgcnspirv") return "hip-spirv64-amd-amdhsa--amdgcnspirv";
  return "hipv4-amdgcn-amd-amdhsa--" + std::string(target);
}

/// The binary and code object index of "lib/libx.so#3"; no index unless
/// everything after the last '#' is a number that fits 32 bits.
void split_key(Entry& entry) {
  entry.binary = entry.key;
  std::size_t hash = entry.key.rfind('#');
  if (hash == std::string_view::npos) return;
  std::string_view digits = entry.key.substr(hash + 1);
  std::uint32_t index = 0;
  auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
  if (digits.empty() || error != std::errc() || end != digits.data() + digits.size()) return;
  entry.binary = entry.key.substr(0, hash);
  entry.index = index;
}

}  // namespace

/// Reads the TOC map into an Archive (friend of Archive).
class TocReader : public msgpack::Reader {
 public:
  TocReader(Bytes toc, Archive& out) : Reader(toc, "kpack TOC", kMaxTocDepth), out_(out) {}

  Expected<void> read() {
    const Path top;
    Value root;
    COLOAD_RETURN_IF_ERROR(next(root, top));
    if (root.kind() != Type::Map) return wrong_type(top, root, "a map");
    msgpack::KeySet seen;
    COLOAD_RETURN_IF_ERROR(
        entries(root, top, 1, seen, [&](std::string_view name, const Path& path) { return root_value(name, path); }));
    COLOAD_RETURN_IF_ERROR(finish(top));
    static constexpr std::array<std::string_view, 6> kRequired = {
        "format_version", "group_name", "gfx_arch_family", "gfx_arches", "compression_scheme", "toc"};
    COLOAD_RETURN_IF_ERROR(require(seen, kRequired, top, root));
    if (out_.scheme_ == Scheme::None) {
      COLOAD_RETURN_IF_ERROR(require(seen, std::array<std::string_view, 1>{"blobs"}, top, root));
    } else {
      COLOAD_RETURN_IF_ERROR(require(seen, std::array<std::string_view, 2>{"zstd_offset", "zstd_size"}, top, root));
    }
    return {};
  }

  /// Where each value sits in the TOC, for the checks made after reading.
  std::uint64_t zstd_offset_at = 0, zstd_size_at = 0;
  std::vector<std::uint64_t> blob_at;                                  // each blob's map
  std::vector<std::uint64_t> ordinal_at, size_at, metadata_target_at;  // per entry

 private:
  Expected<void> root_value(std::string_view name, const Path& path) {
    if (name == "format_version") {
      std::uint64_t at = position();
      auto version = u32(path);
      COLOAD_RETURN_IF_ERROR(version);
      if (*version != kTocVersion) {
        return error(
            ErrorKind::UnsupportedVersion, path, at,
            "format_version " + std::to_string(*version) + " is not the known version " + std::to_string(kTocVersion),
            *version, kTocVersion);
      }
      out_.format_version_ = *version;
      return {};
    }
    if (name == "group_name") return assign(out_.group_name_, string(path));
    if (name == "gfx_arch_family") return assign(out_.gfx_arch_family_, string(path));
    if (name == "gfx_arches") return arches(path);
    if (name == "compression_scheme") return scheme(path);
    if (name == "blobs") return blobs(path);
    if (name == "zstd_offset") return (zstd_offset_at = position(), assign(out_.zstd_region_.offset, u64(path)));
    if (name == "zstd_size") return (zstd_size_at = position(), assign(out_.zstd_region_.size, u64(path)));
    if (name == "toc") return toc(path);
    return unknown(path, 2);
  }

  template <class T, class U>
  static Expected<void> assign(T& field, Expected<U> value) {
    COLOAD_RETURN_IF_ERROR(value);
    field = *value;
    return {};
  }

  Expected<void> unknown(const Path& path, unsigned depth) {
    Value value;
    COLOAD_RETURN_IF_ERROR(next(value, path));
    return skip(value, path, depth);
  }

  Expected<void> scheme(const Path& path) {
    std::uint64_t at = position();
    auto text = string(path);
    COLOAD_RETURN_IF_ERROR(text);
    for (Scheme known : {Scheme::None, Scheme::ZstdPerKernel}) {
      if (*text == to_string(known)) {
        out_.scheme_ = known;
        return {};
      }
    }
    return error(ErrorKind::UnsupportedMethod, path, at,
                 "\"" + printable(*text) + "\" is not a scheme coload reads (none, zstd-per-kernel)");
  }

  Expected<void> arches(const Path& path) {
    Value array;
    COLOAD_RETURN_IF_ERROR(next(array, path));
    if (array.kind() != Type::Array) return wrong_type(path, array, "an array of strings");
    COLOAD_RETURN_IF_ERROR(open(array, path, 2));
    out_.gfx_arches_.reserve(array.object.Length);
    for (std::size_t i = 0; i < array.object.Length; ++i) {
      auto arch = string(path.index(i));
      COLOAD_RETURN_IF_ERROR(arch);
      out_.gfx_arches_.push_back(*arch);
    }
    return {};
  }

  Expected<void> blobs(const Path& path) {
    Value array;
    COLOAD_RETURN_IF_ERROR(next(array, path));
    if (array.kind() != Type::Array) return wrong_type(path, array, "an array of {offset, size} maps");
    COLOAD_RETURN_IF_ERROR(open(array, path, 2));
    COLOAD_RETURN_IF_ERROR(within_limit(path, array, array.object.Length, "blobs"));
    out_.blobs_.reserve(array.object.Length);
    blob_at.reserve(array.object.Length);
    for (std::size_t i = 0; i < array.object.Length; ++i) {
      const Path blob_path = path.index(i);
      Value blob;
      COLOAD_RETURN_IF_ERROR(next(blob, blob_path));
      if (blob.kind() != Type::Map) return wrong_type(blob_path, blob, "an {offset, size} map");
      Archive::Stored stored;
      msgpack::KeySet seen;
      COLOAD_RETURN_IF_ERROR(entries(blob, blob_path, 3, seen, [&](std::string_view name, const Path& key_path) {
        if (name == "offset") return assign(stored.offset, u64(key_path));
        if (name == "size") return assign(stored.size, u64(key_path));
        return unknown(key_path, 4);
      }));
      COLOAD_RETURN_IF_ERROR(require(seen, std::array<std::string_view, 2>{"offset", "size"}, blob_path, blob));
      out_.blobs_.push_back(stored);
      blob_at.push_back(blob.offset);
    }
    return {};
  }

  Expected<void> within_limit(const Path& path, const Value& at, std::uint64_t count, std::string_view what) const {
    if (count <= kMaxObjects) return {};
    return error(
        ErrorKind::LimitExceeded, path, at.offset,
        std::string(what) + " count " + std::to_string(count) + " exceeds the limit of " + std::to_string(kMaxObjects),
        count, kMaxObjects);
  }

  Expected<void> toc(const Path& path) {
    Value map;
    COLOAD_RETURN_IF_ERROR(next(map, path));
    if (map.kind() != Type::Map) return wrong_type(path, map, "a map of binaries");
    msgpack::KeySet keys;
    return entries(map, path, 2, keys,
                   [&](std::string_view key, const Path& key_path) { return binary(key, key_path); });
  }

  Expected<void> binary(std::string_view key, const Path& path) {
    Binary binary{.key = key, .first = out_.entries_.size(), .toc_offset = position()};
    Value map;
    COLOAD_RETURN_IF_ERROR(next(map, path));
    if (map.kind() != Type::Map) return wrong_type(path, map, "a map of targets");
    COLOAD_RETURN_IF_ERROR(within_limit(path, map, out_.entries_.size() + map.object.Length, "TOC entry"));
    msgpack::KeySet targets;
    COLOAD_RETURN_IF_ERROR(entries(map, path, 3, targets, [&](std::string_view target, const Path& target_path) {
      return entry(key, target, target_path);
    }));
    binary.count = out_.entries_.size() - binary.first;
    binary.toc_size = position() - binary.toc_offset;
    out_.binaries_.push_back(binary);
    return {};
  }

  Expected<void> entry(std::string_view key, std::string_view target, const Path& path) {
    Entry entry{.key = key, .target = target, .type = "hsaco", .field = path.str(), .toc_offset = position()};
    split_key(entry);
    Value map;
    COLOAD_RETURN_IF_ERROR(next(map, path));
    if (map.kind() != Type::Map) return wrong_type(path, map, "an entry map (type, ordinal, original_size)");
    std::uint64_t ordinal = 0, size = 0, metadata_target = 0;
    msgpack::KeySet seen;
    COLOAD_RETURN_IF_ERROR(entries(map, path, 4, seen, [&](std::string_view name, const Path& key_path) {
      if (name == "type") return assign(entry.type, string(key_path));
      if (name == "ordinal") return (ordinal = position(), assign(entry.ordinal, u32(key_path)));
      if (name == "original_size") return (size = position(), assign(entry.original_size, u64(key_path)));
      if (name == "metadata") return metadata(entry, key_path, metadata_target);
      return unknown(key_path, 5);
    }));
    COLOAD_RETURN_IF_ERROR(require(seen, std::array<std::string_view, 2>{"ordinal", "original_size"}, path, map));
    entry.id = entry.metadata_target.empty() ? entry_id_for(target) : std::string(entry.metadata_target);
    out_.entries_.push_back(std::move(entry));
    ordinal_at.push_back(ordinal);
    size_at.push_back(size);
    metadata_target_at.push_back(metadata_target);
    return {};
  }

  Expected<void> metadata(Entry& entry, const Path& path, std::uint64_t& target_at) {
    Value map;
    COLOAD_RETURN_IF_ERROR(next(map, path));
    if (map.kind() != Type::Map) return wrong_type(path, map, "a map");
    msgpack::KeySet seen;
    return entries(map, path, 5, seen, [&](std::string_view name, const Path& key_path) -> Expected<void> {
      if (name != "target") return unknown(key_path, 6);
      target_at = position();
      auto id = identifier(key_path);
      COLOAD_RETURN_IF_ERROR(id);
      if (id->empty()) return malformed(key_path, target_at, "the entry ID is empty");
      entry.metadata_target = *id;
      return {};
    });
  }

  Archive& out_;
};

namespace {

/// "toc.K.T.ordinal at byte 0x…": an error of the TOC at `at` (an offset in the TOC).
Error toc_error(ErrorKind kind, const std::string& field, std::uint64_t at, const std::string& what,
                std::optional<std::uint64_t> value = std::nullopt, std::optional<std::uint64_t> limit = std::nullopt) {
  return Error(kind, field + " at byte " + hex(at) + ": " + what).at_field(field, at, value, limit);
}

/// The header: "KPAK", version 1, a TOC offset past it and inside the file.
Expected<std::uint64_t> read_header(Bytes file) {
  Cursor cursor(file, "kpack header");
  auto magic = cursor.take("magic", 4);
  COLOAD_RETURN_IF_ERROR(magic);
  if (!starts_with(*magic, kKpackMagic)) {
    return Error(ErrorKind::BadMagic, "bytes " + show_bytes(*magic) + " are not the kpack magic KPAK")
        .at_field("magic", 0);
  }
  auto version = cursor.u32("version");
  COLOAD_RETURN_IF_ERROR(version);
  if (*version != kVersion) {
    return Error(ErrorKind::UnsupportedVersion,
                 "kpack version " + std::to_string(*version) + " is not the known version " + std::to_string(kVersion))
        .at_field("version", 4, *version, kVersion);
  }
  auto toc = cursor.u64("toc_offset");
  COLOAD_RETURN_IF_ERROR(toc);
  if (*toc < kHeaderSize || *toc >= file.size()) {
    return Error(ErrorKind::OutOfBounds, "toc_offset " + hex(*toc) + " is not inside the file after its header [" +
                                             hex(kHeaderSize) + ", " + hex(file.size()) + ")")
        .at_field("toc_offset", 8, *toc, file.size());
  }
  return *toc;
}

/// [offset, offset + size) within [kHeaderSize, toc) — code objects lie
/// between the header and the TOC.
Expected<void> check_stored(const std::string& field, std::uint64_t at, std::uint64_t offset, std::uint64_t size,
                            std::uint64_t toc) {
  if (offset > UINT64_MAX - size) {
    return toc_error(ErrorKind::Overflow, field, at,
                     "offset " + hex(offset) + " + size " + hex(size) + " overflows 64 bits", offset);
  }
  if (offset < kHeaderSize || offset + size > toc) {
    return toc_error(ErrorKind::OutOfBounds, field, at,
                     "bytes [" + hex(offset) + ", " + hex(offset + size) +
                         ") are not between the header and the TOC [" + hex(kHeaderSize) + ", " + hex(toc) + ")",
                     offset + size, toc);
  }
  return {};
}

/// Whether a TOC target and the entry ID in its metadata name the same
/// target; true when either cannot be parsed (selection reports those).
bool same_target(std::string_view target, std::string_view id) {
  auto parsed = EntryId::parse(id);
  if (!parsed) return true;
  if (parsed->is_spirv || target == "amdgcnspirv") return parsed->is_spirv && target == "amdgcnspirv";
  auto key = TargetId::parse(target);
  if (!key || !parsed->target) return true;
  return *key == *parsed->target;
}

}  // namespace

Expected<std::shared_ptr<const Archive>> Archive::parse(const SourceReader& file, const ReadOptions& options) {
  const Bytes bytes = file.bytes();
  auto toc_offset = read_header(bytes);
  COLOAD_RETURN_IF_ERROR(toc_offset);
  auto archive = std::make_shared<Archive>();
  archive->file_ = file;
  archive->toc_offset_ = *toc_offset;
  archive->max_object_bytes_ = options.max_decompressed_bytes;
  TocReader reader(bytes.subspan(*toc_offset), *archive);
  auto in_toc = [&](Error error) { return std::move(error).with_context("TOC at " + hex(*toc_offset)); };
  if (auto read = reader.read(); !read) return in_toc(std::move(read).error());

  const std::uint64_t toc = *toc_offset;
  if (archive->scheme_ == Scheme::None) {
    for (std::size_t i = 0; i < archive->blobs_.size(); ++i) {
      const Stored& blob = archive->blobs_[i];
      auto fits = check_stored("blobs[" + std::to_string(i) + "]", reader.blob_at[i], blob.offset, blob.size, toc);
      if (!fits) return in_toc(std::move(fits).error());
    }
    archive->object_count_ = archive->blobs_.size();
  } else {
    Stored& region = archive->zstd_region_;
    auto fits = check_stored("zstd_offset", reader.zstd_offset_at, region.offset, region.size, toc);
    if (!fits) return in_toc(std::move(fits).error());
    std::vector<std::byte> scratch;
    auto count_bytes = file.read(region.offset, std::min<std::uint64_t>(region.size, 4), scratch);
    COLOAD_RETURN_IF_ERROR(count_bytes);
    if (count_bytes->size() < 4) {
      return in_toc(toc_error(ErrorKind::Truncated, "zstd_size", reader.zstd_size_at,
                              "the zstd region of " + hex(region.size) + " bytes cannot hold its u32 frame count",
                              region.size, 4));
    }
    const std::uint32_t count = load_le<std::uint32_t>(count_bytes->data());
    const std::uint64_t room = (region.size - 4) / 4;  // each frame has at least its size word
    if (count > room || count > kMaxObjects) {
      return in_toc(
          Error(ErrorKind::OutOfBounds, "zstd frame count " + std::to_string(count) + " at " + hex(region.offset) +
                                            " exceeds the " +
                                            std::to_string(std::min<std::uint64_t>(room, kMaxObjects)) +
                                            " frames its region (or the limit) can hold")
              .at_field("zstd_frame_count", region.offset, count, std::min<std::uint64_t>(room, kMaxObjects)));
    }
    archive->object_count_ = count;
    archive->next_frame_ = region.offset + 4;
  }

  // Ordinals in range and used once; sizes that agree; metadata that agrees.
  std::vector<std::uint32_t> owner(archive->object_count_, UINT32_MAX);
  for (std::size_t i = 0; i < archive->entries_.size(); ++i) {
    const Entry& entry = archive->entries_[i];
    const std::string field = entry.field + ".ordinal";
    if (entry.ordinal >= archive->object_count_) {
      return in_toc(toc_error(ErrorKind::Malformed, field, reader.ordinal_at[i],
                              "ordinal " + std::to_string(entry.ordinal) + " is out of range: the archive holds " +
                                  std::to_string(archive->object_count_) + " code objects",
                              entry.ordinal, archive->object_count_));
    }
    if (std::uint32_t& first = owner[entry.ordinal]; first != UINT32_MAX) {
      return in_toc(
          toc_error(ErrorKind::Malformed, field, reader.ordinal_at[i],
                    "ordinal " + std::to_string(entry.ordinal) + " is also " + archive->entries_[first].field + "'s",
                    entry.ordinal));
    } else {
      first = static_cast<std::uint32_t>(i);
    }
    if (archive->scheme_ == Scheme::None && entry.original_size != archive->blobs_[entry.ordinal].size) {
      return in_toc(toc_error(ErrorKind::SizeMismatch, entry.field + ".original_size", reader.size_at[i],
                              "original_size " + hex(entry.original_size) + " differs from blob " +
                                  std::to_string(entry.ordinal) + "'s size " + hex(archive->blobs_[entry.ordinal].size),
                              entry.original_size, archive->blobs_[entry.ordinal].size));
    }
    if (archive->scheme_ == Scheme::ZstdPerKernel && entry.original_size > options.max_decompressed_bytes) {
      return in_toc(toc_error(ErrorKind::LimitExceeded, entry.field + ".original_size", reader.size_at[i],
                              "original_size " + hex(entry.original_size) + " exceeds the limit " +
                                  hex(options.max_decompressed_bytes) + " (max_decompressed_bytes)",
                              entry.original_size, options.max_decompressed_bytes));
    }
    if (!entry.metadata_target.empty() && !same_target(entry.target, entry.metadata_target)) {
      return in_toc(toc_error(ErrorKind::Malformed, entry.field + ".metadata.target", reader.metadata_target_at[i],
                              "entry ID \"" + printable(entry.metadata_target) + "\" names another target than \"" +
                                  printable(entry.target) + "\""));
    }
    if (std::find(archive->gfx_arches_.begin(), archive->gfx_arches_.end(), entry.target) ==
        archive->gfx_arches_.end()) {
      archive->warnings_.push_back(entry.field + ": target \"" + printable(entry.target) +
                                   "\" is not in gfx_arches; rocm-kpack's loader never reads it");
    }
  }
  return std::shared_ptr<const Archive>(std::move(archive));
}

}  // namespace coload::detail::kpack
