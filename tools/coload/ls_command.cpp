// coload ls: every bundle and entry of each input, as text or JSON. Only
// the tables are kept: a host image's CCOBs are streamed, on one thread per
// core, and none is held whole.
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "coload/config.h"
#include "coload/detail/ordered_pool.h"
#include "coload/fat_binary.h"
#include "coload/pipeline.h"
#include "coload/stream_select.h"
#include "commands.h"
#include "json_writer.h"

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

/// A bundle's table as the listing shows it: a plain bundle read in place
/// (its entries view the mapped file), or a CCOB's table, streamed.
struct ListedBundle {
  std::optional<Bundle> plain;
  std::vector<EntryHead> streamed;
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
}

struct Listing {
  std::string path;
  std::optional<FatBinary> binary;
  std::vector<Expected<ListedBundle>> bundles;
};

/// Bundle `index`'s table. A CCOB is streamed and nothing of it kept: its
/// hash is checked over the whole stream, or, with a mark, decoding stops
/// once the table is complete.
Expected<ListedBundle> list_bundle(const FatBinary& binary, std::size_t index, const ReadOptions& read) {
  const BundleInfo& info = binary.bundles()[index];
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

void print_header(const std::string& path, const FatBinary& binary) {
  const SourceLayout& layout = binary.layout();
  if (binary.file_count() > 1) {
    std::printf("%s: file set of %zu files, %zu bundle%s\n", path.c_str(), binary.file_count(), binary.bundles().size(),
                binary.bundles().size() == 1 ? "" : "s");
    return;
  }
  std::printf("%s: %s, %zu bundle%s", path.c_str(), std::string(to_string(layout.kind)).c_str(),
              binary.bundles().size(), binary.bundles().size() == 1 ? "" : "s");
  if (layout.kind == SourceKind::HostImage) {
    std::printf(" in .hip_fatbin at %s (%s bytes)%s", hex(layout.region_offset).c_str(),
                hex(layout.region_size).c_str(), layout.wrapper_offsets.empty() ? ", walked" : ", from wrappers");
  }
  std::printf("\n");
  for (const std::string& warning : layout.warnings) std::printf("  warning: %s\n", warning.c_str());
}

void print_bundle(const std::string& path, const FatBinary& binary, std::size_t i,
                  const Expected<ListedBundle>& bundle) {
  const BundleInfo& info = binary.bundles()[i];
  std::printf("bundle %zu: offset %s size %s %s", i, hex(info.offset).c_str(), hex(info.size).c_str(),
              std::string(to_string(info.format)).c_str());
  if (info.compressed) {
    std::printf(" v%u %s, uncompressed %s, hash %s", info.compressed->version,
                std::string(to_string(info.compressed->method)).c_str(),
                hex(info.compressed->uncompressed_size).c_str(), hex(info.compressed->hash).c_str());
  }
  std::printf("\n");
  if (!bundle) {
    std::printf("  error: %s\n", bundle.error().message().c_str());
    return;
  }
  for_each_entry(*bundle, [&](std::size_t e, std::string_view id, std::uint64_t offset, std::uint64_t size, bool) {
    std::printf("  entry %zu: %-48.*s offset %s size %s", e, static_cast<int>(id.size()), id.data(),
                hex(offset).c_str(), hex(size).c_str());
    if (info.format != BundleFormat::Compressed && size > 0) {
      std::printf("  %s", entry_uri(entry_file(path, binary, i, e), info.offset + offset, size).c_str());
    }
    std::printf("\n");
  });
}

void write_json(JsonWriter& json, const Listing& listing) {
  const FatBinary& binary = *listing.binary;
  const SourceLayout& layout = binary.layout();
  json.begin_object();
  json.key("file");
  json.value(listing.path);
  json.key("kind");
  json.value(to_string(layout.kind));
  json.key("region");
  json.begin_object();
  json.key("offset");
  json.value(layout.region_offset);
  json.key("size");
  json.value(layout.region_size);
  json.key("located_by");
  json.value(layout.wrapper_offsets.empty() ? "walk" : "wrappers");
  json.end_object();
  json.key("warnings");
  json.begin_array();
  for (const std::string& warning : layout.warnings) json.value(warning);
  json.end_array();
  json.key("bundles");
  json.begin_array();
  for (std::size_t i = 0; i < listing.bundles.size(); ++i) {
    const BundleInfo& info = binary.bundles()[i];
    json.begin_object();
    json.key("index");
    json.value(static_cast<std::uint64_t>(i));
    json.key("offset");
    json.value(info.offset);
    json.key("size");
    json.value(info.size);
    json.key("format");
    json.value(to_string(info.format));
    json.key("version");
    if (info.compressed)
      json.value(static_cast<std::uint64_t>(info.compressed->version));
    else
      json.null();
    json.key("compression");
    json.value(to_string(info.compressed ? info.compressed->method : Compression::None));
    if (info.compressed) {
      json.key("uncompressed_size");
      json.value(info.compressed->uncompressed_size);
      json.key("hash");
      json.value(hex(info.compressed->hash));
    }
    const auto& bundle = listing.bundles[i];
    json.key("error");
    if (bundle)
      json.null();
    else
      json.value(bundle.error().message());
    json.key("entries");
    json.begin_array();
    if (bundle) {
      for_each_entry(*bundle,
                     [&](std::size_t e, std::string_view id, std::uint64_t offset, std::uint64_t size, bool is_host) {
                       json.begin_object();
                       if (binary.file_count() > 1) {  // a file set's; a one-file listing keeps its shape
                         json.key("file");
                         json.value(binary.file(i, e));
                       }
                       json.key("id");
                       json.value(id);
                       json.key("offset");
                       json.value(offset);
                       json.key("size");
                       json.value(size);
                       json.key("host");
                       json.value(is_host);
                       json.key("uri");
                       if (info.format != BundleFormat::Compressed) {
                         json.value(entry_uri(entry_file(listing.path, binary, i, e), info.offset + offset, size));
                       } else {
                         json.null();
                       }
                       json.end_object();
                     });
    }
    json.end_array();
    json.end_object();
  }
  json.end_array();
  json.end_object();
}

}  // namespace

