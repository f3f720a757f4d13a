// coload select: for a device, the entry each bundle would load and why.
#include <algorithm>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "coload/config.h"
#include "coload/detail/stream_select.h"
#include "coload/fat_binary.h"
#include "coload/select.h"
#include "command_context.h"
#include "commands.h"
#include "output_file.h"

namespace coload::cli {
namespace {

/// A bundle's choice, kept for -o.
struct BundleResult {
  std::size_t index = 0;
  std::optional<BundleChoice> choice;
};

/// Bundle `index`'s selection: its choice (null when the bundle could not
/// be read) and why nothing was selected, if so. A file set's bundles name
/// their files (a one-file binary's name none).
void write_bundle(ReportPrinter& out, std::size_t index, const BundleChoice* choice, std::string_view error,
                  const FatBinary& binary) {
  const bool set = binary.file_count() > 1;
  out.begin_object();
  out.field("index", index);
  if (set) out.field("file", choice ? choice->file : binary.file(index));  // a one-file document keeps its shape
  const Candidate* chosen = choice ? choice->selection.chosen() : nullptr;
  if (chosen) {
    out.begin_object("selected");
    out.field("id", chosen->id);
    out.field("tier", to_string(*chosen->tier));
    out.field("entry_index", chosen->entry_index);
    out.end_object();
    out.null("error");
    out.text(set ? "bundle {index}: selected {id} ({tier}) from {file}\n" : "bundle {index}: selected {id} ({tier})\n");
  } else {
    out.null("selected");
    out.field("error", error);
    out.text("bundle {index}: nothing selected: {error}\n");
  }
  out.begin_array("candidates");
  if (choice) {
    // A file set's group: each entry is a file, which the text names.
    const bool group = set && choice->plain() && choice->plain()->bundle.info().format == BundleFormat::FileGroup;
    for (const Candidate& candidate : choice->selection.candidates) {
      out.begin_object();
      out.field("id", candidate.id);
      if (candidate.tier)
        out.field("tier", to_string(*candidate.tier));
      else
        out.null("tier");
      out.field("verdict", to_string(candidate.verdict));
      out.field("reason", candidate.reason);
      out.field("needs_jit", candidate.needs_jit);
      if (candidate.code_object) {
        out.begin_object("code_object");
        out.field("target", candidate.code_object->target.str());
        out.field("version", candidate.code_object->code_object_version);
        out.field("generic_version", candidate.code_object->generic_version);
        out.end_object();
      } else {
        out.null("code_object");
      }
      out.text_field("entry", candidate.entry_index);
      if (group) {
        out.text_field("entry_file", binary.file(index, candidate.entry_index));
        out.text("  [{entry}] {verdict:10} {tier:10} {id} in {entry_file}: {reason}\n");
      } else {
        out.text("  [{entry}] {verdict:10} {tier:10} {id}: {reason}\n");
      }
      out.end_object();
    }
  }
  out.end_array();
  out.end_object();
}

/// select: the entry each bundle would load, written as the bundles are
/// judged; with -o, the chosen code objects.
int run_select(CommandContext& context) {
  const std::string output = context.arguments.text(kOutput);
  const Device& device = *context.device;
  StreamOptions stream_options = context.stream;
  stream_options.keep_chosen = !output.empty();  // the report needs no bytes; -o does
  const ReadOptions& read_options = stream_options.read;
  const std::optional<SelectOptions>& select_options = context.select_options();
  if (!select_options) return kExitInputError;

  auto binary = open_operands(context.operands, context.arguments, read_options);
  if (!binary) {
    std::fprintf(stderr, "coload: %s\n", binary.error().message().c_str());
    return kExitInputError;
  }
  ReportPrinter& out = *context.report;
  out.begin_object();
  out.field("device", device.str());
  out.field("unbundler", to_string(select_options->unbundler));
  out.text("device {device}\n");
  out.begin_array("bundles");
  // Choices are kept only for -o (and counted while the JSON document is kept whole).
  std::vector<BundleResult> results;
  bool keep = context.json || !output.empty();
  bool all_selected = true;
  bool over_budget = false;
  KeptBytes budget = command_budget(read_options.max_decompressed_bytes);
  std::vector<std::size_t> every(binary->bundles().size());
  std::iota(every.begin(), every.end(), std::size_t{0});
  auto take = [&](std::size_t i, Expected<BundleChoice>& choice) {
    std::string error;
    if (!choice) {
      error = choice.error().message();
    } else if (!choice->selection.chosen()) {
      error = no_fit_message(*binary, i, device, choice->selection);
    }
    all_selected = all_selected && error.empty();
    // Written before the charge: the text keeps the bundle that went over.
    write_bundle(out, i, choice ? &*choice : nullptr, error, *binary);
    if (const StreamedChoice* streamed = keep && choice ? choice->streamed() : nullptr) {
      auto charged =
          budget.charge(selection_bytes(choice->selection) + streamed->chosen.size(), "its report and chosen entry");
      if (!charged) {
        print_error(binary->at_bundle(std::move(charged).error(), i));
        over_budget = true;
        return false;
      }
    }
    // Left in place otherwise: choose_in_binary reuses its storage.
    if (!output.empty() && choice && choice->selection.chosen()) {
      results.push_back({.index = i, .choice = std::move(*choice)});
    }
    return true;
  };
  choose_in_binary(*binary, every, device, {.select = *select_options, .stream = stream_options}, take);
  if (over_budget) {
    out.end_early();  // the text judged before the limit stays
    return kExitInputError;
  }
  out.end_array();
  out.end_object();
  out.finish();

  for (const BundleResult& result : results) {
    std::span<const std::byte> bytes = result.choice->chosen_bytes();
    std::string name = results.size() == 1 ? output : output + "." + std::to_string(result.index);
    if (!write_file(name, bytes)) return kExitInputError;
    out.text_field("wrote", name);
    out.text("wrote {wrote}\n");
  }
  return all_selected ? kExitOk : kExitInputError;
}

std::optional<int> check_select_usage(CommandContext& context) {
  if (context.device_options.spec.empty()) {
    return usage_error("select: --device SPEC is required (e.g. gfx90a:sramecc+:xnack-)");
  }
  if (context.operands.empty()) return usage_error("select: a FILE or DIRECTORY is required");
  return std::nullopt;
}

}  // namespace

const Command kSelect{
    .spec = &kSelectCommand, .builds_device = true, .check_usage = check_select_usage, .run = run_select};

}  // namespace coload::cli
