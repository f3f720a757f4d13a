// The lazy, thread-safe registry of fat binaries (coload/registry.h).
//
// Structure, outermost first:
//   Registry::Impl   the runtime, the devices, the handle → Binary map
//                    (shared_mutex: lookups share it, register/unregister own it)
//                    and the cache of decompressed CCOBs (weak, by hash + size).
//   Binary           one registration: its FatBinary, one BundleSlot per
//                    bundle and one DeviceSlot per device.
//   BundleSlot       the bundle read once (mutex), as shared BundleData.
//   BundleData       a read Bundle plus the code objects read from its entries
//                    (weak, by entry ID), shared by devices and registrations.
//   DeviceSlot       the modules loaded for one (binary, device): built once
//                    under its own mutex, then read lock-free behind an
//                    acquire/release flag.
// Destruction releases modules (DeviceSlot) before the code objects and bytes
// they came from (EntryImage → BundleData → FatBinary).
#include "coload/registry.h"

#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "coload/bundle.h"
#include "coload/fat_binary.h"
#include "coload/select.h"
#include "coload/validate.h"
#include "common/bytes.h"

namespace coload {
namespace {

/// Hash for heterogeneous lookup: a string_view finds a std::string key without allocating.
struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
};
template <class T>
using StringMap = std::unordered_map<std::string, T, StringHash, std::equal_to<>>;

struct BundleData;

/// One entry's bytes and the code object read from them; the Image owner.
struct EntryImage {
  std::shared_ptr<const BundleData> bundle;  // keeps `bytes` alive
  std::span<const std::byte> bytes;
  CodeObject code_object;
};

/// A pass's output for one device (hotswap, or the same-ISA retarget): the
/// Image owner of what was loaded instead of the entry.
struct TransformedImage {
  std::shared_ptr<const EntryImage> source;
  std::vector<std::byte> bytes;
  std::optional<CodeObject> code_object;  // read from `bytes`, set before use
};

/// A bundle read (a CCOB decompressed) and the code objects read from it.
struct BundleData {
  Bundle bundle;
  std::shared_ptr<const FatBinary> source;  // plain bundles view the source's bytes; null for CCOBs
  mutable std::mutex entries_mutex;
  mutable StringMap<std::weak_ptr<const EntryImage>> entries;

  BundleData(Bundle b, std::shared_ptr<const FatBinary> s) : bundle(std::move(b)), source(std::move(s)) {}
};

struct BundleSlot {
  std::mutex mutex;
  bool done = false;
  std::shared_ptr<const BundleData> data;
  std::optional<Error> error;
};

/// What one (binary, device) pair loaded. Members are destroyed bottom-up:
/// the kernel index, then the modules (unloading), then the images they read.
struct DeviceState {
  std::vector<std::shared_ptr<const void>> images;  // EntryImage or TransformedImage
  std::vector<std::unique_ptr<LoadedModule>> modules;
  StringMap<const LoadedKernel*> kernels;
  /// Why each bundle without an entry for the device was skipped: a kernel
  /// missing later is most likely in one of them.
  std::vector<std::string> skipped;
  std::optional<Error> error;
};

struct DeviceSlot {
  std::mutex mutex;
  std::atomic<bool> ready{false};
  DeviceState state;  // written once under `mutex`, then read-only
};

struct Binary {
  std::string name;
  std::shared_ptr<const FatBinary> fat;
  std::vector<std::unique_ptr<BundleSlot>> bundles;
  std::vector<std::unique_ptr<DeviceSlot>> devices;  // destroyed first

  ~Binary() {
    // Modules before the bytes, whatever the member order says.
    devices.clear();
    bundles.clear();
  }
};

// "; 2 bundles have no code object for this device, e.g. <why>".
std::string skipped_note(const std::vector<std::string>& skipped) {
  if (skipped.empty()) return {};
  return "; " + std::to_string(skipped.size()) + (skipped.size() == 1 ? " bundle has" : " bundles have") +
         " no code object for this device, e.g. " + skipped.front();
}

}  // namespace

struct Registry::Impl {
  std::shared_ptr<Runtime> runtime;  // declared first: outlives every module
  Config config;
  ReadOptions read_options;
  std::shared_ptr<const HotswapRegistry> hotswap;  // never null
  std::optional<Error> hotswap_error;             // the registry could not be built: every load fails
  SelectOptions select_options;
  std::vector<Device> devices;

  std::mutex cache_mutex;
  std::unordered_map<std::string, std::weak_ptr<const BundleData>> compressed_cache;

  mutable std::shared_mutex binaries_mutex;
  std::unordered_map<std::uint64_t, std::shared_ptr<Binary>> binaries;
  std::uint64_t next_handle = 1;

