// The lazy, thread-safe registry of fat binaries (coload/registry.h): handles,
// devices and lookups. Each (binary, device) load takes the pipeline
// (coload/pipeline.h) through the registry's ImageCache (image_cache.cpp),
// which shares bundles, CCOB heads and code objects between devices and
// registrations; hotswap passes are applied in transform.cpp, and every code
// object is admitted (coload::admit) before the runtime sees it.
//
//   Registry::Impl  the runtime, the devices, the handle -> Binary map
//                   (shared_mutex: lookups share it, register/unregister own
//                   it) and the host stubs (host_stubs.h); Binary and
//                   DeviceSlot are in binary_state.h.
#include "coload/registry.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <exception>
#include <functional>
#include <future>
#include <mutex>
#include <numeric>
#include <optional>
#include <shared_mutex>
#include <string>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "coload/bundle.h"
#include "coload/fat_binary.h"
#include "coload/pipeline.h"
#include "coload/select.h"
#include "coload/stream_select.h"
#include "coload/validate.h"
#include "coload/wrapper.h"
#include "common/bytes.h"
#include "registry/binary_state.h"
#include "registry/host_stubs.h"
#include "registry/registry_state.h"

namespace coload {
namespace {

using registry::Binary;
using registry::BundleSlot;
using registry::Choice;
using registry::DeviceSlot;
using registry::DeviceState;
using registry::EntryImage;
using registry::fit_rank;
using registry::StringMap;
using registry::TransformedImage;

// "; 2 bundles have no code object for this device, e.g. <why>".
std::string skipped_note(std::size_t skipped, const std::string& first) {
  if (skipped == 0) return {};
  return "; " + std::to_string(skipped) + (skipped == 1 ? " bundle has" : " bundles have") +
         " no code object for this device, e.g. " + first;
}

}  // namespace

namespace {

Error unknown_binary(BinaryHandle handle) {
  return Error(ErrorKind::NotFound, "no fat binary is registered with handle " + std::to_string(handle.value));
}

}  // namespace

struct Registry::Impl {
  std::shared_ptr<Runtime> runtime;  // declared first: outlives every module
  Config config;
  ReadOptions read_options;
  std::shared_ptr<const HotswapRegistry> hotswap;  // never null
  std::optional<Error> hotswap_error;              // the registry could not be built: every load fails
  SelectOptions select_options;
  StreamOptions stream_options;
  std::size_t decode_threads = 1;  // at least 1
  registry::Log log;
  std::vector<Device> devices;
  registry::Counters counters;
  registry::ImageCache images{stream_options, counters, log};

  mutable std::shared_mutex binaries_mutex;
  std::unordered_map<std::uint64_t, std::shared_ptr<Binary>> binaries;
  std::uint64_t next_handle = 1;
  std::unique_ptr<registry::HostStubs> stubs;  // sized by the devices, once they are known

  Impl(std::shared_ptr<Runtime> rt, Config cfg, RegistryOptions options)
      : runtime(std::move(rt)),
        config(std::move(cfg)),
        read_options(config.read_options()),
        hotswap(std::move(options.hotswap)),
        stream_options(config.stream_options()),
        log{config.log_level, std::move(options.log)} {
    decode_threads = options.decode_threads;
    if (decode_threads == 0) decode_threads = std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 8);
    if (!hotswap && !config.hotswap) {
      // Only the same-ISA retarget can run: the built-in passes, no plugin.
      hotswap = std::shared_ptr<const HotswapRegistry>(std::shared_ptr<const void>(), &HotswapRegistry::builtin());
      // A plugin or pairs set without the switch would otherwise be a silent no-op (docs/environment.md).
      if (!config.hotswap_plugin.empty() || !config.hotswap_pairs.empty()) {
        log(LogLevel::Warn, [] {
          return std::string(
              "COLOAD_HOTSWAP_PLUGIN or COLOAD_HOTSWAP_PAIRS is set but COLOAD_HOTSWAP is not 1: "
              "the hotswap tier is off, no plugin is loaded and the pairs are not read");
        });
      }
    } else if (!hotswap) {
      auto built = hotswap_registry(config);
      if (built) {
        hotswap = std::make_shared<const HotswapRegistry>(std::move(*built));
      } else {
        hotswap_error = std::move(built).error();
        hotswap = std::make_shared<const HotswapRegistry>();
      }
    }
    select_options = coload::select_options(config, *hotswap);
    if (runtime) {
      for (const std::string& warning : runtime->warnings()) {
        log(LogLevel::Warn, [&] { return std::string(runtime->name()) + ": " + warning; });
      }
      for (const Device& device : runtime->devices()) {
        devices.push_back(device);
        config.apply(devices.back());
      }
    }
    stubs = std::make_unique<registry::HostStubs>(devices.size());
  }