int run_ls(std::span<const std::string> args) {
  Expected<Arguments> parsed = parse_arguments(kLsCommand, args);
  if (parsed && parsed->help) return *stop_after_parse(kLsCommand, parsed);
  // Unlike the other commands, ls reads the environment first: its error wins over the command line's.
  const Expected<Config>& config = process_config();
  if (!config) return usage_error("environment: " + config.error().message());
  if (std::optional<int> exit = stop_after_parse(kLsCommand, parsed)) return *exit;
  bool as_json = parsed->given(kJson);
  ReadOptions options = config->read_options();  // the decompression cap and verified marks
  if (auto limit = parsed->number(kMaxDecompressedBytes)) options.max_decompressed_bytes = *limit;
  std::vector<std::string> files = std::move(parsed->operands);
  if (files.empty()) return usage_error("ls: no FILE given");

  int status = kExitOk;
  std::vector<Listing> listings;
  std::error_code not_a_directory;
  for (const std::string& path : files) {
    // A directory is one binary, a file set; several FILEs stay one listing each.
    Expected<FatBinary> binary = Error(ErrorKind::Io, "not opened");
    if (std::filesystem::is_directory(path, not_a_directory)) {
      binary = open_operands(std::span(&path, 1), *parsed, options);
    } else {
      binary = FatBinary::open(path, options);
    }
    if (!binary) {
      std::fprintf(stderr, "coload: %s\n", binary.error().message().c_str());
      status = kExitInputError;
      continue;
    }
    Listing listing{path, std::move(*binary), {}};
    // Text is printed as each bundle is taken; only the JSON document keeps them all.
    if (!as_json) print_header(path, *listing.binary);
    KeptBytes budget = command_budget(options.max_decompressed_bytes);
    std::vector<std::size_t> indices(listing.binary->bundles().size());
    std::iota(indices.begin(), indices.end(), std::size_t{0});
    auto list = [&](std::size_t index) -> Expected<ListedBundle> {
      try {
        return list_bundle(*listing.binary, index, options);
      } catch (const std::exception& exception) {
        return bundle_failure(index, exception).in_file(path);
      }
    };
    auto take = [&](std::size_t index, Expected<ListedBundle>& listed) {
      if (!listed) {
        std::fprintf(stderr, "coload: %s\n", listed.error().message().c_str());
        status = kExitInputError;
      }
      if (!as_json) {
        print_bundle(path, *listing.binary, index, listed);
        return true;
      }
      if (listed) {
        if (auto charged = budget.charge(heads_bytes(listed->streamed), "its table"); !charged) {
          print_error(std::move(charged).error().in_bundle(index).in_file(path));
          status = kExitInputError;
          return false;
        }
      }
      listing.bundles.push_back(std::move(listed));
      return true;
    };
    std::vector<std::optional<Expected<ListedBundle>>> listed(indices.size());
    for_each_in_order(
        indices.size(), decode_threads(*listing.binary, indices, Unbundler::Builtin),
        [&](std::size_t slot) { listed[slot].emplace(list(indices[slot])); },
        [&](std::size_t slot) {
          bool going = take(indices[slot], *listed[slot]);
          listed[slot].reset();
          return going;
        });
    if (as_json) listings.push_back(std::move(listing));
  }

  if (as_json) {
    JsonWriter json;
    if (files.size() > 1) json.begin_array();
    for (const Listing& listing : listings) write_json(json, listing);
    if (files.size() > 1) json.end_array();
    if (!json.text().empty()) std::printf("%s\n", json.text().c_str());
  }
  return status;
}

}  // namespace coload::cli
