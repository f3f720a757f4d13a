// The C API's comgr-shaped lookup (coload_select, coload_select_wrapper in
// coload/coload.h): for each ISA a runtime names, the entry one image would
// load and where. It takes the pipeline's select_in_bundle_at with one Selector
// per ISA (docs/pipeline.md); docs/comgr.md ("coload_select") compares it
// with amd_comgr_lookup_code_object.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "capi/c_boundary.h"
#include "coload/coload.h"
#include "coload/config.h"
#include "coload/detail/hotswap.h"
#include "coload/detail/stream_select.h"
#include "coload/detail/wrapper.h"
#include "coload/device.h"
#include "coload/fat_binary.h"
#include "coload/pipeline.h"
#include "coload/select.h"
#include "common/bytes.h"
#include "common/try.h"

using namespace coload::capi;  // NOLINT: the C API's shared parts, in every entry point

namespace {

using coload::BundleChoice;
using coload::Candidate;
using coload::Device;
using coload::Error;
using coload::ErrorKind;
using coload::Expected;
using coload::Selection;

/// One ISA's outcome, before it is handed to C.
struct Outcome {
  std::optional<Selection> selection;  ///< unset when the image could not be read for this ISA
  std::optional<Error> error;          ///< the read error, or NotFound when nothing fits
  std::span<const std::byte> bytes;    ///< the chosen code object, in the image or in an owned buffer
  bool owned = false;
  std::uint64_t offset = 0;  ///< owned: the entry's offset in the decoded bundle's table
};

/// What a coload_selection points at; coload_selection_free deletes it.
struct SelectionData : coload_selection {
  std::vector<coload_selected> selected;
  std::vector<const coload_selected*> pointers;
  std::vector<std::string> messages, entry_ids, reports;
  /// CCOB entries decoded, each once however many ISAs chose it.
  std::deque<std::vector<std::byte>> buffers;
};

/// A device as a runtime names it (an ISA name or a bare target ID): what
/// the name leaves out is a mode the device lacks (device_target_from_runtime),
/// as comgr reads a bare name; limits from the processor table.
Expected<Device> device_of_isa(std::string_view isa, const coload::Config& config) {
  auto target = coload::device_target_from_runtime(isa);
  COLOAD_RETURN_IF_ERROR(target);
  Device device;
  device.target = *target;
  device.lds_bytes = target->processor->lds_bytes;
  device.wave_sizes = target->processor->wave_sizes;
  config.apply(device);
  return device;
}

/// The selector options `config` asks for; with hotswap on, its registry's
/// pairs (a plugin's included), as the registry builds them.
Expected<coload::SelectOptions> select_options_of(const coload::Config& config) {
  if (!config.hotswap) return select_options(config);
  auto hotswap = coload::hotswap_registry(config);
  COLOAD_RETURN_IF_ERROR(hotswap);
  return select_options(config, *hotswap);
}

void pad(std::string& text, std::string_view field, std::size_t width) {
  text += field;
  if (field.size() < width) text.append(width - field.size(), ' ');
}

/// The report of one ISA, as `coload select` prints a bundle: the device,
/// the choice (or why there is none), then every entry judged.
std::string report_of(const std::string& device, const Outcome& outcome) {
  std::string text = "device " + device + "\nbundle 0: ";
  const Candidate* chosen = outcome.selection ? outcome.selection->chosen() : nullptr;
  if (chosen) {
    text += "selected " + chosen->id + " (" + std::string(coload::to_string(*chosen->tier)) + ")\n";
  } else {
    text += "nothing selected: " + outcome.error->message() + "\n";
  }
  if (!outcome.selection) return text;
  for (const Candidate& candidate : outcome.selection->candidates) {
    pad(text, "  [" + std::to_string(candidate.entry_index) + "] ", 0);
    pad(text, coload::to_string(candidate.verdict), 11);
    pad(text, candidate.tier ? coload::to_string(*candidate.tier) : "-", 11);
    text += candidate.id + ": " + candidate.reason + "\n";
  }
  return text;
}

/// Selects for every device in the one bundle of `binary`. A plain bundle
/// (or bare code object) is read in place for each. A CCOB is streamed for
/// the first device, keeping its entries' heads; a later device selects on
/// those heads and streams again only for an entry no device has chosen yet.
/// What is kept stays below the CCOB's uncompressed size, which
/// max_decompressed_bytes caps: distinct entries of one bundle.
std::vector<Outcome> select_for_each(const coload::FatBinary& binary, std::span<const Device> devices,
                                     const coload::SelectOptions& select, const coload::StreamOptions& stream,
                                     SelectionData& data) {
  const coload::BundleInfo& info = binary.bundles()[0];
  struct Decoded {
    std::size_t entry;
    std::span<const std::byte> bytes;  // in data.buffers
    std::uint64_t table_offset;
  };
  std::vector<Decoded> decoded;
  std::vector<coload::EntryHead> heads;
  std::optional<coload::Bundle> from_heads;  // views `heads`
  std::vector<Outcome> outcomes(devices.size());
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const coload::Selector selector(devices[i], select);
    Outcome& outcome = outcomes[i];
    if (from_heads) {
      auto selection = selector.select(*from_heads);
      const Candidate* chosen = selection ? selection->chosen() : nullptr;
      auto kept = std::find_if(decoded.begin(), decoded.end(),
                               [&](const Decoded& d) { return chosen && d.entry == chosen->entry_index; });
      if (selection && (!chosen || kept != decoded.end())) {
        if (chosen) outcome = {.bytes = kept->bytes, .owned = true, .offset = kept->table_offset};
        outcome.selection = std::move(*selection);
      }
    }
    if (!outcome.selection) {
      Expected<BundleChoice> made = coload::select_in_bundle_at(binary, 0, selector, stream);
      if (!made) {
        outcome.error = std::move(made).error();
        continue;
      }
      const Candidate* chosen = made->selection.chosen();
      coload::StreamedChoice* streamed = made->streamed();
      if (streamed && chosen) {
        data.buffers.push_back(std::move(streamed->chosen));
        const std::size_t entry = chosen->entry_index;
        const std::uint64_t offset = entry < streamed->heads.size() ? streamed->heads[entry].offset : 0;
        decoded.push_back({entry, data.buffers.back(), offset});
        outcome.bytes = data.buffers.back();
        outcome.owned = true;
        outcome.offset = offset;
      } else {
        outcome.bytes = made->chosen_bytes();  // in the image
      }
      if (streamed && !from_heads && streamed->every_head) {
        heads = std::move(streamed->heads);
        from_heads.emplace(info, coload::head_entries(heads), std::span<const std::byte>(), nullptr);
      }
      outcome.selection = std::move(made->selection);
    }
    if (!outcome.selection->chosen()) outcome.error = coload::no_fit_error(devices[i], *outcome.selection);
  }
  return outcomes;
}

