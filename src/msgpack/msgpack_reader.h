// Internal: the strict msgpack reader under the code-object metadata decoder
// (code_object/metadata.cpp) and the kpack TOC reader (kpack/kpack_toc.cpp;
// docs/reading-rules.md), on LLVM's streaming msgpack reader,
// which reports each value's encoding as written (signed or unsigned, string
// or integer) rather than a merged document. Its rules: every container is
// depth-checked (a limit the schema gives) and its declared count checked against
// the bytes left before anything inside it is read; every map's keys are
// checked for duplicates; required keys are tracked per map; integers are
// narrowed to 32 bits with range errors; values nobody reads are skipped with
// the same checks. Does not cover: which keys the metadata has and what they
// mean (the schemas). Every error names the key path, the byte offset and
// the value found.
// Lifetime: a Reader borrows the caller's bytes, and the string views it
// returns point into them; a Path step points at its parent on the stack.
// Thread safety: one Reader per thread; no shared state.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "common/bytes.h"
#include "common/try.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/BinaryFormat/MsgPackReader.h"

namespace coload::detail {

/// Text from the input, made safe for a message: quotes, backslashes and
/// control bytes escaped, cut after `limit` bytes.
std::string printable(std::string_view text, std::size_t limit = 64);

}  // namespace coload::detail

namespace coload::detail::msgpack {

/// One msgpack value as read: LLVM's object, where its encoding starts and
/// ends in the input, and its first byte (which names the encoding).
struct Value {
  llvm::msgpack::Object object;
  std::uint64_t offset = 0;
  std::uint64_t end = 0;
  std::uint8_t tag = 0;

  llvm::msgpack::Type kind() const { return object.Kind; }
  bool is_container() const { return kind() == llvm::msgpack::Type::Array || kind() == llvm::msgpack::Type::Map; }
};

/// "uint16 300", "string \"8\"", "fixmap of 2 entries": what a message says was found.
std::string describe(const Value& value);

/// The key path of a value ("amdhsa.kernels[2].args[0].offset") as a chain
/// of steps on the decoder's stack, rendered only when a message or
/// Metadata::unknown_keys needs the text: most values are read without one.
/// A step points at its parent, so it must not outlive it.
class Path {
 public:
  Path() = default;  ///< the root map: ""

  Path key(std::string_view name) const { return {this, Step::Key, name, 0}; }
  Path index(std::size_t i) const { return {this, Step::Index, {}, i}; }
  /// The i-th key of a map, when that key is not a string.
  Path key_number(std::size_t i) const { return {this, Step::KeyNumber, {}, i}; }

  /// The path as text: "" for the root map.
  std::string str() const;

 private:
  enum class Step { Key, Index, KeyNumber };
  Path(const Path* parent, Step step, std::string_view name, std::size_t number)
      : parent_(parent), step_(step), name_(name), number_(number) {}

  const Path* parent_ = nullptr;
  Step step_ = Step::Key;
  std::string_view name_;
  std::size_t number_ = 0;
};

/// Keys seen in one map, with where each was, for duplicates and required
/// keys. A compiler writes at most a few dozen keys per map: those are
/// compared in a flat array on the stack, cheaper than hashing each. A longer
/// map moves to a hash table, so that checking it stays linear.
class KeySet {
 public:
  /// Records `key`, read at `offset`. Returns the offset of its first
  /// occurrence, and whether that is this one (false: a duplicate).
  std::pair<std::uint64_t, bool> insert(std::string_view key, std::uint64_t offset) {
    if (hashed_.empty()) {
      for (const auto& [seen, at] : flat_) {
        if (seen == key) return {at, false};
      }
      if (flat_.size() < kFlat) {
        flat_.emplace_back(key, offset);
        return {offset, true};
      }
      for (const auto& [seen, at] : flat_) hashed_.try_emplace(seen, at);
    }
    auto [entry, fresh] = hashed_.try_emplace(key, offset);
    return {entry->second, fresh};
  }

  /// Whether `key` was recorded.
  bool contains(std::string_view key) const {
    if (!hashed_.empty()) return hashed_.contains(key);
    return std::any_of(flat_.begin(), flat_.end(), [&](const auto& entry) { return entry.first == key; });
  }

 private:
  static constexpr std::size_t kFlat = 32;
  llvm::SmallVector<std::pair<std::string_view, std::uint64_t>, kFlat> flat_;
  llvm::DenseMap<llvm::StringRef, std::uint64_t> hashed_;
};

/// Reads the values of one msgpack input in order, each checked where it is
/// read. A schema (metadata.cpp) derives from it and says which value comes
/// where; every read returns the value or an Error whose message is
/// "<key path> at byte <offset>: <what>".
class Reader {
 public:
  /// Reads `bytes`, a `document` ("metadata", "kpack TOC": how messages name
  /// the root and its end) whose containers nest at most `max_depth` deep
  /// (the root map is depth 1).
  Reader(Bytes bytes, std::string_view document, unsigned max_depth)
      : input_(as_chars(bytes)),
        reader_(llvm::StringRef(input_.data(), input_.size())),
        document_(document),
        max_depth_(max_depth) {}

  /// The byte offset of the next value's encoding.
  std::uint64_t position() const { return position_; }
  /// The whole input.
  std::string_view input() const { return input_; }

