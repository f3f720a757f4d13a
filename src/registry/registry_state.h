// What the registry's parts share (coload/registry.h): the images a load
// keeps, the per-bundle cache they come from, and the registry's log.
//
//   Binary       one registration: its FatBinary, one BundleSlot per bundle
//                and one DeviceSlot per device (registry.cpp).
//   BundleSlot   the bundle's BundleData, made once (mutex).
//   BundleData   what selection needs of a bundle, plus the code objects read
//                from its entries (weak, by entry ID), shared by devices
//                (and, for a CCOB, by registrations). A plain bundle's
//                entries view the mapped source. A CCOB keeps only its
//                entries' heads (table fields + ELF header); the entry a
//                device chooses is decompressed alone, by a streamed
//                selection, and kept in its EntryImage (image_cache.cpp).
//   TransformedImage  a hotswap or same-ISA pass's output (transform.cpp).
// Destruction releases modules (DeviceSlot) before the code objects and bytes
// they came from (EntryImage -> BundleData -> FatBinary).
#pragma once

#include <atomic>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "coload/bundle.h"
#include "coload/code_object.h"
#include "coload/config.h"
#include "coload/detail/hotswap.h"
#include "coload/detail/stream_select.h"
#include "coload/fat_binary.h"
#include "coload/pipeline.h"
#include "coload/registry.h"
#include "coload/select.h"

namespace coload::registry {

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
  std::vector<std::byte> decoded;            // a CCOB entry, decompressed for itself, or a file's entry copied
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
  /// ELF header), which is all selection reads; never an entry's contents.
  Bundle bundle;
  std::vector<EntryHead> heads;             // CCOB: what `bundle`'s entries view
  bool every_head = true;                   // CCOB: false when Skip mode stopped before some
  std::shared_ptr<const FatBinary> source;  // plain: what `bundle`'s entries view
  mutable std::mutex entries_mutex;         // also held while a CCOB entry decompresses
  mutable StringMap<std::weak_ptr<const EntryImage>> entries;
  /// CCOB with partial heads: the selection each device's stream made, so an
  /// equal device (another registration's, or a second card of one kind)
  /// selects without a stream of its own. Under entries_mutex.
  mutable std::vector<std::pair<Device, Selection>> streamed_selections;

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

/// The registry's counters (RegistryStats).
struct Counters {
  std::atomic<std::uint64_t> binaries_registered{0}, bundles_read{0}, bundles_decompressed{0}, code_objects_read{0},
      modules_loaded{0}, bytes_decoded{0};
  void add(std::atomic<std::uint64_t>& counter, std::uint64_t n = 1) {
    counter.fetch_add(n, std::memory_order_relaxed);
  }
  RegistryStats stats() const {
    const auto get = [](const std::atomic<std::uint64_t>& counter) { return counter.load(std::memory_order_relaxed); };
    return RegistryStats{get(binaries_registered), get(bundles_read),   get(bundles_decompressed),
                         get(code_objects_read),   get(modules_loaded), get(bytes_decoded)};
  }
};

/// The registry's log: COLOAD_LOG's level, to the caller's sink or stderr.
struct Log {
  LogLevel level;
  std::function<void(LogLevel, std::string_view)> sink;  // null: stderr

  /// Emits `message()` when `at` passes the level; the text is built only then.
  template <class Message>
  void operator()(LogLevel at, Message&& message) const {
    if (at > level) return;
    const std::string text = message();
    if (sink) {
      sink(at, text);
    } else {
      std::fprintf(stderr, "coload: %s: %s\n", std::string(to_string(at)).c_str(), text.c_str());
    }
  }
};

/// The bundles of every registration, read once and shared: each bundle's
/// BundleData, CCOB heads shared across registrations by stored hash and
/// size, and the code objects read from chosen entries.
class ImageCache {
 public:
  ImageCache(const StreamOptions& stream, Counters& counters, const Log& log)
      : stream_(stream), counters_(counters), log_(log) {}

  /// The choice of `selector`'s device in bundle `index` of `fat` (named
  /// `name`), whose slot is `slot`. A plain bundle is read once and its
  /// entries are read in place. A CCOB is streamed for the first device that
  /// asks, keeping its heads (shared with other registrations of the same
  /// CCOB) and that device's entry; a later device selects on the heads and
  /// decompresses again only for an entry no device has chosen yet (or whose
  /// code object is no longer in use), or when the heads are partial (Skip
  /// mode stopped before some) and no equal device has streamed: at most one
  /// stream per device. What it keeps of CCOBs is charged to `kept`.
  /// With `copy_entries` (the bytes of registered files), a plain bundle's
  /// table is probed through a checked read before each selection and the
  /// chosen entry copied through one, so a file that shrank is Io, never
  /// SIGBUS (docs/reading-rules.md).
  Expected<Choice> choose(const std::shared_ptr<const FatBinary>& fat, const std::string& name, BundleSlot& slot,
                          std::size_t index, const Selector& selector, KeptBytes& kept, bool copy_entries);

 private:
  Expected<BundleChoice> stream(const FatBinary& fat, const std::string& name, std::size_t index,
                                const Selector& selector);
  /// A plain bundle (or bare code object), its table read in place.
  /// A kpack bundle's choice: the pipeline's, which decodes only the chosen
  /// entry; its code object kept by entry ID for the other devices.
  Expected<Choice> choose_kpack(const std::shared_ptr<const FatBinary>& fat, BundleSlot& slot, std::size_t index,
                                const Selector& selector);
  Expected<std::shared_ptr<const BundleData>> read_plain(const std::shared_ptr<const FatBinary>& fat,
                                                         std::size_t index);
  /// The heads of CCOB `index`: another registration's, or streamed now
  /// (its choice left in `streamed`).
  Expected<std::shared_ptr<const BundleData>> shared_ccob(const FatBinary& fat, const std::string& name,
                                                          std::size_t index, const Selector& selector,
                                                          std::optional<BundleChoice>& streamed);
  Expected<std::shared_ptr<const EntryImage>> add_image(const BundleData& data,
                                                        std::shared_ptr<const BundleData> bundle,
                                                        std::vector<std::byte> decoded,
                                                        std::span<const std::byte> bytes, std::string_view id);

  const StreamOptions& stream_;
  Counters& counters_;
  const Log& log_;
  std::mutex mutex_;
  std::unordered_map<std::string, std::weak_ptr<const BundleData>> compressed_;  // by ccob_key
};

/// The passes a registry runs: `given` (RegistryOptions::hotswap) when set;
/// with hotswap off, the built-in ones (warning when a plugin or pairs are
/// set without the switch); else the registry COLOAD_HOTSWAP_PLUGIN builds,
/// or, when that fails, an empty one with the failure in `error` (every load
/// then fails with it). Never null.
std::shared_ptr<const HotswapRegistry> hotswap_passes(const Config& config,
                                                      std::shared_ptr<const HotswapRegistry> given, const Log& log,
                                                      std::optional<Error>& error);

/// Runs the pass for a Hotswap or Equivalent choice over `image` (hotswap
/// through `hotswap`'s passes, the same-ISA relabelling always through the
/// built-in one) and reads and admits its output for `device`. Its errors
/// name the pass and the device; the caller sets the entry's location.
Expected<std::shared_ptr<const TransformedImage>> transform(const HotswapRegistry& hotswap,
                                                            const std::shared_ptr<const EntryImage>& image, Tier tier,
                                                            const Device& device, Counters& counters);

}  // namespace coload::registry
