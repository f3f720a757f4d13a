// The lazy, thread-safe registry of fat binaries (coload/registry.h).
//
// Structure, outermost first:
//   Registry::Impl   the runtime, the devices, the handle → Binary map
//                    (shared_mutex: lookups share it, register/unregister own it)
//                    and the cache of streamed CCOBs (weak, by hash + size).
//   Binary           one registration: its FatBinary, one BundleSlot per
//                    bundle and one DeviceSlot per device.
//   BundleSlot       the bundle's BundleData, made once (mutex).
//   BundleData       what selection needs of a bundle, plus the code objects
//                    read from its entries (weak, by entry ID), shared by
//                    devices (and, for a CCOB, by registrations). A plain
//                    bundle's entries view the mapped source. A CCOB keeps
//                    only its entries' heads (table fields + ELF header); the
//                    entry a device chooses is decompressed alone, by a
//                    streamed selection, and kept in its EntryImage.
//   DeviceSlot       the modules loaded for one (binary, device): built once
//                    under its own mutex, then read lock-free behind an
//                    acquire/release flag.
// Destruction releases modules (DeviceSlot) before the code objects and bytes
// they came from (EntryImage → BundleData → FatBinary).
#include "coload/registry.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <exception>
#include <functional>
#include <future>
#include <mutex>
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
#include "coload/select.h"
#include "coload/stream_select.h"
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
  std::shared_ptr<const BundleData> bundle;  // a plain bundle's entries view its source
  std::vector<std::byte> decoded;            // a CCOB entry, decompressed for itself
  std::span<const std::byte> bytes;          // the entry: in the source, or `decoded`
  CodeObject code_object;
};

/// A pass's output for one device (hotswap, or the same-ISA retarget): the
/// Image owner of what was loaded instead of the entry.
struct TransformedImage {
  std::shared_ptr<const EntryImage> source;
  std::vector<std::byte> bytes;
  std::optional<CodeObject> code_object;  // read from `bytes`, set before use
};

/// What selection reads of one bundle, and the code objects read from it.
struct BundleData {
  /// Plain: the bundle read in place. CCOB: its entries' heads only (bytes =
  /// ELF header), which is all select_in_bundle reads; never an entry's contents.
  Bundle bundle;
  std::vector<EntryHead> heads;             // CCOB: what `bundle`'s entries view
  bool every_head = true;                   // CCOB: false when Skip mode stopped before some
  std::shared_ptr<const FatBinary> source;  // plain: what `bundle`'s entries view
  mutable std::mutex entries_mutex;          // also held while a CCOB entry decompresses
  mutable StringMap<std::weak_ptr<const EntryImage>> entries;

  BundleData(Bundle b, std::shared_ptr<const FatBinary> s) : bundle(std::move(b)), source(std::move(s)) {}
  BundleData(const BundleInfo& info, std::vector<EntryHead> h, bool every)
      // The entries view h's elements, which the move into `heads` keeps in place.
      : bundle(info, head_entries(h), {}, nullptr), heads(std::move(h)), every_head(every) {}
};

struct BundleSlot {
  std::mutex mutex;
  bool done = false;
  std::shared_ptr<const BundleData> data;
  std::optional<Error> error;
};

/// A device's choice in one bundle: the selection and, when an entry fits,
/// its code object.
struct Choice {
  std::shared_ptr<const BundleData> data;
  Selection selection;
  std::shared_ptr<const EntryImage> image;
};

/// What one (binary, device) load keeps of its CCOBs (each one's IDs and ELF
/// headers, and the decompressed entries it chose), which together may not
/// pass max_decompressed_bytes. Each CCOB is held to that limit alone, so a
/// file of N small CCOBs, each declaring up to it, would otherwise make one
/// load keep N limits' worth. Shared by the decode threads.
struct KeptBytes {
  std::uint64_t limit;
  std::atomic<std::uint64_t> used{0};

  /// `what` names the bytes: "its size", "its table's IDs and ELF headers".
  Expected<void> charge(std::uint64_t size, std::string_view what) {
    std::uint64_t before = used.load(std::memory_order_relaxed);
    do {
      if (size > limit - before) {
        return Error(ErrorKind::LimitExceeded,
                     std::string(what) + " (" + detail::hex(size) + " bytes) would pass the limit " +
                         detail::hex(limit) + " (max_decompressed_bytes) on what one load keeps of its " +
                         "compressed bundles, of which " + detail::hex(before) + " is kept already");
      }
    } while (!used.compare_exchange_weak(before, before + size, std::memory_order_relaxed));
    return {};
  }
};

