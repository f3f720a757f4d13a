// coload select: for a device, the entry each bundle would load and why.
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "coload/config.h"
#include "coload/fat_binary.h"
#include "coload/select.h"
#include "coload/stream_select.h"
#include "commands.h"
#include "json_writer.h"

namespace coload::cli {
namespace {

struct BundleResult {
  std::size_t index = 0;
  std::optional<BundleChoice> choice;  ///< unset when the bundle could not be read
  std::string error;                   ///< why nothing was selected (or the bundle unreadable)
};

// The text report, written as the bundles are judged through a 16 KiB
// buffer: an image of 128 bundles is a report of 1 000+ lines (printf's
// formatting of each was a tenth of the command, string appends a tenth of
// what was left), and neither the report nor the bundles' results need be
// held whole (each held page is a page fault).
class TextReport {
 public:
  explicit TextReport(const Device& device) {
    put("device ");
    put(device.str());
    put("\n");
  }
  TextReport(const TextReport&) = delete;
  TextReport& operator=(const TextReport&) = delete;
  ~TextReport() { flush(); }

  /// Bundle `index`: its choice (null when it could not be read) and why
  /// nothing was selected, if so. `set`: the file set it is of, whose
  /// files the report names (a one-file binary's report names none).
  void add(std::size_t index, const BundleChoice* choice, std::string_view error, const FatBinary* set = nullptr) {
    const Candidate* chosen = choice ? choice->selection.chosen() : nullptr;
    char number[24];
    put("bundle ");
    put({number, std::to_chars(number, number + sizeof number, index).ptr});
    if (chosen) {
      put(": selected ");
      put(chosen->id);
      put(" (");
      put(to_string(*chosen->tier));
      put(")");
      if (set) {
        put(" from ");
        put(choice->file);
      }
      put("\n");
    } else {
      put(": nothing selected: ");
      put(error);
      put("\n");
    }
    if (choice) {
      for (const Candidate& candidate : choice->selection.candidates) {
        add_candidate(candidate, set && choice->bundle && choice->bundle->info().format == BundleFormat::FileGroup
                                     ? set->file(index, candidate.entry_index)
                                     : std::string_view());
      }
    }
  }

  void flush() {
    std::fwrite(buffer_.get(), 1, used_, stdout);
    used_ = 0;
  }

 private:
  static constexpr std::size_t kSize = 16 * 1024;
  static constexpr std::size_t kHeadBytes = 64;  // "  [N] verdict    tier       "

  void put(std::string_view text) {
    if (text.size() > kSize - used_) {
      flush();
      if (text.size() > kSize) {  // a reason longer than the buffer
        std::fwrite(text.data(), 1, text.size(), stdout);
        return;
      }
    }
    std::memcpy(buffer_.get() + used_, text.data(), text.size());
    used_ += text.size();
  }

  // "  [N] verdict    tier       ID: reason", the fixed-width head written
  // in place: a report line per entry of every bundle.
  void add_candidate(const Candidate& candidate, std::string_view file) {
    if (kHeadBytes > kSize - used_) flush();
    char* const head = buffer_.get() + used_;
    char* at = head;
    auto field = [&](std::string_view text, std::size_t width) {
      std::memcpy(at, text.data(), text.size());
      at += text.size();
      if (text.size() < width) at = std::fill_n(at, width - text.size(), ' ');
    };
    field("  [", 0);
    at = std::to_chars(at, head + 24, candidate.entry_index).ptr;
    field("] ", 0);
    field(to_string(candidate.verdict), 10);
    *at++ = ' ';
    field(candidate.tier ? to_string(*candidate.tier) : "-", 10);
    *at++ = ' ';
    used_ += static_cast<std::size_t>(at - head);
    put(candidate.id);
    if (!file.empty()) {  // a file set's group: the entry is that file
      put(" in ");
      put(file);
    }
    put(": ");
    put(candidate.reason);
    put("\n");
  }

