#include "coload/error.h"

#include <cstdio>

namespace coload {

std::string_view to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::Io: return "io";
    case ErrorKind::Truncated: return "truncated";
    case ErrorKind::BadMagic: return "bad_magic";
    case ErrorKind::OutOfBounds: return "out_of_bounds";
    case ErrorKind::Overflow: return "overflow";
    case ErrorKind::LimitExceeded: return "limit_exceeded";
    case ErrorKind::UnsupportedVersion: return "unsupported_version";
    case ErrorKind::UnsupportedMethod: return "unsupported_method";
    case ErrorKind::HashMismatch: return "hash_mismatch";
    case ErrorKind::SizeMismatch: return "size_mismatch";
    case ErrorKind::CorruptData: return "corrupt_data";
    case ErrorKind::Malformed: return "malformed";
    case ErrorKind::NotFound: return "not_found";
    case ErrorKind::Ambiguous: return "ambiguous";
    case ErrorKind::InvalidArgument: return "invalid_argument";
  }
  return "unknown";
}

struct Error::Where {
  ErrorLocation location;
  std::string outer;  // contexts added after a location was set, rendered before it
};

Error::Error(ErrorKind kind, std::string detail) : kind_(kind), detail_(std::move(detail)) {}

Error::Error(const Error& other)
    : kind_(other.kind_),
      detail_(other.detail_),
      where_(other.where_ ? std::make_unique<Where>(*other.where_) : nullptr) {}

Error& Error::operator=(const Error& other) {
  if (this != &other) *this = Error(other);
  return *this;
}

Error::Error(Error&& other) noexcept = default;
Error& Error::operator=(Error&& other) noexcept = default;
Error::~Error() = default;

const ErrorLocation& Error::location() const {
  static const ErrorLocation kNowhere;
  return where_ ? where_->location : kNowhere;
}

Error::Where& Error::where() {
  if (!where_) where_ = std::make_unique<Where>();
  return *where_;
}

std::string Error::message() const {
  if (!where_) return detail_;
  const ErrorLocation& at = where_->location;
  std::string text = where_->outer;
  if (!at.file.empty()) text.append(at.file).append(": ");
  if (at.bundle) {
    text.append("bundle ").append(std::to_string(*at.bundle));
    if (at.bundle_offset) {
      char offset[24];
      std::snprintf(offset, sizeof offset, "0x%llx", static_cast<unsigned long long>(*at.bundle_offset));
      text.append(" at offset ").append(offset);
    }
    text.append(at.bundle_view).append(": ");
  }
  if (at.entry) {
    text.append("entry ").append(std::to_string(*at.entry));
    if (!at.entry_id.empty()) text.append(" (").append(at.entry_id).append(")");
    text.append(": ");
  }
  return text.append(detail_);
}

Error Error::with_context(std::string_view context) const& {
  Error copy = *this;
  return std::move(copy).with_context(context);
}

Error Error::with_context(std::string_view context) && {
  const ErrorLocation& at = location();
  const bool placed = !at.file.empty() || at.bundle || at.entry;
  std::string& text = placed ? where_->outer : detail_;
  text.insert(0, std::string(context) + ": ");
  return std::move(*this);
}

Error&& Error::in_file(std::string_view file) && {
  if (location().file.empty()) where().location.file = file;
  return std::move(*this);
}

Error&& Error::in_bundle(std::size_t index, std::optional<std::uint64_t> offset, std::string_view view) && {
  if (!location().bundle) {
    ErrorLocation& at = where().location;
    at.bundle = index;
    at.bundle_offset = offset;
    at.bundle_view = view;
  }
  return std::move(*this);
}

Error&& Error::at_entry(std::size_t index, std::string_view id) && {
  if (!location().entry) {
    ErrorLocation& at = where().location;
    at.entry = index;
    at.entry_id = id;
  }
  return std::move(*this);
}

Error&& Error::at_field(std::string_view field, std::optional<std::uint64_t> offset, std::optional<std::uint64_t> value,
                        std::optional<std::uint64_t> limit) && {
  if (location().field.empty()) {
    ErrorLocation& at = where().location;
    at.field = field;
    at.offset = offset;
    at.value = value;
    at.limit = limit;
  }
  return std::move(*this);
}

}  // namespace coload
