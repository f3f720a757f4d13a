// Internal: what the preload interposer (docs/preload.md) does with one
// `__hip_fatbin_wrapper` for the machine's GPUs: pass it on, or hand the
// runtime a new plain bundle holding, for each GPU, the code object coload
// chooses, labelled so that the runtime's own lookup finds it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "coload/bundle.h"
#include "coload/detail/hotswap.h"
#include "coload/detail/stream_select.h"
#include "coload/device.h"
#include "coload/fat_binary.h"
#include "coload/select.h"

namespace coload::preload {

/// What happens on one GPU.
enum class Outcome {
  RuntimeFinds,  ///< the runtime's lookup finds a native (or, where it loads them, generic) entry itself
  Rewritten,     ///< coload's choice, relabelled for the GPU, is in the new bundle
  NoFit,         ///< nothing fits, or coload's choice could not be written
};

struct GpuDecision {
  Outcome outcome = Outcome::NoFit;
  std::optional<Tier> tier;  ///< the chosen entry's tier, when one was chosen
  std::string source_id;     ///< the chosen entry's ID as stored
  std::string written_id;    ///< Rewritten: the ID the new bundle holds it under
  std::string why;           ///< NoFit: the nearest miss, or why the choice was not written
};

/// The plan for one wrapper.
struct WrapperPlan {
  /// Empty when the wrapper goes on as it is; else the bundle to hand over.
  std::vector<std::byte> bundle;
  /// Set when the wrapper could not be read: it goes on as it is.
  std::string unreadable;
  std::vector<GpuDecision> gpus;  ///< one per device, in order (empty when unreadable)
};

struct PlanOptions {
  std::span<const Device> devices;
  SelectOptions select;
  /// The passes of the hotswap tier (select.hotswap): a chosen source goes
  /// through its pass, and the output, read and validated for the GPU, is
  /// written. Null: no pass runs (such a GPU gets nothing).
  const HotswapRegistry* hotswap = nullptr;
  StreamOptions stream;
  ReadOptions read;
  /// The runtime loads HIPK records from their kpack archives itself (a CLR
  /// linked to librocm_kpack, session.h's runtime_loads_kpack): a kpack'd
  /// wrapper's native or generic entry is then one it finds, as a HIPF
  /// wrapper's is.
  bool runtime_loads_kpack = false;
};

/// Whether a HIPK wrapper goes on as it came whatever its archives hold:
/// the runtime loads kpack archives and coload could offer no GPU anything
/// but the native or generic entry the runtime's own lookup finds (no GPU
/// opts into same-ISA code, every release loads generics, hotswap off).
bool kpack_needs_nothing(const PlanOptions& options);

/// The bundle entry ID the runtime's lookup finds a code object of target
/// `target` under ("hipv4-amdgcn-amd-amdhsa--gfx1031").
std::string hip_entry_id(const TargetId& target);

/// What a wrapper's entry IDs alone say for one GPU (as comgr's lookup reads them).
enum class IdScreen : std::uint8_t {
  Served,   ///< an entry the runtime finds for the GPU: native, or generic where the release loads it
  Related,  ///< none, but one coload may relabel or transform for it (same-ISA, generic, hotswap): plan it
  Nothing,  ///< no entry coload could use for the GPU
};

/// The bytes of a bundle the ID screen reads: its table, for up to ~60 entries.
inline constexpr std::size_t kScreenedBytes = 4096;

/// Sets `out` (one per device of `options`) to what the entry IDs `ids` of
/// one bundle offer each device. Allocates nothing.
void screen_ids(std::span<const std::string_view> ids, const PlanOptions& options, std::span<IdScreen> out);
void screen_ids(std::span<const std::string> ids, const PlanOptions& options, std::span<IdScreen> out);

/// Screens, into `out` as screen_ids does, the plain bundle whose first bytes
/// are `head` (up to kScreenedBytes, as many as are readable), from its
/// table's entry IDs; nothing past the table is read, nothing is allocated.
/// False when the IDs cannot decide: no plain bundle (a CCOB, a bare code
/// object), a table past `head`.
bool screen_table(std::span<const std::byte> head, const PlanOptions& options, std::span<IdScreen> out);

/// The entry IDs of the CCOB `image` (the readable bytes from its first),
/// from the table its stream starts with, decoded as options.stream says
/// (Verify mode: the whole stream and its MD5, unless a verified mark trusts
/// it, so IDs mean the MD5 matched; Skip mode: the table alone). nullopt
/// when there are none to read: no CCOB, a version 1 CCOB, a stream that
/// fails.
std::optional<std::vector<std::string>> compressed_table_ids(std::span<const std::byte> image,
                                                             const PlanOptions& options);

/// Plans `wrapper` (the pointer __hipRegisterFatBinary receives; `name`
/// names it in messages). Reads the record and its image through checked
/// reads (a HIPK record's image and archives from its file); never throws,
/// never faults: whatever cannot be read sets `unreadable`. A GPU whose
/// choice is native, or generic on a runtime that loads generics, is one the
/// runtime serves itself; the wrapper is rewritten only when some GPU gets a
/// code object the runtime would not find (a same-ISA equivalent, a generic
/// on a runtime without generics, a hotswap pass's output, a kpack archive's
/// entry).
WrapperPlan plan_wrapper(const void* wrapper, const std::string& name, const PlanOptions& options);

/// Plans the image `image` points at (hipModuleLoadData's: a plain bundle,
/// a CCOB or a bare code object, without a size), as plan_wrapper plans a
/// wrapper's image; `options.devices` is the device it is loaded on.
WrapperPlan plan_image(const void* image, const std::string& name, const PlanOptions& options);

/// Plans bundle `index` of `binary` (a file's: `coload run --dry-run`), as
/// plan_wrapper plans a wrapper's; a kpack bundle counts as a HIPK wrapper's.
WrapperPlan plan_bundle(const FatBinary& binary, std::size_t index, const PlanOptions& options);

}  // namespace coload::preload
