// One registration of the registry (registry.cpp) and what each device
// loaded of it: the state Registry::Impl builds and lookups read.
//
//   Binary       one registration: its FatBinary (a wrapper's opened at first
//                use), one BundleSlot per bundle and one DeviceSlot per device.
//   DeviceSlot   the modules loaded for one (binary, device): built once
//                under its own mutex, then read lock-free behind an
//                acquire/release flag.
#pragma once

#include <atomic>
#include <cstddef>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "coload/error.h"
#include "coload/fat_binary.h"
#include "coload/runtime.h"
#include "coload/select.h"
#include "registry/registry_state.h"

namespace coload::registry {

/// How well a chosen entry fits, as the tiers order it (docs/selection.md):
/// the tier first, then exact features before ones left Any. Two bundles of
/// one binary can both define a kernel (a file set's overlapping kernel sets,
/// a template instantiated in two translation units): the lookup takes the
/// better fit, the first bundle's on a tie.
inline unsigned fit_rank(const Candidate& chosen) {
  unsigned any = 0;
  if (chosen.code_object) {
    any = (chosen.code_object->target.xnack == FeatureState::Any) +
          (chosen.code_object->target.sramecc == FeatureState::Any);
  }
  return static_cast<unsigned>(*chosen.tier) * 3 + any;
}

/// What one (binary, device) pair loaded. Members are destroyed bottom-up:
/// the kernel index, then the modules (unloading), then the images they read.
struct DeviceState {
  /// A kernel as a lookup finds it, and where: check_dispatch reads its
  /// metadata from that module without searching the others.
  struct KernelSlot {
    const LoadedKernel* loaded = nullptr;
    const LoadedModule* module = nullptr;
    std::size_t index = 0;  ///< in module->kernels()
    unsigned rank = 0;      ///< the module's fit_rank
  };
  std::vector<std::shared_ptr<const void>> images;  // EntryImage or TransformedImage
  std::vector<std::unique_ptr<LoadedModule>> modules;
  /// Where each module came from, index for index.
  struct Origin {
    /// How well its code fits the device: lower is better (fit_rank). A
    /// kernel two modules define comes from the better one.
    unsigned rank = 0;
    std::string file;  ///< FatBinary::file of its entry
  };
  std::vector<Origin> origins;
  StringMap<KernelSlot> kernels;
  /// How many bundles had no entry for the device, and why the first did: a
  /// kernel missing later is most likely in one of them. One message, not
  /// one per bundle: each lists its bundle's entries.
  std::size_t skipped = 0;
  std::string first_skipped;
  std::optional<Error> error;

  /// "; 2 bundles have no code object for this device, e.g. <why>", or "".
  std::string skipped_note() const;
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
  /// A wrapper's image is opened at its first use (open()): registering
  /// reads only the wrapper's record. `fat` then views a copy of the image,
  /// so no lookup reads the caller's pages. Until `opened`, these two are set and
  /// `fat` and `bundles` are not; after it, the reverse (or `open_error`).
  const void* wrapper = nullptr;
  std::span<const std::byte> reach;  ///< wrapper_reach: the image to its mapping's end
  /// A HIPK wrapper's code object index: its image is the file of the mapping
  /// that holds it (or ReadOptions::kpack.binary_path), its code in kpack archives.
  std::optional<std::uint32_t> kpack_index;
  /// The chosen entries of plain bundles are copied through checked reads
  /// (a registered file may shrink); false when `fat` views coload's own copy.
  bool copy_entries = true;
  std::mutex open_mutex;
  std::atomic<bool> opened{false};
  std::optional<Error> open_error;
  std::shared_ptr<const FatBinary> fat;
  std::vector<std::unique_ptr<BundleSlot>> bundles;
  std::unique_ptr<DeviceSlot[]> devices;  // one per device; destroyed first

  /// Sets `fat`, one BundleSlot per bundle, and `opened`; before the binary is shared.
  void set_opened(FatBinary opened_fat);
  void set_opened(std::shared_ptr<const FatBinary> opened_fat);
  /// Opens a wrapper's image once (measured within `reach` and copied
  /// through checked reads, its bundles located in the copy, which `fat`
  /// owns), logging a failure at warn; every later call gets the same
  /// answer. Errors: wrapped_image_in's, then FatBinary::from_memory's; for a
  /// HIPK wrapper, NotFound when no file holds it, then FatBinary::open_kpack_wrapper's.
  Expected<void> open(const ReadOptions& options, const Log& log);
  /// A HIPK wrapper's binary (open()'s part for one).
  Expected<FatBinary> open_kpack(const ReadOptions& options) const;

  ~Binary() {
    // Modules before the bytes, whatever the member order says.
    devices.reset();
    bundles.clear();
  }
};

}  // namespace coload::registry
