// One process's preload (session.h).
#include "preload/session.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <exception>

#include "coload/detail/gpu_topology.h"
#include "coload/detail/hotswap.h"
#include "coload/detail/wrapper.h"
#include "load/hip_library.h"
#include "load/loaded_library.h"

namespace coload::preload {

namespace {

/// A base name's version after ".so.": "libamdhip64.so.6.2.41133" → {6, 2}.
std::optional<int> minor_in_name(std::string_view name) {
  const std::size_t so = name.rfind(".so.");
  if (so == std::string_view::npos) return std::nullopt;
  std::string_view version = name.substr(so + 4);
  const std::size_t dot = version.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  std::string_view minor = version.substr(dot + 1, version.find('.', dot + 1) - dot - 1);
  if (minor.empty() || minor.size() > 3 || minor.find_first_not_of("0123456789") != std::string_view::npos)
    return std::nullopt;
  return std::stoi(std::string(minor));
}

/// Devices from a COLOAD_DEVICES list ("gfx90a,gfx1031:xnack-").
Expected<std::vector<Device>> listed_devices(std::string_view specs) {
  std::vector<Device> devices;
  while (!specs.empty()) {
    const std::size_t comma = specs.find(',');
    const std::string_view spec = specs.substr(0, comma);
    if (!spec.empty()) {
      auto device = device_from_spec(spec);
      if (!device) {
        return Error(ErrorKind::InvalidArgument,
                     "COLOAD_DEVICES \"" + std::string(spec) + "\": " + device.error().message());
      }
      devices.push_back(std::move(*device));
    }
    if (comma == std::string_view::npos) break;
    specs.remove_prefix(comma + 1);
  }
  if (devices.empty()) return Error(ErrorKind::InvalidArgument, "COLOAD_DEVICES lists no device");
  return devices;
}

/// The release's rules on a device (docs/loading.md, "HIP releases"). An
/// unknown minor of major 6 loads v4 to v6 and no generics: a generic choice
/// is then relabelled for the device, which every release from 6.2 loads.
void apply_release(const HipRelease& release, Device& device) {
  if (release.major == 0) return;
  const int minor = release.minor.value_or(release.major == 6 ? 2 : 0);
  const int version = release.major * 10000000 + minor * 100000;
  device.code_object_versions = hip::code_object_versions_of(version);
  device.loads_generic = release.minor ? hip::loads_generic(version) : release.major > 6;
  device.runtime_release = release.name();
}

}  // namespace

std::string HipRelease::name() const {
  if (major == 0) return "an unknown HIP release";
  std::string text = "HIP " + std::to_string(major);
  if (minor) text += "." + std::to_string(*minor);
  return file.empty() ? text : text + " (" + std::string(detail::base_name(file)) + ")";
}

HipRelease release_of(const void* symbol) {
  Dl_info info{};
  if (!symbol || ::dladdr(symbol, &info) == 0 || !info.dli_fname) return {};
  HipRelease release = release_of_file(info.dli_fname);
  if (void* handle = ::dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD)) {
    // A wheel's library has no version in its file name (torch/lib/libamdhip64.so):
    // its SONAME (libamdhip64.so.6) still gives the major, as the HIP backend reads it.
    if (auto loaded = detail::loaded_library_of(handle); release.major == 0 && loaded && loaded->soname) {
      release.major = loaded->major.value_or(0);
    }
    release.links_kpack = ::dlsym(handle, "kpack_load_code_object") != nullptr;
    ::dlclose(handle);
  }
  return release;
}

HipRelease release_of_file(const std::string& path) {
  HipRelease release;
  release.file = path;
  if (char* real = ::realpath(path.c_str(), nullptr)) {
    release.file = real;
    std::free(real);
  }
  const std::string_view base = detail::base_name(release.file);
  release.major = detail::major_in_name(base).value_or(0);
  if (release.major != 0) release.minor = minor_in_name(base);
  return release;
}

