#include <algorithm>
#include <array>

#include "coload/target.h"

namespace coload {
namespace {

constexpr std::uint8_t W64 = kWave64;
constexpr std::uint8_t W32_64 = kWave32 | kWave64;
constexpr std::uint8_t W32 = kWave32;

// ROCr reports wave32 for every processor that has it (gfx10 and later), wave64 for gfx6-gfx9.
constexpr std::uint8_t first_wave(std::uint8_t waves) { return waves & kWave32 ? 32 : 64; }

// ROCr treats xnack as unsupported on these client APUs (ROCm PR #8237) and
// reports them bare, though LLVM still compiles `xnack+-` for them.
constexpr bool reported_without_xnack(std::string_view name) {
  return name == "gfx902" || name == "gfx909" || name == "gfx90c";
}

// Device defaults for features a spec leaves out: xnack off (ROCr's default
// process mode) where ROCr reports a mode, sramecc on (the data-centre parts
// that have it ship with ECC).
constexpr Processor processor(std::string_view name, std::uint32_t mach, std::uint8_t major, std::uint8_t minor,
                              std::uint8_t stepping, std::string_view generic, std::uint8_t min_generic,
                              XnackSupport xnack, bool sramecc, std::uint8_t waves, std::uint32_t lds, bool in_llvm22) {
  return Processor{
      .name = name,
      .mach = mach,
      .isa_major = major,
      .isa_minor = minor,
      .isa_stepping = stepping,
      .is_generic = false,
      .generic_family = generic,
      .min_generic_version = min_generic,
      .xnack = xnack,
      .sramecc = sramecc,
      .default_xnack =
          xnack == XnackSupport::OnOff && !reported_without_xnack(name) ? FeatureState::Off : FeatureState::Unsupported,
      .default_sramecc = sramecc ? FeatureState::On : FeatureState::Unsupported,
      .wave_sizes = waves,
      .default_wave_size = first_wave(waves),
      .lds_bytes = lds,
      .in_llvm22 = in_llvm22,
  };
}

constexpr Processor generic(std::string_view name, std::uint32_t mach, std::uint8_t major, std::uint8_t minor,
                            std::uint8_t stepping, XnackSupport xnack, bool sramecc, std::uint8_t waves,
                            std::uint32_t lds, bool in_llvm22) {
  Processor row = processor(name, mach, major, minor, stepping, "", 0, xnack, sramecc, waves, lds, in_llvm22);
  row.is_generic = true;
  return row;
}

using enum XnackSupport;

constexpr Processor kProcessors[] = {
#define COLOAD_PROCESSOR(...) processor(__VA_ARGS__),
#define COLOAD_GENERIC(...) generic(__VA_ARGS__),
#define COLOAD_ALIAS(alias, name)
#include "target/processors.def"
#undef COLOAD_PROCESSOR
#undef COLOAD_GENERIC
#undef COLOAD_ALIAS
};

struct Alias {
  std::string_view alias, name;
};
constexpr Alias kAliases[] = {
#define COLOAD_PROCESSOR(...)
#define COLOAD_GENERIC(...)
#define COLOAD_ALIAS(alias, name) Alias{alias, name},
#include "target/processors.def"
#undef COLOAD_PROCESSOR
#undef COLOAD_GENERIC
#undef COLOAD_ALIAS
};

constexpr const Processor* find_exact(std::string_view name) {
  for (const Processor& row : kProcessors) {
    if (row.name == name) return &row;
  }
  return nullptr;
}

// Names and aliases sorted, for a binary search: the selector looks up the
// processor of every entry ID of every bundle, and a scan of the table was
// a tenth of `coload select` on a 128-bundle image.
struct Named {
  std::string_view name;
  const Processor* row;
};
constexpr auto kByName = [] {
  std::array<Named, std::size(kProcessors) + std::size(kAliases)> index{};
  std::size_t next = 0;
  for (const Processor& row : kProcessors) index[next++] = {row.name, &row};
  for (const Alias& alias : kAliases) index[next++] = {alias.alias, find_exact(alias.name)};
  std::sort(index.begin(), index.end(), [](const Named& a, const Named& b) { return a.name < b.name; });
  return index;
}();
static_assert(std::adjacent_find(kByName.begin(), kByName.end(),
                                 [](const Named& a, const Named& b) { return a.name == b.name; }) == kByName.end(),
              "a processor name or alias is listed twice");
static_assert(std::none_of(kByName.begin(), kByName.end(), [](const Named& named) { return named.row == nullptr; }),
              "an alias names no processor");

}  // namespace

std::span<const Processor> processors() { return kProcessors; }

const Processor* find_processor(std::string_view name) {
  auto at = std::lower_bound(kByName.begin(), kByName.end(), name,
                             [](const Named& named, std::string_view key) { return named.name < key; });
  return at != kByName.end() && at->name == name ? at->row : nullptr;
}

const Processor* find_processor_by_mach(std::uint32_t mach) {
  for (const Processor& row : kProcessors) {
    if (row.mach == mach) return &row;
  }
  return nullptr;
}

}  // namespace coload
