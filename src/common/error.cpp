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

std::string Error::message() const {
  if (location_.file.empty() && !location_.bundle && !location_.entry) {
    return outer_.empty() ? detail_ : outer_ + detail_;
  }
  std::string text = outer_;
  if (!location_.file.empty()) text.append(location_.file).append(": ");
  if (location_.bundle) {
    text.append("bundle ").append(std::to_string(*location_.bundle));
    if (location_.bundle_offset) {
      char offset[24];
      std::snprintf(offset, sizeof offset, "0x%llx", static_cast<unsigned long long>(*location_.bundle_offset));
      text.append(" at offset ").append(offset);
    }
    text.append(location_.bundle_view).append(": ");
  }
  if (location_.entry) {
    text.append("entry ").append(std::to_string(*location_.entry)).append(" (").append(location_.entry_id).append("): ");
  }
  return text.append(detail_);
}

Error Error::with_context(std::string_view context) const& {
  Error copy = *this;
  return std::move(copy).with_context(context);
}

Error Error::with_context(std::string_view context) && {
  std::string& text = location_.file.empty() && !location_.bundle && !location_.entry ? detail_ : outer_;
  text.insert(0, std::string(context) + ": ");
  return std::move(*this);
}

Error&& Error::in_file(std::string_view file) && {
  if (location_.file.empty()) location_.file = file;
  return std::move(*this);
}

Error&& Error::in_bundle(std::size_t index, std::optional<std::uint64_t> offset, std::string_view view) && {
  if (!location_.bundle) {
    location_.bundle = index;
    location_.bundle_offset = offset;
    location_.bundle_view = view;
  }
  return std::move(*this);
}

Error&& Error::at_entry(std::size_t index, std::string_view id) && {
  if (!location_.entry) {
    location_.entry = index;
    location_.entry_id = id;
  }
  return std::move(*this);
}

Error&& Error::at_field(std::string_view field, std::optional<std::uint64_t> offset,
                        std::optional<std::uint64_t> value, std::optional<std::uint64_t> limit) && {
  if (location_.field.empty()) {
    location_.field = field;
    location_.offset = offset;
    location_.value = value;
    location_.limit = limit;
  }
  return std::move(*this);
}

}  // namespace coload
