// A loaded object's CCOB tables, kept between runs (compressed_tables.h).
#include "preload/compressed_tables.h"

#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <string_view>

#include "io/private_files.h"

namespace coload::preload {
namespace {

/// A file of lines is read whole at most this big, and appended to below it.
constexpr std::size_t kFileLimit = std::size_t{4} << 20;
/// The bytes of a CCOB's header a line is keyed by (a version 3 header; a
/// version 2 one is followed by its first payload bytes).
constexpr std::size_t kHeaderBytes = 32;

std::string hex_bytes(std::span<const std::byte> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text;
  text.reserve(bytes.size() * 2);
  for (std::byte byte : bytes) {
    text += kDigits[std::to_integer<unsigned>(byte) >> 4];
    text += kDigits[std::to_integer<unsigned>(byte) & 15];
  }
  return text;
}

/// The bytes `hex` spells (two digits each); nullopt for anything else.
std::optional<std::string> bytes_of_hex(std::string_view hex) {
  if (hex.size() % 2 != 0) return std::nullopt;
  std::string bytes(hex.size() / 2, '\0');
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    unsigned value = 0;
    auto [end, error] = std::from_chars(hex.data() + 2 * i, hex.data() + 2 * i + 2, value, 16);
    if (error != std::errc() || end != hex.data() + 2 * i + 2) return std::nullopt;
    bytes[i] = static_cast<char>(value);
  }
  return bytes;
}

/// The first bytes of `ccob` a line is keyed by.
std::string_view header_of(std::span<const std::byte> ccob) {
  return {reinterpret_cast<const char*>(ccob.data()), std::min(ccob.size(), kHeaderBytes)};
}

std::string hex_number(std::uint64_t value) {
  char text[17];
  auto end = std::to_chars(text, text + sizeof text, value, 16).ptr;
  return std::string(text, end);
}

std::optional<std::uint64_t> parse_number(std::string_view text, int base) {
  std::uint64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

/// Whether `id` can stand in a line: printable, no space.
bool storable(std::string_view id) {
  return !id.empty() && std::all_of(id.begin(), id.end(), [](char c) { return c > ' ' && c < 127; });
}

std::vector<std::string_view> words_of(std::string_view line) {
  std::vector<std::string_view> words;
  while (!line.empty()) {
    const std::size_t space = line.find(' ');
    words.push_back(line.substr(0, space));
    if (space == std::string_view::npos) break;
    line.remove_prefix(space + 1);
  }
  return words;
}

/// The identity line of the file at `path`: empty when it cannot be stat'ed.
std::string identity_of(const std::string& path, struct stat& info) {
  if (path.empty() || path[0] != '/' || ::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) return {};
  return "coload CCOB tables 1: device " + hex_number(info.st_dev) + " inode " + hex_number(info.st_ino) + " size " +
         hex_number(static_cast<std::uint64_t>(info.st_size)) + " mtime " +
         hex_number(static_cast<std::uint64_t>(info.st_mtim.tv_sec)) + "." +
         hex_number(static_cast<std::uint64_t>(info.st_mtim.tv_nsec)) + " ctime " +
         hex_number(static_cast<std::uint64_t>(info.st_ctim.tv_sec)) + "." +
         hex_number(static_cast<std::uint64_t>(info.st_ctim.tv_nsec)) + "\n";
}

}  // namespace

CompressedTables::ObjectFile& CompressedTables::file_of(const LoadedObject& object) {
  auto [at, made] = objects_.try_emplace(object.base);
  ObjectFile& file = at->second;
  if (!made || directory_.empty()) return file;
  struct stat info{};
  file.identity = identity_of(object.name, info);
  if (file.identity.empty()) return file;
  file.path = directory_ + "/ccob-tables-" + hex_number(info.st_dev) + "-" + hex_number(info.st_ino);
  const std::optional<std::string> contents = detail::read_private_file(file.path, kFileLimit);
  if (!contents || !contents->starts_with(file.identity)) return file;  // none yet, or another file's
  file.current = true;
  // Every whole line that reads; a torn last line (a writer that died) or a bad one is skipped.
  std::string_view rest = std::string_view(*contents).substr(file.identity.size());
  for (std::size_t end; (end = rest.find('\n')) != std::string_view::npos; rest.remove_prefix(end + 1)) {
    const std::vector<std::string_view> words = words_of(rest.substr(0, end));
    if (words.size() < 4) continue;
    const auto offset = parse_number(words[0], 16);
    const auto count = parse_number(words[3], 10);
    auto header = bytes_of_hex(words[1]);
    if (!offset || !header || !count || *count != words.size() - 4 || (words[2] != "0" && words[2] != "1")) continue;
    Kept kept{.header = std::move(*header), .checked = words[2] == "1", .ids = {}};
    for (std::size_t i = 4; i < words.size(); ++i) kept.ids.emplace_back(words[i]);
    Kept& slot = file.by_offset[*offset];
    if (slot.ids.empty() || (kept.checked && !slot.checked)) slot = std::move(kept);
  }
  return file;
}

const std::vector<std::string>* CompressedTables::find(const LoadedObject& object, const void* image,
                                                       std::span<const std::byte> ccob, bool checked) {
  if (directory_.empty()) return nullptr;
  ObjectFile& file = file_of(object);
  auto kept = file.by_offset.find(reinterpret_cast<std::uintptr_t>(image) - object.base);
  if (kept == file.by_offset.end() || (checked && !kept->second.checked)) return nullptr;
  if (kept->second.header != header_of(ccob)) return nullptr;
  return &kept->second.ids;
}

void CompressedTables::keep(const LoadedObject& object, const void* image, std::span<const std::byte> ccob,
                            bool checked, const std::vector<std::string>& ids) {
  if (directory_.empty() || ids.empty() || !std::all_of(ids.begin(), ids.end(), storable)) return;
  ObjectFile& file = file_of(object);
  if (file.path.empty()) return;
  const std::uint64_t offset = reinterpret_cast<std::uintptr_t>(image) - object.base;
  Kept kept{.header = std::string(header_of(ccob)), .checked = checked, .ids = ids};
  std::string line = hex_number(offset) + " " + hex_bytes(std::as_bytes(std::span(kept.header))) +
                     (checked ? " 1 " : " 0 ") + std::to_string(ids.size());
  for (const std::string& id : ids) line += " " + id;
  line += "\n";
  // The first line of a file that holds another identity, or none, starts it anew.
  if (file.current) {
    detail::append_private_file(file.path, line, kFileLimit);
  } else {
    file.current = detail::replace_private_file(file.path, file.identity + line);
  }
  file.by_offset[offset] = std::move(kept);
}

}  // namespace coload::preload
