// coload ls for kpack inputs (ls_kpack.h).
#include "ls_kpack.h"

#include <memory>
#include <set>
#include <string>

namespace coload::cli {

Expected<KpackListing> list_kpack_bundle(const FatBinary& binary, std::size_t index) {
  KpackListing listing{.members = binary.kpack_members(index)};
  auto stored = detail::kpack::stored_members(*listing.members);
  if (!stored) return std::move(stored).error().in_bundle(index).in_file(binary.file(index));
  for (std::size_t e = 0; e < stored->size(); ++e)
    listing.entries.push_back({&listing.members->members[e], (*stored)[e]});
  return listing;
}

bool write_kpack_header(ReportPrinter& out, const FatBinary& binary, const ReadOptions& options) {
  const SourceLayout& layout = binary.layout();
  if (layout.kind == SourceKind::KpackArchive) {
    // The TOC the binary's bundles were read from; an archive without entries is parsed here.
    std::shared_ptr<const detail::kpack::Archive> archive;
    for (std::size_t i = 0; i < binary.bundles().size() && !archive; ++i) {
      const auto members = binary.kpack_members(i);
      if (members && !members->members.empty()) archive = members->members.front().file->archive;
    }
    if (!archive) {
      auto parsed = detail::kpack::Archive::parse(binary.source().reader(), options);
      if (!parsed) return false;
      archive = std::move(*parsed);
    }
    const detail::kpack::Archive& toc = *archive;
    out.field("scheme", to_string(toc.scheme()));
    out.field("group", toc.group_name());
    out.field("gfx_arch_family", toc.gfx_arch_family());
    std::string targets;
    out.begin_array("gfx_arches");
    for (std::string_view arch : toc.gfx_arches()) {
      out.field("", arch);
      targets += (targets.empty() ? "" : ",") + std::string(arch);
    }
    out.end_array();
    out.text_field("targets", targets.empty() ? "none" : targets);
    out.field("code_objects", toc.object_count());
    out.text("{file}: {kind} ({scheme}, group {group}, targets {targets}), {bundle_count}\n");
    return true;
  }
  if (!layout.kpack_ref) return false;
  // The archives the wrappers' entries come from, in search order.
  std::set<std::string> seen;
  std::string archives;
  out.begin_array("archives");
  for (std::size_t i = 0; i < binary.bundles().size(); ++i) {
    for (const detail::kpack::Member& member : binary.kpack_members(i)->members) {
      if (!seen.insert(member.file->path).second) continue;
      out.field("", member.file->path);
      archives += (archives.empty() ? "" : ", ") + member.file->path;
    }
  }
  out.end_array();
  out.text_field("archive_list", archives.empty() ? "none found" : archives);
  out.text("{file}: {kind}, kpack'd: {bundle_count} (HIPK wrappers); archives: {archive_list}\n");
  return true;
}

void write_kpack_bundle_line(ReportPrinter& out, const FatBinary& binary, std::size_t index) {
  const auto members = binary.kpack_members(index);
  const std::string& key = members->key;
  const std::size_t hash = key.rfind('#');
  out.field("key", key);
  out.field("binary", hash == std::string::npos ? key : key.substr(0, hash));
  out.field("code_object_index", hash == std::string::npos ? std::string("none") : key.substr(hash + 1));
  if (members->members.empty()) {
    out.field("none_found", members->none_found);
    out.text("bundle {index}: {key} {format}: {none_found}\n");
  } else {
    out.null("none_found");
    out.text("bundle {index}: {key} (binary {binary}, code object {code_object_index}) {format}\n");
  }
}

Compression kpack_compression(const FatBinary& binary, std::size_t index) {
  const auto members = binary.kpack_members(index);
  for (const detail::kpack::Member& member : members->members) {
    if (member.file->archive->scheme() == detail::kpack::Scheme::ZstdPerKernel) return Compression::Zstd;
  }
  return Compression::None;
}

void write_kpack_entries(ReportPrinter& out, const KpackListing& listing) {
  for (std::size_t e = 0; e < listing.entries.size(); ++e) {
    const detail::kpack::Member& member = *listing.entries[e].member;
    const detail::kpack::Entry& entry = member.toc();
    const detail::kpack::Archive::Stored& stored = listing.entries[e].stored;
    const bool in_place = member.file->archive->scheme() == detail::kpack::Scheme::None;
    const bool found = member.file->source.has_value();  // in another file than the listed one
    out.begin_object();
    out.field("id", entry.id);
    out.field("target", entry.target);
    out.field("archive", member.file->path);
    out.field("ordinal", entry.ordinal);
    out.field("offset", stored.offset);
    out.field("size", entry.original_size);
    out.field("stored_size", stored.size);
    out.field("host", false);
    if (in_place)
      out.field("uri", entry_uri(member.file->path, stored.offset, stored.size));
    else
      out.null("uri");
    if (member.refused.empty())
      out.null("refused");
    else
      out.field("refused", member.refused);
    out.text_field("entry", e);
    std::string line = "  entry {entry}: {id:48} ordinal {ordinal} size {size:x}";
    line += in_place ? " at {offset:x}" : ", zstd {stored_size:x} at {offset:x}";
    if (found) line += " in {archive}";
    if (in_place) line += "  {uri}";
    line += "\n";
    if (!member.refused.empty()) line += "    refused: {refused}\n";
    out.text(line);
    out.end_object();
  }
}

}  // namespace coload::cli
