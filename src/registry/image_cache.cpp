// The registry's cache of bundles and the code objects read from them
// (registry_state.h, ImageCache).
#include <sys/stat.h>

#include "coload/detail/kpack_archive.h"
#include "common/bytes.h"
#include "common/try.h"
#include "io/checked_read.h"
#include "registry/registry_state.h"
#include "select/rank.h"

namespace coload::registry {
namespace {

/// The key CCOBs are shared by: identical stored hash and size.
std::string ccob_key(const BundleInfo& info) {
  return detail::hex(info.compressed->hash) + ":" + std::to_string(info.compressed->uncompressed_size);
}

std::string hash_outcome(StoredHash hash) {
  switch (hash) {
    case StoredHash::Checked: return "verified";
    case StoredHash::CheckedEarlier: return "verified earlier (marked)";
    case StoredHash::NotChecked: break;
  }
  return "not checked";
}

/// The code object already read from entry `id` of `data`, if any device still uses it.
std::shared_ptr<const EntryImage> cached_image(const BundleData& data, std::string_view id) {
  auto it = data.entries.find(id);
  return it == data.entries.end() ? nullptr : it->second.lock();
}

/// Io for bundle `index`'s bytes from `offset` (in its file) on, `size`
/// wanted and only `readable` there: the file shrank since it was mapped
/// (docs/reading-rules.md, "What coload requires of the caller's memory and files").
Error cut_short(const FatBinary& fat, std::size_t index, std::optional<std::size_t> entry, std::string_view what,
                std::uint64_t offset, std::uint64_t size, std::uint64_t readable) {
  return Error(ErrorKind::Io, std::string(what) + ": only " + detail::hex(readable) + " of " + detail::hex(size) +
                                  " bytes at offset " + detail::hex(offset) +
                                  " can be read: the file is shorter than when it was registered")
      .at_field(what, offset + readable, readable, size)
      .in_file(fat.file(index, entry));
}

/// Checks, before bundle `index` is read, that what reading and selecting
/// touch in the file's mapping can still be read: a plain bundle's table
/// (its entries' IDs and ELF headers view it) or a bare code object, whole.
/// A scan that copied the table (a file larger than Source::kKeepOpenAbove)
/// left nothing there: selection reads such ELF headers with pread.
Expected<void> probe_before_read(const FatBinary& fat, std::size_t index) {
  const BundleInfo& info = fat.bundles()[index];
  const bool in_place = (info.format == BundleFormat::Plain && !info.table) || info.format == BundleFormat::CodeObject;
  if (!in_place) return {};
  std::span<const std::byte> bytes = fat.source_of(index).bytes();
  if (info.offset > bytes.size()) return {};  // read_bundle names it
  const std::uint64_t size = std::min<std::uint64_t>(info.size, bytes.size() - info.offset);
  auto readable = detail::checked_probe(bytes.data() + info.offset, size);
  COLOAD_RETURN_IF_ERROR(readable);
  if (*readable < size) return cut_short(fat, index, std::nullopt, "bundle", info.offset, size, *readable);
  return {};
}

/// Checks that the ELF headers selection reads of a file set's group, each
/// at the start of its own file, can still be read.
Expected<void> probe_group_heads(const FatBinary& fat, std::size_t index, const Bundle& bundle) {
  if (bundle.info().format != BundleFormat::FileGroup) return {};
  for (std::size_t i = 0; i < bundle.entries().size(); ++i) {
    std::span<const std::byte> head = bundle.entries()[i].bytes.first(
        std::min<std::size_t>(bundle.entries()[i].bytes.size(), detail::kElfHeaderBytes));
    auto readable = detail::checked_probe(head.data(), head.size());
    COLOAD_RETURN_IF_ERROR(readable);
    if (*readable < head.size()) return cut_short(fat, index, i, "entry", 0, head.size(), *readable);
  }
  return {};
}

/// The chosen entry's bytes, copied through a checked read: a file that
/// shrank is Io naming it and the offset, never SIGBUS.
Expected<std::vector<std::byte>> copy_entry(const FatBinary& fat, std::size_t index, std::size_t entry_index,
                                            const BundleEntry& entry) {
  const BundleInfo& info = fat.bundles()[index];
  std::vector<std::byte> copy(entry.bytes.size());
  auto copied = detail::checked_copy(entry.bytes.data(), copy.size(), copy.data());
  COLOAD_RETURN_IF_ERROR(copied);
  if (*copied < copy.size()) {
    const std::uint64_t offset = (info.format == BundleFormat::FileGroup ? 0 : info.offset) + entry.offset;
    return cut_short(fat, index, entry_index, "entry", offset, copy.size(), *copied);
  }
  return copy;
}

/// The selection an equal device's stream made in `data`, if one did.
std::optional<Selection> streamed_selection(const BundleData& data, const Device& device) {
  std::lock_guard lock(data.entries_mutex);
  for (const auto& [streamed_for, selection] : data.streamed_selections) {
    if (streamed_for == device) return selection;
  }
  return std::nullopt;
}

}  // namespace

Expected<BundleChoice> ImageCache::stream(const FatBinary& fat, const std::string& name, std::size_t index,
                                          const Selector& selector) {
  auto streamed = select_in_bundle_at(fat, index, selector, stream_);
  if (!streamed) return streamed;
  const StreamedChoice& read = *streamed->streamed();  // a CCOB's choice is always streamed
  counters_.add(counters_.bundles_decompressed);
  counters_.add(counters_.bytes_decoded, read.decoded_bytes);
  log_(LogLevel::Debug, [&] {
    const Candidate* kept = streamed->selection.chosen();
    return name + ": bundle " + std::to_string(index) + ": CCOB streamed for " + selector.device().str() +
           ": decoded " + std::to_string(read.decoded_bytes) + " of " +
           std::to_string(fat.bundles()[index].compressed->uncompressed_size) + " bytes, hash " +
           hash_outcome(read.hash) + ", kept " +
           (kept ? "entry " + std::to_string(kept->entry_index) + " (" + std::to_string(read.chosen.size()) + " bytes)"
                 : std::string("nothing"));
  });
  return streamed;
}

Expected<std::shared_ptr<const EntryImage>> ImageCache::add_image(const BundleData& data,
                                                                  std::shared_ptr<const BundleData> bundle,
                                                                  std::vector<std::byte> decoded,
                                                                  std::span<const std::byte> bytes,
                                                                  std::string_view id) {
  counters_.add(counters_.code_objects_read);
  auto code_object = CodeObject::read(bytes);  // `decoded` keeps its buffer when moved below
  COLOAD_RETURN_IF_ERROR(code_object);
  auto image = std::make_shared<const EntryImage>(
      EntryImage{std::move(bundle), std::move(decoded), bytes, std::move(*code_object)});
  data.entries.insert_or_assign(std::string(id), image);
  return image;
}

Expected<std::shared_ptr<const BundleData>> ImageCache::read_plain(const std::shared_ptr<const FatBinary>& fat,
                                                                   std::size_t index) {
  auto read = fat->read(index);
  counters_.add(counters_.bundles_read);
  COLOAD_RETURN_IF_ERROR(read);
  return std::make_shared<const BundleData>(std::move(*read), fat);
}

Expected<std::shared_ptr<const BundleData>> ImageCache::shared_ccob(const FatBinary& fat, const std::string& name,
                                                                    std::size_t index, const Selector& selector,
                                                                    std::optional<BundleChoice>& streamed) {
  const std::string key = ccob_key(fat.bundles()[index]);
  {
    std::lock_guard lock(mutex_);
    auto it = compressed_.find(key);
    if (it != compressed_.end()) {
      if (auto data = it->second.lock()) return data;
    }
  }
  auto decoded = stream(fat, name, index, selector);
  COLOAD_RETURN_IF_ERROR(decoded);
  counters_.add(counters_.bundles_read);
  StreamedChoice& read = *decoded->streamed();
  auto data = std::make_shared<const BundleData>(fat.bundles()[index], std::move(read.heads), read.every_head);
  streamed = std::move(*decoded);
  std::lock_guard lock(mutex_);
  std::erase_if(compressed_, [](const auto& item) { return item.second.expired(); });
  auto [it, inserted] = compressed_.try_emplace(key, data);
  if (!inserted) {
    if (auto existing = it->second.lock()) return existing;  // another registration streamed it meanwhile
    it->second = data;
  }
  return data;
}

namespace {

/// Io when an archive of `members` is shorter now than when it was mapped:
/// reading its mapping past the new end would fault (as probe_before_read,
/// checked before each read).
Expected<void> probe_archives(const detail::kpack::Members& members) {
  const detail::kpack::ArchiveFile* last = nullptr;
  for (const detail::kpack::Member& member : members.members) {
    if (member.file.get() == last) continue;
    last = member.file.get();
    struct stat status{};
    if (::stat(last->path.c_str(), &status) != 0 ||
        static_cast<std::uint64_t>(status.st_size) >= last->archive->size()) {
      continue;  // gone or replaced: the mapping holds the old file
    }
    return Error(ErrorKind::Io, "kpack archive " + last->path + " is " + detail::hex(status.st_size) + " bytes now, " +
                                    detail::hex(last->archive->size()) + " when it was mapped")
        .at_field("size", std::nullopt, status.st_size, last->archive->size());
  }
  return {};
}

}  // namespace

Expected<Choice> ImageCache::choose_kpack(const std::shared_ptr<const FatBinary>& fat, BundleSlot& slot,
                                          std::size_t index, const Selector& selector) {
  Choice choice;
  {
    std::lock_guard lock(slot.mutex);
    if (!slot.done) {  // the table alone: what the code objects read are kept by
      slot.done = true;
      auto table = fat->read_only(index, std::nullopt);
      counters_.add(counters_.bundles_read);
      if (table) {
        slot.data = std::make_shared<const BundleData>(std::move(*table), fat);
      } else {
        slot.error = std::move(table).error();
      }
    }
    if (slot.error) return *slot.error;
    choice.data = slot.data;
  }
  // Each device decodes only what its choice needs (docs/pipeline.md, "Where a kpack entry is decoded").
  COLOAD_RETURN_IF_ERROR(probe_archives(*fat->kpack_members(index)));
  auto made = select_in_bundle_at(*fat, index, selector, stream_);
  COLOAD_RETURN_IF_ERROR(made);
  // Copied: the choice's bundle (a decoded frame, or a view of an archive) is not kept.
  const std::span<const std::byte> picked = made->chosen_bytes();
  choice.selection = std::move(made->selection);
  const Candidate* chosen = choice.selection.chosen();
  if (!chosen) return choice;
  const BundleData& data = *choice.data;
  std::lock_guard lock(data.entries_mutex);
  if ((choice.image = cached_image(data, chosen->id))) return choice;
  // Checked: a `none` entry views its archive's mapping, which a file cut short faults in.
  std::vector<std::byte> copy(picked.size());
  auto copied = detail::checked_copy(picked.data(), picked.size(), copy.data());
  if (copied && *copied < picked.size()) {
    copied = Error(ErrorKind::Io, "only " + detail::hex(*copied) + " of its " + detail::hex(picked.size()) +
                                      " bytes can be read: its archive shrank since it was mapped");
  }
  if (!copied) return std::move(copied).error().at_entry(chosen->entry_index, chosen->id);
  const std::span<const std::byte> bytes = copy;
  auto image = add_image(data, nullptr, std::move(copy), bytes, chosen->id);
  if (!image) return std::move(image).error().at_entry(chosen->entry_index, chosen->id);
  choice.image = std::move(*image);
  return choice;
}

Expected<Choice> ImageCache::choose(const std::shared_ptr<const FatBinary>& fat, const std::string& name,
                                    BundleSlot& slot, std::size_t index, const Selector& selector, KeptBytes& kept,
                                    bool copy_entries) {
  const BundleInfo& info = fat->bundles()[index];
  if (info.format == BundleFormat::Kpack) return choose_kpack(fat, slot, index, selector);
  const bool compressed = info.format == BundleFormat::Compressed && info.compressed;
  if (copy_entries && !compressed) {
    // Each device's selection reads the table's IDs and ELF headers again: checked each time.
    COLOAD_RETURN_IF_ERROR(probe_before_read(*fat, index));
  }
  Choice choice;
  std::optional<BundleChoice> streamed;
  {
    std::lock_guard lock(slot.mutex);
    if (!slot.done) {
      slot.done = true;
      auto made = compressed ? shared_ccob(*fat, name, index, selector, streamed) : read_plain(fat, index);
      if (made) {
        slot.data = std::move(*made);
      } else {
        slot.error = std::move(made).error();
      }
    }
    if (slot.error) return *slot.error;
    choice.data = slot.data;
  }
  const BundleData& data = *choice.data;
  if (copy_entries && !compressed) {
    COLOAD_RETURN_IF_ERROR(probe_group_heads(*fat, index, data.bundle));
  }
  if (compressed) {
    if (auto charged = kept.charge(heads_bytes(data.heads), "its table's IDs and ELF headers"); !charged) {
      return std::move(charged).error().with_context("CCOB of " + std::to_string(data.heads.size()) + " entries");
    }
  }
  if (streamed) {
    choice.selection = streamed->selection;  // the stream's own, kept for the check below
  } else if (data.every_head) {
    auto selection = selector.select(data.bundle);
    COLOAD_RETURN_IF_ERROR(selection);
    choice.selection = std::move(*selection);
  } else if (auto made = streamed_selection(data, selector.device())) {
    choice.selection = std::move(*made);
  } else {
    // Skip mode stopped the stream that kept these heads before some
    // entries' ELF headers, and no equal device has streamed: this device's
    // choice needs a stream of its own.
    auto again = stream(*fat, name, index, selector);
    COLOAD_RETURN_IF_ERROR(again);
    streamed = std::move(*again);
    choice.selection = streamed->selection;
  }
  if (streamed && !data.every_head) {
    std::lock_guard lock(data.entries_mutex);
    data.streamed_selections.emplace_back(selector.device(), streamed->selection);
  }
  const Candidate* chosen = choice.selection.chosen();
  if (!chosen) return choice;
  const BundleEntry& entry = data.bundle.entries()[chosen->entry_index];
  if (compressed) {
    // Charged before a later device decodes the entry again; a first stream has decoded it already.
    if (auto charged = kept.charge(data.heads[chosen->entry_index].size, "its size"); !charged) {
      return std::move(charged).error().at_entry(chosen->entry_index, chosen->id);
    }
  }
  std::lock_guard lock(data.entries_mutex);
  choice.image = cached_image(data, entry.id);
  if (choice.image) {
    log_(LogLevel::Debug, [&] {
      return name + ": bundle " + std::to_string(index) + ": entry " + std::to_string(chosen->entry_index) + " (" +
             chosen->id + ") reused for " + selector.device().str();
    });
    return choice;
  }
  if (!compressed && copy_entries) {
    auto copy = copy_entry(*fat, index, chosen->entry_index, entry);
    if (!copy) return std::move(copy).error().at_entry(chosen->entry_index, chosen->id);
    std::span<const std::byte> bytes = *copy;
    auto image = add_image(data, nullptr, std::move(*copy), bytes, entry.id);
    if (!image) return std::move(image).error().at_entry(chosen->entry_index, chosen->id);
    choice.image = std::move(*image);
    return choice;
  }
  if (!compressed) {
    auto image = add_image(data, choice.data, {}, entry.bytes, entry.id);
    if (!image) return std::move(image).error().at_entry(chosen->entry_index, chosen->id);
    choice.image = std::move(*image);
    return choice;
  }
  if (!streamed) {
    auto again = stream(*fat, name, index, selector);
    COLOAD_RETURN_IF_ERROR(again);
    streamed = std::move(*again);
  }
  const Candidate* decoded = streamed->selection.chosen();
  if (!decoded || decoded->entry_index != chosen->entry_index) {
    // The heads came from another registration with this stored hash and
    // size, and this stream's entries differ: the hash does not tell them apart.
    return Error(ErrorKind::HashMismatch, "chosen from the heads of an earlier CCOB with stored hash and size " +
                                              ccob_key(info) + ", but this bundle's stream chose " +
                                              (decoded ? "entry " + std::to_string(decoded->entry_index) : "nothing"))
        .at_entry(chosen->entry_index, chosen->id);
  }
  std::vector<std::byte>& decoded_entry = streamed->streamed()->chosen;
  std::span<const std::byte> bytes = decoded_entry;
  auto image = add_image(data, nullptr, std::move(decoded_entry), bytes, entry.id);
  if (!image) return std::move(image).error().at_entry(chosen->entry_index, chosen->id);
  choice.image = std::move(*image);
  return choice;
}

}  // namespace coload::registry
