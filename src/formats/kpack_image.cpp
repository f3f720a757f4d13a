// kpack'd host images shared by their wrappers (kpack_image.h).
#include "formats/kpack_image.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

#include "common/try.h"

namespace coload::detail {

namespace {

/// What makes two opens the same: the file as it is now, and the search.
using ImageKey = std::tuple<dev_t, ino_t, off_t, std::int64_t, std::int64_t, std::string>;

std::string search_key(const ReadOptions& options) {
  const KpackSearch& search = options.kpack;
  std::string key = search.root + '\n' + search.binary_path + '\n' + (search.disabled ? "1" : "0") + '\n' +
                    std::to_string(options.max_decompressed_bytes) + '\n';
  for (const std::string& path : search.paths) key += path + ':';
  key += '\n';
  for (const std::string& path : search.prefix_paths) key += path + ':';
  return key;
}

struct ImageCache {
  std::mutex mutex;
  std::map<ImageKey, std::weak_ptr<const KpackImage>> images;
};

ImageCache& cache() {
  static ImageCache* images = new ImageCache;  // never destroyed: wrappers unregister during exit
  return *images;
}

}  // namespace

Expected<std::shared_ptr<const KpackImage>> open_kpack_image(const std::string& path, const ReadOptions& options) {
  struct stat status{};
  if (::stat(path.c_str(), &status) != 0) {
    return Error(ErrorKind::Io, "cannot stat: " + std::string(std::strerror(errno))).in_file(path);
  }
  const ImageKey key{status.st_dev,         status.st_ino,          status.st_size,
                     status.st_mtim.tv_sec, status.st_mtim.tv_nsec, search_key(options)};
  ImageCache& images = cache();
  std::lock_guard lock(images.mutex);  // one opener at a time: the others wait for its image
  if (auto it = images.images.find(key); it != images.images.end()) {
    if (auto image = it->second.lock()) return image;
  }
  auto host = Source::map_file(path);
  COLOAD_RETURN_IF_ERROR(host);
  auto layout = inspect_source(host->bytes());
  if (!layout) return std::move(layout).error().in_file(path);
  if (!layout->kpack_ref) {
    return Error(ErrorKind::InvalidArgument, "a HIPK wrapper's image is no kpack'd host image (no HIPK wrapper in it)")
        .at_field("magic", 0)
        .in_file(path);
  }
  auto image = std::make_shared<KpackImage>(KpackImage{.host = std::move(*host), .layout = std::move(*layout)});
  auto bundles = kpack_input_bundles(image->host, image->layout, options);
  if (!bundles) return std::move(bundles).error().in_file(path);
  image->bundles = std::move(*bundles);
  for (auto it = images.images.begin(); it != images.images.end();) {  // drop the expired
    it = it->second.expired() ? images.images.erase(it) : std::next(it);
  }
  images.images[key] = image;
  return std::shared_ptr<const KpackImage>(std::move(image));
}

}  // namespace coload::detail
