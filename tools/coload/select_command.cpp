// coload select: for a device, the entry each bundle would load and why.
#include <cstdio>
#include <string>
#include <vector>

#include "coload/config.h"
#include "coload/fat_binary.h"
#include "coload/hotswap.h"
#include "coload/select.h"
#include "coload/stream_select.h"
#include "commands.h"
#include "json_writer.h"

namespace coload::cli {
namespace {

struct BundleResult {
  std::size_t index = 0;
  std::optional<BundleChoice> choice;  ///< unset when the bundle could not be read
  std::string error;  ///< why nothing was selected (or the bundle unreadable)
};

void print_text(const Device& device, const std::vector<BundleResult>& results) {
  std::printf("device %s\n", device.str().c_str());
  for (const BundleResult& result : results) {
    const Candidate* chosen = result.choice ? result.choice->selection.chosen() : nullptr;
    if (chosen) {
      std::printf("bundle %zu: selected %s (%s)\n", result.index, chosen->id.c_str(),
                  std::string(to_string(*chosen->tier)).c_str());
    } else {
      std::printf("bundle %zu: nothing selected: %s\n", result.index, result.error.c_str());
    }
    if (!result.choice) continue;
    for (const Candidate& candidate : result.choice->selection.candidates) {
      std::string tier = candidate.tier ? std::string(to_string(*candidate.tier)) : "-";
      std::printf("  [%zu] %-10s %-10s %s: %s\n", candidate.entry_index,
                  std::string(to_string(candidate.verdict)).c_str(), tier.c_str(), candidate.id.c_str(),
                  candidate.reason.c_str());
    }
  }
}

void print_json(const Device& device, Unbundler unbundler, const std::vector<BundleResult>& results) {
  JsonWriter json;
  json.begin_object();
  json.key("device");
  json.value(device.str());
  json.key("unbundler");
  json.value(to_string(unbundler));
  json.key("bundles");
  json.begin_array();
  for (const BundleResult& result : results) {
    json.begin_object();
    json.key("index");
    json.value(std::uint64_t{result.index});
    const Candidate* chosen = result.choice ? result.choice->selection.chosen() : nullptr;
    json.key("selected");
    if (chosen) {
      json.begin_object();
      json.key("id");
      json.value(chosen->id);
      json.key("tier");
      json.value(to_string(*chosen->tier));
      json.key("entry_index");
      json.value(std::uint64_t{chosen->entry_index});
      json.end_object();
    } else {
      json.null();
    }
    json.key("error");
    if (chosen) json.null();
    else json.value(result.error);
    json.key("candidates");
    json.begin_array();
    if (result.choice) {
      for (const Candidate& candidate : result.choice->selection.candidates) {
        json.begin_object();
        json.key("id");
        json.value(candidate.id);
        json.key("tier");
        if (candidate.tier) json.value(to_string(*candidate.tier));
        else json.null();
        json.key("verdict");
        json.value(to_string(candidate.verdict));
        json.key("reason");
        json.value(candidate.reason);
        json.key("needs_jit");
        json.value(candidate.needs_jit);
        json.key("code_object");
        if (candidate.code_object) {
          json.begin_object();
          json.key("target");
          json.value(candidate.code_object->target.str());
          json.key("version");
          json.value(std::uint64_t{candidate.code_object->code_object_version});
          json.key("generic_version");
          json.value(std::uint64_t{candidate.code_object->generic_version});
          json.end_object();
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
  std::printf("%s\n", json.text().c_str());
}

}  // namespace

int run_select(std::span<const std::string> args) {
  DeviceOptions device_options;
  std::string output;
  bool json = false;
  std::optional<std::uint64_t> max_decompressed;
  std::vector<std::string> files;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    bool has_value = i + 1 < args.size();
    if (Option taken = take_device_option(args, i, "select", device_options); taken != Option::NotMine) {
      if (taken == Option::UsageError) return kExitUsage;
    } else if (arg == "--json") {
      json = true;
    } else if (arg == "-o" && has_value) {
      output = args[++i];
    } else if (arg == "--max-decompressed-bytes" && has_value) {
      auto limit = parse_number(args[++i]);
      if (!limit) return usage_error("select: --max-decompressed-bytes needs a number");
      max_decompressed = *limit;
    } else if (arg.starts_with("-")) {
      return usage_error("select: unknown option or missing value: '" + arg + "'");
    } else {
      files.push_back(arg);
    }
  }
  if (device_options.spec.empty()) {
    return usage_error("select: --device SPEC is required (e.g. gfx90a:sramecc+:xnack-)");
  }
  if (files.size() != 1) return usage_error("select: exactly one FILE is required");
  const std::string& path = files.front();

  const Expected<Config>& config = process_config();
  if (!config) return usage_error("environment: " + config.error().message());
  std::optional<Device> device = build_device(device_options, *config, "select");
  if (!device) return kExitUsage;
  StreamOptions stream_options = config->stream_options();
  if (max_decompressed) stream_options.read.max_decompressed_bytes = *max_decompressed;
  const ReadOptions& read_options = stream_options.read;
  // With hotswap on, the allowlist includes COLOAD_HOTSWAP_PLUGIN's pairs.
  SelectOptions select_options = config->select_options();
  if (config->hotswap) {
    auto registry = hotswap_registry(*config);
    if (!registry) {
      std::fprintf(stderr, "coload: hotswap: %s\n", registry.error().message().c_str());
      return kExitInputError;
    }
    select_options = config->select_options(*registry);
  }

  auto binary = FatBinary::open(path, read_options);
  if (!binary) {
    std::fprintf(stderr, "coload: %s\n", binary.error().message().c_str());
    return kExitInputError;
  }
  std::vector<BundleResult> results;
  bool all_selected = true;
  for (std::size_t i = 0; i < binary->bundles().size(); ++i) {
    BundleResult& result = results.emplace_back();
    result.index = i;
    std::string where = path + ": bundle " + std::to_string(i);
    auto choice = choose_in_bundle(*binary, i, *device, select_options, stream_options, where);
    if (!choice) {
      result.error = choice.error().message();
      all_selected = false;
      continue;
    }
    result.choice = std::move(*choice);
    if (!result.choice->selection.chosen()) {
      result.error = no_fit_error(*device, result.choice->selection).message();
      all_selected = false;
    }
  }
  if (json) print_json(*device, select_options.unbundler, results);
  else print_text(*device, results);

  if (!output.empty()) {
    std::vector<const BundleResult*> chosen;
    for (const BundleResult& result : results) {
      if (result.choice && result.choice->selection.chosen()) chosen.push_back(&result);
    }
    for (const BundleResult* result : chosen) {
      std::span<const std::byte> bytes = result->choice->chosen_bytes();
      std::string name = chosen.size() == 1 ? output : output + "." + std::to_string(result->index);
      if (!write_file(name, bytes)) return kExitInputError;
      if (!json) std::printf("wrote %s\n", name.c_str());
    }
  }
  return all_selected ? kExitOk : kExitInputError;
}

}  // namespace coload::cli
