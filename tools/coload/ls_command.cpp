// coload ls: every bundle and entry of each input, as text or JSON, each
// bundle written as it is taken. Only the tables are read: a host image's
// CCOBs are streamed, on one thread per core, and none is held whole.
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "coload/config.h"
#include "coload/detail/ordered_pool.h"
#include "coload/detail/stream_select.h"
#include "coload/fat_binary.h"
#include "coload/pipeline.h"
#include "command_context.h"
#include "commands.h"
#include "ls_kpack.h"

namespace coload::cli {

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

namespace {

std::string hex(std::uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

/// A bundle's table as the listing shows it: a plain bundle read in place
/// (its entries view the mapped file), a CCOB's table, streamed, or a kpack
/// bundle's entries from the TOC.
struct ListedBundle {
  std::optional<Bundle> plain;
  std::vector<EntryHead> streamed;
  KpackListing kpack;
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
  for (const KpackListed& listed : bundle.kpack.entries) {
    fn(index++, std::string_view(listed.member->toc().id), listed.stored.offset, listed.member->toc().original_size,
       false);
  }
}

/// Bundle `index`'s table. A CCOB is streamed and nothing of it kept: its
/// hash is checked over the whole stream, or, with a mark, decoding stops
/// once the table is complete.
Expected<ListedBundle> list_bundle(const FatBinary& binary, std::size_t index, const ReadOptions& read) {
  const BundleInfo& info = binary.bundles()[index];
  ListedBundle listed;
  if (info.format == BundleFormat::Kpack) {
    auto kpack = list_kpack_bundle(binary, index);
    if (!kpack) return std::move(kpack).error();
    listed.kpack = std::move(*kpack);
    return listed;
  }
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

/// The file's facts, before its bundles: the text's first line and warnings.
void write_header(ReportPrinter& out, const std::string& path, const FatBinary& binary, const ReadOptions& options) {
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
  } else if (write_kpack_header(out, binary, options)) {
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
  out.field("compression", to_string(info.compressed                      ? info.compressed->method
                                     : info.format == BundleFormat::Kpack ? kpack_compression(binary, i)
                                                                          : Compression::None));
  if (info.compressed) {
    out.field("uncompressed_size", info.compressed->uncompressed_size);
    out.field("hash", hex(info.compressed->hash));
    out.text(
        "bundle {index}: offset {offset:x} size {size:x} {format} v{version} {compression}, uncompressed "
        "{uncompressed_size:x}, hash {hash}\n");
  } else if (info.format == BundleFormat::Kpack) {
    write_kpack_bundle_line(out, binary, i);
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
    write_kpack_entries(out, bundle->kpack);
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
    write_header(out, path, *binary, options);
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