/// Finds the image within what the caller handed over, read as `read` says.
using ImageFinder = std::function<Expected<std::span<const std::byte>>(const coload::ReadOptions& read)>;

/// The results of `outcomes` for C, pointing into `data`, whose vectors are
/// sized here once so that the pointers stay put.
void hand_over(std::span<const Device> devices, std::vector<Outcome>& outcomes, std::span<const std::byte> image,
               SelectionData& data) {
  const std::size_t count = outcomes.size();
  data.selected.resize(count);
  data.messages.resize(count);
  data.entry_ids.resize(count);
  data.reports.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    const Outcome& outcome = outcomes[i];
    coload_selected& result = data.selected[i];
    result.struct_size = sizeof result;
    data.reports[i] = report_of(devices[i].str(), outcome);
    result.report = data.reports[i].c_str();
    const Candidate* chosen = outcome.selection ? outcome.selection->chosen() : nullptr;
    if (chosen) {
      result.status = COLOAD_OK;
      result.tier = static_cast<coload_tier>(*chosen->tier);
      result.entry_index = chosen->entry_index;
      data.entry_ids[i] = chosen->id;
      result.bytes = outcome.bytes.data();
      result.size = outcome.bytes.size();
      result.owned = outcome.owned ? 1 : 0;
      // A plain bundle's entry views the image: comgr's offset.
      result.offset = outcome.owned ? outcome.offset : static_cast<std::size_t>(outcome.bytes.data() - image.data());
    } else {
      result.status = status_of(outcome.error->kind());
      data.messages[i] = outcome.error->message();
    }
    result.message = data.messages[i].c_str();
    result.entry_id = data.entry_ids[i].c_str();
  }
  for (const coload_selected& result : data.selected) data.pointers.push_back(&result);
  data.image = image.data();
  data.image_size = image.size();
  data.count = count;
  data.results = data.pointers.data();
}

