// A kpack archive's binary keys as bundles (kpack_bundles.h).
#include "formats/kpack_bundles.h"

#include <utility>

#include "common/try.h"

namespace coload::detail {

Expected<KpackBundles> kpack_bundles(const Source& source, SourceLayout& layout, const ReadOptions& options) {
  auto archive = kpack::Archive::parse(source.reader(), options);
  COLOAD_RETURN_IF_ERROR(archive);
  KpackBundles out{.archive = std::move(*archive)};
  for (const std::string& warning : out.archive->warnings()) layout.warnings.push_back(warning);
  const auto binaries = out.archive->binaries();
  out.bundles.reserve(binaries.size());
  for (std::size_t i = 0; i < binaries.size(); ++i) {
    out.bundles.push_back({.index = i,
                           .offset = out.archive->toc_offset() + binaries[i].toc_offset,
                           .size = binaries[i].toc_size,
                           .format = BundleFormat::Kpack});
  }
  return out;
}

Expected<Bundle> read_kpack_bundle(std::shared_ptr<const kpack::Archive> archive, const BundleInfo& info,
                                   std::size_t key, std::span<const KpackPart> parts) {
  struct Storage {
    std::shared_ptr<const kpack::Archive> archive;  // the entries' IDs and `none` bytes
    std::vector<std::vector<std::byte>> decoded;    // zstd: one buffer per entry
  };
  auto storage = std::make_shared<Storage>();
  const kpack::Binary& binary = archive->binaries()[key];
  storage->decoded.resize(binary.count);
  std::vector<BundleEntry> entries;
  entries.reserve(binary.count);
  for (std::size_t i = 0; i < binary.count; ++i) {
    const kpack::Entry& entry = archive->entries()[binary.first + i];
    auto stored = archive->stored(entry);
    if (!stored) return std::move(stored).error().at_entry(i, entry.id);
    Expected<std::span<const std::byte>> bytes = std::span<const std::byte>();
    switch (parts.empty() ? KpackPart::Whole : parts[i]) {
      case KpackPart::Whole: bytes = archive->bytes(entry, storage->decoded[i]); break;
      case KpackPart::Head: bytes = archive->head(entry, kEntryHeadBytes, storage->decoded[i]); break;
      case KpackPart::Stored: bytes = archive->stored_bytes(*stored); break;
      case KpackPart::Nothing: break;
    }
    if (!bytes) return std::move(bytes).error().at_entry(i, entry.id);
    entries.push_back({.id = entry.id, .offset = stored->offset, .size = entry.original_size, .bytes = *bytes});
  }
  storage->archive = std::move(archive);
  return Bundle(info, std::move(entries), {}, std::move(storage));
}

}  // namespace coload::detail
