// kpack inputs as bundles (kpack_bundles.h).
#include "formats/kpack_bundles.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>

#include "common/try.h"
#include "formats/kpack_search.h"

namespace coload::detail {

namespace {

/// An archive input: one bundle per binary key.
Expected<std::vector<KpackBundle>> archive_bundles(const Source& source, SourceLayout& layout,
                                                   const ReadOptions& options) {
  auto archive = kpack::Archive::parse(source.reader(), options);
  COLOAD_RETURN_IF_ERROR(archive);
  for (const std::string& warning : (*archive)->warnings()) layout.warnings.push_back(warning);
  auto file = std::make_shared<kpack::ArchiveFile>(kpack::ArchiveFile{.path = source.name(), .archive = *archive});
  std::vector<KpackBundle> bundles;
  const auto binaries = file->archive->binaries();
  bundles.reserve(binaries.size());
  for (std::size_t i = 0; i < binaries.size(); ++i) {
    auto members = std::make_shared<kpack::Members>();
    members->key = std::string(binaries[i].key);
    for (std::size_t e = 0; e < binaries[i].count; ++e)
      members->members.push_back({.file = file, .entry = binaries[i].first + e});
    bundles.push_back({.info = {.index = i,
                                .offset = file->archive->toc_offset() + binaries[i].toc_offset,
                                .size = binaries[i].toc_size,
                                .format = BundleFormat::Kpack},
                       .members = std::move(members)});
  }
  return bundles;
}

/// The targets whose `#N` cannot be trusted to be the wrapper index, each
/// with its sentence. The packer numbers each target's code objects on its
/// own, in bundle order, so `#N` is wrapper N's only when every translation
/// unit was built for that target: a target with more or fewer code objects
/// than the image has wrappers may hand a wrapper another unit's code
/// (docs/reading-rules.md, "kpack'd host images").
std::map<std::string_view, std::string> untrusted_targets(
    std::span<const std::shared_ptr<const kpack::ArchiveFile>> found, std::string_view binary, std::size_t wrappers) {
  std::map<std::string_view, std::set<std::uint32_t>> indices;  // per target, across the archives
  std::map<std::string_view, std::set<std::string_view>> where;
  for (const auto& file : found) {
    for (const kpack::Entry& entry : file->archive->entries()) {
      if (entry.binary != binary || !entry.index) continue;
      indices[entry.target].insert(*entry.index);
      where[entry.target].insert(file->path);
    }
  }
  auto objects = [](std::size_t n) {
    return n == 1 ? std::string("1 code object") : std::to_string(n) + " code objects";
  };
  std::map<std::string_view, std::string> untrusted;
  for (const auto& [target, numbers] : indices) {
    if (numbers.size() == wrappers && *numbers.rbegin() < wrappers) continue;
    std::string files;
    for (std::string_view path : where[target]) files += (files.empty() ? "" : ", ") + std::string(path);
    untrusted[target] = "ambiguous: " + std::string(binary) + " has " + objects(numbers.size()) + " for target " +
                        std::string(target) + " (#0 to #" + std::to_string(*numbers.rbegin()) + ", in " + files +
                        ") and " + std::to_string(wrappers) +
                        " wrappers; the packer numbers each target's code objects on its own, so #N need not be "
                        "wrapper N's";
  }
  return untrusted;
}

/// A kpack'd host image: one bundle per HIPK wrapper, its entries those of
/// key `kernel_name#index` in every archive found.
Expected<std::vector<KpackBundle>> hipk_bundles(const Source& source, SourceLayout& layout,
                                                const ReadOptions& options) {
  const KpackRefLayout& ref = *layout.kpack_ref;
  auto marker = kpack::parse_marker(source.bytes().subspan(ref.marker_offset, ref.marker_size));
  if (!marker) return std::move(marker).error().with_context(".rocm_kpack_ref");
  const std::string& binary_path = options.kpack.binary_path.empty() ? source.name() : options.kpack.binary_path;
  ArchiveSearch search = find_archives(*marker, binary_path, options);
  for (std::string& warning : search.warnings) layout.warnings.push_back(std::move(warning));
  const auto untrusted = untrusted_targets(search.archives, marker->kernel_name, ref.indices.size());

  // key → its entries, archive by archive (overlays before base archives: find_archives' order).
  std::unordered_map<std::string_view, std::vector<kpack::Member>> by_key;
  for (const auto& file : search.archives) {
    const auto entries = file->archive->entries();
    for (std::size_t e = 0; e < entries.size(); ++e) {
      if (entries[e].binary != marker->kernel_name) continue;
      kpack::Member member{.file = file, .entry = e};
      if (auto it = untrusted.find(entries[e].target); it != untrusted.end()) member.refused = it->second;
      by_key[entries[e].key].push_back(std::move(member));
    }
  }
  std::vector<KpackBundle> bundles;
  bundles.reserve(ref.indices.size());
  for (std::size_t w = 0; w < ref.indices.size(); ++w) {
    auto members = std::make_shared<kpack::Members>();
    members->key = marker->kernel_name + "#" + std::to_string(ref.indices[w]);
    if (auto it = by_key.find(members->key); it != by_key.end()) members->members = it->second;
    if (members->members.empty()) members->none_found = search.none_found(members->key);
    bundles.push_back(
        {.info = {.index = w, .offset = ref.marker_offset, .size = ref.marker_size, .format = BundleFormat::Kpack},
         .members = std::move(members)});
  }
  return bundles;
}

}  // namespace

Expected<std::vector<KpackBundle>> kpack_input_bundles(const Source& source, SourceLayout& layout,
                                                       const ReadOptions& options) {
  if (layout.kpack_ref) return hipk_bundles(source, layout, options);
  return archive_bundles(source, layout, options);
}

Expected<Bundle> read_kpack_bundle(std::shared_ptr<const kpack::Members> members, const BundleInfo& info,
                                   std::span<const KpackPart> parts) {
  struct Storage {
    std::shared_ptr<const kpack::Members> members;  // the entries' IDs, the archives' bytes
    std::vector<std::vector<std::byte>> decoded;    // zstd: one buffer per entry
  };
  auto storage = std::make_shared<Storage>();
  const std::size_t count = members->members.size();
  storage->decoded.resize(count);
  std::vector<BundleEntry> entries;
  entries.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    const kpack::Member& member = members->members[i];
    const kpack::Archive& archive = *member.file->archive;
    const kpack::Entry& entry = member.toc();
    auto failed = [&](Error error) {
      error = std::move(error).at_entry(i, entry.id);
      // A found archive is not the file the error names: say which it is.
      return member.file->source ? std::move(error).with_context(member.file->path) : error;
    };
    auto stored = archive.stored(entry);
    if (!stored) return failed(std::move(stored).error());
    Expected<std::span<const std::byte>> bytes = std::span<const std::byte>();
    switch (parts.empty() ? KpackPart::Whole : parts[i]) {
      case KpackPart::Whole: bytes = archive.bytes(entry, storage->decoded[i]); break;
      case KpackPart::Head: bytes = archive.head(entry, kEntryHeadBytes, storage->decoded[i]); break;
      case KpackPart::Stored: bytes = archive.stored_bytes(*stored); break;
      case KpackPart::Nothing: break;
    }
    if (!bytes) return failed(std::move(bytes).error());
    entries.push_back({.id = entry.id, .offset = stored->offset, .size = entry.original_size, .bytes = *bytes});
  }
  storage->members = std::move(members);
  return Bundle(info, std::move(entries), {}, std::move(storage));
}

}  // namespace coload::detail
