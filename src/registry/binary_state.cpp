// One registration's lazy opening (binary_state.h).
#include "registry/binary_state.h"

#include "coload/wrapper.h"

namespace coload::registry {

void Binary::set_opened(FatBinary opened_fat) {
  fat = std::make_shared<const FatBinary>(std::move(opened_fat));
  for (std::size_t i = 0; i < fat->bundles().size(); ++i) bundles.push_back(std::make_unique<BundleSlot>());
  opened.store(true, std::memory_order_release);
}

Expected<void> Binary::open(const ReadOptions& options, const Log& log) {
  if (!opened.load(std::memory_order_acquire)) {
    std::lock_guard lock(open_mutex);
    if (!opened.load(std::memory_order_relaxed)) {
      auto image = wrapped_image_in(wrapper, reach, options);
      auto opened_fat = image ? FatBinary::from_memory(*image, name, options) : std::move(image).error();
      if (opened_fat) {
        set_opened(std::move(*opened_fat));
      } else {
        open_error = std::move(opened_fat).error();
        log(LogLevel::Warn, [&] { return open_error->message(); });  // once, as a failed load is
        opened.store(true, std::memory_order_release);
      }
    }
  }
  if (open_error) return *open_error;
  return {};
}

}  // namespace coload::registry
