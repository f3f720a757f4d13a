// The registry's hotswap passes (hotswap_passes), and applying a hotswap or
// same-ISA pass to a chosen entry for one device (transform); registry_state.h.
#include "coload/config.h"
#include "coload/detail/hotswap.h"
#include "coload/validate.h"
#include "common/try.h"
#include "registry/registry_state.h"

namespace coload::registry {

std::shared_ptr<const HotswapRegistry> hotswap_passes(const Config& config,
                                                      std::shared_ptr<const HotswapRegistry> given, const Log& log,
                                                      std::optional<Error>& error) {
  if (given) return given;
  if (!config.hotswap) {
    // Only the same-ISA retarget can run: the built-in passes, no plugin.
    // A plugin or pairs set without the switch would otherwise be a silent no-op (docs/environment.md).
    if (!config.hotswap_plugin.empty() || !config.hotswap_pairs.empty()) {
      log(LogLevel::Warn, [] {
        return std::string(
            "COLOAD_HOTSWAP_PLUGIN or COLOAD_HOTSWAP_PAIRS is set but COLOAD_HOTSWAP is not 1: "
            "the hotswap tier is off, no plugin is loaded and the pairs are not read");
      });
    }
    return std::shared_ptr<const HotswapRegistry>(std::shared_ptr<const void>(), &HotswapRegistry::builtin());
  }
  auto built = hotswap_registry(config);
  if (built) return std::make_shared<const HotswapRegistry>(std::move(*built));
  error = std::move(built).error();
  return std::make_shared<const HotswapRegistry>();
}

Expected<std::shared_ptr<const TransformedImage>> transform(const HotswapRegistry& hotswap,
                                                            const std::shared_ptr<const EntryImage>& image, Tier tier,
                                                            const Device& device, Counters& counters) {
  // Hotswap goes through the passes this registry was given; the same-ISA
  // relabelling is always the built-in pass.
  const HotswapRegistry& passes = tier == Tier::Hotswap ? hotswap : HotswapRegistry::builtin();
  auto ran = run_hotswap_pass(passes, image->bytes, image->code_object.target().target.processor, device);
  COLOAD_RETURN_IF_ERROR(ran);
  const std::string& where = ran->where;
  auto out = std::make_shared<TransformedImage>();
  out->source = image;
  out->bytes = std::move(ran->bytes);
  counters.add(counters.code_objects_read);
  auto read = CodeObject::read(out->bytes);
  if (!read) return std::move(read).error().with_context(where + ": output");
  COLOAD_RETURN_IF_ERROR(admit(*read, device, where + ": output"));
  out->code_object = std::move(*read);
  return std::shared_ptr<const TransformedImage>(std::move(out));
}

}  // namespace coload::registry