SessionSettings read_settings(const Config::Lookup& lookup, const HipRelease& release) {
  SessionSettings settings;
  auto config = Config::from_variables(lookup);
  if (!config) {
    settings.inactive = config.error().message();
    return settings;
  }
  settings.config = std::move(*config);
  if (auto level = lookup("COLOAD_LOG"); level && !level->empty()) settings.log = settings.config.log_level;
  if (auto specs = lookup("COLOAD_DEVICES"); specs && !specs->empty()) {
    auto devices = listed_devices(*specs);
    if (!devices) {
      settings.inactive = devices.error().message();
      return settings;
    }
    settings.devices = std::move(*devices);
    settings.devices_from = "COLOAD_DEVICES";
  } else {
    detail::TopologyOptions topology;
    if (auto root = lookup("COLOAD_KFD_TOPOLOGY"); root && !root->empty()) {
      // A fake tree (tests): its render nodes are not this machine's, and its KFD neither.
      topology.root = *root;
      topology.render_nodes = *root + "/dri";
    } else {
      topology.kfd_xnack_mode = [] { return detail::query_kfd_xnack_mode(); };
    }
    topology.environment = lookup;
    auto gpus = detail::topology_gpus(topology);
    if (!gpus) {
      settings.inactive = "the GPUs cannot be read from the KFD topology: " + gpus.error().message();
      return settings;
    }
    if (gpus->empty()) {
      settings.inactive = "the KFD topology at " + topology.root + " lists no GPU this process may use";
      return settings;
    }
    for (detail::TopologyGpu& gpu : *gpus) settings.devices.push_back(std::move(gpu.device));
    settings.devices_from = topology.root;
  }
  for (Device& device : settings.devices) {
    settings.config.apply(device);
    apply_release(release, device);
  }
  if (settings.config.hotswap) {
    auto passes = hotswap_registry(settings.config);
    if (!passes) {
      settings.inactive = passes.error().message();
      return settings;
    }
    settings.hotswap = std::make_shared<const HotswapRegistry>(std::move(*passes));
  } else {
    settings.hotswap =
        std::shared_ptr<const HotswapRegistry>(std::shared_ptr<const void>(), &HotswapRegistry::builtin());
  }
  settings.plan.devices = settings.devices;
  settings.plan.hotswap = settings.hotswap.get();
  settings.plan.select = select_options(settings.config, *settings.hotswap);
  settings.plan.stream = settings.config.stream_options();
  settings.plan.read = settings.config.read_options();
  // CLR's kpack loader turns itself off when ROCM_KPACK_DISABLE is a non-zero number (atoi).
  const std::optional<std::string> kpack_disabled = lookup("ROCM_KPACK_DISABLE");
  settings.plan.runtime_loads_kpack =
      release.links_kpack && !(kpack_disabled && std::atoi(kpack_disabled->c_str()) != 0);
  return settings;
}

/// A bundle handed to the runtime and the HIPF record pointing at it, in one
/// anonymous page-aligned mapping: [record, padding to a page][bundle].
struct Session::Handed {
  void* base = MAP_FAILED;
  std::size_t length = 0;
  const void* record() const { return base; }
  ~Handed() {
    if (base != MAP_FAILED) ::munmap(base, length);
  }
};

Session::Session(SessionSettings settings)
    : settings_(std::move(settings)), tables_(settings_.plan.read.verified_cache) {
  settings_.plan.devices = settings_.devices;  // the copy's own devices
  settings_.plan.hotswap = settings_.hotswap.get();
  screens_.resize(settings_.devices.size());
}

Session::~Session() = default;

Session& Session::process(const void* next) {
  // Made once and never destroyed: a library's destructor may unregister after exit() began.
  static Session* const session = new Session(read_settings(Config::environment_variable, release_of(next)));
  return *session;
}

void Session::log(LogLevel level, const std::string& text) const {
  if (level != LogLevel::Error && level > settings_.log) return;
  const std::string line = "coload: " + text + "\n";
  [[maybe_unused]] ssize_t written = ::write(STDERR_FILENO, line.data(), line.size());
}

bool Session::passes_on_its_ids(const void* wrapper, std::string& binary, std::size_t& index) {
  // The common case, a library the runtime serves itself, decided from the
  // table's IDs without a system call: the record and the table are read in
  // place, within the readable segments of the loaded object that holds them
  // (docs/preload.md, "What it reads, and how"). Anything else is planned in
  // full, and so is the first wrapper of a binary a GPU has nothing in (its line).
  std::lock_guard lock(mutex_);
  const LoadedObject* object = objects_.holding(wrapper);
  // Not in a file-backed segment (a record in .bss, or on the heap): dladdr may still name its object.
  Dl_info info{};
  const bool named = !object && ::dladdr(wrapper, &info) != 0 && info.dli_fname && info.dli_fname[0];
  Seen& seen = wrappers_seen_[object ? object->base : named ? reinterpret_cast<std::uintptr_t>(info.dli_fbase) : 0];
  if (seen.name.empty())
    seen.name = object ? object->name : named ? info.dli_fname : "memory outside the loaded objects";
  index = seen.count++;
  // Nothing is allocated on the way to `true`: the name is copied out only for a plan.
  if (screen_passes(object, wrapper, seen.name)) return true;
  binary = seen.name;
  return false;
}

