// The marker of a kpack'd host image (kpack_archive.h, parse_marker): the
// first msgpack value at the pointer, read strictly; bytes after it belong
// to whatever the section or mapping holds next.
#include <array>

#include "coload/detail/kpack_archive.h"
#include "common/try.h"
#include "msgpack/msgpack_reader.h"

namespace coload::detail::kpack {

namespace {

using llvm::msgpack::Type;
using msgpack::Path;
using msgpack::Value;

class MarkerReader : public msgpack::Reader {
 public:
  explicit MarkerReader(Bytes bytes) : Reader(bytes, "kpack marker", 3) {}

  Expected<Marker> read() {
    const Path top;
    Value root;
    COLOAD_RETURN_IF_ERROR(next(root, top));
    if (root.kind() != Type::Map) return wrong_type(top, root, "a map");
    Marker marker;
    msgpack::KeySet seen;
    COLOAD_RETURN_IF_ERROR(entries(root, top, 1, seen, [&](std::string_view name, const Path& path) -> Expected<void> {
      if (name == "kernel_name") {
        auto text = non_empty(path);
        COLOAD_RETURN_IF_ERROR(text);
        marker.kernel_name = *text;
        return {};
      }
      if (name == "kpack_search_paths") return search_paths(path, marker);
      Value value;
      COLOAD_RETURN_IF_ERROR(next(value, path));
      return skip(value, path, 2);
    }));
    static constexpr std::array<std::string_view, 2> kRequired = {"kernel_name", "kpack_search_paths"};
    COLOAD_RETURN_IF_ERROR(require(seen, kRequired, top, root));
    marker.size = position();
    return marker;
  }

 private:
  Expected<std::string_view> non_empty(const Path& path) {
    std::uint64_t at = position();
    auto text = identifier(path);
    if (text && text->empty()) return malformed(path, at, "the string is empty");
    return text;
  }

  Expected<void> search_paths(const Path& path, Marker& marker) {
    Value array;
    COLOAD_RETURN_IF_ERROR(next(array, path));
    if (array.kind() != Type::Array) return wrong_type(path, array, "an array of paths");
    if (array.object.Length == 0) return malformed(path, array.offset, "no search path");
    COLOAD_RETURN_IF_ERROR(open(array, path, 2));
    for (std::size_t i = 0; i < array.object.Length; ++i) {
      auto text = non_empty(path.index(i));
      COLOAD_RETURN_IF_ERROR(text);
      marker.search_paths.emplace_back(*text);
    }
    return {};
  }
};

}  // namespace

Expected<Marker> parse_marker(std::span<const std::byte> bytes) {
  MarkerReader reader(bytes.first(std::min<std::size_t>(bytes.size(), kMaxMarkerBytes)));
  return reader.read();
}

}  // namespace coload::detail::kpack