/// What one (binary, device) pair loaded. Members are destroyed bottom-up:
/// the kernel index, then the modules (unloading), then the images they read.
struct DeviceState {
  /// A kernel as a lookup finds it, and where: check_dispatch reads its
  /// metadata from that module without searching the others.
  struct KernelSlot {
    const LoadedKernel* loaded = nullptr;
    const LoadedModule* module = nullptr;
    std::size_t index = 0;  ///< in module->kernels()
  };
  std::vector<std::shared_ptr<const void>> images;  // EntryImage or TransformedImage
  std::vector<std::unique_ptr<LoadedModule>> modules;
  StringMap<KernelSlot> kernels;
  /// How many bundles had no entry for the device, and why the first did: a
  /// kernel missing later is most likely in one of them. One message, not
  /// one per bundle: each lists its bundle's entries.
  std::size_t skipped = 0;
  std::string first_skipped;
  std::optional<Error> error;
};

struct DeviceSlot {
  std::mutex mutex;
  std::atomic<bool> ready{false};
  DeviceState state;  // written once under `mutex`, then read-only
};

struct Binary {
  /// Set by unregister: told once everything below is destroyed (declared
  /// first, so destroyed last). The waiter holds only the future.
  struct Release {
    std::optional<std::promise<void>> promise;
    ~Release() {
      if (promise) promise->set_value();
    }
  } release;
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

// What `coload check --device` finds wrong with a kernel, or with the object
// against the device, is not handed to a runtime: ROCr checks little at load
// and fails the rest at dispatch, if at all. The metadata's object-wide
// strings (amdhsa.target, amdhsa.version, printf formats) and `.kd` symbols
// no kernel names refuse nothing: no runtime reads them to load, and
// hand-written assembly kernels often carry an old amdhsa.version.
Expected<void> check_before_load(const CodeObject& code_object, const Device& device, const std::string& where) {
  std::size_t kernel_problems = 0;
  const Problem* first = nullptr;
  for (const Problem& problem : code_object.problems()) {
    if (problem.kernel.empty()) continue;
    if (!first) first = &problem;
    ++kernel_problems;
  }
  if (first) {
    return Error(first->kind, where + " has " + std::to_string(kernel_problems) +
                                  " kernel problem(s), first: " + first->message);
  }
  std::vector<Violation> violations = validate(code_object, device);
  if (!violations.empty()) {
    return Error(violations.front().kind, where + " refused by the validator: " + violations.front().message +
                                              (violations.size() > 1
                                                   ? " (and " + std::to_string(violations.size() - 1) + " more)"
                                                   : std::string()));
  }
  return {};
}

// "; 2 bundles have no code object for this device, e.g. <why>".
std::string skipped_note(std::size_t skipped, const std::string& first) {
  if (skipped == 0) return {};
  return "; " + std::to_string(skipped) + (skipped == 1 ? " bundle has" : " bundles have") +
         " no code object for this device, e.g. " + first;
}

}  // namespace

struct Registry::Impl {
  std::shared_ptr<Runtime> runtime;  // declared first: outlives every module
  Config config;
  ReadOptions read_options;
  std::shared_ptr<const HotswapRegistry> hotswap;  // never null
  std::optional<Error> hotswap_error;             // the registry could not be built: every load fails
  SelectOptions select_options;
  StreamOptions stream_options;
  std::size_t decode_threads = 1;  // at least 1
  LogLevel log_level;
  std::function<void(LogLevel, std::string_view)> log_sink;  // null: stderr
  std::vector<Device> devices;

  std::mutex cache_mutex;
  std::unordered_map<std::string, std::weak_ptr<const BundleData>> compressed_cache;  // by ccob_key

  mutable std::shared_mutex binaries_mutex;
  std::unordered_map<std::uint64_t, std::shared_ptr<Binary>> binaries;
  std::uint64_t next_handle = 1;

  std::atomic<std::uint64_t> binaries_registered{0}, bundles_read{0}, bundles_decompressed{0},
      code_objects_read{0}, modules_loaded{0}, bytes_decoded{0};

