// coload ls: every bundle and entry of each input, as text or JSON, each
// bundle written as it is taken. Only the tables are read: a host image's
// CCOBs are streamed, on one thread per core, and none is held whole.
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "coload/config.h"
#include "coload/detail/kpack_archive.h"
#include "coload/detail/ordered_pool.h"
#include "coload/detail/stream_select.h"
#include "coload/fat_binary.h"
#include "coload/pipeline.h"
#include "command_context.h"
#include "commands.h"

namespace coload::cli {
namespace {

std::string hex(std::uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

/// roc-obj-ls style URI of an entry that lies in the file as is. The path is
/// percent-encoded (RFC 3986) so that a `#`, `&` or `%` in it cannot be read
/// as the fragment.
std::string entry_uri(const std::string& path, std::uint64_t offset, std::uint64_t size) {
  std::string uri = "file://";
  for (unsigned char c : path) {
    bool plain = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '/' || c == '-' ||
                 c == '.' || c == '_' || c == '~';
    if (plain) {
      uri += static_cast<char>(c);
    } else {
      char escaped[4];
      std::snprintf(escaped, sizeof escaped, "%%%02X", c);
      uri += escaped;
    }
  }
  return uri + "#offset=" + std::to_string(offset) + "&size=" + std::to_string(size);
}

/// A kpack archive's entry as the listing shows it: from the TOC, and for
/// zstd the frame's size word; nothing is decoded.
struct KpackListed {
  const detail::kpack::Entry* entry = nullptr;
  detail::kpack::Archive::Stored stored;
};

/// A bundle's table as the listing shows it: a plain bundle read in place
/// (its entries view the mapped file), a CCOB's table, streamed, or a kpack
/// binary key's entries.
struct ListedBundle {
  std::optional<Bundle> plain;
  std::vector<EntryHead> streamed;
  std::vector<KpackListed> kpack;
};

/// Calls fn(index, id, offset, size, is_host) for each entry, in table order.
template <class Fn>
void for_each_entry(const ListedBundle& bundle, Fn fn) {
  std::size_t index = 0;
  if (bundle.plain) {
    for (const BundleEntry& entry : bundle.plain->entries()) {
      fn(index++, entry.id, entry.offset, entry.size, entry.is_host);
    }
  }
  for (const EntryHead& head : bundle.streamed) {
    fn(index++, std::string_view(head.id), head.offset, head.size, head.is_host);
  }
  for (const KpackListed& listed : bundle.kpack) {
    fn(index++, std::string_view(listed.entry->id), listed.stored.offset, listed.entry->original_size, false);
  }
}

/// A kpack binary key's entries, their stored ranges from the TOC (and the
/// frames' size words).
Expected<ListedBundle> list_kpack_bundle(const FatBinary& binary, std::size_t index) {
  const auto [archive, key] = binary.kpack_key(index);
  const detail::kpack::Binary& listed_key = archive->binaries()[key];
  ListedBundle listed;
  for (std::size_t e = 0; e < listed_key.count; ++e) {
    const detail::kpack::Entry& entry = archive->entries()[listed_key.first + e];
    auto stored = archive->stored(entry);
    if (!stored) return std::move(stored).error().at_entry(e, entry.id).in_bundle(index).in_file(binary.file(index));
    listed.kpack.push_back({&entry, *stored});
  }
  return listed;
}

/// Bundle `index`'s table. A CCOB is streamed and nothing of it kept: its
/// hash is checked over the whole stream, or, with a mark, decoding stops
/// once the table is complete.
Expected<ListedBundle> list_bundle(const FatBinary& binary, std::size_t index, const ReadOptions& read) {
  const BundleInfo& info = binary.bundles()[index];
  if (info.format == BundleFormat::Kpack) return list_kpack_bundle(binary, index);
  ListedBundle listed;
  if (info.format == BundleFormat::Compressed) {
    auto nothing = [](std::span<const BundleEntry>) { return std::optional<std::size_t>(); };
    const Source& source = binary.source_of(index);
    auto streamed = extract_from_compressed_bundle(source.bytes(), info, nothing, {.read = read});
    if (!streamed) return std::move(streamed).error().in_file(source.name());
    listed.streamed = std::move(streamed->heads);
    return listed;
  }
  auto bundle = binary.read(index);
  if (!bundle) return std::move(bundle).error();
  listed.plain = std::move(*bundle);
  return listed;
}

/// Where bundle `i`'s entry `e` lies: its file (a file set's member) and the
/// path its URI names.
const std::string& entry_file(const std::string& path, const FatBinary& binary, std::size_t i, std::size_t e) {
  return binary.file_count() > 1 ? binary.file(i, e) : path;
}

/// A kpack archive's TOC facts, for the header line.
void write_kpack_facts(ReportPrinter& out, const detail::kpack::Archive& archive) {
  out.field("scheme", to_string(archive.scheme()));
  out.field("group", archive.group_name());
  out.field("gfx_arch_family", archive.gfx_arch_family());
  std::string targets;
  out.begin_array("gfx_arches");
  for (std::string_view arch : archive.gfx_arches()) {
    out.field("", arch);
    targets += (targets.empty() ? "" : ",") + std::string(arch);
  }
  out.end_array();
  out.text_field("targets", targets.empty() ? "none" : targets);
  out.field("code_objects", archive.object_count());
}

/// The file's facts, before its bundles: the text's first line and warnings.
void write_header(ReportPrinter& out, const std::string& path, const FatBinary& binary) {
  const SourceLayout& layout = binary.layout();
  const bool set = binary.file_count() > 1;
  out.begin_object();
  out.field("file", path);
  out.field("kind", to_string(layout.kind));
  out.begin_object("region");
  out.field("offset", layout.region_offset);
  out.field("size", layout.region_size);
  out.field("located_by", layout.wrapper_offsets.empty() ? "walk" : "wrappers");
  out.end_object();
  out.text_field("bundle_count", count_of(binary.bundles().size(), "bundle"));
  if (set) {
    out.text_field("file_count", binary.file_count());
    out.text("{file}: file set of {file_count} files, {bundle_count}\n");
  } else if (const detail::kpack::Archive* archive = binary.kpack_key(0).archive.get()) {
    write_kpack_facts(out, *archive);
    out.text("{file}: {kind} ({scheme}, group {group}, targets {targets}), {bundle_count}\n");
  } else if (layout.kind != SourceKind::HostImage) {
    out.text("{file}: {kind}, {bundle_count}\n");
  } else if (layout.wrapper_offsets.empty()) {
    out.text("{file}: {kind}, {bundle_count} in .hip_fatbin at {offset:x} ({size:x} bytes), walked\n");
  } else {
    out.text("{file}: {kind}, {bundle_count} in .hip_fatbin at {offset:x} ({size:x} bytes), from wrappers\n");
  }
  out.begin_array("warnings");
  for (const std::string& warning : layout.warnings) {
    out.field("", warning);
    if (!set) out.text("  warning: {}\n");  // a file set's listing has its one line
  }
  out.end_array();
  out.begin_array("bundles");
}

/// A kpack key's entries: target, size, and where and how large its stored
/// bytes are (a `none` blob is the code object itself, so it gets a URI).
void write_kpack_entries(ReportPrinter& out, const std::string& path, detail::kpack::Scheme scheme,
                         const ListedBundle& bundle) {
  const bool in_place = scheme == detail::kpack::Scheme::None;
  for (std::size_t e = 0; e < bundle.kpack.size(); ++e) {
    const KpackListed& listed = bundle.kpack[e];
    out.begin_object();
    out.field("id", listed.entry->id);
    out.field("target", listed.entry->target);
    out.field("ordinal", listed.entry->ordinal);
    out.field("offset", listed.stored.offset);
    out.field("size", listed.entry->original_size);
    out.field("stored_size", listed.stored.size);
    out.field("host", false);
    if (in_place)
      out.field("uri", entry_uri(path, listed.stored.offset, listed.stored.size));
    else
      out.null("uri");
    out.text_field("entry", e);
    out.text(in_place
                 ? "  entry {entry}: {id:48} ordinal {ordinal} size {size:x} at {offset:x}  {uri}\n"
                 : "  entry {entry}: {id:48} ordinal {ordinal} size {size:x}, zstd {stored_size:x} at {offset:x}\n");
    out.end_object();
  }
}

void write_bundle(ReportPrinter& out, const std::string& path, const FatBinary& binary, std::size_t i,
                  const Expected<ListedBundle>& bundle) {
  const BundleInfo& info = binary.bundles()[i];
  out.begin_object();
  out.field("index", i);
  out.field("offset", info.offset);
  out.field("size", info.size);
  out.field("format", to_string(info.format));
  if (info.compressed)
    out.field("version", info.compressed->version);
  else
    out.null("version");
  Compression compression = info.compressed ? info.compressed->method : Compression::None;
  if (const detail::kpack::Archive* archive = binary.kpack_key(i).archive.get();
      archive && archive->scheme() == detail::kpack::Scheme::ZstdPerKernel) {
    compression = Compression::Zstd;
  }
  out.field("compression", to_string(compression));
  if (info.compressed) {
    out.field("uncompressed_size", info.compressed->uncompressed_size);
    out.field("hash", hex(info.compressed->hash));
    out.text(
        "bundle {index}: offset {offset:x} size {size:x} {format} v{version} {compression}, uncompressed "
        "{uncompressed_size:x}, hash {hash}\n");
  } else if (info.format == BundleFormat::Kpack) {
    const auto [archive, key] = binary.kpack_key(i);
    const detail::kpack::Binary& listed_key = archive->binaries()[key];
    const detail::kpack::Entry& first = archive->entries()[listed_key.first];
    out.field("key", listed_key.key);
    out.field("binary", listed_key.count ? first.binary : listed_key.key);
    if (listed_key.count && first.index)
      out.field("code_object_index", *first.index);
    else
      out.null("code_object_index");
    out.text("bundle {index}: {key} (binary {binary}, code object {code_object_index}) {format}\n");
  } else {
    out.text("bundle {index}: offset {offset:x} size {size:x} {format}\n");
  }
  if (bundle) {
    out.null("error");
  } else {
    out.field("error", bundle.error().message());
    out.text("  error: {error}\n");
  }
  out.begin_array("entries");
  if (bundle && info.format == BundleFormat::Kpack) {
    write_kpack_entries(out, path, binary.kpack_key(i).archive->scheme(), *bundle);
  } else if (bundle) {
    const bool plain = info.format != BundleFormat::Compressed;
    for_each_entry(*bundle,
                   [&](std::size_t e, std::string_view id, std::uint64_t offset, std::uint64_t size, bool is_host) {
                     out.begin_object();
                     if (binary.file_count() > 1)
                       out.field("file", binary.file(i, e));  // a file set's; a one-file listing keeps its shape
                     out.field("id", id);
                     out.field("offset", offset);
                     out.field("size", size);
                     out.field("host", is_host);
                     if (plain)
                       out.field("uri", entry_uri(entry_file(path, binary, i, e), info.offset + offset, size));
                     else
                       out.null("uri");  // a compressed entry has no range in the file
                     out.text_field("entry", e);
                     out.text(plain && size > 0 ? "  entry {entry}: {id:48} offset {offset:x} size {size:x}  {uri}\n"
                                                : "  entry {entry}: {id:48} offset {offset:x} size {size:x}\n");
                     out.end_object();
                   });
  }
  out.end_array();
  out.end_object();
}

void write_footer(ReportPrinter& out) {
  out.end_array();
  out.end_object();
}

/// ls: each FILE's listing, written as its bundles are taken.
int run_ls(CommandContext& context) {
  ReportPrinter& out = *context.report;
  const ReadOptions& options = context.stream.read;  // the decompression cap and verified marks
  const std::vector<std::string>& files = context.operands;
  int status = kExitOk;
  std::error_code not_a_directory;
  if (files.size() > 1) out.begin_array();
  for (const std::string& path : files) {
    // A directory is one binary, a file set; several FILEs stay one listing each.
    Expected<FatBinary> binary = Error(ErrorKind::Io, "not opened");
    if (std::filesystem::is_directory(path, not_a_directory)) {
      binary = open_operands(std::span(&path, 1), context.arguments, options);
    } else {
      binary = FatBinary::open(path, options);
    }
    if (!binary) {
      std::fprintf(stderr, "coload: %s\n", binary.error().message().c_str());
      status = kExitInputError;
      continue;
    }
    write_header(out, path, *binary);
    KeptBytes budget = command_budget(options.max_decompressed_bytes);
    std::vector<std::size_t> indices(binary->bundles().size());
    std::iota(indices.begin(), indices.end(), std::size_t{0});
    auto list = [&](std::size_t index) -> Expected<ListedBundle> {
      try {
        return list_bundle(*binary, index, options);
      } catch (const std::exception& exception) {
        return bundle_failure(index, exception).in_file(path);
      }
    };
    auto take = [&](std::size_t index, Expected<ListedBundle>& listed) {
      if (!listed) {
        std::fprintf(stderr, "coload: %s\n", listed.error().message().c_str());
        status = kExitInputError;
      }
      // The JSON document is kept whole: what it keeps of the CCOBs' tables counts.
      if (context.json && listed) {
        if (auto charged = budget.charge(heads_bytes(listed->streamed), "its table"); !charged) {
          print_error(std::move(charged).error().in_bundle(index).in_file(path));
          status = kExitInputError;
          return false;
        }
      }
      write_bundle(out, path, *binary, index, listed);
      return true;
    };
    std::vector<std::optional<Expected<ListedBundle>>> listed(indices.size());
    for_each_in_order(
        indices.size(), decode_threads(*binary, indices, Unbundler::Builtin),
        [&](std::size_t slot) { listed[slot].emplace(list(indices[slot])); },
        [&](std::size_t slot) {
          bool going = take(indices[slot], *listed[slot]);
          listed[slot].reset();
          return going;
        });
    write_footer(out);
  }
  if (files.size() > 1) out.end_array();
  out.finish();
  return status;
}

/// Unlike the other commands, ls reads the environment first: its error wins over the command line's.
std::optional<int> check_ls_usage(CommandContext& context) {
  if (context.operands.empty()) return usage_error("ls: no FILE given");
  return std::nullopt;
}

}  // namespace

const Command kLs{.spec = &kLsCommand, .environment_first = true, .check_usage = check_ls_usage, .run = run_ls};

}  // namespace coload::cli
