// kpack'd host images shared by their wrappers (kpack_image.h).
#include "formats/kpack_image.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

#include "common/try.h"
#include "io/process_maps.h"

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

Expected<std::string> kpack_wrapper_file(const void* wrapper, const std::string& name, const ReadOptions& options) {
  if (!options.kpack.binary_path.empty()) return options.kpack.binary_path;
  // The loaded object that holds it, from the dynamic loader (cheap, as every
  // wrapper of a library asks); /proc/self/maps for other mappings.
  if (Dl_info object{}; ::dladdr(wrapper, &object) != 0 && object.dli_fname && object.dli_fname[0] == '/') {
    return std::string(object.dli_fname);
  }
  auto mapped = mapped_file_at(wrapper);
  COLOAD_RETURN_IF_ERROR(mapped);
  if (!*mapped) {
    return Error(ErrorKind::NotFound,
                 "a HIPK wrapper in memory no file is mapped at: its kpack'd image (and so its archives) is "
                 "unknown; give the binary's path (KpackSearch::binary_path, "
                 "coload_registry_options.kpack_binary_path)")
        .in_file(name);
  }
  return std::move(**mapped);
}

}  // namespace coload::detail
