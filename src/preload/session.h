// Internal: one process's preload (docs/preload.md): its GPUs and settings,
// read once at the first registration, and the bundles it handed the
// runtime in place of wrappers, kept until their unregistration.
//
// Threads: every member may be called from many threads at once (one lock;
// registrations run in static constructors, normally one at a time).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "coload/config.h"
#include "coload/device.h"
#include "preload/compressed_tables.h"
#include "preload/loaded_objects.h"
#include "preload/wrapper_plan.h"

namespace coload::preload {

using RegisterFatBinary = void** (*)(const void* wrapper);
using UnregisterFatBinary = void (*)(void** handle);
/// hipModuleLoadData (or Ex, its options bound) with its module out-parameter bound: loads `image`.
using LoadImage = std::function<int(const void* image)>;
using GetDevice = int (*)(int* device);

/// The HIP release a registration goes to, from its library's file names:
/// "libamdhip64.so.6.2.41133" is 6.2, "libamdhip64.so.7" is 7.
struct HipRelease {
  std::string file;  ///< the library's real path; empty when unknown
  int major = 0;     ///< 0: unknown
  std::optional<int> minor;
  /// The library links rocm-kpack (a CLR that loads HIPK records from their
  /// archives itself): kpack_load_code_object resolves from it.
  bool links_kpack = false;
  /// "HIP 6.2 (libamdhip64.so.6.2.41133)"
  std::string name() const;
};

/// The release of the loaded object that defines `symbol`: its file names,
/// else the major of its SONAME; links_kpack when kpack_load_code_object
/// resolves from it (dlsym of its handle: it or a library it needs).
HipRelease release_of(const void* symbol);
/// The release of the HIP library file `path` (its real path's name).
HipRelease release_of_file(const std::string& path);

/// The settings of a session, from its environment.
struct SessionSettings {
  /// The GPUs, with the release's code object versions and generic support
  /// applied; empty when they are unknown (then every wrapper goes on as it is).
  std::vector<Device> devices;
  std::string devices_from;  ///< "COLOAD_DEVICES" or the topology's root
  std::string inactive;      ///< why no wrapper is planned (no GPU, a bad setting); empty when active
  /// The hotswap tier's passes (COLOAD_HOTSWAP_PLUGIN's with the built-in
  /// ones) when COLOAD_HOTSWAP is 1; else the built-in ones, unused.
  std::shared_ptr<const HotswapRegistry> hotswap;
  PlanOptions plan;  ///< plan.devices views `devices`, plan.hotswap `hotswap`
  Config config;
  LogLevel log = LogLevel::Error;  ///< COLOAD_LOG when set; else only no-fit lines are printed
};

/// The settings `lookup` (the environment) gives for registrations going to
/// `release`: COLOAD_DEVICES (target IDs, comma-separated) when set, else the
/// KFD topology (COLOAD_KFD_TOPOLOGY, ROCR_VISIBLE_DEVICES,
/// HIP_VISIBLE_DEVICES); the COLOAD_* settings of Config, the hotswap
/// plugin loaded when the tier is on (one that fails to load is a bad
/// setting); plan.runtime_loads_kpack when the release links rocm-kpack and
/// ROCM_KPACK_DISABLE is not a non-zero number (CLR's own switch).
SessionSettings read_settings(const Config::Lookup& lookup, const HipRelease& release);

/// Writes one line ("coload: " + text) to stderr when `level` is at or above
/// the session's level (Error is always written).
class Session {
 public:
  explicit Session(SessionSettings settings);
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session();

  /// The process's session, made at the first call from the environment and
  /// the release of the library that defines `next`.
  static Session& process(const void* next);

  /// Registers `wrapper` through `next`: the wrapper itself, or a HIPF
  /// record of the bundle its plan wrote. Never throws.
  void** register_fat_binary(const void* wrapper, RegisterFatBinary next) noexcept;
  /// Unregisters `handle` through `next`, then frees what was handed on for it.
  void unregister_fat_binary(void** handle, UnregisterFatBinary next) noexcept;

  /// Loads `image` through `load` (hipModuleLoadData's call with `module`
  /// bound) for the GPU `get_device` names (HIP's current device): the image
  /// itself, or the bundle its plan wrote, kept until unload_module of the
  /// module `module` then holds. Never throws.
  int load_module(void** module, const void* image, const LoadImage& load, GetDevice get_device) noexcept;
  /// Unloads `module` through `unload`, then frees what was handed on for it.
  int unload_module(void* module, const std::function<int(void*)>& unload) noexcept;

  /// The plan's lines for `coload run --dry-run`: every GPU of every
  /// wrapper, whatever the log level, on `out`.
  static std::string describe(const std::string& binary, std::size_t index, const WrapperPlan& plan,
                              std::span<const Device> devices);

  /// Rewritten wrappers still registered.
  std::size_t kept() const;
  const SessionSettings& settings() const { return settings_; }

 private:
  struct Handed;  // a bundle and its record, page-aligned
  void log(LogLevel level, const std::string& text) const;
  /// Whether `wrapper` goes on as it is on its entry IDs alone (screen_table);
  /// counts it, and sets the binary it belongs to and its number there.
  bool passes_on_its_ids(const void* wrapper, std::string& binary, std::size_t& index);
  /// passes_on_its_ids' decision for `wrapper` of `binary`, held in `object` (null: none holds it).
  bool screen_passes(const LoadedObject* object, const void* wrapper, std::string_view binary);
  /// Screens into `out` the CCOB at `image` in `object`, from its kept IDs
  /// when its object's file holds them (compressed_tables.h), else from its
  /// stream; false when neither can decide.
  bool screen_compressed(const LoadedObject& object, const void* image, std::span<IdScreen> out);
  /// The plan's lines, at their levels.
  /// `first_gpu`: the device plan.gpus[0] is (a module is planned for one).
  void report(const std::string& binary, std::size_t index, const WrapperPlan& plan, std::size_t first_gpu = 0) const;
  /// An anonymous page-aligned mapping holding `bundle` after `offset` bytes; null when none can be made.
  static std::unique_ptr<Handed> hand(const std::vector<std::byte>& bundle, std::size_t offset);

  SessionSettings settings_;
  mutable std::mutex mutex_;
  std::map<void**, std::unique_ptr<Handed>> handed_;  // by the runtime's handle
  std::map<void*, std::unique_ptr<Handed>> modules_;  // by the module handle
  std::size_t modules_seen_ = 0;
  struct Seen {
    std::string name;
    std::size_t count = 0;
  };
  std::map<std::uintptr_t, Seen> wrappers_seen_;  // per loaded object's base, for wrapper numbers
  LoadedObjects objects_;
  CompressedTables tables_;
  std::vector<IdScreen> screens_;  // one per device: the screen's output, used under the lock
  std::once_flag told_inactive_;
  /// (binary, GPU) with its line printed; looked up by a string_view, without a copy.
  using NoFitKey = std::pair<std::string_view, std::size_t>;
  struct NoFitOrder {
    using is_transparent = void;
    template <class A, class B>
    bool operator()(const A& a, const B& b) const {
      return NoFitKey(a.first, a.second) < NoFitKey(b.first, b.second);
    }
  };
  mutable std::set<std::pair<std::string, std::size_t>, NoFitOrder> told_no_fit_;
};

}  // namespace coload::preload
