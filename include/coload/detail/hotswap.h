// coload/detail/hotswap.h: transpiler passes that turn a code object built for one
// processor into one for another, bound through an explicit table.
//
// Unstable, for the coload tool and the tests: it may change in any
// release; programs turn the hotswap tier on through coload/config.h.
//
// Covers: the pass type, the process-wide registry of built-in passes
// (src/hotswap/passes.def), external passes loaded from a plugin
// (coload/hotswap_plugin.h, COLOAD_HOTSWAP_PLUGIN), the allowlist the
// selector's hotswap tier consults, and the built-in same-ISA retarget.
// Does not cover: when a pass is used: only for a validated pair, when no
// native or generic code object fits (docs/selection.md, "Hotswap passes").
//
// Ownership: a HotswapRegistry owns its passes and keeps a plugin loaded
// while its pass may run. Threads: a registry is thread-safe once built.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "coload/config.h"
#include "coload/device.h"
#include "coload/error.h"
#include "coload/select.h"
#include "coload/target.h"

namespace coload {

/// One transpiler pass.
struct HotswapPass {
  using Transform =
      std::function<Expected<std::vector<std::byte>>(std::span<const std::byte> source, const Device& device)>;
  using DeviceCheck = std::function<Expected<void>(const Device& device)>;

  std::string name;
  /// (source processor → device processor) pairs the pass is validated for.
  std::vector<HotswapAllowlist::Pair> pairs;
  /// Transforms a code object built for a pair's source into one for
  /// `device`, or fails. Its output goes through the whole validator.
  Transform transform;
  /// Optional: whether the pass applies to this device (e.g. ASIC stepping).
  DeviceCheck device_check;
};

/// Passes by name and by pair. Thread-safe after construction.
class HotswapRegistry {
 public:
  /// The built-in passes of src/hotswap/passes.def, bound once per process.
  static const HotswapRegistry& builtin();

  /// Adds `pass` with its pairs canonicalised. Errors: InvalidArgument for
  /// an empty name, no pairs, no transform or a name already registered; the
  /// error of HotswapAllowlist::add for a pair it refuses (NotFound for an
  /// unknown processor, InvalidArgument for an identity pair or a generic
  /// target); Ambiguous for a pair another pass already covers.
  Expected<void> add(HotswapPass pass);
  /// Loads an external pass from a plugin (coload/hotswap_plugin.h). Errors
  /// name the path and the symbol or value at fault; the process keeps working:
  /// Io when dlopen fails, NotFound for a missing symbol, UnsupportedVersion
  /// for another ABI version, Malformed / LimitExceeded for a bad name or
  /// pair list, and add()'s errors. The pass's transform turns a plugin
  /// failure into InvalidArgument, no output into Malformed, and output that
  /// is not an AMDHSA code object into read_code_object_target's error, each
  /// naming the plugin and the device.
  Expected<void> add_plugin(const std::string& path);

  /// The pass called `name`, or null.
  const HotswapPass* find(std::string_view name) const;
  /// The pass validated for (source → device), or null. Aliases are accepted.
  const HotswapPass* find_pair(std::string_view source, std::string_view device) const;
  /// Every pass, in registration order.
  std::span<const std::unique_ptr<HotswapPass>> passes() const { return passes_; }
  /// Every validated pair of every pass.
  HotswapAllowlist allowlist() const;

 private:
  std::vector<std::unique_ptr<HotswapPass>> passes_;
  std::vector<std::shared_ptr<void>> plugins_;  ///< keeps plugin libraries loaded
};

/// A pass's output for one device, with the words naming where it came from.
struct HotswapOutput {
  std::vector<std::byte> bytes;  ///< as the pass returned it: not yet read or validated
  std::string where;             ///< `hotswap pass "NAME" for device TARGET`
};

/// Runs on `source` (a code object built for `from`) the pass for (`from` →
/// `device`'s processor): `passes`' for the hotswap tier, the built-in
/// registry's for a same-ISA equivalent. The output still needs reading and
/// validating for `device` (validate.h's admit). Errors: InvalidArgument
/// when either processor is unknown; NotFound when no pass covers the pair;
/// the pass's device check's and transform's errors, in the pass's context.
Expected<HotswapOutput> run_hotswap_pass(const HotswapRegistry& passes, std::span<const std::byte> source,
                                         const Processor* from, const Device& device);

/// The registry `config` asks for: the built-in passes, then the pass of
/// COLOAD_HOTSWAP_PLUGIN when set. Errors: add_plugin's; NotFound when
/// COLOAD_HOTSWAP_PAIRS names a pair no pass is validated for. Narrowing by
/// hotswap_pairs is select_options(config, registry)'s.
Expected<HotswapRegistry> hotswap_registry(const Config& config);

/// The unbundler and hotswap switch of `config`; with hotswap on, the
/// allowlist is `registry`'s (hotswap_registry(config) for the plugin too)
/// narrowed to config.hotswap_pairs when that is not empty.
SelectOptions select_options(const Config& config, const HotswapRegistry& registry);
/// select_options(config, HotswapRegistry::builtin()); the registry is not
/// built when hotswap is off.
SelectOptions select_options(const Config& config);

/// The built-in same-ISA retarget: rewrites the ELF header's EF_AMDGPU_MACH
/// (and xnack/sramecc bits where the device needs them) and the metadata's
/// `amdhsa.target` for `device`, keeping every other byte identical. Valid
/// for the same-ISA groups of docs/selection.md, and for a generic object on
/// a member of its family that its generic version covers (the generic
/// version is cleared: a runtime that loads no generics loads it). xnack/sramecc:
/// On/Off stay and must match the device; an open feature becomes Any where
/// the device's processor has the mode, Unsupported where it lacks it. The
/// output is read back (no problems, the device's target) before it is
/// returned; it is a new buffer, the input is not referenced after the call.
/// Errors: InvalidArgument for a pair outside those groups (the same
/// processor included) or a pinned feature the device does not run in;
/// UnsupportedVersion for code object v3; Malformed for an input with
/// problems or an output that does not read back as the device's;
/// UnsupportedMethod when a re-encoded metadata note would outgrow its
/// padding; and the errors of CodeObject::read for the input.
Expected<std::vector<std::byte>> retarget_code_object(std::span<const std::byte> code_object, const Device& device);

}  // namespace coload
