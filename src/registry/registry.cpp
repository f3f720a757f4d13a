// The lazy, thread-safe registry of fat binaries (coload/registry.h):
// handles, device slots and the kernel index. A (binary, device) pair loads
// once, in device_load.cpp (the pipeline through the registry's ImageCache,
// image_cache.cpp); host stubs are host_stubs.h's.
//
//   Registry::Impl  the runtime, the devices, the handle -> Binary map
//                   (shared_mutex: lookups share it, register/unregister own
//                   it) and the host stubs; Binary and DeviceSlot are in
//                   binary_state.h.
#include "coload/registry.h"

#include <future>
#include <mutex>
#include <numeric>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "coload/detail/registry_copies.h"
#include "coload/detail/wrapper.h"
#include "coload/fat_binary.h"
#include "coload/pipeline.h"
#include "coload/validate.h"
#include "common/bytes.h"
#include "common/try.h"
#include "registry/binary_state.h"
#include "registry/device_load.h"
#include "registry/host_stubs.h"
#include "registry/registry_state.h"

namespace coload {
namespace {

using registry::Binary;
using registry::DeviceSlot;
using registry::DeviceState;

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
  StreamOptions stream_options;
  ChooseOptions choose_options;  // select, stream and RegistryOptions::decode_threads
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
    choose_options.threads = options.decode_threads;  // 0: the pipeline's decode_threads decides
    hotswap = registry::hotswap_passes(config, std::move(hotswap), log, hotswap_error);
    choose_options.select = coload::select_options(config, *hotswap);
    choose_options.stream = stream_options;
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
    COLOAD_RETURN_IF_ERROR(fat);
    auto binary = std::make_shared<Binary>();
    binary->name = std::move(name);
    binary->copy_entries = copy_entries;
    binary->set_opened(std::move(*fat));
    return add(std::move(binary));
  }

  /// A wrapper's registration: `reach` (wrapper_reach) is opened at first use.
  Expected<BinaryHandle> add_wrapper(const void* wrapper, std::span<const std::byte> reach, std::string name,
                                     std::optional<std::uint32_t> kpack_index = std::nullopt) {
    auto binary = std::make_shared<Binary>();
    binary->name = std::move(name);
    binary->wrapper = wrapper;
    binary->reach = reach;
    binary->kpack_index = kpack_index;
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
    if (it == binaries.end()) return unknown_binary(handle);
    return it->second;
  }

  registry::LoadContext load_context() {
    return {*runtime, devices,  *hotswap, hotswap_error, choose_options, read_options.max_decompressed_bytes,
            images,   counters, log};
  }

