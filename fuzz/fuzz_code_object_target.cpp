// Fuzzes reading a code object's target from its ELF header, and checks what
// target.h promises of a success: the fields agree with the header bytes, and
// the printed target ID parses back to the same constraints.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "coload/target.h"

namespace {

// Not assert: the check must hold in release builds and in the ctest replay.
void require(bool condition) {
  if (!condition) __builtin_trap();
}

/// Any and Unsupported constrain nothing (docs/selection.md): neither is printed.
bool unconstrained(coload::FeatureState state) {
  return state == coload::FeatureState::Any || state == coload::FeatureState::Unsupported;
}

bool writable(const coload::Processor& processor, bool xnack) {
  return xnack ? processor.xnack == coload::XnackSupport::OnOff : processor.sramecc;
}

/// str() must print the On/Off states and parse back to them. Objects whose
/// e_flags set a feature the target ID cannot spell (xnack on or off on an
/// always-on xnack processor, printed as ROCr names it; sramecc on a
/// processor without the mode) have no target ID text; for them only the
/// printing is checked.
void check_round_trip(const coload::TargetId& target) {
  const coload::Processor& processor = *target.processor;
  std::string text = target.str();
  require(text.starts_with(processor.name));

  auto printed = [&](coload::FeatureState state, bool) { return !unconstrained(state); };
  bool spellable = true;
  for (bool xnack : {false, true}) {
    coload::FeatureState state = xnack ? target.xnack : target.sramecc;
    if (printed(state, xnack) && !writable(processor, xnack)) spellable = false;
  }
  if (!spellable) return;

  auto parsed = coload::TargetId::parse(text);
  require(parsed.has_value());
  require(parsed->processor == target.processor);
  for (bool xnack : {false, true}) {
    coload::FeatureState before = xnack ? target.xnack : target.sramecc;
    coload::FeatureState after = xnack ? parsed->xnack : parsed->sramecc;
    if (printed(before, xnack)) {
      require(after == before);
    } else {
      require(unconstrained(after));
    }
  }
  require(parsed->str() == text);  // canonical text is a fixed point
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  auto result = coload::read_code_object_target(bytes);
  if (!result) {
    require(!result.error().message().empty());
    return 0;
  }
  // Only the 64-byte header is read; a success means it was all there.
  require(size >= 64);
  std::uint32_t e_flags = 0;
  std::memcpy(&e_flags, data + 0x30, sizeof e_flags);
  require(result->e_flags == e_flags);
  require(result->code_object_version >= 3 && result->code_object_version <= 6);
  require(result->code_object_version == data[8] + 2u);  // EI_ABIVERSION 1..4
  if (result->code_object_version < 6) require(result->generic_version == 0);
  require(result->generic_version <= 255);
  const coload::Processor* processor = result->target.processor;
  require(processor != nullptr);
  require(processor == coload::find_processor_by_mach(e_flags & 0xff));
  check_round_trip(result->target);
  return 0;
}
