// The strict msgpack reader under the code-object metadata and kpack TOC
// decoders (msgpack_reader.h, docs/reading-rules.md): one pass over the bytes,
// each value checked where it is read.
#include "msgpack/msgpack_reader.h"

#include <array>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <string_view>
#include <utility>

#include "common/try.h"

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

}  // namespace coload::detail

namespace coload::detail::msgpack {

namespace {

using llvm::msgpack::Type;

/// The msgpack name of an encoding, from its first byte.
std::string_view encoding(std::uint8_t tag) {
  if (tag <= 0x7f) return "positive fixint";
  if (tag <= 0x8f) return "fixmap";
  if (tag <= 0x9f) return "fixarray";
  if (tag <= 0xbf) return "fixstr";
  if (tag >= 0xe0) return "negative fixint";
  static constexpr std::array<std::string_view, 0x20> kNames = {
      "nil",      "never used", "false",   "true",    "bin8",    "bin16",   "bin32",   "ext8",
      "ext16",    "ext32",      "float32", "float64", "uint8",   "uint16",  "uint32",  "uint64",
      "int8",     "int16",      "int32",   "int64",   "fixext1", "fixext2", "fixext4", "fixext8",
      "fixext16", "str8",       "str16",   "str32",   "array16", "array32", "map16",   "map32"};
  return kNames[tag - 0xc0];
}

/// Bytes of an encoding whose length the first byte fixes (everything but
/// strings, binaries and extensions, whose payload LLVM hands back in place).
std::uint64_t fixed_size(std::uint8_t tag) {
  switch (tag) {
    case 0xcc:
    case 0xd0: return 2;
    case 0xcd:
    case 0xd1:
    case 0xdc:
    case 0xde: return 3;
    case 0xca:
    case 0xce:
    case 0xd2:
    case 0xdd:
    case 0xdf: return 5;
    case 0xcb:
    case 0xcf:
    case 0xd3: return 9;
    default: return 1;
  }
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

bool power_of_two(std::uint32_t value) { return std::has_single_bit(value); }

}  // namespace

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

std::string Path::str() const {
  if (!parent_) return "";
  std::string base = parent_->str();
  switch (step_) {
    case Step::Key: return join(base, name_);
    case Step::Index: return indexed(base, number_);
    case Step::KeyNumber: return base + "{key " + std::to_string(number_) + "}";
  }
  return base;
}

Error Reader::error(ErrorKind kind, const Path& path, std::uint64_t offset, const std::string& what,
                    std::optional<std::uint64_t> value, std::optional<std::uint64_t> limit) const {
  std::string where = path.str();
  if (where.empty()) where = std::string(document_);
  return Error(kind, where + " at byte " + hex(offset) + ": " + what).at_field(where, offset, value, limit);
}

Expected<void> Reader::next(Value& value, const Path& path) {
  value.offset = position_;
  if (position_ >= input_.size()) {
    return malformed(path, position_,
                     "the " + std::string(document_) + " ends (" + hex(input_.size()) + " bytes) where a value belongs",
                     std::nullopt, input_.size());
  }
  value.tag = static_cast<std::uint8_t>(input_[position_]);
  llvm::Expected<bool> read = reader_.read(value.object);
  if (!read) {
    return malformed(path, position_,
                     "cannot read " + std::string(encoding(value.tag)) + ": " + llvm::toString(read.takeError()));
  }
  if (!*read) return malformed(path, position_, "the " + std::string(document_) + " ends where a value belongs");
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

Expected<void> Reader::open(const Value& container, const Path& path, unsigned depth) {
  if (depth > max_depth_) {
    return error(ErrorKind::LimitExceeded, path, container.offset,
                 "nesting depth " + std::to_string(depth) + " exceeds the limit of " + std::to_string(max_depth_),
                 depth, max_depth_);
  }
  std::uint64_t left = input_.size() - position_;
  std::uint64_t count = container.object.Length;
  std::uint64_t needed = container.kind() == Type::Map ? count * 2 : count;
  if (needed > left) {
    return malformed(path, container.offset,
                     describe(container) + " needs at least " + std::to_string(needed) + " more bytes, only " +
                         std::to_string(left) + " remain",
                     needed, left);
  }
  return {};
}

Expected<void> Reader::skip(const Value& value, const Path& path, unsigned depth) {
  if (!value.is_container()) return {};
  COLOAD_RETURN_IF_ERROR(open(value, path, depth));
  if (value.kind() == Type::Array) {
    for (std::size_t i = 0; i < value.object.Length; ++i) {
      Value element;
      Path element_path = path.index(i);
      COLOAD_RETURN_IF_ERROR(next(element, element_path));
      COLOAD_RETURN_IF_ERROR(skip(element, element_path, depth + 1));
    }
    return {};
  }
  // Keys of maps nobody reads may be any value; equal strings, or equal
  // encodings of anything else, are duplicates. Such maps are rare and may
  // nest 64 deep, so these sets keep no inline buckets on the stack.
  llvm::DenseMap<llvm::StringRef, std::uint64_t> strings, others;
  for (std::size_t i = 0; i < value.object.Length; ++i) {
    Value key;
    COLOAD_RETURN_IF_ERROR(next(key, path));
    Path key_path =
        key.kind() == Type::String ? path.key({key.object.Raw.data(), key.object.Raw.size()}) : path.key_number(i);
    COLOAD_RETURN_IF_ERROR(skip(key, key_path, depth + 1));
    std::string_view identity = key.kind() == Type::String
                                    ? std::string_view(key.object.Raw.data(), key.object.Raw.size())
                                    : input_.substr(key.offset, position_ - key.offset);
    auto& seen = key.kind() == Type::String ? strings : others;
    if (auto [at, fresh] = seen.try_emplace(identity, key.offset); !fresh) return duplicate(path, key, at->second);
    Value item;
    COLOAD_RETURN_IF_ERROR(next(item, key_path));
    COLOAD_RETURN_IF_ERROR(skip(item, key_path, depth + 1));
  }
  return {};
}

Expected<std::uint32_t> Reader::u32(const Path& path) {
  Value value;
  COLOAD_RETURN_IF_ERROR(next(value, path));
  return as_u32(value, path);
}

Expected<std::uint32_t> Reader::as_u32(const Value& value, const Path& path) const {
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
    return malformed(path, value.offset, describe(value) + " exceeds the 32-bit limit 4294967295", number,
                     std::numeric_limits<std::uint32_t>::max());
  }
  return static_cast<std::uint32_t>(number);
}

Expected<std::uint64_t> Reader::u64(const Path& path) {
  Value value;
  COLOAD_RETURN_IF_ERROR(next(value, path));
  if (value.kind() == Type::UInt) return value.object.UInt;
  if (value.kind() == Type::Int && value.object.Int >= 0) return static_cast<std::uint64_t>(value.object.Int);
  if (value.kind() == Type::Int) return malformed(path, value.offset, "negative value " + describe(value));
  return wrong_type(path, value, "an unsigned integer");
}

Expected<std::uint32_t> Reader::u32_or_bool(const Path& path) {
  Value value;
  COLOAD_RETURN_IF_ERROR(next(value, path));
  if (value.kind() == Type::Boolean) return value.object.Bool ? 1u : 0u;
  return as_u32(value, path);
}

Expected<std::string_view> Reader::string(const Path& path) {
  Value value;
  COLOAD_RETURN_IF_ERROR(next(value, path));
  if (value.kind() != Type::String) return wrong_type(path, value, "a string");
  return std::string_view(value.object.Raw.data(), value.object.Raw.size());
}

Expected<std::string_view> Reader::identifier(const Path& path) {
  std::uint64_t at = position_;
  auto text = string(path);
  if (text && text->find('\0') != std::string_view::npos) {
    return malformed(path, at, "string \"" + printable(*text) + "\" contains a NUL byte");
  }
  return text;
}

Expected<bool> Reader::boolean(const Path& path) {
  Value value;
  COLOAD_RETURN_IF_ERROR(next(value, path));
  if (value.kind() != Type::Boolean) return wrong_type(path, value, "a boolean");
  return value.object.Bool;
}

Expected<std::uint32_t> Reader::alignment(const Path& path) {
  std::uint64_t at = position_;
  auto value = u32(path);
  if (value && !power_of_two(*value)) {
    return malformed(path, at, "alignment " + std::to_string(*value) + " is not a power of two", *value);
  }
  return value;
}

Expected<void> Reader::finish(const Path& top) {
  if (position_ < input_.size()) {
    std::uint64_t extra = input_.size() - position_;
    return malformed(
        top, position_,
        std::to_string(extra) + (extra == 1 ? " trailing byte" : " trailing bytes") + " after the root map", extra);
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

}  // namespace coload::detail::msgpack