  ~Impl() {
    std::unique_lock lock(binaries_mutex);
    binaries.clear();  // every module unloads while the runtime is alive
  }

  /// `copy_entries`: Binary::copy_entries (true for registered files).
  Expected<BinaryHandle> add(Expected<FatBinary> fat, std::string name, bool copy_entries) {
    if (!fat) return std::move(fat).error();
    auto binary = std::make_shared<Binary>();
    binary->name = std::move(name);
    binary->copy_entries = copy_entries;
    binary->set_opened(std::move(*fat));
    return add(std::move(binary));
  }

  /// A wrapper's registration: `reach` (wrapper_reach) is opened at first use.
  Expected<BinaryHandle> add_wrapper(const void* wrapper, std::span<const std::byte> reach, std::string name) {
    auto binary = std::make_shared<Binary>();
    binary->name = std::move(name);
    binary->wrapper = wrapper;
    binary->reach = reach;
    binary->copy_entries = false;  // its image is copied whole at first use
    return add(std::move(binary));
  }

  Expected<BinaryHandle> add(std::shared_ptr<Binary> binary) {
    binary->devices = std::make_unique<DeviceSlot[]>(devices.size());
    counters.add(counters.binaries_registered);
    std::unique_lock lock(binaries_mutex);
    BinaryHandle handle{next_handle++};
    binaries.emplace(handle.value, std::move(binary));
    return handle;
  }

  Expected<std::shared_ptr<Binary>> find(BinaryHandle handle) const {
    std::shared_lock lock(binaries_mutex);
    auto it = binaries.find(handle.value);
    if (it == binaries.end()) {
      return unknown_binary(handle);
    }
    return it->second;
  }