  /// The kernel `host_stub` stands for on `device`, valid while `binary` is
  /// held: of the binaries that registered it, the one whose module fits the
  /// device best (fit_rank), the first registration on a tie. A binary with
  /// no code for the device is passed over; its error is the answer only
  /// when none resolves. `generation` is the stub record's, for remember().
  Expected<const DeviceState::KernelSlot*> resolve(const void* host_stub, std::size_t device,
                                                   std::shared_ptr<Binary>& binary, std::uint64_t& generation) {
    auto stub = stubs->find(host_stub);
    COLOAD_RETURN_IF_ERROR(stub);
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
    COLOAD_RETURN_IF_ERROR(state);
    auto it = (*state)->kernels.find(name);
    if (it != (*state)->kernels.end()) return &it->second;
    return Error(ErrorKind::NotFound, "kernel \"" + std::string(name) + "\" not found in " + binary->name +
                                          " for device " + std::to_string(device) + " (" + devices[device].str() +
                                          "; " + std::to_string((*state)->kernels.size()) + " kernels loaded)" +
                                          (*state)->skipped_note());
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
    COLOAD_RETURN_IF_ERROR(found);
    binary = std::move(*found);
    if (device >= devices.size()) return device_out_of_range(device);
    COLOAD_RETURN_IF_ERROR(binary->open(read_options, log));
    DeviceSlot& slot = binary->devices[device];
    if (!slot.ready.load(std::memory_order_acquire)) {
      std::lock_guard lock(slot.mutex);
      if (!slot.ready.load(std::memory_order_relaxed)) {
        // A HIPK wrapper's code object is checked against the kernels it registered.
        const std::vector<std::string> registered =
            binary->kpack_index ? stubs->kernels_of(handle) : std::vector<std::string>();
        registry::load_device(load_context(), *binary, device, slot.state, registered);
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
  COLOAD_RETURN_IF_ERROR(fat);
  std::string named = fat->name();
  return impl_->add(std::move(fat), std::move(named), true);
}

Expected<BinaryHandle> Registry::register_directory(const std::string& path, const DirectoryScan& scan) {
  return impl_->add(FatBinary::open_directory(path, scan, impl_->read_options), path, true);
}

Expected<BinaryHandle> Registry::register_wrapper(const void* wrapper, std::string name) {
  auto record = read_wrapper_record(wrapper);
  COLOAD_RETURN_IF_ERROR(record);
  if (name.empty()) name = "__hip_fatbin_wrapper at " + detail::hex(reinterpret_cast<std::uintptr_t>(wrapper));
  if (record->kpack()) {  // its image and archives are found at first use
    return impl_->add_wrapper(wrapper, {}, std::move(name), static_cast<std::uint32_t>(record->reserved));
  }
  auto reach = wrapper_reach(wrapper, *record);
  COLOAD_RETURN_IF_ERROR(reach);
  return impl_->add_wrapper(wrapper, *reach, std::move(name));
}

Expected<void> Registry::unregister(BinaryHandle binary) {
  std::shared_ptr<Binary> removed;
  {
    std::unique_lock lock(impl_->binaries_mutex);
    auto it = impl_->binaries.find(binary.value);
    if (it == impl_->binaries.end()) return unknown_binary(binary);
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
  COLOAD_RETURN_IF_ERROR(found);
  return (*found)->loaded;
}

Expected<void> Registry::register_function(BinaryHandle binary, const void* host_stub, std::string kernel) {
  if (!host_stub) return Error(ErrorKind::InvalidArgument, "register_function: the host stub is null");
  if (kernel.empty()) return Error(ErrorKind::InvalidArgument, "register_function: the kernel name is empty");
  // The binary stays registered while its stub is added: unregister erases
  // the binary first and its stubs after, so no stub outlives its binary.
  std::shared_lock binaries_lock(impl_->binaries_mutex);
  if (!impl_->binaries.contains(binary.value)) return unknown_binary(binary);
  return impl_->stubs->add(host_stub, binary, kernel);
}

Expected<const LoadedKernel*> Registry::lookup_function(const void* host_stub, std::size_t device) {
  const LoadedKernel* before = nullptr;
  if (impl_->stubs->found_before(host_stub, device, [&](const LoadedKernel& kernel) { before = &kernel; }))
    return before;
  std::shared_ptr<Binary> held;
  std::uint64_t generation = 0;
  auto found = impl_->resolve(host_stub, device, held, generation);
  COLOAD_RETURN_IF_ERROR(found);
  impl_->stubs->remember(host_stub, generation, device, (*found)->loaded);
  return (*found)->loaded;
}

Expected<void> Registry::check_function_dispatch(const void* host_stub, std::size_t device, const Dispatch& dispatch) {
  std::shared_ptr<Binary> held;
  std::uint64_t generation = 0;
  auto found = impl_->resolve(host_stub, device, held, generation);
  COLOAD_RETURN_IF_ERROR(found);
  return impl_->check_dispatch(**found, *held, device, dispatch);
}

Expected<void> Registry::check_dispatch(BinaryHandle binary, std::size_t device, std::string_view kernel,
                                        const Dispatch& dispatch) {
  std::shared_ptr<Binary> held;
  auto found = impl_->kernel(binary, device, kernel, held);
  COLOAD_RETURN_IF_ERROR(found);
  return impl_->check_dispatch(**found, *held, device, dispatch);
}

Expected<LoadedGlobal> Registry::lookup_global(BinaryHandle binary, std::size_t device, std::string_view name) {
  std::shared_ptr<Binary> held;  // asked while held: an unregister on another thread waits for it
  auto state = impl_->state(binary, device, held);
  COLOAD_RETURN_IF_ERROR(state);
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
                                        (*state)->skipped_note());
}

Expected<std::vector<const LoadedModule*>> Registry::modules(BinaryHandle binary, std::size_t device) {
  std::shared_ptr<Binary> held;
  auto state = impl_->state(binary, device, held);
  COLOAD_RETURN_IF_ERROR(state);
  std::vector<const LoadedModule*> modules;
  for (const auto& module : (*state)->modules) modules.push_back(module.get());
  return modules;
}

Expected<std::vector<std::string>> Registry::module_files(BinaryHandle binary, std::size_t device) {
  std::shared_ptr<Binary> held;
  auto state = impl_->state(binary, device, held);
  COLOAD_RETURN_IF_ERROR(state);
  std::vector<std::string> files;
  for (const DeviceState::Origin& origin : (*state)->origins) files.push_back(origin.file);
  return files;
}

Expected<void> Registry::choose(BinaryHandle binary, std::size_t device, const ChoiceTaker& take) {
  auto found = impl_->find(binary);
  COLOAD_RETURN_IF_ERROR(found);
  const Binary& held = **found;
  if (device >= impl_->devices.size()) return impl_->device_out_of_range(device);
  COLOAD_RETURN_IF_ERROR((*found)->open(impl_->read_options, impl_->log));
  if (impl_->hotswap_error) return impl_->hotswap_error->with_context(held.name);
  std::vector<std::size_t> every(held.fat->bundles().size());
  std::iota(every.begin(), every.end(), std::size_t{0});
  choose_in_binary(*held.fat, every, impl_->devices[device], impl_->choose_options, take);
  return {};
}

Expected<LoadedKernel> detail::RegistryCopies::kernel(Registry& registry, BinaryHandle binary, std::size_t device,
                                                      std::string_view kernel) {
  std::shared_ptr<Binary> held;  // copied while held: an unregister on another thread waits for it
  auto found = registry.impl_->kernel(binary, device, kernel, held);
  COLOAD_RETURN_IF_ERROR(found);
  return *(*found)->loaded;
}

Expected<LoadedKernel> detail::RegistryCopies::function(Registry& registry, const void* host_stub, std::size_t device) {
  LoadedKernel copy;  // copied under the stubs' lock: an unregister waits for it before freeing the kernel
  if (registry.impl_->stubs->found_before(host_stub, device, [&](const LoadedKernel& kernel) { copy = kernel; }))
    return copy;
  std::shared_ptr<Binary> held;  // copied while held, as RegistryCopies::kernel
  std::uint64_t generation = 0;
  auto found = registry.impl_->resolve(host_stub, device, held, generation);
  COLOAD_RETURN_IF_ERROR(found);
  registry.impl_->stubs->remember(host_stub, generation, device, (*found)->loaded);
  return *(*found)->loaded;
}

Expected<std::string> Registry::binary_name(BinaryHandle binary) const {
  auto found = impl_->find(binary);
  COLOAD_RETURN_IF_ERROR(found);
  return (*found)->name;
}

RegistryStats Registry::stats() const { return impl_->counters.stats(); }

}  // namespace coload
