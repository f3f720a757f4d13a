// coload ls: every bundle and entry of each input, as text or JSON.
#include <cstdio>
#include <string>
#include <vector>

#include "coload/config.h"
#include "coload/fat_binary.h"
#include "commands.h"
#include "json_writer.h"

namespace coload::cli {
namespace {

std::string hex(std::uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

/// roc-obj-ls style URI of an entry that lies in the file as is.
std::string entry_uri(const std::string& path, std::uint64_t offset, std::uint64_t size) {
  return "file://" + path + "#offset=" + std::to_string(offset) + "&size=" + std::to_string(size);
}

struct Listing {
  std::string path;
  std::optional<FatBinary> binary;
  std::vector<Expected<Bundle>> bundles;
};

void print_text(const Listing& listing) {
  const FatBinary& binary = *listing.binary;
  const SourceLayout& layout = binary.layout();
  std::printf("%s: %s, %zu bundle%s", listing.path.c_str(), std::string(to_string(layout.kind)).c_str(),
              binary.bundles().size(), binary.bundles().size() == 1 ? "" : "s");
  if (layout.kind == SourceKind::HostImage) {
    std::printf(" in .hip_fatbin at %s (%s bytes)%s", hex(layout.region_offset).c_str(),
                hex(layout.region_size).c_str(), layout.wrapper_offsets.empty() ? ", walked" : ", from wrappers");
  }
  std::printf("\n");
  for (const std::string& warning : layout.warnings) std::printf("  warning: %s\n", warning.c_str());
  for (std::size_t i = 0; i < listing.bundles.size(); ++i) {
    const BundleInfo& info = binary.bundles()[i];
    std::printf("bundle %zu: offset %s size %s %s", i, hex(info.offset).c_str(), hex(info.size).c_str(),
                std::string(to_string(info.format)).c_str());
    if (info.compressed) {
      std::printf(" v%u %s, uncompressed %s, hash %s", info.compressed->version,
                  std::string(to_string(info.compressed->method)).c_str(),
                  hex(info.compressed->uncompressed_size).c_str(), hex(info.compressed->hash).c_str());
    }
    std::printf("\n");
    const auto& bundle = listing.bundles[i];
    if (!bundle) {
      std::printf("  error: %s\n", bundle.error().message().c_str());
      continue;
    }
    for (std::size_t e = 0; e < bundle->entries().size(); ++e) {
      const BundleEntry& entry = bundle->entries()[e];
      std::printf("  entry %zu: %-48.*s offset %s size %s", e, static_cast<int>(entry.id.size()), entry.id.data(),
                  hex(entry.offset).c_str(), hex(entry.size).c_str());
      if (info.format != BundleFormat::Compressed && entry.size > 0) {
        std::printf("  %s", entry_uri(listing.path, info.offset + entry.offset, entry.size).c_str());
      }
      std::printf("\n");
    }
  }
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
    if (info.compressed) json.value(static_cast<std::uint64_t>(info.compressed->version)); else json.null();
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
    if (bundle) json.null(); else json.value(bundle.error().message());
    json.key("entries");
    json.begin_array();
    if (bundle) {
      for (const BundleEntry& entry : bundle->entries()) {
        json.begin_object();
        json.key("id");
        json.value(entry.id);
        json.key("offset");
        json.value(entry.offset);
        json.key("size");
        json.value(entry.size);
        json.key("host");
        json.value(entry.is_host);
        json.key("uri");
        if (info.format != BundleFormat::Compressed) {
          json.value(entry_uri(listing.path, info.offset + entry.offset, entry.size));
        } else {
          json.null();
        }
        json.end_object();
      }
    }
    json.end_array();
    json.end_object();
  }
  json.end_array();
  json.end_object();
}

}  // namespace

int run_ls(std::span<const std::string> args) {
  bool as_json = false;
  const Expected<Config>& config = process_config();
  if (!config) return usage_error("environment: " + config.error().message());
  ReadOptions options = config->read_options();  // the decompression cap and verified marks
  std::vector<std::string> files;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--json") {
      as_json = true;
    } else if (args[i] == "--max-decompressed-bytes") {
      auto limit = i + 1 < args.size() ? parse_number(args[++i]) : std::nullopt;
      if (!limit) return usage_error("ls: --max-decompressed-bytes needs a number");
      options.max_decompressed_bytes = *limit;
    } else if (args[i].starts_with("-") && args[i] != "-") {
      return usage_error("ls: unknown option '" + args[i] + "'");
    } else {
      files.push_back(args[i]);
    }
  }
  if (files.empty()) return usage_error("ls: no FILE given");

  int status = kExitOk;
  std::vector<Listing> listings;
  for (const std::string& path : files) {
    auto binary = FatBinary::open(path, options);
    if (!binary) {
      std::fprintf(stderr, "coload: %s\n", binary.error().message().c_str());
      status = kExitInputError;
      continue;
    }
    Listing listing{path, std::move(*binary), {}};
    for (std::size_t i = 0; i < listing.binary->bundles().size(); ++i) {
      listing.bundles.push_back(listing.binary->read(i));
      if (!listing.bundles.back()) {
        std::fprintf(stderr, "coload: %s\n", listing.bundles.back().error().message().c_str());
        status = kExitInputError;
      }
    }
    listings.push_back(std::move(listing));
  }

  if (as_json) {
    JsonWriter json;
    if (files.size() > 1) json.begin_array();
    for (const Listing& listing : listings) write_json(json, listing);
    if (files.size() > 1) json.end_array();
    if (!json.text().empty()) std::printf("%s\n", json.text().c_str());
  } else {
    for (const Listing& listing : listings) print_text(listing);
  }
  return status;
}

}  // namespace coload::cli