  std::atomic<std::uint64_t> binaries_registered{0}, bundles_read{0}, bundles_decompressed{0},
      code_objects_read{0}, modules_loaded{0};

  Impl(std::shared_ptr<Runtime> rt, Config cfg, RegistryOptions options)
      : runtime(std::move(rt)),
        config(std::move(cfg)),
        read_options(config.read_options()),
        hotswap(std::move(options.hotswap)) {
    if (!hotswap && !config.hotswap) {
      // Only the same-ISA retarget can run: the built-in passes, no plugin.
      hotswap = std::shared_ptr<const HotswapRegistry>(std::shared_ptr<const void>(), &HotswapRegistry::builtin());
    } else if (!hotswap) {
      auto built = hotswap_registry(config);
      if (built) {
        hotswap = std::make_shared<const HotswapRegistry>(std::move(*built));
      } else {
        hotswap_error = std::move(built).error();
        hotswap = std::make_shared<const HotswapRegistry>();
      }
    }
    select_options = config.select_options(*hotswap);
    if (!runtime) return;
    for (const Device& device : runtime->devices()) {
      devices.push_back(device);
      config.apply(devices.back());
    }
  }

  ~Impl() {
    std::unique_lock lock(binaries_mutex);
    binaries.clear();  // every module unloads while the runtime is alive
  }

  Expected<BinaryHandle> add(Expected<FatBinary> fat, std::string name) {
    if (!fat) return std::move(fat).error();
    auto binary = std::make_shared<Binary>();
    binary->name = std::move(name);
    binary->fat = std::make_shared<const FatBinary>(std::move(*fat));
    for (std::size_t i = 0; i < binary->fat->bundles().size(); ++i) {
      binary->bundles.push_back(std::make_unique<BundleSlot>());
    }
    for (std::size_t i = 0; i < devices.size(); ++i) binary->devices.push_back(std::make_unique<DeviceSlot>());
    binaries_registered.fetch_add(1, std::memory_order_relaxed);
    std::unique_lock lock(binaries_mutex);
    BinaryHandle handle{next_handle++};
    binaries.emplace(handle.value, std::move(binary));
    return handle;
  }

  Expected<std::shared_ptr<Binary>> find(BinaryHandle handle) const {
    std::shared_lock lock(binaries_mutex);
    auto it = binaries.find(handle.value);
    if (it == binaries.end()) {
      return Error(ErrorKind::NotFound, "no fat binary is registered with handle " + std::to_string(handle.value));
    }
    return it->second;
  }

  /// Bundle `index` of `binary`, read once; a CCOB shared with other
  /// registrations of the same compressed bundle.
  Expected<std::shared_ptr<const BundleData>> bundle(Binary& binary, std::size_t index) {
    BundleSlot& slot = *binary.bundles[index];
    std::lock_guard lock(slot.mutex);
    if (!slot.done) {
      slot.done = true;
      const BundleInfo& info = binary.fat->bundles()[index];
      std::string key;
      if (info.format == BundleFormat::Compressed && info.compressed) {
        key = detail::hex(info.compressed->hash) + ":" + std::to_string(info.compressed->uncompressed_size);
        std::lock_guard cache_lock(cache_mutex);
        auto it = compressed_cache.find(key);
        if (it != compressed_cache.end()) slot.data = it->second.lock();
      }
      if (!slot.data) {
        auto read = binary.fat->read(index);
        bundles_read.fetch_add(1, std::memory_order_relaxed);
        if (!read) {
          slot.error = std::move(read).error();
        } else if (key.empty()) {
          slot.data = std::make_shared<const BundleData>(std::move(*read), binary.fat);
        } else {
          bundles_decompressed.fetch_add(1, std::memory_order_relaxed);
          auto data = std::make_shared<const BundleData>(std::move(*read), nullptr);
          std::lock_guard cache_lock(cache_mutex);
          std::erase_if(compressed_cache, [](const auto& item) { return item.second.expired(); });
          auto [it, inserted] = compressed_cache.try_emplace(key, data);
          if (!inserted) {
            if (auto existing = it->second.lock()) {
              data = std::move(existing);  // another registration decompressed it meanwhile
            } else {
              it->second = data;
            }
          }
          slot.data = std::move(data);
        }
      }
    }
    if (slot.error) return *slot.error;
    return slot.data;
  }

