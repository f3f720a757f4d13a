#include "common/bytes.h"

#include <cstdio>

namespace coload::detail {

std::string hex(std::uint64_t value) {
  char text[2 + 16 + 1];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

std::string quoted(std::string_view text) { return "\"" + std::string(text) + "\""; }

std::string show_bytes(Bytes bytes) {
  std::string text;
  for (std::size_t i = 0; i < bytes.size() && i < 8; ++i) {
    char cell[4];
    std::snprintf(cell, sizeof cell, "%02x ", static_cast<unsigned>(bytes[i]));
    text += cell;
  }
  if (!text.empty()) text.pop_back();
  return text;
}

Expected<void> check_range(std::string_view what, std::uint64_t offset, std::uint64_t size, std::uint64_t limit,
                           std::string_view container) {
  auto end = checked_add(offset, size);
  const std::string subject = what.empty() ? std::string() : std::string(what) + ": ";
  if (!end) {
    return Error(ErrorKind::Overflow,
                 subject + "offset " + hex(offset) + " + size " + hex(size) + " overflows 64 bits");
  }
  if (*end > limit) {
    return Error(ErrorKind::OutOfBounds, subject + "offset " + hex(offset) + " + size " + hex(size) +
                                             " runs past the end of " + std::string(container) + " (" + hex(limit) +
                                             " bytes)");
  }
  return {};
}

Error Cursor::short_read(std::string_view field, std::uint64_t size) const {
  return Error(ErrorKind::Truncated, std::string(structure_) + ": field " + std::string(field) + " at offset " +
                                         hex(position_) + " needs " + hex(size) + " bytes, only " + hex(remaining()) +
                                         " remain")
      .at_field(field, position_, std::nullopt, remaining());
}

}  // namespace coload::detail