bool Session::screen_passes(const LoadedObject* object, const void* wrapper, std::string_view binary) {
  if (!object) return false;
  const std::span<const std::byte> record = object->bytes_at(wrapper, kHipFatbinWrapperSize);
  if (record.size() < kHipFatbinWrapperSize) return false;
  std::uint32_t magic = 0, version = 0;
  const void* image = nullptr;
  std::memcpy(&magic, record.data(), sizeof magic);
  std::memcpy(&version, record.data() + 4, sizeof version);
  std::memcpy(&image, record.data() + kHipFatbinWrapperBinaryAt, sizeof image);
  if (version != kHipFatbinWrapperVersion) return false;
  // A HIPK record goes to a runtime that loads kpack archives as it came when
  // coload could offer no GPU more than that runtime's own lookup finds.
  if (magic == kHipKpackWrapperMagic) return kpack_needs_nothing(settings_.plan);
  if (magic != kHipFatbinWrapperMagic) return false;
  const std::span<IdScreen> screens = screens_;
  if (!screen_table(object->bytes_at(image, kScreenedBytes), settings_.plan, screens) &&
      !screen_compressed(*object, image, screens)) {
    return false;
  }
  for (std::size_t gpu = 0; gpu < screens.size(); ++gpu) {
    if (screens[gpu] == IdScreen::Related) return false;
    if (screens[gpu] == IdScreen::Nothing &&
        (settings_.log >= LogLevel::Info || !told_no_fit_.contains(NoFitKey{binary, gpu}))) {
      return false;
    }
  }
  return true;
}

bool Session::screen_compressed(const LoadedObject& object, const void* image, std::span<IdScreen> out) {
  const std::span<const std::byte> ccob = object.bytes_at(image, SIZE_MAX);
  const bool checked = settings_.plan.stream.hash == StreamOptions::HashCheck::Verify;
  if (const std::vector<std::string>* kept = tables_.find(object, image, ccob, checked)) {
    screen_ids(*kept, settings_.plan, out);
    return true;
  }
  std::optional<std::vector<std::string>> ids = compressed_table_ids(ccob, settings_.plan);
  if (!ids) return false;
  tables_.keep(object, image, ccob, checked, *ids);
  screen_ids(*ids, settings_.plan, out);
  return true;
}

void Session::report(const std::string& binary, std::size_t index, const WrapperPlan& plan,
                     std::size_t first_gpu) const {
  const std::string wrapper = binary + ": wrapper " + std::to_string(index);
  if (!plan.unreadable.empty()) {
    log(LogLevel::Warn, wrapper + " is passed on unchanged: " + plan.unreadable);
    return;
  }
  for (std::size_t gpu = first_gpu; gpu < first_gpu + plan.gpus.size(); ++gpu) {
    const GpuDecision& decision = plan.gpus[gpu - first_gpu];
    const std::string on = wrapper + ": GPU " + std::to_string(gpu) + " (" + settings_.devices[gpu].str() + ")";
    switch (decision.outcome) {
      case Outcome::NoFit: {
        // One line per binary and GPU by default; each further wrapper at info.
        bool first = false;
        {
          std::lock_guard lock(mutex_);
          first = told_no_fit_.insert({binary, gpu}).second;
        }
        log(first ? LogLevel::Error : LogLevel::Info,
            on + " has no code object: " + decision.why + (first ? " (further wrappers without one: --log info)" : ""));
        break;
      }
      case Outcome::RuntimeFinds:
        log(LogLevel::Debug, on + ": the runtime finds " + decision.source_id + " itself");
        break;
      case Outcome::Rewritten:
        log(LogLevel::Info, on + ": " + std::string(to_string(*decision.tier)) + " " + decision.source_id + " as " +
                                decision.written_id);
        break;
    }
  }
}

void** Session::register_fat_binary(const void* wrapper, RegisterFatBinary next) noexcept {
  std::unique_ptr<Handed> handed;
  if (!settings_.inactive.empty()) {
    std::call_once(told_inactive_,
                   [&] { log(LogLevel::Warn, "every wrapper is passed on unchanged: " + settings_.inactive); });
  } else {
    try {
      std::string binary;
      std::size_t index = 0;
      if (passes_on_its_ids(wrapper, binary, index)) return next(wrapper);
      const WrapperPlan plan = plan_wrapper(wrapper, binary + ": wrapper " + std::to_string(index), settings_.plan);
      report(binary, index, plan);
      if (!plan.bundle.empty()) {
        const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
        handed = hand(plan.bundle, page);
        if (!handed) {
          log(LogLevel::Warn,
              binary + ": wrapper " + std::to_string(index) + " is passed on unchanged: no memory for its bundle");
        } else {
          auto* bytes = static_cast<std::byte*>(handed->base);
          const std::uint32_t magic = kHipFatbinWrapperMagic, version = kHipFatbinWrapperVersion;
          const void* bundle = bytes + page;
          std::memcpy(bytes, &magic, sizeof magic);
          std::memcpy(bytes + 4, &version, sizeof version);
          std::memcpy(bytes + kHipFatbinWrapperBinaryAt, &bundle, sizeof bundle);
        }
      }
    } catch (const std::exception& error) {
      log(LogLevel::Warn, "a wrapper is passed on unchanged: internal error: " + std::string(error.what()));
      handed.reset();
    }
  }
  void** handle = next(handed ? handed->record() : wrapper);
  if (handed && handle) {
    try {
      std::lock_guard lock(mutex_);
      handed_[handle] = std::move(handed);
    } catch (const std::exception&) {
      // Not kept: the bundle stays mapped for the process's life rather than freed under the runtime.
      (void)handed.release();
    }
  }
  return handle;
}