/// coload_select and coload_select_wrapper after their own arguments: the
/// options and ISAs checked, the image found and read, each ISA chosen for.
coload_status select_image(const char* function, const std::string& name, const ImageFinder& find,
                           const char* const* isas, size_t isa_count, const coload_select_options* options,
                           coload_selection** out) {
  if (!isas && isa_count > 0) return null_argument(function, "isas");
  // More ISAs than any machine has devices: a count that is not one (coload_c.cpp's kMaxDevices).
  constexpr std::size_t kMaxIsas = 4096;
  if (isa_count > kMaxIsas) {
    return fail(COLOAD_ERROR_INVALID_ARGUMENT, std::string(function) + ": isa_count " + std::to_string(isa_count) +
                                                   " is above the limit of " + std::to_string(kMaxIsas));
  }
  for (std::size_t i = 0; i < isa_count; ++i) {
    if (!isas[i]) return null_argument(function, ("isas[" + std::to_string(i) + "]").c_str());
  }
  coload_select_options given{};
  if (options) {
    if (coload_status status = copy_options(function, *options, sizeof given, given); status != COLOAD_OK)
      return status;
  }
  auto config = config_of(Settings{.options = "coload_select_options",
                                   .ignore_environment = given.ignore_environment != 0,
                                   .hash_check = enum_bits(given.hash_check),
                                   .extended_isa_compat = given.extended_isa_compat,
                                   .max_decompressed_bytes = given.max_decompressed_bytes});
  if (!config) return fail(config.error());
  std::vector<Device> devices;
  for (std::size_t i = 0; i < isa_count; ++i) {
    auto device = device_of_isa(isas[i], *config);
    if (!device) {  // the caller's argument, whatever the parser called it
      return fail(COLOAD_ERROR_INVALID_ARGUMENT, std::string(function) + ": isas[" + std::to_string(i) + "] \"" +
                                                     isas[i] + "\": " + device.error().message());
    }
    devices.push_back(std::move(*device));
  }
  auto select = select_options_of(*config);
  if (!select) return fail(select.error());
  const coload::StreamOptions stream = config->stream_options();
  auto image = find(stream.read);
  if (!image) return fail(image.error());
  auto binary = coload::FatBinary::from_memory(*image, name, stream.read);
  if (!binary) return fail(binary.error());
  auto data = std::make_unique<SelectionData>();
  std::vector<Outcome> outcomes = select_for_each(*binary, devices, *select, stream, *data);
  hand_over(devices, outcomes, *image, *data);
  *out = data.release();
  return ok();
}

}  // namespace

extern "C" {

coload_status coload_select(const void* bytes, size_t size, const char* const* isas, size_t isa_count,
                            const coload_select_options* options, coload_selection** out) {
  const char* function = __func__;
  return guarded(function, [&] {
    if (!out) return null_argument(function, "out");
    *out = nullptr;
    if (!bytes) return null_argument(function, "bytes");
    auto find = [&](const coload::ReadOptions& read) -> Expected<std::span<const std::byte>> {
      std::span<const std::byte> view(static_cast<const std::byte*>(bytes), size);
      if (size == COLOAD_AVAILABLE_MAPPED) {
        // Memory given without a size is measured through checked reads (docs/reading-rules.md).
        auto mapped = coload::readable_bytes_at(bytes);
        COLOAD_RETURN_IF_ERROR(mapped);
        return coload::measured_in_place(*mapped, read);
      }
      auto measured = coload::measure_image(view, read);
      COLOAD_RETURN_IF_ERROR(measured);
      return view.first(measured->size);
    };
    const std::string name = "image at " + coload::detail::hex(reinterpret_cast<std::uintptr_t>(bytes));
    return select_image(function, name, find, isas, isa_count, options, out);
  });
}

coload_status coload_select_wrapper(const void* wrapper, const char* const* isas, size_t isa_count,
                                    const coload_select_options* options, coload_selection** out) {
  const char* function = __func__;
  return guarded(function, [&] {
    if (!out) return null_argument(function, "out");
    *out = nullptr;
    if (!wrapper) return null_argument(function, "wrapper");
    auto find = [&](const coload::ReadOptions& read) { return coload::wrapped_image(wrapper, read); };
    const std::string name =
        "__hip_fatbin_wrapper at " + coload::detail::hex(reinterpret_cast<std::uintptr_t>(wrapper));
    return select_image(function, name, find, isas, isa_count, options, out);
  });
}

void coload_selection_free(coload_selection* selection) {
  delete static_cast<SelectionData*>(selection);  // noexcept: only destructors run
}

}  // extern "C"