  /// Selects, reads and loads every bundle of `binary` that fits device
  /// `index` into `state`; on failure, nothing stays loaded and the error is kept.
  void load(Binary& binary, std::size_t index, DeviceState& state) {
    auto result = load_modules(binary, index, state);
    if (!result) {
      log(LogLevel::Warn, [&] {
        return "device " + std::to_string(index) + " (" + devices[index].str() + "): " + result.error().message();
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

  /// Every bundle's choice for `device`, in bundle order, made on up to
  /// `decode_threads` threads (this one included): bundles are independent,
  /// and decoding CCOBs and reading code objects is most of a cold lookup.
  /// Each selection is cut to what load_modules reads: the chosen candidate,
  /// or, of the bundles where nothing fits, the first one's whole report.
  /// All of them at once would hold every bundle's table again, per device.
  std::vector<std::optional<Expected<Choice>>> choose_all(Binary& binary, const Device& device) {
    const std::size_t count = binary.fat->bundles().size();
    std::vector<std::optional<Expected<Choice>>> choices(count);
    const Selector selector(device, select_options);
    KeptBytes kept(read_options.max_decompressed_bytes, "what one load keeps of its compressed bundles");
    std::mutex misses_mutex;
    std::size_t first_miss = count;  // the bundle whose report is kept
    auto settle = [&](std::size_t i, Expected<Choice> made) {
      Selection* selection = made ? &made->selection : nullptr;
      if (selection && selection->chosen()) {
        Candidate chosen = std::move(selection->candidates[*selection->selected]);
        selection->candidates.assign(1, std::move(chosen));
        selection->selected = 0;
      } else if (selection) {
        log(LogLevel::Debug, [&] { return binary.fat->at_bundle(no_fit_error(device, *selection), i).message(); });
        std::lock_guard lock(misses_mutex);  // held while placed: an earlier miss found later clears it
        const bool earliest = i < first_miss;
        if (!earliest) selection->candidates.clear();
        choices[i].emplace(std::move(made));
        if (earliest) {
          if (first_miss < count) (*choices[first_miss])->selection.candidates.clear();
          first_miss = i;
        }
        return;
      }
      choices[i].emplace(std::move(made));
    };
    // Every slot is settled by the thread that made it (the report cut
    // above must happen there) and kept: handing over in order has nothing
    // to do, and no helper need wait for it.
    auto work = [&](std::size_t i) {
      try {
        settle(i, images.choose(binary.fat, binary.name, *binary.bundles[i], i, selector, kept, binary.copy_entries));
      } catch (const std::exception& exception) {  // must not end a helper thread (std::terminate)
        choices[i].emplace(bundle_failure(i, exception));
      }
    };
    for_each_in_order(count, std::min(decode_threads, count), work, [](std::size_t) { return true; }, count);
    return choices;
  }

  Expected<void> load_modules(Binary& binary, std::size_t index, DeviceState& state) {
    const Device& device = devices[index];
    if (hotswap_error) return hotswap_error->with_context(binary.name + ": device " + device.str());
    const std::size_t count = binary.fat->bundles().size();
    std::vector<std::optional<Expected<Choice>>> choices = choose_all(binary, device);
    std::optional<Selection> first_miss;
    std::size_t first_miss_index = 0;
    for (std::size_t i = 0; i < count; ++i) {
      Expected<Choice>& choice = *choices[i];
      if (!choice) return binary.fat->at_bundle(std::move(choice).error(), i);
      const Candidate* chosen = choice->selection.chosen();
      if (!chosen) {
        if (state.skipped++ == 0) {  // the first miss: choose_all kept its whole report
          state.first_skipped = binary.fat->at_bundle(no_fit_error(device, choice->selection), i).message();
        }
        if (!first_miss) {
          first_miss = std::move(choice->selection);
          first_miss_index = i;
        }
        continue;
      }
      // A file set names the file the entry came from (a one-file binary: its name).
      const std::string& file = binary.fat->file(i, chosen->entry_index);
      const std::string where = file + ": bundle " + std::to_string(i);
      const std::string entry_where = where + " entry " + std::to_string(chosen->entry_index) + " (" + chosen->id + ")";
      const std::shared_ptr<const EntryImage>& image = choice->image;
      log(LogLevel::Info, [&] {
        return entry_where + ": " + std::string(to_string(*chosen->tier)) + " for device " + std::to_string(index) +
               " (" + device.str() + ")" +
               (chosen->tier == Tier::Hotswap || chosen->tier == Tier::Equivalent ? ", transformed for it" : "");
      });
      if (chosen->tier == Tier::Hotswap || chosen->tier == Tier::Equivalent) {
        auto transformed = registry::transform(*hotswap, image, *chosen->tier, device, entry_where, counters);
        if (!transformed) return std::move(transformed).error();
        const TransformedImage& out = **transformed;
        auto module = runtime->load(index, Image{out.bytes, *transformed}, *out.code_object);
        if (!module) return module.error().with_context(entry_where + " (transformed for " + device.str() + ")");
        counters.add(counters.modules_loaded);
        state.images.push_back(std::move(*transformed));
        state.modules.push_back(std::move(*module));
        state.origins.push_back({fit_rank(*chosen), file});
        continue;
      }
      if (auto admitted = admit(image->code_object, device, entry_where); !admitted) return admitted.error();
      auto module = runtime->load(index, Image{image->bytes, image}, image->code_object);
      if (!module) return module.error().with_context(entry_where);
      counters.add(counters.modules_loaded);
      state.images.push_back(image);
      state.modules.push_back(std::move(*module));
      state.origins.push_back({fit_rank(*chosen), file});
    }
    if (!state.modules.empty()) return {};
    if (!first_miss) return Error(ErrorKind::NotFound, binary.name + ": holds no bundle");
    if (binary.fat->file_count() > 1) {  // its bundles' files: a group's report lists them
      return binary.fat->at_bundle(no_fit_error(device, *first_miss), first_miss_index)
          .with_context("none of its " + std::to_string(count) + " bundles fits");
    }
    std::string where = binary.name + ": bundle " + std::to_string(first_miss_index);
    if (count > 1)
      where = binary.name + ": none of its " + std::to_string(count) + " bundles fits; bundle " +
              std::to_string(first_miss_index);
    return no_fit_error(device, *first_miss).with_context(where);
  }

  /// The kernel `host_stub` stands for on `device`, valid while `binary` is
  /// held: of the binaries that registered it, the one whose module fits the
  /// device best (fit_rank), the first registration on a tie. A binary with
  /// no code for the device is passed over; its error is the answer only
  /// when none resolves. `generation` is the stub record's, for remember().
  Expected<const DeviceState::KernelSlot*> resolve(const void* host_stub, std::size_t device,
                                                   std::shared_ptr<Binary>& binary, std::uint64_t& generation) {
    auto stub = stubs->find(host_stub);
    if (!stub) return std::move(stub).error();
    generation = stub->generation;
    if (device >= devices.size()) return device_out_of_range(device);
    const DeviceState::KernelSlot* best = nullptr;
    std::optional<Error> first_error;
    for (BinaryHandle handle : stub->binaries) {
      std::shared_ptr<Binary> registered;
      auto found = kernel(handle, device, stub->kernel, registered);
      if (!found) {
        if (!first_error) first_error = std::move(found).error();
        continue;
      }
      if (!best || (*found)->rank < best->rank) {
        best = *found;
        binary = std::move(registered);
      }
      if (best->rank == 0) break;  // native code with exact features: nothing fits better
    }
    if (!best) return std::move(*first_error);
    return best;
  }

  /// The kernel `name` of (binary, device), valid while `binary` is held.
  Expected<const DeviceState::KernelSlot*> kernel(BinaryHandle handle, std::size_t device, std::string_view name,
                                                  std::shared_ptr<Binary>& binary) {
    auto state = this->state(handle, device, binary);
    if (!state) return std::move(state).error();
    auto it = (*state)->kernels.find(name);
    if (it != (*state)->kernels.end()) return &it->second;
    return Error(ErrorKind::NotFound, "kernel \"" + std::string(name) + "\" not found in " + binary->name +
                                          " for device " + std::to_string(device) + " (" + devices[device].str() +
                                          "; " + std::to_string((*state)->kernels.size()) + " kernels loaded)" +
                                          skipped_note((*state)->skipped, (*state)->first_skipped));
  }

  /// coload::check_dispatch of the kernel in `slot`, found in `binary` (held).
  Expected<void> check_dispatch(const DeviceState::KernelSlot& slot, const Binary& binary, std::size_t device,
                                const Dispatch& dispatch) const {
    // Runtimes list a module's kernels in metadata order; search only when one does not.
    const std::string& name = slot.loaded->name;
    std::span<const Kernel> listed = slot.module->code_object().kernels();
    const Kernel* metadata = slot.index < listed.size() && listed[slot.index].name == name
                                 ? &listed[slot.index]
                                 : slot.module->code_object().find_kernel(name);
    if (!metadata) return Error(ErrorKind::NotFound, "kernel \"" + name + "\" has no metadata in " + binary.name);
    return coload::check_dispatch(*metadata, devices[device], dispatch);
  }

  Error device_out_of_range(std::size_t device) const {
    return Error(ErrorKind::InvalidArgument, "device " + std::to_string(device) + " out of range: runtime " +
                                                 std::string(runtime->name()) + " has " +
                                                 std::to_string(devices.size()) + " devices");
  }

  /// The loaded state of (binary, device), built on first use.
  Expected<const DeviceState*> state(BinaryHandle handle, std::size_t device, std::shared_ptr<Binary>& binary) {
    auto found = find(handle);
    if (!found) return std::move(found).error();
    binary = std::move(*found);
    if (device >= devices.size()) return device_out_of_range(device);
    if (auto opened = binary->open(read_options, log); !opened) return std::move(opened).error();
    DeviceSlot& slot = binary->devices[device];
    if (!slot.ready.load(std::memory_order_acquire)) {
      std::lock_guard lock(slot.mutex);
      if (!slot.ready.load(std::memory_order_relaxed)) {
        load(*binary, device, slot.state);
        slot.ready.store(true, std::memory_order_release);
      }
    }
    if (slot.state.error) return *slot.state.error;
    return &slot.state;
  }
};

Registry::Registry(std::shared_ptr<Runtime> runtime, Config config, RegistryOptions options)
    : impl_(std::make_unique<Impl>(std::move(runtime), std::move(config), std::move(options))) {}

Registry::~Registry() = default;

Runtime& Registry::runtime() const { return *impl_->runtime; }

std::span<const Device> Registry::devices() const { return impl_->devices; }

Expected<BinaryHandle> Registry::register_file(const std::string& path) {
  return impl_->add(FatBinary::open(path, impl_->read_options), path, true);
}

Expected<BinaryHandle> Registry::register_memory(std::span<const std::byte> bytes, std::string name) {
  auto fat = FatBinary::from_memory(bytes, name, impl_->read_options);
  return impl_->add(std::move(fat), std::move(name), false);
}

Expected<BinaryHandle> Registry::register_files(std::span<const std::string> paths, std::string name) {
  auto fat = FatBinary::open_files(paths, std::move(name), impl_->read_options);
  if (!fat) return std::move(fat).error();
  std::string named = fat->name();
  return impl_->add(std::move(fat), std::move(named), true);
}

Expected<BinaryHandle> Registry::register_directory(const std::string& path, const DirectoryScan& scan) {
  return impl_->add(FatBinary::open_directory(path, scan, impl_->read_options), path, true);
}

Expected<BinaryHandle> Registry::register_wrapper(const void* wrapper, std::string name) {
  auto reach = wrapper_reach(wrapper);
  if (!reach) return std::move(reach).error();
  if (name.empty()) name = "__hip_fatbin_wrapper at " + detail::hex(reinterpret_cast<std::uintptr_t>(wrapper));
  return impl_->add_wrapper(wrapper, *reach, std::move(name));
}

Expected<void> Registry::unregister(BinaryHandle binary) {
  std::shared_ptr<Binary> removed;
  {
    std::unique_lock lock(impl_->binaries_mutex);
    auto it = impl_->binaries.find(binary.value);
    if (it == impl_->binaries.end()) {
      return unknown_binary(binary);
    }
    removed = std::move(it->second);
    impl_->binaries.erase(it);
  }
  impl_->stubs->forget(binary);
  // Released outside the lock: unloading may take a while. A lookup still
  // running on this binary holds its own reference, and whichever thread lets
  // go last unloads; this one waits for that, so that the caller's bytes are
  // free to go when unregister returns.
  std::future<void> done = removed->release.promise.emplace().get_future();
  removed.reset();
  done.wait();
  return {};
}

Expected<const LoadedKernel*> Registry::lookup_kernel(BinaryHandle binary, std::size_t device,
                                                      std::string_view kernel) {
  std::shared_ptr<Binary> held;
  auto found = impl_->kernel(binary, device, kernel, held);
  if (!found) return std::move(found).error();
  return (*found)->loaded;
}

Expected<LoadedKernel> Registry::lookup_kernel_copy(BinaryHandle binary, std::size_t device, std::string_view kernel) {
  std::shared_ptr<Binary> held;  // copied while held: an unregister on another thread waits for it
  auto found = impl_->kernel(binary, device, kernel, held);
  if (!found) return std::move(found).error();
  return *(*found)->loaded;
}

Expected<void> Registry::register_function(BinaryHandle binary, const void* host_stub, std::string kernel) {
  if (!host_stub) return Error(ErrorKind::InvalidArgument, "register_function: the host stub is null");
  if (kernel.empty()) return Error(ErrorKind::InvalidArgument, "register_function: the kernel name is empty");
  // The binary stays registered while its stub is added: unregister erases
  // the binary first and its stubs after, so no stub outlives its binary.
  std::shared_lock binaries_lock(impl_->binaries_mutex);
  if (!impl_->binaries.contains(binary.value)) {
    return unknown_binary(binary);
  }
  return impl_->stubs->add(host_stub, binary, kernel);
}

Expected<const LoadedKernel*> Registry::lookup_function(const void* host_stub, std::size_t device) {
  const LoadedKernel* before = nullptr;
  if (impl_->stubs->found_before(host_stub, device, [&](const LoadedKernel& kernel) { before = &kernel; }))
    return before;
  std::shared_ptr<Binary> held;
  std::uint64_t generation = 0;
  auto found = impl_->resolve(host_stub, device, held, generation);
  if (!found) return std::move(found).error();
  impl_->stubs->remember(host_stub, generation, device, (*found)->loaded);
  return (*found)->loaded;
}

Expected<LoadedKernel> Registry::lookup_function_copy(const void* host_stub, std::size_t device) {
  LoadedKernel copy;  // copied under the stubs' lock: an unregister waits for it before freeing the kernel
  if (impl_->stubs->found_before(host_stub, device, [&](const LoadedKernel& kernel) { copy = kernel; })) return copy;
  std::shared_ptr<Binary> held;  // copied while held, as lookup_kernel_copy
  std::uint64_t generation = 0;
  auto found = impl_->resolve(host_stub, device, held, generation);
  if (!found) return std::move(found).error();
  impl_->stubs->remember(host_stub, generation, device, (*found)->loaded);
  return *(*found)->loaded;
}

Expected<void> Registry::check_function_dispatch(const void* host_stub, std::size_t device, const Dispatch& dispatch) {
  std::shared_ptr<Binary> held;
  std::uint64_t generation = 0;
  auto found = impl_->resolve(host_stub, device, held, generation);
  if (!found) return std::move(found).error();
  return impl_->check_dispatch(**found, *held, device, dispatch);
}

Expected<void> Registry::check_dispatch(BinaryHandle binary, std::size_t device, std::string_view kernel,
                                        const Dispatch& dispatch) {
  std::shared_ptr<Binary> held;
  auto found = impl_->kernel(binary, device, kernel, held);
  if (!found) return std::move(found).error();
  return impl_->check_dispatch(**found, *held, device, dispatch);
}

Expected<LoadedGlobal> Registry::lookup_global(BinaryHandle binary, std::size_t device, std::string_view name) {
  std::shared_ptr<Binary> held;  // asked while held: an unregister on another thread waits for it
  auto state = impl_->state(binary, device, held);
  if (!state) return std::move(state).error();
  std::optional<Error> first_miss;
  for (const auto& module : (*state)->modules) {
    auto found = module->global(name);
    if (found) return found;
    if (found.error().kind() != ErrorKind::NotFound) return std::move(found).error().with_context(held->name);
    if (!first_miss) first_miss = std::move(found).error();
  }
  return Error(ErrorKind::NotFound, "global variable \"" + std::string(name) + "\" not found in " + held->name +
                                        " for device " + std::to_string(device) + " (" + impl_->devices[device].str() +
                                        "; " + std::to_string((*state)->modules.size()) + " modules loaded)" +
                                        (first_miss ? ": " + first_miss->message() : std::string()) +
                                        skipped_note((*state)->skipped, (*state)->first_skipped));
}

Expected<std::vector<const LoadedModule*>> Registry::modules(BinaryHandle binary, std::size_t device) {
  std::shared_ptr<Binary> held;
  auto state = impl_->state(binary, device, held);
  if (!state) return std::move(state).error();
  std::vector<const LoadedModule*> modules;
  for (const auto& module : (*state)->modules) modules.push_back(module.get());
  return modules;
}

Expected<std::vector<std::string>> Registry::module_files(BinaryHandle binary, std::size_t device) {
  std::shared_ptr<Binary> held;
  auto state = impl_->state(binary, device, held);
  if (!state) return std::move(state).error();
  std::vector<std::string> files;
  for (const DeviceState::Origin& origin : (*state)->origins) files.push_back(origin.file);
  return files;
}

Expected<void> Registry::choose(BinaryHandle binary, std::size_t device, const ChoiceTaker& take) {
  auto found = impl_->find(binary);
  if (!found) return std::move(found).error();
  const Binary& held = **found;
  if (device >= impl_->devices.size()) return impl_->device_out_of_range(device);
  if (auto opened = (*found)->open(impl_->read_options, impl_->log); !opened) return std::move(opened).error();
  if (impl_->hotswap_error) return impl_->hotswap_error->with_context(held.name);
  std::vector<std::size_t> every(held.fat->bundles().size());
  std::iota(every.begin(), every.end(), std::size_t{0});
  const ChooseOptions options{.select = impl_->select_options,
                              .stream = impl_->stream_options,
                              .threads = std::min(impl_->decode_threads, std::max<std::size_t>(every.size(), 1))};
  choose_in_binary(*held.fat, every, impl_->devices[device], options, take);
  return {};
}

Expected<std::string> Registry::binary_name(BinaryHandle binary) const {
  auto found = impl_->find(binary);
  if (!found) return std::move(found).error();
  return (*found)->name;
}

RegistryStats Registry::stats() const {
  const auto get = [](const std::atomic<std::uint64_t>& counter) { return counter.load(std::memory_order_relaxed); };
  const registry::Counters& c = impl_->counters;
  return RegistryStats{get(c.binaries_registered), get(c.bundles_read),   get(c.bundles_decompressed),
                       get(c.code_objects_read),   get(c.modules_loaded), get(c.bytes_decoded)};
}

}  // namespace coload