  /// The code object of `entry`, read once while any device uses it.
  Expected<std::shared_ptr<const EntryImage>> entry_image(const std::shared_ptr<const BundleData>& data,
                                                          const BundleEntry& entry) {
    std::lock_guard lock(data->entries_mutex);
    auto it = data->entries.find(entry.id);
    if (it != data->entries.end()) {
      if (auto image = it->second.lock()) return image;
    }
    code_objects_read.fetch_add(1, std::memory_order_relaxed);
    auto code_object = CodeObject::read(entry.bytes);
    if (!code_object) return std::move(code_object).error();
    auto image = std::make_shared<const EntryImage>(EntryImage{data, entry.bytes, std::move(*code_object)});
    data->entries.insert_or_assign(std::string(entry.id), image);
    return image;
  }

  /// Runs the pass for a Hotswap or Equivalent choice over `image` and
  /// reads and validates its output for `device`.
  Expected<std::shared_ptr<const TransformedImage>> transform(const std::shared_ptr<const EntryImage>& image,
                                                             Tier tier, const Device& device,
                                                             const std::string& entry_where) {
    const std::string target = device.str();
    const Processor* from = image->code_object.target().target.processor;
    const Processor* to = device.target.processor;
    if (!from || !to) {
      return Error(ErrorKind::InvalidArgument, entry_where + ": device " + target + ": no known processor to transform between");
    }
    // Hotswap goes through the passes this registry was given; the same-ISA
    // relabelling is always the built-in pass.
    const HotswapRegistry& passes = tier == Tier::Hotswap ? *hotswap : HotswapRegistry::builtin();
    const HotswapPass* pass = passes.find_pair(from->name, to->name);
    if (!pass) {
      return Error(ErrorKind::NotFound, entry_where + ": no hotswap pass is registered for " + std::string(from->name) +
                                            " -> " + std::string(to->name) + " (device " + target + ")");
    }
    const std::string where = "hotswap pass \"" + pass->name + "\" on " + entry_where + " for device " + target;
    if (pass->device_check) {
      if (auto checked = pass->device_check(device); !checked) return std::move(checked).error().with_context(where);
    }
    auto bytes = pass->transform(image->bytes, device);
    if (!bytes) return std::move(bytes).error().with_context(where);
    auto out = std::make_shared<TransformedImage>();
    out->source = image;
    out->bytes = std::move(*bytes);
    code_objects_read.fetch_add(1, std::memory_order_relaxed);
    auto read = CodeObject::read(out->bytes);
    if (!read) return std::move(read).error().with_context(where + ": output");
    if (!read->problems().empty()) {
      const Problem& problem = read->problems().front();
      return Error(problem.kind, where + ": output has " + std::to_string(read->problems().size()) +
                                     " problem(s), first: " + problem.message);
    }
    std::vector<Violation> violations = validate(*read, device);
    if (!violations.empty()) {
      return Error(violations.front().kind, where + ": output refused by the validator: " + violations.front().message +
                                                (violations.size() > 1
                                                     ? " (and " + std::to_string(violations.size() - 1) + " more)"
                                                     : std::string()));
    }
    out->code_object = std::move(*read);
    return std::shared_ptr<const TransformedImage>(std::move(out));
  }

  /// Selects, reads and loads every bundle of `binary` that fits device
  /// `index` into `state`; on failure, nothing stays loaded and the error is kept.
  void load(Binary& binary, std::size_t index, DeviceState& state) {
    auto result = load_modules(binary, index, state);
    if (!result) {
      state.kernels.clear();
      state.modules.clear();  // unload before releasing the images
      state.images.clear();
      state.error = std::move(result).error();
      return;
    }
    for (const auto& module : state.modules) {
      for (const LoadedKernel& kernel : module->kernels()) state.kernels.try_emplace(kernel.name, &kernel);
    }
  }

