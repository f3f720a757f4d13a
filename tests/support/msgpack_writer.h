// Test-side msgpack writer, independent of the library under test and of
// LLVM: every tag is written by hand, so tests can produce what no correct
// writer would (duplicate keys, negative or oversized integers, a chosen
// encoding for a value, wrong types, deep nesting, trailing bytes).
//
// Two layers: Writer appends single encodings; Node is a small document (maps
// keep their entries in order and may repeat keys) that tests edit and then
// serialize with encode().
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace coload::testing::msgpack {

/// Appends msgpack encodings to a byte vector, big-endian as the format says.
class Writer {
 public:
  const std::vector<std::byte>& bytes() const { return bytes_; }
  std::vector<std::byte> take() { return std::move(bytes_); }

  Writer& raw(std::initializer_list<std::uint8_t> bytes) {
    for (std::uint8_t b : bytes) byte(b);
    return *this;
  }
  Writer& raw(const std::vector<std::byte>& bytes) {
    bytes_.insert(bytes_.end(), bytes.begin(), bytes.end());
    return *this;
  }

  Writer& nil() { return tag(0xc0); }
  Writer& boolean(bool value) { return tag(value ? 0xc3 : 0xc2); }
  Writer& f64(double value) {
    std::uint64_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    return tag(0xcb).be(bits, 8);
  }

  /// The smallest unsigned encoding (positive fixint up to 127).
  Writer& uint(std::uint64_t value) {
    if (value <= 0x7f) return byte(static_cast<std::uint8_t>(value));
    if (value <= 0xff) return u8(static_cast<std::uint8_t>(value));
    if (value <= 0xffff) return u16(static_cast<std::uint16_t>(value));
    if (value <= 0xffffffff) return u32(static_cast<std::uint32_t>(value));
    return u64(value);
  }
  Writer& fixint(std::uint8_t value) { return byte(value & 0x7f); }
  Writer& u8(std::uint8_t value) { return tag(0xcc).be(value, 1); }
  Writer& u16(std::uint16_t value) { return tag(0xcd).be(value, 2); }
  Writer& u32(std::uint32_t value) { return tag(0xce).be(value, 4); }
  Writer& u64(std::uint64_t value) { return tag(0xcf).be(value, 8); }

  /// Negative fixint for -32..-1; otherwise use the sized forms.
  Writer& negative_fixint(std::int8_t value) { return byte(static_cast<std::uint8_t>(value)); }
  Writer& i8(std::int8_t value) { return tag(0xd0).be(static_cast<std::uint8_t>(value), 1); }
  Writer& i16(std::int16_t value) { return tag(0xd1).be(static_cast<std::uint16_t>(value), 2); }
  Writer& i32(std::int32_t value) { return tag(0xd2).be(static_cast<std::uint32_t>(value), 4); }
  Writer& i64(std::int64_t value) { return tag(0xd3).be(static_cast<std::uint64_t>(value), 8); }

  /// fixstr up to 31 bytes, then str8/16/32.
  Writer& str(std::string_view text) {
    if (text.size() <= 31) {
      byte(static_cast<std::uint8_t>(0xa0 | text.size()));
    } else if (text.size() <= 0xff) {
      tag(0xd9).be(text.size(), 1);
    } else if (text.size() <= 0xffff) {
      tag(0xda).be(text.size(), 2);
    } else {
      tag(0xdb).be(text.size(), 4);
    }
    return chars(text);
  }
  Writer& str8(std::string_view text) { return tag(0xd9).be(text.size(), 1).chars(text); }
  Writer& bin(std::string_view payload) { return tag(0xc4).be(payload.size(), 1).chars(payload); }

  /// Container heads; the caller writes the elements (2 values per map entry).
  Writer& array(std::uint32_t count) {
    if (count <= 15) return byte(static_cast<std::uint8_t>(0x90 | count));
    if (count <= 0xffff) return array16(static_cast<std::uint16_t>(count));
    return array32(count);
  }
  Writer& array16(std::uint16_t count) { return tag(0xdc).be(count, 2); }
  Writer& array32(std::uint32_t count) { return tag(0xdd).be(count, 4); }
  Writer& map(std::uint32_t count) {
    if (count <= 15) return byte(static_cast<std::uint8_t>(0x80 | count));
    if (count <= 0xffff) return map16(static_cast<std::uint16_t>(count));
    return map32(count);
  }
  Writer& map16(std::uint16_t count) { return tag(0xde).be(count, 2); }
  Writer& map32(std::uint32_t count) { return tag(0xdf).be(count, 4); }

 private:
  Writer& byte(std::uint8_t value) {
    bytes_.push_back(static_cast<std::byte>(value));
    return *this;
  }
  Writer& tag(std::uint8_t value) { return byte(value); }
  Writer& be(std::uint64_t value, int width) {
    for (int i = width - 1; i >= 0; --i) byte(static_cast<std::uint8_t>(value >> (8 * i)));
    return *this;
  }
  Writer& chars(std::string_view text) {
    for (char c : text) byte(static_cast<std::uint8_t>(c));
    return *this;
  }

  std::vector<std::byte> bytes_;
};

/// A msgpack document for tests. Scalars carry their encoding as bytes
/// (so `Node::raw` can hold any encoding, e.g. `Writer().i8(5)`).
class Node {
 public:
  enum class Kind { Scalar, Array, Map };
  using Entry = std::pair<std::string, Node>;

  Node() : Node(Writer().nil()) {}
  Node(std::uint64_t value) : Node(Writer().uint(value)) {}
  Node(std::uint32_t value) : Node(static_cast<std::uint64_t>(value)) {}
  /// Non-negative: the smallest unsigned encoding; negative: negative fixint or int32.
  Node(int value)
      : Node(value >= 0     ? Writer().uint(static_cast<std::uint64_t>(value))
             : value >= -32 ? Writer().negative_fixint(static_cast<std::int8_t>(value))
                            : Writer().i32(value)) {}
  Node(const char* text) : Node(Writer().str(text)) {}
  Node(std::string_view text) : Node(Writer().str(text)) {}
  Node(const std::string& text) : Node(Writer().str(text)) {}
  Node(const Writer& scalar) : kind_(Kind::Scalar), bytes_(scalar.bytes()) {}

  static Node boolean(bool value) { return Node(Writer().boolean(value)); }
  static Node raw(const Writer& encoding) { return Node(encoding); }
  static Node array(std::vector<Node> items) {
    Node node;
    node.kind_ = Kind::Array;
    node.items_ = std::move(items);
    return node;
  }
  static Node map(std::vector<Entry> entries) {
    Node node;
    node.kind_ = Kind::Map;
    node.entries_ = std::move(entries);
    return node;
  }

  Kind kind() const { return kind_; }
  std::vector<Node>& items() { return items_; }
  std::vector<Entry>& entries() { return entries_; }

  /// The value of the first entry with `key` (added at the end if absent).
  Node& operator[](std::string_view key) {
    for (auto& [name, value] : entries_) {
      if (name == key) return value;
    }
    entries_.emplace_back(std::string(key), Node());
    return entries_.back().second;
  }
  Node& operator[](std::size_t index) { return items_.at(index); }
  /// Removes every entry with `key`.
  Node& erase(std::string_view key) {
    std::erase_if(entries_, [&](const Entry& entry) { return entry.first == key; });
    return *this;
  }
  /// Appends an entry even when `key` is present: a duplicate key.
  Node& add(std::string key, Node value) {
    entries_.emplace_back(std::move(key), std::move(value));
    return *this;
  }

  void write(Writer& out) const {
    switch (kind_) {
      case Kind::Scalar: out.raw(bytes_); break;
      case Kind::Array:
        out.array(static_cast<std::uint32_t>(items_.size()));
        for (const Node& item : items_) item.write(out);
        break;
      case Kind::Map:
        out.map(static_cast<std::uint32_t>(entries_.size()));
        for (const auto& [key, value] : entries_) {
          out.str(key);
          value.write(out);
        }
        break;
    }
  }
  std::vector<std::byte> encode() const {
    Writer out;
    write(out);
    return out.take();
  }

 private:
  Kind kind_ = Kind::Scalar;
  std::vector<std::byte> bytes_;
  std::vector<Node> items_;
  std::vector<Entry> entries_;
};

}  // namespace coload::testing::msgpack