void Session::unregister_fat_binary(void** handle, UnregisterFatBinary next) noexcept {
  next(handle);
  std::unique_ptr<Handed> freed;
  std::lock_guard lock(mutex_);
  objects_.forget();
  tables_.forget();
  if (auto found = handed_.find(handle); found != handed_.end()) {
    freed = std::move(found->second);
    handed_.erase(found);
  }
}

std::unique_ptr<Session::Handed> Session::hand(const std::vector<std::byte>& bundle, std::size_t offset) {
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  auto made = std::make_unique<Handed>();
  made->length = offset + (bundle.size() + page - 1) / page * page;
  made->base = ::mmap(nullptr, made->length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (made->base == MAP_FAILED) return nullptr;
  std::memcpy(static_cast<std::byte*>(made->base) + offset, bundle.data(), bundle.size());
  return made;
}

int Session::load_module(void** module, const void* image, const LoadImage& load, GetDevice get_device) noexcept {
  std::unique_ptr<Handed> handed;
  if (settings_.inactive.empty()) {
    try {
      int ordinal = -1;
      std::size_t index = 0;
      {
        std::lock_guard lock(mutex_);
        index = modules_seen_++;
      }
      const std::string name = "hipModuleLoadData image " + std::to_string(index);
      if (!get_device || get_device(&ordinal) != 0 || ordinal < 0 ||
          static_cast<std::size_t>(ordinal) >= settings_.devices.size()) {
        log(LogLevel::Warn, name + " is passed on unchanged: HIP's current device " + std::to_string(ordinal) +
                                " is none of the " + std::to_string(settings_.devices.size()) + " GPUs coload knows");
      } else {
        PlanOptions one = settings_.plan;
        one.devices = std::span<const Device>(settings_.devices).subspan(static_cast<std::size_t>(ordinal), 1);
        const WrapperPlan plan = plan_image(image, name, one);
        report("the program", index, plan, static_cast<std::size_t>(ordinal));
        if (!plan.bundle.empty()) handed = hand(plan.bundle, 0);
      }
    } catch (const std::exception& error) {
      log(LogLevel::Warn, "a module image is passed on unchanged: internal error: " + std::string(error.what()));
      handed.reset();
    }
  }
  const int status = load(handed ? handed->base : image);
  if (handed && status == 0 && module && *module) {
    try {
      std::lock_guard lock(mutex_);
      modules_[*module] = std::move(handed);
    } catch (const std::exception&) {
      (void)handed.release();  // kept mapped rather than freed under the runtime
    }
  }
  return status;
}

int Session::unload_module(void* module, const std::function<int(void*)>& unload) noexcept {
  const int status = unload(module);
  std::unique_ptr<Handed> freed;
  std::lock_guard lock(mutex_);
  if (auto found = modules_.find(module); found != modules_.end()) {
    freed = std::move(found->second);
    modules_.erase(found);
  }
  return status;
}

std::string Session::describe(const std::string& binary, std::size_t index, const WrapperPlan& plan,
                              std::span<const Device> devices) {
  const std::string wrapper = binary + ": wrapper " + std::to_string(index);
  if (!plan.unreadable.empty()) return wrapper + ": passed on unchanged: " + plan.unreadable + "\n";
  std::string text;
  for (std::size_t gpu = 0; gpu < plan.gpus.size() && gpu < devices.size(); ++gpu) {
    const GpuDecision& decision = plan.gpus[gpu];
    text += wrapper + ": GPU " + std::to_string(gpu) + " (" + devices[gpu].str() + "): ";
    switch (decision.outcome) {
      case Outcome::RuntimeFinds: text += "the runtime finds " + decision.source_id + "\n"; break;
      case Outcome::Rewritten:
        text += std::string(to_string(*decision.tier)) + " " + decision.source_id + " as " + decision.written_id + "\n";
        break;
      case Outcome::NoFit: text += "no code object: " + decision.why + "\n"; break;
    }
  }
  return text;
}

std::size_t Session::kept() const {
  std::lock_guard lock(mutex_);
  return handed_.size();
}

}  // namespace coload::preload
