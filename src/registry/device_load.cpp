// One (binary, device) load (device_load.h): the pipeline chooses in each
// bundle on its decode threads, each bundle read through the ImageCache
// (the pipeline's BundleReader seam); the choices arrive here in bundle
// order, on the loading thread, and each chosen code object is transformed
// where its tier asks, admitted and loaded as it arrives.
#include "registry/device_load.h"

#include <numeric>
#include <string>
#include <utility>

#include "coload/select.h"
#include "coload/validate.h"
#include "common/try.h"

namespace coload::registry {
namespace {

/// Loads the entry `chosen` of bundle `bundle` (its code object `image`) on
/// device `index`: through its tier's pass for Hotswap and Equivalent, as it
/// is otherwise; the module, its image and its origin go into `state`.
Expected<void> load_chosen(const LoadContext& context, const Binary& binary, std::size_t index, std::size_t bundle,
                           const Candidate& chosen, const std::shared_ptr<const EntryImage>& image,
                           DeviceState& state) {
  const Device& device = context.devices[index];
  // A file set names the file the entry came from (a one-file binary: its name).
  const std::string& file = binary.fat->file(bundle, chosen.entry_index);
  // Every failure of this entry's load lies at it: file, bundle and entry as
  // fields of the error, rendered by Error::message().
  auto here = [&](Error error) {
    return std::move(error).at_entry(chosen.entry_index, chosen.id).in_bundle(bundle).in_file(file);
  };
  const bool transformed_tier = chosen.tier == Tier::Hotswap || chosen.tier == Tier::Equivalent;
  context.log(LogLevel::Info, [&] {
    return file + ": bundle " + std::to_string(bundle) + " entry " + std::to_string(chosen.entry_index) + " (" +
           chosen.id + "): " + std::string(to_string(*chosen.tier)) + " for device " + std::to_string(index) + " (" +
           device.str() + ")" + (transformed_tier ? ", transformed for it" : "");
  });
  if (transformed_tier) {
    auto transformed = transform(context.hotswap, image, *chosen.tier, device, context.counters);
    if (!transformed) return here(std::move(transformed).error());
    const TransformedImage& out = **transformed;
    auto module = context.runtime.load(index, Image{out.bytes, *transformed}, *out.code_object);
    if (!module) return here(std::move(module).error().with_context("transformed for " + device.str()));
    context.counters.add(context.counters.modules_loaded);
    state.images.push_back(std::move(*transformed));
    state.modules.push_back(std::move(*module));
    state.origins.push_back({fit_rank(chosen), file});
    return {};
  }
  if (auto admitted = admit(image->code_object, device, {}); !admitted) return here(std::move(admitted).error());
  auto module = context.runtime.load(index, Image{image->bytes, image}, image->code_object);
  if (!module) return here(std::move(module).error());
  context.counters.add(context.counters.modules_loaded);
  state.images.push_back(image);
  state.modules.push_back(std::move(*module));
  state.origins.push_back({fit_rank(chosen), file});
  return {};
}

Expected<void> load_modules(const LoadContext& context, Binary& binary, std::size_t index, DeviceState& state) {
  const Device& device = context.devices[index];
  if (context.hotswap_error) return context.hotswap_error->with_context(binary.name + ": device " + device.str());
  const std::size_t count = binary.fat->bundles().size();
  KeptBytes kept(context.max_kept_bytes, "what one load keeps of its compressed bundles");
  // What the cache read of each bundle beside its report: written on the
  // thread that read the bundle, taken on this one once the pipeline hands
  // the bundle over.
  std::vector<Choice> read(count);
  ChooseOptions options = context.choose;
  options.reads_entries = true;
  options.reader = [&](std::size_t bundle, const Selector& selector) -> Expected<BundleChoice> {
    auto made = context.images.choose(binary.fat, binary.name, *binary.bundles[bundle], bundle, selector, kept,
                                      binary.copy_entries);
    COLOAD_RETURN_IF_ERROR(made);
    BundleChoice choice;
    choice.selection = std::move(made->selection);
    read[bundle] = std::move(*made);
    return choice;
  };
  std::optional<Error> failed;
  std::optional<Selection> first_miss;  // the first bundle where nothing fits: its whole report
  std::size_t first_miss_index = 0;
  auto take = [&](std::size_t bundle, Expected<BundleChoice>& choice) {
    if (!choice) {
      failed = binary.fat->at_bundle(std::move(choice).error(), bundle);
      return false;
    }
    Choice held = std::move(read[bundle]);
    const Candidate* chosen = choice->selection.chosen();
    if (!chosen) {
      context.log(LogLevel::Debug,
                  [&] { return binary.fat->at_bundle(no_fit_error(device, choice->selection), bundle).message(); });
      if (state.skipped++ == 0) {
        state.first_skipped = binary.fat->at_bundle(no_fit_error(device, choice->selection), bundle).message();
        first_miss = std::move(choice->selection);
        first_miss_index = bundle;
      }
      return true;
    }
    if (auto loaded = load_chosen(context, binary, index, bundle, *chosen, held.image, state); !loaded) {
      failed = std::move(loaded).error();
      return false;
    }
    return true;
  };
  std::vector<std::size_t> every(count);
  std::iota(every.begin(), every.end(), std::size_t{0});
  choose_in_binary(*binary.fat, every, device, options, take);
  if (failed) return std::move(*failed);
  if (!state.modules.empty()) return {};
  if (!first_miss) return Error(ErrorKind::NotFound, binary.name + ": holds no bundle");
  // The first bundle that missed, as the location; a group's report lists its files.
  const bool group = binary.fat->file_count() > 1;
  Error none = group ? binary.fat->at_bundle(no_fit_error(device, *first_miss), first_miss_index)
                     : no_fit_error(device, *first_miss).in_bundle(first_miss_index).in_file(binary.name);
  if (count > 1 || group) return std::move(none).with_context("none of its " + std::to_string(count) + " bundles fits");
  return none;
}

}  // namespace

/// A HIPK wrapper's code object must have the kernels its wrapper
/// registered: without one it is another translation unit's code, which the
/// packer's per-target numbering can hand a wrapper (docs/loading.md,
/// "kpack'd libraries").
Expected<void> check_registered(const Binary& binary, const DeviceState& state,
                                std::span<const std::string> registered) {
  for (const std::string& kernel : registered) {
    bool found = false;
    for (const auto& module : state.modules) {
      for (const LoadedKernel& loaded : module->kernels()) found = found || loaded.name == kernel;
    }
    if (!found) {
      return Error(ErrorKind::Ambiguous, "its kpack code object lacks kernel \"" + kernel +
                                             "\", which this wrapper registers: the archive's #N is another "
                                             "translation unit's code; refused")
          .in_file(binary.name);
    }
  }
  return {};
}

void load_device(const LoadContext& context, Binary& binary, std::size_t index, DeviceState& state,
                 std::span<const std::string> registered) {
  auto result = load_modules(context, binary, index, state);
  if (result && binary.kpack_index) result = check_registered(binary, state, registered);
  if (!result) {
    context.log(LogLevel::Warn, [&] {
      return "device " + std::to_string(index) + " (" + context.devices[index].str() + "): " + result.error().message();
    });
    state.kernels.clear();
    state.modules.clear();  // unload before releasing the images
    state.origins.clear();
    state.images.clear();
    state.error = std::move(result).error();
    return;
  }
  for (std::size_t m = 0; m < state.modules.size(); ++m) {
    const LoadedModule* module = state.modules[m].get();
    std::span<const LoadedKernel> kernels = module->kernels();
    for (std::size_t i = 0; i < kernels.size(); ++i) {
      const DeviceState::KernelSlot slot{&kernels[i], module, i, state.origins[m].rank};
      auto [at, inserted] = state.kernels.try_emplace(kernels[i].name, slot);
      if (!inserted && slot.rank < at->second.rank) at->second = slot;
    }
  }
}

}  // namespace coload::registry