  std::unique_ptr<char[]> buffer_ = std::make_unique_for_overwrite<char[]>(kSize);
  std::size_t used_ = 0;
};

void print_json(const Device& device, Unbundler unbundler, const std::vector<BundleResult>& results,
                const FatBinary& binary) {
  const bool set = binary.file_count() > 1;
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
    if (set) {  // a one-file binary's document keeps its shape
      json.key("file");
      json.value(result.choice ? result.choice->file : binary.file(result.index));
    }
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
    if (chosen)
      json.null();
    else
      json.value(result.error);
    json.key("candidates");
    json.begin_array();
    if (result.choice) {
      for (const Candidate& candidate : result.choice->selection.candidates) {
        json.begin_object();
        json.key("id");
        json.value(candidate.id);
        json.key("tier");
        if (candidate.tier)
          json.value(to_string(*candidate.tier));
        else
          json.null();
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
  Expected<Arguments> parsed = parse_arguments(kSelectCommand, args);
  if (std::optional<int> exit = stop_after_parse(kSelectCommand, parsed)) return *exit;
  DeviceOptions device_options = parsed->device_options();
  std::string output = parsed->text(kOutput);
  bool json = parsed->given(kJson);
  std::optional<std::uint64_t> max_decompressed = parsed->number(kMaxDecompressedBytes);
  std::vector<std::string> files = std::move(parsed->operands);
  if (device_options.spec.empty()) {
    return usage_error("select: --device SPEC is required (e.g. gfx90a:sramecc+:xnack-)");
  }
  if (files.empty()) return usage_error("select: a FILE or DIRECTORY is required");

  const Expected<Config>& config = process_config();
  if (!config) return usage_error("environment: " + config.error().message());
  std::optional<Device> device = build_device(device_options, *config, "select");
  if (!device) return kExitUsage;
  StreamOptions stream_options = config->stream_options();
  if (max_decompressed) stream_options.read.max_decompressed_bytes = *max_decompressed;
  stream_options.keep_chosen = !output.empty();  // the report needs no bytes; -o does
  const ReadOptions& read_options = stream_options.read;
  std::optional<SelectOptions> select_options = cli_select_options(*config);
  if (!select_options) return kExitInputError;

  auto binary = open_operands(files, *parsed, read_options);
  if (!binary) {
    std::fprintf(stderr, "coload: %s\n", binary.error().message().c_str());
    return kExitInputError;
  }
  // Results are kept only for what needs them all: the JSON document and -o.
  std::vector<BundleResult> results;
  bool keep = json || !output.empty();
  std::optional<TextReport> text;
  if (!json) text.emplace(*device);
  bool all_selected = true;
  const bool set = binary->file_count() > 1;
  bool over_budget = false;
  KeptBytes budget = command_budget(read_options.max_decompressed_bytes);
  std::vector<std::size_t> every(binary->bundles().size());
  std::iota(every.begin(), every.end(), std::size_t{0});
  auto take = [&](std::size_t i, Expected<BundleChoice>& choice) {
    std::string error;
    if (!choice) {
      error = choice.error().message();
    } else if (!choice->selection.chosen()) {
      error = no_fit_message(*binary, i, *device, choice->selection);
    }
    all_selected = all_selected && error.empty();
    if (text) text->add(i, choice ? &*choice : nullptr, error, set ? &*binary : nullptr);
    // Left in place otherwise: choose_in_binary reuses its storage.
    if (keep && choice && choice->compressed()) {
      auto charged =
          budget.charge(selection_bytes(choice->selection) + choice->streamed.size(), "its report and chosen entry");
      if (!charged) {
        print_error(binary->at_bundle(std::move(charged).error(), i));
        over_budget = true;
        return false;
      }
    }
    if (keep) {
      results.push_back(
          {.index = i, .choice = choice ? std::optional(std::move(*choice)) : std::nullopt, .error = std::move(error)});
    }
    return true;
  };
  choose_in_binary(*binary, every, *device, {.select = *select_options, .stream = stream_options}, take);
  if (over_budget) {
    if (text) text->flush();  // what was judged before the limit
    return kExitInputError;
  }
  if (json)
    print_json(*device, select_options->unbundler, results, *binary);
  else
    text->flush();

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
