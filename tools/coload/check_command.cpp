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
#include "commands.h"
#include "json_writer.h"

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

std::string agpr_text(const Kernel& kernel) { return kernel.agpr_count ? std::to_string(*kernel.agpr_count) : "-"; }

void print_text(const std::string& path, const FatBinary& binary, const Device* device,
                const std::vector<Checked>& results) {
  if (binary.file_count() > 1)
    std::printf("%s: file set of %zu files", path.c_str(), binary.file_count());
  else
    std::printf("%s: %s", path.c_str(), std::string(to_string(binary.layout().kind)).c_str());
  if (device) std::printf(", device %s", device->str().c_str());
  std::printf("\n");
  for (const Checked& checked : results) {
    if (checked.bundle) {
      std::printf("bundle %zu", *checked.bundle);
      if (checked.entry_index) {
        std::printf(" entry %zu %s (%s)", *checked.entry_index, checked.id.c_str(),
                    std::string(to_string(*checked.tier)).c_str());
      }
      if (!checked.file.empty()) std::printf(" from %s", checked.file.c_str());
    } else {
      std::printf("%s", checked.id.empty() ? "code object" : checked.id.c_str());  // unread: no ID to show
    }
    if (!checked.error.empty()) {
      std::printf(": error: %s\n", checked.error.c_str());
      continue;
    }
    const CodeObject& code_object = *checked.code_object;
    std::printf(": code object v%u, target %s\n", code_object.target().code_object_version,
                code_object.target().target.str().c_str());
    for (const Kernel& kernel : code_object.kernels()) {
      std::printf("  kernel %s: kernarg %u (explicit %u), LDS %u, private %u, wave%u, VGPR %u, SGPR %u, AGPR %s\n",
                  kernel.name.c_str(), kernel.kernarg_segment_size, kernel.layout.explicit_size,
                  kernel.group_segment_fixed_size, kernel.private_segment_fixed_size, kernel.wavefront_size,
                  kernel.vgpr_count, kernel.sgpr_count, agpr_text(kernel).c_str());
    }
    for (const Problem& problem : code_object.problems()) {
      std::printf("  problem: %s\n", problem.message.c_str());
    }
    for (const Violation& violation : checked.violations) {
      std::printf("  violation: %s\n", violation.message.c_str());
    }
  }
}

void write_optional(JsonWriter& json, const std::optional<std::size_t>& value) {
  if (value)
    json.value(std::uint64_t{*value});
  else
    json.null();
}

void write_kernel(JsonWriter& json, const Kernel& kernel) {
  json.begin_object();
  json.key("name");
  json.value(kernel.name);
  json.key("symbol");
  json.value(kernel.symbol);
  json.key("kernarg_size");
  json.value(std::uint64_t{kernel.kernarg_segment_size});
  json.key("kernarg_align");
  json.value(std::uint64_t{kernel.kernarg_segment_align});
  json.key("explicit_size");
  json.value(std::uint64_t{kernel.layout.explicit_size});
  json.key("hidden_offset");
  if (kernel.layout.hidden_offset)
    json.value(std::uint64_t{*kernel.layout.hidden_offset});
  else
    json.null();
  json.key("group_segment_size");
  json.value(std::uint64_t{kernel.group_segment_fixed_size});
  json.key("private_segment_size");
  json.value(std::uint64_t{kernel.private_segment_fixed_size});
  json.key("wavefront_size");
  json.value(std::uint64_t{kernel.wavefront_size});
  json.key("vgpr_count");
  json.value(std::uint64_t{kernel.vgpr_count});
  json.key("sgpr_count");
  json.value(std::uint64_t{kernel.sgpr_count});
  json.key("agpr_count");
  if (kernel.agpr_count)
    json.value(std::uint64_t{*kernel.agpr_count});
  else
    json.null();
  json.key("max_flat_workgroup_size");
  json.value(std::uint64_t{kernel.max_flat_workgroup_size});
  json.key("args");
  json.value(std::uint64_t{kernel.args.size()});
  json.end_object();
}

