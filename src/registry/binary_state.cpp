// One registration's lazy opening (binary_state.h).
#include "registry/binary_state.h"

#include <optional>
#include <vector>

#include "coload/detail/wrapper.h"
#include "common/try.h"
#include "formats/kpack_image.h"

namespace coload::registry {

namespace {

/// A wrapper's image, copied at first use, and the binary located in the copy.
struct CopiedImage {
  std::vector<std::byte> bytes;
  std::optional<FatBinary> fat;
};

}  // namespace

std::string DeviceState::skipped_note() const {
  if (skipped == 0) return {};
  return "; " + std::to_string(skipped) + (skipped == 1 ? " bundle has" : " bundles have") +
         " no code object for this device, e.g. " + first_skipped;
}

void Binary::set_opened(FatBinary opened_fat) { set_opened(std::make_shared<const FatBinary>(std::move(opened_fat))); }

void Binary::set_opened(std::shared_ptr<const FatBinary> opened_fat) {
  fat = std::move(opened_fat);
  for (std::size_t i = 0; i < fat->bundles().size(); ++i) bundles.push_back(std::make_unique<BundleSlot>());
  opened.store(true, std::memory_order_release);
}

Expected<FatBinary> Binary::open_kpack(const ReadOptions& options) const {
  auto path = detail::kpack_wrapper_file(wrapper, name, options);
  COLOAD_RETURN_IF_ERROR(path);
  return FatBinary::open_kpack_wrapper(*path, *kpack_index, name, options);
}

Expected<void> Binary::open(const ReadOptions& options, const Log& log) {
  if (!opened.load(std::memory_order_acquire)) {
    std::lock_guard lock(open_mutex);
    if (!opened.load(std::memory_order_relaxed)) {
      // Copied through checked reads: nothing a later mprotect or truncation
      // does to the caller's pages can fault a lookup (docs/reading-rules.md).
      if (kpack_index) {
        auto opened_fat = open_kpack(options);
        if (opened_fat) {
          set_opened(std::move(*opened_fat));
        } else {
          open_error = std::move(opened_fat).error();
          log(LogLevel::Warn, [&] { return open_error->message(); });
          opened.store(true, std::memory_order_release);
        }
        if (open_error) return *open_error;
        return {};
      }
      auto copy = std::make_shared<CopiedImage>();
      auto image = wrapped_image_in(wrapper, reach, options);
      if (image) copy->bytes = std::move(*image);
      auto opened_fat = image ? FatBinary::from_memory(copy->bytes, name, options) : std::move(image).error();
      if (opened_fat) {
        copy->fat.emplace(std::move(*opened_fat));
        const FatBinary* located = &*copy->fat;
        set_opened(std::shared_ptr<const FatBinary>(std::move(copy), located));
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
