// coload/target.h: AMDGPU processors, target IDs, bundle entry IDs, and the
// target a code object declares in its ELF header.
//
// Covers: the processor table (docs/selection.md),
// parsing, canonicalising and printing target IDs ("gfx90a:sramecc+:xnack-")
// and bundle entry IDs ("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-"), reading a
// code object's target from e_flags, and the xnack/sramecc compatibility rule.
// Does not cover: choosing among entries (coload/select.h).
//
// Ownership and threads: the processor table is static and immutable; IDs
// are values; the functions share no state.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "coload/error.h"

namespace coload {

/// The state of one target-ID feature (xnack or sramecc).
enum class FeatureState : std::uint8_t {
  Unsupported,  ///< the processor has no such mode
  Any,          ///< supported, not specified: runs in either mode
  Off,
  On,
};
std::string_view to_string(FeatureState state);

/// How a processor exposes xnack.
enum class XnackSupport : std::uint8_t {
  None,      ///< no xnack
  OnOff,     ///< selectable in target IDs (`xnack+` / `xnack-`)
  AlwaysOn,  ///< always on, not writable in target IDs (gfx1250, gfx1251)
};

/// Wave sizes, as a bit mask.
enum WaveSize : std::uint8_t { kWave32 = 1, kWave64 = 2 };

/// One row of the processor table.
struct Processor {
  std::string_view name;   ///< canonical name, e.g. "gfx90a" or "gfx9-generic"
  std::uint32_t mach = 0;  ///< EF_AMDGPU_MACH
  std::uint8_t isa_major = 0, isa_minor = 0, isa_stepping = 0;
  bool is_generic = false;
  /// For a processor: the generic target that runs on it ("" if none).
  std::string_view generic_family;
  /// For a processor in a family: the lowest generic version that runs on it.
  std::uint8_t min_generic_version = 0;
  XnackSupport xnack = XnackSupport::None;
  bool sramecc = false;  ///< sramecc selectable in target IDs
  /// Device defaults when a spec string leaves a supported feature out.
  FeatureState default_xnack = FeatureState::Unsupported;
  FeatureState default_sramecc = FeatureState::Unsupported;
  std::uint8_t wave_sizes = 0;         ///< WaveSize mask
  std::uint8_t default_wave_size = 0;  ///< what the runtime reports
  std::uint32_t lds_bytes = 0;         ///< LDS per work-group; 0 = unconfirmed
  bool in_llvm22 = false;              ///< LLVM 22.1 knows it (tests check against LLVM)
};

/// Every processor and generic target, in EF_AMDGPU_MACH order.
std::span<const Processor> processors();
/// By canonical name or LLVM alias ("fiji" is gfx803); null when unknown.
const Processor* find_processor(std::string_view name);
/// By EF_AMDGPU_MACH; null for unknown, reserved or retired values.
const Processor* find_processor_by_mach(std::uint32_t mach);

/// A target ID: a processor and its xnack/sramecc states. Features the
/// processor lacks are Unsupported; omitted supported features are Any.
struct TargetId {
  const Processor* processor = nullptr;
  FeatureState sramecc = FeatureState::Unsupported;
  FeatureState xnack = FeatureState::Unsupported;

  /// Parses "gfx90a", "gfx90a:xnack-", "gfx90a:sramecc+:xnack-" (any feature
  /// order, aliases allowed). Errors: NotFound for an unknown processor,
  /// Malformed for a feature the processor lacks, a repeated feature, or
  /// anything that is not `name+` / `name-`.
  static Expected<TargetId> parse(std::string_view text);
  /// Canonical text: primary processor name, features in alphabetical order,
  /// Any and Unsupported omitted.
  std::string str() const;
  std::string_view processor_name() const { return processor ? processor->name : std::string_view{}; }
  /// Every supported feature On or Off (what a device reports).
  bool is_concrete() const;

  friend bool operator==(const TargetId&, const TargetId&) = default;
};

/// Why code with target `code` cannot run in the feature modes of `device`,
/// or "" when it can (the feature rule of docs/selection.md: an On/Off feature must
/// equal the device's; Any and Unsupported constrain nothing). Processors are
/// not compared. An always-on xnack device counts as xnack On.
std::string feature_mismatch(const TargetId& code, const TargetId& device);
/// feature_mismatch(code, device).empty(), without building the words.
bool features_fit(const TargetId& code, const TargetId& device);

/// Offload kinds of bundle entry IDs.
enum class OffloadKind : std::uint8_t { Host, Hip, HipV4, Hcc, OpenMP, Other };
std::string_view to_string(OffloadKind kind);

/// A bundle entry ID: `<kind>-<arch>-<vendor>-<os>-<env>-<target>`.
struct EntryId {
  std::string text;  ///< the ID as written
  OffloadKind kind = OffloadKind::Other;
  std::string kind_text;  ///< as written ("hipv4")
  std::string arch, vendor, os, environment;
  std::string target_text;  ///< everything after the fifth dash
  /// Set for AMDGPU (amdgcn-amd-amdhsa) device entries.
  std::optional<TargetId> target;
  /// `amdgcnspirv` on a spirv64 triple: portable code a runtime must JIT.
  bool is_spirv = false;

  /// Parses an ID. A host ID may carry any triple (3-part ones included).
  /// Errors: Malformed for a device ID with fewer than five dashes or no
  /// target, features on amdgcnspirv, and the errors of TargetId::parse.
  static Expected<EntryId> parse(std::string_view id);
  /// The ID with the target canonicalised and an `unknown` AMDHSA environment
  /// written empty, as clang-offload-bundler 22 writes it. Host IDs as written.
  std::string canonical() const;
  /// amdgcn-amd-amdhsa with an empty or `unknown` environment.
  bool is_amdhsa() const;
};

/// The target a code object declares in its ELF header.
struct CodeObjectTarget {
  TargetId target;
  /// 3..6, from EI_ABIVERSION (1 → v3, 2 → v4, 3 → v5, 4 → v6).
  unsigned code_object_version = 0;
  /// EF_AMDGPU_GENERIC_VERSION for v6+ objects, otherwise 0.
  unsigned generic_version = 0;
  std::uint32_t e_flags = 0;
  std::uint16_t e_type = 0;  ///< ET_DYN (3) for what a loader takes
};

/// Reads the target from an AMDHSA code object's ELF header (only the header
/// is needed). Errors: Truncated, BadMagic (not ELF), Malformed (not 64-bit
/// little-endian, not EM_AMDGPU, not the AMDHSA OS ABI), UnsupportedVersion
/// (code object v2 or an unknown ABI version), NotFound (unknown
/// EF_AMDGPU_MACH), each naming the field and value.
Expected<CodeObjectTarget> read_code_object_target(std::span<const std::byte> elf);

}  // namespace coload