  Impl(std::shared_ptr<Runtime> rt, Config cfg, RegistryOptions options)
      : runtime(std::move(rt)),
        config(std::move(cfg)),
        read_options(config.read_options()),
        hotswap(std::move(options.hotswap)),
        stream_options(config.stream_options()),
        log_level(config.log_level),
        log_sink(std::move(options.log)) {
    decode_threads = options.decode_threads;
    if (decode_threads == 0) decode_threads = std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 8);
    if (!hotswap && !config.hotswap) {
      // Only the same-ISA retarget can run: the built-in passes, no plugin.
      hotswap = std::shared_ptr<const HotswapRegistry>(std::shared_ptr<const void>(), &HotswapRegistry::builtin());
      // A plugin or pairs set without the switch would otherwise be a silent no-op (docs/environment.md).
      if (!config.hotswap_plugin.empty() || !config.hotswap_pairs.empty()) {
        log(LogLevel::Warn, [] {
          return std::string("COLOAD_HOTSWAP_PLUGIN or COLOAD_HOTSWAP_PAIRS is set but COLOAD_HOTSWAP is not 1: "
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

  /// Emits `message()` when `level` passes COLOAD_LOG; the text is built only then.
  template <class Message>
  void log(LogLevel level, Message&& message) const {
    if (level > log_level) return;
    const std::string text = message();
    if (log_sink) {
      log_sink(level, text);
    } else {
      std::fprintf(stderr, "coload: %s: %s\n", std::string(to_string(level)).c_str(), text.c_str());
    }
  }

  /// The key CCOBs are shared by: identical stored hash and size.
  static std::string ccob_key(const BundleInfo& info) {
    return detail::hex(info.compressed->hash) + ":" + std::to_string(info.compressed->uncompressed_size);
  }

  static std::string hash_outcome(StreamSelection::Hash hash) {
    switch (hash) {
      case StreamSelection::Hash::Checked: return "verified";
      case StreamSelection::Hash::CheckedEarlier: return "verified earlier (marked)";
      case StreamSelection::Hash::NotChecked: break;
    }
    return "not checked";
  }

  /// Decodes CCOB `info` of `binary` as a stream for `device`, keeping only
  /// its heads and the chosen entry.
  Expected<StreamSelection> stream(const Binary& binary, const BundleInfo& info, const Device& device) {
    auto streamed = select_in_compressed_bundle(device, binary.fat->source().bytes(), info, select_options,
                                                stream_options);
    if (streamed) {
      bundles_decompressed.fetch_add(1, std::memory_order_relaxed);
      bytes_decoded.fetch_add(streamed->decoded_bytes, std::memory_order_relaxed);
      log(LogLevel::Debug, [&] {
        const Candidate* kept = streamed->selection.chosen();
        return binary.name + ": bundle " + std::to_string(info.index) + ": CCOB streamed for " + device.str() +
               ": decoded " + std::to_string(streamed->decoded_bytes) + " of " +
               std::to_string(info.compressed->uncompressed_size) + " bytes, hash " +
               hash_outcome(streamed->hash) + ", kept " +
               (kept ? "entry " + std::to_string(kept->entry_index) + " (" + std::to_string(streamed->chosen.size()) +
                           " bytes)"
                     : std::string("nothing"));
      });
    }
    return streamed;
  }

  /// Reads a code object out of `bytes` (owned by `bundle` or by `decoded`)
  /// and files it under `id`; the caller holds data.entries_mutex.
  Expected<std::shared_ptr<const EntryImage>> add_image(const BundleData& data,
                                                        std::shared_ptr<const BundleData> bundle,
                                                        std::vector<std::byte> decoded, std::span<const std::byte> bytes,
                                                        std::string_view id) {
    code_objects_read.fetch_add(1, std::memory_order_relaxed);
    auto code_object = CodeObject::read(bytes);  // `decoded` keeps its buffer when moved below
    if (!code_object) return std::move(code_object).error();
    auto image = std::make_shared<const EntryImage>(
        EntryImage{std::move(bundle), std::move(decoded), bytes, std::move(*code_object)});
    data.entries.insert_or_assign(std::string(id), image);
    return image;
  }

  /// The code object already read from entry `id` of `data`, if any device still uses it.
  static std::shared_ptr<const EntryImage> cached_image(const BundleData& data, std::string_view id) {
    auto it = data.entries.find(id);
    return it == data.entries.end() ? nullptr : it->second.lock();
  }

  /// Device `device`'s choice in bundle `index` of `binary`. A plain bundle
  /// is read once and its entries are read in place. A CCOB is streamed
  /// for the first device that asks, keeping its heads (shared with other
  /// registrations of the same CCOB) and that device's entry; a later device
  /// selects on the heads and decompresses again only for an entry no device
  /// has chosen yet (or whose code object is no longer in use), or when the
  /// heads are partial (Skip mode stopped before some). `selector` is for
  /// `device` and select_options.
  Expected<Choice> choose(Binary& binary, std::size_t index, const Device& device, const Selector& selector,
                          KeptBytes& kept) {
    const BundleInfo& info = binary.fat->bundles()[index];
    const bool compressed = info.format == BundleFormat::Compressed && info.compressed;
    Choice choice;
    std::optional<StreamSelection> streamed;
    {
      BundleSlot& slot = *binary.bundles[index];
      std::lock_guard lock(slot.mutex);
      if (!slot.done) {
        slot.done = true;
        auto made = compressed ? shared_ccob(binary, info, device, streamed) : read_plain(binary, index);
        if (made) {
          slot.data = std::move(*made);
        } else {
          slot.error = std::move(made).error();
        }
      }
      if (slot.error) return *slot.error;
      choice.data = slot.data;
    }
    const BundleData& data = *choice.data;
    if (compressed) {
      if (auto charged = kept.charge(heads_bytes(data.heads), "its table's IDs and ELF headers"); !charged) {
        return std::move(charged).error().with_context("CCOB of " + std::to_string(data.heads.size()) + " entries");
      }
    }
    if (!streamed && !data.every_head) {
      // Skip mode stopped the stream that kept these heads before some
      // entries' ELF headers: this device's choice needs a stream of its own.
      auto again = stream(binary, info, device);
      if (!again) return std::move(again).error();
      streamed = std::move(*again);
    }
    if (streamed) {
      choice.selection = streamed->selection;  // the stream's own, kept for the check below
    } else {
      auto selection = selector.select(data.bundle);
      if (!selection) return std::move(selection).error();
      choice.selection = std::move(*selection);
    }
    const Candidate* chosen = choice.selection.chosen();
    if (!chosen) return choice;
    const BundleEntry& entry = data.bundle.entries()[chosen->entry_index];
    const std::string entry_where = "entry " + std::to_string(chosen->entry_index) + " (" + chosen->id + ")";
    if (compressed) {
      // Charged before a later device decodes the entry again; a first stream has decoded it already.
      if (auto charged = kept.charge(data.heads[chosen->entry_index].size, "its size"); !charged) {
        return std::move(charged).error().with_context(entry_where);
      }
    }
    std::lock_guard lock(data.entries_mutex);
    choice.image = cached_image(data, entry.id);
    if (choice.image) {
      log(LogLevel::Debug, [&] {
        return binary.name + ": bundle " + std::to_string(index) + ": " + entry_where + " reused for " + device.str();
      });
      return choice;
    }
    if (!compressed) {
      auto image = add_image(data, choice.data, {}, entry.bytes, entry.id);
      if (!image) return std::move(image).error().with_context(entry_where);
      choice.image = std::move(*image);
      return choice;
    }
    if (!streamed) {
      auto again = stream(binary, info, device);
      if (!again) return std::move(again).error();
      streamed = std::move(*again);
    }
    const Candidate* decoded = streamed->selection.chosen();
    if (!decoded || decoded->entry_index != chosen->entry_index) {
      // The heads came from another registration with this stored hash and
      // size, and this stream's entries differ: the hash does not tell them apart.
      return Error(ErrorKind::HashMismatch,
                   entry_where + ": chosen from the heads of an earlier CCOB with stored hash and size " +
                       ccob_key(info) + ", but this bundle's stream chose " +
                       (decoded ? "entry " + std::to_string(decoded->entry_index) : "nothing"));
    }
    std::span<const std::byte> bytes = streamed->chosen;
    auto image = add_image(data, nullptr, std::move(streamed->chosen), bytes, entry.id);
    if (!image) return std::move(image).error().with_context(entry_where);
    choice.image = std::move(*image);
    return choice;
  }

  /// A plain bundle (or bare code object) of `binary`, its table read in place.
  Expected<std::shared_ptr<const BundleData>> read_plain(Binary& binary, std::size_t index) {
    auto read = binary.fat->read(index);
    bundles_read.fetch_add(1, std::memory_order_relaxed);
    if (!read) return std::move(read).error();
    return std::make_shared<const BundleData>(std::move(*read), binary.fat);
  }

  /// The heads of CCOB `info`: another registration's, or streamed now for
  /// `device` (its selection and entry left in `streamed`).
  Expected<std::shared_ptr<const BundleData>> shared_ccob(Binary& binary, const BundleInfo& info,
                                                          const Device& device,
                                                          std::optional<StreamSelection>& streamed) {
    const std::string key = ccob_key(info);
    {
      std::lock_guard cache_lock(cache_mutex);
      auto it = compressed_cache.find(key);
      if (it != compressed_cache.end()) {
        if (auto data = it->second.lock()) return data;
      }
    }
    auto decoded = stream(binary, info, device);
    if (!decoded) return std::move(decoded).error();
    bundles_read.fetch_add(1, std::memory_order_relaxed);
    auto data = std::make_shared<const BundleData>(info, std::move(decoded->heads), decoded->every_head);
    streamed = std::move(*decoded);
    std::lock_guard cache_lock(cache_mutex);
    std::erase_if(compressed_cache, [](const auto& item) { return item.second.expired(); });
    auto [it, inserted] = compressed_cache.try_emplace(key, data);
    if (!inserted) {
      if (auto existing = it->second.lock()) return existing;  // another registration streamed it meanwhile
      it->second = data;
    }
    return data;
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
    if (auto checked = check_before_load(*read, device, where + ": output"); !checked) return checked.error();
    out->code_object = std::move(*read);
    return std::shared_ptr<const TransformedImage>(std::move(out));
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
      state.images.clear();
      state.error = std::move(result).error();
      return;
    }
    for (const auto& module : state.modules) {
      std::span<const LoadedKernel> kernels = module->kernels();
      for (std::size_t i = 0; i < kernels.size(); ++i) {
        state.kernels.try_emplace(kernels[i].name, DeviceState::KernelSlot{&kernels[i], module.get(), i});
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
    std::span<const BundleInfo> infos = binary.fat->bundles();
    std::vector<std::optional<Expected<Choice>>> choices(infos.size());
    const Selector selector(device, select_options);
    KeptBytes kept{read_options.max_decompressed_bytes};
    std::mutex misses_mutex;
    std::size_t first_miss = infos.size();  // the bundle whose report is kept
    std::atomic<std::size_t> next{0};
    auto settle = [&](std::size_t i, Expected<Choice> made) {
      Selection* selection = made ? &made->selection : nullptr;
      if (selection && selection->chosen()) {
        Candidate chosen = std::move(selection->candidates[*selection->selected]);
        selection->candidates.assign(1, std::move(chosen));
        selection->selected = 0;
      } else if (selection) {
        log(LogLevel::Debug, [&] {
          return no_fit_error(device, *selection).with_context(binary.name + ": bundle " + std::to_string(i)).message();
        });
        std::lock_guard lock(misses_mutex);  // held while placed: an earlier miss found later clears it
        const bool earliest = i < first_miss;
        if (!earliest) selection->candidates.clear();
        choices[i].emplace(std::move(made));
        if (earliest) {
          if (first_miss < infos.size()) (*choices[first_miss])->selection.candidates.clear();
          first_miss = i;
        }
        return;
      }
      choices[i].emplace(std::move(made));
    };
    auto work = [&] {
      for (std::size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < infos.size();) {
        try {
          settle(i, choose(binary, i, device, selector, kept));
        } catch (const std::bad_alloc&) {  // an exception must not end a helper thread (std::terminate)
          choices[i].emplace(Error(ErrorKind::LimitExceeded, "out of memory while reading the bundle"));
        } catch (const std::exception& exception) {
          choices[i].emplace(Error(ErrorKind::InvalidArgument, std::string("reading the bundle failed: ") +
                                                                   exception.what()));
        }
      }
    };
    std::vector<std::jthread> helpers;
    for (std::size_t t = 1; t < std::min(decode_threads, infos.size()); ++t) {
      try {
        helpers.emplace_back(work);
      } catch (const std::system_error&) {
        break;  // no more threads: the ones running share the rest
      }
    }
    work();
    helpers.clear();  // joins
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
      const std::string where = binary.name + ": bundle " + std::to_string(i);
      Expected<Choice>& choice = *choices[i];
      if (!choice) {
        // The bundle reader names the bundle itself ("[<file>: ]bundle 0 at offset 0x0: ...").
        const std::string bundle_at = "bundle " + std::to_string(i) + " at offset ";
        const std::string& message = choice.error().message();
        if (message.starts_with(binary.name + ": " + bundle_at)) return choice.error();
        return choice.error().with_context(message.starts_with(bundle_at) ? binary.name : where);
      }
      const Candidate* chosen = choice->selection.chosen();
      if (!chosen) {
        if (state.skipped++ == 0) {  // the first miss: choose_all kept its whole report
          state.first_skipped = no_fit_error(device, choice->selection).with_context(where).message();
        }
        if (!first_miss) {
          first_miss = std::move(choice->selection);
          first_miss_index = i;
        }
        continue;
      }
      const std::string entry_where = where + " entry " + std::to_string(chosen->entry_index) + " (" + chosen->id + ")";
      const std::shared_ptr<const EntryImage>& image = choice->image;
      log(LogLevel::Info, [&] {
        return entry_where + ": " + std::string(to_string(*chosen->tier)) + " for device " + std::to_string(index) +
               " (" + device.str() + ")" +
               (chosen->tier == Tier::Hotswap || chosen->tier == Tier::Equivalent ? ", transformed for it" : "");
      });
      if (chosen->tier == Tier::Hotswap || chosen->tier == Tier::Equivalent) {
        auto transformed = transform(image, *chosen->tier, device, entry_where);
        if (!transformed) return std::move(transformed).error();
        const TransformedImage& out = **transformed;
        auto module = runtime->load(index, Image{out.bytes, *transformed}, *out.code_object);
        if (!module) return module.error().with_context(entry_where + " (transformed for " + device.str() + ")");
        modules_loaded.fetch_add(1, std::memory_order_relaxed);
        state.images.push_back(std::move(*transformed));
        state.modules.push_back(std::move(*module));
        continue;
      }
      if (auto checked = check_before_load(image->code_object, device, entry_where); !checked) return checked.error();
      auto module = runtime->load(index, Image{image->bytes, image}, image->code_object);
      if (!module) return module.error().with_context(entry_where);
      modules_loaded.fetch_add(1, std::memory_order_relaxed);
      state.images.push_back(image);
      state.modules.push_back(std::move(*module));
    }
    if (!state.modules.empty()) return {};
    if (!first_miss) return Error(ErrorKind::NotFound, binary.name + ": holds no bundle");
    std::string where = binary.name + ": bundle " + std::to_string(first_miss_index);
    if (count > 1) where = binary.name + ": none of its " + std::to_string(count) + " bundles fits; bundle " +
                                 std::to_string(first_miss_index);
    return no_fit_error(device, *first_miss).with_context(where);
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

Expected<LoadedKernel> Registry::lookup_kernel_copy(BinaryHandle binary, std::size_t device,
                                                    std::string_view kernel) {
  std::shared_ptr<Binary> held;  // copied while held: an unregister on another thread waits for it
  auto found = impl_->kernel(binary, device, kernel, held);
  if (!found) return std::move(found).error();
  return *(*found)->loaded;
}

Expected<void> Registry::check_dispatch(BinaryHandle binary, std::size_t device, std::string_view kernel,
                                        const Dispatch& dispatch) {
  std::shared_ptr<Binary> held;
  auto found = impl_->kernel(binary, device, kernel, held);
  if (!found) return std::move(found).error();
  const DeviceState::KernelSlot& slot = **found;
  // Runtimes list a module's kernels in metadata order; search only when one does not.
  std::span<const Kernel> listed = slot.module->code_object().kernels();
  const Kernel* metadata = slot.index < listed.size() && listed[slot.index].name == kernel
                               ? &listed[slot.index]
                               : slot.module->code_object().find_kernel(kernel);
  if (!metadata) {
    return Error(ErrorKind::NotFound, "kernel \"" + std::string(kernel) + "\" has no metadata in " + held->name);
  }
  return coload::check_dispatch(*metadata, impl_->devices[device], dispatch);
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
  return RegistryStats{get(impl_->binaries_registered), get(impl_->bundles_read),      get(impl_->bundles_decompressed),
                       get(impl_->code_objects_read),   get(impl_->modules_loaded), get(impl_->bytes_decoded)};
}

}  // namespace coload