  Expected<void> load_modules(Binary& binary, std::size_t index, DeviceState& state) {
    const Device& device = devices[index];
    if (hotswap_error) return hotswap_error->with_context(binary.name + ": device " + device.str());
    const std::size_t count = binary.fat->bundles().size();
    std::optional<Selection> first_miss;
    std::size_t first_miss_index = 0;
    for (std::size_t i = 0; i < count; ++i) {
      const std::string where = binary.name + ": bundle " + std::to_string(i);
      auto data = bundle(binary, i);
      if (!data) return data.error().with_context(where);
      auto selection = select_in_bundle(device, (*data)->bundle, select_options);
      if (!selection) return selection.error().with_context(where);
      const Candidate* chosen = selection->chosen();
      if (!chosen) {
        state.skipped.push_back(no_fit_error(device, *selection).with_context(where).message());
        if (!first_miss) {
          first_miss = std::move(*selection);
          first_miss_index = i;
        }
        continue;
      }
      const BundleEntry& entry = (*data)->bundle.entries()[chosen->entry_index];
      const std::string entry_where = where + " entry " + std::to_string(chosen->entry_index) + " (" + chosen->id + ")";
      auto image = entry_image(*data, entry);
      if (!image) return image.error().with_context(entry_where);
      if (chosen->tier == Tier::Hotswap || chosen->tier == Tier::Equivalent) {
        auto transformed = transform(*image, *chosen->tier, device, entry_where);
        if (!transformed) return std::move(transformed).error();
        const TransformedImage& out = **transformed;
        auto module = runtime->load(index, Image{out.bytes, *transformed}, *out.code_object);
        if (!module) return module.error().with_context(entry_where + " (transformed for " + device.str() + ")");
        modules_loaded.fetch_add(1, std::memory_order_relaxed);
        state.images.push_back(std::move(*transformed));
        state.modules.push_back(std::move(*module));
        continue;
      }
      auto module = runtime->load(index, Image{(*image)->bytes, *image}, (*image)->code_object);
      if (!module) return module.error().with_context(entry_where);
      modules_loaded.fetch_add(1, std::memory_order_relaxed);
      state.images.push_back(std::move(*image));
      state.modules.push_back(std::move(*module));
    }
    if (!state.modules.empty()) return {};
    if (!first_miss) return Error(ErrorKind::NotFound, binary.name + ": holds no bundle");
    std::string where = binary.name + ": bundle " + std::to_string(first_miss_index);
    if (count > 1) where = binary.name + ": none of its " + std::to_string(count) + " bundles fits; bundle " +
                                 std::to_string(first_miss_index);
    return no_fit_error(device, *first_miss).with_context(where);
  }

  /// The loaded state of (binary, device), built on first use.
  Expected<const DeviceState*> state(BinaryHandle handle, std::size_t device, std::shared_ptr<Binary>& binary) {
    auto found = find(handle);
    if (!found) return std::move(found).error();
    binary = std::move(*found);
    if (device >= devices.size()) {
      return Error(ErrorKind::InvalidArgument, "device " + std::to_string(device) + " out of range: runtime " +
                                                   std::string(runtime->name()) + " has " +
                                                   std::to_string(devices.size()) + " devices");
    }
    DeviceSlot& slot = *binary->devices[device];
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
  return impl_->add(FatBinary::open(path, impl_->read_options), path);
}

Expected<BinaryHandle> Registry::register_memory(std::span<const std::byte> bytes, std::string name) {
  auto fat = FatBinary::from_memory(bytes, name, impl_->read_options);
  return impl_->add(std::move(fat), std::move(name));
}

Expected<void> Registry::unregister(BinaryHandle binary) {
  std::shared_ptr<Binary> removed;
  {
    std::unique_lock lock(impl_->binaries_mutex);
    auto it = impl_->binaries.find(binary.value);
    if (it == impl_->binaries.end()) {
      return Error(ErrorKind::NotFound, "no fat binary is registered with handle " + std::to_string(binary.value));
    }
    removed = std::move(it->second);
    impl_->binaries.erase(it);
  }
  // Released outside the lock: unloading may take a while. A lookup still
  // running on this binary holds its own reference and finishes first.
  removed.reset();
  return {};
}

Expected<const LoadedKernel*> Registry::lookup_kernel(BinaryHandle binary, std::size_t device,
                                                      std::string_view kernel) {
  std::shared_ptr<Binary> held;
  auto state = impl_->state(binary, device, held);
  if (!state) return std::move(state).error();
  auto it = (*state)->kernels.find(kernel);
  if (it == (*state)->kernels.end()) {
    return Error(ErrorKind::NotFound, "kernel \"" + std::string(kernel) + "\" not found in " + held->name +
                                          " for device " + std::to_string(device) + " (" +
                                          impl_->devices[device].str() + "; " +
                                          std::to_string((*state)->kernels.size()) + " kernels loaded)" +
                                          skipped_note((*state)->skipped));
  }
  return it->second;
}

Expected<std::vector<const LoadedModule*>> Registry::modules(BinaryHandle binary, std::size_t device) {
  std::shared_ptr<Binary> held;
  auto state = impl_->state(binary, device, held);
  if (!state) return std::move(state).error();
  std::vector<const LoadedModule*> modules;
  for (const auto& module : (*state)->modules) modules.push_back(module.get());
  return modules;
}

Expected<std::string> Registry::binary_name(BinaryHandle binary) const {
  auto found = impl_->find(binary);
  if (!found) return std::move(found).error();
  return (*found)->name;
}

RegistryStats Registry::stats() const {
  const auto get = [](const std::atomic<std::uint64_t>& counter) { return counter.load(std::memory_order_relaxed); };
  return RegistryStats{get(impl_->binaries_registered), get(impl_->bundles_read), get(impl_->bundles_decompressed),
                       get(impl_->code_objects_read), get(impl_->modules_loaded)};
}

}  // namespace coload
