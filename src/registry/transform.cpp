// Applying a hotswap or same-ISA pass to a chosen entry for one device
// (registry_state.h, transform).
#include "coload/validate.h"
#include "common/try.h"
#include "registry/registry_state.h"

namespace coload::registry {

Expected<std::shared_ptr<const TransformedImage>> transform(const HotswapRegistry& hotswap,
                                                            const std::shared_ptr<const EntryImage>& image, Tier tier,
                                                            const Device& device, Counters& counters) {
  const std::string target = device.str();
  const Processor* from = image->code_object.target().target.processor;
  const Processor* to = device.target.processor;
  if (!from || !to) {
    return Error(ErrorKind::InvalidArgument, "device " + target + ": no known processor to transform between");
  }
  // Hotswap goes through the passes this registry was given; the same-ISA
  // relabelling is always the built-in pass.
  const HotswapRegistry& passes = tier == Tier::Hotswap ? hotswap : HotswapRegistry::builtin();
  const HotswapPass* pass = passes.find_pair(from->name, to->name);
  if (!pass) {
    return Error(ErrorKind::NotFound, "no hotswap pass is registered for " + std::string(from->name) + " -> " +
                                          std::string(to->name) + " (device " + target + ")");
  }
  const std::string where = "hotswap pass \"" + pass->name + "\" for device " + target;
  if (pass->device_check) {
    if (auto checked = pass->device_check(device); !checked) return std::move(checked).error().with_context(where);
  }
  auto bytes = pass->transform(image->bytes, device);
  if (!bytes) return std::move(bytes).error().with_context(where);
  auto out = std::make_shared<TransformedImage>();
  out->source = image;
  out->bytes = std::move(*bytes);
  counters.add(counters.code_objects_read);
  auto read = CodeObject::read(out->bytes);
  if (!read) return std::move(read).error().with_context(where + ": output");
  COLOAD_RETURN_IF_ERROR(admit(*read, device, where + ": output"));
  out->code_object = std::move(*read);
  return std::shared_ptr<const TransformedImage>(std::move(out));
}

}  // namespace coload::registry
