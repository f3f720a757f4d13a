// The lines of /proc/self/maps (io/process_maps.h).
#include "io/process_maps.h"

#include <charconv>
#include <fstream>

namespace coload::detail {
namespace {

template <class T>
std::optional<T> parse_number(std::string_view text, int base) {
  T value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

/// The next blank-separated field of `rest`, removed from it.
std::string_view next_field(std::string_view& rest) {
  std::size_t start = rest.find_first_not_of(' ');
  if (start == std::string_view::npos) return rest = {};
  std::size_t stop = rest.find(' ', start);
  std::string_view field = rest.substr(start, stop == std::string_view::npos ? std::string_view::npos : stop - start);
  rest = stop == std::string_view::npos ? std::string_view() : rest.substr(stop);
  return field;
}

}  // namespace

std::optional<MapsLine> parse_maps_line(std::string_view line) {
  std::string_view rest = line;
  std::string_view range = next_field(rest), perms = next_field(rest);
  next_field(rest);  // offset
  next_field(rest);  // device
  std::string_view inode = next_field(rest);
  std::size_t dash = range.find('-');
  if (dash == std::string_view::npos || perms.empty()) return std::nullopt;
  auto start = parse_number<std::uintptr_t>(range.substr(0, dash), 16);
  auto end = parse_number<std::uintptr_t>(range.substr(dash + 1), 16);
  auto inode_number = parse_number<std::uint64_t>(inode, 10);
  if (!start || !end || !inode_number) return std::nullopt;
  std::size_t path = rest.find_first_not_of(' ');
  return MapsLine{.start = *start,
                  .end = *end,
                  .readable = perms[0] == 'r',
                  .inode = *inode_number,
                  .path = path == std::string_view::npos ? std::string_view() : rest.substr(path)};
}

Expected<std::optional<std::string>> mapped_file_at(const void* address) {
  std::ifstream maps("/proc/self/maps");
  if (!maps) return Error(ErrorKind::Io, "cannot open /proc/self/maps");
  const auto where = reinterpret_cast<std::uintptr_t>(address);
  std::string text;
  while (std::getline(maps, text)) {
    auto line = parse_maps_line(text);
    if (!line || where < line->start || where >= line->end) continue;
    if (line->inode == 0 || line->path.empty()) return std::optional<std::string>();
    return std::optional<std::string>(std::string(line->path));
  }
  return std::optional<std::string>();
}

}  // namespace coload::detail
