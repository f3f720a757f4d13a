// The NT_AMDGPU_METADATA msgpack map, decoded strictly
// (docs/format.md "Metadata keys", docs/reading-rules.md) with LLVM's
// streaming msgpack reader, which reports each value's encoding as written
// (signed or unsigned, string or integer) rather than a merged document.
//
// One pass over the bytes. Every container is depth-checked and its declared
// count checked against the bytes left before anything inside it is read;
// every map's keys are checked for duplicates; every value is checked for
// type and range where it is read. Keys this file does not know are skipped
// with the same checks and listed in Metadata::unknown_keys.
#include "codeobject/metadata.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <string_view>
#include <utility>

#include "common/bytes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/BinaryFormat/MsgPackReader.h"

namespace coload::detail {

std::string printable(std::string_view text, std::size_t limit) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (i == limit) {
      out += "...";
      break;
    }
    auto c = static_cast<unsigned char>(text[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      char escaped[5];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
      out += escaped;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

namespace {

using llvm::msgpack::Type;

constexpr std::array<std::string_view, 10> kRequiredKernelKeys = {
    ".name", ".symbol", ".kernarg_segment_size", ".kernarg_segment_align", ".group_segment_fixed_size",
    ".private_segment_fixed_size", ".wavefront_size", ".sgpr_count", ".vgpr_count", ".max_flat_workgroup_size"};
constexpr std::array<std::string_view, 3> kRequiredArgKeys = {".offset", ".size", ".value_kind"};
constexpr std::array<std::string_view, 2> kRequiredRootKeys = {"amdhsa.version", "amdhsa.kernels"};

/// One msgpack value as read: LLVM's object, where its encoding starts and
/// ends in the input, and its first byte (which names the encoding).
struct Value {
  llvm::msgpack::Object object;
  std::uint64_t offset = 0;
  std::uint64_t end = 0;
  std::uint8_t tag = 0;

  Type kind() const { return object.Kind; }
  bool is_container() const { return kind() == Type::Array || kind() == Type::Map; }
};

/// The msgpack name of an encoding, from its first byte.
std::string_view encoding(std::uint8_t tag) {
  if (tag <= 0x7f) return "positive fixint";
  if (tag <= 0x8f) return "fixmap";
  if (tag <= 0x9f) return "fixarray";
  if (tag <= 0xbf) return "fixstr";
  if (tag >= 0xe0) return "negative fixint";
  static constexpr std::array<std::string_view, 0x20> kNames = {
      "nil",    "never used", "false",   "true",    "bin8",    "bin16",   "bin32",    "ext8",
      "ext16",  "ext32",      "float32", "float64", "uint8",   "uint16",  "uint32",   "uint64",
      "int8",   "int16",      "int32",   "int64",   "fixext1", "fixext2", "fixext4",  "fixext8",
      "fixext16", "str8",     "str16",   "str32",   "array16", "array32", "map16",    "map32"};
  return kNames[tag - 0xc0];
}

/// Bytes of an encoding whose length the first byte fixes (everything but
/// strings, binaries and extensions, whose payload LLVM hands back in place).
std::uint64_t fixed_size(std::uint8_t tag) {
  switch (tag) {
    case 0xcc: case 0xd0: return 2;
    case 0xcd: case 0xd1: case 0xdc: case 0xde: return 3;
    case 0xca: case 0xce: case 0xd2: case 0xdd: case 0xdf: return 5;
    case 0xcb: case 0xcf: case 0xd3: return 9;
    default: return 1;
  }
}

/// "uint16 300", "string \"8\"", "fixmap of 2 entries": what a message says was found.
std::string describe(const Value& value) {
  const auto& object = value.object;
  std::string name(encoding(value.tag));
  switch (object.Kind) {
    case Type::UInt: return name + " " + std::to_string(object.UInt);
    case Type::Int: return name + " " + std::to_string(object.Int);
    case Type::Nil: return "nil";
    case Type::Boolean: return object.Bool ? "boolean true" : "boolean false";
    case Type::Float: {
      char text[32];
      std::snprintf(text, sizeof text, "%g", object.Float);
      return name + " " + text;
    }
    case Type::String: return "string \"" + printable({object.Raw.data(), object.Raw.size()}) + "\"";
    case Type::Binary: return name + " of " + std::to_string(object.Raw.size()) + " bytes";
    case Type::Array: return name + " of " + std::to_string(object.Length) + " elements";
    case Type::Map: return name + " of " + std::to_string(object.Length) + " entries";
    case Type::Extension:
      return name + " type " + std::to_string(object.Extension.Type) + " of " +
             std::to_string(object.Extension.Bytes.size()) + " bytes";
    case Type::Empty: break;
  }
  return name;
}

/// `base` + `key`: "amdhsa.kernels[2]" + ".args" → "amdhsa.kernels[2].args";
/// a key without the leading dot gets one ("vendor.x" → "….vendor.x").
std::string join(const std::string& base, std::string_view key) {
  std::string safe = printable(key);
  if (base.empty()) return safe;
  if (!safe.empty() && safe.front() == '.') return base + safe;
  return base + "." + safe;
}

std::string indexed(const std::string& base, std::size_t index) { return base + "[" + std::to_string(index) + "]"; }

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

  std::string str() const {
    if (!parent_) return "";
    std::string base = parent_->str();
    switch (step_) {
      case Step::Key: return join(base, name_);
      case Step::Index: return indexed(base, number_);
      case Step::KeyNumber: return base + "{key " + std::to_string(number_) + "}";
    }
    return base;
  }

 private:
  enum class Step { Key, Index, KeyNumber };
  Path(const Path* parent, Step step, std::string_view name, std::size_t number)
      : parent_(parent), step_(step), name_(name), number_(number) {}

  const Path* parent_ = nullptr;
  Step step_ = Step::Key;
  std::string_view name_;
  std::size_t number_ = 0;
};

bool power_of_two(std::uint32_t value) { return std::has_single_bit(value); }

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

  bool contains(std::string_view key) const {
    if (!hashed_.empty()) return hashed_.contains(key);
    return std::any_of(flat_.begin(), flat_.end(), [&](const auto& entry) { return entry.first == key; });
  }

 private:
  static constexpr std::size_t kFlat = 32;
  llvm::SmallVector<std::pair<std::string_view, std::uint64_t>, kFlat> flat_;
  llvm::DenseMap<llvm::StringRef, std::uint64_t> hashed_;
};

class Decoder {
 public:
  explicit Decoder(Bytes bytes) : input_(as_chars(bytes)), reader_(llvm::StringRef(input_.data(), input_.size())) {}

  Expected<DecodedMetadata> decode() {
    if (auto done = root(); !done) return std::move(done).error();
    find_duplicate_kernels();
    return std::move(result_);
  }

 private:
  // ---- Reading values -----------------------------------------------------

  Error error(ErrorKind kind, const Path& path, std::uint64_t offset, const std::string& what) const {
    std::string where = path.str();
    return Error(kind, (where.empty() ? std::string("metadata") : where) + " at byte " + hex(offset) + ": " + what);
  }
  Error malformed(const Path& path, std::uint64_t offset, const std::string& what) const {
    return error(ErrorKind::Malformed, path, offset, what);
  }
  Error wrong_type(const Path& path, const Value& value, std::string_view expected) const {
    return malformed(path, value.offset, "expected " + std::string(expected) + ", found " + describe(value));
  }

  /// Reads the next value's head (a container's elements follow it).
  Expected<void> next(Value& value, const Path& path) {
    value.offset = position_;
    if (position_ >= input_.size()) {
      return malformed(path, position_, "the metadata ends (" + hex(input_.size()) + " bytes) where a value belongs");
    }
    value.tag = static_cast<std::uint8_t>(input_[position_]);
    llvm::Expected<bool> read = reader_.read(value.object);
    if (!read) {
      return malformed(path, position_, "cannot read " + std::string(encoding(value.tag)) + ": " +
                                            llvm::toString(read.takeError()));
    }
    if (!*read) return malformed(path, position_, "the metadata ends where a value belongs");
    const char* base = input_.data();
    switch (value.kind()) {
      case Type::String:
      case Type::Binary: value.end = value.object.Raw.data() + value.object.Raw.size() - base; break;
      case Type::Extension:
        value.end = value.object.Extension.Bytes.data() + value.object.Extension.Bytes.size() - base;
        break;
      default: value.end = value.offset + fixed_size(value.tag); break;
    }
    position_ = value.end;
    return {};
  }

  /// Checks a container at `depth` (the root map is 1) before its elements
  /// are read: the depth limit, and a count that the bytes left can hold
  /// (an element takes at least one byte, a map entry two).
  Expected<void> open(const Value& container, const Path& path, unsigned depth) {
    if (depth > kMaxMetadataDepth) {
      return error(ErrorKind::LimitExceeded, path, container.offset,
                   "nesting depth " + std::to_string(depth) + " exceeds the limit of " +
                       std::to_string(kMaxMetadataDepth));
    }
    std::uint64_t left = input_.size() - position_;
    std::uint64_t count = container.object.Length;
    std::uint64_t needed = container.kind() == Type::Map ? count * 2 : count;
    if (needed > left) {
      return malformed(path, container.offset, describe(container) + " needs at least " + std::to_string(needed) +
                                                   " more bytes, only " + std::to_string(left) + " remain");
    }
    return {};
  }

  /// Skips a value whose head was read, with every check a known value gets:
  /// depth, counts, duplicate keys in its maps.
  Expected<void> skip(const Value& value, const Path& path, unsigned depth) {
    if (!value.is_container()) return {};
    if (auto opened = open(value, path, depth); !opened) return std::move(opened).error();
    if (value.kind() == Type::Array) {
      for (std::size_t i = 0; i < value.object.Length; ++i) {
        Value element;
        Path element_path = path.index(i);
        if (auto read = next(element, element_path); !read) return std::move(read).error();
        if (auto skipped = skip(element, element_path, depth + 1); !skipped) return std::move(skipped).error();
      }
      return {};
    }
    // Keys of maps nobody reads may be any value; equal strings, or equal
    // encodings of anything else, are duplicates. Such maps are rare and may
    // nest 64 deep, so these sets keep no inline buckets on the stack.
    llvm::DenseMap<llvm::StringRef, std::uint64_t> strings, others;
    for (std::size_t i = 0; i < value.object.Length; ++i) {
      Value key;
      if (auto read = next(key, path); !read) return std::move(read).error();
      Path key_path = key.kind() == Type::String ? path.key({key.object.Raw.data(), key.object.Raw.size()})
                                                 : path.key_number(i);
      if (auto skipped = skip(key, key_path, depth + 1); !skipped) return std::move(skipped).error();
      std::string_view identity = key.kind() == Type::String
                                      ? std::string_view(key.object.Raw.data(), key.object.Raw.size())
                                      : input_.substr(key.offset, position_ - key.offset);
      auto& seen = key.kind() == Type::String ? strings : others;
      if (auto [at, fresh] = seen.try_emplace(identity, key.offset); !fresh) return duplicate(path, key, at->second);
      Value item;
      if (auto read = next(item, key_path); !read) return std::move(read).error();
      if (auto skipped = skip(item, key_path, depth + 1); !skipped) return std::move(skipped).error();
    }
    return {};
  }

  Error duplicate(const Path& path, const Value& key, std::uint64_t first) const {
    return malformed(path, key.offset, "duplicate key " + describe(key) + " (first at byte " + hex(first) + ")");
  }

  /// Reads a map whose head is `map`: string keys, no duplicates; `on_entry(key,
  /// key_path)` reads each value. Fills `seen` for the required-key check.
  template <class OnEntry>
  Expected<void> entries(const Value& map, const Path& path, unsigned depth, KeySet& seen, OnEntry&& on_entry) {
    if (auto opened = open(map, path, depth); !opened) return std::move(opened).error();
    for (std::size_t i = 0; i < map.object.Length; ++i) {
      Value key;
      if (auto read = next(key, path); !read) return std::move(read).error();
      if (key.kind() != Type::String) return wrong_type(path, key, "a string key");
      std::string_view name(key.object.Raw.data(), key.object.Raw.size());
      if (auto [first, fresh] = seen.insert(name, key.offset); !fresh) return duplicate(path, key, first);
      if (auto done = on_entry(name, path.key(name)); !done) return std::move(done).error();
    }
    return {};
  }

  template <std::size_t N>
  Expected<void> require(const KeySet& seen, const std::array<std::string_view, N>& keys, const Path& path,
                         const Value& map) const {
    for (std::string_view key : keys) {
      if (!seen.contains(key)) return malformed(path, map.offset, "required key " + std::string(key) + " is missing");
    }
    return {};
  }

  /// The value of an unknown key: skipped and listed.
  Expected<void> unknown(const Path& path, unsigned depth, bool record = true) {
    Value value;
    if (auto read = next(value, path); !read) return std::move(read).error();
    if (auto skipped = skip(value, path, depth); !skipped) return std::move(skipped).error();
    if (record && result_.metadata.unknown_keys.size() < kMaxUnknownKeys) {
      result_.metadata.unknown_keys.push_back(path.str());
    }
    return {};
  }

  /// An unsigned integer that fits 32 bits; a signed encoding only when not negative.
  Expected<std::uint32_t> u32(const Path& path) {
    Value value;
    if (auto read = next(value, path); !read) return std::move(read).error();
    return as_u32(value, path);
  }

  Expected<std::uint32_t> as_u32(const Value& value, const Path& path) const {
    std::uint64_t number = 0;
    if (value.kind() == Type::UInt) {
      number = value.object.UInt;
    } else if (value.kind() == Type::Int) {
      if (value.object.Int < 0) return malformed(path, value.offset, "negative value " + describe(value));
      number = static_cast<std::uint64_t>(value.object.Int);
    } else {
      return wrong_type(path, value, "an unsigned integer");
    }
    if (number > std::numeric_limits<std::uint32_t>::max()) {
      return malformed(path, value.offset, describe(value) + " exceeds the 32-bit limit 4294967295");
    }
    return static_cast<std::uint32_t>(number);
  }

  /// `.workgroup_processor_mode` and `.uniform_work_group_size`: documented
  /// as booleans, written by LLVM as integers; either is accepted.
  Expected<std::uint32_t> u32_or_bool(const Path& path) {
    Value value;
    if (auto read = next(value, path); !read) return std::move(read).error();
    if (value.kind() == Type::Boolean) return value.object.Bool ? 1u : 0u;
    return as_u32(value, path);
  }

  Expected<std::string_view> string(const Path& path) {
    Value value;
    if (auto read = next(value, path); !read) return std::move(read).error();
    if (value.kind() != Type::String) return wrong_type(path, value, "a string");
    return std::string_view(value.object.Raw.data(), value.object.Raw.size());
  }

  /// `.name` and `.symbol`: strings that reach C APIs, so without NUL bytes.
  Expected<std::string_view> identifier(const Path& path) {
    std::uint64_t at = position_;
    auto text = string(path);
    if (text && text->find('\0') != std::string_view::npos) {
      return malformed(path, at, "string \"" + printable(*text) + "\" contains a NUL byte");
    }
    return text;
  }

  Expected<bool> boolean(const Path& path) {
    Value value;
    if (auto read = next(value, path); !read) return std::move(read).error();
    if (value.kind() != Type::Boolean) return wrong_type(path, value, "a boolean");
    return value.object.Bool;
  }

  /// An array of exactly N unsigned 32-bit integers at `depth`.
  template <std::size_t N>
  Expected<std::array<std::uint32_t, N>> u32_array(const Path& path, unsigned depth) {
    Value array;
    if (auto read = next(array, path); !read) return std::move(read).error();
    if (array.kind() != Type::Array || array.object.Length != N) {
      return wrong_type(path, array, "an array of " + std::to_string(N) + " unsigned integers");
    }
    if (auto opened = open(array, path, depth); !opened) return std::move(opened).error();
    std::array<std::uint32_t, N> out{};
    for (std::size_t i = 0; i < N; ++i) {
      auto element = u32(path.index(i));
      if (!element) return std::move(element).error();
      out[i] = *element;
    }
    return out;
  }

  /// A value that must be a power of two (alignments).
  Expected<std::uint32_t> alignment(const Path& path) {
    std::uint64_t at = position_;
    auto value = u32(path);
    if (value && !power_of_two(*value)) {
      return malformed(path, at, "alignment " + std::to_string(*value) + " is not a power of two");
    }
    return value;
  }

  /// A string that must be one of an enum's spellings (to_string of values
  /// first..last); `what` names the enum in the message.
  template <class Enum>
  Expected<Enum> spelling(const Path& path, Enum first, Enum last, std::string_view what) {
    std::uint64_t at = position_;
    auto text = string(path);
    if (!text) return std::move(text).error();
    for (auto i = static_cast<int>(first); i <= static_cast<int>(last); ++i) {
      if (to_string(static_cast<Enum>(i)) == *text) return static_cast<Enum>(i);
    }
    return malformed(path, at, "\"" + printable(*text) + "\" is not " + std::string(what));
  }

  // ---- The schema ---------------------------------------------------------

  Expected<void> root() {
    const Path top;
    Value map;
    if (auto read = next(map, top); !read) return std::move(read).error();
    if (map.kind() != Type::Map) return wrong_type(top, map, "a map at the root");
    KeySet seen;
    auto done = entries(map, top, 1, seen, [&](std::string_view key, const Path& path) -> Expected<void> {
      if (key == "amdhsa.version") return version(path);
      if (key == "amdhsa.target") return target(path);
      if (key == "amdhsa.printf") return printf_formats(path);
      if (key == "amdhsa.kernels") return kernels(path);
      return unknown(path, 2);
    });
    if (!done) return done;
    if (auto required = require(seen, kRequiredRootKeys, top, map); !required) return required;
    if (position_ < input_.size()) {
      std::uint64_t extra = input_.size() - position_;
      return malformed(top, position_, std::to_string(extra) + (extra == 1 ? " trailing byte" : " trailing bytes") +
                                          " after the root map");
    }
    // The position above is this file's own count; LLVM's reader must agree.
    llvm::msgpack::Object extra;
    llvm::Expected<bool> more = reader_.read(extra);
    if (!more || *more) {
      if (!more) llvm::consumeError(more.takeError());
      return malformed(top, position_, "trailing bytes after the root map");
    }
    return {};
  }

  template <class Field, class T>
  static Expected<void> store(Field& field, Expected<T> value) {
    if (!value) return std::move(value).error();
    field = std::move(*value);
    return {};
  }

  Expected<void> target(const Path& path) {
    std::uint64_t at = position_;
    auto text = string(path);
    if (!text) return std::move(text).error();
    result_.metadata.target = *text;
    result_.target_at = StringLocation{at, static_cast<unsigned>(text->data() - input_.data() - at), text->size()};
    return {};
  }

  Expected<void> version(const Path& path) {
    std::uint64_t at = position_;
    auto numbers = u32_array<2>(path, 2);
    if (!numbers) return std::move(numbers).error();
    auto [major, minor] = *numbers;
    if (major != 1) {
      return error(ErrorKind::UnsupportedVersion, path, at,
                   "metadata version " + std::to_string(major) + "." + std::to_string(minor) +
                       " is not 1.x (code object v3 and later)");
    }
    result_.metadata.version_major = major;
    result_.metadata.version_minor = minor;
    return {};
  }

  Expected<void> printf_formats(const Path& path) {
    Value array;
    if (auto read = next(array, path); !read) return std::move(read).error();
    if (array.kind() != Type::Array) return wrong_type(path, array, "an array of strings");
    if (array.object.Length > kMaxPrintfFormats) {
      return error(ErrorKind::LimitExceeded, path, array.offset,
                   std::to_string(array.object.Length) + " printf formats exceed the limit of " +
                       std::to_string(kMaxPrintfFormats));
    }
    if (auto opened = open(array, path, 2); !opened) return opened;
    auto& formats = result_.metadata.printf_formats;
    for (std::size_t i = 0; i < array.object.Length; ++i) {
      Path element_path = path.index(i);
      auto text = string(element_path);
      if (!text) return std::move(text).error();
      formats.emplace_back(*text);
      check_printf_format(formats.back(), element_path);
    }
    return {};
  }

  /// `ID:N:S0:...:SN-1:Format` (AMDGPUUsage); a string that does not start
  /// so is reported, not fatal: only printf through this kernel is affected.
  void check_printf_format(std::string_view format, const Path& path) {
    std::string_view text = format;
    auto number = [&](std::uint64_t& out) {
      std::size_t digits = 0;
      out = 0;
      while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9' && digits < 10) {
        out = out * 10 + static_cast<std::uint64_t>(text[digits] - '0');
        ++digits;
      }
      if (digits == 0 || digits >= text.size() || text[digits] != ':') return false;
      text.remove_prefix(digits + 1);
      return true;
    };
    std::uint64_t id = 0, count = 0, size = 0;
    bool good = number(id) && number(count);
    for (std::uint64_t i = 0; good && i < count; ++i) good = number(size);
    if (good) return;
    std::string where = path.str();
    result_.problems.push_back(Problem{ErrorKind::Malformed, "", where,
                                       where + ": \"" + printable(format) +
                                           "\" is not of the form ID:N:S0:...:SN-1:Format"});
  }

  Expected<void> kernels(const Path& path) {
    Value array;
    if (auto read = next(array, path); !read) return std::move(read).error();
    if (array.kind() != Type::Array) return wrong_type(path, array, "an array of kernel maps");
    if (array.object.Length > kMaxMetadataKernels) {
      return error(ErrorKind::LimitExceeded, path, array.offset,
                   std::to_string(array.object.Length) + " kernels exceed the limit of " +
                       std::to_string(kMaxMetadataKernels));
    }
    if (auto opened = open(array, path, 2); !opened) return opened;
    for (std::size_t i = 0; i < array.object.Length; ++i) {
      if (auto done = kernel(path.index(i)); !done) return done;
    }
    return {};
  }

  Expected<void> kernel(const Path& path) {
    constexpr unsigned kDepth = 3;  // root map, kernels array, this map
    Value map;
    if (auto read = next(map, path); !read) return std::move(read).error();
    if (map.kind() != Type::Map) return wrong_type(path, map, "a kernel map");
    Kernel k;
    KeySet seen;
    auto done = entries(map, path, kDepth, seen, [&](std::string_view key, const Path& at) -> Expected<void> {
      if (key == ".name") return store(k.name, identifier(at));
      if (key == ".symbol") return store(k.symbol, identifier(at));
      if (key == ".kernarg_segment_size") return store(k.kernarg_segment_size, u32(at));
      if (key == ".kernarg_segment_align") return store(k.kernarg_segment_align, alignment(at));
      if (key == ".group_segment_fixed_size") return store(k.group_segment_fixed_size, u32(at));
      if (key == ".private_segment_fixed_size") return store(k.private_segment_fixed_size, u32(at));
      if (key == ".wavefront_size") return wavefront_size(k, at);
      if (key == ".sgpr_count") return store(k.sgpr_count, u32(at));
      if (key == ".vgpr_count") return store(k.vgpr_count, u32(at));
      if (key == ".agpr_count") return store(k.agpr_count, u32(at));
      if (key == ".max_flat_workgroup_size") return store(k.max_flat_workgroup_size, u32(at));
      if (key == ".reqd_workgroup_size") return store(k.reqd_workgroup_size, u32_array<3>(at, kDepth + 1));
      if (key == ".workgroup_size_hint") return store(k.workgroup_size_hint, u32_array<3>(at, kDepth + 1));
      if (key == ".uses_dynamic_stack") return store(k.uses_dynamic_stack, boolean(at));
      if (key == ".workgroup_processor_mode") return store(k.workgroup_processor_mode, u32_or_bool(at));
      if (key == ".uniform_work_group_size") return store(k.uniform_work_group_size, u32_or_bool(at));
      if (key == ".sgpr_spill_count") return store(k.sgpr_spill_count, u32(at));
      if (key == ".vgpr_spill_count") return store(k.vgpr_spill_count, u32(at));
      if (key == ".language") return store(k.language, string(at));
      if (key == ".args") return args(k, at, kDepth + 1);
      // Known and checked, not kept in the model.
      if (key == ".language_version") return checked(u32_array<2>(at, kDepth + 1));
      if (key == ".vec_type_hint" || key == ".device_enqueue_symbol" || key == ".kind") return checked(string(at));
      return unknown(at, kDepth + 1);
    });
    if (!done) return done;
    if (auto required = require(seen, kRequiredKernelKeys, path, map); !required) return required;
    result_.metadata.kernels.push_back(std::move(k));
    return {};
  }

  template <class T>
  static Expected<void> checked(Expected<T> value) {
    if (!value) return std::move(value).error();
    return {};
  }

  Expected<void> wavefront_size(Kernel& k, const Path& path) {
    std::uint64_t at = position_;
    auto size = u32(path);
    if (!size) return std::move(size).error();
    if (*size != 32 && *size != 64) {
      return malformed(path, at, "wavefront size " + std::to_string(*size) + " is not 32 or 64");
    }
    k.wavefront_size = *size;
    return {};
  }

  Expected<void> args(Kernel& k, const Path& path, unsigned depth) {
    Value array;
    if (auto read = next(array, path); !read) return std::move(read).error();
    if (array.kind() != Type::Array) return wrong_type(path, array, "an array of argument maps");
    if (array.object.Length > kMaxKernelArgs) {
      return error(ErrorKind::LimitExceeded, path, array.offset,
                   std::to_string(array.object.Length) + " arguments exceed the limit of " +
                       std::to_string(kMaxKernelArgs));
    }
    if (auto opened = open(array, path, depth); !opened) return opened;
    // One allocation rather than one per doubling; the limit above caps what
    // a lying count can reserve.
    k.args.reserve(array.object.Length);
    for (std::size_t i = 0; i < array.object.Length; ++i) {
      if (auto done = arg(k, path.index(i), depth + 1); !done) return done;
    }
    return {};
  }

  Expected<void> arg(Kernel& k, const Path& path, unsigned depth) {
    Value map;
    if (auto read = next(map, path); !read) return std::move(read).error();
    if (map.kind() != Type::Map) return wrong_type(path, map, "an argument map");
    KernelArg a;
    KeySet seen;
    auto done = entries(map, path, depth, seen, [&](std::string_view key, const Path& at) -> Expected<void> {
      if (key == ".offset") return store(a.offset, u32(at));
      if (key == ".size") return store(a.size, u32(at));
      if (key == ".value_kind") return value_kind(a, at);
      if (key == ".name") return store(a.name, string(at));
      if (key == ".type_name") return store(a.type_name, string(at));
      if (key == ".address_space") {
        return store(a.address_space, spelling(at, AddressSpace::Private, AddressSpace::Region,
                                               "an address space (private, global, constant, local, generic, region)"));
      }
      if (key == ".access" || key == ".actual_access") {
        Access& field = key == ".access" ? a.access : a.actual_access;
        return store(field, spelling(at, Access::ReadOnly, Access::ReadWrite,
                                     "an access (read_only, write_only, read_write)"));
      }
      if (key == ".pointee_align") return store(a.pointee_align, alignment(at));
      if (key == ".is_const") return store(a.is_const, boolean(at));
      if (key == ".is_restrict") return store(a.is_restrict, boolean(at));
      if (key == ".is_volatile") return store(a.is_volatile, boolean(at));
      if (key == ".is_pipe") return store(a.is_pipe, boolean(at));
      if (key == ".value_type") return unknown(at, depth + 1, /*record=*/false);  // deprecated, ignored
      return unknown(at, depth + 1);
    });
    if (!done) return done;
    if (auto required = require(seen, kRequiredArgKeys, path, map); !required) return required;
    k.args.push_back(std::move(a));
    return {};
  }

  /// Known spellings map to their kind; an unknown `hidden_*` is a hidden
  /// argument this library cannot fill (HiddenUnknown); anything else is an
  /// error, since the caller could not know how to pack it.
  Expected<void> value_kind(KernelArg& a, const Path& path) {
    std::uint64_t at = position_;
    auto text = string(path);
    if (!text) return std::move(text).error();
    a.kind_text.assign(*text);
    for (auto i = 0; i < static_cast<int>(ValueKind::HiddenUnknown); ++i) {
      if (to_string(static_cast<ValueKind>(i)) == *text) {
        a.kind = static_cast<ValueKind>(i);
        return {};
      }
    }
    if (text->starts_with("hidden_")) {
      a.kind = ValueKind::HiddenUnknown;
      return {};
    }
    return malformed(path, at, "\"" + printable(*text) + "\" is not a known value kind");
  }

  // ---- Findings that do not stop decoding ---------------------------------

  /// HIP looks kernels up by `.name`, ROCr by `.symbol`: two kernels sharing
  /// either make one of them unreachable.
  void find_duplicate_kernels() {
    const auto& kernels = result_.metadata.kernels;
    using Seen = llvm::DenseMap<llvm::StringRef, std::size_t>;  // one allocation each
    Seen names(kernels.size()), symbols(kernels.size());
    for (std::size_t i = 0; i < kernels.size(); ++i) {
      const Kernel& k = kernels[i];
      auto report = [&](Seen& seen, const std::string& value, std::string_view field) {
        auto [first, fresh] = seen.try_emplace(value, i);
        if (fresh) return;
        result_.problems.push_back(Problem{
            ErrorKind::Ambiguous, k.name, std::string(field),
            "amdhsa.kernels[" + std::to_string(first->second) + "] and amdhsa.kernels[" + std::to_string(i) +
                "] both have " + std::string(field) + " \"" + printable(value) + "\""});
      };
      report(names, k.name, ".name");
      report(symbols, k.symbol, ".symbol");
    }
  }

  std::string_view input_;
  llvm::msgpack::Reader reader_;
  std::uint64_t position_ = 0;
  DecodedMetadata result_;
};

}  // namespace

Expected<DecodedMetadata> decode_metadata(std::span<const std::byte> msgpack) { return Decoder(msgpack).decode(); }

}  // namespace coload::detail
