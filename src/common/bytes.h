// Internal helpers every parser uses: little-endian loads, overflow-safe range
// checks and a bounds-checked cursor. Input bytes reach offsets only through
// these, so every derived range is checked in one place.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "coload/error.h"
#include "common/try.h"

namespace coload::detail {

using Bytes = std::span<const std::byte>;

/// "0x1f000": the form every message uses for offsets and sizes.
std::string hex(std::uint64_t value);

/// "text" in double quotes: how messages quote a name they were given.
std::string quoted(std::string_view text);

/// "43 43 4f 42 03 00 01 00": up to the first 8 bytes, for "unknown bytes" messages.
std::string show_bytes(Bytes bytes);

inline std::optional<std::uint64_t> checked_add(std::uint64_t a, std::uint64_t b) {
  std::uint64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) return std::nullopt;
  return sum;
}

inline std::optional<std::uint64_t> checked_mul(std::uint64_t a, std::uint64_t b) {
  std::uint64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) return std::nullopt;
  return product;
}

/// Rounds up to a power-of-two alignment; nullopt on overflow.
inline std::optional<std::uint64_t> align_up(std::uint64_t value, std::uint64_t alignment) {
  auto bumped = checked_add(value, alignment - 1);
  if (!bumped) return std::nullopt;
  return *bumped & ~(alignment - 1);
}

/// Checks that [offset, offset + size) lies within [0, limit). `what` names the
/// range ("bundle entry 3 (hipv4-…)"; empty when the caller sets the range's
/// location as fields), `container` what it must fit in.
/// Errors: Overflow when offset + size wraps, OutOfBounds when it passes limit.
Expected<void> check_range(std::string_view what, std::uint64_t offset, std::uint64_t size, std::uint64_t limit,
                           std::string_view container);

template <class T>
T load_le(const std::byte* at) {
  T value;
  std::memcpy(&value, at, sizeof(T));  // unaligned-safe; hosts are little-endian
  return value;
}

inline std::string_view as_chars(Bytes bytes) { return {reinterpret_cast<const char*>(bytes.data()), bytes.size()}; }

inline bool starts_with(Bytes bytes, std::string_view magic) {
  return bytes.size() >= magic.size() && as_chars(bytes.first(magic.size())) == magic;
}

/// Sequential bounds-checked reader. Every read names its field; a short read is
/// a Truncated error that says which field at which offset needed how many bytes.
class Cursor {
 public:
  Cursor(Bytes data, std::string_view structure, std::uint64_t position = 0)
      : data_(data), structure_(structure), position_(position) {}

  std::uint64_t position() const { return position_; }
  std::uint64_t remaining() const { return position_ >= data_.size() ? 0 : data_.size() - position_; }

  Expected<std::uint16_t> u16(std::string_view field) { return read<std::uint16_t>(field); }
  Expected<std::uint32_t> u32(std::string_view field) { return read<std::uint32_t>(field); }
  Expected<std::uint64_t> u64(std::string_view field) { return read<std::uint64_t>(field); }
  /// The bytes not yet read, for a caller that reads a record whole when it
  /// is all there (then advance()) and field by field otherwise.
  Bytes rest() const { return data_.subspan(std::min<std::uint64_t>(position_, data_.size())); }
  /// Moves past `size` bytes of rest(); size <= remaining().
  void advance(std::uint64_t size) { position_ += size; }
  // Inline: tables are read a field at a time, thousands per image.
  Expected<Bytes> take(std::string_view field, std::uint64_t size) {
    if (size > remaining()) return short_read(field, size);
    Bytes bytes = data_.subspan(position_, size);
    position_ += size;
    return bytes;
  }

 private:
  Error short_read(std::string_view field, std::uint64_t size) const;

  template <class T>
  Expected<T> read(std::string_view field) {
    auto bytes = take(field, sizeof(T));
    COLOAD_RETURN_IF_ERROR(bytes);
    return load_le<T>(bytes->data());
  }

  Bytes data_;
  std::string_view structure_;
  std::uint64_t position_;
};

}  // namespace coload::detail
