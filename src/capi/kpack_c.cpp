// The C API's kpack archive calls (coload_kpack_list, coload_kpack_extract in
// coload/coload.h): an archive opened as FatBinary::open opens it (one bundle
// per binary key, docs/format.md "kpack archives"), its entries listed as
// `coload ls` lists them, and one entry read alone (FatBinary::read_only) as
// `coload extract --target` reads it.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "capi/c_boundary.h"
#include "coload/coload.h"
#include "coload/detail/kpack_archive.h"
#include "coload/fat_binary.h"

using namespace coload::capi;  // NOLINT: the C API's shared parts, in every entry point

namespace {

using coload::Error;
using coload::ErrorKind;
using coload::Expected;
using coload::FatBinary;
namespace kpack = coload::detail::kpack;

/// What a coload_kpack_listing points at; coload_kpack_listing_free deletes it.
/// Every string is a copy: the archive is unmapped once the call returns.
struct ListingData : coload_kpack_listing {
  std::deque<std::string> strings;  // keys, targets, IDs and arches, NUL-terminated; they stay put
  std::vector<const char*> arch_pointers;
  std::vector<coload_kpack_entry> made;
  std::vector<const coload_kpack_entry*> pointers;
};

/// What a coload_kpack_object points at; coload_kpack_object_free deletes it.
struct ObjectData : coload_kpack_object {
  std::optional<FatBinary> binary;     // keeps the mapping a `none` entry views
  std::optional<coload::Bundle> read;  // owns a decoded entry
  std::string id;
};

/// The archive at `path` opened as a FatBinary; BadMagic for a file of another kind.
Expected<FatBinary> open_archive(const char* path) {
  auto binary = FatBinary::open(path);
  if (!binary) return std::move(binary).error();
  const coload::SourceLayout& layout = binary->layout();
  if (layout.kind != coload::SourceKind::KpackArchive) {
    return Error(ErrorKind::BadMagic, "is no kpack archive (it is a " + std::string(coload::to_string(layout.kind)) +
                                          "; one starts with KPAK)")
        .at_field("magic", 0)
        .in_file(path);
  }
  return binary;
}

/// The archive behind `binary`'s bundles (each member's), or parsed again
/// from its bytes for an archive without a key.
Expected<std::shared_ptr<const kpack::Archive>> archive_of(const FatBinary& binary) {
  for (std::size_t i = 0; i < binary.bundles().size(); ++i) {
    const auto members = binary.kpack_members(i);
    if (members && !members->members.empty()) return members->members.front().file->archive;
  }
  auto archive = kpack::Archive::parse(binary.source().reader());
  if (!archive) return std::move(archive).error().in_file(binary.name());
  return *archive;
}

coload_status list(const char* path, coload_kpack_listing** out) {
  auto binary = open_archive(path);
  if (!binary) return fail(binary.error());
  auto data = std::make_unique<ListingData>();
  auto archive = archive_of(*binary);
  if (!archive) return fail(archive.error());
  const kpack::Archive& toc = **archive;
  // Sized once, so that the pointers into them stay put.
  std::size_t total = 0;
  for (std::size_t i = 0; i < binary->bundles().size(); ++i) total += binary->kpack_members(i)->members.size();
  data->made.resize(total);
  auto keep = [&](std::string_view text) { return data->strings.emplace_back(text).c_str(); };
  std::size_t next = 0;
  for (std::size_t i = 0; i < binary->bundles().size(); ++i) {
    const auto members = binary->kpack_members(i);
    auto stored = kpack::stored_members(*members);
    if (!stored) return fail(std::move(stored).error().in_bundle(i).in_file(path));
    for (std::size_t e = 0; e < members->members.size(); ++e) {
      const kpack::Entry& entry = members->members[e].toc();
      coload_kpack_entry& made = data->made[next++];
      made.struct_size = sizeof made;
      made.bundle = i;
      made.key = keep(entry.key);
      made.binary = keep(entry.binary);
      made.has_index = entry.index ? 1 : 0;
      made.index = entry.index.value_or(0);
      made.target = keep(entry.target);
      made.entry_id = keep(entry.id);
      made.ordinal = entry.ordinal;
      made.original_size = entry.original_size;
      made.stored_offset = (*stored)[e].offset;
      made.stored_size = (*stored)[e].size;
    }
  }
  for (const coload_kpack_entry& entry : data->made) data->pointers.push_back(&entry);
  for (std::string_view arch : toc.gfx_arches()) data->arch_pointers.push_back(keep(arch));
  data->struct_size = sizeof(coload_kpack_listing);
  data->scheme =
      toc.scheme() == kpack::Scheme::ZstdPerKernel ? COLOAD_KPACK_SCHEME_ZSTD_PER_KERNEL : COLOAD_KPACK_SCHEME_NONE;
  data->group_name = keep(toc.group_name());
  data->gfx_arch_family = keep(toc.gfx_arch_family());
  data->gfx_arch_count = data->arch_pointers.size();
  data->gfx_arches = data->arch_pointers.data();
  data->code_objects = toc.object_count();
  data->count = data->pointers.size();
  data->entries = data->pointers.data();
  *out = data.release();
  return ok();
}

coload_status extract(const char* path, const char* key, const char* target, coload_kpack_object** out) {
  auto binary = open_archive(path);
  if (!binary) return fail(binary.error());
  std::optional<std::size_t> bundle;
  for (std::size_t i = 0; i < binary->bundles().size() && !bundle; ++i) {
    if (binary->kpack_members(i)->key == key) bundle = i;
  }
  if (!bundle) {
    return fail(Error(ErrorKind::NotFound, "no binary key \"" + std::string(key) + "\" in the archive (it has " +
                                               std::to_string(binary->bundles().size()) + ")")
                    .at_field("key", std::nullopt)
                    .in_file(path));
  }
  const auto members = binary->kpack_members(*bundle);
  std::optional<std::size_t> entry;
  std::string targets;
  for (std::size_t e = 0; e < members->members.size(); ++e) {
    const std::string_view listed = members->members[e].toc().target;
    if (listed == target && !entry) entry = e;
    targets += (targets.empty() ? "" : ", ") + std::string(listed);
  }
  if (!entry) {
    return fail(Error(ErrorKind::NotFound, "key \"" + std::string(key) + "\" has no code object for target \"" +
                                               target + "\" (targets: " + (targets.empty() ? "none" : targets) + ")")
                    .at_field("target", std::nullopt)
                    .in_bundle(*bundle)
                    .in_file(path));
  }
  auto read = binary->read_only(*bundle, *entry);
  if (!read) return fail(read.error());
  auto data = std::make_unique<ObjectData>();
  data->binary = std::move(*binary);
  data->read.emplace(std::move(*read));
  const coload::BundleEntry& chosen = data->read->entries()[*entry];
  data->struct_size = sizeof(coload_kpack_object);
  data->bytes = chosen.bytes.data();
  data->size = chosen.bytes.size();
  data->id = chosen.id;
  data->entry_id = data->id.c_str();
  data->bundle = *bundle;
  *out = data.release();
  return ok();
}

}  // namespace

extern "C" {

coload_status coload_kpack_list(const char* path, coload_kpack_listing** out) {
  const char* function = __func__;
  return guarded(function, [&] {
    if (!out) return null_argument(function, "out");
    *out = nullptr;
    if (!path) return null_argument(function, "path");
    return list(path, out);
  });
}

void coload_kpack_listing_free(coload_kpack_listing* listing) {
  delete static_cast<ListingData*>(listing);  // noexcept: only destructors run
}

coload_status coload_kpack_extract(const char* path, const char* key, const char* target, coload_kpack_object** out) {
  const char* function = __func__;
  return guarded(function, [&] {
    if (!out) return null_argument(function, "out");
    *out = nullptr;
    if (!path) return null_argument(function, "path");
    if (!key) return null_argument(function, "key");
    if (!target) return null_argument(function, "target");
    return extract(path, key, target, out);
  });
}

void coload_kpack_object_free(coload_kpack_object* object) {
  delete static_cast<ObjectData*>(object);  // noexcept: only destructors run
}

}  // extern "C"
