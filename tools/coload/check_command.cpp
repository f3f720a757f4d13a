// coload check: read a code object (a bare one, or the entry a selection picks
// from each bundle of a fat binary) and report its kernels, its problems and,
// for a device, its violations.
#include <cstdio>
#include <new>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "coload/code_object.h"
#include "coload/config.h"
#include "coload/fat_binary.h"
#include "coload/select.h"
#include "coload/validate.h"
#include "command_context.h"
#include "commands.h"
#include "kpack_audit.h"

namespace coload::cli {
namespace {

/// One code object checked, or why there was none to check.
struct Checked {
  std::optional<std::size_t> bundle;  ///< unset for a bare code object
  std::optional<std::size_t> entry_index;
  std::string id;
  std::optional<Tier> tier;
  std::string error;  ///< the bundle, the selection or the reader failed
  std::string file;   ///< a file set's: the file the code object came from
  std::optional<CodeObject> code_object;
  std::vector<Violation> violations;

  bool ok() const { return error.empty() && code_object && code_object->problems().empty() && violations.empty(); }
};

void check_bytes(Checked& checked, std::span<const std::byte> bytes, const Device* device) {
  std::optional<Expected<CodeObject>> read;
  try {
    read.emplace(CodeObject::read(bytes));
  } catch (const std::bad_alloc&) {
    checked.error = "out of memory while reading the code object (" + std::to_string(bytes.size()) + " bytes)";
    return;
  }
  Expected<CodeObject>& code_object = *read;
  if (!code_object) {
    checked.error = code_object.error().message();
    return;
  }
  if (device) {
    checked.violations = validate(*code_object, *device);
    // A hotswap source is for another processor by design; what gets loaded
    // is its transpiled form, which the hotswap stage checks.
    if (checked.tier == Tier::Hotswap) {
      std::erase_if(checked.violations, [](const Violation& v) { return v.field == "target"; });
    }
  }
  checked.code_object = std::move(*code_object);
}

void write_kernel(ReportPrinter& out, const Kernel& kernel) {
  out.begin_object();
  out.field("name", kernel.name);
  out.field("symbol", kernel.symbol);
  out.field("kernarg_size", kernel.kernarg_segment_size);
  out.field("kernarg_align", kernel.kernarg_segment_align);
  out.field("explicit_size", kernel.layout.explicit_size);
  out.field("hidden_offset", kernel.layout.hidden_offset);
  out.field("group_segment_size", kernel.group_segment_fixed_size);
  out.field("private_segment_size", kernel.private_segment_fixed_size);
  out.field("wavefront_size", kernel.wavefront_size);
  out.field("vgpr_count", kernel.vgpr_count);
  out.field("sgpr_count", kernel.sgpr_count);
  out.field("agpr_count", kernel.agpr_count);  // "-" in text
  out.field("max_flat_workgroup_size", kernel.max_flat_workgroup_size);
  out.field("args", kernel.args.size());
  out.text(
      "  kernel {name}: kernarg {kernarg_size} (explicit {explicit_size}), LDS {group_segment_size}, private "
      "{private_segment_size}, wave{wavefront_size}, VGPR {vgpr_count}, SGPR {sgpr_count}, AGPR {agpr_count}\n");
  out.end_object();
}

void write_code_object(ReportPrinter& out, const CodeObject& code_object) {
  out.begin_object("code_object");
  out.field("target", code_object.target().target.str());
  out.field("version", code_object.target().code_object_version);
  out.field("generic_version", code_object.target().generic_version);
  out.text(": code object v{version}, target {target}\n");
  out.begin_array("kernels");
  for (const Kernel& kernel : code_object.kernels()) write_kernel(out, kernel);
  out.end_array();
  out.begin_array("problems");
  for (const Problem& problem : code_object.problems()) {
    out.begin_object();
    out.field("kind", to_string(problem.kind));
    out.field("kernel", problem.kernel);
    out.field("field", problem.field);
    out.field("message", problem.message);
    out.text("  problem: {message}\n");
    out.end_object();
  }
  out.end_array();
  out.end_object();
}

void write_checked(ReportPrinter& out, const Checked& checked) {
  out.begin_object();
  out.field("bundle", checked.bundle);
  out.field("entry_index", checked.entry_index);
  out.field("id", checked.id);
  if (!checked.file.empty()) out.field("file", checked.file);  // a file set's; a one-file document keeps its shape
  if (checked.tier)
    out.field("tier", to_string(*checked.tier));
  else
    out.null("tier");
  out.field("ok", checked.ok());
  if (checked.bundle) {
    out.text("bundle {bundle}");
    if (checked.entry_index) out.text(" entry {entry_index} {id} ({tier})");
    if (!checked.file.empty()) out.text(" from {file}");
  } else {
    out.text(checked.id.empty() ? "code object" : "{id}");  // unread: no ID to show
  }
  if (checked.error.empty()) {
    out.null("error");
  } else {
    out.field("error", checked.error);
    out.text(": error: {error}\n");
  }
  if (checked.code_object)
    write_code_object(out, *checked.code_object);
  else
    out.null("code_object");
  out.begin_array("violations");
  for (const Violation& violation : checked.violations) {
    out.begin_object();
    out.field("kind", to_string(violation.kind));
    out.field("kernel", violation.kernel);
    out.field("field", violation.field);
    out.field("value", violation.value);
    out.field("limit", violation.limit);
    out.field("message", violation.message);
    out.text("  violation: {message}\n");
    out.end_object();
  }
  out.end_array();
  out.end_object();
}

void write_report(ReportPrinter& out, const FatBinary& binary, const Device* device,
                  const std::vector<Checked>& results, bool ok) {
  const bool set = binary.file_count() > 1;
  out.begin_object();
  out.field("file", binary.name());
  out.field("kind", set ? "file_set" : to_string(binary.layout().kind));
  if (device)
    out.field("device", device->str());
  else
    out.null("device");
  out.field("ok", ok);
  if (set) {
    out.text_field("file_count", binary.file_count());
    out.text("{file}: file set of {file_count} files");
  } else {
    out.text("{file}: {kind}");
  }
  out.text(device ? ", device {device}\n" : "\n");
  out.begin_array("code_objects");
  for (const Checked& checked : results) write_checked(out, checked);
  out.end_array();
  out.end_object();
  out.finish();
}

/// check: every code object checked, written once all are.
int run_check(CommandContext& context) {
  const StreamOptions& stream_options = context.stream;
  const Device* device = context.device ? &*context.device : nullptr;
  // As `select` chooses: checked before anything is read.
  if (device && !context.select_options()) return kExitInputError;

  // An install tree with kpack archives is audited rather than read as a file set.
  if (context.operands.size() == 1 && is_kpack_tree(context.operands.front())) {
    return run_kpack_audit(context, context.operands.front());
  }
  auto binary = open_operands(context.operands, context.arguments, stream_options.read);
  if (!binary) {
    std::fprintf(stderr, "coload: %s\n", binary.error().message().c_str());
    return kExitInputError;
  }
  const std::string& path = binary->name();
  const bool set = binary->file_count() > 1;
  bool bare = !set && binary->layout().kind == SourceKind::CodeObject;
  if (!bare && !device) {
    return usage_error("check: " + path + " is a fat binary: --device SPEC is required to select its code objects");
  }
  std::vector<Checked> results;
  if (bare) {
    for (std::size_t i = 0; i < binary->bundles().size(); ++i) {
      // A bare code object reads as a bundle of one entry: check it as it is.
      Checked& checked = results.emplace_back();
      auto bundle = binary->read(i);
      if (!bundle) {
        checked.error = bundle.error().message();
        continue;
      }
      if (bundle->entries().size() != 1) {
        checked.error = "a bare code object read as " + std::to_string(bundle->entries().size()) + " entries";
        continue;
      }
      checked.id = std::string(bundle->entries()[0].id);
      check_bytes(checked, bundle->entries()[0].bytes, device);
    }
  } else {
    KeptBytes budget = command_budget(stream_options.read.max_decompressed_bytes);
    bool over_budget = false;
    auto take = [&](std::size_t i, Expected<BundleChoice>& choice) {
      // A code object read keeps its metadata; counted as its entry's size.
      if (choice && choice->compressed()) {
        auto charged = budget.charge(selection_bytes(choice->selection) + choice->chosen_bytes().size(),
                                     "its report and chosen entry");
        if (!charged) {
          print_error(binary->at_bundle(std::move(charged).error(), i));
          over_budget = true;
          return false;
        }
      }
      Checked& checked = results.emplace_back();
      checked.bundle = i;
      if (set) checked.file = choice ? choice->file : binary->file(i);
      if (!choice) {
        checked.error = choice.error().message();
        return true;
      }
      const Candidate* chosen = choice->selection.chosen();
      if (!chosen) {
        checked.error = no_fit_message(*binary, i, *device, choice->selection);
        return true;
      }
      checked.entry_index = chosen->entry_index;
      checked.id = chosen->id;
      checked.tier = chosen->tier;
      check_bytes(checked, choice->chosen_bytes(), device);
      return true;
    };
    std::vector<std::size_t> every(binary->bundles().size());
    std::iota(every.begin(), every.end(), std::size_t{0});
    choose_in_binary(*binary, every, *device, {.select = *context.select_options(), .stream = stream_options}, take);
    if (over_budget) return kExitInputError;
  }

  bool ok = !results.empty();
  for (const Checked& checked : results) ok = ok && checked.ok();
  // Written once every result is in: "ok" comes first, and a check that
  // stops short (the budget) prints nothing.
  write_report(*context.report, *binary, device, results, ok);
  return ok ? kExitOk : kExitInputError;
}

std::optional<int> check_check_usage(CommandContext& context) {
  if (context.operands.empty()) return usage_error("check: a FILE or DIRECTORY is required");
  if (context.device_options.overridden && context.device_options.spec.empty()) {
    return usage_error("check: --lds, --co-versions and --extended-isa-compat describe a device: give --device");
  }
  return std::nullopt;
}

}  // namespace

const Command kCheck{.spec = &kCheckCommand, .builds_device = true, .check_usage = check_check_usage, .run = run_check};

}  // namespace coload::cli
