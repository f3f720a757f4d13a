// The built-in same-ISA retarget pass: code built for one processor of a
// same-ISA group (docs/selection.md) relabelled for another, so a
// strict runtime (ROCr) accepts it. The rewrite is retarget_code_object's
// (src/hotswap/retarget.cpp); this file only binds it to its pairs.
#include "hotswap/passes.h"
#include "select/target_rules.h"

namespace coload::detail {

void register_SameIsaRetarget_pass(HotswapRegistry& registry) {
  HotswapPass pass;
  pass.name = "same-isa-retarget";
  pass.pairs = equivalent_pairs();
  pass.transform = [](std::span<const std::byte> source, const Device& device) {
    return retarget_code_object(source, device);
  };
  // The table's pairs are known processors and never identity pairs, and the
  // registry is empty but for earlier .def lines: add() cannot refuse this
  // unless the table is broken, which tests/hotswap_test.cpp catches.
  [[maybe_unused]] Expected<void> added = registry.add(std::move(pass));
}

}  // namespace coload::detail