  /// An error of `kind` at `path` and byte `offset`, with the value found
  /// and the limit it passes when the sentence gives them; its location's
  /// field is the path as the sentence names it (the document for the root).
  Error error(ErrorKind kind, const Path& path, std::uint64_t offset, const std::string& what,
              std::optional<std::uint64_t> value = std::nullopt,
              std::optional<std::uint64_t> limit = std::nullopt) const;
  /// A Malformed error.
  Error malformed(const Path& path, std::uint64_t offset, const std::string& what,
                  std::optional<std::uint64_t> value = std::nullopt,
                  std::optional<std::uint64_t> limit = std::nullopt) const {
    return error(ErrorKind::Malformed, path, offset, what, value, limit);
  }
  /// "expected <expected>, found <value>".
  Error wrong_type(const Path& path, const Value& value, std::string_view expected) const {
    return malformed(path, value.offset, "expected " + std::string(expected) + ", found " + describe(value));
  }

  /// Reads the next value's head (a container's elements follow it).
  Expected<void> next(Value& value, const Path& path);

  /// Checks a container at `depth` (the root map is 1) before its elements
  /// are read: the depth limit, and a count that the bytes left can hold
  /// (an element takes at least one byte, a map entry two).
  Expected<void> open(const Value& container, const Path& path, unsigned depth);

  /// Skips a value whose head was read, with every check a known value gets:
  /// depth, counts, duplicate keys in its maps.
  Expected<void> skip(const Value& value, const Path& path, unsigned depth);

  /// "duplicate key ... (first at byte ...)".
  Error duplicate(const Path& path, const Value& key, std::uint64_t first) const {
    return malformed(path, key.offset, "duplicate key " + describe(key) + " (first at byte " + hex(first) + ")");
  }

  /// Reads a map whose head is `map`: string keys, no duplicates; `on_entry(key,
  /// key_path)` reads each value. Fills `seen` for the required-key check.
  template <class OnEntry>
  Expected<void> entries(const Value& map, const Path& path, unsigned depth, KeySet& seen, OnEntry&& on_entry) {
    COLOAD_RETURN_IF_ERROR(open(map, path, depth));
    for (std::size_t i = 0; i < map.object.Length; ++i) {
      Value key;
      COLOAD_RETURN_IF_ERROR(next(key, path));
      if (key.kind() != llvm::msgpack::Type::String) return wrong_type(path, key, "a string key");
      std::string_view name(key.object.Raw.data(), key.object.Raw.size());
      if (auto [first, fresh] = seen.insert(name, key.offset); !fresh) return duplicate(path, key, first);
      COLOAD_RETURN_IF_ERROR(on_entry(name, path.key(name)));
    }
    return {};
  }

  /// Every one of `keys` is in `seen`, the keys of `map`.
  template <std::size_t N>
  Expected<void> require(const KeySet& seen, const std::array<std::string_view, N>& keys, const Path& path,
                         const Value& map) const {
    for (std::string_view key : keys) {
      if (!seen.contains(key)) return malformed(path, map.offset, "required key " + std::string(key) + " is missing");
    }
    return {};
  }

  /// An unsigned integer that fits 32 bits; a signed encoding only when not negative.
  Expected<std::uint32_t> u32(const Path& path);
  /// An unsigned integer (a signed encoding only when not negative).
  Expected<std::uint64_t> u64(const Path& path);
  /// The same check of a value whose head was read.
  Expected<std::uint32_t> as_u32(const Value& value, const Path& path) const;

  /// `.workgroup_processor_mode` and `.uniform_work_group_size`: documented
  /// as booleans, written by LLVM as integers; either is accepted.
  Expected<std::uint32_t> u32_or_bool(const Path& path);

  /// A string; the view points into the input.
  Expected<std::string_view> string(const Path& path);

  /// `.name` and `.symbol`: strings that reach C APIs, so without NUL bytes.
  Expected<std::string_view> identifier(const Path& path);

  /// A boolean.
  Expected<bool> boolean(const Path& path);

  /// An array of exactly N unsigned 32-bit integers at `depth`.
  template <std::size_t N>
  Expected<std::array<std::uint32_t, N>> u32_array(const Path& path, unsigned depth) {
    Value array;
    COLOAD_RETURN_IF_ERROR(next(array, path));
    if (array.kind() != llvm::msgpack::Type::Array || array.object.Length != N) {
      return wrong_type(path, array, "an array of " + std::to_string(N) + " unsigned integers");
    }
    COLOAD_RETURN_IF_ERROR(open(array, path, depth));
    std::array<std::uint32_t, N> out{};
    for (std::size_t i = 0; i < N; ++i) {
      auto element = u32(path.index(i));
      COLOAD_RETURN_IF_ERROR(element);
      out[i] = *element;
    }
    return out;
  }

  /// A value that must be a power of two (alignments).
  Expected<std::uint32_t> alignment(const Path& path);

  /// A string that must be one of an enum's spellings (to_string of values
  /// first..last); `what` names the enum in the message.
  template <class Enum>
  Expected<Enum> spelling(const Path& path, Enum first, Enum last, std::string_view what) {
    std::uint64_t at = position_;
    auto text = string(path);
    COLOAD_RETURN_IF_ERROR(text);
    for (auto i = static_cast<int>(first); i <= static_cast<int>(last); ++i) {
      if (to_string(static_cast<Enum>(i)) == *text) return static_cast<Enum>(i);
    }
    return malformed(path, at, "\"" + printable(*text) + "\" is not " + std::string(what));
  }

  /// After the root value (read with `top`): no byte of the input is left.
  Expected<void> finish(const Path& top);

 private:
  std::string_view input_;
  llvm::msgpack::Reader reader_;
  std::uint64_t position_ = 0;
  std::string_view document_;
  unsigned max_depth_;
};

}  // namespace coload::detail::msgpack
