// Internal: the one wrapper around comgr (libamd_comgr.so.2), loaded at run
// time, for the Unbundler::Comgr path of select_in_bundle.
//
// Covers: loading comgr with dlopen, the ISA names it knows, and its
// amd_comgr_lookup_code_object and amd_comgr_get_data_isa_name. Every call
// goes through one status check that names the comgr function; every comgr
// data object is released on every path. Does not cover: what the answers
// mean for selection (comgr_select.cpp) or comgr's compile actions.
// What Debian's comgr 5.2.3 really does is measured in docs/comgr.md.
//
// Lifetime and threads: a loaded library is never unloaded; Comgr objects live
// until the process ends and are immutable. Every function here may be called
// from many threads at once (each call uses its own comgr data object, which is
// what comgr requires for concurrent use).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "coload/error.h"

namespace coload::detail {

/// The soname select_in_bundle loads.
inline constexpr std::string_view kComgrLibrary = "libamd_comgr.so.2";

/// What bytes handed to comgr hold.
enum class ComgrInput : std::uint8_t {
  Bundle,      ///< a plain clang offload bundle (AMD_COMGR_DATA_KIND_FATBIN)
  CodeObject,  ///< a bare code object (AMD_COMGR_DATA_KIND_EXECUTABLE)
};

/// Where comgr found a code object for one query, as comgr reports it:
/// relative to the first byte handed to it and not checked against anything
/// (comgr 5.2.3 does not check entry ranges either).
struct ComgrHit {
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  friend bool operator==(const ComgrHit&, const ComgrHit&) = default;
};

/// A loaded comgr and the entry points coload uses.
class Comgr {
 public:
  /// Loads `path` (a soname or a file path) with dlopen(RTLD_NOW | RTLD_LOCAL)
  /// once per process and path; later calls return the same object. A failed
  /// load is not remembered, so it is retried next time. Errors: Io when
  /// dlopen fails (with dlerror's text), UnsupportedVersion when a needed
  /// function is missing, and comgr's failures while listing its ISAs.
  static Expected<const Comgr*> load(std::string_view path = kComgrLibrary);

  ~Comgr();
  Comgr(const Comgr&) = delete;
  Comgr& operator=(const Comgr&) = delete;

  /// As given to load().
  const std::string& path() const { return path_; }
  /// amd_comgr_get_version: the interface version, "2.4" for ROCm 5.2.3.
  const std::string& version() const { return version_; }
  /// Every ISA name comgr lists (amd_comgr_get_isa_name), in its order.
  std::span<const std::string> isa_names() const { return isa_names_; }
  /// Whether some listed ISA name is this processor, with or without features.
  bool knows_processor(std::string_view processor) const;

  /// amd_comgr_lookup_code_object over `data`, asked once per name (comgr
  /// 5.2.3 stops filling a list at its first filled query, so one call with
  /// many names can hide answers; docs/comgr.md). Result i answers
  /// isa_names[i]: nullopt when comgr found nothing. Errors: comgr's status
  /// for amd_comgr_create_data / set_data / lookup_code_object: Malformed
  /// for a bundle table comgr cannot read, InvalidArgument for bytes it does
  /// not take (on 5.2.3: compressed bundles, v5/v6 bare code objects).
  Expected<std::vector<std::optional<ComgrHit>>> lookup(std::span<const std::byte> data, ComgrInput input,
                                                        std::span<const std::string> isa_names) const;

  /// amd_comgr_get_data_isa_name of a bare code object, e.g.
  /// "amdgcn-amd-amdhsa--gfx90a:xnack-". comgr 5.2.3 answers InvalidArgument
  /// for code object v5 and v6.
  Expected<std::string> code_object_isa_name(std::span<const std::byte> code_object) const;

  /// The resolved entry points; defined in the .cpp so comgr's types stay there.
  struct Api;

 private:
  Comgr(std::string path, std::unique_ptr<const Api> api, std::string version, std::vector<std::string> isa_names);

  std::string path_;
  std::unique_ptr<const Api> api_;
  std::string version_;
  std::vector<std::string> isa_names_;
};

/// The processor of an ISA name: "amdgcn-amd-amdhsa--gfx90a:xnack-" → "gfx90a".
std::string_view isa_processor(std::string_view isa_name);

}  // namespace coload::detail