void write_checked(JsonWriter& json, const Checked& checked) {
  json.begin_object();
  json.key("bundle");
  write_optional(json, checked.bundle);
  json.key("entry_index");
  write_optional(json, checked.entry_index);
  json.key("id");
  json.value(checked.id);
  if (!checked.file.empty()) {  // a file set's; a one-file binary's document keeps its shape
    json.key("file");
    json.value(checked.file);
  }
  json.key("tier");
  if (checked.tier)
    json.value(to_string(*checked.tier));
  else
    json.null();
  json.key("ok");
  json.value(checked.ok());
  json.key("error");
  if (checked.error.empty())
    json.null();
  else
    json.value(checked.error);
  json.key("code_object");
  if (checked.code_object) {
    const CodeObject& code_object = *checked.code_object;
    json.begin_object();
    json.key("target");
    json.value(code_object.target().target.str());
    json.key("version");
    json.value(std::uint64_t{code_object.target().code_object_version});
    json.key("generic_version");
    json.value(std::uint64_t{code_object.target().generic_version});
    json.key("kernels");
    json.begin_array();
    for (const Kernel& kernel : code_object.kernels()) write_kernel(json, kernel);
    json.end_array();
    json.key("problems");
    json.begin_array();
    for (const Problem& problem : code_object.problems()) {
      json.begin_object();
      json.key("kind");
      json.value(to_string(problem.kind));
      json.key("kernel");
      json.value(problem.kernel);
      json.key("field");
      json.value(problem.field);
      json.key("message");
      json.value(problem.message);
      json.end_object();
    }
    json.end_array();
    json.end_object();
  } else {
    json.null();
  }
  json.key("violations");
  json.begin_array();
  for (const Violation& violation : checked.violations) {
    json.begin_object();
    json.key("kind");
    json.value(to_string(violation.kind));
    json.key("kernel");
    json.value(violation.kernel);
    json.key("field");
    json.value(violation.field);
    json.key("value");
    json.value(violation.value);
    json.key("limit");
    json.value(violation.limit);
    json.key("message");
    json.value(violation.message);
    json.end_object();
  }
  json.end_array();
  json.end_object();
}

void print_json(const std::string& path, const FatBinary& binary, const Device* device,
                const std::vector<Checked>& results, bool ok) {
  JsonWriter json;
  json.begin_object();
  json.key("file");
  json.value(path);
  json.key("kind");
  json.value(binary.file_count() > 1 ? "file_set" : to_string(binary.layout().kind));
  json.key("device");
  if (device)
    json.value(device->str());
  else
    json.null();
  json.key("ok");
  json.value(ok);
  json.key("code_objects");
  json.begin_array();
  for (const Checked& checked : results) write_checked(json, checked);
  json.end_array();
  json.end_object();
  std::printf("%s\n", json.text().c_str());
}

}  // namespace

int run_check(std::span<const std::string> args) {
  Expected<Arguments> parsed = parse_arguments(kCheckCommand, args);
  if (std::optional<int> exit = stop_after_parse(kCheckCommand, parsed)) return *exit;
  DeviceOptions device_options = parsed->device_options();
  bool json = parsed->given(kJson);
  std::optional<std::uint64_t> max_decompressed = parsed->number(kMaxDecompressedBytes);
  std::vector<std::string> files = std::move(parsed->operands);
  if (files.empty()) return usage_error("check: a FILE or DIRECTORY is required");
  if (device_options.overridden && device_options.spec.empty()) {
    return usage_error("check: --lds, --co-versions and --extended-isa-compat describe a device: give --device");
  }

  const Expected<Config>& config = process_config();
  if (!config) return usage_error("environment: " + config.error().message());
  std::optional<Device> device;
  if (!device_options.spec.empty()) {
    device = build_device(device_options, *config, "check");
    if (!device) return kExitUsage;
  }
  StreamOptions stream_options = config->stream_options();
  if (max_decompressed) stream_options.read.max_decompressed_bytes = *max_decompressed;
  std::optional<SelectOptions> select_options;  // as `select` chooses: checked before anything is read
  if (device) {
    select_options = cli_select_options(*config);
    if (!select_options) return kExitInputError;
  }

  auto binary = open_operands(files, *parsed, stream_options.read);
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
  const Device* target_device = device ? &*device : nullptr;

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
      check_bytes(checked, bundle->entries()[0].bytes, target_device);
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
      check_bytes(checked, choice->chosen_bytes(), target_device);
      return true;
    };
    std::vector<std::size_t> every(binary->bundles().size());
    std::iota(every.begin(), every.end(), std::size_t{0});
    choose_in_binary(*binary, every, *device, {.select = *select_options, .stream = stream_options}, take);
    if (over_budget) return kExitInputError;
  }

  bool ok = !results.empty();
  for (const Checked& checked : results) ok = ok && checked.ok();
  if (json)
    print_json(path, *binary, target_device, results, ok);
  else
    print_text(path, *binary, target_device, results);
  return ok ? kExitOk : kExitInputError;
}

}  // namespace coload::cli
